//! `teamctl log [-f]`: every message of the team in time order (broadcast copies shown once),
//! coloured by sender, filtered by `--from`, `--to`, `--type`; `--json` prints JSON Lines (one
//! object per line). With `-f` it then follows every inbox (members who join later too) through
//! the store's tail of them (`Store::follow_inboxes`: on files each inbox read again from its
//! position when woken, on NATS an ordered consumer), keeping a position per inbox and a
//! bounded set of recent ids. `log --worker NAME [-f]`: a teammate's own log on this host (its
//! worker's notes, its turns' output), shown as its pane shows it, followed on file events,
//! streamed in `CHUNK`s (a log may be hundreds of MB). `-n N` starts at the last N messages
//! (or the log's last N lines, found reading back from its end). The team deleted under a
//! follow ends it with one line on stderr, exit 1; so does its team file alone removed (a
//! leftover directory, said so, with how to remove it).

use crate::store::Position;
use crate::store::SharedStore;
use std::collections::{HashMap, HashSet, VecDeque};

use crate::cli::LogArgs;
use crate::context::Ctx;
use crate::domain::{Envelope, Name, TeamConfig};
use crate::error::{Error, Result};
use crate::store::{InboxTail, Item, Store};
use crate::view::events::{Inboxes, TeamWatch};

/// Ids remembered while following, to show a broadcast's copies once.
const RECENT_IDS: usize = 4096;

/// The most of a worker's log read (and printed) at a time.
const CHUNK: usize = 64 * 1024;

/// Reads every inbox of a team from where it last stopped, each message once.
#[derive(Default)]
pub struct Follower {
    pos: HashMap<Name, Position>,
    seen: HashSet<String>,
    order: VecDeque<String>,
    /// Ids kept at most (None: every id, for a one-off full read).
    limit: Option<usize>,
}

impl Follower {
    /// Messages that appeared in any member's inbox since the last call (every message on the
    /// first), deduplicated by id, in time order; messages of one millisecond keep their order
    /// in the inbox (ids are random past the time, so they say nothing about order).
    pub fn poll(&mut self, store: &dyn Store, config: &TeamConfig) -> Result<Vec<Envelope>> {
        let mut out = Vec::new();
        for m in &config.members {
            let pos = *self.pos.entry(m.name.clone()).or_insert(Position::START);
            let mut all = crate::store::entries(store, &m.name, pos);
            for e in all.by_ref() {
                self.keep(e?.item, &mut out);
            }
            self.pos.insert(m.name.clone(), all.pos());
        }
        Ok(self.finish(out))
    }

    /// As `poll`, from a tail of every inbox (`Store::follow_inboxes`).
    pub fn poll_tail(
        &mut self,
        tail: &mut dyn InboxTail,
        config: &TeamConfig,
    ) -> Result<Vec<Envelope>> {
        let members: Vec<Name> = config.members.iter().map(|m| m.name.clone()).collect();
        let mut out = Vec::new();
        for (_, e) in tail.take(&members, &mut self.pos)? {
            self.keep(e.item, &mut out);
        }
        Ok(self.finish(out))
    }

    /// `item` into `out` when it is a message not seen yet.
    fn keep(&mut self, item: Item, out: &mut Vec<Envelope>) {
        if let Item::Message(env) = item
            && self.seen.insert(env.id.clone())
        {
            self.order.push_back(env.id.clone());
            out.push(*env);
        }
    }

    fn finish(&mut self, mut out: Vec<Envelope>) -> Vec<Envelope> {
        if let Some(limit) = self.limit {
            while self.order.len() > limit {
                if let Some(old) = self.order.pop_front() {
                    self.seen.remove(&old);
                }
            }
        }
        // Stable: ties keep the order they were read in, an inbox's own order.
        out.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        out
    }

    /// From now on keep at most `n` ids.
    pub fn bound(&mut self, n: usize) {
        self.limit = Some(n);
    }
}

/// Every message in every inbox, deduplicated by id, in time order.
pub fn all_messages(store: &dyn Store) -> Result<Vec<Envelope>> {
    let config = store.load()?;
    Follower::default().poll(store, &config)
}

pub fn matches(args: &LogArgs, env: &Envelope) -> bool {
    args.from.as_ref().is_none_or(|f| *f == env.from)
        && args.to.as_ref().is_none_or(|t| *t == env.to)
        && args.kind.as_ref().is_none_or(|k| k == env.body.kind())
}

