//! Where a new teammate's pane goes. Inside tmux: split off the leader's own pane (never the
//! active one), later teammates beside the first, evened out; a full window overflows into a
//! sibling window. Outside tmux: the detached session `teamctl-TEAM` (created on first use,
//! tagged as the team's, its first pane the leader console), tiled windows of at most
//! `MAX_PANES` panes. Nothing takes focus.

use super::argv::{self, MAX_PANES, NewPane, Start};
use super::run::{Fail, Tmux};
use crate::error::{Error, Result};

/// A new pane and what was made for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub pane: NewPane,
    /// The detached team session the pane is in (outside tmux).
    pub session: Option<String>,
}

fn new_pane(out: &str) -> Result<NewPane> {
    argv::parse_new_pane(out)
        .ok_or_else(|| Error::failed(format!("tmux printed an unexpected pane: {out:?}")))
}

/// Split off the leader's pane `leader`, or beside the teammates already in its window.
/// `None` when the leader's pane is not on this server (the caller goes detached).
pub fn beside_leader(t: &Tmux, leader: &str, team: &str, start: &Start) -> Result<Option<Placed>> {
    let home = match t.run(&[argv::pane_home(leader)]) {
        Ok(out) => out,
        Err(Fail::Gone(_)) => return Ok(None),
        Err(e) => return Err(e.into_error("find the leader's pane")),
    };
    let Some((session, _window)) = argv::parse_home(&home, leader) else {
        return Ok(None);
    };
    let panes = t
        .run(&[argv::list_panes(leader)])
        .map_err(|e| e.into_error("list the leader's window"))?;
    let rows = argv::parse_pane_rows(&panes);
    if let Some((target, beside)) = argv::next_split(&rows, leader, team) {
        let mut cmds = vec![argv::split_window(&target, beside, start)];
        if !beside {
            // Even out the teammates' column (tmux spreads the innermost uneven cell, here
            // the column holding `target` and the new pane).
            cmds.push(argv::spread(&target));
        }
        match t.run(&cmds) {
            Ok(out) => {
                let pane = new_pane(&out)?;
                return Ok(Some(Placed {
                    pane,
                    session: None,
                }));
            }
            Err(Fail::NoSpace(_)) => {}
            Err(e) => return Err(e.into_error("split the leader's window")),
        }
    }
    fill(t, &session, team, start).map(|pane| {
        Some(Placed {
            pane,
            session: None,
        })
    })
}

/// A pane in the team's detached session, creating the session on first use with the leader
/// console (`console`) in its first pane, so `attach` lands on it.
pub fn detached(t: &Tmux, team: &str, start: &Start, console: &Start) -> Result<Placed> {
    let name = argv::session_name(team);
    let target = argv::exact_session(&name);
    // Two spawns may race to create the session: the loser finds it on the next round.
    for _ in 0..3 {
        match session_owner(t, &target) {
            Ok(None) => {}
            Err(e) => return Err(e.into_error("look up the team session")),
            Ok(Some(tag)) if tag == team => {
                let pane = fill(t, &target, team, start)?;
                return Ok(Placed {
                    pane,
                    session: Some(name),
                });
            }
            Ok(Some(_)) => {
                return Err(Error::failed(format!(
                    "a tmux session named {name} exists that teamctl did not make for team {team}; \
                     rename it (tmux rename-session -t {name} OTHER) or use --backend process"
                )));
            }
        }
        // Created and tagged in one tmux invocation, so no one sees it untagged.
        let cmds = [
            argv::new_session(&name, team),
            argv::tag_session(&target, team),
        ];
        match t.run(&cmds) {
            Ok(out) => {
                start_in(t, &new_pane(&out)?, team, console)?;
                let pane = fill(t, &target, team, start)?;
                return Ok(Placed {
                    pane,
                    session: Some(name),
                });
            }
            Err(Fail::Other(m)) if m.contains("duplicate session") => continue,
            Err(e) => return Err(e.into_error("create the team session")),
        }
    }
    Err(Error::failed(format!(
        "tmux session {name} keeps appearing and disappearing; try again"
    )))
}

/// The team tag of a session (exact target): `None` when there is no such session (or no
/// server), an empty tag when the session is not teamctl's.
pub fn session_owner(t: &Tmux, session: &str) -> Result<Option<String>, Fail> {
    match t.run(&[argv::session_tag(session)]) {
        Ok(tag) => Ok(Some(tag.trim().to_string())),
        Err(Fail::Gone(_)) => Ok(None),
        Err(e) if e.is_unset_option() => Ok(Some(String::new())),
        Err(e) => Err(e),
    }
}

/// A pane in one of the team's windows of `session` (an exact session target), or in a new
/// sibling window when they are full.
fn fill(t: &Tmux, session: &str, team: &str, start: &Start) -> Result<NewPane> {
    let windows = t
        .run(&[argv::list_windows(session)])
        .map_err(|e| e.into_error("list the team's windows"))?;
    let ours: Vec<String> = argv::parse_rows(&windows)
        .iter()
        .filter_map(argv::parse_window)
        .filter(|(_, n, tag)| tag == team && *n < MAX_PANES)
        .map(|(id, _, _)| id)
        .collect();
    for window in ours.iter().rev() {
        let cmds = [
            argv::split_window(window, false, start),
            argv::select_layout(window, "tiled"),
        ];
        match t.run(&cmds) {
            Ok(out) => return new_pane(&out),
            Err(Fail::NoSpace(_) | Fail::Gone(_)) => continue,
            Err(e) => return Err(e.into_error("split a team window")),
        }
    }
    let out = t
        .run(&[argv::new_window(session, team)])
        .map_err(|e| e.into_error("open a new team window"))?;
    start_in(t, &new_pane(&out)?, team, start)
}

/// Set up a window teamctl just created (its options) and put the worker (or the console) in
/// its placeholder pane, in one invocation: the window keeps dead panes from the first moment.
fn start_in(t: &Tmux, placeholder: &NewPane, team: &str, start: &Start) -> Result<NewPane> {
    let mut cmds = argv::own_window(&placeholder.window, team);
    cmds.extend(argv::respawn(&placeholder.pane, start));
    match t.run(&cmds) {
        Ok(out) => new_pane(&out),
        Err(e) => {
            // Leave no placeholder behind.
            let _ = t.run(&[argv::kill_pane(&placeholder.pane)]);
            Err(e.into_error("start the worker in its pane"))
        }
    }
}
