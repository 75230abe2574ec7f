//! einsum broadcasts a label's size-1 dims as numpy and PyTorch do (issue
//! 43): across the operands a label's sizes may be `{1, n}` (n may be 0),
//! in any order and with any number of operands, and the result is what the
//! operands expanded to the label's size give. Checked against the same
//! contraction written with explicit `expand`s, under vmap against the
//! loop, and under grad against finite differences. Also: an operand read
//! as a transposed view gives the bits of one copied into the product's order.

use batchrules::prelude::*;
use batchrules::testing::{check_grad, check_vmap};

fn seq(shape: &[usize], start: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| start + 0.5 * i as f64).collect();
    Tensor::from_shape_vec(shape, v).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

#[test]
fn a_size_one_label_broadcasts_against_zero_in_either_order() {
    let (z, o) = (seq(&[0], 1.0), seq(&[1], 1.0));
    for pair in [[z.clone(), o.clone()], [o.clone(), z.clone()]] {
        let y = ops::einsum("i,i->i", &pair).unwrap();
        assert_eq!(y.shape(), &[0]);
    }
    // ij,jk->ik with j of sizes 0 and 1: an empty contraction, zeros [2, 3]
    // (PyTorch), whichever operand has the 0.
    for (a, b) in [(&[2, 0], &[1, 3]), (&[2, 1], &[0, 3])] {
        let y = ops::einsum("ij,jk->ik", &[seq(a, 1.0), seq(b, 2.0)]).unwrap();
        assert_eq!(y.shape(), &[2, 3]);
        assert_eq!(values(&y), vec![0.0; 6]);
    }
}

#[test]
fn three_operands_any_order_match_explicit_broadcasting() {
    // Sizes {1, 3} and {1, 0} of one label, each permutation of three operands.
    for sizes in [
        [1usize, 3, 1],
        [3, 1, 1],
        [1, 1, 3],
        [1, 0, 1],
        [0, 1, 1],
        [1, 1, 0],
    ] {
        let ops_in: Vec<Tensor> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| seq(&[2, n], 1.0 + k as f64))
            .collect();
        let n = *sizes.iter().max().unwrap() * usize::from(!sizes.contains(&0));
        let y = ops::einsum("bi,bi,bi->bi", &ops_in).unwrap();
        assert_eq!(y.shape(), &[2, n], "sizes {sizes:?}");
        let full: Vec<Tensor> = ops_in
            .iter()
            .map(|t| ops::expand(t, &[2, n as i64]).unwrap())
            .collect();
        let want = ops::mul(&ops::mul(&full[0], &full[1]).unwrap(), &full[2]).unwrap();
        assert_eq!(values(&y), values(&want), "sizes {sizes:?}");
        // Summed over the label: a contraction of a broadcast dim.
        let s = ops::einsum("bi,bi,bi->b", &ops_in).unwrap();
        let want = ops::sum(&want, Some(1), false).unwrap();
        assert_eq!(values(&s), values(&want), "sizes {sizes:?}");
    }
    // A matrix product whose inner label is 1 in one operand and 4 in the other.
    let (a, b) = (seq(&[2, 1], 1.0), seq(&[4, 3], -1.0));
    let y = ops::einsum("ij,jk->ik", &[a.clone(), b.clone()]).unwrap();
    let want = ops::matmul(&ops::expand(&a, &[2, 4]).unwrap(), &b).unwrap();
    assert_eq!(values(&y), values(&want));
}

#[test]
fn broadcast_labels_batch_and_differentiate() {
    // vmap against the loop (batch dim 0 of each input), both orders, with
    // {0, 1}, {1, n} and three operands.
    // (`...` takes the batch dim when check_vmap also calls the function on
    // the whole inputs.)
    let cases: Vec<(&str, Vec<Tensor>)> = vec![
        (
            "...i,...i->...i",
            vec![seq(&[2, 0], 1.0), seq(&[2, 1], 1.0)],
        ),
        (
            "...i,...i->...i",
            vec![seq(&[2, 1], 1.0), seq(&[2, 0], 1.0)],
        ),
        (
            "...i,...i->...i",
            vec![seq(&[2, 1], 1.0), seq(&[2, 3], 2.0)],
        ),
        (
            "...ij,...jk->...ik",
            vec![seq(&[2, 2, 0], 1.0), seq(&[2, 1, 3], 2.0)],
        ),
        (
            "...ij,...jk->...ik",
            vec![seq(&[2, 2, 1], 1.0), seq(&[2, 4, 3], 2.0)],
        ),
        (
            "...i,...i,...i->...",
            vec![seq(&[2, 1], 1.0), seq(&[2, 3], 2.0), seq(&[2, 1], 3.0)],
        ),
    ];
    for (eq, inputs) in &cases {
        check_vmap(|xs| ops::einsum(eq, xs), inputs)
            .unwrap_or_else(|e| panic!("{eq} {:?}: {e}", inputs[0].shape()));
    }
    // Gradients against finite differences, where there are elements.
    let grads: Vec<(&str, Vec<Tensor>)> = vec![
        ("i,i->i", vec![seq(&[1], 1.0), seq(&[3], 2.0)]),
        ("i,i->i", vec![seq(&[3], 1.0), seq(&[1], 2.0)]),
        ("ij,jk->ik", vec![seq(&[2, 1], 1.0), seq(&[4, 3], 2.0)]),
        (
            "i,i,i->i",
            vec![seq(&[1], 1.0), seq(&[1], 2.0), seq(&[3], 3.0)],
        ),
    ];
    for (eq, inputs) in &grads {
        check_grad(|xs| Ok(vec![ops::einsum(eq, xs)?]), inputs)
            .unwrap_or_else(|e| panic!("{eq}: {e}"));
    }
    // The gradient of a size-1 operand is the sum over what it broadcast to.
    let (x, y) = (seq(&[1], 1.0), seq(&[3], 2.0));
    let g = grad(|x: Tensor| ops::sum(&ops::einsum("i,i->i", &[x, y.clone()])?, None, false))
        .call(&x)
        .unwrap();
    assert_eq!(values(&g), vec![2.0 + 2.5 + 3.0]);
    // And an empty broadcast gives a zero gradient of the size-1 operand.
    let g = grad(|x: Tensor| ops::sum(&ops::einsum("i,i->i", &[x, seq(&[0], 0.0)])?, None, false))
        .call(&x)
        .unwrap();
    assert_eq!(values(&g), vec![0.0]);
}

