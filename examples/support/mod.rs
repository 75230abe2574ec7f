//! What the model examples share: deterministic parameters and inputs that
//! `scripts/reference/examples_common.py` reproduces bit for bit (so the
//! reference values recorded from torch.func are for the very same numbers,
//! and no weights file has to ship), and the comparison with those recorded
//! values.
//!
//! Each example includes it with `#[path = "support/mod.rs"] mod support;`
//! (cargo does not build a folder without `main.rs` as an example).
#![allow(dead_code)]

use batchrules::prelude::*;
use std::path::{Path, PathBuf};

/// The `n` values of the stream `seed` in `[-1, 1)`: an integer hash of
/// the element's index (all arithmetic mod 2^32), divided by 2^32. The
/// Python twin is `examples_common.unit`.
pub fn unit_values(seed: u32, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let mut x = (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed.wrapping_mul(40_503))
                .wrapping_add(0x9e37_79b9);
            x ^= x >> 16;
            x = x.wrapping_mul(0x045d_9f3b);
            x ^= x >> 16;
            x = x.wrapping_mul(0x045d_9f3b);
            x ^= x >> 16;
            f64::from(x) / 4_294_967_296.0 * 2.0 - 1.0
        })
        .collect()
}

/// A float tensor of `shape` with values `bound * unit_values(seed)`,
/// computed in f64 and rounded once to `dtype`.
pub fn uniform(shape: &[usize], seed: u32, bound: f64, dtype: DType) -> Result<Tensor> {
    let n = shape.iter().product();
    let v: Vec<f64> = unit_values(seed, n)
        .into_iter()
        .map(|u| u * bound)
        .collect();
    let t = Tensor::from_shape_vec(shape, v)?;
    ops::to_dtype(&t, dtype)
}

/// PyTorch's default initialization bound for a layer with `fan_in` inputs
/// (`nn.Linear`, `nn.Conv2d`): `1 / sqrt(fan_in)`.
pub fn torch_bound(fan_in: usize) -> f64 {
    1.0 / (fan_in as f64).sqrt()
}

/// Integer class labels in `0..classes`: `floor((u + 1) / 2 * classes)` of
/// the stream `seed`.
pub fn labels(n: usize, seed: u32, classes: usize) -> Result<Tensor> {
    let v: Vec<i64> = unit_values(seed, n)
        .into_iter()
        .map(|u| (((u + 1.0) / 2.0 * classes as f64) as i64).min(classes as i64 - 1))
        .collect();
    Tensor::from_shape_vec(&[n], v)
}

/// The path of a file of `examples/reference/`, wherever the example runs from.
pub fn reference_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join("reference")
        .join(name)
}

/// Values recorded by a script of `scripts/reference/`, and the checks made
/// against them. Each recorded tensor is a JSON object with its `shape`,
/// the f64 `sum` and `abs_sum` of all its elements, and `index`/`values`:
/// some of its elements (flat row-major indices) with their values.
pub struct Reference {
    file: String,
    json: serde_json::Value,
    failures: Vec<String>,
    checked: usize,
}

impl Reference {
    /// Reads `examples/reference/<name>`.
    pub fn load(name: &str) -> Self {
        let path = reference_path(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        Reference {
            file: name.to_string(),
            json,
            failures: Vec::new(),
            checked: 0,
        }
    }

    /// The raw JSON entry `key` (for scalars and settings the script wrote).
    pub fn get(&self, key: &str) -> &serde_json::Value {
        self.json
            .get(key)
            .unwrap_or_else(|| panic!("{} has no entry {key:?}", self.file))
    }

    /// Compares `t` with the recorded tensor `key`: its shape, each recorded
    /// element to `atol + rtol * |expected|`, and its sum and sum of
    /// absolute values to `rtol` of the sum of absolute values (plus
    /// `atol`). Prints one line; a mismatch is remembered for [`finish`].
    pub fn check(&mut self, key: &str, t: &Tensor, rtol: f64, atol: f64) -> Result<()> {
        self.checked += 1;
        let entry = self.get(key).clone();
        let shape: Vec<usize> = entry["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("dim") as usize)
            .collect();
        if t.shape() != shape.as_slice() {
            self.failures
                .push(format!("{key}: shape {:?}, recorded {shape:?}", t.shape()));
            println!("  {key}: shape {:?} != recorded {shape:?}  FAIL", t.shape());
            return Ok(());
        }
        let got: Vec<f64> = ops::to_dtype(t, DType::F64)?
            .to_array::<f64>()?
            .iter()
            .copied()
            .collect();
        let mut worst = 0.0f64;
        let mut bad = 0usize;
        let index = entry["index"].as_array().expect("index");
        let values = entry["values"].as_array().expect("values");
        for (i, v) in index.iter().zip(values) {
            let (i, v) = (
                i.as_u64().expect("index") as usize,
                v.as_f64().expect("value"),
            );
            let err = (got[i] - v).abs();
            worst = worst.max(err / (atol + rtol * v.abs()));
            if err > atol + rtol * v.abs() || got[i].is_nan() {
                bad += 1;
            }
        }
        let abs_sum_ref = entry["abs_sum"].as_f64().expect("abs_sum");
        let sum: f64 = got.iter().sum();
        let abs_sum: f64 = got.iter().map(|x| x.abs()).sum();
        let sum_tol = atol + rtol * abs_sum_ref;
        let sum_err = (sum - entry["sum"].as_f64().expect("sum")).abs();
        let abs_err = (abs_sum - abs_sum_ref).abs();
        let ok = bad == 0 && sum_err <= sum_tol && abs_err <= sum_tol;
        println!(
            "  {key:<28} {:?}: {} values, worst {:.1e} of the tolerance; sum off by {:.1e}  {}",
            shape,
            index.len(),
            worst,
            sum_err,
            if ok { "ok" } else { "FAIL" }
        );
        if !ok {
            self.failures.push(format!(
                "{key}: {bad} of {} recorded values off (worst {worst:.2} of the tolerance), sum off by {sum_err:.3e}, sum of |x| off by {abs_err:.3e} (tolerance {sum_tol:.3e})",
                index.len()
            ));
        }
        Ok(())
    }

    /// Records a failed check of the example's own (against the loop, a
    /// property), with what was found.
    pub fn fail(&mut self, what: String) {
        println!("  FAIL: {what}");
        self.failures.push(what);
    }

    /// Prints the outcome and exits with status 1 if any check failed.
    pub fn finish(self) {
        if self.failures.is_empty() {
            println!("all {} checks against {} passed", self.checked, self.file);
        } else {
            eprintln!("{} check(s) failed:", self.failures.len());
            for f in &self.failures {
                eprintln!("  {f}");
            }
            std::process::exit(1);
        }
    }
}

/// The largest absolute difference between two tensors of the same shape
/// (an error if the shapes differ).
pub fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    if a.shape() != b.shape() {
        return Err(Error::Tensor(format!(
            "max_abs_diff: shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    let a: Vec<f64> = ops::to_dtype(a, DType::F64)?
        .to_array::<f64>()?
        .iter()
        .copied()
        .collect();
    let b: Vec<f64> = ops::to_dtype(b, DType::F64)?
        .to_array::<f64>()?
        .iter()
        .copied()
        .collect();
    Ok(a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max))
}
