//! Standard output that cannot be written (src/out.rs): a full device is one line on stderr
//! and exit 1, never a panic or a silent exit 0; a reader that went away ends the command as
//! SIGPIPE does, quietly, even when the caller left SIGPIPE blocked (EPIPE then reaches
//! teamctl); and nothing the command did to the store is undone, or done twice, for it.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::common::{TestEnv, wait_until};

/// The commands under test: one-shot printers, the long-running ones, and a JSON report of a
/// command that writes to the store.
const COMMANDS: &[&[&str]] = &[
    &["status"],
    &["log"],
    &["log", "-f"],
    &["status", "--watch"],
    &["status", "--watch", "--json"],
    &["task", "list"],
    &["--json", "send", "bob", "again"],
    &["send", "bob", "plain"],
    &["lead"],
];

/// A team with a teammate, a message and a task, so every command has something to print.
fn team() -> TestEnv {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["send", "bob", "hello"]);
    env.ok(&["task", "add", "one"]);
    env
}

/// Wait for `child` to end (within a deadline; it is killed if it does not) and return its
/// status and stderr.
fn ended(mut child: Child, what: &str) -> (ExitStatus, String) {
    let mut status = None;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until(what, Duration::from_secs(30), || {
            status = child.try_wait().unwrap();
            status.is_some()
        });
    }));
    if waited.is_err() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} did not end");
    }
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.unwrap(), err)
}

/// How many messages in bob's inbox read `text`.
fn in_bobs_inbox(env: &TestEnv, text: &str) -> usize {
    env.inbox("t", "bob")
        .iter()
        .filter(|m| m["text"] == text)
        .count()
}

fn no_panic(err: &str, what: &str) {
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{what}: a panic on stderr: {err}"
    );
}

#[test]
fn a_full_device_is_one_line_and_exit_1() {
    let env = team();
    for args in COMMANDS {
        let what = format!("teamctl {} > /dev/full", args.join(" "));
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let child = env
            .cmd(args)
            .stdout(full)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (status, err) = ended(child, &what);
        no_panic(&err, &what);
        assert_eq!(status.code(), Some(1), "{what}: {status:?}, stderr: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines.last().copied(),
            Some("teamctl: cannot write output: No space left on device (os error 28)"),
            "{what}: {err}"
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("cannot write output"))
                .count(),
            1,
            "{what}: {err}"
        );
    }
    // Each send was done once, whatever became of its report.
    assert_eq!(in_bobs_inbox(&env, "again"), 1);
    assert_eq!(in_bobs_inbox(&env, "plain"), 1);
    env.ok(&["kill", "bob"]);
}

#[test]
fn unread_mail_that_could_not_be_shown_stays_unread() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["send", "team-lead", "note to self"]);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = env.cmd(&["inbox"]).stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    no_panic(&String::from_utf8_lossy(&out.stderr), "inbox > /dev/full");
    assert!(env.ok(&["inbox"]).contains("note to self"));
    // Shown once: read now.
    assert!(!env.ok(&["inbox"]).contains("note to self"));
}

