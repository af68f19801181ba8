//! The ring form of Python records: what the agent's tracer writes into the
//! record ring, more compact than the stored form ([`super`]'s layout),
//! because every byte of a traced call's records is written on the traced
//! thread. The daemon restores the stored form as it decodes a chunk, so
//! stored payloads stay self-describing and the ring form can change
//! without touching what earlier sessions stored.
//!
//! - A record with [`KIND_PYTHON`] carries its payload with the header cut
//!   to `u16 length (of the ring form, these 3 bytes included), u8 what`
//!   (agent/src/tracers/python/payload_c.ts, `put_py`).
//! - An exit record with [`KIND_INLINE`] has no payload: its return value
//!   is a scalar (None, a bool, an int that fits 64 bits, a float), its
//!   [`Tag`] in the kind's bits 16–23 and its bits (an `i64`, an `f64`'s)
//!   in the record's value word.

use super::{PY_PAYLOAD_MARK, Tag};

/// Record kind bit: the payload is the Python tracer's, in the ring form.
pub const KIND_PYTHON: u32 = 0x200;
/// Record kind bit: a Python exit whose scalar return value is in the record.
pub const KIND_INLINE: u32 = 0x800;

/// Bytes the ring form cuts from the stored header (`u32` marker, the
/// length's upper half and the version byte).
const CUT: usize = 7;
/// The stored form's format version the agent writes.
const VERSION: u8 = 2;

/// The stored form of a ring-form payload (`slots`: the record's payload
/// slots, padding included). `None` when the bytes are not a ring-form
/// payload (shorter than their header says, or than a header).
pub fn restore(slots: &[u8]) -> Option<Vec<u8>> {
    let len = u16::from_le_bytes([*slots.first()?, *slots.get(1)?]) as usize;
    if len < 3 || len > slots.len() {
        return None;
    }
    let mut out = stored_header(len + CUT, slots[2]);
    out.extend_from_slice(&slots[3..len]);
    Some(out)
}

/// The stored form of an inline exit's return value (`kind`: the record's
/// kind word, `value`: its value word). `None` when the kind holds no
/// scalar's tag.
pub fn inline_exit(kind: u32, value: u64) -> Option<Vec<u8>> {
    let tag = Tag::from_u8((kind >> 16) as u8)?;
    let body: &[u8] = match tag {
        Tag::None | Tag::True | Tag::False => &[],
        Tag::Int | Tag::Float => &value.to_le_bytes(),
        _ => return None,
    };
    let mut out = stored_header(10 + 1 + body.len(), 1);
    out.push(tag as u8);
    out.extend_from_slice(body);
    Some(out)
}

fn stored_header(len: usize, what: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&PY_PAYLOAD_MARK.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[VERSION, what]);
    out
}

#[cfg(test)]
mod tests {
    use super::super::{decode, return_key, thread_name};
    use super::*;
    use serde_json::json;

    /// A thread-name payload (what 4) in the ring form, in 32-byte slots.
    fn ring_thread_name(name: &str) -> Vec<u8> {
        let mut v = vec![0, 0, 4];
        v.extend_from_slice(&(name.len() as u16).to_le_bytes());
        v.extend_from_slice(name.as_bytes());
        let len = v.len() as u16;
        v[..2].copy_from_slice(&len.to_le_bytes());
        v.resize(v.len().div_ceil(32) * 32, 0xAA);
        v
    }

    #[test]
    fn a_ring_payload_is_restored_to_the_stored_form_without_its_padding() {
        let stored = restore(&ring_thread_name("worker-1")).unwrap();
        assert_eq!(stored.len(), 10 + 2 + 8);
        assert_eq!(&stored[4..8], &(20u32).to_le_bytes());
        assert_eq!(thread_name(&stored).as_deref(), Some("worker-1"));
    }

    #[test]
    fn a_ring_payload_shorter_than_its_header_says_is_refused() {
        let mut slots = ring_thread_name("x");
        slots[..2].copy_from_slice(&(1000u16).to_le_bytes());
        assert_eq!(restore(&slots), None);
        assert_eq!(restore(&[5]), None);
        assert_eq!(restore(&[2, 0, 4]), None);
    }

    #[test]
    fn inline_exits_decode_as_their_payload_would() {
        let kind = |tag: Tag| 2 | KIND_PYTHON | KIND_INLINE | (tag as u32) << 16;
        let int = inline_exit(kind(Tag::Int), (-7i64) as u64).unwrap();
        assert_eq!(
            decode(&int),
            json!({"returnValue": -7, "returnType": "int"})
        );
        assert_eq!(return_key(&int), Some((-7i64) as u64));
        let float = inline_exit(kind(Tag::Float), 2.5f64.to_bits()).unwrap();
        assert_eq!(decode(&float)["returnValue"], json!(2.5));
        let none = inline_exit(kind(Tag::None), 0).unwrap();
        assert_eq!(decode(&none)["returnType"], json!("NoneType"));
        assert_eq!(
            decode(&inline_exit(kind(Tag::True), 0).unwrap())["returnValue"],
            json!(true)
        );
        assert_eq!(inline_exit(kind(Tag::List), 0), None);
    }
}
