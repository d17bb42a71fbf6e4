//! The team's status rows: each member's state (checked against the pane or process), backend,
//! pane, pid, unread mail, current turn and last seen, and the table they make. A running
//! teammate the leader asked to stop shows as `shutdown_pending` (its turn still shown) until
//! it answers; a stopped one shows no turn, task or pid (they belonged to a worker that is
//! gone), a dead one no pid. An interactive teammate whose agent waits for the user (a permission prompt, a trust
//! dialog) says so and names the pane to answer in. A tmux teammate's pane is shown only
//! while it is the teammate's (after a tmux server restart the id may be a pane of the
//! user's), marked `?` when tmux could not be asked. A turn whose worker died is not running:
//! shown as interrupted, with no clock. Unread idle notifications (state, left out of the
//! default `inbox` view) are counted apart: UNREAD is what `inbox` shows, `(+N idle)` beside
//! it. A worktree's branch is the one it has checked out now (`worktree::head`), the recorded
//! one beside it when they differ. `teamctl status`, the board and the console's `/status`
//! show these.

use std::fmt::Write as _;

use crate::domain::time::{age, now_ms};
use crate::domain::{LiveState, Member, Status, TeamConfig};
use crate::leader;
use crate::output::Painter;
use crate::store::Store;

/// One member's row.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub name: String,
    pub agent_id: String,
    /// Its state as `leader::effective_status_with` tells it (`shutdown_pending` while the
    /// leader awaits its answer).
    #[serde(skip)]
    pub status: Status,
    /// What `--json`'s `status` says: `status`, or `unknown` when its live state cannot be
    /// read and its worker runs (`unknown` below): never `starting` then, as the table.
    #[serde(rename = "status")]
    pub said: &'static str,
    pub backend: Option<String>,
    /// The member's pane, while it is the member's (none when tmux says it is gone, another's,
    /// or a program of the user's runs in it).
    pub pane_id: Option<String>,
    /// `pane_id` is as recorded: tmux could not be asked whether it is still the member's.
    #[serde(skip)]
    pub pane_unchecked: bool,
    pub pid: Option<u32>,
    /// Every unread message, idle notifications too (as `--json` always said).
    pub unread: usize,
    /// Of `unread`, the idle notifications: the default `inbox` view leaves them out, so the
    /// table shows `unread - unreadIdle` and `(+N idle)` beside it.
    pub unread_idle: usize,
    pub current_turn: Option<String>,
    pub turn_started_at: Option<u64>,
    /// `current_turn` was its worker's when it died: the turn is not running (no clock).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub turn_interrupted: bool,
    /// That turn's message is still unread: a resume runs it again, `--skip-turn` starts it
    /// past it (as `leader::died_in_unhandled_turn` tells).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub turn_unhandled: bool,
    pub current_task: Option<u64>,
    pub last_seen: Option<u64>,
    pub color: String,
    /// The leader asked it to stop and awaits the answer.
    pub shutdown_requested: bool,
    /// Where it runs when that is another host (a store that hosts share).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// An interactive teammate's agent waits for the user to answer this in its pane (a
    /// permission prompt, a trust dialog).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_user: Option<String>,
    /// An interactive teammate's unread mail cannot be pasted into its agent now: why (its
    /// prompt not seen, its input line not empty). Only while mail is unread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mail_waits: Option<String>,
    /// Its live state could not be read (a FIFO or link where the file should be): what is
    /// wrong, shown under the table. Its state is then told without the worker's word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// `problem` left its state unknown (no word of its worker, which runs): what is at its
    /// state file instead, in a word; the STATUS cell says `unknown (state file is a FIFO)`.
    #[serde(skip)]
    pub unknown: Option<&'static str>,
    /// Why its running worker cannot watch its inbox (so reads no mail), shown under the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbox_problem: Option<String>,
    /// Why its dead worker ended, in its own words (its lock file spoiled, say), shown under
    /// the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_reason: Option<String>,
    /// Why its running worker will end once its turn is done (Ctrl-C in its pane): the
    /// STATUS cell says `stopping`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopping: Option<String>,
    /// Its worker is stopped by a signal (SIGSTOP; a tracer), so it reads no mail until it is
    /// continued: the STATUS cell says `idle (paused)`, a note under the table says how to go
    /// on. Looked at only where it shows (mail unread, or a turn said to run), so a quiet
    /// team's table reads no more files for it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// A process of its running turn is stopped by a signal, so the turn may go on only once
    /// it is continued: the STATUS cell says `working (paused)`, a note under the table says
    /// how to go on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_paused: Option<leader::PausedTurn>,
    /// Its plan command runs (this round of 3): the STATUS cell says `working (planning)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planning: Option<u32>,
    /// Its git worktree, as recorded, and the branch it works on (new-user QA 43: neither was
    /// shown anywhere but the team file): the one its worktree has checked out now
    /// (`worktree::head`; new-user QA 46: a `git switch` in it was not seen), else the one
    /// recorded. None while its HEAD is detached: `worktree_detached` has the commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_detached: Option<String>,
    /// The branch the worktree was made on (what `resume` makes it again from, what `delete`
    /// says it keeps), when that is not the one checked out now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_made_on: Option<String>,
    /// It runs, but its worktree (this host's own) is gone, removed by hand: its agent works
    /// in a deleted directory. A note under the table says how to have it made again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub worktree_gone: bool,
}

