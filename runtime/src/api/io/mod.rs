//! Weights in and out: [safetensors] files (what PyTorch's
//! `safetensors.torch.save_file(model.state_dict(), ...)` writes), and
//! numpy's `.npy` (one tensor) and `.npz` (named tensors) files.
//!
//! A [`TensorTree`] is saved with one entry per leaf, named by the leaf's
//! *key* ([`TensorTree::leaf_key`]), spelled as PyTorch's `state_dict`
//! spells it: `layers.1.weight` for field `weight` of element 1 of field
//! `layers`. A derived struct's field can be given another name with
//! `#[tree(rename = "weight")]`. A file is loaded *into a template*: a value of
//! the same structure (like an instantiated PyTorch model before
//! `load_state_dict`), whose leaves give the keys to look for and the shape
//! and dtype each must have.
//!
//! ```
//! use batchrules::{io, Tensor, TensorTree};
//! use ndarray::array;
//!
//! #[derive(Clone, TensorTree)]
//! struct Linear {
//!     #[tree(rename = "weight")]
//!     w: Tensor,
//!     #[tree(rename = "bias")]
//!     b: Option<Tensor>,
//! }
//!
//! #[derive(Clone, TensorTree)]
//! struct Mlp {
//!     fc1: Linear,
//!     fc2: Linear,
//! }
//!
//! let t = |v: f32| Tensor::from(array![[v, v]].into_dyn());
//! let model = Mlp {
//!     fc1: Linear { w: t(1.0), b: Some(t(2.0)) },
//!     fc2: Linear { w: t(3.0), b: None },
//! };
//! let bytes = io::to_safetensors_bytes(&model)?;
//!
//! // Every tensor by name, as in `safetensors.torch.load_file`.
//! let all = io::read_safetensors_bytes(&bytes)?;
//! let keys: Vec<&str> = all.keys().map(String::as_str).collect();
//! assert_eq!(keys, ["fc1.bias", "fc1.weight", "fc2.weight"]);
//!
//! // Into a model of the same structure, as `model.load_state_dict`.
//! let template = Mlp {
//!     fc1: Linear { w: t(0.0), b: Some(t(0.0)) },
//!     fc2: Linear { w: t(0.0), b: None },
//! };
//! let loaded = io::load_safetensors_bytes(&template, &bytes, io::LoadOptions::new())?;
//! assert_eq!(loaded.fc2.w.to_array::<f32>()?, array![[3.0, 3.0]].into_dyn());
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! # Element types
//!
//! `f32`, `f64`, `i64` and `bool` are written as they are and read back
//! exactly. On load, `f16` and `bf16` are converted to `f32` (exactly: every
//! half-precision value is an `f32`), and the narrower integers (`i8`, `i16`,
//! `i32`, `u8`, `u16`, `u32`) to `i64` (exactly too); a template leaf for
//! such an entry must then be `f32` or `i64`. Other types (`u64`, whose
//! values `i64` may not hold, the 8-bit floats, complex numbers) are an
//! error that names the key and the type.
//!
//! # Errors
//!
//! Every failure is an [`Error::Weights`] that names the function called, the
//! file and, where there is one, the key: a path that cannot be read or
//! written, a truncated or corrupt file, a key of the template that the file
//! lacks or a key of the file that the template lacks (both refused unless
//! [`LoadOptions::strict`] is off, as with PyTorch's `strict=False`), an
//! entry whose shape or element type differs from the template's, a tree
//! with two leaves under one key, a bare tensor saved without a name, a
//! tensor at a transform level (inside [`vmap`](fn@crate::vmap),
//! [`grad`](fn@crate::grad), ...), whose data cannot be read there.
//!
//! Files are written whole to a temporary file next to the destination, then
//! renamed over it, so an error never leaves half a file behind.
//!
//! # Hostile files
//!
//! A weights file comes from outside, so every loader bounds what it parses
//! and reads, and a file that breaks a bound is an [`Error::Weights`] naming
//! the function called, never a panic, a stack overflow, a hang or memory
//! exhausted:
//!
//! - **Header first.** The `load_*` and `read_*` file forms open the file,
//!   read its header, check it, then read exactly the bytes it declares:
//!   checked against the file's size (its metadata) before they are read
//!   for a regular file; for a pipe or a device (`/dev/zero`), read no
//!   further than one byte past the declared size, to see that the source
//!   ends there. A `.npz` is read from its end, so it must be a regular file.
//!   Every tensor is also checked against the
//!   [allocation limit](crate::tuning::allocation_limit) before it is built.
//! - **`.npy`** (and each entry of a `.npz`): a header of at most 10,000
//!   bytes (numpy's `max_header_size`: `numpy.load` refuses a longer one
//!   unless given `allow_pickle=True`; numpy counts the decoded header's
//!   characters, which for the ASCII headers of the arrays batchrules reads
//!   are its bytes; the bound is the same for format versions 1.0, 2.0 and
//!   3.0, whose length fields could declare 64 KiB and 4 GiB), at most 64
//!   dims (numpy's `NPY_MAXDIMS`; `save_npy` and `save_npz` refuse a tensor
//!   with more, which numpy could not load), brackets
//!   nested at most 16 deep (numpy's own headers nest 2 deep), exactly the
//!   keys `descr`, `fortran_order` and `shape` (another key is refused, as
//!   numpy does), and a repeated key's **last** value counts, as in numpy,
//!   which reads the header as a Python dict literal. The data must be
//!   exactly the size the header declares.
//! - **`.npz`**: the end record, the central directory and every entry lie
//!   in the file; the directory must hold the number of entries its end
//!   record counts (each takes at least 46 bytes of it, so the count is
//!   bounded by the file's size); each entry's local header must give the
//!   central directory's name for it; no two entries may **overlap** (as
//!   Python's `zipfile` refuses since CVE-2024-0450): in the order of their
//!   local headers, each entry's header and bytes must end before the next
//!   begins, and the last before the central directory, so the entries'
//!   bytes together are at most the file's size; no two entries may have
//!   the same name (with or without `.npy`); every entry's CRC is checked.
//!   The whole archive is checked before any entry is decoded.
//! - **safetensors**: a JSON header of at most 100,000,000 bytes (the limit
//!   of the `safetensors` crate, which Python's `safetensors` also reads
//!   through), its tensors' byte ranges in order, without gaps or overlaps,
//!   each the size its shape and dtype need, the last ending where the file
//!   ends; a tensor named twice in the header is refused.
//!
//! [safetensors]: https://huggingface.co/docs/safetensors
//!
//! In the `api` layer (`runtime/src/api/`). It may use the `core`, `table`,
//! `dispatch`, `transforms` and `library` layers. `tests/suite/layers.rs`
//! enforces it.

