//! A stand-in for the OpenAI Responses API on loopback, so the real Codex CLI (npm
//! `@openai/codex`) runs in tests without a network or a model: `POST /v1/responses` answered
//! (SSE when the request says `"stream": true`, as codex always does; plain JSON otherwise) with
//! replies a script chooses from the request, every request recorded. Also finds the real
//! `codex` binary and prepares a temporary HOME (and `CODEX_HOME`) whose config points codex at
//! the stand-in as a custom model provider and turns off what would go elsewhere. The server
//! itself (reading, recording, stopping) and the clean-up of that HOME are `loopback_http`'s.
//!
//! The shapes are codex 0.171.0's, read from its requests and its SSE parser
//! (`codex-rs/codex-api/src/sse/responses.rs`): the conversation is the request's `input`
//! (`store: false`, so every request carries all of it), the shell tool is the function
//! `exec_command` (`{"cmd": ...}`), a tool's result comes back as a `function_call_output`
//! item, and a reply is `response.created`, then per item `response.output_item.added`
//! (`response.output_text.delta` for text) and `response.output_item.done`, then
//! `response.completed` (its `id` is required; without it codex reports "stream closed before
//! response.completed").
#![allow(dead_code)]

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::loopback_http::{self, Request, Responder, Server};

/// One output item of a scripted reply.
#[derive(Clone, Debug)]
pub enum Item {
    /// An assistant message with this text.
    Text(String),
    /// A call of codex's shell tool (`exec_command`) running `cmd`.
    Shell(String),
}

/// A scripted reply: its output items.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub items: Vec<Item>,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply {
            items: vec![Item::Text(t.into())],
        }
    }

    /// A reply that runs `cmd` with codex's shell tool; codex runs it and asks again with its
    /// output (`ends_with_tool_output`).
    pub fn shell(cmd: impl Into<String>) -> Reply {
        Reply {
            items: vec![Item::Shell(cmd.into())],
        }
    }
}

/// One request the stand-in got, whatever its route: method, path, headers and JSON body.
pub type Seen = Request;

/// The running server; stops when dropped.
pub struct FakeResponses {
    pub port: u16,
    /// `http://127.0.0.1:PORT/v1`, the provider's `base_url` (codex appends `/responses`).
    pub base_url: String,
    server: Server,
}

impl FakeResponses {
    /// Start on 127.0.0.1, port 0; `script` picks the reply to each `POST /v1/responses`.
    pub fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeResponses {
        let server = Server::start("the fake Responses server", move |req, out| {
            answer(req, out, &script)
        });
        FakeResponses {
            port: server.port,
            base_url: format!("{}/v1", server.url()),
            server,
        }
    }

    /// Every request so far, any route, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.server.requests()
    }

    /// Every `POST /v1/responses` body so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.server.bodies("POST", "/v1/responses")
    }
}

/// The text of a message item (its `input_text` / `output_text` parts joined).
fn message_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The texts of the request's user messages, in order: codex's own (such as its
/// `<environment_context>`) and the prompts it was given.
pub fn user_texts(req: &Value) -> Vec<String> {
    req["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message" && i["role"] == "user")
        .map(message_text)
        .collect()
}

/// The texts of the request's assistant messages (earlier replies), in order.
pub fn assistant_texts(req: &Value) -> Vec<String> {
    req["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message" && i["role"] == "assistant")
        .map(message_text)
        .collect()
}

/// The text of the request's last user message.
pub fn last_user_text(req: &Value) -> String {
    user_texts(req).pop().unwrap_or_default()
}

/// Whether the request's last item is a tool's result (the model's tool call ran).
pub fn ends_with_tool_output(req: &Value) -> bool {
    req["input"]
        .as_array()
        .and_then(|items| items.last())
        .is_some_and(|i| i["type"] == "function_call_output")
}

/// The output of the last tool call in the request, if any.
pub fn last_tool_output(req: &Value) -> Option<String> {
    let item = req["input"]
        .as_array()?
        .iter()
        .rev()
        .find(|i| i["type"] == "function_call_output")?;
    Some(match &item["output"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    })
}

/// The names of the function tools the request offers.
pub fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

fn answer(
    req: &Request,
    out: &mut Responder,
    script: &impl Fn(&Value) -> Reply,
) -> std::io::Result<()> {
    if let Some(enc) = req
        .header("content-encoding")
        .filter(|v| !v.eq_ignore_ascii_case("identity"))
    {
        // Codex compresses request bodies only for OpenAI's own backend; should it ever do so
        // here, say so plainly rather than answer a body that was not read.
        let msg = format!("the fake Responses server reads no {enc}-encoded bodies");
        return out.json(415, &error_json(&msg));
    }
    if req.is("POST", "/v1/responses") {
        let reply = script(&req.body);
        let id = format!("resp_fake{}", req.number);
        let model = req.body["model"].as_str().unwrap_or("gpt-fake");
        if req.body["stream"] == true {
            return write_stream(out.event_stream()?, &id, model, &reply);
        }
        out.json(
            200,
            &response_json(&id, model, &reply, "completed").to_string(),
        )
    } else if req.is("GET", "/v1/models") {
        out.json(200, r#"{"object":"list","data":[]}"#)
    } else {
        out.json(404, &error_json("not here"))
    }
}

fn error_json(message: &str) -> String {
    json!({"error": {"type": "invalid_request_error", "code": null, "message": message}})
        .to_string()
}

/// The output items of `reply`, as the Responses API gives them (done: whole).
fn output_items(id: &str, reply: &Reply) -> Vec<Value> {
    reply
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Item::Text(t) => json!({
                "type": "message", "id": format!("msg_{id}_{i}"), "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": t, "annotations": []}],
            }),
            Item::Shell(cmd) => json!({
                "type": "function_call", "id": format!("fc_{id}_{i}"), "status": "completed",
                "call_id": format!("call_{id}_{i}"), "name": "exec_command",
                "arguments": json!({"cmd": cmd}).to_string(),
            }),
        })
        .collect()
}

