//! Dynamic Client Registration (RFC 7591) at `/register`, its deletion (RFC 7592), and finding a
//! client by id: configured, a Client ID Metadata Document, or registered.

use std::cell::RefCell;
use std::collections::HashMap;

use worker::{Response, ResponseBuilder};

use super::{json, store, Cx};
use crate::edge::ids::random;
use crate::auth::same_secret;
use crate::edge::http::Incoming;
use crate::error::Error;
use crate::oauth::client::{self, Client, Issued, MAX_METADATA_BYTES};
use crate::oauth::store::Command;
use crate::oauth::{digest, OAuthError, Registration};
use crate::upstream::reply::Upstream;

/// Metadata documents are cached this long (their own `Cache-Control` is not consulted: a
/// shorter, fixed bound keeps a changed document's effect predictable).
const DOCUMENT_CACHE_MS: u64 = 5 * 60 * 1000;
const DOCUMENT_CACHE_ENTRIES: usize = 256;

thread_local! {
    /// Client ID Metadata Documents by URL: the client, and until when.
    static DOCUMENTS: RefCell<HashMap<String, (Client, u64)>> = RefCell::new(HashMap::new());
}

fn bearer(req: &Incoming) -> Option<String> {
    crate::auth::authorization(&req.header("authorization")?, "bearer")
}

/// `POST /register`.
pub async fn register(mut req: Incoming, cx: &Cx<'_>) -> Result<Response, Error> {
    match &cx.server.registration {
        Registration::Off => return Err(OAuthError::new(404, "invalid_request", "this authorization server does not register clients").into()),
        Registration::Open => {}
        Registration::Token(name) => {
            let expected = crate::edge::secret(cx.env, name).unwrap_or_default();
            if !bearer(&req).is_some_and(|t| !expected.is_empty() && same_secret(&t, &expected)) {
                return Err(OAuthError::new(401, "invalid_token", "registration needs the initial access token as a bearer token").into());
            }
        }
    }
    let content_type = req.header("content-type").unwrap_or_default().to_ascii_lowercase();
    if !content_type.starts_with("application/json") {
        return Err(OAuthError::new(400, "invalid_client_metadata", "the registration request must be application/json").into());
    }
    let body = crate::edge::body::read_limited(&mut req, MAX_METADATA_BYTES as u64).await.map_err(|e| match e {
        Error::PayloadTooLarge(_) => OAuthError::new(413, "invalid_client_metadata", format!("the registration request exceeds {MAX_METADATA_BYTES} bytes")).into(),
        other => other,
    })?;
    let client_id = format!("mcpe_c_{}", random(16)?);
    let issued = Issued { client_id: client_id.clone(), secret: random(32)?, registration_token: random(32)?, now_secs: crate::edge::now_ms() / 1000 };
    let (client, answer) = client::register(&body, &issued, &format!("{}/register/{client_id}", cx.issuer()))?;
    store(cx.env, &Command::PutClient { client }).await?;
    json(201, &answer)
}

/// `DELETE /register/<client_id>`: with the client's registration access token (RFC 7592), or
/// by the operator with the initial access token. Its grants are revoked with it.
pub async fn delete(req: Incoming, cx: &Cx<'_>, client_id: &str) -> Result<Response, Error> {
    let token = bearer(&req).ok_or_else(|| OAuthError::new(401, "invalid_token", "deleting a client needs its registration access token"))?;
    let operator = match &cx.server.registration {
        Registration::Token(name) => crate::edge::secret(cx.env, name).is_some_and(|v| !v.is_empty() && same_secret(&v, &token)),
        _ => false,
    };
    let registration_token = (!operator).then(|| digest(&token));
    let answer = store(cx.env, &Command::DeleteClient { client_id: client_id.into(), registration_token }).await?;
    // Each grant lives in an object of its own: revoked there, and listed as revoked.
    let grants = answer.get("grants").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
    for grant in grants.iter().filter_map(serde_json::Value::as_str) {
        store(cx.env, &Command::Revoke { grant: grant.into(), presented: None, client_id: None, now_ms: crate::edge::now_ms() }).await?;
    }
    Ok(ResponseBuilder::new().with_status(204).empty())
}

