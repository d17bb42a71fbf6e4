//! Which host this process runs on, for stores that hosts share: the hostname with this
//! process's home (`proc::scope_to_home`). A member recorded with another host is looked at
//! through its heartbeat lease only: this host's processes and tmux panes say nothing about it,
//! and nothing here ends it.

use std::sync::OnceLock;

use crate::domain::{Host, LiveState, Member};

static NAME: OnceLock<String> = OnceLock::new();

/// This machine's hostname (`?` when it cannot be read).
fn hostname() -> &'static str {
    NAME.get_or_init(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "?".into())
    })
}

/// This host and home, as a member started here records it.
pub fn here(home: &std::path::Path, now: u64) -> Host {
    Host {
        name: hostname().to_string(),
        home: home.display().to_string(),
        key: super::proc::home_key(),
        since: now,
    }
}

/// Whether `host` is this host and home.
pub fn is_here(host: &Host) -> bool {
    host.name == hostname() && host.key == super::proc::home_key()
}

/// Where `member` runs when that is another host than this one; `None` when it is here (or
/// unrecorded: every member of a file store).
pub fn elsewhere(member: &Member) -> Option<&Host> {
    member.host.as_ref().filter(|h| !is_here(h))
}

/// Whether a worker of another host vouches, through its lease, that it runs now. A lease
/// longer than any heartbeat gives (four beats of at most 60 s) is not believed: a forged or
/// far-off clock cannot keep a dead member looking alive.
pub fn leased(live: &LiveState, now: u64) -> bool {
    const LONGEST: u64 = 4 * 60_000;
    live.lease_until
        .is_some_and(|until| now < until && until - now <= LONGEST)
}

/// `host` for a status column: its name, with the home when the name is this host's own (two
/// homes of one machine sharing a team).
pub fn label(host: &Host) -> String {
    use crate::domain::member::plain;
    if host.name == hostname() {
        format!("{}:{}", plain(&host.name), plain(&host.home))
    } else {
        plain(&host.name)
    }
}
