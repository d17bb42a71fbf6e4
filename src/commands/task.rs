//! `teamctl task add|list|show|claim|update|done`: the shared task list (SPEC section 9).
//! Every input (ids, statuses, owners, blockers, cycles) is checked before the list is
//! written, and a refused change leaves `tasks.json` byte for byte as it was. Giving a task
//! an owner sends that teammate a `task_assignment`; so does completing the last blocker of a
//! task that already has an owner.

use std::time::{Duration, UNIX_EPOCH};

use crate::bus;
use crate::cli::{
    TaskAddArgs, TaskClaimArgs, TaskCommand, TaskDoneArgs, TaskIdArg, TaskUpdateArgs,
};

use crate::context::Ctx;
use crate::domain::task::{Change, NewTask, Task, TaskList, TaskStatus, ids};
use crate::domain::time::{age, now_ms};
use crate::domain::{Envelope, Name, TeamConfig};
use crate::error::{Error, Result};
use crate::store::{SharedStore, Store};

pub fn run(ctx: &Ctx, cmd: TaskCommand) -> Result<()> {
    match cmd {
        TaskCommand::Add(a) => add(ctx, a),
        TaskCommand::List => list(ctx),
        TaskCommand::Show(a) => show(ctx, &a),
        TaskCommand::Claim(a) => claim(ctx, &a),
        TaskCommand::Update(a) => update(ctx, &a),
        TaskCommand::Done(a) => done(ctx, &a),
    }
}

/// The team, its file and the caller (who must be a member).
fn open(ctx: &Ctx) -> Result<(SharedStore, TeamConfig, Name)> {
    let store = ctx.store()?;
    let config = store.load()?;
    let me = ctx.me()?;
    if config.member(me.as_str()).is_none() {
        return Err(Error::bad(format!(
            "{me:?} is not a member of team {}; act as a member with --as NAME or TEAMCTL_AGENT_NAME",
            config.name
        )));
    }
    Ok((store, config, me))
}

/// A task id: `3` or `#3`.
pub fn parse_id(s: &str) -> Result<u64> {
    s.trim()
        .trim_start_matches('#')
        .parse::<u64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            Error::bad(format!(
                "task id must be a positive number such as 3, not {s:?}"
            ))
        })
}

fn parse_ids(list: &[String]) -> Result<Vec<u64>> {
    list.iter().map(|s| parse_id(s)).collect()
}

/// An owner: a member of the team.
fn owner_name(config: &TeamConfig, s: &str) -> Result<Name> {
    let name = Name::parse_as(s, "owner")?;
    Ok(config.require(name.as_str())?.name.clone())
}

fn add(ctx: &Ctx, args: TaskAddArgs) -> Result<()> {
    let (store, config, me) = open(ctx)?;
    let new = NewTask {
        subject: args.subject,
        description: args.description.unwrap_or_default(),
        blocked_by: parse_ids(&args.blocked_by)?,
        owner: args
            .owner
            .as_deref()
            .map(|o| owner_name(&config, o))
            .transpose()?,
        by: Some(me.clone()),
        hops: ctx.hops(),
    };
    let now = now_ms();
    let mut added = None;
    let list = store.update_tasks(&mut |l| {
        added = Some(l.add(new.clone(), now)?);
        Ok(())
    })?;
    let task = added.ok_or_else(|| Error::failed("the task was not added"))?;
    ctx.reconcile(&*store)?;
    tell_owner(ctx, &*store, &me, &list, &task)?;
    if ctx.json {
        ctx.print_json(&task_json(&list, &task));
    } else {
        crate::outln!("task #{} added: {}", task.id, task.subject);
    }
    Ok(())
}

