//! A broadcast (`send '*'`) that reaches some members only: it is appended to each member in
//! turn, one member's failure (an odd file at its inbox lock, a full disk) not stopping the
//! rest, and the report names who got it, who did not and why, and the commands that send it
//! to those alone (a second `send '*'` would give the others it twice: new-user QA). A member
//! whose inbox took it but whose worker did not start is named the same way, with the
//! `resume` that has it handled (another send would give it that member twice).

use std::io::Write;

use crate::bus;
use crate::domain::{Body, Envelope, Name, Roster};
use crate::error::{Error, Result};
use crate::output::shell_word as word;
use crate::store::Store;

/// A member the message did not reach, or reached but did not start, and why.
pub struct Missed {
    pub name: Name,
    pub error: Error,
    /// In its inbox already: its worker did not start (a `resume` completes the broadcast).
    pub delivered: bool,
    /// In its inbox, not started on purpose: it may have died in its turn on this message or
    /// an earlier one still unhandled, which a start runs again (`leader::Woken`'s `died` and
    /// `held`), with why in a few words.
    pub held: Option<String>,
}

/// What a retry repeats of the command line: the options that made the message.
pub struct Retry {
    pub summary: Option<String>,
    pub structured: Option<String>,
}

/// A text longer than this is not printed back in a retry command: it is piped in again.
const LONGEST_QUOTED: usize = 2000;

