//! `teamctl wait NAME...|--all`: block until each is idle with no unread mail, or stopped. Woken by
//! file events (live state, team file, inboxes); a dead worker writes no event, so liveness is
//! re-checked once a second as well. A teammate awaiting plan approval is waiting on the
//! leader, as an idle one is: it counts as settled, and `wait` says it awaits approval.

use std::time::{Duration, Instant};

use crate::cli::WaitArgs;
use crate::context::Ctx;
use crate::domain::{Name, Status};
use crate::error::{Error, Result};
use crate::leader;
use crate::store::{SyncBell, Topic};

pub fn run(ctx: &Ctx, args: &WaitArgs) -> Result<()> {
    let store = ctx.store()?;
    let config = store.load()?;
    let mut names = Vec::new();
    for n in &args.names {
        let name = Name::teammate(n)?;
        config.require(name.as_str())?;
        names.push(name);
    }
    if args.all {
        names = config.teammates().map(|m| m.name.clone()).collect();
    }
    ctx.reconcile(&*store)?;
    let bell = SyncBell::default();
    let mut topics = vec![Topic::Live, Topic::Team];
    topics.extend(names.iter().cloned().map(Topic::Inbox));
    let _sub = store.subscribe_brief(&topics, bell.bell())?;
    let deadline = crate::domain::time::deadline_after(Duration::from_secs(args.timeout));
    // What each teammate waits on the user for (`leader::waits_on_user`), last said on stderr.
    let mut said: std::collections::HashMap<Name, String> = std::collections::HashMap::new();
    loop {
        let config = store.load()?;
        let mut pending = Vec::new();
        let mut dead = Vec::new();
        let mut settled_as = Vec::new();
        let mut approving = Vec::new();
        // What those not settled wait on the user for, said after them in the timeout.
        let mut waits = Vec::new();
        let seen =
            crate::backend::Snapshot::of(names.iter().filter_map(|n| config.member(n.as_str())));
        // Stopped processes looked for once this round, when a turn runs (`StoppedGroups`).
        let stopped = leader::StoppedGroups::default();
        for name in &names {
            let member = config.require(name.as_str())?;
            let live = store.live(name)?;
            let status = leader::effective_status_with(&*store, member, live.as_ref(), &seen);
            let mut waits_on_user = None;
            let settled = match status {
                Status::Idle => {
                    let settled = leader::unread(&*store, name, crate::worker::READER) == 0;
                    if !settled {
                        waits_on_user = live.as_ref().and_then(|l| leader::waits_on_user(name, l));
                    }
                    settled
                }
                Status::Working => {
                    waits_on_user = live.as_ref().and_then(|l| leader::waits_on_user(name, l));
                    false
                }
                Status::Stopped => true,
                Status::AwaitingPlanApproval => {
                    approving.push(name.to_string());
                    true
                }
                Status::Dead => {
                    let in_turn =
                        leader::died_in_unhandled_turn(&*store, name, live.as_ref(), status)?
                            .is_some();
                    dead.push(Dead {
                        name: name.to_string(),
                        host: crate::backend::host::elsewhere(member).cloned(),
                        in_turn,
                    });
                    true
                }
                _ => false,
            };
            // Stopped by a signal: it settles only once continued (new-user QA 42: a wait
            // timed out saying "idle", and --json did not say it).
            let paused = (!settled && status.is_running())
                .then(|| leader::paused_worker(member, live.as_ref()))
                .flatten();
            if let Some(pid) = paused
                && waits_on_user.is_none()
            {
                waits_on_user = Some(leader::paused_words(name, pid, "its mail"));
            }
            // Its turn's process stopped so: the turn goes on once continued.
            let turn_paused = (paused.is_none() && status == Status::Working)
                .then(|| leader::paused_turn(member, live.as_ref(), &stopped))
                .flatten();
            if let Some(p) = turn_paused
                && waits_on_user.is_none()
            {
                waits_on_user = Some(leader::paused_turn_words(name, p));
            }
            if !settled {
                let doing = if live
                    .as_ref()
                    .is_some_and(|l| l.planning_while(status).is_some())
                {
                    ", writing its plan"
                } else {
                    ""
                };
                pending.push(format!("{name} ({status}{doing})"));
            }
            if let Some(words) = waits_on_user {
                if said.insert(name.clone(), words.clone()).as_ref() != Some(&words) {
                    crate::errln!("teamctl: {words}; still waiting");
                }
                waits.push(words);
            } else {
                said.remove(name);
            }
            let mut said_of = serde_json::json!({ "name": name.as_str(), "status": status });
            if paused.is_some() || turn_paused.is_some() {
                said_of["paused"] = true.into();
            }
            settled_as.push(said_of);
        }
        // With --json the members are printed whatever the outcome: a script told "died" or
        // "timed out" on stderr still reads who stands where (new-user QA: nothing on stdout).
        let print = || {
            if ctx.json {
                ctx.print_json(&serde_json::json!({ "members": settled_as }));
            }
        };
        if pending.is_empty() {
            if !dead.is_empty() {
                print();
                return Err(Error::failed(died(&dead)));
            }
            if !approving.is_empty() {
                let name = match approving.as_slice() {
                    [one] => one.as_str(),
                    _ => "NAME",
                };
                crate::errln!(
                    "teamctl: {} awaiting plan approval (`teamctl plan list`, then `teamctl plan approve {name}`)",
                    approving.join(", ")
                );
            }
            print();
            return Ok(());
        }
        if Instant::now() >= deadline {
            print();
            let waits: String = waits.iter().map(|w| format!("; {w}")).collect();
            // Those found dead meanwhile are said too (new-user QA 38: only the --json
            // output showed them).
            let dead = if dead.is_empty() {
                String::new()
            } else {
                format!("; {}", died(&dead))
            };
            // `--timeout 0` looked once: said as that, not as a wait that ran out.
            let what = if args.timeout == 0 {
                "not settled yet:".to_string()
            } else {
                format!("timed out after {} s waiting for", args.timeout)
            };
            return Err(Error::failed(format!(
                "{what} {}{waits}{dead}",
                pending.join(", ")
            )));
        }
        bell.wait_until(deadline.min(Instant::now() + Duration::from_secs(1)));
    }
}

