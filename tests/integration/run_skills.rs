//! sherma skills beyond the conformance corpus: skill cards and files served over HTTP (an axum
//! server on 127.0.0.1), a local card with `base_uri`, a skill's files confined to its folder,
//! Agent-Skills folders with the `activate_skill` tool, and SKILL.md problems reported by
//! validation at their place in the file. Runs use scripted LLM replies.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use switchyard::run::events::{Event, EventBody, RunStatus};
use switchyard::run::launch::{self, RunRequest};
use switchyard::run::provider::NoProvider;
use switchyard::run::session::{RunOptions, RunSession, Status};
use test_support::TempDir;
use test_support::http::{Page, Site, closed_port_url};
use test_support::run::completed;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// The user's home for skill discovery, the same for every test of this binary (set once,
/// before any document loads): it holds one user skill, `commit`.
fn home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let h = TempDir::new("run-skills-home").keep();
        write(
            &h.join(".agents/skills/commit/SKILL.md"),
            "---\nname: commit\ndescription: Write commit messages.\n---\nUse the imperative.\n",
        );
        // SAFETY: set once, before this binary's tests read the environment through a load.
        unsafe { std::env::set_var("SWITCHYARD_HOME", &h) };
        h
    })
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An agent file: one call_llm node `ask` offering `tools`, looping through its tool node, then
/// the end. `extra` is added at the top level (skills, agent_skills).
fn agent_yaml(extra: &str, tools: &[&str]) -> String {
    let tools: String = tools.iter().map(|t| format!("              - id: {t}\n")).collect();
    format!(
        r#"manifest_version: 1
llms:
  - id: m
    version: "1.0.0"
    provider: openai
    model_name: gpt-4o-mini
{extra}
agents:
  a:
    state:
      fields:
        - name: messages
          type: list
          default: []
    graph:
      entry_point: ask
      nodes:
        - name: ask
          type: call_llm
          args:
            llm: {{ id: m, version: "1.0.0" }}
            prompt:
              - role: system
                content: '"Skills: " + string(skills)'
              - role: messages
                content: 'state.messages'
            tools:
{tools}            state_updates:
              messages: '[llm_response]'
      edges:
        - source: ask
          target: __end__
"#
    )
}

fn agent_yaml_no_catalogue(extra: &str, tools: &[&str]) -> String {
    agent_yaml(extra, tools).replace(r#"'"Skills: " + string(skills)'"#, r#"'"You help."'"#)
}

/// Load `dir/agent.yaml` and run it with the scripted replies `replies` (YAML text).
fn start(dir: &Path, replies: &str) -> Result<RunSession, String> {
    home();
    write(&dir.join("replies.yaml"), replies);
    let doc = Arc::new(switchyard::doc::load_path(&dir.join("agent.yaml")));
    // Skill URLs are fakes on 127.0.0.1: the run may use the network (offline.rs: scripted runs
    // are offline otherwise).
    let req = RunRequest {
        input: Some("hello".into()),
        llm_script: Some(dir.join("replies.yaml")),
        allow_network: true,
        ..Default::default()
    };
    launch::start(doc, &req, RunOptions::new(Box::new(NoProvider)))
}

/// `(tool name, result text)` of every tool result, in order.
fn results(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolResult { name, result, .. } => {
                Some((name.clone(), result.as_str().map(str::to_string).unwrap_or_else(|| result.to_string())))
            }
            _ => None,
        })
        .collect()
}

/// The tools offered by the first LLM request.
fn first_tools(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { tools, .. } => Some(tools.as_array().cloned().unwrap_or_default()),
            _ => None,
        })
        .expect("an llm_request")
}

fn first_system_prompt(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages[0]["content"].as_str().unwrap_or("").to_string()),
            _ => None,
        })
        .expect("an llm_request")
}

// ---------------------------------------------------------------------------------------------
// A static file server on 127.0.0.1
// ---------------------------------------------------------------------------------------------

/// Serve `files` (path → body; status 200) and return the base URL and the server.
fn serve(files: &[(&str, String)]) -> (String, Site) {
    serve_slow(files, &[])
}

