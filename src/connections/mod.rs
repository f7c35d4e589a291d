//! Connections: mcp-edge as an OAuth client of upstream providers, each user's own account
//! (authorization code) or the deployment's (client credentials, token exchange). Pure: the
//! compiled `connections[]` entries, the provider they resolve to, and the tokens they yield.
//! The edge (`edge/connections/`) fetches, stores and refreshes them.

use serde_json::Value;

/// How a connection gets its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Each user's own account, through the connect page (RFC 6749 §4.1, PKCE).
    AuthorizationCode,
    /// The deployment's own client (RFC 6749 §4.4).
    ClientCredentials,
    /// The caller's token exchanged at a security token service (RFC 8693).
    TokenExchange,
}

impl Grant {
    pub fn parse(name: &str) -> Option<Grant> {
        Some(match name {
            "authorization_code" => Grant::AuthorizationCode,
            "client_credentials" => Grant::ClientCredentials,
            "token_exchange" => Grant::TokenExchange,
            _ => return None,
        })
    }

    /// Whether each principal has its own token: the call needs a principal.
    pub fn per_principal(self) -> bool {
        !matches!(self, Grant::ClientCredentials)
    }
}

/// How mcp-edge authenticates itself at the provider's token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    ClientSecretBasic,
    ClientSecretPost,
    None,
}

impl AuthMethod {
    pub fn parse(name: &str) -> Option<AuthMethod> {
        Some(match name {
            "client_secret_basic" => AuthMethod::ClientSecretBasic,
            "client_secret_post" => AuthMethod::ClientSecretPost,
            "none" => AuthMethod::None,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::None => "none",
        }
    }
}

/// Which token an RFC 8693 exchange sends as its `subject_token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectToken {
    /// The identity provider's token the principal signed in with (`principal.upstream_token`).
    IdentityProvider,
    /// The caller's own credential for mcp-edge.
    Caller,
}

/// `connections[].exchange`, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub subject_token: SubjectToken,
    pub audience: Option<String>,
    pub requested_token_type: Option<String>,
}

/// One `connections[]` entry, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub name: String,
    /// What the connect page and the console call it.
    pub title: String,
    pub grant: Grant,
    /// Discovery (OIDC / RFC 8414) from this issuer, for the endpoints not given explicitly.
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    /// `None` only for a provider discovered from an upstream MCP server.
    pub client_id: Option<String>,
    /// The name of the Worker secret holding the client secret.
    pub client_secret: Option<String>,
    pub auth_method: AuthMethod,
    pub scopes: Vec<String>,
    pub pkce: bool,
    pub resource: Option<String>,
    /// Extra authorization request parameters, in the order written.
    pub extra: Vec<(String, String)>,
    /// Provider hosts allowed on private addresses or plain http.
    pub private_hosts: Vec<String>,
    pub exchange: Option<Exchange>,
}

impl Connection {
    /// Whether neither discovery nor endpoints are configured: the provider is the one an
    /// upstream MCP server names (RFC 9728), found at run time.
    pub fn from_upstream(&self) -> bool {
        self.issuer.is_none() && self.token_endpoint.is_none()
    }

    /// The provider from the configuration alone, when it names every endpoint it needs;
    /// `secret` is the client secret's value. `None`: discovery fills the rest.
    pub fn provider(&self, secret: Option<String>) -> Option<Provider> {
        let token_endpoint = self.token_endpoint.clone()?;
        let authorization_endpoint = match self.grant {
            Grant::AuthorizationCode => self.authorization_endpoint.clone()?,
            _ => self.authorization_endpoint.clone().unwrap_or_default(),
        };
        Some(Provider {
            authorization_endpoint,
            token_endpoint,
            revocation_endpoint: self.revocation_endpoint.clone(),
            client_id: self.client_id.clone()?,
            client_secret: secret,
            auth_method: self.auth_method,
            scopes: self.scopes.clone(),
            resource: self.resource.clone(),
            extra: self.extra.clone(),
        })
    }
}

/// A connection's provider as a request to it needs it: endpoints known (configured or
/// discovered), the client secret's value read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// Empty for grants without a user (client credentials, token exchange).
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub revocation_endpoint: Option<String>,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub auth_method: AuthMethod,
    pub scopes: Vec<String>,
    pub resource: Option<String>,
    pub extra: Vec<(String, String)>,
}

