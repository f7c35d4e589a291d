//! Finding an OAuth-protected MCP server's authorization server, as the MCP authorization spec's
//! client (2025-11-25): the 401's `WWW-Authenticate` challenge, the server's protected-resource
//! metadata (RFC 9728) and the authorization server's metadata (RFC 8414, else OpenID discovery),
//! each checked against what named it. Pure: the edge (`edge/connections/discover.rs`) fetches
//! the URLs these functions name, within a size bound, through the SSRF guard.

use serde_json::Value;

use crate::weburl::{listed, WebUrl};

/// The most a metadata document may weigh: a real one is a few KB.
pub const MAX_METADATA_BYTES: u64 = 64 * 1024;

/// What a `Bearer` challenge says (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// The `Bearer` challenge of a `WWW-Authenticate` value, if it has one. Parameters are
/// `name=token` or `name="quoted string"`; other schemes' challenges are skipped.
pub fn challenge(header: &str) -> Option<Challenge> {
    let lower = header.to_ascii_lowercase();
    let start = lower.find("bearer")?;
    let mut rest = header.get(start + 6..)?;
    let mut out = Challenge::default();
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some((name, after)) = rest.split_once('=') else { break };
        let name = name.trim();
        // The next scheme: a token with no `=` before a space.
        if name.contains(' ') {
            break;
        }
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, quoted.get(end..).unwrap_or(""))
        } else {
            let end = after.find([',', ' ']).unwrap_or(after.len());
            (after.get(..end).unwrap_or("").to_string(), after.get(end..).unwrap_or(""))
        };
        match name.to_ascii_lowercase().as_str() {
            "resource_metadata" => out.resource_metadata = Some(value),
            "scope" => out.scope = Some(value),
            "error" => out.error = Some(value),
            _ => {}
        }
        rest = next;
    }
    Some(out)
}

/// Where a protected resource's metadata may be, in the order to try (RFC 9728 §3.1, MCP
/// 2025-11-25 "Protected Resource Metadata Discovery"): the challenge's URL, else the
/// well-known URL with the resource's path, then at the root.
pub fn resource_metadata_urls(resource: &WebUrl, challenged: Option<&str>) -> Vec<String> {
    if let Some(url) = challenged {
        return vec![url.to_string()];
    }
    let origin = resource.origin();
    let path = resource.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/oauth-protected-resource{path}"));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// Where an authorization server's metadata may be, in the order the MCP spec gives: RFC 8414
/// with the issuer's path inserted, then OpenID discovery inserted and appended; an issuer with
/// no path has one of each.
pub fn server_metadata_urls(issuer: &WebUrl) -> Vec<String> {
    let origin = issuer.origin();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![format!("{origin}/.well-known/oauth-authorization-server"), format!("{origin}/.well-known/openid-configuration")];
    }
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// A URL a document names that mcp-edge will fetch or send a browser to: https, or plain http
/// only on a host in `private_hosts` (local development and tests). The SSRF guard checks the
/// address again when it is fetched.
pub fn allowed_url(url: &str, private_hosts: &[String]) -> Result<WebUrl, String> {
    let parsed = WebUrl::parse(url).map_err(|why| format!("{url} is refused: {why}"))?;
    let ok = match (parsed.scheme(), parsed.host()) {
        ("https", Some(_)) => true,
        ("http", Some(host)) => listed(private_hosts, host),
        _ => false,
    };
    if !ok || parsed.has_credentials() || parsed.fragment().is_some() {
        return Err(format!("{} is not an https URL without user info or fragment (plain http only on a host in privateHosts)", parsed.as_str()));
    }
    Ok(parsed)
}

/// Whether a protected resource's `resource` names the server at `upstream`: the same origin,
/// and a path that is the upstream's or one of its parents, segment by segment (RFC 9728 §3.3
/// asks for the URL the client used; MCP servers often name their root).
pub fn resource_matches(resource: &WebUrl, upstream: &WebUrl) -> bool {
    if !resource.same_origin(upstream) || resource.query().is_some() {
        return false;
    }
    let named = resource.path().trim_end_matches('/');
    let path = upstream.path().trim_end_matches('/');
    named.is_empty() || path == named || path.strip_prefix(named).is_some_and(|rest| rest.starts_with('/'))
}

/// A protected resource's metadata, as mcp-edge acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The resource as the document names it: what `resource` (RFC 8707) asks tokens for.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
}

