//! The model writer's layer: the generated methods (the schema's defaults
//! applied), the operators, the ndarray conversions, `Display`/`Debug`,
//! `allclose`, and the README's first snippet, which runs here as written.

use batchrules::prelude::*;
use batchrules::Element;
use ndarray::{array, Array, ArrayD, Ix1, Ix2, Ix3, IxDyn};

use crate::common::{assert_close, no_panic, t64};

/// Equal dtypes, shapes and values.
fn same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.dtype(), b.dtype(), "dtypes differ");
    let f64s = |t: &Tensor| t.to_dtype(DType::F64).unwrap().to_array::<f64>().unwrap();
    assert_eq!(f64s(a), f64s(b));
}

#[test]
fn methods_apply_the_schema_defaults_and_their_specs() -> Result<()> {
    let x = t64(&[3, 4], 1);
    // Defaults dropped: sum() is sum over all dims, without keepdim.
    same(&x.sum()?, &ops::sum(&x, None, false)?);
    same(&x.mean()?, &ops::mean(&x, None, false)?);
    same(&x.var()?, &ops::var(&x, None, 1, false)?);
    same(&x.argmax()?, &ops::argmax(&x, None, false)?);
    same(&x.flatten()?, &ops::flatten(&x, 0, -1)?);
    same(&x.squeeze()?, &ops::squeeze(&x, None)?);
    same(&x.triu()?, &ops::triu(&x, 0)?);
    // Specs: a plain argument wraps an optional one in Some; a fixed value.
    same(&x.sum_dim(1)?, &ops::sum(&x, Some(1), false)?);
    same(&x.sum_keepdim(-1)?, &ops::sum(&x, Some(-1), true)?);
    same(&x.mean_dim(0)?, &ops::mean(&x, Some(0), false)?);
    same(&x.amax_keepdim(1)?, &ops::amax(&x, Some(1), true)?);
    same(&x.argmax_dim(1)?, &ops::argmax(&x, Some(1), false)?);
    same(&x.var_dim(0)?, &ops::var(&x, Some(0), 1, false)?);
    same(&x.triu_diagonal(1)?, &ops::triu(&x, 1)?);
    same(&x.tril_diagonal(-1)?, &ops::tril(&x, -1)?);
    same(&x.flatten_from(1)?, &ops::flatten(&x, 1, -1)?);
    same(
        &x.clamp(-0.5, 0.5)?,
        &ops::clamp(&x, Some(-0.5), Some(0.5))?,
    );
    same(&x.clamp_min(0.0)?, &ops::clamp(&x, Some(0.0), None)?);
    same(&x.clamp_max(0.0)?, &ops::clamp(&x, None, Some(0.0))?);
    same(&x.softmax(-1)?, &ops::softmax(&x, -1)?);
    same(&x.logsumexp(1)?, &ops::logsumexp(&x, 1, false)?);
    same(&x.logsumexp_keepdim(1)?, &ops::logsumexp(&x, 1, true)?);
    // `bias?` keeps the Option; layer_norm's eps takes its default 1e-5.
    let (w, b) = (t64(&[2, 4], 2), t64(&[2], 3));
    same(&x.linear(&w, Some(&b))?, &ops::linear(&x, &w, Some(&b))?);
    same(&x.linear(&w, None)?, &ops::linear(&x, &w, None)?);
    let g = t64(&[4], 4);
    same(
        &x.layer_norm(&[4], Some(&g), None)?,
        &ops::layer_norm(&x, &[4], Some(&g), None, 1e-5)?,
    );
    // Losses: Reduction::Mean by default, any reduction through `_reduced`.
    let y = Tensor::from(array![0i64, 3, 1]);
    same(
        &x.cross_entropy(&y)?,
        &ops::cross_entropy(&x, &y, Reduction::Mean)?,
    );
    same(
        &x.cross_entropy_reduced(&y, Reduction::None)?,
        &ops::cross_entropy(&x, &y, Reduction::None)?,
    );
    let t = t64(&[3, 4], 5);
    same(&x.mse_loss(&t)?, &ops::mse_loss(&x, &t, Reduction::Mean)?);
    same(
        &x.mse_loss_reduced(&t, Reduction::Sum)?,
        &ops::mse_loss(&x, &t, Reduction::Sum)?,
    );
    // Ops without defaults take every argument.
    same(
        &x.matmul(&t64(&[4, 2], 6))?,
        &ops::matmul(&x, &t64(&[4, 2], 6))?,
    );
    same(&x.to_dtype(DType::F32)?, &ops::to_dtype(&x, DType::F32)?);
    // A method's errors are its op's.
    let err = x.sum_dim(5).unwrap_err();
    assert!(err.to_string().starts_with("sum:"), "{err}");
    Ok(())
}

