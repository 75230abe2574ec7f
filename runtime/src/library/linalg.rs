//! Linear algebra: triangular masks and matrix products.
//!
//! The matrix products (`matmul`, `dot`, `mm`, `mv`, `outer`, `bmm`) share one
//! dense implementation with NumPy `matmul` semantics and one batching rule
//! that calls `ops::matmul` on the physical tensors. Operands are promoted to a
//! common dtype (`bool < i64 < f32 < f64`); a product of two bool tensors is an
//! error, as in PyTorch (convert an operand to i64 first). i64 products wrap on
//! overflow, as `add` and `mul` do.
//!
//! This file holds the products' registrations (metas, kernels, batching
//! rules); the dense products themselves, `matmul_arrays` and
//! `addmm_arrays` with the GEMMs under them, are in `gemm.rs`.

use std::num::Wrapping;

use ndarray::{ArcArray, ArrayD, IxDyn};

use super::gemm::{addmm_arrays, matmul_arrays};
use crate::batching::{
    align_to_front, broadcast_operands, leading_batch, logical_rank, shape_arg, unsqueeze_logical,
    RuleOutput,
};
use crate::core::alloc::checked_numel;
use crate::core::broadcast::broadcast_shapes;
use crate::core::buffers::{take, Cached};
use crate::core::cast::cast;
use crate::{
    batching_rule, each_dtype, kernel, meta, ops, DType, Data, Element, Error, Result, Tensor,
    TensorMeta,
};

/// Both triangle ops need a matrix per example: at least 2 (logical) dims.
fn triangle_meta(x: &TensorMeta) -> Result<TensorMeta> {
    if x.ndim() < 2 {
        return Err(Error::invalid(format!(
            "expected a tensor with at least 2 dims, got shape {:?}",
            x.shape()
        )));
    }
    Ok(x.clone())
}

/// Zeroes, in every matrix of the last two dims, the columns `zeroed(row)` of
/// each row, in one pass over contiguous memory (the input as it is laid out,
/// if it is standard layout). A batch of matrices of at most
/// [`MASK_TABLE_MAX`] values: a table of the values one matrix keeps is built
/// once, and every matrix is selected against it in one vectorized loop (W3,
/// `[64, 64, 64]` f32: 28 against 38 us for the blocks below, 1.3x a copy of
/// the bytes). Larger matrices, or one alone: blocks of whole rows of about
/// [`MASK_BLOCK_BYTES`] are copied (`memcpy`), then their zeroed columns are
/// filled while the block is still in the L1 cache (a copy of the whole input
/// followed by the fills wrote the zeroed bytes a second time from L2).
fn mask<T: Element + Cached>(
    a: &ArcArray<T, IxDyn>,
    zeroed: impl Fn(usize, usize) -> std::ops::Range<usize>,
) -> Result<Tensor> {
    let a = crate::core::buffers::standard(a.view());
    let r = a.ndim();
    let (rows, cols) = (a.shape()[r - 2], a.shape()[r - 1]);
    let src = a
        .as_slice()
        .ok_or_else(|| Error::invalid("internal: a standard-layout array without a slice"))?;
    let mut out = take(src.len());
    let per_matrix = rows * cols;
    if per_matrix > 0 && per_matrix <= MASK_TABLE_MAX && src.len() >= 2 * per_matrix {
        // Many small matrices: which values each matrix keeps, once, then
        // one vectorized select over the whole input against that table
        // (kept in L1), with no work per row.
        let mut keep = vec![true; per_matrix];
        for (i, row) in keep.chunks_exact_mut(cols).enumerate() {
            row[zeroed(i, cols)].fill(false);
        }
        crate::core::simd::vectorized(
            #[inline(always)]
            || {
                for matrix in src.chunks_exact(per_matrix) {
                    out.extend(
                        matrix
                            .iter()
                            .zip(&keep)
                            .map(|(&v, &k)| if k { v } else { T::default() }),
                    );
                }
            },
        );
        return Ok(Tensor::from(
            ArrayD::from_shape_vec(a.raw_dim(), out)
                .map_err(|e| Error::invalid(format!("cannot rebuild {:?}: {e}", a.shape())))?,
        ));
    }
    // No rows to copy when a matrix has no columns (`checked_div` is `None`).
    if let Some(fit) = (MASK_BLOCK_BYTES / std::mem::size_of::<T>().max(1)).checked_div(cols) {
        let block_rows = fit.max(1);
        for (b, block) in src.chunks(block_rows * cols).enumerate() {
            let start = out.len();
            out.extend_from_slice(block);
            for (k, row) in out[start..].chunks_exact_mut(cols).enumerate() {
                row[zeroed((b * block_rows + k) % rows, cols)].fill(T::default());
            }
        }
    }
    Ok(Tensor::from(
        ArrayD::from_shape_vec(a.raw_dim(), out)
            .map_err(|e| Error::invalid(format!("cannot rebuild {:?}: {e}", a.shape())))?,
    ))
}

