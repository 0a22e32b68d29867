//! Lower a Loki graph into the IR.

use super::Graph;
use crate::doc::{Dialect, Document, loki::LokiDoc};

pub fn lower(_doc: &Document, l: &LokiDoc) -> Graph {
    Graph::new(Dialect::Loki, l.name.clone().unwrap_or_default())
}
