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
/// file; before the tools of upstream MCP servers join it (`catalog::served`). An invalid
/// bundled file is kept as its message, so every request can report it instead of half-working.
pub(crate) fn base_catalog() -> Result<Arc<Catalog>, Error> {
    INSTALLED.with(|c| c.borrow().clone()).map_or_else(bundled, Ok)
}

/// Serves `catalog` from now on in this isolate (the live layer's, compiled over the file).
pub(crate) fn install(catalog: Arc<Catalog>) {
    INSTALLED.with(|c| *c.borrow_mut() = Some(catalog));
}

/// The bundled configuration, read and compiled once per isolate, when its first request comes.
pub(crate) fn bundled() -> Result<Arc<Catalog>, Error> {
    static CATALOG: OnceLock<Result<Arc<Catalog>, String>> = OnceLock::new();
    CATALOG.get_or_init(|| config::load(&config_text()).map(Arc::new).map_err(|e| e.to_string())).clone().map_err(Error::Config)
}

/// The bundled file as JSON, the base every live layer goes on: parsed once per isolate.
pub(crate) fn bundled_file() -> Result<&'static serde_json::Value, Error> {
    static FILE: OnceLock<Result<serde_json::Value, String>> = OnceLock::new();
    FILE.get_or_init(|| serde_json::from_slice(config_text().as_bytes()).map_err(|e| e.to_string())).as_ref().map_err(|e| Error::Config(e.clone()))
}
