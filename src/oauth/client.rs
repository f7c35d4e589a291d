//! OAuth clients: registered at `/register` (RFC 7591, managed per RFC 7592), named by a Client ID
//! Metadata Document URL, or listed in the configuration; and how each proves itself at the token
//! endpoint.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{digest, uri, OAuthError};
use crate::auth::same_secret;

/// The largest registration body or metadata document read.
/// The console's own client of the authorization server (`console::session`): never registered,
/// never stored, and no configured client may take its id.
pub const CONSOLE_CLIENT_ID: &str = "mcp-edge-console";

pub const MAX_METADATA_BYTES: usize = 16 * 1024;

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// A public client: PKCE alone binds the code to it.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

impl AuthMethod {
    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
        }
    }
}

/// Where a confidential client's secret is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Secret {
    /// The SHA-256 of the secret we issued at registration.
    Hash(String),
    /// The name of the Worker secret holding it (configured clients).
    Named(String),
}

/// Where a client came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// `/register`: the SHA-256 of its registration access token.
    Registered { registration_token: String },
    Configured,
    MetadataDocument,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Client {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub auth_method: AuthMethod,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Secret>,
    pub origin: Origin,
    #[serde(default)]
    pub issued_at: u64,
    /// `web` or `native` (OpenID Connect Dynamic Client Registration, SEP-837); `None` for
    /// clients registered before it was kept, and for configured and metadata-document clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_type: Option<AppType>,
}

/// What kind of application a registered client is (SEP-837): which redirect URIs it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppType {
    /// A web application: https redirect URIs on hosts other than loopback.
    Web,
    /// An app on the user's device: loopback http, private-use schemes, or https.
    Native,
}

impl AppType {
    pub fn name(self) -> &'static str {
        match self {
            AppType::Web => "web",
            AppType::Native => "native",
        }
    }
}

/// The registration's `application_type`, checked against its redirect URIs. OpenID Connect's
/// default is `web`; a client that leaves it out and registers a loopback or private-use
/// redirect URI is taken as `native`, which it is (SEP-837 asks clients to say so because
/// servers that applied the default refused them). A client that says `web` is held to it.
fn application_type(value: Option<&Value>, redirect_uris: &[String]) -> Result<AppType, OAuthError> {
    let app = match value {
        None | Some(Value::Null) if redirect_uris.iter().all(|u| uri::fits_web(u)) => AppType::Web,
        None | Some(Value::Null) => AppType::Native,
        Some(Value::String(t)) if t == "web" => AppType::Web,
        Some(Value::String(t)) if t == "native" => AppType::Native,
        Some(other) => return Err(OAuthError::new(400, "invalid_client_metadata", format!("application_type {other} is not web or native"))),
    };
    if let (AppType::Web, Some(uri)) = (app, redirect_uris.iter().find(|u| !uri::fits_web(u))) {
        return Err(OAuthError::new(400, "invalid_redirect_uri", format!("{uri:?}: a web application's redirect URIs are https on a host other than loopback; register it with \"application_type\": \"native\"")));
    }
    Ok(app)
}

impl Client {
    /// The Worker secret that holds a configured client's secret, if it has one.
    pub fn secret_name(&self) -> Option<&str> {
        match &self.secret {
            Some(Secret::Named(name)) => Some(name),
            _ => None,
        }
    }

    /// The name the consent page shows: the client's own, marked as unverified, or its id.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.client_id.clone())
    }

    /// Checks the credentials a token or revocation request presented: `secret` is what the
    /// client sent, `named` the value of a configured client's secret. Public clients present
    /// none (and may not: a secret sent by a public client is refused, so a mix-up is noticed).
    pub fn authenticate(&self, method: AuthMethod, secret: Option<&str>, named: Option<&str>) -> Result<(), OAuthError> {
        let wrong = || OAuthError::invalid_client("client authentication failed");
        match (&self.secret, secret) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(wrong()),
            (Some(_), None) => Err(OAuthError::invalid_client(format!("this client authenticates with {}", self.auth_method.name()))),
            (Some(Secret::Hash(hash)), Some(s)) => (same_secret(&digest(s), hash) && method != AuthMethod::None).then_some(()).ok_or_else(wrong),
            (Some(Secret::Named(_)), Some(s)) => named.filter(|n| !n.is_empty() && same_secret(n, s)).map(|_| ()).ok_or_else(wrong),
        }
    }
}

