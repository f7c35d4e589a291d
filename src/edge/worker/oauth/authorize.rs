//! `GET /authorize` (the request checked, then sign-in and consent), `POST /authorize` (the
//! consent form), and `GET /oauth/callback` (the identity provider's answer). A person who
//! allows the client is sent back to it with a single-use code.

use worker::Response;

use super::signin::{self, SIGNED_IN_COOKIE, SIGNED_IN_S};
use super::{default_resource, error_page, html, redirect, register, signing_key, store, Cx};
use crate::edge::body::{form_body, MAX_OAUTH_FORM_BYTES};
use crate::edge::ids::{nonce, random};
use crate::auth::Principal;
use crate::edge::http::Incoming;
use crate::edge::now_ms;
use crate::error::Error;
use crate::oauth::authorize::{self as request, csrf_matches, csrf_token, AuthorizationRequest, Context, Refusal};
use crate::oauth::client::{Client, Origin};
use crate::oauth::grant::CodeRecord;
use crate::oauth::page::{self, Consent, Vouched};
use crate::oauth::store::{token_for, Command};
use crate::oauth::token::CODE_PREFIX;
use crate::oauth::{digest, single, SignIn};

/// The cookie whose random value binds the consent form to this browser.
const CSRF_COOKIE: &str = "mcp_edge_csrf";

/// `GET /authorize`.
pub async fn page(req: Incoming, cx: &Cx<'_>) -> Result<Response, Error> {
    let pairs = crate::oauth::form(&cx.url.query);
    let key = signing_key(cx.env).await?;
    let client_id = match request::client_id(&pairs) {
        Ok(id) => id,
        Err(refusal) => return refuse(refusal, None),
    };
    let client = match register::find(cx, &client_id).await {
        Ok(c) => c,
        Err(Error::Wire(e)) => return error_page(400, &e.description),
        Err(e) => return Err(e),
    };
    // The console's client signs in to the console itself (`<origin>/`), and to nothing else.
    let console = client_id == crate::oauth::client::CONSOLE_CLIENT_ID;
    let console_url = format!("{}/", cx.url.origin);
    let resource = |r: &str| {
        if console {
            (r == console_url).then(|| console_url.clone())
        } else {
            super::resource(cx.catalog, &cx.url.origin, r)
        }
    };
    let fallback = if console { Some(console_url.clone()) } else { default_resource(cx.catalog, &cx.url.origin) };
    let context = Context { issuer: cx.issuer(), resource: &resource, default_resource: fallback, scopes: &cx.server.scopes, now_ms: now_ms() };
    let (request, client) = match (request::check(&pairs, client.as_ref(), &context), client) {
        (Ok(r), Some(c)) => (r, c),
        (Err(refusal), client) => return refuse(refusal, client.as_ref()),
        (Ok(_), None) => return error_page(400, "This client is not registered."),
    };
    match &cx.server.sign_in {
        SignIn::Users(users) => {
            let who = signin::signed_in(&req, &key, users);
            decide(&req, cx, &key, &request, &client, who, None).await
        }
        // The host application's session is checked by an MCP server's own introspection: the
        // admin API has none.
        SignIn::Introspection { .. } if request.resource == super::admin_resource(&cx.url.origin) => {
            error_page(400, "The admin API cannot be authorized with the host application's sign-in; use the admin token")
        }
        SignIn::Introspection { login_url } => match signin::browser_session(&req, cx, &request.resource).await? {
            Some(who) => decide(&req, cx, &key, &request, &client, Some(who), None).await,
            None => redirect(&signin::login_redirect(login_url, cx), &[]),
        },
        SignIn::Oidc(oidc) => signin::provider_redirect(cx, oidc, &key, &request).await,
    }
}

/// An authorization request refused: a page, or the error sent back to the client, at once
/// only to a client the operator configured; any other's is a link the person may follow.
fn refuse(refusal: Refusal, client: Option<&Client>) -> Result<Response, Error> {
    match refusal {
        Refusal::Page(why) => error_page(400, &why),
        Refusal::Redirect { to, .. } if client.is_some_and(request::redirects_at_once) => redirect(&to, &[]),
        Refusal::Redirect { to, description } => {
            let host = crate::oauth::uri::display_host(&to);
            html(400, page::error_return_page(&description, &host, &to), None, &[])
        }
    }
}

