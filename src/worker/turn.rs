//! One turn: the agent command run through `sh -c` in its own process group, the message on
//! stdin and in the environment, output streamed live to the pane and the log, stdout kept
//! for the reply. A turn ends when the command exits, or is interrupted, timed out or the
//! worker is told to stop; whatever is left of its process group ends with it. A stdout too
//! long for a reply is written whole to a private file and the reply is cut with a marker.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::signal::unix::Signal as SignalStream;
use tokio::time::Instant;

use super::launch::{Launch, Report, Warm, cannot_start, in_child};
use super::sink::Sink;
use crate::backend::proc::signal_group;
use crate::error::{Error, Result};

/// The largest reply kept from a turn's stdout, measured as it is written in the inbox record
/// (JSON escaping included, so it always fits the 1 MiB record limit). A longer one is cut
/// with a marker naming the file that holds the whole of it (`TurnSpec::spill`).
pub const MAX_REPLY: usize = 1024 * 1024 - 16 * 1024;

/// Environment values longer than this are cut (the kernel refuses single strings over
/// 128 KiB); the full text is always on stdin.
const MAX_ENV_VALUE: usize = 100 * 1024;

/// The shell that runs agent commands, by path: looked up through the `PATH` a turn gets
/// (teamctl's own directory first), `sh` cost about ten failed `execve` calls per turn.
pub const SHELL: &str = "/bin/sh";

/// How long a stopped turn gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// A turn to run, as a plain value.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    /// Run through `sh -c` (an `--exec` command), unless `argv` is given.
    pub command: String,
    /// Run directly, never through a shell (an `--agent` preset): program first.
    pub argv: Option<Vec<String>>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub stdin: String,
    pub timeout: Option<Duration>,
    /// Where the whole stdout is written (0600) when it is too long for a reply.
    pub spill: Option<PathBuf>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    Exited(i32),
    Signalled(i32),
    Interrupted,
    TimedOut,
    /// The worker itself was told to stop.
    Stopped,
    /// The agent exited 0, but its record of the turn holds no answer from its model
    /// (`agent::preset::ReplyVia::AiderLlmHistory`): the model was never reached or failed.
    NoReply,
}

#[derive(Debug)]
pub struct TurnResult {
    /// Whether the agent process started at all.
    pub spawned: bool,
    pub end: TurnEnd,
    pub stdout: String,
    pub stderr_tail: String,
}

impl TurnResult {
    pub fn succeeded(&self) -> bool {
        self.end == TurnEnd::Exited(0)
    }

    /// The turn gave no reply (`TurnEnd::NoReply`) for the reason `why`, said after the end of
    /// the agent's stdout (aider's own words on what went wrong).
    pub fn no_reply(&mut self, why: &str) {
        self.end = TurnEnd::NoReply;
        self.stderr_tail = format!("{}\n{why}", self.stdout.trim_end());
    }

    /// How the turn ended, in a few words (`exit status 3`, `interrupted`).
    pub fn end_words(&self) -> String {
        match &self.end {
            TurnEnd::Exited(c) => format!("exit status {c}"),
            TurnEnd::Signalled(s) => format!("killed by signal {s}"),
            TurnEnd::Interrupted => "interrupted".into(),
            TurnEnd::TimedOut => "timed out".into(),
            TurnEnd::Stopped => "stopped".into(),
            TurnEnd::NoReply => "no reply".into(),
        }
    }

    /// A short line saying why the turn failed.
    pub fn failure(&self) -> String {
        let why = self.end_words();
        // Some agents say why on stdout (Claude Code's "Not logged in"): with nothing on
        // stderr, the end of stdout explains the failure instead.
        let tail = match self.stderr_tail.trim() {
            "" => self.stdout.trim(),
            t => t,
        };
        if tail.is_empty() {
            why
        } else {
            let last: Vec<&str> = tail.lines().rev().take(3).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            let said = last.join(" | ");
            // A notice, not a reply: at most the last 400 characters of it.
            let cut = said.char_indices().rev().nth(399).map_or(0, |(i, _)| i);
            match self.end {
                // Ended from outside: the output is what it had got to, not why it ended
                // ("interrupted: starting" read like a state, new-user QA).
                TurnEnd::Interrupted | TurnEnd::TimedOut | TurnEnd::Stopped => {
                    format!("{why}; its last output: {}", &said[cut..])
                }
                TurnEnd::Exited(_) | TurnEnd::Signalled(_) | TurnEnd::NoReply => {
                    format!("{why}: {}", &said[cut..])
                }
            }
        }
    }
}

