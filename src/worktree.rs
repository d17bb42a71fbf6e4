//! Git worktrees for teammates (`spawn --worktree [BRANCH]`): each one under the team
//! directory (`teams/TEAM/worktrees/NAME`), on its own branch (`teamctl/NAME@TEAM` by default). git
//! runs with argument vectors only, never through a shell, and never through a symbolic link
//! found there: a link is not a worktree teamctl made, so a removal unlinks the link itself
//! (and says so) and leaves what it points at alone; a resume refuses it. The branch a
//! worktree has checked out now (`head`, for `status`) is read from git's own files with no
//! git run and no link followed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::domain::{Member, Name};
use crate::error::{Error, Result};
use crate::store::fsutil::{self, Link};

/// A worktree to make for a new teammate, decided before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The main repository's top level.
    pub repo: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The teammate's cwd inside the worktree (the same subdirectory as the given cwd).
    pub cwd: PathBuf,
    /// The branch exists already and is not at HEAD: what to say of it (new-user QA 43: a
    /// teammate spawned again after `delete`, which keeps branches, silently got the old
    /// teammate's commit, not the repository's HEAD).
    pub reused: Option<String>,
}

/// git in `dir`, for a look: it fetches nothing, lazily or otherwise (attacker QA 44: a
/// teammate's promisor remote, written into the repository's shared config, ran its
/// `uploadpack` from a plain `doctor` when git missed an object). Only `add` may fetch
/// (`fetching`): a partial clone's checkout needs it.
fn git(dir: &Path) -> Command {
    let mut c = fetching(dir);
    c.env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_GRAFT_FILE", "/dev/null")
        .args(["-c", "protocol.allow=never"]);
    c
}

/// git in `dir` as the user's repository has it run (for `worktree add`), but for hooks and
/// the fsmonitor: a teammate can write them into the repository's shared config, and
/// `worktree add` ran its `post-checkout` hook, and the `reset` it runs its fsmonitor, as the
/// leader (attacker QA 48, from `resume` of a teammate whose worktree was removed).
fn fetching(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    c.env_remove("GIT_DIR").env_remove("GIT_WORK_TREE");
    c.args([
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
    ]);
    c
}

/// `branch` as a branch name git takes, never an option (attacker QA 44: a `worktreeBranch`
/// of `-Bfeature` written into the team file was passed to `git worktree add` as an option,
/// and reset the user's branch `feature`).
fn valid_branch(repo: &Path, branch: &str) -> bool {
    let mut c = git(repo);
    c.args(["check-ref-format", "--branch", branch]);
    !branch.starts_with('-') && run(c, "check the branch name").is_ok()
}

/// How long a git run may take before it is killed and taken as failed ("cannot check"
/// where it looked): a FIFO a teammate names in the repository's config (`include.path`) or
/// puts at its worktree's index hung `doctor`, `delete`, `shutdown --remove-worktree`, and
/// `delete --force` past SIGTERM (attacker QA 48). A removal of a large tree gets longer, a
/// checkout of one (`worktree add`) longer still.
/// What a git given up on is said to have done (`run_within`).
const NO_ANSWER: &str = "no answer in";
const LOOK_WAIT: std::time::Duration = std::time::Duration::from_mins(1);
const REMOVE_WAIT: std::time::Duration = std::time::Duration::from_mins(3);
const ADD_WAIT: std::time::Duration = std::time::Duration::from_mins(10);

fn run(cmd: Command, what: &str) -> Result<String> {
    run_within(cmd, None, what, LOOK_WAIT)
}

/// `run` with `input` written to git's standard input.
fn run_fed(cmd: Command, input: &str, what: &str) -> Result<String> {
    run_within(cmd, Some(input), what, LOOK_WAIT)
}

/// Run git, `input` (if any) written to it, for at most `limit`; a caught signal (where the
/// command catches them: `signals::catch`) ends the wait too. git is killed then, and when
/// teamctl ends (by a signal it does not catch) it goes too (`PR_SET_PDEATHSIG`).
fn run_within(
    mut cmd: Command,
    input: Option<&str>,
    what: &str,
    limit: std::time::Duration,
) -> Result<String> {
    use std::io::{Read as _, Write as _};
    use std::os::unix::process::CommandExt as _;
    use std::process::Stdio;
    let cannot = |e| Error::io_while(format!("cannot run git to {what}"), e);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // In a group of its own, killed whole: git's own children (the `reset` of a `worktree
    // add`, a filter it runs) end with it (attacker QA 48: they ran on, writing the tree).
    cmd.process_group(0);
    // SAFETY: runs between `fork` and `exec`; prctl is async-signal-safe. The thread that
    // forks waits for git below, so git is not ended by that thread's end.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = cmd.spawn().map_err(cannot)?;
    // Written and read on threads of their own, so that neither blocks the other, nor the
    // wait: a git that hangs leaves them to end with it.
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let input = input.to_owned();
        std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
    }
    let (mut stdout, mut stderr) = (
        child.stdout.take().expect("stdout is piped"),
        child.stderr.take().expect("stderr is piped"),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let read = tx.clone();
    std::thread::spawn(move || {
        let errors = std::thread::spawn(move || {
            let mut e = Vec::new();
            let _ = stderr.read_to_end(&mut e);
            e
        });
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        let _ = read.send(Some((out, errors.join().unwrap_or_default())));
    });
    let bell: crate::signals::Bell = std::sync::Arc::new(move || {
        let _ = tx.send(None);
    });
    let _ringing = crate::signals::ring_on(&bell);
    let why = match rx.recv_timeout(limit) {
        Ok(Some((stdout, stderr))) => {
            let status = child.wait().map_err(cannot)?;
            return answer(
                &std::process::Output {
                    status,
                    stdout,
                    stderr,
                },
                what,
            );
        }
        Ok(None) => crate::signals::caught().map_or_else(
            || Error::failed(format!("git could not {what}: interrupted")),
            |signal| crate::signals::interrupted(signal, format!("git was running to {what}")),
        ),
        Err(_) => Error::failed(format!(
            "git could not {what}: {NO_ANSWER} {} s (a FIFO in its config or at its index?)",
            limit.as_secs()
        )),
    };
    // Not reaped yet, so the group is still git's own: nothing else is reached.
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(why)
}

/// What git answered: its output, trimmed, or why it failed.
fn answer(out: &std::process::Output, what: &str) -> Result<String> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        // On one line, escapes made visible: a worktree's lock reason, which its teammate
        // writes, came through with its newlines and forged lines of teamctl's (attacker QA
        // 47).
        Err(Error::failed(format!(
            "git could not {what}: {}",
            crate::output::printable_line(String::from_utf8_lossy(&out.stderr).trim(), 4096)
        )))
    }
}

/// The local branches of the repository `dir` is in that no worktree has checked out, one a
/// line, as git spells them (`None`: not a repository, or git gave no answer within
/// `within`). For completion, which filters them.
pub fn free_branches(dir: &Path, within: std::time::Duration) -> Option<String> {
    let mut c = git(dir);
    c.args([
        "for-each-ref",
        "--format=%(if)%(worktreepath)%(then)%(else)%(refname:short)%(end)",
        "refs/heads",
    ]);
    run_within(c, None, "list the branches", within).ok()
}

