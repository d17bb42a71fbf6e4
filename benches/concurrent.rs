//! 16 concurrent writer processes x 10,000 messages into one inbox (SPEC section 10: 0 lost,
//! 0 duplicated, 0 torn), beside the approach it replaces, in the same run.
//!
//! Each writer is this bench binary re-executed in writer mode: a separate process appending
//! with the library's `Store::append` (the path `teamctl send` takes: inbox lock, one
//! `write()`), 10,000 messages each, all released at once. Then the inbox is read back with the
//! library's reader and checked: every message present exactly once, every line whole, each
//! writer's messages in the order it wrote them.
//!
//! Anchor: the original design's read-modify-write of a JSON array (read the file, push, write
//! it back; atomic rename so no reader ever sees half a file, but no lock), 16 processes x 200
//! messages. Messages lost there are lost updates.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use support::{env_count, fmt, print_machine};
use teamctl::domain::{Body, Envelope, Name};
use teamctl::store::fsutil::write_atomic;
use teamctl::store::{FsStore, Item, Store};

const ROLE: &str = "TEAMCTL_BENCH_ROLE";

fn main() -> Result<()> {
    match std::env::var(ROLE).as_deref() {
        Ok("append") => return writer(),
        Ok("rmw") => return rmw_writer(),
        _ => {}
    }
    print_machine("concurrent");
    let writers = env_count("CONCURRENT_WRITERS", 16);
    let each = env_count("CONCURRENT_EACH", 10_000);
    let tmp = tempfile::Builder::new()
        .prefix("teamctl-bench-concurrent")
        .tempdir()?;

    // teamctl: Store::append from 16 processes.
    let dir = tmp.path().join("team");
    let elapsed = race(&dir, "append", writers, each)?;
    let store = FsStore::new(Name::parse("bench")?, dir);
    let entries = store.read(
        &Name::parse("w")?,
        teamctl::store::Position::START,
        usize::MAX,
    )?;
    let mut torn = 0;
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    let mut last: Vec<Option<usize>> = vec![None; writers];
    let mut out_of_order = 0;
    for e in &entries {
        match &e.item {
            Item::Message(env) => {
                let Body::Message { text, .. } = &env.body else {
                    continue;
                };
                let (w, seq) = parse_text(text).context("unexpected text")?;
                *seen.entry((w, seq)).or_default() += 1;
                if last[w].is_some_and(|l| l >= seq) {
                    out_of_order += 1;
                }
                last[w] = Some(seq);
            }
            Item::Garbage(_) => torn += 1,
            Item::Blank => {}
        }
    }
    let total = writers * each;
    let unique = seen.len();
    let delivered: usize = seen.values().sum();
    let lost = total - unique;
    let duplicated = delivered - unique;
    println!(
        "teamctl Store::append, {writers} processes x {each}: {} in {} = {:.0} messages/s",
        total,
        fmt(elapsed),
        total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  lost {lost}, duplicated {duplicated}, torn {torn}, out of per-writer order {out_of_order} (target 0 / 0 / 0)"
    );

    // Anchor: unlocked read-modify-write of a JSON array.
    let anchor_each = env_count("CONCURRENT_ANCHOR_EACH", 200);
    let file = tmp.path().join("inbox.json");
    let elapsed = race(&file, "rmw", writers, anchor_each)?;
    let all: Vec<String> = serde_json::from_slice(&std::fs::read(&file)?)?;
    let anchor_total = writers * anchor_each;
    let unique: std::collections::HashSet<&String> = all.iter().collect();
    println!(
        "anchor read-modify-write JSON array, {writers} processes x {anchor_each}: {} in {}",
        anchor_total,
        fmt(elapsed)
    );
    println!(
        "  lost {} of {anchor_total} ({:.1}%), duplicated {}",
        anchor_total - unique.len(),
        100.0 * (anchor_total - unique.len()) as f64 / anchor_total as f64,
        all.len() - unique.len()
    );
    Ok(())
}

fn parse_text(text: &str) -> Option<(usize, usize)> {
    let (w, seq) = text.strip_prefix('w')?.split_once(' ')?;
    Some((w.parse().ok()?, seq.parse().ok()?))
}

/// Start `writers` processes in `role` against `target`, release them together, wait for all.
fn race(target: &Path, role: &str, writers: usize, each: usize) -> Result<Duration> {
    let go = target.with_extension("go");
    let exe = std::env::current_exe()?;
    let mut children: Vec<Child> = (0..writers)
        .map(|w| {
            Command::new(&exe)
                .env(ROLE, role)
                .env("BENCH_TARGET", target)
                .env("BENCH_GO", &go)
                .env("BENCH_WRITER", w.to_string())
                .env("BENCH_EACH", each.to_string())
                .spawn()
                .context("start a writer")
        })
        .collect::<Result<_>>()?;
    // Let every writer reach its start line, then release them at once.
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    std::fs::write(&go, b"go")?;
    for c in &mut children {
        let st = c.wait()?;
        ensure!(st.success(), "a writer failed: {st}");
    }
    Ok(t0.elapsed())
}

struct WriterArgs {
    target: PathBuf,
    w: usize,
    each: usize,
}

fn writer_args() -> Result<WriterArgs> {
    let var = |k: &str| std::env::var(k).with_context(|| format!("{k} not set"));
    let go = PathBuf::from(var("BENCH_GO")?);
    while !go.exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(WriterArgs {
        target: PathBuf::from(var("BENCH_TARGET")?),
        w: var("BENCH_WRITER")?.parse()?,
        each: var("BENCH_EACH")?.parse()?,
    })
}

/// Writer mode: append `each` messages with the library's `Store::append`.
fn writer() -> Result<()> {
    let a = writer_args()?;
    let store = FsStore::new(Name::parse("bench")?, a.target);
    let to = Name::parse("w")?;
    let from = format!("s{}", a.w);
    for seq in 0..a.each {
        let env = Envelope::new(&from, "w", Body::message(format!("w{} {seq}", a.w), None));
        store.append(&to, &env)?;
    }
    Ok(())
}

/// Anchor writer: read the JSON array, push, write it back (atomic, unlocked).
fn rmw_writer() -> Result<()> {
    let a = writer_args()?;
    for seq in 0..a.each {
        let mut all: Vec<String> = match std::fs::read(&a.target) {
            Ok(b) => serde_json::from_slice(&b)?,
            Err(_) => Vec::new(),
        };
        all.push(format!("w{} {seq}", a.w));
        write_atomic(&a.target, &serde_json::to_vec(&all)?, false)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}
