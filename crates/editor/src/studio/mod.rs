//! One open document in the editor: its text, undo/redo, the file on disk, the sidecar with the
//! positions the user dragged, and the [`View`] the UI draws.
//!
//! Every change is a [`TextEdit`]: edit ops from the canvas, text typed in the source view, and a
//! reload from disk all go through [`Session::commit`], so undo and redo restore bytes exactly.
//! Saving is atomic (temporary file, fsync, rename) and refuses to overwrite a file that changed
//! on disk since it was loaded or saved, unless the user said so.

pub mod contract;
mod disk;
mod lllm_view;
pub mod recovery;
mod view;

pub use disk::{DiskEvent, SaveError, remove_stale_temps, write_atomic, write_atomic_mode};
pub use recovery::{Recovered, RecoveryStore, Snapshot};
pub use view::{View, ViewEdge, ViewLane, ViewNode};

use syntax::diag::Diagnostic;
use crate::edit::{self, EditError, EditOp, TextEdit};
use serde::{Deserialize, Serialize};
use ts_rs::TS;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A canvas position (top-left corner of the node box).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, TS)]
pub struct Pos {
    pub x: f64,
    pub y: f64,
}

/// One undoable step: `edit` turns the text before into the text after; `inverse` undoes it.
#[derive(Clone, Debug)]
struct Step {
    edit: TextEdit,
    inverse: TextEdit,
}

/// Positions per agent (the Loki graph counts as one agent), as stored in the sidecar.
pub type Positions = BTreeMap<String, BTreeMap<String, Pos>>;

/// Most undo steps kept; the oldest are dropped first.
const UNDO_LIMIT: usize = 1000;

pub struct Session {
    /// The YAML file (for an agent directory: the `graph.yaml`/`config.yaml` inside it).
    path: PathBuf,
    text: String,
    /// Hash of the text as last loaded from or saved to disk.
    saved_hash: u64,
    /// Hash of the file content on disk that this session has seen (load, save, or "keep mine").
    disk_hash: Option<u64>,
    /// The disk changed while the document was dirty and the user has not decided yet.
    conflict: bool,
    undo: Vec<Step>,
    redo: Vec<Step>,
    agent: Option<String>,
    positions: Positions,
    positions_dirty: bool,
    revision: u64,
    /// Bumped whenever the text changes; keys `doc_cache`.
    text_rev: u64,
    /// The document parsed from the current text, shared by the view and the next edit.
    doc_cache: std::sync::Mutex<Option<(u64, std::sync::Arc<model::doc::Document>)>>,
}

impl Session {
    /// Opens a file or an agent directory. Fails with a diagnostic that names the path and says
    /// what to do when it cannot be read as text.
    pub fn open(path: &Path) -> Result<Session, Diagnostic> {
        let file = model::doc::resolve_input(path)?;
        // Temporary files of saves killed before their rename (the file itself is intact).
        disk::remove_stale_temps(&file);
        disk::remove_stale_temps(&disk::sidecar_path(&file));
        let text = disk::read_text(&file)?;
        let positions = disk::read_sidecar(&file);
        let h = disk::hash(text.as_bytes());
        let mut s = Session {
            path: file,
            text,
            saved_hash: h,
            disk_hash: Some(h),
            conflict: false,
            undo: Vec::new(),
            redo: Vec::new(),
            agent: None,
            positions,
            positions_dirty: false,
            revision: 0,
            text_rev: 0,
            doc_cache: Default::default(),
        };
        s.agent = s.default_agent();
        Ok(s)
    }

