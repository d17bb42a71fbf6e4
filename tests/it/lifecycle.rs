//! Lifecycle end to end: the shutdown handoff (cycles, long turns, refusals, --no-wait),
//! resume after a crash, plan approval, worktrees and `doctor`. Mostly on the process backend;
//! the tmux variants run on a private tmux server.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::common::{TestEnv, wait_until};
use serde_json::Value;

const LONG: Duration = Duration::from_secs(20);

fn create(env: &TestEnv, team: &str) {
    let out = env.ok(&["create", team]);
    assert_eq!(out.trim(), team);
}

fn spawn(env: &TestEnv, name: &str, extra: &[&str]) {
    let mut args = vec!["spawn", name, "--backend", "process"];
    args.extend_from_slice(extra);
    env.ok(&args);
}

/// Messages in the leader's inbox of `team` from `from` of type `kind`.
fn leader_mail(env: &TestEnv, team: &str, from: &str, kind: &str) -> Vec<Value> {
    env.inbox(team, "team-lead")
        .into_iter()
        .filter(|m| m["from"] == from && m["type"] == kind)
        .collect()
}

fn texts(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .map(|m| m["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Ids of the plain messages in `member`'s inbox, in order.
fn message_ids(env: &TestEnv, team: &str, member: &str) -> Vec<String> {
    env.inbox(team, member)
        .into_iter()
        .filter(|m| m["type"] == "message")
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn worker_pid(env: &TestEnv, name: &str) -> u32 {
    env.member(name)["pid"].as_u64().expect("a pid") as u32
}

fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
}

/// Panes on the private server that carry a teamctl tag.
fn tagged_panes(env: &TestEnv) -> usize {
    let out = env.tmux(&["list-panes", "-a", "-F", "#{@teamctl-agent}"]);
    if !out.status.success() {
        return 0; // no server: no panes
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

fn cycles(env: &TestEnv, team: &str, backend: &str) {
    create(env, team);
    for i in 0..50 {
        let name = format!("w{i}");
        env.ok(&["spawn", &name, "--backend", backend, "--exec", "cat"]);
        if i % 10 == 0 {
            // Now and then a real turn, so agent processes exist too.
            env.ok(&["send", &name, &format!("ping {i}")]);
            wait_until("the reply", LONG, || {
                texts(&leader_mail(env, team, &name, "message"))
                    .iter()
                    .any(|t| t.contains(&format!("ping {i}")))
            });
        }
        let out = env.run(&["shutdown", &name]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "cycle {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // SPEC 7: after shutdown returns 0, nothing of that teammate is left.
        let left = env.processes();
        assert!(
            left.is_empty(),
            "cycle {i}: {}",
            crate::common::describe(&left)
        );
        if backend == "tmux" {
            assert_eq!(tagged_panes(env), 0, "cycle {i}");
        }
        assert_eq!(env.member_status(&name), "stopped");
    }
}

#[test]
fn fifty_spawn_shutdown_cycles_leave_no_process() {
    let env = TestEnv::new();
    cycles(&env, "lc-cycles", "process");
}

#[test]
fn fifty_spawn_shutdown_cycles_leave_no_pane() {
    let env = TestEnv::with_tmux();
    cycles(&env, "lc-cycles-tmux", "tmux");
    assert_eq!(env.processes(), Vec::<u32>::new());
}

#[test]
fn a_long_turn_is_finished_and_answered_before_the_teammate_stops() {
    let env = TestEnv::new();
    create(&env, "lc-long");
    spawn(
        &env,
        "bob",
        &["--exec", "sleep 2; echo done: $TEAMCTL_MESSAGE"],
    );
    env.ok(&["send", "bob", "first"]);
    env.ok(&["send", "bob", "second"]);
    env.ok(&["send", "bob", "third"]);
    wait_until("bob working", LONG, || {
        env.member_status("bob") == "working"
    });
    let out = env.run(&["shutdown", "bob"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Only after the turn was answered did shutdown return.
    let lead = env.inbox("lc-long", "team-lead");
    let reply = lead
        .iter()
        .position(|m| m["type"] == "message" && m["text"] == "done: first\n")
        .expect("the reply to the running turn");
    let response = lead
        .iter()
        .position(|m| m["type"] == "shutdown_response")
        .expect("the shutdown response");
    assert!(reply < response, "{lead:#?}");
    assert_eq!(lead[response]["approve"], true);
    assert_eq!(lead[response]["backendType"], "process");
    // The queued mail stays on disk, unread.
    assert!(
        !texts(&lead).iter().any(|t| t.contains("second")),
        "{lead:#?}"
    );
    let bob = env.member("bob");
    assert_eq!(bob["status"], "stopped");
    assert_eq!(bob["unread"], 2);
    assert_eq!(env.processes(), Vec::<u32>::new());
    // The termination notice is in the leader's inbox.
    assert!(
        texts(&leader_mail(&env, "lc-long", "bob", "message"))
            .iter()
            .any(|t| t.contains("bob stopped")),
        "{lead:#?}"
    );
    // resume delivers the unread mail.
    env.ok(&["resume", "bob"]);
    wait_until("the queued mail handled", LONG, || {
        let t = texts(&leader_mail(&env, "lc-long", "bob", "message"));
        t.iter().any(|t| t == "done: second\n") && t.iter().any(|t| t == "done: third\n")
    });
    env.ok(&["shutdown", "bob"]);
}

/// An `--on-shutdown` command that prints a great deal: its refusal still reaches the leader
/// at once with the start of its output as the reason (50 MB of it were read into memory,
/// logged whole and made the refusal too big to send, QA), and one that prints as much and
/// exits 0 still approves.
#[test]
fn a_shutdown_command_that_prints_megabytes_refuses_or_approves_as_it_exits() {
    let env = TestEnv::new();
    create(&env, "lc-loud");
    let loud = "head -c 3000000 /dev/zero | tr '\\0' x";
    spawn(
        &env,
        "bob",
        &["--exec", "cat", "--on-shutdown", &format!("{loud}; exit 1")],
    );
    spawn(
        &env,
        "amy",
        &["--exec", "cat", "--on-shutdown", &format!("{loud}; exit 0")],
    );
    let err = env.fails(&["shutdown", "bob", "--timeout", "20"], 1);
    assert!(err.contains("xxxx"), "{err}");
    assert!(err.len() < 16 * 1024, "{} bytes", err.len());
    let log = std::fs::read(env.team_dir("lc-loud").join("logs").join("bob.log")).unwrap();
    assert!(log.len() < 64 * 1024, "bob's log: {} bytes", log.len());
    env.ok(&["shutdown", "amy", "--timeout", "20"]);
    assert_eq!(env.member_status("amy"), "stopped");
    env.ok(&["kill", "bob"]);
}

#[test]
fn a_refusing_teammate_keeps_running_and_the_leader_sees_why() {
    let env = TestEnv::new();
    create(&env, "lc-refuse");
    spawn(
        &env,
        "bob",
        &["--exec", "cat", "--on-shutdown", "echo busy; exit 1"],
    );
    spawn(&env, "amy", &["--exec", "cat"]);
    let pid = worker_pid(&env, "bob");
    let err = env.fails(&["shutdown", "bob", "--timeout", "20"], 1);
    assert!(err.contains("busy"), "{err}");
    assert!(alive(pid));
    wait_until("bob idle again", LONG, || {
        env.member_status("bob") == "idle"
    });
    // Still working: a message is answered.
    env.ok(&["send", "bob", "still there?"]);
    wait_until("bob's reply", LONG, || {
        texts(&leader_mail(&env, "lc-refuse", "bob", "message"))
            .iter()
            .any(|t| t.contains("still there?"))
    });
    // --all: amy stops, bob refuses; exit 1 naming bob's reason.
    let err = env.fails(&["shutdown", "--all"], 1);
    assert!(err.contains("bob") && err.contains("busy"), "{err}");
    assert_eq!(env.member_status("amy"), "stopped");
    assert!(alive(pid));
    // delete refuses while a teammate refuses; the team is kept.
    let err = env.fails(&["delete", "--timeout", "20"], 1);
    assert!(err.contains("busy"), "{err}");
    // It says what was done and the way on: a refusal is not helped by a longer wait
    // (new-user QA 37: it offered one).
    assert!(
        err.contains("`teamctl delete --force` ends the rest without asking")
            && !err.contains("--timeout SECS"),
        "{err}"
    );
    // amy was stopped before: nobody agreed this time, and it does not say so (QA 39).
    assert!(!err.contains("agreed"), "{err}");
    assert!(env.team_dir("lc-refuse").join("config.json").is_file());
    assert!(alive(pid));
    // With --json, stdout says the team is kept and who refused (it printed nothing);
    // amy, running again, agrees: stderr names her.
    env.ok(&["resume", "amy"]);
    let out = env.run(&["--json", "delete", "--timeout", "20"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let kept: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(kept["deleted"], serde_json::Value::Null, "{kept}");
    assert_eq!(kept["team"], "lc-refuse", "{kept}");
    assert_eq!(kept["refused"][0]["name"], "bob", "{kept}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("team lc-refuse is kept (amy agreed and has stopped)"),
        "{out:?}"
    );
    assert!(alive(pid));
    // --force kills without the handshake.
    env.ok(&["shutdown", "bob", "--force"]);
    assert_eq!(env.member_status("bob"), "stopped");
    assert_eq!(env.processes(), Vec::<u32>::new());
    env.ok(&["resume", "bob"]);
    env.ok(&["delete", "--force"]);
    assert!(!env.team_dir("lc-refuse").exists());
    assert_eq!(env.processes(), Vec::<u32>::new());
}

/// A `delete` kept by a refusal, one teammate dying instead of answering: `--json` lists it in
/// `died`, and stderr does not say it "ends with the team" of a team that stays (attacker QA
/// 39: `died` was emptied before the JSON was made).
#[test]
fn a_delete_kept_by_a_refusal_says_who_died_meanwhile() {
    let env = TestEnv::new();
    create(&env, "lc-kept-died");
    spawn(
        &env,
        "r",
        &["--exec", "cat", "--on-shutdown", "echo no; exit 1"],
    );
    spawn(
        &env,
        "d",
        &["--exec", "cat", "--on-shutdown", "kill -9 $PPID"],
    );
    for n in ["r", "d"] {
        wait_until(&format!("{n} idle"), LONG, || {
            env.member_status(n) == "idle"
        });
    }
    let out = env.run(&["--json", "delete", "--timeout", "20"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let kept: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(kept["died"], serde_json::json!(["d"]), "{kept}");
    assert_eq!(kept["refused"][0]["name"], "r", "{kept}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("d died before it answered; it is dead")
            && !err.contains("ends with the team"),
        "{err}"
    );
    assert!(
        err.contains("`teamctl delete --force` ends the rest"),
        "{err}"
    );
    env.ok(&["delete", "--force"]);
}

#[test]
fn a_teammate_that_never_answers_times_out_with_its_name() {
    let env = TestEnv::new();
    create(&env, "lc-silent");
    spawn(&env, "slow", &["--exec", "sleep 30"]);
    env.ok(&["send", "slow", "take your time"]);
    wait_until("slow working", LONG, || {
        env.member_status("slow") == "working"
    });
    let err = env.fails(&["shutdown", "slow", "--timeout", "1"], 1);
    assert!(err.contains("slow"), "{err}");
    assert!(!err.contains("waiting for"), "{err}");
    // A longer wait says whom it is waiting for, once, before it gives up.
    let err = env.fails(&["shutdown", "slow", "--timeout", "3"], 1);
    assert_eq!(
        err.matches("waiting for slow to answer the shutdown request")
            .count(),
        1,
        "{err}"
    );
    env.ok(&["shutdown", "slow", "--force"]);
    assert_eq!(env.processes(), Vec::<u32>::new());
}

#[test]
fn shutdown_no_wait_is_completed_by_the_next_leader_command() {
    let env = TestEnv::new();
    create(&env, "lc-nowait");
    spawn(&env, "bob", &["--exec", "cat"]);
    env.ok(&["shutdown", "bob", "--no-wait"]);
    wait_until("bob's answer", LONG, || {
        !leader_mail(&env, "lc-nowait", "bob", "shutdown_response").is_empty()
    });
    // `status` acts on it: stopped, nothing left running.
    assert_eq!(env.member_status("bob"), "stopped");
    assert_eq!(env.processes(), Vec::<u32>::new());
    assert!(
        texts(&leader_mail(&env, "lc-nowait", "bob", "message"))
            .iter()
            .any(|t| t.contains("bob stopped")),
    );
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(env.team_dir("lc-nowait").join("config.json")).unwrap(),
    )
    .unwrap();
    let bob = config["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .unwrap();
    assert_eq!(bob["status"], "stopped");
    assert!(bob.get("shutdownRequestId").is_none());
}

#[test]
fn asking_twice_then_waiting_still_stops_the_teammate() {
    let env = TestEnv::new();
    create(&env, "lc-twice");
    spawn(&env, "bob", &["--exec", "sleep 1; echo ok"]);
    env.ok(&["send", "bob", "busy for a second"]);
    wait_until("bob working", LONG, || {
        env.member_status("bob") == "working"
    });
    env.ok(&["shutdown", "bob", "--no-wait"]);
    env.ok(&["shutdown", "bob", "--no-wait"]);
    env.ok(&["shutdown", "bob", "--timeout", "20"]);
    assert_eq!(env.member_status("bob"), "stopped");
    assert_eq!(env.processes(), Vec::<u32>::new());
    let notices = texts(&leader_mail(&env, "lc-twice", "bob", "message"))
        .into_iter()
        .filter(|t| t.contains("bob stopped"))
        .count();
    assert_eq!(notices, 1);
}

#[test]
fn kill_9_mid_turn_then_resume_handles_every_message_once_more_at_most() {
    let env = TestEnv::new();
    create(&env, "lc-crash");
    let ids = env.work.path().join("ids");
    let once = env.work.path().join("once");
    let group = env.work.path().join("group");
    // The first turn records its process group (the turn's shell leads it) and sleeps.
    let exec = format!(
        "echo \"$TEAMCTL_MESSAGE_ID\" >> {ids}; if [ ! -e {once} ]; then echo $$ > {group}; touch {once}; sleep 60; fi",
        ids = ids.display(),
        once = once.display(),
        group = group.display()
    );
    spawn(&env, "bob", &["--exec", &exec]);
    env.ok(&["send", "bob", "m1"]);
    wait_until("the first turn running", LONG, || once.exists());
    env.ok(&["send", "bob", "m2"]);
    env.ok(&["send", "bob", "m3"]);
    let pid = worker_pid(&env, "bob");
    assert!(
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    wait_until("bob dead", LONG, || env.member_status("bob") == "dead");
    // The turn outlived the worker: doctor sees it as an orphaned agent process.
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        problems(&report)
            .iter()
            .any(|p| p.contains("orphaned agent process of bob@lc-crash") && p.contains("dead")),
        "{report:#}"
    );
    let pgid: i32 = std::fs::read_to_string(&group)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let group_alive = || nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_ok();
    assert!(group_alive(), "the killed worker's turn runs on");
    env.ok(&["resume", "bob"]);
    // The killed worker's turn (its own session, `sleep 60` in it) ran on; the next worker ends
    // the whole group before it reads mail, so the message is never handled twice at once.
    wait_until("the orphaned turn's group ended", LONG, || !group_alive());
    let sent = message_ids(&env, "lc-crash", "bob");
    assert_eq!(sent.len(), 3);
    wait_until("every message handled", LONG, || lines(&ids).len() >= 4);
    env.ok(&["send", "bob", "m4"]);
    wait_until("m4 handled", LONG, || lines(&ids).len() >= 5);
    env.ok(&["shutdown", "bob"]);
    let got = lines(&ids);
    let all = message_ids(&env, "lc-crash", "bob");
    let count = |id: &str| got.iter().filter(|l| *l == id).count();
    assert_eq!(
        count(&all[0]),
        2,
        "the interrupted message is handled again: {got:?}"
    );
    for id in &all[1..] {
        assert_eq!(count(id), 1, "{id}: {got:?}");
    }
    assert_eq!(got.len(), 5);
    assert_eq!(env.processes(), Vec::<u32>::new());
}

#[test]
fn tmux_kill_server_then_resume_brings_the_team_back() {
    let env = TestEnv::with_tmux();
    create(&env, "lc-tmux");
    let log = env.work.path().join("handled");
    // `block` sleeps the first time only: a turn cut short by the server's death is not
    // handled, so it runs again after `resume` (at-least-once), and must then finish.
    let exec = format!(
        "case \"$TEAMCTL_MESSAGE\" in block) if [ -e \"{dir}/blocked-$TEAMCTL_AGENT_NAME\" ]; then :; else touch \"{dir}/blocked-$TEAMCTL_AGENT_NAME\"; sleep 60; fi;; *) echo \"$TEAMCTL_MESSAGE\" >> {log};; esac",
        dir = env.work.path().display(),
        log = log.display()
    );
    for n in ["a", "b", "c"] {
        env.ok(&["spawn", n, "--backend", "tmux", "--exec", &exec]);
    }
    assert_eq!(tagged_panes(&env), 3);
    // Each one busy in a turn, with unread mail queued behind it.
    for n in ["a", "b", "c"] {
        env.ok(&["send", n, "block"]);
        wait_until("working", LONG, || env.member_status(n) == "working");
        env.ok(&["send", n, &format!("hello {n}")]);
    }
    env.tmux_ok(&["kill-server"]);
    for n in ["a", "b", "c"] {
        wait_until("gone", LONG, || {
            let s = env.member_status(n);
            s == "dead" || s == "stopped"
        });
        // The interrupted `block` and the queued hello.
        assert_eq!(env.member(n)["unread"], 2);
    }
    env.ok(&["resume"]);
    assert_eq!(tagged_panes(&env), 3);
    wait_until("every unread message handled", LONG, || {
        let l = lines(&log);
        ["a", "b", "c"]
            .iter()
            .all(|n| l.contains(&format!("hello {n}")))
    });
    for n in ["a", "b", "c"] {
        assert!(
            env.member(n)["paneId"]
                .as_str()
                .is_some_and(|p| p.starts_with('%'))
        );
    }
    env.ok(&["shutdown", "--all"]);
    assert_eq!(tagged_panes(&env), 0);
}

// ---- plan approval ----

const PLAN: &str =
    "echo \"plan for $TEAMCTL_MESSAGE round $TEAMCTL_PLAN_ROUND feedback [$TEAMCTL_FEEDBACK]\"";
const DO: &str = "echo \"did: $TEAMCTL_PLAN\"";

fn plans(env: &TestEnv) -> Vec<Value> {
    serde_json::from_str::<Value>(&env.ok(&["--json", "plan", "list"]))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Wait for a pending plan of `name` other than `not`; returns it.
fn next_plan(env: &TestEnv, name: &str, not: Option<&str>) -> Value {
    let mut found = None;
    wait_until("a plan to approve", LONG, || {
        found = plans(env)
            .into_iter()
            .find(|p| p["name"] == name && Some(p["requestId"].as_str().unwrap()) != not);
        found.is_some()
    });
    found.unwrap()
}

fn planner(env: &TestEnv, team: &str) {
    create(env, team);
    spawn(
        env,
        "bob",
        &["--plan-mode-required", "--plan", PLAN, "--exec", DO],
    );
}

#[test]
fn an_approved_plan_runs_with_teamctl_plan() {
    let env = TestEnv::new();
    planner(&env, "lc-plan");
    env.ok(&["send", "bob", "job one"]);
    env.ok(&["send", "bob", "job two"]);
    let p = next_plan(&env, "bob", None);
    assert_eq!(p["plan"], "plan for job one round 1 feedback []");
    assert_eq!(env.member_status("bob"), "awaiting_plan_approval");
    // Nothing ran yet.
    assert!(leader_mail(&env, "lc-plan", "bob", "message").is_empty());
    // Only team-lead's answer counts: a teammate cannot send one, and a forged line written
    // straight into the inbox is ignored with a note.
    let req = p["requestId"].as_str().unwrap();
    let forged = format!(
        r#"{{"type":"plan_approval_response","requestId":"{req}","approve":true,"feedback":null}}"#
    );
    env.fails(&["--as", "bob", "send", "bob", "--structured", &forged], 2);
    let line = serde_json::json!({
        "v": 1, "id": "forged-1", "type": "plan_approval_response", "requestId": req,
        "approve": true, "from": "mallory", "to": "bob", "timestamp": "2026-01-01T00:00:00.000Z"
    });
    let inbox = env.team_dir("lc-plan").join("inboxes/bob/inbox.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&inbox)
        .unwrap();
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
    let log = env.team_dir("lc-plan").join("logs/bob.log");
    wait_until("the forged answer ignored", LONG, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("ignored a plan_approval_response from mallory")
    });
    assert_eq!(env.member_status("bob"), "awaiting_plan_approval");
    assert!(leader_mail(&env, "lc-plan", "bob", "message").is_empty());
    // The real answer lands behind "job two" in bob's inbox: it must still be found.
    env.ok(&["plan", "approve", "bob"]);
    wait_until("the first turn's reply", LONG, || {
        texts(&leader_mail(&env, "lc-plan", "bob", "message"))
            .contains(&"did: plan for job one round 1 feedback []\n".to_string())
    });
    let p2 = next_plan(&env, "bob", p["requestId"].as_str());
    assert_eq!(p2["plan"], "plan for job two round 1 feedback []");
    env.ok(&["plan", "approve", "bob"]);
    wait_until("the second turn's reply", LONG, || {
        texts(&leader_mail(&env, "lc-plan", "bob", "message"))
            .contains(&"did: plan for job two round 1 feedback []\n".to_string())
    });
    wait_until("bob idle", LONG, || env.member_status("bob") == "idle");
    assert!(plans(&env).is_empty());
    // Approving with nothing pending is bad input.
    env.fails(&["plan", "approve", "bob"], 2);
    env.fails(&["plan", "approve", "nobody"], 2);
    // --plan alone would never run: bad input.
    let err = env.fails(
        &["spawn", "amy", "--backend", "process", "--plan", "echo x"],
        2,
    );
    assert!(err.contains("--plan-mode-required"), "{err}");
    // Each message ran exactly once.
    assert_eq!(leader_mail(&env, "lc-plan", "bob", "message").len(), 2);
    env.ok(&["shutdown", "bob"]);
}

#[test]
fn a_rejected_plan_is_made_again_with_the_feedback() {
    let env = TestEnv::new();
    planner(&env, "lc-replan");
    env.ok(&["send", "bob", "job"]);
    let p = next_plan(&env, "bob", None);
    env.ok(&["plan", "reject", "bob", "--feedback", "add tests"]);
    let p2 = next_plan(&env, "bob", p["requestId"].as_str());
    assert_eq!(p2["plan"], "plan for job round 2 feedback [add tests]");
    // Pinned to the plan read first, an answer is refused now that another waits: the plan
    // approved is the plan read.
    let (old, new) = (
        p["requestId"].as_str().unwrap(),
        p2["requestId"].as_str().unwrap(),
    );
    let before = env.inbox("lc-replan", "bob").len();
    for verb in [
        &["plan", "approve", "bob", "--request", old][..],
        &["plan", "reject", "bob", "--feedback", "x", "--request", old],
    ] {
        let err = env.fails(verb, 2);
        assert!(
            err.contains(&format!("bob's pending plan is request {new}, not {old}")),
            "{err}"
        );
    }
    for empty in ["", " "] {
        let err = env.fails(&["plan", "approve", "bob", "--request", empty], 2);
        assert!(err.contains("--request is empty"), "{err}");
    }
    assert_eq!(env.inbox("lc-replan", "bob").len(), before, "nothing sent");
    env.ok(&["plan", "approve", "bob", "--request", new]);
    wait_until("the reply", LONG, || {
        texts(&leader_mail(&env, "lc-replan", "bob", "message"))
            .contains(&"did: plan for job round 2 feedback [add tests]\n".to_string())
    });
    // A shutdown while awaiting approval is answered, and the message stays unread.
    env.ok(&["send", "bob", "another"]);
    next_plan(&env, "bob", p2["requestId"].as_str());
    env.ok(&["shutdown", "bob"]);
    assert_eq!(env.member("bob")["unread"], 1);
    assert_eq!(env.processes(), Vec::<u32>::new());
}

#[test]
fn three_rejections_fail_the_turn_and_tell_the_sender() {
    let env = TestEnv::new();
    planner(&env, "lc-noplan");
    env.ok(&["send", "bob", "job"]);
    let mut last: Option<String> = None;
    for round in 1..=3 {
        let p = next_plan(&env, "bob", last.as_deref());
        assert!(
            p["plan"]
                .as_str()
                .unwrap()
                .contains(&format!("round {round}")),
            "{p}"
        );
        env.ok(&[
            "plan",
            "reject",
            "bob",
            "--feedback",
            &format!("no {round}"),
        ]);
        last = Some(p["requestId"].as_str().unwrap().to_string());
    }
    wait_until("the failure notice", LONG, || {
        texts(&leader_mail(&env, "lc-noplan", "bob", "message"))
            .iter()
            .any(|t| t.contains("rejected 3 times") && t.contains("no 3"))
    });
    wait_until("bob idle, failed", LONG, || {
        env.member_status("bob") == "idle"
            && leader_mail(&env, "lc-noplan", "bob", "idle_notification")
                .iter()
                .any(|m| m["idleReason"] == "failed")
    });
    // The agent command never ran.
    assert!(
        !texts(&leader_mail(&env, "lc-noplan", "bob", "message"))
            .iter()
            .any(|t| t.starts_with("did:"))
    );
    assert!(plans(&env).is_empty());
    env.fails(&["plan", "reject", "bob", "--feedback", "x"], 2);
    env.ok(&["shutdown", "bob"]);
}

// ---- worktrees ----

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A git repository with one commit, in the test's work directory.
pub(crate) fn repo(env: &TestEnv) -> PathBuf {
    let dir = env.work.path().join("repo");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    git(&dir, &["add", "README"]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    dir.canonicalize().unwrap()
}

#[test]
fn a_worktree_is_the_teammates_cwd_and_is_removed_on_request() {
    let env = TestEnv::new();
    create(&env, "lc-tree");
    let repo = repo(&env);
    let r = repo.display().to_string();
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--cwd",
        &r,
        "--worktree",
        "--exec",
        "pwd; git branch --show-current",
    ]);
    let tree = env.team_dir("lc-tree").join("worktrees/bob");
    assert!(tree.join("README").is_file());
    let err = env.fails(
        &[
            "spawn",
            "bob",
            "--backend",
            "process",
            "--cwd",
            &r,
            "--worktree",
            "--exec",
            "cat",
        ],
        2,
    );
    assert!(err.contains("already running"), "{err}");
    env.ok(&["send", "bob", "where are you?"]);
    wait_until("bob's reply", LONG, || {
        !leader_mail(&env, "lc-tree", "bob", "message").is_empty()
    });
    let reply = texts(&leader_mail(&env, "lc-tree", "bob", "message")).remove(0);
    assert_eq!(
        reply,
        format!(
            "{}\nteamctl/bob@lc-tree\n",
            tree.canonicalize().unwrap().display()
        )
    );
    // An explicit branch.
    env.ok(&[
        "spawn",
        "amy",
        "--backend",
        "process",
        "--cwd",
        &r,
        "--worktree",
        "feature-x",
        "--exec",
        "cat",
    ]);
    assert_eq!(
        git(
            &env.team_dir("lc-tree").join("worktrees/amy"),
            &["branch", "--show-current"]
        ),
        "feature-x"
    );
    // Kept by a plain shutdown, removed with --remove-worktree; branches stay.
    env.ok(&["shutdown", "amy"]);
    assert!(env.team_dir("lc-tree").join("worktrees/amy").is_dir());
    let out = env.ok(&["shutdown", "bob", "--remove-worktree"]);
    assert!(out.contains("removed"), "{out}");
    assert!(!tree.exists());
    assert!(!git(&repo, &["worktree", "list"]).contains("worktrees/bob"));
    assert!(
        git(&repo, &["branch", "--list", "teamctl/bob@lc-tree"]).contains("teamctl/bob@lc-tree")
    );
    // resume makes it again from the branch.
    env.ok(&["resume", "bob"]);
    assert!(tree.join("README").is_file());
    env.ok(&["shutdown", "bob", "--remove-worktree"]);
    // Not a git repository: exit 2, nothing written.
    let plain = env.work.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let before = crate::common::snapshot(env.home_path());
    let err = env.fails(
        &[
            "spawn",
            "carl",
            "--backend",
            "process",
            "--cwd",
            plain.to_str().unwrap(),
            "--worktree",
            "--exec",
            "cat",
        ],
        2,
    );
    assert!(err.contains("git"), "{err}");
    env.fails(
        &[
            "spawn",
            "carl",
            "--backend",
            "process",
            "--cwd",
            &r,
            "--worktree",
            "bad..name",
            "--exec",
            "cat",
        ],
        2,
    );
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    // delete refuses while a worktree has uncommitted changes, and changes nothing.
    let scratch = env.team_dir("lc-tree").join("worktrees/amy/notes.txt");
    std::fs::write(&scratch, "draft\n").unwrap();
    let err = env.fails(&["delete"], 1);
    assert!(err.contains("uncommitted"), "{err}");
    assert!(scratch.is_file());
    // So does `shutdown --remove-worktree` (new-user QA 43: it discarded the draft, said
    // after), with the way to discard it, which --force is.
    let err = env.fails(&["shutdown", "amy", "--remove-worktree"], 1);
    assert!(
        err.contains("has uncommitted changes, so it is kept")
            && err.contains("`teamctl shutdown amy --remove-worktree --force` discards it"),
        "{err}"
    );
    assert!(scratch.is_file());
    std::fs::remove_file(&scratch).unwrap();
    // delete removes the remaining worktree through git.
    env.ok(&["delete"]);
    assert!(!git(&repo, &["worktree", "list"]).contains("lc-tree"));
}

/// Work git cannot vouch for is never taken for none (attacker QA 42). With its repository
/// moved, a worktree's uncommitted draft was removed by a plain `delete` (git failed, counted
/// as clean, and the directory was removed as one git did not know); a teammate's repository
/// config (`core.fsmonitor`) ran from a plain `doctor`; and a `.git` a teammate pointed at a
/// repository of its own had git run there. Now each is kept and named, nothing is run, and
/// `delete --force` remains the way to drop them.
#[test]
fn a_worktree_git_cannot_check_is_kept_and_its_repository_config_never_runs() {
    let env = TestEnv::new();
    create(&env, "lc-keep");
    let repo = repo(&env);
    let ran = env.work.path().join("fsmonitor-ran");
    for name in ["amy", "bea"] {
        env.ok(&[
            "spawn",
            name,
            "--backend",
            "process",
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "--exec",
            "cat",
        ]);
    }
    env.ok(&["shutdown", "--all"]);
    // Set from a turn, say: the repository's config is the worktrees' too.
    git(
        &repo,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch '{}'; true", ran.display()),
        ],
    );
    let trees = env.team_dir("lc-keep").join("worktrees");
    // amy's worktree is clean: doctor looks at it with git (fsmonitor not run).
    let (_, report) = doctor(&env, &[]);
    assert!(!ran.exists(), "core.fsmonitor ran: {report:#}");
    // bea's `.git` now names a repository bea made itself, with its own fsmonitor.
    let own = env.work.path().join("own.git");
    git(
        env.work.path(),
        &["init", "-q", "--bare", own.to_str().unwrap()],
    );
    git(
        &own,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch '{}'; true", ran.display()),
        ],
    );
    std::fs::write(
        trees.join("bea/.git"),
        format!("gitdir: {}\n", own.display()),
    )
    .unwrap();
    // amy's draft, uncommitted: --fix keeps it too.
    std::fs::write(trees.join("amy/draft.txt"), "precious\n").unwrap();
    let (_, report) = doctor(&env, &["--fix"]);
    assert!(
        !ran.exists(),
        "a teammate's own repository's config ran: {report:#}"
    );
    assert!(trees.join("bea/README").is_file(), "{report:#}");
    let said = report.to_string();
    assert!(
        said.contains("files git cannot check for uncommitted changes"),
        "{report:#}"
    );
    assert!(
        said.contains("it has uncommitted changes, so --fix keeps it"),
        "{report:#}"
    );
    // The repository moved: delete refuses, doctor --fix keeps the draft.
    let moved = env.work.path().join("repo-moved");
    std::fs::rename(&repo, &moved).unwrap();
    let err = env.fails(&["delete"], 1);
    assert!(
        err.contains("work that may be lost in")
            && err.contains("worktrees/amy (files git cannot check for uncommitted changes"),
        "{err}"
    );
    doctor(&env, &["--fix"]);
    assert_eq!(
        std::fs::read_to_string(trees.join("amy/draft.txt")).unwrap(),
        "precious\n"
    );
    assert!(!ran.exists());
    // Forced, the work goes, and that is said (new-user QA 43: only "deleted team").
    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("discarded (--force) work in") && err.contains("/worktrees/"),
        "{err}"
    );
    assert!(!ran.exists());
}

/// More of attacker QA 42 on worktrees: a `filter.NAME.clean` in the repository's config with
/// an attribute naming it never runs from `doctor` or `delete`; a `.git` pointing at a
/// repository the teammate made inside its worktree is not run in; new files are seen with
/// `status.showUntrackedFiles=no`; a tree under `worktrees/` that is no member's keeps a plain
/// `delete` from removing its work; and work a teammate leaves while it finishes its turn
/// during `delete`'s handoff keeps the team (it was removed with it).
#[test]
fn delete_and_doctor_keep_work_git_config_hides_or_a_finishing_turn_leaves() {
    let env = TestEnv::new();
    create(&env, "lc-late");
    let repo = repo(&env);
    let ran = env.work.path().join("filter-ran");
    let r = repo.to_str().unwrap();
    env.ok(&[
        "spawn",
        "amy",
        "--backend",
        "process",
        "--cwd",
        r,
        "--worktree",
        "--exec",
        "cat",
    ]);
    env.ok(&["shutdown", "amy"]);
    let trees = env.team_dir("lc-late").join("worktrees");
    let amy = trees.join("amy");
    std::fs::write(amy.join(".gitattributes"), "*.txt filter=x\n").unwrap();
    std::fs::write(amy.join("a.txt"), "hi\n").unwrap();
    git(&amy, &["add", ".gitattributes", "a.txt"]);
    git(&amy, &["commit", "-q", "-m", "attributes"]);
    git(
        &repo,
        &[
            "config",
            "filter.x.clean",
            &format!("sh -c 'touch \"{}\"; cat'", ran.display()),
        ],
    );
    git(&repo, &["config", "status.showUntrackedFiles", "no"]);
    // Changed since the index saw it: git hashes it (through the filter, were it not emptied).
    std::fs::write(amy.join("a.txt"), "hi again\n").unwrap();
    let (_, report) = doctor(&env, &[]);
    assert!(!ran.exists(), "filter.x.clean ran: {report:#}");
    assert!(
        report
            .to_string()
            .contains("uncommitted changes, so --fix keeps it"),
        "{report:#}"
    );
    git(&amy, &["checkout", "-q", "a.txt"]);
    // A new file only: seen though the config hides untracked files.
    std::fs::write(amy.join("notes.md"), "work\n").unwrap();
    let err = env.fails(&["delete"], 1);
    assert!(err.contains("worktrees/amy (uncommitted changes)"), "{err}");
    assert!(!ran.exists());
    std::fs::remove_file(amy.join("notes.md")).unwrap();
    // A repository made inside the worktree, its `.git` pointing there: not run in.
    let own = amy.join(".own");
    git(&amy, &["init", "-q", own.to_str().unwrap()]);
    let record = own.join(".git/worktrees/amy");
    std::fs::create_dir_all(&record).unwrap();
    std::fs::write(
        record.join("gitdir"),
        format!("{}\n", amy.join(".git").display()),
    )
    .unwrap();
    std::fs::write(record.join("commondir"), "../..\n").unwrap();
    let real = std::fs::read_to_string(amy.join(".git")).unwrap();
    std::fs::write(amy.join(".git"), "gitdir: .own/.git/worktrees/amy\n").unwrap();
    let (_, report) = doctor(&env, &["--fix"]);
    assert!(
        report
            .to_string()
            .contains("points at a repository inside the worktree itself"),
        "{report:#}"
    );
    assert!(amy.join("a.txt").is_file(), "{report:#}");
    // A FIFO at that record's `commondir` is opened by no look (attacker QA 45: `open` hung
    // `doctor` and `delete` past SIGTERM).
    std::fs::remove_file(record.join("commondir")).unwrap();
    nix::unistd::mkfifo(&record.join("commondir"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let mut look = env
        .cmd(&["doctor"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + LONG;
    while look.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = look.kill();
            panic!("doctor hung on a FIFO in a worktree's record");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = look.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("points at a repository inside the worktree itself"),
        "{out:?}"
    );
    std::fs::write(amy.join(".git"), real).unwrap();
    std::fs::remove_dir_all(&own).unwrap();
    // A tree that is no member's, with work in it: a plain delete keeps the team.
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            trees.join("old").to_str().unwrap(),
            "-b",
            "old",
        ],
    );
    std::fs::write(trees.join("old/wip.txt"), "wip\n").unwrap();
    let err = env.fails(&["delete"], 1);
    assert!(err.contains("worktrees/old (uncommitted changes)"), "{err}");
    std::fs::remove_file(trees.join("old/wip.txt")).unwrap();
    // A turn that writes its result while the delete waits for its answer.
    env.ok(&[
        "spawn",
        "bea",
        "--backend",
        "process",
        "--cwd",
        r,
        "--worktree",
        "--exec",
        "sleep 2; echo valuable > result.txt",
    ]);
    env.ok(&["send", "bea", "go"]);
    wait_until("bea in its turn", Duration::from_secs(20), || {
        env.member_status("bea") == "working"
    });
    let err = env.fails(&["delete"], 1);
    assert!(
        err.contains("worktrees/bea (uncommitted changes) (left while its teammates finished); team lc-late is kept"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(trees.join("bea/result.txt")).unwrap(),
        "valuable\n"
    );
    assert!(!ran.exists());
    // Forced, the work goes, and that is said (new-user QA 43: only "deleted team").
    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("discarded (--force) work in") && err.contains("/worktrees/"),
        "{err}"
    );
    assert!(!ran.exists());
}

// ---- doctor ----

fn doctor(env: &TestEnv, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json", "doctor"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), v)
}

/// A stopped teammate's worktree holding only files git ignores (`.env`, notes) is clean to
/// git, yet in no commit: kept as uncommitted work is (attacker QA 43: an ignored `notes.md`
/// went with `doctor --fix`).
#[test]
fn doctor_fix_keeps_a_worktree_holding_files_git_ignores() {
    let env = TestEnv::new();
    create(&env, "lc-ign");
    let repo = repo(&env);
    let r = repo.to_str().unwrap();
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--cwd",
        r,
        "--worktree",
        "--exec",
        "cat",
    ]);
    env.ok(&["shutdown", "bob"]);
    let tree = env.team_dir("lc-ign").join("worktrees/bob");
    std::fs::write(tree.join(".gitignore"), "*\n").unwrap();
    std::fs::write(tree.join("notes.md"), "mine\n").unwrap();
    let (_, report) = doctor(&env, &["--fix"]);
    let said = report.to_string();
    assert!(
        said.contains("git ignores") && said.contains("so --fix keeps it"),
        "{report:#}"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("notes.md")).unwrap(),
        "mine\n"
    );
    // As uncommitted work, everywhere: a plain `delete` (new-user QA 43: a `.env` went
    // silently) and `shutdown --remove-worktree` keep it; `--force` discards it, said.
    let err = env.fails(&["delete"], 1);
    assert!(err.contains("git ignores"), "{err}");
    let err = env.fails(&["shutdown", "bob", "--remove-worktree"], 1);
    assert!(
        err.contains("git ignores (.gitignore, ...), so it is kept"),
        "{err}"
    );
    assert!(tree.join("notes.md").is_file());
    let out = env.run(&["shutdown", "bob", "--remove-worktree", "--force"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("git ignores (.gitignore, ...), now discarded"),
        "{out:?}"
    );
    assert!(!tree.exists());
    env.ok(&["delete"]);
}

/// Changes git is told not to show (`update-index --assume-unchanged`, `--skip-worktree`) are
/// uncommitted work all the same (attacker QA 43: a turn could hide its edits from every dirty
/// look); a file so marked but unchanged is nothing to keep.
#[test]
fn changes_hidden_from_git_status_are_kept_as_uncommitted_work() {
    let env = TestEnv::new();
    create(&env, "lc-hid");
    let repo = repo(&env);
    std::fs::write(repo.join("other"), "o\n").unwrap();
    git(&repo, &["add", "other"]);
    git(&repo, &["commit", "-q", "-m", "other"]);
    spawn(
        &env,
        "bob",
        &[
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "--exec",
            "cat",
        ],
    );
    env.ok(&["shutdown", "bob"]);
    let tree = env.team_dir("lc-hid").join("worktrees/bob");
    for (flag, file) in [
        ("--assume-unchanged", "README"),
        ("--skip-worktree", "other"),
    ] {
        git(&tree, &["update-index", flag, file]);
        std::fs::write(tree.join(file), "changed\n").unwrap();
        assert_eq!(
            git(&tree, &["status", "--porcelain"]),
            "",
            "git shows {file}"
        );
        let err = env.fails(&["shutdown", "bob", "--remove-worktree"], 1);
        assert!(
            err.contains("changes git is told not to show") && err.contains(file),
            "{err}"
        );
        let err = env.fails(&["delete"], 1);
        assert!(err.contains("changes git is told not to show"), "{err}");
        assert_eq!(
            std::fs::read_to_string(tree.join(file)).unwrap(),
            "changed\n"
        );
        // Put back as committed: nothing to keep.
        let committed = if file == "README" { "hello\n" } else { "o\n" };
        std::fs::write(tree.join(file), committed).unwrap();
    }
    let out = env.run(&["shutdown", "bob", "--remove-worktree"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!tree.exists());
    env.ok(&["delete"]);
}

/// `spawn --worktree` on a branch that exists already (left by an earlier teammate of that
/// name: `delete` keeps branches) says so, with where it is against HEAD, and when it lacks
/// the working directory's subdirectory (new-user QA 43: the teammate silently got the old
/// commit, and a spawn failed saying "kill alice", a member never made).
#[test]
fn a_worktree_on_an_existing_branch_behind_head_is_said() {
    let env = TestEnv::new();
    create(&env, "lc-old");
    let repo = repo(&env);
    git(&repo, &["branch", "teamctl/amy@lc-old"]);
    std::fs::create_dir(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/file"), "x\n").unwrap();
    git(&repo, &["add", "sub/file"]);
    git(&repo, &["commit", "-q", "-m", "second"]);
    let sub = repo.join("sub");
    let out = env.run(&[
        "spawn",
        "amy",
        "--backend",
        "process",
        "--cwd",
        sub.to_str().unwrap(),
        "--worktree",
        "--exec",
        "cat",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        err.contains("amy's worktree would have no sub for its working directory: the existing branch teamctl/amy@lc-old (at ")
            && err.contains("not HEAD")
            && err.contains(") has none; work from the repository's top")
            && err.contains(&format!("`--cwd {}`", repo.display()))
            && err.contains("or on a new branch from HEAD (`--worktree NEW-BRANCH`; `worktree = \"NEW-BRANCH\"` in a team file)"),
        "{err}"
    );
    // Refused before anything was made (new-user QA 43: a worktree was made, then the start
    // failed naming `teamctl kill amy`, a teammate never recorded).
    assert!(!err.contains("teamctl kill"), "{err}");
    assert!(!env.team_dir("lc-old").join("worktrees/amy").exists());
    assert!(!env.ok(&["status"]).contains("amy"));
    // A directory HEAD's commit lacks (untracked) is refused the same way.
    std::fs::create_dir(repo.join("untracked")).unwrap();
    let out = env.run(&[
        "spawn",
        "cid",
        "--backend",
        "process",
        "--cwd",
        repo.join("untracked").to_str().unwrap(),
        "--worktree",
        "--exec",
        "cat",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cid's worktree would have no untracked for its working directory: HEAD's commit has none (not committed yet"),
        "{out:?}"
    );
    assert!(!env.team_dir("lc-old").join("worktrees/cid").exists());
    // From the top, it runs, said the same.
    let out = env.run(&[
        "spawn",
        "amy",
        "--backend",
        "process",
        "--cwd",
        repo.to_str().unwrap(),
        "--worktree",
        "--exec",
        "cat",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("amy works on the existing branch"),
        "{out:?}"
    );
    // A branch checked out already (amy's, the repository's own) is refused before anything
    // is made, naming where (new-user QA 44: git's raw error after a success-looking note).
    for (branch, at) in [
        (
            "teamctl/amy@lc-old",
            env.team_dir("lc-old").join("worktrees/amy"),
        ),
        ("main", repo.clone()),
    ] {
        let out = env.run(&[
            "spawn",
            "hank",
            "--backend",
            "process",
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            branch,
            "--exec",
            "cat",
        ]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "branch {branch} is checked out already, in {}",
                at.display()
            )),
            "{out:?}"
        );
        // Amy's: the way to free it said (new-user QA 48).
        assert_eq!(
            err.contains(
                "(teammate amy's worktree: `teamctl shutdown amy --remove-worktree` frees it)"
            ),
            branch != "main",
            "{err}"
        );
        assert!(!env.team_dir("lc-old").join("worktrees/hank").exists());
    }
    // A new branch from HEAD: nothing to say.
    let out = env.run(&[
        "spawn",
        "ben",
        "--backend",
        "process",
        "--cwd",
        repo.to_str().unwrap(),
        "--worktree",
        "--exec",
        "cat",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("existing branch"),
        "{out:?}"
    );
    env.ok(&["delete", "--force"]);
}

/// `--worktree` for a teammate already in the team (new-user QA 46: passed over without a
/// word): one that had no worktree gets one when spawned anew; one that had keeps it, and
/// another branch for it is refused (exit 2, nothing changed), naming the way to switch.
#[test]
fn spawn_anew_with_worktree_gives_one_or_refuses_another_branch() {
    let env = TestEnv::new();
    create(&env, "lc-anew");
    let repo = repo(&env);
    let r = repo.to_str().unwrap();
    let tree = env.team_dir("lc-anew").join("worktrees").join("amy");
    let spawn = |extra: &[&str]| {
        let mut args = vec!["spawn", "amy", "--backend", "process", "--cwd", r];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--exec", "pwd"]);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let args = spawn(extra);
        env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    run(&[]);
    assert!(!tree.exists());
    env.ok(&["kill", "amy"]);
    let out = run(&["--worktree"]);
    assert!(
        out.contains(&format!(
            "made worktree {} for amy, on a new branch teamctl/amy@lc-anew",
            tree.display()
        )),
        "{out}"
    );
    assert_eq!(
        env.ok(&["ask", "amy", "where?"]).trim(),
        tree.display().to_string()
    );
    env.ok(&["kill", "amy"]);
    let team = env.team_dir("lc-anew").join("config.json");
    let before = std::fs::read(&team).unwrap();
    let args = spawn(&["--worktree", "other"]);
    let err = env.fails(&args.iter().map(String::as_str).collect::<Vec<_>>(), 2);
    assert!(
        err.contains("amy works in its worktree")
            && err.contains("(made on branch teamctl/amy@lc-anew)")
            && err.contains("nothing was changed")
            && err.contains("spawn it without --worktree")
            && err.contains("`teamctl shutdown amy --remove-worktree` first")
            && err.contains("`--worktree 'other'`"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&team).unwrap(),
        before,
        "the refusal changed the team file"
    );
    assert_eq!(env.member_status("amy"), "stopped");
    let out = run(&["--worktree", "teamctl/amy@lc-anew"]);
    assert!(out.contains("amy reuses its worktree"), "{out}");
    // Its worktree removed, the new branch is had (new-user QA 48: still refused, naming the
    // removed tree).
    env.ok(&["kill", "amy"]);
    env.ok(&["shutdown", "amy", "--remove-worktree"]);
    assert!(!tree.exists());
    let out = run(&["--worktree", "other"]);
    assert!(
        out.contains(&format!(
            "made worktree {} for amy, on a new branch other",
            tree.display()
        )),
        "{out}"
    );
    assert_eq!(git(&tree, &["rev-parse", "--abbrev-ref", "HEAD"]), "other");
    assert_eq!(env.recorded("lc-anew", "amy")["worktreeBranch"], "other");
    env.ok(&["kill", "amy"]);
}

/// `spawn --worktree` and `up` say the worktree and branch they made, or that they reused one
/// (new-user QA: nothing said which path or branch, and the user had to hunt for them).
#[test]
fn spawn_and_up_say_the_worktree_and_branch_they_made() {
    let env = TestEnv::new();
    create(&env, "lc-said");
    let repo = repo(&env);
    let r = repo.to_str().unwrap();
    let trees = env.team_dir("lc-said").join("worktrees");
    let tree = |name: &str| trees.join(name).display().to_string();
    let spawned = |name: &str, extra: &[&str]| {
        let mut args = vec!["spawn", name, "--backend", "process", "--cwd", r];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--exec", "cat"]);
        env.ok(&args)
    };
    let out = spawned("amy", &["--worktree"]);
    assert!(
        out.contains(&format!(
            "\nmade worktree {} for amy, on a new branch teamctl/amy@lc-said\n",
            tree("amy")
        )),
        "{out}"
    );
    // A branch of the user's, existing already.
    git(&repo, &["branch", "feat"]);
    let out = spawned("bea", &["--worktree", "feat"]);
    assert!(
        out.contains(&format!(
            "\nmade worktree {} for bea, reusing the branch feat\n",
            tree("bea")
        )),
        "{out}"
    );
    // Spawned anew in its place, it keeps the worktree it had.
    env.ok(&["kill", "amy"]);
    let out = spawned("amy", &["--worktree"]);
    assert!(
        out.contains(&format!(
            "\namy reuses its worktree {}, on branch teamctl/amy@lc-said\n",
            tree("amy")
        )),
        "{out}"
    );
    // --json: the member's record with what this spawn made.
    let v: Value = serde_json::from_str(&env.ok(&[
        "--json",
        "spawn",
        "cid",
        "--backend",
        "process",
        "--cwd",
        r,
        "--worktree",
        "--exec",
        "cat",
    ]))
    .unwrap();
    assert_eq!(v["worktree"], tree("cid"), "{v}");
    assert_eq!(v["worktreeBranch"], "teamctl/cid@lc-said", "{v}");
    assert_eq!(v["worktreeCreated"], true, "{v}");
    assert_eq!(v["worktreeBranchCreated"], true, "{v}");
    // `up` spawns on the same path and says the same.
    let file = env.work.path().join("teamctl.toml");
    std::fs::write(
        &file,
        "name = \"lc-said\"\n\n[[member]]\nname = \"dan\"\nexec = \"cat\"\nbackend = \"process\"\ncwd = \"repo\"\nworktree = true\n",
    )
    .unwrap();
    let out = env.ok(&["up", file.to_str().unwrap()]);
    assert!(
        out.contains("dan spawned (process, pid ")
            && out.contains(&format!(
                ")\nmade worktree {} for dan, on a new branch teamctl/dan@lc-said\n",
                tree("dan")
            )),
        "{out}"
    );
    env.ok(&["delete", "--force"]);
}

/// A team (or member) name git refuses in a branch name (`x.lock`, `a..b`) is taken, and its
/// `spawn --worktree` is refused saying why and the way on, leaving nothing behind (new-user
/// QA: it said no valid branch name, not what was wrong with it).
#[test]
fn a_default_branch_git_refuses_is_said_and_nothing_is_made() {
    for (team, name, why) in [
        (
            "x.lock",
            "dev",
            "it may not end in .lock (from the team name x.lock)",
        ),
        (
            "a..b",
            "dev",
            "it may not have .. in it (from the team name a..b)",
        ),
        ("t.", "dev", "it may not end in . (from the team name t.)"),
        (
            "lc-ok",
            "d..v",
            "it may not have .. in it (from the name d..v)",
        ),
    ] {
        let env = TestEnv::new();
        create(&env, team);
        let repo = repo(&env);
        let branches = git(&repo, &["branch", "--list"]);
        let err = env.fails(
            &[
                "spawn",
                name,
                "--backend",
                "process",
                "--cwd",
                repo.to_str().unwrap(),
                "--worktree",
                "--exec",
                "cat",
            ],
            2,
        );
        let or = if team == "lc-ok" {
            "or give the teammate another name"
        } else {
            "or use another team name"
        };
        assert!(
            err.contains(&format!(
                "{name}'s worktree branch would be teamctl/{name}@{team}, which git refuses: {why}; name a branch with `--worktree BRANCH`"
            )) && err.contains(or),
            "{err}"
        );
        // Nothing left: no member, no branch, no worktree.
        assert!(!env.ok(&["status"]).contains(name));
        assert_eq!(env.config(team)["members"].as_array().unwrap().len(), 1);
        assert_eq!(git(&repo, &["branch", "--list"]), branches);
        assert!(!env.team_dir(team).join("worktrees").exists());
        // A branch given that git refuses says git's rules too (new-user QA 46).
        let err = env.fails(
            &[
                "spawn",
                name,
                "--backend",
                "process",
                "--cwd",
                repo.to_str().unwrap(),
                "--worktree",
                "bad..name",
                "--exec",
                "cat",
            ],
            2,
        );
        assert!(
            err.contains("\"bad..name\" is not a valid branch name: git refuses `..`"),
            "{err}"
        );
        assert!(!env.team_dir(team).join("worktrees").exists());
        // The way on works.
        env.ok(&[
            "spawn",
            name,
            "--backend",
            "process",
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "work",
            "--exec",
            "cat",
        ]);
        env.ok(&["delete", "--force"]);
    }
}

/// New-user QA 43: a running teammate whose worktree was removed by hand looked healthy
/// (`status`, `doctor` silent), `status --json` named no worktree, and `resume` made it again
/// without a word.
#[test]
fn a_worktree_removed_under_a_running_teammate_is_said_and_made_again() {
    let env = TestEnv::new();
    create(&env, "lc-gone");
    let repo = repo(&env);
    spawn(
        &env,
        "amy",
        &[
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "--exec",
            "cat",
        ],
    );
    let amy = |status: &Value| {
        status["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "amy")
            .cloned()
            .unwrap()
    };
    let tree = env.team_dir("lc-gone").join("worktrees/amy");
    let row = amy(&serde_json::from_str(&env.ok(&["status", "--json"])).unwrap());
    assert_eq!(row["worktree"], tree.display().to_string(), "{row}");
    assert_eq!(row["worktreeBranch"], "teamctl/amy@lc-gone", "{row}");
    assert!(row.get("worktreeGone").is_none(), "{row}");
    let report: Value = serde_json::from_str(&env.ok(&["doctor", "--json"])).unwrap();
    assert!(
        !report.to_string().contains("deleted directory"),
        "{report}"
    );

    std::fs::remove_dir_all(&tree).unwrap();
    let row = amy(&serde_json::from_str(&env.ok(&["status", "--json"])).unwrap());
    assert_eq!(row["worktreeGone"], true, "{row}");
    let table = env.ok(&["status"]);
    assert!(
        table.contains(&format!("amy: its worktree {} is gone", tree.display()))
            && table.contains("`teamctl kill amy` then `teamctl resume amy`"),
        "{table}"
    );
    let out = env.run(&["doctor"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("amy@lc-gone is idle, but its worktree")
            && said.contains("its agent works in a deleted directory")
            && said.contains("from its branch teamctl/amy@lc-gone"),
        "{said}"
    );

    env.ok(&["kill", "amy"]);
    let out = env.run(&["resume", "amy"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "amy's worktree {} was gone: made again from its branch teamctl/amy@lc-gone",
            tree.display()
        )),
        "{out:?}"
    );
    assert!(tree.join("README").is_file());
    let row = amy(&serde_json::from_str(&env.ok(&["status", "--json"])).unwrap());
    assert!(row.get("worktreeGone").is_none(), "{row}");
    // Made already: a second resume says nothing of it.
    env.ok(&["kill", "amy"]);
    let out = env.run(&["resume", "amy"]);
    assert!(
        out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("was gone"),
        "{out:?}"
    );
    // Removed by hand again: `delete` has git forget it, so the branch can go (new-user QA
    // 44: `git branch -d` failed, "used by worktree").
    env.ok(&["kill", "amy"]);
    std::fs::remove_dir_all(&tree).unwrap();
    // `delete` says the branch it keeps, and how to drop it.
    let out = env.run(&["delete", "--force"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "kept the branch teamctl/amy@lc-gone in {} (`git -C {} branch -d -- teamctl/amy@lc-gone` deletes it once merged)",
            repo.display(),
            repo.display()
        )),
        "{out:?}"
    );
    assert!(
        git(&repo, &["branch", "--list", "teamctl/amy@lc-gone"]).contains("teamctl/amy@lc-gone")
    );
    git(&repo, &["branch", "-d", "teamctl/amy@lc-gone"]);
}

/// Two teams (two homes) on one repository, each with a teammate `dev` in a worktree: each
/// gets its own branch, named by its id, and a team's `delete` offers only its own for
/// deletion (new-user QA 44: the second `dev` was refused, `teamctl/dev` being checked out by
/// the first's, and one team's hint deleted the other's branch).
#[test]
fn teams_sharing_a_repository_get_a_branch_each() {
    let one = TestEnv::new();
    let two = TestEnv::new();
    let repo = repo(&one);
    let r = repo.to_str().unwrap();
    for (env, team) in [(&one, "lc-one"), (&two, "lc-two")] {
        create(env, team);
        spawn(
            env,
            "dev",
            &[
                "--cwd",
                r,
                "--worktree",
                "--exec",
                "git branch --show-current",
            ],
        );
        let tree = env.team_dir(team).join("worktrees/dev");
        assert_eq!(
            git(&tree, &["branch", "--show-current"]),
            format!("teamctl/dev@{team}")
        );
        assert_eq!(
            env.ok(&["ask", "dev", "which?"]).trim(),
            format!("teamctl/dev@{team}")
        );
    }
    let out = two.run(&["delete", "--force"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        said.contains("branch -d -- teamctl/dev@lc-two`") && !said.contains("lc-one"),
        "{said}"
    );
    // The first team's teammate still works in its own.
    assert_eq!(
        one.ok(&["ask", "dev", "still?"]).trim(),
        "teamctl/dev@lc-one"
    );
    one.ok(&["delete", "--force"]);
}

/// `status` says the branch a teammate's worktree has checked out now, not only the one it
/// was made on (new-user QA 46: after a `git switch` in it, `status --json` still said the
/// first), a detached HEAD as such, for a stopped teammate too; the recorded branch is kept
/// (what `resume` makes it again from) and said beside it. A `.git` or git directory that
/// leads through a symbolic link, or a FIFO for a HEAD, is not followed: the record is said.
#[test]
fn status_says_the_branch_a_worktree_has_checked_out_now() {
    let env = TestEnv::new();
    create(&env, "lc-head");
    let repo = repo(&env);
    spawn(
        &env,
        "amy",
        &[
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "--exec",
            "cat",
        ],
    );
    let tree = env.team_dir("lc-head").join("worktrees/amy");
    let made = "teamctl/amy@lc-head";
    let row = || {
        let status: Value = serde_json::from_str(&env.ok(&["status", "--json"])).unwrap();
        status["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "amy")
            .cloned()
            .unwrap()
    };
    let amy = row();
    assert_eq!(amy["worktreeBranch"], made, "{amy}");
    assert!(amy.get("worktreeMadeOn").is_none(), "{amy}");
    assert!(amy.get("worktreeDetached").is_none(), "{amy}");

    git(&tree, &["switch", "-q", "-c", "feature-x"]);
    let amy = row();
    assert_eq!(amy["worktreeBranch"], "feature-x", "{amy}");
    assert_eq!(amy["worktreeMadeOn"], made, "{amy}");

    git(&tree, &["switch", "-q", "--detach"]);
    let commit = git(&tree, &["rev-parse", "HEAD"]);
    let amy = row();
    assert!(amy.get("worktreeBranch").is_none(), "{amy}");
    assert_eq!(amy["worktreeDetached"], commit.as_str(), "{amy}");
    assert_eq!(amy["worktreeMadeOn"], made, "{amy}");

    // Stopped, it is read all the same; the record is not changed.
    env.ok(&["kill", "amy"]);
    git(&tree, &["switch", "-q", "feature-x"]);
    assert_eq!(row()["worktreeBranch"], "feature-x");
    assert_eq!(env.recorded("lc-head", "amy")["worktreeBranch"], made);

    // Led astray: a git directory through a link, a `.git` that is a link, a FIFO for HEAD.
    let dotgit = tree.join(".git");
    let real = std::fs::read_to_string(&dotgit).unwrap();
    let work = env.work.path().canonicalize().unwrap();
    let evil = work.join("evil");
    std::fs::create_dir_all(evil.join("worktrees/x")).unwrap();
    std::fs::write(evil.join("worktrees/x/HEAD"), "ref: refs/heads/evil\n").unwrap();
    std::os::unix::fs::symlink(&evil, work.join("link")).unwrap();
    let lead = |gitdir: &Path| {
        std::fs::remove_file(&dotgit).unwrap();
        std::fs::write(&dotgit, format!("gitdir: {}\n", gitdir.display())).unwrap();
    };
    // Followed nowhere, the direct way is read (the test's own check that it would be).
    lead(&evil.join("worktrees/x"));
    assert_eq!(row()["worktreeBranch"], "evil");
    lead(&work.join("link/worktrees/x"));
    let amy = row();
    assert_eq!(amy["worktreeBranch"], made, "{amy}");
    assert!(amy.get("worktreeMadeOn").is_none(), "{amy}");
    let file = work.join("dotgit");
    std::fs::write(
        &file,
        format!("gitdir: {}\n", evil.join("worktrees/x").display()),
    )
    .unwrap();
    std::fs::remove_file(&dotgit).unwrap();
    std::os::unix::fs::symlink(&file, &dotgit).unwrap();
    assert_eq!(row()["worktreeBranch"], made);
    std::fs::create_dir_all(evil.join("worktrees/y")).unwrap();
    let fifo = evil.join("worktrees/y/HEAD");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    lead(&evil.join("worktrees/y"));
    assert_eq!(row()["worktreeBranch"], made);

    std::fs::remove_file(&dotgit).unwrap();
    std::fs::write(&dotgit, real).unwrap();
    assert_eq!(row()["worktreeBranch"], "feature-x");
    env.ok(&["delete", "--force"]);
}

/// A worktree made again whose branch was gone too (deleted after `delete` said it was kept)
/// is said made on a new branch, by `spawn` (`--json`: `worktreeBranchCreated` true; it was
/// false) and by `resume`; and `spawn --json`'s `cwd` is the worktree, with no `/` added
/// (new-user QA 46).
#[test]
fn a_worktree_made_again_on_a_branch_made_again_says_so() {
    let env = TestEnv::new();
    create(&env, "lc-again");
    let repo = repo(&env);
    let r = repo.to_str().unwrap();
    let spawn_json = || -> Value {
        serde_json::from_str(&env.ok(&[
            "--json",
            "spawn",
            "amy",
            "--backend",
            "process",
            "--cwd",
            r,
            "--worktree",
            "--exec",
            "cat",
        ]))
        .unwrap()
    };
    let v = spawn_json();
    let tree = env.team_dir("lc-again").join("worktrees/amy");
    assert_eq!(v["worktree"], tree.display().to_string(), "{v}");
    assert_eq!(v["cwd"], v["worktree"], "{v}");
    let branch = "teamctl/amy@lc-again";
    let gone = || {
        std::fs::remove_dir_all(&tree).unwrap();
        git(&repo, &["worktree", "prune"]);
        git(&repo, &["branch", "-D", branch]);
    };
    env.ok(&["kill", "amy"]);
    gone();
    let v = spawn_json();
    assert_eq!(v["worktreeCreated"], true, "{v}");
    assert_eq!(v["worktreeBranchCreated"], true, "{v}");
    assert_eq!(git(&tree, &["branch", "--show-current"]), branch);
    // In words, by `spawn` and by `resume`.
    env.ok(&["kill", "amy"]);
    gone();
    let out = env.run(&[
        "spawn",
        "amy",
        "--backend",
        "process",
        "--cwd",
        r,
        "--worktree",
        "--exec",
        "cat",
    ]);
    // Said once (new-user QA 48: a note on stderr said it again).
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success()
            && said.contains(&format!(
                "made worktree {} for amy again, on a new branch {branch} from HEAD (its branch was gone too)",
                tree.display()
            ))
            && !err.contains("was gone"),
        "{out:?}"
    );
    env.ok(&["kill", "amy"]);
    gone();
    let out = env.run(&["resume", "amy"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "amy's worktree {} was gone: made again on a new branch {branch} from HEAD (its branch was gone too)",
            tree.display()
        )),
        "{out:?}"
    );
    env.ok(&["delete", "--force"]);
}

/// An answer taken in by another command (the team's console, say) before `shutdown
/// --remove-worktree --no-wait` recorded its wish: the teammate has stopped, and the shutdown
/// removes its worktree itself (new-user QA 44: it said "did not stop", the tree left).
#[test]
fn an_answer_taken_in_before_the_wish_still_removes_the_worktree() {
    let env = TestEnv::new();
    create(&env, "lc-race");
    let repo = repo(&env);
    spawn(
        &env,
        "bob",
        &[
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "--exec",
            "cat",
        ],
    );
    let (held, gate) = crate::spawnkill::held_at(
        &env,
        &["shutdown", "bob", "--remove-worktree", "--no-wait"],
        "shutdown-wish",
        "the shutdown before its wish",
    );
    wait_until("bob's answer", Duration::from_secs(20), || {
        leader_mail(&env, "lc-race", "bob", "shutdown_response").len() == 1
    });
    env.ok(&["status"]);
    assert_eq!(env.member_status("bob"), "stopped");
    std::fs::write(&gate, "go").unwrap();
    let out = held.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let tree = env.team_dir("lc-race").join("worktrees/bob");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("removed bob's worktree {}", tree.display())),
        "{out:?}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("did not stop"),
        "{out:?}"
    );
    assert!(!tree.exists());
    env.ok(&["delete", "--force"]);
}

/// `shutdown --remove-worktree` that does not wait for a teammate (`--no-wait`) remembers the
/// wish: whichever command takes in its answer removes the worktree, or keeps it for its
/// uncommitted work, said (new-user QA 43: it was forgotten, said only as "kept").
#[test]
fn a_remove_worktree_wish_outlives_a_shutdown_that_did_not_wait() {
    let env = TestEnv::new();
    create(&env, "lc-wish");
    let repo = repo(&env);
    for n in ["bob", "carol", "dan"] {
        spawn(
            &env,
            n,
            &[
                "--cwd",
                repo.to_str().unwrap(),
                "--worktree",
                "--exec",
                "cat",
            ],
        );
    }
    let tree = |n: &str| env.team_dir("lc-wish").join("worktrees").join(n);
    std::fs::write(tree("carol").join("draft"), "mine\n").unwrap();
    let out = env.run(&["shutdown", "bob", "carol", "--remove-worktree", "--no-wait"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("bob, carol: their worktrees go once they stop"),
        "{out:?}"
    );
    wait_until("both answers in", Duration::from_secs(20), || {
        leader_mail(&env, "lc-wish", "bob", "shutdown_response").len()
            + leader_mail(&env, "lc-wish", "carol", "shutdown_response").len()
            == 2
    });
    // Any leader command takes the answers in.
    let out = env.run(&["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "removed bob's worktree {} (shutdown --remove-worktree)",
            tree("bob").display()
        )) && err.contains("carol's worktree")
            && err.contains("so it is kept")
            && err.contains("`teamctl shutdown carol --remove-worktree --force` discards it"),
        "{out:?}"
    );
    assert!(!tree("bob").exists());
    assert_eq!(
        std::fs::read_to_string(tree("carol").join("draft")).unwrap(),
        "mine\n"
    );
    assert!(tree("dan").is_dir());
    // Said once: the wish is forgotten.
    let config = std::fs::read_to_string(env.team_dir("lc-wish").join("config.json")).unwrap();
    assert!(!config.contains("removeWorktreeOn"), "{config}");
    let out = env.run(&["status"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("worktree"),
        "{out:?}"
    );
    // Killed while its answer is awaited (in a long turn): the wish is dropped, said.
    spawn(
        &env,
        "eve",
        &[
            "--cwd",
            repo.to_str().unwrap(),
            "--worktree",
            "--exec",
            "sleep 30; cat",
        ],
    );
    env.ok(&["send", "eve", "work"]);
    wait_until("eve working", Duration::from_secs(20), || {
        env.member_status("eve") == "working"
    });
    let out = env.run(&["shutdown", "eve", "--remove-worktree", "--no-wait"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("eve: its worktree goes once it stops"),
        "{out:?}"
    );
    let out = env.run(&["kill", "eve"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "eve was killed, not shut down: the removal of its worktree that `shutdown --remove-worktree` awaited is dropped"
        ),
        "{out:?}"
    );
    assert!(tree("eve").is_dir());
    let config = std::fs::read_to_string(env.team_dir("lc-wish").join("config.json")).unwrap();
    assert!(!config.contains("removeWorktreeOn"), "{config}");
    env.ok(&["delete", "--force"]);
}

fn problems(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] == "problem")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// Move every file of `dir` two hours into the past.
fn backdate(dir: &Path) {
    let then = SystemTime::now() - Duration::from_hours(2);
    for (path, _) in crate::common::snapshot(dir) {
        if path.is_file() {
            let f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.set_modified(then).unwrap();
        }
    }
}

/// A new current team (a leader leads one team at a time, so forget the last one).
fn switch_to(env: &TestEnv, team: &str) {
    let _ = std::fs::remove_file(env.home_path().join("current"));
    create(env, team);
}

#[test]
fn doctor_finds_and_fixes_orphans_stale_teams_and_worktrees() {
    let env = TestEnv::with_tmux();
    // A clean home is healthy.
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");

    let repo = repo(&env);
    let r = repo.display().to_string();
    // A stale team: its only teammate stopped (its worktree kept), nothing happened for two
    // hours.
    create(&env, "lc-stale");
    env.ok(&[
        "spawn",
        "old",
        "--backend",
        "process",
        "--cwd",
        &r,
        "--worktree",
        "--exec",
        "cat",
    ]);
    env.ok(&["shutdown", "old"]);
    backdate(&env.team_dir("lc-stale"));

    // An orphaned worker: its team directory was removed by hand.
    switch_to(&env, "lc-gone");
    spawn(&env, "ghost", &["--exec", "cat"]);
    let ghost = worker_pid(&env, "ghost");
    // Once it is idle it writes nothing more, so the directory can go.
    wait_until("ghost idle", LONG, || env.member_status("ghost") == "idle");
    std::fs::remove_dir_all(env.team_dir("lc-gone")).unwrap();
    assert!(alive(ghost));
    // The worker sees its directory go (inotify), lets the removal settle, finds the team
    // gone and makes nothing again. Its log is still open: read it through /proc. (Past the
    // inotify limit it waits on a doorbell and sees nothing, so there is nothing to check.)
    let holds_inotify = std::fs::read_dir(format!("/proc/{ghost}/fd")).is_ok_and(|d| {
        d.flatten().any(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
        })
    });
    if holds_inotify {
        wait_until("ghost to find its team gone", LONG, || {
            std::fs::read_to_string(format!("/proc/{ghost}/fd/1"))
                .is_ok_and(|l| l.contains("the team directory is gone"))
        });
        assert!(
            !env.team_dir("lc-gone").exists(),
            "the worker made its team directory again"
        );
    }

    // A stale worktree (no member) and a stopped teammate's kept worktree.
    switch_to(&env, "lc-main");
    env.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--cwd",
        &r,
        "--worktree",
        "--exec",
        "cat",
    ]);
    env.ok(&["shutdown", "carol"]);
    let stray = env.team_dir("lc-main").join("worktrees/nobody");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "stray",
            stray.to_str().unwrap(),
        ],
    );

    // A team directory without a team file (a crash mid-delete), and a foreign directory
    // that is not named like a team (left alone).
    let half = env.team_dir("lc-half");
    std::fs::create_dir_all(half.join("inboxes/bob")).unwrap();
    let foreign = env.home_path().join("teams/.not-a-team");
    std::fs::create_dir_all(&foreign).unwrap();
    for d in [&half, &foreign] {
        let ok = Command::new("touch")
            .args(["-d", "2 hours ago"])
            .arg(d)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    // An orphaned pane on the private tmux server: a teamctl worker of a team that does not
    // exist ran there (and ended at once; the pane is kept). A pane whose program is not
    // teamctl's is no orphan of teamctl's, however it is tagged (tags.rs).
    env.tmux_ok(&["new-session", "-d", "-s", "planted", "cat"]);
    let pane = env.tmux_ok(&["display-message", "-p", "-t", "planted", "#{pane_id}"]);
    let pane = pane.trim();
    env.tmux_ok(&["set-option", "-p", "-t", pane, "remain-on-exit", "on"]);
    let home = env.home_path().display().to_string();
    env.tmux_ok(&[
        "respawn-pane",
        "-k",
        "-t",
        pane,
        "--",
        crate::common::BIN,
        "worker",
        "--home",
        &home,
        "--id",
        "ghost@nosuchteam",
    ]);
    wait_until("the planted worker ended", Duration::from_secs(20), || {
        env.pane_format(pane, "#{pane_dead}").as_deref() == Some("1")
    });
    env.tmux_ok(&[
        "set-option",
        "-p",
        "-t",
        pane,
        "@teamctl-agent",
        &env.tag("ghost@nosuchteam"),
    ]);

    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = problems(&report).join("\n");
    assert!(found.contains("team lc-stale is stale"), "{found}");
    assert!(
        found.contains(&format!("orphaned worker ghost@lc-gone (pid {ghost})")),
        "{found}"
    );
    assert!(
        found.contains(&format!("orphaned tmux pane {pane}")),
        "{found}"
    );
    assert!(
        found.contains("worktrees/nobody belongs to no member"),
        "{found}"
    );
    assert!(
        found.contains("lc-half is a team directory without a team file"),
        "{found}"
    );
    assert_eq!(problems(&report).len(), 5, "{found}");
    // The kept worktree of a stopped teammate is listed, as a warning.
    let warned = report["findings"].as_array().unwrap().iter().any(|f| {
        f["level"] == "warn"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("carol@lc-main is stopped")
    });
    assert!(warned, "{report:#}");
    // Looking changed nothing.
    assert!(alive(ghost));
    assert!(env.team_dir("lc-stale").is_dir());

    let (code, report) = doctor(&env, &["--fix"]);
    assert_eq!(code, 0, "{report:#}");
    let fixed = report["fixed"].as_array().unwrap().len();
    assert!(fixed >= 5, "{report:#}");
    assert!(!alive(ghost));
    assert!(!env.team_dir("lc-stale").exists());
    assert!(!git(&repo, &["worktree", "list"]).contains("lc-stale"));
    assert!(!half.exists());
    assert!(foreign.is_dir());
    assert!(!stray.exists());
    assert!(!git(&repo, &["worktree", "list"]).contains("nobody"));
    assert_eq!(tagged_panes(&env), 0);
    assert_eq!(env.processes(), Vec::<u32>::new());
    // The team in use is untouched.
    assert!(env.team_dir("lc-main").join("config.json").is_file());

    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");
    // And resume makes carol's worktree again.
    env.ok(&["resume", "carol"]);
    assert!(
        env.team_dir("lc-main")
            .join("worktrees/carol/README")
            .is_file()
    );
    env.ok(&["delete"]);
}

#[test]
fn doctor_works_without_tmux() {
    let env = TestEnv::new();
    let empty = env.work.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let out = env.cmd(&["doctor"]).env("PATH", &empty).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("tmux not found"), "{stdout}");
    assert!(stdout.contains("--backend process"), "{stdout}");
}

#[test]
fn interrupt_while_awaiting_approval_cancels_only_that_turn() {
    let env = TestEnv::new();
    planner(&env, "lc-plan-int");
    env.ok(&["send", "bob", "job"]);
    next_plan(&env, "bob", None);
    let out = env.ok(&["interrupt", "bob"]);
    assert!(out.contains("interrupted"), "{out}");
    wait_until("the notice and idle", LONG, || {
        texts(&leader_mail(&env, "lc-plan-int", "bob", "message"))
            .iter()
            .any(|t| t.contains("interrupted while waiting for plan approval"))
            && env.member_status("bob") == "idle"
    });
    assert!(plans(&env).is_empty());
    // The next message is planned afresh.
    env.ok(&["send", "bob", "next job"]);
    let p = next_plan(&env, "bob", None);
    assert_eq!(p["plan"], "plan for next job round 1 feedback []");
    env.ok(&["shutdown", "bob"]);
}

#[test]
fn doctor_kills_the_pane_of_a_member_that_is_gone() {
    let env = TestEnv::with_tmux();
    create(&env, "lc-doc-tmux");
    env.ok(&["spawn", "keep", "--backend", "tmux", "--exec", "cat"]);
    env.ok(&["spawn", "lost", "--backend", "tmux", "--exec", "cat"]);
    assert_eq!(tagged_panes(&env), 2);
    wait_until("lost idle", LONG, || env.member_status("lost") == "idle");
    // The member disappears from the team file behind teamctl's back.
    let path = env.team_dir("lc-doc-tmux").join("config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["members"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["name"] != "lost");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();

    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = problems(&report).join("\n");
    assert!(
        found.contains("orphaned tmux pane") && found.contains("lost@lc-doc-tmux"),
        "{found}"
    );
    let (code, report) = doctor(&env, &["--fix"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(tagged_panes(&env), 1);
    assert_eq!(env.member_status("keep"), "idle");
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");
    env.ok(&["delete"]);
    assert_eq!(tagged_panes(&env), 0);
}

/// While its plan command runs, `plan approve` says the plan is still being written (it said
/// no plan waits, as if there were nothing to come), `status` says `working (planning)`; once
/// the plan is sent neither says so, and the approval goes in.
#[test]
fn approving_a_plan_still_being_written_says_so() {
    let env = TestEnv::new();
    create(&env, "lc-planning");
    let gate = env.home_path().join("plan-gate");
    assert!(
        Command::new("mkfifo")
            .arg(&gate)
            .status()
            .unwrap()
            .success()
    );
    let plan = format!("cat '{}'", gate.display());
    spawn(
        &env,
        "bob",
        &["--plan-mode-required", "--plan", &plan, "--exec", DO],
    );
    env.ok(&["send", "bob", "job"]);
    wait_until("bob planning", LONG, || env.member("bob")["planning"] == 1);
    for verb in [
        &["plan", "approve", "bob"][..],
        &["plan", "reject", "bob", "--feedback", "no"],
    ] {
        let err = env.fails(verb, 2);
        assert!(
            err.contains("bob is still writing its plan (round 1 of 3)")
                && err.contains("`teamctl wait bob`"),
            "{err}"
        );
    }
    let table = env.ok(&["status"]);
    assert!(table.contains("working (planning)"), "{table}");
    let listed = env.ok(&["plan", "list"]);
    assert!(
        listed.contains("no plans waiting for approval")
            && listed.contains("bob is still writing its plan (round 1 of 3)"),
        "{listed}"
    );
    let err = env.fails(&["wait", "bob", "--timeout", "1"], 1);
    assert!(err.contains("bob (working, writing its plan)"), "{err}");
    let mut console = env.cmd(&["lead"]);
    console.stdin(std::process::Stdio::piped());
    let mut console = crate::view::Follow::start_with(console);
    console.wait_for("bob planning on the status line", |l| {
        l.contains("bob working, planning (job)")
    });
    drop(console.child.stdin.take());
    assert!(console.child.wait().unwrap().success());
    // The plan command reads the gate: writing it lets the plan out.
    std::fs::write(&gate, "the plan\n").unwrap();
    next_plan(&env, "bob", None);
    assert_eq!(env.member_status("bob"), "awaiting_plan_approval");
    assert!(env.member("bob").get("planning").is_none());
    assert!(!env.ok(&["status"]).contains("(planning)"));
    env.ok(&["plan", "approve", "bob"]);
    wait_until("the reply", LONG, || {
        texts(&leader_mail(&env, "lc-planning", "bob", "message"))
            .contains(&"did: the plan\n".to_string())
    });
    wait_until("bob idle", LONG, || env.member_status("bob") == "idle");
    // Nothing planned any more: the plain answer.
    let err = env.fails(&["plan", "approve", "bob"], 2);
    assert!(
        err.contains("bob has no plan waiting for approval"),
        "{err}"
    );
    env.ok(&["shutdown", "bob"]);
}

/// A teammate awaiting plan approval whose live state is removed writes it again at once, as an
/// idle one does: `plan list` shows its plan again and the approval goes in (attacker QA: the
/// state never came back, `plan list` showed nothing, `plan approve` said no plan waited, until
/// a shutdown).
#[test]
fn a_live_state_removed_while_awaiting_approval_is_written_again() {
    let env = TestEnv::new();
    planner(&env, "lc-plan-state");
    env.ok(&["send", "bob", "job"]);
    let p = next_plan(&env, "bob", None);
    let state = env.team_dir("lc-plan-state").join("state").join("bob.json");
    std::fs::remove_file(&state).unwrap();
    wait_until("bob's state written again", LONG, || state.is_file());
    let again = next_plan(&env, "bob", None);
    assert_eq!(again["requestId"], p["requestId"]);
    assert_eq!(env.member_status("bob"), "awaiting_plan_approval");
    env.ok(&["plan", "approve", "bob"]);
    wait_until("the reply", LONG, || {
        texts(&leader_mail(&env, "lc-plan-state", "bob", "message"))
            .contains(&"did: plan for job round 1 feedback []\n".to_string())
    });
    env.ok(&["shutdown", "bob"]);
}

#[test]
fn a_failing_or_empty_plan_fails_the_turn_without_asking() {
    let env = TestEnv::new();
    create(&env, "lc-badplan");
    spawn(
        &env,
        "quiet",
        &["--plan-mode-required", "--plan", "true", "--exec", DO],
    );
    spawn(
        &env,
        "broken",
        &[
            "--plan-mode-required",
            "--plan",
            "echo oops >&2; exit 3",
            "--exec",
            DO,
        ],
    );
    env.ok(&["send", "quiet", "job"]);
    env.ok(&["send", "broken", "job"]);
    wait_until("both notices", LONG, || {
        let q = texts(&leader_mail(&env, "lc-badplan", "quiet", "message"));
        let b = texts(&leader_mail(&env, "lc-badplan", "broken", "message"));
        q.iter().any(|t| t.contains("printed no plan"))
            && b.iter()
                .any(|t| t.contains("plan command failed") && t.contains("oops"))
    });
    assert!(
        env.inbox("lc-badplan", "team-lead")
            .iter()
            .all(|m| m["type"] != "plan_approval_request")
    );
    for n in ["quiet", "broken"] {
        wait_until("idle", LONG, || env.member_status(n) == "idle");
    }
    // `ask` fails with the notice (exit 1, stderr), as with any failed turn: a script must
    // not take it for the answer (new-user QA: exit 0, the notice on stdout).
    for (n, notice) in [
        ("quiet", "quiet's plan command printed no plan"),
        (
            "broken",
            "broken's plan command failed (exit status 3: oops)",
        ),
    ] {
        let out = env.run(&["ask", n, "another job", "--timeout", "30"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(out.stdout.is_empty() && err.contains(notice), "{out:?}");
    }
    env.ok(&["shutdown", "--all"]);
}

/// `create T` beside a leftover `teams/T` (no team file) makes `T-2`, as for a taken name
/// (SPEC), and says on stderr that T is a leftover, what it holds and the command that removes
/// it; the leftover is left as it was. (Review: it said nothing, and sends to T then failed on
/// the leftover.)
#[test]
fn create_beside_a_leftover_names_it_and_the_way_to_remove_it() {
    use std::os::unix::fs::DirBuilderExt;
    let env = TestEnv::new();
    let dir = env.team_dir("lc-old");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir.join("inboxes/bob"))
        .unwrap();
    let line = |id: &str| {
        serde_json::json!({
            "v": 1, "id": id, "type": "message", "from": "team-lead", "to": "bob",
            "text": "hi", "summary": "hi", "timestamp": "2026-11-30T14:10:38.123Z"
        })
        .to_string()
    };
    std::fs::write(
        dir.join("inboxes/bob/inbox.jsonl"),
        format!("{}\n{}\n", line("m-one"), line("m-two")),
    )
    .unwrap();
    let before = crate::common::snapshot(&dir);

    let out = env.run(&["create", "lc-old"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "lc-old-2\n");
    assert!(
        err.contains("created \"lc-old-2\": \"lc-old\" is taken by a leftover, not a team"),
        "{err}"
    );
    assert!(err.contains("2 messages in the inbox of bob (2)"), "{err}");
    assert!(
        err.contains("`teamctl delete --force --team lc-old` removes it"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        before,
        crate::common::snapshot(&dir),
        "the leftover is untouched"
    );

    // The way out it names works, and the name is free again.
    env.ok(&["delete", "--force", "--team", "lc-old"]);
    assert!(!dir.exists());
    env.ok(&["delete"]);
    assert_eq!(env.ok(&["create", "lc-old"]), "lc-old\n");
}

/// The leftover of a team: its directory with an inbox of mail but no team file (an `rm -rf`
/// racing sends, or a crash part-way through a delete), made by hand. `status` and `send`
/// name that state instead of "no team selected" / "no team", and change nothing; `doctor`
/// reports it with the mail it holds (QA: it reported nothing); `doctor --fix` keeps it for
/// that mail; `delete` refuses without `--force`, and `delete --force` removes it, saying how
/// many messages went with it.
#[test]
fn a_team_directory_without_its_team_file_is_reported_and_its_mail_removed_only_when_asked() {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let env = TestEnv::new();
    create(&env, "lc-left");
    // The leftover shape, by hand: only an inbox with two messages is left.
    let dir = env.team_dir("lc-left");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir.join("inboxes/bob"))
        .unwrap();
    let line = |id: &str, text: &str| {
        serde_json::json!({
            "v": 1, "id": id, "type": "message", "from": "team-lead", "to": "bob",
            "text": text, "summary": text, "timestamp": "2026-11-30T14:10:38.123Z"
        })
        .to_string()
    };
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(dir.join("inboxes/bob/inbox.jsonl"))
        .unwrap();
    use std::io::Write;
    writeln!(f, "{}\n{}", line("m-one", "first"), line("m-two", "second")).unwrap();
    drop(f);
    let before = crate::common::snapshot(env.home_path());

    // The current team (`status` alone) and the team named: the state, what it holds, the way out.
    for args in [
        &["status"][..],
        &["status", "--team", "lc-left"],
        &["send", "--team", "lc-left", "bob", "hi"],
        &["send", "bob", "hi"],
    ] {
        let err = env.fails(args, 1);
        assert!(
            err.contains("\"lc-left\" has no team file"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("2 messages in the inbox of bob (2)"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("teamctl delete --force --team lc-left"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));

    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["message"]
                .as_str()
                .unwrap()
                .contains("lc-left is a team directory without a team file")
        })
        .collect();
    assert_eq!(found.len(), 1, "{report:#}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("2 messages in the inbox of bob (2), all unread"),
        "{message}"
    );
    assert!(
        found[0]["fix"].is_null(),
        "--fix must not throw mail away: {report:#}"
    );
    let hint = found[0]["hint"].as_str().unwrap();
    assert!(
        hint.contains("teamctl delete --force --team lc-left"),
        "{hint}"
    );

    // `--fix` keeps it for its mail; `delete` without `--force` too. The problem left after
    // `--fix` says what to do instead, not `--fix` again (QA 19).
    let (code, report) = doctor(&env, &["--fix"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    let left: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "teams" && f["level"] == "problem")
        .collect();
    assert_eq!(left.len(), 1, "{report:#}");
    let hint = left[0]["hint"].as_str().unwrap();
    assert!(!hint.contains("doctor --fix"), "{hint}");
    assert!(
        hint.contains("`teamctl delete --force --team lc-left` drops it with those messages"),
        "{hint}"
    );
    let err = env.fails(&["delete", "--team", "lc-left"], 1);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(before, crate::common::snapshot(env.home_path()));

    // `delete --force` (of the current team, unnamed) removes it and says what went with it.
    let out = env.ok(&["delete", "--force"]);
    assert!(
        out.contains(
            "deleted what was left of team lc-left (no team file), with the 2 messages in it"
        ),
        "{out}"
    );
    assert!(!dir.exists());
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");
    let err = env.fails(&["status"], 2);
    assert!(err.contains("no team selected"), "{err}");

    // Without mail: `delete` alone removes it (nothing in it is lost).
    let empty = env.team_dir("lc-empty");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(empty.join("inboxes/amy"))
        .unwrap();
    let err = env.fails(&["status", "--team", "lc-empty"], 1);
    assert!(err.contains("no messages"), "{err}");
    assert!(
        err.contains("`teamctl delete --team lc-empty` removes it"),
        "{err}"
    );
    let out = env.ok(&["delete", "--team", "lc-empty"]);
    assert!(
        out.contains("deleted what was left of team lc-empty"),
        "{out}"
    );
    assert!(!empty.exists());
}

/// A team whose directory was removed by hand leaves its tmux session: the leader console's
/// pane (dead, or still running) carries no agent tag, so `doctor --fix` used to close the
/// teammates' panes and keep the session for good (QA). Now it closes the session as `delete`
/// would: the whole of it while every pane is teamctl's, else only teamctl's panes, the
/// user's own kept in a session renamed `-kept`.
#[test]
fn doctor_closes_the_session_of_a_team_whose_directory_was_removed() {
    let env = TestEnv::with_tmux();
    let session_of = |team: &str| {
        create(&env, team);
        env.ok(&["spawn", "bob", "--backend", "tmux", "--exec", "cat"]);
        wait_until("bob idle", LONG, || env.member_status("bob") == "idle");
        let _ = std::fs::remove_file(env.home_path().join("current"));
        env.session(team)
    };
    let all_ours = session_of("lc-sess-a");
    let with_mine = session_of("lc-sess-b");
    let mine = env
        .tmux_ok(&[
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            &format!("={with_mine}:"),
            "sleep 600",
        ])
        .trim()
        .to_string();
    for team in ["lc-sess-a", "lc-sess-b"] {
        std::fs::remove_dir_all(env.team_dir(team)).unwrap();
    }
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = problems(&report).join("\n");
    for (s, team) in [(&all_ours, "lc-sess-a"), (&with_mine, "lc-sess-b")] {
        assert!(
            found.contains(&format!("tmux session {s} is team {team}'s")),
            "{found}"
        );
    }
    let (code, report) = doctor(&env, &["--fix"]);
    assert_eq!(code, 0, "{report:#}");
    let has = |s: &str| {
        env.tmux(&["has-session", "-t", &format!("={s}")])
            .status
            .success()
    };
    assert!(!has(&all_ours), "{report:#}");
    assert!(!has(&with_mine), "{report:#}");
    let kept = format!("{with_mine}-kept");
    let left = env.tmux_ok(&[
        "list-panes",
        "-s",
        "-t",
        &format!("={kept}:"),
        "-F",
        "#{pane_id}",
    ]);
    assert_eq!(left.trim(), mine, "only the user's pane stays: {report:#}");
    assert_eq!(tagged_panes(&env), 0);
    wait_until("no console left", LONG, || env.consoles().is_empty());
    // The user's pane runs on (its process has the home in the environment tmux gave it).
    let pid: u32 = env
        .pane_format(&mine, "#{pane_pid}")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(env.processes(), vec![pid]);
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");
}

/// A team's files removed by hand while its workers run (QA 19). Its team file alone: `status`
/// and `send` say the workers still run (no crash leaves them so) and that `delete` ends them,
/// and the leader console says the team file is gone, not that the team was deleted. Its whole
/// directory: the team chosen (the one created last, `--team` or `TEAMCTL_TEAM`) is said to
/// exist no longer, with its running workers and `doctor --fix`, not "no team selected"; once
/// `doctor --fix` ended them and cleared the record of the team created last, no team is
/// selected. A team left over with
/// one message is deleted "with the one message in it".
#[test]
fn a_team_whose_files_were_removed_while_its_workers_run_is_said_so() {
    use std::process::Stdio;
    let env = TestEnv::new();
    create(&env, "alpha");
    spawn(&env, "bob", &["--exec", "cat"]);
    env.ok(&["send", "bob", "hi"]);
    let dir = env.team_dir("alpha");
    // The console, its output in a file: it has started once its banner is there.
    let banner = env.work.path().join("lead.out");
    let mut lead = env
        .cmd(&["lead"])
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&banner).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the console started", LONG, || {
        std::fs::read_to_string(&banner).is_ok_and(|s| s.contains("teamctl lead:"))
    });
    std::fs::remove_file(dir.join("config.json")).unwrap();
    for args in [&["status"][..], &["send", "bob", "again"]] {
        let err = env.fails(args, 1);
        assert!(err.contains("has no team file"), "{args:?}: {err}");
        assert!(err.contains("bob's worker still runs"), "{args:?}: {err}");
        assert!(err.contains("ends that worker"), "{args:?}: {err}");
        assert!(!err.contains("crash"), "{args:?}: {err}");
    }
    wait_until("the console ended", LONG, || {
        lead.try_wait().unwrap().is_some()
    });
    let out = lead.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("team alpha's team file"), "{said}");
    assert!(!said.contains("was deleted"), "{said}");

    std::fs::remove_dir_all(&dir).unwrap();
    let err = env.fails(&["status"], 1);
    assert!(
        err.contains("the team you created last, \"alpha\", no longer exists"),
        "{err}"
    );
    assert!(err.contains("bob's worker still runs"), "{err}");
    assert!(err.contains("`teamctl doctor --fix` ends it"), "{err}");
    let err = env.fails(&["--team", "alpha", "status"], 1);
    assert!(err.contains("team \"alpha\" no longer exists"), "{err}");
    let out = env
        .cmd(&["status"])
        .env("TEAMCTL_TEAM", "alpha")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("team \"alpha\" no longer exists"), "{err}");
    assert!(err.contains("bob's worker still runs"), "{err}");
    // `doctor --fix` ends them, and clears the record of the team created last, which names
    // a team that no longer exists: no team is selected then.
    let fixed = env.ok(&["doctor", "--fix"]);
    assert!(fixed.contains("ended orphaned worker bob@alpha"), "{fixed}");
    assert!(
        fixed.contains("cleared the current-team record: it named team alpha"),
        "{fixed}"
    );
    let err = env.fails(&["status"], 2);
    assert!(err.contains("no team selected"), "{err}");

    // A leftover with one message: deleted with "the one message".
    create(&env, "lone");
    std::fs::remove_file(env.team_dir("lone").join("config.json")).unwrap();
    std::fs::remove_dir_all(env.team_dir("lone").join("inboxes")).unwrap();
    std::fs::create_dir_all(env.team_dir("lone").join("inboxes/bob")).unwrap();
    let line = serde_json::json!({
        "v": 1, "id": "m-one", "type": "message", "from": "team-lead", "to": "bob",
        "text": "only", "summary": "only", "timestamp": "2026-11-30T14:10:38.123Z"
    });
    std::fs::write(
        env.team_dir("lone").join("inboxes/bob/inbox.jsonl"),
        format!("{line}\n"),
    )
    .unwrap();
    let out = env.ok(&["delete", "--force", "--team", "lone"]);
    assert!(out.contains("with the one message in it"), "{out}");
}

/// The record of the team created last (`$TEAMCTL_HOME/current`) naming a team whose directory
/// is gone: `doctor` reports it (a warning: nothing runs), `doctor --fix` clears it and says
/// so, and commands then say no team is selected, as with no team created. (QA 20: every
/// command sent the user to `doctor --fix`, which left the record, for good.) A record naming
/// a team that exists, or one whose directory is still there (the leftover check's), stays.
#[test]
fn doctor_fix_clears_the_record_of_a_current_team_that_no_longer_exists() {
    let env = TestEnv::new();
    create(&env, "gone");
    std::fs::remove_dir_all(env.team_dir("gone")).unwrap();
    let err = env.fails(&["status"], 1);
    assert!(err.contains("`teamctl doctor --fix`"), "{err}");

    let out = env.run(&["--json", "doctor"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "current")
        .unwrap_or_else(|| panic!("no finding: {report:#}"))
        .clone();
    assert_eq!(finding["level"], "warn");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("names team gone, which no longer exists"),
        "{finding:#}"
    );
    assert!(
        finding["hint"]
            .as_str()
            .unwrap()
            .contains("`teamctl doctor --fix` clears it"),
        "{finding:#}"
    );
    assert!(
        env.home_path().join("current").exists(),
        "doctor only looks"
    );

    let fixed = env.ok(&["doctor", "--fix"]);
    assert!(
        fixed.contains("cleared the current-team record: it named team gone"),
        "{fixed}"
    );
    assert!(!env.home_path().join("current").exists());
    let err = env.fails(&["status"], 2);
    assert!(err.contains("no team selected"), "{err}");
    let out = env.ok(&["doctor"]);
    assert!(!out.contains("current-team"), "{out}");

    // A team that exists, and a directory left without its team file, keep the record.
    create(&env, "here");
    env.ok(&["doctor", "--fix"]);
    assert_eq!(
        std::fs::read_to_string(env.home_path().join("current")).unwrap(),
        "here"
    );
    std::fs::remove_file(env.team_dir("here").join("config.json")).unwrap();
    let out = env.run(&["doctor"]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("current-team"),
        "{out:?}"
    );
}

/// A team directory without its team file is a team being made only while `create`'s lock
/// is held (`create` makes the directory and the file under it): `doctor` leaves a young one
/// alone then, and reports it, with the way out, as soon as no `create` runs. (New-user QA:
/// `doctor` said "ok" for such a directory for its first minute, nothing making it.)
#[test]
fn doctor_reports_a_new_directory_without_a_team_file_unless_a_create_holds_the_lock() {
    let env = TestEnv::new();
    create(&env, "lc-base");
    let dir = env.team_dir("lc-young");
    std::fs::create_dir(&dir).unwrap();
    let about = |report: &Value| -> Vec<String> {
        problems(report)
            .into_iter()
            .filter(|m| m.contains("lc-young is a team directory without a team file"))
            .collect()
    };

    // No `create` runs: a leftover, however young.
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = about(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(
        found[0].contains("left over from a crash or an interrupted delete"),
        "{}",
        found[0]
    );

    // A `create` holds the lock (this test, as `create` does): being made, not reported.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(env.home_path().join("create.lock"))
        .unwrap();
    lock.lock().unwrap();
    let (code, report) = doctor(&env, &[]);
    assert!(about(&report).is_empty(), "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    drop(lock);
    assert!(dir.is_dir(), "looking removed nothing");
}

/// One home removed (`rm -rf`) while its teammates run in tmux: `doctor --fix` from another
/// home ended its orphaned workers but left their team sessions on the server for good, empty
/// or with dead panes (new-user QA). Now it closes such a session too, as `delete` would: the
/// whole of it while everything in it is teamctl's, else only teamctl's panes (the user's own
/// kept, in a session renamed `-kept`). A third home's session on the same server, whose home
/// is there, is left alone.
#[test]
fn doctor_from_another_home_closes_the_sessions_of_a_removed_home() {
    let gone = TestEnv::with_tmux();
    let server = gone.socket.clone().unwrap();
    let session_of = |env: &TestEnv, team: &str| {
        create(env, team);
        env.ok(&["spawn", "bob", "--backend", "tmux", "--exec", "cat"]);
        wait_until("bob idle", LONG, || env.member_status("bob") == "idle");
        // The next `create` makes a second team of this home.
        let _ = std::fs::remove_file(env.home_path().join("current"));
        env.session(team)
    };
    let all_ours = session_of(&gone, "gh-a");
    let with_mine = session_of(&gone, "gh-b");
    let mine = gone
        .tmux_ok(&[
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            &format!("={with_mine}:"),
            "sleep 600",
        ])
        .trim()
        .to_string();
    // A home that is still there, on the same server.
    let mut kept_home = TestEnv::new();
    kept_home.socket = Some(server.clone());
    kept_home
        .env
        .push(("TEAMCTL_TMUX_SOCKET".into(), server.clone()));
    let alive = session_of(&kept_home, "gh-c");
    // No other test's `doctor` runs while the removed home's workers do (`GONE_HOMES`); this
    // one's run without `TestEnv::run`, which would wait for the lock held here.
    let alone = crate::common::GONE_HOMES
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::fs::remove_dir_all(gone.home_path()).unwrap();
    // Another home, on a server of its own: the removed home's workers say where theirs is.
    let other = TestEnv::new();
    let doctor = |env: &TestEnv, args: &[&str]| {
        let mut all = vec!["--json", "doctor"];
        all.extend_from_slice(args);
        let out = env.cmd(&all).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code().unwrap(), v)
    };
    let (code, report) = doctor(&other, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = problems(&report).join("\n");
    for (s, team) in [(&all_ours, "gh-a"), (&with_mine, "gh-b")] {
        assert!(
            found.contains(&format!(
                "tmux session {s} is team {team}'s of home {}, which no longer exists",
                gone.home_path().display()
            )),
            "{found}"
        );
    }
    assert!(!found.contains(&alive), "{found}");
    let (code, report) = doctor(&other, &["--fix"]);
    assert_eq!(code, 0, "{report:#}");
    drop(alone);
    let has = |s: &str| {
        gone.tmux(&["has-session", "-t", &format!("={s}")])
            .status
            .success()
    };
    assert!(!has(&all_ours), "{report:#}");
    assert!(!has(&with_mine), "{report:#}");
    let left = gone.tmux_ok(&[
        "list-panes",
        "-s",
        "-t",
        &format!("={with_mine}-kept:"),
        "-F",
        "#{pane_id}",
    ]);
    assert_eq!(left.trim(), mine, "only the user's pane stays: {report:#}");
    // Nothing of the removed home runs but the user's pane (the home is in the environment
    // tmux gave it).
    let pid: u32 = gone
        .pane_format(&mine, "#{pane_pid}")
        .unwrap()
        .parse()
        .unwrap();
    // (The other home's worker is counted too: it has the removed home in the environment
    // it got from the tmux server that home's first command started.)
    let theirs = kept_home.processes();
    let left: Vec<u32> = gone
        .processes()
        .into_iter()
        .filter(|p| !theirs.contains(p))
        .collect();
    assert_eq!(left, vec![pid], "{}", crate::common::describe(&left));
    // The home that is there keeps its session and its teammate.
    assert!(has(&alive), "{report:#}");
    assert!(
        kept_home
            .ok(&["--team", "gh-c", "--json", "status"])
            .contains("\"idle\"")
    );
    let (code, report) = doctor(&other, &[]);
    assert_eq!(code, 0, "{report:#}");
}

/// `status` taken again and again while every teammate ends gracefully never shows one as
/// dead: the files of a member judged dead are read again after the pane check, since read
/// before it they can predate the worker writing `stopped` and exiting (new-user QA saw
/// `dead` flash during `shutdown --all`, which is what the product must never mix up).
#[test]
fn graceful_shutdown_never_shows_dead() {
    let env = TestEnv::with_tmux();
    create(&env, "lc-nodead");
    let names: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
    for n in &names {
        env.ok(&["spawn", n, "--backend", "tmux", "--exec", "cat"]);
    }
    let mut looks = 0;
    for round in 0..12 {
        if round > 0 {
            env.ok(&["resume"]);
        }
        wait_until("every teammate idle", LONG, || {
            let st = env.status();
            st["members"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["name"] != "team-lead")
                .all(|m| m["status"] == "idle")
        });
        let mut down = env
            .cmd(&["shutdown", "--all"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let ended = loop {
            let ended = down.try_wait().unwrap();
            let st = env.status();
            looks += 1;
            let dead: Vec<&Value> = st["members"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["status"] == "dead")
                .collect();
            assert!(dead.is_empty(), "round {round}: {dead:#?}");
            if let Some(ended) = ended {
                break ended;
            }
        };
        assert!(ended.success(), "round {round}");
        for n in &names {
            assert_eq!(env.member_status(n), "stopped", "round {round}");
        }
    }
    // The table was looked at while teammates ended, not only before and after.
    assert!(looks > 24, "{looks} looks");
    assert_eq!(env.processes(), Vec::<u32>::new());
}