/// What the edge draws at random for a new registration.
#[derive(Debug, Clone)]
pub struct Issued {
    pub client_id: String,
    pub secret: String,
    pub registration_token: String,
    pub now_secs: u64,
}

/// A registration request (RFC 7591 §2) checked and turned into a client, with the answer
/// (§3.2.1) to send; `registration_uri` is where RFC 7592 manages it.
pub fn register(body: &[u8], issued: &Issued, registration_uri: &str) -> Result<(Client, Value), OAuthError> {
    let bad = |why: String| OAuthError::new(400, "invalid_client_metadata", why);
    if body.len() > MAX_METADATA_BYTES {
        return Err(OAuthError::new(413, "invalid_client_metadata", format!("the registration request exceeds {MAX_METADATA_BYTES} bytes")));
    }
    let request: Value = serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let Some(fields) = request.as_object() else { return Err(bad("the body is not a JSON object".into())) };
    let redirect_uris = redirect_uris(fields.get("redirect_uris"))?;
    let app = application_type(fields.get("application_type"), &redirect_uris)?;
    let auth_method = match fields.get("token_endpoint_auth_method") {
        None => AuthMethod::ClientSecretBasic,
        Some(Value::String(m)) if m == "none" => AuthMethod::None,
        Some(Value::String(m)) if m == "client_secret_basic" => AuthMethod::ClientSecretBasic,
        Some(Value::String(m)) if m == "client_secret_post" => AuthMethod::ClientSecretPost,
        Some(other) => return Err(bad(format!("token_endpoint_auth_method {other} is not none, client_secret_basic or client_secret_post"))),
    };
    for (field, allowed) in [("grant_types", &["authorization_code", "refresh_token"][..]), ("response_types", &["code"][..])] {
        if let Some(v) = fields.get(field) {
            let values = v.as_array().ok_or_else(|| bad(format!("{field} must be an array")))?;
            if let Some(other) = values.iter().find(|g| !g.as_str().is_some_and(|g| allowed.contains(&g))) {
                return Err(bad(format!("{field} {other} is not supported (only {})", allowed.join(", "))));
            }
        }
    }
    let name = match fields.get("client_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) if n.chars().count() <= 200 => Some(n.clone()),
        Some(_) => return Err(bad("client_name must be a string of at most 200 characters".into())),
    };
    let confidential = auth_method != AuthMethod::None;
    let client = Client {
        client_id: issued.client_id.clone(),
        name: name.clone(),
        redirect_uris: redirect_uris.clone(),
        auth_method,
        secret: confidential.then(|| Secret::Hash(digest(&issued.secret))),
        origin: Origin::Registered { registration_token: digest(&issued.registration_token) },
        issued_at: issued.now_secs,
        application_type: Some(app),
    };
    let mut answer = json!({
        "client_id": issued.client_id,
        "client_id_issued_at": issued.now_secs,
        "redirect_uris": redirect_uris,
        "token_endpoint_auth_method": auth_method.name(),
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "application_type": app.name(),
        "registration_access_token": issued.registration_token,
        "registration_client_uri": registration_uri,
    });
    if let Some(obj) = answer.as_object_mut() {
        if let Some(n) = name {
            obj.insert("client_name".into(), Value::String(n));
        }
        if confidential {
            obj.insert("client_secret".into(), Value::String(issued.secret.clone()));
            obj.insert("client_secret_expires_at".into(), json!(0));
        }
        // Echo what the client said of itself that we keep no opinion on.
        for field in ["client_uri", "logo_uri", "scope", "software_id", "software_version"] {
            if let Some(v @ Value::String(_)) = fields.get(field) {
                obj.insert(field.into(), v.clone());
            }
        }
    }
    Ok((client, answer))
}

