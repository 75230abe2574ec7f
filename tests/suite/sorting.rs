//! `max_dim`, `min_dim`, `sort` (and `argsort`) and `topk` against PyTorch, on
//! edge cases (ties, NaN, ±inf, `-0.0` against `0.0`, negative dims,
//! `keepdim`, 0-d tensors, empty dims, `k = 0`), in f64 and f32: the values
//! and indices, the gradient of a weighted sum of the values (the cotangent
//! goes to the chosen index), the jvp, and both under `vmap` with
//! `FallbackPolicy::Error`, through the harness of `manipulation.rs`. The
//! values were recorded by `scripts/reference/record_sorting.py` into
//! `tests/reference/torch_sorting.json`: max/min on ties are PyTorch's
//! first occurrence; sort was recorded with `stable=True` (batchrules' sort is
//! always stable); topk's cases choose no index among ties (PyTorch leaves
//! that order undefined).

use crate::recorded::assert_error;
use batchrules::prelude::*;
use serde_json::Value;

use crate::manipulation::{check_recorded, floats, shape, tensor, values, Multi};

fn reference() -> Value {
    serde_json::from_str(include_str!("../reference/torch_sorting.json"))
        .expect("tests/reference/torch_sorting.json is JSON")
}

/// The op of a recorded case through its function and, where one fits the
/// arguments, through its method (the two must agree).
fn sorting_op(case: &Value, method: bool) -> Multi {
    let args = &case["args"];
    let int = |k: &str| args[k].as_i64().unwrap();
    let flag = |k: &str| args[k].as_bool().unwrap();
    let pair = |r: Result<(Tensor, Tensor)>| r.map(|(v, i)| vec![v, i]);
    match (case["op"].as_str().unwrap(), method) {
        ("max_dim", false) => {
            let (d, k) = (int("dim"), flag("keepdim"));
            Box::new(move |x| pair(ops::max_dim(x, d, k)))
        }
        ("max_dim", true) => {
            let (d, k) = (int("dim"), flag("keepdim"));
            Box::new(move |x| pair(if k { x.max_keepdim(d) } else { x.max(d) }))
        }
        ("min_dim", false) => {
            let (d, k) = (int("dim"), flag("keepdim"));
            Box::new(move |x| pair(ops::min_dim(x, d, k)))
        }
        ("min_dim", true) => {
            let (d, k) = (int("dim"), flag("keepdim"));
            Box::new(move |x| pair(if k { x.min_keepdim(d) } else { x.min(d) }))
        }
        ("sort", false) => {
            let (d, desc) = (int("dim"), flag("descending"));
            Box::new(move |x| pair(ops::sort(x, d, desc, false)))
        }
        ("sort", true) => {
            let (d, desc) = (int("dim"), flag("descending"));
            Box::new(move |x| {
                pair(if desc {
                    x.sort_descending(d)
                } else {
                    x.sort_dim(d)
                })
            })
        }
        ("topk", false) => {
            let (k, d, largest) = (int("k"), int("dim"), flag("largest"));
            Box::new(move |x| pair(ops::topk(x, k, d, largest, true)))
        }
        ("topk", true) => {
            let (k, d, largest) = (int("k"), int("dim"), flag("largest"));
            Box::new(move |x| {
                pair(if largest {
                    x.topk_dim(k, d)
                } else {
                    x.topk_smallest(k, d)
                })
            })
        }
        (other, _) => panic!("no op {other}"),
    }
}

