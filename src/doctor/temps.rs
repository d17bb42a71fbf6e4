//! Temporary files a writer left when it ended mid-write: killed between making
//! `.NAME.PID.UNIQUE.tmp` beside a file it replaces (`fsutil::replace`, `write_atomic`) and
//! renaming it over `NAME`, or a `doctor --fix` killed while a spoiled state sat aside
//! (`.NAME.doctor-PID`). Nothing reads them, but one can be as big as what was being written
//! (attacker QA 41: a worker killed while writing a large live state). Looked for in the home's
//! own files and in each team's directory (links never followed, a teammate's worktree never
//! entered); one is left over once its writer no longer runs and it has not changed for
//! `LEFT_AFTER`. `--fix` removes them, each looked at again first.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Finding, Fix, Level};
use crate::error::{Error, Result};
use crate::store::Home;

/// A write takes milliseconds: a temporary file unchanged this long, its writer gone, is left.
pub const LEFT_AFTER: Duration = Duration::from_mins(1);

/// How deep under a team's directory teamctl writes (`inboxes/NAME/cursors/FILE`).
const DEPTH: usize = 4;

/// One finding for all the temporary files left under `home`, none when there are none.
pub fn leftovers(home: &Home) -> Vec<Finding> {
    let mut found = Vec::new();
    look_in(home.root(), 0, &mut found);
    for (team, link) in crate::store::fsutil::entries_nofollow(&home.teams_dir()) {
        if link.is_none() && team.is_dir() {
            look_in(&team, DEPTH, &mut found);
        }
    }
    let paths: Vec<PathBuf> = found.into_iter().filter(|p| left(p)).collect();
    let Some(first) = paths.first() else {
        return Vec::new();
    };
    let bytes: u64 = paths
        .iter()
        .filter_map(|p| p.symlink_metadata().ok())
        .map(|m| m.len())
        .sum();
    let message = match paths.len() {
        1 => format!(
            "{} is a temporary file left by a writer that ended mid-write ({bytes} bytes)",
            first.display()
        ),
        n => format!(
            "{n} temporary files left by writers that ended mid-write ({bytes} bytes), {} the first",
            first.display()
        ),
    };
    let hint = match paths.len() {
        1 => "nothing reads it; `teamctl doctor --fix` removes it",
        _ => "nothing reads them; `teamctl doctor --fix` removes them",
    };
    vec![
        Finding::new("temps", Level::Warn, message)
            .hint(hint)
            .fix(Fix::RemoveTemps {
                home: home.root().to_path_buf(),
                paths,
            }),
    ]
}

/// Files in `dir` named as a temporary file is, and those in its directories `depth` more
/// levels down (a link is never followed, `worktrees` never entered: the user's files).
fn look_in(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    for (path, link) in crate::store::fsutil::entries_nofollow(dir) {
        if link.is_some() {
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            if depth > 0 && name != "worktrees" {
                look_in(&path, depth - 1, out);
            }
        } else if writer(name).is_some() {
            out.push(path);
        }
    }
}

/// The pid of the writer a temporary file's name gives: `.NAME.PID.UNIQUE.tmp` (UNIQUE: 32
/// hex digits) or `.NAME.doctor-PID`.
fn writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    if let Some(rest) = rest.strip_suffix(".tmp") {
        let (rest, unique) = rest.rsplit_once('.')?;
        let (_, pid) = rest.rsplit_once('.')?;
        if unique.len() != 32 || !unique.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        return pid.parse().ok();
    }
    let (_, pid) = rest.rsplit_once(".doctor-")?;
    pid.parse().ok()
}

/// Whether `path` is a temporary file left over: a regular file (never a link), its writer no
/// longer running, unchanged for `LEFT_AFTER`.
fn left(path: &Path) -> bool {
    let Some(pid) = path.file_name().and_then(|n| n.to_str()).and_then(writer) else {
        return false;
    };
    path.symlink_metadata()
        .is_ok_and(|meta| meta.is_file() && old_enough(meta.modified().ok()))
        && crate::backend::proc::ended(pid)
}

fn old_enough(modified: Option<SystemTime>) -> bool {
    modified
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age >= LEFT_AFTER)
}

/// Remove those of `paths` (under `home`) still left over, each looked at again and unlinked
/// through its directory, opened from the home down one name at a time without following a
/// link (attacker QA 42: a directory swapped for a link between the look and the removal had a
/// file of that name removed outside the home); says how many.
pub fn remove(home: &Path, paths: &[PathBuf]) -> Result<String> {
    let mut removed = 0;
    // Every one is tried: one that cannot be removed left the rest for ever, unsaid
    // (new-user QA 43: an immutable file stopped the loop at the first).
    let mut failed = Vec::new();
    for path in paths {
        match remove_one(home, path) {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => failed.push(Error::io(path, e).to_string()),
        }
    }
    let done = match removed {
        0 => "no temporary file removed".to_string(),
        1 => "removed 1 temporary file left by a writer that ended mid-write".to_string(),
        n => format!("removed {n} temporary files left by writers that ended mid-write"),
    };
    match failed.len() {
        0 if removed == 0 => Ok(format!(
            "{done}: each was gone or changed since doctor looked"
        )),
        0 => Ok(done),
        _ => Err(Error::failed(format!(
            "{done}; could not remove {}: {}",
            failed.len(),
            failed.join("; ")
        ))),
    }
}

