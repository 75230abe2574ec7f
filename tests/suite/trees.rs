//! Structures of tensors: `#[derive(TensorTree)]`, and vmap over trees
//! (structs of parameters in, structs out, per-argument in_dims, ensembling).

use crate::common::vector as t;
use batchrules::{ops, vmap, InDim, Result, Tensor, TensorTree};
use ndarray::{array, ArrayD};

fn arr(x: &Tensor) -> ArrayD<f64> {
    x.to_array::<f64>().unwrap()
}

fn firsts<T: TensorTree>(tree: &T) -> Vec<f64> {
    let mut out = Vec::new();
    tree.leaves(&mut out);
    out.iter().map(|x| arr(x)[[0]]).collect()
}

#[derive(Clone, Debug, TensorTree)]
struct Linear {
    w: Tensor,
    b: Option<Tensor>,
}

#[derive(Clone, Debug, PartialEq)]
enum Activation {
    Relu,
    Tanh,
}

#[derive(Clone, Debug, TensorTree)]
struct Mlp {
    #[tree(skip)]
    activation: Activation,
    layers: Vec<Linear>,
    #[tree(skip)]
    width: usize,
    head: (Tensor, [Tensor; 2]),
}

fn mlp() -> Mlp {
    Mlp {
        activation: Activation::Tanh,
        layers: vec![
            Linear {
                w: t(&[1.0]),
                b: Some(t(&[2.0])),
            },
            Linear {
                w: t(&[3.0]),
                b: None,
            },
        ],
        width: 7,
        head: (t(&[4.0]), [t(&[5.0]), t(&[6.0])]),
    }
}

