//! Property tests for messages and the inbox reader.
//!
//! - Any envelope the library can build survives `to_line` then `from_line` unchanged.
//! - No input bytes make `Envelope::from_line` (or `validate` on what it returns) panic.
//! - `validate` accepts exactly what the rules of SPEC section 4 allow (checked against an
//!   independent model of the rules).
//! - The inbox reader, over random interleavings of appends, torn tails (finished later or
//!   left behind by a crashed writer), garbage lines and reader restarts, delivers every
//!   complete valid record exactly once per reader, in order.

use std::io::Write;

use proptest::prelude::*;
use teamctl::domain::message::{Approve, MAX_MESSAGE_BYTES, derive_summary};
use teamctl::domain::{BackendType, Body, Envelope, IdleReason};
use teamctl::store::Item;
use teamctl::store::fsutil::open_append;
use teamctl::store::inbox::{self, InboxPaths};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

// ---------- strategies ----------

/// Names: mostly valid, sometimes the leader, `*`, or one of many invalid shapes.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z0-9_][A-Za-z0-9._-]{0,20}",
        2 => Just("team-lead".to_string()),
        1 => Just("*".to_string()),
        1 => Just(String::new()),
        1 => "[.-][a-z]{0,5}",
        1 => "[a-z]{1,5}[@/: ][a-z]{0,5}",
        1 => "[a-z]{65,70}",
        1 => "[a-z]{1,3}[\u{0}-\u{1f}é*][a-z]{0,3}",
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<String>(),
        1 => Just(String::new()),
        1 => Just("   ".to_string()),
        1 => "[a-z ]{1,200}",
    ]
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text())
}

fn approve() -> impl Strategy<Value = Approve> {
    any::<bool>().prop_map(Approve)
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        (text(), text(), proptest::option::of("[a-f0-9-]{1,36}")).prop_map(
            |(text, summary, in_reply_to)| Body::Message {
                text,
                summary,
                in_reply_to
            }
        ),
        (
            prop_oneof![
                Just(IdleReason::Available),
                Just(IdleReason::Interrupted),
                Just(IdleReason::Failed)
            ],
            opt_text()
        )
            .prop_map(|(idle_reason, summary)| Body::IdleNotification {
                idle_reason,
                summary
            }),
        (text(), opt_text())
            .prop_map(|(request_id, reason)| Body::ShutdownRequest { request_id, reason }),
        (
            text(),
            approve(),
            opt_text(),
            proptest::option::of("%[0-9]{1,4}"),
            proptest::option::of(prop_oneof![
                Just(BackendType::Tmux),
                Just(BackendType::Process)
            ])
        )
            .prop_map(|(request_id, approve, reason, pane_id, backend_type)| {
                Body::ShutdownResponse {
                    request_id,
                    approve,
                    reason,
                    pane_id,
                    backend_type,
                }
            }),
        (text(), text())
            .prop_map(|(request_id, plan)| Body::PlanApprovalRequest { request_id, plan }),
        (text(), approve(), opt_text()).prop_map(|(request_id, approve, feedback)| {
            Body::PlanApprovalResponse {
                request_id,
                approve,
                feedback,
            }
        }),
        (any::<u64>(), text())
            .prop_map(|(task_id, subject)| Body::TaskAssignment { task_id, subject }),
    ]
}

fn envelope() -> impl Strategy<Value = Envelope> {
    (
        prop_oneof![9 => Just(1u32), 1 => any::<u32>()],
        prop_oneof![9 => "[a-f0-9-]{1,36}", 1 => Just(String::new()), 1 => Just(" ".to_string())],
        body(),
        name(),
        name(),
    )
        .prop_map(|(v, id, body, from, to)| Envelope {
            v,
            id,
            body,
            from,
            to,
            timestamp: "2026-11-30T14:10:38.123Z".into(),
            hops: 0,
        })
}

// ---------- an independent model of the rules ----------

