//! Panes teamctl no longer owns, against a private tmux server per test: a pane teamctl tagged
//! is its own only while it runs (or last ran) the process teamctl started there. One the user
//! respawned with a program of their own (`respawn-pane -k`) is the user's, also when the
//! system gave their program the very pid teamctl's had (the worker's live state records its
//! start time beside its pid, and the user's program has another): `delete`, `kill`,
//! `shutdown` and `doctor --fix` leave it open and take teamctl's tags off it, `doctor`
//! reports the tags left on it, and `status` no longer shows it as a teammate's pane. A team window the user linked into a session of their own closes
//! with the team, and the user's session stays. A pane the user re-ran with its own command
//! (`respawn-pane -k`, no command: the teammate's worker again) is still the teammate's.

use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(20);
/// Replies with the agent's name and the message text.
const ECHO: &str = "printf '%s got: ' \"$TEAMCTL_AGENT_NAME\"; cat";

fn team(env: &TestEnv, name: &str) -> String {
    env.ok(&["create", name]).trim().to_string()
}

fn spawn(env: &TestEnv, name: &str) {
    env.ok(&["spawn", name, "--exec", ECHO]);
}

/// The leader console's pane in the team session (the pane carrying `@teamctl-console`).
fn console_pane(env: &TestEnv, session: &str) -> String {
    let out = env.tmux_ok(&[
        "list-panes",
        "-s",
        "-t",
        &format!("={session}:"),
        "-F",
        "#{pane_id} #{@teamctl-console}",
    ]);
    out.lines()
        .find_map(|l| {
            l.split_once(' ')
                .filter(|(_, c)| !c.is_empty())
                .map(|(p, _)| p.to_string())
        })
        .unwrap_or_else(|| panic!("no console pane in {session}: {out}"))
}

/// The user takes `pane` over: their own program in it, teamctl's killed (`respawn-pane -k`).
/// Returns the pid of the user's program.
fn take_over(env: &TestEnv, pane: &str, argv: &[&str]) -> String {
    let mut args = vec!["respawn-pane", "-k", "-t", pane, "--"];
    args.extend_from_slice(argv);
    env.tmux_ok(&args);
    env.pane_format(pane, "#{pane_pid}")
        .expect("the pane is there")
}

/// The pane-level options of `pane` that are teamctl's (`@teamctl-*`).
fn tags(env: &TestEnv, pane: &str) -> Vec<String> {
    env.tmux_ok(&["show-options", "-p", "-t", pane])
        .lines()
        .filter(|l| l.starts_with("@teamctl"))
        .map(String::from)
        .collect()
}

fn pid_runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
    })
}

fn sessions(env: &TestEnv) -> Vec<String> {
    let out = env.tmux(&["list-sessions", "-F", "#{session_name}"]);
    let mut s: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    s.sort_unstable();
    s
}

/// Panes of a session, sorted.
fn panes_of(env: &TestEnv, session: &str) -> Vec<String> {
    let out = env.tmux_ok(&[
        "list-panes",
        "-s",
        "-t",
        &format!("={session}:"),
        "-F",
        "#{pane_id}",
    ]);
    let mut p: Vec<String> = out.lines().map(String::from).collect();
    p.sort_unstable();
    p
}

/// `delete` closes the panes that still run (or last ran) what teamctl started there: a
/// teammate's dead pane goes. The console pane the user respawned with a program of their
/// own, and a teammate's pane the user respawned (even once their program has exited), are
/// the user's: left open, untagged, in the session kept for them. (QA: `delete` closed them,
/// with the user's program in one.)
#[test]
fn delete_leaves_the_panes_the_user_took_over_and_closes_teamctls_dead_ones() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-delete");
    spawn(&env, "a");
    spawn(&env, "b");
    let session = env.session(&t);
    let console = console_pane(&env, &session);
    let (a, b) = (env.pane_of(&t, "a"), env.pane_of(&t, "b"));
    wait_until("a console runs", WAIT, || !env.consoles().is_empty());

    // The console pane: the user's program now.
    let mine = take_over(&env, &console, &["sleep", "100000"]);
    wait_until("the console ended", WAIT, || env.consoles().is_empty());
    // a's worker dies: its pane stays dead, teamctl's process its last one.
    let a_pid = env.recorded(&t, "a")["pid"].as_u64().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-9", &a_pid])
        .status()
        .unwrap();
    wait_until("a's pane is dead", WAIT, || {
        env.pane_format(&a, "#{pane_dead}").as_deref() == Some("1")
    });
    // b's pane: the user ran something of their own in it, which has exited since.
    let theirs = take_over(&env, &b, &["sh", "-c", "exit 3"]);
    wait_until("the user's program in b's pane exited", WAIT, || {
        env.pane_format(&b, "#{pane_dead}").as_deref() == Some("1")
    });

    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);

    assert_eq!(
        env.pane_format(&console, "#{pane_pid} #{pane_dead}"),
        Some(format!("{mine} 0")),
        "the pane the user took over stays, their program running: {err}"
    );
    assert!(pid_runs(&mine));
    assert_eq!(
        env.pane_format(&b, "#{pane_pid} #{pane_dead}"),
        Some(format!("{theirs} 1")),
        "b's pane ran the user's program last: theirs"
    );
    assert_eq!(
        env.pane_format(&a, "#{pane_id}"),
        None,
        "a's dead pane closes"
    );
    for p in [&console, &b] {
        assert!(tags(&env, p).is_empty(), "{p}: {:?}", tags(&env, p));
        // Nor teamctl's pane settings: the user's program ends there as their settings say.
        let own = env.tmux_ok(&["show-options", "-p", "-t", p]);
        assert!(!own.contains("remain-on-exit"), "{p}: {own}");
    }
    let kept = format!("{session}-kept");
    assert!(err.contains(&format!("{kept} stays open")), "{err}");
    let mut left = vec![console.clone(), b.clone()];
    left.sort_unstable();
    assert_eq!(panes_of(&env, &kept), left);
}

