//! Event batches the writer has consumed, kept for the next append. A batch
//! of 4,096 events is 256 KiB of headers: allocated fresh each time, its
//! first writes page-faulted (glibc maps blocks that large on their own),
//! which was a tenth of the daemon's time at full ingest. Reused, its pages
//! are warm.

use std::sync::Mutex;
use strobe_core::event::EventBatch;

/// Batches kept at most (the writer's queue holds a few more in flight).
const KEPT: usize = 8;
/// A batch holding more than this is let go rather than kept.
const KEPT_MAX_HEADERS: usize = 1 << 16;
const KEPT_MAX_PAYLOAD: usize = 16 << 20;

/// Spare batches, shared by the store's handles and its writer.
#[derive(Debug, Default)]
pub(crate) struct BatchPool(Mutex<Vec<EventBatch>>);

impl BatchPool {
    /// An empty batch with room for at least `events` headers and
    /// `payload` bytes.
    pub(crate) fn take(&self, events: usize, payload: usize) -> EventBatch {
        let spare = self.0.lock().expect("batch pool lock").pop();
        match spare {
            Some(mut b) => {
                b.headers.reserve(events);
                b.payload.reserve(payload);
                b
            }
            None => EventBatch::with_capacity(events, payload),
        }
    }

    /// Keeps `batch`, emptied, for a later [`BatchPool::take`].
    pub(crate) fn give(&self, mut batch: EventBatch) {
        if batch.headers.capacity() > KEPT_MAX_HEADERS
            || batch.payload.capacity() > KEPT_MAX_PAYLOAD
        {
            return;
        }
        batch.headers.clear();
        batch.payload.clear();
        let mut spare = self.0.lock().expect("batch pool lock");
        if spare.len() < KEPT {
            spare.push(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strobe_core::event::EventHeader;

    #[test]
    fn a_given_batch_comes_back_empty_with_its_room() {
        let pool = BatchPool::default();
        let mut b = pool.take(100, 10);
        b.push(EventHeader::default(), b"abc");
        let room = b.headers.capacity();
        pool.give(b);
        let again = pool.take(10, 0);
        assert!(again.is_empty());
        assert!(again.payload.is_empty());
        assert_eq!(again.headers.capacity(), room);
        // Only KEPT are kept; an oversized one is let go.
        for _ in 0..20 {
            pool.give(EventBatch::with_capacity(4, 0));
        }
        assert_eq!(pool.0.lock().unwrap().len(), KEPT);
        pool.give(EventBatch::with_capacity(KEPT_MAX_HEADERS + 1, 0));
        assert_eq!(pool.0.lock().unwrap().len(), KEPT);
    }
}
