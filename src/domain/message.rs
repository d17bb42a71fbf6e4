//! Messages (SPEC section 4): the inbox record, every message type as a typed value, and the
//! rules a message must satisfy before it is written anywhere.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use super::member::BackendType;
use super::name::{LEADER, Name};
use super::time::now_rfc3339;
use crate::error::{Error, Result};

/// The record format version written in `v`.
pub const VERSION: u32 = 1;

/// The largest inbox record accepted, in bytes (the whole JSON line).
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// One inbox line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u32,
    pub id: String,
    #[serde(flatten)]
    pub body: Body,
    pub from: String,
    pub to: String,
    pub timestamp: String,
    /// How many agent-to-agent hops led to this message (the loop guard): a message sent
    /// inside a turn has the handled message's hops + 1. Absent means 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hops: u32,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The typed part of a message, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Body {
    Message {
        text: String,
        #[serde(default)]
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_reply_to: Option<String>,
    },
    IdleNotification {
        idle_reason: IdleReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    ShutdownRequest {
        #[serde(alias = "request_id")]
        request_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    ShutdownResponse {
        #[serde(alias = "request_id")]
        request_id: String,
        approve: Approve,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pane_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend_type: Option<BackendType>,
    },
    PlanApprovalRequest {
        #[serde(alias = "request_id")]
        request_id: String,
        plan: String,
    },
    PlanApprovalResponse {
        #[serde(alias = "request_id")]
        request_id: String,
        approve: Approve,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    TaskAssignment {
        task_id: u64,
        subject: String,
    },
}

impl Body {
    /// The `type` string of this body.
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Message { .. } => "message",
            Body::IdleNotification { .. } => "idle_notification",
            Body::ShutdownRequest { .. } => "shutdown_request",
            Body::ShutdownResponse { .. } => "shutdown_response",
            Body::PlanApprovalRequest { .. } => "plan_approval_request",
            Body::PlanApprovalResponse { .. } => "plan_approval_response",
            Body::TaskAssignment { .. } => "task_assignment",
        }
    }

    /// Whether any text of the body holds a NUL byte: a turn gets the text in its
    /// environment, where NUL cannot be, so such a message could never be handled.
    pub fn has_nul(&self) -> bool {
        let texts: Vec<&str> = match self {
            Body::Message {
                text,
                summary,
                in_reply_to,
            } => vec![text, summary, in_reply_to.as_deref().unwrap_or("")],
            Body::IdleNotification { summary, .. } => vec![summary.as_deref().unwrap_or("")],
            Body::ShutdownRequest { request_id, reason } => {
                vec![request_id, reason.as_deref().unwrap_or("")]
            }
            Body::ShutdownResponse {
                request_id,
                reason,
                pane_id,
                ..
            } => vec![
                request_id,
                reason.as_deref().unwrap_or(""),
                pane_id.as_deref().unwrap_or(""),
            ],
            Body::PlanApprovalRequest { request_id, plan } => vec![request_id, plan],
            Body::PlanApprovalResponse {
                request_id,
                feedback,
                ..
            } => vec![request_id, feedback.as_deref().unwrap_or("")],
            Body::TaskAssignment { subject, .. } => vec![subject],
        };
        texts.iter().any(|t| t.contains('\0'))
    }

    pub fn is_structured(&self) -> bool {
        !matches!(self, Body::Message { .. })
    }

    /// A plain message body with a summary derived from the text when none is given.
    pub fn message(text: impl Into<String>, summary: Option<String>) -> Body {
        let text = text.into();
        // A preview is one line: a given summary's line breaks and runs of blanks become one
        // space, as in a derived one.
        let summary = summary
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| derive_summary(&text));
        Body::Message {
            text,
            summary,
            in_reply_to: None,
        }
    }

    /// A one-line human preview of this body.
    pub fn preview(&self) -> String {
        match self {
            Body::Message { summary, text, .. } => {
                if summary.is_empty() {
                    derive_summary(text)
                } else {
                    summary.clone()
                }
            }
            Body::IdleNotification {
                idle_reason,
                summary,
            } => match summary {
                Some(s) => format!("idle ({idle_reason}): {s}"),
                None => format!("idle ({idle_reason})"),
            },
            Body::ShutdownRequest { reason, .. } => match reason {
                Some(r) => format!("shutdown requested: {r}"),
                None => "shutdown requested".into(),
            },
            Body::ShutdownResponse {
                approve, reason, ..
            } => match (approve.0, reason) {
                (true, _) => "shutdown approved".into(),
                (false, r) => format!("shutdown refused: {}", r.as_deref().unwrap_or("")),
            },
            Body::PlanApprovalRequest { plan, .. } => {
                format!("plan for approval: {}", derive_summary(plan))
            }
            Body::PlanApprovalResponse {
                approve, feedback, ..
            } => match (approve.0, feedback) {
                (true, _) => "plan approved".into(),
                (false, f) => format!("plan rejected: {}", f.as_deref().unwrap_or("")),
            },
            Body::TaskAssignment { task_id, subject } => {
                format!("task #{task_id} assigned: {subject}")
            }
        }
    }
}

