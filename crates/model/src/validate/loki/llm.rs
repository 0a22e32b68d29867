//! Upstream step 9: the tools and models of llm nodes (tool names checked against the agent's
//! tool files as `doc::loki::tools` reads them, the parser the interpreter uses, and coyote
//! 0.10.3's built-in agent functions against the families the graph offers).

use super::V;
use crate::doc::Sp;
use crate::doc::loki::{AgentFunctions, NodeBody};
use crate::doc::loki::tools::AgentTools;
use std::path::Path;
use syntax::diag::did_you_mean;

impl V<'_> {
    /// Upstream 9: llm-node tools exist (global tools, the agent's tool functions, MCP servers);
    /// models are written `provider:name`.
    pub(super) fn llm_tools_and_models(&mut self) {
        let l = self.l;
        let stems: Vec<String> = l
            .global_tools
            .iter()
            .map(|t| {
                Path::new(&t.value)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let custom = AgentTools::read(&l.agent_dir);
        let checkable = !l.global_tools.is_empty() || custom.any_file;
        let mut universe: Vec<&str> = stems.iter().map(String::as_str).collect();
        universe.extend(custom.names.iter().map(String::as_str));
        let servers: Vec<&str> = l.mcp_servers.iter().map(|s| s.value.as_str()).collect();

        if let Some(m) = &l.model {
            self.check_model(m, None);
        }
        for n in &l.nodes {
            let NodeBody::Llm(x) = &n.body else { continue };
            for t in x.tools.iter().flatten() {
                if let Some(server) = t.value.strip_prefix("mcp:") {
                    if !servers.contains(&server) {
                        let hint = match did_you_mean(server, servers.iter().copied()) {
                            Some(s) => format!("did you mean `mcp:{s}`?"),
                            None if servers.is_empty() => format!(
                                "declare it at the top of graph.yaml: `mcp_servers: [{server}]`"
                            ),
                            None => format!(
                                "declare it under `mcp_servers:` (declared: {})",
                                servers.join(", ")
                            ),
                        };
                        let d = self
                            .err(
                                "loki-mcp",
                                format!("llm node references unknown MCP server '{}'", t.value),
                                t.span,
                            )
                            .node(n.id.value.clone())
                            .hint(hint);
                        self.push(d);
                    }
                    continue;
                }
                if universe.contains(&t.value.as_str()) {
                    continue;
                }
                if let Some(family) = AgentFunctions::of(&t.value) {
                    // coyote 0.10.3's built-in functions: listed where the graph offers them.
                    if !l.offers(family) {
                        self.not_offered(n.id.value.as_str(), t, family);
                    }
                    continue;
                }
                if let Some(why) = custom.catalog.not_a_tool(&t.value) {
                    // The interpreter refuses this call with the same words.
                    let d = self
                        .err("loki-tool", format!("llm node references '{}', which is not a usable tool ({why})", t.value), t.span)
                        .node(n.id.value.clone())
                        .hint("define the tool with `# @cmd` in a tools.sh of the agent's own folder (a regular file, not a link out of the project), or name another tool");
                    self.push(d);
                    continue;
                }
                if !checkable {
                    let d = self
                        .warn("loki-tool", format!("cannot check tool '{}': the graph has no `global_tools` and the agent has no tools.sh", t.value), t.span)
                        .node(n.id.value.clone())
                        .hint("Loki rejects tools the agent does not provide; add the tool file to `global_tools` or define the function in tools.sh");
                    self.push(d);
                    continue;
                }
                let stem = Path::new(&t.value)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let hint = if stem != t.value && universe.contains(&stem.as_str()) {
                    format!("write the function name without the file extension: `{stem}`")
                } else {
                    match did_you_mean(&t.value, universe.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "tools are the `global_tools` file names without extension{} and the functions of the agent's tools.sh; MCP servers are written `mcp:<server>`",
                            if universe.is_empty() {
                                String::new()
                            } else {
                                format!(" (available: {})", universe.join(", "))
                            }
                        ),
                    }
                };
                let d = self
                    .err(
                        "loki-tool",
                        format!("llm node references unknown tool '{}'", t.value),
                        t.span,
                    )
                    .node(n.id.value.clone())
                    .hint(hint);
                self.push(d);
            }
            // coyote 0.10.3: `mcp_tools` keys name servers this graph enables.
            for (server, _) in x.mcp_tools.iter().flat_map(|m| m.servers.iter()) {
                if servers.contains(&"all") || servers.contains(&server.value.as_str()) {
                    continue;
                }
                let hint = match did_you_mean(&server.value, servers.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`? `mcp_tools` narrows the tools of servers listed under `mcp_servers`"),
                    None => format!("add `{}` to the graph's `mcp_servers`, or remove this entry", server.value),
                };
                let d = self
                    .err(
                        "loki-mcp-tools",
                        format!("llm node 'mcp_tools' references MCP server '{}' not enabled by this graph", server.value),
                        server.span,
                    )
                    .node(n.id.value.clone())
                    .hint(hint);
                self.push(d);
            }
            if let Some(m) = &x.model {
                self.check_model(m, Some(&n.id.value));
            }
        }
        // The graph-level allow-lists: a server the graph does not enable restricts nothing.
        for (server, _) in l.mcp_tools.iter().flat_map(|m| m.servers.iter()) {
            if servers.contains(&"all") || servers.contains(&server.value.as_str()) {
                continue;
            }
            let d = self
                .warn(
                    "loki-mcp-tools",
                    format!("graph 'mcp_tools' names MCP server '{}', which `mcp_servers` does not enable: the allow-list applies to nothing", server.value),
                    server.span,
                )
                .hint(match did_you_mean(&server.value, servers.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("add `{}` to `mcp_servers`, or remove this entry", server.value),
                });
            self.push(d);
        }
    }

    /// An llm node lists a built-in function of a family the graph does not offer.
    fn not_offered(&mut self, node: &str, t: &Sp<String>, family: AgentFunctions) {
        let (why, hint) = match family {
            AgentFunctions::Supervisor => (
                match &self.l.can_spawn_agents {
                    Some(_) => "`can_spawn_agents` is false".to_string(),
                    None => "`can_spawn_agents` is unset and the graph has no agent node (its default is then false)".to_string(),
                },
                "set `can_spawn_agents: true` at the top of graph.yaml, or remove the tool from this node",
            ),
            AgentFunctions::Job => (
                "`max_concurrent_jobs` is 0".to_string(),
                "remove `max_concurrent_jobs: 0` (default 5) or set it >= 1, or remove the tool from this node",
            ),
            AgentFunctions::Teammate => return,
        };
        let d = self
            .err(
                "loki-tool",
                format!("llm node references '{}', a built-in function this graph does not offer: {why}", t.value),
                t.span,
            )
            .node(node.to_string())
            .hint(hint);
        self.push(d);
    }

    /// Upstream 13 (coyote 0.10.3, `output_schema_properties`): only the keys an `output_schema`
    /// declares under `properties` merge into state, so a schema without them merges nothing.
    pub(super) fn output_schema_properties(&mut self) {
        for n in &self.l.nodes {
            let Some(schema) = n.output_schema() else { continue };
            let props = schema.value.get("properties");
            if props.is_some_and(|p| p.as_object().is_some_and(|o| !o.is_empty())) {
                continue;
            }
            let d = self
                .warn(
                    "loki-output-schema",
                    format!(
                        "{} node's `output_schema` declares no `properties`: only declared properties merge into state, so nothing of the reply does",
                        n.kind_str()
                    ),
                    schema.span,
                )
                .node(n.id.value.clone())
                .hint("declare the keys under `properties:` (e.g. `properties: {summary: {type: string}}`), or capture the whole reply with `state_updates: {result: \"{{output}}\"}`");
            self.push(d);
        }
    }

    fn check_model(&mut self, m: &Sp<String>, node: Option<&str>) {
        let ok = m
            .value
            .split_once(':')
            .is_some_and(|(p, n)| !p.trim().is_empty() && !n.trim().is_empty());
        if ok {
            return;
        }
        let who = if node.is_some() { "llm node" } else { "graph" };
        let mut d = self
            .warn("loki-model", format!("{who} model '{}' is not of the form 'provider:name'", m.value), m.span)
            .hint("Loki resolves models as `<client>:<model>` (e.g. `openai:gpt-4o`); a model it cannot resolve fails validation when the graph runs");
        if let Some(id) = node {
            d = d.node(id);
        }
        self.push(d);
    }
}
