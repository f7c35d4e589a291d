//! Request + session + catalog → replies, and the tool calls the edge must make: the method
//! table's dispatch, for sessions and for the stateless revision. Each arm parses its method's
//! params into their type and calls the method's handler in its area's file of `protocol/`, where
//! the method's params, answer and table properties are read together (`tools/call` in
//! `protocol/tools.rs`); what a handler asks of the edge is `protocol::action`'s `Action`, named
//! here too for the edge. Here also: a request passed on to an upstream MCP server.

#[cfg(test)]
mod served;

pub use crate::protocol::action::{Action, CallKind, Environment, PendingCall, Program, TaskRequest};
pub use crate::protocol::meta::{decorate, stateless_revision};
pub use crate::protocol::tools::finish;
use crate::protocol::tools::{bindings, secret_values};

use serde_json::{json, Value};

use crate::catalog::Server;
use crate::error::Error;
use crate::jsonrpc::{self, Message, Parsed, Request};
use crate::method::Method;
use crate::protocol::resources::{self, Read};
use crate::protocol::{self, completion, lifecycle, logging, meta, prompts, tools as tools_protocol};
use crate::session::Session;

/// Handles one parsed message of an established session.
/// Methods may change the session (log level, subscriptions); the caller persists it.
pub fn handle(server: &Server, session: &mut Session, parsed: Parsed, env: &Environment<'_>) -> Action {
    match parsed {
        Err((id, error)) => Action::Reply(jsonrpc::failure(&id, &error)),
        Ok(Message::Notification(_) | Message::Response { .. }) => Action::Nothing,
        Ok(Message::Request(req)) => match request(server, session, &req, env) {
            Ok(action) => action,
            Err(error) => Action::Reply(jsonrpc::failure(&req.id, &error)),
        },
    }
}

fn request(server: &Server, session: &mut Session, req: &Request, env: &Environment<'_>) -> Result<Action, Error> {
    if !stateless_revision(session) {
        return session_request(server, session, req, env);
    }
    // `subscriptions/listen` opens a stream, which the edge does before it gets here.
    let method = req.method.known().filter(|m| meta::offered(server, *m) && *m != Method::SubscriptionsListen);
    let Some(method) = method else {
        return Err(Error::MethodNotFound(req.method.to_string()));
    };
    match method {
        Method::ServerDiscover => Ok(Action::Reply(jsonrpc::success(&req.id, meta::discover(server)))),
        // The tools listed narrow the list's cache hint, which `decorate` cannot know.
        Method::ToolsList => {
            let gate = server.gate(env.principal, env.now_ms);
            let mut result = tools_protocol::list(server, &protocol::params(req.params.as_ref())?, &gate)?;
            crate::apps::for_client(crate::apps::declared(&session.client_capabilities), method, &mut result);
            let cache = tools_protocol::list_cache(server, &gate);
            Ok(Action::Reply(jsonrpc::success(&req.id, meta::complete(result, server, Some(cache)))))
        }
        // 2026-07-28 reports an unknown resource as invalid params.
        Method::ResourcesRead => session_request(server, session, req, env).map_err(|e| match e {
            Error::ResourceNotFound(uri) => Error::InvalidParams(format!("Resource not found: {uri}")),
            other => other,
        }),
        _ => session_request(server, session, req, env),
    }
}

