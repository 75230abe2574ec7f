//! What a vmapped function takes and returns: the forms [`Vmap::call`]
//! accepts ([`VmapInputs`]) and the forms the function may return
//! ([`VmapOutputs`]). Both are built on [`TensorTree`]: each top-level argument
//! or output is a tree whose leaves vmap batches.
//!
//! [`Vmap::call`]: super::Vmap::call

use crate::core::tree::{StructTree, TensorTree};
use crate::{Error, Outs, Result, Tensor};

/// The input tensors of a vmap call, every leaf of every argument in order
/// (inline up to four).
pub type Inputs = smallvec::SmallVec<[Tensor; 4]>;

/// The number of leaves of each top-level argument (or output), in order
/// (inline up to four).
pub type LeafCounts = smallvec::SmallVec<[usize; 4]>;

/// The inputs of a vmapped function, in the forms [`Vmap::call`] accepts, and
/// what the function receives for each.
///
/// | given to `call`                               | top-level arguments | the function receives |
/// |-----------------------------------------------|---------------------|-----------------------|
/// | `&Tensor` or `Tensor`                         | one                 | `Tensor`              |
/// | `&S`, `S` a struct with `#[derive(TensorTree)]` | one               | `S`                   |
/// | `(&A,)` up to `(&A, &B, &C, &D)`, each a [`TensorTree`] | one per element | `(A,)` ... `(A, B, C, D)` |
/// | `&[T]`, `&Vec<T>` or `Vec<T>`, `T` a [`TensorTree`] (e.g. `Tensor`) | one per element | `Vec<T>` |
///
/// `in_dims` has one entry per top-level argument, and an entry applies to
/// every leaf (tensor) of its argument: with `call((&params, &x))` and
/// `.in_dims([None, Some(0)])` the parameters are shared and the data is
/// batched. The function receives the same structure with every leaf replaced
/// by its batched tensor; fields marked `#[tree(skip)]` are cloned.
///
/// The methods are the plumbing the transforms share (vmap here, and the
/// transforms that take the same input forms): the flattened leaves, how many
/// belong to each argument, where each sits (for messages), and the rebuild of
/// the function's argument from new leaves.
///
/// [`Vmap::call`]: super::Vmap::call
#[diagnostic::on_unimplemented(
    message = "`vmap` cannot take `{Self}` as its inputs",
    label = "not a tensor, a reference to a struct with `#[derive(TensorTree)]`, a tuple of references, or a list",
    note = "a struct of tensors needs `#[derive(TensorTree)]` (with `use batchrules::TensorTree;`) to be an input",
    note = "several inputs go in one tuple of references: `.call((&params, &x))`, with a closure `|(params, x): (Params, Tensor)| ...`"
)]
pub trait VmapInputs {
    /// What the vmapped function receives.
    type Inner;

    /// Every leaf of every argument, flattened in order: the leaves of
    /// argument 0 (in the order of [`TensorTree::leaves`]), then those of
    /// argument 1, and so on.
    fn tensors(&self) -> Inputs;

    /// The number of leaves of each top-level argument, in order; they add up
    /// to the length of [`tensors`](Self::tensors).
    fn arg_leaf_counts(&self) -> LeafCounts;

    /// Where leaf `leaf` of argument `arg` sits in that argument, for messages:
    /// `""` for a tensor argument, `".layers[1].w"` in a struct (see
    /// [`TensorTree::leaf_path`]).
    fn arg_leaf_path(&self, arg: usize, leaf: usize) -> String;

    /// What the function receives, with `leaves` (one per tensor of
    /// [`tensors`](Self::tensors), in the same order) in place of the leaves;
    /// `self` is the template of the structure. Errors if the number of leaves
    /// differs.
    fn rebuild(&self, leaves: Inputs) -> Result<Self::Inner>;
}

fn too_many_leaves(want: usize) -> Error {
    Error::Tensor(format!(
        "the inputs were rebuilt from more tensors than their {want} leaves; give exactly one tensor per leaf"
    ))
}

fn too_few_leaves(want: usize, got: usize) -> Error {
    Error::Tensor(format!(
        "the inputs have {want} leaves but were rebuilt from {got} tensors; give exactly one tensor per leaf"
    ))
}

