//! A per-thread cache of large element buffers, so that the outputs of
//! kernels reuse the memory of tensors just dropped instead of getting fresh
//! pages from the system.
//!
//! Why: every op materializes its output. With glibc's allocator, freeing
//! large buffers returns them to the operating system (`munmap`, or trimming
//! the top of the heap), and the next allocation of the same size faults the
//! pages in again, zeroed by the kernel: in the benchmarks W1 (an MLP under
//! vmap) took about twice as long without this cache, and W16 (a conv2d
//! whose im2col buffer and output are 71 MB) spent about 20 ms of its 45 in
//! page faults under the fixed 64 MiB cap this cache had before. Torch has a
//! caching allocator for the same reason.
//!
//! How: when the last handle of a dense tensor whose buffer it owns alone is
//! dropped, a buffer of at least [`MIN_BYTES`] goes to this thread's cache.
//! Kernels take their output buffers with [`take`], which returns an empty
//! `Vec` with room for the elements, reused from the cache when one of
//! `n..=2n` elements' capacity is there. The buffers are plain `Vec`s, emptied
//! before reuse, so no value of a dropped tensor is ever visible.
//!
//! How much it keeps: **the workload's high-water mark**. The crate counts
//! the bytes of the buffers kernels have taken and not given back (the bytes
//! *live* in tensors) and remembers their peak. Each thread keeps up to
//! [`HIGH_WATER_FLOOR`] (64 MiB) of freed buffers in any case; past that, a
//! freed buffer is kept only while the bytes live plus the bytes kept by all
//! threads stay within the peak. So a loop that needs 130 MB per step finds
//! every buffer of its next step in the cache, and the cache never makes
//! the process hold more tensor memory than it once held in use at one time
//! plus 64 MiB per thread. To make room, a thread frees the buffers it kept
//! longest ago. A user caps it with [`set_buffer_cache_limit`] (bytes per
//! thread; 0 turns it off) and frees a thread's buffers with
//! [`clear_buffer_cache`].

use std::cell::RefCell;
use std::num::Wrapping;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Buffers smaller than this are left to the allocator (which keeps small
/// blocks itself).
pub const MIN_BYTES: usize = 64 * 1024;

/// The default of [`buffer_cache_limit`]: no fixed cap per thread. The
/// cache then follows the workload's high-water mark: each thread keeps up
/// to [`HIGH_WATER_FLOOR`] of freed buffers, and past that only while the
/// bytes in use plus the bytes kept by all threads stay within the most
/// ever in use at once ([`buffer_high_water`]).
pub const DEFAULT_BUFFER_CACHE_LIMIT: usize = usize::MAX;

/// What each thread's cache may keep whatever the high-water mark: 64 MiB
/// (the fixed cap this cache had before it followed the high-water mark).
pub const HIGH_WATER_FLOOR: usize = 64 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_BUFFER_CACHE_LIMIT);
/// Bytes of buffers [`take`] handed out and [`give`] has not had back.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most `LIVE` has been.
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Bytes kept by the caches of all threads.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// Caps the bytes of dropped tensor buffers each thread keeps for reuse (0
/// turns the cache off), for every thread. Without a cap
/// ([`DEFAULT_BUFFER_CACHE_LIMIT`]) the cache keeps what the workload's
/// high-water mark allows. Lowering it frees
/// nothing a thread already keeps: buffers are only not added while over the
/// limit; [`clear_buffer_cache`] frees the calling thread's.
///
/// ```
/// batchrules::tuning::set_buffer_cache_limit(0);
/// let x = batchrules::ops::zeros(&[1 << 16], batchrules::DType::F32).unwrap();
/// drop(batchrules::ops::exp(&x).unwrap());
/// assert_eq!(batchrules::tuning::cached_bytes(), 0);
/// batchrules::tuning::set_buffer_cache_limit(batchrules::tuning::DEFAULT_BUFFER_CACHE_LIMIT);
/// ```
pub fn set_buffer_cache_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The most bytes of dropped tensor buffers each thread keeps for reuse
/// ([`DEFAULT_BUFFER_CACHE_LIMIT`], no fixed cap, unless
/// [`set_buffer_cache_limit`] changed it).
pub fn buffer_cache_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// The high-water mark the cache follows: the most bytes of buffers taken by
/// kernels that were in use at one time, since the process started.
pub fn buffer_high_water() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Frees the buffers this thread's cache holds.
pub fn clear_buffer_cache() {
    let _ = CACHE.try_with(|c| *c.borrow_mut() = Cache::default());
}

