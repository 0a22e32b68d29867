//! Loki validation: upstream's checks (reference/loki.md §4) in upstream's order, with positions,
//! then what users need and upstream only finds at run time (or never).
//!
//! Upstream order: 1 references, 2 cycles, 3 reachability, 4 terminals, 5 scripts, 6 agents,
//! 7 approvals, 8 rag, 9 llm tools/model, 10 skills, 11 concurrency, 12 map branch contract,
//! 13 parallel UI, 14 parallel writes, 15 parallel reads. Then: `next` rules, zero limits,
//! script extensions, template lint, unknown state keys, the `output` null leak of §9.1, the
//! map/llm-branch trap of §9.2 and a seeded `initial_prompt`.

use syntax::diag::{Diagnostic, did_you_mean};
use crate::doc::loki::{LokiDoc, LokiNode, NodeBody, RAG_DRIVERS};
use crate::doc::schema::value_offset_to_source;
use crate::doc::{Document, Sp};
use crate::graph::{EdgeKind, Graph};
use syntax::source::{SourceFile, Span};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

pub fn validate(doc: &Document, l: &LokiDoc, graph: &Graph, diags: &mut Vec<Diagnostic>) {
    let Some(file) = doc.file.as_ref() else {
        return;
    };
    let mut v = V::new(file, l, graph, diags);
    v.references();
    v.cycles();
    v.reachability();
    v.terminals();
    v.scripts();
    v.agents();
    v.approvals();
    v.rag();
    v.llm_tools_and_models();
    v.skills();
    v.concurrency();
    v.map_branches();
    let groups = v.fanout_groups();
    v.parallel_ui(&groups);
    v.parallel_writes(&groups);
    v.parallel_reads(&groups);
    // Beyond upstream's validator.
    v.next_rules();
    v.zero_limits();
    v.script_extensions();
    v.templates();
    v.state_keys();
    v.null_leak(&groups);
    v.map_output_trap();
    v.seeded_initial_prompt();
}

/// One declared edge: target node index, the span of the reference, and its kind.
#[derive(Clone, Debug)]
struct DEdge {
    to: usize,
    span: Span,
}

/// The targets of one fan-out (`next` list with more than one entry).
struct Group<'a> {
    source: &'a LokiNode,
    /// Distinct existing targets, in `next` order, with the span of their first entry.
    members: Vec<(usize, Span)>,
}

struct V<'a> {
    file: &'a SourceFile,
    l: &'a LokiDoc,
    diags: &'a mut Vec<Diagnostic>,
    /// Declared edges per node (upstream's edge set: next, routes, on_other, fallbacks, branch).
    adj: Vec<Vec<DEdge>>,
    /// Dynamic `_next` edges known from `x-next` or the script source (node index -> targets).
    dyn_adj: Vec<Vec<usize>>,
    has_scripts: bool,
    /// Node id -> declaration index.
    ids: HashMap<&'a str, usize>,
}

