//! External links (issue 27 item 8): the webview never navigates to a link; the UI asks the user
//! ("Open in your browser?", the full URL shown) and then calls `open_external`, which opens the
//! URL in the system browser. Only absolute `http`, `https` and `mailto` URLs are accepted, checked
//! here whatever the UI checked. The URL is one argument of the opener, never a shell string.
//!
//! The opener: `$SWITCHYARD_BROWSER` when set (a program run with the URL as its one argument;
//! the window tests point it at a script), else `xdg-open` (Linux), `open` (macOS), or
//! `rundll32 url.dll,FileProtocolHandler` (Windows).

use crate::commands::CmdError;
use std::process::{Command, Stdio};
use tauri::Url;

/// Longest URL accepted.
const MAX_URL: usize = 8192;

/// The URL to open (the parser's normalised form), or why not.
pub fn external_url(url: &str) -> Result<String, String> {
    if url.len() > MAX_URL {
        return Err(format!("the link is {} characters long; links over {MAX_URL} are not opened", url.len()));
    }
    if url.chars().any(char::is_control) {
        return Err("the link has control characters in it; it is not opened".into());
    }
    let parsed = Url::parse(url.trim()).map_err(|e| format!("not a link the browser can open ({e}): {url}"))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some_and(|h| !h.is_empty()) => Ok(parsed.to_string()),
        "mailto" => Ok(parsed.to_string()),
        "http" | "https" => Err(format!("the link has no host: {url}")),
        other => Err(format!("only http, https and mailto links are opened, not `{other}:` links ({url})")),
    }
}

/// The program that opens URLs, and the arguments before the URL.
fn opener() -> (String, Vec<String>) {
    if let Some(b) = std::env::var_os("SWITCHYARD_BROWSER").filter(|v| !v.is_empty()) {
        return (b.to_string_lossy().into_owned(), Vec::new());
    }
    if cfg!(target_os = "macos") {
        ("open".into(), Vec::new())
    } else if cfg!(windows) {
        ("rundll32".into(), vec!["url.dll,FileProtocolHandler".into()])
    } else {
        ("xdg-open".into(), Vec::new())
    }
}

/// Starts `program args… url` with nothing attached; reaped on a thread of its own.
fn launch(program: &str, args: &[String], url: &str) -> Result<(), String> {
    let mut child = Command::new(program)
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start {program} to open the link ({e}); copy the link and open it in your browser: {url}"))?;
    // xdg-open returns once the browser has the URL.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Opens `url` (an http, https or mailto link) in the system browser. The UI asks the user first.
#[tauri::command]
pub async fn open_external(url: String) -> Result<(), CmdError> {
    let url = external_url(&url).map_err(CmdError::new)?;
    let (program, args) = opener();
    launch(&program, &args, &url).map_err(CmdError::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_http_https_and_mailto_links_are_opened() {
        assert_eq!(external_url("https://example.com/guide?a=1#x").unwrap(), "https://example.com/guide?a=1#x");
        assert_eq!(external_url("http://127.0.0.1:8080/").unwrap(), "http://127.0.0.1:8080/");
        assert_eq!(external_url("HTTPS://Example.COM").unwrap(), "https://example.com/");
        assert!(external_url("mailto:someone@example.com").is_ok());
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,<script>x</script>",
            "vbscript:x",
            "smb://host/share",
            "/relative/path",
            "example.com",
            "https://",
            "",
        ] {
            assert!(external_url(bad).is_err(), "{bad} must be refused");
        }
        // A newline could split an argument list elsewhere; a URL with one is refused.
        assert!(external_url("https://example.com/\n--help").is_err());
        assert!(external_url(&format!("https://example.com/{}", "a".repeat(MAX_URL))).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn the_url_is_one_argument_of_the_opener() {
        let dir = std::env::temp_dir().join(format!("switchyard-links-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("args");
        // A stand-in browser that writes how many arguments it got and the first one.
        let script = format!("printf '%s\\n' \"$#\" \"$1\" > '{}'", out.display());
        let url = external_url("https://example.com/a b?c=d&e=f;rm -rf $HOME").unwrap();
        launch("sh", &["-c".into(), script, "sh".into()], &url).unwrap();
        let mut got = String::new();
        for _ in 0..600 {
            got = std::fs::read_to_string(&out).unwrap_or_default();
            if got.lines().count() == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(got, format!("1\n{url}\n"));
        assert!(url.contains("%20") && url.contains("$HOME"), "{url}");
        let e = launch("/nonexistent/browser", &[], &url).unwrap_err();
        assert!(e.contains("copy the link") && e.contains(&url), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
