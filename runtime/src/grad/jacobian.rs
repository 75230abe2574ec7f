//! Jacobians by reverse mode: [`jacrev`] is `vmap` of the pullback over the
//! basis of the output space.

use std::marker::PhantomData;

use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::vmap::join::Joiner;
use crate::{vmap, DType, Error, Result, Tensor, TensorTree};

use super::api::{primal, trace, ArgAt};
use super::ops;

/// A function prepared for [`jacrev`]; `N` is the argument differentiated.
#[must_use = "`jacrev(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Jacrev<F, A, const N: usize = 0> {
    f: F,
    chunk_size: Option<usize>,
    args: PhantomData<fn(A)>,
}

impl<F: Clone, A, const N: usize> Clone for Jacrev<F, A, N> {
    fn clone(&self) -> Self {
        Jacrev {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            args: PhantomData,
        }
    }
}

impl<F, A, const N: usize> std::fmt::Debug for Jacrev<F, A, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jacrev")
            .field("argnum", &N)
            .finish_non_exhaustive()
    }
}

/// The Jacobian of `f` by reverse mode: the pullback of `f`, vmapped over
/// the rows of the identity of the output space.
///
/// `f` returns one float tensor of shape `out`; for each leaf of argument `N`
/// (0 by default, see [`Jacrev::argnums`]) of shape `in`, the result holds a
/// tensor of shape `out ++ in` whose entry `[i.., j..]` is `d out[i..] / d
/// in[j..]`, in the structure of that argument.
///
/// ```
/// use batchrules::{jacrev, ops, Tensor};
/// use ndarray::array;
///
/// // f(x) = x * x has Jacobian diag(2x).
/// let x = Tensor::from(array![1.0f64, 3.0].into_dyn());
/// let j = jacrev(|x: Tensor| ops::mul(&x, &x)).call(&x)?;
/// assert_eq!(j.shape(), &[2, 2]);
/// assert_eq!(j.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![2.0, 0.0, 0.0, 6.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn jacrev<F, A, M>(f: F) -> Jacrev<F, A, 0>
where
    F: TransformFn<A, Tensor, name::jacrev, M>,
    M: OneArgument<name::jacrev>,
{
    Jacrev {
        f,
        chunk_size: None,
        args: PhantomData,
    }
}

impl<F, A, const N: usize> Jacrev<F, A, N> {
    /// Differentiates argument `M` instead (see [`Grad::argnums`](crate::Grad::argnums)).
    pub fn argnums<const M: usize>(self) -> Jacrev<F, A, M> {
        Jacrev {
            f: self.f,
            chunk_size: self.chunk_size,
            args: PhantomData,
        }
    }

    /// Pulls back at most `size` rows of the identity at a time (see
    /// [`Vmap::chunk_size`](crate::Vmap::chunk_size)), bounding the memory of
    /// the batched pullback by the chunk; the Jacobian is the same.
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = Some(size);
        self
    }

    /// The Jacobian at `args`.
    ///
    /// Errors if `f` errs, returns a non-float tensor, or the differentiated
    /// argument holds an integer or bool tensor.
    pub fn call<I, M>(&self, args: I) -> Result<I::Out>
    where
        I: ArgAt<N, Inner = A>,
        F: TransformFn<A, Tensor, name::jacrev, M>,
    {
        jacrev_at(args, |a| self.f.run(a), self.chunk_size)
    }
}

/// [`Jacrev::call`], with its function `f` taking `I::Inner` (bounded by
/// `ArgAt` to a [`TensorTree`]; `call` names it `A` for the closure's sake,
/// and bounding `A` there too would report a non-tree argument twice).
fn jacrev_at<I: ArgAt<N>, const N: usize>(
    args: I,
    f: impl FnOnce(I::Inner) -> Result<Tensor>,
    chunk_size: Option<usize>,
) -> Result<I::Out> {
    let inner = args.inner("jacrev")?;
    let range = I::leaf_range(&inner);
    // No aux: an empty list of tensors.
    let (leaves, _) = jacobian(
        "jacrev",
        |a| Ok((f(a)?, Vec::<Tensor>::new())),
        &inner,
        range,
        chunk_size,
    )?;
    I::arg(&inner).with_leaves(leaves)
}

