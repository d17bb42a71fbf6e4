//! A thousand teammates on two cores (issue 14, goal 3), system limits untouched: N
//! teammates (`THOUSAND_N`, default 1000; a smaller N for a quick run) in a temporary
//! `TEAMCTL_HOME`, each figure printed beside its anchor measured in the same run.
//!
//! Every teammate runs the stamping agent of `benches/whole.rs` (`support::stamp_agent_at_entry`:
//! a static program with no C library whose entry point `_start` reads the realtime clock by a
//! raw `clock_gettime` system call and prints it): a wake-up is timed to the agent's first
//! instruction, as issue 14 defines it. (Before: `support::stamp_agent`, which reads the clock
//! in `main`, after static glibc's start-up, about 0.5 ms here; before that `date +%s%N`, whose
//! stamp comes after its own dynamic loading and locale set-up, about 0.3 ms more at p50.)
//!
//! Process backend, one home holding team `bench` (N teammates) and team `one` (a single
//! teammate, made first, so it holds an inotify instance if any is left):
//! - spawn: `teamctl spawn wI --backend process --exec STAMP` N times one after another,
//!   until every worker's live state says idle. Then how each worker waits: on inotify (it
//!   holds an instance), on a doorbell (a FIFO of its pid in `bells/inbox-wI`), or polling
//!   (the warning in its log). The per-user inotify instance limit is shared with everything
//!   else the user runs.
//! - wake-up of every teammate: for each wI in turn, from just before `teamctl send wI MSG` is
//!   started to the agent's first instruction, its entry point (the stamping agent, run directly
//!   by the worker; its stamp is its reply, read back from the leader's inbox file); also from
//!   `send` reaped. Twice: the first message to each teammate finds no turn's process waiting
//!   (an idle teammate starts one ahead only once it has had a turn, `worker::launch`), the
//!   second finds one, as with a teammate in use.
//!   Anchor, interleaved send by send: the same to the lone teammate of team `one` (which has
//!   had a turn before each of its wake-ups but its first).
//! - broadcast: from just before `teamctl send '*' MSG` is started until a reply from every
//!   one of the N is in the leader's inbox. Anchor: N stamping agents started one
//!   after another by the bench (the agents' own work, with nothing of teamctl's).
//! - idle memory: VmRSS and Pss (`/proc/PID/smaps_rollup`) of every idle worker. Anchor: a
//!   bare `sleep` process started by the bench, and the lone teammate's worker.
//! - `teamctl status` (text, to /dev/null), wall time of the whole process, N members: one
//!   first run, then `THOUSAND_STATUS_RUNS` (default 10). Anchor, interleaved: `teamctl
//!   --version` and `teamctl --team one status`.
//!
//! Parts run in the order `THOUSAND_BACKENDS` gives (default `tmux,process`; one name runs one
//! part). The tmux part goes first because each part ends by removing its home, some 12,000
//! files: this machine's ext4 has no journal, and without one the kernel's inode allocator
//! passes over every inode freed in the last minutes on each file it makes (`recently_deleted`
//! in `find_inode_bit`). A spawn makes about 12 files; run after the process part, the tmux
//! part's spawns took a third longer (BENCHMARKS.md, "Eighth session").
//!
//! tmux backend, two private tmux servers (`tmux -L`) alive side by side: the anchor's, of bare
//! panes running `sleep`, and the team's. Interleaved in pairs of B (`THOUSAND_BATCH`, default 50; the last
//! pair smaller when B does not divide N) until N each, so both servers grow alike and a change
//! of load on the shared cores hits both sides:
//! - anchor side: B bare panes, one `tmux` command each (split the current window `-l 1`; when
//!   it is full, a new window). Timer: from just before the batch's first `tmux` command is
//!   started to its last one reaped.
//! - team side: B `teamctl spawn wI --backend tmux --exec STAMP` one after another, then
//!   waiting until each of those B workers' live state says idle (read every 5 ms). Timer: from
//!   just before the batch's first `spawn` is started to the batch's last worker seen idle.
//! - between the sides, 250 ms untimed (`THOUSAND_GAP_MS`), so what one side left running (the
//!   leader console's redraw, up to 200 ms after the last spawn) is not charged to the other.
//!
//! Printed: each side's sum, the ratio of the sums, every pair's ratio (team / anchor) in order
//! with their median, quartiles and extremes, and the pairs at the start, middle and end (to
//! show growth with N); then how the workers wait, their idle VmRSS and `teamctl status` on
//! the team. `THOUSAND_TMUX_SEQUENTIAL=1` also measures the older figure afterwards on fresh
//! servers: N bare panes first, then N spawns until all idle (timed from the first spawn
//! started), which measures the change of load between the halves as much as teamctl.
//!
//! Every pane and process started is ended and the homes removed when the bench ends, fails
//! or is interrupted (SIGINT, SIGTERM, SIGHUP: `support`); the end says how many were left.