fn redirect_uris(value: Option<&Value>) -> Result<Vec<String>, OAuthError> {
    let bad = |why: String| OAuthError::new(400, "invalid_redirect_uri", why);
    let items = value.and_then(Value::as_array).filter(|a| !a.is_empty()).ok_or_else(|| bad("redirect_uris must be a non-empty array".into()))?;
    if items.len() > 20 {
        return Err(bad("at most 20 redirect_uris may be registered".into()));
    }
    items
        .iter()
        .map(|u| {
            let u = u.as_str().filter(|u| u.len() <= 2000).ok_or_else(|| bad("each redirect URI must be a string of at most 2000 characters".into()))?;
            match uri::refuse_registration(u) {
                Some(why) => Err(bad(why)),
                None => Ok(u.to_string()),
            }
        })
        .collect()
}

/// Whether a `client_id` names a Client ID Metadata Document: `None` when it is no URL (a plain
/// id, looked up in the store); `Some(Err(why))` when it is one that may not be fetched. A
/// document URL is `https` with a path, in the form the WHATWG parser serializes it (no `.` or
/// `..` segments, default port, case or escapes left to normalize, so the string compared with
/// the document's `client_id` names the URL fetched), without user info or a fragment. `http`
/// is accepted only for the hosts in `private_hosts` (local development), compared parsed.
pub fn metadata_url(client_id: &str, private_hosts: &[String]) -> Option<Result<(), String>> {
    if !client_id.contains("://") {
        return None;
    }
    let refused = |why: String| Some(Err(format!("the client_id {client_id:?} is not a usable metadata document URL: {why}")));
    let url = match crate::weburl::WebUrl::parse(client_id) {
        Ok(url) => url,
        Err(why) => return refused(why),
    };
    let Some(host) = url.host() else { return refused("it has no host".into()) };
    match url.scheme() {
        "https" => {}
        "http" if crate::weburl::listed(private_hosts, host) => {}
        _ => return refused("it must be https".into()),
    }
    if url.has_credentials() || url.fragment().is_some() {
        return refused("it may not carry user info or a fragment".into());
    }
    if url.path().len() <= 1 {
        return refused("it needs a path".into());
    }
    if url.as_str() != client_id {
        return refused(format!("write it as {}", url.as_str()));
    }
    Some(Ok(()))
}

