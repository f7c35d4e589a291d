//! Where deferred results arrive: a queue consumer's report or an upstream's callback is applied
//! at most once, to the call still waiting in this object, or, when none is (the object was
//! evicted since), delivered on the session's GET stream. Expired calls are swept by the alarm.

use serde_json::Value;
use worker::{Response, ResponseBuilder};

use super::{server_at, McpSession};
use crate::catalog::Server;
use crate::edge::deferred::{load_record, store_record};
use crate::edge::now_ms;
use crate::envelope::{Envelope, Op};
use crate::error::Error;
use crate::jsonrpc;
use crate::negotiate::at_least;
use crate::session::Session;
use crate::pending::{record_key, PendingRecord, Refusal, State};
use crate::upstream::reply::{self, error_result, Upstream};

impl McpSession {
    /// Serves the operations of deferred calls: `call-status`, `attempt-failed`, `resolve`
    /// (a queue consumer's result or dead letter) and `callback` (an upstream's POST).
    pub(super) async fn serve_result(&self, envelope: &Envelope, body: &[u8]) -> Result<Response, Error> {
        let call = envelope.call.as_deref().unwrap_or_default();
        let gone = || Err(Error::CallGone);
        // A session that ended took its calls with it.
        let Some(session) = self.load().await? else { return gone() };
        let Some(mut record) = load_record(&self.raw_storage, call).await else { return gone() };
        let Some((index, server)) = server_at(&session.server) else { return gone() };
        match envelope.op {
            Op::CallStatus => {
                if record.state == State::Waiting && now_ms() < record.deadline_ms {
                    Ok(ResponseBuilder::new().with_status(204).empty())
                } else {
                    gone()
                }
            }
            Op::AttemptFailed => {
                record.last_error = Some(String::from_utf8_lossy(body).into_owned());
                store_record(&self.raw_storage, &record).await;
                Ok(ResponseBuilder::new().with_status(204).empty())
            }
            Op::Resolve | Op::Callback => {
                let content_type = envelope.content_type.clone();
                let dead = envelope.dead_letter;
                let plan = server.reply_plan(&record.tool);
                let secrets = crate::edge::redaction::current();
                let result = if dead {
                    let why = record.last_error.clone().unwrap_or_else(|| "no attempt succeeded".into());
                    error_result(format!("The queued call failed on every attempt the queue made: {why}"))
                } else if envelope.op == Op::Resolve {
                    serde_json::from_slice::<Value>(body).unwrap_or_else(|e| error_result(format!("The queued call's result was unreadable: {e}")))
                } else {
                    // A callback's body is mapped like the upstream's reply would have been.
                    reply::to_result(&Upstream::Reply { status: 200, content_type, body: body.to_vec(), truncated_at: None }, &plan, &secrets)
                };
                // Applied once, and kept on the record (one write) until its reply is delivered:
                // should this object end before that, the alarm delivers it.
                let now = now_ms();
                if record.apply(result.clone(), now) == Err(Refusal::Gone) {
                    store_record(&self.raw_storage, &record).await;
                    return gone();
                }
                store_record(&self.raw_storage, &record).await;
                crate::edge::arm_by(&self.raw_storage, now + crate::pending::RECOVER_AFTER_MS).await;
                if envelope.op == Op::Callback {
                    crate::edge::telemetry::called_back(&record.tool, record.trace.as_ref(), envelope.trace.as_ref(), &self.env);
                }
                self.settle((index, &server), &session, &record, result, &plan).await?;
                Ok(ResponseBuilder::new().with_status(200).with_headers(crate::edge::http::json_headers()).fixed(br#"{"applied":true}"#.to_vec()))
            }
            other => Err(Error::Internal(format!("not a call operation: {other:?}"))),
        }
    }

    /// Hands a result to its waiting call (which delivers it, and then lets its record go), or,
    /// when none waits here any more, delivers it itself.
    async fn settle(&self, (index, server): (usize, &Server), session: &Session, record: &PendingRecord, result: Value, plan: &reply::ReplyPlan) -> Result<(), Error> {
        let waiting = self.waiters.borrow_mut().remove(&record.call);
        let result = match waiting {
            Some(sender) => {
                // In hand from now on, before the waiting call even runs: the alarm leaves it be.
                let request = record.request_id.to_string();
                self.receipts.borrow_mut().entry(request.clone()).or_default().push(record.call.clone());
                match sender.send(result) {
                    Ok(()) => return Ok(()),
                    Err(result) => {
                        self.receipts.borrow_mut().remove(&request);
                        result
                    }
                }
            }
            None => result,
        };
        self.deliver_orphan((index, server), session, record, result, plan).await;
        Ok(())
    }

    /// Delivers the result of a call that no call of this object waits for (its object ended
    /// since: an eviction, a restart, a trap): its task ends with it, or its reply goes on the
    /// GET stream or to the outbox. Then its record goes.
    async fn deliver_orphan(&self, (index, server): (usize, &Server), session: &Session, record: &PendingRecord, result: Value, plan: &reply::ReplyPlan) {
        let structured = at_least(&session.protocol_version, "2025-06-18");
        // The call's own credentials went with its waiter; the deployment's secrets (the tool's
        // among them) are redacted on the way out, and from the task as it is stored.
        if let Some(task) = &record.task {
            let result = reply::finalize(result, plan, structured);
            self.finish_task((index, server), session, task, crate::tasks::Outcome::Result(result)).await;
        } else {
            let reply = jsonrpc::success(&record.request_id, reply::finalize(result, plan, structured));
            let waits = server.tool(&record.tool).and_then(|t| t.deferral).map_or(0, |(_, ms)| ms);
            self.deliver_later(server, reply, waits).await;
        }
        crate::edge::deferred::forget_record(&self.raw_storage, &record.call).await;
    }

    /// Sends a reply whose request's stream is gone on the GET stream, or keeps it in the outbox
    /// for the client's next stream.
    pub(super) async fn deliver_later(&self, server: &Server, reply: String, waits: u64) {
        let reply = crate::edge::redaction::seal(reply);
        let stream = self.standalone.borrow().clone();
        if let Some(stream) = stream {
            if stream.probe(true).await && stream.send_line(&reply).await {
                return;
            }
        }
        let kept = crate::outbox::Kept::new(reply, now_ms(), waits, server.idle_timeout_ms);
        self.outbox.keep(&kept).await;
    }

    /// Ends the deferred calls whose time is up and nobody here waits for (their waiters time
    /// out on their own), delivers the results that were applied but whose object ended before
    /// their reply went out, and lets spent records go; returns when to look again.
    pub(super) async fn sweep_calls(&self, (index, server): (usize, &Server), session: &Session, now: u64) -> Result<Option<u64>, Error> {
        let mut next: Option<u64> = None;
        let mut soon = |at: u64| next = Some(next.map_or(at, |n: u64| n.min(at)));
        for mut record in self.records().await {
            let delivering = self.waiters.borrow().contains_key(&record.call) || self.receipts.borrow().values().any(|calls| calls.contains(&record.call));
            if record.needs_delivery(delivering) {
                let result = record.result.take().unwrap_or(Value::Null);
                let plan = server.reply_plan(&record.tool);
                self.deliver_orphan((index, server), session, &record, result, &plan).await;
                continue;
            }
            if record.result.is_some() {
                // In hand of a call here: looked at again, in case that call dies with its object.
                soon(now + crate::pending::RECOVER_AFTER_MS);
                continue;
            }
            if record.spent(now) {
                crate::edge::deferred::forget_record(&self.raw_storage, &record.call).await;
                continue;
            }
            if record.expire(now) {
                store_record(&self.raw_storage, &record).await;
                if !self.waiters.borrow().contains_key(&record.call) {
                    let timeout = server.tool(&record.tool).and_then(|t| t.deferral).map_or(0, |(_, ms)| ms);
                    let text = format!("The {} call did not finish within {timeout} ms.", record.deferral.name());
                    let structured = at_least(&session.protocol_version, "2025-06-18");
                    let plan = reply::ReplyPlan::map(0);
                    let result = reply::finalize(error_result(text), &plan, structured);
                    match &record.task {
                        Some(task) => self.finish_task((index, server), session, task, crate::tasks::Outcome::Result(result)).await,
                        None => self.deliver_later(server, jsonrpc::success(&record.request_id, result), 0).await,
                    }
                }
            } else if record.state == State::Waiting {
                soon(record.deadline_ms);
            }
        }
        Ok(next)
    }

    pub(super) async fn records(&self) -> Vec<PendingRecord> {
        let Ok(map) = crate::edge::listed(&self.raw_storage, &record_key("")).await else { return Vec::new() };
        let mut records = Vec::new();
        map.for_each(&mut |value, _| {
            if let Some(record) = crate::edge::from_json_text(&value) {
                records.push(record);
            }
        });
        records
    }
}

