//! What a command refused for the teammate it names most likely meant (new-user QA): for
//! `send`, an unquoted `*` the shell expanded to the names of the files here (`send * hi` ran
//! as `send notes.txt hi`), or a file's name where its contents were meant; for `send` and
//! `ask`, the name and the text typed the other way round (`send hi bob`, `ask hello bob`);
//! for `shutdown` and `kill`, everyone (`'*'`, `all`) where they take `--all` or one name.
//! Each hint is added to the refusal (exit 2, nothing sent); the words are quoted for a shell
//! when shown, never run through one.

use std::path::Path;

use crate::context::Ctx;
use crate::domain::{LEADER, Name};
use crate::error::Error;

/// Words a user types for "everyone" (`send all hi`, `shutdown all`): none names a member (a
/// member named so is taken as usual).
pub const EVERYONE: &[&str] = &[
    "all",
    "everyone",
    "everybody",
    "@all",
    "@everyone",
    "@here",
    "@channel",
];

/// Whether `word` is `*` or a word for everyone.
pub fn means_everyone(word: &str) -> bool {
    word == "*" || EVERYONE.contains(&word.to_ascii_lowercase().as_str())
}

/// A `send` refused for its recipient `to` (no member), with `words` after it (the text, or
/// the words a shell split it into): the refusal with what was meant added, when that is
/// clear. `member`: whether a name is a member of the team.
pub fn recipient(to: &str, words: &[&str], member: impl Fn(&str) -> bool, e: Error) -> Error {
    with(e, || hint(to, words, member))
}

/// `e` with `hint` added when it is the refusal of a name that is no member.
fn with(e: Error, hint: impl FnOnce() -> Option<String>) -> Error {
    match e {
        Error::BadInput(msg) if refuses_name(&msg) => match hint() {
            Some(hint) => Error::BadInput(format!("{msg}; {hint}")),
            None => Error::BadInput(msg),
        },
        e => e,
    }
}

/// Whether a refusal is of the name given: no member, or no name at all (`send "hello there"
/// bob`: the text, spaces and all, taken for a name).
fn refuses_name(msg: &str) -> bool {
    msg.starts_with("no member")
        || msg.starts_with("invalid recipient name")
        || msg.starts_with("invalid member name")
}

/// What `send TO WORDS...` meant when `to` is no member: the broadcast, when `to` is a file
/// here (with the words that are files too: the shell's list), or `send LAST REST` when the
/// last word is a member.
pub fn hint(to: &str, words: &[&str], member: impl Fn(&str) -> bool) -> Option<String> {
    if member(to) || to == "*" {
        return None;
    }
    if is_file_here(to) {
        let files = 1 + words.iter().take_while(|w| is_file_here(w)).count();
        let text = words[files - 1..].join(" ");
        let listed: Vec<String> = std::iter::once(to)
            .chain(words.iter().copied())
            .take(files.min(4))
            .map(crate::output::shell_word)
            .collect();
        let more = if files > 4 { ", ..." } else { "" };
        let text = if text.is_empty() {
            "TEXT".to_string()
        } else {
            super::broadcast::text_or_file(&text)
        };
        let quote = format!("to send to everyone, quote it: `teamctl send '*' {text}`");
        if files > 1 {
            return Some(format!(
                "{}{more} are files here: the shell put the names of the files in this directory in place of an unquoted *; {quote}",
                listed.join(", ")
            ));
        }
        // One file: its name typed where its contents were meant, or the shell's list of a
        // directory holding one file.
        let file = &listed[0];
        return Some(format!(
            "{file} is a file here, not a teammate: to send its contents, `teamctl send NAME < {file}` (or `teamctl send '*' < {file}` to everyone); if you typed an unquoted *, the shell put the names of the files here in its place: {quote}"
        ));
    }
    swapped("send", "text", to, words, member)
}

