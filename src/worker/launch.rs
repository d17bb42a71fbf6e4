//! A turn's process started ahead of its message (`Warm`): `teamctl` itself, started by an
//! idle worker, already in a session of its own with the parent-death signal set and its three
//! pipes in place, waiting on stdin for the program it is to become. Starting a turn is then
//! one write to it: the worker does not fork on the way from a message to its agent. (A fork
//! of the worker copied its page tables and interrupted the other CPU to flush its TLB, and the
//! child's `exec` then tore that copy down again: BENCHMARKS.md, "Eleventh session".)
//!
//! What the worker writes on its stdin, ahead of the message text: a 4-byte little-endian
//! length, then a `Launch` as JSON. The launcher becomes that program with `exec`, the rest of
//! stdin (the message) left for it. If it cannot, it writes why on fd 3 (a pipe the worker
//! holds the other end of, close-on-exec in the launcher) and exits 127; the worker reads fd 3
//! to its end, and nothing there means the program is running. While it waits, the end of that
//! pipe is also how the idle worker learns it died (`Warm::ended`), to reap it.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `argv[1]` of a launcher (`main.rs` hands it to `serve` before parsing anything).
pub const ARG: &str = "__turn";

/// The largest `Launch` a launcher reads: the environment's values are cut at 100 KiB each
/// (`turn::env_value`), and there are a dozen of them.
const MAX_LAUNCH: usize = 8 * 1024 * 1024;

/// The fd a launcher reports a failed `exec` on.
const STATUS_FD: i32 = 3;

/// The program a launcher is to become, as a plain value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Launch {
    pub program: PathBuf,
    /// `argv[0]` when it is not the program's path.
    pub arg0: Option<String>,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Set on top of the launcher's own environment (the worker's).
    pub env: Vec<(String, String)>,
    /// What the turn is, for the message when it cannot start ("cannot run the agent command").
    pub what: String,
}

impl Launch {
    /// The command, with nothing of the turn's stdio or process set-up (the caller's).
    pub fn command(&self) -> std::process::Command {
        let mut cmd = self.without_env();
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// `command` without the variables (a launcher sets those itself: `become_it`).
    fn without_env(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.program);
        if let Some(arg0) = &self.arg0 {
            cmd.arg0(arg0);
        }
        cmd.args(&self.args).current_dir(&self.cwd);
        cmd
    }
}

/// A launcher waiting for its turn, held by the worker.
pub struct Warm {
    child: tokio::process::Child,
    /// The read end of its report pipe (`Report`): at its end, while the launcher waits, once
    /// the launcher has died (`ended`).
    report: tokio::net::unix::pipe::Receiver,
}

/// What a turn's child runs in it before `exec` (a launcher's, or a turn started the plain
/// way): a session of its own (so a process group too, signalled by `interrupt` and `kill`)
/// with no controlling terminal, so an agent that opens /dev/tty cannot write escapes into the
/// worker's pane or read what is typed there (attacker QA); and the kernel's SIGKILL if the
/// worker dies without cleaning up. `parent`: the worker's pid, checked after the parent-death
/// signal is set, in case the worker died before it was.
///
/// # Safety
/// Runs between `fork` and `exec`: setsid, prctl and getppid are async-signal-safe.
pub fn in_child(parent: u32) -> std::io::Result<()> {
    nix::unistd::setsid().map_err(std::io::Error::from)?;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(std::io::Error::from)?;
    if nix::unistd::getppid().as_raw() as u32 != parent {
        return Err(std::io::Error::other("the worker ended"));
    }
    Ok(())
}

