//! Building the sherma model from the YAML tree: environment interpolation, schema checks and
//! the structure of agents, nodes and edges; problems become diagnostics.

use super::model::{
    AgentDef, Branch, CallLlm, EdgeDef, Entity, Expr, NodeArgs, NodeDef, OnError, PromptItem, RegistryRef, Retry,
    ShermaDoc, StateField, SubAgentsAsTools,
};
use super::schema::{
    AGENT_DEF, EDGE_DEF, EDGES_TY, GRAPH_DEF, NODE_DEF, NODES_TY, STATE_DEF, STATE_FIELD, STATE_FIELDS_TY, STATE_TYPES, TOP_LEVEL,
    args_schema,
};
use crate::doc::schema::Checker;
use crate::doc::{Sp, env};
use std::path::{Path, PathBuf};
use syntax::diag::Diagnostic;
use syntax::source::{SourceFile, Span};
use syntax::yaml::{YKind, YNode};

struct Builder<'a> {
    /// Spans of scalars whose text interpolation changed.
    changed: std::collections::HashSet<Span>,
    file: &'a SourceFile,
    base_dir: &'a Path,
    diags: &'a mut Vec<Diagnostic>,
    extra_files: &'a mut Vec<SourceFile>,
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Builder<'_> {
    fn checker(&mut self) -> Checker<'_> {
        Checker::new(self.file, self.diags)
    }

    /// The (already interpolated) text of a scalar, and whether interpolation changed it.
    fn interp(&mut self, node: &YNode) -> Option<(String, bool)> {
        let text = node.scalar_text()?;
        Some((text.to_string(), self.changed.contains(&node.span)))
    }

    fn sp_str(&mut self, node: Option<&YNode>) -> Option<Sp<String>> {
        let n = node?;
        let (text, _) = self.interp(n)?;
        Some(Sp::new(text, n.span))
    }

    fn expr(&mut self, node: Option<&YNode>) -> Option<Expr> {
        let n = node?;
        if n.as_scalar().is_none() || n.is_null() {
            return None;
        }
        let (text, interpolated) = self.interp(n)?;
        Some(Expr { text, node: n.clone(), interpolated })
    }

    fn registry_ref(&mut self, node: Option<&YNode>) -> Option<RegistryRef> {
        let n = node?;
        n.as_map()?;
        Some(RegistryRef { id: self.sp_str(n.get("id")), version: self.sp_str(n.get("version")), span: n.span })
    }

    fn ref_list(&mut self, node: Option<&YNode>) -> Option<Vec<RegistryRef>> {
        let items = node?.as_seq()?;
        Some(items.iter().filter_map(|i| self.registry_ref(Some(i))).collect())
    }

    fn entity_list(&mut self, root: &YNode, key: &str, path_field: Option<&str>) -> Vec<Entity> {
        let Some(items) = root.get(key).and_then(|n| n.as_seq()) else { return Vec::new() };
        let mut out = Vec::new();
        for item in items {
            let Some(entries) = item.as_map() else { continue };
            let mut ent = Entity { node: item.clone(), span: item.span, ..Default::default() };
            for e in entries {
                let k = e.key.key_text();
                if e.value.as_scalar().is_some() && !e.value.is_null() {
                    let Some(v) = self.sp_str(Some(&e.value)) else { continue };
                    match k {
                        "id" => ent.id = Some(v),
                        "version" => ent.version = Some(v),
                        _ => ent.fields.push((k.to_string(), v)),
                    }
                }
            }
            if let Some(pf) = path_field {
                if let Some(p) = ent.get(pf).cloned() {
                    ent.resolved_path = Some(self.resolve_path(&p, pf));
                }
            }
            out.push(ent);
        }
        out
    }

    /// Resolve a relative path against the document's directory; report a missing file.
    fn resolve_path(&mut self, p: &Sp<String>, field: &str) -> PathBuf {
        let path = Path::new(&p.value);
        let full = if path.is_absolute() { path.to_path_buf() } else { self.base_dir.join(path) };
        if !full.is_file() {
            let what = if full.is_dir() {
                "is a directory, not a file"
            } else if full.exists() {
                // A device (`/dev/zero`), a named pipe or a socket: never read, never waited on.
                "is not a regular file (a device, pipe or socket is never read)"
            } else {
                "does not exist"
            };
            self.diags.push(
                Diagnostic::error("file-not-found", format!("`{field}` names {} which {what}", full.display()))
                    .at(self.file, p.span)
                    .hint("paths are relative to the folder of this YAML file"),
            );
        }
        full
    }
}

