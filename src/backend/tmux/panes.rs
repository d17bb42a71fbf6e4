//! Telling whether a tmux teammate's worker is there, from what tmux says about its pane: the
//! one rule (`verdict`, pure) shared by the single-member probe and the whole-team views, and
//! `Panes`, every pane of each server read with one `list-panes -a` per server, so a view of
//! 300 teammates costs one tmux process instead of 300. A pane's tag counts only while the pane
//! runs (or last ran) the process teamctl tagged it for (`argv::parse_state`).

use std::collections::HashMap;

use super::argv::{self, PaneState, Server};
use super::run::{Fail, Tmux};
use crate::backend::{Liveness, proc, process};
use crate::domain::{LiveState, Member};

/// What tmux's word about a member's pane means, before any look at processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No pane recorded, a dead pane, or a pane carrying someone else's tag (or none; or this
    /// member's name in another home; or a tag set for a process the pane no longer runs).
    Gone,
    /// The pane is alive and carries the member's tag: the worker runs there, unless the
    /// pane's pid is a running process that is not this member's worker.
    TaggedPane { pid: Option<u32> },
    /// The pane is alive and carries the member's tag for a process it no longer runs: the
    /// user respawned it. It holds the teammate only when what it runs now is this member's
    /// worker: the pane re-run (`respawn-pane -k` with no command runs the same `teamctl
    /// worker` line), a worker that takes the pane back as it starts (`tmux::take_back`).
    Respawned { pid: Option<u32> },
    /// No word about the pane (it is gone, or tmux cannot be run from here: a minimal PATH,
    /// an agent's environment): the worker process itself decides, tag checked, so a live
    /// teammate is never taken for dead and "resumed" over.
    AskWorker,
}

/// The rule, given the pane's state as tmux printed it (`None`: no word about it). The tag
/// must be the member's agent id scoped to this home (`argv::scoped`). A pane carrying the
/// bare agent id was tagged by an older teamctl, which did not say which home: it may be
/// another home's, so it proves nothing and is never closed; the worker process (whose tag
/// names its home) decides.
pub fn verdict(member: &Member, pane: Option<&PaneState>) -> Verdict {
    if member.pane_id.is_none() {
        return Verdict::Gone;
    }
    let ours = argv::scoped(&member.agent_id, &proc::home_key());
    match pane {
        None => Verdict::AskWorker,
        Some(s) if !s.dead && s.tag == ours => Verdict::TaggedPane { pid: s.pid },
        Some(s) if !s.dead && s.tag == member.agent_id => Verdict::AskWorker,
        Some(s) if !s.dead && s.stale_tag == ours => Verdict::Respawned { pid: s.pid },
        Some(_) => Verdict::Gone,
    }
}

/// The member's liveness from the pane's state (`None`: no word), processes checked by tag.
/// Gone by its pane, a teammate whose worker runs all the same is alive: a worker started
/// by hand (from the pane's shell, say: the pane then shows the shell), or a pane looked for
/// on another server than its own (another `TMUX_TMPDIR`), or tags changed by hand. Taken for
/// dead, it was started a second time over the live one, its turn run twice (attacker QA
/// 41). Not an interactive teammate's: its pane runs its agent, the worker is a companion.
pub fn liveness(member: &Member, live: Option<&LiveState>, pane: Option<&PaneState>) -> Liveness {
    match by_pane(member, live, pane) {
        Liveness::Gone if member.interactive.is_none() => {
            process::recorded_worker_runs(member, live)
        }
        seen => seen,
    }
}

