//! The interpreter of sherma declarative agents: [`machine::ShermaMachine`] runs one node per
//! step behind `runtime`'s session, over the routing `model::graph::lower_sherma::effective`
//! computes (what the canvas shows is what runs). Its run state and reducers are [`state`];
//! hook executors (Python, remote, MCP) are [`hooks`]; remote sub-agents, run-time skills and the
//! durable snapshot are parts of the machine.

pub mod hooks;
pub mod machine;
pub mod state;

pub use machine::{ShermaMachine, ShermaOptions};
