//! Random ops under vmap: the randomness policy (`Error`, `Different`,
//! `Same`), its independence from chunk size and threads (run this file also
//! with `--features rayon`), nesting, the fallback loop, dropout and
//! bernoulli statistics and gradients, and hostile inputs.

use batchrules::{
    derive_seed, grad, ops, vmap, DType, Error, FallbackPolicy, Randomness, Result, Tensor,
};
use downstream_ops::ops as down;
use ndarray::{Array, ArrayD, Axis, IxDyn};

fn zeros(shape: &[usize]) -> Tensor {
    Tensor::from(ArrayD::<f64>::zeros(IxDyn(shape)))
}

fn values(t: &Tensor) -> ArrayD<f64> {
    t.to_array::<f64>().unwrap()
}

/// The rows of `a` along dim 0, as vectors.
fn rows(a: &ArrayD<f64>) -> Vec<Vec<f64>> {
    a.axis_iter(Axis(0))
        .map(|r| r.iter().copied().collect())
        .collect()
}

fn all_distinct(rows: &[Vec<f64>]) -> bool {
    (0..rows.len()).all(|i| (i + 1..rows.len()).all(|j| rows[i] != rows[j]))
}

/// The length of each example in [`draws`]: long enough that two 0/1 rows
/// coincide with probability 2^-32.
const N: usize = 32;

/// A per-example function drawing with every random op of the table.
fn draws(x: Tensor) -> Result<Vec<Tensor>> {
    let n = N as i64;
    let p = ops::full(&[n], 0.5, DType::F64)?;
    Ok(vec![
        ops::add(&x, &ops::rand(&[n], 11, DType::F64)?)?,
        ops::add(&x, &ops::randn(&[n], 12, DType::F64)?)?,
        ops::bernoulli(&p, 13)?,
        ops::dropout(&ops::add(&x, &ops::full(&[n], 1.0, DType::F64)?)?, 0.5, 14)?,
    ])
}

#[test]
fn the_default_policy_refuses_a_random_op_naming_it_and_the_fix() {
    type F = fn(Tensor) -> Result<Tensor>;
    let cases: [(&str, F); 5] = [
        ("rand", |_x| ops::rand(&[2], 0, DType::F32)),
        ("randn", |_x| ops::randn(&[2], 0, DType::F64)),
        ("bernoulli", |x| ops::bernoulli(&x, 0)),
        ("dropout", |x| ops::dropout(&x, 0.5, 0)),
        ("jitter", |x| down::jitter(&x, 1.0, 0)),
    ];
    for (name, f) in cases {
        let err = vmap(f).call(&zeros(&[3, 2])).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err.root(), Error::Randomness { op, level: 1, .. } if op == name),
            "{name}: {err:?}"
        );
        assert!(msg.starts_with(&format!("{name}: ")), "{msg}");
        assert!(msg.contains("randomness policy is Error"), "{msg}");
        assert!(msg.contains(".randomness(Randomness::Different)"), "{msg}");
        assert!(msg.contains("Randomness::Same"), "{msg}");
    }
    // Outside vmap, and with another policy, the same call is fine.
    assert!(ops::rand(&[2], 0, DType::F32).is_ok());
    assert!(vmap(|_x: Tensor| ops::rand(&[2], 0, DType::F32))
        .randomness(Randomness::Same)
        .call(&zeros(&[3, 2]))
        .is_ok());
}

#[test]
fn different_gives_each_example_its_own_draw_whatever_the_chunking() {
    let x = zeros(&[7, N]);
    let whole = vmap(draws)
        .randomness(Randomness::Different)
        .call(&x)
        .unwrap();
    for (k, out) in whole.iter().enumerate() {
        assert_eq!(out.shape(), &[7, N]);
        let rs = rows(&values(out));
        assert!(all_distinct(&rs), "output {k}: rows repeat: {rs:?}");
    }
    for chunk in [1, 3, 7, 100] {
        let chunked = vmap(draws)
            .randomness(Randomness::Different)
            .chunk_size(chunk)
            .call(&x)
            .unwrap();
        for (a, b) in chunked.iter().zip(&whole) {
            assert_eq!(values(a), values(b), "chunk size {chunk}");
        }
    }
}

