//! MCP Tasks (2025-11-25, SEP-1686): a `tools/call` the client asks to run as a task is answered
//! at once with a handle, runs on without the request, and its result is fetched later
//! (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`). Pure: which tools may run as
//! tasks, the record kept per task, its states (terminal ones are final), and the wire shapes.
//! The session's object keeps the records and runs the calls (`edge::object::session::tasks`);
//! `extension` has the 2026-07-28 Tasks extension's shapes.
//!
//! The one import circle of this folder: `extension` shapes the records, states and outcomes
//! defined here the 2026-07-28 way, and this file names its `declared`, `undeclared`, `Waiting` and
//! `EXTENSION` for callers, to whom Tasks are one module.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::catalog::TaskSettings as Settings;
use crate::error::Error;
use crate::tools::TaskSupport as Support;

mod extension;
pub use extension::{declared, undeclared, upstream_id, upstream_task, Waiting, EXTENSION};

/// The `_meta` key that ties a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Whether a session of this revision can run the server's tools as tasks: 2025-11-25 where
/// there are sessions to keep them in (not on a `stateless` server), or the 2026-07-28 line
/// through its Tasks extension; and a tool that may.
pub fn offered(server: &crate::catalog::Server, version: &str) -> bool {
    let revision = match version {
        "2025-11-25" => server.stateless.is_none(),
        v => v == crate::versions::STATELESS_VERSION,
    };
    // Code mode's `execute` may run as a task, whatever its tools allow.
    revision && (matches!(server.discovery, crate::catalog::ToolDiscovery::Code(_)) || server.tools.iter().any(|t| t.task_support != Support::Forbidden))
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

/// A request's `params.task`: `None` when it is a plain call; else the `ttl` asked for.
pub fn asked(task: Option<&Value>) -> Option<Option<u64>> {
    let task = task?;
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

impl Outcome {
    /// Its size as kept (JSON).
    pub fn bytes(&self) -> usize {
        match self {
            Outcome::Result(v) | Outcome::Error(v) => v.to_string().len(),
        }
    }

    /// The outcome kept when the principal's tasks have no room for this one: a failed task
    /// that says why.
    pub fn no_room(&self, settings: &Settings) -> Outcome {
        Outcome::Result(crate::upstream::reply::error_result(format!(
            "The task's result ({} bytes) would pass the {} bytes this principal's tasks may keep in all.",
            self.bytes(),
            settings.max_total_result_bytes
        )))
    }
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
        task.insert("createdAt".into(), json!(crate::time::iso(self.created_ms)));
        task.insert("lastUpdatedAt".into(), json!(crate::time::iso(self.updated_ms)));
        task.insert("ttl".into(), json!(self.ttl_ms));
        if !self.status.terminal() {
            task.insert("pollInterval".into(), json!(settings.poll_interval_ms));
        }
        Value::Object(task)
    }

    /// Ends the task with how its call ended, unless it already ended (a cancelled task stays
    /// cancelled when its call finishes after all). A result with `isError` is a failed task;
    /// a result too large to keep is one too. Whether it changed.
    pub fn finish(&mut self, outcome: Outcome, now_ms: u64, settings: &Settings) -> bool {
        if self.status.terminal() {
            return false;
        }
        let size = outcome.bytes();
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

    /// 2025-11-25: a task whose call asks the client something is `input_required` until the
    /// client answers, then `working` again. Whether it changed (an ended task does not).
    pub fn asking(&mut self, asking: bool, now_ms: u64) -> bool {
        let (from, to) = if asking { (Status::Working, Status::InputRequired) } else { (Status::InputRequired, Status::Working) };
        if self.status != from || self.input.is_some() {
            return false;
        }
        self.status = to;
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
    let Ok(mut value) = serde_json::from_slice::<Value>(notification.as_bytes()) else { return notification.to_string() };
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
pub(super) mod tests {
    use super::*;

    /// 2025-11-25T10:00:00Z.
    pub(in crate::tasks) const NOW: u64 = 1_764_064_800_000;

    /// A task of the tool `slow`, started at `NOW`, kept a minute.
    pub(in crate::tasks) fn record() -> Record {
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
        assert_eq!(asked(None), None);
        assert_eq!(asked(Some(&json!({}))), Some(None));
        assert_eq!(asked(Some(&json!({"ttl": 5000}))), Some(Some(5000)));
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
    fn a_task_asking_the_client_is_input_required_until_answered() {
        let mut task = record();
        assert!(task.asking(true, NOW + 1));
        assert_eq!((task.status, task.updated_ms), (Status::InputRequired, NOW + 1));
        assert!(!task.asking(true, NOW + 2));
        assert!(task.asking(false, NOW + 3));
        assert_eq!(task.status, Status::Working);
        task.cancel(NOW + 4).unwrap();
        assert!(!task.asking(true, NOW + 5) && !task.asking(false, NOW + 5), "an ended task stays as it ended");
    }

    #[test]
    fn a_result_without_room_becomes_an_error_that_says_why() {
        let settings = Settings { max_total_result_bytes: 2048, ..Settings::default() };
        let outcome = Outcome::Result(json!({"content": [{"type": "text", "text": "x"}]}));
        assert_eq!(outcome.bytes(), outcome_text_len(&outcome));
        let Outcome::Result(refused) = outcome.no_room(&settings) else { panic!("a result") };
        assert_eq!(refused["isError"], true);
        assert!(refused["content"][0]["text"].as_str().unwrap().contains("would pass the 2048 bytes"));
    }

    fn outcome_text_len(outcome: &Outcome) -> usize {
        match outcome {
            Outcome::Result(v) | Outcome::Error(v) => serde_json::to_string(v).unwrap().len(),
        }
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
