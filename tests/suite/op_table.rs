//! The op-table generator on a table that uses every schema type: the generated
//! typed functions pass each argument through the dispatcher to the registered
//! functions, and the schema constants describe the table.

use batchrules::rules::{Arg, TensorMeta};
use batchrules::schema::{ArgType, OpKind};
use batchrules::{batching_rule, decompose, jvp, kernel, meta, vjp, DType, Error, Result, Tensor};
use ndarray::array;

mod typed {
    batchrules::op_table!("tests/tables/all_types.toml");
}

fn vec1(values: &[f64]) -> Tensor {
    Tensor::from_shape_vec(&[values.len()], values.to_vec()).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_array::<f64>().unwrap().iter().copied().collect()
}

// pick: returns [index..., flip as 0/1/-1, scale]
#[meta(op = "pick", table = typed)]
fn pick_meta(
    _x: &TensorMeta,
    index: &[i64],
    _flip: Option<bool>,
    _scale: f64,
) -> Result<TensorMeta> {
    Ok(TensorMeta::new(vec![index.len() + 2], DType::F64))
}
#[kernel(op = "pick", table = typed)]
fn pick_kernel(_x: &Tensor, index: &[i64], flip: Option<bool>, scale: f64) -> Result<Tensor> {
    let mut v: Vec<f64> = index.iter().map(|&i| i as f64).collect();
    v.push(match flip {
        None => -1.0,
        Some(b) => f64::from(u8::from(b)),
    });
    v.push(scale);
    Ok(vec1(&v))
}
#[batching_rule(op = "pick", table = typed)]
fn pick_rule(
    x: &Tensor,
    _bdim: Option<usize>,
    index: &[i64],
    flip: Option<bool>,
    scale: f64,
) -> Result<(Tensor, Option<usize>)> {
    Ok((typed::pick(x, index, flip, scale)?, None))
}

#[meta(op = "concat_first", table = typed)]
fn concat_meta(tensors: &[TensorMeta], _dim: i64) -> Result<TensorMeta> {
    let n = tensors
        .iter()
        .map(|t| t.shape().first().copied().unwrap_or(0))
        .sum::<usize>();
    Ok(TensorMeta::new(vec![n], DType::F64))
}
#[kernel(op = "concat_first", table = typed)]
fn concat_kernel(tensors: &[Tensor], _dim: i64) -> Result<Tensor> {
    let all: Vec<f64> = tensors.iter().flat_map(values).collect();
    Ok(vec1(&all))
}
#[batching_rule(op = "concat_first", table = typed)]
fn concat_rule(
    tensors: &[Tensor],
    _bdims: &[Option<usize>],
    dim: i64,
) -> Result<(Tensor, Option<usize>)> {
    Ok((typed::concat_first(tensors, dim)?, None))
}

#[meta(op = "minmax", table = typed)]
fn minmax_meta(x: &TensorMeta) -> Result<(TensorMeta, TensorMeta)> {
    if x.shape().iter().product::<usize>() == 0 {
        return Err(Error::invalid("minmax of an empty tensor"));
    }
    let m = TensorMeta::new(Vec::new(), x.dtype());
    Ok((m.clone(), m))
}
#[kernel(op = "minmax", table = typed)]
fn minmax_kernel(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let v = values(x);
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok((Tensor::scalar(min), Tensor::scalar(max)))
}
#[batching_rule(op = "minmax", table = typed)]
#[allow(clippy::type_complexity)]
fn minmax_rule(
    x: &Tensor,
    _bdim: Option<usize>,
) -> Result<((Tensor, Option<usize>), (Tensor, Option<usize>))> {
    let (a, b) = typed::minmax(x)?;
    Ok(((a, None), (b, None)))
}

