//! Attacks on isolation (issue 11, items 1-3), each played for real: two homes sharing one
//! tmux server with the same team name, symlinks planted where teamctl writes, homes owned by
//! someone else or open to everyone, and agents whose output carries terminal escapes.

use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(20);
/// Replies with the agent's name and the message text.
const ECHO: &str = "printf '%s got: ' \"$TEAMCTL_AGENT_NAME\"; cat";

fn config(env: &TestEnv, team: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(env.team_dir(team).join("config.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn recorded(env: &TestEnv, team: &str, name: &str) -> serde_json::Value {
    config(env, team)["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in config"))
        .clone()
}

fn pane_of(env: &TestEnv, team: &str, name: &str) -> String {
    recorded(env, team, name)["paneId"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} has no paneId"))
        .to_string()
}

/// `#{FORMAT}` of a pane, or `None` when the pane does not exist.
fn pane_format(env: &TestEnv, pane: &str, format: &str) -> Option<String> {
    let out = env.tmux(&[
        "display-message",
        "-p",
        "-t",
        pane,
        &format!("#{{pane_id}}|{format}"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match text.split_once('|') {
        Some((id, rest)) if out.status.success() && id == pane => Some(rest.to_string()),
        _ => None,
    }
}

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
        let state = pane_format(b, pane, "#{pane_dead} #{@teamctl-agent}");
        assert!(
            state
                .as_deref()
                .is_some_and(|s| s.starts_with(&format!("0 {n}@{team}"))),
            "after {after}: home B's pane {pane} of {n} was touched: {state:?}"
        );
        let pid = recorded(b, team, n)["pid"].as_u64().unwrap() as u32;
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
    let b_panes: Vec<String> = names.iter().map(|n| pane_of(&b, t, n)).collect();
    b_is_whole(&b, t, &names, &b_panes, "spawning");
    let a_panes: Vec<String> = names.iter().map(|n| pane_of(&a, t, n)).collect();

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
    a.ok(&["delete", "--force"]);
    b_is_whole(&b, t, &names, &b_panes, "delete in home A");
    // The names and tags that keep them apart.
    assert_ne!(a.session(t), b.session(t), "one session per home");
    for (n, pane) in names.iter().zip(&b_panes) {
        assert_eq!(
            pane_format(&b, pane, "#{session_name} #{@teamctl-agent}"),
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
        pane_format(&a, &older, "#{pane_id}").is_some(),
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
    let a_pane = pane_of(&a, t, "x");
    let a_pid = recorded(&a, t, "x")["pid"].as_u64().unwrap() as u32;
    a.tmux_ok(&["kill-server"]);
    wait_until("home A's worker ends with its server", WAIT, || {
        !teamctl::backend::proc::running(a_pid)
    });
    b.ok(&["create", t]);
    b.ok(&["spawn", "x", "--exec", ECHO, "--backend", "tmux"]);
    let b_panes = vec![pane_of(&b, t, "x")];
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
        pane_of(&a, t, "x"),
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

/// An agent's reply full of terminal escapes reaches the leader through `ask`, `inbox`, `log`,
/// `plan list` and the leader console as visible text, never as control bytes; `ask --raw`
/// gives the bytes unchanged.
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

    wait_until("the plan on the console", WAIT, || {
        String::from_utf8_lossy(&shown()).contains("asks to approve a plan")
    });
    let mut stdin = console.stdin.take().unwrap();
    let _ = stdin.write_all(b"/quit\n");
    drop(stdin);
    assert!(console.wait().unwrap().success());
    assert_inert("the leader console", &shown());
}
