//! Where a new teammate's pane goes. Inside tmux: split off the leader's own pane (never the
//! active one), later teammates beside the first, evened out; a full window overflows into a
//! sibling window; each pane there holds a placeholder until the worker goes in, tagged. Outside tmux: the detached session `teamctl-TEAM-HOMEKEY` (created on first
//! use, tagged as the team's of this home, its first pane the leader console), tiled windows of at most
//! `MAX_PANES` panes. Nothing takes focus. Every `team` here is the team's scoped tag
//! (`argv::scoped`), never the bare name.

use super::argv::{self, Cmd, MAX_PANES, NewPane, Start};
use super::hook;
use super::run::{Fail, Tmux};
use crate::error::{Error, Result};

/// A new pane and what was made for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub pane: NewPane,
    /// The detached team session the pane is in (outside tmux).
    pub session: Option<String>,
    /// The pane was tagged as it was made (`hook`); otherwise the caller tags it.
    pub tagged: bool,
}

/// How to tag a new pane: as it is split (`hook`), with the hook script and the agent id it
/// sets, or with the values it sets (`argv::tag_pane`) in the call that puts the worker in a
/// placeholder teamctl opened.
#[derive(Debug, Clone, Copy)]
pub struct Tagging<'a> {
    /// `None`: no hook (a value the script cannot quote, or a session that is the user's).
    pub script: Option<&'a str>,
    pub agent_id: &'a str,
    /// The placement's nonce (`argv::NONCE_OPTION`).
    pub nonce: Option<&'a str>,
    pub color: &'a str,
    pub title: &'a str,
}

impl Tagging<'_> {
    /// `argv::tag_pane` for `pane` of `team`: the tags set in the same invocation that puts
    /// the worker in a pane teamctl opened without the hook (a new window's placeholder).
    fn pane_tags(&self, pane: &str, team: &str) -> Vec<argv::Cmd> {
        argv::tag_pane(
            pane,
            self.agent_id,
            self.nonce,
            team,
            self.color,
            self.title,
        )
    }
}

/// Where the last teammate went in the team session (`TeamConfig::tmux_fill`): its window
/// and how many panes that window had then.
#[derive(Debug, Clone, Copy)]
pub struct Hint<'a> {
    pub window: &'a str,
    pub panes: usize,
}

fn new_pane(out: &str) -> Result<NewPane> {
    argv::parse_new_pane(out)
        .ok_or_else(|| Error::failed(format!("tmux printed an unexpected pane: {out:?}")))
}

/// The placeholder a split printed; when what it printed is not a pane, the placeholders
/// this process made are closed (the split may have made one all the same).
fn placeholder_made(t: &Tmux, team: &str, out: &str) -> Result<NewPane> {
    new_pane(out).inspect_err(|_| close_own_placeholders(t, team))
}