mod support;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use support::{
    BareServer, Env, Rng, Stats, env_count, epoch_us, fmt, inotify_fds, memory_kib, print_machine,
    processes_mentioning, wait_for,
};

const TEAM: &str = "bench";
const ONE: &str = "one";
/// The agent every teammate runs: the stamping agent that stamps at its entry point
/// (`support::stamp_agent_at_entry`), set by `main`.
static AGENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn agent() -> &'static str {
    AGENT.get().expect("main builds the agent first")
}

fn main() -> Result<()> {
    print_machine("thousand");
    let stamp_dir = tempfile::Builder::new()
        .prefix("teamctl-bench-stamp")
        .tempdir()?;
    AGENT
        .set(support::stamp_agent_at_entry(stamp_dir.path())?)
        .expect("set once");
    let n = env_count("THOUSAND_N", 1000);
    let backends = std::env::var("THOUSAND_BACKENDS").unwrap_or_else(|_| "tmux,process".into());
    println!("N = {n} teammates");
    for backend in backends.split(',').map(str::trim) {
        match backend {
            "process" => process_run(n)?,
            "tmux" => tmux_run(n)?,
            other => bail!("unknown backend {other}"),
        }
        load("after this part");
    }
    Ok(())
}

fn load(when: &str) {
    let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let l: Vec<&str> = l.split_whitespace().take(3).collect();
    println!("load average {when}: {}", l.join(" "));
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("w{i}")).collect()
}

/// The leader's inbox of a team, read as a file from where the last read stopped (the
/// format in docs/PROTOCOL.md: one JSON envelope a line).
struct LeaderInbox {
    path: PathBuf,
    pos: u64,
    partial: Vec<u8>,
}

impl LeaderInbox {
    fn new(env: &Env, team: &str) -> LeaderInbox {
        let path = env.team_dir(team).join("inboxes/team-lead/inbox.jsonl");
        let pos = std::fs::metadata(&path).map_or(0, |m| m.len());
        LeaderInbox {
            path,
            pos,
            partial: Vec::new(),
        }
    }

    /// The replies appended since the last call: (from, text).
    fn replies(&mut self) -> Vec<(String, String)> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(self.pos)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let Ok(got) = f.read_to_end(&mut buf) else {
            return Vec::new();
        };
        self.pos += got as u64;
        self.partial.extend_from_slice(&buf);
        let mut out = Vec::new();
        let Some(last) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return out;
        };
        let whole: Vec<u8> = self.partial.drain(..=last).collect();
        for line in whole.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            if v["type"] == "message"
                && let (Some(from), Some(text)) = (v["from"].as_str(), v["text"].as_str())
            {
                out.push((from.to_string(), text.to_string()));
            }
        }
        out
    }
}

/// Wait until every one of `names` in `team` is idle with at least `turns` turns; their pids.
fn all_idle(env: &Env, team: &str, names: &[String], turns: u64) -> Result<Vec<u32>> {
    let mut pids = vec![0u32; names.len()];
    let mut next = 0;
    wait_for(
        "every worker to be idle",
        Duration::from_mins(15),
        Duration::from_millis(5),
        || {
            while next < names.len() {
                match env.live(team, &names[next]) {
                    Some(l)
                        if l["status"] == "idle"
                            && l["turns"].as_u64().is_some_and(|t| t >= turns) =>
                    {
                        pids[next] = l["pid"].as_u64().unwrap_or(0) as u32;
                        next += 1;
                    }
                    _ => return false,
                }
            }
            true
        },
    )?;
    Ok(pids)
}

