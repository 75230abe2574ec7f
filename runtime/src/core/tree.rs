//! Structures of tensors ("pytrees" in JAX): values whose tensors a transform
//! can take out, in a fixed order, and put back.
//!
//! A transform such as `vmap` (or `grad`) works on a flat list of tensors. A
//! [`TensorTree`] is any value that can give that list (its *leaves*) and be
//! rebuilt with every leaf replaced, keeping everything else: the parameters of
//! a model, a `Vec` of layers, a tuple of inputs. `#[derive(TensorTree)]`
//! implements it for a struct of tensors.

use std::fmt::Write as _;

use crate::{Error, Result, Tensor};

/// A value made of tensors (its *leaves*) and structure around them: a
/// [`Tensor`] (one leaf), a `Vec`, array, `Option` or `Box` of trees, a tuple of
/// up to four trees, or a struct with `#[derive(TensorTree)]`.
///
/// The order of the leaves is fixed by the structure: [`leaves`](Self::leaves)
/// appends them in that order, and [`map_leaves`](Self::map_leaves) visits them
/// in the same order, so a list of leaves taken from one value can be put back
/// into a value of the same structure with [`with_leaves`](Self::with_leaves).
///
/// ```
/// use batchrules::{Tensor, TensorTree};
///
/// let w = Tensor::scalar(2.0f64);
/// let layers = vec![(w.clone(), Some(w.clone())), (w.clone(), None)];
/// assert_eq!(layers.leaf_count(), 3);
/// assert_eq!(layers.leaf_path(2), "[1].0");
///
/// // Every leaf doubled; the structure (and the `None`) stays.
/// let doubled = layers.map_leaves(&mut |t| batchrules::ops::mul(t, t))?;
/// assert_eq!(doubled[0].1.as_ref().unwrap().to_array::<f64>()?[[]], 4.0);
/// assert!(doubled[1].1.is_none());
/// # Ok::<(), batchrules::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a structure of tensors (`TensorTree`)",
    label = "not a tensor, nor a `Vec`, array, `Option`, `Box` or tuple of tensors, nor a struct with `#[derive(TensorTree)]`",
    note = "in a struct with `#[derive(TensorTree)]`, mark a field that holds no tensor (a size, a flag, a choice) with `#[tree(skip)]`: it is then cloned as it is"
)]
pub trait TensorTree: Sized {
    /// Appends this value's tensors (its leaves) to `out`, in a fixed order.
    fn leaves(&self, out: &mut Vec<Tensor>);

    /// The same structure with every leaf replaced by `f(leaf)`, called in the
    /// order of [`leaves`](Self::leaves). The first error of `f` is returned.
    ///
    /// `f` gets each leaf in place (a reference to the tensor inside `self`,
    /// not to a copy): `vmap`'s `InDim::fields` finds the parts it is given by
    /// where their leaves live.
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self>;

    /// The number of leaves.
    fn leaf_count(&self) -> usize {
        let mut out = Vec::new();
        self.leaves(&mut out);
        out.len()
    }

    /// Appends to `path` where leaf `index` sits in this value, as Rust would
    /// reach it: `.layers[1].w` for field `w` of element 1 of field `layers`,
    /// `.0` for a tuple's first element, nothing for the value itself (a
    /// [`Tensor`]). Used in error messages; an index past the last leaf appends
    /// nothing.
    ///
    /// The default (for hand-written impls that do not say) appends
    /// `[leaf {index}]`.
    fn write_leaf_path(&self, index: usize, path: &mut String) {
        let _ = write!(path, "[leaf {index}]");
    }

    /// Where leaf `index` sits in this value (see
    /// [`write_leaf_path`](Self::write_leaf_path)): `""` for a tensor,
    /// `".layers[1].w"` in a derived struct.
    fn leaf_path(&self, index: usize) -> String {
        let mut path = String::new();
        self.write_leaf_path(index, &mut path);
        path
    }

