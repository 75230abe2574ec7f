//! Jacobians, in both modes, and the Hessian: one builder, [`Jacobian`],
//! whose mode ([`Reverse`] for [`jacrev`], [`Forward`] for [`jacfwd`]) says
//! how the columns are computed; what the function may return
//! ([`JacobianOutput`]) and whether it returns aux data ([`HasAux`]); and
//! [`hessian`], the forward-mode Jacobian of the gradient.
//!
//! The modes themselves live below: `grad::jacrev` pulls the rows of the
//! identity back under one vmap, `forward::jacfwd` pushes its columns
//! forward. This module puts their blocks into the structures the user
//! asked for.
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers; in its own layer, `transform_fn`,
//! `batching`, `vmap`, `grad` and `forward`. `tests/suite/layers.rs` enforces
//! it.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use crate::forward::{forward_jacobian, scalar_output};
use crate::grad::args::{argnums_methods, selected_ranges, Selected};
/// The request [`Mode::blocks`] takes, and what it gives.
#[doc(hidden)]
pub use crate::grad::jacrev::{At, Blocks};
use crate::grad::{gradient, reverse_jacobian, Argnum, Argnums, GradArgs};
use crate::transform_fn::{self as name, OneArgument, TransformFn};
use crate::{Error, Randomness, Result, Tensor, TensorTree};

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
    /// Whether the function returns aux data (the `_with_aux` builders,
    /// whose errors name them).
    #[doc(hidden)]
    const WITH_AUX: bool;
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
    const WITH_AUX: bool = false;
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
    const WITH_AUX: bool = true;
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

/// How a [`Jacobian`] computes its blocks: [`Reverse`] (one vjp per output
/// element, [`jacrev`]) or [`Forward`] (one jvp per input element,
/// [`jacfwd`]).
pub trait Mode {
    /// The transform's name, in errors and in the compile errors of a wrong
    /// function ([`TransformFn`]).
    type Name;
    #[doc(hidden)]
    const NAME: &'static str;
    /// The name of its `_with_aux` form, in that form's errors.
    #[doc(hidden)]
    const NAME_WITH_AUX: &'static str;
    /// `f`'s output at `inner` (or its structure), for each of its leaves
    /// one block `out ++ leaf` per leaf in `ranges`, and `f`'s aux output.
    #[doc(hidden)]
    fn blocks<A: TensorTree, O: TensorTree, X: TensorTree>(
        f: &impl Fn(A) -> Result<(O, X)>,
        at: At<'_, A>,
    ) -> Blocks<O, X>;
}

/// Reverse mode: [`jacrev`].
#[derive(Debug)]
pub enum Reverse {}

/// Forward mode: [`jacfwd`].
#[derive(Debug)]
pub enum Forward {}

impl Mode for Reverse {
    type Name = name::jacrev;
    const NAME: &'static str = "jacrev";
    const NAME_WITH_AUX: &'static str = "jacrev_with_aux";
    fn blocks<A: TensorTree, O: TensorTree, X: TensorTree>(
        f: &impl Fn(A) -> Result<(O, X)>,
        at: At<'_, A>,
    ) -> Blocks<O, X> {
        // f runs once (the vmap is over the pullback): no randomness to set.
        reverse_jacobian(f, at)
    }
}

impl Mode for Forward {
    type Name = name::jacfwd;
    const NAME: &'static str = "jacfwd";
    const NAME_WITH_AUX: &'static str = "jacfwd_with_aux";
    fn blocks<A: TensorTree, O: TensorTree, X: TensorTree>(
        f: &impl Fn(A) -> Result<(O, X)>,
        at: At<'_, A>,
    ) -> Blocks<O, X> {
        forward_jacobian(f, at)
    }
}

/// What the Jacobian and Hessian builders let the caller set: the basis
/// vectors per batched pass, and how a random op draws across them.
#[derive(Clone, Copy, Debug)]
struct Knobs {
    chunk_size: Option<usize>,
    randomness: Randomness,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            chunk_size: None,
            randomness: Randomness::Error,
        }
    }
}

/// A function prepared for [`jacrev`] or [`jacfwd`] (mode `M`), or their
/// `_with_aux` forms (`H` is [`WithAux`]); `S` is the selection of arguments
/// differentiated. [`Jacrev`] and [`Jacfwd`] name it with its mode.
#[must_use = "a Jacobian builder only prepares the transform: call `.call(args)` to run it"]
pub struct Jacobian<F, A, S = Argnum<0>, M = Reverse, H = NoAux> {
    f: F,
    knobs: Knobs,
    args: PhantomData<fn(A, S, M, H)>,
}

/// The builder [`jacrev`] returns.
pub type Jacrev<F, A, S = Argnum<0>, H = NoAux> = Jacobian<F, A, S, Reverse, H>;
/// The builder [`jacfwd`] returns.
pub type Jacfwd<F, A, S = Argnum<0>, H = NoAux> = Jacobian<F, A, S, Forward, H>;
/// The builder [`jacrev_with_aux`] returns.
pub type JacrevWithAux<F, A, S = Argnum<0>> = Jacobian<F, A, S, Reverse, WithAux>;
/// The builder [`jacfwd_with_aux`] returns.
pub type JacfwdWithAux<F, A, S = Argnum<0>> = Jacobian<F, A, S, Forward, WithAux>;

