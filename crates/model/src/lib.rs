//! What an agent file means, without running it: the documents of each dialect ([`doc`]) and
//! the skills they name ([`skills`]), the one graph IR both dialects lower into ([`graph`]), its
//! layout for the canvas ([`layout`]) and validation ([`validate`]).
//!
//! Pure code over text and files: no async runtime, no network, no subprocess. Loading never
//! fails and never panics; every problem is a positioned [`syntax::diag::Diagnostic`].

pub mod diff;
pub mod doc;
pub mod graph;
pub mod layout;
pub mod skills;
#[doc(hidden)]
pub mod testdata;
pub mod validate;
