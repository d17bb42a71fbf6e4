# teamctl: short aliases for the everyday commands. Works in bash and zsh.
# Install: add to ~/.bashrc or ~/.zshrc
#     source /path/to/teamctl/shell/aliases.sh
# Note: `tc` shadows iproute2's traffic-control `tc` in interactive shells; reach that one
# with `command tc` (scripts are not affected: they do not expand aliases).

alias tc='teamctl'
alias tcs='teamctl status'
alias tcw='teamctl status --watch'
alias tca='teamctl ask'
alias tcm='teamctl send'
alias tci='teamctl inbox'
alias tcl='teamctl log'
alias tcf='teamctl log -f'
alias tcL='teamctl lead'
alias tcn='teamctl spawn'
alias tct='teamctl task'
alias tctl='teamctl task list'
alias tcj='teamctl attach'
alias tcx='teamctl shutdown'
alias tcr='teamctl resume'

# bash: complete each alias as the teamctl command it stands for (`tcm <Tab>` as `teamctl send
# <Tab>`) when the teamctl completion is loaded: the words are given to it with the alias
# expanded (zsh completes aliases through their expansion already).
if [ -n "${BASH_VERSION:-}" ] && complete -p teamctl >/dev/null 2>&1; then
    _teamctl_alias() {
        local -a expansion
        read -ra expansion <<<"${BASH_ALIASES[$1]:-teamctl}"
        COMP_WORDS=("${expansion[@]}" "${COMP_WORDS[@]:1}")
        COMP_CWORD=$((COMP_CWORD + ${#expansion[@]} - 1))
        _teamctl teamctl "$2" "${COMP_WORDS[COMP_CWORD - 1]}"
    }
    complete -F _teamctl_alias -o bashdefault -o default \
        tc tcs tcw tca tcm tci tcl tcf tcL tcn tct tctl tcj tcx tcr
fi
