//! Running Loki's subprocess tools: the agent's `tools.sh` / `tools.ts` / `tools.js` and the
//! graph's `global_tools` files. Their declarations are read by `model::doc::loki::tools` (one
//! parser for the validator and the interpreter), re-exported here.
//!
//! **Calls.** A call is a real subprocess in the agent directory, in its own process group
//! (killed on timeout or stop, children included: `script::run_supervised`), with `LLM_OUTPUT`
//! naming a fresh temp file:
//!
//! * the environment: the run's scrubbed one (`connect::childenv`: the base set, the variables
//!   the agent file references — `# @env` declarations included — and the user's opt-in), then
//!   the `LLM_*` variables of the call;
//! * bash: `bash -c <shim> <file> [<function>] --<option> <value>…` — the argc command line
//!   llm-functions builds (keys `_` → `-`, arrays repeat the option, `true` flags appear bare).
//!   No `argc` binary is needed: the shim defines an `argc` function whose `--argc-eval`
//!   prints the parsed result (`argc_<name>` variables, arrays for `*`/`+` options, `1` for
//!   flags, defaults, `@env` defaults) followed by the function call, so a file ending with
//!   `eval "$(argc --argc-eval "$0" "$@")"` works unchanged; a file without that line (Loki's
//!   own tools, which Loki pre-builds with argc) is sourced and the function then called.
//!   Arguments are checked first as argc would (required, enum, INT/NUM, unknown names);
//! * TypeScript / JavaScript: a small ES-module runner, run by the runtime script nodes use
//!   for `.ts` (`script::ts_runtime`: `deno run -A`, `bun` or `npx --yes tsx`; `.js` written
//!   as CommonJS prefers `node`), imports the file and calls the function with the arguments
//!   spread by parameter name (or as one object), then writes its return value to
//!   `LLM_OUTPUT` (strings as they are, other values as JSON).
//!
//! The result is the content of `LLM_OUTPUT` — stdout when the tool left it empty, `"DONE"` when
//! both are — parsed as JSON when it is JSON, else the text. A non-zero exit is an error quoting
//! the end of stderr.

use crate::script::{
    OUTPUT_LIMIT, STDERR_TAIL_LINES, TempFile, Unfinished, on_path, run_supervised, tail_lines,
    ts_runtime,
};
use connect::childenv::ChildEnv;
use serde_json::{Map, Value};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Files of agent tools run as subprocesses, in lookup order (`tools.py` runs in the Python
pub use model::doc::loki::tools::*;


/// How long a tool may run when the run has no deadline (`settings.timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Argument lists longer than this (bytes) are not put on a bash tool's command line (the
/// kernel refuses long ones); the tool still gets every value through its `argc_*` variables.
const ARGV_LIMIT: usize = 96 * 1024;

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// What a call produced: the result (or error) and, for the run log, what the tool printed that
/// is not its result (stderr; stdout when the result came through `LLM_OUTPUT`).
pub struct CallOutcome {
    pub result: Result<Value, String>,
    pub log: Option<String>,
}

/// Where a call runs.
pub struct CallEnv<'a> {
    pub agent_dir: &'a Path,
    pub timeout: Duration,
    pub stop: Option<&'a AtomicBool>,
}

/// Run `decl` with the model's `args` (a JSON object, or null for none), in the base
/// environment (`connect::childenv::ChildEnv::default`).
pub fn call(decl: &ToolDecl, args: &Value, env: &CallEnv<'_>) -> CallOutcome {
    call_in(decl, args, env, &ChildEnv::default())
}

