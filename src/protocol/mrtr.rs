//! Multi round-trip requests (2026-07-28): an upstream's request for client input becomes an
//! `InputRequiredResult`, and the client's retry brings the answers with the `requestState` we
//! signed. The state binds the server, tool, arguments, principal and an expiry, so it cannot
//! be replayed by someone else, on another call, or late. Also the messages of a request
//! relayed to an upstream MCP server in the revision it speaks: 2026-07-28's `_meta` and
//! headers, or a session-based revision's params without them.

use crate::method::Method;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::upstream::stream::{InputAsk, InputRequest};

/// How long a client may take to gather input before retrying.
pub const STATE_TTL_MS: u64 = 10 * 60 * 1000;

/// What a `requestState` vouches for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// The server's route, the tool, the digest of the arguments, the principal.
    pub server: String,
    pub tool: String,
    pub args: String,
    pub principal: String,
    pub expires_ms: u64,
    /// The upstream's own state, handed back to it in the follow-up.
    pub upstream: Value,
    /// `inputs` (keyed answers) or one `input`.
    pub keyed: bool,
    /// The requests asked, by key: asked again if the retry lacks an answer.
    pub requests: Map<String, Value>,
}

/// Who asks and about what: everything a state is bound to except the upstream's part.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub key: Vec<u8>,
    pub server: String,
    pub tool: String,
    pub args: String,
    pub principal: String,
    /// A verified retry of a request the edge relays to an upstream MCP server: the state's
    /// upstream part and the client's answers, for the edge to use (`edge::mcp::call`).
    pub answered: Option<Box<Answered>>,
}

/// A retry of a relayed request, verified: what the upstream's part of the state held (the
/// answers of earlier rounds, or the upstream's own `requestState`), and the new answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub upstream: Value,
    pub responses: Map<String, Value>,
}

/// Verifies the retry (`requestState`, `inputResponses`) of a request relayed to an upstream MCP
/// server: `None` without a state; `Err(result)`: the questions asked again, for answers that
/// are missing. A state of another principal, request or key, or an expired one, is refused.
pub fn relayed_retry(binding: &mut Binding, state: Option<&Value>, responses: Option<&Value>, now_ms: u64) -> Result<Option<Value>, Error> {
    let Some(state) = state else { return Ok(None) };
    let state = state.as_str().ok_or_else(|| Error::InvalidParams("requestState must be a string".into()))?;
    let claims = open(state, binding, now_ms)?;
    match retry(claims, state, responses)? {
        Retry::AskAgain(result) => Ok(Some(result)),
        Retry::Answers { ask, answers } => {
            let responses = answers.into_iter().filter_map(|(k, a)| a.ok().map(|a| (k, a))).collect();
            binding.answered = Some(Box::new(Answered { upstream: ask.state, responses }));
            Ok(None)
        }
    }
}

/// The key of a request an upstream that speaks a session-based revision makes during a call:
/// its method and a digest of its params, so that the same request, made again when the call
/// is made again, finds its answer.
pub fn ask_key(method: Method, params: &Value) -> String {
    let digest = args_digest(params);
    format!("{}-{}", method.name().replace('/', "-"), digest.get(..16).unwrap_or(&digest))
}

/// The arguments of a relayed request for its binding: its params without the 2026-07-28
/// retry's and protocol's members.
pub fn relayed_args(params: &Value) -> String {
    let mut params = params.clone();
    if let Some(p) = params.as_object_mut() {
        for member in ["_meta", "inputResponses", "requestState"] {
            p.remove(member);
        }
    }
    args_digest(&params)
}

/// A digest of the arguments that ignores member order: a retry may serialize them anew.
pub fn args_digest(arguments: &Value) -> String {
    crate::hex::encode(&Sha256::digest(crate::canonical::text(arguments).as_bytes()))
}