fn list(ctx: &Ctx) -> Result<()> {
    let store = ctx.store()?;
    let config = store.load()?;
    let list = store.load_tasks()?;
    if ctx.json {
        let tasks: Vec<_> = list.tasks.iter().map(|t| task_json(&list, t)).collect();
        ctx.print_json(&serde_json::json!({ "team": config.name.as_str(), "tasks": tasks }));
        return Ok(());
    }
    if list.tasks.is_empty() {
        crate::outln!("no tasks yet; add one with `teamctl task add SUBJECT`");
        return Ok(());
    }
    let order = [
        TaskStatus::InProgress,
        TaskStatus::Pending,
        TaskStatus::Completed,
        TaskStatus::Failed,
    ];
    for status in order {
        let group: Vec<&Task> = list.tasks.iter().filter(|t| t.status == status).collect();
        if group.is_empty() {
            continue;
        }
        crate::outln!("{} ({})", ctx.paint.bold(status.as_str()), group.len());
        for t in group {
            crate::outln!("{}", line(ctx, &config, &list, t));
        }
    }
    Ok(())
}

/// A task's subject as shown: one line, control characters escaped. `task add` refuses them,
/// but the task list is a file a turn can write (re-QA 37: an OSC in a subject edited there
/// reached the leader's terminal through `task list` and `task show`).
fn subject(t: &Task) -> String {
    crate::output::printable_line(&t.subject, 512)
}

/// One task in `task list`: id, subject, owner in its colour, blockers, outcome.
fn line(ctx: &Ctx, config: &TeamConfig, list: &TaskList, t: &Task) -> String {
    let mut out = format!("  #{:<4} {}", t.id, subject(t));
    if let Some(owner) = &t.owner {
        out.push_str(&format!("  @{}", ctx.paint.member(config, owner.as_str())));
    }
    let open = list.open_blockers(t);
    if !open.is_empty() && !t.status.is_finished() {
        out.push_str(&format!(
            "  {}",
            ctx.paint
                .color(&format!("[blocked by {}]", ids(&open)), "red")
        ));
    }
    if let Some(r) = &t.result {
        let short = outcome_line(r, 60, t.id);
        if !short.is_empty() {
            out.push_str(&format!("  {}", ctx.paint.dim(&format!("- {short}"))));
        }
    }
    out
}

/// The last line of a task's outcome, at most `max` characters, a longer one cut at a word
/// (QA 40: "the leader skipp") with `…`, and where the rest is (`task show ID`) when there is
/// more (earlier lines too: attacker QA 41). Control characters escaped, tabs too.
fn outcome_line(result: &str, max: usize, id: u64) -> String {
    let mut lines = result.trim().lines().filter(|l| !l.trim().is_empty());
    let last = lines.next_back().unwrap_or("").trim();
    let more = lines.next().is_some();
    let whole = last.chars().count() <= max;
    let cut: String = last.chars().take(max).collect();
    // At the last space, unless that leaves less than half.
    let shown = match cut.rfind(' ') {
        _ if whole => last,
        Some(i) if cut[..i].chars().count() >= max / 2 => cut[..i].trim_end(),
        _ => cut.as_str(),
    };
    let shown = crate::output::printable_line(shown, max);
    match (whole, more) {
        (true, false) => shown,
        (true, true) => format!("{shown} (`teamctl task show {id}`)"),
        (false, _) => format!("{shown}… (`teamctl task show {id}`)"),
    }
}

