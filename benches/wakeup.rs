//! Wake-up latency, NARROW (SPEC section 10): from an in-process `Store::append` (no `teamctl
//! send` process: its start-up is not counted) to the worker starting the turn. The
//! user-visible figure, from a `teamctl send` process starting to the agent's first
//! instruction, is `benches/whole.rs` (issue 14). This one: with inotify and with forced polling at 1 s and 5 s (the anchors:
//! the intervals of the tools teamctl replaces), all in the same run.
//!
//! What is measured, per message, on one idle worker (process backend, release binary):
//! - `t0`: taken in this process just before `Store::append` (the library's append: lock,
//!   one `write()`), with both a monotonic and a wall clock.
//! - "worker": the first moment this process is told (by its own inotify watch on the
//!   teammate's log) that the worker wrote its turn-start line (`<- team-lead: ...`), which the
//!   worker writes right after recording the turn in its live state and before it runs the
//!   agent. It is an upper bound: it includes this process's own notification latency.
//! - "agent": the wall-clock time at which the agent command is running, printed by the agent
//!   itself (`exec bash -c 'printf ... $EPOCHREALTIME'`, microsecond resolution): it adds
//!   spawning `sh` and exec'ing bash to the worker figure.
//!
//! The next message is appended only once the worker is idle again. In the polling modes each
//! append waits a random delay in `[0, interval)` first, so the append falls at a random phase
//! of the poll (otherwise the turn's own length would fix the phase and bias the figure).

mod support;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use notify::{RecursiveMode, Watcher};
use support::{Env, Rng, Stats, env_count, epoch_us, fmt, print_machine, wait_for};
use teamctl::domain::{Body, Envelope, Name};
use teamctl::store::{FsStore, Store};

const TEAM: &str = "wake";
const MEMBER: &str = "w";

struct Run {
    label: String,
    worker: Stats,
    agent: Stats,
}

fn main() -> Result<()> {
    print_machine("wakeup");
    let n_inotify = env_count("WAKEUP_N", 1000);
    let n_poll1 = env_count("WAKEUP_N_POLL1", 30);
    let n_poll5 = env_count("WAKEUP_N_POLL5", 20);
    let inotify = measure("inotify", None, n_inotify)?;
    // A count of 0 skips a polling mode (its lines then read 0).
    let poll1 = measure("poll 1 s", Some(1000), n_poll1)?;
    let poll5 = measure("poll 5 s", Some(5000), n_poll5)?;
    println!();
    for r in [&inotify, &poll1, &poll5] {
        println!(
            "{:<9} in-process append -> worker's turn-start log line: {}",
            r.label,
            r.worker.line()
        );
        println!(
            "{:<9} in-process append -> agent running (bash stamp):  {}",
            "",
            r.agent.line()
        );
    }
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!();
    println!(
        "ratio p50 (worker): 1 s poll / inotify = {:.0}x, 5 s poll / inotify = {:.0}x (target 500x)",
        ratio(poll1.worker.median(), inotify.worker.median()),
        ratio(poll5.worker.median(), inotify.worker.median())
    );
    println!(
        "ratio p99 (worker): 1 s poll / inotify = {:.0}x, 5 s poll / inotify = {:.0}x",
        ratio(poll1.worker.pct(99.0), inotify.worker.pct(99.0)),
        ratio(poll5.worker.pct(99.0), inotify.worker.pct(99.0))
    );
    println!(
        "target: p50 1 ms / p99 5 ms (worker): p50 {} p99 {}",
        fmt(inotify.worker.median()),
        fmt(inotify.worker.pct(99.0))
    );
    Ok(())
}

