//! What a source that keeps what it reads across runs is opened with and
//! reports: where caches live ([`SourceContext`]), and what its cache did
//! during the run ([`CacheStats`], [`CacheSummary`]), which the run prints
//! and `--json` gives.

use std::path::PathBuf;

/// The folder, under the root of the run directories, where the sources
/// that keep a cache keep it (each in a folder of its own).
pub const CACHE_DIR: &str = ".cache";

/// What a source is opened with besides its parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceContext {
    /// The root of the run directories, under which caches that runs share
    /// live (`<root>/.cache/`); `None` where nothing may be kept (a parity
    /// check, a count of records before a run), and a source then reads
    /// without its cache.
    pub cache_root: Option<PathBuf>,
}

/// A cache a source fills while a run reads it: asked for its summary once
/// the run is over.
pub trait CacheStats: Send + Sync {
    /// What the cache did so far.
    fn summary(&self) -> CacheSummary;
}

/// What a cache did during a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheSummary {
    /// The folder of the entries.
    pub dir: PathBuf,
    pub max_bytes: u64,
    /// Images read from the cache.
    pub hits: u64,
    /// Images decoded from their file: no entry, or one that did not match.
    pub misses: u64,
    /// Entries written, and their bytes.
    pub stored: u64,
    pub stored_bytes: u64,
    /// Entries removed to keep within `max_bytes`.
    pub evicted: u64,
    /// Entries whose pixels no longer matched their checksum: misses, each
    /// replaced by the image decoded afresh.
    pub damaged: u64,
    /// Images that could not be stored, and why the first of them could not.
    pub store_failures: u64,
    pub first_failure: Option<String>,
}