fn show(ctx: &Ctx, args: &TaskIdArg) -> Result<()> {
    let id = parse_id(&args.id)?;
    let store = ctx.store()?;
    let config = store.load()?;
    let list = store.load_tasks()?;
    let t = list.get(id)?;
    if ctx.json {
        ctx.print_json(&task_json(&list, t));
        return Ok(());
    }
    let now = now_ms();
    let when = |ms: u64| {
        let at = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms));
        format!("{at} ({} ago)", age(ms, now))
    };
    crate::outln!("#{} {}", t.id, ctx.paint.bold(&subject(t)));
    let open = list.open_blockers(t);
    let blocked = if !open.is_empty() && !t.status.is_finished() {
        ctx.paint
            .color(&format!(" (blocked by {})", ids(&open)), "red")
    } else {
        String::new()
    };
    crate::outln!("status:      {}{blocked}", t.status);
    let owner = t
        .owner
        .as_ref()
        .map_or_else(|| "-".into(), |o| ctx.paint.member(&config, o.as_str()));
    crate::outln!("owner:       {owner}");
    if !t.blocked_by.is_empty() {
        crate::outln!("blocked by:  {}", ids(&t.blocked_by));
    }
    if !t.blocks.is_empty() {
        crate::outln!("blocks:      {}", ids(&t.blocks));
    }
    crate::outln!("created:     {}", when(t.created_at));
    crate::outln!("updated:     {}", when(t.updated_at));
    if !t.description.trim().is_empty() {
        crate::outln!("description:\n{}", indent(&t.description));
    }
    if let Some(r) = &t.result {
        crate::outln!("result:\n{}", indent(r));
    }
    Ok(())
}

fn indent(text: &str) -> String {
    crate::output::printable(text.trim_end())
        .lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn claim(ctx: &Ctx, args: &TaskClaimArgs) -> Result<()> {
    let id = args.id.as_deref().map(parse_id).transpose()?;
    let (store, _config, me) = open(ctx)?;
    let now = now_ms();
    let mut claimed = None;
    let list = store.update_tasks(&mut |l| {
        claimed = l.claim(&me, id, now)?;
        Ok(())
    })?;
    let Some(task) = claimed else {
        return Err(Error::failed(nothing_to_claim(&list, &me)));
    };
    ctx.reconcile(&*store)?;
    if ctx.json {
        ctx.print_json(&task_json(&list, &task));
    } else {
        crate::outln!("{me} claimed task #{}: {}", task.id, subject(&task));
    }
    Ok(())
}

/// Why `claim` found nothing: what the pending tasks are waiting on.
fn nothing_to_claim(list: &TaskList, me: &Name) -> String {
    let pending: Vec<&Task> = list
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Pending)
        .collect();
    if pending.is_empty() {
        return "nothing to claim: no pending tasks".into();
    }
    let blocked = pending.iter().filter(|t| list.is_blocked(t)).count();
    let others = pending
        .iter()
        .filter(|t| t.owner.as_ref().is_some_and(|o| o != me))
        .count();
    let n = pending.len();
    let (tasks, wait, belong) = (
        if n == 1 { "task" } else { "tasks" },
        if blocked == 1 { "waits" } else { "wait" },
        if others == 1 { "belongs" } else { "belong" },
    );
    format!(
        "nothing to claim for {me}: of {n} pending {tasks}, {blocked} {wait} on unfinished blockers and {others} {belong} to others"
    )
}

fn update(ctx: &Ctx, args: &TaskUpdateArgs) -> Result<()> {
    let id = parse_id(&args.id)?;
    let (store, config, me) = open(ctx)?;
    let change = Change {
        status: args
            .status
            .as_deref()
            .map(str::parse::<TaskStatus>)
            .transpose()?,
        owner: match args.owner.as_deref() {
            None => None,
            Some("") => Some(None),
            Some(o) => Some(Some(owner_name(&config, o)?)),
        },
        blocked_by: parse_ids(&args.blocked_by)?,
        hops: None,
        by: None,
    };
    if change == Change::default() {
        return Err(Error::bad(
            "nothing to change: give --status, --owner or --blocked-by",
        ));
    }
    // The loop guard: the leader's update takes the task over, so a task a loop of teammates
    // left pending can be given out again.
    let mut change = change;
    if me.is_leader() {
        change.hops = Some(ctx.hops());
    }
    change.by = Some(me.clone());
    let now = now_ms();
    let mut before = None;
    let mut after = None;
    let list = store.update_tasks(&mut |l| {
        before = Some(l.get(id)?.clone());
        after = Some(l.update(id, &change, now)?);
        Ok(())
    })?;
    let (Some(before), Some(task)) = (before, after) else {
        return Err(Error::failed("the task was not updated"));
    };
    ctx.reconcile(&*store)?;
    if task.owner.is_some() && task.owner != before.owner {
        tell_owner(ctx, &*store, &me, &list, &task)?;
    }
    if task.status == TaskStatus::Completed && before.status != TaskStatus::Completed {
        tell_ready(ctx, &*store, &me, &list, id)?;
    }
    if ctx.json {
        ctx.print_json(&task_json(&list, &task));
    } else {
        // "owner nobody" read as a member named nobody (new-user QA).
        let owner = task
            .owner
            .as_ref()
            .map_or_else(|| "no owner".to_string(), |o| format!("owner {o}"));
        crate::outln!("task #{} updated: {}, {owner}", task.id, task.status);
    }
    Ok(())
}

