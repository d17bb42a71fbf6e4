//! User-visible figures (issue 14): every timer starts when a `teamctl` PROCESS is started (what
//! a user or an agent runs) and stops on something outside teamctl, each beside its anchor
//! measured in the same run, interleaved with it.
//!
//! - `wake`: from just before `teamctl send w MSG` is started (`fork`+`exec` of the release
//!   binary) to the agent's first instruction, its entry point. The agent
//!   (`support::stamp_agent_at_entry`) is a static program built here with no C library
//!   (`gcc -O2 -static -nostdlib`): its `_start` aligns the stack and reads CLOCK_REALTIME by
//!   the raw `clock_gettime` system call, then prints it (ns). Run by the worker directly (a
//!   plain program: no shell), its stamp is its reply, read back from the leader's inbox. So
//!   the figure holds no start-up of the agent's own beyond the kernel's `exec`. Also: from
//!   `send` exiting to the same stamp. Anchor: the same path with the worker forced to poll
//!   every 1 s (`TEAMCTL_POLL_MS=1000`), the sends at phases of the poll spread evenly over
//!   its period (in a random order; from the previous stamp, which follows a poll): its p50 is
//!   half the period plus the path, whatever the number of samples.
//!   The floor, interleaved send by send with the inotify runs: the least any inotify wake-up
//!   to a new process can cost here, with nothing of teamctl's. A static C sender (`open` the
//!   inbox file `O_APPEND`, one `write`, exit), started exactly as `teamctl send` is, appends
//!   a line; a static C waiter blocked in `read` on an inotify instance watching that file
//!   (`IN_MODIFY`) wakes and starts the same stamping agent with `posix_spawn`, its stdout on a
//!   file the bench reads. Timed from just before the sender is started to the agent's stamp;
//!   also from the sender reaped. The 1 s poll over the floor is the most that any wake-up
//!   through a process start can reach on this machine. The ratios printed use these runs.
//!   Labelled apart, narrower or wider figures: the same inotify run and its own interleaved
//!   floor with the agent stamping in `main` (`support::stamp_agent`, a static glibc program:
//!   its stamp comes after its C library's start-up, CPU-feature probes and first page faults,
//!   about 0.5 ms here); and the agent `date +%s%N` (its stamp comes after its own dynamic
//!   loading and locale set-up), from `send` started and exited.
//! - `ask`: `teamctl ask w MSG` as a whole process (start to exit, the agent `cat`), against
//!   its floor interleaved with it: one process start (`teamctl --version`) plus `sh -c cat`
//!   on the message, each a whole process.
//! - `senders`: 16 threads each starting N `teamctl send` processes one after another (all
//!   into the leader's inbox, as teammate `s`), then the inbox checked: 0 lost, duplicated,
//!   reordered per sender, torn. Anchor, same run: 16 threads each starting N `/bin/true`
//!   exactly as the sends are started (the same environment changes and working directory);
//!   also shown, `/bin/true` started plainly (a `Command` with nothing changed, which Rust
//!   starts through `posix_spawn`, a cheaper path than the one a changed environment and
//!   directory take).
//!
//! `WHOLE_BACKEND=tmux` runs the teammate `w` of `wake` and `ask` in a pane of a private tmux
//! server instead of as a detached process (the default, `process`).
//! `WHOLE_PARTS=wake,ask,senders` picks parts; `WHOLE_WAKE_N`, `WHOLE_POLL_N`, `WHOLE_ASK_N`,
//! `WHOLE_SENDERS`, `WHOLE_EACH` set the counts.

mod support;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use support::{
    Env, Rng, Stats, build_c, env_count, epoch_us, fmt, print_machine, stamp_agent,
    stamp_agent_at_entry, wait_for,
};
use teamctl::domain::{Body, Name};
use teamctl::store::{FsStore, Item, Position, Store};

const TEAM: &str = "whole";

fn main() -> Result<()> {
    print_machine("whole");
    println!("teammate backend (wake, ask): {}", backend()?);
    let parts = std::env::var("WHOLE_PARTS").unwrap_or_else(|_| "wake,ask,senders".into());
    for part in parts.split(',') {
        match part {
            "wake" => wake()?,
            "ask" => ask()?,
            "senders" => senders()?,
            other => anyhow::bail!("unknown part {other}"),
        }
    }
    Ok(())
}

