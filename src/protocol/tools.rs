//! Tools: `tools/list` and `tools/call`.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `tools/list` | [`ListParams`] | [`list`] (and [`list_cache`], the hint of a 2026-07-28 list) |
//! | `tools/call` | [`CallParams`] | [`call`]: the tool found for the caller (in catalog mode, also the catalog's own tools, and the tool `call_tool` names), its arguments validated, its request rendered with the call's secrets, route and `_meta` values and the caller's identity, a 2026-07-28 retry's answers passed on; and [`finish`], the reply of a finished call |
//!
//! What the method table gives each: see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{Map, Value};

use super::ListParams;

use crate::catalog::{Gate, Server};
use crate::error::Error;
use crate::method::Method;
use super::action::{Action, CallKind, Environment, PendingCall};
use super::meta::{decorate, stateless_revision};
use super::{mrtr, resources};
use crate::discovery;
use crate::jsonrpc::{self, Request};
use crate::negotiate::at_least;
use crate::schema;
use crate::session::Session;
use crate::signing::SIGNING_KEY;
use crate::tools::meta::MetaTool;
use crate::tools::search::Index;
use crate::upstream::reply::{self, ReplyPlan, Upstream};
use crate::upstream::Bindings;

/// The tools the caller sees (`Gate::sees`: roles and access rules): the others are absent. A
/// catalog server lists its three catalog tools to everyone; the gate decides what they find.
pub fn list(server: &Server, params: &ListParams, gate: &Gate<'_>) -> Result<Value, Error> {
    if server.catalog_index().is_some() || gate.is_open() {
        return super::page("tools", &server.tool_listings, params, server.tools_page_size);
    }
    let visible: Vec<Value> = server.tools.iter().filter(|t| gate.sees(t)).map(|t| t.listing.clone()).collect();
    super::page("tools", &visible, params, server.tools_page_size)
}

/// The cache hint of the caller's `tools/list`: the server's, narrowed by the hints of the
/// tools it lists (in catalog mode, of the tools its search may find).
pub fn list_cache(server: &Server, gate: &Gate<'_>) -> crate::cache::CacheHint {
    server.tools.iter().filter(|t| gate.sees(t)).filter_map(|t| t.cache).fold(server.cache, crate::cache::CacheHint::and)
}

/// `tools/call`'s params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CallParams {
    pub name: String,
    /// Kept as sent, checked against the tool's input schema. Absent or null: none.
    #[serde(skip)]
    pub arguments: Option<Value>,
    /// `_meta`, kept as sent: the progress token, and values a request template may name.
    #[serde(skip)]
    pub meta: Option<Value>,
    /// 2025-11-25: run as a task (kept as sent: a `ttl` that is not a number is none).
    #[serde(skip)]
    pub task: Option<Value>,
    /// 2026-07-28: a retry's state and answers, kept as sent and checked where they are used
    /// (`mrtr`).
    #[serde(skip)]
    pub request_state: Option<Value>,
    #[serde(skip)]
    pub input_responses: Option<Value>,
}

impl super::Params for CallParams {
    fn keep(&mut self, members: &Map<String, Value>) {
        let member = |name| super::member(members, name);
        (self.arguments, self.meta, self.task) = (member("arguments"), member("_meta"), member("task"));
        (self.request_state, self.input_responses) = (member("requestState"), member("inputResponses"));
    }
}

