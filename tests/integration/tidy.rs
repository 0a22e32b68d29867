//! The invariants of the code's shape that a test can check (rust-analyzer's `tidy` is the
//! model): ARCHITECTURE.md's crate table against every `Cargo.toml`, its code map against the
//! source files, and the event types against `docs/app-contract.md`.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// One row of ARCHITECTURE.md's "Crates" table.
#[derive(Debug)]
struct Row {
    name: String,
    folder: String,
    may: BTreeSet<String>,
    must_not: BTreeSet<String>,
}

fn cell_list(cell: &str) -> BTreeSet<String> {
    cell.split(',')
        .map(|s| s.trim().trim_matches('`').to_string())
        .filter(|s| !s.is_empty() && s != "—" && s != "-")
        .collect()
}

fn crate_table(arch: &str) -> Vec<Row> {
    let start = arch.find("\n## Crates").expect("ARCHITECTURE.md has a `## Crates` section");
    let section = &arch[start + 1..];
    let end = section[3..].find("\n## ").map(|i| i + 3).unwrap_or(section.len());
    let mut rows = Vec::new();
    for line in section[..end].lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 5 || !cells[0].starts_with('`') {
            continue;
        }
        rows.push(Row {
            name: cells[0].trim_matches('`').to_string(),
            folder: cells[1].trim_matches('`').to_string(),
            may: cell_list(cells[2]),
            must_not: cell_list(cells[3]),
        });
    }
    assert!(rows.len() >= 5, "the crate table has {} rows", rows.len());
    rows
}

/// The dependency names of one table of a manifest (`[dependencies]`, …).
fn deps(manifest: &toml::Table, table: &str) -> BTreeSet<String> {
    manifest.get(table).and_then(|t| t.as_table()).map(|t| t.keys().cloned().collect()).unwrap_or_default()
}

