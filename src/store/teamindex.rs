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
//! `send` to one of 1,000 members trusts it without reading the team file at all: the index
//! also carries the file's stamp (`Stamp`: inode, size, change time) as its writer saw it on
//! the file it wrote, right after the rename, under the team file's lock (none when the file
//! was written to in between: `fsutil::write_atomic_seen`). When the file a reader opened has that
//! stamp (one `fstat`), the index describes it, and only the few members' spans and the text
//! around the members are read (`parse_some_stamped`), and each object read must name the
//! member listed (`Roster::named_as_read`); the CRC-32 of its 400 KB was most of
//! what such a `send` still did. A file edited by hand has another inode or change time (a
//! rename, or a write, sets the change time; `utimes` cannot set it back).
//!
//! Format (text): `teamctl-team-index 2 BODYLEN BODYCRC`, then the body (BODYLEN bytes, its
//! CRC-32 BODYCRC; anything after it is ignored): `LEN CRC COUNT INO CTIME CTIMENS` (the team
//! file's length and CRC-32, the number of members, and the file's stamp: its inode and change
//! time in seconds and nanoseconds, `0 0 0` when not known), then one line per member, `START
//! END NAME COLOR` (the colour a JSON string), in the file's order, then `end`. An index of
//! version 1 (no stamp) is not trusted: the next write of the team file writes version 2.

use std::ops::Range;

use crate::domain::Name;
use crate::domain::member::COLORS;
use crate::domain::roster::Color;
use crate::domain::teamtext::Text;

use super::Stamp;

const MAGIC: &str = "teamctl-team-index 2 ";

/// What the index says of one team file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub names: Vec<Name>,
    pub colors: Vec<Color>,
    pub spans: Vec<Range<usize>>,
}

/// The index of `text`, whose members are `names` with `colors`, in order, written to a
/// file whose stamp is now `stamp` (`None`: not known, then only its bytes are trusted).
pub fn format(text: &Text, names: &[&Name], colors: &[&str], stamp: Option<Stamp>) -> Vec<u8> {
    let mut body = String::with_capacity(96 + names.len() * 32);
    push_num(&mut body, text.bytes.len());
    body.push(' ');
    push_num(&mut body, crc32fast::hash(&text.bytes) as usize);
    body.push(' ');
    push_num(&mut body, names.len());
    let (ino, ctime, ctime_ns) = stamp.and_then(stamp_fields).unwrap_or((0, 0, 0));
    for n in [ino, ctime, ctime_ns] {
        body.push(' ');
        push_num(&mut body, n);
    }
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

/// A stamp's inode and change time as the index writes them; `None` for one it cannot hold
/// (a change time before 1970), that matches no file (inode 0), or whose change time has no
/// nanoseconds: a file system that keeps whole seconds (attacker QA: an edit by hand in the
/// same second as a write, the same length, kept the stamp), never trusted by its stamp.
fn stamp_fields(stamp: Stamp) -> Option<(usize, usize, usize)> {
    let Stamp(ino, _, ctime, ctime_ns) = stamp;
    Some((
        usize::try_from(ino).ok().filter(|&i| i != 0)?,
        usize::try_from(ctime).ok()?,
        usize::try_from(ctime_ns).ok().filter(|&n| n != 0)?,
    ))
}

/// What an index is checked against: the team file's bytes (their length and CRC-32), or the
/// stamp of the team file a reader holds open (its length, inode and change time).
#[derive(Clone, Copy)]
enum Describes<'a> {
    Bytes(&'a [u8]),
    Stamped(Stamp),
}

impl Describes<'_> {
    fn len(self) -> usize {
        match self {
            Describes::Bytes(bytes) => bytes.len(),
            Describes::Stamped(Stamp(_, size, _, _)) => usize::try_from(size).unwrap_or(usize::MAX),
        }
    }
}