/// The message types `--type` takes.
pub const KINDS: &[&str] = &[
    "message",
    "idle_notification",
    "shutdown_request",
    "shutdown_response",
    "plan_approval_request",
    "plan_approval_response",
    "task_assignment",
];

pub fn run(ctx: &Ctx, args: &LogArgs) -> Result<()> {
    if let Some(name) = &args.worker {
        return worker_log(ctx, name, args.follow, args.lines);
    }
    if let Some(k) = &args.kind
        && !KINDS.contains(&k.as_str())
    {
        return Err(Error::bad(format!(
            "unknown message type {k:?}; use one of {}",
            KINDS.join(", ")
        )));
    }
    let store = ctx.store()?;
    // `--from`/`--to` naming no member (nor another team's, `NAME@TEAM`) would show nothing:
    // refused with the members, as `log --worker` and `inbox` do (new-user QA 37).
    {
        let config = store.load()?;
        for who in [&args.from, &args.to].into_iter().flatten() {
            if !who.contains('@') {
                config.require(who)?;
            }
        }
    }
    if !args.follow {
        let config = store.load()?;
        let all = all_messages(&*store)?;
        let shown: Vec<&Envelope> = all.iter().filter(|e| matches(args, e)).collect();
        for env in &shown[last_n(shown.len(), args.lines)..] {
            crate::outln!("{}", line(ctx, &config, env));
        }
        return Ok(());
    }
    follow(ctx, &store, args)
}

/// Where the last `n` of `len` things start (`None`: all of them).
fn last_n(len: usize, n: Option<usize>) -> usize {
    n.map_or(0, |n| len.saturating_sub(n))
}

/// `log --worker NAME`: the teammate's log file on this host (logs are host-local), from its
/// start or its last `lines` lines; with `follow`, then whatever is written to it until Ctrl-C
/// or its removal. Read and printed a chunk at a time, never the whole file at once.
fn worker_log(ctx: &Ctx, name: &str, follow: bool, lines: Option<usize>) -> Result<()> {
    let name = Name::parse_as(name, "member")?;
    let store = ctx.store()?;
    let config = store.load()?;
    let member = config.require(name.as_str())?;
    if name.is_leader() {
        return Err(Error::bad(format!(
            "{name} runs no worker, so it has no log; `teamctl log` shows the team's messages"
        )));
    }
    let path = store.log_path(&name);
    // Armed before the first read: nothing written afterwards is missed.
    let watch = if follow {
        Some(crate::view::events::FileWatch::new(&path)?)
    } else {
        None
    };
    let mut log = LogFile::new(path);
    log.refresh();
    if let Some(n) = lines {
        log.start_at_last_lines(n);
    }
    if !log.seen()
        && let Ok(odd) = std::fs::symlink_metadata(&log.path)
        && !odd.is_file()
    {
        // Something put in its place that teamctl never reads through: said, not "no log".
        return Err(Error::failed(format!(
            "{}: not a regular file (a symbolic link, FIFO or directory); teamctl does not read through it: remove it, and {name}'s worker writes its log there again",
            log.path.display()
        )));
    }
    if !log.seen() {
        let where_ = match crate::backend::host::elsewhere(member) {
            Some(h) => format!(
                "; it runs on {}, where its log is",
                crate::backend::host::label(h)
            ),
            None => String::new(),
        };
        crate::errln!(
            "teamctl: {name} has no log on this host yet ({}){where_}{}",
            log.path.display(),
            if follow { "; waiting for one" } else { "" }
        );
    }
    let mut shown = Shown::new(ctx.json);
    // Each chunk flushed at once; a write error (a full disk, a reader gone) ends the command.
    let write = |text: String| match text.as_str() {
        "" => Ok(()),
        t => crate::out::now(t.as_bytes()),
    };
    let mut buf = vec![0u8; CHUNK];
    loop {
        // What is there now, a chunk at a time.
        loop {
            let n = log.read_some(&mut buf);
            if n == 0 {
                break;
            }
            write(shown.text(&buf[..n], false))?;
        }
        let Some(w) = &watch else {
            // The end: a last line without its newline too.
            return write(shown.text(&[], true));
        };
        if log.removed {
            // With its team (`delete` marks the team, then removes its directory), or with
            // its team file alone (a leftover): an error, as `log -f` ends.
            let marked = store.load().is_ok_and(|c| c.deleting.is_some());
            if marked || !store.exists() {
                return Err(w.why_gone(&ctx.home, store.team(), marked, "`log --worker -f`"));
            }
            crate::errln!("teamctl: {name}'s log was removed");
            return Ok(());
        }
        w.wait();
        if w.stopped() {
            return Ok(());
        }
        w.check_reader()?;
        log.refresh();
    }
}

