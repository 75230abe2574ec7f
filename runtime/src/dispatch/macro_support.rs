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

pub use crate::checks::{
    check_arity, check_op, check_param, check_return, op_index, param_code, param_source,
    return_code, vjp_return_code, ParamKind, VJP_MAX_SLOTS,
};
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

/// A parameter type of a schema signature, as const generics: the argument
/// `KIND` (see [`ParamKind`]), whether it is optional (`T?`), and whether the
/// function is a meta (tensors as `TensorMeta`). [`param_code`] computes it
/// from an op's schema; the attributes assert that the user's parameter type
/// is `<Code<..> as ParamType>::Type`, so every op of every table shares these
/// few impls.
pub struct Code<const KIND: u8, const OPTIONAL: bool, const META: bool>;

/// A return type of a schema signature, as const generics: the number of
/// returned tensors, whether it is one `Tensor[]`, and the signature
/// (0 kernel and decomposition, 1 meta, 2 batching rule, 3 jvp). See [`return_code`].
pub struct ReturnCode<const COUNT: u8, const LIST: bool, const SIGNATURE: u8>;

/// The Rust type of a [`Code`], with `'a` for its references.
pub trait ParamType<'a> {
    /// The expected type.
    type Type;
}

/// The Rust type of a [`ReturnCode`].
pub trait ReturnType {
    /// The expected type.
    type Type;
}

/// The expected type of an assertion that is off (the op is unknown, or a
/// compile-time check already reports the parameter).
pub struct Skip;

/// The impls of [`ParamType`], and the spelling of each type as the schema
/// signatures write it (the tests check that the two agree).
macro_rules! param_types {
    ($(($kind:ident, $opt:literal, $meta:tt) => $ty:ty, $spelling:literal;)*) => {
        $(param_types!(@impl $kind, $opt, $meta, $ty);)*

        #[cfg(feature = "unit-tests")]
        #[allow(clippy::extra_unused_lifetimes)] // `'a` is in the types
        fn param_type_names<'a>() -> Vec<(&'static str, &'static str)> {
            vec![$((::core::any::type_name::<$ty>(), $spelling)),*]
        }
    };
    (@impl $kind:ident, $opt:literal, any, $ty:ty) => {
        impl<'a, const META: bool> ParamType<'a> for Code<{ ParamKind::$kind }, $opt, META> {
            type Type = $ty;
        }
    };
    (@impl $kind:ident, $opt:literal, $meta:literal, $ty:ty) => {
        impl<'a> ParamType<'a> for Code<{ ParamKind::$kind }, $opt, $meta> {
            type Type = $ty;
        }
    };
}

param_types! {
    (TENSOR, false, false) => &'a Tensor, "&Tensor";
    (TENSOR, true, false) => Option<&'a Tensor>, "Option<&Tensor>";
    (TENSOR, false, true) => &'a TensorMeta, "&TensorMeta";
    (TENSOR, true, true) => Option<&'a TensorMeta>, "Option<&TensorMeta>";
    (TENSOR_LIST, false, false) => &'a [Tensor], "&[Tensor]";
    (TENSOR_LIST, false, true) => &'a [TensorMeta], "&[TensorMeta]";
    (INT, false, any) => i64, "i64";
    (INT, true, any) => Option<i64>, "Option<i64>";
    (INT_LIST, false, any) => &'a [i64], "&[i64]";
    (INT_LIST, true, any) => Option<&'a [i64]>, "Option<&[i64]>";
    (FLOAT, false, any) => f64, "f64";
    (FLOAT, true, any) => Option<f64>, "Option<f64>";
    (BOOL, false, any) => bool, "bool";
    (BOOL, true, any) => Option<bool>, "Option<bool>";
    (SCALAR_TYPE, false, any) => DType, "DType";
    (SCALAR_TYPE, true, any) => Option<DType>, "Option<DType>";
    (REDUCTION, false, any) => Reduction, "Reduction";
    (STR, false, any) => &'a str, "&str";
    (BDIM, false, false) => Option<usize>, "Option<usize>";
    (BDIM_LIST, false, false) => &'a [Option<usize>], "&[Option<usize>]";
    (TANGENT_LIST, false, false) => &'a [Option<Tensor>], "&[Option<Tensor>]";
    (OFF, false, false) => Skip, "";
}

/// The impls of [`ReturnType`], and their spellings.
macro_rules! return_types {
    ($(($count:literal, $list:literal, $sig:literal) => $ty:ty, $spelling:literal;)*) => {
        $(
            impl ReturnType for ReturnCode<$count, $list, $sig> {
                type Type = $ty;
            }
        )*

        #[cfg(feature = "unit-tests")]
        fn return_type_names() -> Vec<(&'static str, &'static str)> {
            vec![$((::core::any::type_name::<$ty>(), $spelling)),*]
        }
    };
}

