//! A reader's cursor file, overwritten in place. Creating a new file per cursor write (temp
//! file and rename) made inode allocation the largest cost of a busy team (BENCHMARKS.md), so
//! the file holds two fixed-size records ("slots") and a write replaces one of them with a
//! single `pwrite`, never the slot holding the newest valid value. A record carries a sequence
//! number and a CRC-32, so a torn write (a crash, or a reader racing the writer) is detected
//! and the other slot, the value before it, is used: the cursor may move back (a message is
//! delivered again, which at-least-once allows) but never past a message not handled.
//!
//! A slot is 51 bytes of ASCII: `SEQ OFFSET CRC\n`, SEQ and OFFSET zero-padded 20-digit
//! decimals, CRC the CRC-32 (IEEE, as zlib) of the first 41 bytes in 8 lowercase hex digits.
//! Slot `SEQ % 2` starts at byte `(SEQ % 2) * 51`. The valid slot with the highest SEQ wins.
//! A file in the older format (one decimal offset) is still read, and replaced on the next
//! write; a file with no valid record reads as 0.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::fsutil::{with_subdir, write_atomic};
use crate::error::{IoContext, Result};

/// The size of one record.
pub const SLOT: usize = 51;

/// Bytes a cursor file holds at most (both slots).
const FILE_LEN: usize = 2 * SLOT;

/// The stored offset, if the file holds a valid record (or the older plain decimal format).
pub fn load(path: &Path) -> Option<u64> {
    let mut buf = [0u8; FILE_LEN + 1];
    let n = read_head(&mut super::fsutil::open_read(path).ok()?, &mut buf).ok()?;
    parse(&buf[..n])
}

/// The offset in a cursor file's bytes (see the module comment), `None` when there is none.
pub fn parse(bytes: &[u8]) -> Option<u64> {
    newest(bytes).map(|(_, pos)| pos).or_else(|| legacy(bytes))
}

/// Store `pos`: one `pwrite` of one slot, under an exclusive `flock` on the file so writers
/// of the same cursor take turns. Not fsynced: losing the write in a crash moves the cursor
/// back, which at-least-once allows.
pub fn store(path: &Path, pos: u64) -> Result<()> {
    let dir = path.parent().expect("a cursor file has a parent");
    // Real directories only (see `fsutil::check_dir`): the inbox's and its `cursors`.
    if let Some(inbox) = dir.parent() {
        super::fsutil::check_dir(inbox)?;
    }
    super::fsutil::check_dir(dir)?;
    // inboxes/NAME/cursors, never the team directory above them.
    let file = with_subdir(dir, 3, || {
        super::fsutil::open_or_create(path, OpenOptions::new().read(true).write(true)).at(path)
    })?;
    file.lock().at(path)?;
    let mut buf = [0u8; FILE_LEN + 1];
    let n = read_head(&mut &file, &mut buf).at(path)?;
    let seq = match newest(&buf[..n]) {
        Some((seq, _)) => seq.wrapping_add(1),
        None if n == 0 => 0,
        // The older format, or garbage: replace the whole file once, atomically, so that a
        // crash now cannot lose the value it holds.
        None => return write_atomic(path, &encode(0, pos), false),
    };
    let at = (seq % 2) * SLOT as u64;
    file.write_all_at(&encode(seq, pos), at).at(path)
}

