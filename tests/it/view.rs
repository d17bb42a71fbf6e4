//! The leader's view end to end: the demo, the console in a tmux pane and on a pipe,
//! `log -f`, `status --watch`, and the shell files (completions, aliases, tmux bindings).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{BIN, TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);

/// A long-running teamctl child whose stdout lines are collected by a thread.
pub(crate) struct Follow {
    pub(crate) child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Follow {
    fn start(env: &TestEnv, args: &[&str]) -> Follow {
        Follow::start_with(env.cmd(args))
    }

    /// Started with `cmd` as given (its stdin, for one).
    pub(crate) fn start_with(mut cmd: Command) -> Follow {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start teamctl");
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Follow { child, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn has(&self, pred: impl Fn(&str) -> bool) -> bool {
        self.lines().iter().any(|l| pred(l))
    }

    pub(crate) fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        wait_until(what, WAIT, || self.has(&pred));
    }

    /// Ctrl-C (SIGINT) ends the view with exit 0.
    fn interrupt_exits_zero(&mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(sent.success());
        let mut code = None;
        wait_until("the view to exit on Ctrl-C", WAIT, || {
            code = self.child.try_wait().unwrap().map(|s| s.code());
            code.is_some()
        });
        assert_eq!(code, Some(Some(0)), "Ctrl-C must exit 0");
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn messages_to(env: &TestEnv, team: &str, member: &str) -> Vec<serde_json::Value> {
    env.inbox(team, member)
        .into_iter()
        .filter(|m| m["type"] == "message")
        .collect()
}

// ---- demo ----

#[test]
fn demo_runs_without_a_terminal_and_stop_leaves_no_pane_or_process() {
    let env = TestEnv::with_tmux();
    let out = env.ok(&["demo"]);
    assert!(out.contains("every teammate answered"), "{out}");
    assert!(out.contains("attach"), "the demo says how to attach: {out}");
    // Every teammate answered the leader (a reply to the leader's message).
    let replies = messages_to(&env, "demo", "team-lead");
    for mate in ["planner", "coder", "reviewer"] {
        assert!(
            replies
                .iter()
                .any(|m| m["from"] == mate && m["inReplyTo"].is_string()),
            "no reply from {mate}: {replies:?}"
        );
    }
    // They talked to each other: the coder answered the planner.
    assert!(
        messages_to(&env, "demo", "planner")
            .iter()
            .any(|m| m["from"] == "coder"),
        "the coder never answered the planner"
    );
    // They used the task list: the planner added a task, the coder claimed and finished it.
    let tasks: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "task", "list"])).unwrap();
    assert!(
        tasks["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["owner"] == "coder" && t["status"] == "completed"),
        "{tasks}"
    );
    // In real tmux panes on the private server.
    let panes = env.tmux_ok(&["list-panes", "-a", "-F", "#{pane_id} #{@teamctl-agent}"]);
    for mate in ["planner", "coder", "reviewer"] {
        assert!(
            panes.contains(&format!("{mate}@demo")),
            "no pane for {mate}: {panes}"
        );
    }
    assert!(!env.processes().is_empty());

    env.ok(&["demo", "--stop"]);
    assert!(!env.team_dir("demo").exists(), "the demo team is deleted");
    wait_until("no process left", WAIT, || env.processes().is_empty());
    let left = env.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{@teamctl-agent}"]);
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(
        !left.contains("@demo"),
        "demo panes are left after --stop: {left}"
    );
}

#[test]
fn demo_refuses_when_another_team_is_current_and_writes_nothing() {
    let env = TestEnv::new();
    env.ok(&["create", "mine"]);
    let before = crate::common::snapshot(env.home_path());
    let err = env.fails(&["demo"], 2);
    assert!(err.contains("\"mine\""), "names the current team: {err}");
    assert!(err.contains("TEAMCTL_HOME"), "says the way out: {err}");
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    // --stop with no demo team is a no-op, not an error.
    let out = env.ok(&["demo", "--stop"]);
    assert!(out.contains("nothing to stop"), "{out}");
}

// ---- the leader console ----

#[test]
fn console_in_a_tmux_pane_shows_mail_and_sends_typed_lines() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    let home = format!("TEAMCTL_HOME={}", env.home_path().display());
    env.tmux_ok(&[
        "new-session",
        "-d",
        "-s",
        "console",
        "-x",
        "160",
        "-y",
        "40",
        "env",
        "-u",
        "TEAMCTL_TEAM",
        "-u",
        "TEAMCTL_AGENT_NAME",
        &home,
        "NO_COLOR=1",
        BIN,
        "lead",
    ]);
    let screen = || env.tmux_ok(&["capture-pane", "-p", "-t", "console"]);
    wait_until("the console to start", WAIT, || {
        screen().contains("teamctl lead: t")
    });
    env.ok(&["send", "--as", "bob", "team-lead", "hello from bob"]);
    wait_until("bob's message on the console", WAIT, || {
        screen().contains("bob: hello from bob")
    });
    // A resize redraws the console without pushing a copy of it into the pane's history
    // (new-user QA: each resize added the header and every message to the scrollback).
    let everything = || env.tmux_ok(&["capture-pane", "-p", "-S", "-", "-t", "console"]);
    // Growing: a pane that shrinks pushes its top rows into history whatever is drawn.
    for size in ["160x44", "170x48", "180x52"] {
        let (x, y) = size.split_once('x').unwrap();
        env.tmux_ok(&["resize-window", "-t", "console", "-x", x, "-y", y]);
        wait_until("the console redrawn at the new size", WAIT, || {
            screen().contains("bob: hello from bob")
                && screen().lines().count() == y.parse::<usize>().unwrap()
        });
    }
    let all = everything();
    assert_eq!(all.matches("bob: hello from bob").count(), 1, "{all}");
    // The console keeps its own cursor (it may run unwatched in a team session): the message
    // is still unread for `teamctl inbox`.
    let unread: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "inbox", "--peek"])).unwrap();
    assert_eq!(unread[0]["text"], "hello from bob", "{}", screen());

    env.tmux_ok(&["send-keys", "-t", "console", "-l", "@bob hi there"]);
    env.tmux_ok(&["send-keys", "-t", "console", "Enter"]);
    wait_until("the typed line in bob's inbox", WAIT, || {
        messages_to(&env, "t", "bob")
            .iter()
            .any(|m| m["from"] == "team-lead" && m["text"] == "hi there")
    });
    env.tmux_ok(&["send-keys", "-t", "console", "-l", "/quit"]);
    env.tmux_ok(&["send-keys", "-t", "console", "Enter"]);
    wait_until("the console to quit", WAIT, || {
        !env.tmux(&["has-session", "-t", "console"]).status.success()
    });
}

/// `status --watch` in a narrow pane: each row cut to the width, so the header stays in view
/// (second new-user pass: at 80-100 columns every row wrapped and a small pane lost it).
#[test]
fn the_board_fits_a_narrow_pane() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "while [ ! -e release ]; do sleep 0.05; done; rm release",
    ]);
    let long = "a long turn ".repeat(12);
    env.ok(&["send", "bob", long.trim_end()]);
    wait_until("bob working", WAIT, || {
        env.member_status("bob") == "working"
    });
    let home = format!("TEAMCTL_HOME={}", env.home_path().display());
    env.tmux_ok(&[
        "new-session",
        "-d",
        "-s",
        "board",
        "-x",
        "50",
        "-y",
        "8",
        "env",
        "-u",
        "TEAMCTL_TEAM",
        &home,
        "NO_COLOR=1",
        BIN,
        "status",
        "--watch",
    ]);
    let screen = || env.tmux_ok(&["capture-pane", "-p", "-t", "board"]);
    wait_until("the board with bob's row", WAIT, || {
        screen().lines().any(|l| l.starts_with("bob "))
    });
    let shown = screen();
    assert!(shown.lines().any(|l| l.starts_with("NAME")), "{shown}");
    let row = shown.lines().find(|l| l.starts_with("bob ")).unwrap();
    assert!(row.trim_end().ends_with('…'), "{shown}");
    // The row is one line: the next one is not the rest of it.
    let next = shown
        .lines()
        .skip_while(|l| !l.starts_with("bob "))
        .nth(1)
        .unwrap_or("");
    assert!(!next.contains("turn"), "{shown}");
    std::fs::write(env.work.path().join("release"), b"").unwrap();
    env.tmux_ok(&["kill-session", "-t", "board"]);
}