return_types! {
    (1, false, 0) => Result<Tensor>, "Result<Tensor>";
    (1, true, 0) => Result<Vec<Tensor>>, "Result<Vec<Tensor>>";
    (2, false, 0) => Result<(Tensor, Tensor)>, "Result<(Tensor, Tensor)>";
    (3, false, 0) => Result<(Tensor, Tensor, Tensor)>, "Result<(Tensor, Tensor, Tensor)>";
    (1, false, 1) => Result<TensorMeta>, "Result<TensorMeta>";
    (1, true, 1) => Result<Vec<TensorMeta>>, "Result<Vec<TensorMeta>>";
    (2, false, 1) => Result<(TensorMeta, TensorMeta)>, "Result<(TensorMeta, TensorMeta)>";
    (3, false, 1) => Result<(TensorMeta, TensorMeta, TensorMeta)>,
        "Result<(TensorMeta, TensorMeta, TensorMeta)>";
    (1, false, 2) => Result<(Tensor, Option<usize>)>, "Result<(Tensor, Option<usize>)>";
    (1, true, 2) => Result<(Vec<Tensor>, Vec<Option<usize>>)>,
        "Result<(Vec<Tensor>, Vec<Option<usize>>)>";
    (2, false, 2) => Result<((Tensor, Option<usize>), (Tensor, Option<usize>))>,
        "Result<((Tensor, Option<usize>), (Tensor, Option<usize>))>";
    (3, false, 2) => Result<((Tensor, Option<usize>), (Tensor, Option<usize>), (Tensor, Option<usize>))>,
        "Result<((Tensor, Option<usize>), (Tensor, Option<usize>), (Tensor, Option<usize>))>";
    (1, false, 3) => Result<Option<Tensor>>, "Result<Option<Tensor>>";
    (1, true, 3) => Result<Vec<Option<Tensor>>>, "Result<Vec<Option<Tensor>>>";
    (2, false, 3) => Result<(Option<Tensor>, Option<Tensor>)>,
        "Result<(Option<Tensor>, Option<Tensor>)>";
    (3, false, 3) => Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)>,
        "Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)>";
    (0, false, 0) => Skip, "";
}

/// A vjp's return type, as const generics: the number of tensor-valued
/// argument slots and a bit mask of those that are `Tensor[]`. See
/// [`vjp_return_code`].
pub struct VjpReturnCode<const SLOTS: u8, const LISTS: u8>;

/// The impls of [`ReturnType`] for [`VjpReturnCode`]: every combination of
/// `Option<Tensor>` and `Vec<Option<Tensor>>` slots, up to [`VJP_MAX_SLOTS`].
macro_rules! vjp_return_types {
    ($(($slots:literal, $lists:literal) => $ty:ty;)*) => {
        $(
            impl ReturnType for VjpReturnCode<$slots, $lists> {
                type Type = Result<$ty>;
            }
        )*
    };
}

type G = Option<Tensor>;
type L = Vec<Option<Tensor>>;

vjp_return_types! {
    (0, 0) => Skip;
    (1, 0) => G;
    (1, 1) => L;
    (2, 0) => (G, G);
    (2, 1) => (L, G);
    (2, 2) => (G, L);
    (2, 3) => (L, L);
    (3, 0) => (G, G, G);
    (3, 1) => (L, G, G);
    (3, 2) => (G, L, G);
    (3, 3) => (L, L, G);
    (3, 4) => (G, G, L);
    (3, 5) => (L, G, L);
    (3, 6) => (G, L, L);
    (3, 7) => (L, L, L);
    (4, 0) => (G, G, G, G);
    (4, 1) => (L, G, G, G);
    (4, 2) => (G, L, G, G);
    (4, 3) => (L, L, G, G);
    (4, 4) => (G, G, L, G);
    (4, 5) => (L, G, L, G);
    (4, 6) => (G, L, L, G);
    (4, 7) => (L, L, L, G);
    (4, 8) => (G, G, G, L);
    (4, 9) => (L, G, G, L);
    (4, 10) => (G, L, G, L);
    (4, 11) => (L, L, G, L);
    (4, 12) => (G, G, L, L);
    (4, 13) => (L, G, L, L);
    (4, 14) => (G, L, L, L);
    (4, 15) => (L, L, L, L);
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
        for (name, spelled) in param_type_names().into_iter().chain(return_type_names()) {
            if spelled.is_empty() {
                continue;
            }
            assert_eq!(spelling(name), spelled, "{name}");
        }
    }

    crate::core::unit_test::test_list! {
        expected_types_are_spelled_as_the_schema_signatures,
    }
}
