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
//! What a role's function looks like is not restated here: the checks read
//! the role's [`SignatureLayout`](crate::schema::SignatureLayout) (which
//! groups of parameters, in which order, and how a message explains each)
//! and its [refusals](Role::refusals) (the ops it would never run for), and
//! the signature the attribute macros wrote from that layout into the op's
//! schema.
//!
//! The signature checks compare spellings (`&Tensor`, `Option<i64>`): that is
//! what their messages show. The real types are compared by the trait solver:
//! the attributes assert `UserType: ParamIs<Expected>`, with the expected type
//! the one [`expected_param`] (or [`expected_return`]) spells, named by its
//! code in `macro_support`, or switched off where a spelling check already
//! reports the problem.
//!
//! In the `table` layer (`runtime/src/table/`). It may use the `core` layer; in
//! its own layer, `schema`. `tests/suite/layers.rs` enforces it.

use crate::schema::{ArgType, Each, OpKind, OpSchema, ParamGroup, Refusal, Refuse, Role};

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

    /// `template` with its placeholders filled in from `fill`: `{op}`,
    /// `{arg}`, `{param}`, `{type}`, `{found}` and `{n}` (the templates of
    /// [`Role::layout`] and [`Role::refusals`]). Any other text in braces
    /// is kept as it is.
    const fn fill(mut self, template: &str, fill: &Fill) -> Self {
        let mut rest = template;
        while let Some(open) = find(rest, b'{') {
            let (text, from_brace) = rest.split_at(open);
            self = self.push(text);
            let Some(close) = find(from_brace, b'}') else {
                return self.push(from_brace);
            };
            let (key, after) = from_brace.split_at(close + 1);
            self = match key.as_bytes() {
                b"{op}" => self.push(fill.op),
                b"{arg}" => self.push(fill.arg),
                b"{param}" => self.push(fill.param),
                b"{type}" => self.push(fill.ty),
                b"{found}" => self.num(fill.found),
                b"{n}" => self.num(fill.n),
                _ => self.push(key),
            };
            rest = after;
        }
        self.push(rest)
    }

    /// The message text.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "batchrules: malformed compile-time message",
        }
    }
}

/// What the placeholders of a message template stand for (see
/// [`Msg::fill`]).
#[derive(Clone, Copy)]
struct Fill<'a> {
    /// `{op}`: the op's name.
    op: &'a str,
    /// `{arg}`: the schema name of a parameter's argument.
    arg: &'a str,
    /// `{param}`: a parameter's name.
    param: &'a str,
    /// `{type}`: a parameter's type.
    ty: &'a str,
    /// `{found}`: how many parameters a function has.
    found: usize,
    /// `{n}`: how many parameters a group has.
    n: usize,
}

impl<'a> Fill<'a> {
    /// For a template that names only the op.
    const fn op(op: &'a str) -> Self {
        Fill {
            op,
            arg: "",
            param: "",
            ty: "",
            found: 0,
            n: 0,
        }
    }
}