use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::{ArrayD, IxDyn, ShapeBuilder};

use crate::core::alloc::check_alloc;
use crate::core::tree::{checked_copy, leaf_names};
use crate::{DType, Data, Element, Error, Result, Tensor, TensorTree};

pub(crate) mod npy;
mod safetensors;
pub(crate) mod zip;

/// How [`load_safetensors_with`] and [`load_npz_with`] match a file's keys
/// against the template's.
///
/// ```
/// let options = batchrules::io::LoadOptions::new().strict(false);
/// assert!(!options.is_strict());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadOptions {
    strict: bool,
}

impl LoadOptions {
    /// The defaults: strict.
    pub fn new() -> Self {
        LoadOptions { strict: true }
    }

    /// Whether every key of the template must be in the file and every key
    /// of the file in the template (the default, `true`, as PyTorch's
    /// `load_state_dict(strict=True)`). With `false`, a leaf whose key the
    /// file lacks keeps the template's tensor, and the file's other entries
    /// are ignored; shapes and element types are still checked.
    pub fn strict(self, strict: bool) -> Self {
        LoadOptions { strict }
    }

    /// Whether keys must match exactly (see [`strict`](Self::strict)).
    pub fn is_strict(&self) -> bool {
        self.strict
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions::new()
    }
}

// ---------------------------------------------------------------- safetensors

/// Saves every leaf of `tree` to a safetensors file at `path`, named by its
/// key ([`TensorTree::leaf_key`]); the file is replaced whole. The header's
/// metadata says `"format": "pt"`, as PyTorch's writer does, so
/// `safetensors.torch.load_file` (and libraries that check it) read it.
///
/// A bare [`Tensor`] has no key: save a `BTreeMap<String, Tensor>` to name
/// it. See the [module docs](self) for the element types and errors.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let dir = std::env::temp_dir().join(format!("br-doc-save-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("w.safetensors");
///
/// let named = BTreeMap::from([("weight".to_string(), Tensor::scalar(2.5f64))]);
/// io::save_safetensors(&named, &path)?;
/// let back = io::read_safetensors(&path)?;
/// assert_eq!(back["weight"].to_array::<f64>()?[[]], 2.5);
///
/// // A bare tensor has no name.
/// let err = io::save_safetensors(&Tensor::scalar(1.0f64), &path).unwrap_err();
/// assert!(err.to_string().contains("has no name"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn save_safetensors<T: TensorTree>(tree: &T, path: impl AsRef<Path>) -> Result<()> {
    let site = Site::file("save_safetensors", path.as_ref());
    let bytes = safetensors::encode(&named_leaves(tree, &site)?, &site)?;
    write_atomically(path.as_ref(), &bytes, &site)
}

/// The safetensors file [`save_safetensors`] would write, as bytes.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let named = BTreeMap::from([("step".to_string(), Tensor::scalar(7i64))]);
/// let bytes = io::to_safetensors_bytes(&named)?;
/// assert_eq!(io::read_safetensors_bytes(&bytes)?["step"].to_array::<i64>()?[[]], 7);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn to_safetensors_bytes<T: TensorTree>(tree: &T) -> Result<Vec<u8>> {
    let site = Site::bytes("to_safetensors_bytes");
    safetensors::encode(&named_leaves(tree, &site)?, &site)
}

/// Loads a safetensors file into a value of the structure of `template`:
/// leaf by leaf, the entry named by the leaf's key, which must have the
/// leaf's shape and element type. Strict: the file must have exactly the
/// template's keys (see [`load_safetensors_with`] to relax that).
///
/// This is how a PyTorch model's `state_dict`, saved with
/// `safetensors.torch.save_file`, becomes a `#[derive(TensorTree)]` struct
/// (with `#[tree(rename = "weight")]` where the field names differ).
///
/// ```
/// use batchrules::{io, Tensor, TensorTree};
/// use ndarray::array;
///
/// #[derive(Clone, Debug, TensorTree)]
/// struct Linear {
///     #[tree(rename = "weight")]
///     w: Tensor,
/// }
///
/// let dir = std::env::temp_dir().join(format!("br-doc-load-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("linear.safetensors");
/// let layer = Linear { w: Tensor::from(array![[1.0f32, 2.0]].into_dyn()) };
/// io::save_safetensors(&layer, &path)?;
///
/// let template = Linear { w: Tensor::from(array![[0.0f32, 0.0]].into_dyn()) };
/// let loaded = io::load_safetensors(&template, &path)?;
/// assert_eq!(loaded.w.to_array::<f32>()?, array![[1.0, 2.0]].into_dyn());
///
/// // A template of another shape is refused, naming the key.
/// let wrong = Linear { w: Tensor::from(array![[0.0f32], [0.0]].into_dyn()) };
/// let err = io::load_safetensors(&wrong, &path).unwrap_err().to_string();
/// assert!(err.contains("key `weight`") && err.contains("shape"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn load_safetensors<T: TensorTree>(template: &T, path: impl AsRef<Path>) -> Result<T> {
    load_safetensors_as(
        "load_safetensors",
        template,
        path.as_ref(),
        LoadOptions::new(),
    )
}

