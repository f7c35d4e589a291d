//! The upstream line protocol. An upstream that answers `application/x-ndjson` (or
//! `text/event-stream`, one message per `data:` event) may report progress and log messages
//! while it works, and ends with its result, or with a request for client input:
//!
//! ```text
//! {"progress": 50, "total": 100, "message": "halfway"}      → Method::Progress to the client
//! {"log": {"level": "info", "data": "step 1", "logger": "x"}} → Method::LogMessage to the client
//! {"result": {"content": [{"type": "text", "text": "done"}]}} → the CallToolResult
//! {"input": {"method": …, "params": {…}}, "state": …}          → a request to the client
//! {"error": {"code": -32603, "message": "…", "data": …}}      → a JSON-RPC error (a protocol error)
//! ```
//!
//! The request for input names one of the methods whose `client_capability` is set: sampling,
//! elicitation or roots.
//!
//! A passthrough tool's single JSON body may also be an `{"input": …}` or `{"error": …}` message.
//! The error is the call's JSON-RPC error, not a tool error (`isError`): what a task reports as
//! `failed` (the Tasks extension keeps `failed` for protocol errors).

use std::sync::Arc;

use crate::method::Method;
use serde_json::{json, Value};

use crate::redact::Redactor;

use crate::upstream::reply::{error_result, passthrough, to_result, ReplyPlan, ResultMode, Upstream};
use crate::jsonrpc;
use crate::logging;

/// What one message of the upstream asks of the edge.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Send this JSON-RPC notification to the client now.
    Notify(String),
    /// The call's result; the call is over.
    Result(Value),
    /// Ask the client (sampling, elicitation, roots), then call the upstream again with the
    /// answers and `state`.
    Input(InputAsk),
    /// The call ends with this JSON-RPC error.
    Error(crate::error::ErrorObject),
}

/// What an upstream asks the client for: one request (`input`) or several by key (`inputs`).
#[derive(Debug, Clone, PartialEq)]
pub struct InputAsk {
    pub requests: Vec<InputRequest>,
    /// `inputs` (a keyed map): the follow-up carries `responses` by key rather than one `result`.
    pub keyed: bool,
    pub state: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// The key of the request in a 2026-07-28 `inputRequests` map.
    pub key: String,
    pub method: Method,
    pub params: Value,
}

impl InputRequest {
    /// The request as an `inputRequests` entry.
    pub fn to_value(&self) -> Value {
        json!({"method": self.method.name(), "params": self.params})
    }
}

/// Reads an upstream's stream chunk by chunk and turns its lines into events.
#[derive(Debug)]
pub struct LineReader {
    sse: bool,
    buffer: Vec<u8>,
    /// SSE `data:` lines of the event being read.
    data: Vec<String>,
    progress_token: Option<Value>,
    last_progress: Option<f64>,
    log_level: Option<String>,
    done: bool,
    /// Also emit seed 003's `progress.update` beside each `notifications/progress`.
    progress_update: bool,
    /// Events a line produced beyond its first.
    extra: Vec<Event>,
    /// Redacted from a line quoted in an error, before it is cut.
    secrets: Arc<Redactor>,
}

impl LineReader {
    pub fn new(sse: bool, progress_token: Option<Value>, log_level: Option<String>, secrets: Arc<Redactor>) -> LineReader {
        LineReader {
            sse,
            buffer: Vec::new(),
            data: Vec::new(),
            progress_token,
            last_progress: None,
            log_level,
            done: false,
            progress_update: false,
            extra: Vec::new(),
            secrets,
        }
    }

    /// For NDJSON clients and the `/stream` alias: progress also as `progress.update` lines.
    pub fn with_progress_update(mut self) -> LineReader {
        self.progress_update = true;
        self
    }

