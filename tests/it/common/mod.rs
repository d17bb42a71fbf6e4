//! End-to-end test harness: runs the real `teamctl` binary against a temporary home (and, for
//! tmux tests, a private tmux server that is killed at the end). Waits are conditions with a
//! deadline, never sleeps. Dropping a `TestEnv` ends every process started under its home.
#![allow(dead_code)]

pub mod fake_gemini;
pub mod fake_model;
pub mod fake_openai_chat;
pub mod fake_openai_responses;
pub use fake_model::loopback_http;
#[cfg(feature = "nats")]
pub mod nats;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_teamctl");

/// Held, shared, by every `doctor` a test runs (`run`), and alone by a test that leaves a
/// home's processes running with the home removed: `doctor` takes the processes of a home that
/// no longer exists for its own (they are no existing home's), so it would report, or end,
/// what another test left so on purpose.
pub static GONE_HOMES: std::sync::RwLock<()> = std::sync::RwLock::new(());

pub struct TestEnv {
    pub home: TempDir,
    pub work: TempDir,
    /// The private tmux server (`tmux -L`), when the test uses tmux.
    pub socket: Option<String>,
    /// The private tmux server every other test gets too (`TEAMCTL_TMUX_SOCKET`), so that no
    /// test, whatever backend it picks, can ever reach the user's default server.
    guard_socket: String,
    pub env: Vec<(String, String)>,
}

impl TestEnv {
    /// A temporary home; teammates on the process backend.
    pub fn new() -> TestEnv {
        let home = tempfile::Builder::new()
            .prefix("teamctl-home")
            .tempdir()
            .unwrap();
        let guard_socket = format!(
            "teamctl-test-{}-{}",
            std::process::id(),
            uuid_like(home.path())
        );
        TestEnv {
            home,
            guard_socket,
            work: tempfile::Builder::new()
                .prefix("teamctl-work")
                .tempdir()
                .unwrap(),
            socket: None,
            env: Vec::new(),
        }
    }

