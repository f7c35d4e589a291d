//! The health figures' Durable Object (`health`, an instance of the sessions class): one
//! window of per-minute figures for the last hour, and the cumulative metrics since the object
//! was created, each stored as JSON text under its key. Each isolate's flush merges its batch
//! in (`HealthFlush`); a reader gets the window (`HealthRead`) or the totals (`MetricsRead`).
//! Minutes older than the hour are pruned on every write and read; the totals never are.
//!
//! With `telemetry.otlp` set, the totals also go to the collector's `/v1/metrics` (protobuf,
//! cumulative), at most once per `telemetry.metrics.exportIntervalSeconds`: at a flush once the
//! interval has passed, or at its end after a flush that came sooner, from a task of the object.
//! While no isolate sends a batch nothing has changed, and nothing is sent.

use std::cell::Cell;
use std::time::Duration;

use worker::{Delay, Env, Response, ResponseBuilder, State};

use crate::edge::health::Batch;
use crate::envelope::Op;
use crate::error::Error;
use crate::health::Window;
use crate::metrics::Totals;

const KEY: &str = "health:window";
const TOTALS: &str = "health:totals";
/// When the totals began (ms): the start time of every cumulative point exported.
const SINCE: &str = "health:since";
/// When the totals were last exported over OTLP (ms).
const EXPORTED: &str = "health:exported";

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
pub async fn serve((state, env): (&State, &Env), op: Op, body: &[u8]) -> Result<Response, Error> {
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
                if totals.is_empty() {
                    put(state, SINCE, &now).await?;
                }
                totals.merge(&batch.totals);
                put(state, TOTALS, &totals.0).await?;
                export_if_due(state, env, &totals, now).await?;
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

thread_local! {
    /// An export waits for the end of the interval (see `export_if_due`).
    static EXPORT_WAITING: Cell<bool> = const { Cell::new(false) };
}

/// Sends the totals to `{telemetry.otlp.endpoint}/v1/metrics` when the export interval has
/// passed since the last export; otherwise, once it has (a task of the object), so that what
/// this flush brought is not held back until some later flush. The send runs after the flush is
/// answered.
async fn export_if_due(state: &State, env: &Env, totals: &Totals, now: u64) -> Result<(), Error> {
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return Ok(()) };
    if catalog.telemetry.otlp.is_none() {
        return Ok(());
    }
    let exported: u64 = load(state, EXPORTED).await?;
    let due = exported.saturating_add(catalog.telemetry.metrics.export_interval_seconds * 1000);
    // The storage's own handle, for the task: the same storage, not a copy.
    let storage = state.storage();
    let handle: &wasm_bindgen::JsValue = storage.as_raw().as_ref();
    let raw: worker::worker_sys::DurableObjectStorage = wasm_bindgen::JsCast::unchecked_into(handle.clone());
    if now >= due {
        put(state, EXPORTED, &now).await?;
        let since: u64 = load(state, SINCE).await?;
        wasm_bindgen_futures::spawn_local(send(env.clone(), totals.clone(), since, now));
    } else if !EXPORT_WAITING.with(|w| w.replace(true)) {
        let env = env.clone();
        wasm_bindgen_futures::spawn_local(async move {
            Delay::from(Duration::from_millis(due - now)).await;
            EXPORT_WAITING.with(|w| w.set(false));
            let now = crate::edge::now_ms();
            let totals = Totals(crate::edge::stored(&raw, TOTALS).await.ok().flatten().unwrap_or_default());
            let since = crate::edge::stored(&raw, SINCE).await.ok().flatten().unwrap_or(now);
            if let Ok(promise) = raw.put(EXPORTED, wasm_bindgen::JsValue::from_str(&now.to_string())) {
                let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
            }
            send(env, totals, since, now).await;
        });
    }
    Ok(())
}

/// One export of `totals`; a failed one counts its points as dropped
/// (`mcp_edge_otlp_points_dropped_total`).
async fn send(env: Env, totals: Totals, since: u64, now: u64) {
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return };
    let Some(otlp) = &catalog.telemetry.otlp else { return };
    let times = crate::metrics::otlp::Times { start_ns: since.min(now) * 1_000_000, now_ns: now * 1_000_000 };
    let source = crate::trace::otlp::Source::mcp_edge(&catalog.telemetry.service_name);
    let body = js_sys::Uint8Array::from(crate::metrics::otlp::protobuf(&source, &totals, times).as_slice()).into();
    if let Err(why) = crate::edge::telemetry::post(&env, otlp, "/v1/metrics", "application/x-protobuf", body).await {
        let points = crate::metrics::otlp::points(&totals);
        worker::console_error!("{}", crate::edge::redaction::line(format!("telemetry: the metrics could not be sent to the collector: {why}; {points} points are counted dropped")));
        crate::edge::health::count(crate::metrics::Counter::OtlpPointsDropped, points, Some(&env));
    }
}