#[meta(op = "split_all", table = typed)]
fn split_meta(x: &TensorMeta) -> Result<Vec<TensorMeta>> {
    let n = x.shape().first().copied().unwrap_or(0);
    Ok(vec![TensorMeta::new(Vec::new(), x.dtype()); n])
}
#[kernel(op = "split_all", table = typed)]
fn split_kernel(x: &Tensor) -> Result<Vec<Tensor>> {
    Ok(values(x).into_iter().map(Tensor::scalar).collect())
}
#[batching_rule(op = "split_all", table = typed)]
fn split_rule(x: &Tensor, _bdim: Option<usize>) -> Result<(Vec<Tensor>, Vec<Option<usize>>)> {
    let parts = typed::split_all(x)?;
    let bdims = vec![None; parts.len()];
    Ok((parts, bdims))
}

#[meta(op = "cast_to", table = typed)]
fn cast_meta(
    x: &TensorMeta,
    dtype: DType,
    _bias: Option<&TensorMeta>,
    _dim: Option<i64>,
) -> Result<TensorMeta> {
    Ok(x.with_dtype(dtype))
}
#[kernel(op = "cast_to", table = typed)]
fn cast_kernel(
    x: &Tensor,
    dtype: DType,
    bias: Option<&Tensor>,
    dim: Option<i64>,
) -> Result<Tensor> {
    // Encodes what arrived: dtype as a code, bias presence, dim.
    assert_eq!(dtype, DType::F64);
    let b = bias.map_or(0.0, |b| values(b)[0]);
    let mut v = values(x);
    v.push(b);
    v.push(dim.map_or(-100.0, |d| d as f64));
    Ok(vec1(&v))
}
#[batching_rule(op = "cast_to", table = typed)]
fn cast_rule(
    x: &Tensor,
    _x_bdim: Option<usize>,
    dtype: DType,
    bias: Option<&Tensor>,
    _bias_bdim: Option<usize>,
    dim: Option<i64>,
) -> Result<(Tensor, Option<usize>)> {
    Ok((typed::cast_to(x, dtype, bias, dim)?, None))
}

// The vjps below report what reached them, so the tests can check the
// plumbing of the erased `VjpRuleFn`: arguments, outputs and cotangents in, one
// gradient per tensor slot out.

/// The gradient of each list element is its slice of `grad`; `dim = 99`
/// drops the last one (a bug the shim must catch).
#[vjp(op = "concat_first", table = typed)]
fn concat_vjp(
    tensors: &[Tensor],
    dim: i64,
    _result: &Tensor,
    grad: &Tensor,
) -> Result<Vec<Option<Tensor>>> {
    let mut start = 0;
    let mut grads = Vec::new();
    for t in tensors {
        let len = t.shape()[0] as i64;
        grads.push(Some(batchrules::ops::narrow(grad, 0, start, len)?));
        start += len;
    }
    if dim == 99 {
        grads.pop();
    }
    Ok(grads)
}

/// Gradient of `self`: the values of both outputs then both cotangents.
#[vjp(op = "minmax", table = typed)]
fn minmax_vjp(
    _x: &Tensor,
    result0: &Tensor,
    result1: &Tensor,
    grad0: &Tensor,
    grad1: &Tensor,
) -> Result<Option<Tensor>> {
    let all: Vec<f64> = [result0, result1, grad0, grad1]
        .into_iter()
        .flat_map(values)
        .collect();
    Ok(Some(vec1(&all)))
}

/// `self` gets `grad`; `bias` gets `[dim]` whenever `dim` is given, present or
/// not (a bug when it is absent).
#[vjp(op = "cast_to", table = typed)]
fn cast_vjp(
    _x: &Tensor,
    _dtype: DType,
    _bias: Option<&Tensor>,
    dim: Option<i64>,
    _result: &Tensor,
    grad: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((Some(grad.clone()), dim.map(|d| vec1(&[d as f64]))))
}

