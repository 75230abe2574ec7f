//! Bad input under the transforms (issue 26), as tables: every transform
//! crossed with each misuse class, each of which must give an `Err` that
//! names the transform the user called, never `Ok` with a wrong value, never
//! a panic. The class that needs a process-wide setting (absurd sizes under a
//! tight allocation limit) is in `tests/process/allocation_limit.rs`.
//!
//! - Inconsistent hand-written trees: `leaves`, `leaf_count` and
//!   `map_leaves` disagree, in each of the three ways.
//! - The testing helpers at points where the finite differences, the
//!   Jacobians or the loop cannot be evaluated: each reports what it could
//!   not check instead of passing.

use crate::common::{no_panic, vector as t};
use batchrules::testing::{check_grad, check_jacobians, check_jvp, check_vmap, Mismatch};
use batchrules::{
    grad, hvp, jacfwd, jacrev, jvp, ops, value_and_grad, vjp, vmap, Result, Tensor, TensorTree,
};

/// A hand-written tree of two tensors, wrong in one of three ways.
#[derive(Clone, Copy, Debug)]
enum Defect {
    /// `leaves` gives both, `map_leaves` visits only the first.
    VisitsFewer,
    /// `leaves` and `map_leaves` give one, `leaf_count` says two.
    CountsMore,
    /// `leaves` gives the first only, `map_leaves` visits both.
    GivesFewer,
}

const DEFECTS: [Defect; 3] = [Defect::VisitsFewer, Defect::CountsMore, Defect::GivesFewer];

#[derive(Clone)]
struct Broken {
    a: Tensor,
    b: Tensor,
    defect: Defect,
}

impl TensorTree for Broken {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.a.clone());
        if !matches!(self.defect, Defect::CountsMore | Defect::GivesFewer) {
            out.push(self.b.clone());
        }
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        let a = f(&self.a)?;
        let b = match self.defect {
            Defect::GivesFewer => f(&self.b)?,
            // The second leaf is not visited: kept as it is.
            Defect::VisitsFewer | Defect::CountsMore => self.b.clone(),
        };
        Ok(Broken {
            a,
            b,
            defect: self.defect,
        })
    }
    fn leaf_count(&self) -> usize {
        match self.defect {
            Defect::GivesFewer => 1,
            Defect::VisitsFewer | Defect::CountsMore => 2,
        }
    }
}

impl batchrules::StructTree for Broken {}

fn broken(defect: Defect) -> Broken {
    Broken {
        a: t(&[1.0, 2.0]),
        b: t(&[3.0, 4.0]),
        defect,
    }
}

fn loss(p: &Broken) -> Result<Tensor> {
    ops::sum(&ops::mul(&ops::mul(&p.a, &p.b)?, &p.a)?, None, false)
}

#[test]
fn every_transform_rejects_every_inconsistent_tree_naming_itself() {
    type Call = fn(&Broken) -> std::result::Result<String, String>;
    fn ok_debug<T: std::fmt::Debug>(r: Result<T>) -> std::result::Result<String, String> {
        r.map(|v| format!("{v:?}")).map_err(|e| e.to_string())
    }
    fn leaves_of(p: &Broken) -> Vec<Tensor> {
        let mut out = Vec::new();
        p.leaves(&mut out);
        out
    }
    let transforms: [(&str, Call); 8] = [
        ("vmap", |p| {
            let stacked = p.map_leaves(&mut |x| ops::stack(&[x.clone(), x.clone()], 0));
            ok_debug(stacked.and_then(|s| vmap(|q: Broken| loss(&q)).call(&s)))
        }),
        ("grad", |p| {
            ok_debug(grad(|q: Broken| loss(&q)).call(p).map(|g| leaves_of(&g)))
        }),
        ("value_and_grad", |p| {
            ok_debug(
                value_and_grad(|q: Broken| loss(&q))
                    .call(p)
                    .map(|(_, g)| leaves_of(&g)),
            )
        }),
        ("vjp", |p| {
            ok_debug(vjp(|q: Broken| loss(&q), p).and_then(|(y, pullback)| {
                let ones = ops::ones(&[], y.dtype())?;
                pullback.call(&ones).map(|g| leaves_of(&g))
            }))
        }),
        ("jacrev", |p| {
            ok_debug(jacrev(|q: Broken| loss(&q)).call(p).map(|j| leaves_of(&j)))
        }),
        ("jacfwd", |p| {
            ok_debug(jacfwd(|q: Broken| loss(&q)).call(p).map(|j| leaves_of(&j)))
        }),
        ("jvp", |p| {
            ok_debug(jvp(|q: Broken| loss(&q), p, p).map(|(_, dy)| dy))
        }),
        ("hvp", |p| {
            ok_debug(hvp(|q: Broken| loss(&q), p, p).map(|h| leaves_of(&h)))
        }),
    ];
    let mut cases = 0;
    for (name, call) in transforms {
        for defect in DEFECTS {
            let p = broken(defect);
            let got = no_panic(name, || call(&p));
            let err = match got {
                Ok(value) => panic!("{name} of a tree whose {defect:?}: Ok({value})"),
                Err(e) => e,
            };
            assert!(
                err.contains("is inconsistent") || err.contains("leaves"),
                "{name}, {defect:?}: {err}"
            );
            assert!(
                err.contains("leaf_count") && err.contains("map_leaves"),
                "{name}, {defect:?}: the message says what must agree: {err}"
            );
            if name != "vmap" {
                assert!(
                    err.starts_with(&format!("{name}: ")),
                    "{name}, {defect:?}: the error names the transform: {err}"
                );
            }
            cases += 1;
        }
    }
    println!("{cases} (transform, defective tree) cases");
}