/// A function prepared for [`jacrev_with_aux`]; `N` is the argument
/// differentiated.
#[must_use = "`jacrev_with_aux(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct JacrevWithAux<F, A, const N: usize = 0> {
    f: F,
    chunk_size: Option<usize>,
    args: PhantomData<fn(A)>,
}

impl<F: Clone, A, const N: usize> Clone for JacrevWithAux<F, A, N> {
    fn clone(&self) -> Self {
        JacrevWithAux {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            args: PhantomData,
        }
    }
}

impl<F, A, const N: usize> std::fmt::Debug for JacrevWithAux<F, A, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JacrevWithAux")
            .field("argnum", &N)
            .field("chunk_size", &self.chunk_size)
            .finish_non_exhaustive()
    }
}

/// [`jacrev`] of a function that also returns auxiliary data (torch.func's
/// `jacrev(f, has_aux=True)`): `f` returns `(output, aux)`, and `call` returns
/// `(jacobian, aux)`. `aux` (any tree of tensors) is computed once, carried
/// out undifferentiated and unwrapped from this transform's level.
///
/// ```
/// use batchrules::{jacrev_with_aux, ops, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![1.0f64, 3.0].into_dyn());
/// let (j, aux) = jacrev_with_aux(|x: Tensor| {
///     let y = ops::mul(&x, &x)?;
///     Ok((y.clone(), ops::sum(&y, None, false)?))
/// })
/// .call(&x)?;
/// assert_eq!(j.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![2.0, 0.0, 0.0, 6.0]);
/// assert_eq!(aux.to_array::<f64>()?[[]], 10.0);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn jacrev_with_aux<F, A, X, M>(f: F) -> JacrevWithAux<F, A, 0>
where
    F: TransformFn<A, (Tensor, X), name::jacrev, M>,
    M: OneArgument<name::jacrev>,
    X: TensorTree,
{
    JacrevWithAux {
        f,
        chunk_size: None,
        args: PhantomData,
    }
}

impl<F, A, const N: usize> JacrevWithAux<F, A, N> {
    /// Differentiates argument `M` instead (see [`Grad::argnums`](crate::Grad::argnums)).
    pub fn argnums<const M: usize>(self) -> JacrevWithAux<F, A, M> {
        JacrevWithAux {
            f: self.f,
            chunk_size: self.chunk_size,
            args: PhantomData,
        }
    }

    /// Pulls back at most `size` rows at a time (see [`Jacrev::chunk_size`]).
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = Some(size);
        self
    }

    /// The Jacobian at `args`, and the aux output. Errors as [`Jacrev::call`].
    pub fn call<I, X, M>(&self, args: I) -> Result<(I::Out, X)>
    where
        I: ArgAt<N, Inner = A>,
        X: TensorTree,
        F: TransformFn<A, (Tensor, X), name::jacrev, M>,
    {
        jacrev_aux_at(args, |a| self.f.run(a), self.chunk_size)
    }
}

/// [`JacrevWithAux::call`], as [`jacrev_at`].
fn jacrev_aux_at<I: ArgAt<N>, X: TensorTree, const N: usize>(
    args: I,
    f: impl FnOnce(I::Inner) -> Result<(Tensor, X)>,
    chunk_size: Option<usize>,
) -> Result<(I::Out, X)> {
    let inner = args.inner("jacrev")?;
    let range = I::leaf_range(&inner);
    let (leaves, aux) = jacobian("jacrev", f, &inner, range, chunk_size)?;
    Ok((I::arg(&inner).with_leaves(leaves)?, aux))
}

