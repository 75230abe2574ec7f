//! The checking core that both modes share: one comparison of a derivative
//! with central finite differences (the vjp's `⟨Jᵀ u, v⟩`, or the jvp's
//! `⟨u, J v⟩` checked against the vjp too), the batches of the `*∘vmap`
//! checks, and the per-op wrapper of the sweeps. [`check_grad`] and
//! [`check_jvp`] are this core in one mode each.
//!
//! [`check_grad`]: super::check_grad
//! [`check_jvp`]: super::check_jvp

use crate::dispatch::call_op;
use crate::registry::OpEntry;
use crate::schema::OpKind;
use crate::{jvp, vmap, Arg, Error, Result, Tensor};

use super::grad::{
    cotangents, directions, dot, point, probe, shifted, to_f64, zeros_of, Compared, Point,
    TensorFn, NO_FINITE_DIFFERENCE, STEP, STEP_F32, TOLERANCE, TOLERANCE_F32,
};
use super::Mismatch;

/// The relative tolerance of ⟨u, J v⟩ = ⟨Jᵀ u, v⟩: both sides are exact up to
/// the rounding of two different orders of summation.
const TRANSPOSE_TOLERANCE: f64 = 1e-8;
const TRANSPOSE_TOLERANCE_F32: f64 = 1e-4;

/// The derivative a check compares with finite differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// The vjp: `⟨Jᵀ u, v⟩`.
    Reverse,
    /// The jvp: `⟨u, J v⟩`, which must also equal the vjp's `⟨Jᵀ u, v⟩`.
    Forward,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Reverse => "vjp",
            Mode::Forward => "jvp",
        }
    }

    /// The seeds of the cotangent and of the directions: each mode probes
    /// its own.
    fn seeds(self) -> (u64, u64, u64) {
        match self {
            Mode::Reverse => (101, 1000, 17),
            Mode::Forward => (501, 2000, 31),
        }
    }
}

/// A tangent for `x`: a probe direction from `seed` for a float input, the
/// input itself for an integer or bool one (jvp ignores those).
pub(super) fn tangent_of(x: &Tensor, seed: u64) -> Result<Tensor> {
    if x.dtype().is_float() {
        probe(x.shape(), x.dtype(), seed)
    } else {
        Ok(x.clone())
    }
}

/// The tangents of `xs`: a probe direction for the float inputs in `which`,
/// zeros for the other float inputs.
fn tangents(xs: &[Tensor], which: &[usize], seed: u64) -> Result<Vec<Tensor>> {
    xs.iter()
        .enumerate()
        .map(|(i, x)| {
            if x.dtype().is_float() && !which.contains(&i) {
                zeros_of(x.shape(), x.dtype())
            } else {
                tangent_of(x, seed + i as u64)
            }
        })
        .collect()
}

/// Whether `a` and `b` agree to `tolerance`, relative to the larger of them
/// plus one; written so that a NaN on either side disagrees.
fn agree(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * (1.0 + a.abs().max(b.abs()))
}

/// The comparison of [`check_grad`](super::check_grad) (`mode` reverse) and
/// [`check_jvp`](super::check_jvp) (forward): for random directions `v` (all
/// float inputs at once, then each alone) and a random cotangent `u`, the
/// mode's `⟨u, J v⟩` against the derivative of `⟨u, f(x + t v)⟩` at `t = 0`
/// by central differences. Reports how many directions it compared (a
/// direction whose steps leave the function's domain is skipped).
pub(super) fn check_derivative(
    f: &TensorFn<'_>,
    inputs: &[Tensor],
    what: &str,
    mode: Mode,
) -> std::result::Result<Compared, Mismatch> {
    let fail = |detail: String| Mismatch {
        case: what.to_string(),
        detail,
    };
    let err = |e: Error| fail(e.to_string());
    let Point {
        x,
        float,
        y,
        pullback,
        f32_output,
    } = match point(f, inputs).map_err(err)? {
        Ok(point) => point,
        Err(why) => return Ok(Compared::none(why)),
    };
    let (step, tolerance, transpose_tolerance) = if f32_output {
        (STEP_F32, TOLERANCE_F32, TRANSPOSE_TOLERANCE_F32)
    } else {
        (STEP, TOLERANCE, TRANSPOSE_TOLERANCE)
    };
    let (u_seed, v_seed, v_stride) = mode.seeds();
    let u = cotangents(&y, u_seed).map_err(err)?;
    let g = pullback.call(&u).map_err(err)?;
    let project = |ys: &[Tensor]| -> Result<f64> {
        ys.iter()
            .zip(&u)
            .filter(|(y, _)| y.dtype().is_float())
            .map(|(y, u)| dot(y, u))
            .sum()
    };
    let mut compared = 0;
    for (k, which) in directions(&float).iter().enumerate() {
        let v = tangents(&x, which, v_seed + v_stride * k as u64).map_err(err)?;
        let reverse: f64 = g
            .iter()
            .zip(&v)
            .zip(&x)
            .filter(|(_, x)| x.dtype().is_float())
            .map(|((g, v), _)| dot(g, v))
            .sum::<Result<f64>>()
            .map_err(err)?;
        let analytic = match mode {
            Mode::Reverse => reverse,
            Mode::Forward => {
                let (y_fwd, dy) = jvp(|xs: Vec<Tensor>| f(&xs), &x, &v).map_err(err)?;
                for (i, (a, b)) in y_fwd.iter().zip(&y).enumerate() {
                    if let Some(d) = super::values_differ(a, b).map_err(err)? {
                        return Err(fail(format!(
                            "direction {k}: output {i} of jvp differs from the plain call: {d}"
                        )));
                    }
                }
                let forward = project(&dy).map_err(err)?;
                if !agree(forward, reverse, transpose_tolerance) {
                    return Err(fail(format!(
                        "direction {k} (inputs {which:?}): ⟨u, J v⟩ = {forward:.12e} from the \
                         jvp, but ⟨Jᵀ u, v⟩ = {reverse:.12e} from the vjp"
                    )));
                }
                forward
            }
        };
        let at = |t: f64| -> Result<Vec<Tensor>> {
            x.iter()
                .zip(&v)
                .map(|(x, v)| {
                    if x.dtype().is_float() {
                        shifted(x, v, t)
                    } else {
                        Ok(x.clone())
                    }
                })
                .collect()
        };
        let plus = f(&at(step).map_err(err)?).and_then(|ys| project(&ys));
        let minus = f(&at(-step).map_err(err)?).and_then(|ys| project(&ys));
        let (Ok(plus), Ok(minus)) = (plus, minus) else {
            // A step that leaves the op's domain: no difference to compare.
            continue;
        };
        if !plus.is_finite() || !minus.is_finite() {
            continue;
        }
        let numeric = (plus - minus) / (2.0 * step);
        if !agree(numeric, analytic, tolerance) {
            return Err(fail(format!(
                "direction {k} (inputs {which:?}): the {} gives {analytic:.12e}, central \
                 differences {numeric:.12e}",
                mode.name()
            )));
        }
        compared += 1;
    }
    Ok(Compared {
        directions: compared,
        why_none: NO_FINITE_DIFFERENCE,
    })
}

