//! `NatsStore`: a team kept in NATS JetStream, so that hosts sharing only a NATS server form
//! one team. One stream per team (`tc_TEAM`, subjects `tc.TEAM.inbox.MEMBER`, limits retention
//! with age and size caps) holds the inboxes; a position is a stream sequence. One KV bucket per
//! team (`tc_TEAM`) holds the team file (`config`), live states (`live.NAME`), the task list
//! (`tasks`), shutdown answers, loop notices and locks; the team file and the task list change
//! by revision compare-and-set. A reader's cursor of an inbox is a durable pull consumer
//! (`c_INBOX_READER`, filtered on the inbox, acknowledge-all, headers only) whose ack floor is
//! the position: the reader acknowledges a message after it handled it (at-least-once). A
//! cursor that a build before consumers kept in KV (`cursor.INBOX.READER`) is moved into its
//! consumer on first use. Wake-ups come from consumers too (`watch`): an ephemeral consumer
//! of an inbox's subject, or a watch of KV keys, delivers each change after it was stored, so a
//! woken reader always finds what woke it, and nothing polls; `log -f` reads an ordered
//! consumer of every inbox. Host-local files (logs, worktrees, hook events, recorded
//! environments) stay under the local team directory (`local_dir`), as with the file store.
//!
//! On a JetStream cluster the stream and the bucket are replicated (R3, or fewer on a smaller
//! cluster; R1 on a single server), and read from their leader, never from a follower that
//! may lag. Every operation is tried again after a transient fault (`client::retry`): a
//! publish with the same `Nats-Msg-Id`, a compare-and-set that checks whether its lost answer
//! was in fact a success.

pub mod client;
pub mod keys;
pub mod lock;
#[cfg(test)]
pub mod testing;
#[cfg(test)]
mod tests;
pub mod url;
pub mod watch;

use std::path::PathBuf;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::message::AckKind;
use async_nats::jetstream::{self, kv, stream};
use futures_util::StreamExt;

use self::client::{Conn, Fault};
use self::keys::Keys;
pub use self::url::ServerUrl;
use super::wake::{self, Bell, Subscription, Target, WakeMode};
use super::{Entry, Held, InboxTail, Item, LockKey, Position, Stamp, Store, Topic};
use crate::domain::live::ShutdownAnswer;
use crate::domain::task::TaskList;
use crate::domain::time::now_ms;
use crate::domain::{Envelope, LiveState, Name, TeamConfig};
use crate::error::{Error, Result};

/// How long inbox messages are kept (limits retention; read or not).
pub const MAX_AGE: Duration = Duration::from_hours(720);
/// The inbox stream's size cap; past it the oldest messages go.
pub const MAX_BYTES: i64 = 1 << 30;

/// How many copies of a team's stream and bucket a cluster keeps: the most that the cluster
/// takes of this (a smaller cluster takes fewer, a single server one).
pub const REPLICAS: usize = 3;

/// A JetStream or KV error as one line.
fn nats_err(e: impl std::fmt::Display) -> Error {
    Error::failed(format!("NATS: {e}"))
}

/// Whether an error says the server cannot place that many replicas (not clustered, or a
/// smaller cluster): the stream is made with fewer.
fn too_many_replicas(e: &Error) -> bool {
    let t = e.to_string();
    ["error code 10074", "error code 10023", "error code 10005"]
        .iter()
        .any(|c| t.contains(c))
}

fn gone_error(team: &Name, url: &ServerUrl) -> Error {
    Error::failed(format!(
        "team {team} no longer exists (deleted from the NATS server at {})",
        url.shown()
    ))
}

/// What a fault of one of a team's streams means: the stream gone (the team deleted), or a
/// fault to try again after.
#[derive(Clone)]
struct Judge {
    js: jetstream::Context,
    stream: String,
    team: Name,
    url: ServerUrl,
}

impl Judge {
    async fn fault(&self, e: impl std::fmt::Display) -> Fault {
        let text = e.to_string();
        if client::not_found(&text) {
            return Fault::Fatal(gone_error(&self.team, &self.url));
        }
        if text.contains("no responders") || text.contains("no stream found") {
            return gone_or_again(&self.js, &self.stream, text, || {
                gone_error(&self.team, &self.url)
            })
            .await;
        }
        Fault::of(text)
    }
}

/// A fault of a request that found no one to answer it ("no responders"): the stream is gone
/// (the server says so when asked), or it has no leader yet or JetStream is still starting
/// (then it is tried again).
async fn gone_or_again(
    js: &jetstream::Context,
    stream: &str,
    e: impl std::fmt::Display,
    gone: impl FnOnce() -> Error,
) -> Fault {
    match js.get_stream(stream).await {
        Err(e2) if client::not_found(&e2) => Fault::Fatal(gone()),
        _ => Fault::Again(e.to_string()),
    }
}

pub struct NatsStore {
    team: Name,
    conn: Conn,
    keys: Keys,
    stream: stream::Stream,
    kv: kv::Store,
    local: PathBuf,
}

impl std::fmt::Debug for NatsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NatsStore({} at {})", self.team, self.conn.url.shown())
    }
}

/// What `create` found.
pub enum Created {
    Made(Box<NatsStore>),
    /// A team of that name is in NATS already.
    Taken,
}

impl NatsStore {
    /// This store, shared.
    pub fn shared(self) -> super::SharedStore {
        std::sync::Arc::new(self)
    }

    /// Open `team`, which must exist in NATS; `local` is its directory on this host.
    pub fn open(url: &ServerUrl, team: &Name, local: PathBuf) -> Result<NatsStore> {
        let conn = client::connect(url)?;
        let keys = Keys::new(team);
        let (c, sname, bname) = (conn.clone(), keys.stream(), keys.bucket());
        let found = client::run("open", async move {
            client::retry(&c, "open the team", || {
                let (js, sname, bname) = (c.js.clone(), sname.clone(), bname.clone());
                async move {
                    let kv = match js.get_key_value(&bname).await {
                        Ok(kv) => kv,
                        Err(e) if client::not_found(&e) => return Ok(None),
                        Err(e) => return Err(Fault::of(e)),
                    };
                    let stream = match js.get_stream(&sname).await {
                        Ok(s) => s,
                        Err(e) if client::not_found(&e) => return Ok(None),
                        Err(e) => return Err(Fault::of(e)),
                    };
                    match kv.entry(keys::CONFIG).await {
                        Ok(Some(e)) if e.operation == kv::Operation::Put => Ok(Some((stream, kv))),
                        Ok(_) => Ok(None),
                        Err(e) => Err(Fault::of(e)),
                    }
                }
            })
            .await
        })?;
        let Some((stream, kv)) = found else {
            return Err(Error::bad(format!(
                "no team {team:?} in the NATS server at {} for this login (another NATS account may keep it); create it with `teamctl create {team} --store {}`",
                url.shown(),
                url.shown()
            )));
        };
        Self::with_local(team, conn, keys, stream, kv, local)
    }