/// Build the sherma model from a parsed tree. Structural problems become diagnostics.
pub fn build(
    file: &SourceFile,
    root: Option<&YNode>,
    base_dir: &Path,
    diags: &mut Vec<Diagnostic>,
    extra_files: &mut Vec<SourceFile>,
) -> ShermaDoc {
    let mut doc = ShermaDoc { data: serde_json::Value::Object(Default::default()), ..Default::default() };
    let Some(raw_root) = root else { return doc };
    // sherma interpolates the environment into every string value before validating, so the
    // schema checks and the model see interpolated text; the document's tree keeps the original.
    let mut changed = std::collections::HashSet::new();
    // A file whose folder is not trusted does not read the environment: its `${VAR}`s stay as
    // written (defaults apply), each with a warning saying why.
    let env_ok = env::env_allowed(file.path());
    let itree = interpolate_tree(file, raw_root, env_ok, diags, &mut changed);
    let root = &itree;
    let mut b = Builder { changed, file, base_dir, diags, extra_files };
    // Structure of everything but `agents` (checked per agent below) and `manifest_version`.
    b.checker().check_obj_except(root, &TOP_LEVEL, "the sherma file", &["agents", "manifest_version"]);

    match root.entry("manifest_version") {
        None => {
            b.diags.push(
                Diagnostic::error("manifest-version-missing", "missing `manifest_version`")
                    .at(file, crate::doc::schema::head_span(file, root))
                    .hint("add `manifest_version: 1` as the first line. Files without it were written for sherma before 1.0, which also read state fields by bare name (still accepted here)"),
            );
        }
        Some(e) => match e.value.as_i64().or_else(|| e.value.as_str().and_then(|s| s.trim().parse().ok())) {
            Some(1) => doc.manifest_version = Some(Sp::new(1, e.value.span)),
            Some(v) => {
                doc.manifest_version = Some(Sp::new(v, e.value.span));
                b.diags.push(
                    Diagnostic::error("manifest-version", format!("unsupported manifest_version {v}"))
                        .at(file, e.value.span)
                        .hint("this is manifest version 1 of the sherma format: write `manifest_version: 1`"),
                );
            }
            None => b.diags.push(
                Diagnostic::error(
                    "manifest-version",
                    format!("manifest_version must be the integer 1, found {}", e.value.describe()),
                )
                .at(file, e.value.span)
                .hint("write `manifest_version: 1`"),
            ),
        },
    }

    doc.llms = b.entity_list(root, "llms", None);
    doc.tools = b.entity_list(root, "tools", None);
    doc.prompts = b.entity_list(root, "prompts", Some("instructions_path"));
    doc.skills = b.entity_list(root, "skills", Some("skill_card_path"));
    doc.hooks = b.entity_list(root, "hooks", None);
    doc.sub_agents = b.entity_list(root, "sub_agents", Some("yaml_path"));
    doc.mcp_servers = b.entity_list(root, "mcp_servers", None);
    doc.default_llm = b.registry_ref(root.get("default_llm"));
    if let Some(cp) = root.get("checkpointer").filter(|n| n.as_map().is_some()) {
        let mut ent = Entity { node: cp.clone(), span: cp.span, ..Default::default() };
        for key in ["type", "path"] {
            if let Some(v) = b.sp_str(cp.get(key)) {
                ent.fields.push((key.to_string(), v));
            }
        }
        doc.checkpointer = Some(ent);
    }
    if let Some(d) = root.get("data") {
        if d.as_map().is_some() {
            doc.data = d.to_json();
        }
    }

    // Prompt texts (inline or from a file).
    for p in &doc.prompts {
        let id = p.id_str().to_string();
        if let Some(text) = p.get_str("instructions") {
            doc.prompt_texts.push((id.clone(), text.to_string()));
        } else if let Some(path) = &p.resolved_path {
            let read = match syntax::source::links_out(path, &crate::doc::project_root(b.file.path())) {
                Some(e) => Err(e),
                None => syntax::source::read_bounded_text(path, syntax::source::SIDE_FILE_CAP, None),
            };
            match read {
                Ok(text) => {
                    b.extra_files.push(SourceFile::new(path.clone(), text.clone()));
                    doc.prompt_texts.push((id.clone(), text));
                }
                // A missing file is reported by the path checks; anything else here.
                Err(e) if !e.is_not_found() => {
                    if let Some(v) = p.get("instructions_path") {
                        b.diags.push(
                            Diagnostic::error("prompt-file", format!("prompt `{id}`: {e}"))
                                .at(b.file, v.span)
                                .hint("`instructions_path` must name a regular text file of the project (not a link out of it)"),
                        );
                    }
                }
                Err(_) => {}
            }
        }
        let has_inline = p.get("instructions").is_some();
        let has_path = p.get("instructions_path").is_some();
        if has_inline == has_path {
            let msg = if has_inline {
                "prompt has both `instructions` and `instructions_path`"
            } else {
                "prompt has neither `instructions` nor `instructions_path`"
            };
            b.diags.push(
                Diagnostic::error("prompt-source", format!("{msg} (prompt `{id}`)"))
                    .at(file, crate::doc::schema::head_span(file, &p.node))
                    .hint("give exactly one: inline `instructions: ...` or a file in `instructions_path: ...`"),
            );
        }
    }
    for sk in &doc.skills {
        if let Some(path) = sk.resolved_path.as_ref().filter(|p| p.is_file()) {
            if let Some(card) = crate::skills::load_card(path, b.diags, b.extra_files) {
                doc.skill_cards.push((sk.id_str().to_string(), card));
            }
        }
    }
    if let Some(n) = root.get("agent_skills").filter(|n| !n.is_null()) {
        doc.agent_skills = crate::skills::load_agent_skills(n, file, b.base_dir, b.diags, b.extra_files);
    }
    for h in &doc.hooks {
        let n = ["import_path", "url"].iter().filter(|k| h.get(k).is_some()).count()
            + usize::from(h.node.get("mcp").is_some_and(|m| !m.is_null()));
        if n != 1 {
            b.diags.push(
                Diagnostic::error("hook-source", "a hook needs exactly one of `import_path`, `url` or `mcp`")
                    .at(file, crate::doc::schema::head_span(file, &h.node)),
            );
        }
    }
    // Skills need a card (sherma silently registers nothing without one); a sub-agent has at
    // most one source (sherma silently picks one).
    for sk in &doc.skills {
        if sk.id.is_some() && sk.get("skill_card_path").is_none() && sk.get("url").is_none() {
            b.diags.push(
                Diagnostic::error("skill-source", format!("skill `{}` has neither `skill_card_path` nor `url`", sk.id_str()))
                    .at(file, crate::doc::schema::head_span(file, &sk.node))
                    .hint("sherma registers nothing for it, so loading it fails: add `skill_card_path:` (a local card) or `url:` (a remote card)"),
            );
        }
    }
    for sa in &doc.sub_agents {
        let given: Vec<&str> = ["url", "import_path", "yaml_path"].into_iter().filter(|k| sa.get(k).is_some()).collect();
        if given.len() > 1 {
            let at = sa.get(given[1]).map(|v| v.span).unwrap_or_else(|| crate::doc::schema::head_span(file, &sa.node));
            b.diags.push(
                Diagnostic::error("sub-agent-source", format!("sub-agent `{}` has both `{}` and `{}`", sa.id_str(), given[0], given[1]))
                    .at(file, at)
                    .hint("give exactly one source: `url` (a remote A2A agent), `import_path` (a Python Agent) or `yaml_path` (another agent file)"),
            );
        }
    }
    for m in &doc.mcp_servers {
        let transport = m.get_str("transport").unwrap_or("streamable_http");
        let (has_url, has_cmd) = (m.get("url").is_some(), m.get("command").is_some());
        let problem = if transport == "stdio" {
            if !has_cmd {
                Some("a stdio MCP server needs `command`")
            } else if has_url {
                Some("a stdio MCP server must not have `url`")
            } else {
                None
            }
        } else if !has_url {
            Some("an HTTP MCP server needs `url`")
        } else if has_cmd {
            Some("an HTTP MCP server must not have `command` (set `transport: stdio` for a child process)")
        } else {
            None
        };
        if let Some(p) = problem {
            b.diags.push(
                Diagnostic::error("mcp-server", format!("{p} (server `{}`)", m.id_str()))
                    .at(file, crate::doc::schema::head_span(file, &m.node)),
            );
        } else if transport == "sse" {
            let at = m.get("transport").map(|t| t.span).unwrap_or_else(|| crate::doc::schema::head_span(file, &m.node));
            b.diags.push(
                Diagnostic::warning(
                    "mcp-sse",
                    format!("MCP server `{}`: the legacy `sse` transport is not supported by Switchyard's MCP client", m.id_str()),
                )
                .at(file, at)
                .hint("use the server's streamable-HTTP endpoint (often `/mcp` instead of `/sse`) with `transport: streamable_http`"),
            );
        }
    }

    if let Some(agents) = root.get("agents") {
        match agents.as_map() {
            Some(entries) => {
                for e in entries {
                    let name = Sp::new(e.key.key_text().to_string(), e.key.span);
                    if let Some(a) = build_agent(&mut b, name, &e.value) {
                        doc.agents.push(a);
                    }
                }
            }
            None if agents.is_null() => {}
            None => b.diags.push(
                Diagnostic::error("wrong-type", format!("`agents` must be a mapping of agent names, found {}", agents.describe()))
                    .at(file, agents.span),
            ),
        }
    }
    if doc.agents.is_empty() && !b.diags.iter().any(|d| d.is_error()) {
        let span = root.entry("agents").map(|e| e.key.span).unwrap_or_else(|| crate::doc::schema::head_span(file, root));
        b.diags.push(
            Diagnostic::warning("no-agents", "the file defines no agents")
                .at(file, span)
                .hint("add `agents:` with at least one agent (state + graph)"),
        );
    }
    doc
}

