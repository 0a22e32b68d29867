//! HTML to text for rag documents (pages and `.html` files). Pure: no I/O.

/// Tags whose content is not text.
const SKIP_TAGS: &[&str] = &["script", "style", "noscript", "template", "svg"];
/// Tags that break lines.
const BLOCK_TAGS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "pre",
    "blockquote",
    "hr",
    "dt",
    "dd",
    "dl",
    "figure",
    "figcaption",
    "title",
    "body",
    "html",
    "form",
    "details",
    "summary",
];

/// The text of an HTML page: markup, scripts, styles and comments removed, block elements on
/// their own lines, entities decoded, runs of blank space collapsed. The `<title>` is kept.
pub fn html_to_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let b = html.as_bytes();
    let mut out = String::with_capacity(html.len() / 2);
    let mut title = String::new();
    let mut i = 0;
    let mut text_start = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if lower[i..].starts_with("<!--") {
            out.push_str(&decode_entities(&html[text_start..i]));
            i = lower[i + 4..].find("-->").map(|j| i + 4 + j + 3).unwrap_or(b.len());
            text_start = i;
            continue;
        }
        // The tag's name.
        let mut j = i + 1;
        let closing = j < b.len() && b[j] == b'/';
        if closing {
            j += 1;
        }
        let name_start = j;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
            j += 1;
        }
        let name = &lower[name_start..j];
        if name.is_empty() && !closing && !lower[i..].starts_with("<!") && !lower[i..].starts_with("<?") {
            // A lone `<` (as in `a < b`): text.
            i += 1;
            continue;
        }
        out.push_str(&decode_entities(&html[text_start..i]));
        let end = tag_end(b, j);
        if !closing && name == "title" {
            let close = lower[end..].find("</title").map(|k| end + k).unwrap_or(b.len());
            title = decode_entities(&html[end..close]).split_whitespace().collect::<Vec<_>>().join(" ");
            i = close;
            text_start = i;
            continue;
        }
        if !closing && SKIP_TAGS.contains(&name) && !html[i..end].ends_with("/>") {
            let pat = format!("</{name}");
            i = match lower[end..].find(&pat) {
                Some(k) => tag_end(b, end + k + pat.len()),
                None => b.len(),
            };
            text_start = i;
            continue;
        }
        if BLOCK_TAGS.contains(&name) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push(' ');
        }
        i = end;
        text_start = i;
    }
    if text_start < b.len() {
        out.push_str(&decode_entities(&html[text_start..]));
    }
    // Collapse spaces within lines and blank lines between them.
    let mut lines: Vec<String> = Vec::new();
    let mut blank = false;
    for l in out.lines() {
        let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
        if l.is_empty() {
            blank = !lines.is_empty();
            continue;
        }
        if blank {
            lines.push(String::new());
            blank = false;
        }
        lines.push(l);
    }
    let body = lines.join("\n");
    if title.is_empty() || body.starts_with(&title) { body } else { format!("{title}\n\n{body}") }
}

/// The index after the `>` closing the tag whose name ends at `j` (quotes respected).
fn tag_end(b: &[u8], mut j: usize) -> usize {
    let mut quote = None;
    while j < b.len() {
        match (quote, b[j]) {
            (None, b'>') => return j + 1,
            (None, q @ (b'"' | b'\'')) => quote = Some(q),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let semi = after.find(';').filter(|&k| k <= 10);
        let decoded = semi.and_then(|k| {
            let name = &after[..k];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                "mdash" => Some('—'),
                "ndash" => Some('–'),
                "hellip" => Some('…'),
                "copy" => Some('©'),
                _ => {
                    let n = name.strip_prefix('#')?;
                    let v = match n.strip_prefix(['x', 'X']) {
                        Some(h) => u32::from_str_radix(h, 16).ok()?,
                        None => n.parse().ok()?,
                    };
                    char::from_u32(v)
                }
            }?;
            Some((c, k))
        });
        match decoded {
            Some((c, k)) => {
                out.push(c);
                rest = &after[k + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_text() {
        let html = "<!DOCTYPE html><html><head><title>Tea &amp; Co</title><style>p{color:red}</style><script>var x = '<p>';</script></head>\
                    <body><h1>Green&nbsp;tea</h1><p>Steep at 80&#176;C for <b>two</b> minutes.</p><!-- note --><ul><li>One</li><li>Two &lt;3</li></ul></body></html>";
        let t = html_to_text(html);
        assert_eq!(t, "Tea & Co\n\nGreen tea\n\nSteep at 80°C for two minutes.\n\nOne\n\nTwo <3");
        assert_eq!(html_to_text("a < b and c > d"), "a < b and c > d");
    }
}
