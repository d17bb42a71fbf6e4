//! Machine checks: tmux (found, version), the inotify limits workers need (one inotify
//! instance and a few watches each), with the sysctl line that raises them (and the orphaned
//! workers still holding instances, which `--fix` ends), and the home's own lock file
//! (`create.lock`) being one.

use std::process::Command;

use super::{Finding, Level};
use crate::domain::BackendType;
use crate::store::Home;

pub fn tmux(home: &Home) -> Vec<Finding> {
    let uses_tmux = super::readable_teams(home).iter().any(|(_, cfg)| {
        cfg.teammates()
            .any(|m| m.backend_type == Some(BackendType::Tmux))
    });
    match which::which("tmux") {
        Ok(path) => {
            let version = Command::new(&path)
                .arg("-V")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
            match version {
                Some(v) => vec![Finding::new(
                    "tmux",
                    Level::Ok,
                    format!("{v} ({})", path.display()),
                )],
                None => vec![
                    Finding::new(
                        "tmux",
                        Level::Problem,
                        format!("{} does not run (`tmux -V` failed)", path.display()),
                    )
                    .hint("reinstall tmux, or spawn teammates with --backend process"),
                ],
            }
        }
        Err(_) => {
            let level = if uses_tmux {
                Level::Problem
            } else {
                Level::Warn
            };
            vec![
                Finding::new("tmux", level, "tmux not found on PATH")
                    .hint("install tmux (e.g. `apt-get install tmux`) for panes; without it teammates run with --backend process"),
            ]
        }
    }
}

fn read_limit(name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/sys/fs/inotify/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// inotify instances held by processes this user can see.
fn instances_in_use() -> u64 {
    let mut n = 0;
    for pid in crate::backend::proc::pids() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == "anon_inode:inotify") {
                n += 1;
            }
        }
    }
    n
}

/// Watches per worker: its inbox directory, the team directory (tasks), the state directory.
const WATCHES_PER_WORKER: u64 = 3;

pub fn inotify(home: &Home) -> Vec<Finding> {
    let (Some(instances), Some(watches)) = (
        read_limit("max_user_instances"),
        read_limit("max_user_watches"),
    ) else {
        return vec![Finding::new(
            "inotify",
            Level::Warn,
            "cannot read /proc/sys/fs/inotify; workers wait on FIFO doorbells if inotify is missing",
        )];
    };
    let mut running = 0u64;
    let mut size = 0u64;
    for (store, cfg) in super::readable_teams(home) {
        let seen = crate::backend::Snapshot::of(cfg.teammates());
        for m in cfg.teammates() {
            size += 1;
            let live = store.live(&m.name).ok().flatten();
            if crate::leader::effective_status_with(&*store, m, live.as_ref(), &seen).is_running() {
                running += 1;
            }
        }
    }
    let in_use = instances_in_use();
    let raise = format!(
        "raise the limits: `sudo sysctl fs.inotify.max_user_instances={} fs.inotify.max_user_watches={}` (persist them in /etc/sysctl.d/60-teamctl.conf)",
        (instances.max(size + in_use + 64))
            .next_power_of_two()
            .max(1024),
        (watches.max((size + in_use) * WATCHES_PER_WORKER * 4)).max(524_288)
    );
    // Workers whose team or home is gone hold an instance each until they are ended (new-user
    // QA: the line counted only the teams there are).
    let orphaned = super::orphans::orphaned_workers(home);
    let orphans = match orphaned {
        0 => String::new(),
        1 => {
            "; 1 orphaned worker (its team or home gone) holds one; `teamctl doctor --fix` ends it"
                .to_string()
        }
        n => format!(
            "; {n} orphaned workers (their team or home gone) hold one each; `teamctl doctor --fix` ends them"
        ),
    };
    // Of how many there are, said so ("0 running teammates here, 1 in all" read as one
    // running elsewhere, new-user QA 43).
    let teammates = if size == 1 { "teammate" } else { "teammates" };
    let summary = format!(
        "inotify: {in_use} of {instances} instances in use, {watches} watches allowed; {running} of {size} {teammates} running here{orphans}"
    );
    let level = if running > instances || running * WATCHES_PER_WORKER > watches {
        // These workers cannot all have inotify: some wait on doorbells.
        Level::Problem
    } else if in_use + 8 >= instances || size + in_use.saturating_sub(running) > instances {
        Level::Warn
    } else {
        Level::Ok
    };
    let mut f = Finding::new("inotify", level, summary);
    if level != Level::Ok {
        f = f.hint(format!(
            "workers without an inotify instance wait on FIFO doorbells that teamctl's writers ring (no polling; a write made without teamctl rings none); {raise}"
        ));
    }
    vec![f]
}

/// Something not a lock file at `$TEAMCTL_HOME/create.lock` (a FIFO, a directory, a link):
/// every `create`, `up`, `demo` and `delete` takes that lock, and fails on it.
pub fn create_lock(home: &Home) -> Option<Finding> {
    let path = home.create_lock();
    let kind = crate::store::fsutil::odd_kind(&path)?;
    Some(super::teams::odd_lock(
        path,
        kind,
        "every `create`, `up`, `demo` and `delete` fails on it",
    ))
}
