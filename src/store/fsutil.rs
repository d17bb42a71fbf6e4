//! Private files and directories (0700/0600), exclusive lock files, and atomic replacement
//! (temp file, fsync, rename) so readers never see half a file. The one way state files are
//! opened: every open here carries `O_NOFOLLOW`, so a symbolic link planted at an inbox, lock,
//! cursor, live-state, log, team or task file makes the open fail (`ELOOP`, reported as "is a
//! symbolic link") instead of reading or writing where it points; directories teamctl makes
//! or uses are checked to be real directories (`check_dir`), and a home or team directory
//! must belong to the caller alone (`check_private_dir`).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// `O_NOFOLLOW` on `options` (and close-on-exec, so agents never inherit state files), and
/// `O_NONBLOCK`: a FIFO planted at a state file would otherwise hold the open, and the
/// command, until something opened its other end (attacker QA: `send` and the worker hung in
/// `open`); `regular` then refuses it. On a regular file the flag changes nothing.
fn nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC | nix::libc::O_NONBLOCK)
}

/// Open `path` with `options` (see `nofollow`) if it is a regular file: anything else there (a
/// FIFO, a directory, a device) is refused (`NotRegular`). A FIFO that nobody reads fails a
/// non-blocking open for writing with `ENXIO`; one that opens is refused once open.
fn open_regular(options: &OpenOptions, path: &Path) -> std::io::Result<File> {
    open_regular_sized(options, path).map(|(file, _)| file)
}

/// `open_regular`, with the file's size as the check found it.
fn open_regular_sized(options: &OpenOptions, path: &Path) -> std::io::Result<(File, u64)> {
    let not_regular =
        || std::io::Error::new(std::io::ErrorKind::InvalidInput, crate::error::NotRegular);
    match options.open(path) {
        Ok(file) => match file.metadata()? {
            m if m.is_file() => Ok((file, m.len())),
            _ => Err(not_regular()),
        },
        Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => Err(not_regular()),
        Err(e) => Err(e),
    }
}

/// Open an existing regular file for reading, never through a symbolic link.
pub fn open_read(path: &Path) -> std::io::Result<File> {
    open_regular(nofollow(OpenOptions::new().read(true)), path)
}

/// A whole file's bytes, never through a symbolic link. Room for them is made from the size
/// the open's check saw (`File::read_to_end` asks the kernel for it again, and for the
/// position: two more system calls per file read on `send`'s path); a file that grew since is
/// read to its end all the same.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let (file, len) = open_regular_sized(nofollow(OpenOptions::new().read(true)), path)?;
    // A file past `READ_WHOLE_MAX` is none teamctl wrote (a planted sparse team file of
    // gigabytes was read whole by every command: 3-4 GB of memory, seconds; attacker QA).
    if len > READ_WHOLE_MAX {
        return Err(too_big(len));
    }
    let mut bytes = Vec::new();
    // One byte over, so a file that did not grow ends in one read that returns 0.
    bytes.try_reserve_exact(usize::try_from(len).unwrap_or(0).saturating_add(1))?;
    // Through a `Take`: its `read_to_end` reads into the room made, with no look of its own;
    // one that grows past the limit meanwhile is read no further.
    file.take(READ_WHOLE_MAX + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > READ_WHOLE_MAX {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The most `read` takes in: a team file of 1,000 members is under 1 MiB.
pub const READ_WHOLE_MAX: u64 = 256 << 20;

fn too_big(len: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{len} bytes, more than teamctl reads of a file it wrote ({} MiB): not one of its files; move it away",
            READ_WHOLE_MAX >> 20
        ),
    )
}

/// A whole file as text, never through a symbolic link (`read`).
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        // std's own words for it.
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
}

/// A small file's text (a name, a number), never through a symbolic link, read to `max`
/// bytes at most: none when it is longer (grown by hand, or sparse gigabytes), unreadable or
/// not UTF-8.
pub fn read_small(path: &Path, max: u64) -> Option<String> {
    let mut text = String::new();
    open_read(path)
        .ok()?
        .take(max + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= max).then_some(text)
}

/// Create a directory and its parents, each new one `0700`; the directory must then be a real
/// directory, not a symbolic link to one.
pub fn ensure_dir(path: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .at(path)?;
    check_dir(path)
}

/// `path`, when it exists, is a regular file (`lstat`): a symbolic link there is refused,
/// whatever it points at, and so is a FIFO or a device (a program that opens it would block,
/// or read and write elsewhere).
pub fn check_file(path: &Path) -> Result<()> {
    check_kind(path, fs::Metadata::is_file, "is not a regular file")
}

/// `path`, when it exists, is a real directory (`lstat`): a symbolic link there is refused,
/// whatever it points at.
pub fn check_dir(path: &Path) -> Result<()> {
    check_kind(path, fs::Metadata::is_dir, "is not a directory")
}

/// `path`, when it exists, is no symbolic link and is what `is` says (else `not`).
fn check_kind(path: &Path, is: fn(&fs::Metadata) -> bool, not: &str) -> Result<()> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).at(path),
        Ok(m) if m.file_type().is_symlink() => Err(Error::failed(format!(
            "{} is a symbolic link; teamctl never follows links inside its home: remove it",
            path.display()
        ))),
        Ok(m) if !is(&m) => Err(Error::failed(format!(
            "{} {not}; move it away",
            path.display()
        ))),
        Ok(_) => Ok(()),
    }
}

/// A symbolic link found where teamctl removes something under its home (a planted
/// `teams/T/worktrees/NAME`, say): a removal unlinks the link itself and never follows it, so
/// what it points at (a git worktree outside the home, uncommitted work and all) stays as it
/// is. `target` is what it pointed at, for the caller to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub path: PathBuf,
    pub target: PathBuf,
}

/// `path` when it is a symbolic link (`lstat`), with where it points.
pub fn link_at(path: &Path) -> Option<Link> {
    let meta = fs::symlink_metadata(path).ok()?;
    meta.file_type().is_symlink().then(|| Link {
        path: path.to_path_buf(),
        target: fs::read_link(path).unwrap_or_default(),
    })
}

/// Unlink `path` when it is a symbolic link (never what it points at); the link, when it was
/// one. Anything else there is left alone (`None`).
pub fn unlink_if_link(path: &Path) -> Result<Option<Link>> {
    let Some(link) = link_at(path) else {
        return Ok(None);
    };
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).at(path),
        _ => Ok(Some(link)),
    }
}

/// Remove `path` under the home and all it holds, never through a symbolic link: a link at
/// `path` or anywhere below it is unlinked, what it points at left as it is (std's
/// `remove_dir_all` walks so: `lstat`, then `openat` with `O_NOFOLLOW` all the way down; the
/// tests below hold it to that). Nothing there is done already. Returns the link when `path`
/// itself was one, for the caller to say. The one way teamctl removes a tree under its home.
pub fn remove_tree(path: &Path) -> Result<Option<Link>> {
    if let Some(link) = unlink_if_link(path)? {
        return Ok(Some(link));
    }
    let removed = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match removed {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).at(path),
        _ => Ok(None),
    }
}

