//! A traced program: the values and steps a trace recorded, the passes that
//! optimize it (constants folded, common subexpressions merged, dead steps
//! dropped), the plan that frees each value after its last use, the replay,
//! and the printed form [`Program`]'s `Display` gives.

use std::collections::HashMap;
use std::fmt;

use crate::core::value::{Arg, Outs, TensorMeta};
use crate::dispatch::{attribute, in_place_rules, run_dense_kernel, InPlace};
use crate::registry::OpEntry;
use crate::{DType, Error, Result, Tensor};

/// The index of a value in a program.
pub(crate) type ValueId = usize;

/// Where a value comes from.
#[derive(Clone, Debug)]
pub(crate) enum Def {
    /// A leaf of the inputs.
    Input,
    /// A dense tensor the function captured or computed without the inputs
    /// (also a folded step's output).
    Const(Tensor),
    /// An output of a step.
    Step,
}

/// One value: its shape and dtype, and where it comes from.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    pub(crate) meta: TensorMeta,
    pub(crate) def: Def,
}

/// A structural view a batching rule takes of a tensor without calling an op
/// (the methods of [`crate::LevelTensor`]); replayed with the same methods.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum View {
    Permute(Vec<usize>),
    Unsqueeze(usize),
    Select { dim: usize, index: usize },
    BroadcastNewDim { dim: usize, size: usize },
}

impl View {
    /// The view of `t` (dense).
    fn apply(&self, t: &Tensor) -> Result<Tensor> {
        match self {
            View::Permute(perm) => t.permuted(perm),
            View::Unsqueeze(dim) => t.unsqueezed(*dim),
            View::Select { dim, index } => t.select(*dim, *index),
            View::BroadcastNewDim { dim, size } => t.broadcast_new_dim(*dim, *size),
        }
    }

    /// The shape of the view of a tensor of shape `shape` (already checked by
    /// the `Tensor` method that recorded it).
    pub(crate) fn shape(&self, shape: &[usize]) -> Vec<usize> {
        let mut s = shape.to_vec();
        match self {
            View::Permute(perm) => s = perm.iter().map(|&d| shape[d]).collect(),
            View::Unsqueeze(dim) => s.insert(*dim, 1),
            View::Select { dim, .. } => {
                s.remove(*dim);
            }
            View::BroadcastNewDim { dim, size } => s.insert(*dim, *size),
        }
        s
    }
}

/// What a step does: an op's kernel, or a view.
#[derive(Clone, Debug)]
pub(crate) enum Action {
    Op(&'static OpEntry),
    View(View),
}

impl Action {
    /// The op's name, or the view's kind (`view.permute`).
    fn short_name(&self) -> &'static str {
        match self {
            Action::Op(e) => e.name(),
            Action::View(View::Permute(_)) => "view.permute",
            Action::View(View::Unsqueeze(_)) => "view.unsqueeze",
            Action::View(View::Select { .. }) => "view.select",
            Action::View(View::BroadcastNewDim { .. }) => "view.broadcast_new_dim",
        }
    }

    /// The short name, with a view's own arguments.
    fn name(&self) -> String {
        let short = self.short_name();
        match self {
            Action::Op(_) => short.to_string(),
            Action::View(View::Permute(p)) => format!("{short}{p:?}"),
            Action::View(View::Unsqueeze(d)) => format!("{short}({d})"),
            Action::View(View::Select { dim, index }) => format!("{short}({dim}, {index})"),
            Action::View(View::BroadcastNewDim { dim, size }) => format!("{short}({dim}, {size})"),
        }
    }

    /// Whether two actions are the same function of their arguments.
    fn key(&self) -> String {
        match self {
            Action::Op(e) => format!("op {:p}", *e),
            Action::View(v) => format!("view {v:?}"),
        }
    }
}