#[test]
fn different_draws_example_i_from_the_derived_seed() {
    let x = zeros(&[5, 3]);
    let got = vmap(|_x: Tensor| ops::randn(&[3], 42, DType::F32))
        .randomness(Randomness::Different)
        .call(&x)
        .unwrap();
    for i in 0..5 {
        let want = ops::randn(&[3], derive_seed(42, i as u64), DType::F32).unwrap();
        assert_eq!(
            got.select(0, i).unwrap().to_array::<f32>().unwrap(),
            want.to_array::<f32>().unwrap()
        );
    }
    // A batched input at another dim and out_dims do not change the draws.
    let moved = vmap(|_x: Tensor| ops::randn(&[3], 42, DType::F32))
        .randomness(Randomness::Different)
        .in_dims(1)
        .out_dims(1)
        .call(&zeros(&[3, 5]))
        .unwrap();
    assert_eq!(
        moved.to_array::<f32>().unwrap().t().to_owned(),
        got.to_array::<f32>().unwrap()
    );
}

#[test]
fn same_gives_every_example_one_draw() {
    let x = zeros(&[5, N]);
    let out = vmap(draws).randomness(Randomness::Same).call(&x).unwrap();
    let dense = draws(zeros(&[N])).unwrap();
    for (k, (o, d)) in out.iter().zip(&dense).enumerate() {
        for r in rows(&values(o)) {
            assert_eq!(
                r,
                values(d).iter().copied().collect::<Vec<_>>(),
                "output {k}"
            );
        }
    }
    // bernoulli with a batched p shares its uniforms: a row with larger
    // probabilities has a 1 wherever a row with smaller ones has.
    let p = Tensor::from(Array::from_shape_fn((3, 50), |(i, _)| 0.2 + 0.3 * i as f64).into_dyn());
    let b = values(
        &vmap(|p: Tensor| ops::bernoulli(&p, 5))
            .randomness(Randomness::Same)
            .call(&p)
            .unwrap(),
    );
    let rs = rows(&b);
    for i in 1..3 {
        assert!(rs[i - 1].iter().zip(&rs[i]).all(|(lo, hi)| lo <= hi));
    }
    assert_ne!(rs[0], rs[2]);
}