/// The `InputRequiredResult` for the requests the client can answer, or the error naming the
/// capabilities it lacks when it can answer none.
pub fn input_required(binding: &Binding, ask: &InputAsk, client_capabilities: &Value, now_ms: u64) -> Result<Value, Error> {
    let (answerable, missing): (Vec<&InputRequest>, Vec<&InputRequest>) =
        ask.requests.iter().partition(|r| client_capabilities.get(crate::upstream::stream::required_capability(r.method)).is_some());
    if answerable.is_empty() {
        let mut names: Vec<String> = missing.iter().map(|r| crate::upstream::stream::required_capability(r.method).to_string()).collect();
        names.dedup();
        return Err(Error::MissingClientCapability(names));
    }
    let requests: Map<String, Value> = answerable.iter().map(|r| (r.key.clone(), r.to_value())).collect();
    let claims = Claims {
        server: binding.server.clone(),
        tool: binding.tool.clone(),
        args: binding.args.clone(),
        principal: binding.principal.clone(),
        expires_ms: now_ms.saturating_add(STATE_TTL_MS),
        upstream: ask.state.clone(),
        keyed: ask.keyed,
        requests: requests.clone(),
    };
    Ok(result(requests, seal(&binding.key, &claims)))
}

pub fn result(requests: Map<String, Value>, state: String) -> Value {
    json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
}

/// What a request state's signature is for.
const PURPOSE: &str = "mrtr";

/// `base64(claims JSON).hex(HMAC-SHA256("mrtr." + base64))`.
pub fn seal(key: &[u8], claims: &Claims) -> String {
    let body = crate::base64::encode(serde_json::to_string(claims).unwrap_or_default().as_bytes());
    let mac = crate::signing::sign(key, PURPOSE, &body);
    format!("{body}.{mac}")
}

/// The claims of a state we signed, checked against the retry; -32602 when it was altered,
/// belongs to another call or principal, or has expired.
pub fn open(state: &str, binding: &Binding, now_ms: u64) -> Result<Claims, Error> {
    let refused = |why: &str| Error::InvalidParams(format!("requestState {why}"));
    let (body, mac) = state.rsplit_once('.').ok_or_else(|| refused("is malformed"))?;
    if !crate::signing::signed(&binding.key, PURPOSE, body, mac) {
        return Err(refused("failed its integrity check"));
    }
    let claims: Claims = crate::base64::decode(body).and_then(|b| serde_json::from_slice(&b).ok()).ok_or_else(|| refused("is malformed"))?;
    if (claims.server.as_str(), claims.tool.as_str(), claims.args.as_str()) != (binding.server.as_str(), binding.tool.as_str(), binding.args.as_str()) {
        return Err(refused("belongs to another request"));
    }
    if claims.principal != binding.principal {
        return Err(refused("belongs to another principal"));
    }
    if claims.expires_ms < now_ms {
        return Err(refused("has expired; call the tool again without it"));
    }
    Ok(claims)
}

/// What a verified retry leads to: the answers for the upstream, or the questions again for
/// the keys the client left unanswered.
#[derive(Debug, Clone, PartialEq)]
pub enum Retry {
    Answers { ask: InputAsk, answers: Vec<(String, Result<Value, Value>)> },
    AskAgain(Value),
}

/// Matches the retry's `inputResponses` to the requests the state names. Extra keys are
/// ignored; answers that are not objects are refused.
pub fn retry(claims: Claims, state: &str, responses: Option<&Value>) -> Result<Retry, Error> {
    let responses = match responses {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(r)) => r.clone(),
        Some(_) => return Err(Error::InvalidParams("inputResponses must be an object keyed like inputRequests".into())),
    };
    let unanswered: Map<String, Value> = claims.requests.iter().filter(|(k, _)| !responses.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    if !unanswered.is_empty() {
        return Ok(Retry::AskAgain(result(unanswered, state.to_string())));
    }
    let mut answers = Vec::new();
    for key in claims.requests.keys() {
        match responses.get(key) {
            Some(answer @ Value::Object(_)) => answers.push((key.clone(), Ok(answer.clone()))),
            _ => return Err(Error::InvalidParams(format!("inputResponses[{key:?}] must be the client's result object"))),
        }
    }
    let requests = claims
        .requests
        .iter()
        // The state is ours, signed: it names only methods an upstream may ask the client for.
        .filter_map(|(key, r)| Some(InputRequest { key: key.clone(), method: r.get("method").and_then(Value::as_str).and_then(Method::parse)?, params: r.get("params").cloned().unwrap_or(Value::Null) }))
        .collect();
    Ok(Retry::Answers { ask: InputAsk { requests, keyed: claims.keyed, state: claims.upstream }, answers })
}

