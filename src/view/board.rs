//! `teamctl status --watch`: a live board of the team, redrawn on file events (live state,
//! team file, task list, inboxes). On a terminal the screen is cleared and redrawn, and a
//! 1 s timer refreshes the ages; otherwise a new board is printed only when what it shows
//! (ages aside) changed; with `--json`, one JSON object per line, also only on change. Idle
//! notifications appear as state, never as lines. Ctrl-C exits 0; the team deleted under it
//! (or its team file alone removed: a leftover, said so) ends it with one line on stderr, exit 1. A HOST column appears when a member runs on another
//! host, as in `status`.

use crate::store::SharedStore;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::context::Ctx;
use crate::domain::time::{age, now_ms};
use crate::domain::{Status, TeamConfig};
use crate::error::Result;
use crate::view::events::{Inboxes, TeamWatch};
use crate::view::status::{Row, rows};

/// How often ages are refreshed (and dead workers, which write no event, noticed).
const TICK: Duration = Duration::from_secs(1);

/// What the board shows, without ages: a new board is printed only when this changes.
fn key(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            format!(
                "{}|{}|{:?}|{:?}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
                r.name,
                r.status,
                r.current_turn,
                r.turn_started_at,
                r.turn_interrupted,
                r.unread,
                r.unread_idle,
                r.current_task,
                r.pane(),
                r.pid,
                r.host,
                r.needs_user,
                r.problem,
                r.inbox_problem
            ) + &format!(
                "|{:?}|{:?}|{:?}|{}|{:?}",
                r.exit_reason, r.stopping, r.mail_waits, r.paused, r.turn_paused
            )
        })
        .collect()
}

/// Run the board until Ctrl-C (or the team is deleted: an error).
pub fn watch(ctx: &Ctx, store: &SharedStore) -> Result<()> {
    let tty = std::io::stdout().is_terminal() && !ctx.json;
    let mut watch = TeamWatch::new(store, Inboxes::Every)?;
    let mut last_key: Option<Vec<String>> = None;
    let mut out = std::io::stdout();
    if tty {
        // Hide the cursor while drawing; shown again on the way out.
        let _ = write!(out, "\x1b[?25l");
    }
    let result = (|| -> Result<()> {
        loop {
            let Some(config) = watch.load()? else {
                return Err(watch.why_gone(&ctx.home, "`status --watch`"));
            };
            watch.follow_members(&config)?;
            let _ = ctx.reconcile(&**store);
            let rows = rows(&**store, &config);
            let k = key(&rows);
            if ctx.json && last_key.as_ref() != Some(&k) {
                let value = serde_json::json!({ "team": config.name.as_str(), "members": rows });
                // A write error (a full disk, a reader gone) ends the board.
                crate::out::now(format!("{value}\n").as_bytes())?;
                last_key = Some(k);
            } else if !ctx.json && (tty || last_key.as_ref() != Some(&k)) {
                let board = render(ctx, &config, &rows, now_ms());
                let text = if tty {
                    // Home, each line cleared to its end, then the rest of the screen: no
                    // flicker from clearing the whole screen first.
                    // Each line cut to the width: a wrapped row pushed the header off a
                    // small pane (second new-user pass).
                    let cols = crate::output::terminal_size().map_or(usize::MAX, |(_, c)| c.into());
                    let body = format!("{board}{}", footer(ctx))
                        .lines()
                        .map(|l| crate::output::clip(l, cols))
                        .collect::<Vec<_>>()
                        .join("\x1b[K\n");
                    format!("\x1b[H{body}\x1b[J")
                } else {
                    format!("{board}\n")
                };
                crate::out::now(text.as_bytes())?;
                last_key = Some(k);
            }
            watch.wait(Some(Instant::now() + TICK));
            if watch.stopped() {
                return Ok(());
            }
            watch.check_reader()?;
        }
    })();
    if tty {
        let _ = writeln!(out, "\x1b[?25h");
        let _ = out.flush();
    }
    result
}

fn footer(ctx: &Ctx) -> String {
    ctx.paint
        .dim("\nlive: redrawn on file events · Ctrl-C to quit\n")
}

