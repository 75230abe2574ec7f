//! The fallback policy set globally, and the once-per-op warning through `log`.
//! In the `process` binary because it changes process-wide state.

use std::sync::Mutex;

use batchrules::{ops, set_fallback_policy, vmap, Error, FallbackPolicy, Tensor};
use downstream_ops::ops as ds;

struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if record.level() == log::Level::Warn {
            self.0.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()));

fn warnings() -> Vec<String> {
    LOGGER.0.lock().unwrap().clone()
}

#[test]
fn global_policy_and_warn_once() {
    let _exclusive = super::exclusive();
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    let x = Tensor::from_shape_vec(&[4, 3], (0..12).map(f64::from).collect()).unwrap();
    let cumsum = |x: Tensor| ds::cumsum(&x, 0);

    set_fallback_policy(FallbackPolicy::Silent);
    let y = vmap(cumsum).call(&x).unwrap();
    assert_eq!(y.shape(), &[4, 3]);
    assert!(warnings().is_empty(), "{:?}", warnings());

    set_fallback_policy(FallbackPolicy::Warn);
    vmap(cumsum).call(&x).unwrap();
    vmap(cumsum).call(&x).unwrap();
    let w = warnings();
    assert_eq!(w.len(), 1, "warned more than once: {w:?}");
    assert!(
        w[0].contains("op `cumsum` has no batching rule"),
        "{}",
        w[0]
    );
    assert!(
        w[0].contains("#[batching_rule(op = \"cumsum\")]"),
        "{}",
        w[0]
    );

    set_fallback_policy(FallbackPolicy::Error);
    let err = vmap(cumsum).call(&x).unwrap_err();
    assert!(
        matches!(&err, Error::Fallback { op, .. } if op == "cumsum"),
        "{err:?}"
    );
    // Ops with rules are unaffected by the policy.
    assert!(vmap(|x: Tensor| ops::neg(&x)).call(&x).is_ok());
    // A per-call policy overrides the global one.
    assert!(vmap(cumsum)
        .fallback(FallbackPolicy::Silent)
        .call(&x)
        .is_ok());
    set_fallback_policy(FallbackPolicy::Warn);
}
