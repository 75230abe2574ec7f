//! The public API of reverse-mode differentiation: [`vjp`], [`grad`],
//! [`value_and_grad`], and the pullback [`VjpFn`].

use std::marker::PhantomData;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use crate::dispatch::{escaped, push_level, Interpreter};
use crate::transform_fn::{self as name, OneArgument, TransformFn, TransformFnOnce};
use crate::{Error, LevelId, Result, Tensor, TensorTree};

use super::args::{argnums_methods, selected_ranges, Argnum, Argnums, GradArgs, Selected};
use super::graph::{backward, Node, NodeRef};
use super::interpreter::GradInterpreter;
use super::tracked::Tracked;
use crate::ops::usize_args;

/// What a differentiated function returns: a [`Tensor`], or `(Tensor, aux)`
/// where `aux` is any tree of tensors carried along without being
/// differentiated (JAX's `has_aux`).
pub trait GradOutput {
    /// The auxiliary data (`()` for a plain tensor).
    type Aux;
    /// `grad`'s result: the gradient, or `(gradient, aux)`.
    type WithGrad<G>;
    /// `value_and_grad`'s result: `(value, gradient)`, or `((value, aux), gradient)`.
    type WithValue<G>;
    #[doc(hidden)]
    fn split(self) -> (Tensor, Self::Aux);
    #[doc(hidden)]
    fn unwrap_aux(aux: Self::Aux, level: LevelId) -> Result<Self::Aux>;
    #[doc(hidden)]
    fn with_grad<G>(grad: G, aux: Self::Aux) -> Self::WithGrad<G>;
    #[doc(hidden)]
    fn with_value<G>(value: Tensor, grad: G, aux: Self::Aux) -> Self::WithValue<G>;
}

impl GradOutput for Tensor {
    type Aux = ();
    type WithGrad<G> = G;
    type WithValue<G> = (Tensor, G);
    fn split(self) -> (Tensor, ()) {
        (self, ())
    }
    fn unwrap_aux(_: (), _: LevelId) -> Result<()> {
        Ok(())
    }
    fn with_grad<G>(grad: G, _: ()) -> G {
        grad
    }
    fn with_value<G>(value: Tensor, grad: G, _: ()) -> (Tensor, G) {
        (value, grad)
    }
}

impl<X: TensorTree> GradOutput for (Tensor, X) {
    type Aux = X;
    type WithGrad<G> = (G, X);
    type WithValue<G> = ((Tensor, X), G);
    fn split(self) -> (Tensor, X) {
        self
    }
    fn unwrap_aux(aux: X, level: LevelId) -> Result<X> {
        aux.map_leaves(&mut |t| primal(t, level).map(|(t, _)| t))
    }
    fn with_grad<G>(grad: G, aux: X) -> (G, X) {
        (grad, aux)
    }
    fn with_value<G>(value: Tensor, grad: G, aux: X) -> ((Tensor, X), G) {
        ((value, aux), grad)
    }
}

thread_local! {
    static INTERPRETER: Rc<GradInterpreter> = Rc::new(GradInterpreter);
}

/// The pullback of one differentiated call, before its leaves are put back
/// into a structure: one root per output leaf (`None`: the output does not
/// depend on the inputs), and the logical shape and dtype of each input leaf
/// and output leaf.
pub(super) struct Pullback {
    roots: Vec<Option<NodeRef>>,
    outputs: Vec<(Vec<usize>, crate::DType)>,
    /// Each input leaf of the differentiated range: shape, dtype, and its
    /// index among the tracked leaves (`None`: not tracked, zero gradient).
    inputs: Vec<(Vec<usize>, crate::DType, Option<usize>)>,
    tracked: usize,
}

impl Pullback {
    /// The `Debug` output of a function value holding this pullback: its
    /// inputs' and outputs' shapes and dtypes.
    fn debug_as(&self, name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }

