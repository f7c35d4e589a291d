//! Standard base64 (RFC 4648, padded): binary upstream replies become image, audio and blob
//! content, and 2026-07-28 header values arrive in its `=?base64?…?=` sentinel. Also its URL
//! alphabet without padding, as JWTs, PKCE challenges and our own tokens use it.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        // `& 63` keeps the index inside the 64-entry alphabet.
        let sextet = |shift: u32| char::from(ALPHABET.get(((n >> shift) & 63) as usize).copied().unwrap_or(b'A'));
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// Whether `text` is padded standard base64, as MCP's `blob` and `data` fields require.
pub fn is_valid(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    padding <= 2
        && bytes
            .iter()
            .take(bytes.len() - padding)
            .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

/// The bytes of padded standard base64; `None` when it is not.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !is_valid(text) {
        return None;
    }
    let sextet = |c: u8| ALPHABET.iter().position(|&a| a == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for chunk in text.as_bytes().chunks(4) {
        let digits: Vec<u32> = chunk.iter().take_while(|&&c| c != b'=').map(|&c| sextet(c)).collect::<Option<_>>()?;
        let n = digits.iter().enumerate().fold(0u32, |n, (i, d)| n | (d << (18 - 6 * i as u32)));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(bytes.get(..digits.len().saturating_sub(1)).unwrap_or_default());
    }
    Some(out)
}

/// Unpadded base64url (RFC 4648 §5): JWT parts, PKCE challenges, our tokens.
pub fn encode_url(bytes: &[u8]) -> String {
    encode(bytes).trim_end_matches('=').chars().map(|c| match c {
        '+' => '-',
        '/' => '_',
        c => c,
    }).collect()
}

/// The bytes of unpadded base64url; `None` on any other character.
pub fn decode_url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        let cases = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")];
        for (plain, encoded) in cases {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert!(is_valid(encoded));
            assert_eq!(decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(encode(&[0xff, 0xfe, 0x00]), "//4A");
        assert_eq!(decode("//4A").as_deref(), Some(&[0xff, 0xfe, 0x00][..]));
        assert_eq!(decode("Zm9"), None);
        assert!(!is_valid("Zm9"));
        assert!(!is_valid("Zm9v!A=="));
        assert!(!is_valid("Z==="));
    }

    #[test]
    fn url_alphabet_without_padding() {
        assert_eq!(encode_url(&[0xff, 0xfe, 0x00, 0x01]), "__4AAQ");
        assert_eq!(decode_url("__4AAQ").as_deref(), Some(&[0xff, 0xfe, 0x00, 0x01][..]));
        assert_eq!(decode_url("Zm9vYg"), Some(b"foob".to_vec()));
        assert_eq!(decode_url("Zm9vYg=="), None);
        assert_eq!(decode_url("a+b"), None);
    }
}
