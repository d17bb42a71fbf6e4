//! Attacks on isolation (issue 11, items 1-3), each played for real: two homes sharing one
//! tmux server with the same team name, symlinks planted where teamctl writes, homes owned by
//! someone else or open to everyone, and agents whose output carries terminal escapes.

use std::path::Path;
use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(20);
/// Replies with the agent's name and the message text.
const ECHO: &str = "printf '%s got: ' \"$TEAMCTL_AGENT_NAME\"; cat";

/// A second home on `a`'s private tmux server.
fn second_home(a: &TestEnv) -> TestEnv {
    let mut b = TestEnv::new();
    let socket = a.socket.clone().expect("a tmux env");
    b.env.push(("TEAMCTL_TMUX_SOCKET".into(), socket.clone()));
    b.socket = Some(socket);
    b
}

fn ask(env: &TestEnv, name: &str, text: &str) -> String {
    env.ok(&["ask", name, text, "--timeout", "20"])
}

/// Home B's team is whole: every recorded pane alive with B's tag, every worker running,
/// and `x` still answers.
fn b_is_whole(b: &TestEnv, team: &str, names: &[&str], panes: &[String], after: &str) {
    for (n, pane) in names.iter().zip(panes) {
        let state = b.pane_format(pane, "#{pane_dead} #{@teamctl-agent}");
        assert!(
            state
                .as_deref()
                .is_some_and(|s| s.starts_with(&format!("0 {n}@{team}"))),
            "after {after}: home B's pane {pane} of {n} was touched: {state:?}"
        );
        let pid = b.recorded(team, n)["pid"].as_u64().unwrap() as u32;
        assert!(
            teamctl::backend::proc::running(pid),
            "after {after}: home B's worker {n} (pid {pid}) was ended"
        );
    }
    assert_eq!(
        ask(b, names[0], &format!("still there after {after}?")).trim(),
        format!("{} got: still there after {after}?", names[0]),
        "after {after}"
    );
}

