//! An interactive teammate's files under the team directory (`interactive/`): the hook events
//! its agent reported (`NAME.events`, JSON lines appended by `teamctl hook` under a lock and
//! taken, then emptied, by the companion) and the settings file that installs those hooks
//! (`NAME.settings.json`, 0600), and the hop count of the last message its companion delivered
//! (`NAME.hops`, the loop guard of a send from the pane after that turn ended). The user's own
//! settings files are never touched. Recording an
//! event rings the teammate's hook doorbells (`bells/hooks-NAME`): its companion's wake past the
//! inotify instance limit. Every read here is bounded, as an inbox's is: an event line is at
//! most `inbox::MAX_LINE` (a longer one is read past, never held), a take reads at most the
//! file's last `MAX_EVENTS_SCAN` bytes, and anything but a regular file is refused, never
//! opened (a FIFO, a link to `/dev/zero`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read, Seek, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::domain::Name;
use crate::domain::interactive::{HOOK_EVENTS, HookEvent};
use crate::error::{Error, IoContext, Result};
use crate::store::Store;
use crate::store::fsutil::{
    LockGuard, check_dir, check_file, ensure_dir_levels, open_append, open_or_create, write_atomic,
};
use crate::store::inbox::{Line, MAX_LINE, next_line};

/// The most of the events file a take reads, from its end: events before it are dropped (the
/// newest count). A file of gigabytes, or one line without a newline, costs this much reading
/// and no more.
const MAX_EVENTS_SCAN: u64 = 16 * 1024 * 1024;
/// The most event bytes a take keeps (the newest count).
const MAX_EVENTS_BYTES: u64 = 4 * 1024 * 1024;
/// The most of the hops file read: a number (a longer file is not one teamctl wrote).
const MAX_HOPS_BYTES: u64 = 32;

/// The directory of interactive teammates' files.
pub fn dir(store: &dyn Store) -> PathBuf {
    store.local_dir().join("interactive")
}

/// The events file's name in `dir` (the companion watches it).
pub fn events_file(name: &Name) -> String {
    format!("{name}.events")
}

fn lock_path(store: &dyn Store, name: &Name) -> PathBuf {
    dir(store).join(format!("{name}.events.lock"))
}

/// Record one event (the `teamctl hook` side).
pub fn append(store: &dyn Store, name: &Name, event: &HookEvent) -> Result<()> {
    let d = dir(store);
    // `interactive/` only, never the team directory above it; a link there is refused.
    ensure_dir_levels(&d, 1)?;
    let line = encode(event)?;
    let _lock = LockGuard::acquire(&lock_path(store, name))?;
    let path = d.join(events_file(name));
    let mut f = open_append(&path)?;
    f.write_all(&line).at(&path)?;
    // The bells sit beside the events file, in this host's directory of the team.
    super::doorbell::ring_topic(&store.local_dir(), &super::Topic::Hooks(name.clone()));
    Ok(())
}

/// One event as its line (newline included), at most `MAX_LINE` bytes: the text of one that
/// would be longer (a reply of 1 MiB whose characters JSON escapes: quotes, backslashes,
/// controls) is cut to the most that fits, so that the reader, which holds no longer line,
/// takes it.
fn encode(event: &HookEvent) -> Result<Vec<u8>> {
    let line = |e: &HookEvent| {
        let mut line = serde_json::to_vec(e)
            .map_err(|e| Error::failed(format!("cannot encode a hook event: {e}")))?;
        line.push(b'\n');
        Ok::<_, Error>(line)
    };
    let bytes = line(event)?;
    if bytes.len() as u64 <= MAX_LINE {
        return Ok(bytes);
    }
    let too_long = |len: usize| {
        Error::failed(format!(
            "a hook event of {len} bytes, longer than any can be ({MAX_LINE} bytes)"
        ))
    };
    let mut cut = event.clone();
    let text = cut.text.take().ok_or_else(|| too_long(bytes.len()))?;
    cut.text = Some(String::new());
    let room = MAX_LINE.saturating_sub(line(&cut)?.len() as u64);
    let mut used = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        used += escaped_len(c);
        if used > room {
            break;
        }
        end = i + c.len_utf8();
    }
    cut.text = Some(text[..end].to_string());
    let bytes = line(&cut)?;
    if bytes.len() as u64 > MAX_LINE {
        return Err(too_long(bytes.len()));
    }
    Ok(bytes)
}

