//! Locks in the KV bucket: a key made only when absent (`lock.KEY`), whose value says who
//! holds it and until when (a lease). The holder renews the lease while it holds the lock and
//! deletes the key when the guard is dropped. A waiter watches the key (a consumer of its
//! subject, `watch`; no polling) and takes over a lease that ran out, or a lock whose
//! holder on this host is gone, by compare-and-set on the revision it saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};

use super::client::{self, Conn, Fault};
use crate::domain::time::now_ms;
use crate::error::{Error, Result};

/// How long a lock holds without renewal (a holder that died unseen blocks others this long).
pub const LEASE: Duration = Duration::from_secs(30);

/// How long `lock` waits for a lock before it fails.
const WAIT: Duration = Duration::from_mins(2);

#[derive(Debug, Serialize, Deserialize)]
struct Lease {
    owner: String,
    host: String,
    pid: u32,
    until: u64,
}

impl Lease {
    fn new(owner: &str) -> Lease {
        Lease {
            owner: owner.to_string(),
            host: host_name(),
            pid: std::process::id(),
            until: now_ms() + LEASE.as_millis() as u64,
        }
    }

    fn bytes(&self) -> bytes::Bytes {
        serde_json::to_vec(self).unwrap_or_default().into()
    }

    /// Whether the holder can no longer be holding it: its lease ran out, or it was a
    /// process of this pid space (`host_name`) that is gone.
    fn stale(&self) -> bool {
        // A lease further ahead than any holder renews it (forged, or a clock far off) is
        // not believed.
        let now = now_ms();
        if self.until < now || self.until > now + 2 * LEASE.as_millis() as u64 {
            return true;
        }
        self.host == host_name()
            && nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), None)
                == Err(nix::errno::Errno::ESRCH)
    }
}

/// Where a holder's pid means something: the hostname, this boot of the kernel and the pid
/// namespace. Two machines with one hostname (cloned VMs) differ in their boot id, two
/// containers of one kernel in their pid namespace; only a holder of the same pid space has
/// its pid looked at here.
pub fn host_name() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|h| h.trim().to_string())
            .unwrap_or_default()
    };
    let pid_ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|l| l.display().to_string())
        .unwrap_or_default();
    // Hashed: everyone who reads the bucket sees it.
    use sha2::Digest;
    let space = format!(
        "{} {} {pid_ns}",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id")
    );
    let digest = sha2::Sha256::digest(space.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A held lock: renewed in the background, deleted on drop.
pub struct LeaseGuard {
    kv: kv::Store,
    key: String,
    owner: String,
    revision: Arc<AtomicU64>,
    renew: tokio::task::AbortHandle,
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.renew.abort();
        let (kv, key, owner) = (self.kv.clone(), self.key.clone(), self.owner.clone());
        let rev = self.revision.load(Ordering::SeqCst);
        let _ = client::run("unlock", async move {
            if kv.delete_expect_revision(&key, Some(rev)).await.is_ok() {
                return Ok(());
            }
            // A renewal raced the abort: delete it if it is still ours.
            if let Ok(Some(e)) = kv.entry(&key).await
                && e.operation == kv::Operation::Put
                && serde_json::from_slice::<Lease>(&e.value).is_ok_and(|l| l.owner == owner)
            {
                let _ = kv.delete_expect_revision(&key, Some(e.revision)).await;
            }
            Ok(())
        });
    }
}

/// One try to take the lock `key` as `mine`: its revision, or how long the holder's lease
/// still runs (zero: another taker came first, try again).
async fn attempt(kv: &kv::Store, key: &str, mine: &Lease) -> Result<Result<u64, Duration>> {
    Ok(match kv.entry(key).await.map_err(super::nats_err)? {
        Some(e) if e.operation == kv::Operation::Put => {
            match serde_json::from_slice::<Lease>(&e.value).ok() {
                Some(l) if !l.stale() => {
                    Err(Duration::from_millis(l.until.saturating_sub(now_ms()) + 10))
                }
                // A stale or unreadable lease: take it over, if no one else did.
                _ => kv
                    .update(key, mine.bytes(), e.revision)
                    .await
                    .map_err(|_| Duration::ZERO),
            }
        }
        _ => kv
            .create(key, mine.bytes())
            .await
            .map_err(|_| Duration::ZERO),
    })
}

