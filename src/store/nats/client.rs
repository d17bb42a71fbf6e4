//! The connection side of the NATS store: the server address as given and as shown (never
//! with credentials), one connection per address per process, and the small tokio runtime
//! (its own thread) that runs every NATS call. The `Store` trait is synchronous and its
//! callers may be inside a runtime of their own (the worker), so a call is spawned on this
//! runtime and its result comes back on a std channel: nothing ever blocks the caller's runtime.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use async_nats::jetstream;
use tokio::sync::broadcast;

use super::url::{ServerUrl, userinfo};
use crate::error::{Error, Result};

/// How long one request to the server may wait for its answer. Requests made while the
/// connection is down wait for the reconnect (the client queues them), so a worker rides out
/// a server restart shorter than this; a command that cannot connect at all fails at once.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one store call (a few requests) may take before it fails.
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

/// Start `fut` on the NATS runtime without waiting (subscriptions' wake-up loops).
pub fn spawn(fut: impl Future<Output = ()> + Send + 'static) -> tokio::task::AbortHandle {
    runtime().spawn(fut).abort_handle()
}

/// One connection: the client, its JetStream context, and a signal sent on each reconnect
/// (a subscriber may have missed changes while it was away, so it reads again).
#[derive(Clone)]
pub struct Conn {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
    pub reconnected: broadcast::Sender<()>,
    pub url: ServerUrl,
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
    let tx = reconnected.clone();
    let mut opts = async_nats::ConnectOptions::new()
        .name("teamctl")
        .connection_timeout(CONNECT_TIMEOUT)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .event_callback(move |ev| {
            let tx = tx.clone();
            async move {
                if matches!(ev, async_nats::Event::Connected) {
                    let _ = tx.send(());
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
    match userinfo(url.full()) {
        Some((user, Some(pass))) => opts = opts.user_and_password(user, pass),
        Some((token, None)) => opts = opts.token(token),
        None => {}
    }
    let client = opts.connect(url.shown()).await.map_err(|e| {
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
        url,
    })
}
