//! Agent presets: how each supported agent CLI (Claude Code, Codex, Gemini CLI, aider) is run
//! as a teammate (`spawn --agent`), and the team prompt that tells it who it is and how to use
//! teamctl. Pure data and string building, no I/O.

pub mod preset;
pub mod prompt;

pub use preset::{MessageVia, PRESETS, Preset, PromptVia, TurnArgs};