/// Signals that end a turn early.
pub struct Stoppers {
    pub interrupt: SignalStream,
    pub terminate: SignalStream,
    pub hangup: SignalStream,
}

/// Cut a value for the environment.
pub fn env_value(s: &str) -> String {
    if s.len() <= MAX_ENV_VALUE {
        return s.to_string();
    }
    let mut end = MAX_ENV_VALUE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Words `sh -c` would run as one external program with no shell work on the way (no quoting,
/// expansion, redirection, assignment or builtin): its path, found for each turn through the
/// turn's `PATH` (a `stat` per directory, where `sh` tries an `execve` in each), and the words. `None`: run through the shell.
fn simple_command<'a>(
    command: &'a str,
    env: &[(String, String)],
) -> Option<(PathBuf, Vec<&'a str>)> {
    // dash's builtins and keywords: `sh -c` would not run a program for these.
    const SHELL_WORDS: &[&str] = &[
        ".", ":", "[", "alias", "bg", "break", "case", "cd", "command", "continue", "do", "done",
        "echo", "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fc", "fg",
        "fi", "for", "getopts", "hash", "if", "in", "jobs", "kill", "local", "printf", "pwd",
        "read", "readonly", "return", "set", "shift", "test", "then", "times", "trap", "true",
        "type", "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
    ];
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./,:+@%=".contains(c);
    if !command.chars().all(|c| plain(c) || c == ' ') {
        return None;
    }
    let words: Vec<&str> = command.split(' ').filter(|w| !w.is_empty()).collect();
    let first = *words.first()?;
    if first.contains('=') || SHELL_WORDS.contains(&first) {
        return None;
    }
    let path_var = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())?;
    let path = if first.contains('/') {
        // Relative to the turn's directory, or not runnable: the shell says what it says.
        let p = PathBuf::from(first);
        let runnable = std::fs::metadata(&p).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        });
        (p.is_absolute() && runnable).then_some(p)?
    } else {
        lookup(&path_var, first)?
    };
    Some((path, words))
}

