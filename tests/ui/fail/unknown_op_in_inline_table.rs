// The op is looked up in the table that `table = ...` names.
use batchrules::{kernel, Result, Tensor};

mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "concat(Tensor[] tensors, int dim=0) -> Tensor"
kind = "primitive"
"#
    );
}

#[kernel(op = "concat_", table = crate::ops)]
fn concat_kernel(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let _ = (tensors, dim);
    todo!()
}

fn main() {}