/// Two homes, the same team name, one tmux server: everything home A does to its own team
/// (kill, resume, doctor --fix, delete) leaves home B's panes and workers alive and working.
#[test]
fn two_homes_with_one_team_name_on_one_server_never_touch_each_other() {
    let a = TestEnv::with_tmux();
    let b = second_home(&a);
    let t = "sec-twin";
    for env in [&a, &b] {
        assert_eq!(env.ok(&["create", t]).trim(), t);
        for n in ["x", "y"] {
            env.ok(&["spawn", n, "--exec", ECHO, "--backend", "tmux"]);
        }
    }
    let names = ["x", "y"];
    let b_panes: Vec<String> = names.iter().map(|n| b.pane_of(t, n)).collect();
    b_is_whole(&b, t, &names, &b_panes, "spawning");
    let a_panes: Vec<String> = names.iter().map(|n| a.pane_of(t, n)).collect();

    // Home B's teammate z dies; its pane stays, dead, for B to read (and B's doctor to judge).
    b.ok(&["spawn", "z", "--exec", ECHO, "--backend", "tmux"]);
    let z_pane = b.pane_of(t, "z");
    let z_pid = b.recorded(t, "z")["pid"].as_u64().unwrap() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(z_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until("z's pane to show dead", WAIT, || {
        b.pane_format(&z_pane, "#{pane_dead}").as_deref() == Some("1")
    });

    // A pane an older teamctl tagged, without a home: nobody's to close.
    a.tmux_ok(&["new-session", "-d", "-s", "older", "sleep 600"]);
    let older = a
        .tmux_ok(&["display-message", "-p", "-t", "=older:", "#{pane_id}"])
        .trim()
        .to_string();
    a.tmux_ok(&[
        "set-option",
        "-p",
        "-t",
        &older,
        "@teamctl-agent",
        "ghost@sec-twin",
    ]);

    a.ok(&["kill", "x"]);
    b_is_whole(&b, t, &names, &b_panes, "kill in home A");
    a.ok(&["resume", "x"]);
    b_is_whole(&b, t, &names, &b_panes, "resume in home A");
    let report = a.run(&["doctor", "--fix"]);
    b_is_whole(&b, t, &names, &b_panes, "doctor --fix in home A");
    a.ok(&["shutdown", "y"]);
    b_is_whole(&b, t, &names, &b_panes, "shutdown in home A");
    assert!(
        b.pane_format(&z_pane, "#{pane_id}").is_some(),
        "home A's doctor closed home B's dead pane"
    );
    a.ok(&["delete", "--force"]);
    b_is_whole(&b, t, &names, &b_panes, "delete in home A");
    // The names and tags that keep them apart.
    assert_ne!(a.session(t), b.session(t), "one session per home");
    for (n, pane) in names.iter().zip(&b_panes) {
        assert_eq!(
            b.pane_format(pane, "#{session_name} #{@teamctl-agent}"),
            Some(format!("{} {}", b.session(t), b.tag(&format!("{n}@{t}"))))
        );
    }
    assert!(a_panes.iter().all(|p| !b_panes.contains(p)));
    assert!(
        String::from_utf8_lossy(&report.stdout).contains(&format!(
            "{older} is tagged ghost@sec-twin by an older teamctl"
        )),
        "{}",
        String::from_utf8_lossy(&report.stdout)
    );
    assert!(
        a.pane_format(&older, "#{pane_id}").is_some(),
        "an older tag is never closed"
    );
    a.tmux_ok(&["has-session", "-t", &format!("={}", b.session(t))]);
    assert!(
        !a.tmux(&["has-session", "-t", &format!("={}", a.session(t))])
            .status
            .success(),
        "home A's own session is gone"
    );
    b.ok(&["delete", "--force"]);
}

/// Two homes each run the demo (team `demo`, the same teammate names) on one tmux server:
/// `demo --stop` in home A ends A's demo only; B's panes and workers run on.
#[test]
fn demo_stop_in_one_home_leaves_another_homes_demo_running() {
    let a = TestEnv::with_tmux();
    let b = second_home(&a);
    a.ok(&["demo"]);
    b.ok(&["demo"]);
    let names = ["planner", "coder", "reviewer"];
    let b_panes: Vec<String> = names.iter().map(|n| b.pane_of("demo", n)).collect();
    let b_pids: Vec<u32> = names
        .iter()
        .map(|n| b.recorded("demo", n)["pid"].as_u64().unwrap() as u32)
        .collect();
    a.ok(&["demo", "--stop"]);
    assert!(!a.team_dir("demo").exists(), "home A's demo is gone");
    for ((n, pane), pid) in names.iter().zip(&b_panes).zip(&b_pids) {
        let state = b.pane_format(pane, "#{pane_dead} #{@teamctl-agent}");
        assert_eq!(
            state,
            Some(format!("0 {}", b.tag(&format!("{n}@demo")))),
            "home A's demo --stop touched home B's pane {pane} of {n}"
        );
        assert!(
            teamctl::backend::proc::running(*pid),
            "home A's demo --stop ended home B's worker {n} (pid {pid})"
        );
        assert_ne!(b.member_status(n), "dead", "{n}");
    }
    b.ok(&["demo", "--stop"]);
}

/// After a tmux server restart pane ids start again: home B's new pane gets the id home A
/// recorded for its teammate of the same name. Home A's resume, kill, doctor --fix and delete
/// see a pane that is not theirs and leave it.
#[test]
fn a_pane_id_reused_by_another_home_after_kill_server_is_never_touched() {
    let a = TestEnv::with_tmux();
    let b = second_home(&a);
    let t = "sec-reuse";
    a.ok(&["create", t]);
    a.ok(&["spawn", "x", "--exec", ECHO, "--backend", "tmux"]);
    let a_pane = a.pane_of(t, "x");
    let a_pid = a.recorded(t, "x")["pid"].as_u64().unwrap() as u32;
    a.tmux_ok(&["kill-server"]);
    wait_until("home A's worker ends with its server", WAIT, || {
        !teamctl::backend::proc::running(a_pid)
    });
    b.ok(&["create", t]);
    b.ok(&["spawn", "x", "--exec", ECHO, "--backend", "tmux"]);
    let b_panes = vec![b.pane_of(t, "x")];
    assert_eq!(
        b_panes[0], a_pane,
        "the pane id was reused (the attack's premise)"
    );
    assert_eq!(
        a.member_status("x"),
        "dead",
        "home A sees its teammate dead"
    );
    b_is_whole(&b, t, &["x"], &b_panes, "kill-server");

    a.ok(&["kill", "x"]);
    b_is_whole(&b, t, &["x"], &b_panes, "kill in home A");
    a.ok(&["resume", "x"]);
    assert_ne!(
        a.pane_of(t, "x"),
        a_pane,
        "home A's teammate got a pane of its own"
    );
    b_is_whole(&b, t, &["x"], &b_panes, "resume in home A");
    let _ = a.run(&["doctor", "--fix"]);
    b_is_whole(&b, t, &["x"], &b_panes, "doctor --fix in home A");
    a.ok(&["delete", "--force"]);
    b_is_whole(&b, t, &["x"], &b_panes, "delete in home A");
    b.ok(&["delete", "--force"]);
}

/// What a hostile agent prints: a clipboard write (OSC 52), a retitle (OSC 2), a screen
/// clear (CSI 2J), a one-byte CSI (U+009B, as UTF-8) and a bare CR, then a marker.
const ATTACK: &str =
    r"printf 'A\033]52;c;aGk=\007B\033]2;pwned\007C\033[2JD\302\2332JE\rF end-of-attack'";

/// No byte that could drive a terminal: no C0 control but newline and tab, no DEL, no C1.
fn assert_inert(what: &str, out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    assert!(
        text.contains("end-of-attack"),
        "{what} does not show the reply: {text:?}"
    );
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(bad.is_empty(), "{what} printed {bad:?}: {text:?}");
}

fn output(env: &TestEnv, args: &[&str]) -> Vec<u8> {
    let out = env.run(args);
    assert!(
        out.status.success(),
        "teamctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A home on a mount only another mount namespace sees (a container's, systemd's PrivateTmp)
/// looks gone from here, but its workers are alive and theirs: `doctor --fix` of another home
/// leaves them running (attacker QA 37: it ended them as orphans of a gone home). Needs
/// `unshare -m` (root, as CI runs): a test that cannot make the namespace fails.
#[test]
fn doctor_fix_leaves_a_home_seen_only_by_another_mount_namespace_alone() {
    let env = TestEnv::new();
    let mnt = tempfile::tempdir().unwrap();
    let home = mnt.path().join("home");
    let bin = crate::common::BIN;
    let script = format!(
        "mount -t tmpfs -o mode=0700 none '{m}' && '{bin}' create ns >/dev/null && '{bin}' spawn w --backend process --exec cat",
        m = mnt.path().display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("TEAMCTL_HOME", &home)
        .env_remove("TMUX")
        .env_remove("TEAMCTL_AGENT_ID")
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        out.status.success(),
        "a mount namespace is needed (run as root): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!home.exists(), "the home is seen only in its namespace");
    let needle = format!("{}\0--id\0w@ns", home.display());
    let worker = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .expect("the namespace's worker runs");
    let runs = || std::path::Path::new(&format!("/proc/{worker}")).exists();
    let fixed = env.run(&["doctor", "--fix"]);
    let said = String::from_utf8_lossy(&fixed.stdout).into_owned();
    let alive = runs();
    let _ = std::process::Command::new("kill")
        .args(["-9", &worker.to_string()])
        .status();
    assert!(
        alive,
        "doctor --fix ended another namespace's worker: {said}"
    );
    assert!(!said.contains("w@ns"), "{said}");
}

/// Names a teammate's turn can plant in the home (a worktree directory, a link under
/// `worktrees/`) with terminal escapes in them reach the leader through `doctor` (and
/// `--fix`) and `delete` as visible text (attacker QA 37: an OSC retitled the terminal, an
/// OSC 52 could write the clipboard, `\e[2J` cleared it).
#[test]
fn escapes_in_names_found_on_disk_are_shown_never_obeyed() {
    let env = TestEnv::new();
    env.ok(&["create", "esc"]);
    let worktrees = env.team_dir("esc").join("worktrees");
    let plant = || {
        std::fs::create_dir_all(&worktrees).unwrap();
        let link = worktrees.join("x\u{1b}]2;PWNED\u{7}\u{1b}[2J");
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink("/nonexistent", link).unwrap();
        }
        let _ = std::fs::create_dir(worktrees.join("y\u{1b}]52;c;cHduZWQ=\u{7}"));
    };
    let control = |what: &str, out: &[u8]| {
        let text = String::from_utf8_lossy(out);
        let bad: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
            .collect();
        assert!(bad.is_empty(), "{what} printed {bad:?}: {text:?}");
        text.into_owned()
    };
    // A task subject written into the task list by hand (`task add` refuses control
    // characters; the file is a turn's to write): `task list` and `task show` escape it.
    env.ok(&["task", "add", "plain"]);
    let tasks = env.team_dir("esc").join("tasks.json");
    let text = std::fs::read_to_string(&tasks).unwrap();
    std::fs::write(
        &tasks,
        text.replace("\"plain\"", "\"\\u001b]0;SUBJ\\u0007\\u001b[2Jsub\""),
    )
    .unwrap();
    for args in [
        &["task", "list"][..],
        &["task", "show", "1"],
        &["task", "done", "1"],
        &["task", "done", "1"],
    ] {
        let out = env.run(args);
        let said = control(&format!("{args:?}"), &out.stdout);
        assert!(said.contains("\\u{1b}]0;SUBJ"), "{args:?}: {said}");
    }
    for args in [
        &["doctor"][..],
        &["doctor", "--fix"],
        &["delete", "--force"],
    ] {
        plant();
        let out = env.run(args);
        let said = control(&format!("{args:?} stdout"), &out.stdout)
            + &control(&format!("{args:?} stderr"), &out.stderr);
        assert!(said.contains("x\\u{1b}]2;PWNED"), "{args:?}: {said}");
    }
}

/// An agent's reply full of terminal escapes reaches the leader through `ask`, `inbox`, `log`,
/// `plan list`, `task show`/`task list` and the leader console as visible text, never as
/// control bytes; `ask --raw` gives the bytes unchanged.
#[test]
fn an_agents_terminal_escapes_are_shown_never_obeyed() {
    use std::io::Write;
    let env = TestEnv::new();
    env.ok(&["create", "sec-esc"]);
    env.ok(&["spawn", "evil", "--backend", "process", "--exec", ATTACK]);
    env.ok(&[
        "spawn",
        "planner",
        "--backend",
        "process",
        "--exec",
        ECHO,
        "--plan-mode-required",
        "--plan",
        ATTACK,
    ]);
    // The console, running before any of it arrives.
    let console_out = env.work.path().join("console.out");
    let mut console = env
        .cmd(&["lead"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::fs::File::create(&console_out).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let shown = || std::fs::read(&console_out).unwrap_or_default();
    wait_until("the console to start", WAIT, || !shown().is_empty());

    let asked = output(&env, &["ask", "evil", "hi", "--timeout", "20"]);
    assert_inert("ask", &asked);
    let raw = output(&env, &["ask", "--raw", "evil", "hi", "--timeout", "20"]);
    let raw_text = String::from_utf8_lossy(&raw);
    for seq in [
        "\x1b]52;c;aGk=\x07",
        "\x1b]2;pwned\x07",
        "\x1b[2J",
        "\u{9b}2J",
        "E\rF",
    ] {
        assert!(
            raw_text.contains(seq),
            "ask --raw lost {seq:?}: {raw_text:?}"
        );
    }

    env.ok(&["send", "evil", "once more"]);
    wait_until("evil's third reply", WAIT, || {
        env.inbox("sec-esc", "team-lead")
            .iter()
            .filter(|m| {
                m["from"] == "evil"
                    && m["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("end-of-attack"))
            })
            .count()
            >= 3
    });
    assert_inert("inbox", &output(&env, &["inbox"]));
    assert_inert("log", &output(&env, &["log"]));

    env.ok(&["send", "planner", "make a plan"]);
    wait_until("the planner's plan waits for approval", WAIT, || {
        env.ok(&["--json", "plan", "list"])
            .contains("end-of-attack")
    });
    assert_inert("plan list", &output(&env, &["plan", "list"]));

    // A task whose description and result an agent wrote: `task show` and `task list`.
    let attack = "A\x1b]52;c;aGk=\x07B\x1b]2;pwned\x07C\x1b[2JD\u{9b}2JE\rF end-of-attack";
    env.ok(&["--as", "evil", "task", "add", "from evil", "-d", attack]);
    env.ok(&["--as", "evil", "task", "claim", "1"]);
    env.ok(&["--as", "evil", "task", "done", "1", "--result", attack]);
    assert_inert("task show", &output(&env, &["task", "show", "1"]));
    assert_inert("task list", &output(&env, &["task", "list"]));

    wait_until("the plan on the console", WAIT, || {
        String::from_utf8_lossy(&shown()).contains("asks to approve a plan")
    });
    let mut stdin = console.stdin.take().unwrap();
    let _ = stdin.write_all(b"/quit\n");
    drop(stdin);
    assert!(console.wait().unwrap().success());
    assert_inert("the leader console", &shown());
}

/// The worker's pane shows the agent's output as it runs: escapes there as text too, never
/// obeyed (attacker QA: an agent retitled the pane, which carries the member's name, and
/// cleared it). The log file keeps the bytes as the agent wrote them.
#[test]
fn an_agents_escapes_in_its_own_pane_are_shown_never_obeyed() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "sec-pane"]);
    env.ok(&["spawn", "evil", "--exec", ATTACK]);
    let pane = env.pane_of("sec-pane", "evil");
    let title = env.pane_format(&pane, "#{pane_title}");
    let asked = output(&env, &["ask", "evil", "hi", "--timeout", "20"]);
    assert_inert("ask", &asked);
    let screen = || env.tmux_ok(&["capture-pane", "-p", "-J", "-S", "-", "-t", &pane]);
    wait_until("the reply in the pane", WAIT, || {
        screen().contains("end-of-attack")
    });
    let shown = screen();
    for seq in [
        r"\u{1b}]52;c;aGk=",
        r"\u{1b}]2;pwned",
        r"\u{1b}[2J",
        r"\u{9b}2J",
    ] {
        assert!(shown.contains(seq), "{seq} not shown as text: {shown}");
    }
    assert_eq!(env.pane_format(&pane, "#{pane_title}"), title);
    // Nor through /dev/tty: a turn has no controlling terminal (attacker QA: it retitled and
    // cleared the pane that way, and could read what the user typed there).
    env.ok(&[
        "spawn",
        "tty",
        "--exec",
        r"printf '\033]2;ttypwned\007' 2>/dev/null >/dev/tty && echo wrote-tty || echo no-tty",
    ]);
    let tty_pane = env.pane_of("sec-pane", "tty");
    let tty_title = env.pane_format(&tty_pane, "#{pane_title}");
    assert_eq!(
        output(&env, &["ask", "tty", "hi", "--timeout", "20"]),
        b"no-tty\n"
    );
    assert_eq!(env.pane_format(&tty_pane, "#{pane_title}"), tty_title);
    let log = std::fs::read(env.team_dir("sec-pane").join("logs").join("evil.log")).unwrap();
    assert!(
        String::from_utf8_lossy(&log).contains("\x1b]2;pwned\x07"),
        "the log keeps the agent's bytes"
    );
}

/// A file outside the home that a planted link points at, and its bytes.
struct Victim {
    path: std::path::PathBuf,
    bytes: Vec<u8>,
}

impl Victim {
    fn new(env: &TestEnv, name: &str, bytes: &[u8]) -> Victim {
        let path = env.work.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        Victim {
            path,
            bytes: bytes.to_vec(),
        }
    }

    /// Plant a link to the victim at `at` (its directory made as teamctl would).
    fn plant(&self, at: &std::path::Path) {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(at);
        std::os::unix::fs::symlink(&self.path, at).unwrap();
    }

    fn assert_untouched(&self, what: &str) {
        assert_eq!(
            std::fs::read(&self.path).unwrap(),
            self.bytes,
            "{what}: teamctl wrote through the link into {}",
            self.path.display()
        );
    }
}

/// A team with a stopped teammate `bob` (process backend) and one message for the leader.
fn team_with_bob(env: &TestEnv) -> std::path::PathBuf {
    env.ok(&["create", "sec-link"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["kill", "bob"]);
    env.team_dir("sec-link")
}

/// `teamctl ARGS` fails with exit 1 and says a link was refused, naming it.
fn refuses_link(env: &TestEnv, args: &[&str], link: &std::path::Path) {
    let err = env.fails(args, 1);
    assert!(
        err.contains("symbolic link") && err.contains(&link.display().to_string()),
        "teamctl {args:?}: {err}"
    );
}

/// Links planted at the files a command writes: inbox log, inbox lock, cursor, team file,
/// team lock, task list; and at the directories: an inbox, its cursors, `state`, the team
/// directory, `teams/`. Each write fails clearly and the file the link points at keeps its
/// bytes (a dangling link's target is never created).
#[test]
fn links_planted_at_state_files_are_never_written_through() {
    let env = TestEnv::new();
    let dir = team_with_bob(&env);
    let lead = dir.join("inboxes/team-lead");

    // The leader's inbox log: a send appends to it.
    let victim = Victim::new(&env, "victim-inbox", b"precious\n");
    let log = lead.join("inbox.jsonl");
    let saved = std::fs::read(&log).unwrap();
    victim.plant(&log);
    refuses_link(&env, &["send", "--as", "bob", "team-lead", "hi"], &log);
    victim.assert_untouched("send (inbox)");
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, &saved).unwrap();

    // The inbox lock, dangling: the send would create the target.
    let lock = lead.join("cursors/.inbox.lock");
    let target = env.work.path().join("created-by-lock");
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    refuses_link(&env, &["send", "--as", "bob", "team-lead", "hi"], &lock);
    assert!(!target.exists(), "the lock link's target was created");
    std::fs::remove_file(&lock).unwrap();

    // The leader's `inbox` cursor: reading marks the mail read.
    env.ok(&["send", "--as", "bob", "team-lead", "hello"]);
    let victim = Victim::new(&env, "victim-cursor", b"precious cursor\n");
    let cursor = lead.join("cursors/inbox");
    victim.plant(&cursor);
    refuses_link(&env, &["inbox"], &cursor);
    victim.assert_untouched("inbox (cursor)");
    std::fs::remove_file(&cursor).unwrap();

    // The task list and its lock.
    env.ok(&["task", "add", "first"]);
    let tasks = dir.join("tasks.json");
    let victim = Victim::new(&env, "victim-tasks", &std::fs::read(&tasks).unwrap());
    victim.plant(&tasks);
    refuses_link(&env, &["task", "add", "second"], &tasks);
    victim.assert_untouched("task add (tasks.json)");
    std::fs::remove_file(&tasks).unwrap();
    std::fs::write(&tasks, &victim.bytes).unwrap();
    let tasks_lock = dir.join("tasks.lock");
    let target = env.work.path().join("created-by-tasks-lock");
    let _ = std::fs::remove_file(&tasks_lock);
    std::os::unix::fs::symlink(&target, &tasks_lock).unwrap();
    refuses_link(&env, &["task", "add", "second"], &tasks_lock);
    assert!(!target.exists(), "the tasks lock link's target was created");
    std::fs::remove_file(&tasks_lock).unwrap();

    // The team file and its lock.
    let config = dir.join("config.json");
    let victim = Victim::new(&env, "victim-config", &std::fs::read(&config).unwrap());
    victim.plant(&config);
    refuses_link(
        &env,
        &["spawn", "carol", "--backend", "process", "--exec", "cat"],
        &config,
    );
    victim.assert_untouched("spawn (config.json)");
    std::fs::remove_file(&config).unwrap();
    std::fs::write(&config, &victim.bytes).unwrap();
    let config_lock = dir.join("config.lock");
    let target = env.work.path().join("created-by-config-lock");
    let _ = std::fs::remove_file(&config_lock);
    std::os::unix::fs::symlink(&target, &config_lock).unwrap();
    refuses_link(
        &env,
        &["spawn", "carol", "--backend", "process", "--exec", "cat"],
        &config_lock,
    );
    assert!(!target.exists(), "the team lock link's target was created");
    std::fs::remove_file(&config_lock).unwrap();

    // The leader's inbox directory, or its `cursors`, replaced by a link to a directory
    // outside the home: a send would write the record and the lock there.
    for sub in ["", "cursors"] {
        let victim_dir = env
            .work
            .path()
            .join(format!("victim-inbox-dir{}", sub.len()));
        std::fs::create_dir(&victim_dir).unwrap();
        let real = if sub.is_empty() {
            lead.clone()
        } else {
            lead.join(sub)
        };
        let saved = env.work.path().join(format!("saved-{}", sub.len()));
        std::fs::rename(&real, &saved).unwrap();
        std::os::unix::fs::symlink(&victim_dir, &real).unwrap();
        refuses_link(&env, &["send", "--as", "bob", "team-lead", "hi"], &real);
        assert_eq!(std::fs::read_dir(&victim_dir).unwrap().count(), 0, "{sub}");
        std::fs::remove_file(&real).unwrap();
        std::fs::rename(&saved, &real).unwrap();
    }

    // A state directory that is a link: refused before anything is read or written.
    let victim_dir = env.work.path().join("victim-dir");
    std::fs::create_dir(&victim_dir).unwrap();
    let state = dir.join("state");
    std::fs::rename(&state, env.work.path().join("state-saved")).unwrap();
    std::os::unix::fs::symlink(&victim_dir, &state).unwrap();
    refuses_link(&env, &["status"], &state);
    assert_eq!(std::fs::read_dir(&victim_dir).unwrap().count(), 0);
    std::fs::remove_file(&state).unwrap();
    std::fs::rename(env.work.path().join("state-saved"), &state).unwrap();

    // The team directory, or `teams/` itself, replaced by a link to a copy elsewhere: a send
    // would write the record there.
    let teams = dir.parent().unwrap().to_path_buf();
    for real in [dir.clone(), teams] {
        let moved = env.work.path().join("moved");
        std::fs::rename(&real, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &real).unwrap();
        let before = crate::common::snapshot(&moved);
        refuses_link(&env, &["send", "bob", "through the link"], &real);
        assert_eq!(
            crate::common::snapshot(&moved),
            before,
            "{}",
            real.display()
        );
        std::fs::remove_file(&real).unwrap();
        std::fs::rename(&moved, &real).unwrap();
    }
    env.ok(&["status"]);
}

/// Links planted where a worker writes: its log (process backend) and its live state.
#[test]
fn links_planted_at_a_workers_log_and_live_state_are_never_written_through() {
    let env = TestEnv::new();
    let dir = team_with_bob(&env);

    let log = dir.join("logs/bob.log");
    let victim = Victim::new(&env, "victim-log", b"precious log\n");
    victim.plant(&log);
    refuses_link(&env, &["resume", "bob"], &log);
    victim.assert_untouched("resume (worker log)");
    std::fs::remove_file(&log).unwrap();

    let live = dir.join("state/bob.json");
    let victim = Victim::new(&env, "victim-live", b"precious state\n");
    victim.plant(&live);
    env.ok(&["resume", "bob"]);
    // The worker, the live state's one writer, puts a file of its own in the link's place
    // (renamed over it: the link's target is never written), and says so.
    wait_until(
        "bob's worker to say it replaced its spoiled state file",
        WAIT,
        || {
            std::fs::read_to_string(&log)
                .is_ok_and(|l| l.contains("the live-state file was spoiled"))
        },
    );
    env.ok(&["send", "bob", "work"]);
    wait_until("bob's reply", WAIT, || {
        env.inbox("sec-link", "team-lead")
            .iter()
            .any(|m| m["from"] == "bob" && m["text"] == "work")
    });
    victim.assert_untouched("a worker's live state");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains(&live.display().to_string()),
        "the worker names the file"
    );
    assert!(
        std::fs::symlink_metadata(&live).unwrap().is_file(),
        "a state file of the worker's own in the link's place"
    );
}

/// `teamctl ARGS`, which must end within `WAIT`: killed, and the test failed, if it does not.
fn ends_within_wait(env: &TestEnv, args: &[&str]) -> std::process::Output {
    crate::common::ends_within(env.cmd(args), WAIT)
}

/// A FIFO planted at an inbox log (attacker QA): `send` appended into it and reported success,
/// and a worker whose own log it was hung in `open` while it looked idle. Now a send is refused
/// at once, naming it, and such a worker ends, saying why.
#[test]
fn a_fifo_planted_at_an_inbox_log_is_refused_never_waited_on() {
    let env = TestEnv::new();
    env.ok(&["create", "sec-fifo"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["wait", "bob"]);
    let dir = env.team_dir("sec-fifo");
    let plant = |log: &Path| {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(log.parent().unwrap())
            .unwrap();
        let _ = std::fs::remove_file(log);
        nix::unistd::mkfifo(
            log,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap();
    };
    let refused = |out: &std::process::Output, log: &Path| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("is not a regular file") && err.contains(&log.display().to_string()),
            "{err}"
        );
    };

    // The leader's log: `send` appends to it.
    let lead_log = dir.join("inboxes/team-lead/inbox.jsonl");
    plant(&lead_log);
    let out = ends_within_wait(&env, &["send", "--as", "bob", "team-lead", "hi"]);
    refused(&out, &lead_log);
    std::fs::remove_file(&lead_log).unwrap();

    // The worker's own log: it ends, and says why; a send to it is refused too.
    let bob_log = dir.join("inboxes/bob/inbox.jsonl");
    plant(&bob_log);
    let worker_log = dir.join("logs/bob.log");
    wait_until("bob's worker to end, naming the FIFO", WAIT, || {
        std::fs::read_to_string(&worker_log).is_ok_and(|l| l.contains("is not a regular file"))
            && env.member_status("bob") == "dead"
    });
    let out = ends_within_wait(&env, &["send", "bob", "hi"]);
    refused(&out, &bob_log);
}

fn assert_empty_dir(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(left.is_empty(), "something was written: {left:?}");
}

/// A home others can write to is refused before anything is written, naming it; so is a team
/// directory others can write to.
#[test]
fn a_home_or_team_others_can_write_to_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let home = env.home_path();
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = env.fails(&["create", "sec-open"], 1);
    assert!(
        err.contains(&home.display().to_string()) && err.contains("others can write"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_empty_dir(home);
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700)).unwrap();

    env.ok(&["create", "sec-open"]);
    let team = env.team_dir("sec-open");
    std::fs::set_permissions(&team, std::fs::Permissions::from_mode(0o757)).unwrap();
    let before = crate::common::snapshot(home);
    let err = env.fails(&["send", "team-lead", "hi"], 1);
    assert!(
        err.contains(&team.display().to_string()) && err.contains("others can write"),
        "{err}"
    );
    assert_eq!(crate::common::snapshot(home), before, "nothing written");
}

/// As root, a home owned by another user is refused: teamctl would otherwise write as root
/// into files that user chose. (Run as another user, the test makes a home it cannot give
/// away, so it checks a foreign home that way: owned by root.)
#[test]
fn a_home_owned_by_another_user_is_refused() {
    let env = TestEnv::new();
    let uid = nix::unistd::geteuid();
    let (home, other) = if uid.is_root() {
        let home = env.home_path().to_path_buf();
        nix::unistd::chown(&home, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        (home, 65534)
    } else {
        // Someone else's directory: `/` belongs to root.
        (std::path::PathBuf::from("/"), 0)
    };
    let out = env
        .cmd(&["create", "sec-foreign"])
        .env("TEAMCTL_HOME", &home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&home.display().to_string()) && err.contains(&format!("owned by uid {other}")),
        "{err}"
    );
    if uid.is_root() {
        assert_empty_dir(&home);
        nix::unistd::chown(&home, Some(uid), None).unwrap();
        // A team directory given to another user: refused the same way, nothing written.
        env.ok(&["create", "sec-foreign"]);
        let team = env.team_dir("sec-foreign");
        nix::unistd::chown(&team, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let before = crate::common::snapshot(&home);
        let err = env.fails(&["send", "team-lead", "hi"], 1);
        assert!(
            err.contains(&team.display().to_string()) && err.contains("owned by uid 65534"),
            "{err}"
        );
        assert_eq!(crate::common::snapshot(&home), before, "nothing written");
    }
}

/// Workers of `agent_id` whatever home path started them.
fn workers_of(agent_id: &str) -> Vec<u32> {
    let all: Vec<u32> = teamctl::backend::proc::pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
                args.get(1) == Some(&&b"worker"[..])
                    && args
                        .windows(2)
                        .any(|w| w[0] == b"--id" && w[1] == agent_id.as_bytes())
            })
        })
        .collect();
    crate::common::not_forks_of_each_other(&all)
}

