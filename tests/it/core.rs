//! End-to-end tests of the core (issue 2), on the process backend: the real binary in a
//! temporary home.

use std::time::Duration;

use crate::common::{TestEnv, snapshot, wait_until};

const T: Duration = Duration::from_secs(20);

fn team_with(env: &TestEnv, members: &[(&str, &str)]) {
    env.ok(&["create", "alpha"]);
    for (name, exec) in members {
        env.ok(&["spawn", name, "--backend", "process", "--exec", exec]);
    }
}

fn replies_to_lead(env: &TestEnv, from: &str) -> Vec<String> {
    env.inbox("alpha", "team-lead")
        .into_iter()
        .filter(|m| m["type"] == "message" && m["from"] == from && m.get("inReplyTo").is_some())
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn create_spawn_send_ask_broadcast() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            ("bob", r#"echo "bob:$(cat)""#),
            ("carol", "tr a-z A-Z"),
            ("dave", r#"printf 'dave:%s' "$TEAMCTL_MESSAGE""#),
        ],
    );
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.team_dir("alpha").join("config.json")).unwrap())
            .unwrap();
    let members = cfg["members"].as_array().unwrap();
    assert_eq!(members.len(), 4);
    for m in &members[1..] {
        assert_eq!(m["backendType"], "process");
        assert!(m["pid"].as_u64().unwrap() > 0);
        assert_eq!(
            m["agentId"],
            format!("{}@alpha", m["name"].as_str().unwrap())
        );
    }

    // ask: the reply to that message is printed.
    assert_eq!(
        env.ok(&["ask", "bob", "hello", "--timeout", "20"]).trim(),
        "bob:hello"
    );
    assert_eq!(
        env.ok(&["ask", "carol", "shout", "--timeout", "20"]).trim(),
        "SHOUT"
    );
    assert_eq!(
        env.ok(&["ask", "dave", "via env", "--timeout", "20"])
            .trim(),
        "dave:via env"
    );

    // send from stdin.
    env.ok_stdin(&["send", "bob"], "from stdin\n");
    wait_until("bob's reply to stdin text", T, || {
        replies_to_lead(&env, "bob")
            .iter()
            .any(|t| t.contains("bob:from stdin"))
    });

    // Broadcast reaches everyone but the sender.
    env.ok(&["send", "*", "all hands"]);
    wait_until("three replies to the broadcast", T, || {
        ["bob", "carol", "dave"].iter().all(|n| {
            replies_to_lead(&env, n)
                .iter()
                .any(|t| t.to_lowercase().contains("all hands"))
        })
    });
    assert!(
        !env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["text"] == "all hands"),
        "the sender got its own broadcast"
    );
    env.ok(&["wait", "bob", "carol", "dave", "--timeout", "20"]);
    for n in ["bob", "carol", "dave"] {
        assert_eq!(env.member_status(n), "idle");
    }
}

/// New-user QA 43: the reply `ask` printed stayed unread in the leader's `inbox` and `status`.
/// Mail come before it keeps it unread (the leader's cursor is one place): nothing is skipped.
#[test]
fn a_reply_ask_printed_is_read_unless_mail_came_before_it() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", r#"echo "bob:$(cat)""#)]);
    let unread_of_lead = |env: &TestEnv| {
        let v: serde_json::Value = serde_json::from_str(&env.ok(&["status", "--json"])).unwrap();
        v["members"][0]["unread"].as_u64().unwrap()
            - v["members"][0]["unreadIdle"].as_u64().unwrap()
    };
    assert_eq!(
        env.ok(&["ask", "bob", "one", "--timeout", "20"]).trim(),
        "bob:one"
    );
    assert_eq!(unread_of_lead(&env), 0);
    let out = env.run(&["inbox"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no unread messages for team-lead"),
        "{out:?}"
    );
    // A message to the leader before the next reply: both stay unread, in order.
    env.ok(&["send", "team-lead", "a note first", "--as", "bob"]);
    assert_eq!(
        env.ok(&["ask", "bob", "two", "--timeout", "20"]).trim(),
        "bob:two"
    );
    assert_eq!(unread_of_lead(&env), 2);
    let shown = env.ok(&["inbox"]);
    let note = shown.find("a note first").expect(&shown);
    let reply = shown.find("bob:two").expect(&shown);
    assert!(note < reply && !shown.contains("bob:one"), "{shown}");
    assert_eq!(unread_of_lead(&env), 0);
    // Asks in a row: the idle notification each leaves before the next reply is no mail
    // (new-user QA 44: every reply after the first stayed unread).
    for text in ["three", "four", "five"] {
        assert_eq!(
            env.ok(&["ask", "bob", text, "--timeout", "20"]).trim(),
            format!("bob:{text}")
        );
        assert_eq!(unread_of_lead(&env), 0, "after {text}");
    }
}

