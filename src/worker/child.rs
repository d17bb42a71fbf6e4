//! A turn's process: started by `posix_spawn` in a session of its own, its three standard
//! streams on pipes, waited for on a blocking thread, and killed if it is dropped unreaped.
//!
//! Why not `tokio::process::Command`: with a directory to start in or a `pre_exec` hook (the
//! new session), Rust's `Command` takes `fork`, which copies the worker's page tables and makes
//! both processes fault on every page they then write, all on the way from a new message to
//! the agent running. glibc's `posix_spawn` shares the worker's memory until the `exec`
//! (`CLONE_VM | CLONE_VFORK`) and makes the new session itself (`POSIX_SPAWN_SETSID`), so
//! nothing runs between the two but glibc's own code (BENCHMARKS.md, "Eighth session"). The
//! caller moves to the turn's directory first (`turn::run`).

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use nix::fcntl::OFlag;
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;

/// What to start: a program by path, its argument vector (the first is its name) and the
/// variables to set over the worker's own environment.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    pub program: &'a Path,
    pub argv: Vec<OsString>,
    pub env: &'a [(String, String)],
}

/// The parent's ends of the child's standard streams.
pub struct Pipes {
    pub stdin: pipe::Sender,
    pub stdout: pipe::Receiver,
    pub stderr: pipe::Receiver,
}

/// A started process. Its end is seen through a pidfd on the runtime's own poll (no thread, no
/// signal handler); on a kernel without pidfds (before Linux 5.3) a blocking thread of the
/// runtime's pool waits for it instead.
pub struct Child {
    pid: Pid,
    waiter: Waiter,
    reaped: bool,
}

enum Waiter {
    Pidfd(AsyncFd<OwnedFd>),
    Thread(JoinHandle<nix::Result<WaitStatus>>),
}

/// Start `start`. Must be called inside a tokio runtime. The child starts in the caller's
/// working directory (`posix_spawn` has no portable way to change it).
pub fn spawn(start: &Start) -> std::io::Result<(Child, Pipes)> {
    let (in_r, in_w) = pipe2()?;
    let (out_r, out_w) = pipe2()?;
    let (err_r, err_w) = pipe2()?;
    let mut actions = PosixSpawnFileActions::init()?;
    actions.add_dup2(in_r.as_raw_fd(), 0)?;
    actions.add_dup2(out_w.as_raw_fd(), 1)?;
    actions.add_dup2(err_w.as_raw_fd(), 2)?;
    let mut attr = PosixSpawnAttr::init()?;
    // A session of its own (so a process group too, signalled by `interrupt` and `kill`) and no
    // controlling terminal; no signal blocked; SIGPIPE as a new program expects it (Rust's
    // runtime ignores it, and an ignored signal stays ignored across `exec`).
    let setsid =
        PosixSpawnFlags::from_bits_retain(nix::libc::c_int::from(nix::libc::POSIX_SPAWN_SETSID));
    attr.set_flags(
        setsid | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )?;
    attr.set_sigmask(&SigSet::empty())?;
    let mut default = SigSet::empty();
    default.add(Signal::SIGPIPE);
    attr.set_sigdefault(&default)?;
    let argv = c_strings(start.argv.iter().cloned())?;
    let env = c_strings(environment(start.env))?;
    let pid = posix_spawn(start.program, &actions, &attr, &argv, &env)?;
    drop((in_r, out_w, err_w));
    let registered = pidfd(pid).and_then(|fd| {
        // SAFETY: an OwnedFd keeps its one descriptor open until it is dropped, with the
        // AsyncFd that owns it.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(std::io::Error::from)
    });
    let waiter = match registered {
        Ok(fd) => Waiter::Pidfd(fd),
        Err(_) => Waiter::Thread(tokio::task::spawn_blocking(move || waitpid(pid, None))),
    };
    let child = Child {
        pid,
        waiter,
        reaped: false,
    };
    let pipes = Pipes {
        stdin: pipe::Sender::from_owned_fd(in_w)?,
        stdout: pipe::Receiver::from_owned_fd(out_r)?,
        stderr: pipe::Receiver::from_owned_fd(err_r)?,
    };
    Ok((child, pipes))
}

impl Child {
    pub fn id(&self) -> i32 {
        self.pid.as_raw()
    }

    /// Wait for the process to end. Cancel-safe: a `select!` may poll it again later.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = match &mut self.waiter {
            Waiter::Pidfd(fd) => loop {
                let mut ready = fd.readable().await?;
                match waitpid(self.pid, Some(WaitPidFlag::WNOHANG))? {
                    WaitStatus::StillAlive => ready.clear_ready(),
                    status => break status,
                }
            },
            Waiter::Thread(thread) => thread.await.map_err(std::io::Error::other)??,
        };
        self.reaped = true;
        match status {
            WaitStatus::Exited(_, code) => Ok(ExitStatus::from_raw((code & 0xff) << 8)),
            WaitStatus::Signaled(_, sig, _) => Ok(ExitStatus::from_raw(sig as i32)),
            other => Err(std::io::Error::other(format!(
                "unexpected wait status {other:?}"
            ))),
        }
    }
}