/// What a checking helper reported: the number it checked, or its mismatch.
fn reported(r: std::result::Result<usize, Mismatch>) -> std::result::Result<usize, String> {
    r.map_err(|m| m.to_string())
}

#[test]
fn the_checking_helpers_report_what_they_could_not_check() {
    type F = fn(&[Tensor]) -> Result<Vec<Tensor>>;
    let log: F = |xs| Ok(vec![ops::log(&xs[0])?]);
    let square: F = |xs| Ok(vec![ops::mul(&xs[0], &xs[0])?]);
    let cases: [(&str, F, Vec<Tensor>, &str); 3] = [
        // 1e-7 is within a step (1e-5) of log's domain edge: the central
        // difference leaves the domain.
        (
            "log at the edge of its domain",
            log,
            vec![t(&[1e-7, 0.5, 2.0])],
            "not finite",
        ),
        (
            "log at a NaN",
            log,
            vec![t(&[f64::NAN, 0.5])],
            "NaN or infinite",
        ),
        (
            "an integer square",
            square,
            vec![Tensor::from(ndarray::array![1i64, 2].into_dyn())],
            "no float input",
        ),
    ];
    let mut checked = 0;
    for (what, f, inputs, says) in &cases {
        for (helper, got) in [
            (
                "check_grad",
                reported(no_panic("check_grad", || check_grad(f, inputs))),
            ),
            (
                "check_jvp",
                reported(no_panic("check_jvp", || check_jvp(f, inputs))),
            ),
        ] {
            let err = got.expect_err(&format!("{helper}, {what}: passed what it did not check"));
            assert!(
                err.contains("nothing was checked"),
                "{helper}, {what}: {err}"
            );
            assert!(err.contains(says), "{helper}, {what}: {err}");
            checked += 1;
        }
    }
    // check_jacobians at a NaN and with no float input (it uses no finite
    // differences, so the domain edge is not one of its cases).
    for (what, f, inputs, says) in &cases[1..] {
        let err = reported(no_panic("check_jacobians", || check_jacobians(f, inputs))).expect_err(
            &format!("check_jacobians, {what}: passed what it did not check"),
        );
        assert!(
            err.contains("nothing was checked") && err.contains(says),
            "check_jacobians, {what}: {err}"
        );
        checked += 1;
    }
    // check_vmap where the per-example calls cannot be evaluated: triu of a
    // 1-d example errs, and so does the check, naming the op.
    let err = reported(no_panic("check_vmap", || {
        check_vmap(|xs: &[Tensor]| ops::triu(&xs[0], 0), &[t(&[1.0, 2.0, 3.0])])
    }))
    .expect_err("check_vmap of a function that fails on every example");
    assert!(err.contains("triu"), "{err}");
    checked += 1;
    // At inputs where they can check, they do, and count what they compared.
    let x = vec![t(&[0.5, 1.5, 2.0])];
    assert!(check_grad(log, &x).unwrap() >= 1);
    assert!(check_jvp(log, &x).unwrap() >= 1);
    assert!(check_jacobians(log, &x).unwrap() >= 1);
    println!("{checked} (helper, unevaluable input) cases");
}

