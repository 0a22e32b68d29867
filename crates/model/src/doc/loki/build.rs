//! Building the Loki model from the YAML tree: schema checks and upstream's parser checks
//! (reference/loki.md §3) become diagnostics; as much of the model as can be read is returned.

use super::model::{
    AgentNode, ApprovalNode, EndNode, InputNode, LlmNode, LokiDoc, LokiNode, MapNode,
    MaxConcurrency, McpTools, NodeBody, RagNode, Reducer, ReducerDecl, ScriptNode, SkillsPolicy,
    TemplateText, Variable, short_list,
};
use super::schema::{END_NODE, GRAPH_DEF, NODE_TYPES, SUPPORTED_VERSIONS, node_schema};
use crate::doc::Sp;
use crate::doc::schema::{Checker, head_span};
use expr::template::check_input_validation;
use serde_json::Value;
use std::path::Path;
use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::SourceFile;
use syntax::yaml::{ScalarValue, YNode};

struct Builder<'a> {
    file: &'a SourceFile,
    base_dir: &'a Path,
    diags: &'a mut Vec<Diagnostic>,
}

impl Builder<'_> {
    fn checker(&mut self) -> Checker<'_> {
        Checker::new(self.file, self.diags)
    }

    /// Any non-null scalar, as written (the checker reports wrong types).
    fn sp_str(&self, node: Option<&YNode>) -> Option<Sp<String>> {
        let n = node?;
        Some(Sp::new(n.scalar_text()?.to_string(), n.span))
    }

    fn string(&self, node: Option<&YNode>) -> Option<String> {
        node.and_then(|n| n.scalar_text()).map(str::to_string)
    }

    /// A scalar that upstream types as a string: numbers and booleans are errors.
    fn strict_str(&mut self, node: Option<&YNode>, what: &str) -> Option<Sp<String>> {
        let n = node?;
        self.checker().expect_string_strict(n, what);
        self.sp_str(Some(n))
    }

    fn template(&self, node: Option<&YNode>) -> Option<TemplateText> {
        let n = node?;
        let text = n.scalar_text()?;
        Some(TemplateText {
            text: text.to_string(),
            node: n.clone(),
        })
    }

    fn u64_field(&self, node: Option<&YNode>) -> Option<Sp<u64>> {
        let n = node?;
        let v = n.as_i64().filter(|v| *v >= 0)?;
        Some(Sp::new(v as u64, n.span))
    }

    fn f64_field(&self, node: Option<&YNode>) -> Option<f64> {
        node?.as_f64()
    }

    fn bool_field(&self, node: Option<&YNode>) -> Option<bool> {
        node?.as_bool()
    }

    fn sp_bool(&self, node: Option<&YNode>) -> Option<Sp<bool>> {
        let n = node?;
        Some(Sp::new(n.as_bool()?, n.span))
    }

    /// `mcp_tools:` — server -> list of glob patterns (the checker reports wrong shapes).
    fn mcp_tools(&mut self, node: Option<&YNode>, what: &str) -> Option<McpTools> {
        let n = node.filter(|n| !n.is_null())?;
        let entries = n.as_map()?;
        let mut out = McpTools {
            servers: Vec::new(),
            span: n.span,
        };
        for e in entries {
            let server = Sp::new(e.key.key_text().to_string(), e.key.span);
            let pats = self
                .strict_list(
                    Some(&e.value),
                    &format!("`mcp_tools.{}` of {what}", server.value),
                )
                .unwrap_or_default();
            match out.servers.iter_mut().find(|(s, _)| s.value == server.value) {
                Some(slot) => *slot = (server, pats),
                None => out.servers.push((server, pats)),
            }
        }
        Some(out)
    }

    /// Map `max_concurrency`: an integer, or (coyote 0.10.3) a `"{{key}}"` template.
    fn max_concurrency(&self, node: Option<&YNode>) -> Option<Sp<MaxConcurrency>> {
        let n = node?;
        if let Some(v) = n.as_i64() {
            return (v >= 0).then(|| Sp::new(MaxConcurrency::Fixed(v as u64), n.span));
        }
        let t = self.template(Some(n))?;
        n.as_scalar()
            .filter(|s| s.value == ScalarValue::Str)
            .map(|_| Sp::new(MaxConcurrency::Template(t), n.span))
    }

    /// A list of strings upstream types as `Vec<String>`.
    fn strict_list(&mut self, node: Option<&YNode>, what: &str) -> Option<Vec<Sp<String>>> {
        let items = node?.as_seq()?;
        let mut out = Vec::new();
        for (i, it) in items.iter().enumerate() {
            if let Some(s) = self.strict_str(Some(it), &format!("item {} of {what}", i + 1)) {
                out.push(s);
            }
        }
        Some(out)
    }

    /// `next`-like: a string or a list of strings. Returns the entries and whether it was a list.
    fn node_refs(&self, node: Option<&YNode>) -> (Vec<Sp<String>>, bool) {
        let Some(n) = node else {
            return (Vec::new(), false);
        };
        match n.as_seq() {
            Some(items) => (
                items.iter().filter_map(|i| self.sp_str(Some(i))).collect(),
                true,
            ),
            None => (self.sp_str(Some(n)).into_iter().collect(), false),
        }
    }

    fn state_updates(
        &mut self,
        node: Option<&YNode>,
        what: &str,
    ) -> Option<Vec<(Sp<String>, TemplateText)>> {
        self.template_map(node, "state_updates", what)
    }

    /// A mapping of key -> template (`state_updates`, agent `inputs`), later duplicates replacing
    /// earlier ones in place.
    fn template_map(
        &mut self,
        node: Option<&YNode>,
        field: &str,
        what: &str,
    ) -> Option<Vec<(Sp<String>, TemplateText)>> {
        let n = node?;
        if n.is_null() {
            return None;
        }
        let entries = n.as_map()?;
        let mut out: Vec<(Sp<String>, TemplateText)> = Vec::new();
        for e in entries {
            let key = e.key.key_text().to_string();
            self.checker()
                .expect_string_strict(&e.value, &format!("`{key}` of the {field} of {what}"));
            let Some(t) = self.template(Some(&e.value)) else {
                continue;
            };
            let k = Sp::new(key, e.key.span);
            match out.iter_mut().find(|(x, _)| x.value == k.value) {
                Some(slot) => *slot = (k, t),
                None => out.push((k, t)),
            }
        }
        Some(out)
    }

    fn json(&self, node: Option<&YNode>) -> Option<Sp<Value>> {
        let n = node.filter(|n| !n.is_null())?;
        Some(Sp::new(n.to_json(), n.span))
    }

    fn skills(&mut self, node: &YNode, what: &str) -> SkillsPolicy {
        let es = node.get("enabled_skills");
        SkillsPolicy {
            skills_enabled: self.bool_field(node.get("skills_enabled")),
            enabled_skills: self.strict_list(es, &format!("`enabled_skills` of {what}")),
            enabled_skills_span: es.filter(|n| !n.is_null()).map(|n| n.span),
            inject_skill_instructions: self.bool_field(node.get("inject_skill_instructions")),
            skill_instructions: self.string(node.get("skill_instructions")),
        }
    }
}

