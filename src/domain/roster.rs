//! The team file read for a few of its members (`send`): the team's name, its deletion mark
//! and every member's name, each member parsed in full only when asked for. With 1,000
//! members the team file is about 400 KB; parsing all of it into `TeamConfig` (a dozen owned
//! strings per member) was most of a `send` (BENCHMARKS.md, "A thousand teammates"). Pure.

use std::ops::Range;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::member::{COLORS, Member, TeamConfig, next_color, unknown_member};
use super::name::Name;
use crate::error::Result;

/// See the module comment. Built from the team file's bytes (`parse`, `indexed`), or from a
/// `TeamConfig` a store has already read (`from`).
#[derive(Debug, Clone)]
pub struct Roster {
    /// The team file without its members: every field of the team itself.
    head: TeamConfig,
    names: Vec<Name>,
    /// Each member's `color`, in `names` order (`next_color`): the palette's own colours
    /// borrowed, not allocated for each of 1,000 members.
    colors: Vec<Color>,
    members: Members,
    /// Members parsed without their `host` (a file store: all run on this host).
    hostless: bool,
    /// Read through an index of the file (`indexed`): each member's text is exactly what a
    /// whole write gives for it (`texts`).
    indexed: bool,
    /// Only some members were read (`partial`): the ones asked for, with the first and last.
    partial: bool,
}

/// A member's colour.
pub type Color = std::borrow::Cow<'static, str>;

/// `color` as a `Color`: one of the palette's borrowed.
pub fn color(color: &str) -> Color {
    match COLORS.iter().find(|c| **c == color) {
        Some(c) => Color::Borrowed(c),
        None => Color::Owned(color.to_string()),
    }
}

#[derive(Debug, Clone)]
enum Members {
    /// The file's bytes, and where each member's object is in them (in `names` order).
    Text(Vec<u8>, Vec<Range<usize>>),
    Parsed(Vec<Member>),
}

/// What a roster scans of the team file: its required fields are `TeamConfig`'s, so a file
/// that is not a team file fails here as it does there.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    #[allow(dead_code)]
    name: Name,
    #[allow(dead_code)]
    created_at: u64,
    #[allow(dead_code)]
    lead_agent_id: IgnoredAny,
    #[serde(default, borrow)]
    members: Vec<&'a RawValue>,
}

/// A member's name, the rest of it skipped.
#[derive(Deserialize)]
struct MemberName {
    name: Name,
}

/// The `name` and `color` of a member's object (already checked to be JSON by the scan that
/// found it), read from the keys up to them only: our writer puts them second and fifth, so
/// the other 400-odd bytes of the member are not scanned again. Without a name there, or with
/// one that is not a valid name, the whole entry is parsed for serde's own error.
fn member_keys(raw: &RawValue) -> serde_json::Result<(Name, String)> {
    struct Keys<'s>(&'s mut Option<Name>, &'s mut Option<String>);
    impl<'de> serde::de::Visitor<'de> for Keys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a member object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match &*key {
                    "name" => *self.0 = Some(map.next_value()?),
                    "color" => *self.1 = Some(map.next_value()?),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                if self.0.is_some() && self.1.is_some() {
                    // Stop here: the caller takes these, not serde's complaint that the
                    // object was left before its end.
                    return Ok(());
                }
            }
            Ok(())
        }
    }
    let (mut name, mut color) = (None, None);
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let _ = serde::Deserializer::deserialize_map(&mut de, Keys(&mut name, &mut color));
    match name {
        Some(name) => Ok((name, color.unwrap_or_default())),
        None => serde_json::from_str::<MemberName>(raw.get()).map(|m| (m.name, String::new())),
    }
}

/// The team file's text without its members (the text before the first and after the
/// last, a team file with an empty `members`) parsed: the team's own fields.
fn head_of(bytes: &[u8], spans: &[Range<usize>]) -> serde_json::Result<TeamConfig> {
    match (spans.first(), spans.last()) {
        (Some(first), Some(last)) if first.start <= last.end && last.end <= bytes.len() => {
            serde_json::from_slice(&[&bytes[..first.start], &bytes[last.end..]].concat())
        }
        (None, None) => serde_json::from_slice(bytes),
        _ => Err(<serde_json::Error as serde::de::Error>::custom(
            "the index does not match the team file",
        )),
    }
}