#[test]
fn nested_levels_each_follow_their_policy() {
    let x = zeros(&[3, 4, 2]);
    let inner = |policy| {
        move |x: Tensor| {
            vmap(|x: Tensor| ops::add(&x, &ops::rand(&[2], 9, DType::F64)?))
                .randomness(policy)
                .call(&x)
        }
    };
    // different ∘ different: every (i, j) distinct.
    let dd = values(
        &vmap(inner(Randomness::Different))
            .randomness(Randomness::Different)
            .call(&x)
            .unwrap(),
    );
    let flat: Vec<Vec<f64>> = dd
        .to_shape((12, 2))
        .unwrap()
        .axis_iter(Axis(0))
        .map(|r| r.to_vec())
        .collect();
    assert!(all_distinct(&flat), "{flat:?}");
    // Example (i, j) draws from derive_seed(derive_seed(9, j), i): the
    // innermost level derives first.
    for (i, j) in [(0, 0), (2, 3), (1, 2)] {
        let want = ops::rand(&[2], derive_seed(derive_seed(9, j), i), DType::F64).unwrap();
        let got = dd
            .index_axis(Axis(0), i as usize)
            .index_axis(Axis(0), j as usize)
            .to_owned();
        assert_eq!(got.into_dyn(), values(&want));
    }
    // Chunking either level changes nothing.
    let chunked = vmap(move |x: Tensor| {
        vmap(|x: Tensor| ops::add(&x, &ops::rand(&[2], 9, DType::F64)?))
            .randomness(Randomness::Different)
            .chunk_size(3)
            .call(&x)
    })
    .randomness(Randomness::Different)
    .chunk_size(2)
    .call(&x)
    .unwrap();
    assert_eq!(values(&chunked), dd);

    // same outside, different inside: rows vary along j only.
    let sd = values(
        &vmap(inner(Randomness::Different))
            .randomness(Randomness::Same)
            .call(&x)
            .unwrap(),
    );
    for i in 1..3 {
        assert_eq!(sd.index_axis(Axis(0), i), sd.index_axis(Axis(0), 0));
    }
    let row0: Vec<Vec<f64>> = rows(&sd.index_axis(Axis(0), 0).to_owned());
    assert!(all_distinct(&row0));
    // ... and the draw along j is the inner level's alone.
    for j in 0..4u64 {
        let want = ops::rand(&[2], derive_seed(9, j), DType::F64).unwrap();
        assert_eq!(
            sd.index_axis(Axis(0), 0)
                .index_axis(Axis(0), j as usize)
                .to_owned()
                .into_dyn(),
            values(&want)
        );
    }

    // different outside, same inside: rows vary along i only.
    let ds = values(
        &vmap(inner(Randomness::Same))
            .randomness(Randomness::Different)
            .call(&x)
            .unwrap(),
    );
    for i in 0..3 {
        let block = ds.index_axis(Axis(0), i).to_owned();
        for j in 1..4 {
            assert_eq!(block.index_axis(Axis(0), j), block.index_axis(Axis(0), 0));
        }
    }
    assert_ne!(ds.index_axis(Axis(0), 0), ds.index_axis(Axis(0), 1));

    // An inner vmap left at the default refuses, under any outer policy.
    let err = vmap(inner(Randomness::Error))
        .randomness(Randomness::Different)
        .call(&x)
        .unwrap_err();
    assert!(
        matches!(err.root(), Error::Randomness { op, level: 2, .. } if op == "rand"),
        "{err:?}"
    );
    // And an outer one left at the default refuses too, naming the op.
    let err = vmap(inner(Randomness::Same)).call(&x).unwrap_err();
    assert!(
        matches!(err.root(), Error::Randomness { op, level: 1, .. } if op == "rand"),
        "{err:?}"
    );
}

#[test]
fn the_fallback_loop_follows_the_policy_with_the_rules_numbers() {
    // `jitter` has no batching rule: vmap runs it once per example, giving
    // example i its derived seed, so it matches `add(x, rand(...))`, which
    // is batched by rules.
    let x = Tensor::from(Array::from_shape_fn((6, 3), |(i, j)| (i * 3 + j) as f64).into_dyn());
    let by_rule = |x: Tensor| ops::add(&x, &ops::rand(&[3], 21, DType::F64)?);
    let by_loop = |x: Tensor| down::jitter(&x, 1.0, 21);
    for policy in [Randomness::Different, Randomness::Same] {
        let want = vmap(by_rule).randomness(policy).call(&x).unwrap();
        for chunk in [1, 4, 6] {
            let got = vmap(by_loop)
                .randomness(policy)
                .fallback(FallbackPolicy::Silent)
                .chunk_size(chunk)
                .call(&x)
                .unwrap();
            assert_eq!(values(&got), values(&want), "{policy:?}, chunk {chunk}");
        }
    }
    // Nested: the loop at both levels derives in the rule's order.
    let xs = zeros(&[2, 3, 3]);
    let nested = |f: fn(Tensor) -> Result<Tensor>| {
        vmap(move |x: Tensor| {
            vmap(f)
                .randomness(Randomness::Different)
                .fallback(FallbackPolicy::Silent)
                .call(&x)
        })
        .randomness(Randomness::Different)
        .fallback(FallbackPolicy::Silent)
        .call(&xs)
        .unwrap()
    };
    assert_eq!(
        values(&nested(|x| down::jitter(&x, 1.0, 21))),
        values(&nested(|x| ops::add(&x, &ops::rand(&[3], 21, DType::F64)?)))
    );
    // The loop is still the fallback: its policy applies to batched inputs.
    let err = vmap(by_loop)
        .randomness(Randomness::Different)
        .fallback(FallbackPolicy::Error)
        .call(&x)
        .unwrap_err();
    assert!(
        matches!(err.root(), Error::Fallback { op, .. } if op == "jitter"),
        "{err:?}"
    );
}

