//! Hostile weight files (issue 43): structured mutations of the headers of
//! `.npy`, `.npz` and safetensors files (nesting depth, header sizes, huge
//! declared sizes, overlapping and duplicated entries, local and central
//! names that differ, truncations, length fields that point past the end,
//! many entries), each an `Err` that names the function called, never a
//! panic, a stack overflow, an allocation of the declared size or an
//! unbounded read; and the replay of the fuzz corpus (`fuzz/corpus/`,
//! `fuzz/regressions/`) through every loader.
//!
//! Every file here is small: the huge sizes are declared, never allocated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use batchrules::io;
use batchrules::{DType, Error, Result, Tensor};

use crate::common::{bits, no_panic};

/// A directory of its own for one test, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("batchrules-hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn write(&self, file: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(file);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The message of `r`'s error, after checking that it is an
/// `Error::Weights` naming `function` (and that no panic happened).
#[track_caller]
fn refused<T: std::fmt::Debug>(
    what: &str,
    function: &str,
    r: impl FnOnce() -> Result<T>,
) -> String {
    let r = no_panic(what, r);
    let e = match r {
        Ok(v) => panic!("{what}: loaded {v:?}"),
        Err(e) => e,
    };
    let Error::Weights { function: f, .. } = &e else {
        panic!("{what}: not a weights error: {e:?}");
    };
    assert_eq!(*f, function, "{what}: {e}");
    let text = e.to_string();
    assert!(text.starts_with(&format!("{function}: ")), "{what}: {text}");
    text
}

// ---------------------------------------------------------------- npy

/// A .npy file: `version`, the header `text` as it is (no padding), `data`.
fn npy_raw(version: u8, text: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A header padded with spaces to exactly `len` bytes, ended by a newline.
fn padded(header: &str, len: usize) -> String {
    let mut h = header.to_string();
    while h.len() + 1 < len {
        h.push(' ');
    }
    h.push('\n');
    h
}

const F4_3: &str = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";

#[test]
fn npy_headers_are_bounded_at_numpys_10000_bytes_in_every_version() -> Result<()> {
    let data: Vec<u8> = [1.0f32, 2.0, 3.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    for version in [1u8, 2, 3] {
        // numpy's rule: `len(header) > max_header_size` is refused, so
        // 10,000 bytes load and 10,001 do not.
        let ok = npy_raw(version, &padded(F4_3, 10_000), &data);
        let t = no_panic("10000", || io::read_npy_bytes(&ok))?;
        assert_eq!(
            t.to_array::<f32>()?.into_raw_vec_and_offset().0,
            [1.0, 2.0, 3.0]
        );
        let long = npy_raw(version, &padded(F4_3, 10_001), &data);
        let m = refused("10001", "read_npy_bytes", || io::read_npy_bytes(&long));
        assert!(
            m.contains("10001 bytes long") && m.contains("max_header_size"),
            "{m}"
        );
        // The file form reads the header first, in every version, the same.
        let dir = TempDir::new("npy-versions");
        let t = io::load_npy(dir.write("ok.npy", &ok))?;
        assert_eq!(
            t.to_array::<f32>()?.into_raw_vec_and_offset().0,
            [1.0, 2.0, 3.0]
        );
        let m = refused("10001", "load_npy", || {
            io::load_npy(dir.write("long.npy", &long))
        });
        assert!(m.contains("10001 bytes long"), "{m}");
        let cut = &ok[..ok.len() - 1];
        let m = refused("cut", "load_npy", || {
            io::load_npy(dir.write("cut.npy", cut))
        });
        assert!(m.contains("needs 12 bytes of data, the file has 11"), "{m}");
    }
    // The example of the issue: 60,000 `(` (a v2 header, whose length field
    // can say so); and length fields at their largest, with a short file.
    let parens = npy_raw(2, &"(".repeat(60_000), &[]);
    let m = refused("60000 (", "read_npy_bytes", || io::read_npy_bytes(&parens));
    assert!(m.contains("60000 bytes long"), "{m}");
    for (version, len) in [(1u8, u32::from(u16::MAX)), (2, u32::MAX), (3, u32::MAX)] {
        let mut b = b"\x93NUMPY".to_vec();
        b.extend_from_slice(&[version, 0]);
        if version == 1 {
            b.extend_from_slice(&(len as u16).to_le_bytes());
        } else {
            b.extend_from_slice(&len.to_le_bytes());
        }
        b.extend_from_slice(b"{'descr'");
        let m = refused("max length", "read_npy_bytes", || io::read_npy_bytes(&b));
        assert!(m.contains(&format!("{len} bytes long")), "{m}");
    }
    // A header length that points past the end of the file (under the
    // bound): every cut of a valid file's header.
    let good = npy_raw(1, &padded(F4_3, 118), &data);
    for cut in 10..128 {
        let m = refused("cut header", "read_npy_bytes", || {
            io::read_npy_bytes(&good[..cut])
        });
        assert!(m.contains("the file ends before"), "{cut}: {m}");
    }
    Ok(())
}

#[test]
fn npy_header_nesting_is_bounded_at_16() {
    // The shape nested `k` tuples deep: the dict is one level, so the
    // deepest bracket is at level k + 1. Up to 16 levels parse (and the
    // shape is then refused as not integers), past that the nesting is.
    let shape = |k: usize| format!("{}1{}", "(".repeat(k), ",)".repeat(k));
    let parsed = "not an integer";
    let too_deep = "nest over 16 deep";
    for (k, want) in [
        (2, parsed),
        (15, parsed),
        (16, too_deep),
        (100, too_deep),
        (2_000, too_deep),
    ] {
        let text = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}}}",
            shape(k)
        );
        let b = npy_raw(1, &text, &[]);
        let m = refused("nested", "read_npy_bytes", || io::read_npy_bytes(&b));
        assert!(m.contains(want), "{k}: {m}");
    }
    // Unclosed brackets of every kind, as deep as the size bound allows.
    for open in ["(", "{", "{'a': ", "{'a': (", "((((((((((((((((("] {
        let text = open.repeat(9_000 / open.len());
        let b = npy_raw(1, &text, &[]);
        refused(open, "read_npy_bytes", || io::read_npy_bytes(&b));
    }
}

