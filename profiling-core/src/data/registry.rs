//! The link-time registry of data sources, and the one trait a source
//! implements.
//!
//! `#[data_source(name = "...")]` on an `impl RecordSource for T` block
//! submits one [`SourceEntry`] through `inventory`, as `#[profile_target]`
//! does for targets; the built-in `dummy` and the sources of
//! `profiling-sources` register the same way. `data_source.name` in a
//! config picks an entry by name, and the entry builds the source from the
//! rest of the `data_source` mapping, deserialized into the source's
//! [`RecordSource::Parameters`], and hands it to the runner as a
//! [`DataSource`]: the adapter that names it and makes its errors
//! [`DataError`]s, which no source implements itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::{self, DeserializeOwned, Visitor};
use serde_yaml::Value;

use super::{parse_parameters, CacheStats, DataError, DataRecord, DataSource, SourceContext};

/// A data source: what `#[data_source(name = "...")]` registers.
///
/// The config's `data_source` mapping, less `name` and the run's own keys
/// (`cache`, `cache_max_bytes`, `shuffle`, `records`), is deserialized into
/// [`Parameters`](RecordSource::Parameters): a key it has no field for, or a
/// value of the wrong type, is an error naming the file, the key and its
/// line and column, before anything runs. [`open`](RecordSource::open) then
/// builds the source; [`read`](RecordSource::read) gives record `index` of
/// `0..len()`, once per run for eager loading and once per pass for lazy.
///
/// ```
/// use std::collections::BTreeMap;
/// use profiling_core::data::{DataRecord, RecordSource};
/// use profiling_core::prelude::*;
///
/// /// Boxes that overlap in clusters, as a detector's proposals do.
/// struct Clusters {
///     parameters: ClusterParameters,
/// }
///
/// #[derive(serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct ClusterParameters {
///     records: usize,
///     #[serde(default = "ten")]
///     boxes: usize,
/// }
///
/// fn ten() -> usize {
///     10
/// }
///
/// #[data_source(name = "clusters")]
/// impl RecordSource for Clusters {
///     type Parameters = ClusterParameters;
///
///     fn open(parameters: ClusterParameters) -> anyhow::Result<Self> {
///         anyhow::ensure!(parameters.records > 0, "records: must be >= 1");
///         Ok(Clusters { parameters })
///     }
///
///     fn len(&self) -> usize {
///         self.parameters.records
///     }
///
///     fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
///         let boxes: Vec<f32> = (0..self.parameters.boxes * 4)
///             .map(|i| (index * 7 + i) as f32 % 50.0)
///             .collect();
///         let boxes = ndarray::ArrayD::from_shape_vec(vec![self.parameters.boxes, 4], boxes)?;
///         Ok(DataRecord {
///             id: format!("cluster-{index}"),
///             tensors: BTreeMap::from([("boxes".to_owned(), boxes)]),
///             ..DataRecord::default()
///         })
///     }
/// }
///
/// # fn main() {
/// let entry = profiling_core::data::find_source("clusters").unwrap();
/// assert_eq!(entry.parameters(), ["records", "boxes"]);
/// let source = profiling_core::data::build("clusters", &serde_yaml::from_str("{records: 3}").unwrap()).unwrap();
/// assert_eq!(source.len(), 3);
/// assert_eq!(source.read(2).unwrap().tensor("boxes").unwrap().shape(), [10, 4]);
/// # }
/// ```
pub trait RecordSource: Send + Sync + Sized + 'static {
    /// The source's parameters, deserialized from the config's
    /// `data_source` mapping. A struct deriving `serde::Deserialize` lists
    /// its keys in `list --sources` and in sweeps.
    type Parameters: DeserializeOwned;

    /// The parameter, as a config sets it, that gives records a decoded
    /// image, for a source that can leave images out (`dummy`'s
    /// `include_image: true`): what the error of a record without one
    /// ([`DataRecord::image`]) suggests. `None` (the default): none.
    const IMAGE_PARAMETER: Option<&'static str> = None;

    /// True for the source that `run --directory DIR` reads: DIR becomes
    /// its `directory` parameter, in place of its `paths`, and a config of
    /// another source gives way to it. One source of a build says so (the
    /// `profiling-sources` crate's image files). `false` (the default).
    const DIRECTORY_OPTION: bool = false;

    /// Builds the source: find its files, check what the parameters ask
    /// for. An error refuses the run before any pass, naming the source; a
    /// [`DataError`] returned here (through `anyhow`) is kept as it is, so
    /// `DataError::Parameter` names the key at fault.
    fn open(parameters: Self::Parameters) -> anyhow::Result<Self>;

    /// How many records one pass reads.
    fn len(&self) -> usize;

    /// True when a pass reads nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads record `index` (`0..len()`: an index past the end is refused
    /// before it is called). Record ids should be unique.
    fn read(&self, index: usize) -> anyhow::Result<DataRecord>;

    /// The source's own summary of what it reads, for the manifest.
    fn describe(&self) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }

    /// Bytes one pass's records hold in memory, when known without reading
    /// them: eager loading is refused before it starts when they would not
    /// fit. `None` (the default) leaves the check to the records' count.
    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        Ok(None)
    }

    /// Record `index`'s id without reading it, when the source knows it
    /// (a file's name): `records: [id, ...]` then picks records without
    /// reading the others. `None` (the default) reads a record to learn it.
    fn record_id(&self, index: usize) -> Option<String> {
        let _ = index;
        None
    }

    /// Why the source can only be read lazily, inside the passes (a
    /// decoder measured as part of them), when it can only be: an eager run
    /// is refused with this reason, naming the source, before anything is
    /// read. `None` (the default): either loading.
    fn needs_lazy_loading(&self) -> Option<String> {
        None
    }

    /// True for a source whose records are cheapest read one after the
    /// other in index order (a decoder that streams): records picked or
    /// shuffled by the workload are then read in index order, on one
    /// thread, and put in the order asked. `false` (the default): read on
    /// every core, in any order.
    fn reads_in_order(&self) -> bool {
        false
    }

    /// Opens the source in `context`, where it may keep a cache across
    /// runs (under [`SourceContext::cache_root`]); by default
    /// [`open`](Self::open), which keeps none.
    fn open_in(parameters: Self::Parameters, context: &SourceContext) -> anyhow::Result<Self> {
        let _ = context;
        Self::open(parameters)
    }

    /// The cache the source fills as it reads, when it keeps one: the run
    /// reports what it did ([`CacheStats::summary`]).
    fn cache(&self) -> Option<Arc<dyn CacheStats>> {
        None
    }

    /// Reads every record from `known.len()` on, after the `known` ones:
    /// override it to read in parallel.
    fn read_rest(&self, known: Vec<DataRecord>) -> anyhow::Result<Vec<DataRecord>> {
        let mut records = known;
        records.truncate(self.len());
        for index in records.len()..self.len() {
            records.push(self.read(index).map_err(|error| at_record(index, error))?);
        }
        Ok(records)
    }
}