fn strings(doc: &Value, name: &str) -> Vec<String> {
    doc.get(name).and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

fn text<'a>(doc: &'a Value, name: &str) -> Option<&'a str> {
    doc.get(name).and_then(Value::as_str)
}

/// Reads a protected-resource metadata document fetched for `upstream`, and checks that it
/// names that server, and authorization servers mcp-edge may reach.
pub fn resource_metadata(body: &[u8], upstream: &WebUrl, private_hosts: &[String]) -> Result<ResourceMetadata, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| "its protected-resource metadata is not JSON".to_string())?;
    let named = text(&doc, "resource").ok_or("its protected-resource metadata names no resource")?;
    let resource = WebUrl::parse(named).map_err(|why| format!("its protected-resource metadata names a resource that is refused: {why}"))?;
    if !resource_matches(&resource, upstream) {
        return Err(format!("its protected-resource metadata is for {named}, not for {} (RFC 9728 §3.3)", upstream.as_str()));
    }
    let authorization_servers = strings(&doc, "authorization_servers");
    if authorization_servers.is_empty() {
        return Err("its protected-resource metadata names no authorization server".into());
    }
    for server in &authorization_servers {
        allowed_url(server, private_hosts).map_err(|why| format!("its authorization server {why}"))?;
    }
    Ok(ResourceMetadata { resource: named.to_string(), authorization_servers, scopes_supported: strings(&doc, "scopes_supported") })
}

/// An authorization server's metadata, as mcp-edge acts on it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    pub client_id_metadata_document_supported: bool,
    pub token_endpoint_auth_methods: Vec<String>,
    pub scopes_supported: Vec<String>,
}

