// `rule!` names its op through the table's generated index: a misspelt op is
// a compile error, not a rule that silently never runs.
use batchrules::rules::Arg;
use batchrules::Tensor;

type FlopRule = fn(&[Arg<Tensor>], &[Tensor]) -> u64;

batchrules::rule_table! {
    mod flops: FlopRule = "count_flops";
}

fn mul_flops(_: &[Arg<Tensor>], _: &[Tensor]) -> u64 {
    0
}

batchrules::rule!(flops, batchrules::ops, mull => mul_flops);

fn main() {}