/// `error`, from reading record `index`, as a [`DataError::Source`] that
/// says so (the source's name is filled in by [`source_error`]); a
/// [`DataError`] is kept as it is.
fn at_record(index: usize, error: anyhow::Error) -> anyhow::Error {
    match error.downcast::<DataError>() {
        Ok(error) => error.into(),
        Err(error) => DataError::Source {
            source_name: String::new(),
            record: Some(index),
            message: format!("{error:#}"),
        }
        .into(),
    }
}

/// One registered data source, as `#[data_source]` describes it.
#[derive(Debug)]
pub struct SourceEntry {
    /// The name `data_source.name` takes.
    pub name: &'static str,
    /// The implementing type as written in the impl block.
    pub type_name: &'static str,
    /// The source file of the impl block, as the compiler names it.
    pub file: &'static str,
    /// The line of the impl block.
    pub line: u32,
    /// The first line of the impl's or the type's doc comment, or empty.
    pub doc: &'static str,
    /// The keys of its parameters ([`parameter_fields`] of its type).
    pub parameters: fn() -> Vec<&'static str>,
    /// Its [`RecordSource::IMAGE_PARAMETER`].
    pub image_parameter: Option<&'static str>,
    /// Its [`RecordSource::DIRECTORY_OPTION`].
    pub directory_option: bool,
    /// Builds the source from its `data_source` mapping.
    pub build: BuildSource,
}