/// One recorded step: an action, its arguments (tensors as value ids) and
/// its output values.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) action: Action,
    pub(crate) args: Vec<Arg<ValueId>>,
    pub(crate) outs: Vec<ValueId>,
}

/// What a trace recorded, before the passes.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) values: Vec<Value>,
    pub(crate) steps: Vec<Step>,
    pub(crate) inputs: Vec<ValueId>,
}

impl Recording {
    /// A new value.
    pub(crate) fn value(&mut self, meta: TensorMeta, def: Def) -> ValueId {
        self.values.push(Value { meta, def });
        self.values.len() - 1
    }

    /// Records a step whose outputs have `metas`; returns their value ids.
    pub(crate) fn step(
        &mut self,
        action: Action,
        args: Vec<Arg<ValueId>>,
        metas: impl IntoIterator<Item = TensorMeta>,
    ) -> Vec<ValueId> {
        let outs: Vec<ValueId> = metas
            .into_iter()
            .map(|meta| self.value(meta, Def::Step))
            .collect();
        self.steps.push(Step {
            action,
            args,
            outs: outs.clone(),
        });
        outs
    }
}

/// What makes two steps equal: the same action on the same arguments
/// (floats compared by their bits, so that `-0.0` and `0.0`, or two NaNs,
/// are told apart).
fn step_key(step: &Step) -> String {
    let args: Vec<String> = step
        .args
        .iter()
        .map(|a| match a {
            Arg::Float(v) => format!("Float({:#x})", v.to_bits()),
            Arg::OptFloat(Some(v)) => format!("OptFloat({:#x})", v.to_bits()),
            other => format!("{other:?}"),
        })
        .collect();
    format!("{} {}", step.action.key(), args.join(" "))
}

/// How many recorded steps each pass removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassCounts {
    /// Steps the function's op calls and views recorded.
    pub recorded: usize,
    /// Steps whose arguments were all constants, computed once while planning.
    pub folded: usize,
    /// Steps equal to an earlier one (same action, same arguments), whose
    /// outputs were replaced by the earlier step's.
    pub merged: usize,
    /// Steps no output depends on (the loss value of `vmap(grad(loss))`, say).
    pub dead: usize,
    /// Kept steps planned to write their result over their first operand's
    /// buffer (a pointwise op on a value used for the last time there); a
    /// replay does so when nobody else holds that buffer.
    pub in_place: usize,
}

/// A traced and planned program: what [`Jit::call`](super::Jit::call) replays
/// and [`Jit::lower`](super::Jit::lower) returns.
///
/// Its `Display` lists the inputs, the constants, each step with its output's
/// dtype and shape and the values whose last use it is (their buffers go back
/// to the thread's cache there), and the outputs, as `jax.make_jaxpr` prints
/// a jaxpr. See [`jit`](super::jit) for an example.
#[derive(Clone, Debug)]
pub struct Program {
    values: Vec<Value>,
    inputs: Vec<ValueId>,
    consts: Vec<ValueId>,
    steps: Vec<Step>,
    /// Per step: the values whose last use it is.
    frees: Vec<Vec<ValueId>>,
    /// Per step: the op's in-place form, when the step may write its result
    /// over its first operand (see [`writes_in_place`]).
    in_place: Vec<Option<InPlace>>,
    outputs: Vec<ValueId>,
    passes: PassCounts,
}

