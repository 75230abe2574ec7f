//! Items the generated code refers to. Not a public API.
//!
//! Generated code reaches this module only through an op table's hidden
//! `__rt` re-export of it (`op_table!` makes it from `$crate`), never as
//! `::batchrules::__private`, so it works whatever name a crate gives the
//! runtime in its Cargo.toml.
//!
//! The registration attributes submit the rules of the built-in transforms
//! (vmap's batching rules, grad's vjps, jvp's jvps) to the transforms' own
//! rule tables, which sit above this module: they name them through the op
//! table's `__transforms` re-export of [`crate::transform`], not through here.
//!
//! In the `dispatch` layer (`runtime/src/dispatch/`). It may use the `core` and
//! `table` layers; in its own layer, `dispatch`. `tests/suite/layers.rs`
//! enforces it.

use std::cell::Cell;
use std::marker::PhantomData;

use crate::checks::eq;
pub use crate::checks::{Registered, Spelled};
pub use crate::core::value::TensorMeta;
pub use crate::core::value::{Arg, BDim, BatchedOutput, FromArg, FromBDim, IntoArg, Outputs, Outs};
pub use crate::dispatch::call;
pub use crate::registry::{DecomposeVmap, Location, RegisteredFn, Registration, RuleRegistration};
pub use crate::schema::{self, ArgType, OpSchema, Role};
pub use crate::{DType, Error, Reduction, Result, Tensor};
pub use batchrules_macros::op_table as op_table_impl;
pub use inventory;

/// Whether `op` is a composite, for `rule!`'s compile-time check.
pub const fn is_composite(op: &OpSchema) -> bool {
    matches!(op.kind, schema::OpKind::Composite)
}

/// The index of `spelling` in `spellings`, as the code of a const generic;
/// `spellings.len()` (a code nothing implements, so a spelling missing from a
/// table fails the build) when it is not there.
const fn code_of(spellings: &[&str], spelling: &str) -> u8 {
    let mut i = 0;
    while i < spellings.len() {
        if eq(spellings[i], spelling) {
            return i as u8;
        }
        i += 1;
    }
    spellings.len() as u8
}

/// The code of an assertion that is off (the op is unknown, or a
/// compile-time check already reports the parameter): its expected type is
/// [`Skip`].
pub const OFF: u8 = u8::MAX;

/// A parameter type of a schema signature, as a const generic: its index in
/// [`PARAM_TYPES`], the types the signatures write. [`param_code`] computes
/// it from an op's schema; the attributes assert that the user's parameter
/// type is `<Code<..> as ParamType>::Type`, so every op of every table shares
/// these few impls.
pub struct Code<const KIND: u8>;

/// The Rust type of a [`Code`], with `'a` for its references.
pub trait ParamType<'a> {
    /// The expected type.
    type Type;
}

/// The expected type of an assertion that is off (the op is unknown, or a
/// compile-time check already reports the parameter).
pub struct Skip;

impl ParamType<'_> for Code<OFF> {
    type Type = Skip;
}

/// [`PARAM_TYPES`] and the impls of [`ParamType`], one per spelling: the
/// spelling's index is its code. The tests check that each type is spelled
/// as written here.
macro_rules! param_types {
    ($($spelling:literal => $ty:ty;)*) => {
        /// Every parameter type a schema signature writes (a
        /// [`SignatureLayout`](crate::schema::SignatureLayout) filled in).
        pub const PARAM_TYPES: &[&str] = &[$($spelling),*];

        $(
            impl<'a> ParamType<'a> for Code<{ code_of(PARAM_TYPES, $spelling) }> {
                type Type = $ty;
            }
        )*

        #[cfg(feature = "unit-tests")]
        #[allow(clippy::extra_unused_lifetimes)] // `'a` is in the types
        fn param_type_names<'a>() -> Vec<(&'static str, &'static str)> {
            vec![$((::core::any::type_name::<$ty>(), $spelling)),*]
        }
    };
}

