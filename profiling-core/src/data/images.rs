//! The `images` source: image files from a directory or a list, decoded to
//! RGB.
//!
//! Files are taken in path order; `limit` keeps the first N, then `repeat`
//! cycles them until exactly `repeat` records are emitted, the k-th repeat
//! of a file (k from 1) getting the id `<stem>-repeat-<k>`. Eager loading
//! decodes each distinct file once, across all cores, keeping the order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;
use serde_yaml::Value;

use super::{parse_parameters, DataError, DataRecord, DataSource};
use crate::config::check_literal_path;

/// The file extensions read, compared without regard to case.
pub const EXTENSIONS: &[&str] = &["bmp", "jpeg", "jpg", "png", "tif", "tiff", "webp"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageParameters {
    directory: Option<PathBuf>,
    paths: Option<Vec<PathBuf>>,
    #[serde(default = "default_decode")]
    decode: bool,
    limit: Option<usize>,
    repeat: Option<usize>,
}

fn default_decode() -> bool {
    true
}

/// Where the files came from, for the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageOrigin {
    Directory(PathBuf),
    Paths,
}

/// Image files; see the module docs.
#[derive(Debug, Clone)]
pub struct ImageSource {
    origin: ImageOrigin,
    /// The distinct files, sorted, after `limit`.
    files: Vec<PathBuf>,
    decode: bool,
    limit: Option<usize>,
    repeat: Option<usize>,
}

fn parameter_error(key: &str, message: impl Into<String>) -> DataError {
    DataError::Parameter {
        key: key.to_owned(),
        message: message.into(),
    }
}

/// True for a file name with one of [`EXTENSIONS`].
pub fn has_image_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.iter().any(|known| known.eq_ignore_ascii_case(e)))
}

impl ImageSource {
    /// Builds the source from its config parameters, listing the files now
    /// so that a missing or empty directory is reported before any run.
    pub fn from_parameters(parameters: &serde_yaml::Mapping) -> Result<Self, DataError> {
        let params: ImageParameters = parse_parameters("images", parameters)?;
        let (origin, mut files) =
            match (params.directory, params.paths) {
                (Some(_), Some(_)) => {
                    return Err(parameter_error(
                        "paths",
                        "give either `directory` or `paths`, not both",
                    ))
                }
                (None, None) => return Err(parameter_error(
                    "directory",
                    "missing: the images source needs `directory` (or `paths`, a list of files)",
                )),
                (Some(directory), None) => {
                    check_literal_path(&directory.to_string_lossy())
                        .map_err(|m| parameter_error("directory", m))?;
                    let files = list_directory(&directory)?;
                    (ImageOrigin::Directory(directory), files)
                }
                (None, Some(paths)) => {
                    if paths.is_empty() {
                        return Err(parameter_error(
                            "paths",
                            "is empty: list at least one image file",
                        ));
                    }
                    for path in &paths {
                        check_literal_path(&path.to_string_lossy())
                            .map_err(|m| parameter_error("paths", m))?;
                        if !path.is_file() {
                            return Err(parameter_error(
                                "paths",
                                format!("{} is not a file", path.display()),
                            ));
                        }
                    }
                    (ImageOrigin::Paths, paths)
                }
            };
        files.sort();
        if let Some(limit) = params.limit {
            if limit == 0 {
                return Err(parameter_error("limit", "must be >= 1"));
            }
            files.truncate(limit);
        }
        if params.repeat == Some(0) {
            return Err(parameter_error("repeat", "must be >= 1"));
        }
        Ok(ImageSource {
            origin,
            files,
            decode: params.decode,
            limit: params.limit,
            repeat: params.repeat,
        })
    }

    /// The distinct files read, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Record `index` is file `index % files` in its `index / files`-th repeat.
    fn position(&self, index: usize) -> (&Path, usize) {
        let count = self.files.len();
        (&self.files[index % count], index / count)
    }

    fn record(&self, index: usize, image: Option<image::RgbImage>) -> DataRecord {
        let (path, repeat) = self.position(index);
        let stem = path
            .file_stem()
            .map_or_else(|| path.to_string_lossy(), |s| s.to_string_lossy());
        let id = if repeat == 0 {
            stem.into_owned()
        } else {
            format!("{stem}-repeat-{repeat}")
        };
        let mut metadata = BTreeMap::new();
        if let Some(image) = &image {
            metadata.insert("width".to_owned(), Value::from(image.width()));
            metadata.insert("height".to_owned(), Value::from(image.height()));
        }
        DataRecord {
            id,
            image,
            path: Some(path.to_path_buf()),
            tensors: BTreeMap::new(),
            metadata,
            source: BTreeMap::from([
                ("name".to_owned(), Value::from("images")),
                ("index".to_owned(), Value::from(index as u64)),
                (
                    "path".to_owned(),
                    Value::from(path.to_string_lossy().into_owned()),
                ),
                ("repeat".to_owned(), Value::from(repeat as u64)),
            ]),
        }
    }
}