/// Split off the leader's pane `leader`, or beside the teammates already in its window.
/// `None` when the leader's pane is not on this server (the caller goes detached).
/// The leader's session is the user's: no hook there, so every pane made in it first holds a
/// placeholder and is tagged in the call that puts the worker there (`put_worker`). Never a
/// worker in an untagged pane: one whose start was cut short (its client killed after the
/// split) would be left there dead, or running beside a second one when a split tmux made
/// was said to have failed (attacker QA 37).
pub fn beside_leader(
    t: &Tmux,
    leader: &str,
    team: &str,
    start: &Start,
    tag: Tagging,
) -> Result<Option<Placed>> {
    let home = match t.run(&[argv::pane_home(leader)]) {
        Ok(out) => out,
        Err(Fail::Gone(_)) => return Ok(None),
        Err(e) => return Err(e.into_error("find the leader's pane")),
    };
    let Some(argv::Home {
        session,
        window,
        zoomed,
    }) = argv::parse_home(&home, leader)
    else {
        return Ok(None);
    };
    let tag = Tagging {
        script: None,
        ..tag
    };
    let panes = t
        .run(&[argv::list_panes(leader)])
        .map_err(|e| e.into_error("list the leader's window"))?;
    let rows = argv::parse_pane_rows(&panes);
    if let Some((target, beside)) = argv::next_split(&rows, leader, team) {
        let mut cmds = vec![argv::split_placeholder(
            &target,
            beside,
            zoomed,
            team,
            &argv::maker(),
        )];
        if !beside && !zoomed {
            // Even out the teammates' column (tmux spreads the innermost uneven cell, here
            // the column holding `target` and the new pane). Not in a zoomed window, which
            // that would unzoom.
            cmds.push(argv::spread(&target));
        }
        match t.run(&cmds) {
            Ok(out) => {
                let placeholder = placeholder_made(t, team, &out)?;
                let pane = put_worker(t, &placeholder, team, start, tag)?;
                return Ok(Some(Placed {
                    pane,
                    session: None,
                    tagged: true,
                }));
            }
            Err(e) => {
                // A placeholder the server made all the same is closed before trying
                // elsewhere.
                close_own_placeholders(t, team);
                // tmux unzooms before a split it then refuses for room (QA 39).
                if zoomed {
                    rezoom(t, &window);
                }
                if !matches!(e, Fail::NoSpace(_)) {
                    return Err(e.into_error("split the leader's window"));
                }
            }
        }
    }
    fill(t, &session, team, start, tag).map(|(pane, tagged)| {
        Some(Placed {
            pane,
            session: None,
            tagged,
        })
    })
}

/// A pane in the team's detached session, creating the session on first use with the leader
/// console (`console`) in its first pane, so `attach` lands on it.
/// `tag`: tag the pane as it is split off (see `hook`). `hint`: the window the last teammate
/// went to (see `split_hinted`, and `window_hinted` when it is full).
pub fn detached(
    t: &Tmux,
    team: &str,
    start: &Start,
    console: &Start,
    tag: Tagging,
    hint: Option<Hint>,
) -> Result<Placed> {
    let name = argv::session_name(team);
    let target = argv::exact_session(&name);
    let hinted = match (tag.script, hint) {
        (Some(script), Some(h)) if h.panes < MAX_PANES => {
            split_hinted(t, &target, team, h.window, start, tag, script)?
        }
        (_, Some(h)) if h.panes >= MAX_PANES => window_hinted(t, &target, team, start, tag)?,
        _ => None,
    };
    if let Some((pane, tagged)) = hinted {
        return Ok(Placed {
            pane,
            session: Some(name),
            tagged,
        });
    }
    // Two spawns may race to create the session: the loser finds it on the next round.
    for _ in 0..3 {
        match session_windows(t, &target) {
            Ok(None) => {}
            Err(e) => return Err(e.into_error("look up the team session")),
            Ok(Some((owner, windows))) if owner == team => {
                let (pane, tagged) = fill_from(t, &target, team, start, &windows, tag)?;
                return Ok(Placed {
                    pane,
                    session: Some(name),
                    tagged,
                });
            }
            Ok(Some(_)) => {
                return Err(Error::failed(format!(
                    "a tmux session named {name} exists that teamctl did not make for team {} of this home; \
                     rename it (tmux rename-session -t {name} OTHER) or use --backend process",
                    argv::unscoped(team)
                )));
            }
        }
        // First use of this server for the team: the one place the tmux version is checked
        // before anything is made (elsewhere only when a tmux command fails).
        super::check_version(&t.program)?;
        // Created and tagged in one tmux invocation, so no one sees it untagged.
        let cmds = [
            argv::new_session(&name, argv::unscoped(team), team, &argv::maker()),
            argv::tag_session(&target, team),
            argv::key_session(&target, team),
        ];
        match t.run(&cmds) {
            Ok(out) => {
                let first = placeholder_made(t, team, &out)?;
                crate::pause::at("session-made");
                // Marked as teamctl's, so `delete` can tell it from a pane the user split
                // into the session (`forget_session`).
                let mark = argv::tag_console(&first.pane, team);
                start_in(t, &first, team, console, mark)?;
                let (pane, tagged) = fill(t, &target, team, start, tag)?;
                return Ok(Placed {
                    pane,
                    session: Some(name),
                    tagged,
                });
            }
            Err(Fail::Other(m)) if m.contains("duplicate session") => continue,
            Err(e) => {
                close_own_placeholders(t, team);
                return Err(e.into_error("create the team session"));
            }
        }
    }
    Err(Error::failed(format!(
        "tmux session {name} keeps appearing and disappearing; try again"
    )))
}

