//! What a run's children see of the user's environment (`connect::childenv`): the real CLI runs
//! a Loki graph (a script node, a `tools.sh` tool, a `tools.py` tool through the Python bridge)
//! and a sherma agent (a Python tool), each of which writes its whole environment to a file. The
//! CLI itself gets secrets (`OPENAI_API_KEY`, `SOME_SECRET`, `AWS_SECRET_ACCESS_KEY`) and the
//! variables the files reference; the children must see the referenced ones and the base set,
//! never the others, unless `SWITCHYARD_CHILD_ENV` lets them through.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_support::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_switchyard");

const OPENAI: &str = "sk-test-child-env-0123456789abcdef";
const ANTHROPIC: &str = "sk-ant-test-child-env-0123456789";
const SECRET: &str = "some-secret-value-42";
const AWS: &str = "aws-secret-child-env";
const ORDERS_URL: &str = "http://127.0.0.1:9/orders";

/// Writes the environment, one `NAME=value` per NUL-terminated entry, to `$1`.
const DUMP_SH: &str = "dump() { env -0 > \"$1\"; }\n";

const LOKI_GRAPH: &str = r#"name: envdump
version: "1.0"
start: prep
nodes:
  prep:
    type: script
    script: scripts/dump.sh
    next: ask
  ask:
    type: llm
    prompt: "dump your environment"
    tools: [env_dump, py_env_dump]
    max_iterations: 4
    state_updates: { answer: "{{output}}" }
    next: done
  done:
    type: end
    output: "{{answer}}"
"#;

const LOKI_REPLIES: &str = r#"replies:
  - tool_calls:
      - name: env_dump
        args: {}
      - name: py_env_dump
        args: {}
  - content: dumped
"#;

const TOOLS_SH: &str = r#"#!/usr/bin/env bash
set -e

# @env ORDERS_URL! where the orders live
# @env ANTHROPIC_API_KEY the key this tool would call Claude with

# @cmd Write the environment to tool.env
env_dump() {
    env -0 > "$LLM_AGENT_DATA_DIR/tool.env"
    echo done >> "$LLM_OUTPUT"
}

eval "$(argc --argc-eval "$0" "$@")"
"#;

const PY_DUMP: &str = r#"import os


def _dump(name):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "w") as f:
        f.write("".join(f"{k}={v}\0" for k, v in os.environ.items()))
    return "done"
"#;

const SHERMA_AGENT: &str = r#"manifest_version: 1
prompts:
  - id: sys
    version: "1.0.0"
    instructions: "Orders are at ${ORDERS_URL}. Dump your environment."
llms:
  - id: gpt
    version: "1.0.0"
    provider: openai
    model_name: gpt-4o-mini
tools:
  - id: dump_env
    version: "1.0.0"
    import_path: shermatools.dump_env
agents:
  dumper:
    state:
      fields:
        - name: messages
          type: list
          default: []
    graph:
      entry_point: answer
      nodes:
        - name: answer
          type: call_llm
          args:
            llm: { id: gpt }
            prompt:
              - role: system
                content: 'prompts["sys"]["instructions"]'
              - role: messages
                content: state.messages
            tools:
              - id: dump_env
            state_updates:
              messages: "[llm_response]"
      edges:
        - source: answer
          target: __end__
"#;

const SHERMA_REPLIES: &str = r#"replies:
  - tool_calls:
      - name: dump_env
        args: {}
  - content: dumped
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The Loki agent (in `<tmp>/loki`) and the sherma agent (in `<tmp>/sherma`).
fn agents(t: &TempDir) -> (PathBuf, PathBuf) {
    let loki = t.join("loki");
    write(&loki.join("graph.yaml"), LOKI_GRAPH);
    write(&loki.join("replies.yaml"), LOKI_REPLIES);
    write(&loki.join("scripts/dump.sh"), &format!("#!/usr/bin/env bash\n{DUMP_SH}dump \"$LLM_AGENT_DATA_DIR/script.env\"\necho '{{}}'\n"));
    write(&loki.join("tools.sh"), TOOLS_SH);
    write(&loki.join("tools.py"), &format!("{PY_DUMP}\n\ndef py_env_dump() -> str:\n    \"\"\"Write the environment to py.env.\"\"\"\n    return _dump(\"py.env\")\n"));
    let sherma = t.join("sherma");
    write(&sherma.join("agent.yaml"), SHERMA_AGENT);
    write(&sherma.join("replies.yaml"), SHERMA_REPLIES);
    write(&sherma.join("shermatools.py"), &format!("{PY_DUMP}\n\ndef dump_env() -> str:\n    \"\"\"Write the environment to sherma.env.\"\"\"\n    return _dump(\"sherma.env\")\n"));
    (loki, sherma)
}

