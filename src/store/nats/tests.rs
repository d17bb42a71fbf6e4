//! NatsStore against a nats-server of the test's own (`testing::NatsServer`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::testing::NatsServer;
use super::{Created, NatsStore};
use crate::domain::live::ShutdownAnswer;
use crate::domain::task::NewTask;
use crate::domain::time::now_ms;
use crate::domain::{Body, Envelope, LEADER, Member, Name, TeamConfig};
use crate::error::Error;
use crate::store::{Item, LockKey, Position, Store, SyncBell, Topic};

fn config(team: &str) -> TeamConfig {
    let name = Name::parse(team).unwrap();
    TeamConfig {
        name: name.clone(),
        description: String::new(),
        created_at: now_ms(),
        lead_agent_id: format!("{LEADER}@{name}"),
        lead_session_id: crate::domain::message::new_id(),
        members: vec![Member::leader(&name, "/".into(), now_ms())],
        tmux_session: None,
        tmux_fill: None,
        deleting: None,
        max_hops: None,
        extra: serde_json::Map::default(),
    }
}

fn team(server: &NatsServer, dir: &tempfile::TempDir, name: &str) -> NatsStore {
    match NatsStore::create(&server.url(), &config(name), dir.path().join(name)).unwrap() {
        Created::Made(s) => *s,
        Created::Taken => panic!("team {name} taken"),
    }
}

fn msg(to: &str, text: &str) -> Envelope {
    Envelope::new(LEADER, to, Body::message(text, None))
}

