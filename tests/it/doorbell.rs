//! Doorbells (issue 14, goal 2): the short-lived waiters `ask` and `wait` are woken by a FIFO
//! that writers poke, not by an inotify instance (whose teardown costs 5-20 ms at exit); no
//! answer is missed, nothing is left behind, and a waiter killed mid-wait blocks nobody. Past
//! the inotify instance limit a worker waits on a doorbell too (issue 14, goal 3).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const T: Duration = Duration::from_secs(20);

/// A team `alpha` with `bob`, whose agent waits for `gate` to exist, then echoes its stdin.
fn gated_bob(env: &TestEnv) -> PathBuf {
    let gate = env.home_path().join("gate");
    env.ok(&["create", "alpha"]);
    let agent = format!(
        "while [ ! -e {} ]; do sleep 0.02; done; cat",
        gate.display()
    );
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", &agent]);
    gate
}

fn fifos(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_fifo()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` holds an inotify instance.
fn holds_inotify(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
        d.flatten().any(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
        })
    })
}

fn start(env: &TestEnv, args: &[&str]) -> Child {
    env.cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start teamctl")
}

#[test]
fn ask_waits_on_a_doorbell_not_inotify_and_leaves_nothing() {
    let env = TestEnv::new();
    let gate = gated_bob(&env);
    let bells = env.team_dir("alpha").join("bells").join("inbox-team-lead");
    let ask = start(&env, &["ask", "bob", "hello", "--timeout", "20"]);
    let pid = ask.id();
    wait_until("ask's doorbell", T, || !fifos(&bells).is_empty());
    assert!(!holds_inotify(pid), "ask holds an inotify instance");
    std::fs::write(&gate, b"").unwrap();
    let out = ask.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
    assert!(fifos(&bells).is_empty(), "ask left its doorbell behind");
}

#[test]
fn wait_is_woken_by_doorbells_not_inotify() {
    let env = TestEnv::new();
    let gate = gated_bob(&env);
    env.ok(&["send", "bob", "work"]);
    wait_until("bob to be working", T, || {
        env.member_status("bob") == "working"
    });
    let wait = start(&env, &["wait", "bob", "--timeout", "20"]);
    let live_bells = env.team_dir("alpha").join("bells").join("live");
    wait_until("wait's doorbell", T, || !fifos(&live_bells).is_empty());
    assert!(!holds_inotify(wait.id()), "wait holds an inotify instance");
    std::fs::write(&gate, b"").unwrap();
    let out = wait.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        fifos(&live_bells).is_empty(),
        "wait left its doorbell behind"
    );
}

#[test]
fn a_killed_waiters_doorbell_blocks_nobody_and_is_cleared() {
    let env = TestEnv::new();
    let gate = gated_bob(&env);
    let bells = env.team_dir("alpha").join("bells").join("inbox-team-lead");
    let mut ask = start(&env, &["ask", "bob", "first", "--timeout", "20"]);
    wait_until("ask's doorbell", T, || !fifos(&bells).is_empty());
    ask.kill().unwrap();
    ask.wait().unwrap();
    assert_eq!(fifos(&bells).len(), 1, "the killed ask's FIFO");
    // The next answer to the leader pokes the stale FIFO: refused, removed, nothing blocks.
    std::fs::write(&gate, b"").unwrap();
    assert_eq!(
        env.ok(&["ask", "bob", "second", "--timeout", "20"]).trim(),
        "second"
    );
    wait_until("the stale FIFO to go", T, || fifos(&bells).is_empty());
}

#[test]
fn many_asks_in_a_row_miss_no_answer() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    for i in 0..30 {
        let text = format!("m{i}");
        assert_eq!(
            env.ok(&["ask", "bob", &text, "--timeout", "20"]).trim(),
            text
        );
    }
}

/// Past the inotify instance limit (simulated: `TEAMCTL_NO_INOTIFY`, so the test spends no
/// instances of the shared user) a worker waits on a doorbell, not a 100 ms poll.
#[test]
fn a_worker_without_inotify_waits_on_a_doorbell_and_misses_nothing() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let out = env
        .cmd(&["spawn", "bob", "--backend", "process", "--exec", "cat"])
        .env("TEAMCTL_NO_INOTIFY", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let pid = env.member("bob")["pid"].as_u64().unwrap() as u32;
    let bells = env.team_dir("alpha").join("bells").join("inbox-bob");
    wait_until("bob's doorbell", T, || !fifos(&bells).is_empty());
    assert!(!holds_inotify(pid), "the worker holds an inotify instance");
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(!log.contains("polling every"), "the worker polls: {log}");
    for i in 0..20 {
        let text = format!("m{i}");
        assert_eq!(
            env.ok(&["ask", "bob", &text, "--timeout", "20"]).trim(),
            text
        );
    }
}
