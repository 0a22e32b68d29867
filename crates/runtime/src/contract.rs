//! The run core's contract types in TypeScript, generated from the Rust types with `ts-rs`: the
//! events of a run, what LLM calls carry, the driver's status and batches, a durable run's
//! record. The UI imports the checked-in output (`ui/src/contract/runtime.ts`); the test below
//! fails when it differs from what these types generate (`UPDATE_TS=1` rewrites it).

use crate::driver::{Batch, Control, FailureInfo, StatusInfo};
use crate::events::{Event, HookOutcome, InterruptKind, PauseReason, RouteReason, RunStatus};
use crate::request::{LlmChoice, RunRequest};
use crate::session::{Breakpoint, Pending};
use crate::store::RunRecord;
use crate::wire::{ErrorKind, TokenUsage, ToolCall};
use syntax::contract::{LIB_COMMAND, config, declaration, file};

/// `ui/src/contract/runtime.ts`. `EventBody` has no declaration of its own: `Event` flattens it
/// (`{run, ts_ms} & ({event: "run_started", …} | …)`), as the JSON does.
pub fn runtime_ts() -> String {
    let cfg = config();
    let c = &cfg;
    let decls = vec![
        declaration::<serde_json::Value>(c),
        declaration::<Event>(c),
        declaration::<RouteReason>(c),
        declaration::<InterruptKind>(c),
        declaration::<PauseReason>(c),
        declaration::<RunStatus>(c),
        declaration::<HookOutcome>(c),
        declaration::<ToolCall>(c),
        declaration::<TokenUsage>(c),
        declaration::<ErrorKind>(c),
        declaration::<Pending>(c),
        declaration::<Breakpoint>(c),
        declaration::<Control>(c),
        declaration::<StatusInfo>(c),
        declaration::<FailureInfo>(c),
        declaration::<Batch>(c),
        declaration::<RunRecord>(c),
        declaration::<RunRequest>(c),
        declaration::<LlmChoice>(c),
    ];
    file("crates/runtime (events, wire, session, driver, store, request)", LIB_COMMAND, &[], &decls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_typescript_is_what_the_rust_types_generate() {
        let path = syntax::contract::ui_contract_path(env!("CARGO_MANIFEST_DIR"), "runtime.ts");
        if let Err(e) = syntax::contract::check_or_update(&path, &runtime_ts(), LIB_COMMAND) {
            panic!("{e}");
        }
    }
}
