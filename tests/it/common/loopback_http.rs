//! What the model-API stand-ins (fake_model, fake_openai_responses, fake_gemini,
//! fake_openai_chat) share, so each holds only its own routes and reply shapes: a small HTTP/1.1
//! server on 127.0.0.1 (never another address), port 0, that reads each request (head, then a
//! `Content-Length` or chunked body), records it, lets the stand-in's handler answer (a whole
//! response, the connection kept, or a server-sent event stream, the connection closed after
//! it) and stops when dropped; and the end-of-test clean-up of the processes an agent CLI left
//! under the temporary HOME the stand-in prepared for it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// One request the server got.
#[derive(Clone, Debug)]
pub struct Request {
    /// Its place in the order of arrival, from 1 (unique: for the ids of replies).
    pub number: u64,
    pub method: String,
    /// The path without its query.
    pub path: String,
    /// The headers, names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it was empty or not JSON).
    pub body: Value,
}

impl Request {
    /// The value of header `name` (lower case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this is `method` on `path`.
    pub fn is(&self, method: &str, path: &str) -> bool {
        self.method == method && self.path == path
    }
}

/// How a handler answers one request on its connection.
pub struct Responder<'a> {
    out: &'a mut TcpStream,
    closed: bool,
}

impl Responder<'_> {
    /// A whole response with a JSON `body`; the connection stays open for the next request.
    pub fn json(&mut self, status: u16, body: &str) -> std::io::Result<()> {
        write!(
            self.out,
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            reason(status),
            body.len()
        )?;
        self.out.flush()
    }

    /// The head of a server-sent event stream, which runs to the end of the connection: the
    /// events are written to the stream returned, and the connection is closed after them.
    pub fn event_stream(&mut self) -> std::io::Result<&mut TcpStream> {
        write!(
            self.out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
        )?;
        self.closed = true;
        Ok(&mut *self.out)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Error",
    }
}

type Handler = dyn Fn(&Request, &mut Responder) -> std::io::Result<()> + Send + Sync;

/// The running server; stops when dropped.
pub struct Server {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Start on 127.0.0.1, port 0 (`what` names the stand-in in a failure); `handle` answers
    /// every request, each recorded first, on a thread per connection.
    pub fn start(
        what: &str,
        handle: impl Fn(&Request, &mut Responder) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> Server {
        let listener =
            TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind {what}: {e}"));
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handle: Arc<Handler> = Arc::new(handle);
        {
            let requests = requests.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (requests, handle) = (requests.clone(), handle.clone());
                    std::thread::spawn(move || {
                        let _ = serve(conn, &requests, &*handle);
                    });
                }
            });
        }
        Server {
            port,
            requests,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, any route, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of the requests `method path` so far, in arrival order.
    pub fn bodies(&self, method: &str, path: &str) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.is(method, path))
            .map(|r| r.body.clone())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The requests of one connection, each read, recorded and answered in turn, until the client
/// closes it, a response closes it, or it sits idle for two minutes.
fn serve(conn: TcpStream, requests: &Mutex<Vec<Request>>, handle: &Handler) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_mins(2)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    while let Some(mut request) = read_request(&mut reader)? {
        {
            let mut requests = requests.lock().unwrap();
            request.number = requests.len() as u64 + 1;
            requests.push(request.clone());
        }
        let mut responder = Responder {
            out: &mut out,
            closed: false,
        };
        handle(&request, &mut responder)?;
        if responder.closed {
            return Ok(());
        }
    }
    Ok(())
}

/// The next request on the connection; `None` when the client closed it.
fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut request = Request {
        number: 0,
        method,
        path,
        headers,
        body: Value::Null,
    };
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        read_chunked(reader)?
    } else {
        let length = request
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut b = vec![0; length];
        reader.read_exact(&mut b)?;
        b
    };
    request.body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(Some(request))
}

/// A body sent with `Transfer-Encoding: chunked`, read whole.
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

/// Ends (SIGKILL) every process whose environment has HOME=`home`, but tmux servers (left to
/// `TestEnv`, which ends them without leaving their sockets); waits up to 10 s for them to go.
/// Each agent CLI's HOME calls it as it is dropped, before the directory is removed, so that
/// nothing the test left running (a teammate's worker, a CLI's turn or TUI; some ignore
/// SIGTERM) writes into it again afterwards.
pub fn end_processes_of_home(home: &Path) {
    let want = format!("HOME={}", home.display());
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
