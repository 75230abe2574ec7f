//! `tree_map`, `tree_zip_map` and `tree_leaves` over any `TensorTree`, and
//! the keys leaves are saved under (`leaf_key`, `#[tree(rename = "...")]`).

use std::collections::BTreeMap;

use batchrules::{ops, tree_leaves, tree_map, tree_zip_map, Error, Result, Tensor, TensorTree};

use crate::common::{no_panic, vector as t};

fn vals(x: &Tensor) -> Vec<f64> {
    x.to_array::<f64>().unwrap().iter().copied().collect()
}

#[derive(Clone, Debug, TensorTree)]
struct Linear {
    #[tree(rename = "weight")]
    w: Tensor,
    #[tree(rename = "bias")]
    b: Option<Tensor>,
}

#[derive(Clone, Debug, TensorTree)]
struct Model {
    layers: Vec<Linear>,
    #[tree(skip)]
    name: String,
    #[tree(rename = "out")]
    head: (Tensor, Box<Tensor>),
    extra: BTreeMap<String, Tensor>,
}

/// Leaf `i` holds `[base + i, base + i + 0.5]`, so every leaf differs.
fn model(base: f64, second_bias: bool) -> Model {
    let mut i = base;
    let mut next = || {
        let v = t(&[i, i + 0.5]);
        i += 1.0;
        v
    };
    Model {
        layers: vec![
            Linear {
                w: next(),
                b: Some(next()),
            },
            Linear {
                w: next(),
                b: second_bias.then(&mut next),
            },
        ],
        name: "m".into(),
        head: (next(), Box::new(next())),
        extra: BTreeMap::from([("z".to_string(), next()), ("a".to_string(), next())]),
    }
}

#[test]
fn keys_follow_the_state_dict_spelling_and_paths_the_rust_one() {
    let m = model(0.0, true);
    let keys: Vec<String> = tree_leaves(&m).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "layers.0.weight",
            "layers.0.bias",
            "layers.1.weight",
            "layers.1.bias",
            "out.0",
            "out.1",
            "extra.a",
            "extra.z"
        ]
    );
    let paths: Vec<String> = (0..m.leaf_count()).map(|i| m.leaf_path(i)).collect();
    assert_eq!(
        paths,
        [
            ".layers[0].w",
            ".layers[0].b",
            ".layers[1].w",
            ".layers[1].b",
            ".head.0",
            ".head.1",
            ".extra[\"a\"]",
            ".extra[\"z\"]"
        ]
    );
    // The one-walk names agree with the per-leaf ones.
    let mut names = Vec::new();
    m.write_leaf_names(&mut String::new(), &mut String::new(), &mut names);
    let one_by_one: Vec<(String, String)> = (0..m.leaf_count())
        .map(|i| (m.leaf_path(i), m.leaf_key(i)))
        .collect();
    assert_eq!(names, one_by_one);
    // tree_leaves gives the leaves in leaf order: the tensors of `leaves`.
    let mut leaves = Vec::new();
    m.leaves(&mut leaves);
    for ((_, a), b) in tree_leaves(&m).iter().zip(&leaves) {
        assert_eq!(vals(a), vals(b));
    }
    // A `None` has no key; the keys after it shift.
    let keys: Vec<String> = tree_leaves(&model(0.0, false))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys[2..4], ["layers.1.weight", "out.0"]);
    // Tuple structs, arrays, nested tuples; a bare tensor's key is empty.
    #[derive(Clone, TensorTree)]
    struct Pair(Tensor, #[tree(rename = "second")] [Tensor; 2]);
    let p = (Pair(t(&[1.0]), [t(&[2.0]), t(&[3.0])]),);
    let keys: Vec<String> = (0..p.leaf_count()).map(|i| p.leaf_key(i)).collect();
    assert_eq!(keys, ["0.0", "0.second.0", "0.second.1"]);
    assert_eq!(t(&[1.0]).leaf_key(0), "");
    assert_eq!(tree_leaves(&t(&[1.0]))[0].0, "");
}

/// A hand-written tree that says nothing about keys: the default key is its
/// path respelled.
#[derive(Clone, Debug)]
struct HandWritten {
    parts: Vec<Tensor>,
}

impl TensorTree for HandWritten {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.extend(self.parts.iter().cloned());
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(HandWritten {
            parts: self.parts.iter().map(f).collect::<Result<_>>()?,
        })
    }
}

/// A hand-written tree whose `leaf_count` disagrees with `map_leaves`.
#[derive(Clone, Debug)]
struct Liar(Tensor);

impl TensorTree for Liar {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.0.clone());
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(Liar(f(&self.0)?))
    }
    fn leaf_count(&self) -> usize {
        2
    }
}

