// `argnums::<N>()` picks an element of the tuple given to `call`, from 0.
use batchrules::{grad, jacfwd, ops, Result, Tensor};

fn main() -> Result<()> {
    let x = Tensor::scalar(1.0f64);
    let w = Tensor::scalar(2.0f64);

    // A pair has arguments 0 and 1.
    let _ = grad(|(x, w): (Tensor, Tensor)| ops::mul(&x, &w))
        .argnums::<2>()
        .call((&x, &w))?;
    // A single tensor has only argument 0.
    let _ = jacfwd(|x: Tensor| ops::mul(&x, &x)).argnums::<1>().call(&x)?;
    Ok(())
}
