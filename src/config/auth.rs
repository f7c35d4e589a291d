//! A server's `auth` section compiled into the catalog's `Auth`.

use super::model::{AuthConfig, HttpConfig};
use super::request::Scope;
use super::ConfigError;
use crate::auth::{Auth, Introspection, Jwt, Principal, Source};

/// A server's `auth` section compiled: where credentials come from and what checks them.
pub fn auth(a: &AuthConfig, path: &str, route_params: &[String]) -> Result<Auth, ConfigError> {
    let at = |field: &str, msg: String| ConfigError::at(format!("{path}.{field}"), msg);
    let mut sources = Vec::new();
    for (i, from) in a.from.iter().enumerate() {
        let source = match from.split_once(':') {
            None if from == "bearer" => Source::Bearer,
            Some(("header", name)) if !name.is_empty() => Source::Header(name.to_ascii_lowercase()),
            Some(("cookie", name)) if !name.is_empty() => Source::Cookie(name.to_string()),
            _ => return Err(at(&format!("from[{i}]"), format!("{from:?} is not \"bearer\", \"header:NAME\" or \"cookie:NAME\""))),
        };
        sources.push(source);
    }
    if a.tokens.is_empty() && a.introspection.is_none() && a.jwt.is_none() && !a.oauth {
        return Err(at("tokens", "auth needs tokens, introspection, jwt or oauth to check credentials against".into()));
    }
    let tokens = a.tokens.iter().map(|t| (t.secret.clone(), Principal::new("token", &t.subject, t.roles.clone()))).collect();
    let template = |http: &HttpConfig, field: &str, arguments: &[String]| {
        let scope = Scope { path, arguments, route_params, meta: false, meta_auth: false, principal: false, upstream_token: false, connection: None, reads: None };
        super::request::request(http, &scope, field)
    };
    let introspection = match &a.introspection {
        Some(i) => Some(Introspection {
            request: template(&i.http, "introspection.http", &["token".to_string()])?,
            subject: pointer(&i.subject, &format!("{path}.introspection.subject"))?,
            roles: pointer(&i.roles, &format!("{path}.introspection.roles"))?,
            cache_ms: i.cache_ms,
        }),
        None => None,
    };
    let jwt = match &a.jwt {
        Some(j) => Some(Jwt {
            jwks: template(&HttpConfig { method: "GET".into(), ..j.jwks.clone() }, "jwt.jwks", &[])?,
            issuer: j.issuer.clone(),
            audience: j.audience.clone(),
            roles_claim: j.roles_claim.clone(),
            cache_ms: j.cache_ms,
        }),
        None => None,
    };
    Ok(Auth { sources, tokens, introspection, jwt, required_roles: a.required_roles.clone(), authorization_servers: a.authorization_servers.clone(), scopes: a.scopes.clone(), oauth: a.oauth })
}

