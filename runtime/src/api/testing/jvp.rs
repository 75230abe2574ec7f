//! Checks of forward mode: jvps against finite differences and against the
//! vjps (⟨u, J v⟩ = ⟨Jᵀ u, v⟩), the composition matrix of jvp with vmap and
//! with vjp, and forward Jacobians against reverse ones.

use crate::core::cast::cast;
use crate::forward::jvp_with_constants;
use crate::registry::OpEntry;
use crate::{jacfwd, jacrev, Arg, DType, Error, Result, Tensor};

use super::derivative::{
    at_floats, batchings, check_derivative, check_op_with, example_inputs, labelled, stacked,
    tangent_of, vmapped, Mode, BATCH,
};
use super::derivative::{finite, probe, to_f64, Compared, TensorFn, NOT_FINITE, NO_FLOAT};
use super::grad::pulled_back;
use super::{check_vmap, Mismatch};

/// Checks the jvp of `f` at `inputs` against central finite differences and
/// against its vjp.
///
/// Float inputs are converted to f64. For random tangent directions `v` (all
/// float inputs at once, then each input alone) and a random cotangent `u`
/// of the outputs, `⟨u, J v⟩` from the jvp must equal the derivative of
/// `⟨u, f(x + t v)⟩` at `t = 0` by central differences, and equal `⟨Jᵀ u,
/// v⟩` from the vjp to rounding.
///
/// Returns the number of directions compared with finite differences. A
/// direction whose central differences cannot be evaluated (a step leaves the
/// function's domain) is skipped and not counted, though its jvp is still
/// compared with the vjp; if no direction can be compared (no float input or
/// output, a NaN or infinity at `inputs`, or every direction skipped), the
/// result is a [`Mismatch`] that says why, not `Ok(0)`.
///
/// ```
/// use batchrules::{ops, testing::check_jvp, Tensor};
///
/// let x = Tensor::from(ndarray::array![0.5f64, -1.0, 2.0].into_dyn());
/// let n = check_jvp(|xs| Ok(vec![ops::tanh(&xs[0])?]), &[x])?;
/// assert!(n >= 1);
/// # Ok::<(), batchrules::testing::Mismatch>(())
/// ```
pub fn check_jvp<F>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    check_derivative(&f, inputs, "jvp", Mode::Forward)?.required("jvp")
}

/// The jvp of `f` as a function of the inputs and the tangents of its float
/// inputs (`xs` = inputs ++ one tangent per float input): the tangents of
/// `f`'s float outputs.
fn pushed_forward<'a>(
    f: &'a TensorFn<'a>,
    float: &'a [bool],
) -> impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a {
    move |xs: &[Tensor]| {
        let (x, given) = xs.split_at(float.len());
        let mut given = given.iter();
        let v: Vec<Tensor> = x
            .iter()
            .zip(float)
            .map(|(x, &is_float)| {
                if is_float {
                    given.next().cloned().ok_or_else(|| {
                        Error::Tensor("pushed_forward: a tangent is missing".to_string())
                    })
                } else {
                    Ok(x.clone())
                }
            })
            .collect::<Result<_>>()?;
        let (y, dy) = jvp_with_constants(|xs: Vec<Tensor>| f(&xs), &x.to_vec(), &v)?;
        Ok(at_floats(dy, &y))
    }
}