impl Program {
    /// Optimizes `rec`, whose outputs are `outputs`: folds constant steps,
    /// merges equal steps, drops dead ones, and plans when each value is
    /// freed.
    pub(crate) fn plan(rec: Recording, outputs: Vec<ValueId>) -> Result<Program> {
        let Recording {
            mut values,
            steps,
            inputs,
        } = rec;
        let mut passes = PassCounts {
            recorded: steps.len(),
            ..PassCounts::default()
        };
        // Canonical value of each value (merged steps' outputs point to the
        // earlier step's).
        let mut canon: Vec<ValueId> = (0..values.len()).collect();
        let mut seen: HashMap<String, Vec<ValueId>> = HashMap::new();
        let mut kept: Vec<Step> = Vec::with_capacity(steps.len());
        for mut step in steps {
            for a in &mut step.args {
                *a = a.try_map(|&v| Ok(canon[v]))?;
            }
            // Folding: every tensor argument a constant (a random draw with
            // a fixed seed and no tensor is one too: draws are pure).
            let constant = |v: &ValueId| match &values[*v].def {
                Def::Const(t) => Ok(t.clone()),
                _ => Err(Error::Tensor(format!(
                    "jit: %{v} is not a constant (a bug)"
                ))),
            };
            let folds = step
                .args
                .iter()
                .flat_map(|a| a.tensors())
                .all(|&v| matches!(values[v].def, Def::Const(_)));
            if folds {
                let args = step
                    .args
                    .iter()
                    .map(|a| a.try_map(constant))
                    .collect::<Result<Vec<_>>>()?;
                let outs = run_action(&step.action, &args)?;
                check_outs(&values, &step, &outs)?;
                for (&v, t) in step.outs.iter().zip(outs) {
                    values[v].def = Def::Const(t);
                }
                passes.folded += 1;
                continue;
            }
            let key = step_key(&step);
            if let Some(earlier) = seen.get(&key) {
                for (&v, &e) in step.outs.iter().zip(earlier) {
                    canon[v] = e;
                }
                passes.merged += 1;
                continue;
            }
            seen.insert(key, step.outs.clone());
            kept.push(step);
        }
        let outputs: Vec<ValueId> = outputs.into_iter().map(|v| canon[v]).collect();

        // Dead steps: walk back from the outputs.
        let mut live = vec![false; values.len()];
        for &v in &outputs {
            live[v] = true;
        }
        let mut alive: Vec<Step> = Vec::with_capacity(kept.len());
        for step in kept.into_iter().rev() {
            if step.outs.iter().any(|&v| live[v]) {
                for a in &step.args {
                    for &v in a.tensors() {
                        live[v] = true;
                    }
                }
                alive.push(step);
            } else {
                passes.dead += 1;
            }
        }
        alive.reverse();

        // The last use of each value; outputs are never freed.
        let mut last: Vec<Option<usize>> = vec![None; values.len()];
        for (i, step) in alive.iter().enumerate() {
            for a in &step.args {
                for &v in a.tensors() {
                    last[v] = Some(i);
                }
            }
        }
        let mut frees = vec![Vec::new(); alive.len()];
        let mut is_output = vec![false; values.len()];
        for &v in &outputs {
            is_output[v] = true;
        }
        for (v, l) in last.iter().enumerate() {
            if let (Some(i), false) = (l, is_output[v]) {
                frees[*i].push(v);
            }
        }
        let consts = (0..values.len())
            .filter(|&v| live[v] && matches!(values[v].def, Def::Const(_)))
            .collect();
        let in_place = alive
            .iter()
            .zip(&frees)
            .map(|(step, frees)| writes_in_place(&values, step, frees))
            .collect::<Result<Vec<_>>>()?;
        passes.in_place = in_place.iter().filter(|w| w.is_some()).count();
        Ok(Program {
            values,
            inputs,
            consts,
            steps: alive,
            frees,
            in_place,
            outputs,
            passes,
        })
    }

