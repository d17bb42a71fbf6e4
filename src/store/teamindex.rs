//! The file store's index of its team file (`config.index`, beside `config.json`): every
//! member's name, colour and where its object lies in the file, written by each writer of
//! the team file right after it, for the file it wrote. A reader trusts it only for the very
//! bytes it describes (their length and CRC-32 match): then `send` and a starting worker read
//! one member instead of scanning 400 KB of JSON (1,000 members), and a writer copies the
//! other members' text instead of serialising it again. Anything else (no index, an older
//! one, a team file changed by hand, a torn index) is not trusted, and the file is read in
//! full as before. The index is a cache: never needed for correctness, so it is written in
//! place (one `pwrite`, then the length set; no new inode, no `fsync`: replacing it by
//! `rename` cost 0.4-1.5 ms per write in ext4, twice per spawn), and a reader racing the
//! writer, or a crash half-way, gives a body whose CRC does not match: not trusted.
//!
//! Format (text): `teamctl-team-index 1 BODYLEN BODYCRC`, then the body (BODYLEN bytes, its
//! CRC-32 BODYCRC; anything after it is ignored): `LEN CRC COUNT` (the team file's length and
//! CRC-32, the number of members), then one line per member, `START END NAME COLOR` (the
//! colour a JSON string), in the file's order, then `end`.

use std::ops::Range;

use crate::domain::Name;
use crate::domain::member::COLORS;
use crate::domain::roster::Color;
use crate::domain::teamtext::Text;

const MAGIC: &str = "teamctl-team-index 1 ";

/// What the index says of one team file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub names: Vec<Name>,
    pub colors: Vec<Color>,
    pub spans: Vec<Range<usize>>,
}

/// The index of `text`, whose members are `names` with `colors`, in order.
pub fn format(text: &Text, names: &[&Name], colors: &[&str]) -> Vec<u8> {
    let mut body = String::with_capacity(64 + names.len() * 32);
    push_num(&mut body, text.bytes.len());
    body.push(' ');
    push_num(&mut body, crc32fast::hash(&text.bytes) as usize);
    body.push(' ');
    push_num(&mut body, names.len());
    body.push('\n');
    for ((span, name), color) in text.spans.iter().zip(names).zip(colors) {
        push_num(&mut body, span.start);
        body.push(' ');
        push_num(&mut body, span.end);
        body.push(' ');
        body.push_str(name.as_str());
        body.push(' ');
        if color
            .bytes()
            .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b != 0x7f)
        {
            body.push('"');
            body.push_str(color);
            body.push('"');
        } else {
            body.push_str(&serde_json::to_string(color).unwrap_or_default());
        }
        body.push('\n');
    }
    body.push_str("end\n");
    let mut out = String::with_capacity(body.len() + 48);
    out.push_str(MAGIC);
    push_num(&mut out, body.len());
    out.push(' ');
    push_num(&mut out, crc32fast::hash(body.as_bytes()) as usize);
    out.push('\n');
    out.push_str(&body);
    out.into_bytes()
}

/// `n` in decimal (the index is made on every write of the team file: `write!` was most of it).
fn push_num(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or("0"));
}

/// A decimal number of at most 19 digits at the start of `rest`, ended by `end` (skipped).
/// One pass: the index's fields are short, a plain loop is cheaper than a search and a parse.
fn num_until(rest: &mut &[u8], end: u8) -> Option<usize> {
    let mut n = 0usize;
    for (i, &b) in rest.iter().enumerate() {
        if b == end && i > 0 {
            *rest = &rest[i + 1..];
            return Some(n);
        }
        if !b.is_ascii_digit() || i == 19 {
            return None;
        }
        n = n * 10 + usize::from(b - b'0');
    }
    None
}

/// The bytes of `rest` before its next `end`, which is skipped; `None` if a newline comes
/// first (a field never runs into the next line) or there is no `end`.
fn until<'a>(rest: &mut &'a [u8], end: u8) -> Option<&'a [u8]> {
    let at = rest.iter().position(|&b| b == end || b == b'\n')?;
    let (field, after) = rest.split_at(at);
    if after[0] != end {
        return None;
    }
    *rest = &after[1..];
    Some(field)
}

