//! `teamctl __complete -- WORD...` (hidden): what the shell scripts in `shell/` offer where a
//! static script cannot know the answer: teammate names, task ids and team names from the
//! current team, git branches, and option values. The words are the command line after
//! `teamctl`, the one being completed last. Where it knows what the word takes it prints
//! `MARKER`, then one candidate a line (those starting with that word), and exits 0: that is
//! all there is to offer, maybe nothing (a message's text, a new name, no task left to claim),
//! and the shell offers no file names in its place. A word that takes a directory exits
//! `DIRS`, a team file `TEAM_FILES`: the shell completes those itself (it knows how to quote
//! and descend into directories). Where the static completion knows best (options,
//! subcommands, values clap lists) it prints nothing and exits 1. It never complains: a team
//! it cannot read has nothing to offer.

use clap::{CommandFactory, ValueHint};

use crate::cli::{Cli, CompleteArgs};
use crate::context::Ctx;
use crate::domain::Name;
use crate::error::Result;
use crate::store::Home;

/// What a word position takes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Want {
    /// Every member, the leader too (senders and recipients).
    Members,
    /// Teammates only.
    Teammates,
    /// Teammates but those already named on the line (`kill a b`, `wait`, `shutdown`...).
    MoreTeammates(Vec<String>),
    /// Teammates `resume` would start: those not running (`MoreTeammates` too).
    Resumable(Vec<String>),
    /// Teammates running now, those already named left out (`kill`, `interrupt`, `shutdown`:
    /// new-user QA 47, stopped ones were offered).
    Running(Vec<String>),
    /// Teammates `shutdown --remove-worktree` acts on: those running, and stopped ones whose
    /// worktree is there (new-user QA 48: every stopped one was offered).
    Trees(Vec<String>),
    /// Teammates running in tmux panes (`attach`: new-user QA 47 and 48, a process teammate
    /// and stopped ones were offered).
    InPanes,
    /// `send`'s recipient: every member or `*`.
    Recipients,
    Tasks,
    /// Tasks not finished (`task done`).
    OpenTasks,
    /// Tasks the one claiming could claim (`task claim`): pending, not blocked, nobody
    /// else's.
    Claimable,
    /// Teammates waiting for the leader to answer their plan (`plan approve`, `plan reject`).
    Planners,
    Teams,
    /// `--color`'s own values: auto, always, never.
    When,
    /// `spawn --color`: those and the teammate colours.
    Colors,
    Kinds,
    /// The local branches of the git repository the teammate's worktree comes from
    /// (`spawn --worktree`).
    Branches,
    /// A fixed list clap has and a static script may lack (fish offers no positional's
    /// values, nor `help`'s subcommands).
    Listed(Vec<String>),
    /// A directory (`spawn --cwd`, `--home`): the shell's own directory completion.
    Dirs,
    /// A team file (`up`, `down`): `*.toml` files and directories, the shell's own.
    TeamFiles,
    /// Free text (a message, a question, a new name) or no argument at all: nothing to offer.
    Nothing,
}

/// How long an answer may take (`run`).
const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The exit code that leaves the word to the static completion.
const NOT_HERE: i32 = 1;
/// The exit code that asks the shell for directories (`Want::Dirs`).
const DIRS: i32 = 3;
/// The exit code that asks the shell for team files and directories (`Want::TeamFiles`).
const TEAM_FILES: i32 = 4;

/// The first line of an answer (exit 0): the scripts take an exit 0 without it for an older
/// `teamctl`, whose `__complete` exited 0 for every word, and complete statically then. No
/// candidate can be it (names, ids and branches hold no space).
pub const MARKER: &str = "#teamctl-complete 1";

