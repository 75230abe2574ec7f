//! The safetensors format, through the `safetensors` crate: an 8-byte
//! little-endian header length, a JSON header (each tensor's dtype, shape and
//! byte range), then the tensors' little-endian bytes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ::safetensors::tensor::{Dtype, SafeTensorError, SafeTensors, View};

use super::{from_bytes, le_bytes, read_up_to, Named, Opened, Site, Stored};
use crate::{DType, Result, Tensor};

/// One tensor's bytes, as the crate's writer takes them.
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The file holding `leaves` (dense, checked by the caller).
pub(super) fn encode(leaves: &[Named], site: &Site) -> Result<Vec<u8>> {
    let entries = leaves
        .iter()
        .map(|leaf| {
            let data = leaf.tensor.data()?;
            Ok(Entry {
                dtype: match data.dtype() {
                    DType::Bool => Dtype::BOOL,
                    DType::I64 => Dtype::I64,
                    DType::F32 => Dtype::F32,
                    DType::F64 => Dtype::F64,
                },
                shape: data.shape().to_vec(),
                bytes: le_bytes(data),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let metadata = [("format".to_string(), "pt".to_string())]
        .into_iter()
        .collect();
    ::safetensors::serialize(
        leaves.iter().map(|l| l.key.as_str()).zip(entries.iter()),
        Some(metadata),
    )
    .map_err(|e| site.err(None, format!("cannot encode the file: {e}")))
}

/// The most bytes a safetensors header (the JSON) may have: the limit of
/// the `safetensors` crate, which the Python package also reads through.
pub(crate) const MAX_HEADER: u64 = 100_000_000;

fn invalid(site: &Site, what: impl std::fmt::Display) -> crate::Error {
    site.err(
        None,
        format!("not a valid safetensors file ({what}); the file is truncated or corrupt"),
    )
}

/// Every tensor of the file in `bytes`: its header (at most [`MAX_HEADER`]
/// bytes) and the tensors' byte ranges are checked by the `safetensors`
/// crate (in the file, in order, without gaps or overlaps, each the size its
/// shape and dtype need, the last ending where the file ends); a tensor's
/// name given twice is refused here.
pub(super) fn decode(bytes: &[u8], site: &Site) -> Result<BTreeMap<String, Tensor>> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| invalid(site, e))?;
    // In range: `deserialize` checked the length and the header.
    let n = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes);
    let header = usize::try_from(n)
        .ok()
        .and_then(|n| bytes.get(8..8 + n))
        .unwrap_or_default();
    if let Some(name) = scan(header).duplicate {
        return Err(invalid(
            site,
            format!("the header names `{}` twice", String::from_utf8_lossy(name)),
        ));
    }
    let mut out = BTreeMap::new();
    for (name, view) in file.iter() {
        let stored = match view.dtype() {
            Dtype::BOOL => Stored::Bool,
            Dtype::I8 => Stored::I8,
            Dtype::I16 => Stored::I16,
            Dtype::I32 => Stored::I32,
            Dtype::I64 => Stored::I64,
            Dtype::U8 => Stored::U8,
            Dtype::U16 => Stored::U16,
            Dtype::U32 => Stored::U32,
            Dtype::F16 => Stored::F16,
            Dtype::BF16 => Stored::BF16,
            Dtype::F32 => Stored::F32,
            Dtype::F64 => Stored::F64,
            other => {
                return Err(site.err(
                    Some(name),
                    format!(
                        "element type {other} is not supported: batchrules holds f32, f64, i64 \
                         and bool, and converts f16, bf16 and the integers up to 32 bits on \
                         load; convert it before saving (in PyTorch, `.to(torch.float32)` or \
                         `.to(torch.int64)`)"
                    ),
                ))
            }
        };
        let tensor = from_bytes(stored, view.shape(), view.data(), false, false)
            .map_err(|m| site.err(Some(name), m))?;
        out.insert(name.to_string(), tensor);
    }
    Ok(out)
}

/// Every tensor of the safetensors file `opened`, read header first: the
/// header's length (refused over [`MAX_HEADER`] or past the end of a regular
/// file), the header (checked by the `safetensors` crate), then exactly the
/// bytes the header describes (checked against a regular file's size before
/// they are read; a pipe or a device is read no further than one byte past
/// them).
pub(super) fn read_file(opened: Opened, site: &Site) -> Result<BTreeMap<String, Tensor>> {
    let Opened { mut file, len } = opened;
    let io = |e: std::io::Error| site.err(None, format!("cannot read the file: {e}"));
    let mut buf = read_up_to(&mut file, 8, 8).map_err(io)?;
    let Ok(prefix) = <[u8; 8]>::try_from(&buf[..]) else {
        return Err(invalid(
            site,
            "it is shorter than the 8 bytes of its header's length",
        ));
    };
    let n = u64::from_le_bytes(prefix);
    if n > MAX_HEADER {
        return Err(invalid(
            site,
            format!("the header says it is {n} bytes long, over the {MAX_HEADER} bytes allowed"),
        ));
    }
    if let Some(len) = len
        && n > len.saturating_sub(8)
    {
        return Err(invalid(
            site,
            format!(
                "the header says it is {n} bytes long, but the file has {} after its length",
                len.saturating_sub(8)
            ),
        ));
    }
    // At most MAX_HEADER, checked above.
    let reserve = if len.is_some() { n as usize } else { 0 };
    buf.extend(read_up_to(&mut file, n, reserve).map_err(io)?);
    if (buf.len() as u64) < 8 + n {
        return Err(invalid(site, "the header ends early"));
    }
    let data_len = match SafeTensors::read_metadata(&buf) {
        Ok(_) => 0,
        // A valid header that describes tensors' bytes (which `buf` lacks).
        Err(SafeTensorError::MetadataIncompleteBuffer) => scan(&buf[8..]).data_len,
        Err(e) => return Err(invalid(site, e)),
    };
    if let Some(len) = len {
        let have = len.saturating_sub(8).saturating_sub(n);
        if have != data_len {
            return Err(invalid(
                site,
                format!("the header describes {data_len} bytes of tensors, the file has {have}"),
            ));
        }
    }
    // One byte more than described: a longer source fails `decode`'s check
    // of the length, and is not read on.
    let reserve = if len.is_some() {
        usize::try_from(data_len).unwrap_or(0)
    } else {
        0
    };
    buf.extend(read_up_to(&mut file, data_len.saturating_add(1), reserve).map_err(io)?);
    decode(&buf, site)
}

/// What [`scan`] finds in a header.
struct Scan<'a> {
    /// A top-level key given twice (as spelled, escapes undecoded).
    duplicate: Option<&'a [u8]>,
    /// The largest end offset of the tensors' `data_offsets`: the size of
    /// the data, in a header the crate has accepted.
    data_len: u64,
}

