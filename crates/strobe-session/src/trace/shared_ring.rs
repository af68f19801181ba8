//! The agent's record ring, mapped from the target: the agent allocates it
//! as a memfd (agent/src/tracers/native/shared_ring.ts) and offers it; the
//! daemon opens it through `/proc/<pid>/fd/<fd>`, maps it shared, and from
//! then on takes committed records out of it itself, with no Frida message,
//! no bridge and no copy between the target's memory and the decoder.
//!
//! The layout and the protocol are the agent's (agent/src/tracers/ring.ts):
//! a 64-byte header (u64 head: slots reserved; u64 tail: slots released),
//! then 32-byte slots. A writer reserves slots by moving the head, fills
//! them, and writes the record's `kind` last; a slot whose kind is 0 is not
//! written yet. Records never cross the ring's end (a padding record fills
//! it). The reader owns the tail: it reads whole committed records from the
//! tail, zeroes the slots and moves the tail on, which makes room for
//! writers. Slots between the tail and the first uncommitted slot never
//! change while the reader holds them, which is what makes handing them to
//! the decoder as a plain slice sound.
//!
//! The mapping outlives the process: what was committed before a crash or
//! a `kill -9` is still read after it. So are the records threads had
//! staged and not yet moved into the ring (agent/src/tracers/native/stage.ts):
//! the stages follow the ring in the memfd, and [`SharedRing::staged`] reads
//! them once the process is gone.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::RECORD_SIZE;

/// Bytes before the first slot: the head, the tail, padding to a cache line.
const HEADER: u64 = 64;
/// Most slots a ring may have (the agent's has 2^18).
const MAX_SLOTS: u64 = 1 << 24;
/// Most slots one record takes: its header and the largest payload
/// (agent/src/tracers/ring.ts PAYLOAD_MAX, 16 KiB).
const MAX_RECORD_SLOTS: u64 = 1 + 16384 / RECORD_SIZE as u64;
/// Offset of `kind` and `extra` in a slot.
const KIND_AT: usize = 24;
const EXTRA_AT: usize = 28;
/// What the target's memfd is called (its `/proc/<pid>/fd` link).
const MEMFD_NAME: &str = "/memfd:strobe-ring";

/// A ring that could not be mapped, or whose contents break its rules.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    /// The offer's size is not a ring's.
    #[error("a ring of {0} bytes is not 64 bytes plus a power of two of 32-byte slots (≤ 2^24)")]
    Size(u64),
    /// The descriptor could not be opened or is not the agent's memfd.
    #[error("cannot open {path}: {why}")]
    Open {
        /// `/proc/<pid>/fd/<fd>`.
        path: String,
        /// The system's answer, or what the descriptor is instead.
        why: String,
    },
    /// The offer's stage area is not one the agent lays out.
    #[error(
        "a stage area of {bytes} bytes with {records} records per stage is not the agent's layout"
    )]
    Stages {
        /// Its bytes.
        bytes: u64,
        /// Records per stage.
        records: u32,
    },
    /// mmap refused.
    #[error("cannot map the ring: {0}")]
    Map(std::io::Error),
    /// A committed record is impossible (the program wrote over the ring).
    #[error("record at slot {slot} is corrupt ({why})")]
    Corrupt {
        /// Where (absolute slot number).
        slot: u64,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// A target's record ring, mapped shared into the daemon.
#[derive(Debug)]
pub struct SharedRing {
    base: NonNull<u8>,
    len: usize,
    slots: u64,
    /// Records per stage (0: no stage area after the ring).
    stage_records: u32,
}

/// Bytes of a stage's header (lock, in use, head, flushed, padding).
const STAGE_HEADER: usize = 64;
/// Most records a stage may hold, and most bytes a stage area may have.
const MAX_STAGE_RECORDS: u32 = 1 << 12;
const MAX_STAGE_AREA: u64 = 64 << 20;

/// What the threads' stages held when the process ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Staged {
    /// Their records, each stage's in the order its thread made them.
    pub records: Vec<u8>,
    /// Records of stages caught being moved into the ring (some may be
    /// stored from the ring, the rest are lost): counted as dropped.
    pub unsure: u64,
}

// The mapping is plain shared memory; the reader's side of the ring
// protocol is one thread's (the drain's), the rest is atomics.
unsafe impl Send for SharedRing {}
unsafe impl Sync for SharedRing {}