    /// The teams kept on the server at `url`, as far as this login may list them (none when
    /// it may not: the caller's check is then skipped, not failed).
    pub fn team_names(url: &ServerUrl) -> Vec<Name> {
        let Ok(conn) = client::connect(url) else {
            return Vec::new();
        };
        let js = conn.js.clone();
        client::run("list the teams", async move {
            let mut names = js.stream_names();
            let mut out = Vec::new();
            while let Some(Ok(stream)) = names.next().await {
                out.extend(keys::team_of_stream(&stream));
            }
            Ok(out)
        })
        .unwrap_or_default()
    }

    /// Whether `team` exists in NATS.
    pub fn exists_at(url: &ServerUrl, team: &Name) -> Result<bool> {
        let conn = client::connect(url)?;
        let bname = Keys::new(team).bucket();
        let c = conn.clone();
        client::run("look up a team", async move {
            client::retry(&c, "look up a team", || {
                let (js, bname) = (c.js.clone(), bname.clone());
                async move {
                    let kv = match js.get_key_value(&bname).await {
                        Ok(kv) => kv,
                        Err(e) if client::not_found(&e) => return Ok(false),
                        Err(e) => return Err(Fault::of(e)),
                    };
                    match kv.entry(keys::CONFIG).await {
                        Ok(e) => Ok(matches!(e, Some(e) if e.operation == kv::Operation::Put)),
                        Err(e) => Err(Fault::of(e)),
                    }
                }
            })
            .await
        })
    }