/// The top-level keys and the tensors' largest end offset of a safetensors
/// header, by a scan of its JSON without recursion (a header the crate has
/// checked, so its strings are closed and its brackets balanced; on other
/// text the answer is meaningless, but the scan still ends). A key spelled
/// with escapes (`"\u0061"` for `"a"`) is compared as spelled, and a
/// `data_offsets` spelled so is not seen: the size found is then too small,
/// and the crate's check of the file's length refuses the file.
fn scan(header: &[u8]) -> Scan<'_> {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut data_len = 0u64;
    let mut depth = 0usize;
    let mut last_string: Option<&[u8]> = None;
    let mut member: Option<&[u8]> = None;
    let mut i = 0;
    while i < header.len() {
        match header[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                while i < header.len() && header[i] != b'"' {
                    // Skip the escaped byte (a `\"` does not end the string).
                    i += if header[i] == b'\\' { 2 } else { 1 };
                }
                last_string = header.get(start..i.min(header.len()));
            }
            b':' => match (depth, last_string.take()) {
                (1, Some(key)) => keys.push(key),
                (2, Some(key)) => member = Some(key),
                _ => {}
            },
            b'[' if depth == 2 && member == Some(b"data_offsets") => {
                // `[start, end]`: the last number before the `]`.
                let close = header[i..]
                    .iter()
                    .position(|&c| c == b']')
                    .map_or(header.len(), |p| i + p);
                let end = header[i + 1..close]
                    .split(|c| !c.is_ascii_digit())
                    .rfind(|d| !d.is_empty())
                    .and_then(|d| std::str::from_utf8(d).ok()?.parse::<u64>().ok())
                    .unwrap_or(u64::MAX);
                data_len = data_len.max(end);
                member = None;
                i = close;
            }
            b'{' | b'[' => {
                depth += 1;
                member = None;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => last_string = None,
            _ => {}
        }
        i += 1;
    }
    keys.sort_unstable();
    let duplicate = keys.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
    Scan {
        duplicate,
        data_len,
    }
}
