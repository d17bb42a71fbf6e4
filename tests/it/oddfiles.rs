//! Odd files where teamctl keeps its own (attacker QA): a FIFO, a directory or a symbolic link
//! at a lock file (`create.lock`, a team's), at a worker's live state, at its cursor. Each is
//! made for real and every command is run with a deadline (a hang is a failure); what it says
//! is checked, and that nothing else changed.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestEnv, snapshot, wait_until, wait_until_or_show};

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

/// Put `odd` at `at` (whatever was there removed first); a link points at `outside`. A FIFO
/// or link is made beside it and renamed over it (a running worker puts its own file back as
/// soon as its state file or log is removed); a directory is made again until it stands.
fn plant(at: &Path, odd: Odd, outside: &Path) {
    if std::fs::symlink_metadata(at).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(at).unwrap();
    }
    let beside = at.with_file_name(format!(
        ".planting-{}",
        at.file_name().unwrap().to_string_lossy()
    ));
    match odd {
        Odd::Fifo => nix::unistd::mkfifo(
            &beside,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap(),
        Odd::Link => std::os::unix::fs::symlink(outside, &beside).unwrap(),
        Odd::Dir => {
            let deadline = Instant::now() + LONG;
            loop {
                let _ = std::fs::remove_file(at);
                match std::fs::create_dir(at) {
                    Ok(()) => return,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        assert!(Instant::now() < deadline, "{}: {e}", at.display());
                    }
                    Err(e) => panic!("{}: {e}", at.display()),
                }
            }
        }
    }
    std::fs::rename(&beside, at).unwrap();
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

/// A FIFO, directory or link at the current-team record (`$TEAMCTL_HOME/current`): commands
/// without `--team` said "no team selected" and `doctor` said ok (attacker QA 45). Now they
/// name the file and what it is, `doctor` warns of it, and `--fix` removes it (a directory is
/// left to the user); nothing a link points at is touched.
#[test]
fn something_else_at_the_current_team_record_is_named_and_removed_by_fix() {
    for odd in ALL {
        let t = TestEnv::new();
        exits(&t, &["create", "alpha"], 0);
        let current = t.home_path().join("current");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"alpha").unwrap();
        plant(&current, odd, &outside);
        let said = exits(&t, &["status"], 2);
        assert!(
            said.contains(&format!(
                "no team selected: {} is {}",
                current.display(),
                odd.said()
            )),
            "{odd:?}: {said}"
        );
        let found = exits(&t, &["doctor"], 0);
        assert!(
            found.contains("warn    current")
                && found.contains(&format!("({}) is {}", current.display(), odd.said())),
            "{odd:?}: {found}"
        );
        exits(&t, &["doctor", "--fix"], 0);
        if odd == Odd::Dir {
            assert!(current.is_dir(), "--fix removed a directory");
            std::fs::remove_dir(&current).unwrap();
        }
        assert!(std::fs::symlink_metadata(&current).is_err(), "{odd:?}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"alpha", "{odd:?}");
        exits(&t, &["create", "beta"], 0);
        assert!(exits(&t, &["status"], 0).contains("beta"), "{odd:?}");
    }
}

