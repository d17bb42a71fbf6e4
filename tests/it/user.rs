//! End-to-end tests from a new user's point of view: odd inputs and odd orders of commands
//! that no issue lists (QA). The real binary in a temporary home, process backend unless the
//! case is about tmux.

use std::time::Duration;

use crate::common::{TestEnv, wait_until, wait_until_or_show};

const T: Duration = Duration::from_secs(20);

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out:?}"))
}

/// Error lines name teams and members as `"alpha"`, never as a Rust value `Name("alpha")`.
#[test]
fn errors_quote_names_plainly() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let taken = env.fails(&["create", "beta"], 2);
    assert!(taken.contains("team \"alpha\""), "{taken}");
    let gone = env.fails(&["--team", "gone", "status"], 2);
    assert!(gone.contains("no team \"gone\""), "{gone}");
    // A team of another host is joined by naming its server: the error says how.
    assert!(gone.contains("TEAMCTL_STORE=nats://"), "{gone}");
    for e in [&taken, &gone] {
        assert!(!e.contains("Name("), "{e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
}

fn team_with(env: &TestEnv, members: &[(&str, &str)]) {
    env.ok(&["create", "alpha"]);
    for (name, exec) in members {
        env.ok(&["spawn", name, "--backend", "process", "--exec", exec]);
    }
}

/// An agent that, given a message with `boom` in it, notes a run in `runs` and kills its
/// worker (SIGKILL), and answers any other with `ok TEXT`.
fn crash_on_boom(runs: &std::path::Path) -> String {
    format!(
        "m=$(cat); case \"$m\" in *boom*) echo run >> '{}'; kill -9 $PPID;; esac; echo \"ok $m\"",
        runs.display()
    )
}

/// Until `name` shows dead and its `crash_on_boom` agent has noted `times` runs in `runs`.
fn wait_dead_after_runs(env: &TestEnv, name: &str, runs: &std::path::Path, times: usize) {
    let want = "run\n".repeat(times);
    wait_until(&format!("{name} dead, its turn run {times}x"), T, || {
        env.member_status(name) == "dead" && std::fs::read_to_string(runs).is_ok_and(|r| r == want)
    });
}

/// Send `text` to `name`, whose turn kills its worker: its worker may be dead already when
/// `send` looks, and then it says so (exit 1).
fn send_killing(env: &TestEnv, name: &str, text: &str) {
    let out = env.run(&["send", name, text]);
    assert!(
        out.status.success()
            || String::from_utf8_lossy(&out.stderr).contains("ended as the message"),
        "{name}: {out:?}"
    );
}

/// Once `name` is idle, its worker killed (SIGKILL), until it shows dead.
fn kill_worker(env: &TestEnv, name: &str) {
    wait_until(&format!("{name} idle"), T, || {
        env.member_status(name) == "idle"
    });
    let pid = env.member(name)["pid"].as_u64().unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    wait_until(&format!("{name} dead"), T, || {
        env.member_status(name) == "dead"
    });
}

fn config(env: &TestEnv) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(env.team_dir("alpha").join("config.json")).unwrap())
        .unwrap()
}

fn config_member(env: &TestEnv, name: &str) -> serde_json::Value {
    config(env)["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .cloned()
        .unwrap()
}

/// A turn that runs until the file `go` appears in the test's work directory.
const UNTIL_GO: &str = "while [ ! -e go ]; do sleep 0.02; done; echo went";

/// Asking again while the first shutdown request is unanswered (a timeout, then `--no-wait`)
/// awaits the same request: the worker's answer then marks it stopped and returns its tasks,
/// and no stale request is left to stop it again after `resume`.
#[test]
fn a_repeated_shutdown_request_is_still_acted_on() {
    let env = TestEnv::new();
    team_with(&env, &[("w", UNTIL_GO)]);
    env.ok(&["task", "add", "job"]);
    env.ok(&["--as", "w", "task", "claim", "1"]);
    env.ok(&["send", "w", "work"]);
    wait_until("w working", T, || env.member_status("w") == "working");
    let err = env.fails(&["shutdown", "w", "--timeout", "1"], 1);
    assert!(err.contains("no shutdown response"), "{err}");
    env.ok(&["shutdown", "w", "--no-wait"]);
    let requests = || {
        env.inbox("alpha", "w")
            .iter()
            .filter(|m| m["type"] == "shutdown_request")
            .count()
    };
    assert_eq!(requests(), 1, "the unanswered request is not repeated");
    std::fs::write(env.work.path().join("go"), "").unwrap();
    wait_until("w stopped and recorded so", T, || {
        env.member_status("w") == "stopped" && config_member(&env, "w")["status"] == "stopped"
    });
    assert!(config_member(&env, "w").get("shutdownRequestId").is_none());
    let task = json(&env.ok(&["--json", "task", "show", "1"]));
    assert_eq!(task["status"], "pending", "{task}");
    // Back again, it stays: no leftover request stops it.
    env.ok(&["resume", "w"]);
    assert_eq!(
        env.ok(&["ask", "w", "again", "--timeout", "20"]).trim(),
        "went"
    );
    wait_until("w idle, not stopped again", T, || {
        env.member_status("w") == "idle"
    });
}

/// A shutdown request the leader sends by hand (`send --structured`) is awaited like one from
/// `teamctl shutdown`; a second one while it is unanswered is refused, nothing written.
#[test]
fn a_structured_shutdown_request_is_awaited_once() {
    let env = TestEnv::new();
    team_with(&env, &[("w", UNTIL_GO)]);
    env.ok(&["send", "w", "work"]);
    wait_until("w working", T, || env.member_status("w") == "working");
    let req = |id: &str| format!(r#"{{"type":"shutdown_request","requestId":"{id}"}}"#);
    env.ok(&["send", "w", "--structured", &req("r1")]);
    let before = crate::common::snapshot(&env.team_dir("alpha").join("inboxes"));
    let err = env.fails(&["send", "w", "--structured", &req("r2")], 2);
    assert!(
        err.contains("has not answered shutdown request r1"),
        "{err}"
    );
    assert_eq!(
        before,
        crate::common::snapshot(&env.team_dir("alpha").join("inboxes"))
    );
    std::fs::write(env.work.path().join("go"), "").unwrap();
    wait_until("w stopped and recorded so", T, || {
        env.member_status("w") == "stopped" && config_member(&env, "w")["status"] == "stopped"
    });
}

/// A stopped teammate whose working directory was deleted cannot be resumed: `resume` says so
/// and what to do (exit 1), and a broadcast still reaches and resumes everyone else; since the
/// message was written, that is a failure (exit 1), never "bad input".
#[test]
fn a_deleted_cwd_fails_clearly_and_does_not_block_a_broadcast() {
    let env = TestEnv::new();
    let dir = env.work.path().join("gone-dir");
    std::fs::create_dir(&dir).unwrap();
    env.ok(&["create", "alpha"]);
    let dir_s = dir.to_str().unwrap();
    env.ok(&[
        "spawn",
        "lost",
        "--backend",
        "process",
        "--cwd",
        dir_s,
        "--exec",
        "cat",
    ]);
    env.ok(&[
        "spawn",
        "fine",
        "--backend",
        "process",
        "--exec",
        "echo fine-got-it",
    ]);
    env.ok(&["kill", "lost"]);
    env.ok(&["kill", "fine"]);
    std::fs::remove_dir(&dir).unwrap();
    let err = env.fails(&["resume", "lost"], 1);
    assert!(
        err.contains("no longer exists") && err.contains(dir_s),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // The broadcast names who has it and how to start the one that did not start.
    let err = env.fails(&["send", "*", "hello all"], 1);
    assert!(
        err.contains("lost has it in its inbox, but")
            && err.contains("no longer exists")
            && err.contains(" --team alpha resume lost")
            && err.contains(
                "the broadcast reached all 2 members (lost, fine), but lost did not start"
            ),
        "{err}"
    );
    for who in ["lost", "fine"] {
        assert!(
            env.inbox("alpha", who)
                .iter()
                .any(|m| m["text"] == "hello all"),
            "{who} got the broadcast"
        );
    }
    wait_until("fine resumed and answered", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "fine" && m["text"] == "fine-got-it\n")
    });
}

fn stop_notices(env: &TestEnv, from: &str) -> usize {
    env.inbox("alpha", "team-lead")
        .iter()
        .filter(|m| {
            m["from"] == from
                && m["type"] == "message"
                && m["text"].as_str().is_some_and(|t| t.contains(" stopped ("))
        })
        .count()
}

/// Killing twice, or shutting down (even `--force`) a teammate that is already stopped, is
/// harmless, says so, and tells the leader's inbox once, not once per command.
#[test]
fn ending_a_stopped_teammate_again_is_a_no_op() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "cat")]);
    assert_eq!(env.ok(&["kill", "w"]).trim(), "w killed");
    let again = env.ok(&["kill", "w"]);
    assert!(again.contains("not running"), "{again}");
    assert_eq!(env.ok(&["shutdown", "w"]).trim(), "w was already stopped");
    let forced = env.ok(&["shutdown", "w", "--force"]);
    assert!(forced.contains("already stopped"), "{forced}");
    assert_eq!(stop_notices(&env, "w"), 1);
    assert_eq!(env.member_status("w"), "stopped");
}

/// With `--json`, every command that reports something prints one JSON document on stdout
/// and nothing else.
#[test]
fn json_output_of_every_acting_command() {
    let env = TestEnv::new();
    team_with(&env, &[("w", UNTIL_GO), ("v", "cat")]);
    let j = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        json(&env.ok(&all))
    };
    let waited = j(&["wait", "w", "v", "--timeout", "20"]);
    assert_eq!(waited["members"].as_array().unwrap().len(), 2, "{waited}");
    j(&["send", "w", "work"]);
    wait_until("w working", T, || env.member_status("w") == "working");
    let int = j(&["interrupt", "w"]);
    assert_eq!(int["name"], "w", "{int}");
    assert_eq!(j(&["kill", "w"])["killed"], true);
    assert_eq!(j(&["kill", "w"])["killed"], false);
    let res = j(&["resume"]);
    assert_eq!(res["resumed"][0]["name"], "w", "{res}");
    assert_eq!(j(&["resume", "w"])["running"][0], "w");
    let asked = j(&["shutdown", "v", "--no-wait"]);
    assert_eq!(asked["requested"][0], "v", "{asked}");
    let down = j(&["shutdown", "--all", "--timeout", "20"]);
    assert_eq!(down["stopped"].as_array().unwrap().len(), 2, "{down}");
    assert_eq!(
        j(&["shutdown", "--all", "--force"])["stopped"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(j(&["delete"])["deleted"], "alpha");
}

/// An empty or blank message is refused the same way from an argument, stdin or
/// `--structured`, in plain words, and nothing is written.
#[test]
fn empty_and_blank_messages_are_refused_alike() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "cat")]);
    wait_until("w idle (its worker has made its inbox)", T, || {
        env.member_status("w") == "idle"
    });
    let before = crate::common::snapshot(&env.team_dir("alpha").join("inboxes"));
    for text in ["", "   ", "\n\t\n"] {
        let err = env.fails(&["send", "w", text], 2);
        assert!(
            err.contains("empty") && !err.contains("message message"),
            "{err}"
        );
        let out = env.run_stdin(&["send", "w"], text);
        assert_eq!(out.status.code(), Some(2), "stdin {text:?}");
        let structured = serde_json::json!({"type": "message", "text": text}).to_string();
        env.fails(&["send", "w", "--structured", &structured], 2);
    }
    assert_eq!(
        before,
        crate::common::snapshot(&env.team_dir("alpha").join("inboxes"))
    );
}

/// `--help` of every command describes every argument and flag in a line, and the internal
/// `worker` command stays hidden.
#[test]
fn help_describes_every_flag_and_hides_worker() {
    let env = TestEnv::new();
    let top = env.ok(&["--help"]);
    assert!(!top.contains("worker"), "{top}");
    let mut commands: Vec<Vec<&str>> = Vec::new();
    let section = |help: &str| -> Vec<String> {
        help.split("Commands:")
            .nth(1)
            .map_or("", |rest| rest.split("\n\n").next().unwrap_or(""))
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .filter(|c| c != "help")
            .collect()
    };
    let top_level = section(&top);
    assert!(top_level.len() > 15, "{top}");
    let task = section(&env.ok(&["task", "--help"]));
    let plan = section(&env.ok(&["plan", "--help"]));
    for c in &top_level {
        commands.push(vec![c.as_str()]);
    }
    for c in &task {
        commands.push(vec!["task", c.as_str()]);
    }
    for c in &plan {
        commands.push(vec!["plan", c.as_str()]);
    }
    for cmd in commands {
        let mut args = cmd.clone();
        args.push("--help");
        let help = env.ok(&args);
        for line in help.lines() {
            let t = line.trim_start();
            if !(t.starts_with('-') || t.starts_with('<') || t.starts_with('[')) {
                continue;
            }
            let parts: Vec<&str> = t.split("  ").filter(|p| !p.trim().is_empty()).collect();
            assert!(
                parts.len() >= 2,
                "`teamctl {}`: no description for {t:?}",
                cmd.join(" ")
            );
        }
    }
    assert!(env.ok(&["worker", "--help"]).contains("--id"));
}

/// A member name at the 64-character limit works end to end, and the status table stays
/// aligned around it.
#[test]
fn a_64_character_name_works_and_status_stays_aligned() {
    let env = TestEnv::new();
    let long = "n".repeat(64);
    team_with(&env, &[(long.as_str(), "echo ok"), ("b", "cat")]);
    let too_long = format!("{long}x");
    env.fails(&["spawn", &too_long, "--backend", "process"], 2);
    assert_eq!(
        env.ok(&["ask", &long, "hi", "--timeout", "20"]).trim(),
        "ok"
    );
    let table = env.ok(&["status"]);
    // Where the second column (STATUS) starts on each line.
    let columns: Vec<usize> = table
        .lines()
        .skip(1)
        .map(|l| {
            let first_end = l.find(' ').unwrap_or(l.len());
            first_end + l[first_end..].len() - l[first_end..].trim_start().len()
        })
        .collect();
    assert!(
        columns.iter().all(|c| *c == columns[0] && *c >= 64),
        "{table}"
    );
}

/// Asking yourself could only time out (nobody answers the leader's inbox, and a teammate's
/// reply to itself is never sent): refused up front, nothing written.
#[test]
fn asking_yourself_is_refused() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "cat")]);
    wait_until("w idle (its worker has made its inbox)", T, || {
        env.member_status("w") == "idle"
    });
    let before = crate::common::snapshot(&env.team_dir("alpha").join("inboxes"));
    let err = env.fails(&["ask", "team-lead", "hi", "--timeout", "1"], 2);
    assert!(err.contains("cannot ask itself"), "{err}");
    env.fails(&["--as", "w", "ask", "w", "hi", "--timeout", "1"], 2);
    // A zero timeout could only send and fail: refused too.
    let err = env.fails(&["ask", "w", "hi", "--timeout", "0"], 2);
    assert!(err.contains("teamctl send"), "{err}");
    assert_eq!(
        before,
        crate::common::snapshot(&env.team_dir("alpha").join("inboxes"))
    );
}

