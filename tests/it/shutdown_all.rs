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
