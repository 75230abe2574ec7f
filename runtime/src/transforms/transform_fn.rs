//! The functions a transform runs, and the compile errors for the wrong
//! ones.
//!
//! Every transform (`vmap`, `grad`, `jacrev`, `jvp`, ...) runs a function of
//! **one** argument that returns [`Result`]: several inputs reach it as one
//! tuple, `|(x, w): (Tensor, Tensor)| ...` called with `.call((&x, &w))`, as in
//! JAX and torch.func, so that `in_dims` and `argnums` can count them.
//!
//! The transforms ask for that through [`TransformFn`] (and [`TransformFnOnce`]
//! for `vjp` and `jvp`, which run the function once) instead of a plain
//! `Fn(A) -> Result<O>` bound, so that the first mistake most users make, a
//! closure of two arguments `|x: Tensor, w: Tensor|`, fails to compile with a
//! message that says what to write instead, rather than rustc's "expected
//! closure that takes 1 argument":
//!
//! * the traits are implemented for closures (and functions) of one to four
//!   arguments, each arity marked by a type ([`One`], [`Several<N>`]), so
//!   rustc picks the impl of the closure's arity instead of reporting a
//!   signature mismatch;
//! * the transforms' constructors then require the arity to be [`One`]
//!   ([`OneArgument`]), whose `#[diagnostic::on_unimplemented]` message names
//!   the transform (one of the uninhabited types below, such as [`vmap`]) and
//!   shows the tuple form;
//! * a closure that does not return [`Result`] matches no impl, and
//!   [`TransformFn`]'s own message says so.
//!
//! None of these need to be named by users: every `Fn(A) -> Result<O>`
//! implements them. A closure's parameter types are inferred from what
//! `.call` is given or from the ops the closure calls, but only once the
//! closure has been checked: to call a method on a parameter (`x.shape()`),
//! give it a type (`|x: Tensor|`), as `vmap` and `grad` always needed (their
//! function is given before their arguments).
//!
//! ```
//! use batchrules::{grad, ops, Tensor};
//! use ndarray::array;
//!
//! let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
//! let w = Tensor::from(array![3.0f64, 4.0].into_dyn());
//! // Two inputs: one tuple argument, destructured in the closure's pattern.
//! let gx = grad(|(x, w): (Tensor, Tensor)| ops::sum(&ops::mul(&x, &w)?, None, false))
//!     .call((&x, &w))?;
//! assert_eq!(gx.to_array::<f64>()?.into_raw_vec_and_offset().0, vec![3.0, 4.0]);
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! while `grad(|x: Tensor, w: Tensor| ...)` fails with
//!
//! ```text
//! error[E0277]: `grad` takes a function of ONE argument: several inputs go in one tuple
//! ```
//!
//! In the `transforms` layer (`runtime/src/transforms/`). It may use the
//! `core`, `table` and `dispatch` layers. `tests/suite/layers.rs` enforces it.

#![allow(non_camel_case_types)]

use crate::Result;

/// The arity of a function of one argument: the only one the transforms'
/// constructors accept (see [`OneArgument`]).
#[derive(Debug)]
pub enum One {}

/// The arity of a function of `N` arguments (2 to 4): [`TransformFn`] is
/// implemented for them only so that the transforms can refuse them with a
/// message (see the [module docs](self)).
#[derive(Debug)]
pub enum Several<const N: usize> {}

/// A function a transform can run any number of times: implemented for every
/// `F: Fn(A) -> Result<O>` (arity [`One`]), and for closures of 2 to 4
/// arguments, with `A` the tuple of their arguments (arity [`Several`]),
/// which the transforms' constructors refuse (see [`OneArgument`]). `T` names
/// the transform in the compile error of a function that is none of these
/// (one that does not return [`Result`]).
///
/// ```
/// use batchrules::transform_fn::{vmap, One, TransformFn};
/// use batchrules::{ops, Tensor};
///
/// fn double(x: Tensor) -> batchrules::Result<Tensor> {
///     ops::add(&x, &x)
/// }
/// let y = TransformFn::<Tensor, Tensor, vmap, One>::run(&double, Tensor::scalar(2.0f64))?;
/// assert_eq!(y.to_array::<f64>()?[[]], 4.0);
/// # Ok::<(), batchrules::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{T}` takes a function of one argument that returns `batchrules::Result<_>`",
    label = "not `Fn(_) -> batchrules::Result<_>`",
    note = "the function gets everything `.call(...)` is given as ONE argument, and returns `batchrules::Result<_>` (`Ok(...)`, or the result of an op, with `?` on the ops inside)",
    note = "several inputs go in one tuple: write `|(x, w): (Tensor, Tensor)| ...` and call `.call((&x, &w))`"
)]
pub trait TransformFn<A, O, T, Arity> {
    /// Calls the function with `args` (spread over the parameters of a
    /// closure of several arguments).
    fn run(&self, args: A) -> Result<O>;
}

