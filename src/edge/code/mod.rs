//! Code mode's `execute` at the edge: the program runs in a Dynamic Worker of its own, from the
//! Worker Loader binding (`LOADER`), with no network and no bindings but `tools` (`run.js`;
//! `sandbox.js` makes its code, with its step and memory budgets). Each call the program makes
//! through `tools` is dispatched here again as the caller's own `tools/call` and carried out by
//! `calls::complete`, as a client's call would be: policies, rate limits, roles, validation,
//! redaction, tracing and progress apply to it, and the program sees its result, never its
//! request. Dropping the call (a cancel, the deadline) closes the run: its calls in flight are
//! dropped and every later one refused.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::Delay;

use crate::dispatch::{self, Action, Environment, PendingCall, Program};
use crate::edge::context::CallContext;
use crate::edge::streams::Outlet;
use crate::jsonrpc::{self, Message, Request};
use crate::method::{Method, Named};
use crate::upstream::reply::error_result;

/// The Worker Loader binding code mode needs.
pub const LOADER: &str = "LOADER";

#[wasm_bindgen(module = "/src/edge/code/lazy.js")]
extern "C" {
    /// The isolate's code for the program, or its syntax error: `sandbox.js`'s, whose module is
    /// loaded at the first program (`lazy.js`). Rejects only if that module cannot be loaded.
    #[wasm_bindgen(catch)]
    async fn prepare(code: &str, limits: &JsValue) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen(module = "/src/edge/code/run.js")]
extern "C" {
    type Run;
    fn start(loader: &JsValue, prepared: &JsValue, cpu_ms: f64, max_log_lines: f64, max_result_bytes: f64) -> Run;
    fn sandbox_limits(steps: f64, memory_bytes: f64, log_lines: f64, result_bytes: f64, tool_calls: f64) -> JsValue;
    #[wasm_bindgen(method)]
    fn done(this: &Run) -> js_sys::Promise;
    #[wasm_bindgen(method)]
    fn wait(this: &Run) -> js_sys::Promise;
    /// The next call the program made and the Worker has not taken, if any.
    #[wasm_bindgen(method)]
    fn take(this: &Run) -> Option<Ask>;
    /// A call the program made, as `run.js` queues it.
    type Ask;
    #[wasm_bindgen(method, getter)]
    fn id(this: &Ask) -> f64;
    #[wasm_bindgen(method, getter)]
    fn name(this: &Ask) -> String;
    #[wasm_bindgen(method, getter)]
    fn args(this: &Ask) -> String;
    #[wasm_bindgen(method)]
    fn settle(this: &Run, id: f64, answer: &str);
    #[wasm_bindgen(method)]
    fn close(this: &Run, why: &str);
}

