//! Edit ops: every change to a document is a text edit computed here (docs/app-contract.md §1).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A replacement of the byte range `start..end` of the OLD text by `text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextEdit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// The result of an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub text: String,
    pub edit: TextEdit,
    pub inverse: TextEdit,
    pub select: Option<String>,
}

/// What went wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditError {
    pub message: String,
}

impl EditError {
    pub fn new(message: impl Into<String>) -> Self {
        EditError { message: message.into() }
    }
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EditError {}

/// One element of a field path: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PathSeg {
    Index(usize),
    Key(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EditOp {
    AddNode { name: String, kind: String, #[serde(default)] after: Option<String> },
    DeleteNode { name: String },
    RenameNode { from: String, to: String },
    SetField { node: String, path: Vec<PathSeg>, #[serde(default)] value: Option<serde_json::Value> },
    SetDocField { path: Vec<PathSeg>, #[serde(default)] value: Option<serde_json::Value> },
    AddEdge { from: String, to: String },
    RemoveEdge { from: String, to: String, kind: String, #[serde(default)] index: Option<usize> },
    AddBranch { from: String, condition: String, to: String, #[serde(default)] index: Option<usize> },
    SetBranch { from: String, index: usize, #[serde(default)] condition: Option<String>, #[serde(default)] to: Option<String> },
    MoveBranch { from: String, index: usize, to_index: usize },
    RemoveBranch { from: String, index: usize },
    SetDefault { from: String, #[serde(default)] to: Option<String> },
}

impl TextEdit {
    pub fn apply(&self, text: &str) -> String {
        let mut s = String::with_capacity(text.len() + self.text.len());
        s.push_str(&text[..self.start]);
        s.push_str(&self.text);
        s.push_str(&text[self.end..]);
        s
    }
}

pub fn diff(old: &str, new: &str) -> TextEdit {
    let _ = new;
    TextEdit { start: 0, end: old.len(), text: new.to_string() }
}

pub fn apply(text: &str, path: &Path, agent: Option<&str>, op: &EditOp) -> Result<Applied, EditError> {
    let _ = (text, path, agent, op);
    Err(EditError::new("not implemented yet"))
}
