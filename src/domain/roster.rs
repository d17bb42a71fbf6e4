//! The team file read for a few of its members (`send`): the team's name, its deletion mark
//! and every member's name, each member parsed in full only when asked for. With 1,000
//! members the team file is about 400 KB; parsing all of it into `TeamConfig` (a dozen owned
//! strings per member) was most of a `send` (BENCHMARKS.md, "A thousand teammates"). Pure.

use std::ops::Range;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::member::{Member, TeamConfig, deleting_error, unknown_member};
use super::name::Name;
use crate::error::Result;

/// See the module comment. Built from the team file's bytes (`parse`), or from a `TeamConfig`
/// a store has already read (`from`).
#[derive(Debug, Clone)]
pub struct Roster {
    name: Name,
    deleting: bool,
    names: Vec<Name>,
    members: Members,
    /// Members parsed without their `host` (a file store: all run on this host).
    hostless: bool,
}

#[derive(Debug, Clone)]
enum Members {
    /// The file's bytes, and where each member's object is in them (in `names` order).
    Text(Vec<u8>, Vec<Range<usize>>),
    Parsed(Vec<Member>),
}

/// What a roster reads of the team file: its required fields are `TeamConfig`'s, so a file
/// that is not a team file fails here as it does there.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    name: Name,
    #[allow(dead_code)]
    created_at: IgnoredAny,
    #[allow(dead_code)]
    lead_agent_id: IgnoredAny,
    #[serde(default)]
    deleting: Option<u64>,
    #[serde(default, borrow)]
    members: Vec<&'a RawValue>,
}

/// A member's name, the rest of it skipped.
#[derive(Deserialize)]
struct MemberName {
    name: Name,
}

/// The `name` of a member's object (already checked to be JSON by the scan that found it),
/// read from the keys before it only: our writer puts it second, after `agentId`, so the
/// other 400-odd bytes of the member are not scanned again. Without a name there, or with
/// one that is not a valid name, the whole entry is parsed for serde's own error.
fn member_name(raw: &RawValue) -> serde_json::Result<Name> {
    struct Keys<'s>(&'s mut Option<Name>);
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
                if key == "name" {
                    *self.0 = Some(map.next_value()?);
                    // Stop here: the caller takes the name, not serde's complaint that the
                    // object was left before its end.
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut name = None;
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let _ = serde::Deserializer::deserialize_map(&mut de, Keys(&mut name));
    match name {
        Some(name) => Ok(name),
        None => serde_json::from_str::<MemberName>(raw.get()).map(|m| m.name),
    }
}

impl Roster {
    /// The team file's bytes as a roster; the error is serde's, as `TeamConfig`'s would be.
    pub fn parse(bytes: Vec<u8>) -> serde_json::Result<Roster> {
        let (name, deleting, names, spans) = {
            let head: Head<'_> = serde_json::from_slice(&bytes)?;
            let base = bytes.as_ptr() as usize;
            let mut names = Vec::with_capacity(head.members.len());
            let mut spans = Vec::with_capacity(head.members.len());
            for raw in head.members {
                names.push(member_name(raw)?);
                // The raw value borrows from `bytes`: its offset there.
                let start = raw.get().as_ptr() as usize - base;
                spans.push(start..start + raw.get().len());
            }
            (head.name, head.deleting.is_some(), names, spans)
        };
        Ok(Roster {
            name,
            deleting,
            names,
            members: Members::Text(bytes, spans),
            hostless: false,
        })
    }

    /// This roster, its members given without a `host` (`FsStore`: every member of a file
    /// store runs on this host, whatever the file says).
    #[must_use]
    pub fn without_hosts(mut self) -> Roster {
        self.hostless = true;
        self
    }

    /// The team's name.
    pub fn team(&self) -> &Name {
        &self.name
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
                        self.name
                    ))
                }),
        }
    }

    /// `name` if it is a member, or the error `TeamConfig::require` gives.
    pub fn require(&self, name: &str) -> Result<&Name> {
        match self.index(name) {
            Some(i) => Ok(&self.names[i]),
            None => Err(unknown_member(&self.name, self.names.iter(), name)),
        }
    }

    /// As `TeamConfig::refuse_if_deleting`.
    pub fn refuse_if_deleting(&self) -> Result<()> {
        if self.deleting {
            return Err(deleting_error(&self.name));
        }
        Ok(())
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.as_str() == name)
    }
}

impl From<TeamConfig> for Roster {
    fn from(config: TeamConfig) -> Roster {
        Roster {
            deleting: config.deleting.is_some(),
            names: config.members.iter().map(|m| m.name.clone()).collect(),
            members: Members::Parsed(config.members),
            name: config.name,
            hostless: false,
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
