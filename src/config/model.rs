//! The configuration file as written: plain serde structs, before any validation.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

// What the file says and what is served alike: the catalog owns these.
pub use crate::cache::CacheScope;
pub use crate::catalog::RequestLogging;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigFile {
    /// Lets editors find a JSON Schema; ignored by the server.
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    pub servers: Vec<ServerConfig>,
    /// Which requests write a log line: `requests` (all), `failures` (status 400 and up), `off`.
    #[serde(default)]
    pub log: RequestLogging,
    /// mcp-edge as its own OAuth 2.1 authorization server, for servers with `"auth": {"oauth": true}`.
    #[serde(default)]
    pub oauth: Option<OAuthConfig>,
    /// The status page at `/`: who may see it.
    #[serde(default)]
    pub console: ConsoleConfig,
    /// The admin API: what live changes may name.
    #[serde(default)]
    pub admin: AdminConfig,
    /// The built-in per-address limit on the authorization server, the console's sign-in and the
    /// admin API.
    #[serde(default)]
    pub admission: AdmissionConfig,
    /// Traces and metrics: the OTLP collector, sampling, who may scrape `/metrics`.
    #[serde(default)]
    pub telemetry: super::telemetry::TelemetryConfig,
    /// OAuth connections to upstream APIs and MCP servers, each user's own (`authorization_code`)
    /// or the deployment's: what a tool's or an upstream's `auth.connection` names.
    #[serde(default)]
    pub connections: Vec<ConnectionConfig>,
}

/// `connections[]`: an OAuth 2.x / OpenID Connect provider and the client mcp-edge is there.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionConfig {
    /// What `auth.connection` names: letters, digits, `_` and `-`.
    pub name: String,
    /// Shown on the connect page and the console; absent: the name.
    #[serde(default)]
    pub title: Option<String>,
    /// `authorization_code` (default: each user's own account), `client_credentials` or
    /// `token_exchange`.
    #[serde(default)]
    pub grant: Option<String>,
    /// The provider's issuer, for OpenID Connect / RFC 8414 discovery of its endpoints.
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// RFC 7009: where a disconnect revokes the grant.
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    /// mcp-edge's client id at the provider; absent only for a provider discovered from an
    /// upstream MCP server (a metadata document or dynamic registration gives one).
    #[serde(default)]
    pub client_id: Option<String>,
    /// The name of the Worker secret holding the client secret (never the value).
    #[serde(default)]
    pub client_secret: Option<String>,
    /// `client_secret_basic` (default with a secret), `client_secret_post` or `none`.
    #[serde(default)]
    pub token_auth_method: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// PKCE (S256) on the authorization request; on unless the provider refuses it.
    #[serde(default = "yes")]
    pub pkce: bool,
    /// RFC 8707 resource indicator sent with the authorization and token requests.
    #[serde(default)]
    pub resource: Option<String>,
    /// Added to the authorization request: `access_type`, `prompt`, …
    #[serde(default)]
    pub authorization_params: BTreeMap<String, String>,
    /// Provider hosts that may be on private addresses or plain http (local development, tests).
    #[serde(default)]
    pub private_hosts: Vec<String>,
    /// `token_exchange` only (RFC 8693): which token is exchanged, for what.
    #[serde(default)]
    pub exchange: Option<ExchangeConfig>,
}

fn yes() -> bool {
    true
}

/// `connections[].exchange`: an RFC 8693 token exchange.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExchangeConfig {
    /// `identityProvider` (the sign-in provider's token the principal carries) or `caller` (the
    /// caller's own token for mcp-edge).
    pub subject_token: String,
    #[serde(default)]
    pub audience: Option<String>,
    #[serde(default)]
    pub requested_token_type: Option<String>,
}

/// A tool's or an upstream MCP server's `auth`: the connection whose token its requests carry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UseConnectionConfig {
    /// A `connections[].name`.
    pub connection: String,
}

/// `admin`: what live changes through the admin API may do.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdminConfig {
    /// The only secrets a live change may name in a template (besides those the file already
    /// names for the same server). Absent: any but the deployment's own keys.
    #[serde(default)]
    pub secrets: Option<Vec<String>>,
}

