//! The companion of an interactive teammate (`spawn --interactive`): the member's worker,
//! running detached beside a pane whose command is the agent's own TUI or REPL. It reads the
//! inbox like any worker, one message at a time, and makes each one a user turn of the agent:
//! it waits until the agent is idle with an empty input line, pastes the text through a
//! private tmux buffer (`load-buffer -b NAME -`, `paste-buffer -p -d`), presses Enter, and
//! waits for the turn to end. Mail that arrives meanwhile stays in the inbox until then, so
//! nothing is ever pasted over a running turn.
//!
//! Idle and busy: from the agent's hooks when the preset has them (Claude Code's
//! `UserPromptSubmit` makes it busy, `Stop` idle and carries the reply); otherwise the prompt
//! rule: the pane's last non-blank line matches `--prompt-pattern`, tmux's cursor sits right
//! after it, and the pane has not changed for `quietMs`. The reply of a generic REPL is what
//! the pane shows between the pasted input and the prompt coming back.
//!
//! A user typing in the pane is never pasted over: the companion pastes only while the input
//! line is empty (generic: the prompt line is exactly the prompt), and, generic, after the
//! pane was quiet. Memory: one screen capture at a time, the reply capped at 1 MiB.
//!
//! A companion lives as long as its pane: it watches the pane's process (`watch`, a pidfd,
//! nothing polled) and ends itself once that ends (the agent exited, the pane was closed, the
//! tmux server killed), leaving its member dead, so `send` and `ask` resume it, pane and all.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::turn::{Stoppers, TurnEnd, TurnResult};
use super::{Next, Worker};
use crate::backend::tmux::argv::{self, Server};
use crate::backend::tmux::run::{Fail, Tmux};
use crate::domain::interactive::{
    Interactive, claude_dialog, claude_input_line, claude_interrupted_after, continuation_prompt,
    frame, frame_header, reply_cut, reply_from,
};
use crate::domain::{Envelope, Status};
use crate::error::Result;
use crate::store::hooks;

/// How often a waiting companion looks at the pane (generic prompt rule, typed text).
const POLL: Duration = Duration::from_millis(50);
/// How often it checks that the pane is still there while the hooks say busy.
const HOOK_POLL: Duration = Duration::from_secs(1);

/// How long a starting worker waits for its agent's program to be up (`first_look`): less than
/// `leader::started::WITHIN`, which `spawn` waits.
const FIRST_LOOK: Duration = Duration::from_secs(10);

/// The companion's view of its agent.
pub struct Companion {
    pub tmux: Tmux,
    pub pane: String,
    pub rule: Interactive,
    /// Hooks: the agent is running a turn (a `UserPromptSubmit` without its `Stop` yet).
    busy: bool,
    /// The last screen seen and since when it has not changed (the quiet rule).
    screen: Option<(u64, Instant)>,
    /// Hooks: the running turn is the one the companion pasted.
    ours_running: bool,
    /// Hooks: the header (`frame_header`) of the last message whose turn was cancelled,
    /// which Claude Code may still put back in the input line.
    cancelled: Option<String>,
    /// Set once the pane's process has ended (`watch`).
    exited: Arc<AtomicBool>,
    /// Why the hook events could not be read, last said (said once, in the worker's log).
    hooks_problem: Option<String>,
}

/// One look at the pane.
struct Look {
    /// The pane is gone, dead, or no longer ours.
    gone: bool,
    /// The cursor's line counting history (`history_size + cursor_y`).
    line: i64,
    history: i64,
    /// How many lines of history the pane keeps (`history-limit`).
    limit: i64,
    /// The cursor on the visible screen (`cursor_x`, `cursor_y`).
    cursor: Option<(usize, usize)>,
    screen: String,
}

/// Why the agent cannot take a paste now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readiness {
    Ready,
    /// The hooks say a turn runs.
    Busy,
    /// The screen still changes.
    Moving,
    /// Quiet, but the input line is not the empty prompt (text typed in the pane, or the
    /// agent still works without a sound).
    Typed,
}

