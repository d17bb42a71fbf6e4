//! Interactive teammates (`spawn --interactive`): the agent's own REPL or TUI runs in a pane
//! of a private tmux server and a detached companion pastes each message into it. Generic
//! mode is tested against `python3 -i`, a REPL nobody here wrote; the Claude Code preset
//! against the real `claude` TUI and the fake model. They fail, never pass, without tmux.

use std::time::Duration;

use crate::common::{TestEnv, wait_until};

const WAIT: Duration = Duration::from_secs(30);
const PYTHON: &str = "python3 -i";
const PROMPT: &str = "^>>> $";

fn team(env: &TestEnv, name: &str) -> String {
    env.ok(&["create", name]).trim().to_string()
}

fn spawn_python(env: &TestEnv, name: &str) {
    env.ok(&[
        "spawn",
        name,
        "--interactive",
        "--exec",
        PYTHON,
        "--prompt-pattern",
        PROMPT,
    ]);
}

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
        .cloned()
        .unwrap_or_else(|| panic!("{name} not in config"))
}

fn pane_of(env: &TestEnv, team: &str, name: &str) -> String {
    recorded(env, team, name)["paneId"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} has no paneId"))
        .to_string()
}

/// The pane's text (history included), or empty when it is gone.
fn screen(env: &TestEnv, pane: &str) -> String {
    let out = env.tmux(&["capture-pane", "-p", "-J", "-S", "-200", "-t", pane]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn panes(env: &TestEnv) -> Vec<String> {
    let out = env.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Texts of the messages (type `message`) from `from` in the leader's inbox, in order.
fn replies(env: &TestEnv, team: &str, from: &str) -> Vec<String> {
    env.inbox(team, "team-lead")
        .into_iter()
        .filter(|m| m["from"] == from && m["type"] == "message")
        .map(|m| m["text"].as_str().unwrap_or("").to_string())
        .collect()
}

fn log(env: &TestEnv, team: &str, name: &str) -> String {
    std::fs::read_to_string(env.team_dir(team).join(format!("logs/{name}.log"))).unwrap_or_default()
}

/// Processes of this home carrying `agent_id` (its companion, the agent in its pane).
fn tagged(env: &TestEnv, agent_id: &str) -> Vec<u32> {
    env.processes()
        .into_iter()
        .filter(|p| {
            let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
            let argv = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let has = |hay: &[u8]| {
                hay.windows(agent_id.len())
                    .any(|w| w == agent_id.as_bytes())
            };
            has(&env) || has(&argv)
        })
        .collect()
}

#[test]
fn a_message_lands_in_a_python_repl_and_its_output_comes_back() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-one");
    spawn_python(&env, "py");
    let out = env.ok(&["ask", "py", "6*7", "--timeout", "30"]);
    assert_eq!(out.trim(), "42");
    let pane = pane_of(&env, &t, "py");
    let text = screen(&env, &pane);
    assert!(text.contains(">>> 6*7\n42\n>>> "), "{text}");
    // The pane runs the REPL itself; the companion is a detached worker.
    let m = recorded(&env, &t, "py");
    assert_eq!(m["interactive"]["promptPattern"], PROMPT);
    assert_eq!(env.member_status("py"), "idle");
    // A multi-line print: every line of output, nothing of the echo or the prompt.
    let out = env.ok(&["ask", "py", "print('a'); print('b')", "--timeout", "30"]);
    assert_eq!(out.trim(), "a\nb");
}

#[test]
fn mail_sent_mid_turn_is_delivered_after_the_turn() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-mid");
    spawn_python(&env, "py");
    env.ok(&[
        "send",
        "py",
        "import time; time.sleep(2); print('slow done')",
    ]);
    wait_until("py busy with the slow turn", WAIT, || {
        env.member_status("py") == "working"
    });
    env.ok(&["send", "py", "1+2"]);
    wait_until("both replies", WAIT, || replies(&env, &t, "py").len() >= 2);
    assert_eq!(replies(&env, &t, "py"), ["slow done", "3"]);
    // In the pane: the second input only after the first turn's output and prompt (a paste
    // during the sleep would have been echoed before "slow done").
    let text = screen(&env, &pane_of(&env, &t, "py"));
    let slow = text
        .find("slow done\n>>> 1+2\n3")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(!text[..slow].contains("1+2"), "{text}");
}

#[test]
fn interrupt_cancels_a_slow_turn_and_the_repl_goes_on() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-int");
    spawn_python(&env, "py");
    env.ok(&["send", "py", "import time; time.sleep(120)"]);
    wait_until("py busy", WAIT, || env.member_status("py") == "working");
    let out = env.ok(&["interrupt", "py"]);
    assert!(out.contains("interrupted"), "{out}");
    let pane = pane_of(&env, &t, "py");
    wait_until("KeyboardInterrupt in the pane", WAIT, || {
        screen(&env, &pane).contains("KeyboardInterrupt")
    });
    wait_until("the failure notice", WAIT, || {
        replies(&env, &t, "py")
            .iter()
            .any(|r| r.contains("interrupted"))
    });
    assert_eq!(env.ok(&["ask", "py", "2+2", "--timeout", "30"]).trim(), "4");
}