/// The batch size of the `*∘vmap` checks.
pub(super) const BATCH: usize = 3;

/// The batchings of the `*∘vmap` checks: every input batched, then (with
/// several inputs) each input unbatched alone.
pub(super) fn batchings(n: usize) -> Vec<Vec<bool>> {
    let mut choices: Vec<Vec<bool>> = vec![vec![true; n]];
    if n > 1 {
        choices.extend((0..n).map(|i| (0..n).map(|j| j != i).collect()));
    }
    choices
}

/// The inputs of example `k` (floats converted to f64): an unbatched input is
/// example 0's for every `k`.
pub(super) fn example_inputs(inputs: &[Tensor], batched: &[bool], k: usize) -> Result<Vec<Tensor>> {
    inputs
        .iter()
        .zip(batched)
        .map(|(t, &b)| super::example(&to_f64(t)?, if b { k } else { 0 }))
        .collect()
}

/// Input `i` of every example, stacked along dim 0 if it is batched, else
/// example 0's; and the in_dims that say so.
pub(super) fn stacked(
    per_example: &[Vec<Tensor>],
    batched: &[bool],
) -> Result<(Vec<Tensor>, Vec<Option<i64>>)> {
    let xs = (0..batched.len())
        .map(|i| {
            if batched[i] {
                let col: Vec<Tensor> = per_example.iter().map(|e| e[i].clone()).collect();
                Tensor::stack_dense(&col, 0)
            } else {
                Ok(per_example[0][i].clone())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((xs, batched.iter().map(|&b| b.then_some(0)).collect()))
}

/// `vmap(f)` with these in_dims, as a function of all the inputs.
pub(super) fn vmapped<'a>(
    f: &'a TensorFn<'a>,
    dims: &'a [Option<i64>],
) -> impl Fn(Vec<Tensor>) -> Result<Vec<Tensor>> + 'a {
    move |xs: Vec<Tensor>| {
        vmap(|xs: Vec<Tensor>| f(&xs))
            .in_dims(dims.to_vec())
            .call(&xs)
    }
}

/// The entries of `ts` whose counterpart in `of` is a float tensor: only
/// those carry derivatives.
pub(super) fn at_floats(ts: Vec<Tensor>, of: &[Tensor]) -> Vec<Tensor> {
    ts.into_iter()
        .zip(of)
        .filter(|(_, o)| o.dtype().is_float())
        .map(|(t, _)| t)
        .collect()
}

/// A [`Mismatch`] from a part of a composition matrix, its case prefixed by
/// the part's name.
pub(super) fn labelled(what: &'static str) -> impl Fn(Mismatch) -> Mismatch {
    move |m: Mismatch| Mismatch {
        case: format!("{what}: {}", m.case),
        detail: m.detail,
    }
}

/// Runs `check` on op `entry` called with one sample (the function of its
/// tensors, and the tensors), naming the op and the sample in a mismatch.
/// Ops that are not differentiable check nothing and return 0.
pub(super) fn check_op_with(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
    check: impl FnOnce(&TensorFn<'_>, &[Tensor]) -> std::result::Result<usize, Mismatch>,
) -> std::result::Result<usize, Mismatch> {
    if entry.schema.kind == OpKind::Primitive && !entry.schema.differentiable {
        return Ok(0);
    }
    let f = |ts: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(call_op(entry, &super::with_tensors(sample, ts)?)?.into_vec())
    };
    check(&f, &super::sample_tensors(sample)).map_err(|m| Mismatch {
        case: format!("{} {}: {}", entry.name(), super::describe(sample), m.case),
        detail: m.detail,
    })
}
