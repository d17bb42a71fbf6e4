//! A stand-in for the Anthropic Messages API on loopback, so the real Claude Code CLI runs in
//! tests without a network or a model: `POST /v1/messages` answered (SSE streaming or plain
//! JSON) with replies a script chooses from the request, every request recorded. Also finds the
//! real `claude` binary and prepares a temporary HOME it accepts without onboarding. The server
//! itself (reading, recording, stopping) and the clean-up of that HOME are `loopback_http`'s.
#![allow(dead_code)]

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

// Declared here rather than beside it in `common/mod.rs` (which re-exports it for the other
// stand-ins) because benches/preset.rs takes this file alone by its path: so it comes along.
#[path = "loopback_http.rs"]
pub mod loopback_http;

use loopback_http::{Request, Responder, Server};

/// One content block of a scripted reply.
#[derive(Clone, Debug)]
pub enum Block {
    Text(String),
    /// A tool call: `name` (e.g. "Bash") with `input` (e.g. `{"command": "..."}`).
    ToolUse {
        name: String,
        input: Value,
    },
}

/// A scripted reply: its blocks, and an optional delay before the first byte (a slow turn).
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub blocks: Vec<Block>,
    pub delay: Option<Duration>,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply {
            blocks: vec![Block::Text(t.into())],
            delay: None,
        }
    }

    /// A reply that runs `command` with the Bash tool (stop_reason `tool_use`).
    pub fn bash(command: impl Into<String>) -> Reply {
        Reply {
            blocks: vec![Block::ToolUse {
                name: "Bash".into(),
                input: json!({"command": command.into(), "description": "run teamctl"}),
            }],
            delay: None,
        }
    }

    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = Some(d);
        self
    }

    fn stop_reason(&self) -> &'static str {
        if self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
        {
            "tool_use"
        } else {
            "end_turn"
        }
    }
}

/// The running server; stops when dropped.
pub struct FakeModel {
    pub port: u16,
    /// `http://127.0.0.1:PORT`, for ANTHROPIC_BASE_URL.
    pub url: String,
    server: Server,
}

impl FakeModel {
    /// Start on 127.0.0.1, port 0; `script` picks the reply to each `POST /v1/messages`.
    pub fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeModel {
        let server = Server::start("the fake model server", move |req, out| {
            answer(req, out, &script)
        });
        FakeModel {
            port: server.port,
            url: server.url(),
            server,
        }
    }

    /// Every `/v1/messages` request body so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.server.bodies("POST", "/v1/messages")
    }

    /// The requests of the main conversation: those offering tools (Claude Code's side requests,
    /// such as titles or quota checks, offer none).
    pub fn conversation_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect()
    }
}

/// The user turns of a request: user messages holding something other than tool results.
pub fn user_turns(req: &Value) -> usize {
    req["messages"]
        .as_array()
        .map_or(0, |ms| ms.iter().filter(|m| is_user_turn(m)).count())
}

fn is_user_turn(m: &Value) -> bool {
    if m["role"] != "user" {
        return false;
    }
    match &m["content"] {
        Value::String(_) => true,
        Value::Array(blocks) => blocks.iter().any(|b| b["type"] != "tool_result"),
        _ => false,
    }
}

/// The text of the last user turn (tool results skipped), all its text blocks joined.
pub fn last_user_text(req: &Value) -> String {
    let Some(m) = req["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| is_user_turn(m)))
    else {
        return String::new();
    };
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether the request's last message carries a tool result (the model's tool call ran).
pub fn ends_with_tool_result(req: &Value) -> bool {
    req["messages"]
        .as_array()
        .and_then(|ms| ms.last())
        .and_then(|m| m["content"].as_array())
        .is_some_and(|bs| bs.iter().any(|b| b["type"] == "tool_result"))
}

/// The text of the last tool result in the request, if any.
pub fn last_tool_result(req: &Value) -> Option<String> {
    let last = req["messages"].as_array()?.last()?;
    let block = last["content"]
        .as_array()?
        .iter()
        .rev()
        .find(|b| b["type"] == "tool_result")?;
    Some(match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    })
}

