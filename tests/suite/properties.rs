//! Property tests: random shapes, in_dims and short chains of ops, under vmap and
//! nested vmap, agree with the per-example loop; and an input that fails per
//! example fails under vmap. Every failure is an `Err`: a panic fails the test.

use batchrules::testing::{check_vmap, check_vmap_errors};
use batchrules::{ops, Result, Tensor};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Unary(usize),
    Binary(usize),
    Reduce {
        which: usize,
        dim: Option<i64>,
        keepdim: bool,
    },
    Softmax(i64),
    Triangle {
        upper: bool,
        diagonal: i64,
    },
}

fn apply(step: &Step, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    match *step {
        Step::Unary(k) => [
            ops::neg,
            ops::exp,
            ops::tanh,
            ops::sigmoid,
            ops::abs,
            ops::relu,
        ][k](x),
        Step::Binary(k) => [ops::add, ops::sub, ops::mul, ops::maximum, ops::div][k](x, y),
        Step::Reduce {
            which,
            dim,
            keepdim,
        } => [ops::sum, ops::amax, ops::mean, ops::amin][which](x, dim, keepdim),
        Step::Softmax(dim) => ops::softmax(x, dim),
        Step::Triangle { upper, diagonal } => {
            if upper {
                ops::triu(x, diagonal)
            } else {
                ops::tril(x, diagonal)
            }
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..6usize).prop_map(Step::Unary),
        (0..5usize).prop_map(Step::Binary),
        (0..4usize, proptest::option::of(-3..3i64), any::<bool>()).prop_map(
            |(which, dim, keepdim)| Step::Reduce {
                which,
                dim,
                keepdim
            }
        ),
        (-3..3i64).prop_map(Step::Softmax),
        (any::<bool>(), -2..2i64).prop_map(|(upper, diagonal)| Step::Triangle { upper, diagonal }),
    ]
}

/// A shape of rank 0..=3 with dims 0..=3, and a second shape that broadcasts
/// against it in either direction (or, sometimes, does not).
fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    proptest::collection::vec(0..4usize, 0..4).prop_flat_map(|shape| {
        let n = shape.len();
        (proptest::collection::vec(0..3usize, n..=n), 0..n + 1).prop_map(move |(mask, keep)| {
            // Keep a suffix of the shape, setting some dims to 1 (mask 0),
            // some to a mismatching size (mask 2 on dims > 1), the rest equal.
            let suffix = &shape[n - keep.min(n)..];
            let other = suffix
                .iter()
                .zip(mask.iter().chain(std::iter::repeat(&1)))
                .map(|(&d, &m)| match m {
                    0 => 1,
                    2 if d > 1 => d + 1,
                    _ => d,
                })
                .collect();
            (shape.clone(), other)
        })
    })
}

fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n)
        .map(|i| ((i as f64 + seed as f64) * 0.61).sin() * 3.0)
        .collect();
    Tensor::from_shape_vec(shape, values).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn chains_agree_with_the_loop((xs, ys) in shapes(), steps in proptest::collection::vec(step(), 1..4), seed in 0..100u64) {
        let x = tensor(&xs, seed);
        let y = tensor(&ys, seed + 7);
        let f = |t: &[Tensor]| -> Result<Vec<Tensor>> {
            let mut cur = t[0].clone();
            for s in &steps {
                cur = apply(s, &cur, &t[1])?;
            }
            Ok(vec![cur])
        };
        let inputs = [x, y];
        match f(&inputs) {
            Ok(_) => { check_vmap(f, &inputs).map_err(|m| TestCaseError::fail(m.to_string()))?; }
            Err(_) => { check_vmap_errors(f, &inputs).map_err(|m| TestCaseError::fail(m.to_string()))?; }
        }
    }
}
