//! Looking at and signalling processes by pid, always after checking that the process carries
//! this member's tag: a worker's argv is `teamctl worker --home HOME --id NAME@TEAM`, an agent
//! process has `TEAMCTL_AGENT_ID=NAME@TEAM` and `TEAMCTL_HOME=HOME` in its environment. The
//! home is part of the tag (set once per process with `scope_to_home`), so two homes with a
//! `bob@t` each never touch each other's processes. The same call fixes the home's short key
//! (`home_key`), which scopes tmux session names and pane tags the same way.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid as NixPid;

static HOME: OnceLock<String> = OnceLock::new();
static HOME_PATH: OnceLock<PathBuf> = OnceLock::new();
/// Computed when first needed (most commands never need them: a `send` to a running
/// teammate resolved the home's links twice and hashed it at every start).
static HOME_CANON: OnceLock<PathBuf> = OnceLock::new();
static HOME_KEY: OnceLock<String> = OnceLock::new();

/// Make every tag check of this process require `home` too. Called once, at start-up.
pub fn scope_to_home(home: &Path) {
    let _ = HOME.set(home.display().to_string());
    let _ = HOME_PATH.set(home.to_path_buf());
}

/// This process's home in its canonical spelling, if it was scoped.
fn home_canon() -> Option<&'static PathBuf> {
    HOME_PATH
        .get()
        .map(|h| HOME_CANON.get_or_init(|| canonical(h)))
}

/// `home` in its one canonical spelling (links resolved). A home that does not exist yet is
/// its deepest existing ancestor, canonical, plus the rest, so it does not change when the
/// home is made.
fn canonical(home: &Path) -> PathBuf {
    for base in home.ancestors() {
        if let Ok(c) = base.canonicalize() {
            let rest = home.strip_prefix(base).unwrap_or(Path::new(""));
            return if rest.as_os_str().is_empty() {
                c
            } else {
                c.join(rest)
            };
        }
    }
    home.to_path_buf()
}

/// The key of a home in tmux names and tags: the first 64 bits of the SHA-256 of its
/// canonical path, as 16 hex digits. A cryptographic hash: a CRC-32 key could be matched on
/// purpose by choosing a path (four chosen bytes solve it), so one home could name, and then
/// close, another home's panes.
pub fn home_key_of(home: &Path) -> String {
    key_of_canonical(&canonical(home))
}

