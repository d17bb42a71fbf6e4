//! A stand-in for an OpenAI-compatible chat completions API on loopback, so the real aider CLI
//! (PyPI `aider-chat`, which calls it through litellm and the `openai` Python SDK) runs in tests
//! without a network or a model: `POST /v1/chat/completions` answered (plain JSON, or
//! server-sent chunks when the request says `"stream": true`) with replies a script chooses
//! from the request, every request recorded. Also finds the real `aider` binary and prepares a
//! temporary HOME that points it here and keeps it off the network. The server itself
//! (reading, recording, stopping) and the clean-up of that HOME are `loopback_http`'s.
#![allow(dead_code)]

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

pub use super::loopback_http::Request;
use super::loopback_http::{self, Responder, Server};

/// A scripted reply: the assistant's text. aider has no function calls: the shell commands it
/// runs are fenced `bash` blocks in the text (`Reply::shell`). Or an API error (`Reply::error`).
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub text: String,
    /// An HTTP error status answered instead, with `text` as the error's message.
    pub error: Option<u16>,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply {
            text: t.into(),
            error: None,
        }
    }

    /// The API refusing the request with `status` (401: litellm's `AuthenticationError`,
    /// which aider does not retry) and `message`, as OpenAI words an error.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply {
            text: message.to_string(),
            error: Some(status),
        }
    }

    /// A reply proposing `command` the way aider's prompts ask a model to: a fenced `bash`
    /// block (aider's "diff" edit formats run it, after asking).
    pub fn shell(before: &str, command: &str) -> Reply {
        Reply::text(format!("{before}\n\n```bash\n{command}\n```\n"))
    }
}

/// The running server; stops when dropped.
pub struct FakeOpenAiChat {
    pub port: u16,
    /// `http://127.0.0.1:PORT/v1`, the API base an OpenAI client is given.
    pub base: String,
    server: Server,
}

impl FakeOpenAiChat {
    /// Start on 127.0.0.1, port 0; `script` picks the reply to each chat completion request.
    pub fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeOpenAiChat {
        let server = Server::start("the fake chat server", move |req, out| {
            answer(req, out, &script)
        });
        FakeOpenAiChat {
            port: server.port,
            base: format!("{}/v1", server.url()),
            server,
        }
    }

    /// Every request so far (any path), in arrival order.
    pub fn all_requests(&self) -> Vec<Request> {
        self.server.requests()
    }

    /// The bodies of the chat completion requests so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.server.bodies("POST", "/v1/chat/completions")
    }
}

/// A message's text: a string, or the text parts of a list of parts.
pub fn content_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The texts of the request's messages with `role`, in order.
pub fn texts_of(req: &Value, role: &str) -> Vec<String> {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == role)
        .map(content_text)
        .collect()
}

/// The text of the request's last user message (aider appends its edit-format reminders to it).
pub fn last_user_text(req: &Value) -> String {
    texts_of(req, "user").pop().unwrap_or_default()
}

/// Whether `req` asks aider's weak model for a commit message (its system prompt is aider's
/// commit prompt): not part of the conversation, and not logged in aider's LLM history.
pub fn is_commit_message(req: &Value) -> bool {
    texts_of(req, "system")
        .first()
        .is_some_and(|s| s.contains("Git commit message"))
}

/// Whether `req` is a main-conversation request (not, say, a commit message or a summary for
/// aider's weak model): its system prompt is aider's coder prompt.
pub fn is_conversation(req: &Value) -> bool {
    texts_of(req, "system")
        .first()
        .is_some_and(|s| s.starts_with("Act as an expert software developer."))
}

fn answer(
    req: &Request,
    out: &mut Responder,
    script: &impl Fn(&Value) -> Reply,
) -> std::io::Result<()> {
    if !req.is("POST", "/v1/chat/completions") {
        return out.json(
            404,
            r#"{"error":{"message":"not here","type":"invalid_request_error"}}"#,
        );
    }
    let reply = script(&req.body);
    if let Some(status) = reply.error {
        let body = json!({"error": {"message": reply.text, "type": "invalid_request_error"}});
        return out.json(status, &body.to_string());
    }
    let id = format!("chatcmpl-fake{}", req.number);
    let model = req.body["model"].as_str().unwrap_or("fake");
    if req.body["stream"] == true {
        let usage = req.body["stream_options"]["include_usage"] == true;
        return write_stream(out.event_stream()?, &id, model, &reply, usage);
    }
    let body = json!({
        "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply.text},
            "finish_reason": "stop",
        }],
        "usage": usage(),
    });
    out.json(200, &body.to_string())
}

fn usage() -> Value {
    json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
}

fn write_stream(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    reply: &Reply,
    with_usage: bool,
) -> std::io::Result<()> {
    let mut chunk = |choices: Value, usage: Option<Value>| -> std::io::Result<()> {
        let mut c = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "choices": choices,
        });
        if let Some(u) = usage {
            c["usage"] = u;
        }
        write!(out, "data: {c}\n\n")?;
        out.flush()
    };
    chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
        None,
    )?;
    chunk(
        json!([{"index": 0, "delta": {"content": reply.text}, "finish_reason": null}]),
        None,
    )?;
    chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        None,
    )?;
    if with_usage {
        chunk(json!([]), Some(usage()))?;
    }
    write!(out, "data: [DONE]\n\n")?;
    out.flush()
}

