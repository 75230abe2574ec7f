//! A per-thread cache of large element buffers, so that the outputs of
//! kernels reuse the memory of tensors just dropped instead of getting fresh
//! pages from the system.
//!
//! Why: every op materializes its output. With glibc's allocator, freeing
//! large buffers returns them to the operating system (`munmap`, or trimming
//! the top of the heap), and the next allocation of the same size faults the
//! pages in again, zeroed by the kernel: in the benchmarks W1 (an MLP under
//! vmap) took about twice as long without this cache. Torch has a caching
//! allocator for the same reason.
//!
//! How: when the last handle of a dense tensor whose buffer it owns alone is
//! dropped, a buffer of at least [`MIN_BYTES`] goes to this thread's cache
//! (up to [`buffer_cache_limit`] bytes per thread; beyond that it is freed).
//! Kernels take their output buffers with [`take`], which returns an empty
//! `Vec` with room for the elements, reused from the cache when one of
//! `n..=2n` elements' capacity is there. The buffers are plain `Vec`s, emptied
//! before reuse, so no value of a dropped tensor is ever visible.

use std::cell::RefCell;
use std::num::Wrapping;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Buffers smaller than this are left to the allocator (which keeps small
/// blocks itself).
pub const MIN_BYTES: usize = 64 * 1024;

/// The default of [`buffer_cache_limit`]: 64 MiB per thread.
pub const DEFAULT_BUFFER_CACHE_LIMIT: usize = 64 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_BUFFER_CACHE_LIMIT);

/// Sets the most bytes of dropped tensor buffers each thread keeps for reuse
/// (0 turns the cache off), for every thread. Lowering it frees nothing a
/// thread already keeps: buffers are only not added while over the limit;
/// [`clear_buffer_cache`] frees the calling thread's.
///
/// ```
/// batchrules::set_buffer_cache_limit(0);
/// let x = batchrules::ops::zeros(&[1 << 16], batchrules::DType::F32).unwrap();
/// drop(batchrules::ops::exp(&x).unwrap());
/// assert_eq!(batchrules::cached_bytes(), 0);
/// batchrules::set_buffer_cache_limit(batchrules::DEFAULT_BUFFER_CACHE_LIMIT);
/// ```
pub fn set_buffer_cache_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The most bytes of dropped tensor buffers each thread keeps for reuse
/// ([`DEFAULT_BUFFER_CACHE_LIMIT`] unless [`set_buffer_cache_limit`] changed it).
pub fn buffer_cache_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Frees the buffers this thread's cache holds.
pub fn clear_buffer_cache() {
    let _ = CACHE.try_with(|c| *c.borrow_mut() = Cache::default());
}

/// The bytes this thread's cache holds.
pub fn cached_bytes() -> usize {
    CACHE.try_with(|c| c.borrow().bytes).unwrap_or(0)
}

/// One thread's cached buffers, per element type, and their total size.
#[derive(Default)]
pub(crate) struct Cache {
    bytes: usize,
    bools: Vec<Vec<bool>>,
    i64s: Vec<Vec<i64>>,
    f32s: Vec<Vec<f32>>,
    f64s: Vec<Vec<f64>>,
    wrapping: Vec<Vec<Wrapping<i64>>>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// An element type whose buffers the cache keeps.
pub(crate) trait Cached: Copy + 'static {
    fn list(cache: &mut Cache) -> &mut Vec<Vec<Self>>;
}

macro_rules! cached {
    ($($t:ty => $field:ident),*) => {
        $(impl Cached for $t {
            fn list(cache: &mut Cache) -> &mut Vec<Vec<Self>> {
                &mut cache.$field
            }
        })*
    };
}
cached!(bool => bools, i64 => i64s, f32 => f32s, f64 => f64s, Wrapping<i64> => wrapping);

fn bytes_of<T>(elements: usize) -> usize {
    elements.saturating_mul(std::mem::size_of::<T>())
}

/// An empty `Vec` with room for `n` elements: a cached buffer of `n..=2n`
/// elements' capacity if this thread has one (the smallest such), else a new
/// one.
pub(crate) fn take<T: Cached>(n: usize) -> Vec<T> {
    cached(n).unwrap_or_else(|| Vec::with_capacity(n))
}

/// A cached buffer for `n` elements, emptied, if this thread has one.
fn cached<T: Cached>(n: usize) -> Option<Vec<T>> {
    if bytes_of::<T>(n) < MIN_BYTES {
        return None;
    }
    let mut v = CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            let list = T::list(&mut c);
            let best = list
                .iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= n && v.capacity() / 2 <= n)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i)?;
            let v = list.swap_remove(best);
            c.bytes -= bytes_of::<T>(v.capacity());
            Some(v)
        })
        .ok()??;
    v.clear();
    Some(v)
}

/// `n` copies of `value`: in a cached buffer if this thread has one, else in
/// a new one from `vec!` (which, for zeros, gets memory the system has
/// already zeroed instead of writing the zeros).
pub(crate) fn filled<T: Cached>(n: usize, value: T) -> Vec<T> {
    match cached(n) {
        Some(mut v) => {
            v.resize(n, value);
            v
        }
        None => vec![value; n],
    }
}

/// Keeps `v`'s memory for reuse if it is large enough and fits under the
/// limit; frees it otherwise.
pub(crate) fn give<T: Cached>(v: Vec<T>) {
    let bytes = bytes_of::<T>(v.capacity());
    if bytes < MIN_BYTES {
        return;
    }
    let _ = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.bytes.saturating_add(bytes) <= buffer_cache_limit() {
            c.bytes += bytes;
            T::list(&mut c).push(v);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_is_taken_again_empty_and_only_for_a_fitting_size() {
        clear_buffer_cache();
        let n = MIN_BYTES / 4;
        let v: Vec<f32> = vec![1.0; n];
        let ptr = v.as_ptr();
        give(v);
        assert_eq!(cached_bytes(), n * 4);
        // Another element type, or a size the buffer is more than twice: new
        // (the cached buffer is alive, so a new one cannot be at its address).
        let other_type = take::<i64>(n / 2);
        let too_small = take::<f32>(n / 3);
        assert_ne!(other_type.as_ptr() as usize, ptr as usize);
        assert_ne!(too_small.as_ptr(), ptr);
        let again = take::<f32>(n);
        assert_eq!(again.as_ptr(), ptr);
        assert!(again.is_empty() && again.capacity() >= n);
        assert_eq!(cached_bytes(), 0);
    }

    #[test]
    fn small_buffers_and_buffers_over_the_limit_are_freed() {
        clear_buffer_cache();
        give(vec![0.0f64; 16]);
        assert_eq!(cached_bytes(), 0);
        let before = buffer_cache_limit();
        set_buffer_cache_limit(MIN_BYTES);
        give(vec![0u8 != 0; MIN_BYTES]);
        give(vec![false; MIN_BYTES]);
        assert_eq!(
            cached_bytes(),
            MIN_BYTES,
            "the second one is over the limit"
        );
        set_buffer_cache_limit(before);
        clear_buffer_cache();
        assert_eq!(cached_bytes(), 0);
    }
}
