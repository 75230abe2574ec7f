//! numpy's `.npy` format: the magic `\x93NUMPY`, a version (1.0, 2.0 or
//! 3.0), the header's length (2 bytes in 1.0, 4 after), the header (a Python
//! dict literal: `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`,
//! padded with spaces to a multiple of 64 bytes and ended by a newline), then
//! the elements.

use super::{from_bytes, le_bytes, Site, Stored};
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

/// The tensor in `.npy` bytes (errors name `key`, the entry of an `.npz`).
pub(super) fn decode(bytes: &[u8], site: &Site, key: Option<&str>) -> Result<Tensor> {
    let err = |m: String| site.err(key, m);
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(err(
            "not a .npy file (it does not start with \\x93NUMPY); the file is truncated or \
             corrupt"
                .to_string(),
        ));
    }
    let (len, start) = match bytes[6] {
        1 => (
            usize::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            10usize,
        ),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => {
            return Err(err(format!(
                ".npy format version {v}.{} is not supported (1.0, 2.0 and 3.0 are)",
                bytes[7]
            )))
        }
    };
    let Some(header) = bytes.get(start..start.saturating_add(len)) else {
        return Err(err(format!(
            "the .npy header says it is {len} bytes long, but the file ends before; the file is \
             truncated"
        )));
    };
    let header = std::str::from_utf8(header)
        .map_err(|_| err("the .npy header is not text; the file is corrupt".to_string()))?;
    let header = Header::parse(header).map_err(|m| err(format!("bad .npy header: {m}")))?;
    let body = &bytes[start + len..];
    from_bytes(
        header.stored,
        &header.shape,
        body,
        header.big_endian,
        header.fortran,
        site.function,
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
        };
        let value = p.value()?;
        p.space();
        if p.i != p.s.len() {
            return Err(format!(
                "unexpected text after the dict: {:?}",
                &text[p.i..]
            ));
        }
        let Py::Dict(items) = value else {
            return Err(format!("expected a dict, found {value:?}"));
        };
        let get = |name: &str| {
            items
                .iter()
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
        let (order, code) = descr.split_at(descr.len().min(1));
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

    fn value(&mut self) -> std::result::Result<Py, String> {
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let items = self.items(b'}', |p| {
                    let k = p.value()?;
                    p.expect(b':')?;
                    Ok((k, p.value()?))
                })?;
                Ok(Py::Dict(items))
            }
            Some(b'(') => {
                self.i += 1;
                Ok(Py::Tuple(self.items(b')', Self::value)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_as_numpy_writes_them() {
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

    #[test]
    fn bad_headers_say_what_is_wrong() {
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
}