/// `cmd` with stdout on a pipe whose reader is already gone; `blocked`: with SIGPIPE blocked,
/// as some parents leave it (the mask is inherited), so that the write fails with EPIPE.
fn closed_pipe(mut cmd: Command, blocked: bool) -> Child {
    let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    drop(reader);
    if blocked {
        // SAFETY: between fork and exec, only the async-signal-safe sigprocmask.
        unsafe {
            cmd.pre_exec(|| {
                let mut set = nix::sys::signal::SigSet::empty();
                set.add(nix::sys::signal::Signal::SIGPIPE);
                nix::sys::signal::sigprocmask(
                    nix::sys::signal::SigmaskHow::SIG_BLOCK,
                    Some(&set),
                    None,
                )
                .map_err(std::io::Error::from)
            });
        }
    }
    cmd.stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_closed_pipe_ends_quietly_as_sigpipe_does() {
    let env = team();
    for blocked in [false, true] {
        for args in COMMANDS {
            let what = format!(
                "teamctl {} | (closed){}",
                args.join(" "),
                if blocked { ", SIGPIPE blocked" } else { "" }
            );
            let (status, err) = ended(closed_pipe(env.cmd(args), blocked), &what);
            no_panic(&err, &what);
            assert_eq!(err, "", "{what}: nothing on stderr");
            assert_eq!(
                status.signal(),
                Some(nix::libc::SIGPIPE),
                "{what}: ended by SIGPIPE, as in a shell pipeline ({status:?})"
            );
        }
    }
    // Each of the two sends was done once.
    assert_eq!(in_bobs_inbox(&env, "again"), 2);
    env.ok(&["kill", "bob"]);
}

/// `teamctl log -f | head -1` on a quiet team: the view ends once its reader has gone, as
/// SIGPIPE would, without waiting for a next write that may never come (a board prints only
/// on change, `log -f` only on new mail). It lingered until the team's next message.
#[test]
fn a_live_view_ends_when_its_reader_goes_away_on_a_quiet_team() {
    let env = team();
    wait_until("bob's turn to end", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    for args in [
        &["log", "-f"][..],
        &["status", "--watch"],
        &["--json", "status", "--watch"],
        &["lead"],
    ] {
        let what = format!("teamctl {} | head -1", args.join(" "));
        let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let child = env
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The first line, then the reader goes, as `head -1` does.
        let mut first = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(std::fs::File::from(reader)),
            &mut first,
        )
        .unwrap();
        assert!(!first.is_empty(), "{what}: printed nothing");
        // stdin stays open (`lead` would end at its end): held by `child` until it is waited.
        let (status, err) = ended(child, &what);
        assert_eq!(err, "", "{what}: nothing on stderr");
        assert_eq!(
            status.signal(),
            Some(nix::libc::SIGPIPE),
            "{what}: ended as SIGPIPE would ({status:?})"
        );
    }
    env.ok(&["kill", "bob"]);
}

/// clap's own printers (help, version) to a full device: one line and exit 1, as any
/// command's output (QA: `teamctl --help > /dev/full` exited 0 with nothing written).
#[test]
fn help_and_version_to_a_full_device_are_one_line_and_exit_1() {
    let env = TestEnv::new();
    for args in [
        &["--help"][..],
        &["--version"],
        &["help", "status"],
        &["status", "--help"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = env.cmd(args).stdout(full).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        no_panic(&err, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim(),
            "teamctl: cannot write output: No space left on device (os error 28)",
            "{args:?}"
        );
    }
}

/// A command whose reader goes away at its first line (`teamctl resume | head -1`, SIGPIPE at
/// its default as a shell leaves it) still does all it was asked, then ends as SIGPIPE would
/// (new-user QA: it was killed at that first line, one teammate of four resumed).
#[test]
fn a_command_piped_into_head_finishes_its_work_before_it_ends() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    let names = ["a1", "a2", "a3", "a4"];
    for n in names {
        env.ok(&["spawn", n, "--backend", "process", "--exec", "cat"]);
    }
    env.ok(&["shutdown", "--all", "--force"]);
    let (status, err) = ended(closed_pipe(env.cmd(&["resume"]), false), "resume | head -0");
    no_panic(&err, "resume");
    assert_eq!(
        status.signal(),
        Some(nix::libc::SIGPIPE),
        "{status:?}: {err}"
    );
    for n in names {
        wait_until(&format!("{n} resumed"), Duration::from_secs(20), || {
            env.member_status(n) == "idle"
        });
    }
    env.ok(&["shutdown", "--all", "--force"]);
}

/// Stderr that cannot be written (a full disk, a closed pipe) loses the words, not the exit
/// code: a usage error is exit 2 and a refused send exit 2, not a panic's 101 (new-user QA:
/// `teamctl 2>&1 | head -1` and `spawn carol 'echo hi' 2>/dev/full` exited 101); a warning
/// on the way (`send` to a stopped teammate says it waits) leaves the send done, exit 0.
#[test]
fn a_full_stderr_keeps_each_commands_exit_code() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["kill", "bob"]);
    for (args, code) in [
        (&[][..], 2),
        (&["spawn", "carol", "echo hi"], 2),
        (&["send", "nobody", "hi"], 2),
        (&["status", "--bogus"], 2),
        (&["shutdown", "bob"], 0),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = env
            .cmd(args)
            .stdout(Stdio::null())
            .stderr(full)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "teamctl {args:?} 2>/dev/full"
        );
    }
}