/// `kill` and `shutdown` (plain, `--force`, `--all`) of a teammate whose pane the user
/// respawned leave the pane and what runs in it, and take teamctl's tags off it; each says so
/// instead of "killed" or "stopped" alone (QA: shutdown said only "b stopped").
#[test]
fn kill_and_shutdown_leave_a_teammates_pane_the_user_respawned() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-kill");
    for n in ["a", "b", "c", "d"] {
        spawn(&env, n);
    }
    let panes: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| env.pane_of(&t, n))
        .collect();
    let users: Vec<String> = panes
        .iter()
        .zip(["100000", "100001", "100002", "100003"])
        .map(|(p, secs)| take_over(&env, p, &["sleep", secs]))
        .collect();
    wait_until("a, b, c and d are dead", WAIT, || {
        ["a", "b", "c", "d"]
            .iter()
            .all(|n| env.member_status(n) == "dead")
    });
    let left_open = |pane: &str| {
        format!(
            "its pane {pane} is not teamctl's any more (another program was started in it): left open, teamctl's tags taken off"
        )
    };
    // It says what it did: nothing of teamctl's ran in a's pane to kill. (QA: "a killed".)
    let said = env.ok(&["kill", "a"]);
    assert_eq!(
        said.trim(),
        format!("a marked stopped; {}", left_open(&panes[0]))
    );
    let said = env.ok(&["shutdown", "b", "--timeout", "20"]);
    assert_eq!(said.trim(), format!("b stopped; {}", left_open(&panes[1])));
    let said = env.ok(&["shutdown", "c", "--force"]);
    assert_eq!(
        said.trim(),
        format!("c stopped (forced); {}", left_open(&panes[2]))
    );
    let said = env.ok(&["shutdown", "--all", "--timeout", "20"]);
    assert!(
        said.lines()
            .any(|l| l == format!("d stopped; {}", left_open(&panes[3]))),
        "{said}"
    );
    let said = env.ok(&["--json", "shutdown", "--all", "--force"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&said).unwrap()["leftOpen"],
        serde_json::json!({}),
        "{said}"
    );
    for (pane, pid) in panes.iter().zip(&users) {
        assert_eq!(
            env.pane_format(pane, "#{pane_pid} #{pane_dead}"),
            Some(format!("{pid} 0")),
            "{pane} is the user's"
        );
        assert!(pid_runs(pid));
        assert!(
            tags(&env, pane).is_empty(),
            "{pane}: {:?}",
            tags(&env, pane)
        );
    }
    for n in ["a", "b", "c", "d"] {
        assert_eq!(env.member_status(n), "stopped");
    }
}

