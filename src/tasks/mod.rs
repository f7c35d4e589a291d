//! MCP Tasks (2025-11-25, SEP-1686): a `tools/call` the client asks to run as a task is answered
//! at once with a handle, runs on without the request, and its result is fetched later
//! (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`). Pure: which tools may run as
//! tasks, the record kept per task, its states (terminal ones are final), and the wire shapes.
//! The session's object keeps the records and runs the calls (`edge::object::session::tasks`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::Error;

/// The `_meta` key that ties a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A tool's `execution.taskSupport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Support {
    /// Runs only as a plain call (the spec's default).
    Forbidden,
    /// Either way, as the client asks.
    Optional,
    /// Only as a task.
    Required,
}

impl Support {
    pub fn name(self) -> &'static str {
        match self {
            Support::Forbidden => "forbidden",
            Support::Optional => "optional",
            Support::Required => "required",
        }
    }

    /// Whether a call asked as a task (`asked`) or not may run: both wrong ways are -32601, as
    /// the spec has it.
    pub fn admit(self, tool: &str, asked: bool) -> Result<(), Error> {
        match (self, asked) {
            (Support::Forbidden, true) => Err(Error::MethodNotFound(format!("the tool {tool:?} does not run as a task (its taskSupport is forbidden)"))),
            (Support::Required, false) => Err(Error::MethodNotFound(format!("the tool {tool:?} runs only as a task: call it with params.task"))),
            _ => Ok(()),
        }
    }
}

/// A server's bounds on tasks (`tasks` in its configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// A task kept this long when the client asks for no `ttl`.
    pub default_ttl_ms: u64,
    /// And never longer, whatever it asks.
    pub max_ttl_ms: u64,
    /// Tasks a principal may keep at once, running or ended (an anonymous one: a session).
    pub max_per_principal: usize,
    /// A result larger than this (as JSON) is not kept: the task fails and says so.
    pub max_result_bytes: usize,
    /// How often a client is asked to poll.
    pub poll_interval_ms: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { default_ttl_ms: 3_600_000, max_ttl_ms: 86_400_000, max_per_principal: 100, max_result_bytes: 1024 * 1024, poll_interval_ms: 1_000 }
    }
}

/// The 2026-07-28 Tasks extension (SEP-2663), as capabilities name it.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a session of this revision can run the server's tools as tasks: 2025-11-25 where
/// there are sessions to keep them in (not on a `stateless` server), or the 2026-07-28 line
/// through its Tasks extension; and a tool that may.
pub fn offered(server: &crate::catalog::Server, version: &str) -> bool {
    let revision = match version {
        "2025-11-25" => server.stateless.is_none(),
        v => v == crate::versions::STATELESS_VERSION,
    };
    revision && server.tools.iter().any(|t| t.task_support != Support::Forbidden)
}

/// Whether a 2026-07-28 request's client capabilities declare the Tasks extension.
pub fn declared(client_capabilities: &Value) -> bool {
    client_capabilities.get("extensions").and_then(|e| e.get(EXTENSION)).is_some_and(Value::is_object)
}

/// The error for a client that must declare the extension: -32021, naming it.
pub fn undeclared() -> Error {
    Error::MissingClientCapability(vec![format!("extensions/{EXTENSION}")])
}

/// The `tasks` capability of `initialize`.
pub fn capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// A call the client asked to run as a task, with the `ttl` it asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    pub ttl_ms: Option<u64>,
}

/// `params.task` of a request: `None` when it is a plain call; else the `ttl` asked for.
pub fn asked(params: Option<&Value>) -> Option<Option<u64>> {
    let task = params?.get("task")?;
    task.is_object().then(|| task.get("ttl").and_then(Value::as_u64))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// How the call ended: the `tools/call` result, or the JSON-RPC error object it answered with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Result(Value),
    Error(Value),
}