/// A log file read as it grows: its bytes past what was read, from the start again when it
/// was replaced or cut shorter.
struct LogFile {
    path: std::path::PathBuf,
    file: Option<(std::fs::File, u64)>,
    pos: u64,
    removed: bool,
}

impl LogFile {
    fn new(path: std::path::PathBuf) -> LogFile {
        LogFile {
            path,
            file: None,
            pos: 0,
            removed: false,
        }
    }

    /// Whether the file was there at some read.
    fn seen(&self) -> bool {
        self.file.is_some() || self.removed
    }

    /// Looks at the file again: opened anew (read from its start) when it first appears, was
    /// replaced or was cut shorter than what was read; its removal noted.
    fn refresh(&mut self) {
        use std::os::unix::fs::MetadataExt;
        let Ok(now) = std::fs::symlink_metadata(&self.path) else {
            self.removed |= self.file.take().is_some();
            return;
        };
        if self
            .file
            .as_ref()
            .is_some_and(|(_, ino)| *ino != now.ino() || now.len() < self.pos)
        {
            // Replaced or cut: from its start.
            self.file = None;
        }
        if self.file.is_none() {
            let Ok(f) = crate::store::fsutil::open_read(&self.path) else {
                return;
            };
            let ino = f.metadata().map_or(0, |m| m.ino());
            self.file = Some((f, ino));
            self.pos = 0;
        }
    }

    /// Up to `buf.len()` bytes past what was read into `buf`: how many (0: no more now).
    fn read_some(&mut self, buf: &mut [u8]) -> usize {
        use std::os::unix::fs::FileExt;
        let Some((f, _)) = &self.file else {
            return 0;
        };
        let n = loop {
            match f.read_at(buf, self.pos) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                r => break r.unwrap_or(0),
            }
        };
        self.pos += n as u64;
        n
    }

    /// Read on from the start of the file's last `n` lines as it is now.
    fn start_at_last_lines(&mut self, n: usize) {
        if let Some((f, _)) = &self.file {
            self.pos = last_lines_start(f, n);
        }
    }
}

/// Where the last `n` lines of `f` start (a line ends at `\n`, the last one perhaps not),
/// found by reading back from its end a chunk at a time; 0 when it has no more lines.
fn last_lines_start(f: &std::fs::File, n: usize) -> u64 {
    use std::os::unix::fs::FileExt;
    let Ok(len) = f.metadata().map(|m| m.len()) else {
        return 0;
    };
    if n == 0 {
        return len;
    }
    let mut buf = vec![0u8; CHUNK];
    let mut end = len;
    let mut ends = 0usize;
    while end > 0 {
        let start = end.saturating_sub(CHUNK as u64);
        let part = &mut buf[..usize::try_from(end - start).unwrap_or(CHUNK)];
        if f.read_exact_at(part, start).is_err() {
            return 0; // cut meanwhile: all of what is left
        }
        for (i, b) in part.iter().enumerate().rev() {
            let at = start + i as u64;
            // The newline ending the file ends the last line, it starts none.
            if *b == b'\n' && at + 1 < len {
                ends += 1;
                if ends == n {
                    return at + 1;
                }
            }
        }
        end = start;
    }
    0
}

/// A log's bytes as they are printed: as the pane shows them (escapes as text, `sink::shown`),
/// or with `--json` each line as a JSON string (a line without its end yet waits for it).
struct Shown {
    json: bool,
    carry: Vec<u8>,
    /// What was printed so far ends its line (or nothing was): the end of a log whose last
    /// line has no newline yet gets one, so the shell's prompt or what a pipe prints next
    /// starts a line of its own (new-user QA 42: `stand upno unread messages`).
    ends_line: bool,
}