/// A team window the user linked into their own session (`link-window`) closes with the team:
/// `delete` closes teamctl's panes wherever they are linked, so no console lives on in the
/// user's session; the user's session and its own window stay as they were. (QA: the linked
/// window, console and all, outlived the team.)
#[test]
fn delete_closes_a_team_window_the_user_linked_into_their_session() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-linked");
    spawn(&env, "a");
    let session = env.session(&t);
    wait_until("a console runs", WAIT, || !env.consoles().is_empty());
    let user = env
        .tmux_ok(&[
            "new-session",
            "-d",
            "-s",
            "user",
            "-x",
            "120",
            "-y",
            "40",
            "-P",
            "-F",
            "#{pane_id}",
        ])
        .trim()
        .to_string();
    env.tmux_ok(&[
        "link-window",
        "-d",
        "-s",
        &format!("={session}:0"),
        "-t",
        "user:",
    ]);
    assert_eq!(
        env.tmux_ok(&["list-windows", "-t", "=user:", "-F", "#{window_id}"])
            .lines()
            .count(),
        2
    );
    env.ok(&["delete", "--force"]);
    wait_until("the console ended", WAIT, || env.consoles().is_empty());
    assert_eq!(sessions(&env), vec!["user".to_string()]);
    assert_eq!(
        panes_of(&env, "user"),
        vec![user.clone()],
        "only the user's own window"
    );
    assert_eq!(env.pane_format(&user, "#{pane_dead}").as_deref(), Some("0"));
}

/// `status` shows a teammate's pane only while that pane is the teammate's: not one the user
/// respawned, and not a pane id reused by a tmux server started again (ids restart at %0).
/// `-` instead (`--json`: `paneId` null).
#[test]
fn status_shows_a_pane_only_while_it_is_the_teammates() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-status");
    spawn(&env, "a");
    spawn(&env, "b");
    let (a, b) = (env.pane_of(&t, "a"), env.pane_of(&t, "b"));
    wait_until("a is idle", WAIT, || env.member_status("a") == "idle");
    take_over(&env, &b, &["sleep", "100000"]);
    wait_until("b is dead", WAIT, || env.member_status("b") == "dead");
    let pane = |env: &TestEnv, name: &str| env.member(name)["paneId"].clone();
    assert_eq!(pane(&env, "a"), serde_json::json!(a));
    assert_eq!(
        pane(&env, "b"),
        serde_json::Value::Null,
        "b's pane is the user's"
    );
    let table = env.ok(&["status"]);
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {table}"))
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("a")[3], a, "{table}");
    assert_eq!(row("b")[3], "-", "{table}");
    // No tmux to ask (not on PATH): the recorded id, marked as unchecked.
    let empty = tempfile::tempdir().unwrap();
    let out = env
        .cmd(&["status"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let blind = String::from_utf8_lossy(&out.stdout);
    let a_row = blind
        .lines()
        .find(|l| l.split_whitespace().next() == Some("a"))
        .unwrap_or_else(|| panic!("{blind}"));
    assert_eq!(
        a_row.split_whitespace().nth(3),
        Some(format!("{a}?").as_str()),
        "{blind}"
    );

    // The server goes; the user starts it again, with panes of their own.
    env.tmux_ok(&["kill-server"]);
    wait_until("a is dead", WAIT, || env.member_status("a") == "dead");
    assert_eq!(
        pane(&env, "a"),
        serde_json::Value::Null,
        "no server, no pane"
    );
    env.tmux_ok(&["new-session", "-d", "-s", "user", "-x", "120", "-y", "40"]);
    for _ in 0..4 {
        env.tmux_ok(&["split-window", "-d", "-t", "=user:"]);
        env.tmux_ok(&["select-layout", "-t", "=user:", "tiled"]);
    }
    assert!(
        env.pane_format(&a, "#{pane_id}").is_some(),
        "a's old pane id is a pane of the user's now"
    );
    assert_eq!(pane(&env, "a"), serde_json::Value::Null);
    let table = env.ok(&["status"]);
    let a_row = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some("a"))
        .unwrap()
        .to_string();
    assert_eq!(a_row.split_whitespace().nth(3), Some("-"), "{table}");
}

