//! Spawning 50, 150 and 300 teammates on the process backend and on tmux (SPEC section 10:
//! 300 under 10 s on 2 cores; idle worker RSS under 4 MiB; a broadcast to 300 handled within
//! 1 s), with the anchor measured in the same run: 300 bare tmux panes running `sleep` on a
//! private server, one `tmux` command per pane (as teamctl issues one per teammate).
//!
//! Per size and backend, in a fresh home:
//! - spawn: `teamctl spawn wI --backend B --exec CMD` run N times one after another, as a
//!   leader would; "commands" is until the last one returned, "all idle" until every worker's
//!   live state says idle (its inotify watch or poll armed, waiting for mail).
//! - memory: VmRSS and Pss (from /proc/PID/smaps_rollup, shared pages divided among sharers)
//!   of each idle worker process; how many hold an inotify instance and how many fell back to
//!   polling (the per-user limit, fs.inotify.max_user_instances, is 128 by default and shared
//!   with everything else the user runs).
//! - broadcast: one `teamctl send '*' ...`; the time until every teammate's agent
//!   (`echo "$TEAMCTL_AGENT_NAME" >> FILE`) has run, from just before the send process starts.
//!
//! With `SPAWN_RAISE_INOTIFY=1024` (root only) the 300 runs are repeated with the limit raised
//! to that value; the old value is restored at the end, whatever happens.

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use support::{Env, fmt, inotify_fds, inotify_limit, memory_kib, print_machine, wait_for};

const TEAM: &str = "bench";

