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

/// The entries of the index in `index` (from the first to its `end` line) with the number
/// of them it gives, if it is whole (its body's CRC) and describes exactly `bytes` (length and
/// CRC-32); `None` otherwise.
fn checked<'a>(index: &'a [u8], bytes: &[u8]) -> Option<(&'a [u8], usize)> {
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
    if len != bytes.len() || count > len || crc32fast::hash(bytes) as usize != crc {
        return None;
    }
    Some((body, count))
}

/// One entry line (its newline not included): the member's span, name and colour; `None`
/// unless it is one as `format` writes it.
fn entry(mut line: &[u8]) -> Option<(Range<usize>, Name, Color)> {
    let start = num_until(&mut line, b' ')?;
    let end = num_until(&mut line, b' ')?;
    let name = Name::from_bytes(until(&mut line, b' ')?)?;
    let color = match line {
        // The palette's colours, compared as bytes, are borrowed; any other is JSON.
        [b'"', c @ .., b'"'] if let Some(p) = COLORS.iter().find(|p| p.as_bytes() == c) => {
            Color::Borrowed(p)
        }
        c => Color::Owned(serde_json::from_slice(c).ok()?),
    };
    (start <= end).then_some((start..end, name, color))
}

/// The index in `index` if it is whole (its body's CRC) and describes exactly `bytes`
/// (length and CRC-32), its spans in order and within them; `None` otherwise. One pass over
/// the body's bytes: no UTF-8 check of the whole (a name is checked as a name, a colour as a
/// palette colour or as JSON).
pub fn parse(index: &[u8], bytes: &[u8]) -> Option<Index> {
    let (mut body, count) = checked(index, bytes)?;
    let mut out = Index {
        names: Vec::with_capacity(count),
        colors: Vec::with_capacity(count),
        spans: Vec::with_capacity(count),
    };
    while body != b"end\n" {
        let (span, name, color) = entry(until(&mut body, b'\n')?)?;
        if out.names.len() == count || !out.push_in_order(span, name, color, bytes.len()) {
            return None;
        }
    }
    (out.names.len() == count).then_some(out)
}

/// `parse`, but only for `wanted` and the first and last member (whose spans bound the team's
/// own fields): `send` to one of 1,000 members reads 3 entries of the index, and finds the
/// others' ends of line only. `None` as for `parse`, and when one of `wanted` is not in it.
/// The entries not read are covered by the index's CRC, as all are, not checked one by one.
pub fn parse_some(index: &[u8], bytes: &[u8], wanted: &[&Name]) -> Option<Index> {
    let (body, count) = checked(index, bytes)?;
    let body = body.strip_suffix(b"end\n")?;
    let lines: Vec<&[u8]> = match body.strip_suffix(b"\n") {
        Some(b) => memchr::memchr_iter(b'\n', b)
            .chain([b.len()])
            .scan(0, |at, end| {
                let line = &b[*at..end];
                *at = end + 1;
                Some(line)
            })
            .collect(),
        None if body.is_empty() => Vec::new(),
        None => return None,
    };
    if lines.len() != count {
        return None;
    }
    let mut out = Index {
        names: Vec::new(),
        colors: Vec::new(),
        spans: Vec::new(),
    };
    let mut found = vec![false; wanted.len()];
    for (i, line) in lines.iter().enumerate() {
        // The name is the third field: found without reading the two numbers.
        let name = third_field(line)?;
        let mut want = false;
        for (w, f) in wanted.iter().zip(&mut found) {
            if w.as_str().as_bytes() == name {
                // A name given twice in a (damaged) index: its first entry, as `Roster` finds.
                want = !*f;
                *f = true;
            }
        }
        if want || i == 0 || i + 1 == lines.len() {
            let (span, name, color) = entry(line)?;
            if !out.push_in_order(span, name, color, bytes.len()) {
                return None;
            }
        }
    }
    found.iter().all(|&f| f).then_some(out)
}

/// The third of `line`'s space-separated fields (a plain loop: they are a few bytes each).
fn third_field(line: &[u8]) -> Option<&[u8]> {
    let mut spaces = line
        .iter()
        .enumerate()
        .filter_map(|(i, &b)| (b == b' ').then_some(i));
    let (_, start, end) = (spaces.next()?, spaces.next()?, spaces.next()?);
    Some(&line[start + 1..end])
}

