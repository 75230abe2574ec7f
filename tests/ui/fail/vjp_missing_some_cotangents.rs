// A vjp takes one cotangent per output: `split_halves` has two, and this vjp
// stops after the first.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "split_halves(Tensor self) -> (Tensor first, Tensor second)"
kind = "primitive"
"#
    );
}

use batchrules::{vjp, Result, Tensor};

#[vjp(op = "split_halves", table = ops)]
fn split_halves_vjp(
    x: &Tensor,
    first: &Tensor,
    second: &Tensor,
    grad_first: &Tensor,
) -> Result<Option<Tensor>> {
    let _ = (x, first, second, grad_first);
    todo!()
}

fn main() {}