fn valid_name(s: &str) -> bool {
    let first_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    first_ok
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// A sender of another team: `NAME@TEAM` (two valid names), sending plain text only.
fn from_another_team(e: &Envelope) -> bool {
    matches!(e.body, Body::Message { .. })
        && e.from
            .split_once('@')
            .is_some_and(|(n, t)| valid_name(n) && valid_name(t))
}

fn model_valid(e: &Envelope) -> bool {
    let lead = "team-lead";
    let broadcast = e.to == "*";
    let base = e.v == 1
        && !blank(&e.id)
        && (valid_name(&e.from) || from_another_team(e))
        && (broadcast || valid_name(&e.to))
        && (!broadcast || matches!(e.body, Body::Message { .. }));
    let body = match &e.body {
        Body::Message { text, .. } => !blank(text),
        Body::IdleNotification { .. } => e.to == lead,
        Body::ShutdownRequest { request_id, .. }
        | Body::PlanApprovalResponse { request_id, .. } => !blank(request_id) && e.from == lead,
        Body::PlanApprovalRequest { request_id, .. } => {
            !blank(request_id) && e.to == lead && e.from != lead
        }
        Body::ShutdownResponse {
            request_id,
            approve,
            reason,
            ..
        } => {
            !blank(request_id)
                && e.to == lead
                && (approve.0 || reason.as_deref().is_some_and(|r| !blank(r)))
        }
        Body::TaskAssignment { subject, .. } => !blank(subject),
    };
    let size_ok = serde_json::to_vec(e).map_or(usize::MAX, |v| v.len() + 1) <= MAX_MESSAGE_BYTES;
    // No agent could be given a NUL byte (a turn's environment cannot hold one).
    let no_nul = !strings(&serde_json::to_value(&e.body).unwrap())
        .iter()
        .any(|s| s.contains('\0'));
    base && body && size_ok && no_nul
}

/// Every string in a JSON value.
fn strings(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Object(o) => o.values().flat_map(strings).collect(),
        serde_json::Value::Array(a) => a.iter().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

// ---------- message properties ----------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn envelopes_round_trip(env in envelope()) {
        let line = env.to_line().expect("small envelopes encode");
        prop_assert_eq!(line.last(), Some(&b'\n'));
        prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1, "one line, one newline");
        let back = Envelope::from_line(&line[..line.len() - 1]).expect("our own line parses");
        let mut expected = env.clone();
        // A plain message without a summary gets one derived from its text on reading.
        if let Body::Message { text, summary, .. } = &mut expected.body
            && blank(summary)
        {
            *summary = derive_summary(text);
        }
        prop_assert_eq!(back, expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(env) = Envelope::from_line(&bytes) {
            let _ = env.validate();
            let _ = env.to_line();
        }
    }

    #[test]
    fn mutated_valid_lines_never_panic(
        env in envelope(),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut line = env.to_line().unwrap();
        line.pop();
        for (at, byte, op) in cuts {
            if line.is_empty() {
                break;
            }
            let i = at.index(line.len());
            match op {
                0 => line[i] = byte,
                1 => { line.remove(i); }
                _ => line.truncate(i),
            }
        }
        if let Ok(parsed) = Envelope::from_line(&line) {
            let _ = parsed.validate();
        }
    }

    #[test]
    fn validation_follows_the_rules(env in envelope()) {
        let want = model_valid(&env);
        let got = env.validate();
        prop_assert_eq!(got.is_ok(), want, "validate said {:?} for {:?}", got, env);
        if let Err(e) = got {
            prop_assert_eq!(e.exit_code(), 2, "invalid messages are bad input");
            prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
        }
    }

    #[test]
    fn approve_words_parse_in_any_case(
        base in prop_oneof![Just("true"), Just("false"), Just("yes"), Just("no")],
        upper in proptest::collection::vec(any::<bool>(), 5),
    ) {
        let word: String = base
            .chars()
            .zip(upper)
            .map(|(c, u)| if u { c.to_ascii_uppercase() } else { c })
            .collect();
        let want = matches!(word.to_ascii_lowercase().as_str(), "true" | "yes");
        prop_assert_eq!(Approve::parse(&word), Some(Approve(want)));
        let json = format!(
            r#"{{"v":1,"id":"x","type":"plan_approval_response","from":"team-lead","to":"a","requestId":"r","approve":"{word}","timestamp":"t"}}"#
        );
        let env = Envelope::from_line(json.as_bytes()).unwrap();
        let got = matches!(env.body, Body::PlanApprovalResponse { approve: Approve(a), .. } if a == want);
        prop_assert!(got, "approve {} read wrong", word);
    }
}

// ---------- the inbox reader ----------

