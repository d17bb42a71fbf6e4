//! The reliability suite: crashes in the middle of an append, random bytes where state files
//! should be, many concurrent senders to a working teammate, and concurrent spawns. Every case
//! drives the real binary or the library through the same paths the product uses, and checks
//! by message id, never by time.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::common::{TestEnv, wait_until};
use teamctl::domain::{Body, Envelope, Name};
use teamctl::store::inbox::{self, InboxPaths};
use teamctl::store::{Home, Item};

const ROLE: &str = "TEAMCTL_RELIABILITY_ROLE";

// ---------- helpers ----------

/// A seeded xorshift generator, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Lines the agent wrote to `file` (one per handled message).
fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// An agent command that records each handled message's id (and text) in `file`.
fn recorder(file: &Path) -> String {
    format!(
        "printf '%s %s\\n' \"$TEAMCTL_MESSAGE_ID\" \"$TEAMCTL_MESSAGE\" >> '{}'",
        file.display()
    )
}

fn inbox_paths(t: &TestEnv, team: &str, member: &str) -> InboxPaths {
    InboxPaths::new(t.team_dir(team).join("inboxes").join(member))
}

/// Start a team `team` with teammates `names` recording into `work/<name>.handled`. A leader
/// leads one team at a time, so a second team in the same home is made through the library,
/// as another leader's would be.
fn team_with(t: &TestEnv, team: &str, names: &[&str]) {
    make_team(t, team);
    for n in names {
        let file = t.work.path().join(format!("{team}-{n}.handled"));
        t.ok(&[
            "--team",
            team,
            "spawn",
            n,
            "--backend",
            "process",
            "--exec",
            &recorder(&file),
        ]);
    }
    for n in names {
        wait_until(&format!("{n}@{team} idle"), Duration::from_secs(20), || {
            member_status(t, team, n) == "idle"
        });
    }
}

fn make_team(t: &TestEnv, team: &str) {
    if t.home_path().join("teams").exists() {
        Home::new(t.home_path().to_path_buf())
            .create(&Name::parse(team).unwrap(), "", t.work.path())
            .unwrap();
    } else {
        t.ok(&["create", team]);
    }
}

fn member_status(t: &TestEnv, team: &str, name: &str) -> String {
    let out = t.ok(&["--team", team, "--json", "status"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["status"].as_str())
        .unwrap_or("")
        .to_string()
}

fn handled_file(t: &TestEnv, team: &str, name: &str) -> PathBuf {
    t.work.path().join(format!("{team}-{name}.handled"))
}

/// Send `text` to `name` in `team`; the message id.
fn send(t: &TestEnv, team: &str, name: &str, text: &str) -> String {
    let out: serde_json::Value =
        serde_json::from_str(&t.ok(&["--json", "--team", team, "send", name, text])).unwrap();
    out["id"].as_str().unwrap().to_string()
}

fn wait_handled(t: &TestEnv, team: &str, name: &str, id: &str) {
    let file = handled_file(t, team, name);
    wait_until(
        &format!("{name}@{team} to handle {id}"),
        Duration::from_secs(30),
        || lines(&file).iter().any(|l| l.starts_with(id)),
    );
}

/// No panic: the process exited by itself, with 0, 1 or 2.
fn assert_no_panic(args: &[&str], out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "teamctl {args:?} ended with {:?}: {stderr}",
        out.status
    );
    assert!(
        !stderr.contains("panicked"),
        "teamctl {args:?} panicked: {stderr}"
    );
}

