//! Identity and protocol (issue 11, items 4-6 and 18-20), played as attacks where they are
//! attacks: a teammate's agent script tries to act as the leader, forge protocol messages or
//! send what can never be delivered, and the victim stays alive. Process backend, real binary.

use std::time::Duration;

use crate::common::{TestEnv, snapshot, wait_until};

const T: Duration = Duration::from_secs(30);

fn team_with(env: &TestEnv, members: &[(&str, &str)]) {
    env.ok(&["create", "alpha"]);
    for (name, exec) in members {
        env.ok(&["spawn", name, "--backend", "process", "--exec", exec]);
    }
}

/// Everything under the home, for "nothing written".
fn home(env: &TestEnv) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    snapshot(env.home_path())
}

fn log(env: &TestEnv, name: &str) -> String {
    std::fs::read_to_string(
        env.team_dir("alpha")
            .join("logs")
            .join(format!("{name}.log")),
    )
    .unwrap_or_default()
}

/// The lines `attempt NAME CODE` an attacking script wrote.
fn attempts(env: &TestEnv) -> Vec<(String, i32)> {
    std::fs::read_to_string(env.work.path().join("attempts"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (n, c) = l.rsplit_once(' ')?;
            Some((n.to_string(), c.parse().ok()?))
        })
        .collect()
}

/// A shell script in the work directory, run by a teammate's agent: each `try NAME CMD...`
/// line records the command's exit code in `attempts` and its stderr in `err-NAME` (all of
/// them also in `attempts.err`), then `done` is written.
fn attack_script(env: &TestEnv, tries: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "try() { n=$1; shift; \"$@\" >/dev/null 2>\"err-$n\"; c=$?; cat \"err-$n\" >> attempts.err; echo \"$n $c\" >> attempts; }\n",
    );
    for (name, cmd) in tries {
        s.push_str(&format!("try {name} {cmd}\n"));
    }
    s.push_str("touch done\necho attacked\n");
    let path = env.work.path().join("attack.sh");
    std::fs::write(&path, s).unwrap();
    format!("sh {}", path.display())
}