#[test]
fn a_home_reached_through_a_link_is_the_same_home() {
    let env = TestEnv::new();
    env.ok(&["create", "lnkhome"]);
    env.ok(&["spawn", "w", "--backend", "process", "--exec", "cat"]);
    wait_until("w idle", Duration::from_secs(20), || {
        env.member_status("w") == "idle"
    });
    let link = env.work.path().join("lnk");
    std::os::unix::fs::symlink(env.home_path(), &link).unwrap();
    let via_link = |args: &[&str]| {
        let out = env.cmd(args).env("TEAMCTL_HOME", &link).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // Seen through the link, the running worker is the same worker: idle, not dead...
    let (code, status) = via_link(&["--json", "status"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    let w = v["members"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "w"))
        .cloned()
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(w["status"], "idle", "{w}");
    // ...which a resume does not start a second time.
    let (code, _) = via_link(&["resume", "w"]);
    assert_eq!(code, Some(0));
    assert_eq!(workers_of("w@lnkhome").len(), 1, "a second worker for w");
    // A worker started through the link is ended by the real path's delete.
    env.ok(&["kill", "w"]);
    let (code, _) = via_link(&["resume", "w"]);
    assert_eq!(code, Some(0));
    wait_until("w idle again", Duration::from_secs(20), || {
        env.member_status("w") == "idle"
    });
    env.ok(&["delete", "--force"]);
    assert!(
        workers_of("w@lnkhome").is_empty(),
        "a worker outlived delete"
    );
}

/// `TEAMCTL_STORE` may carry a login (`nats://USER:PASS@...`): a worker and its agent's turns
/// never inherit it, and the environment recorded for resumes never holds it.
#[test]
fn the_store_address_with_its_login_reaches_no_worker_or_turn() {
    for tmux in [false, true] {
        let mut env = if tmux {
            TestEnv::with_tmux()
        } else {
            TestEnv::new()
        };
        env.ok(&["create", "t"]);
        env.env.push((
            "TEAMCTL_STORE".into(),
            "nats://alice:s3cretPW@127.0.0.1:1".into(),
        ));
        let seen = env.home_path().join("seen.env");
        let exec = format!("env > {}; echo done", seen.display());
        let backend = if tmux { "tmux" } else { "process" };
        env.ok(&["spawn", "bob", "--backend", backend, "--exec", &exec]);
        assert_eq!(env.ok(&["ask", "bob", "go"]).trim(), "done");
        let turn = std::fs::read_to_string(&seen).unwrap();
        assert!(turn.contains("TEAMCTL_AGENT_NAME=bob"), "{turn}");
        assert!(
            !turn.contains("s3cretPW"),
            "{backend}: the turn saw the login:\n{turn}"
        );
        let recorded = std::fs::read(env.team_dir("t").join("env").join("bob")).unwrap();
        assert!(
            !String::from_utf8_lossy(&recorded).contains("s3cretPW"),
            "{backend}: the recorded environment holds the login"
        );
    }
}

/// A worktree path in the team file that is not where teamctl makes worktrees
/// (`teams/TEAM/worktrees/NAME`) is never removed: `delete` (forced too) and `shutdown
/// --remove-worktree` once removed whatever directory the file named.
#[test]
fn a_recorded_worktree_outside_the_team_is_never_removed() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["shutdown", "bob", "--timeout", "20"]);
    let victim = env.work.path().join("victim");
    std::fs::create_dir_all(victim.join("sub")).unwrap();
    std::fs::write(victim.join("sub/data.txt"), "keep me").unwrap();
    let path = env.team_dir("alpha").join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for m in config["members"].as_array_mut().unwrap() {
        if m["name"] == "bob" {
            m["worktree"] = victim.display().to_string().into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    let out = env.run(&["shutdown", "bob", "--remove-worktree"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not where teamctl makes worktrees"),
        "{out:?}"
    );
    assert!(victim.join("sub/data.txt").is_file(), "shutdown removed it");
    env.run(&["delete", "--force"]);
    assert!(victim.join("sub/data.txt").is_file(), "delete removed it");
}

/// Set bob's recorded worktree in team `team`'s file to `to` (as a teammate's turn could).
/// Spawn NAME (`cat`, process backend) in a worktree of `repo`.
pub(crate) fn spawn_in_worktree(env: &TestEnv, name: &str, repo: &Path) {
    env.ok(&[
        "spawn",
        name,
        "--backend",
        "process",
        "--cwd",
        repo.to_str().unwrap(),
        "--worktree",
        "--exec",
        "cat",
    ]);
}

fn record_worktree(env: &TestEnv, team: &str, to: &Path) {
    let path = env.team_dir(team).join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for m in config["members"].as_array_mut().unwrap() {
        if m["name"] == "bob" {
            m["worktree"] = to.display().to_string().into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
}

/// A member's worktree recorded under another spelling of where teamctl makes it is the
/// member's, by the home's own path (attacker QA 43): spelled `worktrees/../worktrees/bob`,
/// `doctor` said it belonged to no member and `--fix` removed it under its running teammate;
/// through a link outside the home to `worktrees`, `shutdown --remove-worktree` removed that
/// link, the user's own, as if it were one planted in the home.
#[test]
fn a_worktree_recorded_under_another_spelling_is_its_members() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let repo = crate::lifecycle::repo(&env);
    spawn_in_worktree(&env, "bob", &repo);
    wait_until("bob idle", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    let dir = env.team_dir("alpha").join("worktrees");
    let tree = dir.join("bob");
    record_worktree(&env, "alpha", &dir.join("../worktrees/bob"));
    let out = env.run(&["doctor", "--fix"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("belongs to no member"), "{said}");
    assert!(
        tree.is_dir(),
        "doctor --fix removed a running teammate's worktree: {said}"
    );
    // Through a link of the user's, outside the home, to the team's `worktrees`.
    let link = env.work.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    record_worktree(&env, "alpha", &link.join("bob"));
    let out = env.ok(&["shutdown", "bob", "--remove-worktree"]);
    assert!(
        out.contains(&format!("removed bob's worktree {}", tree.display())),
        "{out}"
    );
    assert!(
        link.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink()),
        "the user's link was removed"
    );
    assert!(!tree.exists());
    env.ok(&["delete", "--force"]);
}

/// A running teammate recorded stopped by a team file written over, its `agentId` forged too,
/// keeps its worktree: `doctor --fix` finds its worker by the id its name and team make
/// (attacker re-check 43: the recorded id alone hid it, and the tree went under it).
#[test]
fn a_worker_hidden_by_a_forged_record_keeps_its_worktree() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let repo = crate::lifecycle::repo(&env);
    spawn_in_worktree(&env, "bob", &repo);
    wait_until("bob idle", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    let tree = env.team_dir("alpha").join("worktrees/bob");
    let path = env.team_dir("alpha").join("config.json");
    let true_record = std::fs::read(&path).unwrap();
    let mut config: serde_json::Value = serde_json::from_slice(&true_record).unwrap();
    for m in config["members"].as_array_mut().unwrap() {
        if m["name"] == "bob" {
            m["agentId"] = "nobody@elsewhere".into();
            m["status"] = "stopped".into();
            m["pid"] = serde_json::Value::Null;
        }
    }
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    let _ = std::fs::remove_file(env.team_dir("alpha").join("state/bob.json"));
    let out = env.run(&["doctor", "--fix"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        tree.is_dir(),
        "doctor --fix removed the worktree under its running teammate: {said}"
    );
    assert!(
        said.contains("bob@alpha has a worker running now; its worktree"),
        "{said}"
    );
    // The true record back, so the delete ends that worker.
    std::fs::write(&path, true_record).unwrap();
    env.ok(&["delete", "--force"]);
}

/// What a teammate's turn can write into its worktree and the repository's shared config
/// neither runs from the leader's looks nor hides work from them (attacker QA 44): a promisor
/// remote's `uploadpack` (a lazy fetch for a missing object ran it from a plain `doctor`),
/// `core.worktree` pointing the look at a clean directory, `core.ignorecase` hiding a new file,
/// files under a nested `.git`, commits on a detached HEAD. Each tree is kept, said why.
#[test]
fn a_teammates_git_config_neither_runs_nor_hides_work_from_the_leader() {
    use crate::lifecycle::git;
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let repo = crate::lifecycle::repo(&env);
    let names = [
        "wt", "case", "nest", "head", "logged", "kept", "orig", "rebase", "raw", "eq", "lazy",
    ];
    for n in names {
        spawn_in_worktree(&env, n, &repo);
    }
    env.ok(&["shutdown", "--all"]);
    let tree = |n: &str| env.team_dir("alpha").join("worktrees").join(n);
    // core.worktree in the tree's own config, at the clean repository.
    std::fs::write(tree("wt").join("work.txt"), "mine\n").unwrap();
    git(&repo, &["config", "extensions.worktreeConfig", "true"]);
    git(
        &tree("wt"),
        &[
            "config",
            "--worktree",
            "core.worktree",
            repo.to_str().unwrap(),
        ],
    );
    // A new file that differs from a tracked one only by case.
    git(
        &tree("case"),
        &["config", "--worktree", "core.ignorecase", "true"],
    );
    std::fs::write(tree("case").join("readme"), "mine\n").unwrap();
    // Files under a nested `.git`.
    std::fs::create_dir_all(tree("nest").join("notes/.git")).unwrap();
    std::fs::write(tree("nest").join("notes/.git/draft.md"), "mine\n").unwrap();
    // A commit on a detached HEAD.
    git(&tree("head"), &["checkout", "-q", "--detach"]);
    std::fs::write(tree("head").join("f"), "mine\n").unwrap();
    git(&tree("head"), &["add", "f"]);
    git(&tree("head"), &["commit", "-q", "-m", "work"]);
    let said = |n: &str| {
        let err = env.fails(&["shutdown", n, "--remove-worktree"], 1);
        assert!(tree(n).is_dir(), "{n}'s worktree was removed: {err}");
        err
    };
    assert!(said("wt").contains("uncommitted changes"));
    assert!(said("case").contains("uncommitted changes"));
    assert!(said("nest").contains("files git never shows, in notes/.git"));
    assert!(said("head").contains("1 commit on no branch"));
    // Commits the worktree alone holds with its HEAD back on its branch (attacker QA 47):
    // made detached, then held by HEAD's log only, or by a per-worktree ref only.
    let detached_commit = |n: &str| {
        git(&tree(n), &["checkout", "-q", "--detach"]);
        git(&tree(n), &["commit", "-q", "--allow-empty", "-m", "mine"]);
        let commit = git(&tree(n), &["rev-parse", "HEAD"]);
        git(&tree(n), &["checkout", "-q", &format!("teamctl/{n}@alpha")]);
        commit
    };
    let commit = detached_commit("logged");
    let err = said("logged");
    assert!(
        err.contains(&format!(
            "1 commit on no branch, the newest {}",
            &commit[..12]
        )) && err.contains(&format!(
            "`git -C {} branch NAME {}` keeps",
            repo.display(),
            &commit[..12]
        )),
        "{err}"
    );
    let commit = detached_commit("kept");
    git(&tree("kept"), &["update-ref", "refs/worktree/wip", &commit]);
    let log = git(&tree("kept"), &["rev-parse", "--git-path", "logs/HEAD"]);
    std::fs::remove_file(tree("kept").join(log)).unwrap();
    assert!(said("kept").contains("1 commit on no branch"));
    // A commit reset away, with reflogs off: held by ORIG_HEAD alone (attacker QA 48).
    let no_log = |n: &str| {
        for log in ["logs/HEAD", &format!("logs/refs/heads/teamctl/{n}@alpha")] {
            let at = git(
                &tree(n),
                &["rev-parse", "--path-format=absolute", "--git-path", log],
            );
            let _ = std::fs::remove_file(at);
        }
    };
    no_log("orig");
    let unlogged = ["-c", "core.logAllRefUpdates=false"];
    git(
        &tree("orig"),
        &[
            &unlogged[..],
            &["commit", "-q", "--allow-empty", "-m", "gone"],
        ]
        .concat(),
    );
    git(
        &tree("orig"),
        &[&unlogged[..], &["reset", "-q", "--hard", "HEAD~1"]].concat(),
    );
    assert!(said("orig").contains("1 commit on no branch"));
    // A rebase stopped half-way, the changes it set aside (`--autostash`) held by the tree's
    // git directory alone, its status clean (attacker QA 48).
    std::fs::write(tree("rebase").join("x"), "x\n").unwrap();
    git(&tree("rebase"), &["add", "x"]);
    git(&tree("rebase"), &["commit", "-q", "-m", "c1"]);
    std::fs::write(tree("rebase").join("README"), "mine\n").unwrap();
    git(
        &tree("rebase"),
        &[
            "-c",
            "sequence.editor=sed -i 1s/^pick/edit/",
            "rebase",
            "-q",
            "-i",
            "--autostash",
            "HEAD~1",
        ],
    );
    assert_eq!(git(&tree("rebase"), &["status", "--porcelain"]), "");
    let err = said("rebase");
    assert!(
        err.contains("a rebase in progress")
            && err.contains(&format!(
                "`git -C {} rebase --continue` or `--abort` ends it",
                tree("rebase").display()
            )),
        "{err}"
    );
    // An assume-unchanged file whose name is not UTF-8, changed.
    {
        use std::os::unix::ffi::OsStrExt as _;
        let raw = std::ffi::OsStr::from_bytes(b"\xff.txt");
        std::fs::write(tree("raw").join(raw), "v1\n").unwrap();
        git(&tree("raw"), &["add", "-A"]);
        git(&tree("raw"), &["commit", "-q", "-m", "raw"]);
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(tree("raw"))
            .args(["update-index", "--assume-unchanged", "--"])
            .arg(raw)
            .status()
            .unwrap();
        assert!(ok.success());
        std::fs::write(tree("raw").join(raw), "edited\n").unwrap();
    }
    assert!(said("raw").contains("changes git is told not to show"));
    // A filter driver whose name holds `=` (`-c filter.x=y.clean=` set `filter.x`).
    let ran = env.work.path().join("FILTERED");
    git(
        &repo,
        &[
            "config",
            "filter.x=y.clean",
            &format!("sh -c 'echo ran >> {}; cat'", ran.display()),
        ],
    );
    let attributes = git(&repo, &["rev-parse", "--git-path", "info/attributes"]);
    let attributes = repo.join(attributes);
    std::fs::create_dir_all(attributes.parent().unwrap()).unwrap();
    std::fs::write(&attributes, "* filter=x=y\n").unwrap();
    std::fs::write(tree("eq").join("README"), "changed by eq\n").unwrap();
    let _ = env.run(&["doctor"]);
    let _ = said("eq");
    assert!(
        !ran.exists(),
        "the teammate's filter ran from the leader's look"
    );
    std::fs::remove_file(&attributes).unwrap();
    // Last (the config is the repository's, shared): a promisor remote whose `uploadpack` a
    // lazy fetch would run, for the tree of a commit git lacks.
    let pwned = env.work.path().join("PWNED");
    let commit = {
        let mut c = std::process::Command::new("git");
        c.arg("-C")
            .arg(tree("lazy"))
            .args([
                "hash-object",
                "-t",
                "commit",
                "-w",
                "--literally",
                "--stdin",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"tree 1111111111111111111111111111111111111111\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nx\n")
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    git(
        &tree("lazy"),
        &["update-ref", "refs/heads/teamctl/lazy@alpha", commit.trim()],
    );
    git(&repo, &["config", "remote.evil.url", "/nonexistent"]);
    git(&repo, &["config", "remote.evil.promisor", "true"]);
    git(
        &repo,
        &[
            "config",
            "remote.evil.uploadpack",
            &format!("touch {}; false", pwned.display()),
        ],
    );
    let _ = env.run(&["doctor"]);
    assert!(said("lazy").contains("cannot check"));
    let refused = env.run(&["delete"]);
    assert!(
        !pwned.exists(),
        "a lazy fetch ran the teammate's uploadpack"
    );
    // One worktree a line, then what to do, fit for each kind of work (new-user QA 48:
    // "commit it" of commits already made, on one line with nested parentheses).
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains(&format!(
            "work that may be lost in {} worktrees:\n  ",
            names.len()
        )) && err.contains("\nsave what is worth keeping there (the branches are kept)"),
        "{err}"
    );
    for n in names {
        assert!(tree(n).is_dir(), "{n}'s worktree went with a plain delete");
    }
    git(&repo, &["config", "--remove-section", "remote.evil"]);
    // A commit reset away on the tree's own branch is still in that branch's log, which stays:
    // nothing is lost, and the tree goes.
    spawn_in_worktree(&env, "reset", &repo);
    env.ok(&["shutdown", "reset"]);
    git(
        &tree("reset"),
        &["commit", "-q", "--allow-empty", "-m", "undone"],
    );
    git(&tree("reset"), &["reset", "-q", "--hard", "HEAD~1"]);
    env.ok(&["shutdown", "reset", "--remove-worktree"]);
    assert!(!tree("reset").exists());
    // A commit made detached and kept by a ref of the repository's (attacker QA 48: counted
    // as held by the tree alone).
    spawn_in_worktree(&env, "held", &repo);
    env.ok(&["shutdown", "held"]);
    git(&tree("held"), &["checkout", "-q", "--detach"]);
    git(
        &tree("held"),
        &["commit", "-q", "--allow-empty", "-m", "kept"],
    );
    git(&tree("held"), &["update-ref", "refs/keep/mine", "HEAD"]);
    git(&tree("held"), &["checkout", "-q", "teamctl/held@alpha"]);
    env.ok(&["shutdown", "held", "--remove-worktree"]);
    assert!(!tree("held").exists());
    env.ok(&["delete", "--force"]);
}

/// A worktree removed by hand whose git record alone holds a commit (made detached, then its
/// branch checked out again) is not forgotten by `resume`: refused, saying how to keep the
/// commit, and made again once it is kept (attacker QA 48: git's record, with HEAD's log, was
/// removed, and the commit with it).
#[test]
fn a_removed_worktrees_record_holding_commits_is_kept() {
    use crate::lifecycle::git;
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let repo = crate::lifecycle::repo(&env);
    spawn_in_worktree(&env, "amy", &repo);
    env.ok(&["shutdown", "amy"]);
    let tree = env.team_dir("alpha").join("worktrees/amy");
    git(&tree, &["checkout", "-q", "--detach"]);
    git(&tree, &["commit", "-q", "--allow-empty", "-m", "lone"]);
    let commit = git(&tree, &["rev-parse", "HEAD"]);
    git(&tree, &["checkout", "-q", "teamctl/amy@alpha"]);
    std::fs::remove_dir_all(&tree).unwrap();
    let err = env.fails(&["resume", "amy"], 1);
    assert!(
        err.contains("git's record of it is kept: it holds 1 commit on no branch")
            && err.contains(&format!("branch NAME {}", &commit[..12])),
        "{err}"
    );
    git(&repo, &["branch", "kept", &commit]);
    env.ok(&["resume", "amy"]);
    assert!(tree.join("README").is_file());
    env.ok(&["delete", "--force"]);
}

/// A FIFO a teammate names in the repository's config (`include.path`) hangs no removal: the
/// git that reads it is given up on, and the tree kept as one git cannot check (attacker QA
/// 48: `shutdown --remove-worktree`, `doctor` and `delete` hung, `delete --force` past
/// SIGTERM).
#[test]
fn a_fifo_in_the_repositorys_config_hangs_no_removal() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let repo = crate::lifecycle::repo(&env);
    spawn_in_worktree(&env, "amy", &repo);
    env.ok(&["shutdown", "amy"]);
    let fifo = env.work.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Written as a file (a `git config` might read it), and put back the same way.
    let config = repo.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{before}[include]\n\tpath = {}\n", fifo.display()),
    )
    .unwrap();
    // The config is put back whether the removal ends or not.
    let out = std::panic::catch_unwind(|| {
        crate::common::ends_within(
            env.cmd(&["shutdown", "amy", "--remove-worktree"]),
            Duration::from_mins(5),
        )
    });
    if out.is_err() {
        std::fs::write(&config, &before).unwrap();
    }
    let out = out.unwrap_or_else(|e| std::panic::resume_unwind(e));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot check") && err.contains("no answer in 60 s"),
        "{err}"
    );
    // A spawn in that repository says git did not answer, not that there is no repository
    // (attacker QA 48).
    let out = env.run(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--cwd",
        repo.to_str().unwrap(),
        "--worktree",
        "--exec",
        "cat",
    ]);
    std::fs::write(&config, &before).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("no answer in 60 s")
            && !err.contains("is not in one"),
        "{err}"
    );
    let tree = env.team_dir("alpha").join("worktrees/amy");
    assert!(tree.is_dir());
    env.ok(&["delete", "--force"]);
}

/// A `worktreeBranch` written into the team file that reads as an option is never passed to
/// git as one (attacker QA 44: `-Bfeature` reset the user's branch `feature` on `resume`).
#[test]
fn a_forged_worktree_branch_is_no_option_to_git() {
    use crate::lifecycle::git;
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let repo = crate::lifecycle::repo(&env);
    git(&repo, &["branch", "feature"]);
    std::fs::write(repo.join("x"), "x\n").unwrap();
    git(&repo, &["add", "x"]);
    git(&repo, &["commit", "-q", "-m", "second"]);
    let feature = git(&repo, &["rev-parse", "feature"]);
    spawn_in_worktree(&env, "carol", &repo);
    env.ok(&["shutdown", "carol", "--remove-worktree"]);
    git(&repo, &["update-ref", "refs/heads/-Bfeature", "HEAD"]);
    let path = env.team_dir("alpha").join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for m in config["members"].as_array_mut().unwrap() {
        if m["name"] == "carol" {
            m["worktreeBranch"] = "-Bfeature".into();
        }
    }
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    let err = env.fails(&["resume", "carol"], 1);
    assert!(err.contains("is not a valid branch name"), "{err}");
    assert_eq!(git(&repo, &["rev-parse", "feature"]), feature);
    env.ok(&["delete", "--force"]);
}

/// Without TEAMCTL_HOME, an absolute XDG_STATE_HOME or an absolute HOME, teamctl has no safe
/// place for its state: it says so (exit 2) and makes nothing, neither in the current
/// directory (a relative HOME) nor in a shared one such as /tmp (HOME unset).
#[test]
fn no_absolute_home_is_an_error_and_makes_nothing() {
    let work = tempfile::tempdir().unwrap();
    for home in [None, Some(""), Some("relative/home")] {
        let mut c = std::process::Command::new(crate::common::BIN);
        c.args(["create", "nohome"])
            .current_dir(work.path())
            .env_remove("TEAMCTL_HOME")
            .env_remove("TEAMCTL_STORE")
            .env("XDG_STATE_HOME", "relative/state")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        match home {
            Some(h) => c.env("HOME", h),
            None => c.env_remove("HOME"),
        };
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{home:?}: {err}");
        assert!(err.contains("HOME is not set to an absolute path"), "{err}");
        assert!(
            std::fs::read_dir(work.path()).unwrap().next().is_none(),
            "{home:?} made something in the current directory"
        );
    }
}

/// A home whose path is not UTF-8 (a 0xff byte in it) is refused (exit 2, one line saying
/// why) before anything is made, whichever way it is given: the path goes into JSON, turns'
/// environments and prompts and process tags, which cannot carry it unchanged. A worker got
/// it with U+FFFD in place of the byte (another directory) and died at once.
#[test]
fn a_home_whose_path_is_not_utf8_is_refused_and_nothing_is_made() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    let odd = |parent: &Path, name: &[u8]| parent.join(std::ffi::OsStr::from_bytes(name));
    let made = env.work.path().join("made");
    std::fs::create_dir(&made).unwrap();
    std::fs::set_permissions(&made, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let existing = odd(&made, b"existing\xff");
    std::fs::create_dir(&existing).unwrap();
    std::fs::set_permissions(
        &existing,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let fresh = odd(env.work.path(), b"fresh\xff");
    let state = odd(env.work.path(), b"state\xff");
    type Give<'a> = &'a dyn Fn(&mut std::process::Command);
    let ways: [(&str, Give, &Path); 4] = [
        (
            "TEAMCTL_HOME",
            &|c| {
                c.env("TEAMCTL_HOME", &fresh);
            },
            &fresh,
        ),
        (
            "an existing TEAMCTL_HOME",
            &|c| {
                c.env("TEAMCTL_HOME", &existing);
            },
            &existing,
        ),
        (
            "--home",
            &|c| {
                c.env_remove("TEAMCTL_HOME").arg("--home").arg(&fresh);
            },
            &fresh,
        ),
        (
            "XDG_STATE_HOME",
            &|c| {
                c.env_remove("TEAMCTL_HOME").env("XDG_STATE_HOME", &state);
            },
            &state,
        ),
    ];
    for (how, give, path) in ways {
        for args in [
            &["create", "t"][..],
            &["spawn", "w", "--backend", "process", "--exec", "cat"],
        ] {
            let mut c = env.cmd(&[]);
            give(&mut c);
            let out = c.args(args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{how} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{how}: {err}");
            assert!(err.contains("is not valid UTF-8"), "{how}: {err}");
            assert!(err.contains("\\xff"), "{how}: the path as it is: {err}");
        }
        if path == existing.as_path() {
            assert!(
                std::fs::read_dir(path).unwrap().next().is_none(),
                "{how}: made something"
            );
        } else {
            assert!(!path.exists(), "{how}: made {path:?}");
        }
    }
    assert!(!env.home_path().join("teams").exists());
}

/// Make a FIFO at `at` (its directory there already).
fn fifo_at(at: &Path) {
    nix::unistd::mkfifo(
        at,
        nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
    )
    .unwrap();
}

/// How a test plants something at a path.
type Plant<'a> = &'a dyn Fn(&Path);

/// A FIFO, directory or link to a directory at the team file (attacker QA): every command
/// said "no team selected" (exit 2), as if there were no team. Now the read that opens it
/// fails (exit 1), naming the file and what is wrong with it; with `--team` too.
#[test]
fn a_special_file_at_the_team_file_is_named_not_taken_for_no_team() {
    let env = TestEnv::new();
    env.ok(&["create", "sec-conf"]);
    let config = env.team_dir("sec-conf").join("config.json");
    let kept = env.work.path().join("config.kept");
    std::fs::rename(&config, &kept).unwrap();
    let elsewhere = env.work.path().join("a-directory");
    std::fs::create_dir(&elsewhere).unwrap();
    let plants: [(&str, Plant, &str); 3] = [
        ("a FIFO", &fifo_at, "is not a regular file"),
        (
            "a directory",
            &|p| std::fs::create_dir(p).unwrap(),
            "is not a regular file",
        ),
        (
            "a link to a directory",
            &|p| std::os::unix::fs::symlink(&elsewhere, p).unwrap(),
            "is a symbolic link",
        ),
    ];
    for (what, plant, says) in plants {
        plant(&config);
        for args in [
            &["status"][..],
            &["--team", "sec-conf", "status"],
            &["send", "x", "hi"],
        ] {
            let out = ends_within_wait(&env, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{what}, {args:?}: {err}");
            assert!(
                err.contains(says) && err.contains(&config.display().to_string()),
                "{what}, {args:?}: {err}"
            );
        }
        if std::fs::symlink_metadata(&config).unwrap().is_dir() {
            std::fs::remove_dir(&config).unwrap();
        } else {
            std::fs::remove_file(&config).unwrap();
        }
    }
    std::fs::rename(&kept, &config).unwrap();
    env.ok(&["status"]);
}

/// A FIFO (or a link) at a teammate's live state (attacker QA): `status` showed it
/// `starting`, nothing said why. It still never waits on the FIFO, and now says under the
/// table (and in `--json`, `problem`) that the state file cannot be read, naming it. (Its
/// worker is ended first: a running one puts its own file there at once; `oddfiles.rs`.)
#[test]
fn a_special_file_at_a_live_state_is_shown_by_status() {
    let env = TestEnv::new();
    env.ok(&["create", "sec-live"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["wait", "bob"]);
    env.ok(&["kill", "bob"]);
    let live = env.team_dir("sec-live").join("state/bob.json");
    std::fs::remove_file(&live).unwrap();
    fifo_at(&live);
    let out = ends_within_wait(&env, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.lines().any(|l| l.starts_with("bob: ")
            && l.contains(&live.display().to_string())
            && l.contains("is a FIFO, not bob's live-state file")),
        "{text}"
    );
    let out = ends_within_wait(&env, &["--json", "status"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problem = json["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .map(|m| m["problem"].as_str().unwrap_or_default().to_string())
        .unwrap();
    assert!(problem.contains("is a FIFO"), "{json}");
    std::fs::remove_file(&live).unwrap();
    std::os::unix::fs::symlink(env.work.path(), &live).unwrap();
    let text = env.ok(&["status"]);
    assert!(
        text.lines()
            .any(|l| l.starts_with("bob: ") && l.contains("is a symbolic link")),
        "{text}"
    );
    std::fs::remove_file(&live).unwrap();
}

/// A working directory whose path is not UTF-8 (`--cwd`, or the shell's own directory) is
/// refused, as such a home is: recorded in the team file as text, it became the U+FFFD
/// spelling, and the teammate ran in that other directory, which anyone who can write the
/// parent may make (attacker QA). Nothing is left of the refused spawn.
#[test]
fn a_working_directory_whose_path_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    let odd = env.work.path().join(std::ffi::OsStr::from_bytes(b"c\xff"));
    std::fs::create_dir(&odd).unwrap();
    // The look-alike another user could make.
    std::fs::create_dir(env.work.path().join("c\u{fffd}")).unwrap();
    let mut given = env.cmd(&[
        "spawn",
        "w",
        "--backend",
        "process",
        "--exec",
        "pwd",
        "--cwd",
    ]);
    given.arg(&odd);
    let mut here = env.cmd(&["spawn", "w", "--backend", "process", "--exec", "pwd"]);
    here.current_dir(&odd);
    for (how, mut cmd) in [("--cwd", given), ("the current directory", here)] {
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{how}: {err}");
        assert!(
            err.contains(r"c\xff") && err.contains("not valid UTF-8"),
            "{how}: {err}"
        );
        assert!(
            env.config("t")["members"].as_array().unwrap().len() == 1,
            "{how}"
        );
        assert!(!env.team_dir("t").join("env/w").exists(), "{how}");
    }
}