#[allow(
    clippy::unnecessary_wraps,
    reason = "every command's run has the dispatcher's signature"
)]
pub fn run(ctx: &Ctx, args: &CompleteArgs) -> Result<()> {
    let Some((current, before)) = args.words.split_last() else {
        std::process::exit(NOT_HERE);
    };
    // A Tab never hangs the shell: an answer not found in `WAIT` (a stopped tmux server asked
    // whether teammates run: attacker QA 48; git meets its own limit in `branches`) leaves the
    // word to the static completion. Nothing is printed before the answer is whole.
    std::thread::spawn(|| {
        std::thread::sleep(WAIT);
        std::process::exit(NOT_HERE);
    });
    // `--opt=VALUE` as one word (zsh; bash without `=` in COMP_WORDBREAKS): VALUE completes
    // as after `--opt VALUE`, each candidate printed with `--opt=` in front, the word the
    // shell replaces. (fish asks for VALUE alone: its script splits the word.)
    let mut before = before.to_vec();
    let mut current = current.as_str();
    let mut prefix = String::new();
    if let Some((opt, value)) = current.split_once('=')
        && opt.starts_with("--")
        && !before.iter().any(|w| w == "--")
    {
        before.push(opt.to_string());
        prefix = current[..=opt.len()].to_string();
        current = value;
    } else if current == "="
        && before.last().is_some_and(|w| w.starts_with("--"))
        && !before.iter().any(|w| w == "--")
    {
        // bash splits `--opt=` at `=` (COMP_WORDBREAKS): its `COMP_WORDS` end with the word
        // `=` until a letter follows, but readline inserts what it is given after the `=`
        // (QA: `--as=<Tab>` listed files; new-user QA 45: `=` in front made `--team==alpha`):
        // every value, as after `--opt `.
        current = "";
    }
    // `--blocked-by 1,2,<Tab>`: a list, whose last id completes, after those given (new-user
    // QA 47: nothing was offered after a comma).
    let mut listed: Vec<&str> = Vec::new();
    let valued = before.iter().rev().find(|w| *w != "=").map(String::as_str);
    if valued == Some("--blocked-by")
        && let Some((done, last)) = current.rsplit_once(',')
    {
        listed = done.split(',').collect();
        prefix.push_str(&current[..=done.len()]);
        current = last;
    }
    // Nothing is printed before an exit: nothing is lost by not flushing.
    let want = match wanted(&before, current) {
        None => std::process::exit(NOT_HERE),
        Some(Want::Dirs) => std::process::exit(DIRS),
        Some(Want::TeamFiles) => std::process::exit(TEAM_FILES),
        Some(want) => want,
    };
    let mut found = candidates(ctx, &before, want);
    found.retain(|c| c.starts_with(current) && !listed.contains(&c.as_str()));
    found.dedup();
    let mut answer = MARKER.to_string();
    for c in found {
        answer.push('\n');
        answer.push_str(&prefix);
        answer.push_str(&c);
    }
    crate::outln!("{answer}");
    Ok(())
}