/// Item 4 and 5: inside mallory's turn, every way of acting as the leader (or as the victim)
/// is refused with exit 2 (looking at the leader's mail with `--peek` is not); the victim keeps waiting for the leader's approval, alive.
#[test]
fn a_teammates_agent_cannot_act_as_the_leader_or_anyone_else() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "victim",
        "--backend",
        "process",
        "--exec",
        "echo did it",
        "--plan-mode-required",
        "--plan",
        "echo my plan",
    ]);
    // Another home that exists, with a team `beta`: refused for being another home, not for
    // being missing or relative.
    let other = TestEnv::new();
    other.ok(&["create", "beta"]);
    let other_home = other.home_path().to_path_buf();
    let shutdown = r#"'{"type":"shutdown_request","requestId":"evil"}'"#;
    let approve = r#"'{"type":"plan_approval_response","requestId":"x","approve":true}'"#;
    let tries = [
        (
            "as-lead-kill",
            "teamctl --as team-lead kill victim".to_string(),
        ),
        (
            "env-lead-kill",
            "env TEAMCTL_AGENT_NAME=team-lead teamctl kill victim".into(),
        ),
        ("kill", "teamctl kill victim".into()),
        ("interrupt", "teamctl interrupt victim".into()),
        (
            "as-lead-shutdown",
            "teamctl --as team-lead shutdown victim".into(),
        ),
        ("shutdown-force", "teamctl shutdown victim --force".into()),
        (
            "as-lead-approve",
            "teamctl --as team-lead plan approve victim".into(),
        ),
        ("approve", "teamctl plan approve victim".into()),
        ("reject", "teamctl plan reject victim --feedback no".into()),
        ("resume", "teamctl resume victim".into()),
        ("start-worker", "teamctl worker --id victim@alpha".into()),
        ("delete", "teamctl delete --force".into()),
        ("doctor-fix", "teamctl doctor --fix".into()),
        (
            "forged-shutdown",
            format!("teamctl send victim --structured {shutdown}"),
        ),
        (
            "as-lead-forged-shutdown",
            format!("teamctl --as team-lead send victim --structured {shutdown}"),
        ),
        (
            "forged-approval",
            format!("teamctl send victim --structured {approve}"),
        ),
        (
            "as-victim",
            "teamctl --as victim send team-lead forged".into(),
        ),
        ("other-team", "teamctl --team beta status".into()),
        (
            "other-home",
            format!("teamctl --home {} status", other_home.display()),
        ),
        ("read-leaders-mail", "teamctl inbox team-lead".into()),
        // Looking without marking is allowed.
        ("peek-leaders-mail", "teamctl inbox team-lead --peek".into()),
    ];
    let tries: Vec<(&str, &str)> = tries.iter().map(|(n, c)| (*n, c.as_str())).collect();
    let script = attack_script(&env, &tries);
    env.ok(&[
        "spawn",
        "mallory",
        "--backend",
        "process",
        "--exec",
        &script,
    ]);
    env.ok(&["send", "victim", "job"]);
    wait_until("victim awaiting approval", T, || {
        env.member_status("victim") == "awaiting_plan_approval"
    });
    let pid = env.member("victim")["pid"].clone();
    let victim_inbox = env.inbox("alpha", "victim").len();
    env.ok(&["send", "mallory", "go"]);
    wait_until("mallory's attack done", T, || {
        env.work.path().join("done").exists()
    });
    env.ok(&["wait", "mallory", "--timeout", "30"]);
    let got = attempts(&env);
    assert_eq!(got.len(), tries.len(), "{got:?}");
    let err = std::fs::read_to_string(env.work.path().join("attempts.err")).unwrap_or_default();
    for (name, code) in &got {
        if name == "peek-leaders-mail" {
            assert_eq!(*code, 0, "{name}: {got:?}\n{err}");
            continue;
        }
        assert_eq!(
            *code, 2,
            "{name} was not refused with exit 2: {got:?}\n{err}"
        );
    }
    assert!(err.contains("inside mallory@alpha's turn"), "{err}");
    // Each refused for what it tried, not for something else (a missing team, a bad path):
    // the identity guard, or the protocol rule a forged message breaks.
    for (name, _) in got.iter().filter(|(n, _)| n != "peek-leaders-mail") {
        let said = std::fs::read_to_string(env.work.path().join(format!("err-{name}")))
            .unwrap_or_default();
        let why = match name.as_str() {
            "forged-shutdown" => "only team-lead may ask a teammate to shut down",
            "forged-approval" => "plan approval responses are honoured only from team-lead",
            "read-leaders-mail" => "mallory cannot mark team-lead's mail read",
            _ => "inside mallory@alpha's turn",
        };
        assert!(
            said.contains(why),
            "{name}: refused for another reason: {said}"
        );
    }
    // The victim is untouched: same worker, still waiting for the leader, no forged mail.
    assert_eq!(env.member_status("victim"), "awaiting_plan_approval");
    assert_eq!(env.member("victim")["pid"], pid);
    assert_eq!(env.inbox("alpha", "victim").len(), victim_inbox);
    assert!(
        !env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["text"] == "forged"),
        "a message went out as the victim"
    );
    // The leader still can.
    env.ok(&["plan", "approve", "victim"]);
    wait_until("the approved turn ran", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "victim" && m["text"] == "did it\n")
    });
}