#[test]
fn hand_written_trees_get_default_keys_and_inconsistent_ones_are_refused() {
    #[derive(Clone, TensorTree)]
    struct Outer {
        inner: HandWritten,
        more: Vec<HandWritten>,
    }
    let h = || HandWritten {
        parts: vec![t(&[1.0]), t(&[2.0])],
    };
    let o = Outer {
        inner: h(),
        more: vec![h()],
    };
    let keys: Vec<String> = tree_leaves(&o).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "inner.leaf 0",
            "inner.leaf 1",
            "more.0.leaf 0",
            "more.0.leaf 1"
        ]
    );
    assert_eq!(o.leaf_path(3), ".more[0][leaf 1]");
    let mut names = Vec::new();
    o.write_leaf_names(&mut String::new(), &mut String::new(), &mut names);
    assert_eq!(
        names[3],
        (".more[0][leaf 1]".to_string(), "more.0.leaf 1".to_string())
    );

    let liar = Liar(t(&[1.0]));
    let e = tree_map(&liar, |x| Ok(x.clone())).unwrap_err().to_string();
    assert!(
        e.starts_with("tree_map: the structure of tensors") && e.contains("inconsistent"),
        "{e}"
    );
    let e = tree_zip_map(&liar, &liar, |x, _| Ok(x.clone()))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("tree_zip_map: the structure of tensors"),
        "{e}"
    );
}

#[test]
fn tree_map_maps_every_leaf_in_order_and_keeps_the_rest() -> Result<()> {
    let m = model(0.0, true);
    let mut seen = Vec::new();
    let doubled = tree_map(&m, |x| {
        seen.push(vals(x)[0]);
        ops::add(x, x)
    })?;
    assert_eq!(seen, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 6.0]);
    assert_eq!(vals(&doubled.layers[1].w), [4.0, 5.0]);
    assert_eq!(vals(&doubled.head.1), [10.0, 11.0]);
    assert_eq!(vals(&doubled.extra["z"]), [12.0, 13.0]);
    assert_eq!(doubled.name, "m");

    // The first error stops the walk and is returned as it is.
    let mut calls = 0;
    let e = tree_map(&m, |x| {
        calls += 1;
        if calls == 3 {
            ops::matmul(x, &t(&[1.0, 2.0, 3.0]))
        } else {
            Ok(x.clone())
        }
    })
    .unwrap_err();
    assert_eq!(calls, 3);
    assert_eq!(e.op(), Some("matmul"), "{e}");
    Ok(())
}

#[test]
fn tree_zip_map_is_an_sgd_step_in_one_call() -> Result<()> {
    let params = model(0.0, true);
    let grads = model(10.0, true);
    let lr = Tensor::scalar(0.5f64);
    let stepped = tree_zip_map(&params, &grads, |p, g| ops::sub(p, &ops::mul(&lr, g)?))?;
    // Leaf i: p = [i, i + .5], g = [10 + i, 10.5 + i]; p - g / 2 = [i/2 - 5, i/2 - 4.75].
    for (i, (key, leaf)) in tree_leaves(&stepped).into_iter().enumerate() {
        let i = match key.as_str() {
            "extra.a" => 7.0,
            "extra.z" => 6.0,
            _ => i as f64,
        };
        assert_eq!(vals(&leaf), [i / 2.0 - 5.0, i / 2.0 - 4.75], "{key}");
    }
    assert_eq!(stepped.name, "m");
    Ok(())
}

#[test]
fn tree_zip_map_refuses_structures_that_differ_naming_the_leaf() {
    let zip = |a: &Model, b: &Model| {
        no_panic("tree_zip_map", || tree_zip_map(a, b, ops::add))
            .unwrap_err()
            .to_string()
    };
    // Option: Some in one, None in the other.
    let e = zip(&model(0.0, true), &model(0.0, false));
    assert!(
        e.starts_with("tree_zip_map: the two structures differ"),
        "{e}"
    );
    assert!(e.contains("first has 8 leaves and the second 7"), "{e}");
    assert!(
        e.contains(
            "at leaf 3 the first has leaf `.layers[1].b` where the second has leaf `.head.0`"
        ),
        "{e}"
    );
    // Vec lengths.
    let mut short = model(0.0, true);
    short.layers.pop();
    let e = zip(&short, &model(0.0, true));
    assert!(
        e.contains(
            "at leaf 2 the first has leaf `.head.0` where the second has leaf `.layers[1].w`"
        ),
        "{e}"
    );
    // Map keys that differ, with the same count.
    let mut renamed = model(0.0, true);
    let a = renamed.extra.remove("a").unwrap();
    renamed.extra.insert("b".into(), a);
    let e = zip(&model(0.0, true), &renamed);
    assert!(
        e.contains("the first has leaf `.extra[\"a\"]` where the second has leaf `.extra[\"b\"]`"),
        "{e}"
    );
    // More leaves in the second: named as "no leaf" in the first.
    let e = no_panic("vec", || {
        tree_zip_map(&vec![t(&[1.0])], &vec![t(&[1.0]), t(&[2.0])], |x, _| {
            Ok(x.clone())
        })
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("at leaf 1 the first has no leaf where the second has leaf `[1]`"),
        "{e}"
    );

    // Shapes are f's business: the op reports them.
    let mut wide = model(0.0, true);
    wide.layers[0].w = t(&[1.0, 2.0, 3.0]);
    let e = no_panic("shapes", || {
        tree_zip_map(&model(0.0, true), &wide, ops::add)
    })
    .unwrap_err();
    assert_eq!(e.op(), Some("add"), "{e}");
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
}
