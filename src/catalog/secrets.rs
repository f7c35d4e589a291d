//! The secrets a catalog names: the deployment's own (its keys, passwords, the identity
//! provider's secret, the tokens callers present), which no live change may put in a template,
//! and all of them, which no reply, log or trace may show.

use super::{Catalog, Server};
use crate::keys::OWN_KEYS;

impl Catalog {
    /// The secrets that are the deployment's own credentials: its keys, the configured users'
    /// passwords, the identity provider's client secret, the tokens callers present and the
    /// notify routes' secrets, the scrape token. A live edit's templates may not name them: a tool would send them
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
        names.extend(self.telemetry.secrets());
        // A connection's client secret authenticates mcp-edge at its provider.
        names.extend(self.connections.iter().filter_map(|c| c.client_secret.clone()));
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
            // An alias (`include`) sends them only where its source does: its own server's.
            .filter(|t| t.curation.is_none())
            .map(|t| &t.request)
            .chain(self.resources.iter().filter_map(|r| r.request()))
            .chain(self.resource_templates.iter().map(|t| t.request()))
            .chain(self.upstreams.iter().map(|u| &u.request))
            .chain(self.auth.iter().flat_map(|a| a.introspection.iter().map(|i| &i.request).chain(a.jwt.iter().map(|j| &j.jwks))));
        dedup(requests.flat_map(|r| r.secrets.iter().cloned()).collect())
    }
}

fn dedup(mut names: Vec<String>) -> Vec<String> {
    // Unstable: equal names are alike, and the module has one sort of strings.
    names.sort_unstable();
    names.dedup();
    names
}
