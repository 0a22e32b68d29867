use super::*;
use serde_json::json;

fn one(src: &str) -> ToolDecl {
    let (mut d, _) = parse_bash(src, "demo").unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    d.remove(0)
}

#[test]
fn bash_global_tool_with_every_kind_of_option() {
    let src = r#"#!/usr/bin/env bash
set -e

# @describe Demonstrate how to create a tool using Bash.
# It spans two lines.
# @option --string!                  Define a required string property
# @option --string-enum![foo|bar]    Define a required string property with enum
# @option --string-optional          Define a optional string property
# @flag --boolean                    Define a boolean property
# @option --integer! <INT>           Define a required integer property
# @option --number! <NUM>            Define a required number property
# @option --array+ <VALUE>           Define a required string array property
# @option --array-optional*          Define a optional string array property
# @option -l --level=info[=info|debug] The level
# @option --ids*,<INT>               Integer ids

# @env LLM_OUTPUT=/dev/stdout The output path

main() {
echo hi >> "$LLM_OUTPUT"
}

eval "$(argc --argc-eval "$0" "$@")"
"#;
    let d = one(src);
    assert_eq!(d.name, "demo");
    assert_eq!(d.function, "main");
    assert_eq!(
        d.description,
        "Demonstrate how to create a tool using Bash.\nIt spans two lines."
    );
    assert_eq!(
        d.env_defaults,
        [("LLM_OUTPUT".to_string(), "/dev/stdout".to_string())]
    );
    assert_eq!(
        d.parameters(),
        json!({
            "type": "object",
            "properties": {
                "string": {"type": "string", "description": "Define a required string property"},
                "string_enum": {"type": "string", "enum": ["foo", "bar"], "description": "Define a required string property with enum"},
                "string_optional": {"type": "string", "description": "Define a optional string property"},
                "boolean": {"type": "boolean", "description": "Define a boolean property"},
                "integer": {"type": "integer", "description": "Define a required integer property"},
                "number": {"type": "number", "description": "Define a required number property"},
                "array": {"type": "array", "items": {"type": "string"}, "description": "Define a required string array property"},
                "array_optional": {"type": "array", "items": {"type": "string"}, "description": "Define a optional string array property"},
                "level": {"type": "string", "enum": ["info", "debug"], "description": "The level"},
                "ids": {"type": "array", "items": {"type": "integer"}, "description": "Integer ids"},
            },
            "required": ["string", "string_enum", "integer", "number", "array"],
        })
    );
    let level = d.params.iter().find(|p| p.key == "level").unwrap();
    assert_eq!(level.default.as_deref(), Some("info"));
    assert!(d.params.iter().find(|p| p.key == "boolean").unwrap().flag);
}

#[test]
fn bash_agent_tools_are_the_cmd_functions() {
    let src = r#"#!/usr/bin/env bash
set -e

# @env LLM_OUTPUT=/dev/stdout The output path

# @cmd Create a new file at the specified path with the given contents.
# @option --path! The path where the file should be created
# @option --contents! The contents of the file
# shellcheck disable=SC2154
fs_create() {
printf "%s" "$argc_contents" > "$argc_path"
}

# @cmd Classify a source
# @option --kind![=web|paper|other] What it is
# @flag -v --verbose Say more
function classify-source {
:
}

helper() { :; }

# @cmd Internal
_private() { :; }
"#;
    let (d, plain) = parse_bash(src, "tools").unwrap();
    let names: Vec<(&str, &str)> = d
        .iter()
        .map(|t| (t.name.as_str(), t.function.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("fs_create", "fs_create"),
            ("classify_source", "classify-source")
        ]
    );
    assert_eq!(plain, ["helper"]);
    assert_eq!(
        d[0].description,
        "Create a new file at the specified path with the given contents."
    );
    assert_eq!(d[0].parameters()["required"], json!(["path", "contents"]));
    assert_eq!(
        d[1].params[0].choices,
        [json!("web"), json!("paper"), json!("other")]
    );
    assert_eq!(d[1].params[0].default.as_deref(), Some("web"));
    assert_eq!(d[1].params[1].key, "verbose");
    assert_eq!(d[1].params[1].ty, ParamType::Boolean);
    // The file-level `@env` reaches every command.
    assert_eq!(
        d[1].env_defaults,
        [("LLM_OUTPUT".to_string(), "/dev/stdout".to_string())]
    );
}

#[test]
fn bash_errors_and_files_without_tools() {
    let e =
        parse_bash("# @cmd Bad\n# @option path the path\nf() { :; }\n", "tools").unwrap_err();
    assert!(e.contains("line 2") && e.contains("--name"), "{e}");
    let (d, plain) = parse_bash("main() { echo hi; }\n", "x").unwrap();
    assert!(d.is_empty() && plain.is_empty());
}

#[test]
fn typescript_exported_functions_with_jsdoc() {
    let src = r#"
import { readFileSync } from "node:fs";

/**
 * Search the catalogue.
 *
 * @param query - The search query string
 * @param format - Output format
 * @param count - Maximum results to return
 * @param verbose - Enable verbose output
 * @param tags - List of tags to filter by
 * @param language - Optional language filter
 * @param extra_tags - Optional extra tags
 */
export async function search(
  query: string,
  format: "json" | "csv",
  count: number,
  verbose: boolean,
  tags: string[],
  language?: string,
  extra_tags: Array<string> | null = null,
): Promise<string> {
  return `${query}`;
}

/** Count things. @param n how many */
export const count_up = (n: number = 1) => n + 1;

function notExported(a: string) {}

/** Hidden */
export function _helper() {}
"#;
    let d = parse_js(src, "tools", false, Lang::TypeScript);
    let names: Vec<&str> = d.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["search", "count_up"]);
    assert_eq!(d[0].description, "Search the catalogue.");
    assert_eq!(d[0].style, CallStyle::Spread);
    assert_eq!(
        d[0].parameters(),
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The search query string"},
                "format": {"type": "string", "enum": ["json", "csv"], "description": "Output format"},
                "count": {"type": "number", "description": "Maximum results to return"},
                "verbose": {"type": "boolean", "description": "Enable verbose output"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "List of tags to filter by"},
                "language": {"type": "string", "description": "Optional language filter"},
                "extra_tags": {"type": "array", "items": {"type": "string"}, "description": "Optional extra tags"},
            },
            "required": ["query", "format", "count", "verbose", "tags"],
        })
    );
    assert_eq!(d[1].params[0].ty, ParamType::Number);
    assert!(!d[1].params[0].required);
}

