//! The health figures' Durable Object (`health`, an instance of the sessions class): one
//! window of per-minute figures for the last hour, stored as JSON text under one key. Each
//! isolate's flush merges its batch in (`HealthFlush`); a reader gets the window
//! (`HealthRead`). Minutes older than the hour are pruned on every write and read.

use worker::{Response, ResponseBuilder, State};

use crate::envelope::Op;
use crate::error::Error;
use crate::health::Window;

const KEY: &str = "health:window";

async fn load(state: &State) -> Result<Window, Error> {
    // Unreadable figures (from a build with another shape) are dropped: they are an hour's
    // statistics, not state anything depends on.
    Ok(crate::edge::stored(state.storage().as_raw(), KEY).await.map_err(worker::Error::from)?.unwrap_or_default())
}

/// Serves one operation inside the object. The read, the merge and the write have no other
/// await between them, so the object's input gate keeps concurrent flushes from interleaving.
pub async fn serve(state: &State, op: Op, body: &[u8]) -> Result<Response, Error> {
    let now = crate::edge::now_ms();
    match op {
        Op::HealthFlush => {
            let batch: Window = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("health figures: {e}")))?;
            let mut window = load(state).await?;
            window.merge(&batch);
            window.prune(now);
            let text = serde_json::to_string(&window).map_err(|e| Error::Internal(e.to_string()))?;
            state.storage().put_raw(KEY, wasm_bindgen::JsValue::from_str(&text)).await?;
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::HealthRead => {
            let mut window = load(state).await?;
            window.prune(now);
            let text = serde_json::to_string(&window).map_err(|e| Error::Internal(e.to_string()))?;
            Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
        }
        other => Err(Error::Internal(format!("not a health operation: {other:?}"))),
    }
}
