//! `teamctl completions SHELL`: generated from the clap definition, without the hidden
//! commands (clap_complete would offer the internal `worker`), and for bash, zsh and fish a
//! wrapper that first asks `teamctl __complete` (teammate names, task ids, teams, branches,
//! option values) and takes its answer, even an empty one, where it knows what the word takes
//! (exit 0, its answer led by `complete::MARKER`: an older `teamctl` exits 0 without it, and
//! is left to the generated completion); completes directories (exit 3) or team files (exit
//! 4) with the shell's own means; elsewhere the generated completion.

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
        // clap's directory entries call `__fish_complete_directories` with no argument: it
        // then completes the whole token, `--cwd=` included, which fish puts in front again
        // (new-user QA 48: `--cwd=<TAB>` gave `--cwd=--cwd=alpha/`).
        script = script.replace(
            "-a \"(__fish_complete_directories)\"",
            "-a \"(__teamctl_dirs)\"",
        );
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
    crate::out!(
        "{}",
        with_dynamic(args.shell, script)?.replace("@MARKER@", super::complete::MARKER)
    );
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

/// fish: each option whose value clap has no list or path for completes from `teamctl
/// __complete` alone (`complete::value_of` answers for each: a team, a member, a task id, a
/// branch, a message type, or nothing for free text). fish completes an option's value only
/// from that option's own entries, and clap's `-r` without `-f` lets it offer file names there
/// (QA: `--team`, `--as`, `--owner`, then `--summary`, `--reason`... offered the directory's
/// files).
fn fish_values(script: &str) -> String {
    let dynamic = " -a '(__teamctl_dynamic)'";
    script
        .split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches('\n');
            // `complete -c teamctl -n "COND" [-s X] -l LONG -d 'HELP' -r`: an option taking
            // a value, with nothing after `-r` (a list or a path hint puts `-a ...` or `-F`).
            if body.ends_with(" -r") {
                format!("{body} -f{dynamic}\n")
            } else if body.ends_with(" -r -f") {
                format!("{body}{dynamic}\n")
            } else {
                line.to_string()
            }
        })
        .collect()
}

const BASH: &str = r#"
# Teammate names, task ids, teams, branches and option values: where `teamctl __complete`
# knows what the word takes (exit 0, its answer led by its marker), what it prints and nothing
# else, no file names either; directories (exit 3) or team files and directories (exit 4) from
# bash itself; else the generated completion above, with options only after a `-` (all of
# them offered put their common start, a lone `-`, in the line). An older teamctl, whose
# answer has no marker, is left to the generated completion.
_teamctl() {
    local found code cur=${COMP_WORDS[COMP_CWORD]}
    # `--opt=<Tab>`: bash's words end with `=` (COMP_WORDBREAKS), the value is empty.
    [[ $cur == = ]] && cur=
    found=$(command teamctl __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
    code=$?
    if [[ $code == 0 && ( $found == '@MARKER@' || $found == '@MARKER@'$'\n'* ) ]]; then
        found=${found#'@MARKER@'}
        found=${found#$'\n'}
        COMPREPLY=()
        if [ -n "$found" ]; then
            mapfile -t COMPREPLY <<<"$found"
        else
            compopt +o default +o bashdefault 2>/dev/null
        fi
        return 0
    fi
    if [[ $code == 3 || $code == 4 ]]; then
        compopt -o filenames +o default +o bashdefault 2>/dev/null
        # Sorted, as bash lists files (the generated `complete` asks `-o nosort`).
        compopt +o nosort 2>/dev/null
        if [[ $code == 3 ]]; then
            mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -f -X '!*.toml' -- "$cur"; compgen -d -- "$cur")
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
# Teammate names, task ids, teams, branches and option values: where `teamctl __complete`
# knows what the word takes (exit 0, its answer led by its marker), what it prints and nothing
# else, no file names either; directories (exit 3) or team files and directories (exit 4) from
# zsh itself; else the generated completion above (an older teamctl's answer, which has no
# marker, too).
_teamctl() {
    local out code
    local -a found
    out=$(command teamctl __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)
    code=$?
    found=("${(@f)out}")
    if [[ $code == 0 && ${found[1]} == '@MARKER@' ]]; then
        found=("${(@)found[2,-1]}")
        found=(${found:#})
        (( ${#found} )) || return 1
        compadd -a found
        return 0
    fi
    # (`_path_files`: `_files` offers every file when none matches.)
    if [[ $code == 3 ]]; then
        [[ $PREFIX == --*=* ]] && compset -P '*='
        _path_files -/
        return
    fi
    if [[ $code == 4 ]]; then
        local ret=1
        _path_files -g '*.toml(-.)' && ret=0
        _path_files -/ && ret=0
        return ret
    fi
    _teamctl_static "$@"
}
"#;

const FISH: &str = r#"
# Teammate names, task ids, teams, branches and option values: where `teamctl __complete`
# knows what the word takes (exit 0, its answer led by its marker), what it prints and no file
# names (an option's value, such as `--team`'s or `--as`'s, from its own entry above);
# directories (exit 3) or team files and directories (exit 4) found here; elsewhere the
# completions above (an older teamctl's answer, which has no marker, too). In the
# `--team=VALUE` form fish asks the option's own entry for the VALUE and puts `--team=` back:
# asked as `--team VALUE`.
function __teamctl_dirs
    __fish_complete_directories (string replace -r -- '^--[^=]+=' '' (commandline -ct))
end
function __teamctl_dynamic
    set -l words (commandline -opc)
    set -l current (commandline -ct)
    if string match -qr -- '^--[^=]+=' $current
        set current (string split -m1 = -- $current)
    end
    set -l out (command teamctl __complete -- $words[2..-1] $current 2>/dev/null)
    switch $status
        case 0
            test "$out[1]" = '@MARKER@'; or return 1
            # An empty description: fish would repeat the option's help after each one.
            set -q out[2]; and printf '%s\t\n' $out[2..-1]
        case 3
            __fish_complete_directories $current[-1]
        case 4
            for f in $current[-1]*
                if test -d $f
                    echo $f/
                else if string match -q -- '*.toml' $f
                    echo $f
                end
            end
        case '*'
            return 1
    end
    return 0
end
complete -c teamctl -f -n '__teamctl_dynamic >/dev/null' -a '(__teamctl_dynamic)'
"#;
