//! vmap: levels, batched dispatch, and the fallback.

use crate::registry::OpEntry;
use crate::value::Arg;
use crate::{Error, Result, Tensor};

/// Dispatch of an op whose arguments are batched at `level`.
pub(crate) fn call_batched(
    entry: &'static OpEntry,
    _args: &[Arg<Tensor>],
    level: usize,
) -> Result<Vec<Tensor>> {
    Err(Error::NotImplemented {
        op: entry.name().to_string(),
        message: format!("batched dispatch at vmap level {level} is not built yet"),
    })
}
