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
        // A worker started by hand, as a pane or process would start it: refused, either as
        // not placed by teamctl (`worker::placed`, checked first) or for its cursor.
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
            (said.contains(&format!("this worker of {id}")) && said.contains("will not serve"))
                || (said.contains("cannot tell where this teammate's inbox was handled to")
                    && said.contains(&cursor.display().to_string())),
            "{what:?}: {said}"
        );
        assert_eq!(answers(&t, "cur2", "one"), 1, "{what:?}: one ran again");
        assert_eq!(std::fs::read(&outside).unwrap(), b"not a cursor");
        t.ok(&["delete", "--force"]);
    }
}

/// The texts of every message in the inbox logs under `dir` (a copy of a team directory, or
/// An attacker thread exchanging `real` with `link` (a symbolic link to a copy) by
/// `renameat2(RENAME_EXCHANGE)`, again and again, each round ending with `real` back at its name.
struct SwapLoop {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

impl SwapLoop {
    fn start(real: &Path, link: &Path) -> SwapLoop {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (until, real, link) = (stop.clone(), real.to_path_buf(), link.to_path_buf());
        let thread = std::thread::spawn(move || {
            let swap = || {
                renameat2(
                    AT_FDCWD,
                    &real,
                    AT_FDCWD,
                    &link,
                    RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
            };
            let mut swaps = 0;
            while !until.load(Ordering::Relaxed) {
                swap();
                std::thread::yield_now();
                swap();
                swaps += 1;
                std::thread::yield_now();
            }
            swaps
        });
        SwapLoop { stop, thread }
    }

    /// Stop it; how many rounds it swapped.
    fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

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
    let attacker = SwapLoop::start(&real, &link);
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
    let swaps = attacker.stop();
    // The real directory is back at its name (the attacker ends each round with it there).
    assert!(!std::fs::symlink_metadata(&real).unwrap().is_symlink());
    assert!(swaps > 0, "the attacker never swapped");
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

/// A link to a copy swapped in for the team directory (the real one moved aside) once bob
/// has answered a message and before it stores its cursor (held there by a pause point):
/// its path check trips and it ends. It answered through the inbox's directory descriptors,
/// and stores its cursor through the inbox it holds (opened from the home, never through a
/// link) before it ends on the check: the message is handled, and `resume` does not run its
/// agent again. Before, the check came first, the cursor was never stored, and the resumed
/// teammate ran the message again (attacker QA: 13 of 106 ran twice under a swap loop).
#[test]
fn a_worker_ending_on_a_path_check_after_a_turn_stores_its_cursor_and_runs_nothing_twice() {
    let t = TestEnv::with_tmux();
    let team = "pc1";
    let ran = t.work.path().join("ran");
    let r = ran.display();
    t.ok(&["create", team]);
    t.ok(&[
        "spawn",
        "bob",
        "--exec",
        &format!("tee -a '{r}'; echo >> '{r}'"),
    ]);
    wait_until("bob idle", LONG, || t.member_status("bob") == "idle");
    t.ok(&["kill", "bob"]);
    // bob's worker resumed into a pane (a worker teamctl did not place refuses to serve),
    // paused once it has handled (answered) a message: the pane gets the server's
    // environment, where the pause is set for this one start.
    let gate = t.work.path().join("gate");
    let reached = t.work.path().join("gate.reached");
    let pause = format!("worker-handled:{}", gate.display());
    t.tmux_ok(&["set-environment", "-g", "TEAMCTL_TEST_PAUSE", &pause]);
    t.ok(&["resume", "bob"]);
    t.tmux_ok(&["set-environment", "-g", "-u", "TEAMCTL_TEST_PAUSE"]);
    let real = t.team_dir(team);
    wait_until_or_show(
        "bob's worker to start",
        LONG,
        || t.member_status("bob") == "idle",
        || bob_log(&real),
    );
    let pid = t.member("bob")["pid"].as_u64().unwrap();
    // Ended: gone, or a zombie nobody reaped yet.
    let ended = move || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    t.ok(&["send", "bob", "hello"]);
    wait_until_or_show(
        "bob's worker to handle hello",
        LONG,
        || reached.exists(),
        || bob_log(&real),
    );
    assert_eq!(answers(&t, team, "hello"), 1, "answered before the pause");
    // The attack, between the answer and the cursor.
    let aside = t.work.path().join("aside");
    let copy = t.work.path().join("copy");
    std::fs::rename(&real, &aside).unwrap();
    let cp = Command::new("cp").arg("-a").arg(&aside).arg(&copy).status();
    assert!(cp.unwrap().success());
    std::os::unix::fs::symlink(&copy, &real).unwrap();
    let before = snapshot(&copy);
    std::fs::write(&gate, b"").unwrap();
    let deadline = std::time::Instant::now() + LONG;
    while !ended() {
        assert!(
            std::time::Instant::now() < deadline,
            "bob's worker did not end:\n{}",
            bob_log(&aside)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let said = bob_log(&aside);
    assert!(
        said.contains("the team's directories are not as teamctl made them"),
        "{said}"
    );
    assert_eq!(snapshot(&copy), before, "written through the link");
    // Put right: the resumed bob answers the next message, and hello's agent ran once.
    std::fs::remove_file(&real).unwrap();
    std::fs::rename(&aside, &real).unwrap();
    t.ok(&["resume", "bob"]);
    bob_answers(&t, team, "next", "after resume");
    let runs = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(
        runs.lines().filter(|l| *l == "hello").count(),
        1,
        "hello's agent ran again after resume: {runs:?}\nbob's log:\n{}",
        bob_log(&real)
    );
    assert_eq!(answers(&t, team, "hello"), 1);
    t.ok(&["delete", "--force"]);
}

/// Every file under `dir` whose name marks an atomic write's temporary file.
fn tmp_files(dir: &Path) -> Vec<std::path::PathBuf> {
    snapshot(dir)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

/// A link to a copy swapped in for the team directory (or `teams`) and back, again and again,
/// while `resume` starts bob and bob's worker runs turns: `resume` wrote the team file (a
/// temporary file and a rename), its index, bob's recorded environment (the leader's: a
/// secret taken out of the home), and the worker its live state and log, all by path, so
/// into the copy whenever the link was in (attacker QA), leaving temporary files behind.
/// Now every write goes through the team directory opened from the home by descriptors:
/// nothing at all is written into the copy, no environment file appears there, and no
/// temporary file is left in either.
fn resumes_while_a_link_is_swapped_in_and_out(teams_too: bool) {
    let t = TestEnv::new();
    let team = if teams_too { "rsw2" } else { "rsw1" };
    team_with_idle_bob(&t, team, "cat");
    bob_answers(&t, team, "warm", "before the attack");
    t.ok(&["kill", "bob"]);
    let real = if teams_too {
        t.home_path().join("teams")
    } else {
        t.team_dir(team)
    };
    let copy = t.work.path().join("copy");
    let cp = Command::new("cp").arg("-a").arg(&real).arg(&copy).status();
    assert!(cp.unwrap().success());
    let copy_team = if teams_too {
        copy.join(team)
    } else {
        copy.clone()
    };
    let env_in_copy = copy_team.join("env").join("bob");
    std::fs::remove_file(&env_in_copy).unwrap();
    let before = snapshot(&copy);
    let link = real.with_file_name("link");
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    let attacker = SwapLoop::start(&real, &link);
    let mut resumed = 0;
    let mut env_seen = false;
    let log_before = bob_log(&t.team_dir(team)).len();
    // At least 30 rounds, and more until a worker was started (CI, two busy cores: all 30
    // resumes met the link, so nothing was attacked).
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(3);
    let started = |resumed: usize| {
        resumed > 0
            // (Read through the link, the copy's log has the length it had before.)
            || bob_log(&t.team_dir(team)).len() > log_before
    };
    let mut i = 0;
    while i < 30 || (!started(resumed) && std::time::Instant::now() < deadline) {
        i += 1;
        let out = t.run(&["--team", team, "resume", "bob"]);
        resumed += usize::from(out.status.success());
        let _ = t.run(&["--team", team, "send", "bob", &format!("m-{i}")]);
        env_seen |= env_in_copy.exists();
        // Its worker ends on its path check, or goes idle: then stopped for the next round.
        let _ = t.run(&["--team", team, "kill", "bob"]);
        env_seen |= env_in_copy.exists();
    }
    let swaps = attacker.stop();
    assert!(!std::fs::symlink_metadata(&real).unwrap().is_symlink());
    assert!(swaps > 0, "the attacker never swapped");
    // Workers were started (a resume now waits for its worker's first live state, which a
    // worker that met the link never writes: on two busy cores every resume may fail so).
    let log_after = bob_log(&t.team_dir(team)).len();
    assert!(
        resumed > 0 || log_after > log_before,
        "no worker was started: nothing was attacked"
    );
    assert!(!env_seen, "bob's environment was written into the copy");
    let after = snapshot(&copy);
    let changed: Vec<_> = after
        .iter()
        .filter(|f| !before.contains(f))
        .map(|(p, _)| p)
        .collect();
    assert!(changed.is_empty(), "written into the copy: {changed:?}");
    let gone: Vec<_> = before
        .iter()
        .filter(|f| !after.iter().any(|(p, _)| *p == f.0))
        .map(|(p, _)| p)
        .collect();
    assert!(gone.is_empty(), "removed from the copy: {gone:?}");
    assert_eq!(tmp_files(&real), Vec::<std::path::PathBuf>::new());
    assert_eq!(tmp_files(&copy), Vec::<std::path::PathBuf>::new());
    std::fs::remove_file(&link).unwrap();
    // The team still works once the attack ends.
    let _ = t.run(&["--team", team, "kill", "bob"]);
    t.ok(&["--team", team, "resume", "bob"]);
    bob_answers(&t, team, "after", "after the attack");
    t.ok(&["--team", team, "delete", "--force"]);
}

#[test]
fn resumes_and_turns_while_a_link_is_swapped_for_the_team_directory_never_write_the_copy() {
    resumes_while_a_link_is_swapped_in_and_out(false);
}

#[test]
fn resumes_and_turns_while_a_link_is_swapped_for_teams_never_write_the_copy() {
    resumes_while_a_link_is_swapped_in_and_out(true);
}

/// bob's inbox log removed by hand while bob is idle (its directory stays): the next two
/// messages, sent at once, are both answered (new-user QA: with the log's removal taken for the
/// directory's, bob armed anew, kept the old cursor, and skipped what the new log held below it).
#[test]
fn messages_after_the_inbox_log_was_removed_are_all_answered() {
    let t = TestEnv::new();
    team_with_idle_bob(&t, "rmlog", "cat");
    bob_answers(&t, "rmlog", "first", "before the removal");
    wait_until("bob idle", LONG, || t.member_status("bob") == "idle");
    std::fs::remove_file(t.team_dir("rmlog").join("inboxes/bob/inbox.jsonl")).unwrap();
    t.ok(&["send", "bob", "after-a"]);
    t.ok(&["send", "bob", "after-b"]);
    wait_until("both answered", LONG, || {
        answers(&t, "rmlog", "after-a") == 1 && answers(&t, "rmlog", "after-b") == 1
    });
    t.ok(&["delete", "--force"]);
}

/// `bells` removed (`rm -rf`), then the whole `inboxes` moved away: bob's watch on its inbox's
/// doorbell directory went with the first, so nothing told it of the second, and it stayed deaf
/// to every later message (QA). It now makes the doorbell directory again and watches it anew.
#[test]
fn bells_removed_then_inboxes_moved_away_still_leaves_bob_answering() {
    let t = TestEnv::new();
    team_with_idle_bob(&t, "rmbells", "cat");
    bob_answers(&t, "rmbells", "before", "before the removal");
    let pid = t.member("bob")["pid"].as_u64().unwrap() as u32;
    wait_until("bob's worker to wait for mail", LONG, || parked(&t, pid));
    let dir = t.team_dir("rmbells");
    std::fs::remove_dir_all(dir.join("bells")).unwrap();
    wait_until("bob to watch its doorbell directory anew", LONG, || {
        bob_log(&dir).contains("doorbell was removed")
    });
    wait_until("bob's worker to wait for mail again", LONG, || {
        parked(&t, pid)
    });
    std::fs::rename(dir.join("inboxes"), dir.join("inboxes.old")).unwrap();
    bob_answers(
        &t,
        "rmbells",
        "after",
        "after bells was removed and inboxes moved",
    );
    t.ok(&["delete", "--force"]);
}

/// bob's inbox file made a hard link to carol's: no message is written into it (it would
/// land in both; attacker QA 45: bob ran carol's message, and a link to a shell start-up file
/// got a teammate's mail), the sender told; and mail addressed to carol found in bob's inbox
/// (copied there by hand) is passed over by bob, said in its log. Also `config.index` linked
/// to a file outside the home: the next team-file write replaces the index, the outside file
/// keeps its bytes.
#[test]
fn mail_in_a_linked_inbox_runs_only_for_its_addressee_and_no_index_writes_outside() {
    let t = TestEnv::new();
    team_with_idle_bob(&t, "atk-linked", "cat");
    let dir = t.team_dir("atk-linked");
    t.ok(&["spawn", "carol", "--backend", "process", "--exec", "cat"]);
    wait_until("carol idle", LONG, || t.member_status("carol") == "idle");
    t.ok(&["kill", "bob"]);
    let bob_inbox = dir.join("inboxes/bob/inbox.jsonl");
    let carol_inbox = dir.join("inboxes/carol/inbox.jsonl");
    std::fs::remove_file(&bob_inbox).unwrap();
    std::fs::hard_link(&carol_inbox, &bob_inbox).unwrap();
    let outside = t.work.path().join("victim");
    std::fs::write(&outside, "VICTIM\n").unwrap();
    std::fs::remove_file(dir.join("config.index")).unwrap();
    std::fs::hard_link(&outside, dir.join("config.index")).unwrap();
    t.ok(&["resume", "bob"]);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "VICTIM\n");
    let before = std::fs::read(&carol_inbox).unwrap();
    let err = t.fails(&["send", "carol", "for carol only"], 1);
    assert!(
        err.contains("has other names too (a hard link to it elsewhere), so no message is written into it: nothing was sent"),
        "{err}"
    );
    assert_eq!(std::fs::read(&carol_inbox).unwrap(), before);
    // Unlinked (bob's inbox is made anew); a message to carol copied into bob's by hand.
    std::fs::remove_file(&bob_inbox).unwrap();
    t.ok(&["send", "carol", "for carol only"]);
    let line = std::fs::read_to_string(&carol_inbox)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    std::fs::write(&bob_inbox, format!("{line}\n")).unwrap();
    t.ok(&["send", "bob", "for bob"]);
    wait_until("bob's answer", LONG, || {
        answers(&t, "atk-linked", "for bob") == 1
    });
    wait_until_or_show(
        "bob to pass carol's message over",
        LONG,
        || bob_log(&dir).contains("to carol, not bob: is this inbox a link to another's?"),
        || bob_log(&dir),
    );
    wait_until("carol's answer", LONG, || {
        t.inbox("atk-linked", "team-lead")
            .iter()
            .any(|m| m["from"] == "carol" && m["text"] == "for carol only")
    });
    assert_eq!(answers(&t, "atk-linked", "for carol only"), 0, "bob ran it");
    t.ok(&["kill", "bob", "carol"]);
}

/// A task given to a teammate whose inbox refuses mail (a hard link planted there): the
/// task is saved, and the error says so, and how to tell the owner (attacker re-check 45: it
/// said "nothing was sent; send again", and an update again changed nothing).
#[test]
fn a_task_whose_owner_cannot_be_told_says_it_is_saved_and_how_to_tell() {
    let t = TestEnv::new();
    team_with_idle_bob(&t, "atk-task", "cat");
    t.ok(&["task", "add", "review the auth module"]);
    let inbox = t.team_dir("atk-task").join("inboxes/bob/inbox.jsonl");
    let outside = t.work.path().join("outside");
    std::fs::write(&outside, "").unwrap();
    std::fs::remove_file(&inbox).unwrap();
    std::fs::hard_link(&outside, &inbox).unwrap();
    let err = t.fails(&["task", "update", "1", "--owner", "bob"], 1);
    assert!(
        err.contains("task #1 is bob's now, but bob was not told: ")
            && err.contains("`teamctl send bob 'task #1 is yours: teamctl task show 1'` tells it"),
        "{err}"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"");
    let shown: serde_json::Value =
        serde_json::from_str(&t.ok(&["--json", "task", "show", "1"])).unwrap();
    assert_eq!(shown["owner"], "bob", "{shown}");
    t.ok(&["kill", "bob"]);
}