impl Row {
    /// The PANE column: the pane while it is the member's, marked `?` when tmux could not be
    /// asked; `-` for none.
    pub fn pane(&self) -> String {
        match (&self.pane_id, self.pane_unchecked) {
            (Some(p), false) => p.clone(),
            (Some(p), true) => format!("{p}?"),
            (None, _) => "-".into(),
        }
    }

    /// The UNREAD cell: the messages `inbox` shows, and the idle notifications beside them.
    pub fn unread_cell(&self) -> String {
        match self.unread_idle {
            0 => self.unread.to_string(),
            idle => format!("{} (+{idle} idle)", self.unread - idle),
        }
    }

    /// The STATUS cell (unpadded): the state, and what it waits on or why it stops, in a word.
    pub fn state_cell(&self) -> String {
        if let Some(kind) = self.unknown {
            let what = match kind {
                "unreadable" => "unreadable".to_string(),
                k => format!("is {k}"),
            };
            return format!("{UNKNOWN} (state file {what})");
        }
        let word = self.status.as_str();
        if self.paused || self.turn_paused.is_some() {
            return format!("{word} (paused)");
        }
        match (&self.needs_user, &self.stopping, &self.mail_waits) {
            (Some(_), _, _) => format!("{word} (needs you)"),
            (None, None, Some(_)) => format!("{word} (mail waits)"),
            (None, Some(_), _) => format!("{word} (stopping)"),
            // Not beside `shutdown_pending` (the cell would overflow its column).
            (None, None, None) if self.planning.is_some() && self.status == Status::Working => {
                format!("{word} (planning)")
            }
            (None, None, None) => word.to_string(),
        }
    }

    /// What the TURN column starts with when the teammate waits on the user: a dialog to
    /// answer in its pane, or why its mail cannot go in.
    pub fn waits_on(&self) -> Option<String> {
        match (&self.needs_user, &self.mail_waits) {
            (Some(what), _) => Some(format!(
                "answer {} in pane {}",
                crate::output::printable_line(what, 512),
                crate::output::printable_line(&self.pane(), 32)
            )),
            (None, Some(why)) => Some(format!(
                "mail waits: {}",
                crate::output::printable_line(why, 512)
            )),
            (None, None) => None,
        }
    }

    /// What follows the turn's summary: its age while it runs; a turn whose worker died is
    /// not running (new-user QA: a `kill -9`ed worker's turn kept a running clock).
    pub fn turn_note(&self, now: u64) -> Option<String> {
        if self.turn_interrupted {
            return Some("(interrupted: its worker died)".into());
        }
        self.turn_started_at.map(|at| format!("({})", age(at, now)))
    }
}

/// The state of a teammate whose worker runs but whose live state cannot be read.
pub const UNKNOWN: &str = "unknown";

/// The STATUS column's width: 22, or wider for a longer cell (`unknown (state file is a
/// directory)`: the row went out of line, re-check QA).
pub fn state_width(rows: &[Row]) -> usize {
    rows.iter()
        .map(|r| r.state_cell().len())
        .max()
        .unwrap_or(0)
        .max(22)
}

/// The UNREAD column's width: 6, or wider for a cell with idle notifications beside.
pub fn unread_width(rows: &[Row]) -> usize {
    rows.iter()
        .filter(|r| r.unread_idle > 0)
        .map(|r| r.unread_cell().len())
        .max()
        .unwrap_or(0)
        .max(6)
}

