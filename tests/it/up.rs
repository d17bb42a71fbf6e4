//! End-to-end tests of `teamctl up` / `down` (issue 12 item 6), a team as code, on the process
//! backend and on tmux (a private server per test): the team a file declares comes up and
//! answers; a second `up` changes nothing; a changed definition is listed, the running member
//! untouched; a killed member is resumed; bad files exit 2 naming the line with the home left
//! byte for byte as it was; `down` leaves nothing behind; the shipped examples work.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, snapshot, wait_until};

const WAIT: Duration = Duration::from_secs(30);

/// A team file with two echoing members on `backend` and two tasks; `bob_exec` is bob's
/// command, so a test can change his definition.
fn team_file(team: &str, backend: &str, bob_exec: &str) -> String {
    format!(
        r#"# made by tests/it/up.rs
name = "{team}"
description = "made by up"

[[member]]
name = "alice"
exec = "printf '%s got: ' \"$TEAMCTL_AGENT_NAME\"; cat"
backend = "{backend}"
color = "green"

[[member]]
name = "bob"
exec = "{bob_exec}"
backend = "{backend}"
turn-timeout = "5m"

[[task]]
subject = "design"

[[task]]
subject = "build"
blocked-by = ["design"]
owner = "bob"
"#
    )
}

const BOB: &str = "printf 'bob got: '; cat";

