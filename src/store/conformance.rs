//! The store conformance suite: one set of behaviours every `Store` must have, written against
//! `SharedStore` only, so the file store, the in-memory store and any other backend are held
//! to the same contract (issue 15, part 1).
//!
//! # Running it against a store
//!
//! Write a factory that makes a fresh, empty team (its team file made, as `Home::create`
//! makes it: the leader is its only member) and returns it as a [`Made`]:
//!
//! ```ignore
//! fn make() -> crate::store::conformance::Made {
//!     let dir = tempfile::tempdir().unwrap();
//!     let store: SharedStore = /* a new team in a fresh place */;
//!     Made {
//!         store,
//!         // Another handle on the same team, as a second process would open it.
//!         reopen: Box::new(move || /* open the same team again */),
//!         // Whatever must outlive the store: temp dirs, servers, runtimes.
//!         keep: Box::new(dir),
//!     }
//! }
//! ```
//!
//! Then, in that store's `#[cfg(test)]` module, one `#[test]` per case (failures name the case):
//!
//! ```ignore
//! mod conformance {
//!     crate::store::conformance::conformance_tests!(super::make);
//! }
//! ```
//!
//! or all cases in one test with [`run_all`]. Every case is also a `pub(crate) fn(&Make)` of
//! its own, so a factory that is a closure (a server started once, a test that returns early
//! when a server binary is missing) can call `run_all(&|| ...)` or single cases. A chosen
//! subset, one `#[test]` each: `conformance_tests!(@cases super::make; cursors_per_reader,
//! ...)`. Waits have deadlines ([`WAIT`]); nothing sleeps to synchronise. Cases that race
//! threads use `std::thread`; a store with an async client must be callable from plain threads
//! (a runtime of its own, not the caller's).
//!
//! What the cases pin down beyond the `Store` docs: `inbox_end` of an inbox without mail is
//! `START`; an entry's `start` read from gives that entry first; `inbox_generation` is `Some`
//! and unchanged while an inbox only gets mail; `inboxes` is sorted; after `destroy` every
//! write through any handle fails and `stamp` is `None`; an update whose `f` fails leaves the
//! team file and its stamp as they were; a dropped subscription rings no more;
//! `take_shutdown_answer` with another request id returns `None` and clears the answer (the
//! worker clears stale answers so); of concurrent takers of one answer exactly one gets it.

use std::collections::HashMap;
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use super::{Entry, Item, LockKey, Position, SharedStore, SyncBell, Topic};
use crate::domain::live::ShutdownAnswer;
use crate::domain::task::NewTask;
use crate::domain::{Body, Envelope, LiveState, Member, Name, Status};
use crate::error::Error;

/// A fresh team made by a store's factory.
pub(crate) struct Made {
    pub store: SharedStore,
    /// Another handle on the same team, opened as a second process would open it.
    pub reopen: Box<dyn Fn() -> SharedStore>,
    /// Kept alive as long as the store is used (temp dirs, servers); dropped last (fields drop
    /// in order). Never read: held for its drop.
    #[allow(dead_code)]
    pub keep: Box<dyn std::any::Any>,
}

/// A store factory.
pub(crate) type Make = dyn Fn() -> Made;

/// One conformance case.
pub(crate) type Case = fn(&Make);

/// How long any wait for a wake-up, a lock or a thread may take before the case fails.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// How long a case watches for something that must *not* happen (a second lock taker).
const QUIET: Duration = Duration::from_millis(300);

/// Expands to one `#[test]` per conformance case, each calling the case with `$make`
/// (a path to a `fn() -> Made`). `@cases MAKE; CASE, ...` for a chosen subset. The one list of
/// cases is in the `@with` arm (`run_all` uses it too).
macro_rules! conformance_tests {
    ($make:path) => {
        $crate::store::conformance::conformance_tests!(@with [@cases $make;]);
    };
    (@table) => {
        $crate::store::conformance::conformance_tests!(@with [@list])
    };
    (@with [$($pre:tt)*]) => {
        $crate::store::conformance::conformance_tests! {$($pre)*
            append_and_read_from_a_position,
            entries_walk_past_one_batch,
            cursors_per_reader,
            at_least_once_after_a_crash,
            concurrent_senders_lose_and_repeat_nothing,
            concurrent_updates_compare_and_set,
            a_failed_update_leaves_the_team_file_untouched,
            stamps_and_the_cached_team_file,
            cached_updates_and_rosters_miss_no_change,
            update_member_changes_one_entry_and_keeps_the_rest,
            a_revertible_member_update_is_seen_as_any_other,
            one_claimer_wins_a_task,
            a_failed_task_update_leaves_the_list_untouched,
            new_mail_wakes_a_subscriber,
            new_mail_wakes_a_brief_subscriber,
            live_team_and_task_changes_wake_subscribers,
            a_dropped_subscription_stops_ringing,
            live_state_round_trips,
            locks_exclude_until_dropped,
            shutdown_answers_are_taken_once,
            one_loop_notice_among_concurrent_callers,
            exists_until_destroyed,
            inboxes_list_members_that_got_mail,
            a_shutdown_answer_is_taken_once_among_concurrent_takers,
            a_destroyed_team_takes_no_writes,
            readers_never_see_a_torn_live_state_or_cursor,
            one_subscription_to_several_topics,
            readers_never_see_a_half_written_team_file_or_task_list,
            a_change_may_read_the_store,
        }
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::store::conformance::$case(&$make)
            }
        )*
    };
    (@list $($case:ident),* $(,)?) => {
        &[$((stringify!($case), $crate::store::conformance::$case as $crate::store::conformance::Case)),*]
    };
}
pub(crate) use conformance_tests;

/// Every case in turn, against stores from `make`.
pub(crate) fn run_all(make: &Make) {
    let cases: &[(&str, Case)] = conformance_tests!(@table);
    for (name, case) in cases {
        eprintln!("conformance: {name}");
        case(make);
    }
}

// ---- helpers -------------------------------------------------------------------------------

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

fn msg(from: &str, to: &str, text: &str) -> Envelope {
    Envelope::new(from, to, Body::message(text, None))
}

