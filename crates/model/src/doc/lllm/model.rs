//! The typed model of an LLLM config.

use super::effective::{Effective, EffectiveAgent, Origin};
use super::package::{Package, PromptHit};
use crate::doc::Sp;
use serde::Serialize;
use syntax::source::{SourceFile, Span};
use syntax::yaml::YNode;

/// Which shape of LLLM config the file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// `global` + `agent_configs` as a list of entries with `name` (what LLLM reads today).
    Current,
    /// `agent_configs` as a mapping keyed by agent name (LLLM's 2025-11 templates).
    AgentConfigsMapping,
    /// `agent_group_configs`, a mapping keyed by agent name (LLLM's agent and tactic docs).
    AgentGroupConfigs,
}

impl Shape {
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::Current => "current",
            Shape::AgentConfigsMapping => "agent_configs mapping",
            Shape::AgentGroupConfigs => "agent_group_configs",
        }
    }
}

/// One agent entry written in this file.
#[derive(Clone, Debug)]
pub struct AgentEntry {
    pub name: Sp<String>,
    /// The whole entry.
    pub span: Span,
}

/// One config of the `base` chain.
#[derive(Clone, Debug)]
pub struct Layer {
    /// The name `base` gave it (the file's own layer: its file stem).
    pub name: String,
    pub file: SourceFile,
    pub root: YNode,
    /// The package its `lllm.toml` declares, when there is one.
    pub package: Option<Package>,
}

/// What an agent's `system_prompt_path` resolved to.
#[derive(Clone, Debug)]
pub struct PromptRef {
    pub agent: String,
    /// As written (`pkg:folder/name`).
    pub path: String,
    pub hit: Option<PromptHit>,
}

impl PromptRef {
    /// Where the prompt is, in a line (`prompts/system.py:10`), or `None` when not resolved.
    pub fn location(&self) -> Option<String> {
        match &self.hit {
            Some(PromptHit::File(p)) => Some(p.display().to_string()),
            Some(PromptHit::Module(p, l)) => Some(format!("{}:{l}", p.display())),
            None => None,
        }
    }
}

#[derive(Debug)]
pub struct LllmDoc {
    pub shape: Shape,
    pub base: Option<Sp<String>>,
    /// The `global` key.
    pub global: Option<Span>,
    /// The agent entries written in this file.
    pub agents: Vec<AgentEntry>,
    /// The `base` chain, furthest base first, this file last.
    pub layers: Vec<Layer>,
    pub effective: Effective,
    /// Each agent's `system_prompt_path`, resolved.
    pub prompts: Vec<PromptRef>,
}

impl LllmDoc {
    /// The file of a layer an origin points into.
    pub fn file_of(&self, o: &Origin) -> Option<&SourceFile> {
        self.layers.iter().rev().find(|l| l.file.path().display().to_string() == o.file).map(|l| &l.file)
    }
    pub fn agent(&self, name: &str) -> Option<&EffectiveAgent> {
        self.effective.agents.iter().find(|a| a.name == name)
    }
    pub fn prompt_of(&self, agent: &str) -> Option<&PromptRef> {
        self.prompts.iter().find(|p| p.agent == agent)
    }
    /// The package of this file.
    pub fn package(&self) -> Option<&Package> {
        self.layers.last().and_then(|l| l.package.as_ref())
    }
}