fn key_of_canonical(canon: &Path) -> String {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let digest = sha2::Sha256::digest(canon.as_os_str().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// This process's home (`scope_to_home`), if it was scoped.
pub fn home_root() -> Option<&'static str> {
    HOME.get().map(String::as_str)
}

/// This process's home key (`scope_to_home`); unscoped (unit tests), the key of no home.
pub fn home_key() -> String {
    home_canon().map_or_else(
        || home_key_of(Path::new("")),
        |c| HOME_KEY.get_or_init(|| key_of_canonical(c)).clone(),
    )
}

/// Whether `value` (a process's `--home` or `TEAMCTL_HOME`) names this process's home: in
/// the same spelling, or through another path to the same directory (a link), so a worker
/// started through another path is recognised, stopped and killed like any other.
fn same_home(value: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some(h) = HOME.get() else {
        return true;
    };
    value == h.as_bytes()
        || home_canon()
            .is_some_and(|c| canonical(Path::new(std::ffi::OsStr::from_bytes(value))) == *c)
}

/// Whose home a process's `--home` must name to be judged teamctl's: this process's
/// (`same_home`), or the home of a key (`home_key_of`): one that no longer exists, whose team
/// sessions `doctor --fix` closes from another home, its workers and consoles still teamctl's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomeOf<'a> {
    Ours,
    Key(&'a str),
}

impl<'a> HomeOf<'a> {
    /// The home of `key`: this process's own when it is this home's key.
    pub fn key(key: &'a str) -> HomeOf<'a> {
        if key == home_key() {
            HomeOf::Ours
        } else {
            HomeOf::Key(key)
        }
    }

    /// Does `value` (a process's `--home`) name this home?
    fn names(self, value: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        match self {
            HomeOf::Ours => same_home(value),
            HomeOf::Key(key) => home_key_of(Path::new(std::ffi::OsStr::from_bytes(value))) == key,
        }
    }
}

/// Whether `pid` runs as this process's user: a tag is checked on our own processes only, so
/// teamctl run as root never signals another user's process that copied a worker's argv or an
/// agent's environment (attacker QA).
#[cfg(test)]
fn ours(pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == euid())
}

/// This process's effective user id, asked once (teamctl never changes it).
fn euid() -> u32 {
    static EUID: OnceLock<u32> = OnceLock::new();
    *EUID.get_or_init(|| nix::unistd::geteuid().as_raw())
}

/// The bytes of `/proc/PID/FILE` when process `pid` is ours, read whole. Ours: the owner of
/// its `/proc/PID` directory, opened first, is this process's user (as `ours`); `FILE` is then
/// opened relative to that very directory, so what is read is that process's, even if the pid
/// is used again meanwhile. Not the owner of `FILE` itself: a process that made itself not
/// dumpable shows its files as root's, so teamctl run as root took another user's process
/// that copied a worker's argv for its own (attacker QA, twelfth session); the directory keeps
/// its real owner. `None` when it is gone or not ours. Seven system calls (open, fstat, openat,
/// read, the read that finds the end, two closes): `status` asks this of every worker, and it
/// made nineteen (BENCHMARKS.md, twelfth session).
pub fn read_ours(pid: u32, file: &str) -> Option<Vec<u8>> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    use std::os::unix::fs::MetadataExt;
    Pid::new(pid)?;
    let dir = std::fs::File::open(format!("/proc/{pid}")).ok()?;
    if dir.metadata().ok()?.uid() != euid() {
        return None;
    }
    let f = std::fs::File::from(
        openat(
            &dir,
            file,
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?,
    );
    // Through `Take`, which gives no size hint (`read_to_end` on a `File` asks `fstat` and
    // `lseek` for one, and `/proc` says 0), into spare capacity.
    let mut buf = Vec::with_capacity(4096);
    std::io::Read::read_to_end(&mut std::io::Read::take(&f, u64::MAX), &mut buf).ok()?;
    Some(buf)
}

/// Is `pid` a live (not zombie) teamctl worker for `agent_id` (in our home, of our user)?
/// A zombie's (or an exiting process's) `cmdline` reads empty, its memory gone, so it is no
/// worker: no separate look at its state is needed.
/// Whether `pid` runs, as the very process a record names with the start time `started`
/// (`Member::pid_started`, read as teamctl recorded the pid it had just started): that
/// process before it became the worker (a start's fork, or tmux's, not yet `exec`ed: its argv
/// is not yet a worker's) as well as after (`exec` keeps the pid and the start time). `0` or
/// none proves nothing. (New-user QA: of two resumes at once, the second took a worker just
/// started, not yet `exec`ed, for dead, and started another in its place.)
/// A process ending (its memory let go: a zombie, or threads still going down after a kill)
/// shows no argv: not counted, as `is_worker` does not count it.
pub fn is_recorded(pid: u32, started: Option<u64>) -> bool {
    started.is_some_and(|t| t != 0 && start_time(pid) == Some(t))
        && read_ours(pid, "cmdline").is_some_and(|argv| !argv.is_empty())
}

/// The start time to record with the pid of a process teamctl has just started
/// (`Member::pid_started`): its own, or `0` when it cannot be read (the process ended, and
/// was reaped, already): never a time a later process given that pid could have.
pub fn recorded_start(pid: u32) -> u64 {
    start_time(pid).unwrap_or(0)
}

pub fn is_worker(pid: u32, agent_id: &str) -> bool {
    is_worker_of(pid, agent_id, HomeOf::Ours)
}

/// `is_worker`, of the home `home`.
fn is_worker_of(pid: u32, agent_id: &str, home: HomeOf) -> bool {
    read_ours(pid, "cmdline")
        .is_some_and(|c| worker_ids_of(&c, home).any(|id| id == agent_id.as_bytes()))
}

/// The agent id `pid` is a worker of (in our home, of our user), as `is_worker` reads it.
pub fn worker_id(pid: u32) -> Option<Vec<u8>> {
    read_ours(pid, "cmdline").and_then(|c| worker_ids(&c).next().map(<[u8]>::to_vec))
}

/// The `--id` values of a worker's argv (`teamctl worker --home HOME --id NAME@TEAM`) whose
/// `--home` is ours; none when `cmdline` is not a worker's.
fn worker_ids(cmdline: &[u8]) -> impl Iterator<Item = &[u8]> {
    worker_ids_of(cmdline, HomeOf::Ours)
}

/// `worker_ids`, of the home `home`.
fn worker_ids_of<'c>(cmdline: &'c [u8], home: HomeOf) -> impl Iterator<Item = &'c [u8]> {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let ours = args.get(1) == Some(&&b"worker"[..])
        && args
            .windows(2)
            .any(|w| w[0] == b"--home" && home.names(w[1]));
    let ids: Vec<&[u8]> = if ours {
        args.windows(2)
            .filter(|w| w[0] == b"--id")
            .map(|w| w[1])
            .collect()
    } else {
        Vec::new()
    };
    ids.into_iter()
}