/// Reads an authorization server's metadata fetched for `issuer`: its `issuer` must be that one
/// exactly (RFC 8414 §3.3), it must do PKCE with S256 when it says which methods it does (the
/// MCP spec refuses a server that lists none only for authorization codes: `pkce_required`),
/// and every endpoint must be one mcp-edge may reach.
pub fn server_metadata(body: &[u8], issuer: &str, private_hosts: &[String], pkce_required: bool) -> Result<ServerMetadata, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| "its authorization server's metadata is not JSON".to_string())?;
    let claimed = text(&doc, "issuer").unwrap_or_default();
    if claimed != issuer {
        return Err(format!("its authorization server's metadata names the issuer {claimed:?}, not {issuer:?} (RFC 8414 §3.3)"));
    }
    if pkce_required && !strings(&doc, "code_challenge_methods_supported").iter().any(|m| m == "S256") {
        return Err("its authorization server does not say it supports PKCE with S256".into());
    }
    let endpoint = |name: &str| text(&doc, name).map(|e| allowed_url(e, private_hosts).map(|u| u.as_str().to_string()).map_err(|why| format!("its authorization server's {name} {why}"))).transpose();
    Ok(ServerMetadata {
        issuer: claimed.to_string(),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?.ok_or("its authorization server names no token_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint")?,
        revocation_endpoint: endpoint("revocation_endpoint")?,
        client_id_metadata_document_supported: doc.get("client_id_metadata_document_supported").and_then(Value::as_bool).unwrap_or(false),
        token_endpoint_auth_methods: strings(&doc, "token_endpoint_auth_methods_supported"),
        scopes_supported: strings(&doc, "scopes_supported"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> WebUrl {
        WebUrl::parse(s).unwrap()
    }

    #[test]
    fn challenges_are_read_with_quoted_and_bare_values() {
        let c = challenge(r#"Bearer error="invalid_token", error_description="No \"token\"", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="read write""#).unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("https://mcp.example/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(c.scope.as_deref(), Some("read write"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(challenge("Basic realm=x"), None);
        assert_eq!(challenge("Bearer").unwrap(), Challenge::default());
        assert_eq!(challenge("Bearer scope=a, error=x").unwrap().scope.as_deref(), Some("a"));
    }

    #[test]
    fn metadata_urls_follow_the_spec_order() {
        assert_eq!(resource_metadata_urls(&url("https://a.example/v1/mcp"), None), ["https://a.example/.well-known/oauth-protected-resource/v1/mcp", "https://a.example/.well-known/oauth-protected-resource"]);
        assert_eq!(resource_metadata_urls(&url("https://a.example/"), None), ["https://a.example/.well-known/oauth-protected-resource"]);
        assert_eq!(resource_metadata_urls(&url("https://a.example/mcp"), Some("https://a.example/prm")), ["https://a.example/prm"]);
        assert_eq!(server_metadata_urls(&url("https://as.example/tenant1")), ["https://as.example/.well-known/oauth-authorization-server/tenant1", "https://as.example/.well-known/openid-configuration/tenant1", "https://as.example/tenant1/.well-known/openid-configuration"]);
        assert_eq!(server_metadata_urls(&url("https://as.example")).len(), 2);
    }

    #[test]
    fn a_resource_must_name_the_upstream() {
        let up = url("https://mcp.example/v1/mcp");
        assert!(resource_matches(&url("https://mcp.example/v1/mcp"), &up));
        assert!(resource_matches(&url("https://mcp.example/"), &up));
        assert!(resource_matches(&url("https://mcp.example/v1"), &up));
        assert!(!resource_matches(&url("https://mcp.example/v1/m"), &up));
        assert!(!resource_matches(&url("https://evil.example/v1/mcp"), &up));
        assert!(!resource_matches(&url("http://mcp.example/v1/mcp"), &up));
        assert!(!resource_matches(&url("https://mcp.example/other"), &up));
        let doc = br#"{"resource":"https://evil.example/mcp","authorization_servers":["https://as.example"]}"#;
        assert!(resource_metadata(doc, &up, &[]).unwrap_err().contains("not for"));
        let doc = br#"{"resource":"https://mcp.example/v1/mcp","authorization_servers":["http://10.0.0.1"]}"#;
        assert!(resource_metadata(doc, &up, &[]).is_err(), "a private, plain-http authorization server");
        let doc = br#"{"resource":"https://mcp.example/v1/mcp","authorization_servers":["https://as.example"],"scopes_supported":["a"]}"#;
        let read = resource_metadata(doc, &up, &[]).unwrap();
        assert_eq!((read.authorization_servers, read.scopes_supported), (vec!["https://as.example".to_string()], vec!["a".to_string()]));
    }

    #[test]
    fn an_authorization_server_must_be_the_issuer_it_was_asked_for() {
        let doc = br#"{"issuer":"https://as.example","token_endpoint":"https://as.example/token","authorization_endpoint":"https://as.example/auth","code_challenge_methods_supported":["S256"],"client_id_metadata_document_supported":true}"#;
        let read = server_metadata(doc, "https://as.example", &[], true).unwrap();
        assert!(read.client_id_metadata_document_supported);
        assert!(server_metadata(doc, "https://other.example", &[], true).unwrap_err().contains("issuer"));
        let no_pkce = br#"{"issuer":"https://as.example","token_endpoint":"https://as.example/token"}"#;
        assert!(server_metadata(no_pkce, "https://as.example", &[], true).is_err());
        assert!(server_metadata(no_pkce, "https://as.example", &[], false).is_ok());
        let private = br#"{"issuer":"https://as.example","token_endpoint":"http://169.254.169.254/token"}"#;
        assert!(server_metadata(private, "https://as.example", &[], false).is_err());
        assert!(server_metadata(private, "https://as.example", &["169.254.169.254".into()], false).is_ok());
    }
}