impl CallParams {
    /// The arguments, `{}` when there are none.
    pub fn arguments(&self) -> Value {
        self.arguments.clone().unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// The client's progress token: a string or a number in `_meta.progressToken`.
    pub fn progress_token(&self) -> Option<Value> {
        self.meta.as_ref().and_then(|m| m.get("progressToken")).filter(|t| t.is_string() || t.is_number()).cloned()
    }
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::ToolsList, "capability none; every revision; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::ToolsCall, "capability none; every revision; keeps the session: yes; lease serves it: yes; cacheable: no; Mcp-Name: name"),
];

/// `tools/call`, its params parsed once (`protocol::tools::CallParams`).
pub fn call(server: &Server, session: &Session, req: &Request, env: &Environment<'_>) -> Result<Action, Error> {
    let params: CallParams = super::params(req.params.as_ref())?;
    // Catalog mode's own tools are only there, and only by their names: a configured tool
    // cannot take one (the configuration refuses it).
    match server.meta_tool(&params.name) {
        Some((index, meta)) => catalog(server, index, meta, session, req, &params, env),
        None => tool(server, session, req, params, env),
    }
}

/// Code mode's `execute`: the program, with what its tool calls are dispatched again with (the
/// caller and the route), run by the edge in an isolate of its own (`edge::code`). It runs as a
/// task when the client asks, as a tool with `taskSupport: optional` would.
fn program(server: &Server, session: &Session, req: &Request, params: &CallParams, arguments: Value, env: &Environment<'_>) -> Result<Action, Error> {
    let code = arguments.get("code").and_then(Value::as_str).unwrap_or_default();
    let limits = &server.code;
    if code.len() as u64 > limits.max_code_bytes {
        return refuse(session, req, MetaTool::Execute.name(), &format!("the code is {} bytes, more than the {} this server accepts", code.len(), limits.max_code_bytes));
    }
    let task = task(server, session, params, (crate::tools::TaskSupport::Optional, false, false), MetaTool::Execute.name())?;
    let program = crate::protocol::action::Program { code: code.to_string(), route: env.route.clone(), principal: env.principal.clone() };
    let http = crate::upstream::HttpCall { method: String::new(), url: String::new(), headers: Vec::new(), body: None, timeout_ms: limits.timeout_ms, redirects: Default::default(), retry: None, private_upstreams: Vec::new(), trace: None };
    let progress_token = params.progress_token();
    Ok(Action::Call(Box::new(PendingCall { id: req.id.clone(), kind: CallKind::Program(Box::new(program)), arguments, http, progress_token, redact: Vec::new(), mrtr: None, task, connection: None })))
}

/// A call of one of catalog mode's tools: searching and describing answer from the catalog;
/// `call_tool` is the named tool's own call, down the same path as `tools/call`.
fn catalog(server: &Server, index: &Index, meta: MetaTool, session: &Session, req: &Request, params: &CallParams, env: &Environment<'_>) -> Result<Action, Error> {
    let arguments = params.arguments();
    if let Some(why) = invalid(&meta.input_schema(), &arguments) {
        return refuse(session, req, meta.name(), &why);
    }
    let apps = crate::apps::declared(&session.client_capabilities);
    let result = match meta {
        MetaTool::Search => discovery::search(server, index, &server.gate(env.principal, env.now_ms), apps, &arguments),
        MetaTool::Describe => discovery::describe(server, &server.gate(env.principal, env.now_ms), apps, &arguments),
        MetaTool::Call => {
            let inner = discovery::inner_call(req);
            let params = super::params(inner.params.as_ref())?;
            return tool(server, session, &inner, params, env);
        }
        MetaTool::Declare => crate::codemode::search(server, index, &server.gate(env.principal, env.now_ms), apps, &arguments),
        MetaTool::Execute => return program(server, session, req, params, arguments, env),
    };
    let structured = at_least(&session.protocol_version, "2025-06-18");
    let result = reply::finalize(result, &ReplyPlan::map(server.max_reply_bytes), structured);
    Ok(Action::Reply(jsonrpc::success(&req.id, decorate(server, session, Method::ToolsCall, result))))
}

/// An MCP App's own call, made through its host, names the tool as the app's upstream does,
/// without the prefix mcp-edge lists it under: the one tool by that name of the upstreams
/// serving apps. Two such upstreams with the name leave it unknown, as it is ambiguous.
fn app_call<'a>(server: &'a Server, name: &str) -> Option<&'a crate::tools::Tool> {
    let serves_apps = |source: usize| server.tools.iter().any(|t| t.mcp.as_ref().is_some_and(|m| m.source == source) && crate::apps::is_app(&t.listing));
    let mut found = server.tools.iter().filter(|t| t.mcp.as_ref().is_some_and(|m| m.name == name && serves_apps(m.source)));
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