/// A pane on the private server running `argv` (kept once it ends), tagged as teamctl tags a
/// teammate's pane: `agent_id` of this home, for the process it runs now (`@teamctl-pid`).
fn planted(env: &TestEnv, session: &str, agent_id: &str, argv: &[&str]) -> String {
    let args = [
        "new-session",
        "-d",
        "-s",
        session,
        "-P",
        "-F",
        "#{pane_id}",
        "--",
        "cat",
    ];
    let pane = env.tmux_ok(&args).trim().to_string();
    env.tmux_ok(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    let mut respawn = vec!["respawn-pane", "-k", "-t", &pane, "--"];
    respawn.extend_from_slice(argv);
    env.tmux_ok(&respawn);
    env.tmux_ok(&[
        "set-option",
        "-p",
        "-F",
        "-t",
        &pane,
        "@teamctl-pid",
        "#{pane_pid}",
    ]);
    env.tmux_ok(&[
        "set-option",
        "-p",
        "-t",
        &pane,
        "@teamctl-agent",
        &env.tag(agent_id),
    ]);
    pane
}

/// A genuine orphan of teamctl's: the dead pane of a worker of `agent_id`, whose team is gone
/// (it ends at once), tagged for it (`planted`). A pane whose tags were set on a program of
/// the user's is no orphan of teamctl's (tags.rs).
fn orphan(env: &TestEnv, session: &str, agent_id: &str) -> String {
    let home = env.home_path().display().to_string();
    let worker = [
        crate::common::BIN,
        "worker",
        "--home",
        &home,
        "--id",
        agent_id,
    ];
    let pane = planted(env, session, agent_id, &worker);
    wait_until("the orphan's worker ended", WAIT, || {
        env.pane_format(&pane, "#{pane_dead}").as_deref() == Some("1")
    });
    pane
}

fn doctor_json(env: &TestEnv, args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["--json", "doctor"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let text = v.to_string();
    (out.status.code().unwrap(), v, text)
}

/// `doctor` judges a tagged pane by the rule every view uses: its tags count only while it
/// runs the process they were set for. A pane of a gone team that the user respawned with a
/// program of their own (before teamctl took the tags off) is theirs: not reported as an
/// orphan (only the tags left on it), and `doctor --fix` leaves it running; a genuine orphan
/// beside it is still closed. (Review: the
/// orphan check read the raw `@teamctl-agent` tag and killed the user's pane.)
#[test]
fn doctor_fix_leaves_a_pane_the_user_respawned_and_closes_a_genuine_orphan() {
    let env = TestEnv::with_tmux();
    let orphan = orphan(&env, "orphan", "ghost@tk-gone");
    let respawned = planted(&env, "respawned", "wraith@tk-gone", &["sleep", "100001"]);
    let mine = take_over(&env, &respawned, &["sleep", "100002"]);

    let (code, report, text) = doctor_json(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        text.contains(&format!("orphaned tmux pane {orphan} tagged ghost@tk-gone")),
        "{report:#}"
    );
    // Only its tags are reported: left on a pane teamctl leaves alone.
    assert!(!text.contains("tagged wraith@tk-gone"), "{report:#}");
    assert!(
        text.contains(&format!(
            "tmux pane {respawned} still carries teamctl's tags for wraith@tk-gone"
        )),
        "{report:#}"
    );

    let (code, report, _) = doctor_json(&env, &["--fix"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        env.pane_format(&orphan, "#{pane_id}"),
        None,
        "the orphan is closed"
    );
    assert_eq!(
        env.pane_format(&respawned, "#{pane_pid} #{pane_dead}"),
        Some(format!("{mine} 0")),
        "the user's pane stays, their program running: {report:#}"
    );
    assert!(pid_runs(&mine));
}

/// Closing a pane is one tmux command: the kill is guarded by the process the pane ran when
/// teamctl judged it its own, so a pane the user respawns between that look and the kill
/// stays open. Forced here with a pause point between the two, in `doctor --fix` (an orphan)
/// and in `kill` (a teammate's pane, the path `shutdown` and the worker's own close take).
#[test]
fn a_pane_respawned_between_the_look_and_the_kill_is_left_open() {
    let env = TestEnv::with_tmux();
    let gate = |n: &str| env.work.path().join(n);
    let reached = |n: &str| env.work.path().join(format!("{n}.reached"));

    // doctor --fix, an orphaned pane.
    let orphan = orphan(&env, "orphan", "ghost@tk-gone");
    let doctor = env.paused(
        &["--json", "doctor", "--fix"],
        "close-pane",
        &gate("doctor"),
    );
    wait_until("doctor at the kill", WAIT, || reached("doctor").exists());
    let mine = take_over(&env, &orphan, &["sleep", "100001"]);
    std::fs::write(gate("doctor"), b"").unwrap();
    let out = doctor.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        env.pane_format(&orphan, "#{pane_pid} #{pane_dead}"),
        Some(format!("{mine} 0")),
        "respawned before the kill: the user's ({text})"
    );
    assert!(pid_runs(&mine));
    assert!(
        text.contains(&format!("left tmux pane {orphan} open")),
        "{text}"
    );

    // kill, a teammate's pane.
    let t = team(&env, "tk-race");
    spawn(&env, "a");
    let a = env.pane_of(&t, "a");
    wait_until("a is idle", WAIT, || env.member_status("a") == "idle");
    let kill = env.paused(&["kill", "a"], "close-pane", &gate("kill"));
    wait_until("kill at the pane", WAIT, || reached("kill").exists());
    let theirs = take_over(&env, &a, &["sleep", "100002"]);
    std::fs::write(gate("kill"), b"").unwrap();
    let out = kill.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        env.pane_format(&a, "#{pane_pid} #{pane_dead}"),
        Some(format!("{theirs} 0")),
        "respawned before the kill: the user's"
    );
    assert!(pid_runs(&theirs));
    assert_eq!(env.member_status("a"), "stopped");

    // Unpaused, the same kill closes a pane that still runs teamctl's process.
    spawn(&env, "b");
    let b = env.pane_of(&t, "b");
    wait_until("b is idle", WAIT, || env.member_status("b") == "idle");
    env.ok(&["kill", "b"]);
    assert_eq!(env.pane_format(&b, "#{pane_id}"), None, "b's pane closes");
    env.ok(&["delete", "--force"]);
}

/// `attach NAME` after the user respawned NAME's pane (QA 19): the pane is not gone, it runs
/// the user's program; the error says so, and that `resume` starts NAME in a new pane, which
/// it does, the user's pane left running.
#[test]
fn attach_to_a_teammate_whose_pane_the_user_respawned_says_whose_it_is_now() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-attach");
    spawn(&env, "a");
    let pane = env.pane_of(&t, "a");
    let user = take_over(&env, &pane, &["sleep", "100002"]);
    wait_until("a is dead", WAIT, || env.member_status("a") == "dead");
    let err = env.fails(&["attach", "a"], 1);
    assert!(err.contains("now runs something else"), "{err}");
    assert!(err.contains("`teamctl resume a`"), "{err}");
    assert!(!err.contains("gone"), "{err}");
    env.ok(&["resume", "a"]);
    assert_ne!(env.pane_of(&t, "a"), pane, "a new pane");
    assert_eq!(
        env.pane_format(&pane, "#{pane_pid} #{pane_dead}"),
        Some(format!("{user} 0")),
        "the user's pane runs on"
    );
    assert!(pid_runs(&user));
}