/// Remove `path` if it is still a left-over temporary file (`left`), every step relative to a
/// directory descriptor; whether it was removed.
fn remove_one(home: &Path, path: &Path) -> std::io::Result<bool> {
    let Ok(rel) = path.strip_prefix(home) else {
        return Ok(false);
    };
    let mut names: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let Some(name) = names.pop().and_then(|n| n.to_str()) else {
        return Ok(false);
    };
    let Some(pid) = writer(name) else {
        return Ok(false);
    };
    let gone = |e: &crate::error::Error| e.io_kind() == Some(std::io::ErrorKind::NotFound);
    let mut dir = match crate::store::fsutil::DirFd::open_path(home) {
        Ok(d) => d,
        Err(e) if gone(&e) => return Ok(false),
        Err(e) => return Err(std::io::Error::other(e.to_string())),
    };
    for n in names {
        // A link, or anything but a directory, on the way: not followed, nothing removed.
        match dir.dir(n, false, None) {
            Ok(d) => dir = d,
            Err(_) => return Ok(false),
        }
    }
    let Ok(st) = nix::sys::stat::fstatat(&dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
    else {
        return Ok(false);
    };
    let regular = st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFREG;
    let modified = std::time::UNIX_EPOCH.checked_add(Duration::new(
        u64::try_from(st.st_mtime).unwrap_or(0),
        u32::try_from(st.st_mtime_nsec).unwrap_or(0),
    ));
    if !regular || !old_enough(modified) || !crate::backend::proc::ended(pid) {
        return Ok(false);
    }
    match dir.remove(name) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file at `p` holding `bytes`, last changed at `when`.
    fn aged(p: &Path, bytes: &[u8], when: SystemTime) {
        std::fs::write(p, bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    #[test]
    fn a_temporary_files_writer_is_read_from_its_name() {
        let unique = "0192f3a4b5c6d7e8f90a1b2c3d4e5f60";
        assert_eq!(writer(&format!(".w.json.4242.{unique}.tmp")), Some(4242));
        assert_eq!(writer(&format!(".config.json.7.{unique}.tmp")), Some(7));
        assert_eq!(writer(".w.json.doctor-99"), Some(99));
        for not in [
            "w.json",
            ".w.json.4242.short.tmp",
            ".w.json.x.0192f3a4b5c6d7e8f90a1b2c3d4e5f60.tmp",
            "w.json.4242.0192f3a4b5c6d7e8f90a1b2c3d4e5f60.tmp",
            ".inbox.lock",
        ] {
            assert_eq!(writer(not), None, "{not}");
        }
    }

    /// One whose writer runs, one changed lately, and a link are kept; one whose writer is
    /// gone and that has not changed for a minute is removed, and only it.
    #[test]
    fn only_a_temporary_file_of_a_gone_writer_unchanged_for_a_while_is_left_over() {
        let dir = tempfile::tempdir().unwrap();
        let unique = "0192f3a4b5c6d7e8f90a1b2c3d4e5f60";
        // A pid no process has: above the kernel's highest.
        let gone = 4_194_305;
        let mine = std::process::id();
        let old = SystemTime::now() - Duration::from_mins(2);
        let make = |name: String, when: SystemTime| {
            let p = dir.path().join(name);
            aged(&p, b"half a state", when);
            p
        };
        let left_over = make(format!(".w.json.{gone}.{unique}.tmp"), old);
        let running = make(format!(".v.json.{mine}.{unique}.tmp"), old);
        let fresh = make(format!(".u.json.{gone}.{unique}.tmp"), SystemTime::now());
        let link = dir.path().join(format!(".t.json.{gone}.{unique}.tmp"));
        std::os::unix::fs::symlink(&left_over, &link).unwrap();
        // Nor is a teammate's worktree entered (the user's files), a level down or not.
        let tree = dir.path().join("worktrees/bob");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join(format!(".x.{gone}.{unique}.tmp")), b"theirs").unwrap();
        let mut found = Vec::new();
        look_in(dir.path(), DEPTH, &mut found);
        assert_eq!(found.len(), 3, "{found:?}");
        let kept: Vec<&PathBuf> = found.iter().filter(|p| !left(p)).collect();
        assert!(
            kept.contains(&&running) && kept.contains(&&fresh),
            "{kept:?}"
        );
        assert_eq!(
            remove(dir.path(), &found).unwrap(),
            "removed 1 temporary file left by a writer that ended mid-write"
        );
        assert!(!left_over.exists() && running.exists() && fresh.exists());
        assert!(link.symlink_metadata().is_ok());
    }

    /// A directory on the way swapped for a link between the look and the removal: the file of
    /// that name where the link points is left (attacker QA 42: it was removed).
    #[test]
    fn a_directory_swapped_for_a_link_after_the_look_is_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let name = ".w.json.4194305.0192f3a4b5c6d7e8f90a1b2c3d4e5f60.tmp";
        let old = SystemTime::now() - Duration::from_mins(5);
        let x = home.path().join("teams/t/x");
        std::fs::create_dir_all(&x).unwrap();
        for dir in [x.as_path(), outside.path()] {
            aged(&dir.join(name), b"half", old);
        }
        let mut found = Vec::new();
        look_in(home.path(), DEPTH + 2, &mut found);
        assert_eq!(found, [x.join(name)]);
        std::fs::rename(&x, home.path().join("teams/t/x.real")).unwrap();
        std::os::unix::fs::symlink(outside.path(), &x).unwrap();
        assert_eq!(
            remove(home.path(), &found).unwrap(),
            "no temporary file removed: each was gone or changed since doctor looked"
        );
        assert!(outside.path().join(name).is_file());
        // Back in place, it is removed.
        std::fs::remove_file(&x).unwrap();
        std::fs::rename(home.path().join("teams/t/x.real"), &x).unwrap();
        remove(home.path(), &found).unwrap();
        assert!(!x.join(name).exists());
    }
}
