// A meta sees only shapes and dtypes: it takes `&TensorMeta`, not `&Tensor`.
use batchrules::{meta, Result, Tensor};
use batchrules::rules::TensorMeta;

#[meta(op = "exp")]
fn exp_meta(x: &Tensor) -> Result<TensorMeta> {
    let _ = x;
    todo!()
}

fn main() {}
