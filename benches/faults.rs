//! Faults of the NATS store (issue 15 part 5): a three-node JetStream cluster on loopback (the
//! test harness's `NatsCluster`, tests/it/common/nats.rs), one team on it (R3), one live
//! worker (process backend; its agent appends the time and the body of every message it
//! handles to a file), `FAULTS_SENDERS` (16) threads each starting `FAULTS_EACH` (1,000)
//! `teamctl send` processes one after another, and `kill -9` of the node leading the team's
//! stream once a third of the sends are done.
//!
//! Figures, each beside its anchor from the same run:
//! - failover, as a sender sees it: from the kill to the end of the first send started after
//!   it that succeeded; anchor: a send's duration (p50, p99) before the kill;
//! - failover, as the worker sees it: from the kill to the agent's handling of the first
//!   message sent after it; anchor: the agent's gaps between messages (p50, p99) before it;
//! - the longest send that overlapped the kill;
//! - lost (sent, exit 0, never handled), handled twice, sends that failed (exit 1) and how many
//!   of those were stored anyway.
//!
//! `cargo bench --features nats --bench faults`; the server binary is
//! `TEAMCTL_TEST_NATS_SERVER`, else `nats-server` on PATH. Figures are printed, never asserted.

mod support;

#[allow(dead_code)]
#[path = "../tests/it/common/nats.rs"]
mod cluster;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use support::{Env, Stats, env_count, epoch_us, fmt, print_machine, wait_for};

/// One `teamctl send`: its body, when it started and ended (µs since the epoch), its exit code
/// and the first line of its error.
struct Sent {
    body: String,
    start: u128,
    end: u128,
    code: Option<i32>,
    err: String,
}

