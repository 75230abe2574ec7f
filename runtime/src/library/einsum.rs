//! `einsum` (`ops/einsum.toml`): the equation's parser, the planner that
//! lowers it to a left-to-right chain of batched matrix products, and the
//! composite itself (its meta checks the equation against the operands'
//! shapes; the decomposition runs the plan with `permute`, `reshape`,
//! `index_select` and `bmm`, so vmap batches it and grad and jvp
//! differentiate it with no rule of its own).

use crate::batching::shape_arg;
use crate::core::alloc::checked_numel;
use crate::{decompose, meta, ops, DType, Error, Result, Tensor, TensorMeta};

/// A subscript of an einsum term: a letter, or the `...` of the remaining
/// dims; with its position (in characters) in the equation.
#[derive(Clone, Copy)]
enum Sub {
    Letter(u8, usize),
    Ellipsis,
}

/// The terms of an equation: one per operand, and the output if explicit.
struct Parsed {
    inputs: Vec<Vec<Sub>>,
    output: Option<Vec<Sub>>,
}

/// An error about the equation at character `at`.
fn bad_equation(equation: &str, at: usize, what: String) -> Error {
    Error::invalid(format!(
        "{what} at position {at} of the equation {equation:?}"
    ))
}

/// Parses an equation's syntax (not yet against the operands).
fn parse_equation(equation: &str) -> Result<Parsed> {
    let chars: Vec<char> = equation.chars().collect();
    // The terms so far; after '->' the last one is the output.
    let mut terms: Vec<Vec<Sub>> = vec![Vec::new()];
    let mut arrow = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at_arrow = c == '-' && chars.get(i + 1) == Some(&'>');
        let at_ellipsis =
            c == '.' && chars.get(i + 1) == Some(&'.') && chars.get(i + 2) == Some(&'.');
        let term = terms.last_mut().expect("one term at least");
        match c {
            c if c.is_ascii_alphabetic() => term.push(Sub::Letter(c as u8, i)),
            c if c.is_whitespace() => {}
            ',' if arrow => {
                return Err(bad_equation(
                    equation,
                    i,
                    "a ',' in the output (after '->')".into(),
                ))
            }
            ',' => terms.push(Vec::new()),
            '-' if at_arrow && arrow => {
                return Err(bad_equation(equation, i, "a second '->'".into()))
            }
            '-' if at_arrow => {
                terms.push(Vec::new());
                arrow = true;
                i += 1;
            }
            '-' => {
                return Err(bad_equation(
                    equation,
                    i,
                    "a '-' not followed by '>'".into(),
                ))
            }
            '.' if at_ellipsis => {
                if term.iter().any(|s| matches!(s, Sub::Ellipsis)) {
                    return Err(bad_equation(
                        equation,
                        i,
                        "a second '...' in one term".into(),
                    ));
                }
                term.push(Sub::Ellipsis);
                i += 2;
            }
            '.' => {
                return Err(bad_equation(
                    equation,
                    i,
                    "a '.' that is not part of an ellipsis '...'".into(),
                ))
            }
            other => {
                return Err(bad_equation(
                    equation,
                    i,
                    format!("invalid subscript {other:?} (subscripts are letters a-z and A-Z)"),
                ))
            }
        }
        i += 1;
    }
    let output = if arrow { terms.pop() } else { None };
    Ok(Parsed {
        inputs: terms,
        output,
    })
}

/// A dim's label: a letter's byte, or `ELLIPSIS + k` for dim `k` of the
/// operands' broadcast `...` dims.
type Label = u32;
const ELLIPSIS: Label = 256;

/// An equation checked against the operands' shapes: each operand's dims
/// labelled, the output's labels, and each label's (broadcast) size.
struct Plan {
    terms: Vec<Vec<Label>>,
    output: Vec<Label>,
    sizes: std::collections::BTreeMap<Label, usize>,
}

