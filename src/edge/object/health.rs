//! The health figures' Durable Object (`health`, an instance of the sessions class): one
//! window of per-minute figures for the last hour, and the cumulative metrics since the object
//! was created, each stored as JSON text under its key. Each isolate's flush merges its batch
//! in (`HealthFlush`); a reader gets the window (`HealthRead`) or the totals (`MetricsRead`).
//! Minutes older than the hour are pruned on every write and read; the totals never are.

use worker::{Response, ResponseBuilder, State};

use crate::edge::health::Batch;
use crate::envelope::Op;
use crate::error::Error;
use crate::health::Window;
use crate::metrics::Totals;

const KEY: &str = "health:window";
const TOTALS: &str = "health:totals";

async fn load<T: serde::de::DeserializeOwned + Default>(state: &State, key: &str) -> Result<T, Error> {
    // Unreadable figures (from a build with another shape) are dropped: they are statistics,
    // not state anything depends on.
    Ok(crate::edge::stored(state.storage().as_raw(), key).await.map_err(worker::Error::from)?.unwrap_or_default())
}

async fn put(state: &State, key: &str, value: &impl serde::Serialize) -> Result<(), Error> {
    let text = serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))?;
    state.storage().put_raw(key, wasm_bindgen::JsValue::from_str(&text)).await?;
    Ok(())
}

/// Serves one operation inside the object. The reads, the merges and the writes have no other
/// await between them, so the object's input gate keeps concurrent flushes from interleaving.
pub async fn serve(state: &State, op: Op, body: &[u8]) -> Result<Response, Error> {
    let now = crate::edge::now_ms();
    match op {
        Op::HealthFlush => {
            let batch = Batch::of_body(body)?;
            if !batch.window.is_empty() {
                let mut window: Window = load(state, KEY).await?;
                window.merge(&batch.window);
                window.prune(now);
                put(state, KEY, &window).await?;
            }
            if !batch.totals.is_empty() {
                let mut totals = Totals(load(state, TOTALS).await?);
                totals.merge(&batch.totals);
                put(state, TOTALS, &totals.0).await?;
            }
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::HealthRead => {
            let mut window: Window = load(state, KEY).await?;
            window.prune(now);
            let text = serde_json::to_string(&window).map_err(|e| Error::Internal(e.to_string()))?;
            Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
        }
        Op::MetricsRead => {
            let totals: std::collections::BTreeMap<String, u64> = load(state, TOTALS).await?;
            let text = serde_json::to_string(&totals).map_err(|e| Error::Internal(e.to_string()))?;
            Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
        }
        other => Err(Error::Internal(format!("not a health operation: {other:?}"))),
    }
}
