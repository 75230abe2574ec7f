//! The dense matrix-product engine behind the products of `library/linalg.rs`
//! (`matmul`, `dot`, `mm`, `mv`, `outer`, `bmm`, `addmm`): operands viewed as
//! stacks of matrices, each product of a (broadcast) batch written straight
//! into its block of one output, and the GEMMs that compute them. Outer
//! products are scaled rows; row-major products of at most [`SMALL_GEMM`]
//! multiply-adds a plain loop; small ones `matrixmultiply` (through
//! ndarray); larger f32 and f64 ones the `gemm` crate's kernels, called
//! directly (the unsafe calls are here), split by rows over the pool with
//! the `rayon` feature. `addmm`'s fused bias and activation work block by
//! block on the same GEMMs.
//!
//! Part of the op library (the `library` layer of the runtime), and no op family: it
//! registers no op. `linalg.rs` holds the registrations (metas, kernels,
//! batching rules) and calls into [`matmul_arrays`] and [`addmm_arrays`].

use std::num::Wrapping;

use ndarray::linalg::general_mat_mul;
use ndarray::{
    Array3, ArrayD, ArrayView2, ArrayViewD, ArrayViewMut2, Axis, CowArray, Ix3, IxDyn, LinalgScalar,
};

use crate::core::alloc::checked_numel;
use crate::core::broadcast::broadcast_shapes;
use crate::core::buffers::{filled, take, Cached};
use crate::{Error, Result};

/// The flat index, in a row-major batch of shape `shape`, of the element that
/// broadcasts to multi-index `index` (`shape` is aligned to the trailing dims
/// of `index`; its size-1 dims broadcast).
fn broadcast_flat_index(index: &[usize], shape: &[usize]) -> usize {
    let offset = index.len() - shape.len();
    shape
        .iter()
        .zip(&index[offset..])
        .fold(0, |flat, (&size, &i)| {
            flat * size + if size == 1 { 0 } else { i }
        })
}

/// `x` (at least 2-D) as a stack of matrices `[batch, rows, cols]`, its leading
/// dims merged into one: a view when their strides allow it (always for one
/// leading dim or none), else one copy.
/// Leading dims of size 1 are dropped first (`[B, 1, k, n]` under vmap of a
/// batch of one image, whose matrices may be transposed views): then one
/// leading dim remains, a view whatever the matrices' strides.
fn as_matrix_stack<'a, T: crate::core::buffers::Cached>(
    x: &'a ArrayViewD<'_, T>,
) -> Result<CowArray<'a, T, Ix3>> {
    let r = x.ndim();
    let (rows, cols) = (x.shape()[r - 2], x.shape()[r - 1]);
    let batch = x.shape()[..r - 2].iter().product();
    if r > 3 && x.shape()[..r - 2].iter().filter(|&&d| d != 1).count() <= 1 {
        let mut v = x.view();
        while v.ndim() > 3 {
            let one = v.shape()[..v.ndim() - 2].iter().position(|&d| d == 1);
            match one {
                Some(i) => v = v.index_axis_move(Axis(i), 0),
                None => break,
            }
        }
        if let Ok(v3) = v.into_dimensionality::<Ix3>() {
            return Ok(CowArray::from(v3));
        }
    }
    // The batch dims merge into one without a copy when each (of size > 1)
    // steps over the next whole: ndarray's `to_shape` then gives a view.
    // Otherwise it would copy element by element; copy row by row instead.
    let dims: Vec<(usize, isize)> = x.shape()[..r - 2]
        .iter()
        .copied()
        .zip(x.strides()[..r - 2].iter().copied())
        .filter(|&(d, _)| d != 1)
        .collect();
    let mergeable = dims.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0 as isize);
    let shaped = if mergeable {
        x.to_shape((batch, rows, cols))
    } else {
        crate::core::buffers::row_major(x)
            .into_shape_with_order((batch, rows, cols))
            .map(CowArray::from)
    };
    shaped.map_err(|e| Error::invalid(format!("cannot view {:?} as matrices: {e}", x.shape())))
}

/// Products whose inner dim is 1 (outer products: per-sample weight gradients
/// are these), when each operand has one matrix per product or one shared
/// matrix and the right operand's rows are contiguous: each output row is its
/// left element times the right row, written once, instead of zeroing the
/// output and running a GEMM with an inner dim of 1. `None` otherwise.
fn outer_products<T: LinalgScalar + Send + Sync + Cached>(
    a3: &ndarray::ArrayView3<'_, T>,
    b3: &ndarray::ArrayView3<'_, T>,
    count: usize,
    (n, m): (usize, usize),
) -> Option<Result<Array3<T>>> {
    let pick = |len: usize| (len == count || len == 1).then_some(move |t: usize| t.min(len - 1));
    let (ia, ib) = (pick(a3.shape()[0])?, pick(b3.shape()[0])?);
    let rows: Vec<&[T]> = (0..b3.shape()[0])
        .map(|t| {
            b3.index_axis(Axis(0), t)
                .index_axis_move(Axis(0), 0)
                .to_slice()
        })
        .collect::<Option<_>>()?;
    // Product `t`: for each left element `x`, the right row times `x`.
    let product = |t: usize| {
        let row = rows[ib(t)];
        let column = a3.index_axis(Axis(0), ia(t)).index_axis_move(Axis(1), 0);
        (column, row)
    };
    let shape = (count, n, m);
    #[cfg(feature = "rayon")]
    if count > 1
        && count * n * m >= crate::core::broadcast::PARALLEL_ELEMENTS
        && crate::core::threads::parallel()
    {
        // On the pool, a product per piece.
        let values = match crate::core::buffers::par_build(count * n * m, n * m, |start, piece| {
            let (column, row) = product(start / (n * m).max(1));
            for &x in column.iter() {
                piece.extend(row.iter().map(|&y| x * y));
            }
        }) {
            Ok(values) => values,
            Err(e) => return Some(Err(e)),
        };
        return Some(
            Array3::from_shape_vec(shape, values)
                .map_err(|e| Error::invalid(format!("outer products: {e}"))),
        );
    }
    let mut values = take(count * n * m);
    for t in 0..count {
        let (column, row) = product(t);
        let column = column.as_slice().map_or_else(
            || std::borrow::Cow::Owned(column.to_vec()),
            std::borrow::Cow::Borrowed,
        );
        crate::core::simd::vectorized(
            #[inline(always)]
            || scaled_rows(&column, row, &mut values),
        );
    }
    Some(
        Array3::from_shape_vec(shape, values)
            .map_err(|e| Error::invalid(format!("outer products: {e}"))),
    )
}

