//! The home directory: where teams live, which team the leader leads now, and creating or
//! finding a team. Nothing is written until a command has passed validation. A team is files
//! here (`FsStore`), or kept in a NATS server (`NatsStore`) that its directory here points to
//! (`store.json`).

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::SharedStore;
use super::fsutil::{check_dir, check_private_dir, ensure_dir, write_atomic};
use super::nats::{Created, NatsStore, ServerUrl};
use super::team::FsStore;
use crate::domain::time::now_ms;
use crate::domain::{LEADER, Member, Name, TeamConfig};
use crate::error::{Error, IoContext, Result};

/// The most of the `current` file read: far more than any team name and a newline.
const CURRENT_MAX: u64 = 1024;

/// `$TEAMCTL_HOME`.
#[derive(Debug)]
pub struct Home {
    root: PathBuf,
    /// Set by `verify_for_command` and taken by the next `open`: the home and teams-directory
    /// checks a command makes before it starts stand for its first open's, made a moment later
    /// in the same process (`send` made them twice, four system calls on every agent turn's
    /// path). Any later open checks again: a console running for hours sees a home made
    /// public meanwhile.
    verified: AtomicBool,
}

/// A copy checks for itself: what this one checked is not handed on.
impl Clone for Home {
    fn clone(&self) -> Home {
        Home::new(self.root.clone())
    }
}

impl Home {
    pub fn new(root: PathBuf) -> Home {
        Home {
            root,
            verified: AtomicBool::new(false),
        }
    }