fn texts(store: &NatsStore, inbox: &Name, from: Position) -> Vec<String> {
    store
        .read(inbox, from, 100)
        .unwrap()
        .into_iter()
        .map(|e| match e.item {
            Item::Message(env) => match env.body {
                Body::Message { text, .. } => text,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn append_and_read_from_a_position_with_cursors() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let (bob, amy) = (Name::parse("bob").unwrap(), Name::parse("amy").unwrap());
    assert_eq!(store.inbox_end(&bob).unwrap(), Position::START);
    assert!(store.read(&bob, Position::START, 10).unwrap().is_empty());
    for i in 0..3 {
        store.append(&bob, &msg("bob", &format!("b{i}"))).unwrap();
        store.append(&amy, &msg("amy", &format!("a{i}"))).unwrap();
    }
    assert_eq!(texts(&store, &bob, Position::START), ["b0", "b1", "b2"]);
    assert_eq!(texts(&store, &amy, Position::START), ["a0", "a1", "a2"]);
    let entries = store.read(&bob, Position::START, 2).unwrap();
    assert_eq!(entries.len(), 2, "max is kept");
    assert!(entries[0].end < entries[1].end);
    assert_eq!(texts(&store, &bob, entries[0].end), ["b1", "b2"]);
    assert_eq!(texts(&store, &bob, entries[1].start), ["b1", "b2"]);
    let all = store.read(&bob, Position::START, 10).unwrap();
    assert_eq!(store.inbox_end(&bob).unwrap(), all[2].end);
    assert!(texts(&store, &bob, all[2].end).is_empty());
    // Cursors: START until set, then what was set, per inbox and reader.
    assert_eq!(store.cursor(&bob, "worker").unwrap(), Position::START);
    store.set_cursor(&bob, "worker", all[1].end).unwrap();
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[1].end);
    assert_eq!(store.cursor(&bob, "protocol").unwrap(), Position::START);
    assert_eq!(store.cursor(&amy, "worker").unwrap(), Position::START);
    assert_eq!(
        texts(&store, &bob, store.cursor(&bob, "worker").unwrap()),
        ["b2"]
    );
    // The whole inbox in batches, past one batch.
    for i in 0..600 {
        store.append(&amy, &msg("amy", &format!("x{i}"))).unwrap();
    }
    let mut walk = crate::store::entries(&store, &amy, Position::START);
    assert_eq!(walk.by_ref().count(), 603);
    assert_eq!(walk.pos(), store.inbox_end(&amy).unwrap());
    let mut names = store.inboxes();
    names.sort();
    assert_eq!(names, [amy.clone(), bob.clone()]);
    assert!(store.last_mail(&bob).is_some());
    assert!(store.last_activity().is_some());
}

#[test]
fn a_retried_send_is_stored_once_but_a_broadcast_reaches_each_inbox() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let (bob, amy) = (Name::parse("bob").unwrap(), Name::parse("amy").unwrap());
    let env = msg("*", "hello");
    store.append(&bob, &env).unwrap();
    store.append(&bob, &env).unwrap();
    store.append(&amy, &env).unwrap();
    assert_eq!(texts(&store, &bob, Position::START), ["hello"]);
    assert_eq!(texts(&store, &amy, Position::START), ["hello"]);
}

#[test]
fn subscriptions_ring_on_new_mail_live_state_team_and_tasks() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let bob = Name::parse("bob").unwrap();
    let rang = |topic: Topic, act: &dyn Fn()| {
        let bell = SyncBell::default();
        let sub = store
            .subscribe(std::slice::from_ref(&topic), bell.bell())
            .unwrap();
        assert_eq!(sub.mode, crate::store::WakeMode::Push);
        act();
        assert!(
            bell.wait_until(Instant::now() + Duration::from_secs(10)),
            "no ring for {topic:?}"
        );
    };
    rang(Topic::Inbox(bob.clone()), &|| {
        store.append(&bob, &msg("bob", "hi")).unwrap();
    });
    // The woken reader finds the message (it was stored before the ring).
    for _ in 0..20 {
        let bell = SyncBell::default();
        let _sub = store
            .subscribe(&[Topic::Inbox(bob.clone())], bell.bell())
            .unwrap();
        let end = store.inbox_end(&bob).unwrap();
        store.append(&bob, &msg("bob", "again")).unwrap();
        assert!(bell.wait_until(Instant::now() + Duration::from_secs(10)));
        assert_eq!(texts(&store, &bob, end), ["again"]);
    }
    let live = crate::domain::LiveState::new(crate::domain::Status::Idle, 7, 0);
    rang(Topic::Live, &|| store.set_live(&bob, &live).unwrap());
    assert_eq!(store.live(&bob).unwrap().unwrap().pid, 7);
    // A heartbeat renews the lease that `live` reads back, for the worker that wrote the
    // state only, and wakes no subscriber of live states.
    assert!(store.spans_hosts());
    let bell = SyncBell::default();
    let _sub = store.subscribe(&[Topic::Live], bell.bell()).unwrap();
    store.renew_lease(&bob, 7, 5_000).unwrap();
    assert_eq!(store.live(&bob).unwrap().unwrap().lease_until, Some(5_000));
    store.renew_lease(&bob, 8, 9_000).unwrap();
    assert_eq!(store.live(&bob).unwrap().unwrap().lease_until, None);
    assert!(!bell.wait_until(Instant::now() + Duration::from_millis(300)));
    rang(Topic::Team, &|| {
        store
            .update(&mut |c| {
                c.description = "x".into();
                Ok(())
            })
            .map(drop)
            .unwrap();
    });
    rang(Topic::Tasks, &|| {
        store
            .update_tasks(&mut |l| {
                l.add(
                    NewTask {
                        subject: "s".into(),
                        ..Default::default()
                    },
                    0,
                )
                .map(drop)
                .map_err(|e| Error::bad(e.to_string()))
            })
            .map(drop)
            .unwrap();
    });
    // Mail to someone else does not ring bob's subscription.
    let bell = SyncBell::default();
    let _sub = store
        .subscribe(&[Topic::Inbox(bob.clone())], bell.bell())
        .unwrap();
    let amy = Name::parse("amy").unwrap();
    store.append(&amy, &msg("amy", "not for bob")).unwrap();
    // A ring for bob's own mail after it proves the first did not ring (one channel slot).
    store.append(&bob, &msg("bob", "for bob")).unwrap();
    assert!(bell.wait_until(Instant::now() + Duration::from_secs(10)));
    assert!(!bell.wait_until(Instant::now() + Duration::from_millis(300)));
}