/// Why a teammate went idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleReason {
    Available,
    Interrupted,
    Failed,
}

impl fmt::Display for IdleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdleReason::Available => "available",
            IdleReason::Interrupted => "interrupted",
            IdleReason::Failed => "failed",
        })
    }
}

/// A yes/no answer. Written as a JSON boolean; read from a boolean or from
/// `true/false/yes/no` in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Approve(pub bool);

impl Approve {
    pub fn parse(s: &str) -> Option<Approve> {
        match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(Approve(true)),
            "false" | "no" => Some(Approve(false)),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Approve {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bool(b) => Ok(Approve(b)),
            Raw::Str(s) => Approve::parse(&s).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "approve must be true, false, yes or no, not {s:?}"
                ))
            }),
        }
    }
}

/// Where a message goes: one member or everyone but the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipient {
    One(Name),
    All,
}

impl Recipient {
    pub fn parse(s: &str) -> Result<Recipient> {
        if s == "*" {
            Ok(Recipient::All)
        } else {
            Ok(Recipient::One(Name::parse_as(s, "recipient")?))
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Recipient::One(n) => n.as_str(),
            Recipient::All => "*",
        }
    }
}

/// A fresh unique message or request id: a UUIDv7, ordered by time, random below.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A preview of 5 to 10 words taken from the text.
pub fn derive_summary(text: &str) -> String {
    const WORDS: usize = 10;
    const CHARS: usize = 80;
    let words: Vec<&str> = text.split_whitespace().take(WORDS + 1).collect();
    let mut summary = words[..words.len().min(WORDS)].join(" ");
    let mut cut = words.len() > WORDS;
    if summary.chars().count() > CHARS {
        summary = summary.chars().take(CHARS).collect();
        cut = true;
    }
    if cut {
        summary.push_str("...");
    }
    summary
}

impl Envelope {
    /// A new message from `from` to `to`, stamped now with a fresh id.
    pub fn new(from: &str, to: &str, body: Body) -> Envelope {
        Envelope {
            v: VERSION,
            id: new_id(),
            body,
            from: from.to_string(),
            to: to.to_string(),
            timestamp: now_rfc3339(),
            hops: 0,
        }
    }

    /// The record as one JSON line, newline included, refused when over the size cap.
    pub fn to_line(&self) -> Result<Vec<u8>> {
        let mut line = serde_json::to_vec(self)
            .map_err(|e| Error::failed(format!("cannot encode message: {e}")))?;
        line.push(b'\n');
        if line.len() > MAX_MESSAGE_BYTES {
            return Err(Error::bad(format!(
                "message is {} bytes as an inbox record (JSON escaping of quotes, backslashes and control characters included); the limit is 1 MiB (1048576 bytes): shorten it or send a file path instead",
                line.len()
            )));
        }
        Ok(line)
    }

