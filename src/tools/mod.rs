//! What a tool is: its name, schemas, roles and settings, compiled from the configuration, its
//! words as a catalog search ranks them (`search`), and catalog mode's own tools (`meta`); its arguments are validated against its
//! input schema by `crate::schema`. How a call to its upstream goes is `upstream`'s: the request it
//! renders, and how its reply becomes an MCP result.

pub mod meta;
pub mod search;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::upstream::reply;
use crate::upstream::{Bindings, HttpCall, RequestTemplate};

#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    /// The tool's entry in `tools/list`, built once.
    pub listing: Value,
    pub input_schema: Value,
    pub request: RequestTemplate,
    pub reply: reply::ReplyPlan,
    /// Close the SSE stream this long after the call starts (SSE polling).
    pub close_after_ms: Option<u64>,
    /// Templates may use `{meta.auth.NAME}` from the request's `params._meta.auth`.
    pub forward_meta_auth: bool,
    /// Templates may use `{principal.upstreamToken}`.
    pub forward_upstream_token: bool,
    /// Queued or callback execution, and how long the call may wait for its result.
    pub deferral: Option<(crate::pending::Deferral, u64)>,
    /// Only principals with one of these roles see and may call the tool.
    pub roles: Vec<String>,
    /// Catalog search matches and filters by them; `describe_tool` shows them.
    pub tags: Vec<String>,
    /// Its own cache hint for `tools/list`, when configured.
    pub cache: Option<crate::cache::CacheHint>,
    /// The `x-mcp-header` annotations of its input schema, found once.
    pub header_params: Vec<(String, Vec<String>)>,
    /// A tool of an upstream MCP server (`upstreams`): which, and its name there. Its call is
    /// that server's `tools/call`, and its result passes through unchanged.
    pub mcp: Option<crate::upstream::mcp::Target>,
    /// Whether clients may run it as an MCP Task.
    pub task_support: TaskSupport,
    /// 2026-07-28 Tasks extension: its first round runs in the request, so what the upstream
    /// asks is answered before the task exists (`inputBeforeTask`).
    pub input_before_task: bool,
    /// What its spans may carry of its calls (`trace`).
    pub trace: TraceContent,
    /// An alias of another server's tool (`include`): what its calls add to the arguments.
    pub curation: Option<Box<Curation>>,
    /// `auth.connection`: the connection whose token its request carries.
    pub connection: Option<String>,
}

/// An alias's part of each call (`catalog::curated`): the hidden arguments the server sets,
/// whatever the client sends, the defaults it fills in, and the private hosts of the server the
/// tool comes from (its request is that server's).
#[derive(Debug, Clone, Default)]
pub struct Curation {
    /// The server it was taken from (`include[].server`): what access rules read as `entry.server`.
    pub from: String,
    pub pinned: Map<String, Value>,
    pub defaults: Map<String, Value>,
    pub private_upstreams: Vec<String>,
}

impl Curation {
    /// The arguments a call runs with, once the client's fit the listed schema: a hidden
    /// argument the client sent (even `null`) refuses the call, so no value of the client's is
    /// ever forwarded for it; the defaults fill what is absent; the pinned values are set last.
    pub fn arguments(&self, mut args: Map<String, Value>) -> Result<Map<String, Value>, String> {
        if let Some(name) = args.keys().find(|k| self.pinned.contains_key(k.as_str())) {
            return Err(format!("the argument {name:?} is not one a client may set"));
        }
        for (name, value) in &self.defaults {
            args.entry(name.clone()).or_insert_with(|| value.clone());
        }
        args.extend(self.pinned.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(args)
    }
}

/// `trace` of a tool: whether its spans carry the call's arguments
/// (`gen_ai.tool.call.arguments`) and result (`gen_ai.tool.call.result`). Both off by default:
/// a span holds no argument value or result unless the tool opts in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceContent {
    #[serde(default)]
    pub arguments: bool,
    #[serde(default)]
    pub results: bool,
}

impl Tool {
    /// Renders the HTTP request for one call. Arguments must already be validated.
    pub fn prepare(&self, args: &Map<String, Value>, bindings: &Bindings) -> Result<HttpCall, Error> {
        self.request.render(&format!("tool {:?}", self.name), args, bindings)
    }
}

/// The `x-mcp-header` annotations of an input schema (2026-07-28: the arguments a client
/// mirrors in `Mcp-Param-*` headers): the header name part and the chain of
/// `properties` keys that leads to the annotated property.
pub fn header_params(schema: &Value) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    collect_header_params(schema, &mut Vec::new(), &mut found);
    found
}

fn collect_header_params(schema: &Value, path: &mut Vec<String>, found: &mut Vec<(String, Vec<String>)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(header) = property.get("x-mcp-header").and_then(Value::as_str) {
            found.push((header.to_string(), path.clone()));
        }
        // Only chains of `properties` may reach an annotation; nesting is bounded by the schema.
        if path.len() < 16 {
            collect_header_params(property, path, found);
        }
        path.pop();
    }
}

/// A tool's `execution.taskSupport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskSupport {
    /// Runs only as a plain call (the spec's default).
    Forbidden,
    /// Either way, as the client asks.
    Optional,
    /// Only as a task.
    Required,
}

impl TaskSupport {
    pub fn name(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// Whether a call asked as a task (`asked`) or not may run: both wrong ways are -32601, as
    /// the spec has it.
    pub fn admit(self, tool: &str, asked: bool) -> Result<(), Error> {
        match (self, asked) {
            (TaskSupport::Forbidden, true) => Err(Error::MethodNotFound(format!("the tool {tool:?} does not run as a task (its taskSupport is forbidden)"))),
            (TaskSupport::Required, false) => Err(Error::MethodNotFound(format!("the tool {tool:?} runs only as a task: call it with params.task"))),
            _ => Ok(()),
        }
    }
}
