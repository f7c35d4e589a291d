//! What runs in the Durable Objects: a session's object (`session`: its state, alarm, streams
//! and calls), the registries (`registry`: who subscribed to which resource, and each
//! principal's open sessions), the authorization server's store (`authority`), the admission
//! counters (`counters`: per client address, per username), the counts and slots of
//! `rateLimits` (`limits`), the health figures (`health`) and the pinned tool definitions a
//! server's registry keeps (`pins`),
//! which are objects of the same class under other names.

pub(super) mod authority;
pub(super) mod counters;
pub(super) mod health;
pub(super) mod limits;
pub(super) mod versions;
pub(super) mod pins;
pub(super) mod registry;
pub(super) mod session;

use serde::de::DeserializeOwned;
use serde::Serialize;
use worker::Storage;

use crate::error::Error;

/// A value stored as JSON text under `key`, if any.
pub(super) async fn read<T: DeserializeOwned>(storage: &Storage, key: &str) -> Result<Option<T>, Error> {
    match storage.get::<String>(key).await? {
        Some(text) => serde_json::from_slice(text.as_bytes()).map(Some).map_err(|e| Error::Internal(format!("stored {key} is unreadable: {e}"))),
        None => Ok(None),
    }
}

pub(super) async fn write<T: Serialize>(storage: &Storage, key: &str, value: &T) -> Result<(), Error> {
    let text = serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))?;
    storage.put_raw(key, wasm_bindgen::JsValue::from_str(&text)).await?;
    Ok(())
}

/// The stored JSON texts whose keys start with `prefix`, in key order.
pub(super) async fn keys(storage: &Storage, prefix: &str) -> Result<Vec<(String, String)>, Error> {
    let map = crate::edge::listed(storage.as_raw(), prefix).await.map_err(worker::Error::from)?;
    let mut out = Vec::new();
    for entry in map.entries() {
        let pair = js_sys::Array::from(&entry.map_err(worker::Error::from)?);
        if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
            out.push((k, v));
        }
    }
    Ok(out)
}

