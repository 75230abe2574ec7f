//! Compile-time checks of registrations against an op table.
//!
//! The attribute macros know nothing about which ops exist. For
//! `#[batching_rule(op = "softmax")]` they emit `const` items that call the
//! functions here with the table the op lives in; the compiler evaluates them,
//! and a misuse stops the build with the message these functions compose,
//! pointed at the user's tokens. A downstream table gets the same checks.
//!
//! Each check returns `None` when it passes (or when an earlier check already
//! reports the problem, so one mistake yields one error).
//!
//! The signature checks compare spellings (`&Tensor`, `Option<i64>`): that is
//! what their messages show. The real types are compared by the trait solver:
//! the attributes assert `UserType: ParamIs<Expected>`, with the expected type
//! named by the code [`param_code`] (or [`return_code`]) computes from the
//! schema, or switched off where a spelling check already reports the problem.
//!
//! In the `table` layer (`runtime/src/table/`). It may use the `core` layer; in
//! its own layer, `schema`. `tests/suite/layers.rs` enforces it.

use crate::schema::{ArgType, OpKind, OpSchema, Role};

const CAP: usize = 1536;

/// A message composed at compile time.
#[derive(Clone, Copy)]
pub struct Msg {
    buf: [u8; CAP],
    len: usize,
}

impl Msg {
    const fn new() -> Self {
        Msg {
            buf: [0; CAP],
            len: 0,
        }
    }

    const fn push(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        // What fits, cut back to a char boundary (a UTF-8 continuation byte is
        // `0b10xx_xxxx`), so the message stays valid text.
        let mut end = bytes.len();
        if self.len + end > CAP {
            end = CAP - self.len;
            while end > 0 && end < bytes.len() && bytes[end] & 0xC0 == 0x80 {
                end -= 1;
            }
        }
        let mut i = 0;
        while i < end {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn code(self, s: &str) -> Self {
        self.push("`").push(s).push("`")
    }

    const fn num(self, mut n: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut k = 0;
        loop {
            digits[k] = b'0' + (n % 10) as u8;
            k += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut out = self;
        while k > 0 {
            k -= 1;
            if out.len < CAP {
                out.buf[out.len] = digits[k];
                out.len += 1;
            }
        }
        out
    }

    /// The message text.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "batchrules: malformed compile-time message",
        }
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn min3(a: usize, b: usize, c: usize) -> usize {
    let m = if a < b { a } else { b };
    if m < c {
        m
    } else {
        c
    }
}

/// Levenshtein distance of two names (names longer than 63 bytes compare as far apart).
const fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() > 63 || b.len() > 63 {
        return usize::MAX;
    }
    let mut prev = [0usize; 64];
    let mut cur = [0usize; 64];
    let mut j = 0;
    while j <= b.len() {
        prev[j] = j;
        j += 1;
    }
    let mut i = 1;
    while i <= a.len() {
        cur[0] = i;
        let mut j = 1;
        while j <= b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            j += 1;
        }
        prev = cur;
        i += 1;
    }
    prev[b.len()]
}

/// The index of the op `name` in `ops`, or `usize::MAX` if there is none. The
/// attributes compute it once per registration (a `const` the checks share),
/// since looking a name up is the costly part of the checks' evaluation.
pub const fn op_index(ops: &[OpSchema], name: &str) -> usize {
    let mut i = 0;
    while i < ops.len() {
        if eq(ops[i].name, name) {
            return i;
        }
        i += 1;
    }
    usize::MAX
}

/// The op at `op`, if `op` is an index of `ops`.
const fn at(ops: &[OpSchema], op: usize) -> Option<&OpSchema> {
    if op < ops.len() {
        Some(&ops[op])
    } else {
        None
    }
}

/// Whether any argument of `op` is a tensor (or a tensor list, or optional one).
const fn has_tensor_args(op: &OpSchema) -> bool {
    let mut i = 0;
    while i < op.args.len() {
        if matches!(op.args[i].ty, ArgType::Tensor | ArgType::TensorList) {
            return true;
        }
        i += 1;
    }
    false
}

/// The closest declared name, if it is close enough to be a likely typo.
const fn suggest<'a>(ops: &'a [OpSchema], name: &str) -> Option<&'a str> {
    let mut best: Option<&str> = None;
    let mut best_d = usize::MAX;
    let mut i = 0;
    while i < ops.len() {
        let d = distance(ops[i].name, name);
        if d < best_d {
            best_d = d;
            best = Some(ops[i].name);
        }
        i += 1;
    }
    let limit = if name.len() / 3 > 1 {
        name.len() / 3
    } else {
        1
    };
    if best_d <= limit {
        best
    } else {
        None
    }
}

