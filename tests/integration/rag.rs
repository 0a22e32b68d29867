//! Loki rag nodes: retrieval over a small corpus written by the tests (keyword only), rag
//! nodes in graph runs (state, events, the knowledge-base file reused and rebuilt, in the cache
//! folder and never beside the agent), hybrid retrieval with embeddings from the fake OpenAI
//! server on 127.0.0.1, URL documents from a loopback server, and the errors a user can meet.
//!
//! Knowledge bases go to a cache folder of this test binary ([`cache`], `SWITCHYARD_CACHE_DIR`),
//! never to the user's.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use test_support::fake_llm::{FakeLlm, Reply, status};
use switchyard::llm::config::{LlmConfig, ProviderFile};
use switchyard::run::events::{Event, EventBody};
use switchyard::run::loki::LokiMachine;
use switchyard::run::provider::ScriptedProvider;
use switchyard::run::rag::{Ctl, KbFile, RagStore, Spec};
use switchyard::run::session::{RunOptions, RunSession};
use test_support::TempDir;
use test_support::http::{Page, Site};
use test_support::run::{completed, failure};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// The cache folder knowledge bases go to in this test binary: a temp dir named by
/// `SWITCHYARD_CACHE_DIR`, set once before any run of this binary needs it.
pub fn cache() -> &'static Path {
    static CACHE: OnceLock<PathBuf> = OnceLock::new();
    CACHE.get_or_init(|| {
        let c = TempDir::new("rag-cache").keep();
        // SAFETY: set once, before the rag runs of this binary read it (they all call `cache`).
        unsafe { std::env::set_var(switchyard::run::rag::CACHE_DIR_VAR, &c) };
        c
    })
}

/// Where the knowledge base of rag node `node` of the agent in `dir` is kept (in [`cache`]).
pub fn kb_file(dir: &Path, node: &str) -> PathBuf {
    Spec { node: node.into(), agent_dir: dir.to_path_buf(), ..Spec::default() }.kb_path_in(cache()).unwrap()
}

/// A fresh agent directory (`agents/kb-agent` in a temp dir removed when it is dropped).
fn agent_dir() -> TempDir {
    cache();
    TempDir::new("rag").sub("agents/kb-agent")
}

/// Eight short documents on distinct topics (one HTML page among them).
const CORPUS: &[(&str, &str)] = &[
    (
        "knowledge/bees.md",
        "# Honey bees\n\nWorker bees collect nectar from flowers and carry it back to the hive. \
         In the hive they evaporate the water from the nectar by fanning their wings, which turns it into honey. \
         The honey is stored in wax comb cells and capped with beeswax.\n",
    ),
    (
        "knowledge/volcanoes.md",
        "# Volcanoes\n\nA volcano forms where magma from the mantle rises through the crust. \
         Eruptions release lava, ash and gases. Shield volcanoes such as those of Hawaii build broad islands from runny basalt lava.\n",
    ),
    (
        "knowledge/chess.txt",
        "Chess openings: castling moves the king two squares towards a rook and puts the rook on the other side. \
         Castling protects the king and connects the rooks. It is not allowed while the king is in check.\n",
    ),
    (
        "knowledge/coffee.md",
        "# Brewing coffee\n\nEspresso forces hot water through finely ground coffee at nine bars of pressure. \
         A pour-over uses a paper filter and a slow spiral of water over medium ground beans.\n",
    ),
    (
        "knowledge/space/black_holes.txt",
        "A black hole is a region of spacetime where gravity is so strong that nothing escapes. \
         Its boundary is the event horizon. Stellar black holes form when massive stars collapse.\n",
    ),
    (
        "knowledge/tides.html",
        "<!DOCTYPE html><html><head><title>Ocean tides</title><style>body{font:serif}</style></head><body>\
         <h1>Why the ocean has tides</h1><p>Tides are caused by the <b>gravitational pull</b> of the Moon and the Sun \
         on the oceans. Spring tides happen when Sun and Moon line up.</p><script>track('tides')</script></body></html>\n",
    ),
    (
        "knowledge/photosynthesis.md",
        "# Photosynthesis\n\nPlants capture sunlight with chlorophyll in their leaves and turn carbon dioxide and water into glucose and oxygen.\n",
    ),
    (
        "knowledge/cars.md",
        "# Car engines\n\nA car with a four-stroke petrol engine repeats intake, compression, power and exhaust strokes. \
         Spark plugs ignite the fuel-air mixture in each cylinder of the car.\n",
    ),
];

