//! The connection side of the NATS store: the server address as given and as shown (never
//! with credentials), one connection per address per process, and the small tokio runtime
//! (its own thread) that runs every NATS call. The `Store` trait is synchronous and its
//! callers may be inside a runtime of their own (the worker), so a call is spawned on this
//! runtime and its result comes back on a std channel: nothing ever blocks the caller's runtime.
//! `retry` runs one store operation again after a transient fault (a lost answer, a leader
//! election, a reconnect) until `RETRY_FOR` has passed, and ends it at once when the server
//! refuses the user a subject (a permissions violation).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use tokio::sync::broadcast;

use super::url::{ServerUrl, userinfo};
use crate::error::{Error, Result};

/// How long one request to the server may wait for its answer before it is asked again (a
/// request lost in a failover is not waited out for long).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a store operation is tried again after transient faults before it fails. Requests
/// made while the connection is down wait for the reconnect (the client queues them), so a
/// worker rides out a server restart or a cluster failover shorter than this; a command that
/// cannot connect at all fails at once.
pub const RETRY_FOR: Duration = Duration::from_secs(30);

/// How long one store call may take before it fails: a last guard, past `RETRY_FOR`.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(45);

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A file of NATS credentials (JWT and NKey seed, `nsc`'s `.creds`).
pub const CREDS_ENV: &str = "TEAMCTL_NATS_CREDS";
/// A PEM file of root certificates for a `tls://` server signed by a private CA.
pub const CA_ENV: &str = "TEAMCTL_NATS_CA";

/// The runtime every NATS call runs on: a current-thread runtime driven by a thread of its
/// own, made on first use and kept for the life of the process (a runtime dropped inside
/// another panics; this one never is).
fn runtime() -> &'static tokio::runtime::Handle {
    static RT: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    RT.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("cannot start the NATS runtime");
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("teamctl-nats".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .expect("cannot start the NATS thread");
        handle
    })
}

/// Run `fut` on the NATS runtime and wait for its result on this thread, `CALL_TIMEOUT` at
/// most. Never call this from the NATS runtime itself.
pub fn run<T: Send + 'static>(
    what: &str,
    fut: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let out = tokio::time::timeout(CALL_TIMEOUT, fut).await;
        let _ = tx.send(out);
    });
    match rx.recv() {
        Ok(Ok(out)) => out,
        Ok(Err(_)) => Err(Error::failed(format!(
            "the NATS server did not answer within {} s ({what})",
            CALL_TIMEOUT.as_secs()
        ))),
        Err(_) => Err(Error::failed(format!("the NATS call ended early ({what})"))),
    }
}

/// Why one try of an operation failed.
#[derive(Debug)]
pub enum Fault {
    /// It may pass: a lost answer, no leader yet, a reconnect. Tried again.
    Again(String),
    /// It will not pass by trying again.
    Fatal(Error),
}

/// Texts of server and client errors that trying again cannot mend: a request the server
/// understood and refused. Anything else (timeouts, no responders, "JetStream system
/// temporarily unavailable", a broken connection) is tried again.
const FATAL: &[&str] = &[
    "invalid",
    "max payload",
    "maximum payload",
    "wrong last",
    "error code 10058", // a stream of that name with another configuration
    "error code 10065", // subjects overlap with another stream
    "error code 10074", // replicas > 1 on a server that is not clustered
    "error code 10023", // insufficient resources
    "error code 10005", // no suitable peers for placement
];

impl Fault {
    /// `e` classified by its text: fatal when it is a refusal in `FATAL`, else tried again.
    pub fn of(e: impl std::fmt::Display) -> Fault {
        let text = e.to_string();
        if FATAL.iter().any(|f| text.contains(f)) {
            Fault::Fatal(Error::failed(format!("NATS: {text}")))
        } else {
            Fault::Again(text)
        }
    }
}

/// Whether the error text says the stream (or bucket) asked for does not exist: the server
/// answered, and it is gone (not a request that went unanswered).
pub fn not_found(e: &impl std::fmt::Display) -> bool {
    e.to_string().contains("error code 10059")
}