#[test]
fn derived_leaves_follow_field_order_and_skip_non_tensors() {
    let m = mlp();
    assert_eq!(firsts(&m), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(m.leaf_count(), 6);
}

#[test]
fn derived_map_leaves_rebuilds_and_clones_skipped_fields() {
    let m = mlp();
    let mut order = Vec::new();
    let doubled = m
        .map_leaves(&mut |x| {
            order.push(arr(x)[[0]]);
            ops::add(x, x)
        })
        .unwrap();
    assert_eq!(order, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(firsts(&doubled), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    assert_eq!(doubled.activation, Activation::Tanh);
    assert_eq!(doubled.width, 7);
    assert!(doubled.layers[1].b.is_none());
}

#[test]
fn derived_with_leaves_checks_the_count() {
    let m = mlp();
    let leaves: Vec<Tensor> = (0..6).map(|i| t(&[f64::from(i) * 10.0])).collect();
    let rebuilt = m.with_leaves(leaves.clone()).unwrap();
    assert_eq!(firsts(&rebuilt), [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
    let err = m.with_leaves(leaves[..5].to_vec()).unwrap_err();
    assert!(err.to_string().contains("6 leaves"), "{err}");
}

#[test]
fn derived_leaf_paths_name_fields_and_indices() {
    let m = mlp();
    let paths: Vec<String> = (0..m.leaf_count()).map(|i| m.leaf_path(i)).collect();
    assert_eq!(
        paths,
        [
            ".layers[0].w",
            ".layers[0].b",
            ".layers[1].w",
            ".head.0",
            ".head.1[0]",
            ".head.1[1]"
        ]
    );
}

#[derive(Clone, TensorTree)]
struct Pair(Tensor, #[tree(skip)] f64, Vec<Tensor>);

#[derive(Clone, TensorTree)]
struct Nothing;

#[derive(Clone, TensorTree)]
struct Generic<T, C: Clone> {
    inner: Vec<T>,
    #[tree(skip)]
    config: C,
}

/// No bound written on `C`: the derive adds `C: Clone` (skipped) and
/// `Vec<T>: TensorTree` (a tree field) to its impl.
#[derive(TensorTree)]
struct Unbounded<T, C> {
    #[tree(skip)]
    config: C,
    items: Vec<T>,
}

#[derive(Clone, TensorTree)]
struct RawNames {
    r#type: Tensor,
}

#[test]
fn tuple_unit_generic_and_raw_field_structs_derive() {
    let p = Pair(t(&[1.0]), 0.5, vec![t(&[2.0]), t(&[3.0])]);
    assert_eq!(firsts(&p), [1.0, 2.0, 3.0]);
    assert_eq!(p.leaf_path(2), ".2[1]");
    let p2 = p.map_leaves(&mut |x| ops::neg(x)).unwrap();
    assert_eq!(firsts(&p2), [-1.0, -2.0, -3.0]);
    assert_eq!(p2.1, 0.5);

    assert_eq!(Nothing.leaf_count(), 0);
    assert!(Nothing.with_leaves(Vec::new()).is_ok());
    assert!(Nothing.with_leaves(vec![t(&[1.0])]).is_err());

    let g = Generic {
        inner: vec![p.clone(), p],
        config: "shared".to_string(),
    };
    assert_eq!(g.leaf_count(), 6);
    assert_eq!(g.leaf_path(4), ".inner[1].2[0]");
    let g2 = g.map_leaves(&mut |x| ops::neg(x)).unwrap();
    assert_eq!(g2.config, "shared");
    assert_eq!(firsts(&g2)[3..], [-1.0, -2.0, -3.0]);

    let u = Unbounded {
        config: vec![1u8, 2],
        items: vec![(t(&[1.0]), t(&[2.0]))],
    };
    let u2 = u.map_leaves(&mut |x| ops::neg(x)).unwrap();
    assert_eq!(u2.config, [1, 2]);
    assert_eq!(firsts(&u2), [-1.0, -2.0]);
    assert_eq!(u2.leaf_path(1), ".items[0].1");

    let r = RawNames { r#type: t(&[1.0]) };
    assert_eq!(r.leaf_path(0), ".type");
}

mod renamed {
    // The `crate = path` option, with the crate under another name.
    use batchrules as br;

    #[derive(br::TensorTree)]
    #[tree(crate = br)]
    pub struct Scaled {
        pub x: br::Tensor,
        #[tree(skip)]
        pub by: f64,
    }
}

#[test]
fn crate_option_names_the_runtime() {
    let s = renamed::Scaled {
        x: t(&[1.0, 2.0]),
        by: 2.0,
    };
    let s2 = s.map_leaves(&mut |x| ops::mul(x, x)).unwrap();
    assert_eq!(arr(&s2.x), array![1.0, 4.0].into_dyn());
    assert_eq!(s2.by, 2.0);
}

#[test]
fn errors_from_map_leaves_propagate() {
    let m = mlp();
    let err = m
        .map_leaves(&mut |x| ops::triu(x, 0)) // 1-d leaves: triu rejects them
        .unwrap_err();
    assert_eq!(err.op(), Some("triu"));
}

// ---------------------------------------------------------------------------
// vmap over trees

/// Deterministic values in [-1, 1) for a tensor of `shape`.
fn filled(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let values = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    Tensor::from_shape_vec(shape, values).unwrap()
}

/// A 3 -> 4 -> 2 MLP; `seed` varies the weights.
fn model(seed: u64, activation: Activation) -> Mlp {
    Mlp {
        activation,
        layers: vec![
            Linear {
                w: filled(&[4, 3], seed),
                b: Some(filled(&[4], seed + 1)),
            },
            Linear {
                w: filled(&[2, 4], seed + 2),
                b: None,
            },
        ],
        width: 4,
        head: (
            filled(&[2], seed + 3),
            [filled(&[2], seed + 4), filled(&[1], seed + 5)],
        ),
    }
}

/// One example: `x` is `[3]`; returns `[2]`.
fn forward(m: &Mlp, x: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    for (i, layer) in m.layers.iter().enumerate() {
        h = ops::linear(&h, &layer.w, layer.b.as_ref())?;
        if i + 1 < m.layers.len() {
            h = match m.activation {
                Activation::Relu => ops::relu(&h)?,
                Activation::Tanh => ops::tanh(&h)?,
            };
        }
    }
    let (scale, [shift, bias]) = &m.head;
    ops::add(&ops::add(&ops::mul(&h, scale)?, shift)?, bias)
}

fn close(a: &Tensor, b: &Tensor) {
    let (a, b) = (arr(a), arr(b));
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b.iter()) {
        assert!((x - y).abs() < 1e-12, "{a} != {b}");
    }
}

fn stack(ts: &[Tensor]) -> Tensor {
    ops::stack(ts, 0).unwrap()
}

/// `k` copies of a model structure with every leaf stacked along a new dim 0.
fn stacked(models: &[Mlp]) -> Mlp {
    let per_model: Vec<Vec<Tensor>> = models
        .iter()
        .map(|m| {
            let mut v = Vec::new();
            m.leaves(&mut v);
            v
        })
        .collect();
    let leaves = (0..per_model[0].len())
        .map(|i| stack(&per_model.iter().map(|v| v[i].clone()).collect::<Vec<_>>()))
        .collect::<Vec<_>>();
    models[0].with_leaves(leaves).unwrap()
}

#[test]
fn shared_parameters_and_batched_data_equal_the_loop() {
    for activation in [Activation::Relu, Activation::Tanh] {
        let m = model(1, activation);
        let xs = filled(&[5, 3], 99);
        let got = vmap(|(m, x): (Mlp, Tensor)| forward(&m, &x))
            .in_dims([None, Some(0)])
            .call((&m, &xs))
            .unwrap();
        let want = stack(
            &(0..5)
                .map(|i| forward(&m, &xs.select(0, i).unwrap()).unwrap())
                .collect::<Vec<_>>(),
        );
        close(&got, &want);
    }
}

#[test]
fn model_ensembling_equals_the_loop_over_models() {
    let models: Vec<Mlp> = (0..4).map(|k| model(10 * k, Activation::Tanh)).collect();
    let params = stacked(&models);
    let x = filled(&[6, 3], 7);
    // Per model: the whole data batch through that model.
    let batch_forward = |m: &Mlp, x: &Tensor| -> Result<Tensor> {
        vmap(|(m, x): (Mlp, Tensor)| forward(&m, &x))
            .in_dims([None, Some(0)])
            .call((m, x))
    };
    let got = vmap(|(m, x): (Mlp, Tensor)| batch_forward(&m, &x))
        .in_dims([Some(0), None])
        .call((&params, &x))
        .unwrap();
    assert_eq!(got.shape(), &[4, 6, 2]);
    let want = stack(
        &models
            .iter()
            .map(|m| batch_forward(m, &x).unwrap())
            .collect::<Vec<_>>(),
    );
    close(&got, &want);
    // The skipped fields reached every model unchanged.
    let widths = vmap(|m: Mlp| {
        assert_eq!((m.width, &m.activation), (4, &Activation::Tanh));
        Ok(m.layers[1].w.clone())
    })
    .call(&params)
    .unwrap();
    close(&widths, &params.layers[1].w);
}

#[test]
fn struct_outputs_get_their_out_dims_on_every_leaf() {
    let models: Vec<Mlp> = (0..3).map(|k| model(k, Activation::Relu)).collect();
    let params = stacked(&models);
    // Each model's parameters scaled by 2, returned as a struct; with a tensor
    // next to it, and out_dims per top-level output.
    let (doubled, norms) = vmap(|m: Mlp| {
        let doubled = m.map_leaves(&mut |t| ops::add(t, t))?;
        let norm = ops::sum(&ops::mul(&m.layers[0].w, &m.layers[0].w)?, None, false)?;
        Ok((doubled, norm))
    })
    .out_dims([1, 0])
    .call(&params)
    .unwrap();
    assert_eq!(doubled.width, 4);
    assert!(doubled.layers[1].b.is_none());
    // Every leaf of the struct output has its batch dim at 1.
    assert_eq!(doubled.layers[0].w.shape(), &[4, 3, 3]);
    assert_eq!(doubled.head.1[1].shape(), &[1, 3]);
    for (k, m) in models.iter().enumerate() {
        let want = ops::add(&m.layers[0].w, &m.layers[0].w).unwrap();
        close(&doubled.layers[0].w.select(1, k).unwrap(), &want);
    }
    assert_eq!(norms.shape(), &[3]);
    // A struct output on its own: out_dims has one entry.
    let same = vmap(|m: Mlp| Ok(m)).out_dims([0]).call(&params).unwrap();
    close(&same.head.0, &params.head.0);
}

#[test]
fn per_leaf_in_dims_batch_some_fields_and_share_others() {
    // Weights per example (batched), biases and head shared.
    let m = model(3, Activation::Tanh);
    let examples: Vec<Mlp> = (0..3).map(|k| model(20 + k, Activation::Tanh)).collect();
    let per_example = stacked(&examples);
    // Take the stacked `w`s, the shared rest.
    let mixed = Mlp {
        layers: vec![
            Linear {
                w: per_example.layers[0].w.clone(),
                b: m.layers[0].b.clone(),
            },
            Linear {
                w: per_example.layers[1].w.clone(),
                b: None,
            },
        ],
        ..m.clone()
    };
    let dims = InDim::per_leaf(&mixed, |path, _| path.ends_with(".w").then_some(0));
    assert_eq!(
        dims,
        InDim::Leaves(vec![Some(0), None, Some(0), None, None, None])
    );
    let x = filled(&[3], 5);
    let got = vmap(|(m, x): (Mlp, Tensor)| forward(&m, &x))
        .in_dims([dims, InDim::from(None)])
        .call((&mixed, &x))
        .unwrap();
    for (k, ex) in examples.iter().enumerate() {
        let one = Mlp {
            layers: vec![
                Linear {
                    w: ex.layers[0].w.clone(),
                    b: m.layers[0].b.clone(),
                },
                Linear {
                    w: ex.layers[1].w.clone(),
                    b: None,
                },
            ],
            ..m.clone()
        };
        close(&got.select(0, k).unwrap(), &forward(&one, &x).unwrap());
    }
}

#[test]
fn a_vec_of_structs_is_one_argument_per_element() {
    let models: Vec<Mlp> = (0..2).map(|k| model(k, Activation::Relu)).collect();
    // Two top-level arguments: the first model shared, the second batched
    // (its leaves stacked 4 times along dim 0).
    let second = models[1]
        .map_leaves(&mut |t| t.broadcast_new_dim(0, 4))
        .unwrap();
    let args = vec![models[0].clone(), second];
    let got = vmap(|ms: Vec<Mlp>| ops::sub(&ms[0].head.0, &ms[1].head.0))
        .in_dims([None, Some(0)])
        .call(&args)
        .unwrap();
    assert_eq!(got.shape(), &[4, 2]);
    let want = ops::sub(&models[0].head.0, &models[1].head.0).unwrap();
    close(&got.select(0, 3).unwrap(), &want);
    let err = vmap(|ms: Vec<Mlp>| Ok(ms[0].head.0.clone()))
        .in_dims([None::<i64>])
        .call(&args)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("in_dims has 1 entries but the function takes 2 inputs"),
        "{err}"
    );
}

#[test]
fn nested_vmap_over_struct_parameters() {
    // Outer: models; inner: examples. Same as the ensembling test, written with
    // the struct passed through two levels.
    let models: Vec<Mlp> = (0..2).map(|k| model(k + 40, Activation::Relu)).collect();
    let params = stacked(&models);
    let xs = filled(&[3, 3], 2);
    let got = vmap(|m: Mlp| {
        vmap(|(m, x): (Mlp, Tensor)| forward(&m, &x))
            .in_dims([None, Some(0)])
            .call((&m, &xs))
    })
    .call(&params)
    .unwrap();
    assert_eq!(got.shape(), &[2, 3, 2]);
    for (k, m) in models.iter().enumerate() {
        for i in 0..3 {
            let want = forward(m, &xs.select(0, i).unwrap()).unwrap();
            close(&got.select(0, k).unwrap().select(0, i).unwrap(), &want);
        }
    }
}

#[test]
fn tree_errors_name_the_argument_and_the_leaf() {
    let m = model(1, Activation::Tanh);
    let x = filled(&[5, 3], 3);
    let f = |(m, x): (Mlp, Tensor)| forward(&m, &x);

    // in_dim 1 fits the 2-d weights but not the 1-d bias of layer 0.
    let err = vmap(f).in_dims([Some(1), None]).call((&m, &x)).unwrap_err();
    assert!(
        err.to_string()
            .contains("in_dim 1 of input 0 (.layers[0].b) is out of range for its shape [4]"),
        "{err}"
    );
    // Batched at 0, the leaves disagree on the batch size.
    let err = vmap(f)
        .in_dims([Some(0), Some(0)])
        .call((&m, &x))
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("inconsistent batch sizes"), "{msg}");
    assert!(
        msg.contains("input 0 (.layers[0].w) has size 4 at in_dim 0"),
        "{msg}"
    );
    assert!(
        msg.contains("input 0 (.head.1[1]) has size 1 at in_dim 0"),
        "{msg}"
    );
    assert!(msg.contains("input 1 has size 5 at in_dim 0"), "{msg}");
    // Too many entries.
    let err = vmap(f)
        .in_dims([None, Some(0), None])
        .call((&m, &x))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("in_dims has 3 entries but the function takes 2 inputs"),
        "{err}"
    );
    // A per-leaf entry of the wrong length.
    let err = vmap(f)
        .in_dims([InDim::Leaves(vec![None; 2]), InDim::from(Some(0))])
        .call((&m, &x))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("in_dims entry 0 gives 2 leaf dims but input 0 has 6 leaves"),
        "{err}"
    );
    // A 0-d leaf cannot be batched.
    let scalar = Linear {
        w: Tensor::scalar(1.0f64),
        b: None,
    };
    let err = vmap(|l: (Linear,)| Ok(l.0.w)).call((&scalar,)).unwrap_err();
    assert!(
        err.to_string().contains("input 0 (.w) is a 0-d tensor"),
        "{err}"
    );
    // out_dims: one entry per top-level output, out of range on a leaf.
    let err = vmap(|m: Mlp| Ok((m.clone(), m.head.0)))
        .in_dims(None)
        .batch_size(2)
        .out_dims([2, 0])
        .call(&m)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("out_dim 2 of output 0 (.layers[0].b) is out of range"),
        "{err}"
    );
    let err = vmap(|m: Mlp| Ok(m))
        .in_dims(None)
        .batch_size(2)
        .out_dims([0, 0])
        .call(&m)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("out_dims has 2 entries but the function returned 1 outputs"),
        "{err}"
    );
}

