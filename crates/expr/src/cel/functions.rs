//! sherma's custom CEL functions, declared as overloads of the shared [`cel::Env`].
//!
//! Every function is callable globally (`trim(s)`) and method-style (`s.trim()`), as upstream
//! registers them. None of the names exists in cel 0.15's standard library (we do not add its
//! `strings` extension, whose `split`/`join`/`trim`/... differ from sherma's), so plain
//! overloads work. `string()` gains overloads for lists, maps and `null`.
//!
//! Deliberate differences from upstream (Python):
//! - `join` and `template` write non-string values as compact JSON (`true`, `2.5`, `[1,"a"]`,
//!   `{"k":1}`), not as Python/celpy reprs (`True`, `ListType([...])`).
//! - `template` substitutes in one left-to-right pass over the text: an inserted value is never
//!   expanded again. Upstream replaces key by key in map order, so a value containing `${other}`
//!   could be expanded or not depending on hash order.
//! - `string(list)` / `string(map)` give compact JSON (upstream: the celpy repr); map keys sorted.

use ::cel::common::functions::Function;
use ::cel::common::types::{self, CelBool, CelInt, CelList, CelMap, CelString, Type};
use ::cel::common::value::{CowVal, Val};
use ::cel::{DeclarationError, Env, ExecutionError};

use super::convert::{display_json, json_to_val_owned, key_to_string, val_to_json};

type CallResult<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// The custom function names, for messages and for the validator.
pub const CUSTOM_FUNCTIONS: &[&str] = &[
    "json",
    "jsonValid",
    "split",
    "trim",
    "lowerAscii",
    "upperAscii",
    "replace",
    "indexOf",
    "join",
    "substring",
    "last",
    "template",
];

/// Declares the custom functions on `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    use types::{INT_TYPE as I, LIST_TYPE as L, MAP_TYPE as M, STRING_TYPE as S};
    both(env, "json", &[S], json)?;
    both(env, "jsonValid", &[S], json_valid)?;
    both(env, "split", &[S, S], split)?;
    both(env, "trim", &[S], trim)?;
    both(env, "lowerAscii", &[S], lower)?;
    both(env, "upperAscii", &[S], upper)?;
    both(env, "replace", &[S, S, S], replace)?;
    both(env, "indexOf", &[S, S], index_of)?;
    both(env, "join", &[L, S], join)?;
    both(env, "substring", &[S, I, I], substring)?;
    both(env, "last", &[L], last)?;
    both(env, "template", &[S, M], template)?;
    env.add_overload("string", "sy_list_to_string", vec![L], to_json_string)?;
    env.add_overload("string", "sy_map_to_string", vec![M], to_json_string)?;
    env.add_overload(
        "string",
        "sy_null_to_string",
        vec![types::NULL_TYPE],
        to_json_string,
    )?;
    Ok(())
}

/// Declares `name(args...)` and `args[0].name(args[1..]...)`.
fn both(env: &mut Env, name: &str, args: &[Type], f: Function) -> Result<(), DeclarationError> {
    let all: Vec<Type> = args.iter().map(|t| t.to_owned()).collect();
    env.add_overload(name, &format!("sy_{name}"), all, f)?;
    let rest: Vec<Type> = args[1..].iter().map(|t| t.to_owned()).collect();
    env.add_member_overload(
        name,
        &format!("sy_member_{name}"),
        args[0].to_owned(),
        rest,
        f,
    )
}

fn arg_str<'x>(
    args: &'x [CowVal<'_, '_>],
    i: usize,
    function: &str,
) -> Result<&'x str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.as_ref().downcast_ref::<CelString>())
        .map(|s| s.inner())
        .ok_or_else(|| bad_argument(function, i, "string"))
}

fn arg_int(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<i64, ExecutionError> {
    args.get(i)
        .and_then(|a| a.as_ref().downcast_ref::<CelInt>())
        .map(|n| *n.inner())
        .ok_or_else(|| bad_argument(function, i, "int"))
}

fn arg_list<'x, 'v>(
    args: &'x [CowVal<'_, 'v>],
    i: usize,
    function: &str,
) -> Result<&'x [Box<dyn Val + 'v>], ExecutionError> {
    args.get(i)
        .and_then(|a| a.as_ref().downcast_ref::<CelList>())
        .map(|l| l.inner())
        .ok_or_else(|| bad_argument(function, i, "list"))
}

fn bad_argument(function: &str, i: usize, want: &str) -> ExecutionError {
    ExecutionError::function_error(function, format!("argument {} must be a {want}", i + 1))
}

fn string<'b, 'v>(s: String) -> CallResult<'b, 'v> {
    Ok(CowVal::owned(CelString::from(s)))
}

fn json<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "json")?;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => Ok(CowVal::Owned(json_to_val_owned(v))),
        Err(e) => Err(ExecutionError::function_error(
            "json",
            format!("invalid JSON: {e}"),
        )),
    }
}

fn json_valid<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "jsonValid")?;
    let ok = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    Ok(CowVal::owned(CelBool::from(ok)))
}

fn split<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "split")?;
    let sep = arg_str(&args, 1, "split")?;
    if sep.is_empty() {
        return Err(ExecutionError::function_error("split", "empty separator"));
    }
    let parts: Vec<Box<dyn Val + 'static>> = text
        .split(sep)
        .map(|p| Box::new(CelString::from(p.to_owned())) as Box<dyn Val>)
        .collect();
    Ok(CowVal::owned(CelList::from(parts)))
}

