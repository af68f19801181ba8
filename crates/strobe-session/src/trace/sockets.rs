//! The agent's socket records (agent/src/sockets.ts) → the JSON body
//! of a `net` event: the program's own connects, accepts, sends, receives
//! and closes on its inet sockets, each with its peer and first bytes.

use serde_json::{Value, json};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Record kind of a socket record (low byte of the kind word).
pub(crate) const KIND_SOCKET: u32 = 7;

/// Bytes of the fixed part of a record's payload.
const HEADER: usize = 40;

/// The hooked function each record names (the agent's `SOCKET_FUNCTIONS`).
const FUNCTIONS: [&str; 16] = [
    "connect", "accept", "accept4", "send", "sendto", "sendmsg", "write", "writev", "recv",
    "recvfrom", "recvmsg", "read", "readv", "close", "dup2", "dup3",
];

/// The event body of one socket record's payload; `None` when it is too
/// short to be one.
pub(crate) fn socket_event(payload: &[u8]) -> Option<Value> {
    if payload.len() < HEADER {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([payload[o], payload[o + 1]]);
    let op = payload[0];
    let family = payload[1];
    let proto = if payload[2] == 2 { "udp" } else { "tcp" };
    let function = FUNCTIONS.get(payload[3] as usize).copied().unwrap_or("?");
    let fd = i32::from_le_bytes(payload[4..8].try_into().ok()?);
    let result = i64::from_le_bytes(payload[8..16].try_into().ok()?);
    let peer_port = u16_at(16);
    let local_port = u16_at(18);
    let head_len =
        (u32::from_le_bytes(payload[20..24].try_into().ok()?) as usize).min(payload.len() - HEADER);
    let head = &payload[HEADER..HEADER + head_len];
    let peer = (peer_port != 0).then(|| address(family, &payload[24..40], peer_port));
    let from_to = |word: &str| {
        peer.as_ref()
            .map(|p| format!(" {word} {p}"))
            .unwrap_or_default()
    };
    let mut doc = json!({
        "channel": "net",
        "dir": "program",
        "proto": proto,
        "function": function,
        "fd": fd,
    });
    if let Some(p) = &peer {
        doc["peer"] = json!(p);
    }
    if local_port != 0 {
        doc["localPort"] = json!(local_port);
    }
    let summary = match op {
        1 => {
            doc["op"] = json!("connect");
            doc["result"] = json!(result);
            match -result {
                0 => format!("program connected fd {fd}{}", from_to("to")),
                115 => format!("program connecting fd {fd}{} (in progress)", from_to("to")),
                111 => format!("program connect fd {fd}{}: refused", from_to("to")),
                e => format!(
                    "program connect fd {fd}{}: failed, errno {e}",
                    from_to("to")
                ),
            }
        }
        2 => {
            doc["op"] = json!("accept");
            doc["listenFd"] = json!(result);
            let on = if local_port != 0 {
                format!(" on port {local_port}")
            } else {
                String::new()
            };
            format!("program accepted fd {fd}{}{on}", from_to("from"))
        }
        3 | 4 => {
            let send = op == 3;
            doc["op"] = json!(if send { "send" } else { "recv" });
            doc["bytes"] = json!(result);
            // 0 bytes read: the peer closed (a stream); an empty datagram.
            if result == 0 && !send && proto == "tcp" {
                doc["eof"] = json!(true);
                format!("program recv on fd {fd}{}: end of stream", from_to("from"))
            } else {
                let (shown, is_text) = excerpt(head);
                doc[if is_text { "head" } else { "headHex" }] = json!(shown);
                let more = if (result as usize) > head.len() {
                    "…"
                } else {
                    ""
                };
                let shown = if is_text { format!("{shown:?}") } else { shown };
                format!(
                    "program {} {result} B on fd {fd}{}: {shown}{more}",
                    if send { "sent" } else { "received" },
                    from_to(if send { "to" } else { "from" }),
                )
            }
        }
        5 => {
            doc["op"] = json!("close");
            format!("program closed fd {fd}{}", from_to("to"))
        }
        _ => return None,
    };
    doc["summary"] = json!(summary);
    Some(doc)
}

/// `127.0.0.1:8080` or `[::1]:8080`.
fn address(family: u8, bytes: &[u8], port: u16) -> String {
    if family == 6 {
        let a: [u8; 16] = bytes[..16].try_into().expect("16 bytes");
        format!("[{}]:{port}", Ipv6Addr::from(a))
    } else {
        format!(
            "{}:{port}",
            Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])
        )
    }
}