/// How a program's call is carried out: `calls::complete`, passed in by its caller so that this
/// file names nothing above it.
pub type Complete = for<'c, 'a> fn(&'c CallContext<'a>, &'c PendingCall) -> Pin<Box<dyn Future<Output = Option<String>> + 'c>>;

/// Closes its run when dropped: a cancelled or late call's program can start no more calls.
struct Closing(Run, &'static str);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

/// What one turn of the run brings.
enum Step {
    Done(Result<JsValue, JsValue>),
    Asked,
    /// The call at this index of those in flight answered.
    Answered(usize, f64, String, String),
    Late,
}

type Calling<'a> = Pin<Box<dyn Future<Output = (f64, String, String)> + 'a>>;

/// Runs the program to its end, its deadline or its cancellation; its result as `execute`'s.
pub async fn execute(ctx: &CallContext<'_>, call: &PendingCall, program: &Program, complete: Complete) -> Value {
    let limits = ctx.server.code;
    let Some(loader) = crate::edge::kept_env().map(|env| js_sys::Reflect::get(env.as_ref(), &JsValue::from_str(LOADER)).unwrap_or(JsValue::UNDEFINED)).filter(|l| !l.is_undefined()) else {
        return error_result(format!("Code mode needs the Worker Loader binding {LOADER}, which this deployment lacks: add [[worker_loaders]] binding = \"{LOADER}\" to its wrangler configuration."));
    };
    let n = |v: u64| v as f64;
    let limits_js = sandbox_limits(n(limits.max_steps), n(limits.max_memory_bytes), n(limits.max_log_lines), n(limits.max_result_bytes), n(limits.max_calls));
    let prepared = match prepare(&program.code, &limits_js).await {
        Ok(prepared) => prepared,
        Err(error) => {
            let why = error.dyn_ref::<js_sys::Error>().map_or_else(|| error.as_string().unwrap_or_default(), |e| String::from(e.message()));
            return error_result(format!("Code mode's sandbox could not be loaded: {why}"));
        }
    };
    let run = Closing(start(&loader, &prepared, n(limits.cpu_ms), n(limits.max_log_lines), n(limits.max_result_bytes)), "the program's call was cancelled");
    // Progress of any of its calls goes out under the program's own token, rising across them.
    let outlet = match (ctx.out, &call.progress_token) {
        (Some(out), Some(token)) => Some(Outlet::Program { to: Box::new(out.clone()), token: token.clone(), count: std::rc::Rc::default() }),
        _ => None,
    };
    let inner = CallContext { out: outlet.as_ref().or(ctx.out), cancels: None, ..*ctx };
    let prefix = format!("mcp-edge-code-{}", crate::edge::ids::random_id().unwrap_or_default());
    let mut done = JsFuture::from(run.0.done());
    let mut wait = JsFuture::from(run.0.wait());
    let mut deadline = Delay::from(Duration::from_millis(limits.timeout_ms));
    // The calls in flight, polled in turn: a few at most (`limits.maxCallsInFlight`), so a list
    // does what a `FuturesUnordered` would, in less of the module.
    let mut calling: Vec<Calling<'_>> = Vec::new();
    let mut made = 0u64;
    let at_once = ctx.server.limits.max_calls_in_flight.max(1);
    let outcome = loop {
        // Calls wait in the run's queue while as many as may run at once are in flight.
        while calling.len() < at_once {
            let Some(ask) = run.0.take() else { break };
            if made >= limits.max_calls {
                run.0.settle(ask.id(), &crate::codemode::refusal(&format!("the program may make at most {} tool calls", limits.max_calls)));
                continue;
            }
            made += 1;
            let id = format!("{prefix}-{made}");
            let (ctx, program) = (&inner, program);
            calling.push(Box::pin(async move {
                let (name, args) = (ask.name(), ask.args());
                let answer = one(ctx, (call, program), id, (&name, &args), complete).await;
                (ask.id(), name, answer)
            }));
        }
        let room = calling.len() < at_once;
        let step = std::future::poll_fn(|cx| {
            if let Poll::Ready(outcome) = done.poll_unpin(cx) {
                return Poll::Ready(Step::Done(outcome));
            }
            for (i, future) in calling.iter_mut().enumerate() {
                if let Poll::Ready((id, name, answer)) = future.as_mut().poll(cx) {
                    return Poll::Ready(Step::Answered(i, id, name, answer));
                }
            }
            if room && wait.poll_unpin(cx).is_ready() {
                return Poll::Ready(Step::Asked);
            }
            if deadline.poll_unpin(cx).is_ready() {
                return Poll::Ready(Step::Late);
            }
            Poll::Pending
        })
        .await;
        match step {
            Step::Done(outcome) => break outcome.ok().and_then(|o| o.as_string()).unwrap_or_default(),
            Step::Asked => wait = JsFuture::from(run.0.wait()),
            Step::Answered(i, id, name, answer) => {
                drop(calling.swap_remove(i));
                run.0.settle(id, &answer);
                if let (Some(out), Some(token)) = (&outlet, &call.progress_token) {
                    // Boxed: the send's state machine stays out of this one's.
                    crate::edge::apart(out.send(&dispatch::progress(token, 0, &format!("{name} answered; calls made: {made}")))).await;
                }
            }
            Step::Late => {
                run.0.close("the program ran out of time");
                return error_result(format!("The program did not finish within {} ms; its calls in flight were stopped.", limits.timeout_ms));
            }
        }
    };
    run.0.close("the program has ended");
    let outcome = serde_json::from_slice::<Value>(outcome.as_bytes()).unwrap_or_else(|_| json!({"error": {"message": "the program's isolate gave no outcome"}}));
    crate::codemode::result(&outcome, limits.max_result_bytes)
}

/// One call of the program: the caller's own `tools/call` of `name` with `args`, dispatched and
/// carried out, its answer as the program reads it (`codemode::answer`).
async fn one(ctx: &CallContext<'_>, (outer, program): (&PendingCall, &Program), id: String, (name, args): (&str, &str), complete: Complete) -> String {
    if ctx.server.meta_tool(name).is_some() {
        return crate::codemode::refusal(&format!("{name} is code mode's own tool, which a program cannot call"));
    }
    let Ok(arguments) = serde_json::from_slice::<Value>(args.as_bytes()) else {
        return crate::codemode::refusal("the arguments are not JSON");
    };
    let mut params = json!({"name": name, "arguments": arguments});
    if let (Some(token), Some(fields)) = (&outer.progress_token, params.as_object_mut()) {
        fields.insert("_meta".into(), json!({"progressToken": token}));
    }
    let request = Request { id: Value::String(id), method: Named::Known(Method::ToolsCall), params: Some(params) };
    let Some(env) = crate::edge::kept_env() else {
        return crate::codemode::refusal("no environment to call the tool in");
    };
    let secret = |name: &str| crate::edge::secret(&env, name);
    let lookup = |name: &str| crate::edge::connections::cached(&program.principal.id, name);
    let environment = Environment { secret: &secret, route: &program.route, principal: &program.principal, now_ms: crate::edge::now_ms(), connection: &lookup };
    let mut session = ctx.session.clone();
    let reply = match dispatch::handle(ctx.server, &mut session, Ok(Message::Request(request)), &environment) {
        Action::Call(mut next) => {
            // Part of the program's call: never a task of its own, and in the program's trace.
            next.task = None;
            next.http.trace.clone_from(&outer.http.trace);
            complete(ctx, &next).await.unwrap_or_else(|| jsonrpc::failure(&next.id, &crate::error::Error::Internal("the call was cancelled".into())))
        }
        Action::Reply(reply) => reply,
        Action::Task(_) | Action::Nothing => return crate::codemode::refusal("not a tool call"),
    };
    crate::codemode::answer(&reply)
}