impl Shown {
    fn new(json: bool) -> Shown {
        Shown {
            json,
            carry: Vec::new(),
            ends_line: true,
        }
    }

    fn text(&mut self, bytes: &[u8], last: bool) -> String {
        if !self.json {
            let mut out = crate::worker::sink::shown(&mut self.carry, bytes);
            if !out.is_empty() {
                self.ends_line = out.ends_with('\n');
            }
            if last && !self.ends_line {
                out.push('\n');
                self.ends_line = true;
            }
            return out;
        }
        self.carry.extend_from_slice(bytes);
        let whole = match self.carry.iter().rposition(|b| *b == b'\n') {
            Some(end) => self.carry.drain(..=end).collect(),
            None => Vec::new(),
        };
        let mut out = String::new();
        let rest = if last {
            std::mem::take(&mut self.carry)
        } else {
            Vec::new()
        };
        let mut lines: Vec<&[u8]> = whole.split(|b| *b == b'\n').collect();
        lines.pop(); // after the last newline: nothing
        if !rest.is_empty() {
            lines.push(&rest);
        }
        for line in lines {
            out.push_str(
                &serde_json::to_string(&String::from_utf8_lossy(line)).unwrap_or_default(),
            );
            out.push('\n');
        }
        out
    }
}

fn line(ctx: &Ctx, config: &TeamConfig, env: &Envelope) -> String {
    if ctx.json {
        serde_json::to_string(env).unwrap_or_default()
    } else {
        ctx.paint.message(config, env)
    }
}

