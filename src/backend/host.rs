//! Which host this process runs on, for stores that hosts share: the hostname with this
//! process's home (`proc::scope_to_home`) and an id of the machine and home (the machine id
//! with a random number kept in the home, `host-id`), so machines that share a hostname and a
//! home path (cloned VMs, containers) are told apart. A member recorded with another host is looked at
//! through its heartbeat lease only: this host's processes and tmux panes say nothing about it,
//! and nothing here ends it.

use std::sync::OnceLock;

use crate::domain::{Host, LiveState, Member};

static NAME: OnceLock<String> = OnceLock::new();

/// This machine's hostname (`?` when it cannot be read).
fn hostname() -> &'static str {
    NAME.get_or_init(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "?".into())
    })
}

static ID: OnceLock<String> = OnceLock::new();

/// This machine and home's id: 16 hex digits of the SHA-256 of the machine id and the home's
/// own random number (made once, `host-id`, 0600).
fn id() -> &'static str {
    ID.get_or_init(|| {
        use sha2::Digest;
        let machine = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        let mine = super::proc::home_root()
            .and_then(|h| home_number(std::path::Path::new(h)))
            .unwrap_or_default();
        let digest = sha2::Sha256::digest(format!("{}\n{mine}", machine.trim()).as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// The home's random number, made on first use: written to a temporary file and linked into
/// place, so racing processes agree on the first one made; never read through a link.
fn home_number(home: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = home.join("host-id");
    let read = || {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&file)
            .ok()?;
        let mut s = String::new();
        std::io::Read::read_to_string(&mut f, &mut s).ok()?;
        let s = s.trim().to_string();
        (s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())).then_some(s)
    };
    if let Some(n) = read() {
        return Some(n);
    }
    let number = uuid::Uuid::new_v4().simple().to_string();
    let tmp = home.join(format!(".host-id.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, number.as_bytes()));
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, &file));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Some(number),
        Err(_) => read(),
    }
}

/// This host and home, as a member started here records it.
pub fn here(home: &std::path::Path, now: u64) -> Host {
    Host {
        name: hostname().to_string(),
        home: home.display().to_string(),
        key: super::proc::home_key(),
        id: id().to_string(),
        since: now,
    }
}

/// Whether `host` is this host and home.
pub fn is_here(host: &Host) -> bool {
    host.name == hostname() && host.key == super::proc::home_key() && host.id == id()
}

/// Where `member` runs when that is another host than this one; `None` when it is here (or
/// unrecorded: every member of a file store).
pub fn elsewhere(member: &Member) -> Option<&Host> {
    member.host.as_ref().filter(|h| !is_here(h))
}

/// Whether a worker of another host vouches, through its lease, that it runs now. A lease
/// longer than any heartbeat gives (four beats of at most 60 s) is not believed: a forged or
/// far-off clock cannot keep a dead member looking alive.
pub fn leased(live: &LiveState, now: u64) -> bool {
    const LONGEST: u64 = 4 * 60_000;
    live.lease_until
        .is_some_and(|until| now < until && until - now <= LONGEST)
}

/// `host` for a status column: its name, with the home when the name is this host's own (two
/// homes of one machine sharing a team).
pub fn label(host: &Host) -> String {
    use crate::domain::member::plain;
    if host.name == hostname() {
        format!("{}:{}", plain(&host.name), plain(&host.home))
    } else {
        plain(&host.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same hostname and home key is not enough to be this host: the id must match too
    /// (machines cloned with the same hostname and home path).
    #[test]
    fn a_host_is_here_only_with_its_name_key_and_id() {
        let me = here(std::path::Path::new("/h"), 1);
        assert!(is_here(&me));
        assert_eq!(me.id.len(), 16);
        assert_eq!(here(std::path::Path::new("/h"), 2).id, me.id, "stable");
        let clone = Host {
            id: "0123456789abcdef".into(),
            ..me.clone()
        };
        assert!(!is_here(&clone));
        let other = Host {
            name: format!("{}-other", me.name),
            ..me
        };
        assert!(!is_here(&other));
    }

    #[test]
    fn the_home_number_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = home_number(dir.path()).unwrap();
        assert_eq!(home_number(dir.path()).unwrap(), first);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("host-id"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // A link planted there is not read through.
        let other = tempfile::tempdir().unwrap();
        std::fs::remove_file(dir.path().join("host-id")).unwrap();
        std::fs::write(other.path().join("x"), "f".repeat(32)).unwrap();
        std::os::unix::fs::symlink(other.path().join("x"), dir.path().join("host-id")).unwrap();
        assert_ne!(home_number(dir.path()), Some("f".repeat(32)));
    }
}
