//! The suite's results and routing coverage in TypeScript, generated from the Rust types with
//! `ts-rs` into `ui/src/contract/suite.ts`, for the app's Tests panel and the canvas's coverage
//! colours; the test below fails when the checked-in file differs (`UPDATE_TS=1` rewrites it).

use crate::coverage::{Coverage, EdgeCount, NodeCount, OtherRoute};
use crate::run::{CaseResult, Failure, Outcome, RunSummary};
use crate::{CaseInfo, SuiteInfo, SuiteResult, Totals};
use syntax::contract::{LIB_COMMAND, config, declaration, file};

/// `ui/src/contract/suite.ts`.
pub fn suite_ts() -> String {
    let cfg = config();
    let c = &cfg;
    let decls = vec![
        declaration::<SuiteInfo>(c),
        declaration::<CaseInfo>(c),
        declaration::<SuiteResult>(c),
        declaration::<Totals>(c),
        declaration::<CaseResult>(c),
        declaration::<Outcome>(c),
        declaration::<RunSummary>(c),
        declaration::<Failure>(c),
        declaration::<Coverage>(c),
        declaration::<NodeCount>(c),
        declaration::<EdgeCount>(c),
        declaration::<OtherRoute>(c),
        declaration::<crate::save::SavedRun>(c),
    ];
    file(
        "crates/suite (results, coverage)",
        LIB_COMMAND,
        &["import type { Diagnostic } from './syntax';", "import type { JsonValue, RunStatus } from './runtime';"],
        &decls,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_typescript_is_what_the_rust_types_generate() {
        let path = syntax::contract::ui_contract_path(env!("CARGO_MANIFEST_DIR"), "suite.ts");
        if let Err(e) = syntax::contract::check_or_update(&path, &suite_ts(), LIB_COMMAND) {
            panic!("{e}");
        }
    }
}