#[test]
fn methods_work_under_the_transforms() -> Result<()> {
    let xs = t64(&[5, 3], 7);
    let per_example = vmap(|x: Tensor| x.softmax(-1)?.sum_keepdim(0)).call(&xs)?;
    assert_close(
        &per_example,
        &Tensor::from(Array::from_elem((5, 1), 1.0f64)),
        1e-12,
    );
    // d/dx sum(tanh(x)) = 1 - tanh(x)^2.
    let g = grad(|x: Tensor| x.tanh()?.sum()).call(&xs)?;
    let th = xs.tanh()?;
    let want = (1.0 - (&th * &th)?)?;
    assert_close(&g, &want, 1e-12);
    Ok(())
}

#[test]
fn operators_match_the_ops_for_every_ownership() -> Result<()> {
    let (a, b) = (t64(&[2, 3], 1), t64(&[3], 2));
    type Op = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let cases: [(&str, Op, [Tensor; 4]); 4] = [
        (
            "add",
            ops::add,
            [
                (&a + &b)?,
                (a.clone() + &b)?,
                (&a + b.clone())?,
                (a.clone() + b.clone())?,
            ],
        ),
        (
            "sub",
            ops::sub,
            [
                (&a - &b)?,
                (a.clone() - &b)?,
                (&a - b.clone())?,
                (a.clone() - b.clone())?,
            ],
        ),
        (
            "mul",
            ops::mul,
            [
                (&a * &b)?,
                (a.clone() * &b)?,
                (&a * b.clone())?,
                (a.clone() * b.clone())?,
            ],
        ),
        (
            "div",
            ops::div,
            [
                (&a / &b)?,
                (a.clone() / &b)?,
                (&a / b.clone())?,
                (a.clone() / b.clone())?,
            ],
        ),
    ];
    for (name, op, results) in cases {
        let want = op(&a, &b)?;
        for r in &results {
            assert_eq!(r.to_array::<f64>()?, want.to_array::<f64>()?, "{name}");
        }
    }
    same(&(-&a)?, &ops::neg(&a)?);
    same(&(-a.clone())?, &ops::neg(&a)?);
    // The operand given by value was not changed for the other handle.
    assert_eq!(a.to_array::<f64>()?, t64(&[2, 3], 1).to_array::<f64>()?);
    // Scalars on either side.
    same(&(&a * 2.0)?, &ops::mul(&a, &Tensor::scalar(2.0f64))?);
    same(&(2.0 - &a)?, &ops::sub(&Tensor::scalar(2.0f64), &a)?);
    same(&(1 + &a)?, &ops::add(&Tensor::scalar(1.0f64), &a)?);
    same(&(a.clone() / 4)?, &ops::div(&a, &Tensor::scalar(4.0f64))?);
    // Shapes that do not broadcast: the op's error, no panic.
    let err = no_panic("a + bad", || &a + &t64(&[4], 3)).unwrap_err();
    assert!(err.to_string().starts_with("add:"), "{err}");
    Ok(())
}

#[test]
fn scalars_take_the_tensor_dtype_as_python_numbers_do_in_pytorch() -> Result<()> {
    let f = Tensor::from(array![1.0f32, 2.0]);
    assert_eq!((&f * 0.1)?.dtype(), DType::F32);
    assert_eq!((&f + 3)?.dtype(), DType::F32);
    let i = Tensor::from(array![1i64, 2]);
    assert_eq!((&i * 2)?.dtype(), DType::I64);
    let half = (&i * 0.5)?;
    assert_eq!(half.dtype(), DType::F32);
    assert_eq!(half.to_vec::<f32>()?, [0.5, 1.0]);
    let flags = Tensor::from(array![true, false]);
    assert_eq!((&flags + 1)?.to_vec::<i64>()?, [2, 1]);
    Ok(())
}

