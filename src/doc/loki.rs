//! Loki graph agents (`graph.yaml`, `version: "1.0"`): typed model with spans.

use crate::diag::Diagnostic;
use crate::source::SourceFile;
use crate::yaml::YNode;
use std::path::Path;

#[derive(Debug, Default)]
pub struct LokiDoc {
    pub name: Option<String>,
}

pub fn build(_file: &SourceFile, _root: Option<&YNode>, _base_dir: &Path, _diags: &mut Vec<Diagnostic>) -> LokiDoc {
    LokiDoc::default()
}