    /// The same structure with its leaves taken from `leaves`, in order; `self`
    /// is the template. Errors if `leaves` has fewer or more tensors than
    /// [`leaf_count`](Self::leaf_count).
    fn with_leaves<I>(&self, leaves: I) -> Result<Self>
    where
        I: IntoIterator<Item = Tensor>,
    {
        let want = self.leaf_count();
        let mut it = leaves.into_iter();
        let mut taken = 0usize;
        let rebuilt = self.map_leaves(&mut |_| {
            taken += 1;
            if taken > want {
                return Err(inconsistent_tree::<Self>(
                    None,
                    format!("`leaf_count` says {want} but `map_leaves` visits more"),
                ));
            }
            it.next()
                .ok_or_else(|| leaf_count_error(want, taken - 1, false))
        })?;
        if taken != want {
            // `map_leaves` skipped leaves that `leaf_count` counts: the
            // rebuilt value would keep those leaves' old tensors.
            return Err(inconsistent_tree::<Self>(
                None,
                format!("`leaf_count` says {want} but `map_leaves` visits {taken}"),
            ));
        }
        if it.next().is_some() {
            return Err(leaf_count_error(want, want + 1, true));
        }
        Ok(rebuilt)
    }
}

/// A copy of `tree` (new handles of the same tensors), after checking that
/// its three views of its leaves agree: the tensors `leaves` gives, the
/// number `leaf_count` says and the tensors `map_leaves` visits. A
/// hand-written impl where they differ would make a transform read some
/// leaves and put back others, so every transform takes its arguments
/// through this check; its error names `what`, the transform.
pub(crate) fn checked_copy<T: TensorTree>(tree: &T, what: &str) -> Result<T> {
    let mut visited = 0usize;
    let copy = tree.map_leaves(&mut |t| {
        visited += 1;
        Ok(t.clone())
    })?;
    let mut leaves = Vec::new();
    tree.leaves(&mut leaves);
    let counted = tree.leaf_count();
    if leaves.len() != counted || visited != counted {
        return Err(inconsistent_tree::<T>(
            Some(what),
            format!(
                "`leaves` gives {} tensors, `leaf_count` says {counted} and `map_leaves` visits \
                 {visited}",
                leaves.len()
            ),
        ));
    }
    Ok(copy)
}

fn inconsistent_tree<T>(what: Option<&str>, detail: String) -> Error {
    let prefix = what.map(|w| format!("{w}: ")).unwrap_or_default();
    Error::Tensor(format!(
        "{prefix}the structure of tensors `{}` is inconsistent: {detail}; a hand-written \
         TensorTree impl must make `leaves`, `leaf_count` and `map_leaves` agree (or derive it \
         with #[derive(TensorTree)])",
        std::any::type_name::<T>()
    ))
}

/// A [`TensorTree`] that is a struct: passed on its own to [`vmap`](crate::vmap)
/// (or returned from the vmapped function), it is **one** argument (or output),
/// whose in_dim (or out_dim) applies to all its leaves. A `Vec` passed on its
/// own is one argument per element instead, and a tuple one per element.
///
/// `#[derive(TensorTree)]` implements it. For a struct whose `TensorTree` impl
/// is written by hand, implement it too (it has no methods), or pass the value
/// in a 1-tuple: `vmap(f).call((&value,))`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a struct of tensors: it needs `#[derive(TensorTree)]`",
    label = "`{Self}` does not derive `TensorTree`",
    note = "put `#[derive(TensorTree)]` on the struct (with `use batchrules::TensorTree;`); a field that holds no tensor (a size, a flag) takes `#[tree(skip)]`",
    note = "for a struct whose `TensorTree` impl is written by hand, also write `impl batchrules::StructTree for {Self} {{}}`"
)]
pub trait StructTree: TensorTree {}

fn leaf_count_error(want: usize, got: usize, more: bool) -> Error {
    let got = if more {
        format!("more than {want}")
    } else {
        got.to_string()
    };
    Error::Tensor(format!(
        "a structure of tensors with {want} leaves was rebuilt from {got} tensors; give exactly one tensor per leaf, in the order of `leaves`"
    ))
}