param_types! {
    "&Tensor" => &'a Tensor;
    "Option<&Tensor>" => Option<&'a Tensor>;
    "&TensorMeta" => &'a TensorMeta;
    "Option<&TensorMeta>" => Option<&'a TensorMeta>;
    "&[Tensor]" => &'a [Tensor];
    "&[TensorMeta]" => &'a [TensorMeta];
    "i64" => i64;
    "Option<i64>" => Option<i64>;
    "&[i64]" => &'a [i64];
    "Option<&[i64]>" => Option<&'a [i64]>;
    "f64" => f64;
    "Option<f64>" => Option<f64>;
    "bool" => bool;
    "Option<bool>" => Option<bool>;
    "DType" => DType;
    "Option<DType>" => Option<DType>;
    "Reduction" => Reduction;
    "&str" => &'a str;
    "Option<usize>" => Option<usize>;
    "&[Option<usize>]" => &'a [Option<usize>];
    "&[Option<Tensor>]" => &'a [Option<Tensor>];
}

/// The [`Code`] of the type parameter `index` of `count` of the function
/// `r` must have (see [`Registered::expected_param`]); [`OFF`] when the
/// assertion is off.
pub const fn param_code(r: Registered, count: usize, index: usize, found: Spelled) -> u8 {
    match r.expected_param(count, index, found) {
        Some(spelling) => code_of(PARAM_TYPES, spelling),
        None => OFF,
    }
}

/// A return type of a schema signature, as const generics: the number of
/// items, a bit mask of those for a `Tensor[]`, and the item, an index of
/// [`RETURN_ITEMS`] (see `checks::ReturnShape`).
/// [`return_code`] computes it.
pub struct ReturnCode<const COUNT: u8, const LISTS: u8, const ITEM: u8>;

/// The Rust type of a [`ReturnCode`].
pub trait ReturnType {
    /// The expected type.
    type Type;
}

/// An item of a return type, by its index in [`RETURN_ITEMS`].
pub struct Item<const ITEM: u8>;

/// The Rust types of an [`Item`]: for a `Tensor` and for a `Tensor[]`.
pub trait ItemTypes {
    /// For a `Tensor`.
    type One;
    /// For a `Tensor[]`.
    type List;
}

/// [`RETURN_ITEMS`] and the impls of [`ItemTypes`], as [`param_types!`]
/// makes those of the parameters.
macro_rules! return_items {
    ($($spelling:literal => $one:ty, $list:ty;)*) => {
        /// Every item a schema signature returns, as written for a `Tensor`
        /// (a [`ReturnLayout`](crate::schema::ReturnLayout)'s `forms.one`).
        pub const RETURN_ITEMS: &[&str] = &[$($spelling),*];

        $(
            impl ItemTypes for Item<{ code_of(RETURN_ITEMS, $spelling) }> {
                type One = $one;
                type List = $list;
            }
        )*

        #[cfg(feature = "unit-tests")]
        fn return_item_names() -> Vec<(&'static str, &'static str, &'static str)> {
            vec![$((
                $spelling,
                ::core::any::type_name::<$one>(),
                ::core::any::type_name::<$list>(),
            )),*]
        }
    };
}

return_items! {
    "Tensor" => Tensor, Vec<Tensor>;
    "TensorMeta" => TensorMeta, Vec<TensorMeta>;
    "(Tensor, Option<usize>)" => (Tensor, Option<usize>), (Vec<Tensor>, Vec<Option<usize>>);
    "Option<Tensor>" => Option<Tensor>, Vec<Option<Tensor>>;
}

/// The [`ReturnCode`] of the return type the function `r` must have (see
/// [`Registered::expected_return`]); `(0, 0, 0)`, whose type is [`Skip`],
/// when the assertion is off.
pub const fn return_code(r: Registered, found: Spelled) -> (u8, u8, u8) {
    match r.expected_return(found) {
        Some(shape) => (shape.count, shape.lists, code_of(RETURN_ITEMS, shape.item)),
        None => (0, 0, 0),
    }
}

impl<const I: u8> ReturnType for ReturnCode<0, 0, I> {
    type Type = Skip;
}

/// An item for a `Tensor` (`O`) and for a `Tensor[]` (`L`).
type O<const I: u8> = <Item<I> as ItemTypes>::One;
type L<const I: u8> = <Item<I> as ItemTypes>::List;

