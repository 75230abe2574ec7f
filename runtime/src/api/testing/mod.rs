//! Helpers for kernel authors: check that an op (or any per-example function)
//! gives the same answer under `vmap` as in a loop over the examples, and fails
//! under `vmap` wherever it fails per example.
//!
//! ```
//! use batchrules::testing::{check_vmap, check_vmap_errors};
//! use batchrules::{ops, Tensor};
//!
//! let m = Tensor::from(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
//! // Every in_dims combination, batch sizes 1 and 3, and vmap nested two deep.
//! let cases = check_vmap(|x| Ok(vec![ops::triu(&x[0], 0)?]), &[m])?;
//! assert!(cases > 10);
//!
//! // A 1-d input is invalid per example, so it must be invalid under vmap too.
//! let v = Tensor::from(ndarray::array![1.0f64, 2.0].into_dyn());
//! check_vmap_errors(|x| Ok(vec![ops::triu(&x[0], 0)?]), &[v])?;
//! # Ok::<(), batchrules::testing::Mismatch>(())
//! ```
//!
//! In the `api` layer (`runtime/src/api/`). It may use the `core`, `table`,
//! `dispatch`, `transforms` and `library` layers. `tests/suite/layers.rs`
//! enforces it.

mod derivative;
mod grad;
mod jvp;

use std::fmt;

#[cfg(feature = "unit-tests")]
pub(crate) use derivative::probe;
pub use grad::{check_grad, check_grad_compositions, check_op_grad};
pub use jvp::{check_jacobians, check_jvp, check_jvp_compositions, check_op_jvp};

use crate::registry::OpEntry;
use crate::schema::OpTable;
use crate::vmap::VmapOutputs;
use crate::{vmap, Arg, Data, Error, Randomness, Result, Tensor};

/// The arguments of one call of an op, tensors and scalars alike; build them
/// with [`args!`](crate::args).
pub type Sample = Vec<Arg<Tensor>>;

/// Sample and error inputs of one op, declared next to the op with
/// [`op_samples!`](crate::op_samples) (the analogue of PyTorch's OpInfo).
/// The op library's exhaustive tests run every op on its samples under every
/// in_dims combination, and check that every error input also errors under vmap.
pub struct OpInfo {
    /// The op's table.
    pub table: &'static OpTable,
    /// The op name.
    pub op: &'static str,
    /// Valid inputs.
    pub samples: fn() -> Vec<Sample>,
    /// Inputs the op must reject (with or without vmap).
    pub errors: fn() -> Vec<Sample>,
}

inventory::collect!(OpInfo);

/// Sample and error inputs that several ops of one table share, declared
/// once with [`sample_set!`](crate::sample_set) under a name; an op takes
/// them with `samples = "<name>"` in its table entry (as every float
/// pointwise unary op of the built-in table takes `"float"`), so adding such
/// an op needs no inputs of its own.
pub struct SampleSet {
    /// The table whose ops may name the set.
    pub table: &'static OpTable,
    /// The set's name, as an op's `samples = "..."` writes it.
    pub name: &'static str,
    /// Valid inputs.
    pub samples: fn() -> Vec<Sample>,
    /// Inputs each op of the set must reject (with or without vmap).
    pub errors: fn() -> Vec<Sample>,
}

inventory::collect!(SampleSet);

/// The [`OpInfo`]s of the ops whose table entry names a sample set, each
/// with that set's inputs (built once; an op whose set is not linked into
/// the program gets none, which the suites that need every op's inputs
/// report).
fn set_infos() -> &'static [OpInfo] {
    static INFOS: std::sync::OnceLock<Vec<OpInfo>> = std::sync::OnceLock::new();
    INFOS.get_or_init(|| {
        let sets: Vec<&SampleSet> = inventory::iter::<SampleSet>.into_iter().collect();
        let mut infos = Vec::new();
        for table in inventory::iter::<crate::schema::TableRegistration> {
            let table = table.0;
            for op in table.ops {
                let set = op.samples.and_then(|name| {
                    sets.iter()
                        .find(|s| std::ptr::eq(s.table, table) && s.name == name)
                });
                if let Some(set) = set {
                    infos.push(OpInfo {
                        table,
                        op: op.name,
                        samples: set.samples,
                        errors: set.errors,
                    });
                }
            }
        }
        infos
    })
}

