//! The `images` source: image files from a directory or a list, decoded to
//! RGB.
//!
//! Files are taken in path order; `limit` keeps the first N, then `repeat`
//! cycles them until exactly `repeat` records are emitted, the k-th repeat
//! of a file (k from 1) getting the id `<stem>-repeat-<k>`. Eager loading
//! reads and decodes each distinct file once, across all cores, keeping the
//! order; with a [`ImageCache`], an image whose file has not changed since
//! it was last decoded is read back from the cache instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Deserialize;
use serde_yaml::Value;

use crate::cache::{FileKey, ImageCache};
use crate::files::{parameter_error, FileKind};
use profiling_core::data::{
    human_bytes, in_order, parse_parameters, CacheStats, DataError, DataRecord, RecordSource,
    SourceContext,
};
use profiling_core::yaml::parse_size;

/// The file extensions read, compared without regard to case.
pub const EXTENSIONS: &[&str] = &["bmp", "jpeg", "jpg", "png", "tif", "tiff", "webp"];

/// The largest image file read when `max_file_bytes` does not say: 512 MiB,
/// far above any photograph or video frame, far below what would exhaust
/// memory before a decoder refused it.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 512 << 20;

/// Parameters of the images source as the config writes them; see the
/// module docs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageParameters {
    /// The directory whose image files are read (not its subdirectories).
    pub directory: Option<PathBuf>,
    /// The files to read, instead of a directory.
    pub paths: Option<Vec<PathBuf>>,
    /// Decode the images (default true); false gives records with a path only.
    #[serde(default = "default_decode")]
    pub decode: bool,
    /// Keep the first N files.
    pub limit: Option<usize>,
    /// Cycle the files until this many records.
    pub repeat: Option<usize>,
    /// A size (`1 GiB`, or bytes): larger files are never read.
    pub max_file_bytes: Option<serde_yaml::Value>,
    /// What becomes of a file larger than `max_file_bytes`.
    #[serde(default)]
    pub oversized: Oversized,
    /// Keep each decoded image in the cache under the root of the run
    /// directories (`.cache/images/`, see [`crate::cache`]) and read it back
    /// while its file is unchanged (`run --cache`).
    #[serde(default)]
    pub cache: bool,
    /// The most the cache holds (a size; default 2 GiB), the images used
    /// longest ago going first.
    pub cache_max_bytes: Option<serde_yaml::Value>,
}

/// What becomes of an image file larger than `max_file_bytes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Oversized {
    /// The source is refused, naming the file and its size.
    #[default]
    Refuse,
    /// The file is left out, and the manifest counts it.
    Skip,
}

fn default_decode() -> bool {
    true
}

/// Where the files came from, for the manifest.
pub use crate::files::FileOrigin as ImageOrigin;

/// Image files, as `directory` or `paths` list them: a directory that
/// cannot be listed or holds none, and an entry of `paths` that is not a
/// file, are said in the images source's own words.
const IMAGE_FILES: FileKind = FileKind {
    source: "images",
    file: "image file",
    keeps: has_image_extension,
    unlisted: |directory, source| {
        if directory.is_dir() {
            DataError::Io {
                path: directory.to_path_buf(),
                source,
            }
        } else {
            DataError::MissingDirectory(directory.to_path_buf())
        }
    },
    no_files: |directory, _| DataError::EmptyDirectory {
        directory: directory.to_path_buf(),
        looked_for: EXTENSIONS.join(", "),
    },
    unreadable: |path| (!path.is_file()).then(|| format!("{} is not a file", path.display())),
};

