//! Whether each member's worker is there, for views of the whole team (`status`, the board,
//! the console's table, shutdown --all): what the backends can tell for all members at once
//! is read once per view (one `list-panes -a` per tmux server), then each member is judged by
//! the same rule as a single-member check.

use super::tmux::{self, panes::Panes};
use super::{Liveness, for_member};
use crate::domain::{BackendType, LiveState, Member};

/// One reading of where the workers of some members run.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    tmux: Panes,
}

impl Snapshot {
    /// Read what `members` need: every pane of each tmux server they were spawned on.
    pub fn of<'a>(members: impl IntoIterator<Item = &'a Member>) -> Snapshot {
        let program = tmux::find_tmux().unwrap_or_else(|_| "tmux".into());
        Snapshot {
            tmux: Panes::read(&program, members),
        }
    }

    /// `member`'s liveness as `Backend::liveness` tells it, from this reading; a member
    /// whose server was not read is asked on its own.
    pub fn liveness(&self, member: &Member, live: Option<&LiveState>) -> Liveness {
        let read = match member.backend_type {
            Some(BackendType::Tmux) => self.tmux.liveness(member, live),
            _ => None,
        };
        read.unwrap_or_else(|| for_member(member).liveness(member, live))
    }

    /// Is `member`'s recorded pane still its own (`Panes::is_members_pane`)? `None` when this
    /// reading cannot tell (not a tmux member of this host, its server unreadable).
    pub fn is_members_pane(&self, member: &Member) -> Option<bool> {
        match member.backend_type {
            Some(BackendType::Tmux) => self.tmux.is_members_pane(member),
            _ => None,
        }
    }
}
