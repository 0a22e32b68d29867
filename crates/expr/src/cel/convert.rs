//! Conversions between `serde_json::Value` (the engine's value type) and CEL values.
//!
//! JSON → CEL is our own (not cel's serde binding, which turns every non-negative JSON integer
//! into `uint`, so that `state.count + 1` would fail):
//! - integers that fit `i64` become `int`; larger positive ones `uint`; other numbers `double`;
//! - `null` stays `null`. Upstream (cel-python) turns `None` into `false` everywhere; we keep
//!   `null` on purpose, so `state.x == null` works and nothing silently becomes `false`.
//!   Branch conditions still treat a `null` result as false (see `CelEngine::eval_bool`);
//! - objects become maps with string keys, arrays lists. Strings are borrowed, not copied.
//!
//! CEL → JSON: `int`/`uint`/`double` become numbers (non-finite doubles become `null`), bytes a
//! standard base64 string, timestamps RFC 3339 text, durations protobuf-JSON text (`"1.5s"`),
//! optionals their value (`null` when empty), type values their name. Map keys are emitted
//! sorted (CEL maps are hash maps, so there is no insertion order to keep); non-string keys are
//! written as their JSON text.

use std::collections::HashMap;

use ::cel::Value as CelValue;
use ::cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use ::cel::common::value::Val;
use ::cel::objects::{Key, OptionalValue};
use serde_json::{Map, Number, Value as Json};

/// Converts a borrowed JSON value into a CEL value that borrows its strings.
pub(crate) fn json_to_val<'a>(v: &'a Json) -> Box<dyn Val + 'a> {
    match v {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(*b)),
        Json::Number(n) => number_to_val(n),
        Json::String(s) => Box::new(CelString::from(s.as_str())),
        Json::Array(items) => {
            let list: Vec<Box<dyn Val + 'a>> = items.iter().map(json_to_val).collect();
            Box::new(CelList::from(list))
        }
        Json::Object(obj) => Box::new(map_to_val(obj.iter())),
    }
}

/// A CEL map built from (borrowed) JSON object entries.
pub(crate) fn map_to_val<'a>(entries: impl Iterator<Item = (&'a String, &'a Json)>) -> CelMap<'a> {
    let map: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = entries
        .map(|(k, v)| (CelMapKey::from(k.as_str()), json_to_val(v)))
        .collect();
    CelMap::from(map)
}

/// Converts an owned JSON value (e.g. the result of `json()`) into an owned CEL value.
pub(crate) fn json_to_val_owned(v: Json) -> Box<dyn Val + 'static> {
    match v {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(b)),
        Json::Number(n) => number_to_val(&n),
        Json::String(s) => Box::new(CelString::from(s)),
        Json::Array(items) => {
            let list: Vec<Box<dyn Val>> = items.into_iter().map(json_to_val_owned).collect();
            Box::new(CelList::from(list))
        }
        Json::Object(obj) => {
            let map: HashMap<CelMapKey<'static>, Box<dyn Val>> = obj
                .into_iter()
                .map(|(k, v)| (CelMapKey::from(k), json_to_val_owned(v)))
                .collect();
            Box::new(CelMap::from(map))
        }
    }
}

fn number_to_val<'a>(n: &Number) -> Box<dyn Val + 'a> {
    if let Some(i) = n.as_i64() {
        Box::new(CelInt::from(i))
    } else if let Some(u) = n.as_u64() {
        Box::new(CelUInt::from(u))
    } else {
        Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN)))
    }
}

