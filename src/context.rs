//! The global options, converted once: the home, the chosen team, who is acting, output style.

use std::io::IsTerminal;

use crate::domain::env;
use crate::domain::member::COLORS;
use crate::domain::{LEADER, Name};
use crate::error::{Error, Result};
use crate::output::Painter;
use crate::store::{Home, SharedStore, Store};

/// The global options, the environment filled in (an empty variable counts as unset).
#[derive(Debug, Clone)]
pub struct Global {
    pub team: Option<String>,
    pub home: Option<std::path::PathBuf>,
    /// `None`: the leader, or inside a turn, its teammate (`Ctx::new`).
    pub as_name: Option<String>,
    pub json: bool,
    pub color: String,
}

/// The home directory as every command and worker spells it, with process tag checks scoped
/// to it: absolute and in one spelling (no trailing `/`, `//` or `.`), so workers started
/// elsewhere find the same home and tags compare equal: `--home DIR/` once left workers that
/// no command of `--home DIR` could recognise, stop or kill.
pub fn home_root(root: std::path::PathBuf) -> std::path::PathBuf {
    let root: std::path::PathBuf = std::path::absolute(&root)
        .unwrap_or(root)
        .components()
        .collect();
    crate::backend::proc::scope_to_home(&root);
    root
}

/// The teammate whose turn this command runs in: the worker names it in the turn's
/// environment (`TEAMCTL_AGENT_ID=NAME@TEAM`, with the message being handled in
/// `TEAMCTL_MESSAGE_ID` and its sender in `TEAMCTL_FROM`). Inside a turn a command acts as that
/// teammate and no one else. A guard rail against an agent's mistakes, not a boundary: the
/// agent runs as the same user and can unset the variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub name: Name,
    pub team: Name,
    /// The id of the message the turn handles, when the worker gave one.
    pub message_id: Option<String>,
    /// Who sent it.
    pub from: Option<String>,
}

impl Turn {
    /// The turn named by the environment, if any: `TEAMCTL_AGENT_ID` set and not empty.
    pub fn from_env() -> Result<Option<Turn>> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let Some(id) = var(env::AGENT_ID) else {
            return Ok(None);
        };
        let bad = || {
            Error::bad(format!(
                "TEAMCTL_AGENT_ID={id:?} is not NAME@TEAM; it names the teammate whose turn this is (unset it outside a turn)"
            ))
        };
        let (name, team) = id.split_once('@').ok_or_else(bad)?;
        let name = Name::parse(name).map_err(|_| bad())?;
        let team = Name::parse(team).map_err(|_| bad())?;
        Ok(Some(Turn {
            name,
            team,
            message_id: var(env::MESSAGE_ID),
            from: var(env::FROM),
        }))
    }

    /// Refuse acting as anyone else (another `--as`, another team or home) inside this turn.
    fn check(
        &self,
        as_name: Option<&str>,
        team: Option<&str>,
        home: &std::path::Path,
    ) -> Result<()> {
        let who = self.name.agent_id(&self.team);
        let refuse = |what: String| {
            Err(Error::bad(format!(
                "this runs inside {who}'s turn (TEAMCTL_AGENT_ID), so it acts as {} only; {what} is refused",
                self.name
            )))
        };
        if let Some(a) = as_name
            && a != self.name.as_str()
        {
            return refuse(format!("acting as {a:?} (--as / TEAMCTL_AGENT_NAME)"));
        }
        if let Some(t) = team
            && t != self.team.as_str()
        {
            return refuse(format!("acting in team {t:?} (--team / TEAMCTL_TEAM)"));
        }
        if let Some(h) = std::env::var_os(env::HOME).filter(|h| !h.is_empty())
            && home_root(std::path::PathBuf::from(h)) != home
        {
            return refuse(format!("acting in home {} (--home)", home.display()));
        }
        Ok(())
    }
}