/// The board as text: one line per member with state, current turn and its age, unread
/// mail, current task, pane (or pid) and last seen.
pub fn render(ctx: &Ctx, config: &TeamConfig, rows: &[Row], now: u64) -> String {
    let mut out = format!(
        "team {}  {}\n",
        ctx.paint.bold(config.name.as_str()),
        ctx.paint.dim(&summary(rows))
    );
    // A HOST column only when some member runs on another host (as in `status`).
    let hosts = rows
        .iter()
        .filter_map(|r| r.host.as_deref())
        .map(str::len)
        .max();
    let host_col = |h: Option<&str>| match hosts {
        Some(w) => format!("{:<w$}  ", h.unwrap_or("-")),
        None => String::new(),
    };
    let unread_w = crate::view::status::unread_width(rows);
    let state_w = crate::view::status::state_width(rows);
    out.push_str(&format!(
        "{:<16} {:<state_w$}  {:>unread_w$}  {:<6} {:<10} {:<9}  {}{}\n",
        "NAME",
        "STATE",
        "UNREAD",
        "TASK",
        "PANE/PID",
        "LAST SEEN",
        host_col(hosts.map(|_| "HOST")),
        "TURN"
    ));
    for r in rows {
        let name = ctx.paint.color(&format!("{:<16}", r.name), &r.color);
        // As `status` says it: what it waits on, or why it stops, beside the state.
        let state = format!("{:<state_w$}", r.state_cell());
        let state = match r.status {
            Status::Dead => ctx.paint.color(&state, "red"),
            Status::Working => ctx.paint.color(&state, "yellow"),
            Status::Idle => ctx.paint.color(&state, "green"),
            _ => state,
        };
        let place = match (&r.pane_id, r.pid) {
            (Some(_), _) => r.pane(),
            (None, Some(pid)) => pid.to_string(),
            _ => "-".into(),
        };
        let turn = match (&r.current_turn, r.turn_note(now)) {
            (Some(t), Some(note)) => format!("{} {note}", one_line(t)),
            (Some(t), None) => one_line(t),
            _ => String::new(),
        };
        let turn = match r.waits_on() {
            Some(first) if turn.is_empty() => first,
            Some(first) => format!("{first}; {turn}"),
            None => turn,
        };
        out.push_str(&format!(
            "{name} {state}  {:>unread_w$}  {:<6} {:<10} {:<9}  {}{turn}\n",
            r.unread_cell(),
            r.current_task
                .map_or_else(|| "-".into(), |t| format!("#{t}")),
            place,
            r.last_seen.map_or_else(|| "-".into(), |s| age(s, now)),
            host_col(r.host.as_deref()),
        ));
    }
    // What `status` says under its table (new-user QA: the board showed a teammate that
    // reads no mail as plainly idle).
    crate::view::status::notes(&mut out, rows);
    out
}