#[test]
fn sorting_ops_match_torch_forward_grad_jvp_and_vmap() {
    let reference = reference();
    let cases = reference["cases"].as_array().unwrap();
    // Selections: the values are elements of the input, exactly.
    let n = check_recorded(cases, true, |c| sorting_op(c, false));
    assert_eq!(n, 2 * 31);
    check_recorded(cases, true, |c| sorting_op(c, true));
    // argsort is sort's second result; topk with `sorted = false` is sorted.
    let mut seen = 0;
    for case in cases {
        let x = tensor(
            &shape(&case["shape"]),
            &floats(&case["input"]),
            case["dtype"].as_str().unwrap(),
        );
        let args = &case["args"];
        let int = |k: &str| args[k].as_i64().unwrap();
        let flag = |k: &str| args[k].as_bool().unwrap();
        match case["op"].as_str().unwrap() {
            "sort" => {
                let (d, desc) = (int("dim"), flag("descending"));
                let (_, want) = ops::sort(&x, d, desc, true).unwrap();
                let got = ops::argsort(&x, d, desc, false).unwrap();
                assert_eq!(values(&got), values(&want));
                seen += 1;
            }
            "topk" => {
                let (k, d, largest) = (int("k"), int("dim"), flag("largest"));
                let (v, i) = ops::topk(&x, k, d, largest, true).unwrap();
                let (v2, i2) = ops::topk(&x, k, d, largest, false).unwrap();
                assert_eq!(values(&i2), values(&i));
                assert_eq!(format!("{:?}", values(&v2)), format!("{:?}", values(&v)));
                seen += 1;
            }
            _ => {}
        }
    }
    assert_eq!(seen, 2 * 15);
}

#[test]
fn ties_resolve_as_documented() {
    let x = Tensor::from_shape_vec(&[6], vec![2.0f64, 7.0, 7.0, 1.0, 1.0, 7.0]).unwrap();
    let (_, i) = x.max(0).unwrap();
    assert_eq!(i.to_array::<i64>().unwrap()[[]], 1);
    let (_, i) = x.min(0).unwrap();
    assert_eq!(i.to_array::<i64>().unwrap()[[]], 3);
    // Stable in both directions, whatever `stable` says.
    for stable in [false, true] {
        let up = ops::argsort(&x, 0, false, stable).unwrap();
        assert_eq!(
            up.to_array::<i64>()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            [3, 4, 0, 1, 2, 5]
        );
        let down = ops::argsort(&x, 0, true, stable).unwrap();
        assert_eq!(
            down.to_array::<i64>()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            [1, 2, 5, 0, 3, 4]
        );
    }
    let (_, i) = x.topk(2).unwrap();
    assert_eq!(
        i.to_array::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [1, 2]
    );
    // The cotangent of a tied maximum goes to the chosen index only.
    let g = grad(|x: Tensor| x.max(0)?.0.sum()).call(&x).unwrap();
    assert_eq!(
        g.to_array::<f64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    );
    // Integers and bools: min is the first smallest, without overflow at
    // the i64 limits.
    let ints = Tensor::from_shape_vec(&[4], vec![3i64, i64::MIN, i64::MAX, i64::MIN]).unwrap();
    let (v, i) = ints.min(0).unwrap();
    assert_eq!(
        (
            v.to_array::<i64>().unwrap()[[]],
            i.to_array::<i64>().unwrap()[[]]
        ),
        (i64::MIN, 1)
    );
    let (v, i) = ints.max(0).unwrap();
    assert_eq!(
        (
            v.to_array::<i64>().unwrap()[[]],
            i.to_array::<i64>().unwrap()[[]]
        ),
        (i64::MAX, 2)
    );
    let bools = Tensor::from_shape_vec(&[3], vec![true, false, false]).unwrap();
    let (v, i) = bools.min(0).unwrap();
    assert_eq!(
        (
            v.to_array::<bool>().unwrap()[[]],
            i.to_array::<i64>().unwrap()[[]]
        ),
        (false, 1)
    );
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let x = Tensor::from_shape_vec(&[2, 3], (0..6).map(f64::from).collect()).unwrap();
    let empty = Tensor::from_shape_vec(&[2, 0], Vec::<f64>::new()).unwrap();
    assert_error("max_dim", "dim", ops::max_dim(&x, 2, false));
    assert_error("min_dim", "size 0", ops::min_dim(&empty, 1, false));
    assert_error("argsort", "dim", ops::argsort(&x, -3, false, false));
    assert_error("sort", "dim", ops::sort(&x, 2, false, false));
    assert_error("topk", "`k`", ops::topk(&x, 4, -1, true, true));
    assert_error("topk", "`k`", ops::topk(&x, -1, -1, true, true));
    assert_error(
        "topk",
        "`k`",
        ops::topk(&Tensor::scalar(1.0f64), 2, 0, true, true),
    );
    assert_error("topk", "dim", ops::topk(&x, 1, 2, true, true));
}
