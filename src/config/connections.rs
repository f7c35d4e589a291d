//! The top-level `connections` section compiled into `connections::Connection`s, and the checks
//! of their users: a tool's or an upstream MCP server's `auth.connection`.

use super::model::{ConnectionConfig, OAuthConfig};
use super::request::{hosts, is_secret_name};
use super::ConfigError;
use crate::catalog::Server;
use crate::connections::{AuthMethod, Connection, Exchange, Grant, SubjectToken};
use crate::weburl::{listed, WebUrl};

/// Parameters the authorization request sets itself: `authorizationParams` may not set them.
const RESERVED: [&str; 9] = ["response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "scope", "resource", "request_uri"];

pub fn connections(list: Vec<ConnectionConfig>, oauth: Option<&OAuthConfig>) -> Result<Vec<Connection>, ConfigError> {
    let mut out: Vec<Connection> = Vec::new();
    for (i, c) in list.into_iter().enumerate() {
        let connection = connection(c, &format!("connections[{i}]"), oauth.is_some())?;
        if let Some(j) = out.iter().position(|e| e.name == connection.name) {
            return Err(ConfigError::at(format!("connections[{i}].name"), format!("{:?} is the name of connections[{j}] too", connection.name)));
        }
        out.push(connection);
    }
    Ok(out)
}

fn connection(c: ConnectionConfig, path: &str, oauth: bool) -> Result<Connection, ConfigError> {
    let at = |field: &str, msg: String| ConfigError::at(format!("{path}.{field}"), msg);
    if c.name.is_empty() || !c.name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-') {
        return Err(at("name", format!("{:?} must be letters, digits, `_` and `-`", c.name)));
    }
    let grant = match c.grant.as_deref() {
        None => Grant::AuthorizationCode,
        Some(g) => Grant::parse(g).ok_or_else(|| at("grant", format!("{g:?} is not \"authorization_code\", \"client_credentials\" or \"token_exchange\"")))?,
    };
    if grant == Grant::AuthorizationCode && !oauth {
        return Err(at("grant", "a per-user connection needs the top-level \"oauth\" section: the connect page signs the browser in through the console's sign-in".into()));
    }
    hosts(&c.private_hosts, &format!("{path}.privateHosts"))?;
    let url = |field: &str, value: Option<String>| value.map(|v| endpoint(&v, &c.private_hosts).map(|()| v).map_err(|why| at(field, why))).transpose();
    let issuer = url("issuer", c.issuer)?.map(|i| i.trim_end_matches('/').to_string());
    let authorization_endpoint = url("authorizationEndpoint", c.authorization_endpoint)?;
    let token_endpoint = url("tokenEndpoint", c.token_endpoint)?;
    let revocation_endpoint = url("revocationEndpoint", c.revocation_endpoint)?;
    if issuer.is_none() && token_endpoint.is_none() && (authorization_endpoint.is_some() || revocation_endpoint.is_some()) {
        return Err(at("tokenEndpoint", "explicit endpoints need the token endpoint (or an issuer to discover it)".into()));
    }
    if issuer.is_none() && token_endpoint.is_some() && authorization_endpoint.is_none() && grant == Grant::AuthorizationCode {
        return Err(at("authorizationEndpoint", "an authorization_code connection needs the authorization endpoint (or an issuer to discover it)".into()));
    }
    let explicit = issuer.is_some() || token_endpoint.is_some();
    if explicit && c.client_id.is_none() {
        return Err(at("clientId", "a configured provider needs mcp-edge's client id there".into()));
    }
    if c.client_id.as_deref().is_some_and(|id| id.is_empty() || id.chars().any(char::is_control)) {
        return Err(at("clientId", "must be printable and not empty".into()));
    }
    if let Some(name) = &c.client_secret {
        if !is_secret_name(name) {
            return Err(at("clientSecret", format!("{name:?} is not a secret name (letters, digits and _): name the Worker secret that holds it")));
        }
        if crate::keys::OWN_KEYS.contains(&name.as_str()) {
            return Err(at("clientSecret", format!("{name:?} is one of the deployment's own keys")));
        }
    }
    let auth_method = match (c.token_auth_method.as_deref(), &c.client_secret) {
        (None, Some(_)) => AuthMethod::ClientSecretBasic,
        (None, None) => AuthMethod::None,
        (Some(m), secret) => match (AuthMethod::parse(m), secret) {
            (None, _) => return Err(at("tokenAuthMethod", format!("{m:?} is not \"client_secret_basic\", \"client_secret_post\" or \"none\""))),
            (Some(AuthMethod::None), Some(_)) => return Err(at("tokenAuthMethod", "\"none\" sends no secret: leave clientSecret out".into())),
            (Some(AuthMethod::None), None) => AuthMethod::None,
            (Some(_), None) => return Err(at("clientSecret", format!("{m:?} needs the secret's name"))),
            (Some(method), Some(_)) => method,
        },
    };
    if grant == Grant::ClientCredentials && explicit && c.client_secret.is_none() {
        return Err(at("clientSecret", "client_credentials authenticates the client: name its secret".into()));
    }
    if let Some(i) = c.scopes.iter().position(|s| s.is_empty() || s.contains(|ch: char| ch.is_whitespace() || ch.is_control() || ch == '"' || ch == '\\')) {
        return Err(at(&format!("scopes[{i}]"), "a scope is one non-empty word (RFC 6749 §3.3)".into()));
    }
    if let Some(resource) = &c.resource {
        let parsed = WebUrl::parse(resource).map_err(|why| at("resource", why))?;
        if parsed.fragment().is_some() {
            return Err(at("resource", "an RFC 8707 resource has no fragment".into()));
        }
    }
    if let Some(name) = c.authorization_params.keys().find(|k| RESERVED.contains(&k.as_str()) || k.is_empty()) {
        return Err(at(&format!("authorizationParams.{name}"), "is set by mcp-edge itself".into()));
    }
    let exchange = match (grant, c.exchange) {
        (Grant::TokenExchange, Some(e)) => Some(Exchange {
            subject_token: match e.subject_token.as_str() {
                "identityProvider" => SubjectToken::IdentityProvider,
                "caller" => SubjectToken::Caller,
                other => return Err(at("exchange.subjectToken", format!("{other:?} is not \"identityProvider\" or \"caller\""))),
            },
            audience: e.audience,
            requested_token_type: e.requested_token_type,
        }),
        (Grant::TokenExchange, None) => return Err(at("exchange", "a token_exchange connection says which token it exchanges".into())),
        (_, Some(_)) => return Err(at("exchange", "only a token_exchange connection exchanges tokens".into())),
        (_, None) => None,
    };
    let title = c.title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| c.name.clone());
    Ok(Connection {
        name: c.name,
        title,
        grant,
        issuer,
        authorization_endpoint,
        token_endpoint,
        revocation_endpoint,
        client_id: c.client_id,
        client_secret: c.client_secret,
        auth_method,
        scopes: c.scopes,
        pkce: c.pkce,
        resource: c.resource,
        extra: c.authorization_params.into_iter().collect(),
        private_hosts: c.private_hosts,
        exchange,
    })
}

