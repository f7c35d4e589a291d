//! The outbox of a session's object (`crate::outbox`): replies kept in its storage when their
//! stream was gone, taken out as a stream carries them, and dropped when nobody came for them.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectStorage;

use crate::outbox::{self, Kept};

/// A session object's outbox. The object remembers when it found it empty, so a request asks
/// storage once per object lifetime while nothing is kept.
#[derive(Clone)]
pub struct Outbox {
    storage: Rc<DurableObjectStorage>,
    /// Known to be empty: nothing listed, and nothing kept since.
    empty: Rc<Cell<bool>>,
    /// Replies kept so far by this object: a listing that was awaited while one was kept says
    /// nothing about emptiness.
    puts: Rc<Cell<u64>>,
    /// Keys being taken out right now: listed, not yet deleted. Two requests of the object that
    /// take at once (a `GET` and a `POST`) never both carry a reply.
    taking: Rc<RefCell<HashSet<String>>>,
}

impl Outbox {
    pub fn new(storage: Rc<DurableObjectStorage>) -> Outbox {
        Outbox { storage, empty: Rc::default(), puts: Rc::default(), taking: Rc::default() }
    }

    /// Keeps `kept` until a stream of the session carries it; the alarm rings when it is due to go.
    pub async fn keep(&self, kept: &Kept) {
        let nonce = crate::edge::ids::random_id().unwrap_or_default().replace('-', "");
        let key = outbox::key(crate::edge::now_ms(), nonce.get(..12).unwrap_or_default());
        self.put(&key, kept).await;
        crate::edge::arm_by(&self.storage, kept.until_ms).await;
    }

    async fn put(&self, key: &str, kept: &Kept) {
        self.empty.set(false);
        self.puts.set(self.puts.get() + 1);
        let Ok(text) = serde_json::to_string(kept) else { return };
        if let Ok(promise) = self.storage.put(key, text.into()) {
            let _ = JsFuture::from(promise).await;
        }
    }

    /// Every kept reply, oldest first.
    pub async fn list(&self) -> Vec<(String, Kept)> {
        if self.empty.get() {
            return Vec::new();
        }
        let puts = self.puts.get();
        let Ok(map) = crate::edge::listed(&self.storage, outbox::PREFIX).await else { return Vec::new() };
        let mut kept = Vec::new();
        map.for_each(&mut |value, key| {
            if let (Some(key), Some(reply)) = (key.as_string(), crate::edge::from_json_text::<Kept>(&value)) {
                kept.push((key, reply));
            }
        });
        self.empty.set(kept.is_empty() && self.puts.get() == puts);
        kept
    }

    /// Takes the kept replies out of storage for a stream to carry, oldest first. The deletion is
    /// committed before anything the object writes next leaves it (workerd's output gate), so a
    /// reply is carried once even if the object ends right after; one whose write fails goes back
    /// with `put_back`.
    pub async fn take(&self) -> Vec<(String, Kept)> {
        let now = crate::edge::now_ms();
        let puts = self.puts.get();
        let listed = self.list().await;
        let all = listed.len();
        let taken: Vec<(String, Kept)> = {
            let mut taking = self.taking.borrow_mut();
            listed.into_iter().filter(|(key, kept)| !kept.expired(now) && taking.insert(key.clone())).collect()
        };
        if !taken.is_empty() {
            let keys: Vec<JsValue> = taken.iter().map(|(key, _)| JsValue::from_str(key)).collect();
            if let Ok(promise) = self.storage.delete_multiple(keys) {
                let _ = JsFuture::from(promise).await;
            }
            let mut taking = self.taking.borrow_mut();
            for (key, _) in &taken {
                taking.remove(key);
            }
            self.empty.set(taken.len() == all && self.puts.get() == puts);
        }
        taken
    }

    /// A taken reply that its stream could not carry after all.
    pub async fn put_back(&self, key: &str, kept: &Kept) {
        self.put(key, kept).await;
    }

    /// Drops the kept replies nobody came for in time (and the oldest beyond the bound), and says
    /// so in the log; returns when the next one is due to go.
    pub async fn sweep(&self, session_id: &str, now: u64) -> Option<u64> {
        let kept = self.list().await;
        let gone = outbox::dropped(&kept, now);
        if !gone.is_empty() {
            self.forget(session_id, &gone, "not collected in time").await;
        }
        let left: Vec<(String, Kept)> = kept.iter().filter(|(key, _)| !gone.contains(&key.as_str())).cloned().collect();
        outbox::next_expiry(&left)
    }

    /// The session ends: its kept replies go with its storage, counted in the log.
    pub async fn ending(&self, session_id: &str) {
        let kept = self.list().await;
        if !kept.is_empty() {
            let keys: Vec<&str> = kept.iter().map(|(key, _)| key.as_str()).collect();
            self.forget(session_id, &keys, "the session ended").await;
        }
        self.empty.set(true);
    }

    /// Deletes kept replies and counts them in the log (never their content).
    async fn forget(&self, session_id: &str, keys: &[&str], why: &str) {
        let values: Vec<JsValue> = keys.iter().map(|key| JsValue::from_str(key)).collect();
        if let Ok(promise) = self.storage.delete_multiple(values) {
            let _ = JsFuture::from(promise).await;
        }
        worker::console_log!("{}", crate::edge::redaction::line(serde_json::json!({"message": "kept replies dropped", "sessionId": session_id, "count": keys.len(), "why": why}).to_string()));
    }
}
