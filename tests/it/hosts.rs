//! Two hosts, one team (issue 15 part 3): two homes, each with its own private tmux server,
//! that share nothing but a nats-server on loopback play host A and host B. A member started on
//! one host is judged on the other by its heartbeat lease only, is never started a second time
//! there, and is stopped from there by request (its own host ends its worker and closes its
//! pane). Heartbeats are shortened (`TEAMCTL_HEARTBEAT_MS`) so a lease runs out in a second.

use std::time::Duration;

use crate::common::nats::NatsServer;
use crate::common::{TestEnv, wait_until};

const T: Duration = Duration::from_secs(30);

/// Host A made team alpha on `nats`; host B joined it. Both use short heartbeats.
fn two_hosts(nats: &NatsServer, tmux: bool) -> (TestEnv, TestEnv) {
    two_hosts_beating(nats, tmux, 200)
}

/// As `two_hosts`, with a heartbeat every `beat_ms` (a lease of four beats).
fn two_hosts_beating(nats: &NatsServer, tmux: bool, beat_ms: u64) -> (TestEnv, TestEnv) {
    let make = || {
        let mut e = if tmux {
            TestEnv::with_tmux()
        } else {
            TestEnv::new()
        };
        e.env
            .push(("TEAMCTL_HEARTBEAT_MS".into(), beat_ms.to_string()));
        e
    };
    let a = make();
    let mut b = make();
    a.ok(&["create", "alpha", "--store", &nats.url()]);
    b.env.push(("TEAMCTL_STORE".into(), nats.url()));
    b.env.push(("TEAMCTL_TEAM".into(), "alpha".into()));
    b.ok(&["status"]);
    (a, b)
}

fn spawn_echo(env: &TestEnv, name: &str, backend: &str) {
    env.ok(&[
        "spawn",
        name,
        "--backend",
        backend,
        "--exec",
        &format!(r#"echo "{name}:$(cat)""#),
    ]);
}

fn alive(pid: u64) -> bool {
    teamctl::backend::proc::running(pid as u32)
}

fn signal(pid: u64, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
}

#[test]
fn a_member_running_on_another_host_is_not_started_again() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&a, "bob", "process");
    b.ok(&["send", "bob", "from b"]);
    wait_until("bob's reply", T, || {
        a.ok(&["inbox", "--all"]).contains("bob:from b")
    });
    assert!(
        b.processes().is_empty(),
        "B started a worker of its own for bob"
    );
    // B sees him by his lease, with the host he runs on; A sees him as its own. (His reply
    // is stored before he acknowledges the message and marks himself idle: waited for.)
    wait_until("bob idle as B sees him", T, || {
        b.member("bob")["status"] == "idle"
    });
    let seen = b.member("bob");
    assert_eq!(seen["status"], "idle", "{seen}");
    let host = seen["host"].as_str().unwrap_or_default();
    assert!(
        host.ends_with(&a.home_path().display().to_string()),
        "{seen}"
    );
    assert!(a.member("bob").get("host").is_none());
    assert!(b.ok(&["status"]).contains("HOST"));
    // What only A can do is refused on B, saying where.
    let err = b.fails(&["attach", "bob"], 1);
    assert!(err.contains("runs on host"), "{err}");
    assert!(err.contains(&a.home_path().display().to_string()), "{err}");
    let err = b.fails(&["interrupt", "bob"], 1);
    assert!(err.contains("runs on host"), "{err}");
}

