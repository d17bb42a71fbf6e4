//! File store vs NATS store (issue 15 part 6): the same user-visible figures for a team kept
//! in files (the default) and a team kept in NATS JetStream (`create --store nats://...`),
//! measured in the same run, each printed with the other store's figure beside it. Every
//! timer starts when a `teamctl` PROCESS is started (fork+exec of the release binary).
//!
//! The bench starts its own nats-server (`STORES_NATS_SERVER`, else `nats-server` on PATH):
//! JetStream on, loopback, a free port, a temporary store directory, `max_payload` 4 MiB as in
//! the tests. It is ended at the end, on an error and on an interrupt.
//!
//! - `send`: `teamctl send w MSG` as a whole process (start to exit), the worker's agent
//!   `cat`; file and NATS alternated send by send (A B, B A), each send waited out (worker idle
//!   again) before the next; `teamctl --version` interleaved as the floor of a process start.
//! - `wake`: from just before `teamctl send w MSG` is started to the agent's first instruction
//!   (`date +%s%N`, run directly by the worker; its stamp is its reply, read back from the
//!   leader's inbox through the store), as in `benches/whole.rs`; also from `send` reaped.
//!   Alternated send by send between the two teams.
//! - `senders`: 16 threads each starting N `teamctl send` processes one after another into
//!   the leader's inbox (as teammate `s`), then the inbox read back: 0 lost, duplicated,
//!   reordered per sender, torn. File store, then NATS; anchor: 16 threads x N `/bin/true`
//!   before, between and after.
//! - `memory`: N idle workers (process backend, agent `cat`) of one team: VmRSS and Pss
//!   (`/proc/PID/smaps_rollup`) of each. File store, then NATS, then (with `STORES_OLD_BIN` set
//!   to a `teamctl` built before NATS) the file store with that binary; one team at a time
//!   (100 file-store workers hold 100 of the user's 128 inotify instances). Anchor: a bare
//!   `sleep`. The binaries' sizes are printed too.
//!
//! With `STORES_OLD_BIN` set, `send` and `wake` also run a third team: a NATS team made and run
//! by that binary (an older build: the NATS mapping before and after, in the same run, taking
//! turns with the other two).
//!
//! `STORES_PARTS=send,wake,senders,memory` picks parts; `STORES_SEND_N` (default 40),
//! `STORES_WAKE_N` (100), `STORES_SENDERS` (16), `STORES_EACH` (50), `STORES_IDLE` (100) set
//! the counts.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use support::{Env, Rng, Stats, env_count, epoch_us, fmt, memory_kib, print_machine, wait_for};
use teamctl::domain::{Body, Name, Status};
use teamctl::store::{Home, Item, Position, SharedStore, SyncBell, Topic, entries};

