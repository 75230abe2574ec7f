//! What users see of an error: the message of a nested error (an op failing
//! inside another op, inside `grad`, inside `vmap`) holds each part once,
//! whether printed with `{}` or walked through `source()` as error reporters
//! (anyhow's `{:#}`) do.

use batchrules::prelude::*;
use ndarray::array;

/// Every message of `err`'s `source()` chain, outermost first.
fn chain(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = vec![err.to_string()];
    let mut next = err.source();
    while let Some(e) = next {
        out.push(e.to_string());
        next = e.source();
    }
    out
}

#[test]
fn a_nested_error_prints_each_part_once() {
    // Per example: logits [3] and a class index; example 1's index, 7, is out
    // of range. The loss is differentiated per example: vmap(grad(..)).
    let logits = Tensor::from(array![[0.5f32, 1.0, -1.0], [2.0, 0.0, 1.0]].into_dyn());
    let targets = Tensor::from(array![1i64, 7].into_dyn());
    let err = vmap(|(z, t): (Tensor, Tensor)| grad(|z: Tensor| z.cross_entropy(&t)).call(&z))
        .call((&logits, &targets))
        .unwrap_err();

    // A real nested error: cross_entropy names the op inside it that failed
    // (its decomposition's gather), under the user's vmap.
    let root = err.root().to_string();
    assert_ne!(root, err.to_string());
    assert!(root.contains('7'), "{root}");
    let Error::Inside { op, .. } = nested_inside(&err) else {
        panic!("not an error raised inside an op: {err:?}");
    };
    assert_eq!(op, "cross_entropy");

    // `{}` shows all of it: the op called, the inner error, the vmap level.
    let shown = err.to_string();
    assert!(shown.starts_with("cross_entropy: "), "{shown}");
    assert!(shown.contains(&root), "{shown}");
    assert!(shown.contains("vmap level 1"), "{shown}");

    // Walking the chain as a reporter does repeats nothing, from the error
    // itself or from any error nested in it: no message of the chain holds a
    // later one, and the reporter's line (the chain joined with ": ", as
    // anyhow's `{:#}` prints it) holds the innermost error once.
    let levels = nesting(&err);
    assert_eq!(levels.len(), 3, "{err:?}"); // vmap level, cross_entropy, gather
    for level in levels {
        let links = chain(level);
        for (i, outer) in links.iter().enumerate() {
            for inner in &links[i + 1..] {
                assert!(!outer.contains(inner.as_str()), "{links:?}");
            }
        }
        let reported = links.join(": ");
        assert_eq!(reported.matches(root.as_str()).count(), 1, "{reported}");
    }
}

/// `err` and every error nested in it, outermost first.
fn nesting(err: &Error) -> Vec<&Error> {
    let mut out = vec![err];
    while let Some(Error::Inside { inner, .. } | Error::InVmap { inner, .. }) = out.last() {
        out.push(inner);
    }
    out
}

/// The outermost [`Error::Inside`] of `err`, through the vmap level.
fn nested_inside(err: &Error) -> &Error {
    match err {
        Error::InVmap { inner, .. } => nested_inside(inner),
        e => e,
    }
}
