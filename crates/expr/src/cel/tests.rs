use super::*;
use proptest::prelude::*;
use serde_json::json;

fn engine() -> &'static CelEngine {
    CelEngine::shared()
}

fn eval_state(src: &str, state: Json) -> Result<Json, CelError> {
    let prog = engine().compile(src)?;
    engine().eval(&prog, &Bindings::with_state(&state))
}

fn ok(src: &str, state: Json) -> Json {
    eval_state(src, state).unwrap_or_else(|e| panic!("{src}: {e:?}"))
}

fn err(src: &str, state: Json) -> CelError {
    match eval_state(src, state) {
        Ok(v) => panic!("{src}: expected an error, got {v}"),
        Err(e) => e,
    }
}

fn compile_err(src: &str) -> CelError {
    match engine().compile(src) {
        Ok(_) => panic!("{src}: expected a compile error"),
        Err(e) => e,
    }
}

// --- bindings and conversions ----------------------------------------------------------------

#[test]
fn json_integers_bind_as_int() {
    assert_eq!(ok("state.count + 1", json!({"count": 2})), json!(3));
    assert_eq!(ok("state.count < 3", json!({"count": 2})), json!(true));
    assert_eq!(
        ok("type(state.count) == int", json!({"count": 2})),
        json!(true)
    );
    assert_eq!(ok("state.neg - 1", json!({"neg": -2})), json!(-3));
    // beyond i64: uint
    assert_eq!(
        ok(
            "type(state.big) == uint",
            json!({"big": 18446744073709551615u64})
        ),
        json!(true)
    );
    assert_eq!(ok("state.f * 2.0", json!({"f": 1.5})), json!(3.0));
}

#[test]
fn null_stays_null() {
    let s = json!({"n": null, "m": {"id": null}});
    assert_eq!(ok("state.n", s.clone()), Json::Null);
    assert_eq!(ok("state.n == null", s.clone()), json!(true));
    assert_eq!(ok("state.m.id == null", s.clone()), json!(true));
    assert_eq!(ok("state.n == false", s.clone()), json!(false));
    let p = engine().compile("state.n").unwrap();
    assert!(!engine().eval_bool(&p, &Bindings::with_state(&s)).unwrap());
}

#[test]
fn eval_bool_requires_a_bool() {
    let s = json!({"count": 1});
    let p = engine().compile("state.count < 3").unwrap();
    assert!(engine().eval_bool(&p, &Bindings::with_state(&s)).unwrap());
    let p = engine().compile(" state.count ").unwrap();
    let e = engine()
        .eval_bool(&p, &Bindings::with_state(&s))
        .unwrap_err();
    assert_eq!(e.message, "condition returned int, expected bool");
    assert_eq!(e.range(), 0..13);
    let p = engine().compile("[1]").unwrap();
    let e = engine()
        .eval_bool(&p, &Bindings::with_state(&s))
        .unwrap_err();
    assert_eq!(e.message, "condition returned list, expected bool");
}

#[test]
fn results_convert_back_to_json() {
    assert_eq!(
        ok("{'b': 1, 'a': [1u, 2.5, null]}", json!({})),
        json!({"a": [1, 2.5, null], "b": 1})
    );
    // map keys are emitted sorted
    let out = ok("{'z': 1, 'a': 2, 'm': 3}", json!({}));
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["a", "m", "z"]);
    assert_eq!(
        ok("{1: 'x', true: 'y'}", json!({})),
        json!({"1": "x", "true": "y"})
    );
    assert_eq!(ok("b'foo'", json!({})), json!("Zm9v"));
    assert_eq!(
        ok("timestamp('2024-01-02T03:04:05Z')", json!({})),
        json!("2024-01-02T03:04:05+00:00")
    );
    assert_eq!(ok("duration('90s')", json!({})), json!("90s"));
    assert_eq!(ok("1.0 / 0.0", json!({})), Json::Null);
    assert_eq!(ok("type(1)", json!({})), json!("int"));
    assert_eq!(
        ok("state", json!({"a": {"b": [true]}})),
        json!({"a": {"b": [true]}})
    );
    assert_eq!(ok("optional.of(3)", json!({})), json!(3));
    assert_eq!(ok("state.?missing", json!({})), Json::Null);
}

