// `linear` names an argument that is not one of the op's tensor arguments
// (`dim` is an int; the op is linear in `self`, not in `index`).
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "pick(Tensor self, int dim, Tensor index) -> Tensor"
kind = "primitive"
linear = ["self", "dim"]
"#
    );
}

fn main() {}
