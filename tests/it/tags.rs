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
/// w (it says why, and ends), and when the user then re-runs w's own pane (`respawn-pane -k`,
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
    let err = env.work.path().join("stray.err");
    let code = env.work.path().join("stray.code");
    let line = format!(
        "'{BIN}' worker --home '{}' --id '{id}' 2>'{}'; echo $? >'{}'",
        env.home_path().display(),
        err.display(),
        code.display()
    );
    pane_running(&env, "mine", &["sh", "-c", &line]);
    wait_until("the stray worker started", WAIT, || {
        env.workers_of(&id).len() == 2
    });

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

    wait_until("the stray worker ended", Duration::from_mins(1), || {
        std::fs::read_to_string(&code).is_ok_and(|c| c.ends_with('\n'))
    });
    let said = std::fs::read_to_string(&err).unwrap();
    assert_ne!(
        std::fs::read_to_string(&code).unwrap().trim(),
        "0",
        "{said}"
    );
    assert!(
        said.contains(&format!("this worker of {id} will not serve"))
            && said.contains("which is not w's pane"),
        "{said}"
    );

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