/// The op at `op` if it exists and `role` fits its kind: the condition every
/// signature check needs before it has anything to compare.
const fn usable(ops: &[OpSchema], op: usize, role: Role) -> Option<&OpSchema> {
    match at(ops, op) {
        Some(schema) if kind_fits(schema, role) => Some(schema),
        _ => None,
    }
}

/// Whether a function in `role` can run for `op` ([`kind_error`] says why not).
const fn kind_fits(op: &OpSchema, role: Role) -> bool {
    match (op.kind, role) {
        (OpKind::Composite, Role::BatchingRule | Role::Kernel) => false,
        (OpKind::Primitive, Role::BatchingRule) => has_tensor_args(op) && !op.random,
        (OpKind::Primitive, Role::Decomposition) => false,
        (OpKind::Composite, Role::Vjp) => false,
        (OpKind::Primitive, Role::Vjp) => op.differentiable && has_tensor_args(op),
        (OpKind::Composite, Role::Jvp) => false,
        (OpKind::Primitive, Role::Jvp) => op.differentiable && has_tensor_args(op) && !op.linear,
        _ => true,
    }
}

const fn kind_error(op: &OpSchema, role: Role) -> Option<Msg> {
    if kind_fits(op, role) {
        return None;
    }
    let m = Msg::new();
    match (op.kind, role) {
        (OpKind::Composite, Role::BatchingRule) => Some(
            m.code(op.name)
                .push(" is a composite op: it has no kernel and is decomposed into other ops before vmap sees it, so a batching rule registered for it would never run. Write `#[decompose(op = \"")
                .push(op.name)
                .push("\")]` to implement it in terms of other ops (vmap then batches each of them), or declare it `kind = \"primitive\"` in its op table if it needs a kernel and a batching rule of its own."),
        ),
        (OpKind::Composite, Role::Kernel) => Some(
            m.code(op.name)
                .push(" is a composite op: it has no kernel of its own and always runs its decomposition, so this kernel would never run. Write `#[decompose(op = \"")
                .push(op.name)
                .push("\")]` to implement it in terms of other ops, or declare it `kind = \"primitive\"` in its op table to give it a kernel."),
        ),
        (OpKind::Primitive, Role::BatchingRule) if !has_tensor_args(op) => Some(
            m.code(op.name)
                .push(" takes no tensor arguments, so no call to it has a batch dim: vmap never batches it (it runs its `#[kernel]`, and the plain tensor it returns broadcasts against batched ones), so a batching rule registered for it would never run. Remove this `#[batching_rule]`, or give `")
                .push(op.name)
                .push("` a `Tensor` argument in its op table if its calls are to be batched."),
        ),
        (OpKind::Primitive, Role::BatchingRule) if op.random => Some(
            m.code(op.name)
                .push(" is a random op (`random = true` in its op table): vmap batches it by its randomness policy, running it once per example with the seed that policy gives each example, so a batching rule registered for it would never run. Remove this `#[batching_rule]`; to vectorize `")
                .push(op.name)
                .push("`, declare it `kind = \"composite\"` and decompose it into `random_key` and the keyed draws (`random_uniform`, `random_normal`), which have batching rules."),
        ),
        (OpKind::Primitive, Role::Decomposition) => Some(
            m.code(op.name)
                .push(" is a primitive op: it runs its `#[kernel]`, so this decomposition would never run. Write `#[kernel(op = \"")
                .push(op.name)
                .push("\")]` (and a `#[batching_rule]` for vmap) instead, or declare it `kind = \"composite\"` in its op table if it is implemented by other ops."),
        ),
        (OpKind::Composite, Role::Vjp | Role::Jvp) => {
            let (name, _) = derivative_words(role);
            Some(
                m.code(op.name)
                    .push(" is a composite op: ")
                    .push(transform(role))
                    .push(" differentiates it through its decomposition (each op it calls brings its own ")
                    .push(name)
                    .push("), so a ")
                    .push(name)
                    .push(" registered for it would never run. Remove this `")
                    .push(role.attribute())
                    .push("`; if `")
                    .push(op.name)
                    .push("` really needs a derivative of its own, declare it `kind = \"primitive\"` in its op table and give it a `#[kernel]`, a `#[meta]` and a `#[batching_rule]` as well."),
            )
        }
        (OpKind::Primitive, Role::Vjp | Role::Jvp) if !op.differentiable => Some(
            m.code(op.name)
                .push(" is marked `differentiable = false` in its op table: ")
                .push(derivative_words(role).1)
                .push(" and this one would never run. Remove this `")
                .push(role.attribute())
                .push("`, or remove `differentiable = false` from `")
                .push(op.name)
                .push("`'s table entry if it really has a derivative."),
        ),
        (OpKind::Primitive, Role::Vjp | Role::Jvp) if !has_tensor_args(op) => Some(
            m.code(op.name)
                .push(" takes no tensor arguments, so there is ")
                .push(match role {
                    Role::Jvp => "no tangent to push forward",
                    _ => "nothing for a gradient to flow back to",
                })
                .push(" and this ")
                .push(derivative_words(role).0)
                .push(" would never run. Remove this `")
                .push(role.attribute())
                .push("`, and mark `")
                .push(op.name)
                .push("` `differentiable = false` in its op table."),
        ),
        (OpKind::Primitive, Role::Jvp) => Some(
            m.code(op.name)
                .push(" is marked `linear = true` in its op table, so its jvp is the op itself applied to the tangents (as JAX's `deflinear`), and this one would never run. Remove this `#[jvp]`, or remove `linear = true` from `")
                .push(op.name)
                .push("`'s table entry if it is not linear in its float tensor arguments."),
        ),
        _ => None,
    }
}