/// What directory `dir` holds, as it is: each entry's path, and its link when it is a
/// symbolic link (from `DirEntry::file_type`, which never follows one). When `dir` itself is a
/// link, it alone is returned, as one: nothing behind it is read, so nothing there is acted on.
/// Missing or unreadable: nothing.
pub fn entries_nofollow(dir: &Path) -> Vec<(PathBuf, Option<Link>)> {
    if let Some(link) = link_at(dir) {
        return vec![(dir.to_path_buf(), Some(link))];
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            let link = e
                .file_type()
                .is_ok_and(|t| t.is_symlink())
                .then(|| link_at(&path))
                .flatten();
            (path, link)
        })
        .collect()
}

/// A home or team directory (`what`), when it exists, belongs to the caller alone: owned by
/// the caller's (effective) uid and writable by no group or other. Otherwise someone else
/// could plant links or files that teamctl would act on. `link_ok`: the path may be a symbolic
/// link the caller owns (a home moved elsewhere), checked as the directory it points at.
pub fn check_private_dir(path: &Path, what: &str, link_ok: bool) -> Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).at(path),
        Ok(m) => m,
    };
    let me = my_uid();
    let meta = if meta.file_type().is_symlink() {
        if !link_ok {
            return Err(Error::failed(format!(
                "refusing {what} {}: it is a symbolic link; teamctl never follows links inside its home",
                path.display()
            )));
        }
        if meta.uid() != me {
            return Err(Error::failed(format!(
                "refusing {what} {}: it is a symbolic link owned by uid {}, not by you (uid {me})",
                path.display(),
                meta.uid()
            )));
        }
        fs::metadata(path).at(path)?
    } else {
        meta
    };
    check_private_meta(path, what, &meta)
}

/// The caller's effective uid, asked once (teamctl never changes it): each directory checked
/// asked again, a system call apiece on `send`'s path.
fn my_uid() -> u32 {
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UID.get_or_init(|| nix::unistd::geteuid().as_raw())
}