/// [`call`] seeing what `child_env` allows of the engine's environment (the run's, see
/// `connect::childenv`); the variables set for the call (`LLM_OUTPUT`, …) come on top.
pub fn call_in(decl: &ToolDecl, args: &Value, env: &CallEnv<'_>, child_env: &ChildEnv) -> CallOutcome {
    let fail = |e: String| CallOutcome {
        result: Err(e),
        log: None,
    };
    let args = match args {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            _ => {
                return fail(format!(
                    "tool '{}' takes a JSON object of arguments, got {args}",
                    decl.name
                ));
            }
        },
        other => {
            return fail(format!(
                "tool '{}' takes a JSON object of arguments, got {other}",
                decl.name
            ));
        }
    };
    let started = Instant::now();
    let output = match TempFile::create("tool-output", "", b"") {
        Ok(f) => f,
        Err(e) => {
            return fail(format!(
                "tool '{}': cannot create its LLM_OUTPUT file: {e}",
                decl.name
            ));
        }
    };
    let workdir = env
        .agent_dir
        .canonicalize()
        .unwrap_or_else(|_| env.agent_dir.to_path_buf());
    let file = decl
        .file
        .canonicalize()
        .unwrap_or_else(|_| decl.file.clone());
    // Kept alive until the process ends.
    let mut temps: Vec<TempFile> = Vec::new();
    let (program, mut cmd) = match decl.lang {
        Lang::Bash => match bash_command(decl, &file, &args, child_env, &mut temps) {
            Ok(c) => c,
            Err(e) => return fail(e),
        },
        Lang::TypeScript | Lang::JavaScript => match js_command(decl, &file, &args, child_env, &mut temps) {
            Ok(c) => c,
            Err(e) => return fail(e),
        },
    };
    cmd.current_dir(&workdir)
        .env("LLM_OUTPUT", output.path())
        .env("LLM_AGENT_DATA_DIR", &workdir)
        .env("LLM_AGENT_ROOT_DIR", &workdir);
    if let Some(agent) = workdir.file_name() {
        cmd.env("LLM_AGENT_NAME", agent);
    }
    if decl.global {
        cmd.env("LLM_TOOL_NAME", &decl.name);
    } else {
        cmd.env("LLM_AGENT_FUNC", &decl.function);
        if let Some(config) = workdir.parent().and_then(Path::parent) {
            cmd.env("LLM_ROOT_DIR", config);
        }
    }
    if let Some(utils) = global_tool_dirs(&workdir)
        .into_iter()
        .filter_map(|d| d.parent().map(|f| f.join("utils").join("prompt-utils.sh")))
        .find(|p| p.is_file())
    {
        cmd.env("LLM_PROMPT_UTILS_FILE", utils);
    }
    let done = match run_supervised(&mut cmd, started + env.timeout, env.stop) {
        Ok(d) => d,
        Err(Unfinished::Spawn(e)) => {
            let mut m = format!(
                "tool '{}' could not be started with `{program}`: {e}",
                decl.name
            );
            if e.kind() == std::io::ErrorKind::NotFound {
                m.push_str(&format!("; install `{program}` or make sure it is on PATH"));
            }
            return fail(m);
        }
        Err(Unfinished::Timeout) => {
            return fail(format!(
                "tool '{}' timed out after {}; it and its child processes were killed",
                decl.name,
                fmt_secs(env.timeout)
            ));
        }
        Err(Unfinished::Stopped) => {
            return fail(format!(
                "tool '{}' was killed (with its child processes) because the run was stopped",
                decl.name
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&done.stdout).into_owned();
    let stderr = done.stderr;
    if !done.status.success() {
        let why = match (
            done.status.code(),
            std::os::unix::process::ExitStatusExt::signal(&done.status),
        ) {
            (Some(c), _) => format!("failed with exit code {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            _ => "failed".to_string(),
        };
        let mut m = format!("tool '{}' ({}) {why}", decl.name, decl.file.display());
        let err_tail = tail_lines(&stderr, STDERR_TAIL_LINES);
        let out_tail = tail_lines(&stdout, STDERR_TAIL_LINES);
        if !err_tail.is_empty() {
            m.push_str(&format!("; last lines of stderr:\n{err_tail}"));
        } else if !out_tail.is_empty() {
            m.push_str(&format!("; no stderr, last lines of stdout:\n{out_tail}"));
        } else {
            m.push_str(" (no output)");
        }
        return fail(m);
    }
    // Bounded: a tool that replaced its LLM_OUTPUT file by a FIFO or a device, or wrote more
    // than the limit, gets an error instead of a hang or a huge result.
    let written = match syntax::source::read_bounded(output.path(), OUTPUT_LIMIT as u64, None) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.is_not_found() => String::new(),
        Err(e) => return fail(format!("tool '{}': its LLM_OUTPUT {e}", decl.name)),
    };
    let (text, log) = if written.trim().is_empty() {
        (stdout.as_str(), stderr.clone())
    } else {
        let mut log = stdout.clone();
        if !stderr.is_empty() {
            if !log.is_empty() && !log.ends_with('\n') {
                log.push('\n');
            }
            log.push_str(&stderr);
        }
        (written.as_str(), log)
    };
    let text = text.trim_end();
    let result = if text.trim().is_empty() {
        Value::String("DONE".into())
    } else {
        serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_string()))
    };
    CallOutcome {
        result: Ok(result),
        log: (!log.trim().is_empty()).then_some(log),
    }
}

