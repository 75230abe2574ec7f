//! `jit`: replays equal eager execution bit for bit (every op sample of the
//! built-in table, dense, under vmap and under grad), tracing errors are
//! eager's errors, data-dependent code is refused, signatures retrace, the
//! cache is bounded, and `jit` inside another transform runs eagerly.

use batchrules::dispatch::call_op;
use batchrules::registry::OpEntry;
use batchrules::rules::Arg;
use batchrules::testing::{describe, example, sample_tensors, with_tensors};
use batchrules::{grad, jit, ops, vmap, DType, FallbackPolicy, Randomness, Result, Tensor};

const TABLE: &str = "batchrules::ops";

/// The bits of a tensor: shape, dtype and each element's bit pattern, with
/// every NaN as one pattern.
///
/// The one exception to bitwise equality, listed in `jit`'s docs: the sign
/// and payload of a NaN. A replay writes some pointwise results over an
/// operand's buffer, through another loop than the out-of-place kernel's,
/// and LLVM treats float addition and multiplication as commutative, so
/// which NaN operand an x86 instruction propagates (and with it the sign
/// bit) may differ between the two loops. Every other bit, -0.0 included,
/// must agree.
fn bits(t: &Tensor) -> (Vec<usize>, DType, Vec<u64>) {
    let nan = |b: u64| match t.dtype() {
        DType::F32 => f32::from_bits(b as u32).is_nan(),
        DType::F64 => f64::from_bits(b).is_nan(),
        DType::I64 | DType::Bool => false,
    };
    let canonical = crate::common::bits(t)
        .into_iter()
        .map(|b| if nan(b) { u64::MAX } else { b })
        .collect();
    (t.shape().to_vec(), t.dtype(), canonical)
}

fn same_bits(a: &[Tensor], b: &[Tensor]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(x) == bits(y))
}

/// The ops of the table with their sample and error inputs.
/// An op with its sample inputs and its error inputs.
type OpSamples = (
    &'static OpEntry,
    Vec<Vec<Arg<Tensor>>>,
    Vec<Vec<Arg<Tensor>>>,
);

fn samples() -> Vec<OpSamples> {
    let reg = batchrules::registry::registry().unwrap();
    batchrules_samples::op_infos()
        .filter(|i| i.table.path == TABLE)
        .map(|i| {
            let entry = reg.find(TABLE, i.op).unwrap();
            (entry, (i.samples)(), (i.errors)())
        })
        .collect()
}

type OpFn<'a> = dyn Fn(Vec<Tensor>) -> Result<Vec<Tensor>> + 'a;

/// Runs `f` eagerly and under `jit` on `inputs`, then under the same `jit`
/// on `other` (same signature, other values): both replays must equal eager
/// bit for bit, with one trace. `Err` describes the first difference.
fn compare(f: &OpFn<'_>, inputs: &[Tensor], other: &[Tensor]) -> std::result::Result<(), String> {
    let jitted = jit(|ts: Vec<Tensor>| f(ts));
    for (round, ts) in [inputs, other].into_iter().enumerate() {
        let eager = f(ts.to_vec());
        let traced = jitted.call(ts);
        match (eager, traced) {
            (Ok(e), Ok(t)) if same_bits(&e, &t) => {}
            (Ok(_), Ok(_)) => return Err(format!("call {round}: values differ from eager")),
            (Err(e), Err(t)) if e.to_string() == t.to_string() => {}
            (e, t) => {
                return Err(format!(
                    "call {round}: eager {:?}, jit {:?}",
                    e.map(|_| ()).map_err(|e| e.to_string()),
                    t.map(|_| ()).map_err(|e| e.to_string())
                ))
            }
        }
    }
    if jitted.traces() > 1 {
        return Err(format!(
            "traced {} times for one signature",
            jitted.traces()
        ));
    }
    Ok(())
}

fn is_float(t: &Tensor) -> bool {
    matches!(t.dtype(), DType::F32 | DType::F64)
}