/// The top level of the git repository that contains `dir`, if any.
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    repo_root_or_why(dir).ok()
}

/// `repo_root`, or git's reason when it found none (a git that did not answer, say).
fn repo_root_or_why(dir: &Path) -> Result<PathBuf> {
    let mut c = git(dir);
    c.args(["rev-parse", "--show-toplevel"]);
    run(c, "find the repository").map(PathBuf::from)
}

/// The main repository of the worktree at `dir` (through its common git dir).
pub fn main_repo(dir: &Path) -> Option<PathBuf> {
    let mut c = git(dir);
    c.args(["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    let common = PathBuf::from(run(c, "find the repository").ok()?);
    common.parent().map(Path::to_path_buf)
}

/// The branch a teammate's worktree gets when none is given: named by its id, so teams (and
/// homes) working on one repository each get their own (new-user QA 44: a second team's `dev`
/// was refused, `teamctl/dev` being checked out by the first's, and one team's `delete` hint
/// deleted the other's branch).
pub fn default_branch(name: &Name, team: &str) -> String {
    format!("teamctl/{name}@{team}")
}

/// `branch` is one teamctl named for `name` of `team`: the default, or `teamctl/NAME` as
/// teamctl named them before.
pub fn named_by_teamctl(branch: &str, name: &Name, team: &str) -> bool {
    branch == default_branch(name, team) || branch == format!("teamctl/{name}")
}

/// The branch a worktree asked for (`spawn --worktree [BRANCH]`, a team file's `worktree`;
/// empty: the default) is for a member whose worktree is on `had`: the one teamctl named
/// stands for the default, by today's name or the one it had before (`teamctl/NAME`).
pub fn declared(asked: &str, had: Option<&str>, name: &Name, team: &str) -> String {
    match had {
        Some(had) if asked.is_empty() && named_by_teamctl(had, name, team) => had.to_string(),
        _ if asked.is_empty() => default_branch(name, team),
        _ => asked.to_string(),
    }
}

/// Why git refuses `branch`, the default branch of `name` in `team`, and the way on (new-user
/// QA: a team `x.lock` was taken, then its `spawn --worktree` refused without saying why).
/// Names hold A-Z a-z 0-9 . _ - only, so the rules of `git check-ref-format` that can bite
/// are a part ending in `.lock` or `.`, and `..` anywhere.
fn default_refused(name: &Name, team: &str, branch: &str) -> String {
    // `last`: the part ends the branch name. git's `.lock` is case-sensitive.
    let rule = |part: &str, last: bool| {
        if part.contains("..") {
            Some("it may not have .. in it")
        } else if last && part.strip_suffix(".lock").is_some() {
            Some("it may not end in .lock")
        } else if last && part.ends_with('.') {
            Some("it may not end in .")
        } else {
            None
        }
    };
    let (why, or) = match (rule(team, true), rule(name.as_str(), false)) {
        (Some(why), _) => (
            format!(": {why} (from the team name {team})"),
            ", or use another team name",
        ),
        (None, Some(why)) => (
            format!(": {why} (from the name {name})"),
            ", or give the teammate another name",
        ),
        (None, None) => (String::new(), ""),
    };
    format!(
        "{name}'s worktree branch would be {branch}, which git refuses{why}; name a branch with `--worktree BRANCH` (`worktree = \"BRANCH\"` in a team file){or}"
    )
}

/// Check everything for `spawn --worktree`; writes nothing. Errors are bad input. `replacing`:
/// the member's worktree at the path is to be removed first (`up` of a member declared on
/// another branch: `replace`), so something there is not in the way.
pub fn plan(
    cwd: &Path,
    team_dir: &Path,
    name: &Name,
    team: &str,
    branch: &str,
    replacing: bool,
) -> Result<Plan> {
    let repo = repo_root_or_why(cwd).map_err(|e| {
        // Not a repository's "not found": git did not answer (attacker QA 48: a FIFO at its
        // config was said to be no repository, after a minute's wait).
        if e.to_string().contains(NO_ANSWER) {
            return e;
        }
        Error::bad(format!(
            "--worktree needs a git repository, and {} is not in one; pass --cwd DIR inside a repository, or drop --worktree",
            cwd.display()
        ))
    })?;
    let given = !branch.is_empty();
    let branch = if given {
        branch.to_string()
    } else {
        default_branch(name, team)
    };
    if !valid_branch(&repo, &branch) {
        return Err(Error::bad(if given {
            // What git's rules are, said (new-user QA 46: no reason was given).
            format!(
                "--worktree {branch:?} is not a valid branch name: git refuses `..`, spaces, ~ ^ : ? * [ \\, a leading `-`, and a `.lock` or `.` at the end (`git check-ref-format --branch` tells)"
            )
        } else {
            default_refused(name, team, &branch)
        }));
    }
    // git checks a branch out in one worktree at a time: said before anything is made, naming
    // where (new-user QA 44: a success-looking note, then git's own "already used by worktree").
    if let Some(at) = checked_out_at(&repo, &branch) {
        // A teammate's of this team keeps it: the way to free it said (new-user QA 48).
        let whose = at
            .strip_prefix(team_dir.join("worktrees"))
            .ok()
            .and_then(|rest| rest.to_str())
            .and_then(|n| Name::teammate(n).ok())
            .filter(|n| n != name)
            .map(|n| {
                format!(
                    " (teammate {n}'s worktree: `teamctl shutdown {n} --remove-worktree` frees it)"
                )
            })
            .unwrap_or_default();
        return Err(Error::bad(format!(
            "branch {branch} is checked out already, in {}{whose}; give {name} another (`--worktree NEW-BRANCH`; `worktree = \"NEW-BRANCH\"` in a team file)",
            crate::output::printable_line(&at.display().to_string(), 1024)
        )));
    }
    let path = team_dir.join("worktrees").join(name.as_str());
    // `lstat`: a link there, even one pointing nowhere, is something in the way.
    if !replacing && path.symlink_metadata().is_ok() {
        return Err(Error::bad(format!(
            "{} already exists (left over from an earlier {name}?); `teamctl doctor --fix` removes stale worktrees",
            path.display()
        )));
    }
    let rel = cwd.strip_prefix(&repo).unwrap_or(Path::new(""));
    no_cwd_in(&repo, &branch, name, rel)?;
    let reused = reused_branch(&repo, &branch, name, team);
    // The worktree itself when the cwd is the repository's top: `join("")` would add a `/`
    // (new-user QA 46: `spawn --json`'s `cwd` ended in one, its `worktree` did not).
    let cwd = if rel.as_os_str().is_empty() {
        path.clone()
    } else {
        path.join(rel)
    };
    Ok(Plan {
        repo,
        path,
        branch,
        cwd,
        reused,
    })
}

/// Refused before anything is made: the worktree would lack `rel`, the subdirectory of the
/// repository the teammate is to work in (new-user QA 43: a reused branch without it made a
/// worktree, then the start failed naming `teamctl kill` of a teammate never recorded). The
/// worktree checks out `branch` when it exists, else HEAD. Said for `spawn` and team files
/// alike (`up` takes its words).
fn no_cwd_in(repo: &Path, branch: &str, name: &Name, rel: &Path) -> Result<()> {
    if rel.as_os_str().is_empty() {
        return Ok(());
    }
    let exists = branch_exists(repo, branch);
    let rev = if exists {
        format!("refs/heads/{branch}")
    } else {
        "HEAD".to_string()
    };
    let mut c = git(repo);
    c.args(["cat-file", "-e"])
        .arg(format!("{rev}:{}", rel.display()));
    if run(c, "look in the branch").is_ok() {
        return Ok(());
    }
    let top = crate::output::shell_word(&repo.display().to_string());
    let (why, or) = if exists {
        let at = match (commit(repo, &rev), commit(repo, "HEAD")) {
            (Some(at), Some(head)) if at != head => format!(" (at {at}, not HEAD {head})"),
            _ => String::new(),
        };
        (
            format!("the existing branch {branch}{at} has none"),
            ", or on a new branch from HEAD (`--worktree NEW-BRANCH`; `worktree = \"NEW-BRANCH\"` in a team file)",
        )
    } else {
        (
            "HEAD's commit has none (not committed yet, or ignored?)".to_string(),
            "",
        )
    };
    Err(Error::bad(format!(
        "{name}'s worktree would have no {} for its working directory: {why}; work from the repository's top (`--cwd {top}`; `cwd` in a team file){or}",
        crate::output::printable_line(&rel.display().to_string(), 1024)
    )))
}

/// The worktree of `repo` (the repository's own one included) that has `branch` checked out.
fn checked_out_at(repo: &Path, branch: &str) -> Option<PathBuf> {
    let mut c = git(repo);
    c.args(["worktree", "list", "--porcelain", "-z"]);
    let out = run(c, "list the worktrees").ok()?;
    let wanted = format!("branch refs/heads/{branch}");
    let mut at = None;
    for field in out.split('\0') {
        if let Some(path) = field.strip_prefix("worktree ") {
            at = Some(PathBuf::from(path));
        } else if field == wanted {
            return at;
        }
    }
    None
}

/// The short id of the commit `rev` names.
fn commit(repo: &Path, rev: &str) -> Option<String> {
    let mut c = git(repo);
    c.args(["rev-parse", "--verify", "--quiet", "--short"])
        .arg(format!("{rev}^{{commit}}"));
    run(c, "look up a commit").ok()
}

/// `branch` exists and is not where HEAD is: what to say of it. The default branch was most
/// likely left by an earlier teammate of that name (`delete` keeps branches); one named on
/// purpose is only said to be behind (new-user QA 44).
fn reused_branch(repo: &Path, branch: &str, name: &Name, team: &str) -> Option<String> {
    let at = commit(repo, &format!("refs/heads/{branch}"))?;
    let head = commit(repo, "HEAD")?;
    if at == head {
        return None;
    }
    if named_by_teamctl(branch, name, team) {
        Some(format!(
            "{name} works on the existing branch {branch} (at {at}, not HEAD {head}: left by an earlier teammate of that name?); spawn with `--worktree NEW-BRANCH` to start from HEAD"
        ))
    } else {
        Some(format!(
            "{name} works on the existing branch {branch} (at {at}, not HEAD {head})"
        ))
    }
}

fn branch_exists(repo: &Path, branch: &str) -> bool {
    let mut c = git(repo);
    c.args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}"));
    run(c, "look up the branch").is_ok()
}

/// The branches of `members`' worktrees still in their repositories, by repository (in the
/// order met): what `delete` keeps, said so the user knows where the work went and how to
/// drop it (new-user QA 43: nothing said them). Each with whether teamctl named it
/// (`named_by_teamctl`): only those are offered for deletion (new-user QA 44: a branch of the
/// user's, named with `--worktree BRANCH`, was). A name git would not take as a branch (a
/// team file written by hand) is left out (attacker QA 44: `-D` made the hint force-delete).
pub fn branches_left<'a>(
    members: impl Iterator<Item = &'a Member>,
    team: &str,
) -> Vec<(PathBuf, Vec<(String, bool)>)> {
    let mut out: Vec<(PathBuf, Vec<(String, bool)>)> = Vec::new();
    for m in members {
        let (Some(repo), Some(branch), Some(_)) =
            (&m.worktree_repo, &m.worktree_branch, &m.worktree)
        else {
            continue;
        };
        let repo = PathBuf::from(repo);
        if !valid_branch(&repo, branch) || !branch_exists(&repo, branch) {
            continue;
        }
        let ours = named_by_teamctl(branch, &m.name, team);
        let entry = (branch.clone(), ours);
        match out.iter_mut().find(|(r, _)| *r == repo) {
            Some((_, branches)) if !branches.contains(&entry) => branches.push(entry),
            Some(_) => {}
            None => out.push((repo, vec![entry])),
        }
    }
    out
}

