//! The shared task list's records and rules (SPEC section 9): tasks with ids counting from 1
//! per team, blockers that must all be completed before a task can be claimed, and claims that
//! never hand one task to two members. Every operation is pure and checks everything before
//! it changes anything, so a refused operation leaves the list exactly as it was.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::message::Body;
use super::name::Name;
use crate::error::Error;

/// The longest subject accepted, in bytes.
pub const MAX_SUBJECT: usize = 1000;

/// The longest description or result kept, in bytes.
pub const MAX_TEXT: usize = 64 * 1024;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 4] = [
        TaskStatus::Pending,
        TaskStatus::InProgress,
        TaskStatus::Completed,
        TaskStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
        }
    }

    /// Completed or failed: nobody works on it any more.
    pub fn is_finished(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The words users type for a status beside the SPEC's own (`done` for `completed`): taken,
/// and stored as the SPEC's word.
const SYNONYMS: &[(&str, TaskStatus)] = &[
    ("todo", TaskStatus::Pending),
    ("open", TaskStatus::Pending),
    ("inprogress", TaskStatus::InProgress),
    ("doing", TaskStatus::InProgress),
    ("started", TaskStatus::InProgress),
    ("wip", TaskStatus::InProgress),
    ("done", TaskStatus::Completed),
    ("complete", TaskStatus::Completed),
    ("finished", TaskStatus::Completed),
    ("fail", TaskStatus::Failed),
];

impl FromStr for TaskStatus {
    type Err = Error;
    /// A SPEC status in any case, `-` or a space for `_` (`In-Progress`), or a word users type
    /// for one (`SYNONYMS`: `done`, `todo`, `doing`...).
    fn from_str(s: &str) -> Result<TaskStatus, Error> {
        let wanted = s.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        TaskStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == wanted)
            .or_else(|| {
                SYNONYMS
                    .iter()
                    .find(|(word, _)| *word == wanted)
                    .map(|(_, st)| *st)
            })
            .ok_or_else(|| {
                Error::bad(format!(
                    "unknown task status {s:?}; use pending, in_progress, completed or failed (done, todo and doing are taken too)"
                ))
            })
    }
}

/// One task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: u64,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    pub status: TaskStatus,
    #[serde(default)]
    pub owner: Option<Name>,
    /// Tasks that must be completed before this one can be claimed.
    #[serde(default)]
    pub blocked_by: Vec<u64>,
    /// Tasks waiting on this one (the reverse of `blocked_by`).
    #[serde(default)]
    pub blocks: Vec<u64>,
    /// Milliseconds since the epoch.
    pub created_at: u64,
    pub updated_at: u64,
    /// What came of it: the agent's output, or why it failed.
    #[serde(default)]
    pub result: Option<String>,
    /// Who gave the task its owner (`task add --owner`, `task update --owner`); absent when
    /// nobody did or the owner claimed it. The assignment sent when its last blocker completes
    /// comes from them, so the owner's result goes to them, not to whoever completed the
    /// blocker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_by: Option<Name>,
    /// The loop guard: a task added inside a turn carries that turn's hops + 1, and so do
    /// its assignment and the turn that runs it. Absent means 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hops: u32,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Task {
    /// The message a teammate gets when this task is given to it.
    /// Who the assignment sent when this task's last blocker completes comes from: whoever
    /// gave it its owner, unless that is the owner itself (or nobody): then `completer`.
    pub fn assigner<'a>(&'a self, completer: &'a Name) -> &'a Name {
        self.assigned_by
            .as_ref()
            .filter(|a| self.owner.as_ref() != Some(*a))
            .unwrap_or(completer)
    }

    pub fn assignment(&self) -> Body {
        Body::TaskAssignment {
            task_id: self.id,
            subject: self.subject.clone(),
        }
    }

    /// The text of a turn about this task: its subject, then its description.
    pub fn turn_text(&self) -> String {
        if self.description.trim().is_empty() {
            format!("Task #{}: {}", self.id, self.subject)
        } else {
            format!(
                "Task #{}: {}\n\n{}",
                self.id,
                self.subject,
                self.description.trim_end()
            )
        }
    }
}

