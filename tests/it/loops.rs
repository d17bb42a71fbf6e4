//! The loop guard (`create --max-hops`) where messages are not the only way round: tasks that
//! auto-claim teammates add for each other, and interactive agents whose pane has no
//! `TEAMCTL_HOPS`. Each loop stops past the limit and the leader hears of it exactly once.

use std::time::Duration;

use serde_json::Value;

use crate::common::{BIN, TestEnv, wait_until};

const T: Duration = Duration::from_mins(1);

fn notices(env: &TestEnv, team: &str) -> Vec<String> {
    env.inbox(team, "team-lead")
        .into_iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .filter(|s| s.contains("loop guard"))
        .collect()
}

fn tasks(env: &TestEnv) -> Vec<Value> {
    let out = env.ok(&["--json", "task", "list"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["tasks"].as_array().unwrap().clone()
}

fn task(env: &TestEnv, id: u64) -> Value {
    tasks(env)
        .into_iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task #{id}"))
}

#[test]
fn auto_claim_teammates_adding_tasks_for_each_other_stop_at_max_hops() {
    let t = TestEnv::new();
    t.ok(&["create", "t1", "--max-hops", "2"]);
    // Every task turn adds a follow-up task, naming the hops the turn ran at.
    let exec = "teamctl task add \"follow-up of $TEAMCTL_TASK_ID at $TEAMCTL_HOPS\" >/dev/null";
    for name in ["alice", "bob"] {
        t.ok(&[
            "spawn",
            name,
            "--exec",
            exec,
            "--backend",
            "process",
            "--auto-claim",
        ]);
    }
    t.ok(&["task", "add", "seed"]);
    wait_until("the loop notice", T, || !notices(&t, "t1").is_empty());
    t.ok(&["wait", "alice", "bob", "--timeout", "30"]);
    let list = tasks(&t);
    // #1 (0 hops) .. #3 (2 hops) ran; #4, added at 3 hops, is left pending for the leader.
    assert_eq!(list.len(), 4, "{list:#?}");
    for (id, hops) in [(1u64, 0u64), (2, 1), (3, 2)] {
        let task = task(&t, id);
        assert_eq!(task["status"], "completed", "{task}");
        assert_eq!(task["hops"].as_u64().unwrap_or(0), hops, "{task}");
    }
    // TEAMCTL_HOPS of a task turn is the task's hops.
    assert_eq!(task(&t, 2)["subject"], "follow-up of 1 at 0");
    assert_eq!(task(&t, 4)["subject"], "follow-up of 3 at 2");
    let last = task(&t, 4);
    assert_eq!(
        (&last["status"], &last["hops"]),
        (&"pending".into(), &3.into())
    );
    assert!(last["owner"].is_null(), "{last}");
    let notice = notices(&t, "t1");
    assert_eq!(notice.len(), 1, "{notice:?}");
    assert!(notice[0].contains("task #4"), "{notice:?}");

    // The leader's update takes the task over: it runs again, from 0 hops.
    t.ok(&["task", "update", "4", "--owner", "alice"]);
    wait_until("task #4 done", T, || task(&t, 4)["status"] == "completed");
    wait_until("the new chain's last task", T, || {
        tasks(&t).len() == 7 && task(&t, 7)["hops"] == 3
    });
    t.ok(&["wait", "alice", "bob", "--timeout", "30"]);
    assert_eq!(task(&t, 5)["subject"], "follow-up of 4 at 0");
    assert_eq!(task(&t, 7)["status"], "pending");
    assert_eq!(tasks(&t).len(), 7);
    assert_eq!(notices(&t, "t1").len(), 1);
}

#[test]
fn interactive_teammates_messaging_each_other_stop_at_max_hops() {
    let env = TestEnv::with_tmux();
    let team = env
        .ok(&["create", "it-loop", "--max-hops", "2"])
        .trim()
        .to_string();
    for (me, other) in [("alice", "bob"), ("bob", "alice")] {
        env.ok(&[
            "spawn",
            me,
            "--interactive",
            "--exec",
            "python3 -i",
            "--prompt-pattern",
            "^>>> $",
        ]);
        // `p()` makes the REPL send `p()` to the other one, from inside the pane (no
        // TEAMCTL_HOPS there); it prints nothing, so no reply goes anywhere.
        // (teamctl by its path: the pane's PATH may be rewritten by the python launcher.)
        let setup = format!(
            "import subprocess; p = lambda: subprocess.run([{BIN:?}, \"send\", \"{other}\", \"p()\"], capture_output=True) and None"
        );
        env.ok(&["send", me, &setup]);
    }
    let pings = |who: &str| {
        env.inbox(&team, who)
            .into_iter()
            .filter(|m| m["text"] == "p()")
            .collect::<Vec<_>>()
    };
    // Both REPLs have their `p` before the first ping.
    env.ok(&["wait", "alice", "bob", "--timeout", "60"]);
    env.ok(&["send", "alice", "p()"]);
    wait_until("the loop notice", T, || !notices(&env, &team).is_empty());
    env.ok(&["wait", "alice", "bob", "--timeout", "60"]);
    // The leader's ping (0 hops) and bob's (2) reached alice; alice's at 1 and 3 reached bob,
    // the one at 3 was stored and started no turn.
    let (to_alice, to_bob) = (pings("alice"), pings("bob"));
    let hops = |l: &[Value]| {
        l.iter()
            .map(|m| m["hops"].as_u64().unwrap_or(0))
            .collect::<Vec<_>>()
    };
    assert_eq!(hops(&to_alice), [0, 2], "{to_alice:?}");
    assert_eq!(hops(&to_bob), [1, 3], "{to_bob:?}");
    let notice = notices(&env, &team);
    assert_eq!(notice.len(), 1, "{notice:?}");
    assert!(
        notice[0].contains("alice") && notice[0].contains("bob"),
        "{notice:?}"
    );
}
