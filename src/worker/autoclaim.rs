//! Tasks in the worker: auto-claim (when idle with no unread mail, a `--auto-claim` teammate
//! claims the next available task and runs it as a turn), assigned tasks (a `task_assignment`
//! claims that task and runs it), and the end of a task turn (completed with stdout as the
//! result, or failed with the exit status and the end of stderr). Task outcomes reach the
//! leader in the one idle notification of each busy stretch, never one message per task.

use super::turn::{Stoppers, TurnEnd, TurnResult};
use super::{Next, Worker};
use crate::domain::task::{Task, TaskError, TaskStatus};
use crate::domain::time::now_ms;
use crate::domain::{Body, Envelope};
use crate::error::Result;

/// Task ids listed in an idle summary before "and N more".
const LISTED: usize = 10;

/// Failure reasons kept for an idle summary.
const REASONS: usize = 3;

/// What became of the tasks of one busy stretch (bounded, whatever the number of tasks).
#[derive(Debug, Default)]
pub(super) struct Tally {
    completed: Vec<u64>,
    completed_count: usize,
    failed: Vec<String>,
    failed_count: usize,
    /// The only task's line, while there is one task.
    single: Option<String>,
}

impl Tally {
    pub(super) fn clear(&mut self) {
        *self = Tally::default();
    }

    fn is_empty(&self) -> bool {
        self.completed_count + self.failed_count == 0
    }

    fn push(&mut self, task: &Task) {
        let first = self.is_empty();
        match task.status {
            TaskStatus::Completed => {
                self.completed_count += 1;
                if self.completed.len() < LISTED {
                    self.completed.push(task.id);
                }
                self.single =
                    first.then(|| format!("task #{} completed: {}", task.id, task.subject));
            }
            TaskStatus::Failed => {
                self.failed_count += 1;
                let why = task.result.as_deref().unwrap_or("").trim();
                if self.failed.len() < REASONS {
                    self.failed
                        .push(format!("#{} {}: {why}", task.id, task.subject));
                }
                self.single =
                    first.then(|| format!("task #{} failed: {} ({why})", task.id, task.subject));
            }
            _ => {}
        }
    }

    /// One line for the idle notification.
    fn summary(&self) -> String {
        if let Some(single) = &self.single {
            return single.clone();
        }
        let mut parts = Vec::new();
        if self.completed_count > 0 {
            let mut listed = crate::domain::task::ids(&self.completed);
            if self.completed_count > self.completed.len() {
                listed.push_str(&format!(
                    " and {} more",
                    self.completed_count - self.completed.len()
                ));
            }
            parts.push(format!("{} completed ({listed})", self.completed_count));
        }
        if self.failed_count > 0 {
            let mut why = self.failed.join("; ");
            if self.failed_count > self.failed.len() {
                why.push_str(&format!(
                    "; and {} more",
                    self.failed_count - self.failed.len()
                ));
            }
            parts.push(format!("{} failed ({why})", self.failed_count));
        }
        format!(
            "{} tasks: {}",
            self.completed_count + self.failed_count,
            parts.join(", ")
        )
    }
}

impl Worker {
    /// Claim the next available task and run it as a turn. `Again` after a task, so the
    /// loop reads new mail (and a shutdown request) before the next claim without going idle;
    /// `Continue` when there is nothing to claim.
    pub(super) async fn try_auto_claim(&mut self, stop: &mut Stoppers) -> Result<Next> {
        let me = self.name.clone();
        // A person answers a teammate without a command: one task at a time, the next one
        // once they have finished it (`task done`).
        let one_at_a_time = !self.member.runs_agent();
        let now = now_ms();
        let max_hops = self.store.load_cached(&mut self.config)?.max_hops();
        let mut claimed = None;
        let mut past = None;
        let res = self.store.update_tasks(&mut |l| {
            let busy = l
                .tasks
                .iter()
                .any(|t| t.status == TaskStatus::InProgress && t.owner.as_ref() == Some(&me));
            if !(one_at_a_time && busy) {
                claimed = l.claim_within(&me, None, max_hops, now)?;
                if claimed.is_none() {
                    past = l.past_hops(&me, max_hops).cloned();
                }
            }
            Ok(())
        });
        if let Err(e) = res {
            self.sink
                .note(&format!("warning: cannot claim a task: {e}"));
            return Ok(Next::Continue);
        }
        let Some(task) = claimed else {
            if let Some(task) = past {
                self.task_past_hops(&task, max_hops)?;
            }
            return Ok(Next::Continue);
        };
        self.sink
            .note(&format!("claimed task #{}: {}", task.id, task.subject));
        // A turn from the teammate to itself: nobody gets a reply; the summary names the task.
        let summary = format!("task #{}: {}", task.id, task.subject);
        let body = Body::message(task.turn_text(), Some(summary));
        // `run_task` gives the turn the task's hops.
        let env = Envelope::new(self.name.as_str(), self.name.as_str(), body);
        match self.run_task(&env, &task, stop).await? {
            Next::Exit | Next::Abandon => Ok(Next::Exit),
            _ => Ok(Next::Again),
        }
    }

