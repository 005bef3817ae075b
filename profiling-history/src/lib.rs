//! The history of results. Every run is also written into a store after
//! its directory is complete: an SQLite file beside the run directories by
//! default ([`store`]). A [`record::Record`] holds what the manifest says
//! of where the run ran (commit, a dirty tree, the machine, the backend),
//! a hash of what it measured (the config's target, data and workload),
//! each range's statistics with the interval of its median and its memory,
//! the manifest whole and the raw samples compressed, so that any figure
//! can be computed again later.
//!
//! From the store, [`series`] gives each range's metric run by run, one
//! series per machine and config (a series never mixes them), and
//! [`changes`] finds where a series shifted for good: E-Divisive means with
//! a permutation test, each shift given the commit where it began, its
//! size with an interval, and, among nested ranges that moved together,
//! the innermost one.

mod backend;
pub mod changes;
pub mod parquet;
mod pg;
pub mod record;
mod schema;
pub mod series;
pub mod store;
pub mod table;

pub use backend::DbError;
pub use changes::{Change, Detector};
pub use record::{Machine, RangeRow, Record};
pub use series::{Metric, Point, Series, SeriesQuery};
pub use store::{FlatRow, Location, Recorded, SampleRow, Store, StoreError, Verdict};
