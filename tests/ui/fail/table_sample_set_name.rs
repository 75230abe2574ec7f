// An op entry names the shared sample set its tests run on with
// `samples = "<name>"`: a name `sample_set!` can declare, not a path or a
// list.
mod ops {
    batchrules::op_table!(
        toml = r#"
[[op]]
schema = "scale(Tensor self, float factor) -> Tensor"
kind = "primitive"
samples = "float samples"
"#
    );
}

fn main() {}
