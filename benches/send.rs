//! `teamctl send` as a whole process (SPEC section 10: 3 ms median): the wall time of running
//! the release binary to deliver one message to a running teammate, process start included,
//! measured from just before `spawn` to just after `wait`. Anchors in the same run: starting the
//! same binary to print its version (`teamctl --version`, clap parsing and exit only) and
//! `/bin/true` (the cost of any process start on this machine).
//!
//! The recipient is a running worker with no agent command (it shows each message and goes
//! idle), so each send is the real path: resolve the team, validate, lock and append, act on
//! the leader's protocol mail, check the recipient is alive.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use support::{Env, Stats, env_count, fmt, print_machine, wait_for};

fn main() -> Result<()> {
    print_machine("send");
    let n = env_count("SEND_N", 200);
    let env = Env::new()?;
    env.ok(&["create", "bench"])?;
    env.ok(&["spawn", "w", "--backend", "process", "--exec", "true"])?;
    wait_for(
        "the worker to be idle",
        Duration::from_secs(20),
        Duration::from_millis(5),
        || {
            env.live("bench", "w")
                .is_some_and(|l| l["status"] == "idle")
        },
    )?;
    let time = |mut cmd: Command| -> Result<Duration> {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let t0 = Instant::now();
        let out = cmd.output()?;
        let d = t0.elapsed();
        anyhow::ensure!(
            out.status.success(),
            "command failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(d)
    };
    // Warm the page cache and the binary.
    for i in 0..10 {
        time(env.cmd(&["send", "w", &format!("warm-up {i}")]))?;
    }
    let (mut send, mut version, mut truth) = (Vec::new(), Vec::new(), Vec::new());
    // Interleaved, so all three see the same background load.
    for i in 0..n {
        send.push(time(env.cmd(&[
            "send",
            "w",
            &format!("bench message {i}"),
        ]))?);
        let mut v = Command::new(support::bin());
        v.arg("--version");
        version.push(time(v)?);
        truth.push(time(Command::new("/bin/true"))?);
    }
    let (send, version, truth) = (Stats::new(send), Stats::new(version), Stats::new(truth));
    println!("teamctl send (whole process): {}", send.line());
    println!("anchor teamctl --version:     {}", version.line());
    println!("anchor /bin/true:             {}", truth.line());
    println!(
        "target: send median 3 ms -> {} (p90 {})",
        fmt(send.median()),
        fmt(send.pct(90.0))
    );
    Ok(())
}