/// Image files; see the module docs.
#[derive(Debug, Clone)]
pub struct ImageSource {
    origin: ImageOrigin,
    /// The distinct files, sorted, after `limit`.
    files: Vec<PathBuf>,
    decode: bool,
    limit: Option<usize>,
    repeat: Option<usize>,
    cache: Option<Arc<ImageCache>>,
    max_file_bytes: u64,
    /// Files left out for being larger than `max_file_bytes`.
    skipped: Vec<PathBuf>,
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
        Self::from_parsed(parse_parameters("images", parameters)?)
    }

    /// [`from_parameters`](Self::from_parameters) once they are parsed.
    pub fn from_parsed(params: ImageParameters) -> Result<Self, DataError> {
        let listed = IMAGE_FILES.list(params.directory, None, params.paths)?;
        let (origin, mut files) = (listed.origin, listed.files);
        files.sort();
        let max_file_bytes = match &params.max_file_bytes {
            Some(value) => parse_size(value).map_err(|m| parameter_error("max_file_bytes", m))?,
            None => DEFAULT_MAX_FILE_BYTES,
        };
        // By size, before a byte is read: a decoder refuses a file only
        // once it has read it whole.
        let mut skipped = Vec::new();
        let mut kept = Vec::with_capacity(files.len());
        for file in files {
            let size = std::fs::metadata(&file)
                .map_err(|source| DataError::Io {
                    path: file.clone(),
                    source,
                })?
                .len();
            if size <= max_file_bytes {
                kept.push(file);
            } else if params.oversized == Oversized::Skip {
                skipped.push(file);
            } else {
                return Err(parameter_error(
                    "max_file_bytes",
                    format!(
                        "{} is {}, more than the {} an image file may be: raise `max_file_bytes`, or set `oversized: skip` to leave such files out",
                        file.display(),
                        human_bytes(size),
                        human_bytes(max_file_bytes)
                    ),
                ));
            }
        }
        let mut files = kept;
        if files.is_empty() {
            return Err(parameter_error(
                "max_file_bytes",
                format!(
                    "every image file is larger than {} and was left out (`oversized: skip`)",
                    human_bytes(max_file_bytes)
                ),
            ));
        }
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
            cache: None,
            max_file_bytes,
            skipped,
        })
    }

    /// The source reading decoded images from `cache` where their file is
    /// unchanged, and storing those it decodes.
    pub fn with_cache(mut self, cache: Arc<ImageCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The decoded image of `path`: from the cache when it holds the file
    /// as it is now, else decoded (and stored).
    fn load(&self, path: &Path) -> Result<image::RgbImage, DataError> {
        let Some(cache) = &self.cache else {
            return decode_rgb(path);
        };
        // The key before the content: a file that changes while it is
        // decoded is stored under a key that no longer matches it. A file
        // without a key (deleted, unreadable) is left to `decode_rgb` to
        // name.
        let Ok(key) = FileKey::of(path) else {
            return decode_rgb(path);
        };
        if let Some(image) = cache.get(&key) {
            return Ok(image);
        }
        let image = decode_rgb(path)?;
        cache.put(&key, &image);
        Ok(image)
    }

    /// The width and height of the image in `path`: from the cache's entry
    /// when it holds the file as it is now, else from the file's header.
    fn dimensions(&self, path: &Path) -> Result<(u32, u32), DataError> {
        let cached = self
            .cache
            .as_ref()
            .and_then(|cache| cache.dimensions(&FileKey::of(path).ok()?));
        match cached {
            Some(dimensions) => Ok(dimensions),
            None => image_dimensions(path),
        }
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

    /// Record `index`'s id: its file's stem, with `-repeat-<k>` after it
    /// in the k-th repeat.
    fn id(&self, index: usize) -> String {
        let (path, repeat) = self.position(index);
        let stem = path
            .file_stem()
            .map_or_else(|| path.to_string_lossy(), |s| s.to_string_lossy());
        if repeat == 0 {
            stem.into_owned()
        } else {
            format!("{stem}-repeat-{repeat}")
        }
    }

    fn record(&self, index: usize, image: Option<image::RgbImage>) -> DataRecord {
        let (path, repeat) = self.position(index);
        let id = self.id(index);
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
            typed_tensors: BTreeMap::new(),
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

/// The most one decoded image may take, as the `image` crate's default
/// limits allow: a file that claims more is refused before any allocation.
pub const MAX_DECODED_BYTES: u64 = 512 << 20;

/// Decodes `path` to RGB. The format comes from the content, and from the
/// extension where the content names none.
pub fn decode_rgb(path: &Path) -> Result<image::RgbImage, DataError> {
    let bytes = std::fs::read(path).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let format = image::guess_format(&bytes)
        .ok()
        .or_else(|| image::ImageFormat::from_path(path).ok());
    decode_as(&bytes, format).map_err(|message| DataError::Decode {
        path: path.to_path_buf(),
        message,
    })
}

/// [`decode_rgb`] of an encoded image held in memory, whose format comes
/// from its content; the error is the decoder's message.
pub fn decode_rgb_bytes(bytes: &[u8]) -> Result<image::RgbImage, String> {
    decode_as(bytes, image::guess_format(bytes).ok())
}

/// The one decoding step of files and bytes alike.
fn decode_as(bytes: &[u8], format: Option<image::ImageFormat>) -> Result<image::RgbImage, String> {
    match format {
        Some(image::ImageFormat::Jpeg) => decode_jpeg(bytes),
        Some(format) => decode_with_image(bytes, format),
        // The `image` crate's own words, as before formats were told here.
        None => Err("The image format could not be determined".to_owned()),
    }
}

/// JPEGs in YCbCr or RGB, nearly all of them, go straight through
/// zune-jpeg (the decoder the `image` crate uses, with the options it sets)
/// into the buffer the image keeps: no second copy, no conversion. Other
/// colour spaces (grey, CMYK) take the `image` crate's path, which converts
/// them as it always has.
fn decode_jpeg(bytes: &[u8]) -> Result<image::RgbImage, String> {
    use zune_core::colorspace::ColorSpace;
    let options = zune_core::options::DecoderOptions::default()
        .set_strict_mode(false)
        .set_max_width(usize::MAX)
        .set_max_height(usize::MAX)
        .jpeg_set_out_colorspace(ColorSpace::RGB);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        zune_core::bytestream::ZCursor::new(bytes),
        options,
    );
    decoder.decode_headers().map_err(jpeg_error)?;
    if !matches!(
        decoder.input_colorspace(),
        Some(ColorSpace::YCbCr | ColorSpace::RGB)
    ) {
        return decode_with_image(bytes, image::ImageFormat::Jpeg);
    }
    let (width, height) = decoder
        .dimensions()
        .ok_or("no dimensions after the headers")?;
    let size = (width as u64) * (height as u64) * 3;
    if size > MAX_DECODED_BYTES {
        return Err(too_large(size));
    }
    let mut pixels = vec![0; size as usize];
    profiling_core::memory::prefault_slice(&mut pixels);
    decoder.decode_into(&mut pixels).map_err(jpeg_error)?;
    image::RgbImage::from_raw(width as u32, height as u32, pixels)
        .ok_or_else(|| "the decoder gave fewer pixels than its header said".to_owned())
}

/// The message the `image` crate gives for the same zune-jpeg error.
fn jpeg_error(error: zune_jpeg::errors::DecodeErrors) -> String {
    use image::error::{
        DecodingError, ImageError, LimitError, LimitErrorKind, UnsupportedError,
        UnsupportedErrorKind,
    };
    use zune_jpeg::errors::DecodeErrors;
    let format = image::ImageFormat::Jpeg.into();
    let error = match error {
        DecodeErrors::Unsupported(description) => {
            ImageError::Unsupported(UnsupportedError::from_format_and_kind(
                format,
                UnsupportedErrorKind::GenericFeature(format!("{description:?}")),
            ))
        }
        DecodeErrors::LargeDimensions(_) => {
            ImageError::Limits(LimitError::from_kind(LimitErrorKind::DimensionError))
        }
        other => ImageError::Decoding(DecodingError::new(format, other)),
    };
    error.to_string()
}

fn too_large(bytes: u64) -> String {
    format!(
        "the decoded image would take {}, more than the {} one image may",
        human_bytes(bytes),
        human_bytes(MAX_DECODED_BYTES)
    )
}

/// Every other format, through the `image` crate within its default
/// limits ([`MAX_DECODED_BYTES`] per allocation); an image decoded as RGB
/// is kept as it is, others are converted.
fn decode_with_image(bytes: &[u8], format: image::ImageFormat) -> Result<image::RgbImage, String> {
    let reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), format);
    let decoded = reader.decode().map_err(|error| error.to_string())?;
    Ok(decoded.into_rgb8())
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

/// Registered as `images`.
#[profiling_core::data_source(
    name = "images",
    description = "Image files from a directory or a list, decoded to RGB."
)]
impl RecordSource for ImageSource {
    type Parameters = ImageParameters;