/// [`SourceEntry::build`]: the source's name and its `data_source` mapping
/// to the source.
pub(crate) type BuildSource = fn(
    &'static str,
    &serde_yaml::Mapping,
    &SourceContext,
) -> Result<Box<dyn DataSource>, DataError>;

inventory::collect!(SourceEntry);

impl SourceEntry {
    /// The keys its parameters take.
    pub fn parameters(&self) -> Vec<&'static str> {
        (self.parameters)()
    }

    /// Builds the source from its `data_source` mapping, keeping no cache.
    pub fn build(
        &self,
        parameters: &serde_yaml::Mapping,
    ) -> Result<Box<dyn DataSource>, DataError> {
        self.build_in(parameters, &SourceContext::default())
    }

    /// Builds the source from its `data_source` mapping, opened in `context`.
    pub fn build_in(
        &self,
        parameters: &serde_yaml::Mapping,
        context: &SourceContext,
    ) -> Result<Box<dyn DataSource>, DataError> {
        (self.build)(self.name, parameters, context)
    }
}

/// Every registered source, sorted by name.
pub fn sources() -> Vec<&'static SourceEntry> {
    let mut entries: Vec<&'static SourceEntry> =
        inventory::iter::<SourceEntry>.into_iter().collect();
    entries.sort_by(|a, b| (a.name, a.file, a.line).cmp(&(b.name, b.file, b.line)));
    entries
}

/// The names `data_source.name` accepts, sorted, each once.
pub fn source_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = sources().into_iter().map(|e| e.name).collect();
    names.dedup();
    names
}

/// The sources of the `profiling-sources` crate, the one place the core
/// names sources: a build that does not link the crate cannot learn them
/// from its registry, and is told where they are.
const FILE_SOURCES: [&str; 4] = ["coco", "images", "tensors", "video"];
const FILE_SOURCES_CRATE: &str = "profiling-sources";
/// Of them, the one with [`RecordSource::DIRECTORY_OPTION`], for the same
/// reason.
const FILE_DIRECTORY_SOURCE: &str = "images";

/// The name of the source `run --directory DIR` reads: the registered one
/// with [`RecordSource::DIRECTORY_OPTION`], or, in a build without
/// `profiling-sources`, that crate's, which [`find_source`] then says is
/// not linked.
pub fn directory_source() -> &'static str {
    sources()
        .into_iter()
        .find(|entry| entry.directory_option)
        .map_or(FILE_DIRECTORY_SOURCE, |entry| entry.name)
}

/// The source registered as `name`: refused when none is, or when two
/// are (naming where each is defined).
pub fn find_source(name: &str) -> Result<&'static SourceEntry, DataError> {
    let matching: Vec<&'static SourceEntry> =
        sources().into_iter().filter(|e| e.name == name).collect();
    match matching.as_slice() {
        [entry] => Ok(entry),
        [] if FILE_SOURCES.contains(&name) => Err(DataError::SourceNotLinked {
            name: name.to_owned(),
            crate_name: FILE_SOURCES_CRATE,
        }),
        [] => {
            let names = source_names();
            // A misspelt file source is told its name even where the crate
            // is not linked: the next error then names the crate.
            let candidates = names.iter().chain(FILE_SOURCES.iter()).copied();
            let near = crate::suggest::near_matches(name, candidates);
            Err(DataError::UnknownSource {
                name: match near.first() {
                    Some(near) => format!("{name}` (did you mean `{near}`?)"),
                    None => format!("{name}`"),
                },
                known: names.join(", "),
            })
        }
        several => Err(DataError::AmbiguousSource {
            name: name.to_owned(),
            places: several
                .iter()
                .map(|e| format!("{} ({}:{})", e.type_name, e.file, e.line))
                .collect::<Vec<_>>()
                .join(" and "),
        }),
    }
}

