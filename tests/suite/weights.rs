//! Weights in and out (`batchrules::io`): files written by PyTorch and numpy
//! (`tests/reference/`, made by `scripts/reference/record_weights.py`, whose
//! values it records in `torch_weights.json`) load into derived structs with
//! their values; every dtype round-trips exactly through safetensors, npy and
//! npz; every malformed file or mismatched template is an error naming the
//! function, the file and the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use batchrules::io::{self, LoadOptions};
use batchrules::{tree_leaves, vmap, DType, Error, Result, Tensor, TensorTree};
use ndarray::{ArrayD, IxDyn};

use crate::common::{bits, no_panic};

const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference");

fn reference(name: &str) -> PathBuf {
    Path::new(REFERENCE).join(name)
}

fn json() -> serde_json::Value {
    serde_json::from_str(include_str!("../reference/torch_weights.json"))
        .expect("tests/reference/torch_weights.json is JSON")
}

/// A directory of its own for one test, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("batchrules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The values of any tensor as f64 (bool as 0/1), row-major.
fn values(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::F32 => t
            .to_array::<f32>()
            .unwrap()
            .iter()
            .map(|&v| v as f64)
            .collect(),
        DType::F64 => t.to_array::<f64>().unwrap().iter().copied().collect(),
        DType::I64 => t
            .to_array::<i64>()
            .unwrap()
            .iter()
            .map(|&v| v as f64)
            .collect(),
        DType::Bool => t
            .to_array::<bool>()
            .unwrap()
            .iter()
            .map(|&v| f64::from(u8::from(v)))
            .collect(),
    }
}

/// Checks `t` against a record of the JSON: shape, the dtype it loads as,
/// and every value, exactly (the JSON holds the f64 of each value).
fn check_recorded(what: &str, t: &Tensor, record: &serde_json::Value, dtype: DType) {
    let shape: Vec<usize> = record["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let want: Vec<f64> = record["values"]
        .as_array()
        .unwrap()
        .iter()
        // JSON has no infinities: the script writes them as "inf", "-inf".
        .map(|v| {
            v.as_f64()
                .unwrap_or_else(|| v.as_str().unwrap().parse().unwrap())
        })
        .collect();
    assert_eq!(t.shape(), &shape[..], "{what}: shape");
    assert_eq!(t.dtype(), dtype, "{what}: dtype");
    let got = values(t);
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        // serde_json (without `float_roundtrip`) may read the JSON's f64 one
        // ulp off: f32 values are compared exactly as f32, f64 values to 2
        // ulps, integers and bools exactly.
        let same = match dtype {
            DType::F32 => (g as f32).to_bits() == (w as f32).to_bits(),
            DType::F64 => (g - w).abs() <= 2.0 * f64::EPSILON * w.abs(),
            _ => g == w,
        };
        assert!(
            same || (g.is_nan() && w.is_nan()),
            "{what}[{i}]: {g} loaded, {w} recorded"
        );
    }
}

/// The dtype a torch/numpy dtype name loads as.
fn loaded_dtype(name: &str) -> DType {
    match name {
        "float32" | "float16" | "bfloat16" => DType::F32,
        "float64" | ">f8" => DType::F64,
        "bool" => DType::Bool,
        _ => DType::I64,
    }
}

// The model of record_weights.py, as a Rust user writes it.

#[derive(Clone, Debug, TensorTree)]
struct Linear {
    #[tree(rename = "weight")]
    w: Tensor,
    #[tree(rename = "bias")]
    b: Option<Tensor>,
}

#[derive(Clone, Debug, TensorTree)]
struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    #[tree(skip)]
    eps: f64,
}

/// `nn.Sequential(Linear, ReLU, Linear)`: entries 0 and 2 hold parameters.
#[derive(Clone, Debug, TensorTree)]
struct Head {
    #[tree(rename = "0")]
    first: Linear,
    #[tree(rename = "2")]
    second: Linear,
}