    /// Whether a terminal event (result or input) has been produced.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds bytes as they arrive; returns the events of every complete line.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(pos) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            events.extend(self.line(text));
            events.append(&mut self.extra);
        }
        events
    }

    /// The stream ended: flushes what is left, and makes sure the call has an outcome.
    pub fn finish(&mut self) -> Vec<Event> {
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).to_string();
        let mut events: Vec<Event> = self.line(rest.trim_end_matches('\r')).into_iter().collect();
        if self.sse {
            events.extend(self.line(""));
        }
        if !self.done {
            self.done = true;
            events.push(Event::Result(error_result("The upstream stream ended without a result.".into())));
        }
        events
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if self.done {
            return None;
        }
        if self.sse {
            // An empty line ends an SSE event; other fields (id, event, retry, comments) do not matter here.
            if line.is_empty() {
                let data = std::mem::take(&mut self.data).join("\n");
                return if data.is_empty() { None } else { self.message(&data) };
            }
            if let Some(value) = line.strip_prefix("data:") {
                self.data.push(value.strip_prefix(' ').unwrap_or(value).to_string());
            }
            return None;
        }
        if line.trim().is_empty() {
            return None;
        }
        self.message(line)
    }

    fn message(&mut self, text: &str) -> Option<Event> {
        let Ok(value) = serde_json::from_slice::<Value>(text.as_bytes()) else {
            self.done = true;
            // The stream is read no further: the line is redacted as an unread text (a secret
            // with a line break in it ends this line with its beginning), then cut.
            let quoted: String = self.secrets.redact_unread(text).chars().take(200).collect();
            return Some(Event::Result(error_result(format!("The upstream sent a line that is not JSON: {quoted}"))));
        };
        if let Some(event) = classify(&value) {
            self.done = true;
            return Some(event);
        }
        self.notification(&value)
    }

    /// Progress and log lines, filtered by the request's token and the session's log level.
    fn notification(&mut self, value: &Value) -> Option<Event> {
        if let Some(progress) = value.get("progress").and_then(Value::as_f64) {
            let token = self.progress_token.as_ref()?;
            // Progress must increase; a line that does not is dropped.
            if self.last_progress.is_some_and(|last| progress <= last) {
                return None;
            }
            self.last_progress = Some(progress);
            let mut params = serde_json::Map::new();
            params.insert("progressToken".into(), token.clone());
            for key in ["progress", "total", "message"] {
                if let Some(v) = value.get(key) {
                    params.insert(key.into(), v.clone());
                }
            }
            let params = Value::Object(params);
            if self.progress_update {
                self.extra.push(Event::Notify(jsonrpc::notification(Method::ProgressUpdate, &params)));
            }
            return Some(Event::Notify(jsonrpc::notification(Method::Progress, params)));
        }
        let log = value.get("log")?;
        let level = log.get("level").and_then(Value::as_str).unwrap_or("info");
        if !logging::passes(self.log_level.as_deref(), level) {
            return None;
        }
        let data = log.get("data").cloned().unwrap_or(Value::Null);
        let params = logging::message(level, log.get("logger").and_then(Value::as_str), &data);
        Some(Event::Notify(jsonrpc::notification(Method::LogMessage, params)))
    }
}

/// The terminal meaning of one message, if it has one: a result or an input request.
pub fn classify(value: &Value) -> Option<Event> {
    if let Some(result) = value.get("result") {
        return Some(Event::Result(passthrough(result.clone())));
    }
    if let Some(error) = value.get("error") {
        return Some(match (error.get("code").and_then(Value::as_i64), error.get("message").and_then(Value::as_str)) {
            (Some(code), Some(message)) => Event::Error(crate::error::ErrorObject { code, message: message.to_string(), data: error.get("data").cloned() }),
            _ => Event::Result(error_result("The upstream answered an error without an integer code and a message.".into())),
        });
    }
    let state = value.get("state").cloned().unwrap_or(Value::Null);
    let (requests, keyed) = match (value.get("input"), value.get("inputs")) {
        (Some(input), _) => {
            let key = input.get("key").and_then(Value::as_str).unwrap_or("input");
            (input_request(key, input).map(|r| vec![r]), false)
        }
        (None, Some(Value::Object(inputs))) if !inputs.is_empty() => (inputs.iter().map(|(key, input)| input_request(key, input)).collect(), true),
        _ => return None,
    };
    Some(match requests {
        Some(requests) => Event::Input(InputAsk { requests, keyed, state }),
        None => Event::Result(error_result(format!(
            "The upstream asked for input with an unsupported request; use {}, {} or {} with params.",
            Method::SamplingCreateMessage,
            Method::ElicitationCreate,
            Method::RootsList
        ))),
    })
}