impl Roster {
    /// The team file's bytes as a roster; the error is serde's, as `TeamConfig`'s would be.
    pub fn parse(bytes: Vec<u8>) -> serde_json::Result<Roster> {
        let (names, colors, spans) = {
            let head: Head<'_> = serde_json::from_slice(&bytes)?;
            let base = bytes.as_ptr() as usize;
            let mut names = Vec::with_capacity(head.members.len());
            let mut colors = Vec::with_capacity(head.members.len());
            let mut spans = Vec::with_capacity(head.members.len());
            for raw in head.members {
                let (name, color) = member_keys(raw)?;
                names.push(name);
                colors.push(self::color(&color));
                // The raw value borrows from `bytes`: its offset there.
                let start = raw.get().as_ptr() as usize - base;
                spans.push(start..start + raw.get().len());
            }
            (names, colors, spans)
        };
        Ok(Roster {
            head: head_of(&bytes, &spans)?,
            names,
            colors,
            members: Members::Text(bytes, spans),
            hostless: false,
            indexed: false,
            partial: false,
        })
    }

    /// The team file's bytes as a roster, each member's name, colour and object already
    /// known (the file store's index of a file it wrote, checked against these very bytes):
    /// only the text around the members is parsed. An error when that is not a team file's.
    pub fn indexed(
        bytes: Vec<u8>,
        names: Vec<Name>,
        colors: Vec<Color>,
        spans: Vec<Range<usize>>,
    ) -> serde_json::Result<Roster> {
        if names.len() != spans.len() || colors.len() != spans.len() {
            return Err(<serde_json::Error as serde::de::Error>::custom(
                "the index does not match the team file",
            ));
        }
        Ok(Roster {
            head: head_of(&bytes, &spans)?,
            names,
            colors,
            members: Members::Text(bytes, spans),
            hostless: false,
            indexed: true,
            partial: false,
        })
    }

    /// This roster, its members given without a `host` (`FsStore`: every member of a file
    /// store runs on this host, whatever the file says).
    #[must_use]
    pub fn without_hosts(mut self) -> Roster {
        self.hostless = true;
        self
    }

    /// This roster, marked as holding only some of the team's members, in the file's order
    /// (a store's `roster_with`): its `names`, `has` and `member` are about those only, and it
    /// gives no `texts` to write the file from.
    #[must_use]
    pub fn partial(mut self) -> Roster {
        self.partial = true;
        self
    }

    /// Whether each member's text names the member it is listed as (the name an index gave
    /// for it): a reader that trusted an index for where the members lie, and read only
    /// there, checks that the bytes it read are those members (a file edited by hand while
    /// its index was written would otherwise give another's text, or a name it no longer has).
    pub fn named_as_read(&self) -> bool {
        match &self.members {
            Members::Text(bytes, spans) => self.names.iter().zip(spans).all(|(name, span)| {
                bytes
                    .get(span.clone())
                    .and_then(|t| serde_json::from_slice::<&RawValue>(t).ok())
                    .and_then(|raw| member_keys(raw).ok())
                    .is_some_and(|(n, _)| n == *name)
            }),
            Members::Parsed(_) => true,
        }
    }

    /// Whether only some members were read (`partial`).
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// The team's name.
    pub fn team(&self) -> &Name {
        &self.head.name
    }

    /// The team file without its members: the team's own fields (`members` is empty).
    pub fn head(&self) -> &TeamConfig {
        &self.head
    }

    /// When the team was made (`createdAt`).
    pub fn created_at(&self) -> u64 {
        self.head.created_at
    }

    /// Every member's name, in the team file's order.
    pub fn names(&self) -> &[Name] {
        &self.names
    }

    /// Whether `name` is a member.
    pub fn has(&self, name: &str) -> bool {
        self.index(name).is_some()
    }

    /// The member named `name`, parsed in full; an error when its entry is damaged.
    pub fn member(&self, name: &str) -> Result<Option<Member>> {
        let Some(i) = self.index(name) else {
            return Ok(None);
        };
        let member = self.member_at(i, name)?;
        Ok(Some(match member {
            m if !self.hostless => m,
            mut m => {
                m.host = None;
                m
            }
        }))
    }

    fn member_at(&self, i: usize, name: &str) -> Result<Member> {
        match &self.members {
            Members::Parsed(all) => Ok(all[i].clone()),
            Members::Text(bytes, spans) => serde_json::from_slice(&bytes[spans[i].clone()])
                .map_err(|e| {
                    crate::error::Error::failed(format!(
                        "member {name} of team {} is damaged in the team file ({e})",
                        self.head.name
                    ))
                }),
        }
    }

    /// `name` if it is a member, or the error `TeamConfig::require` gives.
    pub fn require(&self, name: &str) -> Result<&Name> {
        match self.index(name) {
            Some(i) => Ok(&self.names[i]),
            None => Err(unknown_member(&self.head.name, self.names.iter(), name)),
        }
    }