#[test]
fn javascript_llm_functions_forms() {
    // A global tool: `run` with an Args typedef, named after the file.
    let src = r#"
/**
 * Demonstrate how to create a tool using Javascript and how to use comments.
 * @typedef {Object} Args
 * @property {string} string - Define a required string property
 * @property {'foo'|'bar'} string_enum - Define a required string property with enum
 * @property {string} [string_optional] - Define a optional string property
 * @property {boolean} boolean - Define a required boolean property
 * @property {Integer} integer - Define a required integer property
 * @property {number} number - Define a required number property
 * @property {string[]} array - Define a required string array property
 * @property {string[]} [array_optional] - Define a optional string array property
 * @param {Args} args
 */
exports.run = function (args) {
  return args;
}

/** Not the tool of a global file. */
exports.other = function (a) {}
"#;
    let d = parse_js(src, "demo_js", true, Lang::JavaScript);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].name.as_str(), d[0].function.as_str()),
        ("demo_js", "run")
    );
    assert_eq!(d[0].style, CallStyle::Object);
    let p = d[0].parameters();
    assert_eq!(
        p["required"],
        json!([
            "string",
            "string_enum",
            "boolean",
            "integer",
            "number",
            "array"
        ])
    );
    assert_eq!(p["properties"]["integer"]["type"], json!("integer"));
    assert_eq!(
        p["properties"]["string_enum"]["enum"],
        json!(["foo", "bar"])
    );
    assert_eq!(
        p["properties"]["array_optional"],
        json!({"type": "array", "items": {"type": "string"}, "description": "Define a optional string array property"})
    );

    // Agent tools in CommonJS, typed by JSDoc; a destructured argument object.
    let src = r#"
/**
 * Get the weather.
 * @param {string} city The city
 * @param {number=} days How many days
 * @param {('c'|'f')} [unit] Unit
 */
exports.get_weather = async function getWeather(city, days, unit) {};

/**
 * Book it.
 * @param {object} args
 * @param {string} args.when When
 * @param {Integer} [args.seats] Seats
 */
module.exports.book = (args) => {};

/** Tag it. */
export function tag({ name, colour = "red" }) {}
"#;
    let d = parse_js(src, "tools", false, Lang::JavaScript);
    let names: Vec<&str> = d.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "book", "tag"]);
    assert_eq!(d[0].parameters()["required"], json!(["city"]));
    assert_eq!(
        d[0].parameters()["properties"]["unit"]["enum"],
        json!(["c", "f"])
    );
    assert_eq!(d[1].style, CallStyle::Object);
    assert_eq!(
        d[1].parameters()["properties"]["seats"],
        json!({"type": "integer", "description": "Seats"})
    );
    assert_eq!(d[1].parameters()["required"], json!(["when"]));
    assert_eq!(d[2].style, CallStyle::Object);
    assert_eq!(d[2].parameters()["required"], json!(["name"]));
}

#[test]
fn js_types() {
    let t = |s: &str| js_type(s);
    assert_eq!(t("string"), (ParamType::String, vec![], false));
    assert_eq!(t("number | undefined"), (ParamType::Number, vec![], true));
    assert_eq!(
        t("1 | 2 | 3"),
        (
            ParamType::Integer,
            vec![json!(1), json!(2), json!(3)],
            false
        )
    );
    assert_eq!(
        t("('a' | 'b')[]"),
        (
            ParamType::Array(Box::new(ParamType::String)),
            vec![json!("a"), json!("b")],
            false
        )
    );
    assert_eq!(
        t("Array<number>"),
        (ParamType::Array(Box::new(ParamType::Number)), vec![], false)
    );
    assert_eq!(
        t("Record<string, number>"),
        (ParamType::Object, vec![], false)
    );
    assert_eq!(t("?Integer"), (ParamType::Integer, vec![], true));
    assert_eq!(t("(x: number) => void"), (ParamType::String, vec![], false));
}

#[test]
fn global_tool_search_path_names_every_place() {
    let dir = std::env::temp_dir().join(format!("switchyard-gt-{}", std::process::id()));
    let agent = dir.join("agents").join("a");
    std::fs::create_dir_all(&agent).unwrap();
    let e = find_global_tool(&agent, "nope_tool.sh").unwrap_err();
    let expected = dir.join("functions").join("tools").join("nope_tool.sh");
    assert!(e.contains(&expected.display().to_string()), "{e}");
    std::fs::create_dir_all(dir.join("functions/tools")).unwrap();
    std::fs::write(&expected, "# @describe Nope\nmain() { :; }\n").unwrap();
    assert_eq!(find_global_tool(&agent, "nope_tool.sh").unwrap(), expected);
    let found = lookup(&agent, ["nope_tool.sh"], "nope_tool")
        .unwrap()
        .unwrap();
    assert_eq!((found.name.as_str(), found.global), ("nope_tool", true));
    let _ = std::fs::remove_dir_all(&dir);
}