fn done(ctx: &Ctx, args: &TaskDoneArgs) -> Result<()> {
    let id = parse_id(&args.id)?;
    let (store, _config, me) = open(ctx)?;
    let now = now_ms();
    let mut before = None;
    let mut after = None;
    let mut open_blockers = Vec::new();
    let list = store.update_tasks(&mut |l| {
        let task = l.get(id)?;
        open_blockers = l.open_blockers(task);
        before = Some(task.status);
        after = Some(l.done(id, args.result.clone(), now)?);
        Ok(())
    })?;
    let (Some(before), Some(task)) = (before, after) else {
        return Err(Error::failed("the task was not updated"));
    };
    if before != TaskStatus::Completed {
        // Done as asked, but not as the list said it would be: said (new-user QA).
        if !open_blockers.is_empty() {
            let ids: Vec<String> = open_blockers.iter().map(|b| format!("#{b}")).collect();
            crate::errln!(
                "teamctl: task #{id} was still blocked by {} (not completed)",
                ids.join(", ")
            );
        }
        if let Some(owner) = task.owner.as_ref().filter(|o| **o != me) {
            crate::errln!("teamctl: task #{id} was {owner}'s");
        }
    }
    ctx.reconcile(&*store)?;
    if before != TaskStatus::Completed {
        tell_ready(ctx, &*store, &me, &list, id)?;
    }
    if ctx.json {
        ctx.print_json(&task_json(&list, &task));
    } else if before == TaskStatus::Completed {
        // Said as it is: nothing was completed now (a second `task done`).
        crate::outln!(
            "task #{} was completed already: {}{}",
            task.id,
            subject(&task),
            if args.result.is_some() {
                " (its result is now the one given)"
            } else {
                ""
            }
        );
    } else {
        crate::outln!("task #{} completed: {}", task.id, subject(&task));
    }
    Ok(())
}