fn main() -> Result<()> {
    print_machine("spawn");
    let sizes: Vec<usize> = std::env::var("SPAWN_SIZES")
        .unwrap_or_else(|_| "50,150,300".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let backends: Vec<String> = std::env::var("SPAWN_BACKENDS")
        .unwrap_or_else(|_| "process,tmux".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let biggest = sizes.iter().copied().max().unwrap_or(300);
    bare_panes(biggest)?;
    let mut results = Vec::new();
    for backend in &backends {
        for &n in &sizes {
            match run(backend, n) {
                Ok(Some(r)) => results.push(r),
                Ok(None) => break,
                Err(e) => {
                    // A larger team on the same backend fails the same way (tmux missing).
                    println!("{backend} x {n}: FAILED: {e:#}");
                    break;
                }
            }
        }
    }
    if let Some(raise) = std::env::var("SPAWN_RAISE_INOTIFY")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        let guard = Limit::raise(raise)?;
        println!("\n-- inotify limit raised to {} (was {})", raise, guard.old);
        for backend in &backends {
            match run(backend, biggest) {
                Ok(Some(mut r)) => {
                    r.label.push_str(" (limit raised)");
                    results.push(r);
                }
                Ok(None) => {}
                Err(e) => println!("{backend} x {biggest}: FAILED: {e:#}"),
            }
        }
        drop(guard);
    }
    println!("\nsummary (targets: 300 spawned < 10 s, idle RSS < 4 MiB, broadcast to 300 < 1 s)");
    for r in &results {
        println!("{}", r.line());
    }
    Ok(())
}

struct Outcome {
    label: String,
    commands: Duration,
    idle: Duration,
    /// Sorted KiB figures of every idle worker.
    rss_kib: Vec<u64>,
    pss_kib: Vec<u64>,
    inotify: usize,
    n: usize,
    send: Duration,
    broadcast: Duration,
}

impl Outcome {
    fn line(&self) -> String {
        let mib = |v: &[u64], max: bool| {
            let x = if max { v.last() } else { v.get(v.len() / 2) };
            x.copied().unwrap_or(0) as f64 / 1024.0
        };
        format!(
            "{:<28} spawn cmds {:>8}  all idle {:>8}  RSS p50 {:.2} MiB max {:.2} MiB  Pss p50 {:.2} MiB  inotify {}/{}  broadcast {:>8} (send itself {})",
            self.label,
            fmt(self.commands),
            fmt(self.idle),
            mib(&self.rss_kib, false),
            mib(&self.rss_kib, true),
            mib(&self.pss_kib, false),
            self.inotify,
            self.n,
            fmt(self.broadcast),
            fmt(self.send)
        )
    }
}

fn run(backend: &str, n: usize) -> Result<Option<Outcome>> {
    eprintln!("[spawn] {backend} x {n}...");
    let env = if backend == "tmux" {
        Env::with_tmux()?
    } else {
        Env::new()?
    };
    env.ok(&["create", TEAM])?;
    let stamps = env.work.path().join("handled");
    let agent = format!("echo \"$TEAMCTL_AGENT_NAME\" >> {}", stamps.display());
    let names: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
    let t0 = Instant::now();
    for name in &names {
        let out = env
            .cmd(&["spawn", name, "--backend", backend, "--exec", &agent])
            .output()?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("not available") {
                println!(
                    "{backend}: skipped, the backend is not in this build ({})",
                    err.trim()
                );
                return Ok(None);
            }
            bail!("spawn {name} failed: {err}");
        }
    }
    let commands = t0.elapsed();
    let mut pids = Vec::new();
    wait_for(
        "every worker to be idle",
        Duration::from_mins(5),
        Duration::from_millis(10),
        || {
            pids.clear();
            for name in &names {
                match env.live(TEAM, name) {
                    Some(l) if l["status"] == "idle" => {
                        pids.push(l["pid"].as_u64().unwrap_or(0) as u32);
                    }
                    _ => return false,
                }
            }
            true
        },
    )?;
    let idle = t0.elapsed();
    // Let start-up allocations settle, then measure idle memory.
    std::thread::sleep(Duration::from_millis(500));
    let (mut rss, mut pss, mut inotify) = (Vec::new(), Vec::new(), 0);
    for &pid in &pids {
        let (r, p) = memory_kib(pid).with_context(|| format!("no memory figures for {pid}"))?;
        rss.push(r);
        pss.push(p);
        if inotify_fds(pid) > 0 {
            inotify += 1;
        }
    }

    let t0 = Instant::now();
    env.ok(&["send", "*", "broadcast: report in"])?;
    let send = t0.elapsed();
    wait_for(
        "every teammate to handle the broadcast",
        Duration::from_mins(1),
        Duration::from_millis(1),
        || handled(&stamps) >= n,
    )?;
    let broadcast = t0.elapsed();
    let got: Vec<String> = std::fs::read_to_string(&stamps)?
        .lines()
        .map(String::from)
        .collect();
    let unique: HashSet<&String> = got.iter().collect();
    if unique.len() != n || got.len() != n {
        bail!(
            "broadcast handled {} times by {} teammates (expected {n} once each)",
            got.len(),
            unique.len()
        );
    }
    let out = Outcome {
        label: format!("{backend} x {n}"),
        commands,
        idle,
        rss_kib: sorted(rss),
        pss_kib: sorted(pss),
        inotify,
        n,
        send,
        broadcast,
    };
    println!("{}", out.line());
    Ok(Some(out))
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

fn handled(stamps: &Path) -> usize {
    std::fs::read(stamps).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// The anchor: `n` bare panes running `sleep` on a private tmux server, one command each.
fn bare_panes(n: usize) -> Result<()> {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("anchor: tmux not found, bare panes not measured");
        return Ok(());
    }
    let b = support::bare_panes(n)?;
    println!(
        "anchor: {n} bare tmux panes running sleep: {} ({} windows; a bare sleep pane's RSS {:.2} MiB)",
        fmt(b.took),
        b.windows,
        b.sleep_rss_kib as f64 / 1024.0
    );
    println!(
        "anchor (SPEC, not measurable here): the original took 36.8 GB for 292 agents in 2 minutes"
    );
    Ok(())
}

/// The inotify instance limit, raised for a while and restored on drop.
struct Limit {
    old: u64,
}

const LIMIT_FILE: &str = "/proc/sys/fs/inotify/max_user_instances";

impl Limit {
    fn raise(to: u64) -> Result<Limit> {
        let old = inotify_limit().context("cannot read the inotify limit")?;
        std::fs::write(LIMIT_FILE, to.to_string())
            .context("cannot raise fs.inotify.max_user_instances (needs root)")?;
        Ok(Limit { old })
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(LIMIT_FILE, self.old.to_string()) {
            eprintln!("could not restore {LIMIT_FILE} to {}: {e}", self.old);
        }
    }
}