/// Team `t` with `pia` (plan mode, `plan` its plan command) given a job and awaiting the
/// leader's approval; returns the look that says it awaits one.
fn pia_awaiting_approval<'a>(env: &'a TestEnv, plan: &str) -> impl Fn() -> bool + 'a {
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "pia",
        "--backend",
        "process",
        "--exec",
        "echo did it",
        "--plan-mode-required",
        "--plan",
        plan,
    ]);
    env.ok(&["send", "pia", "job"]);
    let awaiting = || env.member_status("pia") == "awaiting_plan_approval";
    wait_until("pia awaits approval", WAIT, awaiting);
    awaiting
}

/// The console answers a plan itself: `/reject NAME TEXT` sends the feedback, `/approve NAME`
/// lets the turn run (new-user QA 45: the console said to answer and had no way to).
#[test]
fn console_approves_and_rejects_plans() {
    let env = TestEnv::new();
    let awaiting = pia_awaiting_approval(&env, "echo my plan; printf %s \"$TEAMCTL_FEEDBACK\"");
    let out = env.ok_stdin(&["lead"], "/reject pia add tests first\n/quit\n");
    assert!(out.contains("/approve pia or /reject pia TEXT"), "{out}");
    assert!(!out.contains("failed"), "{out}");
    let rejected = env.ok(&["log"]);
    assert!(rejected.contains("add tests first"), "{rejected}");
    wait_until("pia plans again", WAIT, || {
        awaiting() && env.ok(&["plan", "list"]).contains("my plan")
    });
    let out = env.ok_stdin(&["lead"], "/approve pia\n/approve nobody\n/quit\n");
    assert!(
        out.contains("the plan's answer failed: teamctl: no member \"nobody\""),
        "{out}"
    );
    wait_until("pia's work done", WAIT, || {
        env.inbox("t", "team-lead")
            .iter()
            .any(|m| m["from"] == "pia" && m["text"].as_str().is_some_and(|t| t.contains("did it")))
    });
}

/// A plan request already answered is shown as answered when a console starts, not as one to
/// approve (second new-user pass); one still waiting is shown with how to answer it.
#[test]
fn console_shows_an_answered_plan_as_answered() {
    let env = TestEnv::new();
    let _awaiting = pia_awaiting_approval(&env, "echo my plan");
    let out = env.ok_stdin(&["lead"], "/quit\n");
    assert!(out.contains("pia asks to approve a plan"), "{out}");
    // A line appended later with the id pia waits on (read from its live state) is not the
    // plan shown or approved (attacker QA: its plan was the one listed).
    let plans: serde_json::Value =
        serde_json::from_str(&env.ok(&["--json", "plan", "list"])).unwrap();
    let id = plans[0]["requestId"].as_str().unwrap().to_string();
    let forged = format!(
        r#"{{"type":"plan_approval_request","requestId":"{id}","plan":"a harmless plan"}}"#
    );
    env.ok(&["send", "--as", "pia", "team-lead", "--structured", &forged]);
    let out = env.ok_stdin(&["lead"], "/quit\n");
    assert_eq!(out.matches("my plan").count(), 1, "{out}");
    assert!(!out.contains("a harmless plan"), "{out}");
    assert!(
        out.contains("pia sent a plan again under a request id shown before"),
        "{out}"
    );
    let listed = env.ok(&["plan", "list"]);
    assert!(
        listed.contains("my plan") && !listed.contains("harmless"),
        "{listed}"
    );
    // `ask` says what the teammate waits on, as it waits and at its timeout.
    let out = env.run(&["ask", "pia", "another", "--timeout", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.matches("pia waits for team-lead to approve its plan (`teamctl plan list`, then `teamctl plan approve pia`")
            .count(),
        2,
        "{err}"
    );
    env.ok(&["plan", "approve", "pia"]);
    // Its question is planned next, and approved too.
    wait_until("pia plans the question", WAIT, || {
        env.ok(&["plan", "list"]).contains("my plan")
    });
    env.ok(&["plan", "approve", "pia"]);
    wait_until("pia's turn done", WAIT, || {
        env.member_status("pia") == "idle"
    });
    let out = env.ok_stdin(&["lead"], "/quit\n");
    assert!(out.contains("pia sent a plan (no longer pending)"), "{out}");
    assert!(!out.contains("asks to approve"), "{out}");
    env.ok(&["kill", "pia"]);
}

#[test]
fn console_works_on_a_pipe() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    env.ok(&["send", "--as", "bob", "team-lead", "waiting for work"]);
    env.ok(&["task", "add", "ship the release"]);
    let out = env.ok_stdin(
        &["lead"],
        "@bob first job\n@* all hands\n/status\n/tasks\n/nope\n@zed hi\n/help\n/quit\n",
    );
    assert!(
        out.contains("ship the release"),
        "/tasks lists the tasks: {out}"
    );
    assert!(out.contains("bob: waiting for work"), "{out}");
    assert!(out.contains("NAME"), "/status prints the table: {out}");
    assert!(out.contains("unknown command /nope"), "{out}");
    assert!(out.contains("no member \"zed\""), "{out}");
    assert!(out.contains("/shutdown NAME"), "/help: {out}");
    assert!(!out.contains('\x1b'), "no escape codes on a pipe: {out:?}");
    let texts: Vec<_> = messages_to(&env, "t", "bob")
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["first job", "all hands"]);
    // Only the leader runs the console.
    let err = env.fails(&["lead", "--as", "bob"], 2);
    assert!(err.contains("only the leader"), "{err}");
}

/// A worker killed behind teamctl's back writes nothing, yet the console's status line says
/// dead, not idle, a few seconds later: it looks at the teammates' processes again on a timer.
#[test]
fn console_shows_a_teammate_killed_behind_its_back_as_dead() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    wait_until("bob idle", WAIT, || env.member_status("bob") == "idle");
    let mut cmd = env.cmd(&["lead"]);
    cmd.stdin(Stdio::piped());
    let mut console = Follow::start_with(cmd);
    console.wait_for("bob idle on the status line", |l| l.contains("bob idle"));
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    console.wait_for("bob dead on the status line", |l| l.contains("bob dead"));
    drop(console.child.stdin.take());
    let status = console.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// A teammate asked to stop during a turn shows on the console's status line as `status`
/// shows it, `shutdown_pending`, until it answers (QA: the line said `working`).
#[test]
fn console_shows_a_pending_shutdown_as_status_does() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "sleep 600",
    ]);
    wait_until("bob idle", WAIT, || env.member_status("bob") == "idle");
    env.ok(&["send", "bob", "work"]);
    wait_until("bob working", WAIT, || {
        env.member_status("bob") == "working"
    });
    let mut cmd = env.cmd(&["lead"]);
    cmd.stdin(Stdio::piped());
    let mut console = Follow::start_with(cmd);
    console.wait_for("bob working on the status line", |l| {
        l.contains("bob working")
    });
    env.ok(&["shutdown", "bob", "--no-wait"]);
    assert_eq!(env.member_status("bob"), "shutdown_pending");
    console.wait_for("bob shutdown_pending on the status line", |l| {
        l.contains("bob shutdown_pending")
    });
    env.ok(&["kill", "bob"]);
    drop(console.child.stdin.take());
    let status = console.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// A teammate whose worker cannot watch its inbox (so reads no mail) is said on the console
/// as `status` says it under its table, and marked on the status line while it lasts (QA:
/// `status` and the board showed it, the console's status line said plainly "idle").
#[test]
fn console_shows_a_teammate_that_reads_no_mail() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    assert_eq!(
        env.ok(&["ask", "bob", "m1", "--timeout", "20"]).trim(),
        "m1"
    );
    let mut cmd = env.cmd(&["lead"]);
    cmd.stdin(Stdio::piped());
    let mut console = Follow::start_with(cmd);
    console.wait_for("bob idle on the status line", |l| l == "── bob idle");
    let dir = env.team_dir("t").join("inboxes/bob");
    // The worker may still be writing its cursor after the reply: again until removed.
    wait_until("the inbox directory removed", WAIT, || {
        std::fs::remove_dir_all(&dir).is_ok()
    });
    std::fs::write(&dir, "not a directory").unwrap();
    console.wait_for("bob marked on the status line", |l| {
        l == "── bob idle, reads no mail"
    });
    // Said once in full, in `status`'s words.
    let note = format!(
        "bob: reads no mail: its inbox cannot be watched: {} is not a directory; move it away",
        dir.display()
    );
    assert_eq!(
        console
            .lines()
            .iter()
            .filter(|l| l.starts_with(&note))
            .count(),
        1,
        "{:?}",
        console.lines()
    );
    let table = env.ok(&["status"]);
    assert!(table.contains(&note), "{table}");
    // Once the file is gone the worker watches again, and the mark goes.
    std::fs::remove_file(&dir).unwrap();
    let shown = console.lines().len();
    wait_until("bob plainly idle again", WAIT, || {
        console.lines()[shown..].iter().any(|l| l == "── bob idle")
    });
    drop(console.child.stdin.take());
    let status = console.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// `teamctl lead` run by hand in the user's own pane, when the team is deleted under it: it
