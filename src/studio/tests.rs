use super::*;
use std::fs;

const LOKI: &str = "# header comment\nname: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: script\n    script: a.sh\n    next: b\n  # the end\n  b:\n    type: end\n    message: done\n";

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("switchyard-studio-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn open(tag: &str, text: &str) -> (PathBuf, Session) {
    let d = temp_dir(tag);
    let p = d.join("graph.yaml");
    fs::write(&p, text).unwrap();
    let s = Session::open(&p).unwrap();
    (p, s)
}

#[test]
fn open_directory_and_view() {
    let (p, _) = open("dir", LOKI);
    let s = Session::open(p.parent().unwrap()).unwrap();
    assert_eq!(s.path(), p.as_path());
    let v = s.view();
    assert_eq!(v.dialect, Some("loki"));
    assert_eq!(v.file_name, "graph.yaml");
    assert!(!v.dirty);
    let ids: Vec<&str> = v.nodes.iter().map(|n| n.id.as_str()).collect();
    assert!(ids.contains(&"a") && ids.contains(&"b"), "{ids:?}");
    let a = v.nodes.iter().find(|n| n.id == "a").unwrap();
    assert_eq!((a.line, a.end_line), (Some(6), Some(9)));
    assert_eq!(a.data["script"], "a.sh");
    assert!(v.edges.iter().any(|e| e.from == "a" && e.to == "b"));
    assert!(v.schema.contains_key("script"));
}

#[test]
fn open_missing_file_is_a_clear_error() {
    let d = temp_dir("missing");
    let err = Session::open(&d.join("nope.yaml")).err().expect("must fail");
    assert!(err.message.contains("nope.yaml"), "{}", err.message);
}

#[test]
fn text_edits_undo_redo_and_dirty() {
    let (_, mut s) = open("undo", LOKI);
    let orig = s.text().to_string();
    s.set_text(orig.replace("done", "finished"));
    assert!(s.dirty());
    s.set_text(s.text().replace("a.sh", "b.sh"));
    assert!(s.undo());
    assert!(s.undo());
    assert_eq!(s.text(), orig);
    assert!(!s.dirty());
    assert!(!s.undo());
    assert!(s.redo());
    assert!(s.text().contains("finished"));
    // A new edit clears the redo stack.
    s.set_text(s.text().replace("g\n", "h\n"));
    assert!(!s.can_redo());
}

#[test]
fn save_is_atomic_and_detects_external_changes() {
    let (p, mut s) = open("save", LOKI);
    s.set_text(s.text().replace("done", "finished"));
    s.save(false).unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), s.text());
    assert!(!s.dirty());
    // Our own save is not an external change.
    assert_eq!(s.check_disk(), DiskEvent::Unchanged);
    // No temporary files are left behind.
    let left: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "{left:?}");

    // Clean document: an external change reloads it, and undo brings back the previous text.
    let before = s.text().to_string();
    fs::write(&p, LOKI.replace("a.sh", "c.sh")).unwrap();
    assert_eq!(s.check_disk(), DiskEvent::Reloaded);
    assert!(s.text().contains("c.sh"));
    assert!(!s.dirty());
    assert!(s.undo());
    assert_eq!(s.text(), before);
    assert!(s.redo());

    // Dirty document: an external change is a conflict; nothing is overwritten silently.
    s.set_text(s.text().replace("c.sh", "mine.sh"));
    fs::write(&p, LOKI.replace("a.sh", "theirs.sh")).unwrap();
    assert_eq!(s.check_disk(), DiskEvent::Conflict);
    assert!(s.text().contains("mine.sh"));
    assert!(matches!(s.save(false), Err(SaveError::Conflict { .. })));
    assert!(fs::read_to_string(&p).unwrap().contains("theirs.sh"));
    assert_eq!(s.disk_text().unwrap(), LOKI.replace("a.sh", "theirs.sh"));
    s.keep_mine();
    s.save(false).unwrap();
    assert!(fs::read_to_string(&p).unwrap().contains("mine.sh"));

    // Reload takes the disk version, undoably.
    s.set_text(s.text().replace("mine.sh", "unsaved.sh"));
    fs::write(&p, LOKI).unwrap();
    assert_eq!(s.check_disk(), DiskEvent::Conflict);
    s.reload().unwrap();
    assert_eq!(s.text(), LOKI);
    assert!(!s.dirty());
    assert!(s.undo());
    assert!(s.text().contains("unsaved.sh"));

    fs::remove_file(&p).unwrap();
    assert_eq!(s.check_disk(), DiskEvent::Deleted);
    assert!(s.dirty());
}

#[test]
fn positions_live_in_the_sidecar_never_in_the_yaml() {
    let (p, mut s) = open("pos", LOKI);
    let mut m = BTreeMap::new();
    m.insert("a".to_string(), Pos { x: 10.0, y: 20.0 });
    s.set_positions(m);
    assert!(s.dirty());
    s.save(false).unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), LOKI, "the YAML is untouched");
    let side = fs::read_to_string(s.sidecar_path()).unwrap();
    assert!(side.contains("\"x\": 10.0"), "{side}");
    let s2 = Session::open(&p).unwrap();
    let v = s2.view();
    let a = v.nodes.iter().find(|n| n.id == "a").unwrap();
    assert_eq!((a.x, a.y, a.pinned), (10.0, 20.0, true));
    // A corrupt sidecar is ignored, never fatal.
    fs::write(s2.sidecar_path(), "{not json").unwrap();
    assert!(Session::open(&p).unwrap().positions().is_none());
}

#[test]
fn agent_selection() {
    let d = temp_dir("agents");
    let p = d.join("agent.yaml");
    fs::write(
        &p,
        "manifest_version: 1\nagents:\n  one:\n    state:\n      fields: []\n    graph:\n      entry_point: x\n      nodes:\n        - name: x\n          type: set_state\n          args: {values: {}}\n      edges: []\n  two:\n    state:\n      fields: []\n    graph:\n      entry_point: y\n      nodes:\n        - name: y\n          type: set_state\n          args: {values: {}}\n      edges: []\n",
    )
    .unwrap();
    let mut s = Session::open(&p).unwrap();
    assert_eq!(s.agent(), Some("one"));
    assert!(s.select_agent("nope").unwrap_err().contains("one, two"));
    s.select_agent("two").unwrap();
    let v = s.view();
    assert_eq!(v.agents, vec!["one", "two"]);
    assert!(v.nodes.iter().any(|n| n.id == "y"));
    assert!(!v.nodes.iter().any(|n| n.id == "x"));
}

#[test]
fn view_of_broken_yaml_keeps_text_and_reports() {
    let (_, mut s) = open("broken", LOKI);
    s.set_text("name: [unclosed\n".into());
    let v = s.view();
    assert_eq!(v.text, "name: [unclosed\n");
    assert!(v.diagnostics.iter().any(|d| d.is_error()));
}

#[test]
fn expression_checks() {
    assert!(check_expr("cel", "state.x > 1").is_empty());
    let p = check_expr("cel", "state.x >");
    assert_eq!(p.len(), 1);
    assert!(p[0].end <= "state.x >".len());
    assert!(check_expr("cel_condition", "has_tool_calls").is_empty());
    assert!(!check_expr("cel", "has_tool_calls(").is_empty());
    assert!(check_expr("template", "hello {{name}}").is_empty());
    assert!(!check_expr("template", "hello {{name").is_empty());
    assert!(!check_expr("sql", "x").is_empty());
}