#[test]
fn a_teammates_agent_messages_another_teammate() {
    let env = TestEnv::new();
    // alice forwards each message to bob with `teamctl send` (as herself, via TEAMCTL_AGENT_NAME).
    team_with(
        &env,
        &[
            (
                "alice",
                r#"if [ "$TEAMCTL_FROM" = team-lead ]; then teamctl send bob "relay: $TEAMCTL_MESSAGE" >/dev/null; else echo "alice read: $TEAMCTL_MESSAGE"; fi"#,
            ),
            ("bob", r#"echo "bob saw $TEAMCTL_FROM: $(cat)""#),
        ],
    );
    env.ok(&["send", "alice", "ping"]);
    wait_until("bob's reply reaching alice", T, || {
        env.inbox("alpha", "alice").iter().any(|m| {
            m["from"] == "bob"
                && m["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("bob saw alice: relay: ping")
        })
    });
    // The message to bob came from alice, not from the leader.
    assert!(
        env.inbox("alpha", "bob")
            .iter()
            .any(|m| m["from"] == "alice")
    );
    // alice's turn on bob's reply prints output, which must not bounce back to bob as an
    // automatic reply (no ping-pong between agents).
    env.ok(&["wait", "alice", "bob", "--timeout", "20"]);
    assert_eq!(
        env.inbox("alpha", "bob").len(),
        1,
        "{:?}",
        env.inbox("alpha", "bob")
    );
}

/// Team `alpha` with `sleeper`, whose turns sleep, in the middle of a turn.
fn working_sleeper(env: &TestEnv) {
    team_with(env, &[("sleeper", "sleep 1000")]);
    env.ok(&["send", "sleeper", "sleep please"]);
    wait_until("the turn to start", T, || {
        env.member_status("sleeper") == "working"
    });
}

#[test]
fn interrupt_cancels_only_the_turn() {
    let env = TestEnv::new();
    working_sleeper(&env);
    let turn_pids = |env: &TestEnv| {
        env.processes()
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .unwrap_or_default()
                    .starts_with("sleep\0")
            })
            .count()
    };
    wait_until("the agent's sleep to start", T, || turn_pids(&env) == 1);
    env.ok(&["interrupt", "sleeper"]);
    wait_until("idle after the interrupt", T, || {
        env.member_status("sleeper") == "idle"
    });
    wait_until("the sleep to be gone", T, || turn_pids(&env) == 0);
    wait_until("an interrupted idle notification", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["type"] == "idle_notification" && m["idleReason"] == "interrupted")
    });
    // The teammate stays; with no turn running there is nothing to interrupt (said, exit 0,
    // as `kill` of a stopped teammate).
    assert_eq!(env.member_status("sleeper"), "idle");
    let out = env.ok(&["interrupt", "sleeper"]);
    assert!(out.contains("no turn running"), "{out}");
    // Nor with no worker at all: said as that (new-user QA: a dead one "has no turn running").
    env.ok(&["kill", "sleeper"]);
    assert_eq!(
        env.ok(&["interrupt", "sleeper"]).trim(),
        "sleeper is not running (stopped or dead); nothing to interrupt"
    );
}

/// `status` UNREAD: the message a turn is handling is not unread (its cursor moves past it
/// when the turn is done); one that arrives meanwhile is.
#[test]
fn unread_leaves_out_the_message_being_handled() {
    let env = TestEnv::new();
    working_sleeper(&env);
    assert_eq!(env.member("sleeper")["unread"], 0);
    env.ok(&["send", "sleeper", "and then this"]);
    assert_eq!(env.member("sleeper")["unread"], 1);
    env.ok(&["kill", "sleeper"]);
}