fn single_tensor(leaves: Inputs) -> Result<Tensor> {
    let n = leaves.len();
    let mut it = leaves.into_iter();
    match (it.next(), n) {
        (Some(t), 1) => Ok(t),
        (_, 0) => Err(too_few_leaves(1, 0)),
        _ => Err(too_many_leaves(1)),
    }
}

/// The two tensor forms (`&Tensor`, `Tensor`): one argument, one leaf.
macro_rules! tensor_inputs {
    ($($tensor:ty),+) => {$(
        /// A tensor: one argument.
        impl VmapInputs for $tensor {
            type Inner = Tensor;
            fn tensors(&self) -> Inputs {
                smallvec::smallvec![Tensor::clone(self)]
            }
            fn arg_leaf_counts(&self) -> LeafCounts {
                smallvec::smallvec![1]
            }
            fn arg_leaf_path(&self, _arg: usize, _leaf: usize) -> String {
                String::new()
            }
            fn rebuild(&self, leaves: Inputs) -> Result<Tensor> {
                single_tensor(leaves)
            }
        }
    )+};
}
tensor_inputs!(&Tensor, Tensor);

/// A struct passed on its own: one argument.
impl<S: StructTree> VmapInputs for &S {
    type Inner = S;
    fn tensors(&self) -> Inputs {
        let mut out = Vec::new();
        (**self).leaves(&mut out);
        Inputs::from_vec(out)
    }
    fn arg_leaf_counts(&self) -> LeafCounts {
        smallvec::smallvec![(**self).leaf_count()]
    }
    fn arg_leaf_path(&self, _arg: usize, leaf: usize) -> String {
        (**self).leaf_path(leaf)
    }
    fn rebuild(&self, leaves: Inputs) -> Result<S> {
        (**self).with_leaves(leaves)
    }
}

fn items_tensors<T: TensorTree>(items: &[T]) -> Inputs {
    let mut out = Vec::new();
    for item in items {
        item.leaves(&mut out);
    }
    Inputs::from_vec(out)
}

fn items_counts<T: TensorTree>(items: &[T]) -> LeafCounts {
    items.iter().map(TensorTree::leaf_count).collect()
}

fn items_path<T: TensorTree>(items: &[T], arg: usize, leaf: usize) -> String {
    items
        .get(arg)
        .map(|t| t.leaf_path(leaf))
        .unwrap_or_default()
}

/// Each item rebuilt from its share of `leaves`, in order.
fn items_rebuild<T: TensorTree>(items: &[T], leaves: Inputs) -> Result<Vec<T>> {
    let want: usize = items.iter().map(TensorTree::leaf_count).sum();
    if leaves.len() != want {
        return Err(if leaves.len() < want {
            too_few_leaves(want, leaves.len())
        } else {
            too_many_leaves(want)
        });
    }
    let mut it = leaves.into_iter();
    items
        .iter()
        .map(|item| item.with_leaves(it.by_ref().take(item.leaf_count())))
        .collect()
}

/// The three list forms (`&[T]`, `&Vec<T>`, `Vec<T>`): one argument per
/// element, each an item of the list the function receives.
macro_rules! list_inputs {
    ($($list:ty),+) => {$(
        /// A list: one argument per element.
        impl<T: TensorTree> VmapInputs for $list {
            type Inner = Vec<T>;
            fn tensors(&self) -> Inputs {
                items_tensors(self)
            }
            fn arg_leaf_counts(&self) -> LeafCounts {
                items_counts(self)
            }
            fn arg_leaf_path(&self, arg: usize, leaf: usize) -> String {
                items_path(self, arg, leaf)
            }
            fn rebuild(&self, leaves: Inputs) -> Result<Vec<T>> {
                items_rebuild(self, leaves)
            }
        }
    )+};
}
list_inputs!(&[T], &Vec<T>, Vec<T>);

