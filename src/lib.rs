//! teamctl: run teams of command-line agents in tmux panes, talking through a file-based
//! message bus. See `docs/ARCHITECTURE.md` for the map of modules.
// stdout through `outln!`/`out!` (out.rs), which report a write error instead of panicking.
#![warn(clippy::print_stdout)]

pub(crate) mod agent;
pub mod backend;
pub mod bus;
pub mod cli;
pub mod commands;
pub(crate) mod console;
pub mod context;
pub(crate) mod doctor;
pub mod domain;
pub mod error;
pub mod interactive;
pub(crate) mod leader;
pub mod out;
pub mod output;
pub mod pause;
pub(crate) mod signals;
pub mod store;
pub(crate) mod view;
pub mod worker;
pub(crate) mod worktree;

pub use error::{Error, Result};
