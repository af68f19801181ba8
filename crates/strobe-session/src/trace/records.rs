//! The agent's binary trace records → timeline events, and the capture
//! plans (per function and plan id) that render their typed values, stored
//! with the session.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use strobe_core::event::{
    Event, EventBatch, EventHeader, EventKind, FLAG_CAPTURE, FLAG_DETACHED, FLAG_JSON,
    FLAG_SAMPLED, FLAG_VALUE_TYPED,
};
use strobe_store::CaptureBlob;
use strobe_symbols::TypeTable;
use strobe_values::FunctionPlan;
use strobe_values::python;
use strobe_values::python::ring_form::{self, KIND_INLINE, KIND_PYTHON};

/// Record kind bit: the enter or exit pairs by `value` (agent/src/tracers/ring.ts).
const KIND_DETACHED: u32 = 0x400;

/// Size of one agent trace record slot (see agent/src/tracers/native/layout.ts).
pub const RECORD_SIZE: usize = 32;

/// A function's capture plan with the types it renders with.
#[derive(Debug)]
pub struct Decoder {
    /// The plan the agent executes.
    pub plan: FunctionPlan,
    /// Types of the function's image (a snapshot taken when the plan was built).
    pub types: Arc<TypeTable>,
    /// The image's index in the tracer (`None`: no DWARF signature, the
    /// plan only reads watches).
    pub module: Option<u32>,
}

/// Plans by (function id, plan id): records name the plan they were captured with.
pub type Decoders = HashMap<(u32, u16), Arc<Decoder>>;

/// [`CaptureBlob`] kind of an image's type table (id = image index).
pub const BLOB_TYPES: u32 = 1;
/// [`CaptureBlob`] kind of a plan (id = function id, sub = plan id).
pub const BLOB_PLAN: u32 = 2;

#[derive(Serialize, Deserialize)]
struct StoredDecoder {
    module: Option<u32>,
    plan: strobe_values::StoredPlan,
}

/// Blobs that store `decoders` with their session: each plan, and the type
/// table of each image in `tables` (the latest, complete snapshot: tables
/// only grow, so a type id a plan took from an earlier snapshot means the
/// same type in a later one).
pub fn decoders_to_blobs(
    decoders: &[(u32, Arc<Decoder>)],
    tables: &[(u32, Arc<TypeTable>)],
) -> Vec<CaptureBlob> {
    let mut out = Vec::new();
    for (m, table) in tables {
        match serde_json::to_vec(&**table) {
            Ok(body) => out.push(CaptureBlob {
                kind: BLOB_TYPES,
                id: *m,
                sub: 0,
                body,
            }),
            Err(e) => tracing::warn!("type table of image {m} not stored: {e}"),
        }
    }
    for (func, d) in decoders {
        let stored = StoredDecoder {
            module: d.module,
            plan: d.plan.to_stored(),
        };
        match serde_json::to_vec(&stored) {
            Ok(body) => out.push(CaptureBlob {
                kind: BLOB_PLAN,
                id: *func,
                sub: u32::from(d.plan.id),
                body,
            }),
            Err(e) => tracing::warn!("capture plan of function {func} not stored: {e}"),
        }
    }
    out
}

/// Rebuilds a session's decoders from its stored blobs; plans whose type
/// tables are missing or unreadable are left out (their events show raw
/// registers).
pub fn decoders_from_blobs(blobs: &[CaptureBlob]) -> Decoders {
    let mut tables: HashMap<u32, Arc<TypeTable>> = HashMap::new();
    for b in blobs.iter().filter(|b| b.kind == BLOB_TYPES) {
        match serde_json::from_slice::<TypeTable>(&b.body) {
            Ok(t) => {
                tables.insert(b.id, Arc::new(t));
            }
            Err(e) => tracing::warn!("stored type table {} unreadable: {e}", b.id),
        }
    }
    let empty = Arc::new(TypeTable::default());
    let mut out = Decoders::new();
    for b in blobs.iter().filter(|b| b.kind == BLOB_PLAN) {
        let Ok(stored) = serde_json::from_slice::<StoredDecoder>(&b.body) else {
            tracing::warn!("stored capture plan of function {} unreadable", b.id);
            continue;
        };
        let types = match stored.module {
            Some(m) => match tables.get(&m) {
                Some(t) => t.clone(),
                None => continue,
            },
            None => empty.clone(),
        };
        let Some(plan) = FunctionPlan::from_stored(stored.plan, &|m| tables.get(&m).cloned())
        else {
            continue;
        };
        out.insert(
            (b.id, plan.id),
            Arc::new(Decoder {
                plan,
                types,
                module: stored.module,
            }),
        );
    }
    out
}

