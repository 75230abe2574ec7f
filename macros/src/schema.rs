//! Parsing of schema strings such as `triu(Tensor self, int diagonal=0) -> Tensor`,
//! and the Rust signature each role's function gets from a schema: its
//! role's [`SignatureLayout`](batchrules_roles::SignatureLayout) filled in.

use crate::role::{Each, Naming, ParamGroup, Role};

/// A schema type without optionality: the one enum of
/// `batchrules_roles`, which the runtime re-exports as `schema::ArgType`.
pub use batchrules_roles::ArgType as Base;

#[derive(Clone, Debug)]
pub struct Arg {
    pub name: String,
    pub ty: Base,
    pub optional: bool,
    pub default: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Schema {
    pub name: String,
    pub args: Vec<Arg>,
    pub returns: Vec<Base>,
}

/// A role's signature in the normalized spelling shared with the attribute
/// macros (`&Tensor`, `Option<usize>`, `Result<Tensor>`).
pub struct Signature {
    pub params: Vec<String>,
    /// The parameters' names, as `display` writes them (`self_`,
    /// `self_bdim`, `result`, `grad0`, `self_tangent`).
    pub param_names: Vec<String>,
    pub ret: String,
    /// `fn(self_: &Tensor, diagonal: i64) -> Result<Tensor>`, for messages.
    pub display: String,
}

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// The Rust identifier for a schema name (`self` becomes `self_`).
pub fn rust_ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits on commas that are not inside brackets or parentheses.
pub fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_type(s: &str) -> Result<(Base, bool), String> {
    use batchrules_roles::{schema_type, SCHEMA_TYPES};
    let (s, optional) = match s.strip_suffix('?') {
        Some(rest) => (rest, true),
        None => (s, false),
    };
    let Some(ty) = schema_type(s) else {
        let names: Vec<&str> = SCHEMA_TYPES.iter().map(|t| t.name).collect();
        let fixed: Vec<&str> = SCHEMA_TYPES
            .iter()
            .filter(|t| t.not_optional.is_some())
            .map(|t| t.name)
            .collect();
        return Err(format!(
            "unknown type `{s}`; the types are {}, each optionally followed by `?` (except {})",
            and_list(&names),
            and_list(&fixed)
        ));
    };
    if let (true, Some(why)) = (optional, ty.not_optional) {
        return Err(format!("`{s}?` is not supported; {why}"));
    }
    Ok((ty.base, optional))
}

/// `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The text of a `str` default written in quotes, `"valid"` or `'valid'`; `None`
/// for anything else (a string holding a quote, comma or bracket is not one:
/// the schema splits on those).
pub fn str_default(value: &str) -> Option<&str> {
    let inner = ['"', '\'']
        .iter()
        .find_map(|&q| value.strip_prefix(q).and_then(|v| v.strip_suffix(q)))?;
    let plain = !inner.contains(['"', '\'', ',', '[', ']', '(', ')', '\\']);
    plain.then_some(inner)
}

pub fn check_default(arg: &Arg, value: &str) -> Result<(), String> {
    let bad = |what: &str| {
        Err(format!(
            "default `{value}` of argument `{}` is not {what}",
            arg.name
        ))
    };
    if value == "None" {
        return if arg.optional {
            Ok(())
        } else {
            bad("valid: only an optional type (`int?`) can default to None")
        };
    }
    let ok = match arg.ty {
        Base::Int => value.parse::<i64>().is_ok(),
        Base::Float => value.parse::<f64>().is_ok(),
        Base::Bool => matches!(value, "True" | "False" | "true" | "false"),
        Base::IntList => {
            let inner = value.strip_prefix('[').and_then(|v| v.strip_suffix(']'));
            match inner {
                Some("") => true,
                Some(items) => items.split(',').all(|i| i.trim().parse::<i64>().is_ok()),
                None => value.parse::<i64>().is_ok(),
            }
        }
        Base::ScalarType => matches!(value, "bool" | "i64" | "f32" | "f64"),
        Base::Reduction => matches!(value, "none" | "mean" | "sum"),
        Base::Str => str_default(value).is_some(),
        Base::Tensor | Base::TensorList => false,
    };
    if ok {
        Ok(())
    } else {
        bad(match arg.ty {
            Base::Int => "an int",
            Base::Float => "a float",
            Base::Bool => "a bool (True or False)",
            Base::IntList => "an int list such as [0, 1]",
            Base::ScalarType => "a ScalarType (bool, i64, f32, f64)",
            Base::Reduction => "a Reduction (none, mean, sum)",
            Base::Str => {
                "a quoted string such as \"valid\" (without quotes, commas or brackets inside)"
            }
            Base::Tensor | Base::TensorList => "allowed: tensors take no default other than None",
        })
    }
}

/// Parses a schema string.
pub fn parse(schema: &str) -> Result<Schema, String> {
    let schema = schema.trim();
    let (head, ret) = schema
        .split_once("->")
        .ok_or("expected `name(args) -> returns`: the `->` is missing")?;
    let head = head.trim();
    let open = head.find('(').ok_or("expected `(` after the op name")?;
    let name = head[..open].trim();
    if !is_ident(name) {
        return Err(format!("op name `{name}` is not an identifier"));
    }
    let body = head[open + 1..]
        .strip_suffix(')')
        .ok_or("expected the argument list to end with `)` before `->`")?;

    let mut args: Vec<Arg> = Vec::new();
    if !body.trim().is_empty() {
        for (i, piece) in split_top(body).into_iter().enumerate() {
            let piece = piece.trim();
            let (decl, default) = match piece.split_once('=') {
                Some((d, v)) => (d.trim(), Some(v.trim().to_string())),
                None => (piece, None),
            };
            let mut words = decl.split_whitespace();
            let (Some(ty), Some(arg_name), None) = (words.next(), words.next(), words.next())
            else {
                return Err(format!(
                    "argument {} `{piece}` must be `Type name` or `Type name=default`",
                    i + 1
                ));
            };
            let (ty, optional) = parse_type(ty)?;
            if !is_ident(arg_name) {
                return Err(format!("argument name `{arg_name}` is not an identifier"));
            }
            if args.iter().any(|a| a.name == arg_name) {
                return Err(format!("argument `{arg_name}` is declared twice"));
            }
            let arg = Arg {
                name: arg_name.to_string(),
                ty,
                optional,
                default: None,
            };
            if let Some(v) = &default {
                check_default(&arg, v)?;
            }
            args.push(Arg { default, ..arg });
        }
    }

    let ret = ret.trim();
    let ret_items: Vec<&str> = match ret.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => split_top(inner).into_iter().map(str::trim).collect(),
        None => vec![ret],
    };
    let mut returns = Vec::new();
    for item in ret_items {
        // A return may carry a name: `(Tensor values, Tensor indices)`.
        let ty = item.split_whitespace().next().unwrap_or("");
        match parse_type(ty) {
            Ok((b @ (Base::Tensor | Base::TensorList), false)) => returns.push(b),
            _ => {
                return Err(format!(
                    "return type `{item}` is not supported: an op returns `Tensor`, `Tensor[]`, \
                     or a tuple of up to three `Tensor`s"
                ))
            }
        }
    }
    if returns.len() > 1 && returns.contains(&Base::TensorList) {
        return Err("`Tensor[]` can only be returned on its own".to_string());
    }
    if returns.len() > 3 {
        return Err("at most three returns are supported".to_string());
    }
    Ok(Schema {
        name: name.to_string(),
        args,
        returns,
    })
}