fn write_corpus(dir: &Path) {
    for (p, text) in CORPUS {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn spec(dir: &Path, docs: &[&str]) -> Spec {
    Spec {
        node: "kb".into(),
        agent_dir: dir.to_path_buf(),
        documents: docs.iter().map(|d| d.to_string()).collect(),
        ..Spec::default()
    }
}

/// Retrieve with a fresh store, collecting log lines.
fn retrieve(
    store: &RagStore,
    spec: &Spec,
    query: &str,
) -> (Result<switchyard::run::rag::Retrieval, String>, Vec<String>) {
    let stop = AtomicBool::new(false);
    let lines = Mutex::new(Vec::new());
    let log = |m: String| lines.lock().unwrap().push(m);
    let ctl = Ctl {
        stop: &stop,
        deadline: Instant::now() + Duration::from_secs(20),
        timeout: Duration::from_secs(20),
        log: &log,
        network: true,
    };
    let r = store.retrieve(spec, query, &ctl);
    drop(ctl);
    (r, lines.into_inner().unwrap())
}

fn config_for(fake: Option<&FakeLlm>, key: bool) -> Arc<LlmConfig> {
    let mut env = BTreeMap::new();
    if let Some(f) = fake {
        env.insert("OPENAI_BASE_URL".to_string(), f.base());
    }
    if key {
        env.insert("OPENAI_API_KEY".to_string(), "test-key".to_string());
    }
    Arc::new(LlmConfig::new(ProviderFile::default(), env))
}

fn write_graph(dir: &Path, graph: &str) -> PathBuf {
    let g = dir.join("graph.yaml");
    std::fs::write(&g, graph).unwrap();
    g
}

fn run(graph: &Path, input: &str, replies: &str, config: Option<Arc<LlmConfig>>) -> RunSession {
    let doc = Arc::new(switchyard::doc::load_path(graph));
    let mut m = LokiMachine::new(doc, input, None).unwrap_or_else(|e| panic!("{e}"));
    if let Some(c) = config {
        m = m.with_llm_config(c);
    }
    let provider = ScriptedProvider::from_str(Path::new("replies.yaml"), replies).expect("replies parse");
    // Embedding servers and URL documents are fakes on 127.0.0.1: the run may use the network
    // (offline.rs: scripted runs are offline otherwise).
    let provider = switchyard::run::provider::Online(Box::new(provider));
    let mut s = RunSession::new(Box::new(m), json!(input), RunOptions::new(Box::new(provider)));
    s.run();
    s
}

fn logs(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Log { source, text } if source.starts_with("rag:") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The `tool_result` of the rag node.
fn rag_result(events: &[Event]) -> (Value, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolResult { name, result, error, .. } if name.starts_with("rag:") => {
                Some((result.clone(), error.clone()))
            }
            _ => None,
        })
        .expect("a rag tool_result event")
}

const GRAPH: &str = r#"
name: kb-agent
version: "1.0"
start: retrieve
nodes:
  retrieve:
    type: rag
    documents: [./knowledge/]
    top_k: 2
    state_updates:
      context: "{{output.context}}"
      sources: "{{output.sources}}"
      first_source: "{{output.sources[0]}}"
    next: answer
  answer:
    type: llm
    prompt: |
      Use this context to answer:
      {{context}}
      Question: {{initial_prompt}}
    state_updates:
      answer: "{{output}}"
    next: done
  done:
    type: end
    output: "{{answer}}"
"#;

const REPLY: &str = "replies:\n  - content: \"They fan the nectar until it becomes honey.\"\n";

// ---------------------------------------------------------------------------------------------
// Keyword retrieval over the corpus
// ---------------------------------------------------------------------------------------------

#[test]
fn keyword_retrieval_finds_the_document_on_the_topic() {
    let dir = agent_dir();
    write_corpus(&dir);
    let spec = spec(&dir, &["./knowledge/"]);
    let store = RagStore::new(None);
    let cases: &[(&str, &str, &str)] = &[
        ("How do bees make honey?", "./knowledge/bees.md", "evaporate the water"),
        ("What causes ocean tides?", "./knowledge/tides.html", "gravitational pull of the Moon"),
        ("Is castling allowed in check?", "./knowledge/chess.txt", "not allowed while the king is in check"),
        ("what is the event horizon", "./knowledge/space/black_holes.txt", "boundary is the event horizon"),
        ("espresso pressure", "./knowledge/coffee.md", "nine bars of pressure"),
        ("spark plugs in a cylinder", "./knowledge/cars.md", "Spark plugs ignite"),
        ("chlorophyll", "./knowledge/photosynthesis.md", "chlorophyll in their leaves"),
        ("lava islands", "./knowledge/volcanoes.md", "build broad islands"),
    ];
    for (query, source, phrase) in cases {
        let (r, _) = retrieve(&store, &spec, query);
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.hybrid);
        let top = &r.hits[0];
        assert_eq!(&top.source, source, "query {query:?}: {:?}", r.hits);
        assert!(top.text.contains(phrase), "query {query:?}: {:?}", top.text);
        assert!(top.score > 0.0);
        assert!(r.hits.len() <= 5, "the default top_k is 5");
    }
    // The HTML page is indexed as text: no markup, no script, the title kept.
    let (r, _) = retrieve(&store, &spec, "tides");
    let text = &r.unwrap().hits[0].text;
    assert!(text.starts_with("Ocean tides"), "{text}");
    assert!(!text.contains('<') && !text.contains("track("), "{text}");
    // A query sharing no word with the corpus finds nothing (keyword only).
    let (r, _) = retrieve(&store, &spec, "quantum chromodynamics");
    assert!(r.unwrap().hits.is_empty());
}