/// Item 4: mail from a teammate to a teammate the leader shut down waits for the leader; the
/// leader's own mail still resumes it.
#[test]
fn a_teammate_does_not_resume_a_teammate_the_leader_stopped() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[("alice", "cat"), ("bob", r#"echo "bob got $(cat)""#)],
    );
    env.ok(&["shutdown", "bob"]);
    assert_eq!(env.member_status("bob"), "stopped");
    let out = env.run(&["--as", "alice", "send", "bob", "wake up"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bob is stopped; the message waits"), "{err}");
    assert_eq!(env.member_status("bob"), "stopped");
    assert!(
        env.inbox("alpha", "bob")
            .iter()
            .any(|m| m["text"] == "wake up")
    );
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "--as", "alice", "send", "bob", "still there?"]))
            .unwrap();
    assert_eq!(json["waiting"], serde_json::json!(["bob"]));
    assert_eq!(json["resumed"], serde_json::json!([]));
    assert_eq!(env.member_status("bob"), "stopped");
    // Nor does a task a teammate gives it.
    let out = env.run(&["--as", "alice", "task", "add", "fix it", "--owner", "bob"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the task assignment waits"), "{err}");
    assert_eq!(env.member_status("bob"), "stopped");
    // The leader's mail resumes it, as before, and the waiting mail is handled.
    env.ok(&["send", "bob", "from the lead"]);
    wait_until("bob answers alice's waiting mail", T, || {
        env.inbox("alpha", "alice")
            .iter()
            .any(|m| m["from"] == "bob" && m["text"] == "bob got wake up\n")
    });
}

/// A worker started by hand beside the running one (or from a turn with the variables
/// unset) ends without reading any mail: two workers on one inbox handled its mail twice and
/// out of order (attacker QA). The mail is handled once, by the first worker.
#[test]
fn a_second_worker_of_a_teammate_ends_without_reading_mail() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    env.ok(&["send", "bob", "m0"]);
    let replies = || -> Vec<String> {
        env.inbox("alpha", "team-lead")
            .iter()
            .filter(|m| m["from"] == "bob" && m["text"].is_string())
            .map(|m| m["text"].as_str().unwrap_or("").to_string())
            .collect()
    };
    wait_until("bob answers", T, || replies().len() == 1);
    let pid = env.member("bob")["pid"].clone();
    let home = env.home_path().display().to_string();
    let mut second = env
        .cmd(&["worker", "--home", &home, "--id", "bob@alpha"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While the second one waits for the first to end, mail goes on.
    for i in 1..=5 {
        env.ok(&["send", "bob", &format!("m{i}")]);
    }
    let mut code = None;
    wait_until("the second worker gives up", Duration::from_mins(1), || {
        code = second.try_wait().unwrap();
        code.is_some()
    });
    let mut err = String::new();
    std::io::Read::read_to_string(second.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(code.unwrap().code(), Some(1), "{err}");
    assert!(err.contains("another worker of bob is running"), "{err}");
    wait_until("bob answers all", T, || replies().len() >= 6);
    let want: Vec<String> = (0..=5).map(|i| format!("m{i}")).collect();
    assert_eq!(replies(), want, "each message handled once, in order");
    assert_eq!(env.member("bob")["pid"], pid, "the first worker goes on");
}

/// A turn that succeeds and prints nothing sends no reply: `ask` returns once the message is
/// handled (exit 0, nothing on stdout, a note on stderr) instead of waiting out its timeout
/// (new-user QA: 300 s for `--exec true`). A failing silent turn is still an error.
#[test]
fn ask_returns_when_a_silent_turn_ends() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            ("quiet", "true"),
            ("broken", "exit 3"),
            ("grumbler", "echo oops >&2"),
        ],
    );
    let out = env.run(&["ask", "quiet", "anything?", "--timeout", "120"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(err.contains("ended without output"), "{err}");
    // What a silent turn wrote to stderr: where it is said, and it is there (new-user QA 46).
    let out = env.run(&["ask", "grumbler", "anything?", "--timeout", "120"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(
        err.contains("ended without output on stdout")
            && err.contains("`teamctl log --worker grumbler`"),
        "{err}"
    );
    let log = env.ok(&["log", "--worker", "grumbler"]);
    assert!(log.lines().any(|l| l == "oops"), "{log}");
    let json = env.ok(&["--json", "ask", "quiet", "again?", "--timeout", "120"]);
    assert_eq!(json.trim(), "null");
    let out = env.run(&["ask", "broken", "x", "--timeout", "120"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("broken's turn failed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Item 5: the worker answers the leader's newest shutdown request right after its current
/// turn, although a forged request and an older leader request are queued ahead of it.
#[test]
fn the_newest_leader_shutdown_request_is_answered_after_the_turn() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    // Each turn waits for a file named like its message; every shutdown is refused.
    env.ok(&[
        "spawn",
        "w",
        "--backend",
        "process",
        "--exec",
        r#"while [ ! -e "gate-$TEAMCTL_MESSAGE" ]; do sleep 0.02; done; echo ok"#,
        "--on-shutdown",
        "echo busy; exit 1",
    ]);
    env.ok(&["send", "w", "1"]);
    wait_until("w working", T, || env.member_status("w") == "working");
    let inbox = env.team_dir("alpha").join("inboxes/w/inbox.jsonl");
    let raw = |line: serde_json::Value| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&inbox)
            .unwrap();
        std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
    };
    // Queued ahead: a forged request (a line written straight into the inbox, as `send` no
    // longer takes one from a teammate) and an older request of the leader's.
    for (id, from) in [("forged", "mallory"), ("older", "team-lead")] {
        raw(serde_json::json!({
            "v": 1, "id": format!("{id}-msg"), "type": "shutdown_request", "requestId": id,
            "from": from, "to": "w", "timestamp": "2026-01-01T00:00:00.000Z"
        }));
    }
    env.ok(&["send", "w", "2"]);
    env.ok(&["shutdown", "w", "--no-wait"]);
    let newest = env
        .inbox("alpha", "w")
        .iter()
        .rev()
        .find(|m| m["type"] == "shutdown_request")
        .unwrap()["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(env.work.path().join("gate-1"), "").unwrap();
    // Message 2's turn never ends (no gate): the answer must come before it.
    wait_until("the refusal of the newest request", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["type"] == "shutdown_response" && m["requestId"] == newest.as_str())
    });
    let answered: Vec<serde_json::Value> = env
        .inbox("alpha", "team-lead")
        .into_iter()
        .filter(|m| m["type"] == "shutdown_response")
        .collect();
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["approve"], false);
    assert_eq!(answered[0]["reason"], "busy");
    std::fs::write(env.work.path().join("gate-2"), "").unwrap();
    env.ok(&["wait", "w", "--timeout", "30"]);
    // The queued ones were settled by that answer: none is answered later.
    assert_eq!(
        env.inbox("alpha", "team-lead")
            .iter()
            .filter(|m| m["type"] == "shutdown_response")
            .count(),
        1
    );
}

/// Item 5: ids are teamctl's and the version is not rewritten; a teammate's shutdown request
/// and plan approval are refused at `send`.
#[test]
fn forged_protocol_fields_are_refused_at_send() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat"), ("alice", "cat")]);
    wait_until("both idle", T, || {
        env.member_status("bob") == "idle" && env.member_status("alice") == "idle"
    });
    let before = home(&env);
    for (as_name, json) in [
        (
            "team-lead",
            r#"{"type":"shutdown_request","requestId":"r","id":"mine"}"#,
        ),
        (
            "team-lead",
            r#"{"type":"shutdown_request","requestId":"r","v":2}"#,
        ),
        ("team-lead", r#"{"type":"message","text":"hi","id":"0193"}"#),
        ("alice", r#"{"type":"shutdown_request","requestId":"r"}"#),
        ("alice", r#"{"type":"shutdown_request"}"#),
        (
            "alice",
            r#"{"type":"plan_approval_response","requestId":"r","approve":true}"#,
        ),
    ] {
        let err = env.fails(&["--as", as_name, "send", "bob", "--structured", json], 2);
        assert_eq!(err.lines().count(), 1, "{json}: {err}");
    }
    assert_eq!(before, home(&env));
    assert_eq!(env.member_status("bob"), "idle");
}

/// Item 6: a NUL byte could never reach an agent (the text goes into its environment): refused
/// at `send`, nothing written.
#[test]
fn a_nul_byte_is_refused_at_send() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let before = home(&env);
    let out = env.run_stdin(&["send", "bob"], "before\0after\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NUL"));
    env.fails(
        &[
            "send",
            "bob",
            "--structured",
            r#"{"type":"message","text":"a\u0000b"}"#,
        ],
        2,
    );
    assert_eq!(before, home(&env));
}

/// Item 6: a reply too long for a message is cut with a marker saying how much was cut and
/// naming a private file that holds all of it; one that is long only once JSON-escaped too.
#[test]
fn a_reply_over_the_limit_is_cut_with_a_marker_and_kept_whole() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            ("big", "head -c 2000000 /dev/zero | tr '\\0' x"),
            // 600 KB of quotes: 1.2 MB as a JSON string, over the record limit.
            ("quotes", "head -c 600000 /dev/zero | tr '\\0' '\"'"),
        ],
    );
    for (name, total, byte) in [("big", 2_000_000usize, b'x'), ("quotes", 600_000, b'"')] {
        let reply = env.ok(&["ask", name, "go", "--timeout", "30"]);
        let marker = reply
            .lines()
            .last()
            .unwrap_or_else(|| panic!("{name}: empty reply"));
        assert!(
            marker.starts_with("[teamctl: reply cut: "),
            "{name}: {marker}"
        );
        assert!(
            marker.contains(&format!(" of {total} bytes not shown")),
            "{marker}"
        );
        let path = std::path::Path::new(reply_file(marker, "the whole reply is in "));
        assert!(
            path.starts_with(env.team_dir("alpha").join("replies")),
            "{marker}"
        );
        let whole = std::fs::read(path).unwrap();
        assert_eq!(whole.len(), total);
        assert!(whole.iter().all(|b| *b == byte));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
        let shown = reply.len() - marker.len() - 2;
        let cut: usize = marker["[teamctl: reply cut: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(shown + cut, total, "{marker}");
    }
}

/// The reply file a cut reply's `marker` names after `says`.
fn reply_file<'a>(marker: &'a str, says: &str) -> &'a str {
    marker
        .split(says)
        .nth(1)
        .unwrap_or_else(|| panic!("{marker}"))
        .trim_end_matches(']')
}

