//! On a store that hosts share, what a member runs (`domain::Spec`: its command, agent and
//! arguments, shutdown and plan commands, working directory) comes from this host's own copy,
//! `specs/NAME.json` (0600) in the team's local directory, written when this host was told to
//! run it (`spawn`, `up`, `resume --here`). Never from the shared team file alone: anyone who
//! can write to the server could otherwise make every host that starts a member run a command
//! of their choosing. The file store needs none of this (its team file is the user's own).

use std::path::PathBuf;

use crate::domain::{Member, Name, Spec};
use crate::error::{Error, IoContext, Result};
use crate::store::Store;
use crate::store::fsutil::{self, ensure_dir_levels, write_atomic};

/// Where `name`'s spec is kept on this host.
pub fn path(store: &dyn Store, name: &Name) -> PathBuf {
    store.local_dir().join("specs").join(format!("{name}.json"))
}

/// Keep `member`'s spec as this host's (a store that hosts share only).
pub fn save(store: &dyn Store, member: &Member) -> Result<()> {
    if !store.spans_hosts() {
        return Ok(());
    }
    let file = path(store, &member.name);
    let local = store.local_dir();
    ensure_dir_levels(file.parent().unwrap_or(&local), 1)?;
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::failed(format!(
            "{} is a symbolic link; teamctl never follows links inside its home: remove it",
            file.display()
        )));
    }
    let bytes = serde_json::to_vec_pretty(&Spec::of(member))
        .map_err(|e| Error::failed(format!("cannot encode {}'s spec: {e}", member.name)))?;
    write_atomic(&file, &bytes, false)
}

/// `member` as this host runs it, or `None` on a store that hosts share when this host has no
/// copy of what it runs (then nothing of it is this host's to touch: its worktree, its panes).
pub fn local_view(store: &dyn Store, member: &Member) -> Option<Member> {
    let mut m = member.clone();
    overlay(store, &mut m).ok().map(|()| m)
}

/// `member` as this host runs it: its record with this host's spec in place (a store that
/// hosts share only; otherwise the record as it is). Without one, an error that says how to
/// give it: this host was never told to run this member.
pub fn overlay(store: &dyn Store, member: &mut Member) -> Result<()> {
    if !store.spans_hosts() {
        return Ok(());
    }
    let file = path(store, &member.name);
    let bytes = match fsutil::read(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::failed(format!(
                "{} was not spawned on this host, so what it runs comes only from the shared team file, which this host does not run on its word; `teamctl spawn {}` here (or `teamctl resume {} --here`, which shows what it will run) makes it this host's",
                member.name, member.name, member.name
            )));
        }
        read => read.at(&file)?,
    };
    let spec: Spec = serde_json::from_slice(&bytes).map_err(|e| {
        Error::failed(format!(
            "{} is damaged ({e}); spawn the member again",
            file.display()
        ))
    })?;
    spec.apply(member);
    Ok(())
}

/// The tmux servers this host placed the team's members on, as its own copies record them
/// (`local` is the team's local directory): what a home that leaves the team, or finds it
/// deleted, has left to clean up with.
pub fn tmux_sockets(local: &std::path::Path) -> Vec<Option<String>> {
    let Ok(dir) = std::fs::read_dir(local.join("specs")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| fsutil::read(&e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<Spec>(&bytes).ok())
        .filter(|s| s.backend_type == Some(crate::domain::BackendType::Tmux))
        .map(|s| s.tmux_socket)
        .collect()
}
