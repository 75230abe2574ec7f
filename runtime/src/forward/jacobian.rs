//! Jacobians by forward mode: [`jacfwd`] is `vmap` of the jvp over the basis
//! of the input space; [`hessian`] is `jacfwd` of `grad` (forward over
//! reverse).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::Range;

use crate::core::alloc::checked_numel;
use crate::grad::args::{argnums_methods, selected_ranges, Selected};
use crate::grad::jacobian::{
    assemble, chunks, float_output, identity_blocks, no_outputs, HasAux, JacobianOf,
    JacobianOutput, NoAux, WithAux,
};
use crate::grad::{gradient, inconsistent_ranges, ops, position, Argnum, Argnums, GradArgs};
use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::vmap::join::Joiner;
use crate::{vmap, Error, Randomness, Result, Tensor, TensorTree};

use super::api::{push_forward, scalar_output};

/// A function prepared for [`jacfwd`] (or [`jacfwd_with_aux`]: `H` is
/// [`WithAux`]); `S` is the selection of arguments differentiated.
#[must_use = "`jacfwd(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Jacfwd<F, A, S = Argnum<0>, H = NoAux> {
    f: F,
    chunk_size: Option<usize>,
    randomness: Randomness,
    args: PhantomData<fn(A, S, H)>,
}

/// The builder [`jacfwd_with_aux`] returns.
pub type JacfwdWithAux<F, A, S = Argnum<0>> = Jacfwd<F, A, S, WithAux>;

