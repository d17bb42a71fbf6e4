//! Starting an interactive teammate (leader side): its agent's own TUI or REPL as the command
//! of a tagged tmux pane (argv straight to `split-window`, nothing typed into a shell), and
//! its companion, the member's worker run detached (`worker/companion.rs`), which pastes each
//! message into that pane. The member records the pane (`paneId`) and the companion (`pid`);
//! liveness needs both, and kill, shutdown, resume and delete end both.

use std::path::{Path, PathBuf};

use crate::agent;
use crate::backend::process::ProcessBackend;
use crate::backend::{Backend, Launch, Placement};
use crate::domain::env;
use crate::domain::{BackendType, LEADER, Member, TeamConfig};
use crate::error::{Error, Result};
use crate::store::{Home, Store, hooks};
use crate::worker::turn::SHELL;

/// What `start` placed: the agent's pane, then the companion's pid in `pid`.
pub fn start(
    home: &Home,
    store: &dyn Store,
    config: &TeamConfig,
    member: &Member,
    backend: &dyn Backend,
) -> Result<Placement> {
    let Some(rule) = &member.interactive else {
        return Err(Error::failed(format!("{} is not interactive", member.name)));
    };
    if backend.kind() != BackendType::Tmux {
        return Err(Error::bad(format!(
            "{} is interactive: interactive teammates need the tmux backend (the agent runs in a tmux pane)",
            member.name
        )));
    }
    let log = store.log_path(&member.name);
    let mut launch = Launch::new(home.root(), store.team(), member, log.clone())?;
    launch.fill = config.tmux_fill.clone();
    launch.nonce = member.pane_nonce.clone();
    let env_file = crate::store::envfile::path(store, &member.name);
    let recorded = crate::store::envfile::load(&env_file)?;
    if rule.uses_hooks()
        && let Some(file) = hooks_disabled_by(Path::new(&member.cwd), recorded.as_deref())
    {
        crate::errln!(
            "teamctl: warning: {} sets \"disableAllHooks\": true, which also turns off teamctl's hooks: {}'s turns will not be seen to end (each runs into its turn timeout, 600 s by default). Remove that setting for this directory, or run the teammate in another --cwd.",
            file.display(),
            member.name
        );
    }
    let argv = agent_argv(
        home.root(),
        store,
        config,
        member,
        rule.preset.as_deref(),
        recorded.as_deref(),
    )?;
    if recorded.is_some() {
        // The agent runs with the recorded environment (the spawning shell's), not the tmux
        // server's: `teamctl __exec-env FILE -- AGENT...` sets it and execs the agent.
        launch.args = [EXEC_ENV.into(), env_file.display().to_string(), "--".into()]
            .into_iter()
            .chain(argv)
            .collect();
    } else {
        launch.program = PathBuf::from(&argv[0]);
        launch.args = argv[1..].to_vec();
    }
    launch.env = agent_env(home.root(), store, member, &launch.program_dir(home.root()));
    // Events of an earlier agent say nothing about this one.
    hooks::clear(store, &member.name);
    let placed = backend.spawn(&launch)?;
    let pane = placed
        .pane_id
        .clone()
        .ok_or_else(|| Error::failed("tmux gave no pane id"))?;
    let mut worker = Launch::new(home.root(), store.team(), member, log)?;
    worker.env = vec![
        (env::COMPANION_PANE.into(), pane.clone()),
        (
            env::COMPANION_SERVER.into(),
            placed.tmux_socket.clone().unwrap_or_default(),
        ),
    ];
    let companion = match ProcessBackend.spawn(&worker) {
        Ok(p) => p,
        Err(e) => {
            let mut m = member.clone();
            m.pane_id = Some(pane);
            m.tmux_socket = placed.tmux_socket.clone();
            let _ = backend.terminate(&m, None, crate::backend::GRACE);
            return Err(e);
        }
    };
    Ok(Placement {
        pid: companion.pid,
        ..placed
    })
}

/// The hidden subcommand an interactive pane runs: `teamctl __exec-env FILE -- PROGRAM ARGS...`.
pub const EXEC_ENV: &str = "__exec-env";

