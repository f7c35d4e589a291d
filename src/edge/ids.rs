//! Ids at the edge: fresh ones from the platform CSPRNG (sessions, calls, request ids; the
//! authorization server's ids, codes, tokens and secrets; nonces), and the check every session
//! id a client sends gets before it names a Durable Object.

use crate::error::Error;

/// Whether a callback token's session object name can be one: visible ASCII, and bounded so that
/// no hostile name reaches a Durable Object. The longest we make is 143 bytes: the prefix
/// `session:` (8), a self-proving session id (110), a colon and a principal's digest (25).
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 160 && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// A UUID v4 from the platform CSPRNG.
pub fn random_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::Internal(format!("no randomness for a session id: {e}")))?;
    Ok(uuid::Builder::from_random_bytes(bytes).into_uuid().to_string())
}

/// `bytes` random bytes as lowercase hex: the random part of a self-proving session id.
pub fn random_hex(bytes: usize) -> Result<String, Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| Error::Internal(format!("no randomness for a session id: {e}")))?;
    Ok(crate::hex::encode(&buffer))
}

/// `bytes` random bytes as base64url: ids, codes, tokens, secrets.
pub fn random(bytes: usize) -> Result<String, Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| Error::Internal(format!("no randomness: {e}")))?;
    Ok(crate::base64::encode_url(&buffer))
}

/// A 12-byte AES-GCM nonce.
pub fn nonce() -> Result<[u8; 12], Error> {
    let mut n = [0u8; 12];
    getrandom::fill(&mut n).map_err(|e| Error::Internal(format!("no randomness: {e}")))?;
    Ok(n)
}
