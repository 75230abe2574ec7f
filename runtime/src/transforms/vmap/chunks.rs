//! Joining the results of chunks (chunked `vmap`, `jacrev`, `jacfwd`) along
//! one dim, a chunk at a time.
//!
//! Dense chunk results are copied into one output allocated at the first
//! chunk, and each chunk's result can be dropped as soon as it is copied, so
//! the peak memory of a chunked call is the output plus one chunk's work.
//! Joining all chunks at the end with `cat` would instead hold every chunk's
//! result and the output at once (twice the output, plus a tensor per chunk).
//! Results at a transform level (a chunked vmap under `grad`, say) cannot be
//! written into, so they are kept and joined with `cat` through the
//! dispatcher, which records or batches the join like any op.

use ndarray::{ArrayD, Axis, IxDyn, Slice};

use crate::core::alloc::check_alloc_in;
use crate::core::buffers::filled;
use crate::ops::usize_args::cat;
use crate::{each_dtype, Data, Element, Result, Tensor};

/// The join of chunk results along `dim` into `total` entries.
pub(crate) struct Joiner<'a> {
    what: &'a str,
    dim: usize,
    total: usize,
    state: State,
}

enum State {
    /// No chunk yet.
    Empty,
    /// Dense chunks copied into `out`, the first `filled` entries along dim.
    Dense { out: Data, filled: usize },
    /// Chunks kept as they are, for `cat`.
    Parts(Vec<Tensor>),
}

impl<'a> Joiner<'a> {
    /// A join of chunks along `dim` whose lengths along it add up to `total`;
    /// `what` names the caller in errors.
    pub(crate) fn new(what: &'a str, dim: usize, total: usize) -> Self {
        Joiner {
            what,
            dim,
            total,
            state: State::Empty,
        }
    }

    /// Adds the next chunk's result (`len` entries along the dim).
    pub(crate) fn push(&mut self, part: Tensor, len: usize) -> Result<()> {
        let state = std::mem::replace(&mut self.state, State::Empty);
        self.state = match state {
            State::Empty => match self.allocate(&part, len)? {
                Some(mut out) => {
                    copy_into(&mut out, self.dim, 0, &part)?;
                    State::Dense { out, filled: len }
                }
                None => State::Parts(vec![part]),
            },
            State::Dense { mut out, filled } => {
                if fits(&out, self.dim, &part, len, filled, self.total) {
                    copy_into(&mut out, self.dim, filled, &part)?;
                    State::Dense {
                        out,
                        filled: filled + len,
                    }
                } else {
                    // A chunk that is not dense, or does not match the
                    // others: keep what was copied as one part and let `cat`
                    // join (or reject) the rest.
                    State::Parts(vec![prefix(&out, self.dim, filled), part])
                }
            }
            State::Parts(mut parts) => {
                parts.push(part);
                State::Parts(parts)
            }
        };
        Ok(())
    }

    /// The joined tensor.
    pub(crate) fn finish(self) -> Result<Tensor> {
        match self.state {
            State::Empty => Err(crate::Error::Vmap(format!(
                "{}: no chunk to join (a chunked call always runs at least one chunk)",
                self.what
            ))),
            State::Dense { out, filled } if filled == self.total => Ok(Tensor::from_data(out)),
            State::Dense { out, filled } => {
                Ok(Tensor::from_data(prefix_data(&out, self.dim, filled)))
            }
            State::Parts(mut parts) if parts.len() == 1 => Ok(parts.swap_remove(0)),
            State::Parts(parts) => cat(&parts, self.dim),
        }
    }

    /// The output for a first chunk that is dense and `len` long along the
    /// dim, or `None` if the chunks are to be kept for `cat`.
    fn allocate(&self, first: &Tensor, len: usize) -> Result<Option<Data>> {
        let Ok(data) = first.data() else {
            return Ok(None);
        };
        let mut shape = data.shape().to_vec();
        if shape.get(self.dim) != Some(&len) || len >= self.total {
            // A single chunk needs no copy; a mismatch is cat's to report.
            return Ok(None);
        }
        shape[self.dim] = self.total;
        let n = check_alloc_in(self.what, &shape, data.dtype())?;
        // From the buffer cache, like the kernels' outputs.
        each_dtype!(type data.dtype(), T => {
            let values = filled(n, T::default());
            ArrayD::from_shape_vec(IxDyn(&shape), values)
                .map(|a| Some(T::wrap(a.into_shared())))
                .map_err(|e| crate::Error::Vmap(format!("{}: joining chunks: {e}", self.what)))
        })
    }
}

