//! Helpers shared by the integration tests of the transforms: deterministic
//! tensors, comparisons, and the sweep over the built-in library.
#![allow(dead_code)] // each test crate uses its own subset

use batchrules::dispatch::call_op;
use batchrules::registry::{registry, OpEntry};
use batchrules::rules::Arg;
use batchrules::schema::OpKind;
use batchrules::testing::{sample_tensors, with_tensors, Mismatch};
use batchrules::{FallbackPolicy, Result, Tensor};
use batchrules_samples::op_infos;
use ndarray::{ArrayD, IxDyn};

/// A deterministic f64 tensor: values in (-1, 1), no two alike.
pub fn t64(shape: &[usize], seed: u64) -> Tensor {
    // A small deterministic generator: values in (-1, 1), no two alike.
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2_000_000) as f64 / 1_000_000.0 - 1.0
        })
        .collect();
    Tensor::from(ArrayD::from_shape_vec(IxDyn(shape), v).unwrap())
}

/// A 1-d f64 tensor of `values`.
pub fn vector(values: &[f64]) -> Tensor {
    Tensor::from(ArrayD::from_shape_vec(IxDyn(&[values.len()]), values.to_vec()).unwrap())
}

/// Runs `f`, turning a panic into a failure that names `what`.
pub fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what} panicked: {msg}")
        }
    }
}

pub fn arr(t: &Tensor) -> ArrayD<f64> {
    t.to_array::<f64>().unwrap()
}

pub fn assert_close(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.shape(), b.shape(), "shapes differ");
    let (a, b) = (arr(a), arr(b));
    for (x, y) in a.iter().zip(b.iter()) {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{x} vs {y}\n{a:?}\n{b:?}"
        );
    }
}

pub fn sum(x: &Tensor) -> Result<Tensor> {
    batchrules::ops::sum(x, None, false)
}

/// Runs `check_op` on every sample of every differentiable op of the
/// built-in library under `FallbackPolicy::Error`, and requires that every
/// such op with a tensor argument had its derivative itself checked
/// (`checks_itself`: against finite differences) on at least one sample.
/// Prints the count of cases.
///
/// Random ops (`dropout`, `bernoulli`) get `checks_itself` only: the
/// composition matrices run vmap at its default randomness policy, which
/// refuses a random op by design; their compositions with vmap and grad are
/// checked under each policy in `tests/suite/randomness.rs`.
pub fn sweep_differentiable_ops(
    check_op: impl Fn(&'static OpEntry, &[Arg<Tensor>]) -> std::result::Result<usize, Mismatch>,
    checks_itself: impl Fn(
        &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
        &[Tensor],
    ) -> std::result::Result<usize, Mismatch>,
) {
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Error);
    let reg = registry().expect("registry");
    let mut failures = Vec::new();
    let mut checked = 0usize;
    let mut ops_checked = Vec::new();
    for info in op_infos() {
        if info.table.path != "batchrules::ops" {
            continue;
        }
        let entry = reg.find(info.table.path, info.op).expect("op of a sample");
        if entry.schema.kind == OpKind::Primitive && !entry.schema.differentiable {
            continue;
        }
        // `any`: some sample had finite values, so the finite differences
        // checked the derivative itself (not only the compositions).
        let mut any = false;
        for sample in (info.samples)() {
            if !entry.schema.random {
                match check_op(entry, &sample) {
                    Ok(n) => checked += n,
                    Err(m) => failures.push(m.to_string()),
                }
            }
            let f = |ts: &[Tensor]| Ok(call_op(entry, &with_tensors(&sample, ts)?)?.into_vec());
            any |= checks_itself(&f, &sample_tensors(&sample)).is_ok_and(|n| n > 0);
        }
        if any {
            ops_checked.push(info.op);
        }
    }
    ops_checked.sort_unstable();
    ops_checked.dedup();
    println!(
        "{checked} cases over {} ops: {ops_checked:?}",
        ops_checked.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let missing: Vec<&str> = reg
        .ops()
        .iter()
        .filter(|e| e.table.path == "batchrules::ops")
        .filter(|e| e.schema.kind == OpKind::Composite || e.schema.differentiable)
        .filter(|e| e.schema.takes_tensors())
        .map(|e| e.name())
        .filter(|n| !ops_checked.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "differentiable ops never checked: {missing:?}"
    );
}

/// The bits of every element (so NaN == NaN and -0.0 != 0.0), for exact
/// comparison.
pub fn bits(t: &Tensor) -> Vec<u64> {
    use batchrules::DType;
    match t.dtype() {
        DType::F32 => t
            .to_array::<f32>()
            .unwrap()
            .iter()
            .map(|v| u64::from(v.to_bits()))
            .collect(),
        DType::F64 => t
            .to_array::<f64>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        DType::I64 => t
            .to_array::<i64>()
            .unwrap()
            .iter()
            .map(|&v| v as u64)
            .collect(),
        DType::Bool => t
            .to_array::<bool>()
            .unwrap()
            .iter()
            .map(|&v| u64::from(v))
            .collect(),
    }
}
