// A transform's builder does nothing until `.call(...)`.
#![deny(unused_must_use)]

use batchrules::{grad, ops, vmap, Tensor};

fn main() {
    vmap(|x: Tensor| ops::neg(&x)).in_dims(0);
    grad(|x: Tensor| ops::sum(&x, None, false));
}
