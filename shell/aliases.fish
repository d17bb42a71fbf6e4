# teamctl: short aliases for the everyday commands, for fish (aliases.sh is for bash and zsh;
# the two define the same names).
# Install: add to ~/.config/fish/config.fish
#     source /path/to/teamctl/shell/aliases.fish
# Note: `tc` shadows iproute2's traffic-control `tc` in interactive shells; reach that one
# with `command tc`. fish's `alias` wraps the command, so each alias completes like teamctl.

alias tc 'teamctl'
alias tcs 'teamctl status'
alias tcw 'teamctl status --watch'
alias tca 'teamctl ask'
alias tcm 'teamctl send'
alias tci 'teamctl inbox'
alias tcl 'teamctl log'
alias tcf 'teamctl log -f'
alias tcL 'teamctl lead'
alias tcn 'teamctl spawn'
alias tct 'teamctl task'
alias tctl 'teamctl task list'
alias tcj 'teamctl attach'
alias tcx 'teamctl shutdown'
alias tcr 'teamctl resume'
