//! Jacobians by reverse mode: [`jacrev`] is `vmap` of the pullback over the
//! basis of the output space. The pieces both modes share live here too:
//! [`JacobianOutput`] (what a Jacobian's function may return), the `has_aux`
//! forms ([`HasAux`]), the chunks of an identity and its blocks.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::ops::Range;

use crate::core::alloc::{check_alloc_in, checked_numel};
use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::vmap::join::Joiner;
use crate::{vmap, DType, Error, Result, Tensor, TensorTree};

use super::api::{outputs_of, primal, trace};
use super::args::{argnums_methods, selected_ranges, Argnum, Argnums, GradArgs, Selected};
use super::ops;

/// What the function given to [`jacrev`], [`jacfwd`](crate::jacfwd()) or
/// [`hessian`](crate::hessian()) returns: a [`Tensor`], or a tuple, `Vec`,
/// array or `BTreeMap<String, _>` of them, nested to any depth (torch.func's
/// several outputs and trees of outputs). The Jacobian has the same
/// structure, [`Jacobian<J>`](Self::Jacobian), with each output tensor
/// replaced by its Jacobian `J` (itself in the structure of the
/// differentiated arguments).
///
/// A `#[derive(TensorTree)]` struct is not an output here (its Jacobian would
/// need a struct of another type); return its fields as a tuple instead.
///
/// ```
/// use batchrules::{jacrev, ops, Tensor};
/// use ndarray::array;
///
/// let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
/// // Two outputs: the Jacobian is a pair, one per output.
/// let (ja, jb) = jacrev(|x: Tensor| Ok((ops::sin(&x)?, ops::sum(&x, None, false)?))).call(&x)?;
/// assert_eq!(ja.shape(), &[2, 2]);
/// assert_eq!(jb.shape(), &[2]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub trait JacobianOutput: TensorTree {
    /// This output's structure with each tensor replaced by a `J`.
    type Jacobian<J>;
    /// Puts one `J` per leaf of `self` (in the order of
    /// [`TensorTree::leaves`]) into this structure.
    #[doc(hidden)]
    fn assemble<J>(&self, parts: &mut std::vec::IntoIter<J>) -> Result<Self::Jacobian<J>>;
}

impl JacobianOutput for Tensor {
    type Jacobian<J> = J;
    fn assemble<J>(&self, parts: &mut std::vec::IntoIter<J>) -> Result<J> {
        parts
            .next()
            .ok_or_else(|| Error::Tensor("jacobian: fewer Jacobians than outputs".to_string()))
    }
}

impl<T: JacobianOutput> JacobianOutput for Vec<T> {
    type Jacobian<J> = Vec<T::Jacobian<J>>;
    fn assemble<J>(&self, parts: &mut std::vec::IntoIter<J>) -> Result<Self::Jacobian<J>> {
        self.iter().map(|t| t.assemble(parts)).collect()
    }
}

impl<T: JacobianOutput, const K: usize> JacobianOutput for [T; K] {
    type Jacobian<J> = [T::Jacobian<J>; K];
    fn assemble<J>(&self, parts: &mut std::vec::IntoIter<J>) -> Result<Self::Jacobian<J>> {
        let v = self
            .iter()
            .map(|t| t.assemble(parts))
            .collect::<Result<Vec<_>>>()?;
        v.try_into()
            .map_err(|_| Error::Tensor(format!("jacobian: rebuilding an array of {K} outputs")))
    }
}

impl<T: JacobianOutput> JacobianOutput for BTreeMap<String, T> {
    type Jacobian<J> = BTreeMap<String, T::Jacobian<J>>;
    fn assemble<J>(&self, parts: &mut std::vec::IntoIter<J>) -> Result<Self::Jacobian<J>> {
        self.iter()
            .map(|(k, t)| Ok((k.clone(), t.assemble(parts)?)))
            .collect()
    }
}