#[test]
fn a_lock_is_held_by_one_at_a_time() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(team(&server, &dir, "alpha"));
    let key = LockKey::Start(Name::parse("bob").unwrap());
    let held = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (store, key, held) = (store.clone(), key.clone(), held.clone());
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let _g = store.lock(&key).unwrap();
                    assert!(!held.swap(true, Ordering::SeqCst), "two holders at once");
                    std::thread::yield_now();
                    held.store(false, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Another key is independent of a held one.
    let _bob = store.lock(&key).unwrap();
    let _p = store.lock(&LockKey::Protocol).unwrap();
}

#[test]
fn one_loop_notice_and_answers_are_taken_once() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(team(&server, &dir, "alpha"));
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store.first_loop_notice("#tasks", "bob")
            })
        })
        .collect();
    let won = threads
        .into_iter()
        .filter(|_| true)
        .map(|t| t.join().unwrap())
        .filter(|&w| w)
        .count();
    assert_eq!(won, 1);
    assert!(
        !store.first_loop_notice("bob", "#tasks"),
        "same pair either way"
    );
    assert!(store.first_loop_notice("bob", "amy"));
    let bob = Name::parse("bob").unwrap();
    let answer = ShutdownAnswer {
        request_id: "r1".into(),
        approve: true,
        reason: None,
    };
    store.set_shutdown_answer(&bob, &answer).unwrap();
    assert_eq!(store.take_shutdown_answer(&bob, "r1"), Some(answer));
    assert_eq!(store.take_shutdown_answer(&bob, "r1"), None);
}

#[test]
fn names_are_claimed_once_and_a_destroyed_team_is_gone() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    assert!(matches!(
        NatsStore::create(&server.url(), &config("alpha"), dir.path().join("x")).unwrap(),
        Created::Taken
    ));
    assert!(NatsStore::exists_at(&server.url(), store.team()).unwrap());
    assert!(store.exists());
    assert_eq!(store.location(), server.url().shown());
    let other = NatsStore::open(&server.url(), store.team(), dir.path().join("b")).unwrap();
    assert_eq!(other.load().unwrap().name.as_str(), "alpha");
    store.destroy().unwrap();
    assert!(!store.exists());
    assert!(!dir.path().join("alpha").exists());
    assert!(!NatsStore::exists_at(&server.url(), store.team()).unwrap());
    let err = NatsStore::open(&server.url(), store.team(), dir.path().join("c")).unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    let err = store.load().unwrap_err();
    assert!(err.to_string().contains("no longer exists"), "{err}");
}

fn make() -> crate::store::conformance::Made {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "conf");
    let (url, local) = (server.url(), dir.path().join("conf"));
    let store: crate::store::SharedStore = Arc::new(store);
    // A handle opened now stands for one held by another process when the team is gone (as
    // `Home::handle` gives one for the file store); opening a destroyed team fails.
    let spare = store.clone();
    crate::store::conformance::Made {
        store,
        reopen: Box::new(move || {
            match NatsStore::open(&url, &Name::parse("conf").unwrap(), local.clone()) {
                Ok(s) => Arc::new(s),
                Err(_) => spare.clone(),
            }
        }),
        keep: Box::new((dir, server)),
    }
}

mod conformance {
    crate::store::conformance::conformance_tests!(super::make);
}

/// A stream of a new team's name that someone else made (with a message planted in it) is not
/// taken over: `create` fails and nothing of the planted mail is read as the team's.
#[test]
fn a_planted_stream_is_not_taken_over() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let name = Name::parse("victim").unwrap();
    let keys = super::keys::Keys::new(&name);
    let (stream, subject) = (keys.stream(), keys.inbox(&Name::parse("bob").unwrap()));
    let (subjects, url) = (keys.inboxes(), server.url().full().to_string());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            let client = async_nats::connect(url).await.unwrap();
            let js = async_nats::jetstream::new(client);
            js.create_stream(async_nats::jetstream::stream::Config {
                name: stream,
                subjects: vec![subjects],
                allow_direct: true,
                ..Default::default()
            })
            .await
            .unwrap();
            let line = msg("bob", "planted").to_line().unwrap();
            js.publish(subject, line.into())
                .await
                .unwrap()
                .await
                .unwrap();
        });
    let err = match NatsStore::create(&server.url(), &config("victim"), dir.path().join("victim")) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a planted stream was taken over"),
    };
    assert!(err.contains("did not make"), "{err}");
}