/// The CLI with the user's secrets in its environment (and `extra`), its state in `t`.
fn cli(t: &TempDir, args: &[&str], extra: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("OPENAI_API_KEY", OPENAI)
        .env("ANTHROPIC_API_KEY", ANTHROPIC)
        .env("SOME_SECRET", SECRET)
        .env("AWS_SECRET_ACCESS_KEY", AWS)
        .env("ORDERS_URL", ORDERS_URL)
        .env("GITHUB_TOKEN", "ghp_childenvtest0123456789")
        .env("SWITCHYARD_TRUST", t.join("trust.json"))
        .env("SWITCHYARD_RUNS_DB", t.join("runs.sqlite"))
        .env("SWITCHYARD_PROVIDERS", t.join("no-providers.yaml"))
        .env("SWITCHYARD_CACHE_DIR", t.join("cache"))
        .env("SWITCHYARD_KEYRING", "off")
        .env("LC_ALL", "C.UTF-8")
        .env_remove("SWITCHYARD_CHILD_ENV");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A dump written by a child: name → value.
fn dump(path: &Path) -> BTreeMap<String, String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    String::from_utf8_lossy(&bytes)
        .split('\0')
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// Names a child may hold besides the base set and the referenced variables: what the engine
/// sets for it and what its interpreter adds by itself (bash: `PWD`, `SHLVL`, `_`; a pyenv shim:
/// `PYENV_*`, `_PYENV_*`).
fn engine_or_interpreter(name: &str) -> bool {
    name.starts_with("LLM_")
        || name.starts_with("LC_")
        || name.starts_with("PYENV_")
        || name.starts_with("_PYENV_")
        || [
            "GRAPH_STATE",
            "GRAPH_STATE_FILE",
            "SWITCHYARD_PROC_TAG",
            "SWITCHYARD_ARGC_EVAL_FILE",
            "PYTHONIOENCODING",
            "PYTHONDONTWRITEBYTECODE",
            "PWD",
            "OLDPWD",
            "SHLVL",
            "_",
        ]
        .contains(&name)
}

const BASE: &[&str] =
    &["PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"];

/// `env` has PATH and HOME as this process has them, `wanted` as the CLI had them, none of the
/// secrets in `absent`, and nothing that is neither allowed nor the engine's or interpreter's.
fn check(what: &str, env: &BTreeMap<String, String>, wanted: &[(&str, &str)], absent: &[&str]) {
    assert_eq!(env.get("HOME"), std::env::var("HOME").ok().as_ref(), "{what}: HOME");
    // A pyenv shim standing in for python3 puts its own folders in front.
    let path = std::env::var("PATH").unwrap();
    let got = env.get("PATH").unwrap_or_else(|| panic!("{what}: no PATH"));
    assert!(*got == path || got.ends_with(&format!(":{path}")), "{what}: PATH {got}");
    assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C.UTF-8"), "{what}: LC_ALL");
    for (k, v) in wanted {
        assert_eq!(env.get(*k).map(String::as_str), Some(*v), "{what}: {k} should be passed: {:?}", env.keys());
    }
    for k in absent {
        assert!(!env.contains_key(*k), "{what}: {k} leaked");
    }
    let values = [OPENAI, ANTHROPIC, SECRET, AWS];
    for (k, v) in env {
        let allowed = BASE.contains(&k.as_str()) || wanted.iter().any(|(w, _)| w == k) || engine_or_interpreter(k);
        assert!(allowed, "{what}: {k} should not be passed");
        for secret in values {
            if !wanted.iter().any(|(_, w)| *w == secret) {
                assert!(!v.contains(secret), "{what}: {k} holds a secret");
            }
        }
    }
}

#[test]
fn children_see_the_base_set_and_what_the_file_references_only() {
    let t = TempDir::new("child-env");
    let (loki, sherma) = agents(&t);

    // The manifest lists the variables the children will get.
    let out = cli(&t, &["run", loki.to_str().unwrap(), "--manifest"], &[]);
    ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ORDERS_URL") && text.contains("ANTHROPIC_API_KEY"), "{text}");
    assert!(!text.contains("OPENAI_API_KEY") && !text.contains("SOME_SECRET"), "{text}");
    assert!(text.contains("children (scripts, tools, Python, MCP servers) see only these"), "{text}");

    let out = cli(&t, &["run", "--trust", "--quiet", loki.to_str().unwrap(), "--input", "go"], &[]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("dumped"));
    // The tool file declares ORDERS_URL and ANTHROPIC_API_KEY (`# @env`): the whole run's children
    // get both, and nothing else of the secrets.
    let wanted = [("ORDERS_URL", ORDERS_URL), ("ANTHROPIC_API_KEY", ANTHROPIC)];
    let absent = ["OPENAI_API_KEY", "SOME_SECRET", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SWITCHYARD_TRUST", "SWITCHYARD_KEYRING"];
    let script = dump(&loki.join("script.env"));
    check("script", &script, &wanted, &absent);
    assert!(script.contains_key("GRAPH_STATE") && script.contains_key("LLM_AGENT_DATA_DIR"), "{:?}", script.keys());
    let tool = dump(&loki.join("tool.env"));
    check("tool", &tool, &wanted, &absent);
    assert!(tool.contains_key("LLM_OUTPUT"), "the engine's own variables are set: {:?}", tool.keys());
    check("Loki Python tool", &dump(&loki.join("py.env")), &wanted, &absent);

    // sherma: `${ORDERS_URL}` in the file; no provider key is referenced.
    let out = cli(&t, &["run", "--trust", "--quiet", sherma.join("agent.yaml").to_str().unwrap(), "--input", "go"], &[]);
    ok(&out);
    let py = dump(&sherma.join("sherma.env"));
    check("sherma Python tool", &py, &[("ORDERS_URL", ORDERS_URL)], &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SOME_SECRET", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]);
}

#[test]
fn switchyard_child_env_lets_more_names_through() {
    let t = TempDir::new("child-env-opt-in");
    let (loki, sherma) = agents(&t);
    let opt_in = [("SWITCHYARD_CHILD_ENV", "SOME_SECRET, GITHUB_TOKEN")];
    ok(&cli(&t, &["run", "--trust", "--quiet", loki.to_str().unwrap(), "--input", "go"], &opt_in));
    ok(&cli(&t, &["run", "--trust", "--quiet", sherma.join("agent.yaml").to_str().unwrap(), "--input", "go"], &opt_in));
    let sherma_wanted = [("SOME_SECRET", SECRET), ("GITHUB_TOKEN", "ghp_childenvtest0123456789"), ("ORDERS_URL", ORDERS_URL)];
    let mut loki_wanted = sherma_wanted.to_vec();
    loki_wanted.push(("ANTHROPIC_API_KEY", ANTHROPIC));
    for (what, file, wanted) in [
        ("script", loki.join("script.env"), &loki_wanted[..]),
        ("tool", loki.join("tool.env"), &loki_wanted[..]),
        ("Loki Python tool", loki.join("py.env"), &loki_wanted[..]),
        ("sherma Python tool", sherma.join("sherma.env"), &sherma_wanted[..]),
    ] {
        // `SWITCHYARD_CHILD_ENV` itself is the user's setting, not the child's.
        check(what, &dump(&file), wanted, &["OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "SWITCHYARD_CHILD_ENV"]);
    }
}