    /// `${XDG_STATE_HOME:-$HOME/.local/state}/teamctl`; only absolute paths count (a relative
    /// `XDG_STATE_HOME` is ignored, as the XDG rules say). Without an absolute `HOME` either,
    /// an error: the home would otherwise land in the current directory, or in a shared
    /// one such as `/tmp`.
    pub fn default_root() -> Result<PathBuf> {
        let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        if let Some(state) = std::env::var_os("XDG_STATE_HOME").and_then(absolute) {
            return Ok(state.join("teamctl"));
        }
        match std::env::var_os("HOME").and_then(absolute) {
            Some(home) => Ok(home.join(".local/state/teamctl")),
            None => Err(Error::bad(
                "HOME is not set to an absolute path, so teamctl has no place for its state: set HOME, or choose the home with --home DIR (or TEAMCTL_HOME=DIR)",
            )),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Refuse a home (or its `teams` directory) that is not the caller's alone: owned by
    /// another uid, or writable by group or others (`fsutil::check_private_dir`). A home that
    /// does not exist yet passes: teamctl makes it `0700`.
    ///
    /// A home whose path is not UTF-8 is refused (bad input) before anything is written: the
    /// path goes into JSON (a shared team's host record, an interactive agent's settings),
    /// into the text of a turn's environment and prompt, and into the tags that tell this
    /// home's panes and processes apart, none of which carries such bytes unchanged. A
    /// worker's `--home` once reached it with U+FFFD in place of the byte: another directory.
    pub fn verify(&self) -> Result<()> {
        if self.root.to_str().is_none() {
            return Err(Error::bad(format!(
                "the home {} is not valid UTF-8: teamctl writes its path into JSON, into teammates' environments and prompts, and into the tags of its panes and processes, none of which can carry it unchanged; choose a home whose path is UTF-8 (--home DIR, TEAMCTL_HOME, XDG_STATE_HOME)",
                std::os::unix::ffi::OsStrExt::as_bytes(self.root.as_os_str()).escape_ascii()
            )));
        }
        check_private_dir(&self.root, "home", true)?;
        check_private_dir(&self.teams_dir(), "teams directory", false)
    }

    /// `verify`, made by a command before it starts: it stands for the home's checks of the
    /// command's first `open` (`verified`).
    pub fn verify_for_command(&self) -> Result<()> {
        self.verify()?;
        self.verified.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Refuse a team directory that is not the caller's alone or a real directory, or whose
    /// state directories are symbolic links.
    fn verify_team(&self, team: &Name) -> Result<()> {
        if !self.verified.swap(false, Ordering::Relaxed) {
            self.verify()?;
        }
        let dir = self.team_dir(team);
        check_private_dir(&dir, "team directory", false)?;
        for sub in ["inboxes", "state", "logs"] {
            check_dir(&dir.join(sub))?;
        }
        Ok(())
    }

    /// The checks `open` makes of the path down to a team (the home, `teams`, the team
    /// directory: no links but an owned home's, the caller's alone), made again by a process
    /// that keeps the team open: a worker, each round and before it writes. A link swapped in
    /// for `teams` or the team directory while it ran was followed: it armed anew, watched,
    /// answered and wrote its state there (attacker QA). The directories inside the team
    /// (`inboxes`, `state`, `logs`) are checked where they are used: a worker lives on past a
    /// link there, saying so, and takes its mail again once it is gone.
    pub fn check_team_path(&self, team: &Name) -> Result<()> {
        self.verify()?;
        check_private_dir(&self.team_dir(team), "team directory", false)
    }

    pub fn teams_dir(&self) -> PathBuf {
        self.root.join("teams")
    }

    pub fn team_dir(&self, team: &Name) -> PathBuf {
        self.teams_dir().join(team.as_str())
    }

    fn current_file(&self) -> PathBuf {
        self.root.join("current")
    }

    /// The team the leader created last, if it still exists.
    pub fn current(&self) -> Option<Name> {
        let name = self.current_named()?;
        self.exists(&name).then_some(name)
    }

    /// The team the `current` file names, whether or not it exists. Read to a name's length
    /// at most: a file grown past it names no team (attacker QA: a 1 GiB sparse file was read
    /// whole by every command run without `--team`, 3 GB of memory).
    pub fn current_named(&self) -> Option<Name> {
        let text = super::fsutil::read_small(&self.current_file(), CURRENT_MAX)?;
        Name::parse(text.trim()).ok()
    }

    /// The error for something other than a file at the current-team record (a FIFO, a
    /// directory, a link), which names no team: said as what it is (attacker QA 45: "no team
    /// selected" while `create` had selected one, and `doctor` said ok).
    fn odd_current(&self) -> Option<Error> {
        let path = self.current_file();
        let kind = super::fsutil::odd_kind(&path)?;
        let remove = if kind == "a directory" {
            "move it away by hand"
        } else {
            "remove it (`teamctl doctor --fix` does)"
        };
        Some(Error::bad(format!(
            "no team selected: {} is {kind}, not the record teamctl keeps of the team created last; {remove}, and pass --team NAME meanwhile",
            path.display()
        )))
    }

    /// Held by `create` from its "do you lead a team already?" check until the new team is
    /// the current one (`$TEAMCTL_HOME/create.lock`), by `up` and `demo` from their look for
    /// the team until it is made and recorded (`create_in` is called only with it held), by
    /// `delete` from its look at what is there until the team directory is removed and the
    /// record cleared (`Creating::forget`, `Creating::destroy`), and by `doctor --fix` around
    /// its look at the record and its write. The record is written only through the guard
    /// (`Creating::set_current`). So a team directory is never removed while a team is being
    /// made in it (which left a directory without its team file, recorded as current), and a
    /// remover's look (a leftover, or a team?) holds until its removal.
    /// Every team is made under it too (`create_in`), which tells a team directory being made
    /// from one left over (`leftover`).
    pub fn lock_create(&self) -> Result<Creating<'_>> {
        ensure_dir(&self.root)?;
        Ok(Creating {
            home: self,
            _lock: super::fsutil::LockGuard::acquire(&self.create_lock())?,
        })
    }

    /// `create`'s lock file (`lock_create`); `doctor` looks at what is there.
    pub fn create_lock(&self) -> PathBuf {
        self.root.join("create.lock")
    }

    /// Whether `team` is in this home: its team file, or the pointer to the store that
    /// keeps it. Anything at either path counts (looked at with `lstat`): a FIFO, directory
    /// or symbolic link there is then refused by the read that opens it, an error naming the
    /// file and what is wrong with it, not "no team selected" (attacker QA).
    pub fn exists(&self, team: &Name) -> bool {
        let dir = self.team_dir(team);
        fs::symlink_metadata(dir.join("config.json")).is_ok()
            || fs::symlink_metadata(dir.join(POINTER)).is_ok()
    }

    /// The server a team kept elsewhere is in (its pointer file), `None` for a file-store team.
    fn pointer(&self, team: &Name) -> Result<Option<ServerUrl>> {
        let path = self.team_dir(team).join(POINTER);
        let bytes = match super::fsutil::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let p: Pointer = serde_json::from_slice(&bytes).map_err(|e| {
            Error::failed(format!(
                "{} is damaged ({e}); write {{\"url\": \"nats://HOST:PORT\"}} into it, or remove the team's directory",
                path.display()
            ))
        })?;
        ServerUrl::parse(&p.url).map(Some)
    }

    fn write_pointer(&self, team: &Name, url: &ServerUrl) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(&Pointer {
            url: url.full().to_string(),
        })
        .map_err(|e| Error::failed(format!("cannot encode the store pointer: {e}")))?;
        write_atomic(&self.team_dir(team).join(POINTER), &bytes, true)
    }

    /// Open a team kept in NATS (its pointer is here). A server that answers but no longer has
    /// the team (deleted from another host) gets an error that says how to drop the pointer.
    fn open_nats(&self, team: &Name, url: &ServerUrl) -> Result<SharedStore> {
        self.verify()?;
        check_private_dir(&self.team_dir(team), "team directory", false)?;
        match NatsStore::open(url, team, self.team_dir(team)) {
            Ok(s) => Ok(s.shared()),
            // Only "no such team" is looked at again: a server that cannot be reached is not
            // tried a second time.
            Err(e @ Error::BadInput(_)) => match NatsStore::exists_at(url, team) {
                Ok(false) => Err(gone_error(team, url)),
                _ => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// The server (as shown) a team of this home is kept in, `None` for a file-store team.
    pub fn server_of(&self, team: &Name) -> Result<Option<String>> {
        Ok(self.pointer(team)?.map(|u| u.shown().to_string()))
    }

    /// The server (as shown) that `team`'s pointer names, when that server answers that it no
    /// longer has the team (it was deleted, from another host). `None` for a file-store team or
    /// a team still there; a server that cannot be reached is an error.
    pub fn gone_from_server(&self, team: &Name) -> Result<Option<String>> {
        let Some(url) = self.pointer(team)? else {
            return Ok(None);
        };
        Ok((!NatsStore::exists_at(&url, team)?).then(|| url.shown().to_string()))
    }

    /// A team this home does not have, found in the store `TEAMCTL_STORE` names: this home
    /// joins it (writes its pointer) and opens it. Called by `open` (any command naming the
    /// team), never with `create`'s lock held (no command opens a team under it).
    ///
    /// The directory and its pointer are made under `create`'s lock, as `create_in` makes a
    /// team's: `delete` and `doctor --fix` hold it from their look at a directory (a leftover
    /// without a team file or pointer?) to its removal, so they never remove this directory
    /// between its making and its pointer's, nor does a join make it in the middle of theirs.
    fn join(&self, team: &Name) -> Result<Option<SharedStore>> {
        let Some(url) = store_from_env()? else {
            return Ok(None);
        };
        if !NatsStore::exists_at(&url, team)? {
            return Ok(None);
        }
        self.verify()?;
        let creating = self.lock_create()?;
        ensure_dir(&self.teams_dir())?;
        let dir = self.team_dir(team);
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e).at(&dir),
            _ => {}
        }
        // The directory is made, its pointer not yet (a test looks at the lock here).
        crate::pause::at("join-dir-made");
        self.write_pointer(team, &url)?;
        drop(creating);
        self.open_nats(team, &url).map(Some)
    }

    /// What is left of `team` when its directory is here without a team file or a pointer
    /// (a crash, an interrupted `delete`, or an `rm -rf` racing `send`s can leave inboxes
    /// behind): `None` when the team exists, or has no directory here.
    pub fn leftover(&self, team: &Name) -> Option<Leftover> {
        let dir = self.team_dir(team);
        let meta = fs::symlink_metadata(&dir).ok()?;
        if !meta.is_dir() || self.exists(team) {
            return None;
        }
        // Read only: a store on the directory reads its inboxes as they are, making nothing.
        let store = FsStore::new(team.clone(), dir.clone());
        let inboxes = super::Store::inboxes(&store)
            .into_iter()
            .map(|name| {
                let n = super::entries(&store, &name, super::Position::START)
                    .map_while(|e| e.ok())
                    .filter(|e| matches!(e.item, super::Item::Message(_)))
                    .count();
                (name, n)
            })
            .collect();
        let young = meta
            .modified()
            .ok()
            .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
            .is_none_or(|age| age < HALF_MADE_GRACE);
        let mut left = Leftover {
            team: team.clone(),
            dir,
            inboxes,
            being_made: false,
        };
        // `create` makes the directory and then the team file, both under its lock
        // (`create_in`): a young directory without mail is a team being made while that lock
        // is held. Once it is not, a `create` that was making it has ended: its team file is
        // there now (not a leftover after all), or it never came (left over). The age alone
        // said "being made" for a minute of a directory nothing was making.
        if left.messages() == 0 && young {
            if super::fsutil::lock_held(&self.create_lock()) {
                left.being_made = true;
            } else if self.exists(team) {
                return None;
            }
        }
        Some(left)
    }

    /// The error for a command naming `team` when it is a leftover (`leftover`).
    fn leftover_error(&self, team: &Name) -> Option<Error> {
        Some(self.leftover(team)?.error(&[]))
    }

    /// Every team in this home, by name.
    pub fn teams(&self) -> Vec<Name> {
        let mut out: Vec<Name> = fs::read_dir(self.teams_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Name::parse(e.file_name().to_str()?).ok())
            .filter(|n| self.exists(n))
            .collect();
        out.sort();
        out
    }

    /// Open an existing team, or a bad-input error that says how to make one.
    pub fn open(&self, team: &Name) -> Result<SharedStore> {
        self.open_seen(team, None)
    }

    /// `open`, with what the caller found `exists` to say (`None`: not looked at). Each look
    /// is done once: the team file and the pointer were looked at up to five times and the
    /// pointer read twice on `send`'s way to its append.
    fn open_seen(&self, team: &Name, exists: Option<bool>) -> Result<SharedStore> {
        if let Some(url) = self.pointer(team)? {
            return self.open_nats(team, &url);
        }
        if !exists.unwrap_or_else(|| self.exists(team)) {
            if let Some(store) = self.join(team)? {
                return Ok(store);
            }
            // A team that is here is no leftover: looked for only when it is not.
            if let Some(e) = self.leftover_error(team) {
                return Err(e);
            }
            if !self.exists(team) {
                return Err(self.no_team(team));
            }
        }
        self.verify_team(team)?;
        // No pointer (read above): a team of files here, as `handle` gives.
        Ok(Arc::new(FsStore::new(team.clone(), self.team_dir(team))))
    }

    /// The error for a team that is not here, saying how to make, pick or join one.
    fn no_team(&self, team: &Name) -> Error {
        let from_env = store_from_env().ok().flatten();
        let elsewhere = match &from_env {
            Some(url) => format!(" nor on {}", url.shown()),
            None => String::new(),
        };
        // One that differs only in what a reader cannot tell apart is the likely one meant
        // (a new one of that name would be refused as too like it).
        if let Some(like) = self.teams().into_iter().find(|t| t.looks_like(team)) {
            return Error::bad(format!(
                "no team {team:?} in {}{elsewhere}; did you mean {like:?}? (`--team {like}`)",
                self.root.display()
            ));
        }
        let join = if from_env.is_some() {
            String::new()
        } else {
            format!(
                ", or join a team kept on a NATS server by naming the server once: TEAMCTL_STORE=nats://HOST:PORT teamctl --team {team} status"
            )
        };
        Error::bad(format!(
            "no team {team:?} in {}{elsewhere}; create it with `teamctl create {team}`, pick one with --team{join}",
            self.root.display()
        ))
    }

    /// The store of `team`, whether or not it exists (doctor looks at half-made teams).
    pub fn handle(&self, team: &Name) -> Result<SharedStore> {
        // A team kept in NATS is that team or an error (the server down, say): never a file
        // store on its directory, which would read as a deleted team.
        if let Some(url) = self.pointer(team)? {
            return Ok(NatsStore::open(&url, team, self.team_dir(team))?.shared());
        }
        Ok(Arc::new(FsStore::new(team.clone(), self.team_dir(team))))
    }

    /// The team named by `--team`, else the current one.
    pub fn resolve(&self, team: Option<&str>) -> Result<SharedStore> {
        match team {
            Some(t) => self.open(&Name::parse_as(t, "team")?),
            None => match self.current_named() {
                // `current`, the look at the team file handed on.
                Some(t) if self.exists(&t) => self.open_seen(&t, Some(true)),
                // The team led last lost its team file: that, not "no team selected".
                named => Err(named
                    .and_then(|t| self.leftover_error(&t))
                    .or_else(|| self.odd_current())
                    .unwrap_or_else(|| Error::bad(
                        "no team selected: create one with `teamctl create NAME`, or pass --team NAME (or set TEAMCTL_TEAM)",
                    ))),
            },
        }
    }

    /// Make a new team named `base`, or `base-2`, `base-3`... when the name is taken.
    /// Under `create`'s lock, taken here.
    pub fn create(&self, base: &Name, description: &str, cwd: &Path) -> Result<SharedStore> {
        let creating = self.lock_create()?;
        self.create_in(&creating, base, description, cwd, None)
    }

    /// As `create`, kept in the NATS server at `store` when given (else files here). A name is
    /// taken when this home or the server has it. Commands call it with `lock_create`'s guard
    /// held (a `delete` then never removes the directory between its making and its team
    /// file's).
    pub fn create_in(
        &self,
        _creating: &Creating<'_>,
        base: &Name,
        description: &str,
        cwd: &Path,
        store: Option<&ServerUrl>,
    ) -> Result<SharedStore> {
        self.verify()?;
        let teams = self.teams_dir();
        ensure_dir(&teams)?;
        self.verify()?;
        // `send NAME@TEAM` names teams of one home or one server: none may look like another.
        let known = match store {
            Some(url) => NatsStore::team_names(url),
            None => self.teams(),
        };
        if let Some(t) = known.iter().find(|t| *t != base && t.looks_like(base)) {
            let place = match store {
                Some(url) => format!("on the NATS server at {}", url.shown()),
                None => format!("in {}", self.root.display()),
            };
            return Err(Error::bad(format!(
                "team {base:?} looks like {:?}, already {place} (they differ only in case, I/l/1, O/0 or - _ .); choose a name a reader can tell apart",
                t.as_str()
            )));
        }
        for n in 1..10_000u32 {
            let candidate = if n == 1 {
                base.clone()
            } else {
                let suffix = format!("-{n}");
                let keep = base.as_str().len().min(64 - suffix.len());
                Name::parse(&format!("{}{suffix}", &base.as_str()[..keep]))?
            };
            let dir = self.team_dir(&candidate);
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).at(&dir),
            }
            // The directory is made, its team file not yet (tests force a race here).
            crate::pause::at("team-dir-made");
            let now = now_ms();
            let config = TeamConfig {
                name: candidate.clone(),
                description: description.to_string(),
                created_at: now,
                lead_agent_id: format!("{LEADER}@{candidate}"),
                lead_session_id: crate::domain::message::new_id(),
                members: vec![Member::leader(&candidate, cwd.display().to_string(), now)],
                tmux_session: None,
                tmux_fill: None,
                deleting: None,
                max_hops: None,
                extra: serde_json::Map::default(),
            };
            if let Some(url) = store {
                // The pointer first: a team made in NATS is never left without one here.
                let made = self
                    .write_pointer(&candidate, url)
                    .and_then(|()| NatsStore::create(url, &config, dir.clone()));
                match made {
                    Ok(Created::Made(s)) => return Ok(s.shared()),
                    Ok(Created::Taken) => {
                        let _ = super::fsutil::remove_tree(&dir);
                        continue;
                    }
                    Err(e) => {
                        let _ = super::fsutil::remove_tree(&dir);
                        return Err(e);
                    }
                }
            }
            let store = FsStore::new(candidate, dir);
            store.init(&config)?;
            return Ok(Arc::new(store));
        }
        Err(Error::failed(format!(
            "could not find a free name for team {base}"
        )))
    }
}

