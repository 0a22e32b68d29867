//! sherma's CEL: compile once, evaluate many times against JSON bindings.
//!
//! Built on the `cel` 0.15 crate with sherma's custom functions (see [`functions`]) and the
//! `default(expr, fallback)` special form. Differences from upstream (cel-python inside sherma),
//! all deliberate:
//!
//! - JSON `null` stays `null` in CEL (upstream turns `None` into `false`). A `null` branch
//!   condition still counts as false.
//! - JSON integers bind as `int`, never `uint` (so `state.count + 1` works when `count` is 2).
//! - `string()` of lists/maps, `join` and `template` write compact JSON (`true`, `[1,"a"]`),
//!   never Python reprs (`True`, `ListType([...])`). `string(true)` is `"true"`.
//! - `default(A, B)` is recognised with leading/trailing whitespace around the whole
//!   expression (upstream requires the text to start with `default(`). Using `default(` anywhere
//!   else is a compile error here, where upstream fails at run time or mis-parses.
//! - Parse errors are compile-time errors. In `default(A, B)`, a parse error in `A` is not
//!   (upstream then always evaluates `B`), but it is reported by [`CelProgram::primary_error`].
//! - Older sherma files use bare state field names; [`Bindings`] can bind declared fields bare
//!   as well as under `state`. Explicitly bound names (`prompts`, `llms`, ...) win over bare
//!   fields, as in older upstream versions.
//!
//! Runtime errors carry no position in cel 0.15: they span the whole expression (or the part of
//! a `default()` form that failed), except "no such key" on a `state.X` read and undeclared
//! names, which point at the name.

mod convert;
pub mod functions;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use ::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use ::cel::common::value::Val;
use ::cel::{Context, Env, ExecutionError, ParseErrors, Program, Value as CelValue};
use serde_json::Value as Json;

use self::convert::{describe, json_to_val, map_to_val, type_name, value_to_json};
pub use self::functions::CUSTOM_FUNCTIONS;

/// Longest expression we compile (bytes).
pub const MAX_EXPRESSION_LEN: usize = 64 * 1024;
/// Deepest expression tree we accept: evaluation recurses once per level.
pub const MAX_EXPRESSION_DEPTH: usize = 200;
/// Sources longer than this are parsed on a helper thread with a large stack.
const BIG_STACK_THRESHOLD: usize = 1024;
const BIG_STACK_SIZE: usize = 256 * 1024 * 1024;

/// Identifiers that name types rather than variables.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
    "optional_type",
];

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A compile or evaluation error, positioned in the expression source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelError {
    /// User-facing message, without position.
    pub message: String,
    /// Byte offset into the expression source.
    pub offset: usize,
    /// Length in bytes of the offending text (0 at the end of the source).
    pub len: usize,
    pub hint: Option<String>,
}

impl CelError {
    /// An error at `offset..offset + len` of the expression, without a hint.
    pub fn new(message: impl Into<String>, offset: usize, len: usize) -> Self {
        CelError {
            message: message.into(),
            offset,
            len,
            hint: None,
        }
    }

    fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The byte range of the offending text.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.len
    }
}

impl fmt::Display for CelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CelError {}

// ---------------------------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------------------------

/// A value to bind: owned, or borrowed from the caller for the duration of the evaluation.
pub trait IntoBound<'a> {
    fn into_bound(self) -> Cow<'a, Json>;
}

impl<'a> IntoBound<'a> for Json {
    fn into_bound(self) -> Cow<'a, Json> {
        Cow::Owned(self)
    }
}

impl<'a> IntoBound<'a> for &'a Json {
    fn into_bound(self) -> Cow<'a, Json> {
        Cow::Borrowed(self)
    }
}

impl<'a> IntoBound<'a> for Cow<'a, Json> {
    fn into_bound(self) -> Cow<'a, Json> {
        self
    }
}

#[derive(Debug, Clone, Default)]
enum BareFields {
    #[default]
    None,
    All,
    Only(BTreeSet<String>),
}

/// The variables an expression is evaluated against.
///
/// The run engine binds `state` (the whole state object), and, where they exist, `prompts`,
/// `llms`, `skills`, `data` and `llm_response`. For older files it also makes state fields
/// visible as bare names with [`Bindings::bare_fields`] (declared fields) or
/// [`Bindings::all_fields_bare`]. Values may be borrowed, so binding a large state is free;
/// only what an expression reads is converted to CEL.
#[derive(Debug, Clone, Default)]
pub struct Bindings<'a> {
    vars: BTreeMap<String, Cow<'a, Json>>,
    bare: BareFields,
}

