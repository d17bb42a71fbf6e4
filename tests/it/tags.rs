//! teamctl's tags are pane options anyone can set, and `teamctl worker` is a command anyone can
//! type: against a private tmux server per test, neither makes teamctl take what is not its
//! own. A pane whose tags were forged (`tmux set -p @teamctl-agent ...`) on a program of the
//! user's is no orphan to `doctor`, and `doctor --fix` and `delete` leave it running; a worker
//! typed by hand in a pane of the user's does not serve the teammate, and a re-run of the
//! teammate's own pane still does (attacker QA, session 22).

use std::time::Duration;

use crate::common::{BIN, TestEnv, wait_until, wait_until_or_show};

const WAIT: Duration = Duration::from_secs(20);
/// Replies with the agent's name and the message text.
const ECHO: &str = "printf '%s got: ' \"$TEAMCTL_AGENT_NAME\"; cat";

/// A new session `session` on the private server whose one pane runs `argv`, kept when its
/// program ends (`remain-on-exit`, set before the program runs). Returns the pane and its pid.
fn pane_running(env: &TestEnv, session: &str, argv: &[&str]) -> (String, String) {
    let pane = env
        .tmux_ok(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-P",
            "-F",
            "#{pane_id}",
            "--",
            "cat",
        ])
        .trim()
        .to_string();
    env.tmux_ok(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    let mut respawn = vec!["respawn-pane", "-k", "-t", &pane, "--"];
    respawn.extend_from_slice(argv);
    env.tmux_ok(&respawn);
    let pid = env.pane_format(&pane, "#{pane_pid}").expect("the pane");
    (pane, pid)
}

/// Forge teamctl's tags on `pane`: `option` (`@teamctl-agent` or `@teamctl-console`) set to
/// `value`, for the process the pane runs (`@teamctl-pid`), as teamctl itself sets them.
fn forge(env: &TestEnv, pane: &str, option: &str, value: &str) {
    env.tmux_ok(&[
        "set-option",
        "-p",
        "-F",
        "-t",
        pane,
        "@teamctl-pid",
        "#{pane_pid}",
    ]);
    env.tmux_ok(&["set-option", "-p", "-t", pane, option, value]);
}

fn runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
    })
}

/// The pane is there, running `pid`.
fn still_runs(env: &TestEnv, pane: &str, pid: &str, what: &str) {
    assert_eq!(
        env.pane_format(pane, "#{pane_pid} #{pane_dead}"),
        Some(format!("{pid} 0")),
        "{what}: the pane with forged tags stays, its program running"
    );
    assert!(runs(pid), "{what}");
}

fn doctor_json(env: &TestEnv, args: &[&str]) -> (i32, String) {
    let mut all = vec!["--json", "doctor"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), format!("{v:#}"))
}

/// A `sleep` pane of the user's with teamctl's tags forged on it, naming a teammate of a team
/// that is gone: `doctor` does not call it an orphan (it says the tags are on a process that
/// is not teamctl's), and `doctor --fix` leaves it running, says so, and takes the tags off.
/// A genuine orphan beside it (the dead pane of a teamctl worker of that team) is still
/// closed. (Attacker QA: `--fix` killed the `sleep`.)
#[test]
fn doctor_fix_leaves_a_pane_with_forged_tags_running_and_says_so() {
    let env = TestEnv::with_tmux();
    let (forged, sleep) = pane_running(&env, "forged", &["sleep", "100000"]);
    forge(&env, &forged, "@teamctl-agent", &env.tag("ghost@tags-gone"));
    let home = env.home_path().display().to_string();
    let worker = [BIN, "worker", "--home", &home, "--id", "wraith@tags-gone"];
    let (orphan, _) = pane_running(&env, "orphan", &worker);
    wait_until("the orphan's worker ended", WAIT, || {
        env.pane_format(&orphan, "#{pane_dead}").as_deref() == Some("1")
    });
    forge(
        &env,
        &orphan,
        "@teamctl-agent",
        &env.tag("wraith@tags-gone"),
    );

    let (_, report) = doctor_json(&env, &[]);
    assert!(
        !report.contains(&format!("orphaned tmux pane {forged}")),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "tmux pane {forged} carries teamctl's tags for ghost@tags-gone, but its process (pid {sleep}) is not teamctl's"
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "orphaned tmux pane {orphan} tagged wraith@tags-gone"
        )),
        "{report}"
    );

    let (code, report) = doctor_json(&env, &["--fix"]);
    assert_eq!(code, 0, "{report}");
    still_runs(&env, &forged, &sleep, "doctor --fix");
    assert!(
        report.contains(&format!(
            "took teamctl's tags for ghost@tags-gone off tmux pane {forged}"
        )),
        "{report}"
    );
    assert_eq!(
        env.pane_format(&forged, "#{@teamctl-agent}#{@teamctl-pid}"),
        Some(String::new()),
        "the forged tags are off"
    );
    assert_eq!(
        env.pane_format(&orphan, "#{pane_id}"),
        None,
        "the genuine orphan is closed: {report}"
    );
    let (_, report) = doctor_json(&env, &[]);
    assert!(!report.contains(&forged), "nothing left to say: {report}");
}

