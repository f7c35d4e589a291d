//! Connections: mcp-edge as an OAuth client of upstream providers, each user's own account
//! (authorization code) or the deployment's (client credentials, token exchange). Pure: the
//! compiled `connections[]` entries, the provider they resolve to, and the tokens they yield.
//! The edge (`edge/connections/`) fetches, stores and refreshes them.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
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
/// principal's tokens sealed, one per connection.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
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