fn text(e: &Entry) -> String {
    match &e.item {
        Item::Message(env) => match &env.body {
            Body::Message { text, .. } => text.clone(),
            other => panic!("not a plain message: {other:?}"),
        },
        other => panic!("not a message: {other:?}"),
    }
}

fn texts(entries: &[Entry]) -> Vec<String> {
    entries.iter().map(text).collect()
}

fn send(store: &SharedStore, to: &Name, t: &str) {
    store.append(to, &msg("team-lead", to.as_str(), t)).unwrap();
}

fn live(status: Status, pid: u32) -> LiveState {
    LiveState {
        since: 1,
        last_seen: 2,
        turns: 3,
        pane_id: Some("%7".into()),
        handled_control: vec!["r1".into()],
        ..LiveState::new(status, pid, 0)
    }
}

fn member(store: &SharedStore, n: &str) -> Member {
    let mut m = store.load().unwrap().members[0].clone();
    m.name = name(n);
    m.agent_id = m.name.agent_id(store.team());
    m
}

/// Drop any ring already pending (no waiting).
fn drain(bell: &SyncBell) {
    while bell.wait_until(Instant::now()) {}
}

/// Wait for rings until `done` holds after one; fail at the deadline.
fn rings_until(bell: &SyncBell, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            bell.wait_until(deadline),
            "no wake-up for {what} within {WAIT:?}"
        );
        if done() {
            return;
        }
    }
}

/// Run `f` on a thread and get its result within the deadline.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(WAIT)
        .unwrap_or_else(|_| panic!("{what} did not finish within {WAIT:?}"))
}

// ---- cases ---------------------------------------------------------------------------------

/// Appended messages read back in order from `START`, in batches of at most `max`, from any
/// entry's end, and from the end nothing; positions are ordered.
pub(crate) fn append_and_read_from_a_position(make: &Make) {
    let made = make();
    let s = &made.store;
    let bob = name("bob");
    assert!(s.read(&bob, Position::START, 10).unwrap().is_empty());
    assert_eq!(s.inbox_end(&bob).unwrap(), Position::START);
    let sent: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    for t in &sent {
        send(s, &bob, t);
    }
    let all = s.read(&bob, Position::START, 100).unwrap();
    assert_eq!(texts(&all), sent);
    for e in &all {
        assert!(e.start < e.end, "an entry starts before it ends");
        assert!(e.start >= Position::START);
    }
    for w in all.windows(2) {
        assert!(w[0].end <= w[1].start, "entries are in position order");
    }
    assert_eq!(s.inbox_end(&bob).unwrap(), all.last().unwrap().end);
    // Batches.
    assert_eq!(texts(&s.read(&bob, Position::START, 3).unwrap()), sent[..3]);
    for (i, e) in all.iter().enumerate() {
        let rest = s.read(&bob, e.end, 4).unwrap();
        let want: Vec<String> = sent[i + 1..].iter().take(4).cloned().collect();
        assert_eq!(texts(&rest), want, "after entry {i}");
        let from_start = s.read(&bob, e.start, 1).unwrap();
        assert_eq!(
            texts(&from_start),
            [sent[i].clone()],
            "from entry {i}'s start"
        );
    }
    let end = s.inbox_end(&bob).unwrap();
    assert!(s.read(&bob, end, 100).unwrap().is_empty());
    // The envelope comes back whole.
    let env = msg("alice", "bob", "whole");
    s.append(&bob, &env).unwrap();
    let got = s.read(&bob, end, 100).unwrap();
    match &got[0].item {
        Item::Message(back) => assert_eq!(**back, env),
        other => panic!("{other:?}"),
    }
    assert!(s.inbox_end(&bob).unwrap() > end);
    // Inboxes are separate.
    assert!(
        s.read(&name("carol"), Position::START, 10)
            .unwrap()
            .is_empty()
    );
}

/// `entries` walks an inbox longer than its batch (512) to the end, in order.
pub(crate) fn entries_walk_past_one_batch(make: &Make) {
    let made = make();
    let s = &made.store;
    let bob = name("bob");
    for i in 0..1100 {
        send(s, &bob, &format!("m{i}"));
    }
    let mut it = super::entries(&**s, &bob, Position::START);
    let got: Vec<String> = it.by_ref().map(|e| text(&e.unwrap())).collect();
    assert_eq!(got, (0..1100).map(|i| format!("m{i}")).collect::<Vec<_>>());
    assert_eq!(it.pos(), s.inbox_end(&bob).unwrap());
    let all = s.read(&bob, Position::START, 1000).unwrap();
    assert_eq!(all.len(), 1000, "max is honoured past one batch");
    let rest: Vec<String> = super::entries(&**s, &bob, all[999].end)
        .map(|e| text(&e.unwrap()))
        .collect();
    assert_eq!(rest.len(), 100);
    assert_eq!(rest[0], "m1000");
}

/// Each reader has its own cursor, `START` until set.
pub(crate) fn cursors_per_reader(make: &Make) {
    let made = make();
    let s = &made.store;
    let bob = name("bob");
    assert_eq!(s.cursor(&bob, "worker").unwrap(), Position::START);
    for t in ["a", "b", "c"] {
        send(s, &bob, t);
    }
    assert_eq!(s.cursor(&bob, "worker").unwrap(), Position::START);
    let all = s.read(&bob, Position::START, 10).unwrap();
    s.set_cursor(&bob, "worker", all[0].end).unwrap();
    assert_eq!(s.cursor(&bob, "worker").unwrap(), all[0].end);
    assert_eq!(s.cursor(&bob, "log").unwrap(), Position::START);
    s.set_cursor(&bob, "log", all[2].end).unwrap();
    assert_eq!(s.cursor(&bob, "worker").unwrap(), all[0].end);
    assert_eq!(s.cursor(&bob, "log").unwrap(), all[2].end);
    let from = s.cursor(&bob, "worker").unwrap();
    assert_eq!(texts(&s.read(&bob, from, 10).unwrap()), ["b", "c"]);
    // Another inbox's reader of the same name is another cursor.
    assert_eq!(s.cursor(&name("carol"), "worker").unwrap(), Position::START);
    // A cursor moves back as well as forward.
    s.set_cursor(&bob, "worker", Position::START).unwrap();
    assert_eq!(s.cursor(&bob, "worker").unwrap(), Position::START);
    // A removed cursor reads as `START`, the others as they were; removing one that is not
    // there is no error; and one set again after its removal works as a new one.
    s.remove_cursor(&bob, "log").unwrap();
    assert_eq!(s.cursor(&bob, "log").unwrap(), Position::START);
    assert_eq!(
        (made.reopen)().cursor(&bob, "log").unwrap(),
        Position::START
    );
    s.set_cursor(&bob, "worker", all[1].end).unwrap();
    s.remove_cursor(&bob, "log").unwrap();
    s.remove_cursor(&name("carol"), "log").unwrap();
    assert_eq!(s.cursor(&bob, "worker").unwrap(), all[1].end);
    s.set_cursor(&bob, "log", all[1].end).unwrap();
    assert_eq!(s.cursor(&bob, "log").unwrap(), all[1].end);
}