impl<F: Clone, A, S, H> Clone for Jacfwd<F, A, S, H> {
    fn clone(&self) -> Self {
        Jacfwd {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }
}

impl<F, A, S: Selected, H> std::fmt::Debug for Jacfwd<F, A, S, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jacfwd")
            .field("argnums", &S::ARGNUMS)
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
/// `f` returns a float tensor of shape `out`, or several in a tuple, `Vec`,
/// array or map ([`JacobianOutput`]). For each leaf of argument 0 (another
/// with [`Jacfwd::argnums`], several with [`Jacfwd::argnums2`]) of shape
/// `in`, the Jacobian of an output is a tensor of shape `out ++ in` whose
/// entry `[i.., j..]` is `d out[i..] / d in[j..]`, in the structure of that
/// argument; with several outputs, the result has the outputs' structure.
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
pub fn jacfwd<F, A, R, M>(f: F) -> Jacfwd<F, A>
where
    F: TransformFn<A, R, name::jacfwd, M>,
    M: OneArgument<name::jacfwd>,
    R: JacobianOutput,
{
    Jacfwd {
        f,
        chunk_size: None,
        randomness: Randomness::Error,
        args: PhantomData,
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
pub fn jacfwd_with_aux<F, A, O, X, M>(f: F) -> JacfwdWithAux<F, A>
where
    F: TransformFn<A, (O, X), name::jacfwd, M>,
    M: OneArgument<name::jacfwd>,
    O: JacobianOutput,
    X: TensorTree,
{
    Jacfwd {
        f,
        chunk_size: None,
        randomness: Randomness::Error,
        args: PhantomData,
    }
}

impl<F, A, S, H> Jacfwd<F, A, S, H> {
    argnums_methods!(Jacfwd, H);

    fn retag<T>(self) -> Jacfwd<F, A, T, H> {
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

    /// The Jacobian at `args` (with the aux output, for [`jacfwd_with_aux`]).
    ///
    /// Errors if `f` errs or returns a non-float tensor, if a
    /// differentiated argument holds an integer or bool tensor, or if
    /// `chunk_size` is 0.
    pub fn call<I, R, M>(&self, args: I) -> Result<JacobianOf<I, S, H, R>>
    where
        I: GradArgs<Inner = A>,
        S: Argnums<I>,
        H: HasAux<R>,
        F: TransformFn<A, R, name::jacfwd, M>,
    {
        self.at::<I, S, H, R>(args, &|a| self.f.run(a))
    }

    /// [`call`](Self::call), with the function taking `I::Inner` (bounded by
    /// `GradArgs` to a [`TensorTree`]; `call` names it `A` for the closure's
    /// sake, and bounding `A` there too would report a non-tree argument
    /// twice).
    fn at<I: GradArgs, T: Argnums<I>, K: HasAux<R>, R>(
        &self,
        args: I,
        f: &impl Fn(I::Inner) -> Result<R>,
    ) -> Result<JacobianOf<I, T, K, R>> {
        let inner = args.inner("jacfwd")?;
        let ranges = selected_ranges::<I, T>("jacfwd", &inner)?;
        let (out, per_output, aux) = forward_jacobian(
            "jacfwd",
            &|a| Ok(K::split(f(a)?)),
            &inner,
            &ranges,
            self.chunk_size,
            self.randomness,
        )?;
        Ok(K::with(assemble::<I, T, _>(&inner, &out, per_output)?, aux))
    }
}

/// The Jacobian of `f` at `inner` with respect to the leaves in `ranges` by
/// forward mode: the structure of `f`'s output (its leaves are placeholders,
/// not its values), for each of its leaves one tensor of shape `out ++ leaf`
/// per differentiated leaf, and `f`'s aux output (that of the first chunk of
/// columns; it does not depend on them).
fn forward_jacobian<A: TensorTree, O: TensorTree, X: TensorTree>(
    what: &'static str,
    f: &impl Fn(A) -> Result<(O, X)>,
    inner: &A,
    ranges: &[Range<usize>],
    chunk_size: Option<usize>,
    randomness: Randomness,
) -> Result<(O, Vec<Vec<Tensor>>, X)> {
    let mut all = Vec::new();
    inner.leaves(&mut all);
    let mut leaves = Vec::new();
    for r in ranges {
        let part = all
            .get(r.clone())
            .ok_or_else(|| inconsistent_ranges(what, ranges, all.len()))?;
        for (k, t) in part.iter().enumerate() {
            if !t.dtype().is_float() {
                return Err(Error::Tensor(format!(
                    "{what}: input leaf {} (`{}`) has dtype {}; only floating-point inputs can be \
                     differentiated (choose another argument with argnums, or pass integer data in \
                     an argument that is not differentiated)",
                    r.start + k,
                    inner.leaf_path(r.start + k),
                    t.dtype()
                )));
            }
        }
        leaves.extend_from_slice(part);
    }
    // Column j of the identity is the tangent that is 1 at input element j
    // (counting through the selected leaves in order) and 0 elsewhere.
    let sizes: Vec<usize> = leaves
        .iter()
        .map(|t| checked_numel(t.shape()))
        .collect::<Result<_>>()?;
    let columns: usize = sizes.iter().sum();
    // The output's structure, with placeholder leaves: its values live at
    // the levels of the vmap below and may not leave it.
    let structure: RefCell<Option<O>> = RefCell::new(None);
    let mut joins: Vec<Joiner> = Vec::new();
    let mut first_aux: Option<X> = None;
    for (start, len) in chunks(what, columns, chunk_size, "column")? {
        let basis = identity_blocks(what, start, len, &leaves)?;
        let push = |tangents: Vec<Tensor>| -> Result<(Vec<Tensor>, X)> {
            let ((out, aux), pushed) = push_forward(what, f, inner, |i, _| {
                Ok(position(ranges, i).map(|p| tangents[p].clone()))
            })?;
            let mut outs = Vec::new();
            out.leaves(&mut outs);
            if outs.is_empty() {
                return Err(no_outputs(what));
            }
            let tangents = outs
                .iter()
                .zip(pushed)
                .map(|(o, t)| {
                    float_output(what, o)?;
                    match t {
                        Some(t) => Ok(t),
                        None => ops::zeros(o.shape(), o.dtype()),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let placeholder = out.map_leaves(&mut |_| Ok(Tensor::scalar(0.0f32)))?;
            structure.borrow_mut().get_or_insert(placeholder);
            Ok((tangents, aux))
        };
        // The vmap over the columns is this transform's, not the user's:
        // its errors are reported as `what`'s.
        let level = crate::dispatch::depth() + 1;
        // The aux output does not depend on the columns: out_dim None.
        let (part, aux): (Vec<Tensor>, X) = vmap(push)
            .randomness(randomness)
            .out_dims([Some(0), None])
            .call(basis)
            .map_err(|e| e.reported_by(what, level))?;
        if joins.is_empty() {
            joins = part.iter().map(|_| Joiner::new(what, 0, columns)).collect();
        }
        for (join, t) in joins.iter_mut().zip(part) {
            join.push(t, len)?;
        }
        first_aux.get_or_insert(aux);
    }
    let aux = first_aux.ok_or_else(|| Error::Tensor(format!("{what}: no chunk ran")))?;
    let out = structure
        .into_inner()
        .ok_or_else(|| Error::Tensor(format!("{what}: no chunk ran")))?;
    // Output k's Jacobian is [columns, out_k..]: each selected leaf's
    // columns, reshaped to the leaf's dims and moved after the output's.
    let per_output = joins
        .into_iter()
        .map(|join| {
            let jac = join.finish()?;
            let out_rank = jac.shape().len() - 1;
            let mut offset = 0;
            leaves
                .iter()
                .zip(&sizes)
                .map(|(t, &n)| {
                    let cols = ops::narrow0(&jac, offset, n)?;
                    offset += n;
                    let mut shape = t.shape().to_vec();
                    shape.extend_from_slice(&jac.shape()[1..]);
                    let cols = ops::reshape(&cols, &shape)?;
                    let in_rank = t.shape().len();
                    let perm: Vec<usize> =
                        (in_rank..in_rank + out_rank).chain(0..in_rank).collect();
                    ops::permute(&cols, &perm)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((out, per_output, aux))
}

/// A function prepared for [`hessian`]; `S` is the selection of arguments
/// differentiated.
#[must_use = "`hessian(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Hessian<F, A, S = Argnum<0>> {
    f: F,
    chunk_size: Option<usize>,
    randomness: Randomness,
    args: PhantomData<fn(A, S)>,
}

impl<F: Clone, A, S> Clone for Hessian<F, A, S> {
    fn clone(&self) -> Self {
        Hessian {
            f: self.f.clone(),
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }
}

impl<F, A, S: Selected> std::fmt::Debug for Hessian<F, A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hessian")
            .field("argnums", &S::ARGNUMS)
            .field("chunk_size", &self.chunk_size)
            .field("randomness", &self.randomness)
            .finish_non_exhaustive()
    }
}

/// The Hessian of a scalar function, forward over reverse (`jacfwd` of
/// `grad`, as JAX and torch.func compute it). Reverse over reverse (`jacrev`
/// of `grad`) gives the same numbers at a higher cost; for one product with
/// the Hessian use [`hvp`](crate::hvp()).
///
/// For argument 0 (another with [`Hessian::argnums`]) a tensor `x` of shape
/// `s`, the Hessian is a tensor of shape `s ++ s`. For a tuple, `Vec` or map
/// of tensors, or several arguments ([`Hessian::argnums2`]), it is nested
/// as torch.func nests it: block `[i][j]` is `d² f / d x_i d x_j`, of shape
/// `s_i ++ s_j`.
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
///
/// // sum(x * y) in both arguments: zero diagonal blocks, identity across.
/// let y = Tensor::from(array![3.0f64, 4.0].into_dyn());
/// let ((hxx, hxy), (hyx, hyy)) =
///     hessian(|(x, y): (Tensor, Tensor)| ops::sum(&ops::mul(&x, &y)?, None, false))
///         .argnums2::<0, 1>()
///         .call((&x, &y))?;
/// assert_eq!(hxy.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![1.0, 0.0, 0.0, 1.0]);
/// assert_eq!(hxx.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![0.0; 4]);
/// assert_eq!(hyx.shape(), hyy.shape());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn hessian<F, A, M>(f: F) -> Hessian<F, A>
where
    F: TransformFn<A, Tensor, name::hessian, M>,
    M: OneArgument<name::hessian>,
{
    Hessian {
        f,
        chunk_size: None,
        randomness: Randomness::Error,
        args: PhantomData,
    }
}

impl<F, A, S> Hessian<F, A, S> {
    argnums_methods!(Hessian);

    fn retag<T>(self) -> Hessian<F, A, T> {
        Hessian {
            f: self.f,
            chunk_size: self.chunk_size,
            randomness: self.randomness,
            args: PhantomData,
        }
    }

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

    /// The Hessian at `args`: for a selection of type `T` (the argument's
    /// type, or a tuple of them), a `T::Jacobian<T>` ([`JacobianOutput`]).
    ///
    /// Errors if `f` errs or does not return a 0-d float tensor, or if a
    /// differentiated argument holds an integer or bool tensor.
    pub fn call<I, M>(&self, args: I) -> Result<<S::Out as JacobianOutput>::Jacobian<S::Out>>
    where
        I: GradArgs<Inner = A>,
        S: Argnums<I>,
        S::Out: JacobianOutput,
        F: TransformFn<A, Tensor, name::hessian, M>,
    {
        self.at::<I, S>(args, &|a| self.f.run(a))
    }

    /// [`call`](Self::call), as [`Jacfwd::at`].
    fn at<I: GradArgs, T: Argnums<I>>(
        &self,
        args: I,
        f: &impl Fn(I::Inner) -> Result<Tensor>,
    ) -> Result<<T::Out as JacobianOutput>::Jacobian<T::Out>>
    where
        T::Out: JacobianOutput,
    {
        let what = "hessian";
        let inner = args.inner(what)?;
        let ranges = selected_ranges::<I, T>(what, &inner)?;
        let instead = "use jacfwd or jacrev for the Jacobian of a vector function";
        let gradient_leaves = |a: I::Inner| -> Result<(Vec<Tensor>, Vec<Tensor>)> {
            let f = |a| scalar_output(what, f(a)?, instead);
            let (_, (), g) = gradient::<_, Tensor>(what, f, &a, &ranges)?;
            Ok((g, Vec::new()))
        };
        let (_, per_output, _) = forward_jacobian(
            what,
            &gradient_leaves,
            &inner,
            &ranges,
            self.chunk_size,
            self.randomness,
        )?;
        // The gradient has the selection's structure, and so has each row of
        // blocks: the selected leaves themselves serve as its template.
        let mut all = Vec::new();
        inner.leaves(&mut all);
        let selected = ranges
            .iter()
            .flat_map(|r| all[r.clone()].to_vec())
            .collect();
        let template = T::build(&inner, selected)?;
        assemble::<I, T, _>(&inner, &template, per_output)
    }
}