    /// Make `config.name`'s stream and bucket and write its first team file, unless a team
    /// of that name is there already.
    pub fn create(url: &ServerUrl, config: &TeamConfig, local: PathBuf) -> Result<Created> {
        let conn = client::connect(url)?;
        let keys = Keys::new(&config.name);
        let bytes = serde_json::to_vec_pretty(config)
            .map_err(|e| Error::failed(format!("cannot encode the team file: {e}")))?;
        let (c, k, fixed) = (conn.clone(), keys.clone(), url.replicas());
        let made = client::run("create the team", async move {
            // A team of that name already: taken (a suffix is tried).
            let taken = client::retry(&c, "look up the team", || {
                let (js, bucket) = (c.js.clone(), k.bucket());
                async move {
                    let kv = match js.get_key_value(bucket).await {
                        Ok(kv) => kv,
                        Err(e) if client::not_found(&e) => return Ok(false),
                        Err(e) => return Err(Fault::of(e)),
                    };
                    match kv.entry(keys::CONFIG).await {
                        Ok(e) => Ok(matches!(e, Some(e) if e.operation == kv::Operation::Put)),
                        Err(e) => Err(Fault::of(e)),
                    }
                }
            })
            .await?;
            if taken {
                return Ok(None);
            }
            // As many replicas as the cluster takes, up to REPLICAS; exactly those asked for
            // with `?replicas=N`.
            let mut replicas = fixed.unwrap_or(REPLICAS);
            let stream = loop {
                let made = client::retry(&c, "make the inbox stream", || {
                    let (js, k) = (c.js.clone(), k.clone());
                    async move {
                        js.get_or_create_stream(inbox_stream(&k, replicas))
                            .await
                            .map_err(Fault::of)
                    }
                })
                .await;
                match made {
                    Ok(s) => break s,
                    Err(e) if fixed.is_none() && replicas > 1 && too_many_replicas(&e) => {
                        replicas -= 1;
                    }
                    Err(e) => {
                        return Err(Error::failed(format!("cannot make the inbox stream: {e}")));
                    }
                }
            };
            // A stream of that name made by someone else (messages in it, or another shape)
            // is not taken over: its messages would run as this team's mail.
            let info = client::retry(&c, "look at the inbox stream", || {
                let mut s = stream.clone();
                async move { s.info().await.cloned().map_err(Fault::of) }
            })
            .await?;
            if info.state.messages > 0 || info.config.subjects != vec![k.inboxes()] {
                return Err(Error::failed(format!(
                    "the NATS server has a stream {} that teamctl did not make for a new team ({} messages); remove it or choose another team name",
                    k.stream(),
                    info.state.messages
                )));
            }
            let replicas = info.config.num_replicas.max(1);
            let kv = client::retry(&c, "make the team's KV bucket", || {
                let (js, k) = (c.js.clone(), k.clone());
                async move {
                    let kv = match js.get_key_value(k.bucket()).await {
                        Ok(kv) => kv,
                        Err(e) if client::not_found(&e) => js
                            .create_key_value(kv_config(&k, replicas))
                            .await
                            .map_err(Fault::of)?,
                        Err(e) => return Err(Fault::of(e)),
                    };
                    // Replicated: read from the leader only (a follower may lag behind a
                    // write just acknowledged), as the inbox stream is.
                    if replicas > 1 && kv.stream.cached_info().config.allow_direct {
                        let mut config = kv.stream.cached_info().config.clone();
                        config.allow_direct = false;
                        js.update_stream(config).await.map_err(Fault::of)?;
                        return js.get_key_value(k.bucket()).await.map_err(Fault::of);
                    }
                    Ok(kv)
                }
            })
            .await
            .map_err(|e| Error::failed(format!("cannot make the team's KV bucket: {e}")))?;
            let first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
            let created = client::retry(&c, "write the team file", || {
                let (kv, bytes) = (kv.clone(), bytes.clone());
                let retried = !first.swap(false, std::sync::atomic::Ordering::SeqCst);
                async move {
                    match kv.create(keys::CONFIG, bytes.clone().into()).await {
                        Ok(_) => Ok(true),
                        Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                            // A try whose answer was lost may have made it: ours if it holds
                            // exactly what we wrote.
                            Ok(retried && holds(&kv, keys::CONFIG, &bytes).await?)
                        }
                        Err(e) => Err(Fault::of(e)),
                    }
                }
            })
            .await
            .map_err(|e| Error::failed(format!("cannot write the team file: {e}")))?;
            Ok(created.then_some((stream, kv)))
        })?;
        match made {
            Some((stream, kv)) => Ok(Created::Made(Box::new(Self::with_local(
                &config.name,
                conn,
                keys,
                stream,
                kv,
                local,
            )?))),
            None => Ok(Created::Taken),
        }
    }

    fn with_local(
        team: &Name,
        conn: Conn,
        keys: Keys,
        stream: stream::Stream,
        kv: kv::Store,
        local: PathBuf,
    ) -> Result<NatsStore> {
        super::fsutil::ensure_dir(&local)?;
        super::fsutil::ensure_dir_levels(&local.join("logs"), 1)?;
        Ok(NatsStore {
            team: team.clone(),
            conn,
            keys,
            stream,
            kv,
            local,
        })
    }

    /// The server's address, without credentials.
    pub fn url(&self) -> &ServerUrl {
        &self.conn.url
    }

    /// Run `attempt` on the NATS runtime, again after each transient fault (`client::retry`).
    fn call<T, F, Fut>(&self, what: &'static str, attempt: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, Fault>> + Send,
    {
        let conn = self.conn.clone();
        client::run(
            what,
            async move { client::retry(&conn, what, attempt).await },
        )
    }

    /// A KV value and its revision, `None` when the key is absent or deleted (or the bucket
    /// is: the team was deleted).
    fn get_raw(&self, key: String) -> Result<Option<(bytes::Bytes, u64)>> {
        let (kv, judge) = (self.kv.clone(), self.judge(true));
        self.call("read", move || {
            let (kv, key, judge) = (kv.clone(), key.clone(), judge.clone());
            async move {
                match kv.entry(&key).await {
                    Ok(Some(e)) if e.operation == kv::Operation::Put => {
                        Ok(Some((e.value, e.revision)))
                    }
                    Ok(_) => Ok(None),
                    // The bucket is gone (the team was deleted): so is the key.
                    Err(e) => match judge.fault(e).await {
                        Fault::Fatal(e) if e.to_string().contains("no longer exists") => Ok(None),
                        f => Err(f),
                    },
                }
            }
        })
    }

    /// The judge of faults of the inbox stream (`kv`: of the bucket).
    fn judge(&self, kv: bool) -> Judge {
        Judge {
            js: self.conn.js.clone(),
            stream: if kv {
                self.keys.kv_stream()
            } else {
                self.keys.stream()
            },
            team: self.team.clone(),
            url: self.conn.url.clone(),
        }
    }

    /// A KV value parsed, `None` when the key is absent or deleted; a damaged value is an
    /// error that names it.
    fn get_json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<(T, u64)>> {
        match self.get_raw(key.to_string())? {
            None => Ok(None),
            Some((bytes, rev)) => serde_json::from_slice(&bytes)
                .map(|v| Some((v, rev)))
                .map_err(|e| {
                    Error::failed(format!(
                        "{key} in the NATS bucket {} is damaged ({e})",
                        self.keys.bucket()
                    ))
                }),
        }
    }

    fn put(&self, key: String, bytes: Vec<u8>) -> Result<u64> {
        let (kv, judge) = (self.kv.clone(), self.judge(true));
        let bytes = bytes::Bytes::from(bytes);
        self.call("write", move || {
            let (kv, key, bytes, judge) = (kv.clone(), key.clone(), bytes.clone(), judge.clone());
            async move {
                match kv.put(&key, bytes).await {
                    Ok(rev) => Ok(rev),
                    Err(e) => Err(judge.fault(e).await),
                }
            }
        })
    }

    /// Change the JSON value at `key` by compare-and-set on its revision, again on a
    /// conflict; `f` returning an error leaves it untouched, so does a change that changes
    /// nothing. `absent` is the value of a missing key (`None`: missing is an error).
    fn update_json<T>(
        &self,
        key: &str,
        absent: Option<&T>,
        f: &mut dyn FnMut(&mut T) -> Result<()>,
    ) -> Result<T>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + Clone + Send + 'static,
    {
        for _ in 0..10_000 {
            let (before, rev) = match self.get_json::<T>(key)? {
                Some((v, rev)) => (v, Some(rev)),
                None => match absent {
                    Some(v) => (v.clone(), None),
                    None => return Err(self.gone()),
                },
            };
            let mut after = before.clone();
            f(&mut after)?;
            if after == before && rev.is_some() {
                return Ok(after);
            }
            let bytes = serde_json::to_vec_pretty(&after)
                .map_err(|e| Error::failed(format!("cannot encode {key}: {e}")))?;
            let (k, kv, judge) = (key.to_string(), self.kv.clone(), self.judge(true));
            let bytes = bytes::Bytes::from(bytes);
            let mut retried = false;
            let written = self.call("compare-and-set", move || {
                let (k, kv, bytes, judge) = (k.clone(), kv.clone(), bytes.clone(), judge.clone());
                let again = std::mem::replace(&mut retried, true);
                async move {
                    let res = match rev {
                        Some(rev) => kv.update(&k, bytes.clone(), rev).await,
                        None => kv.create(&k, bytes.clone()).await.map_err(|e| {
                            if e.kind() == kv::CreateErrorKind::AlreadyExists {
                                kv::UpdateError::new(kv::UpdateErrorKind::WrongLastRevision)
                            } else {
                                kv::UpdateError::with_source(kv::UpdateErrorKind::Other, e)
                            }
                        }),
                    };
                    match res {
                        Ok(_) => Ok(true),
                        // A try whose answer was lost may have written it: then the key
                        // holds exactly these bytes (else another writer came first).
                        Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                            Ok(again && holds(&kv, &k, &bytes).await?)
                        }
                        Err(e) => Err(judge.fault(e).await),
                    }
                }
            })?;
            if written {
                return Ok(after);
            }
        }
        Err(Error::failed(format!(
            "could not change {key} in NATS: too many concurrent writers"
        )))
    }

    fn gone(&self) -> Error {
        gone_error(&self.team, &self.conn.url)
    }

    /// The team file's KV revision, `None` when the team is gone.
    fn config_revision(&self) -> Result<Option<u64>> {
        Ok(self.get_raw(keys::CONFIG.to_string())?.map(|(_, rev)| rev))
    }

    /// The last message on `subject` (`None`: none), from the leader when replicated.
    fn last_message(&self, subject: String) -> Result<Option<jetstream::message::StreamMessage>> {
        let (stream, judge) = (self.stream.clone(), self.judge(false));
        let direct = self.stream.cached_info().config.allow_direct;
        self.call("read", move || {
            let (stream, subject, judge) = (stream.clone(), subject.clone(), judge.clone());
            async move {
                if direct {
                    match stream.direct_get_last_for_subject(subject).await {
                        Ok(m) => Ok(Some(m)),
                        Err(e) if e.kind() == stream::DirectGetErrorKind::NotFound => Ok(None),
                        Err(e) => Err(judge.fault(e).await),
                    }
                } else {
                    match stream.get_last_raw_message_by_subject(&subject).await {
                        Ok(m) => Ok(Some(m)),
                        Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => {
                            Ok(None)
                        }
                        Err(e) => Err(judge.fault(e).await),
                    }
                }
            }
        })
    }

    /// The time of the last message on `subject`, if any.
    fn last_on(&self, subject: String) -> Option<std::time::SystemTime> {
        let m = self.last_message(subject).ok()??;
        Some(to_system_time(m.time.unix_timestamp_nanos()))
    }
}

/// One reader's cursor of one inbox: its durable consumer, and the KV key a cursor is kept
/// in while there is no consumer (an older build's cursor, or one being moved back).
#[derive(Clone)]
struct Cursor {
    stream: stream::Stream,
    js: jetstream::Context,
    sname: String,
    kv: kv::Store,
    name: String,
    subject: String,
    key: String,
}

/// How many messages a cursor's consumer fetches at a time.
const CURSOR_BATCH: usize = 256;

impl NatsStore {
    fn cursor_handle(&self, inbox: &Name, reader: &str) -> Cursor {
        Cursor {
            stream: self.stream.clone(),
            js: self.conn.js.clone(),
            sname: self.keys.stream(),
            kv: self.kv.clone(),
            name: keys::consumer(inbox, reader),
            subject: self.keys.inbox(inbox),
            key: keys::cursor(inbox, reader),
        }
    }
}

