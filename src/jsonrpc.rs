//! JSON-RPC 2.0 envelopes: parsing what clients send, and the exact bytes of what we answer.
//!
//! Params stay as raw `Value`s until the method is known; each protocol module decodes its own.

use crate::method::{Method, Named};
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorObject};

/// One message a client sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    /// A reply to a server-to-client request (sampling, elicitation, roots): its result, or its
    /// error object.
    Response { id: Value, result: Result<Value, Value> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// A string or a number, echoed back exactly as received.
    pub id: Value,
    pub method: Named,
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: Named,
    pub params: Option<Value>,
}

/// A parsed message, or the error that answers it. The id is kept when it could be read, so the
/// error can still be correlated.
pub type Parsed = Result<Message, (Value, Error)>;

/// Everything one HTTP request body carried.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub messages: Vec<Parsed>,
    /// A JSON array (a batch) or several NDJSON lines: the replies are collected the same way.
    pub batch: bool,
}

/// Parses a request body. `ndjson` bodies carry one message per line; a line that is not JSON
/// gets its own parse error while the other lines are still served.
pub fn parse_body(bytes: &[u8], ndjson: bool) -> Result<Body, Error> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::Parse("body is not UTF-8".into()))?;
    if ndjson {
        let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        if lines.is_empty() {
            return Err(Error::InvalidRequest("empty body".into()));
        }
        if let [single] = lines.as_slice() {
            return parse_body(single.as_bytes(), false);
        }
        let messages = lines
            .iter()
            .map(|line| match serde_json::from_slice::<Value>(line.as_bytes()) {
                Ok(value) => parse_message(value),
                Err(e) => Err((Value::Null, Error::Parse(e.to_string()))),
            })
            .collect();
        return Ok(Body { messages, batch: true });
    }
    if text.trim().is_empty() {
        return Err(Error::InvalidRequest("empty body".into()));
    }
    let value: Value = serde_json::from_slice(text.as_bytes()).map_err(|e| Error::Parse(e.to_string()))?;
    match value {
        Value::Array(items) if items.is_empty() => {
            Err(Error::InvalidRequest("empty batch".into()))
        }
        Value::Array(items) => {
            Ok(Body { messages: items.into_iter().map(parse_message).collect(), batch: true })
        }
        single => Ok(Body { messages: vec![parse_message(single)], batch: false }),
    }
}

/// Validates one JSON value as a JSON-RPC 2.0 message.
pub fn parse_message(value: Value) -> Parsed {
    let Value::Object(mut obj) = value else {
        return Err((Value::Null, Error::InvalidRequest("a message must be a JSON object".into())));
    };
    let id = obj.remove("id");
    let valid_id = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
        _ => None,
    };
    let fail = |detail: &str| Err((valid_id.clone().unwrap_or(Value::Null), Error::InvalidRequest(detail.into())));
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return fail("\"jsonrpc\" must be \"2.0\"");
    }
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return fail("\"method\" must be a string");
        };
        let params = obj.remove("params");
        if matches!(params, Some(ref p) if !p.is_object() && !p.is_array()) {
            return fail("\"params\" must be an object or an array");
        }
        return match (id, valid_id.clone()) {
            (None, _) => Ok(Message::Notification(Notification { method: Named::parse(&method), params })),
            (Some(_), Some(id)) => Ok(Message::Request(Request { id, method: Named::parse(&method), params })),
            (Some(_), None) => fail("\"id\" must be a string or a number"),
        };
    }
    match (valid_id.clone(), obj.remove("result"), obj.remove("error")) {
        (Some(id), Some(result), None) => Ok(Message::Response { id, result: Ok(result) }),
        (Some(id), None, Some(error)) => Ok(Message::Response { id, result: Err(error) }),
        _ => fail("a message needs \"method\", or an \"id\" with \"result\" or \"error\""),
    }
}

#[derive(Serialize)]
struct Success<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: R,
}

#[derive(Serialize)]
struct Failure<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorObject,
}

#[derive(Serialize)]
struct OutgoingRequest<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: &'a str,
    method: &'a str,
    params: P,
}

/// A server-to-client request.
pub fn request<P: Serialize>(id: &str, method: Method, params: P) -> String {
    to_json(&OutgoingRequest { jsonrpc: "2.0", id, method: method.name(), params })
}