#[test]
fn large_fallback_batches_match_the_rule() {
    // Large enough for the rayon feature's parallel loop (run this file with
    // `--features rayon` too): the draws do not depend on the thread count.
    let x = zeros(&[64, 16]);
    let want = vmap(|x: Tensor| ops::add(&x, &ops::rand(&[16], 3, DType::F64)?))
        .randomness(Randomness::Different)
        .call(&x)
        .unwrap();
    let got = vmap(|x: Tensor| down::jitter(&x, 1.0, 3))
        .randomness(Randomness::Different)
        .fallback(FallbackPolicy::Silent)
        .call(&x)
        .unwrap();
    assert_eq!(values(&got), values(&want));
    assert!(all_distinct(&rows(&values(&got))));
}

#[test]
fn dropout_keeps_the_mean_and_its_gradient_is_the_scaled_mask() {
    let n = 20_000;
    let x = Tensor::from(ArrayD::from_elem(IxDyn(&[n]), 3.0f64));
    for p in [0.1, 0.5, 0.8] {
        let y = values(&ops::dropout(&x, p, 7).unwrap());
        let mean = y.mean().unwrap();
        assert!((mean - 3.0).abs() < 0.15, "p {p}: mean {mean}");
        let dropped = y.iter().filter(|&&v| v == 0.0).count() as f64 / n as f64;
        assert!((dropped - p).abs() < 0.02, "p {p}: dropped {dropped}");
        assert!(y
            .iter()
            .all(|&v| v == 0.0 || (v - 3.0 / (1.0 - p)).abs() < 1e-12));
    }
    // The gradient of sum(dropout(x)) is the mask over (1 - p).
    let x = Tensor::from(Array::from_shape_fn(50, |i| i as f64 * 0.1 - 2.0).into_dyn());
    let p = 0.3;
    let g = grad(|x: Tensor| ops::sum(&ops::dropout(&x, p, 5)?, None, false))
        .call(&x)
        .unwrap();
    let mask = values(&ops::bernoulli(&ops::full(&[50], 1.0 - p, DType::F64).unwrap(), 5).unwrap());
    assert_eq!(values(&g), mask.mapv(|m| m / (1.0 - p)));
    assert!(mask.iter().any(|&m| m == 0.0) && mask.iter().any(|&m| m == 1.0));
    // p = 0 is the identity, p = 1 gives zeros (and a zero gradient).
    assert_eq!(values(&ops::dropout(&x, 0.0, 1).unwrap()), values(&x));
    assert!(values(&ops::dropout(&x, 1.0, 1).unwrap())
        .iter()
        .all(|&v| v == 0.0));
    // Per-sample gradients: each example its own mask.
    let xs = Tensor::from(ArrayD::from_elem(IxDyn(&[4, 30]), 1.0f64));
    let per = values(
        &vmap(|x: Tensor| {
            grad(|x: Tensor| ops::sum(&ops::dropout(&x, 0.5, 8)?, None, false)).call(&x)
        })
        .randomness(Randomness::Different)
        .call(&xs)
        .unwrap(),
    );
    assert!(all_distinct(&rows(&per)));
    assert!(per.iter().all(|&v| v == 0.0 || v == 2.0));
}