/// What `#[data_source]` registers as [`SourceEntry::build`]: the
/// parameters deserialized (an error names the key), the source opened,
/// and wrapped as a [`DataSource`].
pub fn build_source<S: RecordSource>(
    name: &'static str,
    parameters: &serde_yaml::Mapping,
    context: &SourceContext,
) -> Result<Box<dyn DataSource>, DataError> {
    let parameters: S::Parameters = parse_parameters(name, parameters)?;
    let source =
        S::open_in(parameters, context).map_err(|error| source_error(name, None, error))?;
    Ok(named(name, source))
}

/// `source`, opened by hand rather than built from a config, as the runner
/// reads it: under `name`, with its errors as [`DataError`]s that name it,
/// and an index past its end refused before it is asked. What a registered
/// source is built into, for a test or a tool that opens one itself (or
/// wraps one) and hands it to a [`RunPlan`](crate::driver::runner::RunPlan).
///
/// ```
/// use profiling_core::data::{self, dummy::DummySource};
///
/// let source = data::named("dummy", DummySource { record_count: 2, ..DummySource::default() });
/// let ids: Vec<String> = source.read_all().unwrap().into_iter().map(|r| r.id).collect();
/// assert_eq!(ids, ["dummy-0", "dummy-1"]);
/// assert!(source.read(2).unwrap_err().to_string().contains("record 2 asked of a source of 2"));
/// ```
pub fn named<S: RecordSource>(name: &'static str, source: S) -> Box<dyn DataSource> {
    Box::new(Registered { name, source })
}

/// A [`RecordSource`] as the runner reads it.
struct Registered<S> {
    name: &'static str,
    source: S,
}

impl<S> super::sealed::Adapter for Registered<S> {}

impl<S: RecordSource> DataSource for Registered<S> {
    fn name(&self) -> &str {
        self.name
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        self.source.describe()
    }

    fn cache(&self) -> Option<Arc<dyn CacheStats>> {
        self.source.cache()
    }

    fn len(&self) -> usize {
        self.source.len()
    }

    fn estimated_bytes(&self) -> Result<u64, DataError> {
        Ok(self
            .source
            .estimated_bytes()
            .map_err(|error| source_error(self.name, None, error))?
            .unwrap_or(0))
    }

    fn read(&self, index: usize) -> Result<DataRecord, DataError> {
        // Checked here once for every source, so that `read` gets only
        // indices of `0..len()`.
        let len = self.source.len();
        if index >= len {
            return Err(DataError::OutOfRange { index, len });
        }
        self.source
            .read(index)
            .map_err(|error| source_error(self.name, Some(index), error))
    }

    fn record_id(&self, index: usize) -> Option<String> {
        self.source.record_id(index)
    }

    fn needs_lazy_loading(&self) -> Option<String> {
        self.source.needs_lazy_loading()
    }

    fn reads_in_order(&self) -> bool {
        self.source.reads_in_order()
    }

    fn read_rest(&self, known: Vec<DataRecord>) -> Result<Vec<DataRecord>, DataError> {
        self.source
            .read_rest(known)
            .map_err(|error| source_error(self.name, None, error))
    }
}

/// A source's error as a [`DataError`]: one it returned is kept; anything
/// else names the source and, when reading, the record.
fn source_error(name: &str, index: Option<usize>, error: anyhow::Error) -> DataError {
    match error.downcast::<DataError>() {
        Ok(DataError::Source {
            source_name,
            record,
            message,
        }) if source_name.is_empty() => DataError::Source {
            source_name: name.to_owned(),
            record: record.or(index),
            message,
        },
        Ok(error) => error,
        Err(error) => DataError::Source {
            source_name: name.to_owned(),
            record: index,
            message: format!("{error:#}"),
        },
    }
}