/// Piping output into `head` closes stdout early: teamctl ends quietly (SIGPIPE), with no
/// panic message on stderr.
#[test]
fn a_closed_stdout_ends_quietly() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    // More than a pipe holds, so the write surely meets the closed end.
    let big = "x".repeat(300 * 1024);
    env.ok_stdin(&["send", "team-lead"], &big);
    let mut child = env
        .cmd(&["inbox", "--all"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}

/// Started with descriptors 0, 1 and 2 closed (`cmd <&- >&- 2>&-`), teamctl opens them on
/// /dev/null first, as a Rust program's start-up does: else the files it opens would take
/// those numbers, and what it prints could land in one of them. Seen while it is held at a
/// pause point, after its append; the message is delivered.
#[test]
fn a_send_started_with_stdio_closed_has_them_on_dev_null() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let gate = env.work.path().join("gate");
    let mut child = env
        .cmd_of(
            std::path::Path::new("sh"),
            &[
                "-c",
                r#"exec "$0" send team-lead hello <&- >&- 2>&-"#,
                crate::common::BIN,
            ],
        )
        .env(
            "TEAMCTL_TEST_PAUSE",
            format!("send-wake:{}", gate.display()),
        )
        .spawn()
        .unwrap();
    let reached = env.work.path().join("gate.reached");
    wait_until("the send held after its append", T, || reached.exists());
    let fds: Vec<_> = (0..3)
        .map(|fd| std::fs::read_link(format!("/proc/{}/fd/{fd}", child.id())).ok())
        .collect();
    std::fs::write(&gate, "").unwrap();
    let status = child.wait().unwrap();
    let null = Some(std::path::PathBuf::from("/dev/null"));
    assert_eq!(fds, [null.clone(), null.clone(), null]);
    assert!(status.success(), "{status:?}");
    let texts: Vec<_> = env
        .inbox("alpha", "team-lead")
        .iter()
        .map(|m| m["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(texts, ["hello"]);
}

/// A task subject is shown one per line: one with a line break is refused (the detail goes
/// in -d), while unicode, quotes, `$(...)` and a leading dash are kept as they are.
#[test]
fn task_subjects_are_one_line_and_kept_verbatim() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let err = env.fails(&["task", "add", "two\nlines"], 2);
    assert!(err.contains("one line"), "{err}");
    let list = json(&env.ok(&["--json", "task", "list"]));
    assert_eq!(list["tasks"].as_array().unwrap().len(), 0, "{list}");
    let odd = r#"-dash ünïcode 🎉 "q" 'q' $(touch pwned) `id`"#;
    env.ok(&["task", "add", "-d", "line one\nline two", "--", odd]);
    let task = json(&env.ok(&["--json", "task", "show", "1"]));
    assert_eq!(task["subject"], odd);
    assert_eq!(task["description"], "line one\nline two");
    assert!(!env.work.path().join("pwned").exists());
}

/// Workers of `name` running under this home (argv `worker --home H --id NAME@alpha`).
/// How many worker processes `name` has (`common::not_forks_of_each_other`: a worker's child
/// not yet exec'd is not a second worker).
fn workers_of(env: &TestEnv, name: &str) -> usize {
    let id = format!("{name}@alpha");
    let workers: Vec<u32> = env
        .processes()
        .into_iter()
        .filter(|p| {
            let argv = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let argv: Vec<&[u8]> = argv.split(|b| *b == 0).collect();
            argv.get(1) == Some(&&b"worker"[..]) && argv.contains(&id.as_bytes())
        })
        .collect();
    crate::common::not_forks_of_each_other(&workers).len()
}

/// Sending to a teammate while `spawn` is still starting it must not start a second worker
/// on the same inbox (it looked dead until its worker was recorded, so `send` resumed it).
fn send_while_starting(env: &TestEnv, backend: &str) {
    env.ok(&["create", "alpha"]);
    let names: Vec<String> = (0..4).map(|i| format!("w{i}")).collect();
    for name in &names {
        let mut spawn = env
            .cmd(&["spawn", name, "--backend", backend, "--exec", "cat"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // As soon as the team file names it, before its worker is recorded.
        wait_until("the member entry", T, || {
            std::fs::read_to_string(env.team_dir("alpha").join("config.json"))
                .unwrap_or_default()
                .contains(&format!("\"{name}@alpha\""))
        });
        let out = env.run(&["send", name, "hello"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("resumed"), "{name}: {err}");
        assert!(spawn.wait().unwrap().success());
    }
    for name in &names {
        wait_until("the message answered", T, || {
            env.inbox("alpha", "team-lead")
                .iter()
                .any(|m| m["from"] == name.as_str() && m["text"] == "hello")
        });
        assert_eq!(workers_of(env, name), 1, "{name}: one worker");
    }
}

#[test]
fn send_while_spawn_is_starting_makes_no_second_worker() {
    send_while_starting(&TestEnv::new(), "process");
}

#[test]
fn send_while_spawn_is_starting_makes_no_second_worker_tmux() {
    send_while_starting(&TestEnv::with_tmux(), "tmux");
}

/// Text from agents is shown, not obeyed: escape sequences, bells and carriage returns in a
/// message cannot retitle or clear the reader's terminal; `--json` keeps the text exact.
#[test]
fn control_characters_in_messages_are_shown_not_obeyed() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let nasty = "hi \u{1b}]0;PWNED\u{7} \u{1b}[2J cr\rX\nsecond line\ttab";
    env.ok(&["send", "team-lead", nasty]);
    env.ok(&["task", "add", "t", "-d", nasty]);
    for args in [&["inbox", "--all"][..], &["task", "show", "1"]] {
        let shown = env.ok(args);
        assert!(
            !shown.contains(['\u{1b}', '\u{7}', '\r']),
            "{args:?}: {shown:?}"
        );
        assert!(shown.contains("second line\ttab"), "{args:?}: {shown:?}");
    }
    let exact = json(&env.ok(&["--json", "inbox", "--all"]));
    assert_eq!(exact[0]["text"], nasty);
}

/// When the teammate's turn fails, `ask` fails too (exit 1, the reason on stderr): a script
/// capturing the answer must not take the failure notice for one.
#[test]
fn ask_fails_when_the_turn_fails() {
    let env = TestEnv::new();
    team_with(&env, &[("f", "echo partial; echo oops >&2; exit 3")]);
    let out = env.run(&["ask", "f", "go", "--timeout", "20"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("turn failed") && err.contains("oops"), "{err}");
}

/// An exported but empty TEAMCTL_TEAM, TEAMCTL_HOME or TEAMCTL_AGENT_NAME counts as unset,
/// as XDG_STATE_HOME and NO_COLOR do.
#[test]
fn empty_environment_variables_count_as_unset() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let mut c = env.cmd(&["task", "add", "by the leader"]);
    c.env("TEAMCTL_TEAM", "").env("TEAMCTL_AGENT_NAME", "");
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let task = json(&env.ok(&["--json", "task", "show", "1"]));
    assert_eq!(task["subject"], "by the leader");
    // An empty home falls back to the default one (here under a temporary XDG_STATE_HOME).
    let state = env.work.path().join("state");
    let mut c = env.cmd(&["create", "beta"]);
    c.env("TEAMCTL_HOME", "").env("XDG_STATE_HOME", &state);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(state.join("teamctl/teams/beta/config.json").is_file());
}

/// The damaged-team-file error says `delete --force` removes the team: it must then work,
/// ending the team's workers by their tags, instead of failing on the same file.
#[test]
fn delete_force_removes_a_team_with_a_damaged_team_file() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "cat")]);
    wait_until("w's worker", T, || workers_of(&env, "w") == 1);
    std::fs::write(env.team_dir("alpha").join("config.json"), "{broken").unwrap();
    let err = env.fails(&["status"], 1);
    assert!(err.contains("delete --force"), "{err}");
    env.ok(&["delete", "--force"]);
    assert!(!env.team_dir("alpha").exists());
    wait_until("no worker left", T, || env.processes().is_empty());
    env.ok(&["create", "alpha"]);
}

/// The refusal to spawn an existing name says `kill` it first; after that, spawn must work:
/// the teammate starts anew with the new options, same identity, same inbox. A running one is
/// still refused, nothing written.
#[test]
fn spawn_again_after_kill_starts_it_anew() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "echo old")]);
    wait_until("w idle", T, || env.member_status("w") == "idle");
    let team_file = || std::fs::read(env.team_dir("alpha").join("config.json")).unwrap();
    let before = team_file();
    let err = env.fails(
        &["spawn", "w", "--backend", "process", "--exec", "echo new"],
        2,
    );
    assert!(err.contains("kill w"), "{err}");
    assert_eq!(before, team_file());
    env.ok(&["kill", "w"]);
    env.ok(&["send", "w", "queued while stopped"]);
    // `send` resumed it; kill it again, then spawn it anew.
    wait_until("the queued message handled", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "w" && m["text"] == "old\n")
    });
    env.ok(&["kill", "w"]);
    env.ok(&["spawn", "w", "--backend", "process", "--exec", "echo new"]);
    assert_eq!(env.ok(&["ask", "w", "hi", "--timeout", "20"]).trim(), "new");
    assert_eq!(workers_of(&env, "w"), 1);
    let members = config(&env)["members"].as_array().unwrap().len();
    assert_eq!(members, 2, "replaced, not added");
}

/// A text under 1 MiB can still be refused when JSON escaping makes its record bigger: the
/// error must say so, or the size it reports contradicts the file the user sent.
#[test]
fn the_size_limit_error_explains_escaping() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let quotes = "\"".repeat(600 * 1024);
    let out = env.run_stdin(&["send", "team-lead"], &quotes);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("escaping") && err.contains("1 MiB"), "{err}");
    assert!(env.inbox("alpha", "team-lead").is_empty());
}

/// Completion scripts offer every command but the hidden `worker`.
#[test]
fn completions_do_not_offer_the_hidden_worker() {
    let env = TestEnv::new();
    for (shell, hidden) in [
        ("bash", "subcmd__worker"),
        ("zsh", "(worker)"),
        ("fish", "-a \"worker\""),
    ] {
        let script = env.ok(&["completions", shell]);
        assert!(
            script.contains("shutdown") && script.contains("task"),
            "{shell}"
        );
        assert!(!script.contains(hidden), "{shell} offers worker");
    }
}

/// `--exec ""` (an unset variable, say) is refused rather than giving a teammate whose every
/// turn silently does nothing; nothing is written.
#[test]
fn a_blank_agent_command_is_refused() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for flag in ["--exec", "--on-shutdown"] {
        for blank in ["", "  "] {
            let err = env.fails(&["spawn", "e", "--backend", "process", flag, blank], 2);
            assert!(err.contains(&format!("{flag} is empty")), "{err}");
        }
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
}

/// A huge timeout means "no limit": it must neither panic the command nor kill the worker.
#[test]
fn huge_timeouts_mean_no_limit() {
    let env = TestEnv::new();
    let max = u64::MAX.to_string();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "w",
        "--backend",
        "process",
        "--exec",
        "echo ok",
        "--turn-timeout",
        &max,
    ]);
    assert_eq!(env.ok(&["ask", "w", "hi", "--timeout", &max]).trim(), "ok");
    env.ok(&["wait", "w", "--timeout", &max]);
    assert_eq!(env.member_status("w"), "idle");
    env.ok(&["shutdown", "w", "--timeout", &max]);
    env.ok(&["delete", "--timeout", &max]);
}

/// A summary is a one-line preview: one given with line breaks is folded onto one line.
#[test]
fn a_given_summary_is_folded_onto_one_line() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "send",
        "team-lead",
        "body",
        "--summary",
        "two\nlines\t here",
    ]);
    assert_eq!(
        env.inbox("alpha", "team-lead")[0]["summary"],
        "two lines here"
    );
}