/// The index in `index` if it is whole (its body's CRC) and describes exactly `bytes`
/// (length and CRC-32), its spans in order and within them; `None` otherwise. One pass over
/// the body's bytes (`send` to a 1,000-member team reads 1,000 entries): no line split, no
/// UTF-8 check of the whole (a name is checked as a name, a colour as a palette colour or
/// as JSON).
pub fn parse(index: &[u8], bytes: &[u8]) -> Option<Index> {
    let mut rest = index.strip_prefix(MAGIC.as_bytes())?;
    let body_len = num_until(&mut rest, b' ')?;
    let body_crc = num_until(&mut rest, b'\n')?;
    let mut body = rest.get(..body_len)?;
    if crc32fast::hash(body) as usize != body_crc {
        return None;
    }
    let len = num_until(&mut body, b' ')?;
    let crc = num_until(&mut body, b' ')?;
    let count = num_until(&mut body, b'\n')?;
    if len != bytes.len() || count > len {
        return None;
    }
    if crc32fast::hash(bytes) as usize != crc {
        return None;
    }
    let mut names = Vec::with_capacity(count);
    let mut colors = Vec::with_capacity(count);
    let mut spans = Vec::with_capacity(count);
    let mut at = 0;
    while body != b"end\n" {
        let start = num_until(&mut body, b' ')?;
        let end = num_until(&mut body, b' ')?;
        let name = Name::from_bytes(until(&mut body, b' ')?)?;
        let color = match until(&mut body, b'\n')? {
            // The palette's colours, compared as bytes, are borrowed; any other is JSON.
            [b'"', c @ .., b'"'] if let Some(p) = COLORS.iter().find(|p| p.as_bytes() == c) => {
                Color::Borrowed(p)
            }
            c => Color::Owned(serde_json::from_slice(c).ok()?),
        };
        if start < at || end < start || end > len || names.len() == count {
            return None;
        }
        at = end;
        names.push(name);
        colors.push(color);
        spans.push(start..end);
    }
    (names.len() == count).then_some(Index {
        names,
        colors,
        spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> (Text, Vec<Name>) {
        let bytes = b"{ [ {a}, {bb} ] }".to_vec();
        let spans = vec![4..7, 9..13];
        let names = vec![Name::parse("a").unwrap(), Name::parse("bb").unwrap()];
        (Text { bytes, spans }, names)
    }

    #[test]
    fn an_index_is_trusted_only_whole_and_for_the_bytes_it_was_made_for() {
        let (text, names) = text();
        let refs: Vec<&Name> = names.iter().collect();
        let index = format(&text, &refs, &["blue", "a \"b\" c"]);
        let got = parse(&index, &text.bytes).unwrap();
        assert_eq!(got.names, names);
        assert_eq!(got.colors, ["blue", "a \"b\" c"]);
        assert_eq!(got.spans, text.spans);
        let body = format!(
            "17 {} 2\n4 7 a \"blue\"\n9 13 bb \"a \\\"b\\\" c\"\nend\n",
            crc32fast::hash(&text.bytes)
        );
        assert_eq!(
            String::from_utf8_lossy(&index),
            format!(
                "{MAGIC}{} {}\n{body}",
                body.len(),
                crc32fast::hash(body.as_bytes())
            )
        );
        // Another text of the same length, a longer one: not trusted.
        let mut other = text.bytes.clone();
        other[5] = b'b';
        assert_eq!(parse(&index, &other), None);
        assert_eq!(parse(&index, b"{ [ {a}, {bb} ] } "), None);
        // Cut anywhere, or a longer stale tail after it (written in place): only whole.
        for cut in 0..index.len() {
            assert_eq!(parse(&index[..cut], &text.bytes), None, "{cut}");
        }
        let mut longer = index.clone();
        longer.extend_from_slice(b"9 13 bb \"x\"\nend\n");
        assert_eq!(parse(&longer, &text.bytes), Some(got));
        // Any byte changed: not trusted.
        for i in 0..index.len() {
            let mut bad = index.clone();
            bad[i] ^= 0x01;
            assert_eq!(parse(&bad, &text.bytes), None, "byte {i}");
        }
        // A body that is whole but not an index of these bytes.
        for body in [
            "17 C 2\n4 70 a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2\n9 7 a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2\n4 7 ../a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2\n4 7 a blue\n9 13 bb \"x\"\nend\n",
            "17 C 2\n4 7 a \"blue\"\n2 13 bb \"x\"\nend\n",
            "17 C 2\n4 7 a \"blue\"\nend\n",
            "17 C 2\n4 7 a \"blue\"\n9 13 bb \"x\"\n",
            "17 C 2\n4 7 a \"blue\"\n9 13 bb \"x\"\nend\nmore\n",
            // A field never runs into the next line.
            "17 C 2\n4 7 a\n\"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2\n4 7\na \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C\n2\n4 7 a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2\n4 7 a \"blue\"\n9 13 bb \"x\nend\n",
            // Numbers are digits only, at most 19 of them.
            "17 C 2\n4 7 a \"blue\"\n9 +13 bb \"x\"\nend\n",
            "17 C 2\n4 7 a \"blue\"\n9 00000000000000000013 bb \"x\"\nend\n",
            "17 C 2\n 4 7 a \"blue\"\n9 13 bb \"x\"\nend\n",
        ] {
            let body = body.replace('C', &crc32fast::hash(&text.bytes).to_string());
            let index = format!(
                "{MAGIC}{} {}\n{body}",
                body.len(),
                crc32fast::hash(body.as_bytes())
            );
            assert_eq!(parse(index.as_bytes(), &text.bytes), None, "{body}");
        }
    }
}