/// What [`decode_records`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Events pushed into the batch.
    pub events: usize,
    /// Records that are not events were seen (a thread's name, a function
    /// the Python tracer defined): [`thread_names`] and
    /// [`defined_functions`] have something to read.
    pub side_records: bool,
}

/// Decodes agent records into events (timestamps rebased on the session
/// clock). A record's capture (typed values) is stored as is, flagged
/// [`FLAG_CAPTURE`]; [`typed_values`] renders it when queried.
/// `decoders` (the session's capture plans) let exits carry their typed
/// return value in `value` for chunk indexes (`FLAG_VALUE_TYPED`).
pub fn decode_records(
    data: &[u8],
    origin_ns: u64,
    pid: u32,
    decoders: Option<&Decoders>,
    batch: &mut EventBatch,
) -> Decoded {
    let mut n = 0;
    let mut side_records = false;
    let mut at = 0;
    while at + RECORD_SIZE <= data.len() {
        let rec = &data[at..at + RECORD_SIZE];
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().expect("4 bytes"));
        let raw_kind = u32_at(24);
        let extra = u32_at(28) as usize;
        let payload_at = at + RECORD_SIZE;
        at = payload_at + extra * RECORD_SIZE;
        if raw_kind & 0xff == super::sockets::KIND_SOCKET {
            // The program's own socket I/O: a `net` event.
            let slots = data.get(payload_at..at.min(data.len())).unwrap_or(&[]);
            if let Some(body) = super::sockets::socket_event(slots) {
                batch.push(
                    EventHeader {
                        ts_ns: u64_at(0).saturating_sub(origin_ns),
                        kind: EventKind::Net as u8,
                        flags: FLAG_JSON,
                        pid,
                        tid: u32_at(12),
                        ..Default::default()
                    },
                    body.to_string().as_bytes(),
                );
                n += 1;
            }
            continue;
        }
        let kind = match raw_kind & 0xff {
            1 => EventKind::FunctionEnter,
            2 => EventKind::FunctionExit,
            KIND_RAISED => EventKind::Exception,
            KIND_THREAD_NAME | KIND_FUNCTION => {
                side_records = true;
                continue;
            }
            _ => continue,
        };
        let mut flags = if raw_kind & 0x100 != 0 {
            FLAG_SAMPLED
        } else {
            0
        };
        if raw_kind & KIND_DETACHED != 0 {
            flags |= FLAG_DETACHED;
        }
        let slots = data.get(payload_at..at.min(data.len())).unwrap_or(&[]);
        let restored = python_payload(raw_kind, u64_at(16), slots);
        let mut payload = restored.as_deref().unwrap_or(slots);
        if payload.len() >= 8 {
            let len = u32::from_le_bytes(payload[4..8].try_into().expect("4")) as usize;
            payload = &payload[..len.min(payload.len())];
            flags |= FLAG_CAPTURE;
        } else {
            payload = &[];
        }
        let func_id = u32_at(8);
        let mut value = u64_at(16);
        let header = |kind: EventKind, flags: u8, value: u64| EventHeader {
            ts_ns: u64_at(0).saturating_sub(origin_ns),
            kind: kind as u8,
            flags,
            pid,
            func_id,
            tid: u32_at(12),
            value,
            ..Default::default()
        };
        if kind == EventKind::Exception {
            // Raised in a traced Python function (caught there or not).
            if let Some((ty, message, line)) = python::raised(payload) {
                // Line 0: not known (the JavaScript tracer learns what was
                // thrown where it is caught, not where it was thrown).
                let mut body = serde_json::json!({"exceptionType": ty, "message": message});
                if line != 0 {
                    body["line"] = line.into();
                }
                batch.push(
                    header(EventKind::Exception, FLAG_JSON, 0),
                    body.to_string().as_bytes(),
                );
                n += 1;
            }
            continue;
        }
        if flags & FLAG_CAPTURE != 0 && python::is_python(payload) {
            if kind == EventKind::FunctionExit {
                // An exception leaving the function is also an event of its
                // own, just before the exit it caused, unless it was raised
                // right there (that was its event).
                if let Some((ty, message)) = python::exception_of(payload) {
                    if !python::raised_in_frame(payload) {
                        let body = serde_json::json!({"exceptionType": ty, "message": message});
                        batch.push(
                            header(EventKind::Exception, FLAG_JSON, 0),
                            body.to_string().as_bytes(),
                        );
                        n += 1;
                    }
                } else if let Some(key) = python::return_key(payload)
                    && flags & FLAG_DETACHED == 0
                {
                    // (A detached exit's value is its pairing key.)
                    flags |= FLAG_VALUE_TYPED;
                    value = key;
                }
            }
            batch.push(header(kind, flags, value), payload);
            n += 1;
            continue;
        }
        if kind == EventKind::FunctionExit && flags & FLAG_CAPTURE != 0 {
            let plan_id = u32::from_le_bytes(payload[0..4].try_into().expect("4")) as u16;
            if let Some(key) = decoders
                .and_then(|d| d.get(&(func_id, plan_id)))
                .and_then(|d| d.plan.return_key(&d.types, payload))
            {
                value = key;
                flags |= FLAG_VALUE_TYPED;
            }
        }
        batch.push(header(kind, flags, value), payload);
        n += 1;
    }
    Decoded {
        events: n,
        side_records,
    }
}