/// Every [`OpInfo`] linked into the program: those registered with
/// [`op_samples!`](crate::op_samples), then one for each op whose table entry
/// names a linked [`SampleSet`].
pub fn op_infos() -> impl Iterator<Item = &'static OpInfo> {
    inventory::iter::<OpInfo>
        .into_iter()
        .chain(set_infos().iter())
}

/// Every [`SampleSet`] linked into the program.
pub fn sample_sets() -> impl Iterator<Item = &'static SampleSet> {
    inventory::iter::<SampleSet>.into_iter()
}

/// Builds a [`Sample`]: each argument converted the way the typed op functions
/// take it (`&Tensor`, `i64`, `Option<i64>`, `&[i64]`, `f64`, `bool`, `DType`,
/// `&[Tensor]`, `Option<&Tensor>`).
///
/// ```
/// use batchrules::{args, Tensor};
/// let x = Tensor::scalar(1.0f64);
/// let sample = args![&x, 0i64, Some(-1i64)];
/// assert_eq!(sample.len(), 3);
/// ```
#[macro_export]
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        ::std::vec![$($crate::__private::IntoArg::into_arg($arg)),*]
    };
}

/// Declares the sample inputs and error inputs of an op, next to the op:
///
/// ```ignore
/// batchrules::op_samples!(op = "triu", samples = triu_samples, errors = triu_errors);
/// ```
///
/// `samples` and `errors` are `fn() -> Vec<Sample>`. Add `table = path` for an
/// op of another op table (the default is `batchrules::ops`).
#[macro_export]
macro_rules! op_samples {
    (op = $op:literal, samples = $samples:path, errors = $errors:path $(,)?) => {
        $crate::__private::inventory::submit! {
            $crate::testing::OpInfo {
                table: &$crate::ops::__TABLE,
                op: $op,
                samples: $samples,
                errors: $errors,
            }
        }
    };
    (table = $($table:ident)::+, op = $op:literal, samples = $samples:path, errors = $errors:path $(,)?) => {
        $crate::__private::inventory::submit! {
            $crate::testing::OpInfo {
                table: &$($table)::+::__TABLE,
                op: $op,
                samples: $samples,
                errors: $errors,
            }
        }
    };
}

/// Declares a [`SampleSet`]: sample and error inputs shared by the ops of a
/// table whose entries say `samples = "<name>"`:
///
/// ```
/// use batchrules::testing::{sample_sets, Sample};
/// use batchrules::{args, Tensor};
///
/// fn tiny_samples() -> Vec<Sample> {
///     vec![args![&Tensor::scalar(0.5f64)]]
/// }
/// fn tiny_errors() -> Vec<Sample> {
///     vec![args![&Tensor::scalar(true)]]
/// }
/// batchrules::sample_set!(name = "tiny", samples = tiny_samples, errors = tiny_errors);
///
/// let set = sample_sets().find(|s| s.name == "tiny").unwrap();
/// assert_eq!(set.table.path, "batchrules::ops");
/// assert_eq!((set.samples)().len(), 1);
/// ```
///
/// `samples` and `errors` are `fn() -> Vec<Sample>`. Add `table = path` for a
/// set of another op table (the default is `batchrules::ops`).
#[macro_export]
macro_rules! sample_set {
    (name = $name:literal, samples = $samples:path, errors = $errors:path $(,)?) => {
        $crate::__private::inventory::submit! {
            $crate::testing::SampleSet {
                table: &$crate::ops::__TABLE,
                name: $name,
                samples: $samples,
                errors: $errors,
            }
        }
    };
    (table = $($table:ident)::+, name = $name:literal, samples = $samples:path, errors = $errors:path $(,)?) => {
        $crate::__private::inventory::submit! {
            $crate::testing::SampleSet {
                table: &$($table)::+::__TABLE,
                name: $name,
                samples: $samples,
                errors: $errors,
            }
        }
    };
}

/// The tensors of `args`, in order (tensor lists flattened).
pub fn sample_tensors(args: &[Arg<Tensor>]) -> Vec<Tensor> {
    args.iter().flat_map(|a| a.tensors().to_vec()).collect()
}

