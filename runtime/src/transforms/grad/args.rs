//! The arguments of a differentiated function, and which of them a transform
//! differentiates: [`GradArgs`] (what `.call(...)` takes), [`ArgAt`] (argument
//! `N` of it) and [`Argnums`] (one argument, [`Argnum`], or several,
//! [`Argnums2`] to [`Argnums4`], as torch.func's `argnums=(0, 2)`).

use std::ops::Range;

use crate::core::tree::checked_copy;
use crate::{Error, Result, Tensor, TensorTree};

/// The arguments of a differentiated function, as given to [`vjp`](crate::vjp()),
/// [`Grad::call`](crate::Grad::call) or [`jacrev`](crate::jacrev()): one tree by reference
/// (`&x`, `&params`), or a tuple of up to four (`(&params, &x, &y)`). The
/// function receives owned handles of the same shape.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the arguments of a differentiated function",
    label = "not a tensor, a reference to a structure of tensors, or a tuple of references",
    note = "give `&x` (a tensor, or a struct with `#[derive(TensorTree)]`), or several as one tuple of references: `(&params, &x)`"
)]
pub trait GradArgs {
    /// What the function receives: `Tensor`, a struct, a tuple of them.
    type Inner: TensorTree;
    /// The function's argument: the same tensors (cheap handles). Errors,
    /// naming `what` (the transform called), if a hand-written
    /// [`TensorTree`] impl among the arguments is inconsistent.
    fn inner(&self, what: &str) -> Result<Self::Inner>;
}

impl<T: TensorTree> GradArgs for &T {
    type Inner = T;
    fn inner(&self, what: &str) -> Result<T> {
        checked_copy(*self, what)
    }
}

impl GradArgs for Tensor {
    type Inner = Tensor;
    fn inner(&self, _what: &str) -> Result<Tensor> {
        Ok(self.clone())
    }
}

/// Which argument [`grad`](crate::grad()) differentiates: `ArgAt<N>` is implemented by the
/// argument forms that have an argument `N` (`&x` and `x` have argument 0; a
/// tuple of `k` references has `0..k`), so an out-of-range
/// [`argnums`](crate::Grad::argnums) does not compile.
#[diagnostic::on_unimplemented(
    message = "argument {N} is out of range for the arguments `{Self}`: `argnums::<{N}>()` picks an element of the tuple given to `.call(...)`, counting from 0",
    label = "no argument {N} here",
    note = "a tuple of k references `(&a, &b, ...)` has arguments 0 to k - 1; a single `&x` or tensor has only argument 0",
    note = "to differentiate several arguments at once, select them with `argnums2::<0, 1>()` (up to `argnums4`), or pass them as one tuple or struct",
    note = "each argument is a reference to a tensor or to a structure of tensors; a struct needs `#[derive(TensorTree)]`"
)]
pub trait ArgAt<const N: usize>: GradArgs {
    /// The type of argument `N`: the gradient has the same type.
    type Out: TensorTree;
    /// Argument `N` of `inner`.
    fn arg(inner: &Self::Inner) -> &Self::Out;
    /// Which of `inner`'s leaves belong to argument `N`.
    fn leaf_range(inner: &Self::Inner) -> Range<usize>;
}

impl<T: TensorTree> ArgAt<0> for &T {
    type Out = T;
    fn arg(inner: &T) -> &T {
        inner
    }
    fn leaf_range(inner: &T) -> Range<usize> {
        0..inner.leaf_count()
    }
}

impl ArgAt<0> for Tensor {
    type Out = Tensor;
    fn arg(inner: &Tensor) -> &Tensor {
        inner
    }
    fn leaf_range(_: &Tensor) -> Range<usize> {
        0..1
    }
}