#[test]
fn unbatched_leaves_of_an_output_are_repeated() {
    let m = model(1, Activation::Tanh);
    let x = filled(&[2, 3], 4);
    // The returned struct's leaves do not depend on the batch: each is repeated.
    let out = vmap(|(m, _x): (Mlp, Tensor)| Ok(m))
        .in_dims([None, Some(0)])
        .call((&m, &x))
        .unwrap();
    assert_eq!(out.layers[0].w.shape(), &[2, 4, 3]);
    close(&out.layers[0].w.select(0, 1).unwrap(), &m.layers[0].w);
}

#[test]
fn vmap_inputs_expose_leaves_counts_paths_and_rebuild() {
    use batchrules::VmapInputs;
    let m = model(1, Activation::Relu);
    let x = t(&[1.0, 2.0, 3.0]);
    let args = (&m, &x);
    assert_eq!(args.tensors().len(), 7);
    assert_eq!(args.arg_leaf_counts().as_slice(), &[6, 1]);
    assert_eq!(args.arg_leaf_path(0, 3), ".head.0");
    assert_eq!(args.arg_leaf_path(1, 0), "");
    let fresh: batchrules::Inputs = (0..7).map(|i| t(&[f64::from(i)])).collect();
    let (m2, x2) = args.rebuild(fresh.clone()).unwrap();
    assert_eq!(firsts(&m2), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(arr(&x2), array![6.0].into_dyn());
    assert_eq!(m2.width, 4);
    assert!(args.rebuild(fresh[..6].iter().cloned().collect()).is_err());
    let mut more = fresh.clone();
    more.push(t(&[7.0]));
    assert!(args.rebuild(more).is_err());
    // A Vec is one argument per element.
    let list = vec![m.clone(), m];
    assert_eq!(list.arg_leaf_counts().as_slice(), &[6, 6]);
    assert_eq!(list.arg_leaf_path(1, 2), ".layers[1].w");
}

/// A hand-written tree whose `leaf_count` is wrong (says 2, has 1 leaf).
struct Miscounted {
    x: Tensor,
}

impl TensorTree for Miscounted {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.x.clone());
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(Miscounted { x: f(&self.x)? })
    }
    fn leaf_count(&self) -> usize {
        2
    }
}