/// Whether the call runs as a task. 2025-11-25: when the client asks (`params.task`), as the
/// tool allows. 2026-07-28: the server decides: a tool that may run as one does, for a client
/// that declared the Tasks extension; one that must refuses other clients (-32021), and
/// `params.task` means nothing; for a tool with `inputBeforeTask`, the first round (no
/// `inputResponses`) is no task: its questions come back as an `InputRequiredResult`, and the
/// retry that answers them makes the task. Elsewhere `params.task` is ignored, as the spec has
/// it for servers without the capability.
/// `(support, input_before_task, relayed)`: the tool's task support, its `inputBeforeTask`, and
/// whether an upstream MCP server runs it.
fn task(server: &Server, session: &Session, params: &CallParams, (support, input_before_task, relayed): (crate::tools::TaskSupport, bool, bool), name: &str) -> Result<Option<crate::tasks::Ask>, Error> {
    use crate::tasks::Ask;
    use crate::tools::TaskSupport as Support;
    if !crate::tasks::offered(server, &session.protocol_version) {
        return Ok(None);
    }
    // 2026-07-28: an upstream MCP server's tool is the upstream's to run as a task, its id
    // namespaced on the way back (`edge::mcp::call`).
    if stateless_revision(session) && relayed {
        return Ok(None);
    }
    if stateless_revision(session) {
        return match (support, crate::tasks::declared(&session.client_capabilities)) {
            (Support::Forbidden, _) => Ok(None),
            (_, true) if input_before_task && params.input_responses.is_none() => Ok(None),
            (_, true) => Ok(Some(Ask { ttl_ms: None })),
            (Support::Required, false) => Err(crate::tasks::undeclared()),
            (Support::Optional, false) => Ok(None),
        };
    }
    let task = crate::tasks::asked(params.task.as_ref()).map(|ttl_ms| Ask { ttl_ms });
    support.admit(name, task.is_some())?;
    Ok(task)
}

/// Why the arguments do not fit the tool's input schema, if they do not.
fn invalid(input_schema: &Value, arguments: &Value) -> Option<String> {
    match (arguments, schema::validate(input_schema, arguments)) {
        (Value::Object(_), Ok(())) => None,
        (Value::Object(_), Err(v)) => Some(v.to_string()),
        _ => Some("arguments must be an object".to_string()),
    }
}

/// Arguments that do not fit: a tool error from 2025-11-25 on, so the model can correct
/// itself; invalid params before.
fn refuse(session: &Session, req: &Request, tool: &str, why: &str) -> Result<Action, Error> {
    let message = format!("invalid arguments for tool {tool:?}: {why}");
    if at_least(&session.protocol_version, "2025-11-25") {
        return Ok(Action::Reply(jsonrpc::success(&req.id, reply::error_result(message))));
    }
    Err(Error::InvalidParams(message))
}