#[test]
fn top_k_and_output_shape() {
    let dir = agent_dir();
    write_corpus(&dir);
    let mut s = spec(&dir, &["./knowledge/", "knowledge/bees.md"]);
    s.top_k = Some(3);
    let (r, _) = retrieve(&RagStore::new(None), &s, "water");
    let r = r.unwrap();
    // "water" is in bees, coffee and photosynthesis; the file listed twice is indexed once.
    assert_eq!(r.kb.document_count(), 8);
    assert_eq!(r.hits.len(), 3);
    let out = r.output();
    let sources: Vec<&str> = out["sources"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut sorted = sources.clone();
    sorted.sort();
    assert_eq!(sorted, ["./knowledge/bees.md", "./knowledge/coffee.md", "./knowledge/photosynthesis.md"]);
    let context = out["context"].as_str().unwrap();
    assert!(context.starts_with(&format!("[Source: {}]\n", sources[0])), "{context}");
    assert_eq!(context.matches("[Source: ").count(), 3);
}

#[test]
fn long_documents_are_chunked_and_the_right_chunk_is_found() {
    let dir = agent_dir();
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "Paragraph {i} talks about filler topic number {i} at some length to take up room.\n\n"
        ));
    }
    text.push_str("The secret ingredient of the recipe is smoked paprika.\n\n");
    for i in 40..60 {
        text.push_str(&format!(
            "Paragraph {i} talks about filler topic number {i} at some length to take up room.\n\n"
        ));
    }
    std::fs::write(dir.join("long.md"), &text).unwrap();
    let mut s = spec(&dir, &["long.md"]);
    s.chunk_size = Some(300);
    s.chunk_overlap = Some(80);
    let (r, _) = retrieve(&RagStore::new(None), &s, "secret ingredient");
    let r = r.unwrap();
    assert!(r.kb.chunk_count() >= 20, "{} chunks", r.kb.chunk_count());
    assert!(r.kb.file.chunks.iter().all(|c| c.text.chars().count() <= 300));
    assert!(r.hits[0].text.contains("smoked paprika"), "{:?}", r.hits[0]);
    // Chunks end at paragraph boundaries: no chunk starts mid-sentence.
    assert!(r.kb.file.chunks.iter().all(|c| c.text.starts_with("Paragraph") || c.text.starts_with("The secret")));
}

// ---------------------------------------------------------------------------------------------
// Graph runs
// ---------------------------------------------------------------------------------------------