impl Cursor {
    /// The consumer and its position: the stream sequence of the last message acknowledged,
    /// or, before any, the one before where it starts.
    async fn consumer(
        &self,
        judge: &Judge,
    ) -> Result<Option<(jetstream::consumer::PullConsumer, u64)>, Fault> {
        match self.stream.get_consumer::<pull::Config>(&self.name).await {
            Ok(c) => {
                let floor = floor(c.cached_info());
                Ok(Some((c, floor)))
            }
            Err(e) if consumer_missing(&e) => Ok(None),
            Err(e) => Err(judge.fault(e).await),
        }
    }

    /// The position kept in KV, if there is one it can be. Anyone who may write the team's
    /// keys may write this one, so a position past the inbox's last stored message (which
    /// would skip mail that comes later, silently) is not believed: read as none kept, the
    /// inbox is read again from its start (replayed, never lost: at-least-once).
    /// Also whether the key is there at all (believed or not), so that it can be deleted.
    async fn kept(&self) -> Result<(bool, Option<u64>), Fault> {
        let (there, kept) = match self.kv.entry(&self.key).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => (
                true,
                std::str::from_utf8(&e.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok()),
            ),
            Ok(_) => (false, None),
            Err(e) => return Err(Fault::of(e)),
        };
        match kept {
            Some(pos) if pos > 0 => Ok((there, (pos <= self.last().await?).then_some(pos))),
            other => Ok((there, other)),
        }
    }

    /// The stream sequence of the inbox's last stored message (0: none), asked of the
    /// stream's leader (a follower may lag a message just stored; this is asked only while a
    /// reader has no consumer, rarely).
    async fn last(&self) -> Result<u64, Fault> {
        match self
            .stream
            .get_last_raw_message_by_subject(&self.subject)
            .await
        {
            Ok(m) => Ok(m.sequence),
            Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(0),
            Err(e) => Err(Fault::of(e)),
        }
    }

    /// Make the consumer, starting after `after`.
    async fn create(&self, after: u64) -> Result<jetstream::consumer::PullConsumer, Fault> {
        let config = pull::Config {
            durable_name: Some(self.name.clone()),
            description: Some("teamctl cursor".into()),
            filter_subject: self.subject.clone(),
            ack_policy: AckPolicy::All,
            deliver_policy: if after == 0 {
                DeliverPolicy::All
            } else {
                DeliverPolicy::ByStartSequence {
                    start_sequence: after + 1,
                }
            },
            headers_only: true,
            ..Default::default()
        };
        self.stream.create_consumer(config).await.map_err(Fault::of)
    }

    /// Make the consumer again after `pos`: `pos` is kept in KV while there is none.
    async fn restart(&self, judge: &Judge, pos: u64) -> Result<(), Fault> {
        self.kv
            .put(&self.key, pos.to_string().into())
            .await
            .map_err(Fault::of)?;
        if let Err(e) = self.stream.delete_consumer(&self.name).await
            && !consumer_missing(&e)
        {
            return Err(judge.fault(e).await);
        }
        self.create(pos).await?;
        self.forget().await
    }

    /// The consumer and the kept position gone (neither there is no fault).
    async fn remove(&self, judge: &Judge) -> Result<(), Fault> {
        if let Err(e) = self.stream.delete_consumer(&self.name).await
            && !consumer_missing(&e)
        {
            return Err(judge.fault(e).await);
        }
        if self.kept().await?.0 {
            self.forget().await?;
        }
        Ok(())
    }

    async fn forget(&self) -> Result<(), Fault> {
        self.kv.delete(&self.key).await.map_err(Fault::of)
    }

    async fn set(&self, judge: &Judge, pos: u64) -> Result<(), Fault> {
        // The usual move (a reader handled what followed its cursor): forward, through
        // messages the consumer has still to deliver; nothing else is asked.
        if pos > 0 && self.forward(pos).await? == Some(pos) {
            return Ok(());
        }
        let floor = match self.consumer(judge).await? {
            Some((_, floor)) => floor,
            None => {
                // None yet: start after a kept cursor (an older build's), or at the start.
                let (there, kept) = self.kept().await?;
                let after = kept.unwrap_or(0).min(pos);
                self.create(after).await?;
                if there {
                    self.forget().await?;
                }
                after
            }
        };
        if pos == floor {
            return Ok(());
        }
        if pos > floor && self.forward(pos).await? == Some(pos) {
            return Ok(());
        }
        // Back, or to a position the consumer cannot deliver (a message delivered before
        // and never acknowledged, or one gone with the stream's limits).
        self.restart(judge, pos).await
    }

    /// Fetch from the consumer up to the message at `pos` and acknowledge the last message
    /// at or before it (acknowledge-all: those before it too; confirmed, so Ok means the
    /// server has it); those fetched past it are handed back at once (nak) for the next
    /// move. Asks for 2, 4, 8 ... messages at a time, so that few are fetched past `pos`,
    /// and acknowledges once at the end (or every `CURSOR_BATCH` messages, within the
    /// consumer's limit of messages awaiting acknowledgement).
    /// The stream sequence acknowledged (0: none), `None` when there is no consumer.
    async fn forward(&self, pos: u64) -> Result<Option<u64>, Fault> {
        let client = self.js.client();
        let (mut acked, mut want, mut unacked) = (0, 2, 0);
        let mut last: Option<(u64, jetstream::Message)> = None;
        loop {
            let inbox = client.new_inbox();
            let mut replies = client.subscribe(inbox.clone()).await.map_err(Fault::of)?;
            let request = serde_json::json!({ "batch": want, "no_wait": true });
            client
                .publish_with_reply(
                    format!("$JS.API.CONSUMER.MSG.NEXT.{}.{}", self.sname, self.name),
                    inbox,
                    request.to_string().into(),
                )
                .await
                .map_err(Fault::of)?;
            let (mut beyond, mut got) = (Vec::new(), 0);
            while got < want {
                let Ok(Some(m)) =
                    tokio::time::timeout(client::REQUEST_TIMEOUT, replies.next()).await
                else {
                    return Err(Fault::Again("no answer in time (fetch)".into()));
                };
                match m.status.map(|s| s.as_u16()) {
                    // No (more) messages, or the request ended.
                    Some(404 | 408 | 409) => break,
                    // No one serves that consumer: there is none.
                    Some(503) => return Ok(None),
                    Some(100) => continue,
                    Some(code) => {
                        return Err(Fault::Again(format!(
                            "status {code} {}",
                            m.description.clone().unwrap_or_default()
                        )));
                    }
                    None => {}
                }
                got += 1;
                let m = jetstream::Message {
                    message: m,
                    context: self.js.clone(),
                };
                let seq = m.info().map_err(Fault::of)?.stream_sequence;
                if seq <= pos {
                    last = Some((seq, m));
                    unacked += 1;
                } else {
                    beyond.push(m);
                }
            }
            drop(replies);
            for m in &beyond {
                m.ack_with(AckKind::Nak(None)).await.map_err(Fault::of)?;
            }
            let end = !beyond.is_empty() || got < want || last.as_ref().is_some_and(|l| l.0 == pos);
            if (end || unacked >= CURSOR_BATCH)
                && let Some((seq, m)) = last.take()
            {
                m.double_ack().await.map_err(Fault::of)?;
                acked = seq;
                unacked = 0;
            }
            if end {
                return Ok(Some(acked));
            }
            want = (want * 2).min(CURSOR_BATCH);
        }
    }
}

