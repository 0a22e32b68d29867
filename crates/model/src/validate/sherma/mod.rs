//! sherma validation: upstream's checks (reference/sherma.md §4) and what users need beyond them
//! (unknown references, CEL syntax with positions, unreachable nodes, undeclared state fields,
//! versions sherma cannot look up).
//!
//! `file.rs` checks the whole file (registries, versions, sub-agent files, Python imports).
//! [`validate_agent`] runs the checks of one agent in this order: `structure.rs` (node names,
//! state fields, the entry, edges, the `messages` field), `nodes.rs` (each node's args and
//! `on_error`), `cel.rs` (every CEL expression: syntax, variables, state fields, functions,
//! registry and `data` lookups), `reach.rs` (unreachable nodes, loops without an exit).

mod cel;
mod file;
mod nodes;
mod reach;
mod structure;
#[cfg(test)]
mod tests;

pub use file::{resolve_python_import, validate_doc};

use crate::doc::Document;
use crate::doc::sherma::{AgentDef, ShermaDoc};
use crate::graph::Graph;
use crate::graph::lower_sherma::Cond;
use std::collections::HashSet;
use syntax::diag::{Diagnostic, did_you_mean};
use syntax::source::{SourceFile, Span};

struct V<'a> {
    file: &'a SourceFile,
    doc: &'a ShermaDoc,
    diags: &'a mut Vec<Diagnostic>,
}

impl V<'_> {
    fn err(&mut self, code: &str, msg: String, span: Span) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(code, msg).at(self.file, span));
        self.diags.last_mut().unwrap()
    }
    fn warn(&mut self, code: &str, msg: String, span: Span) -> &mut Diagnostic {
        self.diags.push(Diagnostic::warning(code, msg).at(self.file, span));
        self.diags.last_mut().unwrap()
    }
}

fn set_hint(d: &mut Diagnostic, h: impl Into<String>) {
    d.hint = Some(h.into());
}

/// The node names of one agent, for checking and explaining references to them.
struct Names<'a> {
    /// Every node's name in declaration order (empty ones included).
    names: Vec<&'a str>,
    set: HashSet<&'a str>,
    /// "agent `<name>`".
    agent_label: String,
}

impl<'a> Names<'a> {
    fn new(agent: &'a AgentDef) -> Names<'a> {
        let names: Vec<&str> = agent.nodes.iter().map(|n| n.name.value.as_str()).collect();
        let agent_label = format!("agent `{}`", agent.name.value);
        let set: HashSet<&str> = names.iter().copied().collect();
        Names { names, set, agent_label }
    }

    fn exists(&self, name: &str) -> bool {
        self.set.contains(name)
    }

    /// "did you mean", or the agent's nodes.
    fn hint(&self, name: &str) -> String {
        let (names, agent_label) = (&self.names, &self.agent_label);
        match did_you_mean(name, names.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("nodes of {agent_label}: {}", if names.is_empty() { "none".into() } else { names.join(", ") }),
        }
    }
}

/// Validate one agent. `graph` is its lowered IR.
pub fn validate_agent(doc: &Document, s: &ShermaDoc, agent: &AgentDef, graph: &Graph, diags: &mut Vec<Diagnostic>) {
    let Some(file) = &doc.file else { return };
    let mut v = V { file, doc: s, diags };
    let names = Names::new(agent);
    structure::node_names(&mut v, agent);
    structure::state_fields(&mut v, agent);
    structure::entry(&mut v, agent, &names);
    structure::edges(&mut v, agent, &names);
    structure::messages_field(&mut v, agent, &names);
    let mut exprs = nodes::check_nodes(&mut v, agent, &names);
    cel::branch_conditions(agent, &mut exprs);
    cel::check_expressions(&mut v, agent, exprs);
    reach::reachability(&mut v, doc, agent);
    let _ = graph;
    let _ = Cond::Missing;
}
