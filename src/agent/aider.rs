//! aider's LLM history file (`--llm-history-file`), read: the model's last answer in one turn's
//! record, exactly as the model sent it (the aider preset's reply; aider's stdout is its whole
//! transcript). Pure.
//!
//! The format is aider's own (aider 0.86.2, `InputOutput.log_llm_history`): for each request to
//! the main model, a header line `TO LLM TIMESTAMP` and the messages sent, then a header line
//! `LLM RESPONSE TIMESTAMP` and the answer, every line of it written as `ASSISTANT LINE` (an
//! empty answer: one empty line); TIMESTAMP is `YYYY-MM-DDTHH:MM:SS`. aider writes the response
//! record after every request, also one that failed, so the record of a turn ends with its last
//! answer. aider's own output (questions, commit messages its weak model wrote, lint and test
//! output) is never there: the chat history file, where it sits between the model's words
//! unmarked, is not read for the reply.

/// The model's last answer in `record` (what one turn wrote to the LLM history file): the
/// lines of the response record that ends it, each without its `ASSISTANT ` mark, joined by
/// newlines. `None` when the record does not end with a response, or with an empty one (the
/// request failed: aider said why on its stdout).
///
/// Only the end is read: the requests before hold the conversation, whose texts (a teammate's
/// message among them) may have lines of any shape when aider sends a message in parts. The
/// answer's own lines are all marked, so none of them can end it early.
pub fn last_reply(record: &str) -> Option<String> {
    let body = record.strip_suffix('\n')?;
    let mut said = Vec::new();
    for line in body.rsplit('\n') {
        if let Some(text) = line.strip_prefix("ASSISTANT ") {
            said.push(text);
        } else if !said.is_empty() && is_header(line, "LLM RESPONSE") {
            said.reverse();
            return Some(said.join("\n"));
        } else {
            return None;
        }
    }
    None
}

/// Whether `line` is a header of aider's LLM history: `ROLE YYYY-MM-DDTHH:MM:SS`.
fn is_header(line: &str, role: &str) -> bool {
    let Some(stamp) = line
        .strip_prefix(role)
        .and_then(|rest| rest.strip_prefix(' '))
    else {
        return false;
    };
    let shape = "dddd-dd-ddTdd:dd:dd";
    stamp.len() == shape.len()
        && stamp.bytes().zip(shape.bytes()).all(|(c, s)| match s {
            b'd' => c.is_ascii_digit(),
            s => c == s,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One turn's record, as aider 0.86.2 writes it: a request answered with a commented
    /// SEARCH/REPLACE edit.
    const TURN: &str = "TO LLM 2026-12-03T02:48:52\n-------\nSYSTEM Act as an expert software developer.\nSYSTEM \nSYSTEM Always use best practices.\n-------\nUSER Message from team-lead (m1).\nUSER --- begin m1 ---\nUSER hello\nUSER --- end m1 ---\nLLM RESPONSE 2026-12-03T02:48:53\nASSISTANT Hello from the model.\nASSISTANT \nASSISTANT > A quote of mine.  \nASSISTANT \nASSISTANT ```bash\nASSISTANT teamctl send team-lead \"done\"\nASSISTANT ```\n";

    #[test]
    fn the_models_answer_as_it_sent_it() {
        assert_eq!(
            last_reply(TURN).unwrap(),
            "Hello from the model.\n\n> A quote of mine.  \n\n```bash\nteamctl send team-lead \"done\"\n```"
        );
    }

    #[test]
    fn the_last_of_several_answers() {
        // A reflection (aider asked the model again within the turn): the last answer.
        let two = format!(
            "{TURN}TO LLM 2026-12-03T02:48:54\n-------\nUSER fix it\nLLM RESPONSE 2026-12-03T02:48:55\nASSISTANT second try\n"
        );
        assert_eq!(last_reply(&two).unwrap(), "second try");
    }

    #[test]
    fn lines_that_look_like_the_records_own_stay_the_models() {
        let tricky = "LLM RESPONSE 2026-12-03T02:48:55\nASSISTANT USER hi\nASSISTANT LLM RESPONSE 2026-01-01T00:00:00\nASSISTANT ASSISTANT x\nASSISTANT TO LLM 2026-01-01T00:00:00\nASSISTANT -------\n";
        assert_eq!(
            last_reply(tricky).unwrap(),
            "USER hi\nLLM RESPONSE 2026-01-01T00:00:00\nASSISTANT x\nTO LLM 2026-01-01T00:00:00\n-------"
        );
    }

    #[test]
    fn none_without_an_answer_at_the_end() {
        // The request failed (aider writes an empty response): no answer, not an earlier one.
        let failed = format!(
            "{TURN}TO LLM 2026-12-03T02:48:54\n-------\nUSER again\nLLM RESPONSE 2026-12-03T02:48:55\n\n"
        );
        assert_eq!(last_reply(&failed), None);
        // A request with no response after it (aider stopped writing the record).
        let unanswered = format!("{TURN}TO LLM 2026-12-03T02:48:54\n-------\nUSER again\n");
        assert_eq!(last_reply(&unanswered), None);
        // A response header inside a request's text (a message sent in parts, its lines
        // unmarked), the real response missing: not taken for one.
        let forged = "TO LLM 2026-12-03T02:48:54\n-------\nUSER text: a\nLLM RESPONSE 2026-12-03T02:48:55\nASSISTANT forged\nUSER cache_control: {}\n";
        assert_eq!(last_reply(forged), None);
        // Marked lines with no header above them, a header of another kind, a cut last line.
        assert_eq!(last_reply("ASSISTANT x\n"), None);
        assert_eq!(
            last_reply("TO LLM 2026-12-03T02:48:54\nASSISTANT x\n"),
            None
        );
        assert_eq!(
            last_reply("LLM RESPONSE 2026-12-03T02:48:55\nASSISTANT x"),
            None
        );
        assert_eq!(last_reply("LLM RESPONSE yesterday\nASSISTANT x\n"), None);
        assert_eq!(last_reply(""), None);
    }
}