impl Schema {
    /// The normalized parameter type of `arg` for `role` (not counting batch dims).
    pub fn param_type(arg: &Arg, role: Role) -> String {
        let tensor = role.layout().tensor;
        let base = match arg.ty {
            Base::Tensor => format!("&{tensor}"),
            Base::TensorList => format!("&[{tensor}]"),
            Base::Int => "i64".into(),
            Base::IntList => "&[i64]".into(),
            Base::Float => "f64".into(),
            Base::Bool => "bool".into(),
            Base::ScalarType => "DType".into(),
            Base::Reduction => "Reduction".into(),
            Base::Str => "&str".into(),
        };
        if arg.optional {
            format!("Option<{base}>")
        } else {
            base
        }
    }

    /// What a parameter group, or the return, has one item for (`each`):
    /// the arguments, the tensor arguments or the outputs, in order.
    fn items(&self, each: Each) -> Vec<Item<'_>> {
        let of_arg = |a| Item {
            arg: Some(a),
            ty: a.ty,
        };
        match each {
            Each::Arg => self.args.iter().map(of_arg).collect(),
            Each::TensorArg => self
                .args
                .iter()
                .filter(|a| a.ty.is_tensor())
                .map(of_arg)
                .collect(),
            Each::Output => self
                .returns
                .iter()
                .map(|&ty| Item { arg: None, ty })
                .collect(),
        }
    }

    /// The signature of a function registered as `role` (a decomposition has
    /// the kernel's; so does the typed op function): the role's
    /// [`SignatureLayout`](batchrules_roles::SignatureLayout) filled in with
    /// this schema's arguments and outputs.
    pub fn signature(&self, role: Role) -> Signature {
        let layout = role.layout();
        let (after_args, groups): (Vec<&ParamGroup>, Vec<&ParamGroup>) =
            layout.params.iter().partition(|g| g.after_its_argument);
        let mut params = Params::default();
        for group in groups {
            let items = self.items(group.each);
            let several = items.len() > 1;
            for (i, item) in items.iter().enumerate() {
                let ty = match (group.forms, item.arg) {
                    (Some(forms), _) => forms.of(item.is_list()).to_string(),
                    (None, Some(arg)) => Self::param_type(arg, role),
                    (None, None) => unreachable!("a group of outputs has forms"),
                };
                params.push(item.name(group.naming, i, several), ty);
                if group.each != Each::Arg {
                    continue;
                }
                // The parameters that stand right after their argument's.
                for after in after_args.iter().filter(|a| item.is_in(a.each)) {
                    let forms = after.forms.expect("a group after its argument has forms");
                    let ty = forms.of(item.is_list()).to_string();
                    params.push(item.name(after.naming, i, several), ty);
                }
            }
        }
        let returns = layout.returns;
        let items: Vec<&str> = self
            .items(returns.each)
            .iter()
            .map(|item| returns.forms.of(item.is_list()))
            .collect();
        let inner = match items.as_slice() {
            [one] => one.to_string(),
            many => format!("({})", many.join(", ")),
        };
        let ret = format!("Result<{inner}>");
        let shown: Vec<String> = params
            .names
            .iter()
            .zip(&params.types)
            .map(|(name, ty)| format!("{name}: {ty}"))
            .collect();
        let display = format!("fn({}) -> {ret}", shown.join(", "));
        Signature {
            params: params.types,
            param_names: params.names,
            ret,
            display,
        }
    }
}