/// Split the window the last teammate went to, in one tmux invocation: the window guard first
/// (tmux runs nothing after it unless `window` is one teamctl made for `team`), then the
/// tagged split. `None` when the hint is stale (no such window, not the team's, no room):
/// nothing was made, and the caller looks the session up. Saves the look-up invocation on
/// every spawn but the first of each window.
fn split_hinted(
    t: &Tmux,
    session: &str,
    team: &str,
    window: &str,
    start: &Start,
    tag: Tagging,
    script: &str,
) -> Result<Option<(NewPane, bool)>> {
    let mut cmds = vec![argv::window_guard(window, team)];
    cmds.extend(hook::split_tagged(session, window, start, script));
    match t.run(&cmds) {
        Ok(out) => hook::parse_split(after_guard(&out), tag.agent_id)
            .map(Some)
            .ok_or_else(|| Error::failed(format!("tmux printed an unexpected pane: {out:?}"))),
        // The guard failed: nothing after it ran.
        Err(e) if e.is_unset_option() => Ok(None),
        // The window went away or has no room: the split failed, so nothing after it ran,
        // but the hook set before it may be left.
        Err(e @ (Fail::Gone(_) | Fail::NoSpace(_))) => {
            let _ = t.run(&[hook::unhook(session)]);
            made_anyway(t, tag, &e)?;
            Ok(None)
        }
        Err(e) => {
            let _ = t.run(&[hook::unhook(session)]);
            Err(e.into_error("split a team window"))
        }
    }
}

/// A tagged split tmux said failed for want of room or a window (`e`), before it is tried
/// elsewhere: when a pane carrying this start's word is there all the same (the server made
/// it, and the hook tagged it, but the client said otherwise: re-QA 36, a client printing an
/// error after the split), trying again would start a second worker beside it, so the start
/// fails instead, and the failed start's sweep (`leader::end_made`) closes that pane by its
/// word. One more tmux call, only on a split refused so.
fn made_anyway(t: &Tmux, tag: Tagging, e: &Fail) -> Result<()> {
    let Some(word) = tag.nonce else {
        return Ok(());
    };
    let Ok(out) = t.run(&[argv::all_pane_states()]) else {
        return Ok(());
    };
    if argv::parse_pane_states(&out)
        .iter()
        .any(|(_, s)| s.nonce == word)
    {
        return Err(Error::failed(format!(
            "tmux said the split failed ({}) but made the pane all the same; nothing was started, try again",
            e.message()
        )));
    }
    Ok(())
}

/// What an invocation printed after its guard's own line ("1").
fn after_guard(out: &str) -> &str {
    out.split_once('\n').map_or("", |(_, rest)| rest)
}