/// A configured tool's call.
fn tool(server: &Server, session: &Session, req: &Request, params: CallParams, env: &Environment<'_>) -> Result<Action, Error> {
    let arguments = params.arguments();
    // A tool the caller may not use answers exactly like one that does not exist.
    let gate = server.gate(env.principal, env.now_ms);
    let tool = server.tool(&params.name).or_else(|| app_call(server, &params.name)).filter(|t| gate.sees(t)).ok_or_else(|| Error::InvalidParams(format!("unknown tool {:?}", params.name)))?;
    let task = task(server, session, &params, (tool.task_support, tool.input_before_task, tool.mcp.is_some()), &tool.name)?;
    if let Some(why) = invalid(&tool.input_schema, &arguments) {
        return refuse(session, req, &tool.name, &why);
    }
    // An alias (`include`): the client's arguments fit its listed schema; the server's own
    // (hidden, pinned) and the defaults are merged in now, and the call goes on as the source's.
    let arguments = match (&tool.curation, arguments) {
        (Some(curation), Value::Object(args)) => match curation.arguments(args) {
            Ok(args) => Value::Object(args),
            Err(why) => return refuse(session, req, &tool.name, &why),
        },
        (_, arguments) => arguments,
    };
    // Rules on arguments read the validated, typed value, an alias's pinned values and defaults
    // merged in: a number sent as a string is a string, and a pinned value is the server's.
    if let Err(denial) = gate.admits(tool, &arguments) {
        return refuse(session, req, &tool.name, &format!("{}{:?}", crate::access::REFUSED, denial.0));
    }
    let empty = serde_json::Map::new();
    let args = arguments.as_object().unwrap_or(&empty);
    let mut bindings = bindings(&tool.request.secrets, env);
    bindings.extend(env.principal.bindings(tool.forward_upstream_token));
    let connection = tool.connection.as_deref().map(|name| connection(name, req, env, &mut bindings));
    if let Some(meta) = &params.meta {
        bind_meta(&mut bindings, "meta", meta, tool.forward_meta_auth);
    }
    let mut http = tool.prepare(args, &bindings)?;
    http.private_upstreams.clone_from(tool.curation.as_ref().map_or(&server.private_upstreams, |c| &c.private_upstreams));
    let mut binding = stateless_revision(session).then(|| (env.secret)(SIGNING_KEY)).flatten().map(|key| mrtr::Binding {
        key: key.into_bytes(),
        server: server.route.as_str().to_string(),
        tool: tool.name.clone(),
        args: mrtr::args_digest(&arguments),
        principal: env.principal.id.clone(),
        answered: None,
    });
    // An upstream MCP server's tool: the edge relays the verified answers (`edge::mcp::call`).
    if let (Some(binding), true) = (binding.as_mut(), tool.mcp.is_some()) {
        if let Some(again) = mrtr::relayed_retry(binding, params.request_state.as_ref(), params.input_responses.as_ref(), env.now_ms)? {
            return Ok(Action::Reply(jsonrpc::success(&req.id, again)));
        }
    }
    // A 2026-07-28 retry: the answers go to the upstream with the state it asked with.
    if let (Some(state), false) = (&params.request_state, tool.mcp.is_some()) {
        let binding = binding.as_ref().ok_or_else(|| Error::InvalidParams(format!("requestState cannot be verified: the {SIGNING_KEY} secret is not set")))?;
        let state = state.as_str().ok_or_else(|| Error::InvalidParams("requestState must be a string".into()))?;
        let claims = mrtr::open(state, binding, env.now_ms)?;
        match mrtr::retry(claims, state, params.input_responses.as_ref())? {
            mrtr::Retry::AskAgain(result) => return Ok(Action::Reply(jsonrpc::success(&req.id, result))),
            mrtr::Retry::Answers { ask, answers } => http = http.follow_up(crate::upstream::stream::follow_up_body(&arguments, &ask, &answers)),
        }
    }
    let kind = CallKind::Tool(tool.name.clone());
    let redact = credentials(&bindings);
    let progress_token = params.progress_token();
    Ok(Action::Call(Box::new(PendingCall { id: req.id.clone(), kind, arguments, http, progress_token, redact, mrtr: binding, task, connection })))
}

/// A call's connection (`auth.connection`): its token bound for the templates when the edge
/// holds it, and what the edge needs to dispatch the request again.
pub(crate) fn connection(name: &str, req: &Request, env: &Environment<'_>, bindings: &mut Bindings) -> Box<crate::protocol::action::CallConnection> {
    let token = (env.connection)(name);
    if let Some(token) = &token {
        bindings.insert(crate::connections::ACCESS_TOKEN_VARIABLE.into(), Value::String(token.clone()));
    }
    Box::new(crate::protocol::action::CallConnection { name: name.into(), token, request: req.clone(), route: env.route.clone(), principal: env.principal.clone() })
}

