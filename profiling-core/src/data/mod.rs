//! Data records and the sources that produce them.
//!
//! A source is one trait, [`RecordSource`], registered at link time with
//! `#[data_source(name = "...")]` on its impl block ([`sources`]): `dummy`
//! here, those that read files in the `profiling-sources` crate, and those
//! a crate defines. A source is named in the config (`data_source.name`)
//! with its parameters beside the name; [`build`] turns that into a
//! [`DataSource`], the adapter the runner reads. Eager runs read every
//! record once before any pass; lazy runs read them afresh in each pass.
//! [`check_fits_in_memory`] refuses an eager run whose decoded records would
//! not fit in memory, before any of them is read. A source may keep what it
//! reads across runs in a cache ([`SourceContext`], [`CacheStats`]).

mod caching;
pub mod dummy;
mod registry;
mod select;
mod typed;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_yaml::Value;

pub use caching::{CacheStats, CacheSummary, SourceContext, CACHE_DIR};
pub use registry::{
    build_source, directory_source, find_source, named, parameter_fields, source_names, sources,
    RecordSource, SourceEntry,
};
pub use select::{select, Selection};
pub use typed::{element_count, Dtype, TensorData, TypedTensor};

/// One input of a target: an image, tensors, or both, with where it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataRecord {
    /// Unique within a pass: `dummy-<i>`, or an image's file stem.
    pub id: String,
    /// The decoded RGB image, when the source has one and decodes it.
    pub image: Option<image::RgbImage>,
    /// The file the record was read from.
    pub path: Option<PathBuf>,
    /// Named float32 tensors; the dummy source gives `tensor`, `scores`, `boxes`.
    pub tensors: BTreeMap<String, ndarray::ArrayD<f32>>,
    /// Named tensors of other element types, as read (the `tensors` source's
    /// int64 ids, uint8 masks, float16 outputs); [`tensor`](Self::tensor)
    /// gives them as float32 too.
    pub typed_tensors: BTreeMap<String, TypedTensor>,
    /// Facts about the record (sizes, indices).
    pub metadata: BTreeMap<String, Value>,
    /// Where the record came from: the source's name and its position.
    pub source: BTreeMap<String, Value>,
}

impl DataRecord {
    /// The decoded image, or an error that names the record and, for each
    /// source that can leave images out, the parameter that keeps them
    /// ([`RecordSource::IMAGE_PARAMETER`]).
    pub fn image(&self) -> anyhow::Result<&image::RgbImage> {
        self.image.as_ref().ok_or_else(|| {
            let switches: Vec<String> = sources()
                .into_iter()
                .filter_map(|entry| {
                    Some(format!("{}: set `{}`", entry.name, entry.image_parameter?))
                })
                .collect();
            let hint = if switches.is_empty() {
                String::new()
            } else {
                format!(" ({})", switches.join("; "))
            };
            anyhow::anyhow!("record `{}` has no decoded image{hint}", self.id)
        })
    }

    /// The tensor called `name` as float32 (one of another element type
    /// converted on first use), or an error that names the record and the
    /// tensors it has.
    pub fn tensor(&self, name: &str) -> anyhow::Result<&ndarray::ArrayD<f32>> {
        if let Some(tensor) = self.tensors.get(name) {
            return Ok(tensor);
        }
        if let Some(typed) = self.typed_tensors.get(name) {
            return Ok(typed.as_f32());
        }
        Err(self.no_tensor(name))
    }

    /// The tensor called `name` with its own element type, or an error that
    /// names the record and the tensors it has. A float32 tensor is copied
    /// into the answer: [`tensor`](Self::tensor) gives it without a copy.
    pub fn typed_tensor(&self, name: &str) -> anyhow::Result<std::borrow::Cow<'_, TensorData>> {
        if let Some(typed) = self.typed_tensors.get(name) {
            return Ok(std::borrow::Cow::Borrowed(typed.data()));
        }
        if let Some(tensor) = self.tensors.get(name) {
            return Ok(std::borrow::Cow::Owned(TensorData::F32(tensor.clone())));
        }
        Err(self.no_tensor(name))
    }

    fn no_tensor(&self, name: &str) -> anyhow::Error {
        {
            let mut known: Vec<&str> = self
                .tensors
                .keys()
                .chain(self.typed_tensors.keys())
                .map(String::as_str)
                .collect();
            known.sort_unstable();
            anyhow::anyhow!(
                "record `{}` has no tensor `{name}` (it has: {})",
                self.id,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        }
    }

    /// Approximate bytes held in memory by the record's decoded data.
    pub fn decoded_bytes(&self) -> usize {
        let image = self.image.as_ref().map_or(0, |img| img.as_raw().len());
        let tensors: usize = self
            .tensors
            .values()
            .map(|t| t.len() * std::mem::size_of::<f32>())
            .sum();
        let typed: usize = self.typed_tensors.values().map(|t| t.data().nbytes()).sum();
        image + tensors + typed
    }
}