/// `teamctl __exec-env FILE -- PROGRAM ARGS...` (`args` after the subcommand's name): replace
/// this process by PROGRAM with the environment recorded in FILE (`store::envfile`), this
/// process's teamctl and tmux pane variables on top, and `PATH` as the leader set it. No
/// shell; values never on a command line. Returns only when PROGRAM cannot be run.
pub fn exec_env(args: &[std::ffi::OsString]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let (file, program, rest) = match args {
        [file, dash, program, rest @ ..] if dash == "--" => (file, program, rest),
        _ => {
            return Err(Error::bad(
                "usage: teamctl __exec-env FILE -- PROGRAM [ARGS...]",
            ));
        }
    };
    let file = Path::new(file);
    let recorded = crate::store::envfile::load(file)?
        .ok_or_else(|| Error::failed(format!("no recorded environment at {}", file.display())))?;
    let mut vars = crate::store::envfile::merged(recorded, std::env::vars_os());
    // teamctl's own directory first on the recorded `PATH`, so the agent's `teamctl` is this
    // one. Not from the pane's own `PATH`: tmux gives a new pane the client's `PATH` whatever
    // `-e PATH=...` says (seen with tmux 3.3a), so `agent_env`'s never arrives.
    let base = vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    let home = std::env::var_os(crate::domain::env::HOME).map(PathBuf::from);
    let mut path = crate::backend::exe::agent_bin_dir(home.as_deref()).into_os_string();
    if !base.is_empty() {
        path.push(":");
        path.push(&base);
    }
    vars.retain(|(k, _)| k != "PATH");
    vars.push(("PATH".into(), path));
    let err = std::process::Command::new(program)
        .args(rest)
        .env_clear()
        .envs(vars)
        .exec();
    Err(Error::failed(format!(
        "cannot run {}: {err}",
        Path::new(program).display()
    )))
}

/// The agent's argv: a generic REPL through `sh -c` (the command is the user's own, as for
/// turns); a preset's TUI with its flags. `recorded`: the environment the agent will run with.
fn agent_argv(
    home: &Path,
    store: &dyn Store,
    config: &TeamConfig,
    member: &Member,
    preset: Option<&str>,
    recorded: Option<&[crate::store::envfile::Var]>,
) -> Result<Vec<String>> {
    match preset {
        None => {
            let cmd = member.command.clone().ok_or_else(|| {
                Error::bad(format!("{} is interactive but has no --exec", member.name))
            })?;
            Ok(vec![SHELL.into(), "-c".into(), cmd])
        }
        Some("claude") => claude_argv(home, store, config, member, recorded),
        Some(other) => Err(Error::bad(format!(
            "no interactive preset {other:?}; interactive presets: claude (or --exec with --prompt-pattern)"
        ))),
    }
}

/// Claude Code's TUI with teamctl's hooks (`--settings`, a file under the team directory):
/// the preset's command line (session, model, team prompt, permission to run teamctl, the
/// user's extra arguments) without headless `-p`. The session is started on the first run and
/// resumed after, so a resumed teammate goes on with its conversation.
fn claude_argv(
    home: &Path,
    store: &dyn Store,
    config: &TeamConfig,
    member: &Member,
    recorded: Option<&[crate::store::envfile::Var]>,
) -> Result<Vec<String>> {
    let preset = agent::preset::find("claude")
        .ok_or_else(|| Error::failed("the claude preset is missing"))?;
    let program = which::which(preset.program).map_err(|_| {
        Error::failed(format!(
            "{} (Claude Code) was not found on PATH; install it: {}",
            preset.program, preset.install
        ))
    })?;
    let me = std::env::current_exe()
        .map_err(|e| Error::io_while("cannot find the teamctl binary", e))?;
    let settings = hooks::write_settings(store, &member.name, &me)?;
    // Only a UUID goes on the command line (a forged record could make it a flag).
    let session = member
        .session_id
        .clone()
        .filter(|s| uuid::Uuid::parse_str(s).is_ok())
        .unwrap_or_else(agent::new_session_id);
    let mates: Vec<String> = config
        .teammates()
        .filter(|m| m.name != member.name)
        .map(|m| m.name.to_string())
        .collect();
    let prompt = agent::prompt::TeamPrompt {
        team: config.name.as_str(),
        description: &config.description,
        name: member.name.as_str(),
        leader: LEADER,
        teammates: &mates,
        interactive: true,
        runs_teamctl: preset.runs_teamctl(&member.agent_args),
        instructions: member.prompt.as_deref(),
    }
    .render();
    let home = home.display().to_string();
    let sessions = store.local_dir().join("sessions").display().to_string();
    let turn = if claude_session_exists(&session, recorded) {
        2
    } else {
        1
    };
    let (mut argv, _) = preset.turn(&agent::TurnArgs {
        session: &session,
        turn,
        model: member.model.as_deref(),
        prompt: &prompt,
        message: "",
        home: &home,
        sessions: &sessions,
        networked: store.spans_hosts(),
        extra: &member.agent_args,
        cut_dir: None,
    });
    argv.retain(|w| w != "-p");
    argv[0] = program.display().to_string();
    argv.splice(
        1..1,
        ["--settings".to_string(), settings.display().to_string()],
    );
    Ok(argv)
}