/// `git worktree add` on the branch, creating it from HEAD when it does not exist: `true`
/// when it did.
pub fn add(repo: &Path, path: &Path, branch: &str) -> Result<bool> {
    if let Some(parent) = path.parent() {
        crate::store::fsutil::ensure_dir(parent)?;
    }
    if !valid_branch(repo, branch) {
        return Err(Error::failed(format!(
            "{} is not a valid branch name; no worktree made at {}",
            crate::output::printable_line(branch, 256),
            path.display()
        )));
    }
    // Checked out elsewhere meanwhile (another home's teammate of the same name and team on
    // this repository, a worktree of the user's): said with where, and the way on (new-user
    // QA 45: git's raw "already used by worktree", nothing said what to do).
    if let Some(at) = checked_out_at(repo, branch) {
        return Err(Error::failed(format!(
            "branch {branch} is checked out in {} now, so no worktree was made at {}; free it there (`git -C {} switch --detach`, or end what works in it), then try again",
            crate::output::printable_line(&at.display().to_string(), 1024),
            path.display(),
            crate::output::shell_word(&at.display().to_string())
        )));
    }
    let mut c = fetching(repo);
    c.args(["worktree", "add", "--quiet"]);
    let exists = branch_exists(repo, branch);
    if exists {
        c.arg("--").arg(path).arg(branch);
    } else {
        c.arg("-b").arg(branch).arg("--").arg(path);
    }
    run_within(
        c,
        None,
        &format!("add a worktree at {}", path.display()),
        ADD_WAIT,
    )
    .map(|_| !exists)
}

/// How a teammate just started came by its worktree: what `spawn` and `up` say of it
/// (new-user QA: nothing said which path or branch a `spawn --worktree` made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    /// Made now, on a branch made from HEAD (`new_branch`) or one that existed; `replaced`:
    /// in place of its clean worktree on that branch (`up` of a member declared on another
    /// branch), removed, the branch kept.
    Made {
        new_branch: bool,
        replaced: Option<String>,
    },
    /// The one its earlier entry had (spawned anew in its place), made again when `remade`,
    /// its branch too, from HEAD, when `new_branch` (it was gone as well).
    Kept { remade: bool, new_branch: bool },
    /// None now: its clean worktree on this branch was removed (`up` of a member the file
    /// declares without one), the branch kept.
    Left { replaced: Option<String> },
}