/// [`load_safetensors`] with options: `LoadOptions::new().strict(false)`
/// keeps the template's tensor for a key the file lacks and ignores the
/// file's other entries.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let file = io::to_safetensors_bytes(&BTreeMap::from([
///     ("a".to_string(), Tensor::scalar(1.0f32)),
///     ("extra".to_string(), Tensor::scalar(2.0f32)),
/// ]))?;
/// let dir = std::env::temp_dir().join(format!("br-doc-lax-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("w.safetensors"), &file).unwrap();
///
/// let template = BTreeMap::from([
///     ("a".to_string(), Tensor::scalar(0.0f32)),
///     ("b".to_string(), Tensor::scalar(9.0f32)),
/// ]);
/// let lax = io::LoadOptions::new().strict(false);
/// let loaded = io::load_safetensors_with(&template, dir.join("w.safetensors"), lax)?;
/// assert_eq!(loaded["a"].to_array::<f32>()?[[]], 1.0);
/// assert_eq!(loaded["b"].to_array::<f32>()?[[]], 9.0); // kept
///
/// // Strict (the default): `b` is missing and `extra` unexpected.
/// let err = io::load_safetensors(&template, dir.join("w.safetensors")).unwrap_err();
/// assert!(err.to_string().contains("missing `b`"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn load_safetensors_with<T: TensorTree>(
    template: &T,
    path: impl AsRef<Path>,
    options: LoadOptions,
) -> Result<T> {
    load_safetensors_as("load_safetensors_with", template, path.as_ref(), options)
}

/// The tensors of a weights file, by key, as a format's reader reads them
/// from the opened file (header first, then the bytes it declares).
type Decode = fn(Opened, &Site) -> Result<BTreeMap<String, Tensor>>;

/// The tensors of the file at `path`, read with `decode`, and the site its
/// errors name (`function` and the file).
fn decode_file(
    function: &'static str,
    decode: Decode,
    path: &Path,
) -> Result<(Site, BTreeMap<String, Tensor>)> {
    let site = Site::file(function, path);
    let opened = open(path, &site)?;
    let found = decode(opened, &site)?;
    Ok((site, found))
}

/// Reads the file at `path` with `decode` and puts its tensors into a copy of
/// `template`; every error names `function` and the file.
fn load_file_as<T: TensorTree>(
    function: &'static str,
    decode: Decode,
    template: &T,
    path: &Path,
    options: LoadOptions,
) -> Result<T> {
    let (site, found) = decode_file(function, decode, path)?;
    assign(template, found, &site, options)
}

fn load_safetensors_as<T: TensorTree>(
    function: &'static str,
    template: &T,
    path: &Path,
    options: LoadOptions,
) -> Result<T> {
    load_file_as(function, safetensors::read_file, template, path, options)
}

/// [`load_safetensors_with`] from bytes in memory.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let w = BTreeMap::from([("w".to_string(), Tensor::scalar(true))]);
/// let bytes = io::to_safetensors_bytes(&w)?;
/// let back = io::load_safetensors_bytes(&w, &bytes, io::LoadOptions::new())?;
/// assert!(back["w"].to_array::<bool>()?[[]]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn load_safetensors_bytes<T: TensorTree>(
    template: &T,
    bytes: &[u8],
    options: LoadOptions,
) -> Result<T> {
    let site = Site::bytes("load_safetensors_bytes");
    let found = safetensors::decode(bytes, &site)?;
    assign(template, found, &site, options)
}

/// Every tensor of a safetensors file, by name (as
/// `safetensors.torch.load_file`). `f16` and `bf16` entries come as `f32`,
/// narrower integers as `i64` (see the [module docs](self)). The map is a
/// [`TensorTree`] itself, so it can be saved again as it is.
///
/// The header is read and checked before the tensors' bytes: at most
/// 100,000,000 bytes of JSON, byte ranges in order without gaps or overlaps
/// that end where the file ends, no name given twice (see
/// [hostile files](self#hostile-files)).
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let dir = std::env::temp_dir().join(format!("br-doc-read-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("w.safetensors");
/// io::save_safetensors(&BTreeMap::from([("x".to_string(), Tensor::scalar(3i64))]), &path)?;
/// assert_eq!(io::read_safetensors(&path)?["x"].to_array::<i64>()?[[]], 3);
///
/// let err = io::read_safetensors(dir.join("nope.safetensors")).unwrap_err().to_string();
/// assert!(err.starts_with("read_safetensors: ") && err.contains("nope.safetensors"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn read_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    decode_file("read_safetensors", safetensors::read_file, path.as_ref()).map(|(_, found)| found)
}

/// [`read_safetensors`] from bytes in memory, with the same checks (see
/// [hostile files](self#hostile-files)).
///
/// ```
/// let err = batchrules::io::read_safetensors_bytes(&[1, 2, 3]).unwrap_err().to_string();
/// assert!(err.starts_with("read_safetensors_bytes: bytes: "), "{err}");
/// ```
pub fn read_safetensors_bytes(bytes: &[u8]) -> Result<BTreeMap<String, Tensor>> {
    safetensors::decode(bytes, &Site::bytes("read_safetensors_bytes"))
}

// ---------------------------------------------------------------- npy / npz

/// Saves one tensor to a numpy `.npy` file at `path` (format version 1.0,
/// little-endian, C order), which `numpy.load` reads.
///
/// ```
/// use batchrules::{io, Tensor};
/// use ndarray::array;
///
/// let dir = std::env::temp_dir().join(format!("br-doc-npy-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let x = Tensor::from(array![[1i64, 2], [3, 4]].into_dyn());
/// io::save_npy(&x, dir.join("x.npy"))?;
/// assert_eq!(io::load_npy(dir.join("x.npy"))?.to_array::<i64>()?, array![[1, 2], [3, 4]].into_dyn());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn save_npy(tensor: &Tensor, path: impl AsRef<Path>) -> Result<()> {
    let site = Site::file("save_npy", path.as_ref());
    let bytes = npy::encode(tensor, &site, None)?;
    write_atomically(path.as_ref(), &bytes, &site)
}