/// The teammates' backend: `process` (the default) or `tmux` (`WHOLE_BACKEND`; a private
/// server, killed with the home).
fn backend() -> Result<&'static str> {
    match std::env::var("WHOLE_BACKEND").as_deref() {
        Err(_) | Ok("" | "process") => Ok("process"),
        Ok("tmux") => Ok("tmux"),
        Ok(other) => anyhow::bail!("WHOLE_BACKEND={other}: process or tmux"),
    }
}

/// A team with one worker `w` running `agent` (forced polling if `poll_ms`), on `backend()`.
fn team(agent: &str, poll_ms: Option<u64>) -> Result<Env> {
    let backend = backend()?;
    let env = if backend == "tmux" {
        Env::with_tmux()?
    } else {
        Env::new()?
    };
    env.ok(&["create", TEAM])?;
    let mut spawn = env.cmd(&["spawn", "w", "--backend", backend, "--exec", agent]);
    if let Some(ms) = poll_ms {
        spawn.env("TEAMCTL_POLL_MS", ms.to_string());
    }
    support::check(&["spawn"], &spawn.output()?)?;
    wait_idle(&env, 0)?;
    Ok(env)
}

fn wait_idle(env: &Env, turns: u64) -> Result<()> {
    wait_for(
        "the worker to be idle",
        Duration::from_secs(30),
        Duration::from_micros(500),
        || {
            env.live(TEAM, "w").is_some_and(|l| {
                l["status"] == "idle" && l["turns"].as_u64().is_some_and(|t| t >= turns)
            })
        },
    )
}

/// The replies in the leader's inbox from byte `from`: (texts, new end).
fn replies(store: &FsStore, from: Position) -> Result<(Vec<String>, Position)> {
    let mut pos = from;
    let mut out = Vec::new();
    for e in store.read(&Name::leader(), from, usize::MAX)? {
        pos = e.end;
        if let Item::Message(m) = e.item
            && let Body::Message { text, .. } = m.body
        {
            out.push(text);
        }
    }
    Ok((out, pos))
}

struct Wake {
    from_start: Stats,
    from_exit: Stats,
    /// The floor's, sent just after each of these (`Floor`), when one was given.
    floor: Option<(Stats, Stats)>,
}

fn wake_run(
    label: &str,
    agent: &str,
    poll_ms: Option<u64>,
    n: usize,
    mut floor: Option<&mut Floor>,
) -> Result<Wake> {
    eprintln!("[whole] wake {label}: {n} sends...");
    let env = team(agent, poll_ms)?;
    let store = FsStore::new(Name::parse(TEAM)?, env.team_dir(TEAM));
    let mut pos = store.inbox_end(&Name::leader())?;
    let mut rng = Rng::from_time();
    let (mut from_start, mut from_exit) = (Vec::new(), Vec::new());
    let (mut floor_start, mut floor_exit) = (Vec::new(), Vec::new());
    // A polling worker: each send lands at its own phase of the poll, the phases spread evenly
    // over the period (in a random order), measured from the previous stamp, which came just
    // after a poll. 20 random phases gave a p50 anywhere from 320 to 580 ms; evenly spread,
    // the p50 is half the period by construction, as it is for a user who sends at any time.
    let mut phases: Vec<u64> = (0..n as u64)
        .map(|k| poll_ms.map_or(0, |ms| (2 * k + 1) * ms * 1000 / (2 * n as u64)))
        .collect();
    for k in (1..phases.len()).rev() {
        phases.swap(k, rng.below(k as u64 + 1) as usize);
    }
    let mut last_stamp_us = None;
    if poll_ms.is_some() {
        last_stamp_us = Some(stamp_of(&env, &store, &mut pos, "warm-up", poll_ms)?);
        wait_idle(&env, 1)?;
    }
    let turns0 = u64::from(poll_ms.is_some());
    for (i, phase) in phases.iter().enumerate() {
        match (poll_ms, last_stamp_us) {
            (Some(_), Some(last)) => {
                let at = last + u128::from(*phase);
                let now = epoch_us();
                if at > now {
                    std::thread::sleep(Duration::from_micros((at - now) as u64));
                }
            }
            _ => std::thread::sleep(Duration::from_micros(2000 + rng.below(3000))),
        }
        let mut cmd = env.cmd(&["send", "w", &format!("wake-{i}")]);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let t0 = epoch_us();
        let out = cmd.output()?;
        let t1 = epoch_us();
        support::check(&["send"], &out)?;
        let at_us = wait_stamp(&store, &mut pos, poll_ms)?;
        from_start.push(Duration::from_micros(at_us.saturating_sub(t0) as u64));
        from_exit.push(Duration::from_micros(at_us.saturating_sub(t1) as u64));
        last_stamp_us = Some(at_us);
        wait_idle(&env, turns0 + i as u64 + 1)?;
        if let Some(floor) = floor.as_deref_mut() {
            std::thread::sleep(Duration::from_micros(2000 + rng.below(3000)));
            let (start, exit) = floor.once(&env, i)?;
            floor_start.push(start);
            floor_exit.push(exit);
        }
    }
    Ok(Wake {
        from_start: Stats::new(from_start),
        from_exit: Stats::new(from_exit),
        floor: floor.map(|_| (Stats::new(floor_start), Stats::new(floor_exit))),
    })
}