/// What the wait before a paste came to.
pub enum Waited {
    Ready,
    /// The pane is gone (the agent exited), or the worker was told to stop.
    Stop(&'static str),
    /// A shutdown request was approved while waiting.
    Exit,
}

/// A message pasted into the pane, what watching its turn needs.
struct Pasted {
    /// The member's agent id (its pane's tag).
    id: String,
    /// The cursor's line before the paste (a generic REPL's reply comes below it).
    line: i64,
    /// The message's header (`frame_header`), which the hooks' submitted prompt holds.
    header: String,
    /// What the message's turn shows of it in the input line (`Message from NAME (`).
    mark: String,
    /// The text as pasted.
    text: String,
    /// The agent's hooks tell its turns (else the prompt rule).
    hooks: bool,
}

/// What one look at the pane during a turn came to.
enum Seen {
    /// The turn is over (or cannot go on).
    Ended(TurnResult),
    /// Enter was pressed again: look again at once.
    Again,
    /// Nothing yet; what the agent waits for the user to answer, if anything.
    Waiting(Option<&'static str>),
}

/// What a wait during a turn ended with.
enum Woke {
    /// The bell, or time for the next look.
    Changed,
    /// The turn is to be cancelled: timed out or interrupted.
    End(TurnEnd),
    /// The worker was told to stop.
    Stop(&'static str),
}

/// A turn that did not run to its end, stopped for `why`.
fn stopped(why: &str) -> TurnResult {
    TurnResult {
        spawned: false,
        end: TurnEnd::Stopped,
        stdout: String::new(),
        stderr_tail: why.to_string(),
    }
}

/// A turn of the agent that ended so, with this reply.
fn ended(end: TurnEnd, stdout: String) -> TurnResult {
    TurnResult {
        spawned: true,
        end,
        stdout,
        stderr_tail: String::new(),
    }
}

/// Why a turn stopped when Enter could not be pressed.
fn enter_failed(e: &Fail) -> String {
    format!("Enter failed: {}", e.message())
}

/// A screen's fingerprint, to tell whether it changed.
/// How many of a dead pane's last lines `why_ended` says, and how much of each.
const LAST_LINES: usize = 5;
const LAST_LINE_CHARS: usize = 200;

/// `; its last output: A | B`: a dead pane's last non-blank lines (tmux's own "Pane is dead"
/// line left out), escapes made visible as the console does; empty when it printed nothing.
fn last_output<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let kept: Vec<&str> = lines
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with("Pane is dead ("))
        .collect();
    if kept.is_empty() {
        return String::new();
    }
    let last: Vec<String> = kept[kept.len().saturating_sub(LAST_LINES)..]
        .iter()
        .map(|l| crate::output::printable(&l.chars().take(LAST_LINE_CHARS).collect::<String>()))
        .collect();
    format!("; its last output: {}", last.join(" | "))
}

fn screen_hash(screen: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    screen.hash(&mut h);
    h.finish()
}

impl Companion {
    pub fn new(server: Server, pane: String, rule: Interactive) -> Companion {
        let program = crate::backend::tmux::find_tmux().unwrap_or_else(|_| "tmux".into());
        Companion {
            tmux: Tmux::new(program, server),
            pane,
            rule,
            busy: false,
            screen: None,
            ours_running: false,
            cancelled: None,
            exited: Arc::new(AtomicBool::new(false)),
            hooks_problem: None,
        }
    }

    /// Watch the pane's process: once it ends, `exited` says so and `bell` rings. False when
    /// the pane is gone already (or not ours). A process that cannot be watched (no pidfd) is
    /// looked at when mail comes, as before.
    pub fn watch(&self, agent_id: &str, bell: Arc<Notify>) -> bool {
        let look = self.tmux.run(&[argv::pane_state(&self.pane)]);
        let Some(state) = look.ok().and_then(|out| self.running(&out, agent_id)) else {
            return false;
        };
        if let Some(pid) = state.pid
            && crate::backend::proc::is_agent_process(pid, agent_id)
        {
            let exited = self.exited.clone();
            crate::backend::proc::on_exit(pid, move || {
                exited.store(true, Ordering::SeqCst);
                bell.notify_one();
            });
        }
        true
    }

    /// Why the agent's program ended, as its dead pane (kept by `remain-on-exit`) tells: its
    /// exit status or signal and its last lines of output. Each begins with
    /// `live::PROGRAM_ENDED` ("its program "), which `status` and `doctor` tell apart. Said in
    /// the member's live state (`exitReason`: `spawn`, `resume`, `send` and `status` say it; it
    /// was only on the dead pane: new-user QA). A pane gone, or no longer the member's, says
    /// only that.
    pub fn why_ended(&self, agent_id: &str) -> String {
        self.ended_in_pane(agent_id).unwrap_or_else(|| {
            let there = self
                .tmux
                .run(&[argv::pane_state(&self.pane)])
                .ok()
                .and_then(|out| argv::parse_state(&out, &self.pane))
                .is_some();
            if there {
                // Respawned with another program (QA: it was said to be gone).
                format!(
                    "its program ended: its pane {} runs another program now, no longer the teammate's",
                    self.pane
                )
            } else {
                format!(
                    "its program ended and its pane {} is gone (closed, or its tmux server ended)",
                    self.pane
                )
            }
        })
    }

    /// `why_ended` while the pane is there, dead and the member's; `None` when it is gone.
    fn ended_in_pane(&self, agent_id: &str) -> Option<String> {
        let dead_info: argv::Cmd = [
            "display-message",
            "-p",
            "-t",
            &self.pane,
            "#{pane_dead_status} #{pane_dead_signal}",
        ]
        .map(String::from)
        .to_vec();
        let cmds = [
            argv::pane_state(&self.pane),
            dead_info,
            argv::capture_from(&self.pane, -200),
        ];
        let ours = argv::scoped(agent_id, &crate::backend::proc::home_key());
        // tmux marks the pane dead when its terminal closes, and learns the exit status a
        // moment later (when it reaps the process): asked again until it has it, a while.
        // tmux 3.3a now and then never reaps it (a third of the starts here: new-user QA, the
        // status missing and the failure said 2 s late): the process, a zombie, tells.
        let deadline = Instant::now() + Duration::from_secs(2);
        let (out, zombie) = loop {
            let out = self.tmux.run(&cmds).ok()?;
            let state = argv::parse_state(&out, &self.pane).filter(|s| s.dead && s.tag == ours)?;
            let known = out.lines().nth(1).is_some_and(|l| !l.trim().is_empty());
            let zombie = state
                .pid
                .filter(|_| !known)
                .and_then(crate::backend::proc::zombie_exit);
            if known || zombie.is_some() || Instant::now() >= deadline {
                break (out, zombie);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut lines = out.lines().skip(1);
        let mut info = lines.next().unwrap_or("").split(' ');
        let how = match (info.next(), info.next(), zombie) {
            (_, Some(sig), _) if !sig.is_empty() => format!("was killed by signal {sig}"),
            (Some(code), _, _) if !code.is_empty() => format!("exited with status {code}"),
            (_, _, Some(Ok(code))) => format!("exited with status {code}"),
            (_, _, Some(Err(sig))) => format!("was killed by signal {sig}"),
            _ => "ended".to_string(),
        };
        Some(format!("its program {how}{}", last_output(lines)))
    }

    /// What the agent's screen asks the user to answer (a preset with a known TUI only).
    fn dialog(&self, look: &Look) -> Option<&'static str> {
        self.rule
            .uses_hooks()
            .then(|| claude_dialog(&look.screen))
            .flatten()
    }

    /// The pane's process has ended (`watch`).
    pub fn exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }

