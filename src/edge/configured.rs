//! The configuration this isolate serves, compiled: the bundled file, read once, or the live
//! version installed over it. It sits below everything that reads the catalog (the live layer,
//! redaction, upstream MCP servers' lists), so none of them needs another to find it.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use crate::catalog::Catalog;
use crate::config;
use crate::error::Error;

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/config.js")]
extern "C" {
    /// The text of the configuration bundled with the Worker.
    fn config_text() -> String;
}

thread_local! {
    /// The live version's catalog, once `live` has installed one.
    static INSTALLED: RefCell<Option<Arc<Catalog>>> = const { RefCell::new(None) };
}

/// The catalog as configured: the live version this isolate installed last, or the bundled
/// file; before the tools of upstream MCP servers join it (`catalog::served`).
pub(crate) fn base_catalog() -> Result<Arc<Catalog>, Error> {
    INSTALLED.with(|c| c.borrow().clone()).map_or_else(bundled, Ok)
}

/// Serves `catalog` from now on in this isolate (the live layer's, compiled over the file).
pub(crate) fn install(catalog: Arc<Catalog>) {
    INSTALLED.with(|c| *c.borrow_mut() = Some(catalog));
}

/// The bundled configuration, compiled: once per isolate, by `start` or at its first request.
static CATALOG: OnceLock<Result<Arc<Catalog>, String>> = OnceLock::new();

/// The largest configuration compiled at the isolate's start. Cloudflare refuses a Worker whose
/// start takes more than its startup limit (1 s of CPU); 1,000 tools (758 KB) measured 100–130 ms
/// here, so a larger file is compiled at its first request instead, as every file was before.
const AT_START_BYTES: usize = 1 << 20;

/// Compiles the bundled configuration as the module is instantiated: at the isolate's start,
/// which Cloudflare often runs while the client's TLS handshake completes, rather than on its
/// first request (docs/performance.md, "The configuration at start-up").
#[worker::event(start)]
pub fn start() {
    let text = config_text();
    if text.len() <= AT_START_BYTES {
        CATALOG.get_or_init(|| compile(&text));
    }
}

/// The bundled configuration, read and compiled once per isolate. An invalid file is kept as
/// its message, so every request can report it.
pub(crate) fn bundled() -> Result<Arc<Catalog>, Error> {
    CATALOG.get_or_init(|| compile(&config_text())).clone().map_err(Error::Config)
}

fn compile(text: &str) -> Result<Arc<Catalog>, String> {
    config::load(text).map(Arc::new).map_err(|e| e.to_string())
}

/// The bundled file as JSON, the base every live layer goes on: parsed once per isolate.
pub(crate) fn bundled_file() -> Result<&'static serde_json::Value, Error> {
    static FILE: OnceLock<Result<serde_json::Value, String>> = OnceLock::new();
    FILE.get_or_init(|| serde_json::from_slice(config_text().as_bytes()).map_err(|e| e.to_string())).as_ref().map_err(|e| Error::Config(e.clone()))
}
