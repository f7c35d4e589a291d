//! The catalog: what requests are served from. Servers with their endpoints, limits and cache
//! hints, and the tools, resources, prompts and auth compiled from a configuration file by
//! `config`. Only `config` knows the file: the layers that serve requests read the catalog.
//! `mcp`: an upstream MCP server's lists as entries of ours (tools, resources, prompts).
//! `curated`: entries taken by reference from another server (`include`), transformed.
//!
//! The one import circle of this folder: a `Server` here keeps its `curated::Include` entries,
//! and `curated` takes entries from one `Server` into another.
//! `telemetry`: where spans and metrics go, and who may scrape them.
//! `gate`: who sees and may call which entries (roles and access rules).
//!
//! The one import circle of this folder: `gate` reads the `Server` this file defines, and this
//! file names `gate::Gate` so that every path to an entry asks it through `Server::gate`.

pub mod curated;
mod entries;
mod gate;
pub mod mcp;
mod secrets;
pub mod telemetry;

pub use entries::{Prompt, Resource, ResourceSource, ResourceTemplate};
pub use gate::Gate;

use serde::Deserialize;
use serde_json::Value;

use crate::auth::Auth;
use crate::cache::CacheHint;
use crate::policy::OriginPattern;
use crate::routes::RoutePattern;
use crate::tools::search::Index;
use crate::tools::Tool;

/// Every configured server, ready to serve.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Shared, so a request or a spawned call keeps its server while a live change swaps the
    /// isolate's catalog for a newer one.
    pub servers: Vec<std::sync::Arc<Server>>,
    pub log: RequestLogging,
    /// The deployment's own authorization server, when configured.
    pub oauth: Option<crate::oauth::AuthServer>,
    /// Who may see the status page at `/`.
    pub console: ConsoleAccess,
    /// Whether tool calls are counted for the health figures (`console.health`).
    pub health: HealthSettings,
    /// `admin.secrets`: the only secrets a live change may name anew; `None`: any but the
    /// deployment's own ([`Catalog::own_secrets`]).
    pub admin_secrets: Option<Vec<String>>,
    /// The built-in per-address limit (`admission`); `None`: off.
    pub admission: Option<crate::admission::PerAddress>,
    /// Traces and metrics: where they go, which are kept, who may scrape (`telemetry`).
    pub telemetry: telemetry::Telemetry,
    /// `connections`: the OAuth providers tools and upstreams take their tokens from.
    pub connections: Vec<std::sync::Arc<crate::connections::Connection>>,
}

/// Who may see the status page at `/` (`console.access`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ConsoleAccess {
    /// Anyone: every server's route, name, auth mode and transports, and the tools, resources
    /// and prompts of the servers without `auth` (what their `tools/list` shows anyone). A
    /// signed-in viewer sees what their credentials show too; an admin, the health figures and
    /// the controls.
    #[default]
    Public,
    /// Only principals signed in to the console with one of `roles` (any, when empty; `admin`
    /// always); everyone else gets the way to sign in.
    SignedIn { roles: Vec<String> },
    /// No page: `/` answers as any unknown path does.
    Off,
}

/// `console.health`: whether tool calls are counted for the health figures (`crate::health`),
/// and the Workers Analytics Engine binding each call is also written to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthSettings {
    pub enabled: bool,
    pub analytics_engine: Option<String>,
}