#[test]
fn a_rag_node_feeds_the_llm_prompt_and_its_knowledge_base_is_reused_then_rebuilt() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, GRAPH);

    // First run: the knowledge base is built, in the cache folder.
    let s = run(&g, "How do bees make honey?", REPLY, None);
    assert_eq!(completed(&s), json!("They fan the nectar until it becomes honey."));
    let st = s.state();
    let context = st["context"].as_str().unwrap();
    assert!(context.starts_with("[Source: ./knowledge/bees.md]\n# Honey bees"), "{context}");
    // `state_updates` store strings: the list of sources as JSON text.
    let sources: Vec<String> = serde_json::from_str(st["sources"].as_str().unwrap()).unwrap();
    assert_eq!(sources[0], "./knowledge/bees.md");
    assert!(sources.len() <= 2);
    assert_eq!(st["first_source"], json!("./knowledge/bees.md"));
    let events = s.events();
    // The llm prompt got the context.
    let prompt = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::LlmRequest { messages, .. } => Some(messages[0]["content"].as_str().unwrap().to_string()),
            _ => None,
        })
        .unwrap();
    assert!(prompt.contains("[Source: ./knowledge/bees.md]") && prompt.contains("evaporate the water"), "{prompt}");
    // The debugger sees the query and the hits, and how the knowledge base came about.
    let call = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ToolCall { node, call } if call.name == "rag:retrieve" => {
                Some((node.clone(), call.args.clone()))
            }
            _ => None,
        })
        .expect("a rag tool_call");
    assert_eq!(call, ("retrieve".to_string(), json!({"query": "How do bees make honey?", "top_k": 2})));
    let (result, error) = rag_result(&events);
    assert_eq!(error, None);
    assert_eq!(result["mode"], "keyword");
    assert_eq!(result["hits"][0]["source"], "./knowledge/bees.md");
    assert!(result["hits"][0]["score"].as_f64().unwrap() > 0.0);
    let l = logs(&events);
    assert!(
        l.iter().any(|t| t.starts_with("built knowledge base")
            && t.contains("8 documents")
            && t.contains("no knowledge base yet")),
        "{l:?}"
    );
    let kb_path = kb_file(&dir, "retrieve");
    assert!(kb_path.starts_with(cache().join("rag")), "{}", kb_path.display());
    // Nothing is written beside the agent; the file is readable by the user only.
    let mut beside: Vec<String> =
        std::fs::read_dir(&*dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    beside.sort();
    assert_eq!(beside, ["graph.yaml", "knowledge"]);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&kb_path).unwrap().permissions().mode() & 0o777, 0o600);
    let kb: KbFile = serde_yaml::from_str(&std::fs::read_to_string(&kb_path).unwrap()).unwrap();
    assert_eq!(kb.node, "retrieve");
    assert_eq!(kb.documents.len(), 8);
    assert!(kb.documents.iter().all(|d| d.sha256.len() == 64 && d.mtime_ns.is_some()));
    assert_eq!(kb.params.chunk_size, 1000);
    assert_eq!(kb.params.chunk_overlap, 50);
    let mtime = std::fs::metadata(&kb_path).unwrap().modified().unwrap();

    // Second run (a new machine): the file is loaded, not rewritten.
    std::thread::sleep(Duration::from_millis(30));
    let s = run(&g, "How do bees make honey?", REPLY, None);
    completed(&s);
    assert_eq!(std::fs::metadata(&kb_path).unwrap().modified().unwrap(), mtime, "the knowledge base was rewritten");
    let l = logs(&s.events());
    assert!(l.iter().any(|t| t.starts_with("loaded knowledge base")), "{l:?}");

    // A document changes: the knowledge base is updated (that document only).
    std::fs::write(dir.join("knowledge/bees.md"), "# Honey bees\n\nBees feed their queen royal jelly.\n").unwrap();
    let s = run(&g, "What do bees feed the queen?", REPLY, None);
    completed(&s);
    let l = logs(&s.events());
    assert!(
        l.iter().any(|t| t.contains("the documents changed") && t.contains("1 documents read, 7 unchanged")),
        "{l:?}"
    );
    assert!(s.state()["context"].as_str().unwrap().contains("royal jelly"));
    assert_ne!(std::fs::metadata(&kb_path).unwrap().modified().unwrap(), mtime);
    let kb: KbFile = serde_yaml::from_str(&std::fs::read_to_string(&kb_path).unwrap()).unwrap();
    assert!(kb.chunks.iter().any(|c| c.text.contains("royal jelly")));
    assert!(!kb.chunks.iter().any(|c| c.text.contains("evaporate the water")));

    // A new document in the folder is picked up too.
    std::fs::write(dir.join("knowledge/owls.txt"), "Owls hunt at night and swallow their prey whole.").unwrap();
    let s = run(&g, "owls hunt", REPLY, None);
    completed(&s);
    assert_eq!(s.state()["first_source"], json!("./knowledge/owls.txt"));
    assert!(!dir.join("retrieve.yaml").exists());
    // No temp file is left in the cache folder.
    let names: Vec<String> = std::fs::read_dir(kb_path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["retrieve.yaml"]);
}

