//! The windowed ops (convolutions, unfold/fold, max and average pooling)
//! with each size argument at huge values (issue 43: a `padding` of 2^40
//! showed an internal shape with `usize::MAX` in it): every call is a result
//! or an `Err` that names the op and the argument, plain, under vmap and
//! under grad, never an internal shape whose sizes overflowed.

use batchrules::prelude::*;

const HUGE: [i64; 5] = [1 << 40, 1 << 62, i64::MAX / 2, i64::MAX / 2 + 1, i64::MAX];

/// A windowed op called with one size argument set to `v`; the others are
/// ordinary (a pool's kernel grows with a huge padding, which may be at most
/// half of it).
type Call = fn(&Tensor, i64) -> batchrules::Result<Tensor>;

fn x1() -> Tensor {
    ops::ones(&[1, 1, 4], DType::F64).unwrap()
}
fn x2() -> Tensor {
    ops::ones(&[1, 1, 4, 4], DType::F64).unwrap()
}
fn w1() -> Tensor {
    ops::ones(&[1, 1, 2], DType::F64).unwrap()
}
fn w2() -> Tensor {
    ops::ones(&[1, 1, 2, 2], DType::F64).unwrap()
}
/// A kernel at least twice `v` (saturating), so that a padding of `v` is allowed.
fn k(v: i64) -> i64 {
    v.saturating_mul(2).max(2)
}

/// The op, the argument, the call and its input.
type Case = (&'static str, &'static str, Call, fn() -> Tensor);

