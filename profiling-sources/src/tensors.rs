//! The `tensors` source: recorded tensors from `.npy`, `.npz` and
//! `.safetensors` files, each named tensor of a file a tensor of the record
//! with its dtype and shape.
//!
//! Files come from `directory` (those whose names match `pattern`, a glob,
//! by default every file with one of the three extensions), from a
//! `pattern` that names its directory as a shell user writes it
//! (`/data/outputs/*.npz`, no `directory`), or from `paths`, in path order; `limit` keeps the first N. A file is one record, its id the
//! file's stem; with `split_axis: k`, a file is one record per index along
//! axis k of its tensors (which must all have the same length there), each
//! record's tensors having that axis taken out, ids `<stem>-<i>`. `repeat`
//! then cycles the records until exactly `repeat` of them, the k-th repeat
//! getting `-repeat-<k>` after its id. Float32 tensors are the record's
//! `tensors`; the others its `typed_tensors`, which `record.tensor(name)`
//! gives as float32 too.
//!
//! Headers are read when the source is built (shapes, dtypes, how many
//! records), so a file that is not a tensor file, or that cannot be split,
//! is refused before any run, naming the file; the data is read with the
//! records.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;
use serde_yaml::Value;

use crate::files::{not_a_regular_file, parameter_error, FileKind, FileOrigin};
use crate::tensor_files::{self, has_tensor_extension, TensorHeader};
use profiling_core::data::{DataError, DataRecord, RecordSource, TensorData, TypedTensor};

/// The tensors of a file named `file_name` (its extension says the
/// format) holding `bytes`, as the source reads them; the error says what
/// is wrong. What the fuzz target and the property tests drive.
pub fn read_tensor_bytes(
    file_name: &str,
    bytes: &[u8],
) -> Result<Vec<(String, TensorData)>, String> {
    tensor_files::read_tensors(Path::new(file_name), bytes)
}

/// Parameters of the tensors source as the config writes them; see the
/// module docs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorParameters {
    /// The directory whose tensor files are read (not its subdirectories).
    pub directory: Option<PathBuf>,
    /// A glob the file names in `directory` must match (`*.npz`, `frame_*.npy`).
    pub pattern: Option<String>,
    /// The files to read, instead of a directory.
    pub paths: Option<Vec<PathBuf>>,
    /// One record per index along this axis of each file's tensors.
    pub split_axis: Option<usize>,
    /// Keep the first N files.
    pub limit: Option<usize>,
    /// Cycle the records until this many.
    pub repeat: Option<usize>,
}

/// One file and what its header says.
#[derive(Debug, Clone)]
struct TensorFile {
    path: PathBuf,
    headers: Vec<TensorHeader>,
    /// Records it gives: 1, or the length of the split axis.
    records: usize,
}

/// Recorded tensor files; see the module docs.
#[derive(Debug, Clone)]
pub struct TensorSource {
    files: Vec<TensorFile>,
    split_axis: Option<usize>,
    /// Records of one cycle: every file's, in order.
    distinct: usize,
    repeat: Option<usize>,
    origin: String,
    /// Entries of the directory that are not files it could read, and
    /// why (`name (a FIFO)`): said in the description.
    skipped: Vec<String>,
}

/// Tensor files, as `directory` (with `pattern`), a `pattern` alone or
/// `paths` list them, a directory or file that cannot be read said in the
/// tensors source's own words.
const TENSOR_FILES: FileKind = FileKind {
    source: "tensors",
    file: "tensor file",
    keeps: has_tensor_extension,
    unlisted: |directory, source| match source.kind() {
        std::io::ErrorKind::NotFound => DataError::Source {
            source_name: "tensors".to_owned(),
            record: None,
            message: format!("directory {} does not exist", directory.display()),
        },
        _ => DataError::Io {
            path: directory.to_path_buf(),
            source,
        },
    },
    no_files: |directory, pattern| DataError::Source {
        source_name: "tensors".to_owned(),
        record: None,
        message: format!(
            "directory {} holds no {}",
            directory.display(),
            match pattern {
                Some(pattern) => format!("file matching `{pattern}`"),
                None => format!(
                    "tensor files (looked for {})",
                    tensor_files::EXTENSIONS.join(", ")
                ),
            }
        ),
    },
    // Opened, a FIFO would wait for a writer for ever.
    unreadable: |path| {
        not_a_regular_file(path)
            .map(|what| format!("{} is {what}, not a tensor file", path.display()))
    },
};