/// Build the Loki model from a parsed tree. Structural problems and upstream's parser checks
/// (§3) become diagnostics; as much of the model as can be read is returned.
pub fn build(
    file: &SourceFile,
    root: Option<&YNode>,
    base_dir: &Path,
    diags: &mut Vec<Diagnostic>,
) -> LokiDoc {
    let mut doc = LokiDoc {
        agent_dir: base_dir.to_path_buf(),
        initial_state: Value::Object(Default::default()),
        ..Default::default()
    };
    let Some(root) = root else { return doc };
    doc.nodes_span = head_span(file, root);
    let mut b = Builder {
        file,
        base_dir,
        diags,
    };
    if !b
        .checker()
        .check_obj_except(root, &GRAPH_DEF, "the graph", &["nodes", "version"])
    {
        return doc;
    }

    // Graph-level fields.
    if let Some(e) = root.entry("name") {
        doc.name_span = Some(e.value.span);
        if let Some(t) = e.value.scalar_text() {
            doc.name = Some(t.to_string());
            if t.trim().is_empty() {
                b.diags.push(
                    Diagnostic::error("loki-name", "Graph must have a non-empty 'name' field")
                        .at(file, e.value.span)
                        .hint("give the graph a name, usually the agent directory's name"),
                );
            }
        }
    }
    doc.description = b.string(root.get("description"));
    doc.model = b.sp_str(root.get("model"));
    doc.temperature = b.f64_field(root.get("temperature"));
    doc.top_p = b.f64_field(root.get("top_p"));
    doc.reasoning_effort = b.string(root.get("reasoning_effort"));
    doc.global_tools = b
        .strict_list(root.get("global_tools"), "`global_tools`")
        .unwrap_or_default();
    doc.mcp_servers = b
        .strict_list(root.get("mcp_servers"), "`mcp_servers`")
        .unwrap_or_default();
    doc.mcp_tools = b.mcp_tools(root.get("mcp_tools"), "the graph");
    doc.max_concurrent_jobs = b.u64_field(root.get("max_concurrent_jobs"));
    doc.can_spawn_agents = b.sp_bool(root.get("can_spawn_agents"));
    doc.max_concurrent_agents = b.u64_field(root.get("max_concurrent_agents"));
    doc.max_agent_depth = b.u64_field(root.get("max_agent_depth"));
    doc.skills = b.skills(root, "the graph");
    doc.conversation_starters = root
        .get("conversation_starters")
        .and_then(|n| n.as_seq())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.scalar_text().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if let Some(items) = root.get("variables").and_then(|n| n.as_seq()) {
        for it in items {
            let Some(name) = b.sp_str(it.get("name")) else {
                continue;
            };
            doc.variables.push(Variable {
                name,
                description: b.string(it.get("description")),
                default: b.string(it.get("default")),
            });
        }
    }
    if let Some(s) = root.get("settings").filter(|s| s.as_map().is_some()) {
        let st = &mut doc.settings;
        st.span = Some(s.span);
        for e in s.as_map().unwrap_or(&[]) {
            st.value_spans
                .push((e.key.key_text().to_string(), e.value.span));
        }
        if let Some(v) = s
            .get("max_loop_iterations")
            .and_then(|n| n.as_i64())
            .filter(|v| *v >= 0)
        {
            st.max_loop_iterations = v as u64;
        }
        st.timeout = s
            .get("timeout")
            .and_then(|n| n.as_i64())
            .filter(|v| *v >= 0)
            .map(|v| v as u64);
        if let Some(v) = s.get("log_state_snapshots").and_then(|n| n.as_bool()) {
            st.log_state_snapshots = v;
        }
        if let Some(v) = s.get("validate_before_run").and_then(|n| n.as_bool()) {
            st.validate_before_run = v;
        }
        if let Some(v) = s
            .get("max_concurrency")
            .and_then(|n| n.as_i64())
            .filter(|v| *v >= 0)
        {
            st.max_concurrency = v as u64;
        }
    }
    if let Some(is) = root.get("initial_state").filter(|n| n.as_map().is_some()) {
        doc.initial_state = is.to_json();
        doc.initial_state_keys = is
            .as_map()
            .unwrap_or(&[])
            .iter()
            .map(|e| Sp::new(e.key.key_text().to_string(), e.key.span))
            .collect();
    }
    if let Some(rs) = root.get("reducers").and_then(|n| n.as_map()) {
        for e in rs {
            let Some(r) = e.value.scalar_text().and_then(Reducer::parse) else {
                continue;
            };
            doc.reducers.push(ReducerDecl {
                key: Sp::new(e.key.key_text().to_string(), e.key.span),
                reducer: Sp::new(r, e.value.span),
            });
        }
    }
    doc.start = b.sp_str(root.get("start"));

    // Version (§3 step 2): unquoted `1.0` is read as the string "1.0" upstream.
    if let Some(e) = root.entry("version") {
        let v = &e.value;
        match v.as_scalar() {
            Some(s) if s.value != ScalarValue::Null => {
                doc.version = Some(Sp::new(s.text.clone(), v.span));
                if !SUPPORTED_VERSIONS.contains(&s.text.as_str()) {
                    b.diags.push(
                        Diagnostic::error(
                            "loki-version",
                            format!(
                                "Unsupported graph schema version '{}'. Supported versions: {}",
                                s.text,
                                SUPPORTED_VERSIONS.join(", ")
                            ),
                        )
                        .at(file, v.span)
                        .hint("write `version: \"1.0\"` (the only graph schema version)"),
                    );
                }
            }
            _ => b.diags.push(
                Diagnostic::error(
                    "loki-version",
                    format!(
                        "`version` must be the string \"1.0\", found {}",
                        v.describe()
                    ),
                )
                .at(file, v.span)
                .hint("write `version: \"1.0\"`, or remove the key (the default is \"1.0\")"),
            ),
        }
    }

    // Nodes (§3 step 3).
    match root.entry("nodes") {
        None => b.diags.push(
            Diagnostic::error(
                "missing-field",
                "the graph is missing required field `nodes`",
            )
            .at(file, head_span(file, root))
            .hint("add `nodes:` with at least one node, keyed by id"),
        ),
        Some(e) => {
            doc.nodes_span = e.key.span;
            match e.value.as_map() {
                Some(entries) => {
                    let mut pos: std::collections::HashMap<String, usize> = Default::default();
                    for ne in entries {
                        let id = Sp::new(ne.key.key_text().to_string(), ne.key.span);
                        let Some(node) = build_node(&mut b, id, &ne.value) else {
                            continue;
                        };
                        match pos.get(&node.id.value) {
                            Some(&i) => doc.nodes[i] = node,
                            None => {
                                pos.insert(node.id.value.clone(), doc.nodes.len());
                                doc.nodes.push(node);
                            }
                        }
                    }
                }
                None if e.value.is_null() => {}
                None => b.diags.push(
                    Diagnostic::error(
                        "wrong-type",
                        format!(
                            "`nodes` must be a mapping of node ids to nodes, found {}",
                            e.value.describe()
                        ),
                    )
                    .at(file, e.value.span)
                    .hint("write each node as `<id>:` followed by its fields, indented"),
                ),
            }
        }
    }

    // §3 steps 5 and 6.
    let graph_name = doc.name.clone().unwrap_or_default();
    if doc.nodes.is_empty() {
        if let Some(e) = root
            .entry("nodes")
            .filter(|e| e.value.as_map().is_some() || e.value.is_null())
        {
            b.diags.push(
                Diagnostic::error(
                    "loki-no-nodes",
                    format!("Graph '{graph_name}' has no nodes defined"),
                )
                .at(file, e.key.span)
                .hint("add at least one node under `nodes:`, and an `end` node to finish"),
            );
        }
    } else if let Some(start) = &doc.start
        && !doc.has_node(&start.value)
    {
        let ids: Vec<&str> = doc.node_ids().collect();
        let hint = match did_you_mean(&start.value, ids.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? `start` names the first node to run"),
            None => "`start` names the first node to run; it must be one of the ids under `nodes:`"
                .into(),
        };
        b.diags.push(
            Diagnostic::error(
                "loki-start",
                format!(
                    "Start node '{}' not found in graph '{graph_name}'. Available nodes: {}",
                    start.value,
                    short_list(ids.iter().copied())
                ),
            )
            .at(file, start.span)
            .hint(hint),
        );
    }
    doc
}