/// Run `attempt` until it succeeds, fails for good, or `RETRY_FOR` has passed (then one line
/// saying what was tried and the last fault). Each try gets `REQUEST_TIMEOUT` and a little
/// more; a permissions violation reported by the server meanwhile ends it at once.
pub async fn retry<T, F, Fut>(conn: &Conn, what: &str, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, Fault>>,
{
    let deadline = Instant::now() + RETRY_FOR;
    let mut denied = conn.denied.subscribe();
    let mut pause = Duration::from_millis(25);
    loop {
        let tried = tokio::select! {
            biased;
            text = refusal(&mut denied) => return Err(conn.refused(&text)),
            r = tokio::time::timeout(REQUEST_TIMEOUT + Duration::from_secs(1), attempt()) => r,
        };
        let why = match tried {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(Fault::Fatal(e))) => return Err(e),
            Ok(Err(Fault::Again(why))) => why,
            Err(_) => "no answer in time".to_string(),
        };
        if Instant::now() + pause >= deadline {
            return Err(Error::failed(format!(
                "the NATS server at {} did not {what} within {} s ({why})",
                conn.url.shown(),
                RETRY_FOR.as_secs()
            )));
        }
        tokio::select! {
            biased;
            text = refusal(&mut denied) => return Err(conn.refused(&text)),
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// The next permissions violation the server reports on this connection.
async fn refusal(rx: &mut broadcast::Receiver<String>) -> String {
    loop {
        match rx.recv().await {
            Ok(text) => return text,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// Start `fut` on the NATS runtime without waiting (subscriptions' wake-up loops).
pub fn spawn(fut: impl Future<Output = ()> + Send + 'static) -> tokio::task::AbortHandle {
    runtime().spawn(fut).abort_handle()
}

/// One connection: the client, its JetStream context, a signal sent on each reconnect (a
/// subscriber may have missed changes while it was away, so it reads again), and the
/// permissions violations the server reports (a request it refused gets no answer otherwise).
#[derive(Clone)]
pub struct Conn {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
    pub reconnected: broadcast::Sender<()>,
    pub denied: broadcast::Sender<String>,
    pub url: ServerUrl,
}

impl Conn {
    /// The error for a permissions violation `text` (the server's words name the subject).
    pub fn refused(&self, text: &str) -> Error {
        Error::failed(format!(
            "the NATS server at {} refused this user: {} (each team's user is allowed its own team only; see docs/SCALE.md, Credentials)",
            self.url.shown(),
            text.trim().trim_matches('\'')
        ))
    }
}

/// The connection to `url`, made once per process.
pub fn connect(url: &ServerUrl) -> Result<Conn> {
    static CONNS: OnceLock<Mutex<HashMap<String, Conn>>> = OnceLock::new();
    let conns = CONNS.get_or_init(Default::default);
    if let Some(c) = conns.lock().expect("conns").get(url.full()) {
        return Ok(c.clone());
    }
    let u = url.clone();
    let conn = run("connect", async move { open(u).await })?;
    let mut map = conns.lock().expect("conns");
    Ok(map.entry(url.full().to_string()).or_insert(conn).clone())
}

async fn open(url: ServerUrl) -> Result<Conn> {
    let (reconnected, _) = broadcast::channel(4);
    let (denied, _) = broadcast::channel(16);
    let (tx, dtx) = (reconnected.clone(), denied.clone());
    let mut opts = async_nats::ConnectOptions::new()
        .name("teamctl")
        .connection_timeout(CONNECT_TIMEOUT)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .event_callback(move |ev| {
            let (tx, dtx) = (tx.clone(), dtx.clone());
            async move {
                match ev {
                    async_nats::Event::Connected => {
                        let _ = tx.send(());
                    }
                    async_nats::Event::ServerError(async_nats::ServerError::Other(text))
                        if text.to_ascii_lowercase().contains("permissions violation") =>
                    {
                        let _ = dtx.send(text);
                    }
                    _ => {}
                }
            }
        });
    if let Some(creds) = std::env::var_os(CREDS_ENV).filter(|v| !v.is_empty()) {
        opts = opts.credentials_file(&creds).await.map_err(|e| {
            Error::failed(format!(
                "cannot read the NATS credentials file {} ({CREDS_ENV}): {e}",
                std::path::Path::new(&creds).display()
            ))
        })?;
    }
    if let Some(ca) = std::env::var_os(CA_ENV).filter(|v| !v.is_empty()) {
        opts = opts.add_root_certificates(ca.into());
    }
    // async-nats reads no login from the address itself: USER:PASS@ or TOKEN@ is given as
    // options, and the address it connects to is the one without them.
    // A user's replies come on inboxes of its own (`_INBOX_USER.>`), so that a team's user
    // needs no subscription that would show it other users' replies (docs/SCALE.md).
    match userinfo(url.full()) {
        Some((user, Some(pass))) => {
            opts = opts
                .custom_inbox_prefix(format!("_INBOX_{}", super::keys::token(&user)))
                .user_and_password(user, pass);
        }
        Some((token, None)) => opts = opts.token(token),
        None => {}
    }
    let client = opts.connect(url.addresses()).await.map_err(|e| {
        use async_nats::ConnectErrorKind as K;
        // The kind only: the error's own text may carry the address as given.
        let why = match e.kind() {
            K::Io | K::TimedOut => "connection refused or timed out; is nats-server running?",
            K::Authentication | K::AuthorizationViolation => "not authorized",
            K::Tls => "TLS failed",
            K::ServerParse | K::Dns => "cannot resolve the address",
            K::MaxReconnects => "cannot connect",
        };
        Error::failed(format!(
            "cannot reach the NATS server at {}: {why}",
            url.shown()
        ))
    })?;
    let js = jetstream::ContextBuilder::new()
        .timeout(REQUEST_TIMEOUT)
        .build(client.clone());
    Ok(Conn {
        client,
        js,
        reconnected,
        denied,
        url,
    })
}