/// `liveness` by what the pane shows.
fn by_pane(member: &Member, live: Option<&LiveState>, pane: Option<&PaneState>) -> Liveness {
    match verdict(member, pane) {
        Verdict::Gone => Liveness::Gone,
        Verdict::AskWorker => process::worker_liveness(member, live),
        Verdict::TaggedPane { pid } if member.interactive.is_some() => {
            // An interactive teammate's pane runs its agent (tagged in its environment) and
            // its worker is the detached companion: both must be there.
            let foreign = pid
                .is_some_and(|p| proc::running(p) && !proc::is_agent_process(p, &member.agent_id));
            if foreign {
                Liveness::Gone
            } else {
                process::worker_liveness(member, live)
            }
        }
        // Until its worker has taken the pane back: alive, so no second worker is started
        // beside it. An interactive teammate's pane runs its agent, never its worker.
        Verdict::Respawned { pid } => {
            let rerun = member.interactive.is_none()
                && pid.is_some_and(|p| proc::is_worker(p, &member.agent_id));
            if rerun {
                Liveness::Alive
            } else {
                Liveness::Gone
            }
        }
        Verdict::TaggedPane { pid } => {
            // The pane runs the worker itself: the pid it shows must be that worker, running.
            // The process the start made and recorded, not yet the worker (`exec` to come),
            // is no one else's. A pid that no longer runs (a zombie tmux has not reaped yet,
            // or gone) is a worker that has ended: tmux marks the pane dead only once it has
            // seen that, and until then this one-pane look said alive while a later look at
            // every pane said dead (QA 40: a `send` right after a worker was killed neither
            // resumed nor held it). Neither check counts a zombie: its command line is empty.
            let ours = |p: u32| {
                proc::is_worker(p, &member.agent_id)
                    || (member.pid == Some(p) && process::started_here(member))
            };
            if pid.is_none_or(ours) {
                Liveness::Alive
            } else {
                Liveness::Gone
            }
        }
    }
}

/// The panes of one server (none when no server runs there), or `None` when `list-panes -a`
/// failed otherwise (no tmux).
type Table = Option<HashMap<String, PaneState>>;

/// Every pane of some tmux servers, each read once.
#[derive(Debug, Clone, Default)]
pub struct Panes {
    servers: Vec<(Server, Table)>,
}