#[meta(op = "unstack", table = typed)]
fn unstack_meta(x: &TensorMeta, _drop: i64) -> Result<Vec<TensorMeta>> {
    let n = x.shape().first().copied().unwrap_or(0);
    Ok(vec![TensorMeta::new(Vec::new(), x.dtype()); n])
}
#[kernel(op = "unstack", table = typed)]
fn unstack_kernel(x: &Tensor, _drop: i64) -> Result<Vec<Tensor>> {
    Ok(values(x).into_iter().map(Tensor::scalar).collect())
}

// The jvps below report what reached them, so the tests can check the
// plumbing of the erased `JvpRuleFn`: arguments, outputs and one tangent entry
// per tensor slot in, one tangent per output out.

/// The values of every tangent of the list, `-1` for a zero (None) one.
#[jvp(op = "concat_first", table = typed)]
fn concat_jvp(
    _tensors: &[Tensor],
    _dim: i64,
    _result: &Tensor,
    tensors_tangent: &[Option<Tensor>],
) -> Result<Option<Tensor>> {
    let all: Vec<f64> = tensors_tangent
        .iter()
        .flat_map(|t| t.as_ref().map_or(vec![-1.0], values))
        .collect();
    Ok(Some(vec1(&all)))
}

/// Tangent of `min`: both outputs then the tangent of `self`; of `max`: zero.
#[jvp(op = "minmax", table = typed)]
fn minmax_jvp(
    _x: &Tensor,
    result0: &Tensor,
    result1: &Tensor,
    self_tangent: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let mut all: Vec<f64> = [result0, result1].into_iter().flat_map(values).collect();
    all.extend(self_tangent.map_or(vec![-1.0], values));
    Ok((Some(vec1(&all)), None))
}

/// `[self_tangent or -1, bias_tangent or -1]`.
#[jvp(op = "cast_to", table = typed)]
#[allow(clippy::too_many_arguments)]
fn cast_jvp(
    _x: &Tensor,
    _dtype: DType,
    _bias: Option<&Tensor>,
    _dim: Option<i64>,
    _result: &Tensor,
    self_tangent: Option<&Tensor>,
    bias_tangent: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    let first = |t: Option<&Tensor>| t.map_or(-1.0, |t| values(t)[0]);
    Ok(Some(vec1(&[first(self_tangent), first(bias_tangent)])))
}

/// One tangent per element: the element's tangent plus its output, so both
/// arrive; `drop` of them left out (a bug the shim must catch).
#[jvp(op = "unstack", table = typed)]
fn unstack_jvp(
    _x: &Tensor,
    drop: i64,
    result: &[Tensor],
    self_tangent: Option<&Tensor>,
) -> Result<Vec<Option<Tensor>>> {
    let Some(t) = self_tangent else {
        return Ok(vec![None; result.len()]);
    };
    let mut out = Vec::new();
    for (r, dt) in result.iter().zip(values(t)) {
        out.push(Some(Tensor::scalar(values(r)[0] + dt)));
    }
    out.truncate(out.len() - drop as usize);
    Ok(out)
}

// mode_code: a `str` argument with a default.
#[meta(op = "mode_code", table = typed)]
fn mode_code_meta(x: &TensorMeta, mode: &str) -> Result<TensorMeta> {
    match mode {
        "valid" | "same" => Ok(TensorMeta::new(Vec::new(), x.dtype())),
        other => Err(Error::invalid(format!(
            "`mode` must be \"valid\" or \"same\", got {other:?}"
        ))),
    }
}

#[kernel(op = "mode_code", table = typed)]
fn mode_code_kernel(_x: &Tensor, mode: &str) -> Result<Tensor> {
    Ok(Tensor::scalar(f64::from(u8::from(mode == "same"))))
}

#[decompose(op = "twice", table = typed)]
fn twice(x: &Tensor) -> Result<Tensor> {
    batchrules::ops::add(x, x)
}

