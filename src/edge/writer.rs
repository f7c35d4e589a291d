//! The streaming writer: a TransformStream whose readable side is the response body, and a
//! `send_line` that writes one message in the negotiated framing. Every open stream is known to
//! `rescue`, which ends it with an error message should the module trap.

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{ReadableStream, TransformStream, WritableStreamDefaultWriter};

use crate::edge::rescue;
use crate::framing;
use crate::negotiate::Framing;

pub struct LineWriter {
    writer: WritableStreamDefaultWriter,
    framing: Framing,
}

/// Opens a stream. Hand the readable side back in the response before writing: a write waits
/// for the reader, so awaiting one first would wait forever.
pub fn open(framing: Framing) -> worker::Result<(LineWriter, ReadableStream)> {
    let stream = TransformStream::new().map_err(js_error)?;
    let writer = stream.writable().get_writer().map_err(js_error)?;
    let ending = Uint8Array::from(framing::stream_chunk(framing, &rescue::failed()).as_slice());
    rescue::stream_opened(&writer, &ending);
    Ok((LineWriter { writer, framing }, stream.readable()))
}

impl LineWriter {
    /// Writes one JSON message; false once the client has gone away.
    pub async fn send_line(&self, json: &str) -> bool {
        self.send_bytes(&framing::stream_chunk(self.framing, json)).await
    }

    pub async fn send_bytes(&self, bytes: &[u8]) -> bool {
        let chunk = Uint8Array::from(bytes);
        JsFuture::from(self.writer.write_with_chunk(&chunk)).await.is_ok()
    }

    pub async fn close(&self) {
        rescue::stream_closed(&self.writer);
        let _ = JsFuture::from(self.writer.close()).await;
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        rescue::stream_closed(&self.writer);
    }
}

fn js_error(value: wasm_bindgen::JsValue) -> worker::Error {
    match value.dyn_into::<js_sys::Error>() {
        Ok(e) => worker::Error::RustError(String::from(e.message())),
        Err(v) => worker::Error::RustError(format!("{v:?}")),
    }
}