pub struct Ctx {
    pub home: Home,
    pub team: Option<String>,
    pub as_name: String,
    /// Set when this command runs inside a teammate's turn.
    pub turn: Option<Turn>,
    pub json: bool,
    pub paint: Painter,
    /// `spawn --color C`: the new teammate's colour.
    pub member_color: Option<String>,
}

impl Ctx {
    /// `spawning`: a colour name in `--color` is the new teammate's colour (SPEC gives
    /// `--color` both meanings); elsewhere only auto, always and never are accepted.
    pub fn new(global: Global, spawning: bool) -> Result<Ctx> {
        let home = Home::new(home_root(match global.home {
            Some(h) => h,
            None => Home::default_root()?,
        }));
        // An empty variable was dropped by `GlobalArgs::resolve`: only `--team=` or `--team ""`
        // is empty here, which named no team (it was taken for the default one, while an
        // empty `--as` was refused).
        if global.team.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(Error::bad(
                "--team is empty: name a team (`--team NAME`), or leave --team out for the team created last (an empty TEAMCTL_TEAM counts as unset)",
            ));
        }
        let team = global.team;
        let turn = Turn::from_env()?;
        if let Some(t) = &turn {
            t.check(global.as_name.as_deref(), team.as_deref(), home.root())?;
        }
        // Inside a turn the team is the turn's, also when TEAMCTL_TEAM was unset.
        let team = team.or_else(|| turn.as_ref().map(|t| t.team.to_string()));
        let as_name = match (&turn, global.as_name) {
            (Some(t), _) => t.name.to_string(),
            (None, Some(a)) => a,
            (None, None) => LEADER.to_string(),
        };
        let auto = || {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        };
        let mut member_color = None;
        let color = match global.color.as_str() {
            "always" => true,
            "never" => false,
            "auto" => auto(),
            c if spawning && COLORS.contains(&c) => {
                member_color = Some(c.to_string());
                auto()
            }
            c if spawning => {
                return Err(Error::bad(format!(
                    "unknown colour {c:?}; use one of {}",
                    COLORS.join(", ")
                )));
            }
            c => {
                return Err(Error::bad(format!(
                    "--color takes auto, always or never, not {c:?}"
                )));
            }
        };
        Ok(Ctx {
            home,
            team,
            as_name,
            turn,
            json: global.json,
            paint: Painter::new(color),
            member_color,
        })
    }

    /// The team this command acts on.
    pub fn store(&self) -> Result<SharedStore> {
        self.home
            .resolve(self.team.as_deref())
            .map_err(|e| self.why_no_team(e))
    }

    /// For a command that only acts on a team that exists (`delete`, `status`, `shutdown`...,
    /// `doing`: what it would do, "delete"): a team named with `--team` (or `TEAMCTL_TEAM`)
    /// that is not in this home is refused saying so and listing the teams there are, with no
    /// advice to create it (new-user QA: `--team nope delete` was told `create nope`). `status`
    /// still says how a team kept on a NATS server is joined (that is how one is). Anything
    /// else (a leftover, a pointer, `TEAMCTL_STORE` set) goes on to `store`, which says it.
    pub fn require_existing_team(&self, doing: &str) -> Result<()> {
        let Some(team) = self.team.as_deref().and_then(|t| Name::parse(t).ok()) else {
            return Ok(());
        };
        if self.home.exists(&team)
            || self.home.leftover(&team).is_some()
            || std::env::var_os(crate::store::home::STORE_ENV).is_some()
            || std::fs::symlink_metadata(self.home.team_dir(&team)).is_ok()
            // Its directory removed while its workers run: `store` says what ends them.
            || !workers_of_gone(&team).is_empty()
        {
            return Ok(());
        }
        let teams = self.home.teams();
        let there = match teams.iter().find(|t| t.looks_like(&team)) {
            Some(like) => format!("did you mean {like:?}? (`--team {like}`)"),
            None if teams.is_empty() => "there are no teams here".to_string(),
            None => format!(
                "the teams here: {} (pick one with --team)",
                teams
                    .iter()
                    .map(Name::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let join = if doing == "show the status of" {
            format!(
                "; a team kept on a NATS server is joined by naming the server once: TEAMCTL_STORE=nats://HOST:PORT teamctl --team {team} status"
            )
        } else {
            String::new()
        };
        Err(Error::bad(format!(
            "no team {team:?} in {}, nothing to {doing}: {there}{join}",
            self.home.root().display()
        )))
    }

    /// `resolve`'s error, said more truly when the team chosen (`--team`, `TEAMCTL_TEAM`, or
    /// the team created last) lost its files while its workers run: its team file alone gone
    /// (the leftover's error then names the workers, which no crash leaves running), or its
    /// whole directory (then `doctor --fix` ends what is left). The workers are looked for
    /// only here, on the way to an error.
    fn why_no_team(&self, e: Error) -> Error {
        let from_record = self.team.is_none();
        let named = match &self.team {
            Some(t) => Name::parse(t).ok(),
            None => self.home.current_named(),
        };
        let Some(team) = named else {
            return e;
        };
        if let Some(left) = self.home.leftover(&team) {
            // Its members are known by their inboxes; a live state whose pid is the member's
            // worker says it runs (as `status` judges a worker of no recorded pid).
            let running: Vec<Name> = match self.home.handle(&team) {
                Ok(store) => left
                    .inboxes
                    .iter()
                    .map(|(n, _)| n)
                    .filter(|n| !n.is_leader())
                    .filter(|n| {
                        store.live(n).ok().flatten().is_some_and(|l| {
                            crate::backend::proc::is_worker(l.pid, &n.agent_id(&team))
                        })
                    })
                    .cloned()
                    .collect(),
                Err(_) => Vec::new(),
            };
            return if running.is_empty() {
                e
            } else {
                left.error(&running)
            };
        }
        let dir = self.home.team_dir(&team);
        if std::fs::symlink_metadata(&dir).is_ok() {
            return e;
        }
        let running = workers_of_gone(&team);
        let who = if from_record {
            format!("the team you created last, {:?},", team.as_str())
        } else {
            format!("team {:?}", team.as_str())
        };
        match running.as_slice() {
            [] if !from_record => e,
            [] => Error::failed(format!(
                "{who} no longer exists: its directory {} was removed; `teamctl doctor --fix` ends whatever of it may still run (panes, its tmux session); `teamctl create NAME` starts a new team",
                dir.display()
            )),
            r => Error::failed(format!(
                "{who} no longer exists: its directory {} was removed while {} still {}; `teamctl doctor --fix` ends {} and whatever else of it is left (panes, its tmux session); `teamctl create NAME` starts a new team",
                dir.display(),
                crate::store::home::workers_of(r),
                if r.len() == 1 { "runs" } else { "run" },
                if r.len() == 1 { "it" } else { "them" }
            )),
        }
    }

    /// Who is acting (`--as`), validated.
    pub fn me(&self) -> Result<Name> {
        Name::parse_as(&self.as_name, "member (--as)")
    }

    /// The hop count of a message sent now (the loop guard): inside a turn, the handled
    /// message's hops + 1 (the worker sets `$TEAMCTL_HOPS`); inside an interactive agent's
    /// pane (a turn without `$TEAMCTL_HOPS`), the hops of the turn its companion delivered,
    /// from the member's live state (one small file read) + 1, and once that turn has ended,
    /// the hops of the last message delivered into the pane + 1; outside any turn, 0.
    pub fn hops(&self) -> u32 {
        if let Some(h) = std::env::var(env::HOPS)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
        {
            return h.saturating_add(1);
        }
        let Some(turn) = &self.turn else {
            return 0;
        };
        let Ok(store) = self.home.handle(&turn.team) else {
            return 0;
        };
        let current = store
            .live(&turn.name)
            .ok()
            .flatten()
            .and_then(|live| live.current_turn)
            .map(|t| t.hops);
        // After the delivered turn ended (a timer in the agent's pane, a background job):
        // still that turn's consequence.
        current
            .or_else(|| crate::store::hooks::last_hops(&*store, &turn.name))
            .map_or(0, |h| h.saturating_add(1))
    }

    /// Only the leader may run leader-only commands.
    pub fn require_leader(&self, what: &str) -> Result<()> {
        if self.me()?.is_leader() {
            Ok(())
        } else if let Some(t) = &self.turn {
            Err(Error::bad(format!(
                "only the leader can {what}; this runs inside {}'s turn (TEAMCTL_AGENT_ID), so it acts as {}",
                t.name.agent_id(&t.team),
                t.name
            )))
        } else {
            Err(Error::bad(format!(
                "only the leader can {what}; you are acting as {:?} (--as / TEAMCTL_AGENT_NAME)",
                self.as_name
            )))
        }
    }

    /// Print a JSON value on stdout.
    pub fn print_json(&self, value: &serde_json::Value) {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_default()
        );
    }
}

/// The members of `team` whose worker runs though the team's directory is gone, found by
/// their argv (one /proc walk).
fn workers_of_gone(team: &Name) -> Vec<Name> {
    let suffix = format!("@{team}");
    let mut running: Vec<Name> = crate::backend::proc::pids()
        .filter_map(crate::backend::proc::worker_id)
        .filter_map(|id| {
            let id = String::from_utf8(id).ok()?;
            Name::parse(id.strip_suffix(&suffix)?).ok()
        })
        .collect();
    running.sort();
    running.dedup();
    running
}

impl Ctx {
    /// Act on any shutdown responses waiting for the leader (so `shutdown --no-wait` is
    /// completed by whichever leader command runs next), unless another leader command is
    /// acting on them now (`reconcile_in_passing`). Called after a command's input is
    /// validated, so bad input still writes nothing.
    pub fn reconcile(&self, store: &dyn Store) -> Result<()> {
        if self.me().is_ok_and(|n| n.is_leader()) {
            for h in crate::leader::reconcile_in_passing(store)? {
                match h {
                    crate::leader::Handoff::Stopped(n) => {
                        // Said as what it is, the answer to an earlier request (new-user QA
                        // 43: "has shut down" came just before `resume`'s "resumed").
                        crate::errln!(
                            "teamctl: {n} has shut down, as asked earlier (its answer to the shutdown request came in since)"
                        );
                    }
                    crate::leader::Handoff::Worktree(_, words) => {
                        crate::errln!("teamctl: {words}");
                    }
                    crate::leader::Handoff::LeftOpen(n, panes) => {
                        crate::errln!("teamctl: {n}: {}", crate::leader::left_open_words(&panes));
                    }
                    crate::leader::Handoff::Refused(n, why) => {
                        crate::errln!(
                            "teamctl: {n} refused to shut down: {}",
                            crate::output::printable(&why)
                        );
                    }
                    crate::leader::Handoff::Held(holder) => {
                        crate::errln!("teamctl: {}", crate::leader::held_words(&holder));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_acts_as_its_teammate_only() {
        let turn = Turn {
            name: Name::parse("bob").unwrap(),
            team: Name::parse("alpha").unwrap(),
            message_id: None,
            from: None,
        };
        let home = std::path::Path::new("/h");
        if std::env::var_os(env::HOME).is_none() {
            assert!(turn.check(None, None, home).is_ok());
            assert!(turn.check(Some("bob"), Some("alpha"), home).is_ok());
        }
        for (as_name, team) in [
            (Some("team-lead"), None),
            (Some("Bob"), None),
            (None, Some("beta")),
        ] {
            let err = turn.check(as_name, team, home).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains("inside bob@alpha's turn"), "{err}");
        }
    }
}