/// Whether `part` is dense, of `out`'s dtype and shape but for `len` entries
/// along `dim`, and fits after the `filled` ones.
fn fits(out: &Data, dim: usize, part: &Tensor, len: usize, filled: usize, total: usize) -> bool {
    let Ok(data) = part.data() else {
        return false;
    };
    let (a, b) = (out.shape(), data.shape());
    data.dtype() == out.dtype()
        && a.len() == b.len()
        && b[dim] == len
        && filled + len <= total
        && a.iter()
            .zip(b)
            .enumerate()
            .all(|(k, (x, y))| k == dim || x == y)
}

/// Copies dense `part` into `out` at entries `at..` along `dim`.
fn copy_into(out: &mut Data, dim: usize, at: usize, part: &Tensor) -> Result<()> {
    fn copy<T: Element>(out: &mut ndarray::ArcArray<T, IxDyn>, dim: usize, at: usize, part: &Data) {
        if let Some(p) = T::unwrap(part) {
            let len = p.shape()[dim];
            // `out` was allocated here and never shared, so this does not copy it.
            out.slice_axis_mut(Axis(dim), Slice::from(at..at + len))
                .assign(p);
        }
    }
    let part = part.data()?;
    each_dtype!(out, o => copy(o, dim, at, part));
    Ok(())
}

/// The first `filled` entries of `out` along `dim`, as a tensor.
fn prefix(out: &Data, dim: usize, filled: usize) -> Tensor {
    Tensor::from_data(prefix_data(out, dim, filled))
}

fn prefix_data(out: &Data, dim: usize, filled: usize) -> Data {
    each_dtype!(out, o => {
        let view = o.slice_axis(Axis(dim), Slice::from(0..filled));
        Element::wrap(view.to_owned().into_shared())
    })
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn t(shape: &[usize], seed: i64) -> Tensor {
        let n: usize = shape.iter().product();
        let v = (0..n as i64).map(|k| (k * 7 + seed) as f64).collect();
        Tensor::from_shape_vec(shape, v).unwrap()
    }

    fn join(parts: &[Tensor], dim: usize) -> Result<Tensor> {
        let total = parts.iter().map(|p| p.shape()[dim]).sum();
        let mut j = Joiner::new("test", dim, total);
        for p in parts {
            j.push(p.clone(), p.shape()[dim])?;
        }
        j.finish()
    }

    pub(crate) fn dense_chunks_are_copied_in_order_along_any_dim() {
        for dim in 0..3 {
            let mut shape = vec![2, 3, 4];
            let parts: Vec<Tensor> = [1, 2, 1]
                .iter()
                .enumerate()
                .map(|(k, &len)| {
                    shape[dim] = len;
                    t(&shape, k as i64 * 100)
                })
                .collect();
            let got = join(&parts, dim).unwrap();
            let want = crate::ops::cat(&parts, dim as i64).unwrap();
            assert_eq!(got.shape(), want.shape());
            assert_eq!(
                got.to_array::<f64>().unwrap(),
                want.to_array::<f64>().unwrap()
            );
        }
    }

    pub(crate) fn a_chunk_that_does_not_match_is_left_to_cat() {
        // Another trailing size: cat rejects it, naming itself.
        let bad_shape = join(&[t(&[1, 3], 0), t(&[1, 4], 0)], 0).unwrap_err();
        assert!(bad_shape.to_string().contains("cat"), "{bad_shape}");
        // Another dtype: the result is cat's (which promotes), not a copy
        // into the first chunk's dtype.
        let parts = [
            t(&[1, 3], 0),
            Tensor::from(ArrayD::<i64>::ones(ndarray::IxDyn(&[2, 3]))),
            t(&[1, 3], 5),
        ];
        let got = join(&parts, 0).unwrap();
        let want = crate::ops::cat(&parts, 0).unwrap();
        assert_eq!(got.dtype(), want.dtype());
        assert_eq!(
            got.to_array::<f64>().unwrap(),
            want.to_array::<f64>().unwrap()
        );
    }

    pub(crate) fn the_output_respects_the_allocation_limit() {
        let mut j = Joiner::new("jacrev", 0, 1 << 40);
        let err = j.push(t(&[1, 4], 0), 1).unwrap_err();
        assert!(err.to_string().contains("jacrev"), "{err}");
        assert!(err.to_string().contains("allocation limit"), "{err}");
    }

    crate::core::unit_test::test_list! {
        dense_chunks_are_copied_in_order_along_any_dim,
        a_chunk_that_does_not_match_is_left_to_cat,
        the_output_respects_the_allocation_limit,
    }
}