/// `VERB TO WORDS... LAST` where `to` is no member and the last word is one: the name typed
/// after the text (`send hi bob`, `ask hello there bob`): `VERB LAST 'TO WORDS...'`. `what`:
/// what the text is called.
pub fn swapped(
    verb: &str,
    what: &str,
    to: &str,
    words: &[&str],
    member: impl Fn(&str) -> bool,
) -> Option<String> {
    if member(to) {
        return None;
    }
    let (last, rest) = words.split_last()?;
    if rest.iter().any(|w| member(w)) || !member(last) {
        return None;
    }
    let text = std::iter::once(to)
        .chain(rest.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    Some(format!(
        "{last} is a member: the name comes first, then the {what}: `teamctl {verb} {last} {}`",
        super::broadcast::text_or_file(&text)
    ))
}

/// `shutdown`, `kill` or `interrupt` (`verb`) given everyone as a name (`'*'`, `all`,
/// `everyone`): what each takes, and how every teammate is stopped (`shutdown --all`,
/// `--force` to kill).
pub fn everyone_to_end(verb: &str) -> String {
    let all = "`teamctl shutdown --all` stops every teammate (each is asked and the answers waited for), `teamctl shutdown --all --force` kills them all without asking";
    match verb {
        "kill" => format!("kill takes teammates' names (`teamctl kill NAME...`); {all}"),
        "interrupt" => "interrupt takes the names of the teammates whose turns to cancel (`teamctl interrupt NAME...`); `teamctl status` shows who is working".to_string(),
        _ => {
            format!("shutdown takes teammates' names (`teamctl shutdown NAME...`) or --all: {all}")
        }
    }
}

/// `shutdown`/`kill`/`interrupt` refused for `name`: everyone given as a name gets what
/// `shutdown` and `kill` take instead (`kill '*'` was "invalid member name", `shutdown all`
/// "no member"); an agent id, `agent_id`; the leader's agent id, the leader's own refusal.
pub fn to_end(ctx: &Ctx, verb: &str, name: &str, e: Error) -> Error {
    match e {
        Error::BadInput(msg) if means_everyone(name) => {
            Error::BadInput(format!("{msg}; {}", everyone_to_end(verb)))
        }
        Error::BadInput(msg) => match split_id(name) {
            Some((member, _)) if member.looks_like(&Name::leader()) => {
                let doing = if verb == "shutdown" {
                    "shut down"
                } else {
                    verb
                };
                Name::teammate_to_end(LEADER, doing).unwrap_err()
            }
            Some(_) => agent_id(ctx, verb, name).unwrap_or(Error::BadInput(msg)),
            None => Error::BadInput(match listed(verb, name) {
                Some(hint) => format!("{msg}; {hint}"),
                None => msg,
            }),
        },
        e => e,
    }
}

/// `VERB a,b` (or `"a b"` quoted as one word): names listed in one word, each a valid name,
/// where the command takes them as words of their own (new-user QA 42: `kill bob,carol` said
/// only that a comma is not allowed).
pub fn listed(verb: &str, word: &str) -> Option<String> {
    let parts: Vec<&str> = word.split([',', ' ']).filter(|p| !p.is_empty()).collect();
    (parts.len() > 1 && parts.iter().all(|p| Name::parse(p).is_ok())).then(|| {
        format!(
            "names are separate words: `teamctl {verb} {}`",
            parts.join(" ")
        )
    })
}

/// `VERB NAME@TEAM`: an agent id where a teammate's name was meant (new-user QA: `kill bob@T`
/// said only "invalid member name"): the refusal with what to type, `teamctl VERB NAME --team
/// TEAM`, when TEAM is a team here with a teammate NAME; otherwise which of them is not there
/// (QA 36: the hint named a team or member that did not exist). None when `word` is no agent
/// id or names the leader (each command says that in its own words).
pub fn agent_id(ctx: &Ctx, verb: &str, word: &str) -> Option<Error> {
    let (member, team) = split_id(word)?;
    if member.looks_like(&Name::leader()) {
        return None;
    }
    let id = format!("{word:?} is an agent id (NAME@TEAM); {verb} takes a teammate's name");
    let config = ctx.home.resolve(Some(team.as_str())).and_then(|s| s.load());
    let why = match config {
        Err(_) if !ctx.home.teams().contains(&team) => {
            format!("{id}, and there is no team {team} in this home")
        }
        Err(e) => format!("{id}, and team {team} cannot be read: {e}"),
        Ok(config) => match config.require(member.as_str()) {
            Ok(_) => format!(
                "{verb} takes a teammate's name, not an agent id: `teamctl {verb} {member} --team {team}`"
            ),
            // Not a new teammate to spawn: the name was given as another team's.
            Err(e) => format!(
                "{id}; {}",
                e.to_string()
                    .split("; a new teammate: ")
                    .next()
                    .unwrap_or_default()
            ),
        },
    };
    Some(Error::BadInput(why))
}

/// `NAME@TEAM`, both valid names, as (name, team).
fn split_id(word: &str) -> Option<(Name, Name)> {
    let (member, team) = word.split_once('@')?;
    Some((Name::parse(member).ok()?, Name::parse(team).ok()?))
}

/// Whether `word` names a file (of any kind) in the working directory.
fn is_file_here(word: &str) -> bool {
    !word.is_empty() && !word.starts_with('-') && Path::new(word).symlink_metadata().is_ok()
}

/// `recipient` for `send`'s own refusal (`text`: the message when given on the line and
/// short), the members read from the team only on the way to the error.
pub fn in_send(ctx: &Ctx, to: &str, text: Option<&str>, e: Error) -> Error {
    if !matches!(&e, Error::BadInput(msg) if refuses_name(msg)) {
        return e;
    }
    let Ok(config) = ctx.store().and_then(|s| s.load()) else {
        return e;
    };
    let words: Vec<&str> = text.into_iter().collect();
    recipient(to, &words, |n| config.member(n).is_some(), e)
}

/// `ask NAME TEXT` refused for `NAME` (no member): `ask TEXT NAME` meant, when `TEXT`'s last
/// word is a member (`members`: the team's).
pub fn in_ask(to: &str, text: Option<&str>, config: &crate::domain::TeamConfig, e: Error) -> Error {
    let words: Vec<&str> = text.into_iter().collect();
    with(e, || {
        swapped("ask", "question", to, &words, |n| {
            config.member(n).is_some()
        })
    })
}