/// The `.npy` file [`save_npy`] would write, as bytes.
///
/// ```
/// let bytes = batchrules::io::to_npy_bytes(&batchrules::Tensor::scalar(1.5f32))?;
/// assert_eq!(&bytes[..6], b"\x93NUMPY");
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn to_npy_bytes(tensor: &Tensor) -> Result<Vec<u8>> {
    npy::encode(tensor, &Site::bytes("to_npy_bytes"), None)
}

/// Reads a numpy `.npy` file. `f32`, `f64`, `i64` and `bool` arrays come as
/// they are; `f16` as `f32`; narrower integers as `i64`; either byte order
/// and Fortran order are accepted. Other types (`u64`, complex, strings,
/// structured or object arrays) are an error.
///
/// The header is read and checked first: at most 10,000 bytes (numpy's
/// `max_header_size`) in every format version, brackets nested at most 16
/// deep, at most 64 dims, the keys `descr`, `fortran_order` and `shape` only
/// (a repeated key's last value counts, as in numpy); then exactly the bytes
/// it declares are read, within the allocation limit (see
/// [hostile files](self#hostile-files)).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("br-doc-loadnpy-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("bad.npy"), b"not numpy").unwrap();
/// let err = batchrules::io::load_npy(dir.join("bad.npy")).unwrap_err().to_string();
/// assert!(err.starts_with("load_npy: ") && err.contains("bad.npy"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn load_npy(path: impl AsRef<Path>) -> Result<Tensor> {
    let site = Site::file("load_npy", path.as_ref());
    read_npy_file(open(path.as_ref(), &site)?, &site)
}

/// [`load_npy`] from bytes in memory, with the same bounds (see
/// [hostile files](self#hostile-files)).
///
/// ```
/// use batchrules::{io, Tensor};
///
/// let bytes = io::to_npy_bytes(&Tensor::scalar(false))?;
/// assert!(!io::read_npy_bytes(&bytes)?.to_array::<bool>()?[[]]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn read_npy_bytes(bytes: &[u8]) -> Result<Tensor> {
    npy::decode(bytes, &Site::bytes("read_npy_bytes"), None)
}

/// Saves every leaf of `tree` to a numpy `.npz` file at `path`: one `.npy`
/// entry per leaf, named by its key (the entry `fc1.weight.npy`, which
/// `numpy.load(path)["fc1.weight"]` reads), stored uncompressed, as
/// `numpy.savez` writes. The file is replaced whole; it must stay under
/// 4 GiB (no ZIP64).
///
/// ```
/// use batchrules::{io, Tensor, TensorTree};
///
/// #[derive(Clone, TensorTree)]
/// struct Scale { #[tree(rename = "weight")] w: Tensor, b: Tensor }
///
/// let dir = std::env::temp_dir().join(format!("br-doc-npz-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let s = Scale { w: Tensor::scalar(2.0f64), b: Tensor::scalar(-1.0f64) };
/// io::save_npz(&s, dir.join("s.npz"))?;
/// let all = io::read_npz(dir.join("s.npz"))?;
/// assert_eq!(all.keys().collect::<Vec<_>>(), ["b", "weight"]);
/// let back = io::load_npz(&s, dir.join("s.npz"))?;
/// assert_eq!(back.w.to_array::<f64>()?[[]], 2.0);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn save_npz<T: TensorTree>(tree: &T, path: impl AsRef<Path>) -> Result<()> {
    let site = Site::file("save_npz", path.as_ref());
    let entries = named_leaves(tree, &site)?
        .into_iter()
        .map(|leaf| {
            let name_len = leaf.key.len() + ".npy".len();
            if name_len > zip::MAX_NAME {
                return Err(site.err(
                    Some(&shortened(&leaf.key)),
                    format!(
                        "the key is {} bytes long, and with `.npy` too long for the name of a \
                         .npz entry, which the ZIP format limits to {} bytes; use a shorter key, \
                         or save to safetensors",
                        leaf.key.len(),
                        zip::MAX_NAME
                    ),
                ));
            }
            let bytes = npy::encode(&leaf.tensor, &site, Some(&leaf.key))?;
            Ok((format!("{}.npy", leaf.key), bytes))
        })
        .collect::<Result<Vec<_>>>()?;
    let bytes = zip::write_stored(&entries).map_err(|m| site.err(None, m))?;
    write_atomically(path.as_ref(), &bytes, &site)
}

