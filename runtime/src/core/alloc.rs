//! Size checks before allocating.

use crate::{Error, Result};

/// The number of elements of `shape`, or an error if a tensor of that shape
/// could not be allocated (ndarray and `Vec` would panic on it): the product of
/// its non-zero dims, times 8 bytes per element, must fit in `isize`.
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    let limit = isize::MAX as usize / 8;
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d).filter(|&n| n <= limit));
    match nonzero {
        Some(_) if shape.contains(&0) => Ok(0),
        Some(n) => Ok(n),
        None => Err(Error::invalid(format!(
            "a tensor of shape {shape:?} is too large to allocate"
        ))),
    }
}
