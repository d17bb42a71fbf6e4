//! Interactive teammates (`spawn --interactive`): the agent's own REPL or TUI runs in a pane
//! of a private tmux server and a detached companion pastes each message into it. Generic
//! mode is tested against `python3 -i`, a REPL nobody here wrote; the Claude Code preset
//! against the real `claude` TUI and the fake model. They fail, never pass, without tmux.

use std::time::Duration;

use crate::common::{TestEnv, wait_until, wait_until_or_show};

const WAIT: Duration = Duration::from_secs(30);
const PYTHON: &str = "python3 -i";
const PROMPT: &str = "^>>> $";

fn team(env: &TestEnv, name: &str) -> String {
    env.ok(&["create", name]).trim().to_string()
}

/// `spawn NAME --interactive --exec EXEC --prompt-pattern PATTERN`, as run.
fn spawn_repl(env: &TestEnv, name: &str, exec: &str, pattern: &str) -> std::process::Output {
    env.run(&[
        "spawn",
        name,
        "--interactive",
        "--exec",
        exec,
        "--prompt-pattern",
        pattern,
    ])
}

fn spawn_python(env: &TestEnv, name: &str) {
    let out = spawn_repl(env, name, PYTHON, PROMPT);
    assert!(out.status.success(), "{out:?}");
}