/// The name of a derivative rule (`vjp`, `jvp`), and why one registered for
/// an op marked `differentiable = false` never runs.
const fn derivative_words(role: Role) -> (&'static str, &'static str) {
    match role {
        Role::Jvp => (
            "jvp",
            "no derivative flows through it (its outputs have no tangent), so jvp never asks for its jvp",
        ),
        _ => (
            "vjp",
            "no gradient flows through it, so grad never asks for its vjp",
        ),
    }
}

/// The transform that calls a derivative rule of `role`.
const fn transform(role: Role) -> &'static str {
    match role {
        Role::Jvp => "jvp",
        _ => "grad",
    }
}

/// Checks that `name` is declared in the table (at `op`, its [`op_index`])
/// and that `role` fits its kind.
pub const fn check_op(
    ops: &[OpSchema],
    table: &str,
    name: &str,
    op: usize,
    role: Role,
) -> Option<Msg> {
    match at(ops, op) {
        Some(op) => kind_error(op, role),
        None => {
            let m = Msg::new()
                .push("unknown op ")
                .code(name)
                .push(": the op table ")
                .code(table)
                .push(" declares no op of that name");
            Some(match suggest(ops, name) {
                Some(s) => m.push("; did you mean ").code(s).push("?"),
                None => m.push("; declare it in the op table, or pass `table = path::to::module` to use another table."),
            })
        }
    }
}

const fn expected(m: Msg, op: &OpSchema, role: Role) -> Msg {
    m.push(" Expected `")
        .push(op.signature(role).display)
        .push("` (schema `")
        .push(op.schema)
        .push("`).")
}

