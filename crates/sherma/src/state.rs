//! The state of a sherma run and how node updates apply to it.
//!
//! - [`State::initial`]: every declared field gets its declared `default`, or the zero value of
//!   its type (`str` → `""`, `int` → `0`, `float` → `0.0`, `bool` → `false`, `list` → `[]`,
//!   `dict` → `{}`; a missing or unknown type counts as `str`, as upstream). The run input is
//!   then applied as the first update. **Divergence:** upstream parses `default`s but never
//!   applies them (fields are absent until written); we apply them so `state.count + 1` works
//!   from the first step.
//! - [`State::apply`]: sherma's reducers. `messages` uses the add-messages reducer (append; an
//!   incoming message whose non-null `id` equals an existing one replaces it in place; a string
//!   becomes a human message; a single message map is appended as one);
//!   every other field is overwritten. Keys not declared are kept too (upstream drops them; the
//!   validator warns about undeclared `state.x`).
//! - [`eval`]: a CEL expression with `state` bound and, for older files, every field as a bare
//!   name; explicit extra bindings (`llm_response`, `prompts`, `llms`, `data`) win over a bare
//!   field of the same name.
//! - [`run_set_state`] / [`run_data_transform`]: the updates of those two nodes.
//!   **Divergence:** a `data_transform` whose result is not a map is an error (upstream wraps it
//!   as `{result: <value>}`, which is silently dropped unless a `result` field exists).
//!
//! Snapshots are cheap: each field is an `Arc<Value>`, so [`State::snapshot`] clones pointers,
//! and the JSON view handed to CEL is built once per state version and shared.

use model::doc::sherma::{AgentDef, NodeArgs, NodeDef};
use expr::{Bindings, CelEngine, CelProgram};
use std::collections::HashMap;
use std::sync::RwLock;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The field that uses the add-messages reducer.
pub const MESSAGES: &str = "messages";

/// A run's state: field name → value, each value shared between snapshots. `messages` is kept
/// as a list of individually shared messages, so appending to a long history after a
/// checkpoint copies pointers, not messages.
#[derive(Clone, Debug, Default)]
pub struct State {
    fields: BTreeMap<String, Arc<Value>>,
    messages: Option<Arc<Vec<Arc<Value>>>>,
    /// `messages` as one JSON list, built on first use after each change.
    messages_json: OnceLock<Value>,
    /// The whole state as one JSON object, built on first use after each change.
    json: OnceLock<Arc<Value>>,
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields && self.messages == other.messages
    }
}

/// The zero value of a declared sherma type (anything unknown is `str`, as upstream).
pub fn type_default(ty: Option<&str>) -> Value {
    match ty.map(str::trim) {
        Some("int") => Value::from(0),
        Some("float") => Value::from(0.0),
        Some("bool") => Value::Bool(false),
        Some("list") => Value::Array(Vec::new()),
        Some("dict") => Value::Object(Map::new()),
        _ => Value::String(String::new()),
    }
}

impl State {
    /// An empty state (no fields).
    pub fn new() -> State {
        State::default()
    }

    /// The initial state of `agent`: declared defaults (or type zero values), then `input`
    /// (a JSON object, or `null` for none) applied as the first update.
    pub fn initial(agent: &AgentDef, input: &Value) -> Result<State, String> {
        let mut state = State::new();
        for f in &agent.state_fields {
            let name = f.name.value.clone();
            let value = match &f.default {
                Some(d) => d.clone(),
                None => type_default(f.ty.as_ref().map(|t| t.value.as_str())),
            };
            state.replace(&name, value);
        }
        match input {
            Value::Null => {}
            Value::Object(map) => state
                .apply(map)
                .map_err(|e| format!("run input for agent `{}`: {e}", agent.name.value))?,
            other => {
                return Err(format!(
                    "run input for agent `{}` must be a JSON object of state fields, not {}; \
                     pass e.g. {{\"messages\": [{{\"type\": \"human\", \"content\": \"hi\"}}]}}",
                    agent.name.value,
                    kind_of(other)
                ));
            }
        }
        Ok(state)
    }