/// `kill a b`: every teammate named ends; a name that is no teammate among them ends none
/// (exit 2, all still running). `--json` gives a list for several, an object for one.
#[test]
fn kill_takes_several_teammates_and_ends_none_when_one_is_no_teammate() {
    let env = TestEnv::new();
    team_with(&env, &[("a", "cat"), ("b", "cat"), ("c", "cat")]);
    for name in ["a", "b", "c"] {
        wait_until(&format!("{name} idle"), T, || {
            env.member_status(name) == "idle"
        });
    }
    let err = env.fails(&["kill", "a", "nobody", "b"], 2);
    assert!(err.contains("nobody"), "{err}");
    for name in ["a", "b", "c"] {
        assert_eq!(env.member_status(name), "idle", "{name}: {err}");
    }
    let out = env.ok(&["kill", "a", "b", "a"]);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["a killed", "b killed"],
        "{out}"
    );
    for name in ["a", "b"] {
        assert_eq!(env.member_status(name), "stopped", "{name}");
    }
    assert_eq!(env.member_status("c"), "idle");
    let both: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "kill", "b", "c"])).unwrap();
    assert_eq!(both[0]["name"], "b");
    assert_eq!(both[0]["killed"], false, "{both}");
    assert_eq!(both[1]["name"], "c");
    assert_eq!(both[1]["killed"], true, "{both}");
    let one: serde_json::Value = serde_json::from_str(&env.ok(&["--json", "kill", "a"])).unwrap();
    assert_eq!(one["name"], "a", "{one}");
    assert!(env.processes().is_empty(), "{:?}", env.processes());

    // And `resume a b` (new-user QA: refused, "unexpected argument"): a name that is no
    // teammate resumes none (exit 2).
    let err = env.fails(&["resume", "a", "nobody"], 2);
    assert!(err.contains("nobody"), "{err}");
    assert_eq!(env.member_status("a"), "stopped");
    let out = env.ok(&["resume", "c", "a", "c"]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("a resumed") && lines[1].starts_with("c resumed"),
        "{out}"
    );
    assert_eq!(env.member_status("b"), "stopped");
    env.ok(&["kill", "a", "c"]);
}

/// `interrupt a b` and `shutdown a b` take several teammates as `kill` does (new-user QA: one
/// name only): a name that is no teammate among them acts on none (exit 2); each named is
/// acted on, the others left as they were. `interrupt --json` of several is a list.
#[test]
fn interrupt_and_shutdown_take_several_teammates() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            ("a", "sleep 1000"),
            ("b", "sleep 1000"),
            ("c", "sleep 1000"),
        ],
    );
    for name in ["a", "b", "c"] {
        env.ok(&["send", name, "sleep please"]);
    }
    for name in ["a", "b", "c"] {
        wait_until(&format!("{name} working"), T, || {
            env.member_status(name) == "working"
        });
    }
    let err = env.fails(&["interrupt", "a", "nobody"], 2);
    assert!(err.contains("nobody"), "{err}");
    assert_eq!(env.member_status("a"), "working", "{err}");
    let cut: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "interrupt", "b", "a", "b"])).unwrap();
    let named: Vec<&str> = cut
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["b", "a"], "{cut}");
    assert!(
        cut.as_array()
            .unwrap()
            .iter()
            .all(|o| o["summary"] == "sleep please"),
        "{cut}"
    );
    for name in ["a", "b"] {
        wait_until(&format!("{name} idle"), T, || {
            env.member_status(name) == "idle"
        });
    }
    assert_eq!(env.member_status("c"), "working");
    let out = env.ok(&["interrupt", "a", "c"]);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "a has no turn running; nothing to interrupt",
            "interrupted c's turn: sleep please"
        ],
        "{out}"
    );

    let err = env.fails(&["shutdown", "a", "nobody"], 2);
    assert!(err.contains("nobody"), "{err}");
    assert_eq!(env.member_status("a"), "idle", "{err}");
    let out = env.ok(&["shutdown", "a", "b", "--timeout", "20"]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["a stopped", "b stopped"], "{out}");
    wait_until("c idle", T, || env.member_status("c") == "idle");
    env.ok(&["kill", "c"]);
    assert!(env.processes().is_empty(), "{:?}", env.processes());
}