/// The reader's consumer, as the server has it: (ack floor's stream sequence, ack policy,
/// filter subject); `None` when there is none.
fn consumer_of(store: &NatsStore, inbox: &Name, reader: &str) -> Option<(u64, String, String)> {
    let stream = store.stream.clone();
    let name = super::keys::consumer(inbox, reader);
    super::client::run("consumer info", async move {
        Ok(
            match stream
                .get_consumer::<async_nats::jetstream::consumer::pull::Config>(&name)
                .await
            {
                Ok(mut c) => {
                    let info = c.info().await.unwrap().clone();
                    Some((
                        info.ack_floor.stream_sequence,
                        format!("{:?}", info.config.ack_policy),
                        info.config.filter_subject.clone(),
                    ))
                }
                Err(_) => None,
            },
        )
    })
    .unwrap()
}

#[test]
fn a_cursor_is_a_durable_consumer_acknowledged_up_to_the_position() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let (bob, amy) = (Name::parse("bob").unwrap(), Name::parse("amy").unwrap());
    for i in 0..4 {
        store.append(&bob, &msg("bob", &format!("b{i}"))).unwrap();
        store.append(&amy, &msg("amy", &format!("a{i}"))).unwrap();
    }
    let all = store.read(&bob, Position::START, 10).unwrap();
    assert_eq!(
        consumer_of(&store, &bob, "worker"),
        None,
        "made on first use"
    );
    // A turn: the message read, handled, then acknowledged.
    store.set_cursor(&bob, "worker", all[1].end).unwrap();
    let (floor, policy, filter) = consumer_of(&store, &bob, "worker").expect("a consumer");
    assert_eq!(floor, all[1].end.raw());
    assert_eq!(policy, "All");
    assert_eq!(filter, "tc.alpha.inbox.bob");
    // Nothing in KV.
    assert!(
        store
            .get_raw(super::keys::cursor(&bob, "worker"))
            .unwrap()
            .is_none()
    );
    // Further, past messages fetched and handed back by an earlier move.
    store.set_cursor(&bob, "worker", all[2].end).unwrap();
    assert_eq!(
        consumer_of(&store, &bob, "worker").unwrap().0,
        all[2].end.raw()
    );
    store.set_cursor(&bob, "worker", all[3].end).unwrap();
    assert_eq!(
        consumer_of(&store, &bob, "worker").unwrap().0,
        all[3].end.raw()
    );
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[3].end);
    // Back: made again after the position.
    store.set_cursor(&bob, "worker", all[0].end).unwrap();
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[0].end);
    assert_eq!(
        texts(&store, &bob, store.cursor(&bob, "worker").unwrap()),
        ["b1", "b2", "b3"]
    );
    store.set_cursor(&bob, "worker", all[3].end).unwrap();
    assert_eq!(
        consumer_of(&store, &bob, "worker").unwrap().0,
        all[3].end.raw()
    );
    // Far ahead (more than one fetch; another inbox's messages in between), then on.
    for i in 0..600 {
        store.append(&bob, &msg("bob", &format!("m{i}"))).unwrap();
        if i % 3 == 0 {
            store.append(&amy, &msg("amy", &format!("m{i}"))).unwrap();
        }
    }
    let many = store.read(&bob, all[3].end, 1000).unwrap();
    assert_eq!(many.len(), 600);
    store.set_cursor(&bob, "worker", many[499].end).unwrap();
    assert_eq!(
        consumer_of(&store, &bob, "worker").unwrap().0,
        many[499].end.raw()
    );
    store.set_cursor(&bob, "worker", many[500].end).unwrap();
    store.set_cursor(&bob, "worker", many[599].end).unwrap();
    assert_eq!(store.cursor(&bob, "worker").unwrap(), many[599].end);
    // Another reader of the same inbox is another consumer.
    assert_eq!(consumer_of(&store, &bob, "protocol"), None);
    // The stream deleted with the team takes its consumers.
    store.destroy().unwrap();
    assert_eq!(consumer_of(&store, &bob, "worker"), None);
}

