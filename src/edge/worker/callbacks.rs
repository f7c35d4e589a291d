//! `POST /callbacks/<token>`: where a callback tool's upstream delivers its result. The token's
//! signature is checked here, before anything reaches a session object: a forged or malformed
//! token gets 404. The session object applies a genuine one at most once (410 afterwards).

use worker::{Env, Method, Response};

use crate::signing::SIGNING_KEY;
use crate::edge::body::read_limited;
use crate::edge::forward::forward;
use crate::edge::ids::valid_session_id;
use crate::envelope::{Envelope, Op};
use crate::error::Error;

pub async fn receive(mut req: crate::edge::http::Incoming, env: &Env, token: &str) -> Result<Response, Error> {
    if req.method() != Method::Post {
        return Err(Error::MethodNotAllowed("POST"));
    }
    // Without a key no callback URL was ever handed out.
    let key = crate::edge::secret(env, SIGNING_KEY).ok_or(Error::UnknownCallback)?;
    let (object, call) = crate::pending::verify(key.as_bytes(), token).ok_or(Error::UnknownCallback)?;
    if !valid_session_id(&object) {
        return Err(Error::UnknownCallback);
    }
    let limit = crate::edge::live::served()?.servers.iter().map(|s| s.max_body_bytes).max().unwrap_or(0);
    let body = read_limited(&mut req, limit).await?;
    let content_type = req.header("content-type");
    let envelope = Envelope { op: Op::Callback, session_id: object, call: Some(call.to_string()), content_type, trace: req.trace().cloned(), ..Envelope::default() };
    forward(env, envelope, &body).await
}