/// A consumer's position (`Cursor::consumer`).
fn floor(info: &jetstream::consumer::Info) -> u64 {
    if info.ack_floor.consumer_sequence > 0 {
        return info.ack_floor.stream_sequence;
    }
    match info.config.deliver_policy {
        DeliverPolicy::ByStartSequence { start_sequence } => start_sequence.saturating_sub(1),
        _ => 0,
    }
}

/// Whether the server said there is no such consumer.
fn consumer_missing(e: &impl std::fmt::Display) -> bool {
    let t = e.to_string();
    t.contains("error code 10014") || t.contains("consumer not found")
}

/// The inbox stream of a team, with `replicas` copies; read from its leader when replicated.
fn inbox_stream(k: &Keys, replicas: usize) -> stream::Config {
    stream::Config {
        name: k.stream(),
        description: Some("teamctl inboxes".into()),
        subjects: vec![k.inboxes()],
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::Old,
        max_age: MAX_AGE,
        max_bytes: MAX_BYTES,
        storage: stream::StorageType::File,
        num_replicas: replicas,
        allow_direct: true,
        duplicate_window: Duration::from_mins(2),
        ..Default::default()
    }
}

fn kv_config(k: &Keys, replicas: usize) -> kv::Config {
    kv::Config {
        bucket: k.bucket(),
        description: "teamctl team state".into(),
        history: 1,
        max_value_size: -1,
        max_bytes: -1,
        storage: stream::StorageType::File,
        num_replicas: replicas,
        ..Default::default()
    }
}

/// How many messages one read asks for at a time.
const READ_BATCH: usize = 256;

/// The message at `seq` of stream `sname` as an inbox entry.
fn entry(seq: u64, payload: &[u8], sname: &str) -> Entry {
    let item = if payload.iter().all(|b| b.is_ascii_whitespace()) {
        Item::Blank
    } else {
        match Envelope::from_line(payload) {
            Ok(env) => Item::Message(Box::new(env)),
            Err(e) => Item::Garbage(format!(
                "skipped an unreadable message at sequence {seq} of stream {sname}: {e}"
            )),
        }
    };
    Entry {
        start: Position::from_raw(seq - 1),
        end: Position::from_raw(seq),
        item,
    }
}

/// Up to `max` messages on `subject` from sequence `from` on, in one batched direct get
/// (`$JS.API.DIRECT.GET.STREAM` with `batch`, nats-server 2.11+; a 2.10 server answers with
/// one message): `(sequence, payload)` in order, fewer at the end of the stream, and whether
/// the server batched (a 2.10 server's one message says nothing about the end).
async fn direct_batch(
    client: &async_nats::Client,
    sname: &str,
    subject: &str,
    from: u64,
    max: usize,
) -> Result<(Vec<(u64, bytes::Bytes)>, bool), Fault> {
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.map_err(Fault::of)?;
    let request = serde_json::json!({ "seq": from, "next_by_subj": subject, "batch": max });
    client
        .publish_with_reply(
            format!("$JS.API.DIRECT.GET.{sname}"),
            inbox,
            request.to_string().into(),
        )
        .await
        .map_err(Fault::of)?;
    let mut out = Vec::new();
    let mut batched = true;
    // Only a 2.11 or newer server answers with batches. A 2.10 server's one message may carry a
    // `Nats-Num-Pending` of the publisher's (stored with the message): not taken for a batch.
    let can_batch = server_batches(&client.server_info().version);
    loop {
        let Ok(Some(m)) = tokio::time::timeout(client::REQUEST_TIMEOUT, replies.next()).await
        else {
            return Err(Fault::Again("no answer in time (read)".into()));
        };
        match m.status.map(|s| s.as_u16()) {
            // The end of the batch, or nothing (more) to read.
            Some(204 | 404) => break,
            Some(503) => return Err(Fault::Again("no responders".into())),
            Some(code) if code >= 300 => {
                return Err(Fault::Again(format!(
                    "status {code} {}",
                    m.description.unwrap_or_default()
                )));
            }
            _ => {}
        }
        // The server appends its own `Nats-Sequence` after the stored message's headers, which
        // anyone who may publish to the inbox chooses (a republished message carries one of
        // its first stream's): the last value is the server's. A sequence that does not move
        // on would have the reader ask for the same messages for ever.
        let headers = m.headers.as_ref();
        let seq = headers
            .and_then(|h| h.get_last("Nats-Sequence"))
            .and_then(|v| v.as_str().parse::<u64>().ok())
            .ok_or_else(|| {
                Fault::Fatal(Error::failed("NATS: a stored message without its sequence"))
            })?;
        let floor = out.last().map_or(from, |(prev, _)| prev + 1);
        if seq < floor {
            return Err(Fault::Fatal(Error::failed(format!(
                "NATS: stream {sname} answered sequence {seq} when asked from {floor}"
            ))));
        }
        out.push((seq, m.payload));
        // A server without batches sends one message and no count of the rest.
        batched = can_batch && headers.is_some_and(|h| h.get("Nats-Num-Pending").is_some());
        // Full: the end-of-batch marker that follows is not waited for.
        if !batched || out.len() >= max {
            break;
        }
    }
    Ok((out, batched))
}

/// Whether a server of `version` (`2.11.0`, `v2.10.26`) answers a direct get with batches.
fn server_batches(version: &str) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 11)
}

/// Whether `key` holds exactly `bytes` (a write whose answer was lost took effect).
async fn holds(kv: &kv::Store, key: &str, bytes: &[u8]) -> Result<bool, Fault> {
    match kv.entry(key).await {
        Ok(Some(e)) => Ok(e.operation == kv::Operation::Put && e.value.as_ref() == bytes),
        Ok(None) => Ok(false),
        Err(e) => Err(Fault::of(e)),
    }
}

fn to_system_time(nanos: i128) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_nanos(nanos.max(0) as u64)
}

/// Wake-ups from the server: one task per watch, and one that rings on reconnect (changes
/// made while away were not heard). Dropping this ends them (their subscriptions go).
struct PushGuard {
    tasks: Vec<tokio::task::AbortHandle>,
    _local: Option<Subscription>,
}

impl Drop for PushGuard {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Store for NatsStore {
    /// A team of this home (on files or on NATS, so that an answer finds its way back to
    /// whichever team asked), else another team on the same server. The latter's host-local
    /// directory is this team's: only its inboxes are written, and nothing new is made here.
    /// A team this login cannot see there is not offered to be made: it may well exist, in
    /// another NATS account (docs/SCALE.md, one account per team).
    fn sibling(&self, team: &Name) -> Result<super::SharedStore> {
        if let Some(home) = self.local.parent().and_then(std::path::Path::parent) {
            let home = super::Home::new(home.to_path_buf());
            if home.exists(team) {
                return home.open(team);
            }
        }
        match NatsStore::open(&self.conn.url, team, self.local.clone()) {
            Ok(s) => Ok(std::sync::Arc::new(s)),
            Err(Error::BadInput(_)) => Err(Error::bad(format!(
                "no team {team:?} on the NATS server at {} for this login (another NATS account may keep it, or there is no such team)",
                self.conn.url.shown()
            ))),
            Err(e) => Err(e),
        }
    }