/// How many bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> u64 {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '\0'..='\u{1f}' => 6,
        c => c.len_utf8() as u64,
    }
}

/// Every event recorded since the last take, oldest first; the file is emptied. At most its
/// last `MAX_EVENTS_SCAN` bytes are read, and of the events there the newest
/// `MAX_EVENTS_BYTES`; a line longer than any event is passed over, the events around it
/// taken. Anything but a regular file there is an error, never opened.
pub fn take(store: &dyn Store, name: &Name) -> Result<Vec<HookEvent>> {
    let d = dir(store);
    // Never through a link: the directory is checked, the file opened with `O_NOFOLLOW`
    // (emptying it through a planted link would empty the file it points at).
    check_dir(&d)?;
    let path = d.join(events_file(name));
    // `lstat`: a FIFO (whose size is 0: it read as no events, its writers blocked), a device
    // or a link there is said, not read.
    check_file(&path)?;
    if std::fs::symlink_metadata(&path).map_or(0, |m| m.len()) == 0 {
        return Ok(Vec::new());
    }
    let _lock = LockGuard::acquire(&lock_path(store, name))?;
    let f = open_or_create(&path, std::fs::OpenOptions::new().read(true).write(true)).at(&path)?;
    // What is there now: whatever is appended meanwhile (by a writer that takes no lock) is
    // not read, however fast it comes.
    let len = f.metadata().at(&path)?.len();
    let events = read_events(&f, len.saturating_sub(MAX_EVENTS_SCAN), len).at(&path)?;
    // Emptied in place, unless it has other names too (a hard link to a file elsewhere,
    // attacker QA 45: emptied through it): then unlinked, the next event making a new one.
    if std::os::unix::fs::MetadataExt::nlink(&f.metadata().at(&path)?) > 1 {
        std::fs::remove_file(&path).at(&path)?;
    } else {
        f.set_len(0).at(&path)?;
    }
    Ok(events)
}

/// The events in bytes `from..len` of `f`, the newest `MAX_EVENTS_BYTES` of them. A line begun
/// before `from` is no event; nor is one longer than `MAX_LINE` (read past in pieces, never
/// held) or an unfinished last line.
fn read_events(mut f: &File, from: u64, len: u64) -> std::io::Result<Vec<HookEvent>> {
    let mut inside = from > 0 && {
        let mut before = [0u8];
        f.read_exact_at(&mut before, from - 1)?;
        before[0] != b'\n'
    };
    f.seek(std::io::SeekFrom::Start(from))?;
    let mut reader = BufReader::with_capacity(64 * 1024, f.take(len - from));
    let mut kept: VecDeque<(HookEvent, u64)> = VecDeque::new();
    let mut bytes = 0;
    let mut line = Vec::new();
    loop {
        let whole = match next_line(&mut reader, &mut line, 0)? {
            Line::Partial(_) => break,
            Line::TooLong(_) => None,
            Line::Whole(n) => Some(n),
        };
        if std::mem::replace(&mut inside, false) {
            continue;
        }
        if let Some(n) = whole
            && let Ok(event) = serde_json::from_slice(&line[..n - 1])
        {
            kept.push_back((event, n as u64));
            bytes += n as u64;
            while bytes > MAX_EVENTS_BYTES
                && let Some((_, old)) = kept.pop_front()
            {
                bytes -= old;
            }
        }
    }
    Ok(kept.into_iter().map(|(e, _)| e).collect())
}

/// Forget events left from an earlier run (a new agent starts with none).
pub fn clear(store: &dyn Store, name: &Name) {
    let _ = take(store, name);
}

fn hops_path(store: &dyn Store, name: &Name) -> PathBuf {
    dir(store).join(format!("{name}.hops"))
}

/// Record the hops of the message just delivered into `name`'s pane. A `teamctl send` from
/// the pane once that turn has ended (a timer, a background job, the user) is still its
/// consequence: it goes out at these hops + 1, so two panes that keep messaging each other
/// that way meet the loop guard too.
pub fn set_last_hops(store: &dyn Store, name: &Name, hops: u32) -> Result<()> {
    let d = dir(store);
    ensure_dir_levels(&d, 1)?;
    write_atomic(&hops_path(store, name), hops.to_string().as_bytes(), false)
}