macro_rules! tuple_inputs {
    ($($name:ident $idx:tt),+) => {
        /// A tuple of references to trees: one argument per element.
        impl<$($name: TensorTree),+> VmapInputs for ($(&$name,)+) {
            type Inner = ($($name,)+);
            fn tensors(&self) -> Inputs {
                let mut out = Vec::with_capacity(0 $(+ self.$idx.leaf_count())+);
                $(self.$idx.leaves(&mut out);)+
                Inputs::from_vec(out)
            }
            fn arg_leaf_counts(&self) -> LeafCounts {
                smallvec::smallvec![$(self.$idx.leaf_count()),+]
            }
            fn arg_leaf_path(&self, arg: usize, leaf: usize) -> String {
                match arg {
                    $($idx => self.$idx.leaf_path(leaf),)+
                    _ => String::new(),
                }
            }
            fn rebuild(&self, leaves: Inputs) -> Result<Self::Inner> {
                let want = 0 $(+ self.$idx.leaf_count())+;
                if leaves.len() < want {
                    return Err(too_few_leaves(want, leaves.len()));
                }
                let mut it = leaves.into_iter();
                let inner = ($(self.$idx.with_leaves(it.by_ref().take(self.$idx.leaf_count()))?,)+);
                if it.next().is_some() {
                    return Err(too_many_leaves(want));
                }
                Ok(inner)
            }
        }
    };
}
tuple_inputs!(A 0);
tuple_inputs!(A 0, B 1);
tuple_inputs!(A 0, B 1, C 2);
tuple_inputs!(A 0, B 1, C 2, D 3);

/// The outputs of a vmapped function: a [`Tensor`], a struct with
/// `#[derive(TensorTree)]` (one output), a tuple of up to four trees (one output
/// per element), or a `Vec` of trees (one output per element, e.g.
/// `Vec<Tensor>`).
///
/// `out_dims` has one entry per top-level output, applied to every leaf of
/// that output; vmap returns the same structure with each leaf batched.
#[diagnostic::on_unimplemented(
    message = "a vmapped function cannot return `{Self}`",
    label = "not a tensor, a struct with `#[derive(TensorTree)]`, a tuple of them, or a `Vec`",
    note = "a struct of tensors needs `#[derive(TensorTree)]` (with `use batchrules::TensorTree;`) to be an output"
)]
pub trait VmapOutputs: TensorTree {
    /// The number of leaves of each top-level output, in order.
    fn output_leaf_counts(&self) -> LeafCounts;

    /// Where leaf `leaf` of output `output` sits in that output, for messages
    /// (`""` for a tensor output).
    fn output_leaf_path(&self, output: usize, leaf: usize) -> String;

    /// Every leaf, in the order of [`TensorTree::leaves`].
    fn into_outputs(self) -> Outs<Tensor> {
        let mut out = Vec::new();
        self.leaves(&mut out);
        Outs::from_vec(out)
    }
}

impl VmapOutputs for Tensor {
    fn output_leaf_counts(&self) -> LeafCounts {
        smallvec::smallvec![1]
    }
    fn output_leaf_path(&self, _output: usize, _leaf: usize) -> String {
        String::new()
    }
    fn into_outputs(self) -> Outs<Tensor> {
        smallvec::smallvec![self]
    }
}

/// A struct: one output.
impl<S: StructTree> VmapOutputs for S {
    fn output_leaf_counts(&self) -> LeafCounts {
        smallvec::smallvec![self.leaf_count()]
    }
    fn output_leaf_path(&self, _output: usize, leaf: usize) -> String {
        self.leaf_path(leaf)
    }
}

/// A list: one output per element.
impl<T: TensorTree> VmapOutputs for Vec<T> {
    fn output_leaf_counts(&self) -> LeafCounts {
        items_counts(self)
    }
    fn output_leaf_path(&self, output: usize, leaf: usize) -> String {
        items_path(self, output, leaf)
    }
}

macro_rules! tuple_outputs {
    ($($name:ident $idx:tt),+) => {
        /// A tuple of trees: one output per element.
        impl<$($name: TensorTree),+> VmapOutputs for ($($name,)+) {
            fn output_leaf_counts(&self) -> LeafCounts {
                smallvec::smallvec![$(self.$idx.leaf_count()),+]
            }
            fn output_leaf_path(&self, output: usize, leaf: usize) -> String {
                match output {
                    $($idx => self.$idx.leaf_path(leaf),)+
                    _ => String::new(),
                }
            }
        }
    };
}
tuple_outputs!(A 0);
tuple_outputs!(A 0, B 1);
tuple_outputs!(A 0, B 1, C 2);
tuple_outputs!(A 0, B 1, C 2, D 3);