/// Appends `x * row` to `out` for each `x` of `column`, written into the
/// spare capacity and exposed once at the end (`extend` per row stores the
/// `Vec`'s length after every row or block). A row of at most 16 values is
/// one fixed-size array (a few vector multiplies and stores, no loop); a
/// longer one is blocks of 16 values and a loop for the rest. Measured on
/// W8's outer products, one core: 256 x 64 x 128 took 197 µs with `extend`
/// and a loop of unknown length per row and 138 µs this way (a fill of the
/// same 8 MiB with one value: 142 µs); 256 x 128 x 10 took 93 µs with the
/// loop, 77 µs with one `extend_from_slice` of an array per row, and
/// 37 µs this way.
#[inline(always)]
fn scaled_rows<T: LinalgScalar>(column: &[T], row: &[T], out: &mut Vec<T>) {
    const BLOCK: usize = 16;
    /// Each row of `slots` (of `M` values) is `x * row` for its `x`.
    #[inline(always)]
    fn short<T: LinalgScalar, const M: usize>(
        slots: &mut [std::mem::MaybeUninit<T>],
        column: &[T],
        row: &[T; M],
    ) {
        for (slots, &x) in slots.chunks_exact_mut(M).zip(column) {
            if let Ok(slots) = <&mut [_; M]>::try_from(slots) {
                let scaled: [T; M] = std::array::from_fn(|j| x * row[j]);
                for (slot, v) in slots.iter_mut().zip(scaled) {
                    slot.write(v);
                }
            }
        }
    }
    /// The same for rows longer than [`BLOCK`].
    #[inline(always)]
    fn long<T: LinalgScalar>(slots: &mut [std::mem::MaybeUninit<T>], column: &[T], row: &[T]) {
        let (blocks, rest) = row.split_at(row.len() / BLOCK * BLOCK);
        for (slots, &x) in slots.chunks_exact_mut(row.len()).zip(column) {
            let (head, tail) = slots.split_at_mut(blocks.len());
            for (slots, block) in head.chunks_exact_mut(BLOCK).zip(blocks.chunks_exact(BLOCK)) {
                if let (Ok(slots), Ok(block)) = (
                    <&mut [_; BLOCK]>::try_from(slots),
                    <&[T; BLOCK]>::try_from(block),
                ) {
                    let scaled: [T; BLOCK] = std::array::from_fn(|j| x * block[j]);
                    for (slot, v) in slots.iter_mut().zip(scaled) {
                        slot.write(v);
                    }
                }
            }
            for (slot, &y) in tail.iter_mut().zip(rest) {
                slot.write(x * y);
            }
        }
    }
    let Some(total) = column.len().checked_mul(row.len()) else {
        return;
    };
    if total == 0 {
        return;
    }
    out.reserve(total);
    let slots = &mut out.spare_capacity_mut()[..total];
    macro_rules! widths {
        ($($m:literal)*) => {
            match row.len() {
                $($m => match <&[T; $m]>::try_from(row) {
                    Ok(r) => short::<T, $m>(slots, column, r),
                    Err(_) => return,
                },)*
                _ => long(slots, column, row),
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    // SAFETY: the first `total` slots of the spare capacity are `column.len()`
    // rows of `row.len()` slots (`total` is their product and not 0, so each
    // chunking above is exact and `row.len() > 0`), one per value of
    // `column`, and every slot of each row was written: by the array of `M`
    // values (`M == row.len()`), or by the blocks and the loop for the rest,
    // which together cover the row.
    unsafe { out.set_len(out.len() + total) };
}

/// Products below this many multiply-adds go to `matrixmultiply` (through
/// ndarray's `general_mat_mul`), larger ones to the `gemm` crate: measured on
/// the benchmarks' shapes, `gemm` takes 5-41% less time from 64 x 64 x 64 up
/// (256 x 128 x 10: 10.5 against 18.0 µs) but has a fixed cost of about
/// 250 ns a call, so it is slower on small products (4 x 4 x 4: 246 against
/// 108 ns).
const GEMM_CRATE_MIN: usize = 16 * 16 * 16;

/// With the `rayon` feature, a product is split by rows over the pool into
/// [`split_parts`] parts, each with at least this many multiply-adds...
#[cfg(feature = "rayon")]
const SPLIT_PART_MIN: usize = 1 << 19;
/// ... and at least this many rows.
#[cfg(feature = "rayon")]
const SPLIT_PART_ROWS: usize = 64;

/// How many parts a product of `work` multiply-adds is split into on the
/// pool along a dim of `len` (rows, or the columns of a one-row product),
/// each at least `min_len` long: as many as the minimum sizes allow, up to
/// four per thread (for balance on a busy machine). On two threads W1's
/// layers at batch 1024 split into 8 (1024 x 64 x 128) and 2 (1024 x 128 x
/// 10) parts of rows; sixteen parts of the first were slower (96 against 92
/// us), one part of the second took 42 us against 23 us in two.
#[cfg(feature = "rayon")]
fn split_parts(len: usize, min_len: usize, work: usize) -> usize {
    let threads = crate::core::threads::num_threads();
    if threads < 2 {
        return 1;
    }
    (4 * threads)
        .min(work / SPLIT_PART_MIN)
        .min(len / min_len)
        .max(1)
}

/// The rows of each block when the rows of a product `rows x k x cols` are
/// computed in blocks of about `want` (the last one shorter), by separate
/// calls (the pool's parts, `addmm`'s activation blocks): `want`, or more
/// where needed for every row to be computed as in any other partition. The
/// `gemm` crate blocks `k` by 512 for products of at most 64 rows and 64
/// columns and by its cache model for larger ones, so where those differ
/// (more than 512 of `k`, at most 64 columns, more than 64 rows in all) no
/// block may have 64 rows or fewer, the last one included.
fn block_rows(rows: usize, k: usize, cols: usize, want: usize) -> usize {
    let want = want.max(1);
    if cols > 64 || k <= 512 || rows <= 64 {
        return want;
    }
    let mut each = want.max(65);
    loop {
        let count = rows.div_ceil(each);
        if count <= 1 || rows - (count - 1) * each > 64 {
            return each;
        }
        // One block fewer, the rows shared evenly.
        each = rows.div_ceil(count - 1);
    }
}

/// The width of the column parts a one-row product of `cols` columns and
/// `work` multiply-adds is split into on the pool (`cols` itself: no split).
/// A multiple of [`COLUMN_PART_STEP`], so each column is computed as in the
/// whole product: the `gemm` crate computes a one-row product by a
/// matrix-vector kernel whose vector loop over the columns leaves the last
/// `cols % lanes` to a scalar loop, and a part that starts at a multiple of
/// every vector width keeps each column on the side of that line it had.
/// Each part is at least [`SPLIT_PART_MIN`] multiply-adds, so never below
/// [`GEMM_CRATE_MIN`] (another engine).
#[cfg(feature = "rayon")]
fn column_part(cols: usize, work: usize) -> usize {
    match split_parts(cols, COLUMN_PART_STEP, work) {
        1 => cols,
        parts => cols.div_ceil(parts).next_multiple_of(COLUMN_PART_STEP),
    }
}

/// The step of [`column_part`]'s widths: a multiple of the vector widths of
/// every SIMD level (16 f32 lanes at AVX-512).
#[cfg(feature = "rayon")]
const COLUMN_PART_STEP: usize = 64;

/// The element types the matrix products are computed in, with the GEMM for
/// each: `c = a @ b`, overwriting `c` (which does not alias `a` or `b`), on
/// this thread, or, with the `rayon` feature, a large one split by rows over
/// the pool (`split_parts`; `gemm`'s own threading had made no measurable
/// difference on W1 at batch 1024, splitting the rows took it from 1.0x to
/// 1.2x the one-thread time).
pub(super) trait Gemm: LinalgScalar + Send + Sync + Cached {
    fn gemm(a: &ArrayView2<'_, Self>, b: &ArrayView2<'_, Self>, c: &mut ArrayViewMut2<'_, Self>) {
        general_mat_mul(Self::one(), a, b, Self::zero(), c);
    }

    /// `c += a @ b` (the fused bias add of [`addmm`](crate::ops::addmm)).
    fn gemm_accumulate(
        a: &ArrayView2<'_, Self>,
        b: &ArrayView2<'_, Self>,
        c: &mut ArrayViewMut2<'_, Self>,
    ) {
        general_mat_mul(Self::one(), a, b, Self::one(), c);
    }

    /// `c = a @ b` (or `c += a @ b` if `accumulate`) on the calling thread
    /// only, never split: for kernels that split their own work over the
    /// pool (the tiled convolutions of `conv/tiles.rs`), so that each product
    /// is computed the same way whatever the number of threads.
    fn gemm_unsplit(
        a: &ArrayView2<'_, Self>,
        b: &ArrayView2<'_, Self>,
        c: &mut ArrayViewMut2<'_, Self>,
        accumulate: bool,
    ) {
        let beta = if accumulate {
            Self::one()
        } else {
            Self::zero()
        };
        general_mat_mul(Self::one(), a, b, beta, c);
    }

    /// [`Gemm::gemm_accumulate`] on the calling thread only (a part of a
    /// product the caller already split over the pool).
    #[cfg(feature = "rayon")]
    fn gemm_accumulate_here(
        a: &ArrayView2<'_, Self>,
        b: &ArrayView2<'_, Self>,
        c: &mut ArrayViewMut2<'_, Self>,
    ) {
        general_mat_mul(Self::one(), a, b, Self::one(), c);
    }
}

/// i64 products wrap (see `linalg::matmul_dense`);
/// `matrixmultiply` has no integer kernels, ndarray computes them.
impl Gemm for Wrapping<i64> {}

macro_rules! float_gemm {
    ($t:ty, $product:ident, $kernel:path) => {
        impl Gemm for $t {
            fn gemm(a: &ArrayView2<'_, $t>, b: &ArrayView2<'_, $t>, c: &mut ArrayViewMut2<'_, $t>) {
                $product(a, b, c, false, true)
            }

            fn gemm_accumulate(
                a: &ArrayView2<'_, $t>,
                b: &ArrayView2<'_, $t>,
                c: &mut ArrayViewMut2<'_, $t>,
            ) {
                $product(a, b, c, true, true)
            }

            fn gemm_unsplit(
                a: &ArrayView2<'_, $t>,
                b: &ArrayView2<'_, $t>,
                c: &mut ArrayViewMut2<'_, $t>,
                accumulate: bool,
            ) {
                $product(a, b, c, accumulate, false)
            }

            #[cfg(feature = "rayon")]
            fn gemm_accumulate_here(
                a: &ArrayView2<'_, $t>,
                b: &ArrayView2<'_, $t>,
                c: &mut ArrayViewMut2<'_, $t>,
            ) {
                $product(a, b, c, true, false)
            }
        }

        /// `c = a @ b`, or `c += a @ b` if `accumulate`: by the `gemm` crate
        /// for products of at least [`GEMM_CRATE_MIN`] multiply-adds, by
        /// `matrixmultiply` below that; split by rows over the pool if
        /// `split` (with the `rayon` feature; the parts are not split again).
        fn $product(
            a: &ArrayView2<'_, $t>,
            b: &ArrayView2<'_, $t>,
            c: &mut ArrayViewMut2<'_, $t>,
            accumulate: bool,
            split: bool,
        ) {
            let ((m, k), n) = (a.dim(), b.dim().1);
            let work = m.saturating_mul(k).saturating_mul(n);
            let beta: $t = if accumulate { 1.0 } else { 0.0 };
            // (Only the `rayon` feature splits.)
            #[cfg(not(feature = "rayon"))]
            let _ = split;
            if work < GEMM_CRATE_MIN || k == 0 || b.dim().0 != k || c.dim() != (m, n) {
                // (A shape mismatch cannot come here: the kernels check the
                // shapes first. general_mat_mul would panic on one.)
                general_mat_mul(1.0, a, b, beta, c);
                return;
            }
            #[cfg(feature = "rayon")]
            {
                let rows = match if split {
                    split_parts(m, SPLIT_PART_ROWS, work)
                } else {
                    1
                } {
                    1 => m,
                    parts => block_rows(m, k, n, m.div_ceil(parts)),
                };
                if rows < m {
                    crate::core::spin::region();
                    // Parts of whole rows, each a product of its own (`b` is
                    // packed once per part) into its own rows of `c`.
                    use ndarray::parallel::prelude::*;
                    a.axis_chunks_iter(Axis(0), rows)
                        .into_par_iter()
                        .zip(c.axis_chunks_iter_mut(Axis(0), rows).into_par_iter())
                        .for_each(|(a, mut c)| $product(&a, b, &mut c, accumulate, false));
                    return;
                }
                // (Only where the whole product runs the matrix-vector
                // kernel: a unit stride along `b`'s columns and `c`'s, or
                // along `b`'s rows and `a`'s. Otherwise the crate's general
                // kernel would block `k` by the parts' widths.)
                let (a_s, b_s, c_cs) = (a.strides(), b.strides(), c.strides()[1]);
                let matrix_vector = (b_s[1] == 1 && c_cs == 1) || (b_s[0] == 1 && a_s[1] == 1);
                let width = if split && m == 1 && matrix_vector {
                    column_part(n, work)
                } else {
                    n
                };
                if width < n {
                    crate::core::spin::region();
                    // One row (a vector times a matrix: DP-SGD's weighted sum
                    // over the batch, `b,bi->i`): parts of whole columns.
                    use ndarray::parallel::prelude::*;
                    b.axis_chunks_iter(Axis(1), width)
                        .into_par_iter()
                        .zip(c.axis_chunks_iter_mut(Axis(1), width).into_par_iter())
                        .for_each(|(b, mut c)| $product(a, &b, &mut c, accumulate, false));
                    return;
                }
            }
            let (a_s, b_s) = (a.strides(), b.strides());
            let (c_rs, c_cs) = (c.strides()[0], c.strides()[1]);
            // SAFETY: the pointers are those of views of `m x k`, `k x n`
            // and `m x n` elements with the given (element) strides, valid
            // for the call; `c` is a mutable view, so it aliases neither
            // operand. `c = beta * c + 1 * (a @ b)`: with `read_dst = false`
            // (not accumulating) `c` is only written; with `read_dst = true`
            // its (initialized) values are read and added to.
            unsafe {
                gemm_kernel_call(
                    $kernel(),
                    GemmOperands {
                        m,
                        n,
                        k,
                        dst: c.as_mut_ptr(),
                        dst_cs: c_cs,
                        dst_rs: c_rs,
                        lhs: a.as_ptr(),
                        lhs_cs: a_s[1],
                        lhs_rs: a_s[0],
                        rhs: b.as_ptr(),
                        rhs_cs: b_s[1],
                        rhs_rs: b_s[0],
                    },
                    accumulate,
                    beta,
                );
            }
        }
    };
}
float_gemm!(f32, product_f32, gemm_f32::gemm::f32::get_gemm_fn);
float_gemm!(f64, product_f64, gemm_f64::gemm::f64::get_gemm_fn);

/// A real GEMM kernel of the `gemm` family (`gemm_f32`, `gemm_f64`), as their
/// `get_gemm_fn` returns it for this CPU: `dst = alpha * dst + beta * lhs @
/// rhs` (`dst` read only if the `bool` after its strides is set), then the
/// conjugation flags (ignored for real types) and the threading.
type GemmKernel<T> = unsafe fn(
    usize,
    usize,
    usize,
    *mut T,
    isize,
    isize,
    bool,
    *const T,
    isize,
    isize,
    *const T,
    isize,
    isize,
    T,
    T,
    bool,
    bool,
    bool,
    gemm_common::Parallelism,
);

/// The operands of one product `dst (m x n) = lhs (m x k) @ rhs (k x n)`:
/// pointers to their first elements and their column and row strides in
/// elements.
struct GemmOperands<T> {
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_cs: isize,
    dst_rs: isize,
    lhs: *const T,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const T,
    rhs_cs: isize,
    rhs_rs: isize,
}

impl<T> GemmOperands<T> {
    /// The same product in the layout the kernels take best: `dst` walked
    /// along its contiguous direction as columns (if `dst`'s columns are
    /// closer together than its rows, the transposed product `dst^T = rhs^T @
    /// lhs^T` is computed instead), and no negative stride on `dst` or on the
    /// shared `k` dimension (a negative one starts from the other end). This
    /// is what the `gemm` crate's `gemm` does before it calls the same
    /// kernels; batchrules calls the f32 and f64 kernels directly, so that
    /// the complex ones `gemm` also builds are not compiled.
    fn normalized(self) -> Self {
        let mut o = if self.dst_cs.abs() < self.dst_rs.abs() {
            GemmOperands {
                m: self.n,
                n: self.m,
                k: self.k,
                dst: self.dst,
                dst_cs: self.dst_rs,
                dst_rs: self.dst_cs,
                lhs: self.rhs,
                lhs_cs: self.rhs_rs,
                lhs_rs: self.rhs_cs,
                rhs: self.lhs,
                rhs_cs: self.lhs_rs,
                rhs_rs: self.lhs_cs,
            }
        } else {
            self
        };
        // The last row (column, index of k) becomes the first; the pointers
        // stay inside the operands, and wrapping_offset never dereferences.
        if o.dst_rs < 0 && o.m > 0 {
            let dst;
            (dst, o.dst_rs) = from_end(o.m, o.dst.cast_const(), o.dst_rs);
            o.dst = dst.cast_mut();
            (o.lhs, o.lhs_rs) = from_end(o.m, o.lhs, o.lhs_rs);
        }
        if o.dst_cs < 0 && o.n > 0 {
            let dst;
            (dst, o.dst_cs) = from_end(o.n, o.dst.cast_const(), o.dst_cs);
            o.dst = dst.cast_mut();
            (o.rhs, o.rhs_cs) = from_end(o.n, o.rhs, o.rhs_cs);
        }
        if o.lhs_cs < 0 && o.k > 0 {
            (o.lhs, o.lhs_cs) = from_end(o.k, o.lhs, o.lhs_cs);
            (o.rhs, o.rhs_rs) = from_end(o.k, o.rhs, o.rhs_rs);
        }
        o
    }
}

/// The first element and the stride of a dim of `count > 0` elements at
/// `ptr` with `stride`, walked from its other end.
fn from_end<T>(count: usize, ptr: *const T, stride: isize) -> (*const T, isize) {
    let last = (count - 1) as isize;
    (ptr.wrapping_offset(last * stride), -stride)
}

/// `dst = dst_scale * dst + lhs @ rhs` on this thread by `kernel`; `dst` is
/// read only if `read_dst`.
///
/// # Safety
/// The pointers and strides of `ops` must describe valid `m x n`, `m x k` and
/// `k x n` matrices for the call, `dst` writable and aliasing neither operand.
unsafe fn gemm_kernel_call<T: LinalgScalar>(
    kernel: GemmKernel<T>,
    ops: GemmOperands<T>,
    read_dst: bool,
    dst_scale: T,
) {
    let o = ops.normalized();
    // SAFETY: `normalized` describes the same matrices (a transposed view of
    // the same product, or the same elements walked from the other end), so
    // the caller's guarantees carry over.
    unsafe {
        kernel(
            o.m,
            o.n,
            o.k,
            o.dst,
            o.dst_cs,
            o.dst_rs,
            read_dst,
            o.lhs,
            o.lhs_cs,
            o.lhs_rs,
            o.rhs,
            o.rhs_cs,
            o.rhs_rs,
            dst_scale,
            T::one(),
            false,
            false,
            false,
            gemm_common::Parallelism::None,
        )
    }
}

/// The matrix product of `a` and `b` with NumPy `matmul` semantics.
///
/// The output is allocated once, as `[batch, n, m]`; each product of the
/// (broadcast) batch is computed by [`Gemm::gemm`] from 2-D views of the
/// operands straight into its 2-D block of the output, so nothing is allocated
/// per product. Operands are not broadcast in memory: each output batch index
/// is mapped to the operand's own batch index.
pub(super) fn matmul_arrays<T: Gemm>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<ArrayD<T>> {
    let shape_error = || {
        Error::invalid(format!(
            "operands of shapes {:?} and {:?} do not multiply",
            a.shape(),
            b.shape()
        ))
    };
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(shape_error());
    }
    // A 1-D left operand is a row, a 1-D right operand a column.
    let a_mat = if a.ndim() == 1 {
        a.clone().insert_axis(Axis(0))
    } else {
        a.clone()
    };
    let b_mat = if b.ndim() == 1 {
        b.clone().insert_axis(Axis(1))
    } else {
        b.clone()
    };
    let (ra, rb) = (a_mat.ndim(), b_mat.ndim());
    let (batch_a, batch_b) = (&a_mat.shape()[..ra - 2], &b_mat.shape()[..rb - 2]);
    let (n, k, m) = (
        a_mat.shape()[ra - 2],
        a_mat.shape()[ra - 1],
        b_mat.shape()[rb - 1],
    );
    if b_mat.shape()[rb - 2] != k {
        return Err(shape_error());
    }
    let batch = broadcast_shapes(batch_a, batch_b)
        .ok_or_else(shape_error)?
        .into_vec();
    let count = checked_numel(&batch)?;
    checked_numel(&[count, n, m])?;

    let (a3, b3) = (as_matrix_stack(&a_mat)?, as_matrix_stack(&b_mat)?);
    if k == 1
        && let Some(out) = outer_products(&a3.view(), &b3.view(), count, (n, m))
    {
        return finish_matmul(out?, batch, a.ndim(), b.ndim(), n, m);
    }
    let mut out = Array3::from_shape_vec((count, n, m), filled(count * n * m, T::zero()))
        .map_err(|e| Error::invalid(format!("matmul output: {e}")))?;
    if b3.shape()[0] == 1 && a3.shape()[0] == count {
        // One right-hand matrix shared by the whole batch (the common case under
        // vmap with unbatched weights): the batch folds into the rows of one
        // product, `[count * n, k] @ [k, m]`, instead of `count` small ones.
        let a2 = a3
            .to_shape((count * n, k))
            .map_err(|e| Error::invalid(format!("cannot fold the batch into rows: {e}")))?;
        let mut out2 = out
            .view_mut()
            .into_shape_with_order((count * n, m))
            .map_err(|e| Error::invalid(format!("cannot view the output: {e}")))?;
        T::gemm(&a2.view(), &b3.index_axis(Axis(0), 0), &mut out2);
        return finish_matmul(out, batch, a.ndim(), b.ndim(), n, m);
    }
    if a3.shape()[0] == 1 && b3.shape()[0] == count && count > 1 && m < FOLD_COLUMNS_BELOW {
        // One left-hand matrix shared by the whole batch (`mv(W, x)` under
        // vmap with unbatched weights): the batch folds into the columns of
        // one product, `[n, k] @ [k, count * m]`, instead of `count` products
        // that each pack the whole shared matrix again. Only for narrow
        // products: the fold copies the right operands and the result
        // through a transpose, which for wide ones (a convolution's weight
        // times each image's blocks, `m` = 784 in W12) cost 3x the products
        // themselves; there each product packs the small shared matrix
        // cheaply and runs straight on the operand's memory.
        let b2 = crate::core::buffers::row_major(&b3.view().permuted_axes([1, 0, 2]))
            .into_shape_with_order((k, count * m))
            .map_err(|e| Error::invalid(format!("cannot fold the batch into columns: {e}")))?;
        let mut wide = ndarray::Array2::<T>::zeros((n, count * m));
        T::gemm(&a3.index_axis(Axis(0), 0), &b2.view(), &mut wide.view_mut());
        let folded = wide
            .into_shape_with_order((n, count, m))
            .map_err(|e| Error::invalid(format!("cannot unfold the batch: {e}")))?;
        out.assign(&folded.permuted_axes([1, 0, 2]));
        return finish_matmul(out, batch, a.ndim(), b.ndim(), n, m);
    }
    // Output product `t` multiplies the operands' own (broadcast) batch entries.
    // Without broadcasting (the usual case under vmap), product `t` multiplies
    // entry `t` of both operands.
    let same_batch = batch_a == batch.as_slice() && batch_b == batch.as_slice();
    let entries = |t: usize| -> (usize, usize) {
        if same_batch {
            return (t, t);
        }
        let mut rest = t;
        let mut index: crate::core::value::Shape = smallvec::smallvec![0; batch.len()];
        for (i, &size) in index.iter_mut().zip(&batch).rev() {
            *i = rest % size.max(1);
            rest /= size.max(1);
        }
        (
            broadcast_flat_index(&index, batch_a),
            broadcast_flat_index(&index, batch_b),
        )
    };
    // Small products straight on the row-major buffers: a GEMM's
    // packing costs more than the arithmetic there (about 100 ns for 4 x 4 x 4).
    // (Checked: `n * m` and `n * k` fit, but `n * k * m` need not.)
    let work = n.checked_mul(k).and_then(|nk| nk.checked_mul(m));
    if work.is_some_and(|w| w <= SMALL_GEMM)
        && let (Some(av), Some(bv), Some(cv)) = (a3.as_slice(), b3.as_slice(), out.as_slice_mut())
    {
        let one = |(t, c): (usize, &mut [T])| {
            let (ia, ib) = entries(t);
            small_gemm(&av[ia * n * k..], &bv[ib * k * m..], c, (n, k, m));
        };
        // (Many small products, as DP-SGD's per-example squared norms
        // `bi,bi->b` of a small leaf: whole products on the pool.)
        #[cfg(feature = "rayon")]
        if crate::core::broadcast::parallel(work.unwrap_or(0).saturating_mul(count)) {
            use rayon::prelude::*;
            crate::core::spin::region();
            cv.par_chunks_exact_mut((n * m).max(1))
                .enumerate()
                .take(count)
                .for_each(one);
            return finish_matmul(out, batch, a.ndim(), b.ndim(), n, m);
        }
        cv.chunks_exact_mut((n * m).max(1))
            .enumerate()
            .take(count)
            .for_each(one);
        return finish_matmul(out, batch, a.ndim(), b.ndim(), n, m);
    }
    let product = |t: usize, mut c: ndarray::ArrayViewMut2<'_, T>| {
        let (ia, ib) = entries(t);
        T::gemm(
            &a3.index_axis(Axis(0), ia),
            &b3.index_axis(Axis(0), ib),
            &mut c,
        );
    };
    #[cfg(feature = "rayon")]
    if count > 1
        && work.map_or(usize::MAX, |w| w.saturating_mul(count))
            >= crate::core::broadcast::PARALLEL_ELEMENTS * 4
        && crate::core::threads::parallel()
    {
        use rayon::prelude::*;
        crate::core::spin::region();
        out.axis_iter_mut(Axis(0))
            .into_par_iter()
            .enumerate()
            .for_each(|(t, c)| product(t, c));
        return finish_matmul(out, batch, a.ndim(), b.ndim(), n, m);
    }
    for (t, c) in out.axis_iter_mut(Axis(0)).enumerate() {
        product(t, c);
    }

    finish_matmul(out, batch, a.ndim(), b.ndim(), n, m)
}

/// A batch of products sharing the left matrix is folded into one product's
/// columns only when each product has fewer columns than this.
const FOLD_COLUMNS_BELOW: usize = 32;

/// Products of at most this many multiply-adds are computed by [`small_gemm`].
pub(crate) const SMALL_GEMM: usize = 1024;

/// `c = a @ b` for row-major `a` (`n x k`), `b` (`k x m`) and `c` (`n x m`)
/// given as slices, by a plain loop: each output row is accumulated in a local
/// buffer (kept in registers for narrow products) and stored once.
fn small_gemm<T: LinalgScalar>(a: &[T], b: &[T], c: &mut [T], (n, k, m): (usize, usize, usize)) {
    const WIDE: usize = 16;
    for (i, c_row) in c.chunks_exact_mut(m.max(1)).enumerate().take(n) {
        let a_row = &a[i * k..(i + 1) * k];
        for (j0, c_part) in c_row.chunks_mut(WIDE).enumerate() {
            let mut acc = [T::zero(); WIDE];
            let w = c_part.len();
            for (kk, &a_ik) in a_row.iter().enumerate() {
                let b_part = &b[kk * m + j0 * WIDE..kk * m + j0 * WIDE + w];
                for (acc_j, &b_kj) in acc.iter_mut().zip(b_part) {
                    *acc_j = *acc_j + a_ik * b_kj;
                }
            }
            // An element loop: for a handful of elements a `memcpy` call costs
            // more than the copy.
            for (c_ij, &v) in c_part.iter_mut().zip(&acc) {
                *c_ij = v;
            }
        }
    }
}

/// The `[count, n, m]` products shaped as NumPy's matmul result: the batch
/// dims, then `n` unless the left operand was a vector, then `m` unless the
/// right one was.
fn finish_matmul<T>(
    out: Array3<T>,
    mut shape: Vec<usize>,
    a_rank: usize,
    b_rank: usize,
    n: usize,
    m: usize,
) -> Result<ArrayD<T>> {
    if a_rank >= 2 {
        shape.push(n);
    }
    if b_rank >= 2 {
        shape.push(m);
    }
    out.into_shape_with_order(IxDyn(&shape))
        .map_err(|e| Error::invalid(format!("cannot shape the result as {shape:?}: {e}")))
}

/// With a fused activation, the output is computed in blocks of rows of
/// about this many bytes (at least [`MIN_BLOCK_ROWS`] rows), so that each
/// block is still in the core's cache when the activation passes over it.
const ACTIVATION_BLOCK_BYTES: usize = 512 * 1024;
/// The fewest rows of an activation block: each block's product packs `b`
/// again, which must stay small against the block's own work.
const MIN_BLOCK_ROWS: usize = 128;

/// `bias + a @ b` (then `relu` if asked) in one pass over the output: each
/// block of output rows is filled with the rows of `bias` (broadcast), the
/// product is accumulated into it, and the activation applied to it in place.
/// Without the activation the whole output is one block; with the `rayon`
/// feature, a product large enough to be split is cut into blocks of rows
/// that the pool computes each on one thread, fill and activation included
/// (the fill had been a serial pass before the split product).
pub(super) fn addmm_arrays<T: Gemm + PartialOrd>(
    bias: ArrayViewD<'_, T>,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    relu: bool,
) -> Result<ArrayD<T>> {
    let shape_error = || {
        Error::invalid(format!(
            "operands of shapes {:?}, {:?} and {:?} do not fit addmm",
            bias.shape(),
            a.shape(),
            b.shape()
        ))
    };
    let row = a.ndim() == 1;
    let a2 = if row {
        a.view().insert_axis(Axis(0))
    } else {
        a.view()
    }
    .into_dimensionality::<ndarray::Ix2>()
    .map_err(|_| shape_error())?;
    let b2 = b
        .view()
        .into_dimensionality::<ndarray::Ix2>()
        .map_err(|_| shape_error())?;
    let ((n, k), m) = (a2.dim(), b2.dim().1);
    if b2.dim().0 != k {
        return Err(shape_error());
    }
    let shape: Vec<usize> = if row { vec![m] } else { vec![n, m] };
    let rows = bias.broadcast(IxDyn(&shape)).ok_or_else(shape_error)?;
    let rows = if row { rows.insert_axis(Axis(0)) } else { rows }
        .into_dimensionality::<ndarray::Ix2>()
        .map_err(|_| shape_error())?;
    let activation_rows = if relu {
        (ACTIVATION_BLOCK_BYTES / (m * std::mem::size_of::<T>()).max(1)).max(MIN_BLOCK_ROWS)
    } else {
        n
    };
    let rows_per_block = block_rows(n, k, m, activation_rows);
    let len = checked_numel(&[n, m])?;
    #[cfg(feature = "rayon")]
    {
        let parts = split_parts(n, SPLIT_PART_ROWS, n.saturating_mul(k).saturating_mul(m));
        if parts > 1 {
            // Blocks of rows on the pool, each filled with its bias rows,
            // accumulated into and activated while in its core's cache.
            let rows_per_block = block_rows(n, k, m, activation_rows.min(n.div_ceil(parts)));
            let values =
                crate::core::buffers::par_build(len, rows_per_block * m, |start, piece| {
                    let (first, count) = (start / m.max(1), piece.len() / m.max(1));
                    for r in rows.slice(ndarray::s![first..first + count, ..]).rows() {
                        match r.as_slice() {
                            Some(s) => piece.extend(s.iter().copied()),
                            None => piece.extend(r.iter().copied()),
                        }
                    }
                    let block = piece.written_mut();
                    if finish_addmm_block(block, &a2, &b2, first, relu, T::gemm_accumulate_here)
                        .is_err()
                    {
                        // (Cannot happen: the piece holds `count` whole rows.)
                        // Without the product the values would be wrong: the
                        // piece is reported unwritten, and the call errs.
                        piece.unwrite();
                    }
                })?;
            return ArrayD::from_shape_vec(IxDyn(&shape), values)
                .map_err(|e| Error::invalid(format!("cannot shape the result as {shape:?}: {e}")));
        }
    }
    let mut values = take(len);
    for start in (0..n).step_by(rows_per_block) {
        let end = (start + rows_per_block).min(n);
        for r in rows.slice(ndarray::s![start..end, ..]).rows() {
            match r.as_slice() {
                Some(s) => values.extend_from_slice(s),
                None => values.extend(r.iter().copied()),
            }
        }
        let block = &mut values[start * m..];
        finish_addmm_block(block, &a2, &b2, start, relu, T::gemm_accumulate)?;
    }
    ArrayD::from_shape_vec(IxDyn(&shape), values)
        .map_err(|e| Error::invalid(format!("cannot shape the result as {shape:?}: {e}")))
}

/// The rest of one block of [`addmm_arrays`] once `block` holds its bias
/// rows (the output's rows from `first` on, as many as it holds): those rows
/// of `a` times `b` accumulated into it by `product`, then relu if asked.
fn finish_addmm_block<T: Gemm + PartialOrd>(
    block: &mut [T],
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    first: usize,
    relu: bool,
    product: fn(&ArrayView2<'_, T>, &ArrayView2<'_, T>, &mut ArrayViewMut2<'_, T>),
) -> Result<()> {
    let m = b.dim().1;
    let count = block.len().checked_div(m).unwrap_or(0);
    let mut out = ArrayViewMut2::from_shape((count, m), &mut *block)
        .map_err(|e| Error::invalid(format!("addmm output: {e}")))?;
    product(&a.slice(ndarray::s![first..first + count, ..]), b, &mut out);
    if relu {
        for v in block.iter_mut() {
            *v = super::unary::relu_value(*v);
        }
    }
    Ok(())
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::Gemm;
    use ndarray::linalg::general_mat_mul;
    use ndarray::{s, Array2, ShapeBuilder};

    fn filled(rows: usize, cols: usize, seed: f64) -> Array2<f64> {
        Array2::from_shape_fn((rows, cols), |(i, j)| {
            ((i * cols + j) as f64 * 0.37 + seed).sin()
        })
    }

    /// The gemm kernels, called directly, against ndarray's product on the
    /// layouts the operand normalization rewrites: a column-major output (the
    /// transposed product), negative strides on the output's rows and
    /// columns and on the shared dimension, and accumulation.
    pub(crate) fn direct_gemm_kernels_match_ndarray_on_every_layout() {
        let (m, k, n) = (19, 23, 17); // above GEMM_CRATE_MIN: the gemm path
        let a = filled(m, k, 0.1);
        let b = filled(k, n, 0.7);
        let flipped_k = (a.slice(s![.., ..;-1]), b.slice(s![..;-1, ..]));
        for (case, (a, b)) in [("plain", (a.view(), b.view())), ("k reversed", flipped_k)] {
            for column_major in [false, true] {
                for (flip_rows, flip_cols) in [(false, false), (true, false), (false, true)] {
                    for accumulate in [false, true] {
                        let shape = (m, n).set_f(column_major);
                        let mut want = Array2::from_shape_fn(shape, |(i, j)| (i + 2 * j) as f64);
                        let mut got = want.clone();
                        let (mut w, mut g) = (want.view_mut(), got.view_mut());
                        if flip_rows {
                            w.invert_axis(ndarray::Axis(0));
                            g.invert_axis(ndarray::Axis(0));
                        }
                        if flip_cols {
                            w.invert_axis(ndarray::Axis(1));
                            g.invert_axis(ndarray::Axis(1));
                        }
                        let beta = if accumulate { 1.0 } else { 0.0 };
                        general_mat_mul(1.0, &a, &b, beta, &mut w);
                        if accumulate {
                            f64::gemm_accumulate(&a, &b, &mut g);
                        } else {
                            f64::gemm(&a, &b, &mut g);
                        }
                        let err = (&want - &got).iter().fold(0.0f64, |e, d| e.max(d.abs()));
                        assert!(
                            err < 1e-12,
                            "{case}, column-major {column_major}, rows flipped {flip_rows}, \
                             columns flipped {flip_cols}, accumulate {accumulate}: error {err}"
                        );
                    }
                }
            }
        }
    }

    /// A product split over the pool, by rows or (one row) by columns, has
    /// the bits of the same product on one thread, on the shapes each split
    /// takes and with `b` in each layout (with the `rayon` feature and more
    /// than one thread; without, both are the same call).
    pub(crate) fn split_products_give_the_bits_of_one_call() {
        let f32s = |rows: usize, cols: usize, seed: f64| {
            Array2::from_shape_fn((rows, cols), |(i, j)| {
                (((i * cols + j) as f64 * 0.37 + seed).sin() * 3.0) as f32
            })
        };
        for (m, k, n) in [
            (1, 256, 16384),
            (1, 256, 16383),
            (1, 300, 9217),
            (1, 1000, 5000),
            (1, 3, 200_000),
            (1, 6000, 130),
            (128, 600, 64),
            (196, 700, 64),
            (200, 600, 64),
            (1024, 64, 128),
            (1024, 1000, 10),
        ] {
            let (a, b) = (f32s(m, k, 0.3), f32s(k, 2 * n, 1.1));
            let bits = |x: &Array2<f32>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            // `b` row-major, column-major, and with no unit stride at all.
            let column_major = b.t().as_standard_layout().into_owned().reversed_axes();
            for (layout, b) in [
                ("row-major", b.slice(s![.., ..n])),
                ("column-major", column_major.slice(s![.., ..n])),
                ("strided", b.slice(s![.., ..;2])),
            ] {
                let (mut whole, mut split) = (Array2::zeros((m, n)), Array2::zeros((m, n)));
                f32::gemm_unsplit(&a.view(), &b, &mut whole.view_mut(), false);
                f32::gemm(&a.view(), &b, &mut split.view_mut());
                assert!(bits(&whole) == bits(&split), "{m} x {k} x {n}, {layout}");
            }
        }
    }

    /// `addmm` (with and without its fused relu) gives the same bits on a
    /// pool of one thread and of two, on shapes whose blocks of rows (the
    /// activation's, the pool's parts) would otherwise straddle the `gemm`
    /// crate's change of blocking at 64 rows: `[2100, 600] @ [600, 64]` cut
    /// into blocks of 2,048 rows left a last block of 52 on one thread.
    #[cfg(feature = "rayon")]
    pub(crate) fn addmm_gives_the_same_bits_on_one_thread_and_two() {
        let f32s = |rows: usize, cols: usize, seed: f64| {
            Array2::from_shape_fn((rows, cols), |(i, j)| {
                (((i * cols + j) as f64 * 0.37 + seed).sin() * 3.0) as f32
            })
        };
        for (n, k, m) in [
            (2100, 600, 64),
            (196, 700, 64),
            (128, 600, 64),
            (300, 40, 100),
        ] {
            let (a, b, bias) = (f32s(n, k, 0.3), f32s(k, m, 1.1), f32s(1, m, 2.0));
            for relu in [false, true] {
                let run = |threads: usize| {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let out = pool.install(|| {
                        super::addmm_arrays(
                            bias.view().into_dyn(),
                            a.view().into_dyn(),
                            b.view().into_dyn(),
                            relu,
                        )
                    });
                    out.unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                assert!(run(1) == run(2), "{n} x {k} x {m}, relu {relu}");
            }
        }
    }

    crate::core::unit_test::test_list! {
        direct_gemm_kernels_match_ndarray_on_every_layout,
        split_products_give_the_bits_of_one_call,
        #[cfg(feature = "rayon")]
        addmm_gives_the_same_bits_on_one_thread_and_two,
    }
}
