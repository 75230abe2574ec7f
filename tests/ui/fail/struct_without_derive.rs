// A struct of tensors passed to a transform needs `#[derive(TensorTree)]`.
use batchrules::{grad, ops, vmap, Result, Tensor};

struct Linear {
    w: Tensor,
}

fn main() -> Result<()> {
    let p = Linear { w: Tensor::scalar(2.0f64) };
    let _ = vmap(|p: Linear| ops::mul(&p.w, &p.w)).call(&p)?;
    let _ = grad(|p: Linear| ops::mul(&p.w, &p.w)).call(&p)?;
    let _ = vmap(|w: Tensor| Ok(Linear { w })).call(&p.w)?;
    Ok(())
}