/// One `teamctl spawn NAME --backend BACKEND --exec AGENT`, required to succeed.
fn spawn_one(env: &Env, team: &str, name: &str, backend: &str) -> Result<()> {
    let out = env
        .cmd(&[
            "--team",
            team,
            "spawn",
            name,
            "--backend",
            backend,
            "--exec",
            agent(),
        ])
        .output()?;
    support::check(&["spawn", name], &out)
}

fn spawn_all(env: &Env, team: &str, names: &[String], backend: &str) -> Result<Duration> {
    let t0 = Instant::now();
    for (i, name) in names.iter().enumerate() {
        spawn_one(env, team, name, backend)?;
        if (i + 1) % 100 == 0 {
            eprintln!(
                "[thousand] {backend}: {} spawned ({})",
                i + 1,
                fmt(t0.elapsed())
            );
        }
    }
    Ok(t0.elapsed())
}

#[derive(Default)]
struct Modes {
    inotify: usize,
    doorbell: usize,
    polling: usize,
    other: usize,
}

/// How each worker waits for its mail.
fn modes(env: &Env, team: &str, names: &[String], pids: &[u32]) -> Modes {
    let mut m = Modes::default();
    for (name, &pid) in names.iter().zip(pids) {
        let log = std::fs::read_to_string(env.team_dir(team).join(format!("logs/{name}.log")))
            .unwrap_or_default();
        let bells = env.team_dir(team).join(format!("bells/inbox-{name}"));
        let prefix = format!("{pid}-");
        let rings = std::fs::read_dir(&bells).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        });
        if log.contains("polling every") {
            m.polling += 1;
        } else if inotify_fds(pid) > 0 {
            m.inotify += 1;
        } else if rings {
            m.doorbell += 1;
        } else {
            m.other += 1;
        }
    }
    m
}

/// One timed wake-up of `name` in `team`: (send started -> stamp, send reaped -> stamp).
fn wake_one(
    env: &Env,
    inbox: &mut LeaderInbox,
    team: &str,
    name: &str,
    i: usize,
) -> Result<(Duration, Duration)> {
    let mut cmd = env.cmd(&["--team", team, "send", name, &format!("wake-{i}")]);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let t0 = epoch_us();
    let out = cmd.output()?;
    let t1 = epoch_us();
    support::check(&["send", name], &out)?;
    let mut stamp = None;
    wait_for(
        "the agent's stamp",
        Duration::from_secs(30),
        Duration::from_micros(300),
        || {
            for (from, text) in inbox.replies() {
                if from == name
                    && let Ok(s) = text.trim().parse::<u128>()
                {
                    stamp = Some(s);
                }
            }
            stamp.is_some()
        },
    )?;
    let at = stamp.expect("stamp") / 1000;
    Ok((
        Duration::from_micros(at.saturating_sub(t0) as u64),
        Duration::from_micros(at.saturating_sub(t1) as u64),
    ))
}

fn wait_turns(env: &Env, team: &str, name: &str, turns: u64) -> Result<()> {
    wait_for(
        "the worker to be idle again",
        Duration::from_secs(30),
        Duration::from_micros(500),
        || {
            env.live(team, name).is_some_and(|l| {
                l["status"] == "idle" && l["turns"].as_u64().is_some_and(|t| t >= turns)
            })
        },
    )
}

/// Wall time of a whole process, started to reaped.
fn timed(cmd: &mut Command) -> Result<Duration> {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let t0 = Instant::now();
    let st = cmd.status()?;
    let d = t0.elapsed();
    ensure!(st.success(), "{cmd:?} failed: {st}");
    Ok(d)
}

