//! Matrix products and factories against known values: a naive reference for
//! matmul (broadcasting, vectors, non-contiguous operands, dtypes), i64
//! overflow, error messages, and the factories' values and errors. (The
//! vmap-versus-loop checks of these ops are in `op_library.rs`.)

use batchrules::{ops, vmap, DType, Tensor};
use ndarray::{ArrayD, IxDyn};

fn t(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    let values = (0..n).map(|i| ((i * 7 + 3) % 11) as f64 - 4.5).collect();
    Tensor::from_shape_vec(shape, values).unwrap()
}

fn arr(x: &Tensor) -> ArrayD<f64> {
    x.to_array::<f64>().unwrap()
}

/// NumPy matmul by definition, for operands of rank >= 1.
fn reference(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let a_mat = if a.ndim() == 1 {
        a.clone().insert_axis(ndarray::Axis(0))
    } else {
        a.clone()
    };
    let b_mat = if b.ndim() == 1 {
        b.clone().insert_axis(ndarray::Axis(1))
    } else {
        b.clone()
    };
    let (ra, rb) = (a_mat.ndim(), b_mat.ndim());
    let (n, k, m) = (
        a_mat.shape()[ra - 2],
        a_mat.shape()[ra - 1],
        b_mat.shape()[rb - 1],
    );
    let rank = ra.max(rb);
    let pad = |s: &[usize], r: usize| {
        let mut v = vec![1; rank - r];
        v.extend_from_slice(&s[..r - 2]);
        v
    };
    let (ba, bb) = (pad(a_mat.shape(), ra), pad(b_mat.shape(), rb));
    let batch: Vec<usize> = ba
        .iter()
        .zip(&bb)
        .map(|(&x, &y)| if x == 1 { y } else { x })
        .collect();
    let mut full_a = batch.clone();
    full_a.extend([n, k]);
    let mut full_b = batch.clone();
    full_b.extend([k, m]);
    let mut out_shape = batch.clone();
    out_shape.extend([n, m]);
    let av = a_mat.broadcast(IxDyn(&full_a)).unwrap();
    let bv = b_mat.broadcast(IxDyn(&full_b)).unwrap();
    let mut out = ArrayD::<f64>::zeros(IxDyn(&out_shape));
    for (idx, o) in out.indexed_iter_mut() {
        let idx = ndarray::Dimension::slice(&idx).to_vec();
        let (bi, (i, j)) = (
            &idx[..batch.len()],
            (idx[batch.len()], idx[batch.len() + 1]),
        );
        for p in 0..k {
            let mut ia = bi.to_vec();
            ia.extend([i, p]);
            let mut ib = bi.to_vec();
            ib.extend([p, j]);
            *o += av[IxDyn(&ia)] * bv[IxDyn(&ib)];
        }
    }
    let mut shape = batch;
    if a.ndim() >= 2 {
        shape.push(n);
    }
    if b.ndim() >= 2 {
        shape.push(m);
    }
    out.into_shape_with_order(IxDyn(&shape)).unwrap()
}

#[test]
fn matmul_matches_the_definition() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[3], &[3]),
        (&[2, 3], &[3, 4]),
        (&[3], &[3, 4]),
        (&[2, 3], &[3]),
        (&[2, 2, 3], &[3]),
        (&[3], &[2, 3, 4]),
        (&[1, 2, 3], &[4, 3, 2]),
        (&[4, 2, 3], &[1, 3, 2]),
        (&[2, 1, 2, 3], &[3, 3, 2]),
        (&[2, 3], &[2, 3, 2]),
        (&[2, 0], &[0, 3]),
        (&[0, 2, 3], &[3, 2]),
        (&[2, 3, 1, 2, 2], &[3, 2, 2, 2]),
        // Inner dim 1 (outer products, written without a GEMM): batched,
        // broadcast on either side, shared right-hand side.
        (&[4, 1], &[1, 5]),
        (&[3, 4, 1], &[3, 1, 5]),
        (&[3, 4, 1], &[1, 5]),
        (&[4, 1], &[2, 1, 5]),
        (&[2, 1, 3, 1], &[4, 1, 2]),
    ];
    for &(sa, sb) in cases {
        let (a, b) = (t(sa), t(sb));
        let got = ops::matmul(&a, &b).unwrap();
        assert_eq!(arr(&got), reference(&arr(&a), &arr(&b)), "{sa:?} @ {sb:?}");
    }
}