impl<'a> Bindings<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bindings with `state` set.
    pub fn with_state(state: impl IntoBound<'a>) -> Self {
        let mut b = Self::new();
        b.set_state(state);
        b
    }

    /// Binds `state` (should be a JSON object).
    pub fn set_state(&mut self, state: impl IntoBound<'a>) -> &mut Self {
        self.set("state", state)
    }

    /// Binds `name` (`prompts`, `llms`, `skills`, `data`, `llm_response`, ...).
    pub fn set(&mut self, name: impl Into<String>, value: impl IntoBound<'a>) -> &mut Self {
        self.vars.insert(name.into(), value.into_bound());
        self
    }

    /// Builder form of [`Bindings::set`].
    pub fn with(mut self, name: impl Into<String>, value: impl IntoBound<'a>) -> Self {
        self.set(name, value);
        self
    }

    /// Also binds these state fields as bare names (older sherma files write `count` rather
    /// than `state.count`). A field absent from the state stays unbound.
    pub fn bare_fields<I, S>(&mut self, names: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set = names.into_iter().map(Into::into).collect();
        self.bare = BareFields::Only(set);
        self
    }

    /// Binds every field of the state as a bare name too (what older upstream versions did).
    pub fn all_fields_bare(&mut self) -> &mut Self {
        self.bare = BareFields::All;
        self
    }

    /// The bound `state`, if any.
    pub fn state(&self) -> Option<&Json> {
        self.vars.get("state").map(|v| v.as_ref())
    }

    /// What `name` resolves to: an explicitly bound variable, else a bare state field.
    pub fn get(&self, name: &str) -> Option<&Json> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.as_ref());
        }
        let bare = match &self.bare {
            BareFields::None => false,
            BareFields::All => true,
            BareFields::Only(set) => set.contains(name),
        };
        if bare {
            self.state()?.as_object()?.get(name)
        } else {
            None
        }
    }

    /// Names bound explicitly (not bare fields), for messages.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }
}

// ---------------------------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------------------------

/// What an expression refers to, for the validator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CelRefs {
    /// Free variables (`state`, `prompts`, bare field names, ...). Comprehension variables and
    /// type names (`int`, `string`, ...) are not included.
    pub variables: BTreeSet<String>,
    /// Byte offset of the first occurrence of each variable in [`CelRefs::variables`].
    pub variable_offsets: BTreeMap<String, usize>,
    /// Functions called (operators and macros excluded), e.g. `size`, `json`, `optional.of`.
    pub functions: BTreeSet<String>,
    /// State fields read as `state.X`, `state["X"]`, `state['X']`, `has(state.X)`,
    /// `state.?X`: the name and the byte offset of the name in the source, in source order.
    pub state_fields: Vec<(String, usize)>,
    /// `state` is also used as a whole (`size(state)`, `"x" in state`, `state[k]`, ...), so
    /// any field may be read.
    pub whole_state: bool,
}

impl CelRefs {
    fn union(&mut self, other: &CelRefs) {
        self.variables.extend(other.variables.iter().cloned());
        for (name, off) in &other.variable_offsets {
            let e = self.variable_offsets.entry(name.clone()).or_insert(*off);
            *e = (*e).min(*off);
        }
        self.functions.extend(other.functions.iter().cloned());
        self.state_fields.extend(other.state_fields.iter().cloned());
        self.state_fields
            .sort_by_key(|(name, off)| (*off, name.clone()));
        self.state_fields.dedup();
        self.whole_state |= other.whole_state;
    }
}

// ---------------------------------------------------------------------------------------------
// Programs
// ---------------------------------------------------------------------------------------------

/// How an expression part uses `state`: decides how much of it is converted per evaluation.
#[derive(Debug, Clone)]
enum StateAccess {
    Unused,
    Fields(Vec<String>),
    Whole,
}

/// One compiled CEL expression: the whole source, or one side of `default(A, B)`.
struct Part {
    program: Program,
    /// Byte range of this part in the full source.
    range: Range<usize>,
    /// Free variables to bind.
    vars: Vec<String>,
    state: StateAccess,
    refs: CelRefs,
    /// Free identifiers and the byte offset of their first occurrence.
    idents: BTreeMap<String, usize>,
    /// Called functions and the byte range of the first call's name.
    calls: BTreeMap<String, (usize, usize)>,
}

enum Form {
    Plain(Box<Part>),
    Default {
        primary: Result<Box<Part>, CelError>,
        fallback: Box<Part>,
    },
}

struct ProgramInner {
    source: String,
    form: Form,
}

/// A compiled expression. Cheap to clone; shareable across threads.
#[derive(Clone)]
pub struct CelProgram {
    inner: Arc<ProgramInner>,
}

impl fmt::Debug for CelProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CelProgram")
            .field("source", &self.inner.source)
            .field("default_form", &self.is_default_form())
            .finish()
    }
}

impl CelProgram {
    /// The expression text as given to [`CelEngine::compile`].
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// Whether this is the `default(A, B)` special form.
    pub fn is_default_form(&self) -> bool {
        matches!(self.inner.form, Form::Default { .. })
    }

    /// For `default(A, B)` whose `A` does not parse: that parse error. Such a program always
    /// evaluates `B` (as upstream does); the editor should still flag `A`.
    pub fn primary_error(&self) -> Option<&CelError> {
        match &self.inner.form {
            Form::Default {
                primary: Err(e), ..
            } => Some(e),
            _ => None,
        }
    }

