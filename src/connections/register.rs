//! mcp-edge as a registered client of a discovered authorization server: its own Client ID
//! Metadata Document (served on its origin; its URL is the client id), else Dynamic Client
//! Registration (RFC 7591). One registration per connection, kept deployment-wide.

use serde_json::{json, Value};

/// How mcp-edge is known to an authorization server, as kept in `connection-client:<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The authorization server it is registered at.
    pub issuer: String,
    pub client_id: String,
    /// DCR's secret for a confidential client (client credentials); none for a public one.
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
}

impl Registered {
    /// As the object keeps it: DCR's own member names, and the issuer (`response` reads it back).
    pub fn to_json(&self) -> String {
        json!({"issuer": self.issuer, "client_id": self.client_id, "client_secret": self.client_secret, "token_endpoint_auth_method": self.auth_method}).to_string()
    }
}

/// The Client ID Metadata Document mcp-edge serves at `client_id` (an https URL on its origin):
/// a public client with PKCE, whose browser comes back to `redirect_uri`.
pub fn metadata_document(client_id: &str, redirect_uri: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": "mcp-edge",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

/// Whether mcp-edge's own document may be its client id there: the server says it reads them,
/// the client is public (a user's authorization code), and the document's URL is https (the
/// draft requires it; a local deployment on http registers instead).
pub fn use_metadata_document(supported: bool, per_user: bool, client_id: &str) -> bool {
    supported && per_user && client_id.starts_with("https://")
}

/// The DCR request: a public client for a user's authorization code, a confidential one (a
/// secret sent by HTTP Basic) for client credentials.
pub fn request(redirect_uri: &str, per_user: bool, scope: Option<&str>) -> String {
    let mut body = if per_user {
        json!({"client_name": "mcp-edge", "redirect_uris": [redirect_uri], "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none"})
    } else {
        json!({"client_name": "mcp-edge", "grant_types": ["client_credentials"], "response_types": [], "token_endpoint_auth_method": "client_secret_basic"})
    };
    if let (Some(scope), Some(obj)) = (scope, body.as_object_mut()) {
        obj.insert("scope".into(), json!(scope));
    }
    body.to_string()
}

/// The DCR answer (RFC 7591 §3.2.1): the client id, and its secret when one was issued; or a
/// registration as `Registered::to_json` keeps it (`issuer` `None`: the one it names).
pub fn response(body: &[u8], issuer: Option<&str>) -> Result<Registered, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| "its registration answer is not JSON".to_string())?;
    let text = |name: &str| doc.get(name).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_string);
    let client_id = text("client_id").ok_or("its registration answer has no client_id")?;
    let client_secret = text("client_secret");
    let auth_method = text("token_endpoint_auth_method").unwrap_or_else(|| if client_secret.is_some() { "client_secret_basic".into() } else { "none".into() });
    let issuer = issuer.map(str::to_string).or_else(|| text("issuer")).unwrap_or_default();
    Ok(Registered { issuer, client_id, client_secret, auth_method })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_names_itself_and_its_redirect() {
        let doc = metadata_document("https://edge.example/connections/client.json", "https://edge.example/connections/callback");
        assert_eq!(doc["client_id"], "https://edge.example/connections/client.json");
        assert_eq!(doc["redirect_uris"][0], "https://edge.example/connections/callback");
        assert_eq!(doc["token_endpoint_auth_method"], "none");
        assert!(use_metadata_document(true, true, "https://edge.example/connections/client.json"));
        assert!(!use_metadata_document(true, true, "http://127.0.0.1:8787/connections/client.json"));
        assert!(!use_metadata_document(true, false, "https://edge.example/connections/client.json"));
        assert!(!use_metadata_document(false, true, "https://edge.example/connections/client.json"));
    }

    #[test]
    fn registrations_ask_for_what_the_grant_needs() {
        let public: Value = serde_json::from_slice(request("https://e/cb", true, Some("read")).as_bytes()).unwrap();
        assert_eq!((public["token_endpoint_auth_method"].as_str(), public["scope"].as_str()), (Some("none"), Some("read")));
        let confidential: Value = serde_json::from_slice(request("https://e/cb", false, None).as_bytes()).unwrap();
        assert_eq!(confidential["grant_types"][0], "client_credentials");
        assert!(confidential.get("redirect_uris").is_none());
        let got = response(br#"{"client_id":"abc","client_secret":"s3"}"#, Some("https://as")).unwrap();
        assert_eq!((got.client_id.as_str(), got.client_secret.as_deref(), got.auth_method.as_str()), ("abc", Some("s3"), "client_secret_basic"));
        assert_eq!(response(got.to_json().as_bytes(), None).unwrap(), got, "kept and read back");
        assert!(response(br#"{"client_secret":"s3"}"#, Some("https://as")).is_err());
        assert!(response(b"<html>", Some("https://as")).is_err());
    }
}