/// Send `task`'s owner a `task_assignment` (not to oneself, not to the leader, who runs no
/// worker), and start the owner again if it is down, so the task gets done (a teammate's
/// assignment waits for one the leader stopped).
pub fn tell_owner(
    ctx: &Ctx,
    store: &dyn Store,
    me: &Name,
    list: &TaskList,
    task: &Task,
) -> Result<()> {
    let Some(owner) = &task.owner else {
        return Ok(());
    };
    // A blocked task's owner is told once its last blocker completes (`tell_ready`), not twice.
    if list.is_blocked(task) {
        return Ok(());
    }
    if owner == me || owner.is_leader() {
        return Ok(());
    }
    let config = store.load()?;
    let mut env = Envelope::new(me.as_str(), owner.as_str(), task.assignment());
    env.hops = ctx.hops().max(task.hops);
    let owners = std::slice::from_ref(owner);
    let before = crate::leader::Before::look(store, owners, &env.id)?;
    // The task is saved already: said so, with how to tell the owner once the inbox takes
    // mail again (attacker re-check 45: "nothing was sent; send again", and sending again
    // changed nothing, the owner never told).
    bus::deliver(store, &config, &env).map_err(|e| {
        Error::failed(format!(
            "task #{id} is {owner}'s now, but {owner} was not told: {e}; once that is fixed, `teamctl send {owner} 'task #{id} is yours: teamctl task show {id}'` tells it",
            id = task.id
        ))
    })?;
    crate::pause::at("task-wake");
    // A teammate's assignment does not bring back one the leader stopped (see `leader::wake`).
    let woken = crate::leader::wake(&ctx.home, &ctx.me()?, store, owners, Some(&before))?;
    crate::leader::say_resumed(&woken.resumed);
    for n in woken.waiting {
        crate::errln!(
            "teamctl: {}",
            crate::leader::left_waiting(Some(&config), &n, "the task assignment")
        );
    }
    for (_, why) in woken.died.into_iter().chain(woken.held) {
        crate::errln!("teamctl: {why}");
    }
    for (n, pid) in &woken.paused {
        crate::errln!(
            "teamctl: {}",
            crate::leader::paused_words(n, *pid, "the task assignment")
        );
    }
    Ok(())
}

/// After `id` is completed: tell the owners of the tasks it was the last blocker of.
fn tell_ready(ctx: &Ctx, store: &dyn Store, me: &Name, list: &TaskList, id: u64) -> Result<()> {
    for t in list.ready_after(id) {
        tell_owner(ctx, store, t.assigner(me), list, &t)?;
    }
    Ok(())
}

/// A task as JSON, with `blocked` (its blockers are not all completed) added.
fn task_json(list: &TaskList, t: &Task) -> serde_json::Value {
    let mut v = serde_json::to_value(t).unwrap_or_default();
    if let serde_json::Value::Object(m) = &mut v {
        m.insert(
            "blocked".into(),
            (!t.status.is_finished() && list.is_blocked(t)).into(),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_too_long_for_its_line_is_cut_at_a_word_and_says_where_the_rest_is() {
        assert_eq!(outcome_line("done\n", 60, 3), "done");
        assert_eq!(
            outcome_line("first\nlast line\n\n", 60, 3),
            "last line (`teamctl task show 3`)"
        );
        assert_eq!(outcome_line("a\tb", 60, 3), "a\\u{9}b");
        let long = "its worker ended in this turn, and the leader skipped the message";
        assert_eq!(
            outcome_line(long, 60, 7),
            "its worker ended in this turn, and the leader skipped the… (`teamctl task show 7`)"
        );
        // One long word: cut where it must be.
        let word = "x".repeat(80);
        assert_eq!(
            outcome_line(&word, 60, 1),
            format!("{}… (`teamctl task show 1`)", "x".repeat(60))
        );
        // Exactly the most: whole.
        assert_eq!(outcome_line(&"y".repeat(60), 60, 1), "y".repeat(60));
    }

    #[test]
    fn ids_parse() {
        assert_eq!(parse_id("3").unwrap(), 3);
        assert_eq!(parse_id("#12").unwrap(), 12);
        for bad in ["", "x", "0", "-1", "1.5", "99999999999999999999999"] {
            assert_eq!(parse_id(bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }

    /// New-user QA: "of 1 pending tasks, 1 wait on ... and 1 belong to others".
    #[test]
    fn nothing_to_claim_counts_in_words_that_agree() {
        let me = Name::parse("bob").unwrap();
        let mut list = TaskList::default();
        list.add(
            NewTask {
                subject: "theirs".into(),
                owner: Some(Name::parse("ann").unwrap()),
                ..NewTask::default()
            },
            1,
        )
        .unwrap();
        assert_eq!(
            nothing_to_claim(&list, &me),
            "nothing to claim for bob: of 1 pending task, 0 wait on unfinished blockers and 1 belongs to others"
        );
    }
}
