//! Script nodes: the file exists inside the agent directory (upstream step 5) and has an
//! extension Loki knows.

use super::V;
use std::path::{Path, PathBuf};

impl V<'_> {
    /// Upstream 5: script files exist, inside the agent directory.
    pub(super) fn scripts(&mut self) {
        for n in &self.l.nodes {
            let Some(s) = n.script() else { continue };
            let (Some(p), Some(path)) = (&s.script, &s.script_path) else {
                continue;
            };
            // The engine runs only scripts inside the agent directory (run/script.rs).
            if let Some(resolved) = self.script_outside(&p.value, path) {
                let d = self
                    .err(
                        "loki-script-outside",
                        format!("Script '{}' resolves to '{}', outside the agent directory", p.value, resolved.display()),
                        p.span,
                    )
                    .node(n.id.value.clone())
                    .hint("scripts must live in the agent's folder (a relative path without `..`, no symbolic link out of it); the run refuses this one");
                self.push(d);
                continue;
            }
            if !path.exists() {
                let d = self
                    .err("loki-script-missing", format!("Script file not found: '{}'", path.display()), p.span)
                    .node(n.id.value.clone())
                    .hint(format!(
                        "script paths are relative to the agent directory ({}); create the file or fix the path",
                        self.l.agent_dir.display()
                    ));
                self.push(d);
            } else if path.is_dir() {
                let d = self
                    .err(
                        "loki-script-missing",
                        format!("Script path is a directory: '{}'", path.display()),
                        p.span,
                    )
                    .node(n.id.value.clone())
                    .hint("`script` must name a .sh, .py or .ts file");
                self.push(d);
            }
        }
    }

    /// Where a script path leads when that is outside the agent directory: an absolute path,
    /// `..` climbing out, or (for an existing file) a symbolic link out of it.
    fn script_outside(&self, written: &str, path: &Path) -> Option<PathBuf> {
        let dir = &self.l.agent_dir;
        if let (Ok(real), Ok(real_dir)) = (path.canonicalize(), dir.canonicalize()) {
            return (!real.starts_with(&real_dir)).then_some(real);
        }
        let w = Path::new(written);
        let mut depth = 0i32;
        let mut escapes = w.has_root();
        for c in w.components() {
            match c {
                std::path::Component::ParentDir => depth -= 1,
                std::path::Component::Normal(_) => depth += 1,
                std::path::Component::Prefix(_) | std::path::Component::RootDir => escapes = true,
                std::path::Component::CurDir => {}
            }
            escapes |= depth < 0;
        }
        escapes.then(|| path.to_path_buf())
    }

    /// Beyond upstream: a script's extension picks its interpreter.
    pub(super) fn script_extensions(&mut self) {
        for n in &self.l.nodes {
            let Some(p) = n.script().and_then(|s| s.script.as_ref()) else {
                continue;
            };
            let ext = Path::new(&p.value)
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase());
            let msg = match ext.as_deref() {
                Some("sh" | "py" | "ts") => continue,
                None => format!("Script has no file extension: '{}'", p.value),
                Some(e) => format!("Unsupported script extension '.{e}' for '{}'", p.value),
            };
            let d = self
                .err("loki-script-ext", msg, p.span)
                .node(n.id.value.clone())
                .hint("Loki picks the interpreter by extension: .sh (bash), .py (python3), .ts (npx tsx); the node fails every time it runs otherwise");
            self.push(d);
        }
    }
}