/// Send `text` to `w` and wait for the agent's stamp: the stamp's time, in us since the epoch.
fn stamp_of(
    env: &Env,
    store: &FsStore,
    pos: &mut Position,
    text: &str,
    poll_ms: Option<u64>,
) -> Result<u128> {
    support::check(&["send"], &env.cmd(&["send", "w", text]).output()?)?;
    wait_stamp(store, pos, poll_ms)
}

/// Wait for the agent's next stamp among the replies from `pos` on: its time, in us since the
/// epoch.
fn wait_stamp(store: &FsStore, pos: &mut Position, poll_ms: Option<u64>) -> Result<u128> {
    let mut stamp = None;
    wait_for(
        "the agent's stamp",
        Duration::from_millis(poll_ms.unwrap_or(0) * 3 + 10_000),
        Duration::from_micros(300),
        || {
            if let Ok((texts, end)) = replies(store, *pos) {
                *pos = end;
                stamp = texts
                    .iter()
                    .find_map(|t| t.trim().parse::<u128>().ok())
                    .or(stamp);
            }
            stamp.is_some()
        },
    )?;
    Ok(stamp.expect("stamp") / 1000)
}

/// The floor of a wake-up (see the module comment): a static C waiter on inotify that starts
/// the stamping agent it is given with `posix_spawn`, and a static C sender that appends one
/// line.
struct Floor {
    dir: tempfile::TempDir,
    sender: String,
    waiter: std::process::Child,
    pos: u64,
}