    fn team(&self) -> &Name {
        &self.team
    }

    fn exists(&self) -> bool {
        self.stamp().is_some()
    }

    fn load(&self) -> Result<TeamConfig> {
        match self.get_json::<TeamConfig>(keys::CONFIG) {
            // A member's agent id is its name at the team, whatever the shared file says: it
            // tags the member's panes and processes, which teamctl ends by that tag.
            Ok(Some((mut c, _))) => {
                c.fix_agent_ids();
                Ok(c)
            }
            Ok(None) => Err(self.gone()),
            Err(e) => Err(e),
        }
    }

    /// The team file's KV revision.
    fn stamp(&self) -> Option<Stamp> {
        self.config_revision().ok().flatten().map(Stamp::revision)
    }

    fn update(&self, f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>) -> Result<TeamConfig> {
        self.update_json(keys::CONFIG, None, &mut |c: &mut TeamConfig| {
            c.fix_agent_ids();
            f(c)
        })
    }

    /// Only that the team exists. A `send` racing `delete`'s mark may append after it; the
    /// message then goes with the team (the file store orders them by a shared lock).
    fn hold_shared(&self) -> Result<Held> {
        if self.config_revision()?.is_none() {
            return Err(self.gone());
        }
        Ok(Held::new(()))
    }

    fn lock(&self, key: &LockKey) -> Result<Held> {
        let key = match key {
            LockKey::Start(name) => keys::lock(&format!("start-{name}")),
            LockKey::Protocol => keys::lock("protocol"),
            LockKey::Plan(name) => keys::lock(&format!("plan-{name}")),
        };
        let watch = (self.keys.kv_stream(), self.keys.kv_subject(&key));
        let guard = lock::acquire(&self.conn, &self.kv, &key, &watch)?;
        Ok(Held::new(guard))
    }

    /// `Nats-Msg-Id` is the inbox and the envelope's id: a send retried after a lost
    /// acknowledgement is stored once (within the stream's duplicate window).
    fn append(&self, inbox: &Name, env: &Envelope) -> Result<()> {
        let mut line = env.to_line()?;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let max = self.conn.client.server_info().max_payload;
        if line.len() + 512 > max {
            return Err(Error::failed(format!(
                "the message is {} bytes, more than the NATS server at {} takes ({max} bytes); raise max_payload in its configuration",
                line.len(),
                self.conn.url.shown()
            )));
        }
        let js = self.conn.js.clone();
        let subject = self.keys.inbox(inbox);
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", format!("{inbox}.{}", env.id).as_str());
        let (team, url, sname) = (self.team.clone(), self.conn.url.clone(), self.keys.stream());
        let payload = bytes::Bytes::from(line);
        // Each try publishes the same message with the same id: stored once however many
        // tries it takes (a lost acknowledgement, a leader election).
        self.call("store the message", move || {
            let (js, subject, headers, payload) = (
                js.clone(),
                subject.clone(),
                headers.clone(),
                payload.clone(),
            );
            let (team, url, sname) = (team.clone(), url.clone(), sname.clone());
            async move {
                let ack = match js.publish_with_headers(subject, headers, payload).await {
                    Ok(ack) => ack,
                    Err(e) => return Err(Fault::of(e)),
                };
                match ack.await {
                    Ok(_) => Ok(()),
                    // No responders: the stream is gone, or has no leader yet.
                    Err(e) if e.kind() == jetstream::context::PublishErrorKind::StreamNotFound => {
                        Err(gone_or_again(&js, &sname, e, || gone_error(&team, &url)).await)
                    }
                    Err(e) => Err(Fault::of(e)),
                }
            }
        })
    }

    /// Up to `max` messages after `from`, fetched in batches (one request per batch, served
    /// by any replica). Replicated, the end a replica reports is checked with the leader: a
    /// follower may not have a message whose wake-up the reader just had.
    fn read(&self, inbox: &Name, from: Position, max: usize) -> Result<Vec<Entry>> {
        let (stream, client) = (self.stream.clone(), self.conn.client.clone());
        let subject = self.keys.inbox(inbox);
        let sname = self.keys.stream();
        let replicated = self.stream.cached_info().config.num_replicas > 1;
        let judge = self.judge(false);
        self.call("read", move || {
            let (stream, client, subject, sname) = (
                stream.clone(),
                client.clone(),
                subject.clone(),
                sname.clone(),
            );
            let judge = judge.clone();
            async move {
                let mut out = Vec::new();
                let mut next = from.raw() + 1;
                while out.len() < max {
                    let want = (max - out.len()).min(READ_BATCH);
                    let (mut got, batched) =
                        match direct_batch(&client, &sname, &subject, next, want).await {
                            Ok(got) => got,
                            Err(Fault::Again(why)) => return Err(judge.fault(why).await),
                            Err(fatal) => return Err(fatal),
                        };
                    if got.len() < want && replicated {
                        let after = got.last().map_or(next, |(seq, _)| seq + 1);
                        match stream
                            .raw_message_builder()
                            .sequence(after)
                            .next_by_subject(subject.clone())
                            .send()
                            .await
                        {
                            Ok(m) => got.push((m.sequence, m.payload)),
                            Err(e)
                                if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => {}
                            Err(e) => return Err(judge.fault(e).await),
                        }
                    }
                    let Some((last, _)) = got.last() else { break };
                    next = last + 1;
                    // A server without batches (2.10) answered one message: ask for the next.
                    let full = got.len() >= want || !batched;
                    for (seq, payload) in got {
                        out.push(entry(seq, &payload, &sname));
                    }
                    if !full && !replicated {
                        break;
                    }
                }
                Ok(out)
            }
        })
    }

    fn inbox_end(&self, inbox: &Name) -> Result<Position> {
        Ok(self
            .last_message(self.keys.inbox(inbox))?
            .map_or(Position::START, |m| Position::from_raw(m.sequence)))
    }

    /// The ack floor of the reader's consumer; without one, a cursor kept in KV (an older
    /// build's, or one being moved back), else `START`. The consumer is looked at again after
    /// the KV key is found missing: a cursor moved in between is then found where it went.
    fn cursor(&self, inbox: &Name, reader: &str) -> Result<Position> {
        let cur = self.cursor_handle(inbox, reader);
        let judge = self.judge(false);
        self.call("read a cursor", move || {
            let (cur, judge) = (cur.clone(), judge.clone());
            async move {
                for _ in 0..2 {
                    if let Some((_, floor)) = cur.consumer(&judge).await? {
                        return Ok(Position::from_raw(floor));
                    }
                    if let (_, Some(kept)) = cur.kept().await? {
                        return Ok(Position::from_raw(kept));
                    }
                }
                Ok(Position::START)
            }
        })
    }

