//! The editor's contract types in TypeScript, generated from the Rust types with `ts-rs`, one
//! file per layer as the UI imports them: `ui/src/contract/syntax.ts` (diagnostics),
//! `model.ts` (the inspector's schemas), `editor.ts` (the [`View`](super::View) and what it
//! carries, edit ops, recovery offers, expression problems). The tests below fail when a
//! checked-in file differs from what these types generate (`UPDATE_TS=1` rewrites it).
//!
//! The helpers are public for the desktop shell, which generates `ui/src/contract/shell.ts` from
//! its command types the same way (`runtime::contract` does it for the run core).

use super::{DiskEvent, ExprProblem, Pos, Recovered, View, ViewEdge, ViewLane, ViewNode};
use crate::edit::{Applied, EditError, EditOp, PathSeg, TextEdit};
use model::doc::schema::{Field, Obj, TyJson};
use syntax::diag::{Diagnostic, Severity};

pub use syntax::contract::{LIB_COMMAND, check_or_update, config, declaration, file, ui_contract_path};

/// `ui/src/contract/syntax.ts`: diagnostics.
pub fn syntax_ts() -> String {
    let c = &config();
    file("crates/syntax (diag)", LIB_COMMAND, &[], &[declaration::<Severity>(c), declaration::<Diagnostic>(c)])
}

/// `ui/src/contract/model.ts`: the schema of each node kind as the inspector gets it.
pub fn model_ts() -> String {
    let c = &config();
    file(
        "crates/model (doc::schema)",
        LIB_COMMAND,
        &[],
        &[declaration::<Obj>(c), declaration::<Field>(c), declaration::<TyJson>(c)],
    )
}

/// `ui/src/contract/editor.ts`: the view, edit ops, recovery offers, expression problems.
pub fn editor_ts() -> String {
    let c = &config();
    let decls = vec![
        declaration::<serde_json::Value>(c),
        declaration::<View>(c),
        declaration::<ViewNode>(c),
        declaration::<ViewEdge>(c),
        declaration::<ViewLane>(c),
        declaration::<Pos>(c),
        declaration::<EditOp>(c),
        declaration::<PathSeg>(c),
        declaration::<TextEdit>(c),
        declaration::<Applied>(c),
        declaration::<EditError>(c),
        declaration::<ExprProblem>(c),
        declaration::<Recovered>(c),
        declaration::<DiskEvent>(c),
    ];
    file(
        "crates/editor (studio, edit)",
        LIB_COMMAND,
        &[
            "import type { Diagnostic, Severity } from './syntax';",
            "import type { SchemaObj } from './model';",
        ],
        &decls,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, generated: &str) {
        let path = ui_contract_path(env!("CARGO_MANIFEST_DIR"), name);
        if let Err(e) = check_or_update(&path, generated, LIB_COMMAND) {
            panic!("{e}");
        }
    }

    #[test]
    fn checked_in_syntax_ts_is_what_the_rust_types_generate() {
        check("syntax.ts", &syntax_ts());
    }

    #[test]
    fn checked_in_model_ts_is_what_the_rust_types_generate() {
        check("model.ts", &model_ts());
    }

    #[test]
    fn checked_in_editor_ts_is_what_the_rust_types_generate() {
        check("editor.ts", &editor_ts());
    }

    /// `ViewEdge.kind`'s TypeScript union is exactly the graph's edge kinds.
    #[test]
    fn view_edge_kinds_are_the_graph_edge_kinds() {
        use model::graph::EdgeKind;
        let all = [
            EdgeKind::Entry,
            EdgeKind::Static,
            EdgeKind::Branch,
            EdgeKind::Default,
            EdgeKind::Next,
            EdgeKind::Route,
            EdgeKind::OnOther,
            EdgeKind::Fallback,
            EdgeKind::MapBranch,
            EdgeKind::Dynamic,
            EdgeKind::Inherits,
        ];
        for k in all {
            // No wildcard: a new edge kind stops this compiling until it is listed above.
            match k {
                EdgeKind::Entry
                | EdgeKind::Static
                | EdgeKind::Branch
                | EdgeKind::Default
                | EdgeKind::Next
                | EdgeKind::Route
                | EdgeKind::OnOther
                | EdgeKind::Fallback
                | EdgeKind::MapBranch
                | EdgeKind::Dynamic
                | EdgeKind::Inherits => {}
            }
        }
        let ts = declaration::<ViewEdge>(&config());
        let union = ts.split("kind: ").nth(1).and_then(|r| r.split(',').next()).expect("ViewEdge.kind in the TS");
        let mut in_ts: Vec<&str> = union.split('|').map(|v| v.trim().trim_matches('"')).collect();
        let mut in_rust: Vec<&str> = all.iter().map(|k| k.as_str()).collect();
        in_ts.sort();
        in_rust.sort();
        assert_eq!(in_ts, in_rust, "ViewEdge.kind's #[ts(type)] and model::graph::EdgeKind differ");
    }

    /// `SchemaType.kind` lists every kind name a `Ty` can have.
    #[test]
    fn schema_type_kinds_are_the_kind_names() {
        use model::doc::schema::Ty;
        static OBJ: Obj = Obj { name: "o", fields: &[], open: true };
        let all = [
            Ty::Any,
            Ty::Str,
            Ty::Bool,
            Ty::Int { min: None },
            Ty::Float { min: None },
            Ty::Enum(&[]),
            Ty::Cel,
            Ty::CelCondition,
            Ty::Template,
            Ty::NodeRef,
            Ty::Path,
            Ty::List(&Ty::Any),
            Ty::Map(&Ty::Any),
            Ty::Obj(&OBJ),
            Ty::OneOf(&[]),
        ];
        let ts = model_ts();
        for t in all {
            assert!(ts.contains(&format!("\"{}\"", t.kind_name())), "{} missing from SchemaType.kind", t.kind_name());
        }
    }
}
