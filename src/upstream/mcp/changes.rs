//! What a read of an upstream's lists means for the clients: a digest of each list, which the
//! server's registry keeps (one object, whichever isolate read), and the list notifications a
//! newer read with other digests calls for. Isolates read on their own schedules, so a read is
//! compared with the newest kept, by when it began: an older read arriving late changes nothing.
//! And how long a watch of an upstream's stream that broke off waits to open again.

use serde_json::{json, Value};

use crate::method::Method;

/// One read of a source's lists, as the registry keeps it (as JSON, read field by field: a
/// derived reader would be code of its own in the module for four strings and a number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub source: String,
    /// When the read began (ms since the epoch).
    pub at_ms: u64,
    pub tools: String,
    /// Resources and resource templates: one notification covers both.
    pub resources: String,
    pub prompts: String,
}

impl Read {
    pub fn of(source: &str, at_ms: u64, tools: &[Value], resources: &[Value], templates: &[Value], prompts: &[Value]) -> Read {
        Read { source: source.to_string(), at_ms, tools: digest(&[tools]), resources: digest(&[resources, templates]), prompts: digest(&[prompts]) }
    }

    pub fn to_json(&self) -> String {
        json!({"source": self.source, "atMs": self.at_ms, "tools": self.tools, "resources": self.resources, "prompts": self.prompts}).to_string()
    }

    pub fn from_json(text: &[u8]) -> Option<Read> {
        let value: Value = serde_json::from_slice(text).ok()?;
        let text = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_string);
        Some(Read { source: text("source")?, at_ms: value.get("atMs")?.as_u64()?, tools: text("tools")?, resources: text("resources")?, prompts: text("prompts")? })
    }

    /// The list notifications this read calls for after `last`, the newest kept: `None` when
    /// it is not newer (keep `last`), else those whose lists differ. With nothing kept, the
    /// lists were empty to every client.
    pub fn changes(&self, last: Option<&Read>) -> Option<Vec<Method>> {
        let empty = Read::of(&self.source, 0, &[], &[], &[], &[]);
        let last = match last {
            Some(last) if last.at_ms >= self.at_ms => return None,
            Some(last) => last,
            None => &empty,
        };
        let differs = [(self.tools != last.tools, Method::ToolsListChanged), (self.resources != last.resources, Method::ResourcesListChanged), (self.prompts != last.prompts, Method::PromptsListChanged)];
        Some(differs.into_iter().filter(|(d, _)| *d).map(|(_, m)| m).collect())
    }
}

/// How long a watch waits before it opens again after `failures` failures in a row: 1 s, then
/// doubling, at most a minute.
pub fn backoff_ms(failures: u32) -> u64 {
    1000u64.saturating_mul(1 << failures.min(6)).min(60_000)
}

/// A short digest of lists as the upstream gave them (its order and fields included).
fn digest(lists: &[&[Value]]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for list in lists {
        h.update(serde_json::to_string(list).unwrap_or_default().as_bytes());
        h.update([0]);
    }
    crate::hex::encode(h.finalize().get(..12).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(at_ms: u64, tools: &[Value], prompts: &[Value]) -> Read {
        Read::of("n8n", at_ms, tools, &[], &[], prompts)
    }

    #[test]
    fn a_newer_read_calls_for_the_notifications_of_the_lists_that_differ() {
        let a = [json!({"name": "a"})];
        let b = [json!({"name": "a", "description": "now described"})];
        let first = read(10, &a, &[]);
        assert_eq!(read(20, &a, &[]).changes(Some(&first)), Some(vec![]));
        assert_eq!(read(20, &b, &[]).changes(Some(&first)), Some(vec![Method::ToolsListChanged]));
        assert_eq!(read(20, &b, &a).changes(Some(&first)), Some(vec![Method::ToolsListChanged, Method::PromptsListChanged]));
        let resources = Read::of("n8n", 20, &a, &[], &[json!({"uriTemplate": "x://{id}"})], &[]);
        assert_eq!(resources.changes(Some(&first)), Some(vec![Method::ResourcesListChanged]));
    }

    #[test]
    fn a_read_is_kept_as_json_and_read_back() {
        let read = read(42, &[json!({"name": "a"})], &[]);
        assert_eq!(Read::from_json(read.to_json().as_bytes()), Some(read));
        assert_eq!(Read::from_json(br#"{"source": "n8n"}"#), None);
    }

    #[test]
    fn an_older_read_arriving_late_changes_nothing() {
        let newest = read(20, &[json!({"name": "b"})], &[]);
        assert_eq!(read(10, &[json!({"name": "a"})], &[]).changes(Some(&newest)), None);
        assert_eq!(read(20, &[json!({"name": "a"})], &[]).changes(Some(&newest)), None);
    }

    #[test]
    fn a_watch_backs_off_up_to_a_minute() {
        assert_eq!([0, 1, 2, 5, 6, 30].map(backoff_ms), [1000, 2000, 4000, 32_000, 60_000, 60_000]);
    }

    #[test]
    fn a_first_read_announces_what_it_found_against_empty_lists() {
        assert_eq!(read(1, &[json!({"name": "a"})], &[]).changes(None), Some(vec![Method::ToolsListChanged]));
        assert_eq!(read(1, &[], &[]).changes(None), Some(vec![]));
    }
}