// Requests relayed to an upstream MCP server, in the revision it speaks.

/// A message for an upstream that speaks 2026-07-28 (no session): its params carry the
/// protocol's `_meta` (the revision, the client behind and what it can be asked), and a retry's
/// `inputResponses` and `requestState` when there are.
pub fn stateless(message: &str, capabilities: &Value, retry: Option<(&Value, &Value)>) -> String {
    let Ok(mut value) = serde_json::from_slice::<Value>(message.as_bytes()) else { return message.to_string() };
    if let Some(obj) = value.as_object_mut() {
        let params = obj.entry("params").or_insert_with(|| json!({}));
        if let Some(params) = params.as_object_mut() {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(super::meta::PROTOCOL_VERSION.into(), json!(crate::versions::STATELESS_VERSION));
                meta.insert(super::meta::CLIENT_CAPABILITIES.into(), capabilities.clone());
                meta.insert(super::meta::CLIENT_INFO.into(), json!({"name": "mcp-edge", "version": env!("CARGO_PKG_VERSION")}));
            }
            if let Some((responses, state)) = retry {
                params.insert("inputResponses".into(), responses.clone());
                if !state.is_null() {
                    params.insert("requestState".into(), state.clone());
                }
            }
        }
    }
    value.to_string()
}

/// The headers a 2026-07-28 request mirrors from its body: `Mcp-Method`, and `Mcp-Name` for
/// the methods that name something.
pub fn stateless_headers(message: &str) -> Vec<(String, String)> {
    let Ok(value) = serde_json::from_slice::<Value>(message.as_bytes()) else { return Vec::new() };
    let Some(method) = value.get("method").and_then(Value::as_str) else { return Vec::new() };
    let mut headers = vec![("Mcp-Method".to_string(), method.to_string())];
    let name = Method::parse(method).and_then(Method::name_field).and_then(|f| value.get("params")?.get(f)?.as_str());
    if let Some(name) = name.filter(|n| n.bytes().all(|b| (0x20..0x7f).contains(&b))) {
        headers.push(("Mcp-Name".to_string(), name.to_string()));
    }
    headers
}

