//! `shutdown` of a whole team and of a teammate that dies during it (thirteenth session):
//! `--all --force` ends every member together (TERM to all, one shared grace, KILL to what
//! still carries its tag) and touches nothing of another home; a teammate whose worker dies
//! instead of answering is named, nothing of it is left, and the shutdown exits 1.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{TestEnv, describe, wait_until};

const LONG: Duration = Duration::from_secs(30);

fn spawn(t: &TestEnv, name: &str, exec: &str) {
    t.ok(&["spawn", name, "--backend", "process", "--exec", exec]);
}

/// An agent deaf to SIGTERM, for teammate `name`, its files in `dir`: it writes its pid to
/// `NAME.pid` and, on each SIGTERM, notes in `NAME.saw` which of the deaf agents (their pid
/// files) were already gone, then `term`. Only SIGKILL ends it.
fn deaf(dir: &Path, name: &str) -> String {
    format!(
        "cd '{}' && echo $$ > {name}.pid && trap 'for f in *.pid; do kill -0 \"$(cat \"$f\")\" 2>/dev/null || echo \"${{f%.pid}} gone\" >> {name}.saw; done; echo term >> {name}.saw' TERM; while :; do sleep 0.1; done",
        dir.display()
    )
}

/// This home's processes whose argv or environment carries `tag` (`NAME@TEAM`).
fn of(t: &TestEnv, tag: &str) -> Vec<u32> {
    let has = |hay: &[u8]| hay.windows(tag.len()).any(|w| w == tag.as_bytes());
    t.processes()
        .into_iter()
        .filter(|p| {
            has(&std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default())
                || has(&std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default())
        })
        .collect()
}

