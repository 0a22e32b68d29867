//! An LLLM agent's *effective* config: what LLLM builds the agent from after the `base` chain
//! and `global` are deep-merged into its entry, with where every value came from.
//!
//! Pure: the layers (the configs of the `base` chain, already read) come in, the merged values
//! with their origins come out. The merge follows upstream's rules: mappings merge key by key,
//! lists and scalars replace; keys that are not agent keys become model arguments.

use super::schema::{AGENT_KEYS, DEFAULTS};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value as Json;
use syntax::source::{SourceFile, Span};
use syntax::yaml::{YKind, YNode};

/// One config of the `base` chain: its name (as `base` names it, or the file's stem), its
/// source and YAML tree.
#[derive(Clone, Copy)]
pub struct LayerRef<'a> {
    pub name: &'a str,
    pub file: &'a SourceFile,
    pub root: &'a YNode,
}

/// Which part of a config a value was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// The `global` mapping.
    Global,
    /// The agent's own entry.
    Agent,
    /// Not written anywhere: LLLM's default.
    Default,
}

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Origin {
    pub section: Section,
    /// The config's name (`default`, `pkg:experiments/base`); empty for defaults.
    pub config: String,
    /// The file (empty for defaults).
    pub file: String,
    /// 1-based line and column of the value (0 for defaults).
    pub line: u32,
    pub column: u32,
    #[serde(skip)]
    pub span: Option<Span>,
}

impl Origin {
    fn at(layer: &LayerRef, section: Section, span: Span) -> Origin {
        let lc = layer.file.line_col(span.start as usize);
        Origin {
            section,
            config: layer.name.to_string(),
            file: layer.file.path().display().to_string(),
            line: lc.line,
            column: lc.column,
            span: Some(span),
        }
    }
    fn default() -> Origin {
        Origin { section: Section::Default, config: String::new(), file: String::new(), line: 0, column: 0, span: None }
    }
    /// `global in configs/default.yaml:12`, `agent in pro.yaml:20`, `LLLM's default`.
    pub fn describe(&self) -> String {
        let name = std::path::Path::new(&self.file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match self.section {
            Section::Default => "LLLM's default".into(),
            Section::Global => format!("global in {name}:{}", self.line),
            Section::Agent => format!("the agent's entry in {name}:{}", self.line),
        }
    }
}

/// A value with its origin. Mappings keep an origin per key; a list is one value (lists
/// replace, they never merge).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PVal {
    Value { value: Json, from: Origin },
    Map { entries: IndexMap<String, PVal>, from: Origin },
}

impl PVal {
    pub fn from(&self) -> &Origin {
        match self {
            PVal::Value { from, .. } | PVal::Map { from, .. } => from,
        }
    }
    /// The plain JSON value, origins dropped.
    pub fn to_json(&self) -> Json {
        match self {
            PVal::Value { value, .. } => value.clone(),
            PVal::Map { entries, .. } => Json::Object(entries.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }
    fn of(node: &YNode, layer: &LayerRef, section: Section) -> PVal {
        let from = Origin::at(layer, section, node.span);
        match &node.kind {
            YKind::Map(entries) => PVal::Map {
                entries: entries.iter().map(|e| (e.key.key_text().to_string(), PVal::of(&e.value, layer, section))).collect(),
                from,
            },
            _ => PVal::Value { value: node.to_json(), from },
        }
    }
}

/// Deep merge: `over` wins, except that two mappings merge key by key.
pub fn merge(base: PVal, over: PVal) -> PVal {
    match (base, over) {
        (PVal::Map { entries: mut b, .. }, PVal::Map { entries: o, from }) => {
            for (k, v) in o {
                let merged = match b.shift_remove(&k) {
                    Some(old) => merge(old, v),
                    None => v,
                };
                b.insert(k, merged);
            }
            PVal::Map { entries: b, from }
        }
        (_, over) => over,
    }
}

fn merge_maps(base: &mut IndexMap<String, PVal>, over: IndexMap<String, PVal>) {
    for (k, v) in over {
        let merged = match base.shift_remove(&k) {
            Some(old) => merge(old, v),
            None => v,
        };
        base.insert(k, merged);
    }
}

/// One agent after `base` and `global`.
#[derive(Clone, Debug, Serialize)]
pub struct EffectiveAgent {
    pub name: String,
    /// Where the agent's entry is.
    pub from: Origin,
    /// The agent keys (`model_name`, `system_prompt_path`, the retry knobs, `skills`, …),
    /// LLLM's defaults filled in; `model_args` is not here but in [`EffectiveAgent::model_args`].
    pub config: IndexMap<String, PVal>,
    /// `model_args` after the merge, plus every key that is not an agent key.
    pub model_args: IndexMap<String, PVal>,
    /// Keys that are not agent keys, turned into model arguments (as LLLM does).
    pub moved_to_model_args: Vec<String>,
    /// List keys (`skills`, `tools`) the agent's entry sets while `global` sets them too: the
    /// agent's list replaces the global one.
    pub replaced_lists: Vec<String>,
}

impl EffectiveAgent {
    pub fn get(&self, key: &str) -> Option<&PVal> {
        self.config.get(key)
    }
    /// A string value of the config (`model_name`, `system_prompt_path`).
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.config.get(key)? {
            PVal::Value { value: Json::String(s), .. } => Some(s),
            _ => None,
        }
    }
}

/// The whole effective config of a file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Effective {
    /// `global` after the `base` chain.
    pub global: IndexMap<String, PVal>,
    /// The other top-level keys after the chain (what the tactic reads: `tactic_type`, …).
    pub top: IndexMap<String, PVal>,
    /// The agents, in the order of the agent list that wins.
    pub agents: Vec<EffectiveAgent>,
    /// The config whose agent list is used (lists replace: the last one in the chain that has one).
    pub agents_from: Option<String>,
}

