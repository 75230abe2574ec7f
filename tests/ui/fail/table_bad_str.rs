// A `str` argument cannot be optional, and its default is quoted.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "pad_mode(Tensor self, str? mode) -> Tensor"
kind = "primitive"

[[op]]
schema = "fill_mode(Tensor self, str mode=valid) -> Tensor"
kind = "primitive"
"#
    );
}

fn main() {}