    /// A field's value (`messages` is assembled into one list on first use after a change;
    /// hot paths use [`State::messages`]).
    pub fn get(&self, name: &str) -> Option<&Value> {
        if name == MESSAGES {
            let list = self.messages.as_ref()?;
            return Some(self.messages_json.get_or_init(|| Value::Array(list.iter().map(|m| m.as_ref().clone()).collect())));
        }
        self.fields.get(name).map(|v| v.as_ref())
    }

    /// The messages, each shared (empty when there are none).
    pub fn messages(&self) -> &[Arc<Value>] {
        self.messages.as_deref().map(Vec::as_slice).unwrap_or(&[])
    }

    /// Field names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.fields.keys().map(String::as_str).collect();
        if self.messages.is_some() {
            names.push(MESSAGES);
            names.sort_unstable();
        }
        names.into_iter()
    }

    fn changed(&mut self) {
        self.json = OnceLock::new();
    }

    /// Applies a node's update with sherma's reducers. Nothing changes if the update is
    /// rejected (a `messages` value that is not a message, a list of them, or a string).
    pub fn apply(&mut self, update: &Map<String, Value>) -> Result<(), String> {
        // Check everything first so a rejected update leaves the state untouched.
        let incoming = match update.get(MESSAGES) {
            Some(v) => Some(coerce_messages(v)?),
            None => None,
        };
        if update.is_empty() {
            return Ok(());
        }
        self.changed();
        for (key, value) in update {
            if key == MESSAGES {
                continue;
            }
            self.fields.insert(key.clone(), Arc::new(value.clone()));
        }
        if let Some(new) = incoming {
            self.messages_json = OnceLock::new();
            let list = Arc::make_mut(self.messages.get_or_insert_with(Default::default));
            for msg in new {
                let id = msg.get("id").filter(|i| !i.is_null());
                let pos = id.and_then(|id| list.iter().position(|m| m.get("id") == Some(id)));
                match pos {
                    Some(i) => list[i] = Arc::new(msg),
                    None => list.push(Arc::new(msg)),
                }
            }
        }
        Ok(())
    }

    /// Set a field directly, bypassing reducers (declared defaults, debugger edits). For
    /// `messages`, a list replaces the history (anything else empties it).
    pub fn replace(&mut self, name: &str, value: Value) {
        self.changed();
        if name == MESSAGES {
            self.messages_json = OnceLock::new();
            let items = coerce_messages(&value).unwrap_or_default();
            self.messages = Some(Arc::new(items.into_iter().map(Arc::new).collect()));
            return;
        }
        self.fields.insert(name.to_string(), Arc::new(value));
    }

    /// The whole state as a JSON object (shared; built once per state version).
    pub fn json(&self) -> &Value {
        self.json.get_or_init(|| {
            let mut map: Map<String, Value> = Map::new();
            for name in self.names() {
                if let Some(v) = self.get(name) {
                    map.insert(name.to_string(), v.clone());
                }
            }
            Arc::new(Value::Object(map))
        })
    }

    /// Only these fields (those present), as a JSON object.
    pub fn subset(&self, names: &[String]) -> Value {
        let mut m = Map::new();
        for n in names {
            if let Some(v) = self.get(n) {
                m.insert(n.clone(), v.clone());
            }
        }
        Value::Object(m)
    }

    /// The whole state as an owned JSON object.
    pub fn to_json(&self) -> Value {
        self.json().clone()
    }

    /// A copy that later [`State::apply`] calls do not affect. Cheap: clones `Arc`s only, and
    /// leaves the JSON views behind (a checkpoint must not pin whole-state copies).
    pub fn snapshot(&self) -> State {
        State { fields: self.fields.clone(), messages: self.messages.clone(), messages_json: OnceLock::new(), json: OnceLock::new() }
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// What the add-messages reducer accepts: a list of messages, one message (map), or a string
/// (a human message); a list item may also be a string or a `[role, content]` pair.
/// Every message is stored in LangChain's shape, which is what CEL expressions in real files
/// read (`m["type"] == "human"`, `m["additional_kwargs"]["decision"]`): `type` (`human`, `ai`,
/// `system`, `tool`; `role` is accepted as a synonym, `user`/`assistant` mapped), `content`,
/// `additional_kwargs` (`{}` when absent), and for `ai` messages `tool_calls` (`[]`).
fn coerce_messages(v: &Value) -> Result<Vec<Value>, String> {
    fn one(v: &Value) -> Result<Value, String> {
        match v {
            Value::Object(m) => Ok(normalize_message(m)),
            Value::String(s) => Ok(message("human", Value::String(s.clone()))),
            Value::Array(pair) if pair.len() == 2 && pair.iter().all(Value::is_string) => {
                let mut m = Map::new();
                m.insert("role".into(), pair[0].clone());
                m.insert("content".into(), pair[1].clone());
                Ok(normalize_message(&m))
            }
            other => Err(format!(
                "`messages` got {} ({other}); a message is a map such as \
                 {{\"type\": \"ai\", \"content\": \"...\"}}, a string, or a [role, content] pair",
                kind_of(other)
            )),
        }
    }
    match v {
        Value::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

/// A message of `kind` (`human`, `ai`, `system`, `tool`) in the stored shape.
pub fn message(kind: &str, content: Value) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(kind.into()));
    m.insert("content".into(), content);
    normalize_message(&m)
}

/// A message map in the stored shape (see [`State::apply`]).
pub fn normalize_message(m: &Map<String, Value>) -> Value {
    let mut out = m.clone();
    let kind = out
        .get("type")
        .or_else(|| out.get("role"))
        .and_then(Value::as_str)
        .map(|k| match k {
            "user" => "human",
            "assistant" | "AIMessage" => "ai",
            "HumanMessage" => "human",
            "developer" => "system",
            k => k,
        })
        .unwrap_or("human")
        .to_string();
    out.shift_remove("role");
    out.insert("type".into(), Value::String(kind.clone()));
    out.entry("content").or_insert(Value::String(String::new()));
    out.entry("additional_kwargs").or_insert_with(|| Value::Object(Map::new()));
    if kind == "ai" {
        out.entry("tool_calls").or_insert_with(|| Value::Array(Vec::new()));
    }
    Value::Object(out)
}

/// Evaluates a sherma CEL expression against `state`: `state` is bound, every field is also
/// bound under its bare name (older files), and `extra` adds `llm_response`, `prompts`, `llms`,
/// `data`, ... (an extra binding wins over a bare field of the same name).
pub fn eval(state: &State, expr: &str, extra: &[(&str, &Value)]) -> Result<Value, String> {
    let engine = CelEngine::shared();
    let c = compiled(expr)?;
    // Only the fields the expression can read are handed over: a state with a long message
    // history is not copied for `state.count + 1`.
    let partial;
    let state_json = match &c.fields {
        None => state.json(),
        Some(names) => {
            partial = state.subset(names);
            &partial
        }
    };
    let mut b = Bindings::with_state(state_json);
    b.all_fields_bare();
    for (name, value) in extra {
        b.set(*name, *value);
    }
    engine.eval(&c.program, &b).map_err(|e| {
        let mut m = format!("expression `{}` failed: {e}", expr.trim_end());
        if e.hint.is_none() {
            m.push_str(
                "; check the field names against the agent's `state.fields` \
                 (use `has(state.x)` or `default(state.x, ...)` for fields that may be absent)",
            );
        }
        m
    })
}

/// A compiled expression and the state fields it may read.
pub struct Compiled {
    pub program: CelProgram,
    /// `None`: the whole state (`size(state)`, `"x" in state`, ...); else these fields
    /// (read as `state.x` or as bare names).
    pub fields: Option<Vec<String>>,
}

/// A compiled expression from a process-wide cache (runs evaluate the same few expressions
/// thousands of times; compiling is most of an evaluation's cost).
pub fn compiled(expr: &str) -> Result<Arc<Compiled>, String> {
    static CACHE: OnceLock<RwLock<HashMap<String, Arc<Compiled>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(p) = cache.read().unwrap_or_else(|p| p.into_inner()).get(expr) {
        return Ok(p.clone());
    }
    let program = CelEngine::shared()
        .compile(expr)
        .map_err(|e| format!("expression `{}` does not compile: {e}; fix the CEL syntax", expr.trim_end()))?;
    let refs = program.references();
    let fields = if refs.whole_state {
        None
    } else {
        let mut names: Vec<String> = refs.state_fields.iter().map(|(n, _)| n.clone()).collect();
        // Bare field names (older files) are free variables.
        names.extend(refs.variables.iter().filter(|v| v.as_str() != "state").cloned());
        names.sort();
        names.dedup();
        Some(names)
    };
    let c = Arc::new(Compiled { program, fields });
    let mut w = cache.write().unwrap_or_else(|p| p.into_inner());
    if w.len() > 50_000 {
        w.clear(); // bounded: generated expressions must not grow the cache forever
    }
    w.insert(expr.to_string(), c.clone());
    Ok(c)
}

/// The update of a `set_state` node: each `values` entry evaluated against the pre-node state.
pub fn run_set_state(node: &NodeDef, state: &State) -> Result<Map<String, Value>, String> {
    run_set_state_with(node, state, &[])
}

/// [`run_set_state`] with extra bindings (`prompts`, `llms`, `data`).
pub fn run_set_state_with(
    node: &NodeDef,
    state: &State,
    extra: &[(&str, &Value)],
) -> Result<Map<String, Value>, String> {
    let NodeArgs::SetState { values } = &node.args else {
        return Err(format!(
            "node `{}` is a `{}` node, not `set_state`",
            node.name.value, node.kind.value
        ));
    };
    let mut out = Map::new();
    for (key, expr) in values {
        let v = eval(state, &expr.text, extra).map_err(|e| {
            format!(
                "set_state node `{}`, value `{}`: {e}",
                node.name.value, key.value
            )
        })?;
        out.insert(key.value.clone(), v);
    }
    Ok(out)
}

/// The update of a `data_transform` node: its `expression` must yield a map.
pub fn run_data_transform(node: &NodeDef, state: &State) -> Result<Map<String, Value>, String> {
    run_data_transform_with(node, state, &[])
}

/// [`run_data_transform`] with extra bindings (`prompts`, `llms`, `data`).
pub fn run_data_transform_with(
    node: &NodeDef,
    state: &State,
    extra: &[(&str, &Value)],
) -> Result<Map<String, Value>, String> {
    let name = &node.name.value;
    let NodeArgs::DataTransform { expression } = &node.args else {
        return Err(format!(
            "node `{name}` is a `{}` node, not `data_transform`",
            node.kind.value
        ));
    };
    let Some(expr) = expression else {
        return Err(format!(
            "data_transform node `{name}` has no `expression`; add `args: {{expression: '{{\"field\": ...}}'}}`"
        ));
    };
    match eval(state, &expr.text, extra)
        .map_err(|e| format!("data_transform node `{name}`: {e}"))?
    {
        Value::Object(map) => Ok(map),
        other => Err(format!(
            "data_transform node `{name}`: expression `{}` returned {} ({other}), but it must \
             return a map of state fields to update; wrap it, e.g. `{{\"result\": <expression>}}`",
            expr.text,
            kind_of(&other)
        )),
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use model::doc::{Model, load_str};
    use serde_json::json;
    use std::path::Path;

    fn agent(yaml: &str) -> AgentDef {
        let doc = load_str(Path::new("/tmp/agents/t/graph.yaml"), yaml);
        let Model::Sherma(d) = doc.model else {
            panic!("not sherma: {:?}", doc.diagnostics)
        };
        d.agents.into_iter().next().expect("an agent")
    }

    const DOC: &str = r#"
manifest_version: 1
agents:
  a:
    state:
      fields:
        - name: messages
          type: list
        - name: count
          type: int
        - name: ratio
          type: float
        - name: done
          type: bool
        - name: meta
          type: dict
        - name: title
        - name: greeting
          type: str
          default: hello
        - name: start
          type: int
          default: 5
        - name: maybe
          type: str
          default: null
    graph:
      entry_point: setter
      nodes:
        - name: setter
          type: set_state
          args:
            values:
              count: "count + 1"
              title: "'n=' + string(state.start)"
              done: "state.count >= 0"
        - name: shape
          type: data_transform
          args:
            expression: '{"count": state.count * 2, "messages": ["made " + string(count)]}'
        - name: scalar
          type: data_transform
          args:
            expression: "state.count + 1"
      edges:
        - source: setter
          target: shape
        - source: shape
          target: scalar
        - source: scalar
          target: __end__
"#;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn defaults_applied() {
        let a = agent(DOC);
        let s = State::initial(&a, &Value::Null).unwrap();
        assert_eq!(
            s.to_json(),
            json!({
                "messages": [], "count": 0, "ratio": 0.0, "done": false, "meta": {},
                "title": "", "greeting": "hello", "start": 5, "maybe": null
            })
        );
        assert!(s.get("count").unwrap().is_i64());
    }

    #[test]
    fn input_overrides_and_rejects_non_objects() {
        let a = agent(DOC);
        let s = State::initial(
            &a,
            &json!({"greeting": "hi", "count": 3, "messages": "hey"}),
        )
        .unwrap();
        assert_eq!(s.get("greeting"), Some(&json!("hi")));
        assert_eq!(s.get("count"), Some(&json!(3)));
        assert_eq!(s.get("start"), Some(&json!(5)));
        assert_eq!(
            s.get("messages"),
            Some(&json!([{"type": "human", "content": "hey", "additional_kwargs": {}}]))
        );
        let e = State::initial(&a, &json!([1])).unwrap_err();
        assert!(e.contains("agent `a`") && e.contains("JSON object"), "{e}");
    }

    #[test]
    fn messages_append_and_replace_by_id() {
        let mut s = State::new();
        s.apply(&map(
            json!({"messages": [{"id": "1", "role": "human", "content": "a"}]}),
        ))
        .unwrap();
        s.apply(&map(json!({"messages": [{"id": "2", "role": "ai", "content": "b"}, {"role": "ai", "content": "c"}]})))
            .unwrap();
        s.apply(&map(
            json!({"messages": {"id": "1", "role": "human", "content": "A"}}),
        ))
        .unwrap();
        s.apply(&map(
            json!({"messages": [{"id": null, "role": "ai", "content": "d"}]}),
        ))
        .unwrap();
        let contents: Vec<_> = s
            .get("messages")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].clone())
            .collect();
        assert_eq!(
            contents,
            vec![json!("A"), json!("b"), json!("c"), json!("d")]
        );
    }

    #[test]
    fn bad_messages_update_is_rejected_whole() {
        let mut s = State::new();
        s.apply(&map(json!({"count": 1}))).unwrap();
        let e = s
            .apply(&map(json!({"count": 2, "messages": [42]})))
            .unwrap_err();
        assert!(e.contains("`messages` got a number"), "{e}");
        assert_eq!(s.get("count"), Some(&json!(1)));
    }

    #[test]
    fn other_fields_overwrite() {
        let mut s = State::new();
        s.apply(&map(json!({"items": [1, 2], "n": 1}))).unwrap();
        s.apply(&map(json!({"items": [3]}))).unwrap();
        assert_eq!(s.to_json(), json!({"items": [3], "n": 1}));
    }

    #[test]
    fn cel_state_and_bare_names() {
        let mut s = State::new();
        s.apply(&map(json!({"count": 2, "name": "x", "gone": null})))
            .unwrap();
        assert_eq!(eval(&s, "state.count + 1", &[]).unwrap(), json!(3));
        assert_eq!(eval(&s, "count + 1", &[]).unwrap(), json!(3));
        assert!(eval(&s, "count + 1", &[]).unwrap().is_i64());
        assert_eq!(eval(&s, "state.gone", &[]).unwrap(), Value::Null);
        assert_eq!(eval(&s, "gone", &[]).unwrap(), Value::Null);
        let resp = json!({"role": "ai", "content": "ok"});
        assert_eq!(
            eval(
                &s,
                "llm_response.content + name",
                &[("llm_response", &resp)]
            )
            .unwrap(),
            json!("okx")
        );
        let e = eval(&s, "nope + 1", &[]).unwrap_err();
        assert!(e.contains("`nope + 1`"), "{e}");
        let e = eval(&s, "count +", &[]).unwrap_err();
        assert!(e.contains("does not compile"), "{e}");
    }

    #[test]
    fn set_state_and_data_transform() {
        let a = agent(DOC);
        let mut s = State::initial(&a, &json!({"count": 1})).unwrap();
        let up = run_set_state(a.node("setter").unwrap(), &s).unwrap();
        assert_eq!(
            Value::Object(up.clone()),
            json!({"count": 2, "title": "n=5", "done": true})
        );
        s.apply(&up).unwrap();
        let up = run_data_transform(a.node("shape").unwrap(), &s).unwrap();
        assert_eq!(
            Value::Object(up.clone()),
            json!({"count": 4, "messages": ["made 2"]})
        );
        s.apply(&up).unwrap();
        assert_eq!(s.get("count"), Some(&json!(4)));
        assert_eq!(
            s.get("messages"),
            Some(&json!([{"type": "human", "content": "made 2", "additional_kwargs": {}}]))
        );

        let e = run_data_transform(a.node("scalar").unwrap(), &s).unwrap_err();
        assert!(
            e.contains("node `scalar`") && e.contains("`state.count + 1`") && e.contains("a map"),
            "{e}"
        );
        let e = run_set_state(a.node("shape").unwrap(), &s).unwrap_err();
        assert!(e.contains("not `set_state`"), "{e}");
    }

    #[test]
    fn set_state_error_names_node_and_value() {
        let a = agent(
            r#"
manifest_version: 1
agents:
  b:
    state:
      fields:
        - name: n
          type: int
    graph:
      entry_point: s
      nodes:
        - name: s
          type: set_state
          args:
            values:
              n: "state.n + 1.0"
      edges:
        - source: s
          target: __end__
"#,
        );
        let s = State::initial(&a, &Value::Null).unwrap();
        let e = run_set_state(a.node("s").unwrap(), &s).unwrap_err();
        assert!(
            e.contains("node `s`") && e.contains("value `n`") && e.contains("`state.n + 1.0`"),
            "{e}"
        );
    }

    #[test]
    fn snapshot_is_independent() {
        let mut s = State::new();
        s.apply(&map(json!({"messages": ["a"], "n": 1}))).unwrap();
        let snap = s.snapshot();
        assert!(Arc::ptr_eq(&s.fields["n"], &snap.fields["n"]));
        let _ = s.json();
        s.apply(&map(json!({"messages": ["b"], "n": 2}))).unwrap();
        assert_eq!(
            snap.to_json(),
            json!({"messages": [{"type": "human", "content": "a", "additional_kwargs": {}}], "n": 1})
        );
        assert_eq!(s.get("n"), Some(&json!(2)));
        assert_eq!(s.get("messages").unwrap().as_array().unwrap().len(), 2);
        assert_eq!(eval(&s, "n", &[]).unwrap(), json!(2));
        assert_eq!(eval(&snap, "n", &[]).unwrap(), json!(1));
    }
}