/// `create`'s lock on a home (`Home::lock_create`), held: the only way to write the
/// current-team record.
pub struct Creating<'h> {
    home: &'h Home,
    _lock: super::fsutil::LockGuard,
}

impl Creating<'_> {
    /// Record `team` as the current one (atomically: a reader sees the old name or the new),
    /// or forget the record (`None`).
    pub fn set_current(&self, team: Option<&Name>) -> Result<()> {
        let path = self.home.current_file();
        match team {
            Some(t) => write_atomic(&path, t.as_str().as_bytes(), false),
            None => match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).at(&path),
                _ => Ok(()),
            },
        }
    }

    /// Forget the record when the team it names is gone.
    pub fn clear_gone(&self) -> Result<()> {
        match self.home.current_named() {
            Some(t) if !self.home.exists(&t) => self.set_current(None),
            _ => Ok(()),
        }
    }

    /// Remove this home's directory of `team` (its pointer, logs, local state) and forget it
    /// as the current team. Nothing kept on a server is touched: `delete --leave`, a team
    /// deleted from another host, a leftover. The record is looked at even when the removal
    /// failed part way: it never names a team whose file went.
    pub fn forget(&self, team: &Name) -> Result<()> {
        self.home.verify()?;
        let removed = super::fsutil::remove_tree_under(self.home.root(), &self.home.team_dir(team));
        self.clear_gone()?;
        removed.map(drop)
    }

    /// Remove the team `store` holds (`Store::destroy`) and forget it as the current team,
    /// also when the removal failed part way.
    pub fn destroy(&self, store: &dyn super::Store) -> Result<()> {
        let destroyed = store.destroy();
        self.clear_gone()?;
        destroyed
    }
}

