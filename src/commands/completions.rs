//! `teamctl completions SHELL`: generated from the clap definition, without the hidden
//! commands (clap_complete would offer the internal `worker`), and for bash, zsh and fish a
//! wrapper that first asks `teamctl __complete` (teammate names, task ids, teams, option
//! values from the current team) and takes its answer, even an empty one, where it knows what
//! the word takes (exit 0); elsewhere the generated completion.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionsArgs};
use crate::error::{Error, Result};

pub fn run(args: &CompletionsArgs) -> Result<()> {
    let full = Cli::command();
    let mut cmd = clap::Command::new("teamctl")
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "teamctl", &mut out);
    let mut script = String::from_utf8_lossy(&out).into_owned();
    if args.shell == Shell::Fish {
        script = fish_values(&script);
        // Typed before the subcommand (`teamctl --team <TAB>`), a global option's value has
        // no entry whose condition holds (the generated one asks argparse, which fails on an
        // option still without its value): one for each, only right after the option.
        for arg in full.get_arguments().filter(|a| a.is_global_set()) {
            if let Some(long) = arg.get_long()
                && super::complete::TEAM_VALUES.contains(&format!("--{long}").as_str())
            {
                script.push_str(&format!(
                    "complete -c teamctl -n 'contains -- (commandline -opc)[-1] --{long}' -l {long} -r -f -a '(__teamctl_dynamic)'\n"
                ));
            }
        }
    }
    crate::out!("{}", with_dynamic(args.shell, script)?);
    Ok(())
}

/// The generated script with the dynamic candidates in front of it.
fn with_dynamic(shell: Shell, script: String) -> Result<String> {
    let missing =
        || Error::failed("the generated completion script changed shape; update completions.rs");
    Ok(match shell {
        Shell::Bash => {
            let at = script.find("_teamctl() {").ok_or_else(missing)?;
            let (head, tail) = script.split_at(at);
            format!(
                "{head}_teamctl_static() {{{}\n{BASH}",
                &tail["_teamctl() {".len()..]
            )
        }
        Shell::Zsh => {
            let at = script.find("\n_teamctl() {").ok_or_else(missing)?;
            let footer = script
                .find("if [ \"$funcstack[1]\" = \"_teamctl\" ]")
                .ok_or_else(missing)?;
            format!(
                "{}\n_teamctl_static() {{{}{ZSH}\n{}",
                &script[..at],
                &script[at + "\n_teamctl() {".len()..footer],
                &script[footer..]
            )
        }
        Shell::Fish => format!("{script}{FISH}"),
        _ => script,
    })
}

/// fish: each option whose value `teamctl __complete` knows (`complete::TEAM_VALUES`: a team,
/// a member, a task id, a message type) completes from it alone. fish completes an option's
/// value only from that option's own entries, and clap's `-r` without `-f` lets it offer file
/// names there (QA: `--team`, `--as`, `--owner` offered the directory's files).
fn fish_values(script: &str) -> String {
    let dynamic = " -a '(__teamctl_dynamic)'";
    script
        .split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches('\n');
            // `complete -c teamctl -n "COND" [-s X] -l LONG -d 'HELP' -r`: LONG is the first
            // word after the last ` -l ` before the help text (which may hold anything).
            let long = body
                .split(" -d '")
                .next()
                .and_then(|head| head.rsplit_once(" -l "))
                .and_then(|(_, rest)| rest.split_whitespace().next());
            let ours = long
                .is_some_and(|l| super::complete::TEAM_VALUES.contains(&format!("--{l}").as_str()));
            if ours && body.ends_with(" -r") {
                format!("{body} -f{dynamic}\n")
            } else if ours && body.ends_with(" -r -f") {
                format!("{body}{dynamic}\n")
            } else {
                line.to_string()
            }
        })
        .collect()
}

const BASH: &str = r#"
# Teammate names, task ids, teams and option values from the current team: where `teamctl
# __complete` knows what the word takes (exit 0), what it prints and nothing else, no file
# names either; else the generated completion above, with options only after a `-` (all of
# them offered put their common start, a lone `-`, in the line).
_teamctl() {
    local found
    if found=$(command teamctl __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null); then
        COMPREPLY=()
        if [ -n "$found" ]; then
            mapfile -t COMPREPLY <<<"$found"
        else
            compopt +o default +o bashdefault 2>/dev/null
        fi
        return 0
    fi
    _teamctl_static "$@"
    if [[ $2 != -* ]]; then
        local -a kept=()
        local c
        for c in "${COMPREPLY[@]}"; do
            [[ $c == -* ]] || kept+=("$c")
        done
        COMPREPLY=("${kept[@]}")
    fi
}
"#;

const ZSH: &str = r#"
# Teammate names, task ids, teams and option values from the current team: where `teamctl
# __complete` knows what the word takes (exit 0), what it prints and nothing else, no file
# names either; else the generated completion above.
_teamctl() {
    local out
    local -a found
    if out=$(command teamctl __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null); then
        found=("${(@f)out}")
        found=(${found:#})
        (( ${#found} )) || return 1
        compadd -a found
        return 0
    fi
    _teamctl_static "$@"
}
"#;

const FISH: &str = r"
# Teammate names, task ids, teams and option values from the current team: where `teamctl
# __complete` knows what the word takes (exit 0), what it prints and no file names (an
# option's value, such as `--team`'s or `--as`'s, from its own entry above); elsewhere the
# completions above. In the `--team=VALUE` form fish asks the option's own entry for the
# VALUE and puts `--team=` back: asked as `--team VALUE`.
function __teamctl_dynamic
    set -l words (commandline -opc)
    set -l current (commandline -ct)
    if string match -qr -- '^--[^=]+=' $current
        set current (string split -m1 = -- $current)
    end
    command teamctl __complete -- $words[2..-1] $current 2>/dev/null
end
complete -c teamctl -f -n '__teamctl_dynamic >/dev/null' -a '(__teamctl_dynamic)'
";
