//! Comparing runs: did a change make a snippet faster, where, and is the
//! difference real or noise?

pub mod statistics;