/// A team directory without its team file (`Home::leftover`): what it holds, so that no
/// message in it goes unsaid before it is removed.
#[derive(Debug, Clone)]
pub struct Leftover {
    pub team: Name,
    pub dir: PathBuf,
    /// Each inbox in it and how many messages it holds.
    pub inboxes: Vec<(Name, usize)>,
    /// A team being made right now (`Home::leftover`).
    pub being_made: bool,
}

/// `bob's worker`, or `the workers of bob, carol`.
pub fn workers_of(names: &[Name]) -> String {
    match names {
        [one] => format!("{one}'s worker"),
        many => format!(
            "the workers of {}",
            many.iter().map(Name::as_str).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A directory without a team file younger than this and without mail may be a team being
/// made (`create` makes the directory, then the file), while `create`'s lock is held.
pub const HALF_MADE_GRACE: std::time::Duration = std::time::Duration::from_mins(1);

impl Leftover {
    /// The messages in all its inboxes.
    pub fn messages(&self) -> usize {
        self.inboxes.iter().map(|(_, n)| n).sum()
    }

    /// Possibly a team being made right now: no mail, changed within `HALF_MADE_GRACE`, and
    /// `create`'s lock held when it was looked at.
    pub fn maybe_being_made(&self) -> bool {
        self.being_made
    }

    /// How it came to be, as far as can be told.
    pub fn cause(&self) -> &'static str {
        if self.maybe_being_made() {
            "being made, or left over from a crash or an interrupted delete"
        } else {
            "left over from a crash or an interrupted delete"
        }
    }

    /// `3 messages in the inboxes of bob (2), team-lead (1)`, or `no messages`.
    pub fn contents(&self) -> String {
        let with: Vec<String> = self
            .inboxes
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} ({n})"))
            .collect();
        match self.messages() {
            0 => "no messages".to_string(),
            n => format!(
                "{n} message{} in the inbox{} of {}",
                if n == 1 { "" } else { "s" },
                if with.len() == 1 { "" } else { "es" },
                with.join(", ")
            ),
        }
    }

    /// The command that removes it: `delete` when it holds no message, else `delete --force`,
    /// saying what goes with it and where that is.
    pub fn removal(&self) -> String {
        self.removal_ending(&[])
    }

    /// `removal`, saying that it also ends the workers `running`.
    fn removal_ending(&self, running: &[Name]) -> String {
        let team = &self.team;
        let ends = match running.len() {
            0 => String::new(),
            1 => " ends that worker and".to_string(),
            _ => " ends those workers and".to_string(),
        };
        match self.messages() {
            0 => format!("`teamctl delete --team {team}`{ends} removes it"),
            n => format!(
                "`teamctl delete --force --team {team}`{ends} removes it and {} ({})",
                if n == 1 {
                    "that message"
                } else {
                    "those messages"
                },
                self.where_messages()
            ),
        }
    }

    /// The error for a command naming this team. `running`: its teammates whose workers still
    /// run (their live states say so, checked above the store); then it is no crash's or
    /// interrupted delete's leftover, and `delete` ends those workers too.
    pub fn error(&self, running: &[Name]) -> Error {
        let team = &self.team;
        let what = self.removal_ending(running);
        if running.is_empty() {
            return Error::failed(format!(
                "team {team:?} has no team file: {} is {}, holding {}; {what}",
                self.dir.display(),
                self.cause(),
                self.contents()
            ));
        }
        Error::failed(format!(
            "team {team:?} has no team file: its config.json is gone from {} while {} still {}; the directory holds {}; {what}",
            self.dir.display(),
            workers_of(running),
            if running.len() == 1 { "runs" } else { "run" },
            self.contents()
        ))
    }

    /// Where its messages are, to read or copy before removing them.
    pub fn where_messages(&self) -> String {
        format!(
            "they are in {}/inboxes/NAME/inbox.jsonl, one JSON message a line: copy what you want to keep first",
            self.dir.display()
        )
    }
}

/// Names the store for `create` (`--store`) and for opening a team this home does not have
/// yet: `nats://HOST:PORT`; empty or `file` is the file store.
pub const STORE_ENV: &str = crate::domain::env::STORE;

/// A team's pointer file in its local directory: where the team is kept.
const POINTER: &str = "store.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Pointer {
    url: String,
}

