//! The directory put first on an agent's `PATH`, so that the `teamctl` an agent runs is the
//! binary that runs its worker. That is the binary's own directory when it is called
//! `teamctl`; a binary under another name (`teamctl-nats`, say) gets `teamctl` as a link to
//! it in a directory of the home's own (`bin/KEY/teamctl`, KEY a hash of the binary's path),
//! so that neither a missing `teamctl` nor another one on `PATH` is what agents reach. A
//! binary replaced while it runs (an upgrade) is found at its path: the new one there is what
//! agents get. A worker remembers that path when it starts (`remember`), since an upgrade that
//! keeps a backup (`install -b`) renames the running file, and `/proc/self/exe` follows it to
//! the backup.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// What Linux adds to `/proc/self/exe` when the running binary's file was replaced or removed.
const DELETED: &[u8] = b" (deleted)";

/// The path this process's binary was at when `remember` ran (a worker's start).
static STARTED_AT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Remember where the running binary is now, so that `current` keeps to that path while a file
/// is there: a worker calls it first thing. Without it, an upgrade with a backup (`install -b`:
/// the running file renamed to `teamctl~`, the new one put at `teamctl`) gave agents the
/// backup, the file `/proc/self/exe` now names.
pub fn remember() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = STARTED_AT.set(installed(exe));
    }
}

/// The path the running binary was installed at: where it was when the worker started
/// (`remember`) while a file is there; else `std::env::current_exe`, less the " (deleted)"
/// Linux adds once its file was replaced (`cargo install`, a copy renamed over it) or removed.
/// An upgrade put its successor at that path, which is what a user means by "teamctl" from
/// then on; after a removal nothing may be there (see `gone`).
pub fn current() -> std::io::Result<PathBuf> {
    if let Some(at) = STARTED_AT.get().filter(|p| p.is_file()) {
        return Ok(at.clone());
    }
    std::env::current_exe().map(installed)
}

fn installed(exe: PathBuf) -> PathBuf {
    // A file really called "... (deleted)" that is there is the binary itself.
    if exe.exists() {
        return exe;
    }
    match exe.as_os_str().as_bytes().strip_suffix(DELETED) {
        Some(path) => PathBuf::from(OsStr::from_bytes(path)),
        None => exe,
    }
}

/// The running binary's path when nothing is at it any more (removed, not upgraded) and no
/// `teamctl` is beside it: an agent then finds none in the directory it gets (`agent_bin_dir`).
/// `None` while either is there (a backup renamed away, `install -b`, leaves the binary's own
/// path at the backup's name, and the new `teamctl` beside it).
pub fn gone() -> Option<PathBuf> {
    current()
        .ok()
        .filter(|exe| !exe.exists() && !exe.with_file_name("teamctl").exists())
}

/// The directory to put first on an agent's `PATH` (`home`: the teamctl home, where a link is
/// made when one is needed). Falls back to the binary's own directory.
pub fn agent_bin_dir(home: Option<&Path>) -> PathBuf {
    let Ok(exe) = current() else {
        return PathBuf::new();
    };
    let own = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    // Nothing at its path (removed): no link to nothing (`gone` says why in the worker's log).
    if exe.file_name().is_some_and(|n| n == "teamctl") || !exe.exists() {
        return own;
    }
    home.and_then(|h| linked(h, &exe)).unwrap_or(own)
}

/// `HOME/bin/KEY/teamctl` pointing at `exe`, made (or put right) when needed; `None` when it
/// cannot be (then the binary's own directory is used).
fn linked(home: &Path, exe: &Path) -> Option<PathBuf> {
    use sha2::Digest;
    let key: String = sha2::Sha256::digest(exe.as_os_str().as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = home.join("bin").join(key);
    let link = dir.join("teamctl");
    if std::fs::read_link(&link).is_ok_and(|to| to == exe) {
        return Some(dir);
    }
    // Never through a link planted on the way: each level is a real directory of ours.
    for d in [home.join("bin"), dir.clone()] {
        match std::fs::symlink_metadata(&d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return None,
            Err(_) => std::fs::DirBuilder::new().mode(0o700).create(&d).ok()?,
        }
    }
    // Made beside it and renamed over it: a reader sees the old link or the new one.
    let tmp = dir.join(format!(".teamctl.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(exe, &tmp).ok()?;
    std::fs::rename(&tmp, &link).ok()?;
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_under_another_name_gets_a_teamctl_link_in_the_home() {
        let home = tempfile::tempdir().unwrap();
        let exe = home.path().join("elsewhere").join("teamctl-nats");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::write(&exe, b"").unwrap();
        let dir = linked(home.path(), &exe).unwrap();
        assert!(dir.starts_with(home.path().join("bin")));
        assert_eq!(std::fs::read_link(dir.join("teamctl")).unwrap(), exe);
        // Again: the same directory, the link kept.
        assert_eq!(linked(home.path(), &exe).unwrap(), dir);
        // A link pointing elsewhere is put right.
        std::fs::remove_file(dir.join("teamctl")).unwrap();
        std::os::unix::fs::symlink("/bin/true", dir.join("teamctl")).unwrap();
        assert_eq!(linked(home.path(), &exe).unwrap(), dir);
        assert_eq!(std::fs::read_link(dir.join("teamctl")).unwrap(), exe);
    }

    #[test]
    fn a_replaced_binary_is_the_one_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("teamctl");
        let reported = dir.path().join("teamctl (deleted)");
        // Removed: the path, with nothing there.
        assert_eq!(installed(reported.clone()), exe);
        // Upgraded: the path, with the new binary there.
        std::fs::write(&exe, b"").unwrap();
        assert_eq!(installed(reported.clone()), exe);
        // A file really called so, and there, is itself.
        std::fs::write(&reported, b"").unwrap();
        assert_eq!(installed(reported.clone()), reported);
    }

    #[test]
    fn a_link_planted_for_the_bin_directory_is_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(target.path(), home.path().join("bin")).unwrap();
        assert_eq!(linked(home.path(), Path::new("/x/teamctl-nats")), None);
        assert!(std::fs::read_dir(target.path()).unwrap().next().is_none());
    }
}