#[test]
fn scalar_and_list_arguments_arrive() {
    let x = vec1(&[0.0]);
    assert_eq!(
        values(&typed::pick(&x, &[3, -1], Some(true), 2.5).unwrap()),
        vec![3.0, -1.0, 1.0, 2.5]
    );
    assert_eq!(
        values(&typed::pick(&x, &[], None, 1.5).unwrap()),
        vec![-1.0, 1.5]
    );
}

#[test]
fn string_arguments_arrive_with_their_defaults() {
    use typed::Methods as _;
    let x = vec1(&[0.0]);
    assert_eq!(values(&typed::mode_code(&x, "same").unwrap()), vec![1.0]);
    assert_eq!(values(&typed::mode_code(&x, "valid").unwrap()), vec![0.0]);
    // The method applies the schema's default, "valid"; the spec fixes "same".
    assert_eq!(values(&x.mode_code().unwrap()), vec![0.0]);
    assert_eq!(values(&x.mode_code_same().unwrap()), vec![1.0]);
    let err = typed::mode_code(&x, "full").unwrap_err();
    assert_eq!(
        err.to_string(),
        "mode_code: `mode` must be \"valid\" or \"same\", got \"full\""
    );
}

#[test]
fn tensor_lists_arrive_in_order() {
    let out = typed::concat_first(&[vec1(&[1.0, 2.0]), vec1(&[3.0])], 0).unwrap();
    assert_eq!(values(&out), vec![1.0, 2.0, 3.0]);
}

#[test]
fn tuple_and_list_returns() {
    let x = vec1(&[4.0, -2.0, 7.0]);
    let (lo, hi) = typed::minmax(&x).unwrap();
    assert_eq!((values(&lo), values(&hi)), (vec![-2.0], vec![7.0]));
    let parts = typed::split_all(&x).unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(values(&parts[2]), vec![7.0]);
}

#[test]
fn optional_tensor_and_scalar_type() {
    let x = vec1(&[1.0]);
    let bias = vec1(&[9.0]);
    let out = typed::cast_to(&x, DType::F64, Some(&bias), Some(-2)).unwrap();
    assert_eq!(values(&out), vec![1.0, 9.0, -2.0]);
    let out = typed::cast_to(&x, DType::F64, None, None).unwrap();
    assert_eq!(values(&out), vec![1.0, 0.0, -100.0]);
}

#[test]
fn composite_runs_its_decomposition() {
    let x = Tensor::from(array![1.0f64, 2.0].into_dyn());
    assert_eq!(values(&typed::twice(&x).unwrap()), vec![2.0, 4.0]);
}

#[test]
fn meta_errors_name_the_op() {
    let empty = Tensor::from_shape_vec::<f64>(&[0], vec![]).unwrap();
    let err = typed::minmax(&empty).unwrap_err();
    assert_eq!(err.to_string(), "minmax: minmax of an empty tensor");
}

