//! Reductions over one dim (with `keepdim`) or over all dims.

use ndarray::{ArcArray, ArrayD, Axis, IxDyn};

use crate::batching::reduce_dim;
use crate::core::cast::cast;
use crate::core::dims::check_dim;
use crate::core::meta_rules::reduce_meta;
use crate::{
    batching_rule, kernel, meta, ops, DType, Data, Element, Error, Result, Tensor, TensorMeta,
};

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
    match &*cast(x, dtype)? {
        Data::I64(a) => fold(a, dim, keepdim, 0, i64::wrapping_add),
        Data::F32(a) => fold(a, dim, keepdim, 0.0, |p, q| p + q),
        Data::F64(a) => fold(a, dim, keepdim, 0.0, |p, q| p + q),
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

/// Maximum (`greater = true`) or minimum; NaN wins, as in PyTorch.
fn extreme(x: &Tensor, dim: Option<i64>, keepdim: bool, greater: bool) -> Result<Tensor> {
    fn pick<T: PartialOrd + Copy>(greater: bool) -> impl Fn(T, T) -> T {
        move |p: T, q: T| {
            let q_nan = q.partial_cmp(&q).is_none();
            let better = if greater { q > p } else { q < p };
            if q_nan || better {
                q
            } else {
                p
            }
        }
    }
    let (bool_init, int_init) = if greater {
        (false, i64::MIN)
    } else {
        (true, i64::MAX)
    };
    let (f32_init, f64_init) = if greater {
        (f32::NEG_INFINITY, f64::NEG_INFINITY)
    } else {
        (f32::INFINITY, f64::INFINITY)
    };
    match x.data()? {
        Data::Bool(a) => fold(a, dim, keepdim, bool_init, pick(greater)),
        Data::I64(a) => fold(a, dim, keepdim, int_init, pick(greater)),
        Data::F32(a) => fold(a, dim, keepdim, f32_init, pick(greater)),
        Data::F64(a) => fold(a, dim, keepdim, f64_init, pick(greater)),
    }
}

#[kernel(op = "amax")]
fn amax_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    extreme(x, dim, keepdim, true)
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

#[meta(op = "amin")]
fn amin_meta(x: &TensorMeta, dim: Option<i64>, keepdim: bool) -> Result<TensorMeta> {
    reduce_meta(x, dim, keepdim, true)
}

#[kernel(op = "amin")]
fn amin_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    extreme(x, dim, keepdim, false)
}

#[batching_rule(op = "amin")]
fn amin_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<(Tensor, Option<usize>)> {
    reduce_dim(ops::amin, x, bdim, dim, keepdim)
}

#[meta(op = "mean")]
fn mean_meta(x: &TensorMeta, dim: Option<i64>, keepdim: bool) -> Result<TensorMeta> {
    crate::core::meta_rules::require_float(x)?;
    reduce_meta(x, dim, keepdim, false)
}

#[kernel(op = "mean")]
fn mean_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    let count = match dim {
        Some(d) if x.ndim() > 0 => x.shape()[check_dim(d, x.ndim())?],
        _ => x.shape().iter().product(),
    } as f64;
    match x.data()? {
        Data::F32(a) => fold(a, dim, keepdim, 0.0, |p, q| p + q)?
            .to_array::<f32>()
            .map(|s| Tensor::from(s.mapv(|v| v / count as f32))),
        Data::F64(a) => fold(a, dim, keepdim, 0.0, |p, q| p + q)?
            .to_array::<f64>()
            .map(|s| Tensor::from(s.mapv(|v| v / count))),
        other => Err(Error::invalid(format!(
            "needs a floating-point tensor, got {}",
            other.dtype()
        ))),
    }
}

#[batching_rule(op = "mean")]
fn mean_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<(Tensor, Option<usize>)> {
    reduce_dim(ops::mean, x, bdim, dim, keepdim)
}

