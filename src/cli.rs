//! The command line, as clap sees it: the arguments of every command, the global options
//! resolved against their variables (`context::Global`). Nothing here runs a command:
//! `commands::run` dispatches to one file per command.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::context::Global;
use crate::domain::env;
use crate::output::shell_word;

#[derive(Debug, Parser)]
#[command(
    name = "teamctl",
    version,
    about = "Run teams of command-line agents in tmux panes; they talk through a file-based message bus",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// None: bare `teamctl`, which prints the help (clap's own error for a missing
    /// subcommand lists the hidden ones too).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `--backend auto|tmux|process`, as the CLI spells `backend::Choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    Auto,
    Tmux,
    Process,
}

impl From<BackendArg> for crate::backend::Choice {
    fn from(arg: BackendArg) -> Self {
        match arg {
            BackendArg::Auto => Self::Auto,
            BackendArg::Tmux => Self::Tmux,
            BackendArg::Process => Self::Process,
        }
    }
}

/// The heading global options are listed under in every command's help, apart from its own.
const GLOBAL: &str = "Global options";

/// The global options as the command line gives them. The variables that stand in for them
/// are read by `resolve`, not by clap: clap counts a value from the environment as given on
/// the command line, and then showed `--home <DIR>` as required in every usage line.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// The team (default: the one created last) [env: TEAMCTL_TEAM]
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "TEAM")]
    pub team: Option<String>,
    /// State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub home: Option<PathBuf>,
    /// Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a
    /// teammate's turn (TEAMCTL_AGENT_ID set), that teammate and no one else]
    #[arg(long = "as", global = true, help_heading = GLOBAL, value_name = "NAME")]
    pub as_name: Option<String>,
    /// Machine-readable output on stdout
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is
    /// the new teammate's colour instead.
    // No list of values for clap: which ones complete depends on the command, and a clap list
    // is the same for every one (`teamctl __complete` offers them, `commands::complete`).
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        default_value = "auto",
        value_name = "WHEN|COLOUR"
    )]
    pub color: String,
}

/// `--color`'s values outside `spawn`.
pub const COLOR_WHEN: &[&str] = &["auto", "always", "never"];

/// A value parser that takes any text (the command says which ones it takes) and offers a
/// list for completion: `--agent`'s (the preset table's names) and `task update --status`'s
/// (the SPEC's statuses).
#[derive(Clone)]
struct Offered(fn() -> Vec<&'static str>);

/// The SPEC's task statuses, the words completion offers (`TaskStatus::from_str` takes the
/// words users type too).
fn task_statuses() -> Vec<&'static str> {
    crate::domain::task::TaskStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .collect()
}

impl clap::builder::TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            (self.0)()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

impl GlobalArgs {
    /// The options, each one not given taken from its variable.
    pub fn resolve(self) -> Global {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Global {
            team: self
                .team
                .or_else(|| var(env::TEAM).map(|v| v.to_string_lossy().into_owned())),
            home: self.home.or_else(|| var(env::HOME).map(PathBuf::from)),
            as_name: self
                .as_name
                .or_else(|| var(env::AGENT_NAME).map(|v| v.to_string_lossy().into_owned())),
            json: self.json,
            color: self.color,
        }
    }
}