/// The composition matrix of forward mode with vmap and with reverse mode,
/// for one per-example function:
///
/// - **vmap∘jvp**: `vmap` of the jvp (inputs and tangents batched in every
///   in_dims combination of [`check_vmap`], nested vmap too) equals the loop
///   of per-example jvps;
/// - **jvp∘vmap**: the jvp of `vmap(f)` equals the per-example jvps, stacked;
/// - **jvp∘vjp**: the jvp of the pullback (forward over reverse, as
///   Hessian-vector products are computed) against finite differences and
///   against the vjp of the pullback ([`check_jvp`] of the gradient map);
/// - **vmap∘jvp∘vjp**: `vmap` of that forward-over-reverse map equals the loop.
///
/// Run it under [`FallbackPolicy::Error`](crate::FallbackPolicy) to require
/// a batching rule for every op the derivatives call. Returns the number of
/// cases checked.
pub fn check_jvp_compositions<F>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let f: &TensorFn<'_> = &f;
    if !inputs.iter().any(|t| t.dtype().is_float()) {
        return Ok(0);
    }
    let float: Vec<bool> = inputs.iter().map(|t| t.dtype().is_float()).collect();
    let with_tangents = |xs: &[Tensor], seed: u64| -> Result<Vec<Tensor>> {
        let mut all = xs.to_vec();
        for (i, x) in xs.iter().enumerate().filter(|(_, x)| x.dtype().is_float()) {
            all.push(probe(x.shape(), x.dtype(), seed + i as u64)?);
        }
        Ok(all)
    };
    let err = |e: Error| Mismatch {
        case: "tangents".to_string(),
        detail: e.to_string(),
    };
    let pushed = pushed_forward(f, &float);
    let mut cases = check_vmap(&pushed, &with_tangents(inputs, 3000).map_err(err)?)
        .map_err(labelled("vmap∘jvp"))?;
    cases += check_jvp_of_vmap(f, inputs).map_err(labelled("jvp∘vmap"))?;
    let first = pulled_back(f, 601);
    cases += check_derivative(&first, inputs, "jvp∘vjp", Mode::Forward)?.directions;
    let second = pushed_forward(&first, &float);
    cases += check_vmap(&second, &with_tangents(inputs, 3100).map_err(err)?)
        .map_err(labelled("vmap∘jvp∘vjp"))?;
    Ok(cases)
}

/// jvp∘vmap: every input batched (at dim 0, batch of 3) or unbatched in turn;
/// an unbatched input has one tangent for the whole batch.
fn check_jvp_of_vmap(f: &TensorFn<'_>, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch> {
    let mut cases = 0;
    for batched in batchings(inputs.len()) {
        let case = format!("batched inputs {batched:?}, batch size {BATCH}");
        let fail = |detail: String| Mismatch {
            case: case.clone(),
            detail,
        };
        let err = |e: Error| fail(e.to_string());
        // Example k's inputs and tangents; an unbatched input (and its
        // tangent) is example 0's for every k.
        let example = |k: usize| -> Result<(Vec<Tensor>, Vec<Tensor>)> {
            let xs = example_inputs(inputs, &batched, k)?;
            let vs = xs
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let k = if batched[i] { k } else { 0 };
                    tangent_of(x, 4000 + 10 * k as u64 + i as u64)
                })
                .collect::<Result<_>>()?;
            Ok((xs, vs))
        };
        let (inputs_of, tangents_of): (Vec<Vec<Tensor>>, Vec<Vec<Tensor>>) = (0..BATCH)
            .map(example)
            .collect::<Result<Vec<_>>>()
            .map_err(err)?
            .into_iter()
            .unzip();
        let (xs, dims) = stacked(&inputs_of, &batched).map_err(err)?;
        let (vs, _) = stacked(&tangents_of, &batched).map_err(err)?;
        let (_, got) = jvp_with_constants(vmapped(f, &dims), &xs, &vs).map_err(err)?;
        let per_example: Vec<Vec<Tensor>> = inputs_of
            .iter()
            .zip(&tangents_of)
            .map(|(x, v)| jvp_with_constants(|xs: Vec<Tensor>| f(&xs), x, v).map(|(_, d)| d))
            .collect::<Result<_>>()
            .map_err(err)?;
        for (j, got) in got.iter().enumerate() {
            let col: Vec<Tensor> = per_example.iter().map(|d| d[j].clone()).collect();
            let want = Tensor::stack_dense(&col, 0).map_err(err)?;
            if got.shape() != want.shape() {
                return Err(fail(format!(
                    "tangent of output {j} has shape {:?}, the loop {:?}",
                    got.shape(),
                    want.shape()
                )));
            }
            if let Some(d) = super::values_differ(got, &want).map_err(err)? {
                return Err(fail(format!("tangent of output {j}: {d}")));
            }
        }
        cases += 1;
    }
    Ok(cases)
}