/// A session-based revision's params, without what only 2026-07-28 carries: the protocol's
/// `_meta` members, and a retry's `inputResponses` and `requestState` (which mcp-edge answers).
pub fn session_params(params: &Value) -> Value {
    let mut params = params.clone();
    if let Some(p) = params.as_object_mut() {
        p.remove("inputResponses");
        p.remove("requestState");
        if let Some(meta) = p.get_mut("_meta").and_then(Value::as_object_mut) {
            use super::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION};
            meta.retain(|k, _| ![PROTOCOL_VERSION, CLIENT_INFO, CLIENT_CAPABILITIES, LOG_LEVEL].contains(&k.as_str()));
        }
        if p.get("_meta").and_then(Value::as_object).is_some_and(serde_json::Map::is_empty) {
            p.remove("_meta");
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> Binding {
        Binding { key: b"k".to_vec(), server: "/mcp".into(), tool: "t".into(), args: args_digest(&json!({"a": 1, "b": [1, {"y": 2, "x": 1}]})), principal: "p".into(), answered: None }
    }

    fn ask() -> InputAsk {
        InputAsk {
            requests: vec![
                InputRequest { key: "name".into(), method: Method::ElicitationCreate, params: json!({"message": "?"}) },
                InputRequest { key: "llm".into(), method: Method::SamplingCreateMessage, params: json!({"messages": []}) },
            ],
            keyed: true,
            state: json!({"step": 1}),
        }
    }

    #[test]
    fn argument_digests_ignore_member_order() {
        assert_eq!(args_digest(&json!({"b": [1, {"x": 1, "y": 2}], "a": 1})), binding().args);
        assert_ne!(args_digest(&json!({"a": 2})), binding().args);
    }

    #[test]
    fn asks_only_what_the_client_can_answer() {
        let r = input_required(&binding(), &ask(), &json!({"sampling": {}}), 0).unwrap();
        assert_eq!(r["resultType"], "input_required");
        assert_eq!(r["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["llm"]);
        let none = input_required(&binding(), &ask(), &json!({}), 0).unwrap_err();
        assert_eq!((none.code(), none.data().unwrap()), (-32021, json!({"requiredCapabilities": {"elicitation": {}, "sampling": {}}})));
    }

    #[test]
    fn states_round_trip_and_refuse_tampering_reuse_and_age() {
        let r = input_required(&binding(), &ask(), &json!({"sampling": {}, "elicitation": {}}), 1_000).unwrap();
        let state = r["requestState"].as_str().unwrap();
        let claims = open(state, &binding(), 2_000).unwrap();
        assert_eq!(claims.upstream, json!({"step": 1}));
        let mut tampered = state.to_string();
        tampered.insert(3, 'x');
        assert!(open(&tampered, &binding(), 2_000).is_err());
        assert!(open(state, &Binding { principal: "q".into(), ..binding() }, 2_000).is_err());
        assert!(open(state, &Binding { args: "other".into(), ..binding() }, 2_000).is_err());
        assert!(open(state, &Binding { key: b"other".to_vec(), ..binding() }, 2_000).is_err());
        assert_eq!(open(state, &binding(), 1_000 + STATE_TTL_MS + 1).unwrap_err().code(), -32602);
    }

    #[test]
    fn retries_answer_or_ask_again() {
        let r = input_required(&binding(), &ask(), &json!({"sampling": {}, "elicitation": {}}), 0).unwrap();
        let state = r["requestState"].as_str().unwrap();
        let claims = || open(state, &binding(), 0).unwrap();
        let Retry::AskAgain(again) = retry(claims(), state, Some(&json!({"name": {"action": "accept"}, "extra": {}}))).unwrap() else { panic!("llm is unanswered") };
        assert_eq!(again["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["llm"]);
        assert_eq!(again["requestState"], state);
        let full = json!({"name": {"action": "accept"}, "llm": {"role": "assistant"}, "ignored": 1});
        let Retry::Answers { ask, answers } = retry(claims(), state, Some(&full)).unwrap() else { panic!("all answered") };
        assert_eq!((ask.state, answers.len(), ask.requests[0].method), (json!({"step": 1}), 2, Method::ElicitationCreate));
        assert_eq!(retry(claims(), state, Some(&json!("nope"))).unwrap_err().code(), -32602);
        assert_eq!(retry(claims(), state, Some(&json!({"name": 1, "llm": {}}))).unwrap_err().code(), -32602);
    }

    #[test]
    fn relayed_retries_are_verified_and_carry_the_answers() {
        let asked = InputAsk { requests: vec![InputRequest { key: "k".into(), method: Method::ElicitationCreate, params: json!({}) }], keyed: true, state: json!({"answers": {"old": {"action": "accept"}}}) };
        let r = input_required(&binding(), &asked, &json!({"elicitation": {}}), 0).unwrap();
        let state = r["requestState"].clone();
        let mut b = binding();
        assert_eq!(relayed_retry(&mut b, None, None, 0).unwrap(), None);
        assert!(b.answered.is_none());
        let again = relayed_retry(&mut b, Some(&state), Some(&json!({})), 0).unwrap().unwrap();
        assert_eq!(again["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["k"]);
        assert_eq!(relayed_retry(&mut b, Some(&state), Some(&json!({"k": {"action": "decline"}})), 0).unwrap(), None);
        let answered = b.answered.unwrap();
        assert_eq!((answered.upstream["answers"]["old"]["action"].as_str(), answered.responses["k"]["action"].as_str()), (Some("accept"), Some("decline")));
        // Another principal's, another request's, an altered or a late state: refused.
        for mut other in [Binding { principal: "q".into(), ..binding() }, Binding { tool: "prompts/get other".into(), ..binding() }] {
            assert_eq!(relayed_retry(&mut other, Some(&state), Some(&json!({"k": {}})), 0).unwrap_err().code(), -32602);
        }
        assert_eq!(relayed_retry(&mut binding(), Some(&json!(format!("{}x", state.as_str().unwrap()))), None, 0).unwrap_err().code(), -32602);
        assert_eq!(relayed_retry(&mut binding(), Some(&state), None, STATE_TTL_MS + 1).unwrap_err().code(), -32602);
        assert_eq!(relayed_retry(&mut binding(), Some(&json!(7)), None, 0).unwrap_err().code(), -32602);
    }

    #[test]
    fn asks_are_keyed_by_what_they_ask() {
        let key = ask_key(Method::ElicitationCreate, &json!({"message": "?", "requestedSchema": {"type": "object"}}));
        assert!(key.starts_with("elicitation-create-") && key.len() == "elicitation-create-".len() + 16, "{key}");
        assert_eq!(key, ask_key(Method::ElicitationCreate, &json!({"requestedSchema": {"type": "object"}, "message": "?"})));
        assert_ne!(key, ask_key(Method::ElicitationCreate, &json!({"message": "!"})));
        assert_eq!(relayed_args(&json!({"name": "p", "_meta": {"a": 1}, "requestState": "s", "inputResponses": {}})), args_digest(&json!({"name": "p"})));
    }

    #[test]
    fn stateless_messages_carry_the_protocol_and_a_retry() {
        let call = crate::upstream::mcp::call_tool(4, "greet", &json!({"n": 1}), None);
        let sent: Value = serde_json::from_str(&stateless(&call, &json!({"elicitation": {}}), Some((&json!({"k": {"action": "accept"}}), &json!("theirs"))))).unwrap();
        assert_eq!(sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        assert_eq!(sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"], json!({"elicitation": {}}));
        assert_eq!((&sent["params"]["inputResponses"]["k"]["action"], &sent["params"]["requestState"]), (&json!("accept"), &json!("theirs")));
        assert_eq!(stateless_headers(&call), [("Mcp-Method".to_string(), "tools/call".to_string()), ("Mcp-Name".to_string(), "greet".to_string())]);
        let discover: Value = serde_json::from_str(&stateless(&crate::upstream::mcp::request(1, Method::ServerDiscover, None), &json!({}), None)).unwrap();
        assert!(discover["params"].get("requestState").is_none());
        assert_eq!(stateless_headers(&crate::upstream::mcp::request(1, Method::ServerDiscover, None)).len(), 1);
        // A name a header cannot carry as it is goes without `Mcp-Name`.
        assert_eq!(stateless_headers(&crate::upstream::mcp::request(1, Method::PromptsGet, Some(json!({"name": "caf\u{e9}\n"})))).len(), 1);
    }

    #[test]
    fn session_params_lose_what_only_2026_carries() {
        let params = json!({"name": "p", "inputResponses": {}, "requestState": "s", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 1}});
        assert_eq!(session_params(&params), json!({"name": "p", "_meta": {"progressToken": 1}}));
        assert_eq!(session_params(&json!({"name": "p", "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})), json!({"name": "p"}));
    }

    #[test]
    fn a_request_state_is_no_callback_token() {
        // A 2026-07-28 request state is `body.mac` over `mrtr.body` with the same key: read as a
        // callback token, "mrtr" would be its session and its body the call.
        let key = b"signing key";
        let claims = Claims { server: "/mcp".into(), tool: "t".into(), args: "a".into(), principal: "p".into(), expires_ms: 10, upstream: json!(null), keyed: false, requests: serde_json::Map::new() };
        let state = seal(key, &claims);
        assert_eq!(crate::pending::verify(key, &format!("mrtr.{state}")), None);
    }
}
