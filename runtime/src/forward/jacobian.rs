//! Jacobians by forward mode: [`jacfwd`] is `vmap` of the jvp over the basis
//! of the input space; [`hessian`] is `jacfwd` of `grad` (forward over
//! reverse).

use std::marker::PhantomData;

use crate::core::alloc::{check_alloc_in, checked_numel};
use crate::grad::jacobian::chunks;
use crate::grad::{grad, ops, ArgAt};
use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::vmap::join::Joiner;
use crate::{vmap, DType, Error, Randomness, Result, Tensor, TensorTree};

use super::api::{push_forward, scalar_output};

/// A function prepared for [`jacfwd`]; `N` is the argument differentiated.
#[must_use = "`jacfwd(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Jacfwd<F, A, const N: usize = 0> {
    f: F,
    chunk_size: Option<usize>,
    randomness: Randomness,
    args: PhantomData<fn(A)>,
}

impl<F: Clone, A, const N: usize> Clone for Jacfwd<F, A, N> {
    fn clone(&self) -> Self {
        Jacfwd {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }
}

impl<F, A, const N: usize> std::fmt::Debug for Jacfwd<F, A, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jacfwd")
            .field("argnum", &N)
            .field("chunk_size", &self.chunk_size)
            .field("randomness", &self.randomness)
            .finish_non_exhaustive()
    }
}

/// The Jacobian of `f` by forward mode: the jvp of `f`, vmapped over the
/// columns of the identity of the input space. It gives what
/// [`jacrev`](crate::jacrev()) gives, and is the cheaper of the two when the
/// output has more elements than the input (one jvp per input element, where
/// jacrev does one vjp per output element).
///
/// `f` returns one float tensor of shape `out`; for each leaf of argument `N`
/// (0 by default, see [`Jacfwd::argnums`]) of shape `in`, the result holds a
/// tensor of shape `out ++ in` whose entry `[i.., j..]` is `d out[i..] / d
/// in[j..]`, in the structure of that argument.
///
/// ```
/// use batchrules::{jacfwd, ops, Tensor};
/// use ndarray::array;
///
/// // f(x) = [x0 * x1, sin(x0)] has Jacobian [[x1, x0], [cos(x0), 0]].
/// let x = Tensor::from(array![2.0f64, 3.0].into_dyn());
/// let f = |x: Tensor| {
///     let x0 = ops::narrow(&x, 0, 0, 1)?;
///     let x1 = ops::narrow(&x, 0, 1, 1)?;
///     ops::cat(&[ops::mul(&x0, &x1)?, ops::sin(&x0)?], 0)
/// };
/// let j = jacfwd(f).call(&x)?;
/// assert_eq!(j.shape(), &[2, 2]);
/// let rows: Vec<f64> = j.to_array::<f64>()?.iter().copied().collect();
/// assert_eq!(rows, vec![3.0, 2.0, 2.0f64.cos(), 0.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn jacfwd<F, A, M>(f: F) -> Jacfwd<F, A, 0>
where
    F: TransformFn<A, Tensor, name::jacfwd, M>,
    M: OneArgument<name::jacfwd>,
{
    Jacfwd {
        f,
        chunk_size: None,
        randomness: Randomness::Error,
        args: PhantomData,
    }
}

impl<F, A, const N: usize> Jacfwd<F, A, N> {
    /// Differentiates argument `M` instead (see [`Grad::argnums`](crate::Grad::argnums)).
    pub fn argnums<const M: usize>(self) -> Jacfwd<F, A, M> {
        Jacfwd {
            f: self.f,
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }

    /// Pushes forward at most `size` columns of the identity at a time (see
    /// [`Vmap::chunk_size`](crate::Vmap::chunk_size)), bounding the memory of
    /// the batched jvp by the chunk; the Jacobian is the same.
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = Some(size);
        self
    }

    /// How a random op in `f` draws across the Jacobian's columns, which
    /// jacfwd pushes through `f` as one batch (torch.func's `randomness=`):
    /// [`Randomness::Error`] (the default) refuses a random op,
    /// [`Randomness::Same`] gives every column the same draw (the Jacobian of
    /// `f` with its noise held fixed), [`Randomness::Different`] an
    /// independent draw per column.
    pub fn randomness(mut self, randomness: Randomness) -> Self {
        self.randomness = randomness;
        self
    }

