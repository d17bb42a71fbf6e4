//! The store: the team file, inboxes with cursors and wake-ups, live worker state and the task
//! list, all behind the `Store` trait so that another backend (NATS JetStream, for teams spread
//! over hosts) can replace local files without touching the CLI or the worker. `FsStore` is
//! the default: plain files under `$TEAMCTL_HOME/teams/TEAM`.

pub mod cursor;
pub mod fsutil;
pub mod home;
pub mod inbox;
pub mod tasks;
pub mod team;
pub mod wake;

use std::path::PathBuf;

pub use home::Home;
pub use inbox::{Entry, Item};
pub use team::FsStore;
pub use wake::{Bell, Subscription, SyncBell, WakeMode};

use crate::domain::task::TaskList;
use crate::domain::{Envelope, LiveState, Name, TeamConfig};
use crate::error::Result;

/// What a subscriber can be woken by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic {
    /// New mail in a member's inbox.
    Inbox(Name),
    /// The team file changed.
    Team,
    /// A worker's live state changed.
    Live,
    /// The task list changed.
    Tasks,
}

/// Everything the CLI and the worker need from shared state.
pub trait Store: Send + Sync {
    fn team(&self) -> &Name;

    /// Read the team file.
    fn load(&self) -> Result<TeamConfig>;
    /// Change the team file under its lock; `f` returning an error leaves it untouched.
    fn update(&self, f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>) -> Result<TeamConfig>;

    /// Append one message to `inbox`. The caller has validated it.
    fn append(&self, inbox: &Name, env: &Envelope) -> Result<()>;
    /// Up to `max` entries of `inbox` from byte `from`.
    fn read(&self, inbox: &Name, from: u64, max: usize) -> Result<Vec<Entry>>;
    /// The inbox's end: where the next message will start.
    fn inbox_end(&self, inbox: &Name) -> u64;
    fn cursor(&self, inbox: &Name, reader: &str) -> u64;
    fn set_cursor(&self, inbox: &Name, reader: &str, pos: u64) -> Result<()>;

    /// A worker's live state, if it has written one.
    fn live(&self, member: &Name) -> Option<LiveState>;
    fn set_live(&self, member: &Name, state: &LiveState) -> Result<()>;

    /// The task list (empty when there is none yet).
    fn load_tasks(&self) -> Result<TaskList>;
    /// Change the task list under its lock; `f` returning an error leaves it untouched.
    /// Returns the list as written.
    fn update_tasks(&self, f: &mut dyn FnMut(&mut TaskList) -> Result<()>) -> Result<TaskList>;

    /// Ring `bell` whenever one of `topics` changes.
    fn subscribe(&self, topics: &[Topic], bell: Bell) -> Result<Subscription>;

    /// Where a teammate's turn output is logged on this host.
    fn log_path(&self, member: &Name) -> PathBuf;
    /// A directory for this team's local files (worktrees, scratch).
    fn local_dir(&self) -> PathBuf;
    /// Remove the team and everything in it.
    fn destroy(&self) -> Result<()>;
}