#[test]
fn bernoulli_frequency_follows_p() {
    let n = 20_000;
    for p in [0.05, 0.5, 0.9] {
        let probs = ops::full(&[n], p, DType::F32).unwrap();
        let b = ops::bernoulli(&probs, 99)
            .unwrap()
            .to_array::<f32>()
            .unwrap();
        assert!(b.iter().all(|&v| v == 0.0 || v == 1.0));
        let freq = b.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        assert!((freq - p).abs() < 0.02, "p {p}: frequency {freq}");
    }
    // Probabilities outside [0, 1] act clamped.
    let edge = Tensor::from(ndarray::array![-0.5f64, 0.0, 1.0, 1.5].into_dyn());
    assert_eq!(
        values(&ops::bernoulli(&edge, 1).unwrap()),
        ndarray::array![0.0, 0.0, 1.0, 1.0].into_dyn()
    );
}

#[test]
fn rand_and_randn_have_their_distributions() {
    let u = values(&ops::rand(&[10_000], 1, DType::F64).unwrap());
    assert!(u.iter().all(|v| (0.0..1.0).contains(v)));
    assert!((u.mean().unwrap() - 0.5).abs() < 0.02);
    let z = values(&ops::randn(&[10_000], 1, DType::F64).unwrap());
    let mean = z.mean().unwrap();
    let var = z.mapv(|v| (v - mean) * (v - mean)).mean().unwrap();
    assert!(
        mean.abs() < 0.05 && (var - 1.0).abs() < 0.05,
        "{mean} {var}"
    );
    // Deterministic in the seed, different across seeds, f32 too.
    assert_eq!(u, values(&ops::rand(&[10_000], 1, DType::F64).unwrap()));
    assert_ne!(u, values(&ops::rand(&[10_000], 2, DType::F64).unwrap()));
    let f = ops::rand(&[3, 2], 1, DType::F32).unwrap();
    assert_eq!((f.shape(), f.dtype()), (&[3usize, 2][..], DType::F32));
}

#[test]
fn hostile_inputs_are_errors_naming_the_op() {
    let x = zeros(&[3]);
    let cases: Vec<(&str, Result<Tensor>)> = vec![
        ("dropout", ops::dropout(&x, 1.5, 0)),
        ("dropout", ops::dropout(&x, -0.5, 0)),
        ("dropout", ops::dropout(&x, f64::NAN, 0)),
        (
            "dropout",
            ops::dropout(&Tensor::from(ndarray::array![1i64].into_dyn()), 0.5, 0),
        ),
        ("rand", ops::rand(&[-1], 0, DType::F32)),
        ("rand", ops::rand(&[i64::MAX, i64::MAX], 0, DType::F32)),
        ("rand", ops::rand(&[1 << 40, 1 << 20], 0, DType::F64)),
        ("randn", ops::randn(&[2, -3], 0, DType::F64)),
        ("randn", ops::randn(&[2], 0, DType::I64)),
        (
            "bernoulli",
            ops::bernoulli(&Tensor::from(ndarray::array![1i64].into_dyn()), 0),
        ),
        (
            "random_uniform",
            ops::random_uniform(&zeros(&[2]), &[2], DType::F64),
        ),
        (
            "random_normal",
            ops::random_normal(&ops::random_key(0).unwrap(), &[1 << 62, 4], DType::F64),
        ),
    ];
    for (op, r) in cases {
        let err = r.unwrap_err();
        assert_eq!(err.op(), Some(op), "{err}");
        assert!(err.to_string().starts_with(&format!("{op}: ")), "{err}");
    }
    // Under vmap the meta runs first, on logical shapes, at any policy.
    for policy in [Randomness::Error, Randomness::Different, Randomness::Same] {
        let err = vmap(|x: Tensor| ops::dropout(&x, 2.0, 0))
            .randomness(policy)
            .call(&zeros(&[2, 3]))
            .unwrap_err();
        assert_eq!(err.op(), Some("dropout"), "{policy:?}: {err}");
        assert!(
            matches!(err.root(), Error::InvalidArgument { .. }),
            "{err:?}"
        );
        let err = vmap(|_x: Tensor| ops::rand(&[-2], 0, DType::F32))
            .randomness(policy)
            .call(&zeros(&[2, 3]))
            .unwrap_err();
        assert_eq!(err.op(), Some("rand"), "{policy:?}: {err}");
    }
}