/// A copy of `node` with `${NAME}` / `${NAME:-default}` / `$$` interpolated into every string
/// scalar (plain scalars are re-resolved, so `${N:-1}` becomes the integer 1). Missing variables
/// are reported at their placeholder.
fn interpolate_tree(
    file: &SourceFile,
    node: &YNode,
    env_ok: bool,
    diags: &mut Vec<Diagnostic>,
    changed: &mut std::collections::HashSet<Span>,
) -> YNode {
    use syntax::yaml::{ScalarValue, Style};
    match &node.kind {
        YKind::Scalar(sc) if sc.value == ScalarValue::Str && sc.text.contains('$') => {
            let (out, missing) = if env_ok { env::interpolate(&sc.text, &process_env) } else { env::interpolate(&sc.text, &|_| None) };
            for m in missing {
                let s = crate::doc::schema::value_offset_to_source(file, node, m.start);
                let e = crate::doc::schema::value_offset_to_source(file, node, m.end);
                if !env_ok {
                    diags.push(
                        Diagnostic::warning(
                            "env-untrusted",
                            format!("`${{{}}}` is not filled in: the folder is not trusted, so the file does not read your environment", m.name),
                        )
                        .at(file, Span::new(s, e.max(s)))
                        .hint("trust the folder (`switchyard trust PATH`, or \"Trust folder…\" in the app) to fill it in"),
                    );
                    continue;
                }
                diags.push(
                    Diagnostic::error("env-missing", format!("environment variable `{}` is not set", m.name))
                        .at(file, Span::new(s, e.max(s)))
                        .hint(format!(
                            "set {} before running, or give a default: ${{{}:-value}}; write $$ for a literal $",
                            m.name, m.name
                        )),
                );
            }
            if out == sc.text {
                return node.clone();
            }
            changed.insert(node.span);
            let value = if sc.style == Style::Plain { syntax::yaml::resolve_plain(&out) } else { ScalarValue::Str };
            YNode { span: node.span, kind: YKind::Scalar(syntax::yaml::Scalar { text: out, style: sc.style, value }) }
        }
        YKind::Seq(items) => YNode {
            span: node.span,
            kind: YKind::Seq(items.iter().map(|n| interpolate_tree(file, n, env_ok, diags, changed)).collect()),
        },
        YKind::Map(entries) => YNode {
            span: node.span,
            kind: YKind::Map(
                entries
                    .iter()
                    .map(|e| syntax::yaml::YEntry { key: e.key.clone(), value: interpolate_tree(file, &e.value, env_ok, diags, changed) })
                    .collect(),
            ),
        },
        _ => node.clone(),
    }
}

