//! Expressions: CEL (sherma) and `{{path}}` templates (Loki).
