//! A hostile-input sweep driven by the op table, not a hand-written list.
//!
//! 1. For every op of the built-in table and each of its sample and error
//!    inputs, every scalar argument is replaced in turn by hostile values
//!    (integers at `i64::MIN`, `i64::MIN + 1`, `-2^62`, `-1`, `0`, `2^40`,
//!    `2^62`, `i64::MAX - 1`, `i64::MAX`, as a scalar, as a one- and a
//!    two-element list, and in each position of a list; floats at NaN, ±inf,
//!    ±1e308 and large integers). Each call is made dense and under vmap (every in_dims
//!    combination within the testing budget, batch sizes 0, 1 and 3, nested):
//!    the result must be an `Err` naming the op, or agree with the
//!    per-example loop. A panic anywhere fails the sweep; an abort kills it.
//! 2. Random calls of random ops with random, mostly invalid, arguments
//!    (proptest, a bounded number of cases), dense and under vmap: never a
//!    panic, and every error names the op called.

use batchrules::Reduction;
use std::panic::{catch_unwind, AssertUnwindSafe};

use batchrules::dispatch::call_op;
use batchrules::registry::{registry, OpEntry};
use batchrules::rules::Arg;
use batchrules::schema::ArgType;
use batchrules::testing::{check_op, check_op_errors, describe, Sample};
use batchrules::{vmap, DType, Error, FallbackPolicy, Tensor};
use batchrules_samples::op_infos;
use proptest::prelude::*;

const TABLE: &str = "batchrules::ops";

const INTS: [i64; 9] = [
    i64::MIN,
    i64::MIN + 1,
    -(1 << 62),
    -1,
    0,
    1 << 40,
    1 << 62,
    i64::MAX - 1,
    i64::MAX,
];
const FLOATS: [f64; 8] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e308,
    -1e308,
    9.3e18,
    4e15,
    -0.0,
];

/// Every hostile variant of `sample`: one scalar argument replaced at a time.
fn variants(sample: &Sample) -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, arg) in sample.iter().enumerate() {
        let mut with = |a: Arg<Tensor>| {
            let mut s = sample.clone();
            s[i] = a;
            out.push(s);
        };
        match arg {
            Arg::Int(_) => INTS.iter().for_each(|&v| with(Arg::Int(v))),
            Arg::OptInt(_) => INTS.iter().for_each(|&v| with(Arg::OptInt(Some(v)))),
            Arg::IntList(list) | Arg::OptIntList(Some(list)) => {
                let wrap = |l: Vec<i64>| match arg {
                    Arg::IntList(_) => Arg::IntList(l),
                    _ => Arg::OptIntList(Some(l)),
                };
                for &v in &INTS {
                    with(wrap(vec![v]));
                    with(wrap(vec![v, v]));
                    for p in 0..list.len() {
                        let mut l = list.clone();
                        l[p] = v;
                        with(wrap(l));
                    }
                }
            }
            Arg::OptIntList(None) => INTS
                .iter()
                .for_each(|&v| with(Arg::OptIntList(Some(vec![v])))),
            Arg::Float(_) => FLOATS.iter().for_each(|&v| with(Arg::Float(v))),
            Arg::OptFloat(_) => FLOATS.iter().for_each(|&v| with(Arg::OptFloat(Some(v)))),
            _ => {}
        }
    }
    out
}

/// `err` names `op` first (the op the user called).
fn names_op(err: &Error, op: &str) -> bool {
    err.op() == Some(op)
}

#[derive(Default)]
struct Tally {
    cases: usize,
    errors: usize,
    problems: Vec<String>,
}

