//! A rule-bearing transform added from outside the crate: `count_flops` runs a
//! function and counts the floating-point operations of the primitives it
//! calls, each op's count given by that op's rule in a table this file owns.
//!
//! It takes this file (the rule type, the table, the rules, the interpreter,
//! the entry point and its tests) and one line in `main.rs`; the level tensor
//! is `transform_stack.rs`'s pass-through one. Nothing in the runtime or the
//! macro crate names it. Composites need no rule: the dispatcher runs their
//! decomposition at this level (`decomposes_composites` keeps its default), so
//! `linear` is counted as the primitives it decomposes into.

use std::any::Any;
use std::cell::Cell;
use std::rc::Rc;

use batchrules::dispatch::{self, Call, Interpreter};
use batchrules::rules::{Arg, Outs};
use batchrules::{ops, vmap, Error, Result, Tensor};
use ndarray::{Array, ArrayD};

use super::transform_stack::{unwrap, unwrap_args, wrap};

/// A FLOP rule: the count of a call, from its arguments (one level below the
/// counting level) and its outputs.
type FlopRule = fn(&[Arg<Tensor>], &[Tensor]) -> u64;

batchrules::rule_table! {
    /// The FLOP rules of `count_flops`.
    mod flops: FlopRule = "count_flops";
}

fn tensor(args: &[Arg<Tensor>], i: usize) -> &Tensor {
    match &args[i] {
        Arg::Tensor(t) => t,
        other => panic!("argument {i} is not a tensor: {other:?}"),
    }
}

fn len(t: &Tensor) -> u64 {
    t.shape().iter().product::<usize>() as u64
}

/// One operation per output element.
fn pointwise(_: &[Arg<Tensor>], outs: &[Tensor]) -> u64 {
    len(&outs[0])
}

/// Summing n elements into m takes n - m additions.
fn reduction(args: &[Arg<Tensor>], outs: &[Tensor]) -> u64 {
    len(tensor(args, 0)) - len(&outs[0])
}

/// A view moves no data.
fn view(_: &[Arg<Tensor>], _: &[Tensor]) -> u64 {
    0
}

/// A product of [.., m, k] and [.., k, n]: a multiply and an add per term.
fn product(args: &[Arg<Tensor>], outs: &[Tensor]) -> u64 {
    let k = *tensor(args, 0).shape().last().unwrap_or(&1) as u64;
    2 * k * len(&outs[0])
}

/// `addmm(bias, a, b)`: the product, and one add per output element.
fn addmm(args: &[Arg<Tensor>], outs: &[Tensor]) -> u64 {
    product(&args[1..], outs) + len(&outs[0])
}

batchrules::rule!(flops, batchrules::ops, mul => pointwise);
batchrules::rule!(flops, batchrules::ops, add => pointwise);
batchrules::rule!(flops, batchrules::ops, relu => pointwise);
batchrules::rule!(flops, batchrules::ops, sum => reduction);
batchrules::rule!(flops, batchrules::ops, transpose => view);
batchrules::rule!(flops, batchrules::ops, matmul => product);
batchrules::rule!(flops, batchrules::ops, addmm => addmm);

/// The counting level's interpreter: runs each call one level down and adds
/// its op's count.
struct Count {
    flops: Cell<u64>,
}