/// A failure to build a source or read a record: always names the
/// parameter, directory or file involved.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("unknown data source `{name}: the registered ones are {known}")]
    UnknownSource {
        /// The name, its closing backquote and any near match.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// A source of a crate the build does not link.
    #[error("data source `{name}` is in the {crate_name} crate, which this build does not link: depend on it and link it in the binary (`use {} as _;`), or, in a profiling crate made by `profile-cli init`, turn on its `sources` feature", .crate_name.replace('-', "_"))]
    SourceNotLinked {
        name: String,
        crate_name: &'static str,
    },
    #[error("data source `{name}` is registered twice, by {places}: rename one")]
    AmbiguousSource { name: String, places: String },
    #[error("data_source ({source_name}): {}{message}", record.map_or(String::new(), |i| format!("record {i}: ")))]
    Source {
        source_name: String,
        /// The record being read, when reading one.
        record: Option<usize>,
        message: String,
    },
    #[error("data_source.{key}: {message}")]
    Parameter { key: String, message: String },
    /// A workload key that picks records (`records`, `shuffle`).
    #[error("{key}: {message}")]
    Workload { key: String, message: String },
    #[error("data_source ({source_name}): {message}")]
    Parameters {
        source_name: String,
        message: String,
    },
    #[error("image directory {} does not exist", .0.display())]
    MissingDirectory(PathBuf),
    /// A directory with none of the files a source reads: `looked_for`
    /// lists their extensions.
    #[error("image directory {} holds no images (looked for {looked_for})", .directory.display())]
    EmptyDirectory {
        directory: PathBuf,
        looked_for: String,
    },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot decode image {}: {message}", path.display())]
    Decode { path: PathBuf, message: String },
    #[error("the data source produced no records")]
    NoRecords,
    #[error("record {index} asked of a source of {len} records")]
    OutOfRange { index: usize, len: usize },
    #[error("{}", memory_refusal(*.needed, .prepared.as_ref(), .available))]
    TooLargeForMemory {
        /// Everything eager loading would hold: the records, and their
        /// prepared inputs when `prepared` says how large those are.
        needed: u64,
        prepared: Option<PreparedBytes>,
        available: AvailableMemory,
    },
}

/// The prepared inputs of an eager run, measured on its first record (or
/// first batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedBytes {
    /// What `prepare` kept for the first record (`prepare_batch` for the
    /// first batch).
    pub each: u64,
    /// `each` for every record (every batch).
    pub total: u64,
    /// The record it was measured on; of a batch, its first record.
    pub record_id: String,
    /// With `batch_size` > 1: the records of the batch it was measured on.
    pub batch: Option<usize>,
}

/// The memory a run was checked against, and where that figure comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvailableMemory {
    pub bytes: u64,
    /// `8.0 GiB of memory available (MemAvailable)`, or the cgroup limit.
    pub description: String,
}

impl AvailableMemory {
    /// `bytes` described as plainly available memory.
    pub fn plain(bytes: u64) -> AvailableMemory {
        AvailableMemory {
            bytes,
            description: format!("{} of memory available", human_bytes(bytes)),
        }
    }
}

fn memory_refusal(
    needed: u64,
    prepared: Option<&PreparedBytes>,
    available: &AvailableMemory,
) -> String {
    let holds = match prepared {
        None => format!("about {} of records", human_bytes(needed)),
        Some(prepared) => format!(
            "about {}: {} of records and {} of prepared inputs ({} {}, measured on {}`{}`)",
            human_bytes(needed),
            human_bytes(needed.saturating_sub(prepared.total)),
            human_bytes(prepared.total),
            human_bytes(prepared.each),
            if prepared.batch.is_some() {
                "a batch"
            } else {
                "each"
            },
            match prepared.batch {
                Some(records) => format!("the batch of {records} from record "),
                None => "record ".to_owned(),
            },
            prepared.record_id
        ),
    };
    format!(
        "eager loading would hold {holds}, more than {EAGER_MEMORY_PERCENT}% of the {}, the other {}% being kept for the target's outputs and the rest of the process: \
         use `record_loading: lazy` with `target.profile_prepare: true`, or fewer records (limit/repeat/record_count)",
        available.description,
        100 - EAGER_MEMORY_PERCENT
    )
}

