//! Request + session + catalog → replies, and the tool calls the edge must make.

use serde_json::{json, Value};

use crate::config::Server;
use crate::error::Error;
use crate::jsonrpc::{self, Message, Parsed, Request};
use crate::negotiate::at_least;
use crate::protocol::{lifecycle, tools as tools_protocol};
use crate::routes::RouteParams;
use crate::session::Session;
use crate::tools::reply::{self, Upstream};
use crate::tools::{schema, Bindings, HttpCall};

/// What one incoming message asks of the edge.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this JSON-RPC message back.
    Reply(String),
    /// Make this upstream call, then send `finish`'s reply.
    Call(Box<PendingCall>),
    /// A notification or a response: nothing goes back.
    Nothing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    pub id: Value,
    pub tool: String,
    pub http: HttpCall,
    pub progress_token: Option<Value>,
}

/// Where the edge gets template values that are not arguments.
pub struct Environment<'a> {
    /// Reads a Worker var or secret by name.
    pub secret: &'a dyn Fn(&str) -> Option<String>,
    pub route: &'a RouteParams,
}

/// Handles one parsed message of an established session.
pub fn handle(server: &Server, session: &Session, parsed: Parsed, env: &Environment<'_>) -> Action {
    match parsed {
        Err((id, error)) => Action::Reply(jsonrpc::failure(&id, &error)),
        Ok(Message::Notification(_) | Message::Response { .. }) => Action::Nothing,
        Ok(Message::Request(req)) => match request(server, session, &req, env) {
            Ok(action) => action,
            Err(error) => Action::Reply(jsonrpc::failure(&req.id, &error)),
        },
    }
}

fn request(server: &Server, session: &Session, req: &Request, env: &Environment<'_>) -> Result<Action, Error> {
    let params = req.params.as_ref();
    let result = match req.method.as_str() {
        "ping" => json!({}),
        "tools/list" => tools_protocol::list(server, params)?,
        "tools/call" => return call(server, session, req, env),
        "initialize" => {
            return Err(Error::InvalidRequest("initialize must be sent alone, without Mcp-Session-Id".into()));
        }
        other => return Err(Error::MethodNotFound(other.to_string())),
    };
    Ok(Action::Reply(jsonrpc::success(&req.id, result)))
}

fn call(server: &Server, session: &Session, req: &Request, env: &Environment<'_>) -> Result<Action, Error> {
    let params = tools_protocol::call_params(req.params.as_ref())?;
    let tool = server.tool(&params.name).ok_or_else(|| Error::InvalidParams(format!("unknown tool {:?}", params.name)))?;
    let invalid = match (&params.arguments, schema::validate(&tool.input_schema, &params.arguments)) {
        (Value::Object(_), Ok(())) => None,
        (Value::Object(_), Err(v)) => Some(v.to_string()),
        _ => Some("arguments must be an object".to_string()),
    };
    if let Some(why) = invalid {
        let message = format!("invalid arguments for tool {:?}: {why}", tool.name);
        // 2025-11-25 reports input validation as a tool error, so the model can correct itself.
        if at_least(&session.protocol_version, "2025-11-25") {
            return Ok(Action::Reply(jsonrpc::success(&req.id, reply::error_result(message))));
        }
        return Err(Error::InvalidParams(message));
    }
    let mut bindings = Bindings::new();
    for name in &tool.request.secrets {
        if let Some(value) = (env.secret)(name) {
            bindings.insert(format!("env.{name}"), Value::String(value));
        }
    }
    for (name, value) in env.route {
        bindings.insert(format!("route.{name}"), Value::String(value.clone()));
    }
    let empty = serde_json::Map::new();
    let args = params.arguments.as_object().unwrap_or(&empty);
    let http = tool.prepare(args, &bindings)?;
    Ok(Action::Call(Box::new(PendingCall { id: req.id.clone(), tool: tool.name.clone(), http, progress_token: params.progress_token })))
}

/// The reply to a tool call once its upstream has answered.
pub fn finish(session: &Session, call: &PendingCall, upstream: &Upstream) -> String {
    let structured = at_least(&session.protocol_version, "2025-06-18");
    jsonrpc::success(&call.id, reply::to_result(upstream, structured))
}

