//! The turn overhead of a preset (issue 12): `teamctl ask` round trips to a teammate spawned
//! with `--agent claude` against the same number to one spawned with the bare `--exec` a user
//! would have written before presets (`claude -p --allowedTools 'Bash(teamctl:*)' --model M`:
//! the same model flags, no team prompt, no session flags).
//!
//! Both run the real Claude Code CLI (`TEAMCTL_TEST_CLAUDE`, default
//! /tmp/cc/node_modules/.bin/claude) against a stand-in for the Anthropic Messages API on
//! 127.0.0.1 (tests/it/common/fake_model.rs, every reply the streamed text `pong`), in a
//! temporary HOME prepared as the tests do and a temporary TEAMCTL_HOME, process backend.
//! The timer starts just before the `teamctl ask` process is started and stops when it has
//! exited with the reply: the `ask` process, the send, the worker's wake-up, `sh`, claude's
//! start-up (and, for the preset, loading its session), the request to the stand-in and the
//! reply's way back. Pairs alternate (preset, bare, preset, bare...) so that load changes hit
//! both alike; the overhead is the median of the paired differences. Loopback only.

mod support;

#[path = "../tests/it/common/fake_model.rs"]
mod fake_model;

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fake_model::{Claude, FakeModel, Reply};
use support::{Env, Stats, env_count, fmt, print_machine, processes_mentioning};

const TEAM: &str = "preset";
const MODEL: &str = "claude-bench-1";
const PRESET: &str = "withpreset";
const BARE: &str = "bareexec";

/// Everything the run started, ended on drop (also on a panic): `shutdown --all --force`, then
/// the processes carrying Claude Code's temporary HOME, then (dropping `env`) every process
/// under the teamctl home.
struct Guard {
    env: Env,
    claude: Claude,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.env.cmd(&["shutdown", "--all", "--force"]).output();
        let needle = self.claude.home.path().display().to_string();
        for _ in 0..3 {
            let pids = processes_mentioning(&needle);
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
}

fn main() -> Result<()> {
    print_machine("preset");
    if std::env::var_os("TEAMCTL_TEST_CLAUDE").is_none_or(|v| v.is_empty()) {
        // SAFETY: single-threaded here; no other thread reads the environment yet.
        unsafe { std::env::set_var("TEAMCTL_TEST_CLAUDE", "/tmp/cc/node_modules/.bin/claude") };
    }
    let n = env_count("PRESET_N", 15);
    let warm = env_count("PRESET_WARMUP", 2);
    let model = FakeModel::start(|_| Reply::text("pong"));
    let mut env = Env::new()?;
    let claude = fake_model::claude(&model, &[env.work.path()]);
    env.vars.extend(claude.env.iter().cloned());
    let path = format!(
        "{}:{}",
        claude.bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.vars.push(("PATH".into(), path));
    let g = Guard { env, claude };
    let env = &g.env;
    println!("claude: {}", g.claude.bin.display());
    env.ok(&["create", TEAM])?;
    env.ok(&[
        "spawn",
        PRESET,
        "--backend",
        "process",
        "--agent",
        "claude",
        "--model",
        MODEL,
    ])?;
    let bare = format!("claude -p --allowedTools 'Bash(teamctl:*)' --model {MODEL}");
    env.ok(&["spawn", BARE, "--backend", "process", "--exec", &bare])?;
    println!("A: spawn {PRESET} --agent claude --model {MODEL}");
    println!("B: spawn {BARE} --exec \"{bare}\"");

    let ask = |who: &str| -> Result<Duration> {
        let t0 = Instant::now();
        let out = env
            .cmd(&["ask", who, "ping", "--timeout", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .context("run teamctl ask")?;
        let took = t0.elapsed();
        support::check(&["ask", who], &out)?;
        let reply = String::from_utf8_lossy(&out.stdout);
        if reply.trim() != "pong" {
            bail!("ask {who}: unexpected reply {reply:?}");
        }
        Ok(took)
    };

    let (mut a, mut b, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..warm + n {
        let ta = ask(PRESET)?;
        let tb = ask(BARE)?;
        let tag = if i < warm { " (warm-up)" } else { "" };
        println!(
            "pair {:2}: preset {}  bare {}{tag}",
            i + 1,
            fmt(ta),
            fmt(tb)
        );
        if i >= warm {
            a.push(ta);
            b.push(tb);
            diffs.push(ta.as_secs_f64() - tb.as_secs_f64());
        }
    }
    diffs.sort_by(f64::total_cmp);
    let median_diff = if diffs.is_empty() {
        0.0
    } else if diffs.len() % 2 == 1 {
        diffs[diffs.len() / 2]
    } else {
        f64::midpoint(diffs[diffs.len() / 2 - 1], diffs[diffs.len() / 2])
    };
    let (sa, sb) = (Stats::new(a), Stats::new(b));
    let conv = model.conversation_requests();
    println!();
    println!(
        "teamctl ask round trip, real claude, fake model on loopback, n={n} pairs alternated:"
    );
    println!(
        "  A --agent claude: p50 {}  p90 {}  (min {}, max {})",
        fmt(sa.median()),
        fmt(sa.pct(90.0)),
        fmt(sa.min()),
        fmt(sa.max())
    );
    println!(
        "  B bare --exec:    p50 {}  p90 {}  (min {}, max {})",
        fmt(sb.median()),
        fmt(sb.pct(90.0)),
        fmt(sb.min()),
        fmt(sb.max())
    );
    println!(
        "  preset overhead, median of paired differences A - B: {:+.1} ms (min {:+.1}, max {:+.1})",
        median_diff * 1e3,
        diffs.first().copied().unwrap_or(0.0) * 1e3,
        diffs.last().copied().unwrap_or(0.0) * 1e3,
    );
    println!(
        "  model requests: {} in all, {} of the main conversation",
        model.requests().len(),
        conv.len()
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average at end: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}
