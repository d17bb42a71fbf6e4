//! A team's directory held by its descriptor (`TeamDir`) for the writes into it: opened from
//! the home as an inbox is (`InboxPaths::open_dir`): the home by its path, then `teams` and the
//! team by their names in the directory above, each `O_NOFOLLOW` and checked to be the
//! caller's alone (`fstat`). Every file below is then written relative to it (`openat`,
//! `renameat`), so a link swapped in for `teams` or the team directory after the command
//! checked the path cannot take a write (the team file, its index, a live state, a recorded
//! environment, a log, a lock) into what the link points at (attacker QA: a loop swapping a
//! link to a copy of the team in and out got `resume` and the worker writing into the copy).
//! Opened per write, not held for a store's life: a team directory renamed away is not
//! written into afterwards (the next open finds the name gone, or the real directory back).

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;

use nix::fcntl::OFlag;

use super::fsutil::{DirFd, Sync};
use crate::error::{IoContext, Result};

/// A team directory (`HOME/teams/TEAM`) opened by descriptors from the home.
#[derive(Debug)]
pub struct TeamDir {
    dir: DirFd,
}

impl TeamDir {
    /// Open the team directory `team_dir` (`HOME/teams/TEAM`): the home by its path (a link
    /// there is the user's choice), `teams` and the team below it never through a link, each
    /// the caller's alone. A team directory that is missing is `NotFound`: nothing here makes
    /// it, so a write racing `delete` never brings a deleted team back.
    pub fn open(team_dir: &Path) -> Result<TeamDir> {
        let (Some(team), Some(teams_dir)) = (team_dir.file_name(), team_dir.parent()) else {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound)).at(team_dir);
        };
        let (Some(teams), Some(home)) = (teams_dir.file_name(), teams_dir.parent()) else {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound)).at(team_dir);
        };
        let home = DirFd::open_private(home, "home")?;
        let teams = home.dir(teams, false, Some("teams directory"))?;
        let dir = teams.dir(team, false, Some("team directory"))?;
        Ok(TeamDir { dir })
    }

    /// The team directory itself.
    pub fn fd(&self) -> &DirFd {
        &self.dir
    }

    /// The directory `name` in the team directory (`state`, `logs`, `env`, `answers`),
    /// made `0700` when missing; a link or anything else there is refused, never followed.
    pub fn sub(&self, name: &str) -> Result<DirFd> {
        self.dir.dir(name, true, None)
    }
}

/// The directory `team_dir` opened for writes into it: a home's team directory
/// (`HOME/teams/TEAM`) as `TeamDir::open` opens it, never through a link; any other place (a
/// test's) by its path.
pub fn open_fd(team_dir: &Path) -> Result<DirFd> {
    if is_team_dir(team_dir) {
        TeamDir::open(team_dir).map(|t| t.dir)
    } else {
        DirFd::open_path(team_dir)
    }
}

/// Whether `path` has the shape of a home's team directory (`HOME/teams/TEAM`).
pub fn is_team_dir(path: &Path) -> bool {
    path.parent().and_then(Path::file_name) == Some(OsStr::new("teams"))
}

/// The team directory, the subdirectory and the file's name of `path` when it is a file in
/// a subdirectory of a team directory (`HOME/teams/TEAM/SUB/FILE`).
fn in_team(path: &Path) -> Option<(&Path, &str, &OsStr)> {
    let leaf = path.file_name()?;
    let sub_dir = path.parent()?;
    let sub = sub_dir.file_name()?.to_str()?;
    let team_dir = sub_dir.parent()?;
    (team_dir.parent()?.file_name()? == "teams").then_some((team_dir, sub, leaf))
}

