//! `teamctl demo [--stop]`: the README's one command. It makes a team `demo` in the current
//! home with three teammates whose agents are small shell scripts (written into the team
//! directory): they print progress in their panes, talk to each other with `teamctl send`,
//! use the task list when this build has one, and answer. The demo sends them work, waits
//! (woken by inbox events, with a deadline) until every one has answered, prints the status
//! table and how to attach. `--stop` shuts the team down and deletes it. The teammates always
//! go to the team's detached tmux session, also when the demo runs inside tmux (the user's
//! window is left alone). The hints name the binary that runs (it may not be on PATH after
//! `cargo run`). With `--json` the progress goes to stderr and stdout carries one summary.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::{DeleteArgs, DemoArgs, SpawnArgs};
use crate::commands::{delete, spawn};
use crate::context::Ctx;
use crate::domain::{BackendType, Body, Envelope, LEADER, Name, Status, TeamConfig};
use crate::error::{Error, Result};
use crate::leader;
use crate::output::shell_word;
use crate::store::fsutil::ensure_dir;
use crate::store::{Item, Store, SyncBell, Topic};
use crate::view::status;
use crate::{bus, output::Painter};

/// The demo team's name.
pub const TEAM: &str = "demo";

/// The description that marks a team as the demo's own (so it may be restarted or removed).
const MARK: &str = "teamctl demo: three scripted teammates";

/// How long the demo waits for every answer.
const DEADLINE: Duration = Duration::from_secs(90);

/// Each teammate: name, script, the leader's message to it.
const MATES: &[(&str, &str, &str)] = &[
    ("planner", PLANNER, "plan a greeting service"),
    ("coder", CODER, "warm up the build"),
    ("reviewer", REVIEWER, "review the last change"),
];

const COMMON: &str = r#"#!/bin/sh
# A teamctl demo agent. Each message runs this script once: the text is in $TEAMCTL_MESSAGE
# (and on stdin), the sender in $TEAMCTL_FROM. Lines on stderr are progress (shown in the
# pane); what goes to stdout is the reply.
say() { printf '%s\n' "$*" >&2; }
work() { for i in 1 2 3; do say "  $1 ($i/3)"; sleep 0.2; done; }
has_tasks() { teamctl task list >/dev/null 2>&1; }
"#;

const PLANNER: &str = r#"
case "$TEAMCTL_FROM" in
team-lead) ;;
*) say "[planner] $TEAMCTL_FROM says: $TEAMCTL_MESSAGE"; exit 0 ;;
esac
say "[planner] got a job: $TEAMCTL_MESSAGE"
work "splitting it into steps"
if has_tasks && teamctl task add "write the greeting" >/dev/null 2>&1; then
  say "  added task: write the greeting"
fi
teamctl send coder "please write the greeting for: $TEAMCTL_MESSAGE" >/dev/null
say "  asked the coder to write the greeting"
echo "plan ready: 3 steps, the coder is on the greeting"
"#;

const CODER: &str = r#"
case "$TEAMCTL_FROM" in
team-lead|planner) ;;
*) say "[coder] $TEAMCTL_FROM says: $TEAMCTL_MESSAGE"; exit 0 ;;
esac
say "[coder] $TEAMCTL_FROM asks: $TEAMCTL_MESSAGE"
# The task this turn claimed (its number from `claim`'s output), and that one is marked
# done: each of the planner's requests adds one task, and the coder finishes the one it took.
claimed=
if [ "$TEAMCTL_FROM" = planner ] && has_tasks; then
  claimed=$(teamctl task claim 2>/dev/null | sed -n 's/.* claimed task #\([0-9][0-9]*\).*/\1/p')
  [ -n "$claimed" ] && say "  claimed the greeting task (#$claimed)"
fi
work "compiling"
if [ -n "$claimed" ]; then
  teamctl task done "$claimed" >/dev/null 2>&1 && say "  task #$claimed done"
fi
echo "done: printf 'hello, world' (for $TEAMCTL_FROM)"
"#;

const REVIEWER: &str = r#"
case "$TEAMCTL_FROM" in
team-lead) ;;
*) say "[reviewer] $TEAMCTL_FROM says: $TEAMCTL_MESSAGE"; exit 0 ;;
esac
say "[reviewer] reviewing: $TEAMCTL_MESSAGE"
work "reading the diff"
teamctl send planner "review: the last change looks good" >/dev/null
say "  told the planner"
echo "review done: 2 files, no problems found"
"#;