/// The client `client_id` names, if any: configured ones first, then a metadata document URL,
/// then the store.
pub async fn find(cx: &Cx<'_>, client_id: &str) -> Result<Option<Client>, Error> {
    if client_id == crate::oauth::client::CONSOLE_CLIENT_ID {
        return Ok(console(cx));
    }
    if let Some(c) = cx.server.clients.iter().find(|c| c.client_id == client_id) {
        return Ok(Some(c.clone()));
    }
    match client::metadata_url(client_id, &cx.server.private_hosts) {
        Some(_) if !cx.server.metadata_documents => return Ok(None),
        Some(Ok(())) => return document(cx, client_id).await.map(Some),
        Some(Err(why)) => return Err(OAuthError::invalid_client(why).into()),
        None => {}
    }
    let answer = store(cx.env, &Command::GetClient { client_id: client_id.into() }).await?;
    Ok(super::answered(answer.get("client").filter(|c| !c.is_null())))
}

/// The console's own client, while there is a console: public (PKCE), and sent back only to the
/// console's callback on this origin.
fn console(cx: &Cx<'_>) -> Option<Client> {
    use crate::oauth::client::CONSOLE_CLIENT_ID as CLIENT_ID;
    use crate::paths::CONSOLE_CALLBACK as CALLBACK_PATH;
    (cx.catalog.console != crate::catalog::ConsoleAccess::Off).then(|| Client {
        client_id: CLIENT_ID.into(),
        name: Some("mcp-edge console".into()),
        redirect_uris: vec![format!("{}{CALLBACK_PATH}", cx.issuer())],
        auth_method: crate::oauth::client::AuthMethod::None,
        secret: None,
        origin: crate::oauth::client::Origin::Configured,
        issued_at: 0,
        application_type: None,
    })
}

/// A Client ID Metadata Document, fetched through the SSRF guard (no redirects, a size bound,
/// a short timeout) and cached.
async fn document(cx: &Cx<'_>, url: &str) -> Result<Client, Error> {
    let now = crate::edge::now_ms();
    if let Some(c) = DOCUMENTS.with(|d| d.borrow().get(url).filter(|(_, until)| *until > now).map(|(c, _)| c.clone())) {
        return Ok(c);
    }
    let call = super::outbound(cx, "GET", url, vec![("Accept".into(), "application/json".into())], None, 5000);
    let unusable = |why: String| Error::from(OAuthError::invalid_client(format!("the client metadata document at {url} {why}")));
    let body = match crate::edge::upstream::perform(&call, MAX_METADATA_BYTES as u64).await {
        Upstream::Reply { status: 200, truncated_at: None, body, .. } => body,
        Upstream::Reply { truncated_at: Some(_), .. } => return Err(unusable(format!("is larger than {MAX_METADATA_BYTES} bytes"))),
        Upstream::Reply { status, .. } => return Err(unusable(format!("answered HTTP {status}"))),
        Upstream::TimedOut { .. } => return Err(unusable("did not answer in time".into())),
        Upstream::Failed(why) => return Err(unusable(format!("could not be fetched: {why}"))),
    };
    let client = client::from_metadata_document(url, &body)?;
    DOCUMENTS.with(|d| {
        let mut cache = d.borrow_mut();
        if cache.len() >= DOCUMENT_CACHE_ENTRIES {
            cache.retain(|_, (_, until)| *until > now);
        }
        if cache.len() < DOCUMENT_CACHE_ENTRIES {
            cache.insert(url.to_string(), (client.clone(), now + DOCUMENT_CACHE_MS));
        }
    });
    Ok(client)
}

/// A configured client's secret value, for its authentication.
pub fn named_secret(cx: &Cx<'_>, client: &Client) -> Option<String> {
    match &client.secret {
        Some(client::Secret::Named(name)) => crate::edge::secret(cx.env, name),
        _ => None,
    }
}
