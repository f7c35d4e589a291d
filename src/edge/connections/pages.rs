//! The connections' pages: `GET /connections/<name>/connect?state=…` (the link a call gave:
//! the console sign-in whose principal it was made for, then the consent page), its POST (off
//! to the provider, PKCE's verifier and this browser's binding sealed in the `state`),
//! `GET /connections/callback` (the state checked, claimed once, the code exchanged, the token
//! stored), `GET /connections` (the signed-in user's list) and
//! `POST /connections/<name>/disconnect` (revoked at the provider, then forgotten).

use serde_json::Value;
use worker::{Env, Method, Response};

use crate::catalog::Catalog;
use crate::connections::sealed::{Link, State, STATE_TTL_MS};
use crate::connections::{flow, page, Command, Grant};
use crate::edge::http::Incoming;
use crate::edge::worker::console::signin::{from_console, session};
use crate::edge::worker::oauth::{html, redirect};
use crate::edge::apart;
use crate::error::Error;
use crate::head::RequestUrl;
use crate::paths::{CONNECTIONS, CONNECTIONS_CALLBACK};

/// The cookie that binds a provider's answer to the browser that consented.
const BROWSER_COOKIE: &str = "mcp_edge_connect";

pub async fn serve(mut req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let rest = url.path.strip_prefix(CONNECTIONS).unwrap_or_default();
    let parts: Vec<&str> = rest.split('/').collect();
    match (req.method(), parts.as_slice()) {
        (Method::Get, [""] | []) => list(&req, env, catalog, url).await,
        (Method::Get, ["", "callback"]) => callback(&req, env, catalog, url).await,
        (Method::Get, ["", name, "connect"]) => connect(&req, env, catalog, url, name, None).await,
        (Method::Post, ["", name, "connect"]) => {
            let form = crate::edge::body::form_body(&mut req, crate::edge::body::MAX_CONSOLE_FORM_BYTES).await?;
            let allow = form.iter().any(|(k, v)| k == "decision" && v == "allow");
            connect(&req, env, catalog, url, name, Some(allow)).await
        }
        (Method::Post, ["", name, "disconnect"]) => disconnect(&req, env, catalog, url, name).await,
        _ => refuse(404, "Not found", "There is no such page."),
    }
}

fn refuse(status: u16, heading: &str, message: &str) -> Result<Response, Error> {
    html(status, page::refused(heading, message), None, &[])
}

fn https(url: &RequestUrl) -> bool {
    url.origin.starts_with("https://")
}

/// To the console's sign-in, and back here after it.
fn sign_in(url: &RequestUrl) -> Result<Response, Error> {
    let here = match &url.query {
        q if q.is_empty() => url.path.clone(),
        q => format!("{}?{q}", url.path),
    };
    redirect(&format!("{}?return={}", crate::paths::CONSOLE_SIGNIN, crate::oauth::encode(&here)), &[])
}

/// The connect page, and its form (`decision`: the button pressed).
async fn connect(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl, name: &str, decision: Option<bool>) -> Result<Response, Error> {
    let Some(c) = catalog.connections.iter().find(|c| c.name == name && c.grant == Grant::AuthorizationCode) else {
        return refuse(404, "Not found", "There is no such connection.");
    };
    if decision.is_some() && !from_console(req, url) {
        return refuse(403, "Not connected", "This form was sent from another site, and nothing was done.");
    }
    let keys = apart(super::keys(env)).await?;
    let now = crate::edge::now_ms();
    let Some(link) = url.query_param("state").and_then(|s| Link::open(&keys, &s, name, now)) else {
        return refuse(400, "This link does not work", "This connect link is not valid, or it has expired. Call the tool again for a new one.");
    };
    let Some(signed_in) = apart(session(req, env, catalog)).await? else {
        return sign_in(url);
    };
    if !crate::auth::same_secret(&signed_in.principal.id, &link.principal) {
        return refuse(403, "This link is someone else's", "This connect link was made for another account. Sign out, sign in as the person who called the tool, and open the link again.");
    }
    let provider = apart(super::provider(env, c)).await?;
    let provider_origin = crate::weburl::WebUrl::parse(&provider.authorization_endpoint).map(|u| u.origin()).map_err(Error::Internal)?;
    match decision {
        None => {
            let host = crate::weburl::WebUrl::parse(&provider.authorization_endpoint).ok().and_then(|u| u.host_and_port()).unwrap_or_default();
            let action = format!("{}?{}", url.path, url.query);
            html(200, page::consent(&c.title, signed_in.name(), &c.scopes, &host, &action), Some(&provider_origin), &[])
        }
        Some(false) => refuse(200, "Not connected", "Nothing was connected. You can close this page."),
        Some(true) => {
            let verifier = if c.pkce { Some(crate::edge::ids::random(32)?) } else { None };
            let browser = crate::edge::ids::random(24)?;
            let state = State { principal: link.principal, connection: c.name.clone(), elicitation: link.elicitation, verifier: verifier.clone(), browser: browser.clone(), expires_ms: now + STATE_TTL_MS };
            let sealed = state.seal(&keys, crate::edge::ids::nonce()?);
            let callback = format!("{}{CONNECTIONS_CALLBACK}", url.origin);
            let location = flow::authorize_url(&provider, &callback, &sealed, verifier.as_deref());
            // `Lax`: the provider's redirect back is a top-level navigation from its site.
            let cookie = crate::auth::set_cookie(BROWSER_COOKIE, &browser, STATE_TTL_MS / 1000, https(url), "Lax");
            redirect(&location, &[cookie])
        }
    }
}