    /// The loop guard for tasks: a task added more hops from its origin than the team allows
    /// is not auto-claimed but left pending, and the leader hears of it once per loop (one
    /// notice for the team's task list, whichever teammate passes it over first).
    fn task_past_hops(&mut self, task: &Task, max: u32) -> Result<()> {
        if !self.store.first_loop_notice("#tasks", "#tasks") {
            return Ok(());
        }
        self.sink.note(&format!(
            "loop guard: not claiming task #{} ({} hops, over --max-hops {max})",
            task.id, task.hops
        ));
        let text = format!(
            "teamctl: loop guard: teammates kept adding tasks for each other; task #{id} ({subject}) is {hops} hops from its origin (over --max-hops {max}), so nobody claims it. It is left pending: `teamctl task update {id} --owner NAME` gives it out again, `teamctl task update {id} --status failed` drops it.",
            id = task.id,
            subject = task.subject,
            hops = task.hops
        );
        self.send(crate::domain::LEADER, Body::message(text, None))
    }

    /// On start: tasks this teammate had in progress when its last worker died become
    /// pending again, still its own, so they are run again (by auto-claim, or by the
    /// assignment that is read again from the inbox) instead of staying stuck.
    pub(super) fn take_up_own_tasks(&mut self) {
        let me = self.name.clone();
        let now = now_ms();
        let mut requeued = Vec::new();
        let res = self.store.update_tasks(&mut |l| {
            requeued = l.requeue_owner(&me, now);
            Ok(())
        });
        match res {
            Err(e) => self
                .sink
                .note(&format!("warning: cannot read the task list: {e}")),
            Ok(_) if !requeued.is_empty() => self.sink.note(&format!(
                "taking up again the tasks left in progress: {}",
                crate::domain::task::ids(&requeued)
            )),
            Ok(_) => {}
        }
    }

    /// A `task_assignment`: claim that task and run it. A task that cannot be started now
    /// (blocked, finished, someone else's) is left as it is, with a note in the log; its owner
    /// hears again when its last blocker is completed. A task that is not on the list (an
    /// assignment sent by hand) is run as a plain turn about its subject.
    pub(super) async fn assigned_task(
        &mut self,
        env: &Envelope,
        task_id: u64,
        subject: &str,
        stop: &mut Stoppers,
    ) -> Result<Next> {
        let me = self.name.clone();
        let now = now_ms();
        let mut claimed = None;
        let mut refused = None;
        let res = self.store.update_tasks(&mut |l| {
            match l.claim(&me, Some(task_id), now) {
                Ok(t) => claimed = t,
                Err(e) => refused = Some(e),
            }
            Ok(())
        });
        if let Err(e) = res {
            self.sink
                .note(&format!("warning: cannot start task #{task_id}: {e}"));
            return Ok(Next::Continue);
        }
        match (claimed, refused) {
            (Some(task), _) => self.run_task(env, &task, stop).await,
            (None, Some(TaskError::Unknown(_))) => {
                let text = format!("Task #{task_id}: {subject}");
                let extra = [(crate::domain::env::TASK_ID.to_string(), task_id.to_string())];
                self.turn(env, &text, &extra, stop).await
            }
            (_, why) => {
                let why = why.map(|e| e.to_string()).unwrap_or_default();
                self.sink.note(&format!(
                    "task #{task_id} from {} not started: {why}",
                    env.from
                ));
                Ok(Next::Continue)
            }
        }
    }

