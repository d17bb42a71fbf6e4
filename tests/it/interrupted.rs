//! What an interrupted stop leaves behind: a shutdown request the leader gave up on (a
//! graceful shutdown that timed out, then `kill` or `shutdown --force`) does not stop the
//! worker `resume` starts later; Ctrl-C (a real SIGINT) in `delete` undoes its deleting mark
//! and exits 130 saying so; Ctrl-C in `ask` exits 130 saying where the question and its
//! answer go.

use std::process::{Child, Output};
use std::time::Duration;

use crate::common::{TestEnv, wait_until, wait_until_or_show};
use serde_json::Value;

const LONG: Duration = Duration::from_secs(30);

fn create(env: &TestEnv, team: &str) {
    let out = env.ok(&["create", team]);
    assert_eq!(out.trim(), team);
}

/// Messages in the leader's inbox of `team` from `from` of type `kind`.
fn leader_mail(env: &TestEnv, team: &str, from: &str, kind: &str) -> Vec<Value> {
    env.inbox(team, "team-lead")
        .into_iter()
        .filter(|m| m["from"] == from && m["type"] == kind)
        .collect()
}

fn replies(env: &TestEnv, team: &str, from: &str) -> Vec<String> {
    leader_mail(env, team, from, "message")
        .iter()
        .map(|m| m["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn log_of(env: &TestEnv, team: &str, name: &str) -> String {
    std::fs::read_to_string(env.team_dir(team).join("logs").join(format!("{name}.log")))
        .unwrap_or_default()
}

/// `teammate`'s worker pid as the team file records it.
fn pid_of(env: &TestEnv, team: &str, name: &str) -> u64 {
    env.recorded(team, name)["pid"].as_u64().expect("a pid")
}

/// How a stop that was given up on is ended.
#[derive(Clone, Copy)]
enum End {
    Kill,
    Force,
}

/// bob on `backend`, busy in a long turn on a first message, asked to shut down and not
/// answering in time, then ended by `end`, then resumed: the new worker must not answer the
/// old request (and stop at once), must handle the message the killed turn left, answer a
/// question, and still stop on a request sent after the resume.
fn a_request_given_up_on(env: &TestEnv, team: &str, backend: &str, end: End) {
    create(env, team);
    // The `mkdir` succeeds once: only the first worker's turn is long.
    let once = env.work.path().join("once");
    let exec = format!(
        "if [ \"$TEAMCTL_MESSAGE\" = slow ] && mkdir '{}' 2>/dev/null; then sleep 600; fi; echo \"re: $TEAMCTL_MESSAGE\"",
        once.display()
    );
    env.ok(&["spawn", "bob", "--backend", backend, "--exec", &exec]);
    env.ok(&["send", "bob", "slow"]);
    wait_until("bob working on the slow message", LONG, || {
        env.member_status("bob") == "working"
    });
    let err = env.fails(&["shutdown", "bob", "--timeout", "1"], 1);
    assert!(err.contains("no shutdown response from bob"), "{err}");
    match end {
        End::Kill => env.ok(&["kill", "bob"]),
        End::Force => env.ok(&["shutdown", "bob", "--force"]),
    };
    assert_eq!(env.member_status("bob"), "stopped");
    let responses_before = leader_mail(env, team, "bob", "shutdown_response").len();
    env.ok(&["resume", "bob"]);
    let pid = pid_of(env, team, "bob");
    // The request is before this question in bob's inbox: by the answer, the worker has
    // dealt with it.
    let answer = env.ok(&["ask", "bob", "still there?", "--timeout", "30"]);
    assert_eq!(answer.trim(), "re: still there?");
    let log = || log_of(env, team, "bob");
    assert_eq!(
        leader_mail(env, team, "bob", "shutdown_response").len(),
        responses_before,
        "the resumed worker answered the request given up on:\n{}",
        log()
    );
    assert_eq!(
        pid_of(env, team, "bob"),
        pid,
        "the worker resume started stopped (and was started again):\n{}",
        log()
    );
    // The answer is written before the worker records itself idle and moves its cursor.
    wait_until_or_show(
        "bob idle with nothing unread after the answer",
        LONG,
        || {
            let bob = env.member("bob");
            bob["status"] == "idle" && bob["unread"] == 0
        },
        || format!("{}\n{}", env.member("bob"), log()),
    );
    // The message the killed turn never finished is handled again (at least once).
    assert!(replies(env, team, "bob").contains(&"re: slow\n".to_string()));
    assert!(log().contains("no longer waits for"), "{}", log());
    // A request sent after the resume still stops it.
    env.ok(&["shutdown", "bob", "--timeout", "30"]);
    assert_eq!(env.member_status("bob"), "stopped");
    assert_eq!(env.processes(), Vec::<u32>::new());
    env.ok(&["delete", "--force"]);
}

#[test]
fn a_request_given_up_on_by_kill_does_not_stop_the_resumed_busy_teammate() {
    let env = TestEnv::new();
    a_request_given_up_on(&env, "ir-kill", "process", End::Kill);
}

#[test]
fn a_request_given_up_on_by_force_does_not_stop_the_resumed_busy_teammate() {
    let env = TestEnv::new();
    a_request_given_up_on(&env, "ir-force", "process", End::Force);
}

#[test]
fn a_request_given_up_on_does_not_stop_the_resumed_teammate_in_tmux() {
    let env = TestEnv::with_tmux();
    a_request_given_up_on(&env, "ir-tmux", "tmux", End::Kill);
}

/// Send SIGINT to `child` (a teamctl command the test started).
fn interrupt(child: &Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
}

fn finished(child: Child) -> (Option<i32>, String) {
    let Output { status, stderr, .. } = child.wait_with_output().unwrap();
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

#[test]
fn ctrl_c_in_delete_before_it_asks_anyone_keeps_the_team_unmarked() {
    let env = TestEnv::new();
    create(&env, "ir-del");
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let pid = pid_of(&env, "ir-del", "bob");
    let gate = env.work.path().join("gate");
    let child = env.paused(&["delete"], "delete-marked", &gate);
    let reached = env.work.path().join("gate.reached");
    wait_until("delete holding after its mark", LONG, || reached.exists());
    assert!(env.config("ir-del").get("deleting").is_some());
    interrupt(&child);
    // Opened only once the signal is recorded (`pause::SIGNALLED`).
    std::fs::write(&gate, b"signalled").unwrap();
    let (code, err) = finished(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("interrupted (SIGINT)") && err.contains("team ir-del is kept"),
        "{err}"
    );
    assert!(err.contains("bob not asked"), "{err}");
    assert!(env.config("ir-del").get("deleting").is_none());
    // Nothing was asked of bob: it runs on, and sends are taken again.
    assert_eq!(pid_of(&env, "ir-del", "bob"), pid);
    let answer = env.ok(&["ask", "bob", "hello", "--timeout", "30"]);
    assert_eq!(answer.trim(), "hello");
    env.ok(&["delete"]);
    assert!(!env.team_dir("ir-del").exists());
}

#[test]
fn ctrl_c_in_delete_waiting_for_a_busy_teammate_keeps_the_team_and_says_who_was_asked() {
    let env = TestEnv::new();
    create(&env, "ir-delbusy");
    busy_bob(&env);
    env.ok(&["spawn", "amy", "--backend", "process", "--exec", "cat"]);
    let child = env
        .cmd(&["delete", "--timeout", "600"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // amy answers and stops; bob has the request, deep in its turn.
    wait_until_or_show(
        "amy stopped and bob asked",
        LONG,
        || {
            env.member_status("amy") == "stopped"
                && env
                    .inbox("ir-delbusy", "bob")
                    .iter()
                    .any(|m| m["type"] == "shutdown_request")
        },
        || format!("{:#?}", env.status()),
    );
    interrupt(&child);
    let (code, err) = finished(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("team ir-delbusy is kept"), "{err}");
    assert!(err.contains("amy stopped"), "{err}");
    assert!(err.contains("bob had not answered yet"), "{err}");
    assert!(env.config("ir-delbusy").get("deleting").is_none());
    // Sends are taken again.
    env.ok(&["send", "amy", "back?"]);
    wait_until("amy resumed and answering", LONG, || {
        replies(&env, "ir-delbusy", "amy").contains(&"back?".to_string())
    });
    env.ok(&["delete", "--force"]);
}

#[test]
fn ctrl_c_in_ask_says_the_question_stays_and_where_the_answer_goes() {
    let env = TestEnv::new();
    create(&env, "ir-ask");
    // bob busy on another message: the question waits unread.
    busy_bob(&env);
    let child = env
        .cmd(&["ask", "bob", "are you there?", "--timeout", "600"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the question in bob's inbox", LONG, || {
        env.inbox("ir-ask", "bob")
            .iter()
            .any(|m| m["text"] == "are you there?")
    });
    interrupt(&child);
    let (code, err) = finished(child);
    assert_eq!(code, Some(130), "{err}");
    let id = env
        .inbox("ir-ask", "bob")
        .iter()
        .find(|m| m["text"] == "are you there?")
        .map(|m| m["id"].as_str().unwrap().to_string())
        .unwrap();
    assert!(err.contains(&id), "{err}");
    assert!(err.contains("stays in bob's inbox"), "{err}");
    assert!(
        err.contains("team-lead's inbox") && err.contains("`teamctl inbox`"),
        "{err}"
    );
    // True: it is unread there, and once bob's turn is interrupted it is answered to the
    // leader's inbox.
    assert_eq!(env.member("bob")["unread"], 1);
    env.ok(&["interrupt", "bob"]);
    wait_until("the answer in the leader's inbox", LONG, || {
        replies(&env, "ir-ask", "bob").contains(&"re: are you there?\n".to_string())
    });
    env.ok(&["delete", "--force"]);
}

/// bob, working on the message "slow" for ten minutes (others are answered "re: M").
fn busy_bob(env: &TestEnv) {
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "if [ \"$TEAMCTL_MESSAGE\" = slow ]; then sleep 600; fi; echo \"re: $TEAMCTL_MESSAGE\"",
    ]);
    env.ok(&["send", "bob", "slow"]);
    wait_until("bob working", LONG, || {
        env.member_status("bob") == "working"
    });
}

/// Send `signal` to `child` (a teamctl command the test started).
fn signal(child: &Child, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Ctrl-C while `shutdown` waits for a busy teammate: exit 130 saying the request was sent
/// and stands (the teammate stops once it answers) and how to end it now; SIGTERM: 143. And
/// it is so: once bob's turn ends, bob answers and stops. (QA: it exited 130 silently.)
#[test]
fn ctrl_c_in_shutdown_says_the_request_stands() {
    let env = TestEnv::new();
    create(&env, "ir-shut");
    busy_bob(&env);
    let asked = || {
        env.inbox("ir-shut", "bob")
            .iter()
            .filter(|m| m["type"] == "shutdown_request")
            .count()
    };
    let child = env
        .cmd(&["shutdown", "bob", "--timeout", "600"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("bob asked", LONG, || asked() == 1);
    interrupt(&child);
    let (code, err) = finished(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted (SIGINT)"), "{err}");
    assert!(
        err.contains("the shutdown request to bob was sent and stands: it stops once it answers"),
        "{err}"
    );
    assert!(
        err.contains("`teamctl shutdown --force bob` ends it now"),
        "{err}"
    );
    assert_eq!(env.member_status("bob"), "shutdown_pending");
    // Asked again and ended by SIGTERM once it waits (it says so on stderr): the same request
    // is awaited, not a second one; exit 143.
    let log = env.work.path().join("shutdown.err");
    let child = env
        .cmd(&["shutdown", "bob", "--timeout", "600"])
        .stderr(std::fs::File::create(&log).unwrap())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until_or_show(
        "the second shutdown waiting",
        LONG,
        || said().contains("waiting for bob to answer"),
        said,
    );
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let (code, _) = finished(child);
    let err = said();
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("interrupted (SIGTERM)"), "{err}");
    assert_eq!(asked(), 1);
    // What it said stands: bob's turn ends, it answers, and the next command acts on it.
    env.ok(&["interrupt", "bob"]);
    wait_until("bob stopped once it answered", LONG, || {
        env.member_status("bob") == "stopped"
    });
    assert_eq!(env.processes(), Vec::<u32>::new());
    env.ok(&["delete", "--force"]);
}

/// Ctrl-C once `delete` is ending the teammates (past the point the team can be kept): the
/// delete is finished and exits 0, saying the signal came too late to keep the team. (QA: it
/// said the team was deleted and exited 130.)
#[test]
fn ctrl_c_in_delete_too_late_to_keep_the_team_finishes_and_exits_0() {
    let env = TestEnv::new();
    create(&env, "ir-late");
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let gate = env.work.path().join("gate");
    let child = env.paused(&["delete"], "delete-ending", &gate);
    let reached = env.work.path().join("gate.reached");
    wait_until("delete past its last keeping point", LONG, || {
        reached.exists()
    });
    interrupt(&child);
    // Opened only once the signal is recorded (`pause::SIGNALLED`).
    std::fs::write(&gate, b"signalled").unwrap();
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr),
    );
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(out.trim(), "deleted team ir-late");
    assert!(
        err.contains("SIGINT came while the teammates were being ended, too late to keep the team"),
        "{err}"
    );
    assert!(!env.team_dir("ir-late").exists());
    assert_eq!(env.processes(), Vec::<u32>::new());
}

/// Ctrl-C typed in a busy teammate's tmux pane (a real SIGINT, `send-keys C-c`) was deferred
/// silently until the turn ended, and then the teammate was just `dead` (QA). Now the pane
/// says at once that the worker stops after the turn and how to end the turn now, and
/// `status` shows it `stopping`; the turn finishes (its reply and idle notification sent),
/// then the worker ends as a Ctrl-C'd idle one does: stopped (by the user: it ended `dead`
/// with no reason, and `doctor` called it a problem), with no turn left on its row.
/// Meanwhile `send` says it is stopping (it said nothing) and `resume` says it cannot be
/// resumed until it has stopped (it said "already running").
/// Ctrl-C again in a busy teammate's pane ends the turn now, as `teamctl interrupt` does, and
/// the worker then ends `stopped` (QA: the second press did nothing; the turn ran on).
#[test]
fn ctrl_c_twice_in_a_busy_teammates_pane_ends_the_turn_now() {
    let env = TestEnv::with_tmux();
    create(&env, "ir-twice");
    // The turn never ends by itself: only an interrupt ends it. It leaves a process outside
    // its group (`setsid`), which the user's stop ends too, as `kill` would.
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "tmux",
        "--exec",
        "setsid sleep 601 & sleep 600; echo never",
    ]);
    env.ok(&["send", "bob", "slow"]);
    wait_until("bob working", LONG, || {
        env.member_status("bob") == "working"
    });
    let pane = env.pane_of("ir-twice", "bob");
    env.tmux_ok(&["send-keys", "-t", &pane, "C-c"]);
    wait_until_or_show(
        "bob stopping after its turn",
        LONG,
        || env.member("bob")["stopping"].as_str() == Some("Ctrl-C in its pane"),
        || log_of(&env, "ir-twice", "bob"),
    );
    env.tmux_ok(&["send-keys", "-t", &pane, "C-c"]);
    wait_until_or_show(
        "bob stopped with its turn interrupted",
        LONG,
        || env.member_status("bob") == "stopped",
        || {
            format!(
                "{}\n{}",
                env.ok(&["status"]),
                log_of(&env, "ir-twice", "bob")
            )
        },
    );
    let log = log_of(&env, "ir-twice", "bob");
    assert!(
        log.contains("SIGINT again: ending bob's turn now; it stops then"),
        "{log}"
    );
    assert!(
        replies(&env, "ir-twice", "bob")
            .iter()
            .all(|r| !r.contains("never"))
    );
    let idle = leader_mail(&env, "ir-twice", "bob", "idle_notification");
    assert!(
        idle.iter().any(|m| m["idleReason"] == "interrupted"),
        "{idle:?}"
    );
    // Nothing of the turn runs on (its `sleep`s carry the home in their environment), and
    // its pane closed with it: `doctor` has nothing to report (it said the dead pane was
    // orphaned: new-user QA).
    wait_until_or_show(
        "nothing of bob's left running",
        LONG,
        || env.processes().is_empty(),
        || crate::common::describe(&env.processes()),
    );
    wait_until_or_show(
        "bob's pane closed",
        LONG,
        || {
            // No server left (its last pane closed) is no pane either.
            let out = env.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]);
            !String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|p| p == pane)
        },
        || {
            let out = env.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"]);
            String::from_utf8_lossy(&out.stdout).into_owned()
        },
    );
    let doctor = env.run(&["doctor"]);
    assert!(doctor.status.success(), "{doctor:?}");
    env.ok(&["delete", "--force"]);
}