    /// Parse one inbox line (without its newline). A plain message without a summary gets one.
    pub fn from_line(line: &[u8]) -> std::result::Result<Envelope, serde_json::Error> {
        let mut env: Envelope = serde_json::from_slice(line)?;
        if let Body::Message { text, summary, .. } = &mut env.body
            && summary.trim().is_empty()
        {
            *summary = derive_summary(text);
        }
        Ok(env)
    }

    /// Check every rule of SPEC section 4. Errors are bad input (exit 2).
    pub fn validate(&self) -> Result<()> {
        let bad = |why: String| {
            let what = match self.body.kind() {
                "message" => "invalid message".to_string(),
                kind => format!("invalid {kind} message"),
            };
            Err(Error::bad(format!("{what}: {why}")))
        };
        if self.v != VERSION {
            return bad(format!(
                "unsupported version v={} (expected {VERSION})",
                self.v
            ));
        }
        if self.id.trim().is_empty() {
            return bad("id is empty".into());
        }
        // A sender of another team is named by its agent id, and sends plain text only.
        match crate::domain::name::AgentId::parse(&self.from, "sender")? {
            None => drop(Name::parse_as(&self.from, "sender")?),
            Some(_) if !matches!(self.body, Body::Message { .. }) => {
                return bad(format!(
                    "messages from another team ({}) are plain text only",
                    self.from
                ));
            }
            Some(_) => {}
        }
        let broadcast = self.to == "*";
        if !broadcast {
            Name::parse_as(&self.to, "recipient")?;
        }
        if self.body.has_nul() {
            return bad(
                "it contains a NUL byte (\\0), which no agent command can be given; remove it"
                    .into(),
            );
        }
        if broadcast && self.body.is_structured() {
            return bad("structured messages cannot be broadcast to *; name one recipient".into());
        }
        match &self.body {
            Body::Message { text, .. } => {
                if text.trim().is_empty() {
                    return bad("the text is empty; give TEXT, or pipe it on stdin".into());
                }
            }
            Body::IdleNotification { .. } => {
                if self.to != LEADER {
                    return bad(format!(
                        "idle notifications go to {LEADER}, not {:?}",
                        self.to
                    ));
                }
            }
            Body::ShutdownRequest { request_id, .. } => {
                if request_id.trim().is_empty() {
                    return bad("requestId is empty".into());
                }
                if self.from != LEADER {
                    return bad(format!("only {LEADER} may ask a teammate to shut down"));
                }
            }
            Body::PlanApprovalRequest { request_id, .. } => {
                if request_id.trim().is_empty() {
                    return bad("requestId is empty".into());
                }
                if self.to != LEADER || self.from == LEADER {
                    return bad(format!(
                        "a plan_approval_request goes from a teammate to {LEADER}, not from {:?} to {:?}",
                        self.from, self.to
                    ));
                }
            }
            Body::ShutdownResponse {
                request_id,
                approve,
                reason,
                ..
            } => {
                if request_id.trim().is_empty() {
                    return bad("requestId is empty".into());
                }
                if self.to != LEADER {
                    return bad(format!(
                        "a shutdown_response must go to {LEADER}, not {:?}",
                        self.to
                    ));
                }
                if !approve.0 && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    return bad("a refusal (approve: false) needs a reason".into());
                }
            }
            Body::PlanApprovalResponse { request_id, .. } => {
                if request_id.trim().is_empty() {
                    return bad("requestId is empty".into());
                }
                if self.from != LEADER {
                    return bad(format!(
                        "plan approval responses are honoured only from {LEADER}"
                    ));
                }
            }
            Body::TaskAssignment { subject, .. } => {
                if subject.trim().is_empty() {
                    return bad("subject is empty".into());
                }
            }
        }
        self.to_line().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../tests/fixtures/messages.jsonl");