#[test]
fn kill_shows_stopped_never_idle_and_send_resumes() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", r#"echo "bob:$(cat)""#)]);
    env.ok(&["ask", "bob", "one", "--timeout", "20"]);
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    env.ok(&["kill", "bob"]);
    let st = env.member_status("bob");
    assert!(st == "stopped" || st == "dead", "{st}");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists() || zombie(pid));
    assert!(env.processes().is_empty(), "{:?}", env.processes());
    // Sending resumes it, and the message is handled.
    assert_eq!(
        env.ok(&["ask", "bob", "two", "--timeout", "20"]).trim(),
        "bob:two"
    );
    // The reply is sent before the worker records itself idle: wait for it.
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
}

/// bob's worker killed (SIGKILL) behind teamctl's back, once bob is dead: its pid, as it was.
fn kill_bobs_worker(env: &TestEnv) -> u64 {
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    wait_until("bob dead", T, || env.member_status("bob") == "dead");
    pid
}

#[test]
fn a_worker_killed_behind_our_back_is_dead_not_idle() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    let pid = kill_bobs_worker(&env);
    // Its pid names nothing now: not shown, as for a stopped teammate (new-user QA: the dead
    // worker's pid was shown).
    let bob = env.member("bob");
    assert!(bob["pid"].is_null(), "{bob}");
    let table = env.ok(&["status"]);
    assert!(
        !table.split_whitespace().any(|w| w == pid.to_string()),
        "{table}"
    );
    // Nothing of it ran to kill: `kill` marks it stopped and says so (attacker QA: "bob
    // killed", `"killed": true`).
    let said: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "kill", "bob", "bob"])).unwrap();
    assert_eq!(said[0]["killed"], false, "{said}");
    assert_eq!(said.as_array().map(Vec::len), Some(1), "{said}");
    assert_eq!(env.member_status("bob"), "stopped");
    env.ok(&["resume", "bob"]);
    kill_bobs_worker(&env);
    assert_eq!(
        env.ok(&["kill", "bob"]).trim(),
        "bob was not running (dead); marked stopped"
    );
}

/// A worker stopped by a signal (`kill -STOP`; outside tmux, which continues its panes'
/// programs itself) runs but reads no mail: it showed `idle` with the mail piling up (QA).
/// Now, once mail waits for it, `status` says it is paused and how to go on; continued, it
/// answers what waited.
#[test]
fn a_worker_stopped_by_a_signal_shows_paused_once_mail_waits() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    let signal = |sig: &str| kill(sig, pid);
    signal("-STOP");
    let paused = || {
        let said: serde_json::Value = serde_json::from_str(&env.ok(&["--json", "status"])).unwrap();
        said["members"][1]["paused"].as_bool()
    };
    // Nothing waits for it: idle is what it is.
    wait_until("bob's worker stopped", T, || stopped(pid));
    assert_eq!(paused(), None);
    // The send says so, and how to go on (attacker QA 41: it said only "sent to bob").
    let out = env.run(&["send", "bob", "are you there"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "bob's worker (pid {pid}) is stopped by a signal (SIGSTOP?); the message waits in its inbox until `kill -CONT {pid}`"
        )),
        "{err}"
    );
    let said: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "send", "bob", "and now?"])).unwrap();
    assert_eq!(said["paused"], serde_json::json!(["bob"]), "{said}");
    assert_eq!(paused(), Some(true));
    // doctor names the pause and the way on, not a kill and resume (that would end the turn);
    // --fix leaves it as it is.
    for args in [&["doctor"][..], &["doctor", "--fix"]] {
        let out = String::from_utf8_lossy(&env.run(args).stdout).into_owned();
        assert!(
            out.contains(&format!(
                "bob@alpha is paused: its worker (pid {pid}) is stopped by a signal (SIGSTOP?) and reads no mail (2 unread messages wait)"
            )) && out.contains(&format!("`kill -CONT {pid}` lets it go on")),
            "{args:?}: {out}"
        );
    }
    let table = env.ok(&["status"]);
    assert!(table.contains("idle (paused)"), "{table}");
    assert!(
        table.contains(&format!(
            "bob: its worker (pid {pid}) is stopped by a signal (SIGSTOP?): it reads no mail until `kill -CONT {pid}`"
        )),
        "{table}"
    );
    signal("-CONT");
    wait_until("bob answered what waited", T, || {
        replies_to_lead(&env, "bob") == ["are you there", "and now?"]
    });
    assert_eq!(paused(), None);
}