/// Checks the number of parameters of a function registered as `role` for the
/// op at `op_at` (from [`op_index`]).
pub const fn check_arity(ops: &[OpSchema], op_at: usize, role: Role, found: usize) -> Option<Msg> {
    let Some(op) = usable(ops, op_at, role) else {
        return None;
    };
    let want = op.signature(role).params.len();
    if want == found {
        return None;
    }
    let m = Msg::new()
        .push("the ")
        .code(role.attribute())
        .push(" for ")
        .code(op.name);
    let m = if matches!(role, Role::BatchingRule) && found == op.kernel.params.len() {
        m.push(" is missing its batch-dim parameters: a batching rule takes each tensor argument followed by its batch dim (`Option<usize>` after `&Tensor`, `&[Option<usize>]` after `&[Tensor]`).")
    } else if matches!(role, Role::Vjp) && found == op.kernel.params.len() {
        m.push(" is missing the op's outputs and their cotangents: a vjp takes the op's arguments, then each output (`result`), then one cotangent per output (`grad`), all `&Tensor`.")
    } else if matches!(role, Role::Jvp) && found == op.kernel.params.len() {
        m.push(" is missing the op's outputs and the tangents: a jvp takes the op's arguments, then each output (`result`, a `&Tensor`), then one tangent per tensor argument (`<argument>_tangent`, an `Option<&Tensor>`, `None` when it is zero; a `&[Option<Tensor>]` for a `Tensor[]`).")
    } else if matches!(role, Role::Jvp)
        && found > op.kernel.params.len() + op.returns.len()
        && found < want
    {
        m.push(" is missing tangents: it takes ")
            .num(found)
            .push(" parameters, but after the op's arguments and outputs a jvp takes one tangent per tensor argument of the op (")
            .num(want - op.kernel.params.len() - op.returns.len())
            .push(" here), in argument order.")
    } else {
        m.push(" takes ")
            .num(want)
            .push(if want == 1 {
                " parameter"
            } else {
                " parameters"
            })
            .push(", found ")
            .num(found)
            .push(".")
    };
    Some(expected(m, op, role))
}

/// Checks the spelling of parameter `index` (0-based) as the macro normalized
/// it. Skipped when the arity is wrong (that error says it all), and when the
/// spelling does not `decide` (it names a type the check does not know, such
/// as an alias: the real types are compared instead).
pub const fn check_param(
    ops: &[OpSchema],
    op_at: usize,
    role: Role,
    count: usize,
    index: usize,
    found: &str,
    decides: bool,
) -> Option<Msg> {
    let Some(op) = usable(ops, op_at, role) else {
        return None;
    };
    let sig = op.signature(role);
    if !decides || sig.params.len() != count || index >= count || eq(sig.params[index], found) {
        return None;
    }
    let is_bdim =
        eq(sig.params[index], "Option<usize>") || eq(sig.params[index], "&[Option<usize>]");
    let m = Msg::new()
        .push("parameter ")
        .num(index + 1)
        .push(" of the ")
        .code(role.attribute())
        .push(" for ")
        .code(op.name)
        .push(" has type ")
        .code(found)
        .push(", but ");
    let past_args = matches!(role, Role::Vjp | Role::Jvp) && index >= op.args.len();
    let vjp_tensor = past_args && matches!(role, Role::Vjp);
    // What the parameter must be, around its schema name and its type.
    let (must_be, then) = if past_args && index - op.args.len() < op.returns.len() {
        ("it must be the op's output ", ", of type ")
    } else if vjp_tensor {
        (
            "it must be the cotangent ",
            " of the op's output (the gradient flowing back into it), of type ",
        )
    } else if past_args {
        (
            "it must be the tangent ",
            " of a tensor argument (`None` when the tangent is zero), of type ",
        )
    } else if is_bdim {
        ("it must be the batch dim of tensor argument ", ", of type ")
    } else {
        ("schema argument ", " is passed as ")
    };
    let m = m
        .push(must_be)
        .code(sig.param_names[index])
        .push(then)
        .code(sig.params[index])
        .push(".");
    Some(expected(m, op, role))
}