/// [`serve`], with `slow` paths stalling for a minute.
fn serve_slow(files: &[(&str, String)], slow: &[&str]) -> (String, Site) {
    let mut pages: Vec<(String, Page)> = files.iter().map(|(p, b)| (p.to_string(), Page::text(b.clone()))).collect();
    for p in slow {
        match pages.iter_mut().find(|(path, _)| path == p) {
            Some((_, page)) => page.slow = true,
            None => pages.push((p.to_string(), Page::new(404, "text/plain", "no such page").slow())),
        }
    }
    let site = Site::start(pages);
    (site.url(), site)
}

const REMOTE_SKILL_MD: &str = "---\nname: weather\ndescription: Weather from afar.\n---\n# Remote weather skill\n";

// ---------------------------------------------------------------------------------------------
// Remote skill cards
// ---------------------------------------------------------------------------------------------

#[test]
fn remote_card_skill_md_and_resources_over_http() {
    let card = json!({
        "id": "weather", "version": "1.0.0", "name": "Remote Weather", "description": "Weather from afar.",
        "base_uri": "content",
        "files": ["SKILL.md", "references/api.md", "references/big.md", "references/gone.md"],
        "mcps": {}, "local_tools": {}
    });
    let (base, srv) = serve(&[
        ("/skills/weather/skill-card.json", card.to_string()),
        ("/skills/weather/content/SKILL.md", REMOTE_SKILL_MD.into()),
        ("/skills/weather/content/references/api.md", "API notes".into()),
        ("/skills/weather/content/references/big.md", "x".repeat(5 * 1024 * 1024)),
    ]);
    let dir = TempDir::new("run-skills-remote");
    let extra =
        format!("skills:\n  - id: weather\n    version: \"1.0.0\"\n    url: {base}/skills/weather/skill-card.json\n");
    write(&dir.join("agent.yaml"), &agent_yaml(&extra, &["load_skill_md", "load_skill_resource"]));
    let replies = r#"replies:
  - node: ask
    tool_calls:
      - name: load_skill_md
        args: { skill_id: weather, version: "1.0.0" }
      - name: load_skill_resource
        args: { skill_id: weather, resource_path: references/api.md }
      - name: load_skill_resource
        args: { skill_id: weather, resource_path: references/big.md }
      - name: load_skill_resource
        args: { skill_id: weather, resource_path: references/gone.md }
      - name: load_skill_resource
        args: { skill_id: weather, resource_path: ../../skill-card.json }
  - node: ask
    content: done
"#;
    let mut s = start(&dir, replies).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    let st = s.state();
    let ev = s.events();
    // The `skills` CEL variable carries the remote card's name and description.
    let sys = first_system_prompt(&ev);
    assert!(sys.contains("Remote Weather") && sys.contains("Weather from afar."), "{sys}");
    let r = results(&ev);
    assert_eq!(r[0], ("load_skill_md".into(), REMOTE_SKILL_MD.into()));
    assert_eq!(r[1], ("load_skill_resource".into(), "API notes".into()));
    assert!(
        r[2].1.starts_with("Error: skill 'weather': cannot fetch ") && r[2].1.contains("larger than 4 MiB"),
        "{}",
        r[2].1
    );
    assert_eq!(
        r[3].1,
        format!(
            "Error: skill 'weather': cannot fetch {base}/skills/weather/content/references/gone.md: HTTP 404 Not Found"
        )
    );
    assert!(
        r[4].1.starts_with("Error: '../../skill-card.json' not found. Available: [references/api.md"),
        "{}",
        r[4].1
    );
    assert_eq!(st["__sherma__"]["loaded_skills"]["weather"]["version"], "==1.0.0");
    let log = srv.hits();
    assert_eq!(
        log,
        vec![
            "/skills/weather/skill-card.json",
            "/skills/weather/content/SKILL.md",
            "/skills/weather/content/references/api.md",
            "/skills/weather/content/references/big.md",
            "/skills/weather/content/references/gone.md",
        ]
    );
}