/// The index of the first `byte` in `s`.
const fn find(s: &str, byte: u8) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == byte {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether `a` and `b` are the same text.
pub(crate) const fn eq(a: &str, b: &str) -> bool {
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

/// Whether `op` is one of the ops `when` names.
const fn refuses(op: &OpSchema, when: Refuse) -> bool {
    match when {
        Refuse::Composite => matches!(op.kind, OpKind::Composite),
        Refuse::Primitive => matches!(op.kind, OpKind::Primitive),
        Refuse::NoTensorArgs => !op.takes_tensors(),
        Refuse::Random => op.random,
        Refuse::NotDifferentiable => !op.differentiable,
        Refuse::Linear => op.linear,
    }
}

/// The first of `role`'s [refusals](Role::refusals) that applies to `op`: a
/// function in `role` would never run for it. `None` when none applies.
const fn refusal(op: &OpSchema, role: Role) -> Option<&'static Refusal> {
    let refusals = role.refusals();
    let mut i = 0;
    while i < refusals.len() {
        if refuses(op, refusals[i].when) {
            return Some(&refusals[i]);
        }
        i += 1;
    }
    None
}

/// Item `i` of those `each` names for `op` (every argument, the tensor
/// arguments, or the outputs): its index in `op.args` (in `op.returns` for an
/// output) and its type; `None` past the last.
const fn nth(op: &OpSchema, each: Each, i: usize) -> Option<(usize, ArgType)> {
    match each {
        Each::Arg if i < op.args.len() => Some((i, op.args[i].ty)),
        Each::Output if i < op.returns.len() => Some((i, op.returns[i])),
        Each::TensorArg => {
            let mut left = i;
            let mut k = 0;
            while k < op.args.len() {
                if is_in(Each::TensorArg, op.args[k].ty) {
                    if left == 0 {
                        return Some((k, op.args[k].ty));
                    }
                    left -= 1;
                }
                k += 1;
            }
            None
        }
        _ => None,
    }
}

/// The number of items `each` names for `op`.
const fn count(op: &OpSchema, each: Each) -> usize {
    let mut n = 0;
    while nth(op, each, n).is_some() {
        n += 1;
    }
    n
}

/// Whether an argument of type `ty` has an item in a group for `each` (a
/// group standing after its arguments' parameters).
const fn is_in(each: Each, ty: ArgType) -> bool {
    match each {
        Each::Arg => true,
        Each::TensorArg => matches!(ty, ArgType::Tensor | ArgType::TensorList),
        Each::Output => false,
    }
}

/// Where a parameter of a function stands in its role's layout.
#[derive(Clone, Copy)]
struct Place {
    /// Its group, an index of the layout's `params`.
    group: usize,
    /// The item it is for: an index of `op.args`, or of `op.returns` in a
    /// group of outputs.
    item: usize,
    /// The number of parameters before the groups after the op's arguments
    /// (the arguments', and those standing after them).
    args_end: usize,
}

/// Where parameter `index` of a function registered as `role` for `op`
/// stands, walking the role's
/// [`SignatureLayout`](crate::schema::SignatureLayout); `None` past the
/// last.
const fn place(op: &OpSchema, role: Role, index: usize) -> Option<Place> {
    let groups = role.layout().params;
    let mut param = 0;
    let mut args_end = 0;
    let mut g = 0;
    while g < groups.len() {
        let group = &groups[g];
        let mut i = 0;
        while let Some((item, ty)) = nth(op, group.each, i) {
            // A group standing after its arguments' parameters is walked
            // with them.
            if group.after_its_argument {
                break;
            }
            // The item's own parameter (`k` 0), then those standing right
            // after it, if it is an argument (`k` the group's index + 1).
            let mut k = 0;
            while k <= groups.len() {
                let at = match k {
                    0 => Some(g),
                    _ if !matches!(group.each, Each::Arg) => None,
                    _ if groups[k - 1].after_its_argument && is_in(groups[k - 1].each, ty) => {
                        Some(k - 1)
                    }
                    _ => None,
                };
                if let Some(at) = at {
                    if param == index {
                        return Some(Place {
                            group: at,
                            item,
                            args_end,
                        });
                    }
                    param += 1;
                }
                k += 1;
            }
            i += 1;
        }
        if matches!(group.each, Each::Arg) {
            args_end = param;
        }
        g += 1;
    }
    None
}

/// The group a function with `found` parameters stops inside (past its
/// first parameter, short of its last), if that group says what is missing
/// then ([`ParamGroup::cut_short`]); with the number of parameters it has.
const fn cut_short(
    op: &OpSchema,
    role: Role,
    found: usize,
) -> Option<(&'static ParamGroup, usize)> {
    let groups = role.layout().params;
    let mut start = 0;
    let mut g = 0;
    while g < groups.len() {
        let group = &groups[g];
        let n = count(op, group.each);
        let inside = found > start && found < start + n;
        if inside && !group.after_its_argument && !group.cut_short.is_empty() {
            return Some((group, n));
        }
        start += n;
        g += 1;
    }
    None
}

const fn expected(m: Msg, op: &OpSchema, role: Role) -> Msg {
    m.push(" Expected `")
        .push(op.signature(role).display)
        .push("` (schema `")
        .push(op.schema)
        .push("`).")
}

/// A registration as the checks see it: the op table it names, its op and
/// the role of its function. The attributes make one per registration, a
/// `const` every check of it reads.
#[derive(Clone, Copy, Debug)]
pub struct Registered<'a> {
    /// The op table's schemas.
    pub ops: &'a [OpSchema],
    /// The op's name, as the attribute gives it.
    pub name: &'a str,
    /// The op's index in `ops` (`op_index`), or `usize::MAX` if there is
    /// none: looked up once, since looking a name up is the costly part of
    /// the checks' evaluation.
    pub op: usize,
    /// The role of the registered function.
    pub role: Role,
}