    pub(super) fn call(&self, what: &str, cotangents: &[Tensor]) -> Result<Vec<Tensor>> {
        if cotangents.len() != self.outputs.len() {
            return Err(Error::Tensor(format!(
                "{what}: got {} cotangents for {} outputs; give one per output, of the output's shape and dtype",
                cotangents.len(),
                self.outputs.len()
            )));
        }
        let mut roots = Vec::new();
        for (i, ((ct, (shape, dtype)), root)) in cotangents
            .iter()
            .zip(&self.outputs)
            .zip(&self.roots)
            .enumerate()
        {
            if ct.shape() != shape.as_slice() || ct.dtype() != *dtype {
                return Err(Error::Tensor(format!(
                    "{what}: cotangent {i} has shape {:?} and dtype {}, but output {i} has shape {shape:?} and dtype {dtype}",
                    ct.shape(),
                    ct.dtype()
                )));
            }
            if let Some(root) = root {
                roots.push((root.clone(), ct.clone()));
            }
        }
        let mut grads = backward(&roots, self.tracked)?;
        self.inputs
            .iter()
            .map(|(shape, dtype, k)| match k.and_then(|k| grads[k].take()) {
                Some(g) => Ok(g),
                None => usize_args::zeros(shape, *dtype),
            })
            .collect()
    }
}

/// Splits a result of the function into its value one level down and its
/// node at `level`.
pub(super) fn primal(t: &Tensor, level: LevelId) -> Result<(Tensor, Option<NodeRef>)> {
    if let Some(tr) = Tracked::at(t, level) {
        return Ok((tr.inner.clone(), Some(tr.node.clone())));
    }
    match t.level() {
        Some(l) if l.depth() >= level.depth() => Err(escaped(t)),
        _ => Ok((t.clone(), None)),
    }
}

/// Runs `f` at a new grad level with the leaves of `inner` in `ranges`
/// tracked, and returns its result (one level down) with the pullback, whose
/// inputs are those leaves in the order of `ranges`. Integer and bool leaves
/// in `ranges` are an error if `require_float`, and otherwise left untracked
/// (zero gradient).
pub(super) fn trace<A: TensorTree, R, T>(
    what: &str,
    f: impl FnOnce(A) -> Result<R>,
    inner: &A,
    ranges: &[Range<usize>],
    require_float: bool,
    outputs_of: impl FnOnce(R, LevelId) -> Result<(Vec<Tensor>, Vec<Option<NodeRef>>, T)>,
) -> Result<(T, Pullback)> {
    let guard = push_level(what, |_| {
        INTERPRETER.with(|i| Rc::clone(i) as Rc<dyn Interpreter>)
    })?;
    let level = guard.id();
    let mut index = 0usize;
    let mut inputs = vec![None; ranges.iter().map(|r| r.len()).sum()];
    let mut tracked = 0usize;
    let wrapped = inner.map_leaves(&mut |t| {
        let i = index;
        index += 1;
        let Some(slot) = position(ranges, i) else {
            return Ok(t.clone());
        };
        if !t.dtype().is_float() {
            if require_float {
                return Err(Error::Tensor(format!(
                    "{what}: input leaf {i} (`{}`) has dtype {}; only floating-point inputs can be \
                     differentiated (choose another argument with argnums, or pass integer data in an \
                     argument that is not differentiated)",
                    inner.leaf_path(i),
                    t.dtype()
                )));
            }
            inputs[slot] = Some((t.shape().to_vec(), t.dtype(), None));
            return Ok(t.clone());
        }
        inputs[slot] = Some((t.shape().to_vec(), t.dtype(), Some(tracked)));
        let leaf = NodeRef {
            node: Arc::new(Node::Leaf { index: tracked }),
            output: 0,
        };
        tracked += 1;
        Ok(Tracked::wrap(t.clone(), leaf, level))
    })?;
    let inputs = inputs
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| inconsistent_ranges(what, ranges, index))?;
    let result = f(wrapped)?;
    let (outs, roots, result) = outputs_of(result, level)?;
    drop(guard);
    let outputs = outs
        .iter()
        .map(|t| (t.shape().to_vec(), t.dtype()))
        .collect();
    Ok((
        result,
        Pullback {
            roots,
            outputs,
            inputs,
            tracked,
        },
    ))
}

/// Where leaf `i` goes among the leaves selected by `ranges` (in their
/// order), if it is selected.
pub(crate) fn position(ranges: &[Range<usize>], i: usize) -> Option<usize> {
    let mut before = 0;
    for r in ranges {
        if r.contains(&i) {
            return Some(before + i - r.start);
        }
        before += r.len();
    }
    None
}