fn letters(term: &[Sub]) -> String {
    term.iter()
        .map(|s| match s {
            Sub::Letter(c, _) => (*c as char).to_string(),
            Sub::Ellipsis => "...".to_string(),
        })
        .collect()
}

fn plan_einsum(equation: &str, shapes: &[&[usize]]) -> Result<Plan> {
    let parsed = parse_equation(equation)?;
    if parsed.inputs.len() != shapes.len() {
        return Err(Error::invalid(format!(
            "the equation {equation:?} has {} operand terms, but {} operands were given",
            parsed.inputs.len(),
            shapes.len()
        )));
    }
    // The rank of each operand's `...`, and their broadcast.
    let mut ellipsis_ranks = Vec::with_capacity(shapes.len());
    for (k, (term, shape)) in parsed.inputs.iter().zip(shapes).enumerate() {
        let named = term.iter().filter(|s| matches!(s, Sub::Letter(..))).count();
        let has_ellipsis = named < term.len();
        if (!has_ellipsis && named != shape.len()) || named > shape.len() {
            return Err(Error::invalid(format!(
                "operand {k} has {} dims (shape {shape:?}), but its subscripts {:?} in {equation:?} name {named}",
                shape.len(),
                letters(term)
            )));
        }
        ellipsis_ranks.push(shape.len() - named);
    }
    let ellipsis_rank = ellipsis_ranks.iter().copied().max().unwrap_or(0);
    let mut sizes = std::collections::BTreeMap::new();
    let mut terms = Vec::with_capacity(shapes.len());
    for (k, (term, shape)) in parsed.inputs.iter().zip(shapes).enumerate() {
        let mut labels = Vec::with_capacity(shape.len());
        for s in term {
            match *s {
                Sub::Letter(c, _) => labels.push(Label::from(c)),
                Sub::Ellipsis => {
                    let r = ellipsis_ranks[k];
                    labels
                        .extend((ellipsis_rank - r..ellipsis_rank).map(|j| ELLIPSIS + j as Label));
                }
            }
        }
        for (d, (&label, &size)) in labels.iter().zip(shape.iter()).enumerate() {
            if labels[..d].contains(&label) {
                // A diagonal: the repeated dims must agree exactly.
                let first = labels.iter().position(|&l| l == label).expect("seen");
                if shape[first] != size {
                    return Err(Error::invalid(format!(
                        "subscript {:?} is repeated in operand {k} for dims of sizes {} and {size} (a diagonal needs equal sizes)",
                        label as u8 as char, shape[first]
                    )));
                }
            }
            // A label's size across the operands broadcasts as numpy's and
            // PyTorch's do: sizes 1 and n (n may be 0) give n, in any order.
            let entry = sizes.entry(label).or_insert(size);
            if *entry != size && *entry != 1 && size != 1 {
                let name = if label >= ELLIPSIS {
                    "...".to_string()
                } else {
                    (label as u8 as char).to_string()
                };
                return Err(Error::invalid(format!(
                    "subscript {name:?} has sizes {} and {size} (operand {k}, shape {shape:?}) in {equation:?}: they must agree or be 1",
                    *entry
                )));
            }
            if *entry == 1 {
                *entry = size;
            }
        }
        terms.push(labels);
    }
    let ellipsis_labels = (0..ellipsis_rank).map(|j| ELLIPSIS + j as Label);
    let output = match parsed.output {
        Some(out) => {
            let mut labels: Vec<Label> = Vec::new();
            for s in out {
                match s {
                    Sub::Letter(c, at) => {
                        let label = Label::from(c);
                        if !sizes.contains_key(&label) {
                            return Err(bad_equation(
                                equation,
                                at,
                                format!("output subscript {:?} appears in no input", c as char),
                            ));
                        }
                        if labels.contains(&label) {
                            return Err(bad_equation(
                                equation,
                                at,
                                format!("output subscript {:?} appears twice", c as char),
                            ));
                        }
                        labels.push(label);
                    }
                    Sub::Ellipsis => labels.extend(ellipsis_labels.clone()),
                }
            }
            labels
        }
        None => {
            let mut once: Vec<Label> = sizes
                .keys()
                .copied()
                .filter(|&l| {
                    l < ELLIPSIS && terms.iter().flatten().filter(|&&m| m == l).count() == 1
                })
                .collect();
            once.sort_unstable();
            ellipsis_labels.chain(once).collect()
        }
    };
    Ok(Plan {
        terms,
        output,
        sizes,
    })
}