    /// Whether tmux says the agent's program is no longer running in its pane: the pane gone
    /// (or its server), dead, or no longer tagged for `agent_id`. A tmux call that fails in
    /// another way says nothing (false): `look` takes any failure for gone.
    fn program_gone(&self, agent_id: &str) -> bool {
        match self.tmux.run(&[argv::pane_state(&self.pane)]) {
            Ok(out) => self.running(&out, agent_id).is_none(),
            Err(Fail::Gone(_)) => true,
            Err(_) => false,
        }
    }

    /// The pane's state, as a `pane_state` line in `out` says it, while it runs the program of
    /// `agent_id` of this home: alive and tagged for it (`NAME@TEAM/HOMEKEY`: another home's
    /// pane with a reused id is gone for us).
    fn running(&self, out: &str, agent_id: &str) -> Option<argv::PaneState> {
        let ours = argv::scoped(agent_id, &crate::backend::proc::home_key());
        argv::parse_state(out, &self.pane).filter(|s| !s.dead && s.tag == ours)
    }

    fn look(&self, agent_id: &str) -> Look {
        let cmds = [
            argv::pane_state(&self.pane),
            argv::cursor(&self.pane),
            argv::capture_screen(&self.pane),
        ];
        let gone = Look {
            gone: true,
            line: 0,
            history: 0,
            limit: 0,
            cursor: None,
            screen: String::new(),
        };
        let Ok(out) = self.tmux.run(&cmds) else {
            return gone;
        };
        let mut parts = out.splitn(3, '\n');
        if parts
            .next()
            .and_then(|l| self.running(l, agent_id))
            .is_none()
        {
            return gone;
        }
        let at = parts.next().and_then(|l| argv::parse_cursor(l, &self.pane));
        let [history, y, _, limit] = at.unwrap_or_default();
        Look {
            gone: false,
            line: history + y,
            history,
            limit,
            cursor: at.and_then(|[_, y, x, _]| {
                Some((usize::try_from(x).ok()?, usize::try_from(y).ok()?))
            }),
            screen: parts.next().unwrap_or("").to_string(),
        }
    }

    /// The screen has not changed for the rule's quiet time (recorded as a side effect).
    fn quiet(&mut self, screen: &str) -> bool {
        let hash = screen_hash(screen);
        match self.screen {
            Some((old, since)) if old == hash => {
                since.elapsed() >= Duration::from_millis(self.rule.quiet_ms)
            }
            _ => {
                self.screen = Some((hash, Instant::now()));
                self.rule.quiet_ms == 0
            }
        }
    }

    /// Idle with an empty input line and a quiet screen, by the preset's rule.
    fn ready(&mut self, look: &Look) -> bool {
        self.readiness(look) == Readiness::Ready
    }

    /// What stands between the agent and the next paste, if anything.
    fn readiness(&mut self, look: &Look) -> Readiness {
        // Always looked at: the quiet clock runs from the last change.
        let quiet = self.quiet(&look.screen);
        if self.rule.uses_hooks() && self.busy {
            Readiness::Busy
        } else if !quiet {
            Readiness::Moving
        } else if !self.rule.input_free(&look.screen, look.cursor) {
            Readiness::Typed
        } else {
            Readiness::Ready
        }
    }

    /// Paste `text` as one bracketed paste through a private buffer (Enter is pressed by
    /// `enter`).
    fn paste(&self, buffer: &str, text: &str) -> std::result::Result<(), Fail> {
        let body = text.trim_end_matches(['\n', '\r']);
        let pasted = self.tmux.run_with_input(
            &[
                argv::load_buffer(buffer),
                argv::paste_buffer(buffer, &self.pane),
            ],
            body.as_bytes(),
        );
        if let Err(e) = pasted {
            let _ = self.tmux.run(&[argv::delete_buffer(buffer)]);
            return Err(e);
        }
        Ok(())
    }

    fn enter(&self) -> std::result::Result<(), Fail> {
        self.tmux
            .run(&[argv::send_key(&self.pane, "Enter")])
            .map(|_| ())
    }

    /// Claude Code takes a moment to take a large paste in (it shows it folded): Enter before
    /// that would send part of it. Wait, at most 2 s, until the input line holds the paste and
    /// the screen stopped changing.
    async fn settled(&self, agent_id: &str) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut last: Option<String> = None;
        while Instant::now() < deadline {
            let look = self.look(agent_id);
            if look.gone {
                return;
            }
            let holds = claude_input_line(&look.screen)
                .is_some_and(|l| !l.trim_matches([' ', '\u{a0}']).is_empty());
            if holds && last.as_deref() == Some(look.screen.as_str()) {
                return;
            }
            last = Some(look.screen);
            tokio::time::sleep(POLL).await;
        }
    }

