//! The live layer's store (`live-config`, an instance of the sessions class): the current
//! version number under `head`, and each kept version with its whole layer under `v:<n>`.
//! `live::store` names the commands; the Worker computes and validates every change, and this
//! object only stores it if nobody wrote since the version it was computed from.

use serde_json::json;
use worker::{Response, ResponseBuilder, State};

use super::{keys, read, write};
use crate::error::Error;
use crate::live::store::{dropped, key, Command, Current, Stored, Version};

/// The object's name in the sessions namespace.
pub const OBJECT: &str = "live-config";

fn answer<T: serde::Serialize>(value: &T) -> Result<Response, Error> {
    let text = serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
}

/// One command, inside the object. Its storage operations are not interleaved with another
/// request's (the object's input gate stays closed while they run), so a write's comparison
/// with `head` and its store are one step.
pub async fn serve(state: &State, body: &[u8]) -> Result<Response, Error> {
    let command: Command = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("live store: {e}")))?;
    let storage = state.storage();
    let head: u64 = read(&storage, "head").await?.unwrap_or(0);
    let stored = |version: u64| {
        let storage = &storage;
        async move {
            if version == 0 {
                return Ok(Some(Stored::bundled()));
            }
            read::<Stored>(storage, &key(version)).await
        }
    };
    match command {
        Command::Head { known } => {
            let mut current = Current { version: head, ..Current::default() };
            if known != Some(head) {
                let version = stored(head).await?.ok_or_else(|| Error::Internal(format!("live version {head} is missing from the store")))?;
                current.at_ms = version.record.at_ms;
                current.layer = Some(version.layer);
            }
            answer(&current)
        }
        Command::Write { base, layer, by, summary, servers } => {
            if base != head {
                return answer(&Current { version: head, ..Current::default() });
            }
            let version = head + 1;
            let at_ms = crate::edge::now_ms();
            write(&storage, &key(version), &Stored { record: Version { version, at_ms, by, summary, servers }, layer }).await?;
            write(&storage, "head", &version).await?;
            if let Some(old) = dropped(version).filter(|v| *v > 0) {
                storage.delete(&key(old)).await?;
            }
            answer(&Current { version, at_ms, stored: true, layer: None })
        }
        Command::History => {
            let mut records: Vec<Version> = keys(&storage, "v:").await?.into_iter().filter_map(|(_, text)| serde_json::from_slice::<Stored>(text.as_bytes()).ok().map(|s| s.record)).collect();
            // Version 0, the file, is always there to return to.
            records.insert(0, Stored::bundled().record);
            records.reverse();
            answer(&json!({ "head": head, "versions": records }))
        }
        Command::Get { version } => match stored(version).await? {
            Some(found) => answer(&found),
            None => Ok(ResponseBuilder::new().with_status(404).empty()),
        },
    }
}