fn cases() -> Vec<Case> {
    vec![
        (
            "conv1d",
            "stride",
            |x, v| ops::conv1d(x, &w1(), None, &[v], &[0], &[1], 1),
            x1,
        ),
        (
            "conv1d",
            "padding",
            |x, v| ops::conv1d(x, &w1(), None, &[1], &[v], &[1], 1),
            x1,
        ),
        (
            "conv1d",
            "dilation",
            |x, v| ops::conv1d(x, &w1(), None, &[1], &[0], &[v], 1),
            x1,
        ),
        (
            "conv2d",
            "stride",
            |x, v| ops::conv2d(x, &w2(), None, &[1, v], &[0], &[1], 1),
            x2,
        ),
        (
            "conv2d",
            "padding",
            |x, v| ops::conv2d(x, &w2(), None, &[1], &[v], &[1], 1),
            x2,
        ),
        (
            "conv2d",
            "padding",
            |x, v| ops::conv2d(x, &w2(), None, &[1], &[0, v], &[1], 1),
            x2,
        ),
        (
            "conv2d",
            "dilation",
            |x, v| ops::conv2d(x, &w2(), None, &[1], &[0], &[v, 1], 1),
            x2,
        ),
        (
            "conv1d_padding",
            "dilation",
            |x, v| ops::conv1d_padding(x, &w1(), None, &[1], "same", &[v], 1),
            x1,
        ),
        (
            "conv2d_padding",
            "dilation",
            |x, v| ops::conv2d_padding(x, &w2(), None, &[1], "same", &[1, v], 1),
            x2,
        ),
        (
            "unfold",
            "kernel_size",
            |x, v| ops::unfold(x, &[v], &[1], &[0], &[1]),
            x2,
        ),
        (
            "unfold",
            "dilation",
            |x, v| ops::unfold(x, &[2], &[v], &[0], &[1]),
            x2,
        ),
        (
            "unfold",
            "padding",
            |x, v| ops::unfold(x, &[2], &[1], &[v], &[1]),
            x2,
        ),
        (
            "unfold",
            "stride",
            |x, v| ops::unfold(x, &[2], &[1], &[0], &[v]),
            x2,
        ),
        // fold names the output (of `output_size`) whose blocks the input lacks.
        (
            "fold",
            "output",
            |_, v| {
                ops::fold(
                    &ops::ones(&[4, 1], DType::F64)?,
                    &[v, 2],
                    &[2],
                    &[1],
                    &[0],
                    &[1],
                )
            },
            x2,
        ),
        (
            "fold",
            "padding",
            |_, v| {
                ops::fold(
                    &ops::ones(&[4, 1], DType::F64)?,
                    &[2],
                    &[2],
                    &[1],
                    &[v],
                    &[1],
                )
            },
            x2,
        ),
        (
            "max_pool1d",
            "kernel_size",
            |x, v| ops::max_pool1d(x, &[v], Some(&[1]), &[0], &[1], false),
            x1,
        ),
        (
            "max_pool1d",
            "stride",
            |x, v| ops::max_pool1d(x, &[2], Some(&[v]), &[0], &[1], true),
            x1,
        ),
        (
            "max_pool1d",
            "padding",
            |x, v| ops::max_pool1d(x, &[k(v)], Some(&[1]), &[v], &[1], false),
            x1,
        ),
        (
            "max_pool1d",
            "padding",
            |x, v| ops::max_pool1d(x, &[2], None, &[v], &[1], false),
            x1,
        ),
        (
            "max_pool1d",
            "dilation",
            |x, v| ops::max_pool1d(x, &[2], None, &[1], &[v], false),
            x1,
        ),
        (
            "max_pool2d",
            "kernel_size",
            |x, v| ops::max_pool2d(x, &[v, 2], Some(&[1]), &[0], &[1], false),
            x2,
        ),
        (
            "max_pool2d",
            "stride",
            |x, v| ops::max_pool2d(x, &[2], Some(&[1, v]), &[0], &[1], true),
            x2,
        ),
        (
            "max_pool2d",
            "padding",
            |x, v| ops::max_pool2d(x, &[k(v)], Some(&[1]), &[v], &[1], true),
            x2,
        ),
        (
            "max_pool2d",
            "dilation",
            |x, v| ops::max_pool2d(x, &[2], None, &[1], &[1, v], false),
            x2,
        ),
        (
            "avg_pool1d",
            "kernel_size",
            |x, v| ops::avg_pool1d(x, &[v], Some(&[1]), &[0], false, true),
            x1,
        ),
        (
            "avg_pool1d",
            "stride",
            |x, v| ops::avg_pool1d(x, &[2], Some(&[v]), &[0], true, true),
            x1,
        ),
        (
            "avg_pool1d",
            "padding",
            |x, v| ops::avg_pool1d(x, &[k(v)], Some(&[1]), &[v], true, false),
            x1,
        ),
        (
            "avg_pool2d",
            "kernel_size",
            |x, v| ops::avg_pool2d(x, &[2, v], Some(&[1]), &[0], false, true, None),
            x2,
        ),
        (
            "avg_pool2d",
            "stride",
            |x, v| ops::avg_pool2d(x, &[2], Some(&[v]), &[1], true, true, None),
            x2,
        ),
        (
            "avg_pool2d",
            "padding",
            |x, v| ops::avg_pool2d(x, &[k(v)], Some(&[1]), &[v], false, true, Some(v)),
            x2,
        ),
        (
            "adaptive_avg_pool1d",
            "output_size",
            |x, v| ops::adaptive_avg_pool1d(x, &[v]),
            x1,
        ),
        (
            "adaptive_avg_pool2d",
            "output_size",
            |x, v| ops::adaptive_avg_pool2d(x, &[1, v]),
            x2,
        ),
    ]
}

/// Checks one outcome: a result, or an error naming the op and the argument
/// in the user's terms.
fn check(op: &str, arg: &str, v: i64, how: &str, r: batchrules::Result<Tensor>) {
    let Err(e) = r else { return };
    let msg = e.to_string();
    let what = format!("{op} with {arg} = {v} ({how})");
    assert!(msg.starts_with(&format!("{op}: ")), "{what}: {msg}");
    assert!(
        msg.contains(arg),
        "{what}: the error does not name `{arg}`: {msg}"
    );
    assert!(!msg.contains(&usize::MAX.to_string()), "{what}: {msg}");
    assert!(
        !msg.contains("tensor of shape"),
        "{what}: an internal shape: {msg}"
    );
    assert!(!msg.contains("overflows"), "{what}: {msg}");
}

#[test]
fn huge_size_arguments_are_results_or_errors_naming_the_op_and_argument() {
    let mut errors = 0;
    for (op, arg, call, input) in cases() {
        for v in HUGE {
            let x = input();
            let plain = call(&x, v);
            errors += usize::from(plain.is_err());
            check(op, arg, v, "plain", plain);
            let batch = ops::stack(&[x.clone(), x.clone()], 0).unwrap();
            let batched = vmap(|x: Tensor| call(&x, v)).call(&batch);
            check(op, arg, v, "vmap", batched);
            let g = grad(|x: Tensor| ops::sum(&call(&x, v)?, None, false)).call(&x);
            check(op, arg, v, "grad", g);
        }
    }
    // Most of these are errors (the padding ones all are): the check above ran.
    assert!(errors > 40, "{errors}");
}