impl Got {
    /// One line naming the member's worktree and branch.
    pub fn line(&self, member: &Member) -> String {
        let path = member.worktree.as_deref().unwrap_or("?");
        let branch =
            crate::output::printable_line(member.worktree_branch.as_deref().unwrap_or("?"), 256);
        let name = &member.name;
        let made = match self {
            Got::Made {
                new_branch: true, ..
            } => format!("made worktree {path} for {name}, on a new branch {branch}"),
            Got::Made {
                new_branch: false, ..
            } => format!("made worktree {path} for {name}, reusing the branch {branch}"),
            Got::Kept { remade: false, .. } => {
                format!("{name} reuses its worktree {path}, on branch {branch}")
            }
            // Gone (removed with `--remove-worktree`, or by hand): made again (new-user QA 46:
            // "reuses" said of one just made again).
            Got::Kept {
                remade: true,
                new_branch: false,
            } => format!("made worktree {path} for {name} again, on its branch {branch}"),
            // Its branch was gone too (deleted after `delete` said it was kept): its earlier
            // commits are not in it, said.
            Got::Kept {
                remade: true,
                new_branch: true,
            } => format!(
                "made worktree {path} for {name} again, on a new branch {branch} from HEAD (its branch was gone too)"
            ),
            Got::Left { .. } => format!(
                "{name} works in {} now, without a worktree",
                crate::output::printable_line(&member.cwd, 1024)
            ),
        };
        match self {
            Got::Made {
                replaced: Some(old),
                ..
            }
            | Got::Left {
                replaced: Some(old),
            } => format!(
                "{made}, in place of its worktree on {} (it held no uncommitted work; the branch stays)",
                crate::output::printable_line(old, 256)
            ),
            _ => made,
        }
    }

    /// What `--json` adds to the member: `worktreeCreated` (made by this start),
    /// `worktreeBranchCreated` (the branch too, from HEAD), and `worktreeReplaced` (the
    /// branch of the worktree it replaced), when it did.
    pub fn add_json(&self, v: &mut serde_json::Value) {
        let (tree, branch) = match self {
            Got::Made { new_branch, .. } => (true, *new_branch),
            Got::Kept { remade, new_branch } => (*remade, *new_branch),
            Got::Left { .. } => (false, false),
        };
        v["worktreeCreated"] = tree.into();
        v["worktreeBranchCreated"] = branch.into();
        if let Got::Made {
            replaced: Some(old),
            ..
        }
        | Got::Left {
            replaced: Some(old),
        } = self
        {
            v["worktreeReplaced"] = old.as_str().into();
        }
    }
}

/// `git worktree remove --force`.
pub fn remove(repo: &Path, path: &Path) -> Result<()> {
    let mut c = git(repo);
    c.args(["worktree", "remove", "--force"]).arg(path);
    run_within(
        c,
        None,
        &format!("remove the worktree {}", path.display()),
        REMOVE_WAIT,
    )
    .map(|_| ())
}

/// Have `repo` forget its worktree at `path`, a directory removed (by hand, or by a removal
/// cut short): that record alone, never others (`git worktree prune` would forget the
/// user's own worktrees on a drive not mounted). Nothing said when git cannot.
/// Have git forget the worktree at `path`, gone already, unless its record (`REPO/.git/
/// worktrees/ID`) holds commits nothing else does (its HEAD, HEAD's log, ORIG_HEAD, its own
/// refs): then it is kept, and what it holds is returned in words (attacker QA 48: a tree
/// removed by hand, then `resume`, lost a commit made detached; git itself keeps such a
/// record for months).
fn forget(repo: &Path, path: &Path) -> Option<String> {
    if path.symlink_metadata().is_ok() {
        return None;
    }
    if let Some(record) = record_of(repo, path)
        && let Some(held) = held_alone(
            &|| {
                let mut c = git(repo);
                let mut dir = std::ffi::OsString::from("--git-dir=");
                dir.push(&record);
                c.arg(dir);
                c
            },
            Some(repo),
        )
    {
        return Some(held);
    }
    let _ = remove(repo, path);
    None
}

/// git's record of the worktree at `path` in `repo`: the `worktrees/ID` whose `gitdir` names
/// `path/.git`. Read with no link followed, small files only.
fn record_of(repo: &Path, path: &Path) -> Option<PathBuf> {
    let mut c = git(repo);
    c.args(["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    let common = PathBuf::from(run(c, "find the repository").ok()?);
    let want = path.join(".git");
    std::fs::read_dir(common.join("worktrees"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|record| {
            fsutil::read_small(&record.join("gitdir"), 4096)
                .is_some_and(|text| Path::new(text.trim()) == want)
        })
}

/// What a removal under a team's `worktrees/` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removed {
    /// A worktree (through git), or a directory git does not know.
    Worktree(PathBuf),
    /// A symbolic link, unlinked; what it points at is left as it is.
    Link(Link),
}

impl std::fmt::Display for Removed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Removed::Worktree(path) => write!(f, "worktree {}", path.display()),
            Removed::Link(link) => f.write_str(&link_note(link)),
        }
    }
}

/// What is said of a link removed instead of followed.
pub fn link_note(link: &Link) -> String {
    format!(
        "symbolic link {} (to {}; teamctl never follows links inside its home: the link is removed, what it points at is left as it is)",
        link.path.display(),
        crate::output::printable(&link.target.display().to_string())
    )
}

/// What a team's `worktrees/` holds (`local`: the team's local directory), read without
/// following any symbolic link: `trees`, the entries to remove as worktrees, and `links`, the
/// symbolic links among them, never a worktree teamctl made. `local` or `worktrees` itself a
/// link is one of the links, and nothing behind it is listed.
#[derive(Debug, Default)]
pub struct Found {
    pub trees: Vec<PathBuf>,
    pub links: Vec<Link>,
}

pub fn found(local: &Path) -> Found {
    let mut out = Found::default();
    if let Some(link) = fsutil::link_at(local) {
        out.links.push(link);
        return out;
    }
    for (path, link) in fsutil::entries_nofollow(&local.join("worktrees")) {
        match link {
            Some(link) => out.links.push(link),
            None => out.trees.push(path),
        }
    }
    out
}

/// Remove the worktree at `path`, finding its repository from the worktree itself; a
/// directory git no longer knows is removed as a plain directory. A symbolic link at `path`,
/// or at the `worktrees` directory above it, is unlinked instead, never followed: git would
/// otherwise remove the worktree it points at, wherever that is.
pub fn remove_at(path: &Path) -> Result<Removed> {
    if let Some(link) = unlink_link_at(path)? {
        return Ok(Removed::Link(link));
    }
    match main_repo(path) {
        Some(repo) if repo != path => remove(&repo, path)?,
        _ => {
            fsutil::remove_tree(path)
                .map_err(|e| Error::failed(format!("cannot remove {}: {e}", path.display())))?;
        }
    }
    Ok(Removed::Worktree(path.to_path_buf()))
}

/// Unlink a symbolic link at `path` or at its parent (a team's `worktrees/`), whichever is
/// one, parent first.
fn unlink_link_at(path: &Path) -> Result<Option<Link>> {
    if let Some(parent) = path.parent()
        && let Some(link) = fsutil::unlink_if_link(parent)?
    {
        return Ok(Some(link));
    }
    fsutil::unlink_if_link(path)
}