/// `delete` closes the team's panes wherever they are, found by their tags: panes of the
/// user's with a teammate's or the console's tags forged on them stay, their programs
/// running, while the team's own panes close. (Attacker QA: they were killed.)
#[test]
fn delete_leaves_panes_with_forged_team_tags_running() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-del"]).trim().to_string();
    env.ok(&["spawn", "a", "--exec", ECHO]);
    wait_until("a is idle", WAIT, || env.member_status("a") == "idle");
    let a = env.pane_of(&t, "a");
    let (as_mate, mate_pid) = pane_running(&env, "mine", &["sleep", "100001"]);
    forge(
        &env,
        &as_mate,
        "@teamctl-agent",
        &env.tag(&format!("b@{t}")),
    );
    let (as_console, console_pid) = pane_running(&env, "mine-too", &["sleep", "100002"]);
    forge(&env, &as_console, "@teamctl-console", &env.tag(&t));

    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    still_runs(&env, &as_mate, &mate_pid, "delete (a teammate's tag)");
    still_runs(
        &env,
        &as_console,
        &console_pid,
        "delete (the console's tag)",
    );
    assert_eq!(env.pane_format(&a, "#{pane_id}"), None, "a's pane closes");
    let id = format!("a@{t}");
    wait_until("a's worker ended", WAIT, || env.workers_of(&id).is_empty());
}

/// A `teamctl worker --id w@T` typed in a pane of the user's while w runs: it does not serve
/// w (it says at once why, and ends), and when the user then re-runs w's own pane (`respawn-pane -k`,
/// no command), the worker re-run there is w, in its pane: recorded, answering, the only
/// worker of w. (Attacker QA: the stray, waiting on w's worker lock, took it first at the
/// re-run and served w from the untagged pane; the re-run pane died, `status` said
/// `starting`.)
#[test]
fn a_worker_typed_in_a_pane_of_the_users_does_not_take_a_teammate_over() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-stray"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let pane = env.pane_of(&t, "w");
    let id = format!("w@{t}");
    let first = env.workers_of(&id);
    assert_eq!(first.len(), 1, "{first:?}");

    // The user's shell types the worker's line; its exit code and stderr are kept.
    let stray = TypedWorker::new(&env, &id, "stray", "");
    pane_running(&env, "mine", &["sh", "-c", &stray.line]);
    // Refused at once, no start of w being under way to tag its pane (new-user QA: it waited
    // 10 s for a tag first, in silence).
    wait_until("the stray worker ended", WAIT, || stray.ended());
    let said = stray.refused();
    assert!(
        said.contains(&format!("this worker of {id} will not serve"))
            && said.contains("no start of w is under way"),
        "{said}"
    );

    // The user re-runs w's pane.
    let old = env.pane_format(&pane, "#{pane_pid}").unwrap();
    env.tmux_ok(&["respawn-pane", "-k", "-t", &pane]);
    let rerun = env.pane_format(&pane, "#{pane_pid}").unwrap();
    assert_ne!(rerun, old);
    let shown = || {
        let m = env.member("w");
        (m["status"].clone(), m["paneId"].clone(), m["pid"].clone())
    };
    let want = (
        serde_json::json!("idle"),
        serde_json::json!(pane),
        serde_json::json!(rerun.parse::<u64>().unwrap()),
    );
    wait_until_or_show(
        "w shown idle in its own pane with the re-run worker's pid",
        WAIT,
        || shown() == want,
        || format!("{:?} (want {want:?})", shown()),
    );

    assert!(said.contains("which is not w's pane"), "{said}");

    let answer = env.ok(&["ask", "w", "hello", "--timeout", "20"]);
    assert!(answer.contains("w got: hello"), "{answer}");
    assert_eq!(
        env.pane_format(&pane, "#{pane_pid} #{pane_dead}"),
        Some(format!("{rerun} 0")),
        "w answered from its own pane"
    );
    assert_eq!(
        env.workers_of(&id),
        vec![rerun.parse::<u32>().unwrap()],
        "one worker of w, in its pane"
    );
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// A process of the user's whose argv imitates a teammate's worker (`exec -a`, or a script
/// named `worker` run by `sh`) is not teamctl's: `kill`, `delete` and `doctor --fix` leave it
/// running, and `doctor` does not call it an orphaned worker; the real worker is still ended.
/// (Attacker QA, session 23: all four ended it, its argv being the only thing looked at.)
#[test]
fn a_process_imitating_a_workers_argv_is_left_running() {
    let env = TestEnv::new();
    env.ok(&["create", "tags-argv"]);
    env.ok(&["spawn", "w", "--backend", "process", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let home = env.home_path().display().to_string();
    std::fs::write(env.work.path().join("worker"), "read line\n").unwrap();
    let fake = |id: &str| {
        std::process::Command::new("sh")
            .args(["worker", "--home", &home, "--id", id])
            .current_dir(env.work.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut of_w = fake("w@tags-argv");
    let mut of_gone = fake("gone@tags-argv");
    let started = |pid: u32| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sh\0worker"))
    };
    wait_until("the look-alikes started", WAIT, || {
        started(of_w.id()) && started(of_gone.id())
    });
    let alive = |c: &mut std::process::Child| c.try_wait().unwrap().is_none();

    let report = env.ok(&["doctor"]);
    assert!(!report.contains("orphaned worker"), "{report}");
    env.ok(&["doctor", "--fix"]);
    let real = env.member("w")["pid"].as_u64().expect("w's worker pid") as u32;
    env.ok(&["kill", "w"]);
    wait_until("w's real worker ended", WAIT, || {
        !std::path::Path::new(&format!("/proc/{real}")).exists()
    });
    env.ok(&["delete", "--force"]);
    assert!(
        alive(&mut of_w),
        "kill or delete ended a process that is not teamctl's"
    );
    assert!(
        alive(&mut of_gone),
        "doctor --fix ended a process that is not teamctl's"
    );
    for mut c in [of_w, of_gone] {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// `$TMUX` as a pane of the test's tmux server has it: its socket, then a pid and a session.
fn tmux_env(env: &TestEnv) -> String {
    let socket = env.tmux_ok(&["display-message", "-p", "#{socket_path}"]);
    format!("{},1,0", socket.trim())
}

/// The placement word `name`'s record in `team` holds (`paneNonce`).
fn word_of(env: &TestEnv, team: &str, name: &str) -> String {
    env.recorded(team, name)["paneNonce"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}'s placement word"))
        .to_string()
}

/// The live state `name`'s worker wrote in `team`, as bytes (empty when there is none).
fn live_state(env: &TestEnv, team: &str, name: &str) -> Vec<u8> {
    std::fs::read(
        env.team_dir(team)
            .join("state")
            .join(format!("{name}.json")),
    )
    .unwrap_or_default()
}

/// Run `teamctl worker --home H --id ID` as a user would, outside any pane of teamctl's, with
/// `vars` (on top of the test's environment, without tmux's): it must end on its own, non-zero,
/// saying why it will not serve, and the member's live state in `team` must be as it was (no
/// worker wrote it). Returns what it said.
fn stray_refused(env: &TestEnv, team: &str, name: &str, vars: &[(&str, &str)]) -> String {
    stray_refused_as(env, team, name, vars, None)
}

/// `stray_refused`, the stray started as process `pid` when one is given.
fn stray_refused_as(
    env: &TestEnv,
    team: &str,
    name: &str,
    vars: &[(&str, &str)],
    pid: Option<u32>,
) -> String {
    let before = live_state(env, team, name);
    let id = format!("{name}@{team}");
    let home = env.home_path().display().to_string();
    let err = env.work.path().join(format!("stray-{}.err", vars.len()));
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["worker", "--home", &home, "--id", &id])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("TEAMCTL_PLACED")
        .env_remove("TEAMCTL_PLACEMENT")
        .env_remove("TEAMCTL_COMPANION_PANE")
        .envs(vars.iter().copied())
        .stdin(std::process::Stdio::null());
    // Its terminal: what it shows (stdout) and what `main` prints (stderr), in one file.
    let said_to = std::fs::File::create(&err).unwrap();
    cmd.stdout(said_to.try_clone().unwrap()).stderr(said_to);
    /// Ends the stray however the test ends (it may serve on: that is the failure).
    struct Stray(std::process::Child);
    impl Drop for Stray {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut stray = Stray(match pid {
        Some(pid) => spawn_as(&mut cmd, pid),
        None => cmd.spawn().unwrap(),
    });
    let child = &mut stray.0;
    let pid = child.id();
    // The live state is kept in slots (a header line, then the JSON): its pid read as text.
    // (Written anew: the state a dead worker left may name the same pid.)
    let serves = || {
        let now = live_state(env, team, name);
        now != before && String::from_utf8_lossy(&now).contains(&format!("\"pid\":{pid},"))
    };
    let mut ended = None;
    wait_until_or_show(
        "the stray worker ended (or served)",
        WAIT,
        || {
            ended = child.try_wait().unwrap();
            ended.is_some() || serves()
        },
        || format!("{vars:?}: still running, not refused"),
    );
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    let Some(status) = ended else {
        panic!("{vars:?}: a stray worker serves {id} (it wrote its live state): {said}");
    };
    assert!(!status.success(), "{vars:?}: {said}");
    assert!(
        said.contains(&format!("this worker of {id}")) && said.contains("will not serve"),
        "{vars:?}: {said}"
    );
    // Said once on its terminal (it was twice: the log's note shown, then `main`'s line).
    assert_eq!(
        said.matches("will not serve").count(),
        1,
        "{vars:?}: {said}"
    );
    assert_eq!(
        live_state(env, team, name),
        before,
        "{vars:?}: the refused worker wrote no state"
    );
    said
}

/// `cmd` started as process `pid`, a pid no process has now: the system gives pids in turn,
/// so processes are started until it comes round (each one not `pid` ends before it runs
/// anything; where this test may set the pid the next one gets, `ns_last_pid`, it does).
fn spawn_as(cmd: &mut std::process::Command, pid: u32) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe, and the error is made without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if std::process::id() == pid {
                Ok(())
            } else {
                Err(std::io::Error::from_raw_os_error(11))
            }
        });
    }
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4_194_304);
    for _ in 0..pid_max.saturating_mul(3) {
        let _ = std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string());
        if let Ok(child) = cmd.spawn() {
            return child;
        }
    }
    panic!("pid {pid} never came round (taken by another process each time)");
}

