//! A teammate runs with the environment of the shell that spawned (or last resumed) it, also
//! on a tmux server started earlier with another environment: the pane's process would
//! otherwise get the server's. Each test starts the private server first (a placeholder
//! session, from the test's own environment) and gives the variable to `teamctl` only.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);
const VAR: &str = "ENVFIX_IT_FOO";
const SHOW: &str = "echo \"FOO=[$ENVFIX_IT_FOO]\"";

/// A private tmux server started before any teamctl command, without `VAR`.
fn server_first() -> TestEnv {
    let env = TestEnv::with_tmux();
    assert!(std::env::var_os(VAR).is_none());
    env.tmux_ok(&["new-session", "-d", "-s", "placeholder"]);
    env
}

/// Run teamctl with `VAR=value` in its environment only; require exit 0.
fn with_var(env: &TestEnv, value: &str, args: &[&str]) -> String {
    let out = env.cmd(args).env(VAR, value).output().unwrap();
    assert!(
        out.status.success(),
        "teamctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ask(env: &TestEnv, name: &str, text: &str) -> String {
    env.ok(&["ask", name, text, "--timeout", "30"])
        .trim()
        .to_string()
}

fn env_file(env: &TestEnv, team: &str, name: &str) -> std::path::PathBuf {
    env.team_dir(team).join("env").join(name)
}

#[test]
fn an_exec_teammate_sees_the_spawning_shells_variable_on_tmux_and_on_process() {
    let env = server_first();
    env.ok(&["create", "envt"]);
    with_var(&env, "bar", &["spawn", "two", "--exec", SHOW]);
    with_var(
        &env,
        "bar",
        &["spawn", "three", "--backend", "process", "--exec", SHOW],
    );
    assert_eq!(env.recorded("envt", "two")["backendType"], "tmux");
    assert_eq!(ask(&env, "two", "x"), "FOO=[bar]");
    assert_eq!(ask(&env, "three", "x"), "FOO=[bar]");
}

#[test]
fn a_resume_by_the_leader_brings_the_new_value() {
    let env = server_first();
    env.ok(&["create", "envr"]);
    with_var(&env, "one", &["spawn", "two", "--exec", SHOW]);
    assert_eq!(ask(&env, "two", "x"), "FOO=[one]");
    env.ok(&["kill", "two"]);
    with_var(&env, "two", &["resume", "two"]);
    assert_eq!(ask(&env, "two", "x"), "FOO=[two]");
}

#[test]
fn a_resume_from_a_teammates_turn_keeps_the_recorded_environment() {
    let env = server_first();
    let team = "envturn";
    env.ok(&["create", team]);
    with_var(&env, "one", &["spawn", "b", "--exec", SHOW]);
    // `a`, asked by the leader, sends to the stopped `b` with another value in its turn:
    // that resumes `b` from inside a's turn.
    with_var(
        &env,
        "one",
        &[
            "spawn",
            "a",
            "--exec",
            "if [ \"$TEAMCTL_FROM\" = team-lead ]; then ENVFIX_IT_FOO=turn teamctl send b hi; fi",
        ],
    );
    assert_eq!(ask(&env, "b", "x"), "FOO=[one]");
    // b dies (not stopped by the leader: a teammate's mail brings back only a dead one).
    let pane = env.recorded(team, "b")["paneId"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux_ok(&["kill-pane", "-t", &pane]);
    wait_until("b dead", WAIT, || env.member_status("b") == "dead");
    let before = std::fs::read(env_file(&env, team, "b")).unwrap();
    env.ok(&["send", "a", "go"]);
    let from_b = || {
        env.inbox(team, "a")
            .into_iter()
            .filter(|m| m["from"] == "b" && m["type"] == "message")
            .map(|m| m["text"].as_str().unwrap_or("").trim().to_string())
            .collect::<Vec<_>>()
    };
    wait_until("b's reply to a", WAIT, || !from_b().is_empty());
    assert_eq!(from_b(), ["FOO=[one]"]);
    // The resume records b's new pane once it is placed; b may answer before that.
    wait_until("b's new pane recorded", WAIT, || {
        env.recorded(team, "b")["paneId"].as_str() != Some(pane.as_str())
    });
    assert_eq!(std::fs::read(env_file(&env, team, "b")).unwrap(), before);
}

#[test]
fn the_env_file_is_private_and_a_link_at_its_path_is_refused() {
    let env = server_first();
    let team = "envsec";
    env.ok(&["create", team]);
    with_var(&env, "secret", &["spawn", "two", "--exec", SHOW]);
    let file = env_file(&env, team, "two");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let dir = std::fs::symlink_metadata(file.parent().unwrap()).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    // A link planted where the next teammate's environment goes: refused, nothing written
    // where it points, no member left behind.
    let target = env.work.path().join("target.txt");
    std::fs::write(&target, "untouched").unwrap();
    std::os::unix::fs::symlink(&target, env_file(&env, team, "three")).unwrap();
    let out = env
        .cmd(&["spawn", "three", "--exec", SHOW])
        .env(VAR, "secret")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    let members = env.status()["members"].as_array().unwrap().clone();
    assert!(!members.iter().any(|m| m["name"] == "three"), "{members:?}");
}

#[test]
fn an_interactive_teammate_sees_the_spawning_shells_variable() {
    let env = server_first();
    let team = "envpy";
    env.ok(&["create", team]);
    with_var(
        &env,
        "bar",
        &[
            "spawn",
            "py",
            "--interactive",
            "--exec",
            "python3 -i",
            "--prompt-pattern",
            "^>>> $",
        ],
    );
    assert_eq!(
        ask(&env, "py", "import os; os.environ.get(\"ENVFIX_IT_FOO\")"),
        "'bar'"
    );
    // The value is in no process's argv.
    let pane = env.recorded(team, "py")["paneId"]
        .as_str()
        .unwrap()
        .to_string();
    let pid = env.tmux_ok(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
    let argv = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).unwrap();
    assert!(!String::from_utf8_lossy(&argv).contains("bar"));
}

/// A teamctl binary under another name (`teamctl-nats`) still gives its agents a `teamctl` on
/// `PATH`, and it is that binary, not another `teamctl` further down `PATH`.
#[test]
fn an_agent_of_a_renamed_binary_finds_teamctl_and_it_is_that_binary() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("teamctl-nats");
    std::fs::copy(crate::common::BIN, &renamed).unwrap();
    // Another `teamctl` on PATH that must not be the one agents reach.
    let decoy_dir = tempfile::tempdir().unwrap();
    let decoy = decoy_dir.path().join("teamctl");
    std::fs::write(&decoy, "#!/bin/sh\necho decoy\n").unwrap();
    std::fs::set_permissions(&decoy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        decoy_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(&renamed);
        c.args(args)
            .current_dir(env.work.path())
            .env("TEAMCTL_HOME", env.home.path())
            .env("NO_COLOR", "1")
            .env("PATH", &path)
            .env_remove("TEAMCTL_TEAM")
            .env_remove("TMUX")
            .stdin(std::process::Stdio::null());
        let out = crate::common::output_of_copy(&mut c);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["create", "ren"]);
    run(&[
        "spawn",
        "w",
        "--backend",
        "process",
        "--exec",
        "teamctl --version; readlink -f \"$(command -v teamctl)\"",
    ]);
    let reply = run(&["ask", "w", "which teamctl?", "--timeout", "30"]);
    assert!(reply.contains("teamctl "), "{reply}");
    assert!(!reply.contains("decoy"), "{reply}");
    assert!(
        reply.contains(&renamed.canonicalize().unwrap().display().to_string()),
        "{reply}"
    );
    run(&["delete", "--force"]);
}

/// The variables only a task's or a plan's turn is given, set in the leader's shell, reach no
/// turn of a teammate spawned from it (attacker QA: a stale `TEAMCTL_TASK_ID` let a turn that
/// had no task `task done` another one).
#[test]
fn a_task_or_plan_variable_of_the_leaders_shell_reaches_no_turn() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    let mut spawn = env.cmd(&[
        "spawn",
        "w",
        "--backend",
        "process",
        "--exec",
        "env | grep -c LEAKED || true",
    ]);
    for var in [
        "TEAMCTL_TASK_ID",
        "TEAMCTL_PLAN",
        "TEAMCTL_PLAN_ROUND",
        "TEAMCTL_FEEDBACK",
    ] {
        spawn.env(var, "LEAKED");
    }
    let out = spawn.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // The first turn, and one in the process started ahead after it.
    assert_eq!(ask(&env, "w", "one"), "0");
    assert_eq!(ask(&env, "w", "two"), "0");
}