fn is_skill_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// "a script node", "an llm node".
fn a_kind(kind: &str) -> String {
    match kind {
        "agent" | "approval" | "input" | "llm" | "end" => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'a> V<'a> {
    fn new(
        file: &'a SourceFile,
        l: &'a LokiDoc,
        graph: &'a Graph,
        diags: &'a mut Vec<Diagnostic>,
    ) -> V<'a> {
        let ids: HashMap<&'a str, usize> = l
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.value.as_str(), i))
            .collect();
        let mut adj = vec![Vec::new(); l.nodes.len()];
        for (i, n) in l.nodes.iter().enumerate() {
            for t in n.targets() {
                if let Some(&j) = ids.get(t.to.value.as_str()) {
                    adj[i].push(DEdge {
                        to: j,
                        span: t.to.span,
                    });
                }
            }
        }
        let mut dyn_adj = vec![Vec::new(); l.nodes.len()];
        for e in graph.g.edge_indices() {
            let w = &graph.g[e];
            if w.kind != EdgeKind::Dynamic {
                continue;
            }
            let Some((s, t)) = graph.g.edge_endpoints(e) else {
                continue;
            };
            if let (Some(i), Some(j)) = (
                ids.get(graph.g[s].id.as_str()).copied(),
                ids.get(graph.g[t].id.as_str()).copied(),
            ) {
                dyn_adj[i].push(j);
            }
        }
        let has_scripts = l
            .nodes
            .iter()
            .any(|n| matches!(n.body, NodeBody::Script(_)));
        V {
            file,
            l,
            diags,
            adj,
            dyn_adj,
            has_scripts,
            ids,
        }
    }

    fn idx(&self, id: &str) -> Option<usize> {
        self.ids.get(id).copied()
    }

    fn node_by(&self, id: &str) -> Option<&'a LokiNode> {
        let l: &'a LokiDoc = self.l;
        self.idx(id).map(|i| &l.nodes[i])
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn err(&self, code: &str, msg: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::error(code, msg).at(self.file, span)
    }

    fn warn(&self, code: &str, msg: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::warning(code, msg).at(self.file, span)
    }

    fn start_index(&self) -> Option<usize> {
        self.l.start.as_ref().and_then(|s| self.idx(&s.value))
    }

    fn suggest_node(&self, name: &str) -> String {
        // Suggestions compare against every id: skip them for huge graphs.
        let sugg = if self.l.nodes.len() <= MAX_SUGGEST_NODES {
            did_you_mean(name, self.l.node_ids())
        } else {
            None
        };
        match sugg {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!(
                "declare a node `{name}` under `nodes:`, or name one of: {}",
                crate::doc::loki::short_list(self.l.node_ids())
            ),
        }
    }

    // 1 -----------------------------------------------------------------------------------
    fn references(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            for t in n.targets() {
                if self.idx(&t.to.value).is_none() {
                    let d = self
                        .err(
                            "loki-ref",
                            format!(
                                "References non-existent node '{}' in {}",
                                t.to.value,
                                t.kind.label()
                            ),
                            t.to.span,
                        )
                        .node(n.id.value.clone())
                        .hint(self.suggest_node(&t.to.value));
                    self.push(d);
                }
            }
            if let Some(xs) = n.script().and_then(|s| s.x_next.as_ref()) {
                for x in xs {
                    if self.idx(&x.value).is_none() {
                        let d = self
                            .err(
                                "loki-ref",
                                format!("References non-existent node '{}' in 'x-next'", x.value),
                                x.span,
                            )
                            .node(n.id.value.clone())
                            .hint(self.suggest_node(&x.value));
                        self.push(d);
                    }
                }
            }
        }
    }

    // 2 -----------------------------------------------------------------------------------
    fn cycles(&mut self) {
        let n = self.l.nodes.len();
        let mut pg: DiGraph<usize, ()> = DiGraph::with_capacity(n, 0);
        let ix: Vec<NodeIndex> = (0..n).map(|i| pg.add_node(i)).collect();
        for (i, es) in self.adj.iter().enumerate() {
            for e in es {
                pg.add_edge(ix[i], ix[e.to], ());
            }
        }
        let mut sccs: Vec<Vec<usize>> = petgraph::algo::tarjan_scc(&pg)
            .into_iter()
            .map(|c| {
                let mut v: Vec<usize> = c.into_iter().map(|x| pg[x]).collect();
                v.sort();
                v
            })
            .filter(|c| c.len() > 1 || self.adj[c[0]].iter().any(|e| e.to == c[0]))
            .collect();
        sccs.sort();
        for scc in sccs {
            let Some((path, closing)) = self.cycle_through(scc[0], &scc) else {
                continue;
            };
            let mut names: Vec<String> = path
                .iter()
                .map(|&i| self.l.nodes[i].id.value.clone())
                .collect();
            if names.len() > 60 {
                // Keep huge cycles readable: the first and last 25 steps.
                let cut = names.len() - 50;
                names.splice(25..names.len() - 25, [format!("... ({cut} more)")]);
            }
            let last = path[path.len() - 2];
            let d = self
                .err("loki-cycle", format!("Cycle detected: {}", names.join(" -> ")), closing)
                .node(self.l.nodes[last].id.value.clone())
                .hint(
                    "declared edges (next, routes, on_other, fallback, branch) must not loop back; Loki rejects any such cycle. \
                     Loop through a script instead: it prints {\"_next\": \"<node>\"} to go back (declare the targets in its `x-next`)",
                );
            self.push(d);
        }
    }

    /// The shortest cycle from `s` back to `s` inside `scc`: the node path (s ... s) and the span
    /// of the reference that closes it.
    fn cycle_through(&self, s: usize, scc: &[usize]) -> Option<(Vec<usize>, Span)> {
        let members: HashSet<usize> = scc.iter().copied().collect();
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut seen: HashSet<usize> = HashSet::from([s]);
        let mut q = VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            for e in &self.adj[u] {
                if e.to == s {
                    let mut path = vec![u];
                    let mut cur = u;
                    while let Some(&p) = parent.get(&cur) {
                        path.push(p);
                        cur = p;
                    }
                    path.reverse();
                    if path[0] != s {
                        path.insert(0, s);
                    }
                    path.push(s);
                    return Some((path, e.span));
                }
                if members.contains(&e.to) && seen.insert(e.to) {
                    parent.insert(e.to, u);
                    q.push_back(e.to);
                }
            }
        }
        None
    }

    // 3 -----------------------------------------------------------------------------------
    /// Nodes reachable from `start` over declared and known dynamic edges.
    fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.l.nodes.len()];
        let Some(s) = self.start_index() else {
            return seen;
        };
        let mut q = VecDeque::from([s]);
        seen[s] = true;
        while let Some(u) = q.pop_front() {
            let next = self.adj[u]
                .iter()
                .map(|e| e.to)
                .chain(self.dyn_adj[u].iter().copied());
            for w in next {
                if !seen[w] {
                    seen[w] = true;
                    q.push_back(w);
                }
            }
        }
        seen
    }

    fn reachability(&mut self) {
        if self.start_index().is_none() {
            return;
        }
        let seen = self.reachable();
        for (i, n) in self.l.nodes.iter().enumerate() {
            if seen[i] {
                continue;
            }
            let d = if self.has_scripts {
                self.warn("loki-unreachable", "Node is unreachable from the start node via declared edges", n.id.span).hint(format!(
                    "if a script routes here with `_next`, list `{}` in that script node's `x-next: [...]` (a Switchyard key Loki ignores); otherwise connect it with `next`, a route or a fallback, or remove it",
                    n.id.value
                ))
            } else {
                self.warn(
                    "loki-unreachable",
                    "Node is unreachable from the start node",
                    n.id.span,
                )
                .hint("connect it with `next`, an approval route or a fallback, or remove it")
            };
            let d = d.node(n.id.value.clone());
            self.push(d);
        }
    }

    // 4 -----------------------------------------------------------------------------------
    fn terminals(&mut self) {
        let ends: Vec<usize> = (0..self.l.nodes.len())
            .filter(|&i| matches!(self.l.nodes[i].body, NodeBody::End(_)))
            .collect();
        if ends.is_empty() {
            if self.l.nodes.is_empty() {
                return;
            }
            let d = self
                .err("loki-no-end", "Graph has no end nodes; execution would never terminate", self.l.nodes_span)
                .hint("add a node with `type: end` (its `output` is the graph's result) and route to it");
            self.push(d);
            return;
        }
        let Some(start) = &self.l.start else { return };
        if self.start_index().is_none() {
            return;
        }
        let seen = self.reachable();
        if !ends.iter().any(|&i| seen[i]) {
            let (msg, hint) = if self.has_scripts {
                (
                    "No end node is reachable from the start node via declared edges",
                    "a script's `_next` may still route to one; declare such targets in the script node's `x-next: [...]`",
                )
            } else {
                (
                    "No end node is reachable from the start node",
                    "route some path from the start node to an `end` node",
                )
            };
            let d = self
                .warn("loki-end-unreachable", msg, start.span)
                .hint(hint);
            self.push(d);
        }
    }

    // 5 -----------------------------------------------------------------------------------
    fn scripts(&mut self) {
        for n in &self.l.nodes {
            let Some(s) = n.script() else { continue };
            let (Some(p), Some(path)) = (&s.script, &s.script_path) else {
                continue;
            };
            // The engine runs only scripts inside the agent directory (run/script.rs).
            if let Some(resolved) = self.script_outside(&p.value, path) {
                let d = self
                    .err(
                        "loki-script-outside",
                        format!("Script '{}' resolves to '{}', outside the agent directory", p.value, resolved.display()),
                        p.span,
                    )
                    .node(n.id.value.clone())
                    .hint("scripts must live in the agent's folder (a relative path without `..`, no symbolic link out of it); the run refuses this one");
                self.push(d);
                continue;
            }
            if !path.exists() {
                let d = self
                    .err("loki-script-missing", format!("Script file not found: '{}'", path.display()), p.span)
                    .node(n.id.value.clone())
                    .hint(format!(
                        "script paths are relative to the agent directory ({}); create the file or fix the path",
                        self.l.agent_dir.display()
                    ));
                self.push(d);
            } else if path.is_dir() {
                let d = self
                    .err(
                        "loki-script-missing",
                        format!("Script path is a directory: '{}'", path.display()),
                        p.span,
                    )
                    .node(n.id.value.clone())
                    .hint("`script` must name a .sh, .py or .ts file");
                self.push(d);
            }
        }
    }

    /// Where a script path leads when that is outside the agent directory: an absolute path,
    /// `..` climbing out, or (for an existing file) a symbolic link out of it.
    fn script_outside(&self, written: &str, path: &Path) -> Option<PathBuf> {
        let dir = &self.l.agent_dir;
        if let (Ok(real), Ok(real_dir)) = (path.canonicalize(), dir.canonicalize()) {
            return (!real.starts_with(&real_dir)).then_some(real);
        }
        let w = Path::new(written);
        let mut depth = 0i32;
        let mut escapes = w.has_root();
        for c in w.components() {
            match c {
                std::path::Component::ParentDir => depth -= 1,
                std::path::Component::Normal(_) => depth += 1,
                std::path::Component::Prefix(_) | std::path::Component::RootDir => escapes = true,
                std::path::Component::CurDir => {}
            }
            escapes |= depth < 0;
        }
        escapes.then(|| path.to_path_buf())
    }

    // 6 -----------------------------------------------------------------------------------
    fn agent_dir_for(&self, name: &str) -> PathBuf {
        let var = format!("{}_DATA_DIR", name.to_uppercase().replace('-', "_"));
        match std::env::var_os(&var) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => self.l.agents_dir().join(name),
        }
    }

    fn agents(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Agent(a) = &n.body else {
                continue;
            };
            let Some(name) = &a.agent else { continue };
            let dir = self.agent_dir_for(&name.value);
            let msg = if !dir.is_dir() {
                format!("Agent '{}' not found (directory missing)", name.value)
            } else if !dir.join("config.yaml").is_file() && !dir.join("graph.yaml").is_file() {
                format!(
                    "Agent '{}' has neither a config.yaml nor a graph.yaml",
                    name.value
                )
            } else {
                continue;
            };
            let d = self.err("loki-agent-missing", msg, name.span).node(n.id.value.clone()).hint(format!(
                "agent nodes spawn a sibling agent: a directory {} holding config.yaml (normal agent) or graph.yaml (graph agent)",
                dir.display()
            ));
            self.push(d);
        }
    }

    // 7 -----------------------------------------------------------------------------------
    fn approvals(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Approval(a) = &n.body else {
                continue;
            };
            let mut done: Vec<&str> = Vec::new();
            for o in &a.options {
                if done.contains(&o.value.as_str()) {
                    continue;
                }
                done.push(&o.value);
                if a.route(&o.value).is_none() {
                    let d = self
                        .err(
                            "loki-approval-route",
                            format!("Approval option '{}' has no route defined", o.value),
                            o.span,
                        )
                        .node(n.id.value.clone())
                        .hint(format!("add `\"{}\": <node>` under `routes:`", o.value));
                    self.push(d);
                }
            }
            for (k, _) in &a.routes {
                if !a.options.iter().any(|o| o.value == k.value) {
                    let sugg = did_you_mean(&k.value, a.options.iter().map(|o| o.value.as_str()));
                    let hint = match sugg {
                        Some(s) => format!("did you mean the option `{s}`? A route key must equal an option exactly (case-sensitive)"),
                        None => "add it to `options`, or remove it: it is only taken when the user types it as free text".into(),
                    };
                    let d = self
                        .warn(
                            "loki-approval-route",
                            format!("Route '{}' has no corresponding option", k.value),
                            k.span,
                        )
                        .node(n.id.value.clone())
                        .hint(hint);
                    self.push(d);
                }
            }
        }
    }

    // 8 -----------------------------------------------------------------------------------
    fn rag(&mut self) {
        for n in &self.l.nodes {
            let NodeBody::Rag(r) = &n.body else { continue };
            if r.documents.is_empty() {
                let d = self
                    .err("loki-rag", "RAG node has no 'documents'; at least one knowledge source is required", r.documents_span)
                    .node(n.id.value.clone())
                    .hint("list files, directories or URLs under `documents:` (relative paths resolve against the agent directory)");
                self.push(d);
            }
            if n.state_updates.is_none() {
                let d = self
                    .warn("loki-rag", "RAG node has no 'state_updates'; its retrieval result will not be written to state", n.id.span)
                    .node(n.id.value.clone())
                    .hint("add e.g. `state_updates: {context: \"{{output.context}}\"}`");
                self.push(d);
            }
            // What Switchyard does not do (the node runs without it, or fails saying so).
            for (field, set) in [
                ("reranker_model", r.reranker_model.is_some()),
                ("extractor_model", r.extractor_model.is_some()),
                ("extractor_prompt", r.extractor_prompt.is_some()),
                ("graph_hops", r.graph_hops.is_some()),
            ] {
                if set {
                    let d = self
                        .warn(
                            "loki-rag-ignored",
                            format!("rag node field `{field}` is ignored by Switchyard (no rerankers or graph RAG)"),
                            n.id.span,
                        )
                        .node(n.id.value.clone())
                        .hint("retrieval is keyword (BM25) search, fused with vector search when `embedding_model` is set");
                    self.push(d);
                }
            }
            if let Some(dr) = &r.driver
                && RAG_DRIVERS.contains(&dr.value.as_str())
                && dr.value != "yaml"
            {
                let d = self
                    .warn(
                        "loki-rag-ignored",
                        format!("RAG driver '{}' is not supported by Switchyard: the node will fail when it runs", dr.value),
                        dr.span,
                    )
                    .node(n.id.value.clone())
                    .hint("remove `driver` (knowledge bases are YAML files beside the agent)");
                self.push(d);
            }
            if let (Some(size), Some(overlap)) = (r.chunk_size, r.chunk_overlap)
                && overlap >= size
            {
                let d = self
                    .warn(
                        "loki-rag",
                        format!("RAG node's `chunk_overlap` ({overlap}) is not smaller than its `chunk_size` ({size}); the node will fail when it runs"),
                        n.id.span,
                    )
                    .node(n.id.value.clone())
                    .hint("a twentieth of `chunk_size` is the usual overlap");
                self.push(d);
            }
            if let Some(dr) = &r.driver
                && !RAG_DRIVERS.contains(&dr.value.as_str())
            {
                {
                    let hint = match did_you_mean(&dr.value, RAG_DRIVERS.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "remove `driver` for the default (yaml)".into(),
                    };
                    let d = self
                        .err(
                            "loki-rag",
                            format!(
                                "Unknown RAG driver '{}'. Valid drivers: yaml, duckdb, qdrant.",
                                dr.value
                            ),
                            dr.span,
                        )
                        .node(n.id.value.clone())
                        .hint(hint);
                    self.push(d);
                }
            }
        }
    }

    // 9 -----------------------------------------------------------------------------------
    fn llm_tools_and_models(&mut self) {
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

    // 10 ----------------------------------------------------------------------------------
    fn skills(&mut self) {
        let l = self.l;
        let graph_list: Option<Vec<&str>> = l
            .skills
            .enabled_skills
            .as_ref()
            .map(|v| v.iter().map(|s| s.value.as_str()).collect());
        for s in l.skills.enabled_skills.iter().flatten() {
            if let Some(msg) = skill_name_problem(&s.value) {
                let d = self
                    .err(
                        "loki-skill",
                        format!("graph 'enabled_skills' {msg}"),
                        s.span,
                    )
                    .hint(SKILL_NAME_HINT);
                self.push(d);
            }
        }
        for n in &l.nodes {
            let NodeBody::Llm(x) = &n.body else { continue };
            for s in x.skills.enabled_skills.iter().flatten() {
                if let Some(msg) = skill_name_problem(&s.value) {
                    let d = self
                        .err(
                            "loki-skill",
                            format!("llm node 'enabled_skills' {msg}"),
                            s.span,
                        )
                        .node(n.id.value.clone())
                        .hint(SKILL_NAME_HINT);
                    self.push(d);
                    continue;
                }
                if let Some(gl) = &graph_list
                    && !gl.contains(&s.value.as_str())
                {
                    {
                        let d = self
                            .err(
                                "loki-skill",
                                format!(
                                    "llm node 'enabled_skills' references '{}' which is not in graph-level 'enabled_skills' ({})",
                                    s.value,
                                    gl.join(", ")
                                ),
                                s.span,
                            )
                            .node(n.id.value.clone())
                            .hint(match did_you_mean(&s.value, gl.iter().copied()) {
                                Some(x) => format!("did you mean `{x}`? A node may only narrow the graph's list"),
                                None => format!("add `{}` to the graph-level `enabled_skills`, or remove it here", s.value),
                            });
                        self.push(d);
                    }
                }
            }
        }
    }

    // 11 ----------------------------------------------------------------------------------
    fn concurrency(&mut self) {
        if self.l.settings.max_concurrency == 0 {
            let span = self
                .l
                .settings
                .span_of("max_concurrency")
                .unwrap_or(self.l.nodes_span);
            let d = self
                .err("loki-concurrency", "settings.max_concurrency must be >= 1 (got 0); no parallel branch could run", span)
                .hint("remove it for the default (8), or give the number of branches that may run at once");
            self.push(d);
        }
        for n in &self.l.nodes {
            let Some(m) = n.map() else { continue };
            if let Some(mc) = m.max_concurrency.as_ref().filter(|m| m.value == 0) {
                let d = self
                    .err("loki-concurrency", "map node's `max_concurrency` must be >= 1 (got 0); no item could run", mc.span)
                    .node(n.id.value.clone())
                    .hint("remove it to use settings.max_concurrency, or give the number of items that may run at once");
                self.push(d);
            }
        }
    }

    // 12 ----------------------------------------------------------------------------------
    fn map_branches(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            let Some(m) = n.map() else { continue };
            let Some(bref) = &m.branch else { continue };
            let Some(b) = self.node_by(&bref.value) else {
                continue;
            };
            let kind = b.kind_str();
            if matches!(kind, "approval" | "input" | "end" | "map") {
                let d = self
                    .err(
                        "loki-map-branch",
                        format!("map branch '{}' is {} node; a map branch must be an llm, agent, rag or script node", b.id.value, a_kind(kind)),
                        bref.span,
                    )
                    .node(n.id.value.clone())
                    .hint("point `branch` at the node that processes one item; interaction, end and nested map nodes cannot run per item");
                self.push(d);
                continue;
            }
            if matches!(b.body, NodeBody::Unknown) {
                continue;
            }
            if let Some(span) = b.next_span {
                let d = self
                    .err(
                        "loki-map-branch",
                        format!(
                            "node '{}' is the branch of map '{}' and must not declare `next`: a map branch is atomic (the map collects its output and continues with its own `next`)",
                            b.id.value, n.id.value
                        ),
                        span,
                    )
                    .node(b.id.value.clone())
                    .hint("remove `next` from the branch node; put the follow-up on the map node's `next`");
                self.push(d);
            }
            let ok = m.output_key();
            for (k, _) in b.state_updates.iter().flatten() {
                if k.value != ok {
                    let d = self
                        .err(
                            "loki-map-branch",
                            format!(
                                "map branch '{}' writes state key '{}' in `state_updates`; a map branch may only write the map's output_key '{ok}' (everything else it writes is discarded)",
                                b.id.value, k.value
                            ),
                            k.span,
                        )
                        .node(b.id.value.clone())
                        .hint(format!("results reach the graph only through the map's `collect_into`; write `{ok}` or remove this entry"));
                    self.push(d);
                }
            }
            if matches!(b.body, NodeBody::Llm(_) | NodeBody::Agent(_)) {
                let props = b.output_schema_properties();
                if !props.is_empty() {
                    let span = b.output_schema().map(|s| s.span).unwrap_or(b.id.span);
                    let d = self
                        .err(
                            "loki-map-branch",
                            format!(
                                "map branch '{}' has an `output_schema` with properties ({}) that would merge into state; a map branch must not declare them",
                                b.id.value,
                                props.join(", ")
                            ),
                            span,
                        )
                        .node(b.id.value.clone())
                        .hint("remove `output_schema` from the branch node; the map collects each item's result into `collect_into`");
                    self.push(d);
                }
            }
        }
    }

    // 13-15 -------------------------------------------------------------------------------
    fn fanout_groups(&self) -> Vec<Group<'a>> {
        let l: &'a LokiDoc = self.l;
        let mut out = Vec::new();
        for n in &l.nodes {
            if n.next.len() < 2 {
                continue;
            }
            let mut members: Vec<(usize, Span)> = Vec::new();
            for t in &n.next {
                if let Some(j) = self.idx(&t.value)
                    && !members.iter().any(|(m, _)| *m == j)
                {
                    members.push((j, t.span));
                }
            }
            out.push(Group { source: n, members });
        }
        out
    }

    fn parallel_ui(&mut self, groups: &[Group<'_>]) {
        for g in groups {
            for &(j, span) in &g.members {
                let t = &self.l.nodes[j];
                if matches!(t.body, NodeBody::Approval(_) | NodeBody::Input(_)) {
                    let d = self
                        .err(
                            "loki-parallel-ui",
                            format!(
                                "{} node is an immediate target of a fan-out (from '{}'); it cannot ask the user from a parallel branch",
                                t.kind_str(),
                                g.source.id.value
                            ),
                            span,
                        )
                        .node(t.id.value.clone())
                        .hint("ask before the fan-out, or after the node the branches join at");
                    self.push(d);
                }
            }
        }
    }

    fn parallel_writes(&mut self, groups: &[Group<'_>]) {
        let mut reported: HashSet<usize> = HashSet::new();
        for g in groups {
            for &(j, _) in &g.members {
                let t = &self.l.nodes[j];
                if matches!(t.body, NodeBody::Script(_))
                    && t.state_updates.is_none()
                    && reported.insert(j)
                {
                    let d = self
                        .err(
                            "loki-parallel-write",
                            "script node is in a parallel branch but declares no `state_updates`; the keys it writes cannot be checked against its siblings",
                            t.id.span,
                        )
                        .node(t.id.value.clone())
                        .hint("add `state_updates: {}` (or the keys it sets); keys it prints must not collide with sibling branches unless they have a reducer");
                    self.push(d);
                }
            }
        }
        for g in groups {
            let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for &(j, _) in &g.members {
                let t = &self.l.nodes[j];
                for k in t.write_set() {
                    writers.entry(k).or_default().push(t.id.value.clone());
                }
            }
            for (k, mut ws) in writers {
                if ws.len() < 2 || self.l.reducer(&k).is_some() {
                    continue;
                }
                ws.sort();
                let span = g.source.next_span.unwrap_or(g.source.id.span);
                let d = self
                    .err(
                        "loki-parallel-write",
                        format!(
                            "nodes [{}] all write key '{k}' in the same parallel super-step but no reducer is declared for '{k}'. Add `reducers: {{ {k}: <reducer> }}`",
                            ws.join(", ")
                        ),
                        span,
                    )
                    .node(g.source.id.value.clone())
                    .hint("reducers: append, extend, concat, sum, max, min, merge, overwrite; without one the run fails at the join");
                self.push(d);
            }
        }
    }

    fn parallel_reads(&mut self, groups: &[Group<'_>]) {
        for g in groups {
            let writes_of: Vec<Vec<String>> = g
                .members
                .iter()
                .map(|&(b, _)| self.l.nodes[b].write_set())
                .collect();
            for &(a, _) in &g.members {
                let na = &self.l.nodes[a];
                let reads = na.read_set();
                if reads.is_empty() {
                    continue;
                }
                for (bi, &(b, _)) in g.members.iter().enumerate() {
                    if a == b {
                        continue;
                    }
                    let nb = &self.l.nodes[b];
                    let writes = &writes_of[bi];
                    let both: Vec<String> = reads
                        .iter()
                        .filter(|k| writes.contains(k))
                        .cloned()
                        .collect();
                    if both.is_empty() {
                        continue;
                    }
                    let d = self
                        .err(
                            "loki-parallel-read",
                            format!(
                                "node '{}' reads state key(s) {} which sibling parallel branch '{}' writes in the same super-step; it would see the value from before the fan-out",
                                na.id.value,
                                list(&both),
                                nb.id.value
                            ),
                            na.id.span,
                        )
                        .node(na.id.value.clone())
                        .hint("read the key after the branches join, or write it before the fan-out");
                    self.push(d);
                }
            }
        }
    }

    // Beyond upstream ----------------------------------------------------------------------
    fn next_rules(&mut self) {
        let l = self.l;
        let branches: HashSet<&str> = l
            .nodes
            .iter()
            .filter_map(|n| n.map())
            .filter_map(|m| m.branch.as_ref())
            .map(|b| b.value.as_str())
            .collect();
        for (i, n) in l.nodes.iter().enumerate() {
            let kind = n.kind_str();
            match &n.body {
                NodeBody::Approval(_) | NodeBody::End(_) => {
                    if let Some(span) = n.next_span {
                        let msg = if kind == "end" {
                            "`next` on an end node is ignored: the run ends here"
                        } else {
                            "`next` on an approval node is never followed: the answer routes with `routes` / `on_other`"
                        };
                        let d = self
                            .warn("loki-next-ignored", msg, span)
                            .node(n.id.value.clone())
                            .hint("remove `next` (Loki's validator still counts it as an edge for cycles and fan-out checks)");
                        self.push(d);
                    }
                    continue;
                }
                NodeBody::Unknown => continue,
                _ => {}
            }
            if let (Some(span), true) = (n.next_span, n.next_is_list && n.next.is_empty()) {
                if matches!(n.body, NodeBody::Script(_)) && !self.dyn_adj[i].is_empty() {
                    continue;
                }
                let d = self
                    .err("loki-next-empty", "`next: []` continues nowhere: the run fails (\"frontier emptied without reaching an End node\")", span)
                    .node(n.id.value.clone())
                    .hint("name the node to continue with, or remove `next`");
                self.push(d);
                continue;
            }
            // A node listed twice in one fan-out runs once (the frontier is a set).
            let mut seen_next: HashSet<&str> = HashSet::new();
            for t in &n.next {
                if !seen_next.insert(t.value.as_str()) {
                    let d = self
                        .warn("loki-fanout-duplicate", format!("'{}' is listed more than once in `next`; it runs once", t.value), t.span)
                        .node(n.id.value.clone())
                        .hint("remove the repeated entry");
                    self.push(d);
                }
            }
            if let NodeBody::Map(m) = &n.body
                && let Some(over) = &m.over
            {
                let text = over.text.trim();
                let single = expr::template::parse(text).refs.first().is_some_and(|r| r.range == (0..text.len()));
                if !single && !text.is_empty() {
                    let d = self
                        .err(
                            "loki-map-over",
                            "`over` is not a single `{{key}}` reference: it renders to text, and the map fails (\"must resolve to an array, got string\")",
                            over.span(),
                        )
                        .node(n.id.value.clone())
                        .hint("write exactly one reference to a list in state, e.g. `over: \"{{items}}\"`");
                    self.push(d);
                }
            }
            if let NodeBody::Input(_) = &n.body
                && n.next.len() > 1
            {
                {
                    let span = n.next_span.unwrap_or(n.id.span);
                    let d = self
                        .warn(
                            "loki-next-ignored",
                            format!("an input node continues with its first `next` entry only ('{}'); the others never run", n.next[0].value),
                            span,
                        )
                        .node(n.id.value.clone())
                        .hint("give an input node a single `next`; fan out from the node after it");
                    self.push(d);
                }
            }
            let needs_next = matches!(
                n.body,
                NodeBody::Llm(_)
                    | NodeBody::Agent(_)
                    | NodeBody::Rag(_)
                    | NodeBody::Map(_)
                    | NodeBody::Input(_)
            );
            if needs_next && n.next_span.is_none() && !branches.contains(n.id.value.as_str()) {
                let d = self
                    .err(
                        "loki-no-next",
                        format!("{kind} node has no `next`: the run fails when it finishes (\"{kind} node '{}' has no `next` and is not an end node\")", n.id.value),
                        n.id.span,
                    )
                    .node(n.id.value.clone())
                    .hint("add `next: <node>`; only end nodes (and map branches) may have none");
                self.push(d);
            }
        }
    }

    fn zero_limits(&mut self) {
        let st = &self.l.settings;
        if st.max_loop_iterations == 0
            && let Some(span) = st.span_of("max_loop_iterations")
        {
            {
                let d = self
                    .warn("loki-zero", "`max_loop_iterations: 0` fails the run at the first node visit; it does not mean \"unlimited\"", span)
                    .hint("remove it for the default (100), or give how many times one node may run");
                self.push(d);
            }
        }
        if st.timeout == Some(0)
            && let Some(span) = st.span_of("timeout")
        {
            {
                let d = self
                    .warn(
                        "loki-zero",
                        "`timeout: 0` fails the run immediately; it does not mean \"unlimited\"",
                        span,
                    )
                    .hint("remove it for no time limit, or give the limit in seconds");
                self.push(d);
            }
        }
        for n in &self.l.nodes {
            let mut zeros: Vec<(&Sp<u64>, &str)> = Vec::new();
            match &n.body {
                NodeBody::Script(s) => zeros.extend(s.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Agent(a) => zeros.extend(a.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Rag(r) => zeros.extend(r.timeout.iter().map(|t| (t, "timeout"))),
                NodeBody::Llm(x) => {
                    zeros.extend(x.timeout.iter().map(|t| (t, "timeout")));
                    zeros.extend(x.max_attempts.iter().map(|t| (t, "max_attempts")));
                    zeros.extend(x.max_iterations.iter().map(|t| (t, "max_iterations")));
                }
                _ => {}
            }
            for (v, key) in zeros {
                if v.value != 0 {
                    continue;
                }
                let what = match key {
                    "max_attempts" => {
                        "the node fails without calling the model (\"llm node exhausted retries\")"
                    }
                    "max_iterations" => {
                        "the node fails (\"llm node ended without producing output\")"
                    }
                    _ => "the node times out at once",
                };
                let d = self
                    .warn(
                        "loki-zero",
                        format!("`{key}: 0` does not mean \"unlimited\": {what}"),
                        v.span,
                    )
                    .node(n.id.value.clone())
                    .hint(format!(
                        "remove `{key}` for the default, or give a positive number"
                    ));
                self.push(d);
            }
        }
    }

    fn script_extensions(&mut self) {
        for n in &self.l.nodes {
            let Some(p) = n.script().and_then(|s| s.script.as_ref()) else {
                continue;
            };
            let ext = Path::new(&p.value)
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase());
            let msg = match ext.as_deref() {
                Some("sh" | "py" | "ts") => continue,
                None => format!("Script has no file extension: '{}'", p.value),
                Some(e) => format!("Unsupported script extension '.{e}' for '{}'", p.value),
            };
            let d = self
                .err("loki-script-ext", msg, p.span)
                .node(n.id.value.clone())
                .hint("Loki picks the interpreter by extension: .sh (bash), .py (python3), .ts (npx tsx); the node fails every time it runs otherwise");
            self.push(d);
        }
    }

    fn templates(&mut self) {
        for n in &self.l.nodes {
            for (field, t) in n.templates() {
                for issue in expr::template::lint(&t.text) {
                    let s = value_offset_to_source(self.file, &t.node, issue.range.start);
                    let e = value_offset_to_source(self.file, &t.node, issue.range.end);
                    let d = self
                        .warn("loki-template", format!("{} (in `{field}`)", issue.message), Span::new(s, e.max(s)))
                        .node(n.id.value.clone())
                        .hint("a reference is `{{key}}`, `{{key.field}}` or `{{key[0]}}`, with no spaces; anything else stays literal text");
                    self.push(d);
                }
            }
        }
    }

    /// Every state key the graph visibly writes or seeds, or `None` when it cannot be known
    /// (script or agent nodes, output schemas without `properties`).
    fn known_state_keys(&self) -> Option<HashSet<String>> {
        let l = self.l;
        let mut keys: HashSet<String> = ["output", "choice", "input", "initial_prompt"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        keys.extend(l.initial_state_keys.iter().map(|k| k.value.clone()));
        for n in &l.nodes {
            match &n.body {
                NodeBody::Script(_) | NodeBody::Agent(_) | NodeBody::Unknown => return None,
                NodeBody::Map(m) => {
                    keys.extend(m.collect_into.iter().map(|k| k.value.clone()));
                    keys.extend(m.as_key.iter().map(|k| k.value.clone()));
                    keys.insert(m.output_key().to_string());
                }
                _ => {}
            }
            n.output_schema().map_or(Some(()), |s| {
                s.value
                    .get("properties")
                    .and_then(|p| p.as_object())
                    .map(|_| ())
            })?;
            keys.extend(n.write_set());
        }
        Some(keys)
    }

    fn state_keys(&mut self) {
        let Some(known) = self.known_state_keys() else {
            return;
        };
        let mut sorted: Vec<&str> = known.iter().map(String::as_str).collect();
        sorted.sort();
        for n in &self.l.nodes {
            for (field, t) in n.templates() {
                let mut done: Vec<String> = Vec::new();
                for r in expr::template::parse(&t.text).refs {
                    if r.root.is_empty() || known.contains(&r.root) || done.contains(&r.root) {
                        continue;
                    }
                    done.push(r.root.clone());
                    let s = value_offset_to_source(self.file, &t.node, r.range.start);
                    let e = value_offset_to_source(self.file, &t.node, r.range.end);
                    let hint = match did_you_mean(&r.root, sorted.iter().copied()) {
                        Some(x) => format!("did you mean `{{{{{x}}}}}`?"),
                        None => format!(
                            "seed it in `initial_state` (e.g. `{}: \"\"`) or write it with `state_updates`; in prompts and questions a missing key fails the node, elsewhere it renders empty",
                            r.root
                        ),
                    };
                    let d = self
                        .warn(
                            "loki-state-key",
                            format!("`{field}` reads state key '{}', which no node writes and `initial_state` does not seed", r.root),
                            Span::new(s, e.max(s)),
                        )
                        .node(n.id.value.clone())
                        .hint(hint);
                    self.push(d);
                }
            }
        }
    }

    fn null_leak(&mut self, groups: &[Group<'_>]) {
        if self.l.reducer("output").is_some()
            || self
                .l
                .initial_state_keys
                .iter()
                .any(|k| k.value == "output")
        {
            return;
        }
        for g in groups {
            let mut ws: Vec<String> = g
                .members
                .iter()
                .map(|&(j, _)| &self.l.nodes[j])
                .filter(|t| {
                    matches!(
                        t.body,
                        NodeBody::Llm(_) | NodeBody::Agent(_) | NodeBody::Rag(_)
                    )
                })
                .filter(|t| t.state_updates.is_some())
                .map(|t| t.id.value.clone())
                .collect();
            if ws.len() < 2 {
                continue;
            }
            ws.sort();
            let span = g.source.next_span.unwrap_or(g.source.id.span);
            let d = self
                .warn(
                    "loki-null-leak",
                    format!(
                        "nodes [{}] run in parallel and have `state_updates`: Loki leaves `output: null` in state after each of them, so both branches write `output` and the run fails at the join (\"Key 'output' was written by {} parallel branches but has no reducer declared\") unless `output` already exists",
                        ws.join(", "),
                        ws.len()
                    ),
                    span,
                )
                .node(g.source.id.value.clone())
                .hint("add `reducers: {output: overwrite}` (what Loki's own librarian agent does)");
            self.push(d);
        }
    }

    fn map_output_trap(&mut self) {
        let l = self.l;
        for n in &l.nodes {
            let Some(m) = n.map() else { continue };
            let Some(b) = m.branch.as_ref().and_then(|b| self.node_by(&b.value)) else {
                continue;
            };
            if !matches!(
                b.body,
                NodeBody::Llm(_) | NodeBody::Agent(_) | NodeBody::Rag(_)
            ) || m.output_key() != "output"
            {
                continue;
            }
            let span = m.branch.as_ref().map(|b| b.span).unwrap_or(n.id.span);
            let d = self
                .warn(
                    "loki-map-output",
                    format!(
                        "map branch '{}' is {} node and the map collects its `output`, but Loki binds `output` only inside the node's `state_updates`: every item collects null or a stale value, or fails",
                        b.id.value,
                        a_kind(b.kind_str())
                    ),
                    span,
                )
                .node(n.id.value.clone())
                .hint(format!(
                    "set `output_key: result` on the map and `state_updates: {{result: \"{{{{output}}}}\"}}` on '{}' (stored as a string)",
                    b.id.value
                ));
            self.push(d);
        }
    }

    fn seeded_initial_prompt(&mut self) {
        if let Some(k) = self
            .l
            .initial_state_keys
            .iter()
            .find(|k| k.value == "initial_prompt")
        {
            let d = self
                .warn("loki-initial-prompt", "`initial_prompt` in `initial_state` is always replaced by the user's input when a run starts", k.span)
                .hint("remove it; use another key for a default");
            self.push(d);
        }
    }
}

/// Above this many nodes, unknown references get no "did you mean" (it compares every id).
const MAX_SUGGEST_NODES: usize = 2000;

const SKILL_NAME_HINT: &str = "skill names use letters, digits, '-' and '_' only";

fn skill_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        Some("contains a blank skill name".into())
    } else if !is_skill_name(name) {
        Some(format!("entry '{name}' is not a valid skill name"))
    } else {
        None
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

#[cfg(test)]
mod tests {
    use super::*;
    use syntax::diag::Severity;
    use crate::doc::{Model, load_path, load_str};
    use std::path::Path;

    fn fixtures() -> PathBuf {
        crate::testdata::workspace_root().join("tests/fixtures/loki/agents")
    }

    fn check_doc(doc: &Document) -> Vec<Diagnostic> {
        let Model::Loki(l) = &doc.model else {
            panic!("not a Loki document: {:?}", doc.diagnostics)
        };
        let g = crate::graph::lower_loki::lower(doc, l);
        let mut diags = Vec::new();
        validate(doc, l, &g, &mut diags);
        diags
    }

    /// Validate `text` as `<fixtures>/<agent>/graph.yaml`; load diagnostics must be clean.
    fn check_in(agent: &str, text: &str) -> Vec<Diagnostic> {
        let doc = load_str(&fixtures().join(agent).join("graph.yaml"), text);
        assert!(
            !doc.diagnostics.iter().any(|d| d.is_error()),
            "load errors: {:#?}",
            doc.diagnostics
        );
        check_doc(&doc)
    }

    fn check(text: &str) -> Vec<Diagnostic> {
        check_in("scratch", text)
    }

    fn codes(d: &[Diagnostic]) -> Vec<&str> {
        d.iter().map(|d| d.code.as_str()).collect()
    }

    fn find<'d>(d: &'d [Diagnostic], code: &str) -> &'d Diagnostic {
        d.iter()
            .find(|x| x.code == code)
            .unwrap_or_else(|| panic!("no {code} in {d:#?}"))
    }

    fn count(d: &[Diagnostic], code: &str) -> usize {
        d.iter().filter(|x| x.code == code).count()
    }

    const HEAD: &str = "name: t\nversion: \"1.0\"\n";

    #[test]
    fn scripts_outside_the_agent_directory_are_errors() {
        for (script, outside) in [
            ("../x.sh", true),
            ("/etc/hostname", true),
            ("a/../../x.py", true),
            ("a/../x.sh", false),
            ("./x.sh", false),
        ] {
            let d = check(&format!(
                "{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: {script}\n    next: e\n  e:\n    type: end\n"
            ));
            assert_eq!(count(&d, "loki-script-outside"), usize::from(outside), "{script}: {d:#?}");
            if outside {
                let x = find(&d, "loki-script-outside");
                assert_eq!((x.line, x.column, x.severity), (7, 13, Severity::Error), "{x:?}");
                assert!(x.message.contains("outside the agent directory"), "{x:?}");
                assert_eq!(count(&d, "loki-script-missing"), 0, "{d:#?}");
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_script_linked_out_of_the_agent_directory_is_an_error() {
        let root = std::env::temp_dir().join(format!("sy-script-link-{}", std::process::id()));
        let agent = root.join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(root.join("outside.sh"), "echo '{}'\n").unwrap();
        std::fs::write(agent.join("inside.sh"), "echo '{}'\n").unwrap();
        let _ = std::os::unix::fs::symlink(root.join("outside.sh"), agent.join("link.sh"));
        let text = |s: &str| format!("{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: {s}\n    next: e\n  e:\n    type: end\n");
        let d = check_doc(&load_str(&agent.join("graph.yaml"), &text("link.sh")));
        assert_eq!(count(&d, "loki-script-outside"), 1, "{d:#?}");
        let d = check_doc(&load_str(&agent.join("graph.yaml"), &text("inside.sh")));
        assert_eq!(count(&d, "loki-script-outside"), 0, "{d:#?}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn map_over_must_be_one_reference() {
        for (over, bad) in [("{{xs}}", false), (" {{xs}} ", false), ("{{xs}} and more", true), ("xs", true), ("{{xs}}{{ys}}", true)] {
            let d = check(&format!(
                "{HEAD}initial_state: {{xs: [1], ys: [2]}}\nstart: m\nnodes:\n  m:\n    type: map\n    over: \"{over}\"\n    as: x\n    branch: b\n    collect_into: out\n    next: e\n  b:\n    type: script\n    script: b.sh\n  e:\n    type: end\n"
            ));
            assert_eq!(count(&d, "loki-map-over"), usize::from(bad), "{over}: {d:#?}");
            if bad {
                assert_eq!(find(&d, "loki-map-over").line, 8);
            }
        }
    }

    #[test]
    fn repeated_fanout_entries_warn() {
        let d = check(&format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: [b, c, b]\n  b:\n    type: end\n  c:\n    type: end\n"
        ));
        let x = find(&d, "loki-fanout-duplicate");
        assert_eq!((x.line, x.column, x.severity), (8, 18, Severity::Warning), "{x:?}");
        assert_eq!(count(&d, "loki-fanout-duplicate"), 1);
    }

    #[test]
    fn output_schema_sanity_is_a_warning() {
        let doc = load_str(
            &fixtures().join("scratch/graph.yaml"),
            &format!("{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    output_schema: {{type: objekt}}\n    next: e\n  e:\n    type: end\n"),
        );
        let x = doc.diagnostics.iter().find(|d| d.code == "json-schema").expect("json-schema");
        assert_eq!((x.line, x.column, x.severity), (8, 27, Severity::Warning), "{x:?}");
    }

    #[test]
    fn merge_keys_in_untyped_nodes_are_reported() {
        let doc = load_str(
            &fixtures().join("scratch/graph.yaml"),
            &format!("{HEAD}d: &d {{type: end}}\nstart: a\nnodes:\n  a:\n    <<: *d\n"),
        );
        let x = doc.diagnostics.iter().find(|d| d.code == "merge-key").expect("merge-key");
        assert_eq!((x.line, x.column), (7, 5), "{:#?}", doc.diagnostics);
    }

    #[test]
    fn demo_fixture_is_clean() {
        let doc = load_path(&fixtures().join("demo"));
        assert!(doc.diagnostics.is_empty(), "{:#?}", doc.diagnostics);
        let d = check_doc(&doc);
        assert!(d.is_empty(), "{d:#?}");
    }

    #[test]
    fn references_are_positioned_with_labels() {
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [go]\n    routes:\n      go: b\n    on_other: nowhere\n  b:\n    type: llm\n    prompt: p\n    fallback: ed\n    next: [e, zz]\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let refs: Vec<_> = d.iter().filter(|x| x.code == "loki-ref").collect();
        assert_eq!(refs.len(), 3, "{d:#?}");
        assert_eq!(
            refs[0].message,
            "References non-existent node 'nowhere' in approval 'on_other'"
        );
        assert_eq!((refs[0].line, refs[0].column), (11, 15));
        assert_eq!(refs[0].node.as_deref(), Some("a"));
        assert_eq!(
            refs[1].message,
            "References non-existent node 'zz' in 'next'"
        );
        assert_eq!((refs[1].line, refs[1].column), (16, 15));
        assert_eq!(
            refs[2].message,
            "References non-existent node 'ed' in llm 'fallback'"
        );
        assert!(
            refs[2].hint.as_deref().unwrap().contains("`e`"),
            "{:?}",
            refs[2]
        );
        assert!(refs.iter().all(|r| r.is_error()));
        // x-next targets are checked too.
        let d = check(&format!(
            "{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: x.sh\n    x-next: [e, ghost]\n  e:\n    type: end\n"
        ));
        assert_eq!(
            find(&d, "loki-ref").message,
            "References non-existent node 'ghost' in 'x-next'"
        );
    }

    #[test]
    fn cycles_report_the_whole_loop() {
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: b\n  b:\n    type: llm\n    prompt: p\n    next: c\n  c:\n    type: llm\n    prompt: p\n    fallback: a\n    next: e\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let c = find(&d, "loki-cycle");
        assert_eq!(c.message, "Cycle detected: a -> b -> c -> a");
        assert_eq!(
            (c.line, c.column),
            (16, 15),
            "at the reference that closes the loop"
        );
        assert_eq!(c.node.as_deref(), Some("c"));
        assert!(c.hint.as_deref().unwrap().contains("_next"));
        // A self-loop through on_other (upstream rejects it too).
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [ok]\n    routes: {{ok: e}}\n    on_other: a\n  e:\n    type: end\n"
        );
        assert_eq!(
            find(&check(&src), "loki-cycle").message,
            "Cycle detected: a -> a"
        );
        // Loops through script `_next` are fine.
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: g\n  g:\n    type: script\n    script: g.sh\n    x-next: [a, e]\n  e:\n    type: end\n"
        );
        assert_eq!(count(&check(&src), "loki-cycle"), 0);
    }

    #[test]
    fn long_cycles_are_shortened_in_the_message() {
        let mut src = format!("{HEAD}start: n0\nnodes:\n");
        for i in 0..100 {
            src += &format!(
                "  n{i}:\n    type: llm\n    prompt: p\n    next: n{}\n",
                (i + 1) % 100
            );
        }
        src += "  e:\n    type: end\n";
        let c = find(&check(&src), "loki-cycle").message.clone();
        assert!(c.starts_with("Cycle detected: n0 -> n1 -> "), "{c}");
        assert!(
            c.contains("... (51 more)") && c.ends_with("n98 -> n99 -> n0"),
            "{c}"
        );
    }

    #[test]
    fn unreachable_nodes_and_dynamic_reachability() {
        let no_scripts =
            format!("{HEAD}start: a\nnodes:\n  a:\n    type: end\n  lost:\n    type: end\n");
        let d = check(&no_scripts);
        let u = find(&d, "loki-unreachable");
        assert_eq!(u.severity, Severity::Warning);
        assert_eq!(u.message, "Node is unreachable from the start node");
        assert!(!u.hint.as_deref().unwrap().contains("_next"));
        assert_eq!((u.line, u.column, u.node.as_deref()), (7, 3, Some("lost")));
        let with_script = format!(
            "{HEAD}start: s\nnodes:\n  s:\n    type: script\n    script: s.sh\n  e:\n    type: end\n"
        );
        let d = check(&with_script);
        assert!(
            find(&d, "loki-unreachable")
                .hint
                .as_deref()
                .unwrap()
                .contains("x-next")
        );
        assert_eq!(find(&d, "loki-end-unreachable").severity, Severity::Warning);
        let declared = with_script.replace("script: s.sh\n", "script: s.sh\n    x-next: [e]\n");
        let d = check(&declared);
        assert_eq!(
            count(&d, "loki-unreachable") + count(&d, "loki-end-unreachable"),
            0,
            "{d:#?}"
        );
    }

    #[test]
    fn terminal_checks() {
        let d = check(&format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: a2\n  a2:\n    type: script\n    script: x.sh\n"
        ));
        let e = find(&d, "loki-no-end");
        assert!(e.is_error());
        assert_eq!(
            e.message,
            "Graph has no end nodes; execution would never terminate"
        );
        assert_eq!(e.line, 4, "at `nodes:`");
        assert_eq!(
            count(&d, "loki-end-unreachable"),
            0,
            "4b is skipped when 4a fires"
        );
    }

    #[test]
    fn scripts_must_exist_with_a_known_extension() {
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: script\n    script: scripts/route.sh\n    next: b\n  b:\n    type: script\n    script: scripts/nope.sh\n    next: c\n  c:\n    type: script\n    script: scripts/run.rb\n    next: e\n  e:\n    type: end\n"
        );
        let d = check_in("demo", &src);
        let m: Vec<_> = d
            .iter()
            .filter(|x| x.code == "loki-script-missing")
            .collect();
        assert_eq!(m.len(), 2, "{d:#?}");
        assert!(
            m[0].message.starts_with("Script file not found: '")
                && m[0].message.ends_with("demo/scripts/nope.sh'"),
            "{:?}",
            m[0]
        );
        assert_eq!(
            (m[0].line, m[0].column, m[0].node.as_deref()),
            (11, 13, Some("b"))
        );
        let ext = find(&d, "loki-script-ext");
        assert_eq!(
            ext.message,
            "Unsupported script extension '.rb' for 'scripts/run.rb'"
        );
    }

    #[test]
    fn agent_nodes_name_sibling_agents() {
        let node = |a: &str| {
            format!(
                "{HEAD}start: a\nnodes:\n  a:\n    type: agent\n    agent: {a}\n    prompt: p\n    next: e\n  e:\n    type: end\n"
            )
        };
        assert_eq!(count(&check(&node("helper")), "loki-agent-missing"), 0);
        assert_eq!(count(&check(&node("demo")), "loki-agent-missing"), 0);
        let d = check(&node("ghost"));
        let m = find(&d, "loki-agent-missing");
        assert_eq!(m.message, "Agent 'ghost' not found (directory missing)");
        assert_eq!((m.line, m.column), (7, 12));
        let d = check(&node("hollow"));
        assert_eq!(
            find(&d, "loki-agent-missing").message,
            "Agent 'hollow' has neither a config.yaml nor a graph.yaml"
        );
    }

    #[test]
    fn approval_routes_and_options() {
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options:\n      - approve\n      - revise\n    routes:\n      approve: e\n      Approve: e\n    on_other: e\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let r: Vec<_> = d
            .iter()
            .filter(|x| x.code == "loki-approval-route")
            .collect();
        assert_eq!(r.len(), 2, "{d:#?}");
        assert!(r[0].is_error());
        assert_eq!(
            r[0].message,
            "Approval option 'revise' has no route defined"
        );
        assert_eq!((r[0].line, r[0].column), (10, 9));
        assert_eq!(r[1].severity, Severity::Warning);
        assert_eq!(r[1].message, "Route 'Approve' has no corresponding option");
        assert!(r[1].hint.as_deref().unwrap().contains("`approve`"));
    }

    #[test]
    fn rag_checks() {
        let src = format!(
            "{HEAD}start: r\nnodes:\n  r:\n    type: rag\n    documents: []\n    driver: duckdv\n    next: e\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let r: Vec<_> = d.iter().filter(|x| x.code == "loki-rag").collect();
        assert_eq!(r.len(), 3, "{d:#?}");
        assert_eq!(
            r[0].message,
            "RAG node has no 'documents'; at least one knowledge source is required"
        );
        assert_eq!((r[0].line, r[0].column), (7, 16));
        assert_eq!(r[1].severity, Severity::Warning);
        assert_eq!(
            r[2].message,
            "Unknown RAG driver 'duckdv'. Valid drivers: yaml, duckdb, qdrant."
        );
        assert!(r[2].hint.as_deref().unwrap().contains("`duckdb`"));
        let ok = src.replace("documents: []", "documents: [./k]").replace(
            "    driver: duckdv\n",
            "    state_updates: {c: \"{{output.context}}\"}\n",
        );
        assert_eq!(count(&check(&ok), "loki-rag"), 0);
        assert_eq!(count(&check(&ok), "loki-rag-ignored"), 0);
        let extras = ok.replace(
            "    next: e\n  e:",
            "    graph_hops: 1\n    reranker_model: m\n    driver: qdrant\n    chunk_size: 10\n    chunk_overlap: 10\n    next: e\n  e:",
        );
        let d = check(&extras);
        let ignored: Vec<_> = d.iter().filter(|x| x.code == "loki-rag-ignored").collect();
        assert_eq!(ignored.len(), 3, "{d:#?}");
        assert!(ignored.iter().all(|x| x.severity == Severity::Warning));
        assert!(ignored.iter().any(|x| x.message.contains("`graph_hops`")));
        assert!(ignored.iter().any(|x| x.message.contains("RAG driver 'qdrant' is not supported")));
        assert!(d.iter().any(|x| x.code == "loki-rag" && x.message.contains("`chunk_overlap` (10)")));
        assert!(!d.iter().any(|x| x.is_error()), "{d:#?}");
    }

    #[test]
    fn llm_tools_mcp_and_models() {
        let src = "name: t\nglobal_tools: [web_search.sh]\nmcp_servers: [ddg]\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    model: gpt4\n    tools: [web_search, classify, lookup, web_search.sh, clasify, \"mcp:ddg\", \"mcp:dgg\"]\n    next: e\n  e:\n    type: end\n";
        let d = check_in("demo", src);
        let tools: Vec<_> = d.iter().filter(|x| x.code == "loki-tool").collect();
        assert_eq!(tools.len(), 2, "{d:#?}");
        assert!(tools.iter().all(|t| t.is_error()));
        assert_eq!(
            tools[0].message,
            "llm node references unknown tool 'web_search.sh'"
        );
        assert!(
            tools[0]
                .hint
                .as_deref()
                .unwrap()
                .contains("without the file extension")
        );
        assert_eq!(
            tools[1].message,
            "llm node references unknown tool 'clasify'"
        );
        assert!(tools[1].hint.as_deref().unwrap().contains("`classify`"));
        let mcp = find(&d, "loki-mcp");
        assert_eq!(
            mcp.message,
            "llm node references unknown MCP server 'mcp:dgg'"
        );
        assert_eq!(mcp.line, 10);
        let m = find(&d, "loki-model");
        assert_eq!(m.severity, Severity::Warning);
        assert_eq!((m.line, m.column), (9, 12));
        // Nothing to check against: warnings, not errors.
        let bare = "name: t\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    tools: [anything]\n    next: e\n  e:\n    type: end\n";
        let d = check(bare);
        assert_eq!(find(&d, "loki-tool").severity, Severity::Warning);
    }

    #[test]
    fn skills_checks() {
        let src = format!(
            "{HEAD}enabled_skills: [code-review, 'bad name']\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    enabled_skills: [code-review, git-master, '']\n    next: e\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let s: Vec<_> = d.iter().filter(|x| x.code == "loki-skill").collect();
        assert_eq!(s.len(), 3, "{d:#?}");
        assert_eq!(
            s[0].message,
            "graph 'enabled_skills' entry 'bad name' is not a valid skill name"
        );
        assert_eq!(
            s[1].message,
            "llm node 'enabled_skills' references 'git-master' which is not in graph-level 'enabled_skills' (code-review, bad name)"
        );
        assert_eq!(
            s[2].message,
            "llm node 'enabled_skills' contains a blank skill name"
        );
    }

    #[test]
    fn concurrency_must_be_positive() {
        let src = format!(
            "{HEAD}settings:\n  max_concurrency: 0\nstart: m\nnodes:\n  m:\n    type: map\n    over: \"{{{{xs}}}}\"\n    as: x\n    branch: w\n    collect_into: out\n    max_concurrency: 0\n    next: e\n  w:\n    type: script\n    script: w.sh\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let c: Vec<_> = d.iter().filter(|x| x.code == "loki-concurrency").collect();
        assert_eq!(c.len(), 2, "{d:#?}");
        assert_eq!((c[0].line, c[0].column), (4, 20));
        assert!(
            c[0].message
                .starts_with("settings.max_concurrency must be >= 1 (got 0)")
        );
        assert!(
            c[1].message
                .starts_with("map node's `max_concurrency` must be >= 1 (got 0)")
        );
    }

    #[test]
    fn map_branch_contract() {
        let map = |branch: &str| {
            format!(
                "{HEAD}start: m\nnodes:\n  m:\n    type: map\n    over: \"{{{{xs}}}}\"\n    as: x\n    branch: b\n    collect_into: out\n    output_key: r\n    next: e\n  b:\n{branch}  e:\n    type: end\n"
            )
        };
        let d = check(&map("    type: input\n    question: q\n"));
        let m = find(&d, "loki-map-branch");
        assert_eq!(m.node.as_deref(), Some("m"));
        assert!(m.message.contains("is an input node"), "{m:?}");
        assert_eq!(
            count(&d, "loki-map-branch"),
            1,
            "other map checks are skipped"
        );
        let d = check(&map(
            "    type: llm\n    prompt: p\n    state_updates: {r: \"{{output}}\", other: x}\n    output_schema: {type: object, properties: {z: {}, a: {}}}\n    next: e\n",
        ));
        let m: Vec<_> = d.iter().filter(|x| x.code == "loki-map-branch").collect();
        assert_eq!(m.len(), 3, "{d:#?}");
        assert!(m.iter().all(|x| x.node.as_deref() == Some("b")));
        assert!(m[0].message.contains("must not declare `next`"));
        assert!(m[1].message.contains("writes state key 'other'"));
        assert!(m[2].message.contains("properties (a, z)"));
        let ok = check(&map(
            "    type: script\n    script: w.sh\n    state_updates: {r: x}\n",
        ));
        assert_eq!(count(&ok, "loki-map-branch"), 0, "{ok:#?}");
    }

    #[test]
    fn map_with_llm_branch_collecting_output_warns() {
        let src = format!(
            "{HEAD}start: m\nnodes:\n  m:\n    type: map\n    over: \"{{{{xs}}}}\"\n    as: x\n    branch: b\n    collect_into: out\n    next: e\n  b:\n    type: llm\n    prompt: p\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let w = find(&d, "loki-map-output");
        assert_eq!(w.severity, Severity::Warning);
        assert_eq!(count(&d, "loki-no-next"), 0, "a map branch needs no next");
    }

    const FAN: &str =
        "name: t\nstart: f\nnodes:\n  f:\n    type: llm\n    prompt: p\n    next: [a, b]\n";

    #[test]
    fn parallel_ui_and_script_writes() {
        let d = check(&format!(
            "{FAN}  a:\n    type: approval\n    question: q\n    options: [x]\n    routes: {{x: e}}\n    on_other: e\n  b:\n    type: script\n    script: b.sh\n    next: e\n  e:\n    type: end\n"
        ));
        let ui = find(&d, "loki-parallel-ui");
        assert!(
            ui.message
                .starts_with("approval node is an immediate target of a fan-out")
        );
        assert_eq!((ui.line, ui.column, ui.node.as_deref()), (7, 12, Some("a")));
        let w = find(&d, "loki-parallel-write");
        assert!(
            w.message
                .starts_with("script node is in a parallel branch but declares no `state_updates`")
        );
        assert_eq!(w.node.as_deref(), Some("b"));
    }

    #[test]
    fn parallel_write_collisions_need_reducers() {
        let body = "  a:\n    type: llm\n    prompt: p\n    output_schema: {type: object, properties: {k: {}}}\n    next: e\n  b:\n    type: script\n    script: b.sh\n    state_updates: {k: v}\n    next: e\n  e:\n    type: end\n";
        let d = check(&format!("{FAN}{body}"));
        let w = find(&d, "loki-parallel-write");
        assert!(w.message.starts_with("nodes [a, b] all write key 'k' in the same parallel super-step but no reducer is declared for 'k'. Add `reducers: { k: <reducer> }`"), "{w:?}");
        assert_eq!((w.line, w.column, w.node.as_deref()), (7, 11, Some("f")));
        let with_reducer =
            format!("{FAN}{body}").replace("start: f\n", "reducers: {k: append}\nstart: f\n");
        assert_eq!(count(&check(&with_reducer), "loki-parallel-write"), 0);
    }

    #[test]
    fn parallel_reads_of_sibling_writes() {
        let d = check(&format!(
            "{FAN}  a:\n    type: llm\n    prompt: \"{{{{k}}}} {{{{j}}}}\"\n    next: e\n  b:\n    type: script\n    script: b.sh\n    state_updates: {{k: v, j: w}}\n    next: e\n  e:\n    type: end\n"
        ));
        let r = find(&d, "loki-parallel-read");
        assert!(r.message.starts_with("node 'a' reads state key(s) `j`, `k` which sibling parallel branch 'b' writes in the same super-step"), "{r:?}");
        assert_eq!(r.node.as_deref(), Some("a"));
        assert_eq!(r.line, 8);
    }

    #[test]
    fn null_leak_of_parallel_llm_nodes() {
        let body = "  a:\n    type: llm\n    prompt: p\n    state_updates: {x: \"{{output}}\"}\n    next: e\n  b:\n    type: rag\n    documents: [d]\n    state_updates: {y: \"{{output.context}}\"}\n    next: e\n  e:\n    type: end\n";
        let d = check(&format!("{FAN}{body}"));
        let w = find(&d, "loki-null-leak");
        assert_eq!(w.severity, Severity::Warning);
        assert!(
            w.hint
                .as_deref()
                .unwrap()
                .contains("reducers: {output: overwrite}")
        );
        let fixed = format!("{FAN}{body}")
            .replace("start: f\n", "reducers: {output: overwrite}\nstart: f\n");
        assert_eq!(count(&check(&fixed), "loki-null-leak"), 0);
    }

    #[test]
    fn next_rules() {
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    next: i\n  i:\n    type: input\n    question: q\n    next: [r, e]\n  r:\n    type: rag\n    documents: [d]\n    state_updates: {{}}\n    next: []\n  e:\n    type: end\n    next: a\n  lone:\n    type: agent\n    agent: helper\n    prompt: p\n"
        );
        let d = check(&src);
        assert_eq!(find(&d, "loki-next-empty").line, 17);
        let nn = find(&d, "loki-no-next");
        assert_eq!(nn.node.as_deref(), Some("lone"));
        assert!(nn.is_error());
        let ign: Vec<_> = d.iter().filter(|x| x.code == "loki-next-ignored").collect();
        assert_eq!(ign.len(), 2, "{d:#?}");
        assert!(ign.iter().all(|x| x.severity == Severity::Warning));
    }

    #[test]
    fn zero_limits_warn() {
        let src = format!(
            "{HEAD}settings:\n  max_loop_iterations: 0\n  timeout: 0\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: p\n    max_attempts: 0\n    max_iterations: 0\n    timeout: 0\n    next: e\n  e:\n    type: end\n"
        );
        let d = check(&src);
        let z: Vec<_> = d.iter().filter(|x| x.code == "loki-zero").collect();
        assert_eq!(z.len(), 5, "{d:#?}");
        assert!(z.iter().all(|x| x.severity == Severity::Warning));
        assert_eq!((z[0].line, z[0].column), (4, 24));
    }

    #[test]
    fn template_lint_is_positioned_inside_the_string() {
        let src = format!(
            "{HEAD}start: e\nnodes:\n  e:\n    type: end\n    output: \"Result: {{{{ report }}}}\"\n"
        );
        let d = check(&src);
        let t = find(&d, "loki-template");
        assert_eq!(t.severity, Severity::Warning);
        assert_eq!((t.line, t.column), (7, 22));
        assert!(t.message.contains("(in `output`)"));
    }

    #[test]
    fn unknown_state_keys_only_without_scripts_or_agents() {
        let src = format!(
            "{HEAD}initial_state: {{topic: x}}\nstart: a\nnodes:\n  a:\n    type: llm\n    prompt: \"{{{{topic}}}} {{{{topik}}}} {{{{output}}}}\"\n    state_updates: {{summary: \"{{{{output}}}}\"}}\n    next: e\n  e:\n    type: end\n    output: \"{{{{summary}}}} {{{{initial_prompt}}}}\"\n"
        );
        let d = check(&src);
        assert_eq!(count(&d, "loki-state-key"), 1, "{d:#?}");
        let k = find(&d, "loki-state-key");
        assert_eq!((k.line, k.column), (8, 24));
        assert!(k.hint.as_deref().unwrap().contains("{{topic}}"), "{k:?}");
        let with_script = src.replace(
            "  e:\n",
            "  s:\n    type: script\n    script: s.sh\n    next: e\n  e:\n",
        );
        assert_eq!(count(&check(&with_script), "loki-state-key"), 0);
    }

    #[test]
    fn seeded_initial_prompt_warns() {
        let d = check(&format!(
            "{HEAD}initial_state:\n  initial_prompt: hi\nstart: e\nnodes:\n  e:\n    type: end\n"
        ));
        assert_eq!(find(&d, "loki-initial-prompt").line, 4);
    }

    #[test]
    fn checks_run_in_upstream_order() {
        let src = format!(
            "{HEAD}start: a\nnodes:\n  a:\n    type: approval\n    question: q\n    options: [x, y]\n    routes: {{x: b}}\n    on_other: a\n  b:\n    type: script\n    script: nope.sh\n    next: ghost\n  c:\n    type: rag\n    documents: []\n"
        );
        let d = check(&src);
        let order: Vec<&str> = codes(&d)
            .into_iter()
            .filter(|c| {
                [
                    "loki-ref",
                    "loki-cycle",
                    "loki-unreachable",
                    "loki-no-end",
                    "loki-script-missing",
                    "loki-approval-route",
                    "loki-rag",
                ]
                .contains(c)
            })
            .collect();
        assert_eq!(
            order,
            [
                "loki-ref",
                "loki-cycle",
                "loki-unreachable",
                "loki-no-end",
                "loki-script-missing",
                "loki-approval-route",
                "loki-rag",
                "loki-rag"
            ]
        );
    }

    #[test]
    fn tool_functions_are_found_in_tools_sh() {
        let f = agent_tool_functions(&fixtures().join("demo")).unwrap();
        assert_eq!(f, ["classify", "lookup"]);
        assert!(agent_tool_functions(&fixtures().join("helper")).is_none());
    }

    // Conformance -------------------------------------------------------------------------

    fn corpus_graphs(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                corpus_graphs(&p, out);
            } else if p
                .file_name()
                .is_some_and(|n| n == "graph.yaml" || n == "graph.example.yaml")
            {
                out.push(p);
            }
        }
    }

    /// Every corpus graph parses without schema problems, validates with only "missing from the
    /// corpus" errors, and its IR holds every declared node and edge.
    #[test]
    fn conformance_corpus() {
        let root_buf = crate::testdata::conformance_dir().join("loki");
        let root = root_buf.as_path();
        let mut files = Vec::new();
        corpus_graphs(root, &mut files);
        // coyote 0.10.3's graphs use fields and checks this validator does not have yet (map
        // branches with `next`, agent-node `fallback`): they join this test with that work
        // (issue 28).
        files.retain(|f| !f.starts_with(root.join("coyote-0.10.3")));
        if files.is_empty() {
            eprintln!(
                "conformance corpus not found at {}; skipped",
                root.display()
            );
            return;
        }
        assert!(files.len() >= 8, "{files:?}");
        const MISSING: &[&str] = &[
            "loki-script-missing",
            "loki-agent-missing",
            "loki-tool",
            "loki-mcp",
        ];
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            // graph.example.yaml is not named graph.yaml: load it under that name.
            let doc = load_str(&f.with_file_name("graph.yaml"), &text);
            assert!(
                doc.diagnostics.is_empty(),
                "{}: load diagnostics {:#?}",
                f.display(),
                doc.diagnostics
            );
            let Model::Loki(l) = &doc.model else {
                panic!("{} is not Loki", f.display())
            };
            let g = crate::graph::lower_loki::lower(&doc, l);
            let mut diags = Vec::new();
            validate(&doc, l, &g, &mut diags);
            for d in diags.iter().filter(|d| d.is_error()) {
                assert!(
                    MISSING.contains(&d.code.as_str()),
                    "{}: unexpected error {d:#?}",
                    f.display()
                );
            }
            for d in &diags {
                assert!(d.line >= 1 && !d.file.is_empty(), "{d:?}");
            }
            // Every declared node and edge is in the IR.
            assert_eq!(g.g.node_count(), l.nodes.len(), "{}", f.display());
            for n in &l.nodes {
                assert!(
                    g.node(&n.id.value).is_some(),
                    "{}: node {}",
                    f.display(),
                    n.id.value
                );
                for t in n.targets() {
                    let kind = match t.kind {
                        crate::doc::loki::TargetKind::Next => EdgeKind::Next,
                        crate::doc::loki::TargetKind::Route(_) => EdgeKind::Route,
                        crate::doc::loki::TargetKind::OnOther => EdgeKind::OnOther,
                        crate::doc::loki::TargetKind::ScriptFallback
                        | crate::doc::loki::TargetKind::LlmFallback => EdgeKind::Fallback,
                        crate::doc::loki::TargetKind::MapBranch => EdgeKind::MapBranch,
                    };
                    let found = g.edges_ordered().into_iter().any(|(s, d, e)| {
                        g.g[s].id == n.id.value && g.g[d].id == t.to.value && e.kind == kind
                    });
                    assert!(
                        found,
                        "{}: edge {} -> {} ({kind:?})",
                        f.display(),
                        n.id.value,
                        t.to.value
                    );
                }
            }
            assert_eq!(
                g.entry.map(|ix| g.g[ix].id.clone()),
                l.start.as_ref().map(|s| s.value.clone())
            );
        }
    }
}
