//! The inbox log: an append-only JSONL file per member, appended under a lock with one
//! `write()` per record, read from a byte-offset cursor that each reader keeps in its own file.
//! Reading never rewrites the inbox; reading one new message costs the same however long the
//! log is.

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nix::fcntl::OFlag;

use super::fsutil::{DirFd, check_dir};
use super::slots::{self, Offset};
use crate::domain::Envelope;
use crate::error::{IoContext, Result};

/// The files of one member's inbox.
#[derive(Debug, Clone)]
pub struct InboxPaths {
    pub dir: PathBuf,
    /// How many of `dir`'s last components are walked down by descriptors (`open_dir`) from
    /// the directory above them, which is opened by its path: for a team's inbox, `teams`,
    /// the team, `inboxes` and the member's name below the home.
    walked: usize,
    /// What the first walked directories are called, each checked to be the caller's alone
    /// (`check_private_dir`'s rules); the base is too, as `base_is`.
    private: &'static [&'static str],
    base_is: &'static str,
}

impl InboxPaths {
    /// The inbox directory `dir`, reached from the directory above it (tests).
    pub fn new(dir: PathBuf) -> Self {
        InboxPaths {
            dir,
            walked: 1,
            private: &[],
            base_is: "directory",
        }
    }

    /// `member`'s inbox in the team directory `team_dir` (`HOME/teams/TEAM`), reached from
    /// the home: `teams`, the team, `inboxes`, the member.
    pub fn in_team(team_dir: &Path, member: &str) -> Self {
        InboxPaths {
            dir: team_dir.join("inboxes").join(member),
            walked: 4,
            private: &["teams directory", "team directory"],
            base_is: "home",
        }
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join(INBOX_FILE)
    }

    pub fn lock(&self) -> PathBuf {
        self.dir.join("cursors").join(LOCK_FILE)
    }

    pub fn cursor(&self, reader: &str) -> PathBuf {
        self.dir.join("cursors").join(reader)
    }

    /// The inbox directory, opened by descriptors: the base by its path (the home: a link
    /// there is the user's choice), then each directory below it by its name in the one
    /// above, never through a link (`DirFd`), the home, `teams` and the team checked to be
    /// the caller's alone. A link swapped in anywhere on the way after the command checked
    /// the path fails the open (said as `check_dir` says it) or is passed by: what is
    /// opened is always the real directory. With `make`, the last two (`inboxes` and the
    /// member's) are made when missing, never the team directory itself, so a write racing
    /// `delete` cannot bring a deleted team back (docs/PROTOCOL.md, "Deleting a team").
    pub fn open_dir(&self, make: bool) -> Result<DirFd> {
        let mut names: Vec<&std::ffi::OsStr> = self.dir.iter().rev().take(self.walked).collect();
        names.reverse();
        let mut base = self.dir.clone();
        for _ in 0..names.len() {
            base.pop();
        }
        let mut dir = DirFd::open_private(&base, self.base_is)?;
        let makeable = names.len().saturating_sub(2);
        for (i, name) in names.into_iter().enumerate() {
            let make = make && i >= makeable;
            dir = match dir.dir(name, make, self.private.get(i).copied()) {
                Err(e) if i < makeable && e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the team directory is gone (deleted?)",
                    ))
                    .at(&dir.path().join(name));
                }
                next => next?,
            };
        }
        Ok(dir)
    }
}

/// The log's file name; watchers look for events on this name.
pub const INBOX_FILE: &str = "inbox.jsonl";

/// The append lock's file name, in `cursors`.
const LOCK_FILE: &str = ".inbox.lock";

/// How many times a write into the inbox is tried while its directories are removed again
/// as they are made (an `rm -rf` running beside it: `NotFound`), as `fsutil::with_subdir`.
const TRIES: usize = 4;

/// `op` on the inbox directory opened (`open_dir`, its missing directories made), tried
/// again while a directory it needs goes missing meanwhile.
fn in_dir<T>(paths: &InboxPaths, mut op: impl FnMut(&DirFd) -> Result<T>) -> Result<T> {
    let mut tries = 1;
    loop {
        let done = paths.open_dir(true).and_then(|dir| op(&dir));
        match done {
            Err(e) if tries < TRIES && e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
                tries += 1;
            }
            done => return done,
        }
    }
}

/// Make the inbox's directories, log and lock file where they are missing, so the first
/// message to a new member costs its sender no more than any other (a broadcast to 300 fresh
/// teammates made 900 files and directories, each a new inode, in the `send` process).
/// Reached as `append` reaches them (`open_dir`): a link planted at `inboxes/NAME`, at
/// `inboxes` or above, is refused, never followed (attacker QA).
pub fn prepare(paths: &InboxPaths) -> Result<()> {
    in_dir(paths, |dir| {
        let cursors = dir.dir("cursors", true, None)?;
        dir.file(INBOX_FILE, OFlag::O_RDWR | OFlag::O_APPEND)?;
        cursors.file(LOCK_FILE, OFlag::O_WRONLY).map(drop)
    })
}

/// Append one record. The whole line goes out in one `write()` under the inbox lock. A torn
/// tail left by a crashed writer is closed with a newline first (in the same write), so it
/// becomes one garbage line that readers skip, and the log stays append-only.
pub fn append(paths: &InboxPaths, env: &Envelope) -> Result<()> {
    let line = env.to_line()?;
    append_line(paths, &line)
}

/// Append an already-encoded line (which must end with a newline). The lock and the log are
/// opened in the inbox directory as `open_dir` opened it, by its descriptor: never through a
/// link, whenever one is swapped in.
pub fn append_line(paths: &InboxPaths, line: &[u8]) -> Result<()> {
    debug_assert!(line.ends_with(b"\n"));
    in_dir(paths, |dir| append_in(dir, line))
}