pub fn rows(store: &dyn Store, config: &TeamConfig) -> Vec<Row> {
    // One reading of every pane for the whole table (one tmux process per server), made
    // while the members' files are read: with a thousand teammates each takes tens of ms.
    std::thread::scope(|s| {
        let seen = s.spawn(|| crate::backend::Snapshot::of(&config.members));
        let files = in_parts(config.members.iter().collect(), |part| {
            read_files(store, part)
        });
        let seen = seen.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let members: Vec<(&Member, Files)> = config.members.iter().zip(files).collect();
        // Stopped processes, looked for once for the whole table and only when a turn runs.
        let stopped = leader::StoppedGroups::default();
        let local = Local {
            path: store.local_dir(),
            dir: std::sync::OnceLock::new(),
        };
        in_parts(members, |part| {
            rows_from(
                part,
                |m, live| leader::effective_status_with(store, m, live, &seen),
                |m| seen.is_members_pane(m),
                |m| read_files(store, vec![m]).pop(),
                &stopped,
                &local,
            )
        })
    })
}

/// The team's local directory (its worktrees'), opened once for the whole table, and only
/// when a member's worktree is looked at.
struct Local {
    path: std::path::PathBuf,
    dir: std::sync::OnceLock<Option<crate::store::fsutil::DirFd>>,
}

impl Local {
    fn dir(&self) -> Option<&crate::store::fsutil::DirFd> {
        self.dir
            .get_or_init(|| crate::store::fsutil::DirFd::open_path(&self.path).ok())
            .as_ref()
    }
}

/// What the member's worktree has checked out, for its row: the branch (the record's when it
/// cannot be told), the commit of a detached HEAD, and the recorded branch when it is not the
/// one shown. At most two small reads, only for a member with a worktree.
fn worktree_head(m: &Member, local: &Local) -> (Option<String>, Option<String>, Option<String>) {
    let Some(recorded) = m.worktree_branch.clone().filter(|_| m.worktree.is_some()) else {
        return (None, None, None);
    };
    let head = local.dir().and_then(|d| crate::worktree::head(m, d));
    let (branch, detached) = match head {
        Some(crate::worktree::Head::Branch(b)) => (b, None),
        Some(crate::worktree::Head::Detached(c)) => return (None, Some(c), Some(recorded)),
        None => return (Some(recorded), None, None),
    };
    let made_on = (branch != recorded).then_some(recorded);
    (Some(branch), detached, made_on)
}

/// Members per thread below which a table is made on the calling thread alone: a thread
/// costs tens of microseconds; one member's files and process check, a few.
const PART: usize = 128;

