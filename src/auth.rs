//! Who is calling: credentials (bearer token, API-key header or cookie), how they are checked
//! (against secrets, by the host application's introspection URL, or as OAuth JWTs), and the
//! principal with roles that results. Signature checks and fetches happen at the edge; this
//! module decides everything else.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::upstream::RequestTemplate;

/// The principal of requests to servers without `auth`.
pub const ANONYMOUS: &str = "anonymous";

/// What tool templates may read of the caller, as `{principal.NAME}`. `upstreamToken` needs the
/// tool's `forwardUpstreamToken`: the others describe the caller, that one can act as it.
pub const TEMPLATE_FIELDS: [&str; 5] = ["id", "subject", "email", "roles", "upstreamToken"];

/// An authenticated caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Principal {
    /// Stable and unique across methods: `token:bot`, `jwt:https://issuer|user-1`, `app:42`.
    pub id: String,
    pub roles: Vec<String>,
    /// Who it is within its method: a token's `subject`, a JWT's `sub`, a user's name. Tool
    /// templates read it as `{principal.subject}`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// Where the method knows it: `{principal.email}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Sign-in through an identity provider: its access token, for tools that opt in
    /// (`{principal.upstreamToken}`). Never stored with a session, never logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_token: Option<String>,
    /// What the credential says of the caller: a JWT's claims, an introspection's answer. Access
    /// rules read them as `principal.claims`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub claims: serde_json::Map<String, Value>,
    /// The OAuth client the caller came through: our authorization server's, or a JWT's
    /// `client_id` (or `azp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The bearer credential the caller presented, for a connection that exchanges it (RFC
    /// 8693, `exchange.subjectToken: "caller"`): set by the Worker only for a server whose calls
    /// need it, carried to the session's object in the request's envelope, never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_token: Option<String>,
}

impl Principal {
    pub fn anonymous() -> Principal {
        Principal { id: ANONYMOUS.into(), ..Principal::default() }
    }

    /// A principal of `method` (`token`, `jwt:<issuer>`, `app`, …) named `subject` within it.
    pub fn new(method: &str, subject: &str, roles: Vec<String>) -> Principal {
        Principal { id: format!("{method}:{subject}"), roles, subject: subject.to_string(), ..Principal::default() }
    }

    /// The principal as template variables (`principal.NAME`, see [`TEMPLATE_FIELDS`]). What
    /// the method does not know is left unset, as an absent argument is, so the optional parts
    /// of a template drop out: the anonymous principal has no subject, a static token no email.
    /// The upstream token only `with_token`.
    pub fn bindings(&self, with_token: bool) -> Vec<(String, Value)> {
        let known = |v: &str| (!v.is_empty()).then(|| Value::String(v.to_string()));
        let fields = [
            ("id", known(&self.id)),
            ("subject", known(&self.subject)),
            ("email", self.email.as_deref().and_then(known)),
            ("roles", Some(Value::Array(self.roles.iter().map(|r| Value::String(r.clone())).collect()))),
            ("upstreamToken", self.upstream_token.as_deref().filter(|_| with_token).and_then(known)),
        ];
        fields.into_iter().filter_map(|(name, value)| Some((format!("principal.{name}"), value?))).collect()
    }

    /// Whether the principal may see something restricted to `roles` (empty: everyone).
    pub fn may(&self, roles: &[String]) -> bool {
        roles.is_empty() || roles.iter().any(|r| self.roles.contains(r))
    }
}

/// Where a credential is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Bearer,
    Header(String),
    Cookie(String),
}

/// A server's compiled `auth` section.
#[derive(Debug, Clone)]
pub struct Auth {
    pub sources: Vec<Source>,
    /// Static tokens: the secret holding each, and the principal it stands for.
    pub tokens: Vec<(String, Principal)>,
    pub introspection: Option<Introspection>,
    pub jwt: Option<Jwt>,
    /// A principal needs one of these roles to use the server at all.
    pub required_roles: Vec<String>,
    /// RFC 9728 metadata: the authorization servers clients should get tokens from.
    pub authorization_servers: Vec<String>,
    pub scopes: Vec<String>,
    /// Access tokens of this deployment's own authorization server are accepted.
    pub oauth: bool,
}