/// The error for selected ranges that do not lie within the `leaves` leaves
/// of the arguments (a hand-written `TensorTree` impl that counts its leaves
/// inconsistently).
pub(crate) fn inconsistent_ranges(what: &str, ranges: &[Range<usize>], leaves: usize) -> Error {
    Error::Tensor(format!(
        "{what}: the differentiated leaves {ranges:?} are not all among the arguments' {leaves} \
         leaves; a hand-written TensorTree impl counts its leaves inconsistently"
    ))
}

/// An error if a leaf of the primals `inner` of a forward-mode transform
/// (`what`: jvp, jvp_with_aux, hvp, linearize) is not floating-point: only a
/// float has a tangent. torch.func.jvp refuses them too, and so does jacfwd;
/// a zero tangent would hide a primal passed by mistake.
pub(crate) fn float_primals<A: TensorTree>(what: &str, inner: &A) -> Result<()> {
    let mut leaves = Vec::new();
    inner.leaves(&mut leaves);
    match leaves.iter().position(|t| !t.dtype().is_float()) {
        None => Ok(()),
        Some(i) => Err(Error::Tensor(format!(
            "{what}: primal leaf {i} (`{}`) has dtype {}; only floating-point primals have \
             tangents (close over integer and bool data in the function instead of passing it \
             as a primal)",
            inner.leaf_path(i),
            leaves[i].dtype()
        ))),
    }
}

/// The primal values of an output tree and the node of each leaf.
pub(super) fn outputs_of<O: TensorTree>(
    out: O,
    level: LevelId,
) -> Result<(Vec<Tensor>, Vec<Option<NodeRef>>, O)> {
    let mut roots = Vec::new();
    let mut primals = Vec::new();
    let out = out.map_leaves(&mut |t| {
        let (p, root) = primal(t, level)?;
        roots.push(root);
        primals.push(p.clone());
        Ok(p)
    })?;
    Ok((primals, roots, out))
}

/// The pullback of a function at a point, returned by [`vjp`]: maps a
/// cotangent of the outputs (same structure, shapes and dtypes) to the
/// cotangent of the inputs (the vector-Jacobian product).
///
/// It holds the values the derivative needs, not the transform level that
/// recorded them, so it can be called any number of times, later, and under
/// other transforms: `vmap` over it gives a Jacobian ([`jacrev`](crate::jacrev)).
#[must_use = "the pullback computes nothing until called: `.call(&cotangent)` gives the vector-Jacobian product"]
pub struct VjpFn<G, C> {
    pullback: Pullback,
    /// The inputs, as the structure the gradients are put back into.
    template: G,
    /// The function that made it (`vjp` or `vjp_with_aux`), in its errors.
    what: &'static str,
    outputs: PhantomData<fn(&C)>,
}

impl<G: TensorTree, C: TensorTree> VjpFn<G, C> {
    /// The vector-Jacobian product with `cotangent`, which has the structure,
    /// shapes and dtypes of the function's outputs. The result has the
    /// structure of the inputs.
    ///
    /// Errors if a cotangent's shape or dtype differs from its output's.
    pub fn call(&self, cotangent: &C) -> Result<G> {
        let mut cts = Vec::new();
        cotangent.leaves(&mut cts);
        let grads = self.pullback.call(self.what, &cts)?;
        self.template.with_leaves(grads)
    }
}

impl<G, C> std::fmt::Debug for VjpFn<G, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pullback.debug_as("VjpFn", f)
    }
}

/// Evaluates `f` at `args` and returns its outputs with the pullback
/// ([`VjpFn`]): reverse-mode differentiation with respect to every input.
///
/// The outputs may be any [`TensorTree`]; integer or bool input leaves get zero
/// cotangents.
///
/// ```
/// use batchrules::{ops, vjp, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![1.0f64, 2.0, 3.0].into_dyn());
/// let (y, pullback) = vjp(|x: Tensor| ops::mul(&x, &x), &x)?;
/// assert_eq!(y.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![1.0, 4.0, 9.0]);
/// // The cotangent [1, 1, 1] gives the gradient of sum(x²): 2x.
/// let ones = Tensor::from(array![1.0f64, 1.0, 1.0].into_dyn());
/// let g = pullback.call(&ones)?;
/// assert_eq!(g.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn vjp<I, O, F, M>(f: F, args: I) -> Result<(O, VjpFn<I::Inner, O>)>
where
    I: GradArgs,
    O: TensorTree,
    F: TransformFnOnce<I::Inner, O, name::vjp, M>,
    M: OneArgument<name::vjp>,
{
    vjp_of("vjp", args, |a| f.run_once(a), outputs_of)
}

