//! Bytes as lowercase hex and back: how digests and signatures are written.

/// `bytes` as lowercase hex, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    // By table, not `format!` per byte: trace and span ids are written on every traced hop.
    let digit = |n: u8| char::from_digit(u32::from(n), 16).unwrap_or('0');
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(digit(b >> 4));
        text.push(digit(b & 0xf));
    }
    text
}

/// The bytes that `text` (hex, either case) spells; `None` for an odd length or a non-hex digit.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    // `from_str_radix` alone would take a sign: "+f" is no hex byte.
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        assert_eq!(encode(&[0, 0x0f, 0xab, 0xff]), "000fabff");
        assert_eq!(decode("000fABff"), Some(vec![0, 0x0f, 0xab, 0xff]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
        assert_eq!(decode("+1"), None);
    }
}