/// The window the last teammate went to was full: open the next one straight away, behind
/// the session's guard (`argv::session_guard`), in two tmux invocations instead of four (the
/// look-up, the window, the worker, the tags). Windows that have room again (teammates shut
/// down) are filled only when the session is looked up. `None`: the session is not there or
/// not the team's (made by an older teamctl, whose sessions carry no key): nothing was made.
fn window_hinted(
    t: &Tmux,
    session: &str,
    team: &str,
    start: &Start,
    tag: Tagging,
) -> Result<Option<(NewPane, bool)>> {
    let cmds = [
        argv::session_guard(session, team),
        argv::new_window(session, argv::unscoped(team), team, &argv::maker()),
    ];
    let out = match t.run(&cmds) {
        Ok(out) => out,
        Err(e) if e.is_unset_option() => return Ok(None),
        Err(Fail::Gone(_)) => return Ok(None),
        Err(e) => {
            close_own_placeholders(t, team);
            return Err(e.into_error("open a new team window"));
        }
    };
    let placeholder = placeholder_made(t, team, after_guard(&out))?;
    let tags = tag.pane_tags(&placeholder.pane, team);
    start_in(t, &placeholder, team, start, tags).map(|p| Some((p, true)))
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

/// A session's team tag and its windows (`list_windows` rows), in one tmux invocation: `None`
/// when there is no such session (or no server), an empty tag (and no windows) when the
/// session is not teamctl's.
pub fn session_windows(t: &Tmux, session: &str) -> Result<Option<(String, String)>, Fail> {
    match t.run(&[argv::session_tag(session), argv::list_windows(session)]) {
        Ok(out) => {
            let (tag, windows) = out.split_once('\n').unwrap_or((&out, ""));
            Ok(Some((tag.trim().to_string(), windows.to_string())))
        }
        Err(Fail::Gone(_)) => Ok(None),
        Err(e) if e.is_unset_option() => Ok(Some((String::new(), String::new()))),
        Err(e) => Err(e),
    }
}

/// A pane in one of the team's windows of `session` (an exact session target), or in a new
/// sibling window when they are full.
fn fill(
    t: &Tmux,
    session: &str,
    team: &str,
    start: &Start,
    tag: Tagging,
) -> Result<(NewPane, bool)> {
    let windows = t
        .run(&[argv::list_windows(session)])
        .map_err(|e| e.into_error("list the team's windows"))?;
    fill_from(t, session, team, start, &windows, tag)
}

/// `fill`, given the session's windows as `list_windows` printed them. Says whether the new
/// pane was tagged: always, but for a hook that tagged another pane than the one split.
/// Without a hook script the split holds a placeholder until `put_worker`.
fn fill_from(
    t: &Tmux,
    session: &str,
    team: &str,
    start: &Start,
    windows: &str,
    tag: Tagging,
) -> Result<(NewPane, bool)> {
    let ours: Vec<argv::Window> = argv::parse_rows(windows)
        .iter()
        .filter_map(argv::parse_window)
        .filter(|w| w.tag == team && w.panes < MAX_PANES)
        .collect();
    for argv::Window {
        id: window, zoomed, ..
    } in ours.iter().rev()
    {
        let cmds = match tag.script {
            Some(script) => hook::split_tagged(session, window, start, script),
            // A window of teamctl's in the user's session the user zoomed stays zoomed (the
            // split with -Z, no layout: either would unzoom it; re-QA 38).
            None if *zoomed => vec![argv::split_placeholder(
                window,
                false,
                true,
                team,
                &argv::maker(),
            )],
            None => vec![
                argv::split_placeholder(window, false, false, team, &argv::maker()),
                argv::select_layout(window, "tiled"),
            ],
        };
        let e = match (t.run(&cmds), tag.script) {
            (Ok(out), Some(_)) => {
                return hook::parse_split(&out, tag.agent_id).ok_or_else(|| {
                    Error::failed(format!("tmux printed an unexpected pane: {out:?}"))
                });
            }
            (Ok(out), None) => {
                let placeholder = placeholder_made(t, team, &out)?;
                return put_worker(t, &placeholder, team, start, tag).map(|p| (p, true));
            }
            (Err(e), Some(_)) => {
                // The split failed, so the rest of the invocation did not run.
                let _ = t.run(&[hook::unhook(session)]);
                if matches!(e, Fail::NoSpace(_) | Fail::Gone(_)) {
                    made_anyway(t, tag, &e)?;
                }
                e
            }
            (Err(e), None) => {
                // A placeholder the server made all the same is closed before trying
                // elsewhere.
                close_own_placeholders(t, team);
                if *zoomed {
                    rezoom(t, window);
                }
                e
            }
        };
        if let e @ Fail::Other(_) = e {
            return Err(e.into_error("split a team window"));
        }
    }
    let out = t
        .run(&[argv::new_window(
            session,
            argv::unscoped(team),
            team,
            &argv::maker(),
        )])
        .map_err(|e| {
            close_own_placeholders(t, team);
            e.into_error("open a new team window")
        })?;
    let placeholder = placeholder_made(t, team, &out)?;
    // Tagged in the same invocation as the worker is put there, as `window_hinted` does:
    // tagged later, a start whose client was killed in between left an untagged pane that
    // nothing could tell was its (attacker QA: dead, kept, and `delete` kept the session).
    let tags = tag.pane_tags(&placeholder.pane, team);
    start_in(t, &placeholder, team, start, tags).map(|p| (p, true))
}

/// Zoom `window` again, as the user had it, after a split that tmux refused (for want of
/// room) had unzoomed it first.
fn rezoom(t: &Tmux, window: &str) {
    if let Some(cmd) = argv::rezoom(window) {
        let _ = t.run(&[cmd]);
    }
}

/// Close the placeholders this process made for `team` on `t`'s server (`argv::maker`): a
/// new session or window whose tmux call failed without saying which pane it made (its client
/// killed by a signal after the server made it) left one running `cat` until `doctor --fix`
/// or `delete` (QA 35). Each kill is guarded by the `cat` the placeholder runs. Only on that
/// failure: one listing, and one kill per placeholder found.
fn close_own_placeholders(t: &Tmux, team: &str) {
    let Ok(list) = t.run(&[argv::team_panes()]) else {
        return;
    };
    let me = argv::maker();
    let kills: Vec<Cmd> = argv::parse_placeholders(&list)
        .into_iter()
        .filter(|p| p.team == team && p.maker.is_some_and(|(pid, at)| format!("{pid}:{at}") == me))
        .filter_map(|p| argv::kill_pane_running(&p.pane, p.pid))
        .collect();
    for kill in kills {
        let _ = t.run(&[kill]);
    }
}

/// Set up a window teamctl just created (its options) and put the worker (or the console) in
/// its placeholder pane, in one invocation: the window keeps dead panes from the first moment.
fn start_in(
    t: &Tmux,
    placeholder: &NewPane,
    team: &str,
    start: &Start,
    then: Vec<Cmd>,
) -> Result<NewPane> {
    respawn_in(
        t,
        placeholder,
        argv::own_window(&placeholder.window, team),
        start,
        then,
    )
}

/// Put the worker in a placeholder split off a window teamctl does not set up (the user's),
/// tagged in the same invocation: its tags, `remain-on-exit` among them, are on before
/// anything can see the worker run or end.
fn put_worker(
    t: &Tmux,
    placeholder: &NewPane,
    team: &str,
    start: &Start,
    tag: Tagging,
) -> Result<NewPane> {
    let tags = tag.pane_tags(&placeholder.pane, team);
    respawn_in(t, placeholder, Vec::new(), start, tags)
}

/// `before`, the worker (or console) respawned into `placeholder`, then `then`: one
/// invocation.
fn respawn_in(
    t: &Tmux,
    placeholder: &NewPane,
    before: Vec<Cmd>,
    start: &Start,
    then: Vec<Cmd>,
) -> Result<NewPane> {
    let mut cmds = before;
    cmds.extend(argv::respawn(&placeholder.pane, start));
    cmds.extend(then);
    match t.run(&cmds) {
        Ok(out) => new_pane(&out),
        Err(e) => {
            // Leave no placeholder behind: closed as every pane teamctl closes
            // (`close_cmd`), only while it runs the placeholder (a server started again
            // meanwhile reuses pane ids for the user's panes). tmux stops a command list at
            // its first error, and once the respawn is done only a pane gone fails, so a
            // failed start left it running that. No worker ran there: no start time recorded.
            if let super::Close::Kill(kill) =
                super::close_cmd(&placeholder.pane, placeholder.pid, false, "", None)
            {
                let _ = t.run(&[kill]);
            }
            Err(e.into_error("start the worker in its pane"))
        }
    }
}