/// The impls of [`ReturnType`]: for each number of items up to
/// [`MAX_RETURN_ITEMS`](crate::checks::MAX_RETURN_ITEMS), every combination of items for a `Tensor` and for a
/// `Tensor[]`.
macro_rules! return_types {
    ($(($count:literal, $lists:literal) => $ty:ty;)*) => {
        $(
            impl<const I: u8> ReturnType for ReturnCode<$count, $lists, I>
            where
                Item<I>: ItemTypes,
            {
                type Type = Result<$ty>;
            }
        )*
    };
}

return_types! {
    (1, 0) => O<I>;
    (1, 1) => L<I>;
    (2, 0) => (O<I>, O<I>);
    (2, 1) => (L<I>, O<I>);
    (2, 2) => (O<I>, L<I>);
    (2, 3) => (L<I>, L<I>);
    (3, 0) => (O<I>, O<I>, O<I>);
    (3, 1) => (L<I>, O<I>, O<I>);
    (3, 2) => (O<I>, L<I>, O<I>);
    (3, 3) => (L<I>, L<I>, O<I>);
    (3, 4) => (O<I>, O<I>, L<I>);
    (3, 5) => (L<I>, O<I>, L<I>);
    (3, 6) => (O<I>, L<I>, L<I>);
    (3, 7) => (L<I>, L<I>, L<I>);
    (4, 0) => (O<I>, O<I>, O<I>, O<I>);
    (4, 1) => (L<I>, O<I>, O<I>, O<I>);
    (4, 2) => (O<I>, L<I>, O<I>, O<I>);
    (4, 3) => (L<I>, L<I>, O<I>, O<I>);
    (4, 4) => (O<I>, O<I>, L<I>, O<I>);
    (4, 5) => (L<I>, O<I>, L<I>, O<I>);
    (4, 6) => (O<I>, L<I>, L<I>, O<I>);
    (4, 7) => (L<I>, L<I>, L<I>, O<I>);
    (4, 8) => (O<I>, O<I>, O<I>, L<I>);
    (4, 9) => (L<I>, O<I>, O<I>, L<I>);
    (4, 10) => (O<I>, L<I>, O<I>, L<I>);
    (4, 11) => (L<I>, L<I>, O<I>, L<I>);
    (4, 12) => (O<I>, O<I>, L<I>, L<I>);
    (4, 13) => (L<I>, O<I>, L<I>, L<I>);
    (4, 14) => (O<I>, L<I>, L<I>, L<I>);
    (4, 15) => (L<I>, L<I>, L<I>, L<I>);
}

/// The gradient a vjp returns for one tensor-valued argument slot, or the
/// tangent a jvp returns for one output.
pub enum GradSlot {
    /// For a `Tensor` or `Tensor?` argument (a `Tensor` output).
    One(Option<Tensor>),
    /// For a `Tensor[]` argument (output): one per element.
    List(Vec<Option<Tensor>>),
}

/// One slot of a vjp's return value.
pub trait IntoGradSlot {
    /// The slot.
    fn into_slot(self) -> GradSlot;
}
impl IntoGradSlot for Option<Tensor> {
    fn into_slot(self) -> GradSlot {
        GradSlot::One(self)
    }
}
impl IntoGradSlot for Vec<Option<Tensor>> {
    fn into_slot(self) -> GradSlot {
        GradSlot::List(self)
    }
}

/// A vjp's return value (without the `Result`): one slot, or a tuple of them.
pub trait Gradients {
    /// The slots, in argument order.
    fn into_slots(self) -> Vec<GradSlot>;
}
impl<A: IntoGradSlot> Gradients for A {
    fn into_slots(self) -> Vec<GradSlot> {
        vec![self.into_slot()]
    }
}
macro_rules! gradients_tuple {
    ($($t:ident),*) => {
        impl<$($t: IntoGradSlot),*> Gradients for ($($t,)*) {
            #[allow(non_snake_case)]
            fn into_slots(self) -> Vec<GradSlot> {
                let ($($t,)*) = self;
                vec![$($t.into_slot()),*]
            }
        }
    };
}
gradients_tuple!(A, B);
gradients_tuple!(A, B, C);
gradients_tuple!(A, B, C, D);
gradients_tuple!(A, B, C, D, E);