#[derive(Clone, Debug, TensorTree)]
struct Net {
    fc1: Linear,
    norm: LayerNorm,
    fc2: Linear,
    head: Head,
    steps: Tensor,
    mask: Tensor,
}

fn zeros(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_shape_vec(shape, vec![0.0f32; n]).unwrap()
}

fn linear(out: usize, inp: usize, bias: bool) -> Linear {
    Linear {
        w: zeros(&[out, inp]),
        b: bias.then(|| zeros(&[out])),
    }
}

fn net_template() -> Net {
    Net {
        fc1: linear(3, 4, true),
        norm: LayerNorm {
            weight: zeros(&[3]),
            bias: zeros(&[3]),
            eps: 1e-5,
        },
        fc2: linear(2, 3, true),
        head: Head {
            first: linear(2, 2, true),
            second: linear(1, 2, false),
        },
        steps: Tensor::scalar(0i64),
        mask: Tensor::from_shape_vec(&[3], vec![false; 3]).unwrap(),
    }
}

/// Every leaf of `net` against the JSON's record of the state_dict, and the
/// same keys on both sides.
fn check_net(what: &str, net: &Net) {
    let json = json();
    let records = json["torch_mlp"].as_object().unwrap();
    let leaves = tree_leaves(net);
    let mut keys: Vec<&str> = leaves.iter().map(|(k, _)| k.as_str()).collect();
    let mut recorded: Vec<&str> = records.keys().map(String::as_str).collect();
    keys.sort();
    recorded.sort();
    assert_eq!(
        keys, recorded,
        "{what}: the struct's keys are the state_dict's"
    );
    for (key, t) in &leaves {
        let record = &records[key.as_str()];
        let dtype = loaded_dtype(record["dtype"].as_str().unwrap());
        check_recorded(&format!("{what} {key}"), t, record, dtype);
    }
    assert_eq!(
        net.norm.eps, 1e-5,
        "a skipped field comes from the template"
    );
}

#[test]
fn a_pytorch_state_dict_loads_into_a_derived_struct() -> Result<()> {
    let template = net_template();
    let net = io::load_safetensors(&template, reference("torch_mlp.safetensors"))?;
    check_net("safetensors", &net);
    // The same state_dict, written by numpy's savez.
    let net = io::load_npz(&template, reference("torch_mlp.npz"))?;
    check_net("npz", &net);
    // Every tensor by name, as safetensors.torch.load_file gives them, is the
    // same as the struct's.
    let all = io::read_safetensors(reference("torch_mlp.safetensors"))?;
    let from_npz = io::read_npz(reference("torch_mlp.npz"))?;
    for (key, t) in tree_leaves(&net) {
        assert_eq!(values(&all[&key]), values(&t), "{key}");
        assert_eq!(values(&from_npz[&key]), values(&t), "{key}");
    }
    Ok(())
}

#[test]
fn half_precision_and_narrow_integers_convert_on_load() -> Result<()> {
    let json = json();
    let all = io::read_safetensors(reference("torch_half.safetensors"))?;
    let records = json["torch_half"].as_object().unwrap();
    assert_eq!(all.len(), records.len());
    for (key, record) in records {
        let dtype = loaded_dtype(record["dtype"].as_str().unwrap());
        check_recorded(key, &all[key], record, dtype);
    }
    // The subnormal, the infinity and the negative zero came through.
    let edge = all["edge_f16"].to_array::<f32>()?;
    assert_eq!(edge[[1]], -(2.0f32).powi(-24));
    assert_eq!(edge[[2]], f32::INFINITY);
    assert!(edge[[3]] == 0.0 && edge[[3]].is_sign_negative());

    // numpy's other layouts and types (Fortran order, big-endian, f16, ...).
    let misc = io::read_npz(reference("numpy_misc.npz"))?;
    let records = json["numpy_misc"].as_object().unwrap();
    assert_eq!(misc.len(), records.len());
    for (key, record) in records {
        let dtype = match record["dtype"].as_str().unwrap() {
            "float16" | "float32" => DType::F32,
            "float64" | ">f8" => DType::F64,
            "bool" => DType::Bool,
            _ => DType::I64,
        };
        check_recorded(key, &misc[key], record, dtype);
    }
    Ok(())
}