fn trim<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    string(arg_str(&args, 0, "trim")?.trim().to_owned())
}

/// Unicode-aware, like Python's `str.lower()` (upstream's name says ASCII, its code does not).
fn lower<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    string(arg_str(&args, 0, "lowerAscii")?.to_lowercase())
}

/// Unicode-aware, like Python's `str.upper()`.
fn upper<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    string(arg_str(&args, 0, "upperAscii")?.to_uppercase())
}

/// Replaces every occurrence. An empty `old` inserts `new` between characters, as Python does.
fn replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "replace")?;
    let old = arg_str(&args, 1, "replace")?;
    let new = arg_str(&args, 2, "replace")?;
    string(text.replace(old, new))
}

/// Index in characters (code points) of the first occurrence, or -1 (Python `str.find`).
fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "indexOf")?;
    let sub = arg_str(&args, 1, "indexOf")?;
    let index = match text.find(sub) {
        Some(byte) => text[..byte].chars().count() as i64,
        None => -1,
    };
    Ok(CowVal::owned(CelInt::from(index)))
}

/// Joins the elements with `sep`: strings as they are, other values as compact JSON (upstream
/// uses Python `str()`, e.g. `True`; we deliberately write `true`).
fn join<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let items = arg_list(&args, 0, "join")?;
    let sep = arg_str(&args, 1, "join")?;
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match item.as_ref().downcast_ref::<CelString>() {
            Some(s) => out.push_str(s.inner()),
            None => {
                let j = val_to_json(item.as_ref())
                    .map_err(|e| ExecutionError::function_error("join", e))?;
                out.push_str(&display_json(&j));
            }
        }
    }
    string(out)
}

/// Python slicing `s[start:end]` over characters: negative indexes count from the end and
/// out-of-range bounds are clamped, never an error.
fn substring<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "substring")?;
    let start = arg_int(&args, 1, "substring")?;
    let end = arg_int(&args, 2, "substring")?;
    string(python_slice(text, start, end))
}

pub(crate) fn python_slice(text: &str, start: i64, end: i64) -> String {
    let len = text.chars().count() as i64;
    let clamp = |i: i64| -> i64 {
        if i < 0 {
            (i.saturating_add(len)).max(0)
        } else {
            i.min(len)
        }
    };
    let (s, e) = (clamp(start), clamp(end));
    if s >= e {
        return String::new();
    }
    text.chars()
        .skip(s as usize)
        .take((e - s) as usize)
        .collect()
}

fn last<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let items = arg_list(&args, 0, "last")?;
    match items.last() {
        Some(item) => Ok(CowVal::Owned(item.clone_as_boxed())),
        None => Err(ExecutionError::function_error("last", "the list is empty")),
    }
}

/// Replaces each `${key}` whose key is in the map with the value (strings as they are, other
/// values as compact JSON); unknown placeholders are left intact. One pass, left to right.
fn template<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let text = arg_str(&args, 0, "template")?;
    let map = args
        .get(1)
        .and_then(|a| a.as_ref().downcast_ref::<CelMap>())
        .ok_or_else(|| bad_argument("template", 1, "map"))?;
    let mut values = std::collections::HashMap::new();
    for (k, v) in map.inner() {
        let key = key_to_string(&::cel::objects::Key::from(k.clone()));
        let value = match v.as_ref().downcast_ref::<CelString>() {
            Some(s) => s.inner().to_owned(),
            None => display_json(
                &val_to_json(v.as_ref())
                    .map_err(|e| ExecutionError::function_error("template", e))?,
            ),
        };
        values.insert(key, value);
    }
    string(substitute_placeholders(text, |key| {
        values.get(key).map(String::as_str)
    }))
}

pub(crate) fn substitute_placeholders<'m>(
    text: &str,
    lookup: impl Fn(&str) -> Option<&'m str>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(close) => {
                let key = &after[..close];
                match lookup(key) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&rest[start..start + 2 + close + 1]),
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `string(list)`, `string(map)`, `string(null)`: compact JSON.
fn to_json_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> CallResult<'b, 'v> {
    let v = args
        .first()
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    let j = val_to_json(v.as_ref()).map_err(|e| ExecutionError::function_error("string", e))?;
    string(j.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_slicing() {
        let s = "héllo";
        assert_eq!(python_slice(s, 0, 2), "hé");
        assert_eq!(python_slice(s, -3, 100), "llo");
        assert_eq!(python_slice(s, 3, 1), "");
        assert_eq!(python_slice(s, -100, -4), "h");
        assert_eq!(python_slice(s, i64::MIN, i64::MAX), "héllo");
        assert_eq!(python_slice("", 0, 1), "");
    }

    #[test]
    fn placeholders_are_substituted_once() {
        let look = |k: &str| match k {
            "a" => Some("${b}"),
            "b" => Some("B"),
            "" => Some("E"),
            _ => None,
        };
        assert_eq!(
            substitute_placeholders("x ${a} ${b} ${c} ${} ${", look),
            "x ${b} B ${c} E ${"
        );
        assert_eq!(
            substitute_placeholders("no placeholders", look),
            "no placeholders"
        );
    }
}