#[test]
fn operators_differentiate_and_batch() -> Result<()> {
    // f(x) = sum(x*x + 3x - x/2): f' = 2x + 2.5.
    let x = t64(&[4], 8);
    let g = grad(|x: Tensor| (((&x * &x)? + (3.0 * &x)?)? - (&x / 2.0)?)?.sum()).call(&x)?;
    assert_close(&g, &((2.0 * &x)? + 2.5)?, 1e-12);
    let xs = t64(&[3, 4], 9);
    let ys = vmap(|x: Tensor| {
        let doubled = (x * 2.0)?;
        -doubled
    })
    .call(&xs)?;
    assert_close(&ys, &ops::mul(&xs, &Tensor::scalar(-2.0f64))?, 0.0);
    Ok(())
}

#[test]
fn arrays_of_any_dimension_convert_in_and_fixed_dimensions_out() -> Result<()> {
    let a3 = Array::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 12 + j * 4 + k) as f32);
    let t = Tensor::from(a3.clone());
    assert_eq!(t.shape(), &[2, 3, 4]);
    assert_eq!(t.to_array_dim::<f32, Ix3>()?, a3);
    let back: Array<f32, Ix3> = (&t).try_into()?;
    assert_eq!(back, a3);
    assert_eq!(
        Tensor::from(a3.clone().into_shared()).to_array_dim::<f32, Ix3>()?,
        a3
    );
    assert_eq!(
        Tensor::from(vec![1i64, 2, 3]).to_array1::<i64>()?,
        array![1, 2, 3]
    );
    assert_eq!(
        Tensor::from(array![[true]]).to_array2::<bool>()?,
        array![[true]]
    );
    assert_eq!(Tensor::scalar(2.5f64).to_scalar::<f64>()?, 2.5);
    assert_eq!(Tensor::from(array![[7i64]]).to_scalar::<i64>()?, 7);
    // Wrong rank, wrong dtype, more than one element: errors naming the call.
    let cases: Vec<(&str, batchrules::Error)> = vec![
        (
            "Tensor::to_array_dim",
            t.to_array_dim::<f32, Ix2>().unwrap_err(),
        ),
        ("Tensor::to_array1", t.to_array1::<f32>().unwrap_err()),
        ("Tensor::to_array2", t.to_array2::<f64>().unwrap_err()),
        (
            "Array::try_from(&Tensor)",
            Array::<f32, Ix1>::try_from(&t).unwrap_err(),
        ),
        ("Tensor::to_scalar", t.to_scalar::<f32>().unwrap_err()),
        ("Tensor::to_vec", t.to_vec::<i64>().unwrap_err()),
        ("Tensor::view", t.view::<bool>().unwrap_err()),
        (
            "Tensor::into_array",
            t.clone().into_array::<f64>().unwrap_err(),
        ),
    ];
    for (what, err) in cases {
        assert!(err.to_string().starts_with(what), "{what}: {err}");
    }
    Ok(())
}

/// The address of a tensor's first element, to tell a moved buffer from a copy.
fn first_address<T: Element>(t: &Tensor) -> *const T {
    t.view::<T>().unwrap().as_ptr()
}

#[test]
fn into_array_moves_a_buffer_held_once_and_copies_a_shared_one() -> Result<()> {
    let x = ops::relu(&t64(&[64, 64], 10))?;
    let at = first_address::<f64>(&x);
    let moved = x.into_array::<f64>()?;
    assert_eq!(
        moved.as_ptr(),
        at,
        "a buffer held once must move, not be copied"
    );

    let y = ops::relu(&t64(&[8], 11))?;
    let other = y.clone();
    let copied = y.into_array::<f64>()?;
    assert_ne!(copied.as_ptr(), first_address::<f64>(&other));
    assert_eq!(copied, other.to_array::<f64>()?);
    // The view borrows the data in place.
    assert_eq!(first_address::<f64>(&other), other.view::<f64>()?.as_ptr());
    Ok(())
}

#[test]
fn reading_a_batched_tensor_is_an_error_naming_the_method() {
    let xs = t64(&[3, 2], 12);
    let err = vmap(|x: Tensor| {
        let e = x.to_array2::<f64>().unwrap_err();
        assert!(
            e.to_string().starts_with("Tensor::to_array2: cannot read"),
            "{e}"
        );
        let e = x.clone().into_array::<f64>().unwrap_err();
        assert!(e.to_string().starts_with("Tensor::into_array"), "{e}");
        let e = x.allclose(&x, 0.0, 0.0).unwrap_err();
        assert!(e.to_string().starts_with("Tensor::allclose"), "{e}");
        assert!(format!("{x}").contains("batched"), "{x}");
        Err::<Tensor, _>(e)
    })
    .call(&xs)
    .unwrap_err();
    assert!(err.to_string().contains("allclose"), "{err}");
}

