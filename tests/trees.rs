//! Structures of tensors: `#[derive(TensorTree)]`, and vmap over trees
//! (structs of parameters in, structs out, per-argument in_dims, ensembling).

use batchrules::{ops, Tensor, TensorTree};
use ndarray::{array, ArrayD};

fn t(values: &[f64]) -> Tensor {
    Tensor::from(ArrayD::from_shape_vec(vec![values.len()], values.to_vec()).unwrap())
}

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