/// `program` through `path_var` as `sh` finds it: the first executable file, looked up again
/// for every turn (a program installed since in an earlier directory is the one `sh` would
/// run; a lookup remembered for the worker's life missed it, QA). The walk is a `stat` per
/// directory up to the program's, microseconds; what the direct start saves is `sh` itself.
fn lookup(path_var: &str, program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    // A relative directory in PATH depends on the turn's directory: left to the shell.
    if path_var.split(':').any(|d| !d.starts_with('/')) {
        return None;
    }
    path_var
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Make the environment recorded at `file` (`store::envfile`: the shell's that spawned or last
/// resumed this teammate) the worker's own, so every turn starts from it; the worker's
/// teamctl and tmux pane variables stay. Without a recorded one (a teammate spawned by an
/// older teamctl), nothing changes. Called before the worker starts any thread.
pub fn adopt_recorded_env(file: &Path) -> Result<()> {
    let Some(recorded) = crate::store::envfile::load(file)? else {
        return Ok(());
    };
    let vars = crate::store::envfile::merged(recorded, std::env::vars_os());
    for (k, _) in std::env::vars_os() {
        if !vars.iter().any(|(v, _)| *v == k) {
            // SAFETY: the worker has not started any thread yet (see the caller).
            unsafe { std::env::remove_var(&k) };
        }
    }
    for (k, v) in vars {
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
    Ok(())
}

/// Run one turn. `record` is called before the message can reach the turn's program (a
/// program that kills its worker at once must find its turn recorded, or the next message
/// would run it again): with the warm launcher's pid, which becomes the turn's process group;
/// for a fork of the worker, with `None` before it and with its group once it exists. `warm`:
/// a launcher started ahead for it (`launch.rs`), used when it is still there.
pub async fn run(
    spec: &TurnSpec,
    sink: &mut Sink,
    stop: &mut Stoppers,
    warm: Option<Warm>,
    mut record: impl FnMut(Option<i32>),
) -> Result<TurnResult> {
    sink.begin_turn();
    // The process: the warm launcher become the program, or a fork of the worker.
    let (mut child, report) = start(&launch_of(spec), warm, sink, &mut record).await?;
    // The program runs (or is about to): whatever it does to its worker from here, its turn
    // is recorded.
    crate::pause::at("turn-started");
    let pgid = child.id().map_or(0, |p| p as i32);
    // The message on stdin, written beside the reading of the output.
    feed_stdin(&mut child, &spec.stdin);
    // Its output read until it ended (or was ended: timeout, interrupt, stop).
    let mut ran = until_ended(&mut child, report, spec, sink, stop, pgid).await;
    // A launcher that could not become the program: a turn that did not start.
    ran.launch_failure(sink).await?;
    // How it ended, and what it wrote.
    ran.result(spec, sink)
}

/// Start the turn's process: through `warm` when its launcher is still there (with the pipe
/// its launcher reports on: why it could not become the program, if it could not; read
/// beside the output, so a launcher that hangs is a turn that hangs), else a fork of the
/// worker. One that cannot start is said in the teammate's log and pane too.
async fn start(
    launch: &Launch,
    warm: Option<Warm>,
    sink: &mut Sink,
    record: &mut impl FnMut(Option<i32>),
) -> Result<(tokio::process::Child, Option<Report>)> {
    // Recorded with the launcher's pid before it is told: gone meanwhile (`go` finds it so),
    // the fork below records the turn again.
    let warm = match warm {
        Some(warm) => {
            record(warm.pid());
            warm.go(launch).await
        }
        None => None,
    };
    let started = match warm {
        Some((child, pipe)) => Ok((child, Some(pipe))),
        None => {
            record(None);
            cold(launch).map(|child| {
                record(child.id().and_then(|p| i32::try_from(p).ok()));
                (child, None)
            })
        }
    };
    started.map_err(|why| {
        // In the teammate's own log and pane too, not only in the failure notice.
        sink.note(&why);
        Error::failed(why)
    })
}

/// Write the message on the turn's stdin: what fits the pipe at once (it is non-blocking),
/// so the program has its message without waiting for a task to be scheduled; the rest (or
/// all of it, after a write that failed) from a task of its own (an agent that reads it only
/// after writing must not hold the turn).
fn feed_stdin(child: &mut tokio::process::Child, text: &str) {
    let Some(mut stdin) = child.stdin.take() else {
        return;
    };
    let bytes = text.as_bytes();
    let written = nix::unistd::write(&stdin, bytes).unwrap_or(0);
    if written == bytes.len() {
        // Closed here: the program reads the end of its message.
        return;
    }
    let rest = bytes[written..].to_vec();
    tokio::spawn(async move {
        let _ = stdin.write_all(&rest).await;
    });
}

/// What a turn wrote: the reply kept from its stdout (all of it spilled to a file past
/// `MAX_REPLY`), and the tail of its stderr.
#[derive(Default)]
struct Output {
    stdout: Vec<u8>,
    /// Bytes of stdout in all.
    total: usize,
    spill: Option<Spill>,
    tail: Vec<u8>,
}

impl Output {
    /// Take a read of stdout: kept for the reply up to `MAX_REPLY`, the whole text written
    /// to `spill_to` too from when it is longer.
    fn stdout(&mut self, bytes: &[u8], spill_to: Option<&Path>) {
        self.total += bytes.len();
        if self.total > MAX_REPLY && self.spill.is_none() {
            // From here on the whole text goes to the file too.
            self.spill = Some(Spill::open(spill_to, &self.stdout));
        }
        if let Some(f) = &mut self.spill {
            f.write(bytes);
        }
        let room = MAX_REPLY.saturating_sub(self.stdout.len());
        self.stdout
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Take a read of stderr: its last 2 to 4 KiB kept.
    fn stderr(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 4096 {
            self.tail.drain(..self.tail.len() - 2048);
        }
    }
}

/// A running turn being ended by teamctl: why, and when SIGKILL follows the SIGTERM.
struct Ending {
    pgid: i32,
    end: Option<TurnEnd>,
    kill_at: Instant,
}

impl Ending {
    /// End the turn for `why` (the first reason stands): SIGTERM to its group now, SIGKILL
    /// after the grace.
    fn stop(&mut self, why: TurnEnd) {
        if self.end.is_none() {
            self.end = Some(why);
            signal_group(self.pgid, Signal::SIGTERM);
            self.kill_at = Instant::now() + KILL_GRACE;
        }
    }
}

/// A turn's process that has ended, and what it wrote.
struct Ran {
    status: std::io::Result<std::process::ExitStatus>,
    /// Why teamctl ended it, if it did.
    end: Option<TurnEnd>,
    output: Output,
    /// A warm start's report pipe, if not read to its end yet, and what it said so far.
    report: Option<Report>,
    why: Vec<u8>,
}

/// Read the turn's output (to the sink, and kept) until its process ended and its pipes
/// closed or were given up on, ending it on its timeout or when told to; a warm start's
/// report read beside.
async fn until_ended(
    child: &mut tokio::process::Child,
    mut report: Option<Report>,
    spec: &TurnSpec,
    sink: &mut Sink,
    stop: &mut Stoppers,
    pgid: i32,
) -> Ran {
    let mut out = child.stdout.take().expect("stdout piped");
    let mut err = child.stderr.take().expect("stderr piped");
    let (mut obuf, mut ebuf) = (vec![0u8; 8192], vec![0u8; 4096]);
    let (mut out_open, mut err_open) = (true, true);
    let mut output = Output::default();
    let mut status = None;
    let far = Instant::now() + Duration::from_hours(10 * 365 * 24);
    let timeout_at = spec
        .timeout
        .and_then(|t| Instant::now().checked_add(t))
        .map_or(far, |at| at.min(far));
    let mut ending = Ending {
        pgid,
        end: None,
        kill_at: far,
    };
    let mut pipes_until = far;
    let mut why = Vec::new();
    while out_open || err_open || status.is_none() {
        tokio::select! {
            n = async { report.as_mut().expect("a report pipe").read_into(&mut why).await },
                if report.is_some() => {
                if !matches!(n, Ok(n) if n > 0) {
                    report = None;
                }
            }
            n = out.read(&mut obuf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => {
                    sink.output(&obuf[..n]);
                    output.stdout(&obuf[..n], spec.spill.as_deref());
                }
            },
            n = err.read(&mut ebuf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => {
                    sink.output(&ebuf[..n]);
                    output.stderr(&ebuf[..n]);
                }
            },
            st = child.wait(), if status.is_none() => {
                status = Some(st);
                // Whatever the turn left running in its group ends with it.
                signal_group(pgid, Signal::SIGKILL);
                pipes_until = Instant::now() + Duration::from_secs(2);
            }
            () = tokio::time::sleep_until(timeout_at), if ending.end.is_none() && status.is_none() => {
                // In the teammate's log too: the failure notice goes to the sender only.
                sink.note(&format!(
                    "turn timed out after {} (its turn timeout); ending it: SIGTERM to its processes, SIGKILL {} later if still running",
                    seconds(spec.timeout.unwrap_or_default()),
                    seconds(KILL_GRACE)
                ));
                ending.stop(TurnEnd::TimedOut);
            }
            _ = stop.interrupt.recv(), if status.is_none() => ending.stop(TurnEnd::Interrupted),
            _ = stop.terminate.recv() => ending.stop(TurnEnd::Stopped),
            _ = stop.hangup.recv() => ending.stop(TurnEnd::Stopped),
            () = tokio::time::sleep_until(ending.kill_at), if status.is_none() => {
                sink.note(&format!(
                    "the turn was still running {} after SIGTERM; killed it (SIGKILL)",
                    seconds(KILL_GRACE)
                ));
                signal_group(pgid, Signal::SIGKILL);
                ending.kill_at = far;
            }
            // A process that escaped the group may hold the pipes open: stop reading.
            () = tokio::time::sleep_until(pipes_until) => {
                out_open = false;
                err_open = false;
            }
        }
    }
    Ran {
        status: status.expect("loop ends after wait"),
        end: ending.end,
        output,
        report,
        why,
    }
}

impl Ran {
    /// What a warm start's launcher said, read to its end (its writer is gone once the child
    /// has ended): anything there means it could not become the program, a turn that did not
    /// start, as a cold start says.
    async fn launch_failure(&mut self, sink: &mut Sink) -> Result<()> {
        if let Some(mut rest) = self.report.take() {
            while matches!(rest.read_into(&mut self.why).await, Ok(n) if n > 0) {}
        }
        if self.why.is_empty() {
            return Ok(());
        }
        let why = no_nul(String::from_utf8_lossy(&self.why).trim().to_string());
        sink.note(&why);
        Err(Error::failed(why))
    }

    /// The turn's result: how it ended (a signal not sent by teamctl said in the log), its
    /// reply and its stderr's tail.
    fn result(self, spec: &TurnSpec, sink: &mut Sink) -> Result<TurnResult> {
        let status = self
            .status
            .map_err(|e| Error::failed(format!("waiting for the agent command: {e}")))?;
        let end = self.end.unwrap_or_else(|| match status.code() {
            Some(c) => TurnEnd::Exited(c),
            None => {
                // Not ended by teamctl (no interrupt, timeout or stop): `kill -9` of the agent, a
                // crash. In the teammate's log too: the failure notice goes to the sender only.
                let s = status.signal().unwrap_or(0);
                sink.note(&format!(
                    "the turn's process was killed by signal {s} ({}), not by teamctl; the turn failed",
                    signal_name(s)
                ));
                TurnEnd::Signalled(s)
            }
        });
        let Output {
            stdout,
            total,
            spill,
            tail,
        } = self.output;
        Ok(TurnResult {
            spawned: true,
            end,
            stdout: fit_reply(&stdout, total, spill, spec.spill.as_deref()),
            stderr_tail: no_nul(String::from_utf8_lossy(&tail).into_owned()),
        })
    }
}

/// A signal's name ("SIGKILL"), or "unknown signal".
fn signal_name(s: i32) -> &'static str {
    Signal::try_from(s).map_or("unknown signal", Signal::as_str)
}

/// A duration for the log, in seconds: "1s", "300s", "0.5s".
pub(super) fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// The program a turn runs: the preset's argv as it is; an `--exec` command that is one plain
/// program (`simple_command`) run directly, what `sh -c` would do less its fork and its walk of
/// PATH; anything else through `sh -c`.
fn launch_of(spec: &TurnSpec) -> Launch {
    let (program, arg0, args, what) = match spec.argv.as_deref() {
        Some([program, args @ ..]) => (
            PathBuf::from(program),
            None,
            args.to_vec(),
            format!("cannot run {program}"),
        ),
        _ => {
            let what = "cannot run the agent command".to_string();
            match simple_command(&spec.command, &spec.env) {
                Some((path, words)) => (
                    path,
                    Some(words[0].to_string()),
                    words[1..].iter().map(|w| (*w).to_string()).collect(),
                    what,
                ),
                None => (
                    PathBuf::from(SHELL),
                    None,
                    vec!["-c".to_string(), spec.command.clone()],
                    what,
                ),
            }
        }
    };
    Launch {
        program,
        arg0,
        args,
        cwd: spec.cwd.clone(),
        env: spec.env.clone(),
        what,
    }
}

/// Start `launch` the plain way: a fork of the worker that becomes the program.
fn cold(launch: &Launch) -> std::result::Result<tokio::process::Child, String> {
    let mut cmd = tokio::process::Command::from(launch.command());
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let parent = std::process::id();
    // SAFETY: `in_child` is async-signal-safe (see there).
    unsafe {
        cmd.pre_exec(move || in_child(parent));
    }
    cmd.spawn()
        .map_err(|e| cannot_start(&launch.what, &launch.cwd, &e))
}

/// Output as message text: a NUL byte, which no message may hold (the next turn could not be
/// given it), becomes U+FFFD, so a reply with one is still delivered.
fn no_nul(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{fffd}")
    } else {
        text
    }
}

/// The file that receives the whole of a stdout too long for a reply, up to `cap` bytes
/// (`bounded::SPILL`): a runaway agent does not fill the disk.
struct Spill {
    path: Option<PathBuf>,
    file: std::result::Result<std::fs::File, String>,
    written: u64,
    cap: u64,
}

impl Spill {
    /// Open `path` (private, never through a symlink) and write `start`, what came so far.
    fn open(path: Option<&Path>, start: &[u8]) -> Spill {
        let Some(path) = path else {
            return Spill {
                path: None,
                file: Err("no file was given for it".into()),
                written: 0,
                cap: crate::domain::bounded::SPILL,
            };
        };
        let file = (|| {
            if let Some(dir) = path.parent() {
                crate::store::fsutil::ensure_dir_levels(dir, 1).map_err(|e| e.to_string())?;
            }
            // A file of its own, made new: whatever is at the path (an earlier run's file, or
            // a hard link to a file elsewhere, a FIFO: attacker QA 45, written over or hung
            // in `open`) is unlinked first, never opened.
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("{}: {e}", path.display()));
                }
                _ => {}
            }
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
                .open(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(f)
        })();
        let mut spill = Spill {
            path: Some(path.to_path_buf()),
            file,
            written: 0,
            cap: crate::domain::bounded::SPILL,
        };
        spill.write(start);
        spill
    }

    /// Write `bytes`, as far as the cap allows.
    fn write(&mut self, bytes: &[u8]) {
        let room = usize::try_from(self.cap.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let part = &bytes[..bytes.len().min(room)];
        if let Ok(f) = &mut self.file
            && !part.is_empty()
            && let Err(e) = f.write_all(part)
        {
            self.file = Err(e.to_string());
        }
        self.written += bytes.len() as u64;
    }

    /// Where the whole text is, for the marker.
    fn whereabouts(&self) -> String {
        match (&self.file, &self.path) {
            (Ok(_), Some(p)) if self.written > self.cap => format!(
                "its first {} MiB are in {}",
                self.cap / (1024 * 1024),
                p.display()
            ),
            (Ok(_), Some(p)) => format!("the whole reply is in {}", p.display()),
            (Err(e), _) => format!("the whole reply could not be kept ({e})"),
            (Ok(_), None) => "the whole reply was not kept".into(),
        }
    }
}

/// How many bytes `c` takes in a JSON string.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Make `file` anew, empty and 0600, for the agent to write its record of the turn to
/// (`agent::preset::ReplyVia::AiderLlmHistory`): so the record is this turn's alone, and it
/// holds one turn at most, not every request of the conversation. What was there is unlinked,
/// never written through (a hard link's other name keeps its text); the caller has checked it
/// is no link or FIFO (`fsutil::check_file`).
pub fn fresh_record(file: &Path) -> Result<()> {
    use crate::error::IoContext;
    match std::fs::remove_file(file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e).at(file),
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_CLOEXEC)
        .open(file)
        .at(file)?;
    Ok(())
}

