//! The jvps (forward-mode derivatives) of the differentiable primitives that
//! are not linear, one file per op family. The linear ops (`linear = true` in
//! their table: `add`, `sum`, `reshape`, `cat`, ...) have no written jvp: the
//! op applied to the tangents is their jvp.
//!
//! Each jvp takes the op's kernel arguments, its result, and one tangent per
//! tensor-valued argument (`Option<&Tensor>`, `None` for a zero tangent: an
//! integer or bool operand, or an input the outer jvp does not vary), and
//! returns the tangent of the result (`None` when it is zero). The
//! interpreter calls a jvp only when at least one tangent is `Some`.
//!
//! Each is registered with `#[jvp(op = "...")]`, checked at compile time
//! against the op table. Every jvp is written with `ops::` calls only, so
//! under an outer `vmap` it is batched like any other code and under an outer
//! `grad` or `jvp` it is differentiated again (that is how forward-over-reverse
//! hessians work).
//!
//! The returned tangent has exactly the result's (logical) shape and dtype.
//! The helpers here keep it so: [`through`] computes one operand's
//! contribution from its tangent converted to the result's dtype (so a
//! promoting op such as `f32 * f64` gives an f64 tangent), [`add_tangents`]
//! sums the contributions with `None` as zero, and [`output`] broadcasts the
//! sum to the result's shape (the tangent of a broadcast operand that the
//! arithmetic did not broadcast, such as `maximum`'s where only one operand
//! varies) and converts it to the result's dtype.
//!
//! At points where an op has no derivative each jvp is the exact transpose
//! of the op's vjp, because both apply the same factor from
//! `library/derivative.rs`: `abs` and `relu` give 0 at 0;
//! `maximum`/`minimum` give half of each operand's tangent on a tie (so
//! `(ta + tb) / 2`); `amax`/`amin` give the mean of the tangents of the tied
//! extreme elements; `clamp` passes the tangent where `min < x < max` (0 at
//! exactly a bound, as PyTorch) and 0 where a bound clipped `x`.

use crate::batching::shape_arg;
use crate::library::derivative::as_dtype_of;
use crate::{ops, Result, Tensor};

mod linalg;
mod pointwise;
mod pooling;
mod reduce;

/// The sum of two tangent contributions, `None` being zero.
fn add_tangents(a: Option<Tensor>, b: Option<Tensor>) -> Result<Option<Tensor>> {
    match (a, b) {
        (Some(a), Some(b)) => ops::add(&a, &b).map(Some),
        (a, None) => Ok(a),
        (None, b) => Ok(b),
    }
}

