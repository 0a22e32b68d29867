//! What `switchyard test` writes for machines: the results as JSON (`--json`) and as JUnit XML
//! (`--junit`, what CI systems show), written with quick-xml's writer (escaped text and
//! attributes; characters XML 1.0 cannot hold are dropped).

use crate::run::Outcome;
use crate::{SuiteResult, Totals};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use serde_json::json;

/// The JSON report: `{"totals": {...}, "suites": [...]}` (types in `ui/src/contract/suite.ts`).
pub fn to_json(results: &[SuiteResult]) -> serde_json::Value {
    json!({ "totals": Totals::of(results), "suites": results })
}

/// Text XML 1.0 can hold: tab, newline, carriage return and the characters from U+0020 on
/// (minus the surrogates and U+FFFE/U+FFFF, which a Rust string cannot hold or which we drop).
fn xml_safe(s: &str) -> String {
    s.chars().filter(|&c| matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')).collect()
}

fn secs(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// The JUnit XML report: one `<testsuite>` per suite file, one `<testcase>` per case (a
/// `<failure>` with the first failing expectation and its position, an `<error>` for a case
/// that could not run, `<skipped>`); a suite that could not run is one errored test case.
pub fn to_junit(results: &[SuiteResult]) -> String {
    let t = Totals::of(results);
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let total_ms: u64 = results.iter().flat_map(|s| &s.cases).map(|c| c.duration_ms).sum();
    let n = |v: u32| v.to_string();
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let _ = w.write_event(Event::Start(BytesStart::new("testsuites").with_attributes([
        ("name", "switchyard test"),
        ("tests", &n(t.cases + t.broken_suites)),
        ("failures", &n(t.failed)),
        ("errors", &n(t.errors + t.broken_suites)),
        ("skipped", &n(t.skipped)),
        ("time", &secs(total_ms)),
    ])));
    for s in results {
        let st = Totals::of(std::slice::from_ref(s));
        let ms: u64 = s.cases.iter().map(|c| c.duration_ms).sum();
        let file = xml_safe(&s.file);
        let _ = w.write_event(Event::Start(BytesStart::new("testsuite").with_attributes([
            ("name", file.as_str()),
            ("tests", &n(st.cases + st.broken_suites)),
            ("failures", &n(st.failed)),
            ("errors", &n(st.errors + st.broken_suites)),
            ("skipped", &n(st.skipped)),
            ("time", &secs(ms)),
        ])));
        if s.broken() {
            let text: Vec<String> = s
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| {
                    let hint = d.hint.as_deref().map(|h| format!("\n  hint: {h}")).unwrap_or_default();
                    format!("{}:{}:{}: {} [{}]{hint}", d.file, d.line, d.column, d.message, d.code)
                })
                .collect();
            let first = s.diagnostics.iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default();
            let _ = w.write_event(Event::Start(BytesStart::new("testcase").with_attributes([
                ("name", "(suite)"),
                ("classname", file.as_str()),
                ("time", "0.000"),
            ])));
            let _ = w.write_event(Event::Start(
                BytesStart::new("error").with_attributes([("message", xml_safe(&first).as_str()), ("type", "suite")]),
            ));
            let _ = w.write_event(Event::Text(BytesText::new(&xml_safe(&text.join("\n")))));
            let _ = w.write_event(Event::End(BytesEnd::new("error")));
            let _ = w.write_event(Event::End(BytesEnd::new("testcase")));
        }
        for c in &s.cases {
            let name = xml_safe(&c.name);
            let line = c.line.to_string();
            let tc = BytesStart::new("testcase").with_attributes([
                ("name", name.as_str()),
                ("classname", file.as_str()),
                ("time", &secs(c.duration_ms)),
                ("file", file.as_str()),
                ("line", line.as_str()),
            ]);
            let (tag, message, kind, body) = match c.outcome {
                Outcome::Passed => {
                    let _ = w.write_event(Event::Empty(tc));
                    continue;
                }
                Outcome::Skipped => ("skipped", c.message.clone().unwrap_or_default(), String::new(), String::new()),
                Outcome::Error => {
                    ("error", c.message.clone().unwrap_or_default(), "error".to_string(), c.message.clone().unwrap_or_default())
                }
                Outcome::Failed => match c.first_failure() {
                    Some(f) => {
                        let hint = f.hint.as_deref().map(|h| format!("\n  hint: {h}")).unwrap_or_default();
                        let mut body = format!("{}:{}:{}: {}{hint}", f.file, f.line, f.column, f.message);
                        if let Some(m) = &c.message {
                            body = format!("{m}\n{body}");
                        }
                        (
                            "failure",
                            c.message.clone().map(|m| format!("{m}: {}", f.message)).unwrap_or_else(|| f.message.clone()),
                            format!("expect-{}", f.expectation.split('.').next().unwrap_or("")),
                            body,
                        )
                    }
                    None => ("failure", c.message.clone().unwrap_or_default(), "expect".into(), c.message.clone().unwrap_or_default()),
                },
            };
            let _ = w.write_event(Event::Start(tc));
            let mut el = BytesStart::new(tag).with_attributes([("message", xml_safe(&message).as_str())]);
            if !kind.is_empty() {
                el.push_attribute(("type", kind.as_str()));
            }
            if body.is_empty() {
                let _ = w.write_event(Event::Empty(el));
            } else {
                let _ = w.write_event(Event::Start(el));
                let _ = w.write_event(Event::Text(BytesText::new(&xml_safe(&body))));
                let _ = w.write_event(Event::End(BytesEnd::new(tag)));
            }
            let _ = w.write_event(Event::End(BytesEnd::new("testcase")));
        }
        let _ = w.write_event(Event::End(BytesEnd::new("testsuite")));
    }
    let _ = w.write_event(Event::End(BytesEnd::new("testsuites")));
    let mut out = String::from_utf8(w.into_inner()).unwrap_or_default();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_safe_drops_what_xml_cannot_hold() {
        assert_eq!(xml_safe("a\u{1b}[31mb\u{0}c\td\n"), "a[31mbc\td\n");
    }
}