/// `GET /oauth/callback`: the identity provider's answer, then consent.
pub async fn callback(req: Incoming, cx: &Cx<'_>) -> Result<Response, Error> {
    let SignIn::Oidc(oidc) = &cx.server.sign_in else { return error_page(404, "This server signs in without an identity provider.") };
    let key = signing_key(cx.env).await?;
    let (request, who) = match signin::provider_callback(&req, cx, oidc, &key).await? {
        Ok(answer) => answer,
        Err(why) => {
            crate::edge::health::count(crate::metrics::Counter::SigninFailures, 1, None);
            return error_page(400, &why);
        }
    };
    let Some(client) = register::find(cx, &request.client_id).await? else { return error_page(400, "This client is no longer registered.") };
    let identity = signin::seal_principal(&key, "oauth.identity", &who, &digest(&request.seal(&key)), request::PAGE_TTL_MS)?;
    decide(&req, cx, &key, &request, &client, Some(who), Some(identity)).await
}

/// With who is signed in: straight back with a code when they allowed this client these scopes
/// before; otherwise the consent page.
async fn decide(req: &Incoming, cx: &Cx<'_>, key: &[u8], request: &AuthorizationRequest, client: &Client, who: Option<Principal>, identity: Option<String>) -> Result<Response, Error> {
    if let Some(why) = who.as_ref().and_then(|w| signin::refusal(cx, &request.resource, w)) {
        return error_page(403, &why);
    }
    // The console is this deployment's own page: whoever signs in has nothing to consent to.
    if let (Some(who), crate::oauth::client::CONSOLE_CLIENT_ID) = (&who, client.client_id.as_str()) {
        return issue_code(cx, key, request, who, &[]).await;
    }
    // Admin rights are granted on the page that says so, every time.
    let admin = request.resource == super::admin_resource(&cx.url.origin);
    if let (Some(who), true, false) = (&who, cx.server.remember_consent, admin) {
        let given = store(cx.env, &Command::ConsentGiven { client_id: client.client_id.clone(), principal: who.id.clone(), resource: request.resource.clone(), scope: request.scope.clone() }).await?;
        if given.get("given").and_then(serde_json::Value::as_bool) == Some(true) {
            return issue_code(cx, key, request, who, &[]).await;
        }
    }
    consent(req, cx, key, request, client, who.as_ref(), identity.as_deref(), None, 200)
}

/// The sign-in and consent page.
#[allow(clippy::too_many_arguments)]
fn consent(req: &Incoming, cx: &Cx<'_>, key: &[u8], request: &AuthorizationRequest, client: &Client, who: Option<&Principal>, identity: Option<&str>, error: Option<(&str, &str)>, status: u16) -> Result<Response, Error> {
    let sealed = request.seal(key);
    let mut cookies = Vec::new();
    let browser = match req.header("cookie").and_then(|c| crate::auth::cookie(&c, CSRF_COOKIE)).filter(|c| c.len() >= 16) {
        Some(value) => value,
        None => {
            let value = random(18)?;
            cookies.push(cx.cookie(CSRF_COOKIE, &value, request::PAGE_TTL_MS / 1000));
            value
        }
    };
    let csrf = csrf_token(key, &browser, &sealed);
    let server = crate::weburl::WebUrl::parse(&request.resource)
        .ok()
        .and_then(|u| cx.catalog.route(u.path()))
        .and_then(|(i, _, _)| cx.catalog.servers.get(i))
        .map(|s| s.title.clone().unwrap_or_else(|| s.name.clone()))
        .unwrap_or_else(|| "this MCP server".into());
    let signed_in_as = who.map(|p| p.email.clone().unwrap_or_else(|| p.subject.clone()));
    let document_host = crate::oauth::uri::display_host(&client.client_id);
    let vouched = match client.origin {
        Origin::Configured => Vouched::Configured,
        Origin::MetadataDocument => Vouched::Document { host: &document_host },
        Origin::Registered { .. } => Vouched::SelfNamed,
    };
    let body = page::consent(&Consent {
        server: &server,
        resource: &request.resource,
        admin: request.resource == super::admin_resource(&cx.url.origin),
        client_name: &client.display_name(),
        vouched,
        redirect_host: &crate::oauth::uri::display_host(&request.redirect_uri),
        scopes: &request.scope,
        signed_in_as: signed_in_as.as_deref(),
        error: error.map(|(why, _)| why),
        request: &sealed,
        csrf: &csrf,
        identity,
        username: error.map_or("", |(_, username)| username),
    });
    html(status, body, page::redirect_origin(&request.redirect_uri).as_deref(), &cookies)
}