/// The flat gradient list of a [`VjpRuleFn`](crate::transform::VjpRuleFn): one entry
/// per tensor-valued argument slot of `op`, a `Tensor[]` slot giving one per
/// element. A slot that does not fit its argument (a list of another length,
/// a gradient for an absent `Tensor?`) is a bug in the vjp, reported naming
/// the op and the function, with its location.
pub fn flatten_gradients(
    op: &OpSchema,
    function: &Location,
    args: &[Arg<Tensor>],
    slots: Vec<GradSlot>,
) -> Result<Vec<Option<Tensor>>> {
    let bug = |message: String| Error::RuleBug {
        op: op.name.to_string(),
        rule: format!("vjp {function}"),
        message,
    };
    let mut out = Vec::with_capacity(args.len());
    let mut slots = slots.into_iter();
    for (k, schema_arg) in op.args.iter().enumerate() {
        if !matches!(schema_arg.ty, ArgType::Tensor | ArgType::TensorList) {
            continue;
        }
        let slot = slots.next().ok_or_else(|| {
            bug(format!(
                "it returned no gradient for argument `{}`",
                schema_arg.name
            ))
        })?;
        match (args.get(k), slot) {
            (Some(Arg::Tensor(_)), GradSlot::One(g)) => out.push(g),
            (Some(Arg::OptTensor(present)), GradSlot::One(g)) => {
                if present.is_none() && g.is_some() {
                    return Err(bug(format!(
                        "it returned a gradient for the optional argument `{}`, which was None",
                        schema_arg.name
                    )));
                }
                out.push(g);
            }
            (Some(Arg::TensorList(list)), GradSlot::List(grads)) => {
                if grads.len() != list.len() {
                    return Err(bug(format!(
                        "it returned {} gradients for the tensor list `{}`, which has {} tensors; return one per tensor (None where no gradient flows)",
                        grads.len(),
                        schema_arg.name,
                        list.len()
                    )));
                }
                out.extend(grads);
            }
            _ => return Err(shim_error("argument", k)),
        }
    }
    if slots.next().is_some() {
        return Err(shim_error("return value", 0));
    }
    Ok(out)
}

/// The flat tangent list of a [`JvpRuleFn`](crate::transform::JvpRuleFn): one
/// entry per output tensor of `op`, a `Tensor[]` output giving one per
/// element. Slots that do not fit the outputs (a list of another length) are
/// a bug in the jvp, reported as [`flatten_gradients`] reports them.
pub fn flatten_tangents(
    op: &OpSchema,
    function: &Location,
    outputs: &[Tensor],
    slots: Vec<GradSlot>,
) -> Result<Vec<Option<Tensor>>> {
    let mut out = Vec::with_capacity(outputs.len());
    for slot in slots {
        match slot {
            GradSlot::One(t) => out.push(t),
            GradSlot::List(list) if op.returns_list() && list.len() != outputs.len() => {
                return Err(Error::RuleBug {
                    op: op.name.to_string(),
                    rule: format!("jvp {function}"),
                    message: format!(
                        "it returned {} tangents for the output list, which has {} tensors; return one per tensor (None where the tangent is zero)",
                        list.len(),
                        outputs.len()
                    ),
                });
            }
            GradSlot::List(list) => out.extend(list),
        }
    }
    if out.len() != outputs.len() {
        return Err(shim_error("return value", 0));
    }
    Ok(out)
}

/// Where a jvp's parameters past the op's arguments come from: the op's
/// outputs, then the tangents of its tensor-valued argument slots.
pub struct JvpInputs<'a> {
    /// The outputs, as the erased jvp gets them (a `Tensor[]` output's
    /// elements, or one tensor per output).
    pub outputs: &'a [Tensor],
    /// One entry per tensor-valued argument slot.
    pub tangents: &'a [Vec<Option<Tensor>>],
    /// The number of the op's schema returns.
    pub returns: usize,
}