/// Print what is there, then every new message as it arrives, until Ctrl-C (or the team is
/// deleted: an error).
fn follow(ctx: &Ctx, store: &SharedStore, args: &LogArgs) -> Result<()> {
    // Armed before the first read: nothing written afterwards is missed.
    let mut watch = TeamWatch::new(store, Inboxes::Every)?;
    let mut tail = store.follow_inboxes(watch.bell())?;
    let mut follower = Follower::default();
    let mut first = true;
    loop {
        let Some(config) = watch.load()? else {
            return Err(watch.why_gone(&ctx.home, "`log -f`"));
        };
        watch.follow_members(&config)?;
        let batch = if first {
            follower.poll(&**store, &config)?
        } else {
            follower.poll_tail(&mut *tail, &config)?
        };
        let mut shown: Vec<&Envelope> = batch.iter().filter(|e| matches(args, e)).collect();
        if first {
            shown.drain(..last_n(shown.len(), args.lines));
        }
        let mut text = String::new();
        for env in shown {
            text.push_str(&line(ctx, &config, env));
            text.push('\n');
        }
        if first {
            follower.bound(RECENT_IDS);
            first = false;
        }
        if !text.is_empty() {
            // A write error (a full disk, a reader gone) ends the follow.
            crate::out::now(text.as_bytes())?;
        }
        watch.wait(None);
        if watch.stopped() {
            return Ok(());
        }
        watch.check_reader()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Body;
    use crate::store::Home;

    #[test]
    fn follower_reads_each_message_once_and_only_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        store
            .update(&mut |cfg| {
                let mut m = cfg.members[0].clone();
                m.name = Name::parse("bob").unwrap();
                cfg.members.push(m);
                Ok(())
            })
            .unwrap();
        let config = store.load().unwrap();
        let bob = Name::parse("bob").unwrap();
        let lead = Name::leader();
        // A broadcast: the same envelope in two inboxes.
        let b = Envelope::new("team-lead", "*", Body::message("all", None));
        store.append(&bob, &b).unwrap();
        store.append(&lead, &b).unwrap();
        let mut f = Follower::default();
        assert_eq!(f.poll(&*store, &config).unwrap().len(), 1);
        f.bound(2);
        assert!(f.poll(&*store, &config).unwrap().is_empty());
        let m = Envelope::new("bob", "team-lead", Body::message("hi", None));
        store.append(&lead, &m).unwrap();
        let got = f.poll(&*store, &config).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].id, m.id);
    }

    /// `log -f` runs for as long as the user likes: the ids it keeps (to show a broadcast's
    /// copies once) stay within the bound whatever the number of messages (issue 12 item 7).
    #[test]
    fn a_bounded_follower_keeps_at_most_its_bound_of_ids() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let config = store.load().unwrap();
        let lead = Name::leader();
        let mut f = Follower::default();
        f.bound(3);
        for i in 0..20 {
            let m = Envelope::new(
                "team-lead",
                "team-lead",
                Body::message(format!("{i}"), None),
            );
            store.append(&lead, &m).unwrap();
            let got = f.poll(&*store, &config).unwrap();
            assert_eq!(got.len(), 1, "message {i}");
            assert_eq!(got[0].id, m.id);
            assert!(
                f.seen.len() <= 3 && f.order.len() <= 3,
                "{} ids kept",
                f.seen.len()
            );
        }
    }

    #[test]
    fn a_worker_log_in_json_is_one_string_per_line_a_partial_one_when_it_ends() {
        let mut s = Shown::new(true);
        assert_eq!(s.text(b"one\ntw", false), "\"one\"\n");
        assert_eq!(s.text(b"o\x1b\nthr", false), "\"two\\u001b\"\n");
        assert_eq!(s.text(b"ee", true), "\"three\"\n");
        assert_eq!(s.text(b"", true), "");
        let mut t = Shown::new(false);
        assert_eq!(t.text(b"a\x1b[2Jb\nc", false), "a\\u{1b}[2Jb\nc");
        // The end of a log whose last line has no newline: one is added (only then).
        assert_eq!(t.text(b"", true), "\n");
        let mut u = Shown::new(false);
        assert_eq!(u.text(b"done\n", false), "done\n");
        assert_eq!(u.text(b"", true), "");
        assert_eq!(Shown::new(false).text(b"", true), "");
    }

    /// A worker's log is read a chunk at a time: a boundary anywhere (inside a UTF-8
    /// character, an escape sequence, a line) gives the text one read of it gives.
    #[test]
    fn chunk_boundaries_anywhere_give_the_text_of_one_read() {
        let bytes = "a\x1b[31mé日本\n\x1b]0;t\x07🦀 z\x1b[0m\n\u{9b}2Jend".as_bytes();
        for json in [false, true] {
            let whole = Shown::new(json).text(bytes, true);
            assert!(whole.contains("日本") && whole.contains("🦀"), "{whole}");
            for size in 1..=bytes.len() {
                let mut shown = Shown::new(json);
                let mut text = String::new();
                for chunk in bytes.chunks(size) {
                    text.push_str(&shown.text(chunk, false));
                }
                text.push_str(&shown.text(&[], true));
                assert_eq!(text, whole, "json {json}, chunks of {size}");
            }
        }
    }

    #[test]
    fn the_last_lines_start_where_tail_would_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let start = |text: &str, n: usize| {
            std::fs::write(&path, text).unwrap();
            let f = std::fs::File::open(&path).unwrap();
            text[usize::try_from(last_lines_start(&f, n)).unwrap()..].to_string()
        };
        assert_eq!(start("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(start("a\nb\nc", 1), "c");
        assert_eq!(start("a\nb\nc", 2), "b\nc");
        assert_eq!(start("a\nb\n", 5), "a\nb\n");
        assert_eq!(start("a\nb\n", 0), "");
        assert_eq!(start("\n\n", 1), "\n");
        assert_eq!(start("", 3), "");
        // Across chunks: the start is found reading back over more than one.
        let long: String = (0..30_000).map(|i| format!("{i}\n")).collect();
        assert_eq!(start(&long, 3), "29997\n29998\n29999\n");
        assert_eq!(
            start(&long, 20_000),
            long[long.find("\n10000\n").unwrap() + 1..]
        );
    }

    #[test]
    fn messages_of_one_millisecond_keep_their_order_in_the_inbox() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        let store = home
            .create(&Name::parse("t").unwrap(), "", dir.path())
            .unwrap();
        let config = store.load().unwrap();
        let lead = Name::leader();
        // Ids whose random part sorts against the order they were written in.
        let mut written = Vec::new();
        for (i, id) in ["0000-c", "0000-b", "0000-a"].iter().enumerate() {
            let mut e = Envelope::new(
                "team-lead",
                "team-lead",
                Body::message(format!("{i}"), None),
            );
            e.id = id.to_string();
            e.timestamp = "2026-01-01T00:00:00.000Z".into();
            store.append(&lead, &e).unwrap();
            written.push(e.id);
        }
        let got: Vec<String> = Follower::default()
            .poll(&*store, &config)
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(got, written);
    }
}