/// Every team made in the run has a name of its own: the NATS server outlives each part's
/// home, and a name it holds is taken.
fn team_name() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    format!("st{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

fn main() -> Result<()> {
    print_machine("stores");
    let server = NatsServer::start()?;
    println!("nats-server: {} (JetStream, loopback)", server.url());
    let parts = std::env::var("STORES_PARTS").unwrap_or_else(|_| "send,wake,senders,memory".into());
    for part in parts.split(',').map(str::trim) {
        match part {
            "send" => send(&server)?,
            "wake" => wake(&server)?,
            "senders" => senders(&server)?,
            "memory" => memory(&server)?,
            other => bail!("unknown part {other}"),
        }
        load(&format!("after `{part}`"));
    }
    drop(server);
    Ok(())
}

fn load(when: &str) {
    let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let l: Vec<&str> = l.split_whitespace().take(3).collect();
    println!("load average {when}: {}", l.join(" "));
}

/// A nats-server of the bench's own; killed (and its directory removed) on drop or interrupt.
struct NatsServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl NatsServer {
    fn start() -> Result<NatsServer> {
        let bin = match std::env::var_os("STORES_NATS_SERVER").filter(|p| !p.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => which::which("nats-server")
                .context("nats-server not found: put it on PATH or set STORES_NATS_SERVER")?,
        };
        let dir = tempfile::Builder::new()
            .prefix("teamctl-bench-nats")
            .tempdir()?;
        support::end_on_interrupt(dir.path());
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        // A message may be 1 MiB of text: the envelope needs more than the default payload.
        std::fs::write(dir.path().join("server.conf"), "max_payload: 4194304\n")?;
        let child = Command::new(&bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir.path().join("js"))
            .arg("-c")
            .arg(dir.path().join("server.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?;
        let server = NatsServer { child, port, dir };
        wait_for(
            "nats-server to take connections",
            Duration::from_secs(20),
            Duration::from_millis(20),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        )?;
        Ok(server)
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        support::forget_on_interrupt(self.dir.path());
    }
}

/// One team, in files or in NATS, in a home of its own, with its store opened in the bench;
/// its commands run with `bin` (an older build) when given, else with this build.
struct Side {
    label: &'static str,
    team: String,
    env: Env,
    store: SharedStore,
    bin: Option<PathBuf>,
}

impl Side {
    fn new(label: &'static str, url: Option<&str>, bin: Option<PathBuf>) -> Result<Side> {
        let env = Env::new()?;
        let team = team_name();
        let mut args = vec!["create", &team];
        if let Some(u) = url {
            args.extend(["--store", u]);
        }
        let out = match &bin {
            Some(b) => env.cmd_of(b, &args),
            None => env.cmd(&args),
        }
        .output()?;
        support::check(&args, &out)?;
        let store = Home::new(env.home_path().to_path_buf()).open(&Name::parse(&team)?)?;
        Ok(Side {
            label,
            team,
            env,
            store,
            bin,
        })
    }

    /// A file team and a NATS team; with `STORES_OLD_BIN`, a third: a NATS team made and run
    /// by that older build (`wake` and `send`: the mapping before and after, same run).
    fn pair(server: &NatsServer) -> Result<Vec<Side>> {
        let url = server.url();
        let mut sides = vec![
            Side::new("file", None, None)?,
            Side::new("NATS", Some(&url), None)?,
        ];
        if let Some(old) = std::env::var_os("STORES_OLD_BIN").filter(|p| !p.is_empty()) {
            sides.push(Side::new(
                "NATS, STORES_OLD_BIN",
                Some(&url),
                Some(PathBuf::from(old)),
            )?);
        }
        Ok(sides)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        match &self.bin {
            Some(b) => self.env.cmd_of(b, args),
            None => self.env.cmd(args),
        }
    }

    fn spawn(&self, name: &str, agent: &str) -> Result<()> {
        let args = [
            "--team",
            &self.team,
            "spawn",
            name,
            "--backend",
            "process",
            "--exec",
            agent,
        ];
        let out = self.cmd(&args).output()?;
        support::check(&args, &out)?;
        Ok(())
    }

    /// Wait until `name` is idle with at least `turns` turns; its worker's pid.
    fn idle(&self, name: &str, turns: u64) -> Result<u32> {
        let member = Name::parse(name)?;
        let mut pid = 0;
        wait_for(
            "a worker to be idle",
            Duration::from_mins(1),
            Duration::from_micros(500),
            || match self.store.live(&member) {
                Ok(Some(l)) if l.status == Status::Idle && l.turns >= turns => {
                    pid = l.pid;
                    true
                }
                _ => false,
            },
        )?;
        Ok(pid)
    }
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

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn send(server: &NatsServer) -> Result<()> {
    let n = env_count("STORES_SEND_N", 40);
    eprintln!("[stores] send: {n} sends to each store, alternated...");
    let sides = Side::pair(server)?;
    for s in &sides {
        s.spawn("w", "cat")?;
        s.idle("w", 0)?;
    }
    let mut took: Vec<Vec<Duration>> = sides.iter().map(|_| vec![]).collect();
    let mut version = vec![];
    for i in 0..n {
        for k in order(i, sides.len()) {
            let s = &sides[k];
            took[k].push(timed(&mut s.cmd(&[
                "--team",
                &s.team,
                "send",
                "w",
                &format!("hello {i}"),
            ]))?);
            s.idle("w", i as u64 + 1)?;
        }
        version.push(timed(&mut sides[0].env.cmd(&["--version"]))?);
    }
    let took: Vec<Stats> = took.into_iter().map(Stats::new).collect();
    let (file, nats) = (&took[0], &took[1]);
    let version = Stats::new(version);
    println!();
    println!("send: `teamctl send w MSG` started -> reaped (worker `cat`), {n} each, alternated");
    println!("  file store: {}", file.line());
    println!("  NATS store: {}", nats.line());
    if let Some(old) = took.get(2) {
        println!("  NATS store, STORES_OLD_BIN: {}", old.line());
        println!(
            "  NATS this build / STORES_OLD_BIN: p50 {:.2}x, p99 {:.2}x",
            ratio(nats.median(), old.median()),
            ratio(nats.pct(99.0), old.pct(99.0))
        );
    }
    println!(
        "  floor, interleaved: `teamctl --version` {}",
        version.line()
    );
    println!(
        "  NATS / file: p50 {:.2}x, p99 {:.2}x",
        ratio(nats.median(), file.median()),
        ratio(nats.pct(99.0), file.pct(99.0))
    );
    Ok(())
}

/// Waits for the leader's replies in one team: a subscription rings on new mail; reads go
/// through the store from where the last read stopped.
struct Replies<'a> {
    side: &'a Side,
    pos: Position,
    bell: SyncBell,
    _sub: teamctl::store::Subscription,
}

impl<'a> Replies<'a> {
    fn new(side: &'a Side) -> Result<Replies<'a>> {
        let bell = SyncBell::default();
        let sub = side
            .store
            .subscribe(&[Topic::Inbox(Name::leader())], bell.bell())?;
        let pos = side.store.inbox_end(&Name::leader())?;
        Ok(Replies {
            side,
            pos,
            bell,
            _sub: sub,
        })
    }

    /// The first reply from `from` that is a number (the agent's stamp, ns).
    fn stamp(&mut self, from: &str) -> Result<u128> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            for e in entries(&*self.side.store, &Name::leader(), self.pos) {
                let e = e?;
                self.pos = e.end;
                if let Item::Message(m) = e.item
                    && m.from.starts_with(from)
                    && let Body::Message { text, .. } = &m.body
                    && let Ok(s) = text.trim().parse::<u128>()
                {
                    return Ok(s);
                }
            }
            ensure!(
                Instant::now() < deadline,
                "{}: no stamp from {from} within 30 s",
                self.side.label
            );
            // Rung on new mail; the timeout only bounds a missed ring.
            self.bell
                .wait_until((Instant::now() + Duration::from_millis(200)).min(deadline));
        }
    }
}

fn wake(server: &NatsServer) -> Result<()> {
    let n = env_count("STORES_WAKE_N", 100);
    eprintln!("[stores] wake: {n} wake-ups of each store, alternated...");
    let sides = Side::pair(server)?;
    for s in &sides {
        s.spawn("w", "date +%s%N")?;
        s.idle("w", 0)?;
    }
    let mut replies = sides.iter().map(Replies::new).collect::<Result<Vec<_>>>()?;
    let mut rng = Rng::from_time();
    let mut from_start: Vec<Vec<Duration>> = sides.iter().map(|_| vec![]).collect();
    let mut from_exit: Vec<Vec<Duration>> = sides.iter().map(|_| vec![]).collect();
    let mut send_took: Vec<Vec<Duration>> = sides.iter().map(|_| vec![]).collect();
    for i in 0..n {
        for k in order(i, sides.len()) {
            let s = &sides[k];
            std::thread::sleep(Duration::from_micros(2000 + rng.below(3000)));
            let mut cmd = s.cmd(&["--team", &s.team, "send", "w", &format!("wake-{i}")]);
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            let t0 = epoch_us();
            let out = cmd.output()?;
            let t1 = epoch_us();
            support::check(&["send"], &out)?;
            let at = replies[k].stamp("w")? / 1000;
            from_start[k].push(Duration::from_micros(at.saturating_sub(t0) as u64));
            from_exit[k].push(Duration::from_micros(at.saturating_sub(t1) as u64));
            send_took[k].push(Duration::from_micros((t1 - t0) as u64));
            s.idle("w", i as u64 + 1)?;
        }
    }
    let stats = |v: Vec<Vec<Duration>>| v.into_iter().map(Stats::new).collect::<Vec<_>>();
    let (from_start, from_exit, send_took) =
        (stats(from_start), stats(from_exit), stats(send_took));
    let (fs, ns) = (&from_start[0], &from_start[1]);
    let (fe, ne) = (&from_exit[0], &from_exit[1]);
    let (fst, nst) = (&send_took[0], &send_took[1]);
    println!();
    println!(
        "wake: `teamctl send w MSG` started -> the agent's first instruction (`date +%s%N`), {n} each, alternated"
    );
    println!("  file store: {}", fs.line());
    println!("  NATS store: {}", ns.line());
    println!(
        "  NATS / file: p50 {:.2}x, p99 {:.2}x",
        ratio(ns.median(), fs.median()),
        ratio(ns.pct(99.0), fs.pct(99.0))
    );
    if let Some(old) = from_start.get(2) {
        println!("  NATS store, STORES_OLD_BIN: {}", old.line());
        println!(
            "  NATS this build / STORES_OLD_BIN: p50 {:.2}x, p99 {:.2}x",
            ratio(ns.median(), old.median()),
            ratio(ns.pct(99.0), old.pct(99.0))
        );
    }
    println!("wake: `teamctl send` reaped -> the agent's first instruction");
    println!("  file store: {}", fe.line());
    println!("  NATS store: {}", ne.line());
    println!(
        "  (the `send` processes themselves: file {}; NATS {})",
        fst.line(),
        nst.line()
    );
    if let (Some(oe), Some(ost)) = (from_exit.get(2), send_took.get(2)) {
        println!(
            "  NATS store, STORES_OLD_BIN: {}; its `send` processes {}",
            oe.line(),
            ost.line()
        );
    }
    Ok(())
}

/// The order the sides take turns in at round `i`: rotated each round, so that none is
/// always first.
fn order(i: usize, sides: usize) -> Vec<usize> {
    (0..sides).map(|k| (i + k) % sides).collect()
}

/// 16 threads x `each` processes made by `make`, all started and reaped: wall time.
fn burst(
    writers: usize,
    each: usize,
    make: &(dyn Fn(usize, usize) -> Command + Sync),
) -> Result<Duration> {
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
}

/// The leader's inbox from `start`: (lost, duplicated, reordered per sender, torn).
fn check_inbox(
    side: &Side,
    start: Position,
    writers: usize,
    each: usize,
) -> Result<(usize, usize, usize, usize)> {
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    let mut last: Vec<Option<usize>> = vec![None; writers];
    let (mut torn, mut reordered) = (0, 0);
    for e in entries(&*side.store, &Name::leader(), start) {
        match e?.item {
            Item::Message(m) => {
                let Body::Message { text, .. } = &m.body else {
                    continue;
                };
                let Some((w, seq)) = text
                    .strip_prefix('w')
                    .and_then(|t| t.split_once(' '))
                    .and_then(|(w, s)| Some((w.parse::<usize>().ok()?, s.parse().ok()?)))
                else {
                    continue;
                };
                if w >= writers {
                    continue;
                }
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
    let lost = writers * each - seen.len();
    let dup = seen.values().map(|c| c - 1).sum();
    Ok((lost, dup, reordered, torn))
}

fn senders(server: &NatsServer) -> Result<()> {
    let writers = env_count("STORES_SENDERS", 16);
    let each = env_count("STORES_EACH", 50);
    let total = writers * each;
    eprintln!("[stores] senders: {writers} x {each} processes per store...");
    let sides = Side::pair(server)?;
    for s in &sides {
        s.spawn("s", "cat")?;
        s.idle("s", 0)?;
    }
    let rate = |d: Duration| total as f64 / d.as_secs_f64().max(1e-9);
    let bare = || burst(writers, each, &|_, _| Command::new("/bin/true"));
    let mut bares = vec![bare()?];
    let mut results = vec![];
    for s in &sides {
        let start = s.store.inbox_end(&Name::leader())?;
        let took = burst(writers, each, &|w, seq| {
            let mut c = s
                .env
                .cmd(&["--as", "s", "send", "team-lead", &format!("w{w} {seq}")]);
            c.env("TEAMCTL_TEAM", &s.team);
            c
        })?;
        bares.push(bare()?);
        results.push((took, check_inbox(s, start, writers, each)?));
    }
    println!();
    println!(
        "senders: {writers} threads x {each} `teamctl send` processes each, first started -> last reaped"
    );
    for (s, (took, (lost, dup, re, torn))) in sides.iter().zip(&results) {
        println!(
            "  {} store: {total} in {} = {:.0} processes/s; lost {lost}, duplicated {dup}, reordered {re}, torn {torn}",
            s.label,
            fmt(*took),
            rate(*took)
        );
    }
    println!(
        "  NATS / file rate: {:.2}",
        rate(results[1].0) / rate(results[0].0)
    );
    println!(
        "  anchor: /bin/true, same threads, before / between / after: {} processes/s",
        bares
            .iter()
            .map(|d| format!("{:.0}", rate(*d)))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    Ok(())
}

fn mib(kib: u64) -> String {
    format!("{:.2} MiB", kib as f64 / 1024.0)
}

fn pick(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[(sorted.len() * p).div_ceil(100).max(1) - 1]
}

/// `n` idle workers of one team: their (VmRSS, Pss) in KiB, sorted each.
fn idle_memory(
    label: &'static str,
    url: Option<&str>,
    bin: Option<&Path>,
    n: usize,
) -> Result<(Vec<u64>, Vec<u64>)> {
    eprintln!("[stores] memory: {n} idle workers, {label}...");
    let env = Env::new()?;
    let team = team_name();
    let team = team.as_str();
    let run = |args: &[&str]| -> Result<()> {
        let out = match bin {
            Some(b) => env.cmd_of(b, args).output()?,
            None => env.cmd(args).output()?,
        };
        support::check(args, &out)
    };
    let mut create = vec!["create", team];
    if let Some(u) = url {
        create.extend(["--store", u]);
    }
    run(&create)?;
    let names: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
    for name in &names {
        run(&[
            "--team",
            team,
            "spawn",
            name,
            "--backend",
            "process",
            "--exec",
            "cat",
        ])?;
    }
    // Live states: read through the store, except for the older binary's team (its files,
    // read as files: the format did not change).
    let store = match bin {
        None => Some(Home::new(env.home_path().to_path_buf()).open(&Name::parse(team)?)?),
        Some(_) => None,
    };
    let mut pids = Vec::new();
    for name in &names {
        let member = Name::parse(name)?;
        let mut pid = 0;
        wait_for(
            "every worker to be idle",
            Duration::from_mins(5),
            Duration::from_millis(5),
            || {
                let l = match &store {
                    Some(s) => s
                        .live(&member)
                        .ok()
                        .flatten()
                        .map(|l| (l.status == Status::Idle, l.pid)),
                    None => env
                        .live(team, name)
                        .map(|l| (l["status"] == "idle", l["pid"].as_u64().unwrap_or(0) as u32)),
                };
                match l {
                    Some((true, p)) => {
                        pid = p;
                        true
                    }
                    _ => false,
                }
            },
        )?;
        pids.push(pid);
    }
    // Settled.
    std::thread::sleep(Duration::from_millis(500));
    let (mut rss, mut pss) = (Vec::new(), Vec::new());
    for pid in pids {
        let (r, p) = memory_kib(pid).with_context(|| format!("no memory figures for {pid}"))?;
        rss.push(r);
        pss.push(p);
    }
    rss.sort_unstable();
    pss.sort_unstable();
    drop(store);
    drop(env);
    Ok((rss, pss))
}

fn memory(server: &NatsServer) -> Result<()> {
    let n = env_count("STORES_IDLE", 100);
    let old = std::env::var_os("STORES_OLD_BIN")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let url = server.url();
    let mut rows = vec![
        ("file store", idle_memory("file", None, None, n)?),
        ("NATS store", idle_memory("nats", Some(&url), None, n)?),
    ];
    if let Some(old) = &old {
        rows.push((
            "file store, binary before NATS",
            idle_memory("file, old binary", None, Some(old), n)?,
        ));
    }
    let mut sleep = Command::new("sleep").arg("1000").spawn()?;
    std::thread::sleep(Duration::from_millis(100));
    let sleep_mem = memory_kib(sleep.id()).unwrap_or((0, 0));
    let _ = sleep.kill();
    let _ = sleep.wait();
    let server_mem = memory_kib(server.pid()).unwrap_or((0, 0));
    println!();
    println!(
        "memory: {n} idle workers (process backend, agent `cat`), one team at a time, /proc VmRSS and Pss"
    );
    for (label, (rss, pss)) in &rows {
        println!(
            "  {label}: VmRSS p50 {} p99 {} max {}; Pss p50 {} max {}; sum of Pss {}",
            mib(pick(rss, 50)),
            mib(pick(rss, 99)),
            mib(*rss.last().unwrap_or(&0)),
            mib(pick(pss, 50)),
            mib(*pss.last().unwrap_or(&0)),
            mib(pss.iter().sum())
        );
    }
    println!(
        "  anchor: a bare `sleep` VmRSS {} Pss {}; the nats-server now VmRSS {}",
        mib(sleep_mem.0),
        mib(sleep_mem.1),
        mib(server_mem.0)
    );
    println!(
        "  release binary: {} bytes{}",
        size(support::bin()),
        old.as_ref().map_or(String::new(), |o| format!(
            "; the binary before NATS ({}): {} bytes",
            o.display(),
            size(o)
        ))
    );
    Ok(())
}