/// Record kind of an exception raised in a traced Python function.
const KIND_RAISED: u32 = 6;
/// Record kind of a thread's name (the Python tracer's, from `threading`).
const KIND_THREAD_NAME: u32 = 4;
/// Record kind of a function the Python tracer matched at run time.
const KIND_FUNCTION: u32 = 5;

/// The stored form of a Python record's payload, from the ring form
/// ([`ring_form`]); `None` for a native record (its payload is stored as
/// it is). A Python record whose payload cannot be read gets an empty
/// one (stored without values), never its raw slots.
fn python_payload(raw_kind: u32, value: u64, slots: &[u8]) -> Option<Vec<u8>> {
    if raw_kind & KIND_PYTHON == 0 {
        return None;
    }
    let restored = if raw_kind & KIND_INLINE != 0 {
        ring_form::inline_exit(raw_kind, value)
    } else {
        ring_form::restore(slots)
    };
    Some(restored.unwrap_or_default())
}

/// The records of one kind (low byte of the kind word): (function id,
/// thread id, payload in its stored form), in record order.
fn records_of_kind(data: &[u8], kind: u32) -> Vec<(u32, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + RECORD_SIZE <= data.len() {
        let rec = &data[at..at + RECORD_SIZE];
        let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().expect("4 bytes"));
        let extra = u32_at(28) as usize;
        let end = (at + RECORD_SIZE + extra * RECORD_SIZE).min(data.len());
        let raw_kind = u32_at(24);
        if raw_kind & 0xff == kind {
            let slots = &data[at + RECORD_SIZE..end];
            let payload = python_payload(raw_kind, 0, slots).unwrap_or_else(|| slots.to_vec());
            out.push((u32_at(8), u32_at(12), payload));
        }
        at += RECORD_SIZE + extra * RECORD_SIZE;
    }
    out
}

/// The thread names records carry: (tid, name), in record order.
pub fn thread_names(data: &[u8]) -> Vec<(u32, String)> {
    records_of_kind(data, KIND_THREAD_NAME)
        .into_iter()
        .filter_map(|(_, tid, payload)| Some((tid, python::thread_name(&payload)?)))
        .collect()
}

/// The functions records define (the Python tracer's run-time matches:
/// code without a source file, named by its function object), for the
/// store's function table, before the events that name them.
pub fn defined_functions(data: &[u8]) -> Vec<strobe_store::FunctionRow> {
    records_of_kind(data, KIND_FUNCTION)
        .into_iter()
        .filter_map(|(func_id, _, payload)| {
            let (name, file, line) = python::defined_function(&payload)?;
            Some(strobe_store::FunctionRow {
                func_id,
                name,
                name_raw: None,
                file: Some(file),
                line: Some(line),
            })
        })
        .collect()
}

/// Typed values of a traced call (`arguments` / `returnValue` /
/// `watchValues`) from its stored capture; `None` when the event has no
/// capture or its plan is unknown (e.g. recorded by an earlier daemon).
pub fn typed_values(decoders: &Decoders, e: &Event) -> Option<serde_json::Value> {
    typed_of(decoders, &e.header, &e.payload)
}

/// [`typed_values`] on a header and payload.
pub fn typed_of(decoders: &Decoders, h: &EventHeader, payload: &[u8]) -> Option<serde_json::Value> {
    typed_in(Some(decoders), h, payload)
}