/// `notifications/progress` for a call that carries a progress token.
pub fn progress(token: &Value, progress: u64, message: &str) -> String {
    jsonrpc::notification("notifications/progress", json!({"progressToken": token, "progress": progress, "message": message}))
}

/// Answers `initialize` and creates the session it starts.
pub fn initialize(server: &Server, req: &Request, session_id: &str, now_ms: u64) -> (String, Session) {
    let hello = lifecycle::hello(req.params.as_ref());
    let session = Session::new(session_id, server.route.as_str(), hello.protocol_version, hello.client_info, hello.client_capabilities, now_ms);
    let reply = jsonrpc::success(&req.id, lifecycle::initialize_result(server, hello.protocol_version));
    (reply, session)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        config::load(&text).unwrap().servers.remove(0)
    }

    fn session(version: &str) -> Session {
        Session::new("sid", "demo", version, json!({}), json!({}), 0)
    }

    fn run(server: &Server, session: &Session, msg: Value) -> Action {
        let secret = |name: &str| match name {
            "BASE" => Some("http://127.0.0.1:9".to_string()),
            "KEY" => Some("k".to_string()),
            _ => None,
        };
        let route = Vec::new();
        handle(server, session, parse_message(msg), &Environment { secret: &secret, route: &route })
    }

    fn reply(action: Action) -> Value {
        match action {
            Action::Reply(text) => serde_json::from_str(&text).unwrap(),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn initialize_negotiates_and_creates_the_session() {
        let s = server("");
        let req = Request { id: json!(0), method: "initialize".into(), params: Some(json!({"protocolVersion":"2025-03-26","capabilities":{"x":{}},"clientInfo":{"name":"c","version":"1"}})) };
        let (text, session) = initialize(&s, &req, "abc", 42);
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"demo","version":"1.2.3","title":"Demo"}}}"#
        );
        assert_eq!((session.id.as_str(), session.protocol_version.as_str(), session.created_ms), ("abc", "2025-03-26", 42));
        assert_eq!(session.client_info, json!({"name":"c","version":"1"}));
        let req = Request { id: json!(1), method: "initialize".into(), params: Some(json!({"protocolVersion":"2030-01-01"})) };
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
        let ok = finish(&session("2025-11-25"), &call, &Upstream::Reply { status: 200, content_type: Some("text/plain".into()), body: b"hi".to_vec(), truncated_at: None });
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#);
    }

    #[test]
    fn invalid_arguments_depend_on_the_version() {
        let s = server("");
        let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":5}}});
        let new = reply(run(&s, &session("2025-11-25"), msg.clone()));
        assert_eq!(new["result"]["isError"], true);
        assert_eq!(new["result"]["content"][0]["text"], "invalid arguments for tool \"echo\": /message: expected string, got integer");
        let old = reply(run(&s, &session("2025-06-18"), msg));
        assert_eq!(old["error"]["code"], -32602);
        assert_eq!(old["error"]["message"], "Invalid params: invalid arguments for tool \"echo\": /message: expected string, got integer");
        let missing = reply(run(&s, &session("2025-03-26"), json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}})));
        assert!(missing["error"]["message"].as_str().unwrap().contains("missing required argument \"message\""));
        for version in ["2025-11-25", "2024-11-05"] {
            let unknown = reply(run(&s, &session(version), json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}})));
            assert_eq!(unknown["error"]["code"], -32602, "{version}");
        }
        let no_name = reply(run(&s, &session("2025-11-25"), json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})));
        assert_eq!(no_name["error"]["code"], -32602);
    }

    #[test]
    fn structured_content_only_from_2025_06_18() {
        let call = PendingCall { id: json!(1), tool: "t".into(), http: HttpCall { method: "GET".into(), url: "https://x/".into(), headers: vec![], body: None, timeout_ms: 1 }, progress_token: None };
        let up = Upstream::Reply { status: 200, content_type: Some("application/json".into()), body: br#"{"a":1}"#.to_vec(), truncated_at: None };
        assert!(finish(&session("2025-06-18"), &call, &up).contains("structuredContent"));
        assert!(!finish(&session("2025-03-26"), &call, &up).contains("structuredContent"));
    }
}
