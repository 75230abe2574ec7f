//! The dispatcher knows no transform: a new transform is an [`Interpreter`]
//! plus a [`LevelTensor`], pushed with [`dispatch::push_level`]. This test adds
//! one from outside the crate — a "trace" transform that records the name of
//! every op called at its level and otherwise computes the plain result — and
//! composes it with vmap in both orders.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use batchrules::dispatch::{self, Call, Interpreter};
use batchrules::rules::{Arg, Outs};
use batchrules::transform::{LevelId, LevelTensor};
use batchrules::{ops, vmap, DType, Result, Tensor};
use ndarray::{array, Array};

/// A tensor at a level of a transform that passes values through (this
/// test's trace, `rule_table.rs`'s FLOP counter): just the value one level
/// down, and the transform's name for messages.
#[derive(Debug)]
pub(crate) struct Passthrough {
    inner: Tensor,
    level: LevelId,
    transform: &'static str,
}

/// `inner` wrapped at `level` of `transform`.
pub(crate) fn wrap(inner: Tensor, level: LevelId, transform: &'static str) -> Tensor {
    Tensor::from_level(Arc::new(Passthrough {
        inner,
        level,
        transform,
    }))
}

/// The value of `t` one level below `level`: unwrapped if it lives there,
/// as it is if it is dense or at a lower level.
pub(crate) fn unwrap(t: &Tensor, level: LevelId) -> Tensor {
    match t.downcast_level::<Passthrough>() {
        Some(p) if p.level == level => p.inner.clone(),
        _ => t.clone(),
    }
}

/// A call's arguments one level below `level`.
pub(crate) fn unwrap_args(args: &[Arg<Tensor>], level: LevelId) -> Result<Vec<Arg<Tensor>>> {
    args.iter()
        .map(|a| a.try_map(|t| Ok(unwrap(t, level))))
        .collect()
}

fn traced(inner: Tensor, level: LevelId) -> Tensor {
    wrap(inner, level, "trace")
}

impl LevelTensor for Passthrough {
    fn level(&self) -> LevelId {
        self.level
    }
    fn transform(&self) -> &'static str {
        self.transform
    }
    fn kind(&self) -> &'static str {
        "passthrough"
    }
    fn shape(&self) -> &[usize] {
        self.inner.shape()
    }
    fn dtype(&self) -> DType {
        self.inner.dtype()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn permuted(&self, perm: &[usize]) -> Result<Tensor> {
        Ok(wrap(self.inner.permuted(perm)?, self.level, self.transform))
    }
    fn unsqueezed(&self, dim: usize) -> Result<Tensor> {
        Ok(wrap(
            self.inner.unsqueezed(dim)?,
            self.level,
            self.transform,
        ))
    }
    fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        Ok(wrap(
            self.inner.select(dim, index)?,
            self.level,
            self.transform,
        ))
    }
    fn broadcast_new_dim(&self, dim: usize, size: usize) -> Result<Tensor> {
        Ok(wrap(
            self.inner.broadcast_new_dim(dim, size)?,
            self.level,
            self.transform,
        ))
    }
}

/// What a trace level saw: each op called at it, with its output's logical shape.
type Log = Vec<(&'static str, Vec<usize>)>;

/// The trace level's interpreter: records the op, unwraps its own tensors,
/// calls the op again (the dispatcher sends it to the levels below), wraps.
struct Trace {
    log: RefCell<Log>,
}

impl Interpreter for Trace {
    fn name(&self) -> &'static str {
        "trace"
    }
    fn wants_output_metas(&self) -> bool {
        true
    }
    fn decomposes_composites(&self) -> bool {
        false
    }
    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>> {
        let shape = call
            .out_metas
            .map_or_else(Vec::new, |m| m[0].shape().to_vec());
        self.log.borrow_mut().push((call.entry.name(), shape));
        let unwrapped = unwrap_args(call.args, call.level)?;
        let outs = dispatch::call_op(call.entry, &unwrapped)?;
        Ok(outs.into_iter().map(|t| traced(t, call.level)).collect())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Runs `f` at a new trace level; returns its result and the ops it saw.
fn trace(f: impl FnOnce(Tensor) -> Result<Tensor>, x: &Tensor) -> Result<(Tensor, Log)> {
    let interp = Rc::new(Trace {
        log: RefCell::new(Vec::new()),
    });
    let guard = dispatch::push_level("trace", |_| interp.clone())?;
    let level = guard.id();
    let out = f(traced(x.clone(), level))?;
    let out = unwrap(&out, level);
    drop(guard);
    let log = interp.log.borrow().clone();
    Ok((out, log))
}

fn f(x: Tensor) -> Result<Tensor> {
    ops::sum(&ops::mul(&x, &x)?, Some(-1), false)
}

fn xs() -> Tensor {
    Tensor::from(Array::from_shape_fn((4, 3), |(i, j)| (i * 3 + j) as f64).into_dyn())
}

#[test]
fn a_new_transform_sees_every_op_and_computes_the_plain_result() {
    let x = Tensor::from(array![1.0f64, 2.0, 3.0].into_dyn());
    let (y, log) = trace(f, &x).unwrap();
    assert_eq!(
        y.to_array::<f64>().unwrap(),
        array![14.0].into_shape_with_order(()).unwrap().into_dyn()
    );
    assert_eq!(log, vec![("mul", vec![3]), ("sum", vec![])]);
}

#[test]
fn trace_of_vmap_sees_physical_calls_of_the_rules() {
    // The trace level is below vmap: it sees what vmap's rules call, on the
    // physical (batched) shapes.
    let (y, log) = trace(|x| vmap(f).call(&x), &xs()).unwrap();
    let want = vmap(f).call(&xs()).unwrap();
    assert_eq!(
        y.to_array::<f64>().unwrap(),
        want.to_array::<f64>().unwrap()
    );
    assert_eq!(log, vec![("mul", vec![4, 3]), ("sum", vec![4])]);
}

#[test]
fn vmap_of_trace_sees_logical_calls() {
    // The trace level is above vmap: it sees the per-example (logical) shapes,
    // and its own op calls are then batched by vmap.
    let logs = RefCell::new(Vec::new());
    let y = vmap(|x: Tensor| {
        let (y, log) = trace(f, &x)?;
        logs.borrow_mut().extend(log);
        Ok(y)
    })
    .call(&xs())
    .unwrap();
    let want = vmap(f).call(&xs()).unwrap();
    assert_eq!(
        y.to_array::<f64>().unwrap(),
        want.to_array::<f64>().unwrap()
    );
    assert_eq!(logs.into_inner(), vec![("mul", vec![3]), ("sum", vec![])]);
}

#[test]
fn meta_checks_run_at_the_new_level_too() {
    let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
    let err = trace(|x| ops::triu(&x, 0), &x).unwrap_err();
    assert_eq!(
        err.to_string(),
        "triu: expected a tensor with at least 2 dims, got shape [2] (checked on logical shapes at trace level 1)"
    );
}

#[test]
fn a_tensor_that_escaped_its_level_is_an_error() {
    let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
    let escaped = RefCell::new(None);
    trace(
        |t| {
            *escaped.borrow_mut() = Some(t.clone());
            Ok(t)
        },
        &x,
    )
    .unwrap();
    let t = escaped.into_inner().unwrap();
    let err = ops::neg(&t).unwrap_err();
    assert_eq!(
        err.op(),
        Some("neg"),
        "the error names the op called: {err}"
    );
    assert!(
        err.to_string()
            .contains("outside the trace that created it"),
        "{err}"
    );
}
