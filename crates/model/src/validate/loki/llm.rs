//! Upstream step 9: the tools and models of llm nodes, and the functions an agent's own tool
//! files define.

use super::V;
use crate::doc::Sp;
use crate::doc::loki::NodeBody;
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
        let custom = agent_tool_functions(&l.agent_dir);
        let checkable = !l.global_tools.is_empty() || custom.is_some();
        let custom = custom.unwrap_or_default();
        let mut universe: Vec<&str> = stems.iter().map(String::as_str).collect();
        universe.extend(custom.iter().map(String::as_str));
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
            if let Some(m) = &x.model {
                self.check_model(m, Some(&n.id.value));
            }
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

/// Functions defined by the agent's custom tool files (tools.sh, tools.py, tools.ts, tools.js),
/// or `None` when the agent has none.
pub fn agent_tool_functions(agent_dir: &Path) -> Option<Vec<String>> {
    let mut found = false;
    let mut names: Vec<String> = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect()
    };
    for file in ["tools.sh", "tools.py", "tools.ts", "tools.js"] {
        let Ok(text) = std::fs::read_to_string(agent_dir.join(file)) else {
            continue;
        };
        found = true;
        for line in text.lines() {
            let name = if file.ends_with(".sh") {
                let t = line.trim_start();
                if let Some(rest) = t.strip_prefix("function ") {
                    ident(rest.trim_start())
                } else {
                    let id = ident(t);
                    let rest = t[id.len()..].trim_start();
                    match rest.strip_prefix('(') {
                        Some(r) if !id.is_empty() && r.trim_start().starts_with(')') => id,
                        _ => String::new(),
                    }
                }
            } else if file.ends_with(".py") {
                match line
                    .strip_prefix("def ")
                    .or_else(|| line.strip_prefix("async def "))
                {
                    Some(rest) => ident(rest.trim_start()),
                    None => String::new(),
                }
            } else {
                let t = line.trim_start();
                let exported = t
                    .strip_prefix("module.exports.")
                    .or_else(|| t.strip_prefix("exports."))
                    .or_else(|| {
                        let c = t.strip_prefix("export ")?.trim_start();
                        c.strip_prefix("const ").or_else(|| c.strip_prefix("let "))
                    });
                if let Some(rest) = exported {
                    ident(rest.trim_start())
                } else {
                    let t = t.strip_prefix("export ").unwrap_or(t);
                    let t = t.strip_prefix("async ").unwrap_or(t);
                    match t.strip_prefix("function ") {
                        Some(rest) => ident(rest.trim_start()),
                        None => String::new(),
                    }
                }
            };
            if !name.is_empty() && !name.starts_with('_') && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    found.then_some(names)
}