/// [`vjp`] and [`vjp_with_aux`]: traces `f` at `args` with respect to every
/// leaf, `outputs` picking the outputs to differentiate from what `f`
/// returns (and unwrapping the rest), and pairs what it keeps with the
/// pullback.
fn vjp_of<I: GradArgs, R, O, T>(
    what: &'static str,
    args: I,
    f: impl FnOnce(I::Inner) -> Result<R>,
    outputs: impl FnOnce(R, LevelId) -> Result<(Vec<Tensor>, Vec<Option<NodeRef>>, T)>,
) -> Result<(T, VjpFn<I::Inner, O>)> {
    let inner = args.inner(what)?;
    let all = 0..inner.leaf_count();
    let (kept, pullback) = trace(what, f, &inner, std::slice::from_ref(&all), false, outputs)?;
    Ok((
        kept,
        VjpFn {
            pullback,
            template: inner,
            what,
            outputs: PhantomData,
        },
    ))
}

/// A function prepared for reverse-mode differentiation; see [`grad`] and
/// [`value_and_grad`]. `S` is the selection of arguments differentiated
/// (see [`Grad::argnums`] and [`Grad::argnums2`]).
#[must_use = "`grad(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Grad<F, A, S = Argnum<0>> {
    f: F,
    with_value: bool,
    args: PhantomData<fn(A, S)>,
}

impl<F: Clone, A, S> Clone for Grad<F, A, S> {
    fn clone(&self) -> Self {
        Grad {
            f: self.f.clone(),
            with_value: self.with_value,
            args: PhantomData,
        }
    }
}

impl<F, A, S: Selected> std::fmt::Debug for Grad<F, A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grad")
            .field("argnums", &S::ARGNUMS)
            .finish_non_exhaustive()
    }
}

/// The gradient of a scalar function: `grad(f).call(args)` is the derivative
/// of `f`'s 0-d float output with respect to argument 0 (another with
/// [`Grad::argnums`]), with the structure of that argument.
///
/// `f` takes what `call` is given (a tensor, a struct of tensors, a tuple of
/// them) and returns a 0-d tensor, or `(tensor, aux)` to carry auxiliary
/// results out undifferentiated (JAX's `has_aux`): then `call` returns
/// `(gradient, aux)`.
///
/// It composes with [`vmap`](fn@crate::vmap) in both orders and with itself:
/// `vmap(|..| grad(loss).call(..))` gives per-example gradients, and
/// `grad(|x| grad(f).call(&x)...)` higher derivatives.
///
/// ```
/// use batchrules::{grad, ops, Tensor};
/// use ndarray::array;
///
/// // d/dx sum(x * x) = 2x
/// let x = Tensor::from(array![1.0f64, -2.0].into_dyn());
/// let g = grad(|x: Tensor| ops::sum(&ops::mul(&x, &x)?, None, false)).call(&x)?;
/// assert_eq!(g.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![2.0, -4.0]);
///
/// // With respect to the second argument, with auxiliary output.
/// let w = Tensor::from(array![3.0f64, 4.0].into_dyn());
/// let (gw, prod) = grad(|(x, w): (Tensor, Tensor)| {
///     let prod = ops::mul(&x, &w)?;
///     Ok((ops::sum(&prod, None, false)?, prod))
/// })
/// .argnums::<1>()
/// .call((&x, &w))?;
/// assert_eq!(gw.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![1.0, -2.0]);
/// assert_eq!(prod.shape(), &[2]);
///
/// // A non-scalar output is an error that says what to use instead.
/// let err = grad(|x: Tensor| ops::mul(&x, &x)).call(&x).unwrap_err();
/// assert!(err.to_string().contains("jacrev"));
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn grad<F, A, R, M>(f: F) -> Grad<F, A>
where
    F: TransformFn<A, R, name::grad, M>,
    M: OneArgument<name::grad>,
    R: GradOutput,
{
    Grad {
        f,
        with_value: false,
        args: PhantomData,
    }
}

