//! The top-level `oauth` section compiled into the authorization server's settings.

use super::model::{OAuthConfig, SignInConfig};
use super::request::is_secret_name;
use super::ConfigError;
use crate::oauth::client::{AuthMethod, Client, Origin, Secret};
use crate::oauth::{uri, AuthServer, Oidc, Registration, SignIn, User};
use crate::weburl::{listed, WebUrl};

pub fn oauth(o: OAuthConfig) -> Result<AuthServer, ConfigError> {
    let at = |field: &str, msg: String| ConfigError::at(format!("oauth.{field}"), msg);
    let secret_name = |field: &str, name: &str| {
        if is_secret_name(name) { Ok(name.to_string()) } else { Err(at(field, format!("{name:?} is not a secret name (letters, digits and _)"))) }
    };
    super::request::hosts(&o.private_hosts, "oauth.privateHosts")?;
    let sign_in = sign_in(o.sign_in, &o.private_hosts)?;
    if let Some(r) = &o.rate_limit {
        if ![10, 60].contains(&r.period_seconds) {
            return Err(at("rateLimit.periodSeconds", "must be 10 or 60, as Rate Limiting bindings allow".into()));
        }
    }
    let registration = match (o.registration.as_str(), &o.initial_access_token_secret) {
        ("off", _) => Registration::Off,
        ("open", _) => Registration::Open,
        ("token", Some(name)) => Registration::Token(secret_name("initialAccessTokenSecret", name)?),
        ("token", None) => return Err(at("initialAccessTokenSecret", "registration \"token\" needs the secret that holds the initial access token".into())),
        (other, _) => return Err(at("registration", format!("{other:?} is not \"off\", \"open\" or \"token\""))),
    };
    let mut clients: Vec<Client> = Vec::new();
    for (i, c) in o.clients.into_iter().enumerate() {
        let field = |f: &str| format!("clients[{i}].{f}");
        if c.client_id.trim().is_empty() || c.client_id.contains(char::is_whitespace) || c.client_id.contains("://") {
            return Err(at(&field("clientId"), format!("{:?} must be a plain identifier (a URL client_id is a metadata document)", c.client_id)));
        }
        if c.client_id == crate::oauth::client::CONSOLE_CLIENT_ID {
            return Err(at(&field("clientId"), format!("{:?} is the console's own client", c.client_id)));
        }
        if clients.iter().any(|e| e.client_id == c.client_id) {
            return Err(at(&field("clientId"), format!("{:?} is listed twice", c.client_id)));
        }
        if c.redirect_uris.is_empty() {
            return Err(at(&field("redirectUris"), "at least one redirect URI is required".into()));
        }
        for (j, u) in c.redirect_uris.iter().enumerate() {
            if let Some(why) = uri::refuse_registration(u) {
                return Err(at(&format!("clients[{i}].redirectUris[{j}]"), why));
            }
        }
        let secret = c.secret.as_deref().map(|s| secret_name(&field("secret"), s)).transpose()?;
        clients.push(Client {
            client_id: c.client_id,
            name: c.name,
            redirect_uris: c.redirect_uris,
            auth_method: if secret.is_some() { AuthMethod::ClientSecretBasic } else { AuthMethod::None },
            secret: secret.map(Secret::Named),
            origin: Origin::Configured,
            issued_at: 0,
            application_type: None,
        });
    }
    if o.access_token_ttl_seconds == 0 || o.access_token_ttl_seconds > 86_400 {
        return Err(at("accessTokenTtlSeconds", "must be between 1 and 86400 (short-lived: the default is 600)".into()));
    }
    if o.refresh_token_ttl_seconds < o.access_token_ttl_seconds {
        return Err(at("refreshTokenTtlSeconds", "must be at least accessTokenTtlSeconds".into()));
    }
    if !(1..=600).contains(&o.code_ttl_seconds) {
        return Err(at("codeTtlSeconds", "must be between 1 and 600 (the default is 60)".into()));
    }
    Ok(AuthServer {
        sign_in,
        registration,
        clients,
        metadata_documents: o.client_id_metadata_documents,
        access_ttl_ms: o.access_token_ttl_seconds * 1000,
        refresh_ttl_ms: o.refresh_token_ttl_seconds * 1000,
        code_ttl_ms: o.code_ttl_seconds * 1000,
        scopes: o.scopes,
        remember_consent: o.remember_consent,
        private_hosts: o.private_hosts,
        rate_limit: o.rate_limit.map(|r| (r.binding, r.period_seconds)),
    })
}

