//! The checking core that both modes share: one comparison of a derivative
//! with central finite differences (the vjp's `⟨Jᵀ u, v⟩`, or the jvp's
//! `⟨u, J v⟩` checked against the vjp too), the batches of the `*∘vmap`
//! checks, the per-op wrapper of the sweeps, and what both modes measure
//! with (steps and tolerances, probe tensors, the comparison at one point).
//! [`check_grad`] and [`check_jvp`] are this core in one mode each; `grad.rs`
//! and `jvp.rs` import it from here (and `jvp.rs` takes the vjp as a function,
//! `pulled_back`, from `grad.rs`), so the three files form no circle.
//!
//! [`check_grad`]: super::check_grad
//! [`check_jvp`]: super::check_jvp

use crate::core::cast::cast;
use crate::dispatch::call_op;
use crate::forward::jvp_with_constants;
use crate::registry::OpEntry;
use crate::schema::OpKind;
use crate::{vjp, vmap, Arg, DType, Data, Error, Result, Tensor};

use super::Mismatch;

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
pub(crate) fn probe(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
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
                let (y_fwd, dy) =
                    jvp_with_constants(|xs: Vec<Tensor>| f(&xs), &x, &v).map_err(err)?;
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
