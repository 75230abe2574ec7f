//! Checks of reverse mode: vjps against finite differences, and the
//! composition matrix of vjp with vmap and with itself.

use crate::registry::OpEntry;
use crate::{vjp, Arg, Error, Result, Tensor};

use super::derivative::{
    at_floats, batchings, check_derivative, check_op_with, cotangents, example_inputs, labelled,
    stacked, values, vmapped, Mode, TensorFn, BATCH,
};
use super::{check_vmap, Mismatch};

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