/// What the session keeps of one task, under its own key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub id: String,
    pub tool: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub ttl_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// 2026-07-28: what the task waits for (`input_required`): the call's `InputRequiredResult`,
    /// the tool and arguments to call again with the answers, and the answers given so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Waiting>,
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

/// The storage key of a task's record.
pub fn key(id: &str) -> String {
    format!("task:{id}")
}

impl Record {
    /// A task started now, kept for the `ttl` asked (bounded by the settings), or the default.
    pub fn new(id: &str, tool: &str, ttl: Option<u64>, now_ms: u64, settings: &Settings) -> Record {
        let ttl_ms = ttl.unwrap_or(settings.default_ttl_ms).clamp(1, settings.max_ttl_ms);
        Record { id: id.to_string(), tool: tool.to_string(), status: Status::Working, message: None, created_ms: now_ms, updated_ms: now_ms, ttl_ms, outcome: None, input: None }
    }

    /// When it may be deleted: its `ttl` after its creation.
    pub fn expires_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.ttl_ms)
    }

    /// The `Task` object of the wire.
    pub fn wire(&self, settings: &Settings) -> Value {
        let mut task = serde_json::Map::new();
        task.insert("taskId".into(), json!(self.id));
        task.insert("status".into(), json!(self.status.name()));
        if let Some(message) = &self.message {
            task.insert("statusMessage".into(), json!(message));
        }
        task.insert("createdAt".into(), json!(crate::console::account::iso(self.created_ms)));
        task.insert("lastUpdatedAt".into(), json!(crate::console::account::iso(self.updated_ms)));
        task.insert("ttl".into(), json!(self.ttl_ms));
        if !self.status.terminal() {
            task.insert("pollInterval".into(), json!(settings.poll_interval_ms));
        }
        Value::Object(task)
    }

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
        task.insert("createdAt".into(), json!(crate::console::account::iso(self.created_ms)));
        task.insert("lastUpdatedAt".into(), json!(crate::console::account::iso(self.updated_ms)));
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

    /// Ends the task with how its call ended, unless it already ended (a cancelled task stays
    /// cancelled when its call finishes after all). A result with `isError` is a failed task;
    /// a result too large to keep is one too. Whether it changed.
    pub fn finish(&mut self, outcome: Outcome, now_ms: u64, settings: &Settings) -> bool {
        if self.status.terminal() {
            return false;
        }
        let size = match &outcome {
            Outcome::Result(v) | Outcome::Error(v) => v.to_string().len(),
        };
        let outcome = if size > settings.max_result_bytes {
            Outcome::Result(crate::upstream::reply::error_result(format!("The task's result ({size} bytes) is larger than the {} bytes a task may keep.", settings.max_result_bytes)))
        } else {
            outcome
        };
        let (status, message) = match &outcome {
            Outcome::Result(r) if r.get("isError") == Some(&Value::Bool(true)) => (Status::Failed, Some("the tool's result is an error".to_string())),
            Outcome::Result(_) => (Status::Completed, None),
            Outcome::Error(e) => (Status::Failed, e.get("message").and_then(Value::as_str).map(str::to_string)),
        };
        self.status = status;
        self.message = message;
        self.outcome = Some(outcome);
        self.updated_ms = now_ms;
        true
    }

    /// `tasks/cancel`: a task still running is cancelled; one that ended is refused (-32602).
    pub fn cancel(&mut self, now_ms: u64) -> Result<(), Error> {
        if self.status.terminal() {
            return Err(Error::InvalidParams(format!("Cannot cancel task: already in terminal status '{}'", self.status.name())));
        }
        self.status = Status::Cancelled;
        self.message = Some("cancelled by the client".into());
        self.updated_ms = now_ms;
        Ok(())
    }

    /// `tasks/result` of an ended task: the call's own answer, tied to the task; a cancelled
    /// task's is an error that says so.
    pub fn result(&self) -> Result<Value, Value> {
        let related = json!({"taskId": self.id});
        match &self.outcome {
            Some(Outcome::Result(result)) => {
                let mut result = result.clone();
                if let Some(object) = result.as_object_mut() {
                    let meta = object.entry("_meta").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert(RELATED_TASK.into(), related);
                    }
                }
                Ok(result)
            }
            Some(Outcome::Error(error)) => Err(error.clone()),
            None => Err(json!({"code": -32603, "message": format!("Task {} was {}", self.id, self.status.name()), "data": {"_meta": {RELATED_TASK: related}}})),
        }
    }
}