    /// Runs the program on `inputs` (dense, of the traced shapes and dtypes,
    /// in the order of the flattened input tree).
    pub(crate) fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::Tensor(format!(
                "jit: the program takes {} input tensors, got {}",
                self.inputs.len(),
                inputs.len()
            )));
        }
        // Every kernel output buffer, small ones too, through this thread's
        // cache: a replay runs the same kernels on the same shapes as the
        // last one, so from the second replay on they come from there.
        let _keep = crate::core::buffers::KeepAll::new();
        let mut slots: Vec<Option<Tensor>> = vec![None; self.values.len()];
        for (&v, t) in self.inputs.iter().zip(inputs) {
            slots[v] = Some(t.clone());
        }
        for &v in &self.consts {
            if let Def::Const(t) = &self.values[v].def {
                slots[v] = Some(t.clone());
            }
        }
        for ((step, frees), in_place) in self.steps.iter().zip(&self.frees).zip(&self.in_place) {
            let outs = match (in_place, &step.action) {
                (Some(in_place), Action::Op(entry)) => {
                    run_in_place(entry, in_place, step, &mut slots)?
                }
                _ => {
                    let args = step
                        .args
                        .iter()
                        .map(|a| a.try_map(|&v| take_slot(&slots, v)))
                        .collect::<Result<Vec<_>>>()?;
                    run_action(&step.action, &args)?
                }
            };
            check_outs(&self.values, step, &outs)?;
            for (&v, t) in step.outs.iter().zip(outs) {
                slots[v] = Some(t);
            }
            for &v in frees {
                slots[v] = None;
            }
        }
        self.outputs.iter().map(|&v| take_slot(&slots, v)).collect()
    }

    /// How many steps each pass removed.
    pub fn passes(&self) -> PassCounts {
        self.passes
    }

    /// The number of steps a replay runs.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether a replay runs no step (the outputs are inputs or constants).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// How many times each op runs in a replay, by op name, most frequent
    /// first (views are named `view.permute` and so on).
    pub fn op_counts(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for step in &self.steps {
            let name = step.action.short_name();
            match counts.iter_mut().find(|(n, _)| n == name) {
                Some((_, c)) => *c += 1,
                None => counts.push((name.to_string(), 1)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts
    }

    /// The largest number of bytes the program's values hold at once during
    /// a replay (inputs and constants included), with each value freed after
    /// its last use.
    pub fn peak_bytes(&self) -> usize {
        let bytes = |v: ValueId| {
            let m = &self.values[v].meta;
            m.shape().iter().product::<usize>() * dtype_size(m.dtype())
        };
        let mut now: usize = self
            .inputs
            .iter()
            .chain(&self.consts)
            .map(|&v| bytes(v))
            .sum();
        let mut peak = now;
        for (step, frees) in self.steps.iter().zip(&self.frees) {
            now += step.outs.iter().map(|&v| bytes(v)).sum::<usize>();
            peak = peak.max(now);
            now -= frees.iter().map(|&v| bytes(v)).sum::<usize>();
        }
        peak
    }
}

fn dtype_size(d: DType) -> usize {
    match d {
        DType::F32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    }
}

fn take_slot(slots: &[Option<Tensor>], v: ValueId) -> Result<Tensor> {
    slots.get(v).cloned().flatten().ok_or_else(|| {
        Error::Tensor(format!(
            "jit: value %{v} is used before it is computed or after it is freed (a bug in the plan)"
        ))
    })
}

/// Whether `step` may write its result over its first operand, and how: the
/// op has an in-place form ([`in_place_rules`]), one output of the first
/// operand's shape and dtype, and the first operand is a value the program
/// computed (not an input or a constant, which the caller or the program
/// still holds), used for the last time here and by no other argument of
/// the step. A replay still checks, as owned calls do, that nobody else holds
/// the buffer (a view of the value may be alive) before it writes.
fn writes_in_place(values: &[Value], step: &Step, frees: &[ValueId]) -> Result<Option<InPlace>> {
    let Action::Op(entry) = step.action else {
        return Ok(None);
    };
    let (Some(Arg::Tensor(first)), [out]) = (step.args.first(), step.outs.as_slice()) else {
        return Ok(None);
    };
    let once = step.args[1..].iter().all(|a| !a.tensors().contains(first));
    let fits = matches!(values[*first].def, Def::Step)
        && frees.contains(first)
        && once
        && values[*first].meta == values[*out].meta;
    if !fits {
        return Ok(None);
    }
    in_place_rules::TABLE.get(entry)
}

/// A step planned to write in place: the first operand is moved out of its
/// slot, and the result written over its buffer when nobody else holds it
/// and it is in standard layout (the layout the kernel's own output has, so
/// that later steps see the same strides either way); otherwise the kernel
/// runs as usual. The same values either way, as owned calls guarantee.
fn run_in_place(
    entry: &'static OpEntry,
    in_place: &InPlace,
    step: &Step,
    slots: &mut [Option<Tensor>],
) -> Result<Outs<Tensor>> {
    let Some(Arg::Tensor(v)) = step.args.first() else {
        return Err(Error::Tensor(
            "jit: an in-place step has no tensor first (a bug in the plan)".to_string(),
        ));
    };
    let mut first = slots.get_mut(*v).and_then(Option::take).ok_or_else(|| {
        Error::Tensor(format!(
            "jit: value %{v} is used before it is computed or after it is freed (a bug in the plan)"
        ))
    })?;
    let rest = step.args[1..]
        .iter()
        .map(|a| a.try_map(|&v| take_slot(slots, v)))
        .collect::<Result<Vec<_>>>()?;
    if first.is_standard_layout()
        && fast_in_place(in_place, &first, &rest)
        && let Some(data) = first.unique_data_mut()
    {
        (in_place.write)(data, &rest).map_err(|e| attribute(e, entry.name()))?;
        return Ok(smallvec::smallvec![first]);
    }
    let args: Vec<Arg<Tensor>> = std::iter::once(Arg::Tensor(first)).chain(rest).collect();
    run_dense_kernel(entry, &args)
}

/// Whether writing in place is as fast as the kernel: a binary op's
/// in-place loop is a plain pass only for an operand of the same shape or a
/// row (a suffix of the shape) in standard layout, and runs on one thread,
/// where the out-of-place kernel has paths for other broadcasts and splits
/// large outputs across the pool; elsewhere the kernel runs.
fn fast_in_place(in_place: &InPlace, first: &Tensor, rest: &[Arg<Tensor>]) -> bool {
    if in_place.pointwise_unary() {
        return true;
    }
    let Some(Arg::Tensor(b)) = rest.first() else {
        return false;
    };
    let len: usize = first.shape().iter().product();
    #[cfg(feature = "rayon")]
    if crate::core::broadcast::parallel(len) {
        return false;
    }
    b.is_standard_layout()
        && first.shape().ends_with(b.shape())
        && b.shape().iter().product::<usize>() > 0
        && len > 0
}

/// Runs one step's action on dense arguments.
fn run_action(action: &Action, args: &[Arg<Tensor>]) -> Result<Outs<Tensor>> {
    match action {
        Action::Op(entry) => run_dense_kernel(entry, args),
        Action::View(view) => match args {
            [Arg::Tensor(t)] => Ok(smallvec::smallvec![view.apply(t)?]),
            _ => Err(Error::Tensor(
                "jit: a view step takes one tensor (a bug in the trace)".to_string(),
            )),
        },
    }
}

/// Checks that a step returned what the trace recorded: as many outputs,
/// of the recorded shapes and dtypes.
fn check_outs(values: &[Value], step: &Step, outs: &[Tensor]) -> Result<()> {
    let agrees = outs.len() == step.outs.len()
        && step.outs.iter().zip(outs).all(|(&v, t)| {
            let m = &values[v].meta;
            m.shape() == t.shape() && m.dtype() == t.dtype()
        });
    if agrees {
        return Ok(());
    }
    let got: Vec<String> = outs.iter().map(|t| show_meta(&TensorMeta::of(t))).collect();
    let want: Vec<String> = step
        .outs
        .iter()
        .map(|&v| show_meta(&values[v].meta))
        .collect();
    Err(Error::Tensor(format!(
        "jit: `{}` returned ({}) where its meta gave ({}): the op's meta and kernel disagree",
        step.action.name(),
        got.join(", "),
        want.join(", ")
    )))
}

fn show_meta(m: &TensorMeta) -> String {
    let dims: Vec<String> = m.shape().iter().map(usize::to_string).collect();
    format!("{}[{}]", m.dtype(), dims.join(","))
}

fn show_arg(a: &Arg<ValueId>) -> String {
    let id = |v: &ValueId| format!("%{v}");
    match a {
        Arg::Tensor(v) => id(v),
        Arg::OptTensor(Some(v)) => id(v),
        Arg::OptTensor(None) => "None".to_string(),
        Arg::TensorList(vs) => {
            let vs: Vec<String> = vs.iter().map(id).collect();
            format!("[{}]", vs.join(", "))
        }
        Arg::Int(v) => v.to_string(),
        Arg::OptInt(v) => v.map_or("None".to_string(), |v| v.to_string()),
        Arg::IntList(v) => format!("{v:?}"),
        Arg::OptIntList(v) => v.as_ref().map_or("None".to_string(), |v| format!("{v:?}")),
        Arg::Float(v) => format!("{v:?}"),
        Arg::OptFloat(v) => v.map_or("None".to_string(), |v| format!("{v:?}")),
        Arg::Bool(v) => v.to_string(),
        Arg::OptBool(v) => v.map_or("None".to_string(), |v| v.to_string()),
        Arg::ScalarType(v) => v.to_string(),
        Arg::OptScalarType(v) => v.map_or("None".to_string(), |v| v.to_string()),
        Arg::Reduction(v) => format!("{v:?}"),
        Arg::Str(v) => format!("{v:?}"),
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.passes;
        writeln!(
            f,
            "program: {} steps ({} recorded: {} folded, {} merged, {} dead; {} in place), peak {} bytes",
            self.steps.len(),
            p.recorded,
            p.folded,
            p.merged,
            p.dead,
            p.in_place,
            self.peak_bytes()
        )?;
        for (k, &v) in self.inputs.iter().enumerate() {
            writeln!(f, "  %{v}: {} = input {k}", show_meta(&self.values[v].meta))?;
        }
        for &v in &self.consts {
            writeln!(f, "  %{v}: {} = const", show_meta(&self.values[v].meta))?;
        }
        for ((step, frees), in_place) in self.steps.iter().zip(&self.frees).zip(&self.in_place) {
            let outs: Vec<String> = step
                .outs
                .iter()
                .map(|&v| format!("%{v}: {}", show_meta(&self.values[v].meta)))
                .collect();
            let args: Vec<String> = match &step.action {
                Action::Op(entry) => step
                    .args
                    .iter()
                    .zip(entry.schema.args.iter())
                    .enumerate()
                    .map(|(i, (a, s))| {
                        if i == 0 || a.tensors().len() == 1 && matches!(a, Arg::Tensor(_)) {
                            show_arg(a)
                        } else {
                            format!("{}={}", s.name, show_arg(a))
                        }
                    })
                    .collect(),
                Action::View(_) => step.args.iter().map(show_arg).collect(),
            };
            write!(
                f,
                "  {} = {}({})",
                outs.join(", "),
                step.action.name(),
                args.join(", ")
            )?;
            if in_place.is_some() {
                write!(f, "    ; in place of %{}", step.args[0].tensors()[0])?;
            }
            let frees: Vec<String> = frees
                .iter()
                .filter(|&&v| in_place.is_none() || step.args[0].tensors() != [v])
                .map(|v| format!("%{v}"))
                .collect();
            if !frees.is_empty() {
                write!(f, "    ; frees {}", frees.join(" "))?;
            }
            writeln!(f)?;
        }
        let outs: Vec<String> = self.outputs.iter().map(|v| format!("%{v}")).collect();
        write!(f, "  return ({})", outs.join(", "))
    }
}
