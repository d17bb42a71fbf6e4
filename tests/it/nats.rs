//! End to end on the NATS store (issue 15): a team made with `create --store nats://...`, its
//! teammates on the process backend, every command through a nats-server of the test's own;
//! the server down; a second home joining the team through `TEAMCTL_STORE`.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::nats::NatsServer;
use crate::common::{TestEnv, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn a_team_on_nats_sends_asks_waits_and_shuts_down() {
    let nats = NatsServer::start();
    let env = TestEnv::new();
    let url = nats.url();
    assert_eq!(
        env.ok(&["create", "alpha", "--store", &url]).trim(),
        "alpha"
    );
    // Remembered in the local team directory (private), nothing else of the team there.
    let pointer = env.team_dir("alpha").join("store.json");
    let mode = std::fs::metadata(&pointer).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!env.team_dir("alpha").join("config.json").exists());
    assert!(!env.team_dir("alpha").join("inboxes").exists());

    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        r#"echo "bob:$(cat)""#,
    ]);
    assert_eq!(
        env.ok(&["ask", "bob", "hello", "--timeout", "20"]).trim(),
        "bob:hello"
    );
    env.ok(&["send", "bob", "one more"]);
    env.ok(&["wait", "bob", "--timeout", "20"]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let inbox = env.ok(&["inbox", "--all"]);
    assert!(inbox.contains("bob:one more"), "{inbox}");

    let status = env.ok(&["status"]);
    assert!(status.contains("bob"), "{status}");
    env.ok(&["shutdown", "bob", "--timeout", "20"]);
    wait_until("bob stopped", T, || env.member_status("bob") == "stopped");

    env.ok(&["delete", "--force"]);
    assert!(!env.team_dir("alpha").exists());
    // The name is free again in NATS.
    assert_eq!(
        env.ok(&["create", "alpha", "--store", &url]).trim(),
        "alpha"
    );
}

#[test]
fn with_the_server_down_send_fails_with_one_clear_line() {
    let mut nats = NatsServer::start();
    let env = TestEnv::new();
    let url = nats.url();
    env.ok(&["create", "alpha", "--store", &url]);
    nats.stop();
    let err = env.fails(&["send", "team-lead", "hello"], 1);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach the NATS server at"), "{err}");
    assert!(err.contains(&url), "{err}");
}

#[test]
fn a_worker_rides_out_a_server_restart() {
    let mut nats = NatsServer::start();
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &nats.url()]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        r#"echo "bob:$(cat)""#,
    ]);
    assert_eq!(
        env.ok(&["ask", "bob", "one", "--timeout", "20"]).trim(),
        "bob:one"
    );
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    nats.stop();
    env.fails(&["send", "bob", "lost"], 1);
    nats.restart();
    // The same worker (it reconnected), woken by the new mail.
    assert_eq!(
        env.ok(&["ask", "bob", "two", "--timeout", "30"]).trim(),
        "bob:two"
    );
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
}

#[test]
fn credentials_in_the_address_are_never_printed() {
    let env = TestEnv::new();
    // Nothing listens there: the failure line must still not show the password.
    let err = env.fails(
        &[
            "create",
            "alpha",
            "--store",
            "nats://alice:s3cret@127.0.0.1:1",
        ],
        1,
    );
    assert!(!err.contains("s3cret"), "{err}");
    assert!(err.contains("nats://127.0.0.1:1"), "{err}");
    let err = env.fails(&["create", "alpha", "--store", "http://h:1"], 2);
    assert!(err.contains("nats://"), "{err}");
    assert!(!env.team_dir("alpha").exists(), "nothing left behind");
}

/// A server that wants a login gets the one in the address (`USER:PASS@`), and only that.
#[test]
fn a_login_in_the_address_is_sent_to_the_server() {
    let nats = NatsServer::start_with("authorization { user: alice, password: s3cret }");
    let env = TestEnv::new();
    let with = |login: &str| format!("nats://{login}@127.0.0.1:{}", nats.port);
    let err = env.fails(&["create", "alpha", "--store", &with("alice:wrong")], 1);
    assert!(err.contains("not authorized"), "{err}");
    assert!(!err.contains("wrong"), "{err}");
    let err = env.fails(&["create", "alpha", "--store", &nats.url()], 1);
    assert!(err.contains("not authorized"), "{err}");
    env.ok(&["create", "alpha", "--store", &with("alice:s3cret")]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    assert_eq!(env.ok(&["ask", "bob", "logged in"]).trim(), "logged in");
    let status = env.ok(&["status"]);
    assert!(!status.contains("s3cret"), "{status}");
}

#[test]
fn a_second_home_joins_the_team_through_teamctl_store() {
    let nats = NatsServer::start();
    let a = TestEnv::new();
    let mut b = TestEnv::new();
    let url = nats.url();
    a.ok(&["create", "alpha", "--store", &url]);
    a.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        r#"echo "bob:$(cat)""#,
    ]);
    // Host B knows nothing of alpha until it names the server.
    b.fails(&["--team", "alpha", "status"], 2);
    b.env.push(("TEAMCTL_STORE".into(), url.clone()));
    let status = b.ok(&["--json", "--team", "alpha", "status"]);
    assert!(status.contains("\"bob\""), "{status}");
    assert!(b.team_dir("alpha").join("store.json").is_file());
    // Remembered: later commands need no variable.
    b.env.clear();
    b.ok(&["--team", "alpha", "status"]);
    // One task list: a task added on B is A's too.
    b.ok(&["--team", "alpha", "task", "add", "port the parser"]);
    assert!(a.ok(&["task", "list"]).contains("port the parser"));
}