/// Like [`grad`], but returns the function's value with the gradient:
/// `(value, gradient)`, or `((value, aux), gradient)` when `f` returns
/// `(tensor, aux)`.
///
/// ```
/// use batchrules::{ops, value_and_grad, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![3.0f32].into_dyn());
/// let (v, g) = value_and_grad(|x: Tensor| ops::sum(&ops::mul(&x, &x)?, None, false))
///     .call(&x)?;
/// assert_eq!(v.to_array::<f32>()?[[]], 9.0);
/// assert_eq!(g.to_array::<f32>()?[[0]], 6.0);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn value_and_grad<F, A, R, M>(f: F) -> ValueAndGrad<F, A>
where
    F: TransformFn<A, R, name::value_and_grad, M>,
    M: OneArgument<name::value_and_grad>,
    R: GradOutput,
{
    ValueAndGrad(Grad {
        f,
        with_value: true,
        args: PhantomData,
    })
}

/// A function prepared by [`value_and_grad`].
#[must_use = "`value_and_grad(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct ValueAndGrad<F, A, S = Argnum<0>>(Grad<F, A, S>);

impl<F: Clone, A, S> Clone for ValueAndGrad<F, A, S> {
    fn clone(&self) -> Self {
        ValueAndGrad(self.0.clone())
    }
}

impl<F, A, S: Selected> std::fmt::Debug for ValueAndGrad<F, A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueAndGrad")
            .field("argnums", &S::ARGNUMS)
            .finish_non_exhaustive()
    }
}

impl<F, A, S> ValueAndGrad<F, A, S> {
    argnums_methods!(ValueAndGrad);

    fn retag<T>(self) -> ValueAndGrad<F, A, T> {
        ValueAndGrad(self.0.retag())
    }

    /// The value and the gradient: `(value, gradient)`, or `((value, aux),
    /// gradient)` when `f` returns `(tensor, aux)`. Errors as [`Grad::call`].
    pub fn call<I, R, M>(&self, args: I) -> Result<R::WithValue<S::Out>>
    where
        I: GradArgs<Inner = A>,
        S: Argnums<I>,
        F: TransformFn<A, R, name::value_and_grad, M>,
        R: GradOutput,
    {
        let (value, aux, grad) = self.0.run(args, |a| self.0.f.run(a))?;
        Ok(R::with_value(value, grad, aux))
    }
}

impl<F, A, S> Grad<F, A, S> {
    argnums_methods!(Grad);

    fn retag<T>(self) -> Grad<F, A, T> {
        Grad {
            f: self.f,
            with_value: self.with_value,
            args: PhantomData,
        }
    }

    /// Differentiates `f` (this builder's function, which `call` passes in
    /// as a closure so that `Grad` and `ValueAndGrad` may name it as
    /// different transforms in their bounds).
    fn run<I, R>(
        &self,
        args: I,
        f: impl FnOnce(I::Inner) -> Result<R>,
    ) -> Result<(Tensor, R::Aux, S::Out)>
    where
        I: GradArgs,
        S: Argnums<I>,
        R: GradOutput,
    {
        let what = if self.with_value {
            "value_and_grad"
        } else {
            "grad"
        };
        let inner = args.inner(what)?;
        let ranges = selected_ranges::<I, S>(what, &inner)?;
        let (value, aux, grads) = gradient(what, f, &inner, &ranges)?;
        Ok((value, aux, S::build(&inner, grads)?))
    }

    /// The gradient (with the aux output when `f` returns `(tensor, aux)`).
    ///
    /// Errors if `f` errs, if its output is not a 0-d float tensor, or if
    /// the differentiated argument has an integer or bool tensor.
    pub fn call<I, R, M>(&self, args: I) -> Result<R::WithGrad<S::Out>>
    where
        I: GradArgs<Inner = A>,
        S: Argnums<I>,
        F: TransformFn<A, R, name::grad, M>,
        R: GradOutput,
    {
        let (_, aux, grad) = self.run(args, |a| self.f.run(a))?;
        Ok(R::with_grad(grad, aux))
    }
}