impl TensorTree for Tensor {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.clone());
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        f(self)
    }
    fn leaf_count(&self) -> usize {
        1
    }
    fn write_leaf_path(&self, _index: usize, _path: &mut String) {}
}

/// Writes the path of leaf `index` among `items`, each shown by `segment(i)`.
fn write_path_in<'a, T: TensorTree + 'a>(
    items: impl IntoIterator<Item = &'a T>,
    mut index: usize,
    path: &mut String,
    segment: impl Fn(usize, &mut String),
) {
    for (i, item) in items.into_iter().enumerate() {
        let n = item.leaf_count();
        if index < n {
            segment(i, path);
            item.write_leaf_path(index, path);
            return;
        }
        index -= n;
    }
}

fn index_segment(i: usize, path: &mut String) {
    let _ = write!(path, "[{i}]");
}

impl<T: TensorTree> TensorTree for Vec<T> {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        for item in self {
            item.leaves(out);
        }
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.iter().map(|item| item.map_leaves(f)).collect()
    }
    fn leaf_count(&self) -> usize {
        self.iter().map(TensorTree::leaf_count).sum()
    }
    fn write_leaf_path(&self, index: usize, path: &mut String) {
        write_path_in(self, index, path, index_segment);
    }
}

impl<T: TensorTree, const N: usize> TensorTree for [T; N] {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        for item in self {
            item.leaves(out);
        }
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        let mut mapped = Vec::with_capacity(N);
        for item in self {
            mapped.push(item.map_leaves(f)?);
        }
        // `mapped` has exactly N elements, so the conversion cannot fail.
        mapped
            .try_into()
            .map_err(|_| Error::Tensor(format!("rebuilding an array of {N} trees")))
    }
    fn leaf_count(&self) -> usize {
        self.iter().map(TensorTree::leaf_count).sum()
    }
    fn write_leaf_path(&self, index: usize, path: &mut String) {
        write_path_in(self, index, path, index_segment);
    }
}

/// `None` has no leaves; `Some(t)` has the leaves of `t` (its path adds nothing).
impl<T: TensorTree> TensorTree for Option<T> {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        if let Some(t) = self {
            t.leaves(out);
        }
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.as_ref().map(|t| t.map_leaves(f)).transpose()
    }
    fn leaf_count(&self) -> usize {
        self.as_ref().map_or(0, TensorTree::leaf_count)
    }
    fn write_leaf_path(&self, index: usize, path: &mut String) {
        if let Some(t) = self {
            t.write_leaf_path(index, path);
        }
    }
}

impl<T: TensorTree> TensorTree for Box<T> {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        (**self).leaves(out);
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        (**self).map_leaves(f).map(Box::new)
    }
    fn leaf_count(&self) -> usize {
        (**self).leaf_count()
    }
    fn write_leaf_path(&self, index: usize, path: &mut String) {
        (**self).write_leaf_path(index, path);
    }
}