fn answer(
    req: &Request,
    out: &mut Responder,
    script: &impl Fn(&Value) -> Reply,
) -> std::io::Result<()> {
    if req.is("POST", "/v1/messages") {
        let reply = script(&req.body);
        if let Some(d) = reply.delay {
            std::thread::sleep(d);
        }
        let id = format!("msg_fake{}", req.number);
        let model = req.body["model"].as_str().unwrap_or("claude-fake");
        if req.body["stream"] == true {
            return write_stream(out.event_stream()?, &id, model, &reply);
        }
        out.json(200, &message_json(&id, model, &reply).to_string())
    } else if req.is("POST", "/v1/messages/count_tokens") {
        out.json(200, r#"{"input_tokens":10}"#)
    } else if req.method == "HEAD" || req.method == "GET" {
        out.json(200, "{}")
    } else {
        out.json(
            404,
            r#"{"type":"error","error":{"type":"not_found_error","message":"not here"}}"#,
        )
    }
}

fn usage() -> Value {
    json!({"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn message_json(id: &str, model: &str, reply: &Reply) -> Value {
    let content: Vec<Value> = reply
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::ToolUse { name, input } => {
                json!({"type": "tool_use", "id": format!("toolu_{id}_{i}"), "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": reply.stop_reason(), "stop_sequence": null,
        "usage": usage(),
    })
}

fn write_stream(out: &mut TcpStream, id: &str, model: &str, reply: &Reply) -> std::io::Result<()> {
    let mut event = |name: &str, data: Value| -> std::io::Result<()> {
        write!(out, "event: {name}\ndata: {data}\n\n")?;
        out.flush()
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }}),
    )?;
    for (i, b) in reply.blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
                )?;
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}),
                )?;
            }
            Block::ToolUse { name, input } => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": {
                        "type": "tool_use", "id": format!("toolu_{id}_{i}"), "name": name, "input": {},
                    }}),
                )?;
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {
                        "type": "input_json_delta", "partial_json": input.to_string(),
                    }}),
                )?;
            }
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        )?;
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": reply.stop_reason(), "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    )?;
    event("message_stop", json!({"type": "message_stop"}))?;
    Ok(())
}

/// The real Claude Code CLI, ready to run offline against a `FakeModel`.
pub struct Claude {
    /// The `claude` binary.
    pub bin: PathBuf,
    /// The temporary HOME (holds `.claude.json` and `.claude/`).
    pub home: TempDir,
    /// The environment to give teammates: HOME, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, and the
    /// switches that keep it offline and quiet.
    pub env: Vec<(String, String)>,
}

pub const FAKE_KEY: &str = "sk-ant-api03-teamctl-test-key-0123456789abcdefghij";

/// The `claude` binary: `TEAMCTL_TEST_CLAUDE`, else `claude` on PATH; a test needing it fails
/// (never passes silently) when it is missing.
pub fn claude_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TEAMCTL_TEST_CLAUDE").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "TEAMCTL_TEST_CLAUDE={} is not a file; install Claude Code with `npm install --prefix DIR @anthropic-ai/claude-code` and point it at DIR/node_modules/.bin/claude (or run `bash .ci/run`)",
            p.display()
        );
        return p;
    }
    which_claude().unwrap_or_else(|| {
        panic!(
            "these tests run the real Claude Code CLI and it was not found: set TEAMCTL_TEST_CLAUDE to its binary or put `claude` on PATH; install it with `npm install --prefix DIR @anthropic-ai/claude-code` (binary DIR/node_modules/.bin/claude), or run `bash .ci/run`"
        )
    })
}

fn which_claude() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("claude"))
        .find(|p| p.is_file())
}

/// Prepare a temporary HOME for Claude Code against `model`: onboarding done, the test key
/// approved, each of `trusted` (project directories the agent runs in) trusted.
pub fn claude(model: &FakeModel, trusted: &[&Path]) -> Claude {
    let bin = claude_bin();
    let home = tempfile::Builder::new()
        .prefix("teamctl-claude-home")
        .tempdir()
        .unwrap();
    let suffix = &FAKE_KEY[FAKE_KEY.len() - 20..];
    let mut projects = serde_json::Map::new();
    for dir in trusted {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        projects.insert(
            dir.display().to_string(),
            json!({"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}),
        );
    }
    let config = json!({
        "hasCompletedOnboarding": true,
        "lastOnboardingVersion": "9.9.9",
        "customApiKeyResponses": {"approved": [suffix], "rejected": []},
        "projects": projects,
        "autoUpdates": false,
    });
    std::fs::write(
        home.path().join(".claude.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    // Claude Code keeps files of its own under `$TMPDIR/claude-UID/` (per project, never
    // removed): inside this HOME, they go with it.
    std::fs::create_dir_all(home.path().join("tmp")).unwrap();
    let env = [
        ("HOME", home.path().display().to_string()),
        ("TMPDIR", home.path().join("tmp").display().to_string()),
        ("ANTHROPIC_BASE_URL", model.url.clone()),
        ("ANTHROPIC_API_KEY", FAKE_KEY.to_string()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("CLAUDE_CODE_DISABLE_TERMINAL_TITLE", "1".into()),
        ("IS_SANDBOX", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Claude { bin, home, env }
}

impl Drop for Claude {
    /// Whatever still runs with this HOME ends before the directory is removed. A test's
    /// `TestEnv`, made first, is dropped after this (`let (env, cc, ..)` drops right to left),
    /// so an interactive Claude Code TUI in its pane (and the workers and companions given this
    /// environment) ran on until then, and Claude Code, ended then, writes its transcript and
    /// config into HOME as it exits: the directory was made again and left in the temporary
    /// directory, one per interactive test. Killed (SIGKILL), it writes nothing more. Tmux
    /// servers are left to `TestEnv`, which ends them without leaving their sockets.
    fn drop(&mut self) {
        loopback_http::end_processes_of_home(self.home.path());
    }
}

impl Claude {
    /// The directory holding `claude`, to put first on a teammate's PATH.
    pub fn bin_dir(&self) -> PathBuf {
        self.bin.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}