/// Why an operation on the list was refused. Every one is bad input (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("no task #{0}; `teamctl task list` shows the tasks")]
    Unknown(u64),
    #[error("task #{task} cannot be blocked by #{blocker}: there is no task #{blocker}")]
    UnknownBlocker { task: u64, blocker: u64 },
    #[error("task #{0} cannot be blocked by itself")]
    SelfBlock(u64),
    #[error(
        "task #{task} blocked by #{blocker} would make a cycle (#{blocker} already waits on #{task}); remove the dependency"
    )]
    Cycle { task: u64, blocker: u64 },
    #[error("task #{id} is blocked by {} (not completed yet); claim another task", ids(.blockers))]
    Blocked { id: u64, blockers: Vec<u64> },
    #[error(
        "task #{id} belongs to {owner}; claim another task or reassign it with `task update {id} --owner NAME`"
    )]
    OwnedByOther { id: u64, owner: Name },
    #[error("task #{id} is {status}, not pending; only pending tasks can be claimed")]
    NotPending { id: u64, status: TaskStatus },
    #[error("a task needs a subject")]
    EmptySubject,
    #[error(
        "a task subject is one line without control characters; put the rest in -d DESCRIPTION"
    )]
    SubjectNotOneLine,
    #[error("the {what} is {len} bytes; the limit is {max}")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
}

impl From<TaskError> for Error {
    fn from(e: TaskError) -> Error {
        Error::bad(e.to_string())
    }
}

/// `#1, #2`.
pub fn ids(list: &[u64]) -> String {
    list.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A new task as asked for by `task add`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub blocked_by: Vec<u64>,
    pub owner: Option<Name>,
    /// Who adds it (recorded as `assigned_by` when it has an owner).
    pub by: Option<Name>,
    /// The hops it is added at (the loop guard).
    pub hops: u32,
}

/// A change asked for by `task update`; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    pub status: Option<TaskStatus>,
    /// `Some(None)` removes the owner.
    pub owner: Option<Option<Name>>,
    /// Blockers to add.
    pub blocked_by: Vec<u64>,
    /// A new hop count (the leader taking the task over sets 0).
    pub hops: Option<u32>,
    /// Who asks for the change (recorded as `assigned_by` when it sets an owner).
    pub by: Option<Name>,
}

/// The whole list of one team (`tasks.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskList {
    pub next_id: u64,
    #[serde(default)]
    pub tasks: Vec<Task>,
}

impl Default for TaskList {
    fn default() -> Self {
        TaskList {
            next_id: 1,
            tasks: Vec::new(),
        }
    }
}

type Res<T> = std::result::Result<T, TaskError>;

impl TaskList {
    pub fn get(&self, id: u64) -> Res<&Task> {
        self.tasks
            .iter()
            .find(|t| t.id == id)
            .ok_or(TaskError::Unknown(id))
    }

    fn index(&self, id: u64) -> Res<usize> {
        self.tasks
            .iter()
            .position(|t| t.id == id)
            .ok_or(TaskError::Unknown(id))
    }

    /// The blockers of `task` that are not completed yet.
    pub fn open_blockers(&self, task: &Task) -> Vec<u64> {
        task.blocked_by
            .iter()
            .copied()
            .filter(|b| {
                self.get(*b)
                    .map_or(true, |t| t.status != TaskStatus::Completed)
            })
            .collect()
    }

    pub fn is_blocked(&self, task: &Task) -> bool {
        !self.open_blockers(task).is_empty()
    }

    /// Add a task; unknown blockers are refused.
    pub fn add(&mut self, new: NewTask, now: u64) -> Res<Task> {
        let subject = new.subject.trim().to_string();
        if subject.is_empty() {
            return Err(TaskError::EmptySubject);
        }
        // Subjects are shown one per line (task list, status, summaries).
        if subject.chars().any(char::is_control) {
            return Err(TaskError::SubjectNotOneLine);
        }
        check_len("subject", &subject, MAX_SUBJECT)?;
        check_len("description", &new.description, MAX_TEXT)?;
        let id = self.next_id.max(1);
        let blocked_by = dedup(&new.blocked_by);
        for b in &blocked_by {
            if *b == id {
                return Err(TaskError::SelfBlock(id));
            }
            self.get(*b).map_err(|_| TaskError::UnknownBlocker {
                task: id,
                blocker: *b,
            })?;
        }
        let task = Task {
            id,
            subject,
            description: new.description,
            status: TaskStatus::Pending,
            assigned_by: new.owner.as_ref().and(new.by),
            owner: new.owner,
            blocked_by: blocked_by.clone(),
            blocks: Vec::new(),
            created_at: now,
            updated_at: now,
            result: None,
            hops: new.hops,
        };
        for b in &blocked_by {
            let i = self.index(*b)?;
            self.tasks[i].blocks.push(id);
        }
        self.tasks.push(task.clone());
        self.next_id = id + 1;
        Ok(task)
    }

