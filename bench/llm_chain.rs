//! The LLM-bound agent of the benchmarks (`llm_calls`, `restate_load`): a sherma chain of
//! `calls` sequential `call_llm` nodes, each answering the growing conversation.

/// The agent `chain` of `calls` sequential `call_llm` nodes.
pub fn chain_yaml(calls: usize) -> String {
    let mut s = String::from(
        "manifest_version: 1\nllms:\n  - id: gpt\n    provider: openai\n    model_name: gpt-4o-mini\ndefault_llm: {id: gpt}\ncheckpointer: {type: memory}\nagents:\n  chain:\n    state:\n      fields:\n        - {name: messages, type: list, default: []}\n    graph:\n      entry_point: c1\n      nodes:\n",
    );
    for i in 1..=calls {
        s.push_str(&format!(
            "        - name: c{i}\n          type: call_llm\n          args:\n            prompt:\n              - {{role: system, content: '\"Answer briefly.\"'}}\n              - {{role: messages, content: state.messages}}\n            state_updates:\n              messages: '[llm_response]'\n"
        ));
    }
    s.push_str("      edges:\n");
    for i in 1..calls {
        s.push_str(&format!("        - {{source: c{i}, target: c{}}}\n", i + 1));
    }
    s.push_str(&format!("        - {{source: c{calls}, target: __end__}}\n"));
    s
}