/// A reader that read but did not record its cursor (it crashed) gets the same messages again;
/// a recorded cursor is seen by a new handle on the team.
pub(crate) fn at_least_once_after_a_crash(make: &Make) {
    let made = make();
    let bob = name("bob");
    {
        let s = &made.store;
        for t in ["a", "b", "c"] {
            send(s, &bob, t);
        }
        let from = s.cursor(&bob, "worker").unwrap();
        let got = s.read(&bob, from, 2).unwrap();
        assert_eq!(texts(&got), ["a", "b"]);
        // Crash: the cursor is never set.
    }
    let again = (made.reopen)();
    let from = again.cursor(&bob, "worker").unwrap();
    let got = again.read(&bob, from, 2).unwrap();
    assert_eq!(texts(&got), ["a", "b"], "read again after the crash");
    again.set_cursor(&bob, "worker", got[1].end).unwrap();
    let third = (made.reopen)();
    let from = third.cursor(&bob, "worker").unwrap();
    assert_eq!(from, got[1].end);
    assert_eq!(texts(&third.read(&bob, from, 10).unwrap()), ["c"]);
    assert_eq!(made.store.cursor(&bob, "worker").unwrap(), got[1].end);
}

/// 16 threads each send 200 messages to one inbox: none lost, none twice, each sender's in
/// its order.
pub(crate) fn concurrent_senders_lose_and_repeat_nothing(make: &Make) {
    const SENDERS: usize = 16;
    const EACH: usize = 200;
    let made = make();
    let bob = name("bob");
    let barrier = Arc::new(Barrier::new(SENDERS));
    let threads: Vec<_> = (0..SENDERS)
        .map(|i| {
            let (s, bob, barrier) = (made.store.clone(), bob.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for n in 0..EACH {
                    s.append(&bob, &msg(&format!("s{i}"), "bob", &format!("{i}:{n}")))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let got: Vec<String> = super::entries(&*made.store, &bob, Position::START)
        .map(|e| text(&e.unwrap()))
        .collect();
    assert_eq!(got.len(), SENDERS * EACH, "none lost, none twice");
    let mut next: HashMap<usize, usize> = HashMap::new();
    for t in &got {
        let (i, n) = t.split_once(':').unwrap();
        let (i, n): (usize, usize) = (i.parse().unwrap(), n.parse().unwrap());
        let want = next.entry(i).or_default();
        assert_eq!(n, *want, "sender {i}'s messages in order");
        *want += 1;
    }
    assert!(next.values().all(|&n| n == EACH));
}

/// 8 threads each add a member through `update`: every one is there.
pub(crate) fn concurrent_updates_compare_and_set(make: &Make) {
    let made = make();
    let before = made.store.load().unwrap().members.len();
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (s, barrier) = (made.store.clone(), barrier.clone());
            let m = member(&s, &format!("m{i}"));
            std::thread::spawn(move || {
                barrier.wait();
                let written = s
                    .update(&mut |cfg| {
                        cfg.members.push(m.clone());
                        Ok(())
                    })
                    .unwrap();
                assert!(written.members.iter().any(|x| x.name == m.name));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let after = (made.reopen)().load().unwrap();
    assert_eq!(after.members.len(), before + 8);
    for i in 0..8 {
        assert!(
            after
                .members
                .iter()
                .any(|m| m.name.as_str() == format!("m{i}"))
        );
    }
}

/// `update` whose change fails writes nothing.
pub(crate) fn a_failed_update_leaves_the_team_file_untouched(make: &Make) {
    let made = make();
    let s = &made.store;
    let before = s.load().unwrap();
    let stamp = s.stamp();
    assert!(stamp.is_some());
    let err = s
        .update(&mut |cfg| {
            cfg.description = "changed".into();
            cfg.members.clear();
            Err(Error::bad("refused"))
        })
        .unwrap_err();
    assert_eq!(err.exit_code(), 2, "the change's own error comes back");
    assert_eq!(s.load().unwrap(), before);
    assert_eq!(s.stamp(), stamp);
    let written = s
        .update(&mut |cfg| {
            cfg.description = "changed".into();
            Ok(())
        })
        .unwrap();
    assert_eq!(written.description, "changed");
    assert_eq!(s.load().unwrap(), written);
}

/// The stamp changes with every update and stays while nothing changes; `load_cached` reads
/// every change, also one made through another handle.
pub(crate) fn stamps_and_the_cached_team_file(make: &Make) {
    let made = make();
    let s = &made.store;
    let other = (made.reopen)();
    let first = s.stamp().unwrap();
    assert_eq!(s.stamp(), Some(first), "no change, same stamp");
    assert_eq!(
        other.stamp(),
        Some(first),
        "the same stamp through another handle"
    );
    let mut cache = None;
    assert_eq!(s.load_cached(&mut cache).unwrap().description, "");
    let mut seen = vec![first];
    for i in 0..100 {
        // Same length every time: the stamp must not depend on the size alone.
        let text = format!("change {:03}", i % 1000);
        let writer = if i % 2 == 0 { s } else { &other };
        writer
            .update(&mut |cfg| {
                cfg.description = text.clone();
                Ok(())
            })
            .unwrap();
        let now = s.stamp().unwrap();
        assert_ne!(now, *seen.last().unwrap(), "update {i} changed the stamp");
        assert_eq!(s.stamp(), Some(now));
        assert_eq!(s.load_cached(&mut cache).unwrap().description, text);
        seen.push(now);
    }
}

/// `update_cached` starts from its cache only while nothing else changed the team file: a
/// change made through another handle in between is kept, never written over with the
/// cached copy; a failed change leaves the file as it was. `roster_cached` sees every change.
pub(crate) fn cached_updates_and_rosters_miss_no_change(make: &Make) {
    let made = make();
    let s = &made.store;
    let other = (made.reopen)();
    let member = |name: &str| {
        let mut m = Member::leader(s.team(), "/tmp".into(), 1);
        m.name = Name::parse(name).unwrap();
        m.agent_id = format!("{name}@{}", s.team());
        m.status = Status::Starting;
        m
    };
    let mut cache = None;
    let mut roster = None;
    let written = s
        .update_cached(&mut cache, &mut |cfg| {
            cfg.members.push(member("bob"));
            Ok(())
        })
        .unwrap();
    assert!(written.member("bob").is_some());
    assert!(s.roster_cached(&mut roster).unwrap().has("bob"));
    for i in 0..20 {
        // Another writer between two cached changes of this one.
        let text = format!("other {i}");
        other
            .update(&mut |cfg| {
                cfg.description = text.clone();
                cfg.members.push(member(&format!("o{i}")));
                Ok(())
            })
            .unwrap();
        let r = s.roster_cached(&mut roster).unwrap();
        assert!(r.has(&format!("o{i}")), "the roster read the change {i}");
        let written = s
            .update_cached(&mut cache, &mut |cfg| {
                cfg.member_mut("bob").unwrap().pid = Some(i);
                Ok(())
            })
            .unwrap();
        assert_eq!(written.description, text, "change {i} kept");
        assert!(written.member(&format!("o{i}")).is_some());
        assert_eq!(written.member("bob").unwrap().pid, Some(i));
        assert_eq!(s.load().unwrap(), *written, "the file is what was written");
        assert_eq!(
            s.roster_cached(&mut roster)
                .unwrap()
                .member("bob")
                .unwrap()
                .unwrap()
                .pid,
            Some(i)
        );
    }
    // A failed change writes nothing, and what it half did is not kept for the next one.
    let before = s.load().unwrap();
    let failed = s.update_cached(&mut cache, &mut |cfg| {
        cfg.description = "half done".into();
        Err(Error::bad("no"))
    });
    assert!(failed.is_err());
    assert_eq!(s.load().unwrap(), before);
    let written = s.update_cached(&mut cache, &mut |_| Ok(())).unwrap();
    assert_eq!(*written, before);
    // What was written serves the next look; another writer's change after it is read by
    // the look after that (a store that cannot tell its own stamp keeps the copy once).
    s.update_cached(&mut cache, &mut |cfg| {
        cfg.description = "mine".into();
        Ok(())
    })
    .unwrap();
    assert_eq!(s.load_cached(&mut cache).unwrap().description, "mine");
    other
        .update(&mut |cfg| {
            cfg.description = "theirs".into();
            Ok(())
        })
        .unwrap();
    assert_eq!(s.load_cached(&mut cache).unwrap().description, "theirs");
    assert_eq!(s.load_cached(&mut cache).unwrap().description, "theirs");
}

/// `update_member_revertible` (a worker's placement) changes the team file as
/// `update_member` does: every reader, in this process or another, sees its change at once,
/// with the changes of other writers before and after it kept; only its durability against a
/// crash of the machine is less (not testable here).
pub(crate) fn a_revertible_member_update_is_seen_as_any_other(make: &Make) {
    let made = make();
    let s = &made.store;
    let other = (made.reopen)();
    let bob = Name::parse("bob").unwrap();
    let mut cache = None;
    s.update_member(&mut cache, &bob, &mut |roster, _, m| {
        let mut new = Member::leader(s.team(), "/tmp".into(), 1);
        new.name = bob.clone();
        new.agent_id = format!("bob@{}", s.team());
        new.status = Status::Starting;
        new.color = roster.next_color().into();
        *m = Some(new);
        Ok(())
    })
    .unwrap();
    for i in 0..4u32 {
        let written = s
            .update_member_revertible(&mut cache, &bob, &mut |roster, head, m| {
                assert!(i == 0 || roster.head().description == format!("other {}", i - 1));
                head.tmux_session = Some(format!("session {i}"));
                let m = m.as_mut().unwrap();
                m.pane_id = Some(format!("%{i}"));
                m.pid = Some(100 + i);
                Ok(())
            })
            .unwrap();
        assert_eq!(written.member("bob").unwrap().unwrap().pid, Some(100 + i));
        for reader in [s, &other] {
            let cfg = reader.load().unwrap();
            assert_eq!(cfg.tmux_session, Some(format!("session {i}")));
            let m = cfg.member("bob").unwrap();
            assert_eq!(
                (m.pane_id.as_deref(), m.pid),
                (Some(&*format!("%{i}")), Some(100 + i))
            );
            assert_eq!(reader.roster().unwrap().names(), written.names());
        }
        // Another writer after it keeps it.
        other
            .update(&mut |cfg| {
                cfg.description = format!("other {i}");
                Ok(())
            })
            .unwrap();
        assert_eq!(s.load().unwrap().member("bob").unwrap().pid, Some(100 + i));
    }
}

/// `update_member` gives its change the team as it is now (another writer's change
/// included), writes the one entry where it was (or at the end, or removes it) and the team's
/// own fields, and keeps everything else as it was; a failed change writes nothing. Its
/// roster is the file as written.
pub(crate) fn update_member_changes_one_entry_and_keeps_the_rest(make: &Make) {
    let made = make();
    let s = &made.store;
    let other = (made.reopen)();
    let member = |name: &str| {
        let mut m = Member::leader(s.team(), "/tmp".into(), 1);
        m.name = Name::parse(name).unwrap();
        m.agent_id = format!("{name}@{}", s.team());
        m.status = Status::Starting;
        m
    };
    let bob = Name::parse("bob").unwrap();
    let mut cache = None;
    // Added at the end, with the colour the team file would give it.
    let want_color = s.load().unwrap().next_color();
    let written = s
        .update_member(&mut cache, &bob, &mut |roster, head, m| {
            assert!(head.members.is_empty());
            assert_eq!(roster.names().len(), 1);
            assert!(m.is_none());
            let mut new = member("bob");
            new.color = roster.next_color().into();
            *m = Some(new);
            Ok(())
        })
        .unwrap();
    assert_eq!(written.names().last().unwrap(), &bob);
    let config = s.load().unwrap();
    assert_eq!(config.members.last().unwrap().name, bob);
    assert_eq!(config.members.last().unwrap().color, want_color);
    assert_eq!(
        written.member("bob").unwrap().as_ref(),
        config.member("bob")
    );
    for i in 0..5u32 {
        // Another writer in between: its change is seen and kept.
        other
            .update(&mut |cfg| {
                cfg.description = format!("other {i}");
                cfg.members.push(member(&format!("o{i}")));
                Ok(())
            })
            .unwrap();
        let mut want = s.load().unwrap();
        let fill = crate::domain::TmuxFill {
            server: None,
            window: format!("@{i}"),
            panes: i as usize,
        };
        let written = s
            .update_member(&mut cache, &bob, &mut |roster, head, m| {
                assert!(roster.has(&format!("o{i}")), "change {i} seen");
                assert_eq!(head.description, format!("other {i}"));
                head.tmux_fill = Some(fill.clone());
                m.as_mut().unwrap().pid = Some(100 + i);
                Ok(())
            })
            .unwrap();
        want.tmux_fill = Some(fill.clone());
        want.member_mut("bob").unwrap().pid = Some(100 + i);
        assert_eq!(written.member("bob").unwrap().unwrap().pid, Some(100 + i));
        assert_eq!(written.head().tmux_fill, Some(fill));
        assert_eq!(s.load().unwrap(), want, "change {i}: only bob and the head");
        // The roster a reader reads is the one written.
        assert_eq!(s.roster().unwrap().names(), written.names());
    }
    // A failed change writes nothing.
    let before = s.load().unwrap();
    let stamp = s.stamp();
    let failed = s.update_member(&mut cache, &bob, &mut |_, head, m| {
        head.description = "half done".into();
        *m = None;
        Err(Error::bad("no"))
    });
    assert!(failed.is_err());
    assert_eq!(s.load().unwrap(), before);
    assert_eq!(s.stamp(), stamp);
    // `None` removes the entry; the others stay in their order.
    s.update_member(&mut cache, &bob, &mut |_, _, m| {
        *m = None;
        Ok(())
    })
    .unwrap();
    let mut want = before;
    want.members.retain(|m| m.name != bob);
    assert_eq!(s.load().unwrap(), want);
}

/// 8 threads race to claim one pending task: exactly one wins, the others are refused and
/// the task is the winner's.
pub(crate) fn one_claimer_wins_a_task(make: &Make) {
    let made = make();
    let list = made
        .store
        .update_tasks(&mut |l| {
            l.add(
                NewTask {
                    subject: "the one".into(),
                    ..Default::default()
                },
                0,
            )?;
            Ok(())
        })
        .unwrap();
    let id = list.tasks[0].id;
    for round in 0..5 {
        if round > 0 {
            made.store
                .update_tasks(&mut |l| {
                    let owner = l.get(id).unwrap().owner.clone().unwrap();
                    l.release_owner(&owner, 0);
                    Ok(())
                })
                .unwrap();
        }
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (s, barrier) = (made.store.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let me = name(&format!("w{i}"));
                    barrier.wait();
                    let mut won = false;
                    let res = s.update_tasks(&mut |l| {
                        won = l.claim(&me, Some(id), 0)?.is_some();
                        Ok(())
                    });
                    match res {
                        Ok(_) => {
                            assert!(won);
                            Some(me)
                        }
                        Err(e) => {
                            assert!(
                                e.to_string().contains("belongs to"),
                                "a loser is told who has it: {e}"
                            );
                            None
                        }
                    }
                })
            })
            .collect();
        let winners: Vec<Name> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one claimer wins");
        let task = made.store.load_tasks().unwrap().get(id).unwrap().clone();
        assert_eq!(task.owner.as_ref(), Some(&winners[0]));
    }
}

/// `update_tasks` whose change fails writes nothing; the list persists across handles.
pub(crate) fn a_failed_task_update_leaves_the_list_untouched(make: &Make) {
    let made = make();
    let s = &made.store;
    assert_eq!(
        s.load_tasks().unwrap(),
        crate::domain::task::TaskList::default()
    );
    s.update_tasks(&mut |l| {
        l.add(
            NewTask {
                subject: "a".into(),
                ..Default::default()
            },
            0,
        )?;
        Ok(())
    })
    .unwrap();
    let before = s.load_tasks().unwrap();
    let err = s
        .update_tasks(&mut |l| {
            l.tasks.clear();
            Err(Error::bad("no"))
        })
        .unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert_eq!(s.load_tasks().unwrap(), before);
    assert_eq!((made.reopen)().load_tasks().unwrap(), before);
}

fn wakes_on_mail(make: &Make, brief: bool) {
    let made = make();
    let bob = name("bob");
    let bell = SyncBell::default();
    let topics = [Topic::Inbox(bob.clone())];
    let _sub = if brief {
        made.store.subscribe_brief(&topics, bell.bell()).unwrap()
    } else {
        made.store.subscribe(&topics, bell.bell()).unwrap()
    };
    let writer = (made.reopen)();
    for round in 0..5 {
        drain(&bell);
        let (w, b) = (writer.clone(), bob.clone());
        let t = std::thread::spawn(move || send(&w, &b, &format!("r{round}")));
        rings_until(&bell, &format!("mail {round}"), || {
            let got = made.store.read(&bob, Position::START, 100).unwrap();
            got.len() > round
        });
        t.join().unwrap();
    }
}

/// A subscriber to an inbox is woken by new mail sent through another handle, each time.
pub(crate) fn new_mail_wakes_a_subscriber(make: &Make) {
    wakes_on_mail(make, false);
}

/// As `new_mail_wakes_a_subscriber`, through `subscribe_brief`.
pub(crate) fn new_mail_wakes_a_brief_subscriber(make: &Make) {
    wakes_on_mail(make, true);
}

/// `set_live` wakes `Topic::Live`, `update` wakes `Topic::Team`, `update_tasks` wakes
/// `Topic::Tasks`, each through `subscribe` and `subscribe_brief`.
pub(crate) fn live_team_and_task_changes_wake_subscribers(make: &Make) {
    let made = make();
    let bob = name("bob");
    let writer = (made.reopen)();
    for brief in [false, true] {
        let sub = |topic: Topic, bell: &SyncBell| {
            if brief {
                made.store.subscribe_brief(&[topic], bell.bell()).unwrap()
            } else {
                made.store.subscribe(&[topic], bell.bell()).unwrap()
            }
        };
        // Live.
        let bell = SyncBell::default();
        let _s = sub(Topic::Live, &bell);
        for pid in [10, 11] {
            drain(&bell);
            let (w, b) = (writer.clone(), bob.clone());
            let t = std::thread::spawn(move || w.set_live(&b, &live(Status::Idle, pid)).unwrap());
            rings_until(&bell, "a live state", || {
                made.store.live(&bob).unwrap().map(|l| l.pid) == Some(pid)
            });
            t.join().unwrap();
        }
        // Team.
        let bell = SyncBell::default();
        let _s = sub(Topic::Team, &bell);
        for n in 0..2 {
            drain(&bell);
            let w = writer.clone();
            let text = format!("{brief} {n}");
            let want = text.clone();
            let t = std::thread::spawn(move || {
                w.update(&mut |c| {
                    c.description = text.clone();
                    Ok(())
                })
                .unwrap()
            });
            rings_until(&bell, "a team file change", || {
                made.store.load().unwrap().description == want
            });
            t.join().unwrap();
        }
        // Tasks.
        let bell = SyncBell::default();
        let _s = sub(Topic::Tasks, &bell);
        for n in 0..2 {
            drain(&bell);
            let w = writer.clone();
            let subject = format!("{brief} {n}");
            let want = subject.clone();
            let t = std::thread::spawn(move || {
                w.update_tasks(&mut |l| {
                    l.add(
                        NewTask {
                            subject: subject.clone(),
                            ..Default::default()
                        },
                        0,
                    )?;
                    Ok(())
                })
                .unwrap()
            });
            rings_until(&bell, "a task list change", || {
                made.store
                    .load_tasks()
                    .unwrap()
                    .tasks
                    .iter()
                    .any(|t| t.subject == want)
            });
            t.join().unwrap();
        }
    }
}

/// A subscription's bell stops once it is dropped (a store must not keep ringing, or keep
/// the bell alive, for a subscriber that is gone).
pub(crate) fn a_dropped_subscription_stops_ringing(make: &Make) {
    let made = make();
    let bob = name("bob");
    for brief in [false, true] {
        let bell = SyncBell::default();
        let rung = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = rung.clone();
        let inner = bell.bell();
        let ring: super::Bell = Arc::new(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            inner();
        });
        let topics = [Topic::Inbox(bob.clone())];
        let sub = if brief {
            made.store.subscribe_brief(&topics, ring).unwrap()
        } else {
            made.store.subscribe(&topics, ring).unwrap()
        };
        send(&made.store, &bob, "one");
        rings_until(&bell, "mail", || true);
        // Let the first message's rings settle (a store may ring more than once per change).
        quiet(&bell);
        drop(sub);
        let after_drop = rung.load(std::sync::atomic::Ordering::SeqCst);
        send(&made.store, &bob, "two");
        quiet(&bell);
        assert_eq!(
            rung.load(std::sync::atomic::Ordering::SeqCst),
            after_drop,
            "rang on after the subscription (brief: {brief}) was dropped"
        );
    }
}

/// Wait until no ring came for `QUIET` (bounded by `WAIT`).
fn quiet(bell: &SyncBell) {
    let deadline = Instant::now() + WAIT;
    while bell.wait_until(Instant::now() + QUIET) {
        assert!(Instant::now() < deadline, "the bell keeps ringing");
    }
}

/// No live state before one is written; what is written reads back.
pub(crate) fn live_state_round_trips(make: &Make) {
    let made = make();
    let s = &made.store;
    let bob = name("bob");
    assert_eq!(s.live(&bob).unwrap(), None);
    let first = live(Status::Working, 42);
    s.set_live(&bob, &first).unwrap();
    assert_eq!(s.live(&bob).unwrap(), Some(first.clone()));
    let second = live(Status::Idle, 43);
    s.set_live(&bob, &second).unwrap();
    assert_eq!((made.reopen)().live(&bob).unwrap(), Some(second));
    assert_eq!(s.live(&name("carol")).unwrap(), None);
}

/// A held lock keeps a second taker (another handle, another thread) out until dropped; other
/// keys are free meanwhile.
pub(crate) fn locks_exclude_until_dropped(make: &Make) {
    let made = make();
    let bob = name("bob");
    for key in [
        LockKey::Start(bob.clone()),
        LockKey::Protocol,
        LockKey::Plan(bob.clone()),
    ] {
        let held = made.store.lock(&key).unwrap();
        let (tx, rx) = mpsc::channel();
        let (other, k) = ((made.reopen)(), key.clone());
        let taker = std::thread::spawn(move || {
            let second = other.lock(&k).unwrap();
            tx.send(()).unwrap();
            drop(second);
        });
        // Other keys meanwhile.
        for free in [
            LockKey::Start(name("carol")),
            LockKey::Protocol,
            LockKey::Plan(name("carol")),
        ] {
            if free != key {
                let s = made.store.clone();
                within(&format!("taking a free lock {free:?}"), move || {
                    drop(s.lock(&free).unwrap());
                });
            }
        }
        assert!(
            rx.recv_timeout(QUIET).is_err(),
            "{key:?} was taken twice at once"
        );
        drop(held);
        rx.recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("{key:?} not free within {WAIT:?} after its drop"));
        taker.join().unwrap();
        // Free again once the second taker dropped it.
        let s = made.store.clone();
        within(&format!("taking {key:?} again"), move || {
            drop(s.lock(&key).unwrap());
        });
    }
}

/// A recorded shutdown answer is taken once, by its request id only; a take for another
/// request clears it.
pub(crate) fn shutdown_answers_are_taken_once(make: &Make) {
    let made = make();
    let s = &made.store;
    let bob = name("bob");
    assert_eq!(s.take_shutdown_answer(&bob, "r1"), None);
    let answer = ShutdownAnswer {
        request_id: "r1".into(),
        approve: false,
        reason: Some("busy".into()),
    };
    s.set_shutdown_answer(&bob, &answer).unwrap();
    assert_eq!(
        (made.reopen)().take_shutdown_answer(&bob, "r1"),
        Some(answer.clone())
    );
    assert_eq!(s.take_shutdown_answer(&bob, "r1"), None, "taken once");
    s.set_shutdown_answer(&bob, &answer).unwrap();
    assert_eq!(s.take_shutdown_answer(&bob, "r2"), None, "another request");
    // A take for another request clears the stale answer: the worker relies on that before a
    // shutdown turn (worker/shutdown.rs), so an earlier request's answer never counts.
    assert_eq!(
        s.take_shutdown_answer(&bob, "r1"),
        None,
        "a stale answer is cleared"
    );
    assert_eq!(s.take_shutdown_answer(&name("carol"), "r1"), None);
    // A newer answer replaces the older one.
    let newer = ShutdownAnswer {
        request_id: "r3".into(),
        approve: true,
        reason: None,
    };
    s.set_shutdown_answer(&bob, &newer).unwrap();
    assert_eq!(s.take_shutdown_answer(&bob, "r3"), Some(newer));
}

/// Among 8 callers at once, exactly one is told to give the loop notice; later callers for
/// the same pair (either order) are not; another pair has its own notice.
pub(crate) fn one_loop_notice_among_concurrent_callers(make: &Make) {
    let made = make();
    for round in 0..10 {
        let a = format!("a{round}");
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (s, a, barrier) = (made.store.clone(), a.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    if i % 2 == 0 {
                        s.first_loop_notice(&a, "b")
                    } else {
                        s.first_loop_notice("b", &a)
                    }
                })
            })
            .collect();
        let won = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|&w| w)
            .count();
        assert_eq!(won, 1, "round {round}");
        assert!(!made.store.first_loop_notice("b", &a));
        assert!(!(made.reopen)().first_loop_notice(&a, "b"));
    }
}

