//! The editor behind the studio: edit ops that patch a file's text and give back their exact
//! inverse ([`edit`]), and one open document with its undo history, atomic saves, conflict and
//! recovery handling and the view the UI draws ([`studio`]).
//!
//! Every document change is a text edit computed here; bytes outside the edited region are
//! never touched. No async runtime, no network, no subprocess.

pub mod edit;
pub mod studio;
