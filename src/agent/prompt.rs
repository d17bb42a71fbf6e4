//! The team prompt: what a preset agent is told about itself, its team and teamctl, on top of
//! the user's own `--prompt`. Pure text building.

/// The most teammates the prompt names.
const MAX_NAMED: usize = 40;

/// Who the prompt is for.
#[derive(Debug, Clone)]
pub struct TeamPrompt<'a> {
    pub team: &'a str,
    pub description: &'a str,
    pub name: &'a str,
    pub leader: &'a str,
    /// The other teammates (not the leader, not this one) as the prompt is made.
    pub teammates: &'a [String],
    /// An interactive agent (`spawn --interactive`): its prompt is made once, as it starts,
    /// and a shutdown is not put to it as a turn.
    pub interactive: bool,
    /// Whether the agent can run `teamctl` from a shell tool (`Preset::runs_teamctl`): if not,
    /// the prompt says its answers are all it has.
    pub runs_teamctl: bool,
    /// The user's `--prompt`, if any.
    pub instructions: Option<&'a str>,
}

impl TeamPrompt<'_> {
    pub fn render(&self) -> String {
        let (name, leader, team) = (self.name, self.leader, self.team);
        let mut s = format!(
            "You are {name}, a teammate in the team \"{team}\" (your id: {name}@{team}). The team is run by teamctl; {leader} leads it.\n"
        );
        if !self.description.trim().is_empty() {
            s.push_str(&format!(
                "The team's purpose: {}\n",
                self.description.trim()
            ));
        }
        // A list as of now: teammates join and leave later (and an interactive agent's prompt
        // is never made again), so the prompt points to where the current one is.
        let now = if self.runs_teamctl {
            "`teamctl status` shows who is in the team now"
        } else {
            "the leader knows who is in the team now"
        };
        if self.teammates.is_empty() {
            s.push_str(&format!(
                "When this was written you had no other teammates; others may join: {now}.\n"
            ));
        } else {
            // Named up to a bound: the prompt travels in an argument, and in the one message
            // tmux takes an interactive pane's command in (a thousand names would not fit).
            let shown = self.teammates.len().min(MAX_NAMED);
            let mut names = self.teammates[..shown].join(", ");
            if shown < self.teammates.len() {
                names.push_str(&format!(" and {} more", self.teammates.len() - shown));
            }
            s.push_str(&format!(
                "Your teammates when this was written: {names}; others may join or leave: {now}.\n"
            ));
        }
        s.push_str(
            "\nEach message sent to you arrives as one turn of this conversation. What you answer at the end of the turn goes back to whoever sent the message, so just answer; no need to send it.\n",
        );
        if self.runs_teamctl {
            s.push_str(&format!(
                "\nUse the `teamctl` command with your shell tool to work with the team (your team and name are already set in the environment):\n\
- `teamctl send NAME \"text\"`: message a teammate, or {leader}; `teamctl send '*' \"text\"` messages everyone.\n\
- `teamctl send {leader} \"question\"`: ask the leader when you are blocked or need a decision.\n\
- `teamctl inbox`: read your unread messages.\n\
- `teamctl task list`, `teamctl task claim [ID]`, `teamctl task done ID`: the shared task list; claim a task before working on it, mark it done when finished.\n\
- `teamctl status`: who is working and who is idle.\n\
\n{shutdown}\n",
                shutdown = self.shutdown()
            ));
        } else {
            s.push_str(&format!(
                "\nShell commands are not run for you here, so you cannot use teamctl or message anyone yourself: your answer is how you reach the team. If you are blocked or need a decision from {leader}, say so in your answer.\n\
\nA shutdown request from {leader} also arrives as a turn: finish up and end your turn, and you will be stopped.\n"
            ));
        }
        s.push_str(
            "Do not answer a teammate's reply just to acknowledge it: messages that need no answer end there.\n",
        );
        // Who sent a message is the frame's header, never what its text says (attacker QA).
        s.push_str(crate::domain::interactive::FRAMING_NOTE);
        if self.interactive {
            s.push_str(crate::domain::interactive::FRAMING_NOTE_INTERACTIVE);
        }
        if let Some(i) = self.instructions.filter(|i| !i.trim().is_empty()) {
            s.push_str(&format!("\nYour instructions:\n{}\n", i.trim()));
        }
        s
    }
}

