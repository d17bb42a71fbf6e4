//! The console's status line: each teammate's state, worked out again only for members whose
//! team entry or live state (compared as stored, before parsing) changed since the last look, and for everyone at most once every
//! `RECHECK` (a worker that dies writes nothing, so only a fresh look at its process tells).
//! Working out every member's state on every burst of events (live state, process checks)
//! made the console the busiest process while hundreds of teammates were spawned.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::domain::{LiveState, Member, Name, Status, TeamConfig};
use crate::leader;
use crate::store::Store;

/// How long a state seen from a worker's own word is taken as current without looking again.
pub const RECHECK: Duration = Duration::from_secs(2);

/// Above this many teammates the line counts states instead of naming everyone.
pub const NAMED: usize = 12;

/// One teammate as the status line shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mate {
    pub name: Name,
    pub color: String,
    pub status: Status,
    /// The first line of the current turn's summary.
    pub turn: Option<String>,
    /// Why its running worker cannot watch its inbox, so reads no mail (`inboxProblem`).
    pub inbox_problem: Option<String>,
    /// Its plan command runs (`planning` in its live state).
    pub planning: bool,
}

struct Seen {
    member: Member,
    /// The live state as read.
    live: Option<LiveState>,
    mate: Mate,
}

/// The states last worked out, per teammate.
#[derive(Default)]
pub struct States {
    seen: HashMap<Name, Seen>,
    checked: Option<Instant>,
}

impl States {
    /// Every teammate in team order, each looked at again only when needed (see the module).
    pub fn look(&mut self, store: &dyn Store, config: &TeamConfig) -> Vec<Mate> {
        if self.checked.is_none_or(|t| t.elapsed() >= RECHECK) {
            self.seen.clear();
            self.checked = Some(Instant::now());
        }
        let mates: Vec<&Member> = config.teammates().collect();
        // By name, not by scanning the team for each one seen: a million comparisons per
        // look with 1,000 teammates, a tenth of the console's time while they were spawned.
        let names: std::collections::HashSet<&Name> = mates.iter().map(|m| &m.name).collect();
        self.seen.retain(|n, _| names.contains(n));
        mates
            .into_iter()
            .map(|m| {
                let live = store.live(&m.name).ok().flatten();
                match self.seen.get(&m.name) {
                    Some(s) if s.live == live && s.member == *m && live.is_some() => s.mate.clone(),
                    _ => {
                        let mut live = live;
                        let mut mate = look_at(m, live.as_ref());
                        // Read before the process check, the live state can predate a graceful
                        // end (written `stopped`, then exited): read again, it tells.
                        if mate.status == Status::Dead {
                            live = store.live(&m.name).ok().flatten();
                            mate = look_at(m, live.as_ref());
                        }
                        self.seen.insert(
                            m.name.clone(),
                            Seen {
                                member: m.clone(),
                                live,
                                mate: mate.clone(),
                            },
                        );
                        mate
                    }
                }
            })
            .collect()
    }
}

fn look_at(m: &Member, live: Option<&LiveState>) -> Mate {
    // As `status` shows it: one asked to stop is `shutdown_pending` until it answers.
    let status = leader::shown_status(m, leader::seen_status(m, live));
    // The live state of the worker recorded, as `status` rows read it.
    let fresh = live.filter(|l| m.pid.is_none_or(|p| p == l.pid));
    let turn = fresh
        .and_then(|l| l.current_turn.as_ref())
        .map(|t| t.summary.lines().next().unwrap_or("").to_string());
    let inbox_problem = fresh
        .and_then(|l| l.inbox_problem.clone())
        .filter(|_| status.is_running());
    Mate {
        name: m.name.clone(),
        color: m.color.clone(),
        status,
        turn,
        inbox_problem,
        planning: fresh.is_some_and(|l| l.planning_while(status).is_some()),
    }
}

/// How many teammates are in each state, in the order the states first appear:
/// `[(idle, 298), (working, 2)]`.
pub fn counts(mates: &[Mate]) -> Vec<(Status, usize)> {
    let mut out: Vec<(Status, usize)> = Vec::new();
    for m in mates {
        match out.iter_mut().find(|(s, _)| *s == m.status) {
            Some((_, n)) => *n += 1,
            None => out.push((m.status, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mate(name: &str, status: Status) -> Mate {
        Mate {
            name: Name::teammate(name).unwrap(),
            color: "blue".into(),
            status,
            turn: None,
            inbox_problem: None,
            planning: false,
        }
    }

    #[test]
    fn counts_keep_first_seen_order() {
        let mates = [
            mate("a", Status::Idle),
            mate("b", Status::Working),
            mate("c", Status::Idle),
            mate("d", Status::Dead),
        ];
        assert_eq!(
            counts(&mates),
            vec![(Status::Idle, 2), (Status::Working, 1), (Status::Dead, 1)]
        );
        assert!(counts(&[]).is_empty());
    }
}