#[test]
fn an_npy_header_with_a_repeated_key_uses_the_last_value_as_numpy_does() -> Result<()> {
    // numpy reads the header as a Python dict literal: the last value wins.
    let data: Vec<u8> = [5.0f32, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let text = "{'descr': '<f4', 'shape': (3,), 'fortran_order': False, 'shape': (2,), }";
    let t = io::read_npy_bytes(&npy_raw(1, &padded(text, 118), &data))?;
    assert_eq!(t.shape(), [2]);
    assert_eq!(t.to_array::<f32>()?.into_raw_vec_and_offset().0, [5.0, 6.0]);
    // The same with the order swapped reads 3 elements, and 8 bytes are
    // then too few.
    let text = "{'descr': '<f4', 'shape': (2,), 'fortran_order': False, 'shape': (3,), }";
    let m = refused("swapped", "read_npy_bytes", || {
        io::read_npy_bytes(&npy_raw(1, &padded(text, 118), &data))
    });
    assert!(m.contains("needs 12 bytes of data, the file has 8"), "{m}");
    // descr and fortran_order too.
    let text = "{'descr': '<i8', 'fortran_order': True, 'shape': (2,), 'descr': '<f4', \
                'fortran_order': False}";
    let t = io::read_npy_bytes(&npy_raw(1, &padded(text, 118), &data))?;
    assert_eq!(t.dtype(), DType::F32);
    // A key numpy does not know is refused, as numpy refuses it.
    let text = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}";
    let m = refused("extra key", "read_npy_bytes", || {
        io::read_npy_bytes(&npy_raw(1, &padded(text, 118), &data))
    });
    assert!(m.contains("unexpected key"), "{m}");
    Ok(())
}