/// One request for the client's input, as an HTTP upstream's `input`/`inputs` or an upstream MCP
/// server's `inputRequests` entry names it: a method the client may be asked, with params.
pub fn input_request(key: &str, input: &Value) -> Option<InputRequest> {
    let method = input.get("method").and_then(Value::as_str).and_then(Method::parse).filter(|m| m.client_capability().is_some())?;
    let params = input.get("params").filter(|p| p.is_object())?;
    Some(InputRequest { key: key.to_string(), method, params: params.clone() })
}

/// The capability a client must have declared for an input request.
pub fn required_capability(method: Method) -> &'static str {
    method.client_capability().unwrap_or("elicitation")
}

/// The JSON body of the follow-up call that carries the client's answers back to the upstream:
/// `result` (or `error`) for a single `input`, `responses` by key for `inputs`.
pub fn follow_up_body(arguments: &Value, ask: &InputAsk, answers: &[(String, Result<Value, Value>)]) -> String {
    let input = match (ask.keyed, answers) {
        (false, [(_, Ok(result))]) => json!({"state": ask.state, "result": result}),
        (false, [(_, Err(error))]) => json!({"state": ask.state, "error": error}),
        _ => {
            let responses: serde_json::Map<String, Value> = answers.iter().map(|(k, a)| (k.clone(), a.clone().unwrap_or_else(|e| json!({"error": e})))).collect();
            json!({"state": ask.state, "responses": responses})
        }
    };
    json!({"arguments": arguments, "input": input}).to_string()
}