    /// Variables, functions and state fields the expression refers to (both parts of a
    /// `default()` form).
    pub fn references(&self) -> CelRefs {
        match &self.inner.form {
            Form::Plain(p) => p.refs.clone(),
            Form::Default { primary, fallback } => {
                let mut refs = fallback.refs.clone();
                if let Ok(p) = primary {
                    refs.union(&p.refs);
                }
                refs
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Engine
// ---------------------------------------------------------------------------------------------

/// The CEL environment with sherma's functions. Build once (or use [`CelEngine::shared`]).
#[derive(Clone)]
pub struct CelEngine {
    env: Arc<Env>,
}

impl fmt::Debug for CelEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CelEngine")
    }
}

impl Default for CelEngine {
    fn default() -> Self {
        Self::new()
    }
}

impl CelEngine {
    pub fn new() -> Self {
        let mut env = Env::stdlib();
        functions::register(&mut env).expect("sherma functions declare without conflicts");
        CelEngine { env: Arc::new(env) }
    }

    /// A process-wide engine.
    pub fn shared() -> &'static CelEngine {
        static ENGINE: OnceLock<CelEngine> = OnceLock::new();
        ENGINE.get_or_init(CelEngine::new)
    }

    /// Compiles an expression, recognising the `default(A, B)` form.
    pub fn compile(&self, src: &str) -> Result<CelProgram, CelError> {
        if src.len() > MAX_EXPRESSION_LEN {
            return Err(CelError::new(
                format!(
                    "expression is too long ({} bytes, at most {MAX_EXPRESSION_LEN})",
                    src.len()
                ),
                0,
                src.len(),
            ));
        }
        let form = match split_default(src)? {
            Some((a, b)) => {
                let primary = self.compile_part(src, a).map(Box::new);
                let fallback = Box::new(self.compile_part(src, b)?);
                // A nested `default(` inside A is a mistake, not a reason to fall back.
                if let Err(e) = &primary
                    && e.message.starts_with("default(...)")
                {
                    return Err(e.clone());
                }
                Form::Default { primary, fallback }
            }
            None => Form::Plain(Box::new(self.compile_part(src, 0..src.len())?)),
        };
        Ok(CelProgram {
            inner: Arc::new(ProgramInner {
                source: src.to_owned(),
                form,
            }),
        })
    }

    /// Evaluates a program; the result as JSON.
    pub fn eval(&self, prog: &CelProgram, vars: &Bindings<'_>) -> Result<Json, CelError> {
        let (value, part) = self.eval_value(prog, vars)?;
        value_to_json(&value).map_err(|m| whole(part, m))
    }

    /// Evaluates a branch condition: `true`/`false`, and `null` counts as false. Any other
    /// result is an error "condition returned <type>, expected bool".
    pub fn eval_bool(&self, prog: &CelProgram, vars: &Bindings<'_>) -> Result<bool, CelError> {
        let (value, part) = self.eval_value(prog, vars)?;
        match value {
            CelValue::Bool(b) => Ok(b),
            CelValue::Null => Ok(false),
            other => Err(whole(
                part,
                format!("condition returned {}, expected bool", type_name(&other)),
            )),
        }
    }

    fn eval_value<'p>(
        &self,
        prog: &'p CelProgram,
        vars: &Bindings<'_>,
    ) -> Result<(CelValue, &'p Part), CelError> {
        match &prog.inner.form {
            Form::Plain(part) => self.run(part, vars).map(|v| (v, &**part)),
            Form::Default { primary, fallback } => {
                if let Ok(part) = primary
                    && let Ok(v) = self.run(part, vars)
                {
                    return Ok((v, &**part));
                }
                self.run(fallback, vars).map(|v| (v, &**fallback))
            }
        }
    }

