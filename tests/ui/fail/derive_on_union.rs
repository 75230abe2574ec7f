use batchrules::TensorTree;

#[derive(TensorTree)]
union Bits {
    int: u64,
    float: f64,
}

fn main() {}