/// The team's store, to read and forge a member's live state.
fn store(env: &TestEnv, team: &str) -> teamctl::store::SharedStore {
    teamctl::store::Home::new(env.home.path().to_path_buf())
        .handle(&teamctl::domain::Name::parse(team).unwrap())
        .unwrap()
}

fn live(env: &TestEnv, team: &str, name: &str) -> teamctl::domain::LiveState {
    store(env, team)
        .live(&teamctl::domain::Name::parse(name).unwrap())
        .unwrap()
        .unwrap_or_else(|| panic!("{name} wrote no live state"))
}

fn start_time(pid: &str) -> u64 {
    teamctl::backend::proc::start_time(pid.parse().unwrap()).expect("the process runs")
}

/// The user takes `name`'s pane over and the system happens to give their program the very
/// pid teamctl's worker had: teamctl's tags and the worker's live state then name the pid the
/// pane runs, with the start time of teamctl's worker (forged here: `@teamctl-pid` and the
/// live state's pid moved to the user's pid, the recorded start time kept). Returns the pane
/// and the pid of the user's program.
fn taken_over_with_the_same_pid(
    env: &TestEnv,
    team: &str,
    name: &str,
    argv: &[&str],
) -> (String, String) {
    let pane = env.pane_of(team, name);
    let mut state = live(env, team, name);
    let pid = take_over(env, &pane, argv);
    assert_ne!(state.start_ticks, Some(start_time(&pid)), "started apart");
    env.tmux_ok(&["set-option", "-p", "-t", &pane, "@teamctl-pid", &pid]);
    state.pid = pid.parse().unwrap();
    store(env, team)
        .set_live(&teamctl::domain::Name::parse(name).unwrap(), &state)
        .unwrap();
    assert_eq!(
        env.pane_format(&pane, "#{pane_pid} #{@teamctl-pid}"),
        Some(format!("{pid} {pid}"))
    );
    (pane, pid)
}

/// A pane runs the user's program, untagged.
fn left_to_the_user(env: &TestEnv, pane: &str, pid: &str, what: &str) {
    assert_eq!(
        env.pane_format(pane, "#{pane_pid} #{pane_dead}"),
        Some(format!("{pid} 0")),
        "{what}: the user's pane stays, their program running"
    );
    assert!(pid_runs(pid), "{what}");
    assert!(tags(env, pane).is_empty(), "{what}: {:?}", tags(env, pane));
}

