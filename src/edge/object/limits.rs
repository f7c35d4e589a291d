//! The objects of `rateLimits` (`edge::limits` names them): a counting object per limit and key
//! (`limit:<digest>`), whose bucket and quota window are kept in storage, so that a quota
//! outlives an eviction or a restart, each command applied between one read and its write;
//! and a slots object per concurrency limit and key (`slots:<digest>`), whose holders and
//! queue live in its memory: an eviction (which waits for its requests to end) loses nothing
//! held, and a restart ends the calls that held slots anyway. Commands and answers are lines of
//! numbers (`limits::Command`, `limits::SlotCommand`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use worker::{Delay, Response, ResponseBuilder, State, Storage};

use crate::error::Error;
use crate::limits::{self, Acquired, Command, Op, SlotCommand};

const KEY: &str = "limit";

fn answer(text: String) -> Result<Response, Error> {
    Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
}

/// One `limits::Command`. The state is read from storage once per object lifetime and kept in
/// memory; it is written back only when the limit has a quota, which must outlive a restart: a
/// bucket alone lives in memory, and an eviction (after the object sat idle) refills it.
pub async fn serve(state: &State, memory: &Slots, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    let command = std::str::from_utf8(body).ok().and_then(Command::parse).ok_or_else(|| Error::InvalidRequest("limit command".into()))?;
    let cached = memory.0.borrow().2;
    let kept = match cached {
        Some(kept) => kept,
        None => limits::State::parse(&storage.get::<String>(KEY).await?.unwrap_or_default()).0,
    };
    let (rule, now) = (command.rule, command.now_ms);
    let (next, result) = match command.op {
        Op::Take | Op::Batch => match limits::take_up_to(rule, kept, now, if command.op == Op::Batch { rule.rate.map_or(1, limits::batch) } else { 1 }) {
            Ok((next, taken)) => (next, taken),
            Err(refused) => (kept, refused),
        },
        Op::Give => {
            let next = limits::give(rule, kept, now);
            (next, limits::read(rule, next, now))
        }
        Op::Read => (kept, limits::read(rule, kept, now)),
    };
    memory.0.borrow_mut().2 = Some(next);
    if rule.quota.is_some() && next != kept {
        let until = limits::expires(rule, next, now);
        storage.put_raw(KEY, wasm_bindgen::JsValue::from_str(&next.line(until))).await?;
        crate::edge::arm_by(storage.as_raw(), until).await;
    }
    answer(result.line())
}

/// From the object's alarm: the state goes once it no longer matters. `false`: no state here.
pub async fn sweep(storage: &Storage, now_ms: u64) -> Result<bool, Error> {
    let Some(text) = storage.get::<String>(KEY).await.ok().flatten() else { return Ok(false) };
    let (_, until) = limits::State::parse(&text);
    if until <= now_ms {
        storage.delete(KEY).await?;
    } else {
        storage.set_alarm(Duration::from_millis(until - now_ms)).await?;
    }
    Ok(true)
}

/// The queued requests, by id, each woken when it gets a slot.
type Waiting = Vec<(String, oneshot::Sender<()>)>;

/// A limit object's memory: a slots object's slots and the queued requests waiting to be woken;
/// a counting object's state.
#[derive(Clone, Default)]
pub struct Slots(Rc<RefCell<(limits::Slots, Waiting, Option<limits::State>)>>);

impl Slots {
    fn wake(&self, ids: Vec<String>) {
        let mut inner = self.0.borrow_mut();
        for id in ids {
            if let Some(i) = inner.1.iter().position(|(waiting, _)| *waiting == id) {
                let _ = inner.1.swap_remove(i).1.send(());
            }
        }
    }

    /// One `limits::SlotCommand`: `1` granted, `0` refused; `held waiting` for a read.
    pub async fn serve(&self, body: &[u8]) -> Result<Response, Error> {
        let command = std::str::from_utf8(body).ok().and_then(SlotCommand::parse).ok_or_else(|| Error::InvalidRequest("slot command".into()))?;
        let now = crate::edge::now_ms();
        let granted = match command {
            SlotCommand::Acquire { limit, id, lease_ms } => {
                let (acquired, woken) = self.0.borrow_mut().0.acquire(limit, &id, lease_ms, now);
                self.wake(woken);
                match acquired {
                    Acquired::Granted => true,
                    Acquired::Refused => false,
                    Acquired::Queued => {
                        let (sender, receiver) = oneshot::channel();
                        self.0.borrow_mut().1.push((id.clone(), sender));
                        let waited = select(receiver, Delay::from(Duration::from_millis(limit.queue_timeout_ms))).await;
                        if matches!(waited, Either::Left((Ok(()), _))) || self.0.borrow().0.holds(&id) {
                            true
                        } else {
                            self.0.borrow_mut().1.retain(|(waiting, _)| *waiting != id);
                            let woken = self.0.borrow_mut().0.release(limit, &id, lease_ms, crate::edge::now_ms());
                            self.wake(woken);
                            false
                        }
                    }
                }
            }
            SlotCommand::Release { limit, id, lease_ms } => {
                let woken = self.0.borrow_mut().0.release(limit, &id, lease_ms, now);
                self.wake(woken);
                true
            }
            SlotCommand::Read => {
                let (held, waiting) = self.0.borrow().0.counts();
                let mut text = held.to_string();
                text.push(' ');
                text.push_str(&waiting.to_string());
                return answer(text);
            }
        };
        answer(if granted { "1" } else { "0" }.into())
    }
}
