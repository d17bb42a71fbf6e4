//! A member's agent session: its id (recorded in the team file by `spawn`, made and recorded
//! here for a member spawned by an older teamctl), and its renewal when the agent can neither
//! continue nor start the recorded one.

use super::Worker;
use super::turn::TurnSpec;
use crate::agent;
use crate::domain::env;

impl Worker {
    /// The member's session id (recorded in the team file by `spawn`; made and recorded
    /// here for a member spawned by an older teamctl).
    pub(super) fn session_id(&mut self) -> String {
        // Only a UUID goes on an agent's command line: anything else (a forged or damaged
        // record) could be read there as a flag.
        if let Some(id) = &self.member.session_id
            && uuid::Uuid::parse_str(id).is_ok()
        {
            return id.clone();
        }
        self.record_session(&|s| s.is_none_or(|s| uuid::Uuid::parse_str(s).is_err()))
    }

    /// A new session id for the member in place of `old`, which its agent cannot use.
    fn new_session(&mut self, old: &str) -> String {
        self.record_session(&|s| s.is_none_or(|s| s == old || uuid::Uuid::parse_str(s).is_err()))
    }

    /// Make a session id and record it as the member's where `stale` says of the recorded one;
    /// the member's id as recorded then.
    fn record_session(&mut self, stale: &dyn Fn(Option<&str>) -> bool) -> String {
        let id = agent::new_session_id();
        let name = self.name.clone();
        let recorded = self.store.update(&mut |cfg| {
            if let Some(m) = cfg.member_mut(name.as_str())
                && stale(m.session_id.as_deref())
            {
                m.session_id = Some(id.clone());
            }
            Ok(())
        });
        let id = recorded
            .ok()
            .and_then(|cfg| cfg.member(name.as_str()).and_then(|m| m.session_id.clone()))
            .filter(|id| uuid::Uuid::parse_str(id).is_ok())
            .unwrap_or(id);
        self.member.session_id = Some(id.clone());
        // On a store that hosts share, this host's own copy of what the member runs holds it.
        let _ = crate::store::spec::save(&*self.store, &self.member);
        self.live.session = Some(id.clone());
        id
    }

    /// A new session in place of `old` for the turn `spec` is running, whose agent refused
    /// `old` both ways: the agent keeps a record of the id that it can neither continue nor
    /// start again (Gemini CLI, after a first turn that failed at the model), so nothing of it
    /// can be resumed. A new session, or every later turn fails the same. The turn becomes the
    /// new session's first; its new id.
    pub(super) fn renew_session(&mut self, spec: &mut TurnSpec, old: &str) -> String {
        let fresh = self.new_session(old);
        self.sink.note(&format!(
            "session {old} can be neither continued nor started; running the turn as new session {fresh}"
        ));
        self.live.session_turns = 1;
        for (k, v) in &mut spec.env {
            if k == env::SESSION_ID {
                v.clone_from(&fresh);
            } else if k == env::TURN {
                *v = "1".into();
            }
        }
        fresh
    }
}