    #[test]
    fn every_type_round_trips_through_the_fixture() {
        let mut kinds = std::collections::BTreeSet::new();
        for line in FIXTURE.lines().filter(|l| !l.trim().is_empty()) {
            let env = Envelope::from_line(line.as_bytes()).expect(line);
            env.validate().expect(line);
            kinds.insert(env.body.kind());
            let again = env.to_line().unwrap();
            let back = Envelope::from_line(&again[..again.len() - 1]).unwrap();
            assert_eq!(env, back);
            // The written form keeps the same JSON as the fixture (modulo key order).
            let a: serde_json::Value = serde_json::from_str(line).unwrap();
            let b: serde_json::Value = serde_json::from_slice(&again).unwrap();
            assert_eq!(normalise_approve(a), b, "{line}");
        }
        assert_eq!(kinds.len(), 7, "the fixture holds every type: {kinds:?}");
    }

    fn normalise_approve(mut v: serde_json::Value) -> serde_json::Value {
        if let Some(a) = v.get("approve").and_then(|a| a.as_str()) {
            v["approve"] = serde_json::Value::Bool(Approve::parse(a).unwrap().0);
        }
        v
    }

    fn env(json: &str) -> Envelope {
        Envelope::from_line(json.as_bytes()).unwrap()
    }

    fn msg(from: &str, to: &str, body: Body) -> Envelope {
        Envelope::new(from, to, body)
    }

