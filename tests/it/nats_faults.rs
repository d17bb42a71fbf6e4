//! Faults of the NATS store (issue 15 part 5): a three-node JetStream cluster whose stream
//! leader is killed (`kill -9`) under load from 16 concurrent senders, a server restarted by
//! SIGTERM under an idle worker, and per-team NATS users that reach their own team only.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::nats::{NatsCluster, NatsServer};
use crate::common::{TestEnv, wait_until};

const T: Duration = Duration::from_secs(30);

/// On a cluster the team's stream and bucket keep three copies, chosen by teamctl alone.
#[test]
fn a_team_on_a_cluster_is_kept_three_times() {
    let cluster = NatsCluster::start(3);
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &cluster.url()]);
    assert_eq!(cluster.replicas_of("tc_alpha"), Some(3));
    assert_eq!(cluster.replicas_of("KV_tc_alpha"), Some(3));
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    assert_eq!(
        env.ok(&["ask", "bob", "three copies"]).trim(),
        "three copies"
    );
    // Fixed by hand in the address: exactly that many, or a clear refusal.
    let other = TestEnv::new();
    let with = |query: &str| format!("{}?{query}", cluster.url());
    other.ok(&["create", "beta", "--store", &with("replicas=1")]);
    assert_eq!(cluster.replicas_of("tc_beta"), Some(1));
    assert_eq!(cluster.replicas_of("KV_tc_beta"), Some(1));
    let third = TestEnv::new();
    let err = third.fails(&["create", "gamma", "--store", &with("replicas=5")], 1);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot make the inbox stream"), "{err}");
    assert!(!third.team_dir("gamma").exists());
    let err = third.fails(&["create", "gamma", "--store", &with("copies=2")], 2);
    assert!(err.contains("replicas=N"), "{err}");
}

/// On a cluster a worker is woken by each message as it is stored (the republished
/// wake-up reaches it from whichever node leads the stream), not only on a reconnect.
#[test]
fn a_worker_on_a_cluster_is_woken_by_each_message() {
    let cluster = NatsCluster::start(3);
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &cluster.url()]);
    let record = env.work.path().join("handled.txt");
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        &format!(r#"printf '%s\n' "$(cat)" >> '{}'"#, record.display()),
    ]);
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    for i in 0..5 {
        let body = format!("wake {i}");
        env.ok(&["send", "bob", &body]);
        wait_until(&body, T, || {
            std::fs::read_to_string(&record).is_ok_and(|r| r.lines().any(|l| l == body))
        });
    }
}

/// A server stopped cleanly (SIGTERM, as an operator or a service manager does) and started
/// again while the worker idles: the same worker handles the next mail.
#[test]
fn a_worker_rides_out_a_graceful_server_restart() {
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
    nats.restart_gracefully();
    assert_eq!(
        env.ok(&["ask", "bob", "two", "--timeout", "30"]).trim(),
        "bob:two"
    );
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
    assert_eq!(env.member_status("bob"), "idle");
}

/// A worker whose turn ends while the server is down (stopped by SIGTERM) stores its reply
/// once the server is back, once, and goes on: the publish is tried again (same message id),
/// and "no responders" while JetStream starts is not taken for a deleted team.
#[test]
fn a_reply_made_while_the_server_is_down_is_stored_once_it_is_back() {
    let mut nats = NatsServer::start();
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &nats.url()]);
    let gate = env.work.path().join("gate");
    let started = env.work.path().join("started");
    nix::unistd::mkfifo(&gate, nix::sys::stat::Mode::S_IRWXU).unwrap();
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        &format!(
            r#"m=$(cat); touch '{}'; read x < '{}'; echo "bob:$m""#,
            started.display(),
            gate.display()
        ),
    ]);
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    env.ok(&["send", "bob", "during"]);
    wait_until("bob's turn started", T, || started.exists());
    nats.terminate();
    // The turn ends now, with the server down.
    std::fs::write(&gate, "go\n").unwrap();
    nats.start_again();
    wait_until("bob's reply", T, || {
        env.ok(&["inbox", "--peek", "--all"]).contains("bob:during")
    });
    assert_eq!(
        env.ok(&["inbox", "--peek", "--all"])
            .matches("bob:during")
            .count(),
        1
    );
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
}