    /// The Jacobian at `args`.
    ///
    /// Errors if `f` errs or returns a non-float tensor, if the
    /// differentiated argument holds an integer or bool tensor, or if
    /// `chunk_size` is 0.
    pub fn call<I, M>(&self, args: I) -> Result<I::Out>
    where
        I: ArgAt<N, Inner = A>,
        F: TransformFn<A, Tensor, name::jacfwd, M>,
    {
        self.at(args, &|a| self.f.run(a))
    }

    /// [`call`](Self::call), with the function taking `I::Inner` (bounded by
    /// `ArgAt` to a [`TensorTree`]; `call` names it `A` for the closure's
    /// sake, and bounding `A` there too would report a non-tree argument
    /// twice).
    fn at<I: ArgAt<N>>(&self, args: I, f: &impl Fn(I::Inner) -> Result<Tensor>) -> Result<I::Out> {
        let inner = args.inner("jacfwd")?;
        let range = I::leaf_range(&inner);
        // No aux: an empty list of tensors.
        let (leaves, _) = forward_jacobian(
            "jacfwd",
            &|a| Ok((f(a)?, Vec::<Tensor>::new())),
            &inner,
            range,
            self.chunk_size,
            self.randomness,
        )?;
        I::arg(&inner).with_leaves(leaves)
    }
}

/// A function prepared for [`jacfwd_with_aux`]; `N` is the argument
/// differentiated.
#[must_use = "`jacfwd_with_aux(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct JacfwdWithAux<F, A, const N: usize = 0> {
    f: F,
    chunk_size: Option<usize>,
    randomness: Randomness,
    args: PhantomData<fn(A)>,
}

impl<F: Clone, A, const N: usize> Clone for JacfwdWithAux<F, A, N> {
    fn clone(&self) -> Self {
        JacfwdWithAux {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }
}

impl<F, A, const N: usize> std::fmt::Debug for JacfwdWithAux<F, A, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JacfwdWithAux")
            .field("argnum", &N)
            .field("chunk_size", &self.chunk_size)
            .field("randomness", &self.randomness)
            .finish_non_exhaustive()
    }
}

/// [`jacfwd`] of a function that also returns auxiliary data (torch.func's
/// `jacfwd(f, has_aux=True)`): `f` returns `(output, aux)`, and `call`
/// returns `(jacobian, aux)`. `aux` (any tree of tensors) is carried out
/// undifferentiated, unwrapped from this transform's levels; it must not
/// depend on the basis of tangents (it cannot, unless a random op draws
/// differently per column under [`Randomness::Different`], which is an error).
///
/// ```
/// use batchrules::{jacfwd_with_aux, ops, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![1.0f64, 3.0].into_dyn());
/// let (j, aux) = jacfwd_with_aux(|x: Tensor| {
///     let y = ops::mul(&x, &x)?;
///     Ok((y.clone(), y))
/// })
/// .call(&x)?;
/// assert_eq!(j.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![2.0, 0.0, 0.0, 6.0]);
/// assert_eq!(aux.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![1.0, 9.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn jacfwd_with_aux<F, A, X, M>(f: F) -> JacfwdWithAux<F, A, 0>
where
    F: TransformFn<A, (Tensor, X), name::jacfwd, M>,
    M: OneArgument<name::jacfwd>,
    X: TensorTree,
{
    JacfwdWithAux {
        f,
        chunk_size: None,
        randomness: Randomness::Error,
        args: PhantomData,
    }
}

impl<F, A, const N: usize> JacfwdWithAux<F, A, N> {
    /// Differentiates argument `M` instead (see [`Grad::argnums`](crate::Grad::argnums)).
    pub fn argnums<const M: usize>(self) -> JacfwdWithAux<F, A, M> {
        JacfwdWithAux {
            f: self.f,
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }

    /// Pushes forward at most `size` columns at a time (see [`Jacfwd::chunk_size`]).
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = Some(size);
        self
    }

    /// How a random op draws across the columns (see [`Jacfwd::randomness`]).
    pub fn randomness(mut self, randomness: Randomness) -> Self {
        self.randomness = randomness;
        self
    }

    /// The Jacobian at `args`, and the aux output. Errors as [`Jacfwd::call`].
    pub fn call<I, X, M>(&self, args: I) -> Result<(I::Out, X)>
    where
        I: ArgAt<N, Inner = A>,
        X: TensorTree,
        F: TransformFn<A, (Tensor, X), name::jacfwd, M>,
    {
        self.at(args, &|a| self.f.run(a))
    }