impl Floor {
    fn start(stamp: &str) -> Result<Floor> {
        const WAITER: &str = r#"#include <fcntl.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0 || inotify_add_watch(fd, argv[1], IN_MODIFY) < 0) return 1;
    write(1, "ready\n", 6);
    char buf[4096];
    for (;;) {
        if (read(fd, buf, sizeof buf) <= 0) return 1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, argv[3], O_WRONLY | O_APPEND, 0);
        pid_t pid;
        char *av[] = {argv[2], 0};
        if (posix_spawn(&pid, argv[2], &fa, 0, av, environ) == 0) waitpid(pid, 0, 0);
        posix_spawn_file_actions_destroy(&fa);
    }
}
"#;
        const SENDER: &str = r"#include <fcntl.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char line[256];
    size_t n = strlen(argv[2]);
    if (n > 250) n = 250;
    memcpy(line, argv[2], n);
    line[n++] = '\n';
    int fd = open(argv[1], O_WRONLY | O_APPEND | O_CLOEXEC);
    return fd < 0 || write(fd, line, n) != (ssize_t)n;
}
";
        let dir = tempfile::Builder::new()
            .prefix("teamctl-bench-floor")
            .tempdir()?;
        let waiter = build_c(dir.path(), "waiter", WAITER)?;
        let sender = build_c(dir.path(), "sender", SENDER)?;
        let inbox = dir.path().join("inbox");
        let out = dir.path().join("stamps");
        std::fs::write(&inbox, "")?;
        std::fs::write(&out, "")?;
        let mut waiter = Command::new(&waiter)
            .arg(&inbox)
            .arg(stamp)
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut ready = [0u8; 6];
        std::io::Read::read_exact(waiter.stdout.as_mut().context("waiter stdout")?, &mut ready)?;
        ensure!(&ready == b"ready\n", "the floor's waiter did not start");
        Ok(Floor {
            dir,
            sender,
            waiter,
            pos: 0,
        })
    }

    /// One send through the floor, started as `teamctl send` is (`env`'s directory and
    /// environment): (sender started, sender reaped) -> the agent's stamp.
    fn once(&mut self, env: &Env, i: usize) -> Result<(Duration, Duration)> {
        let inbox = self.dir.path().join("inbox");
        let out = self.dir.path().join("stamps");
        let mut cmd = env.cmd_of(
            std::path::Path::new(&self.sender),
            &[&inbox.display().to_string(), &format!("wake-{i}")],
        );
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let t0 = epoch_us();
        let sent = cmd.output()?;
        let t1 = epoch_us();
        ensure!(sent.status.success(), "the floor's sender failed");
        let mut stamp = None;
        wait_for(
            "the floor agent's stamp",
            Duration::from_secs(10),
            Duration::from_micros(300),
            || {
                let Ok(text) = std::fs::read_to_string(&out) else {
                    return false;
                };
                let Some(new) = text.get(self.pos as usize..) else {
                    return false;
                };
                if let Some(end) = new.find('\n') {
                    stamp = new[..end].trim().parse::<u128>().ok();
                    self.pos += end as u64 + 1;
                }
                stamp.is_some()
            },
        )?;
        let at_us = stamp.expect("stamp") / 1000;
        Ok((
            Duration::from_micros(at_us.saturating_sub(t0) as u64),
            Duration::from_micros(at_us.saturating_sub(t1) as u64),
        ))
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.waiter.kill();
        let _ = self.waiter.wait();
    }
}

fn wake() -> Result<()> {
    let n = env_count("WHOLE_WAKE_N", 300);
    let n_poll = env_count("WHOLE_POLL_N", 20);
    let dir = tempfile::Builder::new()
        .prefix("teamctl-bench-stamp")
        .tempdir()?;
    // THE agent: stamps at its entry point. The other stamps in `main` after static glibc's
    // start-up, for the figure measured that way before.
    let entry = stamp_agent_at_entry(dir.path())?;
    let main_stamp = stamp_agent(dir.path())?;
    let mut floor = Floor::start(&entry)?;
    let ino = wake_run("inotify", &entry, None, n, Some(&mut floor))?;
    drop(floor);
    let mut floor = Floor::start(&main_stamp)?;
    let libc = wake_run(
        "inotify, agent stamping in main",
        &main_stamp,
        None,
        n,
        Some(&mut floor),
    )?;
    drop(floor);
    let date = wake_run("inotify, agent date", "date +%s%N", None, n, None)?;
    let poll = wake_run("poll 1 s", &entry, Some(1000), n_poll, None)?;
    let (floor_start, floor_exit) = ino.floor.as_ref().expect("the floor was run");
    let (lfloor_start, lfloor_exit) = libc.floor.as_ref().expect("the floor was run");
    println!();
    println!(
        "wake: `teamctl send` process started -> agent's first instruction (its entry point: a static program without a C library reads CLOCK_REALTIME by a raw clock_gettime syscall in _start)"
    );
    println!("  inotify worker ({n}): {}", ino.from_start.line());
    println!("  1 s poll ({n_poll}):   {}", poll.from_start.line());
    println!(
        "  floor, interleaved: C sender started -> C inotify waiter's posix_spawn -> the same agent's entry point"
    );
    println!("  floor ({n}):          {}", floor_start.line());
    println!("wake: `teamctl send` process exited -> agent's first instruction (entry point)");
    println!("  inotify worker ({n}): {}", ino.from_exit.line());
    println!("  1 s poll ({n_poll}):   {}", poll.from_exit.line());
    println!(
        "  floor, C sender reaped -> entry point ({n}): {}",
        floor_exit.line()
    );
    println!(
        "wake, agent's main, after its C library's start-up (a static glibc program reads CLOCK_REALTIME first thing in main), a separate run with its own interleaved floor"
    );
    println!(
        "  `teamctl send` started -> main ({n}): {}",
        libc.from_start.line()
    );
    println!(
        "  `teamctl send` exited -> main ({n}):  {}",
        libc.from_exit.line()
    );
    println!(
        "  floor, C sender started -> main ({n}): {}",
        lfloor_start.line()
    );
    println!(
        "  floor, C sender reaped -> main ({n}):  {}",
        lfloor_exit.line()
    );
    let us = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1e6;
    println!(
        "  p50 of main minus p50 of entry point (separate runs): teamctl {:.0} us, floor {:.0} us",
        us(libc.from_start.median(), ino.from_start.median()),
        us(lfloor_start.median(), floor_start.median())
    );
    println!(
        "wake, agent `date +%s%N` (stamp after its own dynamic loading and locale set-up), `teamctl send` started / exited -> date's clock read"
    );
    println!(
        "  send started -> date's clock read ({n}): {}",
        date.from_start.line()
    );
    println!(
        "  send exited -> date's clock read ({n}):  {}",
        date.from_exit.line()
    );
    let r = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!("ratios, `teamctl send` / C sender started -> agent's entry point:");
    println!(
        "  1 s poll / inotify worker: p50 {:.0}x, p99 {:.0}x (target 500x at p50)",
        r(poll.from_start.median(), ino.from_start.median()),
        r(poll.from_start.pct(99.0), ino.from_start.pct(99.0))
    );
    println!(
        "  inotify worker over the floor: p50 {:.2}x, p99 {:.2}x; 1 s poll over the floor: p50 {:.0}x (the most a wake-up through a process start reaches here)",
        r(ino.from_start.median(), floor_start.median()),
        r(ino.from_start.pct(99.0), floor_start.pct(99.0)),
        r(poll.from_start.median(), floor_start.median())
    );
    Ok(())
}

