//! End-to-end tests of the tmux backend (SPEC section 8) against a private tmux server per
//! test (`TestEnv::with_tmux`, killed on drop): placement inside and outside tmux, tags,
//! liveness, tag-checked kills, the user's options left alone, resume after a server restart
//! and attach; and `kill` during a turn on both backends. They fail, never pass, when tmux is
//! missing.

use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(20);
/// Replies with the agent's name and the message text.
const ECHO: &str = "printf '%s got: ' \"$TEAMCTL_AGENT_NAME\"; cat";

/// A team named after the test: agent ids (`NAME@TEAM`) are process tags on the whole
/// machine, so tests running side by side must not share them.
fn team(env: &TestEnv, name: &str) -> String {
    env.ok(&["create", name]).trim().to_string()
}

fn spawn(env: &TestEnv, name: &str) {
    env.ok(&["spawn", name, "--exec", ECHO]);
}

fn recorded<'a>(cfg: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    cfg["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in config"))
}

/// The agent tags of every pane on the private server (empty for untagged panes).
fn tags(env: &TestEnv) -> Vec<String> {
    let out = env.tmux(&["list-panes", "-a", "-F", "#{@teamctl-agent}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// A session on the private server standing for the user's own work; its first pane.
/// `user_session`, too narrow for the leader's window to be split: teammates go to a new
/// window of it.
fn narrow_user_session(env: &TestEnv) -> String {
    user_session_of(env, "30", "20")
}

fn user_session(env: &TestEnv) -> String {
    user_session_of(env, "200", "60")
}

fn user_session_of(env: &TestEnv, width: &str, height: &str) -> String {
    env.tmux_ok(&[
        "new-session",
        "-d",
        "-s",
        "user",
        "-x",
        width,
        "-y",
        height,
        "-P",
        "-F",
        "#{pane_id}",
    ])
    .trim()
    .to_string()
}

/// `teamctl ARGS` as the leader runs it in pane `leader` of the private server (inside tmux).
fn inside(env: &TestEnv, leader: &str, args: &[&str]) -> std::process::Command {
    let socket = env
        .tmux_ok(&["display-message", "-p", "#{socket_path}"])
        .trim()
        .to_string();
    let mut c = env.cmd(args);
    c.env("TMUX", format!("{socket},1,0"))
        .env("TMUX_PANE", leader);
    c
}

fn ask(env: &TestEnv, name: &str, text: &str) -> String {
    env.ok(&["ask", name, text, "--timeout", "20"])
}

fn is_worker_pid(pid: u32, agent_id: &str) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    args.contains(&&b"worker"[..]) && args.contains(&agent_id.as_bytes())
}

/// Worker processes of this test's home still running.
fn workers(env: &TestEnv) -> Vec<u32> {
    env.processes()
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmdline.split(|b| *b == 0).any(|a| a == b"worker")
        })
        .collect()
}

#[test]
fn three_teammates_outside_tmux_get_tagged_worker_panes_in_the_team_session() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-outside");
    for n in ["a", "b", "c"] {
        spawn(&env, n);
    }
    let session = env.session(&t);
    env.tmux_ok(&["has-session", "-t", &format!("={session}")]);
    let cfg = env.config(&t);
    assert_eq!(cfg["tmuxSession"], session.as_str());
    for n in ["a", "b", "c"] {
        let m = recorded(&cfg, n);
        assert_eq!(m["backendType"], "tmux");
        let pane = m["paneId"].as_str().unwrap();
        assert!(pane.starts_with('%'), "{pane}");
        let id = format!("{n}@{t}");
        let tag = env.tag(&id);
        assert_eq!(
            env.pane_format(pane, "#{@teamctl-agent}").as_deref(),
            Some(tag.as_str())
        );
        assert_eq!(
            env.pane_format(pane, "#{session_name} #{pane_title}")
                .unwrap(),
            format!("{session} {n}")
        );
        let start = env.pane_format(pane, "#{pane_start_command}").unwrap();
        assert!(start.contains("worker") && start.contains(&id), "{start}");
        let pid: u32 = env
            .pane_format(pane, "#{pane_pid}")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(m["pid"], pid);
        assert!(
            is_worker_pid(pid, &id),
            "pane {pane} does not run {id}'s worker"
        );
    }
    for n in ["a", "b", "c"] {
        assert_eq!(ask(&env, n, "hello").trim(), format!("{n} got: hello"));
        // The worker replies first, then records itself idle.
        wait_until("idle after the reply", Duration::from_secs(20), || {
            env.member_status(n) == "idle"
        });
    }
}

