//! Redaction at every exit: the isolate's [`Redactor`] (`crate::redact`), and the one way a
//! message becomes something an exit takes.
//!
//! Which secrets: the values of the names the catalog served lists (`Catalog::secret_names`: the
//! own keys, password and identity-provider secrets, auth tokens, every `{env.NAME}` a template
//! names), read from the environment once per isolate (`edge::secret`) and built again when the
//! catalog changes, since a live edit may name a new secret; the signing key the authorization
//! server's store generated, once this isolate holds it ([`hide`]); and, per call, the caller's
//! own credentials (`PendingCall::redact`, [`for_call`]).
//!
//! Where: every exit takes a [`Redacted`], which only a redactor makes, so a new kind of message
//! cannot reach the client, or storage, unredacted:
//! - a stream's messages: `LineWriter::send_line`/`send_event` (every framing, the GET stream,
//!   legacy SSE, listen streams, replays) and `Streams::send` (the SSE event log, which is also
//!   stored for `Last-Event-ID`); producers send through `Outlet::send`, which seals each message,
//!   with the call's own credentials too when `calls::run` wrapped it (`Outlet::Call`);
//! - buffered replies: `framing::json_body` (`http::respond`, stateless requests, tasks) and
//!   error bodies (`http::error_response`, `failure_response`);
//! - storage: the outbox (`outbox::Kept::new`); a task's record and a deferred call's record,
//!   redacted whole as they are stored (`tasks::store`, `deferred::store_record`), results and all;
//! - logs: [`line`], for every line that can carry upstream text or an error message.
//!
//! A trace exporter, when there is one, redacts each span's text here too, with [`current`].

use std::cell::RefCell;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::dispatch::PendingCall;
use crate::redact::{Redacted, Redactor};

#[derive(Default)]
struct Isolate {
    /// The environment secrets are read from: an isolate serves one deployment.
    env: Option<worker::Env>,
    /// The catalog the redactor was built for, held so that no other can take its address.
    catalog: Option<Arc<Catalog>>,
    /// Values this isolate holds beyond its environment's: a generated signing key.
    generated: Vec<String>,
    redactor: Option<Arc<Redactor>>,
}

thread_local! {
    static ISOLATE: RefCell<Isolate> = RefCell::default();
}

/// Where a request begins (the Worker's and the objects'): the environment whose secrets are
/// looked for, and the redactor brought up to date with the catalog.
pub(crate) fn follow(env: &worker::Env) {
    ISOLATE.with(|i| {
        let mut isolate = i.borrow_mut();
        if isolate.env.is_none() {
            isolate.env = Some(env.clone());
            isolate.redactor = None;
        }
    });
    current();
}

/// The deployment's redactor, for the catalog this isolate serves now.
pub(crate) fn current() -> Arc<Redactor> {
    let catalog = crate::edge::configured::base_catalog().ok();
    ISOLATE.with(|i| {
        let mut isolate = i.borrow_mut();
        let same = match (&isolate.catalog, &catalog) {
            (Some(built), Some(now)) => Arc::ptr_eq(built, now),
            (None, None) => true,
            _ => false,
        };
        if let (true, Some(redactor)) = (same, &isolate.redactor) {
            return redactor.clone();
        }
        // A catalog that failed to load still runs with the deployment's own keys.
        let names: Vec<String> = match &catalog {
            Some(catalog) => catalog.secret_names(),
            None => crate::keys::OWN_KEYS.iter().map(|k| k.to_string()).collect(),
        };
        let values: Vec<String> = match &isolate.env {
            Some(env) => names.iter().filter_map(|name| crate::edge::secret(env, name)).collect(),
            None => Vec::new(),
        };
        let redactor = Arc::new(Redactor::new(values.iter().chain(&isolate.generated)));
        // Not kept before the environment is known: the next look builds it with the values.
        if isolate.env.is_some() {
            isolate.catalog = catalog;
            isolate.redactor = Some(redactor.clone());
        }
        redactor
    })
}

/// A secret this isolate came to hold that is in no environment variable: the authorization
/// server's generated signing key.
pub(crate) fn hide(value: &str) {
    ISOLATE.with(|i| {
        let mut isolate = i.borrow_mut();
        if !isolate.generated.iter().any(|v| v == value) {
            isolate.generated.push(value.to_string());
            isolate.redactor = None;
        }
    });
}

/// The redactor of one call: the deployment's, with the caller's own credentials when the call
/// carries any it does not already hide; and whether it has such credentials.
pub(crate) fn for_call(call: &PendingCall) -> (Arc<Redactor>, bool) {
    let deployment = current();
    let own: Vec<&String> = call.redact.iter().filter(|value| !deployment.secrets().contains(value)).collect();
    if own.is_empty() {
        return (deployment, false);
    }
    (Arc::new(deployment.with(own)), true)
}

/// A message as an exit takes it: redacted with the deployment's secrets.
pub(crate) fn seal(message: String) -> Redacted {
    current().seal(message)
}

/// A log line as it may be written.
pub(crate) fn line(text: String) -> String {
    current().redact_owned(text)
}
