//! The authorization server's RFC 8414 metadata, also served at the OpenID discovery path that
//! MCP clients try.

use serde_json::{json, Value};

use super::{AuthServer, Registration};
use crate::paths::{AUTHORIZE, REGISTER, REVOKE, TOKEN};

pub fn document(issuer: &str, server: &AuthServer) -> Value {
    let mut doc = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{AUTHORIZE}"),
        "token_endpoint": format!("{issuer}{TOKEN}"),
        "revocation_endpoint": format!("{issuer}{REVOKE}"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": server.metadata_documents,
    });
    if let Some(obj) = doc.as_object_mut() {
        if server.registration != Registration::Off {
            obj.insert("registration_endpoint".into(), json!(format!("{issuer}{REGISTER}")));
        }
        if !server.scopes.is_empty() {
            obj.insert("scopes_supported".into(), json!(server.scopes));
        }
    }
    doc
}