#[test]
fn a_cursor_an_older_build_kept_in_kv_moves_into_its_consumer() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let bob = Name::parse("bob").unwrap();
    for i in 0..4 {
        store.append(&bob, &msg("bob", &format!("b{i}"))).unwrap();
    }
    let all = store.read(&bob, Position::START, 10).unwrap();
    // What the build before consumers wrote: the stream sequence as text.
    let key = super::keys::cursor(&bob, "worker");
    store
        .put(key.clone(), all[1].end.raw().to_string().into_bytes())
        .unwrap();
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[1].end);
    assert_eq!(texts(&store, &bob, all[1].end), ["b2", "b3"]);
    // The next move makes the consumer from there, and the key goes.
    store.set_cursor(&bob, "worker", all[2].end).unwrap();
    assert_eq!(
        consumer_of(&store, &bob, "worker").unwrap().0,
        all[2].end.raw()
    );
    assert!(store.get_raw(key.clone()).unwrap().is_none());
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[2].end);
    // A kept cursor ahead of the first move: the consumer starts at the move.
    let other = super::keys::cursor(&bob, "inbox");
    store
        .put(other.clone(), all[3].end.raw().to_string().into_bytes())
        .unwrap();
    store.set_cursor(&bob, "inbox", all[0].end).unwrap();
    assert_eq!(store.cursor(&bob, "inbox").unwrap(), all[0].end);
    assert!(store.get_raw(other).unwrap().is_none());
}

/// A cursor kept in KV while its reader has no consumer is not believed past the inbox's
/// last message: one planted far ahead (anyone with the team's login may write the key)
/// would have a resumed member skip every message, silently. Read as none kept, the inbox is
/// read from its start (replayed, not lost), and the consumer made on the next move starts
/// there too.
#[test]
fn a_kept_cursor_past_the_inbox_end_is_not_believed() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let (bob, amy) = (Name::parse("bob").unwrap(), Name::parse("amy").unwrap());
    for i in 0..3 {
        store.append(&bob, &msg("bob", &format!("b{i}"))).unwrap();
    }
    // Another inbox's later messages: the stream goes on past bob's last.
    for i in 0..3 {
        store.append(&amy, &msg("amy", &format!("a{i}"))).unwrap();
    }
    let all = store.read(&bob, Position::START, 10).unwrap();
    let key = super::keys::cursor(&bob, "worker");
    for planted in [1_000_000, all[2].end.raw() + 1] {
        store
            .put(key.clone(), planted.to_string().into_bytes())
            .unwrap();
        assert_eq!(
            store.cursor(&bob, "worker").unwrap(),
            Position::START,
            "{planted}"
        );
        assert_eq!(
            texts(&store, &bob, store.cursor(&bob, "worker").unwrap()),
            ["b0", "b1", "b2"]
        );
    }
    // At the inbox's last message it is believed (nothing is skipped by it).
    store
        .put(key.clone(), all[2].end.raw().to_string().into_bytes())
        .unwrap();
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[2].end);
    // Planted far ahead again: the first move makes the consumer from the start, so mail
    // that comes later is read.
    store.put(key.clone(), b"1000000".to_vec()).unwrap();
    store.set_cursor(&bob, "worker", all[0].end).unwrap();
    assert_eq!(store.cursor(&bob, "worker").unwrap(), all[0].end);
    assert!(store.get_raw(key).unwrap().is_none());
    store.append(&bob, &msg("bob", "later")).unwrap();
    assert_eq!(
        texts(&store, &bob, store.cursor(&bob, "worker").unwrap()),
        ["b1", "b2", "later"]
    );
}

/// A message stored with a `Nats-Sequence` header of its own (anyone who may publish to the
/// inbox can add one; a message republished from another stream carries one) is read at its
/// real sequence: the reader took the forged one and asked for the same messages for ever
/// (`inbox` and `status` hung).
#[test]
fn a_forged_sequence_header_does_not_stall_a_reader() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    let bob = Name::parse("bob").unwrap();
    for i in 0..3 {
        store.append(&bob, &msg("bob", &format!("b{i}"))).unwrap();
    }
    let js = store.conn.js.clone();
    let (subject, body) = (
        store.keys.inbox(&bob),
        msg("bob", "forged").to_line().unwrap(),
    );
    super::client::run("publish", async move {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Sequence", "1");
        headers.insert("Nats-Num-Pending", "5");
        js.publish_with_headers(subject, headers, body.into())
            .await
            .unwrap()
            .await
            .unwrap();
        Ok(())
    })
    .unwrap();
    store.append(&bob, &msg("bob", "after")).unwrap();
    let all = store.read(&bob, Position::START, 100).unwrap();
    let seqs: Vec<u64> = all.iter().map(|e| e.end.raw()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(
        texts(&store, &bob, Position::START),
        ["b0", "b1", "b2", "forged", "after"]
    );
    assert_eq!(store.inbox_end(&bob).unwrap().raw(), 5);
}

