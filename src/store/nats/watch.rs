//! Wake-ups from JetStream consumers: a watch of some subjects of one stream (an inbox, KV
//! keys) is an ephemeral push consumer that delivers, headers only, what is stored on them
//! from its creation on, to a subscription of this connection made before it. A consumer
//! delivers what the stream has stored, so a woken reader always finds what woke it. The
//! server sends an idle heartbeat while nothing comes; when heartbeats stop (a server or
//! cluster node went, and the consumer with it) the watch is made again and rings once, since
//! changes in between were not heard. This is what a KV watch is (async-nats makes its own
//! after the consumer, so a change in between is lost; here the subscription comes first).

use std::time::Duration;

use async_nats::Subscriber;
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, push};
use futures_util::StreamExt;

use super::client::{self, Conn, Fault};
use crate::store::wake::Bell;

/// How often a quiet watch hears from its consumer.
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// How long a watch goes without a word before it takes its consumer for gone.
const SILENCE: Duration = Duration::from_secs(7);

/// How long the server keeps a consumer nobody listens to (a dropped watch, a process gone).
const INACTIVE: Duration = Duration::from_secs(30);

/// Arm a watch of `filters` (subjects of `stream`, wildcards allowed, not overlapping):
/// everything stored on them after this returns is delivered to the subscription returned.
pub async fn arm(conn: &Conn, stream: &str, filters: &[String]) -> Result<Subscriber, Fault> {
    let deliver = conn.client.new_inbox();
    // Subscribed first: the consumer is made after the server has our interest.
    let sub = conn
        .client
        .subscribe(deliver.clone())
        .await
        .map_err(Fault::of)?;
    conn.client.flush().await.map_err(Fault::of)?;
    let mut config = push::Config {
        deliver_subject: deliver,
        description: Some("teamctl wake-ups".into()),
        deliver_policy: DeliverPolicy::New,
        ack_policy: AckPolicy::None,
        headers_only: true,
        idle_heartbeat: HEARTBEAT,
        inactive_threshold: INACTIVE,
        memory_storage: true,
        num_replicas: 1,
        ..Default::default()
    };
    match filters {
        [one] => config.filter_subject = one.clone(),
        many => config.filter_subjects = many.to_vec(),
    }
    conn.js
        .create_consumer_on_stream(config, stream)
        .await
        .map_err(Fault::of)?;
    Ok(sub)
}

/// The next change a watch delivers (heartbeats skipped); `None` when the subscription ended
/// or nothing, not even a heartbeat, came for `SILENCE`.
pub async fn next(sub: &mut Subscriber) -> Option<()> {
    loop {
        let m = tokio::time::timeout(SILENCE, sub.next()).await.ok()??;
        if m.status.is_none() {
            return Some(());
        }
    }
}

/// Ring `bell` for each change `sub` (armed by `arm` with these arguments) delivers, for as
/// long as the returned task runs; when its consumer goes, make it again and ring.
pub fn ring(
    conn: Conn,
    stream: String,
    filters: Vec<String>,
    mut sub: Subscriber,
    bell: Bell,
) -> tokio::task::AbortHandle {
    client::spawn(async move {
        loop {
            while next(&mut sub).await.is_some() {
                bell();
            }
            // Silence: the consumer (or the server) went. Watch again, then ring for what
            // may have changed meanwhile.
            let mut pause = Duration::from_millis(100);
            sub = loop {
                match arm(&conn, &stream, &filters).await {
                    Ok(s) => break s,
                    // The stream is gone (the team deleted): nothing will change there.
                    // Rung once more, so that a view looks and finds its team gone.
                    Err(Fault::Again(e)) if client::not_found(&e) => {
                        bell();
                        return;
                    }
                    Err(_) => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                    }
                }
            };
            bell();
        }
    })
}
