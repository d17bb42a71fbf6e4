//! The store: the team file, inboxes with cursors and wake-ups, live worker state and the task
//! list, all behind the `Store` trait so that another backend (NATS JetStream, for teams spread
//! over hosts) can replace local files without touching the CLI or the worker. `FsStore` is
//! the default: plain files under `$TEAMCTL_HOME/teams/TEAM`.

pub mod doorbell;
pub mod envfile;
pub mod fsutil;
pub mod home;
pub mod hooks;
pub mod inbox;
pub mod slots;
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
    /// An interactive teammate's agent reported a hook event (`store::hooks`).
    Hooks(Name),
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

/// Every entry of `inbox` from byte `from` to its end, read in batches (memory stays bounded
/// however long the inbox). `pos()` is the byte just past the last entry yielded: the cursor
/// value once those entries are handled.
pub fn entries<'a>(store: &'a dyn Store, inbox: &Name, from: u64) -> Entries<'a> {
    Entries {
        store,
        inbox: inbox.clone(),
        pos: from,
        next: from,
        batch: std::collections::VecDeque::new(),
        done: false,
    }
}

/// See [`entries`].
pub struct Entries<'a> {
    store: &'a dyn Store,
    inbox: Name,
    /// Just past the last entry yielded.
    pos: u64,
    /// Where the next batch starts.
    next: u64,
    batch: std::collections::VecDeque<Entry>,
    done: bool,
}

impl Entries<'_> {
    /// Just past the last entry yielded so far.
    pub fn pos(&self) -> u64 {
        self.pos
    }
}

impl Iterator for Entries<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.batch.is_empty() && !self.done {
            match self.store.read(&self.inbox, self.next, 512) {
                Ok(batch) => {
                    match batch.last() {
                        Some(last) => self.next = last.end,
                        None => self.done = true,
                    }
                    self.batch = batch.into();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let entry = self.batch.pop_front()?;
        self.pos = entry.end;
        Some(Ok(entry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Body;

    #[test]
    fn entries_walk_batches_and_report_where_they_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let bob = Name::parse("bob").unwrap();
        for i in 0..1100 {
            let env = Envelope::new("team-lead", "bob", Body::message(format!("m{i}"), None));
            store.append(&bob, &env).unwrap();
        }
        let mut all = entries(&store, &bob, 0);
        let got: Vec<Entry> = all.by_ref().map(|e| e.unwrap()).collect();
        assert_eq!(got.len(), 1100, "more than two batches, all read");
        assert_eq!(all.pos(), store.inbox_end(&bob));
        // From the middle: only what follows, and pos moves entry by entry.
        let mid = got[999].end;
        let mut rest = entries(&store, &bob, mid);
        assert_eq!(rest.pos(), mid);
        let first = rest.next().unwrap().unwrap();
        assert_eq!(rest.pos(), first.end);
        assert_eq!(rest.count(), 99);
        // An empty inbox yields nothing and stays where it started.
        let nobody = Name::parse("nobody").unwrap();
        let mut none = entries(&store, &nobody, 0);
        assert!(none.next().is_none());
        assert_eq!(none.pos(), 0);
    }
}
