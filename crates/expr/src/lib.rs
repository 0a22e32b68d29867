//! Expressions: CEL (sherma) and `{{path}}` templates (Loki). Imports nothing of Switchyard's
//! own: an expression error carries offsets inside its text, and the caller maps them into the
//! file.

pub mod cel;
pub mod template;

pub use self::cel::{
    Bindings, CUSTOM_FUNCTIONS, CelEngine, CelError, CelProgram, CelRefs, IntoBound,
    MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LEN,
};
pub use self::template::{
    CompareOp, InputValidation, Severity, Template, TemplateError, TemplateIssue, TemplateRef,
    check_input_validation, input_validation_error, lint, lookup, parse, render_lenient,
    render_raw, render_strict, root_keys,
};
