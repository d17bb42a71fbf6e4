//! Odd files where teamctl keeps its own (attacker QA): a FIFO, a directory or a symbolic link
//! at a lock file (`create.lock`, a team's), at a worker's live state, at its cursor. Each is
//! made for real and every command is run with a deadline (a hang is a failure); what it says
//! is checked, and that nothing else changed.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestEnv, snapshot, wait_until_or_show};

const LONG: Duration = Duration::from_secs(20);

/// What to put in a file's place.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Odd {
    Fifo,
    Dir,
    Link,
}

const ALL: [Odd; 3] = [Odd::Fifo, Odd::Dir, Odd::Link];

impl Odd {
    /// As teamctl names it.
    fn said(self) -> &'static str {
        match self {
            Odd::Fifo => "a FIFO",
            Odd::Dir => "a directory",
            Odd::Link => "a symbolic link",
        }
    }
}

/// Put `odd` at `at` (whatever was there removed first); a link points at `outside`.
fn plant(at: &Path, odd: Odd, outside: &Path) {
    match std::fs::symlink_metadata(at) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(at).unwrap(),
        Ok(_) => std::fs::remove_file(at).unwrap(),
        Err(_) => {}
    }
    match odd {
        Odd::Fifo => nix::unistd::mkfifo(
            at,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap(),
        Odd::Dir => std::fs::create_dir(at).unwrap(),
        Odd::Link => std::os::unix::fs::symlink(outside, at).unwrap(),
    }
}

/// `teamctl ARGS`, ended and failed if it has not exited within `LONG` (a FIFO waited on).
fn run_within(t: &TestEnv, args: &[&str]) -> Output {
    let child = t
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_within(child, &format!("teamctl {args:?}"))
}

/// `child`'s output once it exits, or a failure (having ended it) when it runs past `LONG`.
fn finish_within(mut child: std::process::Child, what: &str) -> Output {
    let deadline = Instant::now() + LONG;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{what} hung (ended after {LONG:?}): {out:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `teamctl ARGS` exits `code` within the deadline; its stdout and stderr.
fn exits(t: &TestEnv, args: &[&str], code: i32) -> String {
    let out = run_within(t, args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out));
    text(&out)
}

fn is_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
}

/// A FIFO, directory or link at `$TEAMCTL_HOME/create.lock`: `create` failed ("not a regular
/// file", or the raw "Is a directory") while `doctor` said ok. Now `create` names the file,
/// what it is and the way out, and changes nothing; `doctor` reports it; `--fix` puts a lock
/// file there (never touching what a link pointed at), and `create` then works.
#[test]
fn something_else_at_create_lock_is_named_by_create_and_doctor_and_replaced_by_fix() {
    for odd in ALL {
        let t = TestEnv::new();
        let lock = t.home_path().join("create.lock");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        plant(&lock, odd, &outside);
        let before = snapshot(t.home_path());
        let said = exits(&t, &["create", "alpha"], 1);
        assert!(
            said.contains(&format!(
                "{} is {}, not teamctl's lock file: remove it",
                lock.display(),
                odd.said()
            )),
            "{odd:?}: {said}"
        );
        assert_eq!(
            snapshot(t.home_path()),
            before,
            "{odd:?}: create changed something"
        );
        let found = exits(&t, &["doctor"], 1);
        assert!(
            found.contains("PROBLEM locks")
                && found.contains(&format!("{} is {}", lock.display(), odd.said())),
            "{odd:?}: {found}"
        );
        let fixed = exits(&t, &["doctor", "--fix"], 0);
        assert!(fixed.contains("replaced"), "{odd:?}: {fixed}");
        assert!(is_file(&lock), "{odd:?}: no lock file put back");
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep", "{odd:?}");
        exits(&t, &["create", "alpha"], 0);
    }
}

