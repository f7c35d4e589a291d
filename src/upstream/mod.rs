//! Calling an HTTP upstream: a configured request rendered from a call's arguments and secrets
//! (`request`, over the URI and text templates of `template`, with the query parameters and
//! cookies of `params`), where it may go (`address`, the
//! SSRF guard), its attempts and redirects (`retry`), and its reply mapped into an MCP result (`reply`, with `stream` for
//! upstreams that stream progress, logs or requests for input). `tools` says what a tool is;
//! this module says how a call to its upstream goes. `mcp`: an upstream that is itself an MCP
//! server, whose tools a server serves too.
//!
//! `stream` maps the results it reads with `reply`'s mapping, and says what a whole reply's body
//! means when it is a streamed event (a result, or a request for input): `stream::outcome`.

pub mod address;
pub mod mcp;
pub mod params;
pub mod reply;
pub mod request;
pub mod retry;
pub mod stream;
pub mod template;

pub use request::{Bindings, HttpCall, RequestTemplate};