/// The owner and mode rules of `check_private_dir`, on what was found at `path`.
fn check_private_meta(path: &Path, what: &str, meta: &fs::Metadata) -> Result<()> {
    let me = my_uid();
    if !meta.is_dir() {
        return Err(Error::failed(format!(
            "refusing {what} {}: it is not a directory",
            path.display()
        )));
    }
    if meta.uid() != me {
        return Err(Error::failed(format!(
            "refusing {what} {}: it is owned by uid {}, not by you (uid {me}); teamctl only uses a directory that is yours alone (use another --home / TEAMCTL_HOME)",
            path.display(),
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(Error::failed(format!(
            "refusing {what} {}: others can write to it (mode {mode:o}); make it private with `chmod 700 {}`",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// A directory held open by its descriptor, with its path for what is said of it. What lies
/// below it is opened relative to it (`openat`), each step with `O_NOFOLLOW`: a link swapped
/// in for a directory above, or for one on the way down, after the look that checked the path
/// cannot take a write elsewhere. A check of the path followed by an open of the path could
/// (attacker QA: a link to a copy swapped in for the team directory, or for `teams`, and back,
/// took 1-4 of 200 sends into the copy, each `send` exiting 0).
#[derive(Debug)]
pub struct DirFd {
    dir: File,
    path: PathBuf,
}

impl std::os::fd::AsFd for DirFd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

/// How every directory below the home is opened: never through a link at its name (`ELOOP`,
/// or `ENOTDIR` with `O_DIRECTORY`), never kept across an `exec`. `O_PATH`: the descriptor only
/// names the directory for the `*at` calls and `fstat`, and its open and close are no inotify
/// events (an `O_RDONLY` open was one for every watcher of the directory above: with a worker
/// watching `inboxes/` on each of 127 inotify instances, every `send` woke all 127, and a
/// thousand-member team's broadcast and `status` slowed tenfold; BENCHMARKS.md).
fn dir_flags() -> nix::fcntl::OFlag {
    use nix::fcntl::OFlag;
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

impl DirFd {
    /// Open `path` as a directory, following a link at `path` itself (a home's place is the
    /// user's choice: `Home::verify` checks that link), and require it to be the caller's
    /// alone, as `check_private_dir` says (`what`), from the open directory (`fstat`).
    pub fn open_private(path: &Path, what: &str) -> Result<DirFd> {
        let dir = DirFd::open_path(path)?;
        check_private_meta(path, what, &dir.metadata().at(path)?)?;
        Ok(dir)
    }

    /// Open `path` as a directory, following links at it and above it: a place the caller
    /// holds by its path (a store's team directory, to ring its doorbells); nothing below is
    /// then opened through a link (`dir`).
    pub fn open_path(path: &Path) -> Result<DirFd> {
        use nix::fcntl::OFlag;
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::openat(
            nix::fcntl::AT_FDCWD,
            path,
            flags,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(std::io::Error::from)
        .at(path)?;
        Ok(DirFd {
            dir: File::from(fd),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open directory's metadata (`fstat`): whatever its path names now.
    pub fn metadata(&self) -> std::io::Result<fs::Metadata> {
        self.dir.metadata()
    }

    /// The directory `name` in this one, opened: a real directory (a link or anything else
    /// there is refused with what it is, never followed). With `make`, made `0700` when
    /// missing. With `private`, it must be the caller's alone (`check_private_dir`'s rules,
    /// `private` naming it). `NotFound` when missing (and not made), or when this directory
    /// was removed meanwhile (nothing can be made in it).
    pub fn dir(
        &self,
        name: &(impl AsRef<std::ffi::OsStr> + ?Sized),
        make: bool,
        private: Option<&str>,
    ) -> Result<DirFd> {
        let name = name.as_ref();
        let path = self.path.join(name);
        let open =
            || nix::fcntl::openat(&self.dir, name, dir_flags(), nix::sys::stat::Mode::empty());
        let fd = match open() {
            Err(nix::errno::Errno::ENOENT) if make => {
                match nix::sys::stat::mkdirat(&self.dir, name, nix::sys::stat::Mode::S_IRWXU) {
                    Ok(()) | Err(nix::errno::Errno::EEXIST) => open(),
                    Err(e) => Err(e),
                }
            }
            done => done,
        };
        let fd = match fd {
            Ok(fd) => fd,
            Err(e @ (nix::errno::Errno::ENOTDIR | nix::errno::Errno::ELOOP)) => {
                // What is there, said as `check_dir` says it (looked at only now, on the
                // error's path: gone back to a directory meanwhile, the raw error).
                check_dir(&path)?;
                return Err(std::io::Error::from(e)).at(&path);
            }
            Err(e) => return Err(std::io::Error::from(e)).at(&path),
        };
        let dir = DirFd {
            dir: File::from(fd),
            path,
        };
        if let Some(what) = private {
            check_private_meta(&dir.path, what, &dir.metadata().at(&dir.path)?)?;
        }
        Ok(dir)
    }

    /// The regular file `name` in this directory, opened with `flags` (`O_NOFOLLOW`,
    /// `O_NONBLOCK` and `O_CLOEXEC` added, as `nofollow` adds them: a link there fails, a FIFO
    /// is refused as not a regular file), created `0600` when missing, with its size as the
    /// open's check found it.
    pub fn file(
        &self,
        name: &(impl AsRef<std::ffi::OsStr> + ?Sized),
        flags: nix::fcntl::OFlag,
    ) -> Result<(File, u64)> {
        use nix::fcntl::OFlag;
        let name = name.as_ref();
        let path = self.path.join(name);
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let mode = nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR;
        let open = |flags: OFlag| {
            nix::fcntl::openat(&self.dir, name, flags, mode).map_err(std::io::Error::from)
        };
        // Without `O_CREAT` first: an open that may create takes the directory's lock for
        // writing even when the file exists (see `open_or_create`).
        let fd = match open(flags) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => open(flags | OFlag::O_CREAT),
            done => done,
        };
        let regular = fd.and_then(|fd| {
            let file = File::from(fd);
            match file.metadata()? {
                m if m.is_file() => Ok((file, m.len())),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    crate::error::NotRegular,
                )),
            }
        });
        match regular {
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                crate::error::NotRegular,
            )),
            done => done,
        }
        .at(&path)
    }

    /// Replace the file `name` in this directory with `bytes` atomically, all of it relative
    /// to the descriptor: a temporary file made new beside it (`O_EXCL|O_NOFOLLOW`), written,
    /// synced as `sync` says, and renamed over `name` (`renameat`). A link swapped in above
    /// this directory meanwhile cannot take the write elsewhere, and the temporary file is
    /// removed on every failure (none is left behind). The file's metadata as the rename left
    /// it, as `write_atomic_seen` gives it.
    pub fn replace(&self, name: &str, bytes: &[u8], sync: Sync) -> Result<Option<fs::Metadata>> {
        use nix::fcntl::OFlag;
        let path = self.path.join(name);
        let unique = uuid::Uuid::now_v7().simple().to_string();
        let tmp = format!(".{name}.{}.{unique}.tmp", std::process::id());
        let tmp_path = self.path.join(&tmp);
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR;
        let fd = nix::fcntl::openat(&self.dir, tmp.as_str(), flags, mode)
            .map_err(std::io::Error::from)
            .at(&tmp_path)?;
        let mut f = File::from(fd);
        let result = (|| {
            f.write_all(bytes).at(&tmp_path)?;
            if sync != Sync::None {
                f.sync_all().at(&tmp_path)?;
            }
            let written = f.metadata().ok();
            nix::fcntl::renameat(&self.dir, tmp.as_str(), &self.dir, name)
                .map_err(std::io::Error::from)
                .at(&path)?;
            let seen = f.metadata().ok().filter(|now| {
                written.as_ref().is_some_and(|w| {
                    (w.len(), w.mtime(), w.mtime_nsec())
                        == (now.len(), now.mtime(), now.mtime_nsec())
                })
            });
            if sync == Sync::All {
                self.sync();
            }
            Ok(seen)
        })();
        if result.is_err() {
            let _ = nix::unistd::unlinkat(
                &self.dir,
                tmp.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
        result
    }

    /// Overwrite the file `name` in this directory (made `0600` when missing) with `bytes`,
    /// in place: one write at its start, then its length set (not atomic: for files whose
    /// readers check what they read). A file with other names
    /// too (a hard link made to it) is replaced whole instead, so the write lands in this
    /// name's own file only (attacker QA 45: `config.index` linked to a file outside the home
    /// wrote the index over it).
    pub fn write_in_place(&self, name: &str, bytes: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let (file, _) = self.file(name, nix::fcntl::OFlag::O_WRONLY)?;
        let path = || self.path.join(name);
        if file.metadata().at(&path())?.nlink() > 1 {
            return self.replace(name, bytes, Sync::None).map(drop);
        }
        file.write_all_at(bytes, 0).at(&path())?;
        file.set_len(bytes.len() as u64).at(&path())
    }

    /// The lock file `name` in this directory (made `0600` when missing), locked: as
    /// `LockGuard::acquire`, opened through the descriptor.
    pub fn lock(&self, name: &str) -> Result<LockGuard> {
        let path = self.path.join(name);
        let file = match self.file(name, nix::fcntl::OFlag::O_WRONLY) {
            Ok((file, _)) => file,
            Err(e) => {
                return Err(match odd_kind(&path) {
                    Some(_) => lock_error(&path, std::io::Error::other(e.to_string())),
                    None => e,
                });
            }
        };
        lock_said(&file, &path, false)?;
        Ok(LockGuard { file, path })
    }

    /// The regular file `name` in this directory read whole (never through a link, never
    /// made; a FIFO or anything else there refused, as `read` refuses it), with its metadata
    /// as the open found it.
    pub fn read(&self, name: &str) -> std::io::Result<(Vec<u8>, fs::Metadata)> {
        use nix::fcntl::OFlag;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::openat(&self.dir, name, flags, nix::sys::stat::Mode::empty())?;
        let file = File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                crate::error::NotRegular,
            ));
        }
        if meta.len() > READ_WHOLE_MAX {
            return Err(too_big(meta.len()));
        }
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1))?;
        file.take(READ_WHOLE_MAX + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > READ_WHOLE_MAX {
            return Err(too_big(bytes.len() as u64));
        }
        Ok((bytes, meta))
    }

    /// A small regular file's text at `rel` (relative to this directory, or absolute), read
    /// to `max` bytes at most, resolved with no symbolic link anywhere on the way
    /// (`openat2`, `RESOLVE_NO_SYMLINKS`; with `beneath`, never out of this directory either)
    /// and opened without blocking (a FIFO is refused as not a regular file): `None` for any
    /// of those, a longer file, one not UTF-8, or a kernel without `openat2` (older than 5.6,
    /// or a sandbox refusing it). For files of another program a look must not be led astray
    /// by, nor hang on: a git worktree's `.git` and `HEAD` (`worktree::head`).
    pub fn read_small_no_links(&self, rel: &Path, max: u64, beneath: bool) -> Option<String> {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
        let mut resolve = ResolveFlag::RESOLVE_NO_SYMLINKS;
        if beneath {
            resolve |= ResolveFlag::RESOLVE_BENEATH;
        }
        let how = OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)
            .resolve(resolve);
        let file = File::from(nix::fcntl::openat2(&self.dir, rel, how).ok()?);
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut text = String::new();
        file.take(max + 1).read_to_string(&mut text).ok()?;
        (text.len() as u64 <= max).then_some(text)
    }

    /// The directory's entries made durable (`fsync`): through a descriptor opened for it, as
    /// the one held (`O_PATH`) cannot be synced. At best, as `sync_all` of a directory is.
    fn sync(&self) {
        use nix::fcntl::OFlag;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        if let Ok(fd) = nix::fcntl::openat(&self.dir, ".", flags, nix::sys::stat::Mode::empty()) {
            let _ = File::from(fd).sync_all();
        }
    }

    /// Rename `from` to `to`, both in this directory (`renameat`).
    pub fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        nix::fcntl::renameat(&self.dir, from, &self.dir, to).map_err(std::io::Error::from)
    }

    /// Remove the file `name` in this directory (`unlinkat`), never what a link there names.
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        nix::unistd::unlinkat(&self.dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
            .map_err(std::io::Error::from)
    }
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
/// A directory removed again while it is being made (an `rm -rf` running beside: its parent
/// gone between the look and the `mkdir`) is made again, up to `SUBDIR_TRIES` times in all,
/// rather than failing with the raw "No such file or directory" (QA: 4 sends in 40).
pub fn with_subdir<T>(dir: &Path, levels: usize, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    let mut tries = 1;
    loop {
        let failed = match op() {
            Err(e) => e,
            done => return done,
        };
        // After the first making-again, only a directory gone again is worth another try: a
        // step failing for another reason fails the same way each time.
        let gone_again = failed.io_kind() == Some(std::io::ErrorKind::NotFound);
        if tries == SUBDIR_TRIES || tries > 1 && !gone_again {
            return Err(failed);
        }
        tries += 1;
        if let Err(e) = ensure_dir_levels(dir, levels)
            && (tries == SUBDIR_TRIES || e.io_kind() != Some(std::io::ErrorKind::NotFound))
        {
            return Err(e);
        }
    }
}

/// How many times `with_subdir` runs its step.
const SUBDIR_TRIES: usize = 4;

/// Make `dir`, creating at most its last `levels` components (each `0700`); a missing
/// directory above them is an error (`NotFound`), not made.
pub fn ensure_dir_levels(dir: &Path, levels: usize) -> Result<()> {
    // `lstat`, never through a link: a link planted here is refused (`check_dir`).
    if fs::symlink_metadata(dir).is_ok() {
        return check_dir(dir);
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
        _ => check_dir(dir),
    }
}

/// Open (creating `0600`) a file for appending; it can be read too (to check its tail).
pub fn open_append(path: &Path) -> Result<File> {
    open_append_sized(path).map(|(file, _)| file)
}

/// `open_append`, with the file's length as the open's check found it (no second look).
/// A file with other names too (a hard link made to it) is not appended to: it is unlinked
/// and a new one of its own made (attacker QA 45: an interactive teammate's events file linked
/// to a file outside the home was written into, and emptied).
pub fn open_append_sized(path: &Path) -> Result<(File, u64)> {
    let mut options = OpenOptions::new();
    let options = nofollow(options.read(true).append(true));
    let opened = match open_regular_sized(options, path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            open_regular_sized(options.create(true).mode(0o600), path)
        }
        done => done,
    }
    .at(path)?;
    if opened.0.metadata().at(path)?.nlink() > 1 {
        fs::remove_file(path).at(path)?;
        return open_regular_sized(options.create_new(true).mode(0o600), path).at(path);
    }
    Ok(opened)
}

/// Open an existing file with `options`, creating it (`0600`) only when it is missing. An
/// open that may create takes the directory's lock for writing even when the file exists, so
/// hundreds of workers appending to one inbox, or locking beside it, queued on the directory.
pub fn open_or_create(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    let options = nofollow(options);
    match open_regular(options, path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            open_regular(options.create(true).mode(0o600), path)
        }
        done => done,
    }
}

/// Replace `path` with `bytes` atomically: a reader sees the old file or the new, never half.
/// With `durable`, the data is fsynced before the rename and the rename itself after it (the
/// directory).
pub fn write_atomic(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let sync = if durable { Sync::All } else { Sync::None };
    write_atomic_with(path, bytes, sync)
}

/// How much of an atomic replacement (`write_atomic_with`) is on disk when it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// Nothing forced: a crash may leave the old file, the new, or (on some file systems) an
    /// empty one in its place.
    None,
    /// The new file's data, before the rename; not the rename. A crash of the machine leaves
    /// the old file or the new one, whole, never an empty or torn one: for a change that may
    /// be lost with what it records (a worker's placement: a crash ends its pane too). Saves
    /// the directory's `fsync`, a journal commit of its own (BENCHMARKS.md, spawn on tmux).
    Data,
    /// The data, then the rename: on disk when this returns.
    All,
}

/// `write_atomic`, with as much forced to disk as `sync` says.
pub fn write_atomic_with(path: &Path, bytes: &[u8], sync: Sync) -> Result<()> {
    write_atomic_seen(path, bytes, sync).map(|_| ())
}

/// `write_atomic_with`, and the file's metadata as it is right after the rename, taken from the
/// file written (its descriptor, not its path, which another may have replaced by then). `None`
/// when it cannot be known to be only what was written: its size or modification time moved
/// between the last write and that look (written to in place meanwhile), or a look failed.
pub fn write_atomic_seen(path: &Path, bytes: &[u8], sync: Sync) -> Result<Option<fs::Metadata>> {
    write_atomic_mode(path, bytes, sync, 0o600)
}

/// `write_atomic`, of a file the user may run (mode 0700, given as it is made): nothing is
/// changed by path after the rename, which another may have replaced by then.
pub fn write_atomic_executable(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, Sync::None, 0o700).map(|_| ())
}

fn write_atomic_mode(
    path: &Path,
    bytes: &[u8],
    sync: Sync,
    mode: u32,
) -> Result<Option<fs::Metadata>> {
    use std::os::unix::fs::MetadataExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = nofollow(OpenOptions::new().create_new(true).write(true).mode(mode))
            .open(&tmp)
            .at(&tmp)?;
        if mode != 0o600 {
            // Whatever the umask took off, by the descriptor.
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(fs::Permissions::from_mode(mode))
                .at(&tmp)?;
        }
        f.write_all(bytes).at(&tmp)?;
        if sync != Sync::None {
            f.sync_all().at(&tmp)?;
        }
        let written = f.metadata().ok();
        fs::rename(&tmp, path).at(path)?;
        let seen = f.metadata().ok().filter(|now| {
            written.as_ref().is_some_and(|w| {
                (w.len(), w.mtime(), w.mtime_nsec()) == (now.len(), now.mtime(), now.mtime_nsec())
            })
        });
        if sync == Sync::All
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(seen)
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

/// `remove_tree` of `path`, a path under `root` (the home), reached from `root` one directory
/// at a time without following a link (`DirFd::dir`): a link swapped in for a directory on the
/// way (`teams`, the team's) while teamctl runs never has it remove a tree of that name
/// elsewhere (attacker QA 42: `doctor --fix` removed directories outside the home so). A link
/// on the way fails the removal, nothing removed. Below `path`, `remove_tree` never follows a
/// link either; it is given `path` through the descriptor of its directory (`/proc/self/fd`),
/// which no rename of a path can redirect.
pub fn remove_tree_under(root: &Path, path: &Path) -> Result<Option<Link>> {
    let rel = path.strip_prefix(root).map_err(|_| {
        crate::error::Error::failed(format!(
            "{} is not under {}; not removed",
            path.display(),
            root.display()
        ))
    })?;
    let mut names: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let Some(name) = names.pop() else {
        return Err(crate::error::Error::failed(format!(
            "{} is the home itself; not removed",
            path.display()
        )));
    };
    let mut dir = match DirFd::open_path(root) {
        Ok(d) => d,
        Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    for n in names {
        dir = match dir.dir(n, false, None) {
            Ok(d) => d,
            Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
    }
    use std::os::fd::AsRawFd;
    let through = PathBuf::from(format!("/proc/self/fd/{}", dir.dir.as_raw_fd())).join(name);
    match remove_tree(&through) {
        Ok(link) => Ok(link.map(|link| Link {
            path: path.to_path_buf(),
            target: link.target,
        })),
        // Said by the path the user knows, not the descriptor's (new-user QA 43:
        // `/proc/self/fd/5/ghost: Operation not permitted`).
        Err(e) => Err(crate::error::Error::failed(
            e.to_string()
                .replace(&through.display().to_string(), &path.display().to_string()),
        )),
    }
}

/// How long a lock is waited for in silence; past it the wait is said once (`lock_said`).
pub const LOCK_SAID_AFTER: std::time::Duration = std::time::Duration::from_secs(3);

/// Take the lock on `file` (open at `path`), exclusive or `shared`, waiting as long as its
/// holder keeps it, as `flock` does; a wait past `LOCK_SAID_AFTER` is said once on stderr,
/// naming the holder when `/proc/locks` tells it (attacker QA 45: a stopped or stuck holder
/// hung `send`, `task add` and `status` with no word). Free, it costs one `flock` as before;
/// only a wait starts the thread that says it.
pub fn lock_said(file: &File, path: &Path, shared: bool) -> Result<()> {
    let tried = if shared {
        file.try_lock_shared()
    } else {
        file.try_lock()
    };
    match tried {
        Ok(()) => return Ok(()),
        Err(std::fs::TryLockError::Error(e)) => return Err(e).at(path),
        Err(std::fs::TryLockError::WouldBlock) => {}
    }
    wait_for_lock(file, path, shared)
}

/// `lock_said`'s wait: the lock is taken on a thread of its own (a dup of the same open file,
/// so the lock is `file`'s) while this one says the wait once past `LOCK_SAID_AFTER`. Inside
/// `signals::interruptible` a caught signal ends it with `Error::Interrupted`, the lock not
/// taken (the thread's wait ends with the process).
fn wait_for_lock(file: &File, path: &Path, shared: bool) -> Result<()> {
    use std::sync::mpsc;
    let waiter = file.try_clone().at(path)?;
    let (tx, rx) = mpsc::channel::<Option<std::io::Result<()>>>();
    let rung = tx.clone();
    std::thread::spawn(move || {
        let locked = if shared {
            waiter.lock_shared()
        } else {
            waiter.lock()
        };
        let _ = tx.send(Some(locked));
    });
    let interruptible = crate::signals::locks_interruptible();
    let _ringing = interruptible.then(|| {
        let bell: crate::signals::Bell = std::sync::Arc::new(move || {
            let _ = rung.send(None);
        });
        crate::signals::ring_on(&bell)
    });
    let mut said = false;
    loop {
        let waited = if said {
            rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(LOCK_SAID_AFTER)
        };
        match waited {
            Ok(Some(locked)) => return locked.at(path),
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let signal = crate::signals::caught().unwrap_or(nix::sys::signal::Signal::SIGINT);
                return Err(crate::signals::interrupted(
                    signal,
                    format!("while waiting for the lock {}", path.display()),
                ));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                said = true;
                let holder = file
                    .metadata()
                    .ok()
                    .and_then(|m| lock_holder(&m))
                    .map_or_else(|| "another process holds it".to_string(), |h| h.to_string());
                let or = if interruptible {
                    ", or ends on Ctrl-C"
                } else {
                    ""
                };
                crate::errln!(
                    "teamctl: waiting for the lock {} ({holder}); this goes on once it is let go{or}",
                    path.display()
                );
            }
        }
    }
}

/// An `flock` holder, as `/proc/locks` and `/proc/PID` say (`lock_holder`).
struct Holder {
    pid: u32,
    command: String,
    stopped: bool,
    /// It runs this program (another teamctl command), which lets the lock go when done.
    ours: bool,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "held by pid {}", self.pid)?;
        // Quoted as a string, its own quotes escaped: a command line is the holder's to
        // choose, and in backquotes it could close them and say teamctl's words (attacker QA
        // 48: "..., which is stopped: `kill -CONT 1` ..." of one that was not).
        if !self.command.is_empty() {
            write!(
                f,
                ", {:?}",
                crate::output::printable_line(&self.command, 80)
            )?;
        }
        if self.stopped {
            write!(
                f,
                ", which is stopped: `kill -CONT {}` lets it go on, or end it",
                self.pid
            )?;
        }
        Ok(())
    }
}

/// Who holds an `flock` on the file `meta` is of, as `/proc/locks` says: matched by device and
/// inode (attacker QA 47: by inode alone, a lock on another file system's file of the same
/// number, another user's, was named).
fn lock_holder(meta: &fs::Metadata) -> Option<Holder> {
    let inode = meta.ino();
    let dev = meta.dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let me = std::process::id();
    // `N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END`, the device numbers in hex; a
    // waiter's line has `->` after `N:`. The pid of a line on this file, and whether it waits.
    let on_this = |line: &str| -> Option<(u32, bool)> {
        let mut words: Vec<&str> = line.split_whitespace().collect();
        let waits = words.get(1) == Some(&"->");
        if waits {
            words.remove(1);
        }
        if words.get(1) != Some(&"FLOCK") {
            return None;
        }
        let pid: u32 = words.get(4)?.parse().ok()?;
        let mut at = words.get(5)?.split(':');
        let maj = u64::from_str_radix(at.next()?, 16).ok()?;
        let min = u64::from_str_radix(at.next()?, 16).ok()?;
        let ino: u64 = at.next()?.parse().ok()?;
        (ino == inode && maj == major && min == minor).then_some((pid, waits))
    };
    let pid = locks
        .lines()
        .filter_map(on_this)
        .find_map(|(pid, waits)| (!waits && pid != me).then_some(pid))?;
    // `/proc/locks` names the process that took the lock; the lock is the open file's, which
    // that process may have handed on (a child forked with it) and closed, or it may have
    // ended, its pid free for another (attacker QA 48: a stopped decoy was named, the child
    // that held it never). Named only when it has the file open now; else the one process
    // that has it open and does not wait for it, if there is exactly one.
    // The open file that holds the lock, not another open of the same file: its
    // `/proc/PID/fdinfo/N` lists the lock (attacker QA 48: a decoy kept a second, unlocked
    // descriptor of the file and was named).
    let holds = |pid: u32| {
        fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                fs::metadata(fd.path()).is_ok_and(|m| m.ino() == inode && m.dev() == dev)
                    && fs::read_to_string(format!(
                        "/proc/{pid}/fdinfo/{}",
                        fd.file_name().to_string_lossy()
                    ))
                    .is_ok_and(|info| {
                        info.lines().any(|l| {
                            l.starts_with("lock:")
                                && l.contains("FLOCK")
                                && !l.contains("->")
                                && l.contains(&format!(":{inode} "))
                        })
                    })
            })
        })
    };
    let pid = if holds(pid) {
        pid
    } else {
        let waiting: Vec<u32> = locks
            .lines()
            .filter_map(on_this)
            .filter_map(|(pid, waits)| waits.then_some(pid))
            .collect();
        let mut open = fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&p| p != me && !waiting.contains(&p) && holds(p));
        match (open.next(), open.next()) {
            (Some(only), None) => only,
            _ => return None,
        }
    };
    let command = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            String::from_utf8_lossy(&raw)
                .split('\0')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let stopped = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.split(' ').next()?.to_string();
            Some(state == "T" || state == "t")
        })
        .unwrap_or(false);
    let ours = fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .is_some_and(|exe| std::env::current_exe().is_ok_and(|me| me == exe));
    Some(Holder {
        pid,
        command,
        stopped,
        ours,
    })
}