/// A knowledge base an earlier version kept beside the agent (as upstream Loki does) is read
/// while it fits the node's settings, and never written: a rebuild goes to the cache folder.
#[test]
fn a_knowledge_base_beside_the_agent_is_read_but_never_written() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, GRAPH);
    completed(&run(&g, "castling", REPLY, None));
    let beside = dir.join("retrieve.yaml");
    std::fs::rename(kb_file(&dir, "retrieve"), &beside).unwrap();
    let text = std::fs::read_to_string(&beside).unwrap();

    let s = run(&g, "castling", REPLY, None);
    assert_eq!(s.state()["first_source"], json!("./knowledge/chess.txt"));
    let l = logs(&s.events());
    assert!(l.iter().any(|t| t.starts_with(&format!("loaded knowledge base {}", beside.display()))), "{l:?}");
    assert!(!kb_file(&dir, "retrieve").exists(), "a current knowledge base is not copied");

    // Other build settings: rebuilt into the cache folder; the old file stays as it was, and it
    // is not a document of the folder it sits in.
    let g = write_graph(&dir, &GRAPH.replace("documents: [./knowledge/]", "documents: [./]\n    chunk_size: 400"));
    let s = run(&g, "castling", REPLY, None);
    completed(&s);
    let kb: KbFile = serde_yaml::from_str(&std::fs::read_to_string(kb_file(&dir, "retrieve")).unwrap()).unwrap();
    assert_eq!(kb.params.chunk_size, 400);
    let sources: Vec<&str> = kb.documents.iter().map(|d| d.source.as_str()).collect();
    assert!(!sources.iter().any(|s| s.ends_with("retrieve.yaml")), "{sources:?}");
    assert!(sources.contains(&"./graph.yaml"), "{sources:?}");
    assert_eq!(std::fs::read_to_string(&beside).unwrap(), text);
}

#[test]
fn a_corrupt_knowledge_base_is_rebuilt_with_a_warning() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, GRAPH);
    let kb_path = kb_file(&dir, "retrieve");
    std::fs::create_dir_all(kb_path.parent().unwrap()).unwrap();
    std::fs::write(&kb_path, "switchyard_rag: 1\nnode: [unclosed\n").unwrap();
    let s = run(&g, "castling", REPLY, None);
    completed(&s);
    let l = logs(&s.events());
    assert!(l.iter().any(|t| t.starts_with("warning: knowledge base") && t.contains("unreadable")), "{l:?}");
    assert!(l.iter().any(|t| t.starts_with("built knowledge base")), "{l:?}");
    let kb: KbFile = serde_yaml::from_str(&std::fs::read_to_string(&kb_path).unwrap()).unwrap();
    assert_eq!(kb.documents.len(), 8);
}

#[test]
fn a_missing_document_fails_the_node_naming_it() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g =
        write_graph(&dir, &GRAPH.replace("documents: [./knowledge/]", "documents: [./knowledge/, ./notes/extra.md]"));
    let s = run(&g, "bees", REPLY, None);
    let f = failure(&s);
    assert!(f.contains("rag node 'retrieve'") && f.contains("document './notes/extra.md' not found"), "{f}");
    assert!(f.contains("remove it from `documents`"), "{f}");
    assert_eq!(s.failure().unwrap().0.as_deref(), Some("retrieve"));
    let (_, error) = rag_result(&s.events());
    assert!(error.unwrap().contains("./notes/extra.md"));
    assert!(!dir.join("retrieve.yaml").exists());
    assert!(!kb_file(&dir, "retrieve").exists());
}

#[test]
fn unsupported_documents_and_drivers_are_clear_errors() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, &GRAPH.replace("documents: [./knowledge/]", "documents: [\"pdf:manual.pdf\"]"));
    let f = failure(&run(&g, "bees", REPLY, None));
    assert!(f.contains("'pdf:manual.pdf'") && f.contains("document loader"), "{f}");
    let g = write_graph(&dir, &GRAPH.replace("top_k: 2", "top_k: 2\n    driver: qdrant"));
    let f = failure(&run(&g, "bees", REPLY, None));
    assert!(f.contains("`driver: qdrant` is not supported"), "{f}");
    // A query template naming a missing key fails the run (strict rendering).
    let g = write_graph(&dir, &GRAPH.replace("top_k: 2", "top_k: 2\n    query: \"{{refined}}\""));
    let f = failure(&run(&g, "bees", REPLY, None));
    assert!(f.contains("Failed to interpolate rag node query"), "{f}");
}