#[test]
fn ctrl_c_in_a_busy_teammates_pane_says_it_stops_after_the_turn() {
    let env = TestEnv::with_tmux();
    create(&env, "ir-pane");
    let gate = env.work.path().join("gate");
    let exec = format!(
        "if [ \"$TEAMCTL_MESSAGE\" = slow ]; then while [ ! -e '{}' ]; do sleep 0.05; done; fi; echo \"re: $TEAMCTL_MESSAGE\"",
        gate.display()
    );
    env.ok(&["spawn", "bob", "--backend", "tmux", "--exec", &exec]);
    env.ok(&["send", "bob", "slow"]);
    wait_until("bob working", LONG, || {
        env.member_status("bob") == "working"
    });
    let pane = env.pane_of("ir-pane", "bob");
    env.tmux_ok(&["send-keys", "-t", &pane, "C-c"]);
    let shown = || {
        env.tmux_ok(&["capture-pane", "-p", "-J", "-t", &pane])
            .replace('\n', "")
    };
    wait_until_or_show(
        "the pane saying bob stops after its turn",
        LONG,
        || {
            shown().contains(
                "bob stops once the current turn is done; `teamctl interrupt bob` ends the turn now",
            )
        },
        || format!("{}\n{}", shown(), log_of(&env, "ir-pane", "bob")),
    );
    let bob = env.member("bob");
    assert_eq!(
        (bob["status"].as_str(), bob["stopping"].as_str()),
        (Some("working"), Some("Ctrl-C in its pane")),
        "{bob}"
    );
    let table = env.ok(&["status"]);
    assert!(
        table.contains("working (stopping)") && table.contains("`teamctl interrupt bob`"),
        "{table}"
    );
    let sent = env.run(&["send", "bob", "later"]);
    let said = String::from_utf8_lossy(&sent.stderr);
    assert!(
        sent.status.success()
            && said.contains("bob is stopping after its current turn (Ctrl-C in its pane); the message waits in its inbox until it is resumed"),
        "{sent:?}"
    );
    let resumed = env.fails(&["resume", "bob"], 1);
    assert!(
        resumed.contains("bob is stopping after its current turn (Ctrl-C in its pane)")
            && !resumed.contains("already running"),
        "{resumed}"
    );
    std::fs::write(&gate, b"").unwrap();
    wait_until_or_show(
        "bob stopped after its turn",
        LONG,
        || env.member_status("bob") == "stopped",
        || {
            format!(
                "{}\n{}",
                env.ok(&["status"]),
                log_of(&env, "ir-pane", "bob")
            )
        },
    );
    assert_eq!(
        replies(&env, "ir-pane", "bob"),
        vec!["re: slow\n".to_string()]
    );
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(!doctor.contains("bob@ir-pane is dead"), "{doctor}");
    // The message sent meanwhile waits for `resume`, which brings bob back to handle it.
    env.ok(&["resume", "bob"]);
    wait_until_or_show(
        "bob to handle the message sent while it stopped",
        LONG,
        || replies(&env, "ir-pane", "bob").len() == 2,
        || log_of(&env, "ir-pane", "bob"),
    );
    assert!(
        !leader_mail(&env, "ir-pane", "bob", "idle_notification").is_empty(),
        "no idle notification for the turn"
    );
    let bob = env.member("bob");
    assert!(
        bob["currentTurn"].is_null() && bob["stopping"].is_null(),
        "{bob}"
    );
    env.ok(&["delete", "--force"]);
}