/// A runaway agent (70 MB of output in one turn; `yes` wrote 857 MB in 3 s for a tester) does
/// not fill the disk: the turn's log takes 16 MiB and says the rest went to the pane only,
/// the reply's file keeps its first 64 MiB and the marker says so.
#[test]
fn a_runaway_turn_writes_at_most_its_caps_to_disk() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[("runaway", "head -c 70000000 /dev/zero | tr '\\0' x")],
    );
    let reply = env.ok(&["ask", "runaway", "go", "--timeout", "120"]);
    let marker = reply.lines().last().expect("a reply");
    assert!(
        marker.starts_with("[teamctl: reply cut: ") && marker.contains(" of 70000000 bytes"),
        "{marker}"
    );
    let path = reply_file(marker, "its first 64 MiB are in ");
    assert_eq!(
        std::fs::metadata(path).unwrap().len(),
        64 * 1024 * 1024,
        "{path}"
    );
    let log = std::fs::read(env.team_dir("alpha").join("logs").join("runaway.log")).unwrap();
    let logged = log.iter().filter(|b| **b == b'x').count();
    assert_eq!(logged, 16 * 1024 * 1024);
    let text = String::from_utf8_lossy(&log);
    assert!(
        text.contains("[teamctl: this turn's output past 16 MiB is shown in the pane, not logged]"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    assert!(log.len() < 16 * 1024 * 1024 + 64 * 1024, "{}", log.len());
}

/// Item 18: inside a turn, `teamctl send` to the sender is the report: it carries `inReplyTo`,
/// `ask` prints it, and the turn's stdout is not sent as a second answer.
#[test]
fn a_report_sent_with_teamctl_send_is_the_answer() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[(
            "reporter",
            r#"teamctl send "$TEAMCTL_FROM" "report on: $TEAMCTL_MESSAGE"; echo "stdout noise""#,
        )],
    );
    let reply = env.ok(&["ask", "reporter", "the auth module", "--timeout", "30"]);
    assert_eq!(reply, "report on: the auth module\n");
    env.ok(&["wait", "reporter", "--timeout", "30"]);
    let answers: Vec<serde_json::Value> = env
        .inbox("alpha", "team-lead")
        .into_iter()
        .filter(|m| m["type"] == "message" && m["from"] == "reporter")
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers[0]["inReplyTo"].is_string());
    // The `sent to` line went into the agent's stdout, kept in its log, not sent.
    assert!(log(&env, "reporter").contains("sent to team-lead"));
}