impl Index {
    /// Add an entry after the last, if its span comes after the last one's and within `len`.
    fn push_in_order(&mut self, span: Range<usize>, name: Name, color: Color, len: usize) -> bool {
        let at = self.spans.last().map_or(0, |s| s.end);
        if span.start < at || span.end > len {
            return false;
        }
        self.names.push(name);
        self.colors.push(color);
        self.spans.push(span);
        true
    }
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

    #[test]
    fn some_entries_are_read_only_with_the_first_and_last_and_all_wanted_found() {
        let bytes = b"{ [ {a}, {bb}, {c}, {dd} ] }".to_vec();
        let spans = vec![4..7, 9..13, 15..18, 20..24];
        let names: Vec<Name> = ["a", "bb", "c", "dd"]
            .iter()
            .map(|n| Name::parse(n).unwrap())
            .collect();
        let refs: Vec<&Name> = names.iter().collect();
        let text = Text {
            bytes: bytes.clone(),
            spans: spans.clone(),
        };
        let index = format(&text, &refs, &["blue", "red", "x y", "cyan"]);
        let whole = parse(&index, &bytes).unwrap();
        // One in the middle: it, with the first and last (the team's own fields lie around
        // them), in the file's order, as the whole index gives them.
        let got = parse_some(&index, &bytes, &[&names[2]]).unwrap();
        assert_eq!(
            got.names,
            [names[0].clone(), names[2].clone(), names[3].clone()]
        );
        assert_eq!(got.colors, ["blue", "x y", "cyan"]);
        assert_eq!(
            got.spans,
            [spans[0].clone(), spans[2].clone(), spans[3].clone()]
        );
        // Asked twice, or the first itself: no entry twice.
        let got = parse_some(&index, &bytes, &[&names[0], &names[0]]).unwrap();
        assert_eq!(got.names, [names[0].clone(), names[3].clone()]);
        let got = parse_some(&index, &bytes, &[&names[1], &names[2]]).unwrap();
        assert_eq!(got.names[..], whole.names[..]);
        // One that is not a member: `None` (the caller reads the whole roster, whose error
        // names the members).
        let nobody = Name::parse("nobody").unwrap();
        assert_eq!(parse_some(&index, &bytes, &[&names[1], &nobody]), None);
        // Not trusted wherever `parse` does not trust it.
        for i in 0..index.len() {
            let mut bad = index.clone();
            bad[i] ^= 0x01;
            assert_eq!(parse_some(&bad, &bytes, &[&names[1]]), None, "byte {i}");
        }
        let mut other = bytes.clone();
        other[5] = b'b';
        assert_eq!(parse_some(&index, &other, &[&names[1]]), None);
        // A whole body with a wanted entry that is not one, or fewer lines than it counts.
        for body in [
            "28 C 4\n4 7 a \"blue\"\n9 13 bb blue\n15 18 c \"x\"\n20 24 dd \"cyan\"\nend\n",
            "28 C 4\n4 7 a \"blue\"\n9 3 bb \"red\"\n15 18 c \"x\"\n20 24 dd \"cyan\"\nend\n",
            "28 C 4\n4 7 a \"blue\"\n9 13 bb \"red\"\n20 24 dd \"cyan\"\nend\n",
            "28 C 4\n4 7 a \"blue\"\n9 13 bb \"red\"\n15 18 c \"x\"\n20 24 dd \"cyan\"\n",
            "28 C 4\n4 7 a \"blue\"\n9 13 bb\n15 18 c \"x\"\n20 24 dd \"cyan\"\nend\n",
        ] {
            let body = body.replace('C', &crc32fast::hash(&bytes).to_string());
            let index = format!(
                "{MAGIC}{} {}\n{body}",
                body.len(),
                crc32fast::hash(body.as_bytes())
            );
            assert_eq!(
                parse_some(index.as_bytes(), &bytes, &[&names[1]]),
                None,
                "{body}"
            );
        }
    }
}