fn append_in(dir: &DirFd, line: &[u8]) -> Result<()> {
    let cursors = dir.dir("cursors", true, None)?;
    // Held until this returns: the lock is let go when its file is closed.
    let lock_path = cursors.path().join(LOCK_FILE);
    // Something else in the lock's place (a FIFO, directory, link): said as every lock says
    // it, with the way out (new-user QA: the raw "Is a directory").
    let (lock, _) = cursors.file(LOCK_FILE, OFlag::O_WRONLY).map_err(|e| {
        match super::fsutil::odd_kind(&lock_path) {
            Some(_) => super::fsutil::lock_error(&lock_path, std::io::Error::other(e.to_string())),
            None => e,
        }
    })?;
    super::fsutil::lock_said(&lock, &lock_path, false)?;
    let log = dir.path().join(INBOX_FILE);
    let (file, len) = dir.file(INBOX_FILE, OFlag::O_RDWR | OFlag::O_APPEND)?;
    // A log with other names too (a hard link made to it: another member's inbox, a file
    // outside the home) is written to by no one: the message would land there as well
    // (attacker QA 45: a teammate's mail appended to a shell start-up file linked in). Nothing
    // is written; the sender is told, and so is the way out.
    if std::os::unix::fs::MetadataExt::nlink(&file.metadata().at(&log)?) > 1 {
        return Err(crate::error::Error::failed(format!(
            "{} has other names too (a hard link to it elsewhere), so no message is written into it: nothing was sent; move it away by hand (a new inbox is made at the next send), then send again",
            log.display()
        )));
    }
    let torn = len > 0 && {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1).at(&log)?;
        last[0] != b'\n'
    };
    let mut buf;
    let bytes: &[u8] = if torn {
        buf = Vec::with_capacity(line.len() + 1);
        buf.push(b'\n');
        buf.extend_from_slice(line);
        &buf
    } else {
        line
    };
    // A write that failed part-way (no room left on the file system: the first `write()`
    // takes what fits) is taken back, under the lock still held, so the log keeps no torn
    // record and the sender can try again (attacker QA: a full disk left one behind).
    write_once(&file, bytes)
        .inspect_err(|_| {
            let _ = file.set_len(len);
        })
        .at(&log)
}

/// One `write()` for the whole buffer; a short write (seen for regular files with O_APPEND
/// only when the file system fills up) is finished rather than left torn.
fn write_once(mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    let n = file.write(bytes)?;
    if n < bytes.len() {
        file.write_all(&bytes[n..])?;
    }
    Ok(())
}

/// One item read from the log.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Where the entry starts (a byte offset in the file store).
    pub start: super::Position,
    /// Just past the entry: the cursor value once this entry is handled.
    pub end: super::Position,
    pub item: Item,
}

/// What a line held.
#[derive(Debug, Clone)]
pub enum Item {
    Message(Box<Envelope>),
    /// A line that is not a valid record, with a warning that says where it is.
    Garbage(String),
    /// An empty line: skipped without a warning.
    Blank,
}

/// The longest line a record can be, its newline included (`Envelope::to_line` refuses a
/// longer one: the 1 MiB cap is on the whole JSON line, envelope and all). A longer line is
/// unreadable: it is passed over like any garbage line, never held in memory (an inbox of
/// gigabytes without a newline made `status`, `send` and `inbox --peek` allocate all of it).
pub const MAX_LINE: u64 = crate::domain::message::MAX_MESSAGE_BYTES as u64;

/// How the next line of the log read (`next_line`).
pub(super) enum Line {
    /// Whole, its newline included, in the buffer: this many bytes.
    Whole(usize),
    /// The log ends before a newline, this many bytes into the line: a line still being
    /// written, or torn (left for a later read; the next append closes a torn one with a
    /// newline).
    Partial(u64),
    /// Longer than `MAX_LINE`: this many bytes, its newline included, read past and not kept.
    TooLong(u64),
}

/// Read the next line into `line` (cleared first), keeping at most `MAX_LINE` bytes of it.
/// `passed`: bytes of this line already read past before the reader's position, by an
/// earlier read that found no newline in them (more than `MAX_LINE`: none of it is kept).
pub(super) fn next_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    passed: u64,
) -> std::io::Result<Line> {
    line.clear();
    let mut n: u64 = passed;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            line.clear();
            return Ok(Line::Partial(n));
        }
        let (take, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        #[cfg(test)]
        SCANNED.set(SCANNED.get() + take as u64);
        n += take as u64;
        if n <= MAX_LINE {
            line.extend_from_slice(&buf[..take]);
        } else {
            line.clear();
        }
        reader.consume(take);
        if ends {
            return Ok(match usize::try_from(n) {
                Ok(whole) if n <= MAX_LINE => Line::Whole(whole),
                _ => Line::TooLong(n),
            });
        }
    }
}

/// Read up to `max` complete lines starting at byte `from`. A partial last line (no newline
/// yet) is left for a later read. Garbage lines come back as errors, in order, so the caller
/// can warn and move past them; a line longer than any record (`MAX_LINE`) is one of them,
/// and is never held whole.
pub fn read_from(log: &Path, from: u64, max: usize) -> Result<Vec<Entry>> {
    read_from_as(log, log, from, max)
}

