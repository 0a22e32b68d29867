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

#[test]
fn stale_temp_files_of_dead_savers_are_removed_on_open() {
    let (p, _) = open("temps", LOKI);
    let dir = p.parent().unwrap();
    // A process that has ended (waited for, so not a zombie).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.join(format!(".graph.yaml.switchyard-{dead}.tmp"));
    let stale_side = dir.join(format!(".graph.yaml.switchyard.json.switchyard-{dead}.tmp"));
    let live = dir.join(format!(".graph.yaml.switchyard-{}.tmp", std::process::id()));
    let other = dir.join(".graph.yaml.switchyard-notapid.tmp");
    for f in [&stale, &stale_side, &live, &other] {
        fs::write(f, "partial").unwrap();
    }
    let s = Session::open(&p).unwrap();
    assert_eq!(s.text(), LOKI, "the file itself is untouched");
    assert!(!stale.exists() && !stale_side.exists(), "temporary files of a dead process are removed");
    assert!(live.exists(), "a running process's save may be under way: left alone");
    assert!(other.exists(), "names that do not match exactly are not ours");
}

#[test]
fn external_change_while_dirty_is_never_overwritten_silently() {
    // No watcher event in between: the save itself notices the change.
    let (p, mut s) = open("dirty-ext", LOKI);
    s.set_text(s.text().replace("done", "mine"));
    let theirs = LOKI.replace("done", "theirs");
    fs::write(&p, &theirs).unwrap();
    let err = s.save(false).unwrap_err();
    assert!(matches!(err, SaveError::Conflict { .. }));
    let msg = err.to_string();
    assert!(msg.contains("graph.yaml") && msg.contains("changed on disk") && msg.contains("keep your version"), "{msg}");
    assert!(s.in_conflict() && s.view().conflict);
    assert_eq!(fs::read_to_string(&p).unwrap(), theirs, "their version is untouched");
    assert!(s.text().contains("mine"), "ours is kept in the editor");
    // Refused again until the user decides; more typing does not change that.
    s.set_text(s.text().replace("mine", "still mine"));
    assert!(matches!(s.save(false), Err(SaveError::Conflict { .. })));
    assert_eq!(fs::read_to_string(&p).unwrap(), theirs);
    // "Keep mine": the next save overwrites.
    s.keep_mine();
    assert!(!s.in_conflict());
    s.save(false).unwrap();
    assert!(fs::read_to_string(&p).unwrap().contains("still mine"));
    // force (the UI's save after "keep mine") also overwrites a newer change.
    s.set_text(s.text().replace("still mine", "forced"));
    fs::write(&p, &theirs).unwrap();
    assert!(matches!(s.save(false), Err(SaveError::Conflict { .. })));
    s.save(true).unwrap();
    assert!(fs::read_to_string(&p).unwrap().contains("forced"));
    // A file deleted under a dirty document is written again by the save (nothing to lose).
    s.set_text(s.text().replace("forced", "again"));
    fs::remove_file(&p).unwrap();
    s.save(false).unwrap();
    assert!(fs::read_to_string(&p).unwrap().contains("again"));
}

fn store(tag: &str) -> RecoveryStore {
    RecoveryStore::new(temp_dir(&format!("recovery-{tag}")).join("state/recovery"))
}