fn file_error(path: &Path, message: impl std::fmt::Display) -> DataError {
    DataError::Source {
        source_name: "tensors".to_owned(),
        record: None,
        message: format!("{}: {message}", path.display()),
    }
}

impl TensorSource {
    /// Lists the files and reads their headers.
    pub fn from_parsed(params: TensorParameters) -> Result<TensorSource, DataError> {
        let listed = TENSOR_FILES.list(params.directory, params.pattern, params.paths)?;
        let origin = match listed.origin {
            FileOrigin::Directory(directory) => directory.display().to_string(),
            FileOrigin::Paths => "paths".to_owned(),
        };
        let (mut paths, skipped) = (listed.files, listed.skipped);
        if let Some(limit) = params.limit {
            if limit == 0 {
                return Err(parameter_error("limit", "must be >= 1"));
            }
            paths.truncate(limit);
        }
        if params.repeat == Some(0) {
            return Err(parameter_error("repeat", "must be >= 1"));
        }
        let files = profiling_core::data::in_order(
            paths
                .par_iter()
                .map(|path| open_file(path, params.split_axis))
                .collect(),
        )?;
        let distinct = files.iter().map(|f| f.records).sum();
        if distinct == 0 {
            return Err(DataError::NoRecords);
        }
        Ok(TensorSource {
            files,
            split_axis: params.split_axis,
            distinct,
            repeat: params.repeat,
            origin,
            skipped,
        })
    }

    /// The file and the index within it of record `index` of a cycle.
    fn position(&self, index: usize) -> (&TensorFile, usize, usize) {
        let cycle = index / self.distinct;
        let mut within = index % self.distinct;
        for file in &self.files {
            if within < file.records {
                return (file, within, cycle);
            }
            within -= file.records;
        }
        unreachable!("index within the records of a cycle")
    }

    fn id(&self, index: usize) -> String {
        let (file, within, cycle) = self.position(index);
        let stem = file
            .path
            .file_stem()
            .map_or_else(|| file.path.to_string_lossy(), |s| s.to_string_lossy());
        let base = match self.split_axis {
            Some(_) => format!("{stem}-{within}"),
            None => stem.into_owned(),
        };
        if cycle == 0 {
            base
        } else {
            format!("{base}-repeat-{cycle}")
        }
    }

    /// Every tensor of `file`, read.
    fn read_file(file: &TensorFile) -> Result<Vec<(String, TensorData)>, DataError> {
        if tensor_files::is_npy(&file.path) {
            let data = tensor_files::read_npy_file(&file.path)
                .map_err(|message| file_error(&file.path, message))?;
            return Ok(vec![(tensor_files::stem(&file.path), data)]);
        }
        let bytes = std::fs::read(&file.path).map_err(|source| DataError::Io {
            path: file.path.clone(),
            source,
        })?;
        tensor_files::read_tensors(&file.path, &bytes)
            .map_err(|message| file_error(&file.path, message))
    }

    /// Record `index` from its file's tensors.
    fn record(
        &self,
        index: usize,
        tensors: &[(String, TensorData)],
    ) -> Result<DataRecord, DataError> {
        let borrowed = tensors
            .iter()
            .map(|(name, data)| (name.clone(), Cow::Borrowed(data)));
        self.record_of(index, borrowed, self.split_axis.is_some())
    }

