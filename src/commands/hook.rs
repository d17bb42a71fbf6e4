//! `teamctl hook EVENT` (hidden): run by an interactive teammate's agent for its hook events
//! (Claude Code: `UserPromptSubmit`, `Stop`, `Notification`, installed with `--settings`). It
//! reads the hook's JSON object on stdin and records the event for the teammate's companion,
//! which wakes on it. The teammate is the one in the environment the pane was started with.
//!
//! Only an interactive teammate records events (anyone else: refused, exit 2, nothing
//! written; no companion would read them). A Stop must hold up: the agent's model can run
//! `teamctl hook stop` from its Bash tool (`Bash(teamctl:*)` is allowed), which would end the
//! turn early and drop the real reply. A real Stop names the agent's transcript (under its
//! Claude Code directory) and comes when the turn has ended; a Bash-tool call runs while the
//! transcript's last assistant message waits for its tool's result. Such a Stop is refused.
//! While a message is being delivered, a Stop ends its turn only if the transcript it names
//! holds that message's frame (`--- begin ID ---`) and the turn's end; its answer is read from
//! there (an older transcript, another conversation's, holds no such turn). Any other Stop is
//! recorded as the end of some other turn (the user's own in the pane), with no answer.
//! This is a guard rail against a confused or steered model, not a boundary (same user).
//!
//! Otherwise it never fails the agent's turn: whatever goes wrong is one line on stderr and
//! exit 0 (Claude Code takes a hook's exit status 2 as "block", and would feed the error to
//! the model).

use std::io::{Read, Seek};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::HookArgs;
use crate::context::Ctx;
use crate::domain::Member;
use crate::domain::interactive::{
    HookEvent, MAX_REPLY, TurnSeen, cut, tool_use_pending, turn_in_transcript,
};
use crate::domain::time::now_ms;
use crate::error::{Error, IoContext, Result};
use crate::store::hooks;

/// The most of the hook's stdin read (a Stop event carries the turn's last message).
const MAX_INPUT: u64 = 4 * 1024 * 1024;
/// The most of the transcript's end read to see whether a tool call is pending and to find
/// the turn of the message being delivered (a turn whose tool output passes this is not found).
const TRANSCRIPT_TAIL: u64 = 16 * 1024 * 1024;
/// How long a Stop waits for Claude Code's transcript to catch up, at most.
const SETTLE: Duration = Duration::from_secs(1);
/// How long a Stop looks for the turn of the message being delivered in its transcript, at
/// most (not found: the Stop ends no companion turn).
const FIND_TURN: Duration = Duration::from_secs(3);
/// The pause between two looks at the transcript.
const LOOK_AGAIN: Duration = Duration::from_millis(250);

pub fn run(ctx: &Ctx, args: &HookArgs) -> Result<()> {
    let me = ctx.me()?;
    let store = ctx.store()?;
    let config = store.load()?;
    let member = config.require(me.as_str())?;
    if member.interactive.is_none() {
        return Err(Error::bad(format!(
            "{me} is not an interactive teammate (spawn --interactive); `teamctl hook` is run by such a teammate's agent only"
        )));
    }
    if let Err(e) = record(&*store, member, args) {
        crate::errln!("teamctl hook {}: {e}", args.event);
    }
    Ok(())
}

fn record(store: &dyn crate::store::Store, member: &Member, args: &HookArgs) -> Result<()> {
    let mut input = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT)
        .read_to_end(&mut input)
        .map_err(|e| Error::io_while("cannot read the hook's input", e))?;
    let value: serde_json::Value = if input.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&input)
            .map_err(|e| Error::bad(format!("the hook's input is not JSON: {e}")))?
    };
    let mut event = HookEvent::from_hook(&args.event, &value, now_ms())?;
    if event.event == "stop" {
        // The message the companion is delivering now, if any (its id is in the frame).
        let delivering = store
            .live(&member.name)
            .ok()
            .flatten()
            .and_then(|l| l.current_turn)
            .map(|t| t.message_id);
        if let Some(answer) = check_stop(&value, delivering.as_deref())? {
            // The answer as the transcript holds it. Claude Code may write the turn's last
            // entries only after its Stop hook: with none there yet (the turn shown ended, no
            // tool call pending, so not a Stop run from the agent's tools), the hook's text.
            if !answer.is_empty() || event.text.is_none() {
                event.text = Some(answer);
            }
            event.turn = delivering;
        } else {
            // Not the turn of the message being delivered (the user's own turn in the pane,
            // or no transcript of it): it ends no companion turn and carries no answer.
            event.text = None;
            if let Some(id) = &delivering {
                crate::errln!(
                    "teamctl hook stop: the transcript named holds no ended turn of message {id} (the one being delivered); recorded as the end of another turn, not of that one"
                );
            }
        }
    }
    hooks::append(store, &member.name, &event)
}