/// Does `pid` carry `TEAMCTL_AGENT_ID=agent_id` in its environment (an agent process of our
/// user)? A zombie's `environ` reads empty, as its `cmdline` does (`is_worker`).
pub fn is_agent_process(pid: u32, agent_id: &str) -> bool {
    read_ours(pid, "environ").is_some_and(|e| agent_ids_in(&e).any(|id| id == agent_id.as_bytes()))
}

/// Does `pid` carry `TEAMCTL_PLACEMENT=word` in its environment (`env::PLACEMENT`: an agent
/// process teamctl started for the placement of that word)?
pub fn carries_placement(pid: u32, word: &str) -> bool {
    let var = format!("{}={word}", crate::domain::env::PLACEMENT);
    read_ours(pid, "environ").is_some_and(|e| e.split(|b| *b == 0).any(|v| v == var.as_bytes()))
}

/// The agent ids `pid` carries in its environment (in our home, of our user), as
/// `is_agent_process` reads them.
pub fn agent_ids(pid: u32) -> Vec<Vec<u8>> {
    read_ours(pid, "environ")
        .map(|e| agent_ids_in(&e).map(<[u8]>::to_vec).collect())
        .unwrap_or_default()
}

/// The `TEAMCTL_AGENT_ID` values of an environment whose `TEAMCTL_HOME` is ours (any, when
/// this process was not scoped to a home).
fn agent_ids_in(env: &[u8]) -> impl Iterator<Item = &[u8]> {
    let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
    let home_prefix = format!("{}=", crate::domain::env::HOME);
    let home_ok = HOME.get().is_none()
        || vars.iter().any(|v| {
            v.strip_prefix(home_prefix.as_bytes())
                .is_some_and(same_home)
        });
    let id_prefix = format!("{}=", crate::domain::env::AGENT_ID);
    let ids: Vec<&[u8]> = if home_ok {
        vars.iter()
            .filter_map(|v| v.strip_prefix(id_prefix.as_bytes()))
            .collect()
    } else {
        Vec::new()
    };
    ids.into_iter()
}

/// Has process `pid` ended: no such process, or a zombie (its pane shows it dead once tmux
/// has reaped it)? Read from `/proc` alone, not with a signal: another user's live process
/// (one the signal may not reach) has not ended.
pub fn ended(pid: u32) -> bool {
    if Pid::new(pid).is_none() {
        return true;
    }
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.iter()
                .rposition(|b| *b == b')')
                .and_then(|close| stat[close + 1..].iter().find(|b| !b.is_ascii_whitespace()))
                .is_some_and(|state| matches!(state, b'Z' | b'X'))
                && !threads_beyond_leader(pid)
        }
        Err(_) => true,
    }
}

/// Whether `pid`'s program runs threads besides its first (`Threads:` in its status): a
/// program whose first thread called `pthread_exit` reads as a zombie while the rest of it
/// runs on, and was taken for one that had ended, so `doctor --fix` and `delete --force`
/// closed a user's pane running it on its tags alone (attacker QA).
fn threads_beyond_leader(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u32>().ok())
        })
        .is_some_and(|n| n > 1)
}

/// How long `ended_or_ending` waits for a process in its exit to end.
const ENDING: Duration = Duration::from_secs(5);

/// Has `pid` ended, or is it ending: a process of ours whose argv reads empty has let go of
/// its memory in its exit (a console or worker that ends by itself as its team goes; its
/// other threads may still be on their way out, `ended` waits for them), and no longer reads
/// as anything: waited for (up to `ENDING`) to be a zombie or gone, so it is not taken for the
/// user's meanwhile (CI: `doctor --fix` kept a removed home's session for the team's console,
/// which was exiting as the pane was judged). A program whose first thread ended while the
/// rest runs on reads so too, and is still running at the end of the wait.
pub fn ended_or_ending(pid: u32) -> bool {
    ended(pid)
        || (read_ours(pid, "cmdline").is_some_and(|argv| argv.is_empty())
            && wait_for(ENDING, || ended(pid)))
}

