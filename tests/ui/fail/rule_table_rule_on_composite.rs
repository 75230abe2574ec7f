// A transform's own rule table (`rule_table!`) takes rules for primitives only:
// `linear` is a composite of the built-in table, decomposed before the
// transform's interpreter sees the call, so its rule would never run.
use batchrules::rules::Arg;
use batchrules::Tensor;

type FlopRule = fn(&[Arg<Tensor>], &[Tensor]) -> u64;

batchrules::rule_table! {
    mod flops: FlopRule = "count_flops";
}

fn linear_flops(_: &[Arg<Tensor>], _: &[Tensor]) -> u64 {
    0
}

batchrules::rule!(flops, batchrules::ops, linear => linear_flops);

fn main() {}
