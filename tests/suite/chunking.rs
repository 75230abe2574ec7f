//! Chunked vmap: the batch run in chunks and joined equals the whole batch,
//! for every chunk size, with several inputs and outputs, in_dims and out_dims,
//! structs of tensors, nesting and errors.

use batchrules::{ops, vmap, Error, Result, Tensor, TensorTree};
use ndarray::{ArrayD, Dimension, IxDyn};

fn t(shape: &[usize], seed: usize) -> Tensor {
    Tensor::from(ArrayD::from_shape_fn(IxDyn(shape), |i| {
        let k = i.slice().iter().fold(seed, |a, &b| a * 31 + b);
        (k % 101) as f64 / 50.0 - 1.0
    }))
}

fn same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape());
    assert_eq!(a.to_array::<f64>().unwrap(), b.to_array::<f64>().unwrap());
}

#[test]
fn every_chunk_size_equals_the_whole_batch() -> Result<()> {
    // Two inputs (one batched at dim 1), one shared weight, two outputs with
    // different out_dims (one negative).
    let xs = t(&[3, 7, 4], 1); // batch of 7 along dim 1
    let ys = t(&[7, 4], 2);
    let w = t(&[4, 5], 3);
    let f = |(x, y, w): (Tensor, Tensor, Tensor)| -> Result<(Tensor, Tensor)> {
        let h = ops::tanh(&ops::matmul(&ops::add(&x, &y)?, &w)?)?;
        Ok((h.clone(), ops::sum(&h, Some(-1), false)?))
    };
    let run = |chunk: Option<usize>| {
        let mut v = vmap(f).in_dims([Some(1), Some(0), None]).out_dims([0, -1]);
        if let Some(c) = chunk {
            v = v.chunk_size(c);
        }
        v.call((&xs, &ys, &w))
    };
    let (h, s) = run(None)?;
    assert_eq!(h.shape(), &[7, 3, 5]);
    assert_eq!(s.shape(), &[3, 7]);
    for chunk in 1..=8 {
        let (hc, sc) = run(Some(chunk))?;
        same(&hc, &h);
        same(&sc, &s);
    }
    Ok(())
}

#[derive(TensorTree)]
struct Pair {
    a: Tensor,
    b: Tensor,
}

#[test]
fn structs_nesting_and_unbatched_outputs_are_joined_too() -> Result<()> {
    let xs = t(&[5, 2, 3], 4);
    let c = t(&[3], 5);
    let f = |(x, c): (Tensor, Tensor)| -> Result<Pair> {
        // b does not depend on the batch: repeated along it.
        let inner = vmap(|row: Tensor| ops::mul(&row, &c))
            .chunk_size(1)
            .call(&x)?;
        Ok(Pair {
            a: inner,
            b: c.clone(),
        })
    };
    let whole: Pair = vmap(f).in_dims([Some(0), None]).call((&xs, &c))?;
    for chunk in [1, 2, 4] {
        let part: Pair = vmap(f)
            .in_dims([Some(0), None])
            .chunk_size(chunk)
            .call((&xs, &c))?;
        same(&part.a, &whole.a);
        same(&part.b, &whole.b);
    }
    assert_eq!(whole.b.shape(), &[5, 3]);
    Ok(())
}

#[test]
fn chunked_vmap_composes_with_grad() -> Result<()> {
    let xs = t(&[6, 3], 6);
    let w = t(&[3], 7);
    let per_example = |(x, w): (Tensor, Tensor)| {
        batchrules::grad(|w: Tensor| ops::sum(&ops::sin(&ops::mul(&x, &w)?)?, None, false)).call(&w)
    };
    let whole = vmap(per_example).in_dims([Some(0), None]).call((&xs, &w))?;
    let chunked = vmap(per_example)
        .in_dims([Some(0), None])
        .chunk_size(4)
        .call((&xs, &w))?;
    same(&chunked, &whole);
    // And grad of a chunked vmap: the slices and the join are recorded.
    let loss = |w: Tensor, chunk: usize| -> Result<Tensor> {
        let per =
            vmap(|(x, w): (Tensor, Tensor)| ops::sum(&ops::sin(&ops::mul(&x, &w)?)?, None, false))
                .in_dims([Some(0), None])
                .chunk_size(chunk)
                .call((&xs, &w))?;
        ops::sum(&per, None, false)
    };
    let g_whole = batchrules::grad(|w: Tensor| loss(w, 6)).call(&w)?;
    let g_chunked = batchrules::grad(|w: Tensor| loss(w, 4)).call(&w)?;
    let (a, b) = (g_whole.to_array::<f64>()?, g_chunked.to_array::<f64>()?);
    assert!(a.iter().zip(b.iter()).all(|(x, y)| (x - y).abs() < 1e-12));
    Ok(())
}

#[test]
fn a_chunk_of_zero_examples_is_an_error() {
    let xs = t(&[4, 2], 8);
    let err: Error = vmap(|x: Tensor| ops::neg(&x))
        .chunk_size(0)
        .call(&xs)
        .unwrap_err();
    assert!(err.to_string().contains("chunk_size(0)"), "{err}");
    // An empty batch needs no chunk.
    let empty = Tensor::from(ArrayD::<f64>::zeros(IxDyn(&[0, 2])));
    let out = vmap(|x: Tensor| ops::neg(&x))
        .chunk_size(3)
        .call(&empty)
        .unwrap();
    assert_eq!(out.shape(), &[0, 2]);
}

#[test]
fn chunked_jacrev_equals_the_whole_jacobian() -> Result<()> {
    let w = t(&[7, 3], 9);
    let x = t(&[3], 10);
    let f = |x: Tensor| ops::tanh(&ops::mv(&w, &x)?);
    let whole = batchrules::jacrev(f).call(&x)?;
    assert_eq!(whole.shape(), &[7, 3]);
    for chunk in [1, 2, 3, 7, 100] {
        same(&batchrules::jacrev(f).chunk_size(chunk).call(&x)?, &whole);
    }
    // A 2-d output: rows of the identity of a [2, 3] space.
    let g = |x: Tensor| ops::outer(&ops::sin(&x)?, &x);
    let whole = batchrules::jacrev(g).call(&x)?;
    assert_eq!(whole.shape(), &[3, 3, 3]);
    same(&batchrules::jacrev(g).chunk_size(4).call(&x)?, &whole);
    let err = batchrules::jacrev(f).chunk_size(0).call(&x).unwrap_err();
    assert!(err.to_string().contains("chunk_size(0)"), "{err}");
    Ok(())
}

#[test]
fn chunks_returning_different_structures_are_an_error() {
    // The number of outputs depends on a captured counter: one per call.
    let calls = std::cell::Cell::new(0usize);
    let xs = t(&[4, 2], 11);
    let err = vmap(|x: Tensor| {
        calls.set(calls.get() + 1);
        Ok(vec![x.clone(); calls.get()])
    })
    .chunk_size(2)
    .call(&xs)
    .unwrap_err();
    assert!(err.to_string().contains("same structure"), "{err}");
}