/// `args` with its tensors replaced, in order, by `tensors`.
pub fn with_tensors(args: &[Arg<Tensor>], tensors: &[Tensor]) -> Result<Sample> {
    let mut it = tensors.iter();
    args.iter()
        .map(|a| {
            a.try_map(|_| {
                it.next()
                    .cloned()
                    .ok_or_else(|| Error::Tensor("too few tensors for the sample".to_string()))
            })
        })
        .collect()
}

/// The randomness policy the op checks run vmap with: a random op is
/// checked under [`Randomness::Same`], where vmap must equal the loop (each
/// example drawing with the seed as given); any other op under the default.
fn randomness_for(entry: &OpEntry) -> Randomness {
    if entry.schema.random {
        Randomness::Same
    } else {
        Randomness::Error
    }
}

/// [`check_vmap`] for one op called with one sample (a random op under
/// [`Randomness::Same`], see [`check_vmap_randomness`]).
pub fn check_op(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
) -> std::result::Result<usize, Mismatch> {
    check_one(entry, sample, |f, t, r| check_vmap_randomness(f, t, r))
}

/// [`check_vmap_errors`] for one op called with one error sample (a random
/// op under [`Randomness::Same`], so the error is the op's own).
pub fn check_op_errors(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
) -> std::result::Result<usize, Mismatch> {
    check_one(entry, sample, check_vmap_errors_impl)
}

/// The op `entry` as a function of `sample`'s tensors, run through `check`;
/// a mismatch's case names the op and the sample.
fn check_one(
    entry: &'static OpEntry,
    sample: &[Arg<Tensor>],
    check: impl FnOnce(
        &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
        &[Tensor],
        Randomness,
    ) -> std::result::Result<usize, Mismatch>,
) -> std::result::Result<usize, Mismatch> {
    let tensors = sample_tensors(sample);
    let op =
        |ts: &[Tensor]| Ok(crate::dispatch::call_op(entry, &with_tensors(sample, ts)?)?.into_vec());
    check(&op, &tensors, randomness_for(entry)).map_err(|m| Mismatch {
        case: format!("{} {}: {}", entry.name(), describe(sample), m.case),
        detail: m.detail,
    })
}