pub fn run(ctx: &Ctx, args: &DemoArgs) -> Result<()> {
    ctx.require_leader("run the demo")?;
    let demo = Ctx {
        home: ctx.home.clone(),
        team: Some(TEAM.into()),
        as_name: LEADER.into(),
        turn: None,
        json: false,
        paint: ctx.paint,
        member_color: None,
    };
    let team = Name::parse(TEAM)?;
    let ours = is_ours(ctx, &team)?;
    if args.stop {
        return match ours {
            Some(true) => {
                let quiet = ctx.json.then(ToStderr::new).transpose()?;
                stop(&demo)?;
                drop(quiet);
                if ctx.json {
                    ctx.print_json(&serde_json::json!({ "team": TEAM, "stopped": true }));
                }
                Ok(())
            }
            Some(false) => Err(not_ours(ctx)),
            None => {
                if ctx.json {
                    ctx.print_json(&serde_json::json!({ "team": TEAM, "stopped": false }));
                } else {
                    crate::outln!(
                        "no demo team in {}; nothing to stop",
                        ctx.home.root().display()
                    );
                }
                Ok(())
            }
        };
    }
    if let Some(current) = ctx.home.current()
        && current != team
    {
        return Err(Error::bad(format!(
            "you lead team {current:?} in {home}; the demo makes its own team `demo`. Delete yours first (`teamctl delete --team {current}`), or run the demo in another home: TEAMCTL_HOME=$(mktemp -d) teamctl demo",
            home = ctx.home.root().display()
        )));
    }
    if ours == Some(false) {
        return Err(not_ours(ctx));
    }
    // With --json, everything the demo and the commands it runs print goes to stderr until
    // the summary.
    let quiet = ctx.json.then(ToStderr::new).transpose()?;
    if ours == Some(true) {
        crate::outln!("restarting the demo team");
        stop(&demo)?;
    }
    let result = start(&demo);
    drop(quiet);
    let summary = result?;
    if ctx.json {
        ctx.print_json(&summary);
    }
    Ok(())
}

/// While alive, the process's stdout (fd 1) is its stderr: `demo --json` keeps stdout for
/// the one JSON summary, whatever the commands it runs print.
struct ToStderr {
    saved: std::os::fd::OwnedFd,
}

impl ToStderr {
    fn new() -> Result<ToStderr> {
        use std::io::Write;
        use std::os::fd::AsFd;
        let _ = std::io::stdout().flush();
        // Close-on-exec: a process started meanwhile (a tmux server) must not hold the real
        // stdout open, or a reader of it would wait for that process to end.
        let saved = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::failed(format!("redirect stdout: {e}")))?;
        nix::unistd::dup2_stdout(std::io::stderr().as_fd())
            .map_err(|e| Error::failed(format!("redirect stdout: {e}")))?;
        Ok(ToStderr { saved })
    }
}

impl Drop for ToStderr {
    fn drop(&mut self) {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = nix::unistd::dup2_stdout(&self.saved);
    }
}

/// Whether a team `demo` exists, and whether the demo made it.
fn is_ours(ctx: &Ctx, team: &Name) -> Result<Option<bool>> {
    if !ctx.home.exists(team) {
        return Ok(None);
    }
    let config = ctx.home.open(team)?.load()?;
    Ok(Some(config.description == MARK))
}

fn not_ours(ctx: &Ctx) -> Error {
    Error::bad(format!(
        "a team named `demo` exists in {} and the demo did not make it; delete it (`teamctl delete --team demo`) or run the demo in another home: TEAMCTL_HOME=$(mktemp -d) teamctl demo",
        ctx.home.root().display()
    ))
}

/// The shutdown handoff for every teammate (killed if they do not answer), then the team
/// is removed: no pane and no process is left.
fn stop(demo: &Ctx) -> Result<()> {
    let polite = delete::run(
        demo,
        &DeleteArgs {
            force: false,
            timeout: 15,
        },
    );
    if let Err(e) = polite {
        crate::errln!("teamctl: {e}; ending the demo teammates now");
        delete::run(
            demo,
            &DeleteArgs {
                force: true,
                timeout: 15,
            },
        )?;
    }
    Ok(())
}