/// A directory holding files at a lock file's place is left to the user, and said so from the
/// first look (attacker QA 43: the hint said `--fix` replaced it; `--fix` then said it could
/// not).
#[test]
fn a_lock_directory_holding_files_is_left_to_the_user_and_said_so() {
    let t = TestEnv::new();
    exits(&t, &["create", "beta"], 0);
    let locks = [
        t.home_path().join("create.lock"),
        t.team_dir("beta").join("config.lock"),
    ];
    for lock in &locks {
        let _ = std::fs::remove_file(lock);
        std::fs::create_dir(lock).unwrap();
        std::fs::write(lock.join("someones"), b"keep").unwrap();
    }
    // The command that takes it says the same (it said `doctor --fix` replaced it).
    let said = exits(
        &t,
        &["spawn", "bob", "--backend", "process", "--exec", "cat"],
        1,
    );
    assert!(
        said.contains(&format!(
            "{} is a directory holding files, not teamctl's lock file: move it away by hand",
            locks[1].display()
        )),
        "{said}"
    );
    let found = exits(&t, &["doctor"], 1);
    for lock in &locks {
        assert!(
            found.contains(&format!(
                "{} is a directory holding files, not teamctl's lock file",
                lock.display()
            )),
            "{found}"
        );
    }
    assert!(
        found.contains("move it away by hand") && !found.contains("--fix` replaces it"),
        "{found}"
    );
    assert!(found.contains("--fix would not change that"), "{found}");
    let fixed = exits(&t, &["doctor", "--fix"], 1);
    assert!(!fixed.contains("not fixed"), "{fixed}");
    for lock in &locks {
        assert_eq!(std::fs::read(lock.join("someones")).unwrap(), b"keep");
    }
    // Emptied by the user, it is `--fix`'s again.
    for lock in &locks {
        std::fs::remove_file(lock.join("someones")).unwrap();
    }
    let found = exits(&t, &["doctor"], 1);
    assert!(
        found.contains("--fix` replaces it with a lock file"),
        "{found}"
    );
    exits(&t, &["doctor", "--fix"], 0);
    assert!(locks.iter().all(|l| is_file(l)));
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

/// Something else than a directory at a team's own directory (`locks`, `state`): the command
/// that keeps a file there fails naming it, and `doctor` reports it (attacker QA: it said ok
/// while `plan approve` and every start failed on a link at `locks`); `--fix` leaves it (it may
/// be someone's), and once it is moved away teamctl makes the directory again.
#[test]
fn something_else_at_a_teams_own_directory_is_reported_by_doctor() {
    for odd in [Odd::Fifo, Odd::Link] {
        let t = TestEnv::new();
        exits(&t, &["create", "beta"], 0);
        let dir = t.team_dir("beta");
        let outside = t.work.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let locks = dir.join("locks");
        if locks.exists() {
            std::fs::remove_dir_all(&locks).unwrap();
        }
        plant(&locks, odd, &outside);
        let said = exits(
            &t,
            &["spawn", "bob", "--backend", "process", "--exec", "cat"],
            1,
        );
        assert!(
            said.contains(&locks.display().to_string()),
            "{odd:?}: {said}"
        );
        let found = exits(&t, &["doctor"], 1);
        assert!(
            found.contains(&format!(
                "{} is {}, not a directory",
                locks.display(),
                odd.said()
            )),
            "{odd:?}: {found}"
        );
        exits(&t, &["doctor", "--fix"], 1);
        assert!(
            !std::fs::symlink_metadata(&locks).unwrap().is_dir(),
            "{odd:?}: --fix left it"
        );
        assert!(
            std::fs::read_dir(&outside).unwrap().next().is_none(),
            "{odd:?}"
        );
        std::fs::remove_file(&locks).unwrap();
        exits(
            &t,
            &["spawn", "bob", "--backend", "process", "--exec", "cat"],
            0,
        );
        exits(&t, &["doctor"], 0);
        exits(&t, &["delete", "--force"], 0);
    }
}

/// bob's worker log in `team`.
fn bob_log(t: &TestEnv, team: &str) -> String {
    std::fs::read_to_string(t.team_dir(team).join("logs/bob.log")).unwrap_or_default()
}

/// A FIFO, link or directory at a running worker's live state (`state/bob.json`): the worker
/// never replaced it (only its cursor), so `status` could not tell what bob did for as long
/// as it ran. A FIFO or link is now replaced by the worker at once, idle (it waited for its
/// next message before: `status` said `starting` meanwhile), saying so in its log (what a
/// link pointed at is untouched). A directory it cannot replace: `status` says
/// `unknown (state file is a directory)` with a note, and `--json` the same (it said
/// `starting`); the worker says so in its log at once, and writes its state again as soon as
/// the directory is removed by hand.
/// A team `team` whose process teammate `bob` (`cat`) is idle.
fn idle_bob(t: &TestEnv, team: &str) {
    exits(t, &["create", team], 0);
    exits(
        t,
        &["spawn", "bob", "--backend", "process", "--exec", "cat"],
        0,
    );
    wait_until_or_show(
        "bob idle",
        LONG,
        || t.member_status("bob") == "idle",
        || bob_log(t, team),
    );
}

#[test]
fn something_else_at_a_running_workers_live_state_is_replaced_by_it_or_said() {
    for odd in [Odd::Dir, Odd::Fifo, Odd::Link] {
        let t = TestEnv::new();
        idle_bob(&t, "gamma");
        let state = t.team_dir("gamma").join("state/bob.json");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        plant(&state, odd, &outside);
        if odd == Odd::Dir {
            let shown = exits(&t, &["status"], 0);
            assert!(
                shown.contains("bob: its live state cannot be read")
                    && shown.contains(&state.display().to_string()),
                "{odd:?}: {shown}"
            );
            // Its state is not guessed as `starting`: what is there instead is said in the row.
            assert!(
                shown.contains(&format!("unknown (state file is {})", odd.said()))
                    && !shown.contains("starting"),
                "{odd:?}: {shown}"
            );
            // `--json` says the same (it said `starting`, with a `problem`).
            let out = run_within(&t, &["status", "--json"]);
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let row = json["members"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["name"] == "bob"))
                .unwrap_or_else(|| panic!("{odd:?}: no bob in {json}"));
            assert_eq!(row["status"], "unknown", "{odd:?}: {json}");
            assert!(
                row["problem"]
                    .as_str()
                    .is_some_and(|p| p.contains(&state.display().to_string())),
                "{odd:?}: {json}"
            );
            wait_until_or_show(
                "the worker saying a directory is at its state file, with no message sent",
                LONG,
                || {
                    bob_log(&t, "gamma")
                        .contains("is a directory, not this teammate's live-state file")
                },
                || bob_log(&t, "gamma"),
            );
            // Removed by hand: the idle worker writes its state again at once.
            std::fs::remove_dir(&state).unwrap();
            wait_until_or_show(
                "bob's state written again once the directory went, with no message sent",
                LONG,
                || is_file(&state) && t.member_status("bob") == "idle",
                || format!("{}\n{}", exits(&t, &["status"], 0), bob_log(&t, "gamma")),
            );
        } else {
            wait_until_or_show(
                "the idle worker's own state file in place, with no message sent",
                LONG,
                || is_file(&state) && t.member_status("bob") == "idle",
                || format!("{}\n{}", exits(&t, &["status"], 0), bob_log(&t, "gamma")),
            );
            assert!(
                bob_log(&t, "gamma").contains("the live-state file was spoiled"),
                "{odd:?}: {}",
                bob_log(&t, "gamma")
            );
        }
        assert!(!exits(&t, &["status"], 0).contains("cannot be read"));
        let out = run_within(&t, &["ask", "bob", "hello", "--timeout", "15"]);
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "hello",
            "{odd:?}: {}\n{}",
            text(&out),
            bob_log(&t, "gamma")
        );
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep", "{odd:?}");
        exits(&t, &["delete", "--force"], 0);
    }
}