/// A random op under jacfwd and hessian, which push the Jacobian's columns
/// through the function as one batch: refused by default with an error that
/// names the transform the user called and a setting it has, never the vmap
/// inside; with `.randomness(Randomness::Same)`, the Jacobian of the function
/// with its noise fixed, which is what jacrev (one forward pass) gives.
#[test]
fn random_ops_under_jacfwd_and_hessian_name_them_and_have_a_setting() {
    use batchrules::{hessian, Randomness};
    let x = t(&[0.5, -1.0, 2.0, 0.25]);
    let noisy = |x: Tensor| ops::mul(&ops::dropout(&x, 0.5, 7)?, &x);
    let scalar = |x: Tensor| ops::sum(&noisy(x)?, None, false);

    let errors = [
        ("jacfwd", jacfwd(noisy).call(&x).map(drop)),
        ("hessian", hessian(scalar).call(&x).map(drop)),
    ];
    for (name, got) in errors {
        let err = got.expect_err(name).to_string();
        assert!(err.contains(&format!("a random op under {name}")), "{err}");
        assert!(err.contains(".randomness(Randomness::Same)"), "{err}");
        assert!(
            !err.contains("vmap"),
            "{name} names a vmap the user did not write: {err}"
        );
    }

    let want = jacrev(noisy).call(&x).unwrap();
    let got = jacfwd(noisy).randomness(Randomness::Same).call(&x).unwrap();
    assert_eq!(
        got.to_array::<f64>().unwrap(),
        want.to_array::<f64>().unwrap()
    );
    let h = hessian(scalar)
        .randomness(Randomness::Same)
        .call(&x)
        .unwrap();
    assert_eq!(h.shape(), &[4, 4]);

    // A non-scalar function under hessian: the error is hessian's alone.
    let err = hessian(|x: Tensor| ops::mul(&x, &x))
        .call(&x)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("hessian: "), "{err}");
    assert!(!err.contains("vmap"), "{err}");
}