/// `--home DIR/`, `DIR//` and `DIR/.` are the same home as `DIR`: the workers carry the home
/// in their tag, and a different spelling left them unrecognised (dead in `status`, never
/// killed by `delete --force`).
#[test]
fn home_spellings_are_one_home() {
    let env = TestEnv::new();
    let home = env.home_path().display().to_string();
    let with = |spelling: &str, args: &[&str]| {
        let mut c = env.cmd(args);
        c.env("TEAMCTL_HOME", spelling);
        c.output().unwrap()
    };
    let out = with(&format!("{home}/"), &["create", "alpha"]);
    assert!(out.status.success());
    let out = with(
        &format!("{home}//"),
        &["spawn", "w", "--backend", "process", "--exec", "cat"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("w idle, seen from the plain spelling", T, || {
        env.member_status("w") == "idle"
    });
    let out = with(&format!("{home}/."), &["delete", "--force"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("no worker left", T, || env.processes().is_empty());
}

/// `ask` gives up as soon as the teammate stops without answering (killed meanwhile), instead
/// of blocking until its timeout.
#[test]
fn ask_gives_up_when_the_teammate_stops() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "sleep 1000")]);
    let asking = env
        .cmd(&["ask", "w", "q", "--timeout", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("w working", T, || env.member_status("w") == "working");
    env.ok(&["kill", "w"]);
    let out = asking.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stopped without answering"), "{err}");
}

/// New-user QA 38: a teammate whose worker died in its turn on the question was resumed by
/// `ask`, which ran that turn a second time (side effects and all), said it "was not running",
/// and ended with "stopped without answering" for a dead teammate. Now the turn runs once, and
/// `ask` says the teammate died in its turn on the question.
#[test]
fn ask_does_not_run_again_a_turn_that_killed_its_worker() {
    let env = TestEnv::new();
    let runs = env.work.path().join("runs");
    team_with(
        &env,
        &[(
            "crash",
            // Past the moment `ask` looks whether to resume it after sending (a turn that
            // kills its worker within it is taken for one dead before: left as it was).
            &format!("echo run >> '{}'; sleep 0.5; kill -9 $PPID", runs.display()),
        )],
    );
    wait_until("crash idle", T, || env.member_status("crash") == "idle");
    let out = env.run(&["ask", "crash", "boom", "--timeout", "20"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    // Its turn is recorded once its agent runs: one that ends the worker at once may leave
    // none, and is said to have died without answering.
    assert!(
        err.contains("crash died in its turn on the question")
            || err.contains("crash died without answering"),
        "{err}"
    );
    assert!(!err.contains("resumed"), "{err}");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    assert_eq!(env.member_status("crash"), "dead");
}

/// A turn that kills its worker at once, before `send`, `ask` or a task assignment looks
/// whether to start the recipient again: it ran as the message was delivered, so it is not
/// started again to run that turn twice (QA 38: the instant between the append and the look).
/// Each command is held there (its pause point) until the turn has run and the worker is dead.
#[test]
fn a_turn_that_kills_its_worker_at_once_is_not_run_again_by_the_sender() {
    let env = TestEnv::new();
    let runs = |n: &str| env.work.path().join(format!("runs-{n}"));
    let crash = |n: &str| format!("echo run >> '{}'; kill -9 $PPID", runs(n).display());
    let (s, a, t) = (crash("s"), crash("a"), crash("t"));
    team_with(&env, &[("s", &s), ("a", &a), ("t", &t)]);
    // The task is added all the same: its assignment waits, said on stderr (exit 0).
    let cases: [(&str, &[&str], &str, i32); 3] = [
        ("s", &["send", "s", "boom"], "send-wake", 1),
        ("a", &["ask", "a", "boom", "--timeout", "20"], "ask-wake", 1),
        (
            "t",
            &["task", "add", "boom", "--owner", "t"],
            "task-wake",
            0,
        ),
    ];
    for (name, args, point, code) in cases {
        wait_until(&format!("{name} idle"), T, || {
            env.member_status(name) == "idle"
        });
        let gate = env.work.path().join(format!("gate-{name}"));
        let held = env.paused(args, point, &gate);
        wait_until(&format!("{name}'s turn ran"), T, || runs(name).exists());
        wait_until(&format!("{name} dead"), T, || {
            env.member_status(name) == "dead"
        });
        std::fs::write(&gate, "").unwrap();
        let out = held.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("resumed"), "{name}: {err}");
        // `ask` says how it ended once it sees it dead: with or without its turn recorded.
        let said = match name {
            "a" => &[
                "a died in its turn on the question",
                "a died without answering",
            ][..],
            _ => &["ended as the message ("][..],
        };
        assert!(said.iter().any(|s| err.contains(s)), "{name}: {err}");
        assert!(
            err.contains(&format!("`teamctl resume {name}` runs")) || name == "a",
            "{err}"
        );
        assert_eq!(out.status.code(), Some(code), "{name}: {out:?}");
        assert_eq!(env.member_status(name), "dead", "{name}");
        assert_eq!(std::fs::read_to_string(runs(name)).unwrap(), "run\n");
    }
}

/// A teammate dead in its turn on a message still unhandled is not started by the next message
/// to it (QA 39: each message sent after it ran the turn that killed its worker once more):
/// `send` and `ask` fail saying so, a task assignment says it on stderr; the user's `resume`
/// runs it, knowingly. Each turn kills its worker as its first act: the worker records the
/// turn before the message can reach it (it recorded it just after the agent started, and
/// under load the next message found no record and ran the turn again: 4 runs in 6).
#[test]
fn a_teammate_dead_in_a_turn_still_unhandled_is_not_started_by_the_next_message() {
    let env = TestEnv::new();
    let runs = |n: &str| env.work.path().join(format!("runs-{n}"));
    let crash = |n: &str| format!("echo run >> '{}'; kill -9 $PPID", runs(n).display());
    let (s, a, t) = (crash("s"), crash("a"), crash("t"));
    team_with(&env, &[("s", &s), ("a", &a), ("t", &t)]);
    for name in ["s", "a", "t"] {
        wait_until(&format!("{name} idle"), T, || {
            env.member_status(name) == "idle"
        });
        send_killing(&env, name, "boom");
        wait_dead_after_runs(&env, name, &runs(name), 1);
    }
    let later: [(&str, &[&str], i32); 3] = [
        ("s", &["send", "s", "later"], 1),
        ("a", &["ask", "a", "later", "--timeout", "20"], 1),
        ("t", &["task", "add", "later", "--owner", "t"], 0),
    ];
    for (name, args, code) in later {
        let out = env.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{name}: {out:?}");
        assert!(!err.contains("resumed"), "{name}: {err}");
        assert!(
            err.contains(&format!("{name} died in its turn on an earlier message ("))
                && err.contains(&format!("`teamctl resume {name}` runs that turn again")),
            "{name}: {err}"
        );
        assert_eq!(env.member_status(name), "dead", "{name}");
        assert_eq!(std::fs::read_to_string(runs(name)).unwrap(), "run\n");
    }
    env.ok(&["resume", "s"]);
    wait_until("s's turn run again by the resume", T, || {
        std::fs::read_to_string(runs("s")).unwrap() == "run\nrun\n"
    });
}

/// A turn that kills its worker as its first act, the worker held (a pause point) just after
/// the turn's program has its command, if the kill has not come first: either way the worker
/// does nothing more, and the turn was recorded before, so the next message does not start
/// the teammate to run it again. Before, the worker recorded the turn only there,
/// and a worker killed first left nothing to tell by (under load, 4 of 6 runs ran it twice).
#[test]
fn a_turn_killing_its_worker_before_the_worker_goes_on_is_recorded() {
    let t = TestEnv::with_tmux();
    let runs = t.work.path().join("runs");
    t.ok(&["create", "alpha"]);
    let crash = format!("echo run >> '{}'; kill -9 $PPID", runs.display());
    t.ok(&["spawn", "k", "--exec", &crash]);
    wait_until("k idle", T, || t.member_status("k") == "idle");
    t.ok(&["kill", "k"]);
    // Resumed into a pane with the server's environment, where the pause is set for this
    // one start.
    let gate = t.work.path().join("gate");
    let pause = format!("turn-started:{}", gate.display());
    t.tmux_ok(&["set-environment", "-g", "TEAMCTL_TEST_PAUSE", &pause]);
    t.ok(&["resume", "k"]);
    t.tmux_ok(&["set-environment", "-g", "-u", "TEAMCTL_TEST_PAUSE"]);
    wait_until("k idle", T, || t.member_status("k") == "idle");
    send_killing(&t, "k", "boom");
    wait_dead_after_runs(&t, "k", &runs, 1);
    // No wait for tmux to see the pane's process end: until it has, the send's look at the
    // pane alone found it running (while `status`'s had found it dead) and the send left the
    // message waiting, saying nothing (QA 40, under load). A pane whose process no longer
    // runs is dead to both looks now.
    let log = || std::fs::read_to_string(t.team_dir("alpha").join("logs/k.log")).unwrap();
    let out = t.run(&["send", "k", "later"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}\n{}", log());
    assert!(
        err.contains("k died in its turn on an earlier message ("),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "run\n",
        "{}",
        log()
    );
    t.ok(&["delete", "--force"]);
}

/// A message that kills its worker each time it runs: `resume --skip-turn` starts the
/// teammate past it (QA 39: nothing but a resume that ran it again, and again). Its sender is
/// told in reply to it, a task it was for is failed, the mail after it is handled, and it never
/// runs again. A name with nothing to skip (running, or one the other names do not cover) is
/// refused first: nothing changes.
#[test]
fn resume_skip_turn_starts_a_teammate_past_the_message_that_kills_it() {
    let env = TestEnv::new();
    let runs = |n: &str| env.work.path().join(format!("runs-{n}"));
    let crash = |n: &str| crash_on_boom(&runs(n));
    let (p, q) = (crash("p"), crash("q"));
    team_with(&env, &[("p", &p), ("q", &q), ("r", "cat")]);
    for name in ["p", "q", "r"] {
        wait_until(&format!("{name} idle"), T, || {
            env.member_status(name) == "idle"
        });
    }
    let _ = env.run(&["send", "p", "boom"]);
    let _ = env.run(&["task", "add", "boom", "--owner", "q"]);
    for name in ["p", "q"] {
        wait_dead_after_runs(&env, name, &runs(name), 1);
    }
    // `wait` names the way past that turn too (new-user QA 40: only `resume`).
    let out = env.run(&["wait", "p", "--timeout", "5"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "p died in its turn on a message still unhandled: `teamctl resume p` runs that turn again, `teamctl resume p --skip-turn` starts it past it"
        ),
        "{out:?}"
    );
    // So does `status` (QA 40: "interrupted: its worker died", and nothing of the way past).
    let out = env.ok(&["status"]);
    assert!(
        out.contains("p: died in its turn on a message still unhandled: `teamctl resume p` runs that turn again, `teamctl resume p --skip-turn` starts it past it"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&env.ok(&["status", "--json"])).unwrap();
    let rows = v["members"].as_array().unwrap();
    let row = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap().clone();
    assert_eq!(row("p")["turnUnhandled"], true, "{v}");
    assert_eq!(row("r")["turnUnhandled"], serde_json::Value::Null, "{v}");
    // And `doctor` (new-user QA 41: only `resume`, which runs that turn again).
    let out = env.run(&["doctor"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("still unhandled: `teamctl resume --team alpha p` runs that turn again, `teamctl resume --team alpha p --skip-turn` starts it past it"),
        "{out:?}"
    );
    assert_eq!(env.run(&["send", "p", "later"]).status.code(), Some(1));
    // Refused, nothing changed: r runs (nothing to skip), and a teammate never in a turn.
    for args in [
        &["resume", "p", "r", "--skip-turn"][..],
        &["resume", "--skip-turn"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert_eq!(env.member_status("p"), "dead", "{args:?}");
    }
    let out = env.run(&["resume", "p", "r", "--skip-turn"]);
    // Every name's problem, and the names that had a turn to skip left as they are (QA 40:
    // only r's problem was said).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("teamctl: r is running (idle)")
            && err.contains("\nteamctl: nothing changed: p was left as it is, its turn not skipped (`teamctl resume p --skip-turn` skips it alone)"),
        "{out:?}"
    );
    let out = env.run(&["resume", "*", "--skip-turn"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`--skip-turn` takes the names"),
        "{out:?}"
    );
    // `resume` with no name runs that turn again: said, with the way past it (new-user QA
    // 40: nothing was said).
    let out = env.run(&["resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    for name in ["p", "q"] {
        assert!(
            err.contains(&format!(
                "{name} died in its turn on a message still unhandled"
            )) && err.contains("resumed, it runs that turn again")
                && err.contains(&format!(
                    "`teamctl resume {name} --skip-turn` (once it is dead again)"
                )),
            "{out:?}"
        );
        wait_dead_after_runs(&env, name, &runs(name), 2);
    }
    let boom = env
        .inbox("alpha", "p")
        .into_iter()
        .find(|m| m["text"] == "boom")
        .unwrap();
    let out = env.ok(&["resume", "p", "--skip-turn"]);
    assert!(
        out.contains(&format!(
            "p: skipped the message of the turn it ended in, {} from team-lead (\"boom\"); team-lead was told",
            boom["id"].as_str().unwrap()
        )) && out.contains("p resumed"),
        "{out}"
    );
    wait_until("p's answer to the later message", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "p" && m["text"] == "ok later\n")
    });
    let told = env
        .inbox("alpha", "team-lead")
        .into_iter()
        .find(|m| m["from"] == "p" && m["inReplyTo"] == boom["id"])
        .expect("the sender told, in reply to the skipped message");
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .starts_with("teamctl: p's turn failed (its worker ended in this turn"),
        "{told}"
    );
    // A task's assignment skipped: the task failed, said in JSON.
    let out = env.ok(&["resume", "q", "--skip-turn", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["skippedTurns"][0]["name"], "q", "{v}");
    assert_eq!(v["skippedTurns"][0]["task"], 1, "{v}");
    assert_eq!(v["resumed"][0]["name"], "q", "{v}");
    let tasks: serde_json::Value =
        serde_json::from_str(&env.ok(&["task", "list", "--json"])).unwrap();
    assert_eq!(tasks["tasks"][0]["status"], "failed", "{tasks}");
    wait_until("p and q idle", T, || {
        env.member_status("p") == "idle" && env.member_status("q") == "idle"
    });
    for name in ["p", "q"] {
        assert_eq!(std::fs::read_to_string(runs(name)).unwrap(), "run\nrun\n");
    }
    // p's log says each death in a turn as its next worker starts, and what became of that
    // turn's message: run again (`resume`), then skipped (QA 40: the turn, then the next
    // start, nothing between).
    let log = std::fs::read_to_string(env.team_dir("alpha").join("logs/p.log")).unwrap();
    let ended = format!(
        "ended in its turn on {} from team-lead: \"boom\"; ",
        boom["id"].as_str().unwrap()
    );
    for then in [
        "that message is still unhandled: this worker runs it again",
        "that message was handled or skipped since: it does not run again",
    ] {
        assert_eq!(
            log.matches(&format!("{ended}{then}")).count(),
            1,
            "{then}:\n{log}"
        );
    }
    assert_eq!(
        log.matches("the worker before this one").count(),
        2,
        "{log}"
    );
    // The skip itself, by the leader, in between (new-user QA 41).
    let skipped = format!(
        "the leader skipped the message of the turn the last worker ended in, {} from team-lead: \"boom\" (`teamctl resume p --skip-turn`): it will not run; its sender was told\n",
        boom["id"].as_str().unwrap()
    );
    let (at_skip, at_then) = (
        log.find(&skipped).expect("the skip in p's log"),
        log.find("that message was handled or skipped since")
            .unwrap(),
    );
    assert!(at_skip < at_then, "{log}");
    // Nothing left to skip now.
    let out = env.run(&["resume", "p", "--skip-turn"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// A skip whose notice cannot be written (the sender's inbox a directory, as a full disk would)
/// still skips and starts the teammate, saying the sender was not told (attacker QA 40: it
/// stopped half done, cursor moved and task failed, the teammate not started, the retry
/// refused); and what it prints from the inbox (a forged id and summary with terminal
/// escapes) is escaped.
#[test]
fn a_skip_turn_that_cannot_tell_its_sender_still_skips_and_prints_no_escapes() {
    let env = TestEnv::new();
    let runs = env.work.path().join("runs");
    let crash = crash_on_boom(&runs);
    team_with(&env, &[("p", &crash), ("r", "cat")]);
    wait_until("p idle", T, || env.member_status("p") == "idle");
    env.ok(&["send", "p", "hello"]);
    wait_until("p idle after hello", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "p" && m["text"] == "ok hello\n")
            && env.member_status("p") == "idle"
    });
    // A line written into p's inbox by hand, its id and text holding terminal escapes.
    let mut forged = env.inbox("alpha", "p")[0].clone();
    forged["id"] = "f\u{1b}]0;PWNED\u{7}".into();
    forged["text"] = "boom \u{1b}[2J".into();
    forged["summary"] = "boom \u{1b}[2J".into();
    forged["from"] = "r".into();
    let inbox = env.team_dir("alpha").join("inboxes/p/inbox.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&inbox)
        .unwrap();
    std::io::Write::write_all(&mut f, format!("{forged}\n").as_bytes()).unwrap();
    wait_dead_after_runs(&env, "p", &runs, 1);
    // r's inbox a directory: the notice to r cannot be written.
    let r_inbox = env.team_dir("alpha").join("inboxes/r/inbox.jsonl");
    let aside = env.work.path().join("r-inbox");
    std::fs::rename(&r_inbox, &aside).unwrap();
    std::fs::create_dir(&r_inbox).unwrap();
    let out = env.run(&["resume", "p", "--skip-turn"]);
    std::fs::remove_dir(&r_inbox).unwrap();
    std::fs::rename(&aside, &r_inbox).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("r could not be told it will not run")
            && stdout.contains("p resumed")
            && stdout.contains("\\u{1b}]0;PWNED")
            && !stdout.contains('\u{1b}')
            && !stdout.contains('\u{7}'),
        "{stdout}"
    );
    wait_until("p idle again", T, || env.member_status("p") == "idle");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    // Nothing left to skip: refused, in words that fit a skipped message.
    let out = env.run(&["resume", "p", "--skip-turn"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// A broadcast that reaches a teammate dead in a turn on a message still unhandled does not
/// start it, and says so as that, not as a failed start to fix and retry (QA 39: "once that
/// is fixed, start it", and `--json` gave no reason): both ways to start it, and why in JSON.
#[test]
fn a_broadcast_says_who_it_did_not_start_on_purpose_and_why() {
    let env = TestEnv::new();
    let runs = env.work.path().join("runs");
    let crash = crash_on_boom(&runs);
    team_with(&env, &[("p", &crash), ("r", "cat")]);
    for name in ["p", "r"] {
        wait_until(&format!("{name} idle"), T, || {
            env.member_status(name) == "idle"
        });
    }
    let _ = env.run(&["send", "p", "boom"]);
    wait_dead_after_runs(&env, "p", &runs, 1);
    let out = env.run(&["send", "*", "hello"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("not started on purpose")
            && err.contains(" resume p\n")
            && err.contains(" resume p --skip-turn\n")
            && err.contains("p was not started (dead in a turn)")
            && !err.contains("once that is fixed"),
        "{err}"
    );
    // Why in a few words, the commands once (QA 40: its whole error, commands and all, then
    // the block again).
    assert!(
        err.contains("teamctl: p has it in its inbox, not started: it died in its turn on an earlier message (")
            && err.contains("\"boom\"), still unhandled\n"),
        "{err}"
    );
    assert_eq!(err.matches("--skip-turn").count(), 1, "{err}");
    let out = env.run(&["send", "*", "again", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["notStarted"], serde_json::json!(["p"]), "{v}");
    assert_eq!(v["why"]["p"]["held"], true, "{v}");
    assert!(
        v["why"]["p"]["error"]
            .as_str()
            .unwrap()
            .contains("p died in its turn on an earlier message"),
        "{v}"
    );
    assert_eq!(env.member_status("p"), "dead");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
}

/// A send whose message was handled before the send looked whether to start its recipient,
/// stopped by the leader meanwhile: nothing to say, nothing started (attacker QA 39: it said
/// the teammate ended as the message reached it, the message waiting, exit 1).
#[test]
fn a_send_handled_before_its_recipient_was_stopped_neither_resumes_nor_fails() {
    let env = TestEnv::new();
    team_with(&env, &[("k", "echo \"ok $(cat)\"")]);
    wait_until("k idle", T, || env.member_status("k") == "idle");
    let gate = env.work.path().join("gate");
    let held = env.paused(&["send", "k", "hello"], "send-wake", &gate);
    wait_until("k's reply", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "k" && m["text"] == "ok hello\n")
    });
    wait_until("k idle after its turn", T, || {
        env.member_status("k") == "idle"
    });
    env.ok(&["kill", "k"]);
    std::fs::write(&gate, "").unwrap();
    let out = held.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        !err.contains("resumed") && !err.contains("ended as"),
        "{err}"
    );
    assert_eq!(env.member_status("k"), "stopped");
}

/// `ask` to a stopped teammate starts it again to answer, and says so on stderr as `send` does
/// (it said nothing: the user could not tell a restart from a running teammate).
#[test]
fn ask_says_it_resumed_a_stopped_teammate() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "echo answered")]);
    wait_until("w idle", T, || env.member_status("w") == "idle");
    env.ok(&["kill", "w"]);
    let out = env.run(&["ask", "w", "q", "--timeout", "30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "answered");
    assert!(
        err.contains("teamctl: w was not running; resumed it"),
        "{err}"
    );
    // Running now: asked again, it says nothing of the kind.
    let out = env.run(&["ask", "w", "q2", "--timeout", "30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("resumed"), "{err}");
}

/// A teammate's `ask` to one the leader stopped fails at once, saying the question waits for the
/// leader to resume it, as `send` says (new-user QA: "stopped without answering", as if it had
/// been running).
#[test]
fn a_teammates_ask_to_one_the_leader_stopped_says_it_waits_for_a_resume() {
    let env = TestEnv::new();
    team_with(&env, &[("carol", "cat"), ("al", "echo answered")]);
    wait_until("al idle", T, || env.member_status("al") == "idle");
    env.ok(&["kill", "al"]);
    let err = env.fails(&["--as", "carol", "ask", "al", "q", "--timeout", "30"], 1);
    assert!(
        err.contains("al is stopped; the question (")
            && err.contains("waits in its inbox until the leader resumes it (`teamctl resume al`)"),
        "{err}"
    );
    assert_eq!(env.member_status("al"), "stopped");
    assert_eq!(env.member("al")["unread"], 1);
    // The leader's resume brings it back to answer.
    env.ok(&["resume", "al"]);
    wait_until("the answer to carol", T, || {
        env.inbox("alpha", "carol")
            .iter()
            .any(|m| m["from"] == "al" && m["text"] == "answered\n")
    });
}

/// A teammate killed by the leader while someone waits for it is stopped, not "died".
#[test]
fn wait_sees_a_killed_teammate_as_stopped() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "sleep 1000")]);
    env.ok(&["send", "w", "work"]);
    wait_until("w working", T, || env.member_status("w") == "working");
    let waiting = env
        .cmd(&["wait", "w", "--timeout", "30"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    env.ok(&["kill", "w"]);
    let out = waiting.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

/// Run from a PATH without tmux (cron, an agent's minimal environment), a live tmux teammate
/// is still alive: status must not call it dead, and send must not "resume" it over its
/// running worker.
#[test]
fn a_tmux_teammate_stays_alive_to_a_path_without_tmux() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "a", "--backend", "tmux", "--exec", "echo got-it"]);
    wait_until("a idle", T, || env.member_status("a") == "idle");
    let pid = env.member("a")["pid"].clone();
    let bin = env.work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(crate::common::BIN, bin.join("teamctl")).unwrap();
    let no_tmux = |args: &[&str]| {
        let out = env.cmd(args).env("PATH", &bin).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let status = json(&String::from_utf8_lossy(
        &no_tmux(&["--json", "status"]).stdout,
    ));
    assert_eq!(status["members"][1]["status"], "idle", "{status}");
    let sent = no_tmux(&["send", "a", "hello"]);
    assert!(!String::from_utf8_lossy(&sent.stderr).contains("resumed"));
    wait_until("the reply", T, || {
        env.inbox("alpha", "team-lead")
            .iter()
            .any(|m| m["from"] == "a" && m["text"] == "got-it\n")
    });
    assert_eq!(env.member("a")["pid"], pid, "the same worker");
}

// ---- issue 11: what a new user trips over ----

/// Issue 11.15: idle notifications are state, not mail. `inbox` shows messages; idle
/// notifications only with `--type idle_notification` (which marks nothing read) or `--all`.
/// The default view passes its cursor over the ones it skips: never shown again by it, still
/// there for `--all` and `log`.
#[test]
fn inbox_leaves_idle_notifications_out_unless_asked() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "echo ok")]);
    // Sent, not asked: the reply `ask` prints is read by it.
    env.ok(&["send", "w", "hi"]);
    wait_until(
        "w's reply and an idle notification for the leader",
        T,
        || {
            let inbox = env.inbox("alpha", "team-lead");
            inbox.iter().any(|m| m["type"] == "idle_notification")
                && inbox
                    .iter()
                    .any(|m| m["type"] == "message" && m["from"] == "w")
        },
    );
    let types = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--json", "inbox"];
        all.extend_from_slice(args);
        json(&env.ok(&all))
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["type"].as_str().unwrap().to_string())
            .collect()
    };
    // The default view says how many it left out, also when it shows messages.
    let out = env.run(&["inbox", "--peek"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("ok"), "{stdout}");
    assert!(
        stderr.contains("left out; `--all --type idle_notification`"),
        "{stderr}"
    );
    let idle = types(&["--type", "idle_notification"]);
    assert!(!idle.is_empty(), "{idle:?}");
    assert!(idle.iter().all(|t| t == "idle_notification"), "{idle:?}");
    // `--type` marked nothing read: the reply is still unread for the default view.
    let shown = types(&[]);
    assert!(shown.contains(&"message".to_string()), "{shown:?}");
    assert!(
        !shown.contains(&"idle_notification".to_string()),
        "{shown:?}"
    );
    // Not shown again, by the default view nor by `--type` (the default view read past them).
    assert!(types(&[]).is_empty());
    assert!(types(&["--type", "idle_notification"]).is_empty());
    // Still in the inbox for `--all`.
    assert!(types(&["--all"]).contains(&"idle_notification".to_string()));
    let err = env.fails(&["inbox", "--type", "idle"], 2);
    assert!(err.contains("idle_notification"), "{err}");
    // They still drive `wait`.
    env.ok(&["wait", "w", "--timeout", "20"]);
}

/// Issue 11.16 and 11.21: a teammate awaiting plan approval waits on the leader, as an idle one
/// does: `wait` returns and says so. The status table keeps `awaiting_plan_approval` apart from
/// the next column, and "LAST SEEN" apart from "TURN".
#[test]
fn wait_returns_for_a_teammate_awaiting_plan_approval_and_status_columns_stay_apart() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "p",
        "--backend",
        "process",
        "--plan-mode-required",
        "--plan",
        "echo the plan",
        "--exec",
        "echo done",
    ]);
    env.ok(&["send", "p", "job"]);
    wait_until("p awaiting approval", T, || {
        env.member_status("p") == "awaiting_plan_approval"
    });
    let out = env.run(&["wait", "p", "--timeout", "10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("p awaiting plan approval"), "{err}");
    let table = env.ok(&["status"]);
    let header = table.lines().nth(1).unwrap();
    assert!(header.contains("LAST SEEN  TURN"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("p "))
        .unwrap_or_else(|| panic!("{table}"));
    let status_at = header.find("STATUS").unwrap();
    let backend_at = header.find("BACKEND").unwrap();
    assert_eq!(
        row[status_at..backend_at].trim_end(),
        "awaiting_plan_approval",
        "{table}"
    );
    assert!(row[..backend_at].ends_with("  "), "{table}");
    assert!(row[backend_at..].starts_with("process "), "{table}");
}

/// Issue 11.16: a shutdown request pending during a turn shows (`shutdown_pending`, the turn
/// still shown); a stopped teammate shows no turn, turn age, task or pid.
#[test]
fn status_shows_a_pending_shutdown_and_nothing_of_a_stopped_teammates_last_turn() {
    let env = TestEnv::new();
    team_with(&env, &[("w", UNTIL_GO)]);
    env.ok(&["send", "w", "work"]);
    wait_until("w working", T, || env.member_status("w") == "working");
    env.ok(&["shutdown", "w", "--no-wait"]);
    let w = env.member("w");
    assert_eq!(w["status"], "shutdown_pending", "{w}");
    assert_eq!(w["shutdownRequested"], true, "{w}");
    assert!(w["currentTurn"].is_string(), "{w}");
    env.ok(&["kill", "w"]);
    let w = env.member("w");
    assert_eq!(w["status"], "stopped", "{w}");
    for field in ["pid", "currentTurn", "turnStartedAt", "currentTask"] {
        assert!(w[field].is_null(), "{field}: {w}");
    }
    let table = env.ok(&["status"]);
    let row = table.lines().find(|l| l.starts_with("w ")).unwrap();
    assert!(!row.contains("work"), "the last turn is shown: {table}");
}

/// Issue 11.21: `interrupt` with no turn running is like `kill` of a stopped teammate: nothing
/// to do, said, exit 0 (also for a stopped teammate).
#[test]
fn interrupt_without_a_turn_is_a_no_op_like_kill_of_a_stopped_teammate() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "cat")]);
    wait_until("w idle", T, || env.member_status("w") == "idle");
    let out = env.ok(&["interrupt", "w"]);
    assert!(out.contains("no turn running"), "{out}");
    assert!(json(&env.ok(&["--json", "interrupt", "w"]))["interrupted"].is_null());
    env.ok(&["kill", "w"]);
    assert!(env.ok(&["kill", "w"]).contains("nothing to kill"));
    assert!(env.ok(&["interrupt", "w"]).contains("is not running"));
}