/// Take the lock `key` in `kv`, waiting for it (`WAIT` at most).
/// `watch` is the bucket's stream and the key's subject in it (what a watch of the key filters
/// on).
pub fn acquire(
    conn: &Conn,
    kv: &kv::Store,
    key: &str,
    watch: &(String, String),
) -> Result<LeaseGuard> {
    let owner = crate::domain::message::new_id();
    let (c, kv2, key2, owner2) = (conn.clone(), kv.clone(), key.to_string(), owner.clone());
    let deadline = std::time::Instant::now() + WAIT;
    // Since when rounds have failed (the server away, a leader election): they are tried
    // again for `client::RETRY_FOR`.
    let mut failing: Option<std::time::Instant> = None;
    let rev = loop {
        let (c, kv2, key2, owner2, wake) = (
            c.clone(),
            kv2.clone(),
            key2.clone(),
            owner2.clone(),
            watch.clone(),
        );
        // One round: try; when it is held, watch the key, try again, and wait for a change
        // (or the holder's lease to run out) within this call's time.
        let got = client::run("lock", async move {
            let mine = Lease::new(&owner2);
            // A free lock is taken at once, with no watch made.
            let (wait_for, mut changes) = match attempt(&kv2, &key2, &mine).await? {
                Ok(rev) => return Ok(Some(rev)),
                Err(_) => {
                    // Held: watch the key, then look again (a release between the two
                    // looks is seen by the second), and wait for a change.
                    let changes = super::watch::arm(&c, &wake.0, std::slice::from_ref(&wake.1))
                        .await
                        .map_err(|e| match e {
                            Fault::Again(why) => {
                                Error::failed(format!("NATS: cannot watch a lock: {why}"))
                            }
                            Fault::Fatal(e) => e,
                        })?;
                    match attempt(&kv2, &key2, &mine).await? {
                        Ok(rev) => return Ok(Some(rev)),
                        Err(wait_for) => (wait_for.min(client::CALL_TIMEOUT / 2), changes),
                    }
                }
            };
            let _ = tokio::time::timeout(wait_for, super::watch::next(&mut changes)).await;
            Ok(None)
        });
        let got = match got {
            Ok(got) => {
                failing = None;
                got
            }
            Err(e) => {
                let since = *failing.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > client::RETRY_FOR {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(250));
                None
            }
        };
        if let Some(rev) = got {
            break rev;
        }
        if std::time::Instant::now() > deadline {
            return Err(Error::failed(format!(
                "timed out waiting for the lock {key:?} (held by another teamctl)"
            )));
        }
    };
    let revision = Arc::new(AtomicU64::new(rev));
    let (kv3, key3, owner3, r) = (kv.clone(), key.to_string(), owner.clone(), revision.clone());
    let renew = client::spawn(async move {
        loop {
            tokio::time::sleep(LEASE / 3).await;
            let lease = Lease::new(&owner3);
            match kv3
                .update(&key3, lease.bytes(), r.load(Ordering::SeqCst))
                .await
            {
                Ok(rev) => r.store(rev, Ordering::SeqCst),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => return,
                Err(_) => {}
            }
        }
    });
    Ok(LeaseGuard {
        kv: kv.clone(),
        key: key.to_string(),
        owner,
        revision,
        renew,
    })
}

#[cfg(test)]
mod lease_tests {
    use super::*;

    /// A holder's pid is probed only in its own pid space: a machine with the same hostname
    /// (another boot id) keeps its lock until its lease runs out.
    #[test]
    fn only_a_holder_of_this_pid_space_is_taken_for_gone() {
        let gone_pid = 0x3fff_fff0;
        let far = now_ms() + 30_000;
        let lease = |host: String, until| Lease {
            owner: "o".into(),
            host,
            pid: gone_pid,
            until,
        };
        assert!(lease(host_name(), far).stale(), "a gone process of ours");
        let clone = "0".repeat(32);
        assert!(!lease(clone.clone(), far).stale(), "another pid space");
        assert!(
            lease(clone.clone(), now_ms() - 1).stale(),
            "its lease ran out"
        );
        assert!(
            lease(clone, now_ms() + 3_600_000).stale(),
            "a lease no holder gives"
        );
        assert_eq!(host_name().len(), 32);
    }
}
