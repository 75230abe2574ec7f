//! The part of the ZIP format that `numpy.savez` uses: entries stored
//! without compression, each a local header and the bytes, then the central
//! directory and its end record (ZIP64 records are read, not written).
//! `numpy.savez_compressed`'s deflated entries are refused with a message.

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

/// An archive of `entries` (name, bytes), stored uncompressed.
pub(super) fn write_stored(entries: &[(String, Vec<u8>)]) -> Result<Vec<u8>, String> {
    let too_big = || {
        "the archive would be over 4 GiB or hold over 65535 entries, which this writer does not \
         support (no ZIP64); save to safetensors instead"
            .to_string()
    };
    let count = u16::try_from(entries.len()).map_err(|_| too_big())?;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let offset = u32::try_from(out.len()).map_err(|_| too_big())?;
        let size = u32::try_from(data.len()).map_err(|_| too_big())?;
        let name_len = u16::try_from(name.len()).map_err(|_| too_big())?;
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

/// The entries (name, bytes) of a ZIP archive of stored entries, in the
/// order of its central directory; each entry's CRC is checked.
pub(super) fn read_stored(b: &[u8]) -> Result<Vec<(String, &[u8])>, String> {
    // The end record: 22 bytes and a comment of up to 65535, at the end.
    let lowest = b.len().saturating_sub(22 + 0xFFFF);
    let end = (lowest..=b.len().saturating_sub(22))
        .rev()
        .find(|&i| b.len() >= 22 && u32_at(b, i) == Some(END))
        .ok_or_else(|| corrupt("no end-of-central-directory record"))?;
    let field = |v: Option<u64>| v.ok_or_else(|| corrupt("a record ends early"));
    let mut count = field(u16_at(b, end + 10).map(u64::from))?;
    let mut size = field(u32_at(b, end + 12).map(u64::from))?;
    let mut offset = field(u32_at(b, end + 16).map(u64::from))?;
    if count == 0xFFFF || size == 0xFFFF_FFFF || offset == 0xFFFF_FFFF {
        // ZIP64: a locator just before the end record points to the ZIP64
        // end record, which has the full-width fields.
        let locator = end
            .checked_sub(20)
            .filter(|&l| u32_at(b, l) == Some(LOCATOR64))
            .ok_or_else(|| corrupt("a ZIP64 archive without its locator"))?;
        let at = usize::try_from(field(u64_at(b, locator + 8))?)
            .map_err(|_| corrupt("a ZIP64 offset out of range"))?;
        if u32_at(b, at) != Some(END64) {
            return Err(corrupt(
                "the ZIP64 end record is not where its locator says",
            ));
        }
        count = field(u64_at(b, at + 32))?;
        size = field(u64_at(b, at + 40))?;
        offset = field(u64_at(b, at + 48))?;
    }
    let in_file = |v: u64| usize::try_from(v).ok().filter(|&v| v <= b.len());
    let (start, size) = match (in_file(offset), in_file(size)) {
        (Some(o), Some(s)) if o.checked_add(s).is_some_and(|e| e <= b.len()) => (o, s),
        _ => return Err(corrupt("the central directory lies outside the file")),
    };
    let directory = &b[start..start + size];
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
        let local = in_file(local).ok_or_else(|| corrupt("an entry's offset is out of range"))?;
        if u32_at(b, local) != Some(LOCAL) {
            return Err(corrupt(&format!(
                "the local header of entry `{name}` is missing"
            )));
        }
        let local_name = field(u16_at(b, local + 26).map(u64::from))? as usize;
        let local_extra = field(u16_at(b, local + 28).map(u64::from))? as usize;
        let data_start = local + 30 + local_name + local_extra;
        let data = usize::try_from(plain)
            .ok()
            .and_then(|n| b.get(data_start..data_start.checked_add(n)?))
            .ok_or_else(|| corrupt(&format!("entry `{name}` ends past the end of the file")))?;
        if crc32(data) != crc {
            return Err(corrupt(&format!(
                "entry `{name}` fails its CRC check (its bytes were altered)"
            )));
        }
        out.push((name, data));
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_published_check_value() {
        // The CRC-32/ISO-HDLC check value of "123456789" (the catalogue of
        // parametrised CRC algorithms).
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn stored_archives_round_trip() {
        let entries = vec![
            ("a.npy".to_string(), vec![1u8, 2, 3]),
            ("ünï.npy".to_string(), vec![]),
        ];
        let zip = write_stored(&entries).unwrap();
        let back = read_stored(&zip).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].0.as_str(), back[0].1), ("a.npy", &[1u8, 2, 3][..]));
        assert_eq!((back[1].0.as_str(), back[1].1.len()), ("ünï.npy", 0));
    }
}