/// Is the program `pid` runs a teamctl binary (ours, of our user)? The same file as this
/// process's own, or one whose name starts with `teamctl` (another build, one an upgrade
/// replaced: `teamctl (deleted)`, or renamed aside: `teamctl~`; `teamctl-nats`). Read through
/// the process's own `/proc/PID` directory, as `read_ours` reads, so a pid used again
/// meanwhile is not mistaken for it. A guard against a pane or a process dressed up as a
/// worker (its argv copied, `exec -a`), not against a program the user names `teamctl`.
pub fn runs_teamctl(pid: u32) -> bool {
    use nix::fcntl::{AtFlags, readlinkat};
    use nix::sys::stat::fstatat;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    if Pid::new(pid).is_none() {
        return false;
    }
    let Ok(dir) = std::fs::File::open(format!("/proc/{pid}")) else {
        return false;
    };
    if !dir.metadata().is_ok_and(|m| m.uid() == euid()) {
        return false;
    }
    let Ok(target) = readlinkat(&dir, "exe") else {
        return false;
    };
    let same = fstatat(&dir, "exe", AtFlags::empty()).is_ok_and(|theirs| {
        std::fs::metadata("/proc/self/exe")
            .is_ok_and(|mine| mine.dev() == theirs.st_dev && mine.ino() == theirs.st_ino)
    });
    same || Path::new(&target)
        .file_name()
        .is_some_and(|n| n.as_bytes().starts_with(b"teamctl"))
}

/// Is `pid` a teamctl worker of `agent_id` in our home: its argv (`is_worker`) and its program
/// a teamctl binary (`runs_teamctl`)? What a pane tagged for `agent_id` must run to be closed
/// as teamctl's (`backend::tmux::close_cmd`): a tag is a pane option anyone can set.
pub fn is_teamctl_worker(pid: u32, agent_id: &str) -> bool {
    is_teamctl_worker_of(pid, agent_id, HomeOf::Ours)
}

/// `is_teamctl_worker`, of the home `home`.
pub fn is_teamctl_worker_of(pid: u32, agent_id: &str, home: HomeOf) -> bool {
    is_worker_of(pid, agent_id, home) && runs_teamctl(pid)
}

/// Is `pid` the leader console teamctl put in a team session of `team` (in our home): a
/// teamctl binary running `lead --home HOME --team TEAM` (`backend::Launch::console`)?
pub fn is_console(pid: u32, team: &str) -> bool {
    is_console_of(pid, team, HomeOf::Ours)
}

/// `is_console`, of the home `home`.
pub fn is_console_of(pid: u32, team: &str, home: HomeOf) -> bool {
    read_ours(pid, "cmdline").is_some_and(|c| {
        let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
        args.get(1) == Some(&&b"lead"[..])
            && args
                .windows(2)
                .any(|w| w[0] == b"--home" && home.names(w[1]))
            && args
                .windows(2)
                .any(|w| w[0] == b"--team" && w[1] == team.as_bytes())
    }) && runs_teamctl(pid)
}

/// Every process this user can see in `/proc` but this one (zombies included: see `running`).
pub fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != std::process::id())
}

/// Every live process whose environment carries `agent_id`, or that is its worker: a teamctl
/// binary whose argv says so (an argv alone is anyone's to set: attacker QA, a program named
/// otherwise with a worker's argv was ended by `kill`, `shutdown` and `delete`).
pub fn tagged_processes(agent_id: &str) -> Vec<u32> {
    pids()
        .filter(|&pid| is_teamctl_worker(pid, agent_id) || is_agent_process(pid, agent_id))
        .collect()
}

/// A process id that can be signalled: positive and within the kernel's range, so that no
/// cast can turn it into a process group (a negative id) or every process (`-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pid(i32);

impl Pid {
    /// The process `raw`, as the team file and live state record it; 0 and ids out of range
    /// are none.
    pub fn new(raw: u32) -> Option<Pid> {
        i32::try_from(raw).ok().filter(|&p| p > 0).map(Pid)
    }

    /// A process group id as recorded (`turn_pgid`).
    pub fn group(raw: i32) -> Option<Pid> {
        (raw > 0).then_some(Pid(raw))
    }

    /// The id as `/proc` and the records spell it.
    pub fn raw(self) -> u32 {
        self.0.unsigned_abs()
    }

    fn nix(self) -> NixPid {
        NixPid::from_raw(self.0)
    }
}

