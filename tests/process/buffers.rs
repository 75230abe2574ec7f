//! The per-thread buffer cache: an op's output reuses the buffer of a tensor
//! just dropped (and only one nobody else holds), with the right values, and
//! the limit turns it off. One test, as the limit is process-wide.

use batchrules::rules::Data;
use batchrules::{ops, Tensor};

fn ptr(t: &Tensor) -> usize {
    match t.data().unwrap() {
        Data::F32(a) => a.as_ptr() as usize,
        other => panic!("expected f32, got {}", other.dtype()),
    }
}

#[test]
fn dropped_buffers_are_reused_by_later_outputs_and_held_ones_are_not() {
    let _exclusive = super::exclusive();
    let n = 1 << 15; // 128 KiB of f32: above the cache's minimum
    let values: Vec<f32> = (0..n).map(|i| (i as f32 * 0.01).sin()).collect();
    let x = Tensor::from_shape_vec(&[n], values.clone()).unwrap();
    batchrules::tuning::clear_buffer_cache();

    // Dropped, nobody else holding it: the next output of that size reuses it,
    // and holds the new values, not the old ones.
    let y = ops::sin(&x).unwrap();
    let reused = ptr(&y);
    drop(y);
    assert!(batchrules::tuning::cached_bytes() >= n * 4);
    let z = ops::cos(&x).unwrap();
    assert_eq!(ptr(&z), reused, "the dropped buffer is reused");
    let want: Vec<f32> = values.iter().map(|v| v.cos()).collect();
    assert_eq!(
        z.to_array::<f32>().unwrap().into_raw_vec_and_offset().0,
        want
    );

    // A clone held elsewhere: dropping one handle gives nothing back.
    drop(z);
    batchrules::tuning::clear_buffer_cache();
    let w = ops::neg(&x).unwrap();
    let kept = w.clone();
    drop(w);
    assert_eq!(batchrules::tuning::cached_bytes(), 0);
    let other = ops::exp(&x).unwrap();
    assert_ne!(ptr(&other), ptr(&kept));
    let negated: Vec<f32> = values.iter().map(|v| -v).collect();
    assert_eq!(
        kept.to_array::<f32>().unwrap().into_raw_vec_and_offset().0,
        negated
    );

    // A limit of 0 turns the cache off.
    let before = batchrules::tuning::buffer_cache_limit();
    batchrules::tuning::set_buffer_cache_limit(0);
    drop(other);
    assert_eq!(batchrules::tuning::cached_bytes(), 0);
    batchrules::tuning::set_buffer_cache_limit(before);
}

/// Past the 64 MiB floor the cache follows the workload's high-water mark:
/// a step that frees 96 MB keeps all of it for the next step (the fixed
/// 64 MiB cap of old freed a third), never more than the peak in use, and a
/// limit set by the user still caps it.
#[test]
fn the_cache_keeps_a_step_past_64_mib_up_to_the_high_water_mark() {
    let _exclusive = super::exclusive();
    let before = batchrules::tuning::buffer_cache_limit();
    batchrules::tuning::set_buffer_cache_limit(batchrules::tuning::DEFAULT_BUFFER_CACHE_LIMIT);
    batchrules::tuning::clear_buffer_cache();
    let n = 12 << 20; // 48 MiB of f32
    let x = Tensor::from_shape_vec(&[n], vec![0.5f32; n]).unwrap();
    let step = || {
        let a = ops::exp(&x).unwrap();
        let b = ops::sin(&x).unwrap();
        (ptr(&a), ptr(&b), a, b)
    };
    let (pa, pb, a, b) = step();
    drop((a, b));
    let kept = batchrules::tuning::cached_bytes();
    assert!(
        kept >= 2 * n * 4 && kept > batchrules::tuning::HIGH_WATER_FLOOR,
        "kept {kept} bytes"
    );
    assert!(kept <= batchrules::tuning::buffer_high_water());
    // The next step reuses both buffers.
    let (qa, qb, a, b) = step();
    let mut again = [qa, qb];
    again.sort_unstable();
    let mut first = [pa, pb];
    first.sort_unstable();
    assert_eq!(
        again, first,
        "the second step reuses the first step's buffers"
    );
    drop((a, b));
    // A user's cap of 64 MiB keeps one of the two.
    batchrules::tuning::clear_buffer_cache();
    batchrules::tuning::set_buffer_cache_limit(64 << 20);
    let (_, _, a, b) = step();
    drop((a, b));
    assert_eq!(batchrules::tuning::cached_bytes(), n * 4);
    batchrules::tuning::set_buffer_cache_limit(before);
    batchrules::tuning::clear_buffer_cache();
}