/// A team exists until destroyed; then it is gone for every handle.
pub(crate) fn exists_until_destroyed(make: &Make) {
    let made = make();
    let s = &made.store;
    let bob = name("bob");
    send(s, &bob, "x");
    s.set_live(&bob, &live(Status::Idle, 1)).unwrap();
    assert!(s.exists());
    assert!((made.reopen)().exists());
    assert!(s.load().is_ok());
    let other = (made.reopen)();
    s.destroy().unwrap();
    assert!(!s.exists());
    assert!(!other.exists());
    assert!(s.load().is_err());
    assert_eq!(s.stamp(), None);
    assert!(s.inboxes().is_empty());
    assert_eq!(other.take_shutdown_answer(&bob, "r"), None);
}

/// `inboxes` names every member that got mail, once, sorted; `last_mail` and
/// `inbox_generation` know of them.
pub(crate) fn inboxes_list_members_that_got_mail(make: &Make) {
    let made = make();
    let s = &made.store;
    assert!(s.inboxes().is_empty());
    let (bob, carol) = (name("bob"), name("carol"));
    assert_eq!(s.last_mail(&bob), None);
    for to in [&carol, &bob, &carol] {
        send(s, to, "hi");
    }
    assert_eq!(s.inboxes(), vec![bob.clone(), carol.clone()]);
    assert_eq!((made.reopen)().inboxes(), vec![bob.clone(), carol.clone()]);
    assert!(s.last_mail(&bob).is_some());
    assert!(s.last_activity().is_some());
    let generation = s.inbox_generation(&bob);
    assert!(generation.is_some(), "an inbox with mail has a generation");
    send(s, &bob, "again");
    assert_eq!(
        s.inbox_generation(&bob),
        generation,
        "mail keeps the generation"
    );
}

