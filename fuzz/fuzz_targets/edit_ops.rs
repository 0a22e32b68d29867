//! Input `DOC \0 OPS`: DOC is a sherma file, a Loki graph or an LLLM config (the seeds are the
//! edit fixtures, the small conformance files, LLLM configs included, agents/ and tests/cases/);
//! OPS drives up to 6 edit ops on it (the first byte picks the file name and the sherma agent),
//! with node ids taken from the document (an LLLM config's `global`, agents and bases), tricky
//! YAML-ish strings or fuzzed text, then undoes them.
//!
//! The whole check is `switchyard::edit::sequence::run_bytes`, which
//! tests/integration/prop_edit.rs also runs on stable (the committed seeds and random bytes), so
//! CI proves the same logic: no panic; a refused op says why and is never the engine's own
//! "internal error" (its output check); a successful op's `edit` turns the old text into the new
//! one and is minimal (only the changed bytes), its `inverse` restores the old bytes, the new
//! text has no YAML syntax error and keeps the dialect; undoing every op in reverse order gives
//! back the original bytes exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard::edit::sequence;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = sequence::run_bytes(data) {
        panic!("{e}");
    }
});