/// A teammate paused in its turn (its worker stopped by a signal, the turn's process still
/// running): `doctor` counts the mail that waits as `status` does, not the turn's message; `wait`
/// and `ask` say why they time out (`wait --json`: `paused`); `shutdown` says the request waits
/// for a `kill -CONT`, not "still in a turn?" (`--json`: `paused`); continued, it stops
/// (new-user QA 42).
#[test]
fn a_paused_teammate_is_named_so_by_doctor_wait_ask_and_shutdown() {
    let env = TestEnv::new();
    // The first turn lasts (until interrupted); once the flag is there, turns are quick.
    let flag = env.work.path().join("quick");
    let exec = format!("cat; test -e '{}' || sleep 60", flag.display());
    team_with(&env, &[("bob", &exec)]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    env.ok(&["send", "bob", "one"]);
    wait_until("bob in its turn", T, || {
        env.member_status("bob") == "working"
    });
    let stop = |sig: &str| kill(sig, pid);
    stop("-STOP");
    wait_until("bob's worker stopped", T, || stopped(pid));
    env.ok(&["send", "bob", "two"]);
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!(
            "bob@alpha is paused: its worker (pid {pid}) is stopped by a signal (SIGSTOP?) and reads no mail (1 unread message waits)"
        )),
        "{doctor}"
    );
    let out = env.run(&["--json", "wait", "bob", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["members"][0]["paused"], true, "{said}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "bob's worker (pid {pid}) is stopped by a signal (SIGSTOP?); its mail waits in its inbox until `kill -CONT {pid}`"
        )),
        "{err}"
    );
    let err = env.fails(&["ask", "bob", "three?", "--timeout", "1"], 1);
    assert!(
        err.contains(&format!(
            "no reply from bob within 1 s; its worker (pid {pid}) is stopped by a signal (SIGSTOP?): it answers once `kill -CONT {pid}`"
        )),
        "{err}"
    );
    let out = env.run(&["--json", "shutdown", "bob", "--timeout", "3"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["paused"], serde_json::json!(["bob"]), "{said}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "no shutdown response from bob: its worker (pid {pid}) is stopped by a signal (SIGSTOP?); the request stands and it stops once it answers, after `kill -CONT {pid}`"
        )) && !err.contains("still in a turn?"),
        "{err}"
    );
    // interrupt signals the turn and says at once that it ends once continued (it waited ten
    // seconds and said the turn did not end).
    let err = env.fails(&["interrupt", "bob"], 1);
    assert!(
        err.contains(&format!(
            "bob's worker (pid {pid}) is stopped by a signal (SIGSTOP?): its turn ends once `kill -CONT {pid}`"
        )),
        "{err}"
    );
    std::fs::write(&flag, b"").unwrap();
    stop("-CONT");
    wait_until("bob stopped once continued", T, || {
        env.member_status("bob") == "stopped"
    });
}

