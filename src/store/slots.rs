//! A small file overwritten in place, for a value with one writer that changes often: a
//! worker's live state, written twice per turn. Replacing the file (temp file and rename)
//! allocated and freed an inode per write, and with hundreds of workers in one `state/`
//! directory every create and rename queued on that directory's lock: a third of a worker's
//! CPU in a broadcast to 300 (BENCHMARKS.md). As `cursor.rs` does for cursors, the file holds
//! two fixed-size records ("slots") and a write replaces the older one with one `pwrite`, so
//! a torn write (a crash, or a reader racing the writer) leaves the value before it readable.
//!
//! A slot is `SLOT` bytes: a 41-byte header `SEQ LEN CRC\n` (SEQ a zero-padded 20-digit
//! decimal, LEN a zero-padded 10-digit decimal, CRC the CRC-32 of the first 31 header bytes
//! and the payload in 8 lowercase hex digits), then LEN payload bytes, then zero bytes. Slot
//! `SEQ % 2` starts at byte `(SEQ % 2) * SLOT`; the valid slot with the highest SEQ wins.
//! A payload longer than `CAPACITY` is written the old way instead: the whole file is the
//! payload, replaced atomically. Readers tell the two apart by the first byte (a payload is
//! JSON and starts with `{`; a slot starts with a digit), and a writer replaces such a file
//! (or garbage) atomically by a slotted one on its next write.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::fsutil::{open_or_create, write_atomic};
use crate::error::{IoContext, Result};

/// The size of one slot.
pub const SLOT: usize = 4096;
const HEAD: usize = 41;
/// The longest payload a slot holds.
pub const CAPACITY: usize = SLOT - HEAD;

/// The newest value in the file (see the module comment), `None` when there is none.
pub fn load(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(2 * SLOT);
    super::fsutil::open_read(path)
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    parse(bytes)
}

/// The value in a file's bytes.
pub fn parse(bytes: Vec<u8>) -> Option<Vec<u8>> {
    match bytes.first() {
        Some(b'{') => Some(bytes),
        _ => newest(&bytes).map(|(_, payload)| payload.to_vec()),
    }
}

/// Store `payload` (one `pwrite` of one slot, under an exclusive `flock` on the file). Not
/// fsynced: this is state a restarted worker writes again.
pub fn store(path: &Path, payload: &[u8]) -> Result<()> {
    if payload.len() > CAPACITY {
        return write_atomic(path, payload, false);
    }
    let file = open_or_create(path, std::fs::OpenOptions::new().read(true).write(true)).at(path)?;
    file.lock().at(path)?;
    let mut head = vec![0u8; 2 * SLOT];
    let n = read_at_most(&file, &mut head).at(path)?;
    let seq = match newest(&head[..n]) {
        Some((seq, _)) => seq.wrapping_add(1),
        None if n == 0 => 0,
        // The whole-file form, or garbage: replace it at once, so that a crash now cannot
        // leave neither the old value nor the new.
        None => {
            let mut fresh = encode(0, payload);
            fresh.resize(2 * SLOT, 0);
            return write_atomic(path, &fresh, false);
        }
    };
    file.write_all_at(&encode(seq, payload), (seq % 2) * SLOT as u64)
        .at(path)
}

fn read_at_most(file: &File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One slot's bytes (`SLOT` long). `payload` must fit (`CAPACITY`).
pub fn encode(seq: u64, payload: &[u8]) -> Vec<u8> {
    let head = format!("{seq:020} {:010}", payload.len());
    let crc = crc_of(head.as_bytes(), payload);
    let mut out = Vec::with_capacity(SLOT);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(format!(" {crc:08x}\n").as_bytes());
    out.extend_from_slice(payload);
    out.resize(SLOT, 0);
    out
}

fn crc_of(head: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    h.update(payload);
    h.finalize()
}

/// The valid slot with the highest sequence number: `(seq, payload)`.
fn newest(bytes: &[u8]) -> Option<(u64, &[u8])> {
    (0..2)
        .filter_map(|i| {
            let slot = bytes.get(i * SLOT..(i + 1) * SLOT)?;
            decode(slot).filter(|(seq, _)| seq % 2 == i as u64)
        })
        .max_by_key(|(seq, _)| *seq)
}

fn decode(slot: &[u8]) -> Option<(u64, &[u8])> {
    if slot.len() != SLOT || slot[20] != b' ' || slot[31] != b' ' || slot[40] != b'\n' {
        return None;
    }
    let digits = |b: &[u8]| -> Option<u64> {
        if !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    };
    let seq = digits(&slot[..20])?;
    let len = usize::try_from(digits(&slot[21..31])?).ok()?;
    let payload = slot.get(HEAD..HEAD.checked_add(len)?)?;
    let crc = std::str::from_utf8(&slot[32..40]).ok()?;
    if !crc
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (u32::from_str_radix(crc, 16).ok()? == crc_of(&slot[..31], payload)).then_some((seq, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_alternating_slots() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.json");
        assert_eq!(load(&p), None);
        for i in 0..5u8 {
            let v = format!("{{\"n\":{i}}}");
            store(&p, v.as_bytes()).unwrap();
            assert_eq!(load(&p).unwrap(), v.as_bytes());
        }
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 * SLOT as u64);
    }

    #[test]
    fn a_torn_or_flipped_slot_reads_as_the_value_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.json");
        store(&p, b"{\"old\":1}").unwrap();
        store(&p, b"{\"new\":2}").unwrap();
        let good = std::fs::read(&p).unwrap();
        // seq 1 is in slot 1: cut it anywhere, or flip any byte of its header or payload.
        for cut in [SLOT, SLOT + 1, SLOT + 20, SLOT + HEAD, SLOT + HEAD + 4] {
            assert_eq!(
                parse(good[..cut].to_vec()).unwrap(),
                b"{\"old\":1}",
                "cut {cut}"
            );
        }
        for at in (SLOT..SLOT + HEAD + 9).step_by(3) {
            let mut bad = good.clone();
            bad[at] ^= 0x55;
            assert_eq!(parse(bad).unwrap(), b"{\"old\":1}", "flip {at}");
        }
        // The next write goes to the slot that is not the newest valid one.
        let mut torn = good.clone();
        torn[SLOT + 5] ^= 0x55;
        std::fs::write(&p, &torn).unwrap();
        store(&p, b"{\"next\":3}").unwrap();
        assert_eq!(load(&p).unwrap(), b"{\"next\":3}");
    }

    #[test]
    fn whole_file_json_is_read_and_replaced_and_big_values_use_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.json");
        std::fs::write(&p, b"{\"status\":\"idle\"}").unwrap();
        assert_eq!(load(&p).unwrap(), b"{\"status\":\"idle\"}");
        store(&p, b"{\"a\":1}").unwrap();
        assert_eq!(load(&p).unwrap(), b"{\"a\":1}");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 * SLOT as u64);
        let big = format!("{{\"s\":\"{}\"}}", "x".repeat(CAPACITY));
        store(&p, big.as_bytes()).unwrap();
        assert_eq!(load(&p).unwrap(), big.as_bytes());
        store(&p, b"{\"b\":2}").unwrap();
        assert_eq!(load(&p).unwrap(), b"{\"b\":2}");
        // Garbage reads as nothing and is replaced.
        std::fs::write(&p, b"\x00\x01garbage").unwrap();
        assert_eq!(load(&p), None);
        store(&p, b"{\"c\":3}").unwrap();
        assert_eq!(load(&p).unwrap(), b"{\"c\":3}");
    }
}
