//! `teamctl doctor [--fix]`: check tmux, the inotify limits, stale and leftover teams and
//! worktrees, temporary files writers left mid-write, teammates dead, stuck or paused,
//! orphaned processes, panes and team sessions, tags left on panes the user respawned, and a
//! current-team record naming a gone team (see `crate::doctor`). With `--fix`, clean up what was found
//! and say what was done. Exit 1 when something is wrong and was not fixed.

use crate::cli::DoctorArgs;
use crate::context::Ctx;
use crate::doctor::{self, Finding, Level};
use crate::error::{Error, Result};

/// Rounds of fixing: ending a worker can leave its agent processes to end in the next round.
const FIX_ROUNDS: usize = 3;

pub fn run(ctx: &Ctx, args: &DoctorArgs) -> Result<()> {
    if args.fix {
        // `--fix` ends processes and panes and removes teams' leftovers: the leader's call.
        ctx.require_leader("clean up with doctor --fix")?;
    }
    let mut findings = doctor::check(&ctx.home);
    let mut fixed: Vec<String> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    // Fixes that failed of findings that are problems: a warning's (a temporary file that
    // cannot be removed) is said as "not fixed" and leaves the exit at 0, as the warning did
    // (new-user QA 42: an undeletable temporary file made `--fix` exit 1).
    let mut failed_problems = 0;
    if args.fix {
        for _ in 0..FIX_ROUNDS {
            let fixes: Vec<_> = findings
                .iter()
                .filter_map(|f| Some((f.level, f.fix.clone()?)))
                .collect();
            if fixes.is_empty() {
                break;
            }
            for (level, fix) in fixes {
                match fix.apply() {
                    Ok(done) => fixed.push(done),
                    Err(e) => {
                        failed.push(e.to_string());
                        failed_problems += usize::from(level == Level::Problem);
                    }
                }
            }
            findings = doctor::check(&ctx.home);
            if !failed.is_empty() {
                break;
            }
        }
    }
    let problems = findings
        .iter()
        .filter(|f| f.level == Level::Problem)
        .count();
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "ok": problems + failed_problems == 0,
            "findings": findings,
            "fixed": fixed,
            "fixFailed": failed,
        }));
    } else {
        // What doctor says quotes names found on disk (a worktree's, a file's), which anyone
        // who can write the home (a teammate's turn) chooses: shown escaped, as messages are
        // (attacker QA: an OSC in a directory's name retitled the leader's terminal).
        for line in &fixed {
            crate::outln!("{} {}", ctx.paint.color("fixed", "green"), shown(line));
        }
        for line in &failed {
            crate::outln!("{} {}", ctx.paint.color("not fixed", "red"), shown(line));
        }
        for f in &findings {
            crate::out!("{}", render(ctx, f));
        }
    }
    // A problem whose fix failed is usually found again: counted once.
    let wrong = problems.max(failed_problems);
    if wrong > 0 {
        // Without `--fix`: it is named only when it would fix one of them.
        let fixable = findings
            .iter()
            .any(|f| f.level == Level::Problem && f.fix.is_some());
        let how = match (args.fix, fixable) {
            (true, _) => "the rest needs a person (see the hints above)",
            (false, true) => "`teamctl doctor --fix` cleans up what it can",
            (false, false) => "--fix would not change that: see the hints above",
        };
        return Err(Error::failed(format!(
            "doctor found {wrong} problem{}; {how}",
            if wrong == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

fn render(ctx: &Ctx, f: &Finding) -> String {
    let tag = match f.level {
        Level::Ok => ctx.paint.color("ok     ", "green"),
        Level::Warn => ctx.paint.color("warn   ", "yellow"),
        Level::Problem => ctx.paint.color("PROBLEM", "red"),
    };
    let mut out = format!("{tag} {:<9} {}\n", f.check, shown(&f.message));
    if let Some(h) = &f.hint {
        let h = shown(h);
        out.push_str(&format!("        {:<9} {}\n", "", ctx.paint.dim(&h)));
    }
    out
}

/// A finding's line as printed: escaped (`printable`), and on one line, a newline in a name
/// found on disk shown as `\u{a}` (attacker QA 42: a temporary file's name holding
/// `\nPROBLEM ...` printed a line of its own that looked like doctor's).
fn shown(line: &str) -> String {
    crate::output::printable_line(line, usize::MAX)
}
