//! The run core every dialect shares, with no network and no async runtime:
//!
//! - [`session`]: the [`session::Machine`] trait a dialect's interpreter implements, and
//!   [`session::RunSession`] around it (run, step, pause, breakpoints, interrupts, checkpoints,
//!   rewind); [`session::nested`] steps into nested runs; [`driver`] runs a session on a worker thread for
//!   the desktop debugger.
//! - [`events`]: what a run reports (one JSON object per trace line); [`narrate`] turns them
//!   into Loki-style terminal narration.
//! - [`provider`]: the synchronous [`provider::LlmProvider`] trait with the scripted and empty
//!   providers; [`wire`] the data both calls and events carry; [`cassette`] records and replays every LLM and tool exchange; [`price`] the cost
//!   of a call.
//! - [`request`]: what a front end asks a run for; [`store`]: the SQLite store of durable runs.
//! - [`secrets`]: redaction of every value shown or written for a person.
//! - [`contract`]: the TypeScript of these types for the UI, generated with `ts-rs`.

pub mod cassette;
pub mod contract;
pub mod driver;
pub mod events;
pub mod narrate;
pub mod price;
pub mod provider;
pub mod request;
pub mod secrets;
pub mod session;
pub use session::nested;
pub mod store;
pub mod wire;