#[derive(Debug, Clone)]
pub struct Introspection {
    /// The request to the host application; `{token}` is the credential.
    pub request: RequestTemplate,
    pub subject: String,
    pub roles: String,
    pub cache_ms: u64,
}

#[derive(Debug, Clone)]
pub struct Jwt {
    pub jwks: RequestTemplate,
    pub issuer: Option<String>,
    /// The audience tokens must carry; `None`: this server's resource URL.
    pub audience: Option<String>,
    pub roles_claim: String,
    pub cache_ms: u64,
}

impl Auth {

    /// The first credential the request carries, from the configured sources in order.
    pub fn credential(&self, header: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        self.sources.iter().find_map(|source| match source {
            Source::Bearer => header("authorization").and_then(|v| authorization(&v, "bearer")),
            Source::Header(name) => header(name).map(|v| v.trim().to_string()),
            Source::Cookie(name) => header("cookie").and_then(|c| cookie(&c, name)),
        })
        .filter(|c| !c.is_empty())
    }

    /// Whether OAuth is configured: 401s then point at the protected-resource metadata.
    pub fn is_oauth(&self) -> bool {
        self.oauth || self.jwt.is_some() || !self.authorization_servers.is_empty()
    }

    /// The `WWW-Authenticate` value of a 401. `metadata_url` is this resource's RFC 9728 document.
    pub fn challenge(&self, metadata_url: &str, invalid: bool) -> String {
        let mut value = String::from("Bearer realm=\"mcp-edge\"");
        if self.is_oauth() {
            value.push_str(&format!(", resource_metadata=\"{metadata_url}\""));
        }
        if invalid {
            value.push_str(", error=\"invalid_token\"");
        }
        value
    }

    /// RFC 9728 protected-resource metadata for `resource`; `issuer` is this deployment's own
    /// authorization server, listed first when the server uses it.
    pub fn metadata(&self, resource: &str, issuer: &str) -> Value {
        let mut servers = self.authorization_servers.clone();
        if self.oauth && !servers.iter().any(|s| s == issuer) {
            servers.insert(0, issuer.to_string());
        }
        let mut doc = serde_json::json!({
            "resource": resource,
            "authorization_servers": servers,
            "bearer_methods_supported": ["header"],
            "resource_name": "mcp-edge",
        });
        if let (false, Some(obj)) = (self.scopes.is_empty(), doc.as_object_mut()) {
            obj.insert("scopes_supported".into(), serde_json::json!(self.scopes));
        }
        doc
    }
}

/// The credential of an `Authorization` value whose scheme is `scheme` (any case): `Bearer …`,
/// `Basic …`.
pub fn authorization(value: &str, scheme: &str) -> Option<String> {
    let (given, credential) = value.trim().split_once(' ')?;
    given.eq_ignore_ascii_case(scheme).then(|| credential.trim().to_string())
}

/// A cookie's value from a `Cookie` header.
pub fn cookie(header: &str, name: &str) -> Option<String> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then(|| v.trim_matches('"').to_string())
    })
}

/// A `Set-Cookie` value: the cookie `name` with `value`, or the one that clears it (`max_age_s`
/// 0), only for this site's own requests (`HttpOnly`), `Secure` on https (`wrangler dev` serves
/// plain http on loopback).
pub fn set_cookie(name: &str, value: &str, max_age_s: u64, https: bool, same_site: &str) -> String {
    let secure = if https { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; HttpOnly; SameSite={same_site}; Max-Age={max_age_s}{secure}")
}

/// Whether an `Authorization: Bearer …` header carries `secret`. The comparison takes the same
/// time wherever the first difference is.
pub fn bearer_matches(authorization: Option<&str>, secret: &str) -> bool {
    let Some(token) = authorization.and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer "))) else {
        return false;
    };
    !secret.is_empty() && same_secret(token.trim(), secret)
}

/// Compares secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