/// 16 senders x 100 `teamctl send` processes to one live worker while the node leading the
/// team's stream is killed with SIGKILL: every send that exits 0 is handled exactly once as
/// the agent saw it, a send that fails says so in one line (exit 1) and is handled at most
/// once, nothing else is handled, and the same worker goes on.
#[test]
fn killing_the_stream_leader_under_load_loses_nothing_and_repeats_nothing() {
    const SENDERS: usize = 16;
    const EACH: usize = 100;
    let mut cluster = NatsCluster::start(3);
    let env = TestEnv::new();
    env.ok(&["create", "alpha", "--store", &cluster.url()]);
    let record = env.work.path().join("handled.txt");
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        &format!(r#"printf '%s\n' "$(cat)" >> '{}'"#, record.display()),
    ]);
    let pid = env.member("bob")["pid"].as_u64().unwrap();
    let leader = cluster
        .leader_of("tc_alpha")
        .expect("tc_alpha has a leader");

    let done = AtomicUsize::new(0);
    let began = std::time::Instant::now();
    let outcomes: Vec<(String, Option<i32>, String)> = std::thread::scope(|s| {
        let senders: Vec<_> = (0..SENDERS)
            .map(|i| {
                let (env, done) = (&env, &done);
                s.spawn(move || {
                    (0..EACH)
                        .map(|j| {
                            let body = format!("m-{i}-{j}");
                            let out = env.run(&["send", "bob", &body]);
                            done.fetch_add(1, Ordering::SeqCst);
                            (
                                body,
                                out.status.code(),
                                String::from_utf8_lossy(&out.stderr).into_owned(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        // In the middle of the load: kill -9 the node that leads the stream.
        wait_until("a third of the sends", Duration::from_mins(2), || {
            done.load(Ordering::SeqCst) >= SENDERS * EACH / 3
        });
        assert_eq!(cluster.leader_of("tc_alpha").as_deref(), Some(&*leader));
        cluster.kill(&leader);
        senders
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let sending = began.elapsed();
    let after = cluster.leader_of("tc_alpha");
    assert!(
        after.is_some() && after.as_deref() != Some(&*leader),
        "a new leader: {after:?}"
    );

    let mut sent = Vec::new();
    let mut failed = Vec::new();
    for (body, code, err) in outcomes {
        match code {
            Some(0) => sent.push(body),
            _ => {
                assert_eq!(code, Some(1), "{body}: {err}");
                assert_eq!(err.trim().lines().count(), 1, "{body}: {err}");
                failed.push(body);
            }
        }
    }
    let handled = || -> HashMap<String, usize> {
        let mut seen = HashMap::new();
        for line in std::fs::read_to_string(&record).unwrap_or_default().lines() {
            *seen.entry(line.to_string()).or_insert(0) += 1;
        }
        seen
    };
    wait_until("every sent message handled", Duration::from_mins(1), || {
        let seen = handled();
        sent.iter().all(|b| seen.contains_key(b))
    });
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
    let seen = handled();
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "handled twice: {twice:?}");
    let strays: Vec<_> = seen
        .keys()
        .filter(|b| !sent.contains(b) && !failed.contains(b))
        .collect();
    assert!(strays.is_empty(), "handled but never sent: {strays:?}");
    assert_eq!(
        seen.len(),
        sent.len() + failed.iter().filter(|b| seen.contains_key(*b)).count()
    );
    assert_eq!(env.member("bob")["pid"].as_u64().unwrap(), pid);
    eprintln!(
        "killed {leader}; sends took {sending:?}, all handled after {:?}; {} sent, {} failed ({} of them stored), {} handled",
        began.elapsed(),
        sent.len(),
        failed.len(),
        failed.iter().filter(|b| seen.contains_key(*b)).count(),
        seen.len()
    );
}

/// The permissions of one team's NATS user: the block docs/SCALE.md gives (read from there,
/// so the documentation is exactly what is tested), USER, PASSWORD and TEAM filled in.
fn team_user(user: &str, password: &str, team: &str) -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SCALE.md")).unwrap();
    let (_, after) = doc
        .split_once("<!-- the permissions of one team's user;")
        .expect("docs/SCALE.md has the permissions block");
    let (_, block) = after.split_once("```text\n").unwrap();
    let (block, _) = block.split_once("```").unwrap();
    block
        .trim()
        .replace("USER", user)
        .replace("PASSWORD", password)
        .replace("TEAM", team)
}

/// Two users, each allowed one team: alice runs alpha; anything she tries on beta (create,
/// read, send) is refused with one line and exit 1, and beta is left as it was.
#[test]
fn a_teams_user_reaches_its_own_team_only() {
    let nats = NatsServer::start_with(&format!(
        "authorization {{ users: [\n{},\n{}\n] }}",
        team_user("alice", "pa", "alpha"),
        team_user("bob", "pb", "beta")
    ));
    let as_user = |login: &str| format!("nats://{login}@127.0.0.1:{}", nats.port);
    let alice = TestEnv::new();
    let bob = TestEnv::new();

    // Each runs their own team.
    bob.ok(&["create", "beta", "--store", &as_user("bob:pb")]);
    bob.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--exec",
        r#"echo "carol:$(cat)""#,
    ]);
    assert_eq!(bob.ok(&["ask", "carol", "hi"]).trim(), "carol:hi");
    alice.ok(&["create", "alpha", "--store", &as_user("alice:pa")]);
    alice.ok(&[
        "spawn",
        "dave",
        "--backend",
        "process",
        "--exec",
        r#"echo "dave:$(cat)""#,
    ]);
    assert_eq!(alice.ok(&["ask", "dave", "hi"]).trim(), "dave:hi");
    let beta_before = bob.ok(&["--json", "inbox", "--peek", "--as", "carol", "--all"]);
    let status_before = bob.ok(&["--json", "status"]);

    let refused = |err: &str| {
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("refused this user"), "{err}");
        assert!(err.contains("Permissions Violation"), "{err}");
        assert!(!err.contains("pa@"), "{err}");
    };
    // Create beta (taken or not, she may not look).
    let other = TestEnv::new();
    refused(&other.fails(&["create", "beta", "--store", &as_user("alice:pa")], 1));
    assert!(!other.team_dir("beta").exists());
    // Read beta.
    let mut reader = TestEnv::new();
    reader
        .env
        .push(("TEAMCTL_STORE".into(), as_user("alice:pa")));
    refused(&reader.fails(&["--team", "beta", "status"], 1));
    refused(&reader.fails(&["--team", "beta", "inbox", "--peek", "--as", "carol"], 1));
    // Send to beta, directly and across teams.
    refused(&reader.fails(&["--team", "beta", "send", "carol", "let me in"], 1));
    refused(&alice.fails(&["send", "carol@beta", "hello from alpha"], 1));

    assert_eq!(
        bob.ok(&["--json", "inbox", "--peek", "--as", "carol", "--all"]),
        beta_before
    );
    assert_eq!(bob.ok(&["--json", "status"]), status_before);
    // Alpha still works for alice.
    assert_eq!(alice.ok(&["ask", "dave", "still"]).trim(), "dave:still");
}