    /// Claim a task for `by`. Without an id: the lowest pending task whose blockers are all
    /// completed and that is unowned or already `by`'s (`Ok(None)` when there is none). With
    /// an id: that task, refused when it is blocked, someone else's or not pending. Claiming a
    /// task `by` already has in progress is not an error.
    pub fn claim(&mut self, by: &Name, id: Option<u64>, now: u64) -> Res<Option<Task>> {
        self.claim_within(by, id, u32::MAX, now)
    }

    /// `claim`, where a claim without an id passes over tasks more than `max_hops` hops from
    /// their origin (the loop guard: auto-claim leaves them pending for the leader).
    pub fn claim_within(
        &mut self,
        by: &Name,
        id: Option<u64>,
        max_hops: u32,
        now: u64,
    ) -> Res<Option<Task>> {
        let i = match id {
            Some(id) => {
                let i = self.index(id)?;
                let t = &self.tasks[i];
                if let Some(owner) = &t.owner
                    && owner != by
                {
                    return Err(TaskError::OwnedByOther {
                        id,
                        owner: owner.clone(),
                    });
                }
                if t.status == TaskStatus::InProgress && t.owner.as_ref() == Some(by) {
                    return Ok(Some(t.clone()));
                }
                if t.status != TaskStatus::Pending {
                    return Err(TaskError::NotPending {
                        id,
                        status: t.status,
                    });
                }
                let blockers = self.open_blockers(t);
                if !blockers.is_empty() {
                    return Err(TaskError::Blocked { id, blockers });
                }
                i
            }
            None => {
                let next = self
                    .tasks
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| {
                        t.status == TaskStatus::Pending
                            && t.owner.as_ref().is_none_or(|o| o == by)
                            && !self.is_blocked(t)
                            && t.hops <= max_hops
                    })
                    .min_by_key(|(_, t)| t.id)
                    .map(|(i, _)| i);
                match next {
                    Some(i) => i,
                    None => return Ok(None),
                }
            }
        };
        let t = &mut self.tasks[i];
        t.status = TaskStatus::InProgress;
        if t.owner.as_ref() != Some(by) {
            t.assigned_by = None;
        }
        t.owner = Some(by.clone());
        t.updated_at = now;
        Ok(Some(t.clone()))
    }

    /// The lowest task `by` could claim but for the loop guard: pending, unblocked, unowned
    /// or `by`'s, and more than `max_hops` hops from its origin.
    pub fn past_hops(&self, by: &Name, max_hops: u32) -> Option<&Task> {
        self.tasks
            .iter()
            .filter(|t| {
                t.status == TaskStatus::Pending
                    && t.owner.as_ref().is_none_or(|o| o == by)
                    && !self.is_blocked(t)
                    && t.hops > max_hops
            })
            .min_by_key(|t| t.id)
    }

    /// Change a task's status, owner or blockers (a blocker that would close a cycle is
    /// refused). Returns the task as it is now.
    pub fn update(&mut self, id: u64, change: &Change, now: u64) -> Res<Task> {
        let i = self.index(id)?;
        let added = dedup(&change.blocked_by);
        for b in &added {
            self.get(*b).map_err(|_| TaskError::UnknownBlocker {
                task: id,
                blocker: *b,
            })?;
            if *b == id {
                return Err(TaskError::SelfBlock(id));
            }
            if self.waits_on(*b, id) {
                return Err(TaskError::Cycle {
                    task: id,
                    blocker: *b,
                });
            }
        }
        for b in &added {
            if self.tasks[i].blocked_by.contains(b) {
                continue;
            }
            self.tasks[i].blocked_by.push(*b);
            let j = self.index(*b)?;
            self.tasks[j].blocks.push(id);
        }
        let t = &mut self.tasks[i];
        if let Some(status) = change.status {
            t.status = status;
        }
        if let Some(owner) = &change.owner {
            t.owner = owner.clone();
            t.assigned_by = owner.as_ref().and(change.by.clone());
        }
        if let Some(hops) = change.hops {
            t.hops = hops;
        }
        t.updated_at = now;
        Ok(t.clone())
    }

    /// Does `from` wait on `target`, directly or through other tasks?
    fn waits_on(&self, from: u64, target: u64) -> bool {
        let mut stack = vec![from];
        let mut seen = BTreeSet::new();
        while let Some(id) = stack.pop() {
            if id == target {
                return true;
            }
            if !seen.insert(id) {
                continue;
            }
            if let Ok(t) = self.get(id) {
                stack.extend(t.blocked_by.iter().copied());
            }
        }
        false
    }

    /// Mark a task completed with an optional result.
    pub fn done(&mut self, id: u64, result: Option<String>, now: u64) -> Res<Task> {
        self.finish(id, TaskStatus::Completed, result, now)
    }

    /// Mark a task completed or failed, with what came of it.
    pub fn finish(
        &mut self,
        id: u64,
        status: TaskStatus,
        result: Option<String>,
        now: u64,
    ) -> Res<Task> {
        let i = self.index(id)?;
        let t = &mut self.tasks[i];
        t.status = status;
        if let Some(r) = result {
            t.result = Some(cut(&r, MAX_TEXT));
        }
        t.updated_at = now;
        Ok(t.clone())
    }

    /// Hand back `name`'s unfinished tasks: pending or in progress, they become pending
    /// without an owner. Returns their ids.
    pub fn release_owner(&mut self, name: &Name, now: u64) -> Vec<u64> {
        let mut released = Vec::new();
        for t in &mut self.tasks {
            if t.owner.as_ref() == Some(name) && !t.status.is_finished() {
                t.status = TaskStatus::Pending;
                t.owner = None;
                t.assigned_by = None;
                t.updated_at = now;
                released.push(t.id);
            }
        }
        released
    }

    /// `name`'s tasks in progress become pending again, still `name`'s, so that a teammate
    /// that comes back after a crash claims them again. Returns their ids.
    pub fn requeue_owner(&mut self, name: &Name, now: u64) -> Vec<u64> {
        let mut requeued = Vec::new();
        for t in &mut self.tasks {
            if t.owner.as_ref() == Some(name) && t.status == TaskStatus::InProgress {
                t.status = TaskStatus::Pending;
                t.updated_at = now;
                requeued.push(t.id);
            }
        }
        requeued
    }

    /// Owned pending tasks that `id` was the last open blocker of (now that `id` is
    /// completed): their owners should hear that they can start.
    pub fn ready_after(&self, id: u64) -> Vec<Task> {
        let Ok(done) = self.get(id) else {
            return Vec::new();
        };
        if done.status != TaskStatus::Completed {
            return Vec::new();
        }
        done.blocks
            .iter()
            .filter_map(|b| self.get(*b).ok())
            .filter(|t| t.status == TaskStatus::Pending && t.owner.is_some())
            .filter(|t| !self.is_blocked(t))
            .cloned()
            .collect()
    }
}