#[test]
fn npy_headers_with_text_numpy_would_not_write_are_errors() -> Result<()> {
    // Found by the fuzzer: a dtype whose first character is multi-byte
    // (`'ě8'`) panicked splitting it after its first byte.
    for descr in ["ě8", "<ě", "ě", "", "<", "\u{10FFFF}f4"] {
        let text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (), }}");
        let b = npy_raw(1, &padded(&text, 118), &[0; 8]);
        let m = refused(descr, "read_npy_bytes", || io::read_npy_bytes(&b));
        assert!(
            m.contains("dtype") || m.contains("element type"),
            "{descr}: {m}"
        );
    }
    // Non-ASCII text after the dict, in keys and in values.
    for text in [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (), } ééé",
        "{'déscr': '<f4', 'fortran_order': False, 'shape': (), }",
        "{'descr': '<f4', 'fortran_order': Fälse, 'shape': (), }",
    ] {
        let b = npy_raw(1, &padded(text, 118), &[0; 4]);
        refused(text, "read_npy_bytes", || io::read_npy_bytes(&b));
    }
    // At most 64 dims (numpy's NPY_MAXDIMS), read and written.
    let dims = |n: usize| format!("({})", "1, ".repeat(n));
    let text = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}",
        dims(64)
    );
    let t = io::read_npy_bytes(&npy_raw(1, &padded(&text, 256), &[0; 4]))?;
    assert_eq!(t.shape().len(), 64);
    assert_eq!(
        io::read_npy_bytes(&io::to_npy_bytes(&t)?)?.shape(),
        t.shape()
    );
    let text = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}",
        dims(65)
    );
    let m = refused("65 dims", "read_npy_bytes", || {
        io::read_npy_bytes(&npy_raw(1, &padded(&text, 256), &[0; 4]))
    });
    assert!(m.contains("65 dims") && m.contains("at most 64"), "{m}");
    let wide = Tensor::from_shape_vec(&[1; 65], vec![0.0f32])?;
    let m = refused("save 65 dims", "to_npy_bytes", || io::to_npy_bytes(&wide));
    assert!(m.contains("65 dims"), "{m}");
    let dir = TempDir::new("npy-dims");
    let named = BTreeMap::from([("w".to_string(), wide)]);
    let m = refused("npz 65 dims", "save_npz", || {
        io::save_npz(&named, dir.0.join("w.npz"))
    });
    assert!(m.contains("key `w`") && m.contains("65 dims"), "{m}");
    Ok(())
}

#[test]
fn npy_files_declaring_huge_sizes_are_refused_before_reading() {
    let dir = TempDir::new("npy-huge");
    // Shapes whose data would be terabytes, or overflow, in 100-byte files.
    for shape in [
        "(1099511627776,)",
        "(4294967296, 4294967296)",
        "(18446744073709551615, 2)",
    ] {
        let text = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
        let b = npy_raw(1, &padded(&text, 118), &[0; 16]);
        refused(shape, "read_npy_bytes", || io::read_npy_bytes(&b));
        let path = dir.write("huge.npy", &b);
        refused(shape, "load_npy", || io::load_npy(&path));
    }
    // A file longer or shorter than its header says, through the file form.
    let data = [0u8; 12];
    let text = padded(F4_3, 118);
    let long = [npy_raw(1, &text, &data), vec![0; 1000]].concat();
    let m = refused("long", "load_npy", || {
        io::load_npy(dir.write("long.npy", &long))
    });
    assert!(
        m.contains("needs 12 bytes of data, the file has 1012"),
        "{m}"
    );
    let short = npy_raw(1, &text, &data[..5]);
    let m = refused("short", "load_npy", || {
        io::load_npy(dir.write("short.npy", &short))
    });
    assert!(m.contains("needs 12 bytes of data, the file has 5"), "{m}");
}

