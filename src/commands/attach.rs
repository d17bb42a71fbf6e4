//! `teamctl attach [NAME]`: show the team's tmux panes in this terminal, focused on NAME's
//! pane: `attach-session` from outside tmux, `switch-client` from a pane of the same server.

use crate::backend::tmux::{self, TmuxBackend, argv};
use crate::cli::AttachArgs;
use crate::context::Ctx;
use crate::domain::{BackendType, Member, Name, TeamConfig};
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &AttachArgs) -> Result<()> {
    let store = ctx.store()?;
    let mut config = store.load()?;
    let wanted = args.name.as_deref().map(Name::teammate).transpose()?;
    if let Some(name) = &wanted {
        let member = config.require(name.as_str())?;
        // Running in a pane its start was cut short before recording (a killed `spawn`):
        // recorded now, as `resume` does, and shown (new-user QA: attach said the pane was
        // gone while the teammate ran in it).
        if member.backend_type == Some(BackendType::Tmux)
            && member.pane_id.is_none()
            && member.pid.is_none()
            && crate::leader::record_unrecorded(&*store, name)?.is_some()
        {
            config = store.load()?;
        }
    }
    tmux::find_tmux()?;
    let (backend, target) = target(&config, wanted.as_ref())?;
    let inside = tmux::inside(backend.server());
    let mut cmds = Vec::new();
    if target.starts_with('%') {
        cmds.extend(argv::focus(&target));
    }
    cmds.push(argv::show(&target, inside));
    backend.runner().run_in_terminal(&cmds, inside)
}

fn pane_of(member: &Member) -> Option<(TmuxBackend, String)> {
    if member.backend_type != Some(BackendType::Tmux)
        || crate::backend::host::elsewhere(member).is_some()
    {
        return None;
    }
    let pane = member.pane_id.clone()?;
    let backend = TmuxBackend::for_member(member);
    backend
        .is_tagged(&pane, &member.agent_id)
        .then_some((backend, pane))
}

/// Why a teammate's recorded pane cannot be shown: gone, or there but running something else
/// (the user's own program after `respawn-pane -k`: the pane is theirs now, see `argv::holds`;
/// tmux never gives a pane id to another pane while its server runs).
fn not_its_pane(member: &Member) -> Error {
    let name = &member.name;
    let pane = member.pane_id.as_deref().and_then(|p| {
        TmuxBackend::for_member(member)
            .probe(p)
            .map(|_| p.to_string())
    });
    match pane {
        Some(pane) => Error::failed(format!(
            "{name}'s pane {pane} now runs something else (not teamctl's: it is yours, and teamctl leaves it alone); `teamctl resume {name}` starts {name} in a new pane"
        )),
        // Stopped: said so, not only that its pane is gone (new-user QA 43).
        None if member.status == crate::domain::Status::Stopped => Error::failed(format!(
            "{name} is stopped (its pane was closed); `teamctl resume {name}` starts it in a new pane"
        )),
        None => Error::failed(format!(
            "{name}'s pane is gone; bring it back with `teamctl resume {name}`"
        )),
    }
}

/// The server and the `-t` target: NAME's pane, else the first teammate pane still there,
/// else the team's session.
fn target(config: &TeamConfig, wanted: Option<&Name>) -> Result<(TmuxBackend, String)> {
    if let Some(name) = wanted {
        let member = config.require(name.as_str())?;
        if let Some(host) = crate::backend::host::elsewhere(member) {
            return Err(Error::failed(
                if member.backend_type == Some(BackendType::Tmux) {
                    format!(
                        "{name} runs on {host}; its pane is there: run `teamctl attach {name}` on that host"
                    )
                } else {
                    format!(
                        "{name} runs on {host}, on the process backend there: it has no pane; follow its output with `teamctl log --worker {name} -f` on that host"
                    )
                },
            ));
        }
        if member.backend_type != Some(BackendType::Tmux) {
            return Err(Error::bad(format!(
                "{name} runs on the process backend and has no pane; follow its output with `teamctl log --worker {name} -f`"
            )));
        }
        return pane_of(member).ok_or_else(|| not_its_pane(member));
    }
    if let Some(found) = config.teammates().find_map(pane_of) {
        return Ok(found);
    }
    if let Some(session) = &config.tmux_session {
        let target = argv::exact_session(session);
        for m in config.teammates() {
            if m.backend_type == Some(BackendType::Tmux) {
                let backend = TmuxBackend::for_member(m);
                let tag = tmux::place::session_owner(backend.runner(), &target);
                let ours = backend.tag(config.name.as_str());
                if tag.is_ok_and(|t| t.as_deref() == Some(ours.as_str())) {
                    return Ok((backend, target));
                }
            }
        }
    }
    Err(Error::failed(format!(
        "team {} has no tmux panes to attach to; start one with `teamctl spawn NAME`",
        config.name
    )))
}
