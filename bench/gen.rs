//! Generators for large agent graphs of both dialects (benchmarks and scale tests).

use std::fmt::Write as _;

/// A sherma agent with `n` nodes: a chain of `set_state` / `data_transform` nodes over a few
/// declared fields, with a CEL conditional edge every fourth node (skip ahead or continue).
pub fn sherma(n: usize) -> String {
    let mut s = String::with_capacity(n * 220);
    s.push_str("# Generated: a long sherma chain with CEL branches.\nmanifest_version: 1\nagents:\n  big:\n");
    s.push_str("    state:\n      fields:\n        - name: messages\n          type: list\n          default: []\n");
    for f in ["counter", "total", "flag", "note"] {
        let ty = match f {
            "flag" => "bool",
            "note" => "str",
            _ => "int",
        };
        let _ = write!(s, "        - name: {f}\n          type: {ty}\n");
    }
    s.push_str("    graph:\n      entry_point: n0\n      nodes:\n");
    for i in 0..n {
        if i % 2 == 0 {
            let _ = write!(
                s,
                "        - name: n{i}\n          type: set_state\n          args:\n            values:\n              counter: \"{i}\"\n              note: '\"step {i}\"'\n"
            );
        } else {
            let _ = write!(
                s,
                "        - name: n{i}\n          type: data_transform\n          args:\n            expression: '{{\"total\": state.total + state.counter * 2, \"flag\": state.counter % 3 == 0}}'\n"
            );
        }
    }
    s.push_str("      edges:\n");
    for i in 0..n {
        let next = if i + 1 < n {
            format!("n{}", i + 1)
        } else {
            "__end__".into()
        };
        if i % 4 == 3 && i + 2 < n {
            let _ = write!(
                s,
                "        - source: n{i}\n          branches:\n            - condition: 'state.flag && size(state.note) > {}'\n              target: n{}\n          default: {next}\n",
                i % 7,
                i + 2
            );
        } else {
            let _ = write!(s, "        - source: n{i}\n          target: {next}\n");
        }
    }
    s
}

/// A Loki graph with `n` nodes (rounded to blocks of five), no cycles: each block fans out from
/// an llm node to an llm and a script that join at an approval gate (routes and `on_other`),
/// followed by a script that leads to the next block. The last node is the `end`.
/// Script nodes run `scripts/step.sh`, which the caller creates beside the file.
pub fn loki(n: usize) -> String {
    let blocks = n.div_ceil(5).max(1);
    let mut s = String::with_capacity(n * 200);
    s.push_str("# Generated: a long Loki graph with fan-outs and approval gates.\n");
    s.push_str("name: big\nversion: \"1.0\"\nmodel: openai:gpt-4o-mini\nsettings:\n  max_loop_iterations: 10\n  max_concurrency: 4\n");
    s.push_str("start: n0\nnodes:\n");
    for b in 0..blocks {
        let base = b * 5;
        let (fan, left, right, gate, tail) = (base, base + 1, base + 2, base + 3, base + 4);
        let _ = write!(
            s,
            "  n{fan}:\n    type: llm\n    prompt: \"Step {b} of {{{{initial_prompt}}}}\"\n    state_updates:\n      topic_{b}: \"{{{{output}}}}\"\n    next: [n{left}, n{right}]\n"
        );
        let _ = write!(
            s,
            "  n{left}:\n    type: llm\n    prompt: \"Research {{{{topic_{b}}}}}\"\n    state_updates:\n      research_{b}: \"{{{{output}}}}\"\n    next: n{gate}\n"
        );
        let _ = write!(
            s,
            "  n{right}:\n    type: script\n    script: scripts/step.sh\n    state_updates:\n      checked_{b}: \"yes\"\n    next: n{gate}\n"
        );
        let _ = write!(
            s,
            "  n{gate}:\n    type: approval\n    question: \"Keep {{{{research_{b}}}}}?\"\n    options: [\"keep\", \"skip\"]\n    routes:\n      keep: n{tail}\n      skip: n{tail}\n    on_other: n{tail}\n    state_updates:\n      decision_{b}: \"{{{{choice}}}}\"\n"
        );
        if b + 1 < blocks {
            let _ = write!(
                s,
                "  n{tail}:\n    type: script\n    script: scripts/step.sh\n    next: n{}\n",
                tail + 1
            );
        } else {
            let _ = write!(
                s,
                "  n{tail}:\n    type: end\n    output: \"{{{{decision_{b}}}}}\"\n"
            );
        }
    }
    s
}
