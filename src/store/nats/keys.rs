//! Names in NATS for one team: the inbox stream and its subjects, the KV bucket and its keys,
//! and the durable consumers that are the readers' cursors. Every
//! part taken from a name goes through `token`, so it is one valid subject token and one
//! valid KV key part whatever the name holds.

use crate::domain::Name;

/// Whether `s` is its own token: not empty, and made of `[a-z0-9-]` only.
fn is_plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// `s` as one subject token / KV key part: unchanged when it is made of `[a-z0-9-]`, else `_`
/// and its bytes in lowercase hex. A plain token holds no `_` and an encoded one starts with
/// it, so no two texts give one token (a name may itself start with `_`: `_x` is `_5f78`).
pub fn token(s: &str) -> String {
    if is_plain(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(1 + 2 * s.len());
    out.push('_');
    for b in s.bytes() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The text `token` made `t` from, if it is one (`None` for anything `token` never makes:
/// odd or uppercase hex, characters outside a token, a plain text written in hex).
pub fn untoken(t: &str) -> Option<String> {
    let Some(hex) = t.strip_prefix('_') else {
        return is_plain(t).then(|| t.to_string());
    };
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok().filter(|s| token(s) == t)
}

/// The team whose inbox stream is `stream` (`tc_TOKEN`), if it is one.
pub fn team_of_stream(stream: &str) -> Option<Name> {
    Name::parse(&untoken(stream.strip_prefix("tc_")?)?).ok()
}

/// The names of one team's things in NATS.
#[derive(Debug, Clone)]
pub struct Keys {
    team: String,
}

impl Keys {
    pub fn new(team: &Name) -> Keys {
        Keys {
            team: token(team.as_str()),
        }
    }

    /// The inbox stream, and the KV bucket (its stream is `KV_` + this).
    pub fn stream(&self) -> String {
        format!("tc_{}", self.team)
    }

    pub fn bucket(&self) -> String {
        self.stream()
    }

    /// Every inbox subject of the team.
    pub fn inboxes(&self) -> String {
        format!("tc.{}.inbox.>", self.team)
    }

    pub fn inbox(&self, member: &Name) -> String {
        format!("tc.{}.inbox.{}", self.team, token(member.as_str()))
    }

    /// The member an inbox subject belongs to (its token decoded: `inbox` in reverse).
    pub fn member_of(&self, subject: &str) -> Option<Name> {
        let prefix = format!("tc.{}.inbox.", self.team);
        Name::parse(&untoken(subject.strip_prefix(&prefix)?)?).ok()
    }

    /// The KV bucket's stream.
    pub fn kv_stream(&self) -> String {
        format!("KV_{}", self.bucket())
    }

    /// The subject KV `key` is stored on in the bucket's stream (`*` parts allowed): what a
    /// watch of that key filters on.
    pub fn kv_subject(&self, key: &str) -> String {
        format!("$KV.{}.{key}", self.bucket())
    }
}

/// The durable consumer that is `reader`'s cursor of `inbox`: `c_`, the inbox's token, `_`,
/// the reader's token. A token is `[a-z0-9-]+`, or `_` and hex digits, so the name is a valid
/// consumer name (no `.`, `*`, `>` or spaces) and two pairs never give one name: after `c_`,
/// the inbox's token ends at the first `_` that does not start it.
pub fn consumer(inbox: &Name, reader: &str) -> String {
    format!("c_{}_{}", token(inbox.as_str()), token(reader))
}

pub const CONFIG: &str = "config";
pub const TASKS: &str = "tasks";

pub fn live(member: &Name) -> String {
    format!("live.{}", token(member.as_str()))
}

pub const LIVE_ALL: &str = "live.*";

/// A worker's heartbeat: no subscriber listens to `lease.*`, so renewals wake nobody.
pub fn lease(member: &Name) -> String {
    format!("lease.{}", token(member.as_str()))
}

/// Where a build before durable consumers kept `reader`'s cursor of `inbox` (a stream
/// sequence): read once, moved into the consumer, deleted.
pub fn cursor(inbox: &Name, reader: &str) -> String {
    format!("cursor.{}.{}", token(inbox.as_str()), token(reader))
}

pub fn answer(member: &Name) -> String {
    format!("answer.{}", token(member.as_str()))
}

pub fn lock(key: &str) -> String {
    format!("lock.{}", token(key))
}

pub fn loop_notice(a: &str, b: &str) -> String {
    format!("loop.{}.{}", token(a), token(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_valid_and_distinct() {
        assert_eq!(token("bob-2"), "bob-2");
        assert_eq!(token("#tasks"), "_237461736b73");
        assert_eq!(token(""), "_");
        assert_eq!(token("a.b"), "_612e62");
        assert_eq!(token("A"), "_41");
        for s in ["a.b", "*", ">", "a b", "é", "_x"] {
            let t = token(s);
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{t}"
            );
        }
        let k = Keys::new(&Name::parse("alpha").unwrap());
        let bob = Name::parse("bob").unwrap();
        assert_eq!(k.inbox(&bob), "tc.alpha.inbox.bob");
        assert_eq!(k.member_of("tc.alpha.inbox.bob"), Some(bob.clone()));
        assert_eq!(k.member_of("tc.beta.inbox.bob"), None);
        assert_eq!(cursor(&bob, "worker"), "cursor.bob.worker");
        assert_eq!(consumer(&bob, "worker"), "c_bob_worker");
        let odd = Name::parse("a.b").unwrap();
        assert_eq!(consumer(&odd, "#r"), "c__612e62__2372");
        for name in ["alpha", "Alpha", "a.b", "x_y"] {
            let n = Name::parse(name).unwrap();
            assert_eq!(team_of_stream(&Keys::new(&n).stream()), Some(n));
        }
        assert_eq!(team_of_stream("KV_tc_alpha"), None);
        assert_eq!(team_of_stream("tc__4"), None);
    }

    /// Every name's inbox subject gives the name back (`log -f` and `inboxes` read members
    /// from subjects), the long ones encoded in hex included.
    #[test]
    fn an_inbox_subject_gives_its_member_back() {
        let k = Keys::new(&Name::parse("alpha").unwrap());
        for name in [
            "Long_name_with_underscore_abcdefghijklmn",
            "A",
            "_x",
            "_41",
            "a.b",
            "bob",
        ] {
            let n = Name::parse(name).unwrap();
            assert_eq!(k.member_of(&k.inbox(&n)), Some(n), "{name}");
        }
        // Only what `token` makes is read back.
        for t in ["Bob", "_4", "_4A", "_62", "_zz", "a.b"] {
            assert_eq!(untoken(t), None, "{t}");
        }
    }

    proptest::proptest! {
        #[test]
        fn names_round_trip_through_tokens(name in "[A-Za-z0-9_][A-Za-z0-9._-]{0,63}") {
            let n = Name::parse(&name).unwrap();
            proptest::prop_assert_eq!(untoken(&token(&name)), Some(name.clone()));
            let k = Keys::new(&n);
            proptest::prop_assert_eq!(k.member_of(&k.inbox(&n)), Some(n.clone()));
            proptest::prop_assert_eq!(team_of_stream(&k.stream()), Some(n));
        }
    }
}