#[test]
fn matmul_of_non_contiguous_operands() {
    // Batch dims whose strides do not merge (a copy), and transposed matrices.
    let a = t(&[3, 2, 4, 5]).permuted(&[1, 0, 2, 3]).unwrap(); // [2, 3, 4, 5]
    let b = t(&[2, 3, 4, 5]).permuted(&[0, 1, 3, 2]).unwrap(); // [2, 3, 5, 4]
    let got = ops::matmul(&a, &b).unwrap();
    assert_eq!(got.shape(), &[2, 3, 4, 4]);
    assert_eq!(arr(&got), reference(&arr(&a), &arr(&b)));
}

/// Products large enough for the `gemm` crate (at least 16 x 16 x 16
/// multiply-adds) or for rayon's pool, in f64 and f32, through each path of
/// the kernel: one
/// product, a batch sharing the right operand (folded into rows), a batch
/// sharing the left operand (folded into columns), a batch of products, and
/// operands that are transposed or reversed (negative strides). The values are
/// small half-integers, so every sum is exact and any summation order gives
/// the reference bit for bit.
#[test]
fn large_products_match_the_definition_in_f64_and_f32() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[20, 24], &[24, 18]),
        (&[3, 20, 24], &[24, 18]),
        (&[20, 24], &[3, 24, 18]),
        (&[3, 20, 24], &[3, 24, 18]),
        (&[2, 1, 17, 33], &[3, 33, 16]),
        (&[64], &[64, 70]),
        (&[70, 64], &[64]),
        // Outer products (inner dim 1) large enough for the pool with the
        // `rayon` feature: per product, and with a shared right operand.
        (&[64, 64, 1], &[64, 1, 70]),
        (&[64, 64, 1], &[1, 70]),
        // Outer products with short rows (16 values or fewer: written as
        // fixed-size arrays), per product and shared.
        (&[40, 30, 1], &[40, 1, 10]),
        (&[40, 30, 1], &[1, 16]),
        (&[40, 30, 1], &[40, 1, 1]),
        // Longer rows: whole blocks of 16 values and the rest.
        (&[40, 30, 1], &[40, 1, 17]),
        (&[40, 30, 1], &[40, 1, 32]),
        (&[3, 5, 1], &[3, 1, 16 * 9 + 7]),
        // One product of more than 2^21 multiply-adds and 301 rows: split
        // by rows over the pool (150 and 151) with the `rayon` feature.
        (&[301, 96], &[96, 80]),
        (&[2, 301, 96], &[96, 80]),
    ];
    for &(sa, sb) in cases {
        let (a, b) = (t(sa), t(sb));
        let want = reference(&arr(&a), &arr(&b));
        assert_eq!(arr(&ops::matmul(&a, &b).unwrap()), want, "{sa:?} @ {sb:?}");
        let (a32, b32) = (
            ops::to_dtype(&a, DType::F32).unwrap(),
            ops::to_dtype(&b, DType::F32).unwrap(),
        );
        let got = ops::to_dtype(&ops::matmul(&a32, &b32).unwrap(), DType::F64).unwrap();
        assert_eq!(arr(&got), want, "f32 {sa:?} @ {sb:?}");
    }
    // Outer products whose left columns are strided (every 40th value) or
    // reversed.
    let a = t(&[30, 40, 1]).permuted(&[1, 0, 2]).unwrap(); // [40, 30, 1]
    for b in [t(&[40, 1, 37]), t(&[40, 1, 12])] {
        let got = ops::matmul(&a, &b).unwrap();
        assert_eq!(arr(&got), reference(&arr(&a), &arr(&b)));
        let mut reversed = arr(&a);
        reversed.invert_axis(ndarray::Axis(1));
        let r = Tensor::from(reversed.clone());
        let got = ops::matmul(&r, &b).unwrap();
        assert_eq!(arr(&got), reference(&reversed, &arr(&b)));
    }
    // Transposed operands, and a reversed one (negative strides).
    let a = t(&[24, 20]).permuted(&[1, 0]).unwrap(); // [20, 24]
    let b = t(&[18, 24]).permuted(&[1, 0]).unwrap(); // [24, 18]
    let got = ops::matmul(&a, &b).unwrap();
    assert_eq!(arr(&got), reference(&arr(&a), &arr(&b)));
    let mut reversed = arr(&t(&[24, 18]));
    reversed.invert_axis(ndarray::Axis(0));
    reversed.invert_axis(ndarray::Axis(1));
    let r = Tensor::from(reversed.clone());
    let got = ops::matmul(&a, &r).unwrap();
    assert_eq!(arr(&got), reference(&arr(&a), &reversed));
}