/// 8 takers at once of one recorded answer: exactly one gets it.
pub(crate) fn a_shutdown_answer_is_taken_once_among_concurrent_takers(make: &Make) {
    let made = make();
    let bob = name("bob");
    for round in 0..30 {
        let id = format!("r{round}");
        let answer = ShutdownAnswer {
            request_id: id.clone(),
            approve: true,
            reason: None,
        };
        made.store.set_shutdown_answer(&bob, &answer).unwrap();
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let s = if i % 2 == 0 {
                    made.store.clone()
                } else {
                    (made.reopen)()
                };
                let (bob, id, barrier) = (bob.clone(), id.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    s.take_shutdown_answer(&bob, &id)
                })
            })
            .collect();
        let got: Vec<ShutdownAnswer> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(got, vec![answer], "round {round}: taken exactly once");
    }
}

/// Once destroyed, a team takes no writes through any handle (a late sender or worker must
/// not bring it back), and stays gone.
pub(crate) fn a_destroyed_team_takes_no_writes(make: &Make) {
    let made = make();
    let bob = name("bob");
    send(&made.store, &bob, "before");
    let other = (made.reopen)();
    made.store.destroy().unwrap();
    for s in [&made.store, &other] {
        assert!(s.append(&bob, &msg("a", "bob", "late")).is_err(), "append");
        assert!(
            s.set_live(&bob, &live(Status::Idle, 1)).is_err(),
            "set_live"
        );
        assert!(
            s.update(&mut |c| {
                c.description = "back".into();
                Ok(())
            })
            .is_err(),
            "update"
        );
        assert!(
            s.update_tasks(&mut |l| {
                l.add(
                    NewTask {
                        subject: "x".into(),
                        ..Default::default()
                    },
                    0,
                )?;
                Ok(())
            })
            .is_err(),
            "update_tasks"
        );
        assert!(s.hold_shared().is_err(), "hold_shared");
        assert!(!s.exists());
        assert!(
            s.read(&bob, Position::START, 10)
                .unwrap_or_default()
                .is_empty()
        );
    }
    assert!(!(made.reopen)().exists());
}