impl SharedRing {
    /// Maps the ring the agent of process `pid` offered: its memfd `fd`,
    /// `bytes` long, followed by `stage_bytes` of stages holding
    /// `stage_records` records each (0 bytes: none). Only a descriptor that
    /// is the agent's memfd is mapped.
    pub fn open(
        pid: u32,
        fd: i32,
        bytes: u64,
        stage_bytes: u64,
        stage_records: u32,
    ) -> Result<SharedRing, RingError> {
        let slots = bytes.saturating_sub(HEADER) / RECORD_SIZE as u64;
        if bytes != HEADER + slots * RECORD_SIZE as u64
            || !slots.is_power_of_two()
            || !(MAX_RECORD_SLOTS..=MAX_SLOTS).contains(&slots)
        {
            return Err(RingError::Size(bytes));
        }
        let stage_size = STAGE_HEADER as u64 + u64::from(stage_records) * RECORD_SIZE as u64;
        if stage_bytes != 0
            && (!stage_records.is_power_of_two()
                || stage_records > MAX_STAGE_RECORDS
                || !(64..=MAX_STAGE_AREA).contains(&stage_bytes)
                || !(stage_bytes - 64).is_multiple_of(stage_size))
        {
            return Err(RingError::Stages {
                bytes: stage_bytes,
                records: stage_records,
            });
        }
        let stage_records = if stage_bytes == 0 { 0 } else { stage_records };
        let bytes = bytes + stage_bytes;
        let path = format!("/proc/{pid}/fd/{fd}");
        let open_err = |why: String| RingError::Open {
            path: path.clone(),
            why,
        };
        let link = std::fs::read_link(&path).map_err(|e| open_err(e.to_string()))?;
        if !link.to_string_lossy().starts_with(MEMFD_NAME) {
            return Err(open_err(format!(
                "it is {}, not the agent's ring",
                link.display()
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| open_err(e.to_string()))?;
        let size = file.metadata().map_err(|e| open_err(e.to_string()))?.len();
        if size < bytes {
            return Err(open_err(format!("it holds {size} bytes, not {bytes}")));
        }
        // SAFETY: a fresh shared mapping of a file we hold open; the file
        // may be closed after mmap without unmapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(RingError::Map(std::io::Error::last_os_error()));
        }
        Ok(SharedRing {
            base: NonNull::new(p.cast()).expect("mmap returned a mapping"),
            len: bytes as usize,
            slots,
            stage_records,
        })
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: the header's words are 8-aligned (the mapping is
        // page-aligned) and inside the mapping.
        unsafe { &*self.base.as_ptr().add(at).cast::<AtomicU64>() }
    }

    /// Slots reserved by writers so far.
    pub fn head(&self) -> u64 {
        self.word(0).load(Ordering::Acquire)
    }

    /// Slots released by the reader so far.
    pub fn tail(&self) -> u64 {
        self.word(8).load(Ordering::Acquire)
    }

    fn slot_ptr(&self, slot: u64) -> *mut u8 {
        let index = (slot & (self.slots - 1)) as usize;
        // SAFETY: index < slots, so the slot is inside the mapping.
        unsafe {
            self.base
                .as_ptr()
                .add(HEADER as usize + index * RECORD_SIZE)
        }
    }

    fn kind(&self, slot: u64) -> u32 {
        // SAFETY: in the mapping, 4-aligned; written by the target with a
        // store after the rest of the record (its commit).
        unsafe { &*self.slot_ptr(slot).add(KIND_AT).cast::<AtomicU32>() }.load(Ordering::Acquire)
    }

    fn extra(&self, slot: u64) -> u32 {
        // SAFETY: as for kind; read after kind's acquire.
        unsafe { &*self.slot_ptr(slot).add(EXTRA_AT).cast::<AtomicU32>() }.load(Ordering::Relaxed)
    }

    /// Slots of whole records committed contiguously from the tail: at most
    /// `max` (unless the first record alone is larger), never across the
    /// ring's end. An impossible record is an error, not a slice.
    pub fn committed(&self, max: u32) -> Result<u32, RingError> {
        let tail = self.tail();
        let reserved = self.head().wrapping_sub(tail);
        if reserved > self.slots {
            return Err(RingError::Corrupt {
                slot: tail,
                why: "head and tail are further apart than the ring is long",
            });
        }
        let mut n: u64 = 0;
        while n < u64::from(max) && n < reserved {
            let slot = tail + n;
            if n > 0 && slot & (self.slots - 1) == 0 {
                break;
            }
            if self.kind(slot) == 0 {
                break;
            }
            let size = 1 + u64::from(self.extra(slot));
            if size > MAX_RECORD_SLOTS || (slot & (self.slots - 1)) + size > self.slots {
                return Err(RingError::Corrupt {
                    slot,
                    why: "its length runs past the largest record or the ring's end",
                });
            }
            if n + size > reserved {
                return Err(RingError::Corrupt {
                    slot,
                    why: "it is longer than what writers reserved",
                });
            }
            if n > 0 && n + size > u64::from(max) {
                break;
            }
            n += size;
        }
        Ok(n as u32)
    }

    /// The `n` committed slots at the tail, as the agent wrote them.
    /// `n` must come from [`SharedRing::committed`] (never across the end).
    pub fn records(&self, n: u32) -> &[u8] {
        let tail = self.tail();
        let start = self.slot_ptr(tail);
        let index = (tail & (self.slots - 1)) as usize;
        let n = (n as usize).min(self.slots as usize - index);
        // SAFETY: committed slots inside the mapping that no writer touches
        // until they are released (the ring protocol, see the module doc).
        unsafe { std::slice::from_raw_parts(start, n * RECORD_SIZE) }
    }

    /// Gives `n` slots at the tail back to the writers: zeroed (so a kind
    /// read later is that of a record written since), then the tail moves.
    pub fn release(&self, n: u32) {
        let tail = self.tail();
        let index = (tail & (self.slots - 1)) as usize;
        let n = (n as u64).min(self.slots - index as u64);
        // SAFETY: the reader owns these slots until the tail moves past them.
        unsafe { std::ptr::write_bytes(self.slot_ptr(tail), 0, n as usize * RECORD_SIZE) };
        self.word(8).store(tail + n, Ordering::Release);
    }

    /// Gives up everything between the tail and the head (a corrupt ring):
    /// returns how many slots were thrown away, counted as dropped.
    pub fn discard_reserved(&self) -> u64 {
        let head = self.head();
        let lost = head.wrapping_sub(self.tail()).min(self.slots);
        // SAFETY: the whole slot area is inside the mapping.
        unsafe {
            std::ptr::write_bytes(
                self.base.as_ptr().add(HEADER as usize),
                0,
                self.slots as usize * RECORD_SIZE,
            )
        };
        self.word(8).store(head, Ordering::Release);
        lost
    }
}

impl SharedRing {
    /// What the threads' stages hold and did not move into the ring. Only
    /// for a process that is gone (or whose agent detached after moving
    /// them): a live thread may be writing its stage.
    pub fn staged(&self) -> Staged {
        let mut out = Staged::default();
        if self.stage_records == 0 {
            return out;
        }
        let area_at = HEADER as usize + self.slots as usize * RECORD_SIZE;
        let area = &self.bytes()[area_at..];
        let records = self.stage_records as usize;
        let stage_size = STAGE_HEADER + records * RECORD_SIZE;
        let max = (area.len() - 64) / stage_size;
        let claimed = (read_u64(area, 0) as usize).min(max);
        for i in 0..claimed {
            let stage = &area[64 + i * stage_size..64 + (i + 1) * stage_size];
            let locked = read_u32(stage, 0) != 0;
            let (head, flushed) = (read_u64(stage, 8), read_u64(stage, 16));
            let n = head.wrapping_sub(flushed);
            if n == 0 {
                continue;
            }
            if locked || n > records as u64 {
                out.unsure += n.min(records as u64);
                continue;
            }
            for k in 0..n {
                let at = STAGE_HEADER + ((flushed + k) as usize & (records - 1)) * RECORD_SIZE;
                out.records.extend_from_slice(&stage[at..at + RECORD_SIZE]);
            }
        }
        out
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the whole mapping; the caller reads only parts no writer
        // touches any more (see staged).
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.len) }
    }
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl Drop for SharedRing {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
#[path = "shared_ring_tests.rs"]
mod tests;