/// `GET /connections/callback`: the provider's answer.
async fn callback(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let pairs = crate::oauth::form(&url.query);
    let field = |name: &str| crate::oauth::single(&pairs, name).ok().flatten().map(str::to_string);
    let clear = crate::auth::set_cookie(BROWSER_COOKIE, "", 0, https(url), "Lax");
    let failed = |status: u16, message: String| html(status, page::refused("Not connected", &message), None, std::slice::from_ref(&clear));
    let keys = apart(super::keys(env)).await?;
    let now = crate::edge::now_ms();
    let Some(state) = field("state").and_then(|s| State::open(&keys, &s, now)) else {
        return failed(400, "This answer carries no valid state, or it took too long. Call the tool again for a new link.".into());
    };
    let browser = req.header("cookie").and_then(|c| crate::auth::cookie(&c, BROWSER_COOKIE)).unwrap_or_default();
    if !crate::auth::same_secret(&browser, &state.browser) {
        return failed(400, "This connection was not started in this browser. Open the connect link again.".into());
    }
    // Cross-site, the console's cookie does not come along; when it does, it is the same person.
    if let Some(s) = apart(session(req, env, catalog)).await? {
        if !crate::auth::same_secret(&s.principal.id, &state.principal) {
            return failed(403, "This connection was started for another account than the one signed in.".into());
        }
    }
    let claimed = apart(super::ask(env, &state.principal, &Command::Claim { nonce: crate::oauth::digest(&state.browser), until_ms: state.expires_ms, now_ms: now })).await?;
    if claimed.get("claimed").and_then(Value::as_bool) != Some(true) {
        return failed(400, "This answer was used already.".into());
    }
    if let Some(error) = field("error") {
        return failed(400, format!("The provider did not connect the account: {}", field("error_description").unwrap_or(error)));
    }
    let Some(code) = field("code") else {
        return failed(400, "The provider's answer carries no code.".into());
    };
    let c = super::connection(catalog, &state.connection)?;
    let provider = apart(super::provider(env, c)).await?;
    let redirect_uri = format!("{}{CONNECTIONS_CALLBACK}", url.origin);
    let token = match apart(super::post(&c.private_hosts, &flow::code_form(&provider, &code, &redirect_uri, state.verifier.as_deref()), now, None)).await {
        Ok(t) => t,
        Err(e) => return failed(400, format!("The provider refused the code: {}", e.error)),
    };
    apart(super::ask(env, &state.principal, &Command::Put { principal: state.principal.clone(), connection: c.name.clone(), token, now_ms: now })).await?;
    super::forget(&state.principal, &c.name);
    html(200, page::connected(&c.title), None, &[clear])
}

/// `GET /connections`: the signed-in user's connections.
async fn list(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let Some(signed_in) = apart(session(req, env, catalog)).await? else {
        return sign_in(url);
    };
    let answer = apart(super::ask(env, &signed_in.principal.id, &Command::List { principal: signed_in.principal.id.clone() })).await?;
    let held: Vec<Value> = answer.get("connections").and_then(Value::as_array).cloned().unwrap_or_default();
    let keys = apart(super::keys(env)).await?;
    // A connect link signed for this user, as a call would give it.
    let link = |name: &str| {
        let elicitation = crate::edge::ids::random(16).ok()?;
        let link = crate::connections::sealed::Link { principal: signed_in.principal.id.clone(), connection: name.into(), elicitation, expires_ms: crate::edge::now_ms() + crate::connections::sealed::LINK_TTL_MS };
        Some(crate::paths::connect(name, &link.seal(&keys)))
    };
    let rows: Vec<page::Row<'_>> = catalog
        .connections
        .iter()
        .filter(|c| c.grant == Grant::AuthorizationCode)
        .map(|c| {
            let record = held.iter().find(|h| h.get("connection").and_then(Value::as_str) == Some(c.name.as_str()));
            page::Row {
                name: &c.name,
                title: &c.title,
                since: record.and_then(|r| r.get("sinceMs")).and_then(Value::as_u64).map(crate::time::iso),
                scope: record.and_then(|r| r.get("scope")).and_then(Value::as_str),
                connect: if record.is_none() { link(&c.name) } else { None },
            }
        })
        .collect();
    html(200, page::list(signed_in.name(), &rows), None, &[])
}

/// `POST /connections/<name>/disconnect`, from the list.
async fn disconnect(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl, name: &str) -> Result<Response, Error> {
    if !from_console(req, url) {
        return refuse(403, "Not disconnected", "This form was sent from another site, and nothing was done.");
    }
    let Some(signed_in) = apart(session(req, env, catalog)).await? else {
        return sign_in(url);
    };
    remove(env, catalog, &signed_in.principal.id, name).await?;
    redirect(CONNECTIONS, &[])
}

/// A principal's connection removed: revoked at the provider (RFC 7009) when it has a
/// revocation endpoint, then forgotten. The user's Disconnect and the admin API both come here.
pub(crate) async fn remove(env: &Env, catalog: &Catalog, principal: &str, name: &str) -> Result<bool, Error> {
    let c = super::connection(catalog, name)?;
    let answer = apart(super::ask(env, principal, &Command::Delete { principal: principal.into(), connection: name.into() })).await?;
    super::forget(principal, name);
    let Some(token) = answer.get("token").and_then(crate::connections::Token::from_json) else { return Ok(false) };
    if let Some(form) = super::provider(env, c).await.ok().and_then(|p| flow::revoke_form(&p, &token)) {
        // A provider that cannot be reached keeps its grant; ours is gone either way.
        let _ = super::post(&c.private_hosts, &form, crate::edge::now_ms(), None).await;
    }
    Ok(true)
}
