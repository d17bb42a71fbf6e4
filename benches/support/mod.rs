//! Shared helpers for the benchmarks: a temporary teamctl home driving the real release binary
//! (every process started under it is killed on drop, and its private tmux server too), the
//! machine description printed at the top of each run, percentiles, and a small seeded PRNG.
//! Benchmarks print figures; they never assert on time.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail, ensure};
use tempfile::TempDir;

/// The release `teamctl` binary cargo built for this bench.
pub const BIN: &str = env!("CARGO_BIN_EXE_teamctl");

/// The `teamctl` binary the bench drives: `BIN`, or the one `TEAMCTL_BENCH_BIN` names (another
/// build of the same code, say with another C library, measured by the same bench).
pub fn bin() -> &'static Path {
    static BIN_PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN_PATH.get_or_init(|| {
        std::env::var_os("TEAMCTL_BENCH_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from)
    })
}

/// A temporary home (and optionally a private tmux server) for one measurement.
pub struct Env {
    pub home: TempDir,
    pub work: TempDir,
    pub socket: Option<String>,
    pub vars: Vec<(String, String)>,
}

impl Env {
    pub fn new() -> Result<Env> {
        let env = Env {
            home: tempfile::Builder::new()
                .prefix("teamctl-bench-home")
                .tempdir()?,
            work: tempfile::Builder::new()
                .prefix("teamctl-bench-work")
                .tempdir()?,
            socket: None,
            vars: Vec::new(),
        };
        register(env.home.path(), None);
        Ok(env)
    }

    /// With a private tmux server (`TEAMCTL_TMUX_SOCKET`), killed on drop.
    pub fn with_tmux() -> Result<Env> {
        let mut env = Env::new()?;
        let tag = env
            .home
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("x")
            .replace('.', "");
        env.socket = Some(format!("teamctl-bench-{}-{tag}", std::process::id()));
        register(env.home.path(), env.socket.clone());
        Ok(env)
    }

    pub fn home_path(&self) -> &Path {
        self.home.path()
    }

    pub fn team_dir(&self, team: &str) -> PathBuf {
        self.home.path().join("teams").join(team)
    }

    /// A `teamctl` command against this home: no inherited team, identity, tmux or poll.
    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_of(bin(), args)
    }

    /// As `cmd`, with another `teamctl` binary (an older build, for a same-run comparison).
    pub fn cmd_of(&self, bin: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(bin);
        c.args(args)
            .current_dir(self.work.path())
            .env("TEAMCTL_HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env("LC_ALL", "C")
            .env_remove("TEAMCTL_TEAM")
            .env_remove("TEAMCTL_AGENT_NAME")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("TEAMCTL_POLL_MS")
            .stdin(Stdio::null());
        match &self.socket {
            Some(s) => c.env("TEAMCTL_TMUX_SOCKET", s),
            None => c.env_remove("TEAMCTL_TMUX_SOCKET"),
        };
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c
    }

    /// Run and require exit 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> Result<String> {
        let out = self.cmd(args).output().context("run teamctl")?;
        check(args, &out)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A tmux command against the private server.
    pub fn tmux(&self, args: &[&str]) -> Result<Output> {
        let socket = self.socket.as_ref().context("no tmux server in this env")?;
        Ok(Command::new("tmux")
            .arg("-L")
            .arg(socket)
            .args(args)
            .env_remove("TMUX")
            .output()?)
    }

    /// The worker's live state of `member` in `team`, if written.
    pub fn live(&self, team: &str, member: &str) -> Option<serde_json::Value> {
        let p = self
            .team_dir(team)
            .join("state")
            .join(format!("{member}.json"));
        serde_json::from_slice(&teamctl::store::slots::load(&p)?).ok()
    }

    /// Live processes started under this home (workers carry it in argv, agents in env).
    pub fn processes(&self) -> Vec<u32> {
        processes_mentioning(&self.home.path().display().to_string())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        clean_up(self.home.path(), self.socket.as_deref());
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|(h, _)| h != self.home.path());
        }
    }
}

