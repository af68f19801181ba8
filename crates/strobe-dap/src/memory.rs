//! `readMemory` and `writeMemory` through `debug_memory`'s address
//! targets. A read asks for `bytes`, which the daemon saves to a file in
//! its home (this adapter runs beside it as the same user): the file is
//! read, sent base64 and deleted. A write is split into 8-byte and 1-byte
//! scalar writes, 16 to a call; code is never written (the daemon refuses
//! it without `allowCodeWrite`, which the editor cannot ask for).

use crate::Tools;
use crate::adapter::Adapter;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The most bytes one `readMemory` returns (an editor's memory view asks
/// for a screenful at a time).
const READ_MAX: u64 = 1 << 20;
/// The most bytes one `writeMemory` writes.
const WRITE_MAX: usize = 4096;
/// `debug_memory` takes at most this many targets a call.
const TARGETS_PER_CALL: usize = 16;

/// `memoryReference` + `offset` as an address.
fn address(args: &Value) -> Result<u64, String> {
    let r = args["memoryReference"]
        .as_str()
        .ok_or("needs memoryReference (an address like \"0x7ffd1234\")")?;
    let base = u64::from_str_radix(r.trim().trim_start_matches("0x"), 16)
        .map_err(|_| format!("memoryReference {r:?} is not a hex address like \"0x7ffd1234\""))?;
    let offset = args["offset"].as_i64().unwrap_or(0);
    base.checked_add_signed(offset)
        .ok_or_else(|| format!("{r} + {offset} is outside the address space"))
}

impl<T: Tools> Adapter<T> {
    pub(crate) async fn read_memory(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.session_id()?;
        let at = address(args).map_err(|e| format!("readMemory {e}"))?;
        let count = args["count"].as_u64().ok_or("readMemory needs count")?;
        if count == 0 {
            return Ok(json!({"address": format!("{at:#x}")}));
        }
        if count > READ_MAX {
            return Err(format!(
                "readMemory reads at most {READ_MAX} bytes at a time; ask for less (count {count})"
            ));
        }
        let call = json!({"sessionId": id, "targets": [{"address": format!("{at:#x}"), "type": "bytes", "size": count}]});
        // With every target failing the tool answers an error; one
        // unreadable range is not an error in DAP.
        let v = match self.tools.call("debug_memory", call).await {
            Ok(v) => v,
            Err(e) if e.contains("nothing was read") => json!({"results": [{"error": e}]}),
            Err(e) => return Err(e),
        };
        let r = &v["results"][0];
        let Some(file) = r["file"].as_str() else {
            // Unreadable (unmapped or protected): DAP says so this way.
            return Ok(json!({"address": format!("{at:#x}"), "unreadableBytes": count}));
        };
        let bytes = std::fs::read(file).map_err(|e| format!("could not read {file}: {e}"))?;
        let _ = std::fs::remove_file(file);
        Ok(json!({"address": format!("{at:#x}"), "data": STANDARD.encode(bytes)}))
    }

    pub(crate) async fn write_memory(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.session_id()?;
        let at = address(args).map_err(|e| format!("writeMemory {e}"))?;
        let data = args["data"]
            .as_str()
            .ok_or("writeMemory needs data (base64)")?;
        let bytes = STANDARD
            .decode(data)
            .map_err(|e| format!("writeMemory's data is not base64: {e}"))?;
        if bytes.len() > WRITE_MAX {
            return Err(format!(
                "writeMemory writes at most {WRITE_MAX} bytes at a time ({} given)",
                bytes.len()
            ));
        }
        let targets = scalar_writes(at, &bytes);
        let mut written = 0usize;
        for chunk in targets.chunks(TARGETS_PER_CALL) {
            let items: Vec<Value> = chunk
                .iter()
                .map(|(a, ty, value, _)| json!({"address": format!("{a:#x}"), "type": ty, "value": value}))
                .collect();
            let call = json!({"sessionId": id, "action": "write", "targets": items});
            let v = self.tools.call("debug_memory", call).await?;
            for ((a, _, _, n), r) in chunk
                .iter()
                .zip(v["results"].as_array().cloned().unwrap_or_default())
            {
                if let Some(e) = r["error"].as_str() {
                    if written == 0 || args["allowPartial"] != true {
                        return Err(format!(
                            "writeMemory at {a:#x}: {e} ({written} bytes written before)"
                        ));
                    }
                    return Ok(json!({"bytesWritten": written}));
                }
                written += n;
            }
        }
        Ok(json!({"bytesWritten": written}))
    }
}

/// `bytes` at `at` as scalar writes: (address, type, value, size), 8 bytes
/// at a time (little-endian, as x86-64 and arm64 store them), then single
/// bytes.
fn scalar_writes(at: u64, bytes: &[u8]) -> Vec<(u64, &'static str, u64, usize)> {
    let mut out = Vec::new();
    let mut chunks = bytes.chunks_exact(8);
    let mut a = at;
    for c in &mut chunks {
        out.push((
            a,
            "u64",
            u64::from_le_bytes(c.try_into().expect("8 bytes")),
            8,
        ));
        a += 8;
    }
    for b in chunks.remainder() {
        out.push((a, "u8", u64::from(*b), 1));
        a += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_words_then_bytes_in_memory_order() {
        let w = scalar_writes(0x1000, &[1, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd]);
        assert_eq!(
            w,
            vec![
                (0x1000, "u64", 1, 8),
                (0x1008, "u8", 0xab, 1),
                (0x1009, "u8", 0xcd, 1)
            ]
        );
    }

    #[test]
    fn addresses_take_offsets_and_refuse_junk() {
        assert_eq!(
            address(&json!({"memoryReference": "0x10", "offset": -8})),
            Ok(8)
        );
        assert!(
            address(&json!({"memoryReference": "main"}))
                .unwrap_err()
                .contains("not a hex address")
        );
        assert!(address(&json!({})).is_err());
    }
}