#[test]
fn only_read_state_fields_are_converted_but_semantics_hold() {
    let s = json!({"count": 1, "messages": ["a", "b"], "other": {"x": 1}});
    assert_eq!(
        ok(
            "state.count == 1 && state['messages'].size() == 2",
            s.clone()
        ),
        json!(true)
    );
    assert_eq!(
        ok("has(state.count) && !has(state.nope)", s.clone()),
        json!(true)
    );
    assert_eq!(ok("size(state)", s.clone()), json!(3));
    assert_eq!(ok("'other' in state", s.clone()), json!(true));
    assert_eq!(ok("state.other.x + state.count", s.clone()), json!(2));
    assert_eq!(ok("state.map(k, k).size()", s.clone()), json!(3));
    assert_eq!(
        ok("[state].map(state, state.count)[0]", s.clone()),
        json!(1)
    );
}

#[test]
fn bare_field_names_for_older_files() {
    let s = json!({"count": 2, "prompts": "from state"});
    let prompts = json!({"p": {"instructions": "hi"}});
    let mut b = Bindings::with_state(&s);
    b.bare_fields(["count", "prompts", "absent"]);
    b.set("prompts", &prompts);
    let p = engine().compile("count + 1").unwrap();
    assert_eq!(engine().eval(&p, &b).unwrap(), json!(3));
    // explicitly bound names win over bare fields
    let p = engine().compile("prompts.p.instructions").unwrap();
    assert_eq!(engine().eval(&p, &b).unwrap(), json!("hi"));
    // not declared: not bound
    let p = engine().compile("absent").unwrap();
    let e = engine().eval(&p, &b).unwrap_err();
    assert_eq!(e.message, "undeclared reference to 'absent'");
    let mut all = Bindings::with_state(&s);
    all.all_fields_bare();
    let p = engine().compile("count * 2").unwrap();
    assert_eq!(engine().eval(&p, &all).unwrap(), json!(4));
    assert_eq!(all.get("count"), Some(&json!(2)));
    assert_eq!(Bindings::with_state(&s).get("count"), None);
}

#[test]
fn extra_variables() {
    let state = json!({});
    let b = Bindings::with_state(&state)
        .with("llms", json!({"main": {"model_name": "gpt"}}))
        .with(
            "llm_response",
            json!({"role": "ai", "content": "ok", "tool_calls": []}),
        );
    let p = engine()
        .compile("llms.main.model_name + ':' + llm_response.content")
        .unwrap();
    assert_eq!(engine().eval(&p, &b).unwrap(), json!("gpt:ok"));
}

// --- custom functions ------------------------------------------------------------------------

#[test]
fn custom_functions_global_and_method_style() {
    let s = json!({"csv": "a,b,,c", "pad": "  hi  ", "txt": "héllo wörld", "items": [1, "x", true, null, 2.5, {"k": [1]}]});
    let cases: &[(&str, Json)] = &[
        ("json('{\"a\": [1, 2]}').a[1]", json!(2)),
        ("'{\"a\": 1}'.json().a + 1", json!(2)),
        ("json('[1, null]')", json!([1, null])),
        ("jsonValid('{\"a\": 1}')", json!(true)),
        ("'nope'.jsonValid()", json!(false)),
        ("split(state.csv, ',')", json!(["a", "b", "", "c"])),
        ("state.csv.split(',').size()", json!(4)),
        ("trim(state.pad)", json!("hi")),
        ("state.pad.trim()", json!("hi")),
        ("lowerAscii('ÀB')", json!("àb")),
        ("'straße'.upperAscii()", json!("STRASSE")),
        ("replace('a-b-c', '-', '+')", json!("a+b+c")),
        ("'aaa'.replace('a', 'bb')", json!("bbbbbb")),
        ("indexOf(state.txt, 'wö')", json!(6)),
        ("state.txt.indexOf('zz')", json!(-1)),
        ("join(['a', 'b'], ', ')", json!("a, b")),
        (
            "state.items.join('|')",
            json!("1|x|true|null|2.5|{\"k\":[1]}"),
        ),
        ("substring('hello world', 0, 5)", json!("hello")),
        ("'hello'.substring(-3, 100)", json!("llo")),
        ("'héllo'.substring(1, 2)", json!("é")),
        ("'hello'.substring(4, 1)", json!("")),
        ("last([1, 2, 3])", json!(3)),
        ("[[1], [2]].last()[0]", json!(2)),
        (
            "template('Hi ${name}, ${n} ${b} ${l} ${unknown}', {'name': 'Bo', 'n': 5, 'b': true, 'l': [1, 'a']})",
            json!("Hi Bo, 5 true [1,\"a\"] ${unknown}"),
        ),
        ("'${x}${x}'.template({'x': 2.5})", json!("2.52.5")),
        ("string([1, 'a'])", json!("[1,\"a\"]")),
        ("string({'k': [true]})", json!("{\"k\":[true]}")),
        ("string(null)", json!("null")),
        ("string(true)", json!("true")),
        ("string(1)", json!("1")),
    ];
    for (src, want) in cases {
        assert_eq!(&ok(src, s.clone()), want, "{src}");
    }
}