impl Interpreter for Count {
    fn name(&self) -> &'static str {
        "count_flops"
    }
    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>> {
        let rule = flops::TABLE
            .get(call.entry)?
            .ok_or_else(|| Error::NotImplemented {
                op: call.entry.name().to_string(),
                message: "count_flops has no FLOP rule for it; add one with `rule!(flops, batchrules::ops, <op> => <fn>)`".to_string(),
            })?;
        let args = unwrap_args(call.args, call.level)?;
        let outs = dispatch::call_op(call.entry, &args)?;
        self.flops.set(self.flops.get() + rule(&args, &outs));
        Ok(outs
            .into_iter()
            .map(|t| wrap(t, call.level, "count_flops"))
            .collect())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Runs `f` on `x` at a new counting level: its result, and the FLOPs of the
/// primitives it called at that level.
fn count_flops(f: impl FnOnce(Tensor) -> Result<Tensor>, x: &Tensor) -> Result<(Tensor, u64)> {
    let interp = Rc::new(Count {
        flops: Cell::new(0),
    });
    let guard = dispatch::push_level("count_flops", |_| interp.clone())?;
    let level = guard.id();
    let out = unwrap(&f(wrap(x.clone(), level, "count_flops"))?, level);
    drop(guard);
    Ok((out, interp.flops.get()))
}

fn square_sum(x: Tensor) -> Result<Tensor> {
    ops::sum(&ops::mul(&x, &x)?, Some(-1), false)
}

fn grid(rows: usize, cols: usize) -> Tensor {
    Tensor::from(Array::from_shape_fn((rows, cols), |(i, j)| (i * cols + j) as f64).into_dyn())
}

fn values(t: &Tensor) -> ArrayD<f64> {
    t.to_array::<f64>().unwrap()
}

#[test]
fn each_primitive_is_counted_by_its_rule() {
    // mul: 12 products; sum over the last dim of [4, 3]: 4 * 2 additions.
    let x = grid(4, 3);
    let (y, n) = count_flops(square_sum, &x).unwrap();
    assert_eq!(n, 12 + 8);
    assert_eq!(values(&y), values(&square_sum(x).unwrap()));
}

#[test]
fn a_composite_is_counted_as_the_primitives_it_decomposes_into() {
    // linear(x [2, 3], w [5, 3], b [5]) runs transpose (a view), then addmm:
    // 2 * 3 multiply-adds for each of the 10 outputs, and 10 bias adds.
    let w = grid(5, 3);
    let b = Tensor::from(Array::from_shape_fn(5, |i| i as f64).into_dyn());
    let f = |x: Tensor| ops::linear(&x, &w, Some(&b));
    let (y, n) = count_flops(f, &grid(2, 3)).unwrap();
    assert_eq!(n, 2 * 3 * 10 + 10);
    assert_eq!(values(&y), values(&f(grid(2, 3)).unwrap()));
    // Without a bias it decomposes into matmul alone.
    let (_, n) = count_flops(|x| ops::linear(&x, &w, None), &grid(2, 3)).unwrap();
    assert_eq!(n, 2 * 3 * 10);
}

#[test]
fn composed_with_vmap_it_counts_at_the_shapes_its_level_sees() {
    // Below vmap, the counter sees the batched calls of vmap's rules: [4, 3].
    let (y, below) = count_flops(|x| vmap(square_sum).call(&x), &grid(4, 3)).unwrap();
    assert_eq!(below, 12 + 8);
    assert_eq!(
        values(&y),
        values(&vmap(square_sum).call(&grid(4, 3)).unwrap())
    );
    // Above vmap, it sees one example's calls, [3], once for the whole batch.
    let above = Cell::new(0);
    let y = vmap(|x: Tensor| {
        let (y, n) = count_flops(square_sum, &x)?;
        above.set(above.get() + n);
        Ok(y)
    })
    .call(&grid(4, 3))
    .unwrap();
    assert_eq!(above.get(), 3 + 2);
    assert_eq!(
        values(&y),
        values(&vmap(square_sum).call(&grid(4, 3)).unwrap())
    );
}

#[test]
fn an_op_without_a_rule_is_an_error_naming_it() {
    let err = count_flops(|x| ops::exp(&x), &grid(2, 2)).unwrap_err();
    assert_eq!(err.op(), Some("exp"), "{err}");
    assert!(
        err.to_string().contains("count_flops has no FLOP rule"),
        "{err}"
    );
}

batchrules::rule_table! {
    /// A table with two rules for one op, which its first read reports.
    mod twice: FlopRule = "twice";
}
batchrules::rule!(twice, batchrules::ops, neg => pointwise);
batchrules::rule!(twice, batchrules::ops, neg => view);

#[test]
fn two_rules_for_one_op_are_an_error_naming_both() {
    let reg = batchrules::registry::registry().unwrap();
    let neg = reg.find("batchrules::ops", "neg").unwrap();
    let err = twice::TABLE.get(neg).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Registry { .. }), "{msg}");
    assert!(
        msg.contains("op `neg` has 2 twice rule registrations, at most one is allowed"),
        "{msg}"
    );
    assert!(
        msg.contains("`pointwise` at") && msg.contains("`view` at"),
        "{msg}"
    );
    // The table owns its rules: the other table is unaffected.
    assert!(flops::TABLE.get(neg).unwrap().is_none());
    let mul = reg.find("batchrules::ops", "mul").unwrap();
    assert!(flops::TABLE.get(mul).unwrap().is_some());
}