/// What a look at a lock finds (`lock_look`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockLook {
    /// Nobody holds it (or there is no lock file).
    Free,
    /// Held by a teamctl command that runs, which lets it go when done.
    Held,
    /// Held by a process that nothing says will let it go, a stopped one, one that is not
    /// teamctl, or one that cannot be told: who, in words.
    Stuck(String),
}

/// Whether the lock at `path` is held, and when it is, whether its holder will let it go:
/// one open and one try of the lock, and /proc read only when it is held. A look, no write,
/// no link followed.
pub fn lock_look(path: &Path) -> LockLook {
    let Ok(file) = open_regular(nofollow(OpenOptions::new().write(true)), path) else {
        return LockLook::Free;
    };
    if !matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)) {
        return LockLook::Free;
    }
    match file.metadata().ok().and_then(|m| lock_holder(&m)) {
        Some(holder) if holder.stopped || !holder.ours => LockLook::Stuck(holder.to_string()),
        Some(_) => LockLook::Held,
        // Let go meanwhile, or held by a process that cannot be told (`lock_holder`): nothing
        // says that one lets it go.
        None => match file.try_lock() {
            Ok(()) => LockLook::Free,
            Err(_) => LockLook::Stuck("held by a process teamctl cannot name".to_string()),
        },
    }
}

