//! Tracing: the jit level's interpreter and its tensors.
//!
//! A jit call pushes its level first, below every level the function pushes,
//! and wraps the inputs as [`Traced`] tensors: a value id, a shape and a
//! dtype, no data. Every op call that reaches the level (every call the
//! levels above would have sent to the dense kernels) is recorded with the
//! output metas the dispatcher computed, and returns traced tensors of those
//! metas. The structural views batching rules take
//! ([`Tensor::permuted`](crate::Tensor::permuted) and its siblings) are
//! recorded too. Dense tensors that reach the level (captured by the
//! function, or computed from no input) become constants of the program.

use std::sync::{Arc, Mutex, PoisonError};

use crate::core::value::{Arg, Outs, TensorMeta};
use crate::dispatch::{escaped, Call, Interpreter};
use crate::{DType, Error, LevelId, LevelTensor, Result, Tensor};

use super::program::{Action, Def, Recording, ValueId, View};

/// The shared recording of one trace: the interpreter and every traced
/// tensor append to it (tensors are `Send + Sync`, so it is behind a mutex;
/// a trace runs on one thread, so the lock is never contended).
#[derive(Default)]
pub(crate) struct Recorder {
    rec: Mutex<Recording>,
    /// Constants already recorded, by the identity of their storage (the
    /// recording holds a clone, so an identity is never reused meanwhile).
    consts: Mutex<Vec<(usize, ValueId)>>,
}

impl Recorder {
    fn with<T>(&self, f: impl FnOnce(&mut Recording) -> T) -> T {
        f(&mut self.rec.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The recording, once the trace is over.
    pub(crate) fn finish(self: Arc<Self>) -> Recording {
        let me = Arc::try_unwrap(self).unwrap_or_else(|shared| Recorder {
            rec: Mutex::new(std::mem::take(
                &mut *shared.rec.lock().unwrap_or_else(PoisonError::into_inner),
            )),
            consts: Mutex::default(),
        });
        me.rec.into_inner().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next input leaf, as a traced tensor at `level`.
    pub(crate) fn input(self: &Arc<Self>, t: &Tensor, level: LevelId) -> Tensor {
        let meta = TensorMeta::of(t);
        let id = self.with(|r| {
            let id = r.value(meta.clone(), Def::Input);
            r.inputs.push(id);
            id
        });
        self.traced(id, meta, level)
    }

    fn traced(self: &Arc<Self>, id: ValueId, meta: TensorMeta, level: LevelId) -> Tensor {
        Tensor::from_level(Arc::new(Traced {
            level,
            id,
            meta,
            recorder: Arc::clone(self),
        }))
    }

    /// The value id of `t` in this trace at `level`: a traced tensor's id, or
    /// a dense tensor recorded as a constant. Errors for a tensor of another
    /// trace or level.
    pub(crate) fn value_of(&self, t: &Tensor, level: LevelId) -> Result<ValueId> {
        if let Some(traced) = t.downcast_level::<Traced>() {
            return if traced.level == level {
                Ok(traced.id)
            } else {
                Err(escaped(t))
            };
        }
        if t.level().is_some() {
            return Err(escaped(t));
        }
        let identity = t.identity();
        let mut consts = self.consts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&(_, id)) = consts.iter().find(|(i, _)| *i == identity) {
            return Ok(id);
        }
        let id = self.with(|r| r.value(TensorMeta::of(t), Def::Const(t.clone())));
        consts.push((identity, id));
        Ok(id)
    }

    /// Records `action` on `args` with outputs of `metas`; returns them as
    /// traced tensors at `level`.
    fn record(
        self: &Arc<Self>,
        action: Action,
        args: &[Arg<Tensor>],
        metas: &[TensorMeta],
        level: LevelId,
    ) -> Result<Outs<Tensor>> {
        let args = args
            .iter()
            .map(|a| a.try_map(|t| self.value_of(t, level)))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.record_ids(action, args, metas, level))
    }

    /// [`Recorder::record`] on arguments already given as value ids.
    fn record_ids(
        self: &Arc<Self>,
        action: Action,
        args: Vec<Arg<ValueId>>,
        metas: &[TensorMeta],
        level: LevelId,
    ) -> Outs<Tensor> {
        let ids = self.with(|r| r.step(action, args, metas.iter().cloned()));
        ids.into_iter()
            .zip(metas)
            .map(|(id, m)| self.traced(id, m.clone(), level))
            .collect()
    }
}

/// A tensor at a jit level while the function is traced: a value of the
/// program, with a shape and a dtype and no data.
pub(crate) struct Traced {
    level: LevelId,
    id: ValueId,
    meta: TensorMeta,
    recorder: Arc<Recorder>,
}

impl std::fmt::Debug for Traced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traced")
            .field("level", &self.level)
            .field("id", &self.id)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// What the error of reading a traced tensor's data says.
const DATA_ADVICE: &str = "jit traces the function with shapes and dtypes only, so code that \
     reads tensor values (to branch on them, or to copy them out) cannot be traced; compute \
     with ops, or call the function without `jit` to run it eagerly";

impl Traced {
    fn view(&self, view: View) -> Result<Tensor> {
        let meta = TensorMeta::new(view.shape(self.meta.shape()), self.meta.dtype());
        let args = vec![Arg::Tensor(self.id)];
        let mut outs = self
            .recorder
            .record_ids(Action::View(view), args, &[meta], self.level);
        outs.pop()
            .ok_or_else(|| Error::Tensor("jit: a view recorded no output".to_string()))
    }
}

impl LevelTensor for Traced {
    fn level(&self) -> LevelId {
        self.level
    }
    fn transform(&self) -> &'static str {
        "jit"
    }
    fn kind(&self) -> &'static str {
        "traced"
    }
    fn shape(&self) -> &[usize] {
        self.meta.shape()
    }
    fn dtype(&self) -> DType {
        self.meta.dtype()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn permuted(&self, perm: &[usize]) -> Result<Tensor> {
        self.view(View::Permute(perm.to_vec()))
    }
    fn unsqueezed(&self, dim: usize) -> Result<Tensor> {
        self.view(View::Unsqueeze(dim))
    }
    fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        self.view(View::Select { dim, index })
    }
    fn broadcast_new_dim(&self, dim: usize, size: usize) -> Result<Tensor> {
        self.view(View::BroadcastNewDim { dim, size })
    }
    fn data_advice(&self) -> Option<&'static str> {
        Some(DATA_ADVICE)
    }
}

/// The jit level's interpreter: records every call.
pub(crate) struct JitInterpreter {
    pub(crate) recorder: Arc<Recorder>,
}

impl Interpreter for JitInterpreter {
    fn name(&self) -> &'static str {
        "jit"
    }

    fn wants_output_metas(&self) -> bool {
        true
    }

    /// Random ops are recorded too (also `rand`, which has no tensor), so
    /// that the program shows them; their draws are pure functions of their
    /// seed, so a replay draws what eager execution would.
    fn claims_random(&self) -> bool {
        true
    }

    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>> {
        let metas = call.out_metas.ok_or_else(|| Error::NotImplemented {
            op: call.entry.name().to_string(),
            message: "jit: the op has no meta, so the shapes of its outputs are not known \
                      while tracing; call the function without `jit`"
                .to_string(),
        })?;
        self.recorder
            .record(Action::Op(call.entry), call.args, metas, call.level)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