impl Warm {
    /// Start a launcher. `tag`: variables it carries from the start (the member's
    /// `TEAMCTL_AGENT_ID` and `TEAMCTL_HOME`), so that even while it waits it is a process of
    /// this member's (`backend::proc::is_agent_process`).
    pub fn start(agent_id: &str, tag: &[(String, String)]) -> std::io::Result<Warm> {
        let (report, theirs) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        // The same binary as this worker, even if its file was replaced or removed since.
        let mut cmd = tokio::process::Command::new("/proc/self/exe");
        // The member in its argv too, for `ps` (ignored by the launcher).
        cmd.arg0("teamctl")
            .arg(ARG)
            .arg(agent_id)
            .envs(tag.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let parent = std::process::id();
        let fd = theirs.as_raw_fd();
        // SAFETY: `in_child` and dup2/fcntl are async-signal-safe; nothing here allocates.
        unsafe {
            cmd.pre_exec(move || {
                in_child(parent)?;
                if fd == STATUS_FD {
                    // dup2 onto itself keeps close-on-exec: clear it instead.
                    nix::fcntl::fcntl(
                        std::os::fd::BorrowedFd::borrow_raw(fd),
                        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
                    )?;
                } else if nix::libc::dup2(fd, STATUS_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(theirs);
        let report = tokio::net::unix::pipe::Receiver::from_owned_fd(report)?;
        Ok(Warm { child, report })
    }

    /// Resolves once this launcher has ended while it waits (killed from outside, say): its
    /// end of the report pipe closes as it dies, and nothing is written there before it has
    /// a command. Then `reap` it. Cancel-safe, for the idle worker's `select!` (tokio's
    /// `Child::wait` is not for this: it closes the child's stdin first, which ends a waiting
    /// launcher).
    pub async fn ended(&self) {
        let mut byte = [0u8; 1];
        loop {
            if self.report.readable().await.is_err() {
                return;
            }
            match self.report.try_read(&mut byte) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                // Its end, an error, or (never, before a command) a report.
                _ => return,
            }
        }
    }

    /// Wait for a launcher that has `ended` (a moment: it is exiting), so that it does not
    /// stay `<defunct>`; how it ended.
    pub async fn reap(mut self) -> Option<std::process::ExitStatus> {
        self.child.wait().await.ok()
    }

    /// Its pid: the turn's process group once it has its command (it is a session leader).
    pub fn pid(&self) -> Option<i32> {
        self.child.id().and_then(|p| i32::try_from(p).ok())
    }

    /// Whether this launcher is still waiting (not ended, by a kill from outside say).
    pub fn waiting(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Tell it to become `launch`: the child (the turn's process from here on: its pid is the
    /// turn's process group), and the pipe on which it says why, if it cannot. Read that pipe
    /// to its end beside the turn's output (`turn::run`): nothing on it means the program runs.
    /// `None`: it was gone, or did not take the command within `TAKE_WITHIN` (stopped, say) and
    /// was killed; the turn starts the plain way. Once it has the command, a launcher that
    /// hangs is the turn hanging, which the turn's timeout, `interrupt` and stop signals end.
    pub async fn go(mut self, launch: &Launch) -> Option<(tokio::process::Child, Report)> {
        if !self.waiting() {
            return None;
        }
        let body = serde_json::to_vec(launch).ok()?;
        let len = u32::try_from(body.len()).ok()?;
        let mut stdin = self.child.stdin.take()?;
        let mut framed = Vec::with_capacity(4 + body.len());
        framed.extend_from_slice(&len.to_le_bytes());
        framed.extend_from_slice(&body);
        let taken = tokio::time::timeout(TAKE_WITHIN, stdin.write_all(&framed)).await;
        match taken {
            Ok(Ok(())) => {
                self.child.stdin = Some(stdin);
                Some((self.child, Report(self.report)))
            }
            _ => {
                // Ended or stopped before it read, killed meanwhile: the caller starts the
                // turn anew, and this one never runs it.
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                None
            }
        }
    }
}

/// How long a launcher gets to take its command (a few KiB, at most a few hundred with a long
/// message in the environment) before the turn starts the plain way.
const TAKE_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// A launcher's report pipe (fd 3 in it): why it could not become the turn's program, or
/// nothing.
pub struct Report(tokio::net::unix::pipe::Receiver);

impl Report {
    /// Some of the report into `why`: `Ok(0)` at its end (the program runs, or the launcher
    /// ended). Cancel-safe, for a `select!` beside the turn's output.
    pub async fn read_into(&mut self, why: &mut Vec<u8>) -> std::io::Result<usize> {
        let mut buf = [0u8; 1024];
        let n = self.0.read(&mut buf).await?;
        if why.len() < 16 * 1024 {
            why.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }
}

/// The launcher itself (`teamctl __turn`): wait for a `Launch` on stdin and become it. Ends
/// quietly, exit 0, when stdin closes first (its worker let it go).
pub fn serve() -> ! {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        crate::errln!(
            "teamctl: `teamctl __turn` is the process an idle teammate keeps ready for its next turn; its worker starts it, not a person"
        );
        std::process::exit(2);
    }
    // Started as /proc/self/exe, the kernel named it "exe": `ps` and `top` show "teamctl".
    let _ = nix::sys::prctl::set_name(c"teamctl");
    // While it waits, its stdin (/proc/PID/fd/0) is open to its own user's other processes
    // unless it is not dumpable: then only a process allowed to trace it (root, or one with
    // CAP_SYS_PTRACE) could write it a command to become (attacker QA). `exec` makes the
    // program it becomes dumpable again.
    let _ = nix::sys::prctl::set_dumpable(false);
    // SAFETY: fd 3 is the status pipe the worker gave (`Warm::start`); nothing else in this
    // process owns it.
    let mut status = unsafe { std::fs::File::from_raw_fd(STATUS_FD) };
    // Never the agent's: close-on-exec from here on.
    let _ = nix::fcntl::fcntl(
        &status,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
    warm_up();
    // Unbuffered: what follows the command on stdin is the agent's.
    // SAFETY: fd 0 stays open for the program this becomes; `ManuallyDrop` never closes it.
    let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    let mut len = [0u8; 4];
    if stdin.read_exact(&mut len).is_err() {
        std::process::exit(0);
    }
    let len = u32::from_le_bytes(len) as usize;
    let launch = (len <= MAX_LAUNCH)
        .then(|| {
            let mut body = vec![0u8; len];
            stdin.read_exact(&mut body).ok()?;
            serde_json::from_slice::<Launch>(&body).ok()
        })
        .flatten();
    let Some(launch) = launch else {
        let _ = status.write_all(b"the worker sent a turn this teamctl cannot read");
        std::process::exit(127);
    };
    let e = become_it(&launch);
    let why = cannot_start(&launch.what, &launch.cwd, &e);
    let _ = status.write_all(why.as_bytes());
    std::process::exit(127);
}

/// Why a turn did not start, in words: "No such file or directory" named the turn's directory
/// while what was missing was the program or its `#!` interpreter (new-user QA).
pub(super) fn cannot_start(what: &str, dir: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound if !dir.is_dir() => {
            format!("{what}: its directory {} does not exist", dir.display())
        }
        std::io::ErrorKind::NotFound => format!(
            "{what} in {}: not found (not on the turn's PATH, or its #! interpreter is missing)",
            dir.display()
        ),
        _ => format!("{what} in {}: {e}", dir.display()),
    }
}

/// Become `launch` with `exec`; returns only if that failed. Its variables are set in this
/// process's own environment, which `exec` then passes on as it is: a `Command` given them
/// copies the whole environment into a map and builds it anew, 90K instructions of the 235K a
/// launcher runs before its `exec` with 35 variables (callgrind), on every turn's way to its
/// agent. Same outcome: the launcher's environment (the worker's), with these set on top.
fn become_it(launch: &Launch) -> std::io::Error {
    let bad = |k: &str, v: &str| k.is_empty() || k.contains(['=', '\0']) || v.contains('\0');
    if let Some((k, _)) = launch.env.iter().find(|(k, v)| bad(k, v)) {
        // What `Command` says of the same variable (it refuses it at `exec`).
        return std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("the variable {k:?} cannot be set (an empty name, or `=` or a NUL byte)"),
        );
    }
    for (k, v) in &launch.env {
        // SAFETY: the launcher is one thread (`serve` runs from `main` before anything starts
        // another), so nothing reads the environment meanwhile.
        unsafe { std::env::set_var(k, v) };
    }
    launch.without_env().exec()
}

/// Run, while nothing waits for it, the code that becoming a turn runs (reading a `Launch`,
/// building its command): a new process maps each page of code the first time it runs it, a
/// page fault each, and on the way from a message to its agent those took a quarter of a
/// millisecond here (BENCHMARKS.md, "Eleventh session").
fn warm_up() {
    let sample = Launch {
        program: "/nonexistent/teamctl-warm-up".into(),
        arg0: Some("warm-up".into()),
        args: vec!["-c".into()],
        cwd: "/".into(),
        env: vec![("TEAMCTL_WARM_UP".into(), "1".into())],
        what: String::new(),
    };
    let Ok(body) = serde_json::to_vec(&sample) else {
        return;
    };
    let Ok(launch) = serde_json::from_slice::<Launch>(&body) else {
        return;
    };
    std::hint::black_box(launch.command());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_reads_back_as_it_was_written() {
        let launch = Launch {
            program: "/bin/sh".into(),
            arg0: None,
            args: vec!["-c".into(), "echo 'a b' \"$X\"\n".into()],
            cwd: "/tmp".into(),
            env: vec![("X".into(), "é\u{1}".into())],
            what: "cannot run the agent command".into(),
        };
        let body = serde_json::to_vec(&launch).unwrap();
        assert_eq!(serde_json::from_slice::<Launch>(&body).unwrap(), launch);
    }

    #[test]
    fn a_variable_the_environment_cannot_hold_is_refused_before_anything_is_set() {
        for (k, v) in [
            ("A=B", "x"),
            ("", "x"),
            ("A\0B", "x"),
            ("TEAMCTL_LAUNCH_UT", "x\0y"),
        ] {
            let launch = Launch {
                program: "/nonexistent/teamctl-launch-ut".into(),
                arg0: None,
                args: Vec::new(),
                cwd: "/".into(),
                env: vec![
                    ("TEAMCTL_LAUNCH_UT_FIRST".into(), "1".into()),
                    (k.into(), v.into()),
                ],
                what: String::new(),
            };
            let e = become_it(&launch);
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::InvalidInput,
                "{k:?}={v:?}: {e}"
            );
            assert!(std::env::var_os("TEAMCTL_LAUNCH_UT_FIRST").is_none());
        }
    }

    #[test]
    fn a_turn_that_cannot_start_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(
            cannot_start("cannot run claude", &gone, &missing),
            format!(
                "cannot run claude: its directory {} does not exist",
                gone.display()
            )
        );
        let said = cannot_start("cannot run the agent command", dir.path(), &missing);
        assert!(
            said.ends_with("not found (not on the turn's PATH, or its #! interpreter is missing)"),
            "{said}"
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(cannot_start("cannot run x", dir.path(), &denied).contains("denied"));
    }
}
