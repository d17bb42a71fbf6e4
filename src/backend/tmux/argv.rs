//! Every tmux command teamctl issues, built as an argument vector by pure functions (no tmux
//! needed to test them), and the parsers for what tmux prints back. Nothing here runs tmux and
//! nothing passes through a shell: the worker's argv goes after `--`, one word per argument.

use std::path::{Path, PathBuf};

use crate::domain::LiveState;

/// One tmux command: its words, command name first.
pub type Cmd = Vec<String>;

/// The pane user option holding teamctl's tag, the agent id scoped to its home
/// (`NAME@TEAM/HOMEKEY`, see `scoped`).
pub const AGENT_OPTION: &str = "@teamctl-agent";
/// The pane, window and session user option holding the team name scoped to its home
/// (`TEAM/HOMEKEY`).
pub const TEAM_OPTION: &str = "@teamctl-team";
/// The pane user option marking the leader console teamctl put in the first pane of a team
/// session it made (the team's scoped tag, as `TEAM_OPTION`).
pub const CONSOLE_OPTION: &str = "@teamctl-console";
/// The pane user option holding the pid of the process teamctl started in the pane, set with
/// the tags (`#{pane_pid}` then). The tags name that process, not the pane: once the pane runs
/// another (the user's `respawn-pane -k`), it is the user's (`holds`).
pub const PID_OPTION: &str = "@teamctl-pid";
/// The pane user option holding the random word teamctl made when it placed the member there
/// (`Member::pane_nonce`, recorded in its team file): what tells teamctl's dead pane from one
/// whose tags someone else set (a dead pane runs nothing whose process could be checked).
pub const NONCE_OPTION: &str = "@teamctl-nonce";
/// The pane user option holding the member's colour (used by the border format).
pub const COLOR_OPTION: &str = "@teamctl-color";
/// The pane user option holding the member's name (the border label: an agent may change
/// the pane title with an escape sequence, not this).
pub const NAME_OPTION: &str = "@teamctl-name";

/// A format field whose text anyone can set (a pane's user options, its start command, a
/// session's name) with every control character in it printed as `_`: one with a newline or a
/// tab made rows and fields of its own in a listing read line by line (attacker QA 45: a pane
/// option holding a newline and a forged row had `delete` close an untagged pane of the
/// user's; `-u` prints what tmux holds as it is). Bytes outside ASCII are kept.
macro_rules! plain {
    ($field:literal) => {
        concat!("#{s/[\x01-\x1f\x7f]/_/:", $field, "}")
    };
}
pub(crate) use plain;

/// What `-P -F` prints for a new pane (and how many panes its window has now).
pub const NEW_PANE_FORMAT: &str = "#{pane_id} #{pane_pid} #{window_id} #{window_panes}";
/// What a liveness probe prints: pane id, dead flag, pid, the pid teamctl tagged the pane for
/// (`PID_OPTION`), then the tag (either possibly empty), then after a tab the pane's nonce
/// (`NONCE_OPTION`, possibly empty). `display-message -t` does not fail on a missing pane (it
/// prints the format without one), so the pane id is printed back and checked.
pub const STATE_FORMAT: &str = concat!(
    "#{pane_id} #{pane_dead} #{pane_pid} ",
    plain!("@teamctl-pid"),
    " ",
    plain!("@teamctl-agent"),
    "\t",
    plain!("@teamctl-nonce")
);
/// Where a pane is: pane id (checked, as above), session id, window id, and whether that
/// window is zoomed.
pub const HOME_FORMAT: &str = "#{pane_id} #{session_id} #{window_id} #{window_zoomed_flag}";
/// The border label on windows teamctl created: the name in the member's colour.
pub const BORDER_FORMAT: &str =
    " #[fg=#{@teamctl-color},bold]#{@teamctl-name}#[default]#{?pane_dead, (exited),} ";

/// A window holds at most this many panes before a sibling window is opened.
pub const MAX_PANES: usize = 8;
/// The smallest pane worth splitting off in the user's window: columns beside the leader,
/// rows in the teammates' column.
pub const MIN_COLS: u32 = 20;
pub const MIN_ROWS: u32 = 5;
/// The size of a detached team session: room for a full window of panes.
pub const SESSION_SIZE: (u16, u16) = (250, 80);

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// The user's default server (no flag).
    Default,
    /// `-L NAME`: a named socket in tmux's socket directory.
    Named(String),
    /// `-S PATH`: a socket path (the server of `$TMUX`).
    Path(PathBuf),
}

impl Server {
    /// The server recorded with a member (`tmuxSocket`): a path when it has a `/`, else a
    /// `-L` name; none is the default server.
    pub fn from_record(record: Option<&str>) -> Server {
        match record.filter(|s| !s.is_empty()) {
            None => Server::Default,
            Some(s) if s.contains('/') => Server::Path(PathBuf::from(s)),
            Some(s) => Server::Named(s.to_string()),
        }
    }

    /// What to record with a member so that later commands reach the same server.
    pub fn record(&self) -> Option<String> {
        match self {
            Server::Default => None,
            Server::Named(n) => Some(n.clone()),
            Server::Path(p) => Some(p.display().to_string()),
        }
    }

    /// The server chosen from the environment: `TEAMCTL_TMUX_SOCKET`, else the server of
    /// `$TMUX` (its first comma field is the socket path), else the default.
    pub fn from_env_values(teamctl_socket: Option<&str>, tmux: Option<&str>) -> Server {
        if let Some(s) = teamctl_socket.filter(|s| !s.is_empty()) {
            return Server::from_record(Some(s));
        }
        match tmux.and_then(socket_of_tmux_env) {
            Some(p) => Server::Path(p),
            None => Server::Default,
        }
    }

    /// The socket file this server listens on, given `$TMUX_TMPDIR` and the user id (the
    /// same rule tmux uses), to tell whether `$TMUX` names this server.
    pub fn socket_path(&self, tmux_tmpdir: Option<&str>, uid: u32) -> PathBuf {
        let dir = || {
            let base = tmux_tmpdir.filter(|d| !d.is_empty()).unwrap_or("/tmp");
            Path::new(base).join(format!("tmux-{uid}"))
        };
        match self {
            Server::Default => dir().join("default"),
            Server::Named(n) => dir().join(n),
            Server::Path(p) => p.clone(),
        }
    }

    /// The flags that select this server.
    pub fn flags(&self) -> Vec<String> {
        match self {
            Server::Default => Vec::new(),
            Server::Named(n) => vec!["-L".into(), n.clone()],
            Server::Path(p) => vec!["-S".into(), p.display().to_string()],
        }
    }
}

/// The socket path in `$TMUX` (`PATH,PID,SESSION`).
pub fn socket_of_tmux_env(tmux: &str) -> Option<PathBuf> {
    let first = tmux.split(',').next()?;
    (!first.is_empty()).then(|| PathBuf::from(first))
}

/// The whole argument vector after the `tmux` program: server flags, then the commands
/// separated by `;` words. Every word is protected from tmux's own splitting on a trailing
/// `;` (tmux turns a trailing `\;` back into `;`).
pub fn line(server: &Server, cmds: &[Cmd]) -> Vec<String> {
    let mut out = server.flags();
    for (i, cmd) in cmds.iter().enumerate() {
        if i > 0 {
            out.push(";".into());
        }
        out.extend(cmd.iter().map(|w| protect(w)));
    }
    out
}

/// A word as tmux must receive it so that it arrives unchanged.
pub fn protect(word: &str) -> String {
    match word.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => word.to_string(),
    }
}

/// A `#` in a value that tmux expands as a format (`-c`, `-T`) must be doubled.
pub fn literal(text: &str) -> String {
    text.replace('#', "##")
}

/// A name (agent id or team) as teamctl tags it in tmux: `NAME/HOMEKEY`, where the key is the
/// home's (`proc::home_key`), so two homes using one tmux server never take each other's
/// sessions, windows or panes for their own. Names never hold a `/`.
pub fn scoped(name: &str, home_key: &str) -> String {
    format!("{name}/{home_key}")
}

/// The name part of a scoped tag (`scoped`), for showing it.
pub fn unscoped(tag: &str) -> &str {
    tag.rsplit_once('/').map_or(tag, |(name, _)| name)
}

/// The detached session of a team outside tmux, from its scoped tag (`scoped`):
/// `teamctl-TEAM-HOMEKEY` (tmux itself turns `.` and `:` into `_`).
pub fn session_name(team_tag: &str) -> String {
    format!(
        "teamctl-{}",
        team_tag.replace(['.', ':'], "_").replace('/', "-")
    )
}

/// `-t` value naming exactly this session (no prefix matching).
pub fn exact_session(name: &str) -> String {
    format!("={name}")
}

/// `-t` value for "a new window in this session" (`=NAME:` or `$ID:`).
pub fn in_session(session_target: &str) -> String {
    format!("{session_target}:")
}

/// How to start the worker in a new pane: its argv, working directory and environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Start<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
}

