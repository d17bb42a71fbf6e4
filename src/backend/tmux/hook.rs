//! Tagging a new pane in the same tmux invocation that makes it. `split-window -d` leaves
//! the current pane where it was, so a following `set-option` cannot name the new pane; a
//! one-off `after-split-window` hook on teamctl's own team session can, because tmux runs a
//! hook with the new pane as its target. The hook is set, the split made, the hook removed and
//! the window tiled in one invocation (nothing else runs in between), and the hook prints the
//! pane it tagged so the caller can check it. This saves one tmux process per spawn; the
//! separate `argv::tag_pane` stays the fallback. Only for the detached team session: hooks are
//! options, and teamctl never changes the user's.

use super::argv::{self, Cmd, NewPane, Start};

/// The hook whose one-off use tags the pane just split.
const HOOK: &str = "after-split-window";

/// What the hook prints after tagging, before the pane id and the tag.
const TAGGED: &str = "teamctl-tagged";

/// One word of a tmux command string, single-quoted: tmux expands nothing inside. `None` for
/// a word that cannot be quoted so (a quote or a line break in it).
fn quote(word: &str) -> Option<String> {
    if word.contains(['\'', '\n', '\r']) {
        return None;
    }
    Some(format!("'{word}'"))
}

/// `argv::tag_pane`'s commands, without targets (the hook's target is the new pane), as one
/// tmux command string, followed by a line naming the pane tagged. `None` when a value cannot
/// be quoted (the caller tags the pane separately). `nonce`: the placement's
/// (`argv::NONCE_OPTION`), set with the tags.
pub fn tag_script(
    agent_id: &str,
    nonce: Option<&str>,
    team: &str,
    color: &str,
    title: &str,
) -> Option<String> {
    // The pid the tags name first (`argv::tag_pid`): the new pane's, the worker's.
    let mut cmds = vec![format!(
        "set-option -p -F {} {}",
        quote(argv::PID_OPTION)?,
        quote("#{pane_pid}")?
    )];
    if let Some(nonce) = nonce {
        cmds.push(format!(
            "set-option -p {} {}",
            quote(argv::NONCE_OPTION)?,
            quote(nonce)?
        ));
    }
    for (opt, val) in [
        (argv::AGENT_OPTION, agent_id),
        (argv::TEAM_OPTION, team),
        (argv::COLOR_OPTION, color),
        (argv::NAME_OPTION, title),
        ("remain-on-exit", "on"),
    ] {
        cmds.push(format!("set-option -p {} {}", quote(opt)?, quote(val)?));
    }
    cmds.push(format!("select-pane -T {}", quote(&argv::literal(title))?));
    cmds.push(format!(
        "display-message -p {}",
        quote(&format!(
            "{TAGGED} #{{pane_id}} #{{{}}}",
            argv::AGENT_OPTION
        ))?
    ));
    Some(cmds.join(" ; "))
}

/// Split `window` of the team session `session` (an exact session target) with `script`
/// (from `tag_script`) as a one-off hook, then tile the window.
pub fn split_tagged(session: &str, window: &str, start: &Start, script: &str) -> Vec<Cmd> {
    let target = argv::in_session(session);
    let hook = |args: &[&str]| -> Cmd {
        let mut c: Cmd = vec!["set-hook".into()];
        c.extend(args.iter().map(|a| a.to_string()));
        c
    };
    vec![
        hook(&["-t", &target, HOOK, script]),
        argv::split_window(window, false, start),
        hook(&["-u", "-t", &target, HOOK]),
        argv::select_layout(window, "tiled"),
    ]
}

/// Remove the hook after a split that failed (the rest of that invocation did not run).
pub fn unhook(session: &str) -> Cmd {
    vec![
        "set-hook".into(),
        "-u".into(),
        "-t".into(),
        argv::in_session(session),
        HOOK.into(),
    ]
}

/// The new pane `split_tagged` printed, and whether its hook tagged exactly that pane with
/// `agent_id`.
pub fn parse_split(out: &str, agent_id: &str) -> Option<(NewPane, bool)> {
    let mut lines = out.lines();
    let pane = argv::parse_new_pane(lines.next()?)?;
    let tagged = lines.any(|l| {
        let mut w = l.split(' ');
        w.next() == Some(TAGGED) && w.next() == Some(&pane.pane) && w.next() == Some(agent_id)
    });
    Some((pane, tagged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_sets_every_tag_on_the_hooks_target() {
        let s = tag_script("ann@t", None, "t", "blue", "ann").unwrap();
        assert_eq!(
            s,
            "set-option -p -F '@teamctl-pid' '#{pane_pid}' ; \
             set-option -p '@teamctl-agent' 'ann@t' ; set-option -p '@teamctl-team' 't' ; \
             set-option -p '@teamctl-color' 'blue' ; set-option -p '@teamctl-name' 'ann' ; \
             set-option -p 'remain-on-exit' 'on' ; select-pane -T 'ann' ; \
             display-message -p 'teamctl-tagged #{pane_id} #{@teamctl-agent}'"
        );
        assert!(
            !s.contains("-t "),
            "the hook's own target, never a named one"
        );
    }

    #[test]
    fn a_value_that_cannot_be_quoted_means_no_script() {
        assert_eq!(tag_script("a'b@t", None, "t", "blue", "a'b"), None);
        assert_eq!(tag_script("a@t", None, "t\n", "blue", "a"), None);
    }

    #[test]
    fn the_hook_is_removed_in_the_same_invocation() {
        let start = Start {
            argv: &["teamctl".into(), "worker".into()],
            cwd: std::path::Path::new("/w"),
            env: &[],
        };
        let cmds = split_tagged("=teamctl-t", "@3", &start, "SCRIPT");
        assert_eq!(cmds.len(), 4);
        assert_eq!(
            cmds[0],
            [
                "set-hook",
                "-t",
                "=teamctl-t:",
                "after-split-window",
                "SCRIPT"
            ]
        );
        assert_eq!(cmds[1][0], "split-window");
        assert_eq!(
            cmds[2],
            ["set-hook", "-u", "-t", "=teamctl-t:", "after-split-window"]
        );
        assert_eq!(cmds[2], unhook("=teamctl-t"));
        assert_eq!(cmds[3][0], "select-layout");
    }

    #[test]
    fn only_the_new_pane_with_the_right_tag_counts_as_tagged() {
        let (p, ok) = parse_split("%5 123 @2\nteamctl-tagged %5 ann@t\n", "ann@t").unwrap();
        assert_eq!(
            (p.pane.as_str(), p.pid, p.window.as_str()),
            ("%5", 123, "@2")
        );
        assert!(ok);
        let (_, ok) = parse_split("%5 123 @2\nteamctl-tagged %0 ann@t\n", "ann@t").unwrap();
        assert!(!ok, "another pane was the hook's target");
        let (_, ok) = parse_split("%5 123 @2\n", "ann@t").unwrap();
        assert!(!ok, "the hook did not run");
        let (_, ok) = parse_split("%5 123 @2\nteamctl-tagged %5 bob@t\n", "ann@t").unwrap();
        assert!(!ok);
        assert!(parse_split("", "ann@t").is_none());
    }
}