    #[test]
    fn approve_accepts_words_in_any_case() {
        for (s, b) in [
            ("yes", true),
            ("YES", true),
            ("True", true),
            ("no", false),
            ("FALSE", false),
        ] {
            let e = env(&format!(
                r#"{{"v":1,"id":"x","type":"plan_approval_response","from":"team-lead","to":"a","requestId":"r","approve":"{s}","timestamp":"t"}}"#
            ));
            assert!(
                matches!(e.body, Body::PlanApprovalResponse { approve: Approve(x), .. } if x == b)
            );
        }
        assert!(Envelope::from_line(br#"{"v":1,"id":"x","type":"plan_approval_response","from":"team-lead","to":"a","requestId":"r","approve":"maybe","timestamp":"t"}"#).is_err());
    }

    #[test]
    fn structured_messages_cannot_be_broadcast() {
        let e = msg(
            "team-lead",
            "*",
            Body::ShutdownRequest {
                request_id: "r".into(),
                reason: None,
            },
        );
        assert_eq!(e.validate().unwrap_err().exit_code(), 2);
        assert!(
            msg("team-lead", "*", Body::message("hello all", None))
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn shutdown_response_goes_to_the_leader_and_refusals_need_a_reason() {
        let resp = |to: &str, approve: bool, reason: Option<&str>| {
            msg(
                "bob",
                to,
                Body::ShutdownResponse {
                    request_id: "r".into(),
                    approve: Approve(approve),
                    reason: reason.map(String::from),
                    pane_id: None,
                    backend_type: None,
                },
            )
        };
        assert!(resp("team-lead", true, None).validate().is_ok());
        assert!(resp("alice", true, None).validate().is_err());
        assert!(resp("team-lead", false, None).validate().is_err());
        assert!(resp("team-lead", false, Some("  ")).validate().is_err());
        assert!(resp("team-lead", false, Some("busy")).validate().is_ok());
    }

    #[test]
    fn plan_approval_response_only_from_the_leader() {
        let r = |from: &str| {
            msg(
                from,
                "bob",
                Body::PlanApprovalResponse {
                    request_id: "r".into(),
                    approve: Approve(true),
                    feedback: None,
                },
            )
        };
        assert!(r("team-lead").validate().is_ok());
        assert!(r("alice").validate().is_err());
    }

    #[test]
    fn shutdown_requests_only_from_the_leader() {
        let r = |from: &str| {
            msg(
                from,
                "bob",
                Body::ShutdownRequest {
                    request_id: "r".into(),
                    reason: None,
                },
            )
        };
        assert!(r("team-lead").validate().is_ok());
        assert_eq!(r("alice").validate().unwrap_err().exit_code(), 2);
    }

    #[test]
    fn a_nul_byte_anywhere_in_a_body_is_refused() {
        let err = msg("bob", "a", Body::message("a\0b", None))
            .validate()
            .unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("NUL"), "{err}");
        let plan = Body::PlanApprovalRequest {
            request_id: "r".into(),
            plan: "1.\0".into(),
        };
        assert!(msg("bob", "team-lead", plan).validate().is_err());
        // An escaped backslash-zero is text, not a NUL.
        assert!(
            msg("bob", "a", Body::message(r"a\0b", None))
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn request_id_is_read_in_snake_case_too() {
        let e = env(
            r#"{"v":1,"id":"x","type":"shutdown_request","from":"team-lead","to":"a","request_id":"r1","timestamp":"t"}"#,
        );
        assert!(
            matches!(e.body, Body::ShutdownRequest { ref request_id, .. } if request_id == "r1")
        );
        // Written back in the SPEC's spelling.
        assert!(
            String::from_utf8(e.to_line().unwrap())
                .unwrap()
                .contains(r#""requestId":"r1""#)
        );
    }

    #[test]
    fn idle_notifications_go_to_the_leader() {
        let b = Body::IdleNotification {
            idle_reason: IdleReason::Available,
            summary: None,
        };
        assert!(msg("bob", "team-lead", b.clone()).validate().is_ok());
        assert!(msg("bob", "alice", b).validate().is_err());
    }

    #[test]
    fn bad_names_and_empty_text_are_rejected() {
        assert!(
            msg("bob", "a/b", Body::message("x", None))
                .validate()
                .is_err()
        );
        // `NAME@TEAM` is a sender of another team (plain text only); more than that is not.
        assert!(
            msg("b@b@b", "a", Body::message("x", None))
                .validate()
                .is_err()
        );
        assert!(
            msg("b/b", "a", Body::message("x", None))
                .validate()
                .is_err()
        );
        assert!(msg("bob", "a", Body::message("", None)).validate().is_err());
        let mut e = msg("bob", "a", Body::message("x", None));
        e.v = 2;
        assert!(e.validate().is_err());
    }

    #[test]
    fn oversized_messages_are_refused() {
        let big = "x".repeat(MAX_MESSAGE_BYTES);
        let err = msg("bob", "a", Body::message(big, Some("s".into())))
            .validate()
            .unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("1 MiB"));
        let fits = "x".repeat(MAX_MESSAGE_BYTES - 300);
        assert!(
            msg("bob", "a", Body::message(fits, Some("s".into())))
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn summaries_are_derived() {
        assert_eq!(
            derive_summary("analyse  the\nauth module"),
            "analyse the auth module"
        );
        let long = "one two three four five six seven eight nine ten eleven twelve";
        assert_eq!(
            derive_summary(long),
            "one two three four five six seven eight nine ten..."
        );
        let e = env(
            r#"{"v":1,"id":"x","type":"message","from":"a","to":"b","text":"hi there","timestamp":"t"}"#,
        );
        assert!(matches!(e.body, Body::Message { ref summary, .. } if summary == "hi there"));
        assert!(
            matches!(Body::message("a b c", Some("given".into())), Body::Message { ref summary, .. } if summary == "given")
        );
    }

    #[test]
    fn ids_are_unique() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| new_id()).collect();
        assert_eq!(ids.len(), 10_000);
    }

    #[test]
    fn unknown_fields_are_ignored_and_unknown_types_fail() {
        assert!(Envelope::from_line(br#"{"v":1,"id":"x","type":"message","from":"a","to":"b","text":"t","extra":1,"timestamp":"t"}"#).is_ok());
        assert!(
            Envelope::from_line(
                br#"{"v":1,"id":"x","type":"nope","from":"a","to":"b","timestamp":"t"}"#
            )
            .is_err()
        );
    }
}