/// Loads a numpy `.npz` file into a value of the structure of `template`,
/// as [`load_safetensors`] does (strict; see [`load_npz_with`]). Reads the
/// uncompressed files `numpy.savez` writes; a compressed entry
/// (`numpy.savez_compressed`) is an error that says so.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let dir = std::env::temp_dir().join(format!("br-doc-loadnpz-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let w = BTreeMap::from([("w".to_string(), Tensor::scalar(1.0f32))]);
/// io::save_npz(&w, dir.join("w.npz"))?;
///
/// let f64_template = BTreeMap::from([("w".to_string(), Tensor::scalar(0.0f64))]);
/// let err = io::load_npz(&f64_template, dir.join("w.npz")).unwrap_err().to_string();
/// assert!(err.contains("key `w`") && err.contains("f32"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn load_npz<T: TensorTree>(template: &T, path: impl AsRef<Path>) -> Result<T> {
    load_npz_as("load_npz", template, path.as_ref(), LoadOptions::new())
}

/// [`load_npz`] with options (see [`LoadOptions::strict`]).
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let dir = std::env::temp_dir().join(format!("br-doc-npzwith-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// io::save_npz(&BTreeMap::from([("a".to_string(), Tensor::scalar(1i64))]), dir.join("a.npz"))?;
/// let template = BTreeMap::from([("b".to_string(), Tensor::scalar(5i64))]);
/// let lax = io::LoadOptions::new().strict(false);
/// let kept = io::load_npz_with(&template, dir.join("a.npz"), lax)?;
/// assert_eq!(kept["b"].to_array::<i64>()?[[]], 5);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn load_npz_with<T: TensorTree>(
    template: &T,
    path: impl AsRef<Path>,
    options: LoadOptions,
) -> Result<T> {
    load_npz_as("load_npz_with", template, path.as_ref(), options)
}

fn load_npz_as<T: TensorTree>(
    function: &'static str,
    template: &T,
    path: &Path,
    options: LoadOptions,
) -> Result<T> {
    load_file_as(function, read_npz_file, template, path, options)
}

/// Every array of a numpy `.npz` file, by name (the entry's name without
/// `.npy`, as `numpy.load(path).files` lists them). Element types as in
/// [`load_npy`]. The file must be a regular file (a ZIP archive is read from
/// its end); it is read by ranges, each checked against its size. The
/// archive is checked as [`read_npz_bytes`] says before any entry is read.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("br-doc-readnpz-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("cut.npz"), b"PK\x03\x04").unwrap();
/// let err = batchrules::io::read_npz(dir.join("cut.npz")).unwrap_err().to_string();
/// assert!(err.starts_with("read_npz: ") && err.contains("cut.npz"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn read_npz(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    decode_file("read_npz", read_npz_file, path.as_ref()).map(|(_, found)| found)
}

/// [`read_npz`] from bytes in memory: every array of a numpy `.npz`
/// archive, by name.
///
/// The archive is checked before any entry is decoded (see the
/// [module docs](self#hostile-files) for the bounds): its entries lie in it
/// and do not overlap, each entry's local header names it as the central
/// directory does, no two entries give the same name, and each entry is a
/// `.npy` file within [`read_npy_bytes`]'s bounds.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{io, Tensor};
///
/// let dir = std::env::temp_dir().join(format!("br-doc-npzbytes-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let w = BTreeMap::from([("w".to_string(), Tensor::scalar(4i64))]);
/// io::save_npz(&w, dir.join("w.npz"))?;
/// let bytes = std::fs::read(dir.join("w.npz")).unwrap();
/// assert_eq!(io::read_npz_bytes(&bytes)?["w"].to_array::<i64>()?[[]], 4);
///
/// let err = io::read_npz_bytes(&bytes[..bytes.len() - 1]).unwrap_err().to_string();
/// assert!(err.starts_with("read_npz_bytes: bytes: "), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn read_npz_bytes(bytes: &[u8]) -> Result<BTreeMap<String, Tensor>> {
    decode_npz(zip::Input::Bytes(bytes), &Site::bytes("read_npz_bytes"))
}

/// The arrays of the archive `input`, checked as [`read_npz_bytes`] says.
fn decode_npz(mut input: zip::Input<'_>, site: &Site) -> Result<BTreeMap<String, Tensor>> {
    let entries = zip::entries(&mut input).map_err(|m| site.err(None, m))?;
    let mut keys = std::collections::BTreeSet::new();
    for entry in &entries {
        let key = npz_key(&entry.name);
        if !keys.insert(key) {
            return Err(site.err(
                Some(key),
                "the archive holds two entries of this name; the file is corrupt".to_string(),
            ));
        }
    }
    let mut out = BTreeMap::new();
    for entry in &entries {
        let key = npz_key(&entry.name);
        let data = zip::data(&mut input, entry).map_err(|m| site.err(None, m))?;
        let tensor = npy::decode(&data, site, Some(key))?;
        out.insert(key.to_string(), tensor);
    }
    Ok(out)
}

/// The array's name of an `.npz` entry: the entry's name without `.npy`.
fn npz_key(name: &str) -> &str {
    name.strip_suffix(".npy").unwrap_or(name)
}

/// The arrays of the `.npz` file `opened`: a regular file, read by ranges.
fn read_npz_file(opened: Opened, site: &Site) -> Result<BTreeMap<String, Tensor>> {
    let Some(len) = opened.len else {
        return Err(site.err(
            None,
            "not a regular file (a pipe or a device): a .npz archive is read from its end, so \
             only a regular file can be read; copy it to a file, or read its bytes and call \
             read_npz_bytes"
                .to_string(),
        ));
    };
    decode_npz(zip::Input::File(opened.file, len), site)
}