/// A task id a request names, or -32602.
pub fn task_id(params: Option<&Value>) -> Result<&str, Error> {
    params.and_then(|p| p.get("taskId")).and_then(Value::as_str).ok_or_else(|| Error::InvalidParams("taskId must be a string".into()))
}

/// The error for a task this session does not have (never had, expired, or another's).
pub fn not_found() -> Error {
    Error::InvalidParams("Failed to retrieve task: Task not found".into())
}

/// A page of `tasks/list`: the tasks, oldest first, after the cursor (the last id of the page
/// before); an unknown cursor is -32602.
pub fn page<'a>(tasks: &'a [Record], cursor: Option<&str>, size: usize) -> Result<(Vec<&'a Record>, Option<String>), Error> {
    let start = match cursor {
        None => 0,
        Some(c) => tasks.iter().position(|t| t.id == c).map(|i| i + 1).ok_or_else(|| Error::InvalidParams(format!("unknown cursor {c:?}")))?,
    };
    let page: Vec<&Record> = tasks.iter().skip(start).take(size).collect();
    let next = (start + page.len() < tasks.len()).then(|| page.last().map(|t| t.id.clone())).flatten();
    Ok((page, next))
}

/// `notifications/tasks/status`: the whole task, as `tasks/get` shows it.
pub fn status_notification(record: &Record, settings: &Settings) -> String {
    crate::jsonrpc::notification(crate::method::Method::TasksStatus, record.wire(settings))
}