/// `kill SIG PID` (`-- -PGID` for a negative one), which must succeed.
fn kill(sig: &str, pid: impl std::fmt::Display) {
    assert!(
        std::process::Command::new("kill")
            .args([sig, "--", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// Whether process `pid` is stopped by a signal (state `T` in its stat).
fn stopped(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('T'))
    })
}

/// A process of a teammate's turn (not its worker) stopped by a signal: the turn waits, and
/// `status`, `doctor`, `wait` and `ask` say so and how to go on (new-user QA 42: `status`
/// said `working` and nothing else, doctor nothing). The stopped process is a child in the
/// turn's group, not its leader: the shell that waits for it runs.
#[test]
fn a_turn_stopped_by_a_signal_is_named_paused() {
    let env = TestEnv::new();
    let mark = env.work.path().join("sleeping");
    let exec = format!(
        "cat >/dev/null; sleep 120 & echo $! > '{0}.tmp' && mv '{0}.tmp' '{0}'; wait",
        mark.display()
    );
    team_with(&env, &[("bob", &exec)]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    env.ok(&["send", "bob", "one"]);
    wait_until("bob's turn sleeping", T, || mark.exists());
    let sleeper: u64 = std::fs::read_to_string(&mark)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let group: i64 = std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
        .unwrap()
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    let status = env.ok(&["status"]);
    assert!(!status.contains("paused"), "{status}");
    kill("-STOP", sleeper);
    wait_until("bob's turn stopped", T, || stopped(sleeper));
    let status = env.ok(&["status"]);
    assert!(status.contains("working (paused)"), "{status}");
    assert!(
        status.contains(&format!(
            "bob: its turn's process {sleeper} is stopped by a signal (SIGSTOP?), so the turn may wait for it: `kill -CONT {sleeper}` continues it (`kill -CONT -- -{group}`: every process of the turn)"
        )),
        "{status}"
    );
    assert_eq!(
        env.member("bob")["turnPaused"],
        serde_json::json!({"pid": sleeper, "group": group}),
        "{status}"
    );
    env.ok(&["send", "bob", "two"]);
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!(
            "bob@alpha's turn may be paused: its process {sleeper} is stopped by a signal (SIGSTOP?) (1 unread message waits)"
        )),
        "{doctor}"
    );
    let out = env.run(&["--json", "wait", "bob", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["members"][0]["paused"], true, "{said}");
    let words = format!(
        "bob's turn may be paused: its process {sleeper} is stopped by a signal (SIGSTOP?); `kill -CONT {sleeper}` continues it"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&words),
        "{out:?}"
    );
    let err = env.fails(&["ask", "bob", "three?", "--timeout", "1"], 1);
    assert!(err.contains(&words), "{err}");
    let out = env.run(&["--json", "shutdown", "bob", "--timeout", "3"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["paused"], serde_json::json!(["bob"]), "{said}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("no shutdown response from bob: {words}"))
            && err.contains("the request stands and it stops once that turn ends")
            && !err.contains("still in a turn?"),
        "{err}"
    );
    // Continued, the turn goes on and is no longer said to be paused; ended, bob answers the
    // shutdown request that stood. The whole group stopped (`kill -STOP -- -G`) is continued
    // as said, at once (new-user QA 43: one pid at a time).
    kill("-STOP", -group);
    wait_until("bob's turn group stopped", T, || {
        stopped(sleeper) && env.member("bob")["turnPaused"]["pid"] != sleeper
    });
    kill("-CONT", -group);
    wait_until("bob's turn running again", T, || !stopped(sleeper));
    let status = env.ok(&["status"]);
    assert!(
        !status.contains("paused") && status.contains("shutdown_pending"),
        "{status}"
    );
    env.ok(&["interrupt", "bob"]);
    wait_until("bob stopped once its turn ended", T, || {
        env.member_status("bob") == "stopped"
    });
}

fn zombie(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

#[test]
fn failing_command_sends_a_notice_and_a_failed_idle() {
    let env = TestEnv::new();
    team_with(&env, &[("bad", "echo oops >&2; exit 3")]);
    // The notice is the reply; `ask` prints it on stderr and exits 1 (see tests/it/user.rs).
    let out = env.fails(&["ask", "bad", "try", "--timeout", "20"], 1);
    assert!(
        out.contains("failed") && out.contains("exit status 3") && out.contains("oops"),
        "{out}"
    );
    wait_until("a failed idle notification", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["type"] == "idle_notification" && m["idleReason"] == "failed")
    });
}

#[test]
fn one_idle_notification_per_busy_to_idle_edge() {
    let env = TestEnv::new();
    // Each turn waits for a gate the test opens only once all five messages are queued, so
    // the worker never runs out of mail between them, however slowly the sends go.
    let gate = env.work.path().join("gate");
    let exec = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; cat",
        gate.display()
    );
    team_with(&env, &[("slow", &exec)]);
    for i in 0..5 {
        env.ok(&["send", "slow", &format!("m{i}")]);
    }
    std::fs::write(&gate, "").unwrap();
    env.ok(&["wait", "slow", "--timeout", "30"]);
    let lead = env.inbox("alpha", "team-lead");
    let replies = lead.iter().filter(|m| m["type"] == "message").count();
    let idles = lead
        .iter()
        .filter(|m| m["type"] == "idle_notification")
        .count();
    assert_eq!(replies, 5);
    assert_eq!(idles, 1, "{idles} idle notifications for 5 queued messages");
}

