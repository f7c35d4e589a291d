//! A tool's results kept at the edge (`cache.results`): a repeated call (the same tool, the same
//! canonical arguments, and for `principal` scope the same principal) is answered from the
//! Workers Cache API; a stale entry with an ETag is revalidated with `If-None-Match`, and a 304
//! serves it again for another `ttlMs`. Only successes within the size limit are kept. The keys
//! and what they hold are `crate::cache`'s; here, the Cache API and the call's hook.

use serde_json::Value;

use crate::cache::{self, ResultCaching};
use crate::edge::context::CallContext;
use crate::health::Outcome;
use crate::metrics::Counter;
use crate::upstream::HttpCall;

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/results_cache.js")]
extern "C" {
    async fn kept_get(key: &str) -> wasm_bindgen::JsValue;
    async fn kept_put(key: &str, body: &str, etag: &str, stored_ms: f64, keep_seconds: f64);
}

/// How long past its `ttlMs` an entry with an ETag is kept, to be revalidated rather than
/// fetched again: as long again, at most a day.
fn keep_ms(caching: &ResultCaching, etag: &str) -> u64 {
    if etag.is_empty() {
        caching.ttl_ms
    } else {
        caching.ttl_ms + caching.ttl_ms.min(86_400_000)
    }
}

/// One call's view of its tool's kept results: its key, and what was kept under it.
pub struct Kept<'a> {
    caching: &'a ResultCaching,
    key: String,
    stored: Option<Stored>,
    /// The ETag of the upstream's reply to this call, when it sent one.
    pub etag: std::cell::RefCell<Option<String>>,
    object: Option<&'a worker::Env>,
}

struct Stored {
    result: Value,
    etag: String,
    stored_ms: u64,
}

impl<'a> Kept<'a> {
    /// The tool's kept result for this call, when the tool keeps results.
    pub async fn open(ctx: &CallContext<'a>, tool: &str, arguments: &Value, http: &HttpCall) -> Option<Kept<'a>> {
        let caching = ctx.server.result_cache(tool)?;
        let sent = cache::Sent { method: &http.method, url: &http.url, body: http.body.as_deref() };
        let key = cache::result_key(&ctx.server.name, tool, caching, Some(arguments), &ctx.session.principal, &sent);
        let text = kept_get(&key).await.as_string().unwrap_or_default();
        let mut fields = text.splitn(3, '\n');
        let (stored_ms, etag, body) = (fields.next().unwrap_or_default(), fields.next().unwrap_or_default(), fields.next().unwrap_or_default());
        let stored = serde_json::from_slice::<Value>(body.as_bytes()).ok().map(|result| Stored { result, etag: etag.to_string(), stored_ms: stored_ms.parse().unwrap_or(0) });
        Some(Kept { caching, key, stored, etag: std::cell::RefCell::new(None), object: ctx.home.map(|h| &h.env) })
    }

    /// The kept result, while it is fresh: served as it is, with what is left of its life.
    pub fn fresh(&self) -> Option<Value> {
        let stored = self.stored.as_ref()?;
        let age = crate::edge::now_ms().saturating_sub(stored.stored_ms);
        if age >= self.caching.ttl_ms {
            return None;
        }
        crate::edge::health::count(Counter::ToolCacheHits, 1, self.object);
        Some(hinted(stored.result.clone(), cache::served_hint(self.caching, age)))
    }

    /// The upstream request: a stale entry's ETag asks the upstream whether it still holds.
    pub fn request(&self, http: &HttpCall) -> HttpCall {
        let mut http = http.clone();
        if let Some(stored) = self.stored.as_ref().filter(|s| !s.etag.is_empty()) {
            http.headers.retain(|(name, _)| !name.eq_ignore_ascii_case("if-none-match"));
            http.headers.push(("If-None-Match".into(), stored.etag.clone()));
        }
        http
    }

    /// The upstream's answer, kept when it may be: a 304 to a revalidation serves (and keeps
    /// again) the stale entry; a success within the limit is kept; anything else passes.
    pub async fn after(&self, result: Value, outcome: Outcome) -> (Value, Outcome) {
        let now = crate::edge::now_ms();
        if let (Outcome::Upstream(304), Some(stored)) = (outcome, self.stored.as_ref().filter(|s| !s.etag.is_empty())) {
            crate::edge::health::count(Counter::ToolCacheRevalidations, 1, self.object);
            self.put(&stored.result.to_string(), &stored.etag, now).await;
            return (hinted(stored.result.clone(), cache::served_hint(self.caching, 0)), Outcome::Ok);
        }
        crate::edge::health::count(Counter::ToolCacheMisses, 1, self.object);
        if outcome != Outcome::Ok {
            return (result, outcome);
        }
        // Kept as a session of the newest revision would see it: each caller's session shapes
        // it again (`reply::finalize`).
        let text = result.to_string();
        if !cache::keepable(&result, text.len(), self.caching.max_bytes) {
            return (result, outcome);
        }
        let etag = self.etag.borrow().clone().unwrap_or_default();
        self.put(&text, &etag, now).await;
        (hinted(result, cache::served_hint(self.caching, 0)), outcome)
    }

    /// Keeps `text`, a result's JSON.
    async fn put(&self, text: &str, etag: &str, now: u64) {
        let keep_seconds = keep_ms(self.caching, etag).div_ceil(1000);
        kept_put(&self.key, text, etag, now as f64, keep_seconds as f64).await;
    }
}

/// A tool's result with the hint of what was served: how long it stays fresh, who may share it.
fn hinted(mut result: Value, hint: crate::cache::CacheHint) -> Value {
    if let Some(object) = result.as_object_mut() {
        object.insert("ttlMs".into(), Value::from(hint.ttl_ms));
        object.insert("cacheScope".into(), Value::from(hint.scope.as_str()));
    }
    result
}