impl Drop for Child {
    /// As `kill_on_drop`: a turn given up on does not outlive it, and is reaped (by a thread of
    /// the runtime's pool: after SIGKILL the wait is short, but not nothing).
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        let _ = nix::sys::signal::kill(self.pid, Signal::SIGKILL);
        if let Waiter::Pidfd(_) = self.waiter {
            let pid = self.pid;
            drop(tokio::task::spawn_blocking(move || waitpid(pid, None)));
        }
    }
}

/// A descriptor that becomes readable when process `pid` ends.
fn pidfd(pid: Pid) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by the kernel, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn pipe2() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(OFlag::O_CLOEXEC)?)
}

fn c_strings(items: impl IntoIterator<Item = OsString>) -> std::io::Result<Vec<CString>> {
    items
        .into_iter()
        .map(|s| {
            CString::new(s.into_vec()).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "an argument or environment value holds a NUL byte",
                )
            })
        })
        .collect()
}

/// The worker's environment with `set` over it (a later value for a name wins), as `K=V`.
fn environment(set: &[(String, String)]) -> impl Iterator<Item = OsString> {
    let mut vars: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (k, v) in set {
        vars.insert(k.into(), v.into());
    }
    vars.into_iter().map(|(mut k, v)| {
        k.push("=");
        k.push(v);
        k
    })
}

/// `program` as `execvp` would find it through `path_var`, relative entries against `dir`.
pub fn find(program: &str, path_var: Option<&str>, dir: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(dir.join(program));
    }
    which::which_in(program, path_var, dir).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn runs_in_its_own_session_with_pipes_and_the_environment() {
        let env = [("TURN_VAR".to_string(), "x y".to_string())];
        rt().block_on(async {
            let start = Start {
                program: Path::new("/bin/sh"),
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "read l; echo \"$l $TURN_VAR\"; echo err >&2; \
                     cut -d' ' -f5,6 /proc/$$/stat; grep SigIgn /proc/$$/status; exit 3"
                        .into(),
                ],
                env: &env,
            };
            let (mut child, mut pipes) = spawn(&start).unwrap();
            pipes.stdin.write_all(b"hello\n").await.unwrap();
            drop(pipes.stdin);
            let mut out = String::new();
            pipes.stdout.read_to_string(&mut out).await.unwrap();
            let mut err = String::new();
            pipes.stderr.read_to_string(&mut err).await.unwrap();
            let status = child.wait().await.unwrap();
            assert_eq!(status.code(), Some(3));
            let mut lines = out.lines();
            assert_eq!(lines.next().unwrap(), "hello x y");
            let ids: Vec<i32> = lines
                .next()
                .unwrap()
                .split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect();
            assert_eq!(
                ids,
                vec![child.id(), child.id()],
                "its own group and session"
            );
            let ignored = lines.next().unwrap().trim_start_matches("SigIgn:").trim();
            let ignored = u64::from_str_radix(ignored, 16).unwrap();
            assert_eq!(
                ignored & (1 << (13 - 1)),
                0,
                "SIGPIPE is not ignored: {out}"
            );
            assert_eq!(err, "err\n");
        });
    }

    #[test]
    fn a_dropped_child_is_killed() {
        rt().block_on(async {
            let start = Start {
                program: Path::new("/bin/sleep"),
                argv: vec!["sleep".into(), "1000".into()],
                env: &[],
            };
            let (child, _pipes) = spawn(&start).unwrap();
            let pid = child.pid;
            drop(child);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            // Reaped by the waiter thread once killed: the pid no longer exists.
            while nix::sys::signal::kill(pid, None).is_ok() {
                assert!(std::time::Instant::now() < deadline, "still running");
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        });
    }

    #[test]
    fn a_signalled_child_says_so_and_a_missing_program_is_an_error() {
        rt().block_on(async {
            let start = Start {
                program: Path::new("/bin/sh"),
                argv: vec!["sh".into(), "-c".into(), "kill -TERM $$".into()],
                env: &[],
            };
            let (mut child, _pipes) = spawn(&start).unwrap();
            assert_eq!(child.wait().await.unwrap().signal(), Some(15));
            let missing = Start {
                program: Path::new("/nonexistent/agent"),
                argv: vec!["agent".into()],
                env: &[],
            };
            let err = spawn(&missing).err().expect("no such program");
            assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        });
    }
}