/// Checks the spelling of the return type as the macro normalized it (`""`
/// for none); skipped as [`check_param`] is.
pub const fn check_return(
    ops: &[OpSchema],
    op_at: usize,
    role: Role,
    found: &str,
    decides: bool,
) -> Option<Msg> {
    let Some(op) = usable(ops, op_at, role) else {
        return None;
    };
    let sig = op.signature(role);
    if !decides || eq(sig.ret, found) {
        return None;
    }
    let m = Msg::new()
        .push("the ")
        .code(role.attribute())
        .push(" for ")
        .code(op.name);
    let m = if found.is_empty() {
        m.push(" returns nothing, but it must return ")
    } else {
        m.push(" returns ")
            .code(found)
            .push(", but it must return ")
    };
    let m = m.code(sig.ret).push(".");
    let m = match role {
        Role::Vjp => m.push(" A vjp returns one gradient per tensor argument of the op, in order: `Option<Tensor>` (`None` when no gradient flows to it), `Vec<Option<Tensor>>` for a `Tensor[]`; a tuple of them when the op has several tensor arguments."),
        Role::Jvp => m.push(" A jvp returns the tangent of each output of the op, in order: `Option<Tensor>` (`None` when it is zero), `Vec<Option<Tensor>>` for a `Tensor[]` output; a tuple of them when the op has several outputs."),
        _ => m,
    };
    Some(expected(m, op, role))
}

/// The kinds of parameter types, for the real-type assertions: the schema's
/// argument types, and the two batch-dim parameters of a batching rule.
pub struct ParamKind;

impl ParamKind {
    /// `Tensor`
    pub const TENSOR: u8 = 0;
    /// `Tensor[]`
    pub const TENSOR_LIST: u8 = 1;
    /// `int`
    pub const INT: u8 = 2;
    /// `int[]`
    pub const INT_LIST: u8 = 3;
    /// `float`
    pub const FLOAT: u8 = 4;
    /// `bool`
    pub const BOOL: u8 = 5;
    /// `ScalarType`
    pub const SCALAR_TYPE: u8 = 6;
    /// `Reduction`
    pub const REDUCTION: u8 = 10;
    /// `str`
    pub const STR: u8 = 11;
    /// `Option<usize>`, after a `Tensor`.
    pub const BDIM: u8 = 7;
    /// `&[Option<usize>]`, after a `Tensor[]`.
    pub const BDIM_LIST: u8 = 8;
    /// `&[Option<Tensor>]`: a jvp's tangents of a `Tensor[]`.
    pub const TANGENT_LIST: u8 = 9;
    /// No type: the assertion is off (see [`param_code`]).
    pub const OFF: u8 = u8::MAX;
}

/// The expected type of parameter `index` (0-based) of a function registered
/// as `role` for the op at `op_at`, as the code the real-type
/// assertion compares the user's type with: `(kind, optional, meta)`. Its kind
/// is [`ParamKind::OFF`] (the assertion is off) when a check above already
/// reports a problem with the op or with this parameter, so one mistake gives
/// one error.
pub const fn param_code(
    ops: &[OpSchema],
    op_at: usize,
    role: Role,
    count: usize,
    index: usize,
    found: &str,
    decides: bool,
) -> (u8, bool, bool) {
    const OFF: (u8, bool, bool) = (ParamKind::OFF, false, false);
    let Some(op) = usable(ops, op_at, role) else {
        return OFF;
    };
    if op.signature(role).params.len() != count
        || index >= count
        || check_param(ops, op_at, role, count, index, found, decides).is_some()
    {
        return OFF;
    }
    let (is_bdim, arg) = param_source(ops, op_at, role, index);
    if matches!(role, Role::Vjp) && is_bdim {
        // An output or a cotangent: the list of them for a `Tensor[]` output.
        return if op.returns_list() {
            (ParamKind::TENSOR_LIST, false, false)
        } else {
            (ParamKind::TENSOR, false, false)
        };
    }
    if matches!(role, Role::Jvp) && is_bdim {
        return jvp_param_code(op, arg);
    }
    if arg >= op.args.len() {
        return OFF;
    }
    let arg = &op.args[arg];
    let list = matches!(arg.ty, ArgType::TensorList);
    if is_bdim {
        return match list {
            true => (ParamKind::BDIM_LIST, false, false),
            false => (ParamKind::BDIM, false, false),
        };
    }
    let kind = match arg.ty {
        ArgType::Tensor => ParamKind::TENSOR,
        ArgType::TensorList => ParamKind::TENSOR_LIST,
        ArgType::Int => ParamKind::INT,
        ArgType::IntList => ParamKind::INT_LIST,
        ArgType::Float => ParamKind::FLOAT,
        ArgType::Bool => ParamKind::BOOL,
        ArgType::ScalarType => ParamKind::SCALAR_TYPE,
        ArgType::Reduction => ParamKind::REDUCTION,
        ArgType::Str => ParamKind::STR,
    };
    let tensor = matches!(arg.ty, ArgType::Tensor | ArgType::TensorList);
    (kind, arg.optional, tensor && matches!(role, Role::Meta))
}

