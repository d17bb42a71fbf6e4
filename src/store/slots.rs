//! Small files overwritten in place, for a value with one writer that changes often: a
//! reader's cursor (every handled message) and a worker's live state (twice per turn).
//! Replacing the file (temp file and rename) allocated and freed an inode per write, and with
//! hundreds of workers every create and rename queued on one directory's lock (BENCHMARKS.md).
//! So the file holds two fixed-size records ("slots") and a write replaces the older one with
//! one `pwrite`, under an exclusive `flock` on the file so writers take turns; never the slot
//! holding the newest valid value. A record carries a sequence number and a CRC-32, so a torn
//! write (a crash, or a reader racing the writer) is detected and the other slot, the value
//! before it, is read. Not fsynced: a cursor that moves back means a redelivery, which
//! at-least-once allows; live state is written again by a restarted worker.
//!
//! Every slot starts `SEQ ` (a zero-padded 20-digit decimal) and its CRC is 8 lowercase hex
//! digits then `\n`; slot `SEQ % 2` starts at byte `(SEQ % 2) * SLOT`; the valid slot with the
//! highest SEQ wins. A file holding neither valid slot nor nothing (an older format, garbage)
//! is replaced atomically, whole, on the next write, so a crash then cannot lose its value; so
//! is a file with other names (a hard link to it), which is never written in place.
//! Two formats:
//!
//! - `Offset` (cursors): 51 bytes of ASCII, `SEQ OFFSET CRC\n`, OFFSET a zero-padded 20-digit
//!   decimal, CRC the CRC-32 (IEEE, as zlib) of the first 41 bytes. The older format (one
//!   decimal offset) is still read.
//! - `Payload` (live state): 4096 bytes, a 41-byte header `SEQ LEN CRC\n` (LEN a zero-padded
//!   10-digit decimal, CRC over the first 31 header bytes and the payload), then LEN payload
//!   bytes, then zero bytes. A payload longer than `CAPACITY` is written the old way: the
//!   whole file is the payload (JSON, so it starts with `{`; a slot starts with a digit).

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::fsutil::{open_or_create, open_read, write_atomic};
use crate::error::{IoContext, Result};

/// How a value is written in one slot and read back.
pub(crate) trait Format {
    type Value;
    /// The size of one slot.
    const SLOT: usize;
    /// Where the CRC field starts (after `SEQ FIELD `).
    const CRC_AT: usize;
    /// Read the whole file, not only its two slots (a value may stand there whole).
    const WHOLE: bool = false;
    /// The field after SEQ, as written (its width fixed).
    fn field(value: &Self::Value) -> String;
    /// The bytes after the header line, if any (`Payload`).
    fn tail(value: &Self::Value) -> &[u8];
    /// The value from the field and the slot's bytes after the header line, `None` when they
    /// do not make one.
    fn value(field: u64, rest: &[u8]) -> Option<(Self::Value, usize)>;
    /// What a file that holds no valid slot reads as (an older format), if anything.
    fn other(bytes: &[u8]) -> Option<Self::Value>;
    /// The whole file that replaces an older format or garbage, holding `value` at seq 0.
    fn fresh(value: &Self::Value) -> Vec<u8>;
}

/// A reader's place in an inbox log.
pub(crate) struct Offset;

impl Format for Offset {
    type Value = u64;
    const SLOT: usize = 51;
    const CRC_AT: usize = 42;
    fn field(pos: &u64) -> String {
        format!("{pos:020}")
    }
    fn tail(_: &u64) -> &[u8] {
        &[]
    }
    fn value(pos: u64, _: &[u8]) -> Option<(u64, usize)> {
        Some((pos, 0))
    }
    /// The format before this one: the offset as plain decimal ASCII.
    fn other(bytes: &[u8]) -> Option<u64> {
        let s = std::str::from_utf8(bytes).ok()?.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    }
    fn fresh(pos: &u64) -> Vec<u8> {
        encode::<Offset>(0, pos)
    }
}

