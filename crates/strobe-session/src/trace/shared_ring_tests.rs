//! The reader's side of the ring protocol against a memfd written the way
//! the agent writes it (agent/src/tracers/ring.ts).

use super::*;

/// A memfd ring of `slots` in this process, and a writer's view of it.
struct Fixture {
    fd: std::os::fd::OwnedFd,
    writer: *mut u8,
    bytes: u64,
}

impl Fixture {
    fn new(slots: u64) -> Fixture {
        use std::os::fd::FromRawFd;
        let bytes = HEADER + slots * RECORD_SIZE as u64;
        let raw = unsafe { libc::memfd_create(c"strobe-ring".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0);
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        assert_eq!(unsafe { libc::ftruncate(raw, bytes as i64) }, 0);
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Fixture {
            fd,
            writer: p.cast(),
            bytes,
        }
    }

    fn open(&self) -> SharedRing {
        SharedRing::open(std::process::id(), self.fd.as_raw_fd(), self.bytes, 0, 0).unwrap()
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        unsafe { &*self.writer.add(i * 8).cast::<AtomicU64>() }
    }

    /// Reserves and writes a record with `extra` payload slots (value =
    /// `value`), as put_record does: padding first when it would cross the end.
    fn put(&self, value: u64, extra: u32, commit: bool) -> u64 {
        let slots = (self.bytes - HEADER) / RECORD_SIZE as u64;
        loop {
            let head = self.word(0).load(Ordering::SeqCst);
            let idx = head & (slots - 1);
            let need = 1 + u64::from(extra);
            let slot_ptr =
                |i: u64| unsafe { self.writer.add(HEADER as usize + i as usize * RECORD_SIZE) };
            if idx + need > slots {
                self.word(0).store(head + (slots - idx), Ordering::SeqCst);
                unsafe {
                    *slot_ptr(idx).add(EXTRA_AT).cast::<u32>() = (slots - idx - 1) as u32;
                    *slot_ptr(idx).add(KIND_AT).cast::<u32>() = 3;
                }
                continue;
            }
            self.word(0).store(head + need, Ordering::SeqCst);
            unsafe {
                *slot_ptr(idx).add(16).cast::<u64>() = value;
                *slot_ptr(idx).add(EXTRA_AT).cast::<u32>() = extra;
                if commit {
                    *slot_ptr(idx).add(KIND_AT).cast::<u32>() = 1;
                }
            }
            return head;
        }
    }

    fn commit(&self, slot: u64) {
        let slots = (self.bytes - HEADER) / RECORD_SIZE as u64;
        unsafe {
            *self
                .writer
                .add(HEADER as usize + (slot & (slots - 1)) as usize * RECORD_SIZE + KIND_AT)
                .cast::<u32>() = 1;
        }
    }
}

fn values(data: &[u8]) -> Vec<u64> {
    data.chunks(RECORD_SIZE)
        .filter(|r| u32::from_le_bytes(r[24..28].try_into().unwrap()) == 1)
        .map(|r| u64::from_le_bytes(r[16..24].try_into().unwrap()))
        .collect()
}

#[test]
fn committed_records_are_read_in_order_and_released() {
    let f = Fixture::new(1024);
    let ring = f.open();
    assert_eq!(ring.committed(4096).unwrap(), 0);
    f.put(1, 0, true);
    f.put(2, 3, true);
    f.put(3, 0, true);
    let n = ring.committed(4096).unwrap();
    assert_eq!(n, 6, "1 + 4 + 1 slots");
    assert_eq!(values(ring.records(n)), vec![1, 2, 3]);
    ring.release(n);
    assert_eq!(ring.tail(), 6);
    assert_eq!(ring.head() - ring.tail(), 0);
    // Released slots are zeroed: the writer's next lap starts clean.
    let slot_kind = unsafe { *f.writer.add(HEADER as usize + KIND_AT).cast::<u32>() };
    assert_eq!(slot_kind, 0);
}

#[test]
fn an_unwritten_slot_stops_the_read_until_it_is_committed() {
    let f = Fixture::new(1024);
    let ring = f.open();
    f.put(1, 0, true);
    let hole = f.put(2, 1, false);
    f.put(3, 0, true);
    assert_eq!(ring.committed(4096).unwrap(), 1);
    ring.release(1);
    assert_eq!(ring.committed(4096).unwrap(), 0, "waits on the hole");
    assert_eq!(ring.head() - ring.tail(), 3);
    f.commit(hole);
    let n = ring.committed(4096).unwrap();
    assert_eq!(values(ring.records(n)), vec![2, 3]);
}

#[test]
fn reads_stop_at_the_end_and_go_on_from_the_start() {
    let f = Fixture::new(1024);
    let ring = f.open();
    for v in 0..1020 {
        f.put(v, 0, true);
    }
    let n = ring.committed(4096).unwrap();
    assert_eq!(n, 1020);
    ring.release(n);
    // 4 slots left before the end: a 6-slot record pads them first.
    f.put(7, 5, true);
    f.put(8, 0, true);
    let n = ring.committed(4096).unwrap();
    assert_eq!(n, 4, "the padding record, alone up to the end");
    assert!(values(ring.records(n)).is_empty());
    ring.release(n);
    let n = ring.committed(4096).unwrap();
    assert_eq!(values(ring.records(n)), vec![7, 8]);
    ring.release(n);
    assert_eq!(ring.tail(), ring.head());
}

#[test]
fn max_bounds_a_read_except_for_one_large_record() {
    let f = Fixture::new(1024);
    let ring = f.open();
    f.put(1, 9, true);
    f.put(2, 0, true);
    assert_eq!(ring.committed(4).unwrap(), 10, "one record larger than max");
    ring.release(10);
    for v in 0..10 {
        f.put(v, 0, true);
    }
    assert_eq!(ring.committed(4).unwrap(), 4);
}

#[test]
fn a_corrupt_record_is_an_error_and_is_discarded() {
    let f = Fixture::new(1024);
    let ring = f.open();
    f.put(1, 0, true);
    // A program scribbled a huge length over a committed record.
    let at = f.put(2, 0, true);
    unsafe {
        *f.writer
            .add(HEADER as usize + at as usize * RECORD_SIZE + EXTRA_AT)
            .cast::<u32>() = 1 << 30;
    }
    assert_eq!(ring.committed(1).unwrap(), 1);
    ring.release(1);
    assert!(matches!(
        ring.committed(4096),
        Err(RingError::Corrupt { slot: 1, .. })
    ));
    assert_eq!(ring.discard_reserved(), 1);
    assert_eq!(ring.committed(4096).unwrap(), 0);
    f.put(3, 0, true);
    let n = ring.committed(4096).unwrap();
    assert_eq!(values(ring.records(n)), vec![3]);
    // A head far from the tail is corrupt too.
    f.word(0).store(1 << 40, Ordering::SeqCst);
    assert!(ring.committed(4096).is_err());
}

#[test]
fn only_the_agents_memfd_of_a_ring_size_is_mapped() {
    let f = Fixture::new(1024);
    let pid = std::process::id();
    let fd = f.fd.as_raw_fd();
    assert!(matches!(
        SharedRing::open(pid, fd, f.bytes + 32, 0, 0),
        Err(RingError::Size(_))
    ));
    assert!(matches!(
        SharedRing::open(pid, fd, 64, 0, 0),
        Err(RingError::Size(_))
    ));
    let file = tempfile::tempfile().unwrap();
    let err = SharedRing::open(pid, file.as_raw_fd(), f.bytes, 0, 0).unwrap_err();
    assert!(err.to_string().contains("not the agent's ring"), "{err}");
    let err = SharedRing::open(pid, 9999, f.bytes, 0, 0).unwrap_err();
    assert!(err.to_string().contains("/proc/"), "{err}");
    // A ring larger than the memfd holds.
    let big = HEADER + 4096 * RECORD_SIZE as u64;
    let err = SharedRing::open(pid, fd, big, 0, 0).unwrap_err();
    assert!(err.to_string().contains("holds"), "{err}");
    // A stage area that is not whole stages, or stages of an odd size.
    for (bytes, records) in [(64 + 100, 4), (64 + 2 * (64 + 3 * 32), 3)] {
        let err = SharedRing::open(pid, fd, f.bytes, bytes, records).unwrap_err();
        assert!(matches!(err, RingError::Stages { .. }), "{err}");
    }
}

#[test]
fn records_left_in_the_threads_stages_are_read_in_order() {
    // A ring of 1024 slots, then two stages of 4 records (stage.ts layout).
    const RECORDS: usize = 4;
    let stage_size = 64 + RECORDS * RECORD_SIZE;
    let stage_bytes = 64 + 2 * stage_size;
    let f = Fixture::new(1024);
    let raw = f.fd.as_raw_fd();
    assert_eq!(
        unsafe { libc::ftruncate(raw, (f.bytes as usize + stage_bytes) as i64) },
        0
    );
    let mut area = vec![0u8; stage_bytes];
    area[..8].copy_from_slice(&2u64.to_le_bytes());
    let mut stage = |i: usize, lock: u32, head: u64, flushed: u64| {
        let at = 64 + i * stage_size;
        area[at..at + 4].copy_from_slice(&lock.to_le_bytes());
        area[at + 8..at + 16].copy_from_slice(&head.to_le_bytes());
        area[at + 16..at + 24].copy_from_slice(&flushed.to_le_bytes());
        for r in 0..RECORDS {
            // The record's value: which stage and slot it is in.
            let rec = at + 64 + r * RECORD_SIZE;
            area[rec + 16..rec + 24].copy_from_slice(&((i * 10 + r) as u64).to_le_bytes());
            area[rec + KIND_AT..rec + KIND_AT + 4].copy_from_slice(&1u32.to_le_bytes());
        }
    };
    // Stage 0: records 3, 4 and 5 written and not moved (slots 3, 0, 1).
    stage(0, 0, 6, 3);
    // Stage 1: caught being moved, two records.
    stage(1, 1, 9, 7);
    let n = unsafe {
        libc::pwrite(
            raw,
            area.as_ptr().cast(),
            area.len(),
            f.bytes as libc::off_t,
        )
    };
    assert_eq!(n as usize, area.len());
    let ring = SharedRing::open(
        std::process::id(),
        raw,
        f.bytes,
        stage_bytes as u64,
        RECORDS as u32,
    )
    .unwrap();
    let staged = ring.staged();
    let values: Vec<u64> = staged
        .records
        .chunks(RECORD_SIZE)
        .map(|r| u64::from_le_bytes(r[16..24].try_into().unwrap()))
        .collect();
    assert_eq!(values, [3, 0, 1]);
    assert_eq!(staged.unsure, 2);
    // Without a stage area there is nothing to read.
    assert_eq!(f.open().staged(), Staged::default());
}
