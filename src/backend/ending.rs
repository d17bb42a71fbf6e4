//! Ending the workers of one member or of many at once (`kill`, an approved shutdown,
//! `shutdown --all --force`, `delete`). What each member's backend names is gathered first
//! (`Backend::terminate_in`), then `finish` ends it all together in three ordered steps, each
//! SIGTERM to every target, one grace shared by all, SIGKILL to what still carries its tag:
//! the workers' process groups the records name; then their turns' groups (a worker asked to
//! stop ends its own turn first); then every process carrying one of the members' tags, found
//! in one walk of `/proc` taken once those groups are gone (so it finds what they started
//! meanwhile). An agent process's tag is its environment, which anyone can set: where the
//! member's record holds the word of its placement (`Member::pane_nonce`), which teamctl gives
//! every agent process it starts for it (`env::PLACEMENT`), only a process carrying that word
//! too is the member's. Panes close last, their tags checked. Every signal is preceded by a fresh tag
//! check of that process (or group leader): a pid used again meanwhile is someone else's and
//! is left alone. Member by member, each with its own grace and its own walk of `/proc`, 1,000
//! members took five minutes to end.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::proc::{self, Pid};
use crate::error::Result;

/// How long what was sent SIGKILL gets to be gone before `finish` goes on.
const AFTER_KILL: Duration = Duration::from_secs(2);

/// What a process must still carry to be signalled: checked on the process itself, or on the
/// leader of a group, just before each signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// A worker of this agent id in this home (its argv, on a teamctl binary).
    Worker(String),
    /// An agent process of this agent id in this home (its environment), carrying the word of
    /// its member's placement when one is given.
    Agent(String, Option<String>),
    /// A worker or agent process of this agent id in this home carrying this placement's word
    /// (`env::PLACEMENT`): what one start made, nothing else.
    Placed(String, String),
}

impl Tag {
    fn on(&self, pid: u32) -> bool {
        match self {
            Tag::Worker(id) => proc::is_teamctl_worker(pid, id),
            Tag::Agent(id, word) => {
                proc::is_agent_process(pid, id)
                    && word
                        .as_deref()
                        .is_none_or(|w| proc::carries_placement(pid, w))
            }
            Tag::Placed(id, word) => {
                proc::carries_placement(pid, word)
                    && (proc::is_agent_process(pid, id) || proc::is_teamctl_worker(pid, id))
            }
        }
    }
}

/// One process, or one process group by its leader, to end.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    pid: Pid,
    group: bool,
    tag: Tag,
}

impl Target {
    fn there(&self) -> bool {
        self.tag.on(self.pid.raw())
    }

    fn signal(&self, sig: Signal) {
        if self.group {
            proc::signal_group(self.pid.raw() as i32, sig);
        } else {
            proc::signal(self.pid.raw(), sig);
        }
    }
}

/// A step of work after the processes are gone (a pane closed, tag checked). `Some(pane)`:
/// that pane was found to be the user's (respawned) and left open, its tags taken off.
type Then = Box<dyn FnOnce() -> Result<Option<String>>>;

/// What is to be ended, gathered from one member or many, ended by `finish`.
pub struct Ending {
    grace: Duration,
    groups: Vec<Target>,
    ids: Vec<(String, Option<String>)>,
    placed: Vec<(String, String)>,
    then: Vec<Then>,
}

impl Ending {
    /// Nothing yet; `grace`: how long SIGTERM is given before SIGKILL, once for all.
    pub fn new(grace: Duration) -> Ending {
        Ending {
            grace,
            groups: Vec::new(),
            ids: Vec::new(),
            placed: Vec::new(),
            then: Vec::new(),
        }
    }

    /// The process group led by `leader`, ended while its leader carries `tag`.
    pub fn group(&mut self, leader: Pid, tag: Tag) {
        let t = Target {
            pid: leader,
            group: true,
            tag,
        };
        if !self.groups.contains(&t) {
            self.groups.push(t);
        }
    }

    /// Every process carrying `agent_id` (workers and agent processes of this home), for a
    /// member whose record is not there to read (its team file gone).
    pub fn tagged(&mut self, agent_id: &str) {
        self.tagged_placed(agent_id, None);
    }

    /// Every process carrying `agent_id`: its workers, and its agent processes carrying `word`
    /// too (`env::PLACEMENT`: the word its record holds; `None`, an older teamctl's
    /// placement: the agent id alone).
    pub fn tagged_placed(&mut self, agent_id: &str, word: Option<&str>) {
        if !self.ids.iter().any(|(i, _)| i == agent_id) {
            self.ids
                .push((agent_id.to_string(), word.map(str::to_string)));
        }
    }