/// Issue 11.21: with TEAMCTL_HOME (or TEAMCTL_AGENT_NAME) exported, usage lines do not show
/// `--home` / `--as` as if required, and bare `teamctl` prints the help without the hidden
/// subcommands.
#[test]
fn usage_lines_and_bare_teamctl_with_the_variables_exported() {
    let env = TestEnv::new();
    let out = env
        .cmd(&["shutdown"])
        .env("TEAMCTL_AGENT_NAME", "team-lead")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let usage = err.lines().find(|l| l.starts_with("Usage:")).unwrap_or("");
    assert_eq!(usage, "Usage: teamctl shutdown <NAME|--all>", "{err}");
    let bare = env.fails(&[], 2);
    assert!(bare.contains("Commands:"), "{bare}");
    assert!(bare.contains("shutdown"), "{bare}");
    assert!(!bare.contains("worker"), "{bare}");
    assert!(!bare.contains("__complete"), "{bare}");
    // The variables still stand in for the options.
    env.ok(&["create", "alpha"]);
    let out = env
        .cmd(&["status"])
        .env("TEAMCTL_TEAM", "nope")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"nope\""));
    let out = env
        .cmd(&["kill", "x"])
        .env("TEAMCTL_AGENT_NAME", "bob")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"bob\""));
}

/// `teamctl __complete -- WORDS`: the candidates, after the marker that leads every answer
/// (exit 0).
fn complete(env: &TestEnv, words: &[&str]) -> Vec<String> {
    let mut all = vec!["__complete", "--"];
    all.extend_from_slice(words);
    let out = env.ok(&all);
    let mut lines = out.lines().map(String::from);
    assert_eq!(
        lines.next().as_deref(),
        Some("#teamctl-complete 1"),
        "{words:?}: {out}"
    );
    lines.collect()
}

/// A word offers what its command would take there (QA): `resume` the teammates that are not
/// running, `task claim` the tasks the one claiming may claim (not one someone else has, or
/// one blocked), `spawn --worktree` the branches of the repository it is run in.
#[test]
fn completion_offers_what_the_command_would_take() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat"), ("bea", "cat"), ("cid", "cat")]);
    env.ok(&["kill", "bea"]);
    env.ok(&["kill", "cid"]);
    assert_eq!(complete(&env, &["resume", ""]), ["bea", "cid"]);
    assert_eq!(complete(&env, &["resume", "cid", ""]), ["bea"]);
    assert!(complete(&env, &["resume", "bo"]).is_empty());
    env.ok(&["task", "add", "bob's"]);
    env.ok(&["--as", "bob", "task", "claim", "1"]);
    env.ok(&["task", "add", "free"]);
    env.ok(&["task", "add", "blocked", "--blocked-by", "2"]);
    env.ok(&["task", "add", "done"]);
    env.ok(&["task", "done", "4"]);
    assert_eq!(complete(&env, &["task", "claim", ""]), ["2"]);
    assert_eq!(complete(&env, &["--as", "bob", "task", "claim", ""]), ["2"]);
    assert_eq!(complete(&env, &["task", "done", ""]), ["1", "2", "3"]);
    // The branches of the repository the command runs in; none outside one.
    assert!(complete(&env, &["spawn", "x", "--worktree", ""]).is_empty());
    let repo = env.work.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "first"]);
    git(&["branch", "feature/x"]);
    git(&["branch", "fix"]);
    // A name bash would run on Enter, put in as it is (attacker QA 47): never offered.
    git(&["branch", "feat$(touch${IFS}pwned)"]);
    git(&["branch", "fix;id"]);
    // One that reads as an option: `--exec=...` on the line is spawn's (attacker QA 48).
    git(&["update-ref", "refs/heads/--exec=/tmp/x", "HEAD"]);
    let in_repo = |words: &[&str]| -> Vec<String> {
        let mut all = vec!["__complete", "--"];
        all.extend_from_slice(words);
        let out = env.cmd(&all).current_dir(&repo).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(String::from)
            .collect()
    };
    // Not `main`, checked out in the repository: git refuses it a second worktree.
    assert_eq!(
        in_repo(&["spawn", "x", "--worktree", ""]),
        ["feature/x", "fix"]
    );
    assert_eq!(
        in_repo(&["spawn", "x", "--worktree=f"]),
        ["--worktree=feature/x", "--worktree=fix"]
    );
    // `--cwd` on the line names the repository.
    let cwd = repo.to_str().unwrap();
    assert_eq!(
        complete(&env, &["spawn", "x", "--cwd", cwd, "--worktree", "fe"]),
        ["feature/x"]
    );
    // As typed, before the shell expands it (new-user QA 47): `~` and quotes.
    let home_words = ["spawn", "x", "--cwd", "~/repo", "--worktree", "fe"];
    let mut all = vec!["__complete", "--"];
    all.extend_from_slice(&home_words);
    let out = env.cmd(&all).env("HOME", env.work.path()).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "#teamctl-complete 1\nfeature/x\n"
    );
    let quoted = format!("'{cwd}'");
    assert_eq!(
        complete(&env, &["spawn", "x", "--cwd", &quoted, "--worktree", "fe"]),
        ["feature/x"]
    );
    // A git that does not answer is given up on (attacker QA 47: a config `include.path`
    // naming a FIFO hung Tab until Ctrl-C): nothing offered, and the answer comes.
    let fifo = env.work.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    git(&["config", "include.path", fifo.to_str().unwrap()]);
    let mut all = vec!["__complete", "--"];
    all.extend_from_slice(&["spawn", "x", "--cwd", cwd, "--worktree", "fe"]);
    let out = crate::common::ends_within(env.cmd(&all), Duration::from_mins(1));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "#teamctl-complete 1\n"
    );
    env.ok(&["kill", "bob"]);
}

/// A name is offered where the command acts on it (new-user QA 47): `attach` a teammate in a
/// pane, `kill`/`interrupt`/`shutdown` one running (a stopped one too for a `shutdown
/// --remove-worktree`), no name beside `--all`; `--owner` the leader too; `--blocked-by` the
/// next id of a list.
#[test]
fn completion_offers_a_name_where_the_command_acts_on_it() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "pan", "--exec", "cat"]);
    env.ok(&["spawn", "pro", "--backend", "process", "--exec", "cat"]);
    env.ok(&["spawn", "off", "--backend", "process", "--exec", "cat"]);
    env.ok(&["spawn", "gone", "--exec", "cat"]);
    let repo = crate::lifecycle::repo(&env);
    crate::security::spawn_in_worktree(&env, "wt", &repo);
    env.ok(&["kill", "off", "gone", "wt"]);
    let c = |words: &[&str]| complete(&env, words);
    assert_eq!(c(&["attach", ""]), ["pan"]);
    for cmd in ["kill", "interrupt", "shutdown"] {
        assert_eq!(c(&[cmd, ""]), ["pan", "pro"], "{cmd}");
    }
    assert_eq!(c(&["kill", "pro", ""]), ["pan"]);
    // Stopped ones with a worktree to remove too (new-user QA 48: every stopped one, and
    // those whose tree was removed already).
    assert_eq!(
        c(&["shutdown", "--remove-worktree", "pan", ""]),
        ["pro", "wt"]
    );
    crate::security::spawn_in_worktree(&env, "gone2", &repo);
    env.ok(&["kill", "gone2"]);
    env.ok(&["shutdown", "gone2", "--remove-worktree"]);
    assert_eq!(
        c(&["shutdown", "--remove-worktree", "pan", ""]),
        ["pro", "wt"]
    );
    assert_eq!(c(&["resume", ""]), ["off", "gone", "wt", "gone2"]);
    assert_eq!(
        c(&["wait", ""]),
        ["pan", "pro", "off", "gone", "wt", "gone2"]
    );
    assert!(c(&["shutdown", "--all", ""]).is_empty());
    assert!(c(&["wait", "--all", ""]).is_empty());
    assert_eq!(
        c(&["task", "add", "x", "--owner", ""]),
        ["team-lead", "pan", "pro", "off", "gone", "wt", "gone2"]
    );
    for t in ["one", "two", "three"] {
        env.ok(&["task", "add", t]);
    }
    assert_eq!(
        c(&["task", "add", "x", "--blocked-by", "1,"]),
        ["1,2", "1,3"]
    );
    assert_eq!(
        c(&["task", "update", "3", "--blocked-by", "2,1,"]),
        ["2,1,3"]
    );
    assert_eq!(
        c(&["task", "add", "x", "--blocked-by=3,"]),
        ["--blocked-by=3,1", "--blocked-by=3,2"]
    );
    // bash's words for `--blocked-by=1,`.
    assert_eq!(
        c(&["task", "add", "x", "--blocked-by", "=", "1,"]),
        ["1,2", "1,3"]
    );
    // A tmux server that does not answer (stopped) hangs no Tab (attacker QA 48): the word is
    // left to the static completion (exit 1).
    let server: i32 = env
        .tmux_ok(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    let server = nix::unistd::Pid::from_raw(server);
    nix::sys::signal::kill(server, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // The server is let go on whether the completion ends or not.
    let out = std::panic::catch_unwind(|| {
        crate::common::ends_within(
            env.cmd(&["__complete", "--", "kill", ""]),
            Duration::from_mins(1),
        )
    });
    nix::sys::signal::kill(server, nix::sys::signal::Signal::SIGCONT).unwrap();
    let out = out.unwrap_or_else(|e| std::panic::resume_unwind(e));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    env.ok(&["shutdown", "--all", "--force"]);
}

/// Issue 11.21: teammate names, task ids, team names and option values complete from the
/// current team (`teamctl __complete`, which the shell scripts call).
#[test]
fn completion_candidates_come_from_the_current_team() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat"), ("bea", "cat")]);
    env.ok(&["task", "add", "one"]);
    env.ok(&["task", "add", "two"]);
    let c = |words: &[&str]| complete(&env, words);
    assert_eq!(c(&["kill", ""]), ["bob", "bea"]);
    // A teammate's own log: teammates only, the leader has none (QA 13: file names).
    assert_eq!(c(&["log", "--worker", ""]), ["bob", "bea"]);
    assert_eq!(c(&["send", ""]), ["team-lead", "bob", "bea", "*"]);
    assert_eq!(c(&["ask", "bo"]), ["bob"]);
    // A name already given is not offered again (QA: `kill bob <Tab>` offered bob).
    assert_eq!(c(&["wait", "bob", ""]), ["bea"]);
    assert_eq!(c(&["kill", "bea", ""]), ["bob"]);
    assert_eq!(c(&["shutdown", "bob", "--reason", "r", "b"]), ["bea"]);
    assert!(c(&["interrupt", "bob", "bea", ""]).is_empty());
    // Only teammates whose plan waits for an answer (second new-user pass: all were offered).
    assert!(c(&["plan", "approve", ""]).is_empty());
    env.ok(&[
        "spawn",
        "pia",
        "--backend",
        "process",
        "--exec",
        "cat",
        "--plan-mode-required",
        "--plan",
        "echo my plan",
    ]);
    env.ok(&["send", "pia", "job"]);
    crate::common::wait_until(
        "pia awaits approval",
        std::time::Duration::from_secs(30),
        || env.member_status("pia") == "awaiting_plan_approval",
    );
    assert_eq!(c(&["plan", "approve", ""]), ["pia"]);
    assert_eq!(c(&["plan", "reject", ""]), ["pia"]);
    env.ok(&["kill", "pia"]);
    assert_eq!(c(&["task", "done", ""]), ["1", "2"]);
    assert_eq!(c(&["task", "add", "x", "--blocked-by", ""]), ["1", "2"]);
    assert_eq!(c(&["log", "--from", "b"]), ["bob", "bea"]);
    assert_eq!(c(&["status", "--team", ""]), ["alpha"]);
    assert_eq!(c(&["--color", "a"]), ["auto", "always"]);
    assert!(c(&["spawn", "--color", ""]).contains(&"blue".to_string()));
    // Where the static completion knows best (options, subcommands, file names): nothing,
    // exit 1, which the scripts take for "complete as the generated script does".
    for words in [
        &["kill", "--"][..],
        &["sta"],
        &["send", "bob", "-"],
        &["spawn", "x", "--backend", ""],
    ] {
        let mut all = vec!["__complete", "--"];
        all.extend_from_slice(words);
        assert!(env.fails(&all, 1).is_empty(), "{words:?}");
    }
    // A team file, a directory: exit 4 and 3, which the scripts complete with the shell's
    // own means (QA: every file was offered).
    for (words, code) in [
        (&["up", ""][..], 4),
        (&["down", "t"], 4),
        (&["spawn", "x", "--cwd", ""], 3),
        (&["--home", "/t"], 3),
    ] {
        let mut all = vec!["__complete", "--"];
        all.extend_from_slice(words);
        assert!(env.fails(&all, code).is_empty(), "{words:?}");
    }
    // Free text, a new name, or no argument left: nothing at all, exit 0 (no file names).
    assert!(c(&["spawn", ""]).is_empty());
    // Free text as an option's value too (QA: `--summary <Tab>` offered files).
    assert!(c(&["send", "bob", "--summary", ""]).is_empty());
    assert!(c(&["spawn", "x", "--exec", ""]).is_empty());
    // clap's values for a positional, `help`'s subcommands (fish offered files for both).
    assert_eq!(c(&["completions", "z"]), ["zsh"]);
    assert_eq!(c(&["help", "sta"]), ["status"]);
    assert_eq!(c(&["help", "task", "c"]), ["claim"]);
    assert!(c(&["send", "bob", ""]).is_empty());
    assert!(c(&["status", ""]).is_empty());
    // A word the team fills, with none left to offer: nothing at all too.
    assert!(c(&["kill", "zz"]).is_empty());
    // Another home or team given on the line is the one asked.
    let other = TestEnv::new();
    other.ok(&["create", "gamma"]);
    other.ok(&["spawn", "zed", "--backend", "process", "--exec", "cat"]);
    let home = other.home_path().to_str().unwrap();
    assert_eq!(c(&["--home", home, "kill", ""]), ["zed"]);
    other.ok(&["kill", "zed"]);
    env.ok(&["kill", "bob"]);
    env.ok(&["kill", "bea"]);
}