#[test]
fn inside_tmux_teammates_split_off_the_leaders_pane_without_taking_focus() {
    let env = TestEnv::with_tmux();
    let leader = user_session(&env);
    // The user works in another pane of the same window: it is the active one.
    let busy = env
        .tmux_ok(&["split-window", "-t", &leader, "-P", "-F", "#{pane_id}"])
        .trim()
        .to_string();
    let active = || env.tmux_ok(&["display-message", "-p", "-t", "=user:", "#{pane_id}"]);
    assert_eq!(active().trim(), busy);
    let window = env.pane_format(&leader, "#{window_id}").unwrap();
    let window_options = env.tmux_ok(&["show-options", "-w", "-t", &window]);
    let t = team(&env, "tm-inside");
    // Once with only $TMUX naming the server, once with TEAMCTL_TMUX_SOCKET consistent.
    let out = inside(&env, &leader, &["spawn", "a", "--exec", ECHO])
        .env_remove("TEAMCTL_TMUX_SOCKET")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = inside(&env, &leader, &["spawn", "b", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for n in ["a", "b"] {
        let pane = env.pane_of(&t, n);
        assert_eq!(env.pane_format(&pane, "#{window_id}").unwrap(), window);
    }
    assert_eq!(active().trim(), busy, "spawning moved the focus");
    let sessions = env.tmux_ok(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(
        sessions.trim(),
        "user",
        "no team session is made inside tmux"
    );
    assert!(env.config(&t).get("tmuxSession").is_none());
    assert_eq!(
        env.tmux_ok(&["show-options", "-w", "-t", &window]),
        window_options,
        "the user's window options changed"
    );
    assert_eq!(ask(&env, "b", "hi").trim(), "b got: hi");
}

/// A spawn beside the leader's pane (inside tmux) whose tmux client is killed once the server
/// made the split: the pane is not tagged yet (its tags go on in a later call), so only the
/// worker's environment names the start. The spawn fails, and the worker it started is ended
/// (its pane closes with it); spawned again, the teammate answers, alone. (Attacker QA: the
/// worker ran on in an untagged pane of the user's window, the member forgotten; a second
/// spawn then failed, "another worker of bob is running".)
#[test]
fn inside_tmux_a_spawn_whose_client_is_killed_after_the_split_leaves_no_worker() {
    let mut env = TestEnv::with_tmux();
    let leader = user_session(&env);
    let armed = env.kill_tmux_client_after("split-window");
    let t = team(&env, "tm-inside-killed");
    let spawn = |env: &TestEnv| {
        inside(env, &leader, &["spawn", "a", "--exec", ECHO])
            .output()
            .unwrap()
    };
    std::fs::write(&armed, "").unwrap();
    let out = spawn(&env);
    assert!(
        !armed.exists(),
        "no split went through the wrapper: {out:?}"
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let agent = format!("a@{t}");
    wait_until("a's worker ended", Duration::from_secs(20), || {
        env.workers_of(&agent).is_empty()
    });
    let window = env.pane_format(&leader, "#{window_id}").unwrap();
    wait_until(
        "only the leader's pane left",
        Duration::from_secs(20),
        || {
            env.tmux_ok(&["list-panes", "-t", &window, "-F", "#{pane_id}"])
                .trim()
                == leader
        },
    );
    let out = spawn(&env);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(ask(&env, "a", "hi").trim(), "a got: hi");
    assert_eq!(env.workers_of(&agent).len(), 1);
}

/// The panes of the user's session `=user`, by id.
fn user_panes(env: &TestEnv) -> String {
    env.tmux_ok(&["list-panes", "-s", "-t", "=user", "-F", "#{pane_id}"])
        .trim()
        .to_string()
}

/// Inside tmux with the leader's window too narrow to split, a teammate goes to a new window
/// of the leader's session. A spawn whose tmux client is killed once the server put the worker
/// there left that pane dead in the user's session (the window keeps dead panes), untagged:
/// its tags went on in a later call, so the failed start's sweep could not tell it was its
/// (attacker QA 37). Now it is tagged as the worker goes in, and closed with the failed start.
#[test]
fn inside_tmux_a_spawn_killed_as_it_fills_a_window_of_the_users_session_leaves_nothing() {
    let mut env = TestEnv::with_tmux();
    let leader = narrow_user_session(&env);
    let armed = env.kill_tmux_client_after("respawn-pane");
    let t = team(&env, "tm-inside-narrow");
    let spawn = |env: &TestEnv| {
        inside(env, &leader, &["spawn", "a", "--exec", ECHO])
            .output()
            .unwrap()
    };
    std::fs::write(&armed, "").unwrap();
    let out = spawn(&env);
    assert!(
        !armed.exists(),
        "no respawn went through the wrapper: {out:?}"
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let agent = format!("a@{t}");
    wait_until("a's worker ended", WAIT, || {
        env.workers_of(&agent).is_empty()
    });
    wait_until(
        "only the leader's pane left in the user's session",
        WAIT,
        || user_panes(&env) == leader,
    );
    let out = spawn(&env);
    assert!(out.status.success(), "{out:?}");
    let pane = env.pane_of(&t, "a");
    assert_eq!(
        env.pane_format(&pane, "#{session_name}").as_deref(),
        Some("user")
    );
    assert_eq!(ask(&env, "a", "hi").trim(), "a got: hi");
    assert_eq!(env.workers_of(&agent).len(), 1);
}

/// Inside tmux, a split of the leader's window that tmux made but whose client said "no space
/// for new pane": spawn went on to a new window and started a second worker there, the first
/// running on in an untagged pane of the user's window (attacker QA 37). Now a split there
/// holds a placeholder until the worker goes in, and one said to have failed is closed: one
/// worker, no placeholder left.
#[test]
fn inside_tmux_a_split_said_to_fail_that_tmux_made_leaves_one_worker_and_no_placeholder() {
    let mut env = TestEnv::with_tmux();
    let leader = user_session(&env);
    let armed = env.tmux_client_on(
        "split-window",
        "\"$REAL\" \"$@\"; echo 'no space for new pane' >&2; exit 1",
    );
    let t = team(&env, "tm-inside-said");
    std::fs::write(&armed, "").unwrap();
    let out = inside(&env, &leader, &["spawn", "a", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(
        !armed.exists(),
        "no split went through the wrapper: {out:?}"
    );
    assert!(out.status.success(), "{out:?}");
    let agent = format!("a@{t}");
    assert_eq!(ask(&env, "a", "hi").trim(), "a got: hi");
    // One worker serves (a process that loses the worker lock to it may be seen as it ends).
    wait_until("one worker of a", WAIT, || {
        env.workers_of(&agent).len() == 1
    });
    let window = env.pane_format(&leader, "#{window_id}").unwrap();
    assert_eq!(
        env.tmux_ok(&["list-panes", "-t", &window, "-F", "#{pane_id}"])
            .trim(),
        leader,
        "the split said to have failed is still there"
    );
    let starts = env.tmux_ok(&["list-panes", "-a", "-F", "#{pane_start_command}"]);
    assert!(!starts.contains("TEAMCTL_PLACEHOLDER"), "{starts}");
}

/// A pane of the user's split off `leader`'s, zoomed (and so active): its id.
fn zoomed_user_pane(env: &TestEnv, leader: &str) -> String {
    let busy = env
        .tmux_ok(&["split-window", "-t", leader, "-P", "-F", "#{pane_id}"])
        .trim()
        .to_string();
    env.tmux_ok(&["resize-pane", "-Z", "-t", &busy]);
    assert_eq!(zoom_of(env, &busy), "1 1");
    busy
}

/// Whether `pane`'s window is zoomed and `pane` active: "1 1" when both.
fn zoom_of(env: &TestEnv, pane: &str) -> String {
    env.pane_format(pane, "#{window_zoomed_flag} #{pane_active}")
        .unwrap()
}

/// Attacker QA 38: a spawn inside tmux unzoomed the user's zoomed pane (a plain split, and
/// the spread after it, unzoom the window). Now the window stays zoomed on the user's pane,
/// which stays the active one, and the teammate answers.
#[test]
fn inside_tmux_spawn_kill_and_shutdown_keep_the_users_zoomed_pane_zoomed() {
    let env = TestEnv::with_tmux();
    let leader = user_session(&env);
    let busy = zoomed_user_pane(&env, &leader);
    let zoom = || zoom_of(&env, &busy);
    team(&env, "tm-zoomed");
    for n in ["a", "b"] {
        let out = inside(&env, &leader, &["spawn", n, "--exec", ECHO])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(zoom(), "1 1", "spawning {n} unzoomed the user's pane");
    }
    assert_eq!(ask(&env, "b", "hi").trim(), "b got: hi");
    // Closing their panes keeps it too (tmux unzooms a window a pane leaves).
    for (args, what) in [
        (&["kill", "a"][..], "kill"),
        (&["shutdown", "b"], "shutdown"),
    ] {
        let out = inside(&env, &leader, args).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(zoom(), "1 1", "{what} unzoomed the user's pane");
    }
    let window = env.pane_format(&leader, "#{window_id}").unwrap();
    assert_eq!(
        env.tmux_ok(&["list-panes", "-t", &window, "-F", "#{pane_id}"])
            .lines()
            .count(),
        2,
        "the teammates' panes are gone"
    );
}

/// Re-QA 38: a spawn into the window teamctl opened in the user's session (the leader's too
/// narrow) unzoomed it when the user had zoomed a teammate's pane there (a plain split and a
/// tiled layout). Now the split keeps the zoom, on the same pane.
#[test]
fn inside_tmux_a_spawn_into_teamctls_window_the_user_zoomed_keeps_it_zoomed() {
    let env = TestEnv::with_tmux();
    let leader = narrow_user_session(&env);
    let t = team(&env, "tm-zoom-own");
    let out = inside(&env, &leader, &["spawn", "a", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let a = env.pane_of(&t, "a");
    let window = env.pane_format(&a, "#{window_id}").unwrap();
    assert_ne!(window, env.pane_format(&leader, "#{window_id}").unwrap());
    // A second teammate first, so the zoom is on one pane of two.
    let out = inside(&env, &leader, &["spawn", "b", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        env.pane_format(&env.pane_of(&t, "b"), "#{window_id}")
            .unwrap(),
        window
    );
    env.tmux_ok(&["select-pane", "-t", &a]);
    env.tmux_ok(&["resize-pane", "-Z", "-t", &a]);
    let zoom = || zoom_of(&env, &a);
    assert_eq!(zoom(), "1 1");
    let out = inside(&env, &leader, &["spawn", "c", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        env.pane_format(&env.pane_of(&t, "c"), "#{window_id}")
            .unwrap(),
        window,
        "c went elsewhere"
    );
    assert_eq!(zoom(), "1 1", "spawning c unzoomed the user's zoomed pane");
    assert_eq!(ask(&env, "c", "hi").trim(), "c got: hi");
    // Until the window is full: the split tmux refuses for room unzooms it first (QA 39).
    spawn_until_full_keeping_zoom(&env, &leader, &t, &window, &zoom);
}

/// Spawn teammates from `leader` (inside tmux) until one goes to another window than
/// `window`, `zoom` (a pane's zoom flag and whether it is active) still "1 1" after each.
fn spawn_until_full_keeping_zoom(
    env: &TestEnv,
    leader: &str,
    team: &str,
    window: &str,
    zoom: &dyn Fn() -> String,
) {
    for i in 0..12 {
        let n = format!("f{i}");
        let out = inside(env, leader, &["spawn", &n, "--exec", ECHO])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(zoom(), "1 1", "spawning {n} unzoomed the user's pane");
        if env
            .pane_format(&env.pane_of(team, &n), "#{window_id}")
            .unwrap()
            != window
        {
            return;
        }
    }
    panic!("{window} never filled");
}

/// QA 39: the leader's own window, zoomed on a pane of the user's, lost its zoom once it was
/// full: the split tmux refused for room had unzoomed it first.
#[test]
fn inside_tmux_a_full_zoomed_leader_window_stays_zoomed() {
    let env = TestEnv::with_tmux();
    let leader = user_session_of(&env, "80", "24");
    let busy = zoomed_user_pane(&env, &leader);
    let zoom = || zoom_of(&env, &busy);
    let t = team(&env, "tm-zoom-full");
    let home = env.pane_format(&leader, "#{window_id}").unwrap();
    spawn_until_full_keeping_zoom(&env, &leader, &t, &home, &zoom);
}

/// Attacker QA 38: a window teamctl opened in the user's session (the leader's window too
/// narrow), into which the user split a pane of their own, kept teamctl's tags and settings
/// after `delete`: the user's pane stayed dead when its program ended, and a new team of the
/// same name filled the window again. Now they come off with the team.
#[test]
fn delete_takes_teamctls_tags_off_its_window_in_the_users_session_left_for_the_users_pane() {
    let env = TestEnv::with_tmux();
    let leader = narrow_user_session(&env);
    let t = team(&env, "tm-inside-kept");
    let out = inside(&env, &leader, &["spawn", "a", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let window = env
        .pane_format(&env.pane_of(&t, "a"), "#{window_id}")
        .unwrap();
    let mine = env
        .tmux_ok(&[
            "split-window",
            "-d",
            "-t",
            &window,
            "-P",
            "-F",
            "#{pane_id}",
        ])
        .trim()
        .to_string();
    let out = inside(&env, &leader, &["delete", "--force"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let options = env.tmux_ok(&["show-options", "-w", "-t", &window]);
    assert!(
        !options.contains("teamctl") && !options.contains("remain-on-exit"),
        "{options}"
    );
    // The user's pane ends as their own settings say: closed.
    env.tmux_ok(&["respawn-pane", "-k", "-t", &mine, "true"]);
    wait_until("the user's pane closed as it ended", WAIT, || {
        !env.tmux_ok(&["list-panes", "-a", "-F", "#{pane_id}"])
            .lines()
            .any(|p| p == mine)
    });
    let t = team(&env, "tm-inside-kept");
    let out = inside(&env, &leader, &["spawn", "b", "--exec", ECHO])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_ne!(
        env.pane_format(&env.pane_of(&t, "b"), "#{window_id}")
            .unwrap(),
        window,
        "the new team took the user's window"
    );
}

/// Re-QA 38: a home removed (`rm -rf`) while its team ran inside tmux (its teammates in the
/// user's session, no team session of its own): `doctor --fix` ended the workers but left
/// their dead panes, and teamctl's tags and settings on the window it opened there. Now they
/// close, and the window, kept for the user's pane split into it, loses teamctl's settings.
/// A second team's worker ended before `doctor` looked: its dead pane's start command names
/// the home.
#[test]
fn doctor_fix_of_a_removed_home_inside_tmux_closes_its_panes_in_the_users_session() {
    let gone = TestEnv::with_tmux();
    let leader = narrow_user_session(&gone);
    let mut panes_of = Vec::new();
    for (t, n) in [("tm-gone-inside", "a"), ("tm-gone-ended", "b")] {
        let _ = std::fs::remove_file(gone.home_path().join("current"));
        let t = team(&gone, t);
        let out = inside(&gone, &leader, &["spawn", n, "--exec", ECHO])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        panes_of.push(gone.pane_of(&t, n));
    }
    let (pane, ended) = (panes_of[0].clone(), panes_of[1].clone());
    let window = gone.pane_format(&pane, "#{window_id}").unwrap();
    let mine = gone
        .tmux_ok(&[
            "split-window",
            "-d",
            "-t",
            &window,
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 600",
        ])
        .trim()
        .to_string();
    // No other test's `doctor` runs while the removed home's worker does (`GONE_HOMES`).
    let alone = crate::common::GONE_HOMES
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A dead pane of the user's with a tag forged for that home (no pid tag, as teamctl
    // sets it): not teamctl's to close (attacker QA 39).
    let key = gone
        .pane_format(&pane, "#{@teamctl-agent}")
        .unwrap()
        .rsplit_once('/')
        .unwrap()
        .1
        .to_string();
    let forged = gone
        .tmux_ok(&[
            "new-window",
            "-d",
            "-t",
            "user",
            "-P",
            "-F",
            "#{pane_id}",
            "sleep 600",
        ])
        .trim()
        .to_string();
    gone.tmux_ok(&["set-option", "-p", "-t", &forged, "remain-on-exit", "on"]);
    gone.tmux_ok(&[
        "set-option",
        "-p",
        "-t",
        &forged,
        "@teamctl-agent",
        &format!("x@tm-forged/{key}"),
    ]);
    gone.tmux_ok(&["respawn-pane", "-k", "-t", &forged, "true"]);
    wait_until("the forged pane dead", WAIT, || {
        gone.pane_format(&forged, "#{pane_dead}").as_deref() == Some("1")
    });
    let b: i32 = gone
        .pane_format(&ended, "#{pane_pid}")
        .unwrap()
        .parse()
        .unwrap();
    std::fs::remove_dir_all(gone.home_path()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(b),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until("b's pane dead", WAIT, || {
        gone.pane_format(&ended, "#{pane_dead}").as_deref() == Some("1")
    });
    let mut other = TestEnv::new();
    other.socket.clone_from(&gone.socket);
    other
        .env
        .push(("TEAMCTL_TMUX_SOCKET".into(), gone.socket.clone().unwrap()));
    let fixed = other.cmd(&["--json", "doctor", "--fix"]).output().unwrap();
    drop(alone);
    let report = String::from_utf8_lossy(&fixed.stdout);
    let panes = gone.tmux_ok(&["list-panes", "-a", "-F", "#{pane_id}"]);
    for p in [&pane, &ended] {
        assert!(!panes.lines().any(|l| l == p), "{p}: {panes}\n{report}");
    }
    assert!(panes.lines().any(|p| p == mine), "{panes}\n{report}");
    assert!(panes.lines().any(|p| p == forged), "{panes}\n{report}");
    gone.tmux_ok(&["kill-pane", "-t", &forged]);
    let options = gone.tmux_ok(&["show-options", "-w", "-t", &window]);
    assert!(
        !options.contains("teamctl") && !options.contains("remain-on-exit"),
        "{options}\n{report}"
    );
    assert!(tags(&gone).is_empty(), "{:?}\n{report}", tags(&gone));
    assert!(workers(&gone).is_empty(), "{report}");
    let again = other.cmd(&["--json", "doctor"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{again:?}");
}

/// Re-QA 38: `delete` looked for teamctl's windows outside the team's session by a key that
/// a session lends its windows, so in a team session the user had renamed, the user's own
/// window lost the settings the user gave it. Only windows carrying the key themselves are
/// untagged.
#[test]
fn delete_leaves_the_settings_of_the_users_window_in_a_renamed_team_session() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-renamed");
    spawn(&env, "w1");
    env.tmux_ok(&[
        "rename-session",
        "-t",
        &format!("={}", env.session(&t)),
        "mine",
    ]);
    let window = env
        .tmux_ok(&[
            "new-window",
            "-d",
            "-t",
            "=mine:",
            "-P",
            "-F",
            "#{window_id}",
            "sleep",
            "3000",
        ])
        .trim()
        .to_string();
    for (opt, val) in [
        ("remain-on-exit", "on"),
        ("pane-border-status", "bottom"),
        ("@mine", "keep"),
    ] {
        env.tmux_ok(&["set-option", "-w", "-t", &window, opt, val]);
    }
    let before = env.tmux_ok(&["show-options", "-w", "-t", &window]);
    env.ok(&["delete", "--force"]);
    assert_eq!(
        env.tmux_ok(&["show-options", "-w", "-t", &window]),
        before,
        "the user's window settings changed"
    );
}

#[test]
fn a_custom_prefix_and_a_slow_shell_change_nothing() {
    let env = TestEnv::with_tmux();
    user_session(&env);
    let slow = env.work.path().join("slow-shell");
    std::fs::write(&slow, "#!/bin/sh\nsleep 2\nexec /bin/sh \"$@\"\n").unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.tmux_ok(&["set-option", "-g", "prefix", "C-a"]);
    env.tmux_ok(&["set-option", "-g", "default-shell", slow.to_str().unwrap()]);
    team(&env, "tm-prefix");
    spawn(&env, "a");
    assert_eq!(ask(&env, "a", "first try").trim(), "a got: first try");
}

#[test]
fn twelve_teammates_all_start_and_answer_a_broadcast() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-twelve");
    let names: Vec<String> = (1..=12).map(|i| format!("m{i}")).collect();
    for n in &names {
        spawn(&env, n);
    }
    let mut panes: Vec<String> = names.iter().map(|n| env.pane_of(&t, n)).collect();
    for (n, p) in names.iter().zip(&panes) {
        assert_eq!(
            env.pane_format(p, "#{@teamctl-agent}"),
            Some(env.tag(&format!("{n}@{t}")))
        );
    }
    panes.sort();
    panes.dedup();
    assert_eq!(panes.len(), 12, "every teammate has its own pane");
    let windows = env.tmux_ok(&[
        "list-windows",
        "-t",
        &format!("={}", env.session(&t)),
        "-F",
        "#{window_panes}",
    ]);
    assert!(
        windows.lines().count() >= 2,
        "a full window overflows: {windows}"
    );
    assert!(
        windows.lines().all(|n| n.parse::<usize>().unwrap() <= 8),
        "{windows}"
    );

    env.ok(&["send", "*", "ping"]);
    wait_until("a reply from every teammate", WAIT, || {
        let inbox = env.inbox(&t, "team-lead");
        names.iter().all(|n| {
            inbox
                .iter()
                .any(|m| m["from"] == n.as_str() && m["text"] == format!("{n} got: ping"))
        })
    });

    // attach focuses the last teammate's pane and window (no terminal here, so the attach
    // itself fails after selecting).
    let last = env.pane_of(&t, "m12");
    let out = env.run(&["attach", "m12"]);
    assert_eq!(out.status.code(), Some(1));
    let current = env.tmux_ok(&[
        "display-message",
        "-p",
        "-t",
        &format!("={}:", env.session(&t)),
        "#{pane_id}",
    ]);
    assert_eq!(current.trim(), last);
}

#[test]
fn dead_panes_show_as_dead_and_stale_pane_ids_are_never_touched() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-dead");
    for n in ["a", "b", "c"] {
        spawn(&env, n);
    }
    // A pane killed behind teamctl's back.
    let a = env.pane_of(&t, "a");
    env.tmux_ok(&["kill-pane", "-t", &a]);
    wait_until("a shows as dead", WAIT, || env.member_status("a") == "dead");

    // A worker that crashes leaves its pane readable, and is dead.
    let c = env.pane_of(&t, "c");
    wait_until("c is idle", WAIT, || env.member_status("c") == "idle");
    let pid = recorded(&env.config(&t), "c")["pid"].as_u64().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    wait_until("c's pane is dead", WAIT, || {
        env.pane_format(&c, "#{pane_dead}").as_deref() == Some("1")
    });
    assert_eq!(env.member_status("c"), "dead");
    let screen = env.tmux_ok(&["capture-pane", "-p", "-S", "-", "-t", &c]);
    assert!(
        screen.contains("ready"),
        "c's pane is not readable: {screen:?}"
    );
    env.ok(&["kill", "c"]);
    assert_eq!(
        env.pane_format(&c, "#{pane_id}"),
        None,
        "kill removes the pane"
    );

    // A stale id: b's record now names a user pane without the tag.
    let user = user_session(&env);
    let path = env.team_dir(&t).join("config.json");
    let mut cfg = env.config(&t);
    for m in cfg["members"].as_array_mut().unwrap() {
        if m["name"] == "b" {
            m["paneId"] = user.clone().into();
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    // An untagged pane is not b's; b's worker, running in its own pane still, is b: alive,
    // never taken for dead and started over (attacker QA 41). Its pane is not shown.
    assert_eq!(env.member_status("b"), "idle", "b's worker runs");
    assert_eq!(env.member("b")["paneId"], serde_json::Value::Null);
    env.ok(&["kill", "b"]);
    assert_eq!(env.pane_format(&user, "#{pane_id}"), Some(user.clone()));
    assert_eq!(
        env.tmux_ok(&["list-sessions", "-F", "#{session_name}"])
            .lines()
            .filter(|s| *s == "user")
            .count(),
        1
    );
}

#[test]
fn the_users_global_options_are_unchanged_after_spawning() {
    let env = TestEnv::with_tmux();
    let leader = user_session(&env);
    let globals = |env: &TestEnv| {
        (
            env.tmux_ok(&["show-options", "-g"]),
            env.tmux_ok(&["show-options", "-gw"]),
        )
    };
    let before = globals(&env);
    for o in ["pane-border-status", "pane-border-style", "remain-on-exit"] {
        assert!(
            before.0.contains(o) || before.1.contains(o),
            "{o} not listed"
        );
    }
    let t = team(&env, "tm-globals");
    spawn(&env, "outside");
    let socket = env.tmux_ok(&["display-message", "-p", "#{socket_path}"]);
    let out = env
        .cmd(&["spawn", "inside", "--exec", ECHO])
        .env("TMUX", format!("{},1,0", socket.trim()))
        .env("TMUX_PANE", &leader)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(globals(&env), before);
    // teamctl's own window has its options set at window level.
    let own = env.pane_of(&t, "outside");
    let opts = env.tmux_ok(&["show-options", "-w", "-t", &own]);
    assert!(opts.contains("remain-on-exit on"), "{opts}");
    assert!(opts.contains("pane-border-status top"), "{opts}");
}

#[test]
fn kill_removes_the_pane_and_shutdown_leaves_no_pane_and_no_worker() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-kill");
    spawn(&env, "a");
    spawn(&env, "b");
    let a = env.pane_of(&t, "a");
    env.ok(&["kill", "a"]);
    assert_eq!(env.pane_format(&a, "#{pane_id}"), None);
    assert_eq!(tags(&env), vec![env.tag(&format!("b@{t}"))]);
    env.ok(&["shutdown", "b", "--timeout", "20"]);
    assert!(tags(&env).is_empty(), "panes left: {:?}", tags(&env));
    assert!(
        workers(&env).is_empty(),
        "workers left: {:?}",
        workers(&env)
    );
    assert_eq!(env.member_status("b"), "stopped");
}

/// With no UTF-8 locale (`LANG` unset or `C`: cron, ssh, containers), tmux prints a format's
/// tab and every byte outside ASCII as `_` to a client it thinks cannot take them (new-user QA
/// 45: `status` showed no pane, `kill` left the pane open, and `doctor` offered to close the
/// user's own shell as an older teamctl's).
#[test]
fn without_a_utf8_locale_teamctl_still_knows_its_panes_and_only_its_panes() {
    let mut env = TestEnv::with_tmux();
    for var in ["LC_ALL", "LC_CTYPE", "LANG"] {
        env.env.push((var.to_string(), "C".to_string()));
    }
    let t = team(&env, "tm-locale");
    let mine = user_session(&env);
    spawn(&env, "a");
    spawn(&env, "b");
    let (a, b) = (env.pane_of(&t, "a"), env.pane_of(&t, "b"));
    let table = env.ok(&["status"]);
    assert!(table.contains(&a) && table.contains(&b), "{table}");
    assert_eq!(env.member("a")["paneId"], a.as_str());
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(!doctor.contains(&mine), "{doctor}");
    env.ok(&["kill", "a"]);
    assert_eq!(
        env.pane_format(&a, "#{pane_id}"),
        None,
        "a's pane left open"
    );
    assert_eq!(ask(&env, "b", "still?").trim(), "b got: still?");
    env.ok(&["shutdown", "b", "--timeout", "20"]);
    assert_eq!(
        env.pane_format(&b, "#{pane_id}"),
        None,
        "b's pane left open"
    );
    assert_eq!(
        env.pane_format(&mine, "#{pane_id}").as_deref(),
        Some(mine.as_str())
    );
}

/// A pane option holding a newline (anyone with a pane on the server can set one) makes no
/// row of its own in a listing teamctl reads line by line (attacker QA 45: a forged row, after
/// a newline in a teammate pane's `@teamctl-agent`, named the user's pane dead and the team's,
/// and `delete` closed it). Also as a start command with a newline in it.
#[test]
fn a_newline_in_a_pane_option_forges_no_pane_row() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-forged-row");
    spawn(&env, "w1");
    let w1 = env.pane_of(&t, "w1");
    let user = user_session(&env);
    let pid = env.pane_format(&user, "#{pane_pid}").unwrap();
    let console = env.tag(&t);
    let forged = format!("x\n{user}\t1\t{pid}\t\t\t{console}\t\tuser\t");
    env.tmux_ok(&["set-option", "-p", "-t", &w1, "@teamctl-agent", &forged]);
    // The same row after a newline in another pane's start command.
    env.tmux_ok(&[
        "new-window",
        "-d",
        "-t",
        "user",
        &format!("sleep 900\n{user}\t1\t{pid}\t\t\t{console}\t\tuser\t"),
    ]);
    let out = env.run(&["delete", "--force"]);
    assert_eq!(
        env.pane_format(&user, "#{pane_id}").as_deref(),
        Some(user.as_str()),
        "the user's pane was closed: {out:?}"
    );
}

#[test]
fn resume_after_the_tmux_server_died_starts_new_panes() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-resume");
    spawn(&env, "a");
    let old_pid = recorded(&env.config(&t), "a")["pid"].as_u64().unwrap() as u32;
    env.tmux_ok(&["kill-server"]);
    wait_until("a's worker ends with its server", WAIT, || {
        !is_worker_pid(old_pid, &format!("a@{t}"))
    });
    assert_eq!(env.member_status("a"), "dead");
    env.ok(&["resume", "a"]);
    let pane = env.pane_of(&t, "a");
    assert_eq!(
        env.pane_format(&pane, "#{session_name} #{@teamctl-agent}")
            .unwrap(),
        format!("{} {}", env.session(&t), env.tag(&format!("a@{t}")))
    );
    assert_eq!(ask(&env, "a", "back?").trim(), "a got: back?");
}

#[test]
fn delete_closes_the_team_session_it_made() {
    let env = TestEnv::with_tmux();
    team(&env, "tm-delete");
    spawn(&env, "a");
    user_session(&env);
    env.ok(&["delete", "--force"]);
    let sessions = env.tmux_ok(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(sessions.trim(), "user");
    wait_until(
        "the console to end with its session",
        Duration::from_secs(10),
        || env.consoles().is_empty(),
    );
}

/// A window or pane the user opened in the team session is theirs: `delete` closes the
/// console and the teammates' panes, and leaves the session with the user's own running, and
/// says so (QA: it killed the whole session, and what ran in the user's pane with it).
#[test]
fn delete_leaves_the_users_own_panes_in_the_team_session() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-delete-mine");
    spawn(&env, "a");
    let session = env.session(&t);
    let a = env.pane_of(&t, "a");
    // A window the user opens in the team session: its pane.
    let new_window = || {
        env.tmux_ok(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            &format!("={session}:"),
        ])
        .trim()
        .to_string()
    };
    let window = new_window();
    let split = env
        .tmux_ok(&["split-window", "-d", "-P", "-F", "#{pane_id}", "-t", &a])
        .trim()
        .to_string();
    // A window of the user's with settings of their own, which they keep (new-user QA: its
    // remain-on-exit and border were unset with teamctl's).
    let set = new_window();
    env.tmux_ok(&["set-option", "-w", "-t", &set, "remain-on-exit", "on"]);
    env.tmux_ok(&[
        "set-option",
        "-w",
        "-t",
        &set,
        "pane-border-status",
        "bottom",
    ]);
    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    // It is the user's now: renamed, its team tags taken off.
    let kept = format!("{session}-kept");
    assert!(err.contains(&format!("{kept} stays open")), "{err}");
    // And how to close it when done, on teamctl's server (`TEAMCTL_TMUX_SOCKET`, a `-L` name),
    // by its exact name (QA: a bare `-t NAME` is a prefix, and run again closed `NAME-2`).
    let socket = env.socket.as_ref().unwrap();
    assert!(
        err.contains(&format!("tmux -L {socket} kill-session -t '={kept}'")),
        "{err}"
    );
    let panes_of = |s: &str| {
        let panes = env.tmux_ok(&[
            "list-panes",
            "-s",
            "-t",
            &format!("={s}:"),
            "-F",
            "#{pane_id}",
        ]);
        let mut left: Vec<String> = panes.lines().map(String::from).collect();
        left.sort_unstable();
        left
    };
    let mut mine = vec![window.clone(), split.clone(), set.clone()];
    mine.sort_unstable();
    assert_eq!(panes_of(&kept), mine, "only the user's panes stay");
    let theirs = env.tmux_ok(&["show-options", "-w", "-t", &set]);
    for own in ["remain-on-exit on", "pane-border-status bottom"] {
        assert!(theirs.contains(own), "{own}: {theirs}");
    }
    wait_until("the console to end", Duration::from_secs(10), || {
        env.consoles().is_empty()
    });
    assert!(tags(&env).is_empty(), "{:?}", tags(&env));
    let options = env.tmux_ok(&["show-options", "-t", &format!("={kept}:")]);
    assert!(!options.contains("@teamctl-team"), "{options}");
    // Nor teamctl's window settings: a pane of the user's that ends there closes as the user's
    // settings say, instead of staying dead (QA: the kept session never went away).
    let window_options = env.tmux_ok(&["show-options", "-w", "-t", &window]);
    for teamctls in ["remain-on-exit", "pane-border-format"] {
        assert!(!window_options.contains(teamctls), "{window_options}");
    }
    let brief = env
        .tmux_ok(&[
            "split-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            &window,
            "true",
        ])
        .trim()
        .to_string();
    wait_until(
        "the user's ended pane to close",
        Duration::from_secs(10),
        || !panes_of(&kept).contains(&brief),
    );
    // A new team of the same name makes a session of its own, with its console, and never
    // splits into the window the user opened (attacker QA: it moved into the kept session).
    assert_eq!(team(&env, "tm-delete-mine"), t);
    spawn(&env, "b");
    assert_eq!(panes_of(&kept), mine, "the kept session is left alone");
    let b = env.pane_of(&t, "b");
    assert!(panes_of(&session).contains(&b));
    wait_until(
        "a console in the new session",
        Duration::from_secs(10),
        || !env.consoles().is_empty(),
    );
}

#[test]
fn the_team_session_opens_on_the_leader_console() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-console");
    spawn(&env, "a");
    let session = format!("={}:", env.session(&t));
    // The first pane runs `teamctl lead`, is active (attach lands on it) and has no agent tag.
    let first = env.tmux_ok(&[
        "list-panes",
        "-t",
        &session,
        "-F",
        "#{pane_index} #{pane_active} #{pane_current_command} #{@teamctl-agent}",
    ]);
    let rows: Vec<&str> = first.lines().collect();
    assert_eq!(rows.len(), 2, "{first}");
    assert!(rows[0].starts_with("0 1 teamctl"), "{first}");
    assert!(
        rows[0].trim_end().ends_with("teamctl"),
        "console carries no agent tag: {first}"
    );
    assert!(rows[1].ends_with(&env.tag(&format!("a@{t}"))), "{first}");
    assert_eq!(env.consoles().len(), 1);
    // The console shows the teammate's reply.
    env.ok(&["send", "a", "hello console"]);
    wait_until(
        "the reply in the console pane",
        Duration::from_secs(20),
        || {
            let screen = env.tmux_ok(&["capture-pane", "-p", "-t", &format!("{session}.0")]);
            screen.contains("hello console")
        },
    );
}

#[test]
fn attach_needs_a_known_teammate_with_a_pane() {
    let env = TestEnv::with_tmux();
    team(&env, "tm-attach");
    env.fails(&["attach"], 1);
    env.fails(&["attach", "nobody"], 2);
    env.ok(&["spawn", "p", "--backend", "process", "--exec", ECHO]);
    let err = env.fails(&["attach", "p"], 2);
    assert!(err.contains("process backend"), "{err}");
}

#[test]
fn without_tmux_the_tmux_backend_is_a_clear_error_and_auto_uses_processes() {
    let env = TestEnv::new();
    let empty = tempfile::tempdir().unwrap();
    team(&env, "tm-notmux");
    let out = env
        .cmd(&["spawn", "a", "--backend", "tmux", "--exec", ECHO])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--backend process"), "{err}");
    let out = env
        .cmd(&["--json", "spawn", "b", "--exec", ECHO])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["backendType"], "process");
}

/// A tmux client attached to `session` on the private server, in a pseudo-terminal made by
/// `script`; it lives until the returned child is killed.
fn attached_client(env: &TestEnv, session: &str) -> std::process::Child {
    let socket = env.socket.as_ref().unwrap();
    let child = std::process::Command::new("script")
        .args([
            "-qfc",
            &format!("tmux -L {socket} attach -t {session}"),
            "/dev/null",
        ])
        .env_remove("TMUX")
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("`script` (util-linux) is needed to give tmux a client terminal");
    wait_until("a client attached", WAIT, || {
        !env.tmux_ok(&["list-clients", "-F", "#{client_name}"])
            .trim()
            .is_empty()
    });
    child
}

#[test]
fn attach_from_inside_tmux_switches_the_client_to_the_teammates_pane() {
    let env = TestEnv::with_tmux();
    let leader = user_session(&env);
    let t = team(&env, "tm-switch");
    spawn(&env, "a");
    spawn(&env, "b");
    let b = env.pane_of(&t, "b");
    let mut client = attached_client(&env, "user");
    let socket = env.tmux_ok(&["display-message", "-p", "#{socket_path}"]);
    let sid = env.tmux_ok(&["display-message", "-p", "-t", "=user:", "#{session_id}"]);
    let out = env
        .cmd(&["attach", "b"])
        .env(
            "TMUX",
            format!("{},1,{}", socket.trim(), sid.trim().trim_start_matches('$')),
        )
        .env("TMUX_PANE", &leader)
        .output()
        .unwrap();
    let clients = env.tmux_ok(&["list-clients", "-F", "#{session_name}"]);
    let _ = client.kill();
    let _ = client.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(clients.trim(), env.session(&t), "the client did not switch");
    let now = env.tmux_ok(&[
        "display-message",
        "-p",
        "-t",
        &b,
        "#{session_name} #{pane_active} #{window_active}",
    ]);
    assert_eq!(now.trim(), format!("{} 1 1", env.session(&t)));
}

/// After the first teammate, a spawn into the team session is one tmux invocation: it splits
/// the window the last teammate went to (recorded as `tmuxFill`), behind a guard that stops
/// tmux unless that window is one teamctl made for this team. A hint that is stale or
/// points at someone else's window (even one carrying the team's name as a value) makes
/// nothing there: the spawn looks the session up instead.
#[test]
fn spawns_split_the_hinted_window_in_one_call_and_never_trust_a_stale_hint() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-hint");
    spawn(&env, "a");
    spawn(&env, "b");
    let fill = env.config(&t)["tmuxFill"].clone();
    let b_window = env
        .pane_format(&env.pane_of(&t, "b"), "#{window_id}")
        .unwrap();
    assert_eq!(fill["window"], b_window.as_str(), "{fill}");
    assert_eq!(fill["panes"], 3, "the console, a and b: {fill}");

    // Count the tmux processes one spawn starts.
    let (out, calls) = logged_tmux_calls(&env, &["spawn", "c", "--exec", ECHO]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(calls.len(), 1, "one tmux call: {calls:?}");
    assert_eq!(
        env.pane_format(&env.pane_of(&t, "c"), "#{@teamctl-agent}"),
        Some(env.tag(&format!("c@{t}"))),
        "tagged in that call"
    );

    // A hint naming someone else's window, which even carries the team's name as a value.
    env.tmux_ok(&["new-session", "-d", "-s", "theirs"]);
    let theirs = env
        .tmux_ok(&["display-message", "-p", "-t", "=theirs:", "#{window_id}"])
        .trim()
        .to_string();
    env.tmux_ok(&[
        "set-option",
        "-w",
        "-t",
        &theirs,
        "@teamctl-team",
        &env.tag(&t),
    ]);
    let set_hint = |window: &str| {
        let path = env.team_dir(&t).join("config.json");
        let mut cfg: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        cfg["tmuxFill"]["window"] = window.into();
        std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    };
    set_hint(&theirs);
    spawn(&env, "d");
    let panes = |target: &str| {
        env.tmux_ok(&["list-panes", "-t", target, "-F", "#{pane_id}"])
            .lines()
            .count()
    };
    assert_eq!(panes(&theirs), 1, "nothing was made in their window");
    assert_eq!(
        env.pane_format(&env.pane_of(&t, "d"), "#{session_name}"),
        Some(env.session(&t))
    );
    let hooks = env.tmux_ok(&["show-hooks", "-t", &format!("={}:", env.session(&t))]);
    assert!(
        !hooks.contains("after-split-window["),
        "no hook left: {hooks}"
    );

    // A window that no longer exists.
    set_hint("@999");
    spawn(&env, "e");
    let fill = env.config(&t)["tmuxFill"].clone();
    let e_window = env
        .pane_format(&env.pane_of(&t, "e"), "#{window_id}")
        .unwrap();
    assert_eq!(
        fill["window"],
        e_window.as_str(),
        "the hint follows: {fill}"
    );
    for n in ["a", "b", "c", "d", "e"] {
        wait_until("every teammate idle", WAIT, || {
            env.member_status(n) == "idle"
        });
    }
}

/// When the window the last teammate went to is full, the next one opens a new window of the
/// team session straight away (two tmux calls, behind the session's guard), tagged and kept
/// like every other. A session without the guard's key (as an older teamctl made them) is
/// looked up instead, and still gets its teammate.
#[test]
fn a_full_window_opens_the_next_in_two_calls_and_an_unkeyed_session_is_looked_up() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-full");
    // The console and seven teammates fill the first window.
    for i in 1..=7 {
        spawn(&env, &format!("m{i}"));
    }
    assert_eq!(env.config(&t)["tmuxFill"]["panes"], 8);
    let (out, calls) = logged_tmux_calls(&env, &["spawn", "m8", "--exec", ECHO]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].contains("new-window"), "{calls:?}");
    let pane = env.pane_of(&t, "m8");
    assert_eq!(
        env.pane_format(
            &pane,
            "#{session_name} #{window_panes} #{@teamctl-agent} #{remain-on-exit}"
        ),
        Some(format!(
            "{} 1 {} on",
            env.session(&t),
            env.tag(&format!("m8@{t}"))
        ))
    );
    let windows = env.tmux_ok(&["list-windows", "-t", &format!("={}", env.session(&t))]);
    assert_eq!(windows.lines().count(), 2, "{windows}");

    // An older session: no key. The hint says full, the guard stops tmux, the look-up follows.
    for i in 9..=15 {
        spawn(&env, &format!("m{i}"));
    }
    assert_eq!(env.config(&t)["tmuxFill"]["panes"], 8);
    env.tmux_ok(&[
        "set-option",
        "-u",
        "-t",
        &format!("={}:", env.session(&t)),
        &format!("@teamctl-team-{t}-{}", env.tag("").trim_start_matches('/')),
    ]);
    let (out, calls) = logged_tmux_calls(&env, &["spawn", "m16", "--exec", ECHO]);
    assert!(out.status.success(), "{out:?}");
    assert!(calls.len() > 2, "looked up: {calls:?}");
    assert_eq!(
        env.pane_format(&env.pane_of(&t, "m16"), "#{session_name} #{@teamctl-agent}"),
        Some(format!(
            "{} {}",
            env.session(&t),
            env.tag(&format!("m16@{t}"))
        ))
    );
    let windows = env.tmux_ok(&["list-windows", "-t", &format!("={}", env.session(&t))]);
    assert_eq!(windows.lines().count(), 3, "{windows}");
    env.ok(&["send", "m8", "ping"]);
    env.ok(&["send", "m16", "ping"]);
    wait_until("m8 and m16 answer", WAIT, || {
        let inbox = env.inbox(&t, "team-lead");
        ["m8", "m16"]
            .iter()
            .all(|n| inbox.iter().any(|m| m["text"] == format!("{n} got: ping")))
    });
}

/// The real tmux program on PATH.
fn real_tmux() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("tmux"))
        .find(|p| p.is_file())
        .expect("tmux on PATH")
}

/// Run teamctl with a `tmux` first on PATH that logs its arguments and runs the real one
/// (teamctl finds tmux on PATH, `which tmux`): the output and every tmux call it made. Not
/// counted: the one call a worker started in a pane makes as it starts, to prove it runs
/// there (`worker::placed`), which the worker makes, not the command, and which may come
/// before or after the command returns.
fn logged_tmux_calls(env: &TestEnv, args: &[&str]) -> (std::process::Output, Vec<String>) {
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("calls.log");
    logging_tmux(bin.path(), &log);
    let mut path = std::ffi::OsString::from(bin.path());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let out = env.cmd(args).env("PATH", &path).output().unwrap();
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.ends_with(" #{pane_id} #{pane_pid} #{@teamctl-nonce} #{@teamctl-agent}"))
        .map(String::from)
        .collect();
    (out, calls)
}

/// A directory holding a `tmux` that appends its arguments to `log` and runs the real one.
fn logging_tmux(dir: &std::path::Path, log: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("tmux");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real_tmux().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn status_asks_tmux_once_for_the_whole_team_and_still_tells_dead_from_idle() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tm-batch");
    let names = ["a", "b", "c", "d", "e", "f"];
    for n in names {
        spawn(&env, n);
    }
    for n in names {
        wait_until(&format!("{n} is idle"), WAIT, || {
            env.member_status(n) == "idle"
        });
    }
    // a's pane killed behind teamctl's back (its worker goes with it); b's pane now carries
    // c's tag, so it is not b's any more.
    let a = env.pane_of(&t, "a");
    env.tmux_ok(&["kill-pane", "-t", &a]);
    let a_id = format!("a@{t}");
    wait_until("a's worker has exited", WAIT, || {
        !workers(&env).iter().any(|p| is_worker_pid(*p, &a_id))
    });
    let b = env.pane_of(&t, "b");
    env.tmux_ok(&[
        "set-option",
        "-p",
        "-t",
        &b,
        "@teamctl-agent",
        &env.tag(&format!("c@{t}")),
    ]);

    let (out, calls) = logged_tmux_calls(&env, &["--json", "status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let of = |name: &str| {
        status["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no member {name}"))["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(of("a"), "dead", "a's pane was killed");
    // b's pane carries c's tag: not b's pane, but b's worker runs there all the same (alive,
    // attacker QA 41), found by its process without another tmux call.
    assert_eq!(of("b"), "idle", "b's worker runs");
    for n in ["c", "d", "e", "f"] {
        assert_eq!(of(n), "idle", "{n}");
    }
    // Exactly one tmux process for six teammates on one server: `list-panes -a` there.
    let socket = env.socket.as_ref().unwrap();
    assert_eq!(
        calls,
        vec![format!("-u -L {socket} list-panes -a -F {STATE_FORMAT}")],
        "status must read every pane with one tmux process"
    );

    // No word from tmux (not on PATH): each worker process decides, tag checked. b's worker
    // still runs, so b is idle again; a's is gone.
    let empty = tempfile::tempdir().unwrap();
    let out = env
        .cmd(&["--json", "status"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let blind: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let blind: Vec<(String, String)> = blind["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap().to_string();
            (s("name"), s("status"))
        })
        .filter(|(n, _)| n != "team-lead")
        .collect();
    let mut want = vec![("a".to_string(), "dead".to_string())];
    want.extend(["b", "c", "d", "e", "f"].map(|n| (n.to_string(), "idle".to_string())));
    assert_eq!(blind, want);
}

/// `argv::STATE_FORMAT`, as the logging tmux prints it.
const STATE_FORMAT: &str = "#{pane_id} #{pane_dead} #{pane_pid} #{s/[\x01-\x1f\x7f]/_/:@teamctl-pid} #{s/[\x01-\x1f\x7f]/_/:@teamctl-agent}\t#{s/[\x01-\x1f\x7f]/_/:@teamctl-nonce}";

/// `kill` during a turn ends the worker before its turn: the turn is the worker's to end
/// (stopped, left for `resume`), never a failure "not by teamctl" that lets the worker take
/// the next queued message before it is killed too (QA: that message's agent started, was
/// killed, and ran again on `resume`).
#[test]
fn kill_during_a_turn_stops_the_worker_before_it_takes_the_next_message() {
    kill_during_a_turn(&TestEnv::with_tmux(), "tm-killturn", "tmux");
}

/// The same on the process backend (its worker was signalled first already).
#[test]
fn kill_during_a_turn_of_a_process_teammate_stops_its_worker_first() {
    kill_during_a_turn(&TestEnv::new(), "tm-killturn-p", "process");
}

fn kill_during_a_turn(env: &TestEnv, team_name: &str, backend: &str) {
    let t = team(env, team_name);
    let marks = env.home_path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    // Each turn adds a line to a file named after its message; the first message's first
    // turn then waits.
    let exec = format!(
        "m=$(cat); f='{}'/\"$m\"; echo x >> \"$f\"; [ \"$m\" = first ] && [ $(wc -l < \"$f\") = 1 ] && exec sleep 60; echo done",
        marks.display()
    );
    env.ok(&["spawn", "w", "--backend", backend, "--exec", &exec]);
    env.ok(&["send", "w", "first"]);
    env.ok(&["send", "w", "second"]);
    wait_until("the first turn runs", WAIT, || marks.join("first").exists());
    env.ok(&["kill", "w"]);
    assert!(
        !marks.join("second").exists(),
        "the next message's turn started during kill"
    );
    let log = std::fs::read_to_string(env.team_dir(&t).join("logs").join("w.log")).unwrap();
    assert!(!log.contains("not by teamctl"), "{log}");
    assert_eq!(env.member_status("w"), "stopped");
    // Both messages are still to be handled: `resume` runs the first again, then the second
    // once.
    env.ok(&["resume", "w"]);
    let runs = |m: &str| std::fs::read_to_string(marks.join(m)).map_or(0, |s| s.lines().count());
    wait_until("the second turn after resume", WAIT, || runs("second") == 1);
    assert_eq!(runs("first"), 2);
    env.ok(&["kill", "w"]);
    assert_eq!(runs("second"), 1);
}

/// A worker a spawn just placed in a pane asks tmux nothing to prove the pane is its own: the
/// spawn records the pane with the process tmux said it runs, and the worker finds itself in
/// that record. Its own `display-message` was one more tmux client per spawn, 7 ms at a
/// thousand panes and a load on the server every spawn shares (issue 14, goal 3). A worker the
/// record does not name (a `respawn-pane` by the user, say) still asks tmux; that is tested
/// in `tags.rs` and `identity.rs`. Every tmux command run goes through a wrapper that logs it.
#[test]
fn a_spawned_worker_asks_tmux_nothing_to_know_its_pane() {
    let mut env = TestEnv::with_tmux();
    let log = env.work.path().join("tmux-calls.log");
    env.wrap_tmux(&format!(
        "printf '%s\\n' \"$*\" >> '{}'\nexec \"$REAL\" \"$@\"",
        log.display()
    ));
    let t = team(&env, "tm-noask");
    for n in ["a", "b"] {
        spawn(&env, n);
    }
    for n in ["a", "b"] {
        assert_eq!(ask(&env, n, "hi").trim(), format!("{n} got: hi"));
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    // The wrapper was used (by the spawns): a test that cannot see the calls proves nothing.
    assert!(calls.contains("split-window"), "{calls}");
    let asked: Vec<&str> = calls
        .lines()
        .filter(|l| l.contains("#{pane_pid} #{@teamctl-nonce}"))
        .collect();
    assert!(
        asked.is_empty(),
        "a worker asked tmux for its pane: {asked:?}"
    );
    env.ok(&["--team", &t, "delete", "--force"]);
}

/// A turn's output without a final newline (`cat` of a message) is followed in the pane by
/// the next note on a line of its own (new-user QA 37: `hi[2026-...] <- team-lead: hi`).
#[test]
fn a_turns_output_without_a_final_newline_does_not_run_into_the_next_line_of_the_pane() {
    let t = TestEnv::with_tmux();
    t.ok(&["create", "pane-lines"]);
    t.ok(&["spawn", "w", "--exec", "cat"]);
    assert_eq!(t.ok(&["ask", "w", "first-turn"]), "first-turn\n");
    assert_eq!(t.ok(&["ask", "w", "second-turn"]), "second-turn\n");
    let pane = t.member("w")["paneId"].as_str().unwrap().to_string();
    let shown = || {
        let out = t.tmux(&["capture-pane", "-p", "-J", "-S", "-200", "-t", &pane]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    wait_until("the second turn's output in the pane", WAIT, || {
        shown().lines().any(|l| l == "second-turn")
    });
    let text = shown();
    assert!(text.lines().any(|l| l == "first-turn"), "{text}");
    assert!(!text.contains("first-turn["), "{text}");
    t.ok(&["delete", "--force"]);
}

/// The leader console a team session opens with runs where the leader does (the directory
/// `create` ran in), not in the first teammate's directory (new-user QA 43: it ran in that
/// teammate's worktree, shown `(deleted)` once the worktree was removed).
#[test]
fn the_console_runs_in_the_leaders_directory_not_the_first_teammates() {
    let env = TestEnv::with_tmux();
    team(&env, "alpha");
    let elsewhere = env.work.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    env.ok(&[
        "spawn",
        "bob",
        "--cwd",
        elsewhere.to_str().unwrap(),
        "--exec",
        "cat",
    ]);
    wait_until("bob idle", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    let panes = env.tmux_ok(&[
        "list-panes",
        "-a",
        "-F",
        "#{pane_current_path}|#{pane_start_command}",
    ]);
    let work = env.work.path().canonicalize().unwrap();
    let console = panes
        .lines()
        .find(|l| l.contains(" lead "))
        .unwrap_or_else(|| panic!("no console pane: {panes}"));
    let dir = std::path::Path::new(console.split('|').next().unwrap());
    assert_eq!(dir.canonicalize().unwrap(), work, "{panes}");
    env.ok(&["delete", "--force"]);
}

/// `attach NAME` of a stopped teammate says it is stopped, with the way on (new-user QA 43:
/// "its pane is gone", as if something had gone wrong).
#[test]
fn attach_to_a_stopped_teammate_says_it_is_stopped() {
    let env = TestEnv::with_tmux();
    team(&env, "alpha");
    spawn(&env, "bob");
    wait_until("bob idle", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    env.ok(&["shutdown", "bob"]);
    let err = env.fails(&["attach", "bob"], 1);
    assert!(
        err.contains(
            "bob is stopped (its pane was closed); `teamctl resume bob` starts it in a new pane"
        ),
        "{err}"
    );
    env.ok(&["delete", "--force"]);
}