#[test]
fn every_crate_imports_only_what_its_row_allows() {
    let arch = read("ARCHITECTURE.md");
    let rows = crate_table(&arch);
    let ours: BTreeSet<String> = rows.iter().map(|r| r.name.clone()).collect();
    // Every crate folder has a row, every row a folder.
    let mut folders: BTreeSet<String> = std::fs::read_dir(Path::new(ROOT).join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
        .collect();
    folders.insert(".".into());
    folders.insert("src-tauri".into());
    let listed: BTreeSet<String> = rows.iter().map(|r| r.folder.clone()).collect();
    assert_eq!(listed, folders, "ARCHITECTURE.md's crate table and the crate folders differ");

    let mut bad = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &rows {
        let text = read(&format!("{}/Cargo.toml", r.folder));
        let manifest: toml::Table = text.parse().unwrap_or_else(|e| panic!("{}/Cargo.toml: {e}", r.folder));
        let normal = deps(&manifest, "dependencies");
        let all: BTreeSet<String> =
            normal.iter().chain(&deps(&manifest, "dev-dependencies")).chain(&deps(&manifest, "build-dependencies")).cloned().collect();
        // Our crates: only those the row allows (tests included: no test reaches up a layer).
        for d in all.iter().filter(|d| ours.contains(*d)) {
            if !r.may.contains(d) {
                bad.push(format!("{} ({}) depends on `{d}`, which its row does not allow", r.name, r.folder));
            }
        }
        // External crates the row forbids, in what the crate links.
        for d in normal.iter().chain(&deps(&manifest, "build-dependencies")) {
            let base = d.trim_end_matches("-build");
            if r.must_not.contains(d) || r.must_not.contains(base) {
                bad.push(format!("{} ({}) depends on `{d}`, which its row forbids", r.name, r.folder));
            }
        }
        // Only src-tauri knows Tauri, whatever the row says.
        if r.folder != "src-tauri" && all.iter().any(|d| d.starts_with("tauri")) {
            bad.push(format!("{} ({}) depends on Tauri; only src-tauri may", r.name, r.folder));
        }
        graph.insert(r.name.clone(), normal.into_iter().filter(|d| ours.contains(d)).collect());
    }
    assert!(bad.is_empty(), "crate boundaries broken (ARCHITECTURE.md, `## Crates`):\n{}", bad.join("\n"));

    // Transitively: the engine's lower layers link no async runtime, HTTP client or Tauri.
    let closure = |name: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![name.to_string()];
        while let Some(n) = stack.pop() {
            if seen.insert(n.clone()) {
                stack.extend(graph.get(&n).cloned().unwrap_or_default());
            }
        }
        seen
    };
    for low in ["syntax", "expr", "model", "editor", "runtime"] {
        for c in closure(low) {
            let r = rows.iter().find(|r| r.name == c).unwrap();
            let text = read(&format!("{}/Cargo.toml", r.folder));
            let manifest: toml::Table = text.parse().unwrap();
            for d in deps(&manifest, "dependencies") {
                assert!(
                    !["tokio", "reqwest", "rmcp", "tauri", "keyring"].contains(&d.as_str()),
                    "`{low}` links `{d}` through `{c}`"
                );
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every Rust source file of the engine is in the code map: by its own path, or inside a
/// folder the map describes as a whole (a path ending in `/`).
#[test]
fn every_source_file_is_in_the_code_map() {
    let arch = read("ARCHITECTURE.md");
    let start = arch.find("\n## Code map").expect("a `## Code map` section");
    let end = arch[start + 1..].find("\n## ").map(|i| i + start + 1).unwrap_or(arch.len());
    let map = &arch[start..end];
    let named: Vec<&str> = map.split('`').skip(1).step_by(2).collect();
    let mut files = Vec::new();
    for dir in ["src", "crates", "src-tauri/src"] {
        rust_files(&Path::new(ROOT).join(dir), &mut files);
    }
    let mut missing = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(ROOT).unwrap().to_string_lossy().replace('\\', "/");
        if rel.contains("/tests/") && !rel.starts_with("crates/") {
            continue;
        }
        let covered = named.iter().any(|n| *n == rel || (n.ends_with('/') && rel.starts_with(n)));
        if !covered {
            missing.push(rel);
        }
    }
    assert!(missing.is_empty(), "not in ARCHITECTURE.md's code map (add a row, or describe the folder):\n{}", missing.join("\n"));
    // And the map names no file that is gone.
    let gone: Vec<&&str> = named
        .iter()
        .filter(|n| n.starts_with("crates/") || n.starts_with("src/") || n.starts_with("src-tauri/"))
        .filter(|n| (n.ends_with(".rs") || n.ends_with('/')) && !n.contains(['*', ' ']))
        .filter(|n| !Path::new(ROOT).join(n.trim_end_matches('/')).exists())
        .collect();
    assert!(gone.is_empty(), "the code map names paths that do not exist: {gone:?}");
}

/// No module cycles inside a crate: the top-level modules of each crate, with an edge for every
/// `crate::other` path outside tests, form a graph without cycles (a child module using its
/// parent through `super` is part of the parent, not an edge).
#[test]
fn no_module_cycles_inside_a_crate() {
    let mut cycles = Vec::new();
    for e in std::fs::read_dir(Path::new(ROOT).join("crates")).unwrap().flatten() {
        let src = e.path().join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            let top = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
            if top == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            let deps = edges.entry(top.clone()).or_default();
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != top {
                    deps.insert(name);
                }
            }
        }
        // Depth-first search for a back edge.
        fn visit(
            n: &str,
            edges: &BTreeMap<String, BTreeSet<String>>,
            state: &mut BTreeMap<String, u8>,
            path: &mut Vec<String>,
            out: &mut Vec<String>,
        ) {
            state.insert(n.to_string(), 1);
            path.push(n.to_string());
            for m in edges.get(n).into_iter().flatten() {
                match state.get(m.as_str()).copied().unwrap_or(0) {
                    0 => visit(m, edges, state, path, out),
                    1 => {
                        let at = path.iter().position(|p| p == m).unwrap();
                        out.push(format!("{} → {m}", path[at..].join(" → ")));
                    }
                    _ => {}
                }
            }
            path.pop();
            state.insert(n.to_string(), 2);
        }
        let mut state = BTreeMap::new();
        let mut found = Vec::new();
        for n in edges.keys() {
            if !state.contains_key(n.as_str()) {
                visit(n, &edges, &mut state, &mut Vec::new(), &mut found);
            }
        }
        cycles.extend(found.into_iter().map(|c| format!("{}: {c}", e.file_name().to_string_lossy())));
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

/// The event types are the engine's contract with the UI: `docs/app-contract.md` records the
/// digest of the code that defines them, so a change to them fails here until the contract
/// (and the digest) is updated in the same commit.
#[test]
fn event_types_do_not_change_without_the_app_contract() {
    let events = read("crates/runtime/src/events.rs");
    let types = events.split("#[cfg(test)]").next().unwrap();
    // Whitespace and comment lines do not count, so reformatting is not a contract change.
    let normalized: String = types
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let digest: String = Sha256::digest(normalized.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let contract = read("docs/app-contract.md");
    let marker = "events.rs digest: ";
    let recorded = contract
        .find(marker)
        .map(|i| contract[i + marker.len()..].chars().take_while(|c| c.is_ascii_hexdigit()).collect::<String>())
        .unwrap_or_default();
    assert_eq!(
        recorded, digest,
        "crates/runtime/src/events.rs changed: update the events section of docs/app-contract.md, then set its \
         `events.rs digest: ` line to {digest}"
    );
}