/// A teammate found dead: where it was started if on another host, and whether it died in
/// its turn on a message still unhandled (a resume runs that turn again).
struct Dead {
    name: String,
    host: Option<crate::domain::Host>,
    in_turn: bool,
}

/// The error for teammates found dead: this host's are brought back by `resume`; one started
/// on another host is resumed there (or moved here with `resume NAME --here`); one dead in its
/// turn on a message still unhandled is named with `--skip-turn`, the way past that turn
/// (new-user QA 40: only `resume`, which runs it again, was named).
fn died(dead: &[Dead]) -> String {
    // One, in its turn: said once (new-user QA 41: "cr died; ... brings it back; cr died in
    // its turn ...").
    if let [
        Dead {
            name,
            host: None,
            in_turn: true,
        },
    ] = dead
    {
        return format!(
            "{name} died in its turn on a message still unhandled: `teamctl resume {name}` runs that turn again, `teamctl resume {name} --skip-turn` starts it past it"
        );
    }
    let names: Vec<&str> = dead.iter().map(|d| d.name.as_str()).collect();
    let mut out = format!("{} died", names.join(", "));
    if let [
        Dead {
            name, host: None, ..
        },
    ] = dead
    {
        out.push_str(&format!("; `teamctl resume {name}` brings it back"));
    } else if dead.iter().all(|d| d.host.is_none()) {
        out.push_str("; `teamctl resume` brings them back");
    } else if dead.iter().any(|d| d.host.is_none()) {
        out.push_str("; `teamctl resume` brings back those of this host");
    }
    for d in dead {
        let name = &d.name;
        if let Some(host) = &d.host {
            out.push_str(&format!(
                "; {name} was started on {host}: `teamctl resume {name}` there, or `teamctl resume {name} --here` on this host"
            ));
        }
        if d.in_turn {
            out.push_str(&format!(
                "; {name} died in its turn on a message still unhandled: resumed, it runs that turn again, `teamctl resume {name} --skip-turn` starts it past it"
            ));
        }
    }
    out
}