/// Converts a CEL value into JSON. Fails only for values JSON cannot carry (functions, structs,
/// opaque application values).
pub(crate) fn value_to_json(v: &CelValue) -> Result<Json, String> {
    Ok(match v {
        CelValue::Null => Json::Null,
        CelValue::Bool(b) => Json::Bool(*b),
        CelValue::Int(i) => Json::from(*i),
        CelValue::UInt(u) => Json::from(*u),
        CelValue::Float(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        CelValue::String(s) => Json::String(s.as_str().to_owned()),
        CelValue::Bytes(b) => Json::String(base64(b)),
        CelValue::List(items) => Json::Array(
            items
                .iter()
                .map(value_to_json)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        CelValue::Map(map) => {
            let mut entries = map
                .map
                .iter()
                .map(|(k, v)| Ok((key_to_string(k), value_to_json(v)?)))
                .collect::<Result<Vec<_>, String>>()?;
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(entries.into_iter().collect::<Map<_, _>>())
        }
        CelValue::Timestamp(t) => Json::String(t.to_rfc3339()),
        CelValue::Duration(d) => Json::String(duration_text(d.num_seconds(), d.subsec_nanos())),
        CelValue::Opaque(o) => match o.downcast_ref::<OptionalValue>() {
            Some(opt) => match opt.value() {
                Some(inner) => value_to_json(inner)?,
                None => Json::Null,
            },
            None => {
                return Err(format!(
                    "a value of type {} cannot be converted to JSON",
                    o.runtime_type_name()
                ));
            }
        },
        CelValue::Function(name, _) => {
            return Err(format!("the function '{name}' is not a value"));
        }
        CelValue::Struct(_) => return Err("a struct value cannot be converted to JSON".into()),
    })
}

/// Converts a CEL value (as a `dyn Val`) into JSON.
pub(crate) fn val_to_json(v: &dyn Val) -> Result<Json, String> {
    let value = CelValue::try_from(v).map_err(|e| e.to_string())?;
    value_to_json(&value)
}

/// A map key as JSON object key text.
pub(crate) fn key_to_string(k: &Key) -> String {
    match k {
        Key::String(s) => s.as_str().to_owned(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}

/// Text of a value where a string is wanted: strings as they are, everything else as compact
/// JSON (`1`, `2.5`, `true`, `null`, `[1,"a"]`, `{"k":1}`).
pub(crate) fn display_json(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The CEL type name of a value, for messages.
pub(crate) fn type_name(v: &CelValue) -> &'static str {
    match v {
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        CelValue::Function(..) => "function",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::Bool(_) => "bool",
        CelValue::Duration(_) => "duration",
        CelValue::Timestamp(_) => "timestamp",
        CelValue::Opaque(o) if o.runtime_type_name() == "optional_type" => "optional",
        CelValue::Opaque(_) => "opaque",
        CelValue::Struct(_) => "struct",
        CelValue::Null => "null",
    }
}

/// A short, readable rendering of a value for error messages.
pub(crate) fn describe(v: &CelValue) -> String {
    match value_to_json(v) {
        Ok(j) => {
            let mut text = j.to_string();
            if text.len() > 60 {
                let cut = (0..=57)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text.truncate(cut);
                text.push('…');
            }
            text
        }
        Err(_) => type_name(v).to_owned(),
    }
}

/// Protobuf-JSON duration text: `"90s"`, `"1.5s"`, `"-0.25s"`.
fn duration_text(secs: i64, nanos: i32) -> String {
    let negative = secs < 0 || nanos < 0;
    let secs = secs.unsigned_abs();
    let nanos = nanos.unsigned_abs();
    let sign = if negative { "-" } else { "" };
    if nanos == 0 {
        format!("{sign}{secs}s")
    } else {
        let frac = format!("{nanos:09}");
        format!("{sign}{secs}.{}s", frac.trim_end_matches('0'))
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe]), "//4=");
    }

    #[test]
    fn durations_use_protobuf_json_text() {
        assert_eq!(duration_text(90, 0), "90s");
        assert_eq!(duration_text(1, 500_000_000), "1.5s");
        assert_eq!(duration_text(0, -250_000_000), "-0.25s");
        assert_eq!(duration_text(-3, 0), "-3s");
    }

    #[test]
    fn json_round_trips_through_cel() {
        let j = serde_json::json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}, "big": 18446744073709551615u64});
        let val = json_to_val(&j);
        let back = val_to_json(val.as_ref()).unwrap();
        assert_eq!(back, j);
        let owned = json_to_val_owned(j.clone());
        assert_eq!(val_to_json(owned.as_ref()).unwrap(), j);
    }

    #[test]
    fn describe_truncates_long_values() {
        let long = CelValue::String(std::sync::Arc::new("é".repeat(100)));
        let d = describe(&long);
        assert!(d.ends_with('…'));
        assert!(d.len() <= 64);
    }
}