/// `path` or its parent is a symbolic link (`lstat`).
fn through_link(path: &Path) -> bool {
    path.parent().is_some_and(|p| fsutil::link_at(p).is_some()) || fsutil::link_at(path).is_some()
}

/// What removing the worktree at `path` may lose, in words that follow "it has": uncommitted
/// changes (or untracked files), or files git cannot check. `None`: nothing (a clean
/// worktree, an empty directory; a symbolic link there or at `worktrees/` above it, which git
/// never runs through and whose removal unlinks the link only). A git that fails counts as
/// "cannot tell", never as clean (attacker QA 42: with its repository moved, or no git on
/// PATH, a plain `delete` took a worktree's uncommitted work for none and removed it). git
/// runs only in a worktree whose `.git` file points at a repository's record of it, which
/// points back (`linked`): never in a repository a teammate made there itself, nor in one
/// the home happens to lie in.
pub fn unsaved(path: &Path) -> Option<String> {
    if through_link(path) {
        return None;
    }
    if std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none()) {
        return None;
    }
    // One line: git's own words may be anything a teammate's config had it print (attacker
    // QA 44: lines of its own in `delete`'s refusal).
    let cannot = |why: String| {
        Some(format!(
            "files git cannot check for uncommitted changes ({})",
            crate::output::printable_line(&why, 512)
        ))
    };
    if let Err(why) = linked(path) {
        return cannot(why);
    }
    // A submodule is looked into with its own repository's config, which a teammate may have
    // made inside its worktree: not looked into, and kept (git itself refuses to remove a
    // worktree holding one without --force; attacker QA 42: its commits were lost).
    let mut c = guarded(path);
    c.args(["ls-files", "--stage", "-v", "-z"]);
    let index = match run(c, "list the worktree's files") {
        Ok(index) => index,
        Err(e) => return cannot(e.to_string()),
    };
    if index
        .split('\0')
        .any(|e| e.split(' ').nth(1) == Some("160000"))
    {
        return cannot("it holds submodules".to_string());
    }
    if let Some(what) = in_progress(path) {
        return Some(what);
    }
    match run(look(path), "check the worktree") {
        Ok(s) if s.is_empty() => hidden_changes(path, &index)
            .or_else(|| on_no_branch(path))
            .or_else(|| nested_git(path))
            .or_else(|| ignored(path)),
        Ok(_) => Some("uncommitted changes".to_string()),
        Err(e) => cannot(e.to_string()),
    }
}

/// A rebase, merge, cherry-pick or revert under way in the worktree at `path`, in words that
/// follow "it has": what it set aside (`--autostash`'s stash, the commits still to apply) is
/// held by the worktree's own git directory alone, and a clean-looking tree went with it
/// (attacker QA 48). Found by the files git keeps for it there; a git that fails says nothing
/// more (the looks after it say it).
fn in_progress(path: &Path) -> Option<String> {
    let mut c = guarded(path);
    c.args(["rev-parse", "--absolute-git-dir"]);
    let dir = PathBuf::from(run(c, "find the worktree's git directory").ok()?);
    let (what, command) = [
        ("rebase-merge", "a rebase", "rebase"),
        ("rebase-apply", "a rebase or `git am`", "rebase"),
        ("MERGE_HEAD", "a merge", "merge"),
        ("MERGE_AUTOSTASH", "a merge", "merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick", "cherry-pick"),
        ("REVERT_HEAD", "a revert", "revert"),
        ("sequencer", "a cherry-pick or revert", "cherry-pick"),
    ]
    .into_iter()
    .find(|(file, ..)| dir.join(file).symlink_metadata().is_ok())
    .map(|(_, what, command)| (what, command))?;
    // Runnable as printed (new-user QA 48: "in it" left the reader to find the tree).
    let tree = crate::output::printable_line(
        &crate::output::shell_word(&path.display().to_string()),
        1024,
    );
    Some(format!(
        "{what} in progress, which holds what it set aside: `git -C {tree} {command} --continue` or `--abort` ends it"
    ))
}

/// Tracked files in the worktree at `path` whose changes `git status` is told not to show
/// (`update-index --assume-unchanged` or `--skip-worktree`), compared with the index by their
/// content, in words that follow "it has" when any differs (attacker QA 43: a teammate's
/// turn could hide its edits from every dirty look, and `delete` removed them). `index` is
/// `ls-files --stage -v -z`: a lowercase tag is assume-unchanged, `S` skip-worktree. A file
/// absent from the tree (a sparse checkout's) holds nothing; one that cannot be compared (a
/// link, a git that fails) counts as changed.
fn hidden_changes(path: &Path, index: &str) -> Option<String> {
    let hidden: Vec<(&str, &str, &str)> = index
        .split('\0')
        .filter_map(|e| {
            let (head, file) = e.split_once('\t')?;
            let mut f = head.split(' ');
            let (tag, mode, hash) = (f.next()?, f.next()?, f.next()?);
            let told = tag == "S" || tag.chars().all(|c| c.is_ascii_lowercase());
            // A name git wrote that is not UTF-8 reads here as another (U+FFFD): it cannot be
            // looked at, so it counts as there (attacker QA 44: it counted as absent).
            let there = file.contains('\u{fffd}') || path.join(file).symlink_metadata().is_ok();
            (told && there).then_some((mode, hash, file))
        })
        .collect();
    // Only a regular file is read (attacker QA 44: a FIFO hung `hash-object`, a link to
    // /dev/zero had it read for ever), of `MOST_READ` at most (an 8 GB sparse file took a
    // minute a look); anything else there counts as changed.
    const MOST_READ: u64 = 64 << 20;
    let (plain, other): (Vec<_>, Vec<_>) = hidden.iter().partition(|(mode, _, file)| {
        matches!(*mode, "100644" | "100755")
            && path
                .join(file)
                .symlink_metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= MOST_READ)
    });
    let mut changed: Vec<&str> = other.iter().map(|&&(.., f)| f).collect();
    for chunk in plain.chunks(256) {
        let mut c = guarded(path);
        c.args(["hash-object", "--no-filters", "--"])
            .args(chunk.iter().map(|(.., f)| *f));
        match run(c, "read the files git is told not to check") {
            Ok(out) if out.lines().count() == chunk.len() => changed.extend(
                chunk
                    .iter()
                    .zip(out.lines())
                    .filter(|((_, hash, _), got)| hash != got)
                    .map(|(&(.., f), _)| f),
            ),
            _ => changed.extend(chunk.iter().map(|(.., f)| *f)),
        }
    }
    let first = changed.first()?;
    Some(format!(
        "changes git is told not to show (update-index --assume-unchanged or --skip-worktree) in {}{} (`git update-index --no-assume-unchanged --no-skip-worktree FILE` in it shows them)",
        crate::output::printable_line(first, 256),
        match changed.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        }
    ))
}