macro_rules! tuple_tree {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: TensorTree),+> TensorTree for ($($name,)+) {
            fn leaves(&self, out: &mut Vec<Tensor>) {
                $(self.$idx.leaves(out);)+
            }
            fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
                Ok(($(self.$idx.map_leaves(f)?,)+))
            }
            fn leaf_count(&self) -> usize {
                0 $(+ self.$idx.leaf_count())+
            }
            #[allow(unused_assignments)]
            fn write_leaf_path(&self, index: usize, path: &mut String) {
                let mut index = index;
                $(
                    let n = self.$idx.leaf_count();
                    if index < n {
                        path.push_str(concat!(".", stringify!($idx)));
                        self.$idx.write_leaf_path(index, path);
                        return;
                    }
                    index -= n;
                )+
            }
        }
    };
}
tuple_tree!(A 0);
tuple_tree!(A 0, B 1);
tuple_tree!(A 0, B 1, C 2);
tuple_tree!(A 0, B 1, C 2, D 3);

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: f64) -> Tensor {
        Tensor::scalar(v)
    }

    fn values(ts: &[Tensor]) -> Vec<f64> {
        ts.iter()
            .map(|t| t.to_array::<f64>().unwrap()[[]])
            .collect()
    }

    fn leaves_of<T: TensorTree>(tree: &T) -> Vec<f64> {
        let mut out = Vec::new();
        tree.leaves(&mut out);
        values(&out)
    }

    fn add_one(x: &Tensor) -> Result<Tensor> {
        Ok(t(x.to_array::<f64>()?[[]] + 1.0))
    }

    #[test]
    fn leaves_come_in_structure_order() {
        let tree = (
            t(1.0),
            vec![Some(t(2.0)), None, Some(t(3.0))],
            [Box::new(t(4.0)), Box::new(t(5.0))],
            (t(6.0),),
        );
        assert_eq!(leaves_of(&tree), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(tree.leaf_count(), 6);
    }

    #[test]
    fn map_leaves_keeps_structure_and_order() {
        let tree = (vec![t(1.0), t(2.0)], None::<Tensor>, [t(3.0)]);
        let mut seen = Vec::new();
        let mapped = tree
            .map_leaves(&mut |x| {
                seen.push(x.to_array::<f64>()?[[]]);
                add_one(x)
            })
            .unwrap();
        assert_eq!(seen, [1.0, 2.0, 3.0]);
        assert_eq!(leaves_of(&mapped), [2.0, 3.0, 4.0]);
        assert!(mapped.1.is_none());
        assert_eq!(mapped.0.len(), 2);
    }

    #[test]
    fn map_leaves_stops_at_the_first_error() {
        let tree = vec![t(1.0), t(2.0), t(3.0)];
        let mut calls = 0;
        let err = tree
            .map_leaves(&mut |x| {
                calls += 1;
                if calls == 2 {
                    Err(Error::Tensor("boom".into()))
                } else {
                    add_one(x)
                }
            })
            .unwrap_err();
        assert_eq!(calls, 2);
        assert!(err.to_string().contains("boom"));
    }

    #[test]
    fn with_leaves_rebuilds_and_checks_the_count() {
        let tree = (t(0.0), vec![t(0.0), t(0.0)]);
        let rebuilt = tree.with_leaves(vec![t(7.0), t(8.0), t(9.0)]).unwrap();
        assert_eq!(leaves_of(&rebuilt), [7.0, 8.0, 9.0]);

        let few = tree.with_leaves(vec![t(7.0)]).unwrap_err().to_string();
        assert!(few.contains("3 leaves was rebuilt from 1 tensors"), "{few}");
        let many = tree
            .with_leaves(vec![t(1.0), t(2.0), t(3.0), t(4.0)])
            .unwrap_err()
            .to_string();
        assert!(many.contains("from more than 3 tensors"), "{many}");
    }

    #[test]
    fn leaf_paths_name_where_each_leaf_sits() {
        let tree = (
            t(0.0),
            vec![(t(0.0), None::<Tensor>), (t(0.0), Some(t(0.0)))],
        );
        let paths: Vec<String> = (0..tree.leaf_count()).map(|i| tree.leaf_path(i)).collect();
        assert_eq!(paths, [".0", ".1[0].0", ".1[1].0", ".1[1].1"]);
        assert_eq!(t(1.0).leaf_path(0), "");
        assert_eq!([t(1.0), t(2.0)].leaf_path(1), "[1]");
        assert_eq!(Box::new(vec![t(1.0)]).leaf_path(0), "[0]");
        // Past the end: nothing.
        assert_eq!(tree.leaf_path(9), "");
    }

    #[test]
    fn empty_structures_have_no_leaves() {
        let empty: Vec<Tensor> = Vec::new();
        assert_eq!(empty.leaf_count(), 0);
        assert!(empty.with_leaves(Vec::new()).unwrap().is_empty());
        let none: Option<Tensor> = None;
        assert_eq!(none.leaf_count(), 0);
        let arr: [Tensor; 0] = [];
        assert_eq!(arr.map_leaves(&mut add_one).unwrap().len(), 0);
    }
}
