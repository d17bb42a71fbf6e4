//! Descriptors a process did not open itself. Whatever starts `teamctl` may leave fds open in
//! it without close-on-exec (the pipe of an `out=$(teamctl spawn ...)`, a CI runner's): a
//! detached worker that kept one would hold that pipe open for as long as it runs, and its
//! reader would wait for an end that never comes.

use nix::libc;

/// Make descriptors 0, 1 and 2 open (on /dev/null where one is closed), as Rust's start-up
/// does: else the first file teamctl opens would get the number of stdout, and what it prints
/// would be written into that file (an inbox, say). For `main`, first thing.
pub fn open_stdio() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll reads and writes only the three entries given.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0;
    for pfd in fds {
        // Where poll could not tell (it failed), F_GETFD does.
        // SAFETY: fcntl F_GETFD only reads the descriptor's flags.
        let closed = if polled {
            pfd.revents & libc::POLLNVAL != 0
        } else {
            (unsafe { libc::fcntl(pfd.fd, libc::F_GETFD) }) == -1
        };
        if closed {
            // SAFETY: open of a constant path; the lowest free number is the closed one.
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if fd != pfd.fd {
                // /dev/null missing or the wrong number: no safe way on (std aborts too).
                std::process::abort();
            }
        }
    }
}

/// Mark every descriptor from 3 up close-on-exec. Async-signal-safe (no allocation), for a
/// `pre_exec`; best effort.
pub fn cloexec_above_stdio() {
    if close_range(libc::CLOSE_RANGE_CLOEXEC) {
        return;
    }
    // Before Linux 5.11 (no CLOSE_RANGE_CLOEXEC): one at a time, up to the limit.
    for fd in 3..open_max() {
        // SAFETY: fcntl on a descriptor number only reads or sets that descriptor's flags.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// Close every descriptor from 3 up: for a process that has opened nothing of its own yet
/// (the worker, first thing), so that nothing it inherited stays open for its whole life.
pub fn close_above_stdio() {
    if close_range(0) {
        return;
    }
    for fd in 3..open_max() {
        // SAFETY: the caller owns no descriptor above 2 yet (see above).
        unsafe { libc::close(fd) };
    }
}

/// `close_range(3, ~0, flags)`; whether the kernel did it.
fn close_range(flags: libc::c_uint) -> bool {
    // SAFETY: close_range only closes or flags this process's descriptors from 3 up.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            flags,
        ) == 0
    }
}

/// The highest descriptor number to look at when `close_range` is not there.
fn open_max() -> i32 {
    // SAFETY: sysconf has no preconditions.
    let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    i32::try_from(max)
        .ok()
        .filter(|&m| m > 3)
        .unwrap_or(1024)
        .min(65_536)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    /// Whether fd 100, the write end of a pipe dup'ed there without close-on-exec, is still
    /// open in a program started after `flag` ran.
    fn inherited(flag: fn()) -> String {
        let (_r, w) = nix::unistd::pipe().unwrap();
        let w = w.as_raw_fd();
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args([
            "-c",
            "if [ -e /proc/$$/fd/100 ]; then echo open; else echo closed; fi",
        ]);
        // SAFETY: dup2 and `flag` (the functions above) are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(w, 100) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                flag();
                Ok(())
            });
        }
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    }

    #[test]
    fn an_inherited_descriptor_is_closed_at_exec() {
        assert_eq!(inherited(|| {}).trim(), "open");
        assert_eq!(inherited(cloexec_above_stdio).trim(), "closed");
    }
}