#[test]
fn schema_constants_describe_the_table() {
    let ops = typed::__SCHEMA;
    assert_eq!(ops.len(), 8);
    let pick = &ops[0];
    assert_eq!(pick.name, "pick");
    assert_eq!(pick.kind, OpKind::Primitive);
    assert_eq!(pick.args.len(), 4);
    assert_eq!(pick.args[1].ty, ArgType::IntList);
    assert!(pick.args[2].optional);
    assert_eq!(pick.args[2].default, Some("None"));
    assert_eq!(pick.args[3].default, Some("1.5"));
    assert_eq!(
        pick.rule.display,
        "fn(self_: &Tensor, self_bdim: Option<usize>, index: &[i64], flip: Option<bool>, scale: f64) -> Result<(Tensor, Option<usize>)>"
    );
    assert_eq!(ops[2].returns, &[ArgType::Tensor, ArgType::Tensor]);
    assert_eq!(ops[3].returns, &[ArgType::TensorList]);
    assert_eq!(ops[5].kind, OpKind::Composite);
    let mode = &ops[7].args[1];
    assert_eq!((mode.ty, mode.default), (ArgType::Str, Some("\"valid\"")));
    assert_eq!(
        ops[7].kernel.display,
        "fn(self_: &Tensor, mode: &str) -> Result<Tensor>"
    );
    assert_eq!(typed::__PATH, "suite::op_table::typed");
    // `differentiable` defaults to true; `split_all` says `differentiable = false`.
    assert!(pick.differentiable && ops[2].differentiable && ops[5].differentiable);
    assert!(!ops[3].differentiable);
    assert_eq!(
        pick.vjp.display,
        "fn(self_: &Tensor, index: &[i64], flip: Option<bool>, scale: f64, result: &Tensor, grad: &Tensor) -> Result<Option<Tensor>>"
    );
    assert_eq!(
        ops[2].vjp.display,
        "fn(self_: &Tensor, result0: &Tensor, result1: &Tensor, grad0: &Tensor, grad1: &Tensor) -> Result<Option<Tensor>>"
    );
    assert_eq!(
        ops[4].vjp.ret, "Result<(Option<Tensor>, Option<Tensor>)>",
        "one gradient per tensor slot, the optional `bias` included"
    );
    assert_eq!(ops[1].vjp.ret, "Result<Vec<Option<Tensor>>>");
    assert_eq!(
        ops[4].signature(batchrules::schema::Role::Vjp).params,
        &[
            "&Tensor",
            "DType",
            "Option<&Tensor>",
            "Option<i64>",
            "&Tensor",
            "&Tensor"
        ]
    );
}

fn typed_vjp(op: &str) -> batchrules::transform::VjpRuleFn {
    use batchrules::transform::vjps;
    let registry = batchrules::registry::registry().unwrap();
    let entry = registry.find("suite::op_table::typed", op).unwrap();
    assert!(vjps::TABLE.location(entry).unwrap().is_some());
    vjps::TABLE
        .get(entry)
        .unwrap()
        .expect("the #[vjp] is registered")
}

#[test]
fn vjp_gets_outputs_and_cotangents_in_order() {
    let vjp = typed_vjp("minmax");
    let x = vec1(&[1.0, 5.0]);
    let outs = [Tensor::scalar(1.0f64), Tensor::scalar(5.0f64)];
    let grads = [Tensor::scalar(10.0f64), Tensor::scalar(20.0f64)];
    let g = vjp(&[Arg::Tensor(x)], &outs, &grads).unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(values(g[0].as_ref().unwrap()), [1.0, 5.0, 10.0, 20.0]);
}

#[test]
fn vjp_of_a_tensor_list_gives_one_gradient_per_element() {
    let vjp = typed_vjp("concat_first");
    let list = vec![vec1(&[1.0, 2.0]), vec1(&[3.0])];
    let out = typed::concat_first(&list, 0).unwrap();
    let grad = vec1(&[10.0, 20.0, 30.0]);
    let args = [Arg::TensorList(list.clone()), Arg::Int(0)];
    let g = vjp(
        &args,
        std::slice::from_ref(&out),
        std::slice::from_ref(&grad),
    )
    .unwrap();
    assert_eq!(g.len(), 2);
    assert_eq!(values(g[0].as_ref().unwrap()), [10.0, 20.0]);
    assert_eq!(values(g[1].as_ref().unwrap()), [30.0]);

    // A list of the wrong length is a bug in the vjp, named as such.
    let args = [Arg::TensorList(list), Arg::Int(99)];
    let err = vjp(&args, &[out], &[grad]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::RuleBug { .. }), "{msg}");
    assert!(
        msg.contains("concat_first")
            && msg.contains("`concat_vjp` at tests/suite/op_table.rs:")
            && msg.contains("1 gradients for the tensor list `tensors`, which has 2"),
        "{msg}"
    );
}

