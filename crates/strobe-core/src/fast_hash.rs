//! A fast hasher for maps keyed by small integers (thread, process and
//! function ids) that are touched once per event on the ingest path, where
//! the standard library's SipHash was a sixth of the store writer's time.
//! The keys come from the kernel and the tracer, not from a network peer,
//! so hash flooding is not a concern here; use the standard hasher for
//! anything keyed by outside input.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate hashing of integer words (one multiply per word).
#[derive(Debug, Default, Clone, Copy)]
pub struct IntHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl IntHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.add(u64::from(v));
    }

    fn write_u16(&mut self, v: u16) {
        self.add(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }

    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
}

/// A `HashMap` with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;
/// A `HashSet` with [`IntHasher`].
pub type IntSet<T> = HashSet<T, BuildHasherDefault<IntHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(v: T) -> u64 {
        BuildHasherDefault::<IntHasher>::default().hash_one(v)
    }

    #[test]
    fn nearby_keys_spread_over_the_high_and_low_bits() {
        // hashbrown takes the bucket from the low bits and a tag from the
        // top 7: both must differ for consecutive ids.
        let tops: HashSet<u64> = (1000u32..1128).map(|t| hash((7u32, t)) >> 57).collect();
        assert!(tops.len() > 60, "{}", tops.len());
        let lows: HashSet<u64> = (1000u32..1128).map(|t| hash((7u32, t)) & 127).collect();
        assert!(lows.len() > 60, "{}", lows.len());
        assert_ne!(hash((1u32, 2u8)), hash((2u32, 1u8)));
    }

    #[test]
    fn maps_work_as_maps() {
        let mut m: IntMap<(u32, u32), u32> = IntMap::default();
        for t in 0..10_000 {
            *m.entry((4242, t % 100)).or_default() += 1;
        }
        assert_eq!(m.len(), 100);
        assert!(m.values().all(|c| *c == 100));
    }
}
