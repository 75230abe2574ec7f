mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "primitive"

[[op]]
schema = "scale(Tensor self, Tensor factor) -> Tensor"
kind = "primitive"
"#
    );
}

fn main() {}