/// `read_from` of `log`, named `shown` in what is said of its lines (a log read through a held
/// directory, `/proc/self/fd/N/inbox.jsonl`, is said by its name in the team).
pub fn read_from_as(log: &Path, shown: &Path, from: u64, max: usize) -> Result<Vec<Entry>> {
    let meta = fs::symlink_metadata(log);
    // Nothing past `from`: not opened (`status` asks this of every member's inbox).
    if meta.as_ref().is_ok_and(|m| m.is_file() && m.len() <= from) {
        return Ok(Vec::new());
    }
    let (file, len, id) = match open_log(log, meta) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            // A file or link where a directory should be is said as `send` says it, with
            // what to do, not as "Not a directory (os error 20)" (new-user QA).
            if let Some(dir) = shown.parent() {
                if let Some(inboxes) = dir.parent() {
                    check_dir(inboxes)?;
                }
                check_dir(dir)?;
            }
            return Err(e).at(shown);
        }
    };
    if from >= len {
        return Ok(Vec::new());
    }
    let mut file = &*file;
    file.seek(SeekFrom::Start(from)).at(shown)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file.take(len - from));
    let mut out = Vec::new();
    let mut pos = from;
    let mut line = Vec::new();
    let tail = long_tail(id, len);
    while out.len() < max {
        let start = pos;
        // The log's long unfinished tail, read past before: only what came after is read.
        let mut passed = 0;
        if let Some(t) = tail.filter(|t| t.start == start) {
            file.seek(SeekFrom::Start(t.passed)).at(shown)?;
            reader = BufReader::with_capacity(64 * 1024, file.take(len - t.passed));
            passed = t.passed - t.start;
        }
        let n = match next_line(&mut reader, &mut line, passed).at(shown)? {
            Line::Partial(n) => {
                if n > MAX_LINE {
                    remember_long_tail(LongTail {
                        id,
                        start,
                        passed: start + n,
                    });
                }
                break;
            }
            Line::TooLong(n) => {
                if passed > 0 {
                    forget_long_tail(id);
                }
                pos += n;
                out.push(Entry {
                    start: super::Position::from_raw(start),
                    end: super::Position::from_raw(pos),
                    item: Item::Garbage(format!(
                        "skipped an unreadable line at byte {start} of {}: it is {n} bytes long, longer than any message can be ({MAX_LINE} bytes)",
                        shown.display()
                    )),
                });
                continue;
            }
            Line::Whole(n) => n,
        };
        pos += n as u64;
        let body = &line[..line.len() - 1];
        let item = if body.iter().all(|b| b.is_ascii_whitespace()) {
            Item::Blank
        } else {
            match Envelope::from_line(body) {
                Ok(env) => Item::Message(Box::new(env)),
                Err(e) => Item::Garbage(format!(
                    "skipped an unreadable line at byte {start} of {}: {e}",
                    shown.display()
                )),
            }
        };
        out.push(Entry {
            start: super::Position::from_raw(start),
            end: super::Position::from_raw(pos),
            item,
        });
    }
    Ok(out)
}

/// How many logs a thread keeps open (`open_log`): a worker reads its own, and after a turn
/// the log of the member it answered.
const KEPT_LOGS: usize = 2;

/// An unfinished line at a log's end (no newline yet) already longer than `MAX_LINE`, so never
/// a record: where it starts and how far it was read past. A read that reaches it goes on
/// from there: such a tail (gigabytes without a newline) was read through again on every read,
/// the worker's and `status`'s, until an append closed it. When one does, the line is skipped
/// as any longer line is, said with its whole length. Kept per thread, in memory, for the log
/// of that device and inode, while the log is no shorter than what was read (a log cut back
/// or written anew in place forgets it). A log is append-only: the bytes read past stay as
/// they were.
#[derive(Debug, Clone, Copy)]
struct LongTail {
    id: (u64, u64),
    start: u64,
    passed: u64,
}

/// How many logs' long tails a thread remembers (the latest first).
const KEPT_TAILS: usize = 8;

/// The long tail remembered for the log `id`, when it still holds what was read (`len`).
fn long_tail(id: (u64, u64), len: u64) -> Option<LongTail> {
    TAILS.with_borrow_mut(|tails| {
        let at = tails.iter().position(|t| t.id == id)?;
        if tails[at].passed > len {
            tails.remove(at);
            return None;
        }
        Some(tails[at])
    })
}

fn remember_long_tail(tail: LongTail) {
    TAILS.with_borrow_mut(|tails| {
        tails.retain(|t| t.id != tail.id);
        tails.insert(0, tail);
        tails.truncate(KEPT_TAILS);
    });
}

fn forget_long_tail(id: (u64, u64)) {
    TAILS.with_borrow_mut(|tails| tails.retain(|t| t.id != id));
}

/// A log kept open by `open_log`, with the device and inode it had when it was opened.
struct KeptLog {
    path: PathBuf,
    file: Rc<File>,
    id: (u64, u64),
}

