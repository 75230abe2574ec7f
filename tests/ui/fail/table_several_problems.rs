// Every bad entry of a table is reported, each with its line.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "primitive"

[[op]]
schema = "scale(Tensor self) -> Tensor"
kind = "primitive"

[[op]]
schema = "topk(Tensor self, int k) -> int"
kind = "primitive"

[[op]]
schema = "norm(Tensor self, float p=two) -> Tensor"
kind = "derived"
"#
    );
}

fn main() {}