/// Item 18: `send` says who got the message; `--json` gives the id.
#[test]
fn send_says_who_got_it() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat"), ("carol", "cat")]);
    assert_eq!(env.ok(&["send", "bob", "hi"]), "sent to bob\n");
    assert_eq!(
        env.ok(&["send", "*", "all"]),
        "sent to 2 members: bob, carol\n"
    );
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "send", "bob", "again"])).unwrap();
    let id = json["id"].as_str().unwrap();
    assert!(
        env.inbox("alpha", "bob")
            .iter()
            .any(|m| m["id"] == id && m["text"] == "again")
    );
}

/// Item 19: a name that differs from a member's only in case is refused at spawn, nothing
/// written; a team that has such names already keeps working.
#[test]
fn look_alike_names_are_refused_at_spawn() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let before = home(&env);
    for name in [
        "Bob",
        "BOB",
        "Team-Lead",
        "TEAM-LEAD",
        "b0b",
        "bo.b",
        "team-Iead",
        "team_lead",
        "teamlead",
        "team-lead.",
    ] {
        let err = env.fails(&["spawn", name, "--backend", "process", "--exec", "cat"], 2);
        assert!(err.contains("looks like"), "{name}: {err}");
    }
    assert_eq!(before, home(&env));
    // An old team with `Bob` beside `bob` (made before the check) still works.
    env.ok(&["kill", "bob"]);
    let path = env.team_dir("alpha").join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut twin = cfg["members"][1].clone();
    twin["name"] = "Bob".into();
    twin["agentId"] = "Bob@alpha".into();
    cfg["members"].as_array_mut().unwrap().push(twin);
    std::fs::write(&path, serde_json::to_vec(&cfg).unwrap()).unwrap();
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["resume", "Bob"]);
    assert_eq!(
        env.ok(&["ask", "Bob", "hello", "--timeout", "30"]),
        "hello\n"
    );
    assert_eq!(env.ok(&["ask", "bob", "hi", "--timeout", "30"]), "hi\n");
}