/// [`typed_of`] for a session that may have no capture plans: Python
/// payloads describe themselves and need none.
pub fn typed_in(
    decoders: Option<&Decoders>,
    h: &EventHeader,
    payload: &[u8],
) -> Option<serde_json::Value> {
    if h.flags & FLAG_CAPTURE == 0 || payload.len() < 8 {
        return None;
    }
    if python::is_python(payload) {
        return Some(python::decode(payload));
    }
    let decoders = decoders?;
    let plan_id = u32::from_le_bytes(payload[0..4].try_into().expect("4")) as u16;
    let d = decoders.get(&(h.func_id, plan_id))?;
    Some(if h.kind == EventKind::FunctionEnter as u8 {
        d.plan.decode_enter(&d.types, payload)
    } else {
        d.plan.decode_exit(&d.types, payload)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decode_and_rebase() {
        let mut data = Vec::new();
        for (ts, func, tid, value, kind) in [
            (1_000u64, 7u32, 42u32, 5u64, 1u32),
            (1_500, 7, 42, 6, 2),
            (0, 0, 0, 0, 0),
        ] {
            data.extend_from_slice(&ts.to_le_bytes());
            data.extend_from_slice(&func.to_le_bytes());
            data.extend_from_slice(&tid.to_le_bytes());
            data.extend_from_slice(&value.to_le_bytes());
            data.extend_from_slice(&kind.to_le_bytes());
            data.extend_from_slice(&0u32.to_le_bytes());
        }
        let mut b = EventBatch::default();
        assert_eq!(
            decode_records(&data, 400, 99, None, &mut b).events,
            2,
            "unwritten slots are skipped"
        );
        assert_eq!(b.headers[0].ts_ns, 600);
        assert_eq!(b.headers[0].kind, EventKind::FunctionEnter as u8);
        assert_eq!(
            (
                b.headers[1].func_id,
                b.headers[1].tid,
                b.headers[1].value,
                b.headers[1].pid
            ),
            (7, 42, 6, 99)
        );
    }

    fn record(data: &mut Vec<u8>, ts: u64, value: u64, kind: u32, payload: &[u8]) {
        data.extend_from_slice(&ts.to_le_bytes());
        data.extend_from_slice(&9u32.to_le_bytes());
        data.extend_from_slice(&42u32.to_le_bytes());
        data.extend_from_slice(&value.to_le_bytes());
        data.extend_from_slice(&kind.to_le_bytes());
        let slots = payload.len().div_ceil(RECORD_SIZE);
        data.extend_from_slice(&(slots as u32).to_le_bytes());
        data.extend_from_slice(payload);
        data.resize(data.len() + slots * RECORD_SIZE - payload.len(), 0xAA);
    }

    #[test]
    fn python_records_in_the_ring_form_are_stored_in_the_stored_form() {
        // enter(n=5) in the ring form: u16 length, what 0, one argument.
        let mut enter = vec![0, 0, 0, 1, 1, 0, b'n', 3];
        enter.extend_from_slice(&5u64.to_le_bytes());
        let len = enter.len() as u16;
        enter[..2].copy_from_slice(&len.to_le_bytes());
        let mut data = Vec::new();
        record(&mut data, 1_000, 0, 1 | KIND_PYTHON, &enter);
        // exit returning 25, inline: Tag::Int (3) in bits 16-23.
        record(
            &mut data,
            1_200,
            25,
            2 | KIND_PYTHON | KIND_INLINE | 3 << 16,
            &[],
        );
        // A Python enter whose header claims more than its slots hold.
        record(&mut data, 1_300, 0, 1 | KIND_PYTHON, &[0xff, 0x7f, 0, 1]);
        let mut b = EventBatch::default();
        assert_eq!(decode_records(&data, 0, 1, None, &mut b).events, 3);
        assert_eq!(
            b.headers[2].flags & FLAG_CAPTURE,
            0,
            "an unreadable payload is dropped, not stored raw"
        );
        let event = |i: usize| (b.headers[i], b.payload_of(&b.headers[i]).to_vec());
        let (h, p) = event(0);
        assert!(python::is_python(&p), "stored self-describing: {p:?}");
        assert_eq!(
            typed_in(None, &h, &p).unwrap()["arguments"][0],
            serde_json::json!({"name": "n", "type": "int", "value": 5})
        );
        let (h, p) = event(1);
        assert_eq!(h.flags & FLAG_VALUE_TYPED, FLAG_VALUE_TYPED);
        assert_eq!(h.value, 25);
        assert_eq!(typed_in(None, &h, &p).unwrap()["returnValue"], 25);
    }
}
