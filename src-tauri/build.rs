fn main() {
    // tauri.conf.json lives at the repository root (shared with the docs and the dev script);
    // paths inside it (frontendDist, icons) resolve relative to that folder.
    tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json"))
        .expect("failed to read ../tauri.conf.json (see docs/app-contract.md and notes/tauri-linux.md)");
}