/// Whether Claude Code keeps a transcript of `session` (then `--resume` continues it; a
/// `--session-id` that exists is refused, a `--resume` that does not fails). Looked up where
/// the agent will look: its `CLAUDE_CONFIG_DIR` or `HOME`, from the environment it will run
/// with (`recorded`), else this process's.
fn claude_session_exists(session: &str, recorded: Option<&[crate::store::envfile::Var]>) -> bool {
    let var = |k: &str| match recorded {
        Some(vars) => vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
        None => std::env::var_os(k),
    };
    let dir = match var("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match var("HOME") {
            Some(h) => PathBuf::from(h).join(".claude"),
            None => return false,
        },
    };
    let file = format!("{session}.jsonl");
    std::fs::read_dir(dir.join("projects"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|project| project.path().join(&file).is_file())
}

/// The first Claude Code settings file that turns every hook off (`"disableAllHooks": true`),
/// teamctl's too, for an agent running in `cwd` with the environment `recorded` (else this
/// process's): the project's `.claude/settings.json` and `.claude/settings.local.json`, the
/// user's `settings.json` (under `CLAUDE_CONFIG_DIR`, else `~/.claude`) and the machine's
/// managed settings. Such a teammate never reports a turn's end.
pub fn hooks_disabled_by(
    cwd: &Path,
    recorded: Option<&[crate::store::envfile::Var]>,
) -> Option<PathBuf> {
    let var = |k: &str| match recorded {
        Some(vars) => vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
        None => std::env::var_os(k),
    };
    let user = match var("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Some(PathBuf::from(d)),
        None => var("HOME").map(|h| PathBuf::from(h).join(".claude")),
    };
    let files = [
        Some(cwd.join(".claude/settings.json")),
        Some(cwd.join(".claude/settings.local.json")),
        user.map(|u| u.join("settings.json")),
        Some(PathBuf::from("/etc/claude-code/managed-settings.json")),
    ];
    files.into_iter().flatten().find(|f| disables_hooks(f))
}

fn disables_hooks(file: &Path) -> bool {
    use std::io::Read;
    let Ok(f) = std::fs::File::open(file) else {
        return false;
    };
    let mut bytes = Vec::new();
    if f.take(1024 * 1024).read_to_end(&mut bytes).is_err() {
        return false;
    }
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .is_ok_and(|v| v.get("disableAllHooks") == Some(&serde_json::Value::Bool(true)))
}

/// The agent's environment: who it is (the process tag, and what `teamctl` inside it acts
/// as) and teamctl first on `PATH`.
fn agent_env(home: &Path, store: &dyn Store, member: &Member, bin: &Path) -> Vec<(String, String)> {
    let mut path = bin.display().to_string();
    if let Ok(old) = std::env::var("PATH") {
        path = format!("{path}:{old}");
    }
    let mut vars = vec![
        (env::HOME.to_string(), home.display().to_string()),
        (env::TEAM.into(), store.team().to_string()),
        (env::AGENT_NAME.into(), member.name.to_string()),
        (env::AGENT_ID.into(), member.agent_id.clone()),
        ("PATH".into(), path),
    ];
    if let Some(p) = &member.prompt {
        vars.push((env::PROMPT.into(), p.clone()));
    }
    if let Some(word) = &member.pane_nonce {
        vars.push((env::PLACEMENT.into(), word.clone()));
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_turn_hooks_off_are_found() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let agent = vec![("HOME".into(), home.path().as_os_str().to_owned())];
        assert_eq!(hooks_disabled_by(cwd.path(), Some(&agent)), None);
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        let user = home.path().join(".claude/settings.json");
        std::fs::write(&user, r#"{"disableAllHooks": false}"#).unwrap();
        assert_eq!(hooks_disabled_by(cwd.path(), Some(&agent)), None);
        std::fs::write(&user, r#"{"disableAllHooks": true}"#).unwrap();
        assert_eq!(hooks_disabled_by(cwd.path(), Some(&agent)), Some(user));
        std::fs::create_dir_all(cwd.path().join(".claude")).unwrap();
        let local = cwd.path().join(".claude/settings.local.json");
        std::fs::write(&local, r#"{"disableAllHooks": true, "x": 1}"#).unwrap();
        assert_eq!(hooks_disabled_by(cwd.path(), Some(&agent)), Some(local));
    }

    #[test]
    fn a_claude_session_is_looked_up_under_the_agents_home_not_ours() {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join(".claude/projects/p");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("s-1.jsonl"), "{}\n").unwrap();
        let agent = vec![("HOME".into(), home.path().as_os_str().to_owned())];
        assert!(claude_session_exists("s-1", Some(&agent)));
        assert!(!claude_session_exists("s-2", Some(&agent)));
        // CLAUDE_CONFIG_DIR, when the agent has one, is where Claude Code keeps it.
        let mut elsewhere = agent.clone();
        elsewhere.push(("CLAUDE_CONFIG_DIR".into(), "/nonexistent".into()));
        assert!(!claude_session_exists("s-1", Some(&elsewhere)));
    }
}