fn main() -> Result<()> {
    print_machine("faults");
    let senders = env_count("FAULTS_SENDERS", 16);
    let each = env_count("FAULTS_EACH", 1000);
    let total = senders * each;

    let mut cluster = cluster::NatsCluster::start(3);
    println!("cluster: {} (3 nodes, JetStream, loopback)", cluster.url());
    let env = Env::new()?;
    env.ok(&["create", "fa", "--store", &cluster.url()])?;
    let record = env.work.path().join("handled.txt");
    env.ok(&[
        "spawn",
        "w",
        "--backend",
        "process",
        "--exec",
        &format!(
            r#"printf '%s %s\n' "$(date +%s%N)" "$(cat)" >> '{}'"#,
            record.display()
        ),
    ])?;
    let pid_of = |env: &Env| -> Option<u64> {
        let status: serde_json::Value =
            serde_json::from_str(&env.ok(&["--json", "status"]).ok()?).ok()?;
        status["members"]
            .as_array()?
            .iter()
            .find(|m| m["name"] == "w")?["pid"]
            .as_u64()
    };
    let pid = pid_of(&env);
    let leader = cluster
        .leader_of("tc_fa")
        .context("the team's stream has no leader")?;
    println!(
        "stream tc_fa: {} replicas, leader {leader}; worker pid {pid:?}; {senders} senders x {each} sends",
        cluster.replicas_of("tc_fa").unwrap_or(0)
    );

    let done = Arc::new(AtomicUsize::new(0));
    let killed_at = Arc::new(AtomicU64::new(0));
    let results = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let started = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        for i in 0..senders {
            let (env, done, results) = (&env, done.clone(), results.clone());
            s.spawn(move || {
                for j in 0..each {
                    let body = format!("m-{i}-{j}");
                    let start = epoch_us();
                    let out = env.cmd(&["send", "w", &body]).output();
                    let end = epoch_us();
                    let (code, err) = match out {
                        Ok(o) => (
                            o.status.code(),
                            String::from_utf8_lossy(&o.stderr)
                                .lines()
                                .next()
                                .unwrap_or("")
                                .to_string(),
                        ),
                        Err(e) => (None, e.to_string()),
                    };
                    results.lock().unwrap().push(Sent {
                        body,
                        start,
                        end,
                        code,
                        err,
                    });
                    done.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        wait_for(
            "a third of the sends",
            Duration::from_mins(30),
            Duration::from_millis(5),
            || done.load(Ordering::SeqCst) >= total / 3,
        )?;
        killed_at.store(epoch_us() as u64, Ordering::SeqCst);
        if std::env::var("FAULTS_KILL").as_deref() != Ok("0") {
            cluster.kill(&leader);
        }
        Ok(())
    })?;
    let wall = started.elapsed();
    let kill = u128::from(killed_at.load(Ordering::SeqCst));
    let results = std::mem::take(&mut *results.lock().unwrap());
    let new_leader = cluster.leader_of("tc_fa");

    // Wait for the worker to handle everything that was sent (or give up and count it lost).
    let handled = || -> HashMap<String, Vec<u128>> {
        let mut seen: HashMap<String, Vec<u128>> = HashMap::new();
        for line in std::fs::read_to_string(&record).unwrap_or_default().lines() {
            if let Some((ns, body)) = line.split_once(' ') {
                let at = ns.parse::<u128>().unwrap_or(0) / 1000;
                seen.entry(body.to_string()).or_default().push(at);
            }
        }
        seen
    };
    let ok: Vec<&Sent> = results.iter().filter(|r| r.code == Some(0)).collect();
    let failed: Vec<&Sent> = results.iter().filter(|r| r.code != Some(0)).collect();
    let drained = wait_for(
        "the worker to handle every message sent",
        Duration::from_mins(5),
        Duration::from_millis(50),
        || {
            let seen = handled();
            ok.iter().all(|r| seen.contains_key(&r.body))
        },
    );
    let seen = handled();
    let lost = ok.iter().filter(|r| !seen.contains_key(&r.body)).count();
    let twice = seen.values().filter(|v| v.len() > 1).count();
    let failed_stored = failed.iter().filter(|r| seen.contains_key(&r.body)).count();

    let before: Vec<Duration> = results
        .iter()
        .filter(|r| r.end < kill && r.code == Some(0))
        .map(|r| Duration::from_micros((r.end - r.start) as u64))
        .collect();
    let send_before = Stats::new(before);
    let first_send_after = ok
        .iter()
        .filter(|r| r.start >= kill)
        .map(|r| r.end)
        .min()
        .map(|e| Duration::from_micros((e - kill) as u64));
    let longest_overlap = results
        .iter()
        .filter(|r| r.start <= kill && r.end >= kill)
        .map(|r| Duration::from_micros((r.end - r.start) as u64))
        .max();
    // The worker's pause: the longest gap between two messages handled one after the other
    // (the agent's own clock), and where it ends relative to the kill.
    let mut times: Vec<u128> = seen.values().flatten().copied().collect();
    times.sort_unstable();
    let gaps: Vec<(u128, u128)> = times.windows(2).map(|w| (w[0], w[1])).collect();
    let stall = gaps.iter().max_by_key(|(a, b)| b - a).copied();
    let gap_stats = Stats::new(
        gaps.iter()
            .map(|(a, b)| Duration::from_micros((b - a) as u64))
            .collect(),
    );
    let show = |d: Option<Duration>| d.map_or("none".to_string(), fmt);
    println!(
        "sends: {} in {} ({:.0} sends/s), {} exit 0, {} failed",
        results.len(),
        fmt(wall),
        results.len() as f64 / wall.as_secs_f64(),
        ok.len(),
        failed.len()
    );
    println!(
        "killed {leader} (kill -9) after {} sends; new leader {new_leader:?}",
        total / 3
    );
    println!(
        "failover, sender: kill -> first send started after it done: {} | anchor: send before the kill p50 {}, p99 {}",
        show(first_send_after),
        fmt(send_before.median()),
        fmt(send_before.pct(99.0))
    );
    let us = |d: u128| Duration::from_micros(d as u64);
    if let Some((a, b)) = stall {
        let ends = if b >= kill {
            format!("{} after the kill", fmt(us(b - kill)))
        } else {
            format!("{} before the kill", fmt(us(kill - b)))
        };
        println!(
            "failover, worker: its longest pause between two messages handled: {} (it ends {ends}) | anchor: the agent's gaps over the run p50 {}, p99 {}",
            fmt(us(b - a)),
            fmt(gap_stats.median()),
            fmt(gap_stats.pct(99.0))
        );
    }
    println!(
        "longest send overlapping the kill: {}",
        show(longest_overlap)
    );
    println!(
        "lost: {lost}; handled twice: {twice}; failed sends: {} ({failed_stored} of them stored and handled once){}",
        failed.len(),
        if drained.is_ok() {
            String::new()
        } else {
            " (gave up waiting after 300 s)".into()
        }
    );
    for r in failed.iter().take(3) {
        println!("  a failed send: exit {:?}: {}", r.code, r.err);
    }
    println!("worker pid before {pid:?}, after {:?}", pid_of(&env));
    // Kept for a look after the run: the agent's record and each send (µs since the epoch).
    let keep = std::env::temp_dir().join("teamctl-bench-faults");
    std::fs::create_dir_all(&keep)?;
    std::fs::copy(&record, keep.join("handled.txt"))?;
    let _ = std::fs::copy(
        env.team_dir("fa").join("logs").join("w.log"),
        keep.join("w.log"),
    );
    let mut sends = format!("kill {kill}\n");
    for r in &results {
        sends.push_str(&format!(
            "{} {} {} {:?} {}\n",
            r.body, r.start, r.end, r.code, r.err
        ));
    }
    std::fs::write(keep.join("sends.txt"), sends)?;
    println!(
        "the agent's record and the sends are kept in {}",
        keep.display()
    );
    let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average at the end: {}",
        l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    Ok(())
}
