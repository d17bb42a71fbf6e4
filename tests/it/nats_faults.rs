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
        "killed {leader}; {} sent, {} failed ({} of them stored), {} handled",
        sent.len(),
        failed.len(),
        failed.iter().filter(|b| seen.contains_key(*b)).count(),
        seen.len()
    );
}

/// The permissions of one team's NATS user, exactly as docs/SCALE.md gives them (TEAM and
/// USER filled in).
fn team_user(user: &str, password: &str, team: &str) -> String {
    format!(
        r#"{{ user: {user}, password: {password}, permissions: {{
    publish: {{ allow: [
      "tc.{team}.>", "$KV.tc_{team}.>",
      "$JS.API.INFO",
      "$JS.API.STREAM.*.tc_{team}", "$JS.API.STREAM.*.KV_tc_{team}",
      "$JS.API.STREAM.MSG.GET.tc_{team}", "$JS.API.STREAM.MSG.GET.KV_tc_{team}",
      "$JS.API.DIRECT.GET.tc_{team}", "$JS.API.DIRECT.GET.tc_{team}.>",
      "$JS.API.DIRECT.GET.KV_tc_{team}", "$JS.API.DIRECT.GET.KV_tc_{team}.>"
    ] }}
    subscribe: {{ allow: [ "tcw.{team}.>", "_INBOX_{user}.>" ] }}
  }} }}"#
    )
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