    /// A session on text that is not (yet) on disk; for tests and benchmarks.
    pub fn from_text(path: &Path, text: String) -> Session {
        let mut s = Session {
            path: path.to_path_buf(),
            saved_hash: disk::hash(text.as_bytes()),
            disk_hash: None,
            text,
            conflict: false,
            undo: Vec::new(),
            redo: Vec::new(),
            agent: None,
            positions: Positions::new(),
            positions_dirty: false,
            revision: 0,
            text_rev: 0,
            doc_cache: Default::default(),
        };
        s.agent = s.default_agent();
        s
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn text(&self) -> &str {
        &self.text
    }
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }
    pub fn revision(&self) -> u64 {
        self.revision
    }
    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }
    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }
    /// Unsaved changes: the text differs from the file, or dragged positions are not saved.
    pub fn dirty(&self) -> bool {
        disk::hash(self.text.as_bytes()) != self.saved_hash || self.positions_dirty
    }
    /// The disk changed under a dirty document and the user has not chosen yet.
    pub fn in_conflict(&self) -> bool {
        self.conflict
    }

    /// The sidecar file that holds node positions: `<file>.switchyard.json`.
    pub fn sidecar_path(&self) -> PathBuf {
        disk::sidecar_path(&self.path)
    }

    /// The document for the current text (parsed once per text version).
    pub fn document(&self) -> std::sync::Arc<model::doc::Document> {
        let mut cache = self.doc_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((rev, d)) = cache.as_ref() {
            if *rev == self.text_rev {
                return d.clone();
            }
        }
        let d = std::sync::Arc::new(model::doc::load_str(&self.path, &self.text));
        *cache = Some((self.text_rev, d.clone()));
        d
    }

    /// Parse the text again on the next [`Session::document`]: something the parse depends on
    /// changed (the folder's trust decides whether `${VAR}`s read the environment).
    pub fn reparse(&self) {
        *self.doc_cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn set_text_raw(&mut self, text: String) {
        self.text = text;
        self.text_rev += 1;
    }

    fn default_agent(&self) -> Option<String> {
        let doc = self.document();
        model::graph::agent_names(&doc).into_iter().next()
    }

    /// The agent key used for positions (the Loki graph's name, or the sherma agent).
    fn positions_key(&self) -> String {
        self.agent.clone().unwrap_or_default()
    }

    /// Applies an edit op from the canvas or the inspector.
    pub fn apply(&mut self, op: &EditOp) -> Result<Option<String>, EditError> {
        let doc = self.document();
        let applied = edit::apply_doc(&doc, &self.text, self.agent.as_deref(), op)?;
        if let EditOp::RenameNode { from, to } = op {
            self.rename_position(from, to);
        }
        self.commit(Step { edit: applied.edit, inverse: applied.inverse });
        // Only document-level edits can rename or remove the selected agent.
        if matches!(op, EditOp::SetDocField { .. }) {
            let _ = self.ensure_agent();
        }
        Ok(applied.select)
    }

    /// Replaces the whole text (typed in the source view). Undoable; a no-op when equal.
    pub fn set_text(&mut self, text: String) {
        if text == self.text {
            return;
        }
        let e = edit::diff(&self.text, &text);
        let inverse = inverse_of(&self.text, &e);
        self.commit(Step { edit: e, inverse });
        let _ = self.ensure_agent();
    }

    fn commit(&mut self, step: Step) {
        self.set_text_raw(step.edit.apply(&self.text));
        self.undo.push(step);
        if self.undo.len() > UNDO_LIMIT {
            self.undo.remove(0);
        }
        self.redo.clear();
        self.revision += 1;
    }

    pub fn undo(&mut self) -> bool {
        let Some(step) = self.undo.pop() else { return false };
        self.set_text_raw(step.inverse.apply(&self.text));
        self.redo.push(step);
        self.revision += 1;
        let _ = self.ensure_agent();
        true
    }

    pub fn redo(&mut self) -> bool {
        let Some(step) = self.redo.pop() else { return false };
        self.set_text_raw(step.edit.apply(&self.text));
        self.undo.push(step);
        self.revision += 1;
        let _ = self.ensure_agent();
        true
    }

    /// Keeps the selected agent valid after the text changed (e.g. the agent was renamed).
    fn ensure_agent(&mut self) -> Option<()> {
        let doc = self.document();
        let names = model::graph::selectable_agents(&doc);
        match &self.agent {
            Some(a) if names.iter().any(|n| n == a) => {}
            _ => self.agent = names.into_iter().next(),
        }
        Some(())
    }

    /// Switches the agent shown (multi-agent sherma files).
    pub fn select_agent(&mut self, name: &str) -> Result<(), String> {
        let doc = self.document();
        let names = model::graph::selectable_agents(&doc);
        if names.iter().any(|n| n == name) {
            self.agent = Some(name.to_string());
            self.revision += 1;
            Ok(())
        } else {
            Err(format!(
                "this file has no agent `{name}`; its agents are: {}",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ))
        }
    }

    /// Records positions the user dragged (merged into the current agent's positions).
    pub fn set_positions(&mut self, p: BTreeMap<String, Pos>) {
        if p.is_empty() {
            return;
        }
        let slot = self.positions.entry(self.positions_key()).or_default();
        for (id, pos) in p {
            if !pos.x.is_finite() || !pos.y.is_finite() {
                continue;
            }
            if slot.get(&id) != Some(&pos) {
                slot.insert(id, pos);
                self.positions_dirty = true;
            }
        }
        self.revision += 1;
    }

    /// Drops the dragged positions of the current agent, so the automatic layout applies again.
    pub fn relayout(&mut self) {
        if self.positions.remove(&self.positions_key()).is_some() {
            self.positions_dirty = true;
            self.revision += 1;
        }
    }

    pub fn positions(&self) -> Option<&BTreeMap<String, Pos>> {
        self.positions.get(&self.positions_key())
    }

    fn rename_position(&mut self, from: &str, to: &str) {
        let key = self.positions_key();
        if let Some(slot) = self.positions.get_mut(&key) {
            if let Some(p) = slot.remove(from) {
                slot.insert(to.to_string(), p);
                self.positions_dirty = true;
            }
        }
    }

    /// Saves atomically. Refuses with [`SaveError::Conflict`] when the file changed on disk since
    /// it was loaded or saved, unless `force` (the user chose "keep mine").
    pub fn save(&mut self, force: bool) -> Result<(), SaveError> {
        let on_disk = disk::read_hash(&self.path);
        if !force && on_disk.is_some() && on_disk != self.disk_hash {
            self.conflict = true;
            return Err(SaveError::Conflict { path: self.path.clone() });
        }
        disk::write_atomic(&self.path, self.text.as_bytes())?;
        if self.positions_dirty || disk::sidecar_path(&self.path).exists() {
            disk::write_sidecar(&self.path, &self.positions)?;
        }
        let h = disk::hash(self.text.as_bytes());
        self.saved_hash = h;
        self.disk_hash = Some(h);
        self.positions_dirty = false;
        self.conflict = false;
        self.revision += 1;
        Ok(())
    }

    /// Looks at the file on disk after a watcher event. Our own saves are recognised by their
    /// content hash and change nothing. A clean document takes the disk version (undoable); a
    /// dirty one is left alone and reported as a conflict for the user to decide.
    pub fn check_disk(&mut self) -> DiskEvent {
        let Some(disk_text) = disk::read_text(&self.path).ok() else {
            if self.path.exists() {
                return DiskEvent::Unchanged;
            }
            if self.disk_hash.is_none() {
                return DiskEvent::Unchanged;
            }
            self.disk_hash = None;
            self.saved_hash = 0;
            self.revision += 1;
            return DiskEvent::Deleted;
        };
        let h = disk::hash(disk_text.as_bytes());
        if Some(h) == self.disk_hash {
            return DiskEvent::Unchanged;
        }
        if h == disk::hash(self.text.as_bytes()) {
            // Someone wrote exactly what we have.
            self.disk_hash = Some(h);
            self.saved_hash = h;
            self.conflict = false;
            self.revision += 1;
            return DiskEvent::Unchanged;
        }
        if self.dirty() && !self.positions_only_dirty() {
            self.conflict = true;
            self.revision += 1;
            return DiskEvent::Conflict;
        }
        self.take_disk_text(disk_text, h);
        DiskEvent::Reloaded
    }

    fn positions_only_dirty(&self) -> bool {
        disk::hash(self.text.as_bytes()) == self.saved_hash
    }

    fn take_disk_text(&mut self, disk_text: String, h: u64) {
        if disk_text != self.text {
            let e = edit::diff(&self.text, &disk_text);
            let inverse = inverse_of(&self.text, &e);
            self.commit(Step { edit: e, inverse });
            let _ = self.ensure_agent();
        }
        self.saved_hash = h;
        self.disk_hash = Some(h);
        self.conflict = false;
        self.revision += 1;
    }

    /// Takes the version on disk, dropping unsaved text changes (undo brings them back).
    pub fn reload(&mut self) -> Result<(), Diagnostic> {
        let disk_text = disk::read_text(&self.path)?;
        let h = disk::hash(disk_text.as_bytes());
        self.take_disk_text(disk_text, h);
        Ok(())
    }

    /// The user keeps their version: the next save overwrites the changed file.
    pub fn keep_mine(&mut self) {
        self.disk_hash = disk::read_hash(&self.path);
        self.conflict = false;
        self.revision += 1;
    }

    /// The text has unsaved changes (dragged positions aside).
    pub fn text_dirty(&self) -> bool {
        !self.positions_only_dirty()
    }

    /// What a recovery file should hold now: `None` while the text has no unsaved changes (the
    /// front end then discards the recovery file). The base hash names the disk version the
    /// edits were made on, when the disk still holds it.
    pub fn recovery_snapshot(&self) -> Option<Snapshot> {
        if !self.text_dirty() {
            return None;
        }
        let base_sha256 = std::fs::read(&self.path)
            .ok()
            .filter(|b| Some(disk::hash(b)) == self.disk_hash)
            .map(|b| recovery::sha256_hex(&b));
        Some(Snapshot { path: self.path.clone(), text: self.text.clone(), base_sha256 })
    }

    /// Unsaved text a recovery store keeps for this document (see [`RecoveryStore::find`]).
    pub fn find_recovery(&self, store: &RecoveryStore) -> Option<Recovered> {
        store.find(&self.path, self.disk_text().as_deref())
    }

    /// Loads recovered text as one undoable edit over the current text (the document becomes
    /// dirty; undo goes back to the text on disk). Refuses text recovered for another file.
    pub fn restore(&mut self, r: &Recovered) -> Result<(), String> {
        if r.path != self.path {
            return Err(format!(
                "the recovered changes belong to {}, not to {}; open that file to restore them",
                r.path.display(),
                self.path.display()
            ));
        }
        self.set_text(r.text.clone());
        Ok(())
    }

    /// The file's current content on disk, for "show diff".
    pub fn disk_text(&self) -> Option<String> {
        disk::read_text(&self.path).ok()
    }

    /// What the UI draws.
    pub fn view(&self) -> View {
        view::build(self)
    }
}