impl<F: Clone, A, S, M, H> Clone for Jacobian<F, A, S, M, H> {
    fn clone(&self) -> Self {
        Jacobian {
            f: self.f.clone(),
            knobs: self.knobs,
            args: PhantomData,
        }
    }
}

impl<F, A, S: Selected, M: Mode, H> std::fmt::Debug for Jacobian<F, A, S, M, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jacobian")
            .field("mode", &M::NAME)
            .field("argnums", &S::ARGNUMS)
            .field("chunk_size", &self.knobs.chunk_size)
            .field("randomness", &self.knobs.randomness)
            .finish_non_exhaustive()
    }
}

/// A builder of mode `M` with nothing set.
fn builder<F, A, M, H>(f: F) -> Jacobian<F, A, Argnum<0>, M, H> {
    Jacobian {
        f,
        knobs: Knobs::default(),
        args: PhantomData,
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
    builder(f)
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
    builder(f)
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
    builder(f)
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
    builder(f)
}

impl<F, A, S, D: Mode, H> Jacobian<F, A, S, D, H> {
    argnums_methods!(Jacobian, D, H);

    fn retag<T>(self) -> Jacobian<F, A, T, D, H> {
        Jacobian {
            f: self.f,
            knobs: self.knobs,
            args: PhantomData,
        }
    }

    /// Computes at most `size` rows (jacrev: cotangents pulled back) or
    /// columns (jacfwd: tangents pushed forward) of the identity at a time
    /// (see [`Vmap::chunk_size`](crate::Vmap::chunk_size)), bounding the
    /// memory of the batched pass by the chunk; the Jacobian is the same.
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.knobs.chunk_size = Some(size);
        self
    }

    /// The Jacobian at `args` (with the aux output, for the `_with_aux`
    /// forms).
    ///
    /// Errors if `f` errs or returns no tensor or a non-float one, if a
    /// differentiated argument holds an integer or bool tensor, if the
    /// selection names an argument twice, or if `chunk_size` is 0.
    pub fn call<I, R, M>(&self, args: I) -> Result<JacobianOf<I, S, H, R>>
    where
        I: GradArgs<Inner = A>,
        S: Argnums<I>,
        H: HasAux<R>,
        F: TransformFn<A, R, D::Name, M>,
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
        // The errors name the builder the user called.
        let what = if K::WITH_AUX {
            D::NAME_WITH_AUX
        } else {
            D::NAME
        };
        let inner = args.inner(what)?;
        let ranges = selected_ranges::<I, T>(what, &inner)?;
        let at = At {
            what,
            inner: &inner,
            ranges: &ranges,
            chunk_size: self.knobs.chunk_size,
            randomness: self.knobs.randomness,
        };
        let (out, per_output, aux) = D::blocks(&|a| Ok(K::split(f(a)?)), at)?;
        Ok(K::with(assemble::<I, T, _>(&inner, &out, per_output)?, aux))
    }
}

impl<F, A, S, H> Jacobian<F, A, S, Forward, H> {
    /// How a random op in `f` draws across the Jacobian's columns, which
    /// jacfwd pushes through `f` as one batch (torch.func's `randomness=`):
    /// [`Randomness::Error`] (the default) refuses a random op,
    /// [`Randomness::Same`] gives every column the same draw (the Jacobian of
    /// `f` with its noise held fixed), [`Randomness::Different`] an
    /// independent draw per column. (jacrev runs `f` once and has no such
    /// setting.)
    pub fn randomness(mut self, randomness: Randomness) -> Self {
        self.knobs.randomness = randomness;
        self
    }
}

/// A function prepared for [`hessian`]; `S` is the selection of arguments
/// differentiated.
#[must_use = "`hessian(f)` only prepares the transform: call `.call(args)` to run it"]
pub struct Hessian<F, A, S = Argnum<0>> {
    f: F,
    knobs: Knobs,
    args: PhantomData<fn(A, S)>,
}

impl<F: Clone, A, S> Clone for Hessian<F, A, S> {
    fn clone(&self) -> Self {
        Hessian {
            f: self.f.clone(),
            knobs: self.knobs,
            args: PhantomData,
        }
    }
}

impl<F, A, S: Selected> std::fmt::Debug for Hessian<F, A, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hessian")
            .field("argnums", &S::ARGNUMS)
            .field("chunk_size", &self.knobs.chunk_size)
            .field("randomness", &self.knobs.randomness)
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
        knobs: Knobs::default(),
        args: PhantomData,
    }
}

impl<F, A, S> Hessian<F, A, S> {
    argnums_methods!(Hessian);

    fn retag<T>(self) -> Hessian<F, A, T> {
        Hessian {
            f: self.f,
            knobs: self.knobs,
            args: PhantomData,
        }
    }

    /// Pushes at most `size` columns forward at a time (see
    /// [`Jacobian::chunk_size`]).
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.knobs.chunk_size = Some(size);
        self
    }

    /// How a random op in `f` draws across the Hessian's columns (see
    /// [`Jacobian::randomness`]): refused by default.
    pub fn randomness(mut self, randomness: Randomness) -> Self {
        self.knobs.randomness = randomness;
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

    /// [`call`](Self::call), with the function taking `I::Inner` (as
    /// [`Jacobian::call`] does).
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
        let at = At {
            what,
            inner: &inner,
            ranges: &ranges,
            chunk_size: self.knobs.chunk_size,
            randomness: self.knobs.randomness,
        };
        let (_, per_output, _) = forward_jacobian(&gradient_leaves, at)?;
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