/// A correct hand-written tree, without `StructTree`: passed in a 1-tuple.
struct Handmade {
    x: Tensor,
}

impl TensorTree for Handmade {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.x.clone());
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(Handmade { x: f(&self.x)? })
    }
}

#[test]
fn hand_written_trees_go_in_a_tuple_and_a_miscount_is_an_error() {
    let h = Handmade {
        x: Tensor::from(array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn()),
    };
    assert_eq!(h.leaf_count(), 1);
    assert_eq!(h.leaf_path(0), "[leaf 0]");
    let got = vmap(|(h,): (Handmade,)| ops::sum(&h.x, None, false))
        .call((&h,))
        .unwrap();
    assert_eq!(arr(&got), array![3.0, 7.0].into_dyn());

    let m = Miscounted { x: t(&[1.0, 2.0]) };
    let err = vmap(|(m,): (Miscounted,)| Ok(m.x)).call((&m,)).unwrap_err();
    assert!(
        err.to_string()
            .contains("the inputs count 2 leaves ([2] per input) but give 1 tensors"),
        "{err}"
    );
}

#[test]
fn field_dims_pick_parts_of_the_value_by_type_checked_selectors() {
    let m = model(3, Activation::Tanh);
    // The same dims as the path-based per_leaf: both weights batched.
    let by_path = InDim::per_leaf(&m, |path, _| path.ends_with(".w").then_some(0));
    let by_field = InDim::fields(&m)
        .batch(|p| &p.layers[0].w, 0)
        .batch(|p| &p.layers[1].w, 0)
        .build()
        .unwrap();
    assert_eq!(by_field, by_path);
    // A whole subtree, then a part of it carved out again.
    let dims = InDim::fields(&m)
        .batch(|p| &p.layers, 1)
        .share(|p| &p.layers[0].b)
        .batch(|p| &p.head.1, -1)
        .build()
        .unwrap();
    assert_eq!(
        dims,
        InDim::Leaves(vec![Some(1), None, Some(1), None, Some(-1), Some(-1)])
    );
    // An absent part (a `None` bias) picks nothing.
    let none = InDim::fields(&m)
        .batch(|p| &p.layers[1].b, 0)
        .build()
        .unwrap();
    assert_eq!(none, InDim::Leaves(vec![None; 6]));
    // A part that is not inside the value is an error, not a silent no-op.
    let other = t(&[1.0]);
    let err = InDim::fields(&m).batch(|_| &other, 0).build().unwrap_err();
    assert!(
        err.to_string()
            .contains("not inside the value given to InDim::fields"),
        "{err}"
    );
    // A clone of a field is another value too.
    let copy = m.layers[0].w.clone();
    assert!(InDim::fields(&m).batch(|_| &copy, 0).build().is_err());
}