/// What the word after `before` takes, when it is something only the team knows, a fixed list
/// clap cannot offer, or nothing at all (free text); `None` leaves it to the static completion.
fn wanted(before: &[String], current: &str) -> Option<Want> {
    // Every command's arguments, not only the running one's (`Command` defers them).
    let mut root = Cli::command();
    root.build();
    let mut cmd = &root;
    // The subcommands and positional words typed so far.
    let mut path: Vec<&str> = Vec::new();
    let mut given: Vec<String> = Vec::new();
    let mut i = 0;
    let mut after_dashes = false;
    while i < before.len() {
        let w = before[i].as_str();
        i += 1;
        if !after_dashes && w == "--" {
            after_dashes = true;
            continue;
        }
        if !after_dashes && w.starts_with('-') && w.len() > 1 {
            if w.contains('=') {
                continue;
            }
            if takes_value(&root, cmd, w) {
                // bash splits `--opt=VALUE` at `=` (COMP_WORDBREAKS): `--opt`, `=`, `VALUE`.
                if before.get(i).is_some_and(|n| n == "=") {
                    i += 1;
                }
                if i == before.len() {
                    // `current` is this option's value.
                    return value_of(w, &path, find_arg(&root, cmd, w));
                }
                i += 1;
            }
            continue;
        }
        match cmd.find_subcommand(w) {
            Some(sub) if given.is_empty() && !after_dashes => {
                cmd = sub;
                path.push(w);
            }
            _ => given.push(w.to_string()),
        }
    }
    if current.starts_with('-') && !after_dashes {
        return None;
    }
    let positionals = given.len();
    let team = match (path.as_slice(), positionals) {
        (["send"], 0) => Some(Want::Recipients),
        (["inbox"], 0) => Some(Want::Members),
        (["ask"], 0) => Some(Want::Teammates),
        (["attach"], 0) => Some(Want::InPanes),
        // `--all` names every one: no name is taken beside it (new-user QA 47).
        (["wait" | "shutdown"], _) if before.iter().any(|w| w == "--all") => Some(Want::Nothing),
        // A stopped teammate's worktree is removed by a `shutdown` of it.
        (["shutdown"], _) if before.iter().any(|w| w == "--remove-worktree") => {
            Some(Want::Trees(given))
        }
        // Each name once (QA: `kill bob <Tab>` offered bob again); only those running where
        // that is all the command acts on.
        (["wait"], _) => Some(Want::MoreTeammates(given)),
        (["kill" | "shutdown" | "interrupt"], _) => Some(Want::Running(given)),
        (["resume"], _) => Some(Want::Resumable(given)),
        (["plan", "approve" | "reject"], 0) => Some(Want::Planners),
        (["task", "show" | "update"], 0) => Some(Want::Tasks),
        (["task", "done"], 0) => Some(Want::OpenTasks),
        (["task", "claim"], 0) => Some(Want::Claimable),
        // `up FILE`, `down FILE`: a team file (QA: every file was offered).
        (["up" | "down"], 0) => Some(Want::TeamFiles),
        _ => None,
    };
    if team.is_some() {
        return team;
    }
    // `help COMMAND...`: the subcommands of the one named so far (fish had no entry for
    // them, and offered file names).
    if path.contains(&"help") {
        return Some(Want::Listed(
            cmd.get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name().to_string())
                .collect(),
        ));
    }
    // A subcommand's name, or an unknown one's words: the static completion's.
    if cmd.has_subcommands() {
        return None;
    }
    match positional(cmd, positionals) {
        // A fixed list (`completions SHELL`): clap's, which fish's script lacks (QA: it
        // offered file names).
        Some(arg) if !arg.get_possible_values().is_empty() => Some(Want::Listed(
            arg.get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect(),
        )),
        Some(arg) if arg.get_value_hint() == ValueHint::DirPath => Some(Want::Dirs),
        Some(arg)
            if matches!(
                arg.get_value_hint(),
                ValueHint::AnyPath | ValueHint::FilePath
            ) =>
        {
            None
        }
        // Free text (`send NAME TEXT`), a new name (`spawn NAME`), or no argument left
        // (`status`): nothing, where bash put a lone `-` (every option's common start) and zsh
        // and fish the directory's files (new-user QA).
        _ => Some(Want::Nothing),
    }
}

/// The positional argument the `index`th positional word of `cmd` fills: the last one again
/// when it takes many (`kill A B`), `None` past the end.
fn positional(cmd: &clap::Command, index: usize) -> Option<&clap::Arg> {
    let mut args: Vec<&clap::Arg> = cmd.get_positionals().collect();
    args.sort_by_key(|a| a.get_index());
    match args.get(index) {
        Some(arg) => Some(arg),
        None => args
            .last()
            .copied()
            .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1)),
    }
}

/// Option `w` of subcommand `cmd` (global options included).
fn find_arg<'c>(root: &'c clap::Command, cmd: &'c clap::Command, w: &str) -> Option<&'c clap::Arg> {
    let matches = |a: &clap::Arg| match w.strip_prefix("--") {
        Some(long) => a.get_long() == Some(long),
        None => w.len() == 2 && a.get_short().is_some_and(|s| w.ends_with(s)),
    };
    cmd.get_arguments()
        .chain(root.get_arguments())
        .find(|a| matches(a))
}

/// Does option `w` take a value, for subcommand `cmd` (global options included)?
fn takes_value(root: &clap::Command, cmd: &clap::Command, w: &str) -> bool {
    find_arg(root, cmd, w).is_some_and(|a| a.get_action().takes_values())
}

/// The options whose values `value_of` knows from the team (or a fixed list clap does not
/// have): the fish script completes them from `__complete` alone, never from file names
/// (`completions.rs`).
pub const TEAM_VALUES: &[&str] = &[
    "--team",
    "--as",
    "--from",
    "--to",
    "--owner",
    "--worker",
    "--blocked-by",
    "--type",
    "--color",
];