/// Keys that hold the agent list, newest shape first.
const AGENT_LIST_KEYS: [&str; 2] = ["agent_configs", "agent_group_configs"];

/// The effective config of the last layer, its bases before it (furthest base first).
pub fn effective(layers: &[LayerRef]) -> Effective {
    let mut out = Effective::default();
    // Agent entries by name, each with the layer they were written in.
    let mut agents: IndexMap<String, PVal> = IndexMap::new();
    for layer in layers {
        let Some(entries) = layer.root.as_map() else { continue };
        for e in entries {
            let key = e.key.key_text();
            match key {
                "base" => {}
                "global" => {
                    if let PVal::Map { entries, .. } = PVal::of(&e.value, layer, Section::Global) {
                        merge_maps(&mut out.global, entries);
                    }
                }
                k if AGENT_LIST_KEYS.contains(&k) => match &e.value.kind {
                    // The current shape: a list replaces the list of the bases.
                    YKind::Seq(items) => {
                        agents.clear();
                        for item in items {
                            let Some(name) = item.get("name").and_then(|n| n.scalar_text()) else { continue };
                            if let PVal::Map { entries, from } = PVal::of(item, layer, Section::Agent) {
                                agents.insert(name.to_string(), PVal::Map { entries, from });
                            }
                        }
                        out.agents_from = Some(layer.name.to_string());
                    }
                    // The older shapes: a mapping keyed by agent name merges like any mapping.
                    YKind::Map(named) => {
                        for n in named {
                            let name = n.key.key_text().to_string();
                            let mut v = PVal::of(&n.value, layer, Section::Agent);
                            if let PVal::Map { entries, from } = &mut v {
                                *from = Origin::at(layer, Section::Agent, n.key.span);
                                entries.shift_remove("name");
                            } else {
                                continue;
                            }
                            let merged = match agents.shift_remove(&name) {
                                Some(old) => merge(old, v),
                                None => v,
                            };
                            agents.insert(name, merged);
                        }
                        out.agents_from = Some(layer.name.to_string());
                    }
                    _ => {}
                },
                _ => {
                    let v = PVal::of(&e.value, layer, Section::Agent);
                    let merged = match out.top.shift_remove(key) {
                        Some(old) => merge(old, v),
                        None => v,
                    };
                    out.top.insert(key.to_string(), merged);
                }
            }
        }
    }
    for (name, entry) in agents {
        out.agents.push(agent(&name, &out.global, entry));
    }
    out
}

