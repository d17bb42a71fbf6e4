//! A stand-in for an OpenAI-compatible chat completions API on loopback, so the real aider CLI
//! (PyPI `aider-chat`, which calls it through litellm and the `openai` Python SDK) runs in tests
//! without a network or a model: `POST /v1/chat/completions` answered (plain JSON, or
//! server-sent chunks when the request says `"stream": true`) with replies a script chooses
//! from the request, every request recorded. Also finds the real `aider` binary and prepares a
//! temporary HOME that points it here and keeps it off the network.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

/// A scripted reply: the assistant's text. aider has no function calls: the shell commands it
/// runs are fenced `bash` blocks in the text (`Reply::shell`).
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub text: String,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply { text: t.into() }
    }

    /// A reply proposing `command` the way aider's prompts ask a model to: a fenced `bash`
    /// block (aider's "diff" edit formats run it, after asking).
    pub fn shell(before: &str, command: &str) -> Reply {
        Reply::text(format!("{before}\n\n```bash\n{command}\n```\n"))
    }
}

/// One request the server got: method, path, the `Authorization` header, and the JSON body
/// (`Null` for none).
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

type Script = dyn Fn(&Value) -> Reply + Send + Sync;

/// The running server; stops when dropped.
pub struct FakeOpenAiChat {
    pub port: u16,
    /// `http://127.0.0.1:PORT/v1`, the API base an OpenAI client is given.
    pub base: String,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl FakeOpenAiChat {
    /// Start on 127.0.0.1, port 0; `script` picks the reply to each chat completion request.
    pub fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeOpenAiChat {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake chat server");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::new(script);
        let ids = Arc::new(AtomicU64::new(1));
        {
            let requests = requests.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (requests, script, ids) = (requests.clone(), script.clone(), ids.clone());
                    std::thread::spawn(move || {
                        let _ = serve(conn, &requests, &*script, &ids);
                    });
                }
            });
        }
        FakeOpenAiChat {
            port,
            base: format!("http://127.0.0.1:{port}/v1"),
            requests,
            stop,
        }
    }

    /// Every request so far (any path), in arrival order.
    pub fn all_requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of the chat completion requests so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.all_requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == "/v1/chat/completions")
            .map(|r| r.body)
            .collect()
    }
}

impl Drop for FakeOpenAiChat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
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

/// Whether `req` is a main-conversation request (not, say, a commit message or a summary for
/// aider's weak model): its system prompt is aider's coder prompt.
pub fn is_conversation(req: &Value) -> bool {
    texts_of(req, "system")
        .first()
        .is_some_and(|s| s.starts_with("Act as an expert software developer."))
}

fn serve(
    conn: TcpStream,
    requests: &Mutex<Vec<Request>>,
    script: &Script,
    ids: &AtomicU64,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_mins(2)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut length = 0usize;
        let mut chunked = false;
        let mut authorization = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "content-length" {
                    length = v.parse().unwrap_or(0);
                } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                } else if k == "authorization" {
                    authorization = Some(v.to_string());
                }
            }
        }
        let body = if chunked {
            read_chunked(&mut reader)?
        } else {
            let mut b = vec![0; length];
            reader.read_exact(&mut b)?;
            b
        };
        let route = path.split('?').next().unwrap_or("").to_string();
        let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        requests.lock().unwrap().push(Request {
            method: method.clone(),
            path: route.clone(),
            authorization,
            body: req.clone(),
        });
        if method == "POST" && route == "/v1/chat/completions" {
            let reply = script(&req);
            let id = format!("chatcmpl-fake{}", ids.fetch_add(1, Ordering::SeqCst));
            let model = req["model"].as_str().unwrap_or("fake").to_string();
            if req["stream"] == true {
                // Streamed to the end of the connection, then closed.
                let usage = req["stream_options"]["include_usage"] == true;
                write_stream(&mut out, &id, &model, &reply, usage)?;
                return Ok(());
            }
            let body = json!({
                "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": "stop",
                }],
                "usage": usage(),
            })
            .to_string();
            respond(&mut out, 200, &body)?;
        } else {
            respond(
                &mut out,
                404,
                r#"{"error":{"message":"not here","type":"invalid_request_error"}}"#,
            )?;
        }
    }
}

fn usage() -> Value {
    json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let n =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let mut chunk = vec![0; n + 2];
        reader.read_exact(&mut chunk)?;
        if n == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

fn respond(out: &mut TcpStream, code: u16, body: &str) -> std::io::Result<()> {
    let reason = if code == 200 { "OK" } else { "Not Found" };
    write!(
        out,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

fn write_stream(
    out: &mut TcpStream,
    id: &str,
    model: &str,
    reply: &Reply,
    with_usage: bool,
) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
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
        let want = format!("HOME={}", self.home.path().display());
        let users = || {
            teamctl::backend::proc::pids()
                .filter(|&p| teamctl::backend::proc::running(p))
                .filter(|p| {
                    std::fs::read(format!("/proc/{p}/environ"))
                        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
                })
                .filter(|p| {
                    let argv = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                    let argv0 = argv.split(|b| *b == 0).next().unwrap_or_default();
                    !(argv0 == b"tmux" || argv0.ends_with(b"/tmux"))
                })
                .collect::<Vec<u32>>()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = users();
            if left.is_empty() || std::time::Instant::now() >= deadline {
                break;
            }
            for pid in left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
