//! A detached worker (process backend) among the things around it: the binary it runs replaced
//! by an upgrade or removed under it, the descriptors of whatever started `spawn`, and a turn
//! that outlives its timeout (each said in the teammate's log file). The real binary (or a
//! copy of it), a temporary home.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{BIN, TestEnv, wait_until};

const T: Duration = Duration::from_secs(20);

/// Run `cmd`, require exit 0; its stdout.
fn ok(mut cmd: Command) -> String {
    let out = crate::common::output_of_copy(&mut cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({:?})\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `teamctl` installed in a directory of its own (a copy of the binary under test), with a
/// team and the teammate `bob` started from it (so bob's worker runs that file) running `exec`.
fn installed(env: &TestEnv, exec: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("teamctl");
    std::fs::copy(BIN, &bin).unwrap();
    ok(env.cmd_of(&bin, &["create", "alpha"]));
    ok(env.cmd_of(
        &bin,
        &["spawn", "bob", "--backend", "process", "--exec", exec],
    ));
    (dir, bin)
}

/// Replace `bin` as installers do: a new file written beside it and renamed over it.
fn upgrade(bin: &Path) {
    let new = bin.with_file_name(".teamctl.new");
    std::fs::copy(BIN, &new).unwrap();
    std::fs::rename(&new, bin).unwrap();
}

/// `name`'s log file (its worker's notes and its turns' output).
fn member_log(env: &TestEnv, name: &str) -> String {
    std::fs::read_to_string(
        env.team_dir("alpha")
            .join("logs")
            .join(format!("{name}.log")),
    )
    .unwrap_or_default()
}

const WHICH: &str = "command -v teamctl; teamctl --version >/dev/null && echo works";

#[test]
fn after_an_upgrade_the_agent_runs_the_teamctl_installed_in_its_place() {
    let env = TestEnv::new();
    let (_dir, bin) = installed(&env, WHICH);
    let before = env.ok(&["ask", "bob", "which?"]);
    assert_eq!(before.trim(), format!("{}\nworks", bin.display()));
    // The worker's own file is gone now (Linux: "teamctl (deleted)"); the new one is there.
    upgrade(&bin);
    let after = env.ok(&["ask", "bob", "which now?"]);
    assert_eq!(
        after.trim(),
        format!("{}\nworks", bin.display()),
        "the agent found the upgraded teamctl where the old one was"
    );
}

#[test]
fn a_worker_whose_binary_was_removed_says_so_in_its_log() {
    let env = TestEnv::new();
    let (_dir, bin) = installed(&env, "command -v teamctl || echo none");
    env.ok(&["ask", "bob", "which?"]);
    std::fs::remove_file(&bin).unwrap();
    env.ok(&["ask", "bob", "which now?"]);
    // Said as the worker goes idle, after the reply that ends `ask` (the flake hunt: under
    // load the log was read before it).
    wait_until(
        "the line about the removed binary",
        Duration::from_secs(20),
        || member_log(&env, "bob").contains("was removed"),
    );
    let log = member_log(&env, "bob");
    let line = log.lines().find(|l| l.contains("was removed")).unwrap();
    assert!(line.contains(&bin.display().to_string()), "{line}");
    // Said once, not on every turn: the second ask's turn went idle (and would have said it
    // again) before the third one's started.
    env.ok(&["ask", "bob", "and now?"]);
    env.ok(&["ask", "bob", "once more"]);
    let log = member_log(&env, "bob");
    assert_eq!(log.matches("was removed").count(), 1, "{log}");
}

/// An upgrade that keeps a backup (`install -b`: the running file renamed to `teamctl~`, the
/// new one put at `teamctl`), the backup removed later: the agent gets the new `teamctl` beside
/// it, and the log says nothing of a removed binary (it was not: one is there).
#[test]
fn a_backup_removed_after_an_upgrade_is_not_taken_for_a_removed_teamctl() {
    let env = TestEnv::new();
    let (_dir, bin) = installed(&env, WHICH);
    env.ok(&["ask", "bob", "which?"]);
    let backup = bin.with_file_name("teamctl~");
    std::fs::rename(&bin, &backup).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    env.ok(&["ask", "bob", "which now?"]);
    std::fs::remove_file(&backup).unwrap();
    let after = env.ok(&["ask", "bob", "and now?"]);
    assert_eq!(after.trim(), format!("{}\nworks", bin.display()));
    env.ok(&["ask", "bob", "once more"]);
    let log = member_log(&env, "bob");
    assert!(!log.contains("was removed"), "{log}");
}

#[test]
fn a_detached_worker_keeps_no_descriptor_its_spawner_inherited() {
    spawner_descriptor_released(&TestEnv::new(), "process");
}

/// The tmux server that `spawn` starts (none runs yet on the test's private socket) keeps
/// none either: tmux passes on what its first client had (a `flock` held, say).
#[test]
fn a_tmux_server_spawn_starts_keeps_no_descriptor_its_spawner_inherited() {
    spawner_descriptor_released(&TestEnv::with_tmux(), "tmux");
}

/// `spawn bob` on `backend`, with the write end of a pipe inherited as fd 5 (as from
/// `out=$(...)` or a CI runner): once `spawn` has exited, and a turn has run, nothing of
/// teamctl's holds that pipe open, and the worker runs on.
fn spawner_descriptor_released(env: &TestEnv, backend: &str) {
    env.ok(&["create", "alpha"]);
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let mut cmd = env.cmd(&["spawn", "bob", "--backend", backend, "--exec", "cat"]);
    let fd = w.as_raw_fd();
    // SAFETY: dup2 and fcntl are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if fd == 5 {
                nix::fcntl::fcntl(
                    std::os::fd::BorrowedFd::borrow_raw(fd),
                    nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
                )?;
            } else if nix::libc::dup2(fd, 5) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    ok(cmd);
    drop(w);
    // A turn, so the turn's processes (and the one started ahead after it) are there too.
    assert_eq!(env.ok(&["ask", "bob", "hello"]).trim(), "hello");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = std::fs::File::from(r).read_to_end(&mut rest);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(T).is_ok(),
        "the pipe `spawn` inherited is still held open after it exited ({backend})"
    );
    // And the worker runs on (idle once it has sent the reply `ask` returned with and
    // found no more mail).
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    assert_eq!(env.ok(&["ask", "bob", "again"]).trim(), "again");
}

