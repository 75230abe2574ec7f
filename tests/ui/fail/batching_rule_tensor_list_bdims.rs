// After a `Tensor[]` argument a batching rule takes one batch dim per tensor,
// `&[Option<usize>]`.
use batchrules::{batching_rule, Result, Tensor};

mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "concat(Tensor[] tensors, int dim=0) -> Tensor"
kind = "primitive"
"#
    );
}

#[batching_rule(op = "concat", table = crate::ops)]
fn concat_rule(
    tensors: &[Tensor],
    bdim: Option<usize>,
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    let _ = (tensors, bdim, dim);
    todo!()
}

fn main() {}