/// The methods of the session-based revisions, whose results the stateless one decorates: each
/// method's params parsed once into its type (`protocol::params`), then its handler in its
/// area's file.
fn session_request(server: &Server, session: &mut Session, req: &Request, env: &Environment<'_>) -> Result<Action, Error> {
    let params = req.params.as_ref();
    // Methods only the 2026-07-28 revision has, and requests to the client, are unknown here.
    let Some(method) = req.method.known() else {
        return Err(Error::MethodNotFound(req.method.to_string()));
    };
    // MCP Apps' resources and tool metadata are for clients that declared the extension.
    let apps = crate::apps::declared(&session.client_capabilities);
    let mut result = match method {
        Method::Ping => lifecycle::ping(),
        Method::ToolsList => tools_protocol::list(server, &protocol::params(params)?, &server.gate(env.principal, env.now_ms))?,
        Method::ToolsCall => return tools_protocol::call(server, session, req, env),
        Method::ResourcesList => resources::list(server, &protocol::params(params)?, &server.gate(env.principal, env.now_ms))?,
        Method::ResourcesTemplatesList => resources::templates_list(server, &protocol::params(params)?, &server.gate(env.principal, env.now_ms))?,
        Method::ResourcesRead => match resources::read(server, &visible_uri(server, env, apps, protocol::params(params)?)?, &|request| bindings(&request.secrets, env))? {
            Read::Ready(result) => result,
            Read::Upstream { source, uri } => return upstream(server, req, env, source, Method::ResourcesRead, uri),
            Read::Fetch { mut call, uri, mime_type } => {
                call.private_upstreams.clone_from(&server.private_upstreams);
                let redact = secret_values(&resources::secrets_of(server, &uri), env);
                let kind = CallKind::Resource { uri, mime_type };
                return Ok(Action::Call(Box::new(PendingCall { id: req.id.clone(), kind, arguments: Value::Null, http: *call, progress_token: None, redact, mrtr: None, task: None, connection: None })));
            }
        },
        Method::ResourcesSubscribe => resources::subscribe(server, session, visible_uri(server, env, apps, protocol::params(params)?)?)?,
        Method::ResourcesUnsubscribe => resources::unsubscribe(session, &protocol::params(params)?),
        Method::PromptsList => prompts::list(server, &protocol::params(params)?, &server.gate(env.principal, env.now_ms))?,
        Method::PromptsGet => {
            let get: prompts::GetParams = protocol::params(params)?;
            if prompts::hidden(server, &server.gate(env.principal, env.now_ms), &get.name) {
                return Err(Error::InvalidParams(format!("unknown prompt {:?}", get.name)));
            }
            match prompts::upstream(server, &get.name) {
                Some(source) => return upstream(server, req, env, source, Method::PromptsGet, get.name),
                None => prompts::get(server, &get)?,
            }
        }
        Method::CompletionComplete => {
            let complete: completion::CompleteParams = protocol::params(params)?;
            if let Some(unknown) = completion::hidden(server, &server.gate(env.principal, env.now_ms), &complete) {
                return Err(unknown);
            }
            match completion::upstream(server, &complete) {
                Some(source) => return upstream(server, req, env, source, Method::CompletionComplete, complete.label().to_string()),
                None => completion::complete(server, &complete)?,
            }
        }
        Method::LoggingSetLevel => logging::set_level(session, protocol::params(params)?)?,
        Method::Initialize => {
            return Err(Error::InvalidRequest(format!("{} must be sent alone, without Mcp-Session-Id", Method::Initialize)));
        }
        // 2026-07-28: the Tasks extension's methods, for a client that declares it.
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel if stateless_revision(session) && crate::tasks::offered(server, &session.protocol_version) => {
            if !crate::tasks::declared(&session.client_capabilities) {
                return Err(crate::tasks::undeclared());
            }
            if let Some(action) = upstream_task(server, req, env, method)? {
                return Ok(action);
            }
            return task_request(req, method);
        }
        Method::TasksGet | Method::TasksResult | Method::TasksList | Method::TasksCancel if !stateless_revision(session) && crate::tasks::offered(server, &session.protocol_version) => {
            return task_request(req, method);
        }
        Method::ServerDiscover
        | Method::TasksGet
        | Method::TasksResult
        | Method::TasksList
        | Method::TasksCancel
        | Method::TasksUpdate
        | Method::TasksStatus
        | Method::ElicitationComplete
        | Method::SubscriptionsListen
        | Method::Initialized
        | Method::Cancelled
        | Method::Progress
        | Method::RootsListChanged
        | Method::SamplingCreateMessage
        | Method::ElicitationCreate
        | Method::RootsList
        | Method::LogMessage
        | Method::ResourcesUpdated
        | Method::ToolsListChanged
        | Method::ResourcesListChanged
        | Method::PromptsListChanged
        | Method::SubscriptionsAcknowledged
        | Method::ProgressUpdate => return Err(Error::MethodNotFound(method.to_string())),
    };
    crate::apps::for_client(apps, method, &mut result);
    Ok(Action::Reply(jsonrpc::success(&req.id, decorate(server, session, method, result))))
}

/// A resource URI the caller may see: one the access rules hide is as unknown as one that
/// does not exist (-32002), and so is an app's `ui://` to a client that did not declare apps.
fn visible_uri(server: &Server, env: &Environment<'_>, apps: bool, params: resources::UriParams) -> Result<resources::UriParams, Error> {
    if (!apps && crate::apps::is_ui(&params.uri)) || resources::hidden(server, &server.gate(env.principal, env.now_ms), &params.uri) {
        return Err(Error::ResourceNotFound(params.uri));
    }
    Ok(params)
}

/// A `tasks/*` request, its params parsed, for the object that keeps the tasks.
fn task_request(req: &Request, method: Method) -> Result<Action, Error> {
    let call = protocol::tasks::TaskCall::parse(method, req.params.as_ref()).ok_or_else(|| Error::MethodNotFound(method.to_string()))??;
    Ok(Action::Task(Box::new(TaskRequest { id: req.id.clone(), call })))
}