/// What a whole (non-streamed) reply means for the call: its result, or, for passthrough tools,
/// possibly a request for client input.
pub fn outcome(upstream: &Upstream, plan: &ReplyPlan, secrets: &Redactor) -> Event {
    if let (ResultMode::Passthrough, Upstream::Reply { status: 200..=299, body, truncated_at: None, .. }) = (plan.mode, upstream) {
        if let Ok(value) = serde_json::from_slice::<Value>(body) {
            if value.get("input").is_some() || value.get("inputs").is_some() || value.get("error").is_some() {
                if let Some(event) = classify(&value) {
                    return event;
                }
            }
        }
    }
    Event::Result(to_result(upstream, plan, secrets))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notifies(events: &[Event]) -> Vec<Value> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Notify(text) => Some(serde_json::from_str(text).unwrap()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_error_message_ends_the_call_with_a_json_rpc_error() {
        let error = crate::error::ErrorObject { code: -32603, message: "the job crashed".into(), data: Some(json!({"job": 7})) };
        assert_eq!(classify(&json!({"error": {"code": -32603, "message": "the job crashed", "data": {"job": 7}}})), Some(Event::Error(error)));
        let mut r = LineReader::new(false, None, None, Arc::default());
        assert!(matches!(&r.feed(b"{\"progress\":1}\n{\"error\":{\"code\":-32000,\"message\":\"down\"}}\n")[..], [Event::Error(e)] if e.code == -32000));
        assert!(r.is_done());
        // Not an error object: a tool error that says so, rather than a malformed JSON-RPC reply.
        assert!(matches!(classify(&json!({"error": "boom"})), Some(Event::Result(v)) if v["isError"] == true));
        // A passthrough tool's whole body; a mapped tool's JSON is its result, whatever it says.
        let reply = Upstream::Reply { status: 200, content_type: Some("application/json".into()), body: br#"{"error":{"code":-32001,"message":"no"}}"#.to_vec(), truncated_at: None };
        let passthrough = ReplyPlan { mode: ResultMode::Passthrough, ..ReplyPlan::map(1000) };
        assert!(matches!(outcome(&reply, &passthrough, &Redactor::default()), Event::Error(e) if e.code == -32001 && e.message == "no"));
        assert!(matches!(outcome(&reply, &ReplyPlan::map(1000), &Redactor::default()), Event::Result(_)));
    }

    #[test]
    fn ndjson_progress_logs_and_result() {
        let mut r = LineReader::new(false, Some(json!("tok")), Some("info".into()), Arc::default());
        let mut events = r.feed(b"{\"progress\":0,\"total\":100}\n{\"progress\":50,\"total\":100,\"message\":\"half\"}\n{\"prog");
        events.extend(r.feed(b"ress\":50}\n{\"log\":{\"level\":\"debug\",\"data\":\"hidden\"}}\n{\"log\":{\"level\":\"info\",\"data\":\"shown\",\"logger\":\"t\"}}\n"));
        assert_eq!(
            notifies(&events),
            [
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":0,"total":100}}),
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":50,"total":100,"message":"half"}}),
                json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"t","data":"shown"}}),
            ]
        );
        assert!(!r.is_done());
        let end = r.feed(b"{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}");
        assert!(end.is_empty(), "no newline yet");
        let end = r.finish();
        assert_eq!(end, [Event::Result(json!({"content":[{"type":"text","text":"done"}]}))]);
        assert!(r.is_done());
    }

    #[test]
    fn progress_update_lines_for_ndjson_clients() {
        let mut r = LineReader::new(false, Some(json!(7)), None, Arc::default()).with_progress_update();
        let events = r.feed(b"{\"progress\":1,\"total\":2}\n");
        assert_eq!(
            notifies(&events),
            [
                json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":2}}),
                json!({"jsonrpc":"2.0","method":"progress.update","params":{"progressToken":7,"progress":1,"total":2}}),
            ]
        );
    }

    #[test]
    fn progress_needs_a_token() {
        let mut r = LineReader::new(false, None, None, Arc::default());
        assert!(r.feed(b"{\"progress\":1}\n").is_empty());
    }

    #[test]
    fn sse_data_events() {
        let mut r = LineReader::new(true, Some(json!(1)), None, Arc::default());
        let events = r.feed(b": comment\nid: 1\ndata: {\"progress\":1}\n\nevent: message\ndata: {\"result\":\n");
        assert_eq!(notifies(&events).len(), 1);
        let events = r.feed(b"data: {\"content\":[]}}\n\n");
        assert_eq!(events, [Event::Result(json!({"content":[]}))]);
    }

    #[test]
    fn a_stream_without_result_or_with_garbage_is_an_error() {
        let mut r = LineReader::new(false, None, None, Arc::default());
        r.feed(b"{\"log\":{\"level\":\"info\",\"data\":1}}\n");
        let end = r.finish();
        assert!(matches!(&end[..], [Event::Result(v)] if v["isError"] == true));
        let mut r = LineReader::new(false, None, None, Arc::default());
        let events = r.feed(b"not json\n{\"result\":{\"content\":[]}}\n");
        assert!(matches!(&events[..], [Event::Result(v)] if v["content"][0]["text"].as_str().unwrap().contains("not JSON")));
        assert!(r.finish().is_empty());
    }

    #[test]
    fn input_requests() {
        let mut r = LineReader::new(false, None, None, Arc::default());
        let events = r.feed(b"{\"input\":{\"method\":\"elicitation/create\",\"params\":{\"message\":\"m\"}},\"state\":{\"step\":1}}\n");
        let single = InputAsk {
            requests: vec![InputRequest { key: "input".into(), method: Method::ElicitationCreate, params: json!({"message":"m"}) }],
            keyed: false,
            state: json!({"step":1}),
        };
        assert_eq!(events, [Event::Input(single.clone())]);
        let bad = classify(&json!({"input":{"method":"tasks/get","params":{}}}));
        assert!(matches!(bad, Some(Event::Result(v)) if v["isError"] == true));
        assert_eq!(required_capability(Method::SamplingCreateMessage), "sampling");
        assert_eq!(required_capability(Method::RootsList), "roots");
        assert_eq!(
            follow_up_body(&json!({"a":1}), &InputAsk { state: json!("s"), ..single }, &[("input".into(), Ok(json!({"action":"accept"})))]),
            r#"{"arguments":{"a":1},"input":{"state":"s","result":{"action":"accept"}}}"#
        );
        let Some(Event::Input(keyed)) = classify(&json!({"inputs":{"who":{"method":"elicitation/create","params":{}},"roots":{"method":"roots/list","params":{}}},"state":2})) else {
            panic!("inputs is an input request")
        };
        assert_eq!(keyed.requests.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["who", "roots"]);
        assert_eq!(
            follow_up_body(&json!({}), &keyed, &[("who".into(), Ok(json!({"action":"decline"}))), ("roots".into(), Ok(json!({"roots":[]})))]),
            r#"{"arguments":{},"input":{"state":2,"responses":{"who":{"action":"decline"},"roots":{"roots":[]}}}}"#
        );
    }
}