/// Issue 15 part 4: `send NAME@TEAM` reaches a member of another team on the same server
/// (another host's team here: two homes that share only the server), plain text only, and the
/// answer comes back under the teammate's agent id.
#[test]
fn a_message_reaches_another_team_on_the_same_server_and_the_answer_comes_back() {
    let nats = NatsServer::start();
    let a = TestEnv::new();
    let b = TestEnv::new();
    let url = nats.url();
    a.ok(&["create", "alpha", "--store", &url]);
    b.ok(&["create", "beta", "--store", &url]);
    b.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--exec",
        r#"printf 'carol read: %s, from %s' "$(cat)" "$TEAMCTL_FROM""#,
    ]);
    assert_eq!(
        a.ok(&["send", "carol@beta", "hello"]).trim(),
        "sent to carol@beta"
    );
    wait_until("carol's answer on host A", T, || {
        a.ok(&["--json", "inbox", "--peek"])
            .contains("carol read: hello, from team-lead@alpha")
    });
    let inbox = a.ok(&["--json", "inbox", "--peek"]);
    assert!(inbox.contains("\"carol@beta\""), "{inbox}");
    // Nothing structured crosses, and nothing is written for a refused send.
    let err = a.fails(
        &[
            "send",
            "carol@beta",
            "--structured",
            r#"{"type":"shutdown_request","requestId":"r1","reason":"x"}"#,
        ],
        2,
    );
    assert!(err.contains("plain text"), "{err}");
    let err = a.fails(&["send", "nobody@beta", "hi"], 2);
    assert!(err.contains("no member \"nobody\""), "{err}");
    let err = a.fails(&["send", "carol@gamma", "hi"], 2);
    assert!(err.contains("no team \"gamma\""), "{err}");
    assert_eq!(
        b.ok(&["--json", "inbox", "--peek", "--as", "carol", "--all"])
            .matches("team-lead@alpha")
            .count(),
        1
    );
}

/// A team whose server is down is not a deleted team: `doctor --fix` then ends none of its
/// teammates, and they go on when the server is back.
#[test]
fn doctor_fix_with_the_server_down_leaves_the_teammates_running() {
    let mut nats = NatsServer::start();
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &nats.url()]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    nats.stop();
    let out = env.run(&["doctor", "--fix"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("orphaned worker") && !text.contains("ended"),
        "{text}"
    );
    assert!(text.contains("cannot reach the NATS server"), "{text}");
    assert!(!text.contains("no longer exists"), "{text}");
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "doctor --fix ended bob's worker: {text}"
    );
    nats.restart();
    // A request of the worker's lost when the server went away waits out its 30 s timeout
    // before the worker carries on (docs/SCALE.md, Failures): give it that and more.
    wait_until("bob answers again", Duration::from_secs(90), || {
        env.run(&["ask", "bob", "back", "--timeout", "5"])
            .status
            .success()
    });
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
}

/// `send NAME@TEAM` names teams by name on a shared server: a team whose name a reader could
/// not tell from another's there is refused at `create` (another home, nothing made); the
/// same name again gets a suffix, as in one home.
#[test]
fn a_look_alike_team_name_on_the_same_server_is_refused() {
    let nats = NatsServer::start();
    let a = TestEnv::new();
    let b = TestEnv::new();
    let url = nats.url();
    a.ok(&["create", "alpha", "--store", &url]);
    for look_alike in ["Alpha", "a1pha", "al_pha"] {
        let err = b.fails(&["create", look_alike, "--store", &url], 2);
        assert!(err.contains("looks like \"alpha\""), "{err}");
        assert!(!b.team_dir(look_alike).exists());
    }
    assert_eq!(
        b.ok(&["create", "alpha", "--store", &url]).trim(),
        "alpha-2"
    );
}