#[meta(op = "einsum")]
fn einsum_meta(equation: &str, operands: &[TensorMeta]) -> Result<TensorMeta> {
    let shapes: Vec<&[usize]> = operands.iter().map(TensorMeta::shape).collect();
    let plan = plan_einsum(equation, &shapes)?;
    let Some(first) = operands.first() else {
        return Err(Error::invalid("needs at least one operand"));
    };
    let dtype = first.dtype();
    if dtype == DType::Bool || operands.iter().any(|o| o.dtype() != dtype) {
        let dtypes: Vec<String> = operands.iter().map(|o| o.dtype().to_string()).collect();
        return Err(Error::invalid(format!(
            "the operands must have one dtype, f32, f64 or i64; got {}",
            dtypes.join(", ")
        )));
    }
    let shape: Vec<usize> = plan.output.iter().map(|l| plan.sizes[l]).collect();
    checked_numel(&shape)?;
    Ok(TensorMeta::new(shape, dtype))
}

/// An operand with its dims' labels.
struct Labelled {
    t: Tensor,
    labels: Vec<Label>,
}

impl Labelled {
    /// The dims of `labels` (each present) in that order.
    fn dims_of(&self, labels: &[Label]) -> Vec<usize> {
        labels
            .iter()
            .map(|l| {
                self.labels
                    .iter()
                    .position(|m| m == l)
                    .expect("a present label")
            })
            .collect()
    }

    /// Sums the dims whose labels `keep` rejects.
    fn sum_unless(self, keep: impl Fn(Label) -> bool) -> Result<Labelled> {
        let mut t = self.t;
        let mut labels = self.labels;
        for d in (0..labels.len()).rev() {
            if !keep(labels[d]) {
                t = ops::sum(&t, Some(d as i64), false)?;
                labels.remove(d);
            }
        }
        Ok(Labelled { t, labels })
    }

    /// Takes the diagonal of each label repeated within the operand: the
    /// repeated dims moved last and flattened, and every `(n^r - 1) / (n - 1)`-th
    /// element selected (element `(k, k, ..., k)`).
    fn diagonals(self) -> Result<Labelled> {
        let mut cur = self;
        while let Some(label) = cur
            .labels
            .iter()
            .copied()
            .find(|l| cur.labels.iter().filter(|m| *m == l).count() > 1)
        {
            let shape = cur.t.shape().to_vec();
            let repeated: Vec<usize> = (0..shape.len())
                .filter(|&d| cur.labels[d] == label)
                .collect();
            let rest: Vec<usize> = (0..shape.len())
                .filter(|&d| cur.labels[d] != label)
                .collect();
            let n = shape[repeated[0]];
            let mut order = rest.clone();
            order.extend(&repeated);
            let moved = ops::permute(&cur.t, &shape_arg(None, &order))?;
            let mut flat: Vec<usize> = rest.iter().map(|&d| shape[d]).collect();
            let flat_len = checked_numel(&vec![n; repeated.len()])?;
            flat.push(flat_len);
            let moved = ops::reshape(&moved, &shape_arg(None, &flat))?;
            let step: usize = (0..repeated.len()).map(|j| n.pow(j as u32)).sum();
            let index: Vec<i64> = (0..n).map(|k| (k * step) as i64).collect();
            let index = Tensor::from_shape_vec(&[n], index)?;
            let t = ops::index_select(&moved, rest.len() as i64, &index)?;
            let mut labels: Vec<Label> = rest.iter().map(|&d| cur.labels[d]).collect();
            labels.push(label);
            cur = Labelled { t, labels };
        }
        Ok(cur)
    }

