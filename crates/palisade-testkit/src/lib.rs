//! Test support shared by the workspace's tests and benches, and nothing else: every crate takes
//! it as a dev-dependency only, so none of it reaches the `palisade` binary.
//!
//! - [`alloc`]: a counting global allocator, for the "steady state allocates nothing" tests and
//!   the allocations-per-request figures the benches print. A test binary installs it with
//!   `#[global_allocator] static GLOBAL: palisade_testkit::alloc::Counting = palisade_testkit::alloc::Counting;`
//!   and reads [`alloc::total`] (all threads) or [`alloc::this_thread`].
//! - [`rng`]: small deterministic generators (xorshift64* and plain xorshift64) for property and
//!   differential tests, so that a failing case reproduces from its seed.
//!
//! The allocator is the only `unsafe` code (`GlobalAlloc` is an unsafe trait); it is allowed in
//! that module alone.

pub mod alloc;
pub mod rng;

#[cfg(test)]
mod tests;
