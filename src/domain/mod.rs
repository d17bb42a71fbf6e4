//! Pure domain types: names and ids, messages and their rules, the team file's shape,
//! the task list's rules. No I/O lives here.

pub mod bounded;
pub mod env;
pub mod interactive;
pub mod live;
pub mod member;
pub mod message;
pub mod name;
pub mod roster;
pub mod task;
pub mod teamfile;
pub mod teamtext;
pub mod text;
pub mod time;

pub use interactive::Interactive;
pub use live::{LiveState, TurnInfo};
pub use member::{BackendType, Host, Member, Spec, Status, TeamConfig, TmuxFill};
pub use message::{Body, Envelope, IdleReason, Recipient};
pub use name::{LEADER, Name};
pub use roster::Roster;