fn sign_in(s: SignInConfig, private_hosts: &[String]) -> Result<SignIn, ConfigError> {
    let at = |field: &str, msg: String| ConfigError::at(format!("oauth.signIn.{field}"), msg);
    // Read by the one URL parser: an http host is allowed when it is listed, compared parsed.
    let url = |field: &str, value: &str| -> Result<String, ConfigError> {
        let parsed = WebUrl::parse(value).map_err(|why| at(field, why))?;
        let allowed = match (parsed.scheme(), parsed.host()) {
            ("https", Some(_)) => true,
            ("http", Some(host)) => listed(private_hosts, host),
            _ => false,
        };
        if !allowed {
            return Err(at(field, format!("{value:?} must be an https URL (http only for a host in oauth.privateHosts)")));
        }
        if parsed.has_credentials() || parsed.fragment().is_some() {
            return Err(at(field, format!("{value:?} may not carry user info or a fragment")));
        }
        Ok(value.trim_end_matches('/').to_string())
    };
    match (s.users, s.oidc, s.introspection) {
        (Some(users), None, None) => {
            if users.is_empty() {
                return Err(at("users", "list at least one user".into()));
            }
            let mut out: Vec<User> = Vec::new();
            for (i, u) in users.into_iter().enumerate() {
                if u.username.is_empty() || u.username.len() > 100 || u.username.chars().any(char::is_control) {
                    return Err(at(&format!("users[{i}].username"), "must be 1 to 100 printable characters".into()));
                }
                if out.iter().any(|e| e.username == u.username) {
                    return Err(at(&format!("users[{i}].username"), format!("{:?} is listed twice", u.username)));
                }
                if !is_secret_name(&u.password_secret) {
                    return Err(at(&format!("users[{i}].passwordSecret"), format!("{:?} is not a secret name: the password itself never goes in this file", u.password_secret)));
                }
                out.push(User { username: u.username, password_secret: u.password_secret, roles: u.roles, email: u.email });
            }
            Ok(SignIn::Users(out))
        }
        (None, Some(o), None) => {
            let pointer = |field: &str, p: &str| if p.is_empty() || p.starts_with('/') { Ok(p.to_string()) } else { Err(at(&format!("oidc.{field}"), format!("{p:?} is not a JSON Pointer"))) };
            let endpoint = |field: &str, v: Option<String>| v.map(|v| url(&format!("oidc.{field}"), &v)).transpose();
            if !is_secret_name(&o.secret) {
                return Err(at("oidc.secret", format!("{:?} is not a secret name: the client secret itself never goes in this file", o.secret)));
            }
            let post_secret = match o.token_auth_method.as_deref() {
                None | Some("client_secret_basic") => false,
                Some("client_secret_post") => true,
                Some(other) => return Err(at("oidc.tokenAuthMethod", format!("{other:?} is not client_secret_basic or client_secret_post"))),
            };
            Ok(SignIn::Oidc(Box::new(Oidc {
                issuer: url("oidc.issuer", &o.issuer)?,
                client_id: o.client_id,
                secret: o.secret,
                scopes: o.scopes,
                authorization_endpoint: endpoint("authorizationEndpoint", o.authorization_endpoint)?,
                token_endpoint: endpoint("tokenEndpoint", o.token_endpoint)?,
                userinfo_endpoint: endpoint("userinfoEndpoint", o.userinfo_endpoint)?,
                subject: pointer("subject", &o.subject)?,
                email: pointer("email", &o.email)?,
                groups: pointer("groups", &o.groups)?,
                role_map: o.role_map,
                default_roles: o.default_roles,
                post_secret,
            })))
        }
        (None, None, Some(i)) => {
            let valid = WebUrl::parse(&i.login_url).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) || (i.login_url.starts_with('/') && !i.login_url.starts_with("//") && !i.login_url.contains('\\'));
            if !valid {
                return Err(at("introspection.loginUrl", format!("{:?} must be an http(s) URL or a path", i.login_url)));
            }
            Ok(SignIn::Introspection { login_url: i.login_url })
        }
        _ => Err(ConfigError::at("oauth.signIn", "give exactly one of users, oidc or introspection")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_consoles_client_id_is_taken() {
        let text = r#"{"servers":[{"name":"s","version":"1","auth":{"oauth":true}}],
          "oauth":{"signIn":{"users":[{"username":"a","passwordSecret":"PW"}]},"clients":[{"clientId":"mcp-edge-console","redirectUris":["https://app.test/cb"]}]}}"#;
        assert_eq!(crate::config::load(text).unwrap_err().to_string(), r#"oauth.clients[0].clientId: "mcp-edge-console" is the console's own client"#);
        assert!(crate::config::load(&text.replace("mcp-edge-console", "mine")).is_ok());
    }
}
