//! The safetensors format, through the `safetensors` crate: an 8-byte
//! little-endian header length, a JSON header (each tensor's dtype, shape and
//! byte range), then the tensors' little-endian bytes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ::safetensors::tensor::{Dtype, SafeTensors, View};

use super::{from_bytes, le_bytes, Named, Site, Stored};
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

/// Every tensor of the file.
pub(super) fn decode(bytes: &[u8], site: &Site) -> Result<BTreeMap<String, Tensor>> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| {
        site.err(
            None,
            format!("not a valid safetensors file ({e}); the file is truncated or corrupt"),
        )
    })?;
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
        let tensor = from_bytes(
            stored,
            view.shape(),
            view.data(),
            false,
            false,
            site.function,
        )
        .map_err(|m| site.err(Some(name), m))?;
        out.insert(name.to_string(), tensor);
    }
    Ok(out)
}