/// Commits of the worktree at `path` that only the worktree holds, in words that follow "it
/// has": lost with the tree, which removes its HEAD, its HEAD's log and its own refs
/// (`refs/worktree/*`, `refs/bisect/*`, `refs/rewritten/*`). So: commits reachable from any of
/// those (a detached HEAD committed on, a rebase stopped half-way; attacker QA 44), from an
/// entry of HEAD's log (committed on detached, then a branch checked out; attacker QA 47) or
/// from ORIG_HEAD, that no other ref holds (a branch, a tag, the stash, any other under
/// `refs/`), nor an entry of another ref's log, which stays (a commit reset away on the
/// tree's branch is still in that branch's log). A git that fails counts as commits it cannot
/// check.
fn on_no_branch(path: &Path) -> Option<String> {
    held_alone(&|| guarded(path), main_repo(path).as_deref())
}

/// `on_no_branch` of the worktree whose git is `git()` (run in it, or at its record), `repo`
/// its repository when known (for the hint).
fn held_alone(git: &dyn Fn() -> Command, repo: Option<&Path>) -> Option<String> {
    let cannot = |e: Error| {
        Some(format!(
            "commits git cannot check ({})",
            crate::output::printable_line(&e.to_string(), 512)
        ))
    };
    let logged = |refs: &[&str]| {
        let mut c = git();
        c.args(["rev-list", "--walk-reflogs"]).args(refs);
        run(c, "read the reflogs")
    };
    // Every ref the tree's removal leaves: all but the tree's own (attacker QA 48: a commit
    // kept by `refs/keep/*` or the stash counted as lost).
    let shared = [
        "--exclude=refs/worktree/*",
        "--exclude=refs/bisect/*",
        "--exclude=refs/rewritten/*",
        "--glob=refs/*",
    ];
    let (head_log, shared_logs) = match (logged(&["HEAD"]), logged(&shared)) {
        (Ok(h), Ok(b)) => (h, b),
        (Err(e), _) | (_, Err(e)) => return cannot(e),
    };
    // ORIG_HEAD is the tree's too: with reflogs off, the only hold on a commit reset away
    // (attacker QA 48).
    let mut orig = git();
    orig.args(["rev-parse", "--verify", "--quiet", "ORIG_HEAD^{commit}"]);
    let orig_head = run(orig, "read ORIG_HEAD").unwrap_or_default();
    let mut fed = String::new();
    for hash in head_log.lines().chain(orig_head.lines()) {
        fed.push_str(hash);
        fed.push('\n');
    }
    for hash in shared_logs.lines() {
        fed.push('^');
        fed.push_str(hash);
        fed.push('\n');
    }
    let mut c = git();
    c.args([
        "rev-list",
        "HEAD",
        "--glob=refs/worktree",
        "--glob=refs/bisect",
        "--glob=refs/rewritten",
        "--stdin",
        "--not",
    ])
    .args(shared);
    // A git that fails here cannot tell (attacker QA 44: a HEAD on a commit whose parent is
    // missing made it fail, and the tree went as if it held no commit of its own).
    let commits = match run_fed(c, &fed, "list the commits on no branch") {
        Ok(out) => out,
        Err(e) => return cannot(e),
    };
    let mut each = commits.lines();
    let newest = each.next()?;
    let newest = newest.get(..12).unwrap_or(newest);
    let n = 1 + each.count();
    // Run in the repository, which keeps the commits: a command that works after the tree
    // is gone too (new-user QA 48: "in it" was said of a tree `--force` had discarded).
    let repo = repo.map_or_else(
        || "REPO".to_string(),
        |r| {
            crate::output::printable_line(
                &crate::output::shell_word(&r.display().to_string()),
                1024,
            )
        },
    );
    Some(format!(
        "{n} commit{} on no branch, the newest {newest}, held by the worktree alone (its HEAD, HEAD's log, ORIG_HEAD or its own refs; `git -C {repo} branch NAME {newest}` keeps that one and those before it)",
        if n == 1 { "" } else { "s" }
    ))
}

/// Entries named `.git` below the top of the worktree at `path`, whose files git never shows
/// (attacker QA 44: `notes/.git/draft.md` went with a clean-looking tree), in words that follow
/// "it has". Links are not followed; a tree too large to walk counts as such a file.
fn nested_git(path: &Path) -> Option<String> {
    const MOST: usize = 1_000_000;
    let mut seen = 0usize;
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MOST {
                return Some(format!("more than {MOST} files, not all looked through"));
            }
            let p = e.path();
            if e.file_name() == ".git" {
                if dir == path {
                    continue;
                }
                let rel = p.strip_prefix(path).unwrap_or(&p);
                return Some(format!(
                    "files git never shows, in {} (move them out of it to keep them)",
                    crate::output::printable_line(&rel.display().to_string(), 256)
                ));
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(p);
            }
        }
    }
    None
}

/// Files in the clean worktree at `path` that git ignores (`.env`, notes, build output), in
/// words that follow "it has", when there are any: in no commit, so lost with the tree as
/// uncommitted changes are, and counted as they are by `unsaved` (attacker and new-user QA
/// 43: an ignored `notes.md` went with `doctor --fix`, a `.env` with a plain `delete`). A
/// git that fails says nothing more (`unsaved` has looked there already).
fn ignored(path: &Path) -> Option<String> {
    let mut c = look(path);
    c.args(["--ignored=matching"]);
    let out = run(c, "list the ignored files").ok()?;
    let files: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("!! ")).collect();
    let first = files.first()?;
    Some(format!(
        "{} git ignores ({})",
        match files.len() {
            1 => "1 file or directory".to_string(),
            n => format!("{n} files or directories"),
        },
        match files.len() {
            1 => crate::output::printable_line(first, 256),
            _ => format!("{}, ...", crate::output::printable_line(first, 256)),
        }
    ))
}

