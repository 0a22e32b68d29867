//! Loki validation: upstream's checks (reference/loki.md §4) plus what users need.

use crate::diag::Diagnostic;
use crate::doc::{Document, loki::LokiDoc};
use crate::graph::Graph;

pub fn validate(_doc: &Document, _l: &LokiDoc, _graph: &Graph, _diags: &mut Vec<Diagnostic>) {}
