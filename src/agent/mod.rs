//! Agent presets: how each supported agent CLI (Claude Code, Codex, Gemini CLI, aider) is run
//! as a teammate (`spawn --agent`), and the team prompt that tells it who it is and how to use
//! teamctl. Pure data and string building (and fresh session ids), no I/O.

pub mod aider;
pub mod preset;
pub mod prompt;

pub use preset::TurnArgs;

/// A fresh session id: a random UUID, as agent CLIs expect (`claude --session-id`).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
