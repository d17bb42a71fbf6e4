//! The teammates a command that ends or cuts short (`kill`, `shutdown`, `interrupt`) names:
//! every name checked before any is acted on (one that names no teammate acts on none, exit
//! 2, with what was most likely meant: `mistaken::to_end`), each taken once, in the order given.

use crate::domain::{LEADER, Name, TeamConfig};
use crate::error::Result;

/// `given`, checked against `config` for `verb` (`kill`, `shutdown`, `interrupt`); `doing`:
/// the verb as the leader's refusal says it ("shut down").
pub fn teammates(
    ctx: &crate::context::Ctx,
    config: &TeamConfig,
    given: &[String],
    verb: &str,
    doing: &str,
) -> Result<Vec<Name>> {
    let mut names: Vec<Name> = Vec::new();
    // Names that are no member, each said in the one refusal (not the first alone).
    let mut unknown: Vec<&str> = Vec::new();
    // Each taken once, looked up in a set (a list's `contains` made 96k names take 7.6 s).
    let mut seen = std::collections::HashSet::new();
    for word in given {
        let hint = |e| super::mistaken::to_end(ctx, verb, word, e);
        let name = Name::teammate_to_end(word, doing).map_err(hint)?;
        // A spelling of the leader's name (`Team-Lead`, `team_lead`) that is no member gets
        // the leader's words, not a suggestion of the leader that is then refused (new-user
        // QA 42; no teammate may look like the leader: `spawn`).
        let known = config.member(name.as_str()).is_some();
        if !known && name.looks_like(&Name::leader()) {
            return Err(hint(Name::teammate_to_end(LEADER, doing).unwrap_err()));
        }
        if !seen.insert(name.clone()) {
            continue;
        }
        if known {
            names.push(name);
        } else {
            unknown.push(word);
        }
    }
    match unknown[..] {
        [] => Ok(names),
        [word] => Err(super::mistaken::to_end(
            ctx,
            verb,
            word,
            config.unknown(word),
        )),
        ref several => Err(config.unknown_all(several)),
    }
}

/// `--json` of a command that took `given`: the object for one name given, as before several
/// could be; a list (in the order named) for several, the same name twice included (new-user
/// QA: `kill c c` printed an object, so the shape hung on the names, not on the call).
pub fn print_json(ctx: &crate::context::Ctx, given: &[String], mut each: Vec<serde_json::Value>) {
    match (given.len(), each.len()) {
        (1, 1) => ctx.print_json(&each.remove(0)),
        _ => ctx.print_json(&serde_json::Value::Array(each)),
    }
}
