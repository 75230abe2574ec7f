//! The public API of forward-mode differentiation: [`jvp`] and [`hvp`].

use std::rc::Rc;

use crate::dispatch::{escaped, push_level, Interpreter};
use crate::grad::{float_primals, grad, GradArgs};
use crate::ops::usize_args;
use crate::transform_fn::{self as name, OneArgument, TransformFn, TransformFnOnce};
use crate::{Error, LevelId, Result, Tensor, TensorTree};

use super::dual::Dual;
use super::interpreter::JvpInterpreter;

thread_local! {
    static INTERPRETER: Rc<JvpInterpreter> = Rc::new(JvpInterpreter);
}

/// Runs `f` at a new jvp level, where input leaf `i` of `inner` carries the
/// tangent `tangent(i, leaf)` (`None`: a zero tangent, the leaf is a
/// constant). Returns the outputs (one level down) and each output leaf's
/// tangent (`None`: zero, the output does not depend on the inputs).
pub(crate) fn push_forward<A: TensorTree, O: TensorTree>(
    what: &str,
    f: impl FnOnce(A) -> Result<O>,
    inner: &A,
    mut tangent: impl FnMut(usize, &Tensor) -> Result<Option<Tensor>>,
) -> Result<(O, Vec<Option<Tensor>>)> {
    let guard = push_level(what, |_| {
        INTERPRETER.with(|i| Rc::clone(i) as Rc<dyn Interpreter>)
    })?;
    let level = guard.id();
    let mut index = 0usize;
    let wrapped = inner.map_leaves(&mut |t| {
        let i = index;
        index += 1;
        Ok(match tangent(i, t)? {
            Some(v) => Dual::wrap(t.clone(), v, level),
            None => t.clone(),
        })
    })?;
    let out = f(wrapped)?;
    let mut tangents = Vec::new();
    let out = out.map_leaves(&mut |t| {
        let (p, v) = unwrap(t, level)?;
        tangents.push(v);
        Ok(p)
    })?;
    drop(guard);
    Ok((out, tangents))
}

/// Splits a result of the function into its value one level down and its
/// tangent at `level`.
fn unwrap(t: &Tensor, level: LevelId) -> Result<(Tensor, Option<Tensor>)> {
    if let Some(d) = Dual::at(t, level) {
        return Ok((d.primal.clone(), Some(d.tangent.clone())));
    }
    match t.level() {
        Some(l) if l.depth() >= level.depth() => Err(escaped(t)),
        _ => Ok((t.clone(), None)),
    }
}

/// The Jacobian-vector product: evaluates `f` at `primals` and pushes
/// `tangents` forward through it, returning `(f(primals), J · tangents)` in
/// the structure of `f`'s output. Forward-mode differentiation.
///
/// `primals` and `tangents` have the same form (one tree by reference, or a
/// tuple of references, as for [`vjp`](crate::vjp())), and each tangent has
/// its primal's shape and dtype. Every primal is floating-point, as
/// `torch.func.jvp` requires: integer and bool data has no tangent, so close
/// over it in `f` instead. An output that does not depend on the inputs gets
/// a zero tangent.
///
/// It composes with [`vmap`](fn@crate::vmap) in both orders and with
/// [`grad`](crate::grad()) (forward over reverse gives Hessian-vector
/// products, see [`hvp`]).
///
/// ```
/// use batchrules::{jvp, ops, Tensor};
/// use ndarray::array;
///
/// // d/dt sin(x + t v) at t = 0 is cos(x) * v.
/// let x = Tensor::from(array![0.0f64, 1.0].into_dyn());
/// let v = Tensor::from(array![2.0f64, 1.0].into_dyn());
/// let (y, dy) = jvp(|x: Tensor| ops::sin(&x), &x, &v)?;
/// assert_eq!(y.to_array::<f64>()?[[1]], 1.0f64.sin());
/// assert_eq!(dy.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![2.0, 1.0f64.cos()]);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// Errors if `f` errs, a primal is not floating-point, or a tangent's shape
/// or dtype differs from its primal's.
pub fn jvp<I, O, F, M>(f: F, primals: I, tangents: I) -> Result<(O, O)>
where
    I: GradArgs,
    O: TensorTree,
    F: TransformFnOnce<I::Inner, O, name::jvp, M>,
    M: OneArgument<name::jvp>,
{
    jvp_as("jvp", |a| f.run_once(a), primals, tangents)
}

