//! What the live and printed views of a team share: the status rows and table, the board
//! (`status --watch`), and the events a live view waits on. Used by commands and the console;
//! uses nothing above it.

pub mod board;
pub mod events;
pub mod status;
