//! The `tasks/*` requests (MCP Tasks, 2025-11-25, and the 2026-07-28 Tasks extension): what
//! each accepts, and what each decides from a task's record as it is kept now. The session's
//! object (`edge/object/session/tasks.rs`) only carries it out: it reads and writes the records,
//! stops a cancelled call, waits, and sends.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `tasks/get` | [`TaskParams`] | [`one`] |
//! | `tasks/result` | [`TaskParams`] | [`one`] ([`Step::Wait`] while the task runs) |
//! | `tasks/cancel` | [`TaskParams`] | [`one`] |
//! | `tasks/list` | [`TasksListParams`] | [`list`] |
//! | `tasks/update` | [`UpdateParams`] | [`update`] (the 2026-07-28 extension's answers to a task's requests) |
//!
//! A task's start ([`admit`], [`created`]) and its end ([`outcome_of`] a call's reply,
//! [`orphaned`] at the alarm) are decided here too.
//!
//! Whether a session may send them at all is `dispatch` (`crate::tasks::offered`, and the
//! extension declared for 2026-07-28). The records, their states and wire shapes are
//! `crate::tasks`. What the method table gives each method: see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::jsonrpc::{self, Request};
use crate::method::Method;
use crate::catalog::TaskSettings as Settings;
use crate::tasks::{self, Record};

/// `tasks/list` pages hold this many tasks.
pub const PAGE: usize = 50;

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams {
    pub task_id: String,
}

impl super::Params for TaskParams {}

/// `tasks/list`'s params: a cursor that is not a string is none, as it always was here.
#[derive(Debug, Default, Deserialize)]
pub struct TasksListParams {
    #[serde(skip)]
    pub cursor: Option<Value>,
}

impl super::Params for TasksListParams {
    fn keep(&mut self, members: &Map<String, Value>) {
        self.cursor = super::member(members, "cursor");
    }
}

/// `tasks/update`'s params: answers that are not an object are none.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    pub task_id: String,
    #[serde(skip)]
    pub input_responses: Option<Value>,
}

impl super::Params for UpdateParams {
    fn keep(&mut self, members: &Map<String, Value>) {
        self.input_responses = super::member(members, "inputResponses");
    }
}

/// A `tasks/*` request, its params parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCall {
    Get(String),
    Result(String),
    Cancel(String),
    List(Option<String>),
    Update { task_id: String, responses: Map<String, Value> },
}

impl TaskCall {
    /// Parses the params of a `tasks/*` method; `None` for another method.
    pub fn parse(method: Method, params: Option<&Value>) -> Option<Result<TaskCall, Error>> {
        let one = |make: fn(String) -> TaskCall| super::params::<TaskParams>(params).map(|p| make(p.task_id));
        Some(match method {
            Method::TasksGet => one(TaskCall::Get),
            Method::TasksResult => one(TaskCall::Result),
            Method::TasksCancel => one(TaskCall::Cancel),
            Method::TasksList => Ok(TaskCall::List(super::lenient::<TasksListParams>(params).cursor.and_then(|c| c.as_str().map(str::to_string)))),
            Method::TasksUpdate => super::params::<UpdateParams>(params).map(|p| TaskCall::Update {
                task_id: p.task_id,
                responses: match p.input_responses {
                    Some(Value::Object(responses)) => responses,
                    _ => Map::new(),
                },
            }),
            _ => return None,
        })
    }

    pub fn method(&self) -> Method {
        match self {
            TaskCall::Get(_) => Method::TasksGet,
            TaskCall::Result(_) => Method::TasksResult,
            TaskCall::Cancel(_) => Method::TasksCancel,
            TaskCall::List(_) => Method::TasksList,
            TaskCall::Update { .. } => Method::TasksUpdate,
        }
    }

    /// The task the request is about (all but `tasks/list`).
    pub fn task_id(&self) -> Option<&str> {
        match self {
            TaskCall::Get(id) | TaskCall::Result(id) | TaskCall::Cancel(id) | TaskCall::Update { task_id: id, .. } => Some(id),
            TaskCall::List(_) => None,
        }
    }
}

/// Whether a call may start as one more task, with `kept` tasks kept already: -32000 (busy)
/// past `tasks.maxPerPrincipal`.
pub fn admit(kept: usize, settings: &Settings) -> Result<(), Error> {
    if kept >= settings.max_per_principal {
        return Err(Error::Busy(format!("at most {} tasks may be kept at once; cancel one, or wait until one expires", settings.max_per_principal)));
    }
    Ok(())
}

/// What a `tools/call` that runs as a task answers at once: the task's handle
/// (2026-07-28: the extension's `CreateTaskResult`).
pub fn created(record: &Record, settings: &Settings, stateless: bool) -> Value {
    if stateless {
        record.created_2026(settings)
    } else {
        json!({"task": record.wire(settings)})
    }
}