/// A pane is teamctl's while it runs the process teamctl started there: the pid, and the start
/// time its worker records beside it in its live state (no tmux call for it). The user's
/// program in a pane teamctl tagged is theirs even when the system gave it the very pid
/// teamctl's worker had (its start time differs): `shutdown --force` and `delete` leave it
/// running and take the tags off, while each still closes a pane of teamctl's own. (Attacker
/// QA: the pid alone decided.)
#[test]
fn a_pane_whose_pid_was_used_again_for_the_users_program_is_theirs() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-reuse");
    for n in ["a", "b", "c"] {
        spawn(&env, n);
    }
    for n in ["a", "b", "c"] {
        wait_until(&format!("{n} is idle"), WAIT, || {
            env.member_status(n) == "idle"
        });
        // Each worker is its pane's process and records its start time beside its pid.
        let pid = env.pane_format(&env.pane_of(&t, n), "#{pane_pid}").unwrap();
        let state = live(&env, &t, n);
        assert_eq!(state.pid.to_string(), pid, "{n}");
        assert_eq!(state.start_ticks, Some(start_time(&pid)), "{n}");
    }

    // shutdown --force: a's pane, the user's by a pid used again, stays; b's closes.
    let (a, mine) = taken_over_with_the_same_pid(&env, &t, "a", &["sleep", "100000"]);
    env.ok(&["shutdown", "a", "--force"]);
    left_to_the_user(&env, &a, &mine, "shutdown --force");
    let b = env.pane_of(&t, "b");
    env.ok(&["shutdown", "b", "--force"]);
    assert_eq!(env.pane_format(&b, "#{pane_id}"), None, "b's pane closes");

    // delete: c's pane, the user's by a pid used again, stays in the session kept for it; the
    // console closes.
    let console = console_pane(&env, &env.session(&t));
    let (c, yours) = taken_over_with_the_same_pid(&env, &t, "c", &["sleep", "100003"]);
    let session = env.session(&t);
    env.ok(&["delete", "--force"]);
    left_to_the_user(&env, &c, &yours, "delete");
    assert_eq!(env.pane_format(&console, "#{pane_id}"), None);
    // Beside a's, the user's since `shutdown --force`.
    let mut kept = vec![a.clone(), c.clone()];
    kept.sort_unstable();
    assert_eq!(panes_of(&env, &format!("{session}-kept")), kept);
}

/// `doctor` reports the tags teamctl left on a pane the user respawned (they name a process
/// the pane no longer runs: another pid, or the same pid given again to the user's program,
/// as the member's live state tells): what they are, that `doctor --fix` takes them off and
/// that the pane is left alone. `--fix` takes them off and leaves the pane and the user's
/// program. (QA: `doctor` said nothing of them, and `--fix` left them.)
#[test]
fn doctor_reports_the_tags_left_on_a_pane_the_user_respawned_and_fix_takes_them_off() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-stale");
    spawn(&env, "a");
    spawn(&env, "b");
    wait_until("b is idle", WAIT, || env.member_status("b") == "idle");
    let a = env.pane_of(&t, "a");
    let mine = take_over(&env, &a, &["sleep", "100000"]);
    assert!(!tags(&env, &a).is_empty());
    let (b, yours) = taken_over_with_the_same_pid(&env, &t, "b", &["sleep", "100001"]);

    // (a and b are dead too: a problem of their own.)
    let (_, report, _) = doctor_json(&env, &[]);
    for (pane, n) in [(&a, "a"), (&b, "b")] {
        let id = format!("{n}@{t}");
        let finding = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| {
                f["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(pane.as_str()))
            })
            .unwrap_or_else(|| panic!("nothing about {pane}: {report:#}"))
            .clone();
        assert_eq!(finding["level"], "warn", "{finding:#}");
        let message = finding["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("teamctl's tags for {id}")),
            "{message}"
        );
        assert!(message.contains("teamctl leaves it alone"), "{message}");
        let hint = finding["hint"].as_str().unwrap();
        assert!(hint.contains("`teamctl doctor --fix` takes"), "{hint}");
        assert_eq!(finding["fix"]["action"], "untag_pane", "{finding:#}");
    }
    let out = env.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("warn    panes     tmux pane {a}")),
        "{text}"
    );

    let (_, report, _) = doctor_json(&env, &["--fix"]);
    for (pane, n) in [(&a, "a"), (&b, "b")] {
        assert!(
            report["fixed"].to_string().contains(&format!(
                "took teamctl's tags for {n}@{t} off tmux pane {pane}"
            )),
            "{report:#}"
        );
    }
    left_to_the_user(&env, &a, &mine, "doctor --fix");
    left_to_the_user(&env, &b, &yours, "doctor --fix");
    let (_, report, text) = doctor_json(&env, &[]);
    assert!(!text.contains(&a), "nothing left to say: {report:#}");
    assert!(!text.contains(&b), "nothing left to say: {report:#}");
}

/// The user re-runs a teammate's pane (`respawn-pane -k` with no command): tmux runs the
/// pane's own command again, the same `teamctl worker` line, so the pane holds that
/// teammate's worker again. Returns the new worker's pid, once the pane runs it.
fn rerun(env: &TestEnv, pane: &str) -> String {
    let old = env
        .pane_format(pane, "#{pane_pid}")
        .expect("the pane is there");
    env.tmux_ok(&["respawn-pane", "-k", "-t", pane]);
    let new = env
        .pane_format(pane, "#{pane_pid}")
        .expect("the pane is there");
    assert_ne!(new, old, "respawned");
    new
}