#[test]
fn jit_equals_eager_bitwise_on_every_op_sample() {
    let _policy = batchrules::scoped_fallback_policy(FallbackPolicy::Error);
    let mut failures = Vec::new();
    let mut cases = 0;
    for (entry, samples, _) in samples() {
        for sample in samples {
            let tensors = sample_tensors(&sample);
            let other: Vec<Tensor> = tensors.iter().map(|t| example(t, 1).unwrap()).collect();
            let dense =
                |ts: Vec<Tensor>| Ok(call_op(entry, &with_tensors(&sample, &ts)?)?.into_vec());
            // Under vmap: every tensor batched at dim 0 (three examples).
            let stack = |k0: usize| -> Vec<Tensor> {
                tensors
                    .iter()
                    .map(|t| {
                        let ex: Vec<Tensor> =
                            (k0..k0 + 3).map(|k| example(t, k).unwrap()).collect();
                        ops::stack(&ex, 0).unwrap()
                    })
                    .collect()
            };
            let randomness = if entry.schema.random {
                Randomness::Different
            } else {
                Randomness::Error
            };
            let batched = |ts: Vec<Tensor>| {
                vmap(|ts: Vec<Tensor>| Ok(call_op(entry, &with_tensors(&sample, &ts)?)?.into_vec()))
                    .randomness(randomness)
                    .call(ts)
            };
            // Under grad: the sum of the float outputs, by the first float input.
            let first_float = tensors.iter().position(is_float);
            let by_grad = |ts: Vec<Tensor>| -> Result<Vec<Tensor>> {
                let i = first_float.unwrap_or(0);
                let loss = |x: Tensor| -> Result<Tensor> {
                    let mut all = ts.clone();
                    all[i] = x;
                    let outs = call_op(entry, &with_tensors(&sample, &all)?)?;
                    let mut total: Option<Tensor> = None;
                    for o in outs.iter().filter(|o| is_float(o)) {
                        let s = ops::sum(o, None, false)?;
                        total = Some(match total {
                            Some(t) => ops::add(&t, &s)?,
                            None => s,
                        });
                    }
                    total.ok_or_else(|| batchrules::Error::Tensor("no float output".into()))
                };
                Ok(vec![grad(loss).call(&ts[i])?])
            };
            let mut runs: Vec<(&str, &OpFn<'_>, Vec<Tensor>, Vec<Tensor>)> =
                vec![("dense", &dense, tensors.clone(), other.clone())];
            if !tensors.is_empty() {
                runs.push(("vmap", &batched, stack(0), stack(1)));
            }
            let differentiable = entry.schema.differentiable && !entry.schema.random;
            if differentiable
                && first_float.is_some()
                && dense(tensors.clone()).is_ok_and(|o| o.iter().any(is_float))
            {
                runs.push(("grad", &by_grad, tensors.clone(), other.clone()));
            }
            for (how, f, a, b) in runs {
                cases += 1;
                if let Err(m) = compare(f, &a, &b) {
                    failures.push(format!(
                        "{} {} ({how}): {m}",
                        entry.name(),
                        describe(&sample)
                    ));
                }
            }
        }
    }
    assert!(cases > 300, "only {cases} cases ran");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn jit_gives_eager_errors_on_every_error_sample() {
    let mut failures = Vec::new();
    for (entry, _, errors) in samples() {
        for sample in errors {
            let tensors = sample_tensors(&sample);
            let f = |ts: Vec<Tensor>| -> Result<Vec<Tensor>> {
                Ok(call_op(entry, &with_tensors(&sample, &ts)?)?.into_vec())
            };
            let eager = f(tensors.clone()).map(|_| ()).map_err(|e| e.to_string());
            let traced = jit(f)
                .call(&tensors[..])
                .map(|_| ())
                .map_err(|e| e.to_string());
            if eager.is_ok() || eager != traced {
                failures.push(format!(
                    "{} {}: eager {eager:?}, jit {traced:?}",
                    entry.name(),
                    describe(&sample)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn t(values: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).unwrap()
}

#[test]
fn meta_errors_inside_transforms_are_eagers() {
    // vmap(triu) on [32, 2]: each example is 1-d, which triu refuses.
    let x = Tensor::from(ndarray::Array::<f64, _>::zeros((32, 2)).into_dyn());
    let f = |x: Tensor| vmap(|r: Tensor| ops::triu(&r, 0)).call(&x);
    let eager = f(x.clone()).unwrap_err().to_string();
    let traced = jit(f).call(&x).unwrap_err().to_string();
    assert_eq!(traced, eager);
    assert!(traced.contains("triu"), "{traced}");
}

#[test]
fn reading_data_while_tracing_is_an_error_that_says_so() {
    let f = |x: Tensor| {
        let first = x.to_array::<f64>()?[[0]];
        if first > 0.0 {
            ops::neg(&x)
        } else {
            Ok(x)
        }
    };
    let x = t(&[1.0, 2.0], &[2]);
    // Eagerly it runs,
    assert!(f(x.clone()).is_ok());
    // traced it cannot: the error names what read the data and says what to do.
    let err = jit(f).call(&x).unwrap_err().to_string();
    assert!(err.contains("Tensor::to_array"), "{err}");
    assert!(err.contains("jit"), "{err}");
    assert!(err.contains("without `jit`"), "{err}");
}

#[test]
fn a_new_signature_traces_again_and_the_cache_is_bounded() {
    let f = jit(|x: Tensor| ops::mul(&x, &x)).cache_size(2);
    let a = t(&[1.0, 2.0, 3.0], &[3]);
    let b = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let c = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(
        f.call(&a)
            .unwrap()
            .to_array::<f64>()
            .unwrap()
            .as_slice()
            .unwrap(),
        &[1.0, 4.0, 9.0]
    );
    f.call(&t(&[4.0, 5.0, 6.0], &[3])).unwrap();
    assert_eq!(f.traces(), 1, "same shape and dtype: a replay");
    f.call(&b).unwrap();
    assert_eq!(f.traces(), 2, "a new shape traces again");
    let a32 = Tensor::from(a.to_array::<f64>().unwrap().mapv(|v| v as f32));
    f.call(&a32).unwrap();
    assert_eq!(f.traces(), 3, "a new dtype traces again");
    // The cache holds 2: [4] f64 and [3] f32; [3] f64 was dropped.
    f.call(&b).unwrap();
    assert_eq!(f.traces(), 3);
    f.call(&c).unwrap();
    f.call(&a).unwrap();
    assert_eq!(f.traces(), 5, "the least recently used program was dropped");
    let zero = jit(|x: Tensor| ops::neg(&x)).cache_size(0);
    assert!(zero
        .call(&a)
        .unwrap_err()
        .to_string()
        .contains("cache_size(0)"));
}

#[test]
fn random_ops_draw_what_eager_draws() {
    let x = Tensor::from(ndarray::Array::<f64, _>::ones((4, 16)).into_dyn());
    // Dense: a fixed seed is a pure draw.
    let f = |x: Tensor| ops::dropout(&x, 0.5, 11);
    let jitted = jit(f);
    assert_eq!(
        bits(&jitted.call(&x).unwrap()),
        bits(&f(x.clone()).unwrap())
    );
    // Under vmap with Different: each example its own stream, as eagerly.
    let g = |x: Tensor| {
        vmap(|r: Tensor| ops::dropout(&r, 0.5, 11))
            .randomness(Randomness::Different)
            .call(&x)
    };
    let eager = g(x.clone()).unwrap();
    assert_eq!(bits(&jit(g).call(&x).unwrap()), bits(&eager));
    // And the default policy refuses, as it does eagerly.
    let h = |x: Tensor| vmap(|r: Tensor| ops::dropout(&r, 0.5, 11)).call(&x);
    assert_eq!(
        jit(h).call(&x).unwrap_err().to_string(),
        h(x.clone()).unwrap_err().to_string()
    );
    // `rand` has no tensor argument: recorded, and folded to a constant.
    let r = jit(|x: Tensor| ops::add(&x, &ops::rand(&[4, 16], 3, DType::F64)?));
    let program = r.lower(&x).unwrap();
    assert!(program.passes().folded >= 1, "{program}");
    assert_eq!(
        program.op_counts(),
        vec![("add".to_string(), 1)],
        "{program}"
    );
    assert_eq!(
        bits(&r.call(&x).unwrap()),
        bits(&ops::add(&x, &ops::rand(&[4, 16], 3, DType::F64).unwrap()).unwrap())
    );
}

#[test]
fn the_loss_value_of_per_example_gradients_is_dropped() {
    let loss = |(w, x): (Tensor, Tensor)| ops::sum(&ops::tanh(&ops::mul(&w, &x)?)?, None, false);
    let per_example = jit(move |(w, xs): (Tensor, Tensor)| {
        vmap(|(w, x): (Tensor, Tensor)| grad(loss).call((&w, &x)))
            .in_dims([None, Some(0)])
            .call((&w, &xs))
    });
    let w = t(&[0.5, -1.0, 2.0], &[3]);
    let xs = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let program = per_example.lower((&w, &xs)).unwrap();
    let text = program.to_string();
    // The forward sum (the loss value) is recorded but no output needs it.
    assert!(program.passes().dead >= 1, "{text}");
    assert!(
        !program.op_counts().iter().any(|(op, _)| op == "sum"),
        "{text}"
    );
    assert!(
        text.contains("= input 0") && text.contains("return ("),
        "{text}"
    );
    let eager = vmap(|(w, x): (Tensor, Tensor)| grad(loss).call((&w, &x)))
        .in_dims([None, Some(0)])
        .call((&w, &xs))
        .unwrap();
    assert_eq!(bits(&per_example.call((&w, &xs)).unwrap()), bits(&eager));
}

#[test]
fn equal_steps_are_merged() {
    let f = jit(|x: Tensor| ops::add(&ops::exp(&x)?, &ops::exp(&x)?));
    let x = t(&[0.5, 1.5], &[2]);
    let program = f.lower(&x).unwrap();
    assert_eq!(program.passes().merged, 1, "{program}");
    assert_eq!(program.len(), 2, "{program}");
    let e = ops::exp(&x).unwrap();
    assert_eq!(bits(&f.call(&x).unwrap()), bits(&ops::add(&e, &e).unwrap()));
}

#[test]
fn jit_inside_another_transform_runs_eagerly_with_the_same_results() {
    let x = t(&[0.5, 1.5, -2.0, 3.0, 0.25, 1.0], &[3, 2]);
    let f = |x: Tensor| ops::sum(&ops::mul(&ops::sin(&x)?, &x)?, None, false);
    let inner = jit(f);
    let under_vmap = vmap(|r: Tensor| inner.call(&r)).call(&x).unwrap();
    assert_eq!(bits(&under_vmap), bits(&vmap(f).call(&x).unwrap()));
    let under_grad = grad(|r: Tensor| inner.call(&r)).call(&x).unwrap();
    assert_eq!(bits(&under_grad), bits(&grad(f).call(&x).unwrap()));
    assert_eq!(inner.traces(), 0, "nothing was traced");
    assert!(vmap(|r: Tensor| inner.lower(&r).map(|_| r))
        .call(&x)
        .is_err());
}

#[test]
fn structs_and_captured_tensors() {
    #[derive(Clone, batchrules::TensorTree)]
    struct Lin {
        w: Tensor,
        b: Tensor,
    }
    let scale = t(&[2.0], &[1]);
    let p = Lin {
        w: t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]),
        b: t(&[0.5, -0.5], &[2]),
    };
    let x = t(&[1.0, -1.0], &[2]);
    let f = |(p, x): (Lin, Tensor)| -> Result<Lin> {
        let g = grad(|p: Lin| {
            ops::sum(
                &ops::mul(&ops::linear(&x, &p.w, Some(&p.b))?, &scale)?,
                None,
                false,
            )
        })
        .call(&p)?;
        Ok(g)
    };
    let eager = f((p.clone(), x.clone())).unwrap();
    let traced = jit(f).call((&p, &x)).unwrap();
    assert_eq!(bits(&traced.w), bits(&eager.w));
    assert_eq!(bits(&traced.b), bits(&eager.b));
}

/// The model workloads under `jit`: W12-W17 (`benches/models` and W16/W17's
/// conv layer, at the batches `threads.rs` uses), each replayed on a rayon
/// pool of one thread and of two, equal to eager execution bit for bit.
mod models {
    use batchrules::prelude::*;
    use batchrules::{jit, FallbackPolicy};

    use crate::threads::{first, leaf_bits, models};

    /// `eager()` once, and `jitted()` on pools of 1 and 2 threads (the
    /// first call traces); every result has eager's bits.
    fn jit_equals_eager<T: TensorTree + Send>(
        name: &str,
        eager: impl Fn() -> Result<T>,
        jitted: impl Fn() -> Result<T> + Sync,
    ) {
        let want = leaf_bits(&eager().unwrap());
        assert!(!want.is_empty());
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = leaf_bits(&pool.install(&jitted).unwrap());
            assert!(
                got == want,
                "{name}: jit on {threads} threads differs from eager"
            );
        }
    }

    #[test]
    fn w12_w14_mnist_cnn() {
        let p = models::MnistCnn::new().unwrap();
        let (x, y) = models::mnist_inputs().unwrap();
        let (x, y) = (first(&x, 16), first(&y, 16));
        let grads = jit(|(p, x, y): (models::MnistCnn, Tensor, Tensor)| {
            models::mnist_per_sample_grads(&p, &x, &y)
        });
        jit_equals_eager(
            "W12",
            || models::mnist_per_sample_grads(&p, &x, &y),
            || grads.call((&p, &x, &y)),
        );
        let step =
            jit(|(p, x, y): (models::MnistCnn, Tensor, Tensor)| models::dp_sgd_step(&p, &x, &y, 7));
        jit_equals_eager(
            "W14",
            || models::dp_sgd_step(&p, &x, &y, 7),
            || step.call((&p, &x, &y)),
        );
        assert_eq!((grads.traces(), step.traces()), (1, 1));
    }

    #[test]
    fn w13_transformer() {
        let p = models::Block::new().unwrap();
        let (x, y) = models::transformer_inputs().unwrap();
        let (x, y) = (first(&x, 8), first(&y, 8));
        let grads = jit(|(p, x, y): (models::Block, Tensor, Tensor)| {
            models::transformer_per_sample_grads(&p, &x, &y)
        });
        jit_equals_eager(
            "W13",
            || models::transformer_per_sample_grads(&p, &x, &y),
            || grads.call((&p, &x, &y)),
        );
    }

    #[test]
    fn w15_ntk() {
        let p = models::NtkCnn::new().unwrap();
        let (x1, x2) = models::ntk_inputs().unwrap();
        let (x1, x2) = (first(&x1, 3), first(&x2, 2));
        let ntk = jit(|(p, x1, x2): (models::NtkCnn, Tensor, Tensor)| models::ntk(&p, &x1, &x2));
        jit_equals_eager(
            "W15",
            || models::ntk(&p, &x1, &x2),
            || ntk.call((&p, &x1, &x2)),
        );
    }

    #[test]
    fn w16_w17_conv_layer() {
        let values = |n: usize, scale: f32| -> Vec<f32> {
            (0..n)
                .map(|i| ((i as f32) * 0.0137).sin() * scale)
                .collect()
        };
        let x = Tensor::from_shape_vec(&[4, 32, 28, 28], values(4 * 32 * 28 * 28, 1.0)).unwrap();
        let w = Tensor::from_shape_vec(&[64, 32, 3, 3], values(64 * 32 * 9, 0.05)).unwrap();
        let forward = |(x, w): (Tensor, Tensor)| ops::conv2d(&x, &w, None, &[1], &[1], &[1], 1);
        let jitted = jit(forward);
        jit_equals_eager(
            "W16",
            || forward((x.clone(), w.clone())),
            || jitted.call((&x, &w)),
        );
        let per_sample = |(w, x): (Tensor, Tensor)| {
            vmap(|(w, x): (Tensor, Tensor)| {
                grad(|(w, x): (Tensor, Tensor)| {
                    ops::conv2d(&x.unsqueeze(0)?, &w, None, &[1], &[1], &[1], 1)?.sum()
                })
                .call((&w, &x))
            })
            .in_dims([None, Some(0)])
            .fallback(FallbackPolicy::Error)
            .call((&w, &x))
        };
        let jitted = jit(per_sample);
        jit_equals_eager(
            "W17",
            || per_sample((w.clone(), x.clone())),
            || jitted.call((&w, &x)),
        );
        // The forward conv is dead: only the weight gradients are returned.
        let program = jitted.lower((&w, &x)).unwrap();
        assert!(program.passes().dead > 0, "{program}");
    }
}

#[test]
fn jit_of_jacrev_jacfwd_hessian_and_jvp_equals_eager() {
    use batchrules::{hessian, jacfwd, jacrev, jvp};
    let x = t(&[0.5, -1.5, 2.0], &[3]);
    let w = t(&[1.0, 2.0, 0.5, -1.0, 0.25, 3.0], &[2, 3]);
    let f = |x: Tensor| ops::tanh(&ops::linear(&x, &w, None)?);
    let scalar = |x: Tensor| ops::sum(&ops::mul(&ops::sin(&x)?, &x)?, None, false);
    type Case<'a> = (&'static str, Box<dyn Fn(Tensor) -> Result<Tensor> + 'a>);
    let cases: Vec<Case<'_>> = vec![
        ("jacrev", Box::new(move |x: Tensor| jacrev(f).call(&x))),
        ("jacfwd", Box::new(move |x: Tensor| jacfwd(f).call(&x))),
        (
            "hessian",
            Box::new(move |x: Tensor| hessian(scalar).call(&x)),
        ),
        ("jvp", Box::new(move |x: Tensor| Ok(jvp(f, &x, &x)?.1))),
    ];
    for (name, g) in cases {
        let eager = g(x.clone()).unwrap();
        let jitted = jit(|x: Tensor| g(x));
        for round in 0..2 {
            let got = jitted.call(&x).unwrap();
            assert_eq!(bits(&got), bits(&eager), "{name}, call {round}");
        }
        assert_eq!(jitted.traces(), 1, "{name}");
    }
}

#[test]
fn a_traced_tensor_kept_past_its_trace_is_an_error_not_a_panic() {
    use std::sync::Mutex;
    let kept: Mutex<Option<Tensor>> = Mutex::new(None);
    let f = jit(|x: Tensor| {
        let mut k = kept.lock().unwrap();
        let y = match k.take() {
            // A tensor of an earlier trace: its level is gone.
            Some(old) => ops::add(&x, &old)?,
            None => ops::neg(&x)?,
        };
        *k = Some(y.clone());
        Ok(y)
    });
    let a = t(&[1.0, 2.0], &[2]);
    let b = t(&[1.0, 2.0, 3.0], &[3]);
    assert_eq!(bits(&f.call(&a).unwrap()), bits(&ops::neg(&a).unwrap()));
    // A new signature traces again and meets the stale traced tensor.
    let err = f.call(&b).unwrap_err().to_string();
    assert!(err.contains("outside the jit that created it"), "{err}");
}

#[test]
fn steps_that_differ_only_in_the_sign_of_a_zero_are_not_merged() {
    // On negative values leaky_relu with slope 0.0 gives -0.0, with -0.0
    // gives +0.0: two steps, not one.
    let f = |x: Tensor| Ok((ops::leaky_relu(&x, 0.0)?, ops::leaky_relu(&x, -0.0)?));
    let x = t(&[-1.0, 2.0], &[2]);
    let (a, b) = f(x.clone()).unwrap();
    assert_ne!(bits(&a), bits(&b));
    let jitted = jit(f);
    let (ja, jb) = jitted.call(&x).unwrap();
    assert_eq!((bits(&ja), bits(&jb)), (bits(&a), bits(&b)));
    assert_eq!(jitted.lower(&x).unwrap().passes().merged, 0);
}

#[test]
fn pointwise_steps_write_over_values_used_for_the_last_time() {
    // `exp` cannot write over `x` (an input: the caller holds it); `mul`,
    // `add` and `tanh` write over the value before them, which nothing else
    // reads afterwards.
    let f = |x: Tensor| ops::tanh(&ops::add(&ops::mul(&ops::exp(&x)?, &x)?, &x)?);
    let jitted = jit(f);
    let x = t(&[0.5, -1.5, 2.0, 0.0, f64::NAN, -0.0], &[2, 3]);
    let before = bits(&x);
    let program = jitted.lower(&x).unwrap();
    let text = program.to_string();
    assert_eq!(program.passes().in_place, 3, "{text}");
    assert_eq!(text.matches("in place of").count(), 3, "{text}");
    let eager = f(x.clone()).unwrap();
    for _ in 0..3 {
        assert_eq!(bits(&jitted.call(&x).unwrap()), bits(&eager));
    }
    assert_eq!(bits(&x), before, "the input was written");
}

#[test]
fn a_value_another_output_still_reads_is_not_written_over() {
    // `e` is an output, so `neg` may not write over it; `s` is freed at
    // `neg`, but `p`, a permuted view of its buffer, is an output: the plan
    // marks `neg(s)` in place, and the replay finds the buffer shared and
    // computes it out of place.
    let f = |x: Tensor| {
        let e = ops::exp(&x)?;
        let s = ops::sin(&x)?;
        let p = ops::permute(&s, &[1, 0])?;
        Ok((ops::neg(&e)?, e, p, ops::neg(&s)?))
    };
    let jitted = jit(f);
    let x = t(&[0.5, -1.5, 2.0, 0.0, 1.0, -0.0], &[2, 3]);
    let eager = f(x.clone()).unwrap();
    let want = [&eager.0, &eager.1, &eager.2, &eager.3].map(bits);
    for _ in 0..3 {
        let got = jitted.call(&x).unwrap();
        assert_eq!([&got.0, &got.1, &got.2, &got.3].map(bits), want);
    }
    let program = jitted.lower(&x).unwrap();
    assert_eq!(program.passes().in_place, 1, "{program}");
}