    /// Press the preset's cancel key, if the pane is still ours.
    pub fn cancel(&self, agent_id: &str) {
        if !self.look(agent_id).gone {
            let _ = self
                .tmux
                .run(&[argv::send_key(&self.pane, &self.rule.cancel_key)]);
        }
    }

    /// After a cancel, Claude Code puts a prompt it had not answered yet back into the input
    /// line. When that is the companion's own message (its header, `mark`, on the input
    /// line), the line is cleared with one `C-c` (which clears text there; on an empty line it
    /// would only warn), so the next delivery finds it free. Text of the user's is left alone.
    ///
    /// `pressed`: the companion pressed the cancel key itself just before. Claude Code can
    /// drop a key under load, as it drops an Enter (`deliver`): the turn then ran on, the
    /// message was reported interrupted, and every later one waited behind a turn that never
    /// ended (flake hunt). So while no sign of the interruption shows (the message put back,
    /// or Claude Code asking what to do instead) and the screen still moves a second after
    /// the key (a running turn animates its spinner; an ended one is still), with the input
    /// line empty (nothing of the user's to lose), the key is pressed again, at most twice.
    /// Returns how many times it was pressed again.
    async fn after_cancel(&mut self, agent_id: &str, mark: &str, pressed: bool) -> u32 {
        // Claude Code restores the prompt a moment after the key: an empty line right away
        // proves nothing, so only a line that stayed free and still for a second ends the
        // watch early.
        const AGAIN_AFTER: Duration = Duration::from_secs(1);
        const MOVING: Duration = Duration::from_millis(300);
        let mut key_at = Instant::now();
        let mut again = 0;
        let mut cleared = false;
        let mut free_since: Option<Instant> = None;
        let mut seen: Option<(u64, Instant)> = None;
        while key_at.elapsed() < Duration::from_secs(3) {
            let look = self.look(agent_id);
            if look.gone {
                return again;
            }
            let hash = screen_hash(&look.screen);
            let changed_at = match seen {
                Some((h, at)) if h == hash => at,
                _ => Instant::now(),
            };
            seen = Some((hash, changed_at));
            let still = changed_at.elapsed() >= MOVING;
            let restored = claude_input_line(&look.screen).is_some_and(|l| l.contains(mark));
            let free = self.rule.input_free(&look.screen, look.cursor);
            if restored {
                free_since = None;
                if !cleared {
                    let _ = self.tmux.run(&[argv::send_key(&self.pane, "C-c")]);
                    cleared = true;
                }
            } else if cleared {
                return again;
            } else if pressed
                && again < 2
                && free
                && !still
                && key_at.elapsed() >= AGAIN_AFTER
                && !claude_interrupted_after(&look.screen, mark)
            {
                let _ = self
                    .tmux
                    .run(&[argv::send_key(&self.pane, &self.rule.cancel_key)]);
                again += 1;
                key_at = Instant::now();
                free_since = None;
            } else if free && still {
                let since = *free_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= Duration::from_secs(1) {
                    return again;
                }
            } else {
                free_since = None;
            }
            tokio::time::sleep(POLL).await;
        }
        again
    }

    /// A look of a generic REPL's turn: over when the prompt is back below the line the
    /// paste went to, and quiet (the reply is what came between); at a continuation prompt,
    /// one more Enter.
    fn generic_look(
        &mut self,
        turn: &Pasted,
        look: &Look,
        continued: &mut bool,
        dialog: Option<&'static str>,
    ) -> Seen {
        if look.line > turn.line && self.ready(look) {
            self.busy = false;
            let reply = self.reply_since(turn.line, look, &turn.text);
            return Seen::Ended(ended(TurnEnd::Exited(0), reply));
        }
        // A one-line compound statement waits at a continuation prompt (`... `) for the
        // empty line that ends it: one more Enter, once.
        if !*continued
            && look.line > turn.line
            && self.quiet(&look.screen)
            && look
                .cursor
                .is_some_and(|at| continuation_prompt(&look.screen, at))
        {
            *continued = true;
            self.screen = None;
            if let Err(e) = self.enter() {
                return Seen::Ended(stopped(&enter_failed(&e)));
            }
            return Seen::Again;
        }
        Seen::Waiting(dialog)
    }

    /// The generic reply: the pane from line `from` (counting history) to the bottom, the
    /// first of them echoing `first` (the input's first line). Once the history is full,
    /// lines counted from its top move: when the echo is no longer where it was, the reply's
    /// start has scrolled out of the pane's history, and what is left comes with a marker.
    fn reply_since(&self, from: i64, look: &Look, pasted: &str) -> String {
        let first = pasted.lines().next().unwrap_or("");
        let start = from - look.history;
        let Ok(lines) = self.tmux.run(&[argv::capture_from(&self.pane, start)]) else {
            return String::new();
        };
        let echoed = lines
            .lines()
            .next()
            .is_some_and(|l| l.contains(first.trim()));
        // tmux drops a tenth of a full history at once: near the limit, lines may have gone.
        if echoed || look.history * 10 < look.limit * 8 {
            let re = regex_lite::Regex::new(&self.rule.prompt_pattern).ok();
            let is_prompt = |l: &str| re.as_ref().is_some_and(|re| re.is_match(l));
            return reply_from(&lines, pasted, &is_prompt);
        }
        match self
            .tmux
            .run(&[argv::capture_from(&self.pane, -look.history)])
        {
            Ok(all) => reply_cut(&all, look.limit),
            Err(_) => String::new(),
        }
    }
}