#[test]
fn display_is_numpy_like_and_debug_is_short() {
    let t = Tensor::from(array![[1.5f32, -2.0], [3.0, 4.25]]);
    assert_eq!(
        format!("{t}"),
        "tensor([[1.5, -2.],\n        [3., 4.25]], dtype=f32)"
    );
    assert_eq!(
        format!("{t:.2}"),
        "tensor([[1.50, -2.00],\n        [3.00, 4.25]], dtype=f32)"
    );
    assert_eq!(format!("{}", Tensor::scalar(3i64)), "tensor(3, dtype=i64)");
    assert_eq!(
        format!("{}", Tensor::scalar(-0.0f64)),
        "tensor(-0., dtype=f64)"
    );
    assert_eq!(
        format!("{}", Tensor::scalar(0.1f32)),
        "tensor(0.1, dtype=f32)"
    );
    assert_eq!(
        format!(
            "{}",
            Tensor::from(array![f64::NAN, f64::NEG_INFINITY, 1e20])
        ),
        "tensor([NaN, -inf, 1e20], dtype=f64)"
    );
    assert_eq!(
        format!("{}", Tensor::from(array![true, false])),
        "tensor([true, false], dtype=bool)"
    );
    assert_eq!(format!("{t:?}"), "Tensor[2, 2] f32 [1.5, -2.0, 3.0, 4.25]");
    let big = Tensor::from(ArrayD::<f64>::zeros(IxDyn(&[100, 100])));
    assert_eq!(format!("{big:?}"), "Tensor[100, 100] f64");
    // A long tensor is elided as ndarray elides it.
    assert!(format!("{big}").contains("..."));
}

#[test]
fn allclose_follows_torch_allclose() -> Result<()> {
    let a = Tensor::from(array![1.0f64, 100.0, f64::INFINITY]);
    let b = Tensor::from(array![1.0f64 + 1e-9, 100.0 + 5e-4, f64::INFINITY]);
    assert!(a.allclose(&b, 1e-5, 1e-8)?); // |diff| <= atol + rtol * |b|
    assert!(!a.allclose(&b, 1e-6, 1e-8)?);
    let neg_inf = Tensor::from(array![1.0f64, 100.0, f64::NEG_INFINITY]);
    assert!(!a.allclose(&neg_inf, 1.0, 1.0)?);
    let nan = Tensor::from(array![f64::NAN]);
    assert!(!nan.allclose(&nan, 1.0, 1.0)?);
    // Broadcasting, and dtypes compared through f64.
    let row = Tensor::from(array![[1.0f32, 2.0], [1.0, 2.0]]);
    assert!(row.allclose(&Tensor::from(array![1i64, 2]), 0.0, 0.0)?);
    let err = row
        .allclose(&Tensor::from(array![1.0f32, 2.0, 3.0]), 0.0, 0.0)
        .unwrap_err();
    assert!(err.to_string().starts_with("Tensor::allclose"), "{err}");
    Ok(())
}

/// The README's first snippet, as written there between the markers (the
/// test below checks that the README still says exactly this).
#[test]
fn the_readme_snippet_runs() -> Result<()> {
    let dims = |i: usize| [64, 128, 10][i];
    let params0 = (
        t64(&[dims(1), dims(0)], 1),
        t64(&[dims(1)], 2),
        t64(&[dims(2), dims(1)], 3),
        t64(&[dims(2)], 4),
    );
    let xs = t64(&[8, 64], 5);
    let ys = Tensor::from((0..8).map(|i| i % 10).collect::<Vec<i64>>());
    let (w1, b1, w2, b2) = params0;
    // README-BEGIN
    #[rustfmt::skip] // README-HIDDEN
    #[derive(Clone, TensorTree)]
    struct Mlp { w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor }

    /// The loss of one example: x is [64], y a 0-d class index.
    fn loss((p, x, y): (Mlp, Tensor, Tensor)) -> Result<Tensor> {
        let h = x.linear(&p.w1, Some(&p.b1))?.relu()?;
        h.linear(&p.w2, Some(&p.b2))?.cross_entropy(&y) // reduction defaults to Reduction::Mean
    }
    let params = Mlp { w1, b1, w2, b2 }; // README-HIDDEN
    let loss_before = mean_loss(&params, &xs, &ys)?; // README-HIDDEN

    // Per-sample gradients: parameters shared (None), data batched along dim 0.
    let grads: Mlp = vmap(|(p, x, y): (Mlp, Tensor, Tensor)| grad(loss).call((&p, &x, &y)))
        .in_dims([None, Some(0), Some(0)])
        .call((&params, &xs, &ys))?;
    // The batch's mean gradient, and an SGD step over the whole struct:
    let step: Mlp = tree_map(&grads, |g| g.mean_dim(0))?;
    let params = tree_zip_map(&params, &step, |p, g| p - &(g * 0.1)?)?;
    // README-END
    assert_eq!(grads.w1.shape(), &[8, 128, 64]);
    assert_eq!(step.b2.shape(), &[10]);
    let loss_after = mean_loss(&params, &xs, &ys)?;
    assert!(loss_after < loss_before, "{loss_before} -> {loss_after}");
    return Ok(());

    /// The mean loss of the batch (`Mlp` and `loss` are the snippet's).
    fn mean_loss(p: &Mlp, xs: &Tensor, ys: &Tensor) -> Result<f64> {
        let losses = vmap(loss)
            .in_dims([None, Some(0), Some(0)])
            .call((p, xs, ys))?;
        losses.mean()?.to_scalar()
    }
}