/// Tensors of every dtype, with the values that a lossy path would change:
/// NaN, infinities, negative zero, subnormals, the integer extremes, an
/// empty tensor, a 0-d one and a permuted (not row-major) one.
#[derive(Clone, Debug, TensorTree)]
struct AllTypes {
    f32s: Tensor,
    f64s: Tensor,
    i64s: Tensor,
    bools: Tensor,
    empty: Tensor,
    scalar: Tensor,
    permuted: Tensor,
    layers: Vec<(Tensor, Option<Tensor>)>,
}

fn all_types() -> AllTypes {
    let f32s = vec![
        1.5f32,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE / 4.0,
        f32::MAX,
        -1e-30,
    ];
    let f64s = vec![
        std::f64::consts::PI,
        -0.0,
        f64::NAN,
        5e-324,
        f64::MIN,
        1e300,
    ];
    let grid = ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).map(|v| v as f64).collect()).unwrap();
    AllTypes {
        f32s: Tensor::from_shape_vec(&[2, 4], f32s).unwrap(),
        f64s: Tensor::from_shape_vec(&[3, 1, 2], f64s).unwrap(),
        i64s: Tensor::from_shape_vec(&[3], vec![i64::MIN, -1, i64::MAX]).unwrap(),
        bools: Tensor::from_shape_vec(&[2, 2], vec![true, false, false, true]).unwrap(),
        empty: Tensor::from_shape_vec::<f32>(&[0, 3], vec![]).unwrap(),
        scalar: Tensor::scalar(7i64),
        permuted: Tensor::from(grid).permuted(&[1, 0]).unwrap(),
        layers: vec![
            (Tensor::scalar(1.0f64), None),
            (Tensor::scalar(2.0f32), Some(Tensor::scalar(true))),
        ],
    }
}

fn assert_same_tree<T: TensorTree>(what: &str, a: &T, b: &T) {
    let (a, b) = (tree_leaves(a), tree_leaves(b));
    assert_eq!(a.len(), b.len(), "{what}");
    for ((ka, ta), (kb, tb)) in a.iter().zip(&b) {
        assert_eq!(ka, kb, "{what}");
        assert_eq!(ta.shape(), tb.shape(), "{what} {ka}");
        assert_eq!(ta.dtype(), tb.dtype(), "{what} {ka}");
        assert_eq!(bits(ta), bits(tb), "{what} {ka}");
    }
}