macro_rules! tuple_output {
    ($($t:ident $i:tt),+) => {
        impl<$($t: JacobianOutput),+> JacobianOutput for ($($t,)+) {
            type Jacobian<J> = ($($t::Jacobian<J>,)+);
            fn assemble<J>(&self, parts: &mut std::vec::IntoIter<J>) -> Result<Self::Jacobian<J>> {
                Ok(($(self.$i.assemble(parts)?,)+))
            }
        }
    };
}
tuple_output!(A 0);
tuple_output!(A 0, B 1);
tuple_output!(A 0, B 1, C 2);
tuple_output!(A 0, B 1, C 2, D 3);

/// Whether a Jacobian's function returns auxiliary data: [`NoAux`] (it
/// returns a [`JacobianOutput`]) or [`WithAux`] (it returns `(output, aux)`,
/// torch.func's `has_aux=True`; the aux is carried out undifferentiated).
pub trait HasAux<R> {
    /// The differentiated part of `R`.
    type Output: JacobianOutput;
    /// The auxiliary part (an empty list without aux).
    type Aux: TensorTree;
    /// What `call` returns, given the Jacobian `J`: `J`, or `(J, aux)`.
    type With<J>;
    #[doc(hidden)]
    fn split(r: R) -> (Self::Output, Self::Aux);
    #[doc(hidden)]
    fn with<J>(jacobian: J, aux: Self::Aux) -> Self::With<J>;
}

/// The function returns its output only (see [`HasAux`]).
#[derive(Debug)]
pub enum NoAux {}

/// The function returns `(output, aux)` (see [`HasAux`]).
#[derive(Debug)]
pub enum WithAux {}

impl<O: JacobianOutput> HasAux<O> for NoAux {
    type Output = O;
    type Aux = Vec<Tensor>;
    type With<J> = J;
    fn split(r: O) -> (O, Vec<Tensor>) {
        (r, Vec::new())
    }
    fn with<J>(jacobian: J, _: Vec<Tensor>) -> J {
        jacobian
    }
}

impl<O: JacobianOutput, X: TensorTree> HasAux<(O, X)> for WithAux {
    type Output = O;
    type Aux = X;
    type With<J> = (J, X);
    fn split(r: (O, X)) -> (O, X) {
        r
    }
    fn with<J>(jacobian: J, aux: X) -> (J, X) {
        (jacobian, aux)
    }
}

/// What a Jacobian builder's `call` returns for arguments `I` and a function
/// returning `R`.
pub type JacobianOf<I, S, H, R> = <H as HasAux<R>>::With<
    <<H as HasAux<R>>::Output as JacobianOutput>::Jacobian<<S as Argnums<I>>::Out>,
>;

/// Puts the Jacobians of each (output leaf, selected input leaf) pair into
/// the output's structure, each one in the structure of the selection.
pub(crate) fn assemble<I: GradArgs, S: Argnums<I>, O: JacobianOutput>(
    inner: &I::Inner,
    output: &O,
    per_output: Vec<Vec<Tensor>>,
) -> Result<O::Jacobian<S::Out>> {
    let parts = per_output
        .into_iter()
        .map(|leaves| S::build(inner, leaves))
        .collect::<Result<Vec<_>>>()?;
    output.assemble(&mut parts.into_iter())
}

/// A function prepared for [`jacrev`] (or [`jacrev_with_aux`]: `H` is
/// [`WithAux`]); `S` is the selection of arguments differentiated.
#[must_use = "`jacrev(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Jacrev<F, A, S = Argnum<0>, H = NoAux> {
    f: F,
    chunk_size: Option<usize>,
    args: PhantomData<fn(A, S, H)>,
}

/// The builder [`jacrev_with_aux`] returns.
pub type JacrevWithAux<F, A, S = Argnum<0>> = Jacrev<F, A, S, WithAux>;

impl<F: Clone, A, S, H> Clone for Jacrev<F, A, S, H> {
    fn clone(&self) -> Self {
        Jacrev {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            args: PhantomData,
        }
    }
}

impl<F, A, S: Selected, H> std::fmt::Debug for Jacrev<F, A, S, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jacrev")
            .field("argnums", &S::ARGNUMS)
            .field("chunk_size", &self.chunk_size)
            .finish_non_exhaustive()
    }
}