/// Wall time of a whole process (started to reaped).
fn timed(cmd: &mut Command) -> Result<Duration> {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let t0 = Instant::now();
    let st = cmd.status()?;
    let d = t0.elapsed();
    ensure!(st.success(), "{cmd:?} failed: {st}");
    Ok(d)
}

fn ask() -> Result<()> {
    let n = env_count("WHOLE_ASK_N", 50);
    eprintln!("[whole] ask: {n} round trips...");
    let env = team("cat", None)?;
    let (mut asks, mut starts, mut cats, mut floors) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let text = format!("question {i}");
        asks.push(timed(&mut env.cmd(&[
            "ask",
            "w",
            &text,
            "--timeout",
            "30",
        ]))?);
        wait_idle(&env, i as u64 + 1)?;
        let start = timed(&mut env.cmd(&["--version"]))?;
        let mut cat = Command::new("sh");
        cat.args(["-c", "cat"]).stdin(Stdio::piped());
        let t0 = Instant::now();
        let mut child = cat.stdout(Stdio::null()).spawn()?;
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().context("stdin")?;
            stdin.write_all(text.as_bytes())?;
        }
        child.wait()?;
        let c = t0.elapsed();
        starts.push(start);
        cats.push(c);
        floors.push(start + c);
    }
    let (asks, starts, cats, floors) = (
        Stats::new(asks),
        Stats::new(starts),
        Stats::new(cats),
        Stats::new(floors),
    );
    println!();
    println!("ask: `teamctl ask` process started -> exited with the reply (agent `cat`), {n} runs");
    println!("  ask:                          {}", asks.line());
    println!("  floor, same run, interleaved: {}", floors.line());
    println!("    teamctl --version:          {}", starts.line());
    println!("    sh -c cat:                  {}", cats.line());
    println!(
        "  ratio ask / floor, p50: {:.2} (target 1.5)",
        asks.median().as_secs_f64() / floors.median().as_secs_f64()
    );
    Ok(())
}

