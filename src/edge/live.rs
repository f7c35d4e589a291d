//! The live configuration in this isolate: the version of the live layer it read last, compiled
//! over the bundled file, and when it last asked the store (`object::versions`) for a newer one.
//!
//! Requests never wait on storage for it: an isolate asks at most once every [`REFRESH_MS`],
//! with the version it has, and the store answers with the layer only when it changed. So a
//! change is served everywhere within that bound (the isolate that made it serves it at once),
//! and an object serving a forwarded request first catches up with the Worker that sent it.
//!
//! The layer is only read while the admin API is on (the admin token is set, or the deployment
//! has its own authorization server): without it the file alone is served, with no storage hop.

use std::cell::RefCell;
use std::sync::Arc;

use worker::Env;

use crate::catalog::Catalog;
use crate::edge::configured::{bundled, bundled_file};
use crate::edge::now_ms;
use crate::edge::object::versions::OBJECT;
use crate::envelope::Op;
use crate::error::Error;
use crate::live::store::{Command, Current};
use crate::live::Layer;

/// How long an isolate serves the version it has before asking the store again.
pub const REFRESH_MS: u64 = 2_000;

/// The secret that lets automation use the admin API.
pub const ADMIN_TOKEN: &str = crate::keys::ADMIN_TOKEN;

struct Live {
    version: u64,
    layer: Arc<Layer>,
    checked_ms: u64,
}

thread_local! {
    static LIVE: RefCell<Option<Live>> = const { RefCell::new(None) };
}

/// The version this isolate serves (0: the file).
pub fn version() -> u64 {
    LIVE.with(|l| l.borrow().as_ref().map_or(0, |l| l.version))
}

/// The version served, and its layer.
pub fn layer() -> (u64, Arc<Layer>) {
    LIVE.with(|l| l.borrow().as_ref().map_or((0, Arc::default()), |l| (l.version, l.layer.clone())))
}

/// The admin token, when set (an empty value is not a token).
pub fn admin_token(env: &Env) -> Option<String> {
    crate::edge::secret(env, ADMIN_TOKEN).filter(|t| !t.is_empty())
}

/// Whether live changes can be made, so the layer must be read and lists may change.
pub fn enabled(env: &Env, bundled: &Catalog) -> bool {
    admin_token(env).is_some() || bundled.oauth.is_some()
}

/// The catalog this isolate serves now, as it is: the configured one (`configured`) with the
/// upstream MCP servers' tools, resources and prompts merged in. Shared: a request keeps the
/// catalog it started with while a newer one takes its place.
pub(crate) fn served() -> Result<Arc<Catalog>, Error> {
    crate::edge::configured::base_catalog().map(crate::edge::mcp::discovery::merged)
}

/// The catalog a request is served from, brought up to date first: the live version, at least
/// `seen` (the one the Worker served, for an object), then the upstream MCP servers' lists due
/// for a read. Every request the Worker or a session's object serves starts here.
pub(crate) async fn fresh_catalog(env: &Env, seen: u64) -> Result<Arc<Catalog>, Error> {
    refresh(env, seen).await;
    crate::edge::mcp::discovery::refresh(env).await;
    served()
}

/// Brings this isolate up to date: at most every [`REFRESH_MS`], or at once when a forwarded
/// request says its Worker served a newer version than `seen`.
pub async fn refresh(env: &Env, seen: u64) {
    // Every request begins here: the redactor reads this environment's secrets, and follows the
    // catalog this call installs.
    crate::edge::redaction::follow(env);
    let Ok(bundled) = bundled() else { return };
    if !enabled(env, &bundled) {
        return;
    }
    let known = LIVE.with(|l| l.borrow().as_ref().map(|l| (l.version, l.checked_ms)));
    if let Some((version, checked)) = known {
        if seen <= version && now_ms().saturating_sub(checked) < REFRESH_MS {
            return;
        }
    }
    // The store out of reach: serve what this isolate has, and ask again after the bound.
    if let Err(e) = sync(env).await {
        worker::console_error!("{}", crate::edge::redaction::line(serde_json::json!({"message": "live configuration: the store did not answer", "error": e.message()}).to_string()));
        LIVE.with(|l| {
            if let Some(live) = l.borrow_mut().as_mut() {
                live.checked_ms = now_ms();
            }
        });
    }
}

/// Asks the store now: the current version, installed when it is newer than this isolate's;
/// then the version served and its layer.
pub async fn sync(env: &Env) -> Result<(u64, Arc<Layer>), Error> {
    let known = LIVE.with(|l| l.borrow().as_ref().map(|l| l.version));
    let current: Current = parse(&ask(env, &Command::Head { known }).await?)?;
    match current.layer {
        Some(layer) => install(current.version, layer, None),
        None => LIVE.with(|l| {
            if let Some(live) = l.borrow_mut().as_mut() {
                live.checked_ms = now_ms();
            }
        }),
    }
    Ok(layer())
}

/// A store's answer, read.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_json::from_slice(text.as_bytes()).map_err(|e| Error::Internal(format!("the live store's answer: {e}")))
}

/// Serves `layer` as `version` from now on in this isolate, compiled (or `catalog`, already
/// compiled by the change that made it). A layer the file no longer accepts (a deploy changed
/// what its servers rely on) is refused with a log line: the file is served alone until the
/// layer is fixed or dropped through the admin API.
pub fn install(version: u64, layer: Layer, catalog: Option<Catalog>) {
    let compiled = match catalog {
        Some(catalog) => Ok(catalog),
        None => bundled_file().and_then(|file| crate::live::compile(file, &layer).map_err(|e| Error::Config(e.to_string()))),
    };
    let mut catalog = match compiled {
        Ok(catalog) => catalog,
        Err(e) => {
            worker::console_error!("{}", crate::edge::redaction::line(serde_json::json!({"message": "live configuration: the live layer does not compile over this file; serving the file", "version": version, "error": e.message()}).to_string()));
            match bundled() {
                Ok(bundled) => (*bundled).clone(),
                Err(_) => return,
            }
        }
    };
    for server in &mut catalog.servers {
        // Fresh from the compiler, so not shared yet: no copy is made.
        Arc::make_mut(server).lists_change = true;
    }
    crate::edge::configured::install(Arc::new(catalog));
    let live = Live { version, layer: Arc::new(layer), checked_ms: now_ms() };
    LIVE.with(|l| *l.borrow_mut() = Some(live));
}

/// One command to the store, and its answer's text.
pub async fn ask(env: &Env, command: &Command) -> Result<String, Error> {
    let body = serde_json::to_string(command).map_err(|e| Error::Internal(e.to_string()))?;
    let mut reply = crate::edge::object::registry::call(env, OBJECT, Op::Live, 0, None, body).await?;
    if reply.status_code() == 404 {
        return Err(crate::live::api::AdminError::not_found("no such version: it was never made, or is older than the history keeps").into());
    }
    if reply.status_code() != 200 {
        return Err(Error::Internal(format!("the live store answered {}: {}", reply.status_code(), reply.text().await.unwrap_or_default())));
    }
    Ok(reply.text().await?)
}