/// Make the team, run the exchange, print the board and the hints; the summary for `--json`.
fn start(demo: &Ctx) -> Result<serde_json::Value> {
    let cwd = std::env::current_dir().map_err(|e| Error::io_while("current directory", e))?;
    // Under `create`'s lock from the making to the record, as `create`: a `delete` of `demo`
    // waits until the team is whole.
    let creating = demo.home.lock_create()?;
    let store = demo
        .home
        .create_in(&creating, &Name::parse(TEAM)?, MARK, &cwd, None)?;
    if store.team().as_str() != TEAM {
        // Another process made `demo` in between: leave both alone.
        let _ = store.destroy();
        return Err(Error::failed(
            "a team `demo` appeared while the demo started; run `teamctl demo` again",
        ));
    }
    creating.set_current(Some(store.team()))?;
    drop(creating);
    let agents = write_agents(&*store)?;
    crate::outln!(
        "{} team demo with three scripted teammates (their scripts: {})",
        demo.paint.bold("teamctl demo:"),
        agents.display()
    );
    for (name, _, _) in MATES {
        spawn::run(demo, &spawn_args(name, &agents))?;
    }
    let result = exchange(demo, &*store);
    if result.is_ok() {
        settle(&*store)?;
    }
    let config = store.load()?;
    let rows = status::rows(&*store, &config);
    crate::outln!();
    crate::out!("{}", status::render(demo.paint, &config, &rows));
    crate::outln!();
    let exe = teamctl_program(demo.home.root());
    crate::out!("{}", how_to_attach(demo.paint, &*store, &config, &exe));
    result?;
    Ok(serde_json::json!({
        "team": TEAM,
        "home": demo.home.root(),
        "scripts": agents,
        "answered": true,
        "members": rows,
        "teamctl": exe,
        "next": {
            "attach": format!("{exe} attach"),
            "lead": format!("{exe} lead"),
            "status": format!("{exe} status --watch"),
            "log": format!("{exe} log -f"),
            "stop": format!("{exe} demo --stop"),
        },
    }))
}

/// How to run this teamctl in the hints: `teamctl` when that name on PATH is this binary,
/// else the path of the running binary (after `cargo run`, teamctl is not on PATH).
/// With `--home HOME` when the demo runs in a home other than the default one (say
/// `TEAMCTL_HOME=$(mktemp -d)`): a hint followed in another shell must reach this demo.
fn teamctl_program(home: &Path) -> String {
    let canon = |p: &Path| p.canonicalize().ok();
    let program = match std::env::current_exe() {
        Err(_) => "teamctl".to_string(),
        Ok(exe) => match which::which("teamctl") {
            Ok(found) if canon(&found).is_some() && canon(&found) == canon(&exe) => {
                "teamctl".into()
            }
            _ => shell_word(&exe.display().to_string()),
        },
    };
    let default = crate::store::Home::default_root().map(crate::context::home_root);
    if default.is_ok_and(|d| d == home) {
        program
    } else {
        format!(
            "{program} --home {}",
            shell_word(&home.display().to_string())
        )
    }
}

fn spawn_args(name: &str, agents: &Path) -> SpawnArgs {
    SpawnArgs {
        name: name.into(),
        exec: Some(format!("./{name}.sh")),
        agent: None,
        extra: Vec::new(),
        prompt: Some(format!("the demo's {name}")),
        backend: crate::cli::BackendArg::Auto,
        cwd: Some(agents.to_path_buf()),
        model: None,
        agent_type: "demo-script".into(),
        plan_mode_required: false,
        plan: None,
        auto_claim: false,
        turn_timeout: Some(60),
        max_turns: None,
        on_shutdown: None,
        worktree: None,
        interactive: false,
        prompt_pattern: None,
    }
}

/// Write the agent scripts into `teams/demo/demo-agents/` (0700).
fn write_agents(store: &dyn Store) -> Result<PathBuf> {
    let dir = store.local_dir().join("demo-agents");
    ensure_dir(&dir)?;
    for (name, body, _) in MATES {
        let path = dir.join(format!("{name}.sh"));
        // Made runnable as it is written: a chmod by path after the rename would change
        // whatever another had put there meanwhile (attacker QA 45, read only).
        crate::store::fsutil::write_atomic_executable(&path, format!("{COMMON}{body}").as_bytes())?;
    }
    Ok(dir)
}

