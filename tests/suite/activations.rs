//! The activation ops (`erf`, `gelu`, `silu`, `softplus`, `elu`,
//! `leaky_relu`, `logsigmoid`, `hardtanh`) against PyTorch, on edge inputs (0,
//! ±1e-8, ±0.5, ±1, ±3, 6, ±19.9, ±20.1, ±30, ±100, ±800, ±inf, NaN), in f64
//! and f32: the forward values through the op function and (for PyTorch's
//! default arguments) the generated method, and the elementwise derivative
//! through `grad` (reverse mode) and `jvp` (forward mode). The values were
//! recorded by `scripts/reference/record_activations.py` into
//! `tests/reference/torch_activations.json`.

use crate::recorded::{disagreement, floats, values};
use batchrules::prelude::*;

/// The recorded values.
fn reference() -> serde_json::Value {
    serde_json::from_str(include_str!("../reference/torch_activations.json"))
        .expect("tests/reference/torch_activations.json is JSON")
}

/// An activation with its arguments applied.
type Activation = Box<dyn Fn(&Tensor) -> Result<Tensor>>;

/// The op `name` with the recorded arguments `args`, through the function
/// (`method: false`) or through the generated method. The method takes
/// PyTorch's defaults, so it is `None` for other arguments.
fn activation(name: &str, args: &[serde_json::Value], method: bool) -> Option<Activation> {
    let f = |i: usize| args[i].as_f64().expect("a float argument");
    let defaults = |d: &[f64]| (0..d.len()).all(|i| f(i) == d[i]);
    Some(match (name, method) {
        ("erf", false) => Box::new(ops::erf),
        ("erf", true) => Box::new(|x| x.erf()),
        ("gelu", false) => {
            let approximate = args[0].as_bool().expect("a bool");
            Box::new(move |x| ops::gelu(x, approximate))
        }
        ("gelu", true) if args[0].as_bool() == Some(false) => Box::new(|x| x.gelu()),
        ("gelu", true) => Box::new(|x| x.gelu_tanh()),
        ("silu", false) => Box::new(ops::silu),
        ("silu", true) => Box::new(|x| x.silu()),
        ("softplus", false) => {
            let (beta, threshold) = (f(0), f(1));
            Box::new(move |x| ops::softplus(x, beta, threshold))
        }
        ("softplus", true) if defaults(&[1.0, 20.0]) => Box::new(|x| x.softplus()),
        ("elu", false) => {
            let alpha = f(0);
            Box::new(move |x| ops::elu(x, alpha))
        }
        ("elu", true) if defaults(&[1.0]) => Box::new(|x| x.elu()),
        ("leaky_relu", false) => {
            let slope = f(0);
            Box::new(move |x| ops::leaky_relu(x, slope))
        }
        ("leaky_relu", true) if defaults(&[0.01]) => Box::new(|x| x.leaky_relu()),
        ("logsigmoid", false) => Box::new(ops::logsigmoid),
        ("logsigmoid", true) => Box::new(|x| x.logsigmoid()),
        ("hardtanh", false) => {
            let (lo, hi) = (f(0), f(1));
            Box::new(move |x| ops::hardtanh(x, lo, hi))
        }
        ("hardtanh", true) if defaults(&[-1.0, 1.0]) => Box::new(|x| x.hardtanh()),
        (_, true) => return None,
        (other, false) => panic!("no activation {other}"),
    })
}

/// Where PyTorch's float32 kernel disagrees with its own float64 kernel (at
/// the same input, beyond the f32 tolerance), batchrules follows
/// the float64 one in both dtypes (its op docs say so). These are all the
/// places it happens in the recorded inputs: `(op, args, which, input)`.
const TORCH_F32_ODDITIES: [(&str, &str, &str, f64); 3] = [
    // The vectorized f32 exact gelu gives NaN at +inf; f64 gives +inf.
    ("gelu", "[false]", "forward", f64::INFINITY),
    // The f32 hardtanh derivative is 1 at NaN, the f64 one 0 (as clamp's).
    ("hardtanh", "[-1.0,1.0]", "grad", f64::NAN),
    ("hardtanh", "[0.0,6.0]", "grad", f64::NAN),
];

/// The recorded f32 values `f32_values`, with the entries where PyTorch's
/// f32 and f64 kernels disagree replaced by the f64 ones; checks
/// that those entries are exactly the [`TORCH_F32_ODDITIES`] of this case.
fn f32_expected(
    key: (&str, &str, &str),
    inputs: &[f64],
    f32_values: &[f64],
    f64_values: &[f64],
    oddities_seen: &mut usize,
) -> Vec<f64> {
    let mut out = f32_values.to_vec();
    for i in 0..inputs.len() {
        if disagreement(&f32_values[i..=i], &f64_values[i..=i], 1e-5).is_some() {
            let listed = TORCH_F32_ODDITIES.iter().any(|&(op, args, which, x)| {
                (op, args, which) == key && (x == inputs[i] || (x.is_nan() && inputs[i].is_nan()))
            });
            assert!(
                listed,
                "{key:?} at x = {}: torch f32 {} vs f64 {}, not a listed oddity",
                inputs[i], f32_values[i], f64_values[i]
            );
            *oddities_seen += 1;
            out[i] = f64_values[i];
        }
    }
    out
}