/// 2026-07-28: a task of an upstream MCP server (its id namespaced and signed for this principal,
/// `tasks::upstream_id`): the request goes to that upstream, with the upstream's own id. Any other
/// id is looked up among mcp-edge's own tasks.
fn upstream_task(server: &Server, req: &Request, env: &Environment<'_>, method: Method) -> Result<Option<Action>, Error> {
    let (Some(key), Some(id)) = ((env.secret)(crate::signing::SIGNING_KEY), req.params.as_ref().and_then(|p| p.get("taskId")).and_then(Value::as_str)) else { return Ok(None) };
    let names = server.upstreams.iter().map(|s| s.name.as_str());
    let Some((source, theirs)) = crate::tasks::upstream_task(key.as_bytes(), server.route.as_str(), &env.principal.id, names, id) else { return Ok(None) };
    let mut req = req.clone();
    if let Some(params) = req.params.as_mut().and_then(Value::as_object_mut) {
        params.insert("taskId".into(), Value::String(theirs.to_string()));
    }
    upstream(server, &req, env, source, method, id.to_string()).map(Some)
}

/// `notifications/progress` for a call that carries a progress token.
pub fn progress(token: &Value, progress: u64, message: &str) -> String {
    jsonrpc::notification(Method::Progress, json!({"progressToken": token, "progress": progress, "message": message}))
}

/// Answers `initialize` and creates the session it starts.
pub fn initialize(server: &Server, req: &Request, session_id: &str, now_ms: u64) -> (String, Session) {
    let hello = lifecycle::hello(req.params.as_ref());
    let session = Session::new(session_id, server.route.as_str(), hello.protocol_version, hello.client_info, hello.client_capabilities, now_ms);
    let reply = jsonrpc::success(&req.id, lifecycle::initialize_result(server, hello.protocol_version));
    (reply, session)
}

