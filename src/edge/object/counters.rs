//! A counting object (`admission:<address>`, `signin:<username>`): one `admission::Command`
//! per request, applied between one read and its write, which the object's input gate keeps
//! whole. Counts are deleted by the object's alarm once their window is over, so a name that
//! is never seen again (a made-up username, a passing address) leaves nothing stored.

use serde_json::json;
use worker::{Response, ResponseBuilder, State, Storage};

use super::{keys, read, write};
use crate::admission::{self, Command, Counter};
use crate::error::Error;

const PREFIX: &str = "count:";

/// A stored count and when it stops mattering.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    counter: Counter,
    until_ms: u64,
}

pub async fn serve(state: &State, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    let command: Command = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("count command: {e}")))?;
    let answer = match command {
        Command::Take { budgets, now_ms } => {
            let mut stored = Vec::with_capacity(budgets.len());
            for budget in &budgets {
                stored.push(read::<Stored>(&storage, &format!("{PREFIX}{}", budget.key)).await?.map(|s| s.counter).unwrap_or_default());
            }
            match admission::take(&budgets, &stored, now_ms) {
                Ok(next) => {
                    let mut last = 0;
                    for (budget, counter) in budgets.iter().zip(next) {
                        let until_ms = counter.until(budget.period_ms);
                        last = last.max(until_ms);
                        write(&storage, &format!("{PREFIX}{}", budget.key), &Stored { counter, until_ms }).await?;
                    }
                    // An alarm set earlier stays: its sweep sets the next.
                    crate::edge::arm_by(storage.as_raw(), last).await;
                    json!({"allowed": true, "retryAfterMs": 0})
                }
                Err(taken) => serde_json::to_value(taken).map_err(|e| Error::Internal(e.to_string()))?,
            }
        }
        Command::Reset { keys } => {
            for key in keys {
                storage.delete(&format!("{PREFIX}{key}")).await?;
            }
            json!({})
        }
    };
    Ok(ResponseBuilder::new().with_status(200).fixed(answer.to_string().into_bytes()))
}

/// From the object's alarm: counts whose window is over are deleted; the alarm is set again
/// for those still running. `false` when the object holds no counts at all.
pub async fn sweep(storage: &Storage, now_ms: u64) -> Result<bool, Error> {
    let stored = keys(storage, PREFIX).await?;
    if stored.is_empty() {
        return Ok(false);
    }
    let mut next = None::<u64>;
    for (key, text) in stored {
        match serde_json::from_slice::<Stored>(text.as_bytes()) {
            Ok(s) if s.until_ms > now_ms => next = Some(next.map_or(s.until_ms, |n| n.min(s.until_ms))),
            _ => {
                storage.delete(&key).await?;
            }
        }
    }
    if let Some(at) = next {
        storage.set_alarm(std::time::Duration::from_millis(at.saturating_sub(now_ms).max(1))).await?;
    }
    Ok(true)
}