    fn run(&self, part: &Part, b: &Bindings<'_>) -> Result<CelValue, CelError> {
        let mut ctx = Context::with_env(Arc::clone(&self.env));
        for name in &part.vars {
            let Some(json) = b.get(name) else { continue };
            let val: Box<dyn Val + '_> = match (&part.state, json) {
                (StateAccess::Fields(fields), Json::Object(obj)) if name == "state" => Box::new(
                    map_to_val(fields.iter().filter_map(|f| obj.get_key_value(f.as_str()))),
                ),
                _ => json_to_val(json),
            };
            ctx.add_variable_as_val(name.as_str(), val);
        }
        match catch_unwind(AssertUnwindSafe(|| part.program.execute(&ctx))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(exec_error(&e, part, b)),
            Err(_) => Err(whole(part, "internal error in the CEL interpreter")),
        }
    }

    fn compile_part(&self, full: &str, range: Range<usize>) -> Result<Part, CelError> {
        let text = &full[range.clone()];
        let parsed = if text.len() > BIG_STACK_THRESHOLD {
            // Long operator chains recurse deeply in the parser: give it room.
            let env = &self.env;
            std::thread::scope(|s| {
                std::thread::Builder::new()
                    .name("cel-compile".into())
                    .stack_size(BIG_STACK_SIZE)
                    .spawn_scoped(s, || catch_unwind(AssertUnwindSafe(|| env.compile(text))))
                    .ok()
                    .and_then(|h| h.join().ok())
            })
        } else {
            Some(catch_unwind(AssertUnwindSafe(|| self.env.compile(text))))
        };
        let program = match parsed {
            Some(Ok(Ok(p))) => p,
            Some(Ok(Err(errors))) => return Err(parse_error(text, range.start, &errors)),
            _ => {
                return Err(CelError::new(
                    "internal error in the CEL parser",
                    range.start,
                    text.len(),
                ));
            }
        };
        if ast_depth(program.expression()) > MAX_EXPRESSION_DEPTH {
            return Err(CelError::new(
                format!(
                    "expression is nested too deeply (more than {MAX_EXPRESSION_DEPTH} levels)"
                ),
                range.start,
                text.len(),
            )
            .with_hint("split it into several steps"));
        }
        let mut walker = Walker {
            src: text,
            base: range.start,
            info: program.source_info(),
            scopes: Vec::new(),
            refs: CelRefs::default(),
            idents: BTreeMap::new(),
            calls: BTreeMap::new(),
            default_calls: Vec::new(),
            state_fields: Vec::new(),
        };
        walker.walk(program.expression());
        if let Some(&(off, len)) = walker.default_calls.first() {
            return Err(CelError::new("default(...) must be the whole expression", off, len)
                .with_hint("default(expr, fallback) is a special form: write the whole expression as default(<expr>, <fallback>)"));
        }
        let Walker {
            mut refs,
            idents,
            calls,
            state_fields,
            ..
        } = walker;
        refs.state_fields
            .sort_by_key(|(name, off)| (*off, name.clone()));
        refs.state_fields.dedup();
        refs.variable_offsets = idents.clone();
        let state = if refs.whole_state {
            StateAccess::Whole
        } else if refs.variables.contains("state") {
            let fields: BTreeSet<String> = state_fields.into_iter().collect();
            StateAccess::Fields(fields.into_iter().collect())
        } else {
            StateAccess::Unused
        };
        Ok(Part {
            program,
            range,
            vars: idents.keys().cloned().collect(),
            state,
            refs,
            idents,
            calls,
        })
    }
}

/// Byte offset of the first occurrence of `word` in `src` not inside a longer identifier.
fn word_offset(src: &str, word: &str) -> Option<usize> {
    if word.is_empty() {
        return None;
    }
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    src.match_indices(word).map(|(i, _)| i).find(|&i| {
        !src[..i].chars().next_back().is_some_and(is_ident) && !src[i + word.len()..].chars().next().is_some_and(is_ident)
    })
}

fn whole(part: &Part, message: impl Into<String>) -> CelError {
    CelError::new(message, part.range.start, part.range.len())
}

// ---------------------------------------------------------------------------------------------
// default(A, B)
// ---------------------------------------------------------------------------------------------

/// Recognises `default(A, B)` as the whole (trimmed) expression. Returns the byte ranges of `A`
/// and `B`. `Ok(None)` when the expression is not of that form (including an unclosed
/// `default(`, left for the CEL parser to report).
type DefaultParts = Option<(Range<usize>, Range<usize>)>;

fn split_default(src: &str) -> Result<DefaultParts, CelError> {
    let start = src.len() - src.trim_start().len();
    let rest = &src[start..];
    let Some(after_kw) = rest.strip_prefix("default") else {
        return Ok(None);
    };
    let ws = after_kw.len() - after_kw.trim_start().len();
    if !after_kw[ws..].starts_with('(') {
        return Ok(None);
    }
    let open = start + "default".len() + ws;
    let bytes = src.as_bytes();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut commas = Vec::new();
    let mut close = None;
    let mut i = open;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
        } else {
            match c {
                b'"' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(i),
                _ => {}
            }
        }
        i += 1;
    }
    let Some(close) = close else { return Ok(None) };
    if bytes[close] != b')' {
        return Ok(None);
    }
    let trailing = &src[close + 1..];
    if !trailing.trim().is_empty() {
        let t = close + 1 + (trailing.len() - trailing.trim_start().len());
        let end = src.trim_end().len();
        return Err(
            CelError::new("default(...) must be the whole expression", t, end - t).with_hint(
                "move the rest inside: default(<expr>, <fallback>) must be the entire expression",
            ),
        );
    }
    match commas.as_slice() {
        [] => Err(CelError::new(
            "default() needs two arguments: default(expr, fallback)",
            start,
            close + 1 - start,
        )),
        [comma] => Ok(Some((open + 1..*comma, comma + 1..close))),
        [_, second, ..] => Err(CelError::new(
            "default() takes exactly two arguments: default(expr, fallback)",
            *second,
            1,
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// AST walking
// ---------------------------------------------------------------------------------------------

fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => Vec::new(),
        Expr::Call(c) => c
            .target
            .as_deref()
            .into_iter()
            .chain(c.args.iter())
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => m
            .entries
            .iter()
            .flat_map(|e| match &e.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(sf) => vec![&sf.value],
            })
            .collect(),
        Expr::Select(s) => vec![&s.operand],
        Expr::Struct(s) => s
            .entries
            .iter()
            .flat_map(|e| match &e.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(sf) => vec![&sf.value],
            })
            .collect(),
    }
}

