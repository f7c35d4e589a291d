//! HMAC-SHA256 signatures of what mcp-edge sends out and expects back: callback URLs' tokens
//! (`pending`), and 2026-07-28 request states (`protocol::mrtr`). Signatures are compared in
//! constant time.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The secret that signs callback URLs and 2026-07-28 request states.
pub const SIGNING_KEY: &str = "CALLBACK_SIGNING_KEY";

/// HMAC-SHA256 of `message` as lowercase hex.
pub fn mac_hex(key: &[u8], message: &[u8]) -> String {
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut m) => {
            m.update(message);
            hex(&m.finalize().into_bytes())
        }
        // HMAC takes keys of any length; this arm is never reached.
        Err(_) => String::new(),
    }
}

/// Whether `signature` (hex) is the HMAC-SHA256 of `message`, compared in constant time.
pub fn mac_matches(key: &[u8], message: &[u8], signature: &str) -> bool {
    let (Some(expected), Ok(mut m)) = (unhex(signature), Hmac::<Sha256>::new_from_slice(key)) else { return false };
    m.update(message);
    m.verify_slice(&expected).is_ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_matches_only_its_message_and_key() {
        let sig = mac_hex(b"key", b"message");
        assert_eq!(sig.len(), 64);
        assert!(mac_matches(b"key", b"message", &sig));
        assert!(!mac_matches(b"key", b"messagE", &sig));
        assert!(!mac_matches(b"other", b"message", &sig));
        assert!(!mac_matches(b"key", b"message", &sig[..62]));
        assert!(!mac_matches(b"key", b"message", &sig.replace(|c: char| c.is_ascii_digit(), "z")));
    }
}
