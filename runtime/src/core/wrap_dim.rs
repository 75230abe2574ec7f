//! Dim wrapping: one resolution of possibly negative dims for metas and rules.

use crate::{Error, Result};

/// Resolves a possibly negative dim against `rank`, or explains why it cannot.
pub(crate) fn check_dim(dim: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let lo = -(r.max(1));
    let hi = r.max(1) - 1;
    if dim < lo || dim > hi {
        return Err(Error::invalid(format!(
            "dim {dim} is out of range for a tensor of rank {rank} (valid: {lo}..={hi})"
        )));
    }
    Ok(if dim < 0 {
        (dim + r.max(1)) as usize
    } else {
        dim as usize
    })
}
