//! The per-thread stack of transform levels.
//!
//! Each level is one live transform call (a `vmap`, a `grad` or a `jvp`,
//! each with its [`Interpreter`]). The dispatcher hands an op call to the interpreter
//! of the highest level among the call's tensors; the interpreter's own op calls
//! re-enter the dispatcher and reach the levels below.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Interpreter;
use crate::{Error, LevelId, Result, Tensor};

struct Level {
    id: LevelId,
    interpreter: Rc<dyn Interpreter>,
}

thread_local! {
    static LEVELS: RefCell<Vec<Level>> = const { RefCell::new(Vec::new()) };
    /// The depths (bit `d - 1` for depth `d`) whose levels do not claim
    /// random op calls now (see [`below_level`]).
    static RANDOM_EXCLUDED: Cell<u64> = const { Cell::new(0) };
}

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Keeps a level on the stack; pops it when dropped, also when the transformed
/// function errors or panics.
#[must_use = "the level is popped when the guard is dropped"]
pub struct LevelGuard {
    id: LevelId,
}

impl LevelGuard {
    /// The id of the level this guard holds.
    pub fn id(&self) -> LevelId {
        self.id
    }
}

impl Drop for LevelGuard {
    fn drop(&mut self) {
        LEVELS.with(|l| {
            let mut l = l.borrow_mut();
            // Levels are strictly nested (guards live on the stack of the
            // transform call), so the top is this guard's level.
            if l.last().is_some_and(|top| top.id == self.id) {
                l.pop();
            }
        });
    }
}

/// The most transform levels one thread may have at once.
///
/// Every level adds stack frames to each op call that passes through it, so
/// nesting without bound would overflow the thread's stack (and abort the
/// process). Measured on a 2 MiB stack (a spawned thread's, and Rust's test
/// threads'), a composite op (`softmax`) under nested vmaps overflows past
/// about 125 levels in a debug build and runs 400 in release; the limit keeps
/// a fourfold margin. Pushing one more level is an error.
pub const MAX_DEPTH: usize = 32;

/// Pushes a new level on this thread's stack. `make` receives the new level's
/// id and returns its interpreter.
///
/// Errors if the thread already has [`MAX_DEPTH`] levels; `what` names the
/// transform for the message.
pub fn push_level(
    what: &str,
    make: impl FnOnce(LevelId) -> Rc<dyn Interpreter>,
) -> Result<LevelGuard> {
    let depth = depth() + 1;
    if depth > MAX_DEPTH {
        return Err(Error::Tensor(format!(
            "{what}: cannot nest more than {MAX_DEPTH} transform levels on one thread \
             (batchrules::dispatch::MAX_DEPTH); each level costs stack on every op call"
        )));
    }
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    let id = LevelId::new(depth, token);
    let interpreter = make(id);
    LEVELS.with(|l| l.borrow_mut().push(Level { id, interpreter }));
    Ok(LevelGuard { id })
}

/// The number of transform levels active on this thread.
pub fn depth() -> usize {
    LEVELS.with(|l| l.borrow().len())
}

/// The interpreter of the live level `id`, or `None` if that level is gone (the
/// tensor escaped its transform, or is used on another thread).
pub fn interpreter(id: LevelId) -> Option<Rc<dyn Interpreter>> {
    LEVELS.with(|l| {
        l.borrow()
            .get(id.depth().wrapping_sub(1))
            .filter(|lv| lv.id == id)
            .map(|lv| Rc::clone(&lv.interpreter))
    })
}

/// The interpreter of the live level at `depth`, with that level's id.
pub fn level_at(depth: usize) -> Option<(LevelId, Rc<dyn Interpreter>)> {
    LEVELS.with(|l| {
        l.borrow()
            .get(depth.wrapping_sub(1))
            .map(|lv| (lv.id, Rc::clone(&lv.interpreter)))
    })
}

/// The error for a tensor whose level is no longer live.
pub fn escaped(t: &Tensor) -> Error {
    let (transform, kind) = t
        .level_value()
        .map_or(("transform", "transformed"), |v| (v.transform(), v.kind()));
    Error::Tensor(format!(
        "{transform}: a {kind} tensor was used outside the {transform} that created it \
         (or on another thread); return it from the transformed function instead of storing it"
    ))
}

// A depth mask has one bit per possible depth.
const _: () = assert!(MAX_DEPTH <= 64);

/// Bit `d - 1` of a depth mask, for depth `d` (at most [`MAX_DEPTH`]).
const fn depth_bit(depth: usize) -> u64 {
    1u64 << ((depth - 1) % 64)
}

/// The highest level above `above` (a call's highest tensor level), not
/// excluded by a [`below_level`] in progress, whose interpreter claims random
/// ops.
pub(super) fn claiming_level(above: Option<LevelId>) -> Option<LevelId> {
    let floor = above.map_or(0, LevelId::depth);
    let excluded = RANDOM_EXCLUDED.with(Cell::get);
    LEVELS.with(|l| {
        let l = l.borrow();
        l.get(floor..)?
            .iter()
            .rev()
            .find(|lv| excluded & depth_bit(lv.id.depth()) == 0 && lv.interpreter.claims_random())
            .map(|lv| lv.id)
    })
}

/// Whether a random op call made now can reach the level at `depth`: false
/// while a [`below_level`] hides it.
pub(crate) fn reaches_random(depth: usize) -> bool {
    depth >= 1 && RANDOM_EXCLUDED.with(Cell::get) & depth_bit(depth) == 0
}

/// Restores the excluded depths when dropped, also on a panic.
struct ExcludedGuard(u64);

impl Drop for ExcludedGuard {
    fn drop(&mut self) {
        RANDOM_EXCLUDED.with(|c| c.set(self.0));
    }
}

/// Runs `f` with `level` and the levels live above it out of reach of random
/// op calls: while `f` runs, a random op call goes to the claiming levels
/// below `level` (or to the dense path), or to a level `f` itself pushes (a
/// kernel may run a vmap of its own). An interpreter that
/// [claims random ops](super::Interpreter::claims_random) passes a call on
/// with it, as unwrapping its own tensors passes any other call on.
pub fn below_level<T>(level: LevelId, f: impl FnOnce() -> Result<T>) -> Result<T> {
    // The depths of `level` and the levels above it live on this thread (none
    // when `f` runs on another thread, whose stack is its own).
    let mask = (level.depth().max(1)..=depth()).fold(0u64, |m, d| m | depth_bit(d));
    let saved = RANDOM_EXCLUDED.with(|c| c.replace(c.get() | mask));
    let _restore = ExcludedGuard(saved);
    f()
}
