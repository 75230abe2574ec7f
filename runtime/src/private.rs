//! Items the generated code refers to. Not a public API.
//!
//! Generated code reaches this module only through an op table's hidden
//! `__rt` re-export of it (`op_table!` makes it from `$crate`), never as
//! `::batchrules::__private`, so it works whatever name a crate gives the
//! runtime in its Cargo.toml.

use std::cell::Cell;
use std::marker::PhantomData;

pub use crate::checks::{
    check_arity, check_op, check_param, check_return, op_index, param_code, param_source,
    return_code, ParamKind,
};
pub use crate::core::value::{Arg, BDim, BatchedOutput, FromArg, FromBDim, IntoArg, Outputs, Outs};
pub use crate::dispatch::call;
pub use crate::registry::{DecomposeVmap, Location, RegisteredFn, Registration};
pub use crate::schema::{self, Role};
pub use crate::{DType, Error, Result, Tensor, TensorMeta};
pub use batchrules_macros::op_table as op_table_impl;
pub use inventory;

/// A parameter type of a schema signature, as const generics: the argument
/// `KIND` (see [`ParamKind`]), whether it is optional (`T?`), and whether the
/// function is a meta (tensors as `TensorMeta`). [`param_code`] computes it
/// from an op's schema; the attributes assert that the user's parameter type
/// is `<Code<..> as ParamType>::Type`, so every op of every table shares these
/// few impls.
pub struct Code<const KIND: u8, const OPTIONAL: bool, const META: bool>;

/// A return type of a schema signature, as const generics: the number of
/// returned tensors, whether it is one `Tensor[]`, and the signature
/// (0 kernel and decomposition, 1 meta, 2 batching rule). See [`return_code`].
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

        #[cfg(test)]
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
    (BDIM, false, false) => Option<usize>, "Option<usize>";
    (BDIM_LIST, false, false) => &'a [Option<usize>], "&[Option<usize>]";
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

        #[cfg(test)]
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
    (0, false, 0) => Skip, "";
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

pub trait ProbeArg<'a, X, T> {
    fn arg(&self, args: &'a [Arg<X>], i: usize) -> Result<T>;
}
impl<'a, X, T: FromArg<'a, X>> ProbeArg<'a, X, T> for &Probe<X, T> {
    fn arg(&self, args: &'a [Arg<X>], i: usize) -> Result<T> {
        T::from_arg(args.get(i).ok_or_else(|| shim_error("argument", i))?, i)
    }
}
pub trait ProbeArgFallback<'a, X, T> {
    fn arg(&self, args: &'a [Arg<X>], i: usize) -> Result<T>;
}
impl<'a, X, T> ProbeArgFallback<'a, X, T> for Probe<X, T> {
    fn arg(&self, _: &'a [Arg<X>], i: usize) -> Result<T> {
        Err(shim_error("parameter", i))
    }
}

pub trait ProbeBDim<'a, T> {
    fn bdim(&self, bdims: &'a [BDim], i: usize) -> Result<T>;
}
impl<'a, T: FromBDim<'a>> ProbeBDim<'a, T> for &Probe<BDim, T> {
    fn bdim(&self, bdims: &'a [BDim], i: usize) -> Result<T> {
        T::from_bdim(bdims.get(i).ok_or_else(|| shim_error("batch dim", i))?, i)
    }
}
pub trait ProbeBDimFallback<'a, T> {
    fn bdim(&self, bdims: &'a [BDim], i: usize) -> Result<T>;
}
impl<'a, T> ProbeBDimFallback<'a, T> for Probe<BDim, T> {
    fn bdim(&self, _: &'a [BDim], i: usize) -> Result<T> {
        Err(shim_error("batch dim", i))
    }
}

/// The return-value twin of [`Probe`].
pub struct RetProbe<X, R>(Cell<Option<R>>, PhantomData<fn() -> X>);

impl<X, R> RetProbe<X, R> {
    pub fn new(r: R) -> Self {
        RetProbe(Cell::new(Some(r)), PhantomData)
    }
}

pub trait ProbeRet<X> {
    fn outputs(&self) -> Result<Outs<X>>;
}
impl<X, O: Outputs<X>> ProbeRet<X> for &RetProbe<X, Result<O>> {
    fn outputs(&self) -> Result<Outs<X>> {
        match self.0.take() {
            Some(r) => r.map(O::into_outputs),
            None => Err(shim_error("return value", 0)),
        }
    }
}
pub trait ProbeRetFallback<X> {
    fn outputs(&self) -> Result<Outs<X>>;
}
impl<X, R> ProbeRetFallback<X> for RetProbe<X, R> {
    fn outputs(&self) -> Result<Outs<X>> {
        Err(shim_error("return value", 0))
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn expected_types_are_spelled_as_the_schema_signatures() {
        for (name, spelled) in param_type_names().into_iter().chain(return_type_names()) {
            if spelled.is_empty() {
                continue;
            }
            assert_eq!(spelling(name), spelled, "{name}");
        }
    }
}
