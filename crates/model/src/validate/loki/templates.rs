//! Template lint, positioned inside the string.

use super::V;
use crate::doc::schema::value_offset_to_source;
use syntax::source::Span;

impl V<'_> {
    /// Beyond upstream: template lint, positioned inside the string.
    pub(super) fn templates(&mut self) {
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
}
