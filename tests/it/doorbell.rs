//! Doorbells (issue 14, goal 2): the short-lived waiters `ask` and `wait` are woken by a FIFO
//! that writers poke, not by an inotify instance (whose teardown costs 5-20 ms at exit); no
//! answer is missed, nothing is left behind, and a waiter killed mid-wait blocks nobody. Past
//! the inotify instance limit a worker waits on a doorbell too (issue 14, goal 3).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::{TestEnv, wait_until, wait_until_or_show};

const T: Duration = Duration::from_secs(20);

/// A team `alpha` with `bob`, whose agent waits for `gate` to exist, then echoes its stdin.
fn gated_bob(env: &TestEnv) -> PathBuf {
    let gate = env.home_path().join("gate");
    env.ok(&["create", "alpha"]);
    let agent = format!(
        "while [ ! -e {} ]; do sleep 0.02; done; cat",
        gate.display()
    );
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", &agent]);
    gate
}

fn fifos(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_fifo()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` holds an inotify instance.
fn holds_inotify(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
        d.flatten().any(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
        })
    })
}

fn start(env: &TestEnv, args: &[&str]) -> Child {
    env.cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start teamctl")
}

#[test]
fn ask_waits_on_a_doorbell_not_inotify_and_leaves_nothing() {
    let env = TestEnv::new();
    let gate = gated_bob(&env);
    let bells = env.team_dir("alpha").join("bells").join("inbox-team-lead");
    let ask = start(&env, &["ask", "bob", "hello", "--timeout", "20"]);
    let pid = ask.id();
    wait_until("ask's doorbell", T, || !fifos(&bells).is_empty());
    assert!(!holds_inotify(pid), "ask holds an inotify instance");
    std::fs::write(&gate, b"").unwrap();
    let out = ask.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
    assert!(fifos(&bells).is_empty(), "ask left its doorbell behind");
}

#[test]
fn wait_is_woken_by_doorbells_not_inotify() {
    let env = TestEnv::new();
    let gate = gated_bob(&env);
    env.ok(&["send", "bob", "work"]);
    wait_until("bob to be working", T, || {
        env.member_status("bob") == "working"
    });
    let wait = start(&env, &["wait", "bob", "--timeout", "20"]);
    let live_bells = env.team_dir("alpha").join("bells").join("live");
    wait_until("wait's doorbell", T, || !fifos(&live_bells).is_empty());
    assert!(!holds_inotify(wait.id()), "wait holds an inotify instance");
    std::fs::write(&gate, b"").unwrap();
    let out = wait.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        fifos(&live_bells).is_empty(),
        "wait left its doorbell behind"
    );
}

#[test]
fn a_killed_waiters_doorbell_blocks_nobody_and_is_cleared() {
    let env = TestEnv::new();
    let gate = gated_bob(&env);
    let bells = env.team_dir("alpha").join("bells").join("inbox-team-lead");
    let mut ask = start(&env, &["ask", "bob", "first", "--timeout", "20"]);
    // Armed: under its name (a `.PID-N` FIFO is still being armed; killed then, it is
    // removed by a later ring once that pid is gone).
    wait_until("ask's doorbell", T, || {
        fifos(&bells).iter().any(|f| {
            f.file_name()
                .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
        })
    });
    ask.kill().unwrap();
    ask.wait().unwrap();
    assert_eq!(fifos(&bells).len(), 1, "the killed ask's FIFO");
    // The next answer to the leader pokes the stale FIFO: refused, removed, nothing blocks.
    std::fs::write(&gate, b"").unwrap();
    assert_eq!(
        env.ok(&["ask", "bob", "second", "--timeout", "20"]).trim(),
        "second"
    );
    // (Failed once in a CI run beside today's changes, not since: what is left, and who holds
    // it open, is said to tell why next time.)
    let killed = ask.id();
    wait_until_or_show(
        "the stale FIFO to go",
        T,
        || fifos(&bells).is_empty(),
        || {
            fifos(&bells)
                .iter()
                .map(|f| {
                    format!(
                        "{} (killed ask: {killed}) held by {:?}",
                        f.display(),
                        holders(f)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
    );
}

/// The pids holding `path` open (their `/proc/PID/fd` links).
fn holders(path: &Path) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == path))
            })
        })
        .collect()
}

#[test]
fn many_asks_in_a_row_miss_no_answer() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    for i in 0..30 {
        let text = format!("m{i}");
        assert_eq!(
            env.ok(&["ask", "bob", &text, "--timeout", "20"]).trim(),
            text
        );
    }
}

/// Past the inotify instance limit (simulated: `TEAMCTL_NO_INOTIFY`, so the test spends no
/// instances of the shared user) a worker waits on a doorbell, not a 100 ms poll.
#[test]
fn a_worker_without_inotify_waits_on_a_doorbell_and_misses_nothing() {
    let env = TestEnv::new();
    let pid = cat_bob_without_inotify(&env);
    let bells = env.team_dir("alpha").join("bells").join("inbox-bob");
    wait_until("bob's doorbell", T, || !fifos(&bells).is_empty());
    assert!(!holds_inotify(pid), "the worker holds an inotify instance");
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(!log.contains("polling every"), "the worker polls: {log}");
    for i in 0..20 {
        let text = format!("m{i}");
        assert_eq!(
            env.ok(&["ask", "bob", &text, "--timeout", "20"]).trim(),
            text
        );
    }
}

/// A link planted in the place of a team's `bells` (to a directory elsewhere with an
/// `inbox-bob` holding a FIFO a program of the user's reads and a stale one nobody holds) is
/// never followed: bob's worker past the inotify limit (simulated) arms no doorbell there, and
/// the sends to bob neither poke the program's FIFO nor remove the stale one. Bob still answers
/// (polling, said in its log). (Attacker QA, session 32: the ring and the worker's doorbell both
/// went by path.)
#[test]
fn a_link_at_bells_is_never_followed_by_a_ring_or_a_doorbell() {
    use std::os::unix::fs::OpenOptionsExt;
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let elsewhere = env.work.path().join("elsewhere");
    let theirs = elsewhere.join("inbox-bob");
    std::fs::create_dir_all(&theirs).unwrap();
    let fifo = |name: &str| {
        let path = theirs.join(name);
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap();
        path
    };
    let stale = fifo("999999-0");
    let held = fifo("1-0");
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&held)
        .unwrap();
    let bells = env.team_dir("alpha").join("bells");
    let _ = std::fs::remove_dir_all(&bells);
    std::os::unix::fs::symlink(&elsewhere, &bells).unwrap();

    spawn_without_inotify(
        &env,
        "bob",
        &["spawn", "bob", "--backend", "process", "--exec", "cat"],
    );
    for i in 0..3 {
        let text = format!("m{i}");
        assert_eq!(
            env.ok(&["ask", "bob", &text, "--timeout", "20"]).trim(),
            text
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(&theirs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["1-0", "999999-0"],
        "a doorbell was armed, or a FIFO removed, through the link"
    );
    assert!(stale.exists());
    let mut buf = [0u8; 16];
    let poked = std::io::Read::read(&mut reader, &mut buf);
    assert!(
        poked.is_err(),
        "the program's FIFO was poked through the link: {poked:?}"
    );
    assert!(
        std::fs::symlink_metadata(&bells)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
}

/// `teamctl spawn ARGS` past the inotify instance limit (simulated: `TEAMCTL_NO_INOTIFY`, so
/// the test spends no instances of the shared user), then `name` idle.
fn spawn_without_inotify(env: &TestEnv, name: &str, args: &[&str]) {
    let out = env
        .cmd(args)
        .env("TEAMCTL_NO_INOTIFY", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    wait_until(&format!("{name} idle"), T, || {
        env.member_status(name) == "idle"
    });
}

/// Team `alpha` with bob (`cat`, process backend) spawned past the inotify limit (simulated),
/// idle; bob's worker's pid.
fn cat_bob_without_inotify(env: &TestEnv) -> u32 {
    env.ok(&["create", "alpha"]);
    spawn_without_inotify(
        env,
        "bob",
        &["spawn", "bob", "--backend", "process", "--exec", "cat"],
    );
    env.member("bob")["pid"].as_u64().unwrap() as u32
}

/// FIFOs in `dir` armed by process `pid` (their names are `PID-N`).
fn fifos_of(dir: &Path, pid: u32) -> usize {
    fifos(dir)
        .iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.split('-').next())
                .is_some_and(|p| p == pid.to_string())
        })
        .count()
}

/// Past the inotify instance limit (simulated) an auto-claim teammate watches the task list
/// on a doorbell too: before, a subscription with the task list in it had no doorbell for it
/// and fell back to a 100 ms poll (and said so in the worker's log).
#[test]
fn an_auto_claim_teammate_without_inotify_takes_a_new_task_on_a_doorbell() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    spawn_without_inotify(
        &env,
        "bob",
        &[
            "spawn",
            "bob",
            "--backend",
            "process",
            "--auto-claim",
            "--exec",
            "echo \"did $TEAMCTL_TASK_ID\"",
        ],
    );
    let pid = env.member("bob")["pid"].as_u64().unwrap() as u32;
    let bells = env.team_dir("alpha").join("bells");
    wait_until("bob's doorbells", T, || {
        fifos_of(&bells.join("tasks"), pid) == 1 && fifos_of(&bells.join("inbox-bob"), pid) == 1
    });
    assert!(!holds_inotify(pid), "the worker holds an inotify instance");
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(!log.contains("polling every"), "the worker polls: {log}");
    env.ok(&["task", "add", "first job"]);
    wait_until("bob to finish task 1", T, || {
        let out = env.ok(&["--json", "task", "show", "1"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["status"] == "completed" && v["owner"] == "bob"
    });
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(!log.contains("polling every"), "the worker polls: {log}");
}

/// Past the inotify instance limit (simulated) bob waits on a FIFO only writers ring. That
/// FIFO removed by hand, then its directory made anew, then the whole `bells` removed: each
/// time bob finds its doorbell gone (within `DOORBELL_CHECK`, 5 s), arms a new one and answers
/// the message sent meanwhile (QA: it stayed deaf, the mail waiting, until something else woke
/// it). And it never polls for its mail.
#[test]
fn a_teammate_without_inotify_whose_doorbell_is_removed_arms_a_new_one() {
    let env = TestEnv::new();
    let pid = cat_bob_without_inotify(&env);
    let bells = env.team_dir("alpha").join("bells");
    let mine = bells.join("inbox-bob");
    wait_until("bob's doorbell", T, || fifos_of(&mine, pid) == 1);
    let removals: [(&str, &dyn Fn()); 3] = [
        ("its FIFO removed", &|| {
            for f in fifos(&mine) {
                std::fs::remove_file(f).unwrap();
            }
        }),
        ("its directory made anew", &|| {
            std::fs::remove_dir_all(&mine).unwrap();
            std::fs::create_dir(&mine).unwrap();
        }),
        ("bells removed", &|| {
            std::fs::remove_dir_all(&bells).unwrap();
        }),
    ];
    for (i, (how, remove)) in removals.iter().enumerate() {
        remove();
        assert_eq!(fifos_of(&mine, pid), 0, "{how}");
        let text = format!("after {how} ({i})");
        assert_eq!(
            env.ok(&["ask", "bob", &text, "--timeout", "20"]).trim(),
            text,
            "{how}"
        );
        wait_until(&format!("bob's new doorbell after {how}"), T, || {
            fifos_of(&mine, pid) == 1
        });
    }
    assert!(!holds_inotify(pid), "the worker holds an inotify instance");
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(!log.contains("polling every"), "the worker polls: {log}");
    assert!(log.contains("doorbell was removed"), "{log}");

    // Its directory swapped for a link (to the directory itself, moved aside): writers ring
    // nothing through a link, so bob may not keep waiting on the FIFO it holds there. It finds
    // it out of place and, unable to arm a doorbell through the link, polls until it can
    // (attacker QA: the look followed the link, found its FIFO, and bob stayed deaf).
    let aside = bells.join("aside-bob");
    std::fs::rename(&mine, &aside).unwrap();
    std::os::unix::fs::symlink(&aside, &mine).unwrap();
    assert_eq!(
        env.ok(&["ask", "bob", "through a link", "--timeout", "20"])
            .trim(),
        "through a link"
    );
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(log.contains("polling for mail until it can"), "{log}");
    // The link taken away: bob arms a doorbell there again and stops polling (attacker QA: it
    // polled on for good).
    std::fs::remove_file(&mine).unwrap();
    wait_until(
        "bob's doorbell armed again once the link is gone",
        T,
        || fifos_of(&mine, pid) == 1,
    );
    assert_eq!(
        env.ok(&["ask", "bob", "rung again", "--timeout", "20"])
            .trim(),
        "rung again"
    );
}

/// The leader console's doorbell for live states, removed with `bells/live` by hand: the
/// console finds it gone (within `DOORBELL_CHECK`, 5 s) and arms a new one there (QA: it was
/// never armed again; the status line changed only at the console's own looks).
#[test]
fn the_consoles_live_doorbell_removed_is_armed_anew() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let live = env.team_dir("alpha").join("bells").join("live");
    let mut console = env.cmd(&["lead"]);
    console
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    /// Ends the console however the test ends.
    struct Running(Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut console = Running(console.spawn().unwrap());
    let pid = console.0.id();
    wait_until("the console's doorbell", T, || fifos_of(&live, pid) == 1);
    std::fs::remove_dir_all(&live).unwrap();
    wait_until("the console's doorbell armed anew", T, || {
        fifos_of(&live, pid) == 1
    });
    drop(console.0.stdin.take());
    assert!(console.0.wait().unwrap().success());
}

/// Past the inotify instance limit (simulated) an interactive teammate's companion waits on
/// doorbells for its inbox and its agent's hook events, and a hook event recorded by
/// `teamctl hook` pokes the companion's doorbell (its one byte is consumed by the companion's
/// waiting thread, which then rings the worker). Before, the hook events had no doorbell and
/// the whole subscription polled every 100 ms.
#[test]
fn an_interactive_companion_without_inotify_waits_on_doorbells_for_hook_events() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    spawn_without_inotify(
        &env,
        "py",
        &[
            "spawn",
            "py",
            "--interactive",
            "--exec",
            "python3 -i",
            "--prompt-pattern",
            "^>>> $",
        ],
    );
    let pid = env.member("py")["pid"].as_u64().unwrap() as u32;
    let bells = env.team_dir("alpha").join("bells");
    wait_until("the companion's doorbells", T, || {
        fifos_of(&bells.join("hooks-py"), pid) == 1 && fifos_of(&bells.join("inbox-py"), pid) == 1
    });
    assert!(
        !holds_inotify(pid),
        "the companion holds an inotify instance"
    );
    let log = || std::fs::read_to_string(env.team_dir("alpha").join("logs/py.log")).unwrap();
    assert!(
        !log().contains("polling every"),
        "the companion polls: {}",
        log()
    );
    // A hook event, as the agent's hook would record it: the companion takes it with the
    // next delivery (a generic REPL's companion notes a notification in its log).
    let hook = env
        .cmd(&["hook", "notification"])
        .env("TEAMCTL_TEAM", "alpha")
        .env("TEAMCTL_AGENT_NAME", "py")
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(br#"{"message":"needs a look"}"#)?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(hook.status.success(), "{hook:?}");
    assert_eq!(
        env.ok(&["ask", "py", "6*7", "--timeout", "30"]).trim(),
        "42"
    );
    assert!(
        log().contains("agent notification: needs a look"),
        "{}",
        log()
    );
    assert!(
        !log().contains("polling every"),
        "the companion polls: {}",
        log()
    );
}

/// How many inotify instances process `pid` holds.
fn inotify_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| {
        d.flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"))
            })
            .count()
    })
}

/// A worker whose inbox directory is removed arms a new watch; the old one's instance ends
/// with it, so re-arming leaks no instance of the user's 128.
#[test]
fn a_worker_arming_anew_keeps_one_inotify_instance() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let pid = env.member("bob")["pid"].as_u64().unwrap() as u32;
    assert_eq!(
        inotify_count(pid),
        1,
        "bob holds no inotify instance (the user's fs.inotify.max_user_instances spent?)"
    );
    let dir = env.team_dir("alpha").join("inboxes/bob");
    let log = env.team_dir("alpha").join("logs/bob.log");
    for round in 1..=3 {
        // Idle first (its cursor written), and again if a write raced the removal.
        wait_until("bob idle", T, || env.member_status("bob") == "idle");
        wait_until("the inbox directory removed", T, || {
            std::fs::remove_dir_all(&dir).is_ok()
        });
        // Failed once under a heavy load (a build beside the suite): what bob said, and
        // whether its worker still runs, are shown if it happens again.
        let said = || std::fs::read_to_string(&log).unwrap_or_default();
        wait_until_or_show(
            "bob to watch anew",
            T,
            || said().matches("watching anew").count() >= round,
            || {
                format!(
                    "bob's worker running: {}; its log:\n{}",
                    std::path::Path::new(&format!("/proc/{pid}")).exists(),
                    said()
                )
            },
        );
        // One instance; none when the user's instances were spent meanwhile by someone else
        // (then a doorbell), never two.
        wait_until("the old instance to close", T, || inotify_count(pid) <= 1);
        let text = format!("m{round}");
        // Seen under a heavy load (suites side by side), rarely: an empty answer to m3. What
        // bob said is shown if it happens again.
        let answer = env.ok(&["ask", "bob", &text, "--timeout", "20"]);
        assert_eq!(answer.trim(), text, "bob's log:\n{}", said());
    }
}

/// Team alpha with a process teammate bob (`cat`) that has answered once.
fn alpha_with_bob() -> TestEnv {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    assert_eq!(
        env.ok(&["ask", "bob", "m1", "--timeout", "20"]).trim(),
        "m1"
    );
    env
}

/// A file where a worker's inbox directory should be: the worker cannot watch it, and reads no
/// mail until it is moved away. `status` and `doctor` say so (QA: `status` showed the turn long
/// done as still running and `doctor` found nothing), and stop saying it once it is gone.
#[test]
fn a_worker_that_cannot_watch_its_inbox_is_shown_by_status_and_doctor() {
    let env = alpha_with_bob();
    let dir = env.team_dir("alpha").join("inboxes/bob");
    // The worker may still be writing its cursor after the reply: again until removed.
    wait_until("the inbox directory removed", T, || {
        std::fs::remove_dir_all(&dir).is_ok()
    });
    std::fs::write(&dir, "not a directory").unwrap();
    let problem = |env: &TestEnv| env.member("bob")["inboxProblem"].clone();
    wait_until("status to show bob's inbox problem", T, || {
        problem(&env).is_string()
    });
    let table = env.ok(&["status"]);
    assert!(table.contains("bob: reads no mail"), "{table}");
    // Said as `send` says it, with what to do, not "Not a directory (os error 20)".
    for args in [&["inbox", "bob"][..], &["log"][..]] {
        let out = env.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is not a directory; move it away"),
            "{args:?}: {err}"
        );
    }
    let doctor = env.run(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("bob@alpha reads no mail"), "{said}");
    assert!(!doctor.status.success());
    std::fs::remove_file(&dir).unwrap();
    wait_until("bob to watch again", T, || problem(&env).is_null());
    assert_eq!(
        env.ok(&["ask", "bob", "m2", "--timeout", "20"]).trim(),
        "m2"
    );
}

/// `resume` with a file where the teammate's inbox directory should be: before, the worker
/// died at once, `resume` said "resumed", and `status` and `doctor` said only "dead" (a
/// `resume` loop; new-user QA). Now the worker runs, says why it reads no mail, and reads it
/// once the directory is back.
#[test]
fn a_worker_started_on_an_inbox_it_cannot_watch_waits_and_says_so() {
    let env = alpha_with_bob();
    env.ok(&["kill", "bob"]);
    let dir = env.team_dir("alpha").join("inboxes/bob");
    let kept = env.work.path().join("bob-inbox");
    std::fs::rename(&dir, &kept).unwrap();
    std::fs::write(&dir, "not a directory").unwrap();
    env.ok(&["resume", "bob"]);
    let problem = |env: &TestEnv| env.member("bob")["inboxProblem"].clone();
    wait_until("status to show bob's inbox problem", T, || {
        problem(&env).is_string()
    });
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert_eq!(env.member_status("bob"), "idle");
    let doctor = env.run(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("bob@alpha reads no mail"), "{said}");
    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(&kept, &dir).unwrap();
    wait_until("bob to watch", T, || problem(&env).is_null());
    assert_eq!(
        env.ok(&["ask", "bob", "m2", "--timeout", "20"]).trim(),
        "m2"
    );
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
}

/// The leader's inbox replaced by a file while a teammate works: before, the teammate's worker
/// died writing its answer, and `resume` ran the turn again (new-user QA). Now the answer
/// waits, the worker says why in its log, and the answer arrives, once, when the inbox is back.
#[test]
fn an_answer_to_an_inbox_that_cannot_take_it_waits_and_the_worker_lives_on() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let go = env.work.path().join("go");
    let agent = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; cat",
        go.display()
    );
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", &agent]);
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    env.ok(&["send", "bob", "m1"]);
    wait_until("bob to work", T, || env.member_status("bob") == "working");
    let dir = env.team_dir("alpha").join("inboxes/team-lead");
    let kept = env.work.path().join("lead-inbox");
    if !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    }
    std::fs::rename(&dir, &kept).unwrap();
    std::fs::write(&dir, "not a directory").unwrap();
    std::fs::write(&go, "").unwrap();
    let log = env.team_dir("alpha").join("logs/bob.log");
    wait_until("bob to say its answer waits", T, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("the answer to team-lead waits")
    });
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(&kept, &dir).unwrap();
    let answers = || {
        env.inbox("alpha", "team-lead")
            .iter()
            .filter(|m| m["from"] == "bob" && m["text"] == "m1")
            .count()
    };
    wait_until("the answer", T, || answers() == 1);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    assert_eq!(answers(), 1);
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
}

/// A symbolic link planted at `inboxes` (the directory moved elsewhere): before, the worker
/// read a record written there and answered into the leader's inbox through the link, and
/// `doctor` saw nothing (attacker QA). Now it reads nothing through the link and says why;
/// with the directory back it reads the mail.
#[test]
fn a_link_at_the_inboxes_directory_is_not_read_through() {
    use teamctl::domain::{Body, Envelope, Name};
    use teamctl::store::Home;
    use teamctl::store::inbox::{self, InboxPaths};
    let env = alpha_with_bob();
    // Idle, waiting for mail: `ask` returns on the answer, while the worker may still be
    // reading on through the directory it opened before the swap (CI, loaded: it read the
    // planted message from the moved directory, an answer it then could not write).
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let inboxes = env.team_dir("alpha").join("inboxes");
    let out = env.work.path().join("inboxes-elsewhere");
    // The link takes the directory's place in one step (swapped, then the directory moved
    // out): a moment with no `inboxes` at all, as a rename then a link left, let bob make
    // the directory again first (seen under load: the link then failed "File exists").
    let link = env.work.path().join("inboxes-link");
    std::os::unix::fs::symlink(&out, &link).unwrap();
    nix::fcntl::renameat2(
        nix::fcntl::AT_FDCWD,
        &inboxes,
        nix::fcntl::AT_FDCWD,
        &link,
        nix::fcntl::RenameFlags::RENAME_EXCHANGE,
    )
    .unwrap();
    std::fs::rename(&link, &out).unwrap();
    let planted = Envelope::new("team-lead", "bob", Body::message("thru link", None));
    inbox::append(&InboxPaths::new(out.join("bob")), &planted).unwrap();
    // A worker that waits on doorbells (the user's inotify instances spent by everything
    // else running, as when suites run side by side) hears only a ring: what a sender's
    // append through the store would do.
    teamctl::store::doorbell::ring_topic(
        &env.team_dir("alpha"),
        &teamctl::store::Topic::Inbox(Name::parse("bob").unwrap()),
    );
    let store = Home::new(env.home.path().to_path_buf())
        .handle(&Name::parse("alpha").unwrap())
        .unwrap();
    let bob = Name::parse("bob").unwrap();
    let log = env.team_dir("alpha").join("logs/bob.log");
    wait_until_or_show(
        "bob to say it cannot watch its inbox",
        T,
        || {
            store
                .live(&bob)
                .ok()
                .flatten()
                .is_some_and(|l| l.inbox_problem.is_some())
        },
        || {
            format!(
                "bob's log:\n{}\nlive: {:?}",
                std::fs::read_to_string(&log).unwrap_or_default(),
                store.live(&bob)
            )
        },
    );
    let answered = |dir: &Path| {
        std::fs::read_to_string(dir.join("team-lead/inbox.jsonl"))
            .unwrap_or_default()
            .contains(&planted.id)
    };
    assert!(!answered(&out), "bob answered through the link");
    std::fs::remove_file(&inboxes).unwrap();
    std::fs::rename(&out, &inboxes).unwrap();
    wait_until("bob to read its inbox again", T, || {
        store
            .live(&bob)
            .ok()
            .flatten()
            .is_some_and(|l| l.inbox_problem.is_none())
    });
    assert_eq!(
        env.ok(&["ask", "bob", "m2", "--timeout", "20"]).trim(),
        "m2"
    );
}

/// The inodes process `pid`'s inotify instances watch (`/proc/PID/fdinfo`).
fn watched_inodes(pid: u32) -> Vec<u64> {
    let mut out = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(fd.path()).unwrap_or_default();
        for line in text.lines().filter(|l| l.starts_with("inotify wd:")) {
            if let Some(ino) = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("ino:"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            {
                out.push(ino);
            }
        }
    }
    out
}

fn inode(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap().ino()
}

/// A worker's inotify watch covers its own files, never a directory its teammates write in
/// (`notify` watches for opens and writes too): a watch on the team's `state/` and `logs/` woke
/// every worker on inotify (up to 127) for each state or log any of them opened or wrote, and
/// `status` of 1,000 teammates took 0.5 s (issue 14, goal 3). Its state file replaced, the
/// watch moves to the new file. And a `send` opens no directory a worker watches for reading
/// (`inboxes/`: a directory's open is an event for every watcher of the one above it). Nor is
/// `inboxes/` itself watched: each member made there (every spawn) woke every worker on
/// inotify; what stands in for it (a whole `inboxes` moved away) is the inbox's own doorbell
/// directory, which every send rings.
#[test]
fn a_workers_watch_is_on_its_own_files_and_a_send_wakes_no_other_worker() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    for n in ["bob", "al"] {
        env.ok(&["spawn", n, "--backend", "process", "--exec", "cat"]);
    }
    wait_until("both idle", T, || {
        env.member_status("bob") == "idle" && env.member_status("al") == "idle"
    });
    let dir = env.team_dir("alpha");
    let bob = env.workers_of("bob@alpha")[0];
    let own = |state: &Path| {
        vec![
            inode(&dir.join("bells/inbox-bob")),
            inode(&dir.join("inboxes/bob")),
            inode(state),
            inode(&dir.join("logs/bob.log")),
        ]
    };
    let state = dir.join("state/bob.json");
    let mut watched = watched_inodes(bob);
    watched.sort_unstable();
    let mut expected = own(&state);
    expected.sort_unstable();
    assert_eq!(
        watched, expected,
        "bob's worker watches more or less than its own files"
    );
    for shared in ["state", "logs", "inboxes", "bells", "."] {
        assert!(!watched.contains(&inode(&dir.join(shared))), "{shared}");
    }
    // Replaced (by hand): written again, and the watch is on the new file.
    std::fs::remove_file(&state).unwrap();
    wait_until("bob's state written again, watched", T, || {
        state.exists() && {
            let mut w = watched_inodes(bob);
            w.sort_unstable();
            let mut e = own(&state);
            e.sort_unstable();
            w == e
        }
    });

    // What an ask of al does (the leader's inbox made by a first one), seen by a watch on
    // `inboxes/` as bob's: no event at all.
    env.ok(&["ask", "al", "first", "--timeout", "15"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut probe = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        let _ = tx.send(e.map(|e| format!("{:?} {:?}", e.kind, e.paths)));
    })
    .unwrap();
    notify::Watcher::watch(
        &mut probe,
        &dir.join("inboxes"),
        notify::RecursiveMode::NonRecursive,
    )
    .unwrap();
    let out = env.run(&["ask", "al", "hello", "--timeout", "15"]);
    assert!(out.status.success(), "{out:?}");
    // A mark after it: the events before it have all come once it has (one queue, in order).
    let mark = dir.join("inboxes/.end-of-probe");
    std::fs::write(&mark, b"").unwrap();
    let mut seen = Vec::new();
    loop {
        let e = rx
            .recv_timeout(T)
            .expect("the probe's own mark seen")
            .unwrap();
        if e.contains(".end-of-probe") {
            break;
        }
        seen.push(e);
    }
    drop(probe);
    std::fs::remove_file(&mark).unwrap();
    assert!(seen.is_empty(), "events on inboxes/ from one ask: {seen:?}");
    env.ok(&["delete", "--force"]);
}
