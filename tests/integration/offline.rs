//! Scripted and replayed runs are offline: a remote hook, a RAG URL document, embeddings, an
//! A2A agent or an MCP server over HTTP is not contacted (no connection reaches the loopback
//! listener) and the run says why and how to allow it; allowing the network for the run
//! (`Online`, `--allow-network`) makes the same run contact them.

use std::path::Path;
use std::sync::Arc;
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::{NoProvider, Online, ScriptedProvider};
use switchyard::run::session::{RunOptions, RunSession};
use test_support::TempDir;
use test_support::http::{Page, Site};

const OFFLINE: &str = "this run is offline";

fn graph(dir: &Path, url: &str) -> std::path::PathBuf {
    let g = dir.join("graph.yaml");
    std::fs::write(
        &g,
        format!(
            "name: kb\nversion: \"1.0\"\nstart: retrieve\nnodes:\n  retrieve:\n    type: rag\n    documents: [\"{url}\"]\n    query: kite wind\n    top_k: 1\n    state_updates:\n      context: \"{{{{output.context}}}}\"\n    next: done\n  done:\n    type: end\n    output: \"{{{{context}}}}\"\n"
        ),
    )
    .unwrap();
    g
}

fn run(path: &Path, provider: Box<dyn switchyard::run::provider::LlmProvider>) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(path));
    let mut s = launch::session(doc, &RunRequest::default(), RunOptions::new(provider)).unwrap();
    s.run();
    s
}

fn site() -> Site {
    Site::start([("/kites.txt", Page::text("Launch the kite with the wind at your back."))])
}

#[test]
fn a_scripted_run_fetches_no_url_document_and_says_how_to_allow_it() {
    let web = site();
    let t = TempDir::new("offline-rag");
    let url = format!("http://{}/kites.txt", web.addr);
    let g = graph(t.path(), &url);
    let scripted = || Box::new(ScriptedProvider::from_str(Path::new("r.yaml"), "replies: []\n").unwrap());

    let s = run(&g, scripted());
    let why = test_support::run::failure(&s);
    assert!(why.contains(OFFLINE) && why.contains(&url) && why.contains("--allow-network"), "{why}");
    assert!(web.hits().is_empty(), "an offline run reached the server: {:?}", web.hits());

    // A run without any provider is offline too.
    let s = run(&g, Box::new(NoProvider));
    assert!(test_support::run::failure(&s).contains(OFFLINE));
    assert!(web.hits().is_empty());

    // Allowed for this run: fetched.
    let s = run(&g, Box::new(Online(scripted())));
    let out = test_support::run::completed(&s);
    assert!(out.as_str().unwrap_or("").contains("wind at your back"), "{out}");
    assert_eq!(web.hits(), ["/kites.txt"]);
}

#[test]
fn a_scripted_sherma_run_calls_no_remote_hook() {
    let web = Site::start([("/hooks", Page::new(200, "application/json", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}"))]);
    let t = TempDir::new("offline-hook");
    let url = format!("http://{}/hooks", web.addr);
    let file = t.path().join("agent.yaml");
    std::fs::write(
        &file,
        format!("manifest_version: 1\nhooks:\n  - url: {url}\nagents:\n  a:\n    state:\n      fields: [{{name: n, type: int}}]\n    graph:\n      entry_point: bump\n      nodes:\n        - {{name: bump, type: set_state, args: {{values: {{n: '1'}}}}}}\n      edges:\n        - {{source: bump, target: __end__}}\n"),
    )
    .unwrap();
    let s = run(&file, Box::new(NoProvider));
    let why = test_support::run::failure(&s);
    assert!(why.contains(OFFLINE) && why.contains("remote hook"), "{why}");
    assert!(web.hits().is_empty(), "{:?}", web.hits());
    let s = run(&file, Box::new(Online(Box::new(NoProvider))));
    test_support::run::completed(&s);
    assert!(!web.hits().is_empty(), "the allowed run did not call the hook");
}

#[test]
fn the_cli_is_offline_unless_allow_network_is_given() {
    let web = site();
    let t = TempDir::new("offline-cli");
    let url = format!("http://{}/kites.txt", web.addr);
    let g = graph(t.path(), &url);
    let bin = env!("CARGO_BIN_EXE_switchyard");
    let out = std::process::Command::new(bin).args(["run", "--trust"]).arg(&g).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(OFFLINE) && err.contains("--allow-network"), "{err}");
    assert!(web.hits().is_empty());
    let out = std::process::Command::new(bin).args(["run", "--trust", "--allow-network", "-q"]).arg(&g).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("wind at your back"));
    assert_eq!(web.hits(), ["/kites.txt"]);
}