/// A JSON value of up to `CAPACITY` bytes.
pub(crate) struct Payload;

/// The longest payload a slot holds.
pub const CAPACITY: usize = Payload::SLOT - 41;

impl Format for Payload {
    type Value = Vec<u8>;
    const SLOT: usize = 4096;
    const CRC_AT: usize = 32;
    const WHOLE: bool = true;
    fn field(payload: &Vec<u8>) -> String {
        format!("{:010}", payload.len())
    }
    fn tail(payload: &Vec<u8>) -> &[u8] {
        payload
    }
    fn value(len: u64, rest: &[u8]) -> Option<(Vec<u8>, usize)> {
        let len = usize::try_from(len).ok()?;
        Some((rest.get(..len)?.to_vec(), len))
    }
    /// The whole-file form: the payload itself.
    fn other(bytes: &[u8]) -> Option<Vec<u8>> {
        (bytes.first() == Some(&b'{')).then(|| bytes.to_vec())
    }
    fn fresh(payload: &Vec<u8>) -> Vec<u8> {
        let mut out = encode::<Payload>(0, payload);
        out.resize(2 * Payload::SLOT, 0);
        out
    }
}

/// The most a value written whole (`Format::WHOLE`) is read to: a live state is a few KiB.
const WHOLE_MAX: u64 = 16 << 20;

/// The newest value in the file, `None` when there is none.
pub(crate) fn load_as<F: Format>(path: &Path) -> Option<F::Value> {
    load_checked::<F>(path).ok().flatten()
}

/// `load_as`, telling a file that is missing (`Ok(None)`) from one that cannot be opened as
/// a regular file (`Err`: a FIFO, a symbolic link, a directory planted there; never waited on
/// nor followed). A file that opens but holds no valid value is `Ok(None)`, as before; so is
/// one whose directory is a file (`ENOTDIR`: a worker says that inbox problem itself and waits
/// for it to be put right).
pub(crate) fn load_checked<F: Format>(path: &Path) -> std::io::Result<Option<F::Value>> {
    let file = match open_read(path) {
        Err(e)
            if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        opened => opened?,
    };
    // Read through `Take`, which gives no size hint: `read_to_end` on a `File` itself first
    // asks `fstat` and `lseek` for one, two system calls of the seven a live state's read
    // made (`status` reads a thousand of them). Into spare capacity, not a zeroed buffer.
    // A value written whole is still bounded: a state file grown past `WHOLE_MAX` (a planted
    // sparse file of gigabytes, read by `status` for every member) reads as none.
    let limit = if F::WHOLE {
        WHOLE_MAX + 1
    } else {
        2 * F::SLOT as u64 + 1
    };
    let mut buf = Vec::with_capacity(2 * F::SLOT + 1);
    if std::io::Read::read_to_end(&mut std::io::Read::take(&file, limit), &mut buf).is_err()
        || buf.len() as u64 > WHOLE_MAX
    {
        return Ok(None);
    }
    Ok(parse_as::<F>(&buf))
}

/// The value in a file's bytes (see the module comment), `None` when there is none.
pub(crate) fn parse_as<F: Format>(bytes: &[u8]) -> Option<F::Value> {
    newest::<F>(bytes)
        .map(|(_, v)| v)
        .or_else(|| F::other(bytes))
}

/// Store `value` in the open `file` at `path` (see the module comment). A file with other
/// names too (a hard link made to it: another member's state, a file outside the home) is not
/// written in place but replaced whole, so the write lands in this name's own file only
/// (attacker QA: two members' states linked together were written over by each in turn without
/// end, and a link to an outside file was written into).
pub(crate) fn store_in<F: Format>(file: &File, path: &Path, value: &F::Value) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if file.metadata().at(path)?.nlink() > 1 {
        return write_atomic(path, &F::fresh(value), false);
    }
    file.lock().at(path)?;
    let mut buf = vec![0u8; 2 * F::SLOT + 1];
    let n = read_head(file, &mut buf).at(path)?;
    let seq = match newest::<F>(&buf[..n]) {
        Some((seq, _)) => seq.wrapping_add(1),
        None if n == 0 => 0,
        None => return write_atomic(path, &F::fresh(value), false),
    };
    file.write_all_at(&encode::<F>(seq, value), (seq % 2) * F::SLOT as u64)
        .at(path)
}

