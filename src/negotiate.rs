//! Content negotiation: which framing a reply uses, and which protocol version a session speaks.

use crate::versions::{LATEST_VERSION, SUPPORTED_VERSIONS};
use crate::error::Error;

/// How replies to one POST are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// One buffered `application/json` body.
    Json,
    /// `text/event-stream`: one `data:` event per message.
    Sse,
    /// `application/x-ndjson`: one JSON message per line.
    Ndjson,
}

impl Framing {
    pub fn content_type(self) -> &'static str {
        match self {
            Framing::Json => "application/json",
            Framing::Sse => "text/event-stream",
            Framing::Ndjson => "application/x-ndjson",
        }
    }

    pub fn is_stream(self) -> bool {
        self != Framing::Json
    }
}

/// The media types an `Accept` header lists with a non-zero quality, lower-cased, parameters dropped.
fn acceptable(accept: &str) -> Vec<String> {
    accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            let excluded = parts.any(|p| {
                let p = p.trim();
                p.len() > 2
                    && p.get(..2).is_some_and(|k| k.eq_ignore_ascii_case("q="))
                    && p.get(2..).is_some_and(is_zero_quality)
            });
            (!media.is_empty() && !excluded).then_some(media)
        })
        .collect()
}

/// RFC 9110's `qvalue` of zero: `0`, `0.`, `0.0`… Only zero matters here (it excludes a type),
/// and reading it as text keeps a float parser out of the module.
fn is_zero_quality(q: &str) -> bool {
    q.trim().strip_prefix('0').is_some_and(|rest| rest.is_empty() || rest.strip_prefix('.').is_some_and(|digits| digits.bytes().all(|b| b == b'0')))
}

pub fn is_ndjson_type(media: &str) -> bool {
    media == "application/x-ndjson" || media == "application/ndjson"
}

/// The media type of a `Content-Type` header, lower-cased and without parameters.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// Chooses the framing of a POST's replies from its `Accept` and `Content-Type` headers.
///
/// NDJSON wins when listed (n8n-nodes-mcp, seed 003), then SSE (the official SDKs list both JSON
/// and SSE), then buffered JSON. `text/plain` means NDJSON only when nothing else is acceptable,
/// so axios' default `application/json, text/plain, */*` still gets JSON. An NDJSON body with no
/// Accept, or only a wildcard (fetch's default), is answered in NDJSON. `always_stream` is the
/// `/stream` alias: NDJSON unless SSE is asked for.
pub fn framing(accept: Option<&str>, content_type: Option<&str>, always_stream: bool) -> Result<Framing, Error> {
    let ndjson_body = content_type.is_some_and(|ct| is_ndjson_type(&media_type(ct)));
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(header) = accept else {
        return Ok(if always_stream || ndjson_body { Framing::Ndjson } else { Framing::Json });
    };
    let types = acceptable(header);
    let listed = |t: &str| types.iter().any(|m| m == t);
    if types.iter().any(|m| is_ndjson_type(m)) {
        return Ok(Framing::Ndjson);
    }
    if listed("text/event-stream") {
        return Ok(Framing::Sse);
    }
    if always_stream {
        return Ok(Framing::Ndjson);
    }
    if listed("application/json") {
        return Ok(Framing::Json);
    }
    // A wildcard is what fetch sends by default: an NDJSON body then means an NDJSON client.
    if listed("*/*") || listed("application/*") {
        return Ok(if ndjson_body { Framing::Ndjson } else { Framing::Json });
    }
    if types.len() == 1 && listed("text/plain") {
        return Ok(Framing::Ndjson);
    }
    Err(Error::NotAcceptable(header.to_string()))
}

/// Whether a buffered JSON reply is acceptable too: no `Accept`, or one that lists JSON or a
/// wildcard. An SSE request that also takes JSON gets JSON when there is nothing to stream.
pub fn json_acceptable(accept: Option<&str>) -> bool {
    match accept.map(str::trim).filter(|a| !a.is_empty()) {
        None => true,
        Some(header) => acceptable(header).iter().any(|m| m == "application/json" || m == "application/*" || m == "*/*"),
    }
}

/// The version the server answers `initialize` with: the client's when we speak it, else our latest.
pub fn protocol_version(requested: Option<&str>) -> &'static str {
    SUPPORTED_VERSIONS.iter().copied().find(|v| Some(*v) == requested).unwrap_or(LATEST_VERSION)
}

/// Whether a negotiated version is at least `floor` (dates compare as strings).
pub fn at_least(version: &str, floor: &str) -> bool {
    version >= floor
}

