//! The run's seed, shared with targets.
//!
//! The runner calls [`seed_run`] before it builds anything; a target or a
//! data source asks [`rng`] for a generator. With a seed every stream is
//! reproducible from run to run, and distinct streams (named by the caller)
//! are independent. Without a seed the generators are seeded from the OS.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rand::rngs::StdRng;
use rand::SeedableRng;

static SEEDED: AtomicBool = AtomicBool::new(false);
static SEED: AtomicU64 = AtomicU64::new(0);

/// Sets (or with `None` clears) the seed every later [`rng`] derives from;
/// a seed also seeds the backends' own generators ([`crate::backend`]:
/// libtorch's, CPU and every CUDA device, with the `tch` feature).
pub fn seed_run(seed: Option<u64>) {
    SEED.store(seed.unwrap_or(0), Ordering::SeqCst);
    SEEDED.store(seed.is_some(), Ordering::SeqCst);
    if let Some(seed) = seed {
        crate::backend::seed(seed);
    }
}

/// The seed of the current run, if it has one.
pub fn run_seed() -> Option<u64> {
    SEEDED
        .load(Ordering::SeqCst)
        .then(|| SEED.load(Ordering::SeqCst))
}

/// A generator for the stream named `stream`: the same stream and seed
/// always give the same sequence.
///
/// ```
/// use rand::Rng;
/// profiling_core::random::seed_run(Some(7));
/// let a: u64 = profiling_core::random::rng("weights").gen();
/// let b: u64 = profiling_core::random::rng("weights").gen();
/// let c: u64 = profiling_core::random::rng("noise").gen();
/// assert_eq!(a, b);
/// assert_ne!(a, c);
/// ```
pub fn rng(stream: &str) -> StdRng {
    match run_seed() {
        Some(seed) => StdRng::seed_from_u64(seed ^ fnv1a(stream.as_bytes()).rotate_left(17)),
        None => StdRng::from_entropy(),
    }
}

/// FNV-1a: a hash that is the same on every build and platform.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