    /// Run a claimed task as a turn: subject and description as the message,
    /// `TEAMCTL_TASK_ID` in the environment.
    async fn run_task(&mut self, env: &Envelope, task: &Task, stop: &mut Stoppers) -> Result<Next> {
        self.live.current_task = Some(task.id);
        let extra = [(crate::domain::env::TASK_ID.to_string(), task.id.to_string())];
        // The turn is as many hops from its origin as the task (`TEAMCTL_HOPS`).
        let mut env = env.clone();
        env.hops = env.hops.max(task.hops);
        let next = self.turn(&env, &task.turn_text(), &extra, stop).await;
        // Without a command the person finishes the task (`task done`); it stays in progress.
        self.live.current_task = None;
        next
    }

    /// Called at the end of every turn: a task turn marks its task completed or failed
    /// (unless the agent already did, or the worker was stopped: then `kill`/`shutdown`
    /// hands it back), and the idle summary of this busy stretch becomes the task tally.
    pub(super) fn task_turn_done(&mut self, result: &TurnResult) {
        if result.end == TurnEnd::Stopped {
            return;
        }
        if let Some(id) = self.live.current_task.take() {
            self.finish_task(id, result);
        }
        if !self.task_tally.is_empty()
            && let Some((reason, _)) = &self.since_idle
        {
            self.since_idle = Some((*reason, self.task_tally.summary()));
        }
    }

    fn finish_task(&mut self, id: u64, result: &TurnResult) {
        let (status, outcome) = if result.succeeded() {
            let out = result.stdout.trim_end().to_string();
            (TaskStatus::Completed, (!out.is_empty()).then_some(out))
        } else {
            (TaskStatus::Failed, Some(result.failure()))
        };
        let me = self.name.clone();
        let now = now_ms();
        let mut finished = None;
        let mut ready = Vec::new();
        let res = self.store.update_tasks(&mut |l| {
            let t = l.get(id)?;
            if t.status != TaskStatus::InProgress || t.owner.as_ref() != Some(&me) {
                // The agent (or the leader) already decided what became of it.
                finished = Some(t.clone());
                return Ok(());
            }
            finished = Some(l.finish(id, status, outcome.clone(), now)?);
            ready = l.ready_after(id);
            Ok(())
        });
        match res {
            Err(e) => self
                .sink
                .note(&format!("warning: cannot record task #{id}: {e}")),
            Ok(_) => {
                if let Some(t) = finished {
                    self.sink.note(&format!("task #{id} {}", t.status));
                    self.task_tally.push(&t);
                }
                for t in ready {
                    if let Some(owner) = t.owner.clone().filter(|o| !o.is_leader()) {
                        // From whoever assigned it, so the owner's result goes to them.
                        let mut env =
                            Envelope::new(t.assigner(&me).as_str(), owner.as_str(), t.assignment());
                        env.hops = t.hops;
                        if let Err(e) = self.deliver(&env) {
                            self.sink.note(&format!(
                                "could not tell {owner} task #{} is ready: {e}",
                                t.id
                            ));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::task::{NewTask, TaskList};

    fn finished(l: &mut TaskList, subject: &str, status: TaskStatus, why: &str) -> Task {
        let id = l
            .add(
                NewTask {
                    subject: subject.into(),
                    ..Default::default()
                },
                0,
            )
            .unwrap()
            .id;
        l.finish(id, status, Some(why.into()), 0).unwrap()
    }

    #[test]
    fn one_task_is_named_and_many_are_counted() {
        let mut l = TaskList::default();
        let mut tally = Tally::default();
        assert!(tally.is_empty());
        tally.push(&finished(&mut l, "a", TaskStatus::Completed, "ok"));
        assert_eq!(tally.summary(), "task #1 completed: a");
        tally.push(&finished(
            &mut l,
            "b",
            TaskStatus::Failed,
            "exit status 3: boom",
        ));
        assert_eq!(
            tally.summary(),
            "2 tasks: 1 completed (#1), 1 failed (#2 b: exit status 3: boom)"
        );
        for i in 0..20 {
            tally.push(&finished(
                &mut l,
                &format!("t{i}"),
                TaskStatus::Completed,
                "",
            ));
        }
        let s = tally.summary();
        assert!(s.starts_with("22 tasks: 21 completed (#1, #3,"), "{s}");
        assert!(s.contains("and 11 more"), "{s}");
        tally.clear();
        tally.push(&finished(&mut l, "z", TaskStatus::Failed, "timed out"));
        assert_eq!(tally.summary(), "task #23 failed: z (timed out)");
    }
}