/// The bytes this thread's cache holds.
pub fn cached_bytes() -> usize {
    CACHE.try_with(|c| c.borrow().bytes).unwrap_or(0)
}

/// One thread's cached buffers, per element type, oldest first, each with the
/// stamp of when it was kept; their total size; the next stamp.
#[derive(Default)]
pub(crate) struct Cache {
    bytes: usize,
    stamp: u64,
    bools: Vec<(u64, Vec<bool>)>,
    i64s: Vec<(u64, Vec<i64>)>,
    f32s: Vec<(u64, Vec<f32>)>,
    f64s: Vec<(u64, Vec<f64>)>,
    wrapping: Vec<(u64, Vec<Wrapping<i64>>)>,
}

impl Cache {
    /// Frees the buffer kept longest ago, of any element type; false if
    /// there is none.
    fn evict_oldest(&mut self) -> bool {
        macro_rules! oldest {
            ($($field:ident),*) => {{
                let fronts = [$(self.$field.first().map(|e| e.0)),*];
                let Some(min) = fronts.iter().flatten().min().copied() else {
                    return false;
                };
                $(if self.$field.first().map(|e| e.0) == Some(min) {
                    let (_, v) = self.$field.remove(0);
                    let bytes = bytes_of_val(&v);
                    self.bytes -= bytes;
                    KEPT.fetch_sub(bytes.min(KEPT.load(Ordering::Relaxed)), Ordering::Relaxed);
                    return true;
                })*
                false
            }};
        }
        oldest!(bools, i64s, f32s, f64s, wrapping)
    }
}

