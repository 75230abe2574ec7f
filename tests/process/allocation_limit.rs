//! The allocation limit is a process-wide setting: these tests run with no
//! other test of any suite beside them (see `main.rs`), and put the default
//! back when they end, a panic included.

use batchrules::{
    grad, hessian, hvp, jacfwd, jacrev, jvp, ops, value_and_grad, vjp, vmap, DType, Randomness,
    Tensor,
};

use super::Limit;

#[test]
fn the_allocation_limit_is_a_setting() {
    let _exclusive = super::exclusive();
    let x = Tensor::from_shape_vec(&[4], vec![1.0f32; 4]).unwrap();
    assert!(ops::expand(&x, &[1000, 4]).is_ok());
    batchrules::tuning::set_allocation_limit(1000);
    let err = ops::expand(&x, &[1000, 4]).unwrap_err();
    batchrules::tuning::set_allocation_limit(batchrules::tuning::DEFAULT_ALLOCATION_LIMIT);
    assert!(err.to_string().starts_with("expand: "), "{err}");
    assert!(
        err.to_string()
            .contains("over the allocation limit of 1000 bytes"),
        "{err}"
    );
    assert!(ops::expand(&x, &[1000, 4]).is_ok());
}

/// One op call, of the input it may ignore.
type OpCall = dyn Fn(&Tensor) -> batchrules::Result<Tensor>;

/// One op call under one transform: `Ok(())` or the error's text.
type Run = fn(&OpCall, &Tensor) -> Result<(), String>;

/// The transforms each call runs under: plain, vmap (a batch of one, so the
/// physical output is the example's size; random ops draw alike), and each
/// differentiating transform, with the op called inside the differentiated
/// function of `x` (so the call is traced, or batched over the Jacobian's
/// columns).
const TRANSFORMS: [(&str, Run); 10] = [
    ("dense", |op, x| op(x).map(drop).map_err(|e| e.to_string())),
    ("vmap", |op, x| {
        let batch = ops::unsqueeze(x, 0).map_err(|e| e.to_string())?;
        vmap(|x: Tensor| op(&x))
            .randomness(Randomness::Same)
            .call(&batch)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
    ("grad", |op, x| {
        grad(|x: Tensor| {
            op(&x)?;
            ops::sum(&ops::mul(&x, &x)?, None, false)
        })
        .call(x)
        .map(drop)
        .map_err(|e| e.to_string())
    }),
    ("value_and_grad", |op, x| {
        value_and_grad(|x: Tensor| {
            op(&x)?;
            ops::sum(&ops::mul(&x, &x)?, None, false)
        })
        .call(x)
        .map(drop)
        .map_err(|e| e.to_string())
    }),
    ("jvp", |op, x| {
        jvp(|x: Tensor| op(&x), x, x)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
    ("vjp", |op, x| {
        vjp(|x: Tensor| op(&x), x)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
    ("jacrev", |op, x| {
        jacrev(|x: Tensor| traced(op, x))
            .call(x)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
    ("jacfwd", |op, x| {
        jacfwd(|x: Tensor| traced(op, x))
            .randomness(Randomness::Same)
            .call(x)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
    ("hessian", |op, x| {
        hessian(|x: Tensor| ops::sum(&traced(op, x)?, None, false))
            .randomness(Randomness::Same)
            .call(x)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
    ("hvp", |op, x| {
        hvp(|x: Tensor| ops::sum(&traced(op, x)?, None, false), x, x)
            .map(drop)
            .map_err(|e| e.to_string())
    }),
];

/// Calls `op` inside a function of `x` that is differentiable whatever
/// `op` returns (an integer or bool factory, say): `op`'s output is made,
/// then `x * x` is returned.
fn traced(op: &OpCall, x: Tensor) -> batchrules::Result<Tensor> {
    op(&x)?;
    ops::mul(&x, &x)
}

/// Under a 1 MiB limit, each factory, random draw and product is refused
/// exactly when its output in its own dtype is over the limit, under every
/// transform, with an error naming the op, that dtype and the bytes.
#[test]
fn sizes_count_the_bytes_of_their_own_dtype_under_every_transform() {
    let _exclusive = super::exclusive();
    const LIMIT: usize = 1 << 20;
    let limit = Limit::set(LIMIT);
    let x = Tensor::from_shape_vec(&[3], vec![0.5f64, 1.0, 2.0]).unwrap();
    let mut cases = 0;
    let mut failures = Vec::new();
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        let size = match dtype {
            DType::Bool => 1,
            DType::F32 => 4,
            DType::F64 | DType::I64 => 8,
        };
        // The most elements that fit, and one more.
        let fits = (LIMIT / size) as i64;
        let mut calls: Vec<(&str, i64, Box<OpCall>)> = Vec::new();
        for n in [fits, fits + 1] {
            calls.push(("zeros", n, Box::new(move |_| ops::zeros(&[n], dtype))));
            calls.push(("ones", n, Box::new(move |_| ops::ones(&[n], dtype))));
            calls.push(("full", n, Box::new(move |_| ops::full(&[n], 1.0, dtype))));
            if dtype.is_float() {
                calls.push(("rand", n, Box::new(move |_| ops::rand(&[n], 3, dtype))));
                // [256, n / 256] and [256, n / 256 + 1]: at and over the limit.
                let cols = if n == fits {
                    fits / 256
                } else {
                    fits / 256 + 1
                };
                let total = 256 * cols;
                calls.push((
                    "outer",
                    total,
                    Box::new(move |_| {
                        let a = ops::ones(&[256], dtype)?;
                        let b = ops::ones(&[cols], dtype)?;
                        ops::outer(&a, &b)
                    }),
                ));
                calls.push((
                    "matmul",
                    total,
                    Box::new(move |_| {
                        let a = ops::ones(&[256, 1], dtype)?;
                        let b = ops::ones(&[1, cols], dtype)?;
                        ops::matmul(&a, &b)
                    }),
                ));
            }
        }
        for (op, n, call) in &calls {
            let over = (*n as usize) * size > LIMIT;
            for (transform, run) in TRANSFORMS {
                let got = run(call.as_ref(), &x);
                let case = format!("{op} of {n} {dtype} elements under {transform}");
                match (&got, over) {
                    (Ok(()), false) => {}
                    (Err(e), true) => {
                        let bytes = format!("{} bytes", *n as usize * size);
                        if !(e.contains(op)
                            && e.contains(&format!("a {dtype} tensor"))
                            && e.contains(&bytes)
                            && e.contains("over the allocation limit"))
                        {
                            failures.push(format!("{case}: the error does not say so: {e}"));
                        }
                    }
                    (Ok(()), true) => failures.push(format!("{case}: Ok over the limit")),
                    (Err(e), false) => failures.push(format!("{case}: refused within it: {e}")),
                }
                cases += 1;
            }
        }
    }
    drop(limit);
    println!("{cases} (op, size, dtype, transform) cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