/// A file opened for reading, and its size if it is a regular file (`None`
/// for a pipe or a device, whose size the file system does not know).
struct Opened {
    file: std::fs::File,
    len: Option<u64>,
}

fn open(path: &Path, site: &Site) -> Result<Opened> {
    let cannot = |e: std::io::Error| site.err(None, format!("cannot read the file: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_dir() {
        return Err(site.err(None, "cannot read the file: it is a directory".to_string()));
    }
    let len = meta.is_file().then_some(meta.len());
    Ok(Opened { file, len })
}

/// The one tensor of the `.npy` file `opened` (see `npy::read`).
fn read_npy_file(opened: Opened, site: &Site) -> Result<Tensor> {
    let Opened { mut file, len } = opened;
    npy::read(&mut file, len, site)
}

// ---------------------------------------------------------------- shared

/// Where an error happened: the function the user called and the file.
struct Site {
    function: &'static str,
    file: String,
}

impl Site {
    fn file(function: &'static str, path: &Path) -> Self {
        Site {
            function,
            file: path.display().to_string(),
        }
    }

    fn bytes(function: &'static str) -> Self {
        Site {
            function,
            file: "bytes".to_string(),
        }
    }

    fn err(&self, key: Option<&str>, message: String) -> Error {
        Error::Weights {
            function: self.function,
            file: self.file.clone(),
            key: key.map(str::to_string),
            message,
        }
    }
}

/// `key` as an error shows it: whole up to 80 characters, else its first 60
/// and how many more.
fn shortened(key: &str) -> String {
    const SHOWN: usize = 60;
    if key.chars().count() <= 80 {
        return key.to_string();
    }
    let head: String = key.chars().take(SHOWN).collect();
    format!(
        "{head}... ({} more characters)",
        key.chars().count() - SHOWN
    )
}

/// A leaf with its key and its Rust-spelled path.
struct Named {
    key: String,
    path: String,
    tensor: Tensor,
}

/// Where a leaf sits, for messages: ` (field .fc1.w)`, or nothing when the
/// path adds nothing to the key.
fn field_note(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" (field `{path}`)")
    }
}

/// The leaves of `tree` with their keys, checked: a consistent tree (see
/// `checked_copy`), every key non-empty and distinct.
fn keyed_leaves<T: TensorTree>(tree: &T, site: &Site) -> Result<Vec<Named>> {
    let tree = checked_copy(tree, site.function)?;
    let mut leaves = Vec::new();
    tree.leaves(&mut leaves);
    let names = leaf_names(&tree);
    if names.len() != leaves.len() {
        return Err(site.err(
            None,
            format!(
                "the structure of tensors `{}` names {} leaves but has {}; a hand-written \
                 TensorTree's `write_leaf_names` must name each leaf once",
                std::any::type_name::<T>(),
                names.len(),
                leaves.len()
            ),
        ));
    }
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(leaves.len());
    for (i, (tensor, (path, key))) in leaves.into_iter().zip(names).enumerate() {
        if key.is_empty() {
            return Err(site.err(
                None,
                format!(
                    "leaf {i} has no name (a bare Tensor, or a structure whose key for it is \
                     empty); name it: put it in a `BTreeMap<String, Tensor>` (e.g. \
                     `BTreeMap::from([(\"weight\".to_string(), t)])`), or use save_npy/load_npy \
                     for one tensor"
                ),
            ));
        }
        if let Some(other) = seen.insert(key.clone(), path.clone()) {
            return Err(site.err(
                Some(&key),
                format!(
                    "two leaves have this key: `{other}` and `{path}`; give them distinct names \
                     (a hand-written TensorTree's `write_leaf_key`, or `#[tree(rename = \"...\")]`)"
                ),
            ));
        }
        out.push(Named { key, path, tensor });
    }
    Ok(out)
}

/// [`keyed_leaves`], for saving: every tensor must be dense.
fn named_leaves<T: TensorTree>(tree: &T, site: &Site) -> Result<Vec<Named>> {
    let leaves = keyed_leaves(tree, site)?;
    for leaf in &leaves {
        if let Err(e) = leaf.tensor.data() {
            return Err(site.err(
                Some(&leaf.key),
                format!(
                    "cannot save this tensor{}: {e}; save the transformed function's result \
                     after the transform returns",
                    field_note(&leaf.path)
                ),
            ));
        }
    }
    Ok(leaves)
}

/// How many names to list in one message.
const LISTED: usize = 8;

