//! What runs in the Worker: the fetch handler (`entry`: preflight, Origin, auth, routing, the log
//! line), `admission` (the Host check, the client's address, rate limits and the built-in
//! per-address limit), the transports it serves (`streamable`: Streamable HTTP, `legacy_sse`:
//! 2024-11-05, `stateless` and `listen`: the 2026-07-28 revision), `auth` (credentials checked
//! before the body is read), `initialize` (a session begun without waiting for its object), `introspection` (the host application's answer for a credential:
//! for `auth`, and for sign-in at `/authorize`), `leases` (a session's plain calls served
//! without the object hop, or forwarded), `callbacks` (where a callback tool's result arrives),
//! `console` (the status page at `/`), `admin` (the admin API: live changes, versions), `metrics`
//! (`GET /metrics` for a scraper), `queue`
//! (the consumer of queued calls), `oauth/` (the authorization server's endpoints, and its access
//! tokens checked), and `log` (the log line each request writes).

pub(super) mod admin;
pub(super) mod admission;
pub(super) mod auth;
pub(super) mod callbacks;
pub(super) mod console;
pub(super) mod entry;
pub(super) mod initialize;
pub(super) mod introspection;
pub(super) mod leases;
pub(super) mod legacy_sse;
pub(super) mod listen;
pub(super) mod log;
pub(super) mod metrics;
pub(super) mod oauth;
pub(super) mod pins;
pub(super) mod queue;
pub(super) mod stateless;
pub(super) mod streamable;
