//! Performs a tool's HTTP call with its timeout, aborting the fetch when time runs out.

use std::time::Duration;

use futures::future::{select, Either};
use futures::StreamExt;
use wasm_bindgen::JsValue;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit};

use crate::tools::reply::Upstream;
use crate::tools::HttpCall;

/// Makes the call. The timeout covers the whole exchange, body included.
pub async fn perform(call: &HttpCall, max_reply_bytes: u64) -> Upstream {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = Box::pin(async move {
        let request = build(call).map_err(|e| format!("cannot build the request: {e}"))?;
        let response = Fetch::Request(request).send_with_signal(&signal).await.map_err(|e| e.to_string())?;
        read(response, max_reply_bytes).await
    });
    let timer = Delay::from(Duration::from_millis(call.timeout_ms));
    match select(exchange, timer).await {
        Either::Left((Ok(reply), _)) => reply,
        Either::Left((Err(reason), _)) => Upstream::Failed(reason),
        Either::Right(_) => {
            controller.abort();
            Upstream::TimedOut { after_ms: call.timeout_ms }
        }
    }
}

fn build(call: &HttpCall) -> worker::Result<Request> {
    let headers = Headers::new();
    for (name, value) in &call.headers {
        headers.append(name, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(call.method.clone())).with_headers(headers);
    if let Some(body) = &call.body {
        init.with_body(Some(JsValue::from_str(body)));
    }
    Request::new_with_init(&call.url, &init)
}

async fn read(mut response: worker::Response, limit: u64) -> Result<Upstream, String> {
    let status = response.status_code();
    let content_type = response.headers().get("content-type").ok().flatten();
    let declared = response.headers().get("content-length").ok().flatten().and_then(|l| l.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Ok(Upstream::Reply { status, content_type, body: Vec::new(), truncated_at: Some(limit) });
    }
    let mut body = Vec::new();
    if matches!(response.body(), worker::ResponseBody::Empty) {
        return Ok(Upstream::Reply { status, content_type, body, truncated_at: None });
    }
    let mut stream = response.stream().map_err(|e| format!("cannot read the body: {e}"))?;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("reading the body failed: {e}"))?;
        body.extend_from_slice(&chunk);
        if body.len() as u64 > limit {
            return Ok(Upstream::Reply { status, content_type, body: Vec::new(), truncated_at: Some(limit) });
        }
    }
    Ok(Upstream::Reply { status, content_type, body, truncated_at: None })
}
