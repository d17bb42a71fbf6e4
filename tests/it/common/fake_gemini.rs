//! A stand-in for the Gemini API on loopback, so the real Gemini CLI (npm `@google/gemini-cli`)
//! runs in tests without a network or a model: `POST /v1beta/models/MODEL:streamGenerateContent`
//! (server-sent events, as the CLI asks with `?alt=sse`) and `:generateContent` (plain JSON),
//! every request recorded. The conversation's requests (those offering tools) are answered by a
//! script that chooses from the request; the CLI's side requests (its model router and other
//! checks, which ask for JSON by a schema and offer no tools) get a JSON value filled in from
//! their schema. Also finds the real `gemini` binary and prepares a temporary HOME whose
//! settings point it at the stand-in with a dummy key and turn off what would go elsewhere.
//! The server itself (reading, recording, stopping) and the clean-up of that HOME are
//! `loopback_http`'s.
//!
//! What Gemini CLI 0.61.0 sends was read from its bundle, not guessed: the base URL comes from
//! `GOOGLE_GEMINI_BASE_URL` (plain http only to loopback), the key in `x-goog-api-key`; the
//! stream is `data: JSON` lines each ended by a blank line (`responseLineRE` in the
//! `@google/genai` SDK), each JSON a `GenerateContentResponse`.
#![allow(dead_code)]

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::loopback_http as http;

/// One part of a scripted reply.
#[derive(Clone, Debug)]
pub enum Part {
    Text(String),
    /// A function (tool) call: `name` (e.g. "run_shell_command") with `args`.
    Call {
        name: String,
        args: Value,
    },
}

/// A scripted reply of the model: its parts, in order; or an error the API answers with.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub parts: Vec<Part>,
    /// An HTTP status and message, sent instead of the parts as the API's error body.
    pub error: Option<(u16, String)>,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply {
            parts: vec![Part::Text(t.into())],
            error: None,
        }
    }

    /// The API's error `status` (e.g. 404 for a model it does not know) with `message`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        Reply {
            parts: Vec::new(),
            error: Some((status, message.into())),
        }
    }

    /// A reply that runs `command` with the CLI's shell tool (`run_shell_command`).
    pub fn shell(command: impl Into<String>) -> Reply {
        Reply {
            parts: vec![Part::Call {
                name: "run_shell_command".into(),
                args: json!({"command": command.into(), "description": "run teamctl"}),
            }],
            error: None,
        }
    }
}

/// One recorded request of the API: a `generateContent` or `streamGenerateContent` call.
#[derive(Clone, Debug)]
pub struct Request {
    /// The model named in the path (`models/MODEL:method`).
    pub model: String,
    /// `streamGenerateContent` (true) or `generateContent`.
    pub stream: bool,
    /// The `x-goog-api-key` header.
    pub key: String,
    pub body: Value,
}

impl Request {
    /// The call `req` makes, if it is one: `POST /v1beta/models/MODEL:METHOD` with METHOD
    /// `generateContent` or `streamGenerateContent`.
    fn of(req: &http::Request) -> Option<Request> {
        let (model, verb) = req.path.rsplit_once("/models/")?.1.split_once(':')?;
        let stream = match verb {
            "streamGenerateContent" => true,
            "generateContent" => false,
            _ => return None,
        };
        (req.method == "POST").then(|| Request {
            model: model.to_string(),
            stream,
            key: req.header("x-goog-api-key").unwrap_or_default().to_string(),
            body: req.body.clone(),
        })
    }

    /// Whether this is a request of the conversation: it offers tools.
    pub fn is_conversation(&self) -> bool {
        tool_names(&self.body).next().is_some()
    }
}

/// The running server; stops when dropped.
pub struct FakeGemini {
    pub port: u16,
    /// `http://127.0.0.1:PORT`, for GOOGLE_GEMINI_BASE_URL.
    pub url: String,
    server: http::Server,
}

impl FakeGemini {
    /// Start on 127.0.0.1, port 0; `script` picks the reply to each request of the
    /// conversation (its body is given).
    pub fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeGemini {
        let server = http::Server::start("the fake Gemini API", move |req, out| {
            answer(req, out, &script)
        });
        FakeGemini {
            port: server.port,
            url: server.url(),
            server,
        }
    }

    /// Every call so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.server
            .requests()
            .iter()
            .filter_map(Request::of)
            .collect()
    }

    /// The bodies of the conversation's requests (those offering tools), in arrival order.
    pub fn conversation_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(Request::is_conversation)
            .map(|r| r.body)
            .collect()
    }
}

