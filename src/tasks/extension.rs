//! The 2026-07-28 Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) where its wire
//! differs from 2025-11-25's: whether a request declares it, the flat task with `ttlMs`, the
//! inlined result or error of `tasks/get`, and a task that waits for input (`input_required`,
//! answered with `tasks/update`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Outcome, Record, Settings, Status};
use crate::error::Error;

/// The 2026-07-28 Tasks extension (SEP-2663), as capabilities name it.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a 2026-07-28 request's client capabilities declare the Tasks extension.
pub fn declared(client_capabilities: &Value) -> bool {
    client_capabilities.get("extensions").and_then(|e| e.get(EXTENSION)).is_some_and(Value::is_object)
}

/// The error for a client that must declare the extension: -32021, naming it.
pub fn undeclared() -> Error {
    Error::MissingClientCapability(vec![format!("extensions/{EXTENSION}")])
}

/// What signs the id of an upstream's task (`upstream_id`).
const UPSTREAM_TASK: &str = "upstream-task";

/// A task of an upstream MCP server as mcp-edge's clients see it: `<upstream>.<its id>.<signature>`,
/// the signature (HMAC, `signing`) binding the server, the principal, the upstream and its id.
/// The upstream sees one caller, mcp-edge: the signature is what keeps one principal's task from
/// another, and a client from naming an upstream (or an id) it was not given.
pub fn upstream_id(key: &[u8], server: &str, principal: &str, upstream: &str, id: &str) -> String {
    let mac = crate::signing::sign(key, UPSTREAM_TASK, &format!("{server}\n{principal}\n{upstream}\n{id}"));
    format!("{upstream}.{id}.{mac}")
}

/// The upstream (its index among `upstreams`) and its own id of a task id `upstream_id` made for
/// this server and principal; `None` for any other id (one of mcp-edge's own tasks, or a forgery).
pub fn upstream_task<'a, 'n>(key: &[u8], server: &str, principal: &str, upstreams: impl Iterator<Item = &'n str>, id: &'a str) -> Option<(usize, &'a str)> {
    let (named, mac) = id.rsplit_once('.')?;
    upstreams.enumerate().find_map(|(index, name)| {
        let theirs = named.strip_prefix(name)?.strip_prefix('.')?;
        crate::signing::signed(key, UPSTREAM_TASK, &format!("{server}\n{principal}\n{name}\n{theirs}"), mac).then_some((index, theirs))
    })
}

/// A task waiting for the client's input (the Tasks extension's `input_required`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    pub requests: serde_json::Map<String, Value>,
    pub request_state: Value,
    pub tool: String,
    pub arguments: Value,
    #[serde(default)]
    pub answers: serde_json::Map<String, Value>,
}

impl Record {
    /// The 2026-07-28 `Task`: `ttlMs` and `pollIntervalMs`, and a status by the extension's
    /// rule: a tool result is `completed`, `isError` or not; `failed` is for a JSON-RPC error.
    fn wire_2026(&self, settings: &Settings) -> serde_json::Map<String, Value> {
        let status = match (&self.outcome, self.status) {
            (Some(Outcome::Result(_)), Status::Failed) => Status::Completed,
            (_, status) => status,
        };
        let mut task = serde_json::Map::new();
        task.insert("taskId".into(), json!(self.id));
        task.insert("status".into(), json!(status.name()));
        if let (Some(message), false) = (&self.message, status == Status::Completed) {
            task.insert("statusMessage".into(), json!(message));
        }
        task.insert("createdAt".into(), json!(crate::time::iso(self.created_ms)));
        task.insert("lastUpdatedAt".into(), json!(crate::time::iso(self.updated_ms)));
        task.insert("ttlMs".into(), json!(self.ttl_ms));
        if !status.terminal() {
            task.insert("pollIntervalMs".into(), json!(settings.poll_interval_ms));
        }
        task
    }