/// One hostile call: dense, then under vmap against the loop.
fn probe(entry: &'static OpEntry, sample: &Sample, tally: &mut Tally) {
    let what = format!("{} {}", entry.name(), describe(sample));
    tally.cases += 1;
    let dense = catch_unwind(AssertUnwindSafe(|| call_op(entry, sample)));
    let dense = match dense {
        Err(_) => {
            tally.problems.push(format!("{what}: panicked (dense)"));
            return;
        }
        Ok(r) => r,
    };
    if let Err(e) = &dense {
        tally.errors += 1;
        if !names_op(e, entry.name()) {
            tally
                .problems
                .push(format!("{what}: the error does not name the op first: {e}"));
            return;
        }
    }
    let batched = catch_unwind(AssertUnwindSafe(|| match &dense {
        Ok(_) => check_op(entry, sample),
        Err(_) => check_op_errors(entry, sample),
    }));
    match batched {
        Err(_) => tally
            .problems
            .push(format!("{what}: panicked (under vmap)")),
        Ok(Err(m)) => tally.problems.push(format!("{what}: {m}")),
        Ok(Ok(n)) => tally.cases += n,
    }
}

#[test]
fn every_scalar_argument_at_hostile_values() {
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Silent);
    let reg = registry().unwrap();
    let mut tally = Tally::default();
    let mut variants_tried = 0;
    for info in op_infos().filter(|i| i.table.path == TABLE) {
        let entry = reg.find(TABLE, info.op).unwrap();
        for sample in (info.samples)().into_iter().chain((info.errors)()) {
            for variant in variants(&sample) {
                variants_tried += 1;
                probe(entry, &variant, &mut tally);
            }
        }
    }
    println!(
        "{variants_tried} hostile calls, {} errors, {} cases checked in all (dense and under vmap)",
        tally.errors, tally.cases
    );
    assert!(variants_tried > 1000, "{variants_tried}");
    assert!(
        tally.problems.is_empty(),
        "{} problems:\n{}",
        tally.problems.len(),
        tally.problems.join("\n")
    );
}

/// A tensor of `shape` and `dtype` with values from `pool` (cycled).
fn tensor(shape: &[usize], dtype: DType, pool: &[f64]) -> Tensor {
    let n: usize = shape.iter().product();
    let v = |i: usize| pool[i % pool.len()];
    match dtype {
        DType::F32 => Tensor::from_shape_vec(shape, (0..n).map(|i| v(i) as f32).collect()),
        DType::F64 => Tensor::from_shape_vec(shape, (0..n).map(v).collect()),
        DType::I64 => Tensor::from_shape_vec(shape, (0..n).map(|i| v(i) as i64).collect()),
        DType::Bool => Tensor::from_shape_vec(shape, (0..n).map(|i| v(i) > 0.0).collect()),
    }
    .unwrap()
}

fn any_dtype() -> impl Strategy<Value = DType> {
    prop_oneof![
        Just(DType::F32),
        Just(DType::F64),
        Just(DType::I64),
        Just(DType::Bool)
    ]
}

fn any_tensor() -> impl Strategy<Value = Tensor> {
    let pool = prop_oneof![
        Just(vec![0.5, -1.5, 2.0, 0.0, 3.0]),
        Just(vec![f64::NAN, f64::INFINITY, -1.0, f64::NEG_INFINITY]),
        Just(vec![0.0, 1.0, 2.0]),
        Just(vec![9.0e15, -9.0e15, 4.0])
    ];
    (prop::collection::vec(0usize..4, 0..4), any_dtype(), pool)
        .prop_map(|(shape, dtype, pool)| tensor(&shape, dtype, &pool))
}

fn any_int() -> impl Strategy<Value = i64> {
    prop_oneof![4 => -3i64..4, 1 => prop::sample::select(INTS.to_vec())]
}

fn any_float() -> impl Strategy<Value = f64> {
    prop_oneof![3 => -3.0f64..3.0, 1 => prop::sample::select(FLOATS.to_vec())]
}

