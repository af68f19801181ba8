//! A chunk's events per (function, kind), as stored in `chunks.func_counts`:
//! what function filters count from without decoding the chunk.
//!
//! Two layouts. Chunks written since the fixed layout existed start with a
//! 0 byte, then one 9-byte entry per (function, kind) sorted by both:
//! function (u32 LE), kind (u8), count (u32 LE). A filter naming a few
//! functions binary-searches them: at 10 M events and 200 functions a
//! function filter reads ~2,400 of these, and parsing varints up to the
//! function asked for took longer than the rest of the query. Older chunks
//! hold varint triples (function, kind byte, count); a function id is never
//! 0, so their first byte is never 0.

use crate::codec::get_varint;
use std::collections::HashSet;

/// Marks the fixed layout.
const FIXED: u8 = 0;
/// Bytes per entry in the fixed layout.
const ENTRY: usize = 9;
/// Up to this many functions asked for, each is looked up by binary
/// search; more are matched in one pass.
const SEARCHED: usize = 16;

/// Encodes sorted (function, kind, count) entries in the fixed layout.
pub fn to_blob(entries: &[(u32, u8, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + entries.len() * ENTRY);
    out.push(FIXED);
    for (f, k, c) in entries {
        out.extend_from_slice(&f.to_le_bytes());
        out.push(*k);
        out.extend_from_slice(&c.to_le_bytes());
    }
    out
}

/// The entries of a blob of either layout (empty when malformed).
pub fn parse(blob: &[u8]) -> Vec<(u32, u8, u32)> {
    match fixed_entries(blob) {
        Some(entries) => (0..entries.len() / ENTRY)
            .map(|i| entry(entries, i))
            .collect(),
        None => varint_entries(blob)
            .map(|e| e.map(|(f, k, c)| (f, k, c as u32)))
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default(),
    }
}

/// Events of `funcs` whose kind bit is in `mask`.
pub fn count(blob: &[u8], funcs: &HashSet<u32>, mask: u32) -> u64 {
    let (Some(&first), Some(&last)) = (funcs.iter().min(), funcs.iter().max()) else {
        return 0;
    };
    let in_mask = |k: u8| mask & (1 << (u32::from(k) % 32)) != 0;
    let Some(entries) = fixed_entries(blob) else {
        // Stored sorted by function: stop past the last one asked for.
        return varint_entries(blob)
            .map_while(|e| e)
            .take_while(|(f, _, _)| *f <= last)
            .filter(|(f, k, _)| *f >= first && in_mask(*k) && funcs.contains(f))
            .map(|(_, _, c)| c)
            .sum();
    };
    let n = entries.len() / ENTRY;
    let sum_from = |mut i: usize, func: u32| {
        let mut total = 0u64;
        while i < n {
            let (f, k, c) = entry(entries, i);
            if f != func {
                break;
            }
            if in_mask(k) {
                total += u64::from(c);
            }
            i += 1;
        }
        total
    };
    if funcs.len() <= SEARCHED {
        funcs
            .iter()
            .map(|&func| sum_from(lower_bound(entries, n, func), func))
            .sum()
    } else {
        let start = lower_bound(entries, n, first);
        (start..n)
            .map(|i| entry(entries, i))
            .take_while(|(f, _, _)| *f <= last)
            .filter(|(f, k, _)| in_mask(*k) && funcs.contains(f))
            .map(|(_, _, c)| u64::from(c))
            .sum()
    }
}

/// The entries of a fixed-layout blob; `None` for the varint layout (a
/// fixed blob of a broken length is read as having no entries).
fn fixed_entries(blob: &[u8]) -> Option<&[u8]> {
    match blob.split_first() {
        Some((&FIXED, rest)) if rest.len() % ENTRY == 0 => Some(rest),
        Some((&FIXED, _)) => Some(&[]),
        _ => None,
    }
}

fn entry(entries: &[u8], i: usize) -> (u32, u8, u32) {
    let e = &entries[i * ENTRY..(i + 1) * ENTRY];
    (
        u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
        e[4],
        u32::from_le_bytes([e[5], e[6], e[7], e[8]]),
    )
}

/// The first entry whose function is at least `func`.
fn lower_bound(entries: &[u8], n: usize, func: u32) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if entry(entries, mid).0 < func {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The (function, kind, count) triples of a varint-layout blob; a `None`
/// item ends a malformed blob.
fn varint_entries(blob: &[u8]) -> impl Iterator<Item = Option<(u32, u8, u64)>> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= blob.len() {
            return None;
        }
        let mut next = || {
            let f = get_varint(blob, &mut pos).ok()?;
            let k = *blob.get(pos)?;
            pos += 1;
            let c = get_varint(blob, &mut pos).ok()?;
            Some((f as u32, k, c))
        };
        let entry = next();
        if entry.is_none() {
            pos = blob.len();
        }
        Some(entry)
    })
}

/// The varint layout, as chunks stored before the fixed one hold it.
#[cfg(test)]
fn varint_blob(entries: &[(u32, u8, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (f, k, c) in entries {
        crate::codec::put_varint(&mut out, u64::from(*f));
        out.push(*k);
        crate::codec::put_varint(&mut out, u64::from(*c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 300 functions, two kinds each (3 = enter, 4 = exit), counts varying.
    fn entries() -> Vec<(u32, u8, u32)> {
        (1..=300u32)
            .flat_map(|f| [(f, 3u8, f * 2), (f, 4u8, f * 2 + 1)])
            .collect()
    }

    fn by_hand(entries: &[(u32, u8, u32)], funcs: &HashSet<u32>, mask: u32) -> u64 {
        entries
            .iter()
            .filter(|(f, k, _)| funcs.contains(f) && mask & (1 << k) != 0)
            .map(|(_, _, c)| u64::from(*c))
            .sum()
    }

    #[test]
    fn both_layouts_count_every_kind_of_function_set_alike() {
        let e = entries();
        let fixed = to_blob(&e);
        let old = varint_blob(&e);
        assert_eq!(fixed[0], FIXED);
        assert_ne!(old[0], FIXED);
        assert_eq!(parse(&fixed), e);
        assert_eq!(parse(&old), e);
        let many: HashSet<u32> = (1..=300).filter(|f| f % 7 == 3).collect();
        for funcs in [
            HashSet::from([1]),
            HashSet::from([300]),
            HashSet::from([150, 2, 299]),
            HashSet::from([301]),
            HashSet::from([0]),
            HashSet::new(),
            many,
        ] {
            for mask in [u32::MAX, 1 << 3, 1 << 4, 1 << 5] {
                let want = by_hand(&e, &funcs, mask);
                assert_eq!(count(&fixed, &funcs, mask), want, "{funcs:?} {mask:#x}");
                assert_eq!(
                    count(&old, &funcs, mask),
                    want,
                    "{funcs:?} {mask:#x} (varints)"
                );
            }
        }
    }

    #[test]
    fn malformed_blobs_count_nothing_and_never_panic() {
        let fixed = to_blob(&entries());
        let funcs = HashSet::from([5]);
        assert_eq!(count(&fixed[..fixed.len() - 1], &funcs, u32::MAX), 0);
        assert!(parse(&fixed[..fixed.len() - 1]).is_empty());
        assert_eq!(count(&[], &funcs, u32::MAX), 0);
        assert_eq!(count(&[FIXED], &funcs, u32::MAX), 0);
        assert!(parse(&[0x85]).is_empty());
        assert_eq!(count(&[0x85], &funcs, u32::MAX), 0);
    }
}