/// The live state's value, `None` when there is none.
pub fn load(path: &Path) -> Option<Vec<u8>> {
    load_as::<Payload>(path)
}

/// Whether the regular file at `path` (never through a link) holds something other than a live
/// state: not empty (a file being made is empty until its first write), and no slot nor whole
/// value in it that `is_state` takes (written over by hand, say).
pub fn spoiled(path: &Path, is_state: impl Fn(&[u8]) -> bool) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0)
        && !load(path).is_some_and(|b| is_state(&b))
}

/// The live state's `store`: a payload too big for a slot replaces the file whole.
pub fn store(path: &Path, payload: &[u8]) -> Result<()> {
    if payload.len() > CAPACITY {
        return write_atomic(path, payload, false);
    }
    let file = open_or_create(path, OpenOptions::new().read(true).write(true)).at(path)?;
    store_in::<Payload>(&file, path, &payload.to_vec())
}

/// The live state's `store` in place of something that is not a state file (a FIFO or link
/// planted at it: `store` fails on it, never following nor waiting on it): a new file holding
/// `payload`, made with `O_EXCL|O_NOFOLLOW` beside it and renamed over it (`write_atomic`),
/// so what was there is neither opened nor followed. A directory there is not replaced (the
/// rename fails).
pub fn replace(path: &Path, payload: &[u8]) -> Result<()> {
    let bytes = if payload.len() > CAPACITY {
        payload.to_vec()
    } else {
        Payload::fresh(&payload.to_vec())
    };
    write_atomic(path, &bytes, false)
}

/// `store` of the file `name` in the directory `dir` held by its descriptor (never through
/// a link swapped in above it).
pub fn store_at(dir: &super::fsutil::DirFd, name: &str, payload: &[u8]) -> Result<()> {
    if payload.len() > CAPACITY {
        return dir
            .replace(name, payload, super::fsutil::Sync::None)
            .map(drop);
    }
    let (file, _) = dir.file(name, nix::fcntl::OFlag::O_RDWR)?;
    store_in::<Payload>(&file, &dir.path().join(name), &payload.to_vec())
}

/// `replace` of the file `name` in the directory `dir` held by its descriptor.
pub fn replace_at(dir: &super::fsutil::DirFd, name: &str, payload: &[u8]) -> Result<()> {
    let bytes = if payload.len() > CAPACITY {
        payload.to_vec()
    } else {
        Payload::fresh(&payload.to_vec())
    };
    dir.replace(name, &bytes, super::fsutil::Sync::None)
        .map(drop)
}