/// A parameter type of a jvp past the op's arguments, read from
/// [`JvpInputs`]: parameter `k` is output `k` (`&Tensor`, or `&[Tensor]` for
/// a `Tensor[]` output), or past the outputs, the tangent of the slot
/// `k - returns` (`Option<&Tensor>`, or `&[Option<Tensor>]` for a `Tensor[]`).
pub trait FromJvpInputs<'a>: Sized {
    /// Parameter `k`, if it has this type.
    fn from_jvp(inputs: &JvpInputs<'a>, k: usize) -> Option<Self>;
}
impl<'a> FromJvpInputs<'a> for &'a Tensor {
    fn from_jvp(inputs: &JvpInputs<'a>, k: usize) -> Option<Self> {
        inputs.outputs.get(k).filter(|_| k < inputs.returns)
    }
}
impl<'a> FromJvpInputs<'a> for &'a [Tensor] {
    fn from_jvp(inputs: &JvpInputs<'a>, k: usize) -> Option<Self> {
        (k == 0 && inputs.returns == 1).then_some(inputs.outputs)
    }
}
impl<'a> FromJvpInputs<'a> for Option<&'a Tensor> {
    fn from_jvp(inputs: &JvpInputs<'a>, k: usize) -> Option<Self> {
        match inputs
            .tangents
            .get(k.checked_sub(inputs.returns)?)?
            .as_slice()
        {
            [one] => Some(one.as_ref()),
            _ => None,
        }
    }
}
impl<'a> FromJvpInputs<'a> for &'a [Option<Tensor>] {
    fn from_jvp(inputs: &JvpInputs<'a>, k: usize) -> Option<Self> {
        inputs
            .tangents
            .get(k.checked_sub(inputs.returns)?)
            .map(Vec::as_slice)
    }
}

/// The op at `index` of a table's schemas (always there once the
/// compile-time checks passed).
pub fn schema_at(ops: &[OpSchema], index: usize) -> Result<&OpSchema> {
    ops.get(index).ok_or_else(|| shim_error("op index", index))
}

fn shim_error(what: &str, index: usize) -> Error {
    Error::NotImplemented {
        op: String::new(),
        message: format!(
            "{what} {index} of a registered function does not match its op schema \
             (the compile-time checks should have rejected it; please report this)"
        ),
    }
}

/// Selects, at compile time, a real conversion when the user's parameter type has
/// one and a never-taken error path otherwise (autoref specialization), so a wrong
/// parameter type is reported once, by the schema check, not again by the shim.
pub struct Probe<X, T>(PhantomData<fn() -> (X, T)>);

impl<X, T> Probe<X, T> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Probe(PhantomData)
    }
}

/// Declares a probe trait (`$probe`) with its one method, implemented for
/// `&$target` by the body given where the parameter type allows it (`$t:
/// $bound`), and its fallback twin (`$fallback`), implemented for `$target`
/// itself by the never-taken error naming `$what` and the index `$index`.
macro_rules! probe {
    (
        $(#[$doc:meta])*
        $probe:ident / $fallback:ident<$($g:tt),*> for $target:ty, $t:ident: $bound:path;
        fn $method:ident(&self $(, $p:ident: $pt:ty)*) -> Result<T> $body:block
        else ($what:literal, $index:ident)
    ) => {
        $(#[$doc])*
        pub trait $probe<$($g),*> {
            fn $method(&self $(, $p: $pt)*) -> Result<T>;
        }
        impl<$($g),*> $probe<$($g),*> for &$target
        where
            $t: $bound,
        {
            fn $method(&self $(, $p: $pt)*) -> Result<T> $body
        }
        pub trait $fallback<$($g),*> {
            fn $method(&self $(, $p: $pt)*) -> Result<T>;
        }
        impl<$($g),*> $fallback<$($g),*> for $target {
            fn $method(&self $(, $p: $pt)*) -> Result<T> {
                let _ = ($($p,)*);
                Err(shim_error($what, $index))
            }
        }
    };
}

probe! {
    /// A parameter that is argument `i` of the op.
    ProbeArg / ProbeArgFallback<'a, X, T> for Probe<X, T>, T: FromArg<'a, X>;
    fn arg(&self, args: &'a [Arg<X>], i: usize) -> Result<T> {
        T::from_arg(args.get(i).ok_or_else(|| shim_error("argument", i))?, i)
    }
    else ("parameter", i)
}

probe! {
    /// A batching rule's parameter that is the batch dim of argument `i`.
    ProbeBDim / ProbeBDimFallback<'a, T> for Probe<BDim, T>, T: FromBDim<'a>;
    fn bdim(&self, bdims: &'a [BDim], i: usize) -> Result<T> {
        T::from_bdim(bdims.get(i).ok_or_else(|| shim_error("batch dim", i))?, i)
    }
    else ("batch dim", i)
}

/// A parameter type of a vjp past the op's arguments: parameter `i` is
/// output `i` (`&Tensor`), or past the outputs, the cotangent of output `i -
/// outputs.len()`; for an op returning one `Tensor[]`, parameter 0 is the
/// whole list of outputs and parameter 1 the list of their cotangents
/// (`&[Tensor]`, one per element, zeros where none flowed).
pub trait FromVjpInputs<'a>: Sized {
    /// Parameter `i`, if it has this type.
    fn from_vjp(outputs: &'a [Tensor], grads: &'a [Tensor], i: usize) -> Option<Self>;
}
impl<'a> FromVjpInputs<'a> for &'a Tensor {
    fn from_vjp(outputs: &'a [Tensor], grads: &'a [Tensor], i: usize) -> Option<Self> {
        match i.checked_sub(outputs.len()) {
            None => outputs.get(i),
            Some(j) => grads.get(j),
        }
    }
}
impl<'a> FromVjpInputs<'a> for &'a [Tensor] {
    fn from_vjp(outputs: &'a [Tensor], grads: &'a [Tensor], i: usize) -> Option<Self> {
        match i {
            0 => Some(outputs),
            1 => Some(grads),
            _ => None,
        }
    }
}

