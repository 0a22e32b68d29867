//! HTTP servers on 127.0.0.1 for tests: any axum [`Router`] on a thread of its own
//! ([`serve`], [`serve_at`]), a static [`Site`] that logs what was fetched, and a URL where nothing listens
//! ([`closed_port_url`]).

use axum::Router;
use axum::body::Body;
use axum::http::Uri;
use axum::response::Response;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server started by [`serve`]. Dropping it asks it to shut down (without waiting: a stalled
/// handler must not hold the test up); [`Server::keep`] lets it serve until the process ends.
pub struct Server {
    /// Where it listens (127.0.0.1, a port of its own).
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Server {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serve until the test process ends; the address.
    pub fn keep(mut self) -> SocketAddr {
        if let Some(stop) = self.stop.take() {
            std::mem::forget(stop);
        }
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Serves `app` on 127.0.0.1 (a free port) from a thread of its own with a multi-threaded
/// tokio runtime of two workers, so a handler that sleeps does not hold up the others.
pub fn serve(app: Router) -> Server {
    serve_at(move |_| app)
}

/// [`serve`] for a router that needs its own address (a card that names its URL): `make` gets
/// the address once the port is bound.
pub fn serve_at(make: impl FnOnce(SocketAddr) -> Router + Send + 'static) -> Server {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let app = make(addr);
            addr_tx.send(addr).unwrap();
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
        });
        // Handlers still stalled after the shutdown are dropped with the runtime.
        rt.shutdown_background();
    });
    Server { addr: addr_rx.recv().unwrap(), stop: Some(stop_tx) }
}

/// `http://127.0.0.1:<port>` where nothing listens: a port bound, then let go.
pub fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// One page of a [`Site`].
#[derive(Clone, Debug)]
pub struct Page {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// Answered only after a minute (a stalled server).
    pub slow: bool,
}

impl Page {
    /// 200, `text/plain; charset=utf-8`.
    pub fn text(body: impl Into<String>) -> Page {
        Page::new(200, "text/plain; charset=utf-8", body.into().into_bytes())
    }

    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Page {
        Page { status, content_type: content_type.to_string(), body: body.into(), slow: false }
    }

    /// The same page, answered only after a minute.
    pub fn slow(mut self) -> Page {
        self.slow = true;
        self
    }
}

/// A static site on 127.0.0.1: each path answers its [`Page`], any other path 404 `no such
/// page`; every request's path is logged ([`Site::hits`]). Stops when dropped.
pub struct Site {
    pub addr: SocketAddr,
    hits: Arc<Mutex<Vec<String>>>,
    _server: Server,
}

impl Site {
    pub fn start<P: Into<String>>(pages: impl IntoIterator<Item = (P, Page)>) -> Site {
        let pages: Arc<BTreeMap<String, Page>> = Arc::new(pages.into_iter().map(|(p, page)| (p.into(), page)).collect());
        let hits = Arc::new(Mutex::new(Vec::new()));
        let h2 = hits.clone();
        let app = Router::new().fallback(move |uri: Uri| {
            let hits = h2.clone();
            let pages = pages.clone();
            async move {
                hits.lock().unwrap().push(uri.path().to_string());
                let page = pages.get(uri.path()).cloned().unwrap_or_else(|| Page::new(404, "text/plain", "no such page"));
                if page.slow {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Response::builder().status(page.status).header("content-type", page.content_type).body(Body::from(page.body)).unwrap()
            }
        });
        let server = serve(app);
        Site { addr: server.addr, hits, _server: server }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The paths requested so far, in order.
    pub fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}
