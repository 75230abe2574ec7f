use batchrules::kernel;

#[kernel(op = "neg")]
struct NegKernel;

fn main() {}