/// A problem in an expression typed in the inspector, with a byte range inside the expression.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct ExprProblem {
    pub message: String,
    pub start: usize,
    pub end: usize,
    pub severity: syntax::diag::Severity,
}

/// Checks an expression as the user types: `kind` is `cel` (sherma expressions and branch
/// conditions) or `template` (Loki `{{...}}` text). An unknown kind is reported, not ignored.
pub fn check_expr(kind: &str, text: &str) -> Vec<ExprProblem> {
    use syntax::diag::Severity;
    match kind {
        "cel" | "cel_condition" => {
            let t = text.trim();
            if kind == "cel_condition" && (t == "has_tool_calls" || t == "has_error_fallback") {
                return Vec::new();
            }
            match expr::cel::CelEngine::shared().compile(text) {
                Ok(_) => Vec::new(),
                Err(e) => {
                    let mut message = e.message.clone();
                    if let Some(h) = &e.hint {
                        message.push_str(" (");
                        message.push_str(h);
                        message.push(')');
                    }
                    let end = (e.offset + e.len.max(1)).min(text.len()).max(e.offset.min(text.len()));
                    vec![ExprProblem { message, start: e.offset.min(text.len()), end, severity: Severity::Error }]
                }
            }
        }
        "template" => expr::template::lint(text)
            .into_iter()
            .map(|i| ExprProblem { message: i.message, start: i.range.start, end: i.range.end, severity: match i.severity { expr::template::Severity::Error => Severity::Error, expr::template::Severity::Warning => Severity::Warning } })
            .collect(),
        other => vec![ExprProblem {
            message: format!("unknown expression kind `{other}` (expected cel, cel_condition or template)"),
            start: 0,
            end: 0,
            severity: Severity::Error,
        }],
    }
}

/// The inverse of `e` applied to `old`: replaces the inserted text with the removed one.
fn inverse_of(old: &str, e: &TextEdit) -> TextEdit {
    TextEdit { start: e.start, end: e.start + e.text.len(), text: old[e.start..e.end].to_string() }
}

#[cfg(test)]
mod tests;