fn agent(name: &str, global: &IndexMap<String, PVal>, entry: PVal) -> EffectiveAgent {
    let PVal::Map { entries: own, from } = entry else { unreachable!("agent entries are mappings") };
    let replaced_lists = ["skills", "tools"]
        .iter()
        .filter(|k| own.contains_key(**k) && global.contains_key(**k))
        .map(|k| k.to_string())
        .collect();
    let mut merged = global.clone();
    merge_maps(&mut merged, own);
    let mut config = IndexMap::new();
    let mut model_args = IndexMap::new();
    let mut moved = Vec::new();
    let mut extra = Vec::new();
    for (k, v) in merged {
        if k == "model_args" {
            match v {
                PVal::Map { entries, .. } => model_args = entries,
                other => {
                    config.insert(k, other);
                }
            }
        } else if AGENT_KEYS.contains(&k.as_str()) {
            config.insert(k, v);
        } else {
            moved.push(k.clone());
            extra.push((k, v));
        }
    }
    // Keys outside `model_args` are added on top of it.
    for (k, v) in extra {
        model_args.insert(k, v);
    }
    for (k, v) in DEFAULTS {
        if !config.contains_key(*k) {
            config.insert(k.to_string(), PVal::Value { value: v(), from: Origin::default() });
        }
    }
    EffectiveAgent { name: name.to_string(), from, config, model_args, moved_to_model_args: moved, replaced_lists }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syntax::yaml;

    fn layer(path: &str, text: &str) -> (SourceFile, YNode) {
        let f = SourceFile::new(path, text);
        let root = yaml::parse(&f).root.unwrap();
        (f, root)
    }

    fn run(files: &[(&str, &str)]) -> Effective {
        let parsed: Vec<(String, SourceFile, YNode)> = files
            .iter()
            .map(|(p, t)| {
                let (f, r) = layer(p, t);
                (std::path::Path::new(p).file_stem().unwrap().to_string_lossy().into_owned(), f, r)
            })
            .collect();
        let refs: Vec<LayerRef> = parsed.iter().map(|(n, f, r)| LayerRef { name: n, file: f, root: r }).collect();
        effective(&refs)
    }

    fn val<'a>(m: &'a IndexMap<String, PVal>, k: &str) -> &'a PVal {
        m.get(k).unwrap_or_else(|| panic!("no `{k}` in {:?}", m.keys().collect::<Vec<_>>()))
    }

    #[test]
    fn global_merges_into_each_agent_and_the_agent_wins() {
        let e = run(&[(
            "c/default.yaml",
            "global:\n  model_name: gpt-4o\n  model_args:\n    temperature: 0.1\n    max_tokens: 10\nagent_configs:\n  - name: a\n    model_args:\n      temperature: 0.9\n  - name: b\n    model_name: mini\n",
        )]);
        assert_eq!(e.agents.len(), 2);
        let a = &e.agents[0];
        assert_eq!(a.name, "a");
        assert_eq!(a.str("model_name"), Some("gpt-4o"));
        assert_eq!(a.get("model_name").unwrap().from().section, Section::Global);
        assert_eq!(a.get("model_name").unwrap().from().line, 2);
        let t = val(&a.model_args, "temperature");
        assert_eq!(t.to_json(), serde_json::json!(0.9));
        assert_eq!((t.from().section, t.from().line), (Section::Agent, 9));
        let m = val(&a.model_args, "max_tokens");
        assert_eq!((m.to_json(), m.from().section, m.from().line), (serde_json::json!(10), Section::Global, 5));
        let b = &e.agents[1];
        assert_eq!(b.str("model_name"), Some("mini"));
        assert_eq!(b.get("model_name").unwrap().from().line, 11);
        assert_eq!(val(&b.model_args, "temperature").to_json(), serde_json::json!(0.1));
    }

    #[test]
    fn defaults_fill_the_retry_knobs() {
        let e = run(&[("x.yaml", "global:\n  max_exception_retry: 1\nagent_configs:\n  - name: a\n")]);
        let a = &e.agents[0];
        let r = a.get("max_exception_retry").unwrap();
        assert_eq!((r.to_json(), r.from().section), (serde_json::json!(1), Section::Global));
        let s = a.get("max_interrupt_steps").unwrap();
        assert_eq!((s.to_json(), s.from().section), (serde_json::json!(5), Section::Default));
        assert_eq!(a.get("max_llm_recall").unwrap().to_json(), serde_json::json!(0));
    }

    #[test]
    fn unknown_keys_become_model_args_over_model_args() {
        let e = run(&[(
            "x.yaml",
            "global:\n  chain_level: 1\nagent_configs:\n  - name: a\n    temperature: 0.3\n    model_args: {temperature: 0.5, top_p: 1}\n",
        )]);
        let a = &e.agents[0];
        assert_eq!(a.moved_to_model_args, vec!["chain_level".to_string(), "temperature".to_string()]);
        assert_eq!(val(&a.model_args, "temperature").to_json(), serde_json::json!(0.3));
        assert_eq!(val(&a.model_args, "temperature").from().line, 5);
        assert_eq!(val(&a.model_args, "chain_level").from().section, Section::Global);
        assert_eq!(val(&a.model_args, "top_p").to_json(), serde_json::json!(1));
        assert!(a.get("temperature").is_none());
    }

    #[test]
    fn the_base_chain_merges_mappings_and_replaces_lists() {
        let base = "global:\n  model_name: gpt-4o\n  skills: [pdf, commit]\n  model_args:\n    temperature: 0.1\nagent_configs:\n  - name: analyzer\n    system_prompt_path: research/system\n  - name: other\n";
        let mid = "base: base\nglobal:\n  model_args:\n    max_tokens: 500\n";
        let top = "base: mid\nglobal:\n  model_name: o4-mini\n  skills: [review]\nagent_configs:\n  - name: analyzer\n    system_prompt_path: research/no_cot\n    skills: []\n";
        let e = run(&[("c/base.yaml", base), ("c/mid.yaml", mid), ("c/top.yaml", top)]);
        assert_eq!(e.agents_from.as_deref(), Some("top"));
        assert_eq!(e.agents.len(), 1, "the list of the last config replaces the bases' list");
        let a = &e.agents[0];
        let m = a.get("model_name").unwrap();
        assert_eq!((m.to_json(), m.from().config.as_str(), m.from().line), (serde_json::json!("o4-mini"), "top", 3));
        let t = val(&a.model_args, "temperature");
        assert_eq!((t.to_json(), t.from().config.as_str()), (serde_json::json!(0.1), "base"));
        let mt = val(&a.model_args, "max_tokens");
        assert_eq!((mt.to_json(), mt.from().config.as_str(), mt.from().line), (serde_json::json!(500), "mid", 4));
        assert_eq!(a.get("skills").unwrap().to_json(), serde_json::json!([]));
        assert_eq!(a.replaced_lists, vec!["skills".to_string()]);
        assert_eq!(e.global.get("skills").unwrap().to_json(), serde_json::json!(["review"]));
        assert!(a.from.file.ends_with("top.yaml"));
    }

    #[test]
    fn a_base_agent_list_is_used_when_the_file_has_none() {
        let e = run(&[
            ("default.yaml", "agent_configs:\n  - name: a\n    system_prompt: hi\n"),
            ("dev.yaml", "base: default\nglobal:\n  model_name: m\n"),
        ]);
        assert_eq!(e.agents_from.as_deref(), Some("default"));
        let a = &e.agents[0];
        assert_eq!(a.str("model_name"), Some("m"));
        assert_eq!(a.get("model_name").unwrap().from().config, "dev");
        assert_eq!(a.get("system_prompt").unwrap().from().config, "default");
    }

    #[test]
    fn older_mapping_shapes_give_agents_named_by_their_keys() {
        let e = run(&[("old.yaml", "agent_group_configs:\n  researcher:\n    model_name: gpt-4o\n    temperature: 0.3\n  writer:\n    model_name: gpt-4o\n")]);
        let names: Vec<&str> = e.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["researcher", "writer"]);
        assert_eq!(e.agents[0].from.line, 2);
        assert_eq!(val(&e.agents[0].model_args, "temperature").to_json(), serde_json::json!(0.3));
    }

    #[test]
    fn top_level_keys_are_kept_for_the_tactic() {
        let e = run(&[("a.yaml", "tactic_type: x\nagent_configs: []\n"), ("b.yaml", "base: a\nagent_configs: []\n")]);
        assert_eq!(e.top.get("tactic_type").unwrap().from().config, "a");
        assert!(e.agents.is_empty());
    }
}
