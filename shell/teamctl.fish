# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_teamctl_global_optspecs
    string join \n team= home= as= json color= h/help
end

function __fish_teamctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_teamctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_teamctl_using_subcommand
    set -l cmd (__fish_teamctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c teamctl -n "__fish_teamctl_needs_command" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_needs_command" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_needs_command" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_needs_command" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_needs_command" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_needs_command" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "create" -d 'Make a team and lead it'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "delete" -d 'Stop every teammate and remove the team'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "up" -d 'Bring up the team a file declares (default teamctl.toml): create, resume, spawn'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "down" -d 'Stop the team a file declares and remove it (default teamctl.toml)'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "spawn" -d 'Start a teammate'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "send" -d 'Send a message (TEXT from stdin when absent)'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "ask" -d 'Send a message and print the reply'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "inbox" -d 'Show unread messages (idle notifications only with --type or --all) and mark them read'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "status" -d 'Every member\'s state'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "wait" -d 'Block until teammates are idle or stopped'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "shutdown" -d 'Ask teammates to stop (request, response, then the pane is closed)'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "shutdown-response" -d 'Inside a turn: answer the shutdown request being handled (approve, or reject with a reason)'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "interrupt" -d 'Cancel a teammate\'s current turn; the teammate stays'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "kill" -d 'End teammates and their panes now, without a handshake (every teammate: shutdown --all --force)'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "resume" -d 'Bring back stopped or dead teammates with their identity and unread mail'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "plan" -d 'Answer plan approval requests'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "task" -d 'The shared task list'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "attach" -d 'Attach to the team\'s tmux session, focused on a teammate\'s pane'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "log" -d 'Every message of the team in time order, or one teammate\'s own log'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "doctor" -d 'Check tmux, inotify limits, stale teams, orphaned panes and processes'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "demo" -d 'Run a demo team in real tmux panes'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "lead" -d 'The leader console: live inbox, status line, @NAME messages'
complete -c teamctl -n "__fish_teamctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -s d -l description -d 'What the team is for' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l max-hops -d 'Loop guard: a message more than N agent-to-agent hops from its origin starts no turn' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l store -d 'Keep the team in a NATS JetStream server (nats://HOST:PORT, tls://...) instead of files here, so that other hosts can join it (docs/SCALE.md); `file` is the default' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand create" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l timeout -d 'Seconds (or a duration: 90s, 2m) to wait for shutdown responses' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l force -d 'Kill teammates instead of asking them to stop, and discard the work in their worktrees (uncommitted, ignored, commits on no branch) instead of refusing'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -l leave -d 'Leave a team kept on a NATS server: remove only this home\'s pointer and local directory; the team stays for the other hosts (refused while a member of this host runs)'
complete -c teamctl -n "__fish_teamctl_using_subcommand delete" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand up" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand up" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand up" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand up" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand up" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand up" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l timeout -d 'Seconds (or a duration: 90s, 2m) to wait for shutdown responses' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -l force -d 'Kill teammates instead of asking them to stop, and discard the work in their worktrees (uncommitted, ignored, commits on no branch) instead of refusing'
complete -c teamctl -n "__fish_teamctl_using_subcommand down" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l exec -d 'The agent command, run through `sh -c` for each message (message on stdin)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l agent -d 'Run a known agent CLI for each message, in one remembered session: claude, codex, gemini or aider (see docs/RECIPES.md)' -r -f -a "claude\t''
codex\t''
gemini\t''
aider\t''"
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l prompt -d 'The teammate\'s standing instructions (given to each turn as $TEAMCTL_PROMPT)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l backend -d 'Where the worker runs: a tmux pane, or a detached process (auto: tmux when installed)' -r -f -a "auto\t''
tmux\t''
process\t''"
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l cwd -d 'The directory the agent command runs in (default: the current one)' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l model -d 'The model: passed to an --agent CLI; recorded in the team file (and $TEAMCTL_MODEL)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l agent-type -d 'The kind of agent, recorded in the team file' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l plan -d 'The command that writes the plan (with --plan-mode-required)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l turn-timeout -d 'Interrupt a turn that runs longer than this: seconds (e.g. 600) or a duration (10m, 1h 30m). Default: no limit' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l max-turns -d 'Stop after N turns' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l on-shutdown -d 'Run on a shutdown request; a non-zero exit refuses, its output the reason' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l worktree -d 'Give the teammate its own git worktree (on BRANCH; default teamctl/NAME@TEAM)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l prompt-pattern -d 'With --interactive --exec: a regex matching the REPL\'s empty prompt line (the last non-blank line of the pane), e.g. \'^>>> $\'' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l plan-mode-required -d 'Run --plan before each turn and wait for the leader\'s approval'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l auto-claim -d 'Claim the next task whenever idle'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -l interactive -d 'Run the agent\'s own TUI or REPL in the pane (you can watch it and type to it); a companion pastes each message into it when it is idle'
complete -c teamctl -n "__fish_teamctl_using_subcommand spawn" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l summary -d 'A 5 to 10 word preview (default: taken from the text)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l structured -d 'A structured message as JSON (`{"type":"shutdown_request",...}`)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand send" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l timeout -d 'Seconds (or a duration: 90s, 10m) to wait for the reply' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -l raw -d 'Print the reply\'s bytes unchanged, control characters and escape sequences included (by default they are shown escaped, so a reply cannot drive the terminal)'
complete -c teamctl -n "__fish_teamctl_using_subcommand ask" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l type -d 'Only unread messages of this type (idle_notification, message...); marks nothing read' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l peek -d 'Show without marking read'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -l all -d 'Show every message, read or not, idle notifications included'
complete -c teamctl -n "__fish_teamctl_using_subcommand inbox" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -l watch -d 'A live board, redrawn on file events'
complete -c teamctl -n "__fish_teamctl_using_subcommand status" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l timeout -d 'Seconds (or a duration: 90s, 10m) to wait before giving up (exit 1); 0 looks once' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -l all -d 'Wait for every teammate'
complete -c teamctl -n "__fish_teamctl_using_subcommand wait" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l reason -d 'Why, passed on in the request' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l timeout -d 'Seconds (or a duration: 90s, 2m) to wait for the answers before giving up (exit 1)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l all -d 'Stop every teammate'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l force -d 'Kill without the handshake; with --remove-worktree, discard the work in the worktree (uncommitted, ignored, commits on no branch) instead of keeping it'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l no-wait -d 'Send the request and return; the next leader command acts on the response'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -l remove-worktree -d 'Also remove the teammate\'s git worktree'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -l reason -d 'Why (required to reject)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand shutdown-response" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand interrupt" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand interrupt" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand interrupt" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand interrupt" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand interrupt" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand interrupt" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand kill" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand kill" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand kill" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand kill" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand kill" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand kill" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l here -d 'NATS store: run the teammate here as the shared team file records it: one last started on another host (once nothing of it runs there), or one this home has no copy of what it runs for (it left and joined again)'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -l skip-turn -d 'Start each named teammate past the message it died in its turn on (one that kills its worker each time it runs): that message is not run, its sender is told so'
complete -c teamctl -n "__fish_teamctl_using_subcommand resume" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -f -a "list" -d 'Pending plan approval requests'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -f -a "approve" -d 'Approve NAME\'s pending plan'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -f -a "reject" -d 'Reject NAME\'s pending plan with feedback'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and not __fish_seen_subcommand_from list approve reject help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from list" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from list" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from list" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from list" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from list" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -l request -d 'Only if the pending plan is this request (the id `plan list` shows): the plan read is the plan approved, never one sent again since' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from approve" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l feedback -d 'What to change, sent back to the teammate' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l request -d 'Only if the pending plan is this request (the id `plan list` shows)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from reject" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "list" -d 'Pending plan approval requests'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "approve" -d 'Approve NAME\'s pending plan'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "reject" -d 'Reject NAME\'s pending plan with feedback'
complete -c teamctl -n "__fish_teamctl_using_subcommand plan; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "add" -d 'Add a task'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "list" -d 'Every task, grouped by status'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "show" -d 'One task'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "claim" -d 'Claim a task (the first claimable one without ID)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "update" -d 'Change a task\'s status or owner'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "done" -d 'Mark a task completed'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and not __fish_seen_subcommand_from add list show claim update done help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -s d -l description -d 'More detail' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l blocked-by -d 'Tasks that must be completed before this one can be claimed' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l owner -d 'Give the task to this member (it is sent a task_assignment)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from list" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from list" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from list" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from list" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from list" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from show" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from show" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from show" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from show" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from show" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from claim" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from claim" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from claim" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from claim" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from claim" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from claim" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l status -d 'The new status (done, todo and doing are taken for completed, pending and in_progress)' -r -f -a "pending\t''
in_progress\t''
completed\t''
failed\t''"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l owner -d 'Give the task to this member (it is sent a task_assignment); "" removes the owner' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l blocked-by -d 'Add blockers: tasks that must be completed first (a cycle is refused)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from update" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -l result -d 'What came of it' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from done" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a task'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "list" -d 'Every task, grouped by status'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "show" -d 'One task'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "claim" -d 'Claim a task (the first claimable one without ID)'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "update" -d 'Change a task\'s status or owner'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "done" -d 'Mark a task completed'
complete -c teamctl -n "__fish_teamctl_using_subcommand task; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c teamctl -n "__fish_teamctl_using_subcommand attach" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand attach" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand attach" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand attach" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand attach" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand attach" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l from -d 'Only messages from this member' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l to -d 'Only messages to this member' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l type -d 'Only messages of this type (message, idle_notification, shutdown_request...)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l worker -d 'A teammate\'s own log instead: its worker\'s notes and its turns\' output (-f follows it)' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -s n -l lines -d 'Only the last N messages (with --worker: lines of its log) first, as `tail -n`; default: all' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -s f -l follow -d 'Keep printing messages as they arrive; with --worker, follow the teammate\'s log'
complete -c teamctl -n "__fish_teamctl_using_subcommand log" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -l fix -d 'Clean up what was found'
complete -c teamctl -n "__fish_teamctl_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand completions" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand completions" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand completions" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand completions" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand completions" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand completions" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -l stop -d 'Stop the demo team and remove it'
complete -c teamctl -n "__fish_teamctl_using_subcommand demo" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand lead" -l team -d 'The team (default: the one created last) [env: TEAMCTL_TEAM]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand lead" -l home -d 'State directory (default: ${XDG_STATE_HOME:-~/.local/state}/teamctl) [env: TEAMCTL_HOME]' -r -f -a "(__teamctl_dirs)"
complete -c teamctl -n "__fish_teamctl_using_subcommand lead" -l as -d 'Act as this member (the sender) [env: TEAMCTL_AGENT_NAME] [default: team-lead; inside a teammate\'s turn (TEAMCTL_AGENT_ID set), that teammate and no one else]' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand lead" -l color -d 'Colour output: auto, always, never. With `spawn`, a colour name (blue, green...) is the new teammate\'s colour instead' -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n "__fish_teamctl_using_subcommand lead" -l json -d 'Machine-readable output on stdout'
complete -c teamctl -n "__fish_teamctl_using_subcommand lead" -s h -l help -d 'Print help'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "create" -d 'Make a team and lead it'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "delete" -d 'Stop every teammate and remove the team'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "up" -d 'Bring up the team a file declares (default teamctl.toml): create, resume, spawn'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "down" -d 'Stop the team a file declares and remove it (default teamctl.toml)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "spawn" -d 'Start a teammate'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "send" -d 'Send a message (TEXT from stdin when absent)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "ask" -d 'Send a message and print the reply'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "inbox" -d 'Show unread messages (idle notifications only with --type or --all) and mark them read'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "status" -d 'Every member\'s state'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "wait" -d 'Block until teammates are idle or stopped'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "shutdown" -d 'Ask teammates to stop (request, response, then the pane is closed)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "shutdown-response" -d 'Inside a turn: answer the shutdown request being handled (approve, or reject with a reason)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "interrupt" -d 'Cancel a teammate\'s current turn; the teammate stays'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "kill" -d 'End teammates and their panes now, without a handshake (every teammate: shutdown --all --force)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "resume" -d 'Bring back stopped or dead teammates with their identity and unread mail'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "plan" -d 'Answer plan approval requests'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "task" -d 'The shared task list'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "attach" -d 'Attach to the team\'s tmux session, focused on a teammate\'s pane'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "log" -d 'Every message of the team in time order, or one teammate\'s own log'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "doctor" -d 'Check tmux, inotify limits, stale teams, orphaned panes and processes'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "completions" -d 'Print a shell completion script'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "demo" -d 'Run a demo team in real tmux panes'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "lead" -d 'The leader console: live inbox, status line, @NAME messages'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and not __fish_seen_subcommand_from create delete up down spawn send ask inbox status wait shutdown shutdown-response interrupt kill resume plan task attach log doctor completions demo lead help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "list" -d 'Pending plan approval requests'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "approve" -d 'Approve NAME\'s pending plan'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from plan" -f -a "reject" -d 'Reject NAME\'s pending plan with feedback'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from task" -f -a "add" -d 'Add a task'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from task" -f -a "list" -d 'Every task, grouped by status'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from task" -f -a "show" -d 'One task'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from task" -f -a "claim" -d 'Claim a task (the first claimable one without ID)'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from task" -f -a "update" -d 'Change a task\'s status or owner'
complete -c teamctl -n "__fish_teamctl_using_subcommand help; and __fish_seen_subcommand_from task" -f -a "done" -d 'Mark a task completed'
complete -c teamctl -n 'contains -- (commandline -opc)[-1] --team' -l team -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n 'contains -- (commandline -opc)[-1] --as' -l as -r -f -a '(__teamctl_dynamic)'
complete -c teamctl -n 'contains -- (commandline -opc)[-1] --color' -l color -r -f -a '(__teamctl_dynamic)'

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
            test "$out[1]" = '#teamctl-complete 1'; or return 1
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