macro_rules! tuple_args {
    ($($t:ident $i:tt),+) => {
        impl<$($t: TensorTree),+> GradArgs for ($(&$t,)+) {
            type Inner = ($($t,)+);
            fn inner(&self, what: &str) -> Result<Self::Inner> {
                Ok(($(checked_copy(self.$i, what)?,)+))
            }
        }
        tuple_args!(@at [$($t $i),+] $($t $i),+);
    };
    (@at $all:tt $($t:ident $i:tt),+) => {$(
        tuple_args!(@one $all $t $i);
    )+};
    (@one [$($all:ident $ai:tt),+] $t:ident $i:tt) => {
        impl<$($all: TensorTree),+> ArgAt<$i> for ($(&$all,)+) {
            type Out = $t;
            fn arg(inner: &Self::Inner) -> &$t {
                &inner.$i
            }
            fn leaf_range(inner: &Self::Inner) -> Range<usize> {
                let mut start = 0;
                $(if $ai < $i { start += inner.$ai.leaf_count(); })+
                start..start + inner.$i.leaf_count()
            }
        }
    };
}
tuple_args!(A 0, B 1);
tuple_args!(A 0, B 1, C 2);
tuple_args!(A 0, B 1, C 2, D 3);

/// Which arguments a transform differentiates, chosen by the builders'
/// `argnums` methods: [`Argnum<N>`] (argument `N`, 0 by default) or
/// [`Argnums2<A, B>`] to [`Argnums4`] (several, torch.func's
/// `argnums=(a, b)`). The derivative has the type [`Argnums::Out`]: argument
/// `N`'s type, or the tuple of the selected arguments' types, in the order
/// given.
///
/// Implemented for the argument forms `I` that have the selected arguments,
/// so a selection out of range does not compile (see [`ArgAt`]).
pub trait Argnums<I: GradArgs>: Selected {
    /// The derivative's type: the selected argument's, or a tuple of them.
    type Out: TensorTree;
    /// The leaves of `inner` that are differentiated, one range per selected
    /// argument, in the selection's order.
    #[doc(hidden)]
    fn leaf_ranges(inner: &I::Inner) -> Vec<Range<usize>>;
    /// The derivative, from one tensor per differentiated leaf (in the order
    /// of [`leaf_ranges`](Self::leaf_ranges)).
    #[doc(hidden)]
    fn build(inner: &I::Inner, leaves: Vec<Tensor>) -> Result<Self::Out>;
}

/// The argument numbers a selection names, whatever the arguments.
#[doc(hidden)]
pub trait Selected {
    /// The selected argument numbers, in order.
    const ARGNUMS: &'static [usize];
}