/// The most values of a matrix for which [`mask`] builds a table of the
/// values to keep (16 Ki: 64 x 64 and under).
const MASK_TABLE_MAX: usize = 16 * 1024;

/// The size of the blocks [`mask`] copies and then fills: well within the L1
/// data cache of current x86-64 and ARM cores (32-48 KiB).
const MASK_BLOCK_BYTES: usize = 16 * 1024;

/// `i + offset` clamped to `0..=cols`: for `offset = diagonal`, the first
/// column on or above the diagonal. Computed in `i128`, where neither the sum
/// nor `diagonal + 1` can overflow for any `i64` diagonal (so `triu(x,
/// i64::MAX)` zeroes everything and `triu(x, i64::MIN)` keeps everything, as
/// in PyTorch); the clamped value fits `usize`.
fn diagonal_column(i: usize, offset: i128, cols: usize) -> usize {
    let column = (i as i128 + offset).clamp(0, cols as i128);
    usize::try_from(column).unwrap_or(cols)
}

#[meta(op = "triu")]
fn triu_meta(x: &TensorMeta, _diagonal: i64) -> Result<TensorMeta> {
    triangle_meta(x)
}

#[kernel(op = "triu")]
fn triu_kernel(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    // Keep col - row >= diagonal: zero the columns before row + diagonal.
    each_dtype!(x.data()?, a => mask(a, |i, cols| 0..diagonal_column(i, diagonal.into(), cols)))
}

#[batching_rule(op = "triu")]
fn triu_rule(x: &Tensor, bdim: Option<usize>, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    leading_batch(|t| ops::triu(t, diagonal), x, bdim)
}

#[meta(op = "tril")]
fn tril_meta(x: &TensorMeta, _diagonal: i64) -> Result<TensorMeta> {
    triangle_meta(x)
}

#[kernel(op = "tril")]
fn tril_kernel(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    // Keep col - row <= diagonal: zero the columns after row + diagonal.
    let after = i128::from(diagonal) + 1;
    each_dtype!(x.data()?, a => mask(a, |i, cols| diagonal_column(i, after, cols)..cols))
}

#[batching_rule(op = "tril")]
fn tril_rule(x: &Tensor, bdim: Option<usize>, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    leading_batch(|t| ops::tril(t, diagonal), x, bdim)
}

// ---------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------

/// The dtype of a matrix product: the operands' promoted dtype, which must not
/// be bool.
fn product_dtype(a: &TensorMeta, b: &TensorMeta) -> Result<DType> {
    let dtype = a.dtype().promote(b.dtype());
    if dtype == DType::Bool {
        return Err(Error::invalid(format!(
            "matrix products of bool tensors are not defined, got bool {:?} @ bool {:?}; \
             convert an operand to i64 or a float first",
            a.shape(),
            b.shape()
        )));
    }
    Ok(dtype)
}

