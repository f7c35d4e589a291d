//! A session's beginning and end: the Worker's `initialize` writes it here, `DELETE` ends it, and the alarm ends
//! it once idle (or keeps it while tasks, deferred calls or kept replies need it).

use std::time::Duration;

use worker::{Response, ResponseBuilder};

use super::{Forwarded, McpSession};
use crate::auth::object_name;
use crate::edge::http::session_headers;
use crate::edge::object::{authority, counters, limits, registry};
use crate::edge::live::served;
use crate::edge::now_ms;
use crate::error::Error;
use crate::session::Session;

/// How often a request that outran its session's write looks for it again (in memory: the
/// write is served by this same object).
const BIRTH_POLL_MS: u64 = 2;

impl McpSession {
    /// A session the Worker began (`edge::worker::initialize`), written here behind its reply:
    /// stored, with its alarm set. Refused past the id's birth window, when a request that
    /// waited for it may already have been told the session is not found, and after the session
    /// ended here.
    pub(super) async fn initialize(&self, request: &Forwarded, body: &[u8]) -> Result<Response, Error> {
        let session: Session = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("a new session: {e}")))?;
        let window = crate::session_ids::issued_at(request.session_id()).map(|at| at.saturating_add(crate::session_ids::BIRTH_WINDOW_MS));
        if session.id != request.session_id() || session.principal != request.principal.id || window.is_none_or(|end| now_ms() >= end) || self.ended.get() {
            return Err(Error::SessionNotFound);
        }
        if self.load().await?.is_none() {
            self.save(&session).await?;
            crate::edge::health::change(crate::metrics::Gauge::Sessions, 1);
            self.state.storage().set_alarm(Duration::from_millis(request.server.idle_timeout_ms)).await?;
        }
        Ok(ResponseBuilder::new().with_status(204).empty())
    }

    /// Waits for a self-proving session's write when a request outran it: until the session is
    /// here, it ended here, or its birth window closed (then the request finds no session).
    pub(super) async fn born(&self, session_id: &str) -> Result<(), Error> {
        let Some(issued) = crate::session_ids::issued_at(session_id) else { return Ok(()) };
        let end = issued.saturating_add(crate::session_ids::BIRTH_WINDOW_MS);
        while !self.ended.get() && now_ms() < end && self.load().await?.is_none() {
            worker::Delay::from(Duration::from_millis(BIRTH_POLL_MS)).await;
        }
        Ok(())
    }

    /// `DELETE`: the client ends its session.
    pub(super) async fn delete(&self, request: &Forwarded) -> Result<Response, Error> {
        let (server, index) = (&request.server, request.index());
        let session = self.session_for(server, Some(&request.principal)).await?;
        self.close_tasks((index, server), &session, &request.home.object).await;
        registry::forget(&self.env, server, index, &request.home.object, &session).await?;
        registry::close_session(&self.env, server, index, &session.principal, &session.id).await?;
        self.end(&session).await?;
        Ok(ResponseBuilder::new().with_status(200).with_headers(session_headers(request.session_id(), None)).empty())
    }

    /// The alarm: ends the session once idle, or sets the alarm again for when something it
    /// keeps (a deferred call, a task, a kept reply) or its idle timeout is due.
    pub(super) async fn expire(&self) -> Result<(), Error> {
        let Some(mut session) = self.load().await? else {
            // An object of the same class that is no session: a counting object's windows end,
            // and the authorization server's objects drop what has expired.
            let storage = self.state.storage();
            if !counters::sweep(&storage, now_ms()).await? && !limits::sweep(&storage, now_ms()).await? {
                authority::sweep(&storage, now_ms()).await?;
            }
            return Ok(());
        };
        let found = served().ok().and_then(|c| c.servers.iter().enumerate().find(|(_, s)| s.route.as_str() == session.server).map(|(i, s)| (i, s.clone())));
        let idle = found.as_ref().map(|(_, s)| s.idle_timeout_ms);
        let now = now_ms();
        let next_call = match &found {
            Some((index, server)) => self.sweep_calls((*index, server), &session, now).await?,
            None => None,
        };
        // Tasks outlive their requests: the session is kept while it keeps one.
        let object = object_name(&session.id, &session.principal);
        let deferred: Vec<String> = self.records().await.into_iter().filter(|r| r.state == crate::pending::State::Waiting).filter_map(|r| r.task).collect();
        let next_task = match &found {
            Some((index, server)) => self.sweep_tasks((*index, server), &session, &object, &deferred, now).await,
            None => None,
        };
        // Replies kept for the client keep the session until they are due to go.
        let next_kept = self.outbox.sweep(&session.id, now).await;
        // A session waiting for a deferred result is in use.
        let busy = self.busy.get() > 0 || next_call.is_some();
        // A legacy session and a listen stream's object live only as long as their stream.
        let stream_bound = session.legacy_sse || session.listen_id.is_some();
        let idle = idle.filter(|_| !(stream_bound && self.standalone.borrow().is_none() && !busy));
        if busy || self.last_activity.get() > session.last_used_ms {
            // Persist what only memory knew, so an eviction does not shorten the session.
            session.touch(if busy { now } else { self.last_activity.get() });
            self.save(&session).await?;
        }
        match idle {
            Some(idle) if !session.is_expired(now, idle, busy) || next_task.is_some() || next_kept.is_some() => {
                let live = (!session.is_expired(now, idle, busy)).then(|| session.expires_at(idle));
                let at = [live, next_call, next_task, next_kept].into_iter().flatten().min().unwrap_or(now);
                let wait = at.saturating_sub(now).max(if next_call.is_some() { 1 } else { 1_000 });
                self.state.storage().set_alarm(Duration::from_millis(wait)).await?;
            }
            // Expired, or its server is no longer configured: the session ends.
            _ => {
                if let Some((index, server)) = found {
                    self.close_tasks((index, &server), &session, &object).await;
                    registry::forget(&self.env, &server, index, &object, &session).await?;
                    registry::close_session(&self.env, &server, index, &session.principal, &session.id).await?;
                }
                self.end(&session).await?;
            }
        }
        Ok(())
    }

    /// Ends the session: what it kept for the client, its calls, its upstream sessions, its
    /// storage and its alarm.
    async fn end(&self, session: &crate::session::Session) -> Result<(), Error> {
        // A listen stream's object is no session of the client's: it was never counted.
        if session.listen_id.is_none() {
            crate::edge::health::change(crate::metrics::Gauge::Sessions, -1);
        }
        self.outbox.ending(&session.id).await;
        *self.cached.borrow_mut() = Some(None);
        self.ended.set(true);
        // Calls still waiting for a result end with the session; their records go with the storage.
        self.waiters.borrow_mut().clear();
        crate::edge::mcp::call::end_kept(&self.env, &self.raw_storage).await;
        let storage = self.state.storage();
        storage.delete_alarm().await?;
        storage.delete_all().await?;
        Ok(())
    }
}
