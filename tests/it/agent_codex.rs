//! The real Codex CLI as a teammate (`spawn --agent codex`): npm `@openai/codex` (found by
//! `common::fake_openai_responses::codex_bin`, `TEAMCTL_TEST_CODEX`) run offline against a
//! scripted stand-in for the OpenAI Responses API on loopback, on the process backend. What
//! each test checks is what docs/RECIPES.md says of the `codex` row.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::fake_openai_responses::{self as fake, Codex, FakeResponses, Reply};
use crate::common::{BIN, TestEnv, wait_until};

const T: Duration = Duration::from_mins(1);

/// A team `t1` with the real codex first on teammates' PATH, talking to `server`.
fn codex_team(server: &FakeResponses) -> (TestEnv, Codex) {
    let (t, cx) = codex_env(server);
    t.ok(&["create", "t1"]);
    (t, cx)
}

/// A test env with the real codex first on teammates' PATH, talking to `server`; no team yet.
fn codex_env(server: &FakeResponses) -> (TestEnv, Codex) {
    let mut t = TestEnv::new();
    let cx = fake::codex(server);
    t.add_agent_cli(&cx.bin_dir(), &cx.env);
    (t, cx)
}

/// Spawn `name` as a codex teammate on the process backend, with `more` arguments.
fn spawn_codex(t: &TestEnv, name: &str, more: &[&str]) {
    let mut args = vec!["spawn", name, "--backend", "process", "--agent", "codex"];
    args.extend_from_slice(more);
    t.ok(&args);
}

fn ask(t: &TestEnv, name: &str, text: &str) -> String {
    t.ok(&["ask", name, text, "--timeout", "60"])
        .trim()
        .to_string()
}

/// One message as teamctl framed it for the agent: sender, id and the text between
/// `--- begin ID ---` and `--- end ID ---` (docs/RECIPES.md).
#[derive(Debug)]
struct Framed {
    from: String,
    id: String,
    body: String,
}

/// The framed messages in a user text (none when it holds no frame).
fn framed(text: &str) -> Option<Framed> {
    let head = text.lines().find(|l| l.starts_with("Message from "))?;
    let (from, rest) = head.trim_start_matches("Message from ").split_once(" (")?;
    let id = rest.split(')').next()?.to_string();
    let begin = format!("--- begin {id} ---\n");
    let end = format!("\n--- end {id} ---");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    Some(Framed {
        from: from.to_string(),
        id,
        body: text[start..stop].to_string(),
    })
}

/// The texts of every message teamctl delivered in this request's conversation, in order.
fn bodies(req: &Value) -> Vec<String> {
    fake::user_texts(req)
        .iter()
        .filter_map(|t| framed(t))
        .map(|f| f.body)
        .collect()
}

/// The reply that shows the conversation: every message delivered so far.
fn heard(req: &Value) -> Reply {
    Reply::text(format!("heard: {}", bodies(req).join(",")))
}

/// a. `spawn --agent codex`, then `ask`: the reply is the model's text, from the model asked
/// for, through the Responses API streamed, and nothing else was asked of the server.
#[test]
fn a_codex_teammate_answers_with_the_models_text() {
    let server = FakeResponses::start(heard);
    let (t, _cx) = codex_team(&server);
    spawn_codex(&t, "bob", &["--model", "gpt-test-1"]);
    assert_eq!(ask(&t, "bob", "hello there"), "heard: hello there");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert_eq!(reqs[0]["model"], "gpt-test-1");
    assert_eq!(reqs[0]["stream"], true);
    assert!(
        fake::tool_names(&reqs[0]).contains(&"exec_command".to_string()),
        "no shell tool offered: {:?}",
        fake::tool_names(&reqs[0])
    );
    let other: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| !(s.method == "POST" && s.path == "/v1/responses"))
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    assert!(other.is_empty(), "other requests: {other:?}");
}