/// `admission`: requests per client address to the authorization server's endpoints, the
/// console's sign-in and the admin API, counted across isolates.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionConfig {
    #[serde(default = "default_true")]
    pub enabled: bool,
    #[serde(default = "default_admission_requests")]
    pub requests: u32,
    #[serde(default = "default_admission_period")]
    pub period_seconds: u64,
    /// Dynamic Client Registrations per address and hour (within `requests`).
    #[serde(default = "default_registrations")]
    pub registrations_per_hour: u32,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig { enabled: true, requests: default_admission_requests(), period_seconds: default_admission_period(), registrations_per_hour: default_registrations() }
    }
}

fn default_registrations() -> u32 {
    crate::admission::PerAddress::default().registrations_per_hour
}

fn default_admission_requests() -> u32 {
    crate::admission::PerAddress::default().requests
}

fn default_admission_period() -> u64 {
    crate::admission::PerAddress::default().period_ms / 1000
}

/// The status page at `/` (when no server's route is `/`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleConfig {
    /// `public` (default): anyone sees the servers, and the tools of servers without `auth`.
    /// `signed-in`: only principals signed in to the console, with one of `roles`.
    /// `off`: `/` is a 404, as before the console existed. A text, not an enum, so a typo gets a
    /// message with its path.
    #[serde(default = "default_console_access")]
    pub access: String,
    /// With `signed-in`: the roles that may see the page (any one; none listed: any signed-in
    /// principal). `admin` always may.
    #[serde(default)]
    pub roles: Vec<String>,
    /// The health figures: per tool, the last hour's calls, errors and latency.
    #[serde(default)]
    pub health: HealthConfig,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig { access: default_console_access(), roles: Vec::new(), health: HealthConfig::default() }
    }
}

/// `console.health`: whether calls are counted, and where else each is written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HealthConfig {
    /// Count each tool call's outcome and latency (default `true`).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// A Workers Analytics Engine binding: each call is also written there as a data point.
    #[serde(default)]
    pub analytics_engine: Option<String>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig { enabled: true, analytics_engine: None }
    }
}