/// The keys a `Deserialize` struct reads, as its derive lists them; empty
/// for a type that is not a struct (a map takes any key).
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Settings {
///     path: String,
///     #[serde(default)]
///     limit: Option<usize>,
/// }
/// assert_eq!(profiling_core::data::parameter_fields::<Settings>(), ["path", "limit"]);
/// ```
pub fn parameter_fields<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut fields = None;
    let _ = T::deserialize(FieldProbe(&mut fields));
    fields.unwrap_or_default().to_vec()
}

/// A deserializer that answers nothing and notes the fields a struct asks
/// for.
struct FieldProbe<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Probed;

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("probed")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<T: std::fmt::Display>(_message: T) -> Self {
        Probed
    }
}

impl<'de> de::Deserializer<'de> for FieldProbe<'_> {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        *self.0 = Some(fields);
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_lists_its_fields_and_a_map_none() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Two {
            first: u8,
            #[serde(rename = "second_key")]
            second: Option<String>,
        }
        assert_eq!(parameter_fields::<Two>(), ["first", "second_key"]);
        assert!(parameter_fields::<BTreeMap<String, u8>>().is_empty());
    }

    #[test]
    fn the_built_in_sources_are_registered_with_their_fields() {
        let names = source_names();
        assert!(names.contains(&"dummy"), "{names:?}");
        let dummy = find_source("dummy").unwrap();
        assert!(dummy.file.ends_with("dummy.rs"), "{}", dummy.file);
        assert_eq!(
            dummy.parameters(),
            [
                "record_count",
                "limit",
                "image_shape",
                "include_image",
                "tensor_shape",
                "detections"
            ]
        );
    }

    /// `run --directory` and the hint of a record without an image come
    /// from the entries: the dummy source's own, and where no source that
    /// reads a directory is linked (as in this crate's own tests), the
    /// file sources' one, which the build is then told it does not link.
    #[test]
    fn the_entries_say_which_source_reads_a_directory_and_which_keeps_images() {
        assert_eq!(
            find_source("dummy").unwrap().image_parameter,
            Some("include_image: true")
        );
        assert!(!find_source("dummy").unwrap().directory_option);
        assert_eq!(directory_source(), "images");
        let record = DataRecord {
            id: "r".into(),
            ..DataRecord::default()
        };
        assert_eq!(
            record.image().unwrap_err().to_string(),
            "record `r` has no decoded image (dummy: set `include_image: true`)"
        );
    }

    #[test]
    fn a_misspelt_name_is_told_the_near_one() {
        let error = find_source("dumy").unwrap_err().to_string();
        assert!(
            error.starts_with(
                "unknown data source `dumy` (did you mean `dummy`?): the registered ones are "
            ),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_name_lists_the_registered_ones() {
        let error = find_source("webcam").unwrap_err().to_string();
        assert!(
            error.starts_with("unknown data source `webcam`: the registered ones are ")
                && error.contains("dummy"),
            "{error}"
        );
    }

    /// A build without `profiling-sources` is told where the sources that
    /// read files are, not only that they are unknown.
    #[test]
    fn a_source_of_the_crate_not_linked_names_the_crate() {
        let error = find_source("images").unwrap_err().to_string();
        assert_eq!(
            error,
            "data source `images` is in the profiling-sources crate, which this build does not link: depend on it and link it in the binary (`use profiling_sources as _;`), or, in a profiling crate made by `profile-cli init`, turn on its `sources` feature"
        );
        let misspelt = find_source("imgaes").unwrap_err().to_string();
        assert!(
            misspelt.starts_with("unknown data source `imgaes` (did you mean `images`?)"),
            "{misspelt}"
        );
    }
}