/// Depth of the tree, computed without recursion.
fn ast_depth(root: &IdedExpr) -> usize {
    let mut max = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        for c in children(e) {
            stack.push((c, d + 1));
        }
    }
    max
}

struct Walker<'s> {
    src: &'s str,
    base: usize,
    info: &'s SourceInfo,
    scopes: Vec<String>,
    refs: CelRefs,
    idents: BTreeMap<String, usize>,
    calls: BTreeMap<String, (usize, usize)>,
    default_calls: Vec<(usize, usize)>,
    state_fields: Vec<String>,
}

impl Walker<'_> {
    fn is_free(&self, name: &str) -> bool {
        !self.scopes.iter().any(|s| s == name)
    }

    fn free_ident<'e>(&self, e: &'e IdedExpr) -> Option<&'e str> {
        match &e.expr {
            Expr::Ident(name) if self.is_free(name) => Some(name),
            _ => None,
        }
    }

    /// Byte range (relative to the part) of a node.
    fn node_range(&self, id: u64) -> Option<(usize, usize)> {
        let (start, stop) = self.info.offset_for(id)?;
        let (start, stop) = (start as usize, stop as usize);
        (start <= stop && stop < self.src.len() && self.src.is_char_boundary(start))
            .then_some((start, stop))
    }

    fn ident(&mut self, name: &str, id: u64) {
        if TYPE_NAMES.contains(&name) {
            return;
        }
        self.refs.variables.insert(name.to_owned());
        // A node a macro made (`x.optMap(y, e)` turns into a test and a call on `x`) carries
        // the macro call's position, where the name is not written: fall back to the name's
        // first occurrence as a word, else the start of the part (found by `cel_eval`).
        let bare = name.strip_prefix('.').unwrap_or(name);
        let off = match self.node_range(id) {
            Some((s, _)) if self.src[s..].trim_start_matches('.').starts_with(bare) => s,
            _ => word_offset(self.src, bare).unwrap_or(0),
        };
        self.idents.entry(name.to_owned()).or_insert(off + self.base);
    }

    /// Records `state.<field>` with `operand` being the `state` identifier node.
    fn state_field(&mut self, operand: &IdedExpr, field: &str, literal: Option<&IdedExpr>) {
        self.ident("state", operand.id);
        let off = self.field_offset(operand, field, literal);
        self.refs
            .state_fields
            .push((field.to_owned(), off + self.base));
        self.state_fields.push(field.to_owned());
    }

    /// Where the field name is written: after `state` `.`/`.?`, or inside the string literal.
    fn field_offset(&self, operand: &IdedExpr, field: &str, literal: Option<&IdedExpr>) -> usize {
        let src = self.src;
        if let Some(lit) = literal
            && let Some((s, e)) = self.node_range(lit.id)
            && let Some(pos) = src[s..=e.min(src.len() - 1)]
                .char_indices()
                .find(|&(i, _)| src[s + i..].starts_with(field) && !field.is_empty())
                .map(|(i, _)| s + i)
        {
            return pos;
        }
        let Some((s, e)) = self.node_range(operand.id) else {
            return 0;
        };
        let mut i = e + 1;
        let skip_ws = |mut i: usize| {
            while i < src.len() && src.as_bytes()[i].is_ascii_whitespace() {
                i += 1;
            }
            i
        };
        i = skip_ws(i);
        if src[i.min(src.len())..].starts_with('.') {
            i = skip_ws(i + 1);
            if src[i..].starts_with('?') {
                i = skip_ws(i + 1);
            }
            if src[i..].starts_with('`') {
                i += 1;
            }
            if src[i..].starts_with(field) {
                return i;
            }
        }
        src[e + 1..].find(field).map_or(s, |p| e + 1 + p)
    }

    fn walk(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => {}
            Expr::Ident(name) => {
                if self.is_free(name) {
                    if name == "state" {
                        self.refs.whole_state = true;
                    }
                    self.ident(name, e.id);
                }
            }
            Expr::Select(sel) => {
                if self.free_ident(&sel.operand) == Some("state") {
                    self.state_field(&sel.operand, &sel.field, None);
                } else {
                    self.walk(&sel.operand);
                }
            }
            Expr::Call(call) => {
                let name = call.func_name.as_str();
                if matches!(name, "_[_]" | "_[?_]" | "_?._")
                    && call.target.is_none()
                    && call.args.len() == 2
                    && self.free_ident(&call.args[0]) == Some("state")
                    && let Expr::Literal(LiteralValue::String(field)) = &call.args[1].expr
                {
                    let literal = (name != "_?._").then_some(&call.args[1]);
                    self.state_field(&call.args[0], field.inner(), literal);
                    return;
                }
                if let Some(target) = &call.target
                    && self.free_ident(target) == Some("optional")
                {
                    self.refs.functions.insert(format!("optional.{name}"));
                    for a in &call.args {
                        self.walk(a);
                    }
                    return;
                }
                if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                    self.refs.functions.insert(name.to_owned());
                    let range = self.call_name_range(e, name);
                    self.calls.entry(name.to_owned()).or_insert(range);
                    if name == "default" && call.target.is_none() {
                        self.default_calls.push(range);
                    }
                }
                if let Some(t) = &call.target {
                    self.walk(t);
                }
                for a in &call.args {
                    self.walk(a);
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range);
                self.walk(&c.accu_init);
                let before = self.scopes.len();
                self.scopes.push(c.iter_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push(v2.clone());
                }
                self.scopes.push(c.accu_var.clone());
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.walk(&c.result);
                self.scopes.truncate(before);
            }
            Expr::List(_) | Expr::Map(_) | Expr::Struct(_) => {
                for c in children(e) {
                    self.walk(c);
                }
            }
        }
    }

    /// Absolute (offset, len) of a call's name, up to its `(` for `default`. The call node
    /// sits at its `(`; the name ends right before it.
    fn call_name_range(&self, e: &IdedExpr, name: &str) -> (usize, usize) {
        let (off, len) = match self.node_range(e.id) {
            Some((s, _)) => {
                let head = self.src[..s].trim_end();
                if head.ends_with(name) {
                    let start = head.len() - name.len();
                    let end = if name == "default" { s + 1 } else { head.len() };
                    (start, end - start)
                } else {
                    (s, 1)
                }
            }
            None => (0, self.src.len()),
        };
        (off + self.base, len)
    }
}

