//! Reading one new message (SPEC section 10: 1M old messages vs empty, ratio under 1.2), beside
//! the approach it replaces, in the same run.
//!
//! teamctl: the inbox is an append-only JSONL log; a reader keeps a byte-offset cursor. One
//! measured read is what a worker does per message: load the cursor, `Store::read` from it,
//! store the new cursor (`FsStore`, the library's own reader). Before each measurement (not
//! timed) the log is cut back to its N old messages, one new message is appended with
//! `Store::append`, and the cursor is put just past the old ones. The three sizes are
//! measured interleaved, so they see the same background load.
//!
//! Baseline ("rewrite the file to mark read", the original design): the inbox is one JSON
//! array of messages with a `read` flag; reading the new message means reading and parsing the
//! whole file, marking the unread ones, and writing the whole file back. Its cost is linear.

mod support;

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};
use support::{Stats, env_count, fmt, print_machine};
use teamctl::domain::{Body, Envelope, Name};
use teamctl::store::{FsStore, Item, Store};

const READER: &str = "bench";

/// One message as the JSON-array design stores it.
#[derive(Serialize, Deserialize)]
struct OldMessage {
    from: String,
    text: String,
    summary: String,
    timestamp: String,
    read: bool,
}

fn main() -> Result<()> {
    print_machine("read");
    let sizes = [0usize, 10_000, env_count("READ_BIG", 1_000_000)];
    let iters = env_count("READ_ITERS", 2000);
    let tmp = tempfile::Builder::new()
        .prefix("teamctl-bench-read")
        .tempdir()?;
    let me = Name::parse("w")?;

    // Our reader: one store per size, N old messages, cursor past them.
    let mut stores = Vec::new();
    for &n in &sizes {
        let dir = tmp.path().join(format!("jsonl-{n}"));
        let store = FsStore::new(Name::parse("bench")?, dir.clone());
        let log = dir.join("inboxes/w/inbox.jsonl");
        std::fs::create_dir_all(log.parent().unwrap())?;
        let t = Instant::now();
        let old_len = write_old_jsonl(&log, n)?;
        eprintln!(
            "[read] built a JSONL inbox of {n} messages ({} MB) in {}",
            old_len / 1_000_000,
            fmt(t.elapsed())
        );
        stores.push((
            n,
            store,
            log,
            old_len,
            Vec::with_capacity(iters),
            Vec::with_capacity(iters),
        ));
    }
    for i in 0..iters {
        for (_, store, log, old_len, samples, stores_only) in &mut stores {
            OpenOptions::new()
                .write(true)
                .open(&*log)?
                .set_len(*old_len)?;
            let msg = Envelope::new(
                "team-lead",
                "w",
                Body::message(format!("new message {i}"), None),
            );
            store.append(&me, &msg)?;
            store.set_cursor(&me, READER, teamctl::store::Position::from_raw(*old_len))?;
            let t0 = Instant::now();
            let cursor = store.cursor(&me, READER)?;
            let entries = store.read(&me, cursor, 64)?;
            let end = entries.last().map(|e| e.end).context("no new entry")?;
            let t1 = Instant::now();
            store.set_cursor(&me, READER, end)?;
            let d = t0.elapsed();
            stores_only.push(t1.elapsed());
            ensure!(
                entries.len() == 1
                    && matches!(&entries[0].item, Item::Message(e) if e.id == msg.id),
                "read the wrong thing"
            );
            samples.push(d);
        }
    }
    let mut ours = Vec::new();
    for (n, _, _, _, samples, stores_only) in stores {
        let s = Stats::new(samples);
        println!("teamctl cursor read, {n:>9} old: {}", s.line());
        println!(
            "  of which storing the cursor (one pwrite in place): p50 {}",
            fmt(Stats::new(stores_only).median())
        );
        ours.push((n, s));
    }

    // Baseline: JSON array rewritten to mark read.
    let mut base = Vec::new();
    for &n in &sizes {
        let path = tmp.path().join(format!("array-{n}.json"));
        write_old_array(&path, n)?;
        let reps = match n {
            0 => iters,
            n if n <= 10_000 => 100,
            _ => env_count("READ_BASELINE_BIG_ITERS", 3),
        };
        let mut samples = Vec::with_capacity(reps);
        for i in 0..reps {
            // Not timed: the sender appends the new message the same way.
            let mut all: Vec<OldMessage> = serde_json::from_slice(&std::fs::read(&path)?)?;
            all.truncate(n);
            all.push(old_message(i, false));
            std::fs::write(&path, serde_json::to_vec(&all)?)?;
            drop(all);
            let t0 = Instant::now();
            let mut all: Vec<OldMessage> = serde_json::from_slice(&std::fs::read(&path)?)?;
            let mut fresh = 0;
            for m in all.iter_mut().filter(|m| !m.read) {
                m.read = true;
                fresh += 1;
            }
            std::fs::write(&path, serde_json::to_vec(&all)?)?;
            samples.push(t0.elapsed());
            ensure!(fresh == 1, "baseline read {fresh} new messages");
        }
        let s = Stats::new(samples);
        println!("baseline rewrite-to-mark-read, {n:>9} old: {}", s.line());
        base.push((n, s));
    }

    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-12);
    let (big, _) = ours[2];
    println!();
    println!(
        "teamctl: {big} old vs empty, median ratio {:.3} (target < 1.2); 10000 vs empty {:.3}",
        ratio(ours[2].1.median(), ours[0].1.median()),
        ratio(ours[1].1.median(), ours[0].1.median())
    );
    println!(
        "baseline: {big} old vs empty, median ratio {:.0}; 10000 vs empty {:.0}",
        ratio(base[2].1.median(), base[0].1.median()),
        ratio(base[1].1.median(), base[0].1.median())
    );
    println!(
        "at {big} old messages teamctl reads one new message {:.0}x faster than the baseline",
        ratio(base[2].1.median(), ours[2].1.median())
    );
    Ok(())
}

/// A realistic message: a sentence or two of text.
fn old_message(i: usize, read: bool) -> OldMessage {
    OldMessage {
        from: "researcher".into(),
        text: format!(
            "finding {i}: the auth module validates tokens twice; see src/auth.rs line {}",
            i % 997
        ),
        summary: format!("finding {i}: the auth module validates tokens twice"),
        timestamp: "2026-11-30T14:10:38.123Z".into(),
        read,
    }
}

/// Write `n` already-read records as JSONL (the inbox format); returns the length.
fn write_old_jsonl(path: &Path, n: usize) -> Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for i in 0..n {
        let m = old_message(i, true);
        let env = Envelope::new(&m.from, "w", Body::message(m.text, Some(m.summary)));
        w.write_all(&env.to_line()?)?;
    }
    w.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn write_old_array(path: &Path, n: usize) -> Result<()> {
    let all: Vec<OldMessage> = (0..n).map(|i| old_message(i, true)).collect();
    let w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    serde_json::to_writer(w, &all)?;
    Ok(())
}
