//! Hash maps and sets for the compiler's own keys: entity indices, small tuples of them,
//! and expression keys. The standard library's SipHash resists collision attacks on
//! untrusted keys, which these are not, and cost a tenth of a campaign's time (issue
//! 22). This is the Fx hash of rustc and Firefox: per machine word, rotate, xor, and
//! multiply by a constant. It has no per-process random seed, but nothing here relies
//! on the iteration order of a map (SipHash's order changes from run to run already).

use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with the Fx hash.
pub type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// A `HashSet` with the Fx hash.
pub type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

/// The Fx hasher: fast on integer keys, not for keys an adversary chooses.
#[derive(Clone, Copy, Default, Debug)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

/// The 1 to 7 bytes of `rest` as a little-endian word, zero above them (what copying them
/// into eight zero bytes reads as): two reads of the ends, which overlap in the middle,
/// rather than a copy of a length known only at run time, which was a call to `memcpy`
/// for the last word of every name hashed (most local names are shorter than a word).
#[inline]
fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    if n >= 4 {
        let lo = u32::from_le_bytes(rest[..4].try_into().expect("four bytes"));
        let hi = u32::from_le_bytes(rest[n - 4..].try_into().expect("four bytes"));
        u64::from(lo) | u64::from(hi) << (8 * (n - 4))
    } else if n >= 2 {
        let lo = u16::from_le_bytes(rest[..2].try_into().expect("two bytes"));
        let hi = u16::from_le_bytes(rest[n - 2..].try_into().expect("two bytes"));
        u64::from(lo) | u64::from(hi) << (8 * (n - 2))
    } else {
        u64::from(rest[0])
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.add(tail_word(rest));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(t: &T) -> u64 {
        BuildHasherDefault::<FxHasher>::default().hash_one(t)
    }

    /// The last word of a write is its bytes zero-padded, read little-endian, for every
    /// length of the tail.
    #[test]
    fn tail_word_is_the_bytes_zero_padded() {
        let bytes = [0x81u8, 0x02, 0xf3, 0x04, 0x75, 0x06, 0xe7];
        for n in 1..=7 {
            let mut word = [0u8; 8];
            word[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(tail_word(&bytes[..n]), u64::from_le_bytes(word), "{n} bytes");
        }
    }

    #[test]
    fn equal_keys_hash_equal_and_near_keys_apart() {
        assert_eq!(hash(&(3u32, 7u32)), hash(&(3u32, 7u32)));
        assert_ne!(hash(&(3u32, 7u32)), hash(&(7u32, 3u32)));
        assert_ne!(hash(&"ab"), hash(&"ba"));
        // Consecutive entity indices must not share the top bits the table's control
        // bytes use.
        let tops: HashSet<u64> = (0u32..64).map(|i| hash(&i) >> 57).collect();
        assert!(tops.len() > 32, "only {} distinct top-7-bit values", tops.len());
    }

    #[test]
    fn maps_work_as_maps() {
        let mut m: HashMap<u32, u32> = HashMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert_eq!(m.len(), 10_000);
        assert!((0..10_000).all(|i| m[&i] == i * 2));
    }
}
