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
///
/// With `workload.batch_size` above 1, the records are grouped in order
/// into batches, and `prepare_batch` takes the place of `prepare`: once per
/// batch, and `run`, `validate` and `summarize` once per batch. A target
/// takes batches only when it implements `prepare_batch`; the default
/// refuses them, so every target runs with `batch_size: 1`.
pub trait ProfileTarget {
    /// What `prepare` makes of a record: the input of `run`.
    type Prepared;
    /// What `run` returns.
    type Output;

    /// Turns a record into the input of `run`, on `device`.
    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<Self::Prepared>;

    /// Turns a batch of records (`workload.batch_size` of them, fewer in a
    /// short last batch) into one input of `run`, on `device`: called
    /// instead of `prepare` when the batch size is above 1.
    ///
    /// The default refuses with [`BatchesUnsupported`]; a run with batches
    /// of a target that keeps it is refused before anything runs.
    ///
    /// ```
    /// use profiling_core::prelude::*;
    ///
    /// #[derive(Default)]
    /// struct SumTensors;
    ///
    /// #[profile_target(name = "sum-tensors")]
    /// impl ProfileTarget for SumTensors {
    ///     type Prepared = Vec<Vec<f32>>;
    ///     type Output = Vec<f32>;
    ///
    ///     fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<Self::Prepared> {
    ///         self.prepare_batch(std::slice::from_ref(record), device)
    ///     }
    ///
    ///     fn prepare_batch(&mut self, records: &[DataRecord], _device: Device) -> anyhow::Result<Self::Prepared> {
    ///         records
    ///             .iter()
    ///             .map(|r| Ok(r.tensor("tensor")?.iter().copied().collect()))
    ///             .collect()
    ///     }
    ///
    ///     fn run(&mut self, batch: &Self::Prepared) -> anyhow::Result<Vec<f32>> {
    ///         Ok(batch.iter().map(|values| values.iter().sum()).collect())
    ///     }
    /// }
    /// # fn main() {}
    /// ```
    fn prepare_batch(
        &mut self,
        records: &[DataRecord],
        device: Device,
    ) -> anyhow::Result<Self::Prepared> {
        let _ = (records, device);
        Err(BatchesUnsupported {
            type_name: std::any::type_name::<Self>(),
        }
        .into())
    }

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

/// The error of the default [`ProfileTarget::prepare_batch`]: the target
/// takes one record per call only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{type_name}` does not take batches: implement `prepare_batch` in its `ProfileTarget` impl to run it with `workload.batch_size` > 1")]
pub struct BatchesUnsupported {
    /// The implementing type.
    pub type_name: &'static str,
}

thread_local! {
    // Per thread: the runner builds and runs a target on the thread that
    // called it, and concurrent runs (tests) must not see each other's.
    static PARAMETERS: std::cell::RefCell<serde_yaml::Mapping> = std::cell::RefCell::new(serde_yaml::Mapping::new());
    // Whether the target asked for them since they were set.
    static PARAMETERS_READ: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets the `target.parameters` of the run about to build its target.
pub(crate) fn set_parameters(parameters: &serde_yaml::Mapping) {
    PARAMETERS.with(|current| *current.borrow_mut() = parameters.clone());
    PARAMETERS_READ.with(|read| read.set(false));
}

/// Whether the target read its parameters ([`parameters`]) since they were
/// set.
pub(crate) fn parameters_were_read() -> bool {
    PARAMETERS_READ.with(std::cell::Cell::get)
}

/// The first key of the run's `target.parameters` when the target has not
/// read them ([`parameters`]) since they were set: every one of them is
/// then a setting nothing uses.
pub(crate) fn unread_parameter() -> Option<String> {
    if PARAMETERS_READ.with(std::cell::Cell::get) {
        return None;
    }
    PARAMETERS.with(|current| {
        current.borrow().keys().next().map(|key| match key {
            serde_yaml::Value::String(key) => key.clone(),
            other => serde_yaml::to_string(other)
                .map(|text| text.trim_end().to_owned())
                .unwrap_or_default(),
        })
    })
}

/// A `target.parameters` value the target cannot use. Returned by
/// [`parameters`], and by a target's factory for a value it checks itself
/// (a model file that does not load): the run is then refused as bad
/// configuration (exit 2, nothing written), with the config file and key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("target.parameters{}: {message}", .key.as_ref().map(|k| format!(".{k}")).unwrap_or_default())]
pub struct ParameterError {
    /// The key under `target.parameters`, when the error is about one.
    pub key: Option<String>,
    pub message: String,
}

impl ParameterError {
    /// An error about `target.parameters.<key>`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> ParameterError {
        ParameterError {
            key: Some(key.into()),
            message: message.into(),
        }
    }
}

/// The run's `target.parameters`, deserialized into `T`: for a target's
/// factory (`#[profile_target(factory = ...)]`) or its methods to read
/// settings of its own, such as a model file. An error is a
/// [`ParameterError`] naming the key; a key `T` has no field for (a typo)
/// is one too, whether or not `T` denies unknown fields.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Settings {
///     #[serde(default)]
///     threshold: Option<f32>,
/// }
/// // Outside a run there are no parameters: every field takes its default.
/// let settings: Settings = profiling_core::target::parameters().unwrap();
/// assert_eq!(settings.threshold, None);
/// ```
pub fn parameters<T: serde::de::DeserializeOwned>() -> anyhow::Result<T> {
    let parameters = PARAMETERS.with(|current| current.borrow().clone());
    PARAMETERS_READ.with(|read| read.set(true));
    let (value, unused) = crate::yaml::deserialize_mapping_noting_unused(&parameters)
        .map_err(|(key, message)| ParameterError { key, message })?;
    // A key `T` does not read is a typo or a setting of another target:
    // said, not silently left out of the run.
    if let Some(key) = unused.into_iter().next() {
        return Err(ParameterError::new(
            key,
            format!(
                "unknown parameter: the target's parameters ({}) have no such field",
                std::any::type_name::<T>()
            ),
        )
        .into());
    }
    Ok(value)
}