/// The Jacobian of `f` at `inner` with respect to the leaves in `range`, one
/// tensor of shape `out ++ leaf` per leaf, and `f`'s aux output (unwrapped).
fn jacobian<A: TensorTree, X: TensorTree>(
    what: &'static str,
    f: impl FnOnce(A) -> Result<(Tensor, X)>,
    inner: &A,
    range: std::ops::Range<usize>,
    chunk_size: Option<usize>,
) -> Result<(Vec<Tensor>, X)> {
    let ((out, aux), pullback) =
        trace(what, f, inner, range, true, |(o, x): (Tensor, X), level| {
            let (p, root) = primal(&o, level)?;
            let x = x.map_leaves(&mut |t| primal(t, level).map(|(t, _)| t))?;
            Ok((vec![p.clone()], vec![root], (p, x)))
        })?;
    let dtype = out.dtype();
    let out_shape = out.shape().to_vec();
    let rows = crate::core::alloc::checked_numel(&out_shape)?;
    // Rows of the identity, a chunk at a time (all at once by default), each
    // batch of rows pulled back under one vmap; the rows are built per chunk,
    // so a chunk bounds the memory of the basis too.
    let mut joins: Vec<Joiner> = Vec::new();
    for (start, len) in chunks(what, rows, chunk_size, "row")? {
        let basis = identity_rows(what, start, len, rows, &out_shape, dtype)?;
        // The vmap over the rows is this transform's, not the user's: its
        // errors are reported as `what`'s.
        let level = crate::dispatch::depth() + 1;
        let part = vmap(|ct: Tensor| pullback.call(what, &[ct]))
            .call(&basis)
            .map_err(|e| e.reported_by(what, level))?;
        if joins.is_empty() {
            joins = part.iter().map(|_| Joiner::new(what, 0, rows)).collect();
        }
        for (join, g) in joins.iter_mut().zip(part) {
            join.push(g, len)?;
        }
    }
    let grads: Vec<Tensor> = joins
        .into_iter()
        .map(Joiner::finish)
        .collect::<Result<_>>()?;
    let jac = grads
        .iter()
        .map(|g| {
            // g is [rows, leaf..]: split the rows back into the output's dims.
            let mut shape = out_shape.clone();
            shape.extend_from_slice(&g.shape()[1..]);
            ops::reshape(g, &shape)
        })
        .collect::<Result<_>>()?;
    Ok((jac, aux))
}

/// The chunks `(start, len)` of `total` rows (or columns) of an identity,
/// `chunk_size` at a time, all at once by default: at least one chunk, of
/// length 0 when `total` is 0. Errs on a chunk size of 0.
pub(crate) fn chunks(
    what: &str,
    total: usize,
    chunk_size: Option<usize>,
    unit: &str,
) -> Result<Vec<(usize, usize)>> {
    let chunk = match chunk_size {
        Some(0) => {
            return Err(Error::Tensor(format!(
                "{what}: chunk_size(0): a chunk must hold at least one {unit}"
            )))
        }
        Some(c) => c.min(total.max(1)),
        None => total.max(1),
    };
    Ok((0..total.max(1))
        .step_by(chunk)
        .map(|start| (start, chunk.min(total - start.min(total))))
        .collect())
}

/// Rows `start..start + len` of the identity of a space of shape `shape`
/// (which has `rows` elements): `[len, shape..]`.
fn identity_rows(
    what: &str,
    start: usize,
    len: usize,
    rows: usize,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let mut full = vec![len];
    full.extend_from_slice(shape);
    crate::core::alloc::check_alloc_in(what, &full, dtype)?;
    match dtype {
        DType::F32 => Tensor::from_shape_vec(&full, unit_rows(start, len, rows, 1.0f32)),
        DType::F64 => Tensor::from_shape_vec(&full, unit_rows(start, len, rows, 1.0f64)),
        other => Err(Error::Tensor(format!(
            "{what}: the function returned a {other} tensor; only floating-point outputs can be differentiated"
        ))),
    }
}

/// Rows `start..start + len` of the `rows` x `rows` identity, row-major.
fn unit_rows<T: Copy + Default + crate::core::buffers::Cached>(
    start: usize,
    len: usize,
    rows: usize,
    one: T,
) -> Vec<T> {
    let mut v = crate::core::buffers::filled(len * rows, T::default());
    for i in 0..len {
        v[i * rows + start + i] = one;
    }
    v
}