/// `spawn py` as a python REPL with a prompt pattern that matches nothing it shows: its mail
/// never goes in.
fn spawn_unseen(env: &TestEnv) -> std::process::Output {
    spawn_repl(env, "py", PYTHON, "^NEVER$")
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
    // The team session's first pane is the leader's console, running as the leader (it got
    // the interactive teammate's identity and died refusing it, new-user QA).
    let dead = env.tmux_ok(&["list-panes", "-a", "-F", "#{pane_dead}"]);
    assert!(!dead.lines().any(|d| d == "1"), "a dead pane: {dead}");
    assert_eq!(env.consoles().len(), 1, "the leader console runs");
    let pane = env.pane_of(&t, "py");
    let text = screen(&env, &pane);
    assert!(text.contains(">>> 6*7\n42\n>>> "), "{text}");
    // The pane runs the REPL itself; the companion is a detached worker.
    let m = env.recorded(&t, "py");
    assert_eq!(m["interactive"]["promptPattern"], PROMPT);
    // Idle once the turn is over (the reply goes out first).
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    // A multi-line print: every line of output, nothing of the echo or the prompt.
    let out = env.ok(&["ask", "py", "print('a'); print('b')", "--timeout", "30"]);
    assert_eq!(out.trim(), "a\nb");
    // The agent's `teamctl` is this teamctl (its directory first on PATH), so it can answer
    // with `teamctl send`: tmux gives a pane the client's PATH whatever `-e PATH=` says.
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    let out = env.ok(&[
        "ask",
        "py",
        "import shutil; print(shutil.which('teamctl'))",
        "--timeout",
        "30",
    ]);
    assert_eq!(
        std::fs::canonicalize(out.trim()).ok(),
        std::fs::canonicalize(crate::common::BIN).ok(),
        "{out}"
    );
    // A block of several lines runs: the REPL gets the empty line that ends it.
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    let out = env.ok(&[
        "ask",
        "py",
        "for i in range(3):\n    print(i * 10)\n",
        "--timeout",
        "30",
    ]);
    assert_eq!(out.trim(), "0\n10\n20");
    // Several statements, and a definition then a call: the output, not the prompt the
    // block's last Enter leaves (new-user QA: both replies were `>>>`).
    for (text, want) in [
        ("x = 5\nx * 3", "15"),
        ("def f(a):\n    return a * 2\n\nf(21)", "42"),
        ("print(1)\nprint(2)", "1\n2"),
        // The Enters reach the terminal while python sleeps between two reads: the line
        // discipline echoes each as an empty line before the block's prompts (once in CI,
        // by chance, the reply began with `...`).
        (
            "import time; time.sleep(1)\nfor i in range(3):\n    print(i * 10)\n",
            "0\n10\n20",
        ),
    ] {
        wait_until("py idle", WAIT, || env.member_status("py") == "idle");
        let out = env.ok(&["ask", "py", text, "--timeout", "30"]);
        assert_eq!(out.trim(), want, "{text:?}");
    }
    // CRLF line ends are line ends (new-user QA 47: `\u{d}` was typed into the REPL).
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    let out = env.ok(&["ask", "py", "print('a')\r\nprint('b')", "--timeout", "30"]);
    assert_eq!(out.trim(), "a\nb");
    // A turn with no output points to the pane, not to a log that holds only the paste
    // (new-user QA 47).
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    let out = env.run(&["ask", "py", "pass", "--timeout", "30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("`teamctl attach py`"), "{err}");
}

#[test]
fn a_message_cannot_break_out_of_the_paste() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-esc");
    spawn_python(&env, "py");
    // ESC [201~ ends a bracketed paste; CR submits. Pasted as they are, the rest would be
    // typed into the REPL as keys: `print(7*6)` would run as a turn of its own.
    let out = env.run(&["ask", "py", "'x'\u{1b}[201~\rprint(7*6)", "--timeout", "30"]);
    let reply = String::from_utf8_lossy(&out.stdout);
    let pane = env.pane_of(&t, "py");
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    let text = screen(&env, &pane);
    assert!(!text.lines().any(|l| l.trim() == "42"), "{text}");
    assert!(!reply.lines().any(|l| l.trim() == "42"), "{reply}");
    // The escapes arrived as text, on one input line.
    assert!(text.contains("\\u{1b}[201~\\u{d}print(7*6)"), "{text}");
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
    let text = screen(&env, &env.pane_of(&t, "py"));
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
    let pane = env.pane_of(&t, "py");
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
    let (py, other) = (env.pane_of(&t, "py"), env.pane_of(&t, "other"));
    let id = format!("py@{t}");
    // The companion, and the REPL (with the `sh -c` it was started through).
    let running = tagged(&env, &id);
    assert!(running.len() >= 2, "{}", crate::common::describe(&running));
    env.ok(&["shutdown", "py"]);
    assert_eq!(env.member_status("py"), "stopped");
    wait_until("py's pane closed", WAIT, || !panes(&env).contains(&py));
    assert!(panes(&env).contains(&other), "{:?}", panes(&env));
    wait_until("py's processes gone", WAIT, || tagged(&env, &id).is_empty());
    wait_until("other idle", WAIT, || env.member_status("other") == "idle");
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

/// Whether a process of `agent_id` runs `teamctl worker` (its companion).
fn companion_runs(env: &TestEnv, agent_id: &str) -> bool {
    tagged(env, agent_id).into_iter().any(|p| {
        let argv = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        argv.split(|b| *b == 0).any(|w| w == b"worker")
    })
}

#[test]
fn a_repl_that_exits_ends_its_companion_and_ask_brings_it_back() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-exit");
    spawn_python(&env, "py");
    assert_eq!(env.ok(&["ask", "py", "1+1", "--timeout", "30"]).trim(), "2");
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    let id = format!("py@{t}");
    // The user ends the REPL in its pane: the companion goes with it, the member reads dead.
    let pane = env.pane_of(&t, "py");
    env.tmux_ok(&["send-keys", "-t", &pane, "exit()", "Enter"]);
    wait_until("py's companion gone", WAIT, || !companion_runs(&env, &id));
    assert_eq!(env.member_status("py"), "dead");
    assert!(log(&env, &t, "py").contains("pane is gone"));
    // `ask` resumes it as any dead teammate, pane and companion.
    assert_eq!(
        env.ok(&["ask", "py", "6*7", "--timeout", "30"]).trim(),
        "42"
    );
    assert_ne!(env.pane_of(&t, "py"), pane);
    // The whole tmux server gone: the same, and `send` resumes it too.
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    env.tmux(&["kill-server"]);
    wait_until("py's companion gone", WAIT, || !companion_runs(&env, &id));
    assert_eq!(env.member_status("py"), "dead");
    let out = env.run(&["send", "py", "3*3"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("resumed"));
    wait_until("py answered", WAIT, || {
        replies(&env, &t, "py").iter().any(|r| r.trim() == "9")
    });
    env.ok(&["delete"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// A message that ends the program (`exit(5)` to a REPL) ends its turn: the asker is told the
/// turn failed with the program's exit status and last output (`ask` said "stopped without
/// answering"), `status` says why it is dead (`exitReason`; it had none and said its turn
/// was interrupted), and the message is handled: the next `ask` resumes the teammate and is
/// answered (the resumed one was handed `exit(5)` again and died again: new-user QA). Asked
/// again at once, while the ended worker is on its way out, it is resumed all the same.
#[test]
fn a_message_that_ends_the_program_is_answered_with_why_and_not_delivered_again() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-dies");
    spawn_python(&env, "py");
    // tmux learns the exit status a moment after the pane dies; the last output is there.
    let why = |s: &str| {
        (s.contains("its program exited with status 5") || s.contains("its program ended"))
            && s.contains(">>> exit(5)")
    };
    for round in 0..3 {
        let out = env.run(&["ask", "py", "exit(5)", "--timeout", "30"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "round {round}: {out:?}");
        assert!(
            err.contains("py's turn failed") && why(&err) && !err.contains("without answering"),
            "round {round}: {err}"
        );
        let answer = env.run(&[
            "ask",
            "py",
            &format!("print({round}+40)"),
            "--timeout",
            "30",
        ]);
        assert_eq!(
            String::from_utf8_lossy(&answer.stdout).trim(),
            format!("{}", round + 40),
            "round {round}: {answer:?}\n{}",
            log(&env, &t, "py")
        );
    }
    // Ended by the user in its pane, seen dead: the reason is said.
    env.ok(&["send", "py", "exit(5)"]);
    wait_until("py dead, saying why", WAIT, || {
        let py = env.member("py");
        py["status"] == "dead" && py["exitReason"].is_string()
    });
    let py = env.member("py");
    assert!(py["exitReason"].as_str().is_some_and(why), "{py}");
    assert!(py["currentTurn"].is_null(), "{py}");
    let table = env.ok(&["status"]);
    assert!(!table.contains("interrupted: its worker died"), "{table}");
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// An interactive teammate whose program exits at once (a typo, a missing model): `spawn`
/// said "spawned", exit 0, `status` showed it dead with no reason (only its dead pane said
/// why), and a broadcast said "resumed it". Now `spawn` fails (exit 1) with the program's
/// exit status and last output, `status` (and `--json`'s `exitReason`) says it, and the
/// broadcast says the resume failed and why.
#[test]
fn a_program_that_exits_at_once_fails_its_spawn_saying_why() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-quit");
    let out = spawn_repl(
        &env,
        "py",
        "sh -c 'echo no such model: gpt-7 >&2; exit 3'",
        PROMPT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    // tmux records a dead pane's exit status a moment after marking it dead: on a busy
    // machine the reason may have only that the program ended (CI). tmux 3.3a now and then
    // keeps none of the output of a program that exits at once (about one start in 30 here;
    // waiting longer for it does not bring it): where there is output, it is the program's.
    let why = |s: &str| {
        (s.contains("its last output: no such model: gpt-7") || !s.contains("its last output"))
            && (s.contains("its program exited with status 3") || s.contains("its program ended"))
    };
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("py (interactive) exited as soon as it started: its program") && why(&err),
        "{err}"
    );
    let py = env.member("py");
    assert_eq!(py["status"], "dead", "{py}");
    assert!(py["exitReason"].as_str().is_some_and(why), "{py}");
    let table = env.ok(&["status"]);
    assert!(
        table.contains("py: its worker exited: its program") && why(&table),
        "{table}"
    );
    let sent = env.run(&["send", "*", "hello"]);
    let said = String::from_utf8_lossy(&sent.stderr);
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(
        !said.contains("resumed it") && said.contains("py did not start") && why(&said),
        "{said}"
    );
    assert!(why(&log(&env, &t, "py")));
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// An interactive teammate whose program clears its environment (`exec env -i`, as some wrappers
/// do) and ends a moment later: its worker cannot watch its exit (the pane's process no longer
/// carries the member's id), and saw the pane dead only by looking. It was taken as up then:
/// `spawn` said "spawned", exit 0, and `status` showed it idle (CI saw the same, one run in
/// many, from a program that ended before the worker could read its environment). Now the
/// spawn fails with why, as for a program whose exit is watched.
#[test]
fn a_program_that_clears_its_environment_and_ends_fails_its_spawn() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-envless");
    let out = spawn_repl(
        &env,
        "py",
        "exec env -i sh -c 'echo no such model: gpt-7 >&2; sleep 0.5; exit 3'",
        PROMPT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("py (interactive) exited as soon as it started: its program"),
        "{err}"
    );
    assert_eq!(env.member("py")["status"], "dead");
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// One tmux call that fails while the worker waits for its agent's prompt (a `capture-pane`
/// the server refused) is not the program's end: the start goes on and the teammate answers.
/// (Attacker QA: a pane that any failed tmux call showed as gone failed a healthy spawn, the
/// member marked dead, its program left running.)
#[test]
fn a_failed_tmux_call_during_the_first_look_does_not_fail_the_start() {
    let mut env = TestEnv::with_tmux();
    team(&env, "it-py-blip");
    let armed = env.tmux_client_on(
        "capture-pane",
        "echo 'server exited unexpectedly' >&2; exit 1",
    );
    std::fs::write(&armed, "").unwrap();
    let out = spawn_repl(&env, "py", PYTHON, PROMPT);
    assert!(!armed.exists(), "no capture-pane went through the wrapper");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        env.ok(&["ask", "py", "6*7", "--timeout", "30"]).trim(),
        "42"
    );
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// The exit status of a program that ends a moment after starting is said every time, and at
/// once: tmux 3.3a now and then never reaps such a pane's process (its `#{pane_dead_status}`
/// stays empty), and the failure said only "its program ended", 2 s late (new-user QA: a third
/// of the starts; five in six here). The unreaped process, a zombie, tells its status.
#[test]
fn the_exit_status_of_a_program_that_ends_is_said_every_time() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-status");
    for n in ["s1", "s2", "s3", "s4"] {
        let out = spawn_repl(&env, n, "sh -c 'echo hi; sleep 1; exit 4'", PROMPT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            err.contains(&format!(
                "{n} (interactive) exited as soon as it started: its program exited with status 4"
            )),
            "{err}"
        );
    }
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// A program whose main thread ends while another thread goes on (and later exits 3) shows as
/// a zombie whose own code is 0: not taken for the program's end (re-QA: "exited with status
/// 0"). Its status is said once the last thread is gone, or only that it ended.
#[test]
fn a_main_thread_that_ends_before_the_program_is_not_its_exit_status() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-thread");
    let script = env.work.path().join("pt.py");
    std::fs::write(
        &script,
        "import ctypes, os, signal, threading, time\n\
         signal.signal(signal.SIGHUP, signal.SIG_IGN)\n\
         threading.Thread(target=lambda: (time.sleep(1), os._exit(3))).start()\n\
         time.sleep(0.2)\n\
         fd = os.open(os.devnull, os.O_RDWR)\n\
         [os.dup2(fd, n) for n in (0, 1, 2)]\n\
         ctypes.CDLL(None).pthread_exit(None)\n",
    )
    .unwrap();
    let out = spawn_repl(
        &env,
        "pt",
        &format!("exec python3 {}", script.display()),
        PROMPT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("pt (interactive) exited as soon as it started: its program")
            && !err.contains("status 0"),
        "{err}"
    );
    env.ok(&["delete", "--force"]);
    wait_until("nothing left", WAIT, || env.processes().is_empty());
}

/// `resume` of several teammates that do not start says each one's reason on a line of its
/// own, then who did not start (new-user QA: the reasons were joined on one line by "; ").
#[test]
fn resume_says_each_start_failure_on_its_own_line() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-fails");
    for n in ["a", "b"] {
        let exec = format!("sh -c 'echo {n} has no model >&2; sleep 0.3; exit 3'");
        let out = spawn_repl(&env, n, &exec, PROMPT);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
    }
    let out = env.run(&["resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    for n in ["a", "b"] {
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with(&format!(
                    "teamctl: {n} (interactive) exited as soon as it started: its program"
                )))
                .count(),
            1,
            "{err}"
        );
    }
    assert_eq!(
        lines[2], "teamctl: 2 teammates did not start (why above): a, b",
        "{err}"
    );
    env.ok(&["delete", "--force"]);
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
            &env.pane_of(&t, n),
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
    wait_until("all three idle", WAIT, || {
        env.ok(&["status"]).matches(" idle ").count() == 3
    });
}

/// A prompt pattern that matches nothing the REPL shows: the spawn warns, once its first look
/// is over, that the prompt was not seen, and `status` says why the message sent then waits,
/// instead of showing an idle teammate with mail it never gets (new-user QA).
#[test]
fn a_prompt_never_seen_is_said_by_spawn_and_status() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-unseen");
    let out = spawn_unseen(&env);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        err.contains("warning: py runs, but its prompt was not seen in its first 10 s")
            && err.contains("--prompt-pattern '^NEVER$'"),
        "{err}"
    );
    env.ok(&["send", "py", "6*7"]);
    wait_until("status says why the mail waits", WAIT, || {
        env.member("py")["mailWaits"]
            .as_str()
            .is_some_and(|w| w.contains("its prompt does not match --prompt-pattern '^NEVER$'"))
    });
    let row = env.member("py");
    assert_eq!(
        (row["status"].as_str(), row["unread"].as_u64()),
        (Some("idle"), Some(1)),
        "{row}"
    );
    // `ask` and `wait` say why as they wait, and in their timeout (they waited in silence).
    let why = "py's mail waits: no empty prompt line in pane";
    let out = env.run(&["ask", "py", "1+1", "--timeout", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches(why).count(), 2, "{err}");
    assert!(
        err.contains("--prompt-pattern '^NEVER$' (`teamctl attach py`"),
        "{err}"
    );
    assert!(
        err.contains("no reply from py within 1 s; py's mail waits"),
        "{err}"
    );
    let out = env.run(&["wait", "py", "--timeout", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches(why).count(), 2, "{err}");
    assert!(
        err.contains("waiting for py (idle); py's mail waits"),
        "{err}"
    );
}

/// The program ends (the user types `exit(7)` in its pane) while a message waits to go in:
/// the teammate is dead with why, as when that happens while it is idle (it was said to have
/// had a stop signal, and `status` gave no reason), and the message stays unread for `resume`.
#[test]
fn a_program_ended_while_its_mail_waits_says_why() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-exit-waiting");
    let out = spawn_unseen(&env);
    assert!(out.status.success(), "{out:?}");
    env.ok(&["send", "py", "6*7"]);
    wait_until("the mail waits", WAIT, || {
        env.member("py")["mailWaits"].is_string()
    });
    let pane = env.pane_of(&t, "py");
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "exit(7)"]);
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("py's worker says why it ended", WAIT, || {
        env.member("py")["exitReason"].is_string()
    });
    let row = env.member("py");
    assert_eq!(row["status"], "dead", "{row}");
    // tmux learns the exit status a moment after the pane is dead: on a busy machine the
    // reason may only say that the program ended (as in the at-once test below).
    assert!(
        row["exitReason"].as_str().is_some_and(|w| {
            (w.contains("its program exited with status 7") || w.starts_with("its program ended"))
                && (w.contains(">>> exit(7)") || !w.contains("its last output"))
        }),
        "{row}"
    );
    assert_eq!(row["unread"].as_u64(), Some(1), "{row}");
    // Nothing needs fixing: said so (new-user QA: "`teamctl resume py` once that is fixed").
    let table = env.ok(&["status"]);
    assert!(
        table.contains("`teamctl resume py` starts it again (so does a message sent to it)"),
        "{table}"
    );
    let l = log(&env, &t, "py");
    assert!(
        l.contains("the agent's program ended before the message went in")
            && !l.contains("a stop signal"),
        "{l}"
    );
}

