//! The console at the edge: `GET /` (the status page, rendered for who is looking), its scripts
//! (`/console.<hash>.js`, and `/console-admin.<hash>.js` for admins), and sign-in
//! (`signin.rs`). A top-level navigation sends no `Origin`, and a same-origin script needs none,
//! so only the Host check applies to reading; what the session cookie does is checked there.
//!
//! - `signin.rs`: sign-in (the authorization server, or the admin token), sign-out, the session
//!   behind the cookie, and access tokens for the "Try a tool" panels.
//!
//! The one import circle of this folder: this file serves the page and routes `/console/sign-in`
//! and `/console/sign-out` to `signin`, which answers with this file's `respond`.

pub(crate) mod signin;

use worker::{Env, Headers, Method, Response, ResponseBuilder};

use crate::catalog::{Catalog, ConsoleAccess};
use crate::console::account::{AdminView, Viewer, Ways};
use crate::console::session::{self, Seen, Session};
use crate::edge::http::Incoming;
use crate::error::Error;
use crate::head::RequestUrl;

/// Whether the console answers this request: the page and scripts take `GET` and `HEAD` (other
/// methods get the plain 404 of any unknown path); sign-in paths take every method, and say
/// which they allow.
pub fn takes(req: &Incoming, path: &str) -> bool {
    matches!(req.method(), Method::Get | Method::Head) || crate::paths::answers(crate::paths::Owner::Console, path)
}

/// A console path (`crate::console::serves`) that [`takes`] the request.
pub async fn serve(req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    // The page spells URLs on the request's origin: only a host some server allows may name it.
    crate::edge::worker::admission::any_host_allowed(&req, env, catalog)?;
    match url.path.as_str() {
        "/" => page(&req, env, catalog, url, None, 200).await,
        p if crate::console::script::find(p).is_some() => script(&req, p),
        crate::paths::CONSOLE_LIMITS if req.method() == Method::Get => limits(&req, env, catalog).await,
        _ => signin::serve(req, env, catalog, url).await,
    }
}

/// The signed-in user's own state under every server's `rateLimits`: `{principal, servers:
/// [{server, limits}]}`; a 401 without a session.
async fn limits(req: &Incoming, env: &Env, catalog: &Catalog) -> Result<Response, Error> {
    let Some(session) = signin::session(req, env, catalog).await? else {
        return respond(req, 401, vec![("Content-Type", "application/json".into()), ("Cache-Control", "no-store".into())], r#"{"error":"sign in first"}"#.into(), &[]);
    };
    let body = crate::edge::apart(crate::edge::limits::state(catalog.servers.iter().map(|s| &**s), &session.principal.id)).await?;
    respond(req, 200, vec![("Content-Type", "application/json".into()), ("Cache-Control", "no-store".into())], body, &[])
}

/// A script, by its hashed path: the same bytes for every origin, with headers of its own.
fn script(req: &Incoming, path: &str) -> Result<Response, Error> {
    let script = crate::console::script::find(path).ok_or_else(|| Error::RouteNotFound(path.to_string()))?;
    respond(req, 200, crate::console::script::headers(), script.source.to_string(), &[])
}

/// The page for whoever the request's cookie says is looking: everything they may see, the way
/// to sign in when they may see nothing, and for an admin the configuration and health figures.
/// `notice`: a sign-in that failed, said on the page with `status`.
pub async fn page(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl, notice: Option<&str>, status: u16) -> Result<Response, Error> {
    let session = signin::session(req, env, catalog).await?;
    let ways = Ways { oauth: catalog.oauth.is_some(), token: crate::edge::live::admin_token(env).is_some() };
    let mut viewer = Viewer { session: session.as_ref(), ways, admin: None, notice, now_ms: crate::edge::now_ms(), connections: catalog.connections.iter().any(|c| c.grant == crate::connections::Grant::AuthorizationCode) };
    let headers = crate::console::page::headers(&url.origin);
    let body = match session::seen(&catalog.console, session.as_ref()) {
        Seen::SignIn | Seen::Refused => {
            let roles = match &catalog.console {
                ConsoleAccess::SignedIn { roles } => roles.as_slice(),
                _ => &[],
            };
            let status = if session.is_some() {
                403
            } else if status == 200 {
                401
            } else {
                status
            };
            return respond(req, status, headers, crate::console::page::gate(&url.origin, &viewer, roles), &[]);
        }
        Seen::Page => {
            if session.as_ref().is_some_and(Session::is_admin) {
                viewer.admin = Some(admin_view(env, catalog).await?);
            }
            crate::console::page::render(catalog, &url.origin, &viewer)
        }
    };
    respond(req, status, headers, body, &[])
}

/// What an admin sees: the version served and its record, and the last hour's health figures.
async fn admin_view(env: &Env, catalog: &Catalog) -> Result<AdminView, Error> {
    let (version, _) = crate::edge::live::sync(env).await?;
    let record = match version {
        0 => crate::live::store::Version::default(),
        n => crate::edge::live::parse::<crate::live::store::Stored>(&crate::edge::live::ask(env, &crate::live::store::Command::Get { version: n }).await?)?.record,
    };
    let health = crate::edge::health::figures(env, catalog, crate::edge::now_ms()).await?;
    Ok(AdminView { version: record, health })
}

/// A response with `headers`, cookies to set, and `body` (none for `HEAD`).
pub(crate) fn respond(req: &Incoming, status: u16, fields: Vec<(&'static str, String)>, body: String, cookies: &[String]) -> Result<Response, Error> {
    let headers = Headers::new();
    for (name, value) in fields {
        headers.set(name, &value)?;
    }
    for c in cookies {
        headers.append("Set-Cookie", c)?;
    }
    let builder = ResponseBuilder::new().with_status(status).with_headers(headers);
    if req.method() == Method::Head {
        return Ok(builder.empty());
    }
    Ok(builder.fixed(body.into_bytes()))
}
