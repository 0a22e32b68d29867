//! Recently opened files: a JSON array of absolute paths in the user's config directory,
//! most recent first, at most [`MAX`] entries. Files that no longer exist are dropped on read.

use std::path::{Path, PathBuf};

pub const MAX: usize = 10;

/// Where the list lives (`<config dir>/<identifier>/recent.json`); None when there is no
/// config dir (the list is then simply not remembered).
#[derive(Clone, Debug)]
pub struct Recent {
    file: Option<PathBuf>,
}

impl Recent {
    pub fn new(file: Option<PathBuf>) -> Recent {
        Recent { file }
    }

    /// The remembered files that still exist, most recent first.
    pub fn list(&self) -> Vec<String> {
        let Some(file) = &self.file else { return Vec::new() };
        let Ok(text) = std::fs::read_to_string(file) else { return Vec::new() };
        // A damaged list is treated as empty; it is rewritten on the next open.
        let entries: Vec<String> = serde_json::from_str(&text).unwrap_or_default();
        let mut out: Vec<String> = Vec::new();
        for e in entries {
            if Path::new(&e).exists() && !out.contains(&e) {
                out.push(e);
            }
            if out.len() == MAX {
                break;
            }
        }
        out
    }

    /// Puts `path` first. Errors are ignored: a missing recent list must never stop an open.
    pub fn push(&self, path: &Path) {
        let Some(file) = &self.file else { return };
        let path = path.to_string_lossy().into_owned();
        let mut entries = self.list();
        entries.retain(|e| *e != path);
        entries.insert(0, path);
        entries.truncate(MAX);
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(json) = serde_json::to_string_pretty(&entries) {
            let tmp = file.with_extension("json.tmp");
            if std::fs::write(&tmp, json).is_ok() {
                let _ = std::fs::rename(&tmp, file);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("switchyard-recent-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn most_recent_first_deduplicated_capped_and_missing_dropped() {
        let d = scratch("order");
        let r = Recent::new(Some(d.join("cfg/recent.json")));
        assert!(r.list().is_empty());
        let files: Vec<PathBuf> = (0..12).map(|i| d.join(format!("f{i}.yaml"))).collect();
        for f in &files {
            std::fs::write(f, "x").unwrap();
            r.push(f);
        }
        r.push(&files[3]);
        let l = r.list();
        assert_eq!(l.len(), MAX);
        assert_eq!(l[0], files[3].to_string_lossy());
        assert_eq!(l[1], files[11].to_string_lossy());
        assert_eq!(l.iter().filter(|e| **e == files[3].to_string_lossy()).count(), 1);
        std::fs::remove_file(&files[11]).unwrap();
        assert!(!r.list().contains(&files[11].to_string_lossy().into_owned()));
    }

    #[test]
    fn damaged_list_reads_as_empty_and_is_rewritten() {
        let d = scratch("damaged");
        let list = d.join("recent.json");
        std::fs::write(&list, "{not json").unwrap();
        let r = Recent::new(Some(list));
        assert!(r.list().is_empty());
        let f = d.join("a.yaml");
        std::fs::write(&f, "x").unwrap();
        r.push(&f);
        assert_eq!(r.list(), vec![f.to_string_lossy().into_owned()]);
    }

    #[test]
    fn no_config_dir_is_harmless() {
        let r = Recent::new(None);
        r.push(Path::new("/nope"));
        assert!(r.list().is_empty());
    }
}