#[test]
fn activations_match_torch_forward_grad_and_jvp_on_edge_inputs() {
    let reference = reference();
    let inputs = floats(&reference["inputs"]);
    let cases = reference["cases"].as_array().unwrap();
    let n = inputs.len();
    let mut oddities_seen = 0;
    let mut methods_checked = 0;
    for case in cases {
        let name = case["op"].as_str().unwrap();
        let args = case["args"].as_array().unwrap();
        let args_key = serde_json::to_string(&case["args"]).unwrap();
        let dtype = case["dtype"].as_str().unwrap();
        let (x, tol) = match dtype {
            "f64" => (Tensor::from_shape_vec(&[n], inputs.clone()).unwrap(), 1e-10),
            _ => {
                let v: Vec<f32> = inputs.iter().map(|&v| v as f32).collect();
                (Tensor::from_shape_vec(&[n], v).unwrap(), 1e-5)
            }
        };
        let mut forward = floats(&case["forward"]);
        let mut derivative = floats(&case["grad"]);
        if dtype == "f32" {
            // The same op and arguments in f64, recorded just before.
            let twin = cases
                .iter()
                .find(|c| c["op"] == case["op"] && c["args"] == case["args"] && c["dtype"] == "f64")
                .unwrap();
            forward = f32_expected(
                (name, &args_key, "forward"),
                &inputs,
                &forward,
                &floats(&twin["forward"]),
                &mut oddities_seen,
            );
            derivative = f32_expected(
                (name, &args_key, "grad"),
                &inputs,
                &derivative,
                &floats(&twin["grad"]),
                &mut oddities_seen,
            );
        }
        let what = format!("{name}{args_key} {dtype}");
        let check = |how: &str, got: &Tensor, want: &[f64]| {
            assert_eq!(got.dtype(), x.dtype(), "{what}, {how}");
            let got = values(got);
            if let Some(i) = disagreement(&got, want, tol) {
                panic!(
                    "{what}, {how}: at x = {}, got {}, torch {}",
                    inputs[i], got[i], want[i]
                );
            }
        };

        let f = activation(name, args, false).unwrap();
        check("forward", &f(&x).unwrap(), &forward);
        if let Some(m) = activation(name, args, true) {
            check("method", &m(&x).unwrap(), &forward);
            methods_checked += 1;
        }
        let g = grad(|x: Tensor| ops::sum(&f(&x)?, None, false))
            .call(&x)
            .unwrap();
        check("grad", &g, &derivative);
        let ones = ops::ones(&[n as i64], x.dtype()).unwrap();
        let (y, t) = jvp(|x: Tensor| f(&x), &x, &ones).unwrap();
        check("jvp primal", &y, &forward);
        check("jvp tangent", &t, &derivative);
    }
    // Every op, each parameter setting, both dtypes; the methods of the
    // default settings (both gelus); the listed oddities all met.
    assert_eq!(cases.len(), 28);
    assert_eq!(methods_checked, 2 * 9);
    assert_eq!(oddities_seen, TORCH_F32_ODDITIES.len());
}

#[test]
fn activations_reject_integers_and_bad_arguments_naming_the_op() {
    let ints = Tensor::from_shape_vec(&[2], vec![1i64, -2]).unwrap();
    let x = Tensor::from_shape_vec(&[2], vec![0.5f64, -2.0]).unwrap();
    let x32 = Tensor::from_shape_vec(&[2], vec![0.5f32, -2.0]).unwrap();
    let calls: Vec<(&str, &str, Result<Tensor>)> = vec![
        ("erf", "floating-point", ops::erf(&ints)),
        ("gelu", "floating-point", ops::gelu(&ints, true)),
        ("silu", "floating-point", ops::silu(&ints)),
        (
            "softplus",
            "floating-point",
            ops::softplus(&ints, 1.0, 20.0),
        ),
        ("elu", "floating-point", ops::elu(&ints, 1.0)),
        ("leaky_relu", "floating-point", ops::leaky_relu(&ints, 0.01)),
        ("logsigmoid", "floating-point", ops::logsigmoid(&ints)),
        (
            "hardtanh",
            "floating-point",
            ops::hardtanh(&ints, -1.0, 1.0),
        ),
        ("softplus", "beta", ops::softplus(&x, 0.0, 20.0)),
        ("softplus", "beta", ops::softplus(&x, f64::NAN, 20.0)),
        ("softplus", "threshold", ops::softplus(&x, 1.0, f64::NAN)),
        // Finite in f64, but 0 or infinite in an f32 tensor's dtype.
        ("softplus", "beta", ops::softplus(&x32, 1e-60, 20.0)),
        ("elu", "alpha", ops::elu(&x32, 1e300)),
        ("elu", "alpha", ops::elu(&x, f64::INFINITY)),
        (
            "leaky_relu",
            "negative_slope",
            ops::leaky_relu(&x, f64::NAN),
        ),
        ("hardtanh", "min_val", ops::hardtanh(&x, 1.0, -1.0)),
        ("hardtanh", "max_val", ops::hardtanh(&x, -1.0, f64::NAN)),
    ];
    for (op, word, result) in calls {
        let err = result.expect_err(op).to_string();
        assert!(err.contains(op) && err.contains(word), "{op}: {err}");
    }
    // Under vmap too, and infinite hardtanh bounds are fine.
    let rows = Tensor::from_shape_vec(&[2, 2], vec![0.5f64, -2.0, 3.0, f64::NAN]).unwrap();
    let err = vmap(|x: Tensor| ops::softplus(&x, 0.0, 20.0))
        .call(&rows)
        .unwrap_err();
    assert!(err.to_string().contains("softplus"), "{err}");
    let y = ops::hardtanh(&rows, f64::NEG_INFINITY, 1.0).unwrap();
    let y = values(&y);
    assert_eq!(&y[..3], &[0.5, -2.0, 1.0]);
    assert!(y[3].is_nan());
}
