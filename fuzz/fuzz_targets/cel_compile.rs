//! Text -> compile as sherma CEL -> inspect the program. Compile errors are fine; panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard::expr::CelEngine;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    match CelEngine::shared().compile(src) {
        Ok(p) => {
            let _ = p.references();
            let _ = p.primary_error();
            let _ = p.is_default_form();
        }
        Err(e) => {
            // The error range must lie inside the source: the validator maps it into the file.
            assert!(
                e.range().end <= src.len(),
                "error range {:?} beyond {} bytes: {e}",
                e.range(),
                src.len()
            );
            let _ = e.to_string();
        }
    }
});