probe! {
    /// A vjp's parameter `i` past the op's arguments, see [`FromVjpInputs`].
    ProbeTensor / ProbeTensorFallback<'a, T> for Probe<Tensor, T>, T: FromVjpInputs<'a>;
    fn tensor(&self, outputs: &'a [Tensor], grads: &'a [Tensor], i: usize) -> Result<T> {
        T::from_vjp(outputs, grads, i).ok_or_else(|| shim_error("output or cotangent", i))
    }
    else ("output or cotangent", i)
}

probe! {
    /// A jvp's parameter `k` past the op's arguments, see [`FromJvpInputs`].
    ProbeJvp / ProbeJvpFallback<'a, T> for Probe<Tensor, T>, T: FromJvpInputs<'a>;
    fn jvp_input(&self, inputs: &JvpInputs<'a>, k: usize) -> Result<T> {
        T::from_jvp(inputs, k).ok_or_else(|| shim_error("output or tangent", k))
    }
    else ("output or tangent", k)
}

/// The return-value twin of [`Probe`].
pub struct RetProbe<X, R>(Cell<Option<R>>, PhantomData<fn() -> X>);

impl<X, R> RetProbe<X, R> {
    pub fn new(r: R) -> Self {
        RetProbe(Cell::new(Some(r)), PhantomData)
    }
}