/// The entries of the index in `index` (from the first to its `end` line) with the number
/// of them it gives, if it is whole (its body's CRC) and describes exactly `file` (length and
/// CRC-32 of its bytes, or its stamp); `None` otherwise.
fn checked<'a>(index: &'a [u8], file: Describes<'_>) -> Option<(&'a [u8], usize)> {
    let mut rest = index.strip_prefix(MAGIC.as_bytes())?;
    let body_len = num_until(&mut rest, b' ')?;
    let body_crc = num_until(&mut rest, b'\n')?;
    let mut body = rest.get(..body_len)?;
    if crc32fast::hash(body) as usize != body_crc {
        return None;
    }
    let len = num_until(&mut body, b' ')?;
    let crc = num_until(&mut body, b' ')?;
    let count = num_until(&mut body, b' ')?;
    let ino = num_until(&mut body, b' ')?;
    let ctime = num_until(&mut body, b' ')?;
    let ctime_ns = num_until(&mut body, b'\n')?;
    if len != file.len() || count > len {
        return None;
    }
    let described = match file {
        Describes::Bytes(bytes) => crc32fast::hash(bytes) as usize == crc,
        Describes::Stamped(stamp) => stamp_fields(stamp) == Some((ino, ctime, ctime_ns)),
    };
    described.then_some((body, count))
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
    let (mut body, count) = checked(index, Describes::Bytes(bytes))?;
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
/// own fields): `send` to one of 1,000 members reads 3 entries of the index, and only counts
/// the others' lines. `None` as for `parse`, and when one of `wanted` is not in it.
/// The entries not read are covered by the index's CRC, as all are, not checked one by one.
pub fn parse_some(index: &[u8], bytes: &[u8], wanted: &[&Name]) -> Option<Index> {
    some_of(index, Describes::Bytes(bytes), wanted)
}

/// `parse_some` for the team file a reader holds open without having read it: trusted when
/// the index was written for a file with exactly `stamp` (`Stamp::of`, taken from the open
/// file), the file's bytes not looked at. The caller then reads the spans given, and the
/// text before the first and after the last.
pub fn parse_some_stamped(index: &[u8], stamp: Stamp, wanted: &[&Name]) -> Option<Index> {
    some_of(index, Describes::Stamped(stamp), wanted)
}

fn some_of(index: &[u8], file: Describes<'_>, wanted: &[&Name]) -> Option<Index> {
    let (body, count) = checked(index, file)?;
    let body = body.strip_suffix(b"end\n")?;
    let Some(lines) = body.strip_suffix(b"\n") else {
        // No member: only an empty body is whole, and no one wanted is in it.
        return (body.is_empty() && count == 0 && wanted.is_empty()).then(Index::default);
    };
    // Every line ends in a newline but the last (`count` lines); counted, not split.
    if memchr::memchr_iter(b'\n', lines).count() + 1 != count {
        return None;
    }
    // The lines wanted, by where they start: the first, the last and each of `wanted`.
    let mut starts = Vec::with_capacity(wanted.len() + 2);
    starts.push(0);
    starts.push(memchr::memrchr(b'\n', lines).map_or(0, |i| i + 1));
    for name in wanted {
        starts.push(line_of(lines, name)?);
    }
    starts.sort_unstable();
    starts.dedup();
    let mut out = Index::default();
    for at in starts {
        let rest = &lines[at..];
        let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
        let (span, name, color) = entry(line)?;
        if !out.push_in_order(span, name, color, file.len()) {
            return None;
        }
    }
    Some(out)
}

/// Where the line of `name` starts in `lines`: its first line whose third field (the name)
/// it is. Searched for as ` NAME ` (SIMD, over the 26 KB of 1,000 members, rather than each
/// line split and compared); a match elsewhere in a line (inside a colour's JSON) is passed
/// over.
fn line_of(lines: &[u8], name: &Name) -> Option<usize> {
    let name = name.as_str().as_bytes();
    let mut needle = Vec::with_capacity(name.len() + 2);
    needle.push(b' ');
    needle.extend_from_slice(name);
    needle.push(b' ');
    let finder = memchr::memmem::Finder::new(&needle);
    let mut from = 0;
    while let Some(at) = finder.find(&lines[from..]).map(|i| from + i) {
        let start = memchr::memrchr(b'\n', &lines[..at]).map_or(0, |i| i + 1);
        let rest = &lines[start..];
        let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
        if third_field(line) == Some(name) {
            return Some(start);
        }
        from = at + 1;
    }
    None
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
        let index = format(&text, &refs, &["blue", "a \"b\" c"], None);
        let got = parse(&index, &text.bytes).unwrap();
        assert_eq!(got.names, names);
        assert_eq!(got.colors, ["blue", "a \"b\" c"]);
        assert_eq!(got.spans, text.spans);
        let body = format!(
            "17 {} 2 0 0 0\n4 7 a \"blue\"\n9 13 bb \"a \\\"b\\\" c\"\nend\n",
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
            "17 C 2 0 0 0\n4 70 a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n9 7 a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7 ../a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7 a blue\n9 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7 a \"blue\"\n2 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7 a \"blue\"\nend\n",
            "17 C 2 0 0 0\n4 7 a \"blue\"\n9 13 bb \"x\"\n",
            "17 C 2 0 0 0\n4 7 a \"blue\"\n9 13 bb \"x\"\nend\nmore\n",
            // A field never runs into the next line.
            "17 C 2 0 0 0\n4 7 a\n\"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7\na \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C\n2\n4 7 a \"blue\"\n9 13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7 a \"blue\"\n9 13 bb \"x\nend\n",
            // Numbers are digits only, at most 19 of them.
            "17 C 2 0 0 0\n4 7 a \"blue\"\n9 +13 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n4 7 a \"blue\"\n9 00000000000000000013 bb \"x\"\nend\n",
            "17 C 2 0 0 0\n 4 7 a \"blue\"\n9 13 bb \"x\"\nend\n",
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

    /// A text of four members `a`, `bb`, `c`, `dd`: its bytes, spans, names and `Text`.
    fn four() -> (Vec<u8>, Vec<Range<usize>>, Vec<Name>, Text) {
        let bytes = b"{ [ {a}, {bb}, {c}, {dd} ] }".to_vec();
        let spans = vec![4..7, 9..13, 15..18, 20..24];
        let names = ["a", "bb", "c", "dd"]
            .iter()
            .map(|n| Name::parse(n).unwrap())
            .collect();
        let text = Text {
            bytes: bytes.clone(),
            spans: spans.clone(),
        };
        (bytes, spans, names, text)
    }

    #[test]
    fn some_entries_are_read_only_with_the_first_and_last_and_all_wanted_found() {
        let (bytes, spans, names, text) = four();
        let refs: Vec<&Name> = names.iter().collect();
        let index = format(&text, &refs, &["blue", "red", "x y", "cyan"], None);
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
        // A wanted name inside an earlier line's colour is passed over.
        let index = format(&text, &refs, &["blue", " c ", "x y", "cyan"], None);
        let got = parse_some(&index, &bytes, &[&names[2]]).unwrap();
        assert_eq!(got.names[1], names[2]);
        assert_eq!(got.spans[1], spans[2]);
        let index = format(&text, &refs, &["blue", "red", "x y", "cyan"], None);
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
            "28 C 4 0 0 0\n4 7 a \"blue\"\n9 13 bb blue\n15 18 c \"x\"\n20 24 dd \"cyan\"\nend\n",
            "28 C 4 0 0 0\n4 7 a \"blue\"\n9 3 bb \"red\"\n15 18 c \"x\"\n20 24 dd \"cyan\"\nend\n",
            "28 C 4 0 0 0\n4 7 a \"blue\"\n9 13 bb \"red\"\n20 24 dd \"cyan\"\nend\n",
            "28 C 4 0 0 0\n4 7 a \"blue\"\n9 13 bb \"red\"\n15 18 c \"x\"\n20 24 dd \"cyan\"\n",
            "28 C 4 0 0 0\n4 7 a \"blue\"\n9 13 bb\n15 18 c \"x\"\n20 24 dd \"cyan\"\nend\n",
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

    #[test]
    fn a_stamped_index_is_trusted_for_a_file_with_exactly_its_stamp_and_only_that() {
        let (bytes, _, names, text) = four();
        let refs: Vec<&Name> = names.iter().collect();
        let colors = ["blue", "red", "x y", "cyan"];
        let stamp = Stamp(77, bytes.len() as u64, 1_796_000_000, 123_456_789);
        let index = format(&text, &refs, &colors, Some(stamp));
        // The bytes are trusted as before; the stamp alone gives what the bytes give.
        let by_bytes = parse_some(&index, &bytes, &[&names[2]]).unwrap();
        let by_stamp = parse_some_stamped(&index, stamp, &[&names[2]]).unwrap();
        assert_eq!(by_stamp, by_bytes);
        assert_eq!(parse(&index, &bytes).unwrap().names, names);
        // Another inode, size, change time (seconds or nanoseconds): not trusted.
        for other in [
            Stamp(78, stamp.1, stamp.2, stamp.3),
            Stamp(77, stamp.1 + 1, stamp.2, stamp.3),
            Stamp(77, stamp.1, stamp.2 + 1, stamp.3),
            Stamp(77, stamp.1, stamp.2, stamp.3 + 1),
        ] {
            assert_eq!(
                parse_some_stamped(&index, other, &[&names[2]]),
                None,
                "{other:?}"
            );
        }
        // Written without a stamp (`0 0 0`), or for a stamp it cannot hold: never by stamp.
        for none in [
            None,
            Some(Stamp(0, stamp.1, stamp.2, stamp.3)),
            Some(Stamp(77, stamp.1, -1, 0)),
            // Whole seconds only: not trusted by its stamp.
            Some(Stamp(77, stamp.1, stamp.2, 0)),
        ] {
            let index = format(&text, &refs, &colors, none);
            assert!(parse_some(&index, &bytes, &[&names[2]]).is_some());
            for s in [
                stamp,
                Stamp(0, stamp.1, stamp.2, stamp.3),
                Stamp(0, stamp.1, 0, 0),
                Stamp(77, stamp.1, stamp.2, 0),
            ] {
                assert_eq!(
                    parse_some_stamped(&index, s, &[&names[2]]),
                    None,
                    "{none:?} {s:?}"
                );
            }
        }
        // An index of version 1 (no stamp) is not trusted at all.
        let old = String::from_utf8(index.clone())
            .unwrap()
            .replacen("index 2 ", "index 1 ", 1);
        assert_eq!(parse(old.as_bytes(), &bytes), None);
        assert_eq!(
            parse_some_stamped(old.as_bytes(), stamp, &[&names[2]]),
            None
        );
        // Any byte changed: not trusted by stamp either.
        for i in 0..index.len() {
            let mut bad = index.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                parse_some_stamped(&bad, stamp, &[&names[1]]),
                None,
                "byte {i}"
            );
        }
    }
}
