//! Where a worker's turn output goes: the teammate's log file (as the agent wrote it, at most
//! `bounded::TURN_LOG` bytes a turn), and the pane (the worker's stdout) when stdout is not
//! that same log file, through `output::printable`: an agent's escape sequences would retitle or
//! clear the pane.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub struct Sink {
    log: Option<File>,
    to_stdout: bool,
    /// The start of a UTF-8 character whose rest has not been written yet (pane only).
    carry: Vec<u8>,
    /// Output bytes offered since the turn began (`begin_turn`), and the cap on those logged.
    logged: u64,
    cap: u64,
    /// The log's last byte ended a line (a note starts on a line of its own).
    at_line_start: bool,
    /// The same for the pane (new-user QA 37: a turn's output without a final newline ran
    /// into the next note, `hi[2026-...] <- team-lead: hi`).
    pane_at_line_start: bool,
}

impl Sink {
    pub fn open(log_path: &Path) -> Sink {
        // Through the team directory opened from the home (`store::teamdir`): never a log
        // behind a link swapped in for the team's directories.
        let log = crate::store::teamdir::open_append(log_path).ok();
        let to_stdout = !stdout_is(log_path);
        Sink {
            log,
            to_stdout,
            carry: Vec::new(),
            logged: 0,
            cap: crate::domain::bounded::TURN_LOG,
            at_line_start: true,
            pane_at_line_start: true,
        }
    }

    /// The log at `log_path` is not the file this sink writes: it was removed, or a file put
    /// in its place (`doctor --fix` removing a FIFO or link found there, the user by hand), or
    /// the sink had none (something not a file was there when it opened). Then the sink
    /// writes to the file there (made anew when missing) and says what it found; `None` when
    /// it is the same file, or when something not a file is still there (`doctor` reports
    /// that: nothing can be logged until it is moved away).
    pub fn follow(&mut self, log_path: &Path) -> Option<&'static str> {
        let what = self.strayed(log_path)?;
        self.log = Some(crate::store::teamdir::open_append(log_path).ok()?);
        self.at_line_start = true;
        Some(what)
    }

    /// What `follow` would find at `log_path` (`None`: nothing to follow), changing nothing.
    pub fn strayed(&self, log_path: &Path) -> Option<&'static str> {
        // A file with other names too (a hard link to a file elsewhere) is not followed, as a
        // FIFO or link is not: its notes would land in that other file (attacker QA).
        let at = match std::fs::symlink_metadata(log_path) {
            Ok(m) if m.is_file() && m.nlink() == 1 => Some(m),
            Ok(_) => return None,
            Err(_) => None,
        };
        let had = self.log.as_ref().and_then(|f| f.metadata().ok());
        match (&at, &had) {
            (Some(at), Some(had)) if at.dev() == had.dev() && at.ino() == had.ino() => None,
            (None, _) => Some("removed"),
            (Some(_), Some(_)) => Some("replaced"),
            (Some(_), None) => Some("put back"),
        }
    }

    /// A turn begins: its output is logged afresh, up to the cap.
    pub fn begin_turn(&mut self) {
        self.logged = 0;
    }

    /// Raw turn output: logged up to the turn's cap (then, once, a line saying the rest is
    /// not), always shown.
    pub fn output(&mut self, bytes: &[u8]) {
        let before = self.logged;
        self.logged = before.saturating_add(bytes.len() as u64);
        let room = usize::try_from(self.cap.saturating_sub(before)).unwrap_or(usize::MAX);
        let logged = &bytes[..bytes.len().min(room)];
        self.log_bytes(logged);
        if self.logged > self.cap && before <= self.cap {
            let line = format!(
                "[teamctl: this turn's output past {} MiB is shown in the pane, not logged]\n",
                self.cap / (1024 * 1024)
            );
            self.log_line(&line);
        }
        self.show(bytes);
    }

    fn log_bytes(&mut self, bytes: &[u8]) {
        if let (Some(f), Some(last)) = (&mut self.log, bytes.last()) {
            let _ = f.write_all(bytes);
            self.at_line_start = *last == b'\n';
        }
    }

    /// `line` (ending in a newline) on a line of its own in the log.
    fn log_line(&mut self, line: &str) {
        if !self.at_line_start {
            self.log_bytes(b"\n");
        }
        self.log_bytes(line.as_bytes());
    }

    /// `bytes` in the pane, through `printable`.
    fn show(&mut self, bytes: &[u8]) {
        if let Some(last) = bytes.last() {
            self.pane_at_line_start = *last == b'\n';
        }
        if self.to_stdout {
            let shown = shown(&mut self.carry, bytes);
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(shown.as_bytes());
            let _ = out.flush();
        }
    }

    /// Why the worker ends (`error: ...; exiting`), which `main` also prints on stderr: kept
    /// in the log, never shown in the pane by this sink (the pane had it twice, once from
    /// here and once from stderr: new-user QA), and not logged when stderr is the log itself
    /// (a detached worker's), which has it from `main` then.
    pub fn note_exit(&mut self, line: &str) {
        if let Some(log) = &self.log
            && log.metadata().is_ok_and(|m| fd_is(2, &m))
        {
            return;
        }
        let stamped = format!("[{}] {line}\n", crate::domain::time::now_rfc3339());
        self.log_line(&stamped);
    }

    /// A line for the teammate's log at `log_path` from outside its worker (the leader's
    /// `resume --skip-turn`, while no worker runs): logged only, stamped, on a line of its
    /// own (after a dead worker's output cut mid-line too).
    pub fn note_from_outside(log_path: &Path, line: &str) {
        let mut sink = Sink::open(log_path);
        sink.to_stdout = false;
        sink.at_line_start = ends_a_line(log_path);
        sink.note(line);
    }

    /// A line of the worker's own narration: always logged, on a line of its own.
    pub fn note(&mut self, line: &str) {
        let stamped = format!("[{}] {line}\n", crate::domain::time::now_rfc3339());
        self.log_line(&stamped);
        if !self.pane_at_line_start {
            self.show(b"\n");
        }
        self.show(stamped.as_bytes());
    }
}