fn list_keys(what: &str, keys: &[&String]) -> String {
    let mut out = keys
        .iter()
        .take(LISTED)
        .map(|k| format!("{what} `{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > LISTED {
        out.push_str(&format!(" and {} more", keys.len() - LISTED));
    }
    out
}

/// The template rebuilt with the tensors of `found`, matched by key.
fn assign<T: TensorTree>(
    template: &T,
    mut found: BTreeMap<String, Tensor>,
    site: &Site,
    options: LoadOptions,
) -> Result<T> {
    let leaves = keyed_leaves(template, site)?;
    if options.strict {
        let missing: Vec<&String> = leaves
            .iter()
            .map(|l| &l.key)
            .filter(|k| !found.contains_key(*k))
            .collect();
        let wanted: std::collections::BTreeSet<&String> = leaves.iter().map(|l| &l.key).collect();
        let unexpected: Vec<&String> = found.keys().filter(|k| !wanted.contains(k)).collect();
        if !missing.is_empty() || !unexpected.is_empty() {
            let mut parts = Vec::new();
            if !missing.is_empty() {
                parts.push(format!(
                    "the template has {} key(s) the file lacks: {}",
                    missing.len(),
                    list_keys("missing", &missing)
                ));
            }
            if !unexpected.is_empty() {
                parts.push(format!(
                    "the file has {} key(s) the template lacks: {}",
                    unexpected.len(),
                    list_keys("unexpected", &unexpected)
                ));
            }
            let first = missing.first().or(unexpected.first()).map(|k| k.as_str());
            return Err(site.err(
                first,
                format!(
                    "{}; rename the fields (`#[tree(rename = \"...\")]`) so the keys match, or \
                     load with `LoadOptions::new().strict(false)` to keep the template's tensor \
                     for a missing key and ignore unexpected ones",
                    parts.join("; ")
                ),
            ));
        }
    }
    let mut tensors = Vec::with_capacity(leaves.len());
    for leaf in leaves {
        let Some(t) = found.remove(&leaf.key) else {
            // Not strict: the template's tensor stays.
            tensors.push(leaf.tensor);
            continue;
        };
        let (want_shape, want_dtype) = (leaf.tensor.shape(), leaf.tensor.dtype());
        if t.shape() != want_shape {
            return Err(site.err(
                Some(&leaf.key),
                format!(
                    "the file's tensor has shape {:?}, the template's{} has {:?}",
                    t.shape(),
                    field_note(&leaf.path),
                    want_shape
                ),
            ));
        }
        if t.dtype() != want_dtype {
            return Err(site.err(
                Some(&leaf.key),
                format!(
                    "the file's tensor is {} (as loaded), the template's{} is {}; make the \
                     template's tensor {} (or convert after loading)",
                    t.dtype(),
                    field_note(&leaf.path),
                    want_dtype,
                    t.dtype()
                ),
            ));
        }
        tensors.push(t);
    }
    template.with_leaves(tensors)
}

/// Writes `bytes` to a new file next to `path`, then renames it to `path`:
/// `path` is either untouched or replaced whole.
fn write_atomically(path: &Path, bytes: &[u8], site: &Site) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let Some(name) = path.file_name() else {
        return Err(site.err(None, "the path does not name a file".to_string()));
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let temp = dir.join(format!(
        ".{}.{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        site.err(None, format!("cannot write the file: {e}"))
    })
}

// ---------------------------------------------------------------- elements

/// An element type as stored in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    F16,
    BF16,
    F32,
    F64,
}

impl Stored {
    fn size(self) -> usize {
        match self {
            Stored::Bool | Stored::I8 | Stored::U8 => 1,
            Stored::I16 | Stored::U16 | Stored::F16 | Stored::BF16 => 2,
            Stored::I32 | Stored::U32 | Stored::F32 => 4,
            Stored::I64 | Stored::F64 => 8,
        }
    }

    /// The dtype a value of this type is loaded as.
    fn loaded_as(self) -> DType {
        match self {
            Stored::Bool => DType::Bool,
            Stored::I8 | Stored::I16 | Stored::I32 | Stored::I64 => DType::I64,
            Stored::U8 | Stored::U16 | Stored::U32 => DType::I64,
            Stored::F16 | Stored::BF16 | Stored::F32 => DType::F32,
            Stored::F64 => DType::F64,
        }
    }
}