fn build_agent(b: &mut Builder<'_>, name: Sp<String>, node: &YNode) -> Option<AgentDef> {
    let what = format!("agent `{}`", name.value);
    if !b.checker().check_obj_except(node, &AGENT_DEF, &what, &["graph", "state"]) {
        return None;
    }
    // The A2A executor validates structured input and output against these with jsonschema.
    for key in ["input_schema", "output_schema"] {
        if let Some(schema) = node.get(key) {
            b.checker().check_json_schema(schema, &format!("`{key}` of {what}"), syntax::diag::Severity::Error);
        }
    }
    let mut agent = AgentDef {
        name,
        state_fields: Vec::new(),
        entry_point: None,
        nodes: Vec::new(),
        edges: Vec::new(),
        recursion_limit: None,
        input_schema: node.get("input_schema").map(|n| n.to_json()),
        output_schema: node.get("output_schema").map(|n| n.to_json()),
        span: node.span,
        graph_span: node.span,
    };
    if let Some(lc) = node.get("langgraph_config") {
        agent.recursion_limit = lc.get("recursion_limit").and_then(|n| n.as_i64());
    }
    // State.
    if let Some(state) = node.get("state") {
        b.checker().check_obj_except(state, &STATE_DEF, &format!("the state of {what}"), &["fields"]);
        match state.get("fields") {
            Some(fields) if fields.as_seq().is_some() => {
                for f in fields.as_seq().unwrap() {
                    if !b.checker().check_obj(f, &STATE_FIELD, &format!("a state field of {what}")) {
                        continue;
                    }
                    let Some(fname) = b.sp_str(f.get("name")) else { continue };
                    let ty = b.sp_str(f.get("type"));
                    if let Some(t) = &ty {
                        if !STATE_TYPES.contains(&t.value.as_str()) {
                            let sugg = syntax::diag::did_you_mean(&t.value, STATE_TYPES.iter().copied());
                            b.diags.push(
                                Diagnostic::warning("state-type", format!("unknown state field type `{}`; it is treated as `str`", t.value))
                                    .at(b.file, t.span)
                                    .hint(match sugg {
                                        Some(s) => format!("did you mean `{s}`? Known types: {}", STATE_TYPES.join(", ")),
                                        None => format!("known types: {}", STATE_TYPES.join(", ")),
                                    }),
                            );
                        }
                    }
                    agent.state_fields.push(StateField { name: fname, ty, default: f.get("default").map(|d| d.to_json()) });
                }
            }
            Some(other) if !other.is_null() => b.checker().check_value(other, &STATE_FIELDS_TY, "`fields`", true),
            _ => b.diags.push(
                Diagnostic::error("missing-field", format!("the state of {what} is missing `fields`"))
                    .at(b.file, crate::doc::schema::head_span(b.file, state))
                    .hint("add `fields:` with a list of `- name: ...` entries (a `messages` field for chat agents)"),
            ),
        }
    } else {
        b.diags.push(
            Diagnostic::error("missing-field", format!("{what} is missing required field `state`"))
                .at(b.file, agent.name.span)
                .hint("add `state: {fields: [{name: messages, type: list}]}`"),
        );
    }
    // Graph.
    let Some(graph) = node.get("graph") else {
        b.diags.push(
            Diagnostic::error("missing-field", format!("{what} is missing required field `graph`"))
                .at(b.file, agent.name.span)
                .hint("add `graph:` with `entry_point`, `nodes` and `edges`"),
        );
        return Some(agent);
    };
    agent.graph_span = graph.span;
    b.checker().check_obj_except(graph, &GRAPH_DEF, &format!("the graph of {what}"), &["nodes", "edges"]);
    agent.entry_point = b.sp_str(graph.get("entry_point"));
    match graph.get("nodes") {
        Some(nodes) => match nodes.as_seq() {
            Some(items) => {
                for item in items {
                    if let Some(n) = build_node(b, item, &what) {
                        agent.nodes.push(n);
                    }
                }
            }
            None if nodes.is_null() => {}
            None => b.checker().check_value(nodes, &NODES_TY, "`nodes`", true),
        },
        None => b.diags.push(
            Diagnostic::error("missing-field", format!("the graph of {what} is missing required field `nodes`"))
                .at(b.file, crate::doc::schema::head_span(b.file, graph)),
        ),
    }
    match graph.get("edges") {
        Some(edges) => match edges.as_seq() {
            Some(items) => {
                for item in items {
                    if !b.checker().check_obj(item, &EDGE_DEF, &format!("an edge of {what}")) {
                        continue;
                    }
                    let branches = item.get("branches").map(|br| {
                        br.as_seq()
                            .unwrap_or(&[])
                            .iter()
                            .filter(|x| x.as_map().is_some())
                            .map(|x| Branch {
                                condition: b.expr(x.get("condition")),
                                target: b.sp_str(x.get("target")),
                                span: x.span,
                            })
                            .collect()
                    });
                    agent.edges.push(EdgeDef {
                        source: b.sp_str(item.get("source")),
                        target: b.sp_str(item.get("target")),
                        branches,
                        default: b.sp_str(item.get("default")),
                        span: item.span,
                    });
                }
            }
            None if edges.is_null() => {}
            None => b.checker().check_value(edges, &EDGES_TY, "`edges`", true),
        },
        None => b.diags.push(
            Diagnostic::error("missing-field", format!("the graph of {what} is missing required field `edges`"))
                .at(b.file, crate::doc::schema::head_span(b.file, graph))
                .hint("add `edges: []` if the graph has a single node"),
        ),
    }
    Some(agent)
}