thread_local! {
    /// The logs this thread read last, still open, the latest first (`open_log`).
    static KEPT: RefCell<Vec<KeptLog>> = const { RefCell::new(Vec::new()) };
    /// When `open_log` last looked for kept logs removed by hand.
    static LOOKED: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
    /// The long unfinished tails this thread read past (`LongTail`).
    static TAILS: RefCell<Vec<LongTail>> = const { RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// How many bytes of logs `next_line` read on this thread (tests count them).
    static SCANNED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How often, at most, `open_log` looks for kept logs removed by hand (a `fstat` each): often
/// enough that a removed log's space comes back at a worker's next read, not at each of the
/// thousand reads of one `status`.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The log at `log` (`meta`: what `symlink_metadata` said of it just before; a caller that
/// needs no more than its length stops there), open for reading, its length, and its device
/// and inode. The logs this
/// thread read last stay open and are used again while `log` still names the same file (the
/// same device and inode, looked up on the path without opening it); a log replaced or removed
/// is opened anew, and one removed by hand (no name left) is let go at the thread's first read
/// of any log a second or more after its last look (`LOOK_EVERY`), so that its disk space comes
/// back. Why: inotify reports every open of a file in a watched directory (`notify` asks for
/// `IN_OPEN`), so each time a worker opened its own log it woke its own watching thread, a
/// wake-up across CPUs on the way from a message to its agent
/// (BENCHMARKS.md, tenth session).
fn open_log(
    log: &Path,
    meta: std::io::Result<fs::Metadata>,
) -> std::io::Result<(Rc<File>, u64, (u64, u64))> {
    let kept = KEPT.with_borrow_mut(|kept| {
        let now = std::time::Instant::now();
        if LOOKED
            .get()
            .is_none_or(|at| now.duration_since(at) >= LOOK_EVERY)
        {
            LOOKED.set(Some(now));
            kept.retain(|k| k.file.metadata().is_ok_and(|m| m.nlink() > 0));
        }
        let at = kept.iter().position(|k| k.path == log)?;
        let entry = kept.remove(at);
        let same = meta
            .as_ref()
            .is_ok_and(|m| m.is_file() && (m.dev(), m.ino()) == entry.id);
        same.then(|| {
            let found = (entry.file.clone(), entry.id);
            kept.insert(0, entry);
            found
        })
    });
    let meta = meta?;
    if let Some((file, id)) = kept {
        return Ok((file, meta.len(), id));
    }
    // Not kept, or not a plain file: opened as every state file is (a link fails here).
    let file = Rc::new(super::fsutil::open_read(log)?);
    let m = file.metadata()?;
    KEPT.with_borrow_mut(|kept| {
        kept.insert(
            0,
            KeptLog {
                path: log.to_path_buf(),
                file: file.clone(),
                id: (m.dev(), m.ino()),
            },
        );
        kept.truncate(KEPT_LOGS);
    });
    Ok((file, m.len(), (m.dev(), m.ino())))
}

/// The size of the log in bytes (0 when it does not exist yet).
pub fn log_len(log: &Path) -> u64 {
    fs::symlink_metadata(log).map_or(0, |m| m.len())
}

/// A reader's cursor, 0 when it has none. A cursor is where a line of the log ends; one that
/// is not (the log was removed or truncated and written anew, or edited, by hand) is moved back
/// to the start of the line it falls in, so that line is read again whole. Before, the line was
/// skipped as a torn one: the first message written into a removed log was lost when the old
/// offset fell inside it (QA). When the log was edited instead, that line's message may be
/// delivered twice; message ids let the reader drop repeats. A cursor past the end of the log
/// starts again from 0, and a cursor file with no valid record (see `slots.rs`) reads as 0.
/// Not caught: a new log whose lines end exactly at the old offset (its messages before the
/// offset are skipped); only the log's identity kept with the cursor would tell.
pub fn cursor(paths: &InboxPaths, reader: &str) -> u64 {
    cursor_checked(paths, reader).unwrap_or(0)
}

/// `cursor`, as its own reader (the worker) reads it: a cursor file that is not a regular file
/// (a FIFO, a symbolic link, a directory planted at it) is an error that names it, not the
/// log's start. Read as the start, it had the worker run its handled messages again (each
/// `resume` the first one; attacker QA). Never followed, never waited on.
pub fn cursor_checked(paths: &InboxPaths, reader: &str) -> Result<u64> {
    let path = paths.cursor(reader);
    let pos = slots::load_checked::<Offset>(&path).at(&path)?.unwrap_or(0);
    Ok(at_line_start(paths, pos))
}

/// `pos`, a cursor read from its file, checked against the log (see `cursor`).
fn at_line_start(paths: &InboxPaths, pos: u64) -> u64 {
    if pos == 0 {
        return 0;
    }
    let log = paths.log();
    let meta = fs::symlink_metadata(&log);
    // At the end: nothing to read, and whatever comes next is checked then (the log is not
    // opened for this).
    if meta.as_ref().is_ok_and(|m| m.is_file() && m.len() == pos) {
        return pos;
    }
    match open_log(&log, meta) {
        Ok((_, len, _)) if pos == len => pos,
        Ok((file, len, _)) if pos < len => line_start(&file, pos),
        _ => 0,
    }
}

/// Where the line that holds byte `pos - 1` starts: `pos` itself when that byte ends a line.
fn line_start(file: &File, pos: u64) -> u64 {
    let mut last = [0u8];
    if file.read_exact_at(&mut last, pos - 1).is_err() {
        return 0;
    }
    if last[0] == b'\n' {
        return pos;
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut end = pos - 1;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        if file.read_exact_at(chunk, start).is_err() {
            return 0;
        }
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return start + i as u64 + 1;
        }
        end = start;
    }
    0
}

/// Remove a reader's cursor file (none is no error). The inbox's directory and its `cursors`
/// must be real directories (never a link: the removal would happen where it points); the
/// file itself is unlinked, never followed.
pub fn remove_cursor(paths: &InboxPaths, reader: &str) -> Result<()> {
    let path = paths.cursor(reader);
    check_dir(&paths.dir)?;
    check_dir(path.parent().expect("a cursor has a parent"))?;
    match fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).at(&path),
        _ => Ok(()),
    }
}

/// Put a fresh cursor file in place of whatever is at the reader's cursor (a FIFO or link
/// planted there; unlinked, never followed nor opened), holding `pos`: for the reader that
/// knows where it is (the worker, whose own record of handled work this is). A directory
/// there is not removed (an error).
pub fn replace_cursor(paths: &InboxPaths, reader: &str, pos: u64) -> Result<()> {
    let path = paths.cursor(reader);
    check_dir(&paths.dir)?;
    check_dir(path.parent().expect("a cursor has a parent"))?;
    if let Err(e) = fs::remove_file(&path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(e).at(&path);
    }
    set_cursor(paths, reader, pos)
}

