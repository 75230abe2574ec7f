//! Structures of tensors ("pytrees" in JAX): values whose tensors a transform
//! can take out, in a fixed order, and put back.
//!
//! A transform such as `vmap` (or `grad`) works on a flat list of tensors. A
//! [`TensorTree`] is any value that can give that list (its *leaves*) and be
//! rebuilt with every leaf replaced, keeping everything else: the parameters of
//! a model, a `Vec` of layers, a tuple of inputs. `#[derive(TensorTree)]`
//! implements it for a struct of tensors.

use std::collections::BTreeMap;
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
    note = "a struct of tensors needs `#[derive(TensorTree)]` (with `use batchrules::TensorTree;`)",
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

    /// Appends to `key` the name leaf `index` is saved under in a weights file
    /// (see [`crate::io`]), spelled as PyTorch's `state_dict` spells it:
    /// `layers.1.weight` for field `weight` of element 1 of field `layers`
    /// (no leading dot, indices as `.1`, a tuple's first element as `0`).
    /// Each segment is joined to what `key` already holds with a `.`, so an
    /// impl pushes its own segment (with [`push_key_segment`]) and then lets
    /// the part that holds the leaf append the rest. A [`Tensor`] appends
    /// nothing. A derived struct uses the field's name, or the name given by
    /// `#[tree(rename = "...")]`; the rename changes the key only, not
    /// [`leaf_path`](Self::leaf_path).
    ///
    /// The default (for hand-written impls that do not say) is
    /// [`leaf_path`](Self::leaf_path) respelled: `.a[1].b` becomes `a.1.b`,
    /// the default path `[leaf 3]` becomes `leaf 3`.
    ///
    /// ```
    /// use batchrules::{Tensor, TensorTree};
    ///
    /// let x = Tensor::scalar(1.0f32);
    /// let tree = (x.clone(), vec![x.clone(), x]);
    /// assert_eq!(tree.leaf_key(2), "1.1");
    /// assert_eq!(tree.leaf_path(2), ".1[1]");
    /// ```
    fn write_leaf_key(&self, index: usize, key: &mut String) {
        let path = self.leaf_path(index);
        let mut segment = String::new();
        for c in path.chars() {
            match c {
                '.' | '[' => {
                    if !segment.is_empty() {
                        push_key_segment(key, &segment);
                        segment.clear();
                    }
                }
                ']' => {}
                c => segment.push(c),
            }
        }
        if !segment.is_empty() {
            push_key_segment(key, &segment);
        }
    }

    /// The name leaf `index` is saved under in a weights file (see
    /// [`write_leaf_key`](Self::write_leaf_key)): `""` for a tensor,
    /// `"layers.1.weight"` in a derived struct.
    fn leaf_key(&self, index: usize) -> String {
        let mut key = String::new();
        self.write_leaf_key(index, &mut key);
        key
    }

    /// Appends, for every leaf in leaf order, its path (as
    /// [`write_leaf_path`](Self::write_leaf_path) writes it) and its key (as
    /// [`write_leaf_key`](Self::write_leaf_key) writes it) to `out`, each
    /// after what `path` and `key` hold. `path` and `key` are left as they
    /// were given.
    ///
    /// [`tree_leaves`], [`tree_zip_map`] and the weights files of
    /// [`crate::io`] name leaves through this in one walk. The default asks
    /// `write_leaf_path` and `write_leaf_key` for each leaf in turn, which
    /// takes time quadratic in the number of leaves of a long `Vec`; the
    /// impls of this crate and the derive walk the structure once.
    ///
    /// ```
    /// use batchrules::{Tensor, TensorTree};
    ///
    /// let x = Tensor::scalar(1.0f32);
    /// let tree = vec![(x.clone(), None), (x.clone(), Some(x))];
    /// let mut names = Vec::new();
    /// tree.write_leaf_names(&mut String::new(), &mut String::new(), &mut names);
    /// assert_eq!(names[2], ("[1].1".to_string(), "1.1".to_string()));
    /// ```
    fn write_leaf_names(
        &self,
        path: &mut String,
        key: &mut String,
        out: &mut Vec<(String, String)>,
    ) {
        for i in 0..self.leaf_count() {
            let (mut p, mut k) = (path.clone(), key.clone());
            self.write_leaf_path(i, &mut p);
            self.write_leaf_key(i, &mut k);
            out.push((p, k));
        }
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

/// A [`TensorTree`] that is a struct: passed on its own to [`vmap`](fn@crate::vmap)
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

/// Appends `segment` to a leaf's key, after a `.` unless the key is still
/// empty: the building block of
/// [`TensorTree::write_leaf_key`] for hand-written impls.
///
/// ```
/// let mut key = String::new();
/// batchrules::push_key_segment(&mut key, "layers");
/// batchrules::push_key_segment(&mut key, "1");
/// assert_eq!(key, "layers.1");
/// ```
pub fn push_key_segment(key: &mut String, segment: &str) {
    if !key.is_empty() {
        key.push('.');
    }
    key.push_str(segment);
}

/// [`TensorTree::write_leaf_names`] of a sequence (`Vec`, array): element
/// `i`'s leaves under `[i]` in the path and `i` in the key.
fn write_names_in<T: TensorTree>(
    items: &[T],
    path: &mut String,
    key: &mut String,
    out: &mut Vec<(String, String)>,
) {
    for (i, item) in items.iter().enumerate() {
        with_segments(path, key, format_args!("[{i}]"), &i.to_string(), |p, k| {
            item.write_leaf_names(p, k, out)
        });
    }
}

/// The (path, key) of every leaf of `tree`, in leaf order.
pub(crate) fn leaf_names<T: TensorTree>(tree: &T) -> Vec<(String, String)> {
    let mut out = Vec::new();
    tree.write_leaf_names(&mut String::new(), &mut String::new(), &mut out);
    out
}

/// Runs `inner` with `segment` appended to `path` and `key_segment` to
/// `key` (after a `.`), then puts both back as they were.
fn with_segments(
    path: &mut String,
    key: &mut String,
    segment: std::fmt::Arguments<'_>,
    key_segment: &str,
    inner: impl FnOnce(&mut String, &mut String),
) {
    let (p, k) = (path.len(), key.len());
    let _ = path.write_fmt(segment);
    push_key_segment(key, key_segment);
    inner(path, key);
    path.truncate(p);
    key.truncate(k);
}

/// The same structure as `tree` with every leaf replaced by `f(leaf)`, in
/// leaf order (see [`TensorTree::leaves`]); the first error of `f` is
/// returned. Fields marked `#[tree(skip)]` are cloned as they are.
///
/// This is [`TensorTree::map_leaves`] with a plain closure, after checking
/// that a hand-written impl's views of its leaves agree (an error naming
/// `tree_map` otherwise).
///
/// ```
/// use batchrules::{ops, tree_map, Tensor, TensorTree};
/// use ndarray::array;
///
/// #[derive(Clone, TensorTree)]
/// struct Linear { w: Tensor, b: Option<Tensor> }
///
/// let layer = Linear { w: Tensor::from(array![1.0, -2.0].into_dyn()), b: None };
/// let halved = tree_map(&layer, |x| ops::mul(x, &Tensor::scalar(0.5f64)))?;
/// assert_eq!(halved.w.to_array::<f64>()?, array![0.5, -1.0].into_dyn());
/// assert!(halved.b.is_none());
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn tree_map<T: TensorTree>(
    tree: &T,
    mut f: impl FnMut(&Tensor) -> Result<Tensor>,
) -> Result<T> {
    let tree = checked_copy(tree, "tree_map")?;
    tree.map_leaves(&mut f)
}

/// The structure of `a` with leaf `i` replaced by `f(a_i, b_i)`, where `b_i`
/// is leaf `i` of `b`: one call for an optimizer step such as
/// `params - lr * grads`. The first error of `f` is returned.
///
/// `a` and `b` must have the same structure: the same number of leaves, each
/// at the same path (a `Vec` of another length, an `Option` that is `None` in
/// one and `Some` in the other, differ); otherwise the error names
/// `tree_zip_map` and the first leaf path where they differ. Skipped fields
/// are taken from `a`. The shapes and dtypes of paired leaves are `f`'s
/// business: an op that `f` calls on mismatched shapes returns its own error
/// (naming that op).
///
/// ```
/// use batchrules::{ops, tree_zip_map, Tensor, TensorTree};
/// use ndarray::array;
///
/// #[derive(Clone, Debug, TensorTree)]
/// struct Linear { w: Tensor, b: Tensor }
///
/// let v = |x: Vec<f64>| Tensor::from(ndarray::Array1::from(x).into_dyn());
/// let params = Linear { w: v(vec![1.0, 2.0]), b: v(vec![0.5]) };
/// let grads = Linear { w: v(vec![10.0, -10.0]), b: v(vec![1.0]) };
/// let lr = Tensor::scalar(0.1f64);
///
/// // One SGD step: params - lr * grads.
/// let stepped = tree_zip_map(&params, &grads, |p, g| ops::sub(p, &ops::mul(&lr, g)?))?;
/// assert_eq!(stepped.w.to_array::<f64>()?, array![0.0, 3.0].into_dyn());
/// assert_eq!(stepped.b.to_array::<f64>()?, array![0.4].into_dyn());
///
/// // A structure that differs is an error that names the leaf.
/// let err = tree_zip_map(&vec![params.clone()], &vec![], |p, _| Ok(p.clone()))
///     .unwrap_err()
///     .to_string();
/// assert!(err.starts_with("tree_zip_map:") && err.contains("[0].w"), "{err}");
/// # Ok::<(), batchrules::Error>(())
/// ```
pub fn tree_zip_map<T: TensorTree>(
    a: &T,
    b: &T,
    mut f: impl FnMut(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<T> {
    let a = checked_copy(a, "tree_zip_map")?;
    let b = checked_copy(b, "tree_zip_map")?;
    let (names_a, names_b) = (leaf_names(&a), leaf_names(&b));
    let (na, nb) = (names_a.len(), names_b.len());
    for i in 0..na.max(nb) {
        let (pa, pb) = (
            names_a.get(i).map(|(p, _)| p.clone()),
            names_b.get(i).map(|(p, _)| p.clone()),
        );
        if pa != pb {
            let show = |p: Option<String>| match p {
                Some(p) => format!(
                    "leaf `{}`",
                    if p.is_empty() {
                        "(the tensor itself)".into()
                    } else {
                        p
                    }
                ),
                None => "no leaf".to_string(),
            };
            return Err(Error::Tensor(format!(
                "tree_zip_map: the two structures differ: the first has {na} leaves and the \
                 second {nb}, and at leaf {i} the first has {} where the second has {}; give \
                 two values of the same structure (the same `Vec` lengths, `Option`s both \
                 `Some` or both `None`)",
                show(pa),
                show(pb)
            )));
        }
    }
    let mut b_leaves = Vec::with_capacity(nb);
    b.leaves(&mut b_leaves);
    if b_leaves.len() != a.leaf_count() {
        // Names that agree over leaves that do not: a hand-written
        // `write_leaf_names` that misses some.
        return Err(Error::Tensor(format!(
            "tree_zip_map: the two structures differ: the first has {} leaves and the second {}",
            a.leaf_count(),
            b_leaves.len()
        )));
    }
    let mut next = b_leaves.iter();
    a.map_leaves(&mut |x| match next.next() {
        Some(y) => f(x, y),
        // Unreachable after `checked_copy` and the path comparison above.
        None => Err(Error::Tensor(
            "tree_zip_map: the second structure has fewer leaves than the first".to_string(),
        )),
    })
}

/// Every leaf of `tree` with its key, in leaf order: the names a weights file
/// uses (see [`TensorTree::leaf_key`]), `layers.1.weight` in a derived
/// struct, like the names of PyTorch's `named_parameters()`. (The Rust-spelled
/// path, `.layers[1].weight`, is [`TensorTree::leaf_path`].)
///
/// ```
/// use batchrules::{tree_leaves, Tensor, TensorTree};
///
/// #[derive(Clone, TensorTree)]
/// struct Linear {
///     #[tree(rename = "weight")]
///     w: Tensor,
///     b: Option<Tensor>,
/// }
///
/// let x = Tensor::scalar(1.0f32);
/// let layers = vec![Linear { w: x.clone(), b: Some(x.clone()) }, Linear { w: x, b: None }];
/// let keys: Vec<String> = tree_leaves(&layers).into_iter().map(|(k, _)| k).collect();
/// assert_eq!(keys, ["0.weight", "0.b", "1.weight"]);
/// ```
pub fn tree_leaves<T: TensorTree>(tree: &T) -> Vec<(String, Tensor)> {
    let mut leaves = Vec::new();
    tree.leaves(&mut leaves);
    leaf_names(tree)
        .into_iter()
        .map(|(_, key)| key)
        .zip(leaves)
        .collect()
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
    fn write_leaf_key(&self, _index: usize, _key: &mut String) {}
    fn write_leaf_names(
        &self,
        path: &mut String,
        key: &mut String,
        out: &mut Vec<(String, String)>,
    ) {
        out.push((path.clone(), key.clone()));
    }
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

/// Writes the key of leaf `index` among `items`, element `i` named `i`.
fn write_key_in<'a, T: TensorTree + 'a>(
    items: impl IntoIterator<Item = &'a T>,
    mut index: usize,
    key: &mut String,
) {
    for (i, item) in items.into_iter().enumerate() {
        let n = item.leaf_count();
        if index < n {
            push_key_segment(key, &i.to_string());
            item.write_leaf_key(index, key);
            return;
        }
        index -= n;
    }
}

/// The methods a sequence of trees (`Vec`, array) shares: its elements'
/// leaves in order, element `i` under `[i]` in the path and `i` in the key.
macro_rules! sequence_tree_methods {
    () => {
        fn leaves(&self, out: &mut Vec<Tensor>) {
            for item in self {
                item.leaves(out);
            }
        }
        fn leaf_count(&self) -> usize {
            self.iter().map(TensorTree::leaf_count).sum()
        }
        fn write_leaf_path(&self, index: usize, path: &mut String) {
            write_path_in(self, index, path, index_segment);
        }
        fn write_leaf_key(&self, index: usize, key: &mut String) {
            write_key_in(self, index, key);
        }
        fn write_leaf_names(
            &self,
            path: &mut String,
            key: &mut String,
            out: &mut Vec<(String, String)>,
        ) {
            write_names_in(self, path, key, out);
        }
    };
}

impl<T: TensorTree> TensorTree for Vec<T> {
    sequence_tree_methods!();
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.iter().map(|item| item.map_leaves(f)).collect()
    }
}

impl<T: TensorTree, const N: usize> TensorTree for [T; N] {
    sequence_tree_methods!();
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
    fn write_leaf_key(&self, index: usize, key: &mut String) {
        if let Some(t) = self {
            t.write_leaf_key(index, key);
        }
    }
    fn write_leaf_names(
        &self,
        path: &mut String,
        key: &mut String,
        out: &mut Vec<(String, String)>,
    ) {
        if let Some(t) = self {
            t.write_leaf_names(path, key, out);
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
    fn write_leaf_key(&self, index: usize, key: &mut String) {
        (**self).write_leaf_key(index, key);
    }
    fn write_leaf_names(
        &self,
        path: &mut String,
        key: &mut String,
        out: &mut Vec<(String, String)>,
    ) {
        (**self).write_leaf_names(path, key, out);
    }
}

/// A map from names to trees: its leaves are those of its values, in the
/// order of the keys; the path of a leaf of value `k` starts with `["k"]`,
/// its key with `k`. A `BTreeMap<String, Tensor>` is what
/// [`io::read_safetensors`](crate::io::read_safetensors) returns, and what
/// saves a bare tensor under a name of your choice.
///
/// ```
/// use std::collections::BTreeMap;
/// use batchrules::{Tensor, TensorTree};
///
/// let x = Tensor::scalar(1.0f32);
/// let map = BTreeMap::from([("b".to_string(), x.clone()), ("a".to_string(), x)]);
/// assert_eq!(map.leaf_key(0), "a");
/// assert_eq!(map.leaf_path(1), "[\"b\"]");
/// ```
impl<T: TensorTree> TensorTree for BTreeMap<String, T> {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        for item in self.values() {
            item.leaves(out);
        }
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        self.iter()
            .map(|(k, v)| Ok((k.clone(), v.map_leaves(f)?)))
            .collect()
    }
    fn leaf_count(&self) -> usize {
        self.values().map(TensorTree::leaf_count).sum()
    }
    fn write_leaf_path(&self, mut index: usize, path: &mut String) {
        for (k, v) in self {
            let n = v.leaf_count();
            if index < n {
                let _ = write!(path, "[{k:?}]");
                v.write_leaf_path(index, path);
                return;
            }
            index -= n;
        }
    }
    fn write_leaf_key(&self, mut index: usize, key: &mut String) {
        for (k, v) in self {
            let n = v.leaf_count();
            if index < n {
                push_key_segment(key, k);
                v.write_leaf_key(index, key);
                return;
            }
            index -= n;
        }
    }
    fn write_leaf_names(
        &self,
        path: &mut String,
        key: &mut String,
        out: &mut Vec<(String, String)>,
    ) {
        for (k, v) in self {
            with_segments(path, key, format_args!("[{k:?}]"), k, |p, kk| {
                v.write_leaf_names(p, kk, out)
            });
        }
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
            #[allow(unused_assignments)]
            fn write_leaf_key(&self, index: usize, key: &mut String) {
                let mut index = index;
                $(
                    let n = self.$idx.leaf_count();
                    if index < n {
                        push_key_segment(key, stringify!($idx));
                        self.$idx.write_leaf_key(index, key);
                        return;
                    }
                    index -= n;
                )+
            }
            fn write_leaf_names(&self, path: &mut String, key: &mut String, out: &mut Vec<(String, String)>) {
                $(
                    with_segments(path, key, format_args!(concat!(".", stringify!($idx))), stringify!($idx), |p, k| {
                        self.$idx.write_leaf_names(p, k, out)
                    });
                )+
            }
        }
    };
}
tuple_tree!(A 0);
tuple_tree!(A 0, B 1);
tuple_tree!(A 0, B 1, C 2);
tuple_tree!(A 0, B 1, C 2, D 3);

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
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

    pub(crate) fn leaves_come_in_structure_order() {
        let tree = (
            t(1.0),
            vec![Some(t(2.0)), None, Some(t(3.0))],
            [Box::new(t(4.0)), Box::new(t(5.0))],
            (t(6.0),),
        );
        assert_eq!(leaves_of(&tree), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(tree.leaf_count(), 6);
    }

    pub(crate) fn map_leaves_keeps_structure_and_order() {
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

    pub(crate) fn map_leaves_stops_at_the_first_error() {
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

    pub(crate) fn with_leaves_rebuilds_and_checks_the_count() {
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

    pub(crate) fn leaf_paths_name_where_each_leaf_sits() {
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

    pub(crate) fn empty_structures_have_no_leaves() {
        let empty: Vec<Tensor> = Vec::new();
        assert_eq!(empty.leaf_count(), 0);
        assert!(empty.with_leaves(Vec::new()).unwrap().is_empty());
        let none: Option<Tensor> = None;
        assert_eq!(none.leaf_count(), 0);
        let arr: [Tensor; 0] = [];
        assert_eq!(arr.map_leaves(&mut add_one).unwrap().len(), 0);
    }

    crate::core::unit_test::test_list! {
        leaves_come_in_structure_order,
        map_leaves_keeps_structure_and_order,
        map_leaves_stops_at_the_first_error,
        with_leaves_rebuilds_and_checks_the_count,
        leaf_paths_name_where_each_leaf_sits,
        empty_structures_have_no_leaves,
    }
}