#[test]
fn an_empty_batch_draws_nothing() {
    for policy in [Randomness::Different, Randomness::Same] {
        let out = vmap(draws)
            .randomness(policy)
            .call(&zeros(&[0, N]))
            .unwrap();
        assert!(out.iter().all(|t| t.shape() == [0, N]), "{policy:?}");
    }
}

/// `grad(sum(dropout(x, p, seed)))`: the mask over `1 - p`.
fn dropout_grad(x: &Tensor, p: f64, seed: i64) -> Result<Tensor> {
    grad(|x: Tensor| ops::sum(&ops::dropout(&x, p, seed)?, None, false)).call(x)
}

#[test]
fn dropout_composes_with_vmap_under_each_policy() {
    let xs = Tensor::from(Array::from_shape_fn((4, 16), |(i, j)| (i + j) as f64 * 0.1).into_dyn());
    let (p, seed) = (0.4, 17);
    for policy in [Randomness::Different, Randomness::Same] {
        let seed_of = |i: usize| match policy {
            Randomness::Different => derive_seed(seed, i as u64),
            _ => seed,
        };
        // vmap∘grad equals the loop of per-example gradients.
        let per = vmap(|x: Tensor| dropout_grad(&x, p, seed))
            .randomness(policy)
            .call(&xs)
            .unwrap();
        // grad∘vmap: the gradient of the batched sum, example by example.
        let whole = grad(|xs: Tensor| {
            let ys = vmap(|x: Tensor| ops::dropout(&x, p, seed))
                .randomness(policy)
                .call(&xs)?;
            ops::sum(&ys, None, false)
        })
        .call(&xs)
        .unwrap();
        for i in 0..4 {
            let x = xs.select(0, i).unwrap();
            let want = values(&dropout_grad(&x, p, seed_of(i)).unwrap());
            assert_eq!(
                values(&per.select(0, i).unwrap()),
                want,
                "{policy:?} vmap∘grad {i}"
            );
            assert_eq!(
                values(&whole.select(0, i).unwrap()),
                want,
                "{policy:?} grad∘vmap {i}"
            );
            let y = ops::dropout(&x, p, seed_of(i)).unwrap();
            let batched = vmap(|x: Tensor| ops::dropout(&x, p, seed))
                .randomness(policy)
                .call(&xs)
                .unwrap();
            assert_eq!(values(&batched.select(0, i).unwrap()), values(&y));
        }
    }
}

#[test]
fn every_random_op_of_the_table_draws_example_i_from_its_derived_seed() {
    // The op-library harness checks random ops against the loop under
    // `Same`; here every sample of every random op is checked under
    // `Different`: example i equals the op called on example i with seed
    // `derive_seed(seed, i)`.
    use batchrules::dispatch::call_op;
    use batchrules::registry::registry;
    use batchrules::rules::Arg;
    use batchrules::testing::{sample_tensors, with_tensors};
    use batchrules_samples::op_infos;
    let reg = registry().unwrap();
    let mut checked = Vec::new();
    for info in op_infos().filter(|i| i.table.path == "batchrules::ops") {
        let entry = reg.find(info.table.path, info.op).unwrap();
        if !entry.schema.random {
            continue;
        }
        let seed_at = entry
            .schema
            .args
            .iter()
            .position(|a| a.name == "seed")
            .unwrap();
        for sample in (info.samples)() {
            let tensors = sample_tensors(&sample);
            let size = 3;
            let batched: Vec<Tensor> = tensors
                .iter()
                .map(|t| ops::stack(&vec![t.clone(); size], 0).unwrap())
                .collect();
            let got =
                vmap(
                    |ts: Vec<Tensor>| Ok(call_op(entry, &with_tensors(&sample, &ts)?)?.into_vec()),
                )
                .randomness(Randomness::Different)
                .batch_size(size)
                .call(&batched[..])
                .unwrap();
            let Arg::Int(seed) = sample[seed_at] else {
                panic!("seed")
            };
            for i in 0..size {
                let mut one = sample.clone();
                one[seed_at] = Arg::Int(derive_seed(seed, i as u64));
                let want = call_op(entry, &one).unwrap();
                for (g, w) in got.iter().zip(want.iter()) {
                    let g = ops::to_dtype(&g.select(0, i).unwrap(), DType::F64).unwrap();
                    let w = ops::to_dtype(w, DType::F64).unwrap();
                    assert_eq!(values(&g), values(&w), "{} example {i}", info.op);
                }
            }
            checked.push(info.op);
        }
    }
    for op in ["rand", "randn", "bernoulli", "dropout", "random_key"] {
        assert!(checked.contains(&op), "{op} not checked");
    }
}