/// The leaf ranges of the selection `S` in `inner`; errs, naming `what`, if
/// `S` names an argument twice (as torch.func refuses `argnums=(0, 0)`).
pub(crate) fn selected_ranges<I: GradArgs, S: Argnums<I>>(
    what: &str,
    inner: &I::Inner,
) -> Result<Vec<Range<usize>>> {
    let nums = S::ARGNUMS;
    for (k, a) in nums.iter().enumerate() {
        if nums[..k].contains(a) {
            return Err(Error::Tensor(format!(
                "{what}: argnums{}::<{}>() names argument {a} twice; name each argument once",
                nums.len(),
                nums.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    Ok(S::leaf_ranges(inner))
}

/// Differentiate argument `N` (see [`Argnums`]): the default selection,
/// `argnums::<N>()` of the builders.
#[derive(Debug)]
pub enum Argnum<const N: usize> {}

impl<I: GradArgs + ArgAt<N>, const N: usize> Argnums<I> for Argnum<N> {
    type Out = I::Out;
    fn leaf_ranges(inner: &I::Inner) -> Vec<Range<usize>> {
        vec![I::leaf_range(inner)]
    }
    fn build(inner: &I::Inner, leaves: Vec<Tensor>) -> Result<I::Out> {
        I::arg(inner).with_leaves(leaves)
    }
}

impl<const N: usize> Selected for Argnum<N> {
    const ARGNUMS: &'static [usize] = &[N];
}

/// Splits off the first `n` of `leaves`.
fn take_front(leaves: &mut Vec<Tensor>, n: usize) -> Result<Vec<Tensor>> {
    if leaves.len() < n {
        return Err(Error::Tensor(format!(
            "argnums: {} derivative leaves for a selection of at least {n}",
            leaves.len()
        )));
    }
    let rest = leaves.split_off(n);
    Ok(std::mem::replace(leaves, rest))
}

macro_rules! several_argnums {
    ($(#[$doc:meta])* $name:ident: $($a:ident),+) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $name<$(const $a: usize),+> {}

        impl<I, $(const $a: usize),+> Argnums<I> for $name<$($a),+>
        where
            I: GradArgs $(+ ArgAt<$a>)+,
        {
            type Out = ($(<I as ArgAt<$a>>::Out,)+);
            fn leaf_ranges(inner: &I::Inner) -> Vec<Range<usize>> {
                vec![$(<I as ArgAt<$a>>::leaf_range(inner)),+]
            }
            fn build(inner: &I::Inner, mut leaves: Vec<Tensor>) -> Result<Self::Out> {
                Ok(($({
                    let n = <I as ArgAt<$a>>::leaf_range(inner).len();
                    <I as ArgAt<$a>>::arg(inner).with_leaves(take_front(&mut leaves, n)?)?
                },)+))
            }
        }

        impl<$(const $a: usize),+> Selected for $name<$($a),+> {
            const ARGNUMS: &'static [usize] = &[$($a),+];
        }
    };
}

several_argnums!(
    /// Differentiate arguments `A` and `B` (see [`Argnums`]): the builders'
    /// `argnums2::<A, B>()`, torch.func's `argnums=(A, B)`. The derivative is
    /// the pair of the two arguments' derivatives.
    Argnums2: A, B
);
several_argnums!(
    /// Differentiate arguments `A`, `B` and `C` (see [`Argnums`]): the
    /// builders' `argnums3::<A, B, C>()`.
    Argnums3: A, B, C
);
several_argnums!(
    /// Differentiate arguments `A` to `D` (see [`Argnums`]): the builders'
    /// `argnums4::<A, B, C, D>()`.
    Argnums4: A, B, C, D
);

/// The `argnums` to `argnums4` methods of a builder `$ty<F, A, S, ..>`,
/// which has a method `retag` that changes its selection `S` and keeps the
/// rest (`$extra`: the parameters after `S`).
macro_rules! argnums_methods {
    ($ty:ident $(, $extra:ident)*) => {
        /// Differentiates argument `N` instead (0-based, in the tuple `call`
        /// is given). An argument the call does not have does not compile.
        /// For several arguments see `argnums2`, or pass them as one tuple
        /// or struct.
        pub fn argnums<const N: usize>(self) -> $ty<F, A, $crate::grad::Argnum<N> $(, $extra)*> {
            self.retag()
        }

        /// Differentiates arguments `A0` and `A1` together (torch.func's
        /// `argnums=(A0, A1)`): the derivative is the pair of theirs, in
        /// this order. An argument the call does not have does not compile;
        /// the same one twice is an error when called.
        pub fn argnums2<const A0: usize, const A1: usize>(
            self,
        ) -> $ty<F, A, $crate::grad::Argnums2<A0, A1> $(, $extra)*> {
            self.retag()
        }

        /// Differentiates arguments `A0`, `A1` and `A2` together; see
        /// `argnums2`.
        pub fn argnums3<const A0: usize, const A1: usize, const A2: usize>(
            self,
        ) -> $ty<F, A, $crate::grad::Argnums3<A0, A1, A2> $(, $extra)*> {
            self.retag()
        }

        /// Differentiates arguments `A0` to `A3` together; see `argnums2`.
        pub fn argnums4<const A0: usize, const A1: usize, const A2: usize, const A3: usize>(
            self,
        ) -> $ty<F, A, $crate::grad::Argnums4<A0, A1, A2, A3> $(, $extra)*> {
            self.retag()
        }
    };
}
pub(crate) use argnums_methods;