/// The Jacobian of `f` by reverse mode: the pullback of `f`, vmapped over
/// the rows of the identity of the output space.
///
/// `f` returns a float tensor of shape `out`, or several in a tuple, `Vec`,
/// array or map ([`JacobianOutput`]). For each leaf of argument 0 (another
/// with [`Jacrev::argnums`], several with [`Jacrev::argnums2`]) of shape
/// `in`, the Jacobian of an output is a tensor of shape `out ++ in` whose
/// entry `[i.., j..]` is `d out[i..] / d in[j..]`, in the structure of that
/// argument; with several outputs, the result has the outputs' structure.
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
///
/// // With respect to both arguments of x * y: the pair (diag(y), diag(x)).
/// let y = Tensor::from(array![5.0f64, 7.0].into_dyn());
/// let (jx, jy) = jacrev(|(x, y): (Tensor, Tensor)| ops::mul(&x, &y))
///     .argnums2::<0, 1>()
///     .call((&x, &y))?;
/// assert_eq!(jx.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![5.0, 0.0, 0.0, 7.0]);
/// assert_eq!(jy.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![1.0, 0.0, 0.0, 3.0]);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn jacrev<F, A, R, M>(f: F) -> Jacrev<F, A>
where
    F: TransformFn<A, R, name::jacrev, M>,
    M: OneArgument<name::jacrev>,
    R: JacobianOutput,
{
    Jacrev {
        f,
        chunk_size: None,
        args: PhantomData,
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
pub fn jacrev_with_aux<F, A, O, X, M>(f: F) -> JacrevWithAux<F, A>
where
    F: TransformFn<A, (O, X), name::jacrev, M>,
    M: OneArgument<name::jacrev>,
    O: JacobianOutput,
    X: TensorTree,
{
    Jacrev {
        f,
        chunk_size: None,
        args: PhantomData,
    }
}

impl<F, A, S, H> Jacrev<F, A, S, H> {
    argnums_methods!(Jacrev, H);

    fn retag<T>(self) -> Jacrev<F, A, T, H> {
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

    /// The Jacobian at `args` (with the aux output, for [`jacrev_with_aux`]).
    ///
    /// Errors if `f` errs, returns a non-float tensor, or a differentiated
    /// argument holds an integer or bool tensor.
    pub fn call<I, R, M>(&self, args: I) -> Result<JacobianOf<I, S, H, R>>
    where
        I: GradArgs<Inner = A>,
        S: Argnums<I>,
        H: HasAux<R>,
        F: TransformFn<A, R, name::jacrev, M>,
    {
        jacrev_at::<I, S, H, R>(args, |a| self.f.run(a), self.chunk_size)
    }
}

/// [`Jacrev::call`], with its function taking `I::Inner` (bounded by
/// `GradArgs` to a [`TensorTree`]; `call` names it `A` for the closure's
/// sake, and bounding `A` there too would report a non-tree argument twice).
fn jacrev_at<I: GradArgs, S: Argnums<I>, H: HasAux<R>, R>(
    args: I,
    f: impl FnOnce(I::Inner) -> Result<R>,
    chunk_size: Option<usize>,
) -> Result<JacobianOf<I, S, H, R>> {
    let inner = args.inner("jacrev")?;
    let ranges = selected_ranges::<I, S>("jacrev", &inner)?;
    let (out, per_output, aux) = jacobian(
        "jacrev",
        |a| Ok(H::split(f(a)?)),
        &inner,
        &ranges,
        chunk_size,
    )?;
    Ok(H::with(assemble::<I, S, _>(&inner, &out, per_output)?, aux))
}

/// The Jacobian of `f` at `inner` with respect to the leaves in `ranges`:
/// `f`'s output (one level down), for each of its leaves one tensor of shape
/// `out ++ leaf` per differentiated leaf, and `f`'s aux output (unwrapped).
pub(crate) fn jacobian<A: TensorTree, O: TensorTree, X: TensorTree>(
    what: &'static str,
    f: impl FnOnce(A) -> Result<(O, X)>,
    inner: &A,
    ranges: &[Range<usize>],
    chunk_size: Option<usize>,
) -> Result<(O, Vec<Vec<Tensor>>, X)> {
    let ((out, aux), pullback) = trace(what, f, inner, ranges, true, |(o, x): (O, X), level| {
        let (outs, roots, o) = outputs_of(o, level)?;
        let x = x.map_leaves(&mut |t| primal(t, level).map(|(t, _)| t))?;
        Ok((outs, roots, (o, x)))
    })?;
    let mut outs = Vec::new();
    out.leaves(&mut outs);
    if outs.is_empty() {
        return Err(no_outputs(what));
    }
    for t in &outs {
        float_output(what, t)?;
    }
    let sizes: Vec<usize> = outs
        .iter()
        .map(|t| checked_numel(t.shape()))
        .collect::<Result<_>>()?;
    let rows: usize = sizes.iter().sum();
    // Rows of the identity of the outputs' space, a chunk at a time (all at
    // once by default), each batch of rows pulled back under one vmap; the
    // rows are built per chunk, so a chunk bounds the memory of the basis.
    let mut joins: Vec<Joiner> = Vec::new();
    for (start, len) in chunks(what, rows, chunk_size, "row")? {
        let basis = identity_blocks(what, start, len, &outs)?;
        // The vmap over the rows is this transform's, not the user's: its
        // errors are reported as `what`'s.
        let level = crate::dispatch::depth() + 1;
        let part = vmap(|cts: Vec<Tensor>| pullback.call(what, &cts))
            .call(basis)
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
    // grads[j] is [rows, leaf_j..]: output k's rows, reshaped to its dims.
    let mut offset = 0;
    let mut per_output = Vec::with_capacity(outs.len());
    for (o, &n) in outs.iter().zip(&sizes) {
        let jac = grads
            .iter()
            .map(|g| {
                let block = ops::narrow0(g, offset, n)?;
                let mut shape = o.shape().to_vec();
                shape.extend_from_slice(&g.shape()[1..]);
                ops::reshape(&block, &shape)
            })
            .collect::<Result<_>>()?;
        per_output.push(jac);
        offset += n;
    }
    Ok((out, per_output, aux))
}

/// The error for a function whose output has no tensor (an empty `Vec`).
pub(crate) fn no_outputs(what: &str) -> Error {
    Error::Tensor(format!(
        "{what}: the function returned no tensor; a Jacobian needs at least one output tensor"
    ))
}

/// Errs unless `t`, an output being differentiated, has a float dtype.
pub(crate) fn float_output(what: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::Tensor(format!(
            "{what}: the function returned a {} tensor; only floating-point outputs can be differentiated",
            t.dtype()
        )))
    }
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

/// Rows `start..start + len` of the identity of the space of `leaves` (their
/// elements counted through the leaves in order), as one block per leaf:
/// `[len, leaf..]`, 1 where the row is one of the leaf's elements.
pub(crate) fn identity_blocks(
    what: &str,
    start: usize,
    len: usize,
    leaves: &[Tensor],
) -> Result<Vec<Tensor>> {
    let mut offset = 0;
    leaves
        .iter()
        .map(|t| {
            let block = identity_block(what, start, len, offset, t.shape(), t.dtype());
            offset += checked_numel(t.shape())?;
            block
        })
        .collect()
}

/// Rows `start..start + len` of the identity, restricted to one leaf of
/// shape `shape` whose elements are rows `offset..offset + numel`.
fn identity_block(
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
    let one_at = |row: usize| {
        let col = start + row;
        (offset..offset + numel)
            .contains(&col)
            .then(|| row * numel + col - offset)
    };
    match dtype {
        DType::F32 => Tensor::from_shape_vec(&full, unit_rows(len, numel, one_at, 1.0f32)),
        DType::F64 => Tensor::from_shape_vec(&full, unit_rows(len, numel, one_at, 1.0f64)),
        other => Err(Error::Tensor(format!(
            "{what}: a {other} tensor cannot be differentiated"
        ))),
    }
}

/// `len` rows of `numel` zeros, with a one where `one_at(row)` says.
fn unit_rows<T: Copy + Default + crate::core::buffers::Cached>(
    len: usize,
    numel: usize,
    one_at: impl Fn(usize) -> Option<usize>,
    one: T,
) -> Vec<T> {
    let mut v = crate::core::buffers::filled(len * numel, T::default());
    for i in (0..len).filter_map(one_at) {
        v[i] = one;
    }
    v
}
