//! The environment a teammate runs with (`env/NAME` in the team directory, 0600): the
//! leader's environment, recorded when it spawns (or, outside any turn, resumes) the
//! teammate, as NUL-separated `KEY=VALUE` records. A worker started by a tmux server would
//! otherwise get the server's environment, not the shell's that spawned it. Values never go on
//! a command line (argv is world-readable) nor through a shell; the file is written
//! atomically, never through a symbolic link, and never recreates a deleted team directory.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::domain::Name;
use crate::error::{Error, IoContext, Result};
use crate::store::Store;
use crate::store::fsutil;

/// One variable: name and value.
pub type Var = (OsString, OsString);

/// Variables never recorded: teamctl's identity and turn variables (and its home), which the
/// worker sets itself, and the tmux client's, which belong to the pane the worker runs in.
fn recordable(key: &OsStr) -> bool {
    let k = key.as_bytes();
    !(crate::domain::env::not_inherited().any(|v| v.as_bytes() == k)
        || k == crate::domain::env::HOME.as_bytes()
        || k == b"TMUX"
        || k == b"TMUX_PANE")
}

/// Variables the process that adopts a recorded environment keeps from its own: teamctl's
/// (its identity, set by whoever started it) and those of the tmux pane it runs in.
pub fn kept_from_own(key: &OsStr) -> bool {
    let k = key.as_bytes();
    k.starts_with(b"TEAMCTL_")
        || matches!(
            k,
            b"TMUX" | b"TMUX_PANE" | b"TERM" | b"TERM_PROGRAM" | b"TERM_PROGRAM_VERSION"
        )
}

/// Where `name`'s environment is recorded.
pub fn path(store: &dyn Store, name: &Name) -> PathBuf {
    store.local_dir().join("env").join(name.as_str())
}

/// Record `vars` (this process's environment, normally) for `name`, without the variables
/// that are not recordable. A symbolic link at the file's path is refused.
pub fn record(store: &dyn Store, name: &Name, vars: impl Iterator<Item = Var>) -> Result<()> {
    let file = path(store, name);
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::failed(format!(
            "{} is a symbolic link; teamctl never follows links inside its home: remove it",
            file.display()
        )));
    }
    // Through the team directory opened from the home (`teamdir`): a link swapped in for
    // `teams` or the team directory never takes the leader's environment out of the home.
    crate::store::teamdir::write_atomic(
        &file,
        &encode(vars.filter(|(k, _)| recordable(k))),
        fsutil::Sync::None,
    )
}

/// The environment recorded at `file`, or `None` when there is none (a teammate spawned by an
/// older teamctl). Read never through a symbolic link.
pub fn load(file: &Path) -> Result<Option<Vec<Var>>> {
    match fsutil::read(file) {
        Ok(bytes) => Ok(Some(decode(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).at(file),
    }
}

/// The environment a process started with `own` should run with: `recorded`, with what it
/// keeps of its own (`kept_from_own`) in place of the recorded values.
pub fn merged(recorded: Vec<Var>, own: impl Iterator<Item = Var>) -> Vec<Var> {
    let kept: Vec<Var> = own.filter(|(k, _)| kept_from_own(k)).collect();
    let mut vars: Vec<Var> = recorded
        .into_iter()
        .filter(|(k, _)| !kept.iter().any(|(o, _)| o == k))
        .collect();
    vars.extend(kept);
    vars
}

fn encode(vars: impl Iterator<Item = Var>) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in vars {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

fn decode(bytes: &[u8]) -> Vec<Var> {
    bytes
        .split(|b| *b == 0)
        .filter_map(|rec| {
            let eq = rec.iter().position(|b| *b == b'=')?;
            (eq > 0).then(|| {
                (
                    OsString::from_vec(rec[..eq].to_vec()),
                    OsString::from_vec(rec[eq + 1..].to_vec()),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(k: &str, v: &str) -> Var {
        (k.into(), v.into())
    }

    #[test]
    fn records_round_trip_without_identity_or_tmux_variables() {
        let vars = vec![
            var("FOO", "a=b\nc"),
            var("EMPTY", ""),
            var("TEAMCTL_AGENT_ID", "x@y"),
            var("TEAMCTL_MESSAGE", "hi"),
            var("TEAMCTL_HOME", "/h"),
            var("TMUX", "/tmp/s,1,0"),
            var("TMUX_PANE", "%1"),
        ];
        let bytes = encode(vars.into_iter().filter(|(k, _)| recordable(k)));
        assert_eq!(decode(&bytes), vec![var("FOO", "a=b\nc"), var("EMPTY", "")]);
    }

    #[test]
    fn own_teamctl_and_pane_variables_win_over_recorded_ones() {
        let got = merged(
            vec![
                var("FOO", "bar"),
                var("TERM", "xterm"),
                var("PATH", "/u"),
                var("TERM_PROGRAM", "x"),
            ],
            vec![
                var("FOO", "server"),
                var("TERM", "tmux-256color"),
                var("TEAMCTL_AGENT_ID", "a@t"),
                var("TMUX_PANE", "%3"),
            ]
            .into_iter(),
        );
        assert_eq!(
            got,
            vec![
                var("FOO", "bar"),
                var("PATH", "/u"),
                var("TERM_PROGRAM", "x"),
                var("TERM", "tmux-256color"),
                var("TEAMCTL_AGENT_ID", "a@t"),
                var("TMUX_PANE", "%3"),
            ]
        );
    }
}
