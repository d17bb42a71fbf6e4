//! teamctl: run teams of command-line agents in tmux panes, talking through a file-based
//! message bus. See `docs/ARCHITECTURE.md` for the map of modules.

pub mod agent;
pub mod backend;
pub mod board;
pub mod bus;
pub mod cli;
pub mod commands;
pub mod console;
pub mod context;
pub mod doctor;
pub mod domain;
pub mod error;
pub mod interactive;
pub mod leader;
pub mod output;
pub mod store;
pub mod worker;
pub mod worktree;

pub use error::{Error, Result};