/// A source as the runner reads it: a [`RecordSource`] under the name it
/// was built by, its errors [`DataError`]s that name it. What [`build`] and
/// [`named`] give; a source implements [`RecordSource`], never this.
pub trait DataSource: Send + Sync + sealed::Adapter {
    /// The source's name (`data_source.name`).
    fn name(&self) -> &str;
    /// The source's own summary of what it reads, for the manifest.
    fn describe(&self) -> BTreeMap<String, Value>;
    /// The cache this source fills as it reads, when it keeps one
    /// ([`SourceContext`]): the run reports what it did.
    fn cache(&self) -> Option<Arc<dyn CacheStats>> {
        None
    }
    /// How many records one pass reads.
    fn len(&self) -> usize;
    /// True when a pass reads nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes of decoded data (images, tensors) that one pass's records hold
    /// when all of them are in memory at once, as eager loading keeps them.
    /// Found without decoding anything: from the parameters, or from image
    /// headers.
    fn estimated_bytes(&self) -> Result<u64, DataError>;
    /// Reads record `index` (`0..len()`).
    fn read(&self, index: usize) -> Result<DataRecord, DataError>;
    /// Record `index`'s id without reading it, when the source knows it;
    /// `None` when only reading it tells.
    fn record_id(&self, index: usize) -> Option<String> {
        let _ = index;
        None
    }
    /// Why the source can only be read lazily (inside the passes), when
    /// it can only be: an eager run is refused with it before anything is
    /// read.
    fn needs_lazy_loading(&self) -> Option<String> {
        None
    }
    /// True when records are cheapest read one after the other in index
    /// order ([`RecordSource::reads_in_order`]).
    fn reads_in_order(&self) -> bool {
        false
    }
    /// Reads every record, in order: in parallel where the source can.
    fn read_all(&self) -> Result<Vec<DataRecord>, DataError> {
        self.read_rest(Vec::new())
    }
    /// [`read_all`](DataSource::read_all) when the first records are read
    /// already (`known`, records `0..known.len()`): they are kept, not read
    /// again, and the rest are read after them.
    fn read_rest(&self, known: Vec<DataRecord>) -> Result<Vec<DataRecord>, DataError> {
        let mut records = known;
        records.truncate(self.len());
        for index in records.len()..self.len() {
            records.push(self.read(index)?);
        }
        Ok(records)
    }
}

/// Keeps [`DataSource`] to the registry's adapter.
mod sealed {
    pub trait Adapter {}
}

/// Builds the source named `name` from its parameters (every key of the
/// `data_source` mapping but `name` and the run's own keys): any
/// registered source ([`sources`]).
pub fn build(
    name: &str,
    parameters: &serde_yaml::Mapping,
) -> Result<Box<dyn DataSource>, DataError> {
    find_source(name)?.build(parameters)
}

/// The parameters the source `name` takes: the keys of its `data_source`
/// mapping besides `name` and the run's own keys (none for a name no
/// source is registered as).
pub fn parameter_names(name: &str) -> Vec<&'static str> {
    find_source(name).map_or_else(|_| Vec::new(), SourceEntry::parameters)
}

/// [`build`], opened in `context`: a source that keeps a cache across
/// runs (`data_source.cache: true`) keeps it under its `cache_root`.
pub fn build_in(
    name: &str,
    parameters: &serde_yaml::Mapping,
    context: &SourceContext,
) -> Result<Box<dyn DataSource>, DataError> {
    find_source(name)?.build_in(parameters, context)
}

/// The parameter that turns a source's cache on, which `--cache` sets: only
/// sources whose parameters have it keep one.
pub const CACHE_KEY: &str = "cache";

/// Whether the source `name` keeps a cache when asked (its parameters have
/// [`CACHE_KEY`]).
pub fn takes_cache(name: &str) -> bool {
    parameter_names(name).contains(&CACHE_KEY)
}

/// Why the source `name` takes no cache: which sources do.
pub fn cache_refusal(name: &str) -> String {
    let caching: Vec<String> = source_names()
        .into_iter()
        .filter(|source| takes_cache(source))
        .map(|source| format!("`{source}`"))
        .collect();
    match caching.as_slice() {
        [] => format!("no source of this build keeps a cache; `{name}` makes its records"),
        [one] => format!("only the {one} source reads files whose decoded images can be cached; `{name}` makes its records"),
        several => format!("only the {} sources read files whose decoded records can be cached; `{name}` makes its records", several.join(", ")),
    }
}

/// The share of the available memory, in percent, that eager loading may
/// fill: the rest is left to the target, its outputs and everything else on
/// the machine.
pub const EAGER_MEMORY_PERCENT: u64 = 80;

/// Bytes a record holds beyond its decoded data (its id, path and the maps
/// of tensors, metadata and source), rounded up to about twice the most
/// either source's records hold: it keeps millions of undecoded records
/// from passing the check.
pub const RECORD_OVERHEAD_BYTES: u64 = 8192;