/// [`param_code`] for a jvp's parameter `k` past the op's arguments: output
/// `k`, or past the outputs, the tangent of the tensor-valued argument slot
/// `k - returns` (`Option<&Tensor>`; `&[Option<Tensor>]` for a `Tensor[]`).
const fn jvp_param_code(op: &OpSchema, k: usize) -> (u8, bool, bool) {
    if k < op.returns.len() {
        return match op.returns[k] {
            ArgType::TensorList => (ParamKind::TENSOR_LIST, false, false),
            _ => (ParamKind::TENSOR, false, false),
        };
    }
    let mut slot = k - op.returns.len();
    let mut i = 0;
    while i < op.args.len() {
        match op.args[i].ty {
            ArgType::Tensor if slot == 0 => return (ParamKind::TENSOR, true, false),
            ArgType::TensorList if slot == 0 => return (ParamKind::TANGENT_LIST, false, false),
            ArgType::Tensor | ArgType::TensorList => slot -= 1,
            _ => {}
        }
        i += 1;
    }
    (ParamKind::OFF, false, false)
}

/// [`param_code`] for the return type: `(count, list, signature)`, the number
/// of returned tensors, whether it is one `Tensor[]`, and the signature (0
/// kernel and decomposition, 1 meta, 2 batching rule, 3 jvp); `(0, false, 0)` when
/// the assertion is off. A jvp's return is signature 3.
pub const fn return_code(
    ops: &[OpSchema],
    op_at: usize,
    role: Role,
    found: &str,
    decides: bool,
) -> (u8, bool, u8) {
    const OFF: (u8, bool, u8) = (0, false, 0);
    let Some(op) = usable(ops, op_at, role) else {
        return OFF;
    };
    if check_return(ops, op_at, role, found, decides).is_some() || op.returns.is_empty() {
        return OFF;
    }
    let signature = match role {
        Role::Kernel | Role::Decomposition => 0,
        Role::Meta => 1,
        Role::BatchingRule => 2,
        Role::Jvp => 3,
        // The vjp's return is checked by `vjp_return_code`.
        Role::Vjp => return OFF,
    };
    let list = matches!(op.returns[0], ArgType::TensorList);
    (op.returns.len() as u8, list, signature)
}

/// The most tensor-valued arguments a vjp's return type is checked for by
/// type (beyond it, by spelling only).
pub const VJP_MAX_SLOTS: usize = 4;

