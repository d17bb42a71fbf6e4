//! Faults of the NATS store (issue 15 part 5): a three-node JetStream cluster whose stream
//! leader is killed (`kill -9`) under load from 16 concurrent senders, a server restarted by
//! SIGTERM under an idle worker, and teams in NATS accounts of their own that a hostile
//! team's login cannot reach.

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
    // The reply is stored before the worker says it is idle again: `ask` can return between
    // the two (it did in a full run on a loaded machine, "working").
    wait_until("bob idle", T, || env.member_status("bob") == "idle");
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
    // The worker handles one turn (a shell) per message, and under load that is slow: the
    // deadline is for the turns to stop making progress, not for all 1,600 to be done. What
    // is missing is named, so a timeout tells a lost message from a slow machine.
    let (mut count, mut stalled_at) = (0, std::time::Instant::now());
    loop {
        let seen = handled();
        let missing: Vec<_> = sent.iter().filter(|b| !seen.contains_key(*b)).collect();
        if missing.is_empty() {
            break;
        }
        if seen.len() > count {
            (count, stalled_at) = (seen.len(), std::time::Instant::now());
        }
        assert!(
            stalled_at.elapsed() < Duration::from_mins(1),
            "no progress for a minute: {} of {} sent messages not handled ({} handled in all), e.g. {:?}",
            missing.len(),
            sent.len(),
            seen.len(),
            &missing[..missing.len().min(5)]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// The account of one team on the server, its user inside: the block docs/SCALE.md gives
/// (read from there, so the documentation is exactly what is tested), TEAM, USER and PASSWORD
/// filled in.
fn team_account(team: &str, user: &str, password: &str) -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SCALE.md")).unwrap();
    let (_, after) = doc
        .split_once("<!-- one team's account;")
        .expect("docs/SCALE.md has the account block");
    let (_, block) = after.split_once("```text\n").unwrap();
    let (block, _) = block.split_once("```").unwrap();
    block
        .trim()
        .replace("USER", user)
        .replace("PASSWORD", password)
        .replace("TEAM", team)
}

/// `cond` holds all through `window`: what can be watched of something that must not happen
/// (a copy or a republish inside the server, which nothing acknowledges to the attacker's
/// victim). It is seen at once when it does happen.
fn stays(what: &str, window: Duration, mut cond: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + window;
    while std::time::Instant::now() < end {
        assert!(cond(), "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(cond(), "{what}");
}

/// A raw JetStream client logged in as `user` (replies on its own `_INBOX_USER`), with the
/// runtime to drive it.
fn login(
    port: u16,
    user: &str,
    password: &str,
) -> (tokio::runtime::Runtime, async_nats::jetstream::Context) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt
        .block_on(
            async_nats::ConnectOptions::with_user_and_password(user.into(), password.into())
                .custom_inbox_prefix(format!("_INBOX_{user}"))
                .connect(format!("127.0.0.1:{port}")),
        )
        .unwrap();
    // The context spawns onto the runtime as it is made.
    let js = {
        let _inside = rt.enter();
        async_nats::jetstream::new(client)
    };
    (rt, js)
}

/// What a hostile login of team beta does to team alpha with nothing but its own stream and
/// bucket (found by the attacker QA): it updates `tc_beta` to source `tc_alpha` (alpha's mail
/// copied where beta reads) and to republish what it stores on `tc.beta.inbox.evil` to alpha's
/// leader inbox, and `KV_tc_beta` the same towards alpha's keys (team file, tasks), then
/// writes beta's own envelope, team file and task list through them. Each step the server
/// refuses is left out (a refusal is no harm); returns what was taken, for the failure text.
fn attack_alpha_as_beta(port: u16, user: &str, password: &str) -> Vec<String> {
    use async_nats::jetstream::stream;
    let (rt, js) = login(port, user, password);
    rt.block_on(async {
        let mut taken = Vec::new();
        // Beta's own records, to forge alpha's with (valid, so alpha would take them).
        let last = |s: &'static str, subject: &'static str| {
            let js = js.clone();
            async move {
                let stream = js.get_stream(s).await.unwrap();
                stream
                    .get_last_raw_message_by_subject(subject)
                    .await
                    .unwrap()
                    .payload
            }
        };
        let mail = last("tc_beta", "tc.beta.inbox.carol").await;
        let config = last("KV_tc_beta", "$KV.tc_beta.config").await;
        let tasks = last("KV_tc_beta", "$KV.tc_beta.tasks").await;
        for (name, source, from, to) in [
            (
                "tc_beta",
                "tc_alpha",
                "tc.beta.inbox.evil",
                "tc.alpha.inbox.team-lead",
            ),
            (
                "KV_tc_beta",
                "KV_tc_alpha",
                "$KV.tc_beta.evil.*",
                "$KV.tc_alpha.{{wildcard(1)}}",
            ),
        ] {
            let mut s = js.get_stream(name).await.unwrap();
            let mut config = s.info().await.unwrap().config.clone();
            config.sources = Some(vec![stream::Source {
                name: source.into(),
                ..Default::default()
            }]);
            config.republish = Some(stream::Republish {
                source: from.into(),
                destination: to.into(),
                headers_only: false,
            });
            match js.update_stream(config).await {
                Ok(_) => taken.push(format!(
                    "{name}: sources {source}, republish {from} -> {to}"
                )),
                Err(e) => eprintln!("{name} update refused: {e}"),
            }
        }
        for (subject, bytes) in [
            ("tc.beta.inbox.evil", mail),
            ("$KV.tc_beta.evil.config", config),
            ("$KV.tc_beta.evil.tasks", tasks),
        ] {
            match js.publish(subject, bytes).await {
                Ok(ack) => match ack.await {
                    Ok(_) => taken.push(format!("stored on {subject}")),
                    Err(e) => eprintln!("{subject} not stored: {e}"),
                },
                Err(e) => eprintln!("{subject} refused: {e}"),
            }
        }
        taken
    })
}

/// Whether beta's stream or bucket (as beta's login reads them) holds anything of alpha's.
fn beta_holds_alphas(port: u16, user: &str, password: &str) -> bool {
    let (rt, js) = login(port, user, password);
    rt.block_on(async {
        for (name, subject) in [
            ("tc_beta", "tc.alpha.inbox.dave"),
            ("tc_beta", "tc.alpha.inbox.team-lead"),
            ("KV_tc_beta", "$KV.tc_alpha.config"),
        ] {
            let stream = js.get_stream(name).await.unwrap();
            if stream
                .get_last_raw_message_by_subject(subject)
                .await
                .is_ok()
            {
                return true;
            }
        }
        false
    })
}

/// Two teams, each in a NATS account of its own with its user (the block docs/SCALE.md
/// gives): alice runs alpha; anything she tries on beta (create, read, send) is refused with
/// one line and exit 1, and beta is left as it was. Beta's login, turned hostile, updates its
/// own stream and bucket to copy alpha's mail and to write alpha's inbox, team file and task
/// list (sources and republish, which subject permissions cannot stop): alpha is untouched
/// and nothing of alpha's reaches beta. A login of alpha's account without the permissions
/// is told that beta is not on the server for it, not to make it.
#[test]
fn a_teams_user_reaches_its_own_team_only() {
    // Eve: a second user of alpha's account, without the permissions (another account's
    // login that beta's name means nothing to).
    let nats = NatsServer::start_with(&format!(
        "accounts {{\n{}\n{}\n}}",
        team_account("alpha", "alice", "pa").replacen(
            "users: [",
            "users: [\n{ user: eve, password: pe },",
            1
        ),
        team_account("beta", "bob", "pb"),
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
    bob.ok(&["task", "add", "beta's own task"]);
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
    alice.ok(&["task", "add", "alpha's own task"]);
    wait_until("dave idle", T, || alice.member_status("dave") == "idle");
    let beta_before = bob.ok(&["--json", "inbox", "--peek", "--as", "carol", "--all"]);
    let status_before = bob.ok(&["--json", "status"]);
    // Alpha as its leader sees it: inboxes, team file, tasks.
    let alpha_view = || {
        [
            vec!["--json", "inbox", "--peek", "--all"],
            vec!["--json", "inbox", "--peek", "--all", "--as", "dave"],
            vec!["--json", "status"],
            vec!["--json", "task", "list"],
        ]
        .iter()
        .map(|args| {
            let out = alice.run(args);
            format!(
                "{:?}\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .collect::<Vec<_>>()
    };
    let alpha_before = alpha_view();

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
    // From another account, beta is not there at all: not "create it".
    let mut eve = TestEnv::new();
    eve.env.push(("TEAMCTL_STORE".into(), as_user("eve:pe")));
    let err = eve.fails(&["--team", "alpha", "send", "carol@beta", "hello"], 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("for this login"), "{err}");
    assert!(err.contains("another NATS account"), "{err}");
    assert!(!err.contains("teamctl create"), "{err}");
    assert!(!err.contains("pe@"), "{err}");

    // Beta's login turns on alpha with its own stream and bucket.
    let taken = attack_alpha_as_beta(nats.port, "bob", "pb");
    stays(
        &format!("alpha untouched and nothing of alpha's in beta, after: {taken:?}"),
        Duration::from_secs(3),
        || alpha_view() == alpha_before && !beta_holds_alphas(nats.port, "bob", "pb"),
    );
    // Alpha still works for alice, and its new mail does not reach beta either.
    assert_eq!(alice.ok(&["ask", "dave", "still"]).trim(), "dave:still");
    assert!(!beta_holds_alphas(nats.port, "bob", "pb"));

    assert_eq!(
        bob.ok(&["--json", "inbox", "--peek", "--as", "carol", "--all"]),
        beta_before
    );
    assert_eq!(bob.ok(&["--json", "status"]), status_before);
}
