//! A turn's process started ahead by its idle worker (`worker::launch`): the next turn runs in
//! it (no fork of the worker on the way), it carries the member's tag while it waits, it ends
//! with its worker however the worker ends, and when it is gone or cannot become the agent the
//! turn still runs or says why. Process backend, the real binary, a temporary home.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::common::{TestEnv, describe, is_waiting_turn, wait_until};

const T: Duration = Duration::from_secs(20);

/// Prints the pid of the shell that runs it (the turn's process) and how many bytes of the
/// message it got on stdin.
const PID_AND_SIZE: &str = r#"echo "$$ $(wc -c)""#;

fn team(env: &TestEnv, name: &str, exec: &str, cwd: Option<&str>) {
    env.ok(&["create", "alpha"]);
    let mut args = vec!["spawn", name, "--backend", "process", "--exec", exec];
    if let Some(dir) = cwd {
        args.extend(["--cwd", dir]);
    }
    env.ok(&args);
}

/// Live `teamctl __turn` processes of this home whose parent is `worker`.
fn waiting_of(env: &TestEnv, worker: u32) -> Vec<u32> {
    env.processes()
        .into_iter()
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            is_waiting_turn(pid) && ppid == Some(worker)
        })
        .collect()
}

fn worker_pid(env: &TestEnv, name: &str) -> u32 {
    u32::try_from(env.member(name)["pid"].as_u64().expect("a worker pid")).unwrap()
}

/// The one process waiting for `name`'s next turn, once there is one.
fn waiting(env: &TestEnv, name: &str) -> u32 {
    let worker = worker_pid(env, name);
    let mut found = Vec::new();
    wait_until("a turn's process started ahead", T, || {
        found = waiting_of(env, worker);
        found.len() == 1
    });
    found[0]
}

fn running(pid: u32) -> bool {
    teamctl::backend::proc::running(pid)
}

fn signal(pid: u32, sig: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
}

#[test]
fn the_next_turn_runs_in_the_process_started_ahead_with_the_whole_message() {
    let env = TestEnv::new();
    team(&env, "bob", PID_AND_SIZE, None);
    // A teammate that never had a turn has no second process.
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    assert!(
        waiting_of(&env, worker_pid(&env, "bob")).is_empty(),
        "{}",
        describe(&env.processes())
    );
    let first = env.ok(&["ask", "bob", "one"]);
    let ahead = waiting(&env, "bob");
    // It carries the member's tag while it waits: `kill`, `doctor` and the tests see it.
    let environ = std::fs::read(format!("/proc/{ahead}/environ")).unwrap();
    let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
    assert!(vars.contains(&&b"TEAMCTL_AGENT_ID=bob@alpha"[..]));
    // And names it for `ps`.
    let argv = std::fs::read(format!("/proc/{ahead}/cmdline")).unwrap();
    assert_eq!(argv, b"teamctl\0__turn\0bob@alpha\0");
    assert_ne!(first.split(' ').next(), Some(ahead.to_string().as_str()));
    // Longer than a pipe holds, and more than the environment takes (its copy is cut): the
    // agent reads all of it on stdin after the command that came ahead of it.
    let text = "x".repeat(300 * 1024);
    let second = env.ok_stdin(&["ask", "bob"], &text);
    assert_eq!(
        second.trim(),
        format!("{ahead} {}", text.len()),
        "the second turn ran in the process started ahead ({ahead}), with the whole message"
    );
    // And another is started ahead for the turn after.
    let next = waiting(&env, "bob");
    assert_ne!(next, ahead);
    assert_eq!(env.ok(&["ask", "bob", "three"]).trim(), format!("{next} 5"));
}

#[test]
fn the_process_started_ahead_ends_with_its_worker() {
    let env = TestEnv::new();
    team(&env, "bob", PID_AND_SIZE, None);
    env.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--exec",
        PID_AND_SIZE,
    ]);
    env.ok(&["ask", "bob", "one"]);
    env.ok(&["ask", "carol", "one"]);
    // Killed outright: no clean-up runs in the worker; the kernel ends what it started.
    let bob = waiting(&env, "bob");
    signal(worker_pid(&env, "bob"), Signal::SIGKILL);
    wait_until("bob's waiting process gone with its worker", T, || {
        !running(bob)
    });
    // Shut down: the worker ends its own.
    let carol = waiting(&env, "carol");
    env.ok(&["shutdown", "carol"]);
    wait_until("carol's waiting process gone after shutdown", T, || {
        !running(carol)
    });
    env.ok(&["delete", "--force"]);
    wait_until("nothing of the team left", T, || env.processes().is_empty());
}

