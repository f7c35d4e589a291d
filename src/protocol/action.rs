//! What one incoming message asks of the edge: a reply to send, or an upstream call to make
//! and whose reply to send once it answers; and what the edge gives a handler in return
//! (`Environment`: secrets, the route, the caller, the time).

use serde_json::Value;

use crate::protocol::mrtr;
use crate::upstream::HttpCall;

/// What one incoming message asks of the edge.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this JSON-RPC message back.
    Reply(String),
    /// Make this upstream call, then send `finish`'s reply.
    Call(Box<PendingCall>),
    /// A request about the session's tasks (`tasks/get`, `tasks/result`, `tasks/list`,
    /// `tasks/cancel`), answered where they are kept: the session's object.
    Task(Box<TaskRequest>),
    /// A notification or a response: nothing goes back.
    Nothing,
}

impl Action {
    /// Whether the session's tasks take part: a call the client asked to run as a task, or a
    /// `tasks/*` request. Every other action passes the tasks by.
    pub fn is_for_tasks(&self) -> bool {
        match self {
            Action::Call(call) => call.task.is_some(),
            Action::Task(_) => true,
            Action::Reply(_) | Action::Nothing => false,
        }
    }
}

/// A `tasks/*` request, its params parsed; `protocol::tasks` decides what it does.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    pub id: Value,
    pub call: crate::protocol::tasks::TaskCall,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    pub id: Value,
    pub kind: CallKind,
    /// The tool's arguments, which a follow-up call after client input sends again.
    pub arguments: Value,
    pub http: HttpCall,
    pub progress_token: Option<Value>,
    /// Secret values the request carries (secrets, forwarded credentials): they are redacted
    /// from whatever goes back to the client.
    pub redact: Vec<String>,
    /// 2026-07-28: what an `InputRequiredResult`'s state is bound to; `None` for sessions,
    /// which ask the client on the stream instead.
    pub mrtr: Option<mrtr::Binding>,
    /// Run as an MCP Task: answered at once with its handle, its result kept for later.
    pub task: Option<crate::tasks::Ask>,
    /// The connection whose token the request carries (`auth.connection`).
    pub connection: Option<Box<CallConnection>>,
}

/// A call's connection: its token as the edge knew it when the request was rendered, and what
/// dispatching the request again needs, once the user has connected or the token is refreshed.
#[derive(Debug, Clone, PartialEq)]
pub struct CallConnection {
    pub name: String,
    /// `None`: not connected, as far as the edge knew; the request carries no token, and the
    /// edge asks the user to connect before anything is sent.
    pub token: Option<String>,
    pub request: crate::jsonrpc::Request,
    pub route: crate::routes::RouteParams,
    pub principal: crate::auth::Principal,
}

/// What an upstream call answers, which decides how its reply is mapped.
#[derive(Debug, Clone, PartialEq)]
pub enum CallKind {
    Tool(String),
    Resource { uri: String, mime_type: Option<String> },
    /// A request passed on to an upstream MCP server (its index in the server's `upstreams`):
    /// `resources/read` or `prompts/get`, whose result or error comes back as it is.
    Upstream { source: usize, method: crate::method::Method, params: Value, label: String },
    /// Code mode's `execute`: a program the edge runs in an isolate of its own.
    Program(Box<Program>),
}

/// A program of code mode, and what its tool calls are dispatched again with: each is the
/// caller's own `tools/call`, with the caller's principal and the request's route.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub code: String,
    pub route: crate::routes::RouteParams,
    pub principal: crate::auth::Principal,
}

impl PendingCall {
    /// The tool or resource, for progress messages and logs.
    pub fn label(&self) -> &str {
        match &self.kind {
            CallKind::Tool(name) => name,
            CallKind::Resource { uri, .. } => uri,
            CallKind::Upstream { label, .. } => label,
            CallKind::Program(_) => crate::tools::meta::MetaTool::Execute.name(),
        }
    }
}

/// Where the edge gets template values that are not arguments, and who is calling.
pub struct Environment<'a> {
    /// Reads a Worker var or secret by name.
    pub secret: &'a dyn Fn(&str) -> Option<String>,
    pub route: &'a crate::routes::RouteParams,
    pub principal: &'a crate::auth::Principal,
    /// Now, for the expiry of 2026-07-28 request states.
    pub now_ms: u64,
    /// The caller's access token of a connection (`connections`), when the edge holds it.
    pub connection: &'a dyn Fn(&str) -> Option<String>,
}