/// [`jvp`], with its errors named `what` (the transform the user called:
/// `jvp`, or `hvp`, which is jvp of grad).
pub(crate) fn jvp_as<I, O, F>(what: &'static str, f: F, primals: I, tangents: I) -> Result<(O, O)>
where
    I: GradArgs,
    O: TensorTree,
    F: FnOnce(I::Inner) -> Result<O>,
{
    push_tangents(what, f, primals, tangents, false)
}

/// [`jvp`] where integer and bool primals are constants (their tangents are
/// ignored) instead of an error: for the testing helpers, which pass an
/// op's integer arguments (indices, targets) beside its float ones.
pub(crate) fn jvp_with_constants<I, O, F>(f: F, primals: I, tangents: I) -> Result<(O, O)>
where
    I: GradArgs,
    O: TensorTree,
    F: FnOnce(I::Inner) -> Result<O>,
{
    push_tangents("jvp", f, primals, tangents, true)
}

/// [`jvp_as`], or with integer and bool primals as constants.
fn push_tangents<I, O, F>(
    what: &'static str,
    f: F,
    primals: I,
    tangents: I,
    constants: bool,
) -> Result<(O, O)>
where
    I: GradArgs,
    O: TensorTree,
    F: FnOnce(I::Inner) -> Result<O>,
{
    let inner = primals.inner(what)?;
    if !constants {
        float_primals(what, &inner)?;
    }
    let tangents = tangents.inner(what)?;
    let mut given = Vec::new();
    tangents.leaves(&mut given);
    if given.len() != inner.leaf_count() {
        return Err(Error::Tensor(format!(
            "{what}: got {} tangents for {} primals; give one per primal, of its shape and dtype",
            given.len(),
            inner.leaf_count()
        )));
    }
    let (out, pushed) = push_forward(what, f, &inner, |i, p| {
        let v = &given[i];
        if v.shape() != p.shape() || (p.dtype().is_float() && v.dtype() != p.dtype()) {
            return Err(Error::Tensor(format!(
                "{what}: the tangent of primal leaf {i} (`{}`) has shape {:?} and dtype {}, but the \
                 primal has shape {:?} and dtype {}; a tangent has its primal's shape and dtype",
                inner.leaf_path(i),
                v.shape(),
                v.dtype(),
                p.shape(),
                p.dtype()
            )));
        }
        Ok(p.dtype().is_float().then(|| v.clone()))
    })?;
    let mut k = 0;
    let out_tangents = out.map_leaves(&mut |o| {
        let t = pushed[k].clone();
        k += 1;
        match t {
            Some(t) => Ok(t),
            None => usize_args::zeros(o.shape(), o.dtype()),
        }
    })?;
    Ok((out, out_tangents))
}

/// [`jvp`] of a function that also returns auxiliary data (torch.func's
/// `jvp(..., has_aux=True)`): `f` returns `(outputs, aux)`, and the result is
/// `(outputs, tangents of outputs, aux)`. `aux` (any tree of tensors) is
/// carried out as computed, without a tangent, unwrapped from this
/// transform's level.
///
/// ```
/// use batchrules::{jvp_with_aux, ops, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![0.5f64, 1.0].into_dyn());
/// let v = Tensor::from(array![1.0f64, 1.0].into_dyn());
/// let (y, dy, aux) = jvp_with_aux(|x: Tensor| Ok((ops::sin(&x)?, ops::cos(&x)?)), &x, &v)?;
/// assert!(y.allclose(&ops::sin(&x)?, 1e-12, 0.0)?);
/// // d sin(x) . 1 = cos(x), which is the aux output.
/// assert!(dy.allclose(&aux, 1e-12, 0.0)?);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// Errors as [`jvp`].
pub fn jvp_with_aux<I, O, X, F, M>(f: F, primals: I, tangents: I) -> Result<(O, O, X)>
where
    I: GradArgs,
    // The pair is the output of one jvp, whose tangent of `X` is dropped.
    (O, X): TensorTree,
    F: TransformFnOnce<I::Inner, (O, X), name::jvp, M>,
    M: OneArgument<name::jvp>,
{
    // The aux leaves get tangents too, which are dropped: the primal of a
    // dual output is already unwrapped from the jvp level.
    let ((out, aux), (tangents, _)) = jvp_as("jvp_with_aux", |a| f.run_once(a), primals, tangents)?;
    Ok((out, tangents, aux))
}

/// The Hessian-vector product of a scalar function, forward over reverse:
/// the jvp of `grad(f)` at `primals` along `tangents`, in the structure of
/// the arguments. It costs a small multiple of one gradient and never forms
/// the Hessian.
///
/// ```
/// use batchrules::{hvp, ops, Tensor};
/// use ndarray::array;
///
/// // f(x) = sum(x³) has Hessian diag(6x), so H v = 6 x v.
/// let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
/// let v = Tensor::from(array![1.0f64, 10.0].into_dyn());
/// let hv = hvp(|x: Tensor| ops::sum(&ops::mul(&ops::mul(&x, &x)?, &x)?, None, false), &x, &v)?;
/// assert_eq!(hv.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![6.0, 120.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
///
/// Errors as [`grad`](crate::grad()) and [`jvp`].
pub fn hvp<I, F, M>(f: F, primals: I, tangents: I) -> Result<I::Inner>
where
    I: GradArgs,
    F: TransformFn<I::Inner, Tensor, name::hvp, M>,
    M: OneArgument<name::hvp>,
{
    let g = grad(|a: I::Inner| {
        scalar_output(
            "hvp",
            f.run(a)?,
            "for a vector function, use jvp of vjp, or jacfwd and jacrev",
        )
    });
    let (_, hv) = jvp_as("hvp", |a: I::Inner| g.call(&a), primals, tangents)?;
    Ok(hv)
}

/// `y` if it is a scalar (0-d), else an error naming `what` (the transform
/// that needs one: hessian, hvp) and saying what to use instead.
pub(crate) fn scalar_output(what: &str, y: Tensor, instead: &str) -> Result<Tensor> {
    if !y.shape().is_empty() {
        return Err(Error::Tensor(format!(
            "{what}: the function returned a tensor of shape {:?}; {what} needs a scalar (0-d) \
             output ({instead})",
            y.shape()
        )));
    }
    Ok(y)
}