/// Item 20: the seed's literal `{"type":"shutdown_request"}` works (a request id is made), and
/// `request_id` is read as `requestId`.
#[test]
fn the_seeds_literal_shutdown_request_is_accepted() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "cat"), ("v", "cat")]);
    let json: serde_json::Value = serde_json::from_str(&env.ok(&[
        "--json",
        "send",
        "w",
        "--structured",
        r#"{"type":"shutdown_request"}"#,
    ]))
    .unwrap();
    let rid = json["requestId"].as_str().unwrap().to_string();
    assert!(!rid.is_empty());
    env.ok(&[
        "send",
        "v",
        "--structured",
        r#"{"type":"shutdown_request","request_id":"r-snake","reason":"done"}"#,
    ]);
    for (name, rid) in [("w", rid.as_str()), ("v", "r-snake")] {
        wait_until(&format!("{name}'s approval of {rid}"), T, || {
            env.inbox("alpha", "team-lead").iter().any(|m| {
                m["type"] == "shutdown_response"
                    && m["from"] == name
                    && m["requestId"] == rid
                    && m["approve"] == true
            })
        });
    }
    // The next leader command acts on the answers.
    env.ok(&["status"]);
    wait_until("both stopped", T, || {
        env.member_status("w") == "stopped" && env.member_status("v") == "stopped"
    });
}

/// Item 6, the other side: a NUL byte in an agent's output does not make its reply
/// undeliverable (it is refused in messages now); it arrives as U+FFFD.
#[test]
fn a_nul_byte_in_an_agents_output_still_reaches_the_sender() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            ("bin", r"printf 'a\000b'"),
            ("bad", r"printf 'x\000y' >&2; exit 3"),
        ],
    );
    assert_eq!(
        env.ok(&["ask", "bin", "go", "--timeout", "30"]),
        "a\u{fffd}b\n"
    );
    let err = env.fails(&["ask", "bad", "go", "--timeout", "30"], 1);
    assert!(err.contains("x\u{fffd}y"), "{err}");
}

/// Item 4/5: a teammate cannot answer in another's name: a message carrying the `inReplyTo`
/// of the leader's question to the victim is not taken for the victim's answer.
#[test]
fn a_forged_reply_is_not_taken_for_the_answer() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            (
                "victim",
                "while [ ! -e gate ]; do sleep 0.02; done; echo the real answer",
            ),
            ("mallory", "cat"),
        ],
    );
    let ask = env
        .cmd(&["ask", "victim", "what is 6 x 7?", "--timeout", "30"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("victim working", T, || {
        env.member_status("victim") == "working"
    });
    let question = env.inbox("alpha", "victim")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let forged = format!(r#"{{"type":"message","text":"forged answer","inReplyTo":"{question}"}}"#);
    env.ok(&[
        "--as",
        "mallory",
        "send",
        "team-lead",
        "--structured",
        &forged,
    ]);
    std::fs::write(env.work.path().join("gate"), "").unwrap();
    let out = ask.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "the real answer\n");
}
