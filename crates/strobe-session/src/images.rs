//! Where an image is loaded in a process: its runtime base from
//! `/proc/PID/maps` and the ELF program headers (GNU ld and lld lay
//! segments out differently, and Frida maps some files again, whole).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// Runtime base of an image in a process, computed from its executable
/// mapping as [`image_at`] does (the lowest mapping of the path is wrong
/// when Frida maps the file again, whole, to read it, and for lld output);
/// the lowest mapping when none is executable.
pub fn module_base(pid: u32, path: &Path) -> Option<u64> {
    let maps = match crate::procfs::maps(pid) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("cannot read /proc/{pid}/maps: {e}");
            return None;
        }
    };
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut lowest: Option<u64> = None;
    for m in maps.iter().filter(|m| m.maps_file(path, &canonical)) {
        lowest = Some(lowest.map_or(m.start, |l| l.min(m.start)));
        if m.executable() {
            let shift = segment_shift(Path::new(&m.path), m.offset).unwrap_or(0);
            return Some(m.start.wrapping_sub(m.offset).wrapping_sub(shift));
        }
    }
    lowest
}

/// The image mapped at `addr` in a process, and its runtime base (where
/// its lowest address is loaded, what symbol offsets count from): the
/// mapping's start less the address its file offset has in the ELF's
/// program headers, relative to the lowest (GNU ld gives segments equal
/// offsets and addresses; lld, which Rust uses, shifts them by a page). The lowest
/// mapping of the path is not used: Frida maps some files again, whole, to
/// read them.
pub fn image_at(pid: u32, addr: u64) -> Option<(PathBuf, u64)> {
    let maps = crate::procfs::maps(pid).ok()?;
    let m = maps.iter().find(|m| m.contains(addr))?;
    if !m.is_file() {
        return None;
    }
    let shift = segment_shift(Path::new(&m.path), m.offset).unwrap_or(0);
    Some((
        PathBuf::from(&m.path),
        m.start.wrapping_sub(m.offset).wrapping_sub(shift),
    ))
}

/// `p_vaddr - p_offset` of the loadable segment that holds file offset
/// `offset` (0 for GNU ld output), less the image's lowest address; cached
/// per path and modification time
/// (a rebuilt program gets read again).
fn segment_shift(path: &Path, offset: u64) -> Option<u64> {
    type Segments = Vec<(u64, u64, u64)>;
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, (SystemTime, Segments)>>> = OnceLock::new();
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .expect("segment cache lock");
    if cache.get(path).is_none_or(|(at, _)| *at != modified) {
        let segments = load_segments(path).unwrap_or_default();
        cache.insert(path.to_path_buf(), (modified, segments));
    }
    let segments = &cache[path].1;
    // A page can hold the end of one segment and the start of the next:
    // the segment that starts in the mapping's first page is the one mapped.
    segments
        .iter()
        .find(|(file_offset, _, _)| file_offset & !0xfff == offset)
        .or_else(|| {
            segments.iter().find(|(file_offset, size, _)| {
                *file_offset <= offset && offset < file_offset + size
            })
        })
        .map(|(file_offset, _, vaddr)| {
            // Symbol offsets count from the image's lowest address (0 for
            // PIE, 0x400000 for a classic executable).
            let lowest = segments.iter().map(|s| s.2).min().unwrap_or(0) & !0xfff;
            vaddr.wrapping_sub(*file_offset).wrapping_sub(lowest)
        })
}

/// `(p_offset, p_filesz, p_vaddr)` of each PT_LOAD of a 64-bit little-endian ELF.
fn load_segments(path: &Path) -> Option<Vec<(u64, u64, u64)>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    f.read_exact(&mut header).ok()?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let (phoff, entsize, count) = (
        u64_at(&header, 32),
        u16_at(&header, 54),
        u16_at(&header, 56),
    );
    if entsize < 56 || count > 4096 {
        return None;
    }
    let mut table = vec![0u8; (entsize * count) as usize];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    const PT_LOAD: u32 = 1;
    Some(
        table
            .chunks(entsize as usize)
            .filter(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]) == PT_LOAD)
            .map(|e| (u64_at(e, 8), u64_at(e, 32), u64_at(e, 16)))
            .collect(),
    )
}