/// A notification of the task's call (progress, a log line), tied to the task.
pub fn related(notification: &str, id: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(notification) else { return notification.to_string() };
    if let Some(params) = value.as_object_mut().map(|m| m.entry("params").or_insert_with(|| json!({}))) {
        if let Some(meta) = params.as_object_mut().map(|p| p.entry("_meta").or_insert_with(|| json!({}))) {
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(RELATED_TASK.into(), json!({"taskId": id}));
            }
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_764_064_800_000;

    fn record() -> Record {
        Record::new("t1", "slow", Some(60_000), NOW, &Settings::default())
    }

    #[test]
    fn the_wrong_way_round_is_method_not_found() {
        assert_eq!(Support::Forbidden.admit("a", true).unwrap_err().code(), -32601);
        assert_eq!(Support::Required.admit("a", false).unwrap_err().code(), -32601);
        assert!(Support::Optional.admit("a", true).is_ok() && Support::Optional.admit("a", false).is_ok());
        assert!(Support::Forbidden.admit("a", false).is_ok() && Support::Required.admit("a", true).is_ok());
    }

    #[test]
    fn a_task_is_asked_for_with_params_task_and_its_ttl_is_bounded() {
        assert_eq!(asked(Some(&json!({"name": "x"}))), None);
        assert_eq!(asked(Some(&json!({"task": {}}))), Some(None));
        assert_eq!(asked(Some(&json!({"task": {"ttl": 5000}}))), Some(Some(5000)));
        let settings = Settings { max_ttl_ms: 10_000, ..Settings::default() };
        assert_eq!(Record::new("t", "x", Some(999_999), NOW, &settings).ttl_ms, 10_000);
        assert_eq!(Record::new("t", "x", None, NOW, &Settings::default()).ttl_ms, 3_600_000);
    }

    #[test]
    fn the_wire_task_has_the_fields_the_spec_names() {
        let task = record().wire(&Settings::default());
        assert_eq!(task, json!({"taskId": "t1", "status": "working", "createdAt": "2025-11-25T10:00:00Z", "lastUpdatedAt": "2025-11-25T10:00:00Z", "ttl": 60_000, "pollInterval": 1000}));
    }

    #[test]
    fn terminal_states_are_final() {
        let settings = Settings::default();
        let mut task = record();
        assert!(task.finish(Outcome::Result(json!({"content": []})), NOW + 5, &settings));
        assert_eq!((task.status, task.updated_ms), (Status::Completed, NOW + 5));
        assert!(!task.finish(Outcome::Error(json!({"code": -32603, "message": "late"})), NOW + 9, &settings));
        assert_eq!(task.cancel(NOW + 9).unwrap_err().code(), -32602);
        assert_eq!(task.status, Status::Completed);
        let mut cancelled = record();
        cancelled.cancel(NOW + 1).unwrap();
        assert!(!cancelled.finish(Outcome::Result(json!({"content": []})), NOW + 2, &settings), "a cancelled task stays cancelled");
        assert_eq!(cancelled.result().unwrap_err()["message"], "Task t1 was cancelled");
    }

    #[test]
    fn an_error_result_fails_the_task_but_comes_back_as_the_result_it_is() {
        let mut task = record();
        task.finish(Outcome::Result(json!({"content": [{"type": "text", "text": "no"}], "isError": true})), NOW, &Settings::default());
        assert_eq!(task.status, Status::Failed);
        let result = task.result().unwrap();
        assert_eq!(result["isError"], true);
        assert_eq!(result["_meta"][RELATED_TASK], json!({"taskId": "t1"}));
        let mut refused = record();
        refused.finish(Outcome::Error(json!({"code": -32602, "message": "bad arguments"})), NOW, &Settings::default());
        assert_eq!((refused.status, refused.message.as_deref()), (Status::Failed, Some("bad arguments")));
        assert_eq!(refused.result().unwrap_err()["code"], -32602);
    }

    #[test]
    fn a_result_too_large_to_keep_fails_the_task_and_says_so() {
        let settings = Settings { max_result_bytes: 64, ..Settings::default() };
        let mut task = record();
        task.finish(Outcome::Result(json!({"content": [{"type": "text", "text": "x".repeat(100)}]})), NOW, &settings);
        assert_eq!(task.status, Status::Failed);
        let text = task.result().unwrap()["content"][0]["text"].as_str().unwrap().to_string();
        assert!(text.contains("larger than the 64 bytes"), "{text}");
    }

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
    fn the_extension_is_declared_in_the_request_capabilities() {
        assert!(declared(&json!({"extensions": {EXTENSION: {}}})));
        assert!(!declared(&json!({"extensions": {}})) && !declared(&json!({})));
        let data = undeclared().data().unwrap();
        assert_eq!(data, json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}));
        assert_eq!(undeclared().code(), -32021);
    }

    #[test]
    fn pages_follow_the_cursor_and_an_unknown_cursor_is_invalid_params() {
        let tasks: Vec<Record> = (0..5).map(|i| Record::new(&format!("t{i}"), "x", None, NOW + i, &Settings::default())).collect();
        let (first, next) = page(&tasks, None, 2).unwrap();
        assert_eq!((first.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), next.as_deref()), (vec!["t0", "t1"], Some("t1")));
        let (last, next) = page(&tasks, Some("t3"), 2).unwrap();
        assert_eq!((last.len(), next), (1, None));
        assert_eq!(page(&tasks, Some("nope"), 2).unwrap_err().code(), -32602);
    }

    #[test]
    fn notifications_of_a_task_carry_its_id() {
        let line = related(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#, "t1");
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["params"]["_meta"][RELATED_TASK]["taskId"], "t1");
    }
}
