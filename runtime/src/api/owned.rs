//! Pointwise ops that take their (first) operand by value and write the
//! result into its buffer when nobody else holds it.
//!
//! `ops::exp(&x)` allocates its output, because `x` is borrowed and still
//! alive. In a chain of pointwise ops most operands are temporaries that no
//! one reads again; giving them by value lets the op reuse their memory:
//!
//! ```
//! use batchrules::{ops, owned, Tensor};
//! use ndarray::array;
//!
//! let x = Tensor::from(array![[-1.0f32, 0.5], [2.0, -3.0]].into_dyn());
//! let bias = Tensor::from(array![1.0f32, 1.0].into_dyn());
//! // `exp` writes a new buffer (`x` is still held); `add` and `relu` write
//! // into it, as nobody else holds it.
//! let y = owned::relu(owned::add(owned::exp(x.clone())?, &bias)?)?;
//! let expected = ops::relu(&ops::add(&ops::exp(&x)?, &bias)?)?;
//! assert_eq!(y.to_array::<f32>()?, expected.to_array::<f32>()?);
//! # Ok::<(), batchrules::Error>(())
//! ```
//!
//! Reuse never changes a result or touches what another handle sees: the
//! buffer is written only when the operand is the only handle of a dense
//! tensor, no other array shares its buffer (a view made from it, a clone of
//! its [`Data`](crate::Data)), and the output has its shape and dtype (`add`
//! of an f32 tensor and an f64 one computes in f64 and allocates). Otherwise
//! the op runs as its [`ops`](crate::ops) function does. The same checks
//! run, and the errors are the same.
//!
//! Under [`vmap`](fn@crate::vmap) the ops reuse the physical buffer of a
//! batched operand nobody else holds (the function's own temporaries): the
//! unary ops always, the binary ones when the operand is batched on dim 0 and
//! the other operand is batched on dim 0 with the same physical rank or is
//! not batched and has at most an example's rank (the physical tensors then
//! broadcast as the examples do); otherwise they run as their `ops`
//! functions do. Under `grad`, `vjp` and `jvp` every op runs as its `ops`
//! function does (they keep operands for the derivative).
//!
//! In the `api` layer (`runtime/src/api/`). It may use the `core`, `table`,
//! `dispatch`, `transforms` and `library` layers; in its own layer, `io` and
//! `testing`. `tests/suite/layers.rs` enforces it.

use crate::core::value::Arg;
use crate::dispatch::{call_owned, one_output, InPlace};
use crate::library::{binary, unary};
use crate::ops::{__index, __TABLE};
use crate::registry;
use crate::{Result, Tensor};

/// Calls the built-in op at `index` of the table (`name` for errors), which
/// has one output, with `args` by value.
fn call(index: usize, name: &str, args: Vec<Arg<Tensor>>, in_place: &InPlace) -> Result<Tensor> {
    let op = registry::entry(&__TABLE, index)?;
    one_output(name, call_owned(op, args, in_place)?)
}

/// One function per pointwise unary op.
macro_rules! owned_unary {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!(
            "[`ops::", stringify!($name), "`](crate::ops::", stringify!($name),
            "), written into `x`'s buffer when nobody else holds it (see the module docs)."
        )]
        pub fn $name(x: Tensor) -> Result<Tensor> {
            let args = vec![Arg::Tensor(x)];
            call(__index::$name, stringify!($name), args, &unary::$name::IN_PLACE)
        }
    )*};
}

/// One function per broadcasting arithmetic op.
macro_rules! owned_binary {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!(
            "[`ops::", stringify!($name), "`](crate::ops::", stringify!($name),
            "), written into `a`'s buffer when nobody else holds it and the result has \
             `a`'s shape and dtype (see the module docs)."
        )]
        pub fn $name(a: Tensor, b: &Tensor) -> Result<Tensor> {
            let args = vec![Arg::Tensor(a), Arg::Tensor(b.clone())];
            call(__index::$name, stringify!($name), args, &binary::$name::IN_PLACE)
        }
    )*};
}

owned_unary!(neg, abs, relu, exp, log, sqrt, sin, cos, tanh, sigmoid);
owned_binary!(add, sub, mul, div, pow, maximum, minimum);