impl Start<'_> {
    /// `-c CWD -e VAR=VALUE ... -- PROGRAM ARGS...`
    fn words(&self) -> Vec<String> {
        let mut v = vec!["-c".into(), literal(&self.cwd.display().to_string())];
        for (k, val) in self.env {
            v.push("-e".into());
            v.push(format!("{k}={val}"));
        }
        v.push("--".into());
        v.extend(self.argv.iter().cloned());
        v
    }
}

fn words(ws: &[&str]) -> Cmd {
    ws.iter().map(|w| w.to_string()).collect()
}

/// What a new session or window first runs, until `respawn` puts the worker in its place.
/// The tmux server keeps the argv of the client that started it, so a worker's argv there
/// would make the server look like that worker to the process tag check.
pub const PLACEHOLDER: &str = "cat";

/// The variable that marks a placeholder as the one teamctl started for a team.
pub const PLACEHOLDER_VAR: &str = "TEAMCTL_PLACEHOLDER";

/// The variable that names the process that made a placeholder (`maker`).
pub const PLACEHOLDER_BY_VAR: &str = "TEAMCTL_PLACEHOLDER_BY";

/// The placeholder's argv for `team` (its scoped tag), made by the process `by` (`maker`):
/// `env TEAMCTL_PLACEHOLDER=TEAM TEAMCTL_PLACEHOLDER_BY=PID:TICKS cat`. tmux keeps it as the
/// pane's start command (`#{pane_start_command}`) until the pane is respawned, so a
/// placeholder that a start cut short left running (killed between making the session or
/// window and putting the worker there) is known as teamctl's and closed with the team
/// (new-user QA: `delete` kept the session for a `cat` pane "teamctl did not make"), and known
/// as left over once the process that made it is gone (`doctor` reports it, `--fix` closes it).
pub fn placeholder(team: &str, by: &str) -> [String; 4] {
    [
        "env".into(),
        format!("{PLACEHOLDER_VAR}={team}"),
        format!("{PLACEHOLDER_BY_VAR}={by}"),
        PLACEHOLDER.into(),
    ]
}

/// This process as a placeholder names its maker: `PID:TICKS` (its start time,
/// `proc::start_time`, so a pid given again is not taken for it).
pub fn maker() -> String {
    let me = std::process::id();
    format!("{me}:{}", crate::backend::proc::start_time(me).unwrap_or(0))
}

/// A placeholder's start command as tmux prints it (`#{pane_start_command}`): the team it was
/// made for (its scoped tag) and its maker (pid and start time; `None` for one an older
/// teamctl made, which named none). `None` when it is not a placeholder's.
pub fn parse_placeholder(started: &str) -> Option<(&str, Option<(u32, u64)>)> {
    let rest = started
        .strip_prefix("env ")?
        .strip_prefix(PLACEHOLDER_VAR)?
        .strip_prefix('=')?
        .strip_suffix(PLACEHOLDER)?
        .strip_suffix(' ')?;
    let Some((team, by)) = rest.split_once(' ') else {
        return Some((rest, None));
    };
    let (pid, ticks) = by
        .strip_prefix(PLACEHOLDER_BY_VAR)?
        .strip_prefix('=')?
        .split_once(':')?;
    Some((team, Some((pid.parse().ok()?, ticks.parse().ok()?))))
}

/// A new detached team session, large enough for a full window, its first pane holding
/// `placeholder(team, by)`.
pub fn new_session(session: &str, window_name: &str, team: &str, by: &str) -> Cmd {
    let (x, y) = SESSION_SIZE;
    let mut c = words(&[
        "new-session",
        "-d",
        "-P",
        "-F",
        NEW_PANE_FORMAT,
        "-s",
        session,
    ]);
    c.extend(["-n".into(), window_name.into()]);
    c.extend(["-x".into(), x.to_string(), "-y".into(), y.to_string()]);
    c.push("--".into());
    c.extend(placeholder(team, by));
    c
}

/// Replace a placeholder pane's program with the worker, then print the pane again.
pub fn respawn(pane: &str, start: &Start) -> Vec<Cmd> {
    let mut c = words(&["respawn-pane", "-k", "-t", pane]);
    c.extend(start.words());
    vec![
        c,
        words(&["display-message", "-p", "-t", pane, NEW_PANE_FORMAT]),
    ]
}

/// A new pane split off `target` without changing focus: side by side when `beside`.
pub fn split_window(target: &str, beside: bool, start: &Start) -> Cmd {
    let mut c = split(target, beside);
    c.extend(start.words());
    c
}

/// `split_window` holding `placeholder(team, by)`, for a pane that no hook tags as it is made
/// (in the user's session): the worker goes in with its tags in one later call (`respawn`).
/// `zoomed`: the window is, and stays so (`-Z`; a plain split unzooms it, attacker QA 38).
pub fn split_placeholder(target: &str, beside: bool, zoomed: bool, team: &str, by: &str) -> Cmd {
    let mut c = split(target, beside);
    if zoomed {
        c.push("-Z".into());
    }
    c.push("--".into());
    c.extend(placeholder(team, by));
    c
}

fn split(target: &str, beside: bool) -> Cmd {
    let dir = if beside { "-h" } else { "-v" };
    words(&[
        "split-window",
        "-d",
        dir,
        "-P",
        "-F",
        NEW_PANE_FORMAT,
        "-t",
        target,
    ])
}

/// A new sibling window (not selected) in a session, holding `PLACEHOLDER`.
pub fn new_window(session_target: &str, window_name: &str, team: &str, by: &str) -> Cmd {
    let mut c = words(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        NEW_PANE_FORMAT,
        "-n",
        window_name,
    ]);
    c.extend(["-t".into(), in_session(session_target)]);
    c.push("--".into());
    c.extend(placeholder(team, by));
    c
}

/// A window option named after the team's scoped tag (`@teamctl-team-NAME-HOMEKEY`), set only
/// on windows teamctl made for that team of that home. Asking for it fails ("invalid option") on any other window, which stops
/// the rest of a tmux command list: see `window_guard`.
pub fn team_key(team: &str) -> String {
    format!("{TEAM_OPTION}-{}", team.replace('/', "-"))
}

/// A command that fails unless `window` exists and is one teamctl made for `team`; placed
/// first in an invocation, nothing after it runs otherwise (tmux stops a command list at its
/// first error).
pub fn window_guard(window: &str, team: &str) -> Cmd {
    words(&["show-options", "-w", "-v", "-t", window, &team_key(team)])
}

/// Mark a session as the team's with the option named after it (`team_key`), which
/// `session_guard` asks for.
pub fn key_session(session_target: &str, team: &str) -> Cmd {
    words(&[
        "set-option",
        "-t",
        &in_session(session_target),
        &team_key(team),
        "1",
    ])
}

/// A command that fails unless the session is one teamctl made for `team` (see
/// `window_guard`).
pub fn session_guard(session_target: &str, team: &str) -> Cmd {
    words(&[
        "show-options",
        "-v",
        "-t",
        &in_session(session_target),
        &team_key(team),
    ])
}

/// Mark a session as the team's (so `delete` only ever closes its own session). Option
/// commands take a pane-style target, hence `=NAME:`.
pub fn tag_session(session_target: &str, team: &str) -> Cmd {
    words(&[
        "set-option",
        "-t",
        &in_session(session_target),
        TEAM_OPTION,
        team,
    ])
}

/// The team tag of a session: fails with "invalid option" when untagged and "no such
/// session" when there is none (`-q` would hide the difference).
pub fn session_tag(session_target: &str) -> Cmd {
    words(&[
        "show-options",
        "-v",
        "-t",
        &in_session(session_target),
        TEAM_OPTION,
    ])
}

/// The settings `own_window` gives a window of teamctl's, taken off when it is left to the user.
const OWN_WINDOW_SETTINGS: [&str; 3] =
    ["remain-on-exit", "pane-border-status", "pane-border-format"];

/// Window options for a window teamctl created (never the user's, never global): keep dead
/// panes readable, show each pane's name in its colour on the border.
pub fn own_window(window: &str, team: &str) -> Vec<Cmd> {
    let set = |opt: &str, val: &str| words(&["set-option", "-w", "-t", window, opt, val]);
    let [remain, border, format] = OWN_WINDOW_SETTINGS;
    vec![
        set(TEAM_OPTION, team),
        set(&team_key(team), "1"),
        set(remain, "on"),
        set(border, "top"),
        set(format, BORDER_FORMAT),
    ]
}

/// Record the pid of the process `pane` runs now (`PID_OPTION`), which teamctl's tags then
/// name: set first, in the invocation that tags the pane, once teamctl's process runs there.
pub fn tag_pid(pane: &str) -> Cmd {
    words(&[
        "set-option",
        "-p",
        "-F",
        "-t",
        pane,
        PID_OPTION,
        "#{pane_pid}",
    ])
}

/// Do the tags of a pane running `pane_pid` (as tmux printed it) still hold, given the pid
/// they were set for (`PID_OPTION`, empty when unset)? Only while the pane runs that process,
/// or is dead with it as its last one. A pane the user respawned is theirs. A pane tagged by
/// an older teamctl records no pid: its tags are judged alone, as that teamctl did.
pub fn holds(pane_pid: &str, tagged_pid: &str) -> bool {
    tagged_pid.is_empty() || (!pane_pid.is_empty() && pane_pid == tagged_pid)
}