/// says so in one line, left on the screen, and exits 1 (QA: it ended silently, exit 0; the
/// line it printed was cleared with its input line).
#[test]
fn console_says_why_it_ends_when_the_team_is_deleted() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "t"]);
    let home = format!("TEAMCTL_HOME={}", env.home_path().display());
    env.tmux_ok(&[
        "new-session",
        "-d",
        "-s",
        "mine",
        "-x",
        "120",
        "-y",
        "20",
        "env",
        "-u",
        "TEAMCTL_TEAM",
        "-u",
        "TEAMCTL_AGENT_NAME",
        &home,
        "NO_COLOR=1",
        "sh",
        "-c",
        "\"$0\" lead; echo \"exit $?\"; exec sleep 600",
        BIN,
    ]);
    let screen = || env.tmux_ok(&["capture-pane", "-p", "-t", "mine"]);
    wait_until("the console to start", WAIT, || {
        screen().contains("teamctl lead: t")
    });
    env.ok(&["delete"]);
    wait_until("the console to end", WAIT, || screen().contains("exit "));
    let shown = screen();
    assert!(
        shown.contains("teamctl: team t was deleted; the leader console ends"),
        "{shown}"
    );
    assert!(shown.contains("exit 1"), "{shown}");
    env.tmux_ok(&["kill-session", "-t", "mine"]);
}

/// With many teammates the status line counts states instead of naming a few and cutting
/// off the rest (it has one terminal line).
#[test]
fn console_counts_states_when_the_team_is_large() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    let names: Vec<String> = (0..13).map(|i| format!("w{i}")).collect();
    for n in &names {
        env.ok(&["spawn", n, "--backend", "process", "--exec", "cat"]);
    }
    wait_until("every teammate idle", Duration::from_secs(30), || {
        names.iter().all(|n| env.member_status(n) == "idle")
    });
    let out = env.ok_stdin(&["lead"], "/quit\n");
    assert!(out.contains("13 teammates: 13 idle"), "{out}");
    assert!(!out.contains("w12 idle"), "not named one by one: {out}");

    // Each state counted.
    env.ok(&["kill", "w12"]);
    let out = env.ok_stdin(&["lead"], "/quit\n");
    assert!(out.contains("13 teammates: 12 idle · 1 stopped"), "{out}");
}

#[test]
fn console_shutdown_closes_the_teammate_when_it_answers() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    wait_until("bob idle", WAIT, || env.member_status("bob") == "idle");
    let mut console = env
        .cmd(&["lead"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = console.stdin.take().unwrap();
    use std::io::Write;
    writeln!(stdin, "/shutdown bob").unwrap();
    // The console acts on the response itself (no other leader command runs).
    let cfg = env.team_dir("t").join("config.json");
    wait_until("bob marked stopped by the console", WAIT, || {
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
        c["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "bob" && m["status"] == "stopped")
    });
    drop(stdin);
    let out = console.wait_with_output().unwrap();
    assert!(out.status.success());
    wait_until("no process left", WAIT, || env.processes().is_empty());
}

// ---- log -f ----

/// A link where one member's inbox directory should be leaves that inbox unwatched, and
/// `log -f` and `status --watch` go on for the rest of the team (QA: both exited 1 at once).
#[test]
fn a_link_at_one_inbox_does_not_stop_watching_the_team() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    for name in ["amy", "bob"] {
        env.ok(&[
            "spawn",
            name,
            "--backend",
            "process",
            "--exec",
            "cat >/dev/null",
        ]);
    }
    let inbox = env.team_dir("t").join("inboxes/amy");
    let moved = env.work.path().join("amy-inbox");
    std::fs::rename(&inbox, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &inbox).unwrap();
    let log = Follow::start(&env, &["log", "-f"]);
    let board = Follow::start(&env, &["status", "--watch"]);
    board.wait_for("a board", |l| l.contains("bob"));
    env.ok(&["send", "bob", "still followed"]);
    log.wait_for("the message to bob", |l| {
        l.contains("team-lead -> bob: still followed")
    });
    env.ok(&["--as", "bob", "send", "team-lead", "done"]);
    log.wait_for("bob's message", |l| l.contains("bob -> team-lead: done"));
    std::fs::remove_file(&inbox).unwrap();
    std::fs::rename(&moved, &inbox).unwrap();
    env.ok(&["delete", "--force"]);
}

/// One of the three live views of team t (`status --watch`, `log -f`, `log --worker bob -f`)
/// running, its stderr kept in a file.
struct LiveView {
    args: &'static [&'static str],
    name: &'static str,
    child: Child,
    // Its stdout stays open: a reader gone would end it another way.
    _out: BufReader<std::process::ChildStdout>,
    err: std::path::PathBuf,
}

impl LiveView {
    /// The three started, each armed once it has printed something (each view subscribes
    /// before its first read).
    fn start_all(env: &TestEnv) -> Vec<LiveView> {
        let views: [(&'static [&'static str], &'static str); 3] = [
            (&["status", "--watch"], "`status --watch`"),
            (&["log", "-f"], "`log -f`"),
            (&["log", "--worker", "bob", "-f"], "`log --worker -f`"),
        ];
        let mut running = Vec::new();
        for (i, (args, name)) in views.into_iter().enumerate() {
            let err = env.work.path().join(format!("view-{i}.err"));
            let mut cmd = env.cmd(args);
            cmd.stderr(std::fs::File::create(&err).unwrap());
            let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut first = String::new();
            out.read_line(&mut first).unwrap();
            assert!(!first.is_empty(), "{args:?}");
            running.push(LiveView {
                args,
                name,
                child,
                _out: out,
                err,
            });
        }
        running
    }

    /// Waits for the view to end: its argv, its name, its exit code (as `try_wait` then
    /// `code` give it) and its stderr.
    #[allow(clippy::option_option)]
    fn ended(
        mut self,
    ) -> (
        &'static [&'static str],
        &'static str,
        Option<Option<i32>>,
        String,
    ) {
        let mut code = None;
        wait_until("the view to end", WAIT, || {
            code = self.child.try_wait().unwrap().map(|s| s.code());
            code.is_some()
        });
        let err = std::fs::read_to_string(&self.err).unwrap();
        (self.args, self.name, code, err)
    }
}

/// `status --watch`, `log -f` and `log --worker NAME -f` end as the console does when their
/// team is deleted under them: one line on stderr saying so, exit 1. (Review: they ended with
/// exit 0, `status --watch` and `log -f` with a bare "was deleted", `log --worker -f` saying
/// only that the log was removed.)
#[test]
fn live_views_say_why_they_end_when_the_team_is_deleted() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["send", "bob", "before"]);
    let log = env.team_dir("t").join("logs/bob.log");
    wait_until("bob's turn in its log", WAIT, || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("before"))
    });
    let running = LiveView::start_all(&env);
    env.ok(&["delete"]);
    for view in running {
        let (args, view, code, err) = view.ended();
        assert_eq!(code, Some(Some(1)), "{args:?}: {err}");
        // Its last word (`status --watch` may first say what the delete's handoff did).
        assert_eq!(
            err.lines().last(),
            Some(format!("teamctl: team t was deleted; {view} ends").as_str()),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("was deleted").count(), 1, "{args:?}: {err}");
    }
}

/// A team whose team file alone was removed (by hand, not by `delete`: its directory and its
/// mail are left) is not said to be deleted by `status --watch`, `log -f` and
/// `log --worker -f` (its log removed too): they say what is left and how to remove it, exit 1.
/// (They said "team t was deleted".)
#[test]
fn live_views_say_a_team_file_removed_by_hand_leaves_a_leftover() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["send", "bob", "before"]);
    let dir = env.team_dir("t");
    let log = dir.join("logs/bob.log");
    wait_until("bob's turn in its log", WAIT, || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("before"))
    });
    env.ok(&["kill", "bob"]);
    let running = LiveView::start_all(&env);
    std::fs::remove_file(dir.join("config.json")).unwrap();
    std::fs::remove_file(&log).unwrap();
    for view in running {
        let (args, view, code, err) = view.ended();
        assert_eq!(code, Some(Some(1)), "{args:?}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.contains(&format!(
                "team t's team file ({}) was removed, but not by `teamctl delete`: its directory is left, holding ",
                dir.join("config.json").display()
            )),
            "{args:?}: {err}"
        );
        assert!(
            last.contains("bob (1)")
                && last.contains("`teamctl delete --force --team t` removes it and those messages")
                && last.ends_with(&format!("; {view} ends")),
            "{args:?}: {err}"
        );
        assert!(!err.contains("was deleted"), "{args:?}: {err}");
    }
    // As said.
    env.ok(&["delete", "--force", "--team", "t"]);
    assert!(!dir.exists());
}