#[test]
fn load_skills_node_fetches_a_remote_skill_md() {
    let card = json!({"id": "weather", "version": "1.0.0", "name": "W", "description": "D", "files": ["SKILL.md"]});
    let (base, _srv) = serve(&[("/w/card.json", card.to_string()), ("/w/SKILL.md", REMOTE_SKILL_MD.into())]);
    let dir = TempDir::new("run-skills-remote-load");
    let extra = format!("skills:\n  - id: weather\n    version: \"1.0.0\"\n    url: {base}/w/card.json\n");
    let yaml = agent_yaml(&extra, &["load_skill_md"])
        .replace("entry_point: ask", "entry_point: load")
        .replace(
            "      nodes:\n",
            "      nodes:\n        - name: load\n          type: load_skills\n          args:\n            skill_ids: '[{\"id\": \"weather\", \"version\": \"1.0.0\"}]'\n",
        )
        .replace("      edges:\n", "      edges:\n        - source: load\n          target: ask\n");
    write(&dir.join("agent.yaml"), &yaml);
    let mut s = start(&dir, "replies:\n  - node: ask\n    content: ok\n").unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    let st = s.state();
    let msgs = st["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["type"], "tool");
    assert_eq!(msgs[2]["content"], REMOTE_SKILL_MD);
    assert_eq!(st["__sherma__"]["loaded_skills"]["weather"]["version"], "1.0.0");
}

#[test]
fn remote_card_failures_name_the_skill_and_the_url() {
    let (base, _srv) = serve(&[("/bad.json", "<html>not json</html>".into())]);
    for (path, want) in [("/missing.json", "HTTP 404 Not Found"), ("/bad.json", "is not a skill card")] {
        let dir = TempDir::new("run-skills-remote-fail");
        let url = format!("{base}{path}");
        let extra = format!("skills:\n  - id: weather\n    version: \"1.0.0\"\n    url: {url}\n");
        write(&dir.join("agent.yaml"), &agent_yaml(&extra, &["load_skill_md"]));
        let err = start(&dir, "replies: []\n").err().expect("the run must not start");
        assert!(err.contains("skill `weather`") && err.contains(&url) && err.contains(want), "{err}");
    }
    // Nothing listens there: a connection error, still naming both.
    let dir = TempDir::new("run-skills-remote-refused");
    let url = format!("{}/card.json", closed_port_url());
    write(
        &dir.join("agent.yaml"),
        &agent_yaml(&format!("skills:\n  - id: weather\n    version: \"1.0.0\"\n    url: {url}\n"), &[]),
    );
    let err = start(&dir, "replies: []\n").err().expect("the run must not start");
    assert!(err.contains("skill `weather`") && err.contains(&url), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Local cards: base_uri, confinement
// ---------------------------------------------------------------------------------------------

#[test]
fn local_card_base_uri_and_files_confined_to_the_skill_folder() {
    let dir = TempDir::new("run-skills-local");
    write(&dir.join("secret.txt"), "TOP SECRET");
    let card = json!({
        "id": "notes", "version": "1.0.0", "name": "Notes", "description": "Notes skill.",
        "base_uri": "./content",
        "files": ["SKILL.md", "references/a.md", "references/link.md", "assets/up/secret.txt"]
    });
    write(&dir.join("skills/notes/skill-card.json"), &card.to_string());
    write(
        &dir.join("skills/notes/content/SKILL.md"),
        "---\nname: notes\ndescription: Notes skill.\n---\nLocal notes.\n",
    );
    write(&dir.join("skills/notes/content/references/a.md"), "A");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.join("secret.txt"), dir.join("skills/notes/content/references/link.md"))
            .unwrap();
        std::fs::create_dir_all(dir.join("skills/notes/content/assets")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("skills/notes/content/assets/up")).unwrap();
    }
    let extra = "skills:\n  - id: notes\n    version: \"1.0.0\"\n    skill_card_path: skills/notes/skill-card.json\n";
    write(&dir.join("agent.yaml"), &agent_yaml(extra, &["load_skill_md", "load_skill_resource", "load_skill_asset"]));
    let replies = r#"replies:
  - node: ask
    tool_calls:
      - name: load_skill_md
        args: { skill_id: notes }
      - name: load_skill_resource
        args: { skill_id: notes, resource_path: references/a.md }
      - name: load_skill_resource
        args: { skill_id: notes, resource_path: references/link.md }
      - name: load_skill_asset
        args: { skill_id: notes, asset_path: assets/up/secret.txt }
      - name: load_skill_resource
        args: { skill_id: notes, resource_path: /etc/passwd }
  - node: ask
    content: done
"#;
    let mut s = start(&dir, replies).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    let r = results(&s.events());
    assert_eq!(r[0].1, "---\nname: notes\ndescription: Notes skill.\n---\nLocal notes.\n");
    assert_eq!(r[1].1, "A");
    #[cfg(unix)]
    {
        assert_eq!(
            r[2].1,
            "Error: skill 'notes': 'references/link.md' resolves outside the skill's folder (a symbolic link?)"
        );
        assert!(r[3].1.contains("outside the skill's folder"), "{}", r[3].1);
    }
    assert!(r[4].1.starts_with("Error: '/etc/passwd' not found."), "{}", r[4].1);
    for (_, text) in &r {
        assert!(!text.contains("TOP SECRET"), "{text}");
    }
}

#[test]
fn validate_reports_card_escapes_and_skill_md_problems_in_place() {
    let dir = TempDir::new("run-skills-validate");
    let card = "{\n  \"id\": \"notes\",\n  \"version\": \"1.0.0\",\n  \"name\": \"Notes\",\n  \"description\": \"N\",\n  \"files\": [\"SKILL.md\",\n    \"../outside.md\"]\n}\n";
    write(&dir.join("skills/notes/skill-card.json"), card);
    write(&dir.join("skills/notes/SKILL.md"), "---\nname: Notes\ndescripton: typo\ncompatibility: \"\"\n---\nbody\n");
    write(&dir.join("skills/notes/../outside.md"), "x");
    let extra = "skills:\n  - id: notes\n    version: \"1.0.0\"\n    skill_card_path: skills/notes/skill-card.json\n";
    write(&dir.join("agent.yaml"), &agent_yaml(extra, &["load_skill_md"]));
    let doc = switchyard::doc::load_path(&dir.join("agent.yaml"));
    let diags = switchyard::validate::validate(&doc, None);
    let md = dir.join("skills/notes/SKILL.md").display().to_string();
    let at = |code: &str| diags.iter().find(|d| d.code == code).map(|d| (d.file.clone(), d.line, d.column));
    assert_eq!(at("skill-md-key"), Some((md.clone(), 3, 1)), "{diags:#?}");
    assert_eq!(at("skill-md-description"), Some((md.clone(), 1, 1)), "{diags:#?}");
    assert_eq!(at("skill-md-compatibility"), Some((md.clone(), 4, 16)), "{diags:#?}");
    let esc = diags.iter().find(|d| d.code == "skill-file-escapes").expect("escape reported");
    assert!(esc.is_error() && esc.file.ends_with("skill-card.json") && esc.line == 7, "{esc:#?}");
    // A sherma SKILL.md `name` is display text: no Agent Skills name rule on it.
    assert!(at("skill-md-name").is_none(), "{diags:#?}");
}

// ---------------------------------------------------------------------------------------------
// Agent-Skills folders and activate_skill
// ---------------------------------------------------------------------------------------------

/// A project (with `.git`) holding the agent in `agents/` and the `pdf` skill in
/// `.agents/skills`, plus a `commit` skill that shadows the user's.
fn project(tag: &str, agent_skills: &str) -> TempDir {
    let dir = TempDir::new(&format!("run-skills-{tag}")).sub("agents");
    let root = dir.root().to_path_buf();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(
        &root.join(".agents/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Fill PDF forms. Use when handling PDFs.\nallowed-tools: Read\n---\n# PDF\nOpen the form first.\n",
    );
    write(&root.join(".agents/skills/pdf/references/FORMS.md"), "forms");
    write(&root.join(".agents/skills/pdf/scripts/fill.py"), "print(1)");
    write(
        &dir.join("agent.yaml"),
        &agent_yaml_no_catalogue(&format!("agent_skills: {agent_skills}\n"), &["activate_skill"]),
    );
    dir
}

#[test]
fn activate_skill_offers_the_catalogue_and_loads_a_skill() {
    let dir = project("activate", "\"*\"");
    let replies = r#"replies:
  - node: ask
    tool_calls:
      - name: activate_skill
        args: { name: pdf }
      - name: activate_skill
        args: { name: nope }
  - node: ask
    content: done
"#;
    let mut s = start(&dir, replies).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    let st = s.state();
    let ev = s.events();
    let tools = first_tools(&ev);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "activate_skill");
    let desc = tools[0]["description"].as_str().unwrap();
    assert!(desc.contains("call this tool with that skill's name"), "{desc}");
    assert!(
        desc.contains("<skill name=\"pdf\">\n    <description>Fill PDF forms. Use when handling PDFs.</description>"),
        "{desc}"
    );
    assert!(desc.contains("<skill name=\"commit\">"), "{desc}");
    assert_eq!(tools[0]["parameters"]["properties"]["name"]["enum"], json!(["pdf", "commit"]));
    let r = results(&ev);
    let skill_dir = std::fs::canonicalize(dir.parent().unwrap()).unwrap().join(".agents/skills/pdf");
    assert_eq!(
        r[0].1,
        format!(
            "<skill_content name=\"pdf\">\n# PDF\nOpen the form first.\n\nSkill directory: {}\nRelative paths in this skill resolve against the skill directory.\n\n<skill_resources>\n  <file>references/FORMS.md</file>\n  <file>scripts/fill.py</file>\n</skill_resources>\n\nThis skill declares that it needs these tools: Read. Activating it does not grant them; use the tools this agent offers.\n</skill_content>",
            skill_dir.display()
        )
    );
    assert_eq!(r[1].1, "Error: unknown skill 'nope'. Available skills: [pdf, commit]");
    let act = &st["__sherma__"]["activated_skills"];
    assert_eq!(act["pdf"]["scope"], "project");
    assert!(act["pdf"]["location"].as_str().unwrap().ends_with(".agents/skills/pdf/SKILL.md"));
    assert!(act.get("commit").is_none());
    // The document validates cleanly.
    let doc = switchyard::doc::load_path(&dir.join("agent.yaml"));
    let diags = switchyard::validate::validate(&doc, None);
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn agent_skills_by_name_project_shadows_user_and_missing_names_are_reported() {
    let dir = project("names", "[commit, pdf, nowhere]");
    // A project `commit` shadows the user's.
    write(
        &dir.parent().unwrap().join(".agents/skills/commit/SKILL.md"),
        "---\nname: commit\ndescription: Project commit rules.\n---\nProject rules.\n",
    );
    let doc = switchyard::doc::load_path(&dir.join("agent.yaml"));
    let sd = doc.sherma().unwrap();
    let got: Vec<(&str, &str)> =
        sd.agent_skills.skills.iter().map(|k| (k.name.as_str(), k.description.as_str())).collect();
    assert_eq!(got, vec![("commit", "Project commit rules."), ("pdf", "Fill PDF forms. Use when handling PDFs.")]);
    let diags = switchyard::validate::validate(&doc, None);
    let missing = diags.iter().find(|d| d.code == "agent-skill-missing").expect("missing reported");
    assert!(missing.message.contains("`nowhere`") && missing.line == 7 && missing.column == 29, "{missing:#?}");
    let shadow = diags.iter().find(|d| d.code == "agent-skill-shadowed").expect("shadowing reported");
    assert!(shadow.file.starts_with(&home().display().to_string()), "{shadow:#?}");
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:#?}");
}

#[test]
fn agent_skill_from_a_url_is_fetched_when_the_run_starts() {
    let (base, _srv) =
        serve(&[("/s/review/SKILL.md", "---\nname: review\ndescription: Review code.\n---\nLook twice.\n".into())]);
    let dir = project("url", &format!("[\"{base}/s/review/SKILL.md\"]"));
    let replies = "replies:\n  - node: ask\n    tool_calls:\n      - name: activate_skill\n        args: { name: review }\n  - node: ask\n    content: done\n";
    let mut s = start(&dir, replies).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    let st = s.state();
    let r = results(&s.events());
    assert_eq!(r[0].1, "<skill_content name=\"review\">\nLook twice.\n</skill_content>");
    assert_eq!(st["__sherma__"]["activated_skills"]["review"]["scope"], "url");
    // An unreachable one stops the run from starting, naming the URL.
    let dir = project("url-bad", &format!("[\"{base}/s/none/SKILL.md\"]"));
    let err = start(&dir, "replies: []\n").err().expect("no start");
    assert!(err.contains(&format!("{base}/s/none/SKILL.md")) && err.contains("404"), "{err}");
}

#[test]
fn activate_skill_is_unknown_without_agent_skills() {
    let dir = TempDir::new("run-skills-no-agent-skills");
    write(&dir.join("agent.yaml"), &agent_yaml_no_catalogue("", &["activate_skill"]));
    let doc = switchyard::doc::load_path(&dir.join("agent.yaml"));
    let diags = switchyard::validate::validate(&doc, None);
    assert!(
        diags.iter().any(|d| d.code == "sherma-unknown-tool" && d.message.contains("activate_skill")),
        "{diags:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The corpus' weather skill: the resource and asset tools
// ---------------------------------------------------------------------------------------------

#[test]
fn corpus_weather_skill_resources_and_assets_through_the_tool_node() {
    let card_dir = switchyard::testdata::conformance_dir().join("sherma/examples/skills/weather");
    let card = card_dir.join("skill-card.json");
    assert!(card.is_file(), "conformance corpus missing: {}", card.display());
    let dir = TempDir::new("run-skills-corpus");
    let extra = format!("skills:\n  - id: weather\n    version: \"1.0.0\"\n    skill_card_path: {}\n", card.display());
    let tools = ["list_skill_resources", "load_skill_resource", "list_skill_assets", "load_skill_asset"];
    write(&dir.join("agent.yaml"), &agent_yaml(&extra, &tools));
    let replies = r#"replies:
  - node: ask
    tool_calls:
      - name: list_skill_resources
        args: { skill_id: weather }
      - name: load_skill_resource
        args: { skill_id: weather, resource_path: references/open-meteo-api.md }
      - name: list_skill_assets
        args: { skill_id: weather }
      - name: load_skill_asset
        args: { skill_id: weather, asset_path: assets/weather-codes.md }
      - name: load_skill_asset
        args: { skill_id: weather, asset_path: references/open-meteo-api.md }
      - name: list_skill_assets
        args: { skill_id: nope }
  - node: ask
    content: done
"#;
    let mut s = start(&dir, replies).unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    let ev = s.events();
    // The catalogue in CEL: the card's name and description.
    let sys = first_system_prompt(&ev);
    assert!(sys.contains("\"name\":\"Weather Lookup\""), "{sys}");
    let r = results(&ev);
    let file = |rel: &str| std::fs::read_to_string(card_dir.join(rel)).unwrap();
    assert_eq!(r[0].1, r#"["references/open-meteo-api.md"]"#);
    assert_eq!(r[1].1, file("references/open-meteo-api.md"));
    assert_eq!(r[2].1, r#"["assets/weather-codes.md"]"#);
    assert_eq!(r[3].1, file("assets/weather-codes.md"));
    assert_eq!(r[4].1, "Error: 'references/open-meteo-api.md' not found. Available: [assets/weather-codes.md]");
    assert_eq!(r[5].1, "[]");
    // Reading files does not load the skill.
    assert!(s.state()["__sherma__"]["loaded_skills"].as_object().is_none_or(|m| m.is_empty()));
}

#[test]
fn activate_skill_is_left_out_when_no_agent_skill_is_found() {
    let dir = TempDir::new("run-skills-empty");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    write(&dir.join("agent.yaml"), &agent_yaml_no_catalogue("agent_skills: [absent]\n", &["activate_skill"]));
    let mut s = start(&dir, "replies:\n  - node: ask\n    content: ok\n").unwrap_or_else(|e| panic!("{e}"));
    s.run();
    completed(&s);
    assert!(first_tools(&s.events()).is_empty());
}

#[test]
fn a_stop_drops_a_stalled_skill_fetch() {
    let card = json!({"id": "weather", "version": "1.0.0", "name": "W", "description": "D", "files": ["SKILL.md"]});
    let (base, _srv) = serve_slow(&[("/w/card.json", card.to_string())], &["/w/SKILL.md"]);
    let dir = TempDir::new("run-skills-stall");
    let extra = format!("skills:\n  - id: weather\n    version: \"1.0.0\"\n    url: {base}/w/card.json\n");
    write(&dir.join("agent.yaml"), &agent_yaml(&extra, &["load_skill_md"]));
    let replies = "replies:\n  - node: ask\n    tool_calls:\n      - name: load_skill_md\n        args: { skill_id: weather }\n  - node: ask\n    content: done\n";
    let mut s = start(&dir, replies).unwrap_or_else(|e| panic!("{e}"));
    let stop = s.stop_handle();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
    });
    let t0 = std::time::Instant::now();
    s.run();
    assert!(t0.elapsed() < std::time::Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(matches!(s.status(), Status::Finished { status: RunStatus::Stopped, .. }), "{:?}", s.status());
}
