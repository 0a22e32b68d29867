//! Bytes -> load as a sherma file and as a Loki graph.yaml -> validate -> lower -> export.
//! Any panic (or stack overflow, or runaway allocation) is a bug in the engine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use switchyard::{doc, graph, validate};

fuzz_target!(|data: &[u8]| {
    for name in ["agent.yaml", "graph.yaml"] {
        let path = Path::new("/nonexistent-switchyard-fuzz").join(name);
        let d = doc::load_bytes(&path, data);
        let _ = validate::validate(&d, None);
        let mut picks: Vec<Option<String>> = vec![None];
        picks.extend(graph::agent_names(&d).into_iter().take(3).map(Some));
        for pick in &picks {
            if let (Some(g), _) = graph::lower(&d, pick.as_deref()) {
                let _ = graph::export::to_json(&g);
                let _ = graph::export::to_mermaid(&g);
                let _ = graph::export::to_dot(&g);
            }
        }
    }
});