fn build_node(b: &mut Builder<'_>, id: Sp<String>, node: &YNode) -> Option<LokiNode> {
    let what = format!("node `{}`", id.value);
    if node.as_map().is_none() {
        b.checker().check_obj(node, &END_NODE, &what);
        return None;
    }
    // Type first: it selects the schema.
    let type_node = node.get("type");
    let kind = match type_node {
        Some(t) if !t.is_null() => b
            .sp_str(Some(t))
            .unwrap_or_else(|| Sp::new(String::new(), t.span)),
        _ => {
            let span = node.entry("type").map(|e| e.key.span).unwrap_or(id.span);
            b.diags.push(
                Diagnostic::error(
                    "missing-field",
                    format!("{what} is missing required field `type`"),
                )
                .at(b.file, span)
                .hint(format!("add `type:` (one of {})", NODE_TYPES.join(", "))),
            );
            Sp::new(String::new(), span)
        }
    };
    let schema = node_schema(&kind.value);
    match schema {
        Some(s) => {
            b.checker().check_obj_except(node, s, &what, &["type"]);
        }
        None if !kind.value.is_empty() || type_node.is_some_and(|t| !t.is_null()) => {
            let hint = match did_you_mean(&kind.value, NODE_TYPES.iter().copied()) {
                Some(s) => format!("did you mean `{s}`? Node types: {}", NODE_TYPES.join(", ")),
                None => format!("node types: {}", NODE_TYPES.join(", ")),
            };
            b.diags.push(
                Diagnostic::error(
                    "loki-node-type",
                    format!("unknown node type '{}' on {what}", kind.value),
                )
                .at(b.file, kind.span)
                .hint(hint),
            );
        }
        None => {}
    }
    if schema.is_none() {
        // No schema check ran: still say why keys from a `<<` merge are missing.
        for e in node.as_map().unwrap_or(&[]) {
            if crate::doc::schema::is_merge_key(&e.key) {
                b.diags.push(crate::doc::schema::merge_key_error(b.file, &e.key, &what));
            }
        }
    }

    // Node id (§3 step 3).
    let id_field = b.sp_str(node.get("id"));
    if let Some(f) = &id_field
        && !f.value.is_empty()
        && f.value != id.value
    {
        b.diags.push(
            Diagnostic::error(
                "loki-node-id",
                format!(
                    "Node ID mismatch: key '{}' does not match node.id '{}'",
                    id.value, f.value
                ),
            )
            .at(b.file, f.span)
            .node(id.value.clone())
            .hint(format!(
                "write `id: {}` (the key under `nodes:`), or remove `id`",
                id.value
            )),
        );
    }

    let (next, next_is_list) = b.node_refs(node.get("next").filter(|n| !n.is_null()));
    let next_span = node.get("next").filter(|n| !n.is_null()).map(|n| n.span);
    let state_updates = b.state_updates(node.get("state_updates"), &what);
    let g = |k: &str| node.get(k).filter(|n| !n.is_null());

    // The schema is only shown to the model (as text), so a broken one is a warning.
    if matches!(kind.value.as_str(), "agent" | "llm") {
        if let Some(schema) = g("output_schema") {
            b.checker().check_json_schema(schema, &format!("`output_schema` of {what}"), syntax::diag::Severity::Warning);
        }
    }
    let body = match kind.value.as_str() {
        "agent" => NodeBody::Agent(AgentNode {
            agent: b.sp_str(g("agent")),
            prompt: b.template(g("prompt")),
            output_schema: b.json(g("output_schema")),
            timeout: b.u64_field(g("timeout")),
            max_attempts: b.u64_field(g("max_attempts")),
            fallback: b.sp_str(g("fallback")),
            inputs: b.template_map(g("inputs"), "inputs", &what),
            teammates: b.sp_bool(g("teammates")),
        }),
        "script" => {
            let script = b.sp_str(g("script"));
            let script_path = script.as_ref().map(|s| b.base_dir.join(&s.value));
            let x_next = g("x-next").map(|n| b.node_refs(Some(n)).0);
            NodeBody::Script(ScriptNode {
                script,
                script_path,
                fallback: b.sp_str(g("fallback")),
                timeout: b.u64_field(g("timeout")),
                x_next,
            })
        }
        "approval" => {
            let options = b
                .strict_list(g("options"), &format!("`options` of {what}"))
                .unwrap_or_default();
            let mut routes: Vec<(Sp<String>, Sp<String>)> = Vec::new();
            for e in g("routes").and_then(|n| n.as_map()).unwrap_or(&[]) {
                let k = Sp::new(e.key.key_text().to_string(), e.key.span);
                let Some(t) = b.sp_str(Some(&e.value)) else {
                    continue;
                };
                match routes.iter_mut().find(|(x, _)| x.value == k.value) {
                    Some(slot) => *slot = (k, t),
                    None => routes.push((k, t)),
                }
            }
            NodeBody::Approval(ApprovalNode {
                question: b.template(g("question")),
                options,
                routes,
                on_other: b.sp_str(g("on_other")),
            })
        }
        "input" => {
            let validation = b.sp_str(g("validation"));
            let mut parsed_validation = None;
            if let Some(v) = &validation {
                match check_input_validation(&v.value) {
                    Ok(p) => parsed_validation = Some(p),
                    Err(msg) => b.diags.push(
                        Diagnostic::error("loki-input-validation", format!("invalid input validation '{}'", v.value))
                            .at(b.file, v.span)
                            .node(id.value.clone())
                            .hint(format!(
                                "{msg}. Loki only notices when the node runs, and then fails the whole run"
                            )),
                    ),
                }
            }
            NodeBody::Input(InputNode {
                question: b.template(g("question")),
                default: b.template(g("default")),
                validation,
                parsed_validation,
            })
        }
        "llm" => NodeBody::Llm(Box::new(LlmNode {
            prompt: b.template(g("prompt")),
            instructions: b.template(g("instructions")),
            tools: b.strict_list(g("tools"), &format!("`tools` of {what}")),
            model: b.sp_str(g("model")),
            temperature: b.f64_field(g("temperature")),
            top_p: b.f64_field(g("top_p")),
            reasoning_effort: b.string(g("reasoning_effort")),
            fallback: b.sp_str(g("fallback")),
            max_attempts: b.u64_field(g("max_attempts")),
            max_iterations: b.u64_field(g("max_iterations")),
            output_schema: b.json(g("output_schema")),
            timeout: b.u64_field(g("timeout")),
            skills: b.skills(node, &what),
            mcp_tools: b.mcp_tools(g("mcp_tools"), &what),
        })),
        "rag" => NodeBody::Rag(RagNode {
            documents: b
                .strict_list(g("documents"), &format!("`documents` of {what}"))
                .unwrap_or_default(),
            documents_span: g("documents").map(|n| n.span).unwrap_or(id.span),
            query: b.template(g("query")),
            top_k: b.u64_field(g("top_k")).map(|v| v.value),
            embedding_model: b.string(g("embedding_model")),
            chunk_size: b.u64_field(g("chunk_size")).map(|v| v.value),
            chunk_overlap: b.u64_field(g("chunk_overlap")).map(|v| v.value),
            reranker_model: b.string(g("reranker_model")),
            batch_size: b.u64_field(g("batch_size")).map(|v| v.value),
            extractor_model: b.string(g("extractor_model")),
            extractor_prompt: b.string(g("extractor_prompt")),
            graph_hops: b.u64_field(g("graph_hops")).map(|v| v.value),
            driver: b.sp_str(g("driver")),
            timeout: b.u64_field(g("timeout")),
        }),
        "end" => NodeBody::End(EndNode {
            output: b.template(g("output")),
        }),
        "map" => NodeBody::Map(MapNode {
            over: b.template(g("over")),
            as_key: b.sp_str(g("as")),
            branch: b.sp_str(g("branch")),
            collect_into: b.sp_str(g("collect_into")),
            output_key: b.sp_str(g("output_key")),
            max_concurrency: b.max_concurrency(g("max_concurrency")),
        }),
        _ => NodeBody::Unknown,
    };
    Some(LokiNode {
        id,
        id_field,
        kind,
        description: b.string(node.get("description")),
        next,
        next_is_list,
        next_span,
        state_updates,
        body,
        span: node.span,
        node: node.clone(),
    })
}