#[test]
fn sizes_that_do_not_broadcast_are_an_einsum_error() {
    for (eq, shapes) in [
        ("i,i->i", vec![vec![2usize], vec![3]]),
        ("i,i->i", vec![vec![0], vec![2]]),
        ("ij,jk->ik", vec![vec![2, 0], vec![2, 3]]),
        ("i,i,i->i", vec![vec![1], vec![2], vec![3]]),
    ] {
        let inputs: Vec<Tensor> = shapes.iter().map(|s| seq(s, 1.0)).collect();
        let err = ops::einsum(eq, &inputs).unwrap_err().to_string();
        assert!(err.starts_with("einsum: "), "{err}");
        assert!(err.contains("must agree or be 1"), "{err}");
        assert!(!err.contains("expand"), "{err}");
    }
}

/// f32 values with full mantissas (a xorshift), so a different order of
/// additions would show in the bits.
fn noise(shape: &[usize], seed: u64) -> ndarray::ArrayD<f32> {
    let mut s = seed | 1;
    ndarray::ArrayD::from_shape_fn(shape, |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    })
}

/// An operand that holds its contracted labels last where the product wants
/// them first (`fa` as the left operand of `fa,fb->ab`, or `bf` on the right
/// of `af,bf->ab`) is read as a transposed view instead of being copied into
/// the product's order; the result has the bits of the same einsum given the
/// operand already copied into that order. At each size of the product's
/// engine: the plain loop (where the operand is copied), matrixmultiply, and
/// the `gemm` crate (split over the pool when it has threads), with and
/// without a batch label.
#[test]
fn operands_read_transposed_give_the_bits_of_operands_copied() {
    for (rows, inner, cols) in [
        (3, 4, 2),
        (10, 12, 10),
        (20, 30, 25),
        (1, 3000, 40),
        (40, 3000, 1),
        (160, 2000, 160),
    ] {
        for batch in [None, Some(3)] {
            let with = |shape: &[usize]| -> Vec<usize> {
                batch.iter().copied().chain(shape.iter().copied()).collect()
            };
            let b_label = if batch.is_some() { "n" } else { "" };
            let swap = |a: &ndarray::ArrayD<f32>| {
                let r = a.ndim();
                let mut v = a.view();
                v.swap_axes(r - 1, r - 2);
                Tensor::from(v.as_standard_layout().to_owned())
            };
            let x = noise(&with(&[rows, inner]), 1);
            let y = noise(&with(&[cols, inner]), 2);
            // Right operand `[cols, inner]` against its copy `[inner, cols]`.
            let read = ops::einsum(
                &format!("{b_label}ak,{b_label}bk->{b_label}ab"),
                &[Tensor::from(x.clone()), Tensor::from(y.clone())],
            )
            .unwrap();
            let copied = ops::einsum(
                &format!("{b_label}ak,{b_label}kb->{b_label}ab"),
                &[Tensor::from(x.clone()), swap(&y)],
            )
            .unwrap();
            let bits = |t: &Tensor| -> Vec<u32> {
                t.to_array::<f32>()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            };
            assert_eq!(
                bits(&read),
                bits(&copied),
                "right, {rows}x{inner}x{cols}, batch {batch:?}"
            );
            // Left operand `[inner, rows]` against its copy `[rows, inner]`.
            let read = ops::einsum(
                &format!("{b_label}ka,{b_label}kb->{b_label}ab"),
                &[swap(&x), swap(&y)],
            )
            .unwrap();
            let copied = ops::einsum(
                &format!("{b_label}ak,{b_label}kb->{b_label}ab"),
                &[Tensor::from(x), swap(&y)],
            )
            .unwrap();
            assert_eq!(
                bits(&read),
                bits(&copied),
                "left, {rows}x{inner}x{cols}, batch {batch:?}"
            );
        }
    }
}