/// Every pane and process started under `home` (and the private tmux server) ended.
fn clean_up(home: &Path, socket: Option<&str>) {
    if let Some(socket) = socket {
        kill_tmux_server(socket);
    }
    for _ in 0..3 {
        let pids = processes_mentioning(&home.display().to_string());
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The homes (and tmux servers) of the live `Env`s, for cleaning up on an interrupt.
static LIVE: std::sync::Mutex<Vec<(PathBuf, Option<String>)>> = std::sync::Mutex::new(Vec::new());

/// A temporary directory of something else the bench started (a server naming the directory
/// in its argv): on an interrupt, every process naming it is ended and it is removed, as a
/// home is. `forget_on_interrupt` once the bench has ended them itself.
pub fn end_on_interrupt(dir: &Path) {
    register(dir, None);
}

pub fn forget_on_interrupt(dir: &Path) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|(h, _)| h != dir);
    }
}

fn register(home: &Path, socket: Option<String>) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|(h, _)| h != home);
        live.push((home.to_path_buf(), socket));
    }
}

/// Interrupted (SIGINT, SIGTERM, SIGHUP), a bench still ends every pane and process it started
/// and removes its temporary homes: a handler writes the signal to a pipe (all it may do), a
/// thread reading it cleans up and exits 130. A handler, not a blocked mask: children would
/// inherit the mask (and workers could then not be stopped); an exec resets handlers. Called
/// by `print_machine`, first thing in every bench.
fn clean_up_on_interrupt() {
    use nix::libc;
    static PIPE_W: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
    extern "C" fn on_signal(sig: libc::c_int) {
        let b = sig as u8;
        let fd = PIPE_W.load(std::sync::atomic::Ordering::Relaxed);
        // SAFETY: write(2) is async-signal-safe; one byte from a local.
        unsafe { libc::write(fd, (&raw const b).cast(), 1) };
    }
    let mut fds = [0; 2];
    // SAFETY: a two-int array for pipe2.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    PIPE_W.store(fds[1], std::sync::atomic::Ordering::Relaxed);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only calls write(2).
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
    let read_fd = fds[0];
    std::thread::spawn(move || {
        let mut b = 0u8;
        // SAFETY: reading one byte into a local from our own pipe.
        while unsafe { libc::read(read_fd, (&raw mut b).cast(), 1) } != 1 {}
        eprintln!("[bench] interrupted (signal {b}): ending everything it started");
        let live = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
        let servers = SERVERS.lock().map(|l| l.clone()).unwrap_or_default();
        // Twice: a `teamctl` or `tmux` the main thread had started may make a server (or
        // a process) again after the first pass; the second ends what it made.
        for pass in 0..2 {
            if pass > 0 {
                std::thread::sleep(Duration::from_millis(300));
            }
            for (home, socket) in &live {
                clean_up(home, socket.as_deref());
            }
            for socket in &servers {
                end_server(socket);
            }
        }
        for (home, _) in &live {
            let _ = std::fs::remove_dir_all(home);
        }
        std::process::exit(130);
    });
}

/// Kill a private tmux server and remove its socket file (tmux leaves it behind).
pub fn kill_tmux_server(socket: &str) {
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .arg("-L")
            .arg(socket)
            .args(args)
            .env_remove("TMUX")
            .output()
    };
    let path = tmux(&["display-message", "-p", "#{socket_path}"])
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let _ = tmux(&["kill-server"]);
    // Where tmux puts it by default, when the server did not answer (gone already).
    let path = path.or_else(|| {
        let dir = std::env::var_os("TMUX_TMPDIR").unwrap_or_else(|| "/tmp".into());
        Some(
            PathBuf::from(dir)
                .join(format!("tmux-{}", nix::unistd::getuid()))
                .join(socket),
        )
    });
    if let Some(p) = path.filter(|p| p.file_name().is_some_and(|n| n == socket)) {
        let _ = std::fs::remove_file(p);
    }
}