/// A function a transform runs once (`vjp`,
/// `jvp`): implemented for every `F: FnOnce(A) -> Result<O>`,
/// and for closures of 2 to 4 arguments as [`TransformFn`] is.
///
/// ```
/// use batchrules::transform_fn::{jvp, One, TransformFnOnce};
/// use batchrules::{ops, Tensor};
///
/// let x = Tensor::scalar(2.0f64);
/// let add_x = move |y: Tensor| ops::add(&x, &y); // moves x: FnOnce is enough
/// let z = TransformFnOnce::<Tensor, Tensor, jvp, One>::run_once(add_x, Tensor::scalar(1.0f64))?;
/// assert_eq!(z.to_array::<f64>()?[[]], 3.0);
/// # Ok::<(), batchrules::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{T}` takes a function of one argument that returns `batchrules::Result<_>`",
    label = "not `FnOnce(_) -> batchrules::Result<_>`",
    note = "the function gets all the primals as ONE argument, and returns `batchrules::Result<_>` (`Ok(...)`, or the result of an op, with `?` on the ops inside)",
    note = "several inputs go in one tuple: write `|(x, w): (Tensor, Tensor)| ...` with primals `(&x, &w)`"
)]
pub trait TransformFnOnce<A, O, T, Arity> {
    /// Calls the function with `args` (spread over the parameters of a
    /// closure of several arguments).
    fn run_once(self, args: A) -> Result<O>;
}

/// Holds for the arity [`One`] only: the transforms' constructors require it
/// of their function's arity, so that a closure of several arguments is a
/// compile error that names the transform `T` and shows the tuple form.
///
/// ```
/// use batchrules::transform_fn::{grad, One, OneArgument};
///
/// fn takes_one<M: OneArgument<grad>>() {}
/// takes_one::<One>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{T}` takes a function of ONE argument: several inputs go in one tuple",
    label = "this closure takes several arguments",
    note = "a transform passes everything `.call(...)` is given to its function as one argument (as JAX and torch.func do), so that `in_dims` and `argnums` can count the inputs",
    note = "write `|(x, w): (Tensor, Tensor)| ...` and call `.call((&x, &w))` (for jvp and vjp: primals `(&x, &w)`), not `|x: Tensor, w: Tensor| ...`"
)]
pub trait OneArgument<T> {}

#[diagnostic::do_not_recommend]
impl<T> OneArgument<T> for One {}

#[diagnostic::do_not_recommend]
impl<F, A, O, T> TransformFn<A, O, T, One> for F
where
    F: Fn(A) -> Result<O>,
{
    fn run(&self, args: A) -> Result<O> {
        self(args)
    }
}

#[diagnostic::do_not_recommend]
impl<F, A, O, T> TransformFnOnce<A, O, T, One> for F
where
    F: FnOnce(A) -> Result<O>,
{
    fn run_once(self, args: A) -> Result<O> {
        self(args)
    }
}

/// The tuples a closure of several arguments is given, taken apart: sealed
/// (in a private module), so only the tuples below implement them.
mod tuple {
    macro_rules! tuple_trait {
        ($name:ident: $($a:ident $t:ident $i:tt),+) => {
            pub trait $name {
                $(type $t;)+
                fn parts(self) -> ($(Self::$t,)+);
            }
            impl<$($a),+> $name for ($($a,)+) {
                $(type $t = $a;)+
                fn parts(self) -> ($($a,)+) {
                    self
                }
            }
        };
    }
    tuple_trait!(Tuple2: A T0 0, B T1 1);
    tuple_trait!(Tuple3: A T0 0, B T1 1, C T2 2);
    tuple_trait!(Tuple4: A T0 0, B T1 1, C T2 2, D T3 3);
}

// A closure of several arguments gets the elements of the tuple `A`. The
// impls match any `A` (the tuple is a bound, not the impl's head), so that
// when the argument's type is known and not a tuple (`jvp(f, &x, &v)`), no
// impl is chosen and the trait's own message is reported, not rustc's
// signature mismatch of the closure.
macro_rules! several {
    ($n:literal $tuple:ident: $($t:ident $i:tt),+) => {
        #[diagnostic::do_not_recommend]
        impl<F, A, O, T> TransformFn<A, O, T, Several<$n>> for F
        where
            A: tuple::$tuple,
            F: Fn($(A::$t),+) -> Result<O>,
        {
            fn run(&self, args: A) -> Result<O> {
                let parts = args.parts();
                self($(parts.$i),+)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<F, A, O, T> TransformFnOnce<A, O, T, Several<$n>> for F
        where
            A: tuple::$tuple,
            F: FnOnce($(A::$t),+) -> Result<O>,
        {
            fn run_once(self, args: A) -> Result<O> {
                let parts = args.parts();
                self($(parts.$i),+)
            }
        }
    };
}
several!(2 Tuple2: T0 0, T1 1);
several!(3 Tuple3: T0 0, T1 1, T2 2);
several!(4 Tuple4: T0 0, T1 1, T2 2, T3 3);

macro_rules! names {
    ($($name:ident),+ $(,)?) => {$(
        #[doc = concat!("Names the transform `", stringify!($name), "` in the compile errors of [`TransformFn`], [`TransformFnOnce`] and [`OneArgument`].")]
        ///
        /// ```
        #[doc = concat!("use batchrules::transform_fn::{", stringify!($name), ", One, OneArgument};")]
        #[doc = concat!("fn check<M: OneArgument<", stringify!($name), ">>() {}")]
        /// check::<One>();
        /// ```
        #[derive(Debug)]
        pub enum $name {}
    )+};
}
names! {
    vmap,
    grad,
    value_and_grad,
    vjp,
    jvp,
    hvp,
    jacrev,
    jacfwd,
    hessian,
    linearize,
    jit,
}
