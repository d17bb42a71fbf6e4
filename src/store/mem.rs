//! `MemStore`: a whole team kept in memory, for unit tests of the parts above `store/` (and a
//! second implementation that keeps the conformance suite honest). One `Mutex` holds the
//! state; positions are message index + 1; the team file and the task list carry revision
//! numbers; subscribers are a list of (topics, bell) rung after each write, outside the lock.
//! Clones are handles on the same team. Host-local files go under the directory given at
//! construction.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Instant, SystemTime};

use super::team::LOOP_NOTICE_QUIET;
use super::wake::{Bell, Subscription, WakeMode};
use super::{Entry, Held, Item, LockKey, Position, Stamp, Store, Topic};
use crate::domain::live::ShutdownAnswer;
use crate::domain::task::TaskList;
use crate::domain::time::now_ms;
use crate::domain::{Envelope, LEADER, LiveState, Member, Name, TeamConfig};
use crate::error::{Error, Result};

/// An in-memory team; clones share it.
#[derive(Clone)]
pub struct MemStore {
    inner: Arc<Inner>,
}

struct Inner {
    team: Name,
    dir: PathBuf,
    state: Mutex<State>,
    /// Signalled when a lock or a shared hold is let go.
    freed: Condvar,
}

#[derive(Default)]
struct State {
    /// `None` once destroyed.
    config: Option<TeamConfig>,
    revision: u64,
    inboxes: BTreeMap<Name, Vec<(Envelope, SystemTime)>>,
    cursors: HashMap<(Name, String), Position>,
    live: HashMap<Name, LiveState>,
    answers: HashMap<Name, ShutdownAnswer>,
    loops: HashMap<(String, String), Instant>,
    tasks: TaskList,
    /// Exclusive locks taken: `lock`'s keys, and the writers of the team file and task list.
    held: HashSet<String>,
    /// `hold_shared` holds: the team file's writer waits for them, as on the file store's
    /// shared and exclusive `flock`s of one lock file.
    shared: usize,
    subs: Vec<(u64, Vec<Topic>, Bell)>,
    next_sub: u64,
    last_activity: Option<SystemTime>,
    /// Reads of the team file (`load`, also inside `update`), for tests that bound them.
    loads: usize,
}

impl MemStore {
    /// A new team named `team` whose only member is the leader, as `Home::create` makes one;
    /// host-local files go under `local_dir`.
    pub fn new(team: Name, local_dir: PathBuf) -> MemStore {
        let now = now_ms();
        let config = TeamConfig {
            name: team.clone(),
            description: String::new(),
            created_at: now,
            lead_agent_id: format!("{LEADER}@{team}"),
            lead_session_id: crate::domain::message::new_id(),
            members: vec![Member::leader(&team, local_dir.display().to_string(), now)],
            tmux_session: None,
            tmux_fill: None,
            deleting: None,
            max_hops: None,
            extra: serde_json::Map::default(),
        };
        MemStore {
            inner: Arc::new(Inner {
                team,
                dir: local_dir,
                state: Mutex::new(State {
                    config: Some(config),
                    last_activity: Some(SystemTime::now()),
                    ..State::default()
                }),
                freed: Condvar::new(),
            }),
        }
    }

    /// How many times the team file was read (`load`, also inside `update`) and written
    /// (its revision) so far: what a test bounds to show work done once, not per member.
    pub fn team_file_io(&self) -> (usize, u64) {
        let st = self.state();
        (st.loads, st.revision)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding it (a failing test's thread) leaves usable state.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, refused once the team is destroyed (no write brings it back).
    fn live_state(&self) -> Result<MutexGuard<'_, State>> {
        let st = self.state();
        match st.config {
            Some(_) => Ok(st),
            None => Err(self.gone()),
        }
    }

    /// Change the state under the lock, then ring the subscribers of `topic` (outside it).
    fn write<T>(
        &self,
        topic: Option<&Topic>,
        f: impl FnOnce(&mut State) -> Result<T>,
    ) -> Result<T> {
        let (out, bells) = {
            let mut st = self.live_state()?;
            let out = f(&mut st)?;
            st.last_activity = Some(SystemTime::now());
            let bells: Vec<Bell> = match topic {
                Some(t) => st
                    .subs
                    .iter()
                    .filter(|(_, topics, _)| topics.contains(t))
                    .map(|(_, _, b)| b.clone())
                    .collect(),
                None => Vec::new(),
            };
            (out, bells)
        };
        for b in bells {
            b();
        }
        Ok(out)
    }

    /// Take the exclusive lock `name` (also waiting out shared holds when `exclusive_of_shared`),
    /// waiting as long as it takes: as `flock`, no deadline.
    fn take(&self, name: &str, exclusive_of_shared: bool) -> Result<LockHold> {
        let mut st = self.live_state()?;
        while st.held.contains(name) || (exclusive_of_shared && st.shared > 0) {
            st = self.inner.freed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.held.insert(name.to_string());
        Ok(LockHold {
            store: self.clone(),
            name: name.to_string(),
        })
    }

    fn gone(&self) -> Error {
        Error::failed(format!(
            "team {} no longer exists (deleted)",
            self.inner.team
        ))
    }
}

/// The team file's writer (exclusive; waits for shared holds too).
const TEAM_WRITER: &str = "team-file";
/// The task list's writer.
const TASK_WRITER: &str = "task-list";

fn lock_name(key: &LockKey) -> String {
    match key {
        LockKey::Start(n) => format!("start:{n}"),
        LockKey::Protocol => "protocol".into(),
        LockKey::Plan(n) => format!("plan:{n}"),
    }
}

/// A taken lock: let go on drop.
struct LockHold {
    store: MemStore,
    name: String,
}

impl Drop for LockHold {
    fn drop(&mut self) {
        self.store.state().held.remove(&self.name);
        self.store.inner.freed.notify_all();
    }
}

/// A shared hold on the team: let go on drop.
struct SharedHold {
    store: MemStore,
}

impl Drop for SharedHold {
    fn drop(&mut self) {
        let mut st = self.store.state();
        st.shared = st.shared.saturating_sub(1);
        drop(st);
        self.store.inner.freed.notify_all();
    }
}

/// A subscription's registration: unregistered on drop.
struct SubHold {
    inner: Weak<Inner>,
    id: u64,
}

impl Drop for SubHold {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            let mut st = inner.state.lock().unwrap_or_else(|e| e.into_inner());
            st.subs.retain(|(id, _, _)| *id != self.id);
        }
    }
}