    /// Parks a running task on its call's `InputRequiredResult` (2026-07-28): `input_required`
    /// until `tasks/update` brings every answer. Whether it did (a result of another kind, or a
    /// task that ended meanwhile, is not parked).
    pub fn park(&mut self, result: &Value, arguments: &Value, now_ms: u64) -> bool {
        let (Some(requests), Some(state)) = (result.get("inputRequests").and_then(Value::as_object), result.get("requestState")) else { return false };
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") || self.status.terminal() {
            return false;
        }
        self.status = Status::InputRequired;
        self.updated_ms = now_ms;
        self.input = Some(Waiting { requests: requests.clone(), request_state: state.clone(), tool: self.tool.clone(), arguments: arguments.clone(), answers: serde_json::Map::new() });
        true
    }

    /// The requests still unanswered.
    pub fn outstanding(&self) -> serde_json::Map<String, Value> {
        self.input.as_ref().map(|w| w.requests.iter().filter(|(k, _)| !w.answers.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default()
    }

    /// `tasks/update`: keeps the answers to requests still outstanding (others are ignored, as
    /// the extension has it). When none is left, the `tools/call` params that go on with them,
    /// and the task is working again.
    pub fn answer(&mut self, responses: &serde_json::Map<String, Value>, now_ms: u64) -> Option<Value> {
        let outstanding = self.outstanding();
        let waiting = self.input.as_mut().filter(|_| self.status == Status::InputRequired)?;
        for (key, answer) in responses.iter().filter(|(k, _)| outstanding.contains_key(*k)) {
            waiting.answers.insert(key.clone(), answer.clone());
        }
        self.updated_ms = now_ms;
        if waiting.answers.len() < waiting.requests.len() {
            return None;
        }
        let params = json!({"name": waiting.tool, "arguments": waiting.arguments, "inputResponses": waiting.answers, "requestState": waiting.request_state});
        self.input = None;
        self.status = Status::Working;
        Some(params)
    }

    /// 2026-07-28: the `CreateTaskResult` a `tools/call` answers with.
    pub fn created_2026(&self, settings: &Settings) -> Value {
        let mut task = self.wire_2026(settings);
        task.insert("resultType".into(), json!("task"));
        Value::Object(task)
    }

    /// 2026-07-28: `tasks/get`, with the result or the error once the task has ended.
    pub fn detailed_2026(&self, settings: &Settings) -> Value {
        let mut task = self.wire_2026(settings);
        if self.status == Status::InputRequired {
            task.insert("inputRequests".into(), Value::Object(self.outstanding()));
        }
        match &self.outcome {
            Some(Outcome::Result(result)) if self.status != Status::Cancelled => {
                task.insert("result".into(), result.clone());
            }
            Some(Outcome::Error(error)) if self.status != Status::Cancelled => {
                task.insert("error".into(), error.clone());
            }
            _ => {}
        }
        task.insert("resultType".into(), json!("complete"));
        Value::Object(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::tests::{record, NOW};

    #[test]
    fn the_2026_shapes_are_flat_renamed_and_count_a_tool_error_as_completed() {
        let settings = Settings::default();
        let mut task = record();
        let created = task.created_2026(&settings);
        assert_eq!(created, json!({"taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:00:00Z", "lastUpdatedAt": "2025-11-25T10:00:00Z", "ttlMs": 60_000, "pollIntervalMs": 1000, "resultType": "task"}));
        task.finish(Outcome::Result(json!({"content": [], "isError": true})), NOW, &settings);
        let got = task.detailed_2026(&settings);
        assert_eq!((got["status"].as_str(), got["resultType"].as_str()), (Some("completed"), Some("complete")));
        assert_eq!(got["result"]["isError"], true);
        assert!(got.get("pollIntervalMs").is_none() && got.get("statusMessage").is_none());
        let mut failed = record();
        failed.finish(Outcome::Error(json!({"code": -32603, "message": "broke"})), NOW, &settings);
        let got = failed.detailed_2026(&settings);
        assert_eq!((got["status"].as_str(), got["error"]["code"].as_i64(), got.get("result")), (Some("failed"), Some(-32603), None));
    }

    #[test]
    fn a_task_waits_for_every_answer_then_goes_on_with_them() {
        let settings = Settings::default();
        let mut task = record();
        let asked = json!({"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {}}, "b": {"method": "roots/list", "params": {}}}, "requestState": "s1"});
        assert!(!task.park(&json!({"content": []}), &json!({}), NOW), "a plain result is no request for input");
        assert!(task.park(&asked, &json!({"x": 1}), NOW + 1));
        let got = task.detailed_2026(&settings);
        assert_eq!((got["status"].as_str(), got["inputRequests"].as_object().map(|m| m.len())), (Some("input_required"), Some(2)));
        assert_eq!(task.answer(json!({"a": {"action": "accept"}, "zzz": {}}).as_object().unwrap(), NOW + 2), None);
        assert_eq!(task.outstanding().keys().collect::<Vec<_>>(), ["b"]);
        let params = task.answer(json!({"b": {"roots": []}}).as_object().unwrap(), NOW + 3).unwrap();
        assert_eq!(params, json!({"name": "slow", "arguments": {"x": 1}, "inputResponses": {"a": {"action": "accept"}, "b": {"roots": []}}, "requestState": "s1"}));
        assert_eq!((task.status, task.input.is_none()), (Status::Working, true));
        assert_eq!(task.answer(json!({"a": {}}).as_object().unwrap(), NOW + 4), None, "nothing to answer while working");
    }

    #[test]
    fn an_upstream_task_id_names_its_upstream_and_is_bound_to_the_principal() {
        let names = || ["a", "conf.x", "b"].into_iter();
        let id = upstream_id(b"k", "/mcp", "alice", "conf.x", "t.1");
        assert_eq!(upstream_task(b"k", "/mcp", "alice", names(), &id), Some((1, "t.1")));
        assert_eq!(upstream_task(b"k", "/mcp", "bob", names(), &id), None, "another principal's");
        assert_eq!(upstream_task(b"k", "/other", "alice", names(), &id), None, "another server's");
        assert_eq!(upstream_task(b"other key", "/mcp", "alice", names(), &id), None);
        let forged = id.replacen("conf.x.", "b.", 1);
        assert_eq!(upstream_task(b"k", "/mcp", "alice", names(), &forged), None, "another upstream's prefix");
        let other = id.replacen("t.1", "t.2", 1);
        assert_eq!(upstream_task(b"k", "/mcp", "alice", names(), &other), None, "another id");
        assert_eq!(upstream_task(b"k", "/mcp", "alice", names(), "3f9a0c"), None, "an id of mcp-edge's own");
    }

    #[test]
    fn the_extension_is_declared_in_the_request_capabilities() {
        assert!(declared(&json!({"extensions": {EXTENSION: {}}})));
        assert!(!declared(&json!({"extensions": {}})) && !declared(&json!({})));
        let data = undeclared().data().unwrap();
        assert_eq!(data, json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}));
        assert_eq!(undeclared().code(), -32021);
    }
}