#[cfg(test)]
mod tests {
    use super::*;
    use Framing::*;

    #[test]
    fn negotiation_table() {
        let ok = |accept: Option<&str>, ct: Option<&str>, stream: bool| framing(accept, ct, stream).ok();
        type Case<'a> = (Option<&'a str>, Option<&'a str>, bool, Option<Framing>);
        let table: &[Case] = &[
            // seed 003: NDJSON by Accept, either spelling
            (Some("application/x-ndjson"), None, false, Some(Ndjson)),
            (Some("application/ndjson"), None, false, Some(Ndjson)),
            (Some("application/json, application/x-ndjson"), None, false, Some(Ndjson)),
            (Some("text/event-stream, application/x-ndjson"), None, false, Some(Ndjson)),
            // SSE by Accept; the official SDK clients send both JSON and SSE
            (Some("text/event-stream"), None, false, Some(Sse)),
            (Some("application/json, text/event-stream"), None, false, Some(Sse)),
            // buffered JSON
            (Some("application/json"), None, false, Some(Json)),
            (Some("*/*"), None, false, Some(Json)),
            (Some("application/*"), None, false, Some(Json)),
            (None, None, false, Some(Json)),
            (Some(""), Some("application/json"), false, Some(Json)),
            // text/plain only when it stands alone
            (Some("text/plain"), None, false, Some(Ndjson)),
            (Some("text/plain; charset=utf-8"), None, false, Some(Ndjson)),
            (Some("application/json, text/plain, */*"), None, false, Some(Json)),
            (Some("text/plain, text/html"), None, false, None),
            // q=0 excludes
            (Some("application/x-ndjson;q=0, application/json"), None, false, Some(Json)),
            (Some("text/event-stream; q=0, application/json"), None, false, Some(Json)),
            (Some("application/json;q=0"), None, false, None),
            (Some("application/x-ndjson;q=0.5"), None, false, Some(Ndjson)),
            (Some("application/x-ndjson;q=0.000, application/json"), None, false, Some(Json)),
            (Some("application/x-ndjson;q=0.001"), None, false, Some(Ndjson)),
            (Some("application/x-ndjson;q=00.1"), None, false, Some(Ndjson)),
            // case and spacing
            (Some(" Application/X-NDJSON "), None, false, Some(Ndjson)),
            // an NDJSON body with no Accept (seed 004) streams back NDJSON
            (None, Some("application/x-ndjson"), false, Some(Ndjson)),
            (None, Some("application/ndjson; charset=utf-8"), false, Some(Ndjson)),
            (Some("*/*"), Some("application/x-ndjson"), false, Some(Ndjson)),
            (Some("application/json"), Some("application/x-ndjson"), false, Some(Json)),
            // nothing we speak
            (Some("text/html"), None, false, None),
            (Some("image/png"), None, false, None),
            // POST /stream always streams
            (None, None, true, Some(Ndjson)),
            (Some("application/json"), None, true, Some(Ndjson)),
            (Some("text/event-stream"), None, true, Some(Sse)),
            (Some("application/x-ndjson, text/event-stream"), None, true, Some(Ndjson)),
            (Some("text/html"), None, true, Some(Ndjson)),
        ];
        for (accept, ct, stream, want) in table {
            assert_eq!(ok(*accept, *ct, *stream), *want, "Accept {accept:?}, Content-Type {ct:?}, stream {stream}");
        }
    }

    #[test]
    fn json_also_acceptable() {
        assert!(json_acceptable(Some("application/json, text/event-stream")));
        assert!(json_acceptable(Some("text/event-stream, */*")));
        assert!(json_acceptable(None));
        assert!(!json_acceptable(Some("text/event-stream")));
        assert!(!json_acceptable(Some("text/event-stream, application/json;q=0")));
    }

    #[test]
    fn not_acceptable_is_406() {
        let err = framing(Some("text/html"), None, false).unwrap_err();
        assert_eq!(err.http_status(), 406);
    }

    #[test]
    fn version_negotiation() {
        for v in SUPPORTED_VERSIONS {
            assert_eq!(protocol_version(Some(v)), v);
        }
        assert_eq!(protocol_version(Some("2026-07-28")), "2025-11-25");
        assert_eq!(protocol_version(Some("1999-01-01")), "2025-11-25");
        assert_eq!(protocol_version(None), "2025-11-25");
        assert!(at_least("2025-11-25", "2025-06-18"));
        assert!(!at_least("2025-03-26", "2025-06-18"));
    }
}