#[test]
fn custom_function_errors() {
    let e = err("json('{nope')", json!({}));
    assert!(e.message.starts_with("json(): invalid JSON: "), "{e:?}");
    let e = err("split('a,b', '')", json!({}));
    assert_eq!(e.message, "split(): empty separator");
    let e = err("last([])", json!({}));
    assert_eq!(e.message, "last(): the list is empty");
    let e = err("trim(1)", json!({}));
    assert_eq!(
        e.message,
        "no matching overload for 'trim' applied to (int)"
    );
    let e = err("1.trim()", json!({}));
    assert_eq!(e.message, "no matching overload for int.trim()");
    let e = err("nosuch(1)", json!({}));
    assert_eq!(e.message, "unknown function 'nosuch'");
    assert_eq!(e.range(), 0..6);
}

// --- default() -------------------------------------------------------------------------------

#[test]
fn default_form_falls_back_on_errors() {
    let s = json!({"count": 5, "s": "a,b"});
    assert_eq!(ok("default(state.count, 0)", s.clone()), json!(5));
    assert_eq!(ok("default(state.missing, 0)", json!({})), json!(0));
    assert_eq!(
        ok("  default( state.missing.deep , 'x' )  ", json!({})),
        json!("x")
    );
    assert_eq!(
        ok("default(json('bad'), {'ok': true})", json!({})),
        json!({"ok": true})
    );
    assert_eq!(ok("default(1/0, -1)", json!({})), json!(-1));
    // commas inside strings, lists and calls do not split
    assert_eq!(
        ok("default(split(state.s, ','), ['x,y'])", s.clone()),
        json!(["a", "b"])
    );
    assert_eq!(
        ok("default(state.nope, \"a,\\\"b\")", s.clone()),
        json!("a,\"b")
    );
    assert_eq!(
        ok("default(state.nope, {'a': [1, 2]})", s.clone()),
        json!({"a": [1, 2]})
    );
    // errors in the fallback propagate
    let e = err("default(state.a, state.b)", json!({}));
    assert_eq!(e.message, "no such key: b");
    assert_eq!(e.range(), 23..24);
    // a null result is not an error: no fallback
    assert_eq!(ok("default(state.n, 1)", json!({"n": null})), Json::Null);
}

#[test]
fn default_primary_parse_error_uses_fallback() {
    let p = engine().compile("default(state.x +, 7)").unwrap();
    let pe = p.primary_error().expect("primary error");
    assert_eq!(pe.message, "unexpected end of expression");
    assert_eq!(pe.offset, 17);
    let state = json!({"x": 1});
    assert_eq!(
        engine().eval(&p, &Bindings::with_state(&state)).unwrap(),
        json!(7)
    );
    assert!(p.is_default_form());
    assert!(
        engine()
            .compile("default(1, 2)")
            .unwrap()
            .primary_error()
            .is_none()
    );
}

#[test]
fn default_must_be_the_whole_expression() {
    for src in [
        "default(state.a, 'b') + 'x'",
        "'x' + default(state.a, 'b')",
        "default(default(state.a, 1), 2)",
        "size(default (state.a, []))",
        "default(state.a, default(state.b, 1))",
    ] {
        let e = compile_err(src);
        assert_eq!(
            e.message, "default(...) must be the whole expression",
            "{src}"
        );
        assert!(e.hint.is_some());
    }
    let e = compile_err("'x' + default(state.a, 'b')");
    assert_eq!(e.range(), 6..14);
    let e = compile_err("default(state.a, 'b') + 'x'");
    assert_eq!(e.range(), 22..27);
    let e = compile_err("default(state.a)");
    assert!(
        e.message.starts_with("default() needs two arguments"),
        "{e:?}"
    );
    let e = compile_err("default(1, 2, 3)");
    assert!(
        e.message.starts_with("default() takes exactly two"),
        "{e:?}"
    );
    assert_eq!(e.offset, 12);
    // a fallback that does not parse is a compile error
    let e = compile_err("default(state.a, )");
    assert_eq!(e.message, "unexpected end of expression");
    // not the special form: a field or variable named like it
    assert_eq!(ok("state.default", json!({"default": 1})), json!(1));
    assert!(
        !engine()
            .compile("default_value(1)")
            .unwrap()
            .is_default_form()
    );
}