/// `git status` of the worktree at `path` that runs nothing a repository's config names
/// (attacker QA 42: a teammate's `core.fsmonitor`, then its `filter.NAME.clean`, ran from a
/// plain `teamctl doctor`, as the leader, outside any turn): fsmonitor, hooks and the untracked
/// cache off, no attributes file, every filter driver the config names emptied (an empty
/// command is no filter); untracked files always listed (`status.showUntrackedFiles=no` hid
/// new files, then removed), no index rewritten.
fn look(path: &Path) -> Command {
    let mut names = guarded(path);
    names.args(["config", "--name-only", "--get-regexp", r"^filter\."]);
    let drivers: std::collections::BTreeSet<String> = run(names, "list the filters")
        .unwrap_or_default()
        .lines()
        .filter_map(|k| {
            let k = k.strip_prefix("filter.")?;
            Some(k.rsplit_once('.')?.0.to_string())
        })
        .collect();
    let mut c = guarded(path);
    c.args(["-c", "status.showUntrackedFiles=normal"]);
    // Keys and values apart (`GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`), never `-c KEY=VALUE`:
    // git splits that at the first `=`, and a driver named `x=y` kept its command (attacker QA
    // 44: it ran from `doctor`).
    let overrides: Vec<(String, &str)> = drivers
        .iter()
        .flat_map(|d| {
            [
                (format!("filter.{d}.clean"), ""),
                (format!("filter.{d}.smudge"), ""),
                (format!("filter.{d}.process"), ""),
                (format!("filter.{d}.required"), "false"),
            ]
        })
        .collect();
    c.env("GIT_CONFIG_COUNT", overrides.len().to_string());
    for (i, (key, value)) in overrides.iter().enumerate() {
        c.env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    c.args(["status", "--porcelain", "-unormal"]);
    c
}

/// git in the worktree at `path` for a look: fsmonitor, hooks, the untracked cache and the
/// attributes file off, no optional locks (each git run there, not the status alone: an
/// `ls-files` ran the fsmonitor too).
///
/// The tree looked at is `path` itself, whatever `core.worktree` says (attacker QA 44: one set
/// in the worktree's own config sent the look to a clean directory, and the work went), and
/// every change is looked for: no stat shortcut (`core.ignoreStat`, `core.checkStat=minimal`
/// with a restored mtime), no case folding (`core.ignorecase` hid a new `A.TXT` beside `a.txt`).
fn guarded(path: &Path) -> Command {
    let mut c = git(path);
    let mut tree = std::ffi::OsString::from("--work-tree=");
    tree.push(path);
    c.arg(tree);
    for (key, value) in [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.untrackedCache", "false"),
        ("core.attributesFile", "/dev/null"),
        ("core.ignoreStat", "false"),
        ("core.checkStat", "default"),
        ("core.trustctime", "true"),
        ("core.ignorecase", "false"),
    ] {
        c.arg("-c").arg(format!("{key}={value}"));
    }
    c.arg("--no-optional-locks");
    c
}

/// Whether `path` is a linked worktree as `git worktree add` makes one: its `.git` a regular
/// file naming `REPO/.git/worktrees/ID`, and that record's `gitdir` naming this `.git` back.
/// Else why not.
fn linked(path: &Path) -> std::result::Result<(), String> {
    let dotgit = path.join(".git");
    let not = || format!("{} is not a git worktree's .git file", dotgit.display());
    let meta = dotgit.symlink_metadata().map_err(|_| not())?;
    if !meta.is_file() || meta.len() > 4096 {
        return Err(not());
    }
    // Every file here is read as `read_small` reads: never through a link, a regular file
    // only, at most 4 KiB (attacker QA 45: a FIFO at the record's `commondir` hung `delete`,
    // `delete --force` and `doctor` in `open`, past SIGTERM).
    let small = |p: &Path| fsutil::read_small(p, 4096);
    let text = small(&dotgit).ok_or_else(not)?;
    let record = text
        .strip_prefix("gitdir:")
        .map(|r| path.join(r.trim()))
        .ok_or_else(not)?;
    if record.parent().and_then(Path::file_name) != Some(std::ffi::OsStr::new("worktrees")) {
        return Err(not());
    }
    // A repository made inside the worktree itself (by its teammate, whose turns may write
    // only there) is never the one git is run in (attacker QA 42 forged such a record); looked
    // at before anything in it is read.
    let inside = |p: &Path| {
        std::fs::canonicalize(p)
            .is_ok_and(|p| std::fs::canonicalize(path).is_ok_and(|tree| p.starts_with(tree)))
    };
    let inside_said = || {
        format!(
            "{} points at a repository inside the worktree itself",
            dotgit.display()
        )
    };
    if inside(&record) {
        return Err(inside_said());
    }
    let common = small(&record.join("commondir"))
        .map_or_else(|| record.join("../.."), |c| record.join(c.trim()));
    if inside(&common) {
        return Err(inside_said());
    }
    let back = small(&record.join("gitdir")).ok_or_else(|| {
        format!(
            "its repository's record of it, {}, is gone: the repository moved or was removed?",
            crate::output::printable_line(&record.display().to_string(), 512)
        )
    })?;
    let same = |a: &Path, b: &Path| {
        std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
    };
    if same(&record.join(back.trim()), &dotgit) {
        Ok(())
    } else {
        Err(format!(
            "{} points at a repository's worktree that is not this one",
            dotgit.display()
        ))
    }
}

/// Record a made worktree with the member.
pub fn record(member: &mut Member, plan: &Plan) {
    member.worktree = Some(plan.path.display().to_string());
    member.cwd = plan.cwd.display().to_string();
    member.worktree_repo = Some(plan.repo.display().to_string());
    member.worktree_branch = Some(plan.branch.clone());
}

/// The member's recorded worktree when it is where teamctl makes it on this host
/// (`LOCAL/worktrees/NAME`, `LOCAL` the team's local directory) and the member runs here.
/// A path recorded elsewhere (a team file written by hand, or by another host of a shared
/// store) is never made, nor removed: it could name any directory.
fn owned(member: &Member, local: &Path) -> Result<Option<PathBuf>> {
    let Some(path) = member.worktree.as_deref().map(PathBuf::from) else {
        return Ok(None);
    };
    if crate::backend::host::elsewhere(member).is_some() {
        return Ok(None);
    }
    let dir = local.join("worktrees");
    let same_dir = |parent: &Path| {
        parent == dir
            || matches!((parent.canonicalize(), dir.canonicalize()), (Ok(a), Ok(b)) if a == b)
    };
    let ours = path.file_name() == Some(std::ffi::OsStr::new(member.name.as_str()))
        && path.parent().is_some_and(same_dir);
    if !ours {
        return Err(Error::failed(format!(
            "{}'s recorded worktree {} is not where teamctl makes worktrees ({}); leaving it alone",
            member.name,
            crate::output::printable(&path.display().to_string()),
            dir.display()
        )));
    }
    // The path inside the home, never the recorded spelling of it: one through a link
    // elsewhere (`/tmp/link/NAME`, the link to `worktrees`) had the link itself removed as
    // if it were the home's (attacker QA 43), and one spelled `worktrees/../worktrees/NAME`
    // was not known for the member's by `doctor`, which removed it under its teammate.
    Ok(Some(dir.join(member.name.as_str())))
}

/// The member's recorded worktree when it is this host's own (`owned`), else `None`: the
/// only path a dirty check may run git in.
pub fn recorded_here(member: &Member, local: &Path) -> Option<PathBuf> {
    owned(member, local).ok().flatten()
}

/// The member's own worktree here (`recorded_here`) when nothing is at its path: removed by
/// hand (what `status`, `doctor` and `resume` say of a running teammate). One `lstat`.
pub fn gone(member: &Member, local: &Path) -> Option<PathBuf> {
    recorded_here(member, local).filter(|p| p.symlink_metadata().is_err())
}

/// A worktree `restore` made again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub path: PathBuf,
    /// Its branch was gone too: made anew from HEAD.
    pub new_branch: bool,
}

/// Make the member's recorded worktree again when it was removed (for `resume`), saying
/// where when it did (new-user QA 43: `resume` made it again silently). `local` is the team's
/// local directory.
pub fn restore(member: &Member, local: &Path) -> Result<Option<Restored>> {
    let Some(path) = owned(member, local)? else {
        return Ok(None);
    };
    // The worker would run in whatever a link there points at.
    for p in [path.parent().unwrap_or(local), path.as_path()] {
        if fsutil::link_at(p).is_some() {
            return Err(Error::failed(format!(
                "{}'s worktree {}: {} is a symbolic link; teamctl never follows links inside its home: remove it",
                member.name,
                path.display(),
                p.display()
            )));
        }
    }
    if path.exists() {
        return Ok(None);
    }
    let (Some(repo), Some(branch)) = (&member.worktree_repo, &member.worktree_branch) else {
        return Err(Error::failed(format!(
            "{}'s worktree {} is gone and its repository is not recorded",
            member.name,
            path.display()
        )));
    };
    let repo = PathBuf::from(repo);
    if let Some(held) = forget(&repo, &path) {
        return Err(Error::failed(format!(
            "{}'s worktree {} is gone, but git's record of it is kept: it holds {held}; once they are kept, `git -C {} worktree prune` lets it go, and the worktree can be made again",
            member.name,
            path.display(),
            crate::output::printable_line(
                &crate::output::shell_word(&repo.display().to_string()),
                1024
            ),
        )));
    }
    add(&repo, &path, branch).map(|new_branch| Some(Restored { path, new_branch }))
}