/// The reply read from an agent's own record of the turn rather than its stdout (aider's LLM
/// history, made anew before the turn by `fresh_record`): the model's last answer at the end
/// of `file`, fitted as a stdout reply is (`fit_reply`). Only the last `MAX_RECORD_READ` bytes
/// are read (every request of the turn, with the whole conversation, is before it). Else why
/// not: no answer there, or the file could not be read (a link or not a regular file now).
pub fn recorded_reply(file: &Path, spec: &TurnSpec) -> std::result::Result<String, String> {
    use std::io::{Read, Seek, SeekFrom};
    /// The most of the end of a record the answer is looked for in.
    const MAX_RECORD_READ: u64 = 16 * 1024 * 1024;
    let unread = |e: std::io::Error| format!("{} could not be read: {e}", file.display());
    let mut f = crate::store::fsutil::open_read(file).map_err(unread)?;
    let len = f.metadata().map_err(unread)?.len();
    let from = len.saturating_sub(MAX_RECORD_READ);
    f.seek(SeekFrom::Start(from)).map_err(unread)?;
    let mut bytes = Vec::new();
    f.take(len - from).read_to_end(&mut bytes).map_err(unread)?;
    let mut text = String::from_utf8_lossy(&bytes);
    if from > 0 {
        // The first line read is cut.
        let rest = text.find('\n').map_or("", |at| &text[at + 1..]);
        text = std::borrow::Cow::Owned(rest.to_string());
    }
    let reply = crate::agent::aider::last_reply(&text)
        .ok_or_else(|| format!("{} ends with no answer from the model", file.display()))?;
    Ok(fit_reply(
        reply.as_bytes(),
        reply.len(),
        None,
        spec.spill.as_deref(),
    ))
}

