//! Load: a target driven as a service is driven (the scenarios of MLPerf's
//! LoadGen), and what its latency was under it.
//!
//! [`arrivals`] says when each query is meant to be sent; [`latency`]
//! measures every query from that intended time, not from when a worker
//! picked it up, so a queue that builds behind a slow worker shows in the
//! latency instead of hiding in the gaps between sends (coordinated
//! omission, as wrk2 and HdrHistogram name it), and says whether the
//! offered load was more than the workers could serve. [`spec`] resolves
//! what a load asks for from its options and the config's `load:` section.

pub mod arrivals;
pub mod drive;
pub mod latency;
pub mod peak;
pub mod spec;
pub mod summary;
pub mod target;