/// The names of the functions (tools) a request offers.
pub fn tool_names(req: &Value) -> impl Iterator<Item = &str> {
    req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["functionDeclarations"].as_array())
        .flatten()
        .filter_map(|f| f["name"].as_str())
}

/// The CLI's own context block, which it puts in the first user content of a session.
const SESSION_CONTEXT: &str = "<session_context>";

/// The text parts of a content, the CLI's session context left out.
fn texts(content: &Value) -> Vec<&str> {
    content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .filter(|t| !t.starts_with(SESSION_CONTEXT))
        .collect()
}

fn is_user_turn(content: &Value) -> bool {
    content["role"] == "user" && !texts(content).is_empty()
}

/// The user turns of a request: user contents holding text (function responses and the CLI's
/// session context are not turns).
pub fn user_turns(req: &Value) -> usize {
    req["contents"]
        .as_array()
        .map_or(0, |cs| cs.iter().filter(|c| is_user_turn(c)).count())
}

/// The text of every user turn of a request, in order (each turn's text parts joined).
pub fn user_texts(req: &Value) -> Vec<String> {
    req["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| is_user_turn(c))
        .map(|c| texts(c).join("\n"))
        .collect()
}

/// The text of the last user turn.
pub fn last_user_text(req: &Value) -> String {
    user_texts(req).pop().unwrap_or_default()
}

/// The system instruction's text.
pub fn system_text(req: &Value) -> String {
    req["systemInstruction"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The response of the last function call, when the request's last content carries one (the
/// model's tool call ran): the function's `response` object.
pub fn last_function_response(req: &Value) -> Option<Value> {
    let last = req["contents"].as_array()?.last()?;
    last["parts"]
        .as_array()?
        .iter()
        .rev()
        .find_map(|p| p.get("functionResponse"))
        .map(|f| f["response"].clone())
}

fn answer(
    req: &http::Request,
    out: &mut http::Responder,
    script: &impl Fn(&Value) -> Reply,
) -> std::io::Result<()> {
    if let Some(call) = Request::of(req) {
        let reply = if call.is_conversation() {
            script(&call.body)
        } else {
            side_reply(&call.body)
        };
        if let Some((status, message)) = &reply.error {
            let body = json!({"error": {"code": status, "message": message, "status": "ERROR"}});
            return out.json(*status, &body.to_string());
        }
        if call.stream {
            return write_stream(out.event_stream()?, &reply);
        }
        out.json(200, &response_json(&reply, true).to_string())
    } else if req.method == "POST" && req.path.ends_with(":countTokens") {
        out.json(200, r#"{"totalTokens":10}"#)
    } else {
        out.json(
            404,
            r#"{"error":{"code":404,"message":"not here","status":"NOT_FOUND"}}"#,
        )
    }
}

/// The answer to a side request: a JSON text filled in from the schema it asks for (the first
/// value of an enum, a placeholder string, 1 for an integer, 0 for a number, so the router
/// scores a message 1 and the loop check's confidence is 0), else a line of text.
fn side_reply(req: &Value) -> Reply {
    let config = &req["generationConfig"];
    let schema = config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"));
    match schema {
        Some(s) => Reply::text(fill_schema(s).to_string()),
        None => Reply::text("stand-in"),
    }
}

fn fill_schema(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = schema["type"]
        .as_str()
        .unwrap_or("object")
        .to_ascii_lowercase();
    match kind.as_str() {
        "string" => json!("stand-in"),
        "integer" => json!(1),
        "number" => json!(0),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => {
            let mut object = serde_json::Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (k, v) in props {
                    object.insert(k.clone(), fill_schema(v));
                }
            }
            Value::Object(object)
        }
    }
}

fn part_json(p: &Part) -> Value {
    match p {
        Part::Text(t) => json!({"text": t}),
        Part::Call { name, args } => json!({"functionCall": {"name": name, "args": args}}),
    }
}

/// A `GenerateContentResponse` holding `reply`'s parts; the last one of a stream (or the only
/// one) carries the finish reason and the token counts.
fn response_json(reply: &Reply, last: bool) -> Value {
    let parts: Vec<Value> = reply.parts.iter().map(part_json).collect();
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut response = json!({"modelVersion": "stand-in", "responseId": "stand-in"});
    if last {
        candidate["finishReason"] = json!("STOP");
        response["usageMetadata"] =
            json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
    }
    response["candidates"] = json!([candidate]);
    response
}

/// `reply` as server-sent events: one event per part, the last with the finish reason.
fn write_stream(out: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let n = reply.parts.len();
    for (i, p) in reply.parts.iter().enumerate() {
        let one = Reply {
            parts: vec![p.clone()],
            error: None,
        };
        write!(out, "data: {}\r\n\r\n", response_json(&one, i + 1 == n))?;
        out.flush()?;
    }
    if n == 0 {
        write!(out, "data: {}\r\n\r\n", response_json(reply, true))?;
    }
    out.flush()
}

/// The real Gemini CLI, ready to run offline against a `FakeGemini`.
pub struct Gemini {
    /// The `gemini` binary.
    pub bin: PathBuf,
    /// The temporary HOME (holds `.gemini/`, its settings and its sessions).
    pub home: TempDir,
    /// The environment to give teammates: HOME, the base URL and a dummy key, no proxy.
    pub env: Vec<(String, String)>,
}

pub const FAKE_KEY: &str = "teamctl-test-gemini-key";

/// How to get the CLI, for the failure messages.
const HOW: &str = "install it with `npm install --prefix DIR @google/gemini-cli@0.61.0` and set TEAMCTL_TEST_GEMINI to DIR/node_modules/.bin/gemini (or run `bash .ci/run`, which does both)";

/// The `gemini` binary: `TEAMCTL_TEST_GEMINI`, else `gemini` on PATH; a test needing it fails
/// (never passes silently) when it is missing.
pub fn gemini_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TEAMCTL_TEST_GEMINI").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "TEAMCTL_TEST_GEMINI={} is not a file; {HOW}",
            p.display()
        );
        return p;
    }
    which_gemini().unwrap_or_else(|| {
        panic!("these tests run the real Gemini CLI and it was not found: set TEAMCTL_TEST_GEMINI to its binary or put `gemini` on PATH; {HOW}")
    })
}