/// A short description of a sample: tensor shapes and dtypes, scalar values.
pub fn describe(sample: &[Arg<Tensor>]) -> String {
    let parts: Vec<String> = sample
        .iter()
        .map(|a| match a {
            Arg::Tensor(t) => format!("{}{:?}", t.dtype(), t.shape()),
            Arg::OptTensor(Some(t)) => format!("Some({}{:?})", t.dtype(), t.shape()),
            Arg::TensorList(ts) => format!(
                "[{}]",
                ts.iter()
                    .map(|t| format!("{}{:?}", t.dtype(), t.shape()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => format!("{other:?}").split_once('(').map_or_else(
                || format!("{other:?}"),
                |(_, v)| v.trim_end_matches(')').to_string(),
            ),
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// A disagreement between vmap and the per-example loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The case: in_dims, batch size, nesting.
    pub case: String,
    /// What differed.
    pub detail: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.case, self.detail)
    }
}

impl std::error::Error for Mismatch {}

/// The batch sizes every check runs with (an empty batch too).
pub const BATCH_SIZES: [usize; 3] = [0, 1, 3];

/// The most in_dims combinations (and, separately, nestings) one check runs.
/// Beyond it a deterministic selection is checked: every input batched at dim
/// 0, each input batched alone, and the rest spread over all combinations.
pub const MAX_COMBINATIONS: usize = 48;

/// Example `k` of a batch built from `sample`: floats are scaled and shifted,
/// integers and bools are rotated (their flat values shifted by `k` places), so
/// examples differ and a rule that mixes up examples is caught, while integer
/// inputs keep their values (they are often indices whose validity must be
/// preserved).
pub fn example(sample: &Tensor, k: usize) -> Result<Tensor> {
    let a = 1.0 + 0.25 * k as f64;
    let b = 0.125 * k as f64;
    match sample.data()? {
        Data::F32(x) => Ok(Tensor::from(x.mapv(|v| v * a as f32 + b as f32))),
        Data::F64(x) => Ok(Tensor::from(x.mapv(|v| v * a + b))),
        Data::I64(x) => rotated(x, k),
        Data::Bool(x) => rotated(x, k),
    }
}

/// `x` with its flat (row-major) values rotated left by `k` places.
fn rotated<T: crate::Element>(
    x: &ndarray::ArcArray<T, ndarray::IxDyn>,
    k: usize,
) -> Result<Tensor> {
    let values: Vec<T> = x.iter().copied().collect();
    let r = if values.is_empty() {
        0
    } else {
        k % values.len()
    };
    let turned = values[r..].iter().chain(&values[..r]).copied().collect();
    Tensor::from_shape_vec(x.shape(), turned)
}

/// Stacks tensors that are not batched at any vmap level (the helpers build
/// examples and expected results outside vmap).
fn stack_unbatched(ts: &[Tensor], dim: usize) -> Result<Tensor> {
    Tensor::stack_dense(ts, dim)
}

/// Stacks `size` examples of `sample` along a new dim `dim`.
fn batch_of(sample: &Tensor, size: usize, dim: usize) -> Result<Tensor> {
    if size == 0 {
        let mut shape = sample.shape().to_vec();
        shape.insert(dim.min(shape.len()), 0);
        return Tensor::empty(&shape, sample.dtype());
    }
    let examples = (0..size)
        .map(|k| example(sample, k))
        .collect::<Result<Vec<_>>>()?;
    stack_unbatched(&examples, dim)
}

/// Every way of picking one choice per input.
fn cartesian<T: Clone>(choices: &[Vec<T>]) -> Vec<Vec<T>> {
    choices.iter().fold(vec![Vec::new()], |combos, options| {
        combos
            .into_iter()
            .flat_map(|c| {
                options.iter().map(move |o| {
                    let mut c = c.clone();
                    c.push(o.clone());
                    c
                })
            })
            .collect()
    })
}

/// The in_dims combinations a check runs: each input unbatched or batched at
/// each position its batch dim can take (`0..=rank`); all of them up to
/// [`MAX_COMBINATIONS`], a deterministic selection beyond.
pub fn in_dims_combinations(inputs: &[Tensor]) -> Vec<Vec<Option<usize>>> {
    let choices: Vec<Vec<Option<usize>>> = inputs
        .iter()
        .map(|t| {
            std::iter::once(None)
                .chain((0..=t.ndim()).map(Some))
                .collect()
        })
        .collect();
    select_combinations(&choices, MAX_COMBINATIONS)
}

/// At most `budget` combinations of one choice per slot: all of them if there
/// are few enough; otherwise "choice 1 everywhere", "choice 1 in one slot and
/// choice 0 elsewhere" for each slot, then combinations spread evenly over the
/// rest, decoded from indices in mixed radix. Deterministic.
fn select_combinations<T: Clone>(choices: &[Vec<T>], budget: usize) -> Vec<Vec<T>> {
    let total = choices
        .iter()
        .try_fold(1usize, |acc, c| acc.checked_mul(c.len()));
    if total.is_some_and(|t| t <= budget) {
        return cartesian(choices);
    }
    if choices.iter().any(Vec::is_empty) {
        return Vec::new();
    }
    let pick = |digits: &[usize]| -> Vec<T> {
        choices
            .iter()
            .zip(digits)
            .map(|(c, &d)| c[d % c.len()].clone())
            .collect()
    };
    let n = choices.len();
    let mut picked: Vec<Vec<usize>> = vec![vec![1; n]];
    picked.extend((0..n).map(|i| (0..n).map(|j| usize::from(i == j)).collect()));
    // The rest: a fixed-seed linear congruential walk over the digits.
    let target = budget.max(n + 1);
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut attempts = 0;
    while picked.len() < target && attempts < target * 16 {
        attempts += 1;
        let digits = choices
            .iter()
            .map(|c| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 33) as usize) % c.len()
            })
            .collect::<Vec<_>>();
        if !picked.contains(&digits) {
            picked.push(digits);
        }
    }
    picked.iter().map(|d| pick(d)).collect()
}

/// The physical inputs of one case: each batched input replaced by `size`
/// examples stacked at its in_dim.
fn batched_inputs(inputs: &[Tensor], dims: &[Option<usize>], size: usize) -> Result<Vec<Tensor>> {
    inputs
        .iter()
        .zip(dims)
        .map(|(t, d)| match d {
            Some(d) => batch_of(t, size, *d),
            None => Ok(t.clone()),
        })
        .collect()
}