// --- compile errors --------------------------------------------------------------------------

#[test]
fn parse_error_offsets_and_messages() {
    let e = compile_err("state.x +");
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("unexpected end of expression", 9, 0)
    );
    assert!(e.hint.as_deref().unwrap().contains("a value is expected"));

    let e = compile_err("state.messages[");
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("unexpected end of expression", 15, 0)
    );
    assert_eq!(e.hint.as_deref(), Some("'[' is never closed"));

    let e = compile_err("\"unterminated");
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("unterminated string literal", 0, 13)
    );

    let e = compile_err("a ? b");
    assert_eq!(e.message, "unexpected end of expression");
    assert_eq!(e.offset, 5);
    assert!(e.hint.as_deref().unwrap().contains("cond ? a : b"), "{e:?}");

    // columns count characters, offsets are bytes
    let e = compile_err("'é🎉' + + )");
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("unexpected '+'", 11, 1)
    );

    let e = compile_err("state.x &&\n  é");
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("unexpected character 'é'", 13, 2)
    );

    let e = compile_err("a ++ b");
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("unexpected '+'", 3, 1)
    );

    let e = compile_err("");
    assert_eq!(
        (e.message.as_str(), e.offset),
        ("unexpected end of expression", 0)
    );

    let e = compile_err("has(state)");
    assert!(e.message.contains("has() macro"), "{e:?}");
    assert!(e.hint.is_some());

    for src in ["state.x +", "a ? b", "state.messages[", "x.y("] {
        let e = compile_err(src);
        assert!(!e.message.contains("Context"), "{src}: {e:?}");
        assert!(!e.message.contains("EOF"), "{src}: {e:?}");
    }
}

#[test]
fn too_long_or_too_deep_expressions_are_rejected() {
    let deep = format!("1{}", " + 1".repeat(MAX_EXPRESSION_DEPTH + 5));
    let e = compile_err(&deep);
    assert!(e.message.contains("nested too deeply"), "{e:?}");
    let chain = format!("1{}", " + 1".repeat(150));
    assert_eq!(ok(&chain, json!({})), json!(151));
    // long enough to be parsed on the big-stack thread
    let long = format!("1{}", "+1".repeat(3000));
    assert!(compile_err(&long).message.contains("nested too deeply"));
    let flat = format!("[{}]", vec!["1"; 2000].join(","));
    assert_eq!(ok(&format!("size({flat})"), json!({})), json!(2000));
    let huge = "1".repeat(MAX_EXPRESSION_LEN + 1);
    assert!(compile_err(&huge).message.contains("too long"));
    let parens = format!("{}1{}", "(".repeat(2000), ")".repeat(2000));
    let _ = engine().compile(&parens);
}

// --- runtime errors --------------------------------------------------------------------------

#[test]
fn runtime_errors_are_clean() {
    let e = err("state.counter > 1", json!({}));
    assert_eq!(
        e.to_string(),
        "no such key: counter (hint: use has(state.counter) or default(state.counter, <fallback>))"
    );
    assert_eq!(e.range(), 6..13);

    let e = err("state.a.b", json!({"a": {}}));
    assert_eq!(e.message, "no such key: b");
    assert_eq!(e.range(), 0..9);

    let e = err("state.count + 1.0", json!({"count": 1}));
    assert_eq!(e.message, "cannot apply '+' to int and double");
    assert!(e.hint.as_deref().unwrap().contains("2.0"));

    let e = err("1 + 'a'", json!({}));
    assert_eq!(e.message, "cannot apply '+' to int and string");

    let e = err("1 / 0", json!({}));
    assert_eq!(e.message, "division by zero");

    let e = err("[1][3]", json!({}));
    assert_eq!(e.message, "index 3 out of range");

    let e = err("9223372036854775807 + 1", json!({}));
    assert!(e.message.starts_with("integer overflow"), "{e:?}");

    let e = err("1 < 'a'", json!({}));
    assert!(!e.message.contains("Int("), "{e:?}");

    let e = err("count > 1", json!({"count": 1}));
    assert_eq!(e.message, "undeclared reference to 'count'");
    assert_eq!(
        e.hint.as_deref(),
        Some("state fields are read as state.count")
    );
    assert_eq!(e.range(), 0..5);

    for src in ["{null: 1}", "{'a': 1, 'a': 2}", "[1]['x']", "'abc'[0]"] {
        let e = err(src, json!({}));
        assert!(
            !e.message.contains("String(") && !e.message.contains("Null"),
            "{src}: {e:?}"
        );
    }
}

