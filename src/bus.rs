//! Sending: check a message against the rules and the team's members, then append it to each
//! recipient's inbox (`*` fans out to every member but the sender).

use crate::domain::name::AgentId;
use crate::domain::{Envelope, LEADER, Name, Roster, TeamConfig};
use crate::error::{Error, Result};
use crate::store::{SharedStore, Store};

/// Deliver `env` (plain text from another team: `from` is the sender's agent id) to `to`, a
/// member of another team kept where `store`'s team is (the same home, the same server). That
/// team must exist, not be being deleted, and have the member; nothing is written otherwise.
/// Returns the other team's store.
pub fn across(store: &dyn Store, to: &AgentId, env: &Envelope) -> Result<SharedStore> {
    env.validate()?;
    if AgentId::parse(&env.from, "sender")?.is_none() {
        return Err(Error::bad(format!(
            "a message to another team names its sender by agent id (NAME@TEAM), not {:?}",
            env.from
        )));
    }
    let other = store.sibling(&to.team)?;
    {
        let _shared = other.hold_shared()?;
        let config = other.load()?;
        config.refuse_if_deleting()?;
        let member = config.require(to.name.as_str())?;
        other.append(&member.name, env)?;
    }
    Ok(other)
}

/// Validate `env` and append it to its recipients' inboxes; returns who got it.
pub fn deliver(store: &dyn Store, config: &TeamConfig, env: &Envelope) -> Result<Vec<Name>> {
    append_all(store, recipients(config, env)?, env)
}

/// `deliver`, the members read from a roster (`send`).
pub fn deliver_in(store: &dyn Store, roster: &Roster, env: &Envelope) -> Result<Vec<Name>> {
    append_all(store, recipients_in(roster, env)?, env)
}

fn append_all(store: &dyn Store, recipients: Vec<Name>, env: &Envelope) -> Result<Vec<Name>> {
    for r in &recipients {
        store.append(r, env)?;
    }
    Ok(recipients)
}

/// Deliver a teammate's own mail to the leader without reading the member list: the leader
/// is a member of every team, and the sender is the worker itself, checked when it started.
/// Its workers' replies and idle notifications made every worker read the whole team file
/// again after each change to it (200 KB with 300 members, each spawn changes it twice).
/// Only that the team still exists is checked, so a deleted team is not made again.
/// `None` when `env` is not such mail (the caller takes `deliver`).
pub fn to_leader(store: &dyn Store, me: &Name, env: &Envelope) -> Option<Result<Vec<Name>>> {
    if env.to != LEADER || env.from != me.as_str() || me.is_leader() {
        return None;
    }
    store.stamp()?;
    Some(
        env.validate()
            .and_then(|()| store.append(&Name::leader(), env))
            .map(|()| vec![Name::leader()]),
    )
}

/// Who `env` goes to, after every check; nothing is written.
pub fn recipients(config: &TeamConfig, env: &Envelope) -> Result<Vec<Name>> {
    recipients_among(&config.name, || config.members.iter().map(|m| &m.name), env)
}

/// `recipients`, the members read from a roster (`send`).
pub fn recipients_in(roster: &Roster, env: &Envelope) -> Result<Vec<Name>> {
    recipients_among(roster.team(), || roster.names().iter(), env)
}

/// `recipients` among the members `names` gives (in the team file's order) of `team`.
fn recipients_among<'a, I: Iterator<Item = &'a Name>>(
    team: &Name,
    names: impl Fn() -> I,
    env: &Envelope,
) -> Result<Vec<Name>> {
    env.validate()?;
    if !names().any(|n| n.as_str() == env.from) {
        return Err(Error::bad(format!(
            "unknown sender {:?}: not a member of team {team} (set --as or TEAMCTL_AGENT_NAME to a member)",
            env.from
        )));
    }
    if env.to == "*" {
        let all: Vec<Name> = names()
            .filter(|n| n.as_str() != env.from)
            .cloned()
            .collect();
        if all.is_empty() {
            return Err(Error::bad(format!(
                "team {team} has nobody else to broadcast to; spawn a teammate first"
            )));
        }
        Ok(all)
    } else {
        match names().find(|n| n.as_str() == env.to) {
            Some(n) => Ok(vec![n.clone()]),
            None => Err(crate::domain::member::unknown_member(
                team,
                names(),
                &env.to,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Body;
    use crate::store::Home;

    #[test]
    fn a_workers_own_mail_to_the_leader_skips_the_member_list_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("home"));
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let bob = Name::teammate("bob").unwrap();
        let mail = |from: &str, to: &str| Envelope::new(from, to, Body::message("done", None));
        // Not a member (the list is not read), yet it is the worker's own mail: delivered.
        let done = to_leader(&*store, &bob, &mail("bob", LEADER)).expect("taken");
        assert_eq!(done.unwrap(), vec![Name::leader()]);
        assert_eq!(
            store
                .read(&Name::leader(), crate::store::Position::START, 10)
                .unwrap()
                .len(),
            1
        );
        // Anything else takes the full path.
        assert!(to_leader(&*store, &bob, &mail("carol", LEADER)).is_none());
        assert!(to_leader(&*store, &bob, &mail("bob", "carol")).is_none());
        assert!(to_leader(&*store, &Name::leader(), &mail(LEADER, LEADER)).is_none());
        // An invalid message is refused, not written.
        let mut bad = mail("bob", LEADER);
        bad.id.clear();
        assert!(to_leader(&*store, &bob, &bad).unwrap().is_err());
        // A deleted team is not made again.
        std::fs::remove_dir_all(store.local_dir()).unwrap();
        assert!(to_leader(&*store, &bob, &mail("bob", LEADER)).is_none());
        assert!(!store.local_dir().exists());
    }
}