fn read_head(file: &File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One slot's bytes (`SLOT` long). A payload must fit (`CAPACITY`).
pub(crate) fn encode<F: Format>(seq: u64, value: &F::Value) -> Vec<u8> {
    let head = format!("{seq:020} {}", F::field(value));
    let tail = F::tail(value);
    let crc = {
        let mut h = crc32fast::Hasher::new();
        h.update(head.as_bytes());
        h.update(tail);
        h.finalize()
    };
    let mut out = Vec::with_capacity(F::SLOT);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(format!(" {crc:08x}\n").as_bytes());
    out.extend_from_slice(tail);
    out.resize(F::SLOT, 0);
    out
}

/// The valid slot with the highest sequence number.
fn newest<F: Format>(bytes: &[u8]) -> Option<(u64, F::Value)> {
    (0..2)
        .filter_map(|i| {
            let slot = bytes.get(i * F::SLOT..(i + 1) * F::SLOT)?;
            decode::<F>(slot).filter(|(seq, _)| seq % 2 == i as u64)
        })
        .max_by_key(|(seq, _)| *seq)
}

fn decode<F: Format>(slot: &[u8]) -> Option<(u64, F::Value)> {
    let at = F::CRC_AT;
    let head = at + 9;
    if slot.len() != F::SLOT || slot[20] != b' ' || slot[at - 1] != b' ' || slot[at + 8] != b'\n' {
        return None;
    }
    let digits = |b: &[u8]| -> Option<u64> {
        if !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    };
    let seq = digits(&slot[..20])?;
    let (value, len) = F::value(digits(&slot[21..at - 1])?, &slot[head..])?;
    let crc = std::str::from_utf8(&slot[at..at + 8]).ok()?;
    if !crc
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&slot[..at - 1]);
    h.update(&slot[head..head + len]);
    (u32::from_str_radix(crc, 16).ok()? == h.finalize()).then_some((seq, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A cursor's store, as `inbox::set_cursor` does it (without the directory checks).
    fn store_offset(p: &Path, pos: u64) -> Result<()> {
        let dir = p.parent().unwrap();
        std::fs::create_dir_all(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let file = open_or_create(p, OpenOptions::new().read(true).write(true)).at(p)?;
        store_in::<Offset>(&file, p, &pos)
    }

    /// A live state grown past `WHOLE_MAX` (a planted sparse file, read by `status` for
    /// every member) reads as none, unread past the limit.
    #[test]
    fn a_state_file_grown_past_the_limit_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.json");
        store(&p, b"{\"status\":\"idle\"}").unwrap();
        assert!(load(&p).is_some());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(WHOLE_MAX + 1)
            .unwrap();
        assert_eq!(load(&p), None);
    }

    #[test]
    fn both_formats_are_byte_for_byte_the_ones_on_disk() {
        // Files written before the two formats shared this module still read.
        let cursor = b"00000000000000000003 00000000000000000042 ";
        let crc = crc32fast::hash(&cursor[..41]);
        let mut slot = cursor.to_vec();
        slot.extend_from_slice(format!("{crc:08x}\n").as_bytes());
        assert_eq!(encode::<Offset>(3, &42), slot);
        let mut file = vec![0u8; Offset::SLOT];
        file.extend_from_slice(&slot);
        assert_eq!(parse_as::<Offset>(&file), Some(42));
        let head = b"00000000000000000001 0000000007";
        let mut h = crc32fast::Hasher::new();
        h.update(head);
        h.update(b"{\"a\":1}");
        let mut slot = head.to_vec();
        slot.extend_from_slice(format!(" {:08x}\n{{\"a\":1}}", h.finalize()).as_bytes());
        slot.resize(Payload::SLOT, 0);
        assert_eq!(encode::<Payload>(1, &b"{\"a\":1}".to_vec()), slot);
        let mut file = vec![0u8; Payload::SLOT];
        file.extend_from_slice(&slot);
        assert_eq!(parse_as::<Payload>(&file).unwrap(), b"{\"a\":1}");
    }

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
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            2 * Payload::SLOT as u64
        );
    }

    #[test]
    fn a_torn_or_flipped_slot_reads_as_the_value_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.json");
        store(&p, b"{\"old\":1}").unwrap();
        store(&p, b"{\"new\":2}").unwrap();
        let good = std::fs::read(&p).unwrap();
        // seq 1 is in slot 1: cut it anywhere, or flip any byte of its header or payload.
        for cut in [
            Payload::SLOT,
            Payload::SLOT + 1,
            Payload::SLOT + 20,
            Payload::SLOT + 41,
            Payload::SLOT + 41 + 4,
        ] {
            assert_eq!(
                parse_as::<Payload>(&good[..cut]).unwrap(),
                b"{\"old\":1}",
                "cut {cut}"
            );
        }
        for at in (Payload::SLOT..Payload::SLOT + 41 + 9).step_by(3) {
            let mut bad = good.clone();
            bad[at] ^= 0x55;
            assert_eq!(
                parse_as::<Payload>(&bad).unwrap(),
                b"{\"old\":1}",
                "flip {at}"
            );
        }
        // The next write goes to the slot that is not the newest valid one.
        let mut torn = good.clone();
        torn[Payload::SLOT + 5] ^= 0x55;
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
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            2 * Payload::SLOT as u64
        );
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

    fn tmp() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cursors").join("worker");
        (d, p)
    }

    #[test]
    fn crc_is_zlibs() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32fast::hash(b""), 0);
    }

    #[test]
    fn store_then_load_in_place_without_new_files() {
        let (_d, p) = tmp();
        assert_eq!(load_as::<Offset>(&p), None);
        store_offset(&p, 42).unwrap();
        assert_eq!(load_as::<Offset>(&p), Some(42));
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        for pos in [43, 100, 7, u64::MAX] {
            store_offset(&p, pos).unwrap();
            assert_eq!(load_as::<Offset>(&p), Some(pos));
        }
        let after = std::fs::metadata(&p).unwrap();
        assert_eq!(after.ino(), meta.ino(), "written in place");
        assert_eq!(after.len(), 2 * Offset::SLOT as u64);
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn a_torn_slot_falls_back_to_the_value_before_it() {
        let (_d, p) = tmp();
        store_offset(&p, 100).unwrap(); // seq 0, slot 0
        store_offset(&p, 200).unwrap(); // seq 1, slot 1
        let good = std::fs::read(&p).unwrap();
        // Every way the write of seq 2 (slot 0, offset 300) can be cut short, byte by byte,
        // head first or tail first: the reader sees 200 (the previous value) until the new
        // record is whole. Any flipped byte in slot 1 makes it fall back to slot 0.
        let new = encode::<Offset>(2, &300);
        for cut in 0..=Offset::SLOT {
            let mut bytes = good.clone();
            bytes[..cut].copy_from_slice(&new[..cut]);
            let want = if bytes[..Offset::SLOT] == new {
                300
            } else {
                200
            };
            assert_eq!(parse_as::<Offset>(&bytes), Some(want), "cut {cut}");
            // Out of order (the tail first), too.
            let mut bytes = good.clone();
            bytes[Offset::SLOT - cut..Offset::SLOT].copy_from_slice(&new[Offset::SLOT - cut..]);
            let want = if bytes[..Offset::SLOT] == new {
                300
            } else {
                200
            };
            assert_eq!(parse_as::<Offset>(&bytes), Some(want), "tail {cut}");
        }
        for i in 0..Offset::SLOT {
            let mut bytes = good.clone();
            bytes[Offset::SLOT + i] ^= 0x04;
            assert_eq!(
                parse_as::<Offset>(&bytes),
                Some(100),
                "flip in slot 1 at {i}"
            );
        }
        // The writer then replaces the torn slot, never the good one.
        let mut torn = good.clone();
        torn[..10].copy_from_slice(&new[..10]);
        std::fs::write(&p, &torn).unwrap();
        store_offset(&p, 300).unwrap();
        assert_eq!(load_as::<Offset>(&p), Some(300));
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[Offset::SLOT..], &good[Offset::SLOT..], "slot 1 kept");
    }

    #[test]
    fn garbage_reads_as_none_and_is_replaced_whole() {
        let (_d, p) = tmp();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        for junk in [&b"\x00\xffjunk"[..], b"", b"12 34", b"-5", &[b'7'; 200]] {
            std::fs::write(&p, junk).unwrap();
            assert_eq!(load_as::<Offset>(&p), None, "{junk:?}");
            store_offset(&p, 9).unwrap();
            assert_eq!(load_as::<Offset>(&p), Some(9));
        }
    }

    #[test]
    fn the_older_decimal_format_is_read_then_upgraded() {
        let (_d, p) = tmp();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(load_as::<Offset>(&p), Some(12345));
        store_offset(&p, 20000).unwrap();
        assert_eq!(load_as::<Offset>(&p), Some(20000));
        assert_eq!(std::fs::read(&p).unwrap(), encode::<Offset>(0, &20000));
    }
}