/// A teammate's pane the user re-ran (`respawn-pane -k`, no command) runs that teammate's
/// worker again: it is the teammate, alive, in its pane. `status` shows it idle in its pane
/// with the new pid, `ask` reaches it (no second worker is started), and `shutdown`, `kill`
/// and `delete` each close exactly that pane, leaving no session kept for the user. (QA:
/// `status` called it dead and the pane the user's, `ask` started a second worker and left
/// the pane dead and untagged, `delete` kept the session as `-kept`.)
#[test]
fn a_pane_rerun_by_the_user_is_still_the_teammates() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-rerun");
    for n in ["a", "b", "c"] {
        spawn(&env, n);
    }
    for n in ["a", "b", "c"] {
        wait_until(&format!("{n} is idle"), WAIT, || {
            env.member_status(n) == "idle"
        });
    }
    let session = env.session(&t);
    let panes: Vec<String> = ["a", "b", "c"].iter().map(|n| env.pane_of(&t, n)).collect();
    for (n, pane) in ["a", "b", "c"].iter().zip(&panes) {
        let pid = rerun(&env, pane);
        let shown = || {
            let m = env.member(n);
            (m["status"].clone(), m["paneId"].clone(), m["pid"].clone())
        };
        let want = (
            serde_json::json!("idle"),
            serde_json::json!(pane),
            serde_json::json!(pid.parse::<u64>().unwrap()),
        );
        crate::common::wait_until_or_show(
            &format!("{n} shown idle in its pane with its new pid"),
            WAIT,
            || shown() == want,
            || format!("{:?} (want {want:?})", shown()),
        );
        // Its pane's tags name the worker it runs now.
        assert_eq!(
            env.pane_format(pane, "#{@teamctl-pid} #{@teamctl-agent}"),
            Some(format!("{pid} {}", env.tag(&format!("{n}@{t}"))))
        );
    }
    let answer = env.ok(&["ask", "a", "hello", "--timeout", "20"]);
    assert!(answer.contains("a got: hello"), "{answer}");
    assert_eq!(
        env.pane_format(&panes[0], "#{pane_pid} #{pane_dead}"),
        Some(format!("{} 0", env.member("a")["pid"].as_u64().unwrap())),
        "a's worker answered from its pane"
    );
    for n in ["a", "b", "c"] {
        let id = format!("{n}@{t}");
        assert_eq!(env.workers_of(&id).len(), 1, "one worker of {n}");
    }

    env.ok(&["shutdown", "a", "--timeout", "20"]);
    assert_eq!(
        env.pane_format(&panes[0], "#{pane_id}"),
        None,
        "a's pane closes"
    );
    env.ok(&["kill", "b"]);
    assert_eq!(
        env.pane_format(&panes[1], "#{pane_id}"),
        None,
        "b's pane closes"
    );
    let out = env.run(&["delete", "--force"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("stays open"), "{err}");
    assert_eq!(
        env.pane_format(&panes[2], "#{pane_id}"),
        None,
        "c's pane closes"
    );
    assert!(
        !sessions(&env).iter().any(|s| s.starts_with(&session)),
        "no session kept: {:?}",
        sessions(&env)
    );
    wait_until("no worker is left", WAIT, || env.processes().is_empty());
}

/// Between the re-run and its worker taking the pane back (held there), the teammate is not
/// taken for dead: `status` shows it starting, and an `ask` then sends it the question
/// instead of starting a second worker; once the worker goes on it answers from its pane.
#[test]
fn a_pane_rerun_is_not_taken_for_dead_before_its_worker_takes_it_back() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-rerun-gap");
    spawn(&env, "a");
    wait_until("a is idle", WAIT, || env.member_status("a") == "idle");
    let pane = env.pane_of(&t, "a");
    // The re-run worker gets the server's environment: it waits at the pause point.
    let gate = env.work.path().join("take-back");
    let pause = format!("take-back:{}", gate.display());
    env.tmux_ok(&["set-environment", "-g", "TEAMCTL_TEST_PAUSE", &pause]);
    let pid = rerun(&env, &pane);
    let reached = env.work.path().join("take-back.reached");
    wait_until("the worker reached the pause point", WAIT, || {
        reached.exists()
    });
    env.tmux_ok(&["set-environment", "-g", "-u", "TEAMCTL_TEST_PAUSE"]);
    assert_eq!(std::fs::read_to_string(&reached).unwrap(), pid);
    let shown = env.member_status("a");
    assert!(shown == "starting" || shown == "idle", "{shown}");
    let asking = env
        .cmd(&["ask", "a", "still there?", "--timeout", "20"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The question is in a's inbox: the ask did not resume a (that would record a new pane).
    wait_until("the question is sent", WAIT, || {
        env.inbox(&t, "a")
            .iter()
            .any(|m| m["text"].as_str() == Some("still there?"))
    });
    std::fs::write(&gate, "").unwrap();
    let out = asking.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("a got: still there?"), "{answer}");
    assert_eq!(env.pane_of(&t, "a"), pane, "not placed anew");
    assert_eq!(env.recorded(&t, "a")["pid"].to_string(), pid);
    assert_eq!(
        env.workers_of(&format!("a@{t}")),
        vec![pid.parse::<u32>().unwrap()]
    );
}

