//! Validation: load diagnostics plus the semantic checks of each agent.

pub mod lllm;
pub mod loki;
pub mod sherma;

use syntax::diag::{Diagnostic, sort_and_dedup};
use crate::doc::{Document, Model};
use crate::graph::{self, lower_sherma};

/// Everything wrong with a document: its load diagnostics plus validation of the chosen agent
/// (sherma: every agent when `agent` is `None`). Sorted by position.
pub fn validate(doc: &Document, agent: Option<&str>) -> Vec<Diagnostic> {
    let mut diags = doc.diagnostics.clone();
    match &doc.model {
        Model::Sherma(s) => {
            sherma::validate_doc(doc, s, &mut diags);
            let agents: Vec<&crate::doc::sherma::AgentDef> = match agent {
                Some(_) => match lower_sherma::select_agent(doc, s, agent) {
                    Ok(a) => vec![a],
                    Err(d) => {
                        diags.push(d);
                        Vec::new()
                    }
                },
                None => s.agents.iter().collect(),
            };
            for a in agents {
                let g = lower_sherma::lower_agent(doc, s, a, &mut diags);
                sherma::validate_agent(doc, s, a, &g, &mut diags);
            }
        }
        Model::Loki(l) => {
            let g = graph::lower_loki::lower(doc, l);
            loki::validate(doc, l, &g, &mut diags);
        }
        Model::Lllm(l) => lllm::validate(l, &mut diags),
        Model::Unknown => {}
    }
    sort_and_dedup(&mut diags);
    diags
}

/// Error and warning counts.
pub fn counts(diags: &[Diagnostic]) -> (usize, usize) {
    let e = diags.iter().filter(|d| d.severity == syntax::diag::Severity::Error).count();
    let w = diags.iter().filter(|d| d.severity == syntax::diag::Severity::Warning).count();
    (e, w)
}
