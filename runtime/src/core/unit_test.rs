//! What the runtime's unit tests are made of (feature `unit-tests`).
//!
//! The unit tests are plain functions in a `tests` module next to the code
//! they test, listed by [`test_list!`] and run by the workspace's test suite
//! (`tests/suite/unit.rs`) through [`crate::unit_tests::MODULES`]. They are not
//! `#[test]` functions: those would need a second build of the whole library
//! with `cfg(test)` (155 s of CPU on the machines the README measures, for
//! about 50 tests), where a feature compiles them into the one build the
//! integration tests already link.

use std::fmt::Debug;

/// One unit test: its name, its body, and the reason it is skipped unless
/// asked for (`None`: it runs with the others).
pub struct Test {
    /// The function's name.
    pub name: &'static str,
    /// Runs the test (a failure panics); `None` where a `#[cfg(...)]` on the
    /// test leaves it out of this build (the rayon feature's tests without it).
    pub run: Option<fn()>,
    /// Why the test runs only on request (as `#[ignore = "..."]` says).
    pub ignore: Option<&'static str>,
}

/// What a test function returns: nothing, or a `Result` whose `Err` fails it.
pub trait Outcome {
    /// Panics on a failure.
    fn check(self);
}

impl Outcome for () {
    fn check(self) {}
}

impl<E: Debug> Outcome for Result<(), E> {
    fn check(self) {
        if let Err(e) = self {
            panic!("the test returned Err({e:?})");
        }
    }
}

/// The list `ALL` of a `tests` module: each test function by name, with
/// `name = "reason"` for one that runs only on request, and after a
/// `#[cfg(...)]` for one built only in some configurations (as the function is).
macro_rules! test_list {
    ($($(#[cfg($cfg:meta)])? $name:ident $(= $ignore:literal)?),* $(,)?) => {
        /// The tests of this module, for `crate::unit_tests::MODULES`.
        pub(crate) const ALL: &[$crate::core::unit_test::Test] = &[$(
            $crate::core::unit_test::Test {
                name: stringify!($name),
                run: {
                    #[cfg(all($($cfg)?))]
                    const RUN: Option<fn()> =
                        Some(|| $crate::core::unit_test::Outcome::check($name()));
                    #[cfg(not(all($($cfg)?)))]
                    const RUN: Option<fn()> = None;
                    RUN
                },
                ignore: $crate::core::unit_test::test_list!(@ignore $($ignore)?),
            }
        ),*];
    };
    (@ignore) => { None };
    (@ignore $reason:literal) => { Some($reason) };
}
pub(crate) use test_list;