/// An argument of schema type `ty` (optional or not), mostly plausible,
/// sometimes hostile.
fn any_arg(ty: ArgType, optional: bool) -> BoxedStrategy<Arg<Tensor>> {
    let ints = prop::collection::vec(any_int(), 0..4);
    match (ty, optional) {
        (ArgType::Tensor, false) => any_tensor().prop_map(Arg::Tensor).boxed(),
        (ArgType::Tensor, true) => prop::option::of(any_tensor())
            .prop_map(Arg::OptTensor)
            .boxed(),
        (ArgType::TensorList, _) => prop::collection::vec(any_tensor(), 0..3)
            .prop_map(Arg::TensorList)
            .boxed(),
        (ArgType::Int, false) => any_int().prop_map(Arg::Int).boxed(),
        (ArgType::Int, true) => prop::option::of(any_int()).prop_map(Arg::OptInt).boxed(),
        (ArgType::IntList, false) => ints.prop_map(Arg::IntList).boxed(),
        (ArgType::IntList, true) => prop::option::of(ints).prop_map(Arg::OptIntList).boxed(),
        (ArgType::Float, false) => any_float().prop_map(Arg::Float).boxed(),
        (ArgType::Float, true) => prop::option::of(any_float())
            .prop_map(Arg::OptFloat)
            .boxed(),
        (ArgType::Bool, false) => any::<bool>().prop_map(Arg::Bool).boxed(),
        (ArgType::Bool, true) => prop::option::of(any::<bool>())
            .prop_map(Arg::OptBool)
            .boxed(),
        (ArgType::ScalarType, false) => any_dtype().prop_map(Arg::ScalarType).boxed(),
        (ArgType::ScalarType, true) => prop::option::of(any_dtype())
            .prop_map(Arg::OptScalarType)
            .boxed(),
        (ArgType::Reduction, _) => {
            prop::sample::select(vec![Reduction::None, Reduction::Mean, Reduction::Sum])
                .prop_map(Arg::Reduction)
                .boxed()
        }
        // Words the ops take, and hostile ones: empty, unknown, an einsum
        // equation with a bad subscript, non-ASCII.
        (ArgType::Str, _) => prop::sample::select(vec![
            "valid",
            "same",
            "",
            "full",
            "ij,jk->ik",
            "ii",
            "i->j",
            "a...b,b->",
            "é",
        ])
        .prop_map(|s| Arg::Str(s.to_string()))
        .boxed(),
    }
}

/// A random op of the built-in table with random arguments fitting its schema.
fn any_call() -> impl Strategy<Value = (&'static OpEntry, Sample)> {
    let ops: Vec<&'static OpEntry> = registry()
        .unwrap()
        .ops()
        .iter()
        .filter(|e| e.table.path == TABLE)
        .collect();
    prop::sample::select(ops).prop_flat_map(|entry| {
        let args: Vec<_> = entry
            .schema
            .args
            .iter()
            .map(|a| any_arg(a.ty, a.optional))
            .collect();
        (Just(entry), args)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_calls_never_panic_and_name_the_op((entry, args) in any_call()) {
        let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Silent);
        let name = entry.name();
        let dense = catch_unwind(AssertUnwindSafe(|| call_op(entry, &args)));
        prop_assert!(dense.is_ok(), "{} {} panicked", name, describe(&args));
        if let Ok(Err(e)) = &dense {
            prop_assert!(names_op(e, name), "{} {}: {}", name, describe(&args), e);
        }
        // Under vmap: the first tensor argument batched (two copies).
        let Some(first) = args.iter().position(|a| matches!(a, Arg::Tensor(_))) else {
            return Ok(());
        };
        let Arg::Tensor(t) = &args[first] else { unreachable!() };
        let Ok(batch) = t.broadcast_new_dim(0, 2) else { return Ok(()) };
        let result = catch_unwind(AssertUnwindSafe(|| {
            vmap(|x: Tensor| {
                let mut a = args.clone();
                a[first] = Arg::Tensor(x);
                Ok(call_op(entry, &a)?.into_vec())
            })
            .call(&batch)
        }));
        prop_assert!(result.is_ok(), "{} {} panicked under vmap", name, describe(&args));
        if let Ok(Err(e)) = &result {
            prop_assert!(names_op(e, name), "{} {} under vmap: {}", name, describe(&args), e);
        }
    }
}
