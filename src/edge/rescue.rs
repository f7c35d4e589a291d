//! A trap answers what it interrupted. A panic aborts the wasm instance, and with it the futures
//! of every request the instance was serving; `rescue.js` keeps, outside the instance, a way to
//! answer each of them (a 500 with a JSON-RPC -32603, or an error message that ends an open
//! stream). This module tells it when: from the panic hook, before the trap, and from
//! wasm-bindgen's abort handler, which every trap reaches (a panic too, so it may hear twice).

use std::sync::Once;

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(module = "/src/edge/rescue.js")]
extern "C" {
    /// Answers every request still waiting and ends every open stream.
    fn trapped();
    /// The error message a trap ends a stream with.
    pub fn failed() -> String;
    /// Registers an open stream's writer, with the bytes that end it should the module trap.
    pub fn stream_opened(writer: &web_sys::WritableStreamDefaultWriter, chunk: &js_sys::Uint8Array);
    /// The stream ended, or its writer is gone.
    pub fn stream_closed(writer: &web_sys::WritableStreamDefaultWriter);
}

thread_local! {
    /// The abort handler this one replaced (worker's, which schedules the reinit).
    static PREVIOUS: std::cell::Cell<Option<fn()>> = const { std::cell::Cell::new(None) };
}

fn on_abort() {
    trapped();
    match PREVIOUS.with(std::cell::Cell::get) {
        Some(previous) => previous(),
        None => wasm_bindgen::handler::schedule_reinit(),
    }
}

/// Installs the hooks, once per instance (a fresh instance after a trap installs them again).
/// Called as each handler starts: the Worker's fetch and queue, and each Durable Object.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            hook(info);
            trapped();
        }));
        PREVIOUS.with(|p| p.set(wasm_bindgen::handler::set_on_abort(on_abort)));
    });
}
