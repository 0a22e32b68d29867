//! Generating the TypeScript of the engine's contract types with `ts-rs`: the helpers every
//! generator uses (`runtime::contract`, `editor::studio::contract`, the desktop shell's), so the
//! files share one header, one rendering of integers and one freshness check. Each generator's
//! unit test compares its checked-in file with what the Rust types generate; `UPDATE_TS=1`
//! rewrites it.

use std::path::{Path, PathBuf};
use ts_rs::{Config, TS};

/// The command that checks (and with `UPDATE_TS=1` rewrites) the generated files of the library
/// crates.
pub const LIB_COMMAND: &str = "cargo test --workspace --features switchyard-app/custom-protocol --lib contract";

/// How every generated file renders: integers as `number` (counters, offsets and times fit in a
/// double; JSON.parse gives numbers anyway).
pub fn config() -> Config {
    Config::new().with_large_int("number")
}

/// One exported declaration with its doc comment.
pub fn declaration<T: TS + ?Sized>(cfg: &Config) -> String {
    format!("{}export {}\n", T::docs().unwrap_or_default(), T::decl(cfg))
}

/// A whole generated file: a header naming its source and the command that regenerates it, the
/// imports, the declarations in the given order.
pub fn file(source: &str, command: &str, imports: &[&str], declarations: &[String]) -> String {
    let mut out = format!(
        "// Generated from {source} by ts-rs (`{command}`); do not edit.\n\
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

/// `ui/src/contract/<name>`, from a crate's manifest folder (`env!("CARGO_MANIFEST_DIR")`).
pub fn ui_contract_path(manifest_dir: &str, name: &str) -> PathBuf {
    let mut dir = Path::new(manifest_dir);
    // crates/<crate> is two levels down, src-tauri one.
    while !dir.join("ui").is_dir() {
        match dir.parent() {
            Some(p) => dir = p,
            None => break,
        }
    }
    dir.join("ui/src/contract").join(name)
}

/// Compare a generated file with the checked-in one, or rewrite it with `UPDATE_TS=1`.
pub fn check_or_update(path: &Path, generated: &str, command: &str) -> Result<(), String> {
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
         `UPDATE_TS=1 {command}` and commit the result",
        path.display()
    ))
}