/// The user runs another program in the agent's pane (`respawn-pane -k`): the teammate is dead,
/// and why says the pane runs another program, not that it is gone (QA).
#[test]
fn a_pane_respawned_by_the_user_is_said_to_run_another_program() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-respawned");
    spawn_python(&env, "py");
    let pane = env.pane_of(&t, "py");
    env.tmux_ok(&["respawn-pane", "-k", "-t", &pane, "sleep 600"]);
    wait_until("py is dead", WAIT, || env.member_status("py") == "dead");
    let why = env.member("py")["exitReason"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        why.contains(&format!("its pane {pane} runs another program now")),
        "{why}"
    );
}

/// Text typed in the pane and then erased (C-u) leaves blanks after the prompt: the message
/// goes in then, without Enter (new-user QA: it waited until a new prompt line).
#[test]
fn a_line_cleared_in_the_pane_lets_the_message_in() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-cleared");
    spawn_python(&env, "py");
    let pane = env.pane_of(&t, "py");
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "abc"]);
    wait_until("the typed text shows", WAIT, || {
        screen(&env, &pane).trim_end().ends_with(">>> abc")
    });
    env.ok(&["send", "py", "6*7"]);
    wait_until("the mail waits", WAIT, || {
        env.member("py")["mailWaits"].is_string()
    });
    env.tmux_ok(&["send-keys", "-t", &pane, "C-u"]);
    wait_until("the reply", WAIT, || !replies(&env, &t, "py").is_empty());
    assert_eq!(replies(&env, &t, "py"), ["42"]);
    assert!(env.member("py")["mailWaits"].is_null());
}