#[test]
fn recovery_write_find_restore_discard() {
    let (p, mut s) = open("rec", LOKI);
    let st = store("rec");
    assert!(s.recovery_snapshot().is_none(), "a clean document needs no recovery");
    assert!(s.find_recovery(&st).is_none());
    s.set_text(LOKI.replace("done", "unsaved work"));
    let snap = s.recovery_snapshot().expect("dirty");
    assert_eq!(snap.base_sha256.as_deref(), Some(recovery::sha256_hex(LOKI.as_bytes()).as_str()));
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    st.write(&snap).unwrap();
    let text_file = st.text_path(&p);
    assert_eq!(fs::read_to_string(&text_file).unwrap(), s.text());
    assert!(text_file.starts_with(st.dir()) && text_file.extension().unwrap() == "yaml");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&text_file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(st.meta_path(&p)).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let meta: serde_json::Value = serde_json::from_slice(&fs::read(st.meta_path(&p)).unwrap()).unwrap();
    assert_eq!(meta["path"], p.to_string_lossy().as_ref());

    // The app crashed: a new session on the same file finds the text.
    drop(s);
    let mut s = Session::open(&p).unwrap();
    let r = s.find_recovery(&st).expect("offered");
    assert_eq!(r.text, LOKI.replace("done", "unsaved work"));
    assert!(!r.disk_changed && r.warning.is_none());
    assert!(r.saved_at_ms >= before && r.saved_at_ms <= before + 60_000, "{} vs {before}", r.saved_at_ms);
    // Restoring is one undoable, dirty edit over the disk text.
    s.restore(&r).unwrap();
    assert_eq!(s.text(), r.text);
    assert!(s.dirty() && s.can_undo());
    assert!(s.undo());
    assert_eq!(s.text(), LOKI);
    assert!(s.redo());
    // Saving makes the recovery obsolete: the front end discards it, and a leftover whose text
    // is on disk is never offered (and is cleaned up).
    s.save(false).unwrap();
    assert!(s.recovery_snapshot().is_none());
    assert!(s.find_recovery(&st).is_none());
    assert!(!text_file.exists() && !st.meta_path(&p).exists());

    // Discard removes both files.
    s.set_text(LOKI.to_string());
    st.write(&s.recovery_snapshot().unwrap()).unwrap();
    assert!(s.find_recovery(&st).is_some());
    st.discard(&p).unwrap();
    assert!(s.find_recovery(&st).is_none());
    st.discard(&p).unwrap(); // twice is fine

    // Recovered text of another file is not restored into this one.
    let r2 = Recovered { path: p.with_file_name("other.yaml"), ..r };
    assert!(s.restore(&r2).unwrap_err().contains("other.yaml"));
}

#[test]
fn stale_recovery_is_offered_with_a_warning() {
    let (p, mut s) = open("rec-stale", LOKI);
    let st = store("stale");
    s.set_text(LOKI.replace("done", "mine"));
    st.write(&s.recovery_snapshot().unwrap()).unwrap();
    drop(s);
    // Someone else changed the file after the crash.
    fs::write(&p, LOKI.replace("done", "theirs")).unwrap();
    let mut s = Session::open(&p).unwrap();
    let r = s.find_recovery(&st).expect("still offered");
    assert!(r.disk_changed);
    assert!(r.warning.as_deref().unwrap().contains("changed on disk"), "{:?}", r.warning);
    s.restore(&r).unwrap();
    assert!(s.text().contains("mine"));
    assert!(s.undo());
    assert!(s.text().contains("theirs"));

    // A snapshot taken after the disk changed under the dirty session has no known base.
    s.redo();
    fs::write(&p, LOKI.replace("done", "third")).unwrap();
    let snap = s.recovery_snapshot().unwrap();
    assert!(snap.base_sha256.is_none());
    st.write(&snap).unwrap();
    assert!(s.find_recovery(&st).unwrap().disk_changed);

    // The meta lost (crash between the two writes) or corrupt: the text is still offered.
    fs::remove_file(st.meta_path(&p)).unwrap();
    let r = s.find_recovery(&st).expect("text without meta");
    assert!(r.disk_changed && r.warning.as_deref().unwrap().contains("could not be verified"));
    assert!(r.saved_at_ms > 0, "falls back to the file time");
    fs::write(st.meta_path(&p), "{not json").unwrap();
    assert!(s.find_recovery(&st).is_some());
    // The document deleted on disk: offered, saying so.
    fs::remove_file(&p).unwrap();
    let r = st.find(&p, None).unwrap();
    assert!(r.warning.unwrap().contains("no longer exists"));
    // Another document's recovery is never offered for this one.
    let other = p.with_file_name("other.yaml");
    assert!(st.find(&other, Some("x: 1\n")).is_none());
}

#[test]
fn recovery_dir_from_the_environment() {
    use std::ffi::OsString;
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
    };
    let d = |pairs| RecoveryStore::dir_from_env(env(pairs));
    assert_eq!(d(&[("SWITCHYARD_RECOVERY_DIR", "/x/rec"), ("XDG_STATE_HOME", "/s")]), Some(PathBuf::from("/x/rec")));
    assert_eq!(d(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]), Some(PathBuf::from("/s/switchyard/recovery")));
    if cfg!(target_os = "linux") {
        // A relative XDG_STATE_HOME is invalid per the spec: ignored.
        assert_eq!(d(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]), Some(PathBuf::from("/h/.local/state/switchyard/recovery")));
        assert_eq!(d(&[("SWITCHYARD_RECOVERY_DIR", ""), ("HOME", "/h")]), Some(PathBuf::from("/h/.local/state/switchyard/recovery")));
        assert_eq!(d(&[]), None);
    }
}