/// A teammate's pane the user respawned with a program of their own (`bash`) stays the
/// user's: the teammate is dead, its pane not shown as its own; `kill` leaves the pane and
/// the user's shell running and takes teamctl's tags off it.
#[test]
fn a_pane_respawned_with_bash_stays_the_users() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "tk-bash");
    spawn(&env, "a");
    wait_until("a is idle", WAIT, || env.member_status("a") == "idle");
    let pane = env.pane_of(&t, "a");
    let shell = take_over(&env, &pane, &["bash", "--norc", "--noprofile"]);
    wait_until("a is dead", WAIT, || env.member_status("a") == "dead");
    assert_eq!(env.member("a")["paneId"], serde_json::Value::Null);
    assert!(env.workers_of(&format!("a@{t}")).is_empty());
    // `--json` says what the words say: nothing killed, the pane left open (new-user QA:
    // `"killed": true` beside `leftOpen`).
    let said: serde_json::Value = serde_json::from_str(&env.ok(&["--json", "kill", "a"])).unwrap();
    assert_eq!(said["killed"], false, "{said}");
    assert_eq!(said["leftOpen"], serde_json::json!([pane]), "{said}");
    left_to_the_user(&env, &pane, &shell, "kill");
    assert_eq!(env.member_status("a"), "stopped");
}

/// A teammate's worker the user started by hand from a shell in its pane (the line `ps`
/// shows, typed after `respawn-pane -k`): the pane shows the shell, yet the worker runs and is
/// the teammate. It is running, not dead: `send` starts no second worker beside it, and
/// `resume --skip-turn` finds no turn to skip (attacker QA 41: taken for dead, its turn was
/// skipped, killed, and the next message run twice).
#[test]
fn a_worker_started_by_hand_from_its_panes_shell_is_the_teammate_running() {
    let env = TestEnv::with_tmux();
    team(&env, "alpha");
    spawn(&env, "w");
    wait_until("w idle", WAIT, || env.member_status("w") == "idle");
    let member = env.member("w");
    let pane = member["paneId"].as_str().unwrap().to_string();
    let agent_id = member["agentId"].as_str().unwrap().to_string();
    let old = env.workers_of(&agent_id);
    assert_eq!(old.len(), 1, "{old:?}");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", old[0])).unwrap();
    let line = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| format!("'{}'", String::from_utf8_lossy(a).replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    env.tmux_ok(&[
        "respawn-pane",
        "-k",
        "-t",
        &pane,
        "sh",
        "-c",
        &format!("{line}; sleep 300"),
    ]);
    wait_until("the worker started by hand", WAIT, || {
        env.workers_of(&agent_id).iter().any(|p| *p != old[0])
    });
    let mine = env.workers_of(&agent_id);
    assert_eq!(mine.len(), 1, "{mine:?}");
    // Running, at its own word (the team file still records the pane's first worker: this
    // one cannot take the pane back while the shell holds it), never dead nor "starting".
    wait_until(
        "w's state written by the worker started by hand",
        WAIT,
        || live(&env, "alpha", "w").pid == mine[0],
    );
    wait_until("w idle at its hand-started worker's word", WAIT, || {
        env.member_status("w") == "idle"
    });
    // Its pid shown, not the dead first worker's (attacker QA 41).
    assert_eq!(env.member("w")["pid"], u64::from(mine[0]));
    env.ok(&["send", "w", "hello"]);
    wait_until("w's reply", WAIT, || {
        env.inbox("alpha", "team-lead").iter().any(|m| {
            m["from"] == "w"
                && m["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("w got: hello"))
        })
    });
    assert_eq!(env.workers_of(&agent_id), mine, "no second worker");
    let out = env.run(&["resume", "w", "--skip-turn"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("w is running (idle)"),
        "{out:?}"
    );
    assert_eq!(env.workers_of(&agent_id), mine);
    env.ok(&["delete", "--force"]);
}