/// Why mail waits for an agent whose prompt was not seen in its first look (`FIRST_LOOK`).
fn prompt_unseen(rule: &Interactive) -> String {
    let secs = FIRST_LOOK.as_secs();
    if rule.uses_hooks() {
        format!(
            "its prompt was not seen in its first {secs} s (a slow start, or a dialog teamctl does not know)"
        )
    } else {
        format!(
            "its prompt was not seen in its first {secs} s: no line of its pane matched --prompt-pattern '{}' with the cursor after it (a slow start, or a pattern that does not match its empty prompt line)",
            rule.prompt_pattern
        )
    }
}

/// Why mail waits for an agent whose input line is not empty (`Readiness::Typed`).
fn typed_line(c: Option<&Companion>) -> Option<String> {
    let c = c?;
    Some(if c.rule.uses_hooks() {
        format!(
            "its input line in pane {} is not empty (text typed there)",
            c.pane
        )
    } else {
        format!(
            "no empty prompt line in pane {}: it is still working, text is typed there, or its prompt does not match --prompt-pattern '{}'",
            c.pane, c.rule.prompt_pattern
        )
    })
}

impl Worker {
    /// Take the agent's hook events: busy on a submitted prompt, idle on Stop. `ours`: the
    /// header and id of the message this companion pasted, when a turn of its own runs.
    /// Returns the message of the Stop that ends that turn: the first Stop after a submitted
    /// prompt that holds the header, and that the hook found to end that message's turn in
    /// the agent's transcript (`HookEvent::turn`). Any other Stop while ours runs is not its
    /// end (one forged from the agent's tools naming another transcript, attacker QA).
    #[allow(
        clippy::option_option,
        reason = "None: no Stop of ours yet; Some(None): a Stop without a message"
    )]
    fn take_hook_events(&mut self, ours: Option<(&str, &str)>) -> Option<Option<String>> {
        // A file the events cannot be read from (a FIFO, a link, a device in its place) is
        // said once in the worker's log, not taken for "no events" in silence (attacker QA:
        // the turn then waited for its timeout with nothing said why).
        let events = match hooks::take(&*self.store, &self.name) {
            Ok(events) => {
                if let Some(c) = self.companion.as_mut() {
                    c.hooks_problem = None;
                }
                events
            }
            Err(e) => {
                let said = e.to_string();
                if let Some(c) = self.companion.as_mut()
                    && c.hooks_problem.as_deref() != Some(said.as_str())
                {
                    c.hooks_problem = Some(said.clone());
                    self.sink.note(&format!(
                        "warning: cannot read the agent's hook events ({said}); its turns end by their timeout until that is fixed"
                    ));
                }
                Vec::new()
            }
        };
        let mut stopped = None;
        for e in events {
            let Some(c) = self.companion.as_mut() else {
                break;
            };
            match e.event.as_str() {
                "user-prompt-submit" => {
                    c.busy = true;
                    let mine = match (ours, e.text.as_deref()) {
                        (Some((header, _)), Some(prompt)) => prompt.contains(header),
                        (Some(_), None) => true,
                        (None, _) => false,
                    };
                    c.ours_running = mine;
                }
                "stop" => {
                    if !c.ours_running {
                        c.busy = false;
                    } else if e.turn.is_some() && e.turn.as_deref() == ours.map(|(_, id)| id) {
                        c.busy = false;
                        c.ours_running = false;
                        stopped = Some(e.text);
                    } else {
                        self.sink.note(
                            "a Stop that does not end the turn of the message being delivered: not taken for its end",
                        );
                    }
                }
                "notification" => {
                    let what = e.text.unwrap_or_default();
                    self.sink.note(&format!("agent notification: {what}"));
                }
                _ => {}
            }
        }
        stopped
    }

    /// Record what the agent waits for the user to answer in its pane (`status` and `doctor`
    /// show it); the live state is written only when that changes.
    pub(super) fn needs_user(&mut self, what: Option<&str>) {
        if self.live.needs_user.as_deref() == what {
            return;
        }
        self.live.needs_user = what.map(str::to_string);
        if let (Some(what), Some(c)) = (what, &self.companion) {
            self.sink
                .note(&format!("waiting for the user: {what} in pane {}", c.pane));
        }
        self.save_live();
    }

    /// Record why mail cannot be pasted into the agent now (`LiveState::mail_waits`; `None`:
    /// it can); the live state is written only when that changes.
    fn mail_waits(&mut self, why: Option<String>) {
        if self.live.mail_waits == why {
            return;
        }
        self.live.mail_waits = why;
        // Written as what it is until the paste: idle, no turn, the message unread (its
        // turn, already in hand, is written once it goes in: `record_turn_hops`). Written
        // as working, `status` showed a turn running that the agent never got.
        let (status, turn) = (self.live.status, self.live.current_turn.take());
        self.live.status = Status::Idle;
        self.save_live();
        (self.live.status, self.live.current_turn) = (status, turn);
    }

    /// Wait, before the worker says it is idle, until the agent's program is up: its prompt
    /// shown (ready, by its rule) or a dialog asking the user; or until it ended (the caller
    /// says why) or `FIRST_LOOK` passed (a slow start, or a prompt its pattern does not match:
    /// its first message waits as any does; a shutdown request ends the wait). Until then the
    /// worker writes no live state, so `spawn`, `resume` and `up` wait for it
    /// (`leader::started`): a program that exits a moment after starting fails them with why. It was taken as started as soon as its pane ran, and `up` or `resume` said
    /// "resumed", exit 0, of a program that had already ended (new-user QA).
    pub(super) async fn first_look(&mut self) {
        let deadline = Instant::now() + FIRST_LOOK;
        let id = self.member.agent_id.clone();
        while Instant::now() < deadline {
            let Some(c) = self.companion.as_mut() else {
                return;
            };
            if c.exited() {
                return;
            }
            let look = c.look(&id);
            if look.gone && c.program_gone(&id) {
                // Ended before its exit could be watched (`watch` found it a zombie already,
                // its environment unreadable, on a loaded machine): ended all the same. It was
                // taken as up, and `up` said "py resumed", exit 0 (CI, one run in many).
                c.exited.store(true, Ordering::SeqCst);
                return;
            }
            // Gone by a tmux call that failed, the program still there (attacker QA: one failed
            // `capture-pane` failed a healthy start): looked at again at the next round.
            if !look.gone && (c.dialog(&look).is_some() || c.ready(&look)) {
                return;
            }
            let rung = tokio::select! {
                () = self.bell.notified() => true,
                () = tokio::time::sleep(POLL) => false,
            };
            // Mail: a shutdown request is answered now, by the loop (attacker QA: `shutdown`
            // waited out the whole first look of a program whose prompt never showed).
            if rung && self.scan_control().is_ok() && self.control.shutdown_pending() {
                return;
            }
        }
        // Not seen: in the first live state (written next), so the start warns of it, and
        // `status` says it while mail waits (new-user QA: a pattern that matched nothing
        // showed `idle`, its mail unread, and nothing said why).
        if let Some(c) = &self.companion {
            self.live.mail_waits = Some(prompt_unseen(&c.rule));
        }
    }

    /// Wait until the agent can take a message: idle, input line empty. A shutdown request
    /// is answered meanwhile (the message stays unread for `resume`).
    async fn wait_ready(&mut self, stop: &mut Stoppers) -> Result<Waited> {
        let mut said: Vec<Readiness> = Vec::new();
        loop {
            self.take_hook_events(None);
            let id = self.member.agent_id.clone();
            let Some(c) = self.companion.as_mut() else {
                return Ok(Waited::Stop("no pane"));
            };
            let look = c.look(&id);
            if look.gone {
                return Ok(Waited::Stop("the agent's pane is gone"));
            }
            let dialog = c.dialog(&look);
            let readiness = c.readiness(&look);
            if readiness == Readiness::Ready {
                self.needs_user(None);
                self.mail_waits(None);
                return Ok(Waited::Ready);
            }
            // A cancelled message put back in the input line after `after_cancel` stopped
            // watching (on a loaded machine Claude Code can take longer than its 3 s): every
            // later message waited behind it for good (the claude_interrupt test, a few runs
            // in twenty with eight copies side by side). Its header names its id, which no
            // user types: one `C-c` clears it, once (a second on an empty line would ask
            // Claude Code to exit).
            if readiness == Readiness::Typed
                && let Some(header) = c.cancelled.take_if(|h| {
                    claude_input_line(&look.screen).is_some_and(|l| l.contains(h.as_str()))
                })
            {
                let _ = c.tmux.run(&[argv::send_key(&c.pane, "C-c")]);
                c.screen = None;
                self.sink.note(&format!(
                    "cleared a cancelled message put back in the agent's input line ({header})"
                ));
                continue;
            }
            self.needs_user(dialog);
            // A line not empty is the user's to clear (or a pattern to fix): said by
            // `status`. Busy or still changing is the agent at work, not waiting.
            if readiness == Readiness::Typed {
                let why = typed_line(self.companion.as_ref());
                self.mail_waits(why);
            }
            // Each reason said once per wait.
            if !said.contains(&readiness) {
                said.push(readiness);
                let why = match readiness {
                    Readiness::Busy => "the agent is busy",
                    Readiness::Moving => "the agent's screen still changes",
                    _ => "the input line is not empty (text typed in the pane, or still working)",
                };
                self.sink.note(&format!("waiting to deliver: {why}"));
            }
            self.scan_control()?;
            if let Some(req) = self.control.take_shutdown()
                && self.answer_shutdown(&req, stop).await? == Next::Exit
            {
                return Ok(Waited::Exit);
            }
            // While the hooks say busy, their next event rings the bell: look seldom.
            let poll = match &self.companion {
                Some(c) if c.rule.uses_hooks() && c.busy => HOOK_POLL,
                _ => POLL,
            };
            tokio::select! {
                () = self.bell.notified() => {}
                () = tokio::time::sleep(poll) => {}
                _ = stop.terminate.recv() => return Ok(Waited::Stop("SIGTERM")),
                _ = stop.hangup.recv() => return Ok(Waited::Stop("SIGHUP")),
                // Nothing of ours is running yet.
                _ = stop.interrupt.recv() => {}
            }
        }
    }

    /// Deliver `text` as a user turn of the interactive agent and wait for the turn to end.
    /// `None`: the worker exits, the message unread (a shutdown was approved while waiting,
    /// or the program ended before the message went in).
    pub(super) async fn interactive_turn(
        &mut self,
        env: &Envelope,
        text: &str,
        stop: &mut Stoppers,
    ) -> Result<Option<TurnResult>> {
        // Idle, input line empty (a shutdown answered meanwhile).
        match self.wait_ready(stop).await? {
            Waited::Ready => {}
            Waited::Exit => return Ok(None),
            // The program ended before the message went in (`exit()` typed in the pane
            // while its mail waited): the worker ends as it does when that happens while
            // idle, dead with why (it was said to have had a stop signal, with no reason
            // in `status`); the message stays unread for the `resume` that `send` and
            // `ask` do.
            Waited::Stop(_) if self.companion.as_ref().is_some_and(Companion::exited) => {
                self.sink
                    .note("the agent's program ended before the message went in; exiting");
                self.agent_ended();
                return Ok(None);
            }
            Waited::Stop(why) => return Ok(Some(stopped(why))),
        }
        // The hops where the agent's `teamctl send` reads them.
        self.record_turn_hops(env);
        // Paste, Enter: working.
        let turn = match self.paste_message(env, text).await {
            Ok(turn) => turn,
            Err(why) => return Ok(Some(stopped(&why))),
        };
        // Its reply, or how it was ended.
        Ok(Some(self.until_turn_ends(env, &turn, stop).await))
    }

    /// Record the turn (and its hops) before the paste: the pane has no `TEAMCTL_HOPS`, so
    /// the agent's `teamctl send` reads them here (the loop guard).
    fn record_turn_hops(&mut self, env: &Envelope) {
        self.save_live();
        if let Err(e) = hooks::set_last_hops(&*self.store, &self.name, env.hops) {
            self.sink
                .note(&format!("warning: cannot record the turn's hops: {e}"));
        }
    }

    /// Paste the message into the pane and press Enter; the member is then working. Err: why
    /// it could not be delivered (the turn is stopped).
    async fn paste_message(
        &mut self,
        env: &Envelope,
        text: &str,
    ) -> std::result::Result<Pasted, String> {
        let id = self.member.agent_id.clone();
        let buffer = format!("teamctl-{}-{}", id.replace('@', "-"), env.id);
        let Some(c) = self.companion.as_mut() else {
            return Err("no pane".to_string());
        };
        let before = c.look(&id);
        let started = Instant::now();
        // A preset agent is told who is writing (its answer goes back to them), the text
        // fenced so it cannot fake another sender's block; a generic REPL gets it exactly.
        let header = frame_header(&env.from, &env.id);
        // Control characters are pasted as visible escapes (`output::printable`): an ESC in
        // a message could otherwise end the bracketed paste early (`ESC [201~`) and type the
        // rest into the agent as keys (another submit, a mode switch), and a CR would submit.
        // A CRLF line end is a line end (new-user QA 47: text from a CRLF file typed `\u{d}`
        // at the end of every line into the REPL); a CR alone stays visible.
        let text = crate::output::printable(&text.replace("\r\n", "\n"));
        let pasted = if c.rule.uses_hooks() {
            frame(&env.from, &env.id, &text)
        } else {
            text.clone()
        };
        c.paste(&buffer, &pasted)
            .map_err(|e| format!("paste failed: {}", e.message()))?;
        if c.rule.uses_hooks() {
            c.settled(&id).await;
        }
        c.enter().map_err(|e| enter_failed(&e))?;
        // A line-oriented REPL ends a block of several lines (python's `for ...:` and its
        // body) at an empty line, which the paste's trimmed end no longer has: one more Enter.
        if !c.rule.uses_hooks() && text.trim_end_matches(['\n', '\r']).contains('\n') {
            c.enter().map_err(|e| enter_failed(&e))?;
        }
        c.busy = true;
        c.ours_running = false;
        c.screen = None;
        let hooks = c.rule.uses_hooks();
        let note = format!(
            "pasted into {} in {} ms",
            c.pane,
            started.elapsed().as_millis()
        );
        self.set_status(Status::Working);
        self.sink.note(&note);
        Ok(Pasted {
            id,
            line: before.line,
            header,
            mark: format!("Message from {} (", env.from),
            text: pasted,
            hooks,
        })
    }

    /// Watch the pane until the pasted message's turn ends: its reply (the hooks' Stop, or
    /// the prompt back), interrupted in the pane, timed out or interrupted (cancelled), or
    /// stopped.
    async fn until_turn_ends(
        &mut self,
        env: &Envelope,
        turn: &Pasted,
        stop: &mut Stoppers,
    ) -> TurnResult {
        let timeout = self.member.turn_timeout_secs.map(Duration::from_secs);
        // Never past what a clock can hold (a huge recorded timeout is no timeout).
        let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
        // A paste of several lines got the empty line that ends a block already: no
        // continuation Enter for it.
        let mut continued = turn.text.trim_end_matches(['\n', '\r']).lines().count() > 1;
        loop {
            // Hooks: the Stop that ends our turn carries the reply.
            if turn.hooks
                && let Some(reply) = self.take_hook_events(Some((&turn.header, &env.id)))
            {
                return ended(TurnEnd::Exited(0), reply.unwrap_or_default());
            }
            // One look at the pane: the turn's end, an Enter pressed again, or nothing yet.
            let dialog = match self.look_during_turn(turn, &mut continued).await {
                Seen::Ended(result) => return result,
                Seen::Again => continue,
                Seen::Waiting(dialog) => dialog,
            };
            self.needs_user(dialog);
            // Wait for a change, the turn's timeout or a signal.
            match self.wait_during_turn(turn.hooks, deadline, stop).await {
                Woke::Changed => {}
                Woke::Stop(why) => return stopped(why),
                Woke::End(end) => return self.cancel_turn(turn, end, timeout).await,
            }
        }
    }

    /// Look at the pane once while the turn runs: gone, the turn over, or Enter pressed
    /// again (its paste still in the input line, or a continuation prompt).
    async fn look_during_turn(&mut self, turn: &Pasted, continued: &mut bool) -> Seen {
        let Some(c) = self.companion.as_mut() else {
            return Seen::Ended(stopped("no pane"));
        };
        let look = c.look(&turn.id);
        if look.gone {
            // The program ended during the turn (`exit(5)` typed to a REPL), its dead pane
            // kept: the turn's end, said to the sender with why, and the message handled, as
            // it ended the program (`resume` pasted it again, which ended the new one too:
            // new-user QA); the worker then ends, its reason recorded (`agent_ended`).
            if let Some(why) = c.ended_in_pane(&self.member.agent_id) {
                c.exited.store(true, Ordering::SeqCst);
                return Seen::Ended(TurnResult {
                    spawned: true,
                    end: TurnEnd::NoReply,
                    stdout: String::new(),
                    stderr_tail: why,
                });
            }
            return Seen::Ended(stopped("the agent's pane is gone"));
        }
        let dialog = c.dialog(&look);
        if turn.hooks {
            self.hooks_look(turn, &look, dialog).await
        } else {
            c.generic_look(turn, &look, continued, dialog)
        }
    }

    /// A look of a turn told by the hooks: its Enter lost, or the turn interrupted in the
    /// pane.
    async fn hooks_look(
        &mut self,
        turn: &Pasted,
        look: &Look,
        dialog: Option<&'static str>,
    ) -> Seen {
        let Some(c) = self.companion.as_mut() else {
            return Seen::Ended(stopped("no pane"));
        };
        let mark = &turn.mark;
        let input = claude_input_line(&look.screen);
        // The Enter was lost. On a loaded machine Claude Code can still be taking
        // the paste in when Enter comes (`settled` gives up after 2 s), and drops it: the
        // paste sat in the input line, no turn started, and the message waited for the
        // turn's timeout (the claude_* tests failed so, a few runs in ten with eight
        // copies side by side). While no prompt of ours was submitted and the input line
        // still holds the paste, unchanged for the quiet time, Enter is pressed again (a
        // first Enter taken late meanwhile leaves this one an empty line, where Enter
        // does nothing).
        if !c.ours_running
            && input.is_some_and(|l| l.contains("[Pasted text #") || l.contains(mark.as_str()))
            && c.quiet(&look.screen)
        {
            c.screen = None;
            if let Err(e) = c.enter() {
                return Seen::Ended(stopped(&enter_failed(&e)));
            }
            self.sink
                .note("Enter again: the paste still sat in the agent's input line");
            return Seen::Again;
        }
        // The user pressed Escape in the pane. Claude Code fires no Stop for that,
        // so without this the turn ran on until its timeout, holding all later mail (QA).
        // Claude Code then puts the interrupted message back in the input line, or asks
        // "What should Claude do instead?" with the line empty.
        let restored = input.is_some_and(|l| l.contains(mark.as_str()));
        if c.ours_running
            && (restored
                || (claude_interrupted_after(&look.screen, mark)
                    && c.rule.input_free(&look.screen, look.cursor)))
            && c.quiet(&look.screen)
        {
            c.busy = false;
            c.ours_running = false;
            c.screen = None;
            if restored {
                c.after_cancel(&turn.id, mark, false).await;
            }
            self.needs_user(None);
            self.sink
                .note("the turn was interrupted in the agent's pane");
            return Seen::Ended(ended(TurnEnd::Interrupted, String::new()));
        }
        Seen::Waiting(dialog)
    }

    /// Wait while the turn runs: for the bell or the next look, the turn's `deadline`, an
    /// interrupt, or a signal to stop.
    async fn wait_during_turn(
        &self,
        hooks: bool,
        deadline: Option<tokio::time::Instant>,
        stop: &mut Stoppers,
    ) -> Woke {
        let poll = if hooks { HOOK_POLL } else { POLL };
        let timed_out = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = self.bell.notified() => Woke::Changed,
            () = tokio::time::sleep(poll) => Woke::Changed,
            () = timed_out => Woke::End(TurnEnd::TimedOut),
            _ = stop.interrupt.recv() => Woke::End(TurnEnd::Interrupted),
            _ = stop.terminate.recv() => Woke::Stop("SIGTERM"),
            _ = stop.hangup.recv() => Woke::Stop("SIGHUP"),
        }
    }

    /// End the turn from here (`end`: timed out or interrupted): the cancel key, pressed
    /// again while the turn still runs (hooks), and said in the log.
    async fn cancel_turn(
        &mut self,
        turn: &Pasted,
        end: TurnEnd,
        timeout: Option<Duration>,
    ) -> TurnResult {
        let mut again = 0;
        if let Some(c) = self.companion.as_mut() {
            c.cancel(&turn.id);
            c.busy = false;
            c.ours_running = false;
            c.screen = None;
            if turn.hooks {
                c.cancelled = Some(turn.header.clone());
                again = c.after_cancel(&turn.id, &turn.mark, true).await;
            }
        }
        let key = self
            .companion
            .as_ref()
            .map_or("", |c| c.rule.cancel_key.as_str());
        if end == TurnEnd::TimedOut {
            // As a one-shot turn's timeout says (turn.rs): the failure notice goes to
            // the sender only.
            self.sink.note(&format!(
                "turn timed out after {} (its turn timeout); sent the cancel key ({key})",
                super::turn::seconds(timeout.unwrap_or_default())
            ));
        } else {
            self.sink.note(&format!("sent the cancel key ({key})"));
        }
        if again > 0 {
            self.sink.note(&format!(
                "the turn still ran: pressed the cancel key again ({again}x)"
            ));
        }
        ended(end, String::new())
    }
}