#[derive(Serialize)]
struct Outgoing<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    params: P,
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` with members in that order.
pub fn success<R: Serialize>(id: &Value, result: R) -> String {
    to_json(&Success { jsonrpc: "2.0", id, result })
}

/// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
pub fn failure(id: &Value, error: &Error) -> String {
    to_json(&Failure { jsonrpc: "2.0", id, error: error.to_object() })
}

/// An error reply with an error object made elsewhere (an upstream's own).
pub fn failure_object(id: &Value, error: ErrorObject) -> String {
    to_json(&Failure { jsonrpc: "2.0", id, error })
}

/// The error code of a serialized reply, when it is an error. The result is skipped over, not
/// built: a large list costs no allocation.
pub fn error_code(reply: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Reply {
        error: Option<Code>,
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    serde_json::from_slice::<Reply>(reply.as_bytes()).ok()?.error.map(|e| e.code)
}

/// A server-to-client notification.
pub fn notification<P: Serialize>(method: Method, params: P) -> String {
    to_json(&Outgoing { jsonrpc: "2.0", method: method.name(), params })
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Serializing our own structs of strings, numbers and `Value`s cannot fail; should it ever,
    // the client still gets a well-formed error rather than a panic that resets the isolate.
    serde_json::to_string(value).unwrap_or_else(|e| {
        format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"Internal error: {}"}}}}"#, e.to_string().replace('"', "'"))
    })
}

/// Whether arrays and objects in `body` nest at most `max` deep. Checked before parsing, so a
/// hostile body cannot make the parser recurse deeply.
pub fn depth_within(body: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in body {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(body: &str) -> Parsed {
        let parsed = parse_body(body.as_bytes(), false);
        match parsed {
            Ok(mut b) if !b.batch => b.messages.remove(0),
            other => panic!("expected one message, got {other:?}"),
        }
    }

    #[test]
    fn error_codes_of_serialized_replies() {
        assert_eq!(error_code(&failure(&json!(1), &Error::MethodNotFound("x".into()))), Some(-32601));
        assert_eq!(error_code(&success(&json!(1), json!({"error": {"code": 5}, "tools": [1, 2]}))), None);
        assert_eq!(error_code("not json"), None);
    }

    #[test]
    fn request_notification_and_response() {
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request(Request { id: json!(1), method: Method::Ping.into(), params: None }))
        );
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(Notification { method: Method::Initialized.into(), params: None }))
        );
        assert_eq!(one(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Ok(Message::Response { id: json!("a"), result: Ok(json!({})) }));
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":"b","error":{"code":-1,"message":"no"}}"#),
            Ok(Message::Response { id: json!("b"), result: Err(json!({"code":-1,"message":"no"})) })
        );
    }

    #[test]
    fn not_json_is_a_parse_error() {
        assert_eq!(parse_body(b"{nope", false).map(|_| ()).unwrap_err().code(), -32700);
        assert_eq!(parse_body(&[0xff, 0xfe], false).map(|_| ()).unwrap_err().code(), -32700);
    }

    #[test]
    fn empty_bodies_and_batches_are_invalid_requests() {
        assert_eq!(parse_body(b"  ", false).map(|_| ()).unwrap_err().code(), -32600);
        assert_eq!(parse_body(b"[]", false).map(|_| ()).unwrap_err().code(), -32600);
        assert_eq!(parse_body(b"\n\n", true).map(|_| ()).unwrap_err().code(), -32600);
    }

    #[test]
    fn invalid_requests_keep_a_readable_id() {
        let cases = [
            (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, json!(7)),
            (r#"{"id":7,"method":"ping"}"#, json!(7)),
            (r#"{"jsonrpc":"2.0","id":"x","method":5}"#, json!("x")),
            (r#"{"jsonrpc":"2.0","id":3,"method":"a","params":"s"}"#, json!(3)),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":1}"#, json!(1)),
            (r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#, json!(1)),
            (r#"5"#, Value::Null),
        ];
        for (body, id) in cases {
            match one(body) {
                Err((got, err)) => {
                    assert_eq!(got, id, "{body}");
                    assert_eq!(err.code(), -32600, "{body}");
                }
                ok => panic!("{body} parsed as {ok:?}"),
            }
        }
    }

    #[test]
    fn batches_and_ndjson_lines() {
        let b = parse_body(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]"#, false).unwrap();
        assert!(b.batch);
        assert_eq!(b.messages.len(), 2);
        let b = parse_body(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json\n", true).unwrap();
        assert!(b.batch);
        assert!(matches!(b.messages[0], Ok(Message::Request(_))));
        assert!(matches!(&b.messages[1], Err((Value::Null, e)) if e.code() == -32700));
        // One NDJSON line is not a batch: its reply is one line too.
        let b = parse_body(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", true).unwrap();
        assert!(!b.batch);
    }

    #[test]
    fn exact_reply_bytes() {
        assert_eq!(success(&json!(1), json!({})), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(
            failure(&Value::Null, &Error::SessionNotFound),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#
        );
        assert_eq!(request("s1", Method::ElicitationCreate, json!({})), r#"{"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{}}"#);
        assert_eq!(
            notification(Method::Progress, json!({"progressToken":"t","progress":0})),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0}}"#
        );
    }

    #[test]
    fn nesting_depth_is_bounded_before_parsing() {
        assert!(depth_within(br#"{"a":[{"b":[]}]}"#, 4));
        assert!(!depth_within(br#"{"a":[{"b":[]}]}"#, 3));
        // Brackets inside strings, escaped quotes included, do not count.
        assert!(depth_within(br#"{"a":"[[[[\"[[[["}"#, 1));
        assert!(!depth_within("[".repeat(100_000).as_bytes(), 64));
    }
}
