//! The consumer of queued tool calls: performs the fetch, lets the queue retry network errors,
//! 429 and 5xx (up to its `max_retries`, then its dead-letter queue), and reports the result to
//! the call's session object. A queue whose name ends in `-dlq` is taken as the dead-letter
//! queue: its messages are reported as failed calls.

use serde_json::Value;
use worker::{event, Context, Env, MessageBatch, MessageExt};

use crate::edge::deferred::QueuedCall;
use crate::edge::forward::forward;
use crate::envelope::{Envelope, Op};
use crate::edge::upstream;
use crate::upstream::reply::{self, error_result};
use crate::upstream::stream::Event;

#[event(queue)]
pub async fn consume(batch: MessageBatch<QueuedCall>, env: Env, ctx: Context) -> worker::Result<()> {
    crate::edge::rescue::install();
    let dead = batch.queue().ends_with("-dlq");
    // Raw messages: a call travels as JSON text, read by the module's JSON parser.
    crate::edge::live::refresh(&env, 0).await;
    for message in batch.raw_iter() {
        let queued: Option<QueuedCall> = crate::edge::from_json_text(&message.body());
        let settled = match &queued {
            // The delivery continues the trace of the call that queued it.
            Some(queued) => {
                let (span, traced) = crate::edge::telemetry::delivery(&queued.http, batch.queue().as_str()).map_or((None, None), |(span, http)| (Some(span), Some(QueuedCall { http, ..queued.clone() })));
                let settled = handle(&env, traced.as_ref().unwrap_or(queued), dead).await;
                if let Some(span) = span {
                    crate::edge::telemetry::delivered(span, settled);
                }
                settled
            }
            // A message this build cannot read would fail on every retry; its call times out.
            None => {
                worker::console_error!("{}", crate::edge::redaction::line(format!("queue message {} is not a queued call; dropped", message.id())));
                true
            }
        };
        if settled {
            message.ack();
        } else {
            message.retry();
        }
    }
    crate::edge::telemetry::after_request(&env, &ctx, || false);
    Ok(())
}

/// Handles one message; false asks the queue to deliver it again.
async fn handle(env: &Env, queued: &QueuedCall, dead: bool) -> bool {
    if dead {
        return report(env, queued, Op::Resolve, Vec::new(), true).await;
    }
    // A call that ended meanwhile (timed out, cancelled, session gone) is not fetched.
    if !matches!(send(env, queued, Op::CallStatus, Vec::new(), false).await, Some(204)) {
        return true;
    }
    let server = crate::edge::live::served().ok().and_then(|c| c.servers.get(queued.server).cloned());
    let tool = server.as_ref().and_then(|s| s.tool(&queued.tool));
    let Some(tool) = tool else {
        let missing = error_result(format!("The tool {:?} is no longer configured.", queued.tool));
        return report(env, queued, Op::Resolve, missing.to_string().into_bytes(), false).await;
    };
    let upstream = upstream::perform(&queued.http, tool.reply.max_bytes).await;
    if crate::upstream::retry::is_retryable_outcome(&upstream) {
        let why = reply::to_result(&upstream, &tool.reply, &crate::edge::redaction::current());
        let text = why.pointer("/content/0/text").and_then(Value::as_str).unwrap_or_default().to_string();
        send(env, queued, Op::AttemptFailed, text.into_bytes(), false).await;
        return false;
    }
    let result = match crate::upstream::stream::outcome(&upstream, &tool.reply, &crate::edge::redaction::current()) {
        Event::Result(result) => result,
        _ => error_result("A queued tool cannot ask the client for input.".into()),
    };
    report(env, queued, Op::Resolve, result.to_string().into_bytes(), false).await
}

/// Reports to the session object; true when the report is settled (applied or refused as gone).
async fn report(env: &Env, queued: &QueuedCall, op: Op, body: Vec<u8>, dead: bool) -> bool {
    matches!(send(env, queued, op, body, dead).await, Some(200 | 404 | 410))
}

async fn send(env: &Env, queued: &QueuedCall, op: Op, body: Vec<u8>, dead: bool) -> Option<u16> {
    let envelope = Envelope { op, session_id: queued.session.clone(), call: Some(queued.call.clone()), content_type: Some("application/json".into()), dead_letter: dead, ..Envelope::default() };
    forward(env, envelope, &body).await.ok().map(|r| r.status_code())
}
