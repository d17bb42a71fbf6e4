//! The task list as a file: `teams/TEAM/tasks.json`, changed only under `tasks.lock` and
//! replaced atomically (temp file, fsync, rename), so two claimers never get the same task and
//! readers never see half a list. A missing file is an empty list; a damaged one is an error
//! that says how to recover, never a panic. A change that leaves the list as it was writes
//! nothing, so idle auto-claim teammates watching the file are not woken for nothing. A change
//! that writes rings the task list's doorbells (`super::doorbell`: the wake of auto-claim
//! teammates past the inotify instance limit). The lock, the read and the replacement go
//! through the team directory opened by descriptors (`super::teamdir::open_fd`), never through
//! a link swapped in for `teams` or the team (attacker QA: a loop swapping the team directory
//! for a link got the task list written into what the link named).

use std::path::{Path, PathBuf};

use super::fsutil::{DirFd, Sync};
use crate::domain::task::TaskList;
use crate::error::{Error, Result};

pub const TASKS_FILE: &str = "tasks.json";
pub const TASKS_LOCK: &str = "tasks.lock";

/// The task list's files in a team directory.
#[derive(Debug, Clone)]
pub struct TaskFile {
    dir: PathBuf,
}

impl TaskFile {
    pub fn new(team_dir: &Path) -> TaskFile {
        TaskFile {
            dir: team_dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(TASKS_FILE)
    }

    /// The team directory, opened as writes into it are.
    fn open(&self) -> Result<DirFd> {
        super::teamdir::open_fd(&self.dir)
    }

    /// The list as it is now.
    pub fn load(&self) -> Result<TaskList> {
        match self.open() {
            Ok(dir) => self.load_in(&dir),
            Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => Ok(TaskList::default()),
            Err(e) => Err(e),
        }
    }

    /// The list as it is now in the team directory `dir`.
    fn load_in(&self, dir: &DirFd) -> Result<TaskList> {
        let path = self.path();
        let bytes = match dir.read(TASKS_FILE) {
            Ok((b, _)) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TaskList::default());
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let list: TaskList = serde_json::from_slice(&bytes).map_err(|e| {
            Error::failed(format!(
                "the task list {} is damaged ({e}); fix it by hand or move it away to start a new list",
                path.display()
            ))
        })?;
        Ok(list)
    }

    /// Change the list under its lock. `f` returning an error leaves the file untouched;
    /// so does a change that changes nothing.
    pub fn update(&self, f: &mut dyn FnMut(&mut TaskList) -> Result<()>) -> Result<TaskList> {
        let dir = self.open()?;
        let _lock = dir.lock(TASKS_LOCK)?;
        let before = self.load_in(&dir)?;
        let mut list = before.clone();
        f(&mut list)?;
        if list != before {
            let bytes = serde_json::to_vec_pretty(&list)
                .map_err(|e| Error::failed(format!("cannot encode the task list: {e}")))?;
            dir.replace(TASKS_FILE, &bytes, Sync::All)?;
            super::doorbell::ring_topic_in(&dir, &super::Topic::Tasks);
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Name;
    use crate::domain::task::NewTask;

    fn add(file: &TaskFile, subject: &str) {
        file.update(&mut |l| {
            l.add(
                NewTask {
                    subject: subject.into(),
                    ..Default::default()
                },
                0,
            )?;
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn missing_is_empty_and_changes_persist() {
        let dir = tempfile::tempdir().unwrap();
        let file = TaskFile::new(dir.path());
        assert_eq!(file.load().unwrap(), TaskList::default());
        add(&file, "a");
        assert_eq!(file.load().unwrap().tasks[0].subject, "a");
    }

    #[test]
    fn refused_or_empty_changes_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = TaskFile::new(dir.path());
        add(&file, "a");
        let before = std::fs::metadata(file.path()).unwrap();
        let bytes = std::fs::read(file.path()).unwrap();
        let err = file
            .update(&mut |l| {
                l.tasks.clear();
                Err(Error::bad("no"))
            })
            .unwrap_err();
        assert_eq!(err.exit_code(), 2);
        file.update(&mut |_| Ok(())).unwrap();
        let after = std::fs::metadata(file.path()).unwrap();
        assert_eq!(std::fs::read(file.path()).unwrap(), bytes);
        use std::os::unix::fs::MetadataExt;
        assert_eq!(before.ino(), after.ino(), "the file was replaced");
    }

    /// In a home, the list is locked, read and written through the team directory found at
    /// its name: with a link to a copy put there, a change is refused and the copy gets
    /// nothing (no list, no lock, no temporary file); the real directory keeps its list.
    #[test]
    fn the_list_is_never_written_through_a_link_at_the_team() {
        let home = tempfile::tempdir().unwrap();
        let team = home.path().join("teams").join("t");
        std::fs::create_dir_all(&team).unwrap();
        let file = TaskFile::new(&team);
        add(&file, "a");
        let aside = home.path().join("aside");
        let copy = home.path().join("copy");
        std::fs::rename(&team, &aside).unwrap();
        std::fs::create_dir(&copy).unwrap();
        std::os::unix::fs::symlink(&copy, &team).unwrap();
        let err = file
            .update(&mut |l| {
                l.tasks.clear();
                Ok(())
            })
            .unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(file.load().is_err(), "a list read through the link");
        let left: Vec<_> = std::fs::read_dir(&copy).unwrap().flatten().collect();
        assert!(left.is_empty(), "written into the copy: {left:?}");
        std::fs::remove_file(&team).unwrap();
        std::fs::rename(&aside, &team).unwrap();
        assert_eq!(file.load().unwrap().tasks[0].subject, "a");
    }

    #[test]
    fn a_damaged_list_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = TaskFile::new(dir.path());
        std::fs::write(file.path(), b"{\"nextId\": \x00garbage").unwrap();
        let err = file.load().unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
        assert!(file.update(&mut |_| Ok(())).is_err());
    }

    #[test]
    fn concurrent_claims_never_share_a_task() {
        let dir = tempfile::tempdir().unwrap();
        let file = TaskFile::new(dir.path());
        for i in 0..60 {
            add(&file, &format!("t{i}"));
        }
        let threads: Vec<_> = (0..6)
            .map(|i| {
                let file = file.clone();
                std::thread::spawn(move || {
                    let me = Name::parse(&format!("w{i}")).unwrap();
                    let mut got = Vec::new();
                    loop {
                        let mut claimed = None;
                        file.update(&mut |l| {
                            claimed = l.claim(&me, None, 0)?.map(|t| t.id);
                            Ok(())
                        })
                        .unwrap();
                        match claimed {
                            Some(id) => got.push(id),
                            None => return got,
                        }
                    }
                })
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all, (1..=60).collect::<Vec<_>>());
    }
}