/// The first bytes as text when they are printable UTF-8 (tabs and line
/// ends allowed), else as hex; and which it is.
fn excerpt(head: &[u8]) -> (String, bool) {
    // A multi-byte character cut at the end is not binary.
    let text = match std::str::from_utf8(head) {
        Ok(t) => Some(t),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    match text {
        Some(t)
            if t.chars()
                .all(|c| !c.is_control() || matches!(c, '\r' | '\n' | '\t')) =>
        {
            (t.to_string(), true)
        }
        _ => (head.iter().map(|b| format!("{b:02x}")).collect(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(op: u8, fn_index: u8, result: i64, peer: [u8; 4], port: u16, head: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; HEADER];
        p[0] = op;
        p[1] = 4;
        p[2] = 1;
        p[3] = fn_index;
        p[4..8].copy_from_slice(&7i32.to_le_bytes());
        p[8..16].copy_from_slice(&result.to_le_bytes());
        p[16..18].copy_from_slice(&port.to_le_bytes());
        p[18..20].copy_from_slice(&8080u16.to_le_bytes());
        p[20..24].copy_from_slice(&(head.len() as u32).to_le_bytes());
        p[24..28].copy_from_slice(&peer);
        p.extend_from_slice(head);
        p
    }

    #[test]
    fn a_receive_names_its_peer_and_first_bytes() {
        let e = socket_event(&record(
            4,
            11,
            120,
            [127, 0, 0, 1],
            51234,
            b"GET /items HTTP/1.1\r\n",
        ))
        .unwrap();
        assert_eq!(e["op"], "recv");
        assert_eq!(e["function"], "read");
        assert_eq!(e["peer"], "127.0.0.1:51234");
        assert_eq!(e["bytes"], 120);
        assert_eq!(e["head"], "GET /items HTTP/1.1\r\n");
        let s = e["summary"].as_str().unwrap();
        assert!(
            s.starts_with("program received 120 B on fd 7 from 127.0.0.1:51234: \"GET /items"),
            "{s}"
        );
        assert!(s.ends_with('…'), "{s}");
    }

    #[test]
    fn binary_bytes_are_hex_and_end_of_stream_is_said() {
        let e = socket_event(&record(3, 3, 3, [127, 0, 0, 1], 9, &[0, 1, 0xff])).unwrap();
        assert_eq!(e["headHex"], "0001ff");
        assert_eq!(e["op"], "send");
        let eof = socket_event(&record(4, 8, 0, [127, 0, 0, 1], 9, b"")).unwrap();
        assert_eq!(eof["eof"], true);
        assert!(eof["summary"].as_str().unwrap().contains("end of stream"));
    }

    #[test]
    fn connects_say_how_they_went_and_accepts_their_port() {
        let refused = socket_event(&record(1, 0, -111, [127, 0, 0, 1], 9, b"")).unwrap();
        assert!(
            refused["summary"]
                .as_str()
                .unwrap()
                .ends_with("127.0.0.1:9: refused")
        );
        let pending = socket_event(&record(1, 0, -115, [127, 0, 0, 1], 9, b"")).unwrap();
        assert!(pending["summary"].as_str().unwrap().contains("in progress"));
        let accepted = socket_event(&record(2, 2, 3, [127, 0, 0, 1], 5555, b"")).unwrap();
        assert_eq!(accepted["listenFd"], 3);
        assert_eq!(
            accepted["summary"],
            "program accepted fd 7 from 127.0.0.1:5555 on port 8080"
        );
    }

    #[test]
    fn a_short_or_unknown_record_is_no_event() {
        assert!(socket_event(&[4; 10]).is_none());
        assert!(socket_event(&record(9, 0, 0, [0; 4], 0, b"")).is_none());
    }
}
