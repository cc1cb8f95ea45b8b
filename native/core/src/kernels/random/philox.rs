//! TensorFlow's Philox-4x32-10 generator: a 64-bit key and a 128-bit counter; one call gives a
//! "block" of four 32-bit words and the next block comes from the counter plus one. Blocks are
//! computed at any offset from the counter, so a distribution can fill its groups in any order
//! (and in parallel) and still give TensorFlow's sequence.

const ROUND_MULTIPLIERS: [u64; 2] = [0xD251_1F53, 0xCD9E_8D57];
const KEY_INCREMENTS: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];
/// The key that scrambles a stateless op's seed into its key and counter (TensorFlow's
/// GenerateKey).
const STATELESS_KEY: [u32; 2] = [0x3EC8_F720, 0x0246_1E29];

/// A Philox generator: key words and counter words, least significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Philox {
    pub key: [u32; 2],
    pub counter: [u32; 4],
}

fn split(x: u64) -> [u32; 2] {
    [x as u32, (x >> 32) as u32]
}

fn join(low: u32, high: u32) -> u64 {
    u64::from(low) | (u64::from(high) << 32)
}

impl Philox {
    /// The generator of a 64-bit key and a counter given as two 64-bit halves.
    pub fn new(key: u64, counter_low: u64, counter_high: u64) -> Self {
        let [c0, c1] = split(counter_low);
        let [c2, c3] = split(counter_high);
        Self {
            key: split(key),
            counter: [c0, c1, c2, c3],
        }
    }

    /// TensorFlow's PhiloxRandom(seed, seed2): the first seed is the key, the second the
    /// counter's upper half.
    pub fn from_seeds(seed: u64, seed2: u64) -> Self {
        Self::new(seed, 0, seed2)
    }

    /// The generator of a stateless V1 op's seed pair: one Philox call with a fixed key,
    /// counting from the seeds, gives the key and the counter's upper half.
    pub fn from_stateless_seed(first: u64, second: u64) -> Self {
        let mixer = Self {
            key: STATELESS_KEY,
            ..Self::new(0, first, second)
        };
        let [k0, k1, c2, c3] = mixer.block(0);
        Self {
            key: [k0, k1],
            counter: [0, 0, c2, c3],
        }
    }

    pub fn key64(&self) -> u64 {
        join(self.key[0], self.key[1])
    }

    /// The counter as (low, high) 64-bit halves.
    pub fn counter64(&self) -> (u64, u64) {
        (
            join(self.counter[0], self.counter[1]),
            join(self.counter[2], self.counter[3]),
        )
    }

    /// Moves the counter on by `count` blocks as TensorFlow's PhiloxRandom::Skip does: a
    /// 128-bit addition of the 64-bit count, except that a carry out of the count's low word
    /// into a high word of 0xFFFFFFFF is lost (as in TensorFlow).
    pub fn skip(&mut self, count: u64) {
        let [low, mut high] = split(count);
        let c = &mut self.counter;
        c[0] = c[0].wrapping_add(low);
        if c[0] < low {
            high = high.wrapping_add(1);
        }
        c[1] = c[1].wrapping_add(high);
        if c[1] < high {
            c[2] = c[2].wrapping_add(1);
            if c[2] == 0 {
                c[3] = c[3].wrapping_add(1);
            }
        }
    }

    /// The four words of the block `offset` blocks after the counter (the generator does not
    /// move).
    pub fn block(&self, offset: u64) -> [u32; 4] {
        let (low, high) = self.counter64();
        let (low, carry) = low.overflowing_add(offset);
        let high = high.wrapping_add(u64::from(carry));
        let [mut c0, mut c1] = split(low);
        let [mut c2, mut c3] = split(high);
        let [mut k0, mut k1] = self.key;
        for _ in 0..10 {
            let p0 = ROUND_MULTIPLIERS[0] * u64::from(c0);
            let p1 = ROUND_MULTIPLIERS[1] * u64::from(c2);
            let [p0_low, p0_high] = split(p0);
            let [p1_low, p1_high] = split(p1);
            (c0, c1, c2, c3) = (p1_high ^ c1 ^ k0, p1_low, p0_high ^ c3 ^ k1, p0_low);
            k0 = k0.wrapping_add(KEY_INCREMENTS[0]);
            k1 = k1.wrapping_add(KEY_INCREMENTS[1]);
        }
        [c0, c1, c2, c3]
    }

    /// The first `count` words from the counter on (whole blocks, in order).
    pub fn words(&self, count: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(count.div_ceil(4) * 4);
        for b in 0..count.div_ceil(4) {
            out.extend_from_slice(&self.block(b as u64));
        }
        out.truncate(count);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_carries_as_tensorflow_does() {
        let mut g = Philox::new(0, u64::from(u32::MAX), 0);
        g.skip(1);
        assert_eq!(g.counter, [0, 1, 0, 0]);
        let mut g = Philox::new(0, u64::MAX, 7);
        g.skip(1);
        assert_eq!(g.counter, [0, 0, 8, 0]);
    }

    #[test]
    fn blocks_at_offsets_are_the_sequence() {
        let g = Philox::from_seeds(87_654_321, 42);
        let mut moved = g;
        moved.skip(3);
        assert_eq!(g.block(3), moved.block(0));
        assert_eq!(g.words(9)[4..8], g.block(1));
    }
}