/// End `name`'s worker at once (kill -9), as a crash would: the member is dead, its inbox
/// unserved, its lock free.
fn crash(env: &TestEnv, name: &str) {
    let pid = env.member(name)["pid"]
        .as_u64()
        .expect("a worker pid")
        .to_string();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_until(&format!("{name} dead"), WAIT, || {
        env.member_status(name) == "dead"
    });
}

/// A `teamctl worker --id w@T` started outside tmux (`$TMUX_PANE` unset), or with `$TMUX` and
/// `$TMUX_PANE` copied from w's pane and `TEAMCTL_PLACED` set as teamctl sets it, does not serve
/// w after w's worker crashed: tmux says that pane runs no process of the stray's. It says why
/// and ends, writing nothing; `resume` then brings w back in its place. (Attacker QA, session
/// 24: both served w's inbox.)
#[test]
fn a_stray_worker_without_a_pane_or_with_a_forged_one_does_not_serve_a_tmux_teammate() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-nopane"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let pane = env.pane_of(&t, "w");
    crash(&env, "w");

    stray_refused(&env, &t, "w", &[]);
    let tmux = tmux_env(&env);
    let tag = env.tag(&format!("w@{t}"));
    let said = stray_refused(
        &env,
        &t,
        "w",
        &[
            ("TMUX", &tmux),
            ("TMUX_PANE", &pane),
            ("TEAMCTL_PLACED", &tag),
        ],
    );
    assert!(said.contains("does not run in it"), "{said}");
    // With the word w's record holds, too: no start of w is under way.
    let word = word_of(&env, &t, "w");
    let said = stray_refused(
        &env,
        &t,
        "w",
        &[
            ("TMUX", &tmux),
            ("TMUX_PANE", &pane),
            ("TEAMCTL_PLACED", &tag),
            ("TEAMCTL_PLACEMENT", &word),
        ],
    );
    assert!(said.contains("does not run in it"), "{said}");

    env.ok(&["resume", "w"]);
    let answer = env.ok(&["ask", "w", "hello", "--timeout", "20"]);
    assert!(answer.contains("w got: hello"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// While a spawn of w is under way (held just after it placed w's worker: pause point
/// `placed`, w's start lock held), a worker started by hand as if in w's new pane (`$TMUX_PANE`
/// of that pane, `TEAMCTL_PLACED` as teamctl sets it) with a word that is not the one the spawn
/// recorded is not taken for the worker the spawn placed: tmux is asked, and says the pane runs
/// another process. The spawn then ends well and w answers. (The worker a start placed is
/// taken at its word while the start runs, without asking tmux or waiting for the record.)
#[test]
fn a_stray_worker_with_another_word_is_not_taken_for_the_one_a_start_placed() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-word"]).trim().to_string();
    let agent = format!("w@{t}");
    let gate = env.work.path().join("gate");
    let spawn = env.paused(&["spawn", "w", "--exec", ECHO], "placed", &gate);
    let mut reached = gate.clone().into_os_string();
    reached.push(".reached");
    wait_until("the spawn placed w", WAIT, || {
        std::path::Path::new(&reached).exists()
    });
    let out = env.tmux_ok(&["list-panes", "-a", "-F", "#{pane_id} #{@teamctl-agent}"]);
    let tag = env.tag(&agent);
    let panes: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with(&format!(" {tag}")))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(panes.len(), 1, "w's pane: {out}");
    // The worker the spawn placed runs before its pane is recorded.
    wait_until("w's worker idle", WAIT, || {
        String::from_utf8_lossy(&live_state(&env, &t, "w")).contains("\"status\":\"idle\"")
    });
    let tmux = tmux_env(&env);
    let said = stray_refused(
        &env,
        &t,
        "w",
        &[
            ("TMUX", &tmux),
            ("TMUX_PANE", panes[0]),
            ("TEAMCTL_PLACED", &tag),
            ("TEAMCTL_PLACEMENT", "0123456789abcdef0123456789abcdef"),
        ],
    );
    assert!(said.contains("does not run in it"), "{said}");

    std::fs::write(&gate, "").unwrap();
    let out = spawn.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer = env.ok(&["ask", "w", "hello", "--timeout", "20"]);
    assert!(answer.contains("w got: hello"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// With w's worker running and w's start lock held by someone else (as if a start were under
/// way), a worker started by hand as if in w's pane with the word w's record holds is not taken
/// at that word: the record names another live worker of w, so tmux is asked, and says the
/// pane runs another process. (Attacker QA, session 33: held with `flock` by hand, it served.)
#[test]
fn a_copied_word_is_not_taken_while_the_recorded_worker_runs() {
    use std::os::fd::AsRawFd;
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-live"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let pane = env.pane_of(&t, "w");
    let word = word_of(&env, &t, "w");
    let locks = env.team_dir(&t).join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(locks.join("w.start"))
        .unwrap();
    // SAFETY: flock on a descriptor this test holds open.
    assert_eq!(
        unsafe { nix::libc::flock(lock.as_raw_fd(), nix::libc::LOCK_EX) },
        0
    );
    let tmux = tmux_env(&env);
    let tag = env.tag(&format!("w@{t}"));
    let said = stray_refused(
        &env,
        &t,
        "w",
        &[
            ("TMUX", &tmux),
            ("TMUX_PANE", &pane),
            ("TEAMCTL_PLACED", &tag),
            ("TEAMCTL_PLACEMENT", &word),
        ],
    );
    assert!(said.contains("does not run in it"), "{said}");
    // SAFETY: as above.
    assert_eq!(
        unsafe { nix::libc::flock(lock.as_raw_fd(), nix::libc::LOCK_UN) },
        0
    );
    let answer = env.ok(&["ask", "w", "hello", "--timeout", "20"]);
    assert!(answer.contains("w got: hello"), "{answer}");

    // w killed: its record still names its pid and pane with that word. The same stray, with
    // the start lock held by hand again, is not taken for a worker a start placed (attacker
    // QA: with the recorded worker gone, it served w).
    env.ok(&["kill", "w"]);
    wait_until("w's worker ended", WAIT, || {
        env.workers_of(&format!("w@{t}")).is_empty()
    });
    assert_eq!(word_of(&env, &t, "w"), word);
    // SAFETY: flock on a descriptor this test holds open.
    assert_eq!(
        unsafe { nix::libc::flock(lock.as_raw_fd(), nix::libc::LOCK_EX) },
        0
    );
    stray_refused(
        &env,
        &t,
        "w",
        &[
            ("TMUX", &tmux),
            ("TMUX_PANE", &pane),
            ("TEAMCTL_PLACED", &tag),
            ("TEAMCTL_PLACEMENT", &word),
        ],
    );
    drop(lock);
    env.ok(&["resume", "w"]);
    let answer = env.ok(&["ask", "w", "again", "--timeout", "20"]);
    assert!(answer.contains("w got: again"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// A worker typed in any other spelling than the one teamctl starts (`worker --home ABSOLUTE
/// --id ID`, its tag to `kill`, `resume` and `delete`) is refused at once, reading and writing
/// nothing: `--id=ID`, the home from `TEAMCTL_HOME`, a relative `--home` (another place from
/// another directory). (Attacker QA, session 33: one started as `worker --id=bob@T` with the
/// recorded word served bob, and outlived `kill` and `delete --force`.)
#[test]
fn a_worker_spelled_otherwise_than_teamctl_starts_it_is_refused() {
    let env = TestEnv::new();
    let t = env.ok(&["create", "tags-spell"]).trim().to_string();
    env.ok(&["spawn", "p", "--backend", "process", "--exec", ECHO]);
    wait_until("p is idle", WAIT, || env.member_status("p") == "idle");
    env.ok(&["kill", "p"]);
    let before = live_state(&env, &t, "p");
    let id = format!("p@{t}");
    let word = env.recorded(&t, "p")["paneNonce"]
        .as_str()
        .map(String::from)
        .unwrap_or_default();
    let home = env.home_path();
    let parent = home.parent().unwrap();
    let base = home.file_name().unwrap().to_str().unwrap().to_string();
    let with_id = format!("--id={id}");
    for args in [
        vec!["worker", with_id.as_str()],
        vec!["worker", "--id", id.as_str()],
        vec!["worker", "--home", base.as_str(), "--id", id.as_str()],
    ] {
        let out = env
            .cmd(&args)
            .current_dir(parent)
            .env("TEAMCTL_PLACEMENT", &word)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("is internal"), "{args:?}: {said}");
    }
    assert_eq!(live_state(&env, &t, "p"), before, "a refused worker wrote");
    assert_ne!(env.member_status("p"), "idle");
    env.ok(&["delete", "--force"]);
}

/// The same for a teammate on the process backend: a worker typed by hand is not the process
/// spawn started (the member's record names another pid, and no start is under way), so it
/// does not serve; `resume` still does. (Attacker QA, session 24.)
#[test]
fn a_stray_worker_does_not_serve_a_process_teammate() {
    let env = TestEnv::new();
    let t = env.ok(&["create", "tags-proc"]).trim().to_string();
    env.ok(&["spawn", "p", "--backend", "process", "--exec", ECHO]);
    wait_until("p is idle", WAIT, || env.member_status("p") == "idle");
    crash(&env, "p");

    stray_refused(&env, &t, "p", &[]);
    // Nor with the word of p's placement copied from the record (attacker QA: with the pid
    // recorded gone, the word alone let it serve p).
    let word = word_of(&env, &t, "p");
    stray_refused(&env, &t, "p", &[("TEAMCTL_PLACEMENT", &word)]);

    env.ok(&["resume", "p"]);
    let answer = env.ok(&["ask", "p", "hello", "--timeout", "20"]);
    assert!(answer.contains("p got: hello"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// A worker in a pane of another tmux server, with the pane id w's record names (every server
/// counts its panes from %0) and w's tag and placement word set on it, does not serve w after
/// w was killed: that pane is not on the server teamctl recorded. It says so and ends;
/// `resume` brings w back. (Attacker QA, session 35: it served w, and `resume` then said w was
/// already running.)
#[test]
fn a_pane_with_the_recorded_id_on_another_server_does_not_serve_a_killed_member() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-server"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let id = format!("w@{t}");
    let pane = env.pane_of(&t, "w");
    let word = word_of(&env, &t, "w");
    env.ok(&["kill", "w"]);
    let before = live_state(&env, &t, "w");

    // Another server: one of another name, then one of w's server's very name in another
    // socket directory (`TMUX_TMPDIR`, which the worker in it has too: attacker QA, its
    // directory was taken from the worker's own environment).
    let elsewhere = tempfile::tempdir().unwrap();
    let ours = env.socket.clone().unwrap();
    for (round, (name, tmpdir)) in [
        (format!("{ours}-other"), None),
        (ours.clone(), Some(elsewhere.path())),
    ]
    .into_iter()
    .enumerate()
    {
        let other = OtherServer { name, tmpdir };
        other.run(&["new-session", "-d", "-s", "theirs", "--", "cat"]);
        let has_it = || {
            other
                .run(&["list-panes", "-a", "-F", "#{pane_id}"])
                .lines()
                .any(|p| p == pane)
        };
        for _ in 0..64 {
            if has_it() {
                break;
            }
            other.run(&["new-window", "-d", "-t", "theirs", "--", "cat"]);
        }
        assert!(has_it(), "pane {pane} on the other server");
        other.run(&[
            "set-option",
            "-p",
            "-t",
            &pane,
            "@teamctl-agent",
            &env.tag(&id),
        ]);
        other.run(&["set-option", "-p", "-t", &pane, "@teamctl-nonce", &word]);
        other.run(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
        let typed = TypedWorker::new(&env, &id, &format!("other{round}"), "");
        other.run(&["respawn-pane", "-k", "-t", &pane, "sh", "-c", &typed.line]);
        wait_until("the worker on the other server ended", WAIT, || {
            typed.ended()
        });
        let said = typed.refused();
        assert!(
            said.contains(&format!("this worker of {id} will not serve"))
                && said.contains("another tmux server"),
            "{round}: {said}"
        );
        assert_eq!(
            live_state(&env, &t, "w"),
            before,
            "{round}: it wrote no state"
        );
    }

    env.ok(&["resume", "w"]);
    let answer = env.ok(&["ask", "w", "hello", "--timeout", "20"]);
    assert!(answer.contains("w got: hello"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// A tmux server of a test's own (`-L NAME`, in `TMUX_TMPDIR` when given), ended when dropped.
struct OtherServer<'a> {
    name: String,
    tmpdir: Option<&'a std::path::Path>,
}

impl OtherServer<'_> {
    fn run(&self, args: &[&str]) -> String {
        let mut cmd = std::process::Command::new("tmux");
        cmd.env_remove("TMUX").env_remove("TMUX_TMPDIR");
        if let Some(dir) = self.tmpdir {
            cmd.env("TMUX_TMPDIR", dir);
        }
        let out = cmd.arg("-L").arg(&self.name).args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for OtherServer<'_> {
    fn drop(&mut self) {
        let mut cmd = std::process::Command::new("tmux");
        cmd.env_remove("TMUX").env_remove("TMUX_TMPDIR");
        if let Some(dir) = self.tmpdir {
            cmd.env("TMUX_TMPDIR", dir);
        }
        let _ = cmd.arg("-L").arg(&self.name).arg("kill-server").output();
    }
}

/// A worker started as the very pid a crashed process teammate's worker had (forked until the
/// system gave that pid again) is not that worker: teamctl recorded the worker's start time
/// with its pid, and this one started later. Refused; `resume` brings the teammate back.
/// (Attacker QA, session 34: the pid alone was taken, and the forged worker served.)
#[test]
fn a_worker_given_a_crashed_workers_pid_again_does_not_serve() {
    let env = TestEnv::new();
    let t = env.ok(&["create", "tags-pid"]).trim().to_string();
    env.ok(&["spawn", "p", "--backend", "process", "--exec", ECHO]);
    wait_until("p is idle", WAIT, || env.member_status("p") == "idle");
    let recorded = env.recorded(&t, "p");
    let pid = u32::try_from(recorded["pid"].as_u64().expect("a pid")).unwrap();
    assert!(recorded["pidStarted"].is_u64(), "{recorded}");
    crash(&env, "p");
    wait_until("the crashed worker's pid is free", WAIT, || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });

    let said = stray_refused_as(&env, &t, "p", &[], Some(pid));
    assert!(said.contains("started at another time"), "{said}");

    env.ok(&["resume", "p"]);
    let answer = env.ok(&["ask", "p", "hello", "--timeout", "20"]);
    assert!(answer.contains("p got: hello"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// A program of the user's started with a (non-interactive) teammate's identity in its
/// environment (`env TEAMCTL_AGENT_ID=w@T TEAMCTL_HOME=H sleep`), in a pane with w's tags forged
/// on it, is not teamctl's pane: that environment is how an interactive teammate's agent is
/// known, and w's pane runs its worker. `doctor` calls it no orphan and `doctor --fix` leaves
/// it running; `delete` leaves it running too. (Attacker QA, sessions 24 and 25: both closed
/// it, then `delete` ended its program.)
#[test]
fn a_pane_forged_with_a_teammates_environment_is_left_running() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-envpane"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let id = format!("w@{t}");
    let home = std::fs::canonicalize(env.home_path()).unwrap();
    let home = home.display().to_string();
    let agent_id = format!("TEAMCTL_AGENT_ID={id}");
    let team_home = format!("TEAMCTL_HOME={home}");
    let (forged, sleep) = pane_running(
        &env,
        "mine",
        &["env", &agent_id, &team_home, "sleep", "100004"],
    );
    forge(&env, &forged, "@teamctl-agent", &env.tag(&id));

    let (_, report) = doctor_json(&env, &[]);
    assert!(
        !report.contains(&format!("orphaned tmux pane {forged}")),
        "{report}"
    );
    env.ok(&["doctor", "--fix"]);
    still_runs(&env, &forged, &sleep, "doctor --fix");
    // `delete` ends the processes carrying w's identity and the word of w's placement
    // (`backend::ending`: a turn's leftovers are found so); this `sleep` lacks the word: it
    // runs on, in its pane.
    forge(&env, &forged, "@teamctl-agent", &env.tag(&id));
    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    still_runs(&env, &forged, &sleep, "delete");
    wait_until("w's worker ended", WAIT, || env.workers_of(&id).is_empty());
}

/// A dead pane of the user's (remain-on-exit: nothing runs in it to check) with a teammate's
/// tags forged on it lacks the nonce teamctl set on the teammate's own pane and recorded with
/// it: `doctor` warns of it and `doctor --fix` and `delete` leave it open, its tags taken off
/// and its own `remain-on-exit` kept, while the teammate's own pane closes. (Attacker QA,
/// session 24: both closed it; with the setting taken off, tmux closed it as the team's
/// session went, one run in six.)
#[test]
fn a_dead_pane_with_forged_tags_is_left_open() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-dead"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let id = format!("w@{t}");
    let own = env.pane_of(&t, "w");
    assert!(
        env.recorded(&t, "w")["paneNonce"].is_string(),
        "{}",
        env.recorded(&t, "w")
    );
    let (forged, _) = pane_running(&env, "mine", &["true"]);
    wait_until("the user's pane is dead", WAIT, || {
        env.pane_format(&forged, "#{pane_dead}").as_deref() == Some("1")
    });
    forge(&env, &forged, "@teamctl-agent", &env.tag(&id));

    let (_, report) = doctor_json(&env, &[]);
    assert!(
        report.contains(&format!(
            "tmux pane {forged} carries teamctl's tags for {id}, but it is dead"
        )),
        "{report}"
    );
    let (_, report) = doctor_json(&env, &["--fix"]);
    assert_eq!(
        env.pane_format(&forged, "#{pane_id}"),
        Some(forged.clone()),
        "doctor --fix closed the dead pane: {report}"
    );
    // Only the tags come off: the pane's own setting is the user's, not teamctl's (it was
    // unset, and tmux then closed the dead pane as the team's session went).
    assert_eq!(
        env.pane_format(&forged, "#{remain-on-exit}").as_deref(),
        Some("on"),
        "doctor --fix took the user's remain-on-exit off"
    );
    forge(&env, &forged, "@teamctl-agent", &env.tag(&id));
    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        env.pane_format(&forged, "#{pane_id}"),
        Some(forged.clone()),
        "delete closed the dead pane"
    );
    assert_eq!(
        env.pane_format(&forged, "#{@teamctl-agent}"),
        Some(String::new()),
        "its forged tags are off"
    );
    assert_eq!(
        env.pane_format(&forged, "#{remain-on-exit}").as_deref(),
        Some("on"),
        "delete took the user's remain-on-exit off"
    );
    assert_eq!(
        env.pane_format(&own, "#{pane_id}"),
        None,
        "w's own pane closes"
    );
    wait_until("w's worker ended", WAIT, || env.workers_of(&id).is_empty());
}

/// A pane of the user's with a teammate's tags forged on it (`@teamctl-agent`, `@teamctl-pid`)
/// while the teammate's record names no pane yet (a start cut short before it recorded one:
/// `starting`): a `teamctl worker` started in it does not serve, for the pane lacks the word
/// teamctl recorded for the placement it made (`@teamctl-nonce`), and no start is under way to
/// record it. It says why and ends, writing nothing; `resume` then starts the teammate. (Attacker
/// QA, session 25: a record naming no pane let such a worker serve.)
#[test]
fn a_worker_in_a_forged_pane_does_not_serve_a_member_with_no_pane_recorded() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-unplaced"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    env.ok(&["kill", "w"]);
    let id = format!("w@{t}");
    wait_until("w's worker ended", WAIT, || env.workers_of(&id).is_empty());
    // The record as a start cut short after recording w leaves it: no pane, no pid.
    let path = env.team_dir(&t).join("config.json");
    let mut cfg = env.config(&t);
    for m in cfg["members"].as_array_mut().unwrap() {
        if m["name"] == "w" {
            let m = m.as_object_mut().unwrap();
            m.remove("paneId");
            m.remove("pid");
            m.insert("status".into(), "starting".into());
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&cfg).unwrap()).unwrap();
    let before = live_state(&env, &t, "w");

    // The user's pane, w's tags forged on it, then the worker's line typed there.
    refused_in_forged_pane(&env, &t, &[], &before);
}

/// w killed (its record names its closed pane and keeps that placement's word): a pane of the
/// user's with w's tag and that word copied onto it (`@teamctl-nonce`) is not w's pane, for
/// the record names another; a `teamctl worker` typed there says why and ends, writing
/// nothing, and `resume` starts w. (Attacker QA, session 32: the copied word let it serve.)
#[test]
fn a_word_copied_onto_another_pane_does_not_serve_a_killed_member() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-copied"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let id = format!("w@{t}");
    env.ok(&["kill", "w"]);
    wait_until("w's worker ended", WAIT, || env.workers_of(&id).is_empty());
    let word = word_of(&env, &t, "w");
    assert!(!env.recorded(&t, "w")["paneId"].is_null());
    let before = live_state(&env, &t, "w");

    refused_in_forged_pane(&env, &t, &[("@teamctl-nonce", &word)], &before);
}

/// The shell line of a hand-typed `teamctl worker --id ID` (after `first`, as `read go; `), its
/// stderr and exit code kept in `STEM.err` and `STEM.code` in the test's work directory.
struct TypedWorker {
    line: String,
    err: std::path::PathBuf,
    code: std::path::PathBuf,
}

impl TypedWorker {
    fn new(env: &TestEnv, id: &str, stem: &str, first: &str) -> TypedWorker {
        let err = env.work.path().join(format!("{stem}.err"));
        let code = env.work.path().join(format!("{stem}.code"));
        let line = format!(
            "{first}'{BIN}' worker --home '{}' --id '{id}' 2>'{}'; echo $? >'{}'",
            env.home_path().display(),
            err.display(),
            code.display()
        );
        TypedWorker { line, err, code }
    }

    /// Whether it has ended (its exit code written).
    fn ended(&self) -> bool {
        std::fs::read_to_string(&self.code).is_ok_and(|c| c.ends_with('\n'))
    }

    /// What it said on stderr, once ended, its exit code checked to be non-zero.
    fn refused(&self) -> String {
        let said = std::fs::read_to_string(&self.err).unwrap();
        assert_ne!(
            std::fs::read_to_string(&self.code).unwrap().trim(),
            "0",
            "{said}"
        );
        said
    }
}

/// A pane of the user's with w's tag forged on it (and the pane options `extra`), the line of
/// w's worker then typed there: it must end non-zero, saying the pane is not w's, writing no
/// state (w's live state still `before`); then `resume` starts w, which answers, and the team
/// is deleted with nothing left.
fn refused_in_forged_pane(env: &TestEnv, t: &str, extra: &[(&str, &str)], before: &[u8]) {
    let id = format!("w@{t}");
    let typed = TypedWorker::new(env, &id, "forged", "read go; ");
    let (pane, _) = pane_running(env, "mine", &["sh", "-c", &typed.line]);
    forge(env, &pane, "@teamctl-agent", &env.tag(&id));
    for (option, value) in extra {
        env.tmux_ok(&["set-option", "-p", "-t", &pane, option, value]);
    }
    env.tmux_ok(&["send-keys", "-t", &pane, "go", "Enter"]);
    wait_until_or_show(
        "the worker in the forged pane ended",
        WAIT,
        || typed.ended(),
        || {
            format!(
                "it serves w: live state {}",
                String::from_utf8_lossy(&live_state(env, t, "w"))
            )
        },
    );
    let said = typed.refused();
    assert!(
        said.contains(&format!("this worker of {id} will not serve"))
            && said.contains("which is not w's pane"),
        "{said}"
    );
    assert_eq!(
        live_state(env, t, "w"),
        before,
        "the refused worker wrote no state"
    );

    env.ok(&["resume", "w"]);
    let answer = env.ok(&["ask", "w", "hello", "--timeout", "20"]);
    assert!(answer.contains("w got: hello"), "{answer}");
    env.ok(&["delete", "--force"]);
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// `delete` ends what a teammate's turns left running (a `setsid sleep` the turn started, in a
/// session of its own, which outlived the worker, killed), found by the identity and the word
/// of its placement that teamctl gives every turn (`TEAMCTL_PLACEMENT`); a program of the
/// user's started with the same `TEAMCTL_AGENT_ID` and `TEAMCTL_HOME` (anyone can set those)
/// runs on. (Attacker QA, session 25: `delete` ended it.)
#[test]
fn delete_ends_a_turns_leftovers_but_not_a_program_with_a_teammates_identity() {
    let env = TestEnv::new();
    let t = env.ok(&["create", "tags-envwalk"]).trim().to_string();
    let left = env.work.path().join("left.pid");
    // The turn ends once its leftover runs in a session of its own (the turn's group is
    // ended with the turn).
    let exec = format!(
        "setsid sh -c 'echo $$ >\"$0.new\"; mv \"$0.new\" \"$0\"; exec sleep 100008' '{0}' </dev/null >/dev/null 2>&1 & until [ -s '{0}' ]; do sleep 0.01; done; cat",
        left.display()
    );
    env.ok(&["spawn", "w", "--backend", "process", "--exec", &exec]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    env.ok(&["send", "w", "go"]);
    wait_until("the turn's leftover started", WAIT, || {
        std::fs::read_to_string(&left).is_ok_and(|p| p.ends_with('\n'))
    });
    let leftover = std::fs::read_to_string(&left).unwrap().trim().to_string();
    assert!(runs(&leftover), "{}", env.ok(&["log", "--worker", "w"]));
    crash(&env, "w");
    assert!(runs(&leftover), "the leftover outlived the killed worker");

    let id = format!("w@{t}");
    let home = std::fs::canonicalize(env.home_path()).unwrap();
    let mut mine = std::process::Command::new("sleep")
        .arg("100009")
        .env("TEAMCTL_AGENT_ID", &id)
        .env("TEAMCTL_HOME", &home)
        .spawn()
        .unwrap();
    let out = env.run(&["delete", "--force"]);
    let alive = mine.try_wait().unwrap().is_none();
    let _ = mine.kill();
    let _ = mine.wait();
    assert!(out.status.success(), "{out:?}");
    assert!(alive, "delete ended a program of the user's");
    wait_until("the turn's leftover ended", WAIT, || !runs(&leftover));
}

/// Tags of a team that is gone forged on a pane of a session of the user's (a pane option,
/// which a per-session listing reads through the session's active pane) do not make the
/// session the team's: `doctor` does not report it as a gone team's session, and `--fix`
/// neither closes it nor says it did (attacker QA: "closed tmux session u-sleep of team
/// gone", which stayed open).
#[test]
fn a_users_session_with_a_gone_teams_tags_on_a_pane_is_not_the_teams() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "tags-here"]);
    let (pane, pid) = pane_running(&env, "u-sleep", &["sleep", "600"]);
    forge(&env, &pane, "@teamctl-team", &env.tag("gone"));
    forge(&env, &pane, "@teamctl-agent", &env.tag("zed@gone"));
    let (_, report) = doctor_json(&env, &[]);
    assert!(!report.contains("u-sleep"), "{report}");
    let (_, report) = doctor_json(&env, &["--fix"]);
    assert!(!report.contains("closed tmux session u-sleep"), "{report}");
    still_runs(&env, &pane, &pid, "doctor --fix");
    assert!(
        env.tmux(&["has-session", "-t", "=u-sleep"])
            .status
            .success()
    );
}

/// Tags forged on a pane of the user's that the user then runs again with another program:
/// they name a process the pane no longer runs, as on a pane teamctl placed and the user
/// respawned, but the pane lacks the nonce teamctl sets with its own settings. `doctor --fix`
/// and `delete` take the tags off and leave the user's own `remain-on-exit` (attacker QA:
/// it was unset, and the pane closed when its program ended).
#[test]
fn forged_tags_on_a_respawned_pane_of_the_users_take_none_of_its_settings() {
    let env = TestEnv::with_tmux();
    let t = env.ok(&["create", "tags-respawned"]).trim().to_string();
    env.ok(&["spawn", "w", "--exec", ECHO]);
    wait_until("w is idle", WAIT, || env.member_status("w") == "idle");
    let id = format!("w@{t}");
    let (forged, _) = pane_running(&env, "mine", &["sleep", "600"]);
    for round in ["doctor --fix", "delete"] {
        forge(&env, &forged, "@teamctl-agent", &env.tag(&id));
        env.tmux_ok(&["respawn-pane", "-k", "-t", &forged, "sleep", "601"]);
        let report = if round == "delete" {
            let out = env.run(&["delete", "--force"]);
            assert!(out.status.success(), "{out:?}");
            format!("{out:?}")
        } else {
            doctor_json(&env, &["--fix"]).1
        };
        assert_eq!(
            env.pane_format(&forged, "#{@teamctl-agent}"),
            Some(String::new()),
            "{round}: {report}"
        );
        assert_eq!(
            env.pane_format(&forged, "#{remain-on-exit}").as_deref(),
            Some("on"),
            "{round} took the user's remain-on-exit off: {report}"
        );
    }
}