fn list_directory(directory: &Path) -> Result<Vec<PathBuf>, DataError> {
    if !directory.is_dir() {
        return Err(DataError::MissingDirectory(directory.to_path_buf()));
    }
    let entries = std::fs::read_dir(directory).map_err(|source| DataError::Io {
        path: directory.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| DataError::Io {
            path: directory.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if path.is_file() && has_image_extension(&path) {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(DataError::EmptyDirectory(directory.to_path_buf()));
    }
    Ok(files)
}

/// Decodes `path` to RGB, guessing the format from the content.
pub fn decode_rgb(path: &Path) -> Result<image::RgbImage, DataError> {
    let reader = image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|source| DataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    decode_to_rgb(reader).map_err(|message| DataError::Decode {
        path: path.to_path_buf(),
        message,
    })
}

/// [`decode_rgb`] of an encoded image held in memory; the error is the
/// decoder's message.
pub fn decode_rgb_bytes(bytes: &[u8]) -> Result<image::RgbImage, String> {
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|error| error.to_string())?;
    decode_to_rgb(reader)
}

/// The one decoding step of files and bytes alike, within the `image`
/// crate's default limits (512 MiB per allocation).
fn decode_to_rgb<R: std::io::BufRead + std::io::Seek>(
    reader: image::ImageReader<R>,
) -> Result<image::RgbImage, String> {
    let decoded = reader.decode().map_err(|error| error.to_string())?;
    Ok(decoded.to_rgb8())
}

/// The width and height of the image in `path`, read from its header only.
pub fn image_dimensions(path: &Path) -> Result<(u32, u32), DataError> {
    let reader = image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|source| DataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    reader.into_dimensions().map_err(|error| DataError::Decode {
        path: path.to_path_buf(),
        message: error.to_string(),
    })
}

/// [`image_dimensions`] of an encoded image held in memory.
pub fn image_dimensions_bytes(bytes: &[u8]) -> Result<(u32, u32), String> {
    image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|error| error.to_string())?
        .into_dimensions()
        .map_err(|error| error.to_string())
}

impl DataSource for ImageSource {
    fn name(&self) -> &str {
        "images"
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        let mut description = BTreeMap::new();
        match &self.origin {
            ImageOrigin::Directory(directory) => {
                description.insert(
                    "directory".to_owned(),
                    Value::from(directory.to_string_lossy().into_owned()),
                );
            }
            ImageOrigin::Paths => {
                let paths = self
                    .files
                    .iter()
                    .map(|p| Value::from(p.to_string_lossy().into_owned()))
                    .collect();
                description.insert("paths".to_owned(), Value::Sequence(paths));
            }
        }
        description.insert("files".to_owned(), Value::from(self.files.len() as u64));
        description.insert("records".to_owned(), Value::from(self.len() as u64));
        description.insert("decode".to_owned(), Value::Bool(self.decode));
        if let Some(limit) = self.limit {
            description.insert("limit".to_owned(), Value::from(limit as u64));
        }
        if let Some(repeat) = self.repeat {
            description.insert("repeat".to_owned(), Value::from(repeat as u64));
        }
        description
    }

    fn len(&self) -> usize {
        self.repeat.unwrap_or(self.files.len())
    }

    /// Width × height × 3 of every record from the file headers, a file
    /// counted once per record it gives (eager loading holds a copy of the
    /// image per repeat); 0 without `decode`.
    fn estimated_bytes(&self) -> Result<u64, DataError> {
        if !self.decode || self.files.is_empty() || self.is_empty() {
            return Ok(0);
        }
        let records = self.len() as u64;
        let files = self.files.len() as u64;
        let used = self.files.len().min(self.len());
        let sizes: Vec<u64> = self.files[..used]
            .par_iter()
            .enumerate()
            .map(|(position, path)| {
                let (width, height) = image_dimensions(path)?;
                // Record `i` is file `i % files`: this file's share of them.
                let copies = records / files + u64::from((position as u64) < records % files);
                Ok(u64::from(width)
                    .saturating_mul(u64::from(height))
                    .saturating_mul(3)
                    .saturating_mul(copies))
            })
            .collect::<Result<_, DataError>>()?;
        Ok(sizes.into_iter().fold(0, u64::saturating_add))
    }

    fn read(&self, index: usize) -> Result<DataRecord, DataError> {
        if index >= self.len() {
            return Err(DataError::OutOfRange {
                index,
                len: self.len(),
            });
        }
        let image = if self.decode {
            Some(decode_rgb(self.position(index).0)?)
        } else {
            None
        };
        Ok(self.record(index, image))
    }

    fn read_all(&self) -> Result<Vec<DataRecord>, DataError> {
        let distinct = self.files.len().min(self.len());
        let mut images: Vec<Option<image::RgbImage>> = if self.decode {
            self.files[..distinct]
                .par_iter()
                .map(|path| decode_rgb(path).map(Some))
                .collect::<Result<_, _>>()?
        } else {
            vec![None; distinct]
        };
        let len = self.len();
        Ok((0..len)
            .map(|index| {
                // A file's last record takes its image and the repeats before
                // copy it, so no image is held twice: what
                // `estimated_bytes` counts.
                let slot = &mut images[index % distinct];
                let image = if index + distinct >= len {
                    slot.take()
                } else {
                    slot.clone()
                };
                self.record(index, image)
            })
            .collect())
    }
}
