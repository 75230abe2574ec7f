//! The allocation guard: every tensor the library allocates is checked here
//! first, so an absurd size is an `Err`, never an abort ("memory allocation of
//! N bytes failed") or a capacity-overflow panic.
//!
//! Two limits apply. ndarray (like `Vec`) needs the product of a shape's
//! non-zero dims, in bytes, to fit in `isize`; and no tensor may take more than
//! the [allocation limit](set_allocation_limit), 16 GiB unless set otherwise.
//! The second limit matters because Linux overcommits memory: reserving far
//! more than the machine has can succeed and kill the process later, when the
//! pages are touched.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{DType, Error, Result};

/// The allocation limit unless [`set_allocation_limit`] changes it: 16 GiB.
pub const DEFAULT_ALLOCATION_LIMIT: usize = 1 << 34;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_ALLOCATION_LIMIT);
static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// Sets the most bytes one tensor may take. An op whose output (per its meta,
/// at the physical shape) would be larger returns an error naming the op and
/// the size instead of allocating. The default is [`DEFAULT_ALLOCATION_LIMIT`].
pub fn set_allocation_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The most bytes one tensor may take (see [`set_allocation_limit`]).
pub fn allocation_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Changes whenever the limit does, so caches of checked sizes know to forget.
pub(crate) fn limit_generation() -> usize {
    GENERATION.load(Ordering::Relaxed)
}

/// The size in bytes of one element of `dtype`.
pub(crate) fn element_size(dtype: DType) -> usize {
    match dtype {
        DType::Bool => 1,
        DType::F32 => 4,
        DType::I64 | DType::F64 => 8,
    }
}

/// The number of elements of a `dtype` tensor of `shape`, or an error if such
/// a tensor may not be allocated: its non-zero dims overflow what ndarray can
/// index, or it takes more than the allocation limit.
pub(crate) fn check_alloc(shape: &[usize], dtype: DType) -> Result<usize> {
    let size = element_size(dtype);
    let Some(elements) = element_count(shape, isize::MAX as usize / size) else {
        return Err(Error::invalid(format!(
            "a {dtype} tensor of shape {shape:?} is too large to allocate: its element count overflows"
        )));
    };
    let bytes = elements * size;
    let limit = allocation_limit();
    if bytes > limit {
        return Err(Error::invalid(format!(
            "a {dtype} tensor of shape {shape:?} would take {bytes} bytes, over the allocation limit of {limit} bytes (see batchrules::tuning::set_allocation_limit)"
        )));
    }
    Ok(elements)
}

/// [`check_alloc`] for code that is not an op (tensor methods, vmap's own
/// stacking and broadcasting): the error names `what` instead.
pub(crate) fn check_alloc_in(what: &str, shape: &[usize], dtype: DType) -> Result<usize> {
    check_alloc(shape, dtype).map_err(|e| match e {
        Error::InvalidArgument { message, .. } => Error::Tensor(format!("{what}: {message}")),
        other => other,
    })
}

/// The number of elements of `shape`, or an error if it cannot be a tensor's
/// shape at all: the product of its non-zero dims overflows what ndarray can
/// index (`isize::MAX` elements of one byte). This is a count, not an
/// allocation: it does not apply the allocation limit, which depends on the
/// dtype; [`check_alloc`] applies both (the dispatcher calls it on every op's
/// output, with the dtype the meta gives).
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    element_count(shape, isize::MAX as usize).ok_or_else(|| {
        Error::invalid(format!(
            "a tensor of shape {shape:?} is too large to allocate: its element count overflows"
        ))
    })
}

/// The number of elements of `shape`, or `None` if the product of its
/// non-zero dims (what ndarray must be able to index even when a dim is 0)
/// exceeds `max`.
fn element_count(shape: &[usize], max: usize) -> Option<usize> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d).filter(|&n| n <= max))?;
    Some(if shape.contains(&0) { 0 } else { nonzero })
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn absurd_shapes_are_errors() {
        assert_eq!(check_alloc(&[2, 3], DType::F32).unwrap(), 6);
        assert_eq!(check_alloc(&[0, 1 << 40], DType::F32).unwrap(), 0);
        assert!(check_alloc(&[0, 1 << 62, 1 << 62], DType::F32).is_err());
        assert!(check_alloc(&[1 << 40], DType::Bool).is_err());
        assert!(check_alloc(&[usize::MAX, 2], DType::I64).is_err());
        let err = check_alloc(&[1 << 32, 4], DType::F64)
            .unwrap_err()
            .to_string();
        assert!(err.contains("over the allocation limit"), "{err}");
        // 12 GiB in f32 is under the default 16 GiB limit; the same count of
        // f64 elements (24 GiB) is not, and the error names f64.
        assert!(check_alloc(&[3 << 30], DType::F32).is_ok());
        let err = check_alloc(&[3 << 30], DType::F64).unwrap_err().to_string();
        assert!(
            err.contains("a f64 tensor") && err.contains("25769803776 bytes"),
            "{err}"
        );
    }

    pub(crate) fn counting_elements_applies_no_dtype_and_no_limit() {
        assert_eq!(checked_numel(&[2, 3]).unwrap(), 6);
        assert_eq!(checked_numel(&[0, 1 << 40]).unwrap(), 0);
        // A 0 dim makes no elements, but ndarray still needs the other dims'
        // product to fit, as check_alloc does (and checked_numel did before
        // it stopped applying the limit).
        assert!(checked_numel(&[0, usize::MAX, 2]).is_err());
        // 2^40 elements: over the default limit in any dtype, but a count.
        assert_eq!(checked_numel(&[1 << 20, 1 << 20]).unwrap(), 1 << 40);
        assert!(checked_numel(&[usize::MAX, 2]).is_err());
        assert!(checked_numel(&[1 << 32, 1 << 32]).is_err());
    }

    crate::core::unit_test::test_list! {
        absurd_shapes_are_errors,
        counting_elements_applies_no_dtype_and_no_limit,
    }
}