/// One writer rewrites a live state and a cursor as fast as it can while two readers read
/// them: a reader always sees one of the values written, never none or a torn one.
pub(crate) fn readers_never_see_a_torn_live_state_or_cursor(make: &Make) {
    const WRITES: u32 = 2000;
    let made = make();
    let bob = name("bob");
    for i in 0..20 {
        send(&made.store, &bob, &format!("m{i}"));
    }
    let ends: Vec<Position> = made
        .store
        .read(&bob, Position::START, 100)
        .unwrap()
        .iter()
        .map(|e| e.end)
        .collect();
    made.store.set_live(&bob, &live(Status::Idle, 0)).unwrap();
    made.store.set_cursor(&bob, "worker", ends[0]).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (s, bob, stop, ends) = ((made.reopen)(), bob.clone(), stop.clone(), ends.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let l = s.live(&bob).unwrap();
                    let l = l.unwrap_or_else(|| panic!("no live state at read {reads}"));
                    assert!(l.pid < WRITES && l.pane_id.as_deref() == Some("%7"));
                    let c = s.cursor(&bob, "worker").unwrap();
                    assert!(ends.contains(&c), "a torn cursor {c:?} at read {reads}");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for n in 0..WRITES {
        let status = if n % 2 == 0 {
            Status::Working
        } else {
            Status::Idle
        };
        made.store.set_live(&bob, &live(status, n)).unwrap();
        made.store
            .set_cursor(&bob, "worker", ends[n as usize % ends.len()])
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
}

/// One subscription to an inbox, the team file and the task list rings for each.
pub(crate) fn one_subscription_to_several_topics(make: &Make) {
    let made = make();
    let bob = name("bob");
    let bell = SyncBell::default();
    let _sub = made
        .store
        .subscribe(
            &[Topic::Inbox(bob.clone()), Topic::Team, Topic::Tasks],
            bell.bell(),
        )
        .unwrap();
    let w = (made.reopen)();
    drain(&bell);
    send(&w, &bob, "one");
    rings_until(&bell, "mail", || {
        !made
            .store
            .read(&bob, Position::START, 1)
            .unwrap()
            .is_empty()
    });
    drain(&bell);
    w.update(&mut |c| {
        c.description = "d".into();
        Ok(())
    })
    .unwrap();
    rings_until(&bell, "the team file", || {
        made.store.load().unwrap().description == "d"
    });
    drain(&bell);
    w.update_tasks(&mut |l| {
        l.add(
            NewTask {
                subject: "t".into(),
                ..Default::default()
            },
            0,
        )?;
        Ok(())
    })
    .unwrap();
    rings_until(&bell, "the task list", || {
        !made.store.load_tasks().unwrap().tasks.is_empty()
    });
}

/// Readers of the team file and the task list, while a writer changes both 200 times, always
/// read a whole one (never an error, never one older than what they read before).
pub(crate) fn readers_never_see_a_half_written_team_file_or_task_list(make: &Make) {
    const WRITES: usize = 200;
    let made = make();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (s, stop) = ((made.reopen)(), stop.clone());
            std::thread::spawn(move || {
                let (mut last_desc, mut last_tasks) = (0usize, 0usize);
                let mut last_members = 0usize;
                let mut cache = None;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let d = s.load().unwrap().description.len();
                    assert!(d >= last_desc, "the team file went back");
                    last_desc = d;
                    // A roster (read through an index where the store keeps one) is whole.
                    let r = s.roster().unwrap();
                    assert!(r.head().description.len() >= d, "the roster went back");
                    assert!(r.names().len() >= last_members, "the roster lost members");
                    last_members = r.names().len();
                    for n in r.names() {
                        let m = r.member(n.as_str()).unwrap().unwrap();
                        assert_eq!(&m.name, n, "the roster's member is its own");
                    }
                    let cached = s.load_cached(&mut cache).unwrap().description.len();
                    assert!(cached >= d, "the cached team file went back");
                    let t = s.load_tasks().unwrap().tasks.len();
                    assert!(t >= last_tasks, "the task list went back");
                    last_tasks = t;
                }
            })
        })
        .collect();
    for n in 0..WRITES {
        made.store
            .update(&mut |c| {
                c.description.push('x');
                Ok(())
            })
            .unwrap();
        if n % 10 == 0 {
            // One entry changed (its length too) and one added, every tenth write.
            let mate = name(&format!("m{n}"));
            made.store
                .update_member(&mut None, &mate, &mut |_, head, m| {
                    let mut new = Member::leader(&head.name, "/".repeat(n % 7 + 1), 0);
                    new.name = mate.clone();
                    *m = Some(new);
                    Ok(())
                })
                .unwrap();
            made.store
                .update_member(&mut None, &Name::leader(), &mut |_, _, m| {
                    m.as_mut().unwrap().cwd = "/".repeat(n % 5 + 1);
                    Ok(())
                })
                .unwrap();
        }
        made.store
            .update_tasks(&mut |l| {
                l.add(
                    NewTask {
                        subject: format!("t{n}"),
                        ..Default::default()
                    },
                    0,
                )?;
                Ok(())
            })
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(made.store.load().unwrap().description.len(), WRITES);
    assert_eq!(made.store.load_tasks().unwrap().tasks.len(), WRITES);
}