/// `ask` reads its question from stdin when TEXT is absent, as `send` does (its error said
/// so already); an input over the message limit is refused without being read whole.
#[test]
fn ask_reads_the_question_from_stdin_and_refuses_a_huge_one() {
    use std::io::Write;
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "echo \"bob got: $(cat)\"",
    ]);
    let ask = |input: Vec<u8>| {
        let mut child = env
            .cmd(&["ask", "bob", "--timeout", "30"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // A refused input may close the pipe before all of it is written.
        let _ = stdin.write_all(&input);
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let out = ask(b"a question\non two lines\n".to_vec());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "bob got: a question\non two lines"
    );
    // Once bob is idle his inbox no longer changes (the reply and the cursor came first).
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let bobs = env.team_dir("alpha").join("inboxes/bob");
    let before = crate::common::snapshot(&bobs);
    let out = ask(vec![b'x'; 3 * 1024 * 1024]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("limit"));
    assert_eq!(before, crate::common::snapshot(&bobs));
}

/// `spawn --turn-timeout` takes a duration as `up`'s file does (`10m`), or seconds.
#[test]
fn turn_timeouts_take_durations_like_the_team_file() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    for (name, given, secs) in [("a", "10m", 600), ("b", "90", 90), ("c", "1h 30m", 5400)] {
        env.ok(&[
            "spawn",
            name,
            "--backend",
            "process",
            "--exec",
            "cat",
            "--turn-timeout",
            given,
        ]);
        let cfg: serde_json::Value = serde_json::from_slice(
            &std::fs::read(env.team_dir("alpha").join("config.json")).unwrap(),
        )
        .unwrap();
        let m = cfg["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap();
        assert_eq!(m["turnTimeoutSecs"], secs, "{given}");
    }
    let err = env.fails(
        &[
            "spawn",
            "d",
            "--exec",
            "cat",
            "--turn-timeout",
            "ten minutes",
        ],
        2,
    );
    assert!(err.contains("duration"), "{err}");
}

/// A stopped tmux teammate shows no pane: its pane was closed (new-user QA: `status` showed
/// the closed `%N`).
#[test]
fn a_stopped_tmux_teammate_shows_no_pane() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "w", "--backend", "tmux", "--exec", "cat"]);
    wait_until("w idle", T, || env.member_status("w") == "idle");
    assert!(env.member("w")["paneId"].is_string());
    env.ok(&["kill", "w"]);
    let w = env.member("w");
    assert_eq!(w["status"], "stopped", "{w}");
    assert!(w["paneId"].is_null(), "{w}");
}

/// `wait --all` waits for every teammate (a slow one included); `wait` with no one named says
/// in its usage line that `--all` is the other choice (as `shutdown` does).
#[test]
fn wait_all_waits_for_every_teammate_and_usage_names_all() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[("quick", "cat"), ("slow", "read x; sleep 1; echo done")],
    );
    env.ok(&["send", "*", "go"]);
    env.ok(&["wait", "--all", "--timeout", "30"]);
    for name in ["quick", "slow"] {
        assert_eq!(env.member_status(name), "idle");
        assert_eq!(env.member(name)["unread"], 0, "{name} has unread mail");
    }
    let replies: Vec<_> = env
        .inbox("alpha", "team-lead")
        .into_iter()
        .filter(|m| m["type"] == "message")
        .collect();
    assert!(replies.iter().any(|m| m["text"] == "done\n"), "{replies:?}");
    let err = env.fails(&["wait"], 2);
    assert!(err.contains("Usage: teamctl wait <NAMES|--all>"), "{err}");
    let err = env.fails(&["wait", "quick", "--all"], 2);
    assert!(err.contains("cannot be used with"), "{err}");
}

/// A team name that differs from one of this home only in case or look-alike letters gets a
/// "did you mean" (creating it would be refused as too like the other), not "create it".
/// Another name: `status` (which only looks at a team that exists) lists the teams here, and
/// `spawn` (a command that would make the team's first teammate) still says how to create it.
#[test]
fn a_look_alike_team_name_is_answered_with_the_team_meant() {
    let env = TestEnv::new();
    env.ok(&["create", "beta"]);
    let err = env.fails(&["--team", "Beta", "status"], 2);
    assert!(err.contains("did you mean \"beta\""), "{err}");
    assert!(!err.contains("teamctl create"), "{err}");
    let err = env.fails(&["--team", "gamma", "status"], 2);
    assert!(err.contains("the teams here: beta"), "{err}");
    assert!(!err.contains("teamctl create"), "{err}");
    let err = env.fails(&["--team", "gamma", "spawn", "bob", "--exec", "cat"], 2);
    assert!(err.contains("teamctl create gamma"), "{err}");
}

/// A recipient that is not a member is refused before the message is read from stdin: typed
/// or piped text is not swallowed by a typo (QA, twelfth session). `send` here is left with
/// its stdin open and nothing written: it must answer at once, not wait for the text.
#[test]
fn a_misspelt_recipient_is_refused_before_stdin_is_read() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let mut child = env
        .cmd(&["send", "bbo"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut done = None;
    wait_until("send refused the name with its stdin still open", T, || {
        done = child.try_wait().unwrap();
        done.is_some()
    });
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(done.unwrap().code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no member \"bbo\""), "{err}");
    assert!(err.contains("bob"), "the members are named: {err}");
}

/// A failed or interrupted turn says so in the teammate's own log, after its output (new-user
/// QA 45: the log showed the output of a turn that had failed and nothing saying it failed).
#[test]
fn a_failed_or_interrupted_turn_says_so_in_the_teammates_log() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[
            ("bob", "echo partial; echo oops >&2; exit 3"),
            ("amy", "echo started; while :; do sleep 0.05; done"),
        ],
    );
    let err = env.fails(&["ask", "bob", "hi"], 1);
    assert!(
        err.contains(
            "bob's turn failed (exit status 3: oops); what it printed is in `teamctl log --worker bob`"
        ),
        "{err}"
    );
    let log = env.ok(&["log", "--worker", "bob"]);
    let told = log.find("the turn failed (exit status 3)").expect(&log);
    assert!(log.find("partial").is_some_and(|p| p < told), "{log}");

    env.ok(&["send", "amy", "go"]);
    wait_until("amy's turn started", T, || {
        env.ok(&["log", "--worker", "amy"]).contains("started")
    });
    env.ok(&["interrupt", "amy"]);
    wait_until("amy's log says it was interrupted", T, || {
        env.ok(&["log", "--worker", "amy"])
            .contains("the turn was interrupted (teamctl interrupt)")
    });
    let log = env.ok(&["log", "--worker", "amy"]);
    assert!(!log.contains("the turn failed"), "{log}");

    // A turn past its timeout: said as it is ended, and closed as the others.
    env.ok(&[
        "spawn",
        "cid",
        "--backend",
        "process",
        "--turn-timeout",
        "1",
        "--exec",
        "sleep 30",
    ]);
    env.fails(&["ask", "cid", "hi"], 1);
    let log = env.ok(&["log", "--worker", "cid"]);
    let ending = log.find("turn timed out after").expect(&log);
    assert!(
        log.find("the turn failed (timed out)")
            .is_some_and(|p| p > ending),
        "{log}"
    );
}

/// A teammate's own log (its worker's notes, its turns' output, timeouts and warnings) is
/// `log --worker NAME`, followed with `-f`; `log NAME`, what a user tries first, says so
/// (papercut: the log was reachable only as a file under the home).
#[test]
fn a_teammates_own_log_is_log_worker_and_log_name_points_to_it() {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let env = TestEnv::new();
    team_with(&env, &[("bob", "echo \"bob says: $(cat)\"")]);
    assert_eq!(env.ok(&["ask", "bob", "hello"]).trim(), "bob says: hello");
    let log = env.ok(&["log", "--worker", "bob"]);
    assert!(log.contains("bob says: hello"), "{log}");
    assert!(log.contains("<- team-lead: hello"), "{log}");
    let err = env.fails(&["log", "bob"], 2);
    assert!(err.contains("teamctl log --worker bob"), "{err}");
    assert!(err.contains("--from bob"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let err = env.fails(&["log", "--worker", "nobody"], 2);
    assert!(err.contains("no member \"nobody\""), "{err}");
    let err = env.fails(&["log", "--worker", "team-lead"], 2);
    assert!(err.contains("no worker"), "{err}");
    // `-f`: what is there, then what the next turn writes.
    let mut child = env
        .cmd(&["log", "--worker", "bob", "-f"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let mut out = child.stdout.take().unwrap();
    let into = seen.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    wait_until("log -f shows what is there", T, || {
        seen.lock().unwrap().contains("bob says: hello")
    });
    env.ok(&["ask", "bob", "again"]);
    wait_until("log -f shows the next turn", T, || {
        seen.lock().unwrap().contains("bob says: again")
    });
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    let text = seen.lock().unwrap().clone();
    assert_eq!(text.matches("bob says: hello").count(), 1, "{text}");
}

/// A symbolic link (or a FIFO) where a teammate's log should be is named as what it is, and
/// nothing is read through it; not "no log yet" (attacker QA).
#[test]
fn log_worker_names_a_link_in_place_of_the_log_and_reads_nothing_through_it() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["kill", "bob"]);
    let logs = env.team_dir("alpha").join("logs");
    let secret = env.work.path().join("secret");
    std::fs::write(&secret, "do not show\n").unwrap();
    let log = logs.join("bob.log");
    let _ = std::fs::remove_file(&log);
    std::os::unix::fs::symlink(&secret, &log).unwrap();
    let err = env.fails(&["log", "--worker", "bob"], 1);
    assert!(err.contains("not a regular file"), "{err}");
    std::fs::remove_file(&log).unwrap();
    nix::unistd::mkfifo(&log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let err = env.fails(&["log", "--worker", "bob"], 1);
    assert!(err.contains("not a regular file"), "{err}");
}

/// `inbox NAME --peek` shows exactly the messages `status` counts unread for NAME (those past
/// its worker's cursor), however often, and moves nothing (QA: peek kept a position of its
/// own, so after bob had handled mail it showed that mail again and disagreed with status).
#[test]
fn peek_shows_what_status_counts_unread_and_moves_nothing() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat"), ("amy", "cat")]);
    // bob handles a message: his worker's cursor moves past it.
    assert_eq!(env.ok(&["ask", "bob", "handled"]).trim(), "handled");
    env.ok(&["shutdown", "bob"]);
    // A teammate's mail does not resume a teammate the leader stopped: it stays unread.
    for i in 1..=3 {
        env.ok(&["--as", "amy", "send", "bob", &format!("unread {i}")]);
    }
    let unread = || env.member("bob")["unread"].as_u64().unwrap();
    assert_eq!(unread(), 3);
    assert_eq!(env.member_status("bob"), "stopped");
    let before = crate::common::snapshot(env.home_path());
    for _ in 0..2 {
        let shown: Vec<String> = json(&env.ok(&["--json", "inbox", "bob", "--peek"]))
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                m["text"]
                    .as_str()
                    .unwrap_or(&m["type"].to_string())
                    .to_string()
            })
            .collect();
        assert_eq!(shown, ["unread 1", "unread 2", "unread 3"]);
        // The text view too, as amy (a teammate may look), with or without --peek: a
        // teammate's inbox has nothing of `inbox`'s to mark read.
        for peek in [&["--peek"][..], &[]] {
            let text = env.ok(&[&["--as", "amy", "inbox", "bob"][..], peek].concat());
            assert!(!text.contains("handled"), "{text}");
            assert_eq!(text.matches("unread ").count(), 3, "{text}");
        }
    }
    // The leader's mail is another matter: reading it without --peek would mark it read.
    let err = env.fails(&["--as", "amy", "inbox", "team-lead"], 2);
    assert!(err.contains("cannot mark team-lead's mail read"), "{err}");
    assert!(
        crate::common::snapshot(env.home_path()) == before,
        "peek changed a file"
    );
    assert_eq!(unread(), 3);
    assert_eq!(env.member_status("bob"), "stopped");
}

/// Refusals that say what to do: a zero turn timeout says it must be at least 1 second (in
/// `spawn` and in `up`'s file), `ask '*'` that ask takes one teammate and `send '*'` writes to
/// everyone.
#[test]
fn a_zero_turn_timeout_and_ask_to_everyone_say_what_to_do() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    for zero in ["0", "0s"] {
        let err = env.fails(
            &[
                "spawn",
                "bob",
                "--backend",
                "process",
                "--exec",
                "cat",
                "--turn-timeout",
                zero,
            ],
            2,
        );
        assert!(err.contains("at least 1 second"), "{err}");
    }
    let err = env.fails(
        &[
            "spawn",
            "bob",
            "--backend",
            "process",
            "--exec",
            "cat",
            "--max-turns",
            "0",
        ],
        2,
    );
    assert!(err.contains("--max-turns must be at least 1"), "{err}");
    let file = env.work.path().join("zero.toml");
    for zero in ["0", "\"0s\""] {
        std::fs::write(
            &file,
            format!(
                "name = \"alpha\"\n[[member]]\nname = \"x\"\nexec = \"cat\"\nbackend = \"process\"\nturn-timeout = {zero}\n"
            ),
        )
        .unwrap();
        let err = env.fails(&["up", file.to_str().unwrap()], 2);
        assert!(err.contains("at least 1 second"), "{err}");
    }
    let err = env.fails(&["ask", "*", "hi"], 2);
    assert!(err.contains("one teammate"), "{err}");
    assert!(err.contains("teamctl send '*'"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// A teammate's inbox seen by the leader is what the teammate has not read, as `status`
/// counts it, in every view: `inbox bob`, `--peek` and `--type` agree, and none of them moves
/// bob's worker, which still gets the mail (QA: plain `inbox bob` and `--type` started at an
/// `inbox` cursor of their own and showed mail bob had handled and shutdowns he answered).
#[test]
fn every_view_of_a_teammates_inbox_shows_what_it_has_not_read() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat"), ("amy", "cat")]);
    assert_eq!(env.ok(&["ask", "bob", "handled"]).trim(), "handled");
    env.ok(&["shutdown", "bob"]);
    // The leader's mail resumes bob: he handles it, then answers a second shutdown.
    env.ok(&["send", "bob", "waits"]);
    let unread = || env.member("bob")["unread"].as_u64().unwrap();
    // Handled before the shutdown, which a worker would answer ahead of it.
    wait_until("bob handles waits", T, || {
        env.member_status("bob") == "idle" && unread() == 0
    });
    env.ok(&["shutdown", "bob"]);
    env.ok(&["--as", "amy", "send", "bob", "unread-1"]);
    assert_eq!(unread(), 1);
    let texts = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--json", "inbox", "bob"];
        all.extend_from_slice(args);
        json(&env.ok(&all))
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                m["text"]
                    .as_str()
                    .map_or_else(|| m["type"].to_string(), String::from)
            })
            .collect()
    };
    for _ in 0..2 {
        assert_eq!(texts(&[]), ["unread-1"], "inbox bob");
        assert_eq!(texts(&["--peek"]), ["unread-1"], "inbox bob --peek");
        assert_eq!(
            texts(&["--type", "message"]),
            ["unread-1"],
            "--type message"
        );
        let text = env.ok(&["inbox", "bob"]);
        assert!(
            !text.contains("handled") && !text.contains("shutdown"),
            "{text}"
        );
        assert_eq!(unread(), 1, "the leader's look marks nothing of bob's");
    }
    // bob's worker still gets it.
    env.ok(&["resume", "bob"]);
    wait_until("bob handles unread-1", T, || {
        env.ok(&["log", "--worker", "bob"]).contains("unread-1") && unread() == 0
    });
    let out = env.run(&["--json", "inbox", "bob"]);
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout)),
        serde_json::json!([])
    );
}