#[cfg(unix)]
#[test]
fn devices_and_pipes_are_not_read_unbounded() {
    // /dev/zero never ends: every loader must stop at its header.
    let zero = Path::new("/dev/zero");
    if zero.exists() {
        let m = refused("zero", "load_npy", || io::load_npy(zero));
        assert!(m.contains("does not start with"), "{m}");
        let m = refused("zero", "read_npz", || io::read_npz(zero));
        assert!(m.contains("not a regular file"), "{m}");
        refused("zero", "read_safetensors", || io::read_safetensors(zero));
        let template = BTreeMap::from([("a".to_string(), Tensor::scalar(0.0f32))]);
        refused("zero", "load_safetensors", || {
            io::load_safetensors(&template, zero)
        });
        refused("zero", "load_npz", || io::load_npz(&template, zero));
    }
    // A pipe that sends a valid header then bytes without end: read up to
    // one byte past the declared data, then refused.
    let dir = TempDir::new("fifo");
    let fifo = dir.0.join("endless");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return; // no mkfifo here
    }
    let cases: [(&str, Vec<u8>); 2] = [
        ("npy", npy_raw(1, &padded(F4_3, 118), &[])),
        (
            "safetensors",
            st_file(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}"#,
                &[],
            ),
        ),
    ];
    for (what, header) in cases {
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                let _ = f.write_all(&header);
                // Until the reader closes the pipe (a write error then).
                let chunk = [0u8; 4096];
                for _ in 0..100_000 {
                    if f.write_all(&chunk).is_err() {
                        return true;
                    }
                }
                false
            })
        };
        let m = if what == "npy" {
            refused("endless npy", "load_npy", || io::load_npy(&fifo))
        } else {
            refused("endless st", "read_safetensors", || {
                io::read_safetensors(&fifo)
            })
        };
        assert!(m.contains("truncated or corrupt"), "{what}: {m}");
        assert!(
            writer.join().unwrap(),
            "{what}: the reader read 400 MB of an endless pipe"
        );
    }
}

// ---------------------------------------------------------------- npz

/// One central directory entry of a hand-made archive.
struct Central {
    name: Vec<u8>,
    local: u64,
    size: u64,
    crc: u32,
}