/// Require a successful exit, with both streams in the error.
pub fn check(args: &[&str], out: &Output) -> Result<()> {
    if !out.status.success() {
        bail!(
            "teamctl {args:?} failed ({:?})\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Pids (not ours, not zombies) whose argv or environment contains `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let needle = needle.as_bytes();
    for pid in teamctl::backend::proc::pids().filter(|&p| teamctl::backend::proc::running(p)) {
        let has = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if has(&cmdline) || has(&environ) {
            out.push(pid);
        }
    }
    out
}

/// Wait until `cond` holds, checking every `every`; an error after `timeout`.
pub fn wait_for(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut cond: impl FnMut() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(every);
    }
    Ok(())
}

/// Print the machine this runs on: cores, memory, kernel, inotify limit, tmux.
pub fn print_machine(bench: &str) {
    clean_up_on_interrupt();
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("== teamctl bench: {bench}");
    println!(
        "load average at start: {} (other work on this machine shares the cores)",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "machine: {nproc} cores ({cpu}), {mem} RAM, Linux {}, inotify max_user_instances {}",
        kernel.trim(),
        inotify_limit().map_or("?".into(), |n| n.to_string())
    );
    println!("teamctl binary: {}", bin().display());
}

pub fn inotify_limit() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Sorted samples with percentiles.
#[derive(Debug, Clone)]
pub struct Stats {
    sorted: Vec<Duration>,
}

impl Stats {
    pub fn new(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        Stats { sorted: samples }
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The `p`-th percentile (nearest rank), `p` in 0..=100.
    pub fn pct(&self, p: f64) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    pub fn median(&self) -> Duration {
        self.pct(50.0)
    }

    pub fn min(&self) -> Duration {
        self.sorted.first().copied().unwrap_or_default()
    }

    pub fn max(&self) -> Duration {
        self.sorted.last().copied().unwrap_or_default()
    }

    /// `p50 X  p90 Y  p99 Z  (min .. max, n)`.
    pub fn line(&self) -> String {
        format!(
            "p50 {}  p90 {}  p99 {}  (min {}, max {}, n={})",
            fmt(self.median()),
            fmt(self.pct(90.0)),
            fmt(self.pct(99.0)),
            fmt(self.min()),
            fmt(self.max()),
            self.len()
        )
    }
}

/// A duration in the unit that reads best.
pub fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.1} us")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Wall-clock microseconds since the epoch (comparable across processes).
pub fn epoch_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// xorshift64*: a small seeded generator for random phases and delays (no extra crate).
pub struct Rng(u64);

impl Rng {
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn from_time() -> Rng {
        Rng::seeded(epoch_us() as u64 ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A count from the environment, else `default` (lets a reader shorten a run).
pub fn env_count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// VmRSS and Pss (KiB) of a process.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let field = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = field(&status, "VmRSS:")?;
    let pss = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| field(&s, "Pss:"))
        .unwrap_or(0);
    Some((rss, pss))
}

/// How many inotify instances a process holds.
pub fn inotify_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
        })
        .count()
}

/// The private tmux servers of the live `TmuxServer`s, for ending on an interrupt.
static SERVERS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A private tmux server that is not a teamctl home's (an anchor's bare panes): killed with
/// every process started in it (a pane's processes carry the socket in `$TMUX`) when dropped,
/// or when the bench is interrupted.
pub struct TmuxServer {
    pub socket: String,
}

impl TmuxServer {
    pub fn new(tag: &str) -> TmuxServer {
        let socket = format!("teamctl-bench-{tag}-{}", std::process::id());
        if let Ok(mut s) = SERVERS.lock() {
            s.push(socket.clone());
        }
        TmuxServer { socket }
    }