#[test]
fn text_typed_in_the_pane_is_not_pasted_over() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-typed");
    spawn_python(&env, "py");
    assert_eq!(env.ok(&["ask", "py", "1", "--timeout", "30"]).trim(), "1");
    let pane = env.pane_of(&t, "py");
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
    // Said where the user looks: the message is unread, the teammate idle, and why it waits
    // (new-user QA: `idle`, one unread, and nothing said why).
    wait_until("status says why the mail waits", WAIT, || {
        env.member("py")["mailWaits"]
            .as_str()
            .is_some_and(|w| w.contains(&format!("no empty prompt line in pane {pane}")))
    });
    let row = env.member("py");
    assert_eq!(
        (row["status"].as_str(), row["unread"].as_u64()),
        (Some("idle"), Some(1)),
        "{row}"
    );
    let table = env.ok(&["status"]);
    assert!(
        table.contains("idle (mail waits)") && table.contains("mail waits: no empty prompt line"),
        "{table}"
    );
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!("py@{t}'s mail waits: no empty prompt line")),
        "{doctor}"
    );
    // The user finishes the line; the message follows once the prompt is back.
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "2"]);
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("the reply", WAIT, || replies(&env, &t, "py").len() >= 2);
    assert_eq!(replies(&env, &t, "py"), ["1", "6"]);
    let row = env.member("py");
    assert!(row["mailWaits"].is_null(), "{row}");
    let text = screen(&env, &pane);
    assert!(text.contains(">>> 40+2\n42\n>>> 2*3\n6\n"), "{text}");
}

#[test]
fn a_turn_past_its_timeout_is_cancelled_with_the_cancel_key() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-timeout");
    env.ok(&[
        "spawn",
        "py",
        "--interactive",
        "--exec",
        PYTHON,
        "--prompt-pattern",
        PROMPT,
        "--turn-timeout",
        "1",
    ]);
    env.ok(&["send", "py", "import time; time.sleep(120)"]);
    wait_until("the timeout notice", WAIT, || {
        replies(&env, &t, "py")
            .iter()
            .any(|r| r.contains("timed out"))
    });
    let pane = env.pane_of(&t, "py");
    wait_until("KeyboardInterrupt in the pane", WAIT, || {
        screen(&env, &pane).contains("KeyboardInterrupt")
    });
    // The teammate's log says so, in one line naming the timeout (as a one-shot turn's does).
    let text = log(&env, &t, "py");
    let line = text
        .lines()
        .find(|l| l.contains("timed out after 1s"))
        .unwrap_or_else(|| panic!("no timeout line in:\n{text}"));
    assert!(line.contains("cancel key"), "{line}");
    assert_eq!(text.matches("timed out").count(), 1, "{text}");
    assert_eq!(
        env.ok(&["ask", "py", "5+5", "--timeout", "30"]).trim(),
        "10"
    );
}

#[test]
fn bad_interactive_spawns_are_refused_and_write_nothing() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-bad");
    let before = env.config(&t);
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
    // tmux is installed here: the point is the backend.
    assert!(e.contains("need the tmux backend"), "{e}");
    assert!(!e.contains("install tmux"), "{e}");
    assert_eq!(env.config(&t), before);
}

// ---- The real Claude Code TUI against the fake model ----

use crate::common::fake_model::{self, Claude, FakeModel, Reply};

const CLAUDE_WAIT: Duration = Duration::from_mins(1);

/// The last line of the last user turn: the message text, without the frame teamctl puts
/// around it ("Message from NAME (ID).", the fence lines) or anything Claude Code adds.
fn last_line(req: &serde_json::Value) -> String {
    fake_model::last_user_text(req)
        .lines()
        .rev()
        // Claude Code wraps a long paste in <pasted_content> tags.
        // and teamctl closes the message's frame with `--- end ID ---`.
        .find(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with("</pasted_content") && !l.starts_with("--- end ")
        })
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Replies `got: LINE`; a message with "slow" in it is answered after 3 s, "forever" after
/// 120 s (a turn only an interrupt ends).
fn script(req: &serde_json::Value) -> Reply {
    let line = last_line(req);
    let reply = Reply::text(format!("got: {line}"));
    if line.contains("forever") {
        reply.delayed(Duration::from_mins(2))
    } else if line.contains("slow") {
        reply.delayed(Duration::from_secs(3))
    } else {
        reply
    }
}

/// A tmux team whose interactive teammate `bob` runs the real Claude Code TUI against `model`.
fn claude_team(model: &FakeModel, name: &str) -> (TestEnv, Claude, String) {
    let (env, cc, t) = claude_env(model, name);
    // The user's own settings, which teamctl must never edit (its hooks go in a file of its
    // own, given with --settings).
    for (path, _) in user_settings(&env, &cc) {
        if path.file_name().is_some_and(|n| n != "settings.json") {
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, USER_SETTINGS).unwrap();
    }
    env.ok(&["spawn", "bob", "--agent", "claude", "--interactive"]);
    (env, cc, t)
}