    const IMAGE_PARAMETER: Option<&'static str> = Some("decode: true");

    const DIRECTORY_OPTION: bool = true;

    fn open(parameters: ImageParameters) -> anyhow::Result<Self> {
        Ok(ImageSource::from_parsed(parameters)?)
    }

    fn open_in(parameters: ImageParameters, context: &SourceContext) -> anyhow::Result<Self> {
        let max_bytes = match &parameters.cache_max_bytes {
            Some(value) => parse_size(value).map_err(|m| parameter_error("cache_max_bytes", m))?,
            None => crate::cache::DEFAULT_MAX_BYTES,
        };
        let cache = match (parameters.cache, &context.cache_root) {
            (true, Some(root)) => Some(Arc::new(ImageCache::under(root, max_bytes))),
            _ => None,
        };
        let source = ImageSource::from_parsed(parameters)?;
        Ok(match cache {
            Some(cache) => source.with_cache(cache),
            None => source,
        })
    }

    fn cache(&self) -> Option<Arc<dyn CacheStats>> {
        self.cache
            .clone()
            .map(|cache| -> Arc<dyn CacheStats> { cache })
    }

    fn record_id(&self, index: usize) -> Option<String> {
        (index < self.len()).then(|| self.id(index))
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
        description.insert(
            "max_file_bytes".to_owned(),
            Value::from(self.max_file_bytes),
        );
        if !self.skipped.is_empty() {
            let skipped = self
                .skipped
                .iter()
                .map(|p| Value::from(p.to_string_lossy().into_owned()))
                .collect();
            description.insert("skipped_oversized".to_owned(), Value::Sequence(skipped));
        }
        description
    }

