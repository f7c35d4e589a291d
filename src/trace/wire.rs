//! The protobuf wire format, writing only: varints, fixed-width numbers, and length-delimited
//! fields (strings, bytes, nested messages). What OTLP's messages need and nothing more: a
//! protobuf library with generated code for the OTLP definitions would add its runtime and
//! the generated types to a module that has a size cap (docs/observability.md has the figures).

/// Wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// A message being written. Fields are written in the order they are called; default values
/// (0, "", empty) are written only when asked, as proto3 leaves them out.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    fn tag(&mut self, field: u32, wire: u32) {
        self.varint(u64::from((field << 3) | wire));
    }

    /// A `uint64`, `int32`, `int64` or enum field (negative values as their two's complement,
    /// as protobuf writes `int64`); left out when 0.
    pub fn uint(&mut self, field: u32, value: u64) {
        if value != 0 {
            self.tag(field, VARINT);
            self.varint(value);
        }
    }

    pub fn int(&mut self, field: u32, value: i64) {
        self.uint(field, value as u64);
    }

    pub fn bool(&mut self, field: u32, value: bool) {
        self.uint(field, u64::from(value));
    }

    pub fn fixed64(&mut self, field: u32, value: u64) {
        if value != 0 {
            self.tag(field, FIXED64);
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// A `fixed64` or `sfixed64` field written even when 0: a member of a oneof (a metric
    /// point's `as_int`), whose presence is its meaning.
    pub fn fixed64_always(&mut self, field: u32, value: u64) {
        self.tag(field, FIXED64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn fixed32(&mut self, field: u32, value: u32) {
        if value != 0 {
            self.tag(field, FIXED32);
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }

    pub fn double(&mut self, field: u32, value: f64) {
        if value != 0.0 {
            self.tag(field, FIXED64);
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// A `bytes` or `string` field; left out when empty.
    pub fn bytes(&mut self, field: u32, value: &[u8]) {
        if !value.is_empty() {
            self.tag(field, LEN);
            self.varint(value.len() as u64);
            self.buf.extend_from_slice(value);
        }
    }

    pub fn string(&mut self, field: u32, value: &str) {
        self.bytes(field, value.as_bytes());
    }

    /// A nested message, written by `write`; present even when empty (an empty message still
    /// says the field is set: `AnyValue{string_value: ""}` is not an unset value).
    pub fn message(&mut self, field: u32, write: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::new();
        write(&mut inner);
        self.tag(field, LEN);
        self.varint(inner.buf.len() as u64);
        self.buf.extend_from_slice(&inner.buf);
    }

    /// A packed repeated `fixed64` or `double` field (histogram bucket counts and bounds).
    pub fn packed_fixed64(&mut self, field: u32, values: impl ExactSizeIterator<Item = u64>) {
        if values.len() > 0 {
            self.tag(field, LEN);
            self.varint(values.len() as u64 * 8);
            for value in values {
                self.buf.extend_from_slice(&value.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_written_as_protobuf_writes_them() {
        let mut w = Writer::new();
        w.uint(1, 150);
        w.string(2, "testing");
        w.fixed64(3, 1);
        w.fixed32(4, 1);
        w.int(5, -1);
        w.uint(6, 0);
        w.string(7, "");
        w.message(8, |m| m.bool(1, true));
        w.message(9, |_| {});
        w.double(10, 0.5);
        w.packed_fixed64(11, [1u64, 2].into_iter());
        let expected: Vec<u8> = [
            vec![0x08, 0x96, 0x01],
            vec![0x12, 0x07],
            b"testing".to_vec(),
            vec![0x19, 1, 0, 0, 0, 0, 0, 0, 0],
            vec![0x25, 1, 0, 0, 0],
            vec![0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            vec![0x42, 0x02, 0x08, 0x01],
            vec![0x4a, 0x00],
            vec![0x51],
            0.5f64.to_le_bytes().to_vec(),
            vec![0x5a, 16, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
        ]
        .concat();
        assert_eq!(w.into_bytes(), expected);
    }
}