#[test]
fn products_promote_and_i64_wraps() {
    let a = Tensor::from_shape_vec(&[2, 2], vec![1i64, 2, 3, 4]).unwrap();
    let b = Tensor::from_shape_vec(&[2], vec![true, false]).unwrap();
    let y = ops::mv(&a, &b).unwrap();
    assert_eq!(y.dtype(), DType::I64);
    assert_eq!(
        y.to_array::<i64>().unwrap().into_raw_vec_and_offset().0,
        [1, 3]
    );

    let f = Tensor::from_shape_vec(&[2], vec![0.5f32, 2.0]).unwrap();
    let y = ops::matmul(&a, &f).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(
        y.to_array::<f32>().unwrap().into_raw_vec_and_offset().0,
        [4.5, 9.5]
    );

    let big = Tensor::from_shape_vec(&[2], vec![i64::MAX, 2]).unwrap();
    let two = Tensor::from_shape_vec(&[2], vec![2i64, 1]).unwrap();
    let y = ops::dot(&big, &two).unwrap();
    assert_eq!(
        y.to_array::<i64>().unwrap()[[]],
        i64::MAX.wrapping_mul(2) + 2
    );
}

#[test]
fn the_family_agrees_with_matmul() {
    let (v3, v4) = (t(&[3]), t(&[4]));
    assert_eq!(
        arr(&ops::dot(&v3, &v3).unwrap()),
        arr(&ops::matmul(&v3, &v3).unwrap())
    );
    let (m, n) = (t(&[4, 3]), t(&[3, 2]));
    assert_eq!(
        arr(&ops::mm(&m, &n).unwrap()),
        reference(&arr(&m), &arr(&n))
    );
    assert_eq!(
        arr(&ops::mv(&m, &v3).unwrap()),
        reference(&arr(&m), &arr(&v3))
    );
    let outer = arr(&ops::outer(&v4, &v3).unwrap());
    assert_eq!(outer.shape(), &[4, 3]);
    let (x, y) = (arr(&v4), arr(&v3));
    assert!(outer
        .indexed_iter()
        .all(|(i, &o)| o == x[[i[0]]] * y[[i[1]]]));
    let (p, q) = (t(&[2, 4, 3]), t(&[2, 3, 5]));
    assert_eq!(
        arr(&ops::bmm(&p, &q).unwrap()),
        reference(&arr(&p), &arr(&q))
    );
}

