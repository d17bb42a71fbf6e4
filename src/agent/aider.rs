//! aider's chat history file, read: the model's last message in what one turn appended to it
//! (the aider preset's reply; aider's stdout is its whole transcript). Pure.
//!
//! The format is aider's own (aider/io.py): a `# aider chat started at ...` line per run; the
//! user's message as lines `#### TEXT` and aider's own output (banners, questions and their
//! answers, token counts, commands it ran) as lines `> TEXT`, each of those ending in two spaces
//! (a markdown line break); the model's text as it came, between blank lines. aider restores a
//! conversation from the same file (`--restore-chat-history`), reading it the same way, except
//! that a line of the model's own that starts with `> ` but does not end in two spaces stays
//! the model's here (a quote in its answer).

/// The model's last message in `appended` (the text one turn added to the history file),
/// trimmed; `None` when the turn added none.
pub fn last_reply(appended: &str) -> Option<String> {
    let mut last: Option<String> = None;
    let mut current = String::new();
    let end = |current: &mut String, last: &mut Option<String>| {
        let text = current.trim();
        if !text.is_empty() {
            *last = Some(text.to_string());
        }
        current.clear();
    };
    for line in appended.split_inclusive('\n') {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        let bare = bare.strip_suffix('\r').unwrap_or(bare);
        let aiders = (bare.starts_with("> ") || bare.starts_with("#### ") || bare == "####")
            && bare.ends_with("  ");
        if aiders || bare.starts_with("# aider chat started at ") {
            end(&mut current, &mut last);
        } else {
            current.push_str(line);
        }
    }
    end(&mut current, &mut last);
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one turn appended, as aider 0.86.2 writes it.
    const TURN: &str = "\n# aider chat started at 2026-12-03 02:48:52\n\n> aider --chat-history-file x --message-file=/dev/stdin  \n> Aider v0.86.2  \n> Restored previous conversation history.  \n\n#### Message from team-lead (m1).  \n#### --- begin m1 ---  \n#### hello  \n#### --- end m1 ---  \n\nHello from the model.\n\n> A quote of mine.\n\n```bash\nteamctl send team-lead \"done\"\n```\n\n> Tokens: 10 sent, 5 received.  \n> teamctl send team-lead \"done\"  \n> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n> Running teamctl send team-lead \"done\"  \n";

    #[test]
    fn the_models_text_without_aiders_lines() {
        assert_eq!(
            last_reply(TURN).unwrap(),
            "Hello from the model.\n\n> A quote of mine.\n\n```bash\nteamctl send team-lead \"done\"\n```"
        );
    }

    #[test]
    fn the_last_of_several_answers_and_none_without_one() {
        // A reflection (aider asked the model again within the turn): the last answer.
        let two = "#### q  \n\nfirst try\n\n> The LLM did not conform to the edit format.  \n\nsecond try\n\n> Tokens: 1 sent, 1 received.  \n";
        assert_eq!(last_reply(two).unwrap(), "second try");
        // aider failed before the model answered (its error is on stdout).
        let none = "\n# aider chat started at 2026-12-03 02:48:52\n\n> Aider v0.86.2  \n\n#### q  \n> litellm.AuthenticationError: bad key  \n";
        assert_eq!(last_reply(none), None);
        assert_eq!(last_reply(""), None);
    }
}
