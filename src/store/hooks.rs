//! An interactive teammate's files under the team directory (`interactive/`): the hook events
//! its agent reported (`NAME.events`, JSON lines appended by `teamctl hook` under a lock and
//! taken, then emptied, by the companion) and the settings file that installs those hooks
//! (`NAME.settings.json`, 0600), and the hop count of the last message its companion delivered
//! (`NAME.hops`, the loop guard of a send from the pane after that turn ended). The user's own
//! settings files are never touched. Recording an
//! event rings the teammate's hook doorbells (`bells/hooks-NAME`): its companion's wake past the
//! inotify instance limit.

use std::io::{Read, Seek, Write};
use std::path::PathBuf;

use crate::domain::Name;
use crate::domain::interactive::{HOOK_EVENTS, HookEvent};
use crate::error::{Error, IoContext, Result};
use crate::store::Store;
use crate::store::fsutil::{
    LockGuard, check_dir, ensure_dir_levels, open_append, open_or_create, write_atomic,
};

/// The most event bytes read at once: older events beyond it are dropped (the newest count).
const MAX_EVENTS_BYTES: u64 = 4 * 1024 * 1024;

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
    let mut line = serde_json::to_vec(event)
        .map_err(|e| Error::failed(format!("cannot encode a hook event: {e}")))?;
    line.push(b'\n');
    let _lock = LockGuard::acquire(&lock_path(store, name))?;
    let path = d.join(events_file(name));
    let mut f = open_append(&path)?;
    f.write_all(&line).at(&path)?;
    // The bells sit beside the events file, in this host's directory of the team.
    super::doorbell::ring_topic(&store.local_dir(), &super::Topic::Hooks(name.clone()));
    Ok(())
}

/// Every event recorded since the last take, oldest first; the file is emptied.
pub fn take(store: &dyn Store, name: &Name) -> Result<Vec<HookEvent>> {
    let d = dir(store);
    // Never through a link: the directory is checked, the file opened with `O_NOFOLLOW`
    // (emptying it through a planted link would empty the file it points at).
    check_dir(&d)?;
    let path = d.join(events_file(name));
    if std::fs::symlink_metadata(&path).map_or(0, |m| m.len()) == 0 {
        return Ok(Vec::new());
    }
    let _lock = LockGuard::acquire(&lock_path(store, name))?;
    let mut f =
        open_or_create(&path, std::fs::OpenOptions::new().read(true).write(true)).at(&path)?;
    let len = f.metadata().at(&path)?.len();
    let skip = len.saturating_sub(MAX_EVENTS_BYTES);
    f.seek(std::io::SeekFrom::Start(skip)).at(&path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).at(&path)?;
    f.set_len(0).at(&path)?;
    Ok(bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect())
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

/// The hops of the last message delivered into `name`'s pane, if one was.
pub fn last_hops(store: &dyn Store, name: &Name) -> Option<u32> {
    let text = super::fsutil::read_to_string(&hops_path(store, name)).ok()?;
    text.trim().parse().ok()
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
            shell_quote(&program.display().to_string())
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

/// One word for `sh`: single-quoted, `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
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
