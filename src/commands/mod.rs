//! One file per command. Each `run` validates everything before it writes anything.

pub mod ask;
pub mod attach;
pub mod complete;
pub mod completions;
pub mod create;
pub mod delete;
pub mod demo;
pub mod doctor;
pub mod down;
pub mod hook;
pub mod inbox;
pub mod interrupt;
pub mod kill;
pub mod lead;
pub mod log;
pub mod plan;
pub mod resume;
pub mod send;
pub mod shutdown;
pub mod shutdown_response;
pub mod spawn;
pub mod status;
pub mod task;
pub mod up;
pub mod wait;
