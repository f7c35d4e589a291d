//! The objects of `rateLimits` (`edge::limits` names them): a counting object per limit and key
//! (`limit:<digest>`), whose bucket and quota window are kept in storage, so that a quota
//! outlives an eviction or a restart, each command applied between one read and its write;
//! and a slots object per concurrency limit and key (`slots:<digest>`), whose holders and
//! queue live in its memory: an eviction (which waits for its requests to end) loses nothing
//! held, and a restart ends the calls that held slots anyway.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use serde::{Deserialize, Serialize};
use worker::{Delay, Response, ResponseBuilder, State, Storage};

use super::{read, write};
use crate::error::Error;
use crate::limits::{self, Acquired, Answer, Command, SlotCommand};

const KEY: &str = "limit";

#[derive(Serialize, Deserialize)]
struct Stored {
    state: limits::State,
    until_ms: u64,
}

fn answer<T: Serialize>(value: &T) -> Result<Response, Error> {
    let text = serde_json::to_vec(value).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(ResponseBuilder::new().with_status(200).fixed(text))
}

/// One `limits::Command`.
pub async fn serve(state: &State, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    let command: Command = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("limit command: {e}")))?;
    let kept = read::<Stored>(&storage, KEY).await?.map(|s| s.state).unwrap_or_default();
    let result: Answer = match command {
        Command::Take { rule, now_ms } => match limits::take(rule, kept, now_ms) {
            Ok((next, taken)) => {
                let until_ms = limits::expires(rule, next, now_ms);
                write(&storage, KEY, &Stored { state: next, until_ms }).await?;
                crate::edge::arm_by(storage.as_raw(), until_ms).await;
                taken
            }
            Err(refused) => refused,
        },
        Command::Give { rule, now_ms } => {
            let next = limits::give(rule, kept, now_ms);
            write(&storage, KEY, &Stored { state: next, until_ms: limits::expires(rule, next, now_ms) }).await?;
            limits::read(rule, next, now_ms)
        }
        Command::Read { rule, now_ms } => limits::read(rule, kept, now_ms),
    };
    answer(&result)
}

/// From the object's alarm: the state goes once it no longer matters. `false`: no state here.
pub async fn sweep(storage: &Storage, now_ms: u64) -> Result<bool, Error> {
    let Some(stored) = read::<Stored>(storage, KEY).await.ok().flatten() else { return Ok(false) };
    if stored.until_ms <= now_ms {
        storage.delete(KEY).await?;
    } else {
        storage.set_alarm(Duration::from_millis(stored.until_ms - now_ms)).await?;
    }
    Ok(true)
}

/// The slots object's memory: the slots, and the queued requests waiting to be woken.
#[derive(Clone, Default)]
pub struct Slots(Rc<RefCell<(limits::Slots, Waiting)>>);

/// The queued requests, by id, each woken when it gets a slot.
type Waiting = HashMap<String, oneshot::Sender<()>>;

impl Slots {
    fn wake(&self, ids: Vec<String>) {
        let mut inner = self.0.borrow_mut();
        for id in ids {
            if let Some(sender) = inner.1.remove(&id) {
                let _ = sender.send(());
            }
        }
    }

    pub async fn serve(&self, body: &[u8]) -> Result<Response, Error> {
        let command: SlotCommand = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("slot command: {e}")))?;
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
                        self.0.borrow_mut().1.insert(id.clone(), sender);
                        let waited = select(receiver, Delay::from(Duration::from_millis(limit.queue_timeout_ms))).await;
                        let woken = matches!(waited, Either::Left((Ok(()), _)));
                        if woken || self.0.borrow().0.holds(&id) {
                            true
                        } else {
                            self.0.borrow_mut().1.remove(&id);
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
                return answer(&[held, waiting]);
            }
        };
        answer(&granted)
    }
}