/// As shipped, the conformance example's rag node names `./knowledge/` (not in the corpus):
/// covered in tests/run_loki.rs. Here: a rag node as a map branch delivers `{context, sources}`.
#[test]
fn a_rag_map_branch_collects_one_result_per_item() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(
        &dir,
        r#"
name: kb-agent
version: "1.0"
start: each
initial_state:
  topics: ["honey", "castling", "espresso"]
nodes:
  each:
    type: map
    over: "{{topics}}"
    as: topic
    branch: look
    collect_into: found
    next: done
  look:
    type: rag
    documents: [./knowledge/]
    query: "{{topic}}"
    top_k: 1
  done:
    type: end
    output: "ok"
"#,
    );
    let s = run(&g, "", "replies: []\n", None);
    completed(&s);
    let found = s.state()["found"].clone();
    let firsts: Vec<&str> = found.as_array().unwrap().iter().map(|o| o["sources"][0].as_str().unwrap()).collect();
    assert_eq!(firsts, ["./knowledge/bees.md", "./knowledge/chess.txt", "./knowledge/coffee.md"]);
    // Three parallel branches, one build.
    let built = logs(&s.events()).iter().filter(|t| t.starts_with("built knowledge base")).count();
    assert_eq!(built, 1);
}

// ---------------------------------------------------------------------------------------------
// Embeddings (fake OpenAI server on 127.0.0.1)
// ---------------------------------------------------------------------------------------------

fn embedding_graph(extra: &str) -> String {
    GRAPH.replace(
        "top_k: 2",
        &format!("top_k: 2\n    embedding_model: openai:text-embedding-3-small\n    batch_size: 3{extra}"),
    )
}

#[test]
fn hybrid_retrieval_with_embeddings_finds_what_keywords_miss() {
    let fake = FakeLlm::start();
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, &embedding_graph(""));
    // "automobile" appears in no document: keyword search alone finds nothing, the fake
    // model's vectors know it means "car".
    let s = run(&g, "automobile", REPLY, Some(config_for(Some(&fake), true)));
    completed(&s);
    let (result, error) = rag_result(&s.events());
    assert_eq!(error, None);
    assert_eq!(result["mode"], "hybrid");
    assert_eq!(result["hits"][0]["source"], "./knowledge/cars.md", "{result}");
    assert!(result["hits"][0]["keyword"].is_null());
    assert!(result["hits"][0]["cosine"].as_f64().unwrap() > 0.1, "{result}");
    assert_eq!(s.state()["first_source"], json!("./knowledge/cars.md"));

    // The corpus went in batches of `batch_size`, then the query; with the key and the model.
    let reqs = fake.embedding_requests();
    let kb: KbFile = serde_yaml::from_str(&std::fs::read_to_string(kb_file(&dir, "retrieve")).unwrap()).unwrap();
    let chunks = kb.chunks.len();
    assert_eq!(reqs.len(), chunks.div_ceil(3) + 1, "{reqs:?}");
    assert!(reqs.iter().all(|r| r["model"] == "text-embedding-3-small" && r["input"].as_array().unwrap().len() <= 3));
    assert_eq!(reqs.last().unwrap()["input"], json!(["automobile"]));
    assert_eq!(fake.embedding_headers(0)["authorization"], "Bearer test-key");
    assert_eq!(kb.vectors_model.as_deref(), Some("openai:text-embedding-3-small"));
    assert!(kb.chunks.iter().all(|c| c.vector.is_some()));
    assert!(
        logs(&s.events()).iter().any(|t| t.contains(&format!("{chunks} embedded with openai:text-embedding-3-small")))
    );

    // A keyword query still ranks its document first; the corpus is not embedded again.
    let s = run(&g, "How do bees make honey?", REPLY, Some(config_for(Some(&fake), true)));
    completed(&s);
    assert_eq!(s.state()["first_source"], json!("./knowledge/bees.md"));
    let (result, _) = rag_result(&s.events());
    assert!(result["hits"][0]["keyword"].as_f64().is_some() && result["hits"][0]["cosine"].as_f64().is_some());
    assert_eq!(fake.embedding_requests().len(), reqs.len() + 1, "only the query is embedded on reuse");
}