#[test]
fn a_turn_still_runs_when_the_process_started_ahead_was_killed() {
    let env = TestEnv::new();
    team(&env, "bob", PID_AND_SIZE, None);
    env.ok(&["ask", "bob", "one"]);
    let ahead = waiting(&env, "bob");
    signal(ahead, Signal::SIGKILL);
    wait_until("the waiting process gone", T, || !running(ahead));
    // Started the plain way instead: the message is not lost, the reply comes.
    let out = env.ok(&["ask", "bob", "two"]);
    let (pid, size) = out.trim().split_once(' ').unwrap();
    assert_ne!(pid, ahead.to_string());
    assert_eq!(size, "3");
    wait_until("a new one started ahead", T, || {
        waiting_of(&env, worker_pid(&env, "bob")).len() == 1
    });
}

/// Zombie children of `worker`: ended, never waited for.
fn zombies_of(worker: u32) -> Vec<u32> {
    teamctl::backend::proc::pids()
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let mut rest = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace())
                .into_iter()
                .flatten();
            let state = rest.next();
            let ppid = rest.next().and_then(|p| p.parse::<u32>().ok());
            state == Some("Z") && ppid == Some(worker)
        })
        .collect()
}

#[test]
fn a_process_started_ahead_that_dies_while_idle_is_reaped() {
    let env = TestEnv::new();
    team(&env, "bob", PID_AND_SIZE, None);
    env.ok(&["ask", "bob", "one"]);
    let worker = worker_pid(&env, "bob");
    let ahead = waiting(&env, "bob");
    signal(ahead, Signal::SIGKILL);
    wait_until("the waiting process ended", T, || !running(ahead));
    // Waited for while the worker is idle, not left <defunct> until the next message.
    wait_until("no zombie child of the worker", T, || {
        zombies_of(worker).is_empty()
    });
    // And another started in its place.
    let next = waiting(&env, "bob");
    assert_ne!(next, ahead);
    // One that dies again is reaped too; the worker then waits for a message to start a turn
    // (rather than starting one after another), and the message gets its reply.
    signal(next, Signal::SIGKILL);
    wait_until("the second waiting process ended", T, || !running(next));
    wait_until("no zombie child of the worker again", T, || {
        zombies_of(worker).is_empty()
    });
    let out = env.ok(&["ask", "bob", "two"]);
    let (pid, size) = out.trim().split_once(' ').unwrap();
    assert_ne!(pid, next.to_string());
    assert_eq!(size, "3");
    // After a turn it keeps one ready again.
    let again = waiting(&env, "bob");
    assert_ne!(again, next);
}

#[test]
fn a_turn_the_process_started_ahead_cannot_become_says_why() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    team(&env, "bob", PID_AND_SIZE, Some(cwd.to_str().unwrap()));
    env.ok(&["ask", "bob", "one"]);
    let ahead = waiting(&env, "bob");
    // Its directory removed after it started: it cannot become the agent there.
    std::fs::remove_dir(&cwd).unwrap();
    let out = env.run(&["ask", "bob", "two"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot run the agent command: its directory {} does not exist",
            cwd.display()
        )),
        "{err}"
    );
    wait_until("the waiting process gone", T, || !running(ahead));
    // Back: the teammate goes on.
    std::fs::create_dir(&cwd).unwrap();
    let out = env.ok(&["ask", "bob", "three"]);
    assert!(out.trim().ends_with(" 5"), "{out}");
}

#[test]
fn a_process_started_ahead_that_hangs_is_a_turn_that_hangs_and_is_ended_as_one() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--turn-timeout",
        "1",
        "--exec",
        PID_AND_SIZE,
    ]);
    env.ok(&["ask", "bob", "one"]);
    let ahead = waiting(&env, "bob");
    // Stopped (by anyone of this user, a cgroup freeze...): it takes the command into its pipe
    // and never becomes the agent. Before, the worker waited for it with no timeout: `status`
    // said idle, `interrupt` found no turn, the turn timeout never fired.
    signal(ahead, Signal::SIGSTOP);
    let out = env.run(&["ask", "bob", "two", "--timeout", "30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("timed out"), "{err}");
    wait_until("the stopped process ended with its turn", T, || {
        !running(ahead)
    });
    // The teammate goes on.
    let out = env.ok(&["ask", "bob", "three"]);
    assert!(out.trim().ends_with(" 5"), "{out}");
}

#[test]
fn a_turn_in_the_process_started_ahead_has_the_workers_environment_with_its_own_on_top() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    // The leader's environment, recorded by `spawn`, is the worker's and so the launcher's.
    let mut spawn = env.cmd(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        r#"echo "$$ $LAUNCH_IT_KEPT $TEAMCTL_MESSAGE $(env | grep -c '^TEAMCTL_MESSAGE=')""#,
    ]);
    spawn.env("LAUNCH_IT_KEPT", "kept");
    let out = spawn.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let first = env.ok(&["ask", "bob", "one"]);
    assert_eq!(
        first.split(' ').skip(1).collect::<Vec<_>>(),
        ["kept", "one", "1\n"]
    );
    let ahead = waiting(&env, "bob");
    // The launcher sets the turn's variables in its own environment before `exec`: the agent
    // gets the worker's variables, the turn's on top, each once.
    assert_eq!(
        env.ok(&["ask", "bob", "two"]).trim(),
        format!("{ahead} kept two 1")
    );
}