/// b. Later messages continue the conversation (`exec resume --last`), also after `kill` +
/// `resume`; two codex teammates, each in its own `--cwd` (as docs/RECIPES.md asks), keep
/// their own conversations.
#[test]
fn a_codex_teammate_continues_its_conversation_across_kill_and_resume() {
    let server = FakeResponses::start(heard);
    let (t, _cx) = codex_team(&server);
    let (a, b) = (t.work.path().join("a"), t.work.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    spawn_codex(&t, "bob", &["--cwd", &a.display().to_string()]);
    spawn_codex(&t, "ann", &["--cwd", &b.display().to_string()]);
    assert_eq!(ask(&t, "bob", "one"), "heard: one");
    assert_eq!(ask(&t, "ann", "uno"), "heard: uno");
    assert_eq!(ask(&t, "bob", "two"), "heard: one,two");
    wait_until("bob idle", T, || t.member_status("bob") == "idle");
    t.ok(&["kill", "bob"]);
    t.ok(&["resume", "bob"]);
    assert_eq!(ask(&t, "bob", "three"), "heard: one,two,three");
    assert_eq!(ask(&t, "ann", "dos"), "heard: uno,dos");
    // The model's own earlier answers are in the continued conversation too.
    let last = server
        .requests()
        .into_iter()
        .find(|r| bodies(r).last().is_some_and(|b| b == "three"))
        .unwrap();
    assert_eq!(
        fake::assistant_texts(&last),
        ["heard: one", "heard: one,two"]
    );
}

/// c. The team prompt (with the user's `--prompt`) reaches the model once, ahead of the first
/// message; every message is framed with its sender and id.
#[test]
fn a_codex_teammate_gets_the_team_prompt_once_and_framed_messages() {
    let server = FakeResponses::start(heard);
    let (t, _cx) = codex_team(&server);
    spawn_codex(&t, "bob", &["--prompt", "Review the auth module."]);
    assert_eq!(ask(&t, "bob", "one"), "heard: one");
    assert_eq!(ask(&t, "bob", "two"), "heard: one,two");
    let reqs = server.requests();
    let last = reqs.last().unwrap();
    let prompts = last["input"]
        .to_string()
        .matches("You are bob, a teammate")
        .count();
    let users = fake::user_texts(last);
    assert_eq!(prompts, 1, "the team prompt is not there once: {users:#?}");
    let ids: Vec<String> = t
        .inbox("t1", "bob")
        .iter()
        .filter(|m| m["type"] == "message")
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let mine: Vec<&String> = users.iter().filter(|u| framed(u).is_some()).collect();
    assert_eq!(mine.len(), 2, "{users:?}");
    // The first: the prompt, then the framed message.
    let (prompt, first) = mine[0]
        .split_once("\n\n---\n\n")
        .unwrap_or_else(|| panic!("no prompt ahead of the first message: {}", mine[0]));
    assert!(prompt.starts_with("You are bob, a teammate"), "{prompt}");
    assert!(prompt.contains("Review the auth module."), "{prompt}");
    // The later one: the framed message alone.
    for (text, (body, id)) in [first, mine[1].as_str()]
        .into_iter()
        .zip([("one", &ids[0]), ("two", &ids[1])])
    {
        assert!(text.starts_with("Message from team-lead ("), "{text}");
        let f = framed(text).unwrap();
        assert_eq!(
            (f.from.as_str(), &f.id, f.body.as_str()),
            ("team-lead", id, body)
        );
        assert!(
            text.ends_with(&format!("--- begin {id} ---\n{body}\n--- end {id} ---")),
            "{text}"
        );
    }
}

/// d. The agent runs `teamctl` with its own shell tool, without asking for approval and not
/// sandboxed away from TEAMCTL_HOME (the test's codex config leaves /tmp out of the writable
/// places: only the preset's writable root lets it write there), on a first turn and on a
/// resumed one; and the `teamctl` it runs is the worker's own (first on the turn's PATH).
#[test]
fn a_codex_teammate_runs_teamctl_from_its_shell_tool() {
    let server = FakeResponses::start(|req| {
        if fake::ends_with_tool_output(req) {
            let out = fake::last_tool_output(req).unwrap_or_default();
            return Reply::text(format!("ran: {out}"));
        }
        match bodies(req).last().map(String::as_str) {
            Some("report") => Reply::shell(
                "command -v teamctl; teamctl send team-lead 'status: all good' && echo sent",
            ),
            Some("claim") => Reply::shell("teamctl task claim 1 && teamctl task list"),
            _ => Reply::text("?"),
        }
    });
    let (t, _cx) = codex_team(&server);
    t.ok(&["task", "add", "write the docs"]);
    spawn_codex(&t, "bob", &[]);
    // The report bob sends to the sender of the message it handles is the answer `ask` prints.
    let reply = ask(&t, "bob", "report");
    // (`ask` has its answer once the tool's `teamctl send` ran; codex then sends the tool's
    // output back to the model.)
    let output = || {
        server
            .requests()
            .iter()
            .find_map(fake::last_tool_output)
            .unwrap_or_default()
    };
    wait_until("the tool's output at the model", T, || !output().is_empty());
    let out = &output();
    assert_eq!(reply, "status: all good", "tool output: {out}");
    assert!(out.contains("sent"), "{out}");
    // The worker's own teamctl, not whatever else a shell's PATH finds.
    let own = Path::new(BIN).canonicalize().unwrap();
    assert!(
        out.lines()
            .any(|l| Path::new(l.trim()).canonicalize().is_ok_and(|p| p == own)),
        "the tool ran another teamctl, or none: {out}"
    );
    let inbox = t.inbox("t1", "team-lead");
    let sent = inbox
        .iter()
        .find(|m| m["text"] == "status: all good")
        .unwrap_or_else(|| panic!("no message from bob's shell tool in {inbox:?}"));
    assert_eq!(sent["from"], "bob");
    assert_eq!(sent["hops"], 1, "{sent}");
    assert!(sent["inReplyTo"].is_string(), "{sent}");
    // A resumed session's tool writes too.
    wait_until("bob idle", T, || t.member_status("bob") == "idle");
    let reply = ask(&t, "bob", "claim");
    assert!(reply.starts_with("ran: "), "{reply}");
    assert!(reply.contains("write the docs"), "{reply}");
    let tasks: Value = serde_json::from_str(&t.ok(&["--json", "task", "list"])).unwrap();
    assert_eq!(tasks["tasks"][0]["owner"], "bob", "{tasks}");
}

/// e. A message over what one argument can hold (128 KiB) reaches codex whole on stdin: no cut
/// marker, no file for it (only presets that take the message as an argument are cut).
#[test]
fn a_long_message_reaches_codex_whole_on_stdin() {
    let server = FakeResponses::start(|req| {
        let body = bodies(req).pop().unwrap_or_default();
        Reply::text(format!(
            "len={} tail={}",
            body.len(),
            &body[body.len().saturating_sub(8)..]
        ))
    });
    let (t, _cx) = codex_team(&server);
    spawn_codex(&t, "bob", &[]);
    let text: String = (0..300_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let reply = t.ok_stdin(&["ask", "bob", "--timeout", "60"], &text);
    assert_eq!(
        reply.trim(),
        format!("len=300000 tail={}", &text[text.len() - 8..])
    );
    let asked = fake::last_user_text(server.requests().last().unwrap());
    assert!(
        !asked.contains("[teamctl: message cut"),
        "cut: {asked:.200}"
    );
    assert!(
        !t.team_dir("t1").join("messages").exists(),
        "a file for a message that was not cut"
    );
}

/// A shutdown request reaches codex as a turn, which refuses it with
/// `teamctl shutdown-response reject` from its shell tool; a turn that says nothing approves.
#[test]
fn a_codex_teammate_refuses_shutdown_from_its_shell_tool() {
    let server = FakeResponses::start(|req| {
        if fake::ends_with_tool_output(req) {
            return Reply::text("refused");
        }
        let text = fake::last_user_text(req);
        if text.contains("Shutdown request") && text.contains("refactor") {
            return Reply::shell("teamctl shutdown-response reject --reason 'busy with task 7'");
        }
        Reply::text("fine")
    });
    let (t, _cx) = codex_team(&server);
    spawn_codex(&t, "bob", &[]);
    wait_until("bob idle", T, || t.member_status("bob") == "idle");
    let err = t.fails(
        &[
            "shutdown",
            "bob",
            "--reason",
            "refactor time",
            "--timeout",
            "60",
        ],
        1,
    );
    assert!(
        err.contains("bob refused to shut down: busy with task 7"),
        "{err}"
    );
    wait_until("bob idle", T, || t.member_status("bob") == "idle");
    t.ok(&[
        "shutdown",
        "bob",
        "--reason",
        "done for today",
        "--timeout",
        "60",
    ]);
    assert_eq!(t.member_status("bob"), "stopped");
}

/// On a team kept on a NATS server, the agent's tools still reach the team from codex's
/// sandbox (which has no network unless the preset lets it out): `teamctl send` from its
/// shell tool said "cannot reach the NATS server".
#[cfg(feature = "nats")]
#[test]
fn a_codex_teammate_on_a_nats_team_runs_teamctl_from_its_shell_tool() {
    let nats = crate::common::nats::NatsServer::start();
    let server = FakeResponses::start(|req| {
        if fake::ends_with_tool_output(req) {
            let out = fake::last_tool_output(req).unwrap_or_default();
            return Reply::text(format!("ran: {out}"));
        }
        Reply::shell("teamctl send team-lead 'over the network'")
    });
    let (t, _cx) = codex_env(&server);
    t.ok(&["create", "n1", "--store", &nats.url()]);
    spawn_codex(&t, "bob", &[]);
    assert_eq!(ask(&t, "bob", "report"), "over the network");
}
