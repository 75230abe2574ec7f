//! The one error type of the crate.

use std::fmt;

/// Result alias used throughout batchrules.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when calling an op, running `vmap`, or building
/// the registry. Every variant renders as a message that says what happened,
/// where, and what to do about it.
///
/// # The message and the chain
///
/// `Display` gives the whole message: for an error raised inside an op
/// ([`Error::Inside`]) or inside a vmapped function ([`Error::InVmap`]), the
/// context and the inner error, as in `cross_entropy: gather: index 7 is out
/// of range ... (inside vmap level 1)`. Because the message already holds the
/// inner error, [`std::error::Error::source`] returns `None` for every
/// variant, so that reporters which print each error of the `source()` chain
/// (anyhow's `{:#}`, `eyre`, ...) print each part once. The inner error is in
/// the `inner` field, and [`Error::root`] reaches the innermost one.
///
/// ```
/// use batchrules::{ops, Error, Reduction, Tensor};
/// use ndarray::array;
///
/// let logits = Tensor::from(array![[0.0f32, 1.0, 2.0]]);
/// let target = Tensor::from(array![7i64]);
/// let err = ops::cross_entropy(&logits, &target, Reduction::Mean).unwrap_err();
/// // The whole message, the inner error included, and no source to repeat it.
/// assert!(err.to_string().starts_with("cross_entropy: "));
/// assert!(err.to_string().contains('7'));
/// assert!(std::error::Error::source(&err).is_none());
/// // The inner error is still at hand.
/// assert!(matches!(err, Error::Inside { .. }));
/// assert_ne!(err.root(), &err);
/// # Ok::<(), batchrules::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An op was called with arguments its meta function rejects.
    #[error("{op}: {message}{}", level_suffix(*level, transform))]
    InvalidArgument {
        /// The op whose meta rejected the call.
        op: String,
        /// What is wrong, in terms of logical shapes.
        message: String,
        /// The transform level the check ran at (`None` outside every transform).
        level: Option<usize>,
        /// The transform of that level (`"vmap"`; empty outside every transform).
        transform: &'static str,
    },
    /// The program's registrations are inconsistent (see [`crate::registry`]).
    #[error("the batchrules registry is invalid:\n{}", list(problems))]
    Registry {
        /// Every problem found, one per line.
        problems: Vec<String>,
    },
    /// An op has no implementation the dispatcher can run.
    #[error("{op}: {message}")]
    NotImplemented {
        /// The op.
        op: String,
        /// What is missing and how to add it.
        message: String,
    },
    /// A misuse of a tensor handle (reading the data of a batched tensor, a dtype
    /// conversion that does not exist, ...).
    #[error("{0}")]
    Tensor(String),
    /// A misuse of `vmap` itself (bad in_dims, inconsistent batch sizes, ...).
    #[error("vmap: {0}")]
    Vmap(String),
    /// An op without a batching rule was called under vmap with the fallback
    /// policy set to [`FallbackPolicy::Error`](crate::FallbackPolicy::Error).
    #[error("{op}: no batching rule, and the fallback loop is disabled (policy Error) at vmap level {level}; write `#[batching_rule(op = \"{op}\")]` for it, or allow the fallback with FallbackPolicy::Warn")]
    Fallback {
        /// The op.
        op: String,
        /// The vmap level.
        level: usize,
    },
    /// A random op (`rand`, `dropout`, ...) was called under a vmap level whose
    /// randomness policy is `Error` (the default): vmap cannot guess whether
    /// the examples should draw alike or differently. `transform` is the
    /// transform the user called: `vmap`, or `jacfwd` or `hessian`, which run
    /// the function under a vmap of their own (over the Jacobian's columns)
    /// and have the same `.randomness` setting.
    #[error("{op}: a random op under {}, whose randomness policy is Error (the default); say how the {unit}s draw: `.randomness(Randomness::Different)` on the {transform} for an independent draw per {unit}, or `.randomness(Randomness::Same)` for one draw shared by every {unit}", randomness_under(.transform, *.level), unit = randomness_unit(.transform))]
    Randomness {
        /// The random op.
        op: String,
        /// The transform whose policy refused it (`vmap`, `jacfwd`, `hessian`).
        transform: &'static str,
        /// The level (of the vmap, or of the transform's own vmap) whose
        /// policy refused it.
        level: usize,
    },
    /// A registered batching rule or vjp returned something that disagrees
    /// with the op's meta or schema (a shape, a dtype, a count).
    #[error("bug in {rule} for {op}: {message}")]
    RuleBug {
        /// The op whose rule misbehaved.
        op: String,
        /// What misbehaved: `batching rule `f` at file:line`, `vjp `f` at ...`.
        rule: String,
        /// The disagreement.
        message: String,
    },
    /// An error raised by another op (or by a tensor method) while running
    /// `op`, the op the user called: a decomposition's constituent op, or an op
    /// a batching rule calls. The inner error follows as context, in the
    /// message (it is not returned by `source()`; see [`Error`]).
    #[error("{op}: {inner}")]
    Inside {
        /// The op the user called.
        op: String,
        /// The error raised inside it.
        inner: Box<Error>,
    },
    /// An error raised inside a vmapped function, with the vmap level added
    /// after its message (it is not returned by `source()`; see [`Error`]).
    #[error("{inner} (inside vmap level {level})")]
    InVmap {
        /// The vmap level the error passed through.
        level: usize,
        /// The original error.
        inner: Box<Error>,
    },
    /// Reading or writing a weights file (see [`crate::io`]) failed: a
    /// missing, extra or mismatched key, a corrupt file, a path that cannot
    /// be read or written.
    #[error("{function}: {file}{}: {message}", key_part(.key))]
    Weights {
        /// The function the user called (`load_safetensors`, ...).
        function: &'static str,
        /// The file, as the user named it (`bytes` for an in-memory buffer).
        file: String,
        /// The key (the tensor's name in the file) the error is about, if one.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

fn key_part(key: &Option<String>) -> String {
    key.as_ref()
        .map(|k| format!(", key `{k}`"))
        .unwrap_or_default()
}

fn randomness_under(transform: &str, level: usize) -> String {
    if transform == "vmap" {
        format!("vmap (level {level})")
    } else {
        format!("{transform}, which runs the function on all the Jacobian's columns as one batch")
    }
}

fn randomness_unit(transform: &str) -> &'static str {
    if transform == "vmap" {
        "example"
    } else {
        "column"
    }
}