    /// A temporary home and a private tmux server. Fails loudly when tmux is missing: a tmux
    /// test must never pass without tmux.
    pub fn with_tmux() -> TestEnv {
        let found = Command::new("tmux").arg("-V").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "tmux is required for this test and was not found on PATH (install it: apt-get install -y tmux)"
        );
        let mut t = TestEnv::new();
        t.socket = Some(t.guard_socket.clone());
        t
    }

    pub fn home_path(&self) -> &Path {
        self.home.path()
    }

    /// `name` (an agent id or a team) as this home tags it in tmux: `NAME/HOMEKEY`.
    pub fn tag(&self, name: &str) -> String {
        let key = teamctl::backend::proc::home_key_of(self.home_path());
        teamctl::backend::tmux::argv::scoped(name, &key)
    }

    /// The team file of `team`, as JSON.
    pub fn config(&self, team: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.team_dir(team).join("config.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// `name`'s member entry in `team`'s file.
    pub fn recorded(&self, team: &str, name: &str) -> serde_json::Value {
        self.config(team)["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in config"))
    }

    /// The pane `name` of `team` is recorded in.
    pub fn pane_of(&self, team: &str, name: &str) -> String {
        self.recorded(team, name)["paneId"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no paneId"))
            .to_string()
    }

    /// `#{FORMAT}` of a pane, or `None` when the pane does not exist.
    pub fn pane_format(&self, pane: &str, format: &str) -> Option<String> {
        // display-message does not fail on a missing pane: print the id back and check it.
        let out = self.tmux(&[
            "display-message",
            "-p",
            "-t",
            pane,
            &format!("#{{pane_id}}|{format}"),
        ]);
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        match text.split_once('|') {
            Some((id, rest)) if out.status.success() && id == pane => Some(rest.to_string()),
            _ => None,
        }
    }

    /// The detached tmux session of team `team` of this home: `teamctl-TEAM-HOMEKEY`.
    pub fn session(&self, team: &str) -> String {
        teamctl::backend::tmux::argv::session_name(&self.tag(team))
    }

    /// A `teamctl` command with this environment: the temp home, the private tmux server,
    /// no inherited team, identity, tmux client or colour.
    /// `args` started held at pause point `point` (src/pause.rs): it makes `GATE.reached`
    /// there and goes on once `gate` exists. Its output is piped.
    pub fn paused(&self, args: &[&str], point: &str, gate: &Path) -> std::process::Child {
        self.cmd(args)
            .env("TEAMCTL_TEST_PAUSE", format!("{point}:{}", gate.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Put a `tmux` of the test's first on PATH for this test's commands (and what they start):
    /// a `sh` script, `script`, run with the real tmux's path in `$REAL` (it ends with
    /// `exec "$REAL" "$@"` to pass a command on).
    pub fn wrap_tmux(&mut self, script: &str) {
        let bin = self.work.path().join("tmux-wrapper");
        std::fs::create_dir(&bin).unwrap();
        let real = Command::new("sh")
            .args(["-c", "command -v tmux"])
            .output()
            .unwrap()
            .stdout;
        let real = String::from_utf8(real).unwrap();
        let wrapper = bin.join("tmux");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh\nREAL='{}'\n{script}\n", real.trim()),
        )
        .unwrap();
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        self.add_agent_cli(&bin, &[]);
    }

    /// `wrap_tmux` with a client that, the next time it is given `subcommand` once the file it
    /// returns exists, runs the shell text `instead` (`"$REAL" "$@"` there runs the real tmux
    /// for it); the file is taken away as it fires. Otherwise it is the real tmux.
    pub fn tmux_client_on(&mut self, subcommand: &str, instead: &str) -> PathBuf {
        let armed = self.work.path().join(format!("armed-{subcommand}"));
        self.wrap_tmux(&format!(
            "case \" $* \" in *' {subcommand} '*) if [ -e '{armed}' ]; then rm -f '{armed}'; {instead}; fi;; esac\nexec \"$REAL\" \"$@\"",
            armed = armed.display()
        ));
        armed
    }

    /// `tmux_client_on` with a client that runs the real tmux for `subcommand` and is then
    /// killed (SIGKILL: the server did what it was asked, the caller hears nothing).
    pub fn kill_tmux_client_after(&mut self, subcommand: &str) -> PathBuf {
        self.tmux_client_on(subcommand, "\"$REAL\" \"$@\"; kill -9 $$")
    }

    /// Teammates find the agent CLI in `bin_dir` first on their PATH and get `env` (what a
    /// stand-in prepared for that CLI: its HOME, the stand-in's URL, a dummy key).
    pub fn add_agent_cli(&mut self, bin_dir: &Path, env: &[(String, String)]) {
        self.env.extend(env.iter().cloned());
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        self.env.push(("PATH".into(), path));
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_of(Path::new(BIN), args)
    }

    /// `cmd`, run from another copy of the binary (`program`).
    pub fn cmd_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .current_dir(self.work.path())
            .env("TEAMCTL_HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env_remove("TEAMCTL_TEAM")
            .env_remove("TEAMCTL_AGENT_NAME")
            .env_remove("TEAMCTL_AGENT_ID")
            .env_remove("TEAMCTL_MESSAGE_ID")
            .env_remove("TEAMCTL_FROM")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("TEAMCTL_POLL_MS")
            .stdin(Stdio::null());
        c.env("TEAMCTL_TMUX_SOCKET", &self.guard_socket);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let _doctor = args.contains(&"doctor").then(|| {
            GONE_HOMES
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        self.cmd(args).output().expect("run teamctl")
    }

    /// Run and require exit 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "teamctl {args:?} failed ({:?})\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run and require the exit `code`; returns stderr.
    pub fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "teamctl {args:?}: expected exit {code}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Run with `input` on stdin.
    pub fn run_stdin(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_string();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    }

    /// Run with `input` on stdin and require exit 0; returns stdout.
    pub fn ok_stdin(&self, args: &[&str], input: &str) -> String {
        let out = self.run_stdin(args, input);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `status --json` members by name.
    pub fn status(&self) -> serde_json::Value {
        let out = self.ok(&["--json", "status"]);
        serde_json::from_str(&out).unwrap()
    }

    pub fn member(&self, name: &str) -> serde_json::Value {
        self.status()["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no member {name}"))
    }

    pub fn member_status(&self, name: &str) -> String {
        self.member(name)["status"].as_str().unwrap().to_string()
    }

    /// The team directory of `team`.
    pub fn team_dir(&self, team: &str) -> PathBuf {
        self.home.path().join("teams").join(team)
    }

    /// Every message line of `member`'s inbox in `team`, parsed.
    pub fn inbox(&self, team: &str, member: &str) -> Vec<serde_json::Value> {
        let path = self
            .team_dir(team)
            .join("inboxes")
            .join(member)
            .join("inbox.jsonl");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
            .collect()
    }

    /// A tmux command against the private server.
    pub fn tmux(&self, args: &[&str]) -> Output {
        let socket = self.socket.as_ref().expect("this test has no tmux server");
        Command::new("tmux")
            .arg("-L")
            .arg(socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("run tmux")
    }

    pub fn tmux_ok(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Pids of live worker and agent processes started under this home (workers have it in
    /// argv, agents in their environment). Not counted: the leader console (`teamctl lead`,
    /// the first pane of a team session: the leader's, see `consoles`) and the private tmux
    /// server (which inherits the environment of the command that started it).
    /// The worker processes of `agent_id` of this home, counted by `/proc`.
    /// The worker processes of `agent_id` under this home: a worker's own fork that has not
    /// exec'd its turn yet shows the same argv and is left out (`not_forks_of_each_other`).
    pub fn workers_of(&self, agent_id: &str) -> Vec<u32> {
        let all: Vec<u32> = self
            .processes()
            .into_iter()
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                args.contains(&&b"worker"[..]) && args.contains(&agent_id.as_bytes())
            })
            .collect();
        not_forks_of_each_other(&all)
    }

    pub fn processes(&self) -> Vec<u32> {
        self.under_home()
            .into_iter()
            .filter(|(_, argv)| !is_console(argv) && !is_tmux(argv))
            .map(|(pid, _)| pid)
            .collect()
    }

    /// Pids of leader consoles started under this home.
    pub fn consoles(&self) -> Vec<u32> {
        self.under_home()
            .into_iter()
            .filter(|(_, argv)| is_console(argv))
            .map(|(pid, _)| pid)
            .collect()
    }

    /// Live processes whose argv or environment names this home, with their argv (read once,
    /// so a process that exits meanwhile is judged by what it was).
    fn under_home(&self) -> Vec<(u32, Vec<u8>)> {
        let home = self.home.path().display().to_string();
        let mut out = Vec::new();
        for pid in teamctl::backend::proc::pids().filter(|&p| teamctl::backend::proc::running(p)) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let needle = home.as_bytes();
            let has = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
            // An empty argv: the process is exiting (or a zombie already).
            if !cmdline.is_empty() && (has(&cmdline) || has(&environ)) {
                out.push((pid, cmdline));
            }
        }
        out
    }
}

/// Is `pid` a turn's process started ahead by its idle worker (`teamctl __turn`,
/// `worker::launch`), still waiting for its message?
pub fn is_waiting_turn(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|argv| argv.starts_with(b"teamctl\0__turn\0"))
}

/// `pid: argv` for each pid, for assertion messages.
pub fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|p| {
            let argv = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&argv).replace('\0', " "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn is_tmux(argv: &[u8]) -> bool {
    let argv0 = argv.split(|b| *b == 0).next().unwrap_or_default();
    argv0 == b"tmux" || argv0.ends_with(b"/tmux")
}

fn is_console(argv: &[u8]) -> bool {
    argv.split(|b| *b == 0).nth(1) == Some(&b"lead"[..])
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // Whether or not the test meant to use tmux, its private server goes first (killed
        // any other way it would leave its socket file behind), then whatever else is left.
        let socket = Command::new("tmux")
            .args([
                "-L",
                &self.guard_socket,
                "display-message",
                "-p",
                "#{socket_path}",
            ])
            .env_remove("TMUX")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let _ = Command::new("tmux")
            .args(["-L", &self.guard_socket, "kill-server"])
            .env_remove("TMUX")
            .output();
        // (`kill-server` returns before the server has exited: it is left to finish, since a
        // SIGKILL would leave its socket file.)
        for (pid, argv) in self.under_home() {
            if !is_tmux(&argv) {
                unsafe_kill(pid);
            }
        }
        // A server that already exited (its last session closed, as `delete` does) cannot say
        // where its socket is, and tmux leaves the file: tmux's own default place then.
        let path = socket.filter(|p| !p.is_empty()).unwrap_or_else(|| {
            let dir = std::env::var("TMUX_TMPDIR").unwrap_or_else(|_| "/tmp".into());
            let uid = nix::unistd::getuid();
            format!("{dir}/tmux-{uid}/{}", self.guard_socket)
        });
        let _ = std::fs::remove_file(path);
    }
}

fn unsafe_kill(pid: u32) {
    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).output();
}

fn uuid_like(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("x")
        .replace(['.', '/'], "")
}

/// `pids` less those whose parent is among them: a worker's own child between its fork and
/// its exec (the turn's process it starts ahead) still shows the worker's argv, and is not a
/// second worker (under load, tests counted it as one).
pub fn not_forks_of_each_other(pids: &[u32]) -> Vec<u32> {
    let parent = |p: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the comm may hold spaces, so after the last ')'.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
    };
    pids.iter()
        .copied()
        .filter(|p| !parent(*p).is_some_and(|pp| pids.contains(&pp)))
        .collect()
}

/// Run `cmd` (its output captured), which must end within `timeout`: killed, and the test
/// failed, if it does not.
pub fn ends_within(mut cmd: Command, timeout: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + timeout;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Wait until `cond` holds, checking every 20 ms, or panic after `timeout` saying `what`.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `wait_until`, and on a timeout the panic also shows `context()` (a log, say), so a failure
/// seen once under load can be read afterwards.
pub fn wait_until_or_show(
    what: &str,
    timeout: Duration,
    mut cond: impl FnMut() -> bool,
    context: impl Fn() -> String,
) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}; then:\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A snapshot of every file under `dir` (path and bytes), to show nothing changed.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            let kind = e.file_type().ok();
            if kind.is_some_and(|k| k.is_dir()) {
                out.push((p.clone(), Vec::new()));
                walk(&p, out);
            } else if kind.is_some_and(|k| k.is_file()) {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            } else {
                // A doorbell FIFO (a waiter past the inotify limit) or a link: its name only;
                // reading a FIFO would block until a writer came.
                out.push((p.clone(), Vec::new()));
            }
        }
    }
    walk(dir, &mut out);
    out
}

/// `cmd.output()` for a command whose program is a copy of teamctl just written: its exec can
/// be refused for a moment ("Text file busy"), while another test's `fork` still holds the
/// copy's write descriptor until its child execs; tried again until it is not (10 s at most).
pub fn output_of_copy(cmd: &mut Command) -> Output {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match cmd.output() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => break other.expect("run teamctl"),
        }
    }
}