/// The same at a team's lock files (the team file's lock, a member's start lock, an inbox's
/// lock): the command taking it names the file, and `doctor --fix` replaces each.
#[test]
fn something_else_at_a_team_lock_is_named_and_replaced_by_fix() {
    for odd in ALL {
        let t = TestEnv::new();
        exits(&t, &["create", "beta"], 0);
        let dir = t.team_dir("beta");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let locks: Vec<PathBuf> = vec![
            dir.join("config.lock"),
            dir.join("locks/bob.start"),
            dir.join("inboxes/team-lead/cursors/.inbox.lock"),
        ];
        for lock in &locks {
            std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
            plant(lock, odd, &outside);
        }
        let config = std::fs::read(dir.join("config.json")).unwrap();
        let said = exits(
            &t,
            &["spawn", "bob", "--backend", "process", "--exec", "cat"],
            1,
        );
        // The first of them spawn takes (its start lock), named with the way out.
        assert!(
            locks.iter().any(|lock| said.contains(&format!(
                "{} is {}, not teamctl's lock file: remove it",
                lock.display(),
                odd.said()
            ))),
            "{odd:?}: {said}"
        );
        assert_eq!(std::fs::read(dir.join("config.json")).unwrap(), config);
        let found = exits(&t, &["doctor"], 1);
        for lock in &locks {
            assert!(
                found.contains(&format!("{} is {}", lock.display(), odd.said())),
                "{odd:?}: {found}"
            );
        }
        exits(&t, &["doctor", "--fix"], 0);
        for lock in &locks {
            assert!(is_file(lock), "{odd:?}: {} not replaced", lock.display());
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep", "{odd:?}");
        exits(
            &t,
            &["spawn", "bob", "--backend", "process", "--exec", "cat"],
            0,
        );
        exits(&t, &["delete", "--force"], 0);
    }
}

/// bob's worker log in `team`.
fn bob_log(t: &TestEnv, team: &str) -> String {
    std::fs::read_to_string(t.team_dir(team).join("logs/bob.log")).unwrap_or_default()
}

/// A FIFO, link or directory at a running worker's live state (`state/bob.json`): the worker
/// never replaced it (only its cursor), so `status` could not tell what bob did for as long
/// as it ran. `status` now answers at once with a note; the worker puts a file of its own in
/// place of a FIFO or link at its next write (saying so in its log; what a link pointed at is
/// untouched), and says in its log that a directory is there (left as it is).
#[test]
fn something_else_at_a_running_workers_live_state_is_replaced_by_it_or_said() {
    for odd in ALL {
        let t = TestEnv::new();
        exits(&t, &["create", "gamma"], 0);
        exits(
            &t,
            &["spawn", "bob", "--backend", "process", "--exec", "cat"],
            0,
        );
        wait_until_or_show(
            "bob idle",
            LONG,
            || t.member_status("bob") == "idle",
            || bob_log(&t, "gamma"),
        );
        let state = t.team_dir("gamma").join("state/bob.json");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        plant(&state, odd, &outside);
        let shown = exits(&t, &["status"], 0);
        assert!(
            shown.contains("bob: its live state cannot be read")
                && shown.contains(&state.display().to_string()),
            "{odd:?}: {shown}"
        );
        // A turn makes the worker write its state.
        let out = run_within(&t, &["ask", "bob", "hello", "--timeout", "15"]);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "hello",
            "{odd:?}: {}\n{}",
            text(&out),
            bob_log(&t, "gamma")
        );
        if odd == Odd::Dir {
            wait_until_or_show(
                "the worker saying a directory is at its state file",
                LONG,
                || {
                    bob_log(&t, "gamma")
                        .contains("is a directory, not this teammate's live-state file")
                },
                || bob_log(&t, "gamma"),
            );
            assert!(std::fs::symlink_metadata(&state).unwrap().is_dir());
        } else {
            wait_until_or_show(
                "the worker's own state file in place",
                LONG,
                || is_file(&state) && t.member_status("bob") == "idle",
                || bob_log(&t, "gamma"),
            );
            assert!(
                bob_log(&t, "gamma").contains("the live-state file was spoiled"),
                "{odd:?}: {}",
                bob_log(&t, "gamma")
            );
            assert!(!exits(&t, &["status"], 0).contains("cannot be read"));
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep", "{odd:?}");
        exits(&t, &["delete", "--force"], 0);
    }
}

/// A spoiled cursor of a stopped teammate (something not a file there, a file holding no
/// cursor, a cursor past the log's end): `resume` refused the first with a reason and read the
/// others from the start, and `doctor` said nothing. Now `doctor` names the file and what to
/// do; `--fix` leaves it (nothing else records where the inbox was handled to).
#[test]
fn doctor_reports_a_spoiled_cursor_of_a_stopped_teammate_and_fix_leaves_it() {
    let t = TestEnv::new();
    exits(&t, &["create", "delta"], 0);
    exits(
        &t,
        &["spawn", "bob", "--backend", "process", "--exec", "cat"],
        0,
    );
    let out = run_within(&t, &["ask", "bob", "one", "--timeout", "15"]);
    assert!(out.status.success(), "{}", text(&out));
    exits(&t, &["kill", "bob"], 0);
    let cursor = t.team_dir("delta").join("inboxes/bob/cursors/worker");
    let outside = t.work.path().join("outside");
    std::fs::write(&outside, b"keep").unwrap();
    // Each case: its name, what is put there (an odd file, or these bytes), what doctor says.
    let cases: [(&str, Option<Odd>, &[u8], &str); 4] = [
        ("fifo", Some(Odd::Fifo), b"", "is a FIFO, not a cursor file"),
        (
            "link",
            Some(Odd::Link),
            b"",
            "is a symbolic link, not a cursor file",
        ),
        (
            "not a number",
            None,
            b"garbage\n",
            "holds no cursor teamctl wrote",
        ),
        (
            "past the end",
            None,
            b"999999\n",
            "past the end of its inbox log",
        ),
    ];
    for (case, odd, bytes, says) in cases {
        if std::fs::symlink_metadata(&cursor).is_ok() {
            std::fs::remove_file(&cursor).unwrap();
        }
        match odd {
            Some(odd) => plant(&cursor, odd, &outside),
            None => std::fs::write(&cursor, bytes).unwrap(),
        }
        let before = snapshot(&t.team_dir("delta"));
        let found = run_within(&t, &["doctor"]);
        let found = text(&found);
        assert!(
            found.contains("cursors")
                && found.contains(&format!("bob@delta's cursor {}", cursor.display()))
                && found.contains(says),
            "{case}: {found}"
        );
        let fixed = text(&run_within(&t, &["doctor", "--fix"]));
        assert!(fixed.contains(says), "{case}: --fix dropped it: {fixed}");
        assert_eq!(snapshot(&t.team_dir("delta")), before, "{case}: changed");
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    exits(&t, &["delete", "--force"], 0);
}

/// A home joining a team kept on a NATS server (`TEAMCTL_STORE`) made the team's directory
/// without `create`'s lock, which `delete` and `doctor --fix` hold from their look at a
/// directory (a leftover?) to its removal. Held at the point where the directory is made and
/// its pointer not yet written, the joining command holds that lock now.
#[cfg(feature = "nats")]
#[test]
fn a_home_joining_a_team_makes_its_directory_under_creates_lock() {
    let nats = crate::common::nats::NatsServer::start();
    let a = TestEnv::new();
    let mut b = TestEnv::new();
    let url = nats.url();
    exits(&a, &["create", "eps", "--store", &url], 0);
    b.env.push(("TEAMCTL_STORE".into(), url.clone()));
    let gate = b.work.path().join("gate");
    let joining = b.paused(&["--team", "eps", "status"], "join-dir-made", &gate);
    let reached = b.work.path().join("gate.reached");
    crate::common::wait_until("the join paused", LONG, || reached.exists());
    assert!(b.team_dir("eps").is_dir());
    let held = teamctl::store::fsutil::lock_held(&b.home_path().join("create.lock"));
    std::fs::write(&gate, b"").unwrap();
    let out = finish_within(joining, "the joining status");
    assert!(out.status.success(), "{}", text(&out));
    assert!(held, "the team directory was made without create's lock");
}

/// Something else at a teammate's inbox lock (`inboxes/NAME/cursors/.inbox.lock`): `send`
/// names it and the way out as every lock does, and appends nothing (new-user QA, session 23:
/// since appends go through directory descriptors, the raw "Is a directory" came back).
#[test]
fn something_else_at_an_inbox_lock_is_named_by_send() {
    let t = TestEnv::new();
    t.ok(&["create", "odd-inbox"]);
    t.ok(&["spawn", "b", "--backend", "process", "--exec", "cat"]);
    let inbox = t.team_dir("odd-inbox").join("inboxes/b");
    let lock = inbox.join("cursors/.inbox.lock");
    let outside = t.work.path().join("outside");
    std::fs::write(&outside, b"").unwrap();
    for odd in ALL {
        plant(&lock, odd, &outside);
        let log_before = std::fs::read(inbox.join("inbox.jsonl")).unwrap_or_default();
        let said = exits(&t, &["send", "b", "hello"], 1);
        assert!(
            said.contains(&format!("{} is {}", lock.display(), odd.said()))
                && said.contains("doctor --fix"),
            "{odd:?}: {said}"
        );
        assert_eq!(
            std::fs::read(inbox.join("inbox.jsonl")).unwrap_or_default(),
            log_before,
            "{odd:?}: nothing appended"
        );
        assert_eq!(
            std::fs::read(&outside).unwrap(),
            b"",
            "{odd:?}: the link's target"
        );
    }
}