    /// Forward: the consumer's messages up to `pos` are fetched and the last of them
    /// acknowledged (acknowledge-all, confirmed), those past it handed back; backward (or
    /// to a position no message of the inbox has): the consumer is made again after `pos`,
    /// `pos` kept in KV meanwhile so that readers never see the cursor missing.
    fn set_cursor(&self, inbox: &Name, reader: &str, pos: Position) -> Result<()> {
        let cur = self.cursor_handle(inbox, reader);
        let judge = self.judge(false);
        self.call("move a cursor", move || {
            let (cur, judge) = (cur.clone(), judge.clone());
            async move { cur.set(&judge, pos.raw()).await }
        })
    }

    /// Its consumer deleted, and the position an older build kept in KV.
    fn remove_cursor(&self, inbox: &Name, reader: &str) -> Result<()> {
        let cur = self.cursor_handle(inbox, reader);
        let judge = self.judge(false);
        self.call("remove a cursor", move || {
            let (cur, judge) = (cur.clone(), judge.clone());
            async move { cur.remove(&judge).await }
        })
    }

    /// Inboxes in the stream are never removed and made again while the team lives.
    fn inbox_generation(&self, _inbox: &Name) -> Option<u64> {
        Some(1)
    }

    /// A state that cannot be parsed reads as none (its worker rewrites it soon). Its lease is
    /// the later of its own and the heartbeat's of the same worker.
    fn live(&self, member: &Name) -> Result<Option<LiveState>> {
        let Some(mut live) = self
            .get_raw(keys::live(member))?
            .and_then(|(b, _)| serde_json::from_slice::<LiveState>(&b).ok())
        else {
            return Ok(None);
        };
        if let Some(lease) = self
            .get_raw(keys::lease(member))?
            .and_then(|(b, _)| serde_json::from_slice::<Lease>(&b).ok())
            .filter(|l| l.pid == live.pid)
        {
            live.lease_until = live.lease_until.max(Some(lease.until));
        }
        Ok(Some(live))
    }

    fn spans_hosts(&self) -> bool {
        true
    }

    /// Only on JetStream's own word that the bucket is not there ("stream not found", judged by
    /// `get_raw`), or that it holds no team file: a server that is away, or a stream without a
    /// leader for a moment ("no responders"), is an error, not a deletion.
    fn deleted(&self) -> Result<bool> {
        self.get_raw(keys::CONFIG.to_string()).map(|v| v.is_none())
    }

    fn renew_lease(&self, member: &Name, pid: u32, until: u64) -> Result<()> {
        let bytes = serde_json::to_vec(&Lease { pid, until })
            .map_err(|e| Error::failed(format!("cannot encode the lease: {e}")))?;
        self.put(keys::lease(member), bytes).map(drop)
    }

    fn set_live(&self, member: &Name, state: &LiveState) -> Result<()> {
        let bytes = serde_json::to_vec(state)
            .map_err(|e| Error::failed(format!("cannot encode state: {e}")))?;
        self.put(keys::live(member), bytes).map(drop)
    }

    fn set_shutdown_answer(&self, member: &Name, answer: &ShutdownAnswer) -> Result<()> {
        let bytes = serde_json::to_vec(answer)
            .map_err(|e| Error::failed(format!("cannot encode the answer: {e}")))?;
        self.put(keys::answer(member), bytes).map(drop)
    }

    fn take_shutdown_answer(&self, member: &Name, request_id: &str) -> Option<ShutdownAnswer> {
        let key = keys::answer(member);
        let (answer, rev) = self.get_json::<ShutdownAnswer>(&key).ok()??;
        // Only the taker whose delete of exactly that revision succeeds has it: two takers
        // racing for one answer never both get it. A take for another request clears it too.
        let (kv, judge) = (self.kv.clone(), self.judge(true));
        let taken = self
            .call("take the answer", move || {
                let (kv, key, judge) = (kv.clone(), key.clone(), judge.clone());
                async move {
                    match kv.delete_expect_revision(&key, Some(rev)).await {
                        Ok(()) => Ok(true),
                        Err(e) if e.to_string().contains("wrong last") => Ok(false),
                        Err(e) => Err(judge.fault(e).await),
                    }
                }
            })
            .unwrap_or(false);
        (taken && answer.request_id == request_id).then_some(answer)
    }

    /// A key per pair holding when the last notice was given: created when absent, replaced
    /// by compare-and-set when older than `LOOP_NOTICE_QUIET`, so exactly one caller wins.
    fn first_loop_notice(&self, a: &str, b: &str) -> bool {
        let (first, second) = if a <= b { (a, b) } else { (b, a) };
        let key = keys::loop_notice(first, second);
        let quiet = super::team::LOOP_NOTICE_QUIET.as_millis() as u64;
        let kv = self.kv.clone();
        client::run("loop notice", async move {
            let now = now_ms();
            let value: bytes::Bytes = now.to_string().into_bytes().into();
            let won = match kv.entry(&key).await.map_err(nats_err)? {
                Some(e) if e.operation == kv::Operation::Put => {
                    let then = std::str::from_utf8(&e.value)
                        .ok()
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or(0);
                    if now.saturating_sub(then) < quiet {
                        false
                    } else {
                        kv.update(&key, value, e.revision).await.is_ok()
                    }
                }
                _ => kv.create(&key, value).await.is_ok(),
            };
            Ok(won)
        })
        .unwrap_or(true)
    }

    fn load_tasks(&self) -> Result<TaskList> {
        Ok(self
            .get_json::<TaskList>(keys::TASKS)?
            .map(|(l, _)| l)
            .unwrap_or_default())
    }

    fn update_tasks(&self, f: &mut dyn FnMut(&mut TaskList) -> Result<()>) -> Result<TaskList> {
        self.update_json(keys::TASKS, Some(&TaskList::default()), f)
    }

