// `crate = br` names the runtime for the default table, `br::ops`, in a crate
// that depends on batchrules as `br` (here `batchrules` is another crate).
//
// These register second functions for built-in ops, which the registry's
// runtime audit reports; this program only has to compile, so it never calls
// an op (`renamed_crate.rs` runs ops of its own table).
extern crate batchrules as br;
extern crate core as batchrules;

use br::rules::TensorMeta;
use br::{batching_rule, decompose, kernel, meta, Result, Tensor};

#[kernel(op = "triu", crate = br)]
fn triu_kernel(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    let _ = (x, diagonal);
    todo!()
}

#[meta(op = "triu", crate = br)]
fn triu_meta(x: &TensorMeta, _diagonal: i64) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[batching_rule(op = "triu", crate = br)]
fn triu_rule(x: &Tensor, bdim: Option<usize>, diagonal: i64) -> Result<(Tensor, Option<usize>)> {
    let _ = (x, bdim, diagonal);
    todo!()
}

#[decompose(op = "softmax", crate = ::br, vmap = "fallback")]
fn softmax_decomposition(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _ = (x, dim);
    todo!()
}

// `table` wins over `crate`: this is the built-in table named in full.
#[meta(op = "softmax", crate = br, table = br::ops)]
fn softmax_meta(x: &TensorMeta, _dim: i64) -> Result<TensorMeta> {
    Ok(x.clone())
}

fn main() {}