/// A tmux team ready for Claude Code teammates against `model` (none spawned yet).
fn claude_env(model: &FakeModel, name: &str) -> (TestEnv, Claude, String) {
    let mut env = TestEnv::with_tmux();
    let cc = fake_model::claude(model, &[env.work.path()]);
    env.env.extend(cc.env.iter().cloned());
    let path = format!(
        "{}:{}",
        cc.bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.env.push(("PATH".into(), path));
    let t = team(&env, name);
    (env, cc, t)
}

const USER_SETTINGS: &str = "{\"cleanupPeriodDays\": 99}\n";

/// Claude Code's settings files of the user (in HOME) and of the project (the teammate's
/// directory), with what they hold now.
fn user_settings(env: &TestEnv, cc: &Claude) -> Vec<(std::path::PathBuf, Option<Vec<u8>>)> {
    [
        cc.home.path().join(".claude/settings.json"),
        cc.home.path().join(".claude/settings.local.json"),
        env.work.path().join(".claude/settings.json"),
        env.work.path().join(".claude/settings.local.json"),
    ]
    .into_iter()
    .map(|p| {
        let bytes = std::fs::read(&p).ok();
        (p, bytes)
    })
    .collect()
}

/// Whether a Claude Code transcript under `home` (`.claude/projects/*/*.jsonl`) holds `text`.
fn transcripts_hold(home: &std::path::Path, text: &str) -> bool {
    let dirs = std::fs::read_dir(home.join(".claude/projects"))
        .into_iter()
        .flatten()
        .flatten();
    dirs.flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
        .any(|f| std::fs::read_to_string(f.path()).is_ok_and(|s| s.contains(text)))
}

/// Conversation requests whose last user turn ends with `line`.
fn asked(model: &FakeModel, line: &str) -> Vec<serde_json::Value> {
    model
        .conversation_requests()
        .into_iter()
        .filter(|r| last_line(r) == line)
        .collect()
}

#[test]
fn claude_tui_takes_a_message_as_a_user_turn_and_the_stop_hook_replies() {
    let model = FakeModel::start(script);
    let (env, cc, t) = claude_team(&model, "it-cc-one");
    let out = env.ok(&["ask", "bob", "hello there", "--timeout", "60"]);
    assert_eq!(out.trim(), "got: hello there");
    let reqs = asked(&model, "hello there");
    assert_eq!(reqs.len(), 1, "one turn");
    assert_eq!(fake_model::user_turns(&reqs[0]), 1);
    assert!(fake_model::last_user_text(&reqs[0]).contains("Message from team-lead ("));
    // The TUI itself is the pane's command, tagged; the settings file is private.
    let pane = env.pane_of(&t, "bob");
    assert!(screen(&env, &pane).contains("hello there"));
    let settings = env.team_dir(&t).join("interactive/bob.settings.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&settings).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // A second message continues the same conversation.
    let out = env.ok(&["ask", "bob", "again", "--timeout", "60"]);
    assert_eq!(out.trim(), "got: again");
    assert_eq!(fake_model::user_turns(&asked(&model, "again")[0]), 2);
    // A long message (the TUI shows such a paste folded) is one user turn, whole.
    let long: String = (1..=60)
        .map(|i| format!("line {i} of a long paste\n"))
        .collect();
    let out = env.ok(&["ask", "bob", long.trim_end(), "--timeout", "60"]);
    assert_eq!(out.trim(), "got: line 60 of a long paste");
    let req = &asked(&model, "line 60 of a long paste")[0];
    assert_eq!(fake_model::user_turns(req), 3);
    assert!(fake_model::last_user_text(req).contains("line 1 of a long paste\nline 2 of"));
    // The hooks worked with none of them in the user's or the project's settings (Claude Code
    // itself may add to the user's: it moved `autoUpdates: false` there as an env entry).
    for (path, bytes) in user_settings(&env, &cc) {
        let text = String::from_utf8_lossy(bytes.as_deref().unwrap_or_default()).into_owned();
        let planted = path.file_name().is_some_and(|n| n == "settings.json");
        assert_eq!(bytes.is_some(), planted, "{}: {text}", path.display());
        assert!(
            !text.contains("hooks") && !text.contains("teamctl"),
            "teamctl wrote into {}: {text}",
            path.display()
        );
        if planted {
            assert!(text.contains("\"cleanupPeriodDays\": 99"), "{text}");
        }
    }
    // Its team prompt says what holds for an interactive agent: a shutdown is not put to it
    // as a turn, and the teammates of the moment are in `teamctl status` (the list it was
    // started with goes stale as others join).
    let system = req["system"].to_string();
    assert!(system.contains("You are bob"), "{system}");
    assert!(!system.contains("shutdown-response reject"), "{system}");
    assert!(!system.contains("no other teammates yet"), "{system}");
    assert!(
        system.contains("teamctl status` shows who is in the team now"),
        "{system}"
    );
}

#[test]
fn claude_mail_sent_mid_turn_is_delivered_after_the_turn() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-mid");
    env.ok(&["send", "bob", "a slow one"]);
    wait_until("bob working", CLAUDE_WAIT, || {
        env.member_status("bob") == "working"
    });
    env.ok(&["send", "bob", "the second"]);
    wait_until("both replies", CLAUDE_WAIT, || {
        replies(&env, &t, "bob").len() >= 2
    });
    assert_eq!(
        replies(&env, &t, "bob"),
        ["got: a slow one", "got: the second"]
    );
    // Two separate user turns, the second asked only after the first was answered.
    let second = asked(&model, "the second");
    assert_eq!(second.len(), 1);
    assert_eq!(fake_model::user_turns(&second[0]), 2);
    let text = serde_json::to_string(&second[0]["messages"]).unwrap();
    let (first, answer) = (
        text.find("a slow one").unwrap(),
        text.find("got: a slow one").unwrap(),
    );
    assert!(first < answer && answer < text.rfind("the second").unwrap());
}

/// `interrupt` of bob's turn on a message the model never answers: the failure notice comes,
/// and the next message is answered.
fn interrupt_a_slow_turn_then_ask(model: &FakeModel, env: &TestEnv, t: &str) {
    env.ok(&["send", "bob", "take forever"]);
    wait_until("the slow request reached the model", CLAUDE_WAIT, || {
        !asked(model, "take forever").is_empty()
    });
    let out = env.ok(&["interrupt", "bob"]);
    assert!(out.contains("interrupted"), "{out}");
    wait_until("the failure notice", CLAUDE_WAIT, || {
        replies(env, t, "bob")
            .iter()
            .any(|r| r.contains("interrupted"))
    });
    let out = env.run(&["ask", "bob", "after that", "--timeout", "20"]);
    let pane = env.pane_of(t, "bob");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "got: after that",
        "{}\n{}",
        screen(env, &pane),
        log(env, t, "bob")
    );
}

#[test]
fn claude_interrupt_sends_escape_and_cancels_a_slow_reply() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-int");
    interrupt_a_slow_turn_then_ask(&model, &env, &t);
    assert!(
        !replies(&env, &t, "bob")
            .iter()
            .any(|r| r == "got: take forever")
    );
}

/// Claude Code can drop a key under load: the cancel key was pressed, the message reported
/// interrupted, and the turn ran on, so every later message waited behind it (flake hunt:
/// the pane still showed the spinner). Here `tmux` on the teammate's PATH drops the first
/// Escape it is asked to send; the companion sees the turn still running and presses the key
/// again, and the next message is answered.
#[test]
fn claude_interrupt_presses_the_cancel_key_again_when_the_first_is_dropped() {
    use std::os::unix::fs::PermissionsExt;
    let model = FakeModel::start(script);
    let (mut env, _cc, t) = claude_env(&model, "it-cc-drop");
    let real = which::which("tmux").expect("tmux on PATH");
    let dir = env.work.path().join("droptmux");
    std::fs::create_dir_all(&dir).unwrap();
    let dropped = env.work.path().join("escape-dropped");
    let wrapper = dir.join("tmux");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \" $* \" in\n  *\" send-keys \"*\" Escape \"*)\n    if [ ! -e '{m}' ]; then : > '{m}'; exit 0; fi ;;\nesac\nexec '{real}' \"$@\"\n",
            m = dropped.display(),
            real = real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = env
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap();
    env.env
        .push(("PATH".into(), format!("{}:{path}", dir.display())));
    env.ok(&["spawn", "bob", "--agent", "claude", "--interactive"]);
    interrupt_a_slow_turn_then_ask(&model, &env, &t);
    assert!(dropped.exists(), "the wrapper dropped no Escape");
    assert!(
        log(&env, &t, "bob").contains("pressed the cancel key again"),
        "{}",
        log(&env, &t, "bob")
    );
}

/// The user presses Escape in the pane mid-turn: Claude Code fires no Stop hook for it, and
/// the turn used to run on until its timeout, holding all later mail (third QA pass). The
/// turn ends as interrupted and the next message is answered.
#[test]
fn claude_escape_pressed_in_the_pane_ends_the_turn() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-esc");
    env.ok(&["send", "bob", "take forever"]);
    wait_until("the slow request reached the model", CLAUDE_WAIT, || {
        !asked(&model, "take forever").is_empty()
    });
    let pane = env.pane_of(&t, "bob");
    env.tmux_ok(&["send-keys", "-t", &pane, "Escape"]);
    wait_until("the turn ends as interrupted", CLAUDE_WAIT, || {
        replies(&env, &t, "bob")
            .iter()
            .any(|r| r.contains("interrupted"))
    });
    let out = env.run(&["ask", "bob", "after that", "--timeout", "60"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "got: after that",
        "{}\n{}",
        screen(&env, &pane),
        log(&env, &t, "bob")
    );
}