#[test]
fn wake_ups_come_from_consumers_with_nothing_republished() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    assert!(store.stream.cached_info().config.republish.is_none());
    assert!(store.kv.stream.cached_info().config.republish.is_none());
    let bob = Name::parse("bob").unwrap();
    let bell = SyncBell::default();
    let _sub = store
        .subscribe(&[Topic::Inbox(bob.clone()), Topic::Team], bell.bell())
        .unwrap();
    // No other subscription on the server would hear a republish: listen for one anyway.
    let conn = store.conn.clone();
    let mut stray = super::client::run("listen", async move {
        let s = conn.client.subscribe("tcw.>").await.unwrap();
        conn.client.flush().await.unwrap();
        Ok(s)
    })
    .unwrap();
    store.append(&bob, &msg("bob", "hi")).unwrap();
    assert!(bell.wait_until(Instant::now() + Duration::from_secs(10)));
    assert_eq!(texts(&store, &bob, Position::START), ["hi"]);
    store
        .update(&mut |c| {
            c.description = "changed".into();
            Ok(())
        })
        .unwrap();
    assert!(bell.wait_until(Instant::now() + Duration::from_secs(10)));
    let heard = super::client::run("listen", async move {
        use futures_util::StreamExt;
        Ok(
            tokio::time::timeout(Duration::from_millis(200), stray.next())
                .await
                .is_ok(),
        )
    })
    .unwrap();
    assert!(!heard, "something was republished");
}

#[test]
fn the_log_tail_follows_members_who_join_later() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let store = team(&server, &dir, "alpha");
    // A name encoded in hex in its subject (more than 32 characters, an `_`): read back.
    const LONG: &str = "Long_name_with_underscore_abcdefghijklmn";
    let (bob, zed) = (Name::parse("bob").unwrap(), Name::parse(LONG).unwrap());
    store.append(&bob, &msg("bob", "before")).unwrap();
    let bell = SyncBell::default();
    let mut tail = store.follow_inboxes(bell.bell()).unwrap();
    let mut pos = std::collections::HashMap::new();
    pos.insert(bob.clone(), store.inbox_end(&bob).unwrap());
    // A member the tail was never told of (it joined later), and one it was.
    store.append(&zed, &msg(LONG, "newcomer")).unwrap();
    store.append(&bob, &msg("bob", "after")).unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < 2 && bell.wait_until(deadline) {
        got.extend(tail.take(std::slice::from_ref(&bob), &mut pos).unwrap());
    }
    let seen: Vec<(String, String)> = got
        .iter()
        .map(|(n, e)| match &e.item {
            Item::Message(env) => match &env.body {
                Body::Message { text, .. } => (n.to_string(), text.clone()),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        [
            (LONG.to_string(), "newcomer".to_string()),
            ("bob".to_string(), "after".to_string())
        ]
    );
    assert_eq!(pos[&zed], store.inbox_end(&zed).unwrap());
    assert!(tail.take(&[], &mut pos).unwrap().is_empty());
    // What `delete --force` reads when the team file is damaged.
    let mut names = store.inboxes();
    names.sort();
    assert_eq!(names, [zed, bob]);
}

#[test]
fn only_servers_from_2_11_answer_in_batches() {
    for (v, b) in [
        ("2.10.26", false),
        ("v2.10.0", false),
        ("2.11.0", true),
        ("2.15.1", true),
        ("3.0.0-beta", true),
        ("", false),
    ] {
        assert_eq!(super::server_batches(v), b, "{v}");
    }
}
