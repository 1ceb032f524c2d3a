//! Deterministic pseudo-random generators for property and differential tests: no dependency,
//! the same sequence on every platform, so that a failing case reproduces from its seed. Not for
//! anything that needs unpredictability.

/// xorshift64* (Vigna, 2016): a 64-bit xorshift state whose output is multiplied by a constant.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`, which must not be 0 (the state would stay 0).
    pub const fn new(seed: u64) -> Rng {
        assert!(seed != 0, "xorshift needs a non-zero seed");
        Rng(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`next_u64() % n`; the small modulo bias does not matter here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One element of `xs` (uses one [`Rng::below`]).
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    /// True with `pct` percent probability (`next_u64() % 100 < pct`).
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next_u64() % 100 < pct
    }
}

/// Plain xorshift64 (Marsaglia, 2003; shifts 13, 7, 17): the state is the output.
#[derive(Debug, Clone)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A generator from `seed`, which must not be 0 (the state would stay 0).
    pub const fn new(seed: u64) -> XorShift64 {
        assert!(seed != 0, "xorshift needs a non-zero seed");
        XorShift64(seed)
    }

    /// The next 64 bits (the new state).
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`next_u64() % n`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One to `max_parts` elements of `parts` joined: first the count (`1 + below(max_parts)`),
    /// then each element (`below(parts.len())`). The generated values of the detectors'
    /// property tests (phrases made of keywords, separators and quotes).
    pub fn joined(&mut self, parts: &[&str], max_parts: usize) -> String {
        let n = 1 + self.below(max_parts);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(parts[self.below(parts.len())]);
        }
        s
    }
}