impl Store for MemStore {
    fn team(&self) -> &Name {
        &self.inner.team
    }

    fn exists(&self) -> bool {
        self.state().config.is_some()
    }

    fn load(&self) -> Result<TeamConfig> {
        let mut st = self.state();
        st.loads += 1;
        st.config.clone().ok_or_else(|| self.gone())
    }

    fn stamp(&self) -> Option<Stamp> {
        let st = self.state();
        st.config.as_ref().map(|_| Stamp::revision(st.revision))
    }

    fn update(&self, f: &mut dyn FnMut(&mut TeamConfig) -> Result<()>) -> Result<TeamConfig> {
        // `f` runs outside the state's mutex (it may read the store), under the writer's lock.
        let _writer = self.take(TEAM_WRITER, true)?;
        let mut config = self.load()?;
        f(&mut config)?;
        self.write(Some(&Topic::Team), |st| {
            st.config = Some(config.clone());
            st.revision += 1;
            Ok(config)
        })
    }

    fn hold_shared(&self) -> Result<Held> {
        let mut st = self.live_state()?;
        while st.held.contains(TEAM_WRITER) {
            st = self.inner.freed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.shared += 1;
        drop(st);
        Ok(Held::new(SharedHold {
            store: self.clone(),
        }))
    }

    fn lock(&self, key: &LockKey) -> Result<Held> {
        Ok(Held::new(self.take(&lock_name(key), false)?))
    }

    fn append(&self, inbox: &Name, env: &Envelope) -> Result<()> {
        let env = env.clone();
        self.write(Some(&Topic::Inbox(inbox.clone())), |st| {
            st.inboxes
                .entry(inbox.clone())
                .or_default()
                .push((env, SystemTime::now()));
            Ok(())
        })
    }

    fn read(&self, inbox: &Name, from: Position, max: usize) -> Result<Vec<Entry>> {
        let st = self.state();
        let Some(log) = st.inboxes.get(inbox) else {
            return Ok(Vec::new());
        };
        let first = usize::try_from(from.raw()).unwrap_or(usize::MAX);
        Ok(log
            .iter()
            .enumerate()
            .skip(first)
            .take(max)
            .map(|(i, (env, _))| Entry {
                start: Position::from_raw(i as u64),
                end: Position::from_raw(i as u64 + 1),
                item: Item::Message(Box::new(env.clone())),
            })
            .collect())
    }

    fn inbox_end(&self, inbox: &Name) -> Result<Position> {
        let st = self.state();
        Ok(Position::from_raw(
            st.inboxes.get(inbox).map_or(0, |l| l.len() as u64),
        ))
    }

    fn cursor(&self, inbox: &Name, reader: &str) -> Result<Position> {
        let st = self.state();
        Ok(st
            .cursors
            .get(&(inbox.clone(), reader.to_string()))
            .copied()
            .unwrap_or(Position::START))
    }

    fn set_cursor(&self, inbox: &Name, reader: &str, pos: Position) -> Result<()> {
        let mut st = self.live_state()?;
        st.inboxes.entry(inbox.clone()).or_default();
        st.cursors.insert((inbox.clone(), reader.to_string()), pos);
        Ok(())
    }

    fn remove_cursor(&self, inbox: &Name, reader: &str) -> Result<()> {
        let mut st = self.live_state()?;
        st.cursors.remove(&(inbox.clone(), reader.to_string()));
        Ok(())
    }

    fn inbox_generation(&self, inbox: &Name) -> Option<u64> {
        self.state().inboxes.contains_key(inbox).then_some(0)
    }

    fn live(&self, member: &Name) -> Result<Option<LiveState>> {
        Ok(self.state().live.get(member).cloned())
    }

    fn set_live(&self, member: &Name, state: &LiveState) -> Result<()> {
        let state = state.clone();
        self.write(Some(&Topic::Live), |st| {
            st.live.insert(member.clone(), state);
            Ok(())
        })
    }

    fn set_shutdown_answer(&self, member: &Name, answer: &ShutdownAnswer) -> Result<()> {
        self.live_state()?
            .answers
            .insert(member.clone(), answer.clone());
        Ok(())
    }

    /// As the file store: an answer to another request is dropped (it is stale).
    fn take_shutdown_answer(&self, member: &Name, request_id: &str) -> Option<ShutdownAnswer> {
        self.state()
            .answers
            .remove(member)
            .filter(|a| a.request_id == request_id)
    }

    fn first_loop_notice(&self, a: &str, b: &str) -> bool {
        let (x, y) = if a <= b { (a, b) } else { (b, a) };
        let mut st = self.state();
        let key = (x.to_string(), y.to_string());
        if st
            .loops
            .get(&key)
            .is_some_and(|t| t.elapsed() < LOOP_NOTICE_QUIET)
        {
            return false;
        }
        st.loops.insert(key, Instant::now());
        true
    }

    fn load_tasks(&self) -> Result<TaskList> {
        Ok(self.state().tasks.clone())
    }

    /// A change that changes nothing writes (and rings) nothing, as in the file store.
    fn update_tasks(&self, f: &mut dyn FnMut(&mut TaskList) -> Result<()>) -> Result<TaskList> {
        let _writer = self.take(TASK_WRITER, false)?;
        let before = self.load_tasks()?;
        let mut list = before.clone();
        f(&mut list)?;
        if list != before {
            self.write(Some(&Topic::Tasks), |st| {
                st.tasks = list.clone();
                Ok(())
            })?;
        }
        Ok(list)
    }

    fn subscribe(&self, topics: &[Topic], bell: Bell) -> Result<Subscription> {
        let mut st = self.live_state()?;
        for t in topics {
            if let Topic::Inbox(m) = t {
                st.inboxes.entry(m.clone()).or_default();
            }
        }
        let id = st.next_sub;
        st.next_sub += 1;
        st.subs.push((id, topics.to_vec(), bell));
        Ok(Subscription::holding(
            WakeMode::Push,
            SubHold {
                inner: Arc::downgrade(&self.inner),
                id,
            },
        ))
    }

    fn log_path(&self, member: &Name) -> PathBuf {
        self.inner.dir.join("logs").join(format!("{member}.log"))
    }

    fn local_dir(&self) -> PathBuf {
        self.inner.dir.clone()
    }

    fn destroy(&self) -> Result<()> {
        let mut st = self.state();
        // Subscribers, locks and shared holds stay: their handles let go of them on drop.
        let kept = State {
            subs: std::mem::take(&mut st.subs),
            next_sub: st.next_sub,
            held: std::mem::take(&mut st.held),
            shared: st.shared,
            ..State::default()
        };
        *st = kept;
        Ok(())
    }

    fn last_activity(&self) -> Option<SystemTime> {
        self.state().last_activity
    }

    fn last_mail(&self, inbox: &Name) -> Option<SystemTime> {
        self.state()
            .inboxes
            .get(inbox)
            .and_then(|l| l.last())
            .map(|(_, t)| *t)
    }

    fn inboxes(&self) -> Vec<Name> {
        self.state().inboxes.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn make() -> crate::store::conformance::Made {
        let dir = tempfile::tempdir().unwrap();
        let store = MemStore::new(Name::parse("t").unwrap(), dir.path().to_path_buf());
        let again = store.clone();
        crate::store::conformance::Made {
            store: Arc::new(store),
            reopen: Box::new(move || Arc::new(again.clone())),
            keep: Box::new(dir),
        }
    }

    mod conformance {
        crate::store::conformance::conformance_tests!(super::make);
    }

    /// As the file store's `flock`s: a team file writer waits for shared holds, and shared
    /// holds wait for a writer; shared holds do not exclude each other.
    #[test]
    fn shared_holds_keep_team_file_writers_out() {
        let made = make();
        let first = made.store.hold_shared().unwrap();
        let second = made.store.hold_shared().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = made.store.clone();
        let writer = std::thread::spawn(move || {
            s.update(&mut |c| {
                c.description = "written".into();
                Ok(())
            })
            .unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        drop(first);
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        drop(second);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        writer.join().unwrap();
        assert_eq!(made.store.load().unwrap().description, "written");
    }

    #[test]
    fn run_all_runs_every_case() {
        crate::store::conformance::run_all(&make);
    }
}