impl Catalog {
    /// Finds the server and endpoint for a request path.
    pub fn route(&self, path: &str) -> Option<(usize, Endpoint, crate::routes::RouteParams)> {
        self.servers.iter().enumerate().find_map(|(i, s)| {
            s.endpoints.iter().find_map(|(route, endpoint)| route.matches(path).map(|params| (i, *endpoint, params)))
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RequestLogging {
    #[default]
    Requests,
    Failures,
    Off,
}

impl RequestLogging {
    pub fn logs(self, status: u16) -> bool {
        match self {
            RequestLogging::Requests => true,
            RequestLogging::Failures => status >= 400,
            RequestLogging::Off => false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub instructions: Option<String>,
    pub route: RoutePattern,
    pub stream_route: RoutePattern,
    /// Where upstreams announce resource updates, and the secret that guards it.
    pub notify: Option<(RoutePattern, String)>,
    /// Stateless mode and its collection timeout.
    pub stateless: Option<u64>,
    /// Every path this server answers, and what each is.
    pub endpoints: Vec<(RoutePattern, Endpoint)>,
    /// Its tools, resources and prompts may change while sessions run (the admin API is on, or it
    /// has upstream MCP servers): `listChanged` in its capabilities, and the notifications on streams.
    pub lists_change: bool,
    /// Bounds on MCP Tasks.
    pub tasks: TaskSettings,
    pub origins: Vec<OriginPattern>,
    pub allowed_hosts: Vec<String>,
    /// Private hosts tools may reach (the SSRF guard's allowlist).
    pub private_upstreams: Vec<String>,
    /// Who may use the server; `None`: anyone past the Origin and Host checks.
    pub auth: Option<Auth>,
    pub idle_timeout_ms: u64,
    pub keepalive_ms: u64,
    pub retry_ms: u64,
    /// How long a lease on a session lets the Worker serve its plain calls (`0`: never).
    pub lease_ms: u64,
    pub max_body_bytes: u64,
    pub max_reply_bytes: u64,
    pub tools_page_size: Option<usize>,
    pub limits: Limits,
    /// `rateLimits`: rates, quotas and concurrency limits on tool calls.
    pub rate_limits: Vec<crate::limits::Limit>,
    /// The cache hint of lists, reads and `server/discover`.
    pub cache: CacheHint,
    /// Tools whose results the edge keeps (`cache.results`), by tool name.
    pub result_caches: Vec<(String, crate::cache::ResultCaching)>,
    /// Resources and resource templates with their own read hint, by URI or URI template.
    pub resource_caches: Vec<(String, CacheHint)>,
    /// How clients find the tools: all listed, or searched through catalog mode's own tools or
    /// code mode's.
    pub discovery: ToolDiscovery,
    /// What one program of code mode may take.
    pub code: CodeLimits,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    /// Upstream MCP servers whose tools it serves too (`upstreams`); their tools join `tools`
    /// once discovered (`edge/mcp.rs`).
    pub upstreams: Vec<std::sync::Arc<crate::upstream::mcp::Source>>,
    /// Entries taken by reference from servers of the deployment (`include`).
    pub include: Vec<curated::Include>,
    /// Those of `include` that name what an upstream MCP server has not listed yet: taken when
    /// its lists arrive (`edge/mcp/discovery.rs`).
    pub pending: Vec<usize>,
    /// How their tool definitions are pinned.
    pub pinning: crate::pins::Mode,
    /// The list results' entries, built once; a catalog server's `tools/list` lists catalog
    /// mode's own three tools.
    pub tool_listings: Vec<Value>,
    pub resource_listings: Vec<Value>,
    pub template_listings: Vec<Value>,
    pub prompt_listings: Vec<Value>,
    /// Who may see and call what (`policies`).
    pub policies: crate::access::Policies,
}

impl Server {
    /// The tool's result cache, when its results may be kept.
    pub fn result_cache(&self, tool: &str) -> Option<&crate::cache::ResultCaching> {
        self.result_caches.iter().find(|(name, _)| name == tool).map(|(_, c)| c)
    }

    /// The hint of a read of `uri`: the server's, or the resource's (or its template's) own.
    pub fn read_cache(&self, uri: &str) -> CacheHint {
        let own = |key: &str| self.resource_caches.iter().find(|(k, _)| k == key).map(|(_, h)| *h);
        let configured = self.resources.iter().find(|r| r.uri == uri).map(|r| own(&r.uri));
        let hint = configured.unwrap_or_else(|| self.resource_templates.iter().find(|t| t.matches(uri).is_some()).and_then(|t| own(t.uri_template())));
        hint.unwrap_or(self.cache)
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Its list results' entries (and catalog mode's index) built again from its entries.
    pub fn relist(&mut self) {
        if let ToolDiscovery::Catalog(_) = self.discovery {
            self.discovery = ToolDiscovery::Catalog(Index::new(&self.tools));
        } else if let ToolDiscovery::Code(_) = self.discovery {
            self.discovery = ToolDiscovery::Code(Index::new(&self.tools));
        } else {
            self.tool_listings = self.tools.iter().map(|t| t.listing.clone()).collect();
        }
        self.resource_listings = self.resources.iter().map(|r| r.listing.clone()).collect();
        self.template_listings = self.resource_templates.iter().map(|t| t.listing.clone()).collect();
        self.prompt_listings = self.prompts.iter().map(|p| p.listing.clone()).collect();
    }

    /// The search index of a server in catalog mode or code mode, whose `tools/list` lists that
    /// mode's own tools to everyone.
    pub fn catalog_index(&self) -> Option<&Index> {
        match &self.discovery {
            ToolDiscovery::List => None,
            ToolDiscovery::Catalog(index) | ToolDiscovery::Code(index) => Some(index),
        }
    }

    /// One of the tools its mode lists in place of its own, by name, with the mode's index.
    pub fn meta_tool(&self, name: &str) -> Option<(&Index, crate::tools::meta::MetaTool)> {
        use crate::tools::meta::MetaTool;
        match &self.discovery {
            ToolDiscovery::List => None,
            ToolDiscovery::Catalog(index) => MetaTool::named(name).map(|m| (index, m)),
            ToolDiscovery::Code(index) => MetaTool::coded(name).map(|m| (index, m)),
        }
    }

    /// How the named tool's replies are mapped; the plain mapping if it is no longer configured.
    pub fn reply_plan(&self, tool: &str) -> crate::upstream::reply::ReplyPlan {
        self.tool(tool).map_or_else(|| crate::upstream::reply::ReplyPlan::map(self.max_reply_bytes), |t| t.reply.clone())
    }
}

/// How clients find a server's tools.
#[derive(Debug, Clone)]
pub enum ToolDiscovery {
    /// `tools/list` lists every tool the caller may see.
    List,
    /// `tools/list` lists the three tools of catalog mode (`discovery`), which search this
    /// index of the configured tools, describe one, and call one by name.
    Catalog(Index),
    /// `tools/list` lists the two tools of code mode (`codemode`): one searches this index and
    /// answers with TypeScript declarations, one runs a program that calls the tools.
    Code(Index),
}

/// `codeMode`: what one program may take (docs/code-mode.md, "Limits", says each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    pub timeout_ms: u64,
    pub cpu_ms: u64,
    pub max_steps: u64,
    pub max_memory_bytes: u64,
    pub max_calls: u64,
    pub max_result_bytes: u64,
    pub max_log_lines: u64,
    pub max_code_bytes: u64,
}

/// Limits beyond body and reply size.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_json_depth: usize,
    pub max_header_bytes: usize,
    pub max_calls_in_flight: usize,
    pub max_sessions_per_principal: usize,
    /// The Rate Limiting binding, and its period for `Retry-After`.
    pub rate_limit: Option<(String, u64)>,
}

/// Which endpoint of a server a path named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Mcp,
    Stream,
    Notify,
    /// 2024-11-05: `GET` opens the session's event stream.
    LegacySse,
    /// 2024-11-05: `POST ?sessionId=` delivers a message, answered on the event stream.
    LegacyMessages,
}

/// A server's bounds on tasks (`tasks` in its configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSettings {
    /// A task kept this long when the client asks for no `ttl`.
    pub default_ttl_ms: u64,
    /// And never longer, whatever it asks.
    pub max_ttl_ms: u64,
    /// Tasks a principal may keep at once, running or ended (an anonymous one: a session).
    pub max_per_principal: usize,
    /// A result larger than this (as JSON) is not kept: the task fails and says so.
    pub max_result_bytes: usize,
    /// The results a principal's tasks keep at once, in all (an anonymous one's: a session's).
    pub max_total_result_bytes: usize,
    /// How often a client is asked to poll.
    pub poll_interval_ms: u64,
}

impl Default for TaskSettings {
    fn default() -> TaskSettings {
        TaskSettings { default_ttl_ms: 3_600_000, max_ttl_ms: 86_400_000, max_per_principal: 100, max_result_bytes: 1024 * 1024, max_total_result_bytes: 10 * 1024 * 1024, poll_interval_ms: 1_000 }
    }
}
