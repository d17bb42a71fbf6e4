//! The team file's text built member by member: exactly the bytes `serde_json::to_vec_pretty`
//! gives for a `TeamConfig`, with where each member's object lies in them. A writer that
//! changed one member of 1,000 serialises that one and copies the others' text from the file
//! as it was (a full serialisation of a 400 KB team file was 10 M instructions, twice per
//! spawn: BENCHMARKS.md); readers find a member by its span (`Roster`). Pure.

use std::ops::Range;

use super::member::{Member, TeamConfig};

/// A team file's bytes and each member's object in them, in the file's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub bytes: Vec<u8>,
    pub spans: Vec<Range<usize>>,
}

/// Where the members' array is opened in the text of a team without members: the top-level
/// key at its indent (a newline cannot occur inside a JSON string, nor a bare quote, so this
/// is the key and nothing else).
const MEMBERS: &[u8] = b"\n  \"members\": [";

/// What one member's object is indented by inside the team file's `members` array.
const INDENT: &[u8] = b"    ";

/// One member's entry in a text to be made: its text as a text of this module holds it (an
/// entry unchanged since), or the member, to be serialised.
#[derive(Debug, Clone, Copy)]
pub enum Entry<'a> {
    Text(&'a [u8]),
    Member(&'a Member),
}

/// `config` as `serde_json::to_vec_pretty(config)` writes it, byte for byte. A member's text
/// is `reuse(i, member)` when that gives one (the member's own span of a text this module
/// made, for an entry unchanged since), else the member serialised.
pub fn render<'a>(
    config: &'a TeamConfig,
    mut reuse: impl FnMut(usize, &Member) -> Option<&'a [u8]>,
) -> serde_json::Result<Text> {
    let entries = config
        .members
        .iter()
        .enumerate()
        .map(|(i, m)| reuse(i, m).map_or(Entry::Member(m), Entry::Text));
    render_parts(&without_members(config), entries)
}

/// `config`'s own fields, its `members` empty.
pub fn without_members(config: &TeamConfig) -> TeamConfig {
    TeamConfig {
        name: config.name.clone(),
        description: config.description.clone(),
        created_at: config.created_at,
        lead_agent_id: config.lead_agent_id.clone(),
        lead_session_id: config.lead_session_id.clone(),
        members: Vec::new(),
        tmux_session: config.tmux_session.clone(),
        tmux_fill: config.tmux_fill.clone(),
        deleting: config.deleting,
        max_hops: config.max_hops,
        extra: config.extra.clone(),
    }
}

/// The team file of `head` (its `members` ignored) with `entries` as its members: what
/// `to_vec_pretty` gives for that team, byte for byte.
pub fn render_parts<'a>(
    head: &TeamConfig,
    entries: impl Iterator<Item = Entry<'a>>,
) -> serde_json::Result<Text> {
    let head = if head.members.is_empty() {
        serde_json::to_vec_pretty(head)?
    } else {
        serde_json::to_vec_pretty(&without_members(head))?
    };
    // Just after the `[` of `"members": []`.
    let open = head
        .windows(MEMBERS.len())
        .position(|w| w == MEMBERS)
        .map(|p| p + MEMBERS.len())
        .filter(|&p| head.get(p) == Some(&b']'))
        .ok_or_else(|| serde::ser::Error::custom("the team file has no members array"))?;
    let mut bytes = Vec::new();
    let mut spans = Vec::new();
    let mut own = Vec::new();
    for (i, entry) in entries.enumerate() {
        if i == 0 {
            bytes.reserve(head.len() + 512 * 1024);
            bytes.extend_from_slice(&head[..open]);
        }
        bytes.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        bytes.extend_from_slice(INDENT);
        let start = bytes.len();
        match entry {
            Entry::Text(text) => bytes.extend_from_slice(text),
            Entry::Member(m) => {
                own.clear();
                serde_json::to_writer_pretty(&mut own, m)?;
                // Pretty text at the array's depth: every line break (never inside a string)
                // indented once more.
                for chunk in own.split_inclusive(|&b| b == b'\n') {
                    bytes.extend_from_slice(chunk);
                    if chunk.ends_with(b"\n") {
                        bytes.extend_from_slice(INDENT);
                    }
                }
            }
        }
        spans.push(start..bytes.len());
    }
    if spans.is_empty() {
        return Ok(Text { bytes: head, spans });
    }
    bytes.extend_from_slice(b"\n  ");
    bytes.extend_from_slice(&head[open..]);
    Ok(Text { bytes, spans })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Name, Status, TmuxFill};

    fn team(members: usize) -> TeamConfig {
        let team = Name::parse("alpha").unwrap();
        let mut config: TeamConfig = serde_json::from_value(serde_json::json!({
            "name": "alpha", "createdAt": 1, "leadAgentId": "team-lead@alpha",
        }))
        .unwrap();
        for i in 0..members {
            let mut m = Member::leader(&team, format!("/tmp/\"q\" \u{e9}\n{i}"), i as u64);
            if i > 0 {
                m.name = Name::parse(&format!("w{i}")).unwrap();
                m.agent_id = format!("w{i}@alpha");
                m.status = Status::Idle;
                m.command = Some("echo \"members\": [] \\ done".into());
                m.agent_args = vec!["--x".into(), String::new()];
                m.pid = Some(40 + i as u32);
            }
            if i == 2 {
                m.extra.insert(
                    "fromAnotherVersion".into(),
                    serde_json::json!({"a": [1, {}], "b": []}),
                );
            }
            config.members.push(m);
        }
        config
    }

    /// Every shape of team file: the text is `to_vec_pretty`'s, and each span is one member's
    /// object (which parses back to the member).
    #[test]
    fn the_text_is_serde_jsons_byte_for_byte() {
        let mut shapes = Vec::new();
        for n in [0, 1, 2, 5] {
            shapes.push(team(n));
        }
        let mut full = team(3);
        full.description = "a \"members\": [] team\nof three".into();
        full.tmux_session = Some("teamctl-alpha".into());
        full.tmux_fill = Some(TmuxFill {
            server: Some("/tmp/s".into()),
            window: "@1".into(),
            panes: 4,
        });
        full.deleting = Some(7);
        full.max_hops = Some(3);
        full.extra.insert("zzz".into(), serde_json::json!([1, 2]));
        full.extra
            .insert("aaa".into(), serde_json::json!({"members": []}));
        shapes.push(full);
        for config in shapes {
            let want = serde_json::to_vec_pretty(&config).unwrap();
            let text = render(&config, |_, _| None).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&text.bytes),
                String::from_utf8_lossy(&want)
            );
            assert_eq!(text.spans.len(), config.members.len());
            for (span, m) in text.spans.iter().zip(&config.members) {
                let back: Member = serde_json::from_slice(&text.bytes[span.clone()]).unwrap();
                assert_eq!(&back, m);
            }
            // Made again from its own spans (nothing serialised), one member changed, one
            // added: still what a whole write gives.
            let mut next = config.clone();
            if let Some(m) = next.members.get_mut(1) {
                m.status = Status::Working;
            }
            let mut added = next
                .members
                .first()
                .cloned()
                .unwrap_or_else(|| Member::leader(&config.name, "/".into(), 0));
            added.name = Name::parse("new").unwrap();
            next.members.push(added);
            let again = render(&next, |i, m| {
                (config.members.get(i) == Some(m)).then(|| &text.bytes[text.spans[i].clone()])
            })
            .unwrap();
            assert_eq!(again.bytes, serde_json::to_vec_pretty(&next).unwrap());
        }
    }
}
