//! Checks of reverse mode: vjps against finite differences, and the
//! composition matrix of vjp with vmap and with itself.

use crate::core::cast::cast;
use crate::registry::OpEntry;
use crate::{vjp, Arg, DType, Data, Error, Result, Tensor};

use super::derivative::{
    at_floats, batchings, check_derivative, check_op_with, example_inputs, labelled, stacked,
    vmapped, Mode, BATCH,
};
use super::{check_vmap, Mismatch};

/// The step and relative tolerance of the central differences, on inputs
/// converted to f64, for functions with f64 outputs.
pub(super) const STEP: f64 = 1e-5;
pub(super) const TOLERANCE: f64 = 1e-6;
/// The same for a function with an f32 output (a dtype conversion inside):
/// its rounding (about 1e-7 relative) needs a longer step.
pub(super) const STEP_F32: f64 = 1e-2;
pub(super) const TOLERANCE_F32: f64 = 1e-3;

/// A per-example function as the checks take it: tensors in, tensors out.
pub(super) type TensorFn<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

/// Deterministic pseudo-random values in `[-1, 1)` for a shape, from a seed
/// (the same shape and seed give the same tensor, inside a transform too,
/// where it is an unbatched constant).
pub(super) fn probe(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut s = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x632B_E59B_D9B4_E019)
        | 1;
    let values: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect();
    match dtype {
        DType::F32 => Tensor::from_shape_vec(shape, values.iter().map(|&v| v as f32).collect()),
        DType::F64 => Tensor::from_shape_vec(shape, values),
        other => zeros_of(shape, other),
    }
}

pub(super) fn zeros_of(shape: &[usize], dtype: DType) -> Result<Tensor> {
    crate::each_dtype!(type dtype, T => {
        let n: usize = shape.iter().product();
        Tensor::from_shape_vec::<T>(shape, vec![T::default(); n])
    })
}

/// `t` with float elements converted to f64 (other dtypes as they are).
pub(super) fn to_f64(t: &Tensor) -> Result<Tensor> {
    if t.dtype() != DType::F32 {
        return Ok(t.clone());
    }
    Ok(Tensor::from_data(cast(t, DType::F64)?.into_owned()))
}

/// The elements of `t` as f64, in row-major order.
pub(super) fn values(t: &Tensor) -> Result<Vec<f64>> {
    match &*cast(t, DType::F64)? {
        Data::F64(a) => Ok(a.iter().copied().collect()),
        other => Err(Error::Tensor(format!(
            "values: expected f64 data, got {}",
            other.dtype()
        ))),
    }
}

pub(super) fn dot(a: &Tensor, b: &Tensor) -> Result<f64> {
    Ok(values(a)?.iter().zip(values(b)?).map(|(x, y)| x * y).sum())
}

