//! Interactive teammates (issue 12): time from a message's arrival in an idle interactive
//! teammate's inbox to its paste into the agent, and the companion's idle memory.
//!
//! The agent is `python3 -i` in a pane of a private tmux server (generic mode, prompt
//! `^>>> $`). Each message is the expression `__import__('time').time_ns()`: the REPL evaluates
//! it the moment the paste and Enter reach it, so the reply is the wall-clock time of the
//! delivery as the agent saw it. `t0` is taken just before `Store::append` (the library's
//! append). Arrival -> paste = reply - t0: it includes the companion's wake-up, one tmux look
//! at the pane (state, cursor, screen), the paste (`load-buffer` + `paste-buffer -p -d`), the
//! Enter key and python reading the line; it excludes the reply's way back. The next message is
//! appended only once the teammate is idle again and its screen has been quiet for the rule's
//! 300 ms (an idle agent, as the figure is defined).

mod support;

use std::time::Duration;

use anyhow::{Context, Result, bail};
use support::{Env, Stats, env_count, epoch_us, memory_kib, print_machine, wait_for};
use teamctl::domain::{Body, Envelope, Name};
use teamctl::store::{FsStore, Store};

const TEAM: &str = "inter";
const MEMBER: &str = "py";

fn main() -> Result<()> {
    print_machine("interactive");
    let n = env_count("INTERACTIVE_N", 50);
    let env = Env::with_tmux()?;
    env.ok(&["create", TEAM])?;
    env.ok(&[
        "spawn",
        MEMBER,
        "--interactive",
        "--exec",
        "python3 -i",
        "--prompt-pattern",
        "^>>> $",
    ])?;
    let team_dir = env.team_dir(TEAM);
    let store = FsStore::new(Name::parse(TEAM)?, team_dir.clone());
    let to = Name::parse(MEMBER)?;
    let leader = team_dir.join("inboxes/team-lead/inbox.jsonl");
    let mut samples = Vec::with_capacity(n);
    // One warm-up message first: the REPL's banner and first prompt make the screen change.
    for i in 0..=n {
        let msg = Envelope::new(
            "team-lead",
            MEMBER,
            Body::message("__import__('time').time_ns()", None),
        );
        let id = msg.id.clone();
        let wall0 = epoch_us();
        store.append(&to, &msg)?;
        let mut reply = None;
        wait_for(
            "the reply",
            Duration::from_secs(20),
            Duration::from_millis(2),
            || {
                reply = reply_to(&leader, &id);
                reply.is_some()
            },
        )?;
        let ns: u128 = reply
            .context("no reply")?
            .trim()
            .parse()
            .context("the reply is not a time")?;
        if i > 0 {
            let us = (ns / 1000).saturating_sub(wall0);
            samples.push(Duration::from_micros(us as u64));
        }
        // Idle again, and quiet for the prompt rule's 300 ms (plus margin).
        wait_for(
            "idle",
            Duration::from_secs(20),
            Duration::from_millis(5),
            || {
                env.live(TEAM, MEMBER)
                    .is_some_and(|l| l["status"] == "idle")
            },
        )?;
        std::thread::sleep(Duration::from_millis(400));
    }
    let stats = Stats::new(samples);
    println!();
    println!(
        "message arrival -> paste into an idle interactive agent (python3 -i, n={n}): {}",
        stats.line()
    );
    let live = env.live(TEAM, MEMBER).context("no live state")?;
    let pid = live["pid"].as_u64().context("no pid")? as u32;
    match memory_kib(pid) {
        Some((rss, _)) => println!(
            "idle companion RSS: {} KiB ({:.2} MiB)",
            rss,
            rss as f64 / 1024.0
        ),
        None => bail!("cannot read the companion's memory"),
    }
    env.ok(&["shutdown", MEMBER])?;
    Ok(())
}

/// The text of the message in `inbox` that answers `id`.
fn reply_to(inbox: &std::path::Path, id: &str) -> Option<String> {
    let text = std::fs::read_to_string(inbox).ok()?;
    text.lines().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        (v["inReplyTo"] == id && v["type"] == "message")
            .then(|| v["text"].as_str().unwrap_or("").to_string())
    })
}