    /// As `TeamConfig::refuse_if_deleting`.
    pub fn refuse_if_deleting(&self) -> Result<()> {
        self.head.refuse_if_deleting()
    }

    /// As `TeamConfig::next_color`.
    pub fn next_color(&self) -> &'static str {
        next_color(self.colors.iter().map(|c| c.as_ref()), self.names.len())
    }

    /// Each member's colour, in `names` order.
    pub fn colors(&self) -> &[Color] {
        &self.colors
    }

    /// The file's bytes and each member's text in them (in `names` order), when the roster
    /// was read through an index (`indexed`): each text is what a whole write gives.
    pub fn texts(&self) -> Option<(&[u8], &[Range<usize>])> {
        match &self.members {
            Members::Text(bytes, spans) if self.indexed && !self.partial => Some((bytes, spans)),
            _ => None,
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.as_str() == name)
    }
}

impl From<TeamConfig> for Roster {
    fn from(mut config: TeamConfig) -> Roster {
        let members = std::mem::take(&mut config.members);
        Roster {
            names: members.iter().map(|m| m.name.clone()).collect(),
            colors: members.iter().map(|m| color(&m.color)).collect(),
            members: Members::Parsed(members),
            head: config,
            hostless: false,
            indexed: false,
            partial: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Status;

    fn config() -> TeamConfig {
        let team = Name::parse("alpha").unwrap();
        let mut config: TeamConfig = serde_json::from_value(serde_json::json!({
            "name": "alpha", "createdAt": 1, "leadAgentId": "team-lead@alpha",
            "futureField": {"kept": true},
        }))
        .unwrap();
        config.members.push(Member::leader(&team, "/tmp".into(), 1));
        let mut bob = Member::leader(&team, "/tmp/\"quoted\" \u{e9}".into(), 2);
        bob.name = Name::parse("bob").unwrap();
        bob.agent_id = "bob@alpha".into();
        bob.status = Status::Idle;
        bob.pid = Some(42);
        bob.extra.insert("fromAnotherVersion".into(), 7.into());
        config.members.push(bob);
        config
    }

    #[test]
    fn a_roster_reads_what_the_team_config_reads() {
        let config = config();
        let bytes = serde_json::to_vec_pretty(&config).unwrap();
        for roster in [
            Roster::parse(bytes.clone()).unwrap(),
            Roster::from(config.clone()),
        ] {
            assert_eq!(roster.team().as_str(), "alpha");
            let names: Vec<&str> = roster.names().iter().map(|n| n.as_str()).collect();
            assert_eq!(names, ["team-lead", "bob"]);
            for m in &config.members {
                assert_eq!(roster.member(m.name.as_str()).unwrap().as_ref(), Some(m));
                assert!(roster.has(m.name.as_str()));
            }
            assert_eq!(roster.member("carol").unwrap(), None);
            assert_eq!(
                roster.require("carol").unwrap_err().to_string(),
                config.require("carol").unwrap_err().to_string()
            );
            assert!(roster.refuse_if_deleting().is_ok());
        }
        let mut deleting = config.clone();
        deleting.deleting = Some(5);
        let text = serde_json::to_vec(&deleting).unwrap();
        assert_eq!(
            Roster::parse(text)
                .unwrap()
                .refuse_if_deleting()
                .unwrap_err()
                .to_string(),
            deleting.refuse_if_deleting().unwrap_err().to_string()
        );
    }

    #[test]
    fn what_is_not_a_team_file_is_refused_as_team_config_refuses_it() {
        for bad in [
            &b""[..],
            b"null",
            b"{}",
            b"[]",
            br#"{"name":"alpha","createdAt":1}"#,
            br#"{"name":"alpha","createdAt":1,"leadAgentId":"x","members":[{"name":"../x"}]}"#,
            br#"{"name":"alpha","createdAt":1,"leadAgentId":"x","members":[{}]}"#,
            br#"{"name":"alpha","createdAt":1,"leadAgentId":"x","members":[1]}"#,
        ] {
            assert!(serde_json::from_slice::<TeamConfig>(bad).is_err());
            assert!(Roster::parse(bad.to_vec()).is_err(), "{bad:?}");
        }
        // A member entry damaged past its name is refused when it is asked for.
        let text = br#"{"name":"alpha","createdAt":1,"leadAgentId":"x","members":[{"name":"bob","pid":"x"}]}"#;
        let roster = Roster::parse(text.to_vec()).unwrap();
        assert!(roster.has("bob"));
        assert_eq!(roster.member("bob").unwrap_err().exit_code(), 1);
    }
}