/// What the value of option `opt` (`arg`, when known) takes.
fn value_of(opt: &str, path: &[&str], arg: Option<&clap::Arg>) -> Option<Want> {
    match opt {
        "--team" => Some(Want::Teams),
        // `--owner`: the leader may own a task too (new-user QA 47).
        "--as" | "--from" | "--to" | "--owner" => Some(Want::Members),
        // A teammate's own log: the leader runs no worker, so has none.
        "--worker" if matches!(path, ["log"]) => Some(Want::Teammates),
        "--blocked-by" => Some(Want::Tasks),
        // A colour name is the new teammate's with `spawn` only (`Ctx::new`); elsewhere
        // `--color` takes auto, always or never (QA: it offered red, blue...).
        "--color" if matches!(path, ["spawn"]) => Some(Want::Colors),
        "--color" => Some(Want::When),
        "--type" if matches!(path, ["log" | "inbox"]) => Some(Want::Kinds),
        "--worktree" if matches!(path, ["spawn"]) => Some(Want::Branches),
        _ => match arg {
            // clap's list (`--backend`, `--agent`): the static completion's.
            Some(a) if !a.get_possible_values().is_empty() => None,
            Some(a) if a.get_value_hint() == ValueHint::DirPath => Some(Want::Dirs),
            Some(a) if matches!(a.get_value_hint(), ValueHint::AnyPath | ValueHint::FilePath) => {
                None
            }
            // Free text, a number, a command (`--summary`, `--timeout`, `--exec`): nothing,
            // not file names (QA).
            Some(_) => Some(Want::Nothing),
            None => None,
        },
    }
}

/// The local branches of the git repository `dir` (default: the current directory) is in,
/// as `spawn --worktree` would take them (none checked out already); none outside a
/// repository. git is run directly, no
/// shell. Only names of plain characters are offered: git allows `$(...)`, `;` and quotes in
/// a branch name, and bash puts a candidate on the command line as it is, where Enter would
/// run it (attacker QA 47: a branch `feat$(touch${IFS}/tmp/P)` a teammate made). A git that
/// has not answered in `GIT_WAIT` is killed and offers nothing (attacker QA 47: a repository
/// config's `include.path` naming a FIFO hung Tab until Ctrl-C).
fn branches(dir: Option<&str>) -> Vec<String> {
    const GIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
    let dir = dir.map_or_else(|| std::path::PathBuf::from("."), typed_path);
    // A branch checked out in a worktree is left out: git checks out a branch in one
    // worktree only, so `spawn --worktree` refuses it (new-user QA 47).
    crate::worktree::free_branches(&dir, GIT_WAIT)
        .unwrap_or_default()
        .lines()
        // Never one that reads as an option: `--exec=/tmp/x` on the line is spawn's `--exec`
        // (attacker QA 48: a branch so named made the teammate's agent; git takes no branch
        // name starting with `-` anyway).
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-/@+,=%:".contains(c))
        })
        .map(String::from)
        .collect()
}

/// A directory as it was typed on the command line, before the shell expands it: one layer
/// of quotes taken off, and a leading `~` (alone or before `/`) read as `$HOME`, a leading
/// `$NAME` or `${NAME}` as that variable, as the shell will when the command runs (new-user
/// QA 47 and 48: `--cwd ~/repo`, then `--cwd $HOME/repo`, offered no branch).
fn typed_path(word: &str) -> std::path::PathBuf {
    let word = ['\'', '"']
        .iter()
        .find_map(|q| {
            let inner = word.strip_prefix(*q)?;
            Some(inner.strip_suffix(*q).unwrap_or(inner))
        })
        .unwrap_or(word);
    if let Some(rest) = word.strip_prefix('$') {
        let (var, tail) = match rest.strip_prefix('{') {
            Some(braced) => braced.split_once('}').unwrap_or((braced, "")),
            None => rest.split_at(
                rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .unwrap_or(rest.len()),
            ),
        };
        if let Some(value) = std::env::var_os(var).filter(|_| !var.is_empty()) {
            let mut path = value;
            path.push(tail);
            return path.into();
        }
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match (word.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            let mut path = std::path::PathBuf::from(home);
            path.push(rest.trim_start_matches('/'));
            path
        }
        _ => std::path::PathBuf::from(word),
    }
}

/// The value of `--home` / `--team` (or another option) in the words, if given there.
fn option_in(before: &[String], long: &str) -> Option<String> {
    let eq = format!("{long}=");
    let mut found = None;
    let mut words = before.iter().take_while(|w| *w != "--");
    while let Some(w) = words.next() {
        if w == long {
            // `--team = alpha`: bash's words for `--team=alpha`.
            found = words.next().cloned();
            if found.as_deref() == Some("=") {
                found = words.next().cloned();
            }
        } else if let Some(v) = w.strip_prefix(&eq) {
            found = Some(v.to_string());
        }
    }
    found
}

