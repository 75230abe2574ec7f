mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "double(Tensor self) -> Tensor"
kind = "composite"
linear = true
"#
    );
}

fn main() {}