    /// Every process of `agent_id` that carries the placement word `word` (`Tag::Placed`),
    /// found in a walk of `/proc` with the others: a start that failed ends what it made
    /// wherever it runs (a pane it could not tag: attacker QA, a worker ran on unrecorded).
    pub fn placed(&mut self, agent_id: &str, word: &str) {
        let p = (agent_id.to_string(), word.to_string());
        if !self.placed.contains(&p) {
            self.placed.push(p);
        }
    }

    /// `step` once the processes are gone (closing a pane, its tag checked); it returns the
    /// pane it left open to the user, if it did.
    pub fn then(&mut self, step: impl FnOnce() -> Result<Option<String>> + 'static) {
        self.then.push(Box::new(step));
    }

    /// End it all (see the module comment). Every step after the processes runs; the first
    /// error among them is returned, else the panes left open because they are the user's
    /// now (what `kill` tells the user instead of "killed").
    pub fn finish(self) -> Result<Vec<String>> {
        // Workers first: a worker asked to stop ends its own turn and says it was stopped;
        // its turn ended at the same moment would be a failed turn to the worker (and to
        // whoever waits for its answer). Then the turns whose worker did not end them.
        let (workers, turns): (Vec<Target>, Vec<Target>) = self
            .groups
            .into_iter()
            .partition(|t| matches!(t.tag, Tag::Worker(_)));
        escalate(workers, self.grace);
        escalate(turns, self.grace);
        if !self.ids.is_empty() || !self.placed.is_empty() {
            escalate(walk(&self.ids, &self.placed), self.grace);
        }
        let mut first = Ok(());
        let mut left = Vec::new();
        for step in self.then {
            match step() {
                Ok(kept) => left.extend(kept),
                Err(e) => {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        first.map(|()| left)
    }
}

/// The one walk of `/proc`: every process of ours carrying one of `ids`, as a worker (argv)
/// or as an agent (environment, with the id's word if it has one), or one of `placed` (agent
/// id and a start's word: `Tag::Placed`), with the tag it was found by.
fn walk(ids: &[(String, Option<String>)], placed: &[(String, String)]) -> Vec<Target> {
    let want: HashSet<&[u8]> = ids.iter().map(|(i, _)| i.as_bytes()).collect();
    let word_of = |id: &[u8]| {
        ids.iter()
            .find(|(i, _)| i.as_bytes() == id)
            .and_then(|(_, w)| w.clone())
    };
    let mut out = Vec::new();
    for raw in proc::pids() {
        let Some(pid) = Pid::new(raw) else { continue };
        // A worker's argv on a program that is not teamctl's is not a worker (`exec -a`:
        // attacker QA, session 23).
        let tag = if let Some(id) = proc::worker_id(raw)
            .filter(|i| want.contains(&i[..]))
            .filter(|_| proc::runs_teamctl(raw))
        {
            Tag::Worker(String::from_utf8_lossy(&id).into_owned())
        } else if let Some(tag) = proc::agent_ids(raw)
            .into_iter()
            .filter(|i| want.contains(&i[..]))
            .map(|i| Tag::Agent(String::from_utf8_lossy(&i).into_owned(), word_of(&i)))
            .find(|t| t.on(raw))
        {
            tag
        } else if let Some(tag) = placed
            .iter()
            .map(|(id, word)| Tag::Placed(id.clone(), word.clone()))
            .find(|t| t.on(raw))
        {
            tag
        } else {
            continue;
        };
        out.push(Target {
            pid,
            group: false,
            tag,
        });
    }
    out
}

/// Which of `ids` some process of ours still carries (as a worker or as an agent, with the
/// id's word if it has one), in one walk of `/proc`.
pub fn still_tagged(ids: &[(String, Option<String>)]) -> HashSet<String> {
    if ids.is_empty() {
        return HashSet::new();
    }
    walk(ids, &[])
        .into_iter()
        .map(|t| match t.tag {
            Tag::Worker(id) | Tag::Agent(id, _) | Tag::Placed(id, _) => id,
        })
        .collect()
}

/// SIGTERM to every target still tagged, up to `grace` for all of them together, SIGKILL to
/// each still tagged then, and up to `AFTER_KILL` for those to go.
fn escalate(targets: Vec<Target>, grace: Duration) {
    let mut left: Vec<Target> = targets.into_iter().filter(Target::there).collect();
    for t in &left {
        t.signal(Signal::SIGTERM);
    }
    settle(&mut left, grace);
    left.retain(|t| {
        // Checked again just before the kill: the pid may be another process's by now.
        let there = t.there();
        if there {
            t.signal(Signal::SIGKILL);
        }
        there
    });
    settle(&mut left, AFTER_KILL);
}

/// Wait up to `within` for the targets in `left` to be gone, dropping each once it is.
fn settle(left: &mut Vec<Target>, within: Duration) {
    let deadline = Instant::now() + within;
    let mut pause = Duration::from_millis(1);
    loop {
        left.retain(Target::there);
        let now = Instant::now();
        if left.is_empty() || now >= deadline {
            return;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
