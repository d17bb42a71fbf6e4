//! Private files and directories (0700/0600), exclusive lock files, and atomic replacement
//! (temp file, fsync, rename) so readers never see half a file.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// Create a directory and its parents, each new one `0700`.
pub fn ensure_dir(path: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .at(path)
}

/// Run `op`; if it fails, make sure `dir` exists and run it once more. Directories are thus
/// made when first needed, not checked before every write (a `mkdir` per write was a
/// measurable share of a busy team's time). Whether `dir` was missing is not asked: another
/// process may have made it between the failure and the question, and the failure then
/// stood although a second try would succeed.
pub fn with_dir<T>(dir: &Path, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    match op() {
        Err(_) => {
            ensure_dir(dir)?;
            op()
        }
        done => done,
    }
}

/// `with_dir`, making at most the last `levels` components of `dir` (each `0700`): the
/// directories of a team (`inboxes/NAME/cursors`, `state`, `locks`) are made again when
/// missing, but never the team directory itself, so a write racing `delete` cannot bring a
/// deleted team back (docs/PROTOCOL.md, "Deleting a team").
pub fn with_subdir<T>(dir: &Path, levels: usize, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    match op() {
        Err(_) => {
            ensure_dir_levels(dir, levels)?;
            op()
        }
        done => done,
    }
}

/// Make `dir`, creating at most its last `levels` components (each `0700`); a missing
/// directory above them is an error (`NotFound`), not made.
pub fn ensure_dir_levels(dir: &Path, levels: usize) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|_| levels > 0).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the team directory is gone (deleted?)",
        )
    });
    let parent = parent.at(dir)?;
    ensure_dir_levels(parent, levels - 1)?;
    match DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e).at(dir),
        _ => Ok(()),
    }
}

/// Open (creating `0600`) a file for appending; it can be read too (to check its tail).
pub fn open_append(path: &Path) -> Result<File> {
    open_or_create(path, OpenOptions::new().read(true).append(true)).at(path)
}

/// Open an existing file with `options`, creating it (`0600`) only when it is missing. An
/// open that may create takes the directory's lock for writing even when the file exists, so
/// hundreds of workers appending to one inbox, or locking beside it, queued on the directory.
pub fn open_or_create(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    match options.open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            options.create(true).mode(0o600).open(path)
        }
        done => done,
    }
}

/// Replace `path` with `bytes` atomically: a reader sees the old file or the new, never half.
/// With `durable`, the data is fsynced before the rename.
pub fn write_atomic(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(&tmp)
            .at(&tmp)?;
        f.write_all(bytes).at(&tmp)?;
        if durable {
            f.sync_all().at(&tmp)?;
        }
        fs::rename(&tmp, path).at(path)?;
        if durable && let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let unique = uuid::Uuid::now_v7().simple().to_string();
    path.with_file_name(format!(".{name}.{}.{unique}.tmp", std::process::id()))
}

/// An exclusive advisory lock held on a lock file; released on drop. Writers of a shared file
/// must hold one: functions that write take `&LockGuard` so that rule is checked by the types.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// Block until the lock at `path` (created `0600` if missing) is ours.
    pub fn acquire(path: &Path) -> Result<LockGuard> {
        let file = open_or_create(path, OpenOptions::new().truncate(false).write(true)).at(path)?;
        file.lock().at(path)?;
        Ok(LockGuard {
            file,
            path: path.to_path_buf(),
        })
    }

    /// A shared lock at `path` (created `0600` if missing; its directory must exist): many
    /// holders at once, none while an exclusive one is held.
    pub fn shared(path: &Path) -> Result<LockGuard> {
        let file = open_or_create(path, OpenOptions::new().truncate(false).write(true)).at(path)?;
        file.lock_shared().at(path)?;
        Ok(LockGuard {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_modes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("a/b");
        ensure_dir(&d).unwrap();
        assert_eq!(
            fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let f = d.join("x.json");
        write_atomic(&f, b"{}", true).unwrap();
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read(&f).unwrap(), b"{}");
        let l = LockGuard::acquire(&d.join("x.lock")).unwrap();
        assert_eq!(
            fs::metadata(l.path()).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Appending creates the file private, then opens it as it is.
        let log = d.join("log");
        open_append(&log).unwrap().write_all(b"a").unwrap();
        open_append(&log).unwrap().write_all(b"b").unwrap();
        assert_eq!(fs::read(&log).unwrap(), b"ab");
        assert_eq!(
            fs::metadata(&log).unwrap().permissions().mode() & 0o777,
            0o600
        );
        fs::remove_file(&log).unwrap();
        // No temp files left behind.
        let names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