/// A token a connection yields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Token {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at_ms: Option<u64>,
    pub scope: Option<String>,
    pub token_type: String,
}

/// The template variable a tool or an upstream names the connection's token by.
pub const ACCESS_TOKEN_VARIABLE: &str = "connection.access_token";

/// What the Worker asks of a principal's object (`connection:<digest>`), which keeps that
/// principal's tokens sealed, one per connection. Written and read as JSON by hand (as are
/// `Token` and `Provider`): serde's derives of them cost the module more than the feature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// The connection's token; refreshed first when it expires soon (or `force`: the upstream
    /// refused it) and `provider` is given. Answers `{"token": …}`, or `{}`: not connected.
    Get { principal: String, connection: String, provider: Option<Provider>, private_hosts: Vec<String>, force: bool, now_ms: u64 },
    /// A token the callback got: kept, sealed.
    Put { principal: String, connection: String, token: Token, now_ms: u64 },
    /// Forgets the connection; answers the token it held, for its revocation.
    Delete { principal: String, connection: String },
    /// Every connection's `since` and `scope`, never a token (the console's list).
    List { principal: String },
    /// A connect state's nonce, used once: answers `{"claimed": true}` the first time.
    Claim { nonce: String, until_ms: u64, now_ms: u64 },
}

/// A JSON object of these members, in order: one loop rather than `json!`'s code per member.
pub(crate) fn members(members: Vec<(&str, Value)>) -> Value {
    Value::Object(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

pub(crate) fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_string)
}