/// The return-value twin of [`probe!`]: the probe trait takes the value out of
/// a [`RetProbe`] whose function returned `Result<$r>` with `$r: $bound` and
/// hands it to `$body` as `$value`; the fallback (any other return type) errs.
macro_rules! ret_probe {
    (
        $(#[$doc:meta])*
        $probe:ident / $fallback:ident<$($g:ident),*> for RetProbe<$x:ty, $r:ident: $bound:path>;
        fn $method:ident(&self $(, $p:ident: $pt:ty)*) -> Result<$out:ty> { $value:ident => $body:expr }
    ) => {
        $(#[$doc])*
        pub trait $probe<$($g),*> {
            fn $method(&self $(, $p: $pt)*) -> Result<$out>;
        }
        impl<$($g,)* $r: $bound> $probe<$($g),*> for &RetProbe<$x, Result<$r>> {
            fn $method(&self $(, $p: $pt)*) -> Result<$out> {
                match self.0.take() {
                    Some($value) => $body,
                    None => Err(shim_error("return value", 0)),
                }
            }
        }
        pub trait $fallback<$($g),*> {
            fn $method(&self $(, $p: $pt)*) -> Result<$out>;
        }
        impl<$($g,)* R> $fallback<$($g),*> for RetProbe<$x, R> {
            fn $method(&self $(, $p: $pt)*) -> Result<$out> {
                let _ = ($($p,)*);
                Err(shim_error("return value", 0))
            }
        }
    };
}

ret_probe! {
    /// A kernel's, meta's or rule's return value, as its outputs.
    ProbeRet / ProbeRetFallback<X> for RetProbe<X, O: Outputs<X>>;
    fn outputs(&self) -> Result<Outs<X>> { r => r.map(O::into_outputs) }
}

ret_probe! {
    /// A vjp's return value, flattened by [`flatten_gradients`].
    ProbeGradients / ProbeGradientsFallback<> for RetProbe<GradSlot, G: Gradients>;
    fn gradients(&self, op: &OpSchema, function: &Location, args: &[Arg<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        r => flatten_gradients(op, function, args, r?.into_slots())
    }
}

ret_probe! {
    /// A jvp's return value, flattened by [`flatten_tangents`].
    ProbeTangents / ProbeTangentsFallback<> for RetProbe<GradSlot, G: Gradients>;
    fn tangents(&self, op: &OpSchema, function: &Location, outputs: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        r => flatten_tangents(op, function, outputs, r?.into_slots())
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    /// `core::option::Option<&batchrules::core::tensor::Tensor>` as the schema
    /// signatures spell it: `Option<&Tensor>`.
    fn spelling(type_name: &str) -> String {
        let mut out = String::new();
        let mut word = String::new();
        let mut chars = type_name.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
            } else if c == ':' && chars.peek() == Some(&':') {
                chars.next();
                word.clear();
            } else {
                out.push_str(&word);
                word.clear();
                out.push(c);
            }
        }
        out.push_str(&word);
        out.replace(", Error>", ">")
    }

    pub(crate) fn expected_types_are_spelled_as_the_schema_signatures() {
        for (name, spelled) in param_type_names() {
            assert_eq!(spelling(name), spelled, "{name}");
        }
        for (spelled, one, list) in return_item_names() {
            assert_eq!(spelling(one), spelled, "{one}");
            // The list form, as the role whose items these are writes it.
            let layouts = Role::ALL.map(|r| r.layout().returns.forms);
            let forms = layouts.iter().find(|f| f.one == spelled).unwrap();
            assert_eq!(spelling(list), forms.list, "{list}");
        }
        // A return type is the items in a `Result`, a tuple when several.
        const GRADIENT: u8 = code_of(RETURN_ITEMS, "Option<Tensor>");
        const BATCHED: u8 = code_of(RETURN_ITEMS, "(Tensor, Option<usize>)");
        fn name<T>() -> String {
            spelling(std::any::type_name::<T>())
        }
        assert_eq!(
            name::<<ReturnCode<2, 1, GRADIENT> as ReturnType>::Type>(),
            "Result<(Vec<Option<Tensor>>, Option<Tensor>)>"
        );
        assert_eq!(
            name::<<ReturnCode<1, 0, BATCHED> as ReturnType>::Type>(),
            "Result<(Tensor, Option<usize>)>"
        );
        assert_eq!(
            name::<<ReturnCode<1, 1, BATCHED> as ReturnType>::Type>(),
            "Result<(Vec<Tensor>, Vec<Option<usize>>)>"
        );
    }

    /// Every type a role's layout writes has its `Code` or `Item`, so the
    /// real-type assertions compare every parameter and return type.
    pub(crate) fn every_type_the_layouts_write_has_a_code() {
        for role in Role::ALL {
            let layout = role.layout();
            let forms = layout.returns.forms;
            assert!(RETURN_ITEMS.contains(&forms.one), "{role:?}: {}", forms.one);
            for group in layout.params {
                for ty in group.forms.iter().flat_map(|f| [f.one, f.list]) {
                    assert!(PARAM_TYPES.contains(&ty), "{role:?}: {ty}");
                }
            }
            // The types of the op's arguments, for every op of the built-in
            // table.
            for op in crate::ops::__SCHEMA {
                for ty in op.signature(role).params {
                    assert!(PARAM_TYPES.contains(ty), "{role:?} of {}: {ty}", op.name);
                }
            }
        }
    }

    crate::core::unit_test::test_list! {
        expected_types_are_spelled_as_the_schema_signatures,
        every_type_the_layouts_write_has_a_code,
    }
}