/// Start this test binary as a helper process running `role`.
fn helper(role: &str, vars: &[(&str, String)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "reliability::helper_process",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .stdout(std::process::Stdio::null());
    for (k, v) in vars {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// Not a test: the body of the helper processes started by `helper`.
#[test]
#[ignore = "helper process for the tests in this file; does nothing on its own"]
fn helper_process() {
    let var = |k: &str| std::env::var(k).unwrap();
    match std::env::var(ROLE).as_deref() {
        // Append big records in a loop until killed (or `count` done).
        Ok("big-writer") => {
            let paths = InboxPaths::new(PathBuf::from(var("INBOX_DIR")));
            let w = var("WRITER");
            let pad = "x".repeat(900 * 1024);
            for seq in 0..var("COUNT").parse::<usize>().unwrap() {
                let env = Envelope::new(
                    "alice",
                    "bob",
                    Body::message(format!("{w} {seq} {pad}"), Some(format!("{w} {seq}"))),
                );
                inbox::append(&paths, &env).unwrap();
            }
        }
        // Send `count` messages through the library's send path (checks, then append).
        Ok("sender") => {
            let home = Home::new(PathBuf::from(var("HOME_DIR")));
            let store = home.open(&Name::parse(&var("TEAM")).unwrap()).unwrap();
            let k = var("SENDER");
            let go = PathBuf::from(var("GO"));
            while !go.exists() {
                std::thread::sleep(Duration::from_millis(1));
            }
            for seq in 0..var("COUNT").parse::<usize>().unwrap() {
                let config = store.load().unwrap();
                let env = Envelope::new(
                    "team-lead",
                    &var("TO"),
                    Body::message(format!("s{k}-{seq}"), None),
                );
                teamctl::bus::deliver(&*store, &config, &env).unwrap();
            }
        }
        _ => {}
    }
}

// ---------- a writer dies in the middle of an append ----------

#[test]
fn a_torn_record_from_a_killed_writer_is_skipped_and_later_messages_arrive() {
    let t = TestEnv::new();
    team_with(&t, "alpha", &["bob"]);
    let before = send(&t, "alpha", "bob", "before the crash");
    wait_handled(&t, "alpha", "bob", &before);

    // A writer gets half a record out, then is killed with SIGKILL.
    let paths = inbox_paths(&t, "alpha", "bob");
    let line = Envelope::new("team-lead", "bob", Body::message("torn record", None))
        .to_line()
        .unwrap();
    let half = String::from_utf8_lossy(&line[..line.len() / 2]).into_owned();
    let len_before = std::fs::metadata(paths.log()).unwrap().len();
    let mut writer = Command::new("sh")
        .arg("-c")
        .arg("printf '%s' \"$PART\" >> \"$LOG\"; exec sleep 60")
        .env("PART", &half)
        .env("LOG", paths.log())
        .spawn()
        .unwrap();
    wait_until("the partial write", Duration::from_secs(10), || {
        std::fs::metadata(paths.log()).unwrap().len() == len_before + half.len() as u64
    });
    writer.kill().unwrap();
    writer.wait().unwrap();

    let after: Vec<String> = (0..5)
        .map(|i| send(&t, "alpha", "bob", &format!("after the crash {i}")))
        .collect();
    for id in &after {
        wait_handled(&t, "alpha", "bob", id);
    }
    let handled = lines(&handled_file(&t, "alpha", "bob"));
    assert!(!handled.iter().any(|l| l.contains("torn record")));
    assert_eq!(handled.len(), 6, "{handled:?}");
    // The log stays append-only: the torn part is one skipped line, warned about.
    let entries = inbox::read_from(&paths.log(), 0, usize::MAX).unwrap();
    assert_eq!(
        entries
            .iter()
            .filter(|e| matches!(e.item, Item::Garbage(_)))
            .count(),
        1
    );
    let log = std::fs::read_to_string(t.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(log.contains("skipped an unreadable line"), "{log}");
}

#[test]
fn writers_killed_at_random_moments_never_hide_later_messages() {
    let dir = tempfile::tempdir().unwrap();
    let paths = InboxPaths::new(dir.path().join("bob"));
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let writers: Vec<Child> = (0..4)
        .map(|w| {
            helper(
                "big-writer",
                &[
                    ("INBOX_DIR", paths.dir.display().to_string()),
                    ("WRITER", format!("w{w}")),
                    ("COUNT", "40".into()),
                ],
            )
        })
        .collect();
    // A reader follows the log while the writers are killed one by one.
    let mut cursor = 0u64;
    let mut got: Vec<String> = Vec::new();
    let read = |cursor: &mut u64, got: &mut Vec<String>| {
        for e in inbox::read_from(&paths.log(), *cursor, usize::MAX).unwrap() {
            if let Item::Message(env) = e.item
                && let Body::Message { summary, .. } = env.body
            {
                got.push(summary);
            }
            *cursor = e.end.raw();
        }
    };
    for (i, mut w) in writers.into_iter().enumerate() {
        // Once this writer is well under way, kill it at a random moment of its loop.
        let mine = format!("w{i} ");
        let deadline = Instant::now() + Duration::from_secs(30);
        while got.iter().filter(|s| s.starts_with(&mine)).count() < 2 {
            assert!(Instant::now() < deadline, "writer {i} never got going");
            read(&mut cursor, &mut got);
        }
        let wait = Instant::now() + Duration::from_micros(rng.next() % 20_000);
        while Instant::now() < wait {
            read(&mut cursor, &mut got);
        }
        let _ = w.kill();
        w.wait().unwrap();
    }
    // Later messages, from a writer that lives.
    let later: Vec<String> = (0..20).map(|i| format!("later {i}")).collect();
    for text in &later {
        inbox::append(
            &paths,
            &Envelope::new("alice", "bob", Body::message(text, None)),
        )
        .unwrap();
    }
    read(&mut cursor, &mut got);
    assert_eq!(
        cursor,
        inbox::log_len(&paths.log()),
        "the reader reached the end"
    );
    assert_eq!(
        &got[got.len() - 20..],
        &later[..],
        "every later message arrived, in order"
    );
    // Each writer's records arrive whole, in order, with no gaps but a torn last one.
    let mut per: HashMap<String, Vec<usize>> = HashMap::new();
    for s in &got[..got.len() - 20] {
        let (w, seq) = s.split_once(' ').unwrap();
        per.entry(w.to_string())
            .or_default()
            .push(seq.parse().unwrap());
    }
    for (w, seqs) in &per {
        let want: Vec<usize> = (0..seqs.len()).collect();
        assert_eq!(seqs, &want, "writer {w}");
    }
    let torn = inbox::read_from(&paths.log(), 0, usize::MAX)
        .unwrap()
        .iter()
        .filter(|e| matches!(e.item, Item::Garbage(_)))
        .count();
    assert!(
        torn <= 4,
        "at most one torn record per killed writer, got {torn}"
    );
    eprintln!("killed writers left {torn} torn record(s); per writer: {per:?}");
}

// ---------- random bytes where state should be ----------

#[test]
fn random_bytes_as_an_inbox_are_skipped_and_other_inboxes_and_teams_are_unaffected() {
    let t = TestEnv::new();
    team_with(&t, "other", &["carol"]);
    team_with(&t, "alpha", &["bob", "dave"]);
    let mut rng = Rng(0xdead_beef_0bad_f00d);
    for (member, seed_len) in [("bob", 64 * 1024), ("team-lead", 4096)] {
        let paths = inbox_paths(&t, "alpha", member);
        std::fs::create_dir_all(&paths.dir).unwrap();
        std::fs::write(paths.log(), rng.bytes(seed_len)).unwrap();
    }
    // bob still gets new mail; dave and the other team never noticed.
    let id = send(&t, "alpha", "bob", "after the noise");
    wait_handled(&t, "alpha", "bob", &id);
    let id = send(&t, "alpha", "dave", "hello dave");
    wait_handled(&t, "alpha", "dave", &id);
    let id = send(&t, "other", "carol", "hello carol");
    wait_handled(&t, "other", "carol", &id);
    assert_eq!(lines(&handled_file(&t, "alpha", "bob")).len(), 1);
    for args in [
        &["--team", "alpha", "status"][..],
        &["--team", "alpha", "inbox"],
        &["--team", "alpha", "inbox", "--all", "--peek"],
        &["--team", "alpha", "log"],
    ] {
        let out = t.run(args);
        assert_no_panic(args, &out);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Reading the noisy leader inbox warns about skipped lines.
    let out = t.run(&["--team", "alpha", "inbox", "--all", "--peek"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("skipped") || stderr.contains("unreadable"),
        "{stderr}"
    );
}

#[test]
fn random_bytes_as_a_team_file_are_a_clear_error_and_other_teams_are_unaffected() {
    let t = TestEnv::new();
    team_with(&t, "other", &["carol"]);
    make_team(&t, "alpha");
    let config = t.team_dir("alpha").join("config.json");
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let deep = "[".repeat(100_000);
    let contents: Vec<Vec<u8>> = vec![
        rng.bytes(4096),
        Vec::new(),
        b"null".to_vec(),
        b"{}".to_vec(),
        b"[]".to_vec(),
        deep.into_bytes(),
        br#"{"name":"alpha","createdAt":1,"leadAgentId":"team-lead@alpha","members":[{"name":"../x"}]}"#
            .to_vec(),
    ];
    for bytes in contents {
        std::fs::write(&config, &bytes).unwrap();
        for args in [
            &["--team", "alpha", "status"][..],
            &["--team", "alpha", "send", "bob", "hi"],
            &[
                "--team",
                "alpha",
                "spawn",
                "bob",
                "--backend",
                "process",
                "--exec",
                "true",
            ],
            &["--team", "alpha", "inbox"],
            &["--team", "alpha", "log"],
            &["--team", "alpha", "kill", "bob"],
            &["--team", "alpha", "resume"],
            &["--team", "alpha", "shutdown", "--all", "--timeout", "1"],
            &["--team", "alpha", "delete"],
        ] {
            let out = t.run(args);
            assert_no_panic(args, &out);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{args:?} succeeded on a damaged team file"
            );
            assert!(
                stderr.starts_with("teamctl: ") && stderr.trim().lines().count() == 1,
                "{args:?}: one clear line expected, got {stderr:?}"
            );
        }
        // Nothing was written into the damaged team.
        assert_eq!(std::fs::read(&config).unwrap(), bytes);
        // The other team works as before.
        let id = send(&t, "other", "carol", "still fine?");
        wait_handled(&t, "other", "carol", &id);
        wait_until("carol idle again", Duration::from_secs(20), || {
            member_status(&t, "other", "carol") == "idle"
        });
    }
}

/// Random bytes as `tasks.json`: every task command fails with one line (exit 1) and leaves
/// the file as it was; the team's other commands and the other team's task list still work.
#[test]
fn random_bytes_as_a_task_file_are_a_clear_error_and_other_teams_are_unaffected() {
    let t = TestEnv::new();
    make_team(&t, "other");
    t.ok(&["--team", "other", "task", "add", "a task that stays"]);
    make_team(&t, "alpha");
    t.ok(&["--team", "alpha", "task", "add", "first"]);
    let tasks = t.team_dir("alpha").join("tasks.json");
    assert!(
        tasks.is_file(),
        "the task list lives in {}",
        tasks.display()
    );
    let mut rng = Rng(0x7a5c_0000_1111_2222);
    for bytes in [
        rng.bytes(4096),
        Vec::new(),
        b"{}".to_vec(),
        b"[[[[".to_vec(),
    ] {
        std::fs::write(&tasks, &bytes).unwrap();
        for args in [
            &["--team", "alpha", "task", "list"][..],
            &["--team", "alpha", "task", "show", "1"],
            &["--team", "alpha", "task", "claim"],
            &["--team", "alpha", "task", "add", "second"],
            &["--team", "alpha", "task", "done", "1"],
        ] {
            let out = t.run(args);
            assert_no_panic(args, &out);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(
                stderr.starts_with("teamctl: ")
                    && stderr.contains("damaged")
                    && stderr.trim().lines().count() == 1,
                "{args:?}: one clear line expected, got {stderr:?}"
            );
        }
        // A damaged list is never overwritten, and the rest of the team still works.
        assert_eq!(std::fs::read(&tasks).unwrap(), bytes);
        let out = t.run(&["--team", "alpha", "status"]);
        assert_no_panic(&["status"], &out);
        assert!(out.status.success());
        let list = t.ok(&["--team", "other", "task", "list"]);
        assert!(list.contains("a task that stays"), "{list}");
    }
}

// ---------- many senders, one working teammate ----------

/// 16 processes x 500 messages through the library's send path while the teammate works
/// through them: every message handled exactly once, every inbox line whole, each sender's
/// order kept in the inbox and in the order of handling.
#[test]
fn sixteen_senders_to_a_working_teammate_every_message_handled_exactly_once_in_order() {
    const SENDERS: usize = 16;
    const EACH: usize = 500;
    let t = TestEnv::new();
    t.ok(&["create", "alpha"]);
    t.ok(&["spawn", "bob", "--backend", "process", "--exec", "true"]);
    wait_until("bob idle", Duration::from_secs(20), || {
        t.member_status("bob") == "idle"
    });
    let go = t.work.path().join("go");
    let mut children: Vec<Child> = (0..SENDERS)
        .map(|k| {
            helper(
                "sender",
                &[
                    ("HOME_DIR", t.home_path().display().to_string()),
                    ("TEAM", "alpha".into()),
                    ("TO", "bob".into()),
                    ("SENDER", k.to_string()),
                    ("COUNT", EACH.to_string()),
                    ("GO", go.display().to_string()),
                ],
            )
        })
        .collect();
    std::fs::write(&go, b"go").unwrap();
    for c in &mut children {
        assert!(c.wait().unwrap().success(), "a sender failed");
    }
    // Every line of the inbox parses (common::TestEnv::inbox panics on a bad line).
    let sent: Vec<serde_json::Value> = t
        .inbox("alpha", "bob")
        .into_iter()
        .filter(|m| m["from"] == "team-lead")
        .collect();
    assert_eq!(sent.len(), SENDERS * EACH);
    assert_in_order(
        sent.iter().map(|m| m["text"].as_str().unwrap()),
        "in the inbox",
    );

    // The worker's log has one turn-start line per handled message, naming the text (unique per message).
    let log = t.team_dir("alpha").join("logs/bob.log");
    let by_text: HashMap<&str, &str> = sent
        .iter()
        .map(|m| (m["text"].as_str().unwrap(), m["id"].as_str().unwrap()))
        .collect();
    let turns = || -> Vec<String> {
        lines(&log)
            .iter()
            .filter_map(|l| l.split_once("] <- team-lead: ").map(|(_, t)| t.to_string()))
            .collect()
    };
    wait_until(
        "bob to handle every message",
        Duration::from_mins(5),
        || turns().len() >= SENDERS * EACH,
    );
    let handled: Vec<String> = turns()
        .iter()
        .map(|text| {
            format!(
                "{} {text}",
                by_text.get(text.as_str()).copied().unwrap_or("?")
            )
        })
        .collect();
    let ids: Vec<&str> = handled
        .iter()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a message was handled twice");
    let want: HashSet<&str> = sent.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(unique, want, "handled ids differ from sent ids");
    assert_in_order(
        handled.iter().map(|l| l.split_once(' ').unwrap().1),
        "as handled",
    );
}

/// The same race through a real agent command: each turn records `$TEAMCTL_MESSAGE_ID`.
/// Fewer messages (16 x 25): every turn forks a shell, which the 16 x 500 case above avoids to
/// keep the suite fast.
#[test]
fn sixteen_senders_to_an_agent_each_message_id_reaches_the_agent_exactly_once() {
    const SENDERS: usize = 16;
    const EACH: usize = 25;
    let t = TestEnv::new();
    team_with(&t, "alpha", &["bob"]);
    let go = t.work.path().join("go");
    let mut children: Vec<Child> = (0..SENDERS)
        .map(|k| {
            helper(
                "sender",
                &[
                    ("HOME_DIR", t.home_path().display().to_string()),
                    ("TEAM", "alpha".into()),
                    ("TO", "bob".into()),
                    ("SENDER", k.to_string()),
                    ("COUNT", EACH.to_string()),
                    ("GO", go.display().to_string()),
                ],
            )
        })
        .collect();
    std::fs::write(&go, b"go").unwrap();
    for c in &mut children {
        assert!(c.wait().unwrap().success(), "a sender failed");
    }
    // Every line of the inbox parses (common::TestEnv::inbox panics on a bad line).
    let sent: Vec<serde_json::Value> = t
        .inbox("alpha", "bob")
        .into_iter()
        .filter(|m| m["from"] == "team-lead")
        .collect();
    assert_eq!(sent.len(), SENDERS * EACH);
    assert_in_order(
        sent.iter().map(|m| m["text"].as_str().unwrap()),
        "in the inbox",
    );

    let file = handled_file(&t, "alpha", "bob");
    wait_until(
        "bob to handle every message",
        Duration::from_mins(5),
        || lines(&file).len() >= SENDERS * EACH,
    );
    let handled = lines(&file);
    let ids: Vec<&str> = handled
        .iter()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a message was handled twice");
    let want: HashSet<&str> = sent.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(unique, want, "handled ids differ from sent ids");
    assert_in_order(
        handled.iter().map(|l| l.split_once(' ').unwrap().1),
        "as handled",
    );
}

/// Texts `sK-SEQ`: each sender's sequence numbers strictly increase.
fn assert_in_order<'a>(texts: impl Iterator<Item = &'a str>, where_: &str) {
    let mut last: HashMap<&str, usize> = HashMap::new();
    for text in texts {
        let (k, seq) = text.split_once('-').unwrap();
        let seq: usize = seq.parse().unwrap();
        if let Some(prev) = last.insert(k, seq) {
            assert!(prev < seq, "sender {k}: {seq} after {prev} {where_}");
        }
    }
}

// ---------- the polling fallback ----------

/// A worker without inotify (the per-user instance limit spent, here forced with
/// `TEAMCTL_POLL_MS`) still gets every message, in order, exactly once.
#[test]
fn a_worker_that_must_poll_still_gets_every_message_once() {
    let t = TestEnv::new();
    t.ok(&["create", "alpha"]);
    let file = handled_file(&t, "alpha", "bob");
    let out = t
        .cmd(&[
            "spawn",
            "bob",
            "--backend",
            "process",
            "--exec",
            &recorder(&file),
        ])
        .env("TEAMCTL_POLL_MS", "50")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("bob idle", Duration::from_secs(20), || {
        t.member_status("bob") == "idle"
    });
    let ids: Vec<String> = (0..10)
        .map(|i| send(&t, "alpha", "bob", &format!("s0-{i}")))
        .collect();
    wait_until("bob to handle all ten", Duration::from_secs(30), || {
        lines(&file).len() >= ids.len()
    });
    let handled: Vec<String> = lines(&file)
        .iter()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(handled, ids);
    let log = std::fs::read_to_string(t.team_dir("alpha").join("logs/bob.log")).unwrap();
    assert!(
        !log.contains("inotify unavailable"),
        "forced polling is not an error"
    );
}

// ---------- concurrent spawns ----------

#[test]
fn twenty_concurrent_spawns_are_all_recorded_and_running() {
    let t = TestEnv::new();
    t.ok(&["create", "alpha"]);
    let names: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
    let children: Vec<Child> = names
        .iter()
        .map(|n| {
            t.cmd(&["spawn", n, "--backend", "process", "--exec", "true"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.team_dir("alpha").join("config.json")).unwrap())
            .unwrap();
    let members: HashSet<&str> = config["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for n in &names {
        assert!(members.contains(n.as_str()), "{n} missing from {members:?}");
        assert!(
            config["members"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == n.as_str() && m["pid"].is_u64()),
            "{n} has no pid recorded"
        );
    }
    assert_eq!(members.len(), 21);
    wait_until("all 20 idle", Duration::from_secs(30), || {
        let status = t.status();
        let members = status["members"].as_array().unwrap();
        members.len() == 21
            && members
                .iter()
                .all(|m| m["name"] == "team-lead" || m["status"] == "idle")
    });
}

/// Run inside a user and mount namespace (`unshare --user --map-root-user --mount`): the
/// leader's inbox directory gets a 64 KiB tmpfs of its own, so the teammate's 200 KB answer
/// finds no room while everything else (its log, cursor and live state) still can be written.
const FULL_DISK: &str = r#"set -u
T="$1"; H="$2"; W="$3"
LOG="$H/teams/full/logs/w.log"
fail() { echo "FAIL: $*"; echo "--- w.log"; tail -c 3000 "$LOG" 2>/dev/null | tr -s y; exit 1; }
wait_for() {
  what=$1; n=$(($2 * 20)); shift 2
  while ! "$@"; do n=$((n - 1)); [ $n -gt 0 ] || fail "timed out waiting for $what"; sleep 0.05; done
}
export TEAMCTL_HOME="$H"
trap '"$T" shutdown --all --force >/dev/null 2>&1' EXIT
"$T" create full >/dev/null || fail create
L="$H/teams/full/inboxes/team-lead"
mkdir -p "$L" && chmod 700 "$L" || fail "mkdir $L"
mount -t tmpfs -o size=64k,mode=700 tmpfs "$L" || fail "mount a tmpfs at $L"
printf '#!/bin/sh\ncat >/dev/null\nhead -c 200000 /dev/zero | tr "\\0" y\n' > "$W/agent"
chmod 755 "$W/agent"
"$T" spawn w --backend process --exec "$W/agent" >/dev/null || fail spawn
pid=$("$T" --json status | grep -o '"pid": *[0-9]*' | grep -o '[0-9]*$' | head -1)
[ -n "$pid" ] || fail "no worker pid in status"
"$T" send w go >/dev/null || fail send
wait_for "the worker to say it waits for room" 30 grep -q "no room: the answer to team-lead waits" "$LOG"
kill -0 "$pid" 2>/dev/null || fail "the worker died"
! grep -q yyyyyyyy "$L/inbox.jsonl" || fail "an answer in a full inbox"
mount -o remount,size=2m "$L" || fail remount
wait_for "the answer" 30 grep -q yyyyyyyy "$L/inbox.jsonl"
wait_for "the worker to say it is written" 10 grep -q "the answer to team-lead is written" "$LOG"
kill -0 "$pid" 2>/dev/null || fail "the worker died after writing"
n=$(grep -c yyyyyyyy "$L/inbox.jsonl"); [ "$n" = 1 ] || fail "$n answers"
bad=$(grep -vc '^{"v":1,' "$L/inbox.jsonl"); [ "$bad" = 0 ] || fail "$bad torn lines in the leader's inbox"
echo OK
"#;

/// A full disk: before, the worker's failed write of its answer ended it (silently: its log
/// was full too, and the error's own line panicked on the full stderr), and each `resume` ran
/// the turn again into the same disk; the failed write also left a torn record behind
/// (attacker QA). Now the answer is held until there is room, the worker lives on, and the
/// inbox gets the answer once, whole.
#[test]
fn a_full_disk_holds_the_answer_until_there_is_room_and_the_worker_lives_on() {
    let env = TestEnv::new();
    let script = env.work.path().join("full.sh");
    std::fs::write(&script, FULL_DISK).unwrap();
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh"])
        .arg(&script)
        .arg(crate::common::BIN)
        .arg(env.home.path())
        .arg(env.work.path())
        .output()
        .expect("unshare (util-linux) runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.trim_end().ends_with("OK"),
        "{text}"
    );
}
