// The compiler compares the real types, so an alias of the expected type is
// accepted wherever that type is, spelled any way.
use batchrules::{batching_rule, kernel, meta};

type T = batchrules::Tensor;
type Meta = batchrules::rules::TensorMeta;
type Dim = i64;
type BatchDim = Option<usize>;
type Out<X> = batchrules::Result<X>;
type Ints<'a> = &'a [i64];

mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "primitive"

[[op]]
schema = "pick(Tensor self, int[] dims, int dim=0) -> Tensor"
kind = "primitive"
"#
    );
}

#[kernel(op = "scale", table = ops)]
fn scale_kernel(x: &T, factor: f64) -> Out<T> {
    let _ = factor;
    Ok(x.clone())
}

#[meta(op = "scale", table = ops)]
fn scale_meta(x: &Meta, _factor: f64) -> Out<Meta> {
    Ok(x.clone())
}

#[batching_rule(op = "scale", table = ops)]
fn scale_rule(x: &T, bdim: BatchDim, factor: f64) -> Out<(T, BatchDim)> {
    Ok((ops::scale(x, factor)?, bdim))
}

#[kernel(op = "pick", table = ops)]
fn pick_kernel(x: &T, dims: Ints<'_>, dim: Dim) -> Out<T> {
    let _ = (dims, dim);
    Ok(x.clone())
}

#[meta(op = "pick", table = ops)]
fn pick_meta(x: &Meta, _dims: Ints, _dim: Dim) -> Out<Meta> {
    Ok(x.clone())
}

fn main() -> batchrules::Result<()> {
    let x = T::from(ndarray::array![1.0f64, 2.0].into_dyn());
    let y = batchrules::vmap(|t: T| ops::scale(&t, 2.0)).call(&x)?;
    assert_eq!(y.shape(), x.shape());
    assert_eq!(ops::pick(&x, &[0], 0)?.shape(), x.shape());
    Ok(())
}
