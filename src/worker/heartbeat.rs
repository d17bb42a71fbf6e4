//! A worker's heartbeat on a store that hosts share (NATS): every beat it renews the worker's
//! lease, which other hosts judge it by (`leader::effective_status`), and it ends the worker
//! when its member has been started on another host since (taken over there after this host
//! went quiet): one worker per inbox, whatever the network did meanwhile. It also ends the
//! worker when another host marked its member stopped (`kill`) or deleted the team. A timer
//! thread of its own, so a long turn never starves it.

use std::time::Duration;

use crate::domain::env;
use crate::domain::live::{HEARTBEAT, LEASE};
use crate::domain::time::now_ms;
use crate::domain::{BackendType, Host, Member, Name, Status, TeamConfig};
use crate::store::{SharedStore, Store};

/// How often the lease is renewed and how long each renewal lasts: `TEAMCTL_HEARTBEAT_MS`
/// (100 ms to 60 s) or the default, the lease four beats long.
pub fn period() -> (Duration, Duration) {
    let every = std::env::var(env::HEARTBEAT_MS)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms.clamp(100, 60_000)));
    match every {
        Some(every) => (every, every * 4),
        None => (HEARTBEAT, LEASE),
    }
}

/// What this worker was started as, checked on every beat and before every turn: the team
/// it joined (its creation time tells a team deleted and made again under the same name),
/// and the start of its member that it is (the host record that start wrote).
#[derive(Debug, Clone)]
pub struct Owner {
    pub pid: u32,
    pub team_created: u64,
    pub host: Option<Host>,
}

/// Renew the lease of `member`'s worker (this process) every `every` for `lease`, until the
/// process ends. `pane` is the worker's own tmux pane, if it has one.
pub fn start(
    store: SharedStore,
    member: Member,
    owner: Owner,
    pane: Option<String>,
    every: Duration,
    lease: Duration,
) {
    let spawned = std::thread::Builder::new()
        .name("heartbeat".into())
        .spawn(move || {
            // Seen deleted on two beats in a row: one answer in a cluster's leader election
            // is not taken for a deletion.
            let mut deleted = false;
            loop {
                std::thread::sleep(every);
                // Looked at before renewing: a worker back from a pause whose member moved
                // never vouches for itself again.
                let gone = store.deleted().unwrap_or(false);
                let why = if gone && deleted {
                    Some("the team was deleted")
                } else {
                    lost(&*store, &member.name, &owner)
                };
                deleted = gone;
                if let Some(why) = why {
                    end_self(&member, pane.as_deref(), why);
                    return;
                }
                let until = now_ms() + lease.as_millis() as u64;
                let _ = store.renew_lease(&member.name, owner.pid, until);
            }
        });
    if let Err(e) = spawned {
        crate::errln!("teamctl worker: cannot start the heartbeat: {e}");
    }
}

/// Why this worker must end, if it must: the team was deleted and made again, its member left
/// the team, was started again since (on another host, or here by a `resume` that took it for
/// dead), or was marked stopped from another host (`kill`) while naming this worker. A team
/// file that cannot be read (the server away) says nothing: the worker goes on.
pub fn lost(store: &dyn Store, name: &Name, owner: &Owner) -> Option<&'static str> {
    lost_in(&store.load().ok()?, name, owner)
}

/// `lost`, judged from `config` as the caller read it (the worker, through its cache).
pub fn lost_in(config: &TeamConfig, name: &Name, owner: &Owner) -> Option<&'static str> {
    if config.created_at != owner.team_created {
        return Some("its team was deleted and made again");
    }
    let Some(m) = config.member(name.as_str()) else {
        return Some("it was removed from the team");
    };
    if crate::backend::host::elsewhere(m).is_some() {
        return Some("it was started on another host since");
    }
    if m.host != owner.host {
        return Some("it was started again since");
    }
    (m.status == Status::Stopped && m.pid == Some(owner.pid)).then_some("it was stopped")
}

/// End this worker the way its own host's leader would: its pane closed (tag checked), and
/// SIGTERM, the worker's own exit path (it ends a running turn first).
fn end_self(member: &Member, pane: Option<&str>, why: &str) {
    crate::errln!("teamctl worker: {why}; exiting");
    if let Some(pane) = pane
        && member.backend_type == Some(BackendType::Tmux)
    {
        // The pane's process is this worker: its own pid and start time.
        let me = std::process::id();
        let known = crate::backend::tmux::Known {
            started: crate::backend::proc::start_time(me)
                .map(|start| crate::backend::tmux::argv::Started { pid: me, start }),
            ..crate::backend::tmux::Known::of(member, None)
        };
        let _ = crate::backend::tmux::TmuxBackend::for_member(member).close_tagged(
            pane,
            &member.agent_id,
            &known,
        );
    }
    let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGTERM);
}