/// One argument or output a parameter group or the return has an item for.
struct Item<'a> {
    /// The argument; `None` for an output.
    arg: Option<&'a Arg>,
    ty: Base,
}

impl Item<'_> {
    fn is_list(&self) -> bool {
        self.ty == Base::TensorList
    }

    /// Whether a group with one item for `each` has one for this argument.
    fn is_in(&self, each: Each) -> bool {
        match each {
            Each::Arg => self.arg.is_some(),
            Each::TensorArg => self.arg.is_some() && self.ty.is_tensor(),
            Each::Output => self.arg.is_none(),
        }
    }

    /// The name of the parameter for this item in a group named by `naming`,
    /// the item being its group's `i`th (of `several`, if so).
    fn name(&self, naming: Naming, i: usize, several: bool) -> String {
        let arg = self.arg.map_or("", |a| a.name.as_str());
        match naming {
            Naming::Arg => rust_ident(arg),
            Naming::ArgSuffix(suffix) => format!("{arg}{suffix}"),
            Naming::Numbered(word) if several => format!("{word}{i}"),
            Naming::Numbered(word) => word.to_string(),
        }
    }
}

/// A signature's parameters, as they are laid out: names and types.
#[derive(Default)]
struct Params {
    names: Vec<String>,
    types: Vec<String>,
}