#[derive(Debug, Clone)]
enum Op {
    /// `inbox::append` of a new valid message.
    Append,
    /// A raw garbage line (never a valid record).
    Garbage(Vec<u8>),
    /// A writer writes the first part of a record and stops (slow or crashed).
    TornStart(prop::sample::Index),
    /// The slow writer finishes its record.
    TornFinish,
    /// Reader `r` reads up to `max` entries from its stored cursor and stores the new one.
    Read(usize, usize),
    /// Reader `r` restarts: it forgets everything but its stored cursor.
    Restart(usize),
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Led by a byte that is never valid UTF-8, so it cannot complete a torn record.
        proptest::collection::vec(
            any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
            0..80
        )
        .prop_map(|mut v| {
            v.insert(0, 0xff);
            v
        }),
        Just(b"{}".to_vec()),
        Just(b"{\"v\":1}".to_vec()),
        Just(b"[1,2,3]".to_vec()),
        Just(br#"{"v":1,"id":"x","type":"nope","from":"a","to":"b","timestamp":"t"}"#.to_vec()),
        Just(b"   ".to_vec()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => Just(Op::Append),
        1 => garbage().prop_map(Op::Garbage),
        1 => any::<prop::sample::Index>().prop_map(Op::TornStart),
        1 => Just(Op::TornFinish),
        3 => (0usize..2, 1usize..5).prop_map(|(r, m)| Op::Read(r, m)),
        1 => (0usize..2).prop_map(Op::Restart),
    ]
}

/// A reader as a worker is one: everything but the stored cursor lives in memory only.
struct Reader {
    name: &'static str,
    got: Vec<String>,
}

impl Reader {
    fn read(&mut self, paths: &InboxPaths, max: usize) {
        let from = inbox::cursor(paths, self.name);
        let entries = inbox::read_from(&paths.log(), from, max).unwrap();
        for e in &entries {
            if let Item::Message(env) = &e.item {
                self.got.push(env.id.clone());
            }
        }
        if let Some(last) = entries.last() {
            inbox::set_cursor(paths, self.name, last.end.raw()).unwrap();
        }
    }
}

fn raw_write(paths: &InboxPaths, bytes: &[u8]) {
    let mut f = open_append(&paths.log()).unwrap();
    f.write_all(bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_complete_record_is_delivered_exactly_once_per_reader(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let paths = InboxPaths::new(dir.path().join("inboxes").join("bob"));
        std::fs::create_dir_all(paths.dir.join("cursors")).unwrap();
        // The ids a correct reader must deliver, in file order.
        let mut expected: Vec<String> = Vec::new();
        // A record whose first part is on disk: (id, rest of its line).
        let mut torn: Option<(String, Vec<u8>)> = None;
        let mut readers = [Reader { name: "a", got: Vec::new() }, Reader { name: "b", got: Vec::new() }];
        // What each reader had delivered before its last restart (kept by the test, not it).
        let mut delivered: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut n = 0;
        let fresh = |n: &mut usize| {
            *n += 1;
            Envelope::new("alice", "bob", Body::message(format!("message {n}"), None))
        };
        for op in ops {
            match op {
                Op::Append => {
                    // A torn tail left by another writer becomes one garbage line.
                    torn = None;
                    let env = fresh(&mut n);
                    inbox::append(&paths, &env).unwrap();
                    expected.push(env.id);
                }
                Op::Garbage(bytes) => {
                    // Raw bytes after a torn tail merge with it into one garbage line.
                    torn = None;
                    let mut line = bytes;
                    line.push(b'\n');
                    raw_write(&paths, &line);
                }
                Op::TornStart(at) => {
                    if torn.is_none() {
                        let env = fresh(&mut n);
                        let line = env.to_line().unwrap();
                        // At least the closing brace is missing: the part alone never parses.
                        let cut = 1 + at.index(line.len() - 2);
                        raw_write(&paths, &line[..cut]);
                        torn = Some((env.id, line[cut..].to_vec()));
                    }
                }
                Op::TornFinish => {
                    if let Some((id, rest)) = torn.take() {
                        raw_write(&paths, &rest);
                        expected.push(id);
                    }
                }
                Op::Read(r, max) => readers[r].read(&paths, max),
                Op::Restart(r) => {
                    delivered[r].append(&mut readers[r].got);
                }
            }
        }
        for (r, reader) in readers.iter_mut().enumerate() {
            reader.read(&paths, usize::MAX);
            let mut all = std::mem::take(&mut delivered[r]);
            all.append(&mut reader.got);
            prop_assert_eq!(&all, &expected, "reader {} got {:?}", reader.name, all);
        }
    }
}