/// Meta of `matmul` (NumPy semantics), shared by the whole family: a 1-D left
/// operand is a row `[1, k]` and a 1-D right operand a column `[k, 1]`, whose
/// added dim is removed from the result; leading (batch) dims broadcast.
fn matmul_shape(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.is_empty() || sb.is_empty() {
        return Err(Error::invalid(format!(
            "both operands need at least 1 dim, got {sa:?} @ {sb:?}"
        )));
    }
    let dtype = product_dtype(a, b)?;
    let (ra, rb) = (sa.len(), sb.len());
    let inner_b = if rb == 1 { sb[0] } else { sb[rb - 2] };
    if sa[ra - 1] != inner_b {
        return Err(Error::invalid(format!(
            "inner dims differ: {sa:?} @ {sb:?}"
        )));
    }
    let (batch_a, batch_b) = (&sa[..ra.saturating_sub(2)], &sb[..rb.saturating_sub(2)]);
    let mut shape = broadcast_shapes(batch_a, batch_b).ok_or_else(|| {
        Error::invalid(format!(
            "batch dims {batch_a:?} and {batch_b:?} do not broadcast: {sa:?} @ {sb:?}"
        ))
    })?;
    if ra >= 2 {
        shape.push(sa[ra - 2]);
    }
    if rb >= 2 {
        shape.push(sb[rb - 1]);
    }
    checked_numel(&shape)?;
    Ok(TensorMeta::new(shape, dtype))
}

/// Rejects operands whose ranks are not exactly `(ra, rb)`; `what` names them.
fn require_ranks(what: &str, a: &TensorMeta, ra: usize, b: &TensorMeta, rb: usize) -> Result<()> {
    if a.ndim() == ra && b.ndim() == rb {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "expected {what}, got shapes {:?} and {:?}",
        a.shape(),
        b.shape()
    )))
}

/// The dense matrix product of two tensors (dtype promotion; see [`matmul_arrays`]).
fn matmul_dense(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dtype = a.dtype().promote(b.dtype());
    match (&*cast(a, dtype)?, &*cast(b, dtype)?) {
        (Data::F32(x), Data::F32(y)) => Ok(Tensor::from(matmul_arrays(x.view(), y.view())?)),
        (Data::F64(x), Data::F64(y)) => Ok(Tensor::from(matmul_arrays(x.view(), y.view())?)),
        (Data::I64(x), Data::I64(y)) => {
            // In Wrapping<i64>: overflow wraps (as in add and mul) instead of
            // panicking in debug builds.
            let (x, y) = (x.mapv(Wrapping), y.mapv(Wrapping));
            let out = matmul_arrays(x.view(), y.view())?;
            let shape = out.shape().to_vec();
            let (values, _) = out.into_raw_vec_and_offset();
            Tensor::from_shape_vec(&shape, values.into_iter().map(|w| w.0).collect())
        }
        _ => Err(Error::invalid(format!(
            "matrix products of {dtype} tensors are not defined"
        ))),
    }
}

/// Checks `addmm(bias, a, b, relu)`: a float product of a 1-D or 2-D `a` and
/// a 2-D `b` whose shape `bias` broadcasts to; gives the product's meta.
#[meta(op = "addmm")]
fn addmm_meta(
    bias: &TensorMeta,
    a: &TensorMeta,
    b: &TensorMeta,
    _relu: bool,
) -> Result<TensorMeta> {
    for t in [bias, a, b] {
        crate::core::meta_rules::require_float(t)?;
    }
    if !matches!(a.ndim(), 1 | 2) || b.ndim() != 2 {
        return Err(Error::invalid(format!(
            "mat1 must be a 2-D matrix or a 1-D row and mat2 a 2-D matrix, got {:?} @ {:?}; \
             use add(self, matmul(mat1, mat2)) for batched products",
            a.shape(),
            b.shape()
        )));
    }
    let product = matmul_shape(a, b)?;
    if broadcast_shapes(bias.shape(), product.shape()).as_deref() != Some(product.shape()) {
        return Err(Error::invalid(format!(
            "self {:?} does not broadcast to the product's shape {:?}",
            bias.shape(),
            product.shape()
        )));
    }
    Ok(TensorMeta::new(
        product.shape(),
        bias.dtype().promote(product.dtype()),
    ))
}