#[test]
fn product_errors_show_the_shapes() {
    let msg = |r: batchrules::Result<Tensor>| r.unwrap_err().to_string();
    assert_eq!(
        msg(ops::mm(&t(&[2, 3]), &t(&[4, 5]))),
        "mm: inner dims differ: [2, 3] @ [4, 5]"
    );
    assert_eq!(
        msg(ops::mm(&t(&[3]), &t(&[3, 4]))),
        "mm: expected two 2-D matrices, got shapes [3] and [3, 4]"
    );
    assert_eq!(
        msg(ops::matmul(&t(&[2, 2, 3]), &t(&[3, 3, 2]))),
        "matmul: batch dims [2] and [3] do not broadcast: [2, 2, 3] @ [3, 3, 2]"
    );
    assert_eq!(
        msg(ops::matmul(&t(&[]), &t(&[3]))),
        "matmul: both operands need at least 1 dim, got [] @ [3]"
    );
    assert_eq!(
        msg(ops::bmm(&t(&[1, 2, 3]), &t(&[2, 3, 4]))),
        "bmm: batch sizes differ (bmm does not broadcast): [1, 2, 3] @ [2, 3, 4]"
    );
    let b = Tensor::from_shape_vec(&[2], vec![true, false]).unwrap();
    assert!(msg(ops::dot(&b, &b)).starts_with("dot: matrix products of bool tensors"));
    // Each example of a [4, 3] batch is a vector, so mm rejects it under vmap.
    let err = vmap(|x: Tensor| ops::mm(&x, &t(&[3, 2])))
        .call(t(&[4, 3]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "mm: expected two 2-D matrices, got shapes [3] and [3, 2] (checked on logical shapes at vmap level 1)"
    );
}

#[test]
fn a_batched_vector_is_not_read_as_a_matrix() {
    // Per example x is [3]: x @ w is [2], not the [4, 2] a matrix would give.
    let (xs, w) = (t(&[4, 3]), t(&[3, 2]));
    let y = vmap(|x: Tensor| ops::matmul(&x, &w)).call(&xs).unwrap();
    assert_eq!(y.shape(), &[4, 2]);
    assert_eq!(arr(&y), reference(&arr(&xs), &arr(&w)));
    let d = vmap(|x: Tensor| ops::dot(&x, &x)).call(&xs).unwrap();
    assert_eq!(d.shape(), &[4]);
}

#[test]
fn factories_build_the_documented_values() {
    let z = ops::zeros(&[2, 3], DType::F32).unwrap();
    assert_eq!(
        z.to_array::<f32>().unwrap(),
        ArrayD::<f32>::zeros(IxDyn(&[2, 3]))
    );
    let o = ops::ones(&[2], DType::Bool).unwrap();
    assert_eq!(
        o.to_array::<bool>().unwrap().into_raw_vec_and_offset().0,
        [true, true]
    );
    let f = ops::full(&[3], -2.7, DType::I64).unwrap();
    assert_eq!(
        f.to_array::<i64>().unwrap().into_raw_vec_and_offset().0,
        [-2, -2, -2]
    );
    let s = ops::full(&[], 1.5, DType::F64).unwrap();
    assert_eq!(s.shape(), &[] as &[usize]);

    let values = |x: Tensor| x.to_array::<i64>().unwrap().into_raw_vec_and_offset().0;
    assert_eq!(
        values(ops::arange(0.0, 5.0, 1.0, DType::I64).unwrap()),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(
        values(ops::arange(5.0, 0.0, -2.0, DType::I64).unwrap()),
        [5, 3, 1]
    );
    assert_eq!(
        values(ops::arange(1.0, 1.0, 1.0, DType::I64).unwrap()),
        [0i64; 0]
    );
    let r = ops::arange(0.0, 1.0, 0.3, DType::F64).unwrap();
    assert_eq!(r.shape(), &[4]);
    assert!((r.to_array::<f64>().unwrap()[[3]] - 0.9).abs() < 1e-12);
}

#[test]
fn factory_errors_are_errors_not_panics() {
    let msg = |r: batchrules::Result<Tensor>| r.unwrap_err().to_string();
    assert_eq!(
        msg(ops::zeros(&[2, -3], DType::F32)),
        "zeros: negative size -3 in size [2, -3]"
    );
    assert!(msg(ops::ones(&[i64::MAX, 4], DType::F64)).contains("too large"));
    assert!(msg(ops::full(&[2], f64::NAN, DType::I64)).contains("cannot be converted to i64"));
    assert_eq!(
        msg(ops::arange(0.0, 5.0, 0.0, DType::I64)),
        "arange: step must be nonzero, got start 0, end 5, step 0"
    );
    assert!(msg(ops::arange(0.0, 5.0, -1.0, DType::I64)).contains("step goes away from end"));
    assert!(msg(ops::arange(0.0, 1e300, 1e-300, DType::F64)).contains("too many"));
    assert!(msg(ops::arange(0.0, 2.0, 1.0, DType::Bool)).contains("bool"));
}

#[test]
fn a_factory_inside_vmap_broadcasts() {
    // zeros is never batched: added to a batched x it broadcasts per example.
    let xs = t(&[4, 3]);
    let y = vmap(|x: Tensor| ops::add(&x, &ops::ones(&[3], DType::F64)?))
        .call(&xs)
        .unwrap();
    assert_eq!(arr(&y), arr(&xs) + 1.0);
}

/// `addmm(bias, a, b)` is `bias + a @ b` by definition, on the small-product
/// path and on the `gemm` crate's accumulating one, in f64 and f32, with a
/// transposed `b` (as `linear` passes its weight) and every bias shape that
/// broadcasts, and with the fused `relu` that of the sum, in one block or in
/// several; `linear` and `linear_relu` (which decompose into it) too, alone
/// and under vmap.
#[test]
fn addmm_and_linear_match_the_definition() {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[3], &[2, 4], &[4, 3]),
        (&[2, 3], &[2, 4], &[4, 3]),
        (&[2, 1], &[2, 4], &[4, 3]),
        (&[], &[4], &[4, 3]),
        (&[18], &[20, 24], &[24, 18]),
        (&[20, 18], &[20, 24], &[24, 18]),
        (&[1], &[20, 24], &[24, 18]),
        (&[70], &[64], &[64, 70]),
        (&[18], &[20, 0], &[0, 18]),
        // With relu, blocks of 128 rows of 4 KiB (f32) or 8 KiB (f64):
        // three blocks, the last one short.
        (&[1024], &[300, 16], &[16, 1024]),
    ];
    let relu = |x: ArrayD<f64>| x.mapv(|v| v.max(0.0));
    for &(sc, sa, sb) in cases {
        let (c, a) = (t(sc), t(sa));
        // b as the transpose of a contiguous [m, k], as linear passes it.
        let b = t(&[sb[1], sb[0]]).permuted(&[1, 0]).unwrap();
        let sum = &arr(&c) + &reference(&arr(&a), &arr(&b));
        for fused in [false, true] {
            let want = if fused {
                relu(sum.clone())
            } else {
                sum.clone()
            };
            let got = ops::addmm(&c, &a, &b, fused).unwrap();
            assert_eq!(arr(&got), want, "{sc:?} + {sa:?} @ {sb:?}, relu {fused}");
            let f32s = |x: &Tensor| ops::to_dtype(x, DType::F32).unwrap();
            let got32 = ops::addmm(&f32s(&c), &f32s(&a), &f32s(&b), fused).unwrap();
            assert_eq!(got32.dtype(), DType::F32);
            assert_eq!(
                arr(&ops::to_dtype(&got32, DType::F64).unwrap()),
                want,
                "f32 {sc:?}, relu {fused}"
            );
        }
        if sa.iter().product::<usize>() > 0 && sb[1] > 0 {
            assert!(sum.iter().any(|&v| v < 0.0), "{sc:?}: relu must matter");
        }
    }
    // linear(x, w, b) = x @ w^T + b and linear_relu its relu, for one
    // example and for a batch under vmap, with and without a bias.
    let (x, w, bias) = (t(&[20, 24]), t(&[18, 24]), t(&[18]));
    let w_t = arr(&w).reversed_axes();
    let product = reference(&arr(&x), &w_t);
    let want = &product + &arr(&bias);
    assert_eq!(arr(&ops::linear(&x, &w, Some(&bias)).unwrap()), want);
    assert_eq!(
        arr(&ops::linear_relu(&x, &w, Some(&bias)).unwrap()),
        relu(want.clone())
    );
    assert_eq!(
        arr(&ops::linear_relu(&x, &w, None).unwrap()),
        relu(product.clone())
    );
    let per_row = vmap(|row: Tensor| ops::linear(&row, &w, Some(&bias)))
        .call(&x)
        .unwrap();
    assert_eq!(arr(&per_row), want);
    let per_row = vmap(|row: Tensor| ops::linear_relu(&row, &w, Some(&bias)))
        .call(&x)
        .unwrap();
    assert_eq!(arr(&per_row), relu(want));
    // Batches of matrices: the rows of every example fold into one product.
    let xs = ops::reshape(&x, &[4, 5, 24][..]).unwrap();
    let per_batch = vmap(|m: Tensor| ops::linear_relu(&m, &w, None))
        .call(&xs)
        .unwrap();
    assert_eq!(
        arr(&ops::reshape(&per_batch, &[20, 18][..]).unwrap()),
        relu(product)
    );
    let err = ops::addmm(&t(&[4]), &t(&[2, 4]), &t(&[4, 3]), true).unwrap_err();
    assert!(err.to_string().contains("addmm"), "{err}");
    assert!(err.to_string().contains("broadcast"), "{err}");
    let err = ops::linear_relu(&t(&[5]), &t(&[3, 4]), None).unwrap_err();
    assert!(err.to_string().contains("linear_relu"), "{err}");
}