// --- references ------------------------------------------------------------------------------

#[test]
fn references_list_variables_functions_and_state_fields() {
    let src = "state.a > 1 && has(state.b) && state[\"c\"] == 'x' && state['d'].size() > 0 && json(prompts.p.instructions).ok && state.?e.hasValue()";
    let p = engine().compile(src).unwrap();
    let r = p.references();
    assert_eq!(
        r.variables,
        BTreeSet::from(["state".into(), "prompts".into()])
    );
    assert!(
        r.functions.contains("json")
            && r.functions.contains("size")
            && r.functions.contains("hasValue")
    );
    assert!(!r.functions.iter().any(|f| f.starts_with('_') || f == "has"));
    assert!(!r.whole_state);
    assert_eq!(r.variable_offsets["prompts"], src.find("prompts").unwrap());
    let fields: Vec<(&str, usize)> = r
        .state_fields
        .iter()
        .map(|(n, o)| (n.as_str(), *o))
        .collect();
    let expect: Vec<(&str, usize)> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|f| {
            let at = ["state.", "state[\"", "state['", "state.?"]
                .iter()
                .find_map(|pre| src.find(&format!("{pre}{f}")).map(|i| i + pre.len()))
                .unwrap();
            (*f, at)
        })
        .collect();
    assert_eq!(fields, expect);
    for (name, off) in &r.state_fields {
        assert_eq!(&src[*off..off + name.len()], name);
    }
}

#[test]
fn references_skip_comprehension_variables_and_types() {
    let p = engine()
        .compile("state.messages.exists(m, m.type == 'ai') && type(x) == int && items.map(i, i * 2).size() > 0")
        .unwrap();
    let r = p.references();
    assert_eq!(
        r.variables,
        BTreeSet::from(["state".into(), "x".into(), "items".into()])
    );
    assert_eq!(r.state_fields, vec![("messages".to_string(), 6)]);
    let p = engine()
        .compile("size(state) > 0 && state . count > 1")
        .unwrap();
    let r = p.references();
    assert!(r.whole_state);
    assert_eq!(r.state_fields, vec![("count".to_string(), 27)]);
    let p = engine().compile("optional.of(1).orValue(2)").unwrap();
    let r = p.references();
    assert!(r.variables.is_empty(), "{r:?}");
    assert!(r.functions.contains("optional.of"));
}

#[test]
fn references_of_default_form_union_both_parts() {
    let p = engine()
        .compile("default(state.a.b, state.c + llm_response.content)")
        .unwrap();
    let r = p.references();
    assert_eq!(
        r.state_fields,
        vec![("a".to_string(), 14), ("c".to_string(), 25)]
    );
    assert!(r.variables.contains("llm_response"));
    assert_eq!(r.variable_offsets["llm_response"], 29);
    assert_eq!(r.variable_offsets["state"], 8);
}

// --- engine sharing and performance ----------------------------------------------------------

#[test]
fn programs_and_engine_are_thread_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CelEngine>();
    assert_send_sync::<CelProgram>();
    assert_send_sync::<Bindings<'static>>();
    let p = engine().compile("state.n * 2").unwrap();
    std::thread::scope(|s| {
        for n in 0..4 {
            let p = p.clone();
            s.spawn(move || {
                let st = json!({"n": n});
                assert_eq!(
                    engine().eval(&p, &Bindings::with_state(&st)).unwrap(),
                    json!(n * 2)
                );
            });
        }
    });
}

fn big_state() -> Json {
    let messages: Vec<Json> = (0..20)
        .map(|i| json!({"type": if i % 2 == 0 {"human"} else {"ai"}, "content": format!("message {i} DONE"), "id": format!("m{i}"), "name": null, "additional_kwargs": {}, "tool_calls": []}))
        .collect();
    json!({"count": 2, "messages": messages, "topic": "x"})
}

