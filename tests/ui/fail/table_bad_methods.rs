pub mod ops {
    batchrules::op_table!(toml = r#"
[[op]]
schema = "total(Tensor self, int? dim=None, bool keepdim=False, float scale) -> Tensor"
kind = "primitive"
methods = ["total_dim(dimm, scale)", "total_self(self, scale)", "total_keep(dim, keepdim?, scale)", "total_fixed(dim=x, scale)", "total_short(dim)", "total_twice(scale)"]

[[op]]
schema = "fill(int[] size) -> Tensor"
kind = "primitive"
methods = ["fill_like(size)"]

[[op]]
schema = "total_twice(Tensor self) -> Tensor"
kind = "primitive"
"#);
}

fn main() {}