/// The gradient of `f`'s 0-d float output at `inner` with respect to the
/// leaves in `ranges` (one tensor per leaf, in their order), with the value
/// and the aux output (both one level down).
pub(crate) fn gradient<A: TensorTree, R: GradOutput>(
    what: &str,
    f: impl FnOnce(A) -> Result<R>,
    inner: &A,
    ranges: &[Range<usize>],
) -> Result<(Tensor, R::Aux, Vec<Tensor>)> {
    let ((value, aux), pullback) = trace(what, f, inner, ranges, true, |r: R, level| {
        let (value, aux) = r.split();
        let (value, root) = primal(&value, level)?;
        if !value.shape().is_empty() || !value.dtype().is_float() {
            return Err(Error::Tensor(format!(
                "{what}: the function returned a {} tensor of shape {:?}; {what} needs a scalar \
                 (0-d) floating-point output. For a non-scalar output use vjp (a \
                 vector-Jacobian product) or jacrev (the whole Jacobian)",
                value.dtype(),
                value.shape()
            )));
        }
        let aux = R::unwrap_aux(aux, level)?;
        Ok((vec![value.clone()], vec![root], (value, aux)))
    })?;
    let one = usize_args::full_scalar(1.0, value.dtype())?;
    let grads = pullback.call(what, &[one])?;
    Ok((value, aux, grads))
}

/// [`vjp`] of a function that also returns auxiliary data (torch.func's
/// `vjp(..., has_aux=True)`): `f` returns `(outputs, aux)`, and the result is
/// `(outputs, pullback, aux)`. The pullback is that of `outputs` only; `aux`
/// (any tree of tensors) is carried out as computed, not differentiated, and
/// unwrapped from this transform's level.
///
/// ```
/// use batchrules::{ops, vjp_with_aux, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
/// let (y, pullback, aux) = vjp_with_aux(
///     |x: Tensor| {
///         let y = ops::sin(&x)?;
///         Ok((y, ops::cos(&x)?))
///     },
///     &x,
/// )?;
/// assert_eq!(y.shape(), &[2]);
/// let ones = Tensor::from(array![1.0f64, 1.0].into_dyn());
/// // d sin(x) = cos(x): the pullback of ones is the aux output here.
/// assert!(pullback.call(&ones)?.allclose(&aux, 1e-12, 0.0)?);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// Errors as [`vjp`].
pub fn vjp_with_aux<I, O, X, F, M>(f: F, args: I) -> Result<(O, VjpFn<I::Inner, O>, X)>
where
    I: GradArgs,
    O: TensorTree,
    X: TensorTree,
    F: TransformFnOnce<I::Inner, (O, X), name::vjp, M>,
    M: OneArgument<name::vjp>,
{
    let ((out, aux), pullback) = vjp_of(
        "vjp_with_aux",
        args,
        |a| f.run_once(a),
        |(o, x): (O, X), level| {
            let (outs, roots, o) = outputs_of(o, level)?;
            let x = x.map_leaves(&mut |t| primal(t, level).map(|(t, _)| t))?;
            Ok((outs, roots, (o, x)))
        },
    )?;
    Ok((out, pullback, aux))
}

/// The linear map `t ↦ J·t` of a function at a point, returned by
/// [`linearize`]: maps tangents of the inputs (same structure, shapes and
/// dtypes) to the tangent of the outputs (the Jacobian-vector product).
///
/// It holds the pullback recorded when `f` ran, not `f`: each call
/// differentiates that pullback (which is linear in its cotangent, and made
/// of ops) instead of running `f` again, so it can be called any number of
/// times, later, and under other transforms (`vmap` over it gives the columns
/// of the Jacobian). A call costs about two backward passes of `f`.
#[must_use = "the linearized function computes nothing until called: `.call(&tangent)` gives J·tangent"]
pub struct LinearizeFn<T, O> {
    pullback: Pullback,
    /// Zeros of the outputs' shapes and dtypes: the point the pullback is
    /// differentiated at (it is linear, so any point gives the same).
    point: Vec<Tensor>,
    /// The outputs, as the structure the result is put back into.
    output: O,
    inputs: PhantomData<fn(&T)>,
}

impl<T, O> std::fmt::Debug for LinearizeFn<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pullback.debug_as("LinearizeFn", f)
    }
}

