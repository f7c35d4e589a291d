//! The hop from the Worker to a session's Durable Object: the envelope sealed ahead of the
//! payload, the object named by session and principal, and retries of the transient failures.

use worker::{Env, Response};

use crate::envelope::Envelope;
use crate::error::Error;

/// Sends a request on to the session's Durable Object and passes its (streaming) answer through.
pub async fn forward(env: &Env, mut envelope: Envelope, payload: &[u8]) -> Result<Response, Error> {
    // Keyed by principal and id: another principal presenting this id reaches an empty object.
    if let Some(principal) = &envelope.principal {
        envelope.object = Some(crate::auth::object_name(&envelope.session_id, &principal.id));
    }
    envelope.config = crate::edge::live::version();
    let stub = crate::edge::hop::object_stub(env, envelope.object())?;
    let body = envelope.seal(payload);
    let mut attempt = 0;
    loop {
        match crate::edge::hop::send_to_object(&stub, &body).await {
            Ok(response) => return Ok(response),
            Err(error) => {
                let flag = |name: &str| match &error {
                    worker::Error::UnknownJsError { original, .. } => js_sys::Reflect::get(original, &name.into()).ok().and_then(|v| v.as_bool()) == Some(true),
                    _ => false,
                };
                let Some(wait) = crate::envelope::object_retry(attempt, flag("retryable"), flag("overloaded"), js_sys::Math::random()) else {
                    return Err(error.into());
                };
                worker::Delay::from(std::time::Duration::from_millis(wait)).await;
                attempt += 1;
            }
        }
    }
}