    /// The size of the dim labelled `label` (present).
    fn size(&self, label: Label) -> usize {
        self.t.shape()[self.dims_of(&[label])[0]]
    }

    /// Moved to `labels`' order and reshaped to the products of its groups'
    /// sizes, each dim expanded to `size(label)` (a size-1 dim broadcast
    /// against another operand's).
    fn grouped(&self, groups: &[&[Label]], size: impl Fn(Label) -> usize) -> Result<Tensor> {
        let order: Vec<Label> = groups.iter().flat_map(|g| g.iter().copied()).collect();
        let dims = self.dims_of(&order);
        let mut t = if dims.iter().enumerate().all(|(i, &d)| i == d) {
            self.t.clone()
        } else {
            ops::permute(&self.t, &shape_arg(None, &dims))?
        };
        let full: Vec<usize> = order.iter().map(|&l| size(l)).collect();
        if t.shape() != full.as_slice() {
            t = ops::expand(&t, &shape_arg(None, &full))?;
        }
        let grouped: Vec<usize> = groups
            .iter()
            .map(|g| g.iter().map(|&l| size(l)).product())
            .collect();
        ops::reshape(&t, &shape_arg(None, &grouped))
    }

    /// `[batch, rows, cols]`, as [`Labelled::grouped`] gives it, or, when the
    /// operand already holds its labels in the order `batch, cols, rows` (and
    /// not in the order asked for), grouped that way and its last two dims
    /// swapped: a strided view the matrix product reads as it is, where
    /// moving the labels would copy the whole operand (the Jacobians of
    /// `Naf,Mbf->NMab`, whose right operand is `[M b, f]`, are 138 MB each in
    /// W15). The product's values are the same either way (the GEMM kernels
    /// pack both operands; `tests/suite/einsum_broadcast.rs` compares the
    /// bits). Not for products small enough for the plain loop of
    /// `library/gemm.rs`, which reads row-major operands only: a view would
    /// move them to another engine, with other rounding; nor for products
    /// with a dim of 1 or 2, which the `gemm` crate computes by other
    /// kernels chosen by the operands' strides. (`other`: the
    /// labels of the product's third dim, the other operand's own.)
    fn matrices(
        &self,
        batch: &[Label],
        rows: &[Label],
        cols: &[Label],
        other: &[Label],
        size: impl Fn(Label) -> usize + Copy,
    ) -> Result<Tensor> {
        let in_order = |groups: [&[Label]; 3]| {
            let order: Vec<Label> = groups.iter().flat_map(|g| g.iter().copied()).collect();
            self.dims_of(&order)
                .iter()
                .enumerate()
                .all(|(i, &d)| i == d)
        };
        let group = |g: &[Label]| g.iter().try_fold(1usize, |w, &l| w.checked_mul(size(l)));
        let sizes = [group(rows), group(cols), group(other)];
        let work = sizes
            .iter()
            .try_fold(1usize, |w, s| s.and_then(|s| w.checked_mul(s)));
        if work.is_none_or(|w| w > crate::library::gemm::SMALL_GEMM)
            && sizes.iter().all(|s| s.is_none_or(|s| s > 2))
            && !in_order([batch, rows, cols])
            && in_order([batch, cols, rows])
        {
            let swapped = self.grouped(&[batch, cols, rows], size)?;
            return ops::transpose(&swapped, -1, -2);
        }
        self.grouped(&[batch, rows, cols], size)
    }
}

/// Two sizes of one label broadcast: 1 and `n` give `n` (0 included).
fn broadcast_size(a: usize, b: usize) -> usize {
    if a == 1 {
        b
    } else {
        a
    }
}