    /// Record `index` from `tensors`: its file's, taken along the split
    /// axis when `split` is true, or already the record's own.
    fn record_of<'t>(
        &self,
        index: usize,
        tensors: impl IntoIterator<Item = (String, Cow<'t, TensorData>)>,
        split: bool,
    ) -> Result<DataRecord, DataError> {
        let (file, within, _) = self.position(index);
        let mut record = DataRecord {
            id: self.id(index),
            path: Some(file.path.clone()),
            source: BTreeMap::from([
                ("name".to_owned(), Value::from("tensors")),
                ("index".to_owned(), Value::from(index as u64)),
                (
                    "file".to_owned(),
                    Value::from(file.path.display().to_string()),
                ),
            ]),
            ..DataRecord::default()
        };
        if self.split_axis.is_some() {
            record
                .source
                .insert("split_index".to_owned(), Value::from(within as u64));
        }
        for (name, data) in tensors {
            let data = match self.split_axis.filter(|_| split) {
                None => data.into_owned(),
                Some(axis) => data.index_axis(axis, within).ok_or_else(|| {
                    file_error(
                        &file.path,
                        format!("tensor `{name}` changed since its header was read: it has no index {within} on axis {axis}"),
                    )
                })?,
            };
            record
                .metadata
                .insert(format!("{name}.dtype"), Value::from(data.dtype().name()));
            match data {
                TensorData::F32(array) => {
                    record.tensors.insert(name.clone(), array);
                }
                other => {
                    record
                        .typed_tensors
                        .insert(name.clone(), TypedTensor::new(other));
                }
            }
        }
        Ok(record)
    }

    fn len(&self) -> usize {
        self.repeat.unwrap_or(self.distinct)
    }
}