/// The change given to `update` and `update_tasks` may read the store (the team file, the
/// task list, inboxes, live state) without deadlocking.
pub(crate) fn a_change_may_read_the_store(make: &Make) {
    let made = make();
    let bob = name("bob");
    send(&made.store, &bob, "hi");
    made.store.set_live(&bob, &live(Status::Idle, 5)).unwrap();
    let s = made.store.clone();
    within("update reading the store", move || {
        s.update(&mut |c| {
            let tasks = s.load_tasks()?;
            let mail = s.read(&bob, Position::START, 10)?;
            let pid = s.live(&bob)?.map_or(0, |l| l.pid);
            c.description = format!(
                "{} {} {pid} {}",
                tasks.tasks.len(),
                mail.len(),
                s.load()?.members.len()
            );
            Ok(())
        })
        .unwrap();
        s.update_tasks(&mut |l| {
            let d = s.load()?.description;
            let _ = s.load_tasks()?;
            l.add(
                NewTask {
                    subject: d,
                    ..Default::default()
                },
                0,
            )?;
            Ok(())
        })
        .unwrap();
    });
    assert_eq!(made.store.load().unwrap().description, "0 1 5 1");
    assert_eq!(made.store.load_tasks().unwrap().tasks[0].subject, "0 1 5 1");
}