/// The model name the tests give aider: litellm's `openai/` provider (an OpenAI-compatible
/// server at `OPENAI_API_BASE`), a name aider does not know, described to it in HOME.
pub const MODEL: &str = "openai/teamctl-test";

/// The real aider CLI, ready to run offline against a `FakeOpenAiChat`.
pub struct Aider {
    /// The `aider` binary.
    pub bin: PathBuf,
    /// The temporary HOME (aider's `~/.aider/` and the model's description).
    pub home: TempDir,
    /// The environment to give teammates: HOME, the API base and a dummy key, and litellm kept
    /// from fetching its price list.
    pub env: Vec<(String, String)>,
}

pub const FAKE_KEY: &str = "sk-teamctl-test-key-0123456789abcdef";

/// How to get aider, said when it is missing.
const HOW: &str = "install it with `python3 -m venv DIR && DIR/bin/pip install aider-chat==0.86.2` and set TEAMCTL_TEST_AIDER=DIR/bin/aider (or run `bash .ci/run`, which installs it into target/)";

/// The `aider` binary: `TEAMCTL_TEST_AIDER`, else `aider` on PATH; a test needing it fails
/// (never passes silently) when it is missing.
pub fn aider_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TEAMCTL_TEST_AIDER").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "TEAMCTL_TEST_AIDER={} is not a file; {HOW}",
            p.display()
        );
        return p;
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("aider"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("these tests run the real aider CLI and it was not found: set TEAMCTL_TEST_AIDER to its binary or put `aider` on PATH; {HOW}")
    })
}

/// Prepare a temporary HOME for aider against `server`. What a user of an OpenAI-compatible
/// server would write (aider's docs, "OpenAI compatible APIs"): `OPENAI_API_BASE` and
/// `OPENAI_API_KEY`, and the unknown model described in `~/.aider.model.settings.yml` (the
/// "diff" edit format, whose replies may propose shell commands, and itself as its weak model)
/// and `~/.aider.model.metadata.json` (its context window; without it aider fetches litellm's
/// price list from GitHub). `LITELLM_LOCAL_MODEL_COST_MAP` keeps litellm from fetching the same
/// list when it loads. Nothing else is switched off here: the preset's flags must do the rest.
pub fn aider(server: &FakeOpenAiChat) -> Aider {
    let bin = aider_bin();
    let home = tempfile::Builder::new()
        .prefix("teamctl-aider-home")
        .tempdir()
        .unwrap();
    std::fs::write(
        home.path().join(".aider.model.settings.yml"),
        format!("- name: {MODEL}\n  edit_format: diff\n  weak_model_name: {MODEL}\n"),
    )
    .unwrap();
    let metadata = json!({
        MODEL: {
            "max_input_tokens": 128_000, "max_tokens": 128_000, "max_output_tokens": 8192,
            "input_cost_per_token": 0, "output_cost_per_token": 0,
            "litellm_provider": "openai", "mode": "chat",
        }
    });
    std::fs::write(
        home.path().join(".aider.model.metadata.json"),
        metadata.to_string(),
    )
    .unwrap();
    // A user aider asks about analytics (one in ten, by the id it keeps here): a question a
    // headless turn must not answer yes to (`analytics_asked`).
    std::fs::create_dir_all(home.path().join(".aider")).unwrap();
    std::fs::write(
        home.path().join(".aider/analytics.json"),
        json!({"uuid": "00000000-0000-4000-8000-000000000000", "permanently_disable": null, "asked_opt_in": null}).to_string(),
    )
    .unwrap();
    // Python's `webbrowser` runs $BROWSER: here a script that only records the URL it got
    // (`browser_opened`), in place of lynx or a real browser.
    let browser = home.path().join("browser");
    std::fs::write(
        &browser,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$HOME/browser-opened\"\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let env = [
        ("HOME", home.path().display().to_string()),
        ("BROWSER", browser.display().to_string()),
        ("OPENAI_API_BASE", server.base.clone()),
        ("OPENAI_API_KEY", FAKE_KEY.to_string()),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Aider { bin, home, env }
}

impl Aider {
    /// The directory holding `aider`, to put first on a teammate's PATH.
    pub fn bin_dir(&self) -> &Path {
        self.bin.parent().unwrap()
    }

    /// The URLs aider opened in a browser (through $BROWSER), one a line.
    pub fn browser_opened(&self) -> String {
        std::fs::read_to_string(self.home.path().join("browser-opened")).unwrap_or_default()
    }

    /// Whether aider asked the user about analytics (its answer recorded in HOME).
    pub fn analytics_asked(&self) -> bool {
        let text = std::fs::read_to_string(self.home.path().join(".aider/analytics.json"))
            .unwrap_or_default();
        serde_json::from_str::<Value>(&text).is_ok_and(|v| v["asked_opt_in"] == true)
    }
}

impl Drop for Aider {
    /// Whatever still runs with this HOME ends (SIGKILL) before the directory is removed, so
    /// nothing writes it again afterwards.
    fn drop(&mut self) {
        loopback_http::end_processes_of_home(self.home.path());
    }
}
