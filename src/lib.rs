//! mcp-edge: a Model Context Protocol server for Cloudflare Workers that turns HTTP endpoints
//! into MCP tools.
//!
//! # Layout
//!
//! A pure core (no `async`, clock, randomness or I/O) and a thin edge that owns all of those.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes; params stay raw until the method is known.
//! - [`method`]: the typed method table: every method by its wire name, with its properties.
//! - [`admission`]: admission limits that hold under concurrency: counts checked and taken in one
//!   command, the built-in per-address limit, password sign-in's budgets.
//! - [`auth`]: credentials, principals and roles; JWT claims; session objects keyed by principal.
//! - [`oauth`]: mcp-edge as its own OAuth 2.1 authorization server: clients, the authorization
//!   request, codes, grants and tokens, sign-in, the consent page.
//! - [`console`]: the status page at `/`: every server, its tools and how to connect a client,
//!   and its one script, an MCP client in the browser that tries a tool.
//! - [`html`]: HTML escaping for the pages the Worker serves.
//! - [`health`]: the health figures: per tool, the last hour's calls, errors by kind and latency
//!   percentiles, gathered per isolate and kept in the `health` object.
//! - [`error`]: the one error enum, and how it maps to JSON-RPC codes and HTTP statuses.
//! - [`negotiate`]: `Accept` → framing (JSON, SSE, NDJSON); protocol version choice.
//! - [`versions`]: the protocol revisions this server speaks.
//! - [`keys`]: the deployment's own keys by name and their minimum length.
//! - [`redact`]: secrets hidden from whatever leaves the server: a secret found in every spelling
//!   it can take (JSON escapes, percent, HTML references, base64), a text redacted whole before
//!   any cut.
//! - [`base64`]: binary content as MCP carries it.
//! - [`framing`]: the exact bytes of an SSE event, an NDJSON line, a JSON body.
//! - [`protocol`]: MCP messages by area (lifecycle, tools, resources, prompts, completion, logging).
//! - [`session`]: what a session persists, and when it expires.
//! - [`session_ids`]: session ids as mcp-edge issues them, and the prefix of their objects' names.
//! - [`lease`]: when the Worker may serve a session's calls without its Durable Object.
//! - [`live`]: live changes through the admin API: the layer over the bundled file, one change
//!   applied and validated, the API's routes and errors, the versions kept.
//! - [`dispatch`]: message + session + catalog → replies and the tool calls to make.
//! - [`envelope`]: what the Worker tells a session object about a forwarded request.
//! - [`pending`]: deferred (queued and callback) calls: their records and signed callback tokens.
//! - [`outbox`]: replies whose stream was gone, kept until the client's next stream carries them.
//! - [`config`]: the configuration file: its model, read and validated with precise paths, and
//!   compiled into the catalog.
//! - [`catalog`]: what requests are served from: servers, tools, resources, prompts and auth.
//! - [`cache`]: the 2026-07-28 cache hint of a result.
//! - [`tools`]: what a tool is: its arguments validated against its schema; its words as a
//!   catalog search ranks them.
//! - [`discovery`]: catalog mode: three tools that search the tools, describe one, call one.
//! - [`upstream`]: calling an HTTP upstream: request rendering (OpenAPI query styles and
//!   cookies included), the SSRF guard, retries and redirects, reply mapping; and
//!   upstream MCP servers as tool sources (`upstream::mcp`): their messages, replies and tools.
//! - [`routes`]: route patterns with `{param}` segments.
//! - [`head`]: a request's method, URL and headers as the edge reads them.
//! - [`policy`]: Origin allowlists and CORS headers.
//! - [`weburl`]: URLs as the WHATWG URL Standard parses them, for every security decision
//!   (the SSRF guard, redirects, redirect URIs, `resource`, audiences, metadata documents,
//!   identity providers, callbacks): parsed hosts compared, hostile spellings refused.
//! - `edge` (wasm32 only): the only code that imports `worker`.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]

pub mod admission;
pub mod auth;
pub mod base64;
pub mod cache;
pub mod catalog;
pub mod config;
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
pub mod keys;
pub mod lease;
pub mod live;
pub mod logging;
pub mod method;
pub mod negotiate;
pub mod oauth;
pub mod outbox;
pub mod paths;
pub mod pending;
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
pub mod upstream;
pub mod versions;
pub mod weburl;

#[cfg(target_arch = "wasm32")]
mod edge;