fn fmt_secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// The bash shim: an `argc` whose `--argc-eval` prints the precomputed parse, the tool file
/// sourced with the command line, and the function called when the file did not ask argc.
const BASH_SHIM: &str = r#"argc() {
    if [ "${1-}" = "--argc-eval" ]; then
        cat "$SWITCHYARD_ARGC_EVAL_FILE"
    else
        command argc "$@"
    fi
}
source "$0" "$@"
if [ -z "${__switchyard_argc_done-}" ]; then
    eval "$(cat "$SWITCHYARD_ARGC_EVAL_FILE")"
fi
"#;

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A JSON value as the text argc would get on the command line.
fn arg_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Check one scalar value against its parameter, as argc does.
fn check_value(tool: &str, p: &Param, ty: &ParamType, v: &Value) -> Result<String, String> {
    let text = arg_text(v);
    let ok = match ty {
        ParamType::Integer => text.trim().parse::<i64>().is_ok(),
        ParamType::Number => text.trim().parse::<f64>().is_ok(),
        _ => true,
    };
    if !ok {
        let what = if *ty == ParamType::Integer {
            "an integer"
        } else {
            "a number"
        };
        return Err(format!(
            "tool '{tool}': argument '{}' must be {what}, got {v}",
            p.key
        ));
    }
    if !p.choices.is_empty() && !p.choices.iter().any(|c| arg_text(c) == text) {
        let list: Vec<String> = p.choices.iter().map(arg_text).collect();
        return Err(format!(
            "tool '{tool}': argument '{}' must be one of {}, got {v}",
            p.key,
            list.join(", ")
        ));
    }
    Ok(text)
}