/// The leader console says a team file removed by hand in the live views' words (one rule,
/// `view::events::why_gone`): what is left and how to remove it, exit 1. (It had its own
/// words, "is gone, its directory left", said without the views' grace.)
#[test]
fn console_says_a_team_file_removed_by_hand_as_the_views_do() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["send", "bob", "before"]);
    env.ok(&["kill", "bob"]);
    let dir = env.team_dir("t");
    let err = env.work.path().join("lead.err");
    let mut console = env
        .cmd(&["lead"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let _stdin = console.stdin.take().unwrap();
    let mut out = BufReader::new(console.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("teamctl lead: t"), "{first}");
    std::fs::remove_file(dir.join("config.json")).unwrap();
    let mut code = None;
    wait_until("the console to end", WAIT, || {
        code = console.try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    let err = std::fs::read_to_string(err).unwrap();
    assert_eq!(code, Some(Some(1)), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "team t's team file ({}) was removed, but not by `teamctl delete`: its directory is left, holding ",
            dir.join("config.json").display()
        )) && last.contains("bob (1)")
            && last.contains("`teamctl delete --force --team t` removes it and those messages")
            && last.ends_with("; the leader console ends"),
        "{err}"
    );
    env.ok(&["delete", "--force", "--team", "t"]);
}

#[test]
fn log_follow_prints_messages_sent_after_it_started() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    env.ok(&["send", "bob", "before"]);
    let plain = Follow::start(&env, &["log", "-f"]);
    let json = Follow::start(
        &env,
        &["--json", "log", "-f", "--to", "bob", "--type", "message"],
    );
    plain.wait_for("the old message", |l| {
        l.contains("team-lead -> bob: before")
    });
    json.wait_for("the old message as JSON", |l| l.contains("\"before\""));
    env.ok(&["send", "bob", "after"]);
    plain.wait_for("the new message", |l| l.contains("team-lead -> bob: after"));
    json.wait_for("the new message as JSON", |l| l.contains("\"after\""));
    // A member who joins later is followed too.
    env.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    env.ok(&["send", "--as", "carol", "bob", "from the new one"]);
    plain.wait_for("the newcomer's message", |l| {
        l.contains("carol -> bob: from the new one")
    });
    json.wait_for("the newcomer's message as JSON", |l| {
        l.contains("from the new one")
    });
    // Broadcast copies are shown once; every JSON line is one object that passed the filters.
    env.ok(&["send", "*", "everyone"]);
    plain.wait_for("the broadcast", |l| l.contains("everyone"));
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["to"], "bob", "{line}");
        assert_eq!(v["type"], "message", "{line}");
    }
    // (Only the message itself: the teammates' idle notifications quote it in their summary.)
    let copies = plain
        .lines()
        .iter()
        .filter(|l| l.contains("team-lead -> *: everyone"))
        .count();
    assert_eq!(copies, 1, "{:?}", plain.lines());
    let mut plain = plain;
    plain.interrupt_exits_zero();
    env.fails(&["log", "--type", "gossip"], 2);
}

// ---- status --watch ----

#[test]
fn status_watch_prints_a_new_board_when_a_teammate_changes_state() {
    let env = TestEnv::new();
    env.ok(&["create", "t"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "while [ ! -e release ]; do sleep 0.05; done; rm release",
    ]);
    wait_until("bob idle", WAIT, || env.member_status("bob") == "idle");
    let mut watch = Follow::start(&env, &["status", "--watch"]);
    let row = |state: &'static str| {
        move |l: &str| l.starts_with("bob ") && l.split_whitespace().nth(1) == Some(state)
    };
    watch.wait_for("a board with bob idle", row("idle"));
    let boards = |w: &Follow| w.lines().iter().filter(|l| l.starts_with("team t")).count();
    let first = boards(&watch);
    env.ok(&["send", "bob", "hold on"]);
    watch.wait_for("a board with bob working", row("working"));
    assert!(
        watch.lines().iter().any(|l| l.contains("hold on")),
        "the current turn is shown: {:?}",
        watch.lines()
    );
    std::fs::write(env.work.path().join("release"), b"").unwrap();
    wait_until("a board with bob idle again", WAIT, || {
        let lines = watch.lines();
        let working = lines.iter().rposition(|l| row("working")(l)).unwrap();
        lines[working..].iter().any(|l| row("idle")(l))
    });
    assert!(boards(&watch) > first);
    // Piped: a board is printed only when something changed (ages aside), never twice the
    // same.
    let lines = watch.lines();
    let mut boards_seen: Vec<Vec<String>> = Vec::new();
    for l in &lines {
        if l.starts_with("team t") {
            boards_seen.push(Vec::new());
        } else if let Some(b) = boards_seen.last_mut()
            && !l.is_empty()
            && !l.starts_with("NAME")
        {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let turn = cols.get(6..).unwrap_or_default().join(" ");
            let turn = turn.rsplit_once(" (").map_or(turn.as_str(), |(t, _)| t);
            b.push(format!("{} {turn}", cols[..5].join(" ")));
        }
    }
    for pair in boards_seen.windows(2) {
        assert_ne!(pair[0], pair[1], "the same board twice: {lines:#?}");
    }
    assert!(!lines.iter().any(|l| l.contains('\x1b')), "{lines:?}");
    watch.interrupt_exits_zero();
}

// ---- shell files ----

