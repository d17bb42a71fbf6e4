//! The `tmux` backend (SPEC section 8): teammates in panes. Placeholder until the tmux work
//! lands: it reports itself unavailable so `--backend auto` uses processes.

use std::time::Duration;

use super::{Backend, Launch, Liveness, Placement};
use crate::domain::{BackendType, LiveState, Member};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default)]
pub struct TmuxBackend {
    pub socket: Option<String>,
}

impl TmuxBackend {
    pub fn from_env() -> Result<TmuxBackend> {
        Err(Error::failed(
            "the tmux backend is not available in this build; use --backend process",
        ))
    }

    pub fn for_member(member: &Member) -> TmuxBackend {
        TmuxBackend {
            socket: member.tmux_socket.clone(),
        }
    }
}

impl Backend for TmuxBackend {
    fn kind(&self) -> BackendType {
        BackendType::Tmux
    }

    fn spawn(&self, _launch: &Launch) -> Result<Placement> {
        Err(Error::failed(
            "the tmux backend is not available in this build",
        ))
    }

    fn liveness(&self, _member: &Member, _live: Option<&LiveState>) -> Liveness {
        Liveness::Gone
    }

    fn terminate(&self, member: &Member, live: Option<&LiveState>, grace: Duration) -> Result<()> {
        super::process::end_turn(member, live, grace);
        Ok(())
    }
}

/// Remove what teamctl made in tmux for a team being deleted (its detached session).
pub fn forget_team(_config: &crate::domain::TeamConfig) {}