#[test]
fn every_dtype_round_trips_exactly() -> Result<()> {
    let dir = TempDir::new("round-trip");
    let tree = all_types();
    let keys: Vec<String> = tree_leaves(&tree).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "f32s",
            "f64s",
            "i64s",
            "bools",
            "empty",
            "scalar",
            "permuted",
            "layers.0.0",
            "layers.1.0",
            "layers.1.1"
        ]
    );

    io::save_safetensors(&tree, dir.path("all.safetensors"))?;
    let back = io::load_safetensors(&tree, dir.path("all.safetensors"))?;
    assert_same_tree("safetensors file", &tree, &back);
    let bytes = io::to_safetensors_bytes(&tree)?;
    assert_eq!(bytes, std::fs::read(dir.path("all.safetensors")).unwrap());
    let back = io::load_safetensors_bytes(&tree, &bytes, LoadOptions::new())?;
    assert_same_tree("safetensors bytes", &tree, &back);
    // The map of every tensor is itself a tree, and saves the same file.
    let map = io::read_safetensors_bytes(&bytes)?;
    assert_eq!(map.len(), keys.len());
    let again = io::to_safetensors_bytes(&map)?;
    assert_same_tree("map", &map, &io::read_safetensors_bytes(&again)?);

    io::save_npz(&tree, dir.path("all.npz"))?;
    let back = io::load_npz(&tree, dir.path("all.npz"))?;
    assert_same_tree("npz", &tree, &back);

    for (key, t) in tree_leaves(&tree) {
        let file = dir.path(&format!("{key}.npy"));
        io::save_npy(&t, &file)?;
        assert_same_tree(&key, &t, &io::load_npy(&file)?);
        assert_same_tree(&key, &t, &io::read_npy_bytes(&io::to_npy_bytes(&t)?)?);
        // Each .npy entry of the npz is the file save_npy writes.
        assert_eq!(std::fs::read(&file).unwrap(), io::to_npy_bytes(&t)?);
    }
    // No temporary file is left behind.
    assert!(
        dir.files().iter().all(|f| !f.ends_with(".tmp")),
        "{:?}",
        dir.files()
    );
    Ok(())
}

/// The message of an `Error::Weights`, after checking what it names.
fn weights_error<T: std::fmt::Debug>(
    r: Result<T>,
    function: &str,
    file: &str,
    key: Option<&str>,
) -> String {
    let e = r.expect_err("an error");
    let Error::Weights {
        function: f,
        file: p,
        key: k,
        ..
    } = &e
    else {
        panic!("not a weights error: {e:?}");
    };
    assert_eq!(*f, function, "{e}");
    assert!(p.ends_with(file), "{file} in {e}");
    assert_eq!(k.as_deref(), key, "{e}");
    let text = e.to_string();
    assert!(text.starts_with(&format!("{function}: ")), "{text}");
    assert!(text.contains(file), "{text}");
    if let Some(key) = key {
        assert!(text.contains(&format!("key `{key}`")), "{text}");
    }
    text
}

#[test]
fn a_template_that_does_not_match_the_file_is_refused_by_name() -> Result<()> {
    let file = reference("torch_mlp.safetensors");
    let f = "torch_mlp.safetensors";

    // A missing key (a layer without bias where the file has one) and an
    // extra one.
    let mut template = net_template();
    template.fc2.b = None;
    let m = weights_error(
        io::load_safetensors(&template, &file),
        "load_safetensors",
        f,
        Some("fc2.bias"),
    );
    assert!(
        m.contains("the file has 1 key(s) the template lacks: unexpected `fc2.bias`"),
        "{m}"
    );
    assert!(m.contains("strict(false)"), "{m}");

    template.head.second.b = Some(zeros(&[1]));
    let m = weights_error(
        io::load_safetensors(&template, &file),
        "load_safetensors",
        f,
        Some("head.2.bias"),
    );
    assert!(
        m.contains("the template has 1 key(s) the file lacks: missing `head.2.bias`"),
        "{m}"
    );
    assert!(m.contains("unexpected `fc2.bias`"), "{m}");

    // Not strict: the missing key keeps the template's tensor, the extra is
    // ignored, and the rest loads.
    template.head.second.b = Some(Tensor::from_shape_vec(&[1], vec![42.0f32])?);
    let lax = io::load_safetensors_with(&template, &file, LoadOptions::new().strict(false))?;
    assert_eq!(values(lax.head.second.b.as_ref().unwrap()), [42.0]);
    assert!(lax.fc2.b.is_none());
    let full = io::load_safetensors(&net_template(), &file)?;
    assert_eq!(values(&lax.fc1.w), values(&full.fc1.w));

    // A shape that differs, named with the key and the field.
    let mut template = net_template();
    template.fc1.w = zeros(&[4, 3]);
    let m = weights_error(
        io::load_safetensors(&template, &file),
        "load_safetensors",
        f,
        Some("fc1.weight"),
    );
    assert!(
        m.contains("shape [3, 4], the template's (field `.fc1.w`) has [4, 3]"),
        "{m}"
    );
    // Not strict checks shapes too.
    weights_error(
        io::load_safetensors_with(&template, &file, LoadOptions::new().strict(false)),
        "load_safetensors_with",
        f,
        Some("fc1.weight"),
    );

    // An element type that differs.
    let mut template = net_template();
    template.steps = Tensor::scalar(0.0f32);
    let m = weights_error(
        io::load_safetensors(&template, &file),
        "load_safetensors",
        f,
        Some("steps"),
    );
    assert!(
        m.contains("the file's tensor is i64 (as loaded), the template's (field `.steps`) is f32"),
        "{m}"
    );

    // The same through npz.
    let m = weights_error(
        io::load_npz(&template, reference("torch_mlp.npz")),
        "load_npz",
        "torch_mlp.npz",
        Some("steps"),
    );
    assert!(m.contains("is i64"), "{m}");
    Ok(())
}

