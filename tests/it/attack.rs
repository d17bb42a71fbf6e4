//! A running worker's directories attacked by hand (attacker QA): `inboxes` moved away, a
//! link swapped in for the team directory or `teams`, a FIFO or link planted at its cursor.
//! Each attack is made while the worker runs; the outcome is waited for with a deadline.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{TestEnv, snapshot, wait_until, wait_until_or_show};

const LONG: Duration = Duration::from_secs(20);

/// Team `team` with bob (process backend, agent `exec`) idle.
fn team_with_idle_bob(t: &TestEnv, team: &str, exec: &str) {
    t.ok(&["create", team]);
    t.ok(&["spawn", "bob", "--backend", "process", "--exec", exec]);
    wait_until("bob idle", LONG, || t.member_status("bob") == "idle");
}

/// `ask bob TEXT` in `team` (bob's agent is `cat`) answers TEXT; `when` says which case
/// failed.
fn bob_answers(t: &TestEnv, team: &str, text: &str, when: &str) {
    let out = t.run(&["ask", "bob", text, "--timeout", "15"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == text,
        "{when}: bob did not answer {text:?}: {out:?}\nbob's log:\n{}",
        bob_log(&t.team_dir(team))
    );
}

/// bob's worker log in the team directory `team_dir`.
fn bob_log(team_dir: &Path) -> String {
    std::fs::read_to_string(team_dir.join("logs/bob.log")).unwrap_or_default()
}

/// How many of bob's answers in the leader's inbox say `text`.
fn answers(t: &TestEnv, team: &str, text: &str) -> usize {
    t.inbox(team, "team-lead")
        .iter()
        .filter(|m| m["from"] == "bob" && m["text"] == text)
        .count()
}

fn running(pid: u32) -> bool {
    teamctl::backend::proc::running(pid)
}

/// Whether bob is idle and its worker waits for a wake-up (its one thread parked in
/// `epoll_wait`), not still on its way there after its last round.
fn parked(t: &TestEnv, pid: u32) -> bool {
    t.member_status("bob") == "idle"
        && std::fs::read_to_string(format!("/proc/{pid}/wchan")).is_ok_and(|w| w.contains("epoll"))
}

/// The whole `inboxes` directory moved away (`mv inboxes inboxes.old`) under an idle worker:
/// its watch went with it and nothing woke it, so it stayed deaf to every later send (doctor
/// noticed after some 30 s). A send after the move is now answered.
#[test]
fn a_moved_inboxes_directory_is_watched_anew_and_a_later_send_answered() {
    let t = TestEnv::new();
    team_with_idle_bob(&t, "mv1", "cat");
    bob_answers(&t, "mv1", "before", "before the move");
    let pid = t.member("bob")["pid"].as_u64().unwrap() as u32;
    // Waiting, not still on its way to wait: a round after the move arms anew by itself.
    wait_until("bob's worker to wait for mail", LONG, || parked(&t, pid));
    let dir = t.team_dir("mv1");
    std::fs::rename(dir.join("inboxes"), dir.join("inboxes.old")).unwrap();
    bob_answers(&t, "mv1", "after", "after inboxes was moved away");
    t.ok(&["delete", "--force"]);
}

/// A link swapped in (for the team directory, or for `teams`) while bob's turn runs, to a
/// copy made of it: bob answered, said it was idle and watched through the link, writing
/// into the copy, and later mail was never read. Now it checks the whole path before it
/// writes: it ends, its log (the file it opened at the start) says why, nothing is written
/// into the copy, and once the directory is back a `resume` answers the message.
fn link_swapped_in_mid_turn(teams_too: bool) {
    let t = TestEnv::new();
    let team = if teams_too { "sw2" } else { "sw1" };
    let gate = t.work.path().join("gate");
    nix::unistd::mkfifo(
        &gate,
        nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
    )
    .unwrap();
    team_with_idle_bob(&t, team, &format!("read _ < '{}'; cat", gate.display()));
    let pid = t.member("bob")["pid"].as_u64().unwrap() as u32;
    t.ok(&["send", "bob", "hello"]);
    wait_until("bob to take the message", LONG, || {
        t.member_status("bob") == "working"
    });
    // The attack: the real directory moved aside, a copy of it linked in its place.
    let real = if teams_too {
        t.home_path().join("teams")
    } else {
        t.team_dir(team)
    };
    let aside = t.work.path().join("aside");
    let copy = t.work.path().join("copy");
    std::fs::rename(&real, &aside).unwrap();
    let cp = Command::new("cp").arg("-a").arg(&aside).arg(&copy).status();
    assert!(cp.unwrap().success());
    std::os::unix::fs::symlink(&copy, &real).unwrap();
    let before = snapshot(&copy);
    // The turn ends: its answer is due.
    std::fs::write(&gate, b"go\n").unwrap();
    let aside_team = if teams_too {
        aside.join(team)
    } else {
        aside.clone()
    };
    wait_until_or_show(
        "bob's worker to end",
        LONG,
        || !running(pid),
        || bob_log(&aside_team),
    );
    let said = bob_log(&aside_team);
    assert!(
        said.contains("the team's directories are not as teamctl made them")
            && said.contains("symbolic link"),
        "{said}"
    );
    let after = snapshot(&copy);
    let changed: Vec<_> = after
        .iter()
        .filter(|f| !before.contains(f))
        .map(|(p, _)| p)
        .collect();
    assert!(changed.is_empty(), "written through the link: {changed:?}");
    // Put right: the message, never marked handled, is answered by the resumed teammate.
    std::fs::remove_file(&real).unwrap();
    std::fs::rename(&aside, &real).unwrap();
    std::fs::remove_file(&gate).unwrap();
    std::fs::write(&gate, b"go\n").unwrap();
    t.ok(&["resume", "bob"]);
    wait_until_or_show(
        "the resumed bob to answer",
        LONG,
        || answers(&t, team, "hello") == 1,
        || bob_log(&t.team_dir(team)),
    );
    t.ok(&["delete", "--force"]);
}

#[test]
fn a_link_swapped_in_for_the_team_directory_mid_turn_is_never_written_through() {
    link_swapped_in_mid_turn(false);
}

#[test]
fn a_link_swapped_in_for_teams_mid_turn_is_never_written_through() {
    link_swapped_in_mid_turn(true);
}

/// What to plant at a cursor.
#[derive(Clone, Copy, Debug)]
enum Planted {
    Fifo,
    Link,
}

fn plant(at: &Path, what: Planted, outside: &Path) {
    if let Err(e) = std::fs::remove_file(at) {
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    }
    match what {
        Planted::Fifo => nix::unistd::mkfifo(
            at,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap(),
        Planted::Link => std::os::unix::fs::symlink(outside, at).unwrap(),
    }
}

/// A FIFO or link planted at bob's cursor while it runs: the worker died at its next cursor
/// write, having first run its handled message again (the cursor read as the start). Now
/// it never waits on nor follows it: it puts its own record of where it is in its place,
/// says so, and answers only the new message; what the link pointed at is untouched.
#[test]
fn a_fifo_or_link_at_the_cursor_of_a_running_worker_is_replaced_and_nothing_runs_twice() {
    for what in [Planted::Fifo, Planted::Link] {
        let t = TestEnv::new();
        team_with_idle_bob(&t, "cur1", "cat");
        bob_answers(&t, "cur1", "one", "before the plant");
        let cursor = t.team_dir("cur1").join("inboxes/bob/cursors/worker");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"not a cursor").unwrap();
        plant(&cursor, what, &outside);
        bob_answers(&t, "cur1", "two", &format!("after a {what:?} was planted"));
        assert_eq!(answers(&t, "cur1", "one"), 1, "{what:?}: one ran again");
        let said = bob_log(&t.team_dir("cur1"));
        assert!(said.contains("the cursor file was spoiled"), "{said}");
        assert!(
            std::fs::symlink_metadata(&cursor).unwrap().is_file(),
            "{what:?}: no regular cursor file put back"
        );
        assert_eq!(std::fs::read(&outside).unwrap(), b"not a cursor");
        bob_answers(&t, "cur1", "three", "after the cursor was put back");
        assert_eq!(answers(&t, "cur1", "two"), 1, "{what:?}: two ran again");
        t.ok(&["delete", "--force"]);
    }
}

/// The same plant while bob is down: `resume` refused with the reason (before, it resumed,
/// and the worker ran the handled message again, then died on its cursor write, at every
/// `resume`), and a worker started anyway ends at once, its log saying why; nothing runs
/// again either way.
#[test]
fn a_fifo_or_link_at_the_cursor_of_a_stopped_worker_is_refused_with_the_reason() {
    for what in [Planted::Fifo, Planted::Link] {
        let t = TestEnv::new();
        team_with_idle_bob(&t, "cur2", "cat");
        bob_answers(&t, "cur2", "one", "before the kill");
        t.ok(&["kill", "bob"]);
        let cursor = t.team_dir("cur2").join("inboxes/bob/cursors/worker");
        let outside = t.work.path().join("outside");
        std::fs::write(&outside, b"not a cursor").unwrap();
        plant(&cursor, what, &outside);
        let err = t.fails(&["resume", "bob"], 1);
        assert!(
            err.contains("cannot resume bob")
                && err.contains(&cursor.display().to_string())
                && err.contains("handled messages"),
            "{what:?}: {err}"
        );
        // A worker started by hand, as a pane or process would start it.
        let id = "bob@cur2";
        let home = t.home_path().display().to_string();
        let out = t
            .cmd_of(
                Path::new(crate::common::BIN),
                &["worker", "--home", &home, "--id", id],
            )
            .output()
            .unwrap();
        assert!(!out.status.success(), "{what:?}: {out:?}");
        let said = bob_log(&t.team_dir("cur2"));
        assert!(
            said.contains("cannot tell where this teammate's inbox was handled to")
                && said.contains(&cursor.display().to_string()),
            "{what:?}: {said}"
        );
        assert_eq!(answers(&t, "cur2", "one"), 1, "{what:?}: one ran again");
        assert_eq!(std::fs::read(&outside).unwrap(), b"not a cursor");
        t.ok(&["delete", "--force"]);
    }
}

/// The texts of every message in the inbox logs under `dir` (a copy of a team directory, or
/// of `teams`), whatever member they went to.
fn texts_under(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, _)| p.ends_with("inbox.jsonl"))
        .flat_map(|(_, bytes)| {
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|m| m["text"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A link to a copy swapped in for the team directory (or `teams`) and back, again and again
/// (`renameat2(RENAME_EXCHANGE)`, so the name is never missing), while sends run: a send
/// checked the path, then opened the log by path, and 1-4 in 200 went into the copy,
/// exiting 0 (attacker QA). Now the append walks down from the home by directory
/// descriptors, never through a link: a send either fails, saying so, or its message is in
/// the real inbox, once. None is ever in the copy.
fn sends_while_a_link_is_swapped_in_and_out(teams_too: bool) {
    use nix::fcntl::{RenameFlags, renameat2};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let t = TestEnv::new();
    let team = if teams_too { "swap2" } else { "swap1" };
    t.ok(&["create", team]);
    // bob, stopped: a sender only (a send to a stopped teammate would resume it).
    t.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    t.ok(&["kill", "bob"]);
    let real = if teams_too {
        t.home_path().join("teams")
    } else {
        t.team_dir(team)
    };
    let copy = t.work.path().join("copy");
    let cp = Command::new("cp").arg("-a").arg(&real).arg(&copy).status();
    assert!(cp.unwrap().success());
    let link = real.with_file_name("link");
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let attacker = {
        let (stop, swaps, real, link) = (stop.clone(), swaps.clone(), real.clone(), link.clone());
        std::thread::spawn(move || {
            let swap = || {
                let (cwd, cwd2) = (nix::fcntl::AT_FDCWD, nix::fcntl::AT_FDCWD);
                renameat2(cwd, &real, cwd2, &link, RenameFlags::RENAME_EXCHANGE).unwrap();
            };
            while !stop.load(Ordering::Relaxed) {
                swap();
                std::thread::yield_now();
                swap();
                swaps.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
        })
    };
    // Sends on two threads at once, each text its own.
    const SENDS: usize = 120;
    let results: Vec<(String, std::process::Output)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|k| {
                let t = &t;
                s.spawn(move || {
                    (0..SENDS / 2)
                        .map(|i| {
                            let text = format!("m-{k}-{i}");
                            let out =
                                t.run(&["--as", "bob", "--team", team, "send", "team-lead", &text]);
                            (text, out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    stop.store(true, Ordering::Relaxed);
    attacker.join().unwrap();
    // The real directory is back at its name (the attacker ends each round with it there).
    assert!(!std::fs::symlink_metadata(&real).unwrap().is_symlink());
    assert!(
        swaps.load(Ordering::Relaxed) > 0,
        "the attacker never swapped"
    );
    let in_copy = texts_under(&copy);
    let in_real: Vec<String> = t
        .inbox(team, "team-lead")
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect();
    let sent_ok: Vec<&String> = results
        .iter()
        .filter(|(_, out)| out.status.success())
        .map(|(text, _)| text)
        .collect();
    let leaked: Vec<&String> = results
        .iter()
        .map(|(text, _)| text)
        .filter(|text| in_copy.contains(text))
        .collect();
    assert!(
        leaked.is_empty(),
        "{} of {SENDS} sends ({} exited 0) went into the copy: {leaked:?}",
        leaked.len(),
        sent_ok.len()
    );
    for text in &sent_ok {
        let n = in_real.iter().filter(|t| t == text).count();
        assert_eq!(n, 1, "{text}: exited 0, in the real inbox {n} times");
    }
    for (text, out) in results.iter().filter(|(_, out)| !out.status.success()) {
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!said.trim().is_empty(), "{text}: failed without a word");
    }
    // At least some went through: the test shows the sends' outcome, not only refusals.
    assert!(!sent_ok.is_empty(), "no send exited 0: {:?}", results[0].1);
    std::fs::remove_file(&link).unwrap();
    t.ok(&["--team", team, "delete", "--force"]);
}

#[test]
fn sends_while_a_link_is_swapped_for_the_team_directory_never_land_in_the_copy() {
    sends_while_a_link_is_swapped_in_and_out(false);
}

#[test]
fn sends_while_a_link_is_swapped_for_teams_never_land_in_the_copy() {
    sends_while_a_link_is_swapped_in_and_out(true);
}