/// Whether every float tensor of `ts` holds only finite values: derivatives
/// are compared only at such points (NaN and infinity samples test
/// propagation, not derivatives).
pub(super) fn finite(ts: &[Tensor]) -> Result<bool> {
    for t in ts.iter().filter(|t| t.dtype().is_float()) {
        if !values(t)?.iter().all(|v| v.is_finite()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `x + t * v` for an f64 tensor.
pub(super) fn shifted(x: &Tensor, v: &Tensor, t: f64) -> Result<Tensor> {
    let (Data::F64(a), Data::F64(d)) = (x.data()?, v.data()?) else {
        return Err(Error::Tensor("shifted: f64 tensors expected".to_string()));
    };
    Ok(Tensor::from(a.to_owned() + &d.mapv(|e| e * t)))
}

pub(super) fn cotangents(outputs: &[Tensor], seed: u64) -> Result<Vec<Tensor>> {
    outputs
        .iter()
        .enumerate()
        .map(|(i, y)| {
            if y.dtype().is_float() {
                probe(y.shape(), y.dtype(), seed + i as u64)
            } else {
                zeros_of(y.shape(), y.dtype())
            }
        })
        .collect()
}

/// A point at which derivatives are compared: the inputs (floats converted
/// to f64), the indices of the float ones, the outputs and the pullback.
pub(super) struct Point {
    pub(super) x: Vec<Tensor>,
    pub(super) float: Vec<usize>,
    pub(super) y: Vec<Tensor>,
    pub(super) pullback: crate::VjpFn<Vec<Tensor>, Vec<Tensor>>,
    /// Whether an output is f32 (a conversion inside): a longer step.
    pub(super) f32_output: bool,
}

/// Why a check compared nothing: no float input or output.
pub(super) const NO_FLOAT: &str =
    "the function has no float input or no float output, so there is no derivative to compare";
/// Why a check compared nothing: a value at the point is not finite.
pub(super) const NOT_FINITE: &str = "an input or output is NaN or infinite at these inputs \
     (such points test how NaN propagates, not derivatives); check at finite inputs where the \
     function is finite";
/// Why a check compared nothing: every direction's finite differences failed.
pub(super) const NO_FINITE_DIFFERENCE: &str = "along every direction, a step of the central \
     differences gave an error or a value that is not finite (the inputs are at, or within a \
     step of, the edge of the function's domain, as log at 0); check at inputs farther inside it";

/// What a comparison with finite differences did: how many directions it
/// compared, and, if none, why.
#[derive(Clone, Copy, Debug)]
pub(super) struct Compared {
    pub(super) directions: usize,
    pub(super) why_none: &'static str,
}

impl Compared {
    pub(super) fn none(why: &'static str) -> Self {
        Compared {
            directions: 0,
            why_none: why,
        }
    }

    /// The count, for a public check that must have compared something: a
    /// check that compared nothing is an error saying why, never `Ok(0)`.
    pub(super) fn required(self, what: &str) -> std::result::Result<usize, Mismatch> {
        if self.directions == 0 {
            return Err(Mismatch {
                case: what.to_string(),
                detail: format!("nothing was checked: {}", self.why_none),
            });
        }
        Ok(self.directions)
    }
}

/// `f` at `inputs` as a [`Point`], or why there is no derivative to compare:
/// no float input or output ([`NO_FLOAT`]), or a value that is not finite
/// ([`NOT_FINITE`]: NaN and infinity samples test propagation, not
/// derivatives).
pub(super) fn point(
    f: &TensorFn<'_>,
    inputs: &[Tensor],
) -> Result<std::result::Result<Point, &'static str>> {
    let x: Vec<Tensor> = inputs.iter().map(to_f64).collect::<Result<_>>()?;
    let float: Vec<usize> = (0..x.len()).filter(|&i| x[i].dtype().is_float()).collect();
    let (y, pullback) = vjp(|xs: Vec<Tensor>| f(&xs), &x)?;
    if float.is_empty() || !y.iter().any(|t| t.dtype().is_float()) {
        return Ok(Err(NO_FLOAT));
    }
    if !finite(&x)? || !finite(&y)? {
        return Ok(Err(NOT_FINITE));
    }
    let f32_output = y.iter().any(|t| t.dtype() == DType::F32);
    Ok(Ok(Point {
        x,
        float,
        y,
        pullback,
        f32_output,
    }))
}

/// The directions checked: every float input at once, then each alone.
pub(super) fn directions(float: &[usize]) -> Vec<Vec<usize>> {
    let mut directions = vec![float.to_vec()];
    if float.len() > 1 {
        directions.extend(float.iter().map(|&i| vec![i]));
    }
    directions
}

/// Checks the vjp of `f` at `inputs` against central finite differences.
///
/// Float inputs are converted to f64. A random cotangent `u` of the outputs
/// is pulled back to gradients `g`; for random directions `v` (all float
/// inputs at once, then each input alone), `⟨g, v⟩` must equal the
/// derivative of `⟨u, f(x + t v)⟩` at `t = 0` by central differences. Random
/// projections keep it at two evaluations of `f` per direction, whatever the
/// sizes.
///
/// Returns the number of directions compared. A direction whose central
/// differences are not finite (a step leaves the function's domain) is
/// skipped and not counted; if no direction can be compared (no float input
/// or output, a NaN or infinity at `inputs`, or every direction skipped), the
/// result is a [`Mismatch`] that says why, not `Ok(0)`.
///
/// ```
/// use batchrules::{ops, testing::check_grad, Tensor};
///
/// let x = Tensor::from(ndarray::array![0.5f64, -1.0, 2.0].into_dyn());
/// let n = check_grad(|xs| Ok(vec![ops::tanh(&xs[0])?]), &[x])?;
/// assert!(n >= 1);
/// # Ok::<(), batchrules::testing::Mismatch>(())
/// ```
pub fn check_grad<F>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    check_derivative(&f, inputs, "vjp", Mode::Reverse)?.required("vjp")
}

/// The vjp of `f` as a function: inputs to the gradients of `⟨u, f(x)⟩`, for
/// a cotangent `u` fixed by the outputs' shapes.
pub(super) fn pulled_back<'a>(
    f: &'a TensorFn<'a>,
    seed: u64,
) -> impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a {
    move |xs: &[Tensor]| {
        let (y, pullback) = vjp(|xs: Vec<Tensor>| f(&xs), &xs.to_vec())?;
        let u = cotangents(&y, seed)?;
        let g = pullback.call(&u)?;
        Ok(at_floats(g, xs))
    }
}