/// The process teamctl started in a pane, as its worker recorded it in its live state
/// (`LiveState::pid` and `start_ticks`: in a pane, the worker is the pane's process). tmux
/// records only the pid (`PID_OPTION`), and a pid can be given again to another process; the
/// start time tells them apart, read from the worker's own record, so a spawn makes no tmux
/// call for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    pub pid: u32,
    /// Clock ticks since boot (`proc::start_time`).
    pub start: u64,
}

impl Started {
    /// The worker's record in `live`; none from an older teamctl's worker.
    pub fn of(live: &LiveState) -> Option<Started> {
        Some(Started {
            pid: live.pid,
            start: live.start_ticks?,
        })
    }
}

/// The start time of the process a pid names now (`proc::start_time`; a stand-in in tests).
pub type StartOf<'a> = &'a dyn Fn(u32) -> Option<u64>;

/// Is the process a pane runs as `pid` (as tmux printed it; `dead`: ran it last) still the
/// one teamctl started there, as far as the worker's `record` can tell? Not when the record
/// names that very pid with another start time than the one `start_of` gives for it now: the
/// system gave the pid again, to the user's program respawned into the pane. Yes without a
/// record, or a record of another pid (an older teamctl's worker, the console, a pane of a
/// team whose files are gone, a worker that has not written its state yet): the pid decides,
/// as the tags do. A dead pane runs nothing whose start time could be read, and a pid gone
/// from `/proc` ended (the pane is dead, or about to show it): the pid decides there too.
/// The one start-time compare, behind every close (`tmux::close_cmd`).
pub fn runs_started(pid: u32, dead: bool, record: Option<Started>, start_of: StartOf) -> bool {
    match record {
        Some(r) if r.pid == pid && !dead => start_of(pid).is_none_or(|now| now == r.start),
        _ => true,
    }
}

/// Pane-level options on the teammate's own pane: the pid they name, the tag, the placement's
/// nonce (`NONCE_OPTION`; none: not set), team, colour, remain-on-exit and its title. Only `-p`
/// options that exist at pane level, so the window is not touched.
pub fn tag_pane(
    pane: &str,
    agent_id: &str,
    nonce: Option<&str>,
    team: &str,
    color: &str,
    title: &str,
) -> Vec<Cmd> {
    let set = |opt: &str, val: &str| words(&["set-option", "-p", "-t", pane, opt, val]);
    let mut cmds = vec![tag_pid(pane)];
    if let Some(nonce) = nonce {
        cmds.push(set(NONCE_OPTION, nonce));
    }
    cmds.extend([
        set(AGENT_OPTION, agent_id),
        set(TEAM_OPTION, team),
        set(COLOR_OPTION, color),
        set(NAME_OPTION, title),
        set("remain-on-exit", "on"),
        words(&["select-pane", "-t", pane, "-T", &literal(title)]),
    ]);
    cmds
}

/// Re-arrange one window (`tiled` on teamctl's windows).
pub fn select_layout(window: &str, layout: &str) -> Cmd {
    words(&["select-layout", "-t", window, layout])
}

/// Spread a pane and its neighbours evenly, leaving the rest of the window alone.
pub fn spread(pane: &str) -> Cmd {
    words(&["select-layout", "-E", "-t", pane])
}

/// Read a pane's state (`STATE_FORMAT`).
pub fn pane_state(pane: &str) -> Cmd {
    words(&["display-message", "-p", "-t", pane, STATE_FORMAT])
}

/// Every pane of the server at once, one `STATE_FORMAT` line each (the whole-team views).
pub fn all_pane_states() -> Cmd {
    words(&["list-panes", "-a", "-F", STATE_FORMAT])
}

/// Where a pane is (`HOME_FORMAT`).
pub fn pane_home(pane: &str) -> Cmd {
    words(&["display-message", "-p", "-t", pane, HOME_FORMAT])
}

/// The panes of the window holding `target`: id, size and team tag (`parse_pane_rows`).
pub fn list_panes(target: &str) -> Cmd {
    words(&[
        "list-panes",
        "-t",
        target,
        "-F",
        concat!(
            "#{pane_id} #{pane_width} #{pane_height} ",
            plain!("@teamctl-team")
        ),
    ])
}

/// The windows of a session, with pane count and team tag.
pub fn list_windows(session_target: &str) -> Cmd {
    words(&[
        "list-windows",
        "-t",
        session_target,
        "-F",
        concat!(
            "#{window_id} #{window_panes} #{window_zoomed_flag} ",
            plain!("@teamctl-team")
        ),
    ])
}

/// The panes of the server: its window zoomed or not, the window's id, the pane, whether it
/// is the window's active one (`parse_zoomed`). Read in the invocation that closes panes,
/// before the kills, so a window the user had zoomed is zoomed again after them (`rezoom`):
/// tmux unzooms a window when one of its panes closes.
/// `pane`: only the panes of the window holding it (a close of one pane), else all of them.
pub fn zoom_states(pane: Option<&str>) -> Cmd {
    let mut c = match pane {
        Some(pane) => words(&["list-panes", "-t", pane]),
        None => words(&["list-panes", "-a"]),
    };
    c.extend(words(&[
        "-F",
        "zoom #{window_zoomed_flag} #{window_id} #{pane_id} #{pane_active}",
    ]));
    c
}

/// The windows `zoom_states` printed as zoomed that hold a pane of `closing` and are zoomed
/// on one that stays (the active one): zoomed again after the close, once each. Lines that
/// are not `zoom_states`'s are skipped.
pub fn parse_zoomed(out: &str, closing: &[&str]) -> Vec<String> {
    let rows: Vec<(&str, &str, bool)> = out
        .lines()
        .filter_map(|l| {
            let mut it = l.strip_prefix("zoom 1 ")?.split(' ');
            let (window, pane, active) = (it.next()?, it.next()?, it.next()?);
            is_window_id(window).then_some((window, pane, active == "1"))
        })
        .collect();
    let mut windows: Vec<String> = rows
        .iter()
        .filter(|(w, pane, active)| {
            *active
                && !closing.contains(pane)
                && rows
                    .iter()
                    .any(|(other, p, _)| other == w && closing.contains(p))
        })
        .map(|(w, _, _)| w.to_string())
        .collect();
    windows.sort();
    windows.dedup();
    windows
}

/// Zoom `window` again on its active pane (the one it was zoomed on) unless something zoomed
/// it meanwhile: one tmux command, holding only the window id.
pub fn rezoom(window: &str) -> Option<Cmd> {
    is_window_id(window).then(|| {
        words(&[
            "if-shell",
            "-F",
            "-t",
            window,
            "#{?window_zoomed_flag,0,1}",
            &format!("resize-pane -Z -t {window}"),
        ])
    })
}