/// The store a `--store` value or `TEAMCTL_STORE` names; `None` for the file store.
pub fn parse_store(value: Option<&str>) -> Result<Option<ServerUrl>> {
    match value.map(str::trim) {
        None | Some("" | "file") => Ok(None),
        Some(v) => ServerUrl::parse(v).map(Some),
    }
}

/// The error for a team whose pointer names a server that no longer has it.
fn gone_error(team: &Name, url: &ServerUrl) -> Error {
    Error::bad(format!(
        "team {team:?} is no longer on the NATS server at {} (deleted, from another host?); `teamctl delete --team {team}` removes it from this home",
        url.shown()
    ))
}

fn store_from_env() -> Result<Option<ServerUrl>> {
    parse_store(std::env::var(STORE_ENV).ok().as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_current_file_longer_than_a_name_names_no_team() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().to_path_buf());
        std::fs::write(home.current_file(), "t\n").unwrap();
        assert_eq!(
            home.current_named().map(|n| n.to_string()),
            Some("t".into())
        );
        // Not read whole: what lies past a name's length is not looked for a name.
        let mut long = String::from("t");
        long.push_str(&" ".repeat(4096));
        std::fs::write(home.current_file(), long).unwrap();
        assert_eq!(home.current_named(), None);
    }
}