#[test]
fn a_turn_ended_by_its_timeout_says_so_in_the_log() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    // Deaf to SIGTERM (the ignore is inherited by `sleep`): it takes the SIGKILL.
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "trap '' TERM; sleep 1000",
        "--turn-timeout",
        "1",
    ]);
    env.fails(&["ask", "bob", "go", "--timeout", "20"], 1);
    let log = member_log(&env, "bob");
    let timed_out = log
        .lines()
        .find(|l| l.contains("timed out after 1s"))
        .unwrap_or_else(|| panic!("no timeout line in:\n{log}"));
    assert!(timed_out.contains("SIGTERM"), "{timed_out}");
    assert!(
        log.lines()
            .any(|l| l.contains("still running") && l.contains("SIGKILL")),
        "{log}"
    );
}

/// A turn whose agent is killed by a signal from outside (`kill -9` of it) says so in the
/// teammate's log, naming the signal; before, only the sender's failure notice did.
#[test]
fn a_turn_killed_by_a_signal_says_so_in_the_log() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let pid_file = env.work.path().join("agent.pid");
    // The shell's pid is the agent's: `exec` keeps it.
    let exec = format!("echo $$ > {}; exec sleep 1000", pid_file.display());
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", &exec]);
    env.ok(&["send", "bob", "go"]);
    let mut pid = 0;
    crate::common::wait_until("the agent's pid", T, || {
        pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid > 0
            && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with("sleep"))
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    crate::common::wait_until("the failure notice", T, || {
        env.inbox("alpha", "team-lead").iter().any(|m| {
            m["text"]
                .as_str()
                .is_some_and(|t| t.contains("turn failed"))
        })
    });
    let log = member_log(&env, "bob");
    let line = log
        .lines()
        .find(|l| l.contains("killed by signal"))
        .unwrap_or_else(|| panic!("no line about the signal in:\n{log}"));
    assert!(line.contains("SIGKILL"), "{line}");
    assert_eq!(log.matches("killed by signal").count(), 1, "{log}");
}

/// `install -b` (a backup upgrade): the running file renamed to `teamctl~`, the new one put at
/// `teamctl`. The agent gets the new binary at the path its worker was started from, not the
/// backup that `/proc/self/exe` now names.
#[test]
fn after_an_upgrade_with_a_backup_the_agent_runs_the_new_teamctl() {
    use std::os::unix::fs::MetadataExt;
    let env = TestEnv::new();
    let (_dir, bin) = installed(
        &env,
        "command -v teamctl; stat -L -c %i \"$(command -v teamctl)\"",
    );
    let ino = |p: &Path| std::fs::metadata(p).unwrap().ino().to_string();
    let before = env.ok(&["ask", "bob", "which?"]);
    assert_eq!(before.trim(), format!("{}\n{}", bin.display(), ino(&bin)));
    let backup = bin.with_file_name("teamctl~");
    std::fs::rename(&bin, &backup).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    assert_ne!(ino(&bin), ino(&backup));
    let after = env.ok(&["ask", "bob", "which now?"]);
    assert_eq!(
        after.trim(),
        format!("{}\n{}", bin.display(), ino(&bin)),
        "the agent got the backup ({}, inode {}), not the new teamctl",
        backup.display(),
        ino(&backup)
    );
}