/// The hops of the last message delivered into `name`'s pane, if one was. At most
/// `MAX_HOPS_BYTES` are read: a longer file (gigabytes read by every `send` from the pane) is
/// no number teamctl wrote.
pub fn last_hops(store: &dyn Store, name: &Name) -> Option<u32> {
    super::fsutil::read_small(&hops_path(store, name), MAX_HOPS_BYTES)?
        .trim()
        .parse()
        .ok()
}

/// Write the settings file that makes Claude Code run `teamctl hook EVENT` on each hook
/// event (`--settings FILE`), and return its path. `program` is the teamctl binary.
pub fn write_settings(
    store: &dyn Store,
    name: &Name,
    program: &std::path::Path,
) -> Result<PathBuf> {
    let d = dir(store);
    ensure_dir_levels(&d, 1)?;
    let mut hooks = serde_json::Map::new();
    for (hook, event) in HOOK_EVENTS {
        let command = format!(
            "{} hook {event}",
            crate::output::shell_quote(&program.display().to_string())
        );
        hooks.insert(
            (*hook).to_string(),
            serde_json::json!([{"hooks": [{"type": "command", "command": command}]}]),
        );
    }
    let settings = serde_json::json!({ "hooks": hooks });
    let path = d.join(format!("{name}.settings.json"));
    let bytes = serde_json::to_vec_pretty(&settings)
        .map_err(|e| Error::failed(format!("cannot encode settings: {e}")))?;
    write_atomic(&path, &bytes, false)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::Home;

    #[test]
    fn taking_events_never_empties_a_file_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let team = Name::parse("t").unwrap();
        let store = home.create(&team, "", tmp.path()).unwrap();
        let bob = Name::teammate("bob").unwrap();
        let victim = tmp.path().join("victim.txt");
        std::fs::write(&victim, b"precious data").unwrap();
        // A link at the events file.
        std::fs::create_dir_all(dir(&*store)).unwrap();
        let events = dir(&*store).join(events_file(&bob));
        std::os::unix::fs::symlink(&victim, &events).unwrap();
        assert!(take(&*store, &bob).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious data");
        // A link in place of the whole directory.
        std::fs::remove_dir_all(dir(&*store)).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join(events_file(&bob)), b"precious data").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir(&*store)).unwrap();
        assert!(take(&*store, &bob).is_err());
        assert_eq!(
            std::fs::read(elsewhere.join(events_file(&bob))).unwrap(),
            b"precious data"
        );
        assert!(!elsewhere.join(format!("{bob}.events.lock")).exists());
    }

    fn event(kind: &str, at: u64, text: Option<String>) -> HookEvent {
        HookEvent {
            event: kind.to_string(),
            at,
            text,
            turn: None,
        }
    }

    /// A team `t` in a new home under `tmp`, and its teammate bob's name.
    fn team_with_bob(tmp: &tempfile::TempDir) -> (crate::store::SharedStore, Name) {
        let home = Home::new(tmp.path().join("home"));
        let store = home
            .create(&Name::parse("t").unwrap(), "", tmp.path())
            .unwrap();
        (store, Name::teammate("bob").unwrap())
    }

    fn kinds(events: &[HookEvent]) -> Vec<(String, u64)> {
        events.iter().map(|e| (e.event.clone(), e.at)).collect()
    }

    /// A line longer than any event (here 6 MiB without a newline, more than a take kept
    /// before) is passed over and the events on both sides of it taken; of gigabytes without
    /// a newline only the file's end is read: the event after them is taken, the one before
    /// dropped (the newest count), and the file emptied.
    #[test]
    fn a_line_longer_than_any_event_is_passed_over_and_the_events_around_it_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, bob) = team_with_bob(&tmp);
        let path = dir(&*store).join(events_file(&bob));
        let long_line = |stretch: u64| {
            let f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.set_len(f.metadata().unwrap().len() + stretch).unwrap();
            (&f).write_all(b"\n").unwrap();
        };
        append(&*store, &bob, &event("user-prompt-submit", 1, None)).unwrap();
        long_line(6 * 1024 * 1024);
        append(&*store, &bob, &event("stop", 2, None)).unwrap();
        assert_eq!(
            kinds(&take(&*store, &bob).unwrap()),
            [("user-prompt-submit".into(), 1), ("stop".into(), 2)]
        );
        append(&*store, &bob, &event("user-prompt-submit", 3, None)).unwrap();
        long_line(8 << 30);
        append(&*store, &bob, &event("stop", 4, None)).unwrap();
        assert_eq!(kinds(&take(&*store, &bob).unwrap()), [("stop".into(), 4)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }

    /// A FIFO at the events file: a take says so at once (it read as no events before,
    /// recording one failing meanwhile), and recording one fails at once too.
    #[test]
    fn a_fifo_at_the_events_file_is_refused_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, bob) = team_with_bob(&tmp);
        std::fs::create_dir_all(dir(&*store)).unwrap();
        let path = dir(&*store).join(events_file(&bob));
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (s, b) = (store.clone(), bob.clone());
        std::thread::spawn(move || {
            let taken = take(&*s, &b).map_err(|e| e.to_string());
            let recorded = append(&*s, &b, &event("stop", 1, None)).map_err(|e| e.to_string());
            let _ = tx.send((taken, recorded));
        });
        let (taken, recorded) = rx
            .recv_timeout(std::time::Duration::from_mins(1))
            .expect("a take and an append with a FIFO at the events file return");
        let said = taken.unwrap_err();
        assert!(said.contains("is not a regular file"), "{said}");
        assert!(recorded.is_err());
    }

    /// A Stop whose reply JSON escapes to more than a line can hold (1 MiB of quotes: 2 MiB
    /// escaped) is recorded with its text cut to the most that fits, and taken.
    #[test]
    fn an_event_escaping_past_the_longest_line_is_cut_to_fit_and_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, bob) = team_with_bob(&tmp);
        let text = "\"".repeat(crate::domain::interactive::MAX_REPLY);
        append(&*store, &bob, &event("stop", 1, Some(text.clone()))).unwrap();
        let got = take(&*store, &bob).unwrap();
        assert_eq!(kinds(&got), [("stop".into(), 1)]);
        let cut = got[0].text.as_deref().unwrap();
        assert!(text.starts_with(cut));
        // The most that fits: one quote more would not.
        let line = encode(&got[0]).unwrap().len() as u64;
        assert!(line <= MAX_LINE && line + 2 > MAX_LINE, "{line}");
        // What escaping does not lengthen fits as it is.
        let plain = "x".repeat(crate::domain::interactive::MAX_REPLY);
        append(&*store, &bob, &event("stop", 2, Some(plain.clone()))).unwrap();
        assert_eq!(
            take(&*store, &bob).unwrap()[0].text.as_deref(),
            Some(&*plain)
        );
        // Escapes of every length: the longest fitting prefix still fits.
        let mixed = "\u{1}é\n\"x\\".repeat(crate::domain::interactive::MAX_REPLY / 8);
        append(&*store, &bob, &event("stop", 3, Some(mixed.clone()))).unwrap();
        let got = take(&*store, &bob).unwrap();
        let line = encode(&got[0]).unwrap().len() as u64;
        assert!(line <= MAX_LINE && line + 6 > MAX_LINE, "{line}");
        assert!(mixed.starts_with(got[0].text.as_deref().unwrap()));
    }

    #[test]
    fn a_hops_file_longer_than_a_number_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, bob) = team_with_bob(&tmp);
        set_last_hops(&*store, &bob, 3).unwrap();
        assert_eq!(last_hops(&*store, &bob), Some(3));
        let mut long = b"3".to_vec();
        long.resize(1024 * 1024, b' ');
        std::fs::write(hops_path(&*store, &bob), long).unwrap();
        assert_eq!(last_hops(&*store, &bob), None);
    }

    #[test]
    fn events_are_taken_once_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().to_path_buf());
        let team = Name::parse("t").unwrap();
        let store = home.create(&team, "", tmp.path()).unwrap();
        let bob = Name::teammate("bob").unwrap();
        assert!(take(&*store, &bob).unwrap().is_empty());
        for (i, e) in ["user-prompt-submit", "stop"].iter().enumerate() {
            let ev = HookEvent {
                event: e.to_string(),
                at: i as u64,
                text: None,
                turn: None,
            };
            append(&*store, &bob, &ev).unwrap();
        }
        let got: Vec<String> = take(&*store, &bob)
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect();
        assert_eq!(got, ["user-prompt-submit", "stop"]);
        assert!(take(&*store, &bob).unwrap().is_empty());
        let path = write_settings(&*store, &bob, std::path::Path::new("/x y/it's")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(r"'/x y/it'\\''s' hook stop"), "{text}");
    }
}
