//! The deployment's own keys by name (what signs its tokens, callbacks and request states; the
//! admin token), how long each must be, and the secrets a catalog names: those a live edit may
//! not put in a template, and those no reply, log or trace may show.

use crate::catalog::{Catalog, Server};

/// Signs the authorization server's tokens, sealed forms and cookies.
pub const OAUTH_SIGNING_KEY: &str = "OAUTH_SIGNING_KEY";
/// Signs callback URLs and 2026-07-28 request states.
pub const CALLBACK_SIGNING_KEY: &str = "CALLBACK_SIGNING_KEY";
/// Lets automation use the admin API.
pub const ADMIN_TOKEN: &str = "MCP_EDGE_ADMIN_TOKEN";

/// The keys the deployment itself reads, whatever its configuration names.
pub const OWN_KEYS: [&str; 3] = [OAUTH_SIGNING_KEY, CALLBACK_SIGNING_KEY, ADMIN_TOKEN];

/// The shortest value a key may have: 32 characters of a random value are at least 128 bits
/// even as hex, beyond any offline guess at the signatures and tokens clients are handed.
pub const MIN_KEY_CHARS: usize = 32;

/// Why the value of the key `name` may not be used, if it may not: the message the deployment
/// answers with until the key is fixed. An empty value is no key at all, not a short one.
pub fn too_short(name: &str, value: &str) -> Option<String> {
    let chars = value.chars().count();
    (chars > 0 && chars < MIN_KEY_CHARS).then(|| {
        format!("the secret {name} is {chars} characters long; it must have at least {MIN_KEY_CHARS} (for example: openssl rand -hex 32)")
    })
}

impl Catalog {
    /// The secrets that are the deployment's own credentials: its keys, the configured users'
    /// passwords, the identity provider's client secret, the tokens callers present and the
    /// notify routes' secrets. A live edit's templates may not name them: a tool would send them
    /// wherever its URL says.
    pub fn own_secrets(&self) -> Vec<String> {
        let mut names: Vec<String> = OWN_KEYS.iter().map(|k| k.to_string()).collect();
        if let Some(oauth) = &self.oauth {
            match &oauth.sign_in {
                crate::oauth::SignIn::Users(users) => names.extend(users.iter().map(|u| u.password_secret.clone())),
                crate::oauth::SignIn::Oidc(oidc) => names.push(oidc.secret.clone()),
                crate::oauth::SignIn::Introspection { .. } => {}
            }
            names.extend(oauth.clients.iter().filter_map(|c| c.secret_name().map(str::to_string)));
        }
        for server in &self.servers {
            if let Some(auth) = &server.auth {
                names.extend(auth.tokens.iter().map(|(secret, _)| secret.clone()));
            }
            if let Some((_, secret)) = &server.notify {
                names.push(secret.clone());
            }
        }
        dedup(names)
    }

    /// Every secret the catalog names (its templates' `{env.NAME}`, auth's, the own ones): the
    /// values that replies, stored events, logs and traces never show.
    pub fn secret_names(&self) -> Vec<String> {
        let mut names = self.own_secrets();
        for server in &self.servers {
            names.extend(server.outbound_secrets());
        }
        dedup(names)
    }
}

impl Server {
    /// The secrets this server's outbound requests name: tools, resources, resource templates,
    /// upstream MCP servers, and auth's introspection and JWKS requests. Each may go wherever
    /// its request's URL says.
    pub fn outbound_secrets(&self) -> Vec<String> {
        let requests = self
            .tools
            .iter()
            .map(|t| &t.request)
            .chain(self.resources.iter().filter_map(|r| r.request()))
            .chain(self.resource_templates.iter().map(|t| t.request()))
            .chain(self.upstreams.iter().map(|u| &u.request))
            .chain(self.auth.iter().flat_map(|a| a.introspection.iter().map(|i| &i.request).chain(a.jwt.iter().map(|j| &j.jwks))));
        dedup(requests.flat_map(|r| r.secrets.iter().cloned()).collect())
    }
}

fn dedup(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_a_minimum_length() {
        assert_eq!(too_short(ADMIN_TOKEN, ""), None, "unset is not short");
        assert_eq!(too_short(ADMIN_TOKEN, &"k".repeat(32)), None);
        assert_eq!(
            too_short(ADMIN_TOKEN, "hunter2").as_deref(),
            Some("the secret MCP_EDGE_ADMIN_TOKEN is 7 characters long; it must have at least 32 (for example: openssl rand -hex 32)")
        );
    }

    #[test]
    fn a_catalog_names_its_secrets() {
        let config = serde_json::json!({
            "oauth": {"signIn": {"users": [{"username": "ann", "passwordSecret": "ANN_PASSWORD", "roles": ["admin"]}]}},
            "servers": [{
                "name": "s", "version": "1", "privateUpstreams": ["127.0.0.1"],
                "auth": {"tokens": [{"secret": "BOT_TOKEN", "subject": "bot"}], "oauth": true},
                "tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"},
                           "http": {"method": "GET", "url": "https://api.example.com/x", "headers": {"Authorization": "Bearer {env.API_KEY}"}}}]
            }]
        });
        let catalog = crate::config::load(&config.to_string()).unwrap();
        assert_eq!(catalog.own_secrets(), ["ANN_PASSWORD", "BOT_TOKEN", "CALLBACK_SIGNING_KEY", "MCP_EDGE_ADMIN_TOKEN", "OAUTH_SIGNING_KEY"]);
        assert_eq!(catalog.secret_names(), ["ANN_PASSWORD", "API_KEY", "BOT_TOKEN", "CALLBACK_SIGNING_KEY", "MCP_EDGE_ADMIN_TOKEN", "OAUTH_SIGNING_KEY"]);
    }
}