/// The contribution of one operand's tangent to the tangent of `result`:
/// `f` applied to the tangent converted to `result`'s dtype; `None` when the
/// tangent is zero or `result` is not a float tensor (nothing varies there).
pub(crate) fn through(
    result: &Tensor,
    tangent: Option<&Tensor>,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Option<Tensor>> {
    match tangent {
        Some(t) if result.dtype().is_float() => f(&as_dtype_of(t, result)?).map(Some),
        _ => Ok(None),
    }
}

/// The tangent `t` of `result` as the interpreter takes it: broadcast to
/// `result`'s (logical) shape and converted to its dtype.
pub(crate) fn output(result: &Tensor, t: Option<Tensor>) -> Result<Option<Tensor>> {
    let Some(mut t) = t else {
        return Ok(None);
    };
    if t.shape() != result.shape() {
        t = ops::expand(&t, &shape_arg(None, result.shape()))?;
    }
    Ok(Some(as_dtype_of(&t, result)?))
}

/// The jvp of an op `y = f(a, b)` from the contribution of each operand's
/// tangent: `da(ta)` and `db(tb)`, summed and fitted to `y`.
fn binary(
    y: &Tensor,
    a_tangent: Option<&Tensor>,
    b_tangent: Option<&Tensor>,
    da: impl FnOnce(&Tensor) -> Result<Tensor>,
    db: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Option<Tensor>> {
    let sum = add_tangents(through(y, a_tangent, da)?, through(y, b_tangent, db)?)?;
    output(y, sum)
}

/// The jvp of a binary op `y = f(a, b)` from the contribution of each
/// operand's tangent `t`, written with `a`, `b` and `y` in scope:
/// `name "op": |a, b, y, t| da, db;` registers `da + db`, fitted to `y`
/// (`None` tangents contribute nothing).
macro_rules! binary_jvp {
    ($($name:ident $op:tt: |$a:ident, $b:ident, $y:ident, $t:ident| $da:expr, $db:expr;)*) => {
        $(
            mod $name {
                use super::*;

                #[jvp(op = $op)]
                fn jvp(
                    a: &Tensor,
                    b: &Tensor,
                    y: &Tensor,
                    a_tangent: Option<&Tensor>,
                    b_tangent: Option<&Tensor>,
                ) -> Result<Option<Tensor>> {
                    let ($a, $b, $y) = (a, b, y);
                    binary(y, a_tangent, b_tangent, |$t| $da, |$t| $db)
                }
            }
        )*
    };
}
use binary_jvp;

/// The jvps of ops bilinear in their two tensor arguments (`mul` and the
/// matrix products): `f(ta, b) + f(a, tb)`, the product rule.
macro_rules! bilinear_jvp {
    ($($name:ident $op:tt => $product:path;)*) => {
        crate::library::jvp::binary_jvp! {
            $($name $op: |a, b, _y, t| $product(t, b), $product(a, t);)*
        }
    };
}
use bilinear_jvp;

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    //! Every written jvp, called through the registry as the interpreter
    //! calls it, against central differences of the op (in f64, where the op
    //! is differentiable along the tangent) and against the op's vjp
    //! (`⟨J u, v⟩ = ⟨u, Jᵀ v⟩`, which pins the conventions at ties and kinks),
    //! with each operand's tangent alone and all of them together.

    use std::collections::BTreeSet;

    use crate::dispatch::call_op;
    use crate::forward::rules::{jvp_status, jvps, JvpStatus};
    use crate::grad::rules::vjps;
    use crate::registry::{registry, OpEntry};
    use crate::testing::{probe, Sample};
    use crate::{args, ops, Arg, DType, Result, Tensor};

    const TABLE: &str = "batchrules::ops";
    /// The step of the central differences and their relative tolerance.
    const STEP: f64 = 1e-6;
    const FD_TOLERANCE: f64 = 1e-6;

    fn t(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_shape_vec(shape, values.to_vec()).expect("test tensor")
    }

    fn values(x: &Tensor) -> Result<Vec<f64>> {
        Ok(ops::to_dtype(x, DType::F64)?
            .to_array::<f64>()?
            .iter()
            .copied()
            .collect())
    }

    fn dot(a: &Tensor, b: &Tensor) -> Result<f64> {
        Ok(values(a)?.iter().zip(values(b)?).map(|(x, y)| x * y).sum())
    }

    /// One point of one op. `smooth`: the op is differentiable there along
    /// any tangent, so random tangents are checked against central
    /// differences. `along`: tangents along which an op is differentiable at
    /// a tie or kink (tied elements moving together), checked against
    /// central differences too.
    struct Case {
        op: &'static str,
        sample: Sample,
        smooth: bool,
        along: Option<Vec<Option<Tensor>>>,
    }

    fn case(op: &'static str, sample: Sample) -> Case {
        Case {
            op,
            sample,
            smooth: true,
            along: None,
        }
    }

    fn at_kink(op: &'static str, sample: Sample, along: Vec<Option<Tensor>>) -> Case {
        Case {
            op,
            sample,
            smooth: false,
            along: Some(along),
        }
    }

    fn entry(op: &str) -> std::result::Result<&'static OpEntry, String> {
        let reg = registry().map_err(|e| e.to_string())?;
        reg.find(TABLE, op).ok_or_else(|| format!("no op {op}"))
    }

    /// The tensor arguments of a sample, in slot order.
    fn slots(sample: &Sample) -> Vec<Tensor> {
        sample
            .iter()
            .filter_map(|a| match a {
                Arg::Tensor(x) => Some(x.clone()),
                _ => None,
            })
            .collect()
    }

    /// The sample with each tensor argument moved by `h` times its tangent.
    fn shifted(sample: &Sample, tangents: &[Option<Tensor>], h: f64) -> Result<Sample> {
        let mut k = 0;
        sample
            .iter()
            .map(|a| match a {
                Arg::Tensor(x) => {
                    let u = &tangents[k];
                    k += 1;
                    Ok(Arg::Tensor(match u {
                        Some(u) => ops::add(x, &ops::mul(u, &ops::full(&[], h, DType::F64)?)?)?,
                        None => x.clone(),
                    }))
                }
                other => Ok(other.clone()),
            })
            .collect()
    }

    fn output(entry: &'static OpEntry, sample: &Sample) -> Result<Tensor> {
        Ok(call_op(entry, sample)?[0].clone())
    }

    /// Checks the jvp of `case` along `tangents` (one per tensor slot);
    /// `fd` adds the check against central differences.
    fn check(
        case: &Case,
        tangents: &[Option<Tensor>],
        fd: bool,
    ) -> std::result::Result<(), String> {
        let e = |err: crate::Error| format!("{}: {err}", case.op);
        let entry = entry(case.op)?;
        let jvp = jvps::TABLE
            .get(entry)
            .map_err(e)?
            .ok_or_else(|| format!("{}: no #[jvp]", case.op))?;
        let vjp = vjps::TABLE
            .get(entry)
            .map_err(e)?
            .ok_or_else(|| format!("{}: no #[vjp]", case.op))?;
        // Every output (an op may return indices after its values, which
        // carry no tangent); the first is the one checked.
        let ys = call_op(entry, &case.sample).map_err(e)?.into_vec();
        let y = ys[0].clone();
        let lists: Vec<Vec<Option<Tensor>>> = tangents.iter().map(|u| vec![u.clone()]).collect();
        let out = jvp(&case.sample, &ys, &lists).map_err(e)?;
        let [Some(ty), rest @ ..] = out.as_slice() else {
            return Err(format!(
                "{}: expected one nonzero tangent, got {out:?}",
                case.op
            ));
        };
        if rest.iter().any(Option::is_some) {
            return Err(format!("{}: a tangent for an integer output", case.op));
        }
        if ty.shape() != y.shape() || ty.dtype() != y.dtype() {
            return Err(format!(
                "{}: tangent {:?} {} for a result {:?} {}",
                case.op,
                ty.shape(),
                ty.dtype(),
                y.shape(),
                y.dtype()
            ));
        }
        let low_precision = slots(&case.sample).iter().any(|x| x.dtype() == DType::F32);

        // Transpose of the vjp: ⟨J u, v⟩ = ⟨u, Jᵀ v⟩.
        let v = probe(y.shape(), y.dtype(), 99).map_err(e)?;
        let mut cotangents = vec![v.clone()];
        for other in &ys[1..] {
            let shape: Vec<i64> = other.shape().iter().map(|&d| d as i64).collect();
            cotangents.push(ops::zeros(&shape, other.dtype()).map_err(e)?);
        }
        let grads = vjp(&case.sample, &ys, &cotangents).map_err(e)?;
        let lhs = dot(ty, &v).map_err(e)?;
        let mut rhs = 0.0;
        for (u, g) in tangents.iter().zip(&grads) {
            if let (Some(u), Some(g)) = (u, g) {
                rhs += dot(u, g).map_err(e)?;
            }
        }
        let tolerance = if low_precision { 1e-5 } else { 1e-10 };
        if (lhs - rhs).abs() > tolerance * (1.0 + lhs.abs() + rhs.abs()) {
            return Err(format!(
                "{}: ⟨J u, v⟩ = {lhs} but ⟨u, Jᵀ v⟩ = {rhs} (the vjp)",
                case.op
            ));
        }

        if fd && !low_precision {
            let plus =
                output(entry, &shifted(&case.sample, tangents, STEP).map_err(e)?).map_err(e)?;
            let minus =
                output(entry, &shifted(&case.sample, tangents, -STEP).map_err(e)?).map_err(e)?;
            let (plus, minus, got) = (
                values(&plus).map_err(e)?,
                values(&minus).map_err(e)?,
                values(ty).map_err(e)?,
            );
            for (i, ((p, m), g)) in plus.iter().zip(&minus).zip(&got).enumerate() {
                let want = (p - m) / (2.0 * STEP);
                if (want - g).abs() > FD_TOLERANCE * (1.0 + want.abs()) {
                    return Err(format!(
                        "{}: tangent element {i} is {g}, central differences give {want}",
                        case.op
                    ));
                }
            }
        }
        Ok(())
    }

    /// Runs a case with each float operand's tangent alone and all together
    /// (random tangents), then along its `along` tangents.
    fn run(case: &Case) -> std::result::Result<(), String> {
        let e = |err: crate::Error| format!("{}: {err}", case.op);
        let slots = slots(&case.sample);
        let floats: Vec<usize> = (0..slots.len())
            .filter(|&i| slots[i].dtype().is_float())
            .collect();
        let mut subsets: Vec<Vec<usize>> = floats.iter().map(|&i| vec![i]).collect();
        if floats.len() > 1 {
            subsets.push(floats.clone());
        }
        for subset in subsets {
            let tangents = (0..slots.len())
                .map(|i| {
                    subset
                        .contains(&i)
                        .then(|| probe(slots[i].shape(), slots[i].dtype(), 7 + i as u64))
                        .transpose()
                })
                .collect::<Result<Vec<_>>>()
                .map_err(e)?;
            check(case, &tangents, case.smooth)?;
        }
        if let Some(along) = &case.along {
            check(case, along, true)?;
        }
        Ok(())
    }

    /// Positive values (for `log`, `sqrt` and `pow`'s base).
    fn positive(shape: &[usize], seed: u64) -> Tensor {
        let x = probe(shape, DType::F64, seed).expect("probe");
        ops::add(&ops::abs(&x).expect("abs"), &Tensor::scalar(0.5f64)).expect("add")
    }

    fn cases() -> Vec<Case> {
        let r = |shape: &[usize], seed| probe(shape, DType::F64, seed).expect("probe");
        let (m23, v3, m34) = (r(&[2, 3], 1), r(&[3], 2), r(&[3, 4], 3));
        let p23 = positive(&[2, 3], 4);
        let mut cases = Vec::new();
        for op in ["abs", "relu", "exp", "sin", "cos", "tanh", "sigmoid"] {
            cases.push(case(op, args![&m23]));
        }
        for op in ["log", "sqrt"] {
            cases.push(case(op, args![&p23]));
        }
        // The activations: softplus with its threshold inside the values'
        // range too (the linear part taken above beta * x = 0.5), and with a
        // negative beta; elu with alpha 1 (continuous derivative) and not.
        for op in ["erf", "logsigmoid"] {
            cases.push(case(op, args![&m23]));
        }
        for (beta, threshold) in [(1.0, 20.0), (2.0, 0.5), (-1.5, 20.0)] {
            cases.push(case("softplus", args![&m23, beta, threshold]));
        }
        for alpha in [1.0, 0.3] {
            cases.push(case("elu", args![&m23, alpha]));
        }
        // abs at 0: central differences are 0 there too (abs is even).
        let zeros = t(&[4], &[0.0, 1.5, -0.7, 0.0]);
        cases.push(case("abs", args![&zeros]));
        // relu at 0: the one-sided slopes differ; 0 there, as the vjp.
        let still = t(&[4], &[0.0, 0.8, -0.3, 0.0]);
        cases.push(at_kink("relu", args![&zeros], vec![Some(still)]));

        // Broadcasting binary ops: same shape, [2, 3] with [3], [2, 1] with
        // [1, 3], a 0-d operand, and a broadcast integer operand (no tangent).
        let (m21, m13, s) = (r(&[2, 1], 5), r(&[1, 3], 6), Tensor::scalar(0.75f64));
        let ints = Tensor::from_shape_vec(&[3], vec![2i64, -1, 3]).expect("ints");
        for op in ["mul", "div", "maximum", "minimum"] {
            let m23b = r(&[2, 3], 8);
            cases.push(case(op, args![&m23, &m23b]));
            cases.push(case(op, args![&m23, &v3]));
            cases.push(case(op, args![&m21, &m13]));
            cases.push(case(op, args![&s, &m23]));
            cases.push(case(op, args![&m23, &ints]));
        }
        // Mixed float dtypes: the tangent in the promoted dtype.
        let f32s = ops::to_dtype(&v3, DType::F32).expect("f32");
        for op in ["mul", "div", "maximum", "pow"] {
            cases.push(case(op, args![&f32s, &positive(&[2, 3], 9)]));
        }
        cases.push(case("pow", args![&p23, &m23]));
        cases.push(case("pow", args![&p23, &v3]));
        cases.push(case("pow", args![&positive(&[3], 10), &m21]));
        cases.push(case("pow", args![&p23, &ints]));
        // A zero base with a positive exponent (the exponent's term is 0),
        // and a zero exponent (the base's term is 0).
        let (base, exponent) = (t(&[3], &[0.0, 1.3, 0.6]), t(&[3], &[2.0, 0.0, 1.5]));
        cases.push(case("pow", args![&base, &exponent]));

        // maximum/minimum ties, one operand broadcast: tied elements share
        // their tangents evenly; moving together they stay tied.
        let a = t(&[3], &[1.0, 2.0, 3.0]);
        let b = t(&[2, 3], &[1.0, 0.0, 5.0, 0.0, 2.0, 3.0]);
        let ta = t(&[3], &[0.4, -0.3, 0.9]);
        let tb = t(&[2, 3], &[0.4, 0.1, -0.2, 0.6, -0.3, 0.9]);
        for op in ["maximum", "minimum"] {
            cases.push(at_kink(
                op,
                args![&a, &b],
                vec![Some(ta.clone()), Some(tb.clone())],
            ));
        }

        // clamp: both bounds or one; x on a bound (0 there, as the vjp).
        for (min, max) in [
            (Some(-0.3), Some(0.4)),
            (Some(-0.3), None),
            (None, Some(0.4)),
        ] {
            cases.push(case("clamp", args![&m23, min, max]));
        }
        let on_bounds = t(&[4], &[-0.3, 0.1, 0.4, 0.9]);
        let inside = t(&[4], &[0.0, 0.5, 0.0, -0.2]);
        cases.push(at_kink(
            "clamp",
            args![&on_bounds, Some(-0.3), Some(0.4)],
            vec![Some(inside)],
        ));

        // amax/amin over a dim (with and without keepdim) and over all;
        // ties (the extreme taken twice in each row and overall) with tangents
        // equal on the tied elements.
        let x = t(&[2, 4], &[1.0, 3.0, 1.0, 3.0, 2.0, 0.0, 0.0, 2.0]);
        let u = t(&[2, 4], &[0.3, -0.5, 0.3, -0.5, 0.7, 0.1, 0.1, 0.7]);
        for op in ["amax", "amin"] {
            for (dim, keepdim) in [(Some(1), false), (Some(0), true), (None, false)] {
                cases.push(case(op, args![&m23, dim, keepdim]));
                cases.push(at_kink(op, args![&x, dim, keepdim], vec![Some(u.clone())]));
            }
        }

        // log_softmax over each dim, of a matrix and of a 0-d tensor.
        for dim in [0i64, 1, -1] {
            cases.push(case("log_softmax", args![&m23, dim]));
        }
        cases.push(case("log_softmax", args![&r(&[], 18), 0i64]));

        // Products, matmul in every operand rank and with broadcast batch dims.
        let (m2, b223, b234) = (r(&[2], 11), r(&[2, 2, 3], 12), r(&[2, 3, 4], 13));
        cases.push(case("matmul", args![&m23, &m34]));
        cases.push(case("matmul", args![&v3, &m34]));
        cases.push(case("matmul", args![&m23, &v3]));
        cases.push(case("matmul", args![&v3, &r(&[3], 14)]));
        cases.push(case("matmul", args![&b223, &m34]));
        cases.push(case("matmul", args![&r(&[1, 2, 3], 15), &b234]));
        cases.push(case("dot", args![&v3, &r(&[3], 14)]));
        cases.push(case("mm", args![&m23, &m34]));
        cases.push(case("mv", args![&m23, &v3]));
        cases.push(case("outer", args![&m2, &v3]));
        // The tiled convolution products (bilinear): two groups, stride,
        // padding and dilation; the weight gradients of that convolution.
        let (x, w) = (r(&[2, 4, 4, 5], 31), r(&[2, 2, 2, 2], 32));
        let (s, p, d): (&[i64], &[i64], &[i64]) = (&[2, 1], &[1], &[1, 2]);
        cases.push(case("conv2d_tiled", args![&x, &w, s, p, d, 2i64]));
        let gy = r(&[2, 2, 3, 5], 33);
        let k: &[i64] = &[2, 2];
        cases.push(case(
            "conv2d_weight_grads",
            args![&x, &gy, k, s, p, d, 2i64],
        ));
        cases.push(case("bmm", args![&b223, &b234]));
        let (v4, b4) = (r(&[4], 16), r(&[2, 4], 17));
        for relu in [false, true] {
            cases.push(case("addmm", args![&v4, &m23, &m34, relu]));
            cases.push(case("addmm", args![&v4, &v3, &m34, relu]));
            cases.push(case("addmm", args![&b4, &m23, &m34, relu]));
        }

        // max_pool2d_with_indices: overlapping windows with padding,
        // dilation with ceil_mode, and ties (a constant input) with the tied
        // elements moving together.
        let (k2, one, zero): (&[i64], &[i64], &[i64]) = (&[2], &[1], &[0]);
        let x = r(&[1, 2, 3, 4], 19);
        cases.push(case(
            "max_pool2d_with_indices",
            args![&x, k2, Some(one), one, one, false],
        ));
        let x = r(&[2, 4, 5], 20);
        cases.push(case(
            "max_pool2d_with_indices",
            args![&x, k2, Some(k2), zero, k2, true],
        ));
        let flat = t(&[1, 2, 3], &[0.5; 6]);
        let u = t(&[1, 2, 3], &[0.25; 6]);
        cases.push(at_kink(
            "max_pool2d_with_indices",
            args![&flat, k2, Some(one), zero, one, false],
            vec![Some(u)],
        ));
        cases
    }

    pub(crate) fn jvps_match_central_differences_and_transpose_the_vjps() {
        let cases = cases();
        let failures: Vec<String> = cases.iter().filter_map(|c| run(c).err()).collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));

        // Every op with a written jvp is checked here, but an op that runs on
        // a shared sample set (`samples = "float"`: a pointwise op whose vjp
        // and jvp `unary_derivative!` writes from one factor), whose jvp the
        // library sweep (`tests/suite/jvp_library.rs`) checks on the set's
        // inputs against central differences and against its vjp.
        let reg = registry().expect("registry");
        let checked: BTreeSet<&str> = cases.iter().map(|c| c.op).collect();
        for e in reg.ops().iter().filter(|e| e.table.path == TABLE) {
            if jvps::TABLE.get(e).expect("the jvp table").is_some() && e.schema.samples.is_none() {
                assert!(
                    checked.contains(e.name()),
                    "{} has an unchecked jvp",
                    e.name()
                );
            }
        }
    }

    pub(crate) fn every_differentiable_primitive_has_a_jvp_or_is_linear() {
        let reg = registry().expect("registry");
        let missing: Vec<&str> = reg
            .ops()
            .iter()
            .filter(|e| {
                e.table.path == TABLE && jvp_status(e).expect("the jvp table") == JvpStatus::Missing
            })
            .map(|e| e.name())
            .collect();
        assert!(missing.is_empty(), "no jvp for {missing:?}");
    }

    pub(crate) fn a_tangent_for_one_operand_is_broadcast_to_the_result() -> Result<()> {
        // Only the [3] operand varies: its tangent must come back as [2, 3].
        let (a, b) = (probe(&[2, 3], DType::F64, 1)?, probe(&[3], DType::F64, 2)?);
        for op in ["mul", "maximum", "div", "pow"] {
            let entry = registry()?.find(TABLE, op).expect("op");
            let jvp = jvps::TABLE.get(entry)?.expect("jvp");
            let base = if op == "pow" {
                ops::abs(&a)?
            } else {
                a.clone()
            };
            let sample = args![&base, &b];
            let y = call_op(entry, &sample)?[0].clone();
            let out = jvp(
                &sample,
                std::slice::from_ref(&y),
                &[vec![None], vec![Some(b.clone())]],
            )?;
            let shape = out[0].as_ref().map(|t| t.shape().to_vec());
            assert_eq!(shape, Some(vec![2, 3]), "{op}");
        }
        Ok(())
    }

    crate::core::unit_test::test_list! {
        jvps_match_central_differences_and_transpose_the_vjps,
        every_differentiable_primitive_has_a_jvp_or_is_linear,
        a_tangent_for_one_operand_is_broadcast_to_the_result,
    }
}