/// The bytes eager loading of `source` would hold: its
/// [`DataSource::estimated_bytes`] and [`RECORD_OVERHEAD_BYTES`] per record.
pub fn eager_bytes(source: &dyn DataSource) -> Result<u64, DataError> {
    let overhead = (source.len() as u64).saturating_mul(RECORD_OVERHEAD_BYTES);
    Ok(source.estimated_bytes()?.saturating_add(overhead))
}

/// Refuses eager loading of `source` when its [`eager_bytes`] exceed
/// [`EAGER_MEMORY_PERCENT`] of `available` bytes; otherwise returns them.
///
/// ```
/// use profiling_core::data::{self, DataError};
///
/// let parameters = serde_yaml::from_str("{record_count: 1000, image_shape: [1080, 1920, 3]}").unwrap();
/// let source = data::build("dummy", &parameters).unwrap();
/// let error = data::check_fits(&*source, 1 << 30).unwrap_err();
/// assert!(matches!(error, DataError::TooLargeForMemory { .. }));
/// assert!(error.to_string().contains("record_loading: lazy"));
/// ```
pub fn check_fits(source: &dyn DataSource, available: u64) -> Result<u64, DataError> {
    check_within(
        eager_bytes(source)?,
        None,
        &AvailableMemory::plain(available),
    )
}

/// Refuses `needed` bytes (with `prepared` inputs among them, when known)
/// beyond [`EAGER_MEMORY_PERCENT`] of `available`; otherwise returns them.
pub fn check_within(
    needed: u64,
    prepared: Option<PreparedBytes>,
    available: &AvailableMemory,
) -> Result<u64, DataError> {
    let allowed = u128::from(available.bytes) * u128::from(EAGER_MEMORY_PERCENT) / 100;
    if u128::from(needed) > allowed {
        return Err(DataError::TooLargeForMemory {
            needed,
            prepared,
            available: available.clone(),
        });
    }
    Ok(needed)
}

/// What this process may use now ([`crate::memory::budget`]), for
/// [`check_within`]; `None` where it cannot be read.
pub fn memory_budget() -> Option<AvailableMemory> {
    crate::memory::budget().map(|budget| AvailableMemory {
        bytes: budget.bytes,
        description: budget.describe(),
    })
}

/// [`check_fits`] against what this process may use now
/// ([`memory_budget`]); when that cannot be read, returns the estimate
/// unchecked. Call it before loading a source eagerly (`read_all`); lazy
/// loading holds one record at a time and needs no check.
pub fn check_fits_in_memory(source: &dyn DataSource) -> Result<u64, DataError> {
    match memory_budget() {
        Some(available) => check_within(eager_bytes(source)?, None, &available),
        None => eager_bytes(source),
    }
}

pub use crate::memory::human_bytes;

/// The results of work done on every core, in the order of its inputs, as
/// one: the first error in that order, not whichever thread failed first,
/// so that a run with several bad files names the same one every time.
pub fn in_order<T, E>(results: Vec<Result<T, E>>) -> Result<Vec<T>, E> {
    results.into_iter().collect()
}

/// Deserializes a source's parameters into its typed struct, with an error
/// that names the parameter.
pub fn parse_parameters<T: serde::de::DeserializeOwned>(
    source_name: &str,
    parameters: &serde_yaml::Mapping,
) -> Result<T, DataError> {
    crate::yaml::deserialize_mapping(parameters).map_err(|(key, message)| match key {
        Some(key) => DataError::Parameter { key, message },
        None => DataError::Parameters {
            source_name: source_name.to_owned(),
            message,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source with `len` records and only what the trait requires.
    struct Counted(usize);

    impl RecordSource for Counted {
        type Parameters = ();
        fn open(_: ()) -> anyhow::Result<Self> {
            Ok(Counted(0))
        }
        fn len(&self) -> usize {
            self.0
        }
        fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
            Ok(DataRecord {
                id: format!("r{index}"),
                ..DataRecord::default()
            })
        }
    }

    #[test]
    fn every_registered_name_is_a_source_build_knows() {
        for name in source_names() {
            let built = build(name, &serde_yaml::Mapping::new());
            assert!(
                !matches!(built, Err(DataError::UnknownSource { .. })),
                "{name}"
            );
        }
    }

    #[test]
    fn a_source_is_empty_when_a_pass_reads_nothing() {
        assert!(named("counted", Counted(0)).is_empty());
        assert!(!named("counted", Counted(2)).is_empty());
        let ids: Vec<String> = named("counted", Counted(2))
            .read_all()
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["r0", "r1"]);
    }
}
