//! End-to-end tests of the shared task list (SPEC section 9) on the process backend: racing
//! claimers, blockers, auto-claim teammates draining a queue, a killed teammate's task handed
//! back, assignment, and the bad-input table (exit 2, `tasks.json` unchanged byte for byte).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{TestEnv, wait_until};
use serde_json::Value;

const LONG: Duration = Duration::from_mins(1);

fn tasks(env: &TestEnv) -> Vec<Value> {
    let out = env.ok(&["--json", "task", "list"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["tasks"].as_array().unwrap().clone()
}

fn task(env: &TestEnv, id: u64) -> Value {
    let out = env.ok(&["--json", "task", "show", &id.to_string()]);
    serde_json::from_str(&out).unwrap()
}

fn spawn(env: &TestEnv, name: &str, exec: &str, auto_claim: bool) {
    let mut args = vec!["spawn", name, "--exec", exec, "--backend", "process"];
    if auto_claim {
        args.push("--auto-claim");
    }
    env.ok(&args);
}

/// Claim as `who`; `Some(id)` on exit 0, `None` on exit 1 (nothing claimable).
fn claim(env: &TestEnv, who: &str, id: Option<u64>) -> Option<u64> {
    let id = id.map(|i| i.to_string());
    let mut args = vec!["--json", "--as", who, "task", "claim"];
    if let Some(i) = &id {
        args.push(i);
    }
    let out = env.run(&args);
    match out.status.code() {
        Some(0) => {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["owner"], who);
            assert_eq!(v["status"], "in_progress");
            Some(v["id"].as_u64().unwrap())
        }
        Some(1) => None,
        other => panic!(
            "claim as {who}: exit {other:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn eight_processes_race_for_two_hundred_tasks_and_each_is_claimed_once() {
    let env = TestEnv::new();
    env.ok(&["create", "race"]);
    let names: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
    for n in &names {
        spawn(&env, n, "true", false);
    }
    for i in 1..=200 {
        env.ok(&["task", "add", &format!("job {i}")]);
    }
    let got: BTreeMap<String, Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| {
                let env = &env;
                s.spawn(move || {
                    let mut mine = Vec::new();
                    while let Some(id) = claim(env, n, None) {
                        mine.push(id);
                    }
                    (n.clone(), mine)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = got.values().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (1..=200).collect::<Vec<u64>>(),
        "lost or doubled claims"
    );
    // The file agrees with what each claimer was told.
    for t in tasks(&env) {
        let id = t["id"].as_u64().unwrap();
        assert_eq!(t["status"], "in_progress");
        let owner = t["owner"].as_str().unwrap();
        assert!(got[owner].contains(&id), "task {id} owned by {owner}");
    }
    // Claims were really spread over the racers (each claimed at least once).
    assert!(
        got.values().filter(|v| !v.is_empty()).count() >= 2,
        "{got:?}"
    );
}

#[test]
fn a_chain_is_claimed_in_order_and_never_early() {
    let env = TestEnv::new();
    env.ok(&["create", "chain"]);
    env.ok(&["task", "add", "one"]);
    env.ok(&["task", "add", "two", "--blocked-by", "1"]);
    env.ok(&["task", "add", "three", "--blocked-by", "2"]);
    let lead = "team-lead";
    for early in [2, 3] {
        let err = env.fails(&["task", "claim", &early.to_string()], 2);
        assert!(err.contains("blocked by"), "{err}");
    }
    assert_eq!(claim(&env, lead, None), Some(1));
    assert_eq!(claim(&env, lead, None), None);
    env.ok(&["task", "done", "1"]);
    env.fails(&["task", "claim", "3"], 2);
    assert_eq!(claim(&env, lead, None), Some(2));
    assert_eq!(claim(&env, lead, None), None);
    env.ok(&["task", "update", "2", "--status", "failed"]);
    // A failed blocker does not unblock.
    assert_eq!(claim(&env, lead, None), None);
    env.ok(&["task", "done", "2", "--result", "fixed by hand"]);
    assert_eq!(claim(&env, lead, None), Some(3));
    assert_eq!(claim(&env, lead, None), None);
    assert_eq!(task(&env, 2)["result"], "fixed by hand");
    assert_eq!(task(&env, 3)["blockedBy"], serde_json::json!([2]));
    assert_eq!(task(&env, 1)["blocks"], serde_json::json!([2]));
}

#[test]
fn four_auto_claim_teammates_drain_forty_tasks() {
    let env = TestEnv::new();
    env.ok(&["create", "drain"]);
    let ran = env.work.path().join("ran.txt");
    // A gate task held by the leader keeps the forty closed until every teammate is idle.
    env.ok(&["task", "add", "gate", "--owner", "team-lead"]);
    for i in 1..=40 {
        env.ok(&[
            "task",
            "add",
            &format!("job {i}"),
            "-d",
            &format!("details {i}"),
            "--blocked-by",
            "1",
        ]);
    }
    let agent = format!(
        r#"echo "$TEAMCTL_TASK_ID" >> "{}"; case "$TEAMCTL_TASK_ID" in 13) echo "boom $TEAMCTL_TASK_ID" >&2; exit 3;; esac; echo "done $TEAMCTL_TASK_ID"; tail -n 1"#,
        ran.display()
    );
    let names = ["a1", "a2", "a3", "a4"];
    for n in names {
        spawn(&env, n, &agent, true);
    }
    wait_until("the teammates to be idle", LONG, || {
        names.iter().all(|n| env.member_status(n) == "idle")
    });
    assert_eq!(
        tasks(&env)
            .iter()
            .filter(|t| t["status"] == "pending")
            .count(),
        41
    );
    env.ok(&["task", "done", "1"]);
    wait_until("every task to be finished", LONG, || {
        tasks(&env)
            .iter()
            .all(|t| t["status"] == "completed" || t["status"] == "failed")
    });
    let mut args = vec!["wait", "--timeout", "60"];
    args.extend(names);
    env.ok(&args);
    for n in names {
        assert_eq!(env.member_status(n), "idle");
    }
    // Each task's agent ran exactly once.
    let mut seen: Vec<u64> = std::fs::read_to_string(&ran)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (2..=41).collect::<Vec<u64>>());
    for t in tasks(&env).iter().skip(1) {
        let id = t["id"].as_u64().unwrap();
        assert!(names.contains(&t["owner"].as_str().unwrap()), "{t}");
        let result = t["result"].as_str().unwrap_or("");
        if id == 13 {
            assert_eq!(t["status"], "failed", "{t}");
            assert!(
                result.contains("exit status 3") && result.contains("boom 13"),
                "{t}"
            );
        } else {
            assert_eq!(t["status"], "completed", "{t}");
            // stdout is the result; the description reached the agent on stdin.
            let want = format!("done {id}\ndetails {}", id - 1);
            assert_eq!(result, want, "{t}");
        }
    }
    // The leader heard of the tasks in idle notifications, one per busy stretch, not one
    // message per task.
    let idle: Vec<String> = env
        .inbox("drain", "team-lead")
        .iter()
        .filter(|m| m["type"] == "idle_notification")
        .map(|m| m["summary"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(!idle.is_empty() && idle.len() <= 4, "{idle:?}");
    let reported: u64 = idle
        .iter()
        .map(|s| {
            if s.starts_with("task #") {
                1
            } else {
                s.split_whitespace().next().unwrap().parse::<u64>().unwrap()
            }
        })
        .sum();
    assert_eq!(reported, 40, "{idle:?}");
    assert!(
        idle.iter()
            .any(|s| s.contains("#13") && s.contains("boom 13")),
        "{idle:?}"
    );
}

#[test]
fn a_killed_teammates_task_goes_back_and_another_completes_it() {
    let env = TestEnv::new();
    env.ok(&["create", "handback"]);
    let started = env.work.path().join("started");
    let slow = format!(r#"touch "{}"; exec sleep 120"#, started.display());
    spawn(&env, "slow", &slow, true);
    env.ok(&["task", "add", "long job"]);
    wait_until("slow to start the task", LONG, || started.exists());
    let t = task(&env, 1);
    assert_eq!(
        (t["status"].as_str(), t["owner"].as_str()),
        (Some("in_progress"), Some("slow"))
    );
    wait_until("status to show the current task", LONG, || {
        env.member("slow")["currentTask"] == 1
    });
    assert!(env.ok(&["status"]).contains("task #1"));
    env.ok(&["kill", "slow"]);
    let t = task(&env, 1);
    assert_eq!(t["status"], "pending", "{t}");
    assert!(t["owner"].is_null(), "{t}");
    spawn(&env, "fast", "echo finished $TEAMCTL_TASK_ID", true);
    wait_until("fast to complete the task", LONG, || {
        task(&env, 1)["status"] == "completed"
    });
    let t = task(&env, 1);
    assert_eq!(t["owner"], "fast");
    assert_eq!(t["result"], "finished 1");
}

#[test]
fn bad_input_exits_2_and_leaves_the_task_list_as_it_was() {
    let env = TestEnv::new();
    env.ok(&["create", "bad"]);
    spawn(&env, "bob", "true", false);
    env.ok(&["task", "add", "one"]);
    env.ok(&["task", "add", "two", "--blocked-by", "1"]);
    env.ok(&["task", "add", "three", "--blocked-by", "2"]);
    assert_eq!(claim(&env, "team-lead", Some(1)), Some(1));
    let file = env.team_dir("bad").join("tasks.json");
    let before = std::fs::read(&file).unwrap();
    let bob_inbox = env.inbox("bad", "bob").len();
    let table: &[&[&str]] = &[
        &["task", "show", "99"],
        &["task", "claim", "99"],
        &["task", "done", "99"],
        &["task", "update", "99", "--status", "failed"],
        &["task", "claim", "abc"],
        &["task", "done", "x1"],
        &["task", "show", "--", "-1"],
        &["task", "update", "0", "--status", "pending"],
        &["task", "add", "four", "--blocked-by", "99"],
        &["task", "add", "four", "--blocked-by", "1,nope"],
        &["task", "add", "four", "--blocked-by", "4"],
        &["task", "update", "1", "--blocked-by", "3"],
        &["task", "update", "1", "--blocked-by", "2"],
        &["task", "update", "2", "--blocked-by", "2"],
        &["--as", "bob", "task", "claim", "2"],
        &["--as", "bob", "task", "claim", "1"],
        &["task", "update", "2", "--status", "finito"],
        &["task", "update", "2", "--owner", "nobody"],
        &["task", "update", "2", "--owner", "bob", "--status", "nah"],
        &["task", "add", "four", "--owner", "nobody"],
        &["task", "add", "four", "--owner", "../x"],
        &["task", "add", "   "],
        &["task", "update", "2"],
        &["--as", "stranger", "task", "claim"],
    ];
    for args in table {
        let err = env.fails(args, 2);
        let line = err.trim();
        assert!(
            !line.is_empty() && !line.contains('\n'),
            "{args:?}: {err:?}"
        );
        assert!(!line.contains("panicked"), "{args:?}: {err}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            before,
            "{args:?} changed tasks.json"
        );
    }
    assert_eq!(
        env.inbox("bad", "bob").len(),
        bob_inbox,
        "bob was told something"
    );
    // A damaged file is a clear error, not a panic, and is left for the user to fix.
    std::fs::write(&file, b"{\"nextId\": 2, \"tasks\": [oops").unwrap();
    let err = env.fails(&["task", "list"], 1);
    assert!(err.contains("damaged"), "{err}");
    env.fails(&["task", "add", "x"], 1);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"{\"nextId\": 2, \"tasks\": [oops"
    );
}

#[test]
fn an_owner_gets_a_task_assignment_and_runs_it() {
    let env = TestEnv::new();
    env.ok(&["create", "assign"]);
    spawn(
        &env,
        "bob",
        r#"echo "did $TEAMCTL_TASK_ID: $TEAMCTL_MESSAGE""#,
        false,
    );
    env.ok(&[
        "task",
        "add",
        "write report",
        "-d",
        "about the auth flow",
        "--owner",
        "bob",
    ]);
    let inbox = env.inbox("assign", "bob");
    let a = inbox
        .iter()
        .find(|m| m["type"] == "task_assignment")
        .expect("a task_assignment in bob's inbox");
    assert_eq!(
        (a["taskId"].as_u64(), a["subject"].as_str()),
        (Some(1), Some("write report"))
    );
    assert_eq!(a["from"], "team-lead");
    wait_until("bob to complete task 1", LONG, || {
        task(&env, 1)["status"] == "completed"
    });
    let t = task(&env, 1);
    assert_eq!(t["owner"], "bob");
    assert_eq!(
        t["result"],
        "did 1: Task #1: write report\n\nabout the auth flow"
    );
    // An assigned task that is blocked waits, and starts when its blocker is completed.
    env.ok(&["task", "add", "gate"]);
    env.ok(&[
        "task",
        "add",
        "follow-up",
        "--owner",
        "bob",
        "--blocked-by",
        "2",
    ]);
    env.ok(&["wait", "bob", "--timeout", "60"]);
    let t = task(&env, 3);
    assert_eq!(
        (t["status"].as_str(), t["owner"].as_str()),
        (Some("pending"), Some("bob"))
    );
    env.ok(&["task", "done", "2"]);
    wait_until("bob to complete task 3", LONG, || {
        task(&env, 3)["status"] == "completed"
    });
    // Reassigning tells the new owner.
    spawn(&env, "carol", "echo carol did it", false);
    env.ok(&["task", "add", "spare"]);
    env.ok(&["task", "update", "4", "--owner", "carol"]);
    wait_until("carol to complete task 4", LONG, || {
        task(&env, 4)["status"] == "completed"
    });
    assert_eq!(task(&env, 4)["result"], "carol did it");
}

/// A task the leader gave bob, blocked by one an auto-claim teammate completes: bob's
/// assignment comes from the leader, and so bob's result goes to the leader, not to the
/// teammate that happened to complete the blocker (new-user QA: the reviewer's review went to
/// the coder and cost it a model turn).
#[test]
fn an_unblocked_tasks_result_goes_to_whoever_assigned_it() {
    let env = TestEnv::new();
    env.ok(&["create", "unblock"]);
    spawn(
        &env,
        "bob",
        r#"echo "bob reviewed $TEAMCTL_TASK_ID""#,
        false,
    );
    env.ok(&["task", "add", "build"]);
    env.ok(&[
        "task",
        "add",
        "review",
        "--owner",
        "bob",
        "--blocked-by",
        "1",
    ]);
    spawn(&env, "alice", "echo built", true);
    wait_until("bob to complete task 2", LONG, || {
        task(&env, 2)["status"] == "completed"
    });
    assert_eq!(task(&env, 1)["owner"], "alice");
    assert_eq!(task(&env, 2)["assignedBy"], "team-lead");
    let from_bob = |inbox: &str| -> Vec<String> {
        env.inbox("unblock", inbox)
            .iter()
            .filter(|m| m["from"] == "bob" && m["type"] == "message")
            .map(|m| m["text"].as_str().unwrap_or("").to_string())
            .collect()
    };
    wait_until("bob's result reaches the leader", LONG, || {
        from_bob("team-lead")
            .iter()
            .any(|t| t.contains("bob reviewed 2"))
    });
    let assignments: Vec<Value> = env
        .inbox("unblock", "bob")
        .into_iter()
        .filter(|m| m["type"] == "task_assignment")
        .collect();
    // One assignment, when it became ready (it was also sent at `add` while blocked).
    assert_eq!(assignments.len(), 1, "{assignments:?}");
    assert_eq!(assignments[0]["from"], "team-lead", "{assignments:?}");
    assert!(from_bob("alice").is_empty(), "{:?}", from_bob("alice"));
}

#[test]
fn shutdown_hands_back_assigned_tasks_and_a_crashed_worker_takes_its_task_up_again() {
    let env = TestEnv::new();
    env.ok(&["create", "back"]);
    spawn(&env, "bob", "true", false);
    env.ok(&["task", "add", "gate"]);
    env.ok(&[
        "task",
        "add",
        "later",
        "--owner",
        "bob",
        "--blocked-by",
        "1",
    ]);
    env.ok(&["wait", "bob", "--timeout", "60"]);
    assert_eq!(task(&env, 2)["owner"], "bob");
    env.ok(&["shutdown", "bob", "--timeout", "60"]);
    let t = task(&env, 2);
    assert_eq!(t["status"], "pending", "{t}");
    assert!(t["owner"].is_null(), "{t}");

    env.ok(&["task", "done", "1"]);
    env.ok(&["task", "done", "2"]);

    // A worker that dies mid-task (not killed by the leader) runs the task again on resume.
    let runs = env.work.path().join("runs");
    let agent = format!(
        r#"echo run >> "{}"; if [ "$(wc -l < "{}")" -lt 2 ]; then exec sleep 120; fi; echo second time"#,
        runs.display(),
        runs.display()
    );
    spawn(&env, "carol", &agent, true);
    env.ok(&["task", "add", "flaky"]);
    wait_until("carol to start task 3", LONG, || runs.exists());
    let pid = env.member("carol")["pid"].as_u64().unwrap();
    // SIGKILL: no clean exit, no hand-back by the leader.
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    wait_until("carol to be dead", LONG, || {
        env.member_status("carol") == "dead"
    });
    assert_eq!(task(&env, 3)["status"], "in_progress");
    env.ok(&["resume", "carol"]);
    wait_until("carol to complete task 3", LONG, || {
        task(&env, 3)["status"] == "completed"
    });
    let t = task(&env, 3);
    assert_eq!(
        (t["owner"].as_str(), t["result"].as_str()),
        (Some("carol"), Some("second time"))
    );
}

/// `task update --status` takes the words users type (`done`, `doing`, `todo`) and stores the
/// SPEC's (`completed`, `in_progress`, `pending`); the shells' completion offers the SPEC's four.
/// (New-user QA: `--status done` was refused.) `task done` of a task completed already says so
/// (it said "task #1 completed").
#[test]
fn task_update_takes_done_and_stores_completed() {
    let env = TestEnv::new();
    env.ok(&["create", "words"]);
    env.ok(&["task", "add", "one"]);
    let stored = |env: &TestEnv| task(env, 1)["status"].as_str().unwrap().to_string();
    for (typed, spec) in [
        ("doing", "in_progress"),
        ("todo", "pending"),
        ("In-Progress", "in_progress"),
        ("done", "completed"),
    ] {
        let said = env.ok(&["task", "update", "1", "--status", typed]);
        assert_eq!(stored(&env), spec, "{typed}");
        assert!(said.contains(&format!(": {spec},")), "{typed}: {said}");
    }
    // A second `done` says the task was completed already, not that it completes now.
    assert_eq!(
        env.ok(&["task", "done", "1"]).trim(),
        "task #1 was completed already: one"
    );
    let err = env.fails(&["task", "update", "1", "--status", "finito"], 2);
    assert!(
        err.contains("use pending, in_progress, completed or failed"),
        "{err}"
    );
    assert_eq!(stored(&env), "completed");
    let out = std::process::Command::new(crate::common::BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let bash = String::from_utf8(out.stdout).unwrap();
    assert!(
        bash.contains("\"pending in_progress completed failed\""),
        "{bash}"
    );
}

/// New-user QA 37: `task update N --owner ''` said "owner nobody" (read as a member named
/// nobody); `task done` of a task still blocked, or of another member's, completed it without
/// a word. Now: "no owner", and the done is said to have gone past what the list said.
#[test]
fn task_done_says_when_it_went_past_the_list_and_no_owner_is_said_so() {
    let env = TestEnv::new();
    env.ok(&["create", "past"]);
    spawn(&env, "bob", "cat", false);
    env.ok(&["task", "add", "first"]);
    env.ok(&["task", "add", "second", "--blocked-by", "1"]);
    env.ok(&["task", "add", "third", "--owner", "team-lead"]);
    let said = env.ok(&["task", "update", "3", "--owner", ""]);
    assert_eq!(said, "task #3 updated: pending, no owner\n");
    env.ok(&["task", "update", "3", "--owner", "team-lead"]);
    let out = env.run(&["task", "done", "2"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("task #2 was still blocked by #1"), "{err}");
    let out = env.run(&["--as", "bob", "task", "done", "3"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("task #3 was team-lead's"), "{err}");
    // Done as the list says: nothing more said.
    let out = env.run(&["task", "done", "1"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(task(&env, 2)["status"], "completed");
    assert_eq!(task(&env, 3)["status"], "completed");
}