/// The composition matrix of reverse mode with vmap and with itself, for one
/// per-example function:
///
/// - **vmap∘vjp**: `vmap` of the pullback equals the loop of per-example
///   pullbacks, for every in_dims combination and batch size of
///   [`check_vmap`] (nested vmap too);
/// - **vjp∘vmap**: the pullback of `vmap(f)` equals the per-example
///   pullbacks, stacked for batched inputs and summed for unbatched ones;
/// - **vjp∘vjp**: the vjp of the pullback (second order) against finite
///   differences ([`check_grad`] of the gradient map);
/// - **vmap∘vjp∘vjp**: `vmap` of the second-order pullback equals the loop.
///
/// Run it under [`FallbackPolicy::Error`](crate::FallbackPolicy) to require
/// a batching rule for every op the derivatives call. Returns the number of
/// cases checked.
pub fn check_grad_compositions<F>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let f: &TensorFn<'_> = &f;
    let first = pulled_back(f, 201);
    if !inputs.iter().any(|t| t.dtype().is_float()) {
        return Ok(0);
    }
    let mut cases = check_vmap(&first, inputs).map_err(labelled("vmap∘vjp"))?;
    cases += check_vjp_of_vmap(f, inputs).map_err(labelled("vjp∘vmap"))?;
    cases += check_derivative(&first, inputs, "vjp∘vjp", Mode::Reverse)?.directions;
    let second = pulled_back(&first, 301);
    cases += check_vmap(&second, inputs).map_err(labelled("vmap∘vjp∘vjp"))?;
    Ok(cases)
}

/// vjp∘vmap: every input batched (at dim 0, batch of 3) or unbatched in turn.
fn check_vjp_of_vmap(f: &TensorFn<'_>, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch> {
    let mut cases = 0;
    let n = inputs.len();
    for batched in batchings(n) {
        let case = format!("batched inputs {batched:?}, batch size {BATCH}");
        let fail = |detail: String| Mismatch {
            case: case.clone(),
            detail,
        };
        let err = |e: Error| fail(e.to_string());
        let examples: Vec<Vec<Tensor>> = (0..BATCH)
            .map(|k| example_inputs(inputs, &batched, k))
            .collect::<Result<_>>()
            .map_err(err)?;
        let (stacked, dims) = stacked(&examples, &batched).map_err(err)?;
        // Per-example cotangents, stacked for the batched function.
        let per_example: Vec<(Vec<Tensor>, Vec<Tensor>)> = examples
            .iter()
            .enumerate()
            .map(|(k, xs)| {
                let (y, pullback) = vjp(|xs: Vec<Tensor>| f(&xs), xs)?;
                let u = cotangents(&y, 400 + k as u64)?;
                Ok((u.clone(), pullback.call(&u)?))
            })
            .collect::<Result<_>>()
            .map_err(err)?;
        let outputs = per_example[0].0.len();
        let big_u: Vec<Tensor> = (0..outputs)
            .map(|j| {
                let col: Vec<Tensor> = per_example.iter().map(|(u, _)| u[j].clone()).collect();
                Tensor::stack_dense(&col, 0)
            })
            .collect::<Result<_>>()
            .map_err(err)?;
        let (_, pullback) = vjp(vmapped(f, &dims), &stacked).map_err(err)?;
        let got = pullback.call(&big_u).map_err(err)?;
        for i in 0..n {
            if !stacked[i].dtype().is_float() {
                continue;
            }
            let grads: Vec<Tensor> = per_example.iter().map(|(_, g)| g[i].clone()).collect();
            let want = if batched[i] {
                Tensor::stack_dense(&grads, 0).map_err(err)?
            } else {
                let mut acc = values(&grads[0]).map_err(err)?;
                for g in &grads[1..] {
                    for (a, b) in acc.iter_mut().zip(values(g).map_err(err)?) {
                        *a += b;
                    }
                }
                Tensor::from_shape_vec(grads[0].shape(), acc).map_err(err)?
            };
            if let Some(d) = super::values_differ(&got[i], &want).map_err(err)? {
                return Err(fail(format!("gradient of input {i}: {d}")));
            }
            if got[i].shape() != want.shape() {
                return Err(fail(format!(
                    "gradient of input {i} has shape {:?}, the loop {:?}",
                    got[i].shape(),
                    want.shape()
                )));
            }
        }
        cases += 1;
    }
    Ok(cases)
}

/// [`check_grad`] and [`check_grad_compositions`] for one op called with one
/// sample (its float inputs converted to f64). Ops that are not
/// differentiable, or whose sample has no float input or output, check
/// nothing and return 0.
pub fn check_op_grad(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
) -> std::result::Result<usize, Mismatch> {
    check_op_with(entry, sample, |f, tensors| {
        // A sample may sit at a kink or hold a NaN on purpose: it then
        // compares fewer directions, or none, and the sweep counts what it
        // did compare.
        let n = check_derivative(f, tensors, "vjp", Mode::Reverse)?.directions;
        Ok(n + check_grad_compositions(f, tensors)?)
    })
}