/// A worker that stops renewing its lease (its host paused) is dead to the other host, whose
/// mail then waits instead of starting it; `resume --here` moves it, and the old worker, back
/// again, ends itself instead of reading the same inbox.
#[test]
fn a_silent_host_s_member_is_dead_elsewhere_moved_by_resume_here_and_fenced_on_return() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&a, "bob", "process");
    wait_until("bob idle on B", T, || b.member_status("bob") == "idle");
    let old = a.member("bob")["pid"].as_u64().unwrap();
    signal(old, nix::sys::signal::Signal::SIGSTOP);
    wait_until("bob dead on B", T, || b.member_status("bob") == "dead");

    let out = b.run(&["send", "bob", "while away"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("waits in its inbox"), "{err}");
    assert!(err.contains("--here"), "{err}");
    assert!(b.processes().is_empty(), "B's send started bob on B");
    let err = b.fails(&["resume", "bob"], 1);
    assert!(err.contains("--here"), "{err}");
    assert!(b.processes().is_empty());

    b.ok(&["resume", "bob", "--here"]);
    wait_until("bob's reply from B", T, || {
        b.ok(&["inbox", "--all"]).contains("bob:while away")
    });
    // Its next turn's process, started ahead once a turn has run, is not a second worker.
    let workers: Vec<u32> = b
        .processes()
        .into_iter()
        .filter(|&p| !crate::common::is_waiting_turn(p))
        .collect();
    assert_eq!(workers.len(), 1, "one worker for bob on B");
    assert!(b.member("bob").get("host").is_none(), "bob is B's own now");
    assert!(a.member("bob")["host"].is_string(), "and A sees him on B");

    signal(old, nix::sys::signal::Signal::SIGCONT);
    wait_until("A's old worker ends itself", T, || !alive(old));
    assert!(a.processes().is_empty());
    // The message was handled once, by B's worker.
    b.ok(&["send", "bob", "after"]);
    wait_until("the next reply", T, || {
        b.ok(&["inbox", "--all"]).contains("bob:after")
    });
    let inbox: serde_json::Value =
        serde_json::from_str(&b.ok(&["--json", "inbox", "--all", "--peek"])).unwrap();
    let replies = inbox
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["text"] == "bob:while away\n")
        .count();
    assert_eq!(replies, 1, "{inbox}");
}

/// Host B's leader shuts down and kills A's teammates: A's workers end themselves and A's tmux
/// closes their panes; nothing of them is left on either host.
#[test]
fn another_host_shuts_down_and_kills_a_member_and_its_pane_closes_where_it_ran() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, true);
    spawn_echo(&a, "bob", "tmux");
    spawn_echo(&a, "carol", "process");
    wait_until("both idle on B", T, || {
        b.member_status("bob") == "idle" && b.member_status("carol") == "idle"
    });
    let pane = a.member("bob")["paneId"].as_str().unwrap().to_string();
    assert!(a.pane_format(&pane, "#{pane_id}").is_some());

    b.ok(&["shutdown", "bob", "--timeout", "20"]);
    assert_eq!(b.member_status("bob"), "stopped");
    wait_until("bob's pane closed on A", T, || {
        a.pane_format(&pane, "#{pane_id}").is_none()
    });

    let carol = a.member("carol")["pid"].as_u64().unwrap();
    let out = b.ok(&["kill", "carol"]);
    assert!(out.contains("ends itself"), "{out}");
    wait_until("carol's worker ended on A", T, || !alive(carol));
    wait_until("nothing left on A", T, || a.processes().is_empty());
    assert!(b.processes().is_empty());
    assert_eq!(a.member_status("carol"), "stopped");
}

/// `delete --force` on host A while host B's teammate runs: A cannot end B's worker, so the
/// worker reads that its team is gone and ends itself, its pane closed on B.
#[test]
fn a_team_deleted_on_one_host_ends_the_workers_of_the_other() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, true);
    spawn_echo(&b, "bob", "tmux");
    wait_until("bob idle on A", T, || a.member_status("bob") == "idle");
    let pane = b.member("bob")["paneId"].as_str().unwrap().to_string();
    let pid = b.member("bob")["pid"].as_u64().unwrap();
    a.ok(&["delete", "--force"]);
    wait_until("bob's worker ended on B", T, || !alive(pid));
    wait_until("bob's pane closed on B", T, || {
        b.pane_format(&pane, "#{pane_id}").is_none()
    });
    wait_until("nothing left on B", T, || b.processes().is_empty());
}

