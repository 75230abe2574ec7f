//! The part of the ZIP format that `numpy.savez` uses: entries stored
//! without compression, each a local header and the bytes, then the central
//! directory and its end record (ZIP64 records are read, not written).
//! `numpy.savez_compressed`'s deflated entries are refused with a message.

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
const END64: u32 = 0x0606_4b50;
const LOCATOR64: u32 = 0x0706_4b50;

/// The CRC-32 (IEEE) table, built at compile time.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The CRC-32 of `bytes`, as ZIP (and zlib) compute it.
pub(super) fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// The longest name of an entry: its length is a 16-bit field.
pub(super) const MAX_NAME: usize = 0xFFFF;

/// An archive of `entries` (name, bytes), stored uncompressed. Every name
/// must be at most [`MAX_NAME`] bytes (the caller checks it and names the
/// key; here it is an error too).
pub(super) fn write_stored(entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>, String> {
    let too_big = || {
        "the archive would be over 4 GiB, which this writer does not support (no ZIP64); save \
         to safetensors instead"
            .to_string()
    };
    let count = u16::try_from(entries.len()).map_err(|_| {
        format!(
            "the archive would hold {} entries, over the 65535 this writer supports (no ZIP64); \
             save to safetensors instead",
            entries.len()
        )
    })?;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let offset = u32::try_from(out.len()).map_err(|_| too_big())?;
        let size = u32::try_from(data.len()).map_err(|_| too_big())?;
        let name_len = u16::try_from(name.len()).map_err(|_| {
            format!(
                "the entry name is {} bytes long, over the {MAX_NAME} bytes of a ZIP name",
                name.len()
            )
        })?;
        let crc = crc32(data);
        // Bit 11: the name is UTF-8.
        let flags: u16 = if name.is_ascii() { 0 } else { 1 << 11 };
        // 1980-01-01 00:00, the earliest DOS date.
        let (time, date): (u16, u16) = (0, (1 << 5) | 1);
        out.extend_from_slice(&LOCAL.to_le_bytes());
        for v in [20u16, flags, 0, time, date] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [crc, size, size] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);

        central.extend_from_slice(&CENTRAL.to_le_bytes());
        for v in [20u16, 20, flags, 0, time, date] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in [crc, size, size] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        // Name length, extra length, comment length, disk, internal attributes.
        for v in [name_len, 0, 0, 0, 0] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        // External attributes (none), the local header's offset.
        for v in [0u32, offset] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        central.extend_from_slice(name.as_bytes());
    }
    let central_offset = u32::try_from(out.len()).map_err(|_| too_big())?;
    let central_size = u32::try_from(central.len()).map_err(|_| too_big())?;
    out.extend_from_slice(&central);
    out.extend_from_slice(&END.to_le_bytes());
    for v in [0u16, 0, count, count] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [central_size, central_offset] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&0u16.to_le_bytes());
    u32::try_from(out.len()).map_err(|_| too_big())?;
    Ok(out)
}

/// Little-endian reads at an offset, `None` past the end.
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn corrupt(what: &str) -> String {
    format!("not a valid .npz (zip) archive: {what}; the file is truncated or corrupt")
}

/// The size of a central directory entry without its name, extra field and
/// comment; the fewest bytes one entry takes in the directory.
const CENTRAL_FIXED: usize = 46;
/// The size of a local header without its name and extra field.
const LOCAL_FIXED: u64 = 30;

/// An archive's bytes, in memory or in a regular file of known size, read
/// by ranges that are checked against that size before anything is read or
/// allocated.
pub(super) enum Input<'a> {
    Bytes(&'a [u8]),
    File(std::fs::File, u64),
}

impl<'a> Input<'a> {
    fn len(&self) -> u64 {
        match self {
            Input::Bytes(b) => b.len() as u64,
            Input::File(_, len) => *len,
        }
    }

    /// The `n` bytes at `at`; an error (`what` is missing) if they lie
    /// past the end.
    pub(super) fn get(&mut self, at: u64, n: u64, what: &str) -> Result<Cow<'a, [u8]>, String> {
        let end = at
            .checked_add(n)
            .filter(|&e| e <= self.len())
            .ok_or_else(|| corrupt(&format!("{what} lies past the end of the file")))?;
        match self {
            Input::Bytes(b) => {
                let b: &'a [u8] = b;
                // In range: `end <= b.len()`, checked above.
                Ok(Cow::Borrowed(&b[at as usize..end as usize]))
            }
            Input::File(file, _) => {
                let n = usize::try_from(n).map_err(|_| corrupt(&format!("{what} is too large")))?;
                let mut out = vec![0u8; n];
                file.seek(SeekFrom::Start(at))
                    .and_then(|_| file.read_exact(&mut out))
                    .map_err(|e| format!("cannot read the file: {e}"))?;
                Ok(Cow::Owned(out))
            }
        }
    }
}

