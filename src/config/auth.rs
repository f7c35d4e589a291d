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
        let scope = Scope { path, arguments, route_params, meta: false, meta_auth: false, principal: false, upstream_token: false };
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