fn texts(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

impl Command {
    pub fn to_json(&self) -> String {
        let who = |op: &str, principal: &str, connection: &str| vec![("op", Value::from(op)), ("principal", Value::from(principal)), ("connection", Value::from(connection))];
        let members = match self {
            Command::Get { principal, connection, provider, private_hosts, force, now_ms } => {
                let mut m = who("get", principal, connection);
                m.extend([("provider", provider.as_ref().map_or(Value::Null, Provider::to_json)), ("hosts", Value::from(private_hosts.clone())), ("force", Value::Bool(*force)), ("now", Value::from(*now_ms))]);
                m
            }
            Command::Put { principal, connection, token, now_ms } => {
                let mut m = who("put", principal, connection);
                m.extend([("token", token.to_json()), ("now", Value::from(*now_ms))]);
                m
            }
            Command::Delete { principal, connection } => who("delete", principal, connection),
            Command::List { principal } => who("list", principal, ""),
            Command::Claim { nonce, until_ms, now_ms } => vec![("op", Value::from("claim")), ("nonce", Value::from(nonce.as_str())), ("until", Value::from(*until_ms)), ("now", Value::from(*now_ms))],
        };
        self::members(members).to_string()
    }

    pub fn parse(body: &[u8]) -> Option<Command> {
        let v: Value = serde_json::from_slice(body).ok()?;
        let now_ms = v.get("now").and_then(Value::as_u64).unwrap_or_default();
        let (principal, connection) = (text(&v, "principal").unwrap_or_default(), text(&v, "connection").unwrap_or_default());
        Some(match v.get("op")?.as_str()? {
            "get" => Command::Get { principal, connection, provider: v.get("provider").and_then(Provider::from_json), private_hosts: texts(&v, "hosts"), force: v.get("force") == Some(&Value::Bool(true)), now_ms },
            "put" => Command::Put { principal, connection, token: Token::from_json(v.get("token")?)?, now_ms },
            "delete" => Command::Delete { principal, connection },
            "list" => Command::List { principal },
            "claim" => Command::Claim { nonce: text(&v, "nonce")?, until_ms: v.get("until")?.as_u64()?, now_ms },
            _ => return None,
        })
    }
}

impl Token {
    pub fn to_json(&self) -> Value {
        members(vec![
            ("access_token", Value::from(self.access_token.as_str())),
            ("refresh_token", Value::from(self.refresh_token.clone())),
            ("expires_at_ms", Value::from(self.expires_at_ms)),
            ("scope", Value::from(self.scope.clone())),
            ("token_type", Value::from(self.token_type.as_str())),
        ])
    }

    pub fn from_json(v: &Value) -> Option<Token> {
        Some(Token {
            access_token: text(v, "access_token")?,
            refresh_token: text(v, "refresh_token"),
            expires_at_ms: v.get("expires_at_ms").and_then(Value::as_u64),
            scope: text(v, "scope"),
            token_type: text(v, "token_type").unwrap_or_default(),
        })
    }
}

impl Provider {
    pub fn to_json(&self) -> Value {
        let extra: Vec<Value> = self.extra.iter().map(|(k, v)| Value::from(vec![k.as_str(), v.as_str()])).collect();
        members(vec![
            ("authorization_endpoint", Value::from(self.authorization_endpoint.as_str())),
            ("token_endpoint", Value::from(self.token_endpoint.as_str())),
            ("revocation_endpoint", Value::from(self.revocation_endpoint.clone())),
            ("client_id", Value::from(self.client_id.as_str())),
            ("client_secret", Value::from(self.client_secret.clone())),
            ("auth_method", Value::from(self.auth_method.name())),
            ("scopes", Value::from(self.scopes.clone())),
            ("resource", Value::from(self.resource.clone())),
            ("extra", Value::Array(extra)),
        ])
    }

    pub fn from_json(v: &Value) -> Option<Provider> {
        let extra = v.get("extra").and_then(Value::as_array).map(|a| a.iter().filter_map(|p| Some((p.get(0)?.as_str()?.to_string(), p.get(1)?.as_str()?.to_string()))).collect()).unwrap_or_default();
        Some(Provider {
            authorization_endpoint: text(v, "authorization_endpoint").unwrap_or_default(),
            token_endpoint: text(v, "token_endpoint")?,
            revocation_endpoint: text(v, "revocation_endpoint"),
            client_id: text(v, "client_id")?,
            client_secret: text(v, "client_secret"),
            auth_method: AuthMethod::parse(&text(v, "auth_method")?)?,
            scopes: texts(v, "scopes"),
            resource: text(v, "resource"),
            extra,
        })
    }
}

/// The principal's object's name: a digest, so that no principal id is spelled in an object
/// name (nor its length limited by one).
pub fn object(principal: &str) -> String {
    format!("connection:{}", crate::oauth::digest(principal))
}

/// How long before its expiry a token is refreshed: a call begun with it must not see it expire.
pub const REFRESH_MARGIN_MS: u64 = 30_000;

pub mod flow;
pub mod page;
pub mod sealed;

pub mod discovery;
pub mod exchange;
pub mod register;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_through_their_json() {
        let provider = Provider {
            authorization_endpoint: "https://p.test/a".into(),
            token_endpoint: "https://p.test/t".into(),
            revocation_endpoint: None,
            client_id: "c".into(),
            client_secret: Some("s\"\\".into()),
            auth_method: AuthMethod::ClientSecretPost,
            scopes: vec!["a".into(), "b".into()],
            resource: Some("https://api.test".into()),
            extra: vec![("prompt".into(), "consent".into())],
        };
        let token = Token { access_token: "at".into(), refresh_token: Some("rt".into()), expires_at_ms: Some(9), scope: None, token_type: "Bearer".into() };
        for command in [
            Command::Get { principal: "user:a".into(), connection: "gh".into(), provider: Some(provider.clone()), private_hosts: vec!["127.0.0.1".into()], force: true, now_ms: 5 },
            Command::Get { principal: "user:a".into(), connection: "gh".into(), provider: None, private_hosts: vec![], force: false, now_ms: 5 },
            Command::Put { principal: "user:a".into(), connection: "gh".into(), token: token.clone(), now_ms: 6 },
            Command::Delete { principal: "user:a".into(), connection: "gh".into() },
            Command::List { principal: "user:a".into() },
            Command::Claim { nonce: "n".into(), until_ms: 7, now_ms: 6 },
        ] {
            assert_eq!(Command::parse(command.to_json().as_bytes()), Some(command));
        }
        assert_eq!(Command::parse(br#"{"op":"drop"}"#), None);
        assert_eq!(Command::parse(br#"{"op":"put","token":{}}"#), None, "a token without its access token");
        assert_eq!(object("user:a"), format!("connection:{}", crate::oauth::digest("user:a")));
    }
}
