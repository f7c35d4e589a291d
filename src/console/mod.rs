//! The console: the status page at `/`, where a person sees every server, its tools, and how to
//! connect a client, and, signed in, what their credentials show. Pure: the edge
//! (`edge/worker/console/`) passes the catalog, the request's origin and who is looking in, and
//! sends the page out.
//!
//! - [`account`]: who is looking: the account bar, the sign-in page, the admin section.
//! - [`page`]: the HTML and its headers (a strict CSP: one inline style block, one script).
//! - [`script`]: "Try a tool", the page's one script (`try.js`), an MCP client in the browser.
//! - [`connect`]: the auth mode in words, and the copy-ready settings of each client.
//! - [`schema`]: a tool's input schema as a table of arguments.
//! - [`session`]: who is signed in to the console, and what they may see.
//! - [`health`]: the health figures' section (for admins: the page decides who sees it).
//!
//! What the page shows is what the servers show anyone: names, routes, auth modes and
//! transports of every server, and the tools, resources and prompts of servers without `auth`.
//! Never a secret or a secret's name: tool requests (URLs, headers, bodies) are not shown at all.

pub mod account;
pub mod connect;
pub mod health;
pub mod page;
pub mod schema;
pub mod script;
pub mod session;

use crate::catalog::{Catalog, ConsoleAccess, Server};

/// Whether `path` is the console's: the status page (`/`), its scripts, or sign-in and
/// sign-out (`paths::Owner::Console`), when the console is on and no server lives there.
pub fn serves(catalog: &Catalog, path: &str) -> bool {
    let ours = path == "/" || script::find(path).is_some() || crate::paths::answers(crate::paths::Owner::Console, path);
    ours && catalog.console != ConsoleAccess::Off && catalog.route(path).is_none()
}

/// Whether the page lists the server's tools, resources and prompts: as its `tools/list` does
/// for the viewer. Anyone sees those of a server without `auth`; a signed-in viewer also those of
/// a server that takes this deployment's sign-in and whose roles they have; an admin, all.
pub fn shows_entries(server: &Server, viewer: &account::Viewer<'_>) -> bool {
    match (&server.auth, viewer.session) {
        (None, _) => true,
        (Some(_), Some(s)) if s.is_admin() => true,
        (Some(auth), Some(s)) => auth.oauth && s.principal.may(&auth.required_roles),
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_steps_aside_for_a_root_server_and_when_off() {
        let load = |text: &str| crate::config::load(text).unwrap();
        let c = load(r#"{"servers":[{"name":"s","version":"1"}]}"#);
        assert!(serves(&c, "/") && !serves(&c, "/mcp") && !serves(&c, "/x"));
        assert!(serves(&c, script::TRY.path()) && serves(&c, script::ADMIN.path()) && !serves(&c, "/console.js"));
        assert!(serves(&c, "/console/signin") && serves(&c, "/console/callback") && !serves(&c, "/console/other"));
        assert!(!serves(&load(r#"{"servers":[{"name":"s","version":"1","route":"/"}]}"#), "/"));
        let off = load(r#"{"servers":[{"name":"s","version":"1"}],"console":{"access":"off"}}"#);
        assert!(!serves(&off, "/") && !serves(&off, script::TRY.path()) && !serves(&off, "/console/signin"));
        assert!(serves(&load(r#"{"servers":[{"name":"s","version":"1"}],"console":{"access":"public"}}"#), "/"));
    }
}