/// A Client ID Metadata Document checked against the URL it was fetched from.
pub fn from_metadata_document(url: &str, body: &[u8]) -> Result<Client, OAuthError> {
    let bad = |why: String| OAuthError::invalid_client(format!("the client metadata document at {url}: {why}"));
    if body.len() > MAX_METADATA_BYTES {
        return Err(bad(format!("larger than {MAX_METADATA_BYTES} bytes")));
    }
    let doc: Value = serde_json::from_slice(body).map_err(|_| bad("not JSON".into()))?;
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err(bad("its client_id is not its own URL".into()));
    }
    match doc.get("token_endpoint_auth_method").and_then(Value::as_str) {
        None | Some("none") => {}
        Some(other) => return Err(bad(format!("token_endpoint_auth_method {other:?} is not supported (only none)"))),
    }
    if doc.get("client_secret").is_some() || doc.get("client_secret_expires_at").is_some() {
        return Err(bad("a metadata document may not carry a client secret".into()));
    }
    let redirect_uris = redirect_uris(doc.get("redirect_uris")).map_err(|e| bad(e.description))?;
    Ok(Client {
        client_id: url.to_string(),
        name: doc.get("client_name").and_then(Value::as_str).map(|n| n.chars().take(200).collect()),
        redirect_uris,
        auth_method: AuthMethod::None,
        secret: None,
        origin: Origin::MetadataDocument,
        issued_at: 0,
        application_type: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued() -> Issued {
        Issued { client_id: "c-1".into(), secret: "s3cret-s3cret".into(), registration_token: "rat-1".into(), now_secs: 1_700_000_000 }
    }

    #[test]
    fn public_and_confidential_registrations() {
        let body = br#"{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"token_endpoint_auth_method":"none","client_name":"Claude","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}"#;
        let (client, answer) = register(body, &issued(), "https://mcp.test/register/c-1").unwrap();
        assert_eq!((client.auth_method, client.secret.is_none()), (AuthMethod::None, true));
        assert_eq!(answer["client_id"], "c-1");
        assert_eq!(answer["token_endpoint_auth_method"], "none");
        assert_eq!(answer["registration_access_token"], "rat-1");
        assert_eq!(answer.get("client_secret"), None);
        assert!(client.authenticate(AuthMethod::None, None, None).is_ok());
        assert_eq!(client.authenticate(AuthMethod::ClientSecretPost, Some("x"), None).unwrap_err().error, "invalid_client");

        let (client, answer) = register(br#"{"redirect_uris":["http://127.0.0.1:9/cb"]}"#, &issued(), "u").unwrap();
        assert_eq!(answer["token_endpoint_auth_method"], "client_secret_basic");
        assert_eq!(answer["client_secret"], "s3cret-s3cret");
        assert_eq!(answer["client_secret_expires_at"], 0);
        assert!(client.authenticate(AuthMethod::ClientSecretBasic, Some("s3cret-s3cret"), None).is_ok());
        assert_eq!(client.authenticate(AuthMethod::ClientSecretBasic, Some("s3cret-s3creT"), None).unwrap_err().status, 401);
        assert_eq!(client.authenticate(AuthMethod::None, None, None).unwrap_err().error, "invalid_client");
        // The stored form keeps hashes, never the secrets themselves.
        let stored = serde_json::to_string(&client).unwrap();
        assert!(!stored.contains("s3cret") && !stored.contains("rat-1"), "{stored}");
    }

    #[test]
    fn bad_registrations_get_rfc7591_errors() {
        let error = |body: &[u8]| register(body, &issued(), "u").unwrap_err();
        assert_eq!(error(b"{not json").error, "invalid_client_metadata");
        assert_eq!(error(b"[1]").error, "invalid_client_metadata");
        assert_eq!(error(br#"{"redirect_uris":[]}"#).error, "invalid_redirect_uri");
        assert_eq!(error(br#"{}"#).error, "invalid_redirect_uri");
        assert_eq!(error(br#"{"redirect_uris":["http://evil.test/cb"]}"#).error, "invalid_redirect_uri");
        assert_eq!(error(br#"{"redirect_uris":["javascript:alert(1)"]}"#).error, "invalid_redirect_uri");
        assert_eq!(error(br#"{"redirect_uris":["https://a.test/cb"],"grant_types":["client_credentials"]}"#).error, "invalid_client_metadata");
        assert_eq!(error(br#"{"redirect_uris":["https://a.test/cb"],"token_endpoint_auth_method":"private_key_jwt"}"#).error, "invalid_client_metadata");
        let huge = format!(r#"{{"redirect_uris":["https://a.test/cb"],"client_name":"{}"}}"#, "x".repeat(MAX_METADATA_BYTES));
        let e = error(huge.as_bytes());
        assert_eq!((e.status, e.error.as_str()), (413, "invalid_client_metadata"));
    }

    #[test]
    fn application_types() {
        let app = |body: &str| register(body.as_bytes(), &issued(), "u").map(|(c, a)| (c.application_type, a["application_type"].clone()));
        let error = |body: &str| register(body.as_bytes(), &issued(), "u").unwrap_err();
        let native = (Some(AppType::Native), json!("native"));
        let web = (Some(AppType::Web), json!("web"));
        // Said, kept and echoed.
        assert_eq!(app(r#"{"redirect_uris":["http://127.0.0.1:9/cb","cursor://anysphere.cursor-mcp/oauth/callback"],"application_type":"native"}"#).unwrap(), native);
        assert_eq!(app(r#"{"redirect_uris":["https://app.test/cb"],"application_type":"web"}"#).unwrap(), web);
        assert_eq!(app(r#"{"redirect_uris":["https://app.test/cb"],"application_type":"native"}"#).unwrap(), native, "a native app may claim an https URL");
        // Left out: web (OpenID Connect's default) when every URI fits one, native when not.
        assert_eq!(app(r#"{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"]}"#).unwrap(), web);
        assert_eq!(app(r#"{"redirect_uris":["http://localhost:33418/callback"]}"#).unwrap(), native);
        // A web application may not redirect to a private-use scheme, to loopback, or to http.
        for uri in ["com.example.app:/cb", "cursor://x/cb", "http://127.0.0.1:9/cb", "http://localhost/cb", "https://localhost/cb", "https://[::1]/cb"] {
            let e = error(&format!(r#"{{"redirect_uris":["https://app.test/cb","{uri}"],"application_type":"web"}}"#));
            assert_eq!((e.status, e.error.as_str()), (400, "invalid_redirect_uri"), "{uri}");
        }
        for other in [r#""browser""#, r#""Web""#, "1", "[\"web\"]"] {
            assert_eq!(error(&format!(r#"{{"redirect_uris":["https://app.test/cb"],"application_type":{other}}}"#)).error, "invalid_client_metadata", "{other}");
        }
        // Native does not open what registration refuses to everyone.
        assert_eq!(error(r#"{"redirect_uris":["javascript:alert(1)"],"application_type":"native"}"#).error, "invalid_redirect_uri");
        assert_eq!(error(r#"{"redirect_uris":["http://evil.test/cb"],"application_type":"native"}"#).error, "invalid_redirect_uri");
    }

    #[test]
    fn metadata_documents() {
        let url = "https://app.test/oauth/client.json";
        let usable = |id: &str, private: &[&str]| metadata_url(id, &private.iter().map(|h| h.to_string()).collect::<Vec<_>>());
        assert_eq!(usable(url, &[]), Some(Ok(())));
        assert_eq!(usable("my-client", &[]), None, "a plain id");
        assert!(usable("https://app.test/", &[]).unwrap().unwrap_err().contains("needs a path"));
        assert!(usable("http://127.0.0.1:9/c.json", &[]).unwrap().unwrap_err().contains("must be https"));
        assert_eq!(usable("http://127.0.0.1:9/c.json", &["127.0.0.1"]), Some(Ok(())));
        assert!(usable("http://127.attacker.example:9/c.json", &["127.0.0.1"]).unwrap().is_err());
        assert!(usable("https://app.test/a/../c.json", &[]).unwrap().unwrap_err().contains("write it as https://app.test/c.json"));
        assert!(usable("https://APP.test/c.json", &[]).unwrap().is_err());
        assert!(usable("https://u@app.test/c.json", &[]).unwrap().is_err());
        for hostile in ["http://１２７.０.０.１:9/c.json", "http://127。0。0。1:9/c.json", "https://evil.example\\@app.test/c.json", "http://127.0.0.1%C2%AD:9/c.json"] {
            assert!(usable(hostile, &["127.0.0.1"]).unwrap().unwrap_err().contains("not a usable metadata document URL"), "{hostile}");
        }
        let doc = format!(r#"{{"client_id":"{url}","client_name":"App","redirect_uris":["https://app.test/cb"]}}"#);
        let client = from_metadata_document(url, doc.as_bytes()).unwrap();
        assert_eq!((client.redirect_uris.clone(), client.auth_method, client.origin), (vec!["https://app.test/cb".to_string()], AuthMethod::None, Origin::MetadataDocument));
        let other = r#"{"client_id":"https://evil.test/c.json","redirect_uris":["https://app.test/cb"]}"#;
        assert!(from_metadata_document(url, other.as_bytes()).unwrap_err().description.contains("not its own URL"));
        let secret = format!(r#"{{"client_id":"{url}","redirect_uris":["https://app.test/cb"],"token_endpoint_auth_method":"client_secret_basic"}}"#);
        assert_eq!(from_metadata_document(url, secret.as_bytes()).unwrap_err().error, "invalid_client");
    }
}