/// `path`'s headers, and how many records it gives.
fn open_file(path: &Path, split_axis: Option<usize>) -> Result<TensorFile, DataError> {
    if !has_tensor_extension(path) {
        return Err(file_error(
            path,
            format!(
                "not a tensor file: expected one of the extensions {}",
                tensor_files::EXTENSIONS.join(", ")
            ),
        ));
    }
    let headers = tensor_files::read_headers(path).map_err(|message| file_error(path, message))?;
    if headers.is_empty() {
        return Err(file_error(path, "holds no tensors"));
    }
    let records = match split_axis {
        None => 1,
        Some(axis) => {
            let mut length = None;
            for header in &headers {
                let Some(&side) = header.shape.get(axis) else {
                    return Err(file_error(
                        path,
                        format!(
                            "split_axis {axis}: tensor `{}` has {} dimension(s) ({:?}), so no axis {axis}",
                            header.name,
                            header.shape.len(),
                            header.shape
                        ),
                    ));
                };
                match length {
                    None => length = Some((side, header.name.clone())),
                    Some((first, ref first_name)) if first != side => {
                        return Err(file_error(
                            path,
                            format!(
                                "split_axis {axis}: tensor `{first_name}` has {first} there and `{}` has {side}: every tensor of a split file needs the same length on the axis",
                                header.name
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
            length.map_or(0, |(side, _)| side)
        }
    };
    Ok(TensorFile {
        path: path.to_path_buf(),
        headers,
        records,
    })
}

#[profiling_core::data_source(
    name = "tensors",
    description = "Recorded tensors from .npy, .npz and .safetensors files, every dtype kept."
)]
impl RecordSource for TensorSource {
    type Parameters = TensorParameters;

    fn open(parameters: TensorParameters) -> anyhow::Result<Self> {
        Ok(TensorSource::from_parsed(parameters)?)
    }

    fn len(&self) -> usize {
        TensorSource::len(self)
    }

    fn record_id(&self, index: usize) -> Option<String> {
        (index < TensorSource::len(self)).then(|| self.id(index))
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        let (file, within, _) = self.position(index);
        // A `.npy` split on its first axis: only the record's rows are read.
        if self.split_axis == Some(0) {
            if let Some(row) = tensor_files::read_npy_row(&file.path, within) {
                let (name, data) = row.map_err(|message| file_error(&file.path, message))?;
                return Ok(self.record_of(index, [(name, Cow::Owned(data))], false)?);
            }
        }
        let tensors = TensorSource::read_file(file)?;
        let owned = tensors.into_iter().map(|(n, d)| (n, Cow::Owned(d)));
        Ok(self.record_of(index, owned, self.split_axis.is_some())?)
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        let mut description = BTreeMap::from([
            ("origin".to_owned(), Value::from(self.origin.clone())),
            ("files".to_owned(), Value::from(self.files.len() as u64)),
            (
                "records".to_owned(),
                Value::from(TensorSource::len(self) as u64),
            ),
        ]);
        if let Some(axis) = self.split_axis {
            description.insert("split_axis".to_owned(), Value::from(axis as u64));
        }
        if !self.skipped.is_empty() {
            description.insert(
                "skipped".to_owned(),
                Value::Sequence(self.skipped.iter().cloned().map(Value::from).collect()),
            );
        }
        // The tensors of the first file, as a reader of the manifest needs
        // them to know what was profiled.
        if let Some(first) = self.files.first() {
            let tensors: serde_yaml::Mapping = first
                .headers
                .iter()
                .map(|h| {
                    (
                        Value::from(h.name.clone()),
                        Value::from(format!("{} {:?}", h.dtype, h.shape)),
                    )
                })
                .collect();
            description.insert("tensors".to_owned(), Value::Mapping(tensors));
        }
        description
    }

    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        let cycle: u64 = self
            .files
            .iter()
            .flat_map(|f| f.headers.iter())
            .map(TensorHeader::nbytes)
            .fold(0, u64::saturating_add);
        let len = TensorSource::len(self) as u64;
        Ok(Some(
            (u128::from(cycle) * u128::from(len) / self.distinct.max(1) as u128)
                .min(u128::from(u64::MAX)) as u64,
        ))
    }

    /// Each file read once, across the cores; its records cut from it.
    fn read_rest(&self, known: Vec<DataRecord>) -> anyhow::Result<Vec<DataRecord>> {
        let mut records = known;
        let len = TensorSource::len(self);
        records.truncate(len);
        let start = records.len();
        if start == len {
            return Ok(records);
        }
        let mut read: Vec<Option<Vec<(String, TensorData)>>> = profiling_core::data::in_order(
            self.files
                .par_iter()
                .map(|file| TensorSource::read_file(file).map(Some))
                .collect(),
        )?;
        let mut file_of = Vec::with_capacity(self.distinct);
        for (number, file) in self.files.iter().enumerate() {
            file_of.extend(std::iter::repeat_n(number, file.records));
        }
        for index in start..len {
            let file = file_of[index % self.distinct];
            // A whole file's last record takes its tensors; the records
            // before (repeats, or the rows of a split file) copy theirs.
            let last = self.split_axis.is_none() && index + self.distinct >= len;
            let record = match read[file].take_if(|_| last) {
                Some(owned) => self.record_of(
                    index,
                    owned.into_iter().map(|(n, d)| (n, Cow::Owned(d))),
                    false,
                )?,
                None => self.record(
                    index,
                    read[file].as_deref().expect("kept for a later record"),
                )?,
            };
            records.push(record);
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor_files::tests::{f32_bytes, npy, npz, safetensors_file};

    fn build(yaml: &str) -> Result<Box<dyn profiling_core::data::DataSource>, DataError> {
        profiling_core::data::build("tensors", &serde_yaml::from_str(yaml).unwrap())
    }

    fn recorded() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let raw: Vec<f32> = (0..12).map(|v| v as f32).collect();
        std::fs::write(
            dir.path().join("a.npy"),
            npy("<f4", "(3, 4)", &f32_bytes(&raw)),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.npz"),
            npz(&[
                ("boxes.npy", npy("<f4", "(3, 4)", &f32_bytes(&raw))),
                (
                    "classes.npy",
                    npy(
                        "<i8",
                        "(3,)",
                        &[1i64, 2, 3]
                            .iter()
                            .flat_map(|v| v.to_le_bytes())
                            .collect::<Vec<_>>(),
                    ),
                ),
            ]),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("c.safetensors"),
            safetensors_file(&[("mask", "BOOL", &[3, 2], vec![1, 0, 0, 1, 1, 1])]),
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a tensor").unwrap();
        dir
    }

    #[test]
    fn a_file_is_a_record_and_every_tensor_keeps_its_dtype() {
        let dir = recorded();
        let source = build(&format!("{{directory: {}}}", dir.path().display())).unwrap();
        let records = source.read_all().unwrap();
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(records[0].tensor("a").unwrap().shape(), [3, 4]);
        let b = &records[1];
        assert_eq!(b.tensor("boxes").unwrap()[[2, 3]], 11.0);
        let classes = b.typed_tensor("classes").unwrap();
        assert_eq!(classes.dtype(), profiling_core::data::Dtype::I64);
        // What a target reads as float32 converts, as for any other tensor.
        assert_eq!(
            b.tensor("classes").unwrap().as_slice().unwrap(),
            [1.0, 2.0, 3.0]
        );
        assert_eq!(records[2].tensor("mask").unwrap()[[0, 1]], 0.0);
        assert_eq!(records[2].metadata["mask.dtype"], "bool");
    }

    /// A `pattern` that names its directory, as a shell user writes it,
    /// needs no `directory`; one whose directory is a glob, or that names
    /// none, is refused naming the key.
    #[test]
    fn a_pattern_that_names_its_directory_needs_no_directory() {
        let dir = recorded();
        let source = build(&format!("{{pattern: '{}/*.np*'}}", dir.path().display())).unwrap();
        let records = source.read_all().unwrap();
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(
            source.describe()["origin"],
            Value::from(dir.path().display().to_string())
        );
        let message = |yaml: String| build(&yaml).err().unwrap().to_string();
        assert_eq!(
            message(format!("{{pattern: '{}/*/x.npy'}}", dir.path().display())),
            format!(
                "data_source.pattern: `{0}/*/x.npy`: only the file name may be a glob; `{0}/*` names more than one directory (the files of one directory are read)",
                dir.path().display()
            )
        );
        assert!(message("{pattern: '*.npz'}".to_owned())
            .starts_with("data_source.directory: missing: `pattern: *.npz` names no directory"));
    }

    #[test]
    fn a_split_file_is_a_record_per_index_of_the_axis() {
        let dir = recorded();
        let source = build(&format!(
            "{{directory: {}, pattern: 'b.*', split_axis: 0, repeat: 4}}",
            dir.path().display()
        ))
        .unwrap();
        assert_eq!(source.len(), 4);
        let records = source.read_all().unwrap();
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["b-0", "b-1", "b-2", "b-0-repeat-1"]);
        assert_eq!(
            records[1].tensor("boxes").unwrap().as_slice().unwrap(),
            [4.0, 5.0, 6.0, 7.0]
        );
        assert_eq!(
            records[2].tensor("classes").unwrap().shape(),
            [] as [usize; 0]
        );
        // A lazy read of one record is the eager one.
        assert_eq!(source.read(2).unwrap(), records[2]);
        assert_eq!(source.record_id(3).as_deref(), Some("b-0-repeat-1"));
    }

    #[test]
    fn a_split_npy_is_read_a_row_at_a_time_as_the_whole_file_gives_it() {
        let dir = tempfile::tempdir().unwrap();
        let raw: Vec<f32> = (0..2 * 3 * 4).map(|v| v as f32 / 3.0).collect();
        std::fs::write(
            dir.path().join("outputs.npy"),
            npy("<f4", "(2, 3, 4)", &f32_bytes(&raw)),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("ids.npy"),
            npy(">i2", "(3, 2)", &[0u8, 1, 0, 2, 0, 3, 0, 4, 1, 0, 255, 255]),
        )
        .unwrap();
        let source = build(&format!(
            "{{directory: {}, split_axis: 0}}",
            dir.path().display()
        ))
        .unwrap();
        let eager = source.read_all().unwrap();
        assert_eq!(eager.len(), 5);
        for (index, record) in eager.iter().enumerate() {
            assert_eq!(&source.read(index).unwrap(), record, "record {index}");
        }
        let row = tensor_files::read_npy_row(&dir.path().join("outputs.npy"), 1)
            .unwrap()
            .unwrap()
            .1;
        assert_eq!(row.shape(), [3, 4]);
        assert_eq!(row.to_f32().as_slice().unwrap(), &raw[12..]);
        let ids = source.read(2).unwrap();
        assert_eq!(
            ids.tensor("ids").unwrap().as_slice().unwrap(),
            [256.0, -1.0]
        );
        let error = tensor_files::read_npy_row(&dir.path().join("outputs.npy"), 2)
            .unwrap()
            .unwrap_err();
        assert!(error.contains("no index 2"), "{error}");
    }

    #[test]
    fn files_that_cannot_be_read_or_split_are_refused_naming_the_file() {
        let dir = recorded();
        let path = dir.path().display();
        let error = |yaml: String| build(&yaml).err().unwrap().to_string();
        assert_eq!(
            error(format!("{{directory: {path}, split_axis: 2}}")),
            format!("data_source (tensors): {path}/a.npy: split_axis 2: tensor `a` has 2 dimension(s) ([3, 4]), so no axis 2")
        );
        let b = dir.path().join("b.npz");
        std::fs::write(
            &b,
            npz(&[
                ("x.npy", npy("<f4", "(2,)", &f32_bytes(&[0.0, 1.0]))),
                ("y.npy", npy("<f4", "(3,)", &f32_bytes(&[0.0, 1.0, 2.0]))),
            ]),
        )
        .unwrap();
        assert!(error(format!("{{paths: [{}], split_axis: 0}}", b.display()))
            .ends_with("tensor `x` has 2 there and `y` has 3: every tensor of a split file needs the same length on the axis"));
        assert_eq!(
            error(format!("{{paths: [{path}/notes.txt]}}")),
            format!("data_source (tensors): {path}/notes.txt: not a tensor file: expected one of the extensions npy, npz, safetensors")
        );
        let truncated = dir.path().join("t.npy");
        std::fs::write(
            &truncated,
            &npy("<f4", "(3,)", &f32_bytes(&[1.0, 2.0, 3.0]))[..20],
        )
        .unwrap();
        assert_eq!(
            error(format!("{{paths: [{}]}}", truncated.display())),
            format!("data_source (tensors): {}: the file is truncated: it ends before the header's 118 bytes", truncated.display())
        );
        assert!(error(format!("{{directory: {path}, pattern: '*.pt'}}"))
            .ends_with("holds no file matching `*.pt`"));
        assert!(error("{directory: /nonexistent/recorded}".to_owned()).contains("does not exist"));
    }

    #[test]
    fn data_shorter_than_its_header_is_refused_when_read_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.npy");
        let whole = npy("<f4", "(4,)", &f32_bytes(&[1.0; 4]));
        std::fs::write(&path, &whole[..whole.len() - 4]).unwrap();
        let source = build(&format!("{{paths: [{}]}}", path.display())).unwrap();
        let error = source.read(0).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("data_source (tensors): {}: the data holds 12 bytes of data, and [4] of float32 takes 16", path.display())
        );
    }
}