/// A Stop that does not hold up is refused (see the module comment). `delivering`: the id of
/// the message the companion is delivering. `Some(answer)`: the Stop ends that message's turn
/// (its framed prompt is in the named transcript, then the turn's answer, no tool call
/// pending). `None`: a Stop of some other turn.
fn check_stop(input: &serde_json::Value, delivering: Option<&str>) -> Result<Option<String>> {
    let refused = |why: &str| {
        Err(Error::bad(format!(
            "refused: {why}; a Stop run by hand or from the agent's own tools does not end its turn"
        )))
    };
    let Some(transcript) = input.get("transcript_path").and_then(|v| v.as_str()) else {
        return refused("the input names no transcript (Claude Code's Stop hook does)");
    };
    let transcript = Path::new(transcript);
    // Not the session's id: `/clear` in the pane starts a new session with its own transcript.
    // A transcript of this agent's Claude Code, though: `projects/*/*.jsonl` under its
    // configuration directory (this process runs with the agent's environment).
    let lexical = transcript.is_absolute()
        && transcript.extension().is_some_and(|e| e == "jsonl")
        && !transcript
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    let under = claude_dir().is_none_or(|d| {
        transcript.parent().and_then(Path::parent) == Some(d.join("projects").as_path())
    });
    if !lexical || !under {
        return refused("the transcript is not one of this agent's Claude Code transcripts");
    }
    // Claude Code writes its transcript a moment after the fact (a write queue), and the
    // first turn's file may not be there yet: look until a read found it twice, a little
    // apart, with no tool call pending, or until `SETTLE` has passed.
    // The turn of the message being delivered must be in that transcript: an older one
    // (another conversation, another teammate's) does not hold its frame.
    let deadline = Instant::now() + SETTLE;
    let found_by = Instant::now()
        + if delivering.is_some() {
            FIND_TURN
        } else {
            SETTLE
        };
    let mut clear = 0;
    let mut answer = None;
    let inside = "the agent is inside a tool call (its transcript waits for the result)";
    loop {
        // A tool call pending may be the transcript lagging (its result not written yet):
        // refused only when it still is at the deadline. A Stop run from the agent's own tool
        // call waits for that very call, which cannot end meanwhile.
        match tail(transcript) {
            Ok(text)
                if tool_use_pending(&text)
                    || delivering
                        .is_some_and(|id| turn_in_transcript(&text, id) == TurnSeen::Pending) =>
            {
                clear = 0;
                if Instant::now() >= deadline {
                    return refused(inside);
                }
            }
            Ok(text) => match delivering.map(|id| turn_in_transcript(&text, id)) {
                // Our prompt and nothing after it yet: either the reply's entries are still
                // in Claude Code's write queue, or this Stop was run from a tool call whose
                // entry is (the flake hunt: with the queue lagging under load, a Stop forged
                // from the Bash tool ended the turn with its own text, 5 runs in 16). Looked
                // at until `FIND_TURN`, by which the tool call shows as pending.
                Some(TurnSeen::Ended(a)) if a.is_empty() && Instant::now() < found_by => {
                    answer = Some(a);
                }
                Some(TurnSeen::Ended(a)) => {
                    // Settled once it says what the hook says (or twice alike): the last
                    // entries may come a moment after the Stop.
                    let said = input.get("last_assistant_message").and_then(|v| v.as_str());
                    if said.is_none_or(|s| cut(s, MAX_REPLY) == a) || answer.as_ref() == Some(&a) {
                        clear += 1;
                    }
                    answer = Some(a);
                }
                // Maybe not written yet: look again until the deadline.
                Some(_) => {}
                None => clear += 1,
            },
            Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        let answered = answer.as_ref().is_some_and(|a| !a.is_empty());
        if clear >= 2 || now >= deadline && (answered || now >= found_by) {
            return Ok(answer);
        }
        std::thread::sleep(LOOK_AGAIN);
    }
}

/// Claude Code's configuration directory: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn claude_dir() -> Option<std::path::PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Some(d.into()),
        None => std::env::var_os("HOME").map(|h| Path::new(&h).join(".claude")),
    }
}

/// The last `TRANSCRIPT_TAIL` bytes of the transcript, never through a link.
fn tail(path: &Path) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .at(path)?;
    let len = f.metadata().at(path)?.len();
    f.seek(std::io::SeekFrom::Start(
        len.saturating_sub(TRANSCRIPT_TAIL),
    ))
    .at(path)?;
    let mut bytes = Vec::new();
    f.take(TRANSCRIPT_TAIL).read_to_end(&mut bytes).at(path)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