/// `log -f` on NATS: an ordered consumer of every inbox (issue 15). What was there is printed
/// once, then each new message, members who joined after it started included (to them and
/// from them), a broadcast's copies once; Ctrl-C ends it with exit 0.
#[test]
fn log_follow_on_nats_follows_members_who_join_after_it_started() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    let nats = NatsServer::start();
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &nats.url()]);
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    env.ok(&["send", "bob", "before"]);
    let mut child = env
        .cmd(&["log", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (out, sink) = (child.stdout.take().unwrap(), lines.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line);
        }
    });
    let count = |text: &str| {
        lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(text))
            .count()
    };
    wait_until("the old message", T, || {
        count("team-lead -> bob: before") == 1
    });
    env.ok(&["send", "bob", "after"]);
    wait_until("the new message", T, || {
        count("team-lead -> bob: after") == 1
    });
    env.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    env.ok(&["send", "carol", "to the newcomer"]);
    env.ok(&["send", "--as", "carol", "bob", "from the newcomer"]);
    wait_until("the newcomer's mail", T, || {
        count("team-lead -> carol: to the newcomer") == 1
            && count("carol -> bob: from the newcomer") == 1
    });
    env.ok(&["send", "*", "everyone"]);
    wait_until("the broadcast", T, || {
        count("team-lead -> *: everyone") >= 1
    });
    // Everything printed so far, printed once (the broadcast's copies are in three inboxes).
    for text in [
        "team-lead -> bob: before",
        "team-lead -> bob: after",
        "team-lead -> carol: to the newcomer",
        "carol -> bob: from the newcomer",
        "team-lead -> *: everyone",
    ] {
        assert_eq!(count(text), 1, "{text}: {:?}", lines.lock().unwrap());
    }
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut code = None;
    wait_until("log -f to end on Ctrl-C", T, || {
        code = child.try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    assert_eq!(code, Some(Some(0)));
}

/// `log -f` on a NATS team ends, saying so, when another home deletes the team: its
/// wake-ups' consumers go with the stream, and the view then finds the team gone.
#[test]
fn log_follow_on_nats_ends_when_another_home_deletes_the_team() {
    use std::process::Stdio;
    let nats = NatsServer::start();
    let a = TestEnv::new();
    a.ok(&["create", "alpha", "--store", &nats.url()]);
    let mut b = TestEnv::new();
    b.env.push(("TEAMCTL_STORE".into(), nats.url()));
    b.env.push(("TEAMCTL_TEAM".into(), "alpha".into()));
    b.ok(&["status"]);
    a.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat >/dev/null",
    ]);
    a.ok(&["send", "bob", "before"]);
    let mut child = b
        .cmd(&["log", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The view runs once it printed what was there.
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains("team-lead -> bob: before"), "{first}");
    a.ok(&["delete"]);
    let mut code = None;
    wait_until("log -f to end after the delete", T, || {
        code = child.try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("team alpha was deleted; `log -f` ends"),
        "{err}"
    );
    assert_eq!(code, Some(Some(1)), "{err}");
}

/// At-least-once on NATS: a worker killed (SIGKILL) in the middle of a turn has not
/// acknowledged the message to its cursor's consumer, so the resumed worker handles it again;
/// the next message once.
#[test]
fn a_worker_killed_mid_turn_handles_the_message_again_after_resume() {
    let nats = NatsServer::start();
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &nats.url()]);
    let record = env.work.path().join("handled.txt");
    let mark = env.work.path().join("hung-once");
    // The first turn records the message and then hangs; later turns only record.
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        &format!(
            r#"printf '%s\n' "$(cat)" >> '{}'; if [ ! -e '{}' ]; then echo $$ > '{}'; exec sleep 600; fi"#,
            record.display(),
            mark.display(),
            mark.display()
        ),
    ]);
    let handled = || std::fs::read_to_string(&record).unwrap_or_default();
    env.ok(&["send", "bob", "first"]);
    wait_until("the first turn under way", T, || {
        handled().contains("first")
    });
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until("bob's worker gone", T, || {
        !teamctl::backend::proc::running(pid as u32)
    });
    env.ok(&["resume", "bob"]);
    wait_until("the first message handled again", T, || {
        handled().lines().filter(|l| *l == "first").count() == 2
    });
    env.ok(&["send", "bob", "second"]);
    wait_until("the second message", T, || handled().contains("second"));
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let all = handled();
    // The hung agent of the killed worker (its pid in the mark) is ended here.
    if let Ok(agent) = std::fs::read_to_string(&mark)
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(agent),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(
        all.lines().collect::<Vec<_>>(),
        ["first", "first", "second"],
        "{all}"
    );
}
