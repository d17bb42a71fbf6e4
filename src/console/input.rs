//! What a line typed at the leader console means: `@NAME text`, `@* text`, or a `/command`.
//! Pure parsing, so every rule is unit-tested; names are checked by the caller against the
//! team (and by `domain::Name`).

/// One typed line, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// `@NAME text` or `@* text`.
    Send {
        to: String,
        text: String,
    },
    Status,
    Shutdown(String),
    /// `/approve NAME`: `teamctl plan approve NAME`.
    Approve(String),
    /// `/reject NAME feedback...`: `teamctl plan reject NAME --feedback TEXT`.
    Reject {
        name: String,
        feedback: String,
    },
    Tasks,
    Help,
    Quit,
    /// A blank line.
    Nothing,
}

/// The console's help text.
pub const HELP: &str = "\
@NAME text      send text to NAME (as team-lead)
@* text         send text to every teammate
/status         the status table
/shutdown NAME  ask NAME to stop (its pane closes when it answers)
/approve NAME   approve NAME's pending plan
/reject NAME text  reject NAME's pending plan, text saying what to change
/tasks          the task list
/help           this help
/quit           leave the console (teammates keep running)";

/// Understand one line, or say what is wrong with it.
pub fn parse(line: &str) -> Result<Input, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(Input::Nothing);
    }
    if let Some(rest) = line.strip_prefix('@') {
        let (to, text) = split_word(rest);
        if to.is_empty() {
            return Err("write @NAME then the message, e.g. `@bob look at the auth module`".into());
        }
        if text.is_empty() {
            return Err(format!(
                "nothing to send to {to}: write `@{to} your message`"
            ));
        }
        return Ok(Input::Send {
            to: to.to_string(),
            text: text.to_string(),
        });
    }
    if let Some(rest) = line.strip_prefix('/') {
        let (cmd, arg) = split_word(rest);
        return match (cmd, arg) {
            ("status" | "s", "") => Ok(Input::Status),
            ("tasks" | "t", "") => Ok(Input::Tasks),
            ("help" | "h" | "?", _) => Ok(Input::Help),
            ("quit" | "q" | "exit", "") => Ok(Input::Quit),
            ("shutdown", "") => Err("/shutdown needs a name: /shutdown NAME".into()),
            ("shutdown", name) if !name.contains(char::is_whitespace) => {
                Ok(Input::Shutdown(name.to_string()))
            }
            ("shutdown", _) => Err("/shutdown takes one name: /shutdown NAME".into()),
            ("approve", "") => Err("/approve needs a name: /approve NAME".into()),
            ("approve", name) if !name.contains(char::is_whitespace) => {
                Ok(Input::Approve(name.to_string()))
            }
            ("approve", _) => Err("/approve takes one name: /approve NAME".into()),
            ("reject", rest) => match split_word(rest) {
                ("", _) => Err("/reject needs a name and what to change: /reject NAME TEXT".into()),
                (name, "") => Err(format!(
                    "say what {name} should change: /reject {name} TEXT"
                )),
                (name, feedback) => Ok(Input::Reject {
                    name: name.to_string(),
                    feedback: feedback.to_string(),
                }),
            },
            ("status" | "s" | "tasks" | "t" | "quit" | "q" | "exit", _) => {
                Err(format!("/{cmd} takes no argument"))
            }
            _ => Err(format!("unknown command /{cmd}; /help lists them")),
        };
    }
    Err("to send, start the line with @NAME (or @* for everyone); /help lists the commands".into())
}

fn split_word(s: &str) -> (&str, &str) {
    match s.split_once(char::is_whitespace) {
        Some((a, b)) => (a, b.trim()),
        None => (s, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        assert_eq!(
            parse("@bob look at  the auth module "),
            Ok(Input::Send {
                to: "bob".into(),
                text: "look at  the auth module".into()
            })
        );
        assert_eq!(
            parse("@* stand up"),
            Ok(Input::Send {
                to: "*".into(),
                text: "stand up".into()
            })
        );
        assert!(parse("@bob").is_err());
        assert!(parse("@ hi").is_err());
        assert!(parse("hello").is_err());
    }

    #[test]
    fn commands() {
        assert_eq!(parse("/status"), Ok(Input::Status));
        assert_eq!(parse("  "), Ok(Input::Nothing));
        assert_eq!(parse("/shutdown bob"), Ok(Input::Shutdown("bob".into())));
        assert!(parse("/shutdown").is_err());
        assert!(parse("/shutdown a b").is_err());
        assert_eq!(parse("/approve bob"), Ok(Input::Approve("bob".into())));
        assert!(parse("/approve").is_err());
        assert!(parse("/approve a b").is_err());
        assert_eq!(
            parse("/reject bob  add  tests "),
            Ok(Input::Reject {
                name: "bob".into(),
                feedback: "add  tests".into()
            })
        );
        assert!(parse("/reject").is_err());
        assert!(parse("/reject bob").is_err());
        assert_eq!(parse("/tasks"), Ok(Input::Tasks));
        assert_eq!(parse("/help"), Ok(Input::Help));
        assert_eq!(parse("/quit"), Ok(Input::Quit));
        assert!(parse("/status now").is_err());
        assert!(parse("/frobnicate").is_err());
    }
}