// ---------------------------------------------------------------------------------------------
// Error messages
// ---------------------------------------------------------------------------------------------

/// Byte offset in `text` of a 1-based (line, column) where the column counts characters.
fn line_col_to_byte(text: &str, line: isize, col: isize) -> usize {
    let line = line.max(1) as usize;
    let col = col.max(1) as usize;
    let mut start = 0;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(nl) => start += nl + 1,
            None => return text.len(),
        }
    }
    let line_text = &text[start..];
    let line_end = line_text.find('\n').unwrap_or(line_text.len());
    match line_text[..line_end].char_indices().nth(col - 1) {
        Some((i, _)) => start + i,
        None => start + line_end,
    }
}

/// Messages about the parser's own state, emitted next to the real syntax error.
fn is_internal(msg: &str) -> bool {
    msg.starts_with("Incomplete") || msg.starts_with("No `") || msg.starts_with("Unknown `")
}

fn parse_error(text: &str, base: usize, errors: &ParseErrors) -> CelError {
    let chosen = errors
        .errors
        .iter()
        .find(|e| !is_internal(&e.msg))
        .or(errors.errors.first());
    let Some(err) = chosen else {
        return CelError::new("invalid expression", base, text.len());
    };
    if is_internal(&err.msg) {
        return CelError::new("incomplete expression", base + text.len(), 0);
    }
    if err.msg.contains("Recursion limit") {
        return CelError::new("expression is nested too deeply", base, text.len())
            .with_hint("split it into several steps");
    }
    let offset = line_col_to_byte(text, err.pos.0, err.pos.1);
    let (message, hint, token) = clean_parse_message(&err.msg, text, offset);
    let len = match token {
        Some(t) if text[offset..].starts_with(&t) => t.len(),
        _ => text[offset..].chars().next().map_or(0, char::len_utf8),
    };
    let mut e = CelError::new(message, base + offset, len);
    e.hint = hint;
    e
}

fn between<'m>(msg: &'m str, start: &str, end: &str) -> Option<&'m str> {
    let from = msg.find(start)? + start.len();
    let to = msg[from..].find(end)? + from;
    Some(&msg[from..to])
}