#[test]
fn embedding_errors_are_classified_and_transient_ones_retried() {
    let fake = FakeLlm::start();
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, &embedding_graph(""));
    // A 503 with Retry-After is retried; the run succeeds.
    fake.push_embedding(Reply::Status {
        code: 503,
        body: json!({"error": {"message": "overloaded"}}).to_string(),
        headers: vec![("retry-after-ms".into(), "20".into())],
    });
    let s = run(&g, "automobile", REPLY, Some(config_for(Some(&fake), true)));
    completed(&s);
    assert_eq!(s.state()["first_source"], json!("./knowledge/cars.md"));

    // A 401 fails at once, naming the node, the model, the kind and the key to check.
    std::fs::remove_file(kb_file(&dir, "retrieve")).unwrap();
    let before = fake.embedding_requests().len();
    fake.push_embedding(status(401, json!({"error": {"message": "Incorrect API key provided"}})));
    let f = failure(&run(&g, "automobile", REPLY, Some(config_for(Some(&fake), true))));
    assert!(
        f.contains("rag node 'retrieve'") && f.contains("`openai:text-embedding-3-small`") && f.contains("(auth)"),
        "{f}"
    );
    assert!(f.contains("Incorrect API key provided") && f.contains("OPENAI_API_KEY"), "{f}");
    assert_eq!(fake.embedding_requests().len(), before + 1, "no retry of an auth error");

    // A malformed answer.
    fake.push_embedding(Reply::Garbage);
    fake.push_embedding(Reply::Garbage);
    fake.push_embedding(Reply::Garbage);
    let f = failure(&run(&g, "automobile", REPLY, Some(config_for(Some(&fake), true))));
    assert!(f.contains("(malformed)"), "{f}");
}

#[test]
fn a_stalled_embeddings_server_hits_the_node_timeout_and_a_stop_cancels() {
    let fake = FakeLlm::start();
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, &embedding_graph("\n    timeout: 1"));
    fake.push_embedding(Reply::Stall);
    let t0 = Instant::now();
    let f = failure(&run(&g, "automobile", REPLY, Some(config_for(Some(&fake), true))));
    assert!(f.contains("rag node 'retrieve' timed out after 1s"), "{f}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());

    // A stop while the request hangs ends the retrieval at once.
    let g = write_graph(&dir, &embedding_graph(""));
    fake.push_embedding(Reply::Stall);
    let stop = AtomicBool::new(false);
    let log = |_m: String| {};
    let ctl = Ctl {
        stop: &stop,
        deadline: Instant::now() + Duration::from_secs(60),
        timeout: Duration::from_secs(60),
        log: &log,
        network: true,
    };
    let doc = switchyard::doc::load_path(&g);
    let l = doc.loki().unwrap();
    let switchyard::doc::loki::NodeBody::Rag(r) = &l.node("retrieve").unwrap().body else { panic!() };
    let spec = Spec::of_node("retrieve", &dir, r, ["retrieve"]);
    let store = RagStore::new(Some(config_for(Some(&fake), true)));
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
        });
        let e = store.retrieve(&spec, "automobile", &ctl).unwrap_err();
        assert!(e.contains("stopped"), "{e}");
    });
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn without_a_key_the_node_falls_back_to_keywords_with_a_warning() {
    let dir = agent_dir();
    write_corpus(&dir);
    let g = write_graph(&dir, &embedding_graph(""));
    // No key; the base URL points at a closed loopback port (nothing is called anyway).
    let mut env = BTreeMap::new();
    env.insert("OPENAI_BASE_URL".to_string(), "http://127.0.0.1:9/v1".to_string());
    let s = run(&g, "How do bees make honey?", REPLY, Some(Arc::new(LlmConfig::new(ProviderFile::default(), env))));
    completed(&s);
    assert_eq!(s.state()["first_source"], json!("./knowledge/bees.md"));
    let l = logs(&s.events());
    assert!(
        l.iter().any(|t| t.contains("warning: embedding model `openai:text-embedding-3-small` is unavailable")
            && t.contains("OPENAI_API_KEY")),
        "{l:?}"
    );
    assert_eq!(rag_result(&s.events()).0["mode"], "keyword");
    // Once a key is there, the chunks are embedded (no re-chunking).
    let fake = FakeLlm::start();
    let s = run(&g, "automobile", REPLY, Some(config_for(Some(&fake), true)));
    completed(&s);
    assert!(logs(&s.events()).iter().any(|t| t.contains("chunks lacked embeddings")), "{:?}", logs(&s.events()));
    assert_eq!(rag_result(&s.events()).0["mode"], "hybrid");
}