/// Each command's arguments are built only for the command being run (`defer`): building all
/// of them took a large share of `send`'s start-up, on every agent turn's path.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Make a team and lead it
    Create(CreateArgs),
    /// Stop every teammate and remove the team
    Delete(DeleteCmd),
    /// Bring up the team a file declares (default teamctl.toml): create, resume, spawn
    Up(UpArgs),
    /// Stop the team a file declares and remove it (default teamctl.toml)
    Down(DownArgs),
    /// Start a teammate
    Spawn(Box<SpawnArgs>),
    /// Send a message (TEXT from stdin when absent)
    Send(SendArgs),
    /// Send a message and print the reply
    Ask(AskArgs),
    /// Show unread messages (idle notifications only with --type or --all) and mark them read
    Inbox(InboxArgs),
    /// Every member's state
    Status(StatusArgs),
    /// Block until teammates are idle or stopped
    Wait(WaitArgs),
    /// Ask teammates to stop (request, response, then the pane is closed)
    Shutdown(ShutdownArgs),
    /// Inside a turn: answer the shutdown request being handled (approve, or reject with a reason)
    ShutdownResponse(ShutdownResponseArgs),
    /// Cancel a teammate's current turn; the teammate stays
    Interrupt(InterruptArgs),
    /// End teammates and their panes now, without a handshake (every teammate: shutdown --all --force)
    Kill(KillArgs),
    /// Bring back stopped or dead teammates with their identity and unread mail
    Resume(ResumeArgs),
    /// Answer plan approval requests
    #[command(subcommand)]
    Plan(PlanCommand),
    /// The shared task list
    #[command(subcommand)]
    Task(TaskCommand),
    /// Attach to the team's tmux session, focused on a teammate's pane
    Attach(AttachArgs),
    /// Every message of the team in time order, or one teammate's own log
    Log(LogArgs),
    /// Check tmux, inotify limits, stale teams, orphaned panes and processes
    Doctor(DoctorArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Run a demo team in real tmux panes
    Demo(DemoArgs),
    /// The leader console: live inbox, status line, @NAME messages
    Lead,
    /// The teammate loop (internal)
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// Completion candidates from the current team (internal, for the shell scripts)
    #[command(name = "__complete", hide = true)]
    Complete(CompleteArgs),
    /// Record an interactive agent's hook event, JSON on stdin (internal: its hooks run it)
    #[command(hide = true)]
    Hook(HookArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The team's name (a suffix is added when it is taken)
    pub name: String,
    /// What the team is for
    #[arg(short, long, default_value = "")]
    pub description: String,
    /// Loop guard: a message more than N agent-to-agent hops from its origin starts no turn
    #[arg(long, value_name = "N", default_value_t = crate::domain::member::DEFAULT_MAX_HOPS)]
    pub max_hops: u32,
    /// Keep the team in a NATS JetStream server (nats://HOST:PORT, tls://...) instead of files
    /// here, so that other hosts can join it (docs/SCALE.md); `file` is the default
    #[arg(
        long,
        value_name = "URL",
        env = "TEAMCTL_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
}

#[derive(Debug, Args)]
pub struct DeleteCmd {
    #[command(flatten)]
    pub delete: DeleteArgs,
    /// Leave a team kept on a NATS server: remove only this home's pointer and local
    /// directory; the team stays for the other hosts (refused while a member of this host runs)
    #[arg(long, conflicts_with = "force")]
    pub leave: bool,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Kill teammates instead of asking them to stop, and discard the work in their worktrees
    /// (uncommitted, ignored, commits on no branch) instead of refusing
    #[arg(long)]
    pub force: bool,
    /// Seconds (or a duration: 90s, 2m) to wait for shutdown responses
    #[arg(long, default_value_t = 30, value_name = "S", value_parser = crate::domain::time::parse_timeout)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    /// The team file (TOML; see docs/CLI.md)
    #[arg(default_value = "teamctl.toml", value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    /// The team file (TOML; see docs/CLI.md)
    #[arg(default_value = "teamctl.toml", value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub delete: DeleteArgs,
}

#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// The teammate's name (its id is NAME@TEAM)
    pub name: String,
    /// The agent command, run through `sh -c` for each message (message on stdin)
    #[arg(long, value_name = "CMD", conflicts_with = "agent")]
    pub exec: Option<String>,
    /// Run a known agent CLI for each message, in one remembered session: claude, codex,
    /// gemini or aider (see docs/RECIPES.md)
    #[arg(long, value_name = "CLI", hide_possible_values = true, value_parser = Offered(crate::agent::preset::names))]
    pub agent: Option<String>,
    /// With --agent: more arguments for the agent CLI (after `--`)
    #[arg(last = true, value_name = "EXTRA", requires = "agent")]
    pub extra: Vec<String>,
    /// The teammate's standing instructions (given to each turn as $TEAMCTL_PROMPT)
    #[arg(long)]
    pub prompt: Option<String>,
    /// Where the worker runs: a tmux pane, or a detached process (auto: tmux when installed)
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// The directory the agent command runs in (default: the current one)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub cwd: Option<PathBuf>,
    /// The model: passed to an --agent CLI; recorded in the team file (and $TEAMCTL_MODEL)
    #[arg(long)]
    pub model: Option<String>,
    /// The kind of agent, recorded in the team file
    #[arg(long, default_value = "general-purpose")]
    pub agent_type: String,
    /// Run --plan before each turn and wait for the leader's approval
    #[arg(long, requires = "plan")]
    pub plan_mode_required: bool,
    /// The command that writes the plan (with --plan-mode-required)
    #[arg(long, value_name = "CMD")]
    pub plan: Option<String>,
    /// Claim the next task whenever idle
    #[arg(long)]
    pub auto_claim: bool,
    /// Interrupt a turn that runs longer than this: seconds (e.g. 600) or a duration (10m,
    /// 1h 30m). Default: no limit
    #[arg(long, value_name = "S", value_parser = crate::domain::time::parse_secs)]
    pub turn_timeout: Option<u64>,
    /// Stop after N turns
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u64>,
    /// Run on a shutdown request; a non-zero exit refuses, its output the reason
    #[arg(long, value_name = "CMD")]
    pub on_shutdown: Option<String>,
    /// Give the teammate its own git worktree (on BRANCH; default teamctl/NAME@TEAM)
    #[arg(long, value_name = "BRANCH", num_args = 0..=1, default_missing_value = "")]
    pub worktree: Option<String>,
    /// Run the agent's own TUI or REPL in the pane (you can watch it and type to it); a
    /// companion pastes each message into it when it is idle
    #[arg(long)]
    pub interactive: bool,
    /// With --interactive --exec: a regex matching the REPL's empty prompt line (the last
    /// non-blank line of the pane), e.g. '^>>> $'
    #[arg(long, value_name = "RE", requires = "interactive")]
    pub prompt_pattern: Option<String>,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// A member name, * for everyone but you, or NAME@TEAM for a member of another team (plain text)
    pub to: String,
    /// The message (use -- before a text that starts with -)
    pub text: Option<String>,
    /// A 5 to 10 word preview (default: taken from the text)
    #[arg(long, conflicts_with = "structured")]
    pub summary: Option<String>,
    /// A structured message as JSON (`{"type":"shutdown_request",...}`)
    #[arg(long, value_name = "JSON", conflicts_with = "text")]
    pub structured: Option<String>,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The teammate to ask
    pub name: String,
    /// The question (from stdin when absent)
    pub text: Option<String>,
    /// Seconds (or a duration: 90s, 10m) to wait for the reply
    #[arg(long, default_value_t = 300, value_name = "S", value_parser = crate::domain::time::parse_ask_timeout)]
    pub timeout: u64,
    /// Print the reply's bytes unchanged, control characters and escape sequences included
    /// (by default they are shown escaped, so a reply cannot drive the terminal)
    #[arg(long)]
    pub raw: bool,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Whose inbox (default: yours). A teammate's shows what its worker has not delivered yet
    /// (as `status` counts unread) and marks nothing read: its worker reads it
    pub name: Option<String>,
    /// Show without marking read
    #[arg(long)]
    pub peek: bool,
    /// Show every message, read or not, idle notifications included
    #[arg(long)]
    pub all: bool,
    /// Only unread messages of this type (idle_notification, message...); marks nothing read
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A live board, redrawn on file events
    #[arg(long)]
    pub watch: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("who").required(true).args(["names", "all"])))]