/// Turns ANTLR's messages into user-facing text. Returns (message, hint, offending token).
fn clean_parse_message(
    msg: &str,
    text: &str,
    offset: usize,
) -> (String, Option<String>, Option<String>) {
    let msg = msg.strip_prefix("Syntax error: ").unwrap_or(msg);
    let at_end = offset >= text.len();
    let expected = msg.split_once(" expecting ").map(|(_, set)| set);
    let eof_hint = || {
        unclosed_bracket(text)
            .map(|c| format!("'{c}' is never closed"))
            .or_else(|| expected.and_then(expected_hint))
    };
    if let Some(tok) = msg.strip_prefix("token recognition error at: ") {
        let tok = tok.strip_prefix('\'').unwrap_or(tok);
        let tok = tok.strip_suffix('\'').unwrap_or(tok);
        let body = tok.trim_start_matches(['r', 'R', 'b', 'B']);
        if body.starts_with(['"', '\'']) {
            if body.contains('\\') {
                return (
                    "invalid escape sequence in string literal".into(),
                    Some("valid escapes include \\n \\t \\\\ \\' \\\" \\u0041; a raw string r'...' takes backslashes literally".into()),
                    Some(tok.to_owned()),
                );
            }
            return (
                "unterminated string literal".into(),
                Some("close the string with a matching quote".into()),
                Some(tok.to_owned()),
            );
        }
        let first = tok.chars().next();
        let hint = match first {
            Some('=') => Some("compare with ==".to_owned()),
            Some(c) if c.is_alphabetic() => Some(
                "names may only contain ASCII letters, digits and '_'; use state[\"…\"] for other keys"
                    .to_owned(),
            ),
            _ => None,
        };
        let shown: String = first.map(String::from).unwrap_or_default();
        return (
            format!("unexpected character {}", quoted(&shown)),
            hint,
            Some(shown),
        );
    }
    if msg.starts_with("invalid int literal") || msg.starts_with("invalid uint literal") {
        return (
            msg.to_owned(),
            Some("integers must fit in 64 bits; write a double (1e20) for larger numbers".into()),
            Some(literal_at(text, offset)),
        );
    }
    if msg.starts_with("invalid ") && msg.contains("literal") {
        let head = msg.split(':').next().unwrap_or(msg);
        return (head.to_owned(), None, Some(literal_at(text, offset)));
    }
    for prefix in ["mismatched input '", "extraneous input '"] {
        if msg.starts_with(prefix)
            && let Some(tok) = between(msg, prefix, "' expecting")
        {
            if tok == "<EOF>" || at_end {
                return ("unexpected end of expression".into(), eof_hint(), None);
            }
            return (
                format!("unexpected {}", quoted(tok)),
                expected.and_then(expected_hint),
                Some(tok.to_owned()),
            );
        }
    }
    if let Some(rest) = msg.strip_prefix("missing ")
        && let Some((what, at)) = rest.split_once(" at ")
    {
        let at = at.trim_matches('\'');
        if at == "<EOF>" || at_end {
            return (
                format!("missing {what} at the end of the expression"),
                None,
                None,
            );
        }
        return (
            format!("missing {what} before {}", quoted(at)),
            None,
            Some(at.to_owned()),
        );
    }
    if let Some(near) = msg.strip_prefix("no viable alternative at input ") {
        let near = near.trim_matches('\'');
        if at_end {
            return ("unexpected end of expression".into(), eof_hint(), None);
        }
        return (format!("invalid syntax near {}", quoted(near)), None, None);
    }
    if msg.contains("has() macro") {
        return (
            msg.to_owned(),
            Some("has() takes a field selection, e.g. has(state.x)".into()),
            None,
        );
    }
    (msg.to_owned(), None, None)
}

/// `'x'`, or `` `'x'` `` when the text itself has a single quote.
fn quoted(tok: &str) -> String {
    if tok.contains('\'') {
        format!("`{tok}`")
    } else {
        format!("'{tok}'")
    }
}

/// The literal-looking token starting at `offset`.
fn literal_at(text: &str, offset: usize) -> String {
    text[offset..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
        .collect()
}

fn expected_hint(set: &str) -> Option<String> {
    if set.contains("IDENTIFIER") {
        Some("a value is expected here: a name, a literal, '(', '[' or '{'".into())
    } else if set.contains("':'") {
        Some("a conditional needs both branches: cond ? a : b".into())
    } else if set.trim() == "')'" || set.trim() == "']'" || set.trim() == "'}'" {
        Some(format!("expected {}", set.trim()))
    } else {
        None
    }
}

/// The innermost bracket left open at the end of `text` (quotes skipped).
fn unclosed_bracket(text: &str) -> Option<char> {
    let mut stack = Vec::new();
    let mut quote = None;
    let mut escaped = false;
    for c in text.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => stack.push(c),
            ')' | ']' | '}' => {
                stack.pop();
            }
            _ => {}
        }
    }
    stack.pop()
}

fn op_symbol(name: &str) -> String {
    match name {
        "add" => "+".into(),
        "sub" => "-".into(),
        "mul" => "*".into(),
        "div" => "/".into(),
        "rem" => "%".into(),
        "negate" => "-".into(),
        "_[_]" => "[]".into(),
        "_?_:_" => "?:".into(),
        other => other.trim_matches(|c| c == '_' || c == '@').to_owned(),
    }
}

fn mixes_numbers(types: &[&str]) -> bool {
    let has = |t: &str| types.contains(&t);
    (has("int") && has("double")) || (has("uint") && (has("int") || has("double")))
}

const NUMBER_HINT: &str = "CEL does not mix int, uint and double: write 2.0 for a double, or convert with double(x) / int(x)";