    /// Watches (`watch`): one consumer of the inboxes' subjects, one of the KV keys, armed (the
    /// server has them) when this returns; hook events are host-local files, watched as the
    /// file store does.
    fn subscribe(&self, topics: &[Topic], bell: Bell) -> Result<Subscription> {
        let mut inboxes = Vec::new();
        let mut kv_keys = Vec::new();
        let mut local = Vec::new();
        for topic in topics {
            match topic {
                Topic::Inbox(m) => inboxes.push(self.keys.inbox(m)),
                Topic::Team => kv_keys.push(self.keys.kv_subject(keys::CONFIG)),
                Topic::Live => kv_keys.push(self.keys.kv_subject(keys::LIVE_ALL)),
                Topic::Tasks => kv_keys.push(self.keys.kv_subject(keys::TASKS)),
                Topic::Hooks(m) => {
                    let dir = super::hooks::dir(self as &dyn Store);
                    super::fsutil::ensure_dir(&dir)?;
                    local.push(Target::new(dir, &[&super::hooks::events_file(m)]));
                }
            }
        }
        // A consumer's filters may not overlap.
        for v in [&mut inboxes, &mut kv_keys] {
            v.sort();
            v.dedup();
        }
        let watches: Vec<(String, Vec<String>)> = [
            (self.keys.stream(), inboxes),
            (self.keys.kv_stream(), kv_keys),
        ]
        .into_iter()
        .filter(|(_, f)| !f.is_empty())
        .collect();
        let local = if local.is_empty() {
            None
        } else {
            Some(wake::subscribe(local, bell.clone())?)
        };
        let conn = self.conn.clone();
        let tasks = client::run("subscribe", async move {
            // The watches armed side by side (each a subscription and a consumer made).
            let arming = watches.into_iter().map(|(stream, filters)| {
                let conn = conn.clone();
                async move {
                    let sub = client::retry(&conn, "watch for changes", || {
                        let (conn, stream, filters) =
                            (conn.clone(), stream.clone(), filters.clone());
                        async move {
                            match watch::arm(&conn, &stream, &filters).await {
                                Ok(sub) => Ok(Some(sub)),
                                // The team is gone: nothing will change there.
                                Err(Fault::Again(e)) if client::not_found(&e) => Ok(None),
                                Err(e) => Err(e),
                            }
                        }
                    })
                    .await?;
                    Ok::<_, Error>(sub.map(|sub| (stream, filters, sub)))
                }
            });
            let armed: Vec<_> = futures_util::future::try_join_all(arming)
                .await?
                .into_iter()
                .flatten()
                .collect();
            let mut tasks = Vec::new();
            for (stream, filters, sub) in armed {
                tasks.push(watch::ring(
                    conn.clone(),
                    stream,
                    filters,
                    sub,
                    bell.clone(),
                ));
            }
            let mut again = conn.reconnected.subscribe();
            tasks.push(client::spawn(async move {
                loop {
                    match again.recv().await {
                        Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => bell(),
                        Err(_) => return,
                    }
                }
            }));
            Ok(tasks)
        })?;
        Ok(Subscription::holding(
            WakeMode::Push,
            PushGuard {
                tasks,
                _local: local,
            },
        ))
    }

    /// An ordered consumer of every inbox subject (`tc.TEAM.inbox.>`, so members who join
    /// later are followed), from just past the stream's last message when this is called.
    fn follow_inboxes<'a>(&'a self, bell: Bell) -> Result<Box<dyn InboxTail + 'a>> {
        let (stream, judge, filter) = (self.stream.clone(), self.judge(false), self.keys.inboxes());
        let messages = self.call("follow the inboxes", move || {
            let (stream, judge, filter) = (stream.clone(), judge.clone(), filter.clone());
            async move {
                let mut info = stream.clone();
                let last = match info.info().await {
                    Ok(i) => i.state.last_sequence,
                    Err(e) => return Err(judge.fault(e).await),
                };
                let consumer = stream
                    .create_consumer(pull::OrderedConfig {
                        description: Some("teamctl log -f".into()),
                        filter_subject: filter,
                        deliver_policy: DeliverPolicy::ByStartSequence {
                            start_sequence: last + 1,
                        },
                        ..Default::default()
                    })
                    .await
                    .map_err(Fault::of)?;
                consumer
                    .messages()
                    .await
                    .map_err(|e| Fault::Again(e.to_string()))
            }
        })?;
        let queue = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let (q, keys, sname) = (queue.clone(), self.keys.clone(), self.keys.stream());
        let task = client::spawn(async move {
            let mut messages = messages;
            while let Some(m) = messages.next().await {
                let Ok(m) = m else {
                    // The consumer is made again by the client; not in a busy loop.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let (Ok(info), Some(inbox)) = (m.info(), keys.member_of(&m.subject)) else {
                    continue;
                };
                let e = entry(info.stream_sequence, &m.payload, &sname);
                q.lock().expect("tail").push_back((inbox, e));
                bell();
            }
        });
        Ok(Box::new(NatsTail { queue, task }))
    }

    fn log_path(&self, member: &Name) -> PathBuf {
        self.local.join("logs").join(format!("{member}.log"))
    }

    fn local_dir(&self) -> PathBuf {
        self.local.clone()
    }

    fn location(&self) -> String {
        self.conn.url.shown().to_string()
    }

    /// The stream, the bucket, and this host's directory of the team.
    fn destroy(&self) -> Result<()> {
        let js = self.conn.js.clone();
        let (sname, bname) = (self.keys.stream(), self.keys.bucket());
        self.call("delete the team", move || {
            let (js, sname, bname) = (js.clone(), sname.clone(), bname.clone());
            async move {
                if let Err(e) = js.delete_stream(&sname).await
                    && !e.to_string().contains("not found")
                {
                    return Err(Fault::of(e));
                }
                if let Err(e) = js.delete_key_value(&bname).await
                    && !e.to_string().contains("not found")
                {
                    return Err(Fault::of(e));
                }
                Ok(())
            }
        })?;
        super::fsutil::remove_tree(&self.local).map(|_| ())
    }

    fn last_activity(&self) -> Option<std::time::SystemTime> {
        let (stream, kv) = (self.stream.clone(), self.kv.clone());
        client::run("look up", async move {
            let mut s = stream;
            let a = s
                .info()
                .await
                .ok()
                .map(|i| i.state.last_timestamp.unix_timestamp_nanos());
            let mut ks = kv.stream.clone();
            let b = ks
                .info()
                .await
                .ok()
                .map(|i| i.state.last_timestamp.unix_timestamp_nanos());
            Ok(a.into_iter().chain(b).max())
        })
        .ok()
        .flatten()
        .map(to_system_time)
    }

    fn last_mail(&self, inbox: &Name) -> Option<std::time::SystemTime> {
        self.last_on(self.keys.inbox(inbox))
    }

    fn inboxes(&self) -> Vec<Name> {
        let stream = self.stream.clone();
        let filter = self.keys.inboxes();
        let subjects = client::run("list inboxes", async move {
            let info = stream.info_with_subjects(filter).await.map_err(nats_err)?;
            let mut names = Vec::new();
            let mut info = info;
            while let Some(Ok((subject, _))) = info.next().await {
                names.push(subject);
            }
            Ok(names)
        })
        .unwrap_or_default();
        let mut out: Vec<Name> = subjects
            .iter()
            .filter_map(|s| self.keys.member_of(s))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// `log -f`'s tail on NATS: what an ordered consumer of every inbox delivered, queued for
/// `take`. Dropping it ends the consumer's task (and so the consumer).
struct NatsTail {
    queue: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<(Name, Entry)>>>,
    task: tokio::task::AbortHandle,
}

impl Drop for NatsTail {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl InboxTail for NatsTail {
    /// Everything delivered, whoever's inbox it is in, past the position `pos` has for it.
    fn take(
        &mut self,
        _members: &[Name],
        pos: &mut std::collections::HashMap<Name, Position>,
    ) -> Result<Vec<(Name, Entry)>> {
        let got: Vec<(Name, Entry)> = self.queue.lock().expect("tail").drain(..).collect();
        let mut out = Vec::new();
        for (inbox, e) in got {
            let at = pos.entry(inbox.clone()).or_insert(Position::START);
            if e.end > *at {
                *at = e.end;
                out.push((inbox, e));
            }
        }
        Ok(out)
    }
}

/// A worker's heartbeat (`Store::renew_lease`).
#[derive(serde::Serialize, serde::Deserialize)]
struct Lease {
    pid: u32,
    until: u64,
}