impl Drop for Cache {
    /// A thread's buffers freed (at [`clear_buffer_cache`] or when the
    /// thread ends) are no longer kept.
    fn drop(&mut self) {
        KEPT.fetch_sub(
            self.bytes.min(KEPT.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
    }
}

/// `bytes` more of buffers in use (taken by a kernel), and the peak.
fn in_use(bytes: usize) {
    if bytes >= MIN_BYTES {
        let live = LIVE
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

/// `bytes` fewer of buffers in use (a tensor's buffer given back); never
/// below 0 (buffers made outside [`take`], a user's array say, were never
/// counted).
fn released(bytes: usize) {
    let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |live| {
        Some(live.saturating_sub(bytes))
    });
}

fn bytes_of_val<T>(v: &Vec<T>) -> usize {
    bytes_of::<T>(v.capacity())
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    /// Set while a [`KeepAll`] guard lives on this thread.
    static KEEP_ALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While it lives, this thread's cache also keeps and hands out buffers
/// smaller than [`MIN_BYTES`] (within the same limits): a program that runs
/// the same kernels on the same shapes again, as a [`jit`](mod@crate::jit) replay
/// does, then finds every output buffer of its kernels in the cache instead
/// of asking the allocator for each small one.
/// The small buffers it keeps stay in the cache afterwards, for the next
/// run (only a `KeepAll` scope takes them), until the cache's limits evict
/// them or [`clear_buffer_cache`] frees them.
pub(crate) struct KeepAll {
    was: bool,
}

impl KeepAll {
    pub(crate) fn new() -> KeepAll {
        KeepAll {
            was: KEEP_ALL.with(|k| k.replace(true)),
        }
    }
}

impl Drop for KeepAll {
    fn drop(&mut self) {
        KEEP_ALL.with(|k| k.set(self.was));
    }
}

/// Whether buffers of `bytes` go through this thread's cache.
fn cacheable(bytes: usize) -> bool {
    bytes >= MIN_BYTES || KEEP_ALL.with(std::cell::Cell::get)
}

/// An element type whose buffers the cache keeps.
pub(crate) trait Cached: Copy + Send + Sync + 'static {
    fn list(cache: &mut Cache) -> &mut Vec<(u64, Vec<Self>)>;
}

macro_rules! cached {
    ($($t:ty => $field:ident),*) => {
        $(impl Cached for $t {
            fn list(cache: &mut Cache) -> &mut Vec<(u64, Vec<Self>)> {
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
/// elements' capacity if this thread has one (the smallest such, and of
/// equal ones the one kept last), else a new one.
pub(crate) fn take<T: Cached>(n: usize) -> Vec<T> {
    let v = cached(n).unwrap_or_else(|| Vec::with_capacity(n));
    in_use(bytes_of_val(&v));
    v
}

/// A cached buffer for `n` elements, emptied, if this thread has one.
fn cached<T: Cached>(n: usize) -> Option<Vec<T>> {
    if n == 0 || !cacheable(bytes_of::<T>(n)) {
        return None;
    }
    let mut v = CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            let list = T::list(&mut c);
            let best = list
                .iter()
                .enumerate()
                .filter(|(_, (_, v))| v.capacity() >= n && v.capacity() / 2 <= n)
                // Of equal sizes, the one kept last: its lines are the most
                // likely to be still in the caches.
                .min_by_key(|(_, (stamp, v))| (v.capacity(), std::cmp::Reverse(*stamp)))
                .map(|(i, _)| i)?;
            let (_, v) = list.remove(best);
            let bytes = bytes_of::<T>(v.capacity());
            c.bytes -= bytes;
            KEPT.fetch_sub(bytes.min(KEPT.load(Ordering::Relaxed)), Ordering::Relaxed);
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
    let v = match cached(n) {
        Some(v) => refill(v, n, value),
        None => vec![value; n],
    };
    in_use(bytes_of_val(&v));
    v
}

/// The emptied cached buffer `v` (with room for `n`) holding `n` copies of
/// `value`: on the pool when `n` is large (a reused buffer is not zeroed by
/// the system, and the zeros of a matrix product's output were written by
/// the calling thread alone while the pool waited).
fn refill<T: Cached>(mut v: Vec<T>, n: usize, value: T) -> Vec<T> {
    #[cfg(feature = "rayon")]
    if crate::core::broadcast::parallel(n) {
        let piece = piece_rows(n, 1, crate::core::broadcast::PIECE_MIN);
        // (Each piece is written in full, so this cannot fail.)
        return build_into(v, n, piece, &|_, p| {
            p.extend(std::iter::repeat_n(value, p.len()))
        })
        .unwrap_or_else(|_| vec![value; n]);
    }
    v.resize(n, value);
    v
}

/// One piece of the buffer [`par_build`] writes: room for a fixed number of
/// values, written in order by [`extend`](Piece::extend), which counts them.
#[cfg(feature = "rayon")]
pub(crate) struct Piece<'a, T> {
    slots: &'a mut [std::mem::MaybeUninit<T>],
    written: usize,
}

#[cfg(feature = "rayon")]
impl<T> Piece<'_, T> {
    /// How many values the piece holds in all.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Writes `values` after those written so far (values past the piece's
    /// room are not taken).
    #[inline(always)]
    pub(crate) fn extend(&mut self, values: impl IntoIterator<Item = T>) {
        // A `for` loop, not `map(..).count()`: an iterator's `fold` may be
        // kept out of line, compiled without the vector features of the
        // caller's `simd::vectorized`.
        let free = &mut self.slots[self.written..];
        let mut written = 0;
        for (slot, v) in free.iter_mut().zip(values) {
            slot.write(v);
            written += 1;
        }
        self.written += written;
    }

    /// Takes back every value written so far: [`par_build`] then reports the
    /// piece as unwritten (an error) instead of returning its values.
    pub(crate) fn unwrite(&mut self) {
        self.written = 0;
    }

    /// The values written so far, to be changed in place.
    pub(crate) fn written_mut(&mut self) -> &mut [T] {
        let written = &mut self.slots[..self.written];
        // SAFETY: `extend` initialized the first `written` slots, and
        // `MaybeUninit<T>` has the layout of `T`.
        unsafe { std::slice::from_raw_parts_mut(written.as_mut_ptr().cast::<T>(), written.len()) }
    }
}

/// [`Piece::extend`], for code written over any `Extend`.
#[cfg(feature = "rayon")]
impl<T> Extend<T> for Piece<'_, T> {
    #[inline(always)]
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        Piece::extend(self, values);
    }
}

/// `len` values in a buffer from this thread's cache, written on rayon's
/// pool: the buffer is cut into pieces of `piece` values (the last one
/// shorter), and `fill(start, piece)` writes the values from `start` on into
/// each. Nothing is written twice and nothing is zeroed first (a serial fill
/// of the output had taken 29% of W8's time on two threads). An error if a
/// piece was left short, which the callers never do: no unwritten memory is
/// ever exposed.
#[cfg(feature = "rayon")]
pub(crate) fn par_build<T: Cached + Send>(
    len: usize,
    piece: usize,
    fill: impl Fn(usize, &mut Piece<'_, T>) + Sync + Send,
) -> crate::Result<Vec<T>> {
    build_into(take(len), len, piece, &fill)
}

/// [`par_build`] into `values` (emptied; its capacity is kept and grown to
/// `len` if short).
///
/// `fill` is a trait object, so rayon's machinery here (jobs, joins,
/// splitting) is compiled once per element type, not once per kernel: per
/// kernel it had been a quarter of the crate's generated code, and of its
/// build time. The one indirect call per piece costs nothing measurable.
#[cfg(feature = "rayon")]
fn build_into<T: Cached + Send>(
    mut values: Vec<T>,
    len: usize,
    piece: usize,
    fill: &(dyn Fn(usize, &mut Piece<'_, T>) + Sync),
) -> crate::Result<Vec<T>> {
    use rayon::prelude::*;
    crate::core::spin::region();
    let piece = piece.max(1);
    values.clear();
    values.reserve(len);
    let written: usize = values.spare_capacity_mut()[..len]
        .par_chunks_mut(piece)
        .enumerate()
        .map(|(i, slots)| {
            let mut p = Piece { slots, written: 0 };
            fill(i * piece, &mut p);
            p.written
        })
        .sum();
    if written != len {
        return Err(crate::Error::invalid(format!(
            "internal: a parallel kernel wrote {written} of {len} values"
        )));
    }
    // SAFETY: the first `len` elements of the spare capacity were all
    // written: the pieces partition them, each piece's count is the number of
    // its leading slots written (at most its length), and the counts add up
    // to `len`, so every piece was written in full.
    unsafe { values.set_len(len) };
    Ok(values)
}

/// `task(start, piece)` for each piece of `values` (pieces of `piece` values,
/// the last one shorter; `start` is the piece's offset), on rayon's pool.
/// The in-place counterpart of [`par_build`], with the task a trait object
/// for the same reason as there.
#[cfg(feature = "rayon")]
pub(crate) fn par_pieces<T: Send>(
    values: &mut [T],
    piece: usize,
    task: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    use rayon::prelude::*;
    crate::core::spin::region();
    let piece = piece.max(1);
    values
        .par_chunks_mut(piece)
        .enumerate()
        .for_each(|(i, values)| task(i * piece, values));
}

/// The piece size for [`par_build`] of `len` values in whole rows of `row`:
/// about four pieces per thread of the pool (for balance on a busy machine),
/// at least `min` values each.
#[cfg(feature = "rayon")]
pub(crate) fn piece_rows(len: usize, row: usize, min: usize) -> usize {
    let row = row.max(1);
    let target = (len / (4 * crate::core::threads::num_threads())).max(min);
    target.div_ceil(row) * row
}

/// Keeps `v`'s memory for reuse if it is large enough and fits both the
/// high-water rule (the bytes in use plus the bytes kept by every thread
/// within the workload's peak, or [`HIGH_WATER_FLOOR`]) and this thread's
/// [`buffer_cache_limit`], freeing the buffers this thread kept longest ago
/// to make room (sizes that do not come back do not fill the cache for
/// good); frees it otherwise.
pub(crate) fn give<T: Cached>(v: Vec<T>) {
    let bytes = bytes_of::<T>(v.capacity());
    if bytes >= MIN_BYTES {
        released(bytes);
    }
    let limit = buffer_cache_limit();
    if bytes == 0 || !cacheable(bytes) || bytes > limit {
        return;
    }
    // Within the floor, a thread keeps what it is given (as the fixed cap
    // of old did); past it, only what the high-water mark allows.
    let fits = |mine: usize| {
        let after = mine.saturating_add(bytes);
        after <= limit
            && (after <= HIGH_WATER_FLOOR
                || LIVE
                    .load(Ordering::Relaxed)
                    .saturating_add(KEPT.load(Ordering::Relaxed))
                    .saturating_add(bytes)
                    <= PEAK.load(Ordering::Relaxed))
    };
    let _ = CACHE.try_with(|c| {
        let mut c = c.borrow_mut();
        while !fits(c.bytes) && c.evict_oldest() {}
        if fits(c.bytes) {
            c.bytes += bytes;
            KEPT.fetch_add(bytes, Ordering::Relaxed);
            c.stamp += 1;
            let stamp = c.stamp;
            T::list(&mut c).push((stamp, v));
        }
    });
}

/// `a` copied into a new array in row-major order. A copy of a view that is
/// not in standard layout (a transpose, a broadcast, a slice): ndarray's
/// `to_owned`, `as_standard_layout` and `to_shape` copy such a view element
/// by element through its iterator, where this one is a tight loop along the
/// innermost axis (ndarray's `Zip`), several times faster.
///
/// Written once, into memory not filled first, and with the `rayon` feature
/// and enough elements on the pool (a copy changes no value, so the pieces
/// change no bit): a serial fill and copy of W14's per-sample gradients
/// took 15% of a DP-SGD step on two threads.
pub(crate) fn row_major<T: Cached, D: ndarray::Dimension>(
    a: &ndarray::ArrayView<'_, T, D>,
) -> ndarray::Array<T, D> {
    let len = a.len();
    // Into a buffer from the cache (a copy made for every call of a program,
    // such as `expand`'s or a reshape's of a transposed value, then reuses
    // the last one's memory).
    let mut values: Vec<T> = take(len);
    let slots = &mut values.spare_capacity_mut()[..len];
    // (The view has `a`'s shape over exactly `len` slots: it cannot fail.)
    let Ok(mut out) = ndarray::ArrayViewMut::from_shape(a.raw_dim(), slots) else {
        return a.to_owned();
    };
    let zip = ndarray::Zip::from(&mut out).and(a);
    #[cfg(feature = "rayon")]
    let parallel = crate::core::broadcast::parallel(len);
    #[cfg(not(feature = "rayon"))]
    let parallel = false;
    if parallel {
        #[cfg(feature = "rayon")]
        {
            crate::core::spin::region();
            zip.par_for_each(|o, &x| {
                o.write(x);
            });
        }
    } else {
        zip.for_each(|o, &x| {
            o.write(x);
        });
    }
    // SAFETY: `take` left room for `len` elements; the view over the first
    // `len` slots has `a`'s shape in standard layout, and the zip visited
    // each of them once and wrote it.
    unsafe { values.set_len(len) };
    ndarray::Array::from_shape_vec(a.raw_dim(), values).unwrap_or_else(|_| a.to_owned())
}

/// `a` itself when it is in standard layout, else its [`row_major`] copy:
/// what kernels that read a contiguous slice take (in place of ndarray's
/// `as_standard_layout`, which copies element by element).
pub(crate) fn standard<'a, T: Cached, D: ndarray::Dimension>(
    a: ndarray::ArrayView<'a, T, D>,
) -> ndarray::CowArray<'a, T, D> {
    if a.is_standard_layout() {
        a.into()
    } else {
        row_major(&a).into()
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn a_given_buffer_is_taken_again_empty_and_only_for_a_fitting_size() {
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

    pub(crate) fn of_equal_buffers_the_one_kept_last_is_taken_first() {
        clear_buffer_cache();
        // Two buffers of MIN_BYTES: within the smallest limit another test
        // sets meanwhile (the limit is global; the cache is per thread).
        let n = MIN_BYTES / 4;
        let (a, b) = (vec![0.0f32; n], vec![0.0f32; n]);
        let (a_ptr, b_ptr) = (a.as_ptr(), b.as_ptr());
        give(a);
        give(b);
        let first = take::<f32>(n);
        let second = take::<f32>(n);
        assert_eq!(first.as_ptr(), b_ptr);
        assert_eq!(second.as_ptr(), a_ptr);
        clear_buffer_cache();
    }

    pub(crate) fn small_buffers_are_freed_and_the_oldest_make_room() {
        clear_buffer_cache();
        give(vec![0.0f64; 16]);
        assert_eq!(cached_bytes(), 0);
        // A limit of two buffers: a third evicts the first kept, of any type.
        let before = buffer_cache_limit();
        set_buffer_cache_limit(2 * MIN_BYTES);
        let first = vec![false; MIN_BYTES];
        let first_ptr = first.as_ptr() as usize;
        give(first);
        let second = vec![false; MIN_BYTES];
        let second_ptr = second.as_ptr() as usize;
        give(second);
        give(vec![0.0f32; MIN_BYTES / 4]);
        assert_eq!(cached_bytes(), 2 * MIN_BYTES);
        let kept = take::<bool>(MIN_BYTES);
        assert_eq!(kept.as_ptr() as usize, second_ptr, "the second is kept");
        assert_ne!(kept.as_ptr() as usize, first_ptr);
        // One larger than the limit is not kept at all.
        give(vec![0.0f64; MIN_BYTES]);
        assert_eq!(cached_bytes(), MIN_BYTES);
        set_buffer_cache_limit(before);
        clear_buffer_cache();
        assert_eq!(cached_bytes(), 0);
    }

    /// A reused buffer refilled (on the pool when large and the pool has
    /// more than one thread) holds `n` copies, and nothing else.
    pub(crate) fn filled_writes_every_value_of_a_reused_buffer() {
        clear_buffer_cache();
        for n in [100_000usize, 1 << 17, (1 << 18) + 3] {
            let before = buffer_cache_limit();
            set_buffer_cache_limit(64 << 20);
            let old = vec![7.0f32; n + 5];
            let at = old.as_ptr() as usize;
            give(old);
            let v = filled(n, 1.5f32);
            assert_eq!(v.as_ptr() as usize, at, "the buffer given is reused");
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 1.5), "n = {n}");
            set_buffer_cache_limit(before);
            clear_buffer_cache();
        }
    }

    crate::core::unit_test::test_list! {
        filled_writes_every_value_of_a_reused_buffer,
        a_given_buffer_is_taken_again_empty_and_only_for_a_fitting_size,
        of_equal_buffers_the_one_kept_last_is_taken_first,
        small_buffers_are_freed_and_the_oldest_make_room,
    }
}