/// A running worker's live state written over in place (the same file, something else in it):
/// `status` showed `starting` and `doctor` said all was well until the worker's next write.
/// Now a worker on inotify writes its state again at once, each time (its watch is on the file
/// itself, put again on the file that replaced it); one that does not watch (past the inotify
/// limit) shows `unknown (state file is spoiled)` until its next write, and `doctor` reports
/// the file, which `--fix` removes (and the worker then writes its state again).
#[test]
fn a_live_state_written_over_is_written_again_or_reported_by_doctor() {
    let t = TestEnv::new();
    idle_bob(&t, "gamma");
    let state = t.team_dir("gamma").join("state/bob.json");
    let rewritten = |t: &TestEnv| t.member_status("bob") == "idle";
    // Twice: the second write-over lands on the file the first repair made.
    for round in 1..=2 {
        std::fs::write(&state, b"not a state").unwrap();
        wait_until_or_show(
            &format!("round {round}: bob's state written again, with no message sent"),
            LONG,
            || rewritten(&t),
            || format!("{}\n{}", exits(&t, &["status"], 0), bob_log(&t, "gamma")),
        );
    }
    assert_eq!(
        bob_log(&t, "gamma")
            .matches("the live-state file held no state of this worker's")
            .count(),
        2,
        "{}",
        bob_log(&t, "gamma")
    );
    exits(&t, &["doctor"], 0);
    exits(&t, &["kill", "bob"], 0);

    // A worker that does not watch its own files (no inotify: doorbells).
    let mut spawn = t.cmd(&["spawn", "al", "--backend", "process", "--exec", "cat"]);
    spawn.env("TEAMCTL_NO_INOTIFY", "1");
    assert!(spawn.output().unwrap().status.success());
    wait_until("al idle", LONG, || t.member_status("al") == "idle");
    let al_state = t.team_dir("gamma").join("state/al.json");
    std::fs::write(&al_state, b"{\"not\": \"a state\"}").unwrap();
    let shown = exits(&t, &["status"], 0);
    assert!(
        shown.contains("unknown (state file is spoiled)")
            && shown.contains("al: its live state cannot be read")
            && shown.contains(&al_state.display().to_string()),
        "{shown}"
    );
    let said = exits(&t, &["doctor"], 1);
    assert!(
        said.contains(&format!(
            "{} holds something other than al@gamma's live state",
            al_state.display()
        )),
        "{said}"
    );
    let fixed = exits(&t, &["doctor", "--fix"], 0);
    assert!(
        fixed.contains(&format!(
            "removed {} (it held no live state)",
            al_state.display()
        )),
        "{fixed}"
    );
    // Its next write (a message) makes it again; nothing was lost.
    let out = run_within(&t, &["ask", "al", "hello", "--timeout", "15"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "hello",
        "{}",
        text(&out)
    );
    wait_until("al's state written again, idle", LONG, || {
        is_file(&al_state) && t.member_status("al") == "idle"
    });
    assert!(!exits(&t, &["doctor"], 0).contains("holds something else"));
    exits(&t, &["delete", "--force"], 0);
}

/// Hard links at a worker's live state (attacker QA): to a file outside the home, the worker
/// wrote its state into that file; between two members' states, each wrote over the other's
/// without end (two logs growing for good). A state file with other names is replaced whole,
/// never written in place; a log with other names is not followed.
#[test]
fn a_hard_link_at_a_live_state_or_log_is_never_written_through() {
    let t = TestEnv::new();
    idle_bob(&t, "gamma");
    // al starts on a log linked to an outside file (its worker's first open of it).
    let al_log_outside = t.work.path().join("al-outside.log");
    std::fs::write(&al_log_outside, b"theirs\n").unwrap();
    std::fs::hard_link(&al_log_outside, t.team_dir("gamma").join("logs/al.log")).unwrap();
    exits(
        &t,
        &["spawn", "al", "--backend", "process", "--exec", "cat"],
        0,
    );
    wait_until("al idle", LONG, || t.member_status("al") == "idle");
    let dir = t.team_dir("gamma");
    let outside = t.work.path().join("outside.json");
    std::fs::copy(dir.join("state/bob.json"), &outside).unwrap();
    let kept = std::fs::read(&outside).unwrap();
    // Each link made beside and renamed over the file (a worker puts a removed file back).
    let link_over = |from: &Path, to: &Path| {
        let beside = to.with_file_name(".linking");
        std::fs::hard_link(from, &beside).unwrap();
        std::fs::rename(&beside, to).unwrap();
    };
    let bob = dir.join("state/bob.json");
    link_over(&outside, &bob);
    // al's state made a second name of bob's.
    let al = dir.join("state/al.json");
    link_over(&bob, &al);
    let log_outside = t.work.path().join("outside.log");
    std::fs::write(&log_outside, b"mine\n").unwrap();
    link_over(&log_outside, &dir.join("logs/bob.log"));
    for n in ["bob", "al"] {
        let out = run_within(&t, &["ask", n, "hello", "--timeout", "15"]);
        assert!(out.status.success(), "{n}: {}", text(&out));
    }
    use std::os::unix::fs::MetadataExt;
    let single = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.nlink() == 1);
    wait_until(
        "bob and al each in a state file of its own, idle",
        LONG,
        || {
            single(&bob)
                && single(&al)
                && t.member_status("bob") == "idle"
                && t.member_status("al") == "idle"
        },
    );
    assert_eq!(std::fs::read(&outside).unwrap(), kept);
    assert_eq!(std::fs::read(&log_outside).unwrap(), b"mine\n");
    assert_eq!(std::fs::read(&al_log_outside).unwrap(), b"theirs\n");
    // No fight: each said at most once that its state was not its own.
    for n in ["bob", "al"] {
        let said = std::fs::read_to_string(dir.join(format!("logs/{n}.log"))).unwrap_or_default();
        assert!(
            said.matches("held no state of this worker's").count() <= 1,
            "{n}: {said}"
        );
    }
    exits(&t, &["delete", "--force"], 0);
}