fn generated(shell: &str) -> String {
    let out = Command::new(BIN)
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn committed_completion_scripts_match_the_binary() {
    for (shell, file) in [
        ("bash", "shell/teamctl.bash"),
        ("zsh", "shell/_teamctl"),
        ("fish", "shell/teamctl.fish"),
    ] {
        let committed = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(
            committed == generated(shell),
            "{file} is stale: regenerate it with `teamctl completions {shell} > {file}` (see docs/SHELL.md)"
        );
    }
    let check = Command::new("bash")
        .arg("-n")
        .arg(repo().join("shell/teamctl.bash"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

fn sources_cleanly(shell: &str, script: &str) {
    let out = Command::new(shell)
        .arg("-c")
        .arg(script)
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {shell}: {e}"));
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{shell}: {script}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("teamctl status --watch"),
        "{shell}: {stdout}"
    );
}

#[test]
fn aliases_source_cleanly_in_bash_and_zsh() {
    sources_cleanly("bash", "set -eu; source shell/aliases.sh; alias tcw");
    // With the bash completion loaded, `tc` completes like teamctl.
    let out = Command::new("bash")
        .arg("-c")
        .arg("source shell/teamctl.bash && source shell/aliases.sh && complete -p tc")
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("_teamctl"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let zsh = Command::new("zsh").arg("--version").output();
    assert!(
        zsh.is_ok_and(|o| o.status.success()),
        "zsh is required for this test and was not found on PATH (install it: apt-get install -y zsh; .ci/run does)"
    );
    sources_cleanly("zsh", "set -eu; source shell/aliases.sh; alias tcw");
    let check = Command::new("zsh")
        .arg("-n")
        .arg(repo().join("shell/_teamctl"))
        .output()
        .unwrap();
    assert!(check.status.success());
}

#[test]
fn tmux_bindings_load_on_a_private_server() {
    let env = TestEnv::with_tmux();
    env.tmux_ok(&["-f", "/dev/null", "new-session", "-d", "-s", "keys"]);
    let conf = repo().join("shell/teamctl.tmux.conf");
    env.tmux_ok(&["source-file", conf.to_str().unwrap()]);
    let keys = env.tmux_ok(&["list-keys", "-T", "prefix"]);
    assert!(
        keys.contains("teamctl status --watch") && keys.contains("@teamctl-agent"),
        "{keys}"
    );
}

// ---- issue 11: what a new user trips over ----

/// Issue 11.13: after the demo's own suggested interaction (`@planner hello` in the console,
/// which sends the planner a message), every task the demo's teammates made ends completed:
/// the coder finishes the task it claimed, not task 1.
#[test]
fn after_the_demos_suggested_hello_every_demo_task_ends_completed() {
    let env = TestEnv::with_tmux();
    env.ok(&["demo"]);
    env.ok(&["send", "planner", "hello"]);
    let tasks = || -> Vec<serde_json::Value> {
        let list: serde_json::Value =
            serde_json::from_str(&env.ok(&["--json", "task", "list"])).unwrap();
        list["tasks"].as_array().unwrap().clone()
    };
    wait_until("the planner's second task", WAIT, || tasks().len() >= 2);
    wait_until("every demo task completed", WAIT, || {
        tasks().iter().all(|t| t["status"] == "completed")
    });
    assert!(
        tasks().iter().all(|t| t["owner"] == "coder"),
        "{:?}",
        tasks()
    );
    env.ok(&["demo", "--stop"]);
}

/// Issue 11.21: run inside tmux, the demo leaves the user's window alone (its teammates go to
/// its detached session, as the README says), and its hints name the binary that ran (not
/// on PATH after `cargo run`).
#[test]
fn demo_inside_tmux_uses_its_own_session_and_hints_name_the_binary() {
    let env = TestEnv::with_tmux();
    let user = env
        .tmux_ok(&["new-session", "-d", "-s", "user", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_string();
    let socket = env
        .tmux_ok(&["display-message", "-p", "#{socket_path}"])
        .trim()
        .to_string();
    let out = env
        .cmd(&["demo"])
        .env("TMUX", format!("{socket},1,0"))
        .env("TMUX_PANE", &user)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let window = env.tmux_ok(&["list-panes", "-t", "=user:", "-F", "#{pane_id}"]);
    assert_eq!(window.trim(), user, "the demo split the user's window");
    let panes = env.tmux_ok(&[
        "list-panes",
        "-a",
        "-F",
        "#{session_name} #{@teamctl-agent}",
    ]);
    for mate in ["planner", "coder", "reviewer"] {
        assert!(
            panes.lines().any(
                |l| l.ends_with(&format!(" {}", env.tag(&format!("{mate}@demo"))))
                    && !l.starts_with("user ")
            ),
            "{mate} is not in the demo's own session: {panes}"
        );
    }
    let exe = std::fs::canonicalize(BIN).unwrap();
    let exe = exe.display().to_string();
    // The test's home is not the default one: the hints name it, so that they reach this
    // demo from another shell (new-user QA: `demo --stop` found no demo).
    let home = env.home_path().display().to_string();
    assert!(
        stdout.contains(&format!("{exe} --home {home} lead"))
            || stdout.contains(&format!("{BIN} --home {home} lead")),
        "the hints do not name {exe} and the home: {stdout}"
    );
    env.ok(&["demo", "--stop"]);
}

/// Issue 11.21: `demo --json` prints one JSON summary on stdout (the progress on stderr), and
/// `demo --stop --json` one object too.
#[test]
fn demo_json_prints_one_summary() {
    let env = TestEnv::with_tmux();
    let out = env.ok(&["--json", "demo"]);
    let summary: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("demo --json stdout is not one JSON document ({e}): {out}"));
    assert_eq!(summary["team"], "demo", "{summary}");
    assert_eq!(summary["members"].as_array().unwrap().len(), 4, "{summary}");
    assert!(summary["next"]["lead"].as_str().unwrap().ends_with(" lead"));
    let out = env.ok(&["--json", "demo", "--stop"]);
    let stopped: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("demo --stop --json: not JSON ({e}): {out}"));
    assert_eq!(stopped["stopped"], true);
    assert!(!env.team_dir("demo").exists());
}

/// Issue 11.21: the popups stay open when their command fails, so its error can be read
/// (`display-popup -EE`: closed by itself only after a success).
#[test]
fn tmux_popups_stay_open_on_failure() {
    let conf = std::fs::read_to_string(repo().join("shell/teamctl.tmux.conf")).unwrap();
    let popups: Vec<&str> = conf
        .lines()
        .filter(|l| l.contains("display-popup"))
        .collect();
    assert_eq!(popups.len(), 3, "{conf}");
    for l in popups {
        assert!(l.contains("display-popup -EE "), "{l}");
    }
    // And tmux takes them.
    let env = TestEnv::with_tmux();
    env.tmux_ok(&["-f", "/dev/null", "new-session", "-d", "-s", "keys"]);
    env.tmux_ok(&[
        "source-file",
        repo().join("shell/teamctl.tmux.conf").to_str().unwrap(),
    ]);
    let keys = env.tmux_ok(&["list-keys", "-T", "prefix"]);
    assert!(keys.contains("teamctl lead"), "{keys}");
}

/// A shell with `teamctl` (this build) on PATH and `env`'s home.
fn shell_in(env: &TestEnv, shell: &str, script: &str) -> String {
    let found = Command::new(shell).arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "{shell} is required for this test and was not found on PATH (install it: apt-get install -y {shell}; .ci/run does)"
    );
    let path = path_with_teamctl(env);
    let out = Command::new(shell)
        .arg("-c")
        .arg(script)
        .current_dir(repo())
        .env("PATH", path)
        .env("TEAMCTL_HOME", env.home_path())
        .env_remove("TEAMCTL_TEAM")
        .env_remove("TEAMCTL_AGENT_NAME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shell}: {script}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `PATH` with a directory holding `teamctl` (this build) first.
fn path_with_teamctl(env: &TestEnv) -> String {
    let bin = env.work.path().join("bin");
    if !bin.exists() {
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(BIN, bin.join("teamctl")).unwrap();
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// bash as a user types into it (readline, with `=` in `COMP_WORDBREAKS`, the default):
/// `--opt=<Tab>` puts the value after the one `=` (new-user QA 45: `--team==alpha`; the test
/// above sets `COMP_WORDS` by hand, which readline's insertion never meets).
#[test]
fn bash_completes_a_value_typed_after_equals_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let pane = env
        .tmux_ok(&[
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "20",
            "-P",
            "-F",
            "#{pane_id}",
            "env",
            "-u",
            "TEAMCTL_TEAM",
            "-u",
            "TEAMCTL_AGENT_NAME",
            &format!("PATH={}", path_with_teamctl(&env)),
            &format!("TEAMCTL_HOME={}", env.home_path().display()),
            "PS1=$ ",
            "bash",
            "--norc",
            "--noprofile",
        ])
        .trim()
        .to_string();
    let script = repo().join("shell/teamctl.bash");
    let typed = |keys: &[&str]| {
        for k in keys {
            env.tmux_ok(&["send-keys", "-t", &pane, k]);
        }
    };
    let screen = || env.tmux_ok(&["capture-pane", "-p", "-t", &pane]);
    typed(&["-l", &format!("source {}; echo sourced", script.display())]);
    typed(&["Enter"]);
    wait_until("the script sourced", Duration::from_secs(10), || {
        screen().lines().any(|l| l == "sourced")
    });
    for (line, want) in [
        ("teamctl --team=", "teamctl --team=alpha"),
        ("teamctl send --as=bo", "teamctl send --as=bob"),
    ] {
        typed(&["C-u"]);
        typed(&["-l", line]);
        typed(&["Tab"]);
        wait_until(
            &format!("{line:?} completed to {want:?}"),
            Duration::from_secs(10),
            // (tmux's capture leaves out the space completion puts after the word.)
            || screen().lines().any(|l| l.trim_start_matches("$ ") == want),
        );
        assert!(!screen().contains("=="), "{}", screen());
    }
}

/// A shell in a pane of `env`'s private tmux server, typed into as a user would: this build's
/// `teamctl` on PATH, `env`'s home, the completion script from `shell/` loaded, in a
/// directory holding one file, `FILE`, which a completion that falls back to file names puts
/// in the line. Its own HOME (zsh's compinit and fish write there) is under `env`'s work dir.
struct Terminal<'a> {
    env: &'a TestEnv,
    pane: String,
    prompt: &'static str,
    /// Numbers each line's end mark, so that an earlier line on the screen never counts.
    typed: std::cell::Cell<usize>,
    /// The screen `tab` read last, for a failure's message.
    seen: std::cell::RefCell<String>,
}

/// The one file in a `Terminal`'s directory.
const FILE: &str = "zz-a-file";

impl<'a> Terminal<'a> {
    fn start(env: &'a TestEnv, shell: &str) -> Terminal<'a> {
        Terminal::start_with(env, shell, false)
    }

    /// `start`, with the aliases file for `shell` sourced after the completion script when
    /// `aliases`.
    fn start_with(env: &'a TestEnv, shell: &str, aliases: bool) -> Terminal<'a> {
        let found = Command::new(shell).arg("--version").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "{shell} is required for this test and was not found on PATH (install it: apt-get install -y {shell}; .ci/run does)"
        );
        let dir = env.work.path().join(format!("in-{shell}"));
        let home = env.work.path().join(format!("home-{shell}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(dir.join(FILE), "").unwrap();
        let (prompt, argv, setup): (&str, &[&str], String) = match shell {
            "bash" => (
                "$ ",
                &["bash", "--norc", "--noprofile"],
                format!(
                    "PS1='$ '; source {}",
                    repo().join("shell/teamctl.bash").display()
                ),
            ),
            "zsh" => (
                "% ",
                &["zsh", "-f"],
                format!(
                    "PS1='%% '; autoload -U compinit; compinit -u -D; source {}",
                    repo().join("shell/_teamctl").display()
                ),
            ),
            "fish" => (
                "> ",
                &["fish", "--no-config", "--private"],
                format!(
                    "function fish_prompt; echo -n '> '; end; set -g fish_autosuggestion_enabled 0; source {}",
                    repo().join("shell/teamctl.fish").display()
                ),
            ),
            _ => panic!("no terminal set-up for {shell}"),
        };
        let setup = if aliases {
            let file = if shell == "fish" {
                "aliases.fish"
            } else {
                "aliases.sh"
            };
            format!(
                "{setup}; source {}",
                repo().join("shell").join(file).display()
            )
        } else {
            setup
        };
        let path = format!("PATH={}", path_with_teamctl(env));
        let teamctl_home = format!("TEAMCTL_HOME={}", env.home_path().display());
        let home = format!("HOME={}", home.display());
        let mut args = vec![
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "30",
            "-c",
            dir.to_str().unwrap(),
            "-P",
            "-F",
            "#{pane_id}",
            "env",
            "-u",
            "TEAMCTL_TEAM",
            "-u",
            "TEAMCTL_AGENT_NAME",
            &path,
            &teamctl_home,
            &home,
        ];
        args.extend_from_slice(argv);
        let pane = env.tmux_ok(&args).trim().to_string();
        let t = Terminal {
            env,
            pane,
            prompt,
            typed: std::cell::Cell::new(0),
            seen: std::cell::RefCell::default(),
        };
        t.keys(&["-l", &format!("{setup}; echo set''up")]);
        t.keys(&["Enter"]);
        // The prompt after the output: the line editor reads the keys from then on (typed
        // earlier, the terminal would echo them as they are).
        wait_until(&format!("{shell} set up"), WAIT, || {
            let screen = t.screen();
            let mut after = screen.lines().skip_while(|l| *l != "setup");
            after.next().is_some() && after.any(|l| l.trim_end() == prompt.trim_end())
        });
        t
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.pane];
        args.extend_from_slice(keys);
        self.env.tmux_ok(&args);
    }

    fn screen(&self) -> String {
        self.env.tmux_ok(&["capture-pane", "-p", "-t", &self.pane])
    }

    /// The line after `line` is typed and Tab pressed once: what completion made of it (the
    /// space it puts after a word included). An end mark typed after the Tab shows when the
    /// Tab has been handled; the line is then cleared.
    fn tab(&self, line: &str) -> String {
        self.tabs(line, 1)
    }

    /// `tab`, Tab pressed `times` times (zsh's second Tab puts the first of a list in).
    fn tabs(&self, line: &str, times: usize) -> String {
        let n = self.typed.get() + 1;
        self.typed.set(n);
        let mark = format!("#end{n}#");
        self.keys(&["-l", line]);
        for _ in 0..times {
            self.keys(&["Tab"]);
        }
        self.keys(&["-l", &mark]);
        let mut found = String::new();
        wait_until(&format!("{line:?} then Tab handled"), WAIT, || {
            let screen = self.screen();
            match screen.lines().find(|l| l.contains(&mark)) {
                Some(l) => {
                    found = l.to_string();
                    *self.seen.borrow_mut() = screen.clone();
                    true
                }
                None => false,
            }
        });
        // Clear the line (fish: C-u kills back to the line's start; the cursor is at its end).
        self.keys(&["C-u"]);
        let found = found.strip_prefix(self.prompt).unwrap_or(&found);
        found.split(&mark).next().unwrap_or_default().to_string()
    }
}

/// bash lists directories sorted, as it lists files anywhere (new-user QA 47: the generated
/// script's `-o nosort` left `--cwd`'s in the order the directory holds them).
#[test]
fn bash_lists_directories_sorted_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    let t = Terminal::start(&env, "bash");
    // Eight: the chance that the directory holds them in sorted order is 1 in 40,320.
    let names = [
        "d-kiwi", "d-apple", "d-mango", "d-fig", "d-banana", "d-cherry", "d-lime", "d-grape",
    ];
    let dir = env.work.path().join("in-bash");
    for n in names {
        std::fs::create_dir(dir.join(n)).unwrap();
    }
    t.tabs("teamctl spawn x --cwd d-", 2);
    let screen = t.seen.borrow().clone();
    let listed: Vec<&str> = screen
        .lines()
        .find(|l| l.contains("d-apple/"))
        .unwrap_or_else(|| panic!("no list of directories: {screen}"))
        .split_whitespace()
        .collect();
    let mut want: Vec<String> = names.iter().map(|n| format!("{n}/")).collect();
    want.sort();
    assert_eq!(listed, want, "{screen}");
}

/// After `send NAME` comes the message, free text: Tab offers nothing there (new-user QA: bash
/// put a lone `-` in the line, every option's common start; zsh and fish offered the
/// directory's files), and options once a `-` is typed. The same for the other free words and
/// for a command that takes no more words; a file argument still completes file names.
#[test]
fn free_text_completes_to_nothing_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let t = Terminal::start(&env, shell);
        let mut check = |line: &str, ok: &dyn Fn(&str) -> bool| {
            let got = t.tab(line);
            if !ok(&got) {
                wrong.push(format!(
                    "{shell}: {line:?} became {got:?} on\n{}",
                    t.seen.borrow().trim_end()
                ));
            }
        };
        for line in [
            "teamctl send bob ",
            "teamctl send bob hello ",
            "teamctl send bob -- ",
            "teamctl ask bob ",
            "teamctl task add ",
            "teamctl spawn ",
            "teamctl status ",
            // Free text as an option's value (QA: it offered the directory's files).
            "teamctl send bob --summary ",
            "teamctl shutdown --reason ",
            "teamctl spawn x --exec ",
            "teamctl spawn x --prompt ",
            // No git repository here: no branch to offer.
            "teamctl spawn x --worktree ",
            // No team file here (QA: every file was offered).
            "teamctl up ",
        ] {
            check(line, &|got| got == line);
        }
        // (zsh puts `--summary=`, bash and fish `--summary `.)
        check("teamctl send bob --summ", &|got| {
            got.starts_with("teamctl send bob --summary")
        });
    }
    env.ok(&["kill", "bob"]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `*` (every teammate) is put in the line quoted, as fish does: zsh put it bare, and the
/// shell then made it the directory's file names, or failed with "no matches found" (new-user
/// QA 46).
#[test]
fn zsh_puts_the_everyone_recipient_in_quoted() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    let t = Terminal::start(&env, "zsh");
    let got = t.tabs("teamctl send ", 2);
    assert_eq!(
        got,
        "teamctl send \\*",
        "on\n{}",
        t.seen.borrow().trim_end()
    );
}

/// A word that takes a task id, a member or a team, when the team has none to offer: nothing,
/// not the directory's files (new-user QA: `task claim <Tab>` listed them in zsh and fish).
#[test]
fn a_team_word_without_candidates_completes_to_nothing_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["task", "add", "one"]);
    env.ok(&["task", "done", "1"]);
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let t = Terminal::start(&env, shell);
        for line in [
            "teamctl task claim ",
            "teamctl task done ",
            "teamctl task show 9",
            "teamctl kill ",
            "teamctl plan approve ",
            "teamctl send z",
            "teamctl --team z",
            "teamctl log --from z",
        ] {
            let got = t.tab(line);
            if got != line {
                wrong.push(format!(
                    "{shell}: {line:?} became {got:?} on\n{}",
                    t.seen.borrow().trim_end()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `--color` offers its own values (auto, always, never); with `spawn`, where a colour name is
/// the new teammate's, the colours too (new-user QA: `--color=<Tab>` offered red, blue...).
#[test]
fn color_completes_its_own_values_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let t = Terminal::start(&env, shell);
        for (line, want) in [
            ("teamctl --color=r", "teamctl --color=r"),
            ("teamctl --color r", "teamctl --color r"),
            ("teamctl status --color=b", "teamctl status --color=b"),
            ("teamctl --color=ne", "teamctl --color=never "),
            (
                "teamctl status --color al",
                "teamctl status --color always ",
            ),
            ("teamctl spawn x --color=r", "teamctl spawn x --color=red "),
            (
                "teamctl spawn x --color bl",
                "teamctl spawn x --color blue ",
            ),
        ] {
            let got = t.tab(line);
            if got != want {
                wrong.push(format!(
                    "{shell}: {line:?} became {got:?}, not {want:?}, on\n{}",
                    t.seen.borrow().trim_end()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Types `line` and Tab into `t`: unless it became `want`, a note of what it became is pushed
/// to `wrong`.
fn expect_tab(t: &Terminal, shell: &str, line: &str, want: &str, wrong: &mut Vec<String>) {
    let got = t.tab(line);
    if got != want {
        wrong.push(format!(
            "{shell}: {line:?} became {got:?}, not {want:?}, on\n{}",
            t.seen.borrow().trim_end()
        ));
    }
}

/// A word that takes a directory offers directories only (`spawn --cwd`), one that takes a
/// team file the `*.toml` files and directories (`up`, `down`), and `--worktree` the branches
/// of the repository the shell is in (QA: each offered every file).
#[test]
fn paths_and_branches_complete_as_the_word_takes_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let dir = env.work.path().join(format!("in-{shell}"));
        std::fs::create_dir_all(dir.join("zz-a-dir")).unwrap();
        std::fs::write(dir.join("zz-a-team.toml"), "").unwrap();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["commit", "-q", "--allow-empty", "-m", "first"]);
        git(&["branch", "zz-feature"]);
        let t = Terminal::start(&env, shell);
        for (line, want) in [
            (
                "teamctl spawn x --cwd zz-a-d",
                "teamctl spawn x --cwd zz-a-dir/",
            ),
            (
                "teamctl spawn x --cwd zz-a-f",
                "teamctl spawn x --cwd zz-a-f",
            ),
            (
                "teamctl spawn x --cwd zz-a-t",
                "teamctl spawn x --cwd zz-a-t",
            ),
            (
                "teamctl spawn x --cwd=zz-a-d",
                "teamctl spawn x --cwd=zz-a-dir/",
            ),
            (
                "teamctl spawn x --cwd=zz-a-f",
                "teamctl spawn x --cwd=zz-a-f",
            ),
            ("teamctl --home zz-a-f", "teamctl --home zz-a-f"),
            ("teamctl up zz-a-f", "teamctl up zz-a-f"),
            ("teamctl up zz-a-t", "teamctl up zz-a-team.toml "),
            ("teamctl up zz-a-d", "teamctl up zz-a-dir/"),
            ("teamctl down zz-a-t", "teamctl down zz-a-team.toml "),
            (
                "teamctl spawn x --worktree zz-",
                "teamctl spawn x --worktree zz-feature ",
            ),
            (
                "teamctl spawn x --worktree=zz-",
                "teamctl spawn x --worktree=zz-feature ",
            ),
        ] {
            expect_tab(&t, shell, line, want, &mut wrong);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `completions` offers the shells and `help` the subcommands (QA: fish offered files), and
/// a name already on the line is not offered again; `resume` offers the teammates that are
/// not running, `task claim` the tasks that can be claimed (QA: all were).
#[test]
fn values_names_and_tasks_complete_as_the_command_takes_them_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    for n in ["bob", "bea", "cid"] {
        env.ok(&["spawn", n, "--backend", "process", "--exec", "cat"]);
    }
    env.ok(&["kill", "cid"]);
    env.ok(&["task", "add", "bob's"]);
    env.ok(&["--as", "bob", "task", "claim", "1"]);
    env.ok(&["task", "add", "free"]);
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let t = Terminal::start(&env, shell);
        for (line, want) in [
            ("teamctl completions fi", "teamctl completions fish "),
            ("teamctl help sta", "teamctl help status "),
            ("teamctl help task cl", "teamctl help task claim "),
            ("teamctl kill bob b", "teamctl kill bob bea "),
            ("teamctl wait bea b", "teamctl wait bea bob "),
            ("teamctl resume ", "teamctl resume cid "),
            ("teamctl task claim ", "teamctl task claim 2 "),
        ] {
            expect_tab(&t, shell, line, want, &mut wrong);
        }
    }
    env.ok(&["kill", "bob"]);
    env.ok(&["kill", "bea"]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each alias completes as the teamctl command it stands for (QA: bash offered files for
/// every alias but `tc`).
#[test]
fn aliases_complete_as_their_command_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["task", "add", "one"]);
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let t = Terminal::start_with(&env, shell, true);
        for (line, want) in [
            ("tc sta", "tc status "),
            ("tcm team-", "tcm team-lead "),
            ("tca team-", "tca team-"),
            ("tct cl", "tct claim "),
            ("tct claim ", "tct claim 1 "),
            ("tcm team-lead ", "tcm team-lead "),
            ("tcs ", "tcs "),
            ("tcn x --cwd zz-a-f", "tcn x --cwd zz-a-f"),
        ] {
            expect_tab(&t, shell, line, want, &mut wrong);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An older teamctl, whose `__complete` exits 0 for every word (with nothing to say where it
/// does not know), leaves the word to the generated completion: the script looks for the
/// marker that leads a newer one's answers (subcommands and options were lost).
#[test]
fn an_older_binary_leaves_the_generated_completion_in_a_real_terminal() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    let bin = env.work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let old = bin.join("teamctl");
    std::fs::write(
        &old,
        format!("#!/bin/sh\n[ \"$1\" = __complete ] && exit 0\nexec {BIN} \"$@\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut wrong = Vec::new();
    for shell in ["bash", "zsh", "fish"] {
        let t = Terminal::start(&env, shell);
        for (line, want) in [
            ("teamctl sta", "teamctl status "),
            ("teamctl task cl", "teamctl task claim "),
            ("teamctl send --summ", "teamctl send --summary"),
        ] {
            let got = t.tab(line);
            // (zsh puts `--summary=`, bash and fish `--summary `.)
            if !got.starts_with(want) {
                wrong.push(format!(
                    "{shell}: {line:?} became {got:?}, not {want:?}, on\n{}",
                    t.seen.borrow().trim_end()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

/// Issue 11.21: in bash, zsh and fish, teammate names and task ids complete from the current
/// team, `--color` offers its values, and the rest still completes as before; an option's
/// value also in the `--opt=VALUE` form.
#[test]
fn bash_zsh_and_fish_complete_names_task_ids_and_colours() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    for n in ["bob", "bea"] {
        env.ok(&["spawn", n, "--backend", "process", "--exec", "cat"]);
    }
    env.ok(&["task", "add", "one"]);
    // A completed task is offered to `show`, not to `done` or `claim` (new-user QA).
    env.ok(&["task", "add", "finished"]);
    env.ok(&["task", "done", "2"]);
    let bash = |words: &str| {
        shell_in(
            &env,
            "bash",
            &format!(
                "source shell/teamctl.bash; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _teamctl teamctl \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\""
            ),
        )
    };
    assert_eq!(sorted(&bash("teamctl kill b")), ["bea", "bob"]);
    assert_eq!(sorted(&bash("teamctl log --worker ''")), ["bea", "bob"]);
    assert_eq!(sorted(&bash("teamctl task done ''")), ["1"]);
    assert_eq!(sorted(&bash("teamctl --color n")), ["never"]);
    // Values only, no file names (the repository's files would show here); the teammate
    // colours with `spawn` only.
    let when = ["always", "auto", "never"];
    let colours = [
        "always", "auto", "blue", "cyan", "green", "magenta", "never", "red", "white", "yellow",
    ];
    assert_eq!(sorted(&bash("teamctl --color ''")), when);
    assert_eq!(sorted(&bash("teamctl spawn x --color ''")), colours);
    assert_eq!(sorted(&bash("teamctl sta")), ["status"]);
    assert_eq!(sorted(&bash("teamctl task show ''")), ["1", "2"]);
    assert_eq!(sorted(&bash("teamctl task claim ''")), ["1"]);
    let agents = ["aider", "claude", "codex", "gemini"];
    assert_eq!(sorted(&bash("teamctl spawn x --agent ''")), agents);
    let zsh = |words: &str, current: usize| {
        shell_in(
            &env,
            "zsh",
            &format!(
                "compdef() {{ : }}; source shell/_teamctl; compadd() {{ print -l -- \"${{(@P)${{@[-1]}}}}\" }}; words=({words}); CURRENT={current}; _teamctl"
            ),
        )
    };
    assert_eq!(sorted(&zsh("teamctl kill ''", 3)), ["bea", "bob"]);
    assert_eq!(sorted(&zsh("teamctl log --worker ''", 4)), ["bea", "bob"]);
    assert_eq!(sorted(&zsh("teamctl task show ''", 4)), ["1", "2"]);
    assert_eq!(sorted(&zsh("teamctl task done ''", 4)), ["1"]);
    assert_eq!(sorted(&zsh("teamctl --color ''", 3)), when);
    assert_eq!(sorted(&zsh("teamctl spawn x --color ''", 5)), colours);
    let fish = |line: &str| {
        shell_in(
            &env,
            "fish",
            &format!("source shell/teamctl.fish; complete -C '{line}'"),
        )
    };
    assert_eq!(sorted(&fish("teamctl wait b")), ["bea", "bob"]);
    assert_eq!(sorted(&fish("teamctl log --worker ")), ["bea", "bob"]);
    assert_eq!(sorted(&fish("teamctl task done ")), ["1"]);
    assert_eq!(sorted(&fish("teamctl spawn x --color bl")), ["blue"]);
    assert_eq!(sorted(&fish("teamctl --color ")), when);
    assert_eq!(sorted(&fish("teamctl spawn x --color ")), colours);
    assert_eq!(sorted(&fish("teamctl stat")), ["status"]);
    assert_eq!(sorted(&fish("teamctl spawn x --agent ")), agents);
    // An option's value comes from the team, never from file names (QA: fish offered the
    // directory's files for `--team`, `--as`, `--from`, `--to` and `--owner`).
    let members = ["bea", "bob", "team-lead"];
    assert_eq!(sorted(&fish("teamctl --team ")), ["alpha"]);
    assert_eq!(sorted(&fish("teamctl status --team ")), ["alpha"]);
    assert_eq!(sorted(&fish("teamctl send --as ")), members);
    assert_eq!(sorted(&fish("teamctl log --from ")), members);
    assert_eq!(sorted(&fish("teamctl log --to b")), ["bea", "bob"]);
    assert_eq!(sorted(&fish("teamctl task update 1 --owner ")), members);
    // A directory after `--opt=`, the option once (new-user QA 48: `--cwd=--cwd=docs/`).
    for line in ["teamctl spawn x --cwd=", "teamctl --home="] {
        let dirs = sorted(&fish(line));
        let opt = line.rsplit(' ').next().unwrap();
        assert!(
            dirs.contains(&format!("{opt}docs/")) && dirs.iter().all(|d| !d.contains("=--")),
            "{line}: {dirs:?}"
        );
    }
    // Each name alone, not followed by the option's help (new-user QA 47).
    let owners = fish("teamctl task update 1 --owner ");
    assert!(!owners.contains('\t'), "{owners:?}");
    assert_eq!(
        sorted(&fish("teamctl task add x --blocked-by ")),
        ["1", "2"]
    );
    // Nothing of the team's matches: nothing, not the repository's Cargo.toml.
    assert!(fish("teamctl send --as Car").trim().is_empty());
    assert!(fish("teamctl --team Car").trim().is_empty());
    // The `--opt=VALUE` form completes the same values, `--opt=` kept in front (it completed
    // nothing: `__complete` took `--team=` for an option being typed).
    let eq = |opt: &str, values: &[&str]| -> Vec<String> {
        values.iter().map(|v| format!("{opt}={v}")).collect()
    };
    assert_eq!(sorted(&fish("teamctl --team=")), eq("--team", &["alpha"]));
    assert_eq!(
        sorted(&fish("teamctl send --team=al")),
        eq("--team", &["alpha"])
    );
    assert_eq!(sorted(&fish("teamctl send --as=")), eq("--as", &members));
    assert_eq!(sorted(&fish("teamctl log --from=")), eq("--from", &members));
    assert_eq!(
        sorted(&fish("teamctl log --to=b")),
        eq("--to", &["bea", "bob"])
    );
    assert_eq!(
        sorted(&fish("teamctl --team=alpha log --worker=")),
        eq("--worker", &["bea", "bob"])
    );
    assert_eq!(
        sorted(&fish("teamctl task update 1 --owner=")),
        eq("--owner", &members)
    );
    assert_eq!(
        sorted(&fish("teamctl task add x --blocked-by=")),
        eq("--blocked-by", &["1", "2"])
    );
    assert_eq!(
        sorted(&fish("teamctl log --type=idle")),
        eq("--type", &["idle_notification"])
    );
    assert!(fish("teamctl send --as=Car").trim().is_empty());
    // bash splits `--team=` at `=` (COMP_WORDBREAKS): the value's word completes alone; zsh
    // keeps one word, which gets its candidates with `--team=` in front.
    assert_eq!(sorted(&bash("teamctl send --team = ''")), ["alpha"]);
    assert_eq!(
        sorted(&bash("teamctl --team = alpha task update 1 --owner = ''")),
        members
    );
    assert_eq!(sorted(&bash("teamctl log --to = b")), ["bea", "bob"]);
    // With nothing typed after `=`, bash's words end with `=`: the values, which readline
    // puts after the `=` (new-user QA: it listed file names; 45: `=` in front doubled it).
    assert_eq!(sorted(&bash("teamctl send --as =")), members);
    assert_eq!(sorted(&bash("teamctl --team =")), ["alpha"]);
    assert_eq!(
        sorted(&zsh("teamctl send --team=", 3)),
        eq("--team", &["alpha"])
    );
    assert_eq!(
        sorted(&zsh("teamctl --team=alpha log --worker=b", 4)),
        eq("--worker", &["bea", "bob"])
    );
    env.ok(&["kill", "bob"]);
    env.ok(&["kill", "bea"]);
}

/// Issue 11.21: fish gets its own aliases file, with the same names as aliases.sh, each
/// running teamctl.
#[test]
fn aliases_work_in_fish() {
    let names = |file: &str, prefix: &str| -> Vec<String> {
        std::fs::read_to_string(repo().join(file))
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|rest| rest.split(['=', ' ']).next().unwrap().to_string())
            .collect()
    };
    let sh = names("shell/aliases.sh", "alias ");
    assert!(sh.len() > 10);
    assert_eq!(names("shell/aliases.fish", "alias "), sh);
    let env = TestEnv::new();
    let out = shell_in(
        &env,
        "fish",
        "source shell/aliases.fish; and tc --version; and tcs --help",
    );
    assert!(out.starts_with("teamctl "), "{out}");
    assert!(out.contains("Every member's state"), "{out}");
}

/// `status` reads each member's files and its worker's `/proc` entry with as few system calls
/// as it can (twelfth session: a zombie is told by its empty argv, a log is not opened when the
/// cursor is at its end). Still, on the process backend: a worker killed with SIGKILL is dead
/// whether `status` finds it a zombie or reaped, its unread mail counted; the others are idle,
/// one with its cursor at its log's end, one with no cursor and an empty log.
#[test]
fn status_tells_a_killed_process_teammate_dead_with_its_mail_and_the_rest_idle() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    for n in ["a", "b", "c"] {
        env.ok(&[
            "spawn",
            n,
            "--backend",
            "process",
            "--exec",
            "cat >/dev/null",
        ]);
    }
    let of = |name: &str| {
        let m = env.member(name);
        (
            m["status"].as_str().unwrap().to_string(),
            m["unread"].as_u64().unwrap(),
        )
    };
    for n in ["a", "b", "c"] {
        wait_until(&format!("{n} is idle"), Duration::from_secs(30), || {
            env.member_status(n) == "idle"
        });
    }
    // a and b each handle one message: their cursors stand at their logs' ends.
    for n in ["a", "b"] {
        env.ok(&["send", n, "one"]);
        wait_until(
            &format!("{n} handled its message"),
            Duration::from_secs(30),
            || of(n) == ("idle".into(), 0),
        );
    }
    let pid = env.member("a")["pid"].as_u64().unwrap();
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Gone, or a zombie not yet reaped: either way no longer running.
    wait_until("a's worker has died", Duration::from_secs(30), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
        })
    });
    // Two messages for a, put in its inbox without `send` (which would resume it).
    let home = teamctl::store::Home::new(env.home_path().to_path_buf());
    let store = home
        .open(&teamctl::domain::Name::parse("alpha").unwrap())
        .unwrap();
    let a = teamctl::domain::Name::parse("a").unwrap();
    for text in ["two", "three"] {
        let mail = teamctl::domain::Envelope::new(
            "team-lead",
            "a",
            teamctl::domain::Body::message(text, None),
        );
        store.append(&a, &mail).unwrap();
    }
    assert_eq!(of("a"), ("dead".into(), 2), "a's worker was killed");
    assert_eq!(of("b"), ("idle".into(), 0));
    assert_eq!(of("c"), ("idle".into(), 0));
    let text = env.ok(&["status"]);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in:\n{text}"))
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_eq!(
        [line("a"), line("b"), line("c")],
        ["dead", "idle", "idle"],
        "{text}"
    );
}