/// What `resume` (and a message that resumes) says of a worktree `restore` made again.
pub fn restored_note(member: &Member, made: &Restored) -> String {
    let branch =
        crate::output::printable_line(member.worktree_branch.as_deref().unwrap_or("?"), 256);
    let from = if made.new_branch {
        format!("on a new branch {branch} from HEAD (its branch was gone too)")
    } else {
        format!("from its branch {branch}")
    };
    format!(
        "teamctl: {}'s worktree {} was gone: made again {from}",
        member.name,
        made.path.display(),
    )
}

/// Remove the member's worktree (its local view, `old`) so that it can start `instead` (in
/// words: `on branch B`, `without a worktree`): only while it holds nothing a removal would
/// lose (`unsaved`); else it is kept and the error says what it holds and the ways on
/// (`again`: the command that tries once more). Gone already, or a link there (unlinked):
/// nothing lost. The branch stays. For `up` of a member whose file names another branch, or
/// none (new-user QA 46: its hint, `shutdown && up`, kept the old worktree).
pub fn replace(old: &Member, local: &Path, instead: &str, again: &str) -> Result<bool> {
    let Some(path) = owned(old, local)? else {
        return Ok(false);
    };
    // Gone already (removed by hand, or by `shutdown --remove-worktree`): nothing replaced,
    // and nothing said to be (new-user QA 47: "it held no uncommitted work" of one discarded).
    if path.symlink_metadata().is_err() {
        return Ok(false);
    }
    if path.symlink_metadata().is_ok()
        && let Some(what) = unsaved(&path)
    {
        let name = &old.name;
        let was = crate::output::printable_line(old.worktree_branch.as_deref().unwrap_or("?"), 256);
        return Err(Error::failed(format!(
            "{name}'s worktree {} on branch {was} has {}, so it is kept and {name} was not started {instead}: save what is worth keeping there, then `{again}`; `teamctl shutdown {name} --remove-worktree --force` discards it",
            path.display(),
            crate::output::printable_line(&what, 1024),
        )));
    }
    remove_for(old, local).map(|_| true)
}

/// What a worktree has checked out now: a branch, or a commit (its HEAD detached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    Branch(String),
    Detached(String),
}

/// What the member's worktree here (`recorded_here`) has checked out now (new-user QA 46:
/// after a `git switch` in it, `status` still said the branch it was made on), read from
/// git's own files: the worktree's `.git` names its git directory, whose `HEAD` says it. Two
/// reads of at most 1 KiB, no git run (`status` of many teammates stays fast). `local` is the
/// team's local directory, opened (`DirFd`). Nothing is followed through a symbolic link (the
/// worktree, its `.git`, the git directory named there, its `HEAD`: `read_small_no_links`),
/// and the git directory named must be a worktree's (`.../worktrees/ID`): a `.git` a
/// teammate wrote cannot lead the look elsewhere, and a FIFO hangs nothing. `None` when it
/// cannot be told (gone, another host's, git's reference table keeping HEAD elsewhere, a
/// name that is not one): the record then says it.
pub fn head(member: &Member, local: &fsutil::DirFd) -> Option<Head> {
    let path = recorded_here(member, local.path())?;
    let rel = path.strip_prefix(local.path()).ok()?;
    const MOST: u64 = 1024;
    let dotgit = local.read_small_no_links(&rel.join(".git"), MOST, true)?;
    let gitdir = Path::new(dotgit.strip_prefix("gitdir:")?.trim());
    let parent = gitdir.parent()?;
    if parent.file_name() != Some(std::ffi::OsStr::new("worktrees")) || gitdir.file_name().is_none()
    {
        return None;
    }
    // A relative git directory (`worktree.useRelativePaths`) is from the worktree.
    let head = local.read_small_no_links(&rel.join(gitdir).join("HEAD"), MOST, false)?;
    let head = head.trim_end_matches('\n');
    let plain = |s: &str| !s.is_empty() && !s.chars().any(char::is_control);
    let commit = matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit());
    match head.strip_prefix("ref: refs/heads/") {
        // The reference table's placeholder: HEAD is kept in the table, not here.
        Some(branch) if branch != ".invalid" && plain(branch) => {
            Some(Head::Branch(branch.to_string()))
        }
        None if commit => Some(Head::Detached(head.to_string())),
        _ => None,
    }
}

/// Remove a member's recorded worktree, if it still exists; says what was removed (a
/// symbolic link found there is unlinked, never followed: `remove_at`). The record stays, so
/// `resume` can make it again from the branch. `local` is the team's local directory.
pub fn remove_for(member: &Member, local: &Path) -> Result<Option<Removed>> {
    let Some(path) = owned(member, local)? else {
        return Ok(None);
    };
    if let Some(link) = unlink_link_at(&path)? {
        return Ok(Some(Removed::Link(link)));
    }
    if !path.exists() {
        // Removed by hand, it is still registered, its branch held by it (new-user QA 44:
        // `git branch -D` of the branch `delete` said it kept failed, "used by worktree").
        if let Some(repo) = member.worktree_repo.as_deref()
            && let Some(held) = forget(Path::new(repo), &path)
        {
            crate::errln!(
                "teamctl: {}'s worktree {} was gone already; git's record of it is kept: it holds {held}",
                member.name,
                path.display()
            );
        }
        return Ok(None);
    }
    match member.worktree_repo.as_deref() {
        Some(repo) => remove(Path::new(repo), &path)?,
        None => return remove_at(&path).map(Some),
    }
    Ok(Some(Removed::Worktree(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_branch_names_the_team_and_the_old_one_is_still_teamctls() {
        let dev = Name::parse("dev").unwrap();
        assert_eq!(default_branch(&dev, "web"), "teamctl/dev@web");
        assert!(named_by_teamctl("teamctl/dev@web", &dev, "web"));
        assert!(named_by_teamctl("teamctl/dev", &dev, "web"));
        assert!(!named_by_teamctl("teamctl/dev@api", &dev, "web"));
        assert!(!named_by_teamctl("feature", &dev, "web"));
    }

    #[test]
    fn the_declared_branch_is_the_default_unless_named_and_teamctls_old_name_stands_for_it() {
        let dev = Name::parse("dev").unwrap();
        assert_eq!(declared("", None, &dev, "web"), "teamctl/dev@web");
        assert_eq!(
            declared("", Some("teamctl/dev"), &dev, "web"),
            "teamctl/dev"
        );
        assert_eq!(
            declared("", Some("feature"), &dev, "web"),
            "teamctl/dev@web"
        );
        assert_eq!(
            declared("feat", Some("teamctl/dev@web"), &dev, "web"),
            "feat"
        );
    }
}