/// A type as the user wrote it, in the spelling the attribute macro
/// normalized it to (`&Tensor`, `Result<Tensor>`; `""` for no return type).
#[derive(Clone, Copy, Debug)]
pub struct Spelled<'a> {
    /// The spelling.
    pub text: &'a str,
    /// Whether the spelling decides a mismatch: `false` when it names a type
    /// the checks do not know (such as an alias), whose real type is
    /// compared instead.
    pub decides: bool,
}

impl<'a> Registered<'a> {
    /// The function registered as `role` for the op `name` of `ops`.
    pub const fn new(ops: &'a [OpSchema], name: &'a str, role: Role) -> Self {
        Registered {
            ops,
            name,
            op: op_index(ops, name),
            role,
        }
    }

    /// The op if it exists and the role fits it (no refusal applies): the
    /// condition every signature check needs before it has anything to
    /// compare.
    const fn usable(self) -> Option<&'a OpSchema> {
        match at(self.ops, self.op) {
            Some(schema) if refusal(schema, self.role).is_none() => Some(schema),
            _ => None,
        }
    }

    /// Checks that the op is declared in the table (whose module is `table`)
    /// and that the role fits it.
    pub const fn check_op(self, table: &str) -> Option<Msg> {
        let Some(op) = at(self.ops, self.op) else {
            let m = Msg::new()
                .push("unknown op ")
                .code(self.name)
                .push(": the op table ")
                .code(table)
                .push(" declares no op of that name");
            return Some(match suggest(self.ops, self.name) {
                Some(s) => m.push("; did you mean ").code(s).push("?"),
                None => m.push("; declare it in the op table, or pass `table = path::to::module` to use another table."),
            });
        };
        match refusal(op, self.role) {
            Some(refusal) => Some(Msg::new().fill(refusal.why, &Fill::op(op.name))),
            None => None,
        }
    }

    /// Checks the number of parameters, `found`.
    pub const fn check_arity(self, found: usize) -> Option<Msg> {
        let Some(op) = self.usable() else {
            return None;
        };
        let role = self.role;
        let want = op.signature(role).params.len();
        if want == found {
            return None;
        }
        let m = Msg::new()
            .push("the ")
            .code(role.attribute())
            .push(" for ")
            .code(op.name)
            .push(" ");
        let missing = role.layout().missing;
        let m = if found == op.args.len() && !missing.is_empty() {
            m.fill(missing, &Fill::op(op.name))
        } else if let Some((group, n)) = cut_short(op, role, found) {
            let fill = Fill {
                found,
                n,
                ..Fill::op(op.name)
            };
            m.fill(group.cut_short, &fill)
        } else {
            m.push("takes ")
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

    /// Checks the spelling of parameter `index` (0-based) of `count`.
    /// Skipped when the arity is wrong (that error says it all), and when the
    /// spelling does not decide (the real types are compared instead).
    pub const fn check_param(self, count: usize, index: usize, found: Spelled) -> Option<Msg> {
        let Some(op) = self.usable() else {
            return None;
        };
        let role = self.role;
        let sig = op.signature(role);
        let want = sig.params.len();
        if !found.decides || want != count || index >= count || eq(sig.params[index], found.text) {
            return None;
        }
        let Some(place) = place(op, role, index) else {
            return None;
        };
        let group = &role.layout().params[place.group];
        let fill = Fill {
            arg: match group.each {
                Each::Arg | Each::TensorArg => op.args[place.item].name,
                Each::Output => "",
            },
            param: sig.param_names[index],
            ty: sig.params[index],
            ..Fill::op(op.name)
        };
        let m = Msg::new()
            .push("parameter ")
            .num(index + 1)
            .push(" of the ")
            .code(role.attribute())
            .push(" for ")
            .code(op.name)
            .push(" has type ")
            .code(found.text)
            .push(", but ")
            .fill(group.is, &fill);
        Some(expected(m, op, role))
    }

    /// Checks the spelling of the return type; skipped as
    /// [`check_param`](Self::check_param) is.
    pub const fn check_return(self, found: Spelled) -> Option<Msg> {
        let Some(op) = self.usable() else {
            return None;
        };
        let role = self.role;
        let sig = op.signature(role);
        if !found.decides || eq(sig.ret, found.text) {
            return None;
        }
        let m = Msg::new()
            .push("the ")
            .code(role.attribute())
            .push(" for ")
            .code(op.name);
        let m = if found.text.is_empty() {
            m.push(" returns nothing, but it must return ")
        } else {
            m.push(" returns ")
                .code(found.text)
                .push(", but it must return ")
        };
        let m = m.code(sig.ret).push(".");
        let help = role.layout().returns.help;
        let m = if help.is_empty() {
            m
        } else {
            m.push(" ").push(help)
        };
        Some(expected(m, op, role))
    }

    /// The type parameter `index` (0-based) of `count` must have, as the
    /// signature spells it (`&Tensor`, `Option<usize>`), for the assertion
    /// that compares the user's type with it (`macro_support::param_code`
    /// names the type). `None` when the assertion is off: a check above
    /// already reports a problem with the op or with this parameter, so one
    /// mistake gives one error.
    pub const fn expected_param(
        self,
        count: usize,
        index: usize,
        found: Spelled,
    ) -> Option<&'a str> {
        let Some(op) = self.usable() else {
            return None;
        };
        let sig = op.signature(self.role);
        let checked = self.check_param(count, index, found).is_none();
        if sig.params.len() != count || index >= count || !checked {
            return None;
        }
        Some(sig.params[index])
    }

    /// [`expected_param`](Self::expected_param) for the return type: its
    /// shape, or `None` when the assertion is off (as for a parameter, or
    /// when it returns no item or more than [`MAX_RETURN_ITEMS`]).
    pub const fn expected_return(self, found: Spelled) -> Option<ReturnShape> {
        let Some(op) = self.usable() else {
            return None;
        };
        if self.check_return(found).is_some() {
            return None;
        }
        let returns = self.role.layout().returns;
        let n = count(op, returns.each);
        if n == 0 || n > MAX_RETURN_ITEMS {
            return None;
        }
        let mut lists = 0u8;
        let mut i = 0;
        while let Some((_, ty)) = nth(op, returns.each, i) {
            if matches!(ty, ArgType::TensorList) {
                lists |= 1 << i;
            }
            i += 1;
        }
        Some(ReturnShape {
            count: n as u8,
            lists,
            item: returns.forms.one,
        })
    }

    /// Where the shim finds parameter `index`, as the role's
    /// [`SignatureLayout`](crate::schema::SignatureLayout) places it:
    /// `(false, k)` for argument `k`; `(true, k)` for any other parameter,
    /// `k` being its argument for one standing right after it (a batching
    /// rule's batch dim of argument `k`), else its position past the
    /// parameters of the op's arguments (a vjp's or jvp's outputs, then its
    /// cotangents or tangents). Read from the schema, so a parameter's type
    /// may be spelled any way (an alias).
    pub const fn param_source(self, index: usize) -> (bool, usize) {
        let Some(op) = self.usable() else {
            return (false, index);
        };
        let Some(place) = place(op, self.role, index) else {
            return (false, index);
        };
        let group = &self.role.layout().params[place.group];
        match group.each {
            Each::Arg => (false, place.item),
            _ if group.after_its_argument => (true, place.item),
            _ => (true, index - place.args_end),
        }
    }
}