/// [`return_code`] for a vjp: `(slots, lists)`, the number of tensor-valued
/// argument slots and a bit mask of those that are `Tensor[]` (bit `i` for
/// slot `i`); `(0, 0)` when the assertion is off.
pub const fn vjp_return_code(
    ops: &[OpSchema],
    op_at: usize,
    found: &str,
    decides: bool,
) -> (u8, u8) {
    let Some(op) = usable(ops, op_at, Role::Vjp) else {
        return (0, 0);
    };
    if check_return(ops, op_at, Role::Vjp, found, decides).is_some() {
        return (0, 0);
    }
    let mut slots = 0usize;
    let mut lists = 0u8;
    let mut i = 0;
    while i < op.args.len() {
        match op.args[i].ty {
            ArgType::Tensor => slots += 1,
            ArgType::TensorList => {
                if slots < 8 {
                    lists |= 1 << slots;
                }
                slots += 1;
            }
            _ => {}
        }
        i += 1;
    }
    if slots == 0 || slots > VJP_MAX_SLOTS {
        return (0, 0);
    }
    (slots as u8, lists)
}

/// Where the shim finds parameter `index` of a function registered as `role`
/// for the op at `op_at`: `(true, k)` for the batch dim of argument `k` (a batching rule's
/// parameter after a tensor), or for a vjp's tensor `k` of the op's outputs
/// followed by their cotangents, or for a jvp's tensor `k` of the op's outputs
/// followed by the tangents of its tensor arguments; `(false, k)` for
/// argument `k`. Read from the
/// schema, so a parameter's type may be spelled any way (an alias).
pub const fn param_source(
    ops: &[OpSchema],
    op_at: usize,
    role: Role,
    index: usize,
) -> (bool, usize) {
    let Some(op) = usable(ops, op_at, role) else {
        return (false, index);
    };
    if matches!(role, Role::Vjp | Role::Jvp) {
        return if index < op.args.len() {
            (false, index)
        } else {
            (true, index - op.args.len())
        };
    }
    if !matches!(role, Role::BatchingRule) {
        return (false, index);
    }
    // Walk the rule's parameters: each argument, then its batch dim if a tensor.
    let mut param = 0;
    let mut arg = 0;
    while arg < op.args.len() {
        if param == index {
            return (false, arg);
        }
        param += 1;
        if matches!(op.args[arg].ty, ArgType::Tensor | ArgType::TensorList) {
            if param == index {
                return (true, arg);
            }
            param += 1;
        }
        arg += 1;
    }
    (false, index)
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn distance_counts_edits() {
        assert_eq!(distance("softmax", "softmax"), 0);
        assert_eq!(distance("sofmax", "softmax"), 1);
        assert_eq!(distance("tiru", "triu"), 2);
        assert_eq!(distance("", "abc"), 3);
    }

    pub(crate) fn long_messages_are_cut_on_a_char_boundary() {
        // Three bytes short of full: `é` (2 bytes) fits, `€` (3) does not.
        let mut m = Msg::new();
        while m.len < CAP - 3 {
            m = m.push("a");
        }
        let m = m.push("é€");
        assert_eq!(m.len, CAP - 1);
        assert!(m.as_str().ends_with("aé"));
    }

    pub(crate) fn vjp_checks_read_the_table() {
        let ops = crate::ops::__SCHEMA;
        let at = |name: &str| op_index(ops, name);
        let kind = |name: &str| check_op(ops, "batchrules::ops", name, at(name), Role::Vjp);
        assert!(kind("exp").is_none());
        for (op, says) in [
            ("softmax", "composite op"),
            ("argmax", "differentiable = false"),
            ("zeros", "differentiable = false"),
        ] {
            let msg = kind(op).expect(op);
            assert!(msg.as_str().contains(says), "{}", msg.as_str());
        }
        // (slots, mask of Tensor[] slots), once the spelling is right.
        let ret = |name: &str| {
            let i = at(name);
            vjp_return_code(ops, i, ops[i].vjp.ret, true)
        };
        assert_eq!(ret("exp"), (1, 0));
        assert_eq!(ret("mul"), (2, 0));
        assert_eq!(ret("where"), (3, 0));
        assert_eq!(ret("cat"), (1, 1));
        assert_eq!(ret("softmax"), (0, 0), "off: the kind check reports it");
        assert_eq!(
            vjp_return_code(ops, at("mul"), "Result<Tensor>", true),
            (0, 0)
        );
        // Parameters past the arguments are the outputs, then the cotangents.
        let mul = at("mul");
        assert_eq!(param_source(ops, mul, Role::Vjp, 1), (false, 1));
        assert_eq!(param_source(ops, mul, Role::Vjp, 3), (true, 1));
        assert_eq!(
            param_code(ops, mul, Role::Vjp, 4, 3, "&Tensor", true),
            (ParamKind::TENSOR, false, false)
        );
        let msg = check_param(ops, mul, Role::Vjp, 4, 2, "Tensor", true).unwrap();
        assert!(
            msg.as_str().contains("the op's output `result`"),
            "{}",
            msg.as_str()
        );
    }

    pub(crate) fn jvp_checks_read_the_table() {
        let ops = crate::ops::__SCHEMA;
        let at = |name: &str| op_index(ops, name);
        let kind = |name: &str| check_op(ops, "batchrules::ops", name, at(name), Role::Jvp);
        assert!(kind("exp").is_none());
        assert!(kind("mul").is_none());
        for (op, says) in [
            ("softmax", "composite op: jvp differentiates it"),
            ("argmax", "differentiable = false"),
            ("zeros", "differentiable = false"),
            ("sum", "marked `linear = true`"),
            ("where", "remove `linear = true` from `where`'s table entry"),
        ] {
            let msg = kind(op).expect(op);
            assert!(msg.as_str().contains(says), "{op}: {}", msg.as_str());
            assert!(msg.as_str().contains("#[jvp]"), "{}", msg.as_str());
        }
        // A vjp of a linear op is still asked for.
        assert!(check_op(ops, "batchrules::ops", "sum", at("sum"), Role::Vjp).is_none());

        let mul = at("mul");
        // Past the arguments: the output, then one tangent per tensor argument.
        assert_eq!(param_source(ops, mul, Role::Jvp, 2), (true, 0));
        assert_eq!(param_source(ops, mul, Role::Jvp, 4), (true, 2));
        assert_eq!(
            param_code(ops, mul, Role::Jvp, 5, 2, "&Tensor", true),
            (ParamKind::TENSOR, false, false)
        );
        assert_eq!(
            param_code(ops, mul, Role::Jvp, 5, 3, "Option<&Tensor>", true),
            (ParamKind::TENSOR, true, false)
        );
        let msg = check_param(ops, mul, Role::Jvp, 5, 3, "&Tensor", true).unwrap();
        assert!(
            msg.as_str()
                .contains("it must be the tangent `self_tangent`"),
            "{}",
            msg.as_str()
        );
        let msg = check_arity(ops, mul, Role::Jvp, 4).unwrap();
        assert!(
            msg.as_str().contains("is missing tangents"),
            "{}",
            msg.as_str()
        );
        let msg = check_arity(ops, mul, Role::Jvp, 2).unwrap();
        assert!(
            msg.as_str()
                .contains("missing the op's outputs and the tangents"),
            "{}",
            msg.as_str()
        );
        // The return type: one tangent per output.
        assert_eq!(
            return_code(ops, mul, Role::Jvp, "Result<Option<Tensor>>", true),
            (1, false, 3)
        );
        let msg = check_return(ops, mul, Role::Jvp, "Result<Tensor>", true).unwrap();
        assert!(
            msg.as_str()
                .contains("A jvp returns the tangent of each output"),
            "{}",
            msg.as_str()
        );
        let cat = at("cat");
        assert_eq!(
            param_code(ops, cat, Role::Jvp, 4, 3, "&[Option<Tensor>]", true),
            (ParamKind::OFF, false, false),
            "cat is linear: its jvp is derived, so no signature is checked"
        );
    }

    pub(crate) fn numbers_render() {
        assert_eq!(Msg::new().num(0).as_str(), "0");
        assert_eq!(Msg::new().num(1207).as_str(), "1207");
    }

    crate::core::unit_test::test_list! {
        distance_counts_edits,
        long_messages_are_cut_on_a_char_boundary,
        vjp_checks_read_the_table,
        jvp_checks_read_the_table,
        numbers_render,
    }
}
