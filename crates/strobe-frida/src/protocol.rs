//! Length-prefixed binary frames between the daemon and a bridge.
//!
//! Frame: `u32` little-endian length of what follows, `u8` kind, payload.
//! See `python/bridge.py` for the other side.

use std::io::{self, Read, Write};

/// Daemon → bridge: a JSON request `{"id", "op", …}`.
pub const REQUEST: u8 = 0x01;
/// Daemon → bridge: a message for the agent (`u32` JSON length, JSON, data).
pub const POST: u8 = 0x02;
/// Bridge → daemon: a JSON response `{"id", "ok", …}`.
pub const RESPONSE: u8 = 0x41;
/// Bridge → daemon: an agent message, undecoded (`u32` length, text, data).
pub const MESSAGE: u8 = 0x42;
/// Bridge → daemon: a JSON notice `{"event", …}` (ready, detached, fatal).
pub const NOTICE: u8 = 0x43;

/// Largest frame accepted (agent chunks are far smaller).
pub const MAX_FRAME: usize = 256 << 20;

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, kind: u8, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len() + 1)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut header = [0u8; 5];
    header[..4].copy_from_slice(&len.to_le_bytes());
    header[4] = kind;
    w.write_all(&header)?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame; `Ok(None)` on a clean end of stream.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut header = [0u8; 5];
    match r.read_exact(&mut header[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut header[1..])?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad frame length {len}"),
        ));
    }
    let mut payload = vec![0u8; len - 1];
    r.read_exact(&mut payload)?;
    Ok(Some((header[4], payload)))
}

/// Builds a length-prefixed pair `u32 len, first, rest` (POST and MESSAGE payloads).
pub fn pack_pair(first: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + first.len() + rest.len());
    out.extend_from_slice(&(first.len() as u32).to_le_bytes());
    out.extend_from_slice(first);
    out.extend_from_slice(rest);
    out
}

/// Splits a `u32 len, first, rest` payload.
pub fn unpack_pair(payload: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize;
    let first = payload.get(4..4 + len)?;
    Some((first, &payload[4 + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_eof_is_clean() {
        let mut buf = Vec::new();
        write_frame(&mut buf, REQUEST, b"{\"id\":1}").unwrap();
        write_frame(&mut buf, POST, &pack_pair(b"{}", &[0, 1, 2])).unwrap();
        let mut r = &buf[..];
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Some((REQUEST, b"{\"id\":1}".to_vec()))
        );
        let (kind, p) = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(kind, POST);
        assert_eq!(unpack_pair(&p), Some((&b"{}"[..], &[0u8, 1, 2][..])));
        assert_eq!(read_frame(&mut r).unwrap(), None);
    }

    #[test]
    fn garbage_lengths_are_rejected() {
        let mut r = &[0u8, 0, 0, 0, 1][..];
        assert!(read_frame(&mut r).is_err());
        let mut r = &[5u8, 0, 0][..];
        assert!(read_frame(&mut r).is_err(), "truncated header");
        assert!(unpack_pair(&[9, 0, 0, 0, 1]).is_none());
    }
}