/// The elements of `data` as little-endian bytes, in row-major order.
fn le_bytes(data: &Data) -> Vec<u8> {
    match data {
        Data::Bool(a) => a.iter().map(|&b| u8::from(b)).collect(),
        Data::I64(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
        Data::F32(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
        Data::F64(a) => a.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

/// The number of bytes `shape` elements of `stored` take, or an error if it
/// overflows.
fn data_len(stored: Stored, shape: &[usize]) -> std::result::Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .and_then(|n| n.checked_mul(stored.size()))
        .ok_or_else(|| format!("shape {shape:?} has more elements than memory can hold"))
}

/// An error (its message) if a tensor of `shape`, loaded from `stored`
/// elements, would be over the allocation limit or too large for memory.
fn check_size(stored: Stored, shape: &[usize]) -> std::result::Result<(), String> {
    check_alloc(shape, stored.loaded_as())
        .map(|_| ())
        .map_err(|e| match e {
            Error::InvalidArgument { message, .. } => message,
            other => other.to_string(),
        })
}

/// The message for data of the wrong size: `have` bytes where `want` are
/// needed.
fn size_mismatch(stored: Stored, shape: &[usize], want: usize, have: &str) -> String {
    format!(
        "shape {shape:?} of {stored:?} elements needs {want} bytes of data, the file has {have}; \
         the file is truncated or corrupt"
    )
}

/// Up to `n` bytes from `input`, fewer only where it ends. The buffer grows
/// as bytes arrive (it is not sized by `n`, which may come from a file).
/// `reserve` bytes are allocated up front: the size a regular file was
/// checked to have, 0 for other sources.
fn read_up_to(input: &mut dyn Read, n: u64, reserve: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(reserve);
    input.take(n).read_to_end(&mut out)?;
    Ok(out)
}

/// A tensor of `shape` from `bytes` holding its elements as `stored`
/// (little- or big-endian, row-major or, with `fortran`, column-major).
/// Errors (as messages) if the byte count does not match or a `bool` byte is
/// neither 0 nor 1.
fn from_bytes(
    stored: Stored,
    shape: &[usize],
    bytes: &[u8],
    big_endian: bool,
    fortran: bool,
) -> std::result::Result<Tensor, String> {
    let want = data_len(stored, shape)?;
    if bytes.len() != want {
        return Err(size_mismatch(stored, shape, want, &bytes.len().to_string()));
    }
    check_size(stored, shape)?;
    macro_rules! convert {
        ($n:literal, $f:expr) => {{
            let f = $f;
            bytes
                .chunks_exact($n)
                .map(|c| {
                    let mut b = [0u8; $n];
                    b.copy_from_slice(c);
                    if big_endian {
                        b.reverse();
                    }
                    f(b)
                })
                .collect::<Vec<_>>()
        }};
    }
    fn build<T: Element>(shape: &[usize], v: Vec<T>, fortran: bool) -> Result<Tensor, String> {
        let dim = IxDyn(shape);
        let array = if fortran {
            ArrayD::from_shape_vec(dim.f(), v).map(|a| a.as_standard_layout().into_owned())
        } else {
            ArrayD::from_shape_vec(dim, v)
        };
        array.map(Tensor::from).map_err(|e| e.to_string())
    }
    match stored {
        Stored::Bool => {
            if let Some(b) = bytes.iter().find(|&&b| b > 1) {
                return Err(format!(
                    "a bool element holds the byte {b}, not 0 or 1; the file is corrupt"
                ));
            }
            build(shape, bytes.iter().map(|&b| b == 1).collect(), fortran)
        }
        Stored::I8 => build(
            shape,
            convert!(1, |b: [u8; 1]| i64::from(i8::from_le_bytes(b))),
            fortran,
        ),
        Stored::U8 => build(shape, convert!(1, |b: [u8; 1]| i64::from(b[0])), fortran),
        Stored::I16 => build(
            shape,
            convert!(2, |b| i64::from(i16::from_le_bytes(b))),
            fortran,
        ),
        Stored::U16 => build(
            shape,
            convert!(2, |b| i64::from(u16::from_le_bytes(b))),
            fortran,
        ),
        Stored::I32 => build(
            shape,
            convert!(4, |b| i64::from(i32::from_le_bytes(b))),
            fortran,
        ),
        Stored::U32 => build(
            shape,
            convert!(4, |b| i64::from(u32::from_le_bytes(b))),
            fortran,
        ),
        Stored::I64 => build(shape, convert!(8, i64::from_le_bytes), fortran),
        Stored::F16 => build(
            shape,
            convert!(2, |b| f16_to_f32(u16::from_le_bytes(b))),
            fortran,
        ),
        Stored::BF16 => build(
            shape,
            convert!(2, |b| bf16_to_f32(u16::from_le_bytes(b))),
            fortran,
        ),
        Stored::F32 => build(shape, convert!(4, f32::from_le_bytes), fortran),
        Stored::F64 => build(shape, convert!(8, f64::from_le_bytes), fortran),
    }
}

/// An IEEE 754 half-precision value (its bits) as the `f32` of the same
/// value: every f16 is exactly representable in f32, subnormals, infinities
/// and NaN included (a NaN keeps its sign and payload, shifted into place).
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match (exponent, mantissa) {
        (0, 0) => 0,
        // Subnormal: mantissa * 2^-24, normalized for f32 (whose exponent
        // range holds it): shift the mantissa's leading 1 to bit 10.
        (0, m) => {
            let shift = m.leading_zeros() - 21; // leading 1 moves to bit 10
            let m = (m << shift) & 0x3ff;
            let e = 127 - 15 + 1 - shift;
            (e << 23) | (m << 13)
        }
        (0x1f, m) => 0x7f80_0000 | (m << 13),
        (e, m) => ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// A bfloat16 value (its bits) as the `f32` of the same value: bfloat16 is
/// the top half of an f32.
pub(crate) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::{bf16_to_f32, f16_to_f32};

    /// Every f16 bit pattern against its value computed from the format's
    /// definition in f64: (-1)^s * 2^(e - 15) * (1 + m / 1024), or
    /// (-1)^s * 2^-14 * (m / 1024) for e = 0.
    pub(crate) fn f16_converts_exactly_for_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            let negative = bits & 0x8000 != 0;
            let e = i32::from((bits >> 10) & 0x1f);
            let m = f64::from(bits & 0x3ff);
            let got = f16_to_f32(bits);
            if e == 0x1f {
                if m == 0.0 {
                    assert!(
                        got.is_infinite() && got.is_sign_negative() == negative,
                        "{bits:#x}"
                    );
                } else {
                    assert!(got.is_nan(), "{bits:#x}");
                }
                continue;
            }
            let magnitude = if e == 0 {
                2f64.powi(-14) * (m / 1024.0)
            } else {
                2f64.powi(e - 15) * (1.0 + m / 1024.0)
            };
            let want = if negative { -magnitude } else { magnitude };
            assert_eq!(f64::from(got), want, "{bits:#x}");
            assert_eq!(got.is_sign_negative(), negative, "{bits:#x}");
        }
    }

    pub(crate) fn bf16_is_the_top_half_of_an_f32() {
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc000), -2.0);
        assert_eq!(bf16_to_f32(0x0001), f32::from_bits(0x0001_0000)); // subnormal
        assert!(bf16_to_f32(0x7fc0).is_nan());
        assert_eq!(bf16_to_f32(0xff80), f32::NEG_INFINITY);
    }

    crate::core::unit_test::test_list! {
        f16_converts_exactly_for_every_bit_pattern,
        bf16_is_the_top_half_of_an_f32,
    }
}
