//! HMAC-SHA256 signatures of what mcp-edge sends out and expects back: callback URLs' tokens
//! (`pending`), 2026-07-28 request states (`protocol::mrtr`), and the authorization server's
//! tokens and forms (`oauth`). Signatures are compared in constant time.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The secret that signs callback URLs and 2026-07-28 request states.
pub const SIGNING_KEY: &str = crate::keys::CALLBACK_SIGNING_KEY;

/// The signature of `message` for `purpose`: HMAC-SHA256 over `purpose.message`, as hex. Every
/// signature names what it is for, so one made for a purpose never verifies for another with
/// the same key (a request state is no callback token). Purposes are fixed names without a dot
/// at their end, and no purpose is another followed by a dot: the split is never ambiguous.
pub fn sign(key: &[u8], purpose: &str, message: &str) -> String {
    mac_hex(key, format!("{purpose}.{message}").as_bytes())
}

/// Whether `signature` is `sign(key, purpose, message)`, compared in constant time.
pub fn signed(key: &[u8], purpose: &str, message: &str, signature: &str) -> bool {
    mac_matches(key, format!("{purpose}.{message}").as_bytes(), signature)
}

/// HMAC-SHA256 of `message` as lowercase hex.
fn mac_hex(key: &[u8], message: &[u8]) -> String {
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut m) => {
            m.update(message);
            crate::hex::encode(&m.finalize().into_bytes())
        }
        // HMAC takes keys of any length; this arm is never reached.
        Err(_) => String::new(),
    }
}

/// Whether `signature` (hex) is the HMAC-SHA256 of `message`, compared in constant time.
fn mac_matches(key: &[u8], message: &[u8], signature: &str) -> bool {
    let (Some(expected), Ok(mut m)) = (unhex(signature), Hmac::<Sha256>::new_from_slice(key)) else { return false };
    m.update(message);
    m.verify_slice(&expected).is_ok()
}

/// `base64url(body).hex(HMAC-SHA256(purpose + "." + base64url(body)))`: a value that travels
/// through a client and must come back unaltered. The purpose keeps one kind of sealed value
/// from being accepted as another.
pub fn seal(key: &[u8], purpose: &str, body: &[u8]) -> String {
    let encoded = crate::base64::encode_url(body);
    let mac = mac_hex(key, format!("{purpose}.{encoded}").as_bytes());
    format!("{encoded}.{mac}")
}

/// The body of a value `seal` made with the same key and purpose; `None` for anything else.
pub fn unseal(key: &[u8], purpose: &str, sealed: &str) -> Option<Vec<u8>> {
    let (encoded, mac) = sealed.rsplit_once('.')?;
    if !mac_matches(key, format!("{purpose}.{encoded}").as_bytes(), mac) {
        return None;
    }
    crate::base64::decode_url(encoded)
}

/// A signature's bytes: 64 hex digits, or nothing.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    crate::hex::decode(text)
}

/// The bare HMAC, for tests of what earlier builds signed.
#[cfg(test)]
pub fn tests_mac(key: &[u8], message: &str) -> String {
    mac_hex(key, message.as_bytes())
}

/// A signature made before signatures named their purpose: `HMAC-SHA256(message)`. Only for
/// tokens that earlier builds handed out and that may still come back.
pub fn signed_without_purpose(key: &[u8], message: &str, signature: &str) -> bool {
    mac_matches(key, message.as_bytes(), signature)
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

    #[test]
    fn a_signature_is_for_one_purpose() {
        let sig = sign(b"key", "mrtr", "body");
        assert!(signed(b"key", "mrtr", "body", &sig));
        assert!(!signed(b"key", "callback", "body", &sig));
        assert_eq!(sig, mac_hex(b"key", b"mrtr.body"), "the bytes signed before purposes had names stay the same");
        // The same key's HMAC of the bare message HMAC is not the purposed one.
        assert!(!signed_without_purpose(b"key", "body", &sig));
    }

    #[test]
    fn sealed_values_open_only_with_their_key_and_purpose() {
        let sealed = seal(b"key", "authz", b"{\"a\":1}");
        assert_eq!(unseal(b"key", "authz", &sealed).as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(unseal(b"key", "csrf", &sealed), None);
        assert_eq!(unseal(b"other", "authz", &sealed), None);
        let (body, mac) = sealed.rsplit_once('.').unwrap();
        assert_eq!(unseal(b"key", "authz", &format!("{body}x.{mac}")), None);
        assert_eq!(unseal(b"key", "authz", "no-dot"), None);
    }
}
