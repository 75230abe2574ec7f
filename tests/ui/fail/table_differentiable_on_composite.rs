mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scaled_softmax(Tensor self, float factor) -> Tensor"
kind = "composite"
differentiable = false
"#
    );
}

fn main() {}