fn measure(label: &str, poll_ms: Option<u64>, n: usize) -> Result<Run> {
    if n == 0 {
        return Ok(Run {
            label: label.to_string(),
            worker: Stats::new(Vec::new()),
            agent: Stats::new(Vec::new()),
        });
    }
    eprintln!("[wakeup] {label}: {n} messages...");
    let env = Env::new()?;
    env.ok(&["create", TEAM])?;
    let stamps = env.work.path().join("stamps");
    let agent = format!(
        "exec bash -c 'printf \"%s %s\\n\" \"$EPOCHREALTIME\" \"$TEAMCTL_MESSAGE_ID\" >> {}'",
        stamps.display()
    );
    let mut spawn = env.cmd(&["spawn", MEMBER, "--backend", "process", "--exec", &agent]);
    if let Some(ms) = poll_ms {
        spawn.env("TEAMCTL_POLL_MS", ms.to_string());
    }
    let out = spawn.output()?;
    support::check(&["spawn"], &out)?;
    wait_for(
        "the worker to be idle",
        Duration::from_secs(20),
        Duration::from_millis(5),
        || status_turns(&env).is_some_and(|(s, _)| s == "idle"),
    )?;

    let team_dir = env.team_dir(TEAM);
    let store = FsStore::new(Name::parse(TEAM)?, team_dir.clone());
    let to = Name::parse(MEMBER)?;
    let log = team_dir.join("logs").join(format!("{MEMBER}.log"));
    let (tx, rx) = mpsc::channel::<(Instant, String)>();
    let watcher = log_watcher(&log, tx)?;

    let mut rng = Rng::from_time();
    let (mut worker, mut agent_lat) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        match poll_ms {
            Some(ms) => std::thread::sleep(Duration::from_micros(rng.below(ms * 1000))),
            None => std::thread::sleep(Duration::from_micros(500 + rng.below(2000))),
        }
        let marker = format!("wake-{i}");
        let env_msg = Envelope::new("team-lead", MEMBER, Body::message(&marker, None));
        let id = env_msg.id.clone();
        while rx.try_recv().is_ok() {}
        let wall0 = epoch_us();
        let t0 = Instant::now();
        store.append(&to, &env_msg)?;
        let limit = Duration::from_millis(poll_ms.unwrap_or(0) * 2 + 10_000);
        let seen = loop {
            let (at, line) = rx
                .recv_timeout(limit)
                .with_context(|| format!("no turn start for message {i} within {limit:?}"))?;
            if line.ends_with(&format!(": {marker}")) {
                break at;
            }
        };
        worker.push(seen.duration_since(t0));
        let mut agent_at = None;
        wait_for(
            "the agent's stamp",
            Duration::from_secs(10),
            Duration::from_micros(500),
            || {
                agent_at = stamp_of(&stamps, &id);
                agent_at.is_some()
            },
        )?;
        let agent_us = agent_at.expect("stamp found");
        agent_lat.push(Duration::from_micros(agent_us.saturating_sub(wall0) as u64));
        wait_for(
            "the worker to be idle again",
            Duration::from_secs(10),
            Duration::from_micros(500),
            || status_turns(&env).is_some_and(|(s, t)| s == "idle" && t == i as u64 + 1),
        )?;
    }
    drop(watcher);
    let run = Run {
        label: label.to_string(),
        worker: Stats::new(worker),
        agent: Stats::new(agent_lat),
    };
    eprintln!("[wakeup] {label}: worker {}", run.worker.line());
    Ok(run)
}

/// The worker's status and turn count from its live state.
fn status_turns(env: &Env) -> Option<(String, u64)> {
    let live = env.live(TEAM, MEMBER)?;
    Some((
        live["status"].as_str()?.to_string(),
        live["turns"].as_u64()?,
    ))
}

/// Watch the teammate's log; send each new complete line with the time its event arrived.
fn log_watcher(
    log: &Path,
    tx: mpsc::Sender<(Instant, String)>,
) -> Result<notify::RecommendedWatcher> {
    let path: PathBuf = log.to_path_buf();
    let mut offset = std::fs::metadata(&path).map_or(0, |m| m.len());
    let mut partial = String::new();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        let at = Instant::now();
        // Only writes: our own opens and closes of the log would otherwise feed back.
        if !ev.is_ok_and(|e| matches!(e.kind, notify::EventKind::Modify(_))) {
            return;
        }
        let Ok(mut f) = std::fs::File::open(&path) else {
            return;
        };
        if f.seek(SeekFrom::Start(offset)).is_err() {
            return;
        }
        let mut buf = String::new();
        if let Ok(n) = f.read_to_string(&mut buf) {
            offset += n as u64;
        }
        partial.push_str(&buf);
        while let Some(nl) = partial.find('\n') {
            let line: String = partial.drain(..=nl).collect();
            let _ = tx.send((at, line.trim_end().to_string()));
        }
    })?;
    watcher.watch(log, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}

/// The agent's wall-clock stamp (microseconds) for message `id`, if written.
fn stamp_of(stamps: &Path, id: &str) -> Option<u128> {
    let text = std::fs::read_to_string(stamps).ok()?;
    let line = text.lines().rev().find(|l| l.ends_with(id))?;
    let t = line.split_whitespace().next()?;
    let (s, us) = t.split_once(['.', ','])?;
    let parsed = s.parse::<u128>().ok()? * 1_000_000 + us.parse::<u128>().ok()?;
    if us.len() != 6 {
        return None;
    }
    Some(parsed)
}