pub struct WaitArgs {
    /// The teammates to wait for
    pub names: Vec<String>,
    /// Wait for every teammate
    #[arg(long)]
    pub all: bool,
    /// Seconds (or a duration: 90s, 10m) to wait before giving up (exit 1); 0 looks once
    #[arg(long, default_value_t = 600, value_name = "S", value_parser = crate::domain::time::parse_any_secs)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("who").required(true).args(["names", "all"])))]
pub struct ShutdownArgs {
    /// The teammates to stop (every teammate: --all, not '*')
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Stop every teammate
    #[arg(long)]
    pub all: bool,
    /// Why, passed on in the request
    #[arg(long)]
    pub reason: Option<String>,
    /// Seconds (or a duration: 90s, 2m) to wait for the answers before giving up (exit 1)
    #[arg(long, default_value_t = 30, value_name = "S", value_parser = crate::domain::time::parse_timeout)]
    pub timeout: u64,
    /// Kill without the handshake; with --remove-worktree, discard the work in the worktree
    /// (uncommitted, ignored, commits on no branch) instead of keeping it
    #[arg(long)]
    pub force: bool,
    /// Send the request and return; the next leader command acts on the response
    #[arg(long)]
    pub no_wait: bool,
    /// Also remove the teammate's git worktree
    #[arg(long)]
    pub remove_worktree: bool,
}

#[derive(Debug, Args)]
pub struct ShutdownResponseArgs {
    /// approve or reject
    #[arg(value_enum)]
    pub decision: Decision,
    /// Why (required to reject)
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Decision {
    Approve,
    Reject,
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// The teammate
    pub name: String,
}

#[derive(Debug, Args)]
pub struct InterruptArgs {
    /// The teammates whose turns to cancel
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The teammates (every teammate: shutdown --all --force)
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The teammates (default: every stopped or dead one)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// NATS store: run the teammate here as the shared team file records it: one last
    /// started on another host (once nothing of it runs there), or one this home has no
    /// copy of what it runs for (it left and joined again)
    #[arg(long, requires = "names")]
    pub here: bool,
    /// Start each named teammate past the message it died in its turn on (one that kills its
    /// worker each time it runs): that message is not run, its sender is told so
    #[arg(long, requires = "names")]
    pub skip_turn: bool,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PlanCommand {
    /// Pending plan approval requests
    List,
    /// Approve NAME's pending plan
    Approve(ApproveArgs),
    /// Reject NAME's pending plan with feedback
    Reject(RejectArgs),
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The teammate whose plan is approved
    pub name: String,
    /// Only if the pending plan is this request (the id `plan list` shows): the plan read is
    /// the plan approved, never one sent again since
    #[arg(long, value_name = "ID")]
    pub request: Option<String>,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// The teammate whose plan is rejected
    pub name: String,
    /// What to change, sent back to the teammate
    #[arg(long)]
    pub feedback: String,
    /// Only if the pending plan is this request (the id `plan list` shows)
    #[arg(long, value_name = "ID")]
    pub request: Option<String>,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TaskCommand {
    /// Add a task
    Add(TaskAddArgs),
    /// Every task, grouped by status
    List,
    /// One task
    Show(TaskIdArg),
    /// Claim a task (the first claimable one without ID)
    Claim(TaskClaimArgs),
    /// Change a task's status or owner
    Update(TaskUpdateArgs),
    /// Mark a task completed
    Done(TaskDoneArgs),
}

#[derive(Debug, Args)]
pub struct TaskAddArgs {
    /// What is to be done, in a line
    pub subject: String,
    /// More detail
    #[arg(short, long)]
    pub description: Option<String>,
    /// Tasks that must be completed before this one can be claimed
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub blocked_by: Vec<String>,
    /// Give the task to this member (it is sent a task_assignment)
    #[arg(long)]
    pub owner: Option<String>,
}

#[derive(Debug, Args)]
pub struct TaskIdArg {
    /// The task's number
    pub id: String,
}

#[derive(Debug, Args)]
pub struct TaskClaimArgs {
    /// The task's number (default: the first pending task that is not blocked)
    pub id: Option<String>,
}

#[derive(Debug, Args)]
pub struct TaskUpdateArgs {
    /// The task's number
    pub id: String,
    /// The new status (done, todo and doing are taken for completed, pending and in_progress)
    #[arg(long, value_parser = Offered(task_statuses))]
    pub status: Option<String>,
    /// Give the task to this member (it is sent a task_assignment); "" removes the owner
    #[arg(long)]
    pub owner: Option<String>,
    /// Add blockers: tasks that must be completed first (a cycle is refused)
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub blocked_by: Vec<String>,
}

#[derive(Debug, Args)]
pub struct TaskDoneArgs {
    /// The task's number
    pub id: String,
    /// What came of it
    #[arg(long)]
    pub result: Option<String>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The teammate whose pane gets the focus (default: the first one)
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Keep printing messages as they arrive; with --worker, follow the teammate's log
    #[arg(short, long)]
    pub follow: bool,
    /// Only messages from this member
    #[arg(long)]
    pub from: Option<String>,
    /// Only messages to this member
    #[arg(long)]
    pub to: Option<String>,
    /// Only messages of this type (message, idle_notification, shutdown_request...)
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// A teammate's own log instead: its worker's notes and its turns' output (-f follows it)
    // `Other`: a name, never a file (fish offered file names beside the teammates).
    #[arg(
        long,
        value_name = "NAME",
        value_hint = clap::ValueHint::Other,
        conflicts_with_all = ["from", "to", "kind"]
    )]
    pub worker: Option<String>,
    /// Only the last N messages (with --worker: lines of its log) first, as `tail -n`;
    /// default: all
    #[arg(short = 'n', long, value_name = "N")]
    pub lines: Option<usize>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Clean up what was found
    #[arg(long)]
    pub fix: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Stop the demo team and remove it
    #[arg(long)]
    pub stop: bool,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The words after `teamctl`, the one being completed last (after `--`)
    #[arg(num_args = 0.., allow_hyphen_values = true, trailing_var_arg = true)]
    pub words: Vec<String>,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// user-prompt-submit, stop or notification
    pub event: String,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub id: String,
}

/// The command line parsed, as `Cli::parse_from` does. Clap builds the whole command tree
/// before it parses (every command, each given the global options): about 0.8 M of the 1.4 M
/// instructions of a whole `teamctl send`, run by agents on every turn. The commands agents
/// and scripts run most (`QUICK`) are parsed first against a tree holding the global options
/// and that one command, with the same definitions; whatever that parse does not take
/// (help, version, any error) goes through the whole tree, so every result and every message
/// is the same.
pub fn parse(args: &[std::ffi::OsString]) -> Cli {
    if let Some(cli) = quick(args) {
        return cli;
    }
    match Cli::try_parse_from(args.iter()) {
        Ok(cli) => cli,
        Err(e) => {
            if let Some(hint) = meant(args, &e) {
                crate::errln!("{}", crate::output::printable(&format!("teamctl: {hint}")));
                std::process::exit(2);
            }
            // Help and version go to stdout: one that cannot be written is said, as any
            // command's output is (`out`); clap's own `exit` ignores the error (QA: `teamctl
            // --help > /dev/full` exited 0).
            if e.use_stderr() {
                e.exit()
            }
            match e
                .print()
                .and_then(|()| std::io::Write::flush(&mut std::io::stdout()))
            {
                Ok(()) => std::process::exit(e.exit_code()),
                Err(err) => crate::out::exit_with(&crate::out::error(err)),
            }
        }
    }
}

/// What a command line clap refused most likely meant, where clap's own message names no way
/// there. `log NAME` (a user's first try at one teammate's output) is `log --worker NAME` or
/// `log --from NAME`: only a member of the team is named so, and only when the line without
/// that word is a `log` without `--worker`; any other extra word keeps clap's own error
/// (`log --worker bob extra`) or gets no name (`log 10`). `delete NAME` (a user's first try
/// at removing a team, or one teammate) says how to do either, also for several words
/// (`delete my team`) and words after `--`; it never deletes anything.
fn meant(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    use clap::error::ErrorKind;
    if e.kind() == ErrorKind::InvalidSubcommand && command_word(args) == Some("task") {
        return task_meant(args, e);
    }
    if e.kind() == ErrorKind::InvalidSubcommand {
        return command_meant(e);
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let word = command_word(args)?;
    // `kill --all`, `interrupt --all` (clap's tip is `-- --all`, a name): they take names.
    if matches!(word, "kill" | "interrupt") && refused_word(e) == Some("--all") {
        return Some(format!(
            "unexpected argument \"--all\": {}",
            crate::commands::mistaken::everyone_to_end(word)
        ));
    }
    if word == "delete" {
        let (global, _, words) = without_extra_words(args, e)?;
        return Some(delete_meant(&global, &words));
    }
    if word == "task"
        && let Some(hint) = update_meant(args, e)
    {
        return Some(hint);
    }
    if word == "status" {
        return status_meant(args, e);
    }
    if matches!(word, "send" | "ask" | "task") {
        return text_meant(args, e);
    }
    if word == "spawn" {
        return agent_meant(args, e);
    }
    if word != "log" {
        return None;
    }
    let given = refused_word(e)?;
    if given.starts_with('-') {
        return None;
    }
    // The line as it parses without the word (the first of its places that parses).
    let (global, command) = parses_without(args, given)?;
    let Command::Log(log) = command else {
        return None;
    };
    if log.worker.is_some() {
        return None;
    }
    let every = "log takes no member name (it shows every message of the team)";
    match crate::domain::Name::parse(given) {
        Ok(n) if is_member(global, &n) => Some(format!(
            "{every}: `teamctl log --worker {n}` shows {n}'s own log (its turns' output, timeouts, warnings; -f follows it), `teamctl log --from {n}` (or --to {n}) its messages"
        )),
        _ => Some(format!(
            "{every}, and {given:?} is no member of the team: `teamctl log --worker NAME` shows a teammate's own log, `teamctl log --from NAME` (or --to NAME) its messages"
        )),
    }
}

/// `send w hello there` (the message not quoted: the shell made it three words, clap refused
/// the third): the text quoted, for every command whose text is one argument (`send`'s
/// message, `ask`'s question, `task add`'s subject). Only the text is shown, never a whole
/// line made again (it would drop the options typed: new-user QA). A recipient that is a file
/// here was most likely an unquoted `*` the shell expanded. Only words clap refused after that
/// text count; an option typed wrong keeps clap's own error.
fn text_meant(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    let (global, command, extra) = without_extra_words(args, e)?;
    // `send a b hi` (an unquoted * the shell expanded), `send hi there bob` (the name last).
    if let Command::Send(SendArgs {
        to,
        text: Some(text),
        ..
    }) = &command
    {
        let config = crate::context::Ctx::new(global.clone().resolve(), false)
            .and_then(|ctx| ctx.store())
            .and_then(|store| store.load())
            .ok();
        let words: Vec<&str> = std::iter::once(text.as_str())
            .chain(extra.iter().map(String::as_str))
            .collect();
        let member = |n: &str| config.as_ref().is_some_and(|c| c.member(n).is_some());
        if let Some(hint) = crate::commands::mistaken::hint(to, &words, member) {
            return Some(hint);
        }
    }
    // `ask hello there bob`: the name last.
    if let Command::Ask(AskArgs {
        name,
        text: Some(text),
        ..
    }) = &command
    {
        let config = crate::context::Ctx::new(global.resolve(), false)
            .and_then(|ctx| ctx.store())
            .and_then(|store| store.load())
            .ok();
        let words: Vec<&str> = std::iter::once(text.as_str())
            .chain(extra.iter().map(String::as_str))
            .collect();
        let member = |n: &str| config.as_ref().is_some_and(|c| c.member(n).is_some());
        if let Some(hint) =
            crate::commands::mistaken::swapped("ask", "question", name, &words, member)
        {
            return Some(hint);
        }
    }
    let (to, text, what) = match &command {
        Command::Send(SendArgs {
            to,
            text: Some(text),
            ..
        }) => (Some(to), text, "message"),
        Command::Ask(AskArgs {
            name,
            text: Some(text),
            ..
        }) => (Some(name), text, "question"),
        Command::Task(TaskCommand::Add(TaskAddArgs { subject, .. })) => (None, subject, "subject"),
        _ => return None,
    };
    let whole = std::iter::once(text.as_str())
        .chain(extra.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let glob = match to {
        Some(to) if std::path::Path::new(to).symlink_metadata().is_ok() => format!(
            "; and {} is a file here: an unquoted * is the shell's list of files, write '*' for everyone",
            shell_word(to)
        ),
        _ => String::new(),
    };
    // Quoted back only when plain: its escaped form pasted would send other text.
    let quoted = match crate::commands::broadcast::text_or_file(&whole) {
        file if file == "< FILE" => format!("or give it on stdin ({file})"),
        _ => format!("as {}", crate::output::shell_quote(&whole)),
    };
    Some(format!(
        "unexpected argument {:?}: the {what} is one argument: quote it, {quoted}{glob}",
        extra[0],
    ))
}

/// `spawn carol 'echo hi'`, `spawn carol claude` (the agent given as a word after the name,
/// new-user QA: clap said only "unexpected argument"): where it goes, `--exec 'CMD'` for a
/// command, `--agent CLI` for a preset's name. Only for a line that gives no agent otherwise.
fn agent_meant(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    if let Some(hint) = exec_split(args, e) {
        return Some(hint);
    }
    let (_, command, words) = without_extra_words(args, e)?;
    let Command::Spawn(spawn) = command else {
        return None;
    };
    if spawn.exec.is_some() || spawn.agent.is_some() {
        return None;
    }
    let given = words.join(" ");
    if words.len() == 1 && crate::agent::preset::names().contains(&given.as_str()) {
        return Some(format!(
            "unexpected argument {given:?}: a preset agent is named with --agent: --agent {given}"
        ));
    }
    Some(format!(
        "unexpected argument {:?}: the teammate's agent command is given with --exec, as one argument: --exec {} (or --agent CLI for a preset: {})",
        words[0],
        crate::output::shell_quote(&given),
        crate::agent::preset::names().join(", ")
    ))
}

/// `spawn carol --exec echo hi`, `spawn carol --exec python3 -i` (the shell split the command
/// after `--exec`: clap refused `hi`, or took `-i` for an option and advised `-- -i`, which
/// `spawn` then refuses: new-user QA): the command as one argument, its words up to the next
/// long option.
fn exec_split(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    let given = refused_word(e)?;
    let words: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    let at = words.iter().position(|w| *w == "--exec")?;
    let rest: Vec<&str> = words
        .get(at + 1..)?
        .iter()
        .copied()
        .take_while(|w| !w.starts_with("--"))
        .collect();
    if rest.len() < 2 || !rest[1..].contains(&given) {
        return None;
    }
    Some(format!(
        "unexpected argument {given:?}: --exec takes the whole command as one argument: --exec {}",
        crate::output::shell_quote(&rest.join(" "))
    ))
}

/// `teamctl start bob`, `stop`, `ls`...: a word users bring from other tools, for which clap's
/// tip is a look-alike that does something else (new-user QA 45: `start` got "similar:
/// status"). The commands that do it; any other word keeps clap's error.
fn command_meant(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let ContextValue::String(given) = e.get(ContextKind::InvalidSubcommand)? else {
        return None;
    };
    let how = match given.to_ascii_lowercase().as_str() {
        "start" | "run" | "launch" | "restart" | "new" | "add" | "hire" => {
            "`teamctl spawn NAME --exec CMD` starts a new teammate; `teamctl resume NAME` starts a stopped or dead one again"
        }
        "stop" | "quit" | "exit" | "halt" | "end" | "close" | "fire" => {
            "`teamctl shutdown NAME` asks a teammate to stop; `teamctl kill NAME` ends it now; `teamctl delete` removes the whole team"
        }
        "rm" | "remove" | "del" | "destroy" => {
            "`teamctl delete` stops every teammate and removes the team; a teammate alone: `teamctl shutdown NAME`"
        }
        "ls" | "list" | "ps" | "show" | "info" | "members" => {
            "`teamctl status` lists every member and its state"
        }
        "msg" | "message" | "tell" | "say" | "post" => "`teamctl send NAME TEXT` sends a message",
        "logs" | "history" => "`teamctl log` shows every message in time order",
        "init" | "new-team" => {
            "`teamctl create TEAM` makes a team (or `teamctl up` from a team file)"
        }
        _ => return None,
    };
    Some(format!(
        "no command {given:?}: {how} (`teamctl --help` lists them all)"
    ))
}

/// `task doing 2`, `task start 2` (a status word, or a word for starting, taken for a task
/// command; clap's own tip for `doing` is "done", which would complete it): the command that
/// sets that status, with the id typed (`ID` when none was). Any other word keeps clap's error.
fn task_meant(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    use crate::domain::task::TaskStatus;
    use clap::error::{ContextKind, ContextValue};
    let ContextValue::String(given) = e.get(ContextKind::InvalidSubcommand)? else {
        return None;
    };
    let lower = given.to_ascii_lowercase();
    let removal = matches!(lower.as_str(), "rm" | "delete" | "remove" | "del" | "drop");
    let status = match lower.as_str() {
        "start" | "begin" | "progress" | "work" => TaskStatus::InProgress,
        "reopen" | "reset" => TaskStatus::Pending,
        "finish" | "close" | "closed" | "resolve" | "resolved" | "end" => TaskStatus::Completed,
        _ if removal => TaskStatus::Failed,
        word => word.parse::<TaskStatus>().ok()?,
    };
    let task = args.iter().position(|a| a == "task")?;
    let at = task
        + 1
        + args[task + 1..]
            .iter()
            .position(|a| a.to_str() == Some(given.as_str()))?;
    let id = args
        .get(at + 1)
        .and_then(|a| a.to_str())
        .filter(|a| !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or("ID");
    let how = match status {
        // No command removes a task: the list keeps what was given up, as what was done.
        _ if removal => format!(
            "there is no command that removes a task (the list keeps every one); `teamctl task update {id} --status failed` marks it given up, `teamctl task done {id}` completed"
        ),
        TaskStatus::Completed => format!("`teamctl task done {id}` marks it completed"),
        TaskStatus::InProgress => format!(
            "`teamctl task update {id} --status in_progress` marks it in progress (`teamctl task claim {id}` takes it as yours and starts it)"
        ),
        s => format!("`teamctl task update {id} --status {s}` sets it"),
    };
    Some(format!(
        "no task command {given:?}: {how}; the task commands are add, list, show, claim, update, done"
    ))
}

/// `task update 1 done` (the status typed as a word of its own): the command that sets it,
/// with the id typed. Any other extra word keeps its error.
fn update_meant(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    use crate::domain::task::TaskStatus;
    let given = refused_word(e)?;
    let status = given.parse::<TaskStatus>().ok()?;
    let (_, command) = parses_without(args, given)?;
    let Command::Task(TaskCommand::Update(update)) = command else {
        return None;
    };
    let id = shell_word(&update.id);
    let how = match status {
        TaskStatus::Completed => format!(
            "`teamctl task done {id}` marks it completed (or `teamctl task update {id} --status completed`)"
        ),
        s => format!("`teamctl task update {id} --status {s}` sets it"),
    };
    Some(format!(
        "unexpected argument {given:?}: a new status is given with --status: {how}"
    ))
}

/// `status bob` (a first try at one teammate's state): `status` shows every member of the
/// team `--team` chooses and takes no name. A member is pointed at its own log and messages,
/// a team of this home at `--team`.
fn status_meant(args: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    let given = refused_word(e)?;
    if given.starts_with('-') {
        return None;
    }
    let (global, command) = parses_without(args, given)?;
    let Command::Status(_) = command else {
        return None;
    };
    let every = "status takes no name (it shows every member of the team chosen by --team, default the one created last)";
    Some(match crate::domain::Name::parse(given) {
        Ok(n) if is_member(global.clone(), &n) => format!(
            "{every}: {n}'s row is in it; `teamctl log --worker {n}` shows {n}'s own log (its turns' output; -f follows it), `teamctl log --from {n}` its messages"
        ),
        Ok(n) if team_exists(global, &n) => {
            format!("{every}: `teamctl --team {n} status` shows team {n}")
        }
        _ => format!(
            "{every}, and {given:?} is no member of it nor a team here: `teamctl --team TEAM status` shows another team, `teamctl log --worker NAME` a teammate's own log"
        ),
    })
}

/// The word clap refused as an unexpected argument.
fn refused_word(e: &clap::Error) -> Option<&str> {
    use clap::error::{ContextKind, ContextValue};
    match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(given) => Some(given),
        _ => None,
    }
}

/// The line as it parses without `word` (the first of its places that parses), with the
/// global options and the command it then gives.
fn parses_without(args: &[std::ffi::OsString], word: &str) -> Option<(GlobalArgs, Command)> {
    (1..args.len()).filter(|i| args[*i] == word).find_map(|i| {
        let mut rest = args.to_vec();
        rest.remove(i);
        match Cli::try_parse_from(rest).ok()? {
            Cli {
                global,
                command: Some(command),
            } => Some((global, command)),
            Cli { command: None, .. } => None,
        }
    })
}

/// The line without the words clap refused one after the other (`delete my team`: `my`, then
/// `team`), when it then parses: its global options, its command and those words. A refused word that
/// looks like an option counts only after `--` (`delete -- --team`); before it, clap's own
/// error stays (`delete --tema` gets its "a similar argument exists").
fn without_extra_words(
    args: &[std::ffi::OsString],
    first: &clap::Error,
) -> Option<(GlobalArgs, Command, Vec<String>)> {
    let mut rest = args.to_vec();
    let mut words = Vec::new();
    let mut given = refused_word(first)?.to_string();
    // A handful at most: a line of many words is not a name given by mistake.
    for _ in 0..8 {
        let dashes = rest.iter().position(|a| a == "--");
        // The last place it is at: the command's own words come after the global options.
        let at = (1..rest.len()).rev().find(|i| {
            rest[*i] == given.as_str()
                && (!given.starts_with('-') || dashes.is_some_and(|d| d < *i))
        })?;
        rest.remove(at);
        words.push(given);
        given = match Cli::try_parse_from(&rest) {
            Ok(Cli {
                global,
                command: Some(command),
            }) => return Some((global, command, words)),
            Err(e) if e.kind() == clap::error::ErrorKind::UnknownArgument => {
                refused_word(&e)?.to_string()
            }
            Ok(_) | Err(_) => return None,
        };
    }
    None
}

/// `delete NAME...`: `delete` removes the team `--team` chooses, and takes no name. A team of
/// that name is pointed to with `--team` (the team chosen otherwise is named, so the user sees
/// which one a bare `delete` would remove); a member is pointed to `shutdown`/`kill`; the
/// leader's own name to what ends the team or every teammate (`shutdown` and `kill` refuse it).
fn delete_meant(global: &GlobalArgs, given: &[String]) -> String {
    let every = "delete takes no name (it removes the whole team chosen by --team, default the one created last)";
    let quoted = |words: &[&String]| {
        words
            .iter()
            .map(|w| format!("{w:?}"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let (names, invalid): (Vec<_>, Vec<_>) = given
        .iter()
        .map(|w| (w, crate::domain::Name::parse(w)))
        .partition(|(_, n)| n.is_ok());
    let names: Vec<(&String, crate::domain::Name)> = names
        .into_iter()
        .filter_map(|(w, n)| Some((w, n.ok()?)))
        .collect();
    let invalid: Vec<&String> = invalid.into_iter().map(|(w, _)| w).collect();
    let mut ways = Vec::new();
    let mut unknown = Vec::new();
    for (word, name) in &names {
        if name.is_leader() {
            let team = current_team(global.clone()).map_or(String::new(), |t| format!(" {t}"));
            ways.push(format!(
                "{name} is the leader, you: `teamctl delete` ends the whole team{team}, `teamctl shutdown --all` stops every teammate and keeps it"
            ));
        } else if is_member(global.clone(), name) {
            ways.push(format!(
                "to stop the teammate {name} and keep the team, `teamctl shutdown {name}` (or `teamctl kill {name}`)"
            ));
        } else if team_exists(global.clone(), name) {
            ways.push(format!(
                "to delete the team {name}, `teamctl delete --team {name}`"
            ));
        } else {
            unknown.push(*word);
        }
    }
    let mut text = every.to_string();
    if !ways.is_empty() {
        text.push_str(": ");
        text.push_str(&ways.join("; "));
    }
    let mut and = Vec::new();
    match invalid.as_slice() {
        [] => {}
        [one] => and.push(format!("{one:?} is not a valid name")),
        many => and.push(format!(
            "{} are not valid names",
            quoted(many).replace(" or ", ", ")
        )),
    }
    if !unknown.is_empty() {
        and.push(format!(
            "there is no team or teammate {} here",
            quoted(&unknown)
        ));
    }
    if !and.is_empty() {
        text.push_str(if ways.is_empty() { ", and " } else { "; " });
        text.push_str(&and.join(", and "));
    }
    text
}

/// Whether a team `name` is there (the team the global options would choose with `--team
/// NAME`; false on any error).
fn team_exists(global: GlobalArgs, name: &crate::domain::Name) -> bool {
    let team = GlobalArgs {
        team: Some(name.as_str().to_string()),
        ..global
    };
    crate::context::Ctx::new(team.resolve(), false)
        .and_then(|ctx| ctx.store())
        .and_then(|store| store.load())
        .is_ok()
}

/// The name of the team the global options choose, if it can be read.
fn current_team(global: GlobalArgs) -> Option<crate::domain::Name> {
    crate::context::Ctx::new(global.resolve(), false)
        .and_then(|ctx| ctx.store())
        .and_then(|store| store.load())
        .ok()
        .map(|config| config.name)
}

/// Whether `name` is a member of the team the global options choose (false on any error).
fn is_member(global: GlobalArgs, name: &crate::domain::Name) -> bool {
    crate::context::Ctx::new(global.resolve(), false)
        .and_then(|ctx| ctx.store())
        .and_then(|store| store.load())
        .is_ok_and(|config| config.member(name.as_str()).is_some())
}

/// Adds a command's arguments to its `clap::Command` (`Args::augment_args`).
type Augment = fn(clap::Command) -> clap::Command;

/// The commands `parse` tries on their own, each with its arguments' definitions.
const QUICK: &[(&str, Augment)] = &[
    ("send", <SendArgs as Args>::augment_args),
    ("ask", <AskArgs as Args>::augment_args),
    ("inbox", <InboxArgs as Args>::augment_args),
    ("status", <StatusArgs as Args>::augment_args),
    ("wait", <WaitArgs as Args>::augment_args),
    ("hook", <HookArgs as Args>::augment_args),
];

/// `args` parsed against the global options and the one command it names, when that is one
/// of `QUICK` and the parse succeeds.
fn quick(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::FromArgMatches;
    let name = command_word(args)?;
    let (name, augment) = QUICK.iter().find(|(n, _)| *n == name)?;
    let mut cmd = GlobalArgs::augment_args(clap::Command::new("teamctl"))
        .subcommand(augment(clap::Command::new(*name)));
    let cli = cmd
        .try_get_matches_from_mut(args)
        .ok()
        .and_then(|mut m| Cli::from_arg_matches_mut(&mut m).ok());
    // Freed at exit with the rest: taking the tree apart costs more than building it.
    std::mem::forget(cmd);
    cli
}

/// The command word of `args` when only global options come before it, else `None`.
fn command_word(args: &[std::ffi::OsString]) -> Option<&str> {
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if !word.starts_with('-') {
            return Some(word);
        }
        match word {
            "--team" | "--home" | "--as" | "--color" => {
                words.next()?;
            }
            "--json" => {}
            w if ["--team=", "--home=", "--as=", "--color="]
                .iter()
                .any(|p| w.starts_with(p)) => {}
            _ => return None,
        }
    }
    None
}

/// The worker's own command line, exactly as teamctl starts it (`backend::worker_args`:
/// `worker --home H --id ID`, H absolute): its home and id, so `main` can start the worker
/// without building clap's command tree (less of the binary touched in each of hundreds of
/// idle workers). It is also the worker's tag (`backend::proc::is_worker`): any other spelling
/// (a relative home, which names another place from another directory, or `--id=ID`) goes
/// through clap, which refuses to start a worker (`commands::run`).
pub fn worker_argv(args: &[std::ffi::OsString]) -> Option<(PathBuf, String)> {
    match args {
        [_, cmd, home_flag, home, id_flag, id]
            if cmd == "worker"
                && home_flag == "--home"
                && id_flag == "--id"
                && std::path::Path::new(home).is_absolute() =>
        {
            Some((PathBuf::from(home), id.to_str()?.to_string()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<std::ffi::OsString> {
        words.iter().map(|w| w.into()).collect()
    }

    #[test]
    fn the_quick_parse_gives_what_the_whole_tree_gives() {
        let cases: &[&[&str]] = &[
            &["teamctl", "send", "bob", "hi"],
            &["teamctl", "--as", "s", "send", "team-lead", "m 1"],
            &[
                "teamctl",
                "--team=t",
                "--json",
                "send",
                "*",
                "--summary",
                "x",
                "hi",
            ],
            &["teamctl", "send", "bob", "--", "-starts with a dash"],
            &["teamctl", "--home", "/h", "--color", "never", "send", "bob"],
            &[
                "teamctl",
                "send",
                "bob",
                "--structured",
                "{}",
                "--team",
                "t",
            ],
            &["teamctl", "ask", "bob", "q?", "--timeout", "5", "--raw"],
            &["teamctl", "inbox", "--all", "--peek"],
            &["teamctl", "status", "--json"],
            &["teamctl", "wait", "a", "b", "--timeout", "3"],
            &["teamctl", "hook", "stop"],
        ];
        for case in cases {
            let argv = os(case);
            let quick = quick(&argv).unwrap_or_else(|| panic!("{case:?}: no quick parse"));
            let full = Cli::try_parse_from(&argv).unwrap();
            assert_eq!(format!("{quick:?}"), format!("{full:?}"), "{case:?}");
        }
        // Anything else, and every error, help and version, takes the whole tree.
        let not_quick: &[&[&str]] = &[
            &["teamctl"],
            &["teamctl", "spawn", "bob", "--exec", "cat"],
            &["teamctl", "send"],
            &["teamctl", "send", "bob", "hi", "--structured", "{}"],
            &["teamctl", "send", "--help"],
            &["teamctl", "send", "-h"],
            &["teamctl", "send", "--version"],
            &["teamctl", "-V"],
            &["teamctl", "--team"],
            &["teamctl", "--bogus", "send", "bob", "hi"],
            &["teamctl", "wait"],
            &["teamctl", "send", "bob", "hi", "extra"],
        ];
        for case in not_quick {
            assert!(quick(&os(case)).is_none(), "{case:?}");
        }
    }

    /// A word of a generated command line: command words, global and command options, values
    /// of every kind (empty, unicode, a leading `-`, not UTF-8).
    fn word() -> impl proptest::strategy::Strategy<Value = std::ffi::OsString> {
        use proptest::prelude::*;
        let fixed = prop::sample::select(vec![
            "send",
            "ask",
            "inbox",
            "status",
            "wait",
            "hook",
            "task",
            "spawn",
            "sned",
            "help",
            "--team",
            "--team=t",
            "--home",
            "--home=/h",
            "--as",
            "--as=bob",
            "--json",
            "--json=1",
            "--color",
            "--color=never",
            "--color=blue",
            "--summary",
            "--structured",
            "{}",
            "--timeout",
            "5",
            "-5",
            "--raw",
            "--all",
            "--peek",
            "--type",
            "--watch",
            "-h",
            "--help",
            "-V",
            "--version",
            "--",
            "-",
            "-x",
            "--bogus",
            "",
            " ",
            "bob",
            "*",
            "w@t",
            "é",
            "日本語",
            "-ü",
            "--summary=s",
            "--timeout=x",
            "stop",
            "--tea",
        ]);
        prop_oneof![
            4 => fixed.prop_map(std::ffi::OsString::from),
            1 => any::<String>().prop_map(std::ffi::OsString::from),
            1 => Just(std::os::unix::ffi::OsStringExt::from_vec(vec![b'a', 0xff])),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// For any command line, the quick parse gives exactly what the whole tree gives, or
        /// hands over to it (`None`), never a different result: the same command and arguments
        /// (compared through `Debug`), never a line the whole tree refuses or explains.
        #[test]
        fn the_quick_parse_agrees_with_the_whole_tree_or_hands_over(
            before in proptest::collection::vec(word(), 0..3),
            command in proptest::sample::select(vec!["send", "ask", "inbox", "status", "wait", "hook"]),
            after in proptest::collection::vec(word(), 0..6),
        ) {
            let mut argv = vec![std::ffi::OsString::from("teamctl")];
            argv.extend(before);
            argv.push(command.into());
            argv.extend(after);
            if let Some(quick) = quick(&argv) {
                let full = Cli::try_parse_from(&argv);
                proptest::prop_assert!(full.is_ok(), "{argv:?}: quick took a line the whole tree refuses: {:?}", full.err().map(|e| e.kind()));
                proptest::prop_assert_eq!(format!("{quick:?}"), format!("{:?}", full.unwrap()), "{:?}", argv);
            }
        }
    }

    #[test]
    fn only_the_workers_own_argv_skips_clap() {
        let mut argv = vec!["teamctl".to_string()];
        argv.extend(crate::backend::worker_args(
            std::path::Path::new("/h"),
            "ann@t",
        ));
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        assert_eq!(
            worker_argv(&os(&words)),
            Some((PathBuf::from("/h"), "ann@t".to_string()))
        );
        for other in [
            &["teamctl", "worker", "--id", "ann@t", "--home", "/h"][..],
            &[
                "teamctl", "worker", "--home", "/h", "--id", "ann@t", "--json",
            ],
            &["teamctl", "worker", "--home", "", "--id", "ann@t"],
            &["teamctl", "worker", "--home", "h", "--id", "ann@t"],
            &["teamctl", "send", "--home", "/h", "--id", "ann@t"],
            &["teamctl", "worker", "--home=/h", "--id", "ann@t"],
            &["teamctl"],
        ] {
            assert_eq!(worker_argv(&os(other)), None, "{other:?}");
        }
    }
}
