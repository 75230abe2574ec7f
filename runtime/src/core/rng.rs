//! The counter-based random number generator behind the random ops.
//!
//! A stream is named by a 64-bit key (a random op's `int seed` is the key of
//! its stream). Element `k` of a draw from key `K` is a pure function of
//! `(K, k)`: a hash of the pair built from the splitmix64 finalizer, written
//! here. There is no state to advance, so a draw never depends on how a batch
//! is chunked, on the order examples run in, or on the thread count.
//!
//! Under `vmap` with `Randomness::Different`, example `i` of a level draws
//! from [`derive_seed`]`(K, i)`, where `i` counts examples in the whole batch (a
//! chunk passes its offset). Nested levels derive again, the innermost level
//! first, so example `(i, j)` of `vmap(vmap(f))` (outer `i`, inner `j`) draws
//! from `derive_seed(derive_seed(K, j), i)`.

/// The golden-ratio increment of splitmix64.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Salts that keep the hash of a draw and the hash of a key derivation apart.
const DRAW_SALT: u64 = 0xD1B5_4A32_D192_ED03;
const DERIVE_SALT: u64 = 0x8CB9_2BA7_2F3D_8DD7;

/// The splitmix64 finalizer: a bijection of `u64` with good avalanche.
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64 random bits: element `counter` of the stream of `key`.
pub(crate) const fn bits(key: i64, counter: u64) -> u64 {
    let stream = mix(key as u64 ^ DRAW_SALT);
    mix(stream ^ mix(counter.wrapping_add(1).wrapping_mul(GOLDEN)))
}

/// The seed example `index` of a vmap level with `Randomness::Different`
/// draws from, when the op called at that level is given `key` (its seed as
/// the levels below see it). `index` counts examples in the whole batch.
///
/// ```
/// use batchrules::{derive_seed, ops, vmap, DType, Randomness, Tensor};
///
/// let draws = vmap(|_x: Tensor| ops::rand(&[2], 5, DType::F64))
///     .randomness(Randomness::Different)
///     .call(&Tensor::from(ndarray::Array::<f64, _>::zeros((3, 1)).into_dyn()))?;
/// let row2 = ops::rand(&[2], derive_seed(5, 2), DType::F64)?;
/// assert_eq!(draws.select(0, 2)?.to_array::<f64>()?, row2.to_array::<f64>()?);
/// # Ok::<(), batchrules::Error>(())
/// ```
pub const fn derive_seed(key: i64, index: u64) -> i64 {
    let parent = mix(key as u64 ^ DERIVE_SALT);
    mix(parent.wrapping_add(mix(index ^ GOLDEN))) as i64
}

/// Element `k` of the stream of `key` as an f64, uniform in `[0, 1)` (53 bits).
pub(crate) fn uniform_f64(key: i64, k: u64) -> f64 {
    (bits(key, k) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Element `k` of the stream of `key` as an f32, uniform in `[0, 1)` (24 bits).
pub(crate) fn uniform_f32(key: i64, k: u64) -> f32 {
    (bits(key, k) >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// Element `k` of a standard normal draw from `key` (Box–Muller on the
/// stream's elements `2k` and `2k + 1`).
pub(crate) fn normal(key: i64, k: u64) -> f64 {
    let u1 = 1.0 - uniform_f64(key, k.wrapping_mul(2)); // in (0, 1]: ln is finite
    let u2 = uniform_f64(key, k.wrapping_mul(2).wrapping_add(1));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn uniforms_are_in_range_and_keys_differ() {
        let a: Vec<f64> = (0..1000).map(|k| uniform_f64(7, k)).collect();
        assert!(a.iter().all(|&u| (0.0..1.0).contains(&u)));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "mean {mean}");
        assert!((0..1000).all(|k| (0.0..1.0).contains(&uniform_f32(-3, k))));
        assert_ne!(uniform_f64(7, 0), uniform_f64(8, 0));
        assert_ne!(derive_seed(7, 0), derive_seed(7, 1));
        assert_ne!(derive_seed(7, 0), derive_seed(8, 0));
        assert_eq!(derive_seed(7, 3), derive_seed(7, 3));
    }

    pub(crate) fn normals_have_mean_zero_and_variance_one() {
        let n = 20_000;
        let v: Vec<f64> = (0..n).map(|k| normal(42, k)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.05 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
        assert!(v.iter().all(|x| x.is_finite()));
    }

    crate::core::unit_test::test_list! {
        uniforms_are_in_range_and_keys_differ,
        normals_have_mean_zero_and_variance_one,
    }
}
