//! Where the generator's choices come from: a seeded `ChaCha8Rng` (the same seed gives
//! the same program on every machine and build, since ChaCha is a fixed algorithm and
//! every draw goes through fixed-width integers) or libFuzzer's bytes through
//! `arbitrary::Unstructured`.
//!
//! Invariant of the byte source: once the bytes run out every draw returns 0, and the
//! generator is written so that 0 always means "the smallest, simplest choice" (stop
//! adding items, take the first kind, which is a leaf). So an exhausted input still
//! gives a small valid program.

use arbitrary::Unstructured;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A stream of choices.
pub trait Source {
    /// A number in `0..n`; `n` must be at least 1.
    fn below(&mut self, n: u32) -> u32;
    /// 64 arbitrary bits.
    fn bits64(&mut self) -> u64;
}

/// The seeded source.
pub struct SeededSource(ChaCha8Rng);

impl SeededSource {
    pub fn new(seed: u64) -> SeededSource {
        SeededSource(ChaCha8Rng::seed_from_u64(seed))
    }
}

impl Source for SeededSource {
    fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        self.0.gen_range(0..n.max(1))
    }

    fn bits64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

impl Source for Unstructured<'_> {
    fn below(&mut self, n: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        self.int_in_range(0..=n - 1).unwrap_or(0)
    }

    fn bits64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        let _ = self.fill_buffer(&mut b);
        u64::from_le_bytes(b)
    }
}
