//! `profile-cli sweep`: one ordinary run per point of a grid of config
//! values, and `sweep.yaml` with every point's medians.

pub mod document;
pub mod grid;
