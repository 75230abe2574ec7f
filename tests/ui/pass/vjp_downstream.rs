// `#[vjp]` on an op of a table other than the built-in one (the downstream
// crate registers its own, in its crate), declared here, with the
// argument kinds whose gradients take a particular shape (an optional tensor,
// a tensor list, two outputs), registered and then called through the registry.
use batchrules::rules::{Arg, TensorMeta};
use batchrules::{batching_rule, kernel, meta, vjp, Result, Tensor};

mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "affine(Tensor self, Tensor[] terms, Tensor? bias=None) -> (Tensor, Tensor)"
kind = "primitive"
"#
    );
}

/// An alias of the expected type is accepted.
type Grad = Option<Tensor>;

#[meta(op = "affine", table = ops)]
fn affine_meta(
    x: &TensorMeta,
    _terms: &[TensorMeta],
    _bias: Option<&TensorMeta>,
) -> Result<(TensorMeta, TensorMeta)> {
    Ok((x.clone(), x.clone()))
}

#[kernel(op = "affine", table = ops)]
fn affine_kernel(
    x: &Tensor,
    _terms: &[Tensor],
    _bias: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    Ok((x.clone(), x.clone()))
}

#[batching_rule(op = "affine", table = ops)]
#[allow(clippy::type_complexity)]
fn affine_rule(
    x: &Tensor,
    bdim: Option<usize>,
    _terms: &[Tensor],
    _terms_bdims: &[Option<usize>],
    _bias: Option<&Tensor>,
    _bias_bdim: Option<usize>,
) -> Result<((Tensor, Option<usize>), (Tensor, Option<usize>))> {
    Ok(((x.clone(), bdim), (x.clone(), bdim)))
}

#[vjp(op = "affine", table = ops)]
fn affine_vjp(
    _x: &Tensor,
    terms: &[Tensor],
    bias: Option<&Tensor>,
    _result0: &Tensor,
    _result1: &Tensor,
    grad0: &Tensor,
    _grad1: &Tensor,
) -> Result<(Grad, Vec<Option<Tensor>>, Option<Tensor>)> {
    Ok((
        Some(grad0.clone()),
        terms.iter().map(|_| Some(grad0.clone())).collect(),
        bias.map(|_| grad0.clone()),
    ))
}

fn main() {
    let registry = batchrules::registry::registry().unwrap();
    let affine = registry.find(ops::__PATH, "affine").unwrap();
    let vjp = batchrules::transform::vjps::TABLE
        .get(affine)
        .unwrap()
        .unwrap();
    let x = Tensor::scalar(1.0f64);
    let g = Tensor::scalar(2.0f64);
    let args = [
        Arg::Tensor(x.clone()),
        Arg::TensorList(vec![x.clone(), x.clone(), x.clone()]),
        Arg::OptTensor(None),
    ];
    let grads = vjp(&args, &[x.clone(), x.clone()], &[g.clone(), g]).unwrap();
    // self, the three terms, and the absent bias.
    assert_eq!(grads.len(), 5);
    assert!(grads[..4].iter().all(Option::is_some));
    assert!(grads[4].is_none());
}
