//! `teamctl lead`: the leader console. The leader's inbox live, from the first message unread
//! when the console starts (its place in the inbox is kept in memory, one number: two
//! consoles, the team session's own and one in the user's pane, each show every message, and
//! neither marks mail read for `teamctl inbox`), each sender in its colour; a status line with each
//! teammate's state, printed when it changes; typed lines (`@NAME text`, `@* text`,
//! `/status`, `/shutdown NAME`, `/tasks`, `/help`, `/quit`) read by a thread. Everything is
//! redrawn on file events, and shutdown responses are acted on (`leader::reconcile`) as soon
//! as they arrive; the only timed look is at the teammates' processes, every
//! `states::RECHECK` (a worker that dies writes no file). A teammate that reads no mail is said
//! once in `status`'s words and marked on the status line. The team deleted under it ends it
//! with an error (exit 1). Without a terminal it is plain line mode.

pub mod input;
pub mod screen;
pub mod states;

use crate::store::Position;
use std::io::IsTerminal;
use std::time::Duration;

use crate::bus;
use crate::context::Ctx;
use crate::domain::{Body, Envelope, IdleReason, LEADER, Name, TeamConfig};
use crate::error::{Error, Result};
use crate::leader::{self, Handoff};
use crate::output::printable;
use crate::store::{Item, SharedStore};
use crate::view::events::{Inboxes, Lines, TeamWatch};
use crate::view::status;
use input::{HELP, Input};
use screen::Screen;
use states::States;

/// Run the console until `/quit`, the end of input or Ctrl-C (exit 0), or until the team is
/// deleted (an error: exit 1, saying so).
pub fn run(ctx: &Ctx) -> Result<()> {
    ctx.require_leader("run the leader console")?;
    let store = ctx.store()?;
    let mut watch = TeamWatch::new(&store, Inboxes::Leader)?;
    let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let lines = Lines::spawn(watch.bell());
    let prompt = ctx.paint.bold("lead>");
    let mut console = Console {
        ctx,
        store: store.clone(),
        screen: Screen::new(tty, &prompt),
        states: States::default(),
        // From what the leader has not read yet (`teamctl inbox`'s cursor, only read here).
        shown: store.cursor(&Name::leader(), leader::reader_for(&Name::leader()))?,
        noted: std::collections::HashMap::new(),
        plans: std::collections::HashSet::new(),
        held: None,
    };
    let config = store.load()?;
    console.say(&format!(
        "{} {} {}",
        ctx.paint.bold("teamctl lead:"),
        ctx.paint.bold(config.name.as_str()),
        ctx.paint
            .dim("(@NAME text to send, /help for commands, /quit to leave)")
    ));
    loop {
        let drawn = std::time::Instant::now();
        console.screen.refresh();
        let Some(config) = watch.load()? else {
            return Err(deleted(ctx, &watch));
        };
        watch.follow_members(&config)?;
        console.handoffs();
        console.inbox(&config)?;
        // Again: the handoffs may have changed it (read again only if so).
        let Some(config) = watch.load()? else {
            return Err(deleted(ctx, &watch));
        };
        console.status_line(&config);
        // Nowhere to print (a full disk, a reader gone): the console ends with the error.
        console.screen.check()?;
        let typed = lines.drain();
        for line in &typed {
            let Some(line) = line else {
                return Ok(()); // end of input
            };
            if console.screen.is_terminal() {
                console.say(&format!("{prompt} {line}"));
            }
            let flow = console.typed(line);
            console.screen.prompt();
            if flow == Flow::Quit {
                return Ok(());
            }
        }
        if !typed.is_empty() {
            continue; // show what the lines did before sleeping
        }
        // Content changes come from file events. On a terminal the console also looks at its
        // size once a second (a resize writes no file), redrawing only when it changed; and
        // it looks at the teammates again every `states::RECHECK`, since a worker that dies
        // writes nothing either (the status line then says dead, not idle).
        let look_again = std::time::Instant::now() + states::RECHECK;
        loop {
            let resize_check = console
                .screen
                .is_terminal()
                .then(|| std::time::Instant::now() + std::time::Duration::from_secs(1));
            let deadline = resize_check.map_or(look_again, |r| r.min(look_again));
            let rung = watch.wait(Some(deadline));
            if rung || watch.stopped() || std::time::Instant::now() >= look_again {
                break;
            }
            console.screen.refresh();
        }
        settle(&watch, drawn);
        if watch.stopped() {
            return Ok(());
        }
        watch.check_reader()?;
    }
}