/// The reply made of `kept`, the first bytes of a stdout of `total` bytes: whole when it fits
/// `MAX_REPLY` as JSON, else cut with a marker saying how much was cut and where the whole
/// text is (written to `path` now if the stream did not spill there already).
fn fit_reply(kept: &[u8], total: usize, spill: Option<Spill>, path: Option<&Path>) -> String {
    let text = no_nul(String::from_utf8_lossy(kept).into_owned());
    let escaped: usize = text.chars().map(escaped_len).sum();
    if total <= kept.len() && escaped <= MAX_REPLY {
        return text;
    }
    // The whole text was in memory (it is short in bytes, long only once escaped).
    let spill = spill.unwrap_or_else(|| Spill::open(path, kept));
    // Room for the marker and the record's other fields.
    let budget = MAX_REPLY - 1024;
    let mut used = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        used += escaped_len(c);
        if used > budget {
            break;
        }
        end = i + c.len_utf8();
    }
    let shown = &text[..end];
    format!(
        "{shown}\n[teamctl: reply cut: {} of {total} bytes not shown; {}]\n",
        total.saturating_sub(shown.len()),
        spill.whereabouts()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![("PATH".into(), "/nonexistent:/usr/bin:/bin".into())]
    }

    #[test]
    fn a_turn_ended_from_outside_names_its_output_as_output_not_as_the_reason() {
        let result = |end, stdout: &str, stderr: &str| TurnResult {
            spawned: true,
            end,
            stdout: stdout.into(),
            stderr_tail: stderr.into(),
        };
        assert_eq!(
            result(TurnEnd::Interrupted, "starting\n", "").failure(),
            "interrupted; its last output: starting"
        );
        assert_eq!(
            result(TurnEnd::TimedOut, "", "step 2").failure(),
            "timed out; its last output: step 2"
        );
        assert_eq!(
            result(TurnEnd::Exited(1), "Not logged in\n", "").failure(),
            "exit status 1: Not logged in"
        );
        assert_eq!(
            result(TurnEnd::Interrupted, "", "").failure(),
            "interrupted"
        );
    }

    #[test]
    fn a_turn_without_a_reply_fails_with_the_agents_words_and_the_reason() {
        let mut r = TurnResult {
            spawned: true,
            end: TurnEnd::Exited(0),
            stdout: "Aider v0.86.2\nlitellm.AuthenticationError: bad key\n\n".into(),
            stderr_tail: String::new(),
        };
        r.no_reply("/s/x.aider-llm.txt ends with no answer from the model");
        assert!(!r.succeeded());
        assert_eq!(
            r.failure(),
            "no reply: Aider v0.86.2 | litellm.AuthenticationError: bad key | /s/x.aider-llm.txt ends with no answer from the model"
        );
    }

    /// A long reply's file is made new: a hard link planted at its path is not written
    /// through, a FIFO there neither hangs the turn nor is written to (attacker QA 45).
    #[test]
    fn a_spilled_reply_is_written_to_a_file_of_its_own() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("victim.txt");
        std::fs::write(&outside, "precious").unwrap();
        let linked = dir.path().join("m1.txt");
        std::fs::hard_link(&outside, &linked).unwrap();
        let mut spill = Spill::open(Some(&linked), b"reply ");
        spill.write(b"text");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&linked).unwrap(), "reply text");
        assert_eq!(std::fs::metadata(&linked).unwrap().nlink(), 1);
        let fifo = dir.path().join("m2.txt");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut spill = Spill::open(Some(&fifo), b"reply");
        spill.write(b"!");
        assert!(std::fs::metadata(&fifo).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&fifo).unwrap(), "reply!");
    }

    #[test]
    fn a_record_is_made_anew_private_and_never_written_through_another_name() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("s.aider-llm.txt");
        fresh_record(&record).unwrap();
        let meta = std::fs::metadata(&record).unwrap();
        assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (0, 0o600));
        // Last turn's record, also under another name (a hard link planted beside).
        let other = dir.path().join("other.txt");
        std::fs::write(&record, "LLM RESPONSE 2026-01-01T00:00:00\nASSISTANT old\n").unwrap();
        std::fs::hard_link(&record, &other).unwrap();
        fresh_record(&record).unwrap();
        assert_eq!(std::fs::read(&record).unwrap(), b"");
        assert_eq!(std::fs::metadata(&record).unwrap().nlink(), 1);
        assert!(std::fs::read_to_string(&other).unwrap().contains("old"));
        let spec = TurnSpec {
            command: String::new(),
            argv: None,
            cwd: dir.path().into(),
            env: Vec::new(),
            stdin: String::new(),
            timeout: None,
            spill: None,
        };
        let why = recorded_reply(&record, &spec).unwrap_err();
        assert!(why.contains("ends with no answer"), "{why}");
        std::fs::write(&record, "LLM RESPONSE 2026-01-01T00:00:00\nASSISTANT new\n").unwrap();
        assert_eq!(recorded_reply(&record, &spec).unwrap(), "new");
    }

    #[test]
    fn a_reply_file_holds_at_most_its_cap_and_the_marker_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replies").join("m.txt");
        let mut spill = Spill::open(Some(&path), b"start ");
        spill.cap = 1024 * 1024;
        let chunk = vec![b'y'; 100_000];
        for _ in 0..30 {
            spill.write(&chunk);
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1024 * 1024);
        assert!(std::fs::read(&path).unwrap().starts_with(b"start yyy"));
        assert_eq!(
            spill.whereabouts(),
            format!("its first 1 MiB are in {}", path.display())
        );
        let small = dir.path().join("replies").join("s.txt");
        let mut whole = Spill::open(Some(&small), b"abc");
        whole.write(b"def");
        assert_eq!(std::fs::read(&small).unwrap(), b"abcdef");
        assert!(whole.whereabouts().starts_with("the whole reply is in "));
    }

    #[test]
    fn a_program_installed_since_in_an_earlier_path_directory_is_found_as_sh_would() {
        use std::os::unix::fs::PermissionsExt;
        let (early, late) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let install = |dir: &Path| {
            let p = dir.join("teamctl-test-agent");
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let path_var = format!("{}:{}", early.path().display(), late.path().display());
        let in_late = install(late.path());
        assert_eq!(lookup(&path_var, "teamctl-test-agent"), Some(in_late));
        let in_early = install(early.path());
        assert_eq!(lookup(&path_var, "teamctl-test-agent"), Some(in_early));
    }

    #[test]
    fn a_plain_program_runs_without_a_shell_by_its_path() {
        let (path, words) = simple_command("cat", &env()).unwrap();
        assert!(path.is_absolute() && path.ends_with("cat"), "{path:?}");
        assert_eq!(words, ["cat"]);
        let (_, words) = simple_command("  tr a-z A-Z ", &env()).unwrap();
        assert_eq!(words, ["tr", "a-z", "A-Z"]);
    }

    #[test]
    fn anything_the_shell_would_work_on_goes_through_it() {
        for c in [
            "cat | tr a b",
            "cat > out",
            "echo hi",
            "FOO=1 cat",
            "cat $HOME",
            "cat *.txt",
            "cat 'a b'",
            "exec cat",
            "cd /tmp",
            "no-such-program-teamctl",
            "./agent.sh",
            "/nonexistent/agent",
            "cat\tx",
            "",
        ] {
            assert!(
                simple_command(c, &env()).is_none(),
                "{c:?} skipped the shell"
            );
        }
        let relative = vec![("PATH".into(), "bin:/usr/bin".into())];
        assert!(simple_command("cat", &relative).is_none());
    }

    fn ended(stdout: &str, stderr: &str) -> TurnResult {
        TurnResult {
            spawned: true,
            end: TurnEnd::Exited(1),
            stdout: stdout.into(),
            stderr_tail: stderr.into(),
        }
    }

    #[test]
    fn a_failure_says_why_from_stderr_else_from_stdout() {
        assert_eq!(ended("", "").failure(), "exit status 1");
        assert_eq!(
            ended("some output", "a\nb\nc\nd").failure(),
            "exit status 1: b | c | d"
        );
        assert_eq!(
            ended("Not logged in · Please run /login\n", "").failure(),
            "exit status 1: Not logged in · Please run /login"
        );
        let long = ended(&"x".repeat(100_000), "").failure();
        assert_eq!(long.len(), "exit status 1: ".len() + 400);
    }
}