/// An archive of `body` (its local headers and data, as made by
/// [`local`]) and a central directory of `entries`; `count` overrides the
/// end record's count.
fn archive(body: &[u8], entries: &[Central], count: Option<u16>) -> Vec<u8> {
    let mut out = body.to_vec();
    let offset = out.len() as u32;
    let mut central = Vec::new();
    for e in entries {
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        for v in [20u16, 20, 0, 0, 0, 0] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in [e.crc, e.size as u32, e.size as u32] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in [e.name.len() as u16, 0, 0, 0, 0] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        for v in [0u32, e.local as u32] {
            central.extend_from_slice(&v.to_le_bytes());
        }
        central.extend_from_slice(&e.name);
    }
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    let n = count.unwrap_or(entries.len() as u16);
    for v in [0u16, 0, n, n] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [central.len() as u32, offset] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A local header named `name` followed by `data`.
fn local(name: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = 0x0403_4b50u32.to_le_bytes().to_vec();
    for v in [20u16, 0, 0, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let crc = crc32(data);
    for v in [crc, data.len() as u32, data.len() as u32] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [name.len() as u16, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(name);
    out.extend_from_slice(data);
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A small valid .npy: 3 f32 values.
fn small_npy() -> Vec<u8> {
    io::to_npy_bytes(&Tensor::from_shape_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap()).unwrap()
}

/// An archive of `names`, each a [`small_npy`], and their central entries.
fn entries_of(names: &[&str]) -> (Vec<u8>, Vec<Central>) {
    let npy = small_npy();
    let mut body = Vec::new();
    let mut central = Vec::new();
    for name in names {
        central.push(Central {
            name: name.as_bytes().to_vec(),
            local: body.len() as u64,
            size: npy.len() as u64,
            crc: crc32(&npy),
        });
        body.extend(local(name.as_bytes(), &npy));
    }
    (body, central)
}

/// `read_npz_bytes`, then `read_npz` and `load_npz` of the same bytes in a
/// file: all refused, naming themselves; the first message.
fn npz_refused(dir: &TempDir, what: &str, bytes: &[u8]) -> String {
    let m = refused(what, "read_npz_bytes", || io::read_npz_bytes(bytes));
    let path = dir.write("hostile.npz", bytes);
    let f = refused(what, "read_npz", || io::read_npz(&path));
    assert_eq!(
        f.split_once(": ")
            .map(|(_, rest)| rest.split_once(": ").map(|x| x.1)),
        m.split_once(": ")
            .map(|(_, rest)| rest.split_once(": ").map(|x| x.1)),
        "{what}: the file form says the same"
    );
    let template = BTreeMap::from([("a".to_string(), Tensor::scalar(0.0f32))]);
    refused(what, "load_npz", || io::load_npz(&template, &path));
    m
}

#[test]
fn overlapping_npz_entries_are_refused() -> Result<()> {
    let dir = TempDir::new("npz-overlap");
    let (body, good) = entries_of(&["a.npy", "b.npy"]);
    let ok = io::read_npz_bytes(&archive(&body, &good, None))?;
    assert_eq!(ok.keys().collect::<Vec<_>>(), ["a", "b"]);

    // The example of the issue, scaled down: one entry named many times,
    // every name pointing at the same local header (whose name is the
    // first's: the others then also differ from it; the overlap is found
    // whatever the names).
    let (body, one) = entries_of(&["a.npy"]);
    for copies in [2, 1000] {
        let same: Vec<Central> = (0..copies).map(|_| copy(&one[0])).collect();
        let m = npz_refused(&dir, "same entry", &archive(&body, &same, None));
        assert!(m.contains("overlaps"), "{copies}: {m}");
    }
    // Entry b's local header inside a's data: a is declared longer than it is.
    let (body, mut two) = entries_of(&["a.npy", "b.npy"]);
    two[0].size += 40;
    two[0].crc = crc32(&body[30 + 5..30 + 5 + two[0].size as usize]);
    let m = npz_refused(&dir, "a over b", &archive(&body, &two, None));
    assert!(m.contains("entry `a.npy` overlaps entry `b.npy`"), "{m}");
    // The last entry running into the central directory.
    let (body, mut two) = entries_of(&["a.npy", "b.npy"]);
    two[1].size += 10;
    let m = npz_refused(&dir, "b over the directory", &archive(&body, &two, None));
    assert!(m.contains("overlaps the central directory"), "{m}");
    // Two entries at the same offset with the same (local) name.
    let (body, two) = entries_of(&["a.npy", "b.npy"]);
    let twice = [copy(&two[1]), copy(&two[0]), copy(&two[1])];
    let m = npz_refused(&dir, "b twice", &archive(&body, &twice, None));
    assert!(m.contains("overlaps"), "{m}");
    Ok(())
}

fn copy(c: &Central) -> Central {
    Central {
        name: c.name.clone(),
        local: c.local,
        size: c.size,
        crc: c.crc,
    }
}

#[test]
fn npz_names_must_agree_and_be_distinct() {
    let dir = TempDir::new("npz-names");
    // The central directory's name differs from the local header's.
    let (body, mut two) = entries_of(&["a.npy", "b.npy"]);
    two[1].name = b"c.npy".to_vec();
    let m = npz_refused(&dir, "renamed", &archive(&body, &two, None));
    assert!(
        m.contains("entry `c.npy` has the name `b.npy` in its local header"),
        "{m}"
    );
    // Two distinct entries of the same name, or of the same key (`a` and
    // `a.npy` are both the array `a`).
    for names in [["a.npy", "a.npy"], ["a", "a.npy"]] {
        let (body, two) = entries_of(&names);
        let m = npz_refused(&dir, "twice", &archive(&body, &two, None));
        assert!(
            m.contains("key `a`") && m.contains("two entries of this name"),
            "{m}"
        );
    }
}

#[test]
fn npz_declared_sizes_and_counts_are_bounded_by_the_file() {
    let dir = TempDir::new("npz-sizes");
    let (body, good) = entries_of(&["a.npy"]);
    // An entry declared bigger than the file, or ending past it.
    for size in [u64::from(u32::MAX - 1), 1 << 20, body.len() as u64] {
        let mut e = copy(&good[0]);
        e.size = size;
        let m = npz_refused(&dir, "size", &archive(&body, &[e], None));
        assert!(m.contains("truncated or corrupt"), "{size}: {m}");
    }
    // A local header offset past the end.
    let mut e = copy(&good[0]);
    e.local = u64::from(u32::MAX - 1);
    let m = npz_refused(&dir, "offset", &archive(&body, &[e], None));
    assert!(m.contains("lies past the end of the file"), "{m}");
    // The end record counting more entries than the directory holds.
    for count in [2u16, 1000, u16::MAX - 1] {
        let m = npz_refused(&dir, "count", &archive(&body, &good, Some(count)));
        assert!(m.contains("hold at most 1"), "{count}: {m}");
    }
    // The directory's offset and size pointing past the end.
    let mut bad = archive(&body, &good, None);
    let end = bad.len() - 22;
    bad[end + 16..end + 20].copy_from_slice(&u32::MAX.to_le_bytes());
    bad[end + 12..end + 16].copy_from_slice(&(u32::MAX - 1).to_le_bytes());
    let m = npz_refused(&dir, "directory", &bad);
    assert!(m.contains("ZIP64") || m.contains("outside the file"), "{m}");
    let mut bad = archive(&body, &good, None);
    bad[end + 12..end + 16].copy_from_slice(&(1u32 << 30).to_le_bytes());
    let m = npz_refused(&dir, "directory size", &bad);
    assert!(m.contains("outside the file"), "{m}");
    // A ZIP64 end record counting 2^60 entries.
    let mut zip64 = archive(&body, &good, Some(u16::MAX));
    let end = zip64.len() - 22;
    let (cd_size, cd_offset) = (
        u32::from_le_bytes(zip64[end + 12..end + 16].try_into().unwrap()),
        u32::from_le_bytes(zip64[end + 16..end + 20].try_into().unwrap()),
    );
    let mut record = 0x0606_4b50u32.to_le_bytes().to_vec();
    record.extend_from_slice(&44u64.to_le_bytes());
    record.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    record.extend_from_slice(&(1u64 << 60).to_le_bytes());
    record.extend_from_slice(&(1u64 << 60).to_le_bytes());
    record.extend_from_slice(&u64::from(cd_size).to_le_bytes());
    record.extend_from_slice(&u64::from(cd_offset).to_le_bytes());
    let record_at = end as u64;
    let mut locator = 0x0706_4b50u32.to_le_bytes().to_vec();
    locator.extend_from_slice(&0u32.to_le_bytes());
    locator.extend_from_slice(&record_at.to_le_bytes());
    locator.extend_from_slice(&1u32.to_le_bytes());
    let tail = zip64.split_off(end);
    zip64.extend(record);
    zip64.extend(locator);
    zip64.extend(tail);
    let m = npz_refused(&dir, "zip64 count", &zip64);
    assert!(m.contains("counts 1152921504606846976 entries"), "{m}");
    // An entry whose .npy declares a huge shape.
    let text = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1024), }";
    let npy = npy_raw(1, &padded(text, 118), &[]);
    let body = local(b"w.npy", &npy);
    let e = Central {
        name: b"w.npy".to_vec(),
        local: 0,
        size: npy.len() as u64,
        crc: crc32(&npy),
    };
    npz_refused(&dir, "huge npy", &archive(&body, &[e], None));
    // And a deeply nested one.
    let npy = npy_raw(1, &"(".repeat(9000), &[]);
    let body = local(b"w.npy", &npy);
    let e = Central {
        name: b"w.npy".to_vec(),
        local: 0,
        size: npy.len() as u64,
        crc: crc32(&npy),
    };
    let m = npz_refused(&dir, "nested npy", &archive(&body, &[e], None));
    assert!(
        m.contains("key `w`") && m.contains("nest over 16 deep"),
        "{m}"
    );
}

#[test]
fn many_npz_entries_load_and_every_truncation_is_refused() -> Result<()> {
    let dir = TempDir::new("npz-many");
    let names: Vec<String> = (0..3000).map(|i| format!("w{i}.npy")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (body, entries) = entries_of(&refs);
    let bytes = archive(&body, &entries, None);
    assert_eq!(io::read_npz_bytes(&bytes)?.len(), 3000);
    let path = dir.write("many.npz", &bytes);
    assert_eq!(io::read_npz(&path)?.len(), 3000);
    // Every prefix of a small archive (the end record is at the end, so
    // each is refused).
    let (body, two) = entries_of(&["a.npy", "b.npy"]);
    let small = archive(&body, &two, None);
    for cut in 0..small.len() {
        refused("cut", "read_npz_bytes", || {
            io::read_npz_bytes(&small[..cut])
        });
    }
    Ok(())
}

#[test]
fn save_npz_names_a_key_too_long_for_zip() -> Result<()> {
    let dir = TempDir::new("npz-key");
    let key = "k".repeat(70_000);
    let named = BTreeMap::from([(key.clone(), Tensor::scalar(1.0f32))]);
    let path = dir.0.join("long.npz");
    let m = refused("long key", "save_npz", || io::save_npz(&named, &path));
    assert!(m.contains("70000 bytes long") && m.contains("65535"), "{m}");
    assert!(!m.contains("4 GiB") && !m.contains("entries"), "{m}");
    assert!(
        m.contains("kkkkk") && m.len() < 600,
        "the key is shortened: {m}"
    );
    assert!(!path.exists());
    // The longest key that fits (65535 bytes with `.npy`) saves and loads.
    let key = "k".repeat(65_535 - 4);
    let named = BTreeMap::from([(key.clone(), Tensor::scalar(1.0f32))]);
    io::save_npz(&named, &path)?;
    assert!(io::read_npz(&path)?.contains_key(&key));
    let key = "k".repeat(65_535 - 3);
    let named = BTreeMap::from([(key, Tensor::scalar(1.0f32))]);
    let m = refused("one too long", "save_npz", || io::save_npz(&named, &path));
    assert!(m.contains("65532 bytes long"), "{m}");
    Ok(())
}

// ---------------------------------------------------------------- safetensors

fn st_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// `read_safetensors_bytes`, `read_safetensors` and `load_safetensors` of
/// `bytes`: all refused, naming themselves.
fn st_refused(dir: &TempDir, what: &str, bytes: &[u8]) -> String {
    let m = refused(what, "read_safetensors_bytes", || {
        io::read_safetensors_bytes(bytes)
    });
    let path = dir.write("hostile.safetensors", bytes);
    refused(what, "read_safetensors", || io::read_safetensors(&path));
    let template = BTreeMap::from([("a".to_string(), Tensor::scalar(0.0f32))]);
    refused(what, "load_safetensors", || {
        io::load_safetensors(&template, &path)
    });
    m
}

#[test]
fn safetensors_headers_and_offsets_are_bounded() -> Result<()> {
    let dir = TempDir::new("st");
    let good = st_file(
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
        &[0; 8],
    );
    assert_eq!(io::read_safetensors_bytes(&good)?["a"].shape(), [2]);
    let path = dir.write("good.safetensors", &good);
    assert_eq!(io::read_safetensors(&path)?["a"].shape(), [2]);

    // Header lengths past the bound (100,000,000), past the end, at u64::MAX.
    for n in [u64::MAX, 1 << 40, 100_000_001, 1000] {
        let mut b = good.clone();
        b[..8].copy_from_slice(&n.to_le_bytes());
        st_refused(&dir, "header length", &b);
    }
    let cases = [
        // A name given twice (the crate keeps one: refused here).
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            4,
            "names `a` twice",
        ),
        // A gap, an overlap, offsets past the end, a huge declared size.
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#,
            12,
            "",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
            8,
            "",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
            8,
            "",
        ),
        (
            r#"{"a":{"dtype":"F64","shape":[1099511627776],"data_offsets":[0,8796093022208]}}"#,
            8,
            "",
        ),
        (
            r#"{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#,
            8,
            "",
        ),
        // Deep nesting in the metadata (serde_json stops at 128 levels).
        (
            &format!(r#"{{"__metadata__":{}}}"#, "[".repeat(50_000)),
            0,
            "",
        ),
        (&format!(r#"{{"a":{}}}"#, "{\"a\":".repeat(50_000)), 0, ""),
    ];
    for (header, len, want) in cases {
        let m = st_refused(&dir, header, &st_file(header, &vec![0; len]));
        assert!(
            m.contains("not a valid safetensors file") && m.contains(want),
            "{m}"
        );
    }
    // A file longer or shorter than the header says, through the file form.
    let long = [good.clone(), vec![0; 100]].concat();
    let m = st_refused(&dir, "long", &long);
    assert!(m.contains("not a valid safetensors file"), "{m}");
    let m = refused("long", "read_safetensors", || {
        io::read_safetensors(dir.write("l.safetensors", &long))
    });
    assert!(
        m.contains("the header describes 8 bytes of tensors, the file has 108"),
        "{m}"
    );
    for cut in 0..good.len() {
        st_refused(&dir, "cut", &good[..cut]);
    }
    Ok(())
}

// ---------------------------------------------------------------- fuzz corpus

const FUZZ: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz");

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Every file of the fuzz corpus (and the reproducers of what the fuzzer
/// found) through every bytes loader: an `Ok` or an `Err` naming the loader,
/// never a panic; an `Ok` saves and loads back the same.
#[test]
fn the_fuzz_corpus_replays_without_panics() -> Result<()> {
    let mut files = Vec::new();
    for target in ["npy", "npz", "safetensors"] {
        let found = files_in(&Path::new(FUZZ).join("corpus").join(target));
        assert!(
            found.len() >= 5,
            "fuzz/corpus/{target} has {} files",
            found.len()
        );
        files.extend(found);
    }
    files.extend(files_in(&Path::new(FUZZ).join("regressions")));
    let mut loaded = 0;
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let what = file.display().to_string();
        match no_panic(&what, || io::read_npy_bytes(&bytes)) {
            Ok(t) => {
                loaded += 1;
                let back = io::read_npy_bytes(&io::to_npy_bytes(&t)?)?;
                assert_eq!(
                    (back.shape(), back.dtype()),
                    (t.shape(), t.dtype()),
                    "{what}"
                );
                assert_eq!(bits(&back), bits(&t), "{what}");
            }
            Err(e) => assert!(e.to_string().starts_with("read_npy_bytes: "), "{what}: {e}"),
        }
        match no_panic(&what, || io::read_npz_bytes(&bytes)) {
            Ok(map) => {
                loaded += 1;
                let count: usize = map
                    .values()
                    .map(|t| t.shape().iter().product::<usize>())
                    .sum();
                assert!(
                    count <= bytes.len(),
                    "{what}: {count} elements from {} bytes",
                    bytes.len()
                );
            }
            Err(e) => assert!(e.to_string().starts_with("read_npz_bytes: "), "{what}: {e}"),
        }
        match no_panic(&what, || io::read_safetensors_bytes(&bytes)) {
            // A tensor named "" loads, but the writer needs a name per leaf.
            Ok(map) if map.contains_key("") => loaded += 1,
            Ok(map) => {
                loaded += 1;
                let back = io::read_safetensors_bytes(&io::to_safetensors_bytes(&map)?)?;
                assert_eq!(
                    back.keys().collect::<Vec<_>>(),
                    map.keys().collect::<Vec<_>>()
                );
                for (k, t) in &map {
                    assert_eq!(bits(&back[k]), bits(t), "{what}: {k}");
                }
            }
            Err(e) => {
                assert!(
                    e.to_string().starts_with("read_safetensors_bytes: "),
                    "{what}: {e}"
                )
            }
        }
    }
    // The corpus holds files that load, not only rejects.
    assert!(
        loaded >= 10,
        "{loaded} of {} corpus files loaded",
        files.len()
    );
    Ok(())
}