/// The leader's inbox cannot be written when a turn ends (here the turn itself swaps it for a
/// link, which the store never follows): the worker says so and lives on, and the idle
/// notification goes out at the next idle edge. Before, the failed notification ended the
/// worker, left shown as working for ever (CI: the inboxes directory swapped for a link just
/// after a reply).
#[test]
fn an_idle_notice_that_cannot_be_written_does_not_end_the_worker() {
    let env = TestEnv::new();
    let away = env.work.path().join("away");
    let once = env.work.path().join("once");
    let exec = format!(
        "[ -e '{once}' ] || {{ touch '{once}'; d=\"$TEAMCTL_HOME/teams/alpha/inboxes/team-lead\"; mkdir -p \"$d\"; mv \"$d\" '{away}' && ln -s '{away}' \"$d\"; }}",
        once = once.display(),
        away = away.display()
    );
    team_with(&env, &[("bob", &exec)]);
    env.ok(&["send", "bob", "m1"]);
    let log = env.team_dir("alpha").join("logs/bob.log");
    let said = |what: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(what)
    };
    wait_until("bob to say it could not tell the leader", T, || {
        said("could not tell team-lead") || said("teamctl: ")
    });
    assert!(
        said("could not tell team-lead"),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let inbox = env.team_dir("alpha").join("inboxes/team-lead");
    std::fs::remove_file(&inbox).unwrap();
    std::fs::rename(&away, &inbox).unwrap();
    env.ok(&["send", "bob", "m2"]);
    wait_until("bob's idle notification", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["type"] == "idle_notification" && m["from"] == "bob")
    });
    assert_eq!(env.member_status("bob"), "idle");
}

#[test]
fn max_turns_stops_and_tells_the_leader() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat",
        "--max-turns",
        "2",
    ]);
    // Two messages: a third sent after the stop would (rightly) resume bob.
    for i in 0..2 {
        env.ok(&["send", "bob", &format!("m{i}")]);
    }
    wait_until("bob stopped", T, || env.member_status("bob") == "stopped");
    assert!(
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| { m["text"].as_str().unwrap_or("").contains("--max-turns 2") })
    );
}

#[test]
fn turn_timeout_interrupts_a_long_turn() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "sleep 1000",
        "--turn-timeout",
        "1",
    ]);
    let out = env.fails(&["ask", "bob", "go", "--timeout", "20"], 1);
    assert!(out.contains("timed out"), "{out}");
}

#[test]
fn inbox_shows_unread_then_marks_read() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    env.ok(&["send", "--as", "bob", "team-lead", "note one"]);
    assert!(env.ok(&["inbox", "--peek"]).contains("note one"));
    assert!(env.ok(&["inbox"]).contains("note one"));
    assert!(!env.ok(&["inbox"]).contains("note one"));
    assert!(env.ok(&["inbox", "--all"]).contains("note one"));
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "inbox", "--all"])).unwrap();
    assert_eq!(json[0]["text"], "note one");
    // Written message by message as read (attacker QA 45: a backlog was gathered whole),
    // the JSON array comes out as one printed whole would.
    env.ok(&["send", "--as", "bob", "team-lead", "note\ntwo"]);
    let text = env.ok(&["--json", "inbox", "--all", "--type", "message"]);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2, "{text}");
    assert_eq!(text, serde_json::to_string_pretty(&json).unwrap() + "\n");
    env.ok(&["inbox"]);
    assert_eq!(env.ok(&["--json", "inbox"]), "[]\n");
}

