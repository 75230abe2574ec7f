//! vmap's interpreter: an op call at a vmap level runs the op's batching rule,
//! its decomposition, or the fallback loop. The dispatcher has already run the
//! op's meta on the logical shapes. The interpreter's state (one level's) is
//! in `level`.

use std::sync::Arc;

use crate::core::value::{Arg, BDim, BatchedOutput, Outs, TensorMeta};
use crate::dispatch::{Call, InPlace, Interpreter};
use crate::registry::OpEntry;
use crate::vmap::rules::{batching_rules, BatchingRuleFn, VmapStrategy};
use crate::{Error, LevelId, Result, Tensor};

use super::batched::Batched;
use super::fallback::{self, Seeds};
use super::level::VmapInterpreter;
use super::randomness;

impl Interpreter for VmapInterpreter {
    fn name(&self) -> &'static str {
        "vmap"
    }

    /// The output metas serve the rule self-check (debug builds) and the
    /// fallback on an empty batch.
    fn wants_output_metas(&self) -> bool {
        cfg!(debug_assertions) || self.size() == 0
    }

    /// A random op reaches every vmap level, batched there or not, so that
    /// the level's [`Randomness`](super::Randomness) policy applies to it.
    fn claims_random(&self) -> bool {
        true
    }

    /// A composite reaches vmap's interpreter: its table may ask for it to be
    /// looped instead of decomposed (see [`VmapStrategy`]).
    fn decomposes_composites(&self) -> bool {
        false
    }

    fn process(&self, call: Call<'_>) -> Result<Outs<Tensor>> {
        let Call {
            entry,
            args,
            level,
            out_metas,
        } = call;
        if entry.schema.random {
            return randomness::process(self, entry, args, level, out_metas);
        }
        let rule = batching_rules::TABLE.get(entry)?;
        let strategy = VmapStrategy::of(entry, rule.is_some());
        #[cfg(feature = "bench-internals")]
        let strategy =
            if crate::dispatch::bench::FORCE_FALLBACK.load(std::sync::atomic::Ordering::Relaxed) {
                VmapStrategy::Fallback
            } else {
                strategy
            };
        match (strategy, rule) {
            (VmapStrategy::BatchingRule, Some(rule)) => {
                self.run_rule(entry, rule, args, level, out_metas)
            }
            (VmapStrategy::Decomposition, _) => crate::dispatch::decompose(entry, args),
            // An op without tensor arguments never has batched ones, so it
            // never reaches here; treat it like the fallback if it does.
            _ => fallback::run(
                entry,
                args,
                level,
                self.size(),
                self.fallback_policy(),
                out_metas,
                Seeds::AsGiven,
            ),
        }
    }

    /// A pointwise unary op on a batched tensor nobody else holds: the
    /// physical tensor is taken out of it and the op called on it by value
    /// (what its batching rule does, by reference), so the buffer can be
    /// written in place at the level below; the result keeps the batch dim.
    fn process_owned(
        &self,
        entry: &'static OpEntry,
        mut args: Vec<Arg<Tensor>>,
        level: LevelId,
        out_metas: Option<&[TensorMeta]>,
        in_place: &InPlace,
    ) -> Result<Outs<Tensor>> {
        let by_rule = matches!(
            VmapStrategy::of(entry, batching_rules::TABLE.get(entry)?.is_some()),
            VmapStrategy::BatchingRule
        );
        #[cfg(feature = "bench-internals")]
        let by_rule = by_rule
            && !crate::dispatch::bench::FORCE_FALLBACK.load(std::sync::atomic::Ordering::Relaxed);
        let fits = match args.as_slice() {
            [Arg::Tensor(_)] => in_place.pointwise_unary(),
            [Arg::Tensor(_), Arg::Tensor(_)] => in_place.broadcasting_binary(),
            _ => false,
        };
        if fits && by_rule && !entry.schema.random {
            let Arg::Tensor(first) = args.remove(0) else {
                unreachable!("the first argument is a tensor (matched above)");
            };
            let first = match first.into_unique_level::<Batched>() {
                Ok(b) => {
                    if let Some(rest) = physical_rest(&b, &args, level) {
                        let bdim = b.bdim;
                        let mut physical = Vec::with_capacity(1 + rest.len());
                        physical.push(Arg::Tensor(b.inner));
                        physical.extend(rest);
                        let outs = crate::dispatch::call_owned(entry, physical, in_place)?;
                        let out = crate::dispatch::one_output(entry.name(), outs)?;
                        return Ok(smallvec::smallvec![Batched::wrap(out, bdim, level)?]);
                    }
                    Tensor::from_level(Arc::new(b))
                }
                Err(t) => t,
            };
            // Not taken by value: the first argument goes back as it came.
            args.insert(0, Arg::Tensor(first));
        }
        self.process(Call {
            entry,
            args: &args,
            level,
            out_metas,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The arguments after the first, unwrapped at `level`, when `first` is
/// batched at `level` and the op can run on the physical tensors as they
/// are: for a unary op, none; for a broadcasting binary op, the second
/// operand's physical tensor when its broadcast against `first`'s physical
/// tensor, dim by dim from the right, is the logical one with the batch dim
/// in front: `first` batched on dim 0 and the second either batched on dim 0
/// with the same physical rank, or not batched at this level and of at most
/// `first`'s logical rank. `None` otherwise (the call then goes through the
/// batching rule).
fn physical_rest(
    first: &Batched,
    rest: &[Arg<Tensor>],
    level: LevelId,
) -> Option<Vec<Arg<Tensor>>> {
    if first.level != level {
        return None;
    }
    match rest {
        [] => Some(Vec::new()),
        [Arg::Tensor(second)] if first.bdim == 0 => {
            let rank = first.inner.ndim();
            let (p, bdim) = Batched::unwrap(second, level);
            let lines_up = match bdim {
                Some(0) => p.ndim() == rank,
                Some(_) => false,
                None => p.ndim() < rank,
            };
            lines_up.then(|| vec![Arg::Tensor(p)])
        }
        _ => None,
    }
}

impl VmapInterpreter {
    /// Unwraps the arguments at `level`, calls the rule, and wraps its outputs.
    ///
    /// The dispatcher only sends a call here when at least one tensor argument
    /// is batched at `level`, so a rule always sees at least one batch dim.
    fn run_rule(
        &self,
        entry: &OpEntry,
        rule: BatchingRuleFn,
        args: &[Arg<Tensor>],
        level: LevelId,
        metas: Option<&[TensorMeta]>,
    ) -> Result<Outs<Tensor>> {
        let (values, bdims): (smallvec::SmallVec<[_; 4]>, smallvec::SmallVec<[BDim; 4]>) =
            crate::dispatch::lower(args, |t| Batched::unwrap(t, level))
                .map(|(v, slot)| (v, slot.into()))
                .unzip();
        let outs = rule(&values, &bdims)?;
        // The structural checks are cheap and run in every build; the
        // comparison with the meta runs in debug builds.
        self.check_rule_output(entry, &outs, level)?;
        if cfg!(debug_assertions)
            && let Some(metas) = metas
        {
            self.check_rule_against_meta(entry, &outs, metas)?;
        }
        outs.into_iter()
            .map(|(t, b)| match b {
                Some(b) => Batched::wrap(t, b, level),
                None => Ok(t),
            })
            .collect()
    }

    fn rule_bug(entry: &OpEntry, message: String) -> Error {
        Error::RuleBug {
            op: entry.name().to_string(),
            rule: batching_rules::TABLE.describe(entry, "batching rule"),
            message,
        }
    }

    /// One output per schema output, none still batched at the rule's own
    /// level, each batch dim a dim of its tensor with the batch size.
    fn check_rule_output(
        &self,
        entry: &OpEntry,
        outs: &[BatchedOutput],
        level: LevelId,
    ) -> Result<()> {
        let bug = |m| Self::rule_bug(entry, m);
        let fixed_arity = !entry
            .schema
            .returns
            .contains(&crate::schema::ArgType::TensorList);
        if fixed_arity && outs.len() != entry.schema.returns.len() {
            return Err(bug(format!(
                "it returned {} outputs, the op schema `{}` has {}",
                outs.len(),
                entry.schema.schema,
                entry.schema.returns.len()
            )));
        }
        for (i, (t, b)) in outs.iter().enumerate() {
            if Batched::at(t, level).is_some() {
                return Err(bug(format!(
                    "output {i} is still batched at the rule's own level; return the physical tensor and its batch dim"
                )));
            }
            if let Some(b) = *b {
                let shape = t.shape();
                if b >= shape.len() || shape[b] != self.size() {
                    return Err(bug(format!(
                        "output {i} has shape {shape:?} with batch dim {b}, which is not a dim of size {} (the batch size)",
                        self.size()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The rule self-check: each output, with its batch dim removed, must match
    /// the meta's logical output.
    fn check_rule_against_meta(
        &self,
        entry: &OpEntry,
        outs: &[BatchedOutput],
        metas: &[TensorMeta],
    ) -> Result<()> {
        let bug = |m| Self::rule_bug(entry, m);
        if outs.len() != metas.len() {
            return Err(bug(format!(
                "it returned {} outputs, the meta says {}",
                outs.len(),
                metas.len()
            )));
        }
        for (i, ((t, b), meta)) in outs.iter().zip(metas).enumerate() {
            let mut logical = t.shape().to_vec();
            if let Some(b) = *b {
                logical.remove(b);
            }
            if logical != meta.shape() || t.dtype() != meta.dtype() {
                return Err(bug(format!(
                    "output {i} has logical shape {logical:?} and dtype {}, but the meta computes shape {:?} and dtype {}",
                    t.dtype(),
                    meta.shape(),
                    meta.dtype()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::Batched;
    use crate::{ops, owned, vmap, Data, Result, Tensor};
    use std::cell::RefCell;

    /// The address of the first element of a batched tensor's physical buffer.
    fn physical_ptr(t: &Tensor) -> usize {
        let b = t.downcast_level::<Batched>().expect("batched");
        match b.inner.data().expect("dense") {
            Data::F32(a) => a.as_ptr() as usize,
            other => panic!("expected f32, got {}", other.dtype()),
        }
    }

    pub(crate) fn owned_unary_ops_write_into_the_physical_buffer_of_a_batched_temporary() {
        let x = Tensor::from_shape_vec(
            &[4, 300],
            (0..1200).map(|i| i as f32 * 0.01 - 6.0).collect(),
        )
        .unwrap();
        let ptrs = RefCell::new(Vec::new());
        let y = vmap(|x: Tensor| -> Result<Tensor> {
            // `x` wraps the caller's tensor, which the caller still holds.
            let before = physical_ptr(&x);
            let e = owned::exp(x)?;
            let r = owned::tanh(e.clone())?; // `e` is still held: a new buffer
            let e_at = physical_ptr(&e);
            drop(e);
            let s = owned::relu(r.clone())?; // held again
            let r_at = physical_ptr(&r);
            drop(r);
            let s_at = physical_ptr(&s);
            // Nobody else holds `s`. (One op: a new buffer would be taken
            // while `s` is alive, so it could not have `s`'s address.)
            let t = owned::neg(s)?;
            ptrs.borrow_mut()
                .extend([before, e_at, r_at, s_at, physical_ptr(&t)]);
            Ok(t)
        })
        .call(&x)
        .unwrap();
        let p = ptrs.into_inner();
        assert_ne!(p[0], p[1], "the caller's buffer is not written");
        assert_ne!(p[1], p[2], "a held temporary is not written");
        assert_ne!(p[2], p[3], "a held temporary is not written");
        assert_eq!(p[3], p[4], "a temporary nobody holds is written in place");
        let want =
            ops::neg(&ops::relu(&ops::tanh(&ops::exp(&x).unwrap()).unwrap()).unwrap()).unwrap();
        assert_eq!(
            y.to_array::<f32>().unwrap(),
            want.to_array::<f32>().unwrap()
        );
    }

    pub(crate) fn owned_binary_ops_write_into_the_physical_buffer_when_the_batch_dims_line_up() {
        let x =
            Tensor::from_shape_vec(&[4, 3, 5], (0..60).map(|i| i as f32 * 0.1).collect()).unwrap();
        let bias = Tensor::from_shape_vec(&[5], vec![1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let scale =
            Tensor::from_shape_vec(&[4, 3, 5], (0..60).map(|i| i as f32).collect()).unwrap();
        let ptrs = RefCell::new(Vec::new());
        let y = vmap(|(x, s): (Tensor, Tensor)| -> Result<Tensor> {
            let h = owned::exp(x)?; // a temporary nobody else holds
            let h_at = physical_ptr(&h);
            let h = owned::add(h, &bias)?; // not batched, lower rank
            let after_bias = physical_ptr(&h);
            let h = owned::mul(h, &s)?; // batched on dim 0, same rank
            let after_scale = physical_ptr(&h);
            // Nobody else holds `h`, but the result is [3, 3, 5] per example:
            // a new buffer (taken while `h` is alive, so at another address).
            let wide = Tensor::from_shape_vec(&[3, 1, 1], vec![1.0f32, 2.0, 3.0])?;
            let w = owned::sub(h, &wide)?;
            let w_at = physical_ptr(&w);
            ptrs.borrow_mut()
                .extend([h_at, after_bias, after_scale, w_at]);
            ops::sum(&w, Some(0), false)
        })
        .call((&x, &scale))
        .unwrap();
        let p = ptrs.into_inner();
        assert_eq!(p[0], p[1], "an unbatched operand of lower rank: in place");
        assert_eq!(p[1], p[2], "a batched operand on dim 0: in place");
        assert_ne!(p[2], p[3], "a result of another shape: a new buffer");
        let h = ops::mul(&ops::add(&ops::exp(&x).unwrap(), &bias).unwrap(), &scale).unwrap();
        let wide = Tensor::from_shape_vec(&[3, 1, 1, 1], vec![1.0f32, 2.0, 3.0]).unwrap();
        let want = ops::sum(
            &ops::sub(&ops::unsqueeze(&h, 0).unwrap(), &wide).unwrap(),
            Some(0),
            false,
        )
        .unwrap();
        assert_eq!(
            y.to_array::<f32>().unwrap(),
            want.to_array::<f32>().unwrap()
        );
    }

    crate::core::unit_test::test_list! {
        owned_unary_ops_write_into_the_physical_buffer_of_a_batched_temporary,
        owned_binary_ops_write_into_the_physical_buffer_when_the_batch_dims_line_up,
    }
}