/// The argc parse of `args` for `decl`: the command line and the eval text.
fn argc_parse(decl: &ToolDecl, args: &Map<String, Value>) -> Result<(Vec<String>, String), String> {
    let tool = &decl.name;
    for key in args.keys() {
        if !decl.params.iter().any(|p| &p.key == key || p.name == *key) {
            let known: Vec<&str> = decl.params.iter().map(|p| p.key.as_str()).collect();
            return Err(format!(
                "tool '{tool}': unknown argument '{key}' (it takes: {})",
                if known.is_empty() {
                    "no arguments".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    let mut argv: Vec<String> = Vec::new();
    if !decl.global {
        argv.push(decl.function.clone());
    }
    let mut eval = String::from("__switchyard_argc_done=1\n");
    eval.push_str(&format!("argc__fn={}\n", shell_quote(&decl.function)));
    for p in &decl.params {
        let var = format!("argc_{}", p.name.replace(['-', '.', ':'], "_"));
        let v = args
            .get(&p.key)
            .or_else(|| args.get(&p.name))
            .filter(|v| !v.is_null());
        if p.flag {
            let on = match v {
                Some(Value::Bool(b)) => *b,
                Some(Value::String(s)) => !matches!(s.as_str(), "" | "false" | "0"),
                Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
                Some(_) => true,
                None => false,
            };
            if on {
                argv.push(format!("--{}", p.name));
                eval.push_str(&format!("{var}=1\n"));
            }
            continue;
        }
        let Some(v) = v else {
            if p.required {
                return Err(format!(
                    "tool '{tool}': missing required argument '{}'",
                    p.key
                ));
            }
            if let Some(d) = &p.default {
                eval.push_str(&format!("{var}={}\n", shell_quote(d)));
            }
            continue;
        };
        match &p.ty {
            ParamType::Array(item) => {
                let items: Vec<&Value> = match v {
                    Value::Array(a) => a.iter().filter(|x| !x.is_null()).collect(),
                    one => vec![one],
                };
                if items.is_empty() && p.required {
                    return Err(format!(
                        "tool '{tool}': argument '{}' needs at least one value",
                        p.key
                    ));
                }
                let mut quoted = Vec::new();
                for x in items {
                    let text = check_value(tool, p, item, x)?;
                    argv.push(format!("--{}", p.name));
                    argv.push(text.clone());
                    quoted.push(shell_quote(&text));
                }
                eval.push_str(&format!("{var}=( {} )\n", quoted.join(" ")));
            }
            ty => {
                if v.is_array() {
                    return Err(format!(
                        "tool '{tool}': argument '{}' takes one value, got a list: {v}",
                        p.key
                    ));
                }
                let text = check_value(tool, p, ty, v)?;
                argv.push(format!("--{}", p.name));
                argv.push(text.clone());
                eval.push_str(&format!("{var}={}\n", shell_quote(&text)));
            }
        }
    }
    for (name, default) in &decl.env_defaults {
        eval.push_str(&format!(
            "if [ -z \"${{{name}+x}}\" ]; then export {name}={}; fi\n",
            shell_quote(default)
        ));
    }
    eval.push_str("argc__positionals=()\n");
    eval.push_str(&format!("{}\n", shell_quote(&decl.function)));
    Ok((argv, eval))
}

fn bash_command(
    decl: &ToolDecl,
    file: &Path,
    args: &Map<String, Value>,
    child_env: &ChildEnv,
    temps: &mut Vec<TempFile>,
) -> Result<(String, Command), String> {
    let (mut argv, eval) = argc_parse(decl, args)?;
    let eval_file = TempFile::create("argc-eval", ".sh", eval.as_bytes())
        .map_err(|e| format!("tool '{}': cannot write its arguments: {e}", decl.name))?;
    let mut cmd = Command::new("bash");
    child_env.apply(&mut cmd);
    if argv.iter().map(|a| a.len() + 1).sum::<usize>() > ARGV_LIMIT
        || argv.iter().any(|a| a.contains('\0'))
    {
        argv.truncate(usize::from(!decl.global));
    }
    cmd.arg("-c")
        .arg(BASH_SHIM)
        .arg(file)
        .args(&argv)
        .env("SWITCHYARD_ARGC_EVAL_FILE", eval_file.path());
    temps.push(eval_file);
    Ok(("bash".to_string(), cmd))
}

/// The ES-module runner for JS/TS tools (see the module docs).
const JS_RUNNER: &str = r#"import { readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { pathToFileURL } from "node:url";

const env = process.env;
try {
    const file = env.SWITCHYARD_TOOL_FILE;
    const name = env.SWITCHYARD_TOOL_FUNCTION;
    const args = JSON.parse(readFileSync(env.LLM_TOOL_DATA_FILE, "utf8"));
    const mod = await import(pathToFileURL(file).href);
    let fn = mod[name];
    if (typeof fn !== "function" && mod.default && typeof mod.default[name] === "function") {
        fn = mod.default[name];
    }
    if (typeof fn !== "function") {
        throw new Error(`${file} exports no function '${name}'`);
    }
    const spread = env.SWITCHYARD_TOOL_PARAMS ? JSON.parse(env.SWITCHYARD_TOOL_PARAMS) : null;
    const value = await (spread ? fn(...spread.map((k) => args[k])) : fn(args));
    if (value !== undefined && value !== null) {
        const text = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value);
        writeFileSync(env.LLM_OUTPUT, text);
    }
} catch (err) {
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
}
"#;

/// The program (and its leading arguments) that runs a JS/TS tool file.
fn js_runtime(decl: &ToolDecl, file: &Path) -> Result<(String, Vec<String>), String> {
    let node = || on_path("node").map(|p| (p.to_string_lossy().into_owned(), Vec::new()));
    let found = match decl.lang {
        Lang::TypeScript => ts_runtime(),
        _ => {
            // CommonJS (`exports.f = …`, the llm-functions form) is node's; ES modules go to the
            // TypeScript runtimes, which take both forms.
            let src = std::fs::read_to_string(file).unwrap_or_default();
            let esm = src.lines().any(|l| l.trim_start().starts_with("export "))
                || file.extension().is_some_and(|e| e == "mjs");
            if esm {
                ts_runtime().or_else(node)
            } else {
                node().or_else(ts_runtime)
            }
        }
    };
    found.ok_or_else(|| {
        let what = if decl.lang == Lang::TypeScript {
            "TypeScript"
        } else {
            "JavaScript"
        };
        format!(
            "tool '{}' is {what} but none of `deno`, `bun`, `npx` (for tsx){} is on PATH; install \
             Deno, Bun or Node.js",
            decl.name,
            if decl.lang == Lang::JavaScript {
                ", `node`"
            } else {
                ""
            }
        )
    })
}

fn js_command(
    decl: &ToolDecl,
    file: &Path,
    args: &Map<String, Value>,
    child_env: &ChildEnv,
    temps: &mut Vec<TempFile>,
) -> Result<(String, Command), String> {
    let (program, mut leading) = js_runtime(decl, file)?;
    let io = |e: std::io::Error| format!("tool '{}': cannot write its runner: {e}", decl.name);
    let runner = TempFile::create("tool-runner", ".mjs", JS_RUNNER.as_bytes()).map_err(io)?;
    let data = serde_json::to_vec(&Value::Object(args.clone())).unwrap_or_else(|_| b"{}".to_vec());
    let data = TempFile::create("tool-args", ".json", &data).map_err(io)?;
    leading.push(runner.path().to_string_lossy().into_owned());
    let mut cmd = Command::new(&program);
    child_env.apply(&mut cmd);
    cmd.args(&leading)
        .env("SWITCHYARD_TOOL_FILE", file)
        .env("SWITCHYARD_TOOL_FUNCTION", &decl.function)
        .env("LLM_TOOL_DATA_FILE", data.path());
    match decl.style {
        CallStyle::Spread => {
            let names: Vec<&str> = decl.params.iter().map(|p| p.name.as_str()).collect();
            cmd.env(
                "SWITCHYARD_TOOL_PARAMS",
                serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()),
            );
        }
        CallStyle::Object => {
            cmd.env_remove("SWITCHYARD_TOOL_PARAMS");
        }
    }
    temps.push(runner);
    temps.push(data);
    Ok((program, cmd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argc_parse_builds_the_command_line_and_the_variables() {
        let src = "# @cmd Do it\n# @option --the-path! p\n# @option --n <INT> n\n# @option --tags* t\n# @option --mode[=a|b] m\n# @flag --dry-run d\ndo_it() { :; }\n";
        let (d, _) = parse_bash(src, "tools").unwrap();
        let d = &d[0];
        let args = json!({"the_path": "it's here", "n": 3, "tags": ["x", "y z"], "dry_run": true});
        let (argv, eval) = argc_parse(d, args.as_object().unwrap()).unwrap();
        assert_eq!(
            argv,
            [
                "do_it",
                "--the-path",
                "it's here",
                "--n",
                "3",
                "--tags",
                "x",
                "--tags",
                "y z",
                "--dry-run"
            ]
        );
        assert!(eval.contains("argc_the_path='it'\\''s here'\n"), "{eval}");
        assert!(eval.contains("argc_tags=( 'x' 'y z' )\n"), "{eval}");
        assert!(eval.contains("argc_dry_run=1\n"), "{eval}");
        assert!(eval.contains("argc_mode='a'\n"), "{eval}");
        assert!(eval.ends_with("'do_it'\n"), "{eval}");

        let bad = |args: Value| argc_parse(d, args.as_object().unwrap()).unwrap_err();
        assert!(bad(json!({})).contains("missing required argument 'the_path'"));
        assert!(bad(json!({"the_path": "p", "n": "three"})).contains("'n' must be an integer"));
        assert!(bad(json!({"the_path": "p", "mode": "c"})).contains("must be one of a, b"));
        assert!(bad(json!({"the_path": "p", "other": 1})).contains("unknown argument 'other'"));
        assert!(bad(json!({"the_path": ["a", "b"]})).contains("takes one value"));
    }

    #[test]
    fn calls_pass_hostile_values_verbatim_and_say_done_when_silent() {
        let dir = std::env::temp_dir().join(format!("switchyard-lt-call-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("tools.sh"),
            "# @cmd Echo\n# @option --text! t\necho_it() { printf '%s' \"$argc_text\" >> \"$LLM_OUTPUT\"; }\n\n\
             # @cmd Quiet\nquiet() { :; }\n",
        )
        .unwrap();
        let cat = agent_tools(&dir);
        assert!(cat.problems.is_empty(), "{:?}", cat.problems);
        // A malformed tools.sh answers only for the functions it defines.
        std::fs::write(
            dir.join("tools.sh"),
            "# @cmd Bad\n# @option oops\nbad_one() { :; }\n",
        )
        .unwrap();
        let e = lookup(&dir, [], "bad_one").unwrap().unwrap_err();
        assert!(
            e.starts_with("agent tool 'bad_one' cannot be used: ") && e.contains("line 2"),
            "{e}"
        );
        assert!(lookup(&dir, [], "some_mcp_tool").is_none());
        std::fs::write(
            dir.join("tools.sh"),
            "# @cmd Echo\n# @option --text! t\necho_it() { printf '%s' \"$argc_text\" >> \"$LLM_OUTPUT\"; }\n\n\
             # @cmd Quiet\nquiet() { :; }\n",
        )
        .unwrap();
        let env = CallEnv {
            agent_dir: &dir,
            timeout: Duration::from_secs(20),
            stop: None,
        };
        let hostile = "it's $(touch pwned) `touch pwned2` \"q\" ;|&\nline2 \\ end";
        let out = call(&cat.tools[0], &json!({"text": hostile}), &env);
        assert_eq!(out.result, Ok(Value::String(hostile.to_string())));
        assert!(!dir.join("pwned").exists() && !dir.join("pwned2").exists());
        let out = call(&cat.tools[1], &Value::Null, &env);
        assert_eq!(out.result, Ok(json!("DONE")));
        let out = call(&cat.tools[1], &json!([1]), &env);
        assert!(out.result.unwrap_err().contains("takes a JSON object"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