/// The same comparison for bytes (derived keys, hashes).
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// The principal an introspection answer describes: `subject` and `roles` are JSON Pointers.
pub fn introspected(answer: &Value, introspection: &Introspection) -> Option<Principal> {
    let subject = match answer.pointer(&introspection.subject)? {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let claims = answer.as_object().cloned().unwrap_or_default();
    Some(Principal { claims, ..Principal::new("app", &subject, roles_of(answer.pointer(&introspection.roles))) })
}

fn roles_of(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// The name of a session's Durable Object: the prefix (`session_ids::SESSION_OBJECT`), the session id, and for an
/// authenticated principal a digest of it, so that another principal presenting the same id
/// reaches an empty object.
pub fn object_name(session_id: &str, principal: &str) -> String {
    if principal == ANONYMOUS {
        return format!("{}{session_id}", crate::session_ids::SESSION_OBJECT);
    }
    format!("{}{session_id}:{}", crate::session_ids::SESSION_OBJECT, principal_digest(principal))
}

/// A short digest of a principal's id, for the names of the objects kept per principal.
pub fn principal_digest(principal: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(principal.as_bytes());
    crate::hex::encode(digest.get(..12).unwrap_or_default())
}

/// A JWT split and decoded, before its signature is checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub alg: String,
    pub kid: Option<String>,
    pub claims: Value,
    /// `header.payload`, the bytes the signature covers.
    pub signed: String,
    pub signature: Vec<u8>,
}

/// Splits and decodes a compact JWS. `None`: not a JWT at all.
pub fn parse_jwt(token: &str) -> Option<Token> {
    let mut parts = token.split('.');
    let (h, p, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let header: Value = serde_json::from_slice(&crate::base64::decode_url(h)?).ok()?;
    let claims: Value = serde_json::from_slice(&crate::base64::decode_url(p)?).ok()?;
    Some(Token {
        alg: header.get("alg")?.as_str()?.to_string(),
        kid: header.get("kid").and_then(Value::as_str).map(str::to_string),
        claims,
        signed: format!("{h}.{p}"),
        signature: crate::base64::decode_url(s)?,
    })
}

/// Checks a token's claims once its signature is verified; returns the principal.
pub fn check_claims(token: &Token, jwt: &Jwt, resource: &str, now_ms: u64) -> Result<Principal, String> {
    let claims = &token.claims;
    let now = now_ms / 1000;
    // One minute of leeway for clocks that disagree.
    const SKEW: u64 = 60;
    match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) if exp + SKEW > now => {}
        Some(_) => return Err("the token has expired".into()),
        None => return Err("the token has no exp claim".into()),
    }
    if claims.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now + SKEW) {
        return Err("the token is not valid yet".into());
    }
    let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or_default();
    if let Some(expected) = &jwt.issuer {
        if issuer != expected {
            return Err(format!("the token's issuer {issuer:?} is not {expected:?}"));
        }
    }
    let audience = jwt.audience.as_deref().unwrap_or(resource);
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&audience) {
        return Err(format!("the token is not for this server (audience {audience:?})"));
    }
    let subject = claims.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or("the token has no sub claim")?;
    let mut roles = roles_of(claims.get(&jwt.roles_claim));
    // OAuth scopes count as roles too, so tools can be gated on either.
    roles.extend(roles_of(claims.get("scope")));
    Ok(Principal {
        id: format!("jwt:{issuer}|{subject}"),
        roles,
        subject: subject.to_string(),
        email: claims.get("email").and_then(Value::as_str).map(str::to_string),
        upstream_token: None,
        client_id: ["client_id", "azp"].iter().find_map(|c| claims.get(*c).and_then(Value::as_str)).map(str::to_string),
        claims: claims.as_object().cloned().unwrap_or_default(),
        caller_token: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_http_only_and_strict() {
        assert_eq!(set_cookie("mcp_edge_console", "v", 60, true, "Strict"), "mcp_edge_console=v; Path=/; HttpOnly; SameSite=Strict; Max-Age=60; Secure");
        assert_eq!(set_cookie("mcp_edge_console", "", 0, false, "Strict"), "mcp_edge_console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
        assert_eq!(set_cookie("mcp_edge_csrf", "c", 900, false, "Lax"), "mcp_edge_csrf=c; Path=/; HttpOnly; SameSite=Lax; Max-Age=900");
    }
    use serde_json::json;

    #[test]
    fn a_principal_binds_what_its_method_knows() {
        let full = Principal { email: Some("bot@example.test".into()), upstream_token: Some("idp-token".into()), ..Principal::new("jwt:https://idp.test", "user-7", vec!["bot".into(), "admin".into()]) };
        let bound = |p: &Principal, with_token: bool| p.bindings(with_token).into_iter().collect::<std::collections::BTreeMap<_, _>>();
        let all = bound(&full, true);
        assert_eq!(all.keys().map(|k| k.strip_prefix("principal.").unwrap()).collect::<Vec<_>>(), {
            let mut fields = TEMPLATE_FIELDS.to_vec();
            fields.sort_unstable();
            fields
        });
        assert_eq!(all["principal.id"], json!("jwt:https://idp.test:user-7"));
        assert_eq!(all["principal.subject"], json!("user-7"));
        assert_eq!(all["principal.email"], json!("bot@example.test"));
        assert_eq!(all["principal.roles"], json!(["bot", "admin"]));
        assert_eq!(all["principal.upstreamToken"], json!("idp-token"));
        // The token only for a tool that forwards it.
        assert!(!bound(&full, false).contains_key("principal.upstreamToken"));
        // Unknown values are unset, not empty: the anonymous principal has an id and no roles.
        let anonymous = bound(&Principal::anonymous(), true);
        assert_eq!(anonymous, [("principal.id".to_string(), json!("anonymous")), ("principal.roles".to_string(), json!([]))].into_iter().collect());
        let blank = Principal { email: Some(String::new()), ..Principal::new("token", "bot", vec![]) };
        assert!(!bound(&blank, true).contains_key("principal.email"));
    }


    #[test]
    fn bearer_tokens() {
        assert!(bearer_matches(Some("Bearer s3cret"), "s3cret"));
        assert!(!bearer_matches(Some("Bearer s3cre"), "s3cret"));
        assert!(!bearer_matches(Some("Bearer s3creT"), "s3cret"));
        assert!(!bearer_matches(Some("Basic s3cret"), "s3cret"));
        assert!(!bearer_matches(None, "s3cret"));
        assert!(!bearer_matches(Some("Bearer "), ""));
    }

    #[test]
    fn roles_gate_and_secrets_compare_fully() {
        let p = Principal::new("token", "a", vec!["bot".into()]);
        assert!(p.may(&[]) && p.may(&["admin".into(), "bot".into()]) && !p.may(&["admin".into()]));
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "abcd") && !same_secret("", "a"));
    }

    #[test]
    fn principal_ids_never_collide_across_sign_in_methods() {
        // The same subject through every way in: `{principal.subject}` is the same text,
        // `{principal.id}` never is.
        let ids = [
            Principal::new("token", "ann", vec![]).id,
            Principal::new("user", "ann", vec![]).id,
            Principal::new("app", "ann", vec![]).id,
            format!("jwt:{}|ann", "https://idp.test"),
            format!("oidc:{}|ann", "https://idp.test"),
        ];
        let mut unique = ids.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
        assert_eq!(Principal::new("token", "ann", vec![]).subject, Principal::new("user", "ann", vec![]).subject);
    }

    #[test]
    fn session_objects_are_keyed_by_principal_and_id() {
        assert_eq!(object_name("s-1", ANONYMOUS), "session:s-1");
        let a = object_name("s-1", "token:alice");
        assert!(a.starts_with("session:s-1:") && a.len() == 8 + 4 + 24);
        // Whatever a client sends, it names a session's object, never another of the namespace's.
        for other in ["oauth", "live-config", "health", "oauth-revocations", "registry:/mcp"] {
            assert!(object_name(other, ANONYMOUS).starts_with(crate::session_ids::SESSION_OBJECT));
        }
        assert_ne!(a, object_name("s-1", "token:bob"));
        assert_eq!(a, object_name("s-1", "token:alice"));
    }

    #[test]
    fn jwts_are_split_and_decoded() {
        // {"alg":"ES256","kid":"k1"} . {"sub":"a"} . 0x01 0x02
        let t = parse_jwt("eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhIn0.AQI").unwrap();
        assert_eq!((t.alg.as_str(), t.kid.as_deref(), t.signature.as_slice()), ("ES256", Some("k1"), &[1u8, 2][..]));
        assert_eq!(t.claims, json!({"sub": "a"}));
        assert_eq!(t.signed, "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhIn0");
        assert_eq!(parse_jwt("opaque-session-token"), None);
        assert_eq!(parse_jwt("a.b.c"), None);
    }
}