#[test]
fn vjp_slots_follow_the_tensor_arguments_optional_ones_included() {
    let vjp = typed_vjp("cast_to");
    let x = vec1(&[1.0]);
    let grad = vec1(&[4.0, 5.0, 6.0]);
    let out = vec1(&[0.0, 0.0, 0.0]);
    let args = |bias: Option<Tensor>, dim: Option<i64>| {
        [
            Arg::Tensor(x.clone()),
            Arg::ScalarType(DType::F64),
            Arg::OptTensor(bias),
            Arg::OptInt(dim),
        ]
    };
    let run = |a: &[Arg<Tensor>]| vjp(a, std::slice::from_ref(&out), std::slice::from_ref(&grad));

    let g = run(&args(Some(vec1(&[2.0])), Some(3))).unwrap();
    assert_eq!(g.len(), 2, "one entry per tensor slot: self and bias");
    assert_eq!(values(g[0].as_ref().unwrap()), [4.0, 5.0, 6.0]);
    assert_eq!(values(g[1].as_ref().unwrap()), [3.0]);

    // An absent optional tensor still has its slot, None.
    let g = run(&args(None, None)).unwrap();
    assert_eq!(g.len(), 2);
    assert!(g[1].is_none());

    // A gradient for an absent optional tensor is a bug in the vjp.
    let err = run(&args(None, Some(3))).unwrap_err();
    assert!(
        err.to_string()
            .contains("optional argument `bias`, which was None"),
        "{err}"
    );
}

fn typed_jvp(op: &str) -> batchrules::transform::JvpRuleFn {
    use batchrules::transform::jvps;
    let registry = batchrules::registry::registry().unwrap();
    let entry = registry.find("suite::op_table::typed", op).unwrap();
    assert!(jvps::TABLE.location(entry).unwrap().is_some());
    assert_eq!(
        batchrules::coverage::jvp_status(entry).unwrap(),
        batchrules::coverage::JvpStatus::Jvp
    );
    jvps::TABLE
        .get(entry)
        .unwrap()
        .expect("the #[jvp] is registered")
}

#[test]
fn jvp_signatures_in_the_schema_constants() {
    let ops = typed::__SCHEMA;
    assert_eq!(
        ops[1].jvp.display,
        "fn(tensors: &[Tensor], dim: i64, result: &Tensor, tensors_tangent: &[Option<Tensor>]) -> Result<Option<Tensor>>"
    );
    assert_eq!(
        ops[2].jvp.display,
        "fn(self_: &Tensor, result0: &Tensor, result1: &Tensor, self_tangent: Option<&Tensor>) -> Result<(Option<Tensor>, Option<Tensor>)>"
    );
    assert_eq!(
        ops[6].jvp.display,
        "fn(self_: &Tensor, drop: i64, result: &[Tensor], self_tangent: Option<&Tensor>) -> Result<Vec<Option<Tensor>>>"
    );
    assert!(ops.iter().all(|o| !o.linear), "`linear` defaults to false");
}

#[test]
fn jvp_gets_outputs_and_one_tangent_per_output_back() {
    let jvp = typed_jvp("minmax");
    let x = vec1(&[1.0, 5.0]);
    let outs = [Tensor::scalar(1.0f64), Tensor::scalar(5.0f64)];
    let t = jvp(
        &[Arg::Tensor(x.clone())],
        &outs,
        &[vec![Some(vec1(&[7.0, 8.0]))]],
    )
    .unwrap();
    assert_eq!(t.len(), 2, "one tangent per output");
    assert_eq!(values(t[0].as_ref().unwrap()), [1.0, 5.0, 7.0, 8.0]);
    assert!(t[1].is_none());
    // A zero tangent arrives as None.
    let t = jvp(&[Arg::Tensor(x)], &outs, &[vec![None]]).unwrap();
    assert_eq!(values(t[0].as_ref().unwrap()), [1.0, 5.0, -1.0]);
}