/// The most items a return type is compared by type for (beyond it, by
/// spelling only).
pub const MAX_RETURN_ITEMS: usize = 4;

/// The shape of a return type, for the assertion that compares the user's
/// with it: `Result<item>` for one item, `Result<(item, item, ...)>` for
/// several, each item written one way for a `Tensor` and another for a
/// `Tensor[]` ([`Forms`](crate::schema::Forms)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReturnShape {
    /// The number of items, 1 to [`MAX_RETURN_ITEMS`].
    pub count: u8,
    /// Bit `i` set when item `i` is for a `Tensor[]`.
    pub lists: u8,
    /// How an item for a `Tensor` is written (`Tensor`, `Option<Tensor>`,
    /// ...): the role's [`ReturnLayout`](crate::schema::ReturnLayout) forms.
    pub item: &'static str,
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

    /// The function registered as `role` for the built-in op `name`.
    fn reg(name: &str, role: Role) -> Registered<'_> {
        Registered::new(crate::ops::__SCHEMA, name, role)
    }

    /// A spelling that decides.
    fn spelled(text: &str) -> Spelled<'_> {
        Spelled {
            text,
            decides: true,
        }
    }

    pub(crate) fn vjp_checks_read_the_table() {
        let kind = |name: &str| reg(name, Role::Vjp).check_op("batchrules::ops");
        assert!(kind("exp").is_none());
        for (op, says) in [
            ("softmax", "composite op"),
            ("argmax", "differentiable = false"),
            ("zeros", "differentiable = false"),
        ] {
            let msg = kind(op).expect(op);
            assert!(msg.as_str().contains(says), "{}", msg.as_str());
        }
        // (gradients, mask of Tensor[] ones), once the spelling is right.
        let ret = |name: &str| {
            let r = reg(name, Role::Vjp);
            let right = r.ops[r.op].vjp.ret;
            r.expected_return(spelled(right))
                .map(|shape| (shape.count, shape.lists, shape.item))
        };
        assert_eq!(ret("exp"), Some((1, 0, "Option<Tensor>")));
        assert_eq!(ret("mul"), Some((2, 0, "Option<Tensor>")));
        assert_eq!(ret("where"), Some((3, 0, "Option<Tensor>")));
        assert_eq!(ret("cat"), Some((1, 1, "Option<Tensor>")));
        assert_eq!(ret("softmax"), None, "off: the kind check reports it");
        let mul = reg("mul", Role::Vjp);
        assert_eq!(mul.expected_return(spelled("Result<Tensor>")), None);
        // Parameters past the arguments are the outputs, then the cotangents.
        assert_eq!(mul.param_source(1), (false, 1));
        assert_eq!(mul.param_source(3), (true, 1));
        assert_eq!(
            mul.expected_param(4, 3, spelled("&Tensor")),
            Some("&Tensor")
        );
        let msg = mul.check_param(4, 2, spelled("Tensor")).unwrap();
        assert!(
            msg.as_str().contains("the op's output `result`"),
            "{}",
            msg.as_str()
        );
    }

    pub(crate) fn jvp_checks_read_the_table() {
        let kind = |name: &str| reg(name, Role::Jvp).check_op("batchrules::ops");
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
        assert!(reg("sum", Role::Vjp).check_op("batchrules::ops").is_none());

        let mul = reg("mul", Role::Jvp);
        // Past the arguments: the output, then one tangent per tensor argument.
        assert_eq!(mul.param_source(2), (true, 0));
        assert_eq!(mul.param_source(4), (true, 2));
        assert_eq!(
            mul.expected_param(5, 2, spelled("&Tensor")),
            Some("&Tensor")
        );
        assert_eq!(
            mul.expected_param(5, 3, spelled("Option<&Tensor>")),
            Some("Option<&Tensor>")
        );
        let msg = mul.check_param(5, 3, spelled("&Tensor")).unwrap();
        assert!(
            msg.as_str()
                .contains("it must be the tangent `self_tangent`"),
            "{}",
            msg.as_str()
        );
        let msg = mul.check_arity(4).unwrap();
        assert!(
            msg.as_str().contains("is missing tangents"),
            "{}",
            msg.as_str()
        );
        let msg = mul.check_arity(2).unwrap();
        assert!(
            msg.as_str()
                .contains("missing the op's outputs and the tangents"),
            "{}",
            msg.as_str()
        );
        // The return type: one tangent per output.
        assert_eq!(
            mul.expected_return(spelled("Result<Option<Tensor>>")),
            Some(ReturnShape {
                count: 1,
                lists: 0,
                item: "Option<Tensor>"
            })
        );
        let msg = mul.check_return(spelled("Result<Tensor>")).unwrap();
        assert!(
            msg.as_str()
                .contains("A jvp returns the tangent of each output"),
            "{}",
            msg.as_str()
        );
        assert_eq!(
            reg("cat", Role::Jvp).expected_param(4, 3, spelled("&[Option<Tensor>]")),
            None,
            "cat is linear: its jvp is derived, so no signature is checked"
        );
    }

    pub(crate) fn batching_rules_place_each_bdim_after_its_tensor() {
        // `where(Tensor condition, Tensor self, Tensor other)`: each tensor,
        // then its batch dim.
        let where_ = reg("where", Role::BatchingRule);
        let sources: Vec<_> = (0..6).map(|i| where_.param_source(i)).collect();
        assert_eq!(
            sources,
            [
                (false, 0),
                (true, 0),
                (false, 1),
                (true, 1),
                (false, 2),
                (true, 2)
            ]
        );
        // `triu(Tensor self, int diagonal=0)`: no batch dim after the int.
        let triu = reg("triu", Role::BatchingRule);
        assert_eq!(triu.param_source(2), (false, 1));
        let msg = triu.check_param(3, 1, spelled("usize")).unwrap();
        assert!(
            msg.as_str().contains(
                "it must be the batch dim of tensor argument `self`, of type `Option<usize>`."
            ),
            "{}",
            msg.as_str()
        );
        let ret = triu.expected_return(spelled("Result<(Tensor, Option<usize>)>"));
        assert_eq!(ret.map(|shape| shape.item), Some("(Tensor, Option<usize>)"));
        // A random op with a tensor argument (the built-in ones are
        // composites, or take none) is batched by its randomness policy.
        let exp = reg("exp", Role::BatchingRule);
        let random = [OpSchema {
            random: true,
            ..exp.ops[exp.op]
        }];
        let msg = Registered::new(&random, "exp", Role::BatchingRule)
            .check_op("batchrules::ops")
            .unwrap();
        assert!(
            msg.as_str()
                .starts_with("`exp` is a random op (`random = true` in its op table)")
                && msg.as_str().contains("to vectorize `exp`, declare it"),
            "{}",
            msg.as_str()
        );
    }

    pub(crate) fn a_vjp_short_of_cotangents_is_told_how_many() {
        // `max_pool2d_with_indices`: 6 arguments, 2 outputs, 2 cotangents.
        let pool = reg("max_pool2d_with_indices", Role::Vjp);
        let msg = pool.check_arity(9).unwrap();
        assert!(
            msg.as_str().starts_with(
                "the `#[vjp]` for `max_pool2d_with_indices` is missing cotangents: it takes 9 \
                 parameters, but after the op's arguments and outputs a vjp takes one \
                 cotangent per output of the op (2 here), in output order."
            ),
            "{}",
            msg.as_str()
        );
        // Short inside the outputs: the two counts.
        let msg = pool.check_arity(7).unwrap();
        assert!(
            msg.as_str().starts_with(
                "the `#[vjp]` for `max_pool2d_with_indices` takes 10 parameters, found 7."
            ),
            "{}",
            msg.as_str()
        );
        assert_eq!(pool.param_source(9), (true, 3));
    }

    pub(crate) fn templates_fill_known_placeholders_only() {
        let fill = Fill {
            arg: "self",
            found: 3,
            ..Fill::op("triu")
        };
        let m = Msg::new().fill("`{op}` {arg}: {found} of {n} {unknown} {op", &fill);
        assert_eq!(m.as_str(), "`triu` self: 3 of 0 {unknown} {op");
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
        batching_rules_place_each_bdim_after_its_tensor,
        a_vjp_short_of_cotangents_is_told_how_many,
        templates_fill_known_placeholders_only,
        numbers_render,
    }
}
