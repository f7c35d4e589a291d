//! The Rust floor: the fetch-only worker's work, in Rust on the `worker` crate.

use serde_json::{json, Value};
use worker::{event, Context, Env, Fetch, Headers, Method, Request, RequestInit, Response, Result};

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let call: Value = req.json().await?;
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(
            call.pointer("/params/arguments")
                .cloned()
                .unwrap_or(Value::Null)
                .to_string()
                .into(),
        ));
    let url = format!("{}/echo", env.var("UPSTREAM_URL")?);
    let mut reply = Fetch::Request(Request::new_with_init(&url, &init)?)
        .send()
        .await?;
    let result: Value = reply.json().await?;
    Response::from_json(&json!({
        "jsonrpc": "2.0",
        "id": call.get("id").cloned().unwrap_or(Value::Null),
        "result": { "content": [{ "type": "text", "text": result.to_string() }], "structuredContent": result },
    }))
}