/// A tree whose hand-written `write_leaf_key` gives two leaves one key.
#[derive(Clone, Debug)]
struct SameKeys(Tensor, Tensor);

impl TensorTree for SameKeys {
    fn leaves(&self, out: &mut Vec<Tensor>) {
        out.push(self.0.clone());
        out.push(self.1.clone());
    }
    fn map_leaves(&self, f: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(SameKeys(f(&self.0)?, f(&self.1)?))
    }
    fn write_leaf_path(&self, index: usize, path: &mut String) {
        path.push_str(if index == 0 { ".0" } else { ".1" });
    }
    fn write_leaf_key(&self, _index: usize, key: &mut String) {
        batchrules::push_key_segment(key, "w");
    }
}

#[test]
fn what_cannot_be_saved_is_refused_and_leaves_no_file() -> Result<()> {
    let dir = TempDir::new("refused");
    let x = Tensor::scalar(1.0f32);

    // A bare tensor has no name.
    let m = weights_error(
        io::save_safetensors(&x, dir.path("x.safetensors")),
        "save_safetensors",
        "x.safetensors",
        None,
    );
    assert!(
        m.contains("leaf 0 has no name") && m.contains("BTreeMap"),
        "{m}"
    );
    weights_error(
        io::load_npz(&x, reference("torch_mlp.npz")),
        "load_npz",
        "torch_mlp.npz",
        None,
    );

    // Two leaves under one key (a hand-written impl).
    let same = SameKeys(x.clone(), x.clone());
    let m = weights_error(
        io::save_npz(&same, dir.path("same.npz")),
        "save_npz",
        "same.npz",
        Some("w"),
    );
    assert!(m.contains("two leaves have this key: `.0` and `.1`"), "{m}");
    weights_error(
        io::to_safetensors_bytes(&same),
        "to_safetensors_bytes",
        "bytes",
        Some("w"),
    );

    // A tensor inside vmap: its data is a batch, not the tensor's.
    let xs = Tensor::from_shape_vec(&[2, 3], vec![0.0f32; 6])?;
    let messages = std::cell::RefCell::new(Vec::new());
    vmap(|row: Tensor| {
        let named = BTreeMap::from([("row".to_string(), row.clone())]);
        let mut messages = messages.borrow_mut();
        messages.push(weights_error(
            io::to_safetensors_bytes(&named),
            "to_safetensors_bytes",
            "bytes",
            Some("row"),
        ));
        messages.push(weights_error(
            io::save_npy(&row, dir.path("row.npy")),
            "save_npy",
            "row.npy",
            None,
        ));
        messages.push(weights_error(
            io::save_npz(&named, dir.path("row.npz")),
            "save_npz",
            "row.npz",
            Some("row"),
        ));
        Ok(row)
    })
    .call(&xs)?;
    let messages = messages.into_inner();
    assert_eq!(messages.len(), 3);
    for m in &messages {
        assert!(
            m.contains("cannot save this tensor") && m.contains("vmap"),
            "{m}"
        );
    }

    // A path that cannot be written: its directory does not exist, or it is
    // a directory. An existing file is left as it was.
    let named = BTreeMap::from([("x".to_string(), x.clone())]);
    let m = weights_error(
        io::save_safetensors(&named, dir.path("no/such/dir/x.safetensors")),
        "save_safetensors",
        "x.safetensors",
        None,
    );
    assert!(m.contains("cannot write the file"), "{m}");
    std::fs::create_dir(dir.path("a_dir")).unwrap();
    weights_error(
        io::save_npz(&named, dir.path("a_dir")),
        "save_npz",
        "a_dir",
        None,
    );
    std::fs::write(dir.path("keep.safetensors"), b"old").unwrap();
    assert!(io::save_safetensors(&same, dir.path("keep.safetensors")).is_err());
    assert_eq!(std::fs::read(dir.path("keep.safetensors")).unwrap(), b"old");
    assert_eq!(
        dir.files(),
        ["a_dir", "keep.safetensors"],
        "only what the test made"
    );
    Ok(())
}

