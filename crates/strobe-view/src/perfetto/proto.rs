//! The little protobuf encoding the Perfetto export needs, written by hand
//! instead of generated: varints, fixed64, doubles, strings and nested
//! messages, each as a tagged field. Field numbers come from Perfetto's
//! published `perfetto_trace.proto` (see `mod.rs`).

/// A message being built: its fields' encoded bytes.
#[derive(Debug, Default, Clone)]
pub struct Msg {
    buf: Vec<u8>,
}

/// Wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Msg {
    /// An empty message.
    pub fn new() -> Msg {
        Msg::default()
    }

    fn tag(&mut self, field: u32, wire: u8) {
        put_varint(&mut self.buf, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A varint field: uint32/64, enums, bools, and int64 (two's complement).
    pub fn varint(&mut self, field: u32, v: u64) -> &mut Msg {
        self.tag(field, VARINT);
        put_varint(&mut self.buf, v);
        self
    }

    /// A fixed64 field.
    pub fn fixed64(&mut self, field: u32, v: u64) -> &mut Msg {
        self.tag(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A double field.
    pub fn double(&mut self, field: u32, v: f64) -> &mut Msg {
        self.fixed64(field, v.to_bits())
    }

    /// A string field.
    pub fn string(&mut self, field: u32, s: &str) -> &mut Msg {
        self.bytes(field, s.as_bytes())
    }

    /// A bytes field.
    pub fn bytes(&mut self, field: u32, b: &[u8]) -> &mut Msg {
        self.tag(field, LEN);
        put_varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    /// A nested message field.
    pub fn message(&mut self, field: u32, m: &Msg) -> &mut Msg {
        self.bytes(field, &m.buf)
    }

    /// The encoded message.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Empties it for reuse, keeping its allocation.
    pub fn clear(&mut self) {
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_encode_as_protobuf_does() {
        // Known encodings: field 1 varint 150 = 08 96 01; field 2 string
        // "testing" = 12 07 74 65 73 74 69 6e 67.
        let mut m = Msg::new();
        m.varint(1, 150).string(2, "testing");
        assert_eq!(
            m.as_bytes(),
            &[
                0x08, 0x96, 0x01, 0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g'
            ]
        );
        let mut outer = Msg::new();
        outer.message(3, &m);
        assert_eq!(outer.as_bytes()[..2], [0x1a, 12]);
        let mut f = Msg::new();
        f.fixed64(47, 1);
        assert_eq!(f.as_bytes(), &[0xf9, 0x02, 1, 0, 0, 0, 0, 0, 0, 0]);
        let mut n = Msg::new();
        n.varint(4, (-1i64) as u64);
        assert_eq!(n.as_bytes().len(), 11, "a negative int64 takes ten bytes");
    }
}