#[test]
fn claude_user_typing_in_the_pane_is_not_pasted_over() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-typed");
    assert_eq!(
        env.ok(&["ask", "bob", "warm up", "--timeout", "60"]).trim(),
        "got: warm up"
    );
    let pane = env.pane_of(&t, "bob");
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "typed by hand"]);
    wait_until("the typed text shows", CLAUDE_WAIT, || {
        screen(&env, &pane).contains("typed by hand")
    });
    env.ok(&["send", "bob", "from the leader"]);
    wait_until("the companion waits", CLAUDE_WAIT, || {
        let l = log(&env, &t, "bob");
        l.rfind("<- team-lead: from the leader")
            .is_some_and(|i| l[i..].contains("waiting to deliver"))
    });
    // The user submits their own line: a turn of theirs, then the message follows.
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("the reply", CLAUDE_WAIT, || {
        replies(&env, &t, "bob").len() >= 2
    });
    assert_eq!(
        replies(&env, &t, "bob"),
        ["got: warm up", "got: from the leader"]
    );
    let users = asked(&model, "typed by hand");
    assert_eq!(
        users.len(),
        1,
        "the user's own line went to the model as it was typed"
    );
    let ours = asked(&model, "from the leader");
    assert_eq!(ours.len(), 1);
    assert_eq!(fake_model::user_turns(&ours[0]), 3);
    assert!(!fake_model::last_user_text(&ours[0]).contains("typed by hand"));
}

#[test]
fn claude_teammate_resumes_its_conversation_and_shutdown_leaves_nothing() {
    let model = FakeModel::start(script);
    let (env, cc, t) = claude_team(&model, "it-cc-down");
    assert_eq!(
        env.ok(&["ask", "bob", "first", "--timeout", "60"]).trim(),
        "got: first"
    );
    // `kill` ends the agent at once: what it has not written of its transcript yet is lost
    // with it (under load the Stop hook can run before the reply reaches the file). The
    // conversation to continue is the one on disk.
    wait_until(
        "the first reply in Claude Code's transcript",
        CLAUDE_WAIT,
        || transcripts_hold(cc.home.path(), "got: first"),
    );
    let old = env.pane_of(&t, "bob");
    env.ok(&["kill", "bob"]);
    wait_until("the old pane closed", CLAUDE_WAIT, || {
        !panes(&env).contains(&old)
    });
    env.ok(&["resume", "bob"]);
    assert_eq!(
        env.ok(&["ask", "bob", "second", "--timeout", "60"]).trim(),
        "got: second"
    );
    // The TUI was started again on the same session: the conversation goes on.
    assert_eq!(fake_model::user_turns(&asked(&model, "second")[0]), 2);
    let pane = env.pane_of(&t, "bob");
    let id = format!("bob@{t}");
    assert!(!tagged(&env, &id).is_empty());
    env.ok(&["shutdown", "bob"]);
    assert_eq!(env.member_status("bob"), "stopped");
    wait_until("bob's pane closed", CLAUDE_WAIT, || {
        !panes(&env).contains(&pane)
    });
    wait_until("nothing of bob runs", CLAUDE_WAIT, || {
        tagged(&env, &id).is_empty()
    });
}

#[test]
fn three_claude_teammates_in_one_window_each_answer_their_own() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-three");
    for n in ["carol", "dave"] {
        env.ok(&["spawn", n, "--agent", "claude", "--interactive"]);
    }
    let window = |n: &str| {
        env.tmux_ok(&[
            "display-message",
            "-p",
            "-t",
            &env.pane_of(&t, n),
            "#{window_id}",
        ])
        .trim()
        .to_string()
    };
    assert_eq!(window("bob"), window("carol"));
    assert_eq!(window("carol"), window("dave"));
    for n in ["bob", "carol", "dave"] {
        env.ok(&["send", n, &format!("hi {n}")]);
    }
    for n in ["bob", "carol", "dave"] {
        wait_until(&format!("{n}'s reply"), CLAUDE_WAIT, || {
            replies(&env, &t, n) == [format!("got: hi {n}")]
        });
    }
}

/// The model runs `teamctl hook stop` from its Bash tool (allowed: `Bash(teamctl:*)`), then
/// answers after a while: the forged Stop must not end the turn, the real reply is the answer.
#[test]
fn claude_a_stop_hook_forged_from_the_bash_tool_does_not_end_the_turn() {
    let forged = std::sync::Arc::new(std::sync::Mutex::new("teamctl hook stop".to_string()));
    let command = forged.clone();
    let model = FakeModel::start(move |req| {
        if fake_model::ends_with_tool_result(req) {
            Reply::text("the real reply").delayed(Duration::from_secs(3))
        } else if last_line(req).contains("forge") {
            Reply::bash(command.lock().unwrap().clone())
        } else {
            script(req)
        }
    });
    let (env, cc, t) = claude_team(&model, "it-cc-forge");
    let out = env.ok(&["ask", "bob", "forge a stop", "--timeout", "60"]);
    assert_eq!(out.trim(), "the real reply", "{}", log(&env, &t, "bob"));
    assert_eq!(replies(&env, &t, "bob"), ["the real reply"]);
    // Forged better: the hook's input as Claude Code gives it, naming the real transcript.
    let transcript = std::fs::read_dir(cc.home.path().join(".claude/projects"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|f| f.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the teammate's transcript");
    let input = env.work.path().join("stop.json");
    std::fs::write(
        &input,
        serde_json::json!({
            "hook_event_name": "Stop",
            "transcript_path": transcript,
            "last_assistant_message": "forged",
        })
        .to_string(),
    )
    .unwrap();
    *forged.lock().unwrap() = format!("teamctl hook stop < {}", input.display());
    let out = env.ok(&["ask", "bob", "forge again", "--timeout", "60"]);
    assert_eq!(out.trim(), "the real reply", "{}", log(&env, &t, "bob"));
    // The model saw each forged Stop refused, and why.
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter_map(fake_model::last_tool_result)
        .collect();
    assert!(
        results.iter().any(|r| r.contains("names no transcript")),
        "{results:?}"
    );
    assert!(
        results.iter().any(|r| r.contains("inside a tool call")),
        "{results:?}"
    );
}

/// Attacker QA: the model runs `teamctl hook stop` naming an older transcript (another
/// conversation, finished, no tool call pending) with an answer of its choosing. The Stop must
/// name a transcript holding the message being delivered now, and the reply comes from that
/// transcript, never from the hook's stdin: `ask` gets the real reply, not "FORGED".
#[test]
fn claude_a_stop_naming_another_transcript_does_not_end_the_turn() {
    let forged = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let command = forged.clone();
    let model = FakeModel::start(move |req| {
        if fake_model::ends_with_tool_result(req) {
            Reply::text("the real reply").delayed(Duration::from_secs(3))
        } else if last_line(req).contains("forge") {
            Reply::bash(command.lock().unwrap().clone())
        } else {
            script(req)
        }
    });
    let (env, cc, t) = claude_team(&model, "it-cc-oldstop");
    // An old, finished conversation under the agent's own Claude Code directory.
    let old = cc.home.path().join(".claude/projects/-old-project");
    std::fs::create_dir_all(&old).unwrap();
    let transcript = old.join("0a2b6f0e-0000-4000-8000-000000000000.jsonl");
    let lines = [
        serde_json::json!({"type": "user", "message": {"role": "user", "content": "hello"}}),
        serde_json::json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "FORGED"}]}}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, body).unwrap();
    let input = env.work.path().join("forge.json");
    std::fs::write(
        &input,
        serde_json::json!({
            "hook_event_name": "Stop",
            "transcript_path": transcript,
            "last_assistant_message": "FORGED",
        })
        .to_string(),
    )
    .unwrap();
    *forged.lock().unwrap() = format!("teamctl hook stop < {}", input.display());
    let out = env.run(&["ask", "bob", "forge an old stop", "--timeout", "60"]);
    let pane = env.pane_of(&t, "bob");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "the real reply",
        "{}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        screen(&env, &pane),
        log(&env, &t, "bob")
    );
    assert_eq!(replies(&env, &t, "bob"), ["the real reply"]);
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter_map(fake_model::last_tool_result)
        .collect();
    assert!(
        results
            .iter()
            .any(|r| r.contains("holds no ended turn of message")),
        "{results:?}"
    );
}