/// Whoever can write to the server can change a member's command in the shared team file; a
/// host runs only what it was told to run itself (`spawn` there): a forged command is never
/// run, and a member this host never spawned is not started on the file's word.
#[test]
fn a_host_runs_only_what_it_spawned_never_a_command_forged_in_the_shared_file() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    b.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        r#"echo "bob:$(cat):$TEAMCTL_SESSION_ID""#,
    ]);
    let session = b.ok(&["ask", "bob", "first"]);
    let session = session.trim().rsplit(':').next().unwrap().to_string();
    assert_eq!(session.len(), 36, "{session}");
    b.ok(&["shutdown", "bob", "--timeout", "20"]);
    // The "attacker": anyone with the server, here through the library on A's pointer.
    let pwned = a.work.path().join("pwned");
    let evil_socket = a.work.path().join("evil.sock");
    let store = teamctl::store::Home::new(a.home_path().to_path_buf())
        .open(&teamctl::domain::Name::parse("alpha").unwrap())
        .unwrap();
    store
        .update(&mut |cfg| {
            let m = cfg.member_mut("bob").unwrap();
            m.command = Some(format!("touch {}", pwned.display()));
            m.on_shutdown = Some(format!("touch {}", pwned.display()));
            m.session_id = Some("--mcp-config=evil".into());
            m.worktree = Some(pwned.display().to_string());
            m.worktree_repo = Some(pwned.display().to_string());
            m.agent_id = "carol@alpha".into();
            m.backend_type = Some(teamctl::domain::BackendType::Tmux);
            m.tmux_socket = Some(evil_socket.display().to_string());
            m.pane_id = None;
            Ok(())
        })
        .unwrap();
    // B's mail resumes its own bob, who runs what B spawned.
    b.ok(&["send", "bob", "hi"]);
    let want = format!("bob:hi:{session}");
    wait_until("bob's reply", T, || {
        b.ok(&["inbox", "--all"]).contains(&want)
    });
    assert!(!pwned.exists(), "the forged command ran");
    assert!(
        !evil_socket.exists(),
        "a tmux server was started where the file said"
    );
    assert_eq!(b.member("bob")["backend"], "process");
    b.ok(&["shutdown", "bob", "--timeout", "20"]);
    assert!(!pwned.exists(), "the forged --on-shutdown ran");
    // Without B's own copy (never spawned there), B does not start it on the file's word.
    std::fs::remove_file(b.team_dir("alpha").join("specs").join("bob.json")).unwrap();
    let err = b.fails(&["resume", "bob"], 1);
    assert!(err.contains("not spawned on this host"), "{err}");
    assert!(!pwned.exists());
    assert!(b.processes().is_empty());
}

/// `delete --force` on A and a new team of the same name: B's worker of the old team ends
/// itself (its team was made again), never reading the new team's inbox.
#[test]
fn a_worker_of_a_deleted_team_does_not_live_on_in_a_new_team_of_the_same_name() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&b, "bob", "process");
    wait_until("bob idle on A", T, || a.member_status("bob") == "idle");
    let pid = b.member("bob")["pid"].as_u64().unwrap();
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    a.ok(&["delete", "--force"]);
    a.ok(&["create", "alpha", "--store", &nats.url()]);
    signal(pid, nix::sys::signal::Signal::SIGCONT);
    wait_until("the old worker ended", T, || !alive(pid));
}

/// A worker back from a pause after its member moved starts no turn: the messages sent while
/// it was away are handled once, by the member's new worker.
#[test]
fn a_worker_back_from_a_pause_after_its_member_moved_starts_no_turn() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&a, "bob", "process");
    wait_until("bob idle on B", T, || b.member_status("bob") == "idle");
    let old = a.member("bob")["pid"].as_u64().unwrap();
    signal(old, nix::sys::signal::Signal::SIGSTOP);
    wait_until("bob dead on B", T, || b.member_status("bob") == "dead");
    b.ok(&["resume", "bob", "--here"]);
    wait_until("bob idle on B", T, || b.member_status("bob") == "idle");
    let new = b.member("bob")["pid"].as_u64().unwrap();
    // Both paused: the mail waits for whichever comes back first, the old one.
    signal(new, nix::sys::signal::Signal::SIGSTOP);
    b.ok(&["send", "bob", "m1"]);
    b.ok(&["send", "bob", "m2"]);
    signal(old, nix::sys::signal::Signal::SIGCONT);
    wait_until("the old worker ended", T, || !alive(old));
    signal(new, nix::sys::signal::Signal::SIGCONT);
    wait_until("both replies", T, || {
        let inbox = b.ok(&["inbox", "--all", "--peek"]);
        inbox.contains("bob:m1") && inbox.contains("bob:m2")
    });
    let log = std::fs::read_to_string(a.team_dir("alpha").join("logs").join("bob.log"))
        .unwrap_or_default();
    assert!(log.contains("ready"), "not the old worker's log: {log}");
    assert!(!log.contains("m1") && !log.contains("m2"), "{log}");
    let inbox: serde_json::Value =
        serde_json::from_str(&b.ok(&["--json", "inbox", "--all", "--peek"])).unwrap();
    for m in ["bob:m1\n", "bob:m2\n"] {
        let n = inbox
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["text"] == m)
            .count();
        assert_eq!(n, 1, "{m}: {inbox}");
    }
}