/// Store a reader's cursor, in place (see `slots.rs`: a torn write reads as the value before
/// it; not fsynced: losing it on a crash means a redelivery, which at-least-once allows).
pub fn set_cursor(paths: &InboxPaths, reader: &str, pos: u64) -> Result<()> {
    // Through the inbox directory opened from the home (`open_dir`, never through a link
    // swapped in above it: a leader's cursor was written into a copy linked in for `teams`,
    // attacker QA), and only into it: `cursors` may be made there (`set_cursor_in`), never
    // the inbox directory itself. Made anew here (an `rm -rf` of the inbox running beside
    // the write), the new directory got the old log's offset: the new log's first messages
    // were skipped by the worker, and `ask` took its message for handled and printed nothing
    // (a flaky doorbell test). The write fails `NotFound` instead, and the worker reads the
    // new log from its start. A cursor at the start needs no file: a missing cursor reads as
    // the start.
    let dir = match paths.open_dir(false) {
        Err(e) if pos == 0 && e.io_kind() == Some(std::io::ErrorKind::NotFound) => return Ok(()),
        done => done?,
    };
    set_cursor_in(&dir, reader, pos)
}

/// Store a reader's cursor in the inbox directory `dir` as it was opened (`open_dir`; the
/// worker holds the one its watch was armed on): a cursor is a place in one log, and written
/// through the directory's descriptor it lands in that log's directory or nowhere. By path,
/// a sender that made the inbox directory again between the worker's look and its write got
/// the old log's offset into the new directory, and the new log's first messages were
/// skipped. `cursors` may be made again in `dir`; `dir` removed, the write fails `NotFound`
/// (a cursor at the start needs no file: done).
pub fn set_cursor_in(dir: &DirFd, reader: &str, pos: u64) -> Result<()> {
    let cursors = match dir.dir("cursors", true, None) {
        Err(e) if pos == 0 && e.io_kind() == Some(std::io::ErrorKind::NotFound) => return Ok(()),
        done => done?,
    };
    let (file, _) = cursors.file(reader, OFlag::O_RDWR)?;
    slots::store_in::<Offset>(&file, &cursors.path().join(reader), &pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Body, Envelope};
    use crate::store::fsutil::open_append;

    fn setup() -> (tempfile::TempDir, InboxPaths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = InboxPaths::new(dir.path().join("bob"));
        (dir, paths)
    }

    fn msg(text: &str) -> Envelope {
        Envelope::new("alice", "bob", Body::message(text, None))
    }

    fn texts(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .filter_map(|e| match &e.item {
                Item::Message(env) => match &env.body {
                    Body::Message { text, .. } => Some(text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn append_then_read_with_cursor() {
        let (_d, p) = setup();
        for t in ["one", "two", "three"] {
            append(&p, &msg(t)).unwrap();
        }
        let all = read_from(&p.log(), cursor(&p, "w"), 100).unwrap();
        assert_eq!(texts(&all), ["one", "two", "three"]);
        set_cursor(&p, "w", all[1].end.raw()).unwrap();
        let rest = read_from(&p.log(), cursor(&p, "w"), 100).unwrap();
        assert_eq!(texts(&rest), ["three"]);
        // A second reader has its own cursor.
        assert_eq!(cursor(&p, "other"), 0);
        // max bounds the batch.
        assert_eq!(read_from(&p.log(), 0, 2).unwrap().len(), 2);
    }

    #[test]
    fn partial_last_line_is_not_consumed_until_complete() {
        let (_d, p) = setup();
        append(&p, &msg("whole")).unwrap();
        let line = msg("later").to_line().unwrap();
        let (head, tail) = line.split_at(20);
        let mut f = open_append(&p.log()).unwrap();
        f.write_all(head).unwrap();
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(texts(&got), ["whole"]);
        let end = got[0].end.raw();
        assert!(read_from(&p.log(), end, 100).unwrap().is_empty());
        f.write_all(tail).unwrap();
        assert_eq!(texts(&read_from(&p.log(), end, 100).unwrap()), ["later"]);
    }

    #[test]
    fn garbage_line_is_skipped_and_never_blocks_later_lines() {
        let (_d, p) = setup();
        append(&p, &msg("before")).unwrap();
        open_append(&p.log())
            .unwrap()
            .write_all(b"{not json\n\n")
            .unwrap();
        append(&p, &msg("after")).unwrap();
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(texts(&got), ["before", "after"]);
        assert_eq!(
            got.iter()
                .filter(|e| matches!(e.item, Item::Garbage(_)))
                .count(),
            1
        );
        assert_eq!(
            got.iter().filter(|e| matches!(e.item, Item::Blank)).count(),
            1
        );
        assert_eq!(got.last().unwrap().end.raw(), log_len(&p.log()));
    }

    #[test]
    fn torn_tail_is_closed_before_the_next_append() {
        let (_d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let line = msg("torn").to_line().unwrap();
        open_append(&p.log())
            .unwrap()
            .write_all(&line[..30])
            .unwrap();
        append(&p, &msg("two")).unwrap();
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(texts(&got), ["one", "two"]);
        assert_eq!(got.len(), 3, "the torn fragment is one skipped line");
    }

    /// A line longer than any record (`MAX_LINE`) is read past in pieces, never held: here a
    /// sparse stretch of several times the cap without a newline. While it is the log's
    /// unfinished tail it is left, as a torn line is (the cursor stays before it); once the
    /// next append closes it with a newline it is one garbage line, said, and the message
    /// after it is read.
    #[test]
    fn a_line_longer_than_any_record_is_skipped_as_garbage_and_the_next_message_read() {
        let (_d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let start = log_len(&p.log());
        let huge = 8 * MAX_LINE;
        open_append(&p.log())
            .unwrap()
            .set_len(start + huge)
            .unwrap();
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(texts(&got), ["one"]);
        assert_eq!(got.len(), 1, "the unfinished tail is left for later");
        assert_eq!(got[0].end.raw(), start);
        append(&p, &msg("two")).unwrap();
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(texts(&got), ["one", "two"]);
        assert_eq!(got.len(), 3, "{got:?}");
        let Item::Garbage(said) = &got[1].item else {
            panic!("{got:?}");
        };
        assert!(
            said.contains(&format!("at byte {start} "))
                && said.contains("longer than any message can be"),
            "{said}"
        );
        // Its newline included; the cursor moves past it to the next message.
        assert_eq!(got[1].start.raw(), start);
        assert_eq!(got[1].end.raw(), start + huge + 1);
        assert_eq!(got[2].start.raw(), got[1].end.raw());
        assert_eq!(
            texts(&read_from(&p.log(), got[1].end.raw(), 100).unwrap()),
            ["two"]
        );
    }

    /// An unfinished line longer than any record at the log's end is read past once: a later
    /// read, from its start or from before it, goes on where the last one stopped (bytes read
    /// counted), also while it grows, until an append closes it; it is then skipped as before,
    /// said with its whole length. A log cut back in place forgets it.
    #[test]
    fn a_long_unfinished_tail_is_read_past_once() {
        let (_d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let start = log_len(&p.log());
        let huge = 4 * MAX_LINE;
        let f = open_append(&p.log()).unwrap();
        f.set_len(start + huge).unwrap();
        SCANNED.set(0);
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!((texts(&got), got.len()), (vec!["one".to_string()], 1));
        assert_eq!(SCANNED.get(), start + huge);
        SCANNED.set(0);
        assert!(read_from(&p.log(), start, 100).unwrap().is_empty());
        assert_eq!(
            SCANNED.get(),
            0,
            "from the tail's start, nothing read again"
        );
        assert_eq!(texts(&read_from(&p.log(), 0, 100).unwrap()), ["one"]);
        assert_eq!(
            SCANNED.get(),
            start,
            "from before it, only the line before it"
        );
        // It grows, still without a newline: only what came is read.
        f.set_len(start + huge + MAX_LINE).unwrap();
        SCANNED.set(0);
        assert!(read_from(&p.log(), start, 100).unwrap().is_empty());
        assert_eq!(SCANNED.get(), MAX_LINE);
        // Closed by an append: one unreadable line of its whole length, then the message.
        append(&p, &msg("two")).unwrap();
        let got = read_from(&p.log(), start, 100).unwrap();
        let long = huge + MAX_LINE + 1;
        let Item::Garbage(said) = &got[0].item else {
            panic!("{got:?}");
        };
        assert!(
            said.contains(&format!("at byte {start} "))
                && said.contains(&format!("it is {long} bytes long")),
            "{said}"
        );
        assert_eq!(
            (got[0].start.raw(), got[0].end.raw()),
            (start, start + long)
        );
        assert_eq!(texts(&got[1..]), ["two"]);
        // Forgotten once closed: a read from the start reads the whole log again.
        SCANNED.set(0);
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(
            (texts(&got), got.len()),
            (vec!["one".into(), "two".into()], 3)
        );
        assert_eq!(SCANNED.get(), log_len(&p.log()));
        // Another long tail, then the log cut back and written anew in place (the same inode),
        // a line starting where the tail did: what was read past is not taken for the new
        // log's.
        let end = log_len(&p.log());
        f.set_len(end + huge).unwrap();
        read_from(&p.log(), 0, 100).unwrap();
        f.set_len(0).unwrap();
        let mut filler = vec![b' '; usize::try_from(end).unwrap()];
        filler[usize::try_from(end).unwrap() - 1] = b'\n';
        open_append(&p.log()).unwrap().write_all(&filler).unwrap();
        append(&p, &msg("fresh")).unwrap();
        assert_eq!(texts(&read_from(&p.log(), 0, 100).unwrap()), ["fresh"]);
    }

    /// The cap is the record's: a line of exactly `MAX_LINE` bytes is read; one byte more,
    /// even of well-formed JSON (no teamctl wrote it), is unreadable.
    #[test]
    fn a_record_of_the_largest_size_is_read_and_one_byte_more_is_not() {
        let (_d, p) = setup();
        let line = |len: u64| {
            // A summary given: a derived one would grow with the text.
            let mut env = msg("");
            env.body = Body::message("", Some("s".into()));
            let base = env.to_line().unwrap().len() as u64;
            env.body = Body::message("x".repeat((len - base) as usize), Some("s".into()));
            let mut bytes = serde_json::to_vec(&env).unwrap();
            bytes.push(b'\n');
            assert_eq!(bytes.len() as u64, len);
            bytes
        };
        prepare(&p).unwrap();
        let mut f = open_append(&p.log()).unwrap();
        f.write_all(&line(MAX_LINE)).unwrap();
        f.write_all(&line(MAX_LINE + 1)).unwrap();
        append(&p, &msg("after")).unwrap();
        let got = read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(got.len(), 3);
        assert!(matches!(got[0].item, Item::Message(_)));
        let said = match &got[1].item {
            Item::Garbage(s) => s.clone(),
            Item::Message(_) => "read as a message".into(),
            Item::Blank => "read as blank".into(),
        };
        assert!(said.contains("longer than any message"), "{said}");
        assert_eq!(texts(&got[2..]), ["after"]);
    }

    #[test]
    fn a_log_kept_open_is_read_anew_once_replaced_removed_or_linked() {
        let (d, p) = setup();
        append(&p, &msg("old")).unwrap();
        assert_eq!(texts(&read_from(&p.log(), 0, 100).unwrap()), ["old"]);
        // Replaced (renamed over: another inode): the new file is read, not the one kept open.
        let other = InboxPaths::new(d.path().join("carol"));
        append(&other, &msg("new one")).unwrap();
        append(&other, &msg("new two")).unwrap();
        fs::rename(other.log(), p.log()).unwrap();
        assert_eq!(
            texts(&read_from(&p.log(), 0, 100).unwrap()),
            ["new one", "new two"]
        );
        // Removed: nothing to read.
        fs::remove_file(p.log()).unwrap();
        assert!(read_from(&p.log(), 0, 100).unwrap().is_empty());
        // A symbolic link planted at the log, to a log this thread read and keeps: refused.
        append(&other, &msg("elsewhere")).unwrap();
        assert_eq!(
            texts(&read_from(&other.log(), 0, 100).unwrap()),
            ["elsewhere"]
        );
        std::os::unix::fs::symlink(other.log(), p.log()).unwrap();
        let err = read_from(&p.log(), 0, 100).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn reading_a_log_again_does_not_open_it_again() {
        // inotify reports every open in a watched directory: a worker reading its own log must
        // not wake its own watch each time (`open_log`).
        use notify::event::AccessKind;
        use notify::{EventKind, RecursiveMode, Watcher};
        let (_d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
            let _ = tx.send(e);
        })
        .unwrap();
        watcher.watch(&p.dir, RecursiveMode::NonRecursive).unwrap();
        let mut opens = 0;
        for i in 0..3 {
            assert_eq!(texts(&read_from(&p.log(), 0, 100).unwrap()), ["one"]);
            // A sentinel after each read: every event before it has been delivered once it is,
            // and the opens of two reads are not merged into one event (inotify merges equal
            // events that follow each other unread).
            let sentinel = p.dir.join(format!("sentinel-{i}"));
            File::create(&sentinel).unwrap();
            loop {
                let event = rx
                    .recv_timeout(std::time::Duration::from_secs(10))
                    .expect("the sentinel's event within 10 s")
                    .unwrap();
                if event.paths.contains(&sentinel) && matches!(event.kind, EventKind::Create(_)) {
                    break;
                }
                if event.paths.contains(&p.log())
                    && matches!(event.kind, EventKind::Access(AccessKind::Open(_)))
                {
                    opens += 1;
                }
            }
        }
        assert_eq!(opens, 1, "three reads of the same log open it once");
    }

    #[test]
    fn a_log_removed_by_hand_is_let_go_at_the_next_read() {
        // Its disk space comes back: no descriptor of this thread still names it.
        let (d, p) = setup();
        let other = InboxPaths::new(d.path().join("carol"));
        append(&p, &msg("mine")).unwrap();
        append(&other, &msg("theirs")).unwrap();
        read_from(&other.log(), 0, 100).unwrap();
        read_from(&p.log(), 0, 100).unwrap();
        let held =
            || KEPT.with_borrow(|kept| kept.iter().filter(|k| k.path == other.log()).count());
        assert_eq!(held(), 1);
        fs::remove_file(other.log()).unwrap();
        LOOKED.set(None);
        read_from(&p.log(), 0, 100).unwrap();
        assert_eq!(held(), 0, "the removed log is no longer kept open");
    }

    #[test]
    fn a_cursor_inside_a_line_of_a_log_written_anew_restarts() {
        // The log removed (or truncated) after a reader's cursor moved, then written anew with a
        // longer message: the old offset falls inside its first line.
        for truncate in [false, true] {
            let (_d, p) = setup();
            append(&p, &msg("old")).unwrap();
            let end = read_from(&p.log(), 0, 100).unwrap()[0].end.raw();
            set_cursor(&p, "w", end).unwrap();
            assert_eq!(cursor(&p, "w"), end);
            if truncate {
                File::options()
                    .write(true)
                    .open(p.log())
                    .unwrap()
                    .set_len(0)
                    .unwrap();
            } else {
                fs::remove_file(p.log()).unwrap();
            }
            append(&p, &msg("a new message, longer than the old one")).unwrap();
            let from = cursor(&p, "w");
            assert_eq!(from, 0, "truncated: {truncate}");
            assert_eq!(
                texts(&read_from(&p.log(), from, 100).unwrap()),
                ["a new message, longer than the old one"]
            );
        }
    }

    #[test]
    fn a_cursor_inside_a_line_of_an_edited_log_goes_back_to_that_line_only() {
        // A log edited by hand (a line before the cursor cut out): the line the old offset now
        // falls in is read again, not the whole log and not nothing.
        let (_d, p) = setup();
        for t in ["one", "two", "three", "four"] {
            append(&p, &msg(t)).unwrap();
        }
        let all = read_from(&p.log(), 0, 100).unwrap();
        set_cursor(&p, "w", all[2].end.raw()).unwrap();
        let mut text = fs::read(p.log()).unwrap();
        text.drain(0..10);
        fs::write(p.log(), &text).unwrap();
        let from = cursor(&p, "w");
        assert_eq!(
            texts(&read_from(&p.log(), from, 100).unwrap()),
            ["four"],
            "from {from}"
        );
    }

    /// A cursor is a place in one log: with the inbox directory removed (an `rm -rf` beside
    /// the write), it is not written into a directory made anew, where it would skip the new
    /// log's first messages. One at the start needs no file.
    #[test]
    fn a_cursor_is_never_written_into_an_inbox_made_anew() {
        let (d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let end = read_from(&p.log(), 0, 100).unwrap()[0].end.raw();
        fs::remove_dir_all(d.path().join("bob")).unwrap();
        let e = set_cursor(&p, "w", end).unwrap_err();
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}");
        set_cursor(&p, "w", 0).unwrap();
        assert!(!d.path().join("bob").exists());
        // The cursors directory alone may be made again, in the inbox it belongs to.
        append(&p, &msg("two")).unwrap();
        fs::remove_dir_all(d.path().join("bob/cursors")).unwrap();
        set_cursor(&p, "w", end).unwrap();
        assert_eq!(cursor(&p, "w"), end);
    }

    /// The race `set_cursor_in` closes, forced: the worker holds the inbox directory its
    /// watch was armed on; the directory is removed and a sender makes it again (with a new
    /// log) before the worker's cursor write. Written through the held directory, the old
    /// log's offset never lands in the new one (by path it did: the new log's first messages
    /// were then skipped); the write fails `NotFound` and the new log is read from its start.
    #[test]
    fn a_cursor_written_through_the_held_directory_never_lands_in_one_made_anew() {
        let (d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let end = read_from(&p.log(), 0, 100).unwrap()[0].end.raw();
        let held = p.open_dir(false).unwrap();
        set_cursor_in(&held, "w", end).unwrap();
        assert_eq!(cursor(&p, "w"), end, "written where it is held");
        fs::remove_dir_all(d.path().join("bob")).unwrap();
        append(&p, &msg("a new message, in a new log")).unwrap();
        let e = set_cursor_in(&held, "w", end).unwrap_err();
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}");
        assert!(
            !p.cursor("w").exists(),
            "the old offset went into the new inbox"
        );
        assert_eq!(cursor(&p, "w"), 0);
        // At the start: no file needed, nothing made.
        set_cursor_in(&held, "w", 0).unwrap();
        assert!(!p.cursor("w").exists());
        // Only `cursors` removed: made again in the directory held.
        let held = p.open_dir(false).unwrap();
        fs::remove_dir_all(d.path().join("bob/cursors")).unwrap();
        set_cursor_in(&held, "w", 7).unwrap();
        assert!(p.cursor("w").exists());
    }

    /// The inbox is reached by descriptors: a link planted at `bob` (to a real inbox
    /// elsewhere) is refused by `append`, `prepare` and `open_dir`, said as a link, and
    /// nothing is written where it points.
    #[test]
    fn an_inbox_reached_through_a_link_is_refused_and_nothing_written_there() {
        let (d, p) = setup();
        let elsewhere = InboxPaths::new(d.path().join("carol"));
        append(&elsewhere, &msg("carol's")).unwrap();
        std::os::unix::fs::symlink(d.path().join("carol"), &p.dir).unwrap();
        for e in [
            append(&p, &msg("into the link")).unwrap_err(),
            prepare(&p).unwrap_err(),
            p.open_dir(false).unwrap_err(),
        ] {
            let said = e.to_string();
            assert!(
                said.contains("symbolic link") && said.contains(&p.dir.display().to_string()),
                "{said}"
            );
        }
        assert_eq!(
            texts(&read_from(&elsewhere.log(), 0, 100).unwrap()),
            ["carol's"]
        );
    }

    /// A FIFO or link planted at a cursor is never waited on nor followed: its own reader is
    /// told (`cursor_checked`), views read the start as before, and `replace_cursor` puts a
    /// regular file in its place, leaving what a link pointed at as it was.
    #[test]
    fn a_planted_cursor_is_refused_to_its_reader_and_replaced_without_following() {
        let (d, p) = setup();
        append(&p, &msg("one")).unwrap();
        let end = read_from(&p.log(), 0, 100).unwrap()[0].end.raw();
        set_cursor(&p, "w", end).unwrap();
        assert_eq!(cursor_checked(&p, "w").unwrap(), end);
        assert_eq!(
            cursor_checked(&p, "nobody").unwrap(),
            0,
            "a missing cursor is the start"
        );
        let outside = d.path().join("outside");
        fs::write(&outside, b"keep").unwrap();
        for planted in ["fifo", "link"] {
            fs::remove_file(p.cursor("w")).unwrap();
            if planted == "fifo" {
                nix::unistd::mkfifo(
                    &p.cursor("w"),
                    nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
                )
                .unwrap();
            } else {
                std::os::unix::fs::symlink(&outside, p.cursor("w")).unwrap();
            }
            let e = cursor_checked(&p, "w").unwrap_err().to_string();
            assert!(e.contains(&p.cursor("w").display().to_string()), "{e}");
            assert_eq!(cursor(&p, "w"), 0, "{planted}: a view reads the start");
            assert!(
                set_cursor(&p, "w", end).is_err(),
                "{planted}: written through"
            );
            replace_cursor(&p, "w", end).unwrap();
            assert!(fs::symlink_metadata(p.cursor("w")).unwrap().is_file());
            assert_eq!(cursor_checked(&p, "w").unwrap(), end, "{planted}");
            assert_eq!(fs::read(&outside).unwrap(), b"keep");
        }
    }

    #[test]
    fn cursor_past_end_restarts() {
        let (_d, p) = setup();
        append(&p, &msg("x")).unwrap();
        set_cursor(&p, "w", 10_000).unwrap();
        assert_eq!(cursor(&p, "w"), 0);
    }
}