    fn len(&self) -> usize {
        self.repeat.unwrap_or(self.files.len())
    }

    /// Width × height × 3 of every record from the file headers, a file
    /// counted once per record it gives (eager loading holds a copy of the
    /// image per repeat); 0 without `decode`.
    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        if !self.decode || self.files.is_empty() || self.is_empty() {
            return Ok(Some(0));
        }
        let records = self.len() as u64;
        let files = self.files.len() as u64;
        let used = self.files.len().min(self.len());
        let sizes = self.files[..used]
            .par_iter()
            .enumerate()
            .map(|(position, path)| {
                let (width, height) = self.dimensions(path)?;
                // Record `i` is file `i % files`: this file's share of them.
                let copies = records / files + u64::from((position as u64) < records % files);
                Ok(u64::from(width)
                    .saturating_mul(u64::from(height))
                    .saturating_mul(3)
                    .saturating_mul(copies))
            })
            .collect::<Vec<Result<u64, DataError>>>();
        Ok(Some(
            in_order(sizes)?.into_iter().fold(0, u64::saturating_add),
        ))
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        let image = if self.decode {
            Some(self.load(self.position(index).0)?)
        } else {
            None
        };
        Ok(self.record(index, image))
    }

    fn read_rest(&self, known: Vec<DataRecord>) -> anyhow::Result<Vec<DataRecord>> {
        let len = self.len();
        let mut records = known;
        records.truncate(len);
        let first = records.len();
        if first == len {
            return Ok(records);
        }
        let distinct = self.files.len().min(len);
        // The record after the known ones that shows `file` first, if any.
        let used_later = |file: usize| {
            let next = if file >= first {
                file
            } else {
                file + (first - file).div_ceil(distinct) * distinct
            };
            next < len
        };
        // Each distinct file decoded once (on every core), or copied from
        // the known record that holds it; none for a file no later record
        // shows.
        let mut images: Vec<Option<image::RgbImage>> = if self.decode {
            let loaded = self.files[..distinct]
                .par_iter()
                .enumerate()
                .map(|(file, path)| {
                    if !used_later(file) {
                        Ok(None)
                    } else if file < first {
                        Ok(records[file].image.clone())
                    } else {
                        self.load(path).map(Some)
                    }
                })
                .collect::<Vec<_>>();
            in_order(loaded)?
        } else {
            vec![None; distinct]
        };
        for index in first..len {
            // A file's last record takes its image and the repeats before
            // copy it, so no image is held twice: what `estimated_bytes`
            // counts.
            let slot = &mut images[index % distinct];
            let image = if index + distinct >= len {
                slot.take()
            } else {
                slot.clone()
            };
            records.push(self.record(index, image));
        }
        Ok(records)
    }
}
