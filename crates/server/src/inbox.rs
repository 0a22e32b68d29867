//! The approvals inbox in the browser: its page (built from `ui/`, embedded by `build.rs`) under
//! `/inbox/`, and the live change feed it listens to (`/switchyard/inbox/events`).
//!
//! The page's files hold no data and need no token (the API calls they make do); they are
//! served with a strict Content-Security-Policy: scripts and connections to this server only, no
//! frames, no plugins.

use crate::engine::{Engine, InboxChange};
use std::sync::Arc;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use std::convert::Infallible;
use tokio::sync::broadcast;

include!(concat!(env!("OUT_DIR"), "/inbox_assets.rs"));

/// The page's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// Whether a request path is the page's (served without a token).
pub fn is_page(path: &str) -> bool {
    path == "/inbox" || path.starts_with("/inbox/")
}

pub async fn redirect() -> Redirect {
    Redirect::permanent("/inbox/")
}

pub async fn index() -> Response {
    asset_response("index.html")
}

pub async fn asset(Path(path): Path<String>) -> Response {
    asset_response(&path)
}

fn asset_response(path: &str) -> Response {
    let path = if path.is_empty() { "index.html" } else { path };
    match ASSETS.iter().find(|(p, _)| *p == path) {
        Some((p, bytes)) => (
            [
                (header::CONTENT_TYPE, content_type(p)),
                (header::CONTENT_SECURITY_POLICY, CSP),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::REFERRER_POLICY, "no-referrer"),
                (header::CACHE_CONTROL, if p.ends_with(".html") { "no-cache" } else { "max-age=3600" }),
            ],
            *bytes,
        )
            .into_response(),
        None if ASSETS.is_empty() => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "This server was built without the inbox page. Build it with `npm --prefix ui run build:inbox` \
             (./dev does), then rebuild switchyard. The API works without it.\n",
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "not found\n").into_response(),
    }
}

/// Every change of the inbox as an SSE `change` event (`{"run_id": ...}`); `ready` first, and
/// `resync` when this stream fell behind (re-read the whole list then).
pub async fn events(State(engine): State<Arc<dyn Engine>>) -> Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = engine.watch_inbox();
    let first = futures_util::stream::once(async { Ok(SseEvent::default().event("ready").data("{}")) });
    let rest = futures_util::stream::unfold(rx, |mut rx: broadcast::Receiver<InboxChange>| async move {
        let ev = match rx.recv().await {
            Ok(c) => SseEvent::default().event("change").data(serde_json::json!({"run_id": c.run_id}).to_string()),
            Err(broadcast::error::RecvError::Lagged(_)) => SseEvent::default().event("resync").data("{}"),
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(ev), rx))
    });
    use futures_util::StreamExt;
    Sse::new(first.chain(rest)).keep_alive(KeepAlive::default())
}