/// `env` appended to whom it goes to (`bus::deliver_in`); for a broadcast, to each member
/// whose inbox takes it, the others returned with their error. Nobody reached is the error
/// (the only recipient's own, so a one-member broadcast fails as a `send` to that one does).
pub fn deliver(
    store: &dyn Store,
    roster: &Roster,
    env: &Envelope,
) -> Result<(Vec<Name>, Vec<Missed>)> {
    if env.to != "*" {
        return Ok((bus::deliver_in(store, roster, env)?, Vec::new()));
    }
    let mut reached = Vec::new();
    let mut missed = Vec::new();
    for name in bus::recipients_in(roster, env)? {
        match store.append(&name, env) {
            Ok(()) => reached.push(name),
            Err(error) => missed.push(Missed {
                name,
                error,
                delivered: false,
                held: None,
            }),
        }
    }
    if reached.is_empty() {
        let mut missed = missed.into_iter();
        let first = missed.next().map_or_else(
            || Error::failed("the broadcast reached nobody"),
            |m| m.error,
        );
        let rest: Vec<Missed> = missed.collect();
        if rest.is_empty() {
            return Err(first);
        }
        return Err(Error::failed(format!(
            "sent to nobody: {}",
            std::iter::once(first.to_string())
                .chain(rest.iter().map(|m| format!("{}: {}", m.name, m.error)))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    Ok((reached, missed))
}

/// Say on stderr who the broadcast did not reach or did not start and why, and the command
/// that sends it to each one missed alone (its words quoted for a shell, never run through
/// one), or that starts each one it reached that did not start; the error, exit 1, names who
/// got it. `reached`: every member whose inbox has it. `home`, `team`, `me`: where and as
/// whom, as the retry must say it (the home always: pasted in a shell whose `TEAMCTL_HOME`
/// differs, it would reach another home's team of that name: attacker QA).
pub fn report(
    home: &std::path::Path,
    team: &Name,
    me: &Name,
    env: &Envelope,
    retry: &Retry,
    reached: &[Name],
    missed: &[Missed],
) -> Error {
    let mut err = std::io::stderr().lock();
    for m in missed {
        // Held: why in a few words, the commands once below for all held (QA 40: its whole
        // error, commands and all, and then the block said it again).
        let line = if let Some(why) = &m.held {
            format!(
                "teamctl: {} has it in its inbox, not started: {why}",
                m.name
            )
        } else if m.delivered {
            format!("teamctl: {} has it in its inbox, but {}", m.name, m.error)
        } else {
            format!("teamctl: not sent to {}: {}", m.name, m.error)
        };
        let _ = writeln!(err, "{}", crate::output::printable(&line));
    }
    let (unstarted, unsent): (Vec<&Missed>, Vec<&Missed>) =
        missed.iter().partition(|m| m.delivered);
    let (held, unstarted): (Vec<&Missed>, Vec<&Missed>) =
        unstarted.into_iter().partition(|m| m.held.is_some());
    let names =
        |ns: &mut dyn Iterator<Item = &Name>| ns.map(Name::as_str).collect::<Vec<_>>().join(", ");
    let got = names(&mut reached.iter());
    let not = names(&mut unsent.iter().map(|m| &m.name));
    let one = |n: usize, a: &'static str, b: &'static str| if n == 1 { a } else { b };
    let head = head(home, team, me);
    if !unsent.is_empty() {
        let (lines, piped) = commands(&head, env, retry, &unsent);
        let _ = writeln!(
            err,
            "teamctl: once that is fixed, send it to {} alone (not '*' again: {got} {} it already){}:",
            one(unsent.len(), "that member", "those members"),
            one(reached.len(), "has", "have"),
            if piped {
                ", the same text piped on stdin"
            } else {
                ""
            }
        );
        for line in lines {
            let _ = writeln!(err, "  {line}");
        }
    }
    // `resume` is the leader's: run as a teammate, the command names no `--as`.
    let head = if me.is_leader() {
        head
    } else {
        self::head(home, team, &Name::leader())
    };
    let as_leader = if me.is_leader() {
        ""
    } else {
        ", as the leader"
    };
    if !held.is_empty() {
        // Not a failed start to fix: a start would run the turn it died in again (QA 39: the
        // report said "once that is fixed, start it").
        let who = names(&mut held.iter().map(|m| &m.name));
        let _ = writeln!(
            err,
            "teamctl: {who} {} not started on purpose: a start would run the turn {} died in again. Look at that turn first (`teamctl log --worker {}`), then run it again, or skip it (that message is not run, its sender is told){as_leader}:",
            one(held.len(), "was", "were"),
            one(held.len(), "it", "each"),
            if held.len() == 1 {
                who.as_str()
            } else {
                "NAME"
            },
        );
        for m in &held {
            let name = word(m.name.as_str());
            let _ = writeln!(err, "  {head} resume {name}");
            let _ = writeln!(err, "  {head} resume {name} --skip-turn");
        }
    }
    let idle = names(&mut unstarted.iter().map(|m| &m.name));
    if !unstarted.is_empty() {
        let _ = writeln!(
            err,
            "teamctl: once that is fixed, start {} (the message waits in {} inbox; not send again: {} would get it twice){}:",
            one(unstarted.len(), "it", "them"),
            one(unstarted.len(), "its", "their"),
            one(unstarted.len(), "it", "they"),
            as_leader
        );
        for m in &unstarted {
            let _ = writeln!(err, "  {head} resume {}", word(m.name.as_str()));
        }
    }
    let total = reached.len() + unsent.len();
    let mut line = if unsent.is_empty() {
        format!("the broadcast reached all {total} members ({got})")
    } else {
        format!(
            "the broadcast reached {} of {total} members ({got}), not {not}",
            reached.len()
        )
    };
    let mut sep = if unsent.is_empty() { ", but " } else { "; " };
    if !unstarted.is_empty() {
        line.push_str(&format!("{sep}{idle} did not start"));
        sep = "; ";
    }
    if !held.is_empty() {
        line.push_str(&format!(
            "{sep}{} {} not started (dead in a turn)",
            names(&mut held.iter().map(|m| &m.name)),
            one(held.len(), "was", "were")
        ));
    }
    Error::failed(line)
}

/// `teamctl --home H --team T [--as ME]`: where and as whom a retry runs.
fn head(home: &std::path::Path, team: &Name, me: &Name) -> String {
    let mut head = format!(
        "teamctl --home {} --team {}",
        word(&home.to_string_lossy()),
        word(team.as_str())
    );
    if !me.is_leader() {
        head.push_str(&format!(" --as {}", word(me.as_str())));
    }
    head
}

/// The retry command for each member missed, and whether the text is to be piped in (too long,
/// or holding characters a terminal would obey, to be printed back).
fn commands(head: &str, env: &Envelope, retry: &Retry, missed: &[&Missed]) -> (Vec<String>, bool) {
    let (tail, piped) = match (&retry.structured, &env.body) {
        (Some(json), _) => (format!(" --structured={}", word(json)), false),
        (None, Body::Message { text, .. }) => {
            let mut tail = String::new();
            if let Some(s) = &retry.summary {
                tail.push_str(&format!(" --summary={}", word(s)));
            }
            let printable = crate::output::printable(text) == *text;
            if text.len() <= LONGEST_QUOTED && printable {
                tail.push_str(&format!(" {}", text_word(text)));
                (tail, false)
            } else {
                tail.push_str(" < FILE");
                (tail, true)
            }
        }
        (None, _) => (String::new(), false),
    };
    let lines = missed
        .iter()
        .map(|m| format!("{head} send {}{tail}", word(m.name.as_str())))
        .collect();
    (lines, piped)
}

/// A message text as `send` takes it, for a shell: one word, after `--` when it starts with
/// `-` (it would be taken for an option).
pub(crate) fn text_word(text: &str) -> String {
    let dashes = if text.starts_with('-') { "-- " } else { "" };
    format!("{dashes}{}", word(text))
}

/// `text_word` where it is plain text; otherwise `< FILE`, the text to be given on stdin: one
/// holding characters a terminal would obey is shown with them escaped, and that form pasted
/// back would send other text (attacker QA), and one too long is no word to type back.
pub(crate) fn text_or_file(text: &str) -> String {
    if text.len() <= LONGEST_QUOTED && crate::output::printable(text) == text {
        text_word(text)
    } else {
        "< FILE".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missed(names: &[&str]) -> Vec<Missed> {
        names
            .iter()
            .map(|n| Missed {
                name: Name::teammate(n).unwrap(),
                error: Error::failed("x"),
                delivered: false,
                held: None,
            })
            .collect()
    }

    fn lines(from: &str, text: &str, retry: &Retry) -> (Vec<String>, bool) {
        let env = Envelope::new(from, "*", Body::message(text, None));
        let head = head(
            std::path::Path::new("/h"),
            &Name::parse("alpha").unwrap(),
            &Name::parse(from).unwrap(),
        );
        let missed = missed(&["carol", "erin"]);
        commands(&head, &env, retry, &missed.iter().collect::<Vec<_>>())
    }

    const PLAIN: Retry = Retry {
        summary: None,
        structured: None,
    };

    #[test]
    fn a_retry_is_one_command_per_member_with_the_text_quoted() {
        let (l, piped) = lines("team-lead", "it's $HOME `x`", &PLAIN);
        assert!(!piped);
        assert_eq!(
            l,
            [
                r"teamctl --home /h --team alpha send carol 'it'\''s $HOME `x`'",
                r"teamctl --home /h --team alpha send erin 'it'\''s $HOME `x`'",
            ]
        );
        let (l, _) = lines("bob", "-x", &PLAIN);
        assert_eq!(
            l[0],
            "teamctl --home /h --team alpha --as bob send carol -- -x"
        );
        let with = Retry {
            summary: Some("s s".into()),
            structured: None,
        };
        let (l, _) = lines("team-lead", "hi", &with);
        assert_eq!(
            l[0],
            "teamctl --home /h --team alpha send carol --summary='s s' hi"
        );
        // A value that starts with '-' stays the option's value (attacker QA: `--summary '-rf
        // now'` was read as options), and what zsh or fish would expand is quoted.
        let dash = Retry {
            summary: Some("-rf now".into()),
            structured: None,
        };
        let (l, _) = lines("team-lead", "=ls", &dash);
        assert_eq!(
            l[0],
            "teamctl --home /h --team alpha send carol --summary='-rf now' '=ls'"
        );
        let (l, _) = lines("team-lead", "%self", &PLAIN);
        assert_eq!(l[0], "teamctl --home /h --team alpha send carol '%self'");
        let (l, _) = lines("team-lead", "a+b", &PLAIN);
        assert_eq!(l[0], "teamctl --home /h --team alpha send carol 'a+b'");
    }

    #[test]
    fn a_long_or_unprintable_text_is_piped_in_again() {
        let (l, piped) = lines("team-lead", &"a".repeat(LONGEST_QUOTED + 1), &PLAIN);
        assert!(piped);
        assert_eq!(l[0], "teamctl --home /h --team alpha send carol < FILE");
        let (l, piped) = lines("team-lead", "a\x1b]0;x\x07", &PLAIN);
        assert!(piped, "{l:?}");
    }
}