/// The code between the markers above is the README's first snippet (up to
/// whitespace, which rustfmt lays out here).
#[test]
fn the_readme_shows_the_snippet_that_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let open = readme.find("```rust").expect("a rust block in the README");
    let start = open + readme[open..].find('\n').unwrap();
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    let compact = |lines: Vec<&str>| -> String { lines.concat().split_whitespace().collect() };
    let shown = compact(
        block
            .lines()
            .filter(|l| !l.trim().starts_with("use "))
            .collect(),
    );
    let this = std::fs::read_to_string(format!("{root}/tests/suite/model_api.rs")).unwrap();
    let region = this.split("// README-BEGIN").nth(1).unwrap();
    let region = region.split("// README-END").next().unwrap();
    let tested = compact(
        region
            .lines()
            .filter(|l| !l.ends_with("// README-HIDDEN"))
            .collect(),
    );
    assert_eq!(
        shown, tested,
        "the README's first snippet differs from the one tested here"
    );
}

/// `linear`'s weight gradient comes back in the weight's own row-major
/// layout, per example under `vmap` and for a batch (a transposed view had
/// every later reshape, such as DP-SGD's flattening, copy it), with the
/// values of the hand formula `g^T x`.
#[test]
fn linear_weight_gradients_are_row_major() {
    let w = Tensor::from(Array::from_shape_fn((3, 4), |(i, j)| {
        (i * 4 + j) as f64 * 0.1 - 0.5
    }));
    let b = Tensor::from(array![0.1, -0.2, 0.3]);
    let xs = Tensor::from(Array::from_shape_fn((5, 4), |(i, j)| {
        (i as f64 - j as f64) * 0.3
    }));
    let loss = |(w, b, x): (Tensor, Tensor, Tensor)| x.linear(&w, Some(&b))?.tanh()?.sum();
    let row_major = |t: &Tensor| t.view::<f64>().unwrap().is_standard_layout();
    // A batch [5, 4] (the matrix path), and one example [4] (the outer
    // product) under vmap.
    let g = grad(loss).call((&w, &b, &xs)).unwrap();
    assert_eq!(g.shape(), &[3, 4]);
    assert!(row_major(&g));
    let per = vmap(|(w, b, x): (Tensor, Tensor, Tensor)| grad(loss).call((&w, &b, &x)))
        .in_dims([None, None, Some(0)])
        .call((&w, &b, &xs))
        .unwrap();
    assert_eq!(per.shape(), &[5, 3, 4]);
    assert!(row_major(&per));
    // g^T x by hand: dloss/dy = 1 - tanh(y)^2.
    let y = xs.linear(&w, Some(&b)).unwrap().to_array::<f64>().unwrap();
    let x = xs.to_array::<f64>().unwrap();
    let per = per.to_array::<f64>().unwrap();
    for n in 0..5 {
        for i in 0..3 {
            let dy = 1.0 - y[[n, i]].tanh().powi(2);
            for j in 0..4 {
                let want = dy * x[[n, j]];
                assert!((per[[n, i, j]] - want).abs() < 1e-12, "{n} {i} {j}");
            }
        }
    }
}