fn default_console_access() -> String {
    "public".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthConfig {
    /// Who signs in at the authorization step: exactly one of `users`, `oidc`, `introspection`.
    pub sign_in: SignInConfig,
    /// Dynamic Client Registration at `/register`: `off`, `open`, or `token` (with
    /// `initialAccessTokenSecret`).
    #[serde(default = "default_registration")]
    pub registration: String,
    /// The secret whose value `/register` needs as a bearer token when `registration` is `token`.
    #[serde(default)]
    pub initial_access_token_secret: Option<String>,
    /// Clients registered here rather than through `/register`.
    #[serde(default)]
    pub clients: Vec<OAuthClientConfig>,
    /// Accept a `client_id` that is an HTTPS URL naming a Client ID Metadata Document.
    #[serde(default = "default_true")]
    pub client_id_metadata_documents: bool,
    #[serde(default = "default_access_token_ttl")]
    pub access_token_ttl_seconds: u64,
    #[serde(default = "default_refresh_token_ttl")]
    pub refresh_token_ttl_seconds: u64,
    #[serde(default = "default_code_ttl")]
    pub code_ttl_seconds: u64,
    /// Scopes clients may ask for (`scopes_supported`); none: the `scope` parameter is ignored.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Skip the consent page when a user already allowed a client (the same scopes).
    #[serde(default = "default_true")]
    pub remember_consent: bool,
    /// Identity-provider and metadata-document hosts on private or loopback addresses that may be
    /// fetched anyway: local development.
    #[serde(default)]
    pub private_hosts: Vec<String>,
    /// Requests to `/register`, `/token`, `/revoke` and the sign-in form per client address.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
}

fn default_registration() -> String {
    "open".into()
}

fn default_access_token_ttl() -> u64 {
    600
}

fn default_refresh_token_ttl() -> u64 {
    30 * 24 * 3600
}

fn default_code_ttl() -> u64 {
    60
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInConfig {
    /// (c) A short list of users whose passwords are secrets.
    #[serde(default)]
    pub users: Option<Vec<UserConfig>>,
    /// (a) An upstream OpenID Connect or OAuth 2 identity provider.
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
    /// (b) The resource server's own `auth` (its cookie and introspection) decides who is
    /// signed in; `loginUrl` is where a browser without a session is sent.
    #[serde(default)]
    pub introspection: Option<IntrospectionSignInConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserConfig {
    pub username: String,
    /// The secret holding the password, or its `pbkdf2-sha256$…` hash (`mcp-edge hash-password`).
    pub password_secret: String,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub email: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    /// The secret holding the client secret mcp-edge authenticates with at the provider.
    pub secret: String,
    #[serde(default = "default_oidc_scopes")]
    pub scopes: Vec<String>,
    /// Endpoints, for providers without OpenID discovery (GitHub); otherwise discovered.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    #[serde(default)]
    pub userinfo_endpoint: Option<String>,
    /// JSON Pointers into the userinfo answer.
    #[serde(default = "default_subject_pointer")]
    pub subject: String,
    #[serde(default = "default_email_pointer")]
    pub email: String,
    #[serde(default = "default_groups_pointer")]
    pub groups: String,
    /// Roles granted by subject, email or group.
    #[serde(default)]
    pub role_map: BTreeMap<String, Vec<String>>,
    /// Roles every user of the provider gets.
    #[serde(default)]
    pub default_roles: Vec<String>,
    /// How mcp-edge authenticates at the provider's token endpoint: `client_secret_basic`
    /// (default) or `client_secret_post` (GitHub documents this one).
    #[serde(default)]
    pub token_auth_method: Option<String>,
}

fn default_oidc_scopes() -> Vec<String> {
    vec!["openid".into(), "email".into(), "profile".into()]
}

fn default_email_pointer() -> String {
    "/email".into()
}

fn default_groups_pointer() -> String {
    "/groups".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntrospectionSignInConfig {
    /// The host application's sign-in page; `{return}` is replaced by the `/authorize` URL.
    pub login_url: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthClientConfig {
    pub client_id: String,
    /// The secret holding the client's secret; absent: a public client (PKCE only).
    #[serde(default)]
    pub secret: Option<String>,
    pub redirect_uris: Vec<String>,
    #[serde(default)]
    pub name: Option<String>,
}

/// How long a client may reuse a result, and who may share it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CacheConfig {
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    #[serde(default)]
    pub scope: Option<CacheScope>,
    /// A tool's only: its results kept at the edge and served again (`docs/caching.md`).
    #[serde(default)]
    pub results: Option<ResultsCacheConfig>,
}

/// A tool's results kept in the Workers Cache API: for everyone (`public`) or per principal
/// (`principal`), `ttlMs` long, results up to `maxBytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResultsCacheConfig {
    pub scope: crate::cache::ResultScope,
    pub ttl_ms: u64,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerConfig {
    /// Path of the Streamable HTTP endpoint, e.g. `/mcp` or `/api/v1/interactions/{chat_uuid}/mcp`.
    #[serde(default = "default_route")]
    pub route: String,
    /// Path of the always-streaming alias; defaults to the route with its last segment `stream`.
    #[serde(default)]
    pub stream_route: Option<String>,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    /// Browser origins allowed to call this server. Absent: loopback and the server's own origin.
    #[serde(default)]
    pub allowed_origins: Option<Vec<String>>,
    /// Host names, besides loopback ones, under which a local server (`wrangler dev`) may be reached.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Private, loopback or link-local hosts that tools may reach anyway: local development.
    #[serde(default)]
    pub private_upstreams: Vec<String>,
    #[serde(default)]
    pub sessions: SessionsConfig,
    /// Serve the 2024-11-05 HTTP+SSE transport too: `GET {route}/../sse` and `POST …/messages`.
    #[serde(default = "default_true")]
    pub legacy_sse: bool,
    /// Serve without sessions: each POST stands alone, no Durable Object is involved.
    #[serde(default)]
    pub stateless: Option<StatelessConfig>,
    /// Lets upstreams announce resource updates to subscribed sessions.
    #[serde(default)]
    pub notifications: Option<NotificationsConfig>,
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Bounds on MCP Tasks (2025-11-25): how long results are kept, how many, how large.
    #[serde(default)]
    pub tasks: TasksConfig,
    /// Who may use the server. Absent: anyone who passes the Origin and Host checks.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// 2026-07-28 cache hints (`ttlMs`, `cacheScope`) for lists, reads and `server/discover`.
    #[serde(default)]
    pub cache: CacheConfig,
    /// How clients find the tools: `list` (default: `tools/list` lists them all), `catalog`
    /// (`tools/list` lists three tools that search, describe and call them) or `code` (two: one
    /// searches them as TypeScript declarations, one runs a program that calls them).
    #[serde(default)]
    pub tool_discovery: ToolDiscoveryConfig,
    /// Code mode's bounds on a program (`toolDiscovery: "code"`): `timeoutMs`, `cpuMs`,
    /// `maxSteps`, `maxMemoryBytes`, `maxCalls`, `maxResultBytes`, `maxLogLines`,
    /// `maxCodeBytes`, each a whole number (`config::compile::code_limits` reads them: a derived
    /// deserializer would be some 2.5 KB of the module).
    #[serde(default)]
    pub code_mode: Option<Value>,
    #[serde(default)]
    pub tools: Vec<ToolConfig>,
    #[serde(default)]
    pub resources: Vec<ResourceConfig>,
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplateConfig>,
    #[serde(default)]
    pub prompts: Vec<PromptConfig>,
    /// Upstream MCP servers whose tools this server serves too, beside its own.
    #[serde(default)]
    pub upstreams: Vec<UpstreamConfig>,
    /// Allow and deny rules in CEL over the caller, the entry, the arguments and the time.
    #[serde(default)]
    pub policies: Vec<super::policies::PolicyConfig>,
    /// Rate limits, quotas and concurrency limits on tool calls (`config::limits`).
    #[serde(default)]
    pub rate_limits: Vec<serde_json::Value>,
    /// Tools, prompts and resources taken by reference from servers of this deployment, transformed.
    #[serde(default)]
    pub include: Vec<crate::catalog::curated::Include>,
    /// Their tool definitions pinned: a change waits for an admin's approval (`crate::pins`).
    #[serde(default)]
    pub pinning: super::pinning::PinningConfig,
}

/// An upstream MCP server: where it is, how to reach it, and which of its tools to take.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Names the upstream in logs, errors and the console: letters, digits, `_` and `-`.
    pub name: String,
    /// Its MCP endpoint (with `sse`, its event stream); a template over `env.NAME` secrets.
    pub url: String,
    /// `streamable-http` (default) or `sse` (the 2024-11-05 HTTP+SSE transport).
    #[serde(default)]
    pub transport: Option<String>,
    /// Header name → text template over `env.NAME` secrets and `principal.NAME` fields.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Prepended to each of its tools' names.
    #[serde(default)]
    pub prefix: String,
    /// Which of its tools to take.
    #[serde(default)]
    pub tools: FilterConfig,
    /// Which of its resources and resource templates to take (by name, or by URI or URI
    /// template).
    #[serde(default)]
    pub resources: FilterConfig,
    /// Which of its prompts to take.
    #[serde(default)]
    pub prompts: FilterConfig,
    /// Only principals with one of these roles see and may call its tools.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Bounds each exchange with the upstream (a call, with everything it streams).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// How long its tool list is served before it is read again.
    #[serde(default = "default_catalog_ttl_seconds")]
    pub catalog_ttl_seconds: u64,
    /// Templates may use `{principal.upstreamToken}`: the identity provider's token of the
    /// caller (sign-in mode (a)). Off by default: a token is never passed through unasked.
    #[serde(default)]
    pub forward_upstream_token: bool,
    /// Its requests carry `Authorization: Bearer` with the caller's (or the deployment's) token
    /// of this connection.
    #[serde(default)]
    pub auth: Option<UseConnectionConfig>,
}

/// Names or globs (`*` any run, `?` one character) to take, and to leave out.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilterConfig {
    /// Absent: every name.
    #[serde(default)]
    pub include: Option<Vec<String>>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolDiscoveryConfig {
    #[default]
    List,
    Catalog,
    Code,
}


#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionsConfig {
    #[serde(default = "default_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// Interval of SSE keepalive comments on the GET stream.
    #[serde(default = "default_keepalive_ms")]
    pub keepalive_ms: u64,
    /// The SSE `retry:` sent to 2025-11-25 clients: how long they wait before resuming.
    #[serde(default = "default_retry_ms")]
    pub retry_ms: u64,
    /// How long the Worker may serve a session's plain calls from its lease on the session
    /// before asking the session's object again (`0`: every request goes to the object).
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TasksConfig {
    /// How long a task and its result are kept when the client asks for no `ttl`. Absent: an
    /// hour, or `maxTtlMs` when that is shorter.
    #[serde(default)]
    pub default_ttl_ms: Option<u64>,
    /// The longest a task is kept, whatever the client asks.
    #[serde(default = "default_max_task_ttl_ms")]
    pub max_ttl_ms: u64,
    /// Tasks one principal may keep at once (an anonymous one: one session), running or ended.
    #[serde(default = "default_max_tasks")]
    pub max_per_principal: usize,
    /// A task's result larger than this (as JSON) is not kept: the task fails and says so.
    #[serde(default = "default_max_task_result_bytes")]
    pub max_result_bytes: usize,
    /// The results one principal's tasks keep at once, in all (an anonymous one's: a session's).
    #[serde(default = "default_max_task_results_bytes")]
    pub max_total_result_bytes: usize,
    /// How often clients are asked to poll a running task.
    #[serde(default = "default_task_poll_ms")]
    pub poll_interval_ms: u64,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig { default_ttl_ms: None, max_ttl_ms: default_max_task_ttl_ms(), max_per_principal: default_max_tasks(), max_result_bytes: default_max_task_result_bytes(), max_total_result_bytes: default_max_task_results_bytes(), poll_interval_ms: default_task_poll_ms() }
    }
}

fn default_max_task_ttl_ms() -> u64 {
    86_400_000
}
fn default_max_tasks() -> usize {
    100
}
fn default_max_task_result_bytes() -> usize {
    1024 * 1024
}
fn default_max_task_results_bytes() -> usize {
    10 * 1024 * 1024
}
fn default_task_poll_ms() -> u64 {
    1_000
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig { idle_timeout_ms: default_idle_timeout_ms(), keepalive_ms: default_keepalive_ms(), retry_ms: default_retry_ms(), lease_ms: default_lease_ms() }
    }
}

fn default_keepalive_ms() -> u64 {
    20_000
}
fn default_retry_ms() -> u64 {
    1_000
}
// Long enough that a session called every few seconds never waits for its object (a held
// lease is renewed behind the reply past half its life); the bound on how long another isolate
// may serve a session ended or changed elsewhere (docs/performance.md, Session leases).
fn default_lease_ms() -> u64 {
    10_000
}

/// `POST {route}` with `Authorization: Bearer <secret>` and `{"uri": …}` sends
/// `notifications/resources/updated` to every session subscribed to that URI.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotificationsConfig {
    /// Defaults to the server's route with its last segment `notify`.
    #[serde(default)]
    pub route: Option<String>,
    /// Name of the Worker secret that holds the bearer token.
    pub token_secret: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthConfig {
    /// Where the credential is read, in order: `bearer`, `header:NAME`, `cookie:NAME`.
    #[serde(default = "default_auth_from")]
    pub from: Vec<String>,
    /// Credentials compared with secrets.
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    /// Credentials the host application validates: a request whose `{token}` is the credential.
    #[serde(default)]
    pub introspection: Option<IntrospectionConfig>,
    /// OAuth 2.1 bearer JWTs, checked against a JWKS.
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
    /// A principal needs one of these roles to use the server.
    #[serde(default)]
    pub required_roles: Vec<String>,
    /// Advertised in the RFC 9728 protected-resource metadata.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Accept access tokens from this deployment's own authorization server (top-level `oauth`).
    #[serde(default)]
    pub oauth: bool,
}

fn default_auth_from() -> Vec<String> {
    vec!["bearer".into()]
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenConfig {
    /// The secret (`wrangler secret put NAME`) holding the token.
    pub secret: String,
    pub subject: String,
    #[serde(default)]
    pub roles: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntrospectionConfig {
    pub http: HttpConfig,
    /// JSON Pointer to the subject in a 2xx answer.
    #[serde(default = "default_subject_pointer")]
    pub subject: String,
    /// JSON Pointer to the roles (an array, or a space-separated string).
    #[serde(default = "default_roles_pointer")]
    pub roles: String,
    /// How long an answer is reused for the same credential.
    #[serde(default = "default_introspection_cache_ms")]
    pub cache_ms: u64,
}

fn default_subject_pointer() -> String {
    "/sub".into()
}
fn default_roles_pointer() -> String {
    "/roles".into()
}
fn default_introspection_cache_ms() -> u64 {
    30_000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JwtConfig {
    /// Where the JSON Web Key Set is fetched (`url`, `headers`).
    pub jwks: HttpConfig,
    #[serde(default)]
    pub issuer: Option<String>,
    /// Absent: the server's own resource URL, as RFC 8707 resource indicators give it.
    #[serde(default)]
    pub audience: Option<String>,
    #[serde(default = "default_roles_claim")]
    pub roles_claim: String,
    #[serde(default = "default_jwks_cache_ms")]
    pub cache_ms: u64,
}

fn default_roles_claim() -> String {
    "roles".into()
}
fn default_jwks_cache_ms() -> u64 {
    300_000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatelessConfig {
    /// A request not finished by then is answered with a -32603 timeout error.
    #[serde(default = "default_collect_timeout_ms")]
    pub collect_timeout_ms: u64,
}

fn default_collect_timeout_ms() -> u64 {
    30_000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsConfig {
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: u64,
    #[serde(default = "default_max_reply_bytes")]
    pub max_reply_bytes: u64,
    /// Tools per `tools/list` page. Absent: all on the first page (n8n-nodes-mcp reads only one).
    #[serde(default)]
    pub tools_page_size: Option<usize>,
    /// Arrays and objects nested deeper than this in a request body are refused.
    #[serde(default = "default_max_json_depth")]
    pub max_json_depth: usize,
    /// The request's header names and values, in bytes.
    #[serde(default = "default_max_header_bytes")]
    pub max_header_bytes: usize,
    /// Upstream calls one session may have running at once.
    #[serde(default = "default_max_calls_in_flight")]
    pub max_calls_in_flight: usize,
    /// Open sessions per authenticated principal.
    #[serde(default = "default_max_sessions_per_principal")]
    pub max_sessions_per_principal: usize,
    /// Requests per session and per principal, counted by a Rate Limiting binding.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_body_bytes: default_max_body_bytes(),
            max_reply_bytes: default_max_reply_bytes(),
            tools_page_size: None,
            max_json_depth: default_max_json_depth(),
            max_header_bytes: default_max_header_bytes(),
            max_calls_in_flight: default_max_calls_in_flight(),
            max_sessions_per_principal: default_max_sessions_per_principal(),
            rate_limit: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimitConfig {
    /// The Rate Limiting binding (`[[unsafe.bindings]] type = "ratelimit"`); its `simple.limit`
    /// and `simple.period` set the rate.
    pub binding: String,
    /// The binding's period, sent as `Retry-After`: 10 or 60.
    #[serde(default = "default_rate_period")]
    pub period_seconds: u64,
}

fn default_rate_period() -> u64 {
    60
}
fn default_max_json_depth() -> usize {
    64
}
fn default_max_header_bytes() -> usize {
    16 * 1024
}
fn default_max_calls_in_flight() -> usize {
    16
}
fn default_max_sessions_per_principal() -> usize {
    100
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolConfig {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "default_input_schema")]
    pub input_schema: Value,
    /// JSON Schema of the structured result; results are validated against it.
    #[serde(default)]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub annotations: Option<Value>,
    /// How the upstream reply becomes the result: a part of it, its size limit.
    #[serde(default)]
    pub response: ResponseConfig,
    /// Retry failed attempts (network errors, 429, 5xx). Only for idempotent tools.
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    /// `map` (default): the reply is mapped by content type. `passthrough`: the reply's JSON is
    /// an MCP CallToolResult (or an input request), validated and passed through.
    #[serde(default)]
    pub result: ResultModeConfig,
    #[serde(default)]
    pub sse: ToolSseConfig,
    /// `direct` (default): fetched while the request waits. `queued`: a Cloudflare Queue consumer
    /// fetches it. `callback`: the upstream answers 202 and POSTs the result to a callback URL.
    #[serde(default)]
    pub execution: ExecutionConfig,
    /// Whether clients may run it as an MCP Task (2025-11-25 `execution.taskSupport`):
    /// `forbidden`, `optional` or `required`. Absent: `optional` for queued and callback tools,
    /// `forbidden` for direct ones.
    #[serde(default)]
    pub task_support: Option<crate::tools::TaskSupport>,
    /// 2026-07-28 Tasks extension: the call's first round runs in the request, and what the
    /// upstream asks then is answered (multi round-trip) before any task exists; the call that
    /// carries the answers runs as the task.
    #[serde(default)]
    pub input_before_task: bool,
    /// How long a queued or callback call may wait for its result.
    #[serde(default = "default_pending_timeout_ms")]
    pub pending_timeout_ms: u64,
    /// Only principals with one of these roles see and may call the tool.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Words a catalog search matches and filters by; never sent in `tools/list`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// This tool's say in the cache hints of `tools/list` (2026-07-28): the shortest `ttlMs`
    /// and the narrowest `scope` of the tools listed win.
    #[serde(default)]
    pub cache: Option<CacheConfig>,
    /// Let templates use `{meta.auth.NAME}`: credentials the client sends per request in
    /// `params._meta.auth`. Off by default: no client credentials go upstream.
    #[serde(default)]
    pub forward_meta_auth: bool,
    /// Let templates use `{principal.upstreamToken}`: the caller's token from its identity
    /// provider. Off by default: a principal's token never goes upstream unasked.
    #[serde(default)]
    pub forward_upstream_token: bool,
    /// What this tool's spans may carry besides names and outcomes: its arguments, its results
    /// (opt-in; redacted as replies are).
    #[serde(default)]
    pub trace: crate::tools::TraceContent,
    /// The connection whose token the request carries: `{connection.access_token}` in a
    /// template, else an `Authorization: Bearer` header.
    #[serde(default)]
    pub auth: Option<UseConnectionConfig>,
    /// An MCP App rendering the tool's results, served as `ui://<server>/<tool>`: `template`,
    /// `html`, `csp`, `prefersBorder` (config/apps.rs reads them; a `Value`, as no serde type
    /// of its own is worth the module's bytes).
    #[serde(default)]
    pub app: Option<Value>,
    pub http: HttpConfig,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResponseConfig {
    /// JSON Pointer (RFC 6901) to the part of a JSON reply that is the result.
    #[serde(default)]
    pub pick: Option<String>,
    /// Overrides `limits.maxReplyBytes` for this tool.
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// What a reply larger than the limit becomes.
    #[serde(default)]
    pub oversize: OversizeConfig,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExecutionConfig {
    #[default]
    Direct,
    Queued,
    Callback,
}

fn default_pending_timeout_ms() -> u64 {
    120_000
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OversizeConfig {
    /// An `isError` result saying how large the limit is.
    #[default]
    Error,
    /// The first `maxBytes` of a text or JSON reply, as text, with a note that it was cut.
    Truncate,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts in all, the first included.
    #[serde(default = "default_attempts")]
    pub attempts: u32,
    /// The wait before the second attempt; each later wait doubles, with full jitter.
    #[serde(default = "default_initial_delay_ms")]
    pub initial_delay_ms: u64,
    #[serde(default = "default_max_delay_ms")]
    pub max_delay_ms: u64,
}

fn default_attempts() -> u32 {
    3
}
fn default_initial_delay_ms() -> u64 {
    200
}
fn default_max_delay_ms() -> u64 {
    5_000
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSseConfig {
    /// Close a 2025-11-25 client's SSE stream this long after the call starts; the client
    /// resumes with `GET` and `Last-Event-ID` (SSE polling). Off by default.
    #[serde(default)]
    pub close_after_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResultModeConfig {
    #[default]
    Map,
    Passthrough,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpConfig {
    #[serde(default = "default_method")]
    pub method: String,
    /// RFC 6570 template over the arguments and `env.NAME` secrets.
    pub url: String,
    /// Header name → text template.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Query parameter name, as sent → a text template, or one with its OpenAPI style; appended
    /// to the expanded URL in the file's order.
    #[serde(default)]
    pub query: Ordered<QueryParamConfig>,
    /// Cookie name → text template; the cookies with a value are sent as one `Cookie` header.
    #[serde(default)]
    pub cookies: Ordered<String>,
    /// JSON whose strings are text templates. Absent: the arguments (none for GET).
    #[serde(default)]
    pub body: Option<Value>,
    /// How the body is encoded: `json` (default), `form` (`application/x-www-form-urlencoded`)
    /// or `none`.
    #[serde(default)]
    pub body_type: BodyTypeConfig,
    /// Bounds the whole call: every attempt, redirect and retry wait.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Redirects followed before the call fails. 0: none are followed.
    #[serde(default = "default_max_redirects")]
    pub max_redirects: u32,
    /// Hosts a redirect may lead to besides the URL's own origin.
    #[serde(default)]
    pub redirect_hosts: Vec<String>,
}

/// A query parameter: a text template (shorthand for `{"value": template}`), or the template
/// with its OpenAPI serialization.
#[derive(Debug, Clone)]
pub enum QueryParamConfig {
    Template(String),
    Styled(StyledQueryConfig),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StyledQueryConfig {
    /// A text template; exactly `{name}` sends the value's JSON type (arrays, objects).
    pub value: String,
    /// `form` (default), `spaceDelimited`, `pipeDelimited` or `deepObject`; checked when compiled.
    #[serde(default)]
    pub style: Option<String>,
    /// Default: `true` for `form`, `false` for the others.
    #[serde(default)]
    pub explode: Option<bool>,
    /// Keep RFC 3986 reserved characters in values, except those that would change the query.
    #[serde(default)]
    pub allow_reserved: bool,
}

impl<'de> Deserialize<'de> for QueryParamConfig {
    // A visitor rather than `untagged`: an object keeps its own field errors ("unknown field").
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = QueryParamConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a text template or an object with \"value\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<QueryParamConfig, E> {
                Ok(QueryParamConfig::Template(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<QueryParamConfig, A::Error> {
                StyledQueryConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(QueryParamConfig::Styled)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A JSON object read in the file's order, for members whose order is sent: query parameters
/// and cookies. (`BTreeMap` would sort them.)
#[derive(Debug, Clone)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Ordered<T>, A::Error> {
                let mut members: Vec<(String, T)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, T>()? {
                    // A repeated key would otherwise be sent twice.
                    if members.iter().any(|(k, _)| *k == key) {
                        return Err(serde::de::Error::custom(format!("duplicate key {key:?}")));
                    }
                    members.push((key, value));
                }
                Ok(Ordered(members))
            }
        }
        deserializer.deserialize_map(Visitor(std::marker::PhantomData))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BodyTypeConfig {
    #[default]
    Json,
    Form,
    None,
}

fn default_max_redirects() -> u32 {
    5
}

/// A resource with a fixed URI: inline `text` or base64 `blob`, or fetched with `http`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceConfig {
    pub uri: String,
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub blob: Option<String>,
    #[serde(default)]
    pub http: Option<HttpConfig>,
    /// This resource's say in the cache hint of its `resources/read` (2026-07-28): it narrows
    /// the server's.
    #[serde(default)]
    pub cache: Option<CacheConfig>,
}

/// Resources whose URIs match an RFC 6570 template; each read is fetched with `http`, whose
/// templates may use the URI's variables.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceTemplateConfig {
    pub uri_template: String,
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
    pub http: HttpConfig,
    /// Values offered by `completion/complete` for each URI variable.
    #[serde(default)]
    pub completions: BTreeMap<String, Vec<String>>,
    /// The cache hint of the reads it matches; narrows the server's.
    #[serde(default)]
    pub cache: Option<CacheConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptConfig {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub arguments: Vec<PromptArgumentConfig>,
    /// Prompt messages as MCP defines them; their strings are text templates over the arguments.
    pub messages: Vec<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptArgumentConfig {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// Values offered by `completion/complete` for this argument.
    #[serde(default)]
    pub completions: Vec<String>,
}

fn default_true() -> bool {
    true
}
/// A server's route when the file names none.
pub const DEFAULT_ROUTE: &str = "/mcp";

fn default_route() -> String {
    DEFAULT_ROUTE.into()
}
fn default_idle_timeout_ms() -> u64 {
    30 * 60 * 1000
}
fn default_max_body_bytes() -> u64 {
    1024 * 1024
}
fn default_max_reply_bytes() -> u64 {
    4 * 1024 * 1024
}
fn default_input_schema() -> Value {
    serde_json::json!({"type": "object"})
}
fn default_method() -> String {
    "POST".into()
}
fn default_timeout_ms() -> u64 {
    30_000
}
fn default_catalog_ttl_seconds() -> u64 {
    300
}