fn build_node(b: &mut Builder<'_>, item: &YNode, agent_what: &str) -> Option<NodeDef> {
    let label = item
        .get("name")
        .and_then(|n| n.scalar_text())
        .map(|n| format!("node `{n}`"))
        .unwrap_or_else(|| format!("a node of {agent_what}"));
    if !b.checker().check_obj_except(item, &NODE_DEF, &label, &["args"]) {
        return None;
    }
    let name = b.sp_str(item.get("name")).unwrap_or_else(|| Sp::new(String::new(), crate::doc::schema::head_span(b.file, item)));
    let kind = b.sp_str(item.get("type")).unwrap_or_else(|| Sp::new(String::new(), name.span));
    let args_node = item.get("args");
    let empty = YNode { span: Span::at(item.span.end as usize), kind: YKind::Map(Vec::new()) };
    let args = match args_node {
        Some(a) if !a.is_null() => a,
        _ => &empty,
    };
    if let Some(schema) = args_schema(&kind.value) {
        let args_what = format!("the args of {label}");
        let ok = if args_node.is_some_and(|a| !a.is_null()) {
            b.checker().check_obj(args, schema, &args_what)
        } else if schema.fields.iter().any(|f| f.required) {
            let req: Vec<_> = schema.fields.iter().filter(|f| f.required).map(|f| format!("`{}`", f.name)).collect();
            b.diags.push(
                Diagnostic::error("missing-field", format!("{label} of type {} needs `args` with {}", kind.value, req.join(", ")))
                    .at(b.file, name.span)
                    .hint(format!("add `args:` with {}", req.join(" and "))),
            );
            true
        } else {
            true
        };
        if !ok {
            return Some(NodeDef { name, kind, args: NodeArgs::Unknown, on_error: None, span: item.span, node: item.clone() });
        }
    }
    let nargs = match kind.value.as_str() {
        "call_llm" => {
            let mut c = CallLlm {
                llm: b.registry_ref(args.get("llm")),
                tools: b.ref_list(args.get("tools")),
                use_tools_from_registry: args.get("use_tools_from_registry").and_then(|n| n.as_bool()).unwrap_or(false),
                use_tools_from_loaded_skills: args
                    .get("use_tools_from_loaded_skills")
                    .and_then(|n| n.as_bool())
                    .unwrap_or(false),
                ..Default::default()
            };
            if let Some(prompt) = args.get("prompt") {
                match prompt.as_seq() {
                    Some(items) => {
                        for it in items {
                            if let Some(role) = b.sp_str(it.get("role")) {
                                let content = b.expr(it.get("content"));
                                c.prompt.push(PromptItem { role, content });
                            }
                        }
                    }
                    None if prompt.as_scalar().is_some() && !prompt.is_null() => {
                        // The checker already reported the type; add the fix a user needs.
                        if let Some(d) = b.diags.iter_mut().rev().find(|d| d.span == Some(prompt.span)) {
                            d.hint = Some("`prompt` is a list of messages: `- role: system` / `content: '\"...\"'` (a plain string is rejected by sherma)".into());
                        }
                    }
                    None => {}
                }
            }
            c.use_sub_agents_as_tools = match args.get("use_sub_agents_as_tools") {
                Some(n) if n.as_bool() == Some(true) => SubAgentsAsTools::All,
                Some(n) if n.as_str() == Some("all") => SubAgentsAsTools::All,
                Some(n) if n.as_seq().is_some() => SubAgentsAsTools::List(b.ref_list(Some(n)).unwrap_or_default()),
                _ => SubAgentsAsTools::No,
            };
            if let Some(rf) = args.get("response_format").filter(|n| !n.is_null()) {
                c.response_format = Some(rf.to_json());
                c.response_format_span = Some(rf.span);
                if let Some(schema) = rf.get("schema") {
                    let what = format!("the `response_format` schema of {label}");
                    b.checker().check_json_schema(schema, &what, syntax::diag::Severity::Error);
                }
            }
            if let Some(su) = args.get("state_updates").and_then(|n| n.as_map()) {
                for e in su {
                    if let Some(x) = b.expr(Some(&e.value)) {
                        c.state_updates.push((Sp::new(e.key.key_text().to_string(), e.key.span), x));
                    }
                }
            }
            NodeArgs::CallLlm(Box::new(c))
        }
        "tool_node" => NodeArgs::ToolNode { tools: b.ref_list(args.get("tools")) },
        "call_agent" => NodeArgs::CallAgent { agent: b.registry_ref(args.get("agent")), input: b.expr(args.get("input")) },
        "data_transform" => NodeArgs::DataTransform { expression: b.expr(args.get("expression")) },
        "set_state" => {
            let mut values = Vec::new();
            if let Some(m) = args.get("values").and_then(|n| n.as_map()) {
                for e in m {
                    if let Some(x) = b.expr(Some(&e.value)) {
                        values.push((Sp::new(e.key.key_text().to_string(), e.key.span), x));
                    }
                }
            }
            NodeArgs::SetState { values }
        }
        "interrupt" => NodeArgs::Interrupt { value: b.expr(args.get("value")) },
        "load_skills" => NodeArgs::LoadSkills { skill_ids: b.expr(args.get("skill_ids")) },
        "custom" => NodeArgs::Custom {
            metadata: args.get("metadata").map(|m| m.to_json()).unwrap_or(serde_json::Value::Object(Default::default())),
        },
        _ => NodeArgs::Unknown,
    };
    let on_error = item.get("on_error").filter(|n| n.as_map().is_some()).map(|oe| OnError {
        retry: oe.get("retry").filter(|r| r.as_map().is_some()).map(|r| Retry {
            max_attempts: r.get("max_attempts").and_then(|n| n.as_i64()).unwrap_or(3),
            strategy: r.get("strategy").and_then(|n| n.as_str()).unwrap_or("exponential").to_string(),
            delay: r.get("delay").and_then(|n| n.as_f64()).unwrap_or(1.0),
            max_delay: r.get("max_delay").and_then(|n| n.as_f64()).unwrap_or(30.0),
            span: r.span,
        }),
        fallback: b.sp_str(oe.get("fallback")),
        span: oe.span,
    });
    Some(NodeDef { name, kind, args: nargs, on_error, span: item.span, node: item.clone() })
}
