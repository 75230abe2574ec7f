//! einsum broadcasts a label's size-1 dims as numpy and PyTorch do (issue
//! 43): across the operands a label's sizes may be `{1, n}` (n may be 0),
//! in any order and with any number of operands, and the result is what the
//! operands expanded to the label's size give. Checked against the same
//! contraction written with explicit `expand`s, under vmap against the
//! loop, and under grad against finite differences.

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