/// At the alarm: a task still working that nothing runs any more (`running`: no call of this
/// instance, nor a deferred one whose result will come) ends failed, saying why. Whether it
/// changed.
pub fn orphaned(record: &mut Record, running: bool, settings: &Settings, now_ms: u64) -> bool {
    if running || record.status != tasks::Status::Working {
        return false;
    }
    let why = json!({"code": -32603, "message": "The task's call was cut short: the server restarted while it ran. Call the tool again."});
    record.finish(tasks::Outcome::Error(why), now_ms, settings)
}

/// How a call's JSON-RPC reply ends its task.
pub fn outcome_of(reply: &str) -> tasks::Outcome {
    use tasks::Outcome;
    match serde_json::from_slice::<Value>(reply.as_bytes()) {
        Ok(mut reply) => match reply.get_mut("result").map(Value::take) {
            Some(result) => Outcome::Result(result),
            None => Outcome::Error(reply.get_mut("error").map(Value::take).unwrap_or_else(|| json!({"code": -32603, "message": "the call ended without a result"}))),
        },
        Err(e) => Outcome::Error(json!({"code": -32603, "message": format!("the call's reply was unreadable: {e}")})),
    }
}

/// What a request about one task does, decided from its record as kept now.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send `reply`. Before it: keep `store` (the record changed); when `stop`, stop the task's
    /// running call; when `notify`, tell the client the task ended; when `stop`, wake the
    /// `tasks/result` requests waiting for it. In that order.
    Answer { reply: String, store: Option<Box<Record>>, stop: bool, notify: bool },
    /// `tasks/result` of a task still running: wait until it ends (or a while), then decide
    /// again with the record as kept then.
    Wait,
}

impl Step {
    fn reply(reply: String) -> Step {
        Step::Answer { reply, store: None, stop: false, notify: false }
    }
}

/// `tasks/get`, `tasks/result` and `tasks/cancel` (`stateless`: the 2026-07-28 extension's)
/// of the task `record` (`None`: this session has no such task, or it expired).
pub fn one(id: &Value, call: &TaskCall, stateless: bool, record: Option<Record>, settings: &Settings, now_ms: u64) -> Step {
    let Some(mut record) = record else { return Step::reply(jsonrpc::failure(id, &tasks::not_found())) };
    let ack = || acknowledged(id);
    match (call, stateless) {
        (TaskCall::Get(_), false) => Step::reply(jsonrpc::success(id, record.wire(settings))),
        // The task, with its result or error once it has one.
        (TaskCall::Get(_), true) => Step::reply(jsonrpc::success(id, record.detailed_2026(settings))),
        // Refused (-32602) once the task has ended; the call stopped otherwise: its fetch is
        // aborted, and a deferred call's late result is refused.
        (TaskCall::Cancel(_), false) => match record.cancel(now_ms) {
            Ok(()) => Step::Answer { reply: jsonrpc::success(id, record.wire(settings)), store: Some(Box::new(record)), stop: true, notify: true },
            Err(e) => Step::reply(jsonrpc::failure(id, &e)),
        },
        // An empty acknowledgement, also for a task that has ended.
        (TaskCall::Cancel(_), true) => match record.cancel(now_ms) {
            Ok(()) => Step::Answer { reply: ack(), store: Some(Box::new(record)), stop: true, notify: false },
            Err(_) => Step::reply(ack()),
        },
        (TaskCall::Result(_), _) if !record.status.terminal() => Step::Wait,
        (TaskCall::Result(_), _) => Step::reply(answer(id, record.result())),
        // The extension's `tasks/update` is `update`; elsewhere nothing to do.
        (TaskCall::Update { .. } | TaskCall::List(_), _) => Step::reply(ack()),
    }
}

/// `tasks/list`: the session's tasks, oldest first, a page after the cursor.
pub fn list(id: &Value, mut records: Vec<Record>, cursor: Option<&str>, settings: &Settings) -> String {
    records.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    let (page, next) = match tasks::page(&records, cursor, PAGE) {
        Ok(page) => page,
        Err(e) => return jsonrpc::failure(id, &e),
    };
    let mut result = Map::new();
    result.insert("tasks".into(), page.iter().map(|t| t.wire(settings)).collect());
    if let Some(next) = next {
        result.insert("nextCursor".into(), json!(next));
    }
    jsonrpc::success(id, Value::Object(result))
}

/// What `tasks/update` does with a waiting task's record.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// No such task: send this error.
    Refused(String),
    /// The answers are kept (store the record); some are still outstanding, or the task was
    /// not waiting.
    Kept,
    /// Every answer is in: the task works again, and its call goes on with this `tools/call`
    /// retry (the extension-less flow's, made by the server).
    Retry(Request),
}

