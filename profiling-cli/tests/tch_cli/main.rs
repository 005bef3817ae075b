//! `profile-cli` built with the `tch` feature, run as a process: the
//! libtorch targets end to end, and the binary's own checks (`binary.rs`
//! of `it`) in that build. Only a build with the feature has this binary
//! (`required-features`), so the `tch` pass of `scripts/test` builds it
//! alone rather than every module of `it` again.

#[path = "../it/binary.rs"]
mod binary;
mod tch;