/// Whether the file at `log_path` is empty or ends in a newline (never through a link; what
/// cannot be read counts as ending one).
fn ends_a_line(log_path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(log_path)
    else {
        return true;
    };
    let mut last = [b'\n'];
    if f.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) && f.seek(SeekFrom::End(-1)).is_ok() {
        let _ = f.read(&mut last);
    }
    last[0] == b'\n'
}

/// `bytes` (after what `carry` kept) as the pane may show them: control characters escaped
/// (`output::printable`), bytes that are not UTF-8 as U+FFFD; an incomplete character at the
/// end is kept in `carry` for the next write, so a character split across writes stays whole.
/// Also how `log --worker` shows a log file.
pub fn shown(carry: &mut Vec<u8>, bytes: &[u8]) -> String {
    carry.extend_from_slice(bytes);
    let mut out = String::new();
    loop {
        match std::str::from_utf8(carry) {
            Ok(s) => {
                out.push_str(&crate::output::printable(s));
                carry.clear();
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                let head = std::str::from_utf8(&carry[..valid]).unwrap_or_default();
                out.push_str(&crate::output::printable(head));
                match e.error_len() {
                    Some(bad) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        carry.drain(..valid + bad);
                    }
                    None => {
                        carry.drain(..valid);
                        return out;
                    }
                }
            }
        }
    }
}

fn stdout_is(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| fd_is(1, &m))
}

/// Whether the descriptor `fd` of this process is the file whose metadata is `target`.
fn fd_is(fd: i32, target: &std::fs::Metadata) -> bool {
    std::fs::metadata(format!("/proc/self/fd/{fd}"))
        .is_ok_and(|out| out.dev() == target.dev() && out.ino() == target.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_logs_at_most_its_cap_then_says_so_and_notes_are_always_logged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut sink = Sink::open(&path);
        sink.to_stdout = false;
        sink.cap = 1024 * 1024;
        let size = || std::fs::metadata(&path).unwrap().len();
        sink.begin_turn();
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..48 {
            sink.output(&chunk);
        }
        let after_first = size();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.bytes().filter(|b| *b == b'x').count(), 1024 * 1024);
        assert!(
            text.ends_with(
                "[teamctl: this turn's output past 1 MiB is shown in the pane, not logged]\n"
            ),
            "{}",
            &text[text.len() - 100..]
        );
        sink.output(b"more");
        assert_eq!(size(), after_first, "nothing more logged in this turn");
        // Exactly the cap, nothing dropped: no marker; a note after text with no newline
        // starts on a line of its own.
        sink.begin_turn();
        let at = size();
        for _ in 0..16 {
            sink.output(&chunk);
        }
        assert_eq!(size(), at + 1024 * 1024, "exactly the cap, no marker");
        sink.begin_turn();
        sink.output(b"no newline here");
        sink.note("the next line");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("no newline here\n["),
            "{}",
            &text[text.len() - 80..]
        );
        sink.note("a note");
        assert!(size() > after_first, "a note is logged past the cap");
        sink.begin_turn();
        sink.output(b"next turn\n");
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("next turn\n")
        );
    }

    #[test]
    fn the_pane_gets_escapes_as_text_and_split_characters_whole() {
        let mut carry = Vec::new();
        assert_eq!(
            shown(&mut carry, b"\x1b]2;PWNED\x07\x1b[2J hi\n"),
            "\\u{1b}]2;PWNED\\u{7}\\u{1b}[2J hi\n"
        );
        // "é" (C3 A9) and a one-character CSI U+009B (C2 9B) split across writes.
        assert_eq!(shown(&mut carry, b"caf\xc3"), "caf");
        assert_eq!(shown(&mut carry, b"\xa9 \xc2"), "\u{e9} ");
        assert_eq!(shown(&mut carry, b"\x9b2J"), "\\u{9b}2J");
        assert_eq!(shown(&mut carry, b"a\xffb"), "a\u{fffd}b");
        assert!(carry.is_empty());
    }
}
