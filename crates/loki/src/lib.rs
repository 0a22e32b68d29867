//! The interpreter of Loki (coyote) graph agents: [`machine::LokiMachine`] runs one super-step
//! per step behind `runtime`'s session. Everything of the dialect that runs lives here:
//! `script` nodes as supervised subprocesses ([`script`]), llm-node tools declared in
//! `tools.sh` / `tools.ts` / `tools.js` ([`tools`]), `rag` nodes ([`rag`]), and the machine's
//! durable snapshot.

pub mod machine;
pub mod rag;
pub mod script;
pub mod tools;

pub use machine::LokiMachine;