fn pointer(p: &str, at: &str) -> Result<String, ConfigError> {
    if p.is_empty() || p.starts_with('/') {
        Ok(p.to_string())
    } else {
        Err(ConfigError::at(at, format!("{p:?} is not a JSON Pointer")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{check_claims, introspected, Token};
    use serde_json::{json, Value};

    fn compiled(config: Value) -> Auth {
        let a: AuthConfig = serde_json::from_value(config).unwrap();
        auth(&a, "servers[0].auth", &["chat_uuid".to_string()]).unwrap()
    }

    #[test]
    fn credentials_come_from_the_configured_sources_in_order() {
        let a = compiled(json!({"from": ["cookie:session_id", "header:X-Api-Key", "bearer"], "tokens": [{"secret": "K", "subject": "bot"}]}));
        let headers = |pairs: &'static [(&'static str, &'static str)]| move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        assert_eq!(a.credential(&headers(&[("cookie", "theme=dark; session_id=abc123; x=1")])).as_deref(), Some("abc123"));
        assert_eq!(a.credential(&headers(&[("x-api-key", " k1 "), ("authorization", "Bearer t")])).as_deref(), Some("k1"));
        assert_eq!(a.credential(&headers(&[("authorization", "bearer t2")])).as_deref(), Some("t2"));
        assert_eq!(a.credential(&headers(&[("authorization", "Basic dXNlcg==")])), None);
        assert_eq!(a.credential(&headers(&[("cookie", "session_id=")])), None);
    }

    #[test]
    fn configuration_faults_name_the_path() {
        let bad: AuthConfig = serde_json::from_value(json!({"from": ["query:x"], "tokens": [{"secret": "K", "subject": "s"}]})).unwrap();
        assert_eq!(auth(&bad, "a", &[]).unwrap_err().to_string(), "a.from[0]: \"query:x\" is not \"bearer\", \"header:NAME\" or \"cookie:NAME\"");
        let empty: AuthConfig = serde_json::from_value(json!({})).unwrap();
        assert!(auth(&empty, "a", &[]).unwrap_err().to_string().starts_with("a.tokens: auth needs"));
        let intro: AuthConfig = serde_json::from_value(json!({"introspection": {"http": {"url": "https://app.test/me/{nope}"}}})).unwrap();
        assert_eq!(auth(&intro, "a", &[]).unwrap_err().to_string(), "a.introspection.http.url: unknown argument \"nope\" in template");
    }

    #[test]
    fn introspection_answers_become_principals() {
        let a = compiled(json!({"introspection": {"http": {"url": "https://app.test/chats/{route.chat_uuid}/me", "headers": {"Cookie": "session_id={token}"}}, "subject": "/user/id", "roles": "/user/roles"}}));
        let i = a.introspection.as_ref().unwrap();
        let answer = json!({"user": {"id": 42, "roles": ["bot"]}, "plan": "pro"});
        let claims = answer.as_object().cloned().unwrap();
        assert_eq!(introspected(&answer, i), Some(Principal { claims, ..Principal::new("app", "42", vec!["bot".into()]) }), "the answer is what rules read as claims");
        assert_eq!(introspected(&json!({"user": {"id": "u1", "roles": "bot admin"}}), i).unwrap().roles, ["bot", "admin"]);
        assert_eq!(introspected(&json!({"user": {}}), i), None);
    }

    #[test]
    fn jwt_claims_are_checked() {
        let a = compiled(json!({"jwt": {"jwks": {"url": "https://idp.test/jwks"}, "issuer": "https://idp.test"}}));
        let jwt = a.jwt.as_ref().unwrap();
        let token = |claims: Value| Token { alg: "RS256".into(), kid: None, claims, signed: String::new(), signature: vec![] };
        let now = 1_700_000_000_000;
        let good = json!({"iss": "https://idp.test", "aud": ["https://mcp.test/mcp"], "sub": "u1", "exp": 1_700_000_100, "roles": ["admin"], "scope": "tools:read", "azp": "cli"});
        let p = check_claims(&token(good.clone()), jwt, "https://mcp.test/mcp", now).unwrap();
        let claims = good.as_object().cloned().unwrap();
        assert_eq!(p, Principal { id: "jwt:https://idp.test|u1".into(), roles: vec!["admin".into(), "tools:read".into()], subject: "u1".into(), client_id: Some("cli".into()), claims, ..Principal::default() });
        let with = |k: &str, v: Value| {
            let mut c = good.clone();
            c[k] = v;
            check_claims(&token(c), jwt, "https://mcp.test/mcp", now).unwrap_err()
        };
        assert_eq!(with("exp", json!(1_699_999_000)), "the token has expired");
        assert_eq!(with("nbf", json!(1_700_001_000)), "the token is not valid yet");
        assert_eq!(with("iss", json!("https://evil.test")), "the token's issuer \"https://evil.test\" is not \"https://idp.test\"");
        assert_eq!(with("aud", json!("https://other.test/mcp")), "the token is not for this server (audience \"https://mcp.test/mcp\")");
        assert_eq!(with("sub", json!("")), "the token has no sub claim");
    }
}