fn compare(case: &str, got: &[Tensor], want: &[Tensor]) -> std::result::Result<(), Mismatch> {
    let fail = |detail: String| Mismatch {
        case: case.to_string(),
        detail,
    };
    if got.len() != want.len() {
        return Err(fail(format!(
            "vmap returned {} outputs, the loop {}",
            got.len(),
            want.len()
        )));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.shape() != w.shape() || g.dtype() != w.dtype() {
            return Err(fail(format!(
                "output {i}: vmap gave a {} tensor of shape {:?}, the loop a {} tensor of shape {:?}",
                g.dtype(),
                g.shape(),
                w.dtype(),
                w.shape()
            )));
        }
        if let Some(detail) = values_differ(g, w).map_err(|e| fail(e.to_string()))? {
            return Err(fail(format!("output {i}: {detail}")));
        }
    }
    Ok(())
}

/// Compares values: integers and bools exactly, floats with a relative
/// tolerance, where NaN equals NaN and an infinity equals only the same
/// infinity.
fn values_differ(a: &Tensor, b: &Tensor) -> Result<Option<String>> {
    fn first_difference<T: Copy + fmt::Display>(
        x: &ndarray::ArcArray<T, ndarray::IxDyn>,
        y: &ndarray::ArcArray<T, ndarray::IxDyn>,
        same: impl Fn(T, T) -> bool,
    ) -> Option<String> {
        x.indexed_iter()
            .zip(y.iter())
            .find(|&((_, &p), &q)| !same(p, q))
            .map(|((idx, p), q)| {
                format!(
                    "at index {:?} vmap gave {p}, the loop {q}",
                    ndarray::Dimension::slice(&idx)
                )
            })
    }
    fn close(p: f64, q: f64, tol: f64) -> bool {
        if p.is_nan() || q.is_nan() {
            return p.is_nan() && q.is_nan();
        }
        if p.is_infinite() || q.is_infinite() {
            return p == q;
        }
        (p - q).abs() <= tol * (1.0 + q.abs())
    }
    Ok(match (a.data()?, b.data()?) {
        (Data::I64(x), Data::I64(y)) => first_difference(x, y, |p, q| p == q),
        (Data::Bool(x), Data::Bool(y)) => first_difference(x, y, |p, q| p == q),
        (Data::F32(x), Data::F32(y)) => {
            first_difference(x, y, |p, q| close(f64::from(p), f64::from(q), 1e-4))
        }
        (Data::F64(x), Data::F64(y)) => first_difference(x, y, |p, q| close(p, q, 1e-9)),
        (x, y) => Some(format!(
            "vmap gave {} values, the loop {}",
            x.dtype(),
            y.dtype()
        )),
    })
}

/// An empty batch of tensors like `t`: shape `[0, ...t's shape]`.
fn empty_batch_of(t: &Tensor) -> Result<Tensor> {
    let mut shape = vec![0];
    shape.extend_from_slice(t.shape());
    Tensor::empty(&shape, t.dtype())
}

fn stack_outputs(per_example: Vec<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    let n = per_example.first().map_or(0, Vec::len);
    if per_example.iter().any(|o| o.len() != n) {
        return Err(Error::Tensor(
            "the function returned a different number of outputs for different examples"
                .to_string(),
        ));
    }
    (0..n)
        .map(|j| {
            let col: Vec<Tensor> = per_example.iter().map(|o| o[j].clone()).collect();
            stack_unbatched(&col, 0)
        })
        .collect()
}

/// Checks `vmap(f)` against a loop over examples, for every in_dims combination
/// of `inputs` (see [`in_dims_combinations`]), each batch size in
/// [`BATCH_SIZES`], and for `vmap(vmap(f))` with every input batched at both
/// levels, at the outer level only, at the inner level only, or at neither.
///
/// `f` takes the inputs of one example and returns its outputs (a [`Tensor`],
/// a tuple of them, or a `Vec<Tensor>`); capture any non-tensor arguments in
/// the closure. Returns the number of cases checked.
///
/// ```
/// use batchrules::{ops, testing::check_vmap, Tensor};
///
/// let x = Tensor::from(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
/// let cases = check_vmap(|xs| ops::triu(&xs[0], 0), &[x]).expect("triu batches correctly");
/// assert!(cases > 0);
/// ```
pub fn check_vmap<F, O>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: VmapOutputs,
{
    check_vmap_randomness(f, inputs, Randomness::Error)
}