#[kernel(op = "addmm")]
fn addmm_kernel(bias: &Tensor, a: &Tensor, b: &Tensor, relu: bool) -> Result<Tensor> {
    let dtype = bias.dtype().promote(a.dtype()).promote(b.dtype());
    match (&*cast(bias, dtype)?, &*cast(a, dtype)?, &*cast(b, dtype)?) {
        (Data::F32(c), Data::F32(x), Data::F32(y)) => {
            addmm_arrays(c.view(), x.view(), y.view(), relu).map(Tensor::from)
        }
        (Data::F64(c), Data::F64(x), Data::F64(y)) => {
            addmm_arrays(c.view(), x.view(), y.view(), relu).map(Tensor::from)
        }
        _ => Err(Error::invalid(format!(
            "addmm of {dtype} tensors is not defined"
        ))),
    }
}

/// `addmm`'s batching rule. With only `mat1` batched and a bias of at most
/// one logical dim (a linear layer under vmap), the batch folds into
/// `mat1`'s rows and one fused `addmm` computes the whole batch; otherwise
/// the product is batched as `matmul` is and the bias added after it.
#[batching_rule(op = "addmm")]
fn addmm_rule(
    bias: &Tensor,
    bias_bdim: Option<usize>,
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
    relu: bool,
) -> Result<(Tensor, Option<usize>)> {
    if let (Some(bd), None, None, true) = (a_bdim, b_bdim, bias_bdim, bias.ndim() <= 1) {
        let a = align_to_front(a, Some(bd), logical_rank(a, a_bdim)?)?;
        if a.ndim() == 2 {
            return Ok((ops::addmm(bias, &a, b, relu)?, Some(0)));
        }
        let (count, n, k) = (a.shape()[0], a.shape()[1], a.shape()[2]);
        let rows = ops::reshape(&a, &shape_arg(None, &[count * n, k]))?;
        let out = ops::addmm(bias, &rows, b, relu)?;
        let m = out.shape()[1];
        return Ok((
            ops::reshape(&out, &shape_arg(None, &[count, n, m]))?,
            Some(0),
        ));
    }
    let (product, product_bdim) = matmul_batched(a, a_bdim, b, b_bdim)?;
    let (t, bdim) = broadcast_operands(&[(bias, bias_bdim), (&product, product_bdim)])?;
    let sum = ops::add(&t[0], &t[1])?;
    Ok((if relu { ops::relu(&sum)? } else { sum }, bdim))
}