/// `doctor --fix` of a FIFO at the current-team record: a record put there after doctor
/// looked (`create` renames its record over the path) is not what it removes (attacker QA 46:
/// it unlinked the path it had looked at).
#[test]
fn doctor_fix_keeps_a_current_record_put_back_after_it_looked() {
    let t = TestEnv::new();
    exits(&t, &["create", "alpha"], 0);
    let current = t.home_path().join("current");
    plant(&current, Odd::Fifo, t.work.path());
    let gate = t.work.path().join("gate");
    let fix = t.paused(&["doctor", "--fix"], "doctor-odd-looked", &gate);
    let reached = gate.with_extension("reached");
    wait_until("doctor at its pause", LONG, || reached.exists());
    let beside = current.with_file_name("current.new");
    std::fs::write(&beside, b"alpha").unwrap();
    std::fs::rename(&beside, &current).unwrap();
    std::fs::write(&gate, b"").unwrap();
    let out = finish_within(fix, "doctor --fix");
    assert!(
        text(&out).contains("is a regular file now (or gone); left as it is"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&current).unwrap(), b"alpha");
    assert!(exits(&t, &["status"], 0).contains("alpha"));
}

/// `doctor --fix` of a spoiled live state: a valid state moved to its path after doctor looked
/// is not what it removes (attacker QA: it unlinked the path it had looked at).
#[test]
fn doctor_fix_keeps_a_state_put_back_after_it_looked() {
    let t = TestEnv::new();
    idle_bob(&t, "gamma");
    exits(&t, &["kill", "bob"], 0);
    let state = t.team_dir("gamma").join("state/bob.json");
    let valid = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"junk").unwrap();
    let gate = t.work.path().join("gate");
    let fix = t.paused(&["doctor", "--fix"], "doctor-spoiled-looked", &gate);
    let reached = gate.with_extension("reached");
    wait_until("doctor at its pause", LONG, || reached.exists());
    let beside = state.with_file_name("bob.json.valid");
    std::fs::write(&beside, &valid).unwrap();
    std::fs::rename(&beside, &state).unwrap();
    std::fs::write(&gate, b"").unwrap();
    let out = finish_within(fix, "doctor --fix");
    assert!(
        text(&out).contains("holds a live state now (or is gone); left as it is"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&state).unwrap(), valid);
    let leftovers: Vec<_> = std::fs::read_dir(state.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("doctor"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    exits(&t, &["delete", "--force"], 0);
}

/// A FIFO, link or directory at a running worker's log (`logs/bob.log`): its notes and its
/// turns' output were lost until it was restarted, and `doctor` said nothing. Now `doctor`
/// reports it; `--fix` removes a FIFO or link (a directory is moved away by hand), and the
/// idle worker logs again at once, to a file of its own (what a link pointed at untouched).
#[test]
fn something_else_at_a_running_workers_log_is_reported_and_the_worker_logs_again_once_fixed() {
    for odd in ALL {
        let t = TestEnv::new();
        exits(&t, &["create", "eps"], 0);
        exits(
            &t,
            &["spawn", "bob", "--backend", "process", "--exec", "cat"],
            0,
        );
        wait_until_or_show(
            "bob idle",
            LONG,
            || t.member_status("bob") == "idle",
            || bob_log(&t, "eps"),
        );
        let log = t.team_dir("eps").join("logs/bob.log");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        plant(&log, odd, &outside);
        let found = exits(&t, &["doctor"], 1);
        assert!(
            found.contains("PROBLEM logs")
                && found.contains(&format!(
                    "{} is {}, not bob@eps's log",
                    log.display(),
                    odd.said()
                )),
            "{odd:?}: {found}"
        );
        if odd == Odd::Dir {
            std::fs::remove_dir(&log).unwrap();
        } else {
            let fixed = exits(&t, &["doctor", "--fix"], 0);
            assert!(fixed.contains("removed"), "{odd:?}: {fixed}");
        }
        wait_until_or_show(
            "bob logging again, with no message sent",
            LONG,
            || is_file(&log) && bob_log(&t, "eps").contains("logging to it anew"),
            || format!("{:?}", std::fs::symlink_metadata(&log)),
        );
        let out = run_within(&t, &["ask", "bob", "hello again", "--timeout", "15"]);
        assert!(out.status.success(), "{odd:?}: {}", text(&out));
        wait_until_or_show(
            "the turn's output in the log",
            LONG,
            || bob_log(&t, "eps").contains("hello again"),
            || bob_log(&t, "eps"),
        );
        let after = text(&run_within(&t, &["doctor"]));
        assert!(!after.contains("PROBLEM logs"), "{odd:?}: {after}");
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
    // Its worker has made its inbox's `cursors` directory (where the lock is planted).
    wait_until_or_show(
        "b idle",
        Duration::from_secs(20),
        || t.member_status("b") == "idle",
        || t.member_status("b"),
    );
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

/// A broadcast that one member's inbox refuses (something else at its inbox lock): it goes to
/// the others still, and says who got it, who did not and why, exit 1, and the command that
/// sends it to that member alone, the text quoted for a shell (new-user QA: a failure part-way
/// named nobody, so a retry of `send '*'` gave the others it twice). Run as printed, once the
/// lock is fixed, that command completes the broadcast: every member has it once.
#[test]
fn a_broadcast_one_inbox_refuses_names_who_got_it_and_how_to_send_the_rest() {
    let t = TestEnv::new();
    t.ok(&["create", "odd-all"]);
    for name in ["b", "c", "d"] {
        t.ok(&["spawn", name, "--backend", "process", "--exec", "cat"]);
    }
    let lock = t.team_dir("odd-all").join("inboxes/c/cursors/.inbox.lock");
    plant(&lock, Odd::Fifo, &t.work.path().join("none"));
    let text = "it's $HOME; \"quoted\" `x` -- and\na second line";
    let out = run_within(&t, &["send", "*", text]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("sent to 2 members: b, d"), "{stdout}");
    assert!(
        stderr.contains(&format!("not sent to c: {} is a FIFO", lock.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("the broadcast reached 2 of 3 members (b, d), not c"),
        "{stderr}"
    );
    let texts = |who: &str| -> Vec<String> {
        t.inbox("odd-all", who)
            .iter()
            .filter(|m| m["from"] == "team-lead")
            .map(|m| m["text"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(texts("b"), [text]);
    assert_eq!(texts("d"), [text]);
    assert!(texts("c").is_empty());
    // The retry: one command, for c alone, its words quoted.
    let retry: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.contains("send it to that member alone"))
        .skip(1)
        .take_while(|l| !l.starts_with("teamctl: the broadcast reached"))
        .map(str::trim)
        .collect();
    let command = retry.join("\n");
    assert!(
        command.starts_with("teamctl --home ")
            && command.contains(" --team odd-all send c 'it'\\''s $HOME"),
        "{stderr}"
    );
    t.ok(&["doctor", "--fix"]);
    assert!(is_file(&lock));
    paste(&t, &command);
    assert_eq!(texts("c"), [text]);
    assert_eq!(texts("b"), [text]);
    assert_eq!(texts("d"), [text]);
}

/// `command` run as a user pastes it: through a shell, `teamctl` the binary under test, in a
/// shell whose home is another (attacker QA: a retry that named no home went to the team of
/// that name in whatever home the shell had); it must succeed.
fn paste(t: &TestEnv, command: &str) {
    let bin = Path::new(crate::common::BIN)
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(t.work.path())
        .env("PATH", path)
        .env("TEAMCTL_HOME", t.work.path().join("another-home"))
        .env_remove("TEAMCTL_TEAM")
        .env_remove("TEAMCTL_AGENT_NAME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A broadcast that reaches every inbox but one member's worker does not start (it dies at
/// once: a FIFO at its worker lock). New-user QA: exit 1 with no "sent to" line, so who got
/// it was not said. Now it says who got it (stdout, as ever), that bob has it but did not
/// start and why, the `resume` that completes it (not a send: bob would get it twice), exit
/// 1; run as printed once the lock is gone, bob handles the message once.
#[test]
fn a_broadcast_one_member_of_which_does_not_start_says_who_got_it_and_how_to_start_it() {
    let t = TestEnv::new();
    stopped_bob(&t, "odd-start", "process");
    exits(
        &t,
        &["spawn", "carol", "--backend", "process", "--exec", "cat"],
        0,
    );
    let lock = t.team_dir("odd-start").join("locks/bob.worker");
    plant(&lock, Odd::Fifo, &t.work.path().join("none"));
    let out = run_within(&t, &["send", "*", "hi all"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("sent to 2 members: bob, carol"), "{stdout}");
    assert!(
        stderr.contains("bob has it in its inbox, but bob did not start")
            && stderr.contains("bob.worker is a FIFO, not teamctl's lock file"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the broadcast reached all 2 members (bob, carol), but bob did not start"),
        "{stderr}"
    );
    assert!(!stderr.contains(" send bob"), "{stderr}");
    let retry: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.contains("once that is fixed, start it"))
        .skip(1)
        .take_while(|l| !l.starts_with("teamctl: the broadcast reached"))
        .map(str::trim)
        .collect();
    assert_eq!(retry.len(), 1, "{stderr}");
    assert!(
        retry[0].starts_with("teamctl --home ")
            && retry[0].ends_with(" --team odd-start resume bob"),
        "{stderr}"
    );
    let json = run_within(&t, &["--json", "send", "*", "again"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["notStarted"], serde_json::json!(["bob"]), "{doc}");
    assert!(doc.get("notSent").is_none(), "{doc}");
    std::fs::remove_file(&lock).unwrap();
    paste(&t, retry[0]);
    wait_until_or_show(
        "bob's replies",
        LONG,
        || {
            let replies: Vec<String> = t
                .inbox("odd-start", "team-lead")
                .iter()
                .filter(|m| m["from"] == "bob" && m["inReplyTo"].is_string())
                .map(|m| m["text"].as_str().unwrap_or_default().to_string())
                .collect();
            replies == ["hi all", "again"]
        },
        || format!("{:?}", t.inbox("odd-start", "team-lead")),
    );
    let to_bob = t
        .inbox("odd-start", "bob")
        .iter()
        .filter(|m| m["text"] == "hi all")
        .count();
    assert_eq!(to_bob, 1);
}

/// Something not a lock file at a teammate's worker lock (`locks/NAME.worker`) makes its
/// worker exit as it starts. `resume` said "resumed", exit 0, the reason only on the dead
/// pane (new-user and attacker QA); so did a `send` resuming it, and `spawn`. Now each waits
/// for the worker's first word and, as it exited, fails (1) with its reason; `send` says the
/// message waits in the inbox; `status` shows the teammate dead with the reason, not
/// `starting`. Once the file is gone, `resume` works and the message is handled.
#[test]
fn a_worker_that_dies_at_once_fails_resume_send_and_spawn_with_its_reason() {
    let t = TestEnv::new();
    stopped_bob(&t, "delta", "process");
    let locks = t.team_dir("delta").join("locks");
    let outside = t.work.path().join("outside");
    plant(&locks.join("bob.worker"), Odd::Fifo, &outside);
    let why = "bob.worker is a FIFO, not teamctl's lock file";
    let said = exits(&t, &["resume", "bob"], 1);
    assert!(
        said.contains("bob's worker exited as soon as it started") && said.contains(why),
        "{said}"
    );
    assert!(!said.contains("resumed"), "{said}");
    // `status`: dead, and why, under the table and in `--json`.
    let shown = exits(&t, &["status"], 0);
    assert!(
        shown.contains("bob: its worker exited:") && shown.contains(why),
        "{shown}"
    );
    let bob = t.member("bob");
    assert_eq!(bob["status"], "dead", "{bob}");
    assert!(
        bob["exitReason"].as_str().unwrap_or_default().contains(why),
        "{bob}"
    );
    // A send that resumes it: the message is kept, the teammate did not start, exit 1.
    let said = exits(&t, &["send", "bob", "hi"], 1);
    assert!(
        said.contains("the message was delivered and waits in the inbox")
            && said.contains("bob did not start")
            && said.contains(why),
        "{said}"
    );
    assert!(
        t.inbox("delta", "bob").iter().any(|m| m["text"] == "hi"),
        "the message is not in bob's inbox"
    );
    // `spawn` of a teammate whose lock is a directory.
    plant(&locks.join("carol.worker"), Odd::Dir, &outside);
    let said = exits(
        &t,
        &["spawn", "carol", "--backend", "process", "--exec", "cat"],
        1,
    );
    assert!(
        said.contains("carol's worker exited as soon as it started")
            && said.contains("carol.worker is a directory, not teamctl's lock file"),
        "{said}"
    );
    // Gone: `resume` starts it and the message waiting is handled.
    std::fs::remove_file(locks.join("bob.worker")).unwrap();
    let said = exits(&t, &["resume", "bob"], 0);
    assert!(said.contains("bob resumed"), "{said}");
    wait_until_or_show(
        "bob's reply to hi",
        LONG,
        || {
            t.inbox("delta", "team-lead")
                .iter()
                .any(|m| m["from"] == "bob" && m["text"] == "hi")
        },
        || bob_log(&t, "delta"),
    );
    let shown = exits(&t, &["status"], 0);
    assert!(!shown.contains("bob: its worker exited"), "{shown}");
    exits(&t, &["delete", "--force"], 0);
}

/// The same in tmux: the worker's reason was only on its dead pane; `resume` now fails with
/// it, and `status` shows it.
#[test]
fn a_tmux_worker_that_dies_at_once_fails_resume_with_its_reason() {
    let t = TestEnv::with_tmux();
    stopped_bob(&t, "delta", "tmux");
    let lock = t.team_dir("delta").join("locks/bob.worker");
    plant(&lock, Odd::Dir, &t.work.path().join("outside"));
    let why = "bob.worker is a directory, not teamctl's lock file";
    let said = exits(&t, &["resume", "bob"], 1);
    assert!(
        said.contains("bob's worker exited as soon as it started") && said.contains(why),
        "{said}"
    );
    let shown = exits(&t, &["status"], 0);
    assert!(shown.contains(why), "{shown}");
    assert_eq!(t.member_status("bob"), "dead");
    std::fs::remove_dir(&lock).unwrap();
    exits(&t, &["resume", "bob"], 0);
    wait_until("bob idle again", LONG, || t.member_status("bob") == "idle");
    exits(&t, &["delete", "--force"], 0);
}

/// A directory at a stopped teammate's live state: its worker starts and serves, but never
/// writes its state, so `resume` waited its whole 15 s and said "resumed", while `status`
/// showed it unknown and `wait` timed out (attacker QA). `resume` now says, exit 1, that the
/// worker runs but cannot write its live state; the worker still answers.
#[test]
fn a_directory_at_a_live_state_fails_resume_with_what_it_is() {
    let t = TestEnv::new();
    stopped_bob(&t, "echo", "process");
    let state = t.team_dir("echo").join("state").join("bob.json");
    std::fs::remove_file(&state).unwrap();
    std::fs::create_dir_all(state.join("x")).unwrap();
    let said = exits(&t, &["resume", "bob"], 1);
    assert!(
        said.contains("bob's worker runs (pid") && said.contains("cannot write its live state"),
        "{said}"
    );
    assert!(!said.contains("resumed"), "{said}");
    let out = t.run(&["ask", "bob", "still-here", "--timeout", "20"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("still-here"),
        "{out:?}"
    );
    std::fs::remove_dir_all(&state).unwrap();
    exits(&t, &["delete", "--force"], 0);
}

/// Team `team` with bob (agent `cat`, on `backend`) once idle, then killed: stopped, to be
/// resumed.
fn stopped_bob(t: &TestEnv, team: &str, backend: &str) {
    exits(t, &["create", team], 0);
    exits(
        t,
        &["spawn", "bob", "--backend", backend, "--exec", "cat"],
        0,
    );
    wait_until_or_show(
        "bob idle",
        LONG,
        || t.member_status("bob") == "idle",
        || bob_log(t, team),
    );
    exits(t, &["kill", "bob"], 0);
}

/// A worker killed mid-write leaves its temporary file beside the file it was replacing
/// (attacker QA 41: a large live state's, never swept). `doctor` warns of such a file once its
/// writer is gone and it has not changed for a minute, and `--fix` removes it; a fresh one, one
/// of a running writer and a link of that name (pointing outside the home) are left.
#[test]
fn doctor_fix_removes_temporary_files_left_by_writers_killed_mid_write() {
    let t = TestEnv::new();
    exits(&t, &["create", "tmps"], 0);
    exits(
        &t,
        &["spawn", "bob", "--backend", "process", "--exec", "cat"],
        0,
    );
    wait_until("bob idle", LONG, || t.member_status("bob") == "idle");
    let dir = t.team_dir("tmps");
    let unique = "0192f3a4b5c6d7e8f90a1b2c3d4e5f60";
    // A pid no process has: above the kernel's highest.
    let gone = 4_194_305;
    let old = std::time::SystemTime::now() - Duration::from_mins(10);
    let make = |at: PathBuf, when: std::time::SystemTime| {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(&at, vec![b'x'; 4096]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&at)
            .unwrap()
            .set_modified(when)
            .unwrap();
        at
    };
    let left = [
        make(
            dir.join(format!("state/.bob.json.{gone}.{unique}.tmp")),
            old,
        ),
        make(
            dir.join(format!("inboxes/bob/cursors/.worker.{gone}.{unique}.tmp")),
            old,
        ),
        make(dir.join(format!(".config.json.{gone}.{unique}.tmp")), old),
    ];
    let kept = [
        make(
            dir.join(format!("state/.bob.json.{gone}.{unique}.tmp"))
                .with_file_name(format!(".carol.json.{gone}.{unique}.tmp")),
            std::time::SystemTime::now(),
        ),
        make(
            dir.join(format!(
                "state/.dave.json.{}.{unique}.tmp",
                std::process::id()
            )),
            old,
        ),
    ];
    let outside = t.work.path().join("outside");
    std::fs::write(&outside, b"keep").unwrap();
    let link = dir.join(format!("state/.erin.json.{gone}.{unique}.tmp"));
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let said = text(&run_within(&t, &["doctor"]));
    assert!(
        said.contains(
            "warn    temps     3 temporary files left by writers that ended mid-write (12288 bytes)"
        ) && said.contains("`teamctl doctor --fix` removes them"),
        "{said}"
    );
    let fixed = text(&run_within(&t, &["doctor", "--fix"]));
    assert!(
        fixed.contains("fixed removed 3 temporary files left by writers that ended mid-write"),
        "{fixed}"
    );
    for p in &left {
        assert!(p.symlink_metadata().is_err(), "{}: {fixed}", p.display());
    }
    for p in &kept {
        assert!(p.is_file(), "{}: {fixed}", p.display());
    }
    assert!(link.symlink_metadata().is_ok());
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    let again = text(&run_within(&t, &["doctor"]));
    assert!(!again.contains("temps"), "{again}");
    assert_eq!(t.member_status("bob"), "idle");
    exits(&t, &["delete", "--force"], 0);
}

/// A lock held and not let go (a holder stopped with Ctrl-Z, or stuck): the command waiting
/// for it says so once, naming the holder, and goes on when it is let go (attacker QA 45:
/// `send` hung with no word). Nothing is lost: the message is delivered after.
#[test]
fn a_command_waiting_long_for_a_lock_says_who_holds_it_and_goes_on() {
    let env = TestEnv::new();
    env.ok(&["create", "odd-held"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(env.team_dir("odd-held").join("config.lock"))
        .unwrap();
    lock.lock().unwrap();
    let err = env.work.path().join("send.err");
    let mut send = env.cmd(&["send", "bob", "after the wait"]);
    send.stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = send.spawn().unwrap();
    let said = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_until_or_show(
        "send to say what it waits for",
        LONG,
        || said().contains("waiting for the lock"),
        said,
    );
    assert!(
        said().contains(&format!(
            "config.lock (held by pid {}, \"",
            std::process::id()
        )),
        "{}",
        said()
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "send went on under the lock"
    );
    lock.unlock().unwrap();
    assert!(child.wait().unwrap().success(), "{}", said());
    assert_eq!(
        said().matches("waiting for the lock").count(),
        1,
        "{}",
        said()
    );
    wait_until("bob's answer", LONG, || {
        env.inbox("odd-held", "team-lead")
            .iter()
            .any(|m| m["from"] == "bob" && m["text"] == "after the wait")
    });
}