#[test]
fn shutdown_closes_exactly_that_pane_and_leaves_no_process() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-down");
    spawn_python(&env, "py");
    spawn_python(&env, "other");
    assert_eq!(env.ok(&["ask", "py", "1", "--timeout", "30"]).trim(), "1");
    let (py, other) = (pane_of(&env, &t, "py"), pane_of(&env, &t, "other"));
    let id = format!("py@{t}");
    // The companion, and the REPL (with the `sh -c` it was started through).
    let running = tagged(&env, &id);
    assert!(running.len() >= 2, "{}", crate::common::describe(&running));
    env.ok(&["shutdown", "py"]);
    assert_eq!(env.member_status("py"), "stopped");
    wait_until("py's pane closed", WAIT, || !panes(&env).contains(&py));
    assert!(panes(&env).contains(&other), "{:?}", panes(&env));
    wait_until("py's processes gone", WAIT, || tagged(&env, &id).is_empty());
    assert_eq!(env.member_status("other"), "idle");
    // kill ends the other pair, then resume brings it back, pane and companion.
    env.ok(&["kill", "other"]);
    wait_until("other's pane closed", WAIT, || {
        !panes(&env).contains(&other)
    });
    env.ok(&["resume", "other"]);
    assert_eq!(
        env.ok(&["ask", "other", "3*3", "--timeout", "30"]).trim(),
        "9"
    );
    env.ok(&["delete"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

#[test]
fn three_interactive_teammates_in_one_window() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-three");
    for n in ["a", "b", "c"] {
        spawn_python(&env, n);
    }
    let window = |n: &str| {
        env.tmux_ok(&[
            "display-message",
            "-p",
            "-t",
            &pane_of(&env, &t, n),
            "#{window_id}",
        ])
        .trim()
        .to_string()
    };
    assert_eq!(window("a"), window("b"));
    assert_eq!(window("b"), window("c"));
    for (n, q, a) in [("a", "1+1", "2"), ("b", "2+2", "4"), ("c", "3+3", "6")] {
        env.ok(&["send", n, q]);
        let _ = a;
    }
    for (n, a) in [("a", "2"), ("b", "4"), ("c", "6")] {
        wait_until(&format!("{n}'s reply"), WAIT, || {
            replies(&env, &t, n) == [a]
        });
    }
    let status = env.ok(&["status"]);
    assert_eq!(status.matches(" idle ").count(), 3, "{status}");
}

#[test]
fn text_typed_in_the_pane_is_not_pasted_over() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-typed");
    spawn_python(&env, "py");
    assert_eq!(env.ok(&["ask", "py", "1", "--timeout", "30"]).trim(), "1");
    let pane = pane_of(&env, &t, "py");
    // The user starts typing a line and has not pressed Enter.
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "40+"]);
    wait_until("the typed text shows", WAIT, || {
        screen(&env, &pane).trim_end().ends_with(">>> 40+")
    });
    env.ok(&["send", "py", "2*3"]);
    wait_until("the companion waits", WAIT, || {
        let l = log(&env, &t, "py");
        l.rfind("<- team-lead: 2*3")
            .is_some_and(|i| l[i..].contains("waiting to deliver"))
    });
    assert!(screen(&env, &pane).trim_end().ends_with(">>> 40+"));
    // The user finishes the line; the message follows once the prompt is back.
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "2"]);
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("the reply", WAIT, || replies(&env, &t, "py").len() >= 2);
    assert_eq!(replies(&env, &t, "py"), ["1", "6"]);
    let text = screen(&env, &pane);
    assert!(text.contains(">>> 40+2\n42\n>>> 2*3\n6\n"), "{text}");
}

#[test]
fn bad_interactive_spawns_are_refused_and_write_nothing() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-bad");
    let before = config(&env, &t);
    let e = env.fails(&["spawn", "x", "--interactive", "--exec", PYTHON], 2);
    assert!(e.contains("--prompt-pattern"), "{e}");
    let e = env.fails(
        &[
            "spawn",
            "x",
            "--interactive",
            "--exec",
            PYTHON,
            "--prompt-pattern",
            "(",
        ],
        2,
    );
    assert!(e.contains("not a regex"), "{e}");
    let e = env.fails(
        &[
            "spawn",
            "x",
            "--interactive",
            "--exec",
            PYTHON,
            "--prompt-pattern",
            PROMPT,
            "--backend",
            "process",
        ],
        2,
    );
    assert!(e.contains("tmux"), "{e}");
    assert_eq!(config(&env, &t), before);
}
