// A transform's function takes ONE argument: several inputs go in one tuple.
use batchrules::{grad, jacrev, jvp, ops, vmap, Result, Tensor};

fn main() -> Result<()> {
    let x = Tensor::scalar(1.0f64);
    let w = Tensor::scalar(2.0f64);

    // Should be `|(x, w): (Tensor, Tensor)|`.
    let _ = grad(|x: Tensor, w: Tensor| ops::mul(&x, &w)).call((&x, &w))?;
    let _ = vmap(|x: Tensor, w: Tensor| ops::mul(&x, &w)).call((&x, &w))?;
    let _ = jvp(|x: Tensor, w: Tensor| ops::mul(&x, &w), (&x, &w), (&x, &w))?;

    // Should return `batchrules::Result<Tensor>` (no `.unwrap()`).
    let _ = jacrev(|x: Tensor| ops::mul(&x, &x).unwrap()).call(&x)?;
    Ok(())
}