#[test]
fn jvp_of_a_tensor_list_argument_gets_one_tangent_per_element() {
    let jvp = typed_jvp("concat_first");
    let list = vec![vec1(&[1.0, 2.0]), vec1(&[3.0])];
    let out = typed::concat_first(&list, 0).unwrap();
    let args = [Arg::TensorList(list), Arg::Int(0)];
    let tangents = [vec![None, Some(vec1(&[30.0]))]];
    let t = jvp(&args, &[out], &tangents).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(values(t[0].as_ref().unwrap()), [-1.0, 30.0]);
}

#[test]
fn jvp_tangent_slots_follow_the_tensor_arguments_optional_ones_included() {
    let jvp = typed_jvp("cast_to");
    let x = vec1(&[1.0]);
    let out = vec1(&[0.0, 0.0, 0.0]);
    let args = [
        Arg::Tensor(x),
        Arg::ScalarType(DType::F64),
        Arg::OptTensor(Some(vec1(&[2.0]))),
        Arg::OptInt(None),
    ];
    let run = |tangents: &[Vec<Option<Tensor>>]| jvp(&args, std::slice::from_ref(&out), tangents);
    let t = run(&[vec![Some(vec1(&[4.0]))], vec![Some(vec1(&[9.0]))]]).unwrap();
    assert_eq!(values(t[0].as_ref().unwrap()), [4.0, 9.0]);
    let t = run(&[vec![None], vec![Some(vec1(&[9.0]))]]).unwrap();
    assert_eq!(values(t[0].as_ref().unwrap()), [-1.0, 9.0]);
    // A slot of a `Tensor` argument holds exactly one entry; anything else
    // breaks the erased interface and is an error, not a panic.
    assert!(run(&[vec![], vec![None]]).is_err());
}

#[test]
fn jvp_of_a_tensor_list_output_gives_one_tangent_per_element() {
    let jvp = typed_jvp("unstack");
    let x = vec1(&[1.0, 2.0, 3.0]);
    let outs = typed::unstack(&x, 0).unwrap();
    let tangent = [vec![Some(vec1(&[10.0, 20.0, 30.0]))]];
    let args = |drop: i64| [Arg::Tensor(x.clone()), Arg::Int(drop)];
    let t = jvp(&args(0), &outs, &tangent).unwrap();
    let got: Vec<f64> = t.iter().map(|t| values(t.as_ref().unwrap())[0]).collect();
    assert_eq!(got, [11.0, 22.0, 33.0]);
    let t = jvp(&args(0), &outs, &[vec![None]]).unwrap();
    assert_eq!(t.len(), 3);
    assert!(t.iter().all(Option::is_none));

    // A list of the wrong length is a bug in the jvp, named as such.
    let err = jvp(&args(1), &outs, &tangent).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::RuleBug { .. }), "{msg}");
    assert!(
        msg.contains("unstack")
            && msg.contains("`unstack_jvp` at tests/suite/op_table.rs:")
            && msg.contains("2 tangents for the output list, which has 3"),
        "{msg}"
    );
}

/// The backticked names in `text`, in order.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn the_guide_lists_the_schema_types_the_macros_accept() {
    use batchrules::schema::SCHEMA_TYPES;
    let guide = include_str!("../../runtime/docs/guide.md").replace('\n', " ");
    let start = guide
        .find("Schema types are ")
        .expect("the guide lists the schema types");
    let rest = &guide[start..];
    let (types, rest) = rest
        .split_once(", each optionally followed by `?` except ")
        .expect("the guide says which types take no `?`");
    let (fixed, _) = rest.split_once(" (").expect("the list ends");
    let want: Vec<&str> = SCHEMA_TYPES.iter().map(|t| t.name).collect();
    let want_fixed: Vec<&str> = SCHEMA_TYPES
        .iter()
        .filter(|t| t.not_optional.is_some())
        .map(|t| t.name)
        .collect();
    assert_eq!(backticked(types), want, "the guide's schema types");
    assert_eq!(
        backticked(fixed),
        want_fixed,
        "the guide's types without `?`"
    );
}
