// The error names the offending line of the table.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "primitive"

[[op]]
schema = "clamp(Tensor self, number min) -> Tensor"
kind = "primitive"
"#
    );
}

fn main() {}