/// The misuse classes against every transform, as one table. A class that
/// does not apply to a transform is listed with the reason, so the table
/// says what is covered: a non-scalar output is an error only where a
/// scalar is required; a cotangent or tangent is given by the user only to
/// vjp's pullback, jvp and hvp; a random op needs a policy only where the
/// transform batches the function (vmap, and jacfwd and hessian over the
/// Jacobian's columns), and elsewhere runs once, with the right value.
/// (Absurd sizes under a tight allocation limit, the class that needs a
/// process-wide setting, are `tests/process/allocation_limit.rs`'s table.)
#[test]
fn every_transform_against_every_misuse_class() {
    use batchrules::{hessian, Randomness};
    let x = t(&[0.5, -1.0, 2.0, 0.25]);
    let v = t(&[1.0, 2.0, 3.0, 4.0]);
    let short = t(&[1.0, 2.0]);
    let vector = |x: Tensor| ops::mul(&x, &x);
    // f(x) = sum(dropout(x) * x): its gradient is 2 x * mask / (1 - p), where
    // mask is the draw dropout makes for this seed and shape.
    let noisy = |x: Tensor| ops::sum(&ops::mul(&ops::dropout(&x, 0.5, 7)?, &x)?, None, false);
    let kept = ops::dropout(&ops::ones(&[4], batchrules::DType::F64).unwrap(), 0.5, 7).unwrap();
    let want_grad = ops::mul(&ops::mul(&x, &kept).unwrap(), &Tensor::scalar(2.0f64)).unwrap();
    let want_hv = ops::mul(&ops::mul(&v, &kept).unwrap(), &Tensor::scalar(2.0f64)).unwrap();
    let values = |t: &Tensor| t.to_array::<f64>().unwrap().into_raw_vec_and_offset().0;

    type Outcome = std::result::Result<Option<Vec<f64>>, String>;
    let err = |e: batchrules::Error| e.to_string();
    // Non-scalar output: an error naming the transform where a scalar is needed.
    let mut rows: Vec<(&str, &str, Outcome, &str)> = vec![
        (
            "grad",
            "non-scalar output",
            grad(vector).call(&x).map(|_| None).map_err(err),
            "grad",
        ),
        (
            "value_and_grad",
            "non-scalar output",
            value_and_grad(vector).call(&x).map(|_| None).map_err(err),
            "value_and_grad",
        ),
        (
            "hessian",
            "non-scalar output",
            hessian(vector).call(&x).map(|_| None).map_err(err),
            "hessian",
        ),
        (
            "hvp",
            "non-scalar output",
            hvp(vector, &x, &v).map(|_| None).map_err(err),
            "hvp",
        ),
    ];

    // Wrong cotangent or tangent.
    let (_, pullback) = vjp(vector, &x).unwrap();
    rows.push((
        "vjp",
        "wrong cotangent",
        pullback.call(&short).map(|_| None).map_err(err),
        "vjp",
    ));
    rows.push((
        "jvp",
        "wrong tangent",
        jvp(vector, &x, &short).map(|_| None).map_err(err),
        "jvp",
    ));
    rows.push((
        "hvp",
        "wrong tangent",
        hvp(|x: Tensor| ops::sum(&vector(x)?, None, false), &x, &short)
            .map(|_| None)
            .map_err(err),
        "hvp",
    ));

    // A random op with no policy: refused, naming the transform, where the
    // function is batched; the right value where it runs once.
    rows.push((
        "vmap",
        "random op, no policy",
        vmap(|x: Tensor| ops::dropout(&x, 0.5, 7))
            .call(&ops::stack(&[x.clone(), x.clone()], 0).unwrap())
            .map(|_| None)
            .map_err(err),
        "vmap",
    ));
    rows.push((
        "jacfwd",
        "random op, no policy",
        jacfwd(noisy).call(&x).map(|_| None).map_err(err),
        "jacfwd",
    ));
    rows.push((
        "hessian",
        "random op, no policy",
        hessian(noisy).call(&x).map(|_| None).map_err(err),
        "hessian",
    ));
    let ok = |r: batchrules::Result<Tensor>| r.map(|t| Some(values(&t))).map_err(err);
    rows.push(("grad", "random op, no policy", ok(grad(noisy).call(&x)), ""));
    rows.push((
        "value_and_grad",
        "random op, no policy",
        ok(value_and_grad(noisy).call(&x).map(|(_, g)| g)),
        "",
    ));
    rows.push((
        "vjp",
        "random op, no policy",
        ok(vjp(noisy, &x).and_then(|(_, p)| p.call(&Tensor::scalar(1.0f64)))),
        "",
    ));
    rows.push((
        "jacrev",
        "random op, no policy",
        ok(jacrev(noisy).call(&x)),
        "",
    ));
    rows.push(("hvp", "random op, no policy", ok(hvp(noisy, &x, &v)), ""));
    let (_, dy) = jvp(noisy, &x, &v).unwrap();
    let want_dy: f64 = values(&want_grad)
        .iter()
        .zip(values(&v))
        .map(|(g, v)| g * v)
        .sum();
    assert!(
        (values(&dy)[0] - want_dy).abs() < 1e-12,
        "jvp of a random op: {dy:?}, want {want_dy}"
    );
    // With a policy, jacfwd and hessian give what jacrev gives.
    let fwd = jacfwd(noisy).randomness(Randomness::Same).call(&x).unwrap();
    assert_eq!(
        values(&fwd),
        values(&want_grad),
        "jacfwd with Randomness::Same"
    );

    let mut cases = 1; // the jvp row above
    for (transform, class, outcome, names) in &rows {
        match outcome {
            Err(e) => {
                assert!(!names.is_empty(), "{transform}, {class}: refused: {e}");
                assert!(
                    e.starts_with(&format!("{names}: ")) || e.contains(&format!("under {names}")),
                    "{transform}, {class}: the error names {names}: {e}"
                );
                assert!(
                    *transform == "vmap" || !e.contains("vmap"),
                    "{transform}, {class}: names a vmap the user did not write: {e}"
                );
            }
            Ok(value) => {
                assert!(
                    names.is_empty(),
                    "{transform}, {class}: Ok where an error is due"
                );
                let want = if *transform == "hvp" {
                    &want_hv
                } else {
                    &want_grad
                };
                assert_eq!(
                    value.as_deref(),
                    Some(values(want).as_slice()),
                    "{transform}, {class}"
                );
            }
        }
        cases += 1;
    }
    println!("{cases} (transform, misuse class) cases");
}