/// A message with a line `❯` of its own sits in the transcript above Claude Code's input box:
/// it is not the input line, and the user's half-typed text in the box is not pasted over.
#[test]
fn claude_a_prompt_sign_in_a_message_does_not_free_the_input_line() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-sign");
    let pane = env.pane_of(&t, "bob");
    let out = env.run(&["ask", "bob", "look\n❯\nhere", "--timeout", "60"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "got: here",
        "{}\n{}",
        screen(&env, &pane),
        log(&env, &t, "bob")
    );
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "typed by hand"]);
    wait_until("the typed text shows", CLAUDE_WAIT, || {
        screen(&env, &pane).contains("typed by hand")
    });
    env.ok(&["send", "bob", "from the leader"]);
    // The companion saw a quiet screen whose input line is not empty (before the fix it took
    // the message's `❯` line for the input line and pasted over the typed text).
    wait_until(
        "the companion waits for the input line",
        CLAUDE_WAIT,
        || {
            let l = log(&env, &t, "bob");
            l.rfind("<- team-lead: from the leader")
                .is_some_and(|i| l[i..].contains("input line is not empty"))
        },
    );
    let text = screen(&env, &pane);
    assert!(!text.contains("typed by handMessage from"), "{text}");
    assert!(asked(&model, "from the leader").is_empty(), "{text}");
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("the reply", CLAUDE_WAIT, || {
        replies(&env, &t, "bob").len() >= 2
    });
    assert_eq!(
        replies(&env, &t, "bob"),
        ["got: here", "got: from the leader"]
    );
    assert_eq!(asked(&model, "typed by hand").len(), 1);
}

/// Two REPLs whose code sends to the other from a timer, after the delivered turn has ended:
/// each such send is still a consequence of that turn, so the loop guard stops them.
#[test]
fn a_send_from_the_pane_after_its_turn_counts_its_hops() {
    let env = TestEnv::with_tmux();
    let t = team(&env, "it-py-hops");
    spawn_python(&env, "pa");
    spawn_python(&env, "pb");
    let code = env.work.path().join("pp.py");
    std::fs::write(
        &code,
        format!(
            "import os, subprocess, threading\n\
             _other = 'pb' if os.environ.get('TEAMCTL_AGENT_NAME') == 'pa' else 'pa'\n\
             def _go():\n    subprocess.run(['teamctl', 'send', _other, \"exec(open('{}').read())\"], stdout=subprocess.DEVNULL)\n\
             threading.Timer(0.7, _go).start()\n",
            code.display()
        ),
    )
    .unwrap();
    env.ok(&[
        "send",
        "pa",
        &format!("exec(open('{}').read())", code.display()),
    ]);
    wait_until("the loop guard's notice", Duration::from_mins(2), || {
        replies(&env, &t, "pa")
            .iter()
            .chain(replies(&env, &t, "pb").iter())
            .any(|r| r.contains("loop guard"))
    });
}

/// A huge `--turn-timeout` means no limit (docs/CLI.md), for an interactive teammate too:
/// its companion panicked on every turn adding 18446744073709551615 s to a clock (attacker
/// QA). Through `up` as well.
#[test]
fn a_huge_turn_timeout_means_no_limit_for_an_interactive_teammate() {
    let env = TestEnv::with_tmux();
    team(&env, "it-timeout-big");
    env.ok(&[
        "spawn",
        "py",
        "--interactive",
        "--exec",
        PYTHON,
        "--prompt-pattern",
        PROMPT,
        "--turn-timeout",
        "18446744073709551615",
    ]);
    assert_eq!(
        env.ok(&["ask", "py", "6*7", "--timeout", "30"]).trim(),
        "42"
    );
    wait_until("py idle", WAIT, || env.member_status("py") == "idle");
    assert_eq!(
        env.ok(&["ask", "py", "7*8", "--timeout", "30"]).trim(),
        "56"
    );
    std::fs::write(
        env.work.path().join("teamctl.toml"),
        "name = \"it-timeout-big\"\n[[member]]\nname = \"x\"\nexec = \"cat\"\nbackend = \"process\"\nturn-timeout = \"18446744073709551615\"\n",
    )
    .unwrap();
    env.ok(&[
        "up",
        &env.work.path().join("teamctl.toml").display().to_string(),
    ]);
    assert_eq!(env.ok(&["ask", "x", "hi", "--timeout", "30"]).trim(), "hi");
}

/// Output that looks like the prompt, printed with a newline, is not the prompt: the turn
/// goes on until the real one is back (tmux's cursor sits right after it).
#[test]
fn printed_prompt_text_does_not_end_a_repl_turn() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-fakeprompt");
    spawn_python(&env, "py");
    let out = env.ok(&[
        "ask",
        "py",
        "print('>>> '); import time; time.sleep(3); print('done')",
        "--timeout",
        "30",
    ]);
    assert_eq!(out.trim(), ">>>\ndone");
}

/// A one-line compound statement leaves python at its `...` prompt after Enter: one more
/// Enter runs it.
#[test]
fn a_one_line_compound_statement_runs() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-compound");
    spawn_python(&env, "py");
    let out = env.ok(&[
        "ask",
        "py",
        "for i in range(2): print(i)",
        "--timeout",
        "20",
    ]);
    assert_eq!(out.trim(), "0\n1");
}

/// `teamctl hook` for a teammate that is not interactive (no companion reads its events):
/// refused, nothing written.
#[test]
fn a_hook_for_a_teammate_that_is_not_interactive_is_refused() {
    let env = TestEnv::new();
    let t = team(&env, "it-hook-not");
    env.ok(&["spawn", "plain", "--exec", "cat"]);
    for event in ["stop", "user-prompt-submit", "notification"] {
        let out = env.run_stdin(&["--as", "plain", "hook", event], "{}");
        assert_eq!(out.status.code(), Some(2), "{event}: {out:?}");
    }
    assert!(!env.team_dir(&t).join("interactive/plain.events").exists());
}

