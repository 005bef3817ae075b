//! What a program that lists, plans, runs and writes runs uses: the
//! `profile` binary of a workspace, and `profile-cli`. A target or a data
//! source needs none of it: the [`prelude`](crate::prelude) and the modules
//! at the crate's root are theirs.
//!
//! From the top down: a [`session`] plans a run from its [`config`] and
//! executes it with the [`runner`] on a target of the [`registry`], then
//! [`run_dir`] writes the [`manifest`], the [`run_samples`] and the
//! [`trace`]; [`sweep`] and [`load`] plan and run many runs of one target
//! (a grid of configs; a target driven as a service); the rest are what
//! those record or guard.

pub mod baselines;
pub mod canary;
pub mod config;
pub mod contention;
pub mod files;
pub mod gpu_state;
pub mod interrupt;
pub mod load;
pub mod manifest;
pub mod nsys;
pub mod panics;
pub mod provenance;
pub mod registry;
pub mod run_dir;
pub mod run_samples;
pub mod runner;
pub mod session;
pub mod sweep;
pub mod trace;