/// One entry of an archive, as its central directory and local header
/// describe it (checked: stored, in the file, not overlapping another).
pub(super) struct Entry {
    pub(super) name: String,
    /// Where its bytes start, and how many.
    data: u64,
    size: u64,
    crc: u32,
}

/// The entries of a ZIP archive of stored entries, in the order of its
/// central directory, checked before any entry's bytes are read:
///
/// - the end record, the ZIP64 records and the central directory lie in the
///   file, and the directory holds the entries its end record counts (each
///   takes at least 46 bytes of it, so the count is bounded by the file's
///   size);
/// - each entry is stored (not compressed or encrypted), its local header's
///   name is its central directory name, and its bytes lie in the file;
/// - no two entries overlap (as Python's `zipfile` refuses since
///   CVE-2024-0450): sorted by where they start, each entry's local header
///   and bytes end before the next entry's local header begins, and the last
///   before the central directory. So the entries' bytes together are at most
///   the file's size, whatever the directory says.
pub(super) fn entries(input: &mut Input<'_>) -> Result<Vec<Entry>, String> {
    let file_len = input.len();
    // The end record: 22 bytes and a comment of up to 65535, at the end.
    let tail_len = file_len.min(22 + 0xFFFF);
    let tail_start = file_len - tail_len;
    let tail = input.get(tail_start, tail_len, "the end record")?;
    let tail: &[u8] = &tail;
    let end_in_tail = (0..=tail.len().saturating_sub(22))
        .rev()
        .find(|&i| tail.len() >= 22 && u32_at(tail, i) == Some(END))
        .ok_or_else(|| corrupt("no end-of-central-directory record"))?;
    let end = tail_start + end_in_tail as u64;
    let field = |v: Option<u64>| v.ok_or_else(|| corrupt("a record ends early"));
    let mut count = field(u16_at(tail, end_in_tail + 10).map(u64::from))?;
    let mut size = field(u32_at(tail, end_in_tail + 12).map(u64::from))?;
    let mut offset = field(u32_at(tail, end_in_tail + 16).map(u64::from))?;
    if count == 0xFFFF || size == 0xFFFF_FFFF || offset == 0xFFFF_FFFF {
        // ZIP64: a locator just before the end record points to the ZIP64
        // end record, which has the full-width fields.
        let locator = end
            .checked_sub(20)
            .ok_or_else(|| corrupt("a ZIP64 archive without its locator"))?;
        let loc = input.get(locator, 20, "the ZIP64 locator")?;
        if u32_at(&loc, 0) != Some(LOCATOR64) {
            return Err(corrupt("a ZIP64 archive without its locator"));
        }
        let at = field(u64_at(&loc, 8))?;
        let record = input.get(at, 56, "the ZIP64 end record")?;
        if u32_at(&record, 0) != Some(END64) {
            return Err(corrupt(
                "the ZIP64 end record is not where its locator says",
            ));
        }
        count = field(u64_at(&record, 32))?;
        size = field(u64_at(&record, 40))?;
        offset = field(u64_at(&record, 48))?;
    }
    if offset.checked_add(size).is_none_or(|e| e > file_len) {
        return Err(corrupt("the central directory lies outside the file"));
    }
    // Every entry takes at least 46 bytes of the directory: a count the
    // directory cannot hold is refused before anything is read for it.
    if count > size / CENTRAL_FIXED as u64 {
        return Err(corrupt(&format!(
            "the end record counts {count} entries, but the central directory's {size} bytes \
             hold at most {}",
            size / CENTRAL_FIXED as u64
        )));
    }
    let directory = input.get(offset, size, "the central directory")?;
    let directory: &[u8] = &directory;
    let mut out = Vec::new();
    let mut at = 0usize;
    for _ in 0..count {
        if u32_at(directory, at) != Some(CENTRAL) {
            return Err(corrupt("a central directory entry is missing or damaged"));
        }
        let get16 = |o: usize| field(u16_at(directory, at + o).map(u64::from));
        let get32 = |o: usize| field(u32_at(directory, at + o).map(u64::from));
        let (flags, method) = (get16(8)?, get16(10)?);
        let crc = get32(16)? as u32;
        let (mut compressed, mut plain) = (get32(20)?, get32(24)?);
        let (name_len, extra_len, comment_len) = (
            get16(28)? as usize,
            get16(30)? as usize,
            get16(32)? as usize,
        );
        let mut local = get32(42)?;
        let name_bytes = directory
            .get(at + 46..at + 46 + name_len)
            .ok_or_else(|| corrupt("an entry's name ends early"))?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        let extra = directory
            .get(at + 46 + name_len..at + 46 + name_len + extra_len)
            .ok_or_else(|| corrupt("an entry's extra field ends early"))?;
        // The ZIP64 extra field (id 1) holds, in order, each 32-bit field
        // that is 0xFFFFFFFF.
        let mut e = 0usize;
        while e + 4 <= extra.len() {
            let (id, len) = (
                field(u16_at(extra, e).map(u64::from))?,
                field(u16_at(extra, e + 2).map(u64::from))? as usize,
            );
            if id == 1 {
                let mut p = e + 4;
                for v in [&mut plain, &mut compressed, &mut local] {
                    if *v == 0xFFFF_FFFF {
                        *v = field(u64_at(extra, p))?;
                        p += 8;
                    }
                }
            }
            e += 4 + len;
        }
        if flags & 1 != 0 {
            return Err(format!(
                "entry `{name}` is encrypted, which is not supported"
            ));
        }
        if method != 0 {
            return Err(format!(
                "entry `{name}` is compressed (method {method}{}); only uncompressed archives \
                 are read, as `numpy.savez` writes them (not `numpy.savez_compressed`)",
                if method == 8 { ", deflate" } else { "" }
            ));
        }
        if compressed != plain {
            return Err(corrupt(&format!(
                "entry `{name}` is stored with {compressed} bytes but says it holds {plain}"
            )));
        }
        if plain > file_len {
            return Err(corrupt(&format!(
                "entry `{name}` says it holds {plain} bytes, more than the file's {file_len}"
            )));
        }
        let header = input.get(
            local,
            LOCAL_FIXED,
            &format!("the local header of entry `{name}`"),
        )?;
        if u32_at(&header, 0) != Some(LOCAL) {
            return Err(corrupt(&format!(
                "the local header of entry `{name}` is missing"
            )));
        }
        let local_name = field(u16_at(&header, 26).map(u64::from))?;
        let local_extra = field(u16_at(&header, 28).map(u64::from))?;
        let stored_name = input.get(
            local + LOCAL_FIXED,
            local_name,
            &format!("the local header of entry `{name}`"),
        )?;
        if *stored_name != *name_bytes {
            return Err(corrupt(&format!(
                "entry `{name}` has the name `{}` in its local header",
                String::from_utf8_lossy(&stored_name)
            )));
        }
        // In range: `local` and the two lengths are at most the file's size
        // (a u64) plus 2 * 65535.
        let data = local + LOCAL_FIXED + local_name + local_extra;
        if data.checked_add(plain).is_none_or(|e| e > file_len) {
            return Err(corrupt(&format!(
                "entry `{name}` ends past the end of the file"
            )));
        }
        out.push((
            local,
            Entry {
                name,
                data,
                size: plain,
                crc,
            },
        ));
        at += 46 + name_len + extra_len + comment_len;
    }
    // No overlaps: in the order of their local headers, each entry ends
    // before the next begins, and the last before the central directory.
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&i| out[i].0);
    for (k, &i) in order.iter().enumerate() {
        let (_, entry) = &out[i];
        let (limit, what) = match order.get(k + 1) {
            Some(&j) => (out[j].0, format!("entry `{}`", out[j].1.name)),
            None => (offset, "the central directory".to_string()),
        };
        if entry.data + entry.size > limit {
            return Err(corrupt(&format!(
                "entry `{}` overlaps {what} (possible zip bomb)",
                entry.name
            )));
        }
    }
    Ok(out.into_iter().map(|(_, e)| e).collect())
}