fn which_gemini() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("gemini"))
        .find(|p| p.is_file())
}

/// Prepare a temporary HOME for Gemini CLI against `model`. Its user settings choose API-key
/// authentication (with `GOOGLE_GEMINI_BASE_URL` alone the CLI picks its "gateway" type, which
/// headless mode refuses: "Invalid auth method selected."), and turn off usage statistics
/// (sent to Google's servers by default), telemetry and the update check; with them the CLI
/// connects nowhere but the stand-in (seen with strace: only connects to it). Folder trust is
/// left to the preset's `--skip-trust`.
pub fn gemini(model: &FakeGemini) -> Gemini {
    let bin = gemini_bin();
    let home = tempfile::Builder::new()
        .prefix("teamctl-gemini-home")
        .tempdir()
        .unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
    });
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join("tmp")).unwrap();
    let env = [
        ("HOME", home.path().display().to_string()),
        ("GEMINI_CLI_HOME", home.path().display().to_string()),
        ("TMPDIR", home.path().join("tmp").display().to_string()),
        ("GOOGLE_GEMINI_BASE_URL", model.url.clone()),
        ("GEMINI_API_KEY", FAKE_KEY.to_string()),
        ("GEMINI_TELEMETRY_ENABLED", "false".into()),
        // The CLI sends every request through a proxy named here (even to loopback): none.
        ("HTTPS_PROXY", String::new()),
        ("https_proxy", String::new()),
        ("HTTP_PROXY", String::new()),
        ("http_proxy", String::new()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Gemini { bin, home, env }
}

impl Drop for Gemini {
    /// Whatever still runs with this HOME ends (SIGKILL: the CLI's launcher process ignores
    /// SIGTERM) before the directory is removed, so nothing writes into it again afterwards.
    fn drop(&mut self) {
        http::end_processes_of_home(self.home.path());
    }
}

impl Gemini {
    /// The directory holding `gemini`, to put first on a teammate's PATH.
    pub fn bin_dir(&self) -> PathBuf {
        self.bin.parent().map(Path::to_path_buf).unwrap_or_default()
    }

    /// Where the CLI keeps its sessions: `.gemini/tmp/PROJECT/chats/` under HOME.
    pub fn chats(&self) -> Vec<PathBuf> {
        let tmp = self.home.path().join(".gemini/tmp");
        std::fs::read_dir(&tmp)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path().join("chats"))
            .filter(|p| p.is_dir())
            .collect()
    }
}
