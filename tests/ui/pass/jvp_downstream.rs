// `#[jvp]` on an op of a table other than the built-in one, with the argument
// kinds whose tangents take a particular shape (an optional tensor, a tensor
// list, two outputs), registered and then called through the registry; and a
// `linear` op of the same table, whose jvp is derived.
use batchrules::coverage::{jvp_status, JvpStatus};
use batchrules::rules::{Arg, TensorMeta};
use batchrules::transform::jvps;
use batchrules::{jvp, kernel, meta, Result, Tensor};

mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "affine(Tensor self, Tensor[] terms, Tensor? bias=None) -> (Tensor, Tensor)"
kind = "primitive"

[[op]]
schema = "twice(Tensor self) -> Tensor"
kind = "primitive"
linear = true
"#
    );
}

/// An alias of the expected type is accepted.
type TangentIn<'a> = Option<&'a Tensor>;

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

/// First output: the tangent of `self`; second: the number of nonzero tangents.
#[jvp(op = "affine", table = ops)]
#[allow(clippy::too_many_arguments)] // the schema's slots, one parameter each
fn affine_jvp(
    _x: &Tensor,
    _terms: &[Tensor],
    _bias: Option<&Tensor>,
    _result0: &Tensor,
    _result1: &Tensor,
    self_tangent: TangentIn<'_>,
    terms_tangent: &[Option<Tensor>],
    bias_tangent: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let nonzero =
        terms_tangent.iter().filter(|t| t.is_some()).count() + usize::from(bias_tangent.is_some());
    Ok((self_tangent.cloned(), Some(Tensor::scalar(nonzero as f64))))
}

#[meta(op = "twice", table = ops)]
fn twice_meta(x: &TensorMeta) -> Result<TensorMeta> {
    Ok(x.clone())
}

#[kernel(op = "twice", table = ops)]
fn twice_kernel(x: &Tensor) -> Result<Tensor> {
    batchrules::ops::add(x, x)
}

fn main() {
    let registry = batchrules::registry::registry().unwrap();
    let affine = registry.find(ops::__PATH, "affine").unwrap();
    assert_eq!(jvp_status(affine).unwrap(), JvpStatus::Jvp);
    let jvp = jvps::TABLE.get(affine).unwrap().unwrap();
    let x = Tensor::scalar(1.0f64);
    let args = [
        Arg::Tensor(x.clone()),
        Arg::TensorList(vec![x.clone(), x.clone(), x.clone()]),
        Arg::OptTensor(None),
    ];
    let tangents = [
        vec![Some(Tensor::scalar(5.0f64))],
        vec![Some(x.clone()), None, Some(x.clone())],
        vec![None],
    ];
    let out = jvp(&args, &[x.clone(), x.clone()], &tangents).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].as_ref().unwrap().to_array::<f64>().unwrap()[[]], 5.0);
    assert_eq!(out[1].as_ref().unwrap().to_array::<f64>().unwrap()[[]], 2.0);

    let twice = registry.find(ops::__PATH, "twice").unwrap();
    assert!(twice.schema.linear && jvps::TABLE.get(twice).unwrap().is_none());
    assert_eq!(jvp_status(twice).unwrap(), JvpStatus::Linear);
}
