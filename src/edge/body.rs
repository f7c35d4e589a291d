//! Request bodies, read within their limits: never more than the server allows in memory, and
//! never nested deeper than it allows before they are parsed; form posts (the authorization
//! server's endpoints, the console's sign-in) within the two sizes forms may have.

use futures::StreamExt;

use crate::edge::http::Incoming;
use crate::error::Error;
use crate::jsonrpc;

/// The authorization server's forms (`/authorize`, `/token`, `/revoke`) are small.
pub const MAX_OAUTH_FORM_BYTES: u64 = 16 * 1024;
/// The console's sign-in forms are smaller still.
pub const MAX_CONSOLE_FORM_BYTES: u64 = 4 * 1024;

/// The body, or `PayloadTooLarge` as soon as it passes `limit` bytes.
pub async fn read_limited(req: &mut Incoming, limit: u64) -> Result<Vec<u8>, Error> {
    // A declared length within the limit is read in one call rather than chunk by chunk.
    let declared = req.header("content-length").and_then(|l| l.parse::<u64>().ok());
    if declared.is_some_and(|len| len <= limit) {
        let body = req.bytes().await.map_err(|e| Error::InvalidRequest(format!("reading the body failed: {e}")))?;
        return if body.len() as u64 > limit { Err(Error::PayloadTooLarge(limit)) } else { Ok(body) };
    }
    let Ok(mut stream) = req.stream() else { return Ok(Vec::new()) };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Error::InvalidRequest(format!("reading the body failed: {e}")))?;
        body.extend_from_slice(&chunk);
        if body.len() as u64 > limit {
            return Err(Error::PayloadTooLarge(limit));
        }
    }
    Ok(body)
}

/// Refuses bodies that nest deeper than the server allows, before they are parsed.
pub fn check_depth(body: &[u8], max: usize) -> Result<(), Error> {
    if jsonrpc::depth_within(body, max) {
        Ok(())
    } else {
        Err(Error::InvalidRequest(format!("the JSON nests deeper than {max} levels")))
    }
}

/// The body of a form POST, within `limit` bytes.
pub async fn form_body(req: &mut Incoming, limit: u64) -> Result<Vec<(String, String)>, Error> {
    let content_type = req.header("content-type").unwrap_or_default();
    if !content_type.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded") {
        return Err(crate::oauth::OAuthError::invalid_request("the body must be application/x-www-form-urlencoded").into());
    }
    let body = read_limited(req, limit).await.map_err(|e| match e {
        Error::PayloadTooLarge(limit) => crate::oauth::OAuthError::new(413, "invalid_request", format!("the body exceeds {limit} bytes")).into(),
        other => other,
    })?;
    let text = String::from_utf8(body).map_err(|_| crate::oauth::OAuthError::invalid_request("the body is not UTF-8"))?;
    Ok(crate::oauth::form(&text))
}