fn is_window_id(word: &str) -> bool {
    word.strip_prefix('@')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Is `word` a tmux pane id (`%` then digits)? Only such a word goes into a command string
/// that tmux parses (`kill_pane_running`).
pub fn is_pane_id(word: &str) -> bool {
    word.strip_prefix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Kill `pane` only while it runs, or last ran, process `pid` (the one teamctl found it
/// running when it judged the pane its own): the check and the kill are one tmux command,
/// which the server runs with nothing in between, so a pane the user respawned after teamctl
/// looked at it is left open. `if-shell -F` evaluates a format (no shell is run); a missing
/// pane expands to nothing, so nothing is killed. The kill is a command string tmux parses:
/// it holds only the pane id (`None` for any other word) and a number.
pub fn kill_pane_running(pane: &str, pid: u32) -> Option<Cmd> {
    while_running(pane, pid, &format!("kill-pane -t {pane}"))
}

/// Let `pane` close when its process ends (`remain-on-exit` off, which teamctl's panes have
/// on to keep what a crashed worker said), only while it runs `pid`: one tmux command, as
/// `kill_pane_running`, holding only the pane id and a number.
pub fn close_on_exit_running(pane: &str, pid: u32) -> Option<Cmd> {
    while_running(
        pane,
        pid,
        &format!("set-option -p -t {pane} remain-on-exit off"),
    )
}

/// `cmd` (a command string tmux parses, made of the pane id and fixed words) run only while
/// `pane` runs, or last ran, `pid`: the check and the command in one tmux command.
fn while_running(pane: &str, pid: u32, cmd: &str) -> Option<Cmd> {
    is_pane_id(pane).then(|| {
        words(&[
            "if-shell",
            "-F",
            "-t",
            pane,
            &format!("#{{==:#{{pane_pid}},{pid}}}"),
            cmd,
        ])
    })
}

/// Make `pane`'s tags name `pid` (`PID_OPTION`), only while the pane runs `pid` and carries
/// the agent tag `tag`: a worker the user re-ran in its own pane (`respawn-pane -k`, no
/// command) taking it back. The check and the change are one tmux command (`if-shell -F`, as
/// `kill_pane_running`), so a pane respawned again meanwhile, or untagged, is left as it is.
/// The command string tmux parses holds only the pane id, a number and the tag, whose
/// characters (a name's, `@`, `/`) mean nothing to tmux: `None` for any other word.
pub fn retag_running(pane: &str, pid: u32, tag: &str) -> Option<Cmd> {
    let plain = !tag.is_empty()
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@/._-".contains(&b));
    (is_pane_id(pane) && plain).then(|| {
        words(&[
            "if-shell",
            "-F",
            "-t",
            pane,
            &format!("#{{==:#{{pane_pid}} #{{{AGENT_OPTION}}},{pid} {tag}}}"),
            &format!("set-option -p -t {pane} {PID_OPTION} {pid}"),
        ])
    })
}

/// Load stdin into a named buffer (an interactive teammate's private one, never the
/// user's paste buffers).
pub fn load_buffer(buffer: &str) -> Cmd {
    words(&["load-buffer", "-b", buffer, "-"])
}

/// Paste a named buffer into a pane as a bracketed paste (`-p`: the program sees a paste,
/// not typing) and delete the buffer (`-d`).
pub fn paste_buffer(buffer: &str, pane: &str) -> Cmd {
    words(&["paste-buffer", "-p", "-d", "-b", buffer, "-t", pane])
}

/// Drop a named buffer (after a failed paste).
pub fn delete_buffer(buffer: &str) -> Cmd {
    words(&["delete-buffer", "-b", buffer])
}

/// Press one key in a pane (`Enter`, `Escape`, `C-c`): a key name, never text to type.
pub fn send_key(pane: &str, key: &str) -> Cmd {
    words(&["send-keys", "-t", pane, key])
}

/// The visible pane as text, trailing spaces kept (`-N`: a prompt's trailing blank counts).
pub fn capture_screen(pane: &str) -> Cmd {
    words(&["capture-pane", "-p", "-N", "-t", pane])
}

/// The pane's lines from `start` (negative: history) to the bottom, wrapped lines joined.
pub fn capture_from(pane: &str, start: i64) -> Cmd {
    words(&[
        "capture-pane",
        "-p",
        "-J",
        "-N",
        "-S",
        &start.to_string(),
        "-t",
        pane,
    ])
}

/// Where the cursor is, counting history: `PANE_ID HISTORY_SIZE CURSOR_Y CURSOR_X
/// HISTORY_LIMIT`.
pub const CURSOR_FORMAT: &str =
    "#{pane_id} #{history_size} #{cursor_y} #{cursor_x} #{history_limit}";

pub fn cursor(pane: &str) -> Cmd {
    words(&["display-message", "-p", "-t", pane, CURSOR_FORMAT])
}

/// `[history_size, cursor_y, cursor_x, history_limit]` from `CURSOR_FORMAT`, checked against
/// the pane id.
pub fn parse_cursor(out: &str, pane: &str) -> Option<[i64; 4]> {
    let mut w = out.split_whitespace();
    if w.next()? != pane {
        return None;
    }
    let mut n = [0; 4];
    for v in &mut n {
        *v = w.next()?.parse().ok()?;
    }
    Some(n)
}

pub fn kill_session(session_target: &str) -> Cmd {
    words(&["kill-session", "-t", session_target])
}

/// Take teamctl's team tags off a session it leaves open for the user's panes (`delete`),
/// and off each of its windows (`windows`, ids): a new team of the same name must not take
/// the session, or a window the user opened in it, for its own (attacker QA). The window
/// settings teamctl gave come off the windows it made (`own`, of `windows`) only: a window
/// the user opened there keeps the user's (new-user QA: its `remain-on-exit` was unset).
pub fn untag_session(
    session_target: &str,
    team: &str,
    windows: &[String],
    own: &[String],
) -> Vec<Cmd> {
    let key = team_key(team);
    let mut cmds = Vec::new();
    for opt in [TEAM_OPTION, key.as_str()] {
        cmds.push(words(&[
            "set-option",
            "-u",
            "-t",
            &in_session(session_target),
            opt,
        ]));
        for w in windows {
            cmds.push(words(&["set-option", "-w", "-u", "-t", w, opt]));
        }
    }
    // And the window settings teamctl gave them (`own_window`): the user's panes left there
    // end, and show their borders, as the user's own settings say (QA: they stayed dead).
    for w in own {
        cmds.extend(own_settings_off(w));
    }
    cmds
}

/// Take teamctl's tags and window settings off a window it made for `team` in a session of
/// the user's (inside tmux, the leader's own session), left open because the user's panes
/// are there when the team goes (attacker QA 38: the user's panes stayed dead, and a new team
/// of the same name filled the window again).
pub fn untag_window(window: &str, team: &str) -> Vec<Cmd> {
    let mut cmds: Vec<Cmd> = [TEAM_OPTION, team_key(team).as_str()]
        .iter()
        .map(|opt| words(&["set-option", "-w", "-u", "-t", window, opt]))
        .collect();
    cmds.extend(own_settings_off(window));
    cmds
}

/// Unset what `own_window` set on `window` beyond the tags.
fn own_settings_off(window: &str) -> Vec<Cmd> {
    OWN_WINDOW_SETTINGS
        .iter()
        .map(|opt| words(&["set-option", "-w", "-u", "-t", window, opt]))
        .collect()
}

/// Every window of the server with its session's name and whether it carries `team`'s key
/// (`team_key`) (`parse_keyed_windows`).
pub fn keyed_windows(team: &str) -> Cmd {
    words(&[
        "list-windows",
        "-a",
        "-F",
        &format!(
            "#{{window_id}} #{{?#{{{}}},1,0}} {}",
            team_key(team),
            plain!("session_name")
        ),
    ])
}

/// The windows `keyed_windows` printed as carrying the key, with their session's name (a
/// window linked into two sessions is listed twice, once for each).
pub fn parse_keyed_windows(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let (id, keyed, session) = (it.next()?, it.next()?, it.next()?);
            (id.starts_with('@') && keyed == "1").then(|| (id.to_string(), session.to_string()))
        })
        .collect()
}

/// Rename a session (`rename-session`): fails with "duplicate session" when `name` is taken.
pub fn rename_session(session_target: &str, name: &str) -> Cmd {
    words(&["rename-session", "-t", session_target, name])
}

/// Mark `pane` as the team session's leader console (`CONSOLE_OPTION`, pane level), naming
/// the console's process (`tag_pid`).
pub fn tag_console(pane: &str, team: &str) -> Vec<Cmd> {
    vec![
        tag_pid(pane),
        words(&["set-option", "-p", "-t", pane, CONSOLE_OPTION, team]),
    ]
}

/// Whose pane teamctl takes its tags off (`untag_pane`): one it placed (`tag_pane`), whose
/// `remain-on-exit` it set too, or one whose tags someone else set (`Foreign`: its live
/// process is not teamctl's for them, or it is dead without its member's nonce), where every
/// setting is the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untag {
    Placed,
    Foreign,
}

impl Untag {
    /// A pane teamctl no longer holds (respawned, or its tags set by someone else): placed by
    /// teamctl when it carries a placement's nonce (`nonce`, the pane's), set by `tag_pane`
    /// with its settings; the member's own when it recorded one (`recorded`). Otherwise its
    /// settings are taken as the user's (attacker QA: tags forged for a pid the pane did not
    /// run were taken for a respawned pane of teamctl's, and its `remain-on-exit` unset).
    pub fn of(nonce: &str, recorded: Option<&str>) -> Untag {
        if !nonce.is_empty() && recorded.is_none_or(|r| r == nonce) {
            Untag::Placed
        } else {
            Untag::Foreign
        }
    }
}

/// Take every tag teamctl sets off a pane that is the user's now (`holds` no longer). Of a
/// pane teamctl placed, its `remain-on-exit` too: teamctl's, not the user's, so their pane
/// ends as their settings say. A foreign pane's is the user's own and stays (attacker QA: a
/// dead pane of the user's with forged tags lost it, and tmux then closed the pane with the
/// team's session).
pub fn untag_pane(pane: &str, whose: Untag) -> Vec<Cmd> {
    let placed = (whose == Untag::Placed).then_some("remain-on-exit");
    [
        AGENT_OPTION,
        TEAM_OPTION,
        CONSOLE_OPTION,
        COLOR_OPTION,
        NAME_OPTION,
        PID_OPTION,
        NONCE_OPTION,
    ]
    .into_iter()
    .chain(placed)
    .map(|opt| words(&["set-option", "-p", "-u", "-t", pane, opt]))
    .collect()
}

/// Every pane of the server, once for each session its window is linked into: id, dead flag,
/// pid, the pid the tags name, agent tag, console tag, nonce, then the session's name (the one
/// free-form field, last), tab-separated (`parse_team_panes`).
pub fn team_panes() -> Cmd {
    words(&[
        "list-panes",
        "-a",
        "-F",
        concat!(
            "#{pane_id}\t#{pane_dead}\t#{pane_pid}\t",
            plain!("@teamctl-pid"),
            "\t",
            plain!("@teamctl-agent"),
            "\t",
            plain!("@teamctl-console"),
            "\t",
            plain!("@teamctl-nonce"),
            "\t",
            plain!("session_name"),
            "\t",
            plain!("pane_start_command")
        ),
    ])
}