fn read_head(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One slot's bytes.
pub fn encode(seq: u64, pos: u64) -> [u8; SLOT] {
    let body = format!("{seq:020} {pos:020}");
    let line = format!("{body} {:08x}\n", crc32(body.as_bytes()));
    let mut out = [0u8; SLOT];
    out.copy_from_slice(line.as_bytes());
    out
}

/// The valid slot with the highest sequence number: `(seq, offset)`.
fn newest(bytes: &[u8]) -> Option<(u64, u64)> {
    (0..2)
        .filter_map(|i| {
            let slot = bytes.get(i * SLOT..(i + 1) * SLOT)?;
            decode(slot).filter(|(seq, _)| seq % 2 == i as u64)
        })
        .max_by_key(|(seq, _)| *seq)
}

fn decode(slot: &[u8]) -> Option<(u64, u64)> {
    if slot.len() != SLOT || slot[20] != b' ' || slot[41] != b' ' || slot[50] != b'\n' {
        return None;
    }
    let digits = |b: &[u8]| -> Option<u64> {
        if !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    };
    let seq = digits(&slot[..20])?;
    let pos = digits(&slot[21..41])?;
    let crc = std::str::from_utf8(&slot[42..50]).ok()?;
    if !crc
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (u32::from_str_radix(crc, 16).ok()? == crc32(&slot[..41])).then_some((seq, pos))
}

/// The format before this one: the offset as plain decimal ASCII.
fn legacy(bytes: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(bytes).ok()?.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// CRC-32 (IEEE 802.3, as zlib's `crc32`).
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn tmp() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cursors").join("worker");
        (d, p)
    }

    #[test]
    fn crc_is_zlibs() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn store_then_load_in_place_without_new_files() {
        let (_d, p) = tmp();
        assert_eq!(load(&p), None);
        store(&p, 42).unwrap();
        assert_eq!(load(&p), Some(42));
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        for pos in [43, 100, 7, u64::MAX] {
            store(&p, pos).unwrap();
            assert_eq!(load(&p), Some(pos));
        }
        let after = std::fs::metadata(&p).unwrap();
        assert_eq!(after.ino(), meta.ino(), "written in place");
        assert_eq!(after.len(), FILE_LEN as u64);
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn a_torn_slot_falls_back_to_the_value_before_it() {
        let (_d, p) = tmp();
        store(&p, 100).unwrap(); // seq 0, slot 0
        store(&p, 200).unwrap(); // seq 1, slot 1
        let good = std::fs::read(&p).unwrap();
        // Every way the write of seq 2 (slot 0, offset 300) can be cut short, byte by byte,
        // head first or tail first: the reader sees 200 (the previous value) until the new
        // record is whole. Any flipped byte in slot 1 makes it fall back to slot 0.
        let new = encode(2, 300);
        for cut in 0..=SLOT {
            let mut bytes = good.clone();
            bytes[..cut].copy_from_slice(&new[..cut]);
            let want = if bytes[..SLOT] == new { 300 } else { 200 };
            assert_eq!(parse(&bytes), Some(want), "cut {cut}");
            // Out of order (the tail first), too.
            let mut bytes = good.clone();
            bytes[SLOT - cut..SLOT].copy_from_slice(&new[SLOT - cut..]);
            let want = if bytes[..SLOT] == new { 300 } else { 200 };
            assert_eq!(parse(&bytes), Some(want), "tail {cut}");
        }
        for i in 0..SLOT {
            let mut bytes = good.clone();
            bytes[SLOT + i] ^= 0x04;
            assert_eq!(parse(&bytes), Some(100), "flip in slot 1 at {i}");
        }
        // The writer then replaces the torn slot, never the good one.
        let mut torn = good.clone();
        torn[..10].copy_from_slice(&new[..10]);
        std::fs::write(&p, &torn).unwrap();
        store(&p, 300).unwrap();
        assert_eq!(load(&p), Some(300));
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[SLOT..], &good[SLOT..], "slot 1 kept");
    }

    #[test]
    fn garbage_reads_as_none_and_is_replaced_whole() {
        let (_d, p) = tmp();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        for junk in [&b"\x00\xffjunk"[..], b"", b"12 34", b"-5", &[b'7'; 200]] {
            std::fs::write(&p, junk).unwrap();
            assert_eq!(load(&p), None, "{junk:?}");
            store(&p, 9).unwrap();
            assert_eq!(load(&p), Some(9));
        }
    }

    #[test]
    fn the_older_decimal_format_is_read_then_upgraded() {
        let (_d, p) = tmp();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(load(&p), Some(12345));
        store(&p, 20000).unwrap();
        assert_eq!(load(&p), Some(20000));
        assert_eq!(std::fs::read(&p).unwrap(), encode(0, 20000));
    }
}