/// `3 teammates: 1 working, 2 idle`.
fn summary(rows: &[Row]) -> String {
    let mates: Vec<&Row> = rows.iter().filter(|r| r.status != Status::Active).collect();
    let mut counts: Vec<(Status, usize)> = Vec::new();
    for r in &mates {
        match counts.iter_mut().find(|(s, _)| *s == r.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.status, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let noun = if mates.len() == 1 {
        "teammate"
    } else {
        "teammates"
    };
    if parts.is_empty() {
        format!("no {noun}")
    } else {
        format!("{} {noun}: {}", mates.len(), parts.join(", "))
    }
}

fn one_line(s: &str) -> String {
    let line = crate::output::printable(s.lines().next().unwrap_or(""));
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(59).collect::<String>())
    } else {
        line.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, status: Status) -> Row {
        Row {
            name: name.into(),
            agent_id: format!("{name}@t"),
            status,
            said: status.as_str(),
            backend: Some("process".into()),
            pane_id: None,
            pane_unchecked: false,
            pid: Some(42),
            unread: 0,
            unread_idle: 0,
            current_turn: None,
            turn_started_at: None,
            turn_interrupted: false,
            turn_unhandled: false,
            current_task: None,
            last_seen: Some(1_000),
            color: "blue".into(),
            shutdown_requested: false,
            host: None,
            needs_user: None,
            mail_waits: None,
            problem: None,
            unknown: None,
            inbox_problem: None,
            exit_reason: None,
            stopping: None,
            paused: false,
            turn_paused: None,
            planning: None,
            worktree: None,
            worktree_branch: None,
            worktree_detached: None,
            worktree_made_on: None,
            worktree_gone: false,
        }
    }

    /// A context without colour and an empty team t, to render boards with.
    fn plain() -> (Ctx, TeamConfig) {
        let ctx = Ctx {
            home: crate::store::Home::new("/nonexistent".into()),
            team: None,
            as_name: "team-lead".into(),
            turn: None,
            json: false,
            paint: crate::output::Painter::new(false),
            member_color: None,
        };
        let config: TeamConfig = serde_json::from_value(serde_json::json!({
            "name": "t", "description": "", "createdAt": 0, "leadAgentId": "team-lead@t",
            "leadSessionId": "x", "members": []
        }))
        .unwrap();
        (ctx, config)
    }

    #[test]
    fn ages_do_not_change_the_key_but_states_do() {
        let a = vec![row("bob", Status::Idle)];
        let mut b = a.clone();
        b[0].last_seen = Some(9_000);
        assert_eq!(key(&a), key(&b));
        b[0].status = Status::Working;
        assert_ne!(key(&a), key(&b));
    }

    #[test]
    fn a_host_column_shows_only_when_a_member_runs_elsewhere_and_its_change_redraws() {
        let (ctx, config) = plain();
        let here = vec![row("bob", Status::Idle)];
        assert!(!render(&ctx, &config, &here, 2_000).contains("HOST"));
        let mut there = here.clone();
        there[0].host = Some("hostb".into());
        let board = render(&ctx, &config, &there, 2_000);
        assert!(board.lines().nth(1).unwrap().contains("HOST"), "{board}");
        assert!(board.lines().nth(2).unwrap().contains("hostb"), "{board}");
        assert_ne!(key(&here), key(&there));
    }

    /// A turn's summary (from `send --structured`: any length, newlines) stays on its row of
    /// the `status` table, bounded (re-check QA: the row broke across lines, 5 KB long).
    #[test]
    fn a_summary_with_newlines_keeps_the_status_row_on_one_line() {
        let (_, config) = plain();
        let mut r = row("bob", Status::Working);
        r.current_turn = Some(format!("line1\nline2 {}", "E".repeat(5000)));
        r.turn_started_at = Some(1_000);
        let table = crate::view::status::render(
            crate::output::Painter::new(false),
            &config,
            std::slice::from_ref(&r),
        );
        let line = table.lines().find(|l| l.starts_with("bob")).unwrap();
        assert!(!table.contains("\nline2"), "{table}");
        assert!(
            line.contains("line1\\u{a}line2 EEE") && line.len() < 400,
            "{line}"
        );
    }

    /// A STATUS cell longer than the column (`unknown (state file is a directory)`) widens it:
    /// the next column starts at one place in every row of the table and the board (re-check
    /// QA: that row went out of line); `working (planning)` only beside `working`.
    #[test]
    fn a_long_state_cell_widens_its_column_in_the_table_and_the_board() {
        let (ctx, config) = plain();
        let mut odd = row("bob", Status::Starting);
        odd.unknown = Some("a directory");
        odd.said = crate::view::status::UNKNOWN;
        let mut planning = row("amy", Status::Working);
        planning.planning = Some(1);
        let mut pending = row("cat", Status::ShutdownPending);
        pending.planning = Some(1);
        let rows = vec![odd, planning, pending, row("dan", Status::Idle)];
        assert_eq!(rows[1].state_cell(), "working (planning)");
        assert_eq!(rows[2].state_cell(), "shutdown_pending");
        let table = crate::view::status::render(crate::output::Painter::new(false), &config, &rows);
        let board = render(&ctx, &config, &rows, 2_000);
        for (what, text, next) in [("table", &table, "process"), ("board", &board, "0")] {
            let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("team")).collect();
            let at: Vec<Option<usize>> = lines[1..5]
                .iter()
                .map(|l| l.find(&format!("  {next}")))
                .collect();
            assert!(
                at.iter().all(|a| a.is_some() && *a == at[0]),
                "{what}: {at:?}\n{text}"
            );
        }
    }

    /// The board says what a teammate waits on as `status` does (new-user QA: it showed a
    /// teammate whose mail could not go in as plainly idle).
    #[test]
    fn what_a_teammate_waits_on_shows_on_the_board_and_redraws_it() {
        let (ctx, config) = plain();
        let fine = vec![row("bob", Status::Idle)];
        let mut waits = fine.clone();
        waits[0].unread = 1;
        waits[0].mail_waits = Some("its input line in pane %3 is not empty".into());
        let board = render(&ctx, &config, &waits, 2_000);
        let line = board.lines().find(|l| l.starts_with("bob")).unwrap();
        assert!(line.contains("idle (mail waits)"), "{board}");
        assert!(
            line.contains("mail waits: its input line in pane %3"),
            "{board}"
        );
        assert_ne!(key(&fine), key(&waits));
        let mut asks = fine.clone();
        asks[0].needs_user = Some("a permission prompt".into());
        let board = render(&ctx, &config, &asks, 2_000);
        assert!(board.contains("idle (needs you)"), "{board}");
        assert!(
            board.contains("answer a permission prompt in pane -"),
            "{board}"
        );
    }

    #[test]
    fn an_inbox_that_cannot_be_watched_shows_under_the_board_and_redraws_it() {
        let (ctx, config) = plain();
        let fine = vec![row("bob", Status::Idle)];
        let mut stuck = fine.clone();
        stuck[0].inbox_problem = Some("/h/inboxes/bob is not a directory; move it away".into());
        let board = render(&ctx, &config, &stuck, 2_000);
        assert!(board.contains("bob: reads no mail"), "{board}");
        assert!(!render(&ctx, &config, &fine, 2_000).contains("reads no mail"));
        assert_ne!(key(&fine), key(&stuck));
    }

    #[test]
    fn summary_counts_teammates_by_state() {
        let rows = vec![
            row("team-lead", Status::Active),
            row("a", Status::Idle),
            row("b", Status::Working),
            row("c", Status::Idle),
        ];
        assert_eq!(summary(&rows), "3 teammates: 2 idle, 1 working");
        assert_eq!(summary(&rows[..1]), "no teammates");
    }
}