/// `"disableAllHooks": true` in the project's settings turns teamctl's hooks off too: spawn
/// warns naming the file, and `doctor` reports the teammate.
#[test]
fn claude_settings_that_turn_hooks_off_are_named_at_spawn_and_by_doctor() {
    let model = FakeModel::start(script);
    let (env, _cc, _t) = claude_env(&model, "it-cc-nohooks");
    let dir = env.work.path().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.local.json");
    std::fs::write(&file, r#"{"disableAllHooks": true}"#).unwrap();
    let out = env.run(&["spawn", "bob", "--agent", "claude", "--interactive"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("disableAllHooks"), "{err}");
    assert!(err.contains("settings.local.json"), "{err}");
    let out = env.run(&["doctor"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("disableAllHooks") && text.contains("bob@"),
        "{text}"
    );
}

/// A reply longer than the pane's history (tmux keeps 2000 lines here): what is left of it
/// comes back under a marker saying the start was lost, never silently cut.
#[test]
fn a_repl_reply_longer_than_the_history_is_marked() {
    let env = TestEnv::with_tmux();
    team(&env, "it-py-long");
    spawn_python(&env, "py");
    let out = env.ok(&[
        "ask",
        "py",
        "print('\\n'.join(str(i) for i in range(5000)))",
        "--timeout",
        "60",
    ]);
    assert!(
        out.contains("scrolled out of the pane's history"),
        "{}",
        &out[..out.len().min(300)]
    );
    assert!(out.trim_end().ends_with("\n4998\n4999"));
}

#[test]
fn claude_report_sent_from_the_bash_tool_is_the_answer_and_not_doubled() {
    let model = FakeModel::start(|req| {
        if fake_model::ends_with_tool_result(req) {
            let out = fake_model::last_tool_result(req).unwrap_or_default();
            return Reply::text(format!("done: {}", out.trim()));
        }
        if last_line(req).contains("report") {
            return Reply::bash("teamctl send team-lead 'status: all good'");
        }
        script(req)
    });
    let (env, _cc, t) = claude_team(&model, "it-cc-report");
    // The report bob sends from its pane's Bash tool answers the message it handles: it
    // carries `inReplyTo`, so `ask` prints it (not the end-of-turn text).
    let out = env.ok(&["ask", "bob", "report to the leader", "--timeout", "60"]);
    assert_eq!(out.trim(), "status: all good");
    let inbox = env.inbox(&t, "team-lead");
    let sent = inbox
        .iter()
        .find(|m| m["text"] == "status: all good")
        .unwrap_or_else(|| panic!("no report in {inbox:?}"));
    assert!(sent["inReplyTo"].is_string(), "{sent}");
    assert_eq!(sent["hops"], 1, "{sent}");
    // The Stop hook's end-of-turn text ("done: ...") is not sent as a second answer.
    wait_until("bob idle", CLAUDE_WAIT, || {
        env.member_status("bob") == "idle" && log(&env, &t, "bob").contains("already has")
    });
    let texts = replies(&env, &t, "bob");
    assert!(
        !texts.iter().any(|s| s.starts_with("done: ")),
        "a second answer: {texts:?}"
    );
}

#[test]
fn claude_at_a_permission_prompt_shows_it_needs_the_user() {
    let model = FakeModel::start(|req| {
        if fake_model::ends_with_tool_result(req) {
            let out = fake_model::last_tool_result(req).unwrap_or_default();
            return Reply::text(format!("done: {}", out.trim()));
        }
        if last_line(req).contains("run it") {
            // Not `teamctl`: Claude Code asks the user first.
            return Reply::bash("touch approved && echo approved-by-you");
        }
        script(req)
    });
    let (env, _cc, t) = claude_team(&model, "it-cc-perm");
    env.ok(&["send", "bob", "run it"]);
    let pane = env.pane_of(&t, "bob");
    wait_until_or_show(
        "bob needs the user",
        CLAUDE_WAIT,
        || env.member("bob")["needsUser"] == "a permission prompt",
        || format!("{}\n{}", screen(&env, &pane), log(&env, &t, "bob")),
    );
    let table = env.ok(&["status"]);
    assert!(table.contains("(needs you)"), "{table}");
    assert!(
        table.contains(&format!("a permission prompt in pane {pane}")),
        "{table}"
    );
    let doctor = String::from_utf8_lossy(&env.run(&["doctor"]).stdout).into_owned();
    assert!(
        doctor.contains(&format!("bob@{t} waits for you")),
        "{doctor}"
    );
    assert!(doctor.contains(&pane), "{doctor}");
    // Answered in the pane (the first choice, yes): the tool runs, the turn ends, and the
    // mark goes.
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("bob answered", CLAUDE_WAIT, || {
        replies(&env, &t, "bob")
            .iter()
            .any(|r| r.contains("done: approved-by-you"))
    });
    wait_until("bob idle, nothing needed", CLAUDE_WAIT, || {
        let m = env.member("bob");
        m["status"] == "idle" && m["needsUser"].is_null()
    });
}

#[test]
fn claude_at_the_trust_dialog_of_a_new_folder_shows_it_needs_the_user() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-trust");
    // A folder Claude Code has not been told to trust: it asks first, and the message waits.
    let untrusted = tempfile::tempdir().unwrap();
    let dir = untrusted.path().to_str().unwrap();
    env.ok(&[
        "spawn",
        "carol",
        "--agent",
        "claude",
        "--interactive",
        "--cwd",
        dir,
    ]);
    env.ok(&["send", "carol", "hello"]);
    wait_until("carol needs the user", CLAUDE_WAIT, || {
        env.member("carol")["needsUser"] == "a trust dialog"
    });
    let pane = env.pane_of(&t, "carol");
    let table = env.ok(&["status"]);
    assert!(
        table.contains(&format!("a trust dialog in pane {pane}")),
        "{table}"
    );
    // Trusted in the pane: the message is delivered and answered.
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    wait_until("carol answered", CLAUDE_WAIT, || {
        replies(&env, &t, "carol").iter().any(|r| r == "got: hello")
    });
    assert!(env.member("carol")["needsUser"].is_null());
}

#[test]
fn claude_exited_with_slash_exit_is_dead_and_ask_brings_it_back() {
    let model = FakeModel::start(script);
    let (env, _cc, t) = claude_team(&model, "it-cc-exit");
    assert_eq!(
        env.ok(&["ask", "bob", "first", "--timeout", "60"]).trim(),
        "got: first"
    );
    wait_until("bob idle", CLAUDE_WAIT, || {
        env.member_status("bob") == "idle"
    });
    let pane = env.pane_of(&t, "bob");
    env.tmux_ok(&["send-keys", "-t", &pane, "-l", "/exit"]);
    env.tmux_ok(&["send-keys", "-t", &pane, "Enter"]);
    let id = format!("bob@{t}");
    wait_until("bob's companion gone", CLAUDE_WAIT, || {
        !companion_runs(&env, &id)
    });
    assert_eq!(env.member_status("bob"), "dead");
    // Resumed by `ask`: a new pane, the same conversation.
    assert_eq!(
        env.ok(&["ask", "bob", "second", "--timeout", "60"]).trim(),
        "got: second"
    );
    assert_ne!(env.pane_of(&t, "bob"), pane);
    // The same conversation (Claude Code keeps the `/exit` in it too: 3 user entries).
    assert!(fake_model::user_turns(&asked(&model, "second")[0]) >= 2);
}