/// A safetensors file built by hand: `header` as the JSON, then `data`.
fn safetensors_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn malformed_safetensors_files_are_errors_that_say_so() -> Result<()> {
    let dir = TempDir::new("malformed-st");
    let good = std::fs::read(reference("torch_mlp.safetensors")).unwrap();
    let template = net_template();
    let load = |bytes: &[u8], name: &str| {
        let path = dir.path(name);
        std::fs::write(&path, bytes).unwrap();
        no_panic(name, || io::load_safetensors(&template, &path))
    };
    // Truncated anywhere: in the length, the header or the data.
    for cut in [0, 4, 8, 20, good.len() / 2, good.len() - 1] {
        let m = weights_error(
            load(&good[..cut], "cut.safetensors"),
            "load_safetensors",
            "cut.safetensors",
            None,
        );
        assert!(
            m.contains("not a valid safetensors file") && m.contains("truncated or corrupt"),
            "{cut}: {m}"
        );
    }
    // Bytes added at the end, a header that is not JSON, offsets that
    // overlap the data of another tensor.
    let mut long = good.clone();
    long.extend_from_slice(&[0; 4]);
    let cases = [
        (long, "long.safetensors"),
        (safetensors_file("{not json", &[]), "json.safetensors"),
        (
            safetensors_file(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
                &[0; 8],
            ),
            "overlap.safetensors",
        ),
        (
            safetensors_file(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
            "size.safetensors",
        ),
    ];
    for (bytes, name) in cases {
        let m = weights_error(load(&bytes, name), "load_safetensors", name, None);
        assert!(m.contains("not a valid safetensors file"), "{name}: {m}");
    }

    // A path that does not exist.
    let m = weights_error(
        io::read_safetensors(dir.path("missing.safetensors")),
        "read_safetensors",
        "missing.safetensors",
        None,
    );
    assert!(m.contains("cannot read the file"), "{m}");

    // A bool byte that is neither 0 nor 1, an unsupported element type
    // (PyTorch's uint64, and an 8-bit float).
    let bad_bool = safetensors_file(
        r#"{"flag":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}} "#,
        &[1, 2],
    );
    let m = weights_error(
        io::read_safetensors_bytes(&bad_bool),
        "read_safetensors_bytes",
        "bytes",
        Some("flag"),
    );
    assert!(m.contains("holds the byte 2, not 0 or 1"), "{m}");
    let m = weights_error(
        io::read_safetensors(reference("torch_u64.safetensors")),
        "read_safetensors",
        "torch_u64.safetensors",
        Some("big"),
    );
    assert!(m.contains("element type U64 is not supported"), "{m}");
    let f8 = safetensors_file(
        r#"{"q":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}"#,
        &[0],
    );
    let m = weights_error(
        io::read_safetensors_bytes(&f8),
        "read_safetensors_bytes",
        "bytes",
        Some("q"),
    );
    assert!(m.contains("element type F8_E4M3 is not supported"), "{m}");
    Ok(())
}

/// A .npy file with `header` (padded as numpy pads it) and `data`.
fn npy_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn malformed_npy_and_npz_files_are_errors_that_say_so() -> Result<()> {
    let dir = TempDir::new("malformed-np");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let good = io::to_npy_bytes(&Tensor::from_shape_vec(
        &[2, 2],
        vec![1.0f64, 2.0, 3.0, 4.0],
    )?)?;
    let npy_cases = [
        (
            b"PK\x03\x04 not npy".to_vec(),
            "magic.npy",
            "does not start with \\x93NUMPY",
        ),
        (good[..8].to_vec(), "short.npy", "does not start with"),
        (good[..40].to_vec(), "header.npy", "the file ends before"),
        (
            good[..good.len() - 3].to_vec(),
            "data.npy",
            "needs 32 bytes of data, the file has 29",
        ),
        (
            [&good[..], &[0]].concat(),
            "long.npy",
            "needs 32 bytes of data, the file has 33",
        ),
        (
            b"\x93NUMPY\x04\x00\x10\x00".to_vec(),
            "version.npy",
            "version 4.0 is not supported",
        ),
        (
            npy_file(
                "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }",
                &[0; 16],
            ),
            "complex.npy",
            "'<c16' is not supported",
        ),
        (
            npy_file(
                "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
                &[0; 8],
            ),
            "u64.npy",
            "'<u8' is not supported",
        ),
        (
            npy_file(
                "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
                &[0; 8],
            ),
            "object.npy",
            "'|O' is not supported",
        ),
        (
            npy_file("{'descr': '<f4', 'shape': (1,), }", &[0; 4]),
            "keys.npy",
            "'fortran_order' is missing",
        ),
        (
            npy_file(
                "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }",
                &[7],
            ),
            "bool.npy",
            "holds the byte 7",
        ),
        (
            npy_file(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
                &[],
            ),
            "huge.npy",
            "more elements than memory can hold",
        ),
    ];
    for (bytes, name, want) in npy_cases {
        let path = write(name, &bytes);
        let m = weights_error(
            no_panic(name, || io::load_npy(&path)),
            "load_npy",
            name,
            None,
        );
        assert!(m.contains(want), "{name}: {m}");
    }

    // npz: a compressed archive, one truncated, one whose bytes were altered
    // (the CRC check), an entry that is not a valid .npy, a path that does
    // not exist.
    let good = std::fs::read(reference("torch_mlp.npz")).unwrap();
    let template = net_template();
    let m = weights_error(
        io::load_npz(&template, reference("numpy_compressed.npz")),
        "load_npz",
        "numpy_compressed.npz",
        None,
    );
    assert!(
        m.contains("entry `x.npy` is compressed (method 8, deflate)") && m.contains("numpy.savez"),
        "{m}"
    );
    for cut in [0, 3, 100, good.len() / 2, good.len() - 1] {
        let path = write("cut.npz", &good[..cut]);
        let m = weights_error(
            no_panic("cut", || io::load_npz(&template, &path)),
            "load_npz",
            "cut.npz",
            None,
        );
        assert!(
            m.contains("not a valid .npz (zip) archive") && m.contains("truncated or corrupt"),
            "{cut}: {m}"
        );
    }
    let mut altered = good.clone();
    // The last byte of the first entry's data (its local header is at 0).
    let data_start = 30
        + u16::from_le_bytes([altered[26], altered[27]]) as usize
        + u16::from_le_bytes([altered[28], altered[29]]) as usize;
    let size = u32::from_le_bytes(altered[18..22].try_into().unwrap()) as usize;
    let first = std::str::from_utf8(
        &altered[30..30 + u16::from_le_bytes([altered[26], altered[27]]) as usize],
    )
    .unwrap()
    .to_string();
    let size = if size == u32::MAX as usize {
        // numpy writes ZIP64 local headers: the size is in the extra field.
        u64::from_le_bytes(altered[data_start - 16..data_start - 8].try_into().unwrap()) as usize
    } else {
        size
    };
    altered[data_start + size - 1] ^= 1;
    let path = write("altered.npz", &altered);
    let m = weights_error(io::read_npz(&path), "read_npz", "altered.npz", None);
    assert!(
        m.contains(&format!("entry `{first}` fails its CRC check")),
        "{m}"
    );

    // A zip archive whose entry is not a .npy: written by save_npz, then its
    // entry's bytes replaced (the CRC still matching the new bytes).
    let named = BTreeMap::from([("w".to_string(), Tensor::scalar(1.0f32))]);
    io::save_npz(&named, dir.path("w.npz"))?;
    let bytes = std::fs::read(dir.path("w.npz")).unwrap();
    let npy = io::to_npy_bytes(&Tensor::scalar(1.0f32))?;
    let at = bytes.windows(npy.len()).position(|w| w == npy).unwrap();
    let mut broken = bytes.clone();
    broken[at] = b'X';
    let old_crc = crc_of(&npy);
    let new_crc = crc_of(&broken[at..at + npy.len()]);
    for pos in find_all(&broken, &old_crc.to_le_bytes()) {
        broken[pos..pos + 4].copy_from_slice(&new_crc.to_le_bytes());
    }
    let path = write("notnpy.npz", &broken);
    let m = weights_error(io::read_npz(&path), "read_npz", "notnpy.npz", Some("w"));
    assert!(m.contains("not a .npy file"), "{m}");

    let m = weights_error(
        io::read_npz(dir.path("missing.npz")),
        "read_npz",
        "missing.npz",
        None,
    );
    assert!(m.contains("cannot read the file"), "{m}");
    Ok(())
}

/// CRC-32 (IEEE), bit by bit: independent of the crate's table.
fn crc_of(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn damaged_files_never_panic() {
    // Every byte of each reference file flipped in turn: an error or a value,
    // never a panic (a flip in the data is a valid file of other values).
    let template = net_template();
    type Loads<'a> = &'a dyn Fn(&[u8]) -> bool;
    let cases: [(&str, Loads); 3] = [
        ("torch_mlp.safetensors", &|b| {
            io::load_safetensors_bytes(&template, b, LoadOptions::new()).is_ok()
        }),
        ("torch_half.safetensors", &|b| {
            io::read_safetensors_bytes(b).is_ok()
        }),
        ("numpy_misc.npz", &|b| {
            let dir =
                std::env::temp_dir().join(format!("batchrules-flip-{}.npz", std::process::id()));
            std::fs::write(&dir, b).unwrap();
            let ok = io::read_npz(&dir).is_ok();
            let _ = std::fs::remove_file(&dir);
            ok
        }),
    ];
    for (name, load) in cases {
        let good = std::fs::read(reference(name)).unwrap();
        assert!(load(&good), "{name} loads");
        let mut refused = 0;
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            if !no_panic(&format!("{name} with byte {i} flipped"), || load(&bad)) {
                refused += 1;
            }
        }
        // The headers' bytes (and, in the npz, every byte, through the CRC)
        // are checked.
        assert!(
            refused > good.len() / 10,
            "{name}: {refused} of {} refused",
            good.len()
        );
    }
    // And every .npy prefix of a numpy-written entry.
    let npy = io::to_npy_bytes(&Tensor::from_shape_vec(&[2, 3], vec![1i64; 6]).unwrap()).unwrap();
    for cut in 0..npy.len() {
        assert!(no_panic("npy prefix", || io::read_npy_bytes(&npy[..cut])).is_err());
    }
}