/// The bytes of `entry`, their CRC checked.
pub(super) fn data<'a>(input: &mut Input<'a>, entry: &Entry) -> Result<Cow<'a, [u8]>, String> {
    let bytes = input.get(entry.data, entry.size, &format!("entry `{}`", entry.name))?;
    if crc32(&bytes) != entry.crc {
        return Err(corrupt(&format!(
            "entry `{}` fails its CRC check (its bytes were altered)",
            entry.name
        )));
    }
    Ok(bytes)
}

/// The entries (name, bytes) of a ZIP archive in memory (see [`entries`]).
#[cfg(feature = "unit-tests")]
fn read_stored(b: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut input = Input::Bytes(b);
    entries(&mut input)?
        .iter()
        .map(|e| Ok((e.name.clone(), data(&mut input, e)?.into_owned())))
        .collect()
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn crc32_matches_the_published_check_value() {
        // The CRC-32/ISO-HDLC check value of "123456789" (the catalogue of
        // parametrised CRC algorithms).
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    pub(crate) fn stored_archives_round_trip() {
        let entries = vec![
            ("a.npy".to_string(), vec![1u8, 2, 3]),
            ("ünï.npy".to_string(), vec![]),
        ];
        let zip = write_stored(&entries).unwrap();
        let back = read_stored(&zip).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[0].0.as_str(), &back[0].1[..]),
            ("a.npy", &[1u8, 2, 3][..])
        );
        assert_eq!((back[1].0.as_str(), back[1].1.len()), ("ünï.npy", 0));
    }

    crate::core::unit_test::test_list! {
        crc32_matches_the_published_check_value,
        stored_archives_round_trip,
    }
}
