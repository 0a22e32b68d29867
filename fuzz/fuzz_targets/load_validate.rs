//! Bytes -> load as a sherma file (`agent.yaml`) -> validate -> lower -> export; bytes whose
//! dialect the content does not decide are loaded again as a Loki `graph.yaml` (where the file
//! name makes them Loki). Any panic (or stack overflow, or runaway allocation) is a bug in the
//! engine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use switchyard::{doc, graph, validate};

fn check(d: &doc::Document) {
    let _ = validate::validate(d, None);
    let mut picks: Vec<Option<String>> = vec![None];
    picks.extend(graph::agent_names(d).into_iter().take(3).map(Some));
    for pick in &picks {
        if let (Some(g), _) = graph::lower(d, pick.as_deref()) {
            let _ = graph::export::to_json(&g);
            let _ = graph::export::to_mermaid(&g);
            let _ = graph::export::to_dot(&g);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let dir = Path::new("/nonexistent-switchyard-fuzz");
    let d = doc::load_bytes(&dir.join("agent.yaml"), data);
    check(&d);
    // The content decides the dialect unless neither sherma's nor Loki's keys are there; then a
    // file named graph.yaml is read as Loki.
    if d.dialect().is_none() {
        check(&doc::load_bytes(&dir.join("graph.yaml"), data));
    }
});