/// `log WORD` names `log --worker WORD` only when WORD is a member and no `--worker` was
/// given (QA 13: `log --worker bob extra` pointed to extra's log, `log 10` to a member 10).
#[test]
fn log_word_hints_the_worker_log_only_for_a_member_and_no_worker_given() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    let err = env.fails(&["log", "bob"], 2);
    assert!(err.contains("teamctl log --worker bob"), "{err}");
    for (args, word) in [
        (&["log", "--worker", "bob", "extra"][..], "extra"),
        (&["log", "-f", "--worker", "bob", "bob"][..], "bob"),
        (&["log", "10"][..], "10"),
        (&["log", "amy"][..], "amy"),
    ] {
        let err = env.fails(args, 2);
        assert!(
            !err.contains(&format!("--worker {word}")),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains(&format!("{word}'s own log")),
            "{args:?}: {err}"
        );
        assert!(err.contains(word), "{args:?}: {err}");
    }
    let err = env.fails(&["log", "10"], 2);
    assert!(err.contains("log takes no member name"), "{err}");
    let err = env.fails(&["log", "--worker", "bob", "extra"], 2);
    assert!(err.contains("unexpected argument 'extra'"), "{err}");
}

/// `delete WORD` (a first try at removing a team, or one teammate) says how to do either and
/// deletes nothing: the team and its teammate are still there after each.
#[test]
fn delete_word_says_how_to_delete_the_team_or_stop_the_teammate() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    let err = env.fails(&["delete", "alpha"], 2);
    assert!(err.contains("`teamctl delete --team alpha`"), "{err}");
    let err = env.fails(&["delete", "--force", "bob"], 2);
    assert!(err.contains("`teamctl shutdown bob`"), "{err}");
    let err = env.fails(&["delete", "zed"], 2);
    assert!(err.contains("no team or teammate \"zed\""), "{err}");
    let err = env.fails(&["delete", "a/b"], 2);
    assert!(err.contains("not a valid name"), "{err}");
    let status = env.ok(&["status"]);
    assert!(status.contains("bob"), "{status}");
    assert!(env.team_dir("alpha").join("config.json").exists());
}

/// `log --worker NAME` streams a big log (QA 13: a 200 MB log was read whole into memory
/// first), and `-n N` prints only its last N lines first, read from its end (a few MB of
/// lines here; memory and time are not asserted).
#[test]
fn log_worker_streams_a_big_log_and_n_gives_its_last_lines() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    // Stopped: nothing else writes the log.
    env.ok(&["kill", "bob"]);
    let path = env.team_dir("alpha").join("logs").join("bob.log");
    assert!(path.exists(), "{}", path.display());
    // Lines of about 60 bytes, some of them with a character across a 64 KiB boundary.
    let mut big = Vec::new();
    let mut i = 0;
    while big.len() < 3 * 1024 * 1024 {
        big.extend_from_slice(format!("line {i:07} é日本 {}\n", "x".repeat(i % 40)).as_bytes());
        i += 1;
    }
    big.extend_from_slice(b"the last line, no newline");
    std::fs::write(&path, &big).unwrap();
    let all = env.ok(&["log", "--worker", "bob"]);
    // As it is, its last line ended for the terminal (new-user QA 42).
    assert!(
        all.as_bytes().strip_suffix(b"\n") == Some(&big[..]),
        "the whole log, as it is, and a newline"
    );
    let last3 = env.ok(&["log", "--worker", "bob", "-n", "3"]);
    let want: Vec<&str> = std::str::from_utf8(&big)
        .unwrap()
        .lines()
        .rev()
        .take(3)
        .collect();
    assert_eq!(last3.lines().rev().collect::<Vec<_>>(), want, "{last3}");
    assert_eq!(
        env.ok(&["log", "--worker", "bob", "--lines", "1"]),
        "the last line, no newline\n"
    );
    assert_eq!(env.ok(&["log", "--worker", "bob", "-n", "0"]), "");
    // More lines than there are: all of them; in JSON one string a line.
    let json_all = env.ok(&["--json", "log", "--worker", "bob", "-n", "100000000"]);
    assert_eq!(json_all.lines().count(), i + 1);
    assert_eq!(
        json_all.lines().last(),
        Some("\"the last line, no newline\"")
    );
}