/// Why the console ends when its team file is gone under it: the live views' rule and words
/// (`view::events::why_gone`: deleted, a leftover directory, or something not a regular file
/// in the team file's place), one line after the screen is given back (on a terminal, a line
/// printed while it runs was cleared with its input line), exit 1 (SPEC: it failed; `ask`
/// ends the same way).
fn deleted(ctx: &Ctx, watch: &TeamWatch) -> Error {
    watch.why_gone(&ctx.home, "the leader console")
}

/// How long a burst of events may go quiet before the console redraws, and how long it may
/// last in all. A spawn alone changes the team file twice, then the worker its live state and
/// the leader's inbox; redrawing (every member's state, inbox subscriptions) on each of them
/// made the console the busiest process while 300 teammates were spawned.
const SETTLE: Duration = Duration::from_millis(20);
const SETTLE_MAX: Duration = Duration::from_millis(100);
/// The least time between two redraws: under a steady stream of events (a thousand spawns)
/// the console redrew once per spawn, reading every member's state and the whole team file
/// each time, a quarter of the machine's CPU (issue 14, spawn on tmux at 1,000).
const REDRAW_GAP: Duration = Duration::from_millis(200);

/// Let a burst of events pass, so it is drawn once, and at most once per `REDRAW_GAP` after
/// the redraw that began at `drawn`.
fn settle(watch: &TeamWatch, drawn: std::time::Instant) {
    let gap = drawn + REDRAW_GAP;
    let end = (std::time::Instant::now() + SETTLE_MAX).max(gap);
    while !watch.stopped() && watch.check_reader().is_ok() {
        let now = std::time::Instant::now();
        if now >= end {
            return;
        }
        // Quiet for `SETTLE`, and the gap over: draw. Events meanwhile: wait on, up to `end`.
        let quiet = (now + SETTLE).max(gap).min(end);
        if !watch.wait(Some(quiet)) {
            return;
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    Quit,
}

struct Console<'a> {
    ctx: &'a Ctx,
    store: SharedStore,
    screen: Screen,
    states: States,
    /// Where in the leader's inbox this console has shown up to.
    shown: Position,
    /// The inbox problem last said of each teammate (said again only when it changes).
    noted: std::collections::HashMap<Name, String>,
    /// The plan requests shown, by sender and request id: a later one with the same id is
    /// not the one `plan approve` answers (`plan::pending` takes the first), so its plan is
    /// not shown as if it were (attacker QA: a forged line with the id the worker waits on).
    plans: std::collections::HashSet<(String, String)>,
    /// Who was last said to hold the protocol lock with answers waiting (said again only
    /// when it changes).
    held: Option<String>,
}

impl Console<'_> {
    /// Print a line of output.
    fn say(&mut self, text: &str) {
        self.screen.line(text);
    }

    /// Act on shutdown responses (approved: the pane or process is ended).
    fn handoffs(&mut self) {
        match leader::reconcile_in_passing(&*self.store) {
            Ok(done) => {
                if !done.iter().any(|h| matches!(h, Handoff::Held(_))) {
                    self.held = None;
                }
                for h in done {
                    // A stop leaves a notice in the inbox, shown with the other mail.
                    match h {
                        Handoff::Refused(n, why) => {
                            self.say(&format!("{n} refused to shut down: {}", printable(&why)));
                        }
                        Handoff::Worktree(_, words) => self.say(&printable(&words)),
                        Handoff::Held(holder) if self.held.as_ref() != Some(&holder) => {
                            self.say(&printable(&leader::held_words(&holder)));
                            self.held = Some(holder);
                        }
                        _ => {}
                    }
                }
            }
            Err(e) => self.say(&printable(&format!("teamctl: {e}"))),
        }
    }

    /// Show the leader's mail not yet shown here. The console's place is its own, in memory:
    /// it may run unwatched in a detached session, so it never marks mail read for `teamctl
    /// inbox`, and another console does not move it.
    fn inbox(&mut self, config: &TeamConfig) -> Result<()> {
        let me = Name::leader();
        // An inbox shorter than what was shown was made anew (its directory removed): from
        // its start.
        if self.store.inbox_end(&me)? < self.shown {
            self.shown = Position::START;
        }
        let start = self.shown;
        let store = self.store.clone();
        let mut all = crate::store::entries(&*store, &me, start);
        for e in all.by_ref() {
            match e?.item {
                Item::Message(env) => {
                    let again = matches!(&env.body, Body::PlanApprovalRequest { request_id, .. }
                        if !self.plans.insert((env.from.clone(), request_id.clone())));
                    if let Some(text) = self.show(config, &env, again) {
                        self.say(&text);
                    }
                }
                Item::Garbage(w) => self.say(&format!("teamctl: warning: {}", printable(&w))),
                Item::Blank => {}
            }
        }
        self.shown = all.pos();
        Ok(())
    }

    /// One message as the console shows it; idle notifications are state (the status line),
    /// not lines, unless a turn failed or was interrupted.
    /// `again`: a plan request whose id was shown before.
    fn show(&self, config: &TeamConfig, env: &Envelope, again: bool) -> Option<String> {
        let p = &self.ctx.paint;
        let time = p.dim(&printable(
            env.timestamp.get(11..19).unwrap_or(&env.timestamp),
        ));
        let from = p.member(config, &env.from);
        match &env.body {
            Body::Message { text, .. } => {
                let to = if env.to == "*" { p.dim(" (to all)") } else { String::new() };
                let text = printable(text.trim_end()).replace('\n', "\n    ");
                Some(format!("{time} {from}{to}: {text}"))
            }
            Body::IdleNotification {
                idle_reason: IdleReason::Available,
                ..
            }
            | Body::ShutdownResponse { .. } => None,
            Body::IdleNotification {
                idle_reason,
                summary,
            } => Some(format!(
                "{time} {from} {}",
                p.color(
                    &format!(
                        "is idle ({idle_reason}){}",
                        summary
                            .as_ref()
                            .map(|s| format!(": {}", printable(s)))
                            .unwrap_or_default()
                    ),
                    "red"
                )
            )),
            Body::PlanApprovalRequest { .. } if again => Some(format!(
                "{time} {from} {}",
                p.dim("sent a plan again under a request id shown before (not the one to answer: `teamctl plan list` shows it)")
            )),
            Body::PlanApprovalRequest { request_id, .. }
                if !config
                    .member(&env.from)
                    .is_some_and(|m| leader::plan_pending(&*self.store, m, request_id)) =>
            {
                // An old request, answered, or of a turn that was interrupted: not to be answered now.
                Some(format!("{time} {from} {}", p.dim("sent a plan (no longer pending)")))
            }
            Body::PlanApprovalRequest { plan, .. } => Some(format!(
                "{time} {from} asks to approve a plan:\n    {}\n    {}",
                printable(plan.trim_end()).replace('\n', "\n    "),
                p.dim(&format!(
                    "answer with /approve {0} or /reject {0} TEXT (here), or `teamctl plan approve {0}` / `teamctl plan reject {0} --feedback TEXT`",
                    env.from
                ))
            )),
            _ => Some(p.message(config, env)),
        }
    }

    /// The teammates' states (printed again only when they changed): each by name while there
    /// are few, counted by state when there are many.
    fn status_line(&mut self, config: &TeamConfig) {
        let mates = self.states.look(&*self.store, config);
        // A teammate that reads no mail: said in full once (as `status` says it under its
        // table), and in a word on the status line while it lasts.
        self.noted.retain(|n, _| {
            mates
                .iter()
                .any(|m| &m.name == n && m.inbox_problem.is_some())
        });
        for m in &mates {
            if let Some(why) = &m.inbox_problem
                && self.noted.get(&m.name) != Some(why)
            {
                self.noted.insert(m.name.clone(), why.clone());
                let note = status::inbox_note(m.name.as_str(), why);
                self.say(&note);
            }
        }
        let p = &self.ctx.paint;
        let line = if mates.is_empty() {
            "no teammates yet: `teamctl spawn NAME --exec CMD`".to_string()
        } else if mates.len() <= states::NAMED {
            let parts: Vec<String> = mates
                .iter()
                .map(|m| {
                    let turn = m
                        .turn
                        .as_ref()
                        .map(|t| format!(" ({})", printable(t)))
                        .unwrap_or_default();
                    let no_mail = if m.inbox_problem.is_some() {
                        format!(", {}", status::NO_MAIL)
                    } else if m.planning {
                        ", planning".to_string()
                    } else {
                        String::new()
                    };
                    format!(
                        "{} {}{no_mail}{turn}",
                        p.color(m.name.as_str(), &m.color),
                        m.status
                    )
                })
                .collect();
            parts.join(" · ")
        } else {
            let counts: Vec<String> = states::counts(&mates)
                .iter()
                .map(|(status, n)| format!("{n} {status}"))
                .collect();
            let no_mail = match mates.iter().filter(|m| m.inbox_problem.is_some()).count() {
                0 => String::new(),
                1 => format!("; 1 {}", status::NO_MAIL),
                n => format!("; {n} read no mail"),
            };
            format!("{} teammates: {}{no_mail}", mates.len(), counts.join(" · "))
        };
        let line = p.dim(&format!("── {line}"));
        self.screen.status(&line);
    }

    /// Act on one typed line.
    fn typed(&mut self, line: &str) -> Flow {
        let input = match input::parse(line) {
            Ok(i) => i,
            Err(why) => {
                self.say(&why);
                return Flow::Go;
            }
        };
        let done = match input {
            Input::Nothing => Ok(()),
            Input::Quit => return Flow::Quit,
            Input::Help => {
                self.say(HELP);
                Ok(())
            }
            Input::Send { to, text } => self.send(&to, text),
            Input::Status => self.store.load().map(|config| {
                let rows = status::rows(&*self.store, &config);
                let table = status::render(self.ctx.paint, &config, &rows);
                self.say(table.trim_end());
            }),
            Input::Shutdown(name) => self.shutdown(&name),
            Input::Approve(name) => self.teamctl(&["plan", "approve", &name], "the plan's answer"),
            Input::Reject { name, feedback } => self.teamctl(
                &["plan", "reject", &name, "--feedback", &feedback],
                "the plan's answer",
            ),
            Input::Tasks => self.teamctl(&["task", "list"], "the task list"),
        };
        if let Err(e) = done {
            self.say(&printable(&format!("teamctl: {e}")));
        }
        Flow::Go
    }

    fn send(&mut self, to: &str, text: String) -> Result<()> {
        let config = self.store.load()?;
        let env = Envelope::new(LEADER, to, Body::message(text, None));
        let got = bus::deliver(&*self.store, &config, &env)?;
        let names: Vec<String> = got
            .iter()
            .map(|n| self.ctx.paint.member(&config, n.as_str()))
            .collect();
        self.say(&self.ctx.paint.dim(&format!("-> {}", names.join(", "))));
        for n in leader::resume_stopped(&self.ctx.home, &*self.store, &got)? {
            self.say(&format!("{n} was not running; resumed it"));
        }
        Ok(())
    }

    /// `teamctl ARGS` as the leader, run as its own process so its output lands in the
    /// console's scrolling area (argv only, no shell: names and text are never parsed);
    /// `what` names it when it fails (`task list`; `plan approve`/`reject`, new-user QA 45:
    /// the console said to answer a plan and had no way to).
    fn teamctl(&mut self, args: &[&str], what: &str) -> Result<()> {
        let exe = crate::backend::exe::current()
            .map_err(|e| Error::io_while("cannot find the teamctl binary", e))?;
        let color = if self.ctx.paint.enabled() {
            "always"
        } else {
            "never"
        };
        let out = std::process::Command::new(exe)
            .arg("--home")
            .arg(self.ctx.home.root())
            .args(["--team", self.store.team().as_str(), "--as", LEADER])
            .args(["--color", color])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Error::io_while(format!("cannot run `teamctl {}`", args.join(" ")), e))?;
        let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim_end().to_string();
        let (stdout, stderr) = (said(&out.stdout), said(&out.stderr));
        if out.status.success() {
            let both: Vec<&str> = [stdout.as_str(), stderr.as_str()]
                .into_iter()
                .filter(|t| !t.is_empty())
                .collect();
            match (both.is_empty(), args) {
                (true, ["task", "list"]) => self.say("no tasks"),
                (true, _) => {}
                // teamctl's own words, escaped by it (and coloured): said as they are.
                (false, _) => self.say(&both.join("\n")),
            }
        } else {
            let why = if stderr.is_empty() { stdout } else { stderr };
            self.say(&format!("{what} failed: {why}"));
        }
        Ok(())
    }

    fn shutdown(&mut self, name: &str) -> Result<()> {
        let name = Name::teammate_to_end(name, "shut down")?;
        self.store.load()?.require(name.as_str())?;
        let out = leader::handoff::handoff(
            &*self.store,
            std::slice::from_ref(&name),
            Some("asked from the leader console"),
            Duration::ZERO,
            false,
        )?;
        if out.stopped.contains(&name) {
            self.say(&format!("{name} is already stopped"));
        } else {
            self.say(&format!(
                "asked {name} to shut down; it stops once its current turn is done"
            ));
        }
        Ok(())
    }
}