/// The CLI, configured through the environment only: `OPENAI_BASE_URL` at the fake server.
#[test]
fn the_cli_runs_a_rag_graph_with_embeddings_from_the_environment() {
    let fake = FakeLlm::start();
    let dir = agent_dir();
    write_corpus(&dir);
    write_graph(&dir, &embedding_graph(""));
    std::fs::write(dir.join("replies.yaml"), REPLY).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["run", "--trust", "--allow-network", dir.to_str().unwrap(), "--input", "automobile engines", "--quiet"])
        .env("OPENAI_BASE_URL", fake.base())
        .env("OPENAI_API_KEY", "cli-key")
        .env("SWITCHYARD_PROVIDERS", dir.join("no-providers.yaml"))
        .env(switchyard::run::rag::CACHE_DIR_VAR, cache())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("They fan the nectar"));
    assert!(!fake.embedding_requests().is_empty());
    assert_eq!(fake.embedding_headers(0)["authorization"], "Bearer cli-key");
    let kb: KbFile = serde_yaml::from_str(&std::fs::read_to_string(kb_file(&dir, "retrieve")).unwrap()).unwrap();
    assert_eq!(kb.vectors_model.as_deref(), Some("openai:text-embedding-3-small"));
    assert!(!dir.join("retrieve.yaml").exists());
}

// ---------------------------------------------------------------------------------------------
// URL documents (a loopback server)
// ---------------------------------------------------------------------------------------------

/// A static site on 127.0.0.1: `/guide.html`, `/notes.txt`, `/logo.png`, `/big.txt`, else 404.
fn site() -> Site {
    Site::start([
        (
            "/guide.html",
            Page::new(200, "text/html; charset=utf-8", "<html><head><title>Kite guide</title></head><body><h1>Flying kites</h1><p>Launch the kite with the wind at your back and let out line slowly.</p></body></html>"),
        ),
        ("/notes.txt", Page::new(200, "text/plain", "Sourdough starter needs flour and water every day.")),
        ("/logo.png", Page::new(200, "image/png", vec![0x89, b'P', b'N', b'G', 0, 0, 0])),
        ("/big.txt", Page::new(200, "text/plain", vec![b'a'; 9 * 1024 * 1024])),
    ])
}

#[test]
fn url_documents_are_fetched_once_as_text() {
    let web = site();
    let dir = agent_dir();
    let guide = format!("http://{}/guide.html", web.addr);
    let notes = format!("http://{}/notes.txt", web.addr);
    let s = spec(&dir, &[&guide, &notes]);
    let store = RagStore::new(None);
    let (r, _) = retrieve(&store, &s, "how to launch a kite");
    let r = r.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.hits[0].source, guide);
    assert_eq!(
        r.hits[0].text,
        "Kite guide\n\nFlying kites\n\nLaunch the kite with the wind at your back and let out line slowly."
    );
    let (r, _) = retrieve(&store, &s, "sourdough flour");
    assert_eq!(r.unwrap().hits[0].source, notes);
    // Reused afterwards without fetching again (a new store reads the file).
    let fetched = web.hits().len();
    let (r, _) = retrieve(&RagStore::new(None), &s, "kite");
    assert_eq!(r.unwrap().hits[0].source, guide);
    assert_eq!(web.hits().len(), fetched);
}

#[test]
fn bad_url_documents_fail_naming_them() {
    let web = site();
    let dir = agent_dir();
    let store = RagStore::new(None);
    let missing = format!("http://{}/gone.html", web.addr);
    let e = retrieve(&store, &spec(&dir, &[&missing]), "x").0.unwrap_err();
    assert!(e.contains(&format!("document '{missing}' could not be fetched: HTTP 404")), "{e}");
    let png = format!("http://{}/logo.png", web.addr);
    let e = retrieve(&store, &spec(&dir, &[&png]), "x").0.unwrap_err();
    assert!(e.contains("not a text document") && e.contains("image/png"), "{e}");
    let big = format!("http://{}/big.txt", web.addr);
    let e = retrieve(&store, &spec(&dir, &[&big]), "x").0.unwrap_err();
    assert!(e.contains("larger than 8 MiB"), "{e}");
    // Nothing listens on port 9 of the loopback address.
    let closed = "http://127.0.0.1:9/page";
    let e = retrieve(&store, &spec(&dir, &[closed]), "x").0.unwrap_err();
    assert!(
        e.contains("document 'http://127.0.0.1:9/page' could not be fetched")
            && e.contains("remove it from `documents`"),
        "{e}"
    );
}