/// `tasks/update`: keeps the answers to the task's outstanding requests; the `arguments` the
/// call had are what a retry that is asked again parks the task with.
pub fn update(id: &Value, record: Option<&mut Record>, responses: &Map<String, Value>, now_ms: u64) -> Update {
    let Some(record) = record else { return Update::Refused(jsonrpc::failure(id, &tasks::not_found())) };
    match record.answer(responses, now_ms) {
        None => Update::Kept,
        Some(params) => Update::Retry(Request { id: id.clone(), method: Method::ToolsCall.into(), params: Some(params) }),
    }
}

/// An empty complete result: `tasks/update`'s reply once applied, and the extension's
/// `tasks/cancel`.
pub fn acknowledged(id: &Value) -> String {
    jsonrpc::success(id, json!({"resultType": "complete"}))
}

/// The reply to `tasks/result`: the call's own result, or its error as it was.
fn answer(id: &Value, outcome: Result<Value, Value>) -> String {
    match outcome {
        Ok(result) => jsonrpc::success(id, result),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string(),
    }
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::TasksGet, "capability none; every revision; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: taskId"),
    (Method::TasksResult, "capability none; before 2026-07-28 only; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::TasksList, "capability none; before 2026-07-28 only; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::TasksCancel, "capability none; every revision; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: taskId"),
    (Method::TasksUpdate, "capability none; 2026-07-28 only; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: taskId"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{Outcome, Status};

    const NOW: u64 = 1_764_064_800_000;

    fn record() -> Record {
        Record::new("t1", "slow", Some(60_000), NOW, &Settings::default())
    }

    #[test]
    fn params_are_parsed_per_method_and_a_bad_one_names_its_path() {
        assert_eq!(TaskCall::parse(Method::TasksGet, Some(&json!({"taskId": "t1"}))).unwrap().unwrap(), TaskCall::Get("t1".into()));
        assert_eq!(TaskCall::parse(Method::TasksList, Some(&json!({"cursor": 3}))).unwrap().unwrap(), TaskCall::List(None));
        let bad = TaskCall::parse(Method::TasksCancel, Some(&json!({"taskId": 7}))).unwrap().unwrap_err();
        assert_eq!((bad.code(), bad.message().starts_with("Invalid params: taskId: invalid type")), (-32602, true));
        assert!(TaskCall::parse(Method::ToolsCall, None).is_none());
    }

    #[test]
    fn cancel_stops_a_running_task_and_refuses_an_ended_one() {
        let settings = Settings::default();
        let cancel = TaskCall::Cancel("t1".into());
        let Step::Answer { store: Some(stored), stop: true, notify: true, .. } = one(&json!(1), &cancel, false, Some(record()), &settings, NOW + 1) else { panic!("stopped") };
        assert_eq!(stored.status, Status::Cancelled);
        let Step::Answer { reply, store: None, .. } = one(&json!(1), &cancel, false, Some(*stored.clone()), &settings, NOW + 2) else { panic!("refused") };
        assert!(reply.contains("-32602"), "{reply}");
        assert_eq!(one(&json!(1), &cancel, true, Some(*stored), &settings, NOW + 2), Step::reply(r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#.into()));
    }

    #[test]
    fn a_task_starts_within_the_bound_and_ends_with_its_reply_or_as_an_orphan() {
        let settings = Settings { max_per_principal: 2, ..Settings::default() };
        assert!(admit(1, &settings).is_ok());
        assert_eq!(admit(2, &settings).unwrap_err().code(), -32000);
        assert_eq!(created(&record(), &settings, false)["task"]["taskId"], "t1");
        assert_eq!(created(&record(), &settings, true)["resultType"], "task");
        assert_eq!(outcome_of(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#), Outcome::Result(json!({"content": []})));
        assert!(matches!(outcome_of("nope"), Outcome::Error(e) if e["code"] == -32603));
        let mut task = record();
        assert!(!orphaned(&mut task, true, &settings, NOW + 1), "a running call ends it");
        assert!(orphaned(&mut task, false, &settings, NOW + 1));
        assert_eq!(task.status, Status::Failed);
    }

    #[test]
    fn result_waits_until_the_task_ends() {
        let settings = Settings::default();
        let result = TaskCall::Result("t1".into());
        assert_eq!(one(&json!(1), &result, false, Some(record()), &settings, NOW), Step::Wait);
        let mut done = record();
        done.finish(Outcome::Result(json!({"content": []})), NOW, &settings);
        let Step::Answer { reply, .. } = one(&json!(1), &result, false, Some(done), &settings, NOW) else { panic!() };
        assert!(reply.contains("related-task"), "{reply}");
        let Step::Answer { reply, .. } = one(&json!(1), &result, false, None, &settings, NOW) else { panic!() };
        assert!(reply.contains("Task not found"), "{reply}");
    }
}
