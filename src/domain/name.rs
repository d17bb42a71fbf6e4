//! Team and member names (SPEC section 2): validated once, then carried as `Name`.

use std::fmt;

use compact_str::CompactString;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The reserved name of the leader.
pub const LEADER: &str = "team-lead";

/// The longest name accepted.
pub const MAX_LEN: usize = 64;

/// A validated team or member name: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with
/// `.` or `-`. Such a name can never escape a directory or reach a shell unquoted. Kept
/// inline up to 24 bytes (`CompactString`): reading a 1,000-member team's roster, as every
/// `send` does, allocates no name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Name(CompactString);

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Debug shows the quoted name (`"alpha"`), as `{:?}` in user-facing messages expects; a
/// derived `Name("alpha")` leaked into error lines.
impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl Name {
    /// Check a name; `what` ("team", "member") makes the error message precise.
    pub fn parse_as(s: &str, what: &str) -> Result<Name> {
        match problem(s) {
            None => Ok(Name(CompactString::from(s))),
            Some(why) => {
                // A word of any length may be given: quoted in part (attacker QA 42: 100 KB
                // echoed on one line).
                let shown: String = s.chars().take(2 * MAX_LEN).collect();
                let cut = if shown.len() < s.len() { "..." } else { "" };
                Err(Error::bad(format!(
                    "invalid {what}{}name {shown:?}{cut}: {why} (use 1 to {MAX_LEN} of A-Z a-z 0-9 . _ -, not starting with . or -)",
                    if what.is_empty() { "" } else { " " }
                )))
            }
        }
    }

    pub fn parse(s: &str) -> Result<Name> {
        Name::parse_as(s, "")
    }

    /// `bytes` as a name if they are a valid one: `parse` without making an error's text,
    /// for what teamctl wrote itself and reads back by the thousand (the team index).
    pub fn from_bytes(bytes: &[u8]) -> Option<Name> {
        let s = std::str::from_utf8(bytes).ok()?;
        problem(s).is_none().then(|| Name(CompactString::from(s)))
    }

    /// A teammate name: a valid name that is not the leader's.
    pub fn teammate(s: &str) -> Result<Name> {
        let name = Name::parse_as(s, "member")?;
        if name.is_leader() {
            return Err(Error::bad(format!(
                "{LEADER:?} is the leader's name, not a teammate's: use another name"
            )));
        }
        Ok(name)
    }

    /// A teammate to end (`verb`: "shut down", "kill"): the leader's own name is refused in
    /// words that fit (`teammate`'s "use another name" is for a new teammate's name).
    pub fn teammate_to_end(s: &str, verb: &str) -> Result<Name> {
        if s == LEADER {
            // What the leader may have meant: a turn to end is a teammate's (new-user QA 42:
            // `interrupt team-lead` pointed at `shutdown --all` and `delete`).
            let instead = if verb == "interrupt" {
                "`teamctl interrupt NAME` ends a teammate's turn (`teamctl status` shows who is working)"
            } else {
                "`teamctl shutdown --all` stops every teammate and keeps the team, `teamctl delete` ends the whole team"
            };
            return Err(Error::bad(format!(
                "{LEADER:?} is the leader, you, not a teammate to {verb}: {instead}"
            )));
        }
        Name::teammate(s)
    }

    pub fn leader() -> Name {
        Name(CompactString::const_new(LEADER))
    }

    pub fn is_leader(&self) -> bool {
        self.0 == LEADER
    }

    /// Whether two names would be told apart by nobody reading a board: the same but for
    /// case, `I`/`l`/`1`, `O`/`0`, or the separators `-`, `_`, `.` (`team-Iead`, `team_lead`,
    /// `teamlead` and `team-lead.` all look like `team-lead`; `b0b` like `bob`).
    pub fn looks_like(&self, other: &Name) -> bool {
        // Compared as they go (`spawn` compares a new name with every member's).
        skeleton(&self.0).eq(skeleton(&other.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The deterministic agent id `NAME@TEAM`.
    pub fn agent_id(&self, team: &Name) -> String {
        format!("{}@{}", self.0, team.0)
    }
}

/// A member of a team named by its agent id `NAME@TEAM` (an address across teams).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentId {
    pub name: Name,
    pub team: Name,
}

impl AgentId {
    /// `None` when `s` has no `@` (a plain name); an error when it has one but is not
    /// exactly `NAME@TEAM` with two valid names. `what` names it in the error.
    pub fn parse(s: &str, what: &str) -> Result<Option<AgentId>> {
        let Some((name, team)) = s.split_once('@') else {
            return Ok(None);
        };
        if team.contains('@') {
            return Err(Error::bad(format!(
                "invalid {what} {s:?}: an address is NAME@TEAM, with one @"
            )));
        }
        Ok(Some(AgentId {
            name: Name::parse_as(name, what)?,
            team: Name::parse_as(team, &format!("{what}'s team"))?,
        }))
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.team)
    }
}

fn problem(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        return Some("it is empty");
    }
    if s.len() > MAX_LEN {
        return Some("it is longer than 64 characters");
    }
    if s.starts_with('.') || s.starts_with('-') {
        return Some("it starts with . or -");
    }
    if s == "*" {
        return Some("* means everyone and cannot be a name");
    }
    // Byte by byte: any byte of a character outside ASCII is outside the set too.
    if s.bytes()
        .any(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')))
    {
        return Some("it contains a character outside A-Z a-z 0-9 . _ -");
    }
    None
}

impl TryFrom<String> for Name {
    type Error = Error;
    fn try_from(s: String) -> Result<Name> {
        Name::parse(&s)
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0.into_string()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A name with what a reader cannot tell apart folded away (`Name::looks_like`).
fn skeleton(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .map(|c| match c {
            // A capital I, a one and an l; a zero and an o. (Not a small i: `ai` is no `al`.)
            'I' | '1' => 'l',
            '0' => 'o',
            c => c.to_ascii_lowercase(),
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bad_name_is_named_in_one_spaced_phrase() {
        let e = Name::parse("-x").unwrap_err().to_string();
        assert!(e.starts_with("invalid name \"-x\""), "{e}");
        let e = Name::parse_as("-x", "team").unwrap_err().to_string();
        assert!(e.starts_with("invalid team name \"-x\""), "{e}");
    }

    #[test]
    fn agent_ids_are_name_at_team_or_nothing() {
        assert_eq!(AgentId::parse("bob", "recipient").unwrap(), None);
        let id = AgentId::parse("bob@t2", "recipient").unwrap().unwrap();
        assert_eq!((id.name.as_str(), id.team.as_str()), ("bob", "t2"));
        assert_eq!(id.to_string(), "bob@t2");
        for bad in ["@t2", "bob@", "bob@t2@t3", "bob@../x", "../x@t2", "bob@t 2"] {
            assert!(AgentId::parse(bad, "recipient").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_sender_of_another_team_sends_plain_text_only() {
        use crate::domain::{Body, Envelope};
        let ok = Envelope::new("bob@t2", "alice", Body::message("hi", None));
        assert!(ok.validate().is_ok());
        let bad = Envelope::new(
            "team-lead@t2",
            "alice",
            Body::ShutdownRequest {
                request_id: "r".into(),
                reason: Some("x".into()),
            },
        );
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("plain text only"), "{err}");
        assert!(
            Envelope::new("a@b@c", "alice", Body::message("hi", None))
                .validate()
                .is_err()
        );
    }

    use super::*;

    #[test]
    fn look_alikes() {
        let n = |s: &str| Name::parse(s).unwrap();
        for (a, b) in [
            ("team-lead", "team-Iead"),
            ("team-lead", "team_lead"),
            ("team-lead", "teamlead"),
            ("team-lead", "team-lead."),
            ("team-lead", "Team-Lead"),
            ("bob", "b0b"),
            ("bob", "bo.b"),
            ("bob", "Bob"),
            ("w1", "wl"),
        ] {
            assert!(n(a).looks_like(&n(b)), "{a} {b}");
        }
        for (a, b) in [
            ("ai", "al"),
            ("bob", "rob"),
            ("w1", "w2"),
            ("coder", "coders"),
        ] {
            assert!(!n(a).looks_like(&n(b)), "{a} {b}");
        }
    }

    #[test]
    fn name_table() {
        let good = [
            "a",
            "researcher",
            "A.b_c-d",
            "x1",
            "team-lead",
            "_x",
            &"a".repeat(64),
        ];
        for s in good {
            assert!(Name::parse(s).is_ok(), "{s:?} should be accepted");
        }
        let long = "a".repeat(65);
        let bad = [
            "",
            ".hidden",
            "-flag",
            "a/b",
            "../x",
            "..",
            "a@b",
            "a:b",
            "*",
            "a b",
            "tab\t",
            "nl\n",
            "nul\0",
            "é",
            "a*",
            "$(x)",
            ";rm",
            long.as_str(),
        ];
        for s in bad {
            let err = Name::parse(s).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{s:?}");
        }
    }

    #[test]
    fn leader_is_reserved_for_teammates() {
        assert!(Name::teammate("team-lead").is_err());
        assert!(Name::teammate("bob").is_ok());
        assert!(Name::leader().is_leader());
    }

    #[test]
    fn agent_id_is_deterministic() {
        let team = Name::parse("alpha").unwrap();
        assert_eq!(Name::parse("bob").unwrap().agent_id(&team), "bob@alpha");
    }

    #[test]
    fn serde_rejects_bad_names() {
        assert!(serde_json::from_str::<Name>("\"a/b\"").is_err());
        assert_eq!(
            serde_json::from_str::<Name>("\"ok\"").unwrap().as_str(),
            "ok"
        );
    }
}
