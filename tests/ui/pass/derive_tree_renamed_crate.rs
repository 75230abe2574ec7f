// A crate that depends on batchrules under another name: here `br` is
// batchrules and `batchrules` is another crate (`core`), so the derive must
// spell its paths with `crate = br`.
extern crate batchrules as br;
extern crate core as batchrules;

use br::{Tensor, TensorTree};

#[derive(TensorTree)]
#[tree(crate = br)]
struct Layer {
    w: Tensor,
    #[tree(skip)]
    width: usize,
}

#[derive(TensorTree)]
#[tree(crate = br)]
struct Pair<T>(T, T);

fn main() {
    let layer = Layer {
        w: Tensor::scalar(1.0f64),
        width: 3,
    };
    assert_eq!(layer.leaf_count(), 1);
    let pair = Pair(
        layer,
        Layer {
            w: Tensor::scalar(2.0f64),
            width: 4,
        },
    );
    let doubled = pair.map_leaves(&mut |t| br::ops::add(t, t)).unwrap();
    assert_eq!(doubled.1.w.to_array::<f64>().unwrap()[[]], 4.0);
    assert_eq!(doubled.1.width, 4);
    assert_eq!(pair.leaf_path(1), ".1.w");
}