/// The contraction of `a` and `b` over their shared labels not in `needed`,
/// as one `bmm`: `[batch, left, inner] @ [batch, inner, right]`. Nothing is
/// expanded beyond what the product needs: a label contracted here whose
/// size is 1 in one operand is summed out of each operand on its own (the
/// sum factors), and a label of one operand only keeps that operand's size
/// (a size-1 dim broadcast later, by a later operand or the output).
fn contract(a: Labelled, b: Labelled, needed: &[Label]) -> Result<Labelled> {
    let a = a.sum_unless(|l| needed.contains(&l) || b.labels.contains(&l))?;
    let b = b.sum_unless(|l| needed.contains(&l) || a.labels.contains(&l))?;
    let lone: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|&l| {
            b.labels.contains(&l) && !needed.contains(&l) && (a.size(l) == 1) != (b.size(l) == 1)
        })
        .collect();
    let a = a.sum_unless(|l| !lone.contains(&l))?;
    let b = b.sum_unless(|l| !lone.contains(&l))?;
    let shared: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l))
        .collect();
    let batch: Vec<Label> = shared
        .iter()
        .copied()
        .filter(|l| needed.contains(l))
        .collect();
    let inner: Vec<Label> = shared
        .iter()
        .copied()
        .filter(|l| !needed.contains(l))
        .collect();
    let left: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    let right: Vec<Label> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !shared.contains(l))
        .collect();
    // Shared labels at their broadcast size; the others at their own.
    let size = |l: Label| match (a.labels.contains(&l), b.labels.contains(&l)) {
        (true, true) => broadcast_size(a.size(l), b.size(l)),
        (true, false) => a.size(l),
        _ => b.size(l),
    };
    let lhs = a.matrices(&batch, &left, &inner, &right, size)?;
    let rhs = b.matrices(&batch, &inner, &right, &left, size)?;
    let product = ops::bmm(&lhs, &rhs)?;
    let mut labels = batch;
    labels.extend(left);
    labels.extend(right);
    let shape: Vec<usize> = labels.iter().map(|&l| size(l)).collect();
    Ok(Labelled {
        t: ops::reshape(&product, &shape_arg(None, &shape))?,
        labels,
    })
}

#[decompose(op = "einsum")]
fn einsum_decomposition(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let shapes: Vec<&[usize]> = operands.iter().map(Tensor::shape).collect();
    let plan = plan_einsum(equation, &shapes)?;
    let n = operands.len();
    // Each operand's diagonals, and its labels no other operand and not the
    // output holds summed away.
    let mut prepared = Vec::with_capacity(n);
    for (i, (t, labels)) in operands.iter().zip(&plan.terms).enumerate() {
        let op = Labelled {
            t: t.clone(),
            labels: labels.clone(),
        }
        .diagonals()?;
        let elsewhere = |l: Label| {
            plan.output.contains(&l)
                || plan
                    .terms
                    .iter()
                    .enumerate()
                    .any(|(j, t)| j != i && t.contains(&l))
        };
        prepared.push(op.sum_unless(elsewhere)?);
    }
    let mut rest = prepared.into_iter();
    let mut acc = rest.next().expect("the meta checked one operand at least");
    for (i, next) in rest.enumerate() {
        // Needed after this step: the output's labels and those of the
        // operands after `next` (operand i + 1).
        let mut needed = plan.output.clone();
        needed.extend(plan.terms[i + 2..].iter().flatten());
        acc = contract(acc, next, &needed)?;
    }
    let acc = acc.sum_unless(|l| plan.output.contains(&l))?;
    // A size-1 dim of a label broadcast to more in the output (by an operand
    // it was not contracted with) is expanded by `grouped`.
    let groups: Vec<&[Label]> = plan.output.iter().map(std::slice::from_ref).collect();
    if groups.is_empty() {
        return Ok(acc.t);
    }
    acc.grouped(&groups, |l| plan.sizes[&l])
}