fn exec_error(e: &ExecutionError, part: &Part, b: &Bindings<'_>) -> CelError {
    let mut err = whole(part, String::new());
    let tn = type_name;
    let message = match e {
        ExecutionError::NoSuchKey(key) => {
            let key = key.as_str();
            if let Some((_, off)) = part.refs.state_fields.iter().find(|(f, _)| f == key) {
                err.offset = *off;
                err.len = key.len();
                err.hint = Some(format!(
                    "use has(state.{key}) or default(state.{key}, <fallback>)"
                ));
            } else {
                err.hint = Some("use has(x.field) or default(...) when a key may be absent".into());
            }
            format!("no such key: {key}")
        }
        ExecutionError::UndeclaredReference(name) => {
            let name = name.as_str();
            if let Some(off) = part.idents.get(name) {
                err.offset = *off;
                // a root-scope name `.x` is positioned at its `x`, after the dot
                err.len = name.strip_prefix('.').unwrap_or(name).len();
            }
            if let Some(&(off, len)) = part.calls.get(name)
                && !part.refs.variables.contains(name)
            {
                err.offset = off;
                err.len = len;
                err.hint = Some(format!("custom functions: {}", CUSTOM_FUNCTIONS.join(", ")));
                format!("unknown function '{name}'")
            } else {
                let in_state = b
                    .state()
                    .and_then(Json::as_object)
                    .is_some_and(|o| o.contains_key(name));
                err.hint = Some(if in_state {
                    format!("state fields are read as state.{name}")
                } else {
                    let names: Vec<&str> = b.names().collect();
                    if names.is_empty() {
                        "no variables are bound".into()
                    } else {
                        format!("bound variables: {}", names.join(", "))
                    }
                });
                format!("undeclared reference to '{name}'")
            }
        }
        ExecutionError::NoSuchOverload(o) => {
            let types: Vec<&str> = o.argument_types().iter().map(String::as_str).collect();
            if mixes_numbers(&types) {
                err.hint = Some(NUMBER_HINT.into());
            }
            let f = op_symbol(o.function());
            if o.is_member_function() && !types.is_empty() {
                format!(
                    "no matching overload for {}.{f}({})",
                    types[0],
                    types[1..].join(", ")
                )
            } else {
                format!(
                    "no matching overload for '{f}' applied to ({})",
                    types.join(", ")
                )
            }
        }
        ExecutionError::UnsupportedBinaryOperator(op, a, bv) => {
            let types = [tn(a), tn(bv)];
            if mixes_numbers(&types) {
                err.hint = Some(NUMBER_HINT.into());
            } else if types.contains(&"string") {
                err.hint = Some("convert with string(x) before concatenating".into());
            }
            format!(
                "cannot apply '{}' to {} and {}",
                op_symbol(op),
                types[0],
                types[1]
            )
        }
        ExecutionError::ValuesNotComparable(a, bv) => {
            let types = [tn(a), tn(bv)];
            if mixes_numbers(&types) {
                err.hint = Some(NUMBER_HINT.into());
            }
            format!("cannot compare {} with {}", types[0], types[1])
        }
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulo by zero".into(),
        ExecutionError::Overflow(op, a, bv) => format!(
            "integer overflow in {} {} {}",
            describe(a),
            op_symbol(op),
            describe(bv)
        ),
        ExecutionError::IndexOutOfBounds(i) => format!("index {} out of range", describe(i)),
        ExecutionError::UnsupportedIndex(idx, target) => {
            if tn(target) == "list" {
                err.hint = Some("lists are indexed by int".into());
            }
            format!("cannot index a {} with a {}", tn(target), tn(idx))
        }
        ExecutionError::UnsupportedKeyType(v) => format!("a {} cannot be a map key", tn(v)),
        ExecutionError::DuplicateKey(v) => format!("duplicate map key {}", describe(v)),
        ExecutionError::UnexpectedType { got, want } => format!("expected {want}, got {got}"),
        ExecutionError::InvalidArgumentCount { expected, actual } => {
            format!("wrong number of arguments: expected {expected}, got {actual}")
        }
        ExecutionError::MissingArgumentOrTarget => "missing argument or receiver".into(),
        ExecutionError::UnsupportedTargetType { target } => {
            format!("unsupported receiver of type {}", tn(target))
        }
        ExecutionError::NotSupportedAsMethod { method, target } => {
            format!("{method}() cannot be called on a {}", tn(target))
        }
        ExecutionError::FunctionError { function, message } => format!("{function}(): {message}"),
        ExecutionError::InternalError(m) => format!("internal error: {m}"),
        other => other.to_string(),
    };
    // Every position above comes from the parsed expression; one that does not lie inside the
    // part (a bug, not the user's) points at the whole part rather than past it.
    if err.offset < part.range.start || err.offset.saturating_add(err.len) > part.range.end {
        (err.offset, err.len) = (part.range.start, part.range.len());
    }
    err.message = message;
    err
}

#[cfg(test)]
mod tests;