impl<T: TensorTree, O: TensorTree> LinearizeFn<T, O> {
    /// The Jacobian-vector product with `tangent`, which has the structure,
    /// shapes and dtypes of the function's inputs. The result has the
    /// structure of the outputs; an output that does not depend on the inputs
    /// gets a zero tangent.
    ///
    /// Errors if a tangent's shape or dtype differs from its input's.
    pub fn call(&self, tangent: &T) -> Result<O> {
        let what = "linearize";
        let mut ts = Vec::new();
        tangent.leaves(&mut ts);
        let inputs = &self.pullback.inputs;
        if ts.len() != inputs.len() {
            return Err(Error::Tensor(format!(
                "{what}: got {} tangents for {} inputs; give one per input, of the input's shape and dtype",
                ts.len(),
                inputs.len()
            )));
        }
        for (i, (t, (shape, dtype, _))) in ts.iter().zip(inputs).enumerate() {
            if t.shape() != shape.as_slice() || t.dtype() != *dtype {
                return Err(Error::Tensor(format!(
                    "{what}: the tangent of input leaf {i} (`{}`) has shape {:?} and dtype {}, but \
                     the input has shape {shape:?} and dtype {dtype}; a tangent has its input's shape \
                     and dtype",
                    tangent.leaf_path(i),
                    t.shape(),
                    t.dtype()
                )));
            }
        }
        // u ↦ Jᵀu is linear, so its own pullback at any u maps t to J·t.
        let n = self.point.len();
        let (_, transpose) = trace(
            what,
            |u: Vec<Tensor>| self.pullback.call(what, &u),
            &self.point,
            std::slice::from_ref(&(0..n)),
            false,
            outputs_of,
        )?;
        let jt = transpose.call(what, &ts)?;
        self.output.with_leaves(jt)
    }
}

/// Evaluates `f` at `primals` and returns its outputs with the linear map
/// `t ↦ J·t` of `f` there ([`LinearizeFn`]), as `torch.func.linearize` and
/// `jax.linearize` do: for many Jacobian-vector products at one point.
///
/// `f` runs once, here. Each [`LinearizeFn::call`] transposes the pullback
/// recorded now (the vjp formulas are ops, so the pullback is itself
/// differentiable) instead of running `f` again: it gives what
/// [`jvp`](crate::jvp()) gives at the same point, in about two backward
/// passes, and keeps the values the pullback needs alive until it is dropped.
///
/// ```
/// use batchrules::{linearize, ops, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![0.0f64, 1.0].into_dyn());
/// let (y, jvp_fn) = linearize(|x: Tensor| ops::sin(&x), &x)?;
/// assert!(y.allclose(&ops::sin(&x)?, 1e-12, 0.0)?);
/// // J·t = cos(x) * t, for any number of tangents.
/// let t = Tensor::from(array![2.0f64, 1.0].into_dyn());
/// let jt = jvp_fn.call(&t)?;
/// assert!(jt.allclose(&ops::mul(&ops::cos(&x)?, &t)?, 1e-12, 0.0)?);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// Errors if `f` errs or a primal is not floating-point (only a float has
/// a tangent; close over integer and bool data in `f`); the calls err as
/// [`LinearizeFn::call`] says.
pub fn linearize<I, O, F, M>(f: F, primals: I) -> Result<(O, LinearizeFn<I::Inner, O>)>
where
    I: GradArgs,
    O: TensorTree,
    F: TransformFnOnce<I::Inner, O, name::linearize, M>,
    M: OneArgument<name::linearize>,
{
    let what = "linearize";
    let inner = primals.inner(what)?;
    float_primals(what, &inner)?;
    let all = 0..inner.leaf_count();
    let (out, pullback) = trace(
        what,
        |a| f.run_once(a),
        &inner,
        std::slice::from_ref(&all),
        false,
        outputs_of,
    )?;
    let point = pullback
        .outputs
        .iter()
        .map(|(shape, dtype)| usize_args::zeros(shape, *dtype))
        .collect::<Result<_>>()?;
    // The output's structure, for the result of each call (cheap handles).
    let output = out.map_leaves(&mut |t| Ok(t.clone()))?;
    Ok((
        out,
        LinearizeFn {
            pullback,
            point,
            output,
            inputs: PhantomData,
        },
    ))
}