fn statuses(t: &TestEnv) -> Vec<(String, String)> {
    t.status()["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] != "team-lead")
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `shutdown --all --force` on 20 process teammates, three of them mid-turn in agents that
/// ignore SIGTERM: every member is signalled before any is killed (each deaf agent, when its
/// SIGTERM came, found the other deaf agents still there: one shared grace, not one per
/// member), nothing of the team is left, every member is `stopped`, and processes of another
/// home carrying the same tags (an agent's environment, a worker's argv) are untouched.
#[test]
fn shutdown_all_force_signals_everyone_first_and_leaves_nothing() {
    let t = TestEnv::new();
    t.ok(&["create", "sa"]);
    let dir = t.work.path().join("deaf");
    std::fs::create_dir(&dir).unwrap();
    let deafs = ["d1", "d2", "d3"];
    for i in 0..17 {
        spawn(&t, &format!("m{i}"), "cat >/dev/null");
    }
    for d in deafs {
        spawn(&t, d, &deaf(&dir, d));
    }
    wait_until("every member idle", LONG, || {
        statuses(&t).iter().all(|(_, s)| s == "idle")
    });
    for d in deafs {
        t.ok(&["send", d, "go"]);
    }
    wait_until("the deaf agents mid-turn", LONG, || {
        deafs.iter().all(|d| {
            t.member_status(d) == "working"
                && std::fs::read_to_string(dir.join(format!("{d}.pid")))
                    .is_ok_and(|p| p.ends_with('\n'))
        })
    });

    // Another home's processes with this home's tags: an agent of m0@sa, a worker of d1@sa.
    let other = t.work.path().join("other-home");
    std::fs::create_dir(&other).unwrap();
    let mut agent = Command::new("sleep")
        .arg("600")
        .env("TEAMCTL_AGENT_ID", "m0@sa")
        .env("TEAMCTL_HOME", &other)
        .spawn()
        .unwrap();
    std::fs::write(other.join("worker"), "read line\n").unwrap();
    let mut worker = Command::new("sh")
        .args(["worker", "--home"])
        .arg(&other)
        .args(["--id", "d1@sa"])
        .current_dir(&other)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let (agent_pid, worker_pid) = (agent.id(), worker.id());
    wait_until("the look-alikes started", LONG, || {
        std::fs::read(format!("/proc/{agent_pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"))
            && std::fs::read(format!("/proc/{worker_pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sh\0worker"))
    });

    t.ok(&["shutdown", "--all", "--force"]);

    wait_until("nothing of the team left", LONG, || {
        t.processes().is_empty()
    });
    let not_stopped: Vec<_> = statuses(&t)
        .into_iter()
        .filter(|(_, s)| s != "stopped")
        .collect();
    assert!(not_stopped.is_empty(), "not stopped: {not_stopped:?}");
    for d in deafs {
        let saw = std::fs::read_to_string(dir.join(format!("{d}.saw"))).unwrap_or_default();
        assert!(saw.contains("term"), "{d} never got SIGTERM: {saw:?}");
        // What it saw at its first SIGTERM (a later one, from the look for leftovers after
        // the workers are gone, may find others gone by then).
        let first = saw.split("term").next().unwrap_or_default();
        assert!(
            !first.contains("gone"),
            "{d} got its first SIGTERM only after another member was killed (one grace per member): {saw:?}"
        );
    }
    assert!(
        agent.try_wait().unwrap().is_none() && teamctl::backend::proc::running(agent_pid),
        "another home's agent was ended"
    );
    assert!(
        worker.try_wait().unwrap().is_none() && teamctl::backend::proc::running(worker_pid),
        "another home's worker was ended"
    );
    let _ = agent.kill();
    let _ = agent.wait();
    let _ = worker.stdin.take().unwrap().write_all(b"\n");
    let _ = worker.wait();
}

/// A teammate whose worker is killed (`kill -9`) while `shutdown` waits for its answer has
/// not answered: `shutdown w3`, and `shutdown --all` for w4, say so by name and exit 1 without
/// waiting out their timeout; nothing of it is left (its agent, mid-turn, ended too) and it
/// shows as dead; the others stop (w3, dead before that `--all` asked anyone, is stopped by it).
#[test]
fn a_teammate_dying_during_shutdown_is_named_and_the_shutdown_fails() {
    let t = TestEnv::new();
    t.ok(&["create", "sdie"]);
    spawn(&t, "a", "cat >/dev/null");
    spawn(&t, "b", "cat >/dev/null");
    // Busy until ended: the shutdown waits for their turn to finish.
    spawn(&t, "w3", "while :; do sleep 0.1; done");
    spawn(&t, "w4", "while :; do sleep 0.1; done");
    for n in ["a", "b", "w3", "w4"] {
        wait_until(&format!("{n} idle"), LONG, || t.member_status(n) == "idle");
    }
    for (victim, all) in [("w3", false), ("w4", true)] {
        t.ok(&["send", victim, "go"]);
        wait_until(&format!("{victim} mid-turn"), LONG, || {
            t.member_status(victim) == "working"
        });
        let worker = t.member(victim)["pid"].as_u64().expect("a pid") as u32;
        let args: &[&str] = if all {
            &["shutdown", "--all", "--timeout", "300"]
        } else {
            &["shutdown", victim, "--timeout", "300"]
        };
        let mut child = t
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until(&format!("the shutdown request to {victim}"), LONG, || {
            t.inbox("sdie", victim)
                .iter()
                .any(|m| m["type"] == "shutdown_request")
        });
        if all {
            wait_until("a and b stopped", LONG, || {
                t.member_status("a") == "stopped" && t.member_status("b") == "stopped"
            });
        }
        let killed = Command::new("kill")
            .args(["-9", &worker.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        // Well within the timeout of 300 s: a teammate known dead is not waited for.
        wait_until("the shutdown to end", LONG, || {
            child.try_wait().unwrap().is_some()
        });
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?} exited {:?} though {victim} died; stderr: {stderr}",
            out.status.code()
        );
        assert!(
            stderr.contains(&format!("{victim} died before it answered the shutdown")),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("w3 died") || victim == "w3", "{stderr}");
        let tag = format!("{victim}@sdie");
        wait_until(&format!("nothing of {victim} left"), LONG, || {
            of(&t, &tag).is_empty()
        });
        assert_eq!(t.member_status(victim), "dead", "{args:?}");
        let others: &[(&str, &str)] = if all {
            &[("a", "stopped"), ("b", "stopped"), ("w3", "stopped")]
        } else {
            &[("a", "idle"), ("b", "idle"), ("w4", "idle")]
        };
        for (n, want) in others {
            assert_eq!(&t.member_status(n), want, "{n} after {args:?}");
        }
    }
    let left = t.processes();
    assert!(left.is_empty(), "left: {}", describe(&left));
}

/// Append `line` to `member`'s inbox of `team` as a raw line (as if written there earlier).
fn append_raw(t: &TestEnv, team: &str, member: &str, line: &serde_json::Value) {
    let inbox = t
        .team_dir(team)
        .join("inboxes")
        .join(member)
        .join("inbox.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&inbox)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// A shutdown response from `from` to `team`'s leader, as a worker writes it.
fn response(t: &TestEnv, team: &str, from: &str, request_id: &str, approve: bool) {
    let id = format!("resp-{from}-{request_id}-{approve}");
    let mut line = serde_json::json!({
        "v": 1, "id": id, "type": "shutdown_response", "requestId": request_id,
        "approve": approve, "paneId": null, "backendType": "process",
        "from": from, "to": "team-lead", "timestamp": "2026-01-01T00:00:00.000Z"
    });
    if !approve {
        line["reason"] = "an old refusal".into();
    }
    append_raw(t, team, "team-lead", &line);
}

/// QA: an approval counts only for the request it answers. With a shutdown request to w
/// outstanding (w is mid-turn, so it has not answered), an approval and a refusal of an
/// earlier request (left in the leader's inbox, read again) neither end w nor settle the
/// request; the approval of the outstanding request then ends it.
#[test]
fn a_stale_approval_does_not_end_a_teammate_asked_again() {
    let t = TestEnv::new();
    t.ok(&["create", "stale"]);
    let gate = t.work.path().join("gate");
    spawn(
        &t,
        "w",
        &format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display()),
    );
    wait_until("w idle", LONG, || t.member_status("w") == "idle");
    // The leader's inbox is made by the first message to it.
    t.ok(&["--as", "w", "send", "team-lead", "hello"]);
    t.ok(&["send", "w", "go"]);
    wait_until("w mid-turn", LONG, || t.member_status("w") == "working");
    let worker = t.member("w")["pid"].as_u64().expect("a pid") as u32;
    t.ok(&["shutdown", "w", "--no-wait"]);
    let outstanding = t.recorded("stale", "w")["shutdownRequestId"]
        .as_str()
        .expect("the request recorded")
        .to_string();

    response(&t, "stale", "w", "an-earlier-request", false);
    response(&t, "stale", "w", "an-earlier-request", true);
    // A leader command acts on what reached the leader.
    t.ok(&["status"]);
    assert!(
        teamctl::backend::proc::running(worker),
        "a stale approval ended w ({})",
        t.member_status("w")
    );
    // Still in its turn (its worker may have seen the request: "shutdown_pending").
    let status = t.member_status("w");
    assert!(
        status == "working" || status == "shutdown_pending",
        "w is {status}"
    );
    assert_eq!(
        t.recorded("stale", "w")["shutdownRequestId"].as_str(),
        Some(outstanding.as_str()),
        "a stale answer settled the outstanding request"
    );

    response(&t, "stale", "w", &outstanding, true);
    t.ok(&["status"]);
    wait_until("nothing of w left", LONG, || of(&t, "w@stale").is_empty());
    assert_eq!(t.member_status("w"), "stopped");
    assert!(t.recorded("stale", "w")["shutdownRequestId"].is_null());
}

/// A graceful `shutdown --all` of a dozen teammates, the answers that come together acted
/// on together: the eight that approve (their turns ending at once) stop with nothing left;
/// the one whose `--on-shutdown` refuses is named with its reason and keeps running; the one
/// whose worker is killed before it answers is named as dead and nothing of it is left; and
/// the one a send resumes while its approval is being acted on (held there by a pause point)
/// keeps the worker the send started. The shutdown exits 1.
#[test]
fn a_graceful_shutdown_all_acts_on_each_answer_as_it_deserves() {
    let t = TestEnv::new();
    t.ok(&["create", "grace"]);
    let gate = |n: &str| t.work.path().join(n);
    let held = |n: &str| t.work.path().join(format!("{n}.reached")).exists();
    let paused = |args: &[&str], point: &str, n: &str| t.paused(args, point, &gate(n));
    let turns_end = gate("turns-end");
    let gated = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done",
        turns_end.display()
    );
    let approvers: Vec<String> = (0..8).map(|i| format!("a{i}")).collect();
    for a in &approvers {
        spawn(&t, a, &gated);
    }
    t.ok(&[
        "spawn",
        "r",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
        "--on-shutdown",
        "echo busy; exit 1",
    ]);
    spawn(&t, "d", "while :; do sleep 0.1; done");
    spawn(&t, "s", "cat >/dev/null");
    wait_until("every member idle", LONG, || {
        statuses(&t).iter().all(|(_, s)| s == "idle")
    });
    let busy: Vec<&str> = approvers.iter().map(String::as_str).chain(["d"]).collect();
    for n in &busy {
        t.ok(&["send", n, "go"]);
    }
    wait_until("the approvers and d mid-turn", LONG, || {
        busy.iter().all(|n| t.member_status(n) == "working")
    });
    let first = t.member("s")["pid"].as_u64().expect("a pid") as u32;
    let dead_worker = t.member("d")["pid"].as_u64().expect("a pid") as u32;
    // A send to s, held before it delivers (a message s takes and handles before it stops
    // is no reason to start it again).
    let send = paused(&["send", "s", "hello"], "send-deliver", "send");
    wait_until("the send held", LONG, || held("send"));

    // The shutdown, held when it is about to end the first approvals it read: s's (s is
    // idle and answers at once; the others are in turns).
    let shutdown = paused(
        &["shutdown", "--all", "--timeout", "120"],
        "reconcile-end",
        "end",
    );
    wait_until("s's approval about to be acted on", LONG, || held("end"));
    wait_until("s's first worker gone", LONG, || {
        !teamctl::backend::proc::running(first)
    });
    // The send goes on: s looks stopped, and is resumed.
    std::fs::write(gate("send"), "").unwrap();
    let sent = send.wait_with_output().unwrap();
    assert!(sent.status.success(), "{sent:?}");
    let second = t.recorded("grace", "s")["pid"]
        .as_u64()
        .expect("s's new worker") as u32;
    assert_ne!(second, first);
    std::fs::write(gate("end"), "").unwrap();

    // d dies before it answers; then the approvers' turns end and they answer.
    wait_until("the shutdown request to d", LONG, || {
        t.inbox("grace", "d")
            .iter()
            .any(|m| m["type"] == "shutdown_request")
    });
    let killed = Command::new("kill")
        .args(["-9", &dead_worker.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    std::fs::write(&turns_end, "").unwrap();

    let out = shutdown.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("r refused to shut down: busy"), "{stderr}");
    assert!(
        stderr.contains("d died before it answered the shutdown; nothing of it is left"),
        "{stderr}"
    );
    for a in &approvers {
        assert_eq!(t.member_status(a), "stopped", "{a}; stderr: {stderr}");
        let tag = format!("{a}@grace");
        wait_until(&format!("nothing of {a} left"), LONG, || {
            of(&t, &tag).is_empty()
        });
    }
    assert_eq!(t.member_status("d"), "dead");
    assert!(of(&t, "d@grace").is_empty(), "something of d is left");
    assert_eq!(t.member_status("r"), "idle");
    assert!(
        teamctl::backend::proc::running(second),
        "the approval acted on late ended the worker the send started; s is {}",
        t.member_status("s")
    );
    wait_until("s idle again", LONG, || t.member_status("s") == "idle");
    t.ok(&["shutdown", "--all", "--force"]);
    let left = t.processes();
    assert!(left.is_empty(), "left: {}", describe(&left));
}
