//! What the worker before this one left unfinished: a turn it ended in (killed, or its tmux
//! server or machine gone), said in the teammate's log as this worker starts, with what
//! becomes of that turn's message. The dead worker could not say it, and `log --worker`
//! showed the turn and then the next start, nothing of the death or of a `--skip-turn`
//! (QA 40).

use crate::domain::{LiveState, Name};
use crate::store::Store;

/// The line for the log when the worker before this one (`previous`: its live state, not
/// this process's, `me`) ended in a turn; `None` otherwise.
pub fn ended_turn(
    store: &dyn Store,
    name: &Name,
    previous: Option<&LiveState>,
    me: u32,
) -> Option<String> {
    let previous = previous.filter(|p| p.pid != me)?;
    let turn = previous.current_turn.as_ref()?;
    let pending = store
        .cursor(name, super::READER)
        .and_then(|cursor| crate::store::end_of(store, name, cursor, &turn.message_id));
    let then = match pending {
        Ok(Some(_)) => format!(
            "that message is still unhandled: this worker runs it again (if that turn is what kills it, `teamctl resume {name} --skip-turn` starts it past it once it is dead again)"
        ),
        Ok(None) => "that message was handled or skipped since: it does not run again".to_string(),
        Err(_) => "whether that message runs again could not be told".to_string(),
    };
    Some(format!(
        "the worker before this one (pid {}) ended in its turn on {}; {then}",
        previous.pid,
        crate::output::turn_words(turn)
    ))
}