fn level_suffix(level: Option<usize>, transform: &str) -> String {
    match level {
        Some(l) => format!(" (checked on logical shapes at {transform} level {l})"),
        None => String::new(),
    }
}

fn list(problems: &[String]) -> String {
    let mut out = String::new();
    for p in problems {
        out.push_str("  - ");
        out.push_str(p);
        out.push('\n');
    }
    out
}

impl Error {
    /// The op this error names first, if it names one (through
    /// [`Error::InVmap`], which only adds the level after the message).
    pub fn op(&self) -> Option<&str> {
        match self {
            Error::InvalidArgument { op, .. }
            | Error::NotImplemented { op, .. }
            | Error::Fallback { op, .. }
            | Error::Randomness { op, .. }
            | Error::RuleBug { op, .. }
            | Error::Inside { op, .. } => Some(op),
            Error::InVmap { inner, .. } => inner.op(),
            _ => None,
        }
    }

    /// An error that left the vmap a transform runs inside itself (jacfwd's
    /// and hessian's over the Jacobian's columns, jacrev's over its rows), at
    /// `level`, as the user who called `transform` should see it: without
    /// that vmap's level, which the user never wrote, and with a refused
    /// random op named as `transform`'s.
    pub(crate) fn reported_by(self, transform: &'static str, level: usize) -> Error {
        match self {
            Error::InVmap { level: l, inner } if l == level => inner.reported_by(transform, level),
            Error::Inside { op, inner } => Error::Inside {
                op,
                inner: Box::new(inner.reported_by(transform, level)),
            },
            Error::Randomness { op, level: l, .. } if l == level => Error::Randomness {
                op,
                transform,
                level: l,
            },
            Error::InvalidArgument {
                op,
                message,
                level: Some(l),
                transform: "vmap",
            } if l == level => Error::InvalidArgument {
                op,
                message,
                level: Some(l),
                transform,
            },
            other => other,
        }
    }

    /// The innermost error: for [`Error::Inside`] and [`Error::InVmap`], the
    /// error they wrap (recursively); otherwise `self`.
    pub fn root(&self) -> &Error {
        match self {
            Error::Inside { inner, .. } | Error::InVmap { inner, .. } => inner.root(),
            other => other,
        }
    }

    /// Shorthand for an [`Error::InvalidArgument`] outside vmap (the dispatcher
    /// fills in the op name and level when a meta function returns it).
    pub fn invalid(message: impl fmt::Display) -> Self {
        Error::InvalidArgument {
            op: String::new(),
            message: message.to_string(),
            level: None,
            transform: "",
        }
    }
}
