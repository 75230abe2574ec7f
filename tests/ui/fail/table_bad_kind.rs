mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "elementwise"
"#
    );
}

fn main() {}