fn mean_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let mut s: Vec<_> = reduce_samples()
        .into_iter()
        .filter(|a| a[0].tensors().iter().all(|t| t.dtype().is_float()))
        .collect();
    s.push(crate::args![&f64s(&[2, 0]), Some(1i64), false]);
    s
}

fn mean_errors() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let mut s = reduce_errors();
    s.push(crate::args![&i64s(&[3], 4), None::<i64>, false]);
    s
}

#[meta(op = "argmax")]
fn argmax_meta(x: &TensorMeta, dim: Option<i64>, keepdim: bool) -> Result<TensorMeta> {
    Ok(reduce_meta(x, dim, keepdim, true)?.with_dtype(DType::I64))
}

/// The index of the first maximum of `values` (NaN counts as the maximum).
fn first_max<T: PartialOrd + Copy>(values: impl Iterator<Item = T>) -> i64 {
    let mut best: Option<(usize, T)> = None;
    for (i, v) in values.enumerate() {
        let v_nan = v.partial_cmp(&v).is_none();
        match best {
            Some((_, b)) if b.partial_cmp(&b).is_none() => break,
            Some((_, b)) if !(v_nan || v > b) => {}
            _ => best = Some((i, v)),
        }
        if v_nan {
            break;
        }
    }
    best.map_or(0, |(i, _)| i as i64)
}

fn argmax_of<T: Element + PartialOrd>(
    a: &ArcArray<T, IxDyn>,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<Tensor> {
    let rank = a.ndim();
    match dim {
        Some(d) if rank > 0 => {
            let d = check_dim(d, rank)?;
            let r = a.map_axis(Axis(d), |lane| first_max(lane.iter().copied()));
            Ok(Tensor::from(if keepdim {
                r.insert_axis(Axis(d))
            } else {
                r
            }))
        }
        _ => {
            let shape = if keepdim { vec![1; rank] } else { Vec::new() };
            Ok(Tensor::from(ArrayD::from_elem(
                IxDyn(&shape),
                first_max(a.iter().copied()),
            )))
        }
    }
}

#[kernel(op = "argmax")]
fn argmax_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    crate::each_dtype!(x.data()?, a => argmax_of(a, dim, keepdim))
}

#[batching_rule(op = "argmax")]
fn argmax_rule(
    x: &Tensor,
    bdim: Option<usize>,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<(Tensor, Option<usize>)> {
    let (Some(b), None) = (bdim, dim) else {
        // Over one dim, the index along it is the same physical or logical.
        return reduce_dim(ops::argmax, x, bdim, dim, keepdim);
    };
    // Over all dims: the index into the flattened example, so flatten each
    // example, then restore keepdim's rank.
    let rank = x.ndim() - 1;
    let t = x.moved_dim(b, 0)?;
    let size = t.shape()[0] as i64;
    let flat = ops::reshape(&t, &[size, -1])?;
    let idx = ops::argmax(&flat, Some(1), false)?;
    let out = if keepdim {
        let mut shape = vec![size];
        shape.extend(std::iter::repeat_n(1, rank));
        ops::reshape(&idx, &shape)?
    } else {
        idx
    };
    Ok((out, Some(0)))
}

fn argmax_samples() -> Vec<crate::testing::Sample> {
    use crate::library::samples::*;
    let mut s = reduce_samples();
    s.push(crate::args![&bools(&[2, 3]), None::<i64>, true]);
    s.push(crate::args![&i64s(&[3, 2], 2), Some(0i64), false]);
    s
}

crate::op_samples!(
    op = "argmax",
    samples = argmax_samples,
    errors = amax_errors
);
crate::op_samples!(op = "amin", samples = reduce_samples, errors = amax_errors);
crate::op_samples!(op = "mean", samples = mean_samples, errors = mean_errors);
crate::op_samples!(op = "sum", samples = sum_samples, errors = reduce_errors);
crate::op_samples!(op = "amax", samples = reduce_samples, errors = amax_errors);
