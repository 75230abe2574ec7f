//! Reductions over one dim (with `keepdim`) or over all dims.

use ndarray::{ArcArray, ArrayD, Axis, IxDyn};

use crate::batching::reduce_dim;
use crate::library::support::{cast, check_dim};
use crate::{
    batching_rule, kernel, meta, ops, DType, Data, Element, Error, Result, Tensor, TensorMeta,
};

/// Output meta of a reduction; `nonempty` rejects reducing zero elements.
fn reduce_meta(
    x: &TensorMeta,
    dim: Option<i64>,
    keepdim: bool,
    nonempty: bool,
) -> Result<TensorMeta> {
    let mut shape = x.shape().to_vec();
    match dim {
        Some(d) => {
            let d = check_dim(d, x.ndim())?;
            if x.ndim() > 0 {
                if nonempty && shape[d] == 0 {
                    return Err(Error::invalid(format!(
                        "cannot reduce over dim {d} of size 0 (shape {:?}): the result is undefined",
                        x.shape()
                    )));
                }
                if keepdim {
                    shape[d] = 1;
                } else {
                    shape.remove(d);
                }
            }
        }
        None => {
            if nonempty && shape.contains(&0) {
                return Err(Error::invalid(format!(
                    "cannot reduce an empty tensor (shape {:?}): the result is undefined",
                    x.shape()
                )));
            }
            shape = if keepdim {
                vec![1; shape.len()]
            } else {
                Vec::new()
            };
        }
    }
    Ok(TensorMeta::new(shape, x.dtype()))
}

fn fold<T: Element>(
    a: &ArcArray<T, IxDyn>,
    dim: Option<i64>,
    keepdim: bool,
    init: T,
    f: impl Fn(T, T) -> T,
) -> Result<Tensor> {
    let rank = a.ndim();
    match dim {
        Some(d) if rank > 0 => {
            let d = check_dim(d, rank)?;
            let r = a.fold_axis(Axis(d), init, |acc, &x| f(*acc, x));
            Ok(Tensor::from(if keepdim {
                r.insert_axis(Axis(d))
            } else {
                r
            }))
        }
        _ => {
            let v = a.fold(init, |acc, &x| f(acc, x));
            let shape = if keepdim { vec![1; rank] } else { Vec::new() };
            Ok(Tensor::from(ArrayD::from_elem(IxDyn(&shape), v)))
        }
    }
}

#[meta(op = "sum")]
fn sum_meta(x: &TensorMeta, dim: Option<i64>, keepdim: bool) -> Result<TensorMeta> {
    let m = reduce_meta(x, dim, keepdim, false)?;
    let dtype = if x.dtype() == DType::Bool {
        DType::I64
    } else {
        x.dtype()
    };
    Ok(m.with_dtype(dtype))
}

#[kernel(op = "sum")]
fn sum_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    let dtype = if x.dtype() == DType::Bool {
        DType::I64
    } else {
        x.dtype()
    };
    match cast(x, dtype)? {
        Data::I64(a) => fold(&a, dim, keepdim, 0, i64::wrapping_add),
        Data::F32(a) => fold(&a, dim, keepdim, 0.0, |p, q| p + q),
        Data::F64(a) => fold(&a, dim, keepdim, 0.0, |p, q| p + q),
        Data::Bool(_) => Err(Error::invalid("sum of bool is computed in i64")),
    }
}

#[batching_rule(op = "sum")]
fn sum_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<(Tensor, Option<usize>)> {
    reduce_dim(ops::sum, x, bdim, dim, keepdim)
}

#[meta(op = "amax")]
fn amax_meta(x: &TensorMeta, dim: Option<i64>, keepdim: bool) -> Result<TensorMeta> {
    reduce_meta(x, dim, keepdim, true)
}

#[kernel(op = "amax")]
fn amax_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    // NaN wins, as in PyTorch.
    match x.data()? {
        Data::Bool(a) => fold(a, dim, keepdim, false, |p, q| p | q),
        Data::I64(a) => fold(a, dim, keepdim, i64::MIN, i64::max),
        Data::F32(a) => fold(a, dim, keepdim, f32::NEG_INFINITY, |p, q| {
            if q.is_nan() || q > p {
                q
            } else {
                p
            }
        }),
        Data::F64(a) => fold(a, dim, keepdim, f64::NEG_INFINITY, |p, q| {
            if q.is_nan() || q > p {
                q
            } else {
                p
            }
        }),
    }
}

#[batching_rule(op = "amax")]
fn amax_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<(Tensor, Option<usize>)> {
    reduce_dim(ops::amax, x, bdim, dim, keepdim)
}

/// Every dim (negative too), keepdim both ways, all dims, 0-d, size-0 dims.
fn reduce_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let x = f64s(&[2, 3]);
    let mut s = Vec::new();
    for dim in [None, Some(0i64), Some(1), Some(-1)] {
        for keepdim in [false, true] {
            s.push(crate::args![&x, dim, keepdim]);
        }
    }
    s.push(crate::args![&f64s(&[]), None::<i64>, false]);
    s.push(crate::args![&f64s(&[]), Some(0i64), true]);
    s.push(crate::args![&i64s(&[4], 7), Some(0i64), false]);
    s.push(crate::args![&f32s(&[2, 1, 3]), Some(1i64), false]);
    s
}

fn reduce_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    vec![
        crate::args![&f64s(&[2, 3]), Some(2i64), false],
        crate::args![&f64s(&[2, 3]), Some(-3i64), true],
    ]
}

fn sum_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let mut s = reduce_samples();
    s.push(crate::args![&bools(&[3, 2]), Some(1i64), false]);
    s.push(crate::args![&f64s(&[2, 0]), Some(1i64), false]);
    s.push(crate::args![&f64s(&[0]), None::<i64>, false]);
    s
}

fn amax_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let mut s = reduce_errors();
    s.push(crate::args![&f64s(&[2, 0]), Some(1i64), false]);
    s.push(crate::args![&f64s(&[0]), None::<i64>, false]);
    s
}

crate::op_samples!(op = "sum", samples = sum_samples, errors = reduce_errors);
crate::op_samples!(op = "amax", samples = reduce_samples, errors = amax_errors);
