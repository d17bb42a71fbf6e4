//! The file store's index of its team file (`config.index`, beside `config.json`): every
//! member's name, colour and where its object lies in the file, written by each writer of the team
//! file right after it, for the file it wrote. A reader trusts it only for the very bytes it
//! describes (their length and CRC-32 match): then `send` and a starting worker read one
//! member instead of scanning 400 KB of JSON (1,000 members), and a writer copies the other
//! members' text instead of serialising it again. Anything else (no index, an older one, a
//! team file changed by hand, a torn index) is not trusted, and the file is read in full as
//! before. The index is a cache: written without `fsync`, never needed for correctness.
//!
//! Format (text): `teamctl-team-index 1`, then `LEN CRC COUNT`, then one line per member,
//! `START END NAME COLOR` (the colour a JSON string), in the file's order, then `end` (a torn index is never read as whole).

use std::ops::Range;

use crate::domain::Name;
use crate::domain::teamtext::Text;

const MAGIC: &str = "teamctl-team-index 1";

/// What the index says of one team file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub names: Vec<Name>,
    pub colors: Vec<String>,
    pub spans: Vec<Range<usize>>,
}

/// The index of `text`, whose members are `names` with `colors`, in order.
pub fn format(text: &Text, names: &[&Name], colors: &[&str]) -> String {
    let mut out = String::with_capacity(64 + names.len() * 32);
    out.push_str(MAGIC);
    out.push('\n');
    push_num(&mut out, text.bytes.len());
    out.push(' ');
    push_num(&mut out, crc32fast::hash(&text.bytes) as usize);
    out.push(' ');
    push_num(&mut out, names.len());
    out.push('\n');
    for ((span, name), color) in text.spans.iter().zip(names).zip(colors) {
        push_num(&mut out, span.start);
        out.push(' ');
        push_num(&mut out, span.end);
        out.push(' ');
        out.push_str(name.as_str());
        out.push(' ');
        if color
            .bytes()
            .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b != 0x7f)
        {
            out.push('"');
            out.push_str(color);
            out.push('"');
        } else {
            out.push_str(&serde_json::to_string(color).unwrap_or_default());
        }
        out.push('\n');
    }
    out.push_str("end\n");
    out
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

/// A decimal number of at most 19 digits.
fn num(s: &str) -> Option<usize> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.bytes().try_fold(0usize, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + usize::from(b - b'0'))
    })
}

/// The index in `index` if it describes exactly `bytes` (length and CRC-32), its spans in
/// order and within them; `None` otherwise.
pub fn parse(index: &str, bytes: &[u8]) -> Option<Index> {
    let mut lines = index.strip_suffix('\n')?.split('\n');
    if lines.next()? != MAGIC {
        return None;
    }
    let (len, rest) = lines.next()?.split_once(' ')?;
    let (crc, count) = rest.split_once(' ')?;
    let (len, crc, count) = (num(len)?, num(crc)?, num(count)?);
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
    let mut ended = false;
    for line in lines {
        if ended {
            return None;
        }
        if line == "end" {
            ended = true;
            continue;
        }
        let (start, rest) = line.split_once(' ')?;
        let (end, rest) = rest.split_once(' ')?;
        let (name, color) = rest.split_once(' ')?;
        let (start, end) = (num(start)?, num(end)?);
        let name = Name::parse(name).ok()?;
        let color = match color {
            // The palette's colours need no unescaping.
            c if c.len() >= 2
                && c.starts_with('"')
                && c.ends_with('"')
                && !c[1..c.len() - 1].contains(['"', '\\']) =>
            {
                c[1..c.len() - 1].to_string()
            }
            c => serde_json::from_str(c).ok()?,
        };
        if start < at || end < start || end > len {
            return None;
        }
        at = end;
        names.push(name);
        colors.push(color);
        spans.push(start..end);
    }
    (ended && names.len() == count).then_some(Index {
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
    fn an_index_is_trusted_only_for_the_bytes_it_was_made_for() {
        let (text, names) = text();
        let refs: Vec<&Name> = names.iter().collect();
        let index = format(&text, &refs, &["blue", "a \"b\" c"]);
        let got = parse(&index, &text.bytes).unwrap();
        assert_eq!(got.names, names);
        assert_eq!(got.colors, ["blue", "a \"b\" c"]);
        assert!(index.starts_with(&format!(
            "{MAGIC}\n17 {} 2\n4 7 a \"blue\"\n",
            crc32fast::hash(&text.bytes)
        )));
        assert_eq!(got.spans, text.spans);
        // Another text of the same length, a longer one, a torn or damaged index: not trusted.
        let mut other = text.bytes.clone();
        other[5] = b'b';
        assert_eq!(parse(&index, &other), None);
        assert_eq!(parse(&index, b"{ [ {a}, {bb} ] } "), None);
        for cut in 0..index.len() {
            assert_eq!(parse(&index[..cut], &text.bytes), None, "{cut}");
        }
        for bad in [
            index.replace("4 7 a", "4 70 a"),
            index.replace("4 7 a", "9 7 a"),
            index.replace("4 7 a", "4 7 ../a"),
            index.replace("4 7 a \"blue\"", "4 7 a blue"),
            index.replace("4 7 a \"blue\"", "4 7 a"),
            index.replace("teamctl-team-index 1", "teamctl-team-index 2"),
            index.replace("9 13 bb", "2 13 bb"),
        ] {
            assert_eq!(parse(&bad, &text.bytes), None, "{bad}");
        }
    }
}
