// Every problem of the attribute and the item is reported together.
use batchrules::{kernel, Result, Tensor};

#[kernel(op = triu, vmap = "fallback", tabel = downstream_ops::ops)]
async unsafe fn triu_kernel<T>(x: &Tensor, diagonal: T) -> Result<Tensor> {
    let _ = (x, diagonal);
    todo!()
}

fn main() {}