/// Host B joined alpha (its pointer, `store.json`); host A deletes the team. B's pointer then
/// names a server without the team: `delete` (plain or `--force`) removes it from B's home and
/// exits 0, and a home that led it can `create` again; `status` says how to get rid of it.
#[test]
fn a_team_deleted_on_another_host_is_removed_from_this_home_by_delete() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    // A third host joined too, and works on alpha as its current team (the state a home
    // reached when joining made the team current).
    let mut c = TestEnv::new();
    c.env.push(("TEAMCTL_STORE".into(), nats.url()));
    c.ok(&["--team", "alpha", "status"]);
    std::fs::write(c.home_path().join("current"), "alpha").unwrap();
    assert!(c.fails(&["create", "other"], 2).contains("already lead"));
    a.ok(&["delete", "--force"]);

    let err = b.fails(&["status"], 2);
    assert!(err.contains("no longer on the NATS server"), "{err}");
    assert!(err.contains("teamctl delete --team alpha"), "{err}");
    let out = b.ok(&["delete"]);
    assert!(out.contains("already deleted on the NATS server"), "{out}");
    assert!(!b.team_dir("alpha").exists());

    let out = c.ok(&["delete", "--force"]);
    assert!(out.contains("already deleted"), "{out}");
    assert!(!c.team_dir("alpha").exists());
    assert!(!c.home_path().join("current").exists());
    c.env.retain(|(k, _)| k != "TEAMCTL_STORE");
    assert_eq!(c.ok(&["create", "other"]).trim(), "other");
}

/// `doctor` reports a pointer to a team the server no longer has; `doctor --fix` removes it.
#[test]
fn doctor_fix_removes_a_pointer_to_a_team_deleted_on_another_host() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    a.ok(&["delete", "--force"]);
    let out = b.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(text.contains("no longer on the NATS server"), "{text}");
    assert!(b.team_dir("alpha").join("store.json").exists());
    let out = b.run(&["doctor", "--fix"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("removed"), "{text}");
    assert!(!b.team_dir("alpha").exists(), "{text}");
}

/// `delete --leave` on host B removes only B's pointer and local directory: refused while a
/// member of B runs, never touching the team on the server, which A keeps using. A file-store
/// team has nothing to leave; `create` in a home leading a NATS team names `--leave`.
#[test]
fn delete_leave_removes_only_this_home_s_pointer() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&a, "bob", "process");
    spawn_echo(&b, "carol", "process");
    wait_until("carol idle", T, || b.member_status("carol") == "idle");

    let err = b.fails(&["delete", "--leave"], 1);
    assert!(err.contains("carol"), "{err}");
    assert!(!err.contains("bob"), "{err}");
    assert!(b.team_dir("alpha").join("store.json").exists());
    b.ok(&["shutdown", "carol", "--timeout", "20"]);
    let out = b.ok(&["delete", "--leave"]);
    assert!(out.contains("left team alpha"), "{out}");
    assert!(!b.team_dir("alpha").exists());

    // The team, its members and its mail are all still there for A.
    assert_eq!(a.member_status("bob"), "idle");
    assert_eq!(a.member_status("carol"), "stopped");
    a.ok(&["send", "bob", "still here"]);
    wait_until("bob's reply on A", T, || {
        a.ok(&["inbox", "--all"]).contains("bob:still here")
    });
    let err = a.fails(&["create", "other"], 2);
    assert!(err.contains("delete --leave"), "{err}");

    let f = TestEnv::new();
    f.ok(&["create", "files"]);
    let err = f.fails(&["delete", "--leave"], 2);
    assert!(err.contains("not on a NATS server"), "{err}");
    assert!(f.team_dir("files").exists());
    let err = f.fails(&["create", "other"], 2);
    assert!(!err.contains("--leave"), "{err}");
}