fn mib(kib: u64) -> String {
    format!("{:.2} MiB", kib as f64 / 1024.0)
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

fn process_run(n: usize) -> Result<()> {
    eprintln!("[thousand] process backend, N = {n}");
    // A leader leads one team per home: the anchor team has a home of its own.
    let (env, solo_env) = (Env::new()?, Env::new()?);
    let homes = [&env, &solo_env].map(|e| e.home_path().display().to_string());
    let result = process_measure(&env, &solo_env, n);
    drop((env, solo_env));
    for home in &homes {
        report_left(home, None);
    }
    result
}

fn process_measure(env: &Env, solo_env: &Env, n: usize) -> Result<()> {
    let all = names(n);
    // The anchor team first: its lone teammate holds an inotify instance if any is left.
    solo_env.ok(&["create", ONE])?;
    solo_env.ok(&[
        "--team",
        ONE,
        "spawn",
        "solo",
        "--backend",
        "process",
        "--exec",
        agent(),
    ])?;
    env.ok(&["create", TEAM])?;
    let solo = all_idle(solo_env, ONE, &["solo".to_string()], 0)?[0];

    let t0 = Instant::now();
    let spawn = spawn_all(env, TEAM, &all, "process")?;
    let pids = all_idle(env, TEAM, &all, 0)?;
    let idle = t0.elapsed();
    println!("\n== process backend, {n} teammates");
    println!(
        "spawn: {n} `teamctl spawn` one after another: {} until the last returned, all idle {}",
        fmt(spawn),
        fmt(idle)
    );
    let m = modes(env, TEAM, &all, &pids);
    println!(
        "waiting for mail: {} on inotify, {} on doorbells, {} polling, {} unknown (inotify max_user_instances {})",
        m.inotify,
        m.doorbell,
        m.polling,
        m.other,
        support::inotify_limit().map_or("?".into(), |v| v.to_string())
    );

    // Idle memory, settled.
    std::thread::sleep(Duration::from_millis(500));
    let (mut rss, mut pss) = (Vec::new(), Vec::new());
    for &pid in &pids {
        let (r, p) = memory_kib(pid).with_context(|| format!("no memory figures for {pid}"))?;
        rss.push(r);
        pss.push(p);
    }
    let (rss, pss) = (sorted(rss), sorted(pss));
    let mut sleep = Command::new("sleep").arg("1000").spawn()?;
    std::thread::sleep(Duration::from_millis(100));
    let sleep_mem = memory_kib(sleep.id()).unwrap_or((0, 0));
    let _ = sleep.kill();
    let _ = sleep.wait();
    let solo_mem = memory_kib(solo).unwrap_or((0, 0));
    println!(
        "idle worker memory ({n}): VmRSS p50 {} p99 {} max {}; Pss p50 {} max {}; sum of Pss {}",
        mib(rss[rss.len() / 2]),
        mib(rss[(rss.len() * 99).div_ceil(100).max(1) - 1]),
        mib(*rss.last().unwrap_or(&0)),
        mib(pss[pss.len() / 2]),
        mib(*pss.last().unwrap_or(&0)),
        mib(pss.iter().sum())
    );
    println!(
        "  anchor: a bare `sleep` VmRSS {} Pss {}; the lone teammate's worker VmRSS {} Pss {}",
        mib(sleep_mem.0),
        mib(sleep_mem.1),
        mib(solo_mem.0),
        mib(solo_mem.1)
    );

    status_figures(env, Some(solo_env), n)?;

    // Wake-up of every teammate, interleaved with the lone teammate's: twice. The first message
    // finds no turn's process waiting (a teammate starts one ahead once it has had a turn:
    // `worker::launch`); the second finds one, as a teammate in use does. The lone teammate has
    // had turns before each of its wake-ups but the first.
    let mut big = LeaderInbox::new(env, TEAM);
    let mut one = LeaderInbox::new(solo_env, ONE);
    let mut rng = Rng::from_time();
    let inotify_of: Vec<bool> = pids.iter().map(|&p| inotify_fds(p) > 0).collect();
    for round in 0..2u64 {
        let (mut start, mut exit, mut a_start, mut a_exit) = (vec![], vec![], vec![], vec![]);
        let (mut start_ino, mut start_bell) = (vec![], vec![]);
        let t0 = Instant::now();
        for (i, name) in all.iter().enumerate() {
            std::thread::sleep(Duration::from_micros(1000 + rng.below(2000)));
            let (s, e) = wake_one(env, &mut big, TEAM, name, i)?;
            wait_turns(env, TEAM, name, round + 1)?;
            start.push(s);
            exit.push(e);
            if inotify_of[i] {
                start_ino.push(s);
            } else {
                start_bell.push(s);
            }
            std::thread::sleep(Duration::from_micros(1000 + rng.below(2000)));
            let (s, e) = wake_one(solo_env, &mut one, ONE, "solo", i)?;
            wait_turns(solo_env, ONE, "solo", round * n as u64 + i as u64 + 1)?;
            a_start.push(s);
            a_exit.push(e);
            if (i + 1) % 200 == 0 {
                eprintln!(
                    "[thousand] round {}: {} woken ({})",
                    round + 1,
                    i + 1,
                    fmt(t0.elapsed())
                );
            }
        }
        let (start, exit) = (Stats::new(start), Stats::new(exit));
        let (a_start, a_exit) = (Stats::new(a_start), Stats::new(a_exit));
        let which = if round == 0 {
            "first message to each (no turn's process waiting yet: started when it comes)"
        } else {
            "second message to each (its turn's process waiting, started ahead after the first)"
        };
        println!(
            "wake-up of each of the {n}, {which}, `teamctl send wI` started -> the agent's first instruction (its entry point, a raw clock_gettime in _start):"
        );
        println!("  all {n}:              {}", start.line());
        println!(
            "  on inotify ({}):     {}",
            start_ino.len(),
            Stats::new(start_ino).line()
        );
        println!(
            "  not on inotify ({}): {}",
            start_bell.len(),
            Stats::new(start_bell).line()
        );
        println!(
            "  anchor, the lone teammate of team `one`, interleaved: {}",
            a_start.line()
        );
        println!(
            "  from `send` reaped -> the agent's entry point: {n}: {}",
            exit.line()
        );
        println!(
            "  from `send` reaped -> the agent's entry point, anchor: {}",
            a_exit.line()
        );
    }

    // Broadcast.
    let mut inbox = LeaderInbox::new(env, TEAM);
    let mut send = env.cmd(&["--team", TEAM, "send", "*", "broadcast: report in"]);
    send.stdout(Stdio::null()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = send.spawn()?;
    let mut send_took = None;
    let mut seen: HashSet<String> = HashSet::new();
    let mut count: HashMap<String, usize> = HashMap::new();
    wait_for(
        "a reply from every teammate",
        Duration::from_mins(5),
        Duration::from_micros(500),
        || {
            if send_took.is_none() && matches!(child.try_wait(), Ok(Some(_))) {
                send_took = Some(t0.elapsed());
            }
            for (from, _) in inbox.replies() {
                *count.entry(from.clone()).or_default() += 1;
                seen.insert(from);
            }
            seen.len() >= n
        },
    )?;
    let broadcast = t0.elapsed();
    let st = child.wait()?;
    ensure!(st.success(), "send '*' failed: {st}");
    let send_took = send_took.unwrap_or(broadcast);
    let twice = count.values().filter(|&&c| c > 1).count();
    let t0 = Instant::now();
    for _ in 0..n {
        let out = Command::new(agent()).output()?;
        ensure!(out.status.success(), "the stamping agent failed");
    }
    let bare = t0.elapsed();
    println!(
        "broadcast to {n}: `send '*'` started -> a reply from every one of the {n}: {} (the send process itself {}; {} replied more than once)",
        fmt(broadcast),
        fmt(send_took),
        twice
    );
    println!(
        "  anchor: {n} stamping agents one after another, started by the bench: {}",
        fmt(bare)
    );
    all_idle(env, TEAM, &all, 3)?;
    status_figures(env, Some(solo_env), n)?;
    Ok(())
}

/// `teamctl status` on the N-member team, against `--version` and a one-member team's status.
fn status_figures(env: &Env, solo_env: Option<&Env>, n: usize) -> Result<()> {
    let runs = env_count("THOUSAND_STATUS_RUNS", 10);
    let first = timed(&mut env.cmd(&["--team", TEAM, "status"]))?;
    let (mut big, mut version, mut one) = (vec![], vec![], vec![]);
    for _ in 0..runs {
        big.push(timed(&mut env.cmd(&["--team", TEAM, "status"]))?);
        version.push(timed(&mut env.cmd(&["--version"]))?);
        if let Some(s) = solo_env {
            one.push(timed(&mut s.cmd(&["--team", ONE, "status"]))?);
        }
    }
    println!(
        "`teamctl status`, whole process, {n} members: first {}, then {}",
        fmt(first),
        Stats::new(big).line()
    );
    println!(
        "  anchor, interleaved: `teamctl --version` {}",
        Stats::new(version).line()
    );
    if !one.is_empty() {
        println!(
            "  anchor, interleaved: `status` of a one-member team {}",
            Stats::new(one).line()
        );
    }
    Ok(())
}

fn tmux_run(n: usize) -> Result<()> {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("\n== tmux backend: tmux not found, not measured");
        return Ok(());
    }
    let batch = env_count("THOUSAND_BATCH", 50).max(1);
    eprintln!(
        "[thousand] tmux backend, N = {n}, interleaved with bare panes in batches of {batch}"
    );
    let anchor = BareServer::new("anchor-batched");
    let anchor_socket = anchor.server.socket.clone();
    let env = Env::with_tmux()?;
    let home = env.home_path().display().to_string();
    let socket = env.socket.clone();
    let result = tmux_measure(&env, anchor, n, batch);
    drop(env);
    report_left(&home, socket.as_deref());
    report_server_left(&anchor_socket);
    result?;
    if std::env::var("THOUSAND_TMUX_SEQUENTIAL").is_ok_and(|v| v == "1") {
        tmux_sequential(n)?;
    }
    Ok(())
}

/// One pair: `batch` bare panes on the anchor's server, then as many teammates spawned.
struct Pair {
    /// Panes on each server before the pair.
    before: usize,
    size: usize,
    anchor: Duration,
    /// The batch's first `spawn` started -> its last `spawn` reaped.
    spawned: Duration,
    /// The batch's first `spawn` started -> the batch's last worker seen idle.
    idle: Duration,
}

impl Pair {
    fn ratio(&self) -> f64 {
        self.idle.as_secs_f64() / self.anchor.as_secs_f64().max(1e-9)
    }

    fn line(&self) -> String {
        let per = |d: Duration| fmt(d / self.size as u32);
        format!(
            "panes {}..{}: anchor {} ({} a pane), team {} ({} a teammate), ratio {:.2}x",
            self.before + 1,
            self.before + self.size,
            fmt(self.anchor),
            per(self.anchor),
            fmt(self.idle),
            per(self.idle),
            self.ratio()
        )
    }
}

fn tmux_measure(env: &Env, mut anchor: BareServer, n: usize, batch: usize) -> Result<()> {
    let all = names(n);
    // Quiet time between the two sides of a pair, untimed: what one side left running (the
    // leader console's redraw at most 200 ms after the last spawn, a tmux server's last
    // redraw) is then not charged to the other side.
    let gap = Duration::from_millis(env_count("THOUSAND_GAP_MS", 250) as u64);
    env.ok(&["create", TEAM])?;
    let mut pairs: Vec<Pair> = Vec::new();
    let mut pids = Vec::with_capacity(n);
    let t0 = Instant::now();
    for chunk in all.chunks(batch) {
        let before = anchor.panes;
        let anchor_took = anchor.add(chunk.len())?;
        std::thread::sleep(gap);
        let t = Instant::now();
        for name in chunk {
            spawn_one(env, TEAM, name, "tmux")?;
        }
        let spawned = t.elapsed();
        pids.extend(all_idle(env, TEAM, chunk, 0)?);
        let idle = t.elapsed();
        std::thread::sleep(gap);
        pairs.push(Pair {
            before,
            size: chunk.len(),
            anchor: anchor_took,
            spawned,
            idle,
        });
        eprintln!(
            "[thousand] tmux: {} spawned ({}); last pair {}",
            before + chunk.len(),
            fmt(t0.elapsed()),
            pairs.last().map_or(String::new(), Pair::line)
        );
    }
    let panes = anchor.pids()?.len();
    ensure!(panes == n, "the anchor has {panes} panes, wanted {n}");
    let windows = anchor.windows;
    drop(anchor);

    let sum = |f: fn(&Pair) -> Duration| pairs.iter().map(f).sum::<Duration>();
    let (a_sum, s_sum, i_sum) = (sum(|p| p.anchor), sum(|p| p.spawned), sum(|p| p.idle));
    println!(
        "\n== tmux backend, {n} teammates, private tmux server; interleaved with the anchor in {} pairs of {batch}{}",
        pairs.len(),
        match n % batch {
            0 => String::new(),
            r => format!(" (the last of {r})"),
        }
    );
    println!(
        "spawn, summed over the pairs: team {} (first `teamctl spawn --backend tmux` of a batch started -> the batch's last worker seen idle; {} until each batch's last spawn was reaped)",
        fmt(i_sum),
        fmt(s_sum)
    );
    println!(
        "  anchor: bare tmux panes running `sleep` on another private server, one `tmux` command each, {batch} just before each team batch: {} (first command of a batch started -> its last reaped; {} windows)",
        fmt(a_sum),
        windows
    );
    println!(
        "  ratio of the sums {:.2}x",
        i_sum.as_secs_f64() / a_sum.as_secs_f64().max(1e-9)
    );
    let mut ratios: Vec<f64> = pairs.iter().map(Pair::ratio).collect();
    println!(
        "  per-pair ratios in order: {}",
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    ratios.sort_by(f64::total_cmp);
    let q = |p: f64| ratios[((p * ratios.len() as f64).ceil() as usize).clamp(1, ratios.len()) - 1];
    println!(
        "  per-pair ratio: median {:.2}x, quartiles {:.2}x-{:.2}x, min {:.2}x, max {:.2}x ({} pairs)",
        q(0.5),
        q(0.25),
        q(0.75),
        ratios[0],
        ratios[ratios.len() - 1],
        ratios.len()
    );
    let mid = pairs.len() / 2;
    for (label, i) in [("start", 0), ("middle", mid), ("end", pairs.len() - 1)] {
        println!("  {label:>6}: {}", pairs[i].line());
    }
    let m = modes(env, TEAM, &all, &pids);
    println!(
        "waiting for mail: {} on inotify, {} on doorbells, {} polling, {} unknown",
        m.inotify, m.doorbell, m.polling, m.other
    );
    let mut rss: Vec<u64> = pids
        .iter()
        .filter_map(|&p| memory_kib(p))
        .map(|m| m.0)
        .collect();
    rss.sort_unstable();
    if !rss.is_empty() {
        println!(
            "idle worker VmRSS ({}): p50 {} max {}",
            rss.len(),
            mib(rss[rss.len() / 2]),
            mib(*rss.last().unwrap_or(&0))
        );
    }
    status_figures(env, None, n)?;
    Ok(())
}

/// The figure this bench printed before the interleaving, on request: N bare panes first, then
/// N `teamctl spawn --backend tmux` until all idle, on a fresh home and server, and the ratio.
fn tmux_sequential(n: usize) -> Result<()> {
    eprintln!("[thousand] tmux, sequential: anchor {n} bare panes, then {n} spawns");
    let bare = support::bare_panes(n)?;
    let env = Env::with_tmux()?;
    let home = env.home_path().display().to_string();
    let socket = env.socket.clone();
    let result = (|| -> Result<()> {
        let all = names(n);
        env.ok(&["create", TEAM])?;
        let t0 = Instant::now();
        let commands = spawn_all(&env, TEAM, &all, "tmux")?;
        all_idle(&env, TEAM, &all, 0)?;
        let idle = t0.elapsed();
        println!(
            "sequential (THOUSAND_TMUX_SEQUENTIAL=1): {n} `teamctl spawn --backend tmux` one after another: {} until the last returned, all idle {}",
            fmt(commands),
            fmt(idle)
        );
        println!(
            "  anchor, just before: {n} bare tmux panes, one `tmux` command each: {} ({} windows); ratio {:.2}x",
            fmt(bare.took),
            bare.windows,
            idle.as_secs_f64() / bare.took.as_secs_f64().max(1e-9)
        );
        Ok(())
    })();
    drop(env);
    report_left(&home, socket.as_deref());
    result
}

/// After a part's home is dropped: what is left of it (must be nothing).
fn report_left(home: &str, socket: Option<&str>) {
    let procs =
        processes_mentioning(home).len() + socket.map_or(0, |s| processes_mentioning(s).len());
    let server = socket.is_some_and(|s| {
        Command::new("tmux")
            .args(["-L", s, "list-sessions"])
            .env_remove("TMUX")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    println!(
        "cleaned up: {procs} processes left, tmux server {}, home {}",
        if server { "STILL RUNNING" } else { "gone" },
        if Path::new(home).exists() {
            "STILL THERE"
        } else {
            "removed"
        }
    );
}

/// After an anchor's tmux server is dropped: what is left of it (must be nothing).
fn report_server_left(socket: &str) {
    let procs = processes_mentioning(socket).len();
    let server = Command::new("tmux")
        .args(["-L", socket, "list-sessions"])
        .env_remove("TMUX")
        .output()
        .is_ok_and(|o| o.status.success());
    println!(
        "cleaned up the anchor: {procs} processes left, tmux server {}",
        if server { "STILL RUNNING" } else { "gone" }
    );
}