/// The batching rule of the matrix products, in terms of `ops::matmul` on the
/// physical tensors: batch dims to the front; a batched 1-D operand (physical
/// `[B, k]`) made a row `[B, 1, k]` (left) or a column `[B, k, 1]` (right), so
/// matmul cannot read it as a matrix of `B` rows; the batched operands padded
/// with size-1 dims to a common logical rank, so their batch dims line up and
/// matmul's own broadcasting handles the rest (an unbatched operand broadcasts
/// against the trailing dims as is, and an unbatched 1-D operand keeps its
/// vector meaning); finally the dims added for vectors are removed.
fn matmul_batched(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> RuleOutput {
    let (ra, rb) = (logical_rank(a, a_bdim)?, logical_rank(b, b_bdim)?);
    let a_row = ra == 1 && a_bdim.is_some();
    let b_col = rb == 1 && b_bdim.is_some();
    let (a, a_bdim) = if a_row {
        unsqueeze_logical(a, a_bdim, 0)?
    } else {
        (a.clone(), a_bdim)
    };
    let (b, b_bdim) = if b_col {
        unsqueeze_logical(b, b_bdim, 1)?
    } else {
        (b.clone(), b_bdim)
    };
    let rank = ra.max(rb).max(2);
    let a = align_to_front(&a, a_bdim, rank)?;
    let b = align_to_front(&b, b_bdim, rank)?;
    let mut out = ops::matmul(&a, &b)?;
    if b_col {
        out = out.select(out.ndim() - 1, 0)?;
    }
    if a_row {
        // The row dim is last once the right operand's column dim is gone.
        let row = out.ndim() - if rb == 1 { 1 } else { 2 };
        out = out.select(row, 0)?;
    }
    Ok((out, a_bdim.or(b_bdim).map(|_| 0)))
}

/// A matrix product with NumPy matmul semantics: the meta checks `$check`
/// (the ranks the op accepts) and then computes the matmul shape; the kernel
/// and the batching rule are matmul's own.
macro_rules! matrix_product {
    ($name:ident, $op:tt, |$a:ident, $b:ident| $check:expr) => {
        mod $name {
            use super::*;

            #[meta(op = $op)]
            fn meta($a: &TensorMeta, $b: &TensorMeta) -> Result<TensorMeta> {
                $check?;
                matmul_shape($a, $b)
            }

            #[kernel(op = $op)]
            fn kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
                matmul_dense(a, b)
            }

            crate::library::binary::two_tensor_rule!($op, |a, a_bdim, b, b_bdim| {
                matmul_batched(a, a_bdim, b, b_bdim)
            });
        }
    };
}

matrix_product!(matmul, "matmul", |_a, _b| Ok::<(), Error>(()));
matrix_product!(dot, "dot", |a, b| require_ranks(
    "two 1-D tensors",
    a,
    1,
    b,
    1
));
matrix_product!(mm, "mm", |a, b| require_ranks(
    "two 2-D matrices",
    a,
    2,
    b,
    2
));
matrix_product!(mv, "mv", |a, v| require_ranks(
    "a 2-D matrix and a 1-D vector",
    a,
    2,
    v,
    1
));
matrix_product!(bmm, "bmm", |a, b| bmm_check(a, b));

/// bmm takes two 3-D tensors with equal batch sizes (it does not broadcast).
fn bmm_check(a: &TensorMeta, b: &TensorMeta) -> Result<()> {
    require_ranks("two 3-D tensors", a, 3, b, 3)?;
    if a.shape()[0] != b.shape()[0] {
        return Err(Error::invalid(format!(
            "batch sizes differ (bmm does not broadcast): {:?} @ {:?}",
            a.shape(),
            b.shape()
        )));
    }
    Ok(())
}

#[meta(op = "outer")]
fn outer_meta(a: &TensorMeta, b: &TensorMeta) -> Result<TensorMeta> {
    require_ranks("two 1-D tensors", a, 1, b, 1)?;
    let dtype = product_dtype(a, b)?;
    let shape = [a.shape()[0], b.shape()[0]];
    checked_numel(&shape)?;
    Ok(TensorMeta::new(shape, dtype))
}

#[kernel(op = "outer")]
fn outer_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // A column [n, 1] times a row [1, m].
    matmul_dense(&a.unsqueezed(1)?, &b.unsqueezed(0)?)
}

#[batching_rule(op = "outer")]
fn outer_rule(
    a: &Tensor,
    a_bdim: Option<usize>,
    b: &Tensor,
    b_bdim: Option<usize>,
) -> Result<(Tensor, Option<usize>)> {
    let (col, col_bdim) = unsqueeze_logical(a, a_bdim, 1)?;
    let (row, row_bdim) = unsqueeze_logical(b, b_bdim, 0)?;
    matmul_batched(&col, col_bdim, &row, row_bdim)
}