/// The fused `linear_relu` has the gradients of `relu(linear(..))`, alone and
/// per example under vmap (its `addmm` vjp passes the cotangent through the
/// activation where the result is positive).
#[test]
fn linear_relu_gradients_match_the_unfused_layer() {
    use batchrules::grad;
    let (w, b, x) = (t(&[18, 24]), t(&[18]), t(&[20, 24]));
    let p = (w.clone(), b.clone(), x.clone());
    let g_fused = grad(fused_fn).call(&p).unwrap();
    let g_plain = grad(plain_fn).call(&p).unwrap();
    for (f, p) in [
        (&g_fused.0, &g_plain.0),
        (&g_fused.1, &g_plain.1),
        (&g_fused.2, &g_plain.2),
    ] {
        assert_eq!(arr(f), arr(p));
        assert!(arr(f).iter().any(|&v| v != 0.0));
    }
    // relu cuts part of the layer off, or this test would not test it.
    let g_linear = grad(linear_fn).call(&p).unwrap();
    assert_ne!(arr(&g_fused.2), arr(&g_linear.2));
    let per_example = |f: fn(Params) -> batchrules::Result<Tensor>| {
        vmap(move |(w, b, x): Params| grad(f).call(&(w, b, x)))
            .in_dims([None, None, Some(0)])
            .call((&w, &b, &x))
            .unwrap()
    };
    let (pf, pp) = (per_example(fused_fn), per_example(plain_fn));
    assert_eq!(pf.0.shape(), &[20, 18, 24]);
    for (f, p) in [(&pf.0, &pp.0), (&pf.1, &pp.1), (&pf.2, &pp.2)] {
        assert_eq!(arr(f), arr(p));
    }
}

type Params = (Tensor, Tensor, Tensor);

/// A loss that weighs every output differently (so no gradient is uniform).
fn cos_weighted_sum(y: Tensor) -> batchrules::Result<Tensor> {
    let n = y.shape()[y.ndim() - 1] as f64;
    let c = ops::cos(&ops::arange(0.0, n, 1.0, DType::F64)?)?;
    ops::sum(&ops::mul(&y, &c)?, None, false)
}

fn fused_fn((w, b, x): Params) -> batchrules::Result<Tensor> {
    cos_weighted_sum(ops::linear_relu(&x, &w, Some(&b))?)
}

fn linear_fn((w, b, x): Params) -> batchrules::Result<Tensor> {
    cos_weighted_sum(ops::linear(&x, &w, Some(&b))?)
}

fn plain_fn((w, b, x): Params) -> batchrules::Result<Tensor> {
    cos_weighted_sum(ops::relu(&ops::linear(&x, &w, Some(&b))?)?)
}