/// Open the file at `path` for appending (made `0600` when missing; it can be read too), as
/// `fsutil::open_append` does: for a file in a team directory's subdirectory (a worker's log,
/// `HOME/teams/TEAM/logs/NAME.log`), through the team directory opened from the home
/// (`TeamDir`), never through a link swapped in above it; elsewhere by its path.
pub fn open_append(path: &Path) -> Result<File> {
    match in_team(path) {
        Some((team_dir, sub, leaf)) => {
            let dir = TeamDir::open(team_dir)?.sub(sub)?;
            let (file, _) = dir.file(leaf, OFlag::O_RDWR | OFlag::O_APPEND)?;
            // A file with other names too (a hard link to a file elsewhere) is not appended
            // to: an empty file of its own is put in its place (attacker QA: a worker started
            // on a log linked to an outside file wrote its notes and its mail into that file).
            if std::os::unix::fs::MetadataExt::nlink(&file.metadata().at(path)?) > 1
                && let Some(name) = leaf.to_str()
            {
                dir.replace(name, b"", Sync::None)?;
                return dir
                    .file(leaf, OFlag::O_RDWR | OFlag::O_APPEND)
                    .map(|(file, _)| file);
            }
            Ok(file)
        }
        None => super::fsutil::open_append(path),
    }
}

/// Replace the file at `path` with `bytes` atomically, as `fsutil::write_atomic_with` does:
/// for a file in a team directory's subdirectory (a recorded environment, `env/NAME`),
/// through the team directory opened from the home (`TeamDir`: the subdirectory made when
/// missing, the temporary file and the
/// rename relative to it); elsewhere by its path (its directory made when missing).
pub fn write_atomic(path: &Path, bytes: &[u8], sync: Sync) -> Result<()> {
    match in_team(path).and_then(|(t, s, l)| Some((t, s, l.to_str()?))) {
        Some((team_dir, sub, leaf)) => {
            let dir = TeamDir::open(team_dir)?.sub(sub)?;
            dir.replace(leaf, bytes, sync).map(drop)
        }
        None => {
            if let Some(dir) = path.parent() {
                super::fsutil::ensure_dir_levels(dir, 1)?;
            }
            super::fsutil::write_atomic_with(path, bytes, sync)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A team directory's files are written through the directory found at the name, never
    /// through a link put there: the link is refused, what it points at untouched, and no
    /// temporary file is left anywhere.
    #[test]
    fn writes_go_into_the_real_team_directory_and_never_through_a_link() {
        let home = tempfile::tempdir().unwrap();
        let team = home.path().join("teams").join("t");
        std::fs::create_dir_all(&team).unwrap();
        let file = team.join("env").join("bob");
        write_atomic(&file, b"A=1\0", Sync::None).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"A=1\0");
        let log = team.join("logs").join("bob.log");
        std::io::Write::write_all(&mut open_append(&log).unwrap(), b"x").unwrap();
        std::io::Write::write_all(&mut open_append(&log).unwrap(), b"y").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"xy");

        // The team directory moved away and a link to a copy put at its name.
        let aside = home.path().join("aside");
        let copy = home.path().join("copy");
        std::fs::rename(&team, &aside).unwrap();
        std::fs::create_dir(&copy).unwrap();
        std::os::unix::fs::symlink(&copy, &team).unwrap();
        let err = write_atomic(&file, b"B=2\0", Sync::None).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(open_append(&log).is_err());
        assert!(TeamDir::open(&team).is_err());
        let left: Vec<_> = std::fs::read_dir(&copy).unwrap().flatten().collect();
        assert!(left.is_empty(), "written into the copy: {left:?}");
        for d in ["env", "logs"] {
            let names: Vec<_> = std::fs::read_dir(aside.join(d))
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect();
            assert_eq!(names.len(), 1, "{d}: {names:?}");
        }

        // A failed replacement (a directory at the name) leaves no temporary file.
        std::fs::remove_file(&team).unwrap();
        std::fs::rename(&aside, &team).unwrap();
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        std::fs::write(file.join("keep"), b"").unwrap();
        assert!(write_atomic(&file, b"C=3\0", Sync::All).is_err());
        let names: Vec<_> = std::fs::read_dir(team.join("env"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bob")]);
    }

    /// A path outside any team directory is written by its path, as before.
    #[test]
    fn a_file_outside_a_team_directory_is_written_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.log");
        std::io::Write::write_all(&mut open_append(&file).unwrap(), b"z").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"z");
    }
}