    /// [`call`](Self::call), as [`Jacfwd::at`].
    fn at<I: ArgAt<N>, X: TensorTree>(
        &self,
        args: I,
        f: &impl Fn(I::Inner) -> Result<(Tensor, X)>,
    ) -> Result<(I::Out, X)> {
        let inner = args.inner("jacfwd")?;
        let range = I::leaf_range(&inner);
        let (leaves, aux) =
            forward_jacobian("jacfwd", f, &inner, range, self.chunk_size, self.randomness)?;
        Ok((I::arg(&inner).with_leaves(leaves)?, aux))
    }
}

/// The Jacobian of `f` at `inner` with respect to the leaves in `range` by
/// forward mode: one tensor of shape `out ++ leaf` per leaf, and `f`'s aux
/// output (that of the first chunk of columns; it does not depend on them).
fn forward_jacobian<A: TensorTree, X: TensorTree>(
    what: &'static str,
    f: &impl Fn(A) -> Result<(Tensor, X)>,
    inner: &A,
    range: std::ops::Range<usize>,
    chunk_size: Option<usize>,
    randomness: Randomness,
) -> Result<(Vec<Tensor>, X)> {
    let mut all = Vec::new();
    inner.leaves(&mut all);
    let leaves = &all[range.clone()];
    for (k, t) in leaves.iter().enumerate() {
        if !t.dtype().is_float() {
            return Err(Error::Tensor(format!(
                "{what}: input leaf {} (`{}`) has dtype {}; only floating-point inputs can be \
                 differentiated (choose another argument with argnums, or pass integer data in an \
                 argument that is not differentiated)",
                range.start + k,
                inner.leaf_path(range.start + k),
                t.dtype()
            )));
        }
    }
    // Column j of the identity is the tangent that is 1 at input element j
    // (counting through the leaves in order) and 0 elsewhere.
    let sizes: Vec<usize> = leaves
        .iter()
        .map(|t| checked_numel(t.shape()))
        .collect::<Result<_>>()?;
    let columns: usize = sizes.iter().sum();
    let mut join = Joiner::new(what, 0, columns);
    let mut first_aux: Option<X> = None;
    for (start, len) in chunks(what, columns, chunk_size, "column")? {
        let mut offset = 0;
        let basis: Vec<Tensor> = leaves
            .iter()
            .zip(&sizes)
            .map(|(t, &n)| {
                let b = unit_columns(what, start, len, offset, t.shape(), t.dtype());
                offset += n;
                b
            })
            .collect::<Result<_>>()?;
        let push = |tangents: Vec<Tensor>| -> Result<(Tensor, X)> {
            let ((out, aux), pushed) = push_forward(what, f, inner, |i, _| {
                Ok(range
                    .contains(&i)
                    .then(|| tangents[i - range.start].clone()))
            })?;
            if !out.dtype().is_float() {
                return Err(Error::Tensor(format!(
                    "{what}: the function returned a {} tensor; only floating-point outputs can be differentiated",
                    out.dtype()
                )));
            }
            let tangent = match pushed.into_iter().next().flatten() {
                Some(t) => t,
                None => ops::zeros(out.shape(), out.dtype())?,
            };
            Ok((tangent, aux))
        };
        // The vmap over the columns is this transform's, not the user's:
        // its errors are reported as `what`'s.
        let level = crate::dispatch::depth() + 1;
        // The aux output does not depend on the columns: out_dim None.
        let (part, aux): (Tensor, X) = vmap(push)
            .randomness(randomness)
            .out_dims([Some(0), None])
            .call(basis)
            .map_err(|e| e.reported_by(what, level))?;
        join.push(part, len)?;
        first_aux.get_or_insert(aux);
    }
    let aux = first_aux.ok_or_else(|| Error::Tensor(format!("{what}: no chunk ran")))?;
    let jac = join.finish()?;
    // jac is [columns, out..]: each leaf's columns, reshaped to the leaf's
    // dims and moved after the output's.
    let out_rank = jac.shape().len() - 1;
    let mut offset = 0;
    let jac = leaves
        .iter()
        .zip(&sizes)
        .map(|(t, &n)| {
            let cols = ops::narrow0(&jac, offset, n)?;
            offset += n;
            let mut shape = t.shape().to_vec();
            shape.extend_from_slice(&jac.shape()[1..]);
            let cols = ops::reshape(&cols, &shape)?;
            let in_rank = t.shape().len();
            let perm: Vec<usize> = (in_rank..in_rank + out_rank).chain(0..in_rank).collect();
            ops::permute(&cols, &perm)
        })
        .collect::<Result<_>>()?;
    Ok((jac, aux))
}