#[test]
fn the_table_marks_exactly_the_random_ops() {
    let reg = batchrules::registry::registry().unwrap();
    let mut random: Vec<&str> = reg
        .ops()
        .iter()
        // The built-in table and the downstream crate's; the other suites of
        // this test binary declare random test ops of their own.
        .filter(|e| matches!(e.table.path, "batchrules::ops" | "downstream_ops::ops"))
        .filter(|e| e.schema.random)
        .map(|e| e.name())
        .collect();
    random.sort_unstable();
    // The built-in ones, and the downstream crate's `jitter`.
    assert_eq!(
        random,
        [
            "bernoulli",
            "dropout",
            "jitter",
            "rand",
            "randn",
            "random_key"
        ]
    );
    // The keyed draws are deterministic in their key, so not random ops.
    let find = |n: &str| reg.find("batchrules::ops", n).unwrap();
    assert!(!find("random_uniform").schema.random && !find("zeros").schema.random);
    assert!(find("rand").schema.doc.contains("[0, 1)"));
}

/// An op without a batching rule whose kernel runs a vmap of its own that
/// draws: the outer vmap's fallback loop must not hide the kernel's vmap
/// level from the random op.
mod kernel_with_vmap {
    use batchrules::rules::TensorMeta;
    use batchrules::{kernel, meta, ops, vmap, DType, Randomness, Result, Tensor};

    pub mod table {
        batchrules::op_table!(
            toml = r#"
[[op]]
schema = "noisy_rows(Tensor self) -> Tensor"
kind = "primitive"
differentiable = false
"#
        );
    }

    #[meta(op = "noisy_rows", table = table)]
    fn noisy_rows_meta(x: &TensorMeta) -> Result<TensorMeta> {
        Ok(x.clone())
    }

    /// Each row of `x` plus its own noise (seed 3, derived per row).
    #[kernel(op = "noisy_rows", table = table)]
    fn noisy_rows_kernel(x: &Tensor) -> Result<Tensor> {
        let n = x.shape()[1] as i64;
        vmap(|r: Tensor| ops::add(&r, &ops::rand(&[n], 3, DType::F64)?))
            .randomness(Randomness::Different)
            .call(x)
    }
}

#[test]
fn a_kernel_running_its_own_vmap_draws_per_row_inside_the_fallback_loop() {
    let xs = zeros(&[2, 3, 8]);
    let dense = values(&kernel_with_vmap::table::noisy_rows(&xs.select(0, 0).unwrap()).unwrap());
    assert!(all_distinct(&rows(&dense)));
    // Under an outer vmap the op runs in the fallback loop, once per example:
    // each example is the dense result (the op itself draws with fixed seeds).
    for policy in [Randomness::Error, Randomness::Different, Randomness::Same] {
        let out = vmap(|x: Tensor| kernel_with_vmap::table::noisy_rows(&x))
            .randomness(policy)
            .fallback(FallbackPolicy::Silent)
            .call(&xs)
            .unwrap();
        for i in 0..2 {
            assert_eq!(values(&out.select(0, i).unwrap()), dense, "{policy:?}");
        }
    }
}