/// `jacfwd` against `jacrev` for each float input and float output of `f` at
/// `inputs` (converted to f64), the other inputs held fixed.
///
/// Returns the number of (input, output) pairs compared. If it can compare
/// none (no float input or output, or a NaN or infinity at `inputs`, where
/// the two orders of products propagate NaN differently), the result is a
/// [`Mismatch`] that says why, not `Ok(0)`.
pub fn check_jacobians<F>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    check_jacobians_dyn(&f, inputs)?.required("jacobians")
}

/// [`check_jacobians`]'s comparison, reporting how many pairs it compared
/// (for the per-op sweeps, where a sample may hold a NaN on purpose).
fn check_jacobians_dyn(
    f: &TensorFn<'_>,
    inputs: &[Tensor],
) -> std::result::Result<Compared, Mismatch> {
    let fail = |case: String, detail: String| Mismatch { case, detail };
    let x: Vec<Tensor> = inputs
        .iter()
        .map(to_f64)
        .collect::<Result<_>>()
        .map_err(|e| fail("jacobians".to_string(), e.to_string()))?;
    let y = f(&x).map_err(|e| fail("jacobians".to_string(), e.to_string()))?;
    // Where a value is not finite the two orders of products propagate NaN
    // differently; such points test propagation, not derivatives.
    let at_finite = finite(&x).and_then(|a| Ok(a && finite(&y)?));
    if !at_finite.map_err(|e| fail("jacobians".to_string(), e.to_string()))? {
        return Ok(Compared::none(NOT_FINITE));
    }
    let mut cases = 0;
    for i in (0..x.len()).filter(|&i| x[i].dtype().is_float()) {
        for j in (0..y.len()).filter(|&j| y[j].dtype().is_float()) {
            let case = format!("jacfwd against jacrev, input {i}, output {j}");
            let err = |e: Error| fail(case.clone(), e.to_string());
            let fi = |xi: Tensor| -> Result<Tensor> {
                let mut xs = x.clone();
                xs[i] = xi;
                let mut ys = f(&xs)?;
                Ok(ys.swap_remove(j))
            };
            let fwd = jacfwd(fi).call(&x[i]).map_err(err)?;
            let rev = jacrev(fi).call(&x[i]).map_err(err)?;
            if fwd.shape() != rev.shape() {
                return Err(fail(
                    case,
                    format!(
                        "jacfwd has shape {:?}, jacrev {:?}",
                        fwd.shape(),
                        rev.shape()
                    ),
                ));
            }
            // jacfwd has the output's dtype (tangents are pushed forward),
            // jacrev the input's (cotangents are pulled back): where a
            // conversion sits between, compare at the lower precision.
            let (fwd, rev) = if fwd.dtype() == rev.dtype() {
                (fwd, rev)
            } else {
                let low =
                    |t: &Tensor| cast(t, DType::F32).map(|d| Tensor::from_data(d.into_owned()));
                (low(&fwd).map_err(err)?, low(&rev).map_err(err)?)
            };
            if let Some(d) = super::values_differ(&fwd, &rev).map_err(err)? {
                return Err(fail(case, format!("(vmap = jacfwd, loop = jacrev) {d}")));
            }
            cases += 1;
        }
    }
    Ok(Compared {
        directions: cases,
        why_none: NO_FLOAT,
    })
}

/// [`check_jvp`], [`check_jvp_compositions`] and [`check_jacobians`] for one
/// op called with one sample (its float inputs converted to f64). Ops that
/// are not differentiable, or whose sample has no float input or output,
/// check nothing and return 0.
pub fn check_op_jvp(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
) -> std::result::Result<usize, Mismatch> {
    check_op_with(entry, sample, |f, tensors| {
        // A sample may sit at a kink or hold a NaN on purpose: it then
        // compares fewer directions, or none, and the sweep counts what it
        // did compare.
        let mut n = check_derivative(f, tensors, "jvp", Mode::Forward)?.directions;
        n += check_jvp_compositions(f, tensors)?;
        Ok(n + check_jacobians_dyn(f, tensors)?.directions)
    })
}