/// A team's panes on one server, from `team_panes`'s output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamPanes {
    /// teamctl's own panes of the team, wherever they are (a teammate's, tagged with an agent
    /// id of the team, or the team's console), each once: closed with the team.
    pub ours: Vec<String>,
    /// The process each of `ours` ran when it was read (`owner_of`): what its kill is guarded
    /// by.
    owners: Vec<(String, Owner)>,
    /// Panes that carry the team's tags for a process that is no longer teamctl's (the user
    /// respawned them): the user's, left open, their tags taken off.
    pub taken: Vec<String>,
    /// Panes carrying tags someone else set (of `ours`: `close_panes`), or teamctl's tags
    /// without its nonce: the user's, left open, only the tags taken off (`Untag::Foreign`).
    pub foreign: Vec<String>,
    /// Placeholders of the team's (`placeholder`, untagged, still running it) and the pid
    /// each ran when read: left by a start cut short, closed with the team.
    pub placeholders: Vec<(String, u32)>,
    /// (session name, pane) of every pane, to count what else a session holds.
    rows: Vec<(String, String)>,
}

impl TeamPanes {
    /// The process `pane` (one of `ours`) ran, or last ran, when it was read.
    pub fn owner_of(&self, pane: &str) -> Option<&Owner> {
        self.owners
            .iter()
            .find(|(p, _)| p == pane)
            .map(|(_, owner)| owner)
    }

    /// How many panes `session` holds that are not teamctl's (the user's own, split into it
    /// or respawned: never closed by teamctl).
    pub fn others_in(&self, session: &str) -> usize {
        self.rows
            .iter()
            .filter(|(s, p)| {
                s == session
                    && !self.ours.contains(p)
                    && !self.placeholders.iter().any(|(q, _)| q == p)
            })
            .count()
    }
}

/// The process a pane of `ours` ran, or last ran, when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// It had ended (the pane was dead).
    pub dead: bool,
    /// The pane's agent tag (empty for the console): whose record (`Started`) it is judged by.
    pub agent: String,
    /// The pane's nonce (`NONCE_OPTION`; empty when it has none).
    pub nonce: String,
}

/// The rows of `team_panes`'s output, each its fields in order (pane id, dead, pid, tagged
/// pid, agent tag, console tag, nonce, session, start command).
fn team_pane_rows(out: &str) -> impl Iterator<Item = [&str; 9]> {
    out.lines().filter_map(|line| {
        let mut it = line.splitn(9, '\t');
        let row: [&str; 9] = std::array::from_fn(|_| it.next().unwrap_or_default());
        row[0].starts_with('%').then_some(row)
    })
}

/// A placeholder pane (`placeholder`) as `team_panes` lists it: untagged, still running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderPane {
    pub pane: String,
    /// The process it runs (its kill is guarded by it).
    pub pid: u32,
    /// The team it was made for (its scoped tag).
    pub team: String,
    /// The process that made it (pid, start time), when it names one (`parse_placeholder`).
    pub maker: Option<(u32, u64)>,
}

/// The placeholder `row` (a `team_pane_rows` row) is, if it is one.
fn placeholder_row(row: &[&str; 9]) -> Option<PlaceholderPane> {
    let [id, dead, pid, _, agent, console, _, _, started] = *row;
    if dead == "1" || !agent.is_empty() || !console.is_empty() {
        return None;
    }
    let (team, maker) = parse_placeholder(started)?;
    Some(PlaceholderPane {
        pane: id.to_string(),
        pid: pid.parse().ok()?,
        team: team.to_string(),
        maker,
    })
}

/// Every placeholder pane in `team_panes`'s output, whatever its team.
pub fn parse_placeholders(out: &str) -> Vec<PlaceholderPane> {
    team_pane_rows(out)
        .filter_map(|row| placeholder_row(&row))
        .collect()
}

/// The panes of `team` (its scoped tag) in `team_panes`'s output.
pub fn parse_team_panes(out: &str, team: &str) -> TeamPanes {
    let mut panes = TeamPanes::default();
    for row in team_pane_rows(out) {
        if let Some(p) = placeholder_row(&row).filter(|p| p.team == team) {
            panes.placeholders.push((p.pane, p.pid));
        }
        let [id, dead, pid, tagged_pid, agent, console, nonce, session, _] = row;
        let dead = dead == "1";
        let of_team = console == team
            || agent
                .split_once('@')
                .is_some_and(|(_, scoped_team)| scoped_team == team);
        let list = match (of_team, holds(pid, tagged_pid)) {
            (true, true) => Some(&mut panes.ours),
            // Respawned: teamctl's settings come off a pane it placed (`Untag::of`).
            (true, false) if Untag::of(nonce, None) == Untag::Placed => Some(&mut panes.taken),
            (true, false) => Some(&mut panes.foreign),
            (false, _) => None,
        };
        if let Some(list) = list
            && !list.iter().any(|p| p == id)
        {
            list.push(id.to_string());
            if let (true, true, Ok(pid)) = (of_team, holds(pid, tagged_pid), pid.parse()) {
                let (agent, nonce) = (agent.to_string(), nonce.to_string());
                panes.owners.push((
                    id.to_string(),
                    Owner {
                        pid,
                        dead,
                        agent,
                        nonce,
                    },
                ));
            }
        }
        panes.rows.push((session.to_string(), id.to_string()));
    }
    panes
}

/// Make `pane` the current pane of its window and its window the current one.
pub fn focus(pane: &str) -> Vec<Cmd> {
    vec![
        words(&["select-window", "-t", pane]),
        words(&["select-pane", "-t", pane]),
    ]
}

/// Show `target` in a terminal: attach from outside tmux, switch the client from inside.
pub fn show(target: &str, inside: bool) -> Cmd {
    if inside {
        words(&["switch-client", "-t", target])
    } else {
        words(&["attach-session", "-t", target])
    }
}

/// A new pane as printed by `NEW_PANE_FORMAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPane {
    pub pane: String,
    pub pid: u32,
    pub window: String,
    /// Panes in the window, the new one included (when printed).
    pub panes: Option<usize>,
}

pub fn parse_new_pane(out: &str) -> Option<NewPane> {
    let mut it = out.trim().split(' ');
    let pane = it.next().filter(|p| p.starts_with('%'))?.to_string();
    let pid = it.next()?.parse().ok()?;
    let window = it.next().filter(|w| w.starts_with('@'))?.to_string();
    let panes = it.next().and_then(|n| n.parse().ok());
    Some(NewPane {
        pane,
        pid,
        window,
        panes,
    })
}

/// A pane as read by `STATE_FORMAT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneState {
    pub dead: bool,
    pub pid: Option<u32>,
    /// teamctl's agent tag on the pane while it holds (`holds`: the pane runs, or last ran,
    /// the process it was set for); empty otherwise, or when there is none.
    pub tag: String,
    /// The agent tag the pane carries for a process it no longer runs (the user respawned it:
    /// it is theirs, and its stale tags come off when teamctl comes across it); else empty.
    pub stale_tag: String,
    /// The pane's nonce (`NONCE_OPTION`); empty when it has none.
    pub nonce: String,
}

impl PaneState {
    /// A pane running `pid` with teamctl's agent tag `tag` set for it (`tag` empty: none).
    pub fn tagged(dead: bool, pid: Option<u32>, tag: &str) -> PaneState {
        PaneState {
            dead,
            pid,
            tag: tag.to_string(),
            stale_tag: String::new(),
            nonce: String::new(),
        }
    }
}

/// `None` unless the output is about `pane` (it does not exist otherwise).
pub fn parse_state(out: &str, pane: &str) -> Option<PaneState> {
    let line = out.lines().next()?;
    let mut it = line.splitn(5, ' ');
    if it.next()? != pane {
        return None;
    }
    let dead = match it.next()? {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    let pid_word = it.next()?;
    let pid = pid_word.parse().ok();
    let tagged_pid = it.next()?;
    let rest = it.next().unwrap_or("");
    let (tag, nonce) = rest.split_once('\t').unwrap_or((rest, ""));
    let (tag, nonce) = (tag.trim(), nonce.trim());
    let (tag, stale_tag) = if holds(pid_word, tagged_pid) {
        (tag.to_string(), String::new())
    } else {
        (String::new(), tag.to_string())
    };
    Some(PaneState {
        dead,
        pid,
        tag,
        stale_tag,
        nonce: nonce.to_string(),
    })
}

/// Each pane of `all_pane_states` output with its state, read line by line as `parse_state`
/// reads one; lines that are not a pane's are skipped.
pub fn parse_pane_states(out: &str) -> Vec<(String, PaneState)> {
    out.lines()
        .filter_map(|line| {
            let pane = line.split(' ').next().filter(|p| p.starts_with('%'))?;
            Some((pane.to_string(), parse_state(line, pane)?))
        })
        .collect()
}

/// Where a pane is (`HOME_FORMAT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub session: String,
    pub window: String,
    /// The window is zoomed (on one of the user's panes, as a rule).
    pub zoomed: bool,
}