    pub fn tmux(&self, args: &[&str]) -> std::io::Result<Output> {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        end_server(&self.socket);
        if let Ok(mut s) = SERVERS.lock() {
            s.retain(|x| x != &self.socket);
        }
    }
}

fn end_server(socket: &str) {
    kill_tmux_server(socket);
    for _ in 0..3 {
        let pids = processes_mentioning(socket);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The anchor of a tmux spawn: `n` bare panes running `sleep` on a private tmux server, one
/// `tmux` command per pane (as teamctl issues one per teammate): split the current window
/// (`-l 1`), a new window when it is full. The server and its panes are gone on return.
pub struct BarePanes {
    pub took: Duration,
    pub windows: usize,
    /// A bare `sleep` pane's VmRSS (KiB).
    pub sleep_rss_kib: u64,
}

pub fn bare_panes(n: usize) -> Result<BarePanes> {
    let mut server = BareServer::new("anchor");
    let took = server.add(n)?;
    let pids = server.pids()?;
    anyhow::ensure!(pids.len() == n, "made {} panes, wanted {n}", pids.len());
    let sleep_rss_kib = pids.first().and_then(|&p| memory_kib(p)).map_or(0, |m| m.0);
    Ok(BarePanes {
        took,
        windows: server.windows,
        sleep_rss_kib,
    })
}

/// A private tmux server of bare panes running `sleep`, grown a few panes at a time (the
/// anchor of a tmux spawn measured batch by batch beside it). One `tmux` command per pane:
/// the first makes the session, each next one splits the current window (`-l 1`), and when
/// a split fails (the window is full) a new window is made instead. The server and every
/// process in it are ended when this is dropped or the bench is interrupted (`TmuxServer`).
pub struct BareServer {
    pub server: TmuxServer,
    window: Option<String>,
    pub windows: usize,
    pub panes: usize,
}

impl BareServer {
    pub fn new(tag: &str) -> BareServer {
        BareServer {
            server: TmuxServer::new(tag),
            window: None,
            windows: 0,
            panes: 0,
        }
    }

    /// Make `k` more panes; the time from just before the first `tmux` command is started to
    /// the last one reaped (a failed split and the new window after it both count).
    pub fn add(&mut self, k: usize) -> Result<Duration> {
        let tmux = |args: &[&str]| self.server.tmux(args);
        let t0 = Instant::now();
        let mut window = self.window.clone();
        let mut windows = 0;
        for _ in 0..k {
            let split = match &window {
                None => None,
                Some(w) => Some(tmux(&[
                    "split-window",
                    "-d",
                    "-l",
                    "1",
                    "-t",
                    w,
                    "sleep",
                    "1000",
                ])?),
            };
            if split.as_ref().is_some_and(|o| o.status.success()) {
                continue;
            }
            let (what, mut args) = match window {
                None => (
                    "new-session",
                    vec![
                        "new-session",
                        "-d",
                        "-s",
                        "anchor",
                        "-x",
                        "250",
                        "-y",
                        "120",
                    ],
                ),
                Some(_) => ("new-window", vec!["new-window", "-d", "-t", "anchor:"]),
            };
            args.extend(["-P", "-F", "#{window_id}", "sleep", "1000"]);
            let out = tmux(&args)?;
            anyhow::ensure!(
                out.status.success(),
                "tmux {what} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            window = Some(String::from_utf8_lossy(&out.stdout).trim().to_string());
            windows += 1;
        }
        let took = t0.elapsed();
        self.window = window;
        self.windows += windows;
        self.panes += k;
        Ok(took)
    }

    /// The pids of every pane's process.
    pub fn pids(&self) -> Result<Vec<u32>> {
        let panes = self
            .server
            .tmux(&["list-panes", "-a", "-F", "#{pane_pid}"])?;
        Ok(String::from_utf8_lossy(&panes.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect())
    }
}

/// The stamping agent: `main` reads the realtime clock first and prints it in ns. Built with
/// gcc, statically, into `dir`.
pub fn stamp_agent(dir: &std::path::Path) -> Result<String> {
    const SOURCE: &str = r#"#include <stdio.h>
#include <time.h>
int main(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    printf("%lld%09ld\n", (long long)t.tv_sec, t.tv_nsec);
    return 0;
}
"#;
    build_c(dir, "stamp", SOURCE)
}

/// The stamping agent that stamps at its entry point, the first instruction the kernel runs in
/// it: a static program with no C library (`-nostdlib`), whose `_start` aligns the stack and
/// calls a C function that reads CLOCK_REALTIME by the raw `clock_gettime` system call (not
/// the vDSO, which a program without a C library has not located), writes it as `stamp_agent`
/// does (`%lld%09ld` and a newline: seconds, then nanoseconds in 9 digits) to fd 1 with raw
/// `write` calls (looping on short writes), and exits by `exit_group` with 0 (1 if the clock
/// or the write failed). So its stamp holds none of a C library's start-up (`stamp_agent`'s,
/// in `main`, comes after static glibc's CPU-feature probes and first page faults: about
/// 0.5 ms on this VM). x86_64 only: elsewhere this says so and returns `stamp_agent`.
pub fn stamp_agent_at_entry(dir: &std::path::Path) -> Result<String> {
    const SOURCE: &str = r#"/* No C library: _start is the kernel's entry point. */
__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  and $-16, %rsp\n"
        "  call stamp_entry\n"
        "  hlt\n");

static long sys2(long n, long a, long b) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
    return r;
}

static long sys3(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return r;
}

static __attribute__((noreturn)) void exit_group(long code) {
    for (;;) sys2(231, code, 0);
}

struct ts { long sec; long nsec; };

__attribute__((noreturn, used)) void stamp_entry(void) {
    struct ts t;
    if (sys2(228, 0 /* CLOCK_REALTIME */, (long)&t) != 0) exit_group(1);
    char buf[32];
    int i = sizeof buf;
    buf[--i] = '\n';
    long ns = t.nsec;
    for (int k = 0; k < 9; k++) {
        buf[--i] = (char)('0' + ns % 10);
        ns /= 10;
    }
    unsigned long s = t.sec < 0 ? -(unsigned long)t.sec : (unsigned long)t.sec;
    do {
        buf[--i] = (char)('0' + s % 10);
        s /= 10;
    } while (s);
    if (t.sec < 0) buf[--i] = '-';
    const char *p = buf + i;
    long left = (long)sizeof buf - i;
    while (left > 0) {
        long w = sys3(1, 1, (long)p, left);
        if (w == -4 /* EINTR */) continue;
        if (w <= 0) exit_group(1);
        p += w;
        left -= w;
    }
    exit_group(0);
}
"#;
    if !cfg!(target_arch = "x86_64") {
        println!(
            "stamp at entry: not on x86_64 here, so the agent is `stamp_agent` (its stamp is in `main`, after its C library's start-up)"
        );
        return stamp_agent(dir);
    }
    build_c_with(
        dir,
        "stamp-entry",
        SOURCE,
        &[
            "-O2",
            "-static",
            "-nostdlib",
            "-fno-stack-protector",
            "-fno-builtin",
        ],
    )
}

/// `source` built with `gcc -O2 -static` as `dir/name`.
pub fn build_c(dir: &std::path::Path, name: &str, source: &str) -> Result<String> {
    build_c_with(dir, name, source, &["-O2", "-static"])
}

/// `source` built with `gcc FLAGS` as `dir/name`.
pub fn build_c_with(
    dir: &std::path::Path,
    name: &str,
    source: &str,
    flags: &[&str],
) -> Result<String> {
    let src = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    std::fs::write(&src, source)?;
    let out = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
        .context("gcc (the bench's C programs are built with it)")?;
    ensure!(
        out.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(bin.display().to_string())
}