/// A request for an upstream MCP server's resource or prompt: passed on in the upstream
/// session, its params as the client sent them (a prompt under its upstream name).
fn upstream(server: &Server, req: &Request, env: &Environment<'_>, source: usize, method: Method, label: String) -> Result<Action, Error> {
    let upstream = server.upstreams.get(source).ok_or_else(|| Error::Internal(format!("no upstream {source}")))?;
    let mut params = req.params.clone().unwrap_or_else(|| json!({}));
    // An app's resource goes by the upstream's own URI there.
    if let (Method::ResourcesRead, Some(params)) = (method, params.as_object_mut()) {
        if let Some(theirs) = params.get("uri").and_then(Value::as_str).and_then(|uri| crate::apps::theirs(&upstream.name, uri)) {
            params.insert("uri".into(), Value::String(theirs));
        }
    }
    // A prompt goes by its upstream name there, in `prompts/get` and in a completion's `ref`.
    let prompt = match method {
        Method::PromptsGet => params.as_object_mut(),
        Method::CompletionComplete => params.get_mut("ref").filter(|r| r.get("type").and_then(Value::as_str) == Some("ref/prompt")).and_then(Value::as_object_mut),
        _ => None,
    };
    if let Some(prompt) = prompt {
        let ours = prompt.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Some(theirs) = server.prompts.iter().find(|p| p.name == ours).and_then(|p| p.mcp.as_ref()).map(|t| t.name.clone()) {
            prompt.insert("name".into(), Value::String(theirs));
        }
    }
    let mut bindings = bindings(&upstream.request.secrets, env);
    bindings.extend(env.principal.bindings(upstream.forward_upstream_token));
    let connection = upstream.connection.as_deref().map(|name| tools_protocol::connection(name, req, env, &mut bindings));
    let mut http = upstream.request.render(&format!("upstream {:?}", upstream.name), &serde_json::Map::new(), &bindings)?;
    http.private_upstreams.clone_from(&server.private_upstreams);
    let redact = tools_protocol::credentials(&bindings);
    // 2026-07-28: what the upstream asks during the request becomes an `InputRequiredResult`,
    // whose state is bound like a tool call's; a retry's answers are verified here.
    let mut mrtr = (env.secret)(crate::signing::SIGNING_KEY).map(|key| crate::protocol::mrtr::Binding {
        key: key.into_bytes(),
        server: server.route.as_str().to_string(),
        tool: format!("{method} {label}"),
        args: crate::protocol::mrtr::relayed_args(&params),
        principal: env.principal.id.clone(),
        answered: None,
    });
    if let Some(binding) = mrtr.as_mut() {
        let member = |name: &str| params.get(name).filter(|v| !v.is_null());
        if let Some(again) = crate::protocol::mrtr::relayed_retry(binding, member("requestState"), member("inputResponses"), env.now_ms)? {
            return Ok(Action::Reply(jsonrpc::success(&req.id, again)));
        }
    }
    let kind = CallKind::Upstream { source, method, params, label };
    Ok(Action::Call(Box::new(PendingCall { id: req.id.clone(), kind, arguments: Value::Null, http, progress_token: None, redact, mrtr, task: None, connection })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::reply::Upstream;
    use crate::upstream::HttpCall;
    use crate::config;
    use crate::jsonrpc::parse_message;

    fn server(page: &str) -> Server {
        let text = format!(
            r#"{{"servers":[{{"name":"demo","version":"1.2.3","title":"Demo","limits":{{{page}}},"tools":[
            {{"name":"echo","description":"Echo","inputSchema":{{"type":"object","properties":{{"message":{{"type":"string"}}}},"required":["message"]}},
              "http":{{"url":"{{+env.BASE}}/echo","headers":{{"X-Key":"{{env.KEY}}"}}}}}},
            {{"name":"time","http":{{"method":"GET","url":"https://time.test/now"}}}},
            {{"name":"third","http":{{"url":"https://x.test/3"}}}}]}}]}}"#
        );
        config::load(&text).unwrap().servers.remove(0).as_ref().clone()
    }

    fn session(version: &str) -> Session {
        Session::new("sid", "demo", version, json!({}), json!({}), 0)
    }

    fn run(server: &Server, session: &Session, msg: Value) -> Action {
        run_as(server, session, msg, &crate::auth::Principal::anonymous())
    }

    fn run_as(server: &Server, session: &Session, msg: Value, principal: &crate::auth::Principal) -> Action {
        let mut session = session.clone();
        let secret = |name: &str| match name {
            "BASE" => Some("http://127.0.0.1:9".to_string()),
            "KEY" => Some("k".to_string()),
            _ => None,
        };
        let route = Vec::new();
        handle(server, &mut session, parse_message(msg), &Environment { secret: &secret, route: &route, principal, now_ms: 0, connection: &|_: &str| None })
    }

    fn reply(action: Action) -> Value {
        match action {
            Action::Reply(text) => serde_json::from_str(&text).unwrap(),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn an_app_is_for_clients_that_declare_the_extension() {
        let text = r#"{"servers":[{"name":"demo","version":"1","tools":[{"name":"rows","http":{"url":"https://x.test/rows"},"app":{"html":"<table></table>"}}]}]}"#;
        let s = config::load(text).unwrap().servers.remove(0).as_ref().clone();
        let host = Session::new("sid", "demo", "2025-11-25", json!({}), json!({"extensions": {crate::apps::EXTENSION: {"mimeTypes": [crate::apps::MIME_TYPE]}}}), 0);
        let plain = session("2025-11-25");
        let list = |session: &Session, method: &str| reply(run(&s, session, json!({"jsonrpc": "2.0", "id": 1, "method": method})))["result"].clone();
        assert_eq!(list(&host, "tools/list")["tools"][0]["_meta"]["ui"]["resourceUri"], "ui://demo/rows");
        assert_eq!(list(&plain, "tools/list")["tools"][0].get("_meta"), None);
        assert_eq!(list(&host, "resources/list")["resources"][0]["uri"], "ui://demo/rows");
        assert_eq!(list(&plain, "resources/list")["resources"], json!([]));
        let read = |session: &Session| reply(run(&s, session, json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "ui://demo/rows"}})));
        let contents = read(&host)["result"]["contents"][0].clone();
        assert_eq!((contents["text"].as_str(), contents["mimeType"].as_str()), (Some("<table></table>"), Some(crate::apps::MIME_TYPE)));
        assert_eq!(contents["_meta"]["ui"]["csp"], crate::apps::strict_csp());
        assert_eq!(read(&plain)["error"]["code"], -32002, "as unknown as a resource that does not exist");
        // 2026-07-28: the capabilities a request's `_meta` declares, the session of that request.
        let caps = json!({"extensions": {crate::apps::EXTENSION: {}}});
        let stateless = |caps: Value| Session::new("", "demo", crate::versions::STATELESS_VERSION, json!({}), caps, 0);
        assert_eq!(list(&stateless(caps), "tools/list")["tools"][0]["_meta"]["ui"]["resourceUri"], "ui://demo/rows");
        assert_eq!(list(&stateless(json!({})), "tools/list")["tools"][0].get("_meta"), None);
        assert_eq!(read(&stateless(json!({})))["error"]["code"], -32602, "2026-07-28's unknown resource");
    }

    #[test]
    fn initialize_negotiates_and_creates_the_session() {
        let s = server("");
        let req = Request { id: json!(0), method: Method::Initialize.into(), params: Some(json!({"protocolVersion":"2025-03-26","capabilities":{"x":{}},"clientInfo":{"name":"c","version":"1"}})) };
        let (text, session) = initialize(&s, &req, "abc", 42);
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":false},"logging":{}},"serverInfo":{"name":"demo","version":"1.2.3","title":"Demo"}}}"#
        );
        assert_eq!((session.id.as_str(), session.protocol_version.as_str(), session.created_ms), ("abc", "2025-03-26", 42));
        assert_eq!(session.client_info, json!({"name":"c","version":"1"}));
        let req = Request { id: json!(1), method: Method::Initialize.into(), params: Some(json!({"protocolVersion":"2030-01-01"})) };
        assert_eq!(initialize(&s, &req, "d", 0).1.protocol_version, "2025-11-25");
    }

    #[test]
    fn ping_unknown_methods_and_notifications() {
        let s = server("");
        let sess = session("2025-11-25");
        assert_eq!(run(&s, &sess, json!({"jsonrpc":"2.0","id":"p","method":"ping"})), Action::Reply(r#"{"jsonrpc":"2.0","id":"p","result":{}}"#.into()));
        assert_eq!(reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":2,"method":"nope/x"})))["error"]["code"], -32601);
        assert_eq!(run(&s, &sess, json!({"jsonrpc":"2.0","method":"notifications/initialized"})), Action::Nothing);
        assert_eq!(run(&s, &sess, json!({"jsonrpc":"2.0","id":5,"result":{}})), Action::Nothing);
        assert_eq!(reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":3,"method":"initialize"})))["error"]["code"], -32600);
        assert_eq!(reply(run(&s, &sess, json!({"jsonrpc":"1.0","id":3,"method":"ping"})))["error"]["code"], -32600);
    }

    #[test]
    fn tools_list_pages_follow_cursors() {
        let s = server("");
        let all = reply(run(&s, &session("2025-11-25"), json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})));
        assert_eq!(all["result"]["tools"].as_array().unwrap().len(), 3);
        assert!(all["result"].get("nextCursor").is_none());
        assert_eq!(
            all["result"]["tools"][0],
            json!({"name":"echo","description":"Echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}})
        );
        let s = server(r#""toolsPageSize":2"#);
        let first = reply(run(&s, &session("2025-11-25"), json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})));
        assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 2);
        let cursor = first["result"]["nextCursor"].clone();
        let second = reply(run(&s, &session("2025-11-25"), json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":cursor}})));
        assert_eq!(second["result"]["tools"][0]["name"], "third");
        assert!(second["result"].get("nextCursor").is_none());
        let bad = reply(run(&s, &session("2025-11-25"), json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"99"}})));
        assert_eq!(bad["error"]["code"], -32602);
    }

    #[test]
    fn tools_call_prepares_the_upstream_request() {
        let s = server("");
        let msg = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":"tok"}}});
        let Action::Call(call) = run(&s, &session("2025-11-25"), msg) else { panic!("expected a call") };
        assert_eq!(call.id, json!(7));
        assert_eq!(call.progress_token, Some(json!("tok")));
        assert_eq!(call.http.url, "http://127.0.0.1:9/echo");
        assert_eq!(call.http.body.as_deref(), Some(r#"{"message":"hi"}"#));
        assert!(call.http.headers.contains(&("X-Key".into(), "k".into())));
        let ok = finish(&s, &session("2025-11-25"), &call, &Upstream::Reply { status: 200, content_type: Some("text/plain".into()), body: b"hi".to_vec(), truncated_at: None }, &Default::default());
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#);
    }

    #[test]
    fn invalid_arguments_depend_on_the_version() {
        let s = server("");
        let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":5}}});
        let new = reply(run(&s, &session("2025-11-25"), msg.clone()));
        assert_eq!(new["result"]["isError"], true);
        assert_eq!(new["result"]["content"][0]["text"], "invalid arguments for tool \"echo\": /message: expected string, got integer (type)");
        let old = reply(run(&s, &session("2025-06-18"), msg));
        assert_eq!(old["error"]["code"], -32602);
        assert_eq!(old["error"]["message"], "Invalid params: invalid arguments for tool \"echo\": /message: expected string, got integer (type)");
        let missing = reply(run(&s, &session("2025-03-26"), json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}})));
        assert!(missing["error"]["message"].as_str().unwrap().contains("missing required property \"message\" (required)"));
        for version in ["2025-11-25", "2024-11-05"] {
            let unknown = reply(run(&s, &session(version), json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}})));
            assert_eq!(unknown["error"]["code"], -32602, "{version}");
        }
        let no_name = reply(run(&s, &session("2025-11-25"), json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})));
        assert_eq!(no_name["error"]["code"], -32602);
    }

    fn catalog_server() -> Server {
        let text = r#"{"servers":[{"name":"r","version":"1",
            "resources":[
              {"uri":"test://text","name":"text","description":"d","mimeType":"text/plain","text":"hello"},
              {"uri":"test://bin","name":"bin","mimeType":"image/png","blob":"iVBORw0KGgo="},
              {"uri":"test://live","name":"live","http":{"method":"GET","url":"https://up.test/live","headers":{"K":"{env.KEY}"}}}],
            "resourceTemplates":[{"uriTemplate":"test://item/{id}/data","name":"item","mimeType":"application/json",
              "http":{"method":"GET","url":"{+env.BASE}/items/{id}"},"completions":{"id":["123","124","200"]}}],
            "prompts":[
              {"name":"greet","description":"Greets","arguments":[{"name":"who","required":true,"completions":["world","wide","zebra"]},{"name":"tone"}],
               "messages":[{"role":"user","content":{"type":"text","text":"Say hi to {who}"}},
                           {"role":"user","content":{"type":"resource","resource":{"uri":"{who}","mimeType":"text/plain","text":"fixed"}}}]}]}]}"#;
        config::load(text).unwrap().servers.remove(0).as_ref().clone()
    }

    #[test]
    fn resources_list_read_and_subscribe() {
        let s = catalog_server();
        let mut sess = session("2025-11-25");
        let list = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":1,"method":"resources/list"})));
        assert_eq!(list["result"]["resources"][0], json!({"uri":"test://text","name":"text","description":"d","mimeType":"text/plain"}));
        assert_eq!(list["result"]["resources"].as_array().unwrap().len(), 3);
        let templates = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":1,"method":"resources/templates/list"})));
        assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "test://item/{id}/data");
        let text = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://text"}})));
        assert_eq!(text["result"], json!({"contents":[{"uri":"test://text","mimeType":"text/plain","text":"hello"}]}));
        let bin = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://bin"}})));
        assert_eq!(bin["result"]["contents"][0]["blob"], "iVBORw0KGgo=");
        let Action::Call(call) = run(&s, &sess, json!({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://item/123/data"}})) else { panic!() };
        assert_eq!(call.http.url, "http://127.0.0.1:9/items/123");
        let up = Upstream::Reply { status: 200, content_type: Some("application/json".into()), body: br#"{"id":"123"}"#.to_vec(), truncated_at: None };
        assert_eq!(finish(&s, &sess, &call, &up, &Default::default()), r#"{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"test://item/123/data","mimeType":"application/json","text":"{\"id\":\"123\"}"}]}}"#);
        let png = Upstream::Reply { status: 200, content_type: Some("image/png".into()), body: vec![0x89, b'P', b'N', b'G'], truncated_at: None };
        let live = PendingCall { kind: CallKind::Resource { uri: "test://live".into(), mime_type: None }, ..(*call).clone() };
        assert!(finish(&s, &sess, &live, &png, &Default::default()).contains(r#""mimeType":"image/png","blob":"iVBORw=="#));
        let failed = finish(&s, &sess, &live, &Upstream::Failed("refused".into()), &Default::default());
        assert!(failed.contains(r#""code":-32603"#), "{failed}");
        let missing = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://nope"}})));
        assert_eq!(missing["error"], json!({"code":-32002,"message":"Resource not found: test://nope"}));
        // The live resource needs the KEY secret, which this environment has.
        assert!(matches!(run(&s, &sess, json!({"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"test://live"}})), Action::Call(_)));

        let secret = |_: &str| None;
        let route = Vec::new();
        let principal = crate::auth::Principal::anonymous();
        let env = Environment { secret: &secret, route: &route, principal: &principal, now_ms: 0, connection: &|_: &str| None };
        let sub = |sess: &mut Session, method: &str, uri: &str| handle(&s, sess, parse_message(json!({"jsonrpc":"2.0","id":7,"method":method,"params":{"uri":uri}})), &env);
        assert_eq!(sub(&mut sess, "resources/subscribe", "test://item/9/data"), Action::Reply(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.into()));
        sub(&mut sess, "resources/subscribe", "test://text");
        sub(&mut sess, "resources/subscribe", "test://text");
        assert_eq!(sess.subscriptions, ["test://item/9/data", "test://text"]);
        sub(&mut sess, "resources/unsubscribe", "test://item/9/data");
        assert_eq!(sess.subscriptions, ["test://text"]);
        let Action::Reply(unknown) = sub(&mut sess, "resources/subscribe", "test://nope") else { panic!() };
        assert!(unknown.contains("-32002"));
    }

    #[test]
    fn prompts_completion_and_logging() {
        let s = catalog_server();
        let mut sess = session("2025-11-25");
        let list = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":1,"method":"prompts/list"})));
        assert_eq!(list["result"]["prompts"][0], json!({"name":"greet","description":"Greets","arguments":[{"name":"who","required":true},{"name":"tone","required":false}]}));
        let got = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"Ada"}}})));
        assert_eq!(got["result"], json!({"description":"Greets","messages":[
            {"role":"user","content":{"type":"text","text":"Say hi to Ada"}},
            {"role":"user","content":{"type":"resource","resource":{"uri":"Ada","mimeType":"text/plain","text":"fixed"}}}]}));
        let missing = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"greet"}})));
        assert_eq!(missing["error"]["code"], -32602);
        let unknown = reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"nope"}})));
        assert_eq!(unknown["error"]["code"], -32602);

        let complete = |r: Value, name: &str, value: &str| reply(run(&s, &sess, json!({"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":r,"argument":{"name":name,"value":value}}})));
        assert_eq!(complete(json!({"type":"ref/prompt","name":"greet"}), "who", "W")["result"], json!({"completion":{"values":["world","wide"],"total":2,"hasMore":false}}));
        assert_eq!(complete(json!({"type":"ref/prompt","name":"greet"}), "tone", "")["result"]["completion"]["values"], json!([]));
        assert_eq!(complete(json!({"type":"ref/resource","uri":"test://item/{id}/data"}), "id", "12")["result"]["completion"]["values"], json!(["123","124"]));
        assert_eq!(complete(json!({"type":"ref/prompt","name":"nope"}), "who", "")["error"]["code"], -32602);

        let secret = |_: &str| None;
        let route = Vec::new();
        let principal = crate::auth::Principal::anonymous();
        let env = Environment { secret: &secret, route: &route, principal: &principal, now_ms: 0, connection: &|_: &str| None };
        let set = handle(&s, &mut sess, parse_message(json!({"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"warning"}})), &env);
        assert_eq!(set, Action::Reply(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#.into()));
        assert_eq!(sess.log_level.as_deref(), Some("warning"));
        let bad = handle(&s, &mut sess, parse_message(json!({"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"loud"}})), &env);
        assert!(matches!(bad, Action::Reply(t) if t.contains("-32602")));

        let caps = lifecycle::capabilities(&s);
        assert_eq!(caps, json!({"tools":{"listChanged":false},"logging":{},"resources":{"subscribe":true,"listChanged":false},"prompts":{"listChanged":false},"completions":{}}));
    }

    #[test]
    fn meta_auth_reaches_only_tools_that_opt_in() {
        let text = r#"{"servers":[{"name":"m","version":"1","tools":[
            {"name":"tenant","forwardMetaAuth":true,"http":{"url":"https://crm.test/me","headers":{"Authorization":"Bearer {meta.auth.token}"}}},
            {"name":"plain","http":{"url":"https://crm.test/me"}}]}]}"#;
        let s = config::load(text).unwrap().servers.remove(0).as_ref().clone();
        let sess = session("2025-11-25");
        let call = |name: &str| {
            let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":{},"_meta":{"auth":{"token":"t-123"}}}});
            match run(&s, &sess, msg) {
                Action::Call(call) => call.http.headers,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(call("tenant"), [("Authorization".to_string(), "Bearer t-123".to_string()), ("Content-Type".to_string(), "application/json".to_string())]);
        assert_eq!(call("plain"), [("Content-Type".to_string(), "application/json".to_string())]);
    }

    #[test]
    fn the_callers_identity_fills_the_request() {
        // An argument named like a principal field is accepted by the schema, but never
        // stands in for the caller.
        let text = r#"{"servers":[{"name":"m","version":"1","toolDiscovery":"catalog","tools":[
            {"name":"who","inputSchema":{"type":"object","properties":{"principal.subject":{"type":"string"}}},"http":{
              "url":"https://crm.test/u/{principal.subject}{/principal.roles*}{?principal.email}",
              "headers":{"X-Roles":"{principal.roles}","X-Who":"{principal.id} <{principal.email}>"},
              "body":{"subject":"{principal.subject}","roles":"{principal.roles}","email":"{principal.email}"}}}]}]}"#;
        let s = config::load(text).unwrap().servers.remove(0).as_ref().clone();
        let sess = session("2025-11-25");
        let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"who","arguments":{"principal.subject":"admin"}}});
        let http = |principal| match run_as(&s, &sess, msg.clone(), principal) {
            Action::Call(call) => call.http,
            other => panic!("{other:?}"),
        };
        let bot = crate::auth::Principal { email: Some("bot@example.test".into()), ..crate::auth::Principal::new("token", "bot", vec!["bot".into(), "ops team".into()]) };
        let call = http(&bot);
        assert_eq!(call.url, "https://crm.test/u/bot/bot/ops%20team?principal.email=bot%40example.test");
        assert_eq!(call.headers[..2], [("X-Roles".to_string(), "bot,ops team".to_string()), ("X-Who".to_string(), "token:bot <bot@example.test>".to_string())]);
        assert_eq!(serde_json::from_str::<Value>(call.body.as_deref().unwrap()).unwrap(), json!({"subject":"bot","roles":["bot","ops team"],"email":"bot@example.test"}));
        // Catalog mode's call_tool renders the same request for the same caller.
        let through_catalog = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"who","arguments":{"principal.subject":"admin"}}}});
        match run_as(&s, &sess, through_catalog, &bot) {
            Action::Call(inner) => assert_eq!(inner.http, call),
            other => panic!("{other:?}"),
        }
        // The anonymous principal: no subject, email or roles, so their parts drop out.
        let call = http(&crate::auth::Principal::anonymous());
        assert_eq!(call.url, "https://crm.test/u/");
        assert_eq!(call.headers[..2], [("X-Roles".to_string(), String::new()), ("X-Who".to_string(), "anonymous <>".to_string())]);
        assert_eq!(serde_json::from_str::<Value>(call.body.as_deref().unwrap()).unwrap(), json!({"roles":[]}));
    }

    #[test]
    fn the_upstream_token_goes_only_where_the_tool_forwards_it_and_is_redacted() {
        let text = r#"{"servers":[{"name":"m","version":"1","tools":[
            {"name":"as_user","forwardUpstreamToken":true,"http":{"url":"https://crm.test/me","headers":{"Authorization":"Bearer {principal.upstreamToken}"}}},
            {"name":"plain","http":{"url":"https://crm.test/me","headers":{"X-Who":"{principal.subject}"}}}]}]}"#;
        let s = config::load(text).unwrap().servers.remove(0).as_ref().clone();
        let sess = session("2025-11-25");
        let principal = crate::auth::Principal { upstream_token: Some("idp-token-5f2e".into()), ..crate::auth::Principal::new("jwt:https://idp.test", "user-7", vec![]) };
        let call = |name: &str| match run_as(&s, &sess, json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":{}}}), &principal) {
            Action::Call(call) => call,
            other => panic!("{other:?}"),
        };
        let as_user = call("as_user");
        assert_eq!(as_user.http.headers[0], ("Authorization".to_string(), "Bearer idp-token-5f2e".to_string()));
        // An upstream that quotes the token back: the reply shows it redacted.
        let up = Upstream::Reply { status: 401, content_type: Some("text/plain".into()), body: b"bad token idp-token-5f2e".to_vec(), truncated_at: None };
        let reply = finish(&s, &sess, &as_user, &up, &crate::redact::Redactor::new(&as_user.redact));
        assert!(reply.contains("bad token [redacted]") && !reply.contains("idp-token-5f2e"), "{reply}");
        let plain = call("plain");
        assert!(!format!("{:?}", plain.http).contains("idp-token-5f2e"));
        assert!(plain.redact.is_empty(), "{:?}", plain.redact);
    }

    #[test]
    fn structured_content_only_from_2025_06_18() {
        let call = PendingCall { id: json!(1), kind: CallKind::Tool("t".into()), arguments: json!({}), http: HttpCall { method: "GET".into(), url: "https://x/".into(), headers: vec![], body: None, timeout_ms: 1, redirects: Default::default(), retry: None, private_upstreams: vec![], trace: None }, progress_token: None, redact: vec![], mrtr: None, task: None, connection: None };
        let up = Upstream::Reply { status: 200, content_type: Some("application/json".into()), body: br#"{"a":1}"#.to_vec(), truncated_at: None };
        let s = server("");
        let none = crate::redact::Redactor::default();
        assert!(finish(&s, &session("2025-06-18"), &call, &up, &none).contains("structuredContent"));
        assert!(!finish(&s, &session("2025-03-26"), &call, &up, &none).contains("structuredContent"));
    }
}
