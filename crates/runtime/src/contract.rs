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
use ts_rs::{Config, TS};

/// How every generated file renders: integers as `number` (the engine's counters and times fit
/// in a double; JSON.parse gives numbers anyway).
pub fn config() -> Config {
    Config::new().with_large_int("number")
}

/// One exported declaration with its doc comment.
pub fn declaration<T: TS + ?Sized>(cfg: &Config) -> String {
    format!("{}export {}\n", T::docs().unwrap_or_default(), T::decl(cfg))
}

/// A whole generated file: a header naming its source and how to regenerate it, the imports, the
/// declarations in the given order.
pub fn file(source: &str, imports: &[&str], declarations: &[String]) -> String {
    let mut out = format!(
        "// Generated from {source} by ts-rs (`cargo test --workspace --lib contract`); do not edit.\n\
         // UPDATE_TS=1 with that command rewrites it after a change to the Rust types.\n"
    );
    for i in imports {
        out.push_str(i);
        out.push('\n');
    }
    for d in declarations {
        out.push('\n');
        out.push_str(d);
    }
    out
}

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
    file("crates/runtime (events, wire, session, driver, store, request)", &[], &decls)
}

/// Compare a generated file with the checked-in one, or rewrite it with `UPDATE_TS=1`.
pub fn check_or_update(path: &std::path::Path, generated: &str) -> Result<(), String> {
    if std::env::var_os("UPDATE_TS").is_some_and(|v| v == "1") {
        return std::fs::write(path, generated).map_err(|e| format!("{}: {e}", path.display()));
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    if checked_in == generated {
        return Ok(());
    }
    let line = checked_in.lines().zip(generated.lines()).position(|(a, b)| a != b).unwrap_or(0) + 1;
    Err(format!(
        "{} is not what the Rust types generate (first difference at line {line}); run \
         `UPDATE_TS=1 cargo test --workspace --lib contract` and commit the result",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_typescript_is_what_the_rust_types_generate() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/contract/runtime.ts");
        if let Err(e) = check_or_update(&path, &runtime_ts()) {
            panic!("{e}");
        }
    }
}