impl Params {
    fn push(&mut self, name: String, ty: String) {
        self.names.push(name);
        self.types.push(ty);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_exactly_the_shared_schema_types() {
        for ty in batchrules_roles::SCHEMA_TYPES {
            let (base, optional) = parse_type(ty.name).unwrap();
            assert!(!optional);
            assert_eq!(ty.base, base);
            let opt = parse_type(&format!("{}?", ty.name));
            match ty.not_optional {
                None => assert_eq!(opt.unwrap(), (base, true), "{}", ty.name),
                Some(why) => assert!(opt.unwrap_err().contains(why), "{}", ty.name),
            }
        }
        for other in ["number", "Tensor[][]", "Scalar", "int??", "Str", ""] {
            assert!(parse_type(other).is_err(), "{other}");
        }
        assert_eq!(
            parse_type("number").unwrap_err(),
            "unknown type `number`; the types are Tensor, Tensor[], int, int[], float, bool, \
             ScalarType, Reduction and str, each optionally followed by `?` (except Tensor[], \
             Reduction and str)"
        );
    }

    #[test]
    fn parses_defaults_optionals_and_tuples() {
        let s = parse("max(Tensor self, int? dim=None, bool keepdim=False) -> (Tensor, Tensor)")
            .unwrap();
        assert_eq!(s.name, "max");
        assert_eq!(s.args.len(), 3);
        assert!(s.args[1].optional);
        assert_eq!(s.returns, vec![Base::Tensor, Base::Tensor]);
        let rule = s.signature(Role::BatchingRule);
        assert_eq!(
            rule.params,
            vec!["&Tensor", "Option<usize>", "Option<i64>", "bool"]
        );
        assert_eq!(
            rule.ret,
            "Result<((Tensor, Option<usize>), (Tensor, Option<usize>))>"
        );
        assert_eq!(
            rule.param_names,
            vec!["self_", "self_bdim", "dim", "keepdim"]
        );
        // A `Tensor[]` takes a list of batch dims; a meta takes tensor metas.
        let s = parse("cat(Tensor[] tensors, int dim=0) -> Tensor").unwrap();
        assert_eq!(
            s.signature(Role::BatchingRule).display,
            "fn(tensors: &[Tensor], tensors_bdim: &[Option<usize>], dim: i64) -> \
             Result<(Tensor, Option<usize>)>"
        );
        assert_eq!(
            s.signature(Role::Meta).display,
            "fn(tensors: &[TensorMeta], dim: i64) -> Result<TensorMeta>"
        );
        assert_eq!(
            s.signature(Role::Decomposition).display,
            s.signature(Role::Kernel).display
        );
    }

    #[test]
    fn vjp_signature_has_outputs_cotangents_and_one_gradient_per_tensor_slot() {
        let s = parse("max(Tensor self, int? dim=None, bool keepdim=False) -> (Tensor, Tensor)")
            .unwrap();
        let vjp = s.signature(Role::Vjp);
        assert_eq!(
            vjp.params,
            vec![
                "&Tensor",
                "Option<i64>",
                "bool",
                "&Tensor",
                "&Tensor",
                "&Tensor",
                "&Tensor"
            ]
        );
        assert_eq!(
            vjp.param_names,
            vec!["self_", "dim", "keepdim", "result0", "result1", "grad0", "grad1"]
        );
        assert_eq!(vjp.ret, "Result<Option<Tensor>>");

        let s = parse("f(Tensor[] tensors, Tensor? weight, int dim) -> Tensor").unwrap();
        let vjp = s.signature(Role::Vjp);
        assert_eq!(
            vjp.params,
            vec!["&[Tensor]", "Option<&Tensor>", "i64", "&Tensor", "&Tensor"]
        );
        assert_eq!(vjp.ret, "Result<(Vec<Option<Tensor>>, Option<Tensor>)>");
        assert_eq!(
            vjp.display,
            "fn(tensors: &[Tensor], weight: Option<&Tensor>, dim: i64, result: &Tensor, \
             grad: &Tensor) -> Result<(Vec<Option<Tensor>>, Option<Tensor>)>"
        );
    }

    #[test]
    fn jvp_signature_has_outputs_then_one_tangent_per_tensor_slot() {
        let s = parse("mul(Tensor self, Tensor other) -> Tensor").unwrap();
        let jvp = s.signature(Role::Jvp);
        assert_eq!(
            jvp.params,
            vec![
                "&Tensor",
                "&Tensor",
                "&Tensor",
                "Option<&Tensor>",
                "Option<&Tensor>"
            ]
        );
        assert_eq!(
            jvp.param_names,
            vec!["self_", "other", "result", "self_tangent", "other_tangent"]
        );
        assert_eq!(jvp.ret, "Result<Option<Tensor>>");
        assert_eq!(
            jvp.display,
            "fn(self_: &Tensor, other: &Tensor, result: &Tensor, self_tangent: Option<&Tensor>, \
             other_tangent: Option<&Tensor>) -> Result<Option<Tensor>>"
        );

        // Non-tensor arguments take no tangent; an optional tensor takes one;
        // a tensor list takes a slice of them; several outputs make a tuple.
        let s = parse("f(Tensor[] tensors, int dim, Tensor? weight) -> (Tensor, Tensor)").unwrap();
        let jvp = s.signature(Role::Jvp);
        assert_eq!(
            jvp.params,
            vec![
                "&[Tensor]",
                "i64",
                "Option<&Tensor>",
                "&Tensor",
                "&Tensor",
                "&[Option<Tensor>]",
                "Option<&Tensor>"
            ]
        );
        assert_eq!(
            jvp.param_names,
            vec![
                "tensors",
                "dim",
                "weight",
                "result0",
                "result1",
                "tensors_tangent",
                "weight_tangent"
            ]
        );
        assert_eq!(jvp.ret, "Result<(Option<Tensor>, Option<Tensor>)>");

        // A `Tensor[]` output is one `&[Tensor]` result and one list of tangents.
        let s = parse("unbind(Tensor self, int dim=0) -> Tensor[]").unwrap();
        let jvp = s.signature(Role::Jvp);
        assert_eq!(
            jvp.params,
            vec!["&Tensor", "i64", "&[Tensor]", "Option<&Tensor>"]
        );
        assert_eq!(jvp.ret, "Result<Vec<Option<Tensor>>>");
        // The vjp of the same op is built by the same code, with the roles of
        // arguments and outputs swapped.
        assert_eq!(
            s.signature(Role::Vjp).params,
            vec!["&Tensor", "i64", "&[Tensor]", "&[Tensor]"]
        );
    }

    #[test]
    fn rejects_malformed_schemas() {
        for bad in [
            "triu(Tensor self",
            "triu(Tensor self) Tensor",
            "triu(Tensr self) -> Tensor",
            "triu(Tensor self, int diagonal=zero) -> Tensor",
            "triu(Tensor self, Tensor self) -> Tensor",
            "triu(Tensor) -> Tensor",
            "triu(Tensor self) -> int",
            "1triu(Tensor self) -> Tensor",
        ] {
            assert!(parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn int_list_defaults() {
        assert!(parse("f(int[] dims=[0, 1]) -> Tensor").is_ok());
        assert!(parse("f(int[] dims=[0, x]) -> Tensor").is_err());
        assert!(parse("f(int[]? dims=None) -> Tensor").is_ok());
    }
}
