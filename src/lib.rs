//! mcp-edge: a Model Context Protocol server for Cloudflare Workers that turns HTTP endpoints
//! into MCP tools.
//!
//! # Layout
//!
//! A pure core (no `async`, clock, randomness or I/O) and a thin edge that owns all of those. The
//! modules by layer, top first: a module names only modules listed below it (the order is stated
//! once, in `docs/architecture.md`'s `layers` block, which `tests/layers.rs` holds the code to).
//!
//! - `edge` (wasm32 only): the only code that imports `worker`; it carries out what the core
//!   decides.
//! - [`lease`]: when the Worker may serve a session's calls without its Durable Object.
//! - [`dispatch`]: message + session + catalog → replies and the tool calls to make.
//! - [`console`]: the status page at `/`: every server, its tools and how to connect a client,
//!   and its one script, an MCP client in the browser that tries a tool.
//! - [`codemode`]: code mode: two tools, one searching the tools as TypeScript declarations, one
//!   running a program that calls them (its outcome as a result, its calls' answers as it reads them).
//! - [`discovery`]: catalog mode: three tools that search the tools, describe one, call one.
//! - [`live`]: live changes through the admin API: the layer over the bundled file, one change
//!   applied and validated, the API's routes and errors, the versions kept.
//! - [`protocol`]: MCP methods by area, one file each (lifecycle, tools, resources, prompts,
//!   completion, logging, subscriptions, tasks): each method's typed params and its handler.
//! - [`metrics`]: cumulative metrics since the `health` object was created (calls by outcome,
//!   latency histograms, deployment counters, gauges), and `GET /metrics`'s Prometheus text.
//! - [`tasks`]: MCP Tasks: the record kept per task, its states, the wire shapes of `tasks/*`.
//! - [`config`]: the configuration file: its model, read and validated with precise paths, and
//!   compiled into the catalog.
//! - [`catalog`]: what requests are served from: servers, tools, resources, prompts and auth.
//! - [`tools`]: what a tool is: its arguments validated against its schema; its words as a
//!   catalog search ranks them; catalog mode's three tools as listed.
//! - [`oauth`]: mcp-edge as its own OAuth 2.1 authorization server: clients, the authorization
//!   request, codes, grants and tokens, sign-in, the consent page.
//! - [`connections`]: mcp-edge as an OAuth client of upstream providers (`connections`): each
//!   user's own account or the deployment's; authorization URLs, token forms, sealed records.
//! - [`health`]: the health figures: per tool, the last hour's calls, errors by kind and latency
//!   percentiles, gathered per isolate and kept in the `health` object.
//! - [`session`]: what a session persists, and when it expires.
//! - [`pending`]: deferred (queued and callback) calls: their records and signed callback tokens.
//! - [`envelope`]: what the Worker tells a session object about a forwarded request.
//! - [`auth`]: credentials, principals and roles; JWT claims; session objects keyed by principal.
//! - [`upstream`]: calling an HTTP upstream: request rendering (OpenAPI query styles and
//!   cookies included), the SSRF guard, retries and redirects, reply mapping; and upstream MCP
//!   servers as tool sources (`upstream::mcp`): their messages, replies and tools.
//! - [`audit`]: the audit log's events (admin changes, held definitions and their approval,
//!   denials, limit refusals) as JSON lines and as OTLP log records.
//! - [`framing`]: the exact bytes of an SSE event, an NDJSON line, a JSON body.
//! - [`outbox`]: replies whose stream was gone, kept until the client's next stream carries them.
//! - [`schema`]: JSON Schema validation of tool arguments and results.
//! - [`policy`]: Origin allowlists and CORS headers.
//! - [`trace`]: W3C Trace Context in and out, the spans mcp-edge records (OpenTelemetry's MCP
//!   and HTTP conventions), the sampling decision, and their OTLP encodings.
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes; a message's method parsed into the table.
//! - [`negotiate`]: `Accept` → framing (JSON, SSE, NDJSON); protocol version choice.
//! - [`redact`]: secrets hidden from whatever leaves the server: a secret found in every spelling
//!   it can take (JSON escapes, percent, HTML references, base64), a text redacted whole before
//!   any cut.
//! - [`pins`]: tool definitions' fingerprints, and what a read of an upstream's tools means
//!   against those pinned: served, pinned, or held for an admin's approval.
//! - [`head`]: a request's method, URL and headers as the edge reads them.
//! - [`signing`]: HMAC signatures with a purpose each: callback tokens, request states, the
//!   authorization server's tokens and forms.
//! - [`html`]: HTML escaping for the pages the Worker serves.
//! - [`error`]: the one error enum, and how it maps to JSON-RPC codes and HTTP statuses; the
//!   OAuth and admin answers it carries as data.
//! - [`method`]: the typed method table: every method by its wire name, with its properties.
//! - [`routes`]: route patterns with `{param}` segments.
//! - [`cache`]: the 2026-07-28 cache hint of a result.
//! - [`canonical`]: canonical JSON, for digests that ignore member order.
//! - [`cel`]: the subset of CEL that access rules are written in, parsed and evaluated over JSON.
//! - [`access`]: access rules: allow and deny rules over the caller, the entry, the arguments and
//!   the time, deciding lists without arguments and calls with them.
//! - [`limits`]: rate limits, quotas and concurrency limits on tool calls (`rateLimits`): keys,
//!   token buckets, calendar quotas, concurrency slots, the `RateLimit` headers.
//! - [`admission`]: admission limits that hold under concurrency: counts checked and taken in one
//!   command, the built-in per-address limit, password sign-in's budgets.
//! - [`apps`]: MCP Apps: upstream `ui://` resources renamed under the upstream, and what a client
//!   that did not declare the extension is not shown.
//! - [`weburl`]: URLs as the WHATWG URL Standard parses them, for every security decision
//!   (the SSRF guard, redirects, redirect URIs, `resource`, audiences, metadata documents,
//!   identity providers, callbacks): parsed hosts compared, hostile spellings refused.
//! - [`time`]: milliseconds to ISO 8601 and to a UTC calendar date, and HTTP dates and
//!   `Retry-After` back.
//! - [`logging`]: MCP log levels and the `notifications/message` they filter.
//! - [`paths`]: the paths mcp-edge answers itself, in one table.
//! - [`session_ids`]: session ids as mcp-edge issues them, and the prefix of their objects' names.
//! - [`keys`]: the deployment's own keys by name and their minimum length.
//! - [`hex`]: bytes as hex and back.
//! - [`base64`]: binary content as MCP carries it.
//! - [`versions`]: the protocol revisions this server speaks.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]

pub mod access;
pub mod apps;
pub mod admission;
pub mod audit;
pub mod auth;
pub mod base64;
pub mod cache;
pub mod canonical;
pub mod cel;
pub mod catalog;
pub mod codemode;
pub mod config;
pub mod connections;
pub mod console;
pub mod discovery;
pub mod dispatch;
pub mod envelope;
pub mod error;
pub mod framing;
pub mod head;
pub mod health;
pub mod hex;
pub mod html;
pub mod jsonrpc;
pub mod limits;
pub mod keys;
pub mod lease;
pub mod live;
pub mod logging;
pub mod method;
pub mod metrics;
pub mod negotiate;
pub mod oauth;
pub mod outbox;
pub mod paths;
pub mod pending;
pub mod pins;
pub mod policy;
pub mod protocol;
pub mod redact;
pub mod routes;
pub mod schema;
pub mod session;
pub mod session_ids;
pub mod signing;
pub mod tasks;
pub mod time;
pub mod tools;
pub mod trace;
pub mod upstream;
pub mod versions;
pub mod weburl;

#[cfg(target_arch = "wasm32")]
mod edge;
