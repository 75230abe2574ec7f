//! numpy's `.npy` format: the magic `\x93NUMPY`, a version (1.0, 2.0 or
//! 3.0), the header's length (2 bytes in 1.0, 4 after), the header (a Python
//! dict literal: `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`,
//! padded with spaces to a multiple of 64 bytes and ended by a newline), then
//! the elements.

use std::io::Read;

use super::{check_size, data_len, from_bytes, le_bytes, read_up_to, size_mismatch, Site, Stored};
use crate::{DType, Result, Tensor};

const MAGIC: &[u8] = b"\x93NUMPY";

/// The `.npy` bytes of `tensor` (dense, or an error naming `key`).
pub(super) fn encode(tensor: &Tensor, site: &Site, key: Option<&str>) -> Result<Vec<u8>> {
    let data = tensor.data().map_err(|e| {
        site.err(
            key,
            format!(
                "cannot save this tensor: {e}; save the transformed function's result after \
                 the transform returns"
            ),
        )
    })?;
    if data.shape().len() > MAX_DIMS {
        return Err(site.err(
            key,
            format!(
                "the tensor has {} dims; numpy arrays have at most {MAX_DIMS}, so numpy could \
                 not load the file; reshape it first, or save to safetensors",
                data.shape().len()
            ),
        ));
    }
    let descr = match data.dtype() {
        DType::Bool => "|b1",
        DType::I64 => "<i8",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let dims: Vec<String> = data.shape().iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Version 1.0 has a 2-byte header length; 10 bytes come before the
    // header, and the whole preamble is padded to a multiple of 64.
    let (version, before) = if header.len() + 1 + 10 <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let total = (before + header.len() + 1).next_multiple_of(64);
    header.extend(std::iter::repeat_n(' ', total - before - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + data.shape().iter().product::<usize>() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    let len = header.len();
    if version == 1 {
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        let len = u32::try_from(len)
            .map_err(|_| site.err(key, "the .npy header is too long".to_string()))?;
        out.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&le_bytes(data));
    Ok(out)
}

/// The most bytes a `.npy` header may have (the dict literal, its padding
/// and newline; not the magic, version and length before it): numpy's
/// default `max_header_size`, past which `numpy.load` refuses a file unless
/// given `allow_pickle=True`.
pub(crate) const MAX_HEADER: usize = 10_000;

/// How deeply the header's brackets may nest. A header numpy writes for the
/// arrays batchrules reads nests 2 deep (the shape tuple in the dict).
pub(crate) const MAX_DEPTH: usize = 16;

/// The most dims a numpy array has (`NPY_MAXDIMS` since numpy 2.0): a
/// header with more is refused, and a tensor with more is not saved (numpy
/// could not load it). With at most 64 dims the header numpy and
/// [`encode`] write stays far under [`MAX_HEADER`].
pub(crate) const MAX_DIMS: usize = 64;

/// The bytes before the header: the magic, the version and the header's
/// length. 10 bytes in version 1.0, 12 in 2.0 and 3.0.
const PREFIX_V1: usize = 10;

fn not_npy() -> String {
    "not a .npy file (it does not start with \\x93NUMPY); the file is truncated or corrupt"
        .to_string()
}

/// The header's length and the number of bytes before it, from the first
/// bytes of the file (at least 10, 12 for versions 2.0 and 3.0, else an
/// error); refuses a header over [`MAX_HEADER`] bytes.
fn preamble(bytes: &[u8]) -> std::result::Result<(usize, usize), String> {
    if bytes.len() < PREFIX_V1 || &bytes[..6] != MAGIC {
        return Err(not_npy());
    }
    let (len, start) = match (bytes[6], bytes.get(8..12)) {
        (1, _) => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        (2 | 3, Some(&[a, b, c, d])) => {
            let len = u32::from_le_bytes([a, b, c, d]);
            (usize::try_from(len).unwrap_or(usize::MAX), 12)
        }
        (2 | 3, _) => return Err(not_npy()),
        (v, _) => {
            return Err(format!(
                ".npy format version {v}.{} is not supported (1.0, 2.0 and 3.0 are)",
                bytes[7]
            ))
        }
    };
    if len > MAX_HEADER {
        return Err(format!(
            "the .npy header says it is {len} bytes long, over the {MAX_HEADER} bytes numpy \
             reads (its `max_header_size`); the file is corrupt, or not one numpy loads without \
             `allow_pickle=True`"
        ));
    }
    Ok((len, start))
}

fn header_ends_early(len: usize) -> String {
    format!(
        "the .npy header says it is {len} bytes long, but the file ends before; the file is \
         truncated"
    )
}

/// The header's text, parsed; and the number of bytes its elements take,
/// checked against the allocation limit.
fn parse_header(text: &[u8]) -> std::result::Result<(Header, usize), String> {
    let text = std::str::from_utf8(text)
        .map_err(|_| "the .npy header is not text; the file is corrupt".to_string())?;
    let header = Header::parse(text).map_err(|m| format!("bad .npy header: {m}"))?;
    let want = data_len(header.stored, &header.shape)?;
    check_size(header.stored, &header.shape)?;
    Ok((header, want))
}

/// The tensor in `.npy` bytes (errors name `key`, the entry of an `.npz`).
pub(super) fn decode(bytes: &[u8], site: &Site, key: Option<&str>) -> Result<Tensor> {
    let err = |m: String| site.err(key, m);
    let (len, start) = preamble(bytes).map_err(err)?;
    let Some(text) = bytes.get(start..start + len) else {
        return Err(err(header_ends_early(len)));
    };
    let (header, _) = parse_header(text).map_err(err)?;
    let body = &bytes[start + len..];
    from_bytes(
        header.stored,
        &header.shape,
        body,
        header.big_endian,
        header.fortran,
    )
    .map_err(err)
}

/// The tensor in a `.npy` file, read from `input`: the preamble and header
/// first (at most [`MAX_HEADER`] bytes and the 12 before), then exactly the
/// bytes the header declares, after checking them against the allocation
/// limit and against `len`, the file's size if it is a regular file. A
/// source that is not a regular file (a pipe, a device) is read no further
/// than one byte past the declared size, to see that it ends there.
pub(super) fn read(input: &mut dyn Read, len: Option<u64>, site: &Site) -> Result<Tensor> {
    let err = |m: String| site.err(None, m);
    let io = |e: std::io::Error| site.err(None, format!("cannot read the file: {e}"));
    let mut head = read_up_to(input, PREFIX_V1 as u64, PREFIX_V1).map_err(io)?;
    if head.len() == PREFIX_V1 && head.starts_with(MAGIC) && matches!(head[6], 2 | 3) {
        head.extend(read_up_to(input, 2, 2).map_err(io)?);
    }
    let (header_len, start) = preamble(&head).map_err(err)?;
    let text = read_up_to(input, header_len as u64, header_len).map_err(io)?;
    if text.len() < header_len {
        return Err(err(header_ends_early(header_len)));
    }
    let (header, want) = parse_header(&text).map_err(err)?;
    let body_start = (start + header_len) as u64;
    if let Some(len) = len {
        let have = len.saturating_sub(body_start);
        if have != want as u64 {
            return Err(err(size_mismatch(
                header.stored,
                &header.shape,
                want,
                &have.to_string(),
            )));
        }
    }
    // One byte more than declared: a longer source is refused, not read on.
    let reserve = if len.is_some() { want } else { 0 };
    let body = read_up_to(input, want as u64 + 1, reserve).map_err(io)?;
    if body.len() != want {
        let have = if body.len() > want {
            "more".to_string()
        } else {
            body.len().to_string()
        };
        return Err(err(size_mismatch(
            header.stored,
            &header.shape,
            want,
            &have,
        )));
    }
    from_bytes(
        header.stored,
        &header.shape,
        &body,
        header.big_endian,
        header.fortran,
    )
    .map_err(err)
}

/// What a `.npy` header says.
struct Header {
    stored: Stored,
    big_endian: bool,
    fortran: bool,
    shape: Vec<usize>,
}

/// A Python literal, as far as `.npy` headers use them.
#[derive(Debug, PartialEq)]
enum Py {
    Str(String),
    Bool(bool),
    Int(usize),
    Tuple(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

impl Header {
    fn parse(text: &str) -> std::result::Result<Header, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            depth: 0,
        };
        let value = p.value()?;
        p.space();
        if p.i != p.s.len() {
            return Err(format!(
                "unexpected text after the dict: {:?}",
                String::from_utf8_lossy(&p.s[p.i..])
            ));
        }
        let Py::Dict(items) = value else {
            return Err(format!("expected a dict, found {value:?}"));
        };
        // As numpy: the header is a Python dict literal, so a repeated key's
        // last value is the one that counts; keys other than the three are
        // refused ("Header does not contain the correct keys").
        for (k, _) in &items {
            match k {
                Py::Str(s) if ["descr", "fortran_order", "shape"].contains(&s.as_str()) => {}
                other => {
                    return Err(format!(
                        "unexpected key {other:?}: a .npy header has the keys 'descr', \
                         'fortran_order' and 'shape' only"
                    ))
                }
            }
        }
        let get = |name: &str| {
            items
                .iter()
                .rev()
                .find(|(k, _)| *k == Py::Str(name.to_string()))
                .map(|(_, v)| v)
                .ok_or_else(|| format!("the key '{name}' is missing"))
        };
        let descr = match get("descr")? {
            Py::Str(s) => s.as_str(),
            other => {
                return Err(format!(
                    "'descr' is {other:?}: structured arrays are not supported, only plain \
                     numeric and bool arrays"
                ))
            }
        };
        let fortran = match get("fortran_order")? {
            Py::Bool(b) => *b,
            other => return Err(format!("'fortran_order' is {other:?}, not True or False")),
        };
        let shape = match get("shape")? {
            Py::Tuple(dims) => dims
                .iter()
                .map(|d| match d {
                    Py::Int(n) => Ok(*n),
                    other => Err(format!("a dim of 'shape' is {other:?}, not an integer")),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?,
            other => return Err(format!("'shape' is {other:?}, not a tuple")),
        };
        if shape.len() > MAX_DIMS {
            return Err(format!(
                "'shape' has {} dims; numpy arrays have at most {MAX_DIMS}",
                shape.len()
            ));
        }
        // By bytes: the first may start a multi-byte character (then no
        // split, and the dtype is unknown).
        let (order, code) = descr.split_at_checked(1).unwrap_or(("?", descr));
        let big_endian = match order {
            "<" | "|" | "=" => false,
            ">" => true,
            _ => return Err(format!("unknown dtype '{descr}'")),
        };
        let stored = match code {
            "b1" => Stored::Bool,
            "i1" => Stored::I8,
            "i2" => Stored::I16,
            "i4" => Stored::I32,
            "i8" => Stored::I64,
            "u1" => Stored::U8,
            "u2" => Stored::U16,
            "u4" => Stored::U32,
            "f2" => Stored::F16,
            "f4" => Stored::F32,
            "f8" => Stored::F64,
            _ => {
                return Err(format!(
                    "element type '{descr}' is not supported: batchrules holds f32, f64, i64 \
                     and bool, and converts f16 and the integers up to 32 bits on load; \
                     convert the array first (e.g. `a.astype(np.float32)`)"
                ))
            }
        };
        Ok(Header {
            stored,
            big_endian,
            fortran,
            shape,
        })
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// How many dicts and tuples the parser is inside (at most [`MAX_DEPTH`]).
    depth: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.space();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.i += 1;
                Ok(())
            }
            Some(x) => Err(format!(
                "expected '{}' at byte {}, found '{}'",
                c as char, self.i, x as char
            )),
            None => Err(format!("expected '{}', the header ends", c as char)),
        }
    }

    /// Items up to `close`, separated by commas (a trailing comma allowed).
    fn items<T>(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> std::result::Result<T, String>,
    ) -> std::result::Result<Vec<T>, String> {
        let mut out = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(out);
            }
            out.push(item(self)?);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => {
                    return Err(format!(
                        "expected ',' or '{}' at byte {}",
                        close as char, self.i
                    ))
                }
            }
        }
    }

    /// `items` one level deeper, refused past [`MAX_DEPTH`] (the parser
    /// recurses once per level).
    fn nested<T>(
        &mut self,
        close: u8,
        item: impl FnMut(&mut Self) -> std::result::Result<T, String>,
    ) -> std::result::Result<Vec<T>, String> {
        if self.depth >= MAX_DEPTH {
            return Err(format!(
                "brackets nest over {MAX_DEPTH} deep at byte {}; a numpy header nests 2 deep",
                self.i
            ));
        }
        self.depth += 1;
        let out = self.items(close, item);
        self.depth -= 1;
        out
    }

    fn value(&mut self) -> std::result::Result<Py, String> {
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let items = self.nested(b'}', |p| {
                    let k = p.value()?;
                    p.expect(b':')?;
                    Ok((k, p.value()?))
                })?;
                Ok(Py::Dict(items))
            }
            Some(b'(') => {
                self.i += 1;
                Ok(Py::Tuple(self.nested(b')', Self::value)?))
            }
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i] != q {
                    self.i += 1;
                }
                if self.i == self.s.len() {
                    return Err("a string is not closed".to_string());
                }
                let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Ok(Py::Str(text))
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                    self.i += 1;
                }
                // `3L` in headers written by Python 2.
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                let digits = std::str::from_utf8(&self.s[start..self.i])
                    .unwrap_or_default()
                    .trim_end_matches('L');
                digits
                    .parse()
                    .map(Py::Int)
                    .map_err(|_| format!("the integer {digits} is too large"))
            }
            Some(_) => {
                for (word, value) in [("True", true), ("False", false)] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(Py::Bool(value));
                    }
                }
                Err(format!(
                    "unexpected text at byte {}: {:?}",
                    self.i,
                    String::from_utf8_lossy(&self.s[self.i..self.s.len().min(self.i + 16)])
                ))
            }
            None => Err("the header ends early".to_string()),
        }
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn headers_as_numpy_writes_them() {
        let h = Header::parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n")
            .unwrap();
        assert_eq!(
            (h.stored, h.big_endian, h.fortran),
            (Stored::F32, false, false)
        );
        assert_eq!(h.shape, [2, 3]);
        let h = Header::parse("{'descr': '>i2', 'fortran_order': True, 'shape': (4,), }").unwrap();
        assert_eq!(
            (h.stored, h.big_endian, h.fortran),
            (Stored::I16, true, true)
        );
        assert_eq!(h.shape, [4]);
        let h =
            Header::parse("{\"descr\": \"|b1\", \"shape\": (), \"fortran_order\": False}").unwrap();
        assert_eq!((h.stored, h.shape.len()), (Stored::Bool, 0));
    }

    pub(crate) fn bad_headers_say_what_is_wrong() {
        let cases = [
            (
                "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                "'<c8' is not supported",
            ),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                "unexpected text",
            ),
            (
                "{'fortran_order': False, 'shape': (1,), }",
                "'descr' is missing",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 'x'), }",
                "not an integer",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1,",
                "ends",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }",
                "not True or False",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
                "too large",
            ),
            ("{'descr': '<f4'} extra", "after the dict"),
        ];
        for (text, want) in cases {
            let Err(e) = Header::parse(text) else {
                panic!("{text} parsed");
            };
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    crate::core::unit_test::test_list! {
        headers_as_numpy_writes_them,
        bad_headers_say_what_is_wrong,
    }
}