fn senders() -> Result<()> {
    let writers = env_count("WHOLE_SENDERS", 16);
    let each = env_count("WHOLE_EACH", 1000);
    eprintln!("[whole] senders: {writers} x {each} processes...");
    let env = Env::new()?;
    env.ok(&["create", TEAM])?;
    env.ok(&["spawn", "s", "--backend", "process", "--exec", "cat"])?;
    let store = FsStore::new(Name::parse(TEAM)?, env.team_dir(TEAM));
    let start = store.inbox_end(&Name::leader())?;

    let run = |make: &(dyn Fn(usize, usize) -> Command + Sync)| -> Result<Duration> {
        let t0 = Instant::now();
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..writers)
                .map(|w| {
                    s.spawn(move || -> Result<()> {
                        for seq in 0..each {
                            let st = make(w, seq)
                                .stdout(Stdio::null())
                                .stderr(Stdio::null())
                                .status()?;
                            ensure!(st.success(), "writer {w} message {seq}: {st}");
                        }
                        Ok(())
                    })
                })
                .collect();
            hs.into_iter()
                .try_for_each(|h| h.join().expect("writer thread"))
        })?;
        Ok(t0.elapsed())
    };
    // The anchor is started exactly as the sends are (the same environment changes and
    // working directory): Rust's `Command` starts a plain `Command::new("/bin/true")` through
    // `posix_spawn`, but one with a changed environment and directory may take another path,
    // and that cost is the harness's, not teamctl's.
    let bare_cmd = |_: usize, _: usize| env.cmd_of(std::path::Path::new("/bin/true"), &[]);
    let plain = run(&|_, _| Command::new("/bin/true"))?;
    let bare = run(&bare_cmd)?;
    let sends = run(&|w, seq| {
        let mut c = env.cmd(&["--as", "s", "send", "team-lead", &format!("w{w} {seq}")]);
        c.env("TEAMCTL_TEAM", TEAM);
        c
    })?;
    let bare2 = run(&bare_cmd)?;
    let plain2 = run(&|_, _| Command::new("/bin/true"))?;

    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    let mut last: Vec<Option<usize>> = vec![None; writers];
    let (mut torn, mut reordered) = (0, 0);
    for e in store.read(&Name::leader(), start, usize::MAX)? {
        match e.item {
            Item::Message(m) => {
                let Body::Message { text, .. } = &m.body else {
                    continue;
                };
                let Some((w, seq)) = text
                    .strip_prefix('w')
                    .and_then(|t| t.split_once(' '))
                    .and_then(|(w, s)| Some((w.parse().ok()?, s.parse().ok()?)))
                else {
                    continue;
                };
                *seen.entry((w, seq)).or_default() += 1;
                if last[w].is_some_and(|l: usize| l >= seq) {
                    reordered += 1;
                }
                last[w] = Some(seq);
            }
            Item::Garbage(_) => torn += 1,
            Item::Blank => {}
        }
    }
    let total = writers * each;
    let lost = total - seen.len();
    let dup: usize = seen.values().map(|c| c - 1).sum();
    let rate = |d: Duration| total as f64 / d.as_secs_f64();
    let bare_rate = f64::midpoint(rate(bare), rate(bare2));
    println!();
    println!(
        "senders: {writers} threads x {each} `teamctl send` processes, first started -> last reaped"
    );
    println!(
        "  teamctl send: {total} in {} = {:.0} processes/s",
        fmt(sends),
        rate(sends)
    );
    println!(
        "  /bin/true started as the sends are, same run before and after: {} / {} = {:.0} / {:.0} processes/s",
        fmt(bare),
        fmt(bare2),
        rate(bare),
        rate(bare2)
    );
    println!(
        "  share of the bare start rate: {:.1}% (target 70%)",
        100.0 * rate(sends) / bare_rate
    );
    let plain_rate = f64::midpoint(rate(plain), rate(plain2));
    println!(
        "  /bin/true started plainly (`Command::new` alone, posix_spawn), before and after: {:.0} / {:.0} processes/s; share {:.1}%",
        rate(plain),
        rate(plain2),
        100.0 * rate(sends) / plain_rate
    );
    println!(
        "  lost {lost}, duplicated {dup}, reordered {reordered}, torn {torn} (target 0 / 0 / 0 / 0)"
    );
    Ok(())
}