/// The `Home` of `pane`, `None` when the output is not about it.
pub fn parse_home(out: &str, pane: &str) -> Option<Home> {
    let mut it = out.trim().split(' ');
    if it.next()? != pane {
        return None;
    }
    let session = it.next().filter(|s| s.starts_with('$'))?;
    let window = it.next().filter(|w| w.starts_with('@'))?;
    Some(Home {
        session: session.to_string(),
        window: window.to_string(),
        zoomed: it.next() == Some("1"),
    })
}

/// A pane row of `list_panes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRow {
    pub id: String,
    pub width: u32,
    pub height: u32,
    pub tag: String,
}

pub fn parse_pane_rows(out: &str) -> Vec<PaneRow> {
    out.lines()
        .filter_map(|l| {
            let mut it = l.splitn(4, ' ');
            let id = it.next().filter(|p| p.starts_with('%'))?.to_string();
            let width = it.next()?.parse().ok()?;
            let height = it.next()?.parse().ok()?;
            let tag = it.next().unwrap_or("").trim().to_string();
            Some(PaneRow {
                id,
                width,
                height,
                tag,
            })
        })
        .collect()
}

/// Where the next teammate goes in the leader's window: the pane to split and whether side by
/// side (`-h`), or `None` when the window has no room left (then a sibling window). The first
/// teammate goes beside the leader; later ones stack in the teammates' column, each keeping
/// at least `MIN_ROWS` rows.
pub fn next_split(panes: &[PaneRow], leader: &str, team: &str) -> Option<(String, bool)> {
    if panes.len() >= MAX_PANES {
        return None;
    }
    let mates: Vec<&PaneRow> = panes.iter().filter(|p| p.tag == team).collect();
    match mates.last() {
        None => {
            let lead = panes.iter().find(|p| p.id == leader)?;
            (lead.width > 2 * MIN_COLS).then(|| (lead.id.clone(), true))
        }
        Some(last) => {
            let n = mates.len() as u32;
            let column: u32 = mates.iter().map(|p| p.height).sum::<u32>() + (n - 1);
            let each = column.saturating_sub(n) / (n + 1);
            (each >= MIN_ROWS).then(|| (last.id.clone(), false))
        }
    }
}

