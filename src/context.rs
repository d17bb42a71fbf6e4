//! The global options, converted once: the home, the chosen team, who is acting, output style.

use std::io::IsTerminal;

use crate::cli::Global;
use crate::domain::Name;
use crate::domain::member::COLORS;
use crate::error::{Error, Result};
use crate::output::Painter;
use crate::store::{FsStore, Home};

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

/// Set in each turn: the hop count of the message being handled.
pub const HOPS_VAR: &str = "TEAMCTL_HOPS";

pub struct Ctx {
    pub home: Home,
    pub team: Option<String>,
    pub as_name: String,
    pub json: bool,
    pub paint: Painter,
    /// `spawn --color C`: the new teammate's colour.
    pub member_color: Option<String>,
}

impl Ctx {
    /// `spawning`: a colour name in `--color` is the new teammate's colour (SPEC gives
    /// `--color` both meanings); elsewhere only auto, always and never are accepted.
    pub fn new(global: Global, spawning: bool) -> Result<Ctx> {
        let home = Home::new(home_root(global.home.unwrap_or_else(Home::default_root)));
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
            team: global.team.filter(|t| !t.is_empty()),
            as_name: global.as_name,
            json: global.json,
            paint: Painter::new(color),
            member_color,
        })
    }

    /// The team this command acts on.
    pub fn store(&self) -> Result<FsStore> {
        self.home.resolve(self.team.as_deref())
    }

    /// Who is acting (`--as`), validated.
    pub fn me(&self) -> Result<Name> {
        Name::parse_as(&self.as_name, "member (--as)")
    }

    /// The hop count of a message sent now (the loop guard): inside a turn, the handled
    /// message's hops + 1 (the worker sets `$TEAMCTL_HOPS`); outside any turn, 0.
    pub fn hops(&self) -> u32 {
        std::env::var(HOPS_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .map_or(0, |h| h.saturating_add(1))
    }

    /// Only the leader may run leader-only commands.
    pub fn require_leader(&self, what: &str) -> Result<()> {
        if self.me()?.is_leader() {
            Ok(())
        } else {
            Err(Error::bad(format!(
                "only the leader can {what}; you are acting as {:?} (--as / TEAMCTL_AGENT_NAME)",
                self.as_name
            )))
        }
    }

    /// Print a JSON value on stdout.
    pub fn print_json(&self, value: &serde_json::Value) {
        println!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_default()
        );
    }
}

impl Ctx {
    /// Act on any shutdown responses waiting for the leader (so `shutdown --no-wait` is
    /// completed by whichever leader command runs next). Called after a command's input is
    /// validated, so bad input still writes nothing.
    pub fn reconcile(&self, store: &FsStore) -> Result<()> {
        if self.me().is_ok_and(|n| n.is_leader()) {
            for h in crate::leader::reconcile(store)? {
                match h {
                    crate::leader::Handoff::Stopped(n) => eprintln!("teamctl: {n} has shut down"),
                    crate::leader::Handoff::Refused(n, why) => {
                        eprintln!("teamctl: {n} refused to shut down: {why}")
                    }
                }
            }
        }
        Ok(())
    }
}
