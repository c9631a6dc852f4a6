//! Hash maps keyed by small integers or tuples of them (handles, context ids, call numbers,
//! tokens): a multiplicative hash instead of the default SipHash, which costs more than the
//! rest of a short collective's bookkeeping. Keys never come from outside the process, so
//! there is nothing to defend against.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
pub struct IdHasher(u64);

impl IdHasher {
    fn mix(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // The table takes its bucket from the low bits: fold the well-mixed high bits down.
        self.0 ^ (self.0 >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.mix(b as u64);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.mix(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The splitmix64 finaliser: spreads every bit of `x` over the whole word (context ids,
/// twins' names), the same on every process.
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_spread_over_low_bits() {
        let mut m: IdMap<(u64, u32, usize), u32> = IdMap::default();
        for i in 0..1000u32 {
            m.insert((0x100 + (i as u64) * 2, i % 7, 8), i);
        }
        assert_eq!(m.len(), 1000);
        assert_eq!(m.get(&(0x100 + 20, 10 % 7, 8)), Some(&10));
        let lows: std::collections::HashSet<u64> = (0..64u64)
            .map(|i| {
                let mut h = IdHasher::default();
                h.write_u64(i << 8);
                h.finish() & 63
            })
            .collect();
        assert!(lows.len() > 32, "low bits of the hash take few values: {}", lows.len());
    }
}