/// The process exists and is not a zombie.
pub fn running(pid: u32) -> bool {
    let Some(p) = Pid::new(pid) else {
        return false;
    };
    if kill(p.nix(), None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => {
            stat.rsplit_once(')')
                .is_none_or(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
                || threads_beyond_leader(pid)
        }
        Err(_) => false,
    }
}

/// Whether process `pid` sees the same mounts as this one (its mount namespace is ours). Only
/// then is a path it names (its home) the path this process sees: a home on a mount of
/// another namespace (a container's, systemd's PrivateTmp) looks gone from here while it is
/// not (attacker QA: `doctor --fix` ended such a home's live workers as orphans). `false`
/// when it cannot be told.
pub fn in_our_mount_namespace(pid: u32) -> bool {
    let ns = |who: &str| std::fs::read_link(format!("/proc/{who}/ns/mnt")).ok();
    Pid::new(pid).is_some() && ns(&pid.to_string()).is_some_and(|theirs| Some(theirs) == ns("self"))
}

/// Whether process `pid` is stopped by a signal (SIGSTOP, SIGTSTP) or a tracer: state `T` or
/// `t` in `/proc/PID/stat`. Such a worker runs but reads no mail until it is continued.
pub fn stopped_by_signal(pid: u32) -> bool {
    Pid::new(pid).is_some()
        && std::fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .is_some_and(|stat| state_of_stat(&stat).is_some_and(|s| s == b'T' || s == b't'))
}

/// The processes stopped by a signal (or a tracer), by process group: for each group, the
/// first such process found. One walk of `/proc` for any number of groups.
pub fn stopped_by_group() -> std::collections::HashMap<i32, u32> {
    let mut out = std::collections::HashMap::new();
    for pid in pids() {
        let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((b'T' | b't', pgrp)) = state_and_group(&stat) {
            out.entry(pgrp).or_insert(pid);
        }
    }
    out
}

/// The state letter and process group of a `/proc/PID/stat` line (fields 3 and 5).
fn state_and_group(stat: &[u8]) -> Option<(u8, i32)> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

/// The state letter of a `/proc/PID/stat` line: the first field after the parenthesised
/// command name (which may hold spaces and parentheses itself).
fn state_of_stat(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    stat[close + 1..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// When process `pid` started: field 22 of `/proc/PID/stat`, clock ticks since boot. With the
/// pid, it names one process for good: a pid is used again only by a process started later.
/// `None` when there is no such process (or no `/proc`).
pub fn start_time(pid: u32) -> Option<u64> {
    Pid::new(pid)?;
    start_time_in(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// How process `pid` of ours ended, while it is a zombie nobody has reaped yet: its exit
/// status (`Ok`) or the signal that ended it (`Err`), from `exit_code`, the last field of
/// `/proc/PID/stat` (Linux 3.5). tmux 3.3a now and then leaves a pane's ended program
/// unreaped, its exit status never shown (`#{pane_dead_status}` empty): read here instead.
pub fn zombie_exit(pid: u32) -> Option<std::result::Result<i32, i32>> {
    let stat = read_ours(pid, "stat")?;
    // A main thread that ended while another runs shows `Z` too, its own code 0 (re-QA: a
    // program that went on to exit 3 was said to exit 0): ended only when no thread is left.
    exit_of_stat(&stat).filter(|_| !threads_beyond_leader(pid))
}

/// `zombie_exit` of one `/proc/PID/stat` text.
fn exit_of_stat(stat: &[u8]) -> Option<std::result::Result<i32, i32>> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    if fields.next()? != "Z" {
        return None;
    }
    let code: i32 = fields.last()?.parse().ok()?;
    Some(match code & 0x7f {
        0 => Ok((code >> 8) & 0xff),
        sig => Err(sig),
    })
}

/// The parent of process `pid` (field 4 of `/proc/PID/stat`), `None` when there is no such
/// process (or no `/proc`).
pub fn parent(pid: u32) -> Option<u32> {
    Pid::new(pid)?;
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Is `ancestor` process `pid` itself, or one of its parents (up to init)?
pub fn is_self_or_ancestor(ancestor: u32, pid: u32) -> bool {
    let mut at = pid;
    // A chain longer than this is no process tree's.
    for _ in 0..256 {
        if at == ancestor {
            return true;
        }
        match parent(at) {
            Some(up) if up > 0 && up != at => at = up,
            _ => return false,
        }
    }
    false
}

/// The start time in a `/proc/PID/stat` line. The command name (field 2, in parentheses) may
/// hold spaces and `)` itself: the fields after it start after the line's last `)`.
pub fn start_time_in(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    // Field 3 (the state) is the first after the name: field 22 is the 20th.
    rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()
}

/// Call `then`, on a small thread of its own, once process `pid` has ended (exited, or been
/// killed; found through a pidfd, so nothing polls meanwhile). False when it cannot be watched:
/// gone already, or a kernel without `pidfd_open` (before Linux 5.3).
pub fn on_exit(pid: u32, then: impl FnOnce() + Send + 'static) -> bool {
    use nix::libc;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let Some(p) = Pid::new(pid) else {
        return false;
    };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, p.0, 0) };
    if fd < 0 {
        return false;
    }
    // SAFETY: a descriptor just returned by the kernel, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    std::thread::Builder::new()
        .name("pid-exit".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut pfd = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            loop {
                // SAFETY: one valid pollfd; the descriptor lives as long as this thread.
                let n = unsafe { libc::poll(&raw mut pfd, 1, -1) };
                if n > 0 {
                    break;
                }
                if n < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    return;
                }
            }
            then();
        })
        .is_ok()
}

pub fn signal(pid: u32, sig: Signal) -> bool {
    Pid::new(pid).is_some_and(|p| kill(p.nix(), sig).is_ok())
}

pub fn signal_group(pgid: i32, sig: Signal) -> bool {
    pgid > 1 && killpg(NixPid::from_raw(pgid), sig).is_ok()
}

/// Wait until `pred` holds or `timeout` passes; true when it held.
pub fn wait_for(timeout: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_zombies_exit_status_or_signal_is_read_from_its_stat() {
        let stat = |state: &str, code: i32| {
            format!(
                "6580 (sh) {state} 1 6580 6580 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 {code}\n"
            )
        };
        assert_eq!(exit_of_stat(stat("Z", 4 << 8).as_bytes()), Some(Ok(4)));
        assert_eq!(exit_of_stat(stat("Z", 9).as_bytes()), Some(Err(9)));
        assert_eq!(exit_of_stat(stat("Z", 0).as_bytes()), Some(Ok(0)));
        assert_eq!(exit_of_stat(stat("S", 0).as_bytes()), None);
        assert_eq!(exit_of_stat(b"6580 (a) b) Z 1 2 3 1024"), Some(Ok(4)));
    }

    #[test]
    fn a_process_stopped_by_a_signal_is_told_from_one_that_runs() {
        use std::os::unix::process::CommandExt;
        assert_eq!(state_of_stat(b"1 (a) T) S 0"), Some(b'S'));
        assert_eq!(state_and_group(b"1 (a) T) t 1 77 7"), Some((b't', 77)));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let group = i32::try_from(pid).unwrap();
        assert!(!stopped_by_signal(pid));
        assert_eq!(stopped_by_group().get(&group), None);
        assert!(signal(pid, Signal::SIGSTOP));
        assert!(wait_for(Duration::from_secs(10), || stopped_by_signal(pid)));
        assert_eq!(stopped_by_group().get(&group), Some(&pid));
        assert!(signal(pid, Signal::SIGCONT));
        assert!(wait_for(Duration::from_secs(10), || !stopped_by_signal(
            pid
        )));
        let _ = child.kill();
        let _ = child.wait();
        assert!(!stopped_by_signal(pid));
    }
    use super::*;

    /// A gone home's worker names its home in its argv: judged by that home's key, and no
    /// other home's.
    #[test]
    fn a_home_of_a_key_is_named_by_its_path_only() {
        let home = tempfile::tempdir().unwrap();
        let gone = home.path().join("gone-home");
        let key = home_key_of(&gone);
        let of = HomeOf::Key(&key);
        assert!(of.names(gone.as_os_str().as_encoded_bytes()));
        assert!(!of.names(home.path().join("another").as_os_str().as_encoded_bytes()));
        assert_eq!(HomeOf::key(&home_key()), HomeOf::Ours);
    }

    /// Every process carrying `agent_id` ended as `kill` and `shutdown` end them
    /// (`backend::Ending`).
    fn end_tagged(agent_id: &str, grace: Duration) {
        let mut ending = super::super::Ending::new(grace);
        ending.tagged(agent_id);
        ending.finish().unwrap();
    }

    const KEY_OF_H: &str = "3bd80ffb681161e6";

    /// A program whose first thread ended while another runs on reads as a zombie in
    /// `/proc/PID/stat`: it is running, not ended (attacker QA: its pane was closed as a
    /// worker's that had just ended); once it exits and is reaped it has ended.
    #[test]
    fn a_program_whose_first_thread_ended_still_runs() {
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import threading, time, ctypes\n\
                 threading.Thread(target=lambda: time.sleep(60)).start()\n\
                 ctypes.CDLL(None).pthread_exit(None)",
            ])
            .spawn()
            .unwrap();
        let pid = child.id();
        let zombie_looking = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        };
        assert!(
            wait_for(Duration::from_secs(20), zombie_looking),
            "the first thread never ended"
        );
        assert!(!ended(pid) && running(pid) && !ended_or_ending(pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(ended(pid) && !running(pid));
    }

    #[test]
    fn home_keys_are_stable_and_differ_per_home() {
        // The first 64 bits of the SHA-256 of the path: fixed for ever, whatever the Rust
        // version (`printf %s /nonexistent-teamctl/h | sha256sum | cut -c1-16`).
        assert_eq!(home_key_of(Path::new("/nonexistent-teamctl/h")), KEY_OF_H);
        assert_eq!(home_key_of(Path::new("/nonexistent-teamctl/h")).len(), 16);
        assert_ne!(
            home_key_of(Path::new("/nonexistent-teamctl/a")),
            home_key_of(Path::new("/nonexistent-teamctl/b"))
        );
        // A home reached through a symlink has the key of the real path, made or not.
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(home_key_of(&link), home_key_of(&real));
        assert_eq!(home_key_of(&link.join("h")), home_key_of(&real.join("h")));
    }

    #[test]
    fn a_start_time_is_read_after_the_last_parenthesis() {
        // Field 22; the name (field 2) with spaces and parentheses of its own.
        let tail = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21";
        for name in ["(sh)", "(a b)", "(x) 9 9 (y)", "(:) )", "())"] {
            let line = format!("77 {name} {tail}\n");
            assert_eq!(start_time_in(line.as_bytes()), Some(424_242), "{line}");
        }
        assert_eq!(start_time_in(b"77 (sh) S 1 2"), None, "cut short");
        assert_eq!(start_time_in(b"77 sh S 1 2 3"), None, "no name");
        assert_eq!(start_time_in(b""), None);
        // Our own, as the kernel writes it: the same on every read, and none for no process.
        let me = std::process::id();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(me), start_time(me));
        assert_eq!(start_time(0), None);
    }

    #[test]
    fn a_process_is_the_recorded_one_only_with_its_own_start_time() {
        let me = std::process::id();
        let mine = start_time(me);
        assert_eq!(recorded_start(me), mine.unwrap());
        assert!(is_recorded(me, mine));
        // Another start time (the pid given again), none recorded, or `0` (it had ended when
        // recorded): not that process.
        assert!(!is_recorded(me, mine.map(|t| t + 1)));
        assert!(!is_recorded(me, None));
        assert!(!is_recorded(me, Some(0)));
        // No such process.
        assert_eq!(recorded_start(0), 0);
        assert!(!is_recorded(0, Some(1)));
    }

    #[test]
    fn our_own_process_is_running_and_untagged() {
        let me = std::process::id();
        assert!(running(me));
        assert!(!is_worker(me, "x@y"));
        assert!(!is_agent_process(me, "x@y"));
        assert!(!running(0));
    }

    #[test]
    fn agent_tag_is_read_from_the_environment() {
        // A tag no other test or process uses (`a_running_worker_is_one_and_its_zombie_is_not`,
        // running beside it, has a worker of its own: a shared tag found both).
        let id = format!("bob@proc-env-test-{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(crate::domain::env::AGENT_ID, &id)
            .spawn()
            .unwrap();
        let pid = child.id();
        // Until exec, /proc shows the parent's environment: wait for the child to be `sleep`.
        assert!(wait_for(Duration::from_secs(5), || {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"))
        }));
        assert!(is_agent_process(pid, &id));
        assert!(!is_agent_process(pid, "alice@t"));
        assert_eq!(tagged_processes(&id), vec![pid]);
        end_tagged(&id, Duration::from_secs(2));
        let _ = child.wait();
        assert!(!running(pid));
    }

    /// A worker is told by its argv alone (`read_ours`): while it runs it is one, and once it
    /// has exited, a zombie not yet reaped, it is not (its `cmdline` reads empty), though its
    /// pid and `/proc` entry are still there.
    #[test]
    fn a_running_worker_is_one_and_its_zombie_is_not() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        // `sh worker --home H --id ID` runs the script `worker`, which waits on its stdin:
        // the argv of a worker.
        std::fs::write(dir.path().join("worker"), "read line\n").unwrap();
        let id = format!("bob@proc-test-{}", std::process::id());
        let mut child = std::process::Command::new("sh")
            .args(["worker", "--home", "/nonexistent-teamctl/h", "--id", &id])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(wait_for(Duration::from_secs(5), || {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sh\0"))
        }));
        assert!(is_worker(pid, &id));
        assert!(!is_worker(pid, "alice@t"));
        // It exits; not reaped yet, it is a zombie.
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        let zombie = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        };
        assert!(wait_for(Duration::from_secs(5), zombie));
        assert!(!is_worker(pid, &id), "a zombie taken for a running worker");
        assert!(!is_agent_process(pid, &id));
        assert!(!running(pid));
        child.wait().unwrap();
        assert!(!is_worker(pid, &id));
    }

    /// A process is teamctl's worker (or console) when its argv says so and its program is a
    /// teamctl binary: argv can be copied (`exec -a`, a script called `worker`), the binary's
    /// name or file less by accident. Stood in for here by `sh` copied under the name
    /// `teamctl`, which runs the script `worker` (or `lead`) in its directory.
    #[test]
    fn a_worker_or_console_is_teamctls_only_when_a_teamctl_binary_runs_it() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        for script in ["worker", "lead"] {
            std::fs::write(dir.path().join(script), "read line\n").unwrap();
        }
        let sh = which::which("sh").unwrap();
        let named = dir.path().join("teamctl");
        std::fs::copy(&sh, &named).unwrap();
        let id = format!("bob@proc-exe-test-{}", std::process::id());
        let start = |program: &Path, args: &[&str]| {
            let child = std::process::Command::new(program)
                .args(args)
                .current_dir(dir.path())
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            let word = args[0].as_bytes().to_vec();
            assert!(wait_for(Duration::from_secs(5), || {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).nth(1) == Some(&word[..]))
            }));
            child
        };
        let worker = ["worker", "--home", "/nonexistent-teamctl/h", "--id", &id];
        let lead = ["lead", "--home", "/nonexistent-teamctl/h", "--team", "t"];
        let mut fake = start(&sh, &worker);
        let mut ours = start(&named, &worker);
        let mut console = start(&named, &lead);
        let mut fake_console = start(&sh, &lead);
        let (f, o, c, fc) = (fake.id(), ours.id(), console.id(), fake_console.id());
        // The argv alone says "worker" for both; only one runs a teamctl binary.
        assert!(is_worker(f, &id) && is_worker(o, &id));
        assert!(!runs_teamctl(f) && runs_teamctl(o));
        assert!(!is_teamctl_worker(f, &id));
        assert!(is_teamctl_worker(o, &id));
        assert!(!is_teamctl_worker(o, "alice@t"));
        assert!(!is_teamctl_worker(c, &id));
        assert!(is_console(c, "t") && !is_console(c, "u"));
        assert!(!is_console(fc, "t") && !is_console(o, "t"));
        // This test's own binary is a teamctl binary (the same file as its own).
        assert!(runs_teamctl(std::process::id()));
        assert!(!ended(f) && !ended(std::process::id()));
        for child in [&mut fake, &mut ours, &mut console, &mut fake_console] {
            child.stdin.take().unwrap().write_all(b"\n").unwrap();
        }
        // A zombie has ended, as has a pid with no process.
        assert!(wait_for(Duration::from_secs(5), || ended(o)));
        assert!(!runs_teamctl(0) && ended(0));
        for child in [&mut fake, &mut ours, &mut console, &mut fake_console] {
            child.wait().unwrap();
        }
        assert!(ended(o) && !is_teamctl_worker(o, &id));
    }

    /// Run as root (as CI is), a process of another user that carries the same tag is not
    /// ours: never found, never signalled. As another user, such a process cannot be made.
    #[test]
    fn another_users_process_with_our_tag_is_not_ours() {
        use std::os::unix::process::CommandExt;
        if !nix::unistd::geteuid().is_root() {
            assert!(ours(std::process::id()));
            return;
        }
        let id = format!("eve@proc-test-{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(crate::domain::env::AGENT_ID, &id)
            .uid(65534)
            .gid(65534)
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(wait_for(Duration::from_secs(5), || {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"))
        }));
        assert!(!ours(pid));
        assert!(!is_agent_process(pid, &id));
        assert!(tagged_processes(&id).is_empty());
        end_tagged(&id, Duration::from_millis(100));
        assert!(running(pid), "another user's process was ended");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The same, for another user's process shaped as a worker (argv `worker --home H --id
    /// ID`) and carrying the tag, that made itself not dumpable: its `/proc` files then show
    /// root as their owner, its directory still its own user (attacker QA, twelfth session).
    #[test]
    fn another_users_undumpable_worker_lookalike_is_not_ours() {
        use std::os::unix::process::CommandExt;
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("worker"),
            "import ctypes, time\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\ntime.sleep(30)\n",
        )
        .unwrap();
        // Readable by that user.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let id = format!("eve@proc-test-nd-{}", std::process::id());
        let mut child = std::process::Command::new("python3")
            .args(["worker", "--home", "/nonexistent-teamctl/h", "--id", &id])
            .current_dir(dir.path())
            .env(crate::domain::env::AGENT_ID, &id)
            .uid(65534)
            .gid(65534)
            .spawn()
            .unwrap();
        let pid = child.id();
        use std::os::unix::fs::MetadataExt;
        // Running, its argv there (not a zombie's empty one), its files shown as root's.
        let undumpable = || {
            std::fs::metadata(format!("/proc/{pid}/cmdline")).is_ok_and(|m| m.uid() == 0)
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.ends_with(format!("{id}\0").as_bytes()))
        };
        assert!(
            wait_for(Duration::from_secs(10), undumpable),
            "the lookalike did not make itself undumpable"
        );
        assert!(
            !is_worker(pid, &id),
            "another user's process taken for a worker"
        );
        assert!(!is_agent_process(pid, &id));
        assert!(tagged_processes(&id).is_empty());
        end_tagged(&id, Duration::from_millis(100));
        assert!(running(pid), "another user's process was ended");
        let _ = child.kill();
        let _ = child.wait();
    }
}
