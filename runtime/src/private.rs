//! Items the generated code refers to. Not a public API.
//!
//! Generated code reaches this module only through an op table's hidden
//! `__rt` re-export of it (`op_table!` makes it from `$crate`), never as
//! `::batchrules::__private`, so it works whatever name a crate gives the
//! runtime in its Cargo.toml.

use std::cell::Cell;
use std::marker::PhantomData;

pub use crate::checks::{
    check_arity, check_op, check_param, check_return, param_slot, param_source, return_slot,
};
pub use crate::core::value::{Arg, BDim, BatchedOutput, FromArg, FromBDim, IntoArg, Outputs, Outs};
pub use crate::dispatch::call;
pub use crate::registry::{DecomposeVmap, Location, RegisteredFn, Registration};
pub use crate::schema::{self, Role};
pub use crate::{DType, Error, Result, Tensor, TensorMeta};
pub use batchrules_macros::op_table as op_table_impl;
pub use inventory;

/// The type of parameter `INDEX` of the functions with signature `SIGNATURE`
/// (0 kernel and decomposition, 1 meta, 2 batching rule) of one op: each op
/// table implements it for its `__Op<N>`, N the op's index, with the types it
/// generates; the attributes assert that the user's parameter types are these.
pub trait ParamType<const SIGNATURE: u8, const INDEX: usize> {
    /// The expected type, with `'a` for its references.
    type Type<'a>;
}

/// The return type of the functions with signature `SIGNATURE` of one op; see
/// [`ParamType`].
pub trait ReturnType<const SIGNATURE: u8> {
    /// The expected type.
    type Type;
}

/// The expected type of an assertion that is off (the op is unknown, or a
/// compile-time check already reports the parameter).
pub struct Skip;

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