/// `resume` with no name on host B resumes B's stopped members and skips A's, saying where
/// they run; A's member stays stopped.
#[test]
fn resume_without_a_name_skips_members_of_another_host() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&a, "bob", "process");
    spawn_echo(&b, "carol", "process");
    wait_until("both idle", T, || {
        b.member_status("bob") == "idle" && b.member_status("carol") == "idle"
    });
    a.ok(&["shutdown", "bob", "--timeout", "20"]);
    b.ok(&["shutdown", "carol", "--timeout", "20"]);
    wait_until("both stopped on B", T, || {
        b.member_status("bob") == "stopped" && b.member_status("carol") == "stopped"
    });

    let out = b.run(&["resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("skipped bob"), "{err}");
    assert!(err.contains(&a.home_path().display().to_string()), "{err}");
    assert!(err.contains("--here"), "{err}");
    wait_until("carol back on B", T, || b.member_status("carol") == "idle");
    assert_eq!(b.processes().len(), 1, "only carol runs on B");
    assert_eq!(a.member_status("bob"), "stopped");
    assert!(a.processes().is_empty());
}

/// Hints about a member of another host name that host and `--here`, never a plain `resume`
/// that this host would refuse: `wait`, `ask`, `doctor`, `send`, `attach`.
#[test]
fn hints_about_a_member_of_another_host_point_at_that_host() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    spawn_echo(&a, "bob", "process");
    wait_until("bob idle on B", T, || b.member_status("bob") == "idle");
    let err = b.fails(&["attach", "bob"], 1);
    assert!(err.contains("process backend"), "{err}");
    assert!(!err.contains("pane is there"), "{err}");

    let old = a.member("bob")["pid"].as_u64().unwrap();
    signal(old, nix::sys::signal::Signal::SIGSTOP);
    wait_until("bob dead on B", T, || b.member_status("bob") == "dead");
    let home = a.home_path().display().to_string();

    let err = b.fails(&["wait", "bob", "--timeout", "20"], 1);
    assert!(err.contains("was started on host"), "{err}");
    assert!(err.contains(&home), "{err}");
    assert!(err.contains("resume bob --here"), "{err}");

    let err = b.fails(&["ask", "bob", "hello", "--timeout", "20"], 1);
    assert!(err.contains("was started on host"), "{err}");
    assert!(err.contains("resume bob --here"), "{err}");

    let out = b.run(&["send", "bob", "later"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("was started on host"), "{err}");
    assert!(!err.contains("runs on"), "{err}");

    let out = b.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bob@alpha is dead"), "{text}");
    assert!(text.contains("was started on host"), "{text}");
    assert!(text.contains("resume --team alpha bob --here"), "{text}");
    signal(old, nix::sys::signal::Signal::SIGCONT);
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Leaving (or dropping a team another host deleted) removes this host's worktrees through
/// git, so the repository keeps no stale entry; one with uncommitted changes is kept and the
/// command refused (`delete --force` of a deleted team removes it anyway).
#[test]
fn leaving_removes_this_host_s_worktrees_through_git_and_keeps_uncommitted_work() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, false);
    let repo = b.work.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let r = repo.display().to_string();
    b.ok(&[
        "spawn",
        "carol",
        "--backend",
        "process",
        "--cwd",
        &r,
        "--worktree",
        "--exec",
        "cat",
    ]);
    b.ok(&["shutdown", "carol", "--timeout", "20"]);
    let tree = b.team_dir("alpha").join("worktrees/carol");
    std::fs::write(tree.join("README"), "changed\n").unwrap();

    let err = b.fails(&["delete", "--leave"], 1);
    assert!(err.contains("uncommitted changes"), "{err}");
    assert!(tree.join("README").is_file());
    git(&tree, &["checkout", "README"]);
    b.ok(&["delete", "--leave"]);
    assert!(!b.team_dir("alpha").exists());
    assert!(!git(&repo, &["worktree", "list"]).contains("carol"));

    // Joined again, a worktree again, then the team deleted from A while it is dirty.
    b.ok(&["status"]);
    // This home's own copy of what carol runs went with it: taken again from the record.
    let err = b.fails(&["resume", "carol"], 1);
    assert!(err.contains("not spawned on this host"), "{err}");
    b.ok(&["resume", "carol", "--here"]);
    b.ok(&["shutdown", "carol", "--timeout", "20"]);
    std::fs::write(tree.join("README"), "changed\n").unwrap();
    a.ok(&["delete", "--force"]);
    let err = b.fails(&["delete"], 1);
    assert!(err.contains("uncommitted changes"), "{err}");
    assert!(err.contains("--force"), "{err}");
    b.ok(&["delete", "--force"]);
    assert!(!b.team_dir("alpha").exists());
    assert!(!git(&repo, &["worktree", "list"]).contains("carol"));
}