fn write(env: &TestEnv, text: &str) -> PathBuf {
    let path = env.work.path().join("teamctl.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn env_for(backend: &str) -> TestEnv {
    match backend {
        "tmux" => TestEnv::with_tmux(),
        _ => TestEnv::new(),
    }
}

fn config(env: &TestEnv, team: &str) -> Value {
    let text = std::fs::read_to_string(env.team_dir(team).join("config.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Each teammate's name, pid and pane as the team file records them.
fn workers(env: &TestEnv, team: &str) -> Vec<(String, Value, Value)> {
    config(env, team)["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] != "team-lead")
        .map(|m| (m["name"].to_string(), m["pid"].clone(), m["paneId"].clone()))
        .collect()
}

fn ask(env: &TestEnv, name: &str, text: &str) -> String {
    env.ok(&["ask", name, text, "--timeout", "30"])
        .trim()
        .to_string()
}

fn tasks(env: &TestEnv) -> Vec<Value> {
    let out: Value = serde_json::from_str(&env.ok(&["--json", "task", "list"])).unwrap();
    out["tasks"].as_array().unwrap().clone()
}

/// The agent tags of every pane on the private server (none when it has exited).
fn tagged_panes(env: &TestEnv) -> Vec<String> {
    let out = env.tmux(&["list-panes", "-a", "-F", "#{@teamctl-agent}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn comes_up_and_again_changes_nothing(backend: &str, team: &str) {
    let env = env_for(backend);
    // The default hop limit, declared: no change to report.
    let declared = team_file(team, backend, BOB).replacen(
        "description = \"made by up\"\n",
        "description = \"made by up\"\nmax-hops = 10\n",
        1,
    );
    write(&env, &declared);
    let out = env.ok(&["up"]);
    assert!(out.contains(&format!("team {team} created")), "{out}");
    assert!(
        out.contains("alice spawned") && out.contains("bob spawned"),
        "{out}"
    );
    // The default hop limit, declared, is no change (it printed `max-hops: 10 → 10`).
    assert!(!out.contains("max-hops"), "{out}");
    assert_eq!(ask(&env, "alice", "hi"), "alice got: hi");
    assert_eq!(ask(&env, "bob", "yo"), "bob got: yo");
    let cfg = config(&env, team);
    assert_eq!(cfg["description"], "made by up");
    let alice = cfg["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "alice")
        .unwrap()
        .clone();
    assert_eq!(alice["color"], "green");
    assert_eq!(alice["backendType"], backend);
    let list = tasks(&env);
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[1]["subject"], "build");
    assert_eq!(list[1]["owner"], "bob");
    assert_eq!(list[1]["blockedBy"], serde_json::json!([list[0]["id"]]));

    // Again: nothing started, nothing added.
    let before = workers(&env, team);
    let tasks_before = std::fs::read(env.team_dir(team).join("tasks.json")).unwrap();
    let out = env.ok(&["up"]);
    assert!(
        !out.contains("created") && !out.contains("spawned"),
        "{out}"
    );
    assert!(out.contains("alice running, as declared"), "{out}");
    assert!(out.contains("bob running, as declared"), "{out}");
    assert_eq!(workers(&env, team), before);
    let tasks_after = std::fs::read(env.team_dir(team).join("tasks.json")).unwrap();
    assert!(
        tasks_after == tasks_before,
        "tasks.json changed: {list:?}",
        list = tasks(&env)
    );
    let again: Value = serde_json::from_str(&env.ok(&["--json", "up"])).unwrap();
    assert_eq!(again["spawned"], serde_json::json!([]));
    assert_eq!(again["running"], serde_json::json!(["alice", "bob"]));
    assert_eq!(again["tasksAdded"], serde_json::json!([]));
    assert_eq!(again["tasksKept"], 2);
    assert_eq!(workers(&env, team), before);
    assert_eq!(ask(&env, "alice", "still"), "alice got: still");
    // A hop limit changed, then left out: the default again, as a description left out is
    // none (new-user QA 45: the one was cleared, the other kept).
    write(&env, &declared.replacen("max-hops = 10", "max-hops = 4", 1));
    assert!(env.ok(&["up"]).contains("max-hops: 10 → 4"));
    write(&env, &team_file(team, backend, BOB));
    let out = env.ok(&["up"]);
    assert!(out.contains("max-hops: 4 → 10 (the default)"), "{out}");
    assert!(config(&env, team).get("maxHops").is_none_or(Value::is_null));
    // A task's owner changed in the file: said, with the way to give it; the list kept.
    write(
        &env,
        &team_file(team, backend, BOB).replacen("owner = \"bob\"", "owner = \"alice\"", 1),
    );
    let out = env.ok(&["up"]);
    let build = tasks(&env)[1]["id"].clone();
    assert!(
        out.contains(&format!(
            "task #{build} (build): teamctl.toml gives it to alice, the list has owner bob; `teamctl task update {build} --owner alice` gives it"
        )),
        "{out}"
    );
    assert_eq!(tasks(&env)[1]["owner"], "bob");
}

#[test]
fn up_makes_the_team_and_a_second_up_changes_nothing_on_processes() {
    comes_up_and_again_changes_nothing("process", "up-same-p");
}

#[test]
fn up_makes_the_team_and_a_second_up_changes_nothing_on_tmux() {
    comes_up_and_again_changes_nothing("tmux", "up-same-t");
}

fn a_changed_definition_is_listed_and_untouched(backend: &str, team: &str) {
    let env = env_for(backend);
    write(&env, &team_file(team, backend, BOB));
    env.ok(&["up"]);
    let before = workers(&env, team);
    // Someone spawned by hand is not in the file: listed, left alone.
    let said = env.ok(&["spawn", "carol", "--backend", backend, "--exec", "cat"]);
    assert!(
        said.starts_with(&format!("carol spawned as carol@{team} ({backend}, ")),
        "{said}"
    );
    write(&env, &team_file(team, backend, "printf 'BOB v2: '; cat"));
    let out = env.ok(&["up"]);
    assert!(
        out.contains("bob is running with another definition"),
        "{out}"
    );
    assert!(
        out.contains("exec: \"printf 'bob got: '; cat\" → \"printf 'BOB v2: '; cat\""),
        "{out}"
    );
    assert!(out.contains("teamctl shutdown bob && teamctl up"), "{out}");
    assert!(
        out.contains(&format!(
            "carol is in team {team} but not in teamctl.toml; left as it is (`teamctl shutdown carol` stops it)"
        )),
        "{out}"
    );
    assert!(out.contains("alice running, as declared"), "{out}");
    let now = workers(&env, team);
    assert_eq!(now[..2], before[..], "alice and bob untouched");
    assert_eq!(
        ask(&env, "bob", "old"),
        "bob got: old",
        "bob still runs his old command"
    );
    assert_eq!(ask(&env, "carol", "here"), "here");
    // Doing what it says applies the file.
    env.ok(&["shutdown", "bob"]);
    let out = env.ok(&["up"]);
    assert!(
        out.contains("bob spawned anew with its new definition"),
        "{out}"
    );
    assert_eq!(ask(&env, "bob", "new"), "BOB v2: new");
    let out = env.ok(&["up"]);
    assert!(out.contains("bob running, as declared"), "{out}");
    // Stopped, it is not told to be shut down (new-user QA 36: it was); and a second shutdown
    // says it was stopped already, in --json too.
    let said: Value = serde_json::from_str(&env.ok(&["--json", "shutdown", "carol"])).unwrap();
    assert_eq!(said["stopped"], serde_json::json!(["carol"]), "{said}");
    assert_eq!(said["alreadyStopped"], serde_json::json!([]), "{said}");
    for force in [&[][..], &["--force"][..]] {
        let args = [&["--json", "shutdown", "carol"][..], force].concat();
        let said: Value = serde_json::from_str(&env.ok(&args)).unwrap();
        assert_eq!(said["stopped"], serde_json::json!(["carol"]), "{said}");
        assert_eq!(
            said["alreadyStopped"],
            serde_json::json!(["carol"]),
            "{said}"
        );
    }
    let out = env.ok(&["up"]);
    assert!(
        out.contains(&format!(
            "carol is in team {team} but not in teamctl.toml; stopped, left as it is"
        )),
        "{out}"
    );
    assert!(!out.contains("teamctl shutdown carol"), "{out}");
}

#[test]
fn a_changed_definition_is_listed_and_the_running_member_untouched_on_processes() {
    a_changed_definition_is_listed_and_untouched("process", "up-chg-p");
}

#[test]
fn a_changed_definition_is_listed_and_the_running_member_untouched_on_tmux() {
    a_changed_definition_is_listed_and_untouched("tmux", "up-chg-t");
}

fn a_killed_member_is_resumed(backend: &str, team: &str) {
    let env = env_for(backend);
    write(&env, &team_file(team, backend, BOB));
    env.ok(&["up"]);
    assert_eq!(ask(&env, "alice", "one"), "alice got: one");
    let before = workers(&env, team);
    env.ok(&["kill", "alice"]);
    wait_until("alice stopped", WAIT, || {
        matches!(env.member_status("alice").as_str(), "stopped" | "dead")
    });
    let out = env.ok(&["up"]);
    assert!(out.contains("alice resumed"), "{out}");
    assert!(out.contains("bob running, as declared"), "{out}");
    let after = workers(&env, team);
    assert_ne!(after[0], before[0], "alice has a new worker");
    assert_eq!(after[1], before[1], "bob untouched");
    assert_eq!(ask(&env, "alice", "two"), "alice got: two");
    assert_eq!(tasks(&env).len(), 2);
}

#[test]
fn a_killed_member_is_resumed_by_up_on_processes() {
    a_killed_member_is_resumed("process", "up-kill-p");
}

#[test]
fn a_killed_member_is_resumed_by_up_on_tmux() {
    a_killed_member_is_resumed("tmux", "up-kill-t");
}

fn down_leaves_nothing(backend: &str, team: &str) {
    let env = env_for(backend);
    let path = write(&env, &team_file(team, backend, BOB));
    env.ok(&["up", path.to_str().unwrap()]);
    assert_eq!(ask(&env, "bob", "x"), "bob got: x");
    assert!(!env.processes().is_empty());
    let out = env.ok(&["down", path.to_str().unwrap()]);
    assert!(out.contains(&format!("deleted team {team}")), "{out}");
    assert!(!env.team_dir(team).exists());
    wait_until("no worker left", WAIT, || env.processes().is_empty());
    if backend == "tmux" {
        assert_eq!(tagged_panes(&env), Vec::<String>::new());
    }
    // Down again: nothing to do, not an error; up again: a new team.
    let out = env.ok(&["down", path.to_str().unwrap()]);
    assert!(out.contains("not up"), "{out}");
    let out = env.ok(&["up", path.to_str().unwrap()]);
    assert!(out.contains("created"), "{out}");
    env.ok(&["down", "--force", path.to_str().unwrap()]);
    assert!(!env.team_dir(team).exists());
    wait_until("no worker left after a forced down", WAIT, || {
        env.processes().is_empty()
    });
}

/// `down` of a file that does not declare every teammate of its team (one spawned by hand,
/// or a file from elsewhere naming a team of this home) is refused, and changes nothing
/// (new-user and attacker QA 45: `up` said "left as it is", then `down` deleted carol and her
/// unread mail).
#[test]
fn down_refuses_a_team_with_teammates_its_file_does_not_declare() {
    let env = env_for("process");
    let team = "up-undeclared";
    let path = write(&env, &team_file(team, "process", BOB));
    env.ok(&["up", path.to_str().unwrap()]);
    env.ok(&["spawn", "carol", "--backend", "process", "--exec", "cat"]);
    let before = config(&env, team);
    let err = env.fails(&["down", path.to_str().unwrap()], 2);
    assert!(
        err.contains(&format!(
            "team {team} has a teammate {} does not declare: carol;",
            path.display()
        )) && err.contains(&format!("`teamctl delete --team {team}`")),
        "{err}"
    );
    assert_eq!(config(&env, team), before);
    assert_eq!(env.member_status("carol"), "idle");
    assert_eq!(env.member_status("bob"), "idle");
    env.ok(&["delete", "--force"]);
    assert!(!env.team_dir(team).exists());
}

#[test]
fn down_leaves_no_worker_or_team_directory_on_processes() {
    down_leaves_nothing("process", "up-down-p");
}

#[test]
fn down_leaves_no_worker_pane_or_team_directory_on_tmux() {
    down_leaves_nothing("tmux", "up-down-t");
}

/// `up` with `text` as the file: exit 2, stderr naming `teamctl.toml:LINE:` and saying
/// `says`, and the home byte for byte as it was.
fn refused(env: &TestEnv, text: &str, line: usize, says: &str) {
    write(env, text);
    let before = snapshot(env.home_path());
    let err = env.fails(&["up"], 2);
    assert!(
        err.contains(&format!("teamctl.toml:{line}: ")),
        "line {line} expected: {err}"
    );
    assert!(err.contains(says), "{says:?} expected: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        snapshot(env.home_path()) == before,
        "the home changed: {text}"
    );
    assert_eq!(env.processes(), Vec::<u32>::new(), "{text}");
}

#[test]
fn bad_files_exit_2_naming_the_line_and_change_nothing() {
    let env = TestEnv::with_tmux();
    let good = team_file("up-bad", "tmux", BOB);
    let swap = |from: &str, to: &str| {
        assert!(good.contains(from), "{from}");
        good.replacen(from, to, 1)
    };
    let cases = [
        // Unknown key (a typo), line 9: `colour` for `color`.
        (swap("color = ", "colour = "), 9, "unknown field `colour`"),
        (
            swap("name = \"alice\"", "name = \"al ice\""),
            6,
            "invalid member name",
        ),
        (
            swap("\"green\"", "\"mauve\""),
            9,
            "unknown colour \"mauve\"",
        ),
        (swap("\"5m\"", "\"five minutes\""), 15, "turn-timeout"),
        (
            swap("name = \"alice\"", "name = \"bob\""),
            12,
            "declared twice",
        ),
        // Look-alikes are caught with the file, before anything starts (new-user QA: one
        // member was started before spawn refused the second).
        (
            swap("name = \"alice\"", "name = \"B0b\""),
            12,
            "member bob looks like B0b",
        ),
        (
            swap("name = \"alice\"", "name = \"Team_Lead\""),
            6,
            "looks like the leader",
        ),
        (
            swap("name = \"up-bad\"", "name = \"up/bad\""),
            2,
            "invalid team name",
        ),
        (
            swap("backend = \"tmux\"", "backend = \"docker\""),
            8,
            "backend",
        ),
        (
            swap("owner = \"bob\"", "owner = \"zed\""),
            23,
            "no [[member]] zed",
        ),
        // The second member is bad: the first is not started either.
        (
            swap("turn-timeout = \"5m\"", "cwd = \"no-such-dir\""),
            15,
            "not a directory",
        ),
        (
            swap("exec = \"printf 'bob", "agent = \"nope\"\n#"),
            13,
            "unknown agent \"nope\"",
        ),
        (
            format!("{good}\n[[member]]\nname = \"x\"\n"),
            26,
            "needs an agent",
        ),
        (format!("{good}\n[[member\n"), 25, ""),
    ];
    // On an empty home, and beside an existing team of that name: nothing is written.
    for (text, line, says) in &cases {
        refused(&env, text, *line, says);
    }
    env.ok(&["create", "up-bad"]);
    for (text, line, says) in &cases {
        refused(&env, text, *line, says);
    }
    // No tmux server was started for any of it.
    assert!(!env.tmux(&["list-sessions"]).status.success());
    // No file at all: a clear error too.
    std::fs::remove_file(env.work.path().join("teamctl.toml")).unwrap();
    let err = env.fails(&["up"], 1);
    assert!(err.contains("no team file teamctl.toml"), "{err}");
    let err = env.fails(&["down"], 1);
    assert!(err.contains("no team file teamctl.toml"), "{err}");
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

#[test]
fn the_test_shards_example_comes_up_and_answers() {
    let env = TestEnv::with_tmux();
    let file = example("test-shards.toml");
    let file = file.to_str().unwrap();
    let out = env.ok(&["up", file]);
    assert!(out.contains("team test-shards created"), "{out}");
    for n in 1..=3 {
        assert_eq!(
            ask(&env, &format!("shard-{n}"), "echo shard $SHARD of $SHARDS"),
            format!("shard {n} of 3")
        );
    }
    let list = tasks(&env);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["owner"], "team-lead");
    let again = env.ok(&["up", file]);
    assert!(!again.contains("spawned"), "{again}");
    env.ok(&["down", file]);
    assert!(!env.team_dir("test-shards").exists());
    wait_until("no worker left", WAIT, || env.processes().is_empty());
    assert_eq!(tagged_panes(&env), Vec::<String>::new());
}

#[test]
fn an_interactive_member_comes_up_from_the_file_and_answers() {
    let env = TestEnv::with_tmux();
    write(
        &env,
        r#"name = "up-inter"

[[member]]
name = "py"
exec = "python3 -i"
interactive = true
prompt-pattern = '^>>> $'
"#,
    );
    let out = env.ok(&["up"]);
    assert!(out.contains("py spawned (tmux, pane %"), "{out}");
    assert_eq!(ask(&env, "py", "6*7"), "42");
    let cfg = config(&env, "up-inter");
    let py = &cfg["members"][1];
    assert_eq!(py["interactive"]["promptPattern"], "^>>> $", "{py}");
    let again = env.ok(&["up"]);
    assert!(again.contains("py running, as declared"), "{again}");
    env.ok(&["down"]);
    assert_eq!(tagged_panes(&env), Vec::<String>::new());
}

#[test]
fn the_claude_team_example_comes_up_and_its_teammates_answer() {
    use crate::common::fake_model::{self, FakeModel, Reply};
    let model =
        FakeModel::start(|req| Reply::text(format!("turns={}", fake_model::user_turns(req))));
    let mut env = TestEnv::with_tmux();
    // The example works in its file's directory: a repository of its own here.
    let repo = env.work.path();
    let cc = fake_model::claude(&model, &[repo]);
    env.env.extend(cc.env.iter().cloned());
    let path = format!(
        "{}:{}",
        cc.bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.env.push(("PATH".into(), path));
    std::fs::copy(example("claude-team.toml"), repo.join("teamctl.toml")).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let out = env.ok(&["up"]);
    for name in ["architect", "coder-1", "coder-2", "reviewer"] {
        assert!(out.contains(&format!("{name} spawned")), "{out}");
    }
    assert_eq!(tasks(&env).len(), 4);
    // One remembered conversation: each reply counts more user turns than the one before
    // (other mail, such as task news, may take turns in between).
    let turns = |reply: String| -> usize {
        reply
            .strip_prefix("turns=")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{reply}"))
    };
    let first = turns(ask(&env, "coder-1", "hello"));
    let second = turns(ask(&env, "coder-1", "again"));
    assert!(second > first, "{first} then {second}");
    let cfg = config(&env, "coders");
    let coder = cfg["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "coder-1")
        .unwrap();
    assert_eq!(coder["agent"], "claude");
    assert_eq!(coder["model"], "sonnet");
    assert_eq!(
        coder["agentArgs"],
        serde_json::json!(["--permission-mode", "acceptEdits"])
    );
    assert!(
        coder["worktree"]
            .as_str()
            .unwrap()
            .ends_with("worktrees/coder-1")
    );
    // The reviewer's prompt names the coders' branches as they are (new-user QA 45: it named
    // `teamctl/coder-1`, the branch before it named its team).
    let branch = coder["worktreeBranch"].as_str().unwrap();
    assert_eq!(branch, "teamctl/coder-1@coders");
    let text = std::fs::read_to_string(example("claude-team.toml")).unwrap();
    assert!(text.contains(&format!("({branch}, ")), "{text}");
    let asked: Vec<Value> = model
        .conversation_requests()
        .into_iter()
        .filter(|r| fake_model::last_user_text(r).contains("again"))
        .collect();
    assert_eq!(asked.len(), 1);
    // The CLI resolves the alias to a full model id.
    assert!(
        asked[0]["model"].as_str().unwrap().contains("sonnet"),
        "{}",
        asked[0]["model"]
    );
    assert!(asked[0]["system"].to_string().contains("You are coder-1"));
    let again = env.ok(&["up"]);
    assert!(!again.contains("spawned"), "{again}");
    env.ok(&["down", "--force"]);
    assert!(!env.team_dir("coders").exists());
    wait_until("no worker left", WAIT, || env.processes().is_empty());
}

#[test]
fn up_of_another_team_while_leading_one_is_refused() {
    let env = TestEnv::new();
    env.ok(&["create", "up-first"]);
    write(&env, &team_file("up-second", "process", BOB));
    let before = snapshot(env.home_path());
    let err = env.fails(&["up"], 2);
    assert!(err.contains("you already lead team \"up-first\""), "{err}");
    assert!(snapshot(env.home_path()) == before);
    let err = env.fails(&["up", "--team", "up-first"], 2);
    assert!(err.contains("declares team up-second"), "{err}");
    assert!(snapshot(env.home_path()) == before);
}

/// `create`, `up` and `delete` run at once leave a current-team record that names a team
/// that exists, or none: every writer of the record holds `create`'s lock around its look
/// and its write. (QA 21: `up` and `demo` wrote it without the lock, and `up` recorded a
/// team a racing `delete` had just removed.) And each team is whole or gone, never a
/// directory without its team file: a `delete` removes a team directory under the same lock
/// that `create` and `up` hold while they make one. (A CI run saw the record name a team c
/// whose directory a racing `delete` had removed while `create` wrote it, round 366; forced
/// step by step in tests/it/races.rs, `a_delete_of_a_team_being_made_...`.) Run as processes,
/// again and again until a deadline.
#[test]
fn racing_create_up_and_delete_leave_a_current_record_naming_a_team_or_none() {
    let env = TestEnv::new();
    write(&env, "name = \"u\"\ndescription = \"raced\"\n");
    let current = env.home_path().join("current");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut rounds = 0;
    while std::time::Instant::now() < deadline {
        rounds += 1;
        // Team u there and no record: the racing `up` then records u, unless it finds u gone.
        env.ok(&["up"]);
        let _ = std::fs::remove_file(&current);
        let run = |args: &[&str]| {
            env.cmd(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        let mut racing = vec![
            run(&["delete", "--force", "--team", "u"]),
            run(&["up"]),
            run(&["create", "c"]),
            run(&["delete", "--force", "--team", "c"]),
        ];
        for child in &mut racing {
            child.wait().unwrap();
        }
        match std::fs::read_to_string(&current) {
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "round {rounds}"),
            Ok(named) => {
                let team = named.trim();
                assert!(
                    env.team_dir(team).join("config.json").is_file(),
                    "round {rounds}: the record names {named:?}, which does not exist"
                );
            }
        }
        // `doctor` keeps quiet about a directory this young (it may be a team being made):
        // looked at here directly.
        for t in ["u", "c"] {
            assert!(
                !env.team_dir(t).exists() || env.team_dir(t).join("config.json").is_file(),
                "round {rounds}: team {t}'s directory is left without its team file"
            );
        }
        // The next round starts with neither team.
        for t in ["u", "c"] {
            if env.team_dir(t).exists() {
                env.ok(&["delete", "--force", "--team", t]);
            }
        }
    }
    assert!(rounds > 1, "{rounds}");
}

/// A member that does not start (an interactive program that fails a moment after starting,
/// its prompt never shown) fails `up` (exit 1)
/// with its reason said once, in its place, and the end naming who did not start; the rest of
/// the file is done (new-user QA: the reason was printed twice, the second time as the end).
#[test]
fn a_member_that_does_not_start_is_said_once_and_the_rest_comes_up() {
    let env = TestEnv::with_tmux();
    write(
        &env,
        r#"name = "up-fails"

[[member]]
name = "py"
exec = "sh -c 'echo no such model: gpt-7 >&2; sleep 0.5; exit 3'"
interactive = true
prompt-pattern = '^>>> $'

[[member]]
name = "bob"
exec = "cat"
backend = "process"
"#,
    );
    let out = env.run(&["up"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        err.matches("exited as soon as it started").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("teamctl: py (interactive) exited as soon as it started: its program")
            && err.contains("py did not start (why above); the rest of teamctl.toml is done"),
        "{err}"
    );
    assert!(said.contains("bob spawned"), "{said}");
    assert_eq!(ask(&env, "bob", "hi"), "hi");
    // Again: py is resumed and fails again, every time; it was "py resumed", exit 0, once its
    // pane ran, before its program ended (QA; under load, also a program that exits at once).
    for round in 0..8 {
        let out = env.run(&["up"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "round {round}: {out:?}");
        assert!(
            err.contains("py did not start")
                && !String::from_utf8_lossy(&out.stdout).contains("py resumed"),
            "round {round}: {err}"
        );
    }
    // doctor says why it is dead, and what to do when resuming it meets that again (it said
    // neither).
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(
            "py@up-fails is dead: its worker is gone and it was not stopped (its program"
        ) && doctor.contains(
            "if it ends again by itself, `teamctl spawn --team up-fails py ...` with another --exec starts it anew"
        ),
        "{doctor}"
    );
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// A member whose start fails in tmux (its client killed once the server made the split) does
/// not end `up` or `resume` there: the members after it are started, the one that failed is
/// said with why, and the end names who did not start (exit 1). `resume --json` names it
/// under `failed`. (New-user QA: the rest were neither started nor named.)
#[test]
fn a_start_that_fails_in_tmux_does_not_stop_up_or_resume_from_starting_the_rest() {
    let mut env = TestEnv::with_tmux();
    let armed = env.kill_tmux_client_after("split-window");
    write(
        &env,
        r#"name = "up-goes-on"

[[member]]
name = "x1"
exec = "cat"

[[member]]
name = "x2"
exec = "cat"

[[member]]
name = "x3"
exec = "cat"
backend = "process"
"#,
    );
    // The session first (its first pane is the console's, made without a split).
    env.ok(&["create", "up-goes-on"]);
    std::fs::write(&armed, "").unwrap();
    let out = env.run(&["up"]);
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        !armed.exists(),
        "no split went through the wrapper: {out:?}"
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("the tmux client was killed by signal 9")
            && err.contains("x1 did not start (why above); the rest of teamctl.toml is done"),
        "{err}"
    );
    assert!(
        said.contains("x2 spawned") && said.contains("x3 spawned"),
        "{said}"
    );
    for n in ["x2", "x3"] {
        assert_eq!(ask(&env, n, "hi"), "hi");
    }
    // Again with resume: x1 comes up, then both others are killed and resumed with the
    // first split failing.
    env.ok(&["up"]);
    assert_eq!(ask(&env, "x1", "hi"), "hi");
    env.ok(&["kill", "x1", "x2", "x3"]);
    std::fs::write(&armed, "").unwrap();
    let out = env.run(&["--json", "resume", "x1", "x2", "x3"]);
    assert!(
        !armed.exists(),
        "no split went through the wrapper: {out:?}"
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["failed"][0]["name"], "x1", "{json}");
    assert!(
        json["failed"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("killed by signal 9")),
        "{json}"
    );
    let resumed: Vec<&str> = json["resumed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(resumed, ["x2", "x3"], "{json}");
    assert_eq!(env.member_status("x1"), "stopped");
    // In words, the one that did not start is named at the end (re-QA: only the reason).
    env.ok(&["kill", "x2"]);
    std::fs::write(&armed, "").unwrap();
    let out = env.run(&["resume", "x1", "x2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("killed by signal 9")
            && err
                .trim_end()
                .ends_with("teamctl: x1 did not start (why above)"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("x2 resumed"));
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", Duration::from_secs(20), || {
        env.processes().is_empty()
    });
}

/// A team file for `up-tree`: amy in a worktree (`tree`: the `worktree` line, or none) of the
/// repository beside it, bob in the file's directory.
fn tree_file(tree: &str) -> String {
    format!(
        "name = \"up-tree\"\n\n[[member]]\nname = \"amy\"\nexec = \"cat\"\nbackend = \"process\"\ncwd = \"repo\"\n{tree}\n\n[[member]]\nname = \"bob\"\nexec = \"cat\"\nbackend = \"process\"\n"
    )
}

/// Two members on one branch of one repository are refused with the file's lines, before
/// anything is done (new-user QA 48: the second failed once the first had started).
#[test]
fn up_refuses_two_members_on_one_worktree_branch() {
    let env = TestEnv::new();
    let _repo = crate::lifecycle::repo(&env);
    let member = |name: &str| {
        format!(
            "[[member]]\nname = \"{name}\"\nexec = \"cat\"\nbackend = \"process\"\ncwd = \"repo\"\nworktree = \"feat\"\n"
        )
    };
    write(
        &env,
        &format!("name = \"up-dup\"\n\n{}\n{}", member("amy"), member("bob")),
    );
    let err = env.fails(&["up"], 2);
    assert!(
        err.contains("teamctl.toml:15: bob's worktree branch feat is also amy's (line 8)"),
        "{err}"
    );
    assert!(!env.team_dir("up-dup").exists(), "{err}");
}

/// `up --json`'s `spawnedMembers`: each spawned member as `spawn --json` gives it, with where
/// it works (new-user QA 46: `spawned` named them only; it is kept as it was).
#[test]
fn up_json_gives_each_spawned_member_as_spawn_json_does() {
    let env = TestEnv::new();
    let repo = crate::lifecycle::repo(&env);
    write(&env, &tree_file("worktree = true"));
    let v: Value = serde_json::from_str(&env.ok(&["--json", "up"])).unwrap();
    assert_eq!(v["spawned"], serde_json::json!(["amy", "bob"]), "{v}");
    let members = v["spawnedMembers"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{v}");
    let (amy, bob) = (&members[0], &members[1]);
    let tree = env.team_dir("up-tree").join("worktrees/amy");
    assert_eq!(amy["name"], "amy", "{v}");
    assert_eq!(amy["agentId"], "amy@up-tree", "{v}");
    assert_eq!(amy["status"], "idle", "{v}");
    assert_eq!(amy["worktree"], tree.display().to_string(), "{v}");
    assert_eq!(amy["cwd"], amy["worktree"], "{v}");
    assert_eq!(amy["worktreeRepo"], repo.display().to_string(), "{v}");
    assert_eq!(amy["worktreeBranch"], "teamctl/amy@up-tree", "{v}");
    assert_eq!(amy["worktreeCreated"], true, "{v}");
    assert_eq!(amy["worktreeBranchCreated"], true, "{v}");
    assert!(amy["pid"].as_u64().is_some(), "{v}");
    assert_eq!(bob["name"], "bob", "{v}");
    assert!(bob.get("worktree").is_none(), "{v}");
    assert!(bob.get("worktreeCreated").is_none(), "{v}");
    // Nothing spawned the second time.
    let v: Value = serde_json::from_str(&env.ok(&["--json", "up"])).unwrap();
    assert_eq!(v["spawnedMembers"], serde_json::json!([]), "{v}");
    env.ok(&["delete", "--force"]);
}

/// A member whose start fails once `up` has begun (its worktree, on another branch than the
/// file now names, holds uncommitted work, so it is kept and the member not started) is that
/// member's failure: the rest is done, exit 1, and `--json` prints its document, naming it in
/// `failed` and why in `why` (new-user QA 46: `--json up` printed nothing, exit 2, after
/// starting the first).
#[test]
fn a_member_failing_mid_up_is_named_with_why_in_its_json() {
    let env = TestEnv::new();
    crate::lifecycle::repo(&env);
    let bea = |branch: &str| {
        format!(
            "[[member]]\nname = \"bea\"\nexec = \"cat\"\nbackend = \"process\"\ncwd = \"repo\"\nworktree = \"{branch}\"\n"
        )
    };
    write(&env, &format!("name = \"up-mid\"\n\n{}", bea("feat1")));
    env.ok(&["up"]);
    env.ok(&["kill", "bea"]);
    let tree = env.team_dir("up-mid").join("worktrees/bea");
    std::fs::write(tree.join("work.txt"), "mine\n").unwrap();
    write(
        &env,
        &format!(
            "name = \"up-mid\"\n\n[[member]]\nname = \"amy\"\nexec = \"cat\"\nbackend = \"process\"\ncwd = \"repo\"\nworktree = \"feat\"\n\n{}\n[[member]]\nname = \"bob\"\nexec = \"cat\"\nbackend = \"process\"\n",
            bea("feat2")
        ),
    );
    let out = env.run(&["--json", "up"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON document ({e}): {out:?}"));
    assert_eq!(v["spawned"], serde_json::json!(["amy", "bob"]), "{v}");
    assert_eq!(v["failed"], serde_json::json!(["bea"]), "{v}");
    let why = v["why"]["bea"]["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("has uncommitted changes") && why.contains("worktrees/bea"),
        "{v}"
    );
    assert!(tree.join("work.txt").is_file());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bea did not start (why above); the rest of teamctl.toml is done"),
        "{err}"
    );
    assert_eq!(ask(&env, "bob", "hi"), "hi");
    env.ok(&["delete", "--force"]);
}

/// A `worktree` branch changed in the file is applied as `up` says it is: once the member is
/// stopped, `up` replaces its worktree with one on the file's branch (the old branch kept),
/// and so for a file that drops `worktree`; a worktree holding uncommitted work is kept, the
/// member not started, said with the ways on (new-user QA 46: `shutdown && up` kept the old
/// worktree, the file never applied).
#[test]
fn up_applies_a_changed_worktree_branch_once_the_member_is_stopped() {
    let env = TestEnv::new();
    let repo = crate::lifecycle::repo(&env);
    let tree = env.team_dir("up-tree").join("worktrees/amy");
    let branch = || crate::lifecycle::git(&tree, &["branch", "--show-current"]);
    write(&env, &tree_file("worktree = true"));
    env.ok(&["up"]);
    assert_eq!(branch(), "teamctl/amy@up-tree");

    // The file's branch is checked with the rest of the file: one checked out already (the
    // repository's own) is refused, naming its line, and nothing is done.
    env.ok(&["shutdown", "amy"]);
    write(&env, &tree_file("worktree = \"main\""));
    let err = env.fails(&["up"], 2);
    assert!(
        err.contains("teamctl.toml:8: branch main is checked out already")
            && err.contains("`worktree = \"NEW-BRANCH\"` in a team file"),
        "{err}"
    );
    assert_eq!(env.member_status("amy"), "stopped");
    assert_eq!(branch(), "teamctl/amy@up-tree");
    write(&env, &tree_file("worktree = true"));
    assert!(env.ok(&["up"]).contains("amy resumed"));

    write(&env, &tree_file("worktree = \"feat2\""));
    let out = env.ok(&["up"]);
    assert!(
        out.contains("amy is running with another definition")
            && out.contains(r#"worktree: "teamctl/amy@up-tree" → "feat2""#)
            && out.contains("To apply the file: teamctl shutdown amy && teamctl up (its worktree is then replaced"),
        "{out}"
    );
    assert_eq!(branch(), "teamctl/amy@up-tree");
    env.ok(&["shutdown", "amy"]);
    let out = env.ok(&["up"]);
    assert!(
        out.contains("amy spawned anew with its new definition")
            && out.contains(&format!(
                "made worktree {} for amy, on a new branch feat2, in place of its worktree on teamctl/amy@up-tree (it held no uncommitted work; the branch stays)",
                tree.display()
            )),
        "{out}"
    );
    assert_eq!(branch(), "feat2");
    assert_eq!(ask(&env, "amy", "hi"), "hi");
    crate::lifecycle::git(
        &repo,
        &["rev-parse", "--verify", "refs/heads/teamctl/amy@up-tree"],
    );
    // A second `up` changes nothing.
    assert!(env.ok(&["up"]).contains("amy running, as declared"));

    // Uncommitted work: kept, amy not started, the rest done; `--json` says why.
    std::fs::write(tree.join("notes.txt"), "mine\n").unwrap();
    write(&env, &tree_file("worktree = true"));
    env.ok(&["shutdown", "amy"]);
    let out = env.run(&["--json", "up"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failed"], serde_json::json!(["amy"]), "{v}");
    let why = v["why"]["amy"]["error"].as_str().unwrap_or_default();
    assert!(
        why.contains(&format!(
            "amy's worktree {} on branch feat2 has uncommitted changes, so it is kept and amy was not started on branch teamctl/amy@up-tree",
            tree.display()
        )) && why.contains("then `teamctl up`")
            && why.contains("`teamctl shutdown amy --remove-worktree --force` discards it"),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("notes.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(branch(), "feat2");
    assert_eq!(env.member_status("amy"), "stopped");
    assert_eq!(env.member_status("bob"), "idle");

    // Committed, it goes: back on its first branch, which existed.
    crate::lifecycle::git(&tree, &["add", "notes.txt"]);
    crate::lifecycle::git(&tree, &["commit", "-q", "-m", "notes"]);
    let out = env.ok(&["up"]);
    assert!(
        out.contains(&format!(
            "made worktree {} for amy, reusing the branch teamctl/amy@up-tree, in place of its worktree on feat2",
            tree.display()
        )),
        "{out}"
    );
    assert_eq!(branch(), "teamctl/amy@up-tree");

    // Gone already (its work discarded by `--remove-worktree --force`): made on the file's
    // branch, and not said to replace one that "held no uncommitted work" (new-user QA 47).
    std::fs::write(tree.join("scratch.txt"), "thrown away\n").unwrap();
    write(&env, &tree_file("worktree = \"feat2\""));
    env.ok(&["shutdown", "amy", "--remove-worktree", "--force"]);
    assert!(!tree.exists());
    let out = env.ok(&["up"]);
    assert!(
        out.contains(&format!(
            "made worktree {} for amy, reusing the branch feat2",
            tree.display()
        )) && !out.contains("in place of"),
        "{out}"
    );
    assert_eq!(branch(), "feat2");

    // A lock reason its teammate wrote is said on one line (attacker QA 47: its newline
    // forged a line of teamctl's among up's own).
    env.ok(&["shutdown", "amy"]);
    crate::lifecycle::git(
        &tree,
        &[
            "worktree",
            "lock",
            "--reason",
            "in use\nteamctl: amy spawned anew (process, pid 4242)",
            ".",
        ],
    );
    write(&env, &tree_file("worktree = true"));
    let out = env.run(&["up"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("in use\\u{a}teamctl: amy spawned anew")
            && !err
                .lines()
                .any(|l| l.starts_with("teamctl: amy spawned anew")),
        "{err}"
    );
    assert_eq!(branch(), "feat2");
    crate::lifecycle::git(&tree, &["worktree", "unlock", "."]);

    // A file without `worktree`: amy works in the repository itself, its worktree gone.
    write(&env, &tree_file(""));
    env.ok(&["shutdown", "amy"]);
    let out = env.ok(&["up"]);
    assert!(
        out.contains(&format!(
            "amy works in {} now, without a worktree, in place of its worktree on feat2",
            repo.display()
        )),
        "{out}"
    );
    assert!(!tree.exists());
    assert_eq!(
        env.recorded("up-tree", "amy")["cwd"],
        repo.display().to_string()
    );
    assert!(env.recorded("up-tree", "amy").get("worktree").is_none());
    env.ok(&["delete", "--force"]);
}

/// New-user QA 38: `down busy.toml` kept by a teammate that did not answer said "`teamctl
/// down --timeout SECS` waits longer", which read teamctl.toml, another team's ("not up;
/// nothing to do", exit 0). The hints name the file; `delete --team T`'s name the team.
#[test]
fn down_and_delete_hints_name_the_file_and_the_team_given() {
    let env = TestEnv::new();
    let gate = env.work.path().join("never");
    let path = env.work.path().join("busy.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"up-busy\"\n[[member]]\nname = \"slow\"\nbackend = \"process\"\nexec = \"cat\"\non-shutdown = \"while [ ! -e '{}' ]; do sleep 0.05; done\"\n",
            gate.display()
        ),
    )
    .unwrap();
    env.ok(&["up", path.to_str().unwrap()]);
    let err = env.fails(&["down", path.to_str().unwrap(), "--timeout", "1"], 1);
    let file = path.display();
    assert!(
        err.contains(&format!(
            "`teamctl down {file} --timeout SECS` waits longer for the rest, `teamctl down {file} --force` ends them now"
        )),
        "{err}"
    );
    let err = env.fails(&["--team", "up-busy", "delete", "--timeout", "1"], 1);
    assert!(
        err.contains(
            "`teamctl delete --team up-busy --timeout SECS` waits longer for the rest, `teamctl delete --team up-busy --force` ends them now"
        ),
        "{err}"
    );
    std::fs::write(&gate, "").unwrap();
    env.ok(&["down", path.to_str().unwrap()]);
    wait_until("no worker left", WAIT, || env.processes().is_empty());
}