/// `POST /authorize`: the consent form.
pub async fn submit(mut req: Incoming, cx: &Cx<'_>) -> Result<Response, Error> {
    // A form posted from another site is refused before anything else is looked at.
    if req.header("origin").is_some_and(|o| o != "null" && o != cx.url.origin) {
        return error_page(403, "This form was sent from another site.");
    }
    let pairs = match form_body(&mut req, MAX_OAUTH_FORM_BYTES).await {
        Ok(p) => p,
        Err(Error::Wire(e)) => return error_page(e.status, &e.description),
        Err(e) => return Err(e),
    };
    let field = |name: &str| single(&pairs, name).ok().flatten().unwrap_or_default().to_string();
    let key = signing_key(cx.env).await?;
    let sealed = field("request");
    let Some(request) = AuthorizationRequest::unseal(&key, &sealed, now_ms()) else {
        return error_page(400, "This sign-in page has expired or was altered. Start again from the application.");
    };
    let browser = req.header("cookie").and_then(|c| crate::auth::cookie(&c, CSRF_COOKIE));
    if !csrf_matches(&key, browser.as_deref(), &sealed, &field("csrf")) {
        return error_page(403, "This form did not come from this browser's sign-in page (the CSRF check failed). Start again from the application.");
    }
    let Some(client) = register::find(cx, &request.client_id).await? else { return error_page(400, "This client is no longer registered.") };
    match field("decision").as_str() {
        "allow" => {}
        "deny" => return redirect(&request.denied(cx.issuer()), &[]),
        _ => return error_page(400, "The form says neither allow nor deny."),
    }
    let (who, cookies) = match &cx.server.sign_in {
        SignIn::Users(users) => match signin::signed_in(&req, &key, users) {
            Some(who) => (who, Vec::new()),
            None => match signin::password(&req, cx, &key, users, &field("username"), &field("password")).await? {
                Ok((who, device)) => {
                    let cookie = signin::seal_principal(&key, "oauth.signin", &who, "", SIGNED_IN_S * 1000)?;
                    (who, std::iter::once(cx.cookie(SIGNED_IN_COOKIE, &cookie, SIGNED_IN_S)).chain(device).collect())
                }
                Err(why) => return consent(&req, cx, &key, &request, &client, None, None, Some((&why, &field("username"))), 401),
            },
        },
        SignIn::Introspection { .. } => match signin::browser_session(&req, cx, &request.resource).await? {
            Some(who) => (who, Vec::new()),
            None => return error_page(401, "You are no longer signed in to the application. Start again from the application."),
        },
        SignIn::Oidc(_) => match signin::unseal_principal(&key, "oauth.identity", &field("identity"), &digest(&sealed)) {
            Some(who) => (who, Vec::new()),
            None => return error_page(400, "The identity provider's sign-in has expired. Start again from the application."),
        },
    };
    if let Some(why) = signin::refusal(cx, &request.resource, &who) {
        return error_page(403, &why);
    }
    if cx.server.remember_consent {
        store(cx.env, &Command::RememberConsent { client_id: client.client_id.clone(), principal: who.id.clone(), resource: request.resource.clone(), scope: request.scope.clone() }).await?;
    }
    issue_code(cx, &key, &request, &who, &cookies).await
}

/// Stores a code for `who` and sends the browser back to the client with it. The code names the
/// grant it will start, whose object keeps it; the client's object indexes that grant now, so
/// that deleting the client revokes it whenever it is exchanged.
async fn issue_code(cx: &Cx<'_>, key: &[u8], request: &AuthorizationRequest, who: &Principal, cookies: &[String]) -> Result<Response, Error> {
    let grant = random(16)?;
    let code = token_for(CODE_PREFIX, &grant, &random(32)?);
    let principal = crate::oauth::token::sealed_upstream(who, key, nonce()?);
    let now = now_ms();
    let record = CodeRecord { request: request.clone(), principal, expires_ms: now + cx.server.code_ttl_ms, grant: None };
    let lasts_until = now + cx.server.code_ttl_ms + cx.server.refresh_ttl_ms;
    store(cx.env, &Command::IndexGrant { client_id: request.client_id.clone(), grant: grant.clone(), expires_ms: lasts_until }).await?;
    store(cx.env, &Command::PutCode { grant, hash: digest(&code), record: Box::new(record) }).await?;
    redirect(&request.success(&code, cx.issuer()), cookies)
}