fn dedup(ids: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for i in ids {
        if !out.contains(i) {
            out.push(*i);
        }
    }
    out
}

fn check_len(what: &'static str, s: &str, max: usize) -> Res<()> {
    if s.len() > max {
        return Err(TaskError::TooLong {
            what,
            len: s.len(),
            max,
        });
    }
    Ok(())
}

/// At most `max` bytes of `s`, keeping the end (where a failure's reason is).
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    fn new(subject: &str, blocked_by: &[u64]) -> NewTask {
        NewTask {
            subject: subject.into(),
            blocked_by: blocked_by.to_vec(),
            ..Default::default()
        }
    }

    fn list(k: usize) -> TaskList {
        let mut l = TaskList::default();
        for i in 0..k {
            l.add(new(&format!("t{i}"), &[]), 0).unwrap();
        }
        l
    }

    #[test]
    fn ids_count_from_one_and_blocks_mirror_blocked_by() {
        let mut l = list(2);
        let t = l.add(new("c", &[1, 2, 1]), 5).unwrap();
        assert_eq!(t.id, 3);
        assert_eq!(t.blocked_by, vec![1, 2]);
        assert_eq!(l.get(1).unwrap().blocks, vec![3]);
        assert_eq!(l.get(2).unwrap().blocks, vec![3]);
        assert_eq!(l.next_id, 4);
        assert_eq!(t.status, TaskStatus::Pending);
    }

    #[test]
    fn add_refuses_unknown_blockers_self_blocks_and_empty_subjects() {
        let mut l = list(1);
        let before = l.clone();
        assert_eq!(
            l.add(new("x", &[7]), 0),
            Err(TaskError::UnknownBlocker {
                task: 2,
                blocker: 7
            })
        );
        assert_eq!(l.add(new("x", &[2]), 0), Err(TaskError::SelfBlock(2)));
        assert_eq!(l.add(new("  ", &[]), 0), Err(TaskError::EmptySubject));
        assert_eq!(
            l.add(new("two\nlines", &[]), 0),
            Err(TaskError::SubjectNotOneLine)
        );
        let long = "x".repeat(MAX_SUBJECT + 1);
        assert!(matches!(
            l.add(new(&long, &[]), 0),
            Err(TaskError::TooLong { .. })
        ));
        assert_eq!(l, before);
    }

    #[test]
    fn auto_claim_passes_over_a_task_past_the_hop_limit() {
        let mut l = TaskList::default();
        for (subject, hops) in [("far", 3), ("near", 2)] {
            l.add(
                NewTask {
                    subject: subject.into(),
                    hops,
                    ..Default::default()
                },
                0,
            )
            .unwrap();
        }
        let a = n("alice");
        assert_eq!(l.past_hops(&a, 2).map(|t| t.id), Some(1));
        assert_eq!(l.claim_within(&a, None, 2, 0).unwrap().unwrap().id, 2);
        assert_eq!(l.claim_within(&a, None, 2, 0).unwrap(), None);
        assert_eq!(l.tasks[0].status, TaskStatus::Pending);
        // Hops are kept in the file; absent reads as 0 and 0 is not written.
        let json = serde_json::to_string(&l).unwrap();
        assert!(json.contains("\"hops\":3"), "{json}");
        let back: TaskList = serde_json::from_str(&json).unwrap();
        assert_eq!(back, l);
        let old: Task = serde_json::from_str(
            r#"{"id":1,"subject":"s","status":"pending","createdAt":0,"updatedAt":0}"#,
        )
        .unwrap();
        assert_eq!(old.hops, 0);
        assert!(!serde_json::to_string(&old).unwrap().contains("hops"));
        // The leader taking it over starts it again.
        let change = Change {
            hops: Some(0),
            ..Default::default()
        };
        l.update(1, &change, 0).unwrap();
        assert_eq!(l.claim_within(&a, None, 2, 0).unwrap().unwrap().id, 1);
    }

    #[test]
    fn claim_takes_the_lowest_unblocked_pending_task() {
        let mut l = list(1);
        l.add(new("b", &[1]), 0).unwrap();
        l.add(new("c", &[]), 0).unwrap();
        let a = n("alice");
        assert_eq!(l.claim(&a, None, 1).unwrap().unwrap().id, 1);
        // #2 waits on #1, so #3 is next.
        assert_eq!(l.claim(&a, None, 1).unwrap().unwrap().id, 3);
        assert_eq!(l.claim(&a, None, 1).unwrap(), None);
        l.done(1, None, 2).unwrap();
        let t = l.claim(&a, None, 3).unwrap().unwrap();
        assert_eq!(
            (t.id, t.status, t.owner),
            (2, TaskStatus::InProgress, Some(a))
        );
        assert_eq!(t.updated_at, 3);
    }

    #[test]
    fn claim_skips_tasks_owned_by_others_but_takes_own() {
        let mut l = TaskList::default();
        l.add(
            NewTask {
                subject: "for bob".into(),
                owner: Some(n("bob")),
                ..Default::default()
            },
            0,
        )
        .unwrap();
        l.add(new("free", &[]), 0).unwrap();
        assert_eq!(l.claim(&n("alice"), None, 0).unwrap().unwrap().id, 2);
        assert_eq!(l.claim(&n("alice"), None, 0).unwrap(), None);
        assert_eq!(l.claim(&n("bob"), None, 0).unwrap().unwrap().id, 1);
    }

    #[test]
    fn claim_by_id_refuses_blocked_owned_and_finished_tasks() {
        let mut l = list(1);
        l.add(new("b", &[1]), 0).unwrap();
        l.add(new("c", &[]), 0).unwrap();
        let (a, b) = (n("alice"), n("bob"));
        let before = l.clone();
        assert_eq!(
            l.claim(&a, Some(2), 0),
            Err(TaskError::Blocked {
                id: 2,
                blockers: vec![1]
            })
        );
        assert_eq!(l.claim(&a, Some(9), 0), Err(TaskError::Unknown(9)));
        assert_eq!(l, before);
        l.claim(&b, Some(3), 0).unwrap();
        let before = l.clone();
        assert_eq!(
            l.claim(&a, Some(3), 0),
            Err(TaskError::OwnedByOther {
                id: 3,
                owner: b.clone()
            })
        );
        // Claiming one's own task again is harmless.
        assert_eq!(l.claim(&b, Some(3), 0).unwrap().unwrap().id, 3);
        assert_eq!(l, before);
        l.done(3, None, 0).unwrap();
        l.update(
            3,
            &Change {
                owner: Some(None),
                ..Default::default()
            },
            0,
        )
        .unwrap();
        assert_eq!(
            l.claim(&a, Some(3), 0),
            Err(TaskError::NotPending {
                id: 3,
                status: TaskStatus::Completed
            })
        );
    }

    #[test]
    fn a_failed_blocker_keeps_its_dependants_blocked() {
        let mut l = list(1);
        l.add(new("b", &[1]), 0).unwrap();
        l.finish(1, TaskStatus::Failed, Some("boom".into()), 0)
            .unwrap();
        assert_eq!(l.claim(&n("a"), None, 0).unwrap(), None);
        assert!(l.is_blocked(l.get(2).unwrap()));
    }

    #[test]
    fn update_changes_status_and_owner_and_refuses_cycles() {
        let mut l = list(1);
        l.add(new("b", &[1]), 0).unwrap();
        l.add(new("c", &[2]), 0).unwrap();
        let before = l.clone();
        for (task, blocker) in [(1, 3), (1, 2), (2, 3)] {
            let change = Change {
                blocked_by: vec![blocker],
                status: Some(TaskStatus::Completed),
                ..Default::default()
            };
            assert_eq!(
                l.update(task, &change, 0),
                Err(TaskError::Cycle { task, blocker })
            );
        }
        let selfish = Change {
            blocked_by: vec![2],
            ..Default::default()
        };
        assert_eq!(l.update(2, &selfish, 0), Err(TaskError::SelfBlock(2)));
        assert_eq!(
            l.update(1, &Change::default(), 0),
            Ok(l.get(1).unwrap().clone())
        );
        assert_eq!(
            l.update(7, &Change::default(), 0),
            Err(TaskError::Unknown(7))
        );
        assert_eq!(l, before);
        let t = l
            .update(
                3,
                &Change {
                    status: Some(TaskStatus::Failed),
                    owner: Some(Some(n("bob"))),
                    blocked_by: vec![1],
                    hops: None,
                    by: Some(n("carol")),
                },
                9,
            )
            .unwrap();
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.assigned_by, Some(n("carol")));
        // The assignment sent when its blocker completes comes from carol, not the completer;
        // one a teammate gave itself comes from the completer.
        assert_eq!(t.assigner(&n("dave")), &n("carol"));
        let mut own = t.clone();
        own.assigned_by = Some(n("bob"));
        assert_eq!(own.assigner(&n("dave")), &n("dave"));
        assert_eq!(t.owner, Some(n("bob")));
        assert_eq!(t.blocked_by, vec![2, 1]);
        assert_eq!(l.get(1).unwrap().blocks, vec![2, 3]);
        assert_eq!(t.updated_at, 9);
    }

    #[test]
    fn done_records_the_result() {
        let mut l = list(1);
        let t = l.done(1, Some("all good".into()), 4).unwrap();
        assert_eq!(t.status, TaskStatus::Completed);
        assert_eq!(t.result.as_deref(), Some("all good"));
        assert_eq!(l.done(2, None, 0), Err(TaskError::Unknown(2)));
        let long = "é".repeat(MAX_TEXT);
        let t = l.finish(1, TaskStatus::Failed, Some(long), 0).unwrap();
        assert!(t.result.unwrap().len() <= MAX_TEXT);
    }

    #[test]
    fn release_owner_returns_unfinished_tasks_only() {
        let mut l = list(4);
        let a = n("alice");
        l.claim(&a, Some(1), 0).unwrap();
        l.claim(&a, Some(2), 0).unwrap();
        l.done(2, None, 0).unwrap();
        l.update(
            3,
            &Change {
                owner: Some(Some(a.clone())),
                ..Default::default()
            },
            0,
        )
        .unwrap();
        l.claim(&n("bob"), Some(4), 0).unwrap();
        assert_eq!(l.release_owner(&a, 7), vec![1, 3]);
        let t1 = l.get(1).unwrap();
        assert_eq!((t1.status, &t1.owner), (TaskStatus::Pending, &None));
        assert_eq!(l.get(2).unwrap().owner, Some(a.clone()));
        assert_eq!(l.get(4).unwrap().owner, Some(n("bob")));
        assert!(l.release_owner(&a, 8).is_empty());
    }

    #[test]
    fn requeue_owner_keeps_the_owner_so_the_same_teammate_claims_again() {
        let mut l = list(3);
        let a = n("alice");
        l.claim(&a, Some(2), 0).unwrap();
        l.claim(&a, Some(3), 0).unwrap();
        l.done(3, None, 0).unwrap();
        assert_eq!(l.requeue_owner(&a, 5), vec![2]);
        let t = l.get(2).unwrap();
        assert_eq!(
            (t.status, t.owner.as_ref()),
            (TaskStatus::Pending, Some(&a))
        );
        assert_eq!(l.claim(&n("bob"), None, 0).unwrap().unwrap().id, 1);
        assert_eq!(l.claim(&n("bob"), None, 0).unwrap(), None);
        assert_eq!(l.claim(&a, None, 0).unwrap().unwrap().id, 2);
    }

    #[test]
    fn ready_after_names_owned_tasks_unblocked_by_a_completion() {
        let mut l = list(2);
        l.add(
            NewTask {
                subject: "c".into(),
                blocked_by: vec![1, 2],
                owner: Some(n("bob")),
                ..Default::default()
            },
            0,
        )
        .unwrap();
        l.add(new("d", &[1]), 0).unwrap();
        l.done(1, None, 0).unwrap();
        assert!(l.ready_after(1).is_empty());
        l.done(2, None, 0).unwrap();
        let ready: Vec<u64> = l.ready_after(2).iter().map(|t| t.id).collect();
        assert_eq!(ready, vec![3]);
    }

    /// The words users type are taken for the SPEC's statuses (new-user QA: `task update 1
    /// --status done` was refused).
    #[test]
    fn the_words_users_type_are_taken_for_the_spec_statuses() {
        for (typed, status) in [
            ("done", TaskStatus::Completed),
            ("Done", TaskStatus::Completed),
            ("complete", TaskStatus::Completed),
            ("todo", TaskStatus::Pending),
            ("doing", TaskStatus::InProgress),
            ("in progress", TaskStatus::InProgress),
            ("inprogress", TaskStatus::InProgress),
            ("fail", TaskStatus::Failed),
        ] {
            assert_eq!(typed.parse::<TaskStatus>().unwrap(), status, "{typed}");
        }
        // Every synonym names a status other than by its SPEC word.
        for (word, _) in SYNONYMS {
            assert!(
                TaskStatus::ALL.iter().all(|s| s.as_str() != *word),
                "{word}"
            );
        }
    }

    #[test]
    fn statuses_parse_and_serialise_in_snake_case() {
        assert_eq!(
            "in_progress".parse::<TaskStatus>().unwrap(),
            TaskStatus::InProgress
        );
        assert_eq!(
            "In-Progress".parse::<TaskStatus>().unwrap(),
            TaskStatus::InProgress
        );
        assert_eq!("finito".parse::<TaskStatus>().unwrap_err().exit_code(), 2);
        assert_eq!("".parse::<TaskStatus>().unwrap_err().exit_code(), 2);
        let mut l = list(1);
        l.add(new("b", &[1]), 0).unwrap();
        let v = serde_json::to_value(&l).unwrap();
        assert_eq!(v["nextId"], 3);
        assert_eq!(v["tasks"][1]["blockedBy"], serde_json::json!([1]));
        assert_eq!(v["tasks"][0]["status"], "pending");
        assert_eq!(v["tasks"][0]["createdAt"], 0);
        let back: TaskList = serde_json::from_value(v).unwrap();
        assert_eq!(back, l);
    }

    #[test]
    fn turn_text_has_subject_and_description() {
        let mut l = TaskList::default();
        let t = l
            .add(
                NewTask {
                    subject: "fix login".into(),
                    description: "the form 500s\n".into(),
                    ..Default::default()
                },
                0,
            )
            .unwrap();
        assert_eq!(t.turn_text(), "Task #1: fix login\n\nthe form 500s");
        assert_eq!(
            t.assignment(),
            Body::TaskAssignment {
                task_id: 1,
                subject: "fix login".into()
            }
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Add(Vec<u64>),
            Claim(usize, Option<u64>),
            Block(u64, u64),
            Finish(u64, bool),
            Release(usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                prop::collection::vec(1..12u64, 0..3).prop_map(Op::Add),
                (0..3usize, prop::option::of(1..12u64)).prop_map(|(w, id)| Op::Claim(w, id)),
                (1..12u64, 1..12u64).prop_map(|(a, b)| Op::Block(a, b)),
                (1..12u64, any::<bool>()).prop_map(|(id, ok)| Op::Finish(id, ok)),
                (0..3usize).prop_map(Op::Release),
            ]
        }

        /// `blocks` mirrors `blockedBy`, and no task waits on itself.
        fn check(l: &TaskList) {
            for t in &l.tasks {
                for b in &t.blocked_by {
                    assert!(l.get(*b).unwrap().blocks.contains(&t.id), "{l:?}");
                    assert!(!l.waits_on(*b, t.id), "cycle through #{}: {l:?}", t.id);
                }
                for b in &t.blocks {
                    assert!(l.get(*b).unwrap().blocked_by.contains(&t.id), "{l:?}");
                }
            }
        }

        proptest! {
            #[test]
            fn any_sequence_keeps_the_rules(ops in prop::collection::vec(op(), 1..60)) {
                let who = [n("a"), n("b"), n("c")];
                let mut l = TaskList::default();
                for op in ops {
                    let before = l.clone();
                    let res = match op {
                        Op::Add(blockers) => l
                            .add(
                                NewTask {
                                    subject: "t".into(),
                                    blocked_by: blockers,
                                    ..Default::default()
                                },
                                0,
                            )
                            .map(|_| ()),
                        Op::Claim(w, id) => l.claim(&who[w], id, 0).map(|got| {
                            if let Some(t) = got {
                                let was = before.get(t.id).unwrap();
                                // A fresh claim is never of a blocked task; re-claiming one's
                                // own in-progress task is a no-op whatever its blockers now.
                                assert!(was.status != TaskStatus::Pending || !before.is_blocked(was));
                                assert!(was.owner.as_ref().is_none_or(|o| *o == who[w]));
                                assert!(
                                    was.status == TaskStatus::Pending
                                        || (was.status == TaskStatus::InProgress
                                            && was.owner.as_ref() == Some(&who[w]))
                                );
                            }
                        }),
                        Op::Block(a, b) => l
                            .update(
                                a,
                                &Change {
                                    blocked_by: vec![b],
                                    ..Default::default()
                                },
                                0,
                            )
                            .map(|_| ()),
                        Op::Finish(id, ok) => {
                            let st = if ok { TaskStatus::Completed } else { TaskStatus::Failed };
                            l.finish(id, st, None, 0).map(|_| ())
                        }
                        Op::Release(w) => {
                            l.release_owner(&who[w], 0);
                            Ok(())
                        }
                    };
                    if res.is_err() {
                        prop_assert_eq!(&l, &before, "a refused operation changed the list");
                    }
                    check(&l);
                }
            }
        }
    }
}
