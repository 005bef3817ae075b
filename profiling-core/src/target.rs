//! The contract every profile target implements.

use crate::data::DataRecord;
use crate::device::Device;

/// What a target reports about one output: written under
/// `output_summaries` in the manifest.
pub type Summary = std::collections::BTreeMap<String, serde_yaml::Value>;

/// A piece of inference code made profilable.
///
/// The runner calls `prepare` once per record (outside every range, unless
/// `target.profile_prepare` is set), `run` in every warmup and measured pass,
/// `validate` on warmup outputs only, and `summarize` on the outputs of the
/// last measured pass.
pub trait ProfileTarget {
    /// What `prepare` makes of a record: the input of `run`.
    type Prepared;
    /// What `run` returns.
    type Output;

    /// Turns a record into the input of `run`, on `device`.
    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<Self::Prepared>;

    /// The code under study. Runs inside the measured passes.
    fn run(&mut self, prepared: &Self::Prepared) -> anyhow::Result<Self::Output>;

    /// Checks an output; called during warmup, never inside the capture range.
    fn validate(&self, output: &Self::Output) -> anyhow::Result<()> {
        let _ = output;
        Ok(())
    }

    /// A few values that say what an output was (shapes, counts, checksums).
    fn summarize(&self, output: &Self::Output) -> Summary {
        let _ = output;
        Summary::new()
    }
}