#[test]
fn structured_messages_are_checked() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    env.ok(&[
        "send",
        "--as",
        "bob",
        "team-lead",
        "--structured",
        r#"{"type":"plan_approval_request","requestId":"p1","plan":"do it"}"#,
    ]);
    let lead = env.inbox("alpha", "team-lead");
    assert!(
        lead.iter()
            .any(|m| m["type"] == "plan_approval_request" && m["from"] == "bob")
    );
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let big = "x".repeat(1024 * 1024 + 1);
    let cases: Vec<Vec<&str>> = vec![
        vec!["create", "../escape"],
        vec!["create", "--", "-bad"],
        vec!["spawn", "a/b", "--exec", "cat"],
        vec!["spawn", "team-lead", "--exec", "cat"],
        vec!["spawn", "x:y", "--exec", "cat"],
        vec!["spawn", ".hidden", "--exec", "cat"],
        vec!["spawn", "bob", "--exec", "cat"],
        vec!["spawn", "new", "--cwd", "/no/such/dir", "--exec", "cat"],
        vec!["--team", "nosuch", "send", "bob", "hi"],
        vec!["--team", "../x", "status"],
        vec!["send", "nobody", "hi"],
        vec!["send", "a@b", "hi"],
        vec!["send", "bob", ""],
        vec!["--as", "ghost", "send", "bob", "hi"],
        vec!["send", "bob", "--structured", "{not json"],
        vec!["send", "bob", "--structured", r#"{"type":"nope"}"#],
        vec![
            "send",
            "*",
            "--structured",
            r#"{"type":"shutdown_request","requestId":"r"}"#,
        ],
        vec![
            "send",
            "bob",
            "--structured",
            r#"{"type":"shutdown_response","requestId":"r","approve":true}"#,
        ],
        vec![
            "send",
            "--as",
            "bob",
            "team-lead",
            "--structured",
            r#"{"type":"shutdown_response","requestId":"r","approve":"no"}"#,
        ],
        vec![
            "send",
            "--as",
            "bob",
            "team-lead",
            "--structured",
            r#"{"type":"shutdown_response","requestId":"r","approve":"maybe","reason":"x"}"#,
        ],
        vec![
            "send",
            "--as",
            "bob",
            "team-lead",
            "--structured",
            r#"{"type":"plan_approval_response","requestId":"r","approve":true}"#,
        ],
        vec!["ask", "nobody", "hi"],
        vec!["inbox", "nobody"],
        vec!["wait", "nobody"],
        vec!["kill", "nobody"],
        vec!["interrupt", "nobody"],
        vec!["shutdown", "nobody"],
        vec!["resume", "nobody"],
        vec!["--as", "bob", "spawn", "x", "--exec", "cat"],
        vec!["--as", "bob", "interrupt", "bob"],
        vec!["--color", "purple", "status"],
    ];
    let before = snapshot(env.home_path());
    for args in &cases {
        let err = env.fails(args, 2);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(!lines.is_empty(), "{args:?}: no error message");
        if args[0] != "--color" && !args.contains(&"--cwd") {
            assert_eq!(lines.len(), 1, "{args:?}: more than one line: {err}");
        }
        assert!(
            lines[0].starts_with("teamctl: ") || lines[0].starts_with("error:"),
            "{args:?}: {err}"
        );
        let after = snapshot(env.home_path());
        assert!(before == after, "{args:?} changed the home directory");
    }
    // An oversized message (on stdin: too big for argv) and an empty one.
    for input in [big.as_str(), ""] {
        let out = env.run_stdin(&["send", "bob"], input);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(before == snapshot(env.home_path()));
    }
    assert!(
        String::from_utf8_lossy(&env.run_stdin(&["send", "bob"], &big).stderr).contains("1 MiB")
    );
}

#[test]
fn state_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    env.ok(&["ask", "bob", "hi", "--timeout", "20"]);
    for (path, _) in snapshot(env.home_path()) {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        if path.is_dir() {
            assert_eq!(mode, 0o700, "{}", path.display());
        } else {
            assert_eq!(mode, 0o600, "{}", path.display());
        }
    }
}

#[test]
fn one_team_at_a_time_and_taken_names_get_a_suffix() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let err = env.fails(&["create", "beta"], 2);
    assert!(err.contains("alpha") && err.contains("delete"), "{err}");
    env.ok(&["delete"]);
    // A second leader (another home pointer) sees the name taken.
    std::fs::create_dir_all(env.team_dir("gamma")).unwrap();
    std::fs::write(env.team_dir("gamma").join("config.json"), "{}").unwrap();
    let name = env.ok(&["create", "gamma"]);
    assert_eq!(name.trim(), "gamma-2");
}