/// [`check_vmap`] with every vmap (the nested ones too) at the randomness
/// policy `randomness`. Under [`Randomness::Same`] a random function must
/// equal the loop, each of whose examples draws with the seeds as given.
///
/// ```
/// use batchrules::{ops, testing::check_vmap_randomness, DType, Randomness, Tensor};
///
/// let x = Tensor::from(ndarray::array![[1.0f64, 2.0], [3.0, 4.0]].into_dyn());
/// let noisy = |xs: &[Tensor]| ops::add(&xs[0], &ops::rand(&[2], 3, DType::F64)?);
/// assert!(check_vmap_randomness(noisy, &[x], Randomness::Same).is_ok());
/// ```
pub fn check_vmap_randomness<F, O>(
    f: F,
    inputs: &[Tensor],
    randomness: Randomness,
) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: VmapOutputs,
{
    let f = |xs: &[Tensor]| f(xs).map(|o| o.into_outputs().into_vec());
    let err = |case: &str, e: Error| Mismatch {
        case: case.to_string(),
        detail: e.to_string(),
    };
    f(inputs).map_err(|e| err("unbatched call", e))?;
    let mut cases = 0;
    for dims in in_dims_combinations(inputs) {
        for &size in &BATCH_SIZES {
            let case = format!("in_dims {dims:?}, batch size {size}");
            let batched = batched_inputs(inputs, &dims, size).map_err(|e| err(&case, e))?;
            let example_inputs = |k: usize| {
                inputs
                    .iter()
                    .zip(&dims)
                    .map(|(t, d)| match d {
                        Some(_) => example(t, k),
                        None => Ok(t.clone()),
                    })
                    .collect::<Result<Vec<_>>>()
            };
            let want = if size == 0 {
                // No examples: the outputs are empty, with the shapes one
                // example's outputs have.
                example_inputs(0)
                    .and_then(|ex| f(&ex))
                    .and_then(|outs| outs.iter().map(empty_batch_of).collect())
            } else {
                (0..size)
                    .map(|k| f(&example_inputs(k)?))
                    .collect::<Result<Vec<_>>>()
                    .and_then(stack_outputs)
            }
            .map_err(|e| err(&format!("{case} (loop)"), e))?;
            let got = vmap(|xs: Vec<Tensor>| f(&xs))
                .in_dims(dims.clone())
                .batch_size(size)
                .randomness(randomness)
                .call(batched)
                .map_err(|e| err(&case, e))?;
            compare(&case, &got, &want)?;
            cases += 1;
        }
    }
    cases += check_nested(&f, inputs, randomness)?;
    Ok(cases)
}

/// Which levels an input is batched at in the nested check.
const NESTINGS: [(bool, bool); 4] = [(true, true), (true, false), (false, true), (false, false)];