#[test]
fn the_issue_example_names_padding() {
    let e = ops::conv2d(&x2(), &w2(), None, &[1], &[1 << 40], &[1], 1).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("conv2d: `padding` [1099511627776, 1099511627776] is too large"),
        "{msg}"
    );
    let e = ops::conv1d(&x1(), &w1(), None, &[1], &[1 << 40], &[1], 1).unwrap_err();
    assert!(e.to_string().starts_with("conv1d: `padding`"), "{e}");
}

/// An empty batch empties the output but not the spatial dims: `[0, 1, 2^40,
/// 1]` is a tensor of no elements. What a windowed op builds per output
/// position (window lists, divisors, blocks) must still be bounded: every
/// call is a result or an error naming the op, never an allocation failure
/// (the hostile sweep found `adaptive_avg_pool2d` with a huge `output_size`
/// on an empty batch aborting the process). Plain and under vmap.
#[test]
fn an_empty_batch_with_huge_spatial_dims_is_bounded() {
    const HUGE_DIM: i64 = 1 << 40;
    let empty2 = || ops::zeros(&[0, 1, HUGE_DIM, 1], DType::F64).unwrap();
    let empty1 = || ops::zeros(&[0, 1, HUGE_DIM], DType::F64).unwrap();
    let small2 = || ops::zeros(&[0, 1, 4, 4], DType::F64).unwrap();
    let small1 = || ops::zeros(&[0, 1, 4], DType::F64).unwrap();
    type Op = (
        &'static str,
        fn(&Tensor) -> batchrules::Result<Tensor>,
        fn() -> Tensor,
    );
    let calls: Vec<Op> = vec![
        (
            "avg_pool2d",
            |x| ops::avg_pool2d(x, &[1], None, &[0], false, true, None),
            empty2,
        ),
        (
            "avg_pool1d",
            |x| ops::avg_pool1d(x, &[1], None, &[0], false, true),
            empty1,
        ),
        (
            "max_pool2d",
            |x| ops::max_pool2d(x, &[1], None, &[0], &[1], false),
            empty2,
        ),
        (
            "max_pool1d",
            |x| ops::max_pool1d(x, &[1], None, &[0], &[1], false),
            empty1,
        ),
        (
            "adaptive_avg_pool2d",
            |x| ops::adaptive_avg_pool2d(x, &[1 << 40, 1]),
            small2,
        ),
        (
            "adaptive_avg_pool2d",
            |x| ops::adaptive_avg_pool2d(x, &[1 << 40]),
            small2,
        ),
        (
            "adaptive_avg_pool1d",
            |x| ops::adaptive_avg_pool1d(x, &[1 << 40]),
            small1,
        ),
        (
            "adaptive_avg_pool2d",
            |x| ops::adaptive_avg_pool2d(x, &[2, 3]),
            empty2,
        ),
        ("unfold", |x| ops::unfold(x, &[1], &[1], &[0], &[1]), empty2),
        (
            "conv2d",
            |x| {
                ops::conv2d(
                    x,
                    &ops::ones(&[1, 1, 1, 1], DType::F64)?,
                    None,
                    &[1],
                    &[0],
                    &[1],
                    1,
                )
            },
            empty2,
        ),
        (
            "conv1d",
            |x| {
                ops::conv1d(
                    x,
                    &ops::ones(&[1, 1, 1], DType::F64)?,
                    None,
                    &[1],
                    &[0],
                    &[1],
                    1,
                )
            },
            empty1,
        ),
    ];
    for (op, call, input) in calls {
        let x = input();
        let check = |how: &str, r: batchrules::Result<Tensor>| {
            if let Err(e) = r {
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("{op}: ")), "{op} ({how}): {msg}");
            }
        };
        check("plain", call(&x));
        let batch = ops::stack(&[x.clone(), x.clone()], 0).unwrap();
        check("vmap", vmap(|x: Tensor| call(&x)).call(&batch));
    }
}