/// Why a provider's URL is refused, if it is: read by the one URL parser, https (http only for
/// a host in `privateHosts`, compared parsed), no user info or fragment.
fn endpoint(value: &str, private_hosts: &[String]) -> Result<(), String> {
    let parsed = WebUrl::parse(value)?;
    let allowed = match (parsed.scheme(), parsed.host()) {
        ("https", Some(_)) => true,
        ("http", Some(host)) => listed(private_hosts, host),
        _ => false,
    };
    if !allowed {
        return Err(format!("{value:?} must be an https URL (http only for a host in privateHosts)"));
    }
    if parsed.has_credentials() || parsed.fragment().is_some() {
        return Err(format!("{value:?} may not carry user info or a fragment"));
    }
    Ok(())
}

/// Each server's users of a connection: the connection exists, a tool's has a provider of its
/// own, and a server whose users need a principal has an auth that yields one.
pub fn users(servers: &[std::sync::Arc<Server>], connections: &[Connection]) -> Result<(), ConfigError> {
    for (i, server) in servers.iter().enumerate() {
        let taken = server.endpoints.iter().find(|(route, _)| crate::paths::answers(crate::paths::Owner::Connections, route.as_str()));
        if let Some((route, _)) = taken.filter(|_| !connections.is_empty()) {
            return Err(ConfigError::at(format!("servers[{i}].route"), format!("{} is under {}, which the connections' pages answer", route.as_str(), crate::paths::CONNECTIONS)));
        }
        // An alias (`include`) calls as its source does: its server must say who calls too.
        let tools = server.tools.iter().enumerate().map(|(j, t)| (if t.curation.is_some() { "include".to_string() } else { format!("tools[{j}]") }, t.connection.as_deref(), true));
        let upstreams = server.upstreams.iter().enumerate().map(|(j, u)| (format!("upstreams[{j}]"), u.connection.as_deref(), false));
        for (at, name, tool) in tools.chain(upstreams) {
            let Some(name) = name else { continue };
            let at = if at == "include" { format!("servers[{i}].include") } else { format!("servers[{i}].{at}.auth.connection") };
            let Some(c) = connections.iter().find(|c| c.name == name) else {
                return Err(ConfigError::at(at, format!("unknown connection {name:?}: not in the top-level \"connections\"")));
            };
            if tool && c.from_upstream() {
                return Err(ConfigError::at(at, format!("connection {name:?} has no provider (issuer or endpoints); only an upstream MCP server's may be discovered from it")));
            }
            let principal = server.auth.as_ref().is_some_and(|a| a.oauth || a.jwt.is_some() || a.introspection.is_some());
            if c.grant.per_principal() && !principal {
                return Err(ConfigError::at(at, format!("connection {name:?} is per user: the server's auth must say who calls (oauth, jwt or introspection; not none, not static tokens)")));
            }
            // The connect page knows the browser by its console sign-in, which is mcp-edge's own
            // sign-in or the host application's session (introspection): a JWT's principal
            // (`jwt:<issuer>|<sub>`) is never the one the console signs in, so its link would
            // always be refused as someone else's.
            let signs_in = server.auth.as_ref().is_some_and(|a| a.oauth || a.introspection.is_some());
            if c.grant == crate::connections::Grant::AuthorizationCode && !signs_in {
                return Err(ConfigError::at(at, format!("connection {name:?} is connected by each user on the connect page, which knows them by the console's sign-in: the server's auth must be oauth or introspection (a JWT's caller is not the person the console signs in)")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::load;
    use crate::connections::{AuthMethod, Grant};

    const OAUTH: &str = r#""oauth":{"signIn":{"users":[{"username":"a","passwordSecret":"A_PW"}]}}"#;
    const GITHUB: &str = r#"{"name":"github","title":"GitHub","authorizationEndpoint":"https://github.com/login/oauth/authorize","tokenEndpoint":"https://github.com/login/oauth/access_token","clientId":"Iv1.abc","clientSecret":"GITHUB_SECRET","scopes":["repo"]}"#;

    fn config(connections: &str, auth: &str, tool_auth: &str, headers: &str) -> String {
        format!(
            r#"{{{OAUTH},"connections":[{connections}],"servers":[{{"name":"s","version":"1","auth":{auth},
            "tools":[{{"name":"me","auth":{tool_auth},"http":{{"method":"GET","url":"https://api.github.com/user","headers":{headers}}}}}]}}]}}"#
        )
    }

    fn err(text: &str) -> String {
        load(text).map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn a_connection_compiles_and_its_tool_gets_the_bearer_header() {
        let catalog = load(&config(GITHUB, r#"{"oauth":true}"#, r#"{"connection":"github"}"#, "{}")).unwrap();
        let c = &catalog.connections[0];
        assert_eq!((c.name.as_str(), c.title.as_str(), c.grant, c.auth_method, c.pkce), ("github", "GitHub", Grant::AuthorizationCode, AuthMethod::ClientSecretBasic, true));
        let provider = c.provider(Some("s3cret".into())).unwrap();
        assert_eq!((provider.token_endpoint.as_str(), provider.client_id.as_str(), provider.client_secret.as_deref()), ("https://github.com/login/oauth/access_token", "Iv1.abc", Some("s3cret")));
        assert!(catalog.own_secrets().contains(&"GITHUB_SECRET".to_string()));
        let tool = &catalog.servers[0].tools[0];
        assert_eq!(tool.connection.as_deref(), Some("github"));
        let bindings = [("connection.access_token".to_string(), serde_json::json!("gho_x"))].into_iter().collect();
        let call = tool.request.render("t", &serde_json::Map::new(), &bindings).unwrap();
        assert!(call.headers.iter().any(|(k, v)| k == "Authorization" && v == "Bearer gho_x"), "{:?}", call.headers);
        // A template that names the token puts it there, and nothing is added.
        let catalog = load(&config(GITHUB, r#"{"oauth":true}"#, r#"{"connection":"github"}"#, r#"{"X-Token":"token {connection.access_token}"}"#)).unwrap();
        let call = catalog.servers[0].tools[0].request.render("t", &serde_json::Map::new(), &bindings).unwrap();
        assert!(call.headers.iter().any(|(k, v)| k == "X-Token" && v == "token gho_x") && !call.headers.iter().any(|(k, _)| k == "Authorization"));
    }

    #[test]
    fn check_refuses_what_cannot_work() {
        let ok_auth = r#"{"oauth":true}"#;
        let use_github = r#"{"connection":"github"}"#;
        let cases = [
            (config(GITHUB, ok_auth, r#"{"connection":"gitlab"}"#, "{}"), r#"servers[0].tools[0].auth.connection: unknown connection "gitlab": not in the top-level "connections""#),
            (config(GITHUB, "null", use_github, "{}"), r#"servers[0].tools[0].auth.connection: connection "github" is per user: the server's auth must say who calls (oauth, jwt or introspection; not none, not static tokens)"#),
            (config(GITHUB, r#"{"tokens":[{"secret":"T","subject":"bot"}]}"#, use_github, "{}"), r#"servers[0].tools[0].auth.connection: connection "github" is per user: the server's auth must say who calls (oauth, jwt or introspection; not none, not static tokens)"#),
            (config(GITHUB, r#"{"jwt":{"issuer":"https://idp.example","audience":"https://mcp.example/mcp","jwks":{"url":"https://idp.example/jwks"}}}"#, use_github, "{}"), r#"servers[0].tools[0].auth.connection: connection "github" is connected by each user on the connect page, which knows them by the console's sign-in: the server's auth must be oauth or introspection (a JWT's caller is not the person the console signs in)"#),
            (config(GITHUB, ok_auth, "null", r#"{"A":"{connection.access_token}"}"#), r#"servers[0].tools[0].http.headers.A: "connection.access_token" needs "auth": {"connection": …}"#),
            (config(GITHUB, ok_auth, use_github, r#"{"A":"{connection.refresh_token}"}"#), r#"servers[0].tools[0].http.headers.A: unknown connection field "connection.refresh_token" in template: only connection.access_token"#),
            (config(GITHUB, ok_auth, use_github, r#"{"authorization":"Bearer {env.X}"}"#), "servers[0].tools[0].http.headers.authorization: the connection's token goes in Authorization: name {connection.access_token} in a template to put it elsewhere"),
            (config(&GITHUB.replace("github\",\"title", "git hub\",\"title"), ok_auth, "null", "{}"), r#"connections[0].name: "git hub" must be letters, digits, `_` and `-`"#),
            (config(&format!("{GITHUB},{GITHUB}"), ok_auth, "null", "{}"), r#"connections[1].name: "github" is the name of connections[0] too"#),
            (config(&GITHUB.replace("https://github.com/login/oauth/access_token", "http://github.com/t"), ok_auth, "null", "{}"), r#"connections[0].tokenEndpoint: "http://github.com/t" must be an https URL (http only for a host in privateHosts)"#),
            (config(&GITHUB.replace("\"clientSecret\":\"GITHUB_SECRET\"", "\"clientSecret\":\"ghs_abc-def\""), ok_auth, "null", "{}"), r#"connections[0].clientSecret: "ghs_abc-def" is not a secret name (letters, digits and _): name the Worker secret that holds it"#),
            (config(&GITHUB.replace("GITHUB_SECRET", "OAUTH_SIGNING_KEY"), ok_auth, "null", "{}"), r#"connections[0].clientSecret: "OAUTH_SIGNING_KEY" is one of the deployment's own keys"#),
            (config(&GITHUB.replace("\"scopes\"", "\"tokenAuthMethod\":\"none\",\"scopes\""), ok_auth, "null", "{}"), r#"connections[0].tokenAuthMethod: "none" sends no secret: leave clientSecret out"#),
            (config(&GITHUB.replace("\"scopes\"", "\"authorizationParams\":{\"redirect_uri\":\"https://evil.test\"},\"scopes\""), ok_auth, "null", "{}"), "connections[0].authorizationParams.redirect_uri: is set by mcp-edge itself"),
            (config(&GITHUB.replace("\"scopes\"", "\"grant\":\"password\",\"scopes\""), ok_auth, "null", "{}"), r#"connections[0].grant: "password" is not "authorization_code", "client_credentials" or "token_exchange""#),
            (config(&GITHUB.replace("\"scopes\"", "\"grant\":\"token_exchange\",\"scopes\""), ok_auth, "null", "{}"), "connections[0].exchange: a token_exchange connection says which token it exchanges"),
            (config(&GITHUB.replace("\"scopes\"", "\"exchange\":{\"subjectToken\":\"caller\"},\"scopes\""), ok_auth, "null", "{}"), "connections[0].exchange: only a token_exchange connection exchanges tokens"),
            (config(r#"{"name":"x","authorizationEndpoint":"https://p.test/a"}"#, ok_auth, "null", "{}"), "connections[0].tokenEndpoint: explicit endpoints need the token endpoint (or an issuer to discover it)"),
            (config(r#"{"name":"x","issuer":"https://p.test"}"#, ok_auth, "null", "{}"), "connections[0].clientId: a configured provider needs mcp-edge's client id there"),
            (config(r#"{"name":"x"}"#, ok_auth, r#"{"connection":"x"}"#, "{}"), r#"servers[0].tools[0].auth.connection: connection "x" has no provider (issuer or endpoints); only an upstream MCP server's may be discovered from it"#),
        ];
        for (text, want) in cases {
            assert_eq!(err(&text), want);
        }
        let taken = config(GITHUB, ok_auth, "null", "{}").replace(r#""name":"s","version":"1","#, r#""name":"s","version":"1","route":"/connections/mcp","#);
        assert_eq!(err(&taken), "servers[0].route: /connections/mcp is under /connections, which the connections' pages answer");
        // Per-user connections need the authorization server: its sign-in is the connect page's.
        let without_oauth = config(GITHUB, ok_auth, "null", "{}").replace(&format!("{OAUTH},"), "");
        assert_eq!(err(&without_oauth), "connections[0].grant: a per-user connection needs the top-level \"oauth\" section: the connect page signs the browser in through the console's sign-in");
        // A queued tool's request waits in a queue message: no token in it.
        let queued = config(GITHUB, ok_auth, use_github, "{}").replace(r#""name":"me","#, r#""name":"me","execution":"queued","#);
        assert_eq!(err(&queued), "servers[0].tools[0].auth.connection: only direct tools may use a connection; this one is queued or callback");
    }

    #[test]
    fn deployment_connections_and_upstreams() {
        // Client credentials need no principal; an upstream MCP server may leave the provider to
        // discovery from the server.
        let cc = r#"{"name":"svc","grant":"client_credentials","tokenEndpoint":"https://p.test/token","clientId":"c","clientSecret":"SVC_SECRET"}"#;
        let text = format!(
            r#"{{"connections":[{cc},{{"name":"linear","grant":"client_credentials"}}],"servers":[{{"name":"s","version":"1",
            "tools":[{{"name":"t","auth":{{"connection":"svc"}},"http":{{"url":"https://api.test/x"}}}}],
            "upstreams":[{{"name":"lin","prefix":"lin_","url":"https://mcp.linear.test/mcp","auth":{{"connection":"linear"}}}}]}}]}}"#
        );
        let catalog = load(&text).unwrap();
        assert_eq!(catalog.servers[0].upstreams[0].connection.as_deref(), Some("linear"));
        assert!(catalog.connections[1].from_upstream() && catalog.connections[1].provider(None).is_none());
        let bindings = [("connection.access_token".to_string(), serde_json::json!("lin_tok"))].into_iter().collect();
        let call = catalog.servers[0].upstreams[0].request.render("u", &serde_json::Map::new(), &bindings).unwrap();
        assert!(call.headers.iter().any(|(k, v)| k == "Authorization" && v == "Bearer lin_tok"));
        assert_eq!(err(&text.replace("\"clientSecret\":\"SVC_SECRET\"", "\"tokenAuthMethod\":\"none\"")), "connections[0].clientSecret: client_credentials authenticates the client: name its secret");
    }
}