fn candidates(ctx: &Ctx, before: &[String], want: Want) -> Vec<String> {
    match want {
        Want::Listed(values) => return values,
        Want::Branches => return branches(option_in(before, "--cwd").as_deref()),
        Want::When | Want::Colors => {
            let when = crate::cli::COLOR_WHEN.iter();
            let colors = crate::domain::member::COLORS
                .iter()
                .filter(|_| want == Want::Colors);
            return when.chain(colors).map(|c| c.to_string()).collect();
        }
        Want::Nothing | Want::Dirs | Want::TeamFiles => return Vec::new(),
        Want::Kinds => {
            return crate::commands::log::KINDS
                .iter()
                .map(|k| k.to_string())
                .collect();
        }
        _ => {}
    }
    let home = match option_in(before, "--home") {
        Some(h) => Home::new(crate::context::home_root(h.into())),
        None => ctx.home.clone(),
    };
    if want == Want::Teams {
        return home.teams().iter().map(|t| t.to_string()).collect();
    }
    let team = option_in(before, "--team").or_else(|| ctx.team.clone());
    let Ok(store) = home.resolve(team.as_deref()) else {
        return Vec::new();
    };
    if matches!(want, Want::Tasks | Want::OpenTasks | Want::Claimable) {
        let Ok(list) = store.load_tasks() else {
            return Vec::new();
        };
        // Who claims: `--as` on the line, else as the command would run.
        let me = option_in(before, "--as")
            .and_then(|a| Name::parse(&a).ok())
            .or_else(|| ctx.me().ok());
        // As `TaskList::claim` with an id takes it (QA: tasks in progress under another
        // teammate were offered).
        let claimable = |t: &crate::domain::task::Task| {
            t.status == crate::domain::task::TaskStatus::Pending
                && t.owner.as_ref().is_none_or(|o| Some(o) == me.as_ref())
                && !list.is_blocked(t)
        };
        return list
            .tasks
            .iter()
            .filter(|t| match want {
                Want::OpenTasks => !t.status.is_finished(),
                Want::Claimable => claimable(t),
                _ => true,
            })
            .map(|t| t.id.to_string())
            .collect();
    }
    let Ok(config) = store.load() else {
        return Vec::new();
    };
    let teammates_only = matches!(
        want,
        Want::Teammates
            | Want::Planners
            | Want::MoreTeammates(_)
            | Want::Resumable(_)
            | Want::Running(_)
            | Want::Trees(_)
            | Want::InPanes
    );
    // Running or not, as `resume` judges it (one look at every pane).
    let seen = match want {
        Want::Resumable(_) | Want::Running(_) | Want::Trees(_) | Want::InPanes => Some(
            crate::backend::Snapshot::of(config.members.iter().filter(|m| !m.name.is_leader())),
        ),
        _ => None,
    };
    let runs = |m: &crate::domain::Member| {
        let Some(seen) = &seen else { return true };
        let live = store.live(&m.name).ok().flatten();
        let status = crate::leader::effective_status_with(&*store, m, live.as_ref(), seen);
        status.is_running() && !crate::leader::cut_short(m, status)
    };
    let named = match &want {
        Want::MoreTeammates(given)
        | Want::Resumable(given)
        | Want::Running(given)
        | Want::Trees(given) => given.as_slice(),
        _ => &[],
    };
    let mut names: Vec<String> = config
        .members
        .iter()
        .filter(|m| !teammates_only || !m.name.is_leader())
        .filter(|m| !named.iter().any(|n| n == m.name.as_str()))
        .filter(|m| match want {
            Want::Resumable(_) => !runs(m),
            Want::Running(_) => runs(m),
            // A tree removed already has nothing left to remove (new-user QA 48).
            Want::Trees(_) => {
                m.worktree
                    .as_ref()
                    .is_some_and(|w| std::path::Path::new(w).symlink_metadata().is_ok())
                    || runs(m)
            }
            Want::InPanes => m.backend_type == Some(crate::domain::BackendType::Tmux) && runs(m),
            _ => true,
        })
        .filter(|m| {
            want != Want::Planners
                || store
                    .live(&m.name)
                    .ok()
                    .flatten()
                    .is_some_and(|l| l.status == crate::domain::Status::AwaitingPlanApproval)
        })
        .map(|m| m.name.to_string())
        .collect();
    if want == Want::Recipients {
        names.push("*".into());
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(line: &str) -> Option<Want> {
        let mut words: Vec<String> = line.split(' ').map(String::from).collect();
        let current = words.pop().unwrap_or_default();
        wanted(&words, &current)
    }

    fn given(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn shells() -> Vec<String> {
        given(&["bash", "elvish", "fish", "powershell", "zsh"])
    }

    #[test]
    fn a_typed_directory_is_read_as_the_shell_will_read_it() {
        use std::path::PathBuf;
        assert_eq!(typed_path("'my repo'"), PathBuf::from("my repo"));
        assert_eq!(typed_path("\"/x y"), PathBuf::from("/x y"));
        assert_eq!(typed_path("~other/x"), PathBuf::from("~other/x"));
        assert_eq!(typed_path("a/~"), PathBuf::from("a/~"));
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            assert_eq!(typed_path("~/r"), PathBuf::from(&home).join("r"));
            assert_eq!(typed_path("'~'"), PathBuf::from(&home));
            assert_eq!(typed_path("$HOME/r"), PathBuf::from(&home).join("r"));
            assert_eq!(typed_path("\"${HOME}/r\""), PathBuf::from(&home).join("r"));
        }
        assert_eq!(
            typed_path("$TEAMCTL_SURELY_UNSET_VAR/r"),
            PathBuf::from("$TEAMCTL_SURELY_UNSET_VAR/r")
        );
    }

    #[test]
    fn paths_branches_help_and_free_text_values() {
        // A team file, a directory, the repository's branches: asked of the shell or git,
        // never every file (QA).
        assert_eq!(want("up "), Some(Want::TeamFiles));
        assert_eq!(want("down t"), Some(Want::TeamFiles));
        assert_eq!(want("up x "), Some(Want::Nothing));
        assert_eq!(want("spawn x --cwd "), Some(Want::Dirs));
        assert_eq!(want("spawn x --cwd = "), Some(Want::Dirs));
        assert_eq!(want("spawn x --worktree "), Some(Want::Branches));
        assert_eq!(want("spawn x --worktree ma"), Some(Want::Branches));
        // clap's own values: positionals' listed here (fish's script has none of them).
        assert_eq!(want("completions "), Some(Want::Listed(shells())));
        assert_eq!(
            want("shutdown-response "),
            Some(Want::Listed(given(&["approve", "reject"])))
        );
        assert_eq!(want("spawn x --backend "), None);
        // `help`: the subcommands, hidden ones left out.
        let Some(Want::Listed(top)) = want("help ") else {
            panic!("help offers no subcommands");
        };
        assert!(top.iter().any(|c| c == "send") && top.iter().any(|c| c == "task"));
        assert!(
            !top.iter().any(|c| c == "worker" || c == "__complete"),
            "{top:?}"
        );
        let Some(Want::Listed(task)) = want("help task ") else {
            panic!("help task offers no subcommands");
        };
        assert!(task.iter().any(|c| c == "claim"), "{task:?}");
        // Free text, numbers, commands: nothing (QA: `--summary <Tab>` offered files).
        for line in [
            "send bob --summary ",
            "send bob --summary = ",
            "ask bob --timeout ",
            "spawn x --exec ",
            "shutdown --reason ",
            "plan reject bob --feedback ",
            "task done 1 --result ",
            "log -n ",
            "create t -d ",
        ] {
            assert_eq!(want(line), Some(Want::Nothing), "{line}");
        }
    }

    #[test]
    fn positions_that_take_names_ids_and_values() {
        assert_eq!(want("send "), Some(Want::Recipients));
        assert_eq!(want("--team t send b"), Some(Want::Recipients));
        // Free text, a new name, no argument left: nothing (not the static completion's
        // options or file names).
        assert_eq!(want("send bob "), Some(Want::Nothing));
        assert_eq!(want("send bob hello "), Some(Want::Nothing));
        assert_eq!(want("send bob -- -"), Some(Want::Nothing));
        assert_eq!(want("send bob -"), None);
        assert_eq!(want("ask bob "), Some(Want::Nothing));
        assert_eq!(want("spawn x -- "), Some(Want::Nothing));
        assert_eq!(want("status "), Some(Want::Nothing));
        assert_eq!(want("attach a "), Some(Want::Nothing));
        assert_eq!(want("task add "), Some(Want::Nothing));
        // File names, clap's own values, subcommands: the static completion's.
        assert_eq!(want("completions z"), Some(Want::Listed(shells())));
        assert_eq!(want("task "), None);
        assert_eq!(want("task "), None);
        assert_eq!(want("nosuch "), None);
        assert_eq!(want("kill "), Some(Want::Running(vec![])));
        assert_eq!(want("shutdown --reason why "), Some(Want::Running(vec![])));
        assert_eq!(
            want("shutdown --remove-worktree "),
            Some(Want::Trees(vec![]))
        );
        assert_eq!(want("shutdown --all "), Some(Want::Nothing));
        assert_eq!(want("wait --all "), Some(Want::Nothing));
        assert_eq!(want("attach "), Some(Want::InPanes));
        assert_eq!(
            want("wait a b "),
            Some(Want::MoreTeammates(given(&["a", "b"])))
        );
        assert_eq!(want("kill a b "), Some(Want::Running(given(&["a", "b"]))));
        assert_eq!(
            want("shutdown a --reason why "),
            Some(Want::Running(given(&["a"])))
        );
        assert_eq!(want("interrupt a "), Some(Want::Running(given(&["a"]))));
        assert_eq!(want("resume a "), Some(Want::Resumable(given(&["a"]))));
        assert_eq!(want("plan approve "), Some(Want::Planners));
        assert_eq!(want("plan "), None);
        assert_eq!(want("task done "), Some(Want::OpenTasks));
        assert_eq!(want("task claim "), Some(Want::Claimable));
        assert_eq!(want("task show "), Some(Want::Tasks));
        assert_eq!(want("task add x --blocked-by "), Some(Want::Tasks));
        assert_eq!(want("task update 1 --owner "), Some(Want::Members));
        assert_eq!(want("log --from "), Some(Want::Members));
        assert_eq!(want("log --type "), Some(Want::Kinds));
        assert_eq!(want("log --worker "), Some(Want::Teammates));
        assert_eq!(want("log -f --worker b"), Some(Want::Teammates));
        assert_eq!(want("--color "), Some(Want::When));
        assert_eq!(want("status --color "), Some(Want::When));
        assert_eq!(want("spawn x --color "), Some(Want::Colors));
        assert_eq!(want("--color = "), Some(Want::When));
        assert_eq!(want("status --team "), Some(Want::Teams));
        assert_eq!(want("kill --"), None);
        assert_eq!(want("--home "), Some(Want::Dirs));
        assert_eq!(want(""), None);
        assert_eq!(want("spawn "), Some(Want::Nothing));
        // bash's words for `--opt=VALUE`: `--opt`, `=`, `VALUE`.
        assert_eq!(want("send --team = "), Some(Want::Teams));
        assert_eq!(want("send --team = al"), Some(Want::Teams));
        assert_eq!(want("--team = alpha send "), Some(Want::Recipients));
        assert_eq!(want("log --type = "), Some(Want::Kinds));
    }

    #[test]
    fn the_team_is_read_from_either_spelling() {
        let words = |line: &str| -> Vec<String> { line.split(' ').map(String::from).collect() };
        for line in [
            "--team alpha send",
            "--team=alpha send",
            "--team = alpha send",
        ] {
            assert_eq!(
                option_in(&words(line), "--team").as_deref(),
                Some("alpha"),
                "{line}"
            );
        }
    }

    #[test]
    fn every_option_the_fish_script_leaves_to_complete_has_values_here() {
        for opt in TEAM_VALUES {
            assert!(
                value_of(opt, &["log"], None).is_some(),
                "{opt} is completed by __complete alone in fish, which offers nothing for it"
            );
        }
        // Every option taking a value clap has no list or path for: its value is answered
        // here (fish's script completes such an option's value from `__complete` alone,
        // `completions::fish_values`).
        let mut root = Cli::command();
        root.build();
        let mut todo = vec![(&root, Vec::<&str>::new())];
        while let Some((cmd, path)) = todo.pop() {
            for arg in cmd
                .get_arguments()
                .filter(|a| a.get_action().takes_values())
            {
                let Some(long) = arg.get_long() else { continue };
                let listed = !arg.get_possible_values().is_empty()
                    || matches!(
                        arg.get_value_hint(),
                        ValueHint::AnyPath | ValueHint::FilePath
                    );
                let opt = format!("--{long}");
                assert_eq!(
                    value_of(&opt, &path, Some(arg)).is_some(),
                    !listed,
                    "{path:?} {opt}"
                );
            }
            for sub in cmd.get_subcommands() {
                let mut p = path.clone();
                p.push(sub.get_name());
                todo.push((sub, p));
            }
        }
    }
}