/// The values of the bindings that hold credentials: what a reply must never show.
pub(crate) fn credentials(bindings: &Bindings) -> Vec<String> {
    bindings.iter().filter(|(k, _)| is_credential(k)).filter_map(|(_, v)| v.as_str().map(str::to_string)).collect()
}

/// Whether a binding holds a credential, which a reply must never show: a secret, a client's
/// forwarded credential, the caller's upstream token.
fn is_credential(name: &str) -> bool {
    name.starts_with("env.") || name.starts_with("meta.auth.") || name == "principal.upstreamToken" || name == crate::connections::ACCESS_TOKEN_VARIABLE
}

/// `params._meta` values as `meta.NAME` (nested: `meta.a.b`). Credentials under `auth` only
/// when the tool forwards them. A member whose name has a dot is left out: `{"auth.token": …}`
/// would bind `meta.auth.token` past the `auth` gate, and no template could name it apart from
/// the nested one anyway.
fn bind_meta(bindings: &mut Bindings, prefix: &str, value: &Value, with_auth: bool) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                if name.contains('.') || (prefix == "meta" && name == "auth" && !with_auth) {
                    continue;
                }
                let path = format!("{prefix}.{name}");
                if path.matches('.').count() <= 4 {
                    bind_meta(bindings, &path, member, with_auth);
                }
            }
        }
        Value::Array(_) | Value::Null => {}
        scalar => {
            bindings.insert(prefix.to_string(), scalar.clone());
        }
    }
}

/// The values of the named secrets.
pub(crate) fn secret_values(names: &[String], env: &Environment<'_>) -> Vec<String> {
    names.iter().filter_map(|n| (env.secret)(n)).collect()
}

/// The secrets a request template names, read from the environment, and the route parameters.
pub(crate) fn bindings(secrets: &[String], env: &Environment<'_>) -> Bindings {
    crate::upstream::request::bindings(secrets, env.secret, env.route)
}

/// The reply to a call once its upstream has answered.
pub fn finish(server: &Server, session: &Session, call: &PendingCall, upstream: &Upstream, secrets: &crate::redact::Redactor) -> String {
    match &call.kind {
        CallKind::Tool(name) => {
            let structured = at_least(&session.protocol_version, "2025-06-18");
            let plan = server.reply_plan(name);
            jsonrpc::success(&call.id, decorate(server, session, Method::ToolsCall, reply::finalize(reply::to_result(upstream, &plan, secrets), &plan, structured)))
        }
        // Carried out by the edge's MCP client, never through an HTTP reply.
        CallKind::Upstream { .. } | CallKind::Program(_) => jsonrpc::failure(&call.id, &Error::Internal("an upstream MCP request or a program has no HTTP reply".into())),
        CallKind::Resource { uri, mime_type } => match resources::from_reply(uri, mime_type.as_deref(), upstream) {
            Ok(result) => jsonrpc::success(&call.id, decorate(server, session, Method::ResourcesRead, result)),
            Err(error) => jsonrpc::failure(&call.id, &error),
        },
    }
}

#[cfg(test)]
mod call_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_auth_stays_behind_its_gate_whatever_the_keys_are_called() {
        let meta = json!({"auth.token": "dotted", "auth": {"token": "nested"}, "tenant": {"id": "t1"}, "a.b": "x"});
        let mut closed = Bindings::new();
        bind_meta(&mut closed, "meta", &meta, false);
        assert_eq!(closed.keys().collect::<Vec<_>>(), ["meta.tenant.id"]);
        let mut open = Bindings::new();
        bind_meta(&mut open, "meta", &meta, true);
        let mut keys: Vec<_> = open.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["meta.auth.token", "meta.tenant.id"]);
        assert_eq!(open["meta.auth.token"], json!("nested"), "the dotted key never stands in for the nested one");
    }
}