impl TeamPrompt<'_> {
    /// What a shutdown request means for this agent.
    fn shutdown(&self) -> String {
        let leader = self.leader;
        if self.interactive {
            format!(
                "When {leader} shuts you down you are not asked: teamctl approves the request between your turns (never during one) and closes this session."
            )
        } else {
            format!(
                "A shutdown request from {leader} also arrives as a turn. If you must not stop yet, refuse with `teamctl shutdown-response reject --reason \"why\"`; otherwise finish up and end your turn, and you will be stopped."
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_member_the_leader_the_teammates_and_the_commands() {
        let mates = vec!["alice".to_string(), "carol".to_string()];
        let p = TeamPrompt {
            team: "t1",
            description: "ship it",
            name: "bob",
            leader: "team-lead",
            teammates: &mates,
            interactive: false,
            runs_teamctl: true,
            instructions: Some("review code"),
        }
        .render();
        for needle in [
            "You are bob",
            "bob@t1",
            "team-lead leads it",
            "alice, carol",
            "ship it",
            "teamctl send NAME",
            "teamctl inbox",
            "teamctl task claim",
            "teamctl shutdown-response reject",
            "review code",
            "`teamctl status` shows who is in the team now",
            "`--- begin ID ---`",
        ] {
            assert!(p.contains(needle), "{needle:?} missing from:\n{p}");
        }
    }

    #[test]
    fn an_agent_without_a_shell_is_not_offered_teamctl() {
        let p = TeamPrompt {
            team: "t1",
            description: "",
            name: "bob",
            leader: "team-lead",
            teammates: &[],
            interactive: false,
            runs_teamctl: false,
            instructions: None,
        }
        .render();
        for gone in [
            "teamctl send NAME",
            "teamctl inbox",
            "teamctl status",
            "shutdown-response",
        ] {
            assert!(!p.contains(gone), "{gone:?} in:\n{p}");
        }
        for needle in [
            "goes back to whoever sent the message",
            "cannot use teamctl",
            "A shutdown request from team-lead",
        ] {
            assert!(p.contains(needle), "{needle:?} missing from:\n{p}");
        }
    }

    #[test]
    fn a_thousand_teammates_are_counted_not_named() {
        let mates: Vec<String> = (0..1000).map(|i| format!("teammate-{i:04}")).collect();
        let p = TeamPrompt {
            team: "t1",
            description: "",
            name: "bob",
            leader: "team-lead",
            teammates: &mates,
            interactive: true,
            runs_teamctl: true,
            instructions: Some(&"x".repeat(crate::domain::member::MAX_PROMPT)),
        }
        .render();
        assert!(p.contains("teammate-0039 and 960 more"), "{p}");
        assert!(!p.contains("teammate-0040"));
        // With the longest --prompt, it fits an argument and tmux's one command message.
        assert!(p.len() < 12 * 1024, "{}", p.len());
    }

    #[test]
    fn an_interactive_agent_is_told_it_is_not_asked_to_shut_down() {
        let p = TeamPrompt {
            team: "t1",
            description: "",
            name: "bob",
            leader: "team-lead",
            teammates: &[],
            interactive: true,
            runs_teamctl: true,
            instructions: None,
        }
        .render();
        assert!(p.contains("you are not asked"), "{p}");
        assert!(!p.contains("shutdown-response reject"), "{p}");
        assert!(!p.contains("no other teammates yet"), "{p}");
        assert!(
            p.contains("`teamctl status` shows who is in the team now"),
            "{p}"
        );
    }
}