fn usage() -> Value {
    json!({
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    })
}

fn response_json(id: &str, model: &str, reply: &Reply, status: &str) -> Value {
    let output = if status == "completed" {
        output_items(id, reply)
    } else {
        Vec::new()
    };
    json!({
        "id": id, "object": "response", "status": status, "model": model,
        "output": output, "usage": if status == "completed" { usage() } else { Value::Null },
    })
}

fn write_stream(out: &mut TcpStream, id: &str, model: &str, reply: &Reply) -> std::io::Result<()> {
    let mut seq = 0u64;
    let mut event = |mut data: Value| -> std::io::Result<()> {
        data["sequence_number"] = json!(seq);
        seq += 1;
        write!(
            out,
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        )?;
        out.flush()
    };
    event(
        json!({"type": "response.created", "response": response_json(id, model, reply, "in_progress")}),
    )?;
    for (i, item) in output_items(id, reply).into_iter().enumerate() {
        let mut started = item.clone();
        if item["type"] == "message" {
            started["content"] = json!([]);
            started["status"] = json!("in_progress");
        }
        event(json!({"type": "response.output_item.added", "output_index": i, "item": started}))?;
        if item["type"] == "message" {
            let text = item["content"][0]["text"].clone();
            event(json!({
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": i,
                "content_index": 0, "delta": text,
            }))?;
        }
        event(json!({"type": "response.output_item.done", "output_index": i, "item": item}))?;
    }
    event(
        json!({"type": "response.completed", "response": response_json(id, model, reply, "completed")}),
    )?;
    Ok(())
}

/// The real Codex CLI, ready to run offline against a `FakeResponses`.
pub struct Codex {
    /// The `codex` binary.
    pub bin: PathBuf,
    /// The temporary HOME (holds `.codex/`, codex's `CODEX_HOME`: its config, sessions, logs).
    pub home: TempDir,
    /// The environment to give teammates: HOME, CODEX_HOME and the dummy key the config names.
    pub env: Vec<(String, String)>,
}

/// The variable the test provider's `env_key` names; codex sends its value as the bearer key.
pub const KEY_VAR: &str = "TEAMCTL_TEST_OPENAI_KEY";
pub const FAKE_KEY: &str = "sk-teamctl-test-dummy-key";
/// The CLI version `.ci/run` installs, for messages.
pub const CODEX_VERSION: &str = "0.171.0";

/// The `codex` binary: `TEAMCTL_TEST_CODEX`, else `codex` on PATH; a test needing it fails
/// (never passes silently) when it is missing.
pub fn codex_bin() -> PathBuf {
    let how = format!(
        "install Codex with `npm install --prefix DIR @openai/codex@{CODEX_VERSION}` and set TEAMCTL_TEST_CODEX to DIR/node_modules/.bin/codex (or run `bash .ci/run`)"
    );
    if let Some(p) = std::env::var_os("TEAMCTL_TEST_CODEX").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "TEAMCTL_TEST_CODEX={} is not a file; {how}",
            p.display()
        );
        return p;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("codex"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "these tests run the real Codex CLI and it was not found: set TEAMCTL_TEST_CODEX to its binary or put `codex` on PATH; {how}"
            )
        })
}

/// Prepare a temporary HOME for codex against `server`: `$HOME/.codex/config.toml` makes the
/// stand-in the model provider (`wire_api = "responses"`, the dummy key from `KEY_VAR`, no
/// retries) and turns off what codex 0.171 otherwise reaches out for on every run (each seen
/// with strace as a DNS lookup): the curated plugin marketplace (`features.plugins`: a `git
/// clone` of github.com/openai/plugins, api.github.com, chatgpt.com) and analytics
/// (`analytics.enabled`: ab.chatgpt.com); `check_for_update_on_startup` too (the TUI's). The
/// sandbox's writable places leave out `/tmp` and `$TMPDIR` (`exclude_slash_tmp`,
/// `exclude_tmpdir_env_var`), where a test's TEAMCTL_HOME is: as with the default home
/// (`~/.local/state/teamctl`), only the preset's own writable root lets `teamctl` write there.
pub fn codex(server: &FakeResponses) -> Codex {
    let bin = codex_bin();
    let home = tempfile::Builder::new()
        .prefix("teamctl-codex-home")
        .tempdir()
        .unwrap();
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = format!(
        r#"model = "gpt-fake"
model_provider = "teamctl-fake"
check_for_update_on_startup = false

[model_providers.teamctl-fake]
name = "teamctl test stand-in"
base_url = "{base}"
env_key = "{KEY_VAR}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false

[sandbox_workspace_write]
exclude_slash_tmp = true
exclude_tmpdir_env_var = true
"#,
        base = server.base_url
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let env = [
        ("HOME", home.path().display().to_string()),
        ("CODEX_HOME", codex_home.display().to_string()),
        (KEY_VAR, FAKE_KEY.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Codex { bin, home, env }
}

impl Codex {
    /// The directory holding `codex`, to put first on a teammate's PATH.
    pub fn bin_dir(&self) -> PathBuf {
        self.bin.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

impl Drop for Codex {
    /// Whatever still runs with this HOME (a teammate's worker, a codex turn a failed test
    /// left) ends before the directory is removed, so nothing writes it again after.
    fn drop(&mut self) {
        loopback_http::end_processes_of_home(self.home.path());
    }
}