/// Columns `start..start + len` of the identity, restricted to one input leaf
/// of shape `shape` whose elements are columns `offset..offset + numel`:
/// `[len, shape..]`, 1 where the column is one of the leaf's elements.
fn unit_columns(
    what: &str,
    start: usize,
    len: usize,
    offset: usize,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let mut full = vec![len];
    full.extend_from_slice(shape);
    check_alloc_in(what, &full, dtype)?;
    let numel = checked_numel(shape)?;
    let ones = |row: usize| {
        let col = start + row;
        (offset..offset + numel)
            .contains(&col)
            .then(|| row * numel + col - offset)
    };
    match dtype {
        DType::F32 => Tensor::from_shape_vec(&full, unit_rows(len, numel, ones, 1.0f32)),
        DType::F64 => Tensor::from_shape_vec(&full, unit_rows(len, numel, ones, 1.0f64)),
        other => Err(Error::Tensor(format!(
            "{what}: an input of dtype {other} cannot be differentiated"
        ))),
    }
}

/// `len` rows of `numel` zeros, with a one where `one_at(row)` says.
fn unit_rows<T: Copy + Default>(
    len: usize,
    numel: usize,
    one_at: impl Fn(usize) -> Option<usize>,
    one: T,
) -> Vec<T> {
    let mut v = vec![T::default(); len * numel];
    for i in (0..len).filter_map(one_at) {
        v[i] = one;
    }
    v
}

/// A function prepared for [`hessian`].
#[must_use = "`hessian(f)` only prepares the transform: call `.call(&x)` to run it"]
pub struct Hessian<F> {
    f: F,
    chunk_size: Option<usize>,
    randomness: Randomness,
}

impl<F> std::fmt::Debug for Hessian<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hessian")
            .field("chunk_size", &self.chunk_size)
            .field("randomness", &self.randomness)
            .finish_non_exhaustive()
    }
}

/// The Hessian of a scalar function of one tensor, forward over reverse
/// (`jacfwd` of `grad`, as JAX computes it): for `x` of shape `s`, a tensor of
/// shape `s ++ s`. Reverse over reverse (`jacrev` of `grad`) gives the same
/// numbers at a higher cost; for one product with the Hessian use [`hvp`](crate::hvp()).
///
/// ```
/// use batchrules::{hessian, ops, Tensor};
/// use ndarray::array;
///
/// // sum(x³) has Hessian diag(6x).
/// let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
/// let h = hessian(|x: Tensor| ops::sum(&ops::mul(&ops::mul(&x, &x)?, &x)?, None, false))
///     .call(&x)?;
/// assert_eq!(h.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![6.0, 0.0, 0.0, 12.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn hessian<F>(f: F) -> Hessian<F>
where
    F: Fn(Tensor) -> Result<Tensor>,
{
    Hessian {
        f,
        chunk_size: None,
        randomness: Randomness::Error,
    }
}

impl<F> Hessian<F> {
    /// Pushes at most `size` columns forward at a time (see
    /// [`Jacfwd::chunk_size`]).
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = Some(size);
        self
    }

    /// How a random op in `f` draws across the Hessian's columns (see
    /// [`Jacfwd::randomness`]): refused by default.
    pub fn randomness(mut self, randomness: Randomness) -> Self {
        self.randomness = randomness;
        self
    }

    /// The Hessian at `x`.
    ///
    /// Errors if `f` errs or does not return a 0-d float tensor.
    pub fn call(&self, x: &Tensor) -> Result<Tensor>
    where
        F: Fn(Tensor) -> Result<Tensor>,
    {
        let g = grad(|x: Tensor| {
            scalar_output(
                "hessian",
                (self.f)(x)?,
                "use jacfwd or jacrev for the Jacobian of a vector function",
            )
        });
        let (mut h, _) = forward_jacobian(
            "hessian",
            &|x: Tensor| Ok((g.call(&x)?, Vec::<Tensor>::new())),
            x,
            0..1,
            self.chunk_size,
            self.randomness,
        )?;
        h.pop()
            .ok_or_else(|| Error::Tensor("hessian: no Jacobian".to_string()))
    }
}