/// Send each teammate its job and wait until every one answered (and the coder answered the
/// planner, which shows they talk to each other).
fn exchange(demo: &Ctx, store: &dyn Store) -> Result<()> {
    let lead = Name::leader();
    let planner = Name::parse("planner")?;
    let bell = SyncBell::default();
    let _sub = store.subscribe(
        &[
            Topic::Inbox(lead.clone()),
            Topic::Inbox(planner.clone()),
            Topic::Live,
        ],
        bell.bell(),
    )?;
    let mut lead_pos = store.inbox_end(&lead)?;
    let mut planner_pos = store.inbox_end(&planner)?;
    let config = store.load()?;
    let mut waiting: Vec<(String, String)> = Vec::new();
    for (name, _, job) in MATES {
        let env = Envelope::new(LEADER, name, Body::message(*job, None));
        bus::deliver(store, &config, &env)?;
        crate::outln!(
            "{} {}: {job}",
            demo.paint.dim("team-lead ->"),
            demo.paint.member(&config, name)
        );
        waiting.push((name.to_string(), env.id));
    }
    let mut crosstalk = false;
    let deadline = Instant::now() + DEADLINE;
    loop {
        for e in store.read(&lead, lead_pos, 256)? {
            lead_pos = e.end;
            let Item::Message(env) = e.item else { continue };
            if let Body::Message {
                text,
                in_reply_to: Some(id),
                ..
            } = &env.body
                && waiting.iter().any(|(_, w)| w == id)
            {
                waiting.retain(|(_, w)| w != id);
                crate::outln!(
                    "{} {}",
                    demo.paint.member(&config, &env.from),
                    demo.paint.dim(&format!(
                        "answered: {}",
                        crate::output::printable(text.trim_end())
                    ))
                );
            }
        }
        for e in store.read(&planner, planner_pos, 256)? {
            planner_pos = e.end;
            if let Item::Message(env) = e.item
                && env.from == "coder"
                && !crosstalk
            {
                crosstalk = true;
                crate::outln!(
                    "{} {}",
                    demo.paint.member(&config, "coder"),
                    demo.paint
                        .dim("answered the planner (teammates talk to each other)")
                );
            }
        }
        if waiting.is_empty() && crosstalk {
            crate::outln!("every teammate answered");
            return Ok(());
        }
        let current = store.load()?;
        let seen = crate::backend::Snapshot::of(current.teammates());
        for m in current.teammates() {
            let s = leader::effective_status_with(store, m, store.live(&m.name)?.as_ref(), &seen);
            if s == Status::Dead {
                return Err(Error::failed(format!(
                    "demo teammate {} died; its output is in {} (`teamctl log --worker {}`; `teamctl demo --stop` cleans up)",
                    m.name,
                    store.log_path(&m.name).display(),
                    m.name
                )));
            }
        }
        if Instant::now() >= deadline {
            let mut missing: Vec<String> = waiting.iter().map(|(n, _)| n.clone()).collect();
            if !crosstalk {
                missing.push("coder (to the planner)".into());
            }
            return Err(Error::failed(format!(
                "no answer from {} within {} s; look at `teamctl log` and `teamctl status`, then `teamctl demo --stop`",
                missing.join(", "),
                DEADLINE.as_secs()
            )));
        }
        bell.wait_until(deadline.min(Instant::now() + Duration::from_secs(1)));
    }
}

/// Give the teammates a moment (woken by events, at most a few seconds) to finish the turns
/// their chat started, so the status table shows them at rest.
fn settle(store: &dyn Store) -> Result<()> {
    let bell = SyncBell::default();
    let _sub = store.subscribe(&[Topic::Live], bell.bell())?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let config = store.load()?;
        let seen = crate::backend::Snapshot::of(config.teammates());
        let busy = config.teammates().any(|m| {
            leader::effective_status_with(
                &*store,
                m,
                store.live(&m.name).ok().flatten().as_ref(),
                &seen,
            ) != Status::Idle
                || leader::unread(store, &m.name, crate::worker::READER) > 0
        });
        if !busy || !bell.wait_until(deadline) {
            return Ok(());
        }
    }
}

/// Where the teammates are and how to look at them.
fn how_to_attach(p: Painter, store: &dyn Store, config: &TeamConfig, exe: &str) -> String {
    let tmux: Vec<_> = config
        .teammates()
        .filter(|m| m.backend_type == Some(BackendType::Tmux))
        .collect();
    let mut out = String::new();
    if let Some(m) = tmux.first() {
        let session = config.tmux_session.clone().unwrap_or_else(|| {
            crate::backend::tmux::argv::session_name(&crate::backend::tmux::argv::scoped(
                config.name.as_str(),
                &crate::backend::proc::home_key(),
            ))
        });
        let server = match &m.tmux_socket {
            Some(s) if s.starts_with('/') => format!("tmux -S {s}"),
            Some(s) => format!("tmux -L {s}"),
            None => "tmux".into(),
        };
        out.push_str(&format!(
            "Watch them work: {}   (or: {server} attach -t {session})\n",
            p.bold(&format!("{exe} attach"))
        ));
    } else {
        let first = config
            .teammates()
            .next()
            .map_or_else(|| "NAME".to_string(), |m| m.name.to_string());
        out.push_str(&format!(
            "No tmux here: the teammates run as processes; watch one work: {}   (files in {})\n",
            p.bold(&format!("{exe} log --worker {first} -f")),
            store.local_dir().join("logs").display()
        ));
    }
    out.push_str(&format!(
        "Talk to them: {}   (then: @planner hello)\n",
        p.bold(&format!("{exe} lead"))
    ));
    out.push_str(&format!(
        "Live board:   {}\nMessages:     {}\nStop it:      {}\n",
        p.bold(&format!("{exe} status --watch")),
        p.bold(&format!("{exe} log -f")),
        p.bold(&format!("{exe} demo --stop"))
    ));
    out
}