/// An advisory lock (exclusive, or shared) held on a lock file; released on drop. Writers of a
/// shared file hold one for the whole read-modify-write; the types do not check that, the
/// callers do (`store::team`, `store::tasks`, `leader`).
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// Block until the lock at `path` (created `0600` if missing) is ours.
    pub fn acquire(path: &Path) -> Result<LockGuard> {
        let file = open_or_create(path, OpenOptions::new().truncate(false).write(true))
            .map_err(|e| lock_error(path, e))?;
        lock_said(&file, path, false)?;
        Ok(LockGuard {
            file,
            path: path.to_path_buf(),
        })
    }

    /// A shared lock at `path` (created `0600` if missing; its directory must exist): many
    /// holders at once, none while an exclusive one is held.
    pub fn shared(path: &Path) -> Result<LockGuard> {
        let file = open_or_create(path, OpenOptions::new().truncate(false).write(true))
            .map_err(|e| lock_error(path, e))?;
        lock_said(&file, path, true)?;
        Ok(LockGuard {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The lock at `path` (created `0600` if missing), waiting at most `within` for its holder
    /// to let go: `None` when it still holds it then. The wait is a blocking `flock` on a
    /// thread of its own (a dup of the same open file, so the lock is this guard's), not a poll.
    pub fn acquire_within(path: &Path, within: std::time::Duration) -> Result<Option<LockGuard>> {
        let file = open_or_create(path, OpenOptions::new().truncate(false).write(true))
            .map_err(|e| lock_error(path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let waiter = file.try_clone().at(path)?;
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let _ = tx.send(waiter.lock());
                });
                match rx.recv_timeout(within) {
                    Ok(locked) => locked.at(path)?,
                    Err(_) => return Ok(None),
                }
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e).at(path),
        }
        Ok(Some(LockGuard {
            file,
            path: path.to_path_buf(),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether another open file holds the lock at `path` now (looked at without waiting, and
/// without making the file: none there is no holder). What `Home::leftover` tells a team
/// being made by.
pub fn lock_held(path: &Path) -> bool {
    let Ok(file) = open_regular(nofollow(OpenOptions::new().write(true)), path) else {
        return false;
    };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Every word `odd_kind` may say, for reading one back out of a message that carries it
/// (`status` shows `unknown (state file is a FIFO)`).
pub const ODD_KINDS: [&str; 5] = [
    "a FIFO",
    "a directory",
    "a symbolic link",
    "a socket",
    "a device",
];

/// What is at `path` when something is there that is not a regular file, looked at with
/// `lstat` (never followed, never opened: a FIFO is not waited on): `a FIFO`, `a directory`,
/// `a symbolic link`, `a socket` or `a device`. `None` when nothing or a regular file is there.
pub fn odd_kind(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = fs::symlink_metadata(path).ok()?.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a device"
    })
}

/// The error for a lock file that could not be opened: when something else is in its place (a
/// FIFO, a directory, a link planted there), what it is and the way out, which every command
/// taking that lock fails on until it is gone (attacker QA: a FIFO at `create.lock` made every
/// `create` fail with "not a regular file" while `doctor` said ok). Otherwise the error as it is.
pub fn lock_error(path: &Path, e: std::io::Error) -> Error {
    match odd_kind(path) {
        // A directory holding files is left to the user, as `doctor` says (new-user QA 44).
        Some(kind @ "a directory")
            if std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some()) =>
        {
            Error::failed(format!(
                "{} is {kind} holding files, not teamctl's lock file: move it away by hand (teamctl makes a new lock file then)",
                path.display()
            ))
        }
        Some(kind) => Error::failed(format!(
            "{} is {kind}, not teamctl's lock file: remove it (`teamctl doctor --fix` replaces it with one)",
            path.display()
        )),
        None => Error::io(path, e),
    }
}

/// Put a fresh lock file (empty, `0600`) in place of what `odd_kind` finds at `path`: a FIFO,
/// link, socket or device is unlinked (never followed nor opened), a directory removed only
/// when empty (one holding files is an error: someone's, to move by hand). What was there is
/// returned; `None` when a regular file (or nothing) is there: left as it is. teamctl itself
/// never replaces a lock file, it only makes a missing one, so a lock held meanwhile is a
/// regular file this leaves alone.
pub fn replace_odd_lock(path: &Path) -> Result<Option<&'static str>> {
    let Some(kind) = odd_kind(path) else {
        return Ok(None);
    };
    let removed = if kind == "a directory" {
        fs::remove_dir(path)
    } else {
        fs::remove_file(path)
    };
    match removed {
        Err(e) if e.raw_os_error() == Some(nix::libc::ENOTEMPTY) => {
            return Err(Error::failed(format!(
                "{} is a directory holding files, not teamctl's lock file: move it away by hand",
                path.display()
            )));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e).at(path),
        _ => {}
    }
    match nofollow(OpenOptions::new().write(true).create_new(true).mode(0o600)).open(path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e).at(path),
        _ => Ok(Some(kind)),
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

    /// A runnable file is runnable as it appears at its name (no chmod by path after), and
    /// replaces a link there rather than writing through it.
    #[test]
    fn an_executable_is_written_runnable_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        std::fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
        let at = dir.path().join("agent.sh");
        std::os::unix::fs::symlink(&outside, &at).unwrap();
        write_atomic_executable(&at, b"#!/bin/sh\n").unwrap();
        let m = fs::symlink_metadata(&at).unwrap();
        assert!(m.is_file());
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::read(&at).unwrap(), b"#!/bin/sh\n");
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        let m = fs::metadata(&outside).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }

    /// A sparse file past the limit (planted: gigabytes read whole by every command) is
    /// refused before anything is read; one of ordinary size reads as before.
    #[test]
    fn a_file_past_the_whole_read_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("config.json");
        let f = File::create(&big).unwrap();
        f.set_len(READ_WHOLE_MAX + 1).unwrap();
        let e = read(&big).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
        assert!(e.to_string().contains("move it away"), "{e}");
        std::fs::write(&big, b"{}").unwrap();
        assert_eq!(read(&big).unwrap(), b"{}");
    }

    #[test]
    fn a_subdirectory_removed_again_while_it_is_made_is_made_again() {
        let team = tempfile::tempdir().unwrap();
        let dir = team.path().join("inboxes").join("carl").join("cursors");
        // Each of the first two writes finds its directory gone (an `rm -rf` beside).
        let mut calls = 0;
        let wrote = with_subdir(&dir, 3, || {
            calls += 1;
            if calls <= 2 {
                let _ = std::fs::remove_dir_all(team.path().join("inboxes"));
            }
            std::fs::write(dir.join("worker"), b"x").at(&dir)
        });
        assert!(wrote.is_ok(), "{wrote:?}");
        assert_eq!(calls, 3);
        // Never the team directory itself: once it is gone, the error says so.
        let gone = team.path().join("gone").join("inboxes").join("x");
        let err = with_subdir(&gone, 2, || std::fs::write(gone.join("f"), b"x").at(&gone));
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("team directory is gone")
        );
        assert!(!team.path().join("gone").exists());
    }

    /// The metadata a replacing write gives is the file now at the path, as written.
    #[test]
    fn a_replacing_write_says_what_it_left_at_the_path() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for (i, sync) in [Sync::All, Sync::Data, Sync::None].into_iter().enumerate() {
            let bytes = vec![b'x'; 10 + i];
            let seen = write_atomic_seen(&path, &bytes, sync).unwrap().unwrap();
            let now = fs::metadata(&path).unwrap();
            assert_eq!(
                (seen.ino(), seen.len(), seen.ctime(), seen.ctime_nsec()),
                (now.ino(), now.len(), now.ctime(), now.ctime_nsec())
            );
            assert_eq!(fs::read(&path).unwrap(), bytes);
        }
    }

    /// A victim file outside `dir` and a link to it at `dir/name`.
    fn planted(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let victim = dir.join(format!("victim-{name}"));
        fs::write(&victim, b"precious").unwrap();
        let link = dir.join(name);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        (victim, link)
    }

    fn is_link_error(e: &crate::Error, link: &Path) {
        let msg = e.to_string();
        assert!(
            msg.contains("symbolic link") && msg.contains(&link.display().to_string()),
            "{msg}"
        );
    }

    #[test]
    fn no_open_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (victim, link) = planted(d, "append");
        is_link_error(&open_append(&link).unwrap_err(), &link);
        let (_, lock) = planted(d, "lock");
        is_link_error(&LockGuard::acquire(&lock).unwrap_err(), &lock);
        let (_, other) = planted(d, "rw");
        let e = open_or_create(&other, OpenOptions::new().read(true).write(true)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(nix::libc::ELOOP));
        assert!(read(&link).is_err() && read_to_string(&link).is_err());
        assert!(open_read(&link).is_err());
        for v in ["append", "lock", "rw"] {
            assert_eq!(
                fs::read(d.join(format!("victim-{v}"))).unwrap(),
                b"precious"
            );
        }
        // A hard link: never appended through; the name gets a file of its own (attacker QA
        // 45: an events file linked to a file elsewhere was written into).
        let outside = d.join("outside");
        fs::write(&outside, b"precious").unwrap();
        let hard = d.join("hard");
        fs::hard_link(&outside, &hard).unwrap();
        open_append(&hard).unwrap().write_all(b"event\n").unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
        assert_eq!(fs::read(&hard).unwrap(), b"event\n");
        assert_eq!(fs::metadata(&hard).unwrap().nlink(), 1);
        // A dangling link: its target is never created.
        let missing = d.join("created");
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(&missing, &dangling).unwrap();
        assert!(LockGuard::acquire(&dangling).is_err());
        assert!(open_append(&dangling).is_err());
        assert!(!missing.exists());
        // Atomic replacement replaces the link itself, never the file it points at.
        write_atomic(&link, b"new", true).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Its temp file is made with O_EXCL|O_NOFOLLOW: a link planted at that name fails.
        let tmp = temp_path(&d.join("x.json"));
        std::os::unix::fs::symlink(&missing, &tmp).unwrap();
        let e = nofollow(OpenOptions::new().create_new(true).write(true))
            .open(&tmp)
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert!(!missing.exists());
    }

    #[test]
    fn a_fifo_at_a_state_file_is_refused_at_once() {
        // Before, the open blocked until something opened the FIFO's other end: run on a
        // thread of its own, so that a hang fails the test instead of holding it.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("inbox.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let at = fifo.clone();
        std::thread::spawn(move || {
            let refused = [
                open_read(&at).map(drop).map_err(|e| Error::io(&at, e)),
                read(&at).map(drop).map_err(|e| Error::io(&at, e)),
                open_append(&at).map(drop),
                open_or_create(&at, OpenOptions::new().write(true))
                    .map(drop)
                    .map_err(|e| Error::io(&at, e)),
                LockGuard::acquire(&at).map(drop),
            ];
            let _ = tx.send(refused.map(|r| r.map_err(|e| e.to_string())));
        });
        let refused = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("every open returns at once");
        for r in refused {
            let msg = r.expect_err("a FIFO is not a state file");
            // A lock names what is there instead (`lock_error`).
            assert!(
                (msg.contains("is not a regular file")
                    || msg.contains("is a FIFO, not teamctl's lock file: remove it"))
                    && msg.contains("inbox.jsonl"),
                "{msg}"
            );
        }
        // A directory in a file's place too.
        let d = dir.path().join("config.json");
        fs::create_dir(&d).unwrap();
        let msg = Error::io(&d, open_read(&d).unwrap_err()).to_string();
        assert!(msg.contains("is not a regular file"), "{msg}");
    }

    #[test]
    fn directories_are_never_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        is_link_error(&ensure_dir(&link).unwrap_err(), &link);
        is_link_error(&check_dir(&link).unwrap_err(), &link);
        check_dir(&real).unwrap();
        check_dir(&dir.path().join("missing")).unwrap();
        assert!(check_private_dir(&link, "team directory", false).is_err());
        // A home may be a link the caller owns, checked as what it points at.
        check_private_dir(&link, "home", true).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_or_own_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("h");
        ensure_dir(&d).unwrap();
        check_private_dir(&d, "home", true).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        check_private_dir(&d, "home", true).unwrap();
        for mode in [0o777, 0o770, 0o702] {
            fs::set_permissions(&d, fs::Permissions::from_mode(mode)).unwrap();
            let msg = check_private_dir(&d, "home", true).unwrap_err().to_string();
            assert!(
                msg.contains(&d.display().to_string()) && msg.contains("others can write"),
                "{msg}"
            );
        }
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        // Owned by someone else: `/` (root's) for a user, a chown'ed directory for root.
        let me = nix::unistd::geteuid();
        let foreign = if me.is_root() {
            nix::unistd::chown(&d, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            d.clone()
        } else {
            PathBuf::from("/")
        };
        let msg = check_private_dir(&foreign, "home", true)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("owned by uid"), "{msg}");
        let e = crate::Error::io(&d, std::io::Error::from_raw_os_error(nix::libc::ELOOP));
        assert!(e.to_string().contains("is a symbolic link"));
    }

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

    /// `remove_tree` never goes through a link: one at the path is unlinked, ones below it
    /// (a `sessions` or `state` directory, a file) are unlinked with the tree, and what they
    /// point at stays whole. `remove_dir_all` is held to this here, since every removal under
    /// the home counts on it.
    #[test]
    fn remove_tree_unlinks_links_and_never_removes_what_they_point_at() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        let keep = outside.path().join("keep");
        fs::create_dir_all(keep.join("deep")).unwrap();
        fs::write(keep.join("deep/data.txt"), "mine").unwrap();
        let home = tempfile::tempdir().unwrap();
        let team = home.path().join("team");
        fs::create_dir_all(team.join("state")).unwrap();
        symlink(&keep, team.join("sessions")).unwrap();
        symlink(keep.join("deep/data.txt"), team.join("state/x")).unwrap();
        fs::create_dir_all(team.join("worktrees")).unwrap();
        symlink(&keep, team.join("worktrees/w")).unwrap();
        assert_eq!(remove_tree(&team).unwrap(), None);
        assert!(team.symlink_metadata().is_err());
        // A link as the tree itself: the link goes, and is said.
        let top = home.path().join("top");
        symlink(&keep, &top).unwrap();
        let link = remove_tree(&top).unwrap().expect("a link");
        assert_eq!(
            (link.path.as_path(), link.target.as_path()),
            (top.as_path(), keep.as_path())
        );
        assert!(top.symlink_metadata().is_err());
        assert_eq!(
            fs::read_to_string(keep.join("deep/data.txt")).unwrap(),
            "mine"
        );
        // Nothing there: done.
        assert_eq!(remove_tree(&top).unwrap(), None);
    }

    /// A link swapped in for a directory on the way from the home (`teams`) fails the removal
    /// and leaves the tree it points at (attacker QA 42: it was removed); put back, the tree
    /// under the home goes; a link as the tree itself is unlinked and said by its own path.
    #[test]
    fn remove_tree_under_never_goes_through_a_link_on_the_way() {
        use std::os::unix::fs::symlink;
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(outside.path().join("old")).unwrap();
        fs::write(outside.path().join("old/precious.txt"), "mine").unwrap();
        let teams = home.path().join("teams");
        fs::create_dir_all(teams.join("old/state")).unwrap();
        fs::write(teams.join("old/state/x.json"), "{}").unwrap();
        let team = teams.join("old");
        fs::rename(&teams, home.path().join("teams.real")).unwrap();
        symlink(outside.path(), &teams).unwrap();
        assert!(remove_tree_under(home.path(), &team).is_err());
        assert_eq!(
            fs::read_to_string(outside.path().join("old/precious.txt")).unwrap(),
            "mine"
        );
        fs::remove_file(&teams).unwrap();
        fs::rename(home.path().join("teams.real"), &teams).unwrap();
        assert_eq!(remove_tree_under(home.path(), &team).unwrap(), None);
        assert!(team.symlink_metadata().is_err());
        symlink(outside.path().join("old"), &team).unwrap();
        let link = remove_tree_under(home.path(), &team)
            .unwrap()
            .expect("a link");
        assert_eq!(link.path, team);
        assert!(team.symlink_metadata().is_err());
        assert!(outside.path().join("old/precious.txt").is_file());
        assert!(remove_tree_under(home.path(), home.path()).is_err());
    }

    /// `entries_nofollow` tells links apart without following them, and lists nothing behind
    /// a directory that is itself a link.
    #[test]
    fn entries_nofollow_lists_links_as_links_and_nothing_behind_one() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(outside.path().join("tree")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let trees = dir.path().join("worktrees");
        fs::create_dir(&trees).unwrap();
        fs::create_dir(trees.join("real")).unwrap();
        symlink(outside.path().join("tree"), trees.join("planted")).unwrap();
        let mut found = entries_nofollow(&trees);
        found.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].0, trees.join("planted"));
        assert_eq!(
            found[0].1.as_ref().map(|l| l.target.clone()),
            Some(outside.path().join("tree"))
        );
        assert_eq!(
            (found[1].0.clone(), found[1].1.clone()),
            (trees.join("real"), None)
        );
        let linked = dir.path().join("linked");
        symlink(outside.path(), &linked).unwrap();
        let found = entries_nofollow(&linked);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, linked);
        assert!(found[0].1.is_some());
        assert!(entries_nofollow(&dir.path().join("missing")).is_empty());
    }
}