/// Lines of `ID REST...` split at the first space.
pub fn parse_rows(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(' ') {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

/// A window as `list_windows` prints it (`parse_window`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub id: String,
    pub panes: usize,
    /// The user zoomed one of its panes: a split keeps that (`-Z`), a layout would undo it.
    pub zoomed: bool,
    /// Its team tag (empty: none).
    pub tag: String,
}

/// A window row of `list_windows`: id, pane count, zoomed or not, team tag.
pub fn parse_window(row: &(String, String)) -> Option<Window> {
    let (id, rest) = row;
    let mut it = rest.splitn(3, ' ');
    let panes = it.next()?.parse().ok()?;
    let zoomed = match it.next()? {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    Some(Window {
        id: id.clone(),
        panes,
        zoomed,
        tag: it.next().unwrap_or_default().to_string(),
    })
}

/// `tmux -V` output as (major, minor); `None` for builds without a number (`tmux master`).
pub fn parse_version(out: &str) -> Option<(u32, u32)> {
    let word = out.split_whitespace().nth(1)?;
    let digits = word.trim_start_matches(|c: char| !c.is_ascii_digit());
    let mut it = digits.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pane_is_teamctls_by_its_teams_agent_or_console_tag_for_the_process_it_runs() {
        // id, dead, pid, tagged pid, agent tag, console tag, nonce, session, start command.
        let out = "%1\t0\t10\t10\t\tt/k\t\tteamctl-t-k\n\
                   %2\t0\t11\t11\tbob@t/k\t\tn2\tteamctl-t-k\n\
                   %3\t0\t12\t\t\t\t\tteamctl-t-k\n\
                   %4\t0\t13\t13\tbob@other/k\t\t\tteamctl-t-k\n\
                   %5\t0\t14\t14\t\tother/k\t\tteamctl-t-k\n\
                   %6\t0\t99\t15\tcarol@t/k\t\tn6\tteamctl-t-k\n\
                   %7\t0\t98\t16\t\tt/k\t\tmine\n\
                   %2\t0\t11\t11\tbob@t/k\t\tn2\tmy session, linked\n\
                   %8\t1\t17\t17\tdan@t/k\t\tn8\tmine\n\
                   %9\t0\t18\t\tolder@t/k\t\t\tmine\n\
                   %10\t0\t19\t\t\t\t\tteamctl-t-k\tenv TEAMCTL_PLACEHOLDER=t/k cat\n\
                   %11\t0\t20\t\t\t\t\tmine\tenv TEAMCTL_PLACEHOLDER=other/k cat\n\
                   %12\t0\t21\t\t\t\t\tmine\tcat\n\
                   %13\t0\t22\t\t\t\t\tmine\tenv TEAMCTL_PLACEHOLDER=t/k TEAMCTL_PLACEHOLDER_BY=5:6 cat\n";
        let panes = parse_team_panes(out, "t/k");
        // A placeholder a start cut short left (the team's own, still running it, an older
        // teamctl's too): closed with the team, not counted as the user's; another team's, or
        // a plain `cat`, are not.
        assert_eq!(
            panes.placeholders,
            vec![("%10".to_string(), 19), ("%13".to_string(), 22)]
        );
        // The console, bob (linked into another session too: once), dan's dead pane elsewhere,
        // and a pane of an older teamctl that recorded no pid.
        assert_eq!(panes.ours, s(&["%1", "%2", "%8", "%9"]));
        // Each with the process its kill is guarded by, and whose record judges it.
        let owner = |pid, dead, agent: &str, nonce: &str| Owner {
            pid,
            dead,
            agent: agent.into(),
            nonce: nonce.into(),
        };
        assert_eq!(panes.owner_of("%1"), Some(&owner(10, false, "", "")));
        assert_eq!(
            panes.owner_of("%2"),
            Some(&owner(11, false, "bob@t/k", "n2"))
        );
        assert_eq!(
            panes.owner_of("%8"),
            Some(&owner(17, true, "dan@t/k", "n8"))
        );
        assert_eq!(
            panes.owner_of("%9"),
            Some(&owner(18, false, "older@t/k", ""))
        );
        assert_eq!(panes.owner_of("%6"), None, "not ours");
        // Respawned by the user: carol's pane, placed with its nonce (its settings teamctl's),
        // and a console (none: the window's settings are teamctl's, the pane's the user's).
        assert_eq!(panes.taken, s(&["%6"]));
        assert_eq!(panes.foreign, s(&["%7"]));
        // %3, %4, %5 and carol's pane %6 are not teamctl's.
        assert_eq!(panes.others_in("teamctl-t-k"), 4);
        assert_eq!(panes.others_in("mine"), 3);
        assert_eq!(panes.others_in("my session, linked"), 0);
        assert_eq!(panes.others_in("none"), 0);
        assert_eq!(parse_team_panes("", "t/k"), TeamPanes::default());
    }

    #[test]
    fn a_pid_given_again_to_another_process_is_not_the_one_its_worker_recorded() {
        // Process 42 started at tick 700; 43 is gone.
        let start_of = |pid| (pid == 42).then_some(700);
        let record = |pid, start| Some(Started { pid, start });
        let runs = |pid, dead, rec| runs_started(pid, dead, rec, &start_of);
        assert!(runs(42, false, record(42, 700)), "the worker itself");
        assert!(!runs(42, false, record(42, 699)), "the pid used again");
        assert!(runs(42, true, record(42, 699)), "dead: nothing to compare");
        assert!(runs(43, false, record(43, 5)), "gone from /proc: ended");
        assert!(runs(42, false, record(41, 1)), "a record of another pid");
        assert!(runs(42, false, None), "no record: the pid decides");
        let mut live: LiveState =
            serde_json::from_str(r#"{"status":"idle","pid":42,"since":0,"lastSeen":0}"#)
                .expect("an older worker's state still reads");
        assert_eq!(Started::of(&live), None, "it recorded no start time");
        live.start_ticks = Some(700);
        assert_eq!(Started::of(&live), record(42, 700));
        assert!(
            serde_json::to_string(&live)
                .unwrap()
                .contains(r#""startTicks":700"#)
        );
    }

    #[test]
    fn tags_hold_only_for_the_process_they_were_set_for() {
        assert!(holds("42", "42"));
        assert!(!holds("43", "42"), "respawned");
        assert!(!holds("", "42"));
        assert!(holds("42", ""), "an older teamctl recorded no pid");
        assert_eq!(
            parse_state("%3 0 43 42 bob@t/k\n", "%3"),
            Some(PaneState {
                dead: false,
                pid: Some(43),
                tag: String::new(),
                stale_tag: "bob@t/k".into(),
                nonce: String::new(),
            })
        );
        // The nonce after a tab, the tag before it (`STATE_FORMAT`).
        let mut nonced = PaneState::tagged(true, Some(42), "bob@t/k");
        nonced.nonce = "abc".into();
        assert_eq!(parse_state("%3 1 42 42 bob@t/k\tabc\n", "%3"), Some(nonced));
        assert_eq!(
            parse_state("%3 1 42 42 bob@t/k\n", "%3"),
            Some(PaneState::tagged(true, Some(42), "bob@t/k")),
            "dead, teamctl's process its last"
        );
        assert_eq!(
            parse_state("%3 0 43 42 \n", "%3"),
            Some(PaneState::tagged(false, Some(43), "")),
        );
        assert_eq!(
            tag_pid("%3"),
            s(&[
                "set-option",
                "-p",
                "-F",
                "-t",
                "%3",
                PID_OPTION,
                "#{pane_pid}"
            ])
        );
        assert_eq!(
            tag_pane("%3", "a@t", None, "t", "blue", "a")[0],
            tag_pid("%3")
        );
        assert_eq!(tag_console("%0", "t")[0], tag_pid("%0"));
        for whose in [Untag::Placed, Untag::Foreign] {
            let untag = untag_pane("%3", whose);
            for opt in [
                AGENT_OPTION,
                CONSOLE_OPTION,
                PID_OPTION,
                TEAM_OPTION,
                NONCE_OPTION,
            ] {
                assert!(
                    untag.contains(&s(&["set-option", "-p", "-u", "-t", "%3", opt])),
                    "{opt}"
                );
            }
            let remain = s(&["set-option", "-p", "-u", "-t", "%3", "remain-on-exit"]);
            assert_eq!(untag.contains(&remain), whose == Untag::Placed, "{whose:?}");
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn servers_come_from_the_environment_in_order() {
        assert_eq!(
            Server::from_env_values(Some("mine"), Some("/tmp/tmux-1/default,9,0")),
            Server::Named("mine".into())
        );
        assert_eq!(
            Server::from_env_values(None, Some("/tmp/tmux-1/work,9,0")),
            Server::Path("/tmp/tmux-1/work".into())
        );
        assert_eq!(Server::from_env_values(Some(""), Some("")), Server::Default);
        assert_eq!(
            Server::from_env_values(Some("/run/s"), None),
            Server::Path("/run/s".into())
        );
    }

    #[test]
    fn servers_round_trip_through_the_member_record() {
        for s in [
            Server::Default,
            Server::Named("x".into()),
            Server::Path("/tmp/a b/s".into()),
        ] {
            assert_eq!(Server::from_record(s.record().as_deref()), s);
        }
        assert_eq!(Server::Named("x".into()).flags(), s(&["-L", "x"]));
        assert_eq!(Server::Path("/p".into()).flags(), s(&["-S", "/p"]));
        assert!(Server::Default.flags().is_empty());
    }

    #[test]
    fn socket_paths_follow_tmux_rules() {
        let n = Server::Named("t1".into());
        assert_eq!(
            n.socket_path(None, 1000),
            PathBuf::from("/tmp/tmux-1000/t1")
        );
        assert_eq!(
            Server::Default.socket_path(Some("/run/x"), 5),
            PathBuf::from("/run/x/tmux-5/default")
        );
        assert_eq!(
            Server::Path("/s".into()).socket_path(None, 0),
            PathBuf::from("/s")
        );
    }

    #[test]
    fn trailing_semicolons_are_protected_and_commands_joined() {
        assert_eq!(protect("a;"), "a\\;");
        assert_eq!(protect("a\\;"), "a\\\\;");
        assert_eq!(protect(";x"), ";x");
        let l = line(
            &Server::Named("S".into()),
            &[s(&["kill-pane", "-t", "%1"]), s(&["echo", "x;"])],
        );
        assert_eq!(
            l,
            s(&["-L", "S", "kill-pane", "-t", "%1", ";", "echo", "x\\;"])
        );
    }

    #[test]
    fn session_names_are_exact_and_sanitised() {
        assert_eq!(session_name("a.b"), "teamctl-a_b");
        assert_eq!(
            session_name(&scoped("a.b", "0badc0de")),
            "teamctl-a_b-0badc0de"
        );
        assert_eq!(
            team_key(&scoped("t", "0badc0de")),
            "@teamctl-team-t-0badc0de"
        );
        assert_eq!(unscoped(&scoped("bob@t", "0badc0de")), "bob@t");
        assert_eq!(unscoped("bob@t"), "bob@t");
        assert_eq!(exact_session("teamctl-x"), "=teamctl-x");
        assert_eq!(in_session("=teamctl-x"), "=teamctl-x:");
        assert_eq!(in_session("$3"), "$3:");
    }

    fn start_fixture() -> (Vec<String>, PathBuf, Vec<(String, String)>) {
        (
            s(&["/bin/teamctl", "worker", "--home", "/h", "--id", "bob@t"]),
            PathBuf::from("/w/#dir"),
            vec![("K".into(), "v w".into())],
        )
    }

    #[test]
    fn split_gives_the_worker_argv_directly_without_focus_change() {
        let (argv, cwd, env) = start_fixture();
        let st = Start {
            argv: &argv,
            cwd: &cwd,
            env: &env,
        };
        let c = split_window("%3", true, &st);
        assert_eq!(
            c,
            s(&[
                "split-window",
                "-d",
                "-h",
                "-P",
                "-F",
                NEW_PANE_FORMAT,
                "-t",
                "%3",
                "-c",
                "/w/##dir",
                "-e",
                "K=v w",
                "--",
                "/bin/teamctl",
                "worker",
                "--home",
                "/h",
                "--id",
                "bob@t"
            ])
        );
        assert!(!c.iter().any(|w| w == "send-keys"));
        assert_eq!(split_window("%3", false, &st)[2], "-v");
    }

    #[test]
    fn new_sessions_and_windows_start_a_placeholder_then_respawn_the_worker() {
        let (argv, cwd, env) = start_fixture();
        let st = Start {
            argv: &argv,
            cwd: &cwd,
            env: &env,
        };
        let placeholder_argv = s(&[
            "--",
            "env",
            "TEAMCTL_PLACEHOLDER=t/0badc0de",
            "TEAMCTL_PLACEHOLDER_BY=77:12",
            PLACEHOLDER,
        ]);
        let c = new_session("teamctl-t", "t", "t/0badc0de", "77:12");
        assert_eq!(
            &c[..7],
            &s(&[
                "new-session",
                "-d",
                "-P",
                "-F",
                NEW_PANE_FORMAT,
                "-s",
                "teamctl-t"
            ])
        );
        let pos = c.iter().position(|w| w == "-x").unwrap();
        assert_eq!(&c[pos..pos + 4], &s(&["-x", "250", "-y", "80"]));
        assert_eq!(&c[c.len() - 5..], &placeholder_argv);
        assert_eq!(
            parse_placeholder(&c[c.len() - 4..].join(" ")),
            Some(("t/0badc0de", Some((77, 12))))
        );
        assert!(
            !c.iter().any(|w| w == "worker"),
            "the server must not carry a worker argv"
        );
        let w = new_window("=teamctl-t", "t", "t/0badc0de", "77:12");
        assert_eq!(&w[..2], &s(&["new-window", "-d"]));
        let pos = w.iter().position(|x| x == "-t").unwrap();
        assert_eq!(w[pos + 1], "=teamctl-t:");
        assert_eq!(&w[w.len() - 5..], &placeholder_argv);
        // An older teamctl's placeholder named no maker; anything else is no placeholder.
        assert_eq!(
            parse_placeholder("env TEAMCTL_PLACEHOLDER=t/k cat"),
            Some(("t/k", None))
        );
        for other in [
            "cat",
            "env TEAMCTL_PLACEHOLDER=t/k sh",
            "env TEAMCTL_PLACEHOLDER=t/k TEAMCTL_PLACEHOLDER_BY=x:1 cat",
            "env TEAMCTL_PLACEHOLDER=t/k OTHER=1:2 cat",
        ] {
            assert_eq!(parse_placeholder(other), None, "{other}");
        }
        let r = respawn("%4", &st);
        assert_eq!(&r[0][..4], &s(&["respawn-pane", "-k", "-t", "%4"]));
        assert_eq!(r[0][r[0].len() - 6..], argv[..]);
        assert_eq!(
            r[1],
            s(&["display-message", "-p", "-t", "%4", NEW_PANE_FORMAT])
        );
    }

    #[test]
    fn options_are_never_global_and_always_targeted() {
        let mut all = own_window("@4", "t");
        all.extend(tag_pane("%5", "bob@t", None, "t", "blue", "bob"));
        all.push(tag_session("=teamctl-t", "t"));
        for c in &all {
            assert!(!c.iter().any(|w| w == "-g" || w == "-gw"), "{c:?}");
            if c[0] == "set-option" {
                let t = c.iter().position(|w| w == "-t").expect("explicit target");
                assert!(["@4", "%5", "=teamctl-t:"].contains(&c[t + 1].as_str()));
            }
        }
        for c in tag_pane("%5", "bob@t", None, "t", "blue", "bob") {
            if c[0] == "set-option" {
                assert_eq!(
                    c[1], "-p",
                    "only pane-level options on a teammate pane: {c:?}"
                );
            }
        }
        assert!(
            tag_pane("%5", "bob@t", None, "t", "blue", "bob").contains(&s(&[
                "set-option",
                "-p",
                "-t",
                "%5",
                AGENT_OPTION,
                "bob@t"
            ]))
        );
        assert!(own_window("@4", "t").contains(&s(&[
            "set-option",
            "-w",
            "-t",
            "@4",
            "remain-on-exit",
            "on"
        ])));
        // The team key the guard asks for is set on every window teamctl makes.
        assert!(own_window("@4", "my.team").contains(&s(&[
            "set-option",
            "-w",
            "-t",
            "@4",
            "@teamctl-team-my.team",
            "1"
        ])));
        assert_eq!(
            session_guard("=teamctl-t", "t"),
            s(&["show-options", "-v", "-t", "=teamctl-t:", "@teamctl-team-t"])
        );
        assert_eq!(
            key_session("=teamctl-t", "t"),
            s(&["set-option", "-t", "=teamctl-t:", "@teamctl-team-t", "1"])
        );
        assert_eq!(
            window_guard("@4", "my.team"),
            s(&[
                "show-options",
                "-w",
                "-v",
                "-t",
                "@4",
                "@teamctl-team-my.team"
            ])
        );
    }

    #[test]
    fn probes_kills_and_attach_target_exactly() {
        assert_eq!(
            pane_state("%7"),
            s(&["display-message", "-p", "-t", "%7", STATE_FORMAT])
        );
        assert_eq!(
            kill_pane_running("%7", 4242),
            Some(s(&[
                "if-shell",
                "-F",
                "-t",
                "%7",
                "#{==:#{pane_pid},4242}",
                "kill-pane -t %7"
            ]))
        );
        // Anything but a pane id stays out of the command string tmux parses.
        for word in ["%", "7", "%7 ; kill-server", "%7;", "=s:0.1", "%1a", ""] {
            assert_eq!(kill_pane_running(word, 1), None, "{word:?}");
            assert_eq!(retag_running(word, 1, "a@t/k"), None, "{word:?}");
        }
        assert_eq!(
            retag_running("%7", 4242, "a@t.1/0badc0de"),
            Some(s(&[
                "if-shell",
                "-F",
                "-t",
                "%7",
                "#{==:#{pane_pid} #{@teamctl-agent},4242 a@t.1/0badc0de}",
                "set-option -p -t %7 @teamctl-pid 4242"
            ]))
        );
        // A tag tmux would read as more than text stays out of both.
        for tag in [
            "",
            "a@t/k}",
            "a@t/k,x",
            "a@t/k ; kill-server",
            "#{pane_pid}",
        ] {
            assert_eq!(retag_running("%7", 1, tag), None, "{tag:?}");
        }
        assert_eq!(
            kill_session("=teamctl-t"),
            s(&["kill-session", "-t", "=teamctl-t"])
        );
        assert_eq!(
            session_tag("=teamctl-t"),
            s(&["show-options", "-v", "-t", "=teamctl-t:", TEAM_OPTION])
        );
        assert_eq!(
            focus("%7"),
            vec![
                s(&["select-window", "-t", "%7"]),
                s(&["select-pane", "-t", "%7"])
            ]
        );
        assert_eq!(show("%7", true), s(&["switch-client", "-t", "%7"]));
        assert_eq!(show("%7", false), s(&["attach-session", "-t", "%7"]));
        assert_eq!(spread("%7"), s(&["select-layout", "-E", "-t", "%7"]));
        assert_eq!(
            select_layout("@2", "tiled"),
            s(&["select-layout", "-t", "@2", "tiled"])
        );
    }

    fn row(id: &str, w: u32, h: u32, tag: &str) -> PaneRow {
        PaneRow {
            id: id.into(),
            width: w,
            height: h,
            tag: tag.into(),
        }
    }

    #[test]
    fn the_leaders_window_takes_teammates_while_they_fit() {
        let rows = parse_pane_rows("%0 80 24 \n%9 40 24 other\n");
        assert_eq!(
            rows,
            vec![row("%0", 80, 24, ""), row("%9", 40, 24, "other")]
        );
        // First teammate: beside the leader (never beside another pane).
        assert_eq!(next_split(&rows, "%0", "t"), Some(("%0".into(), true)));
        assert_eq!(next_split(&[row("%0", 30, 24, "")], "%0", "t"), None);
        // Later ones: under the last teammate, while each keeps MIN_ROWS.
        let mut panes = vec![row("%0", 40, 24, ""), row("%1", 39, 24, "t")];
        assert_eq!(next_split(&panes, "%0", "t"), Some(("%1".into(), false)));
        panes = vec![
            row("%0", 40, 24, ""),
            row("%1", 39, 5, "t"),
            row("%2", 39, 5, "t"),
            row("%3", 39, 5, "t"),
            row("%4", 39, 6, "t"),
        ];
        assert_eq!(next_split(&panes, "%0", "t"), None);
        let full: Vec<PaneRow> = (0..MAX_PANES)
            .map(|i| row(&format!("%{i}"), 250, 80, if i == 0 { "" } else { "t" }))
            .collect();
        assert_eq!(next_split(&full, "%0", "t"), None);
        // A leader pane that is not in the list: no split.
        assert_eq!(next_split(&[], "%0", "t"), None);
    }

    #[test]
    fn tmux_output_is_parsed() {
        assert_eq!(
            parse_new_pane("%12 4567 @3 5\n"),
            Some(NewPane {
                pane: "%12".into(),
                pid: 4567,
                window: "@3".into(),
                panes: Some(5),
            })
        );
        assert_eq!(
            parse_new_pane("%12 4567 @3").and_then(|p| p.panes),
            None,
            "an older format without the count"
        );
        assert_eq!(parse_new_pane("garbage"), None);
        assert_eq!(
            parse_state("%3 0 42 42 bob@t\n", "%3"),
            Some(PaneState::tagged(false, Some(42), "bob@t"))
        );
        assert_eq!(
            parse_state("%3 1 42  \n", "%3"),
            Some(PaneState::tagged(true, Some(42), ""))
        );
        // A missing pane: tmux prints the format with empty fields and succeeds.
        assert_eq!(parse_state("    \n", "%3"), None);
        assert_eq!(parse_state("%4 0 42 42 bob@t", "%3"), None);
        assert_eq!(parse_state("", "%3"), None);
        assert_eq!(
            parse_home("%1 $2 @3 0\n", "%1"),
            Some(Home {
                session: "$2".into(),
                window: "@3".into(),
                zoomed: false
            })
        );
        assert_eq!(
            parse_home("%1 $2 @3 1\n", "%1").map(|h| h.zoomed),
            Some(true)
        );
        assert_eq!(parse_home("  \n", "%1"), None);
        assert_eq!(
            parse_zoomed(
                "zoom 1 @1 %1 1\nzoom 1 @1 %5 0\nzoom 0 @2 %2 1\nzoom 0 @2 %6 0\n\
                 zoom 1 @3 %3 1\nzoom 1 @3 %7 0\nzoom 1 @4 %8 1\nzoom 1 x;y %4 1\n",
                &["%5", "%6", "%3"]
            ),
            // @1: zoomed on %1, which stays; @2 not zoomed; @3 zoomed on the pane that
            // closes; @4 loses no pane.
            vec!["@1".to_string()]
        );
        assert_eq!(rezoom("@1; kill-server"), None);
        let rows = parse_rows("@1 3 0 t\n@2 8 1 \n@3 2 x t\n");
        let window = |id: &str, panes, zoomed, tag: &str| Window {
            id: id.into(),
            panes,
            zoomed,
            tag: tag.into(),
        };
        assert_eq!(parse_window(&rows[0]), Some(window("@1", 3, false, "t")));
        assert_eq!(parse_window(&rows[1]), Some(window("@2", 8, true, "")));
        assert_eq!(parse_window(&rows[2]), None);
        assert_eq!(parse_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(parse_version("tmux 2.9"), Some((2, 9)));
        assert_eq!(parse_version("tmux master"), None);
        assert_eq!(
            socket_of_tmux_env("/tmp/tmux-0/default,123,0"),
            Some(PathBuf::from("/tmp/tmux-0/default"))
        );
    }
    #[test]
    fn every_pane_is_read_in_one_command() {
        assert_eq!(
            all_pane_states(),
            s(&["list-panes", "-a", "-F", STATE_FORMAT])
        );
    }

    #[test]
    fn all_pane_states_are_parsed_and_garbage_skipped() {
        let out = "%1 0 100 100 bob@t\n\
                   %2 1 101  \n\
                   %3 0 102  \n\
                   garbage line\n\
                   \n\
                   %4 x 103 103 a@t\n\
                   %5 0 nopid  carol@t\n\
                   %6\n\
                   %7 0 104 104 dan@t\n";
        let state = PaneState::tagged;
        assert_eq!(
            parse_pane_states(out),
            vec![
                ("%1".into(), state(false, Some(100), "bob@t")),
                ("%2".into(), state(true, Some(101), "")),
                ("%3".into(), state(false, Some(102), "")),
                ("%5".into(), state(false, None, "carol@t")),
                ("%7".into(), state(false, Some(104), "dan@t")),
            ]
        );
        assert!(parse_pane_states("").is_empty());
        // What a server without panes of ours may print: nothing that looks like a pane.
        assert!(parse_pane_states("no server running\n").is_empty());
    }
}