/// `up` of another team in a home that leads a NATS team says how to leave that one for this
/// home only, as `create` does.
#[test]
fn up_while_leading_a_nats_team_names_delete_leave() {
    let nats = NatsServer::start();
    let (a, _b) = two_hosts(&nats, false);
    std::fs::write(
        a.work.path().join("teamctl.toml"),
        "name = \"beta\"\n\n[[member]]\nname = \"bob\"\nexec = \"cat\"\nbackend = \"process\"\n",
    )
    .unwrap();
    let err = a.fails(&["up"], 2);
    assert!(err.contains("already lead team \"alpha\""), "{err}");
    assert!(err.contains("delete --leave --team alpha"), "{err}");
}

/// A shutdown from A of a member whose host stopped answering says, after a moment, whom it
/// waits for and that the member's lease decides, instead of waiting silently for the lease.
#[test]
fn a_shutdown_waiting_on_a_silent_host_says_so_and_ends_when_the_lease_runs_out() {
    let nats = NatsServer::start();
    // A lease of 4 s: longer than the quiet wait before the notice.
    let (a, b) = two_hosts_beating(&nats, false, 1000);
    spawn_echo(&b, "bob", "process");
    wait_until("bob idle on A", T, || a.member_status("bob") == "idle");
    let pid = b.member("bob")["pid"].as_u64().unwrap();
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    let out = a.run(&["shutdown", "bob", "--timeout", "30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("waiting for bob to answer") && err.contains("heartbeat lease"),
        "{err}"
    );
    assert_eq!(a.member_status("bob"), "stopped");
    signal(pid, nix::sys::signal::Signal::SIGCONT);
    wait_until("bob's worker ended itself", T, || !alive(pid));
}

/// A home that leaves a team closes its own team session: its leader console would otherwise
/// go on acting as the team's leader. The other host's team goes on.
#[test]
fn leaving_closes_this_home_s_team_session_and_its_console() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, true);
    spawn_echo(&b, "carol", "tmux");
    wait_until("carol idle", T, || b.member_status("carol") == "idle");
    let target = format!("={}", b.session("alpha"));
    assert!(b.tmux(&["has-session", "-t", &target]).status.success());
    b.ok(&["shutdown", "carol", "--timeout", "20"]);
    b.ok(&["delete", "--leave"]);
    assert!(!b.tmux(&["has-session", "-t", &target]).status.success());
    wait_until("B's console ended", T, || b.consoles().is_empty());
    assert_eq!(a.member_status("carol"), "stopped");
}

/// After another host deletes the team, `delete` here removes this home's team session too
/// (with the leader console's pane), not only the pointer.
#[test]
fn delete_of_a_team_deleted_elsewhere_closes_this_home_s_session() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, true);
    spawn_echo(&b, "carol", "tmux");
    wait_until("carol idle", T, || b.member_status("carol") == "idle");
    let target = format!("={}", b.session("alpha"));
    a.ok(&["delete", "--force"]);
    b.ok(&["delete"]);
    assert!(!b.tmux(&["has-session", "-t", &target]).status.success());
    wait_until("B's processes ended", T, || b.processes().is_empty());
}

/// A pane this home made for a member that has since moved to another host (`resume --here`
/// after its worker died) is orphaned here: `doctor` says so and `doctor --fix` closes it.
#[test]
fn a_pane_left_by_a_member_that_moved_to_another_host_is_orphaned_here() {
    let nats = NatsServer::start();
    let (a, b) = two_hosts(&nats, true);
    spawn_echo(&a, "bob", "tmux");
    wait_until("bob idle on B", T, || b.member_status("bob") == "idle");
    let bob = a.member("bob");
    let pane = bob["paneId"]
        .as_str()
        .unwrap_or_else(|| panic!("{bob}"))
        .to_string();
    let old = bob["pid"].as_u64().unwrap();
    signal(old, nix::sys::signal::Signal::SIGKILL);
    wait_until("bob dead on B", T, || b.member_status("bob") == "dead");
    b.ok(&["resume", "bob", "--here"]);
    wait_until("bob idle on B's host", T, || {
        b.member_status("bob") == "idle"
    });
    assert!(
        a.pane_format(&pane, "#{pane_id}").is_some(),
        "A's old pane is there"
    );
    let out = a.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("orphaned tmux pane {pane}")) && text.contains("runs on"),
        "{text}"
    );
    a.ok(&["doctor", "--fix"]);
    assert!(
        a.pane_format(&pane, "#{pane_id}").is_none(),
        "A's old pane closed"
    );
    assert_eq!(b.member_status("bob"), "idle");
    b.ok(&["shutdown", "bob", "--timeout", "20"]);
}
