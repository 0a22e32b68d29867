//! Embeds the inbox page (`ui/dist-inbox/`, built by `npm --prefix ui run build:inbox`) into the
//! server, so one binary serves it. Without a build the server answers `/inbox/` with a page
//! saying how to build it.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dist = manifest.join("../../ui/dist-inbox");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files = Vec::new();
    collect(&dist, &dist, &mut files);
    files.sort();
    let mut out = String::from("/// The inbox page's files: (path below `/inbox/`, bytes).\npub static ASSETS: &[(&str, &[u8])] = &[\n");
    for (rel, abs) in &files {
        println!("cargo:rerun-if-changed={}", abs.display());
        out.push_str(&format!("    ({rel:?}, include_bytes!({:?})),\n", abs.display().to_string()));
    }
    out.push_str("];\n");
    let to = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("inbox_assets.rs");
    std::fs::write(to, out).unwrap();
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    for e in read.flatten() {
        let p = e.path();
        if p.is_dir() {
            println!("cargo:rerun-if-changed={}", p.display());
            collect(root, &p, out);
        } else if let Ok(rel) = p.strip_prefix(root) {
            let abs = p.canonicalize().unwrap_or(p.clone());
            out.push((rel.to_string_lossy().replace('\\', "/"), abs));
        }
    }
}