/// `cargo test --release --lib expr::cel::tests::bench -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_eval() {
    let state = big_state();
    let b = Bindings::with_state(&state);
    for src in [
        "true",
        "state.count < 3",
        "state.messages[size(state.messages) - 1].content.contains('DONE') && state.count < 3",
        "default(state.missing, 1)",
        "size(state) > 0",
    ] {
        let p = engine().compile(src).unwrap();
        let n = 20_000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(engine().eval(&p, &b).unwrap());
        }
        println!(
            "{:>8.2} µs  {src}",
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );
    }
    let t = std::time::Instant::now();
    for _ in 0..200 {
        std::hint::black_box(engine().compile("state.count < 3 && has(state.x)").unwrap());
    }
    println!(
        "{:>8.2} µs  compile",
        t.elapsed().as_secs_f64() * 1e6 / 200.0
    );
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(src in ".{0,60}") {
        let state = big_state();
        if let Ok(p) = engine().compile(&src) {
            let b = Bindings::with_state(&state);
            let _ = engine().eval(&p, &b);
            let _ = engine().eval_bool(&p, &b);
            let _ = p.references();
        }
    }

    #[test]
    fn cel_like_text_never_panics(src in "(state|default|\\(|\\)|\\[|\\]|\\{|\\}|,|\\.|'|\"|\\\\|[0-9]|[a-z]|\\+|-|\\*|/|%|\\?|:|<|==|&&|\\|\\||!| |has|size|json|split|last|substring|template|é){0,30}") {
        let state = big_state();
        if let Ok(p) = engine().compile(&src) {
            let b = Bindings::with_state(&state);
            let _ = engine().eval(&p, &b);
            let _ = engine().eval_bool(&p, &b);
            let r = p.references();
            for (name, off) in r.state_fields {
                prop_assert!(off <= src.len() && src.is_char_boundary(off), "{name} at {off}");
            }
        } else if let Err(e) = engine().compile(&src) {
            prop_assert!(e.offset + e.len <= src.len());
            prop_assert!(src.is_char_boundary(e.offset) && src.is_char_boundary(e.offset + e.len));
        }
    }
}

#[test]
fn more_parse_messages() {
    let cases: &[(&str, &str, usize, usize)] = &[
        ("'\\q'", "invalid escape sequence in string literal", 0, 3),
        ("'open", "unterminated string literal", 0, 5),
        ("99999999999999999999", "invalid int literal", 0, 20),
        ("{'a' 1}", "missing ':' before '1'", 5, 1),
        ("[1,", "missing ']' at the end of the expression", 3, 0),
        ("x = 1", "unexpected character '='", 2, 1),
        ("'a' 'b'", "unexpected `'b'`", 4, 3),
    ];
    for (src, msg, off, len) in cases {
        let e = compile_err(src);
        assert_eq!(
            (e.message.as_str(), e.offset, e.len),
            (*msg, *off, *len),
            "{src}"
        );
    }
    let deep = format!("{}1{}", "(".repeat(120), ")".repeat(120));
    let e = compile_err(&deep);
    assert_eq!(
        (e.message.as_str(), e.offset, e.len),
        ("expression is nested too deeply", 0, deep.len())
    );
    assert_eq!(
        compile_err("x = 1").hint.as_deref(),
        Some("compare with ==")
    );
}

/// Found by the `cel_eval` fuzz target: an undeclared root-scope name (`.U`) is positioned at
/// its `U`; the error spanned the dotted name's length from there, past the end of the source.
#[test]
fn undeclared_leading_dot_name_stays_inside_the_source() {
    for (src, bare) in [(".U", "U"), (" . U", "U"), (".jo", "jo"), ("1 + .x.y", "x")] {
        let e = err(src, json!({}));
        assert!(e.message.contains("undeclared reference"), "{src}: {e:?}");
        assert!(e.offset + e.len <= src.len(), "{src}: {e:?}");
        assert_eq!(&src[e.offset..e.offset + e.len], bare, "{src}: {e:?}");
    }
}

/// Found by the `cel_eval` fuzz target: a name inside a macro's expansion (`x.optMap(y, 4)`
/// becomes a test and a call on `x`) carries the macro call's position, where the name is not
/// written; the error pointed at the `(` and ran past the end of the source. It now points at
/// the name as written.
#[test]
fn an_undeclared_name_in_a_macro_expansion_is_positioned_at_the_name() {
    for (src, name) in [("bytesgetMil.optMap(y, 4)", "bytesgetMil"), ("1 + zz.optMap(v, v + 1)", "zz"), ("[1].map(x, q)", "q")] {
        let e = err(src, json!({}));
        assert!(e.message.contains(&format!("undeclared reference to '{name}'")), "{src}: {e:?}");
        assert!(e.offset + e.len <= src.len(), "{src}: {e:?}");
        assert_eq!(&src[e.offset..e.offset + e.len], name, "{src}: {e:?}");
    }
}