impl Panes {
    /// Read the servers of the tmux members among `members` that have a pane: one
    /// `list-panes -a` per distinct server.
    pub fn read<'a>(
        program: &std::path::Path,
        members: impl IntoIterator<Item = &'a Member>,
    ) -> Panes {
        let mut panes = Panes::default();
        for m in members {
            // A member of another host is judged by its lease: its tmux server is not this
            // host's to ask (and the socket path its record names is not this host's own).
            if m.name.is_leader()
                || m.pane_id.is_none()
                || m.backend_type != Some(crate::domain::BackendType::Tmux)
                || crate::backend::host::elsewhere(m).is_some()
            {
                continue;
            }
            let server = Server::from_record(m.tmux_socket.as_deref());
            if panes.table(&server).is_none() {
                let table = match Tmux::new(program.to_path_buf(), server.clone())
                    .run(&[argv::all_pane_states()])
                {
                    Ok(out) => Some(argv::parse_pane_states(&out).into_iter().collect()),
                    // No server there (it died, or was never started): no pane at all.
                    Err(Fail::Gone(_)) => Some(HashMap::new()),
                    Err(_) => None,
                };
                panes.servers.push((server, table));
            }
        }
        panes
    }

    /// The table of `server`, `None` when it was not read.
    fn table(&self, server: &Server) -> Option<&Table> {
        self.servers
            .iter()
            .find(|(s, _)| s == server)
            .map(|(_, t)| t)
    }

    /// A tmux member's liveness from this reading, `None` when its server was not read.
    pub fn liveness(&self, member: &Member, live: Option<&LiveState>) -> Option<Liveness> {
        let table = self.table(&Server::from_record(member.tmux_socket.as_deref()))?;
        let pane = member
            .pane_id
            .as_deref()
            .zip(table.as_ref())
            .and_then(|(p, t)| t.get(p));
        Some(liveness(member, live, pane))
    }

    /// Is `member`'s recorded pane still its own: a pane with that id there (alive or dead)
    /// carrying the member's tag for the process it runs or last ran? `Some(false)` when it is
    /// not (gone, another's, the user's now, or no pane recorded); `None` when this reading
    /// cannot tell (its server was not read, or could not be; a tag of an older teamctl,
    /// which names no home).
    pub fn is_members_pane(&self, member: &Member) -> Option<bool> {
        let Some(pane) = member.pane_id.as_deref() else {
            return Some(false);
        };
        // Another host's pane, on that host's server.
        if crate::backend::host::elsewhere(member).is_some() {
            return None;
        }
        let table = self
            .table(&Server::from_record(member.tmux_socket.as_deref()))?
            .as_ref()?;
        match table.get(pane) {
            Some(s) if s.tag == argv::scoped(&member.agent_id, &proc::home_key()) => Some(true),
            Some(s) if s.tag == member.agent_id => None,
            _ => Some(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(pane: Option<&str>) -> Member {
        serde_json::from_value(serde_json::json!({
            "agentId": "bob@t",
            "name": "bob",
            "status": "idle",
            "backendType": "tmux",
            "paneId": pane,
            "tmuxSocket": "teamctl-unit-no-such-server",
        }))
        .unwrap()
    }

    /// A pane tagged `tag` in this home.
    fn state(dead: bool, pid: Option<u32>, tag: &str) -> PaneState {
        raw(dead, pid, &argv::scoped(tag, &proc::home_key()))
    }

    /// A pane running `pid` that carries `tag` of this home for another process (respawned).
    fn respawned(pid: u32, tag: &str) -> PaneState {
        PaneState {
            dead: false,
            pid: Some(pid),
            tag: String::new(),
            stale_tag: argv::scoped(tag, &proc::home_key()),
            nonce: String::new(),
        }
    }

    /// A pane whose tag is exactly `tag`.
    fn raw(dead: bool, pid: Option<u32>, tag: &str) -> PaneState {
        PaneState::tagged(dead, pid, tag)
    }

    #[test]
    fn the_verdict_covers_every_word_tmux_can_give() {
        let m = member(Some("%3"));
        // Alive and tagged: the pane's pid is checked next.
        assert_eq!(
            verdict(&m, Some(&state(false, Some(7), "bob@t"))),
            Verdict::TaggedPane { pid: Some(7) }
        );
        assert_eq!(
            verdict(&m, Some(&state(false, None, "bob@t"))),
            Verdict::TaggedPane { pid: None }
        );
        // A dead pane, even tagged.
        assert_eq!(
            verdict(&m, Some(&state(true, Some(7), "bob@t"))),
            Verdict::Gone
        );
        // Someone else's tag, or none (a pane id reused after a server restart).
        assert_eq!(
            verdict(&m, Some(&state(false, Some(7), "carol@t"))),
            Verdict::Gone
        );
        assert_eq!(verdict(&m, Some(&raw(false, Some(7), ""))), Verdict::Gone);
        // Bob of team t in another home (the same server, or a pane id reused after a
        // server restart): not ours.
        assert_eq!(
            verdict(&m, Some(&raw(false, Some(7), "bob@t/0badc0de"))),
            Verdict::Gone
        );
        // An older teamctl's tag names no home: it proves nothing, the worker decides.
        assert_eq!(
            verdict(&m, Some(&raw(false, Some(7), "bob@t"))),
            Verdict::AskWorker
        );
        assert_eq!(
            verdict(&m, Some(&raw(true, Some(7), "bob@t"))),
            Verdict::Gone
        );
        assert_eq!(
            verdict(&m, Some(&state(false, Some(7), "bob@t2"))),
            Verdict::Gone
        );
        // Respawned by the user: what it runs now is checked next; dead, it is gone.
        assert_eq!(
            verdict(&m, Some(&respawned(8, "bob@t"))),
            Verdict::Respawned { pid: Some(8) }
        );
        let mut dead = respawned(8, "bob@t");
        dead.dead = true;
        assert_eq!(verdict(&m, Some(&dead)), Verdict::Gone);
        assert_eq!(verdict(&m, Some(&respawned(8, "carol@t"))), Verdict::Gone);
        // No word: the worker process decides.
        assert_eq!(verdict(&m, None), Verdict::AskWorker);
        // No pane recorded: gone whatever tmux says.
        let no_pane = member(None);
        assert_eq!(verdict(&no_pane, None), Verdict::Gone);
        assert_eq!(
            verdict(&no_pane, Some(&state(false, Some(7), "bob@t"))),
            Verdict::Gone
        );
    }

    #[test]
    fn a_tagged_pane_is_alive_unless_its_pid_is_a_foreign_process() {
        let m = member(Some("%3"));
        // Our own pid runs and is not bob's worker: foreign.
        let me = std::process::id();
        assert_eq!(
            liveness(&m, None, Some(&state(false, Some(me), "bob@t"))),
            Liveness::Gone
        );
        // No pid shown: the pane's word stands.
        assert_eq!(
            liveness(&m, None, Some(&state(false, None, "bob@t"))),
            Liveness::Alive
        );
        assert_eq!(
            liveness(&m, None, Some(&state(true, None, "bob@t"))),
            Liveness::Gone
        );
    }

    /// A worker that has ended while tmux still shows its pane alive (tmux has not reaped it,
    /// or has and not yet marked the pane dead): gone, as the later look at every pane says
    /// (QA 40). Even when it is the process the start recorded.
    #[test]
    fn a_tagged_pane_whose_process_has_ended_is_gone_before_tmux_says_so() {
        let mut m = member(Some("%3"));
        // A zombie: a child that has exited and is not waited for yet.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let stat = format!("/proc/{pid}/stat");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(&stat).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        }) {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never exited"
            );
            std::thread::yield_now();
        }
        let zombie = liveness(&m, None, Some(&state(false, Some(pid), "bob@t")));
        m.pid = Some(pid);
        m.pid_started = proc::start_time(pid);
        let recorded = m.pid_started.is_some();
        let zombie_started_here = liveness(&m, None, Some(&state(false, Some(pid), "bob@t")));
        child.wait().unwrap();
        // Reaped: no such process any more.
        let reaped = liveness(&m, None, Some(&state(false, Some(pid), "bob@t")));
        assert!(recorded, "a zombie keeps its start time");
        assert_eq!(zombie, Liveness::Gone);
        assert_eq!(zombie_started_here, Liveness::Gone);
        assert_eq!(reaped, Liveness::Gone);
        assert_eq!(
            liveness(
                &member(Some("%3")),
                None,
                Some(&state(false, Some(999_999_999), "bob@t"))
            ),
            Liveness::Gone
        );
    }

    #[test]
    fn no_word_falls_back_to_the_worker_process() {
        // No recorded worker pid runs as bob's worker: gone.
        let mut m = member(Some("%3"));
        let me = std::process::id();
        m.pid = Some(me);
        assert_eq!(liveness(&m, None, None), Liveness::Gone);
        // Unless it is the very process the start made and recorded (its start time with
        // it), not yet `exec`ed into the worker: alive, by the pane and by itself.
        m.pid_started = proc::start_time(me);
        assert_eq!(liveness(&m, None, None), Liveness::Alive);
        assert_eq!(
            liveness(&m, None, Some(&state(false, Some(me), "bob@t"))),
            Liveness::Alive
        );
        m.pid_started = m.pid_started.map(|t| t + 1);
        assert_eq!(liveness(&m, None, None), Liveness::Gone);
        assert_eq!(
            liveness(&m, None, Some(&state(false, Some(me), "bob@t"))),
            Liveness::Gone
        );
        m.pid_started = None;
        // A process with bob's worker tag (`sh worker --home H --id ID`, waiting on stdin).
        // Unit tests leave tag checks unscoped to a home (`proc::scope_to_home` is never
        // called), so any home passes.
        let home = "/teamctl-panes-unit-home";
        m.agent_id = format!("bob@panes-unit-{}", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("worker"), "read x\n").unwrap();
        let mut fake = std::process::Command::new("sh")
            .args(["worker", "--home", home, "--id", &m.agent_id])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        m.pid = Some(fake.id());
        // Until the child has exec'd, its command line is this test's.
        let cmdline = format!("/proc/{}/cmdline", fake.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sh\0worker")) {
            assert!(
                std::time::Instant::now() < deadline,
                "the fake worker never started"
            );
            std::thread::yield_now();
        }
        let alive = liveness(&m, None, None);
        // A tagged pane showing that worker's pid: alive too.
        let shown = liveness(&m, None, Some(&state(false, Some(fake.id()), &m.agent_id)));
        // A pane respawned with that worker in it (re-run by the user): alive; with another
        // program (this test's own process), or for an interactive teammate, gone.
        let rerun = liveness(&m, None, Some(&respawned(fake.id(), &m.agent_id)));
        // With another program in it (this test's own process), or another's tag, the
        // pane is not the teammate's; its worker, still running, is (started by hand).
        let theirs = liveness(&m, None, Some(&respawned(std::process::id(), &m.agent_id)));
        let untagged = liveness(&m, None, Some(&state(false, Some(7), "carol@t")));
        // Unless its start time is not the one recorded with its pid: another process given a
        // dead worker's pid, imitating a worker's command line (attacker QA 41).
        let mut reused = m.clone();
        reused.pid_started = proc::start_time(fake.id()).map(|t| t + 1);
        let imitation = liveness(&reused, None, Some(&state(false, Some(7), "carol@t")));
        reused.pid_started = proc::start_time(fake.id());
        let recorded = liveness(&reused, None, Some(&state(false, Some(7), "carol@t")));
        let mut interactive = m.clone();
        interactive.interactive = Some(crate::domain::Interactive::claude());
        let agent_pane = liveness(&interactive, None, Some(&respawned(fake.id(), &m.agent_id)));
        let _ = fake.kill();
        let _ = fake.wait();
        let theirs_no_worker =
            liveness(&m, None, Some(&respawned(std::process::id(), &m.agent_id)));
        assert_eq!(alive, Liveness::Alive);
        assert_eq!(shown, Liveness::Alive);
        assert_eq!(rerun, Liveness::Alive);
        assert_eq!(theirs, Liveness::Alive);
        assert_eq!(untagged, Liveness::Alive);
        assert_eq!(imitation, Liveness::Gone);
        assert_eq!(recorded, Liveness::Alive);
        assert_eq!(theirs_no_worker, Liveness::Gone);
        assert_eq!(agent_pane, Liveness::Gone);
    }

    #[test]
    fn a_server_that_cannot_be_read_gives_no_word_and_unread_servers_none() {
        let m = member(Some("%3"));
        let panes = Panes::read(std::path::Path::new("/nonexistent/tmux"), [&m]);
        assert_eq!(panes.servers.len(), 1);
        assert_eq!(panes.servers[0].1, None);
        // No word and no worker: gone, as a failing single probe says.
        assert_eq!(panes.liveness(&m, None), Some(Liveness::Gone));
        let mut elsewhere = m.clone();
        elsewhere.tmux_socket = Some("another".into());
        assert_eq!(panes.liveness(&elsewhere, None), None);
    }

    #[test]
    fn a_pane_is_shown_as_the_members_only_while_it_carries_its_tag_for_its_process() {
        let m = member(Some("%3"));
        let server = Server::Named("teamctl-unit-no-such-server".into());
        let reading = |panes: Vec<(&str, PaneState)>| Panes {
            servers: vec![(
                server.clone(),
                Some(panes.into_iter().map(|(p, s)| (p.to_string(), s)).collect()),
            )],
        };
        // Alive or dead (kept for reading): the member's.
        for dead in [false, true] {
            let r = reading(vec![("%3", state(dead, Some(7), "bob@t"))]);
            assert_eq!(r.is_members_pane(&m), Some(true));
        }
        // Gone (a server started again has no such pane), untagged (a pane id reused by the
        // user's pane), another's, or respawned by the user (the tag holds no more).
        let respawned = argv::parse_state(
            &format!("%3 0 8 7 {}", argv::scoped("bob@t", &proc::home_key())),
            "%3",
        )
        .unwrap();
        for panes in [
            vec![],
            vec![("%3", raw(false, Some(7), ""))],
            vec![("%3", state(false, Some(7), "carol@t"))],
            vec![("%3", respawned)],
        ] {
            assert_eq!(
                reading(panes.clone()).is_members_pane(&m),
                Some(false),
                "{panes:?}"
            );
        }
        // No word: the server could not be read, or an older teamctl's tag.
        let blind = Panes {
            servers: vec![(server.clone(), None)],
        };
        assert_eq!(blind.is_members_pane(&m), None);
        assert_eq!(Panes::default().is_members_pane(&m), None);
        let older = reading(vec![("%3", raw(false, Some(7), "bob@t"))]);
        assert_eq!(older.is_members_pane(&m), None);
        assert_eq!(older.is_members_pane(&member(None)), Some(false));
    }

    #[test]
    fn one_reading_per_server_and_only_for_tmux_panes() {
        let a = member(Some("%1"));
        let b = member(Some("%2"));
        let mut c = member(Some("%3"));
        c.tmux_socket = Some("/tmp/other/socket".into());
        let mut unplaced = member(None);
        unplaced.tmux_socket = Some("unplaced".into());
        let mut process = member(Some("%4"));
        process.backend_type = Some(crate::domain::BackendType::Process);
        process.tmux_socket = Some("process".into());
        // Another host's member: judged by its lease, its recorded socket never asked.
        let mut remote = member(Some("%5"));
        remote.tmux_socket = Some("/tmp/forged/socket".into());
        remote.host = Some(crate::domain::Host {
            name: "elsewhere".into(),
            home: "/home/x/.teamctl".into(),
            key: "k".into(),
            id: "another-machine".into(),
            since: 0,
        });
        let panes = Panes::read(
            std::path::Path::new("/nonexistent/tmux"),
            [&a, &b, &c, &unplaced, &process, &remote],
        );
        let servers: Vec<&Server> = panes.servers.iter().map(|(s, _)| s).collect();
        assert_eq!(
            servers,
            vec![
                &Server::Named("teamctl-unit-no-such-server".into()),
                &Server::Path("/tmp/other/socket".into())
            ]
        );
    }
}
