//! Input `EXPR \0 STATE`: compile EXPR as sherma CEL and evaluate it (value and branch
//! condition) with sherma's functions against STATE (a JSON object; any other STATE, or none,
//! means a fixed state with every JSON type in it). State fields are also bound bare, as for
//! older sherma files; `prompts`, `llms` and `llm_response` are bound too. Errors are fine;
//! panics (even ones the engine catches: libFuzzer's hook aborts first), errors positioned
//! outside the source and runaway time or memory are not.
//!
//! Every EXPR is compiled first, and the compiled program inspected as the validator does
//! (state references, the primary error, the `default(A, B)` form); a compile error's range must
//! lie inside the source, since the validator maps it into the file. (This target replaced a
//! separate compile-only one: it checks everything that one did.)
//!
//! CEL has no evaluation budget (upstream's neither): k nested comprehensions over n-element
//! lists cost n^k. Inputs naming more than one comprehension macro are compiled and inspected
//! but not evaluated, so the fuzzer does not report that polynomial blow-up as a crash over and
//! over.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value as Json, json};
use std::sync::OnceLock;
use switchyard::expr::{Bindings, CelEngine};

fn fixed_state() -> &'static Json {
    static S: OnceLock<Json> = OnceLock::new();
    S.get_or_init(|| {
        json!({
            "messages": [
                {"type": "human", "content": "hi", "id": "1"},
                {"type": "ai", "content": "", "tool_calls": [{"name": "t", "args": {"a": 1}, "id": "c1"}],
                 "additional_kwargs": {"approved": true}}
            ],
            "count": 2, "neg": -9223372036854775808i64, "big": 18446744073709551615u64, "f": 1.5,
            "s": "héllo, wörld ${x} {{y}}", "empty": "", "b": true, "n": null,
            "l": [1, "a", null, [2], {"k": "v"}], "m": {"a": {"b": [1, 2, {"c": "d"}]}, "": 0},
            "payload": "{\"items\": [1, 2], \"ok\": true}"
        })
    })
}

fn macro_count(expr: &str) -> usize {
    let mut n = 0;
    for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if matches!(word, "map" | "all" | "exists" | "exists_one" | "filter") {
            n += 1;
        }
    }
    n
}

fn check_range(src: &str, off: usize, len: usize, what: &str, msg: &str) {
    assert!(
        off.checked_add(len).is_some_and(|e| e <= src.len()),
        "{what} error at {off}+{len} beyond {} bytes: {msg}",
        src.len()
    );
}

fuzz_target!(|data: &[u8]| {
    let (expr, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let Ok(src) = std::str::from_utf8(expr) else {
        return;
    };
    let parsed: Option<Json> = rest.and_then(|r| serde_json::from_slice(r).ok());
    let state: &Json = match &parsed {
        Some(v @ Json::Object(_)) => v,
        _ => fixed_state(),
    };
    let engine = CelEngine::shared();
    let prog = match engine.compile(src) {
        Ok(p) => p,
        Err(e) => {
            check_range(src, e.offset, e.len, "compile", &e.message);
            let _ = e.to_string();
            return;
        }
    };
    let refs = prog.references();
    for (name, off) in &refs.state_fields {
        assert!(*off <= src.len() && src.is_char_boundary(*off), "state field {name} at {off}");
    }
    if let Some(e) = prog.primary_error() {
        check_range(src, e.offset, e.len, "primary", &e.message);
    }
    let _ = prog.is_default_form();
    if macro_count(src) > 1 {
        return;
    }
    let fixed = fixed_state();
    let mut b = Bindings::with_state(state);
    b.all_fields_bare();
    b.set("prompts", json!({"p": {"instructions": "say ${x}"}}));
    b.set("llms", json!({"m": {"model_name": "x"}}));
    b.set("llm_response", &fixed["messages"][1]);
    match engine.eval(&prog, &b) {
        Ok(v) => {
            let _ = v.to_string();
        }
        Err(e) => {
            check_range(src, e.offset, e.len, "eval", &e.message);
            let _ = e.to_string();
        }
    }
    if let Err(e) = engine.eval_bool(&prog, &b) {
        check_range(src, e.offset, e.len, "eval_bool", &e.message);
    }
});
