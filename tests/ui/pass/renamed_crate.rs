// A crate that depends on batchrules under another name, as
// `br = { package = "batchrules", ... }` in its Cargo.toml makes it: here `br`
// is batchrules and `batchrules` is another crate (`core`), so any path the
// generated code spelled `::batchrules::...` would fail to resolve.
extern crate batchrules as br;
extern crate core as batchrules;

use br::rules::TensorMeta;
use br::{batching_rule, decompose, kernel, meta, Result, Tensor};

mod ops {
    br::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "primitive"

[[op]]
schema = "double(Tensor self) -> Tensor"
kind = "composite"
"#
    );
}

#[kernel(op = "scale", table = ops)]
fn scale_kernel(x: &Tensor, factor: f64) -> Result<Tensor> {
    br::ops::mul(x, &Tensor::scalar(factor))
}

#[meta(op = "scale", table = crate::ops)]
fn scale_meta(x: &TensorMeta, _factor: f64) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[batching_rule(op = "scale", table = ops, crate = br)]
fn scale_rule(x: &Tensor, bdim: Option<usize>, factor: f64) -> Result<(Tensor, Option<usize>)> {
    Ok((ops::scale(x, factor)?, bdim))
}

#[decompose(op = "double", table = ops)]
fn double(x: &Tensor) -> Result<Tensor> {
    ops::scale(x, 2.0)
}

#[meta(op = "double", table = ops)]
fn double_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}

br::op_samples!(
    table = ops,
    op = "scale",
    samples = no_samples,
    errors = no_samples
);

fn no_samples() -> Vec<br::testing::Sample> {
    Vec::new()
}

fn main() -> Result<()> {
    let x = Tensor::from(ndarray::array![1.0f64, 2.0, 3.0].into_dyn());
    let y = ops::double(&x)?;
    assert_eq!(
        y.to_array::<f64>()?,
        ndarray::array![2.0, 4.0, 6.0].into_dyn()
    );
    let z = br::vmap(|t: Tensor| ops::scale(&t, 3.0)).call(&x)?;
    assert_eq!(
        z.to_array::<f64>()?,
        ndarray::array![3.0, 6.0, 9.0].into_dyn()
    );
    Ok(())
}
