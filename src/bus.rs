//! Sending: check a message against the rules and the team's members, then append it to each
//! recipient's inbox (`*` fans out to every member but the sender).

use crate::domain::{Envelope, Name, TeamConfig};
use crate::error::{Error, Result};
use crate::store::Store;

/// Validate `env` and append it to its recipients' inboxes; returns who got it.
pub fn deliver(store: &dyn Store, config: &TeamConfig, env: &Envelope) -> Result<Vec<Name>> {
    let recipients = recipients(config, env)?;
    for r in &recipients {
        store.append(r, env)?;
    }
    Ok(recipients)
}

/// Who `env` goes to, after every check; nothing is written.
pub fn recipients(config: &TeamConfig, env: &Envelope) -> Result<Vec<Name>> {
    env.validate()?;
    if config.member(&env.from).is_none() {
        return Err(Error::bad(format!(
            "unknown sender {:?}: not a member of team {} (set --as or TEAMCTL_AGENT_NAME to a member)",
            env.from, config.name
        )));
    }
    if env.to == "*" {
        let all: Vec<Name> = config
            .members
            .iter()
            .filter(|m| m.name.as_str() != env.from)
            .map(|m| m.name.clone())
            .collect();
        if all.is_empty() {
            return Err(Error::bad(format!(
                "team {} has nobody else to broadcast to; spawn a teammate first",
                config.name
            )));
        }
        Ok(all)
    } else {
        Ok(vec![config.require(&env.to)?.name.clone()])
    }
}