/// `each` over `items` in order, split over the machine's cores when there are many (a
/// thousand members' files are read in ~50 ms on one core, most of it system calls that
/// run in parallel).
fn in_parts<T: Send, R: Send>(items: Vec<T>, each: impl Fn(Vec<T>) -> Vec<R> + Sync) -> Vec<R> {
    let parts = parts_for(items.len());
    if parts <= 1 {
        return each(items);
    }
    let size = items.len().div_ceil(parts);
    let mut chunks = Vec::with_capacity(parts);
    let mut rest = items.into_iter();
    loop {
        let chunk: Vec<T> = rest.by_ref().take(size).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    std::thread::scope(|s| {
        let each = &each;
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| s.spawn(move || each(chunk)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// How many threads for `n` members: one per `PART`, at most the cores (and 8).
fn parts_for(n: usize) -> usize {
    if n < 2 * PART {
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    (n / PART).clamp(1, cores.min(8))
}

/// What a row needs from a member's files: its live state, and the ids of its unread
/// messages, each with whether it is an idle notification (the handled control requests left
/// out; the one a running turn handles is left out once its state is known).
struct Files {
    live: Option<LiveState>,
    unread: Vec<(String, bool)>,
    /// Why the live state could not be read.
    problem: Option<String>,
}

/// What the note under the table says of a live-state file written over (`Store::live_spoiled`),
/// after its path; the STATUS cell says `unknown (state file is spoiled)` for it.
const SPOILED: &str = " holds something other than a live state (written over?)";

fn read_files(store: &dyn Store, members: Vec<&Member>) -> Vec<Files> {
    members
        .into_iter()
        .map(|m| {
            let (live, problem) = match store.live(&m.name) {
                Ok(None) => (
                    None,
                    store.live_problem(&m.name).or_else(|| {
                        store.live_spoiled(&m.name).map(|p| {
                            format!(
                                "{}{SPOILED}: its worker writes its state over it at its next write; `teamctl doctor --fix` removes it now",
                                p.display()
                            )
                        })
                    }),
                ),
                Ok(live) => (live, None),
                Err(e) => (None, Some(e.to_string())),
            };
            let reader = leader::reader_for(&m.name);
            let handled = match &live {
                Some(l) if reader == crate::worker::READER => l.handled_control.clone(),
                _ => Vec::new(),
            };
            let unread = leader::unread_kinds(store, &m.name, reader, &handled);
            Files {
                live,
                unread,
                problem,
            }
        })
        .collect()
}

/// The rows, each member's state told by `status` (`leader::effective_status_with`), whether
/// its recorded pane is still its own by `pane` (`Snapshot::is_members_pane`; `None`: cannot
/// tell). A member judged dead has its files read again by `again` (after the pane check): read
/// before it, they can predate a graceful end, a worker that wrote `stopped` and exited
/// between the two reads showing as dead for one look (new-user QA).
fn rows_from(
    members: Vec<(&Member, Files)>,
    status: impl Fn(&Member, Option<&LiveState>) -> Status,
    pane: impl Fn(&Member) -> Option<bool>,
    again: impl Fn(&Member) -> Option<Files>,
    stopped: &leader::StoppedGroups,
    local: &Local,
) -> Vec<Row> {
    members
        .into_iter()
        .map(|(m, mut files)| {
            let mut judged = status(m, files.live.as_ref());
            if judged == Status::Dead
                && let Some(later) = again(m)
            {
                judged = status(m, later.live.as_ref());
                files = later;
            }
            let status = judged;
            let Files {
                live,
                unread,
                problem,
            } = files;
            // As `status` took it: a worker started by hand shows its own pid and pause, not
            // the dead first worker's (attacker QA 41).
            let fresh = leader::speaking_live(m, live.as_ref(), status.is_running());
            // The message a running turn handles is not unread (a dead worker's is).
            let handling = fresh
                .and_then(|l| l.current_turn.as_ref())
                .filter(|_| status == Status::Working)
                .map(|t| t.message_id.as_str());
            let unread_mail = unread
                .iter()
                .filter(|(id, _)| Some(id.as_str()) != handling)
                .count();
            let shutdown_requested = m.shutdown_request_id.is_some() && status.is_running();
            let shown = leader::shown_status(m, status);
            // What a stopped teammate's worker last wrote is history, not state.
            let fresh = fresh.filter(|_| status != Status::Stopped);
            // A stopped teammate's pane was closed (or is a dead one kept for reading). Another
            // host's is that host's to tell.
            let recorded = m.pane_id.clone().filter(|_| status != Status::Stopped);
            let seen = match (&recorded, crate::backend::host::elsewhere(m)) {
                (Some(_), None) => pane(m),
                _ => Some(true),
            };
            let unknown = problem
                .as_deref()
                .filter(|_| live.is_none() && status == Status::Starting)
                .map(|p| {
                    crate::store::fsutil::ODD_KINDS
                        .into_iter()
                        .find(|k| p.contains(&format!(" is {k},")))
                        .unwrap_or(if p.contains(SPOILED) {
                            "spoiled"
                        } else {
                            "unreadable"
                        })
                });
            let pid = fresh
                .map(|l| l.pid)
                .or(m.pid)
                .filter(|_| !matches!(status, Status::Stopped | Status::Dead));
            let paused = status.is_running()
                && (unread_mail > 0 || status == Status::Working)
                && crate::backend::host::elsewhere(m).is_none()
                && pid.is_some_and(crate::backend::proc::stopped_by_signal);
            let turn_paused = fresh
                .filter(|_| status == Status::Working && !paused)
                .and_then(|l| leader::paused_turn(m, Some(l), stopped));
            let (worktree_branch, worktree_detached, worktree_made_on) = worktree_head(m, local);
            Row {
                name: m.name.to_string(),
                agent_id: m.agent_id.clone(),
                status: shown,
                said: if unknown.is_some() {
                    UNKNOWN
                } else {
                    shown.as_str()
                },
                backend: m.backend_type.map(|b| b.to_string()),
                pane_id: recorded.filter(|_| seen != Some(false)),
                pane_unchecked: seen.is_none(),
                // A dead worker's pid names nothing now (the system may give it to another
                // process): shown as for a stopped one, none (new-user QA).
                pid,
                paused,
                turn_paused,
                unread: unread_mail,
                unread_idle: unread
                    .iter()
                    .filter(|(id, idle)| *idle && Some(id.as_str()) != handling)
                    .count(),
                current_turn: fresh
                    .and_then(|l| l.current_turn.as_ref())
                    .map(|t| t.summary.clone()),
                turn_started_at: fresh
                    .and_then(|l| l.current_turn.as_ref())
                    .map(|t| t.started_at),
                turn_interrupted: status == Status::Dead
                    && fresh.is_some_and(|l| l.current_turn.is_some()),
                turn_unhandled: status == Status::Dead
                    && fresh
                        .and_then(|l| l.current_turn.as_ref())
                        .is_some_and(|t| unread.iter().any(|(id, _)| *id == t.message_id)),
                current_task: fresh.and_then(|l| l.current_task),
                last_seen: live.as_ref().map(|l| l.last_seen),
                color: m.color.clone(),
                shutdown_requested,
                host: crate::backend::host::elsewhere(m).map(crate::backend::host::label),
                needs_user: fresh
                    .and_then(|l| l.needs_user.clone())
                    .filter(|_| status.is_running()),
                mail_waits: fresh
                    .and_then(|l| l.mail_waits.clone())
                    .filter(|_| status.is_running() && unread_mail > 0),
                inbox_problem: fresh
                    .and_then(|l| l.inbox_problem.clone())
                    .filter(|_| status.is_running()),
                unknown,
                exit_reason: fresh
                    .and_then(|l| l.exit_reason.clone())
                    .filter(|_| status == Status::Dead),
                stopping: fresh
                    .and_then(|l| l.stopping.clone())
                    .filter(|_| status.is_running()),
                planning: fresh.and_then(|l| l.planning_while(status)),
                problem,
                worktree: m.worktree.clone(),
                worktree_branch,
                worktree_detached,
                worktree_made_on,
                // One `lstat` for a running teammate with a worktree here; none for the rest.
                worktree_gone: status.is_running()
                    && crate::worktree::gone(m, &local.path).is_some(),
            }
        })
        .collect()
}

/// The status table as text.
pub fn render(paint: Painter, config: &TeamConfig, rows: &[Row]) -> String {
    let now = now_ms();
    let mut out = format!("team {}\n", paint.bold(config.name.as_str()));
    // Names may be up to 64 characters: the column grows so every row stays aligned.
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(16);
    // A HOST column only when some member runs on another host.
    let hosts = rows
        .iter()
        .filter_map(|r| r.host.as_deref())
        .map(str::len)
        .max();
    let host_col = |h: Option<&str>| match hosts {
        Some(w) => format!("{:<w$}  ", h.unwrap_or("-")),
        None => String::new(),
    };
    let unread_w = unread_width(rows);
    let state_w = state_width(rows);
    out.push_str(&format!(
        "{:<width$} {:<state_w$}  {:<8} {:<6} {:<8} {:>unread_w$}  {:<9}  {}{}\n",
        "NAME",
        "STATUS",
        "BACKEND",
        "PANE",
        "PID",
        "UNREAD",
        "LAST SEEN",
        host_col(hosts.map(|_| "HOST")),
        "TURN"
    ));
    for r in rows {
        let name = format!("{:<width$}", r.name);
        let status = format!("{:<state_w$}", r.state_cell());
        let status = match r.status {
            Status::Dead => paint.color(&status, "red"),
            Status::Working => paint.color(&status, "yellow"),
            Status::Idle => paint.color(&status, "green"),
            _ => status,
        };
        let mut turn = match (&r.current_turn, r.turn_note(now)) {
            // One line, bounded: a summary sent with `send --structured` may hold newlines and
            // any length (re-check QA: the row broke across lines).
            (Some(t), Some(note)) => format!("{} {note}", crate::output::printable_line(t, 200)),
            _ => String::new(),
        };
        if let Some(task) = r.current_task
            && !turn.starts_with(&format!("task #{task}:"))
            && !turn.starts_with(&format!("task #{task} "))
        {
            turn = format!("task #{task}: {turn}");
        }
        // What waits on the user comes first, before the turn (if any).
        let first = r.waits_on();
        if let Some(first) = first {
            turn = if turn.is_empty() {
                first
            } else {
                format!("{first}; {turn}")
            };
        }
        // Written into `out`, not formatted apart and copied: a row each for a thousand
        // teammates (BENCHMARKS.md, twelfth session).
        let _ = writeln!(
            out,
            "{} {}  {:<8} {:<6} {:<8} {:>unread_w$}  {:<9}  {}{}",
            paint.color(&name, &r.color),
            status,
            r.backend.as_deref().unwrap_or("-"),
            r.pane(),
            Dash(r.pid),
            r.unread_cell(),
            r.last_seen.map_or_else(|| "-".into(), |s| age(s, now)),
            host_col(r.host.as_deref()),
            turn
        );
    }
    notes(&mut out, rows);
    out
}

/// Under the table (`status` and the live board), where a short line cannot break the
/// columns: why a member's live state cannot be read, or its inbox cannot be watched.
pub fn notes(out: &mut String, rows: &[Row]) {
    for r in rows {
        if let Some(problem) = &r.problem {
            let _ = writeln!(
                out,
                "{}: its live state cannot be read, so its status is a guess: {}",
                r.name,
                crate::output::printable(problem)
            );
        }
        if let Some(problem) = &r.inbox_problem {
            let _ = writeln!(out, "{}", inbox_note(&r.name, problem));
        }
        if let Some(why) = &r.exit_reason {
            // A program that ended (typed `exit`, say) needs nothing fixed (new-user QA).
            let then = if crate::domain::live::program_ended(why) {
                "starts it again (so does a message sent to it)"
            } else {
                "once that is fixed"
            };
            let _ = writeln!(
                out,
                "{}: its worker exited: {}; `teamctl resume {}` {then}",
                r.name,
                crate::output::printable(why),
                r.name
            );
        }
        if r.turn_unhandled {
            // QA 40: status said the turn was interrupted, and nothing of the way past it.
            let _ = writeln!(
                out,
                "{}: died in its turn on a message still unhandled: `teamctl resume {}` runs that turn again, `teamctl resume {} --skip-turn` starts it past it (`teamctl log --worker {}` shows that turn)",
                r.name, r.name, r.name, r.name
            );
        }
        if r.paused
            && let Some(pid) = r.pid
        {
            let _ = writeln!(
                out,
                "{}: its worker (pid {pid}) is stopped by a signal (SIGSTOP?): it reads no mail until `kill -CONT {pid}`",
                r.name
            );
        }
        if let Some(p) = r.turn_paused {
            let _ = writeln!(
                out,
                "{}: its turn's process {} is stopped by a signal (SIGSTOP?), so the turn may wait for it: {}",
                r.name,
                p.pid,
                p.way_on()
            );
        }
        if r.worktree_gone
            && let Some(path) = &r.worktree
        {
            let _ = writeln!(out, "{}", worktree_gone_note(&r.name, path));
        }
        if let Some(why) = &r.stopping {
            let _ = writeln!(
                out,
                "{}: stopping after its current turn ({}); `teamctl interrupt {}` ends the turn now",
                r.name,
                crate::output::printable(why),
                r.name
            );
        }
    }
}

/// The line said of a running teammate whose worktree was removed under it (`status`, the
/// board; `doctor` says it as a finding).
pub fn worktree_gone_note(name: &str, path: &str) -> String {
    format!(
        "{name}: its worktree {} is gone (removed by hand?), so its agent works in a deleted directory: `teamctl kill {name}` then `teamctl resume {name}` makes it again from its branch",
        crate::output::printable_line(path, 1024)
    )
}

/// What a teammate whose worker cannot watch its inbox is, in a word (the console's status
/// line says it after the state).
pub const NO_MAIL: &str = "reads no mail";

/// The line said of a teammate whose running worker cannot watch its inbox (`status`, the
/// board, the console).
pub fn inbox_note(name: &str, problem: &str) -> String {
    format!(
        "{name}: {NO_MAIL}: its inbox cannot be watched: {}; it watches again by itself once that is done",
        crate::output::printable(problem)
    )
}

/// A number, or `-` for none, padded as asked.
struct Dash(Option<u32>);

impl std::fmt::Display for Dash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => std::fmt::Display::fmt(&n, f),
            None => f.pad("-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_split_over_threads_keeps_every_row_in_order() {
        for n in [0, 1, PART, 2 * PART, 1000, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let doubled = in_parts(items, |part| part.into_iter().map(|x| x * 2).collect());
            assert_eq!(
                doubled,
                (0..n).map(|x| x * 2).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
    }
}
