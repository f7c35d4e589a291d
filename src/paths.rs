//! The paths mcp-edge answers itself, beside the servers' routes: one table, each path with who
//! answers it and whether it names everything under it.

/// Who answers a reserved path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The authorization server (`oauth`, `edge/worker/oauth`): a server that takes its sign-in
    /// (`auth.oauth`) may not route over these (`config` refuses it).
    AuthorizationServer,
    /// The console's sign-in, sign-out and token (`console::session`, `edge/worker/console`).
    Console,
    /// The admin API (`live::api`, `edge/worker/admin.rs`).
    Admin,
    /// Deferred calls' callback URLs (`pending`, `edge/worker/callbacks.rs`).
    Callbacks,
    /// The metrics for a scraper (`metrics`, `edge/worker/metrics.rs`), when
    /// `telemetry.metrics` is configured.
    Metrics,
    /// Connections' pages (`connections`, `edge/connections/pages.rs`), when `connections` is
    /// configured: connect, the provider's callback, disconnect, the signed-in user's list.
    Connections,
}

/// One path mcp-edge answers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserved {
    /// The path, or its route pattern (`{param}` segments, as `routes` reads them).
    pub path: &'static str,
    pub owner: Owner,
    /// Whether every path under it is the owner's too.
    pub prefix: bool,
}

/// The authorization server's endpoints (`oauth::metadata` publishes them).
pub const AUTHORIZE: &str = "/authorize";
pub const TOKEN: &str = "/token";
pub const REGISTER: &str = "/register";
/// One registered client (RFC 7592): its deletion.
pub const REGISTERED_CLIENT: &str = "/register/{client_id}";
pub const REVOKE: &str = "/revoke";
/// Where an identity provider sends the browser back during sign-in.
pub const OAUTH_CALLBACK: &str = "/oauth/callback";
pub const JWKS: &str = "/.well-known/jwks.json";
pub const CONSOLE_SIGNIN: &str = "/console/signin";
pub const CONSOLE_CALLBACK: &str = "/console/callback";
pub const CONSOLE_SIGNOUT: &str = "/console/signout";
/// Where the console page's script gets an access token for a server with `auth.oauth`.
pub const CONSOLE_TOKEN: &str = "/console/token";
/// The signed-in user's own state under each server's `rateLimits`, as JSON.
pub const CONSOLE_LIMITS: &str = "/console/limits";
/// The admin API's root; its routes are under it.
pub const ADMIN_API: &str = "/admin/api";
/// A deferred call's callback URL is this followed by its signed token.
pub const CALLBACKS: &str = "/callbacks/";
/// The metrics in Prometheus text (`telemetry.metrics`).
pub const METRICS: &str = "/metrics";
/// The signed-in user's connections; under it, each connection's pages and the callback.
pub const CONNECTIONS: &str = "/connections";
/// Where a connection's provider sends the browser back.
pub const CONNECTIONS_CALLBACK: &str = "/connections/callback";

/// mcp-edge's own Client ID Metadata Document: its client id at the authorization server of an
/// upstream MCP server (`connections::register`).
pub const CONNECTION_CLIENT: &str = "/connections/client.json";

/// The connect page of connection `name`, for the sealed link `state`.
pub fn connect(name: &str, state: &str) -> String {
    format!("{CONNECTIONS}/{name}/connect?state={state}")
}

/// Every reserved path.
pub const RESERVED: &[Reserved] = &[
    Reserved { path: AUTHORIZE, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: TOKEN, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: REGISTER, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: REGISTERED_CLIENT, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: REVOKE, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: OAUTH_CALLBACK, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: JWKS, owner: Owner::AuthorizationServer, prefix: false },
    Reserved { path: CONSOLE_SIGNIN, owner: Owner::Console, prefix: false },
    Reserved { path: CONSOLE_CALLBACK, owner: Owner::Console, prefix: false },
    Reserved { path: CONSOLE_SIGNOUT, owner: Owner::Console, prefix: false },
    Reserved { path: CONSOLE_TOKEN, owner: Owner::Console, prefix: false },
    Reserved { path: CONSOLE_LIMITS, owner: Owner::Console, prefix: false },
    Reserved { path: ADMIN_API, owner: Owner::Admin, prefix: true },
    Reserved { path: CALLBACKS, owner: Owner::Callbacks, prefix: true },
    Reserved { path: METRICS, owner: Owner::Metrics, prefix: false },
    Reserved { path: CONNECTIONS, owner: Owner::Connections, prefix: true },
];

/// The paths `owner` answers, in the table's order.
pub fn of(owner: Owner) -> impl Iterator<Item = &'static str> {
    RESERVED.iter().filter(move |r| r.owner == owner).map(|r| r.path)
}

/// Whether `owner` answers `path`: one of its paths, or a path under one of its prefixes (the
/// prefix itself, or it followed by `/`).
pub fn answers(owner: Owner, path: &str) -> bool {
    RESERVED.iter().filter(|r| r.owner == owner).any(|r| match path.strip_prefix(r.path) {
        Some(rest) if r.prefix => rest.is_empty() || r.path.ends_with('/') || rest.starts_with('/'),
        Some(rest) => rest.is_empty(),
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_prefixes() {
        assert!(answers(Owner::Console, "/console/signin"));
        assert!(!answers(Owner::Console, "/console/signin/x") && !answers(Owner::Console, "/console"));
        assert!(answers(Owner::Admin, "/admin/api") && answers(Owner::Admin, "/admin/api/servers"));
        assert!(!answers(Owner::Admin, "/admin/apis/servers"));
        assert!(answers(Owner::Callbacks, "/callbacks/abc") && !answers(Owner::Callbacks, "/callbacks"));
        assert_eq!(of(Owner::Console).collect::<Vec<_>>(), [CONSOLE_SIGNIN, CONSOLE_CALLBACK, CONSOLE_SIGNOUT, CONSOLE_TOKEN, CONSOLE_LIMITS]);
        assert_eq!(of(Owner::AuthorizationServer).count(), 7);
    }
}