/// `shutdown --all` says each thing once and truly (QA 19): a teammate busy in a turn is named
/// as not answering, with the command that ends it by its own name, and not also as "still
/// running at the end (a message resumed it)", which nothing did; one stopped before is said
/// to be already stopped, not stopped again. `shutdown NAME` names it in its hint too.
#[test]
fn shutdown_all_names_a_busy_teammate_once_and_an_already_stopped_one_as_such() {
    let env = TestEnv::new();
    team_with(&env, &[("alice", UNTIL_GO), ("bob", "cat")]);
    env.ok(&["shutdown", "bob", "--timeout", "20"]);
    env.ok(&["send", "alice", "work"]);
    wait_until("alice working", T, || {
        env.member_status("alice") == "working"
    });
    let out = env.run(&["shutdown", "--all", "--timeout", "1"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("bob was already stopped"), "{stdout}");
    assert!(!stdout.contains("bob stopped"), "{stdout}");
    assert!(
        stderr.contains(
            "no shutdown response from alice within 1 s (still in a turn?): the request stands and it stops once it answers"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("`teamctl shutdown --force alice` ends it now"),
        "{stderr}"
    );
    assert!(!stderr.contains("still running at the end"), "{stderr}");
    assert!(!stderr.contains("resumed"), "{stderr}");
    assert!(!stderr.contains("NAME"), "{stderr}");
    let err = env.fails(&["shutdown", "alice", "--timeout", "1"], 1);
    assert!(
        err.contains("`teamctl shutdown --force alice` ends it now"),
        "{err}"
    );
    std::fs::write(env.work.path().join("go"), "").unwrap();
    wait_until("alice stopped", T, || {
        env.member_status("alice") == "stopped"
    });
}

/// The leader's own name (QA 19): `shutdown` and `kill` refuse it in words that fit (not
/// spawn's "use another name") and say what ends the team; `delete team-lead` suggests no
/// command that is refused. `delete` with several words, or a word after `--`, gets the same
/// hint as one word (not clap's bare "unexpected argument"); a misspelt option keeps clap's.
/// Nothing is changed by any of them.
#[test]
fn the_leaders_name_and_extra_delete_words_get_hints_that_fit() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    for args in [&["shutdown", "team-lead"][..], &["kill", "team-lead"]] {
        let err = env.fails(args, 2);
        assert!(err.contains("is the leader, you"), "{args:?}: {err}");
        assert!(err.contains("`teamctl delete`"), "{args:?}: {err}");
        assert!(!err.contains("use another name"), "{args:?}: {err}");
    }
    let err = env.fails(&["delete", "team-lead"], 2);
    assert!(!err.contains("shutdown team-lead"), "{err}");
    assert!(!err.contains("kill team-lead"), "{err}");
    assert!(
        err.contains("`teamctl delete` ends the whole team alpha"),
        "{err}"
    );
    let err = env.fails(&["delete", "my", "team"], 2);
    assert!(err.contains("delete takes no name"), "{err}");
    assert!(
        err.contains("no team or teammate \"my\" or \"team\" here"),
        "{err}"
    );
    let err = env.fails(&["delete", "bob", "alpha"], 2);
    assert!(err.contains("`teamctl shutdown bob`"), "{err}");
    assert!(err.contains("`teamctl delete --team alpha`"), "{err}");
    let err = env.fails(&["delete", "--", "--team"], 2);
    assert!(err.contains("delete takes no name"), "{err}");
    assert!(!err.contains("unexpected argument"), "{err}");
    let err = env.fails(&["delete", "--tema"], 2);
    assert!(err.contains("unexpected argument '--tema'"), "{err}");
    assert!(env.ok(&["status"]).contains("bob"));
    assert!(env.team_dir("alpha").join("config.json").exists());
}

/// Plurals (QA 19): one idle notification left out is "it", not "them".
#[test]
fn one_idle_notification_left_out_is_it() {
    let env = TestEnv::new();
    team_with(&env, &[("w", "echo ok")]);
    env.ok(&["send", "w", "hi"]);
    let idles = || {
        env.inbox("alpha", "team-lead")
            .iter()
            .filter(|m| m["type"] == "idle_notification")
            .count()
    };
    wait_until("the reply and an idle notification", T, || {
        idles() == 1
            && env
                .inbox("alpha", "team-lead")
                .iter()
                .any(|m| m["type"] == "message")
    });
    let out = env.run(&["inbox", "--peek"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("(1 idle notification left out; `--all --type idle_notification` shows it)"),
        "{stderr}"
    );
}

/// `resume` with the leader's name (QA 20) says in its own words that the leader is no
/// teammate to resume and what to do instead (not spawn's "use another name"); a name that
/// only looks like the leader's, `*` and an agent id get words that fit too, an unknown name
/// the members. Nothing is started and nothing changes.
#[test]
fn resume_refuses_the_leader_and_other_names_of_no_teammate_in_words_that_fit() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    env.ok(&["shutdown", "bob", "--force"]);
    let before = std::fs::read(env.team_dir("alpha").join("config.json")).unwrap();
    for name in ["team-lead", "Team-Lead", "team_lead"] {
        let err = env.fails(&["resume", name], 2);
        assert!(
            err.contains("\"team-lead\" is the leader, you, not a teammate to resume"),
            "{name}: {err}"
        );
        assert!(err.contains("`teamctl lead`"), "{name}: {err}");
        assert!(err.contains("`teamctl resume` every one"), "{name}: {err}");
        assert!(!err.contains("use another name"), "{name}: {err}");
        assert!(!err.contains("did you mean"), "{name}: {err}");
        assert_eq!(
            err.contains(&format!("{name:?} is no teammate")),
            name != "team-lead",
            "{name}: {err}"
        );
    }
    // The leader's agent id, of this team or another, in any spelling of the leader's name,
    // gets the leader's words at once (QA 21: it was told `teamctl resume team-lead --team
    // t1`, which was then refused with them).
    for id in ["team-lead@alpha", "team-lead@t1", "Team_Lead@alpha"] {
        let err = env.fails(&["resume", id], 2);
        assert!(
            err.contains(&format!(
                "{id:?} is no teammate; \"team-lead\" is the leader, you, not a teammate to resume"
            )),
            "{id}: {err}"
        );
        assert!(!err.contains("not an agent id"), "{id}: {err}");
        assert!(!err.contains("--team"), "{id}: {err}");
    }
    let err = env.fails(&["resume", "*"], 2);
    assert!(
        err.contains("`teamctl resume` with no name resumes every teammate"),
        "{err}"
    );
    let err = env.fails(&["resume", "bob@alpha"], 2);
    assert!(
        err.contains("not an agent id: `teamctl resume bob --team alpha`"),
        "{err}"
    );
    let err = env.fails(&["resume", "carol"], 2);
    assert!(
        err.contains("no member \"carol\" in team alpha; members: team-lead, bob"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(env.team_dir("alpha").join("config.json")).unwrap(),
        before
    );
    assert_eq!(env.member_status("bob"), "stopped");
}

/// An empty `--team` names no team: refused (exit 2), saying so, for every command, also
/// before the command word; nothing is done. An empty TEAMCTL_TEAM still counts as unset.
/// (New-user QA: `--team=` acted on the team created last, while `--as=` was refused.)
#[test]
fn an_empty_team_option_is_refused_not_taken_for_the_default_team() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for args in [
        &["--team=", "task", "add", "x"][..],
        &["task", "add", "x", "--team", ""],
        &["--team=", "status"],
        &["send", "--team=", "team-lead", "hi"],
        &["--team", " ", "delete", "--force"],
    ] {
        let err = env.fails(args, 2);
        assert!(
            err.contains("--team is empty: name a team"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    let mut c = env.cmd(&["status"]);
    c.env("TEAMCTL_TEAM", "");
    assert!(c.output().unwrap().status.success());
}

/// A message typed unquoted (the shell makes it several words) gets the line with it quoted:
/// `send`, `ask` and `task add`; nothing is sent or added. An option typed wrong keeps clap's
/// own error. (New-user QA: clap's "unexpected argument 'there'" said nothing of quoting.)
#[test]
fn an_unquoted_message_is_refused_with_the_line_quoted() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for (args, hint) in [
        (
            &["send", "team-lead", "hello", "there"][..],
            "the message is one argument: quote it, as 'hello there'",
        ),
        (
            &["send", "*", "it's", "all", "done", "--summary", "s"],
            r"the message is one argument: quote it, as 'it'\''s all done'",
        ),
        (
            &["ask", "bob", "what", "is", "up"],
            "the question is one argument: quote it, as 'what is up'",
        ),
        (
            &["task", "add", "fix", "the", "bug"],
            "the subject is one argument: quote it, as 'fix the bug'",
        ),
    ] {
        let err = env.fails(args, 2);
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    let err = env.fails(&["send", "team-lead", "hi", "--bogus"], 2);
    assert!(!err.contains("quote"), "{err}");
    // `teamctl send * hi` in a directory of files: the shell gave `main.rs notes.txt hi`.
    let here = env.work.path().join("src");
    std::fs::create_dir_all(&here).unwrap();
    for f in ["main.rs", "notes.txt"] {
        std::fs::write(here.join(f), "").unwrap();
    }
    let out = env
        .cmd(&["send", "main.rs", "notes.txt", "hi"])
        .current_dir(&here)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // The files' names are not the message (session 24: it was quoted as 'notes.txt hi').
    assert!(
        err.contains("main.rs, notes.txt are files here: the shell put the names of the files in this directory in place of an unquoted *")
            && err.contains("`teamctl send '*' hi`"),
        "{err}"
    );
    assert_eq!(before, crate::common::snapshot(env.home_path()));
}

/// `task doing 2` (a status word taken for a task command): clap's tip was "done", which
/// would complete it. The hint names the command that marks it in progress, with the id typed.
#[test]
fn a_status_word_as_a_task_command_names_the_command_that_sets_it() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for (args, hint) in [
        (
            &["task", "doing", "2"][..],
            "`teamctl task update 2 --status in_progress` marks it in progress",
        ),
        (
            &["task", "start", "2"][..],
            "`teamctl task update 2 --status in_progress`",
        ),
        (
            &["task", "wip"][..],
            "`teamctl task update ID --status in_progress`",
        ),
        (&["task", "finished", "3"][..], "`teamctl task done 3`"),
        (
            &["task", "todo", "3"][..],
            "`teamctl task update 3 --status pending`",
        ),
    ] {
        let err = env.fails(args, 2);
        assert!(err.contains(hint), "{args:?}: {err}");
        assert!(!err.contains("similar subcommand"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    // Any other word keeps clap's own error.
    let err = env.fails(&["task", "frob", "2"], 2);
    assert!(err.contains("unrecognized subcommand 'frob'"), "{err}");
}

/// Words from other tools as a command (`start bob`, `stop`, `ls`): clap's tip was a look-alike
/// that does something else (new-user QA 45: `start` got "similar: status"); the hint names
/// the commands that do it, and nothing changes. Any other word keeps clap's error.
#[test]
fn a_command_word_from_other_tools_names_the_teamctl_command() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for (args, hint) in [
        (
            &["start", "bob"][..],
            "no command \"start\": `teamctl spawn NAME --exec CMD` starts a new teammate; `teamctl resume NAME`",
        ),
        (
            &["--team", "alpha", "stop", "bob"][..],
            "`teamctl shutdown NAME` asks a teammate to stop",
        ),
        (&["ls"][..], "`teamctl status` lists every member"),
        (&["logs"][..], "`teamctl log` shows every message"),
    ] {
        let err = env.fails(args, 2);
        assert!(err.contains(hint), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    let err = env.fails(&["frobnicate"], 2);
    assert!(
        err.contains("unrecognized subcommand 'frobnicate'"),
        "{err}"
    );
}

/// `send all hi` with no member named all: the error says how to send to everyone (`'*'`),
/// also for `everyone` and `@all`; a member named `all` is sent to as usual.
#[test]
fn sending_to_all_points_at_the_broadcast() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    for to in ["all", "everyone", "@all"] {
        let err = env.fails(&["send", to, "hi"], 2);
        assert!(
            err.contains(&format!("no member {to:?}"))
                && err.contains("to send to everyone use '*' (quoted"),
            "{to}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    // Nothing was sent.
    assert!(env.inbox("alpha", "bob").is_empty());
    env.ok(&["spawn", "all", "--backend", "process", "--exec", "cat"]);
    env.ok(&["send", "all", "hi"]);
    let err = env.fails(&["send", "nobody", "hi"], 2);
    assert!(!err.contains("'*'"), "{err}");
}

/// A command that only acts on an existing team (`delete`, `status`, `shutdown`, `kill`...)
/// given `--team` of no team: says it does not exist and lists the teams there are, with no
/// advice to create it (QA: `--team nope delete` was told `create nope`).
#[test]
fn acting_on_a_team_that_does_not_exist_lists_the_teams_and_never_says_create() {
    let env = TestEnv::new();
    let err = env.fails(&["--team", "nope", "delete"], 2);
    assert!(
        err.contains("no team \"nope\"") && err.contains("there are no teams here"),
        "{err}"
    );
    assert!(!err.contains("create"), "{err}");
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for args in [
        &["--team", "nope", "delete"][..],
        &["--team", "nope", "delete", "--force"][..],
        &["--team", "nope", "status"][..],
        &["--team", "nope", "shutdown", "bob"][..],
        &["--team", "nope", "shutdown", "--all"][..],
        &["--team", "nope", "kill", "bob"][..],
        &["--team", "nope", "resume"][..],
        &["--team", "nope", "inbox"][..],
        &["--team", "nope", "log"][..],
        &["--team", "nope", "task", "list"][..],
        &["--team", "nope", "ask", "bob", "hi"][..],
    ] {
        let err = env.fails(args, 2);
        assert!(
            err.contains("no team \"nope\"")
                && err.contains("the teams here: alpha (pick one with --team)"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("create"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
}

/// The leader's UNREAD in `status` agrees with `inbox`: the messages `inbox` shows, and the
/// idle notifications (which it leaves out) beside them, `(+N idle)`; `--json`'s `unread`
/// still counts both, and `unreadIdle` is added.
#[test]
fn the_leaders_unread_in_status_agrees_with_inbox() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "echo \"re: $TEAMCTL_MESSAGE\"")]);
    env.ok(&["send", "bob", "one"]);
    env.ok(&["send", "bob", "two"]);
    wait_until("bob answered both and is idle", T, || {
        let replies = env
            .inbox("alpha", "team-lead")
            .iter()
            .filter(|m| m["type"] == "message" && m["from"] == "bob")
            .count();
        replies == 2 && env.member_status("bob") == "idle"
    });
    let mail = env.inbox("alpha", "team-lead");
    let idle = mail
        .iter()
        .filter(|m| m["type"] == "idle_notification")
        .count();
    let messages = mail.len() - idle;
    assert!(idle > 0, "{mail:#?}");
    let lead = env.member("team-lead");
    assert_eq!(lead["unread"], mail.len(), "{lead}");
    assert_eq!(lead["unreadIdle"], idle, "{lead}");
    let table = env.ok(&["status"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("team-lead "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains(&format!(" {messages} (+{idle} idle) ")),
        "{table}"
    );
    // The header stays over the column.
    let header = table.lines().nth(1).unwrap();
    assert_eq!(
        header.find("UNREAD").map(|i| i + "UNREAD".len()),
        row.find(" idle)").map(|i| i + " idle)".len()),
        "{table}"
    );
    // `inbox` shows exactly the messages counted, and says the idle ones it left out.
    let out = env.run(&["inbox"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(shown.lines().count(), messages, "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("{idle} idle notification")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.member("team-lead")["unread"], 0);
    let table = env.ok(&["status"]);
    assert!(!table.contains("idle)"), "{table}");
}

/// A worker killed with SIGKILL in the middle of a turn: `status` shows it dead and its turn
/// as interrupted, not as running with a clock (new-user QA); `--json` says `turnInterrupted`.
#[test]
fn a_turn_whose_worker_was_killed_is_shown_interrupted_not_running() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", UNTIL_GO)]);
    env.ok(&["send", "bob", "slow one"]);
    wait_until("bob working", T, || env.member_status("bob") == "working");
    let running = env.ok(&["status"]);
    assert!(!running.contains("interrupted"), "{running}");
    assert!(env.member("bob").get("turnInterrupted").is_none());
    let pid = config_member(&env, "bob")["pid"].as_u64().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until("bob dead", T, || env.member_status("bob") == "dead");
    let table = env.ok(&["status"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("bob "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.ends_with("slow one (interrupted: its worker died)"),
        "{table}"
    );
    let bob = env.member("bob");
    assert_eq!(bob["turnInterrupted"], true, "{bob}");
    assert_eq!(bob["currentTurn"], "slow one", "{bob}");
    // The message its turn handled is unread again.
    assert_eq!(bob["unread"], 1, "{bob}");
    std::fs::write(env.work.path().join("go"), b"").unwrap();
    env.ok(&["delete", "--force"]);
}

/// `task update 1 done` (the status as a word of its own) and `task finish|close 1`: the
/// command that sets it; `task rm|delete|remove 1`: that no command removes a task, and the
/// two that finish it. Each exit 2, one line, nothing changed.
#[test]
fn a_status_after_task_update_and_words_for_finishing_or_removing_name_the_commands() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    env.ok(&["task", "add", "write the report"]);
    let before = crate::common::snapshot(env.home_path());
    for (args, hint) in [
        (
            &["task", "update", "1", "done"][..],
            "unexpected argument \"done\": a new status is given with --status: `teamctl task done 1` marks it completed",
        ),
        (
            &["task", "update", "1", "doing"][..],
            "`teamctl task update 1 --status in_progress` sets it",
        ),
        (
            &["task", "finish", "1"][..],
            "no task command \"finish\": `teamctl task done 1` marks it completed",
        ),
        (&["task", "close", "1"][..], "`teamctl task done 1`"),
    ] {
        let err = env.fails(args, 2);
        assert!(err.contains(hint), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    for word in ["rm", "delete", "remove"] {
        let err = env.fails(&["task", word, "1"], 2);
        assert!(
            err.contains("there is no command that removes a task")
                && err.contains("`teamctl task update 1 --status failed`")
                && err.contains("`teamctl task done 1`"),
            "{word}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
}

/// `status bob`: status takes no name; a member is pointed at its log and messages, a team of
/// this home at `--team`, anything else at both.
#[test]
fn status_with_a_name_says_what_it_takes() {
    let env = TestEnv::new();
    env.ok(&["create", "beta"]);
    let _ = std::fs::remove_file(env.home_path().join("current"));
    team_with(&env, &[]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    env.ok(&["shutdown", "bob"]);
    let before = crate::common::snapshot(env.home_path());
    for (word, hint) in [
        ("bob", "`teamctl log --worker bob` shows bob's own log"),
        ("beta", "`teamctl --team beta status` shows team beta"),
        ("nobody", "`teamctl --team TEAM status` shows another team"),
    ] {
        let err = env.fails(&["status", word], 2);
        assert!(
            err.contains("status takes no name") && err.contains(hint),
            "{word}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
}

/// `send * hi` in a directory of files: the shell made it `send notes.txt hi` (or `send a b
/// hi`), and the refusal said only "no member notes.txt". It now says the shell expanded the
/// unquoted `*` and how to quote it, the text quoted for a shell; nothing is sent. One file
/// may as well be a file's name typed where its contents were meant (new-user QA: told
/// flatly the shell had expanded `*`): that file is said to be no teammate, with how to send
/// its contents.
#[test]
fn a_recipient_that_is_a_file_here_says_the_shell_expanded_the_star() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    let one = env.work.path().join("notes.txt");
    std::fs::write(&one, b"").unwrap();
    let err = env.fails(&["send", "notes.txt", "it's here"], 2);
    assert!(
        err.contains("no member \"notes.txt\"")
            && err.contains("notes.txt is a file here, not a teammate: to send its contents, `teamctl send NAME < notes.txt` (or `teamctl send '*' < notes.txt` to everyone)")
            && err.contains("if you typed an unquoted *, the shell put the names of the files here in its place")
            && err.contains(r"`teamctl send '*' 'it'\''s here'`"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    std::fs::write(env.work.path().join("plan.md"), b"").unwrap();
    let err = env.fails(&["send", "notes.txt", "plan.md", "hi"], 2);
    assert!(
        err.contains("notes.txt, plan.md are files here") && err.contains("`teamctl send '*' hi`"),
        "{err}"
    );
    let err = env.fails(&["send", "notes.txt", "plan.md"], 2);
    assert!(err.contains("`teamctl send '*' TEXT`"), "{err}");
    assert!(env.inbox("alpha", "bob").is_empty());
    // A name that is no member and no file keeps its plain refusal.
    let err = env.fails(&["send", "nobody", "hi"], 2);
    assert!(!err.contains("unquoted"), "{err}");
}

/// `send hi bob` (the text first, the member last): the refusal says the name comes first,
/// as `teamctl send bob hi`, also when the text was several words; nothing is sent.
#[test]
fn a_member_named_last_is_suggested_first() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    let err = env.fails(&["send", "hi", "bob"], 2);
    assert!(
        err.contains("no member \"hi\"")
            && err.contains(
                "bob is a member: the name comes first, then the text: `teamctl send bob hi`"
            ),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let err = env.fails(&["send", "hi", "there", "bob"], 2);
    assert!(err.contains("`teamctl send bob 'hi there'`"), "{err}");
    assert!(env.inbox("alpha", "bob").is_empty());
    // The same for `ask` (new-user QA: `ask hello bob` said only "no member hello").
    let err = env.fails(&["ask", "hello", "bob"], 2);
    assert!(
        err.contains("no member \"hello\"")
            && err.contains(
                "bob is a member: the name comes first, then the question: `teamctl ask bob hello`"
            ),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let err = env.fails(&["ask", "how", "are", "you", "bob"], 2);
    assert!(err.contains("`teamctl ask bob 'how are you'`"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(env.inbox("alpha", "bob").is_empty());
}

/// The text quoted and typed first (`send "hello there" bob`, `ask "how are you" bob`: refused
/// as a name with a space) gets the same way round; the agent's command given as a word after
/// the name (`spawn carol 'echo hi'`, `spawn carol claude`: clap's bare "unexpected argument")
/// says where it goes. Exit 2, one line each, nothing sent or spawned (new-user QA).
#[test]
fn text_first_and_a_bare_command_get_the_line_meant() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    let before = crate::common::snapshot(&env.team_dir("alpha"));
    let err = env.fails(&["send", "hello there", "bob"], 2);
    assert!(
        err.contains("invalid recipient name \"hello there\"")
            && err.contains(
                "bob is a member: the name comes first, then the text: `teamctl send bob 'hello there'`"
            ),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let err = env.fails(&["ask", "how are you", "bob"], 2);
    assert!(
        err.contains("invalid member name \"how are you\"")
            && err.contains("`teamctl ask bob 'how are you'`"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // Text a terminal would obey is not quoted back escaped (pasted, `'a\u{1b}]0;x'` would
    // send other text: attacker QA): it is to be given on stdin.
    for args in [
        &["send", "a\u{1b}]0;x\u{7} b", "bob"][..],
        &["send", "a\u{202e}b", "there", "bob"],
        &["ask", "a\u{1b}[2J", "bob"],
    ] {
        let err = env.fails(args, 2);
        let verb = args[0];
        assert!(
            err.contains(&format!("`teamctl {verb} bob < FILE`")) && !err.contains('\u{1b}'),
            "{err}"
        );
    }
    let err = env.fails(&["send", "bob", "a\u{1b}]0;x", "b"], 2);
    assert!(
        err.contains("the message is one argument: quote it, or give it on stdin (< FILE)"),
        "{err}"
    );
    // Not a member last: the plain refusal.
    let err = env.fails(&["send", "hello there", "nobody"], 2);
    assert!(!err.contains("comes first"), "{err}");
    let err = env.fails(&["spawn", "carol", "echo hi"], 2);
    assert!(
        err.contains("unexpected argument \"echo hi\"")
            && err.contains("--exec 'echo hi'")
            && err.contains("--agent CLI"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // The shell's words of an unquoted command, with options typed before them.
    let err = env.fails(&["spawn", "carol", "--backend", "process", "echo", "hi"], 2);
    assert!(err.contains("--exec 'echo hi'"), "{err}");
    let err = env.fails(&["spawn", "carol", "claude"], 2);
    assert!(
        err.contains("a preset agent is named with --agent: --agent claude"),
        "{err}"
    );
    // The command split by the shell after --exec (clap took `-i` for an option and advised
    // `-- -i`, which spawn refuses): the whole command as one argument.
    for (args, meant) in [
        (
            &["spawn", "carol", "--exec", "echo", "hi"][..],
            "--exec 'echo hi'",
        ),
        (
            &["spawn", "carol", "--exec", "python3", "-i", "--interactive"],
            "--exec 'python3 -i'",
        ),
        (
            &["spawn", "carol", "--exec", "python3", "-i", "-q"],
            "--exec 'python3 -i -q'",
        ),
    ] {
        let err = env.fails(args, 2);
        assert!(
            err.contains(&format!(
                "--exec takes the whole command as one argument: {meant}"
            )) && !err.contains("-- -i"),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    // A preset's line keeps clap's own error.
    let err = env.fails(&["spawn", "carol", "--agent", "claude", "extra"], 2);
    assert!(!err.contains("--exec"), "{err}");
    assert_eq!(crate::common::snapshot(&env.team_dir("alpha")), before);
    assert!(
        env.config("alpha")["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["name"] != "carol")
    );
}

/// Everyone given to `kill` or `shutdown` as a name (new-user QA: `kill --all` got clap's tip
/// `-- --all`, `kill '*'` and `shutdown '*'` "invalid member name", `shutdown all` "no
/// member"): each says what the command takes and how every teammate is stopped (`shutdown
/// --all`, `--force` to kill them), exit 2, one line, nothing changed.
#[test]
fn everyone_given_to_kill_or_shutdown_says_what_they_take() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", Duration::from_secs(20), || {
        env.member_status("bob") == "idle"
    });
    let before = crate::common::snapshot(env.home_path());
    let all = "`teamctl shutdown --all` stops every teammate (each is asked and the answers waited for), `teamctl shutdown --all --force` kills them all without asking";
    for (args, says) in [
        (
            &["kill", "--all"][..],
            "kill takes teammates' names (`teamctl kill NAME...`)",
        ),
        (
            &["kill", "*"],
            "kill takes teammates' names (`teamctl kill NAME...`)",
        ),
        (
            &["kill", "all"],
            "kill takes teammates' names (`teamctl kill NAME...`)",
        ),
        (
            &["shutdown", "*"],
            "shutdown takes teammates' names (`teamctl shutdown NAME...`) or --all",
        ),
        (
            &["shutdown", "everyone"],
            "shutdown takes teammates' names (`teamctl shutdown NAME...`) or --all",
        ),
    ] {
        let err = env.fails(args, 2);
        assert!(err.contains(says) && err.contains(all), "{args:?}: {err}");
        assert!(!err.contains("-- --all"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // An agent id: the name and `--team` (new-user QA: `kill bob@T` said only "invalid
    // member name"); the leader's, the leader's own words.
    let team = env.member("bob")["agentId"]
        .as_str()
        .and_then(|id| id.split_once('@'))
        .map(|(_, t)| t.to_string())
        .unwrap();
    for verb in ["kill", "shutdown", "interrupt"] {
        let err = env.fails(&[verb, &format!("bob@{team}")], 2);
        assert!(
            err.contains(&format!(
                "{verb} takes a teammate's name, not an agent id: `teamctl {verb} bob --team {team}`"
            )),
            "{err}"
        );
        // What is wrong first, not the characters a name may have (QA 36).
        assert!(!err.contains("A-Z a-z"), "{err}");
        let err = env.fails(&[verb, &format!("team-lead@{team}")], 2);
        assert!(
            err.contains("\"team-lead\" is the leader, you, not a teammate to"),
            "{err}"
        );
        // The hint names only a team and a teammate that are there (QA 36).
        let err = env.fails(&[verb, "bob@nope"], 2);
        assert_eq!(
            err.trim_end(),
            format!(
                "teamctl: \"bob@nope\" is an agent id (NAME@TEAM); {verb} takes a teammate's name, and there is no team nope in this home"
            )
        );
        let err = env.fails(&[verb, &format!("carol@{team}")], 2);
        assert!(
            err.starts_with(&format!(
                "teamctl: \"carol@{team}\" is an agent id (NAME@TEAM); {verb} takes a teammate's name; no member \"carol\" in team {team}"
            )),
            "{err}"
        );
        assert!(!err.contains("`teamctl"), "{err}");
    }
    for word in ["bob@nope", "carol@x"] {
        let err = env.fails(&["resume", word], 2);
        assert!(err.contains("resume takes a teammate's name"), "{err}");
        assert!(!err.contains("--team"), "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    assert_eq!(env.member_status("bob"), "idle");
    // A member named so is still the member.
    env.ok(&["spawn", "all", "--backend", "process", "--exec", "cat"]);
    let out = env.ok(&["kill", "all"]);
    assert!(out.contains("all killed"), "{out}");
}

/// `up` and `down` with no team file (new-user QA: `--team nope down` in a directory without
/// `teamctl.toml`, exit 2): a file that is not there is a failure to read it, exit 1, one line
/// naming the file and where it was looked for, and for `up` how one is written, for `down`
/// that `delete` takes a team down without one. `--team` of a team not here is still that
/// (exit 2, the teams listed).
#[test]
fn up_and_down_without_a_team_file_name_it_and_say_what_to_do() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    let here = env.work.path().canonicalize().unwrap();
    for args in [
        &["up"][..],
        &["--team", "alpha", "up"],
        &["--team", "nope", "up"],
    ] {
        let err = env.fails(args, 1);
        assert!(
            err.contains(&format!("no team file teamctl.toml in {}", here.display()))
                && err.contains("`name = \"TEAM\"`, then a `[[member]]`")
                && err.contains("`teamctl up FILE`"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    let err = env.fails(&["--team", "alpha", "down"], 1);
    assert!(
        err.contains(&format!("no team file teamctl.toml in {}", here.display()))
            && err.contains("`teamctl down FILE`")
            && err.contains("`teamctl delete --team alpha`"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let err = env.fails(&["down", "other.toml"], 1);
    assert!(
        err.contains("no team file other.toml in") && err.contains("`teamctl delete --team TEAM`"),
        "{err}"
    );
    let err = env.fails(&["--team", "nope", "down"], 2);
    assert!(err.contains("the teams here: alpha"), "{err}");
    assert_eq!(before, crate::common::snapshot(env.home_path()));
}

/// `--team nope down`, `--team nope send ...`, `--team nope plan ...`: the team that is not
/// here is said so with the teams there are, as for `status` (down said "no team file").
#[test]
fn a_missing_team_before_down_send_or_plan_lists_the_teams() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let before = crate::common::snapshot(env.home_path());
    for args in [
        &["--team", "nope", "down"][..],
        &["--team", "nope", "send", "bob", "hi"][..],
        &["--team", "nope", "send", "*", "hi"][..],
        &["--team", "nope", "plan", "approve", "bob"][..],
    ] {
        let err = env.fails(args, 2);
        assert!(
            err.contains("no team \"nope\"")
                && err.contains("the teams here: alpha (pick one with --team)"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("create"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert_eq!(before, crate::common::snapshot(env.home_path()));
    // A team file that declares that very team: not up, nothing to do.
    std::fs::write(
        env.work.path().join("teamctl.toml"),
        "name = \"nope\"\n\n[[member]]\nname = \"bob\"\nexec = \"cat\"\n",
    )
    .unwrap();
    let out = env.ok(&["--team", "nope", "down"]);
    assert!(out.contains("team nope is not up; nothing to do"), "{out}");
}

/// doctor's inotify line counted the running teammates of the teams there are, not the
/// orphaned workers (their team or home gone) that still hold an instance each (new-user QA).
/// It now says how many there are and that `doctor --fix` ends them; once ended, it says
/// nothing of them.
#[test]
fn doctors_inotify_line_counts_orphaned_workers() {
    let env = TestEnv::new();
    team_with(&env, &[("ghost", "cat")]);
    wait_until("ghost idle", Duration::from_secs(20), || {
        env.member_status("ghost") == "idle"
    });
    let inotify = || -> String {
        let out = env.run(&["--json", "doctor"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "inotify")
            .map(|f| f["message"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };
    assert!(!inotify().contains("orphaned"), "{}", inotify());
    // An idle worker writes nothing more: its team directory can go under it.
    std::fs::remove_dir_all(env.team_dir("alpha")).unwrap();
    let said = inotify();
    assert!(
        said.contains(
            "1 orphaned worker (its team or home gone) holds one; `teamctl doctor --fix` ends it"
        ),
        "{said}"
    );
    let fixed = env.ok(&["doctor", "--fix"]);
    assert!(
        fixed.contains("ended orphaned worker ghost@alpha"),
        "{fixed}"
    );
    assert!(!inotify().contains("orphaned"), "{}", inotify());
}

/// `(pid, ppid)` of every zombie (`<defunct>`) process.
fn zombies() -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
            let state = rest.next()?;
            let ppid = rest.next()?.parse().ok()?;
            (state == "Z").then_some((pid, ppid))
        })
        .collect()
}

/// Ctrl-C in a busy teammate's tmux pane, three times over (resumed in between): once the
/// teammate is stopped, no `<defunct>` process is left whose parent is a teamctl process of
/// this home (a turn's or launcher's, which the worker reaps), and the worker itself, the
/// pane's own process (tmux's child: argv, no shell, no double fork), is reaped by the tmux
/// server. New-user QA saw a defunct worker under the server after such a Ctrl-C: tmux 3.3a
/// sometimes (about one worker in 30 here) misses the SIGCHLD of a pane's process (its pane
/// then reads dead with no exit status) and reaps it only at its next SIGCHLD, which is not
/// teamctl's to change; so when one is left there, the server is sent a SIGCHLD (what its
/// next child's exit would bring) and it must then be gone: nothing of ours keeps it.
#[test]
fn ctrl_c_in_a_busy_pane_leaves_no_defunct_process_of_ours() {
    let env = TestEnv::with_tmux();
    env.ok(&["create", "alpha"]);
    let gate = env.work.path().join("gate");
    let exec = format!(
        "while [ ! -e '{}' ]; do sleep 0.02; done; echo done",
        gate.display()
    );
    env.ok(&["spawn", "bob", "--backend", "tmux", "--exec", &exec]);
    let server: u32 = env
        .tmux_ok(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    let home = env.home_path().display().to_string();
    let teamctls = |ppid: u32| {
        std::fs::read(format!("/proc/{ppid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&home))
    };
    for round in 0..3 {
        let _ = std::fs::remove_file(&gate);
        if round > 0 {
            env.ok(&["resume", "bob"]);
        }
        env.ok(&["send", "bob", "slow"]);
        wait_until("bob working", Duration::from_secs(20), || {
            env.member_status("bob") == "working"
        });
        let pane = env.pane_of("alpha", "bob");
        let worker = env.member("bob")["pid"].as_u64().unwrap() as u32;
        env.tmux_ok(&["send-keys", "-t", &pane, "C-c"]);
        wait_until("bob stopping", Duration::from_secs(20), || {
            env.member("bob")["stopping"].is_string()
        });
        std::fs::write(&gate, b"").unwrap();
        // Ctrl-C in its pane is the user's stop: `stopped`, not `dead` (state25).
        wait_until(
            "bob stopped after its turn",
            Duration::from_secs(20),
            || env.member_status("bob") == "stopped",
        );
        env.ok(&["kill", "bob"]);
        let ours = || -> Vec<(u32, u32)> {
            zombies()
                .into_iter()
                .filter(|(pid, ppid)| *pid == worker || *ppid == server || teamctls(*ppid))
                .collect()
        };
        let unreaped = |left: &[(u32, u32)]| -> Vec<(u32, u32)> {
            left.iter()
                .copied()
                .filter(|(pid, ppid)| !(*pid == worker && *ppid == server))
                .collect()
        };
        // What the worker reaps (its turns, its launcher), and nothing else under the server.
        wait_until_or_show(
            "no defunct child of a teamctl process",
            Duration::from_secs(10),
            || unreaped(&ours()).is_empty(),
            || {
                format!(
                    "round {round}: worker {worker}, server {server}: {:?}",
                    ours()
                )
            },
        );
        if !ours().is_empty() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(server as i32),
                nix::sys::signal::Signal::SIGCHLD,
            );
        }
        wait_until_or_show(
            "the worker reaped by the tmux server",
            Duration::from_secs(10),
            || ours().is_empty(),
            || {
                format!(
                    "round {round}: worker {worker}, server {server}: {:?}",
                    ours()
                )
            },
        );
    }
}

/// A teammate whose worker died: `shutdown` (and `--force`) says it was not running and was
/// marked stopped, as `kill` does (new-user QA 37: "dd stopped", only under `stopped`); `up`
/// of a file that does not name it says it is dead and how to start it, not to shut it down.
/// A refusal says how to end the teammate anyway, and `delete` refused so does not offer a
/// longer wait. `ask bob@alpha` in team alpha asks bob.
#[test]
fn a_dead_or_refusing_teammate_is_said_so_by_shutdown_up_and_delete() {
    let env = TestEnv::new();
    team_with(
        &env,
        &[("bob", "cat"), ("dd", "cat"), ("ee", "cat"), ("up1", "cat")],
    );
    env.ok(&[
        "spawn",
        "r1",
        "--backend",
        "process",
        "--exec",
        "cat",
        "--on-shutdown",
        "echo 'not now'; exit 1",
    ]);
    assert_eq!(env.ok(&["ask", "bob@alpha", "hi"]).trim(), "hi");
    // A --from or --to naming no member shows nothing: refused, with the members.
    for flag in ["--from", "--to"] {
        let err = env.fails(&["log", flag, "nobody"], 2);
        assert!(err.contains("no member \"nobody\" in team alpha"), "{err}");
    }
    assert!(env.ok(&["log", "--from", "bob"]).contains("hi"));
    assert_eq!(env.ok(&["log", "--from", "bob@beta"]), "");
    let other = env.fails(&["ask", "bob@beta", "hi"], 2);
    assert!(other.contains("`teamctl send bob@beta`"), "{other}");
    kill_worker(&env, "dd");
    kill_worker(&env, "ee");
    let file = env.work.path().join("teamctl.toml");
    std::fs::write(
        &file,
        "name = \"alpha\"\n[[member]]\nname = \"bob\"\nbackend = \"process\"\nexec = \"cat\"\n",
    )
    .unwrap();
    let out = env.ok(&["up"]);
    assert!(
        out.contains(
            "dd is in team alpha but not in teamctl.toml; dead, left as it is (`teamctl resume dd` starts it again)"
        ),
        "{out}"
    );
    assert!(out.contains("`teamctl shutdown up1` stops it"), "{out}");
    assert!(!out.contains("`teamctl shutdown dd`"), "{out}");

    let said = env.ok(&["shutdown", "dd"]);
    assert_eq!(said.trim(), "dd was not running (dead); marked stopped");
    // Said as spawn and up say where a teammate went (new-user QA 37: "dd resumed (pid N)").
    let said = env.ok(&["resume", "dd"]);
    assert!(said.starts_with("dd resumed (process, pid "), "{said}");
    kill_worker(&env, "dd");
    let said = json(&env.ok(&["--json", "shutdown", "dd", "bob"]));
    assert_eq!(said["wasDead"], serde_json::json!(["dd"]), "{said}");
    assert_eq!(said["stopped"], serde_json::json!(["dd", "bob"]), "{said}");
    let said = env.ok(&["shutdown", "--force", "ee"]);
    assert_eq!(said.trim(), "ee was not running (dead); marked stopped");

    let err = env.fails(&["shutdown", "r1", "--timeout", "20"], 1);
    assert!(
        err.contains("r1 refused to shut down: not now; `teamctl shutdown --force r1` ends it now"),
        "{err}"
    );
    let err = env.fails(&["delete", "--timeout", "20"], 1);
    assert!(err.contains("r1 refused to shut down: not now"), "{err}");
    assert!(
        err.contains("`teamctl delete --force` ends the rest without asking"),
        "{err}"
    );
    assert!(!err.contains("waits longer"), "{err}");
    env.ok(&["delete", "--force"]);
}

/// A teammate killed while its on-shutdown command runs for a `shutdown` that waits: the
/// command ends with it and its worker answers "refused"; the shutdown says it stopped, exit 0
/// (re-QA 37: "refused ... exited with signal 15", exit 1, with a hint to force a teammate
/// already stopped).
#[test]
fn a_shutdown_whose_teammate_is_killed_meanwhile_says_it_stopped() {
    let env = TestEnv::new();
    let mark = env.work.path().join("hook-runs");
    env.ok(&["create", "alpha"]);
    env.ok(&[
        "spawn",
        "s2",
        "--backend",
        "process",
        "--exec",
        "cat",
        "--on-shutdown",
        &format!("touch '{}'; sleep 60; exit 0", mark.display()),
    ]);
    wait_until("s2 idle", T, || env.member_status("s2") == "idle");
    let shutdown = env
        .cmd(&["shutdown", "s2", "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("s2's on-shutdown command runs", T, || mark.exists());
    assert_eq!(env.ok(&["kill", "s2"]).trim(), "s2 killed");
    let out = shutdown.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}{err}");
    assert_eq!(said.trim(), "s2 stopped", "{err}");
    assert_eq!(env.member_status("s2"), "stopped");
}

/// New-user QA 37: `shutdown --timeout 0` sent the requests, then said nobody answered; now a
/// timeout of 0 is bad input that sends nothing (timeouts take durations, as --turn-timeout
/// does, and `wait --timeout 0` looks once). `shutdown --all` of a team without teammates said
/// nothing; `shutdown b a` said them in the order they answered; `wait --json` of a dead
/// teammate printed nothing on stdout.
#[test]
fn timeouts_of_0_are_refused_and_shutdown_and_wait_say_what_they_did() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let none = env.ok(&["shutdown", "--all"]);
    assert!(none.contains("alpha has no teammates"), "{none}");
    let gate = env.work.path().join("let-b-go");
    env.ok(&["spawn", "a", "--backend", "process", "--exec", "cat"]);
    env.ok(&[
        "spawn",
        "b",
        "--backend",
        "process",
        "--exec",
        "cat",
        "--on-shutdown",
        &format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display()),
    ]);
    for args in [
        &["shutdown", "b", "--timeout", "0"][..],
        &["shutdown", "--all", "--timeout", "0s"],
        &["delete", "--timeout", "0"],
        &["ask", "a", "hi", "--timeout", "0"],
    ] {
        let err = env.fails(args, 2);
        assert!(err.contains("at least 1 second"), "{args:?}: {err}");
    }
    assert!(
        env.inbox("alpha", "b")
            .iter()
            .all(|m| m["type"] != "shutdown_request"),
        "a refused shutdown sent its request"
    );
    assert_eq!(env.ok(&["ask", "a", "hi", "--timeout", "1m"]).trim(), "hi");
    let out = env.ok(&["wait", "a", "b", "--timeout", "0"]);
    assert_eq!(out, "");
    // b answers only once a has stopped: the answers come a, b.
    let shutdown = env
        .cmd(&["shutdown", "b", "a"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = std::thread::spawn(move || shutdown.wait_with_output().unwrap());
    wait_until("a stopped", T, || env.member_status("a") == "stopped");
    std::fs::write(&gate, "").unwrap();
    let out = waiter.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "b stopped\na stopped\n"
    );
    env.ok(&["spawn", "c", "--backend", "process", "--exec", "cat"]);
    kill_worker(&env, "c");
    let out = env.run(&["--json", "wait", "c"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let shown = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(shown["members"][0]["name"], "c");
    assert_eq!(shown["members"][0]["status"], "dead");
    // A look (--timeout 0) at a working and a dead teammate says both (new-user QA 38: the
    // dead one was left out, and the look was called a timeout).
    env.ok(&["spawn", "d", "--backend", "process", "--exec", "sleep 1000"]);
    env.ok(&["send", "d", "work"]);
    wait_until("d working", T, || env.member_status("d") == "working");
    let err = env.fails(&["wait", "c", "d", "--timeout", "0"], 1);
    assert!(
        err.contains("not settled yet: d (working); c died; `teamctl resume c` brings it back"),
        "{err}"
    );
}

/// `resume`, `kill`, `shutdown` and `interrupt` with several names that are no teammate name
/// each of them in the one refusal (new-user QA 41: only the first was named, so the next try
/// met the next), with what each most likely meant; the one teammate named is left as it is.
#[test]
fn several_unknown_names_are_all_named_in_one_refusal() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    for verb in ["resume", "kill", "shutdown", "interrupt"] {
        let err = env.fails(&[verb, "bob", "nosuch1", "bbo", "nosuch1"], 2);
        assert!(
            err.contains(
                "no members \"nosuch1\", \"bbo\" in team alpha (did you mean \"bob\" for \"bbo\"?); members: team-lead, bob"
            ),
            "{verb}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{verb}: {err}");
        assert_eq!(env.member_status("bob"), "idle", "{verb}");
    }
    // Names listed in one word: said how to give them (new-user QA 42).
    for verb in ["resume", "kill", "shutdown", "interrupt"] {
        let err = env.fails(&[verb, "bob,nosuch1"], 2);
        assert!(
            err.contains(&format!(
                "names are separate words: `teamctl {verb} bob nosuch1`"
            )),
            "{verb}: {err}"
        );
    }
    // One unknown name keeps its own words.
    let err = env.fails(&["kill", "bob", "nosuch1"], 2);
    assert!(
        err.contains("no member \"nosuch1\" in team alpha; members: team-lead, bob"),
        "{err}"
    );
}

/// A spelling of the leader's name (`Team-Lead`, `team_lead`) given to `kill`, `shutdown` or
/// `interrupt` gets the leader's words at once, not a suggestion of `team-lead` that is then
/// refused (new-user QA 42); `interrupt` points at a teammate's turn, not at `delete`.
#[test]
fn a_look_alike_of_the_leaders_name_is_refused_as_the_leader() {
    let env = TestEnv::new();
    team_with(&env, &[("bob", "cat")]);
    for verb in ["kill", "shutdown", "interrupt"] {
        for name in ["Team-Lead", "team_lead"] {
            let err = env.fails(&[verb, name], 2);
            assert!(
                err.contains("\"team-lead\" is the leader, you, not a teammate to")
                    && !err.contains("did you mean"),
                "{verb} {name}: {err}"
            );
        }
    }
    let err = env.fails(&["interrupt", "team-lead"], 2);
    assert!(
        err.contains("`teamctl interrupt NAME` ends a teammate's turn") && !err.contains("delete"),
        "{err}"
    );
}