fn check_nested<F>(
    f: &F,
    inputs: &[Tensor],
    randomness: Randomness,
) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let (outer, inner) = (2usize, 3usize);
    let combos = select_combinations(&vec![NESTINGS.to_vec(); inputs.len()], MAX_COMBINATIONS);
    let mut cases = 0;
    for combo in combos {
        let case = format!("nested vmap, (outer, inner) batched per input {combo:?}");
        let err = |e: Error| Mismatch {
            case: case.clone(),
            detail: e.to_string(),
        };
        // Example (i, j) of input t: example(t, 3 * i + j) restricted to the
        // levels it is batched at.
        let pick = |t: &Tensor, (o, n): (bool, bool), i: usize, j: usize| {
            example(t, usize::from(o) * inner * i + usize::from(n) * j)
        };
        let physical = inputs
            .iter()
            .zip(&combo)
            .map(|(t, &(o, n))| {
                let rows = (0..if o { outer } else { 1 })
                    .map(|i| {
                        let cols = (0..if n { inner } else { 1 })
                            .map(|j| pick(t, (o, n), i, j))
                            .collect::<Result<Vec<_>>>()?;
                        if n {
                            stack_unbatched(&cols, 0)
                        } else {
                            Ok(cols[0].clone())
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                if o {
                    stack_unbatched(&rows, 0)
                } else {
                    Ok(rows[0].clone())
                }
            })
            .collect::<Result<Vec<_>>>()
            .map_err(err)?;
        let want = (0..outer)
            .map(|i| {
                let per_j = (0..inner)
                    .map(|j| {
                        let ex = inputs
                            .iter()
                            .zip(&combo)
                            .map(|(t, &n)| pick(t, n, i, j))
                            .collect::<Result<Vec<_>>>()?;
                        f(&ex)
                    })
                    .collect::<Result<Vec<_>>>()?;
                stack_outputs(per_j)
            })
            .collect::<Result<Vec<_>>>()
            .and_then(stack_outputs)
            .map_err(err)?;
        let outer_dims: Vec<Option<usize>> = combo.iter().map(|&(o, _)| o.then_some(0)).collect();
        let inner_dims: Vec<Option<usize>> = combo.iter().map(|&(_, n)| n.then_some(0)).collect();
        let got = vmap(|xs: Vec<Tensor>| {
            vmap(|ys: Vec<Tensor>| f(&ys))
                .in_dims(inner_dims.clone())
                .batch_size(inner)
                .randomness(randomness)
                .call(xs)
        })
        .in_dims(outer_dims)
        .batch_size(outer)
        .randomness(randomness)
        .call(physical)
        .map_err(err)?;
        compare(&case, &got, &want)?;
        cases += 1;
    }
    Ok(cases)
}

/// Checks that `f` fails on `inputs` unbatched, and that `vmap(f)` fails the
/// same way for every in_dims combination with at least one input batched, at
/// every non-empty batch size in [`BATCH_SIZES`]: no op may accept under vmap
/// what is invalid per example. "The same way" means an error naming the same
/// op first, with the same kind of innermost error: a [`Error::RuleBug`], a
/// fallback refusal or an escaped-tensor error is not the error the example
/// gives, so it does not count. Returns the number of cases checked.
pub fn check_vmap_errors<F, O>(f: F, inputs: &[Tensor]) -> std::result::Result<usize, Mismatch>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: VmapOutputs,
{
    let f = |xs: &[Tensor]| f(xs).map(|o| o.into_outputs().into_vec());
    check_vmap_errors_impl(&f, inputs, Randomness::Error)
}

/// [`check_vmap_errors`] of `f` under `randomness`.
fn check_vmap_errors_impl(
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    randomness: Randomness,
) -> std::result::Result<usize, Mismatch> {
    let expected = match f(inputs) {
        Ok(outs) => {
            return Err(Mismatch {
                case: "unbatched call".to_string(),
                detail: format!(
                    "expected an error, got outputs of shapes {:?}",
                    outs.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>()
                ),
            })
        }
        Err(e) => e,
    };
    let mut cases = 0;
    for dims in in_dims_combinations(inputs) {
        if dims.iter().all(Option::is_none) {
            continue;
        }
        // An empty batch has no example to fail.
        for &size in BATCH_SIZES.iter().filter(|&&s| s > 0) {
            let case = format!("in_dims {dims:?}, batch size {size}");
            let batched = batched_inputs(inputs, &dims, size).map_err(|e| Mismatch {
                case: case.clone(),
                detail: e.to_string(),
            })?;
            let got = vmap(|xs: Vec<Tensor>| f(&xs))
                .in_dims(dims.clone())
                .randomness(randomness)
                .call(batched);
            match got {
                Ok(outs) => {
                    return Err(Mismatch {
                        case,
                        detail: format!(
                            "vmap accepted an input that is invalid per example, returning shapes {:?}",
                            outs.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>()
                        ),
                    })
                }
                Err(e) if !same_failure(&e, &expected) => {
                    return Err(Mismatch {
                        case,
                        detail: format!(
                            "vmap failed with a different error than the example: `{e}`; the example gives `{expected}`"
                        ),
                    })
                }
                Err(_) => {}
            }
            cases += 1;
        }
    }
    Ok(cases)
}

/// Whether `got` (under vmap) is the failure `want` (per example): the same
/// op named first, and the same kind of innermost error, which is not a rule
/// bug or a fallback refusal. (The innermost op may differ: a rule may find
/// the problem through another op, e.g. `index_select`'s rule through
/// `gather`.)
fn same_failure(got: &Error, want: &Error) -> bool {
    let (g, w) = (got.root(), want.root());
    got.op() == want.op()
        && std::mem::discriminant(g) == std::mem::discriminant(w)
        && !matches!(
            g,
            Error::RuleBug { .. } | Error::Fallback { .. } | Error::Randomness { .. }
        )
}
