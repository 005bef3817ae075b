//! Reading `.npy`, `.npz` and `.safetensors` files into named tensors, and
//! their headers alone (names, dtypes, shapes) without the data.
//!
//! `.npy` is NumPy's format (a magic string, a version, a Python dict
//! literal with `descr`, `fortran_order` and `shape`, then the raw
//! elements), parsed here so that every dtype is read as it is, float16
//! included, and every way a file can be wrong is said precisely. `.npz`
//! is a zip archive of `.npy` members (the `zip` crate), each member a
//! tensor named after it; `.safetensors` is read by the `safetensors`
//! crate, which checks every offset the header declares.

use std::io::Read;
use std::path::Path;

use profiling_core::data::{element_count, Dtype, TensorData};

/// The file extensions read, compared without regard to case.
pub(crate) const EXTENSIONS: &[&str] = &["npy", "npz", "safetensors"];

/// The most a `.npy` header may take: NumPy writes a few hundred bytes.
const MAX_NPY_HEADER: usize = 1 << 20;

/// A tensor's name, dtype and shape, as a file's header gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TensorHeader {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
}

impl TensorHeader {
    /// Bytes its elements take.
    pub(crate) fn nbytes(&self) -> u64 {
        element_count(&self.shape).map_or(u64::MAX, |count| {
            (count as u64).saturating_mul(self.dtype.size() as u64)
        })
    }
}

/// The format of `path`, from its extension.
fn format_of(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?;
    EXTENSIONS
        .iter()
        .copied()
        .find(|known| known.eq_ignore_ascii_case(extension))
}

/// True for a file name with one of [`EXTENSIONS`].
pub(crate) fn has_tensor_extension(path: &Path) -> bool {
    format_of(path).is_some()
}

/// Every tensor of the file at `path`, in the file's order (by name for
/// `.safetensors`, whose header is a map). A `.npy` file holds one tensor,
/// named after the file's stem. The error says what is wrong, without the
/// path (the caller names the file).
pub(crate) fn read_tensors(path: &Path, bytes: &[u8]) -> Result<Vec<(String, TensorData)>, String> {
    match format_of(path) {
        Some("npy") => Ok(vec![(stem(path), read_npy(bytes)?)]),
        Some("npz") => read_npz(bytes),
        Some("safetensors") => read_safetensors(bytes),
        _ => Err(format!(
            "not a tensor file: expected one of the extensions {}",
            EXTENSIONS.join(", ")
        )),
    }
}

/// The headers of every tensor of the file at `path`, reading no more of
/// it than the headers take.
pub(crate) fn read_headers(path: &Path) -> Result<Vec<TensorHeader>, String> {
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let mut reader = std::io::BufReader::new(file);
    match format_of(path) {
        Some("npy") => {
            let header = npy_header(&mut reader)?;
            Ok(vec![TensorHeader {
                name: stem(path),
                dtype: header.dtype,
                shape: header.shape,
            }])
        }
        Some("npz") => {
            let mut archive = zip::ZipArchive::new(reader).map_err(zip_error)?;
            let mut headers = Vec::with_capacity(archive.len());
            for index in 0..archive.len() {
                let mut member = archive.by_index(index).map_err(zip_error)?;
                let name = member_name(member.name())?;
                let header = npy_header(&mut member)
                    .map_err(|message| format!("member `{name}.npy`: {message}"))?;
                headers.push(TensorHeader {
                    name,
                    dtype: header.dtype,
                    shape: header.shape,
                });
            }
            Ok(headers)
        }
        Some("safetensors") => {
            let size = reader
                .get_ref()
                .metadata()
                .map_err(|error| error.to_string())?
                .len();
            safetensors_headers(&mut reader, size)
        }
        _ => Err(format!(
            "not a tensor file: expected one of the extensions {}",
            EXTENSIONS.join(", ")
        )),
    }
}

/// The tensor of the `.npy` file at `path`, its elements read straight
/// into the tensor (a lazy read holds the record once, not the file's
/// bytes beside it). The error says what is wrong, without the path.
pub(crate) fn read_npy_file(path: &Path) -> Result<TensorData, String> {
    use std::io::Seek;
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let end = file.metadata().map_err(|error| error.to_string())?.len();
    let mut reader = std::io::BufReader::new(file);
    let header = npy_header(&mut reader)?;
    let start = reader
        .stream_position()
        .map_err(|error| error.to_string())?;
    let held = end.saturating_sub(start);
    let needed = element_count(&header.shape)
        .and_then(|count| count.checked_mul(header.dtype.size()))
        .map(|bytes| bytes as u64);
    if needed != Some(held) {
        return Err(format!(
            "the data holds {held} bytes of data, and {:?} of {} takes {}",
            header.shape,
            header.dtype,
            needed.map_or_else(|| "more than memory can".to_owned(), |n| n.to_string())
        ));
    }
    TensorData::from_reader(
        header.dtype,
        &header.shape,
        &mut reader,
        header.big_endian,
        header.fortran,
    )
    .map_err(|message| format!("the data {message}"))
}

/// Index `index` along axis 0 of the `.npy` file at `path`, reading only
/// its bytes (and the header): what a record of a file split on its first
/// axis needs, so a lazy run holds one record, not the file. `None` when
/// the file is not a C-order `.npy` (the caller reads it whole).
pub(crate) fn read_npy_row(
    path: &Path,
    index: usize,
) -> Option<Result<(String, TensorData), String>> {
    use std::io::{Seek, SeekFrom};
    if format_of(path) != Some("npy") {
        return None;
    }
    let read = || -> Result<Option<(String, TensorData)>, String> {
        let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
        let mut reader = std::io::BufReader::new(file);
        let header = npy_header(&mut reader)?;
        if header.fortran || header.shape.is_empty() {
            return Ok(None);
        }
        let rows = header.shape[0];
        if index >= rows {
            return Err(format!(
                "has {rows} along axis 0 now, so no index {index}: it changed since its header was read"
            ));
        }
        let row_shape = &header.shape[1..];
        let row_bytes = element_count(row_shape)
            .and_then(|count| count.checked_mul(header.dtype.size()))
            .ok_or_else(|| {
                format!(
                    "the shape {:?} holds more bytes than memory can",
                    header.shape
                )
            })?;
        let start = reader
            .stream_position()
            .map_err(|error| error.to_string())?;
        let offset = (index as u64)
            .checked_mul(row_bytes as u64)
            .and_then(|o| o.checked_add(start))
            .ok_or_else(|| "its data lies past what a file can hold".to_owned())?;
        let mut file = reader.into_inner();
        let end = file.metadata().map_err(|error| error.to_string())?.len();
        if offset.saturating_add(row_bytes as u64) > end {
            return Err(format!(
                "the file is truncated: it ends before the data of index {index}"
            ));
        }
        file.seek(SeekFrom::Start(offset))
            .map_err(|error| error.to_string())?;
        let data =
            TensorData::from_reader(header.dtype, row_shape, &mut file, header.big_endian, false)
                .map_err(|message| format!("the data of index {index} {message}"))?;
        Ok(Some((stem(path), data)))
    };
    read().transpose()
}

/// True for a `.npy` file name.
pub(crate) fn is_npy(path: &Path) -> bool {
    format_of(path) == Some("npy")
}

/// A `.npy` tensor's name: its file's stem.
pub(crate) fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| path.to_string_lossy(), |s| s.to_string_lossy())
        .into_owned()
}

/// What a `.npy` header says.
#[derive(Debug)]
struct NpyHeader {
    dtype: Dtype,
    big_endian: bool,
    fortran: bool,
    shape: Vec<usize>,
}

/// Reads the magic string, the version and the header dict from `reader`,
/// leaving it at the first byte of data.
fn npy_header(reader: &mut impl Read) -> Result<NpyHeader, String> {
    let mut preamble = [0u8; 8];
    read_exact(reader, &mut preamble, "its first 8 bytes")?;
    if &preamble[..6] != b"\x93NUMPY" {
        return Err(
            "not a .npy file: it does not start with the magic string \\x93NUMPY".to_owned(),
        );
    }
    let major = preamble[6];
    let length = match major {
        1 => {
            let mut raw = [0u8; 2];
            read_exact(reader, &mut raw, "the header's length")?;
            usize::from(u16::from_le_bytes(raw))
        }
        2 | 3 => {
            let mut raw = [0u8; 4];
            read_exact(reader, &mut raw, "the header's length")?;
            u32::from_le_bytes(raw) as usize
        }
        other => {
            return Err(format!(
                "format version {other}.{}: this build reads 1, 2 and 3",
                preamble[7]
            ))
        }
    };
    if length > MAX_NPY_HEADER {
        return Err(format!(
            "the header says it takes {length} bytes, more than the {MAX_NPY_HEADER} a .npy header may"
        ));
    }
    let mut header = vec![0u8; length];
    read_exact(reader, &mut header, &format!("the header's {length} bytes"))?;
    let text = String::from_utf8(header).map_err(|_| "the header is not text".to_owned())?;
    parse_npy_dict(&text)
}

fn read_exact(reader: &mut impl Read, buffer: &mut [u8], what: &str) -> Result<(), String> {
    reader
        .read_exact(buffer)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                format!("the file is truncated: it ends before {what}")
            }
            _ => error.to_string(),
        })
}

/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
fn parse_npy_dict(text: &str) -> Result<NpyHeader, String> {
    let text = text.trim_end_matches(['\n', ' ', '\0']).trim();
    let inner = text
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or_else(|| format!("the header is not a dict: `{}`", shorten(text)))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (key, after) = python_string(rest)
            .ok_or_else(|| format!("the header's keys are not strings: `{}`", shorten(text)))?;
        let after = after
            .trim_start()
            .strip_prefix(':')
            .ok_or_else(|| format!("the header has no `:` after `{key}`"))?
            .trim_start();
        let after = match key.as_str() {
            "descr" => {
                let (value, after) = python_string(after).ok_or_else(|| {
                    "`descr` is not a string: structured dtypes are not read".to_owned()
                })?;
                descr = Some(value);
                after
            }
            "fortran_order" => {
                let (value, after) = if let Some(after) = after.strip_prefix("True") {
                    (true, after)
                } else if let Some(after) = after.strip_prefix("False") {
                    (false, after)
                } else {
                    return Err("`fortran_order` is neither True nor False".to_owned());
                };
                fortran = Some(value);
                after
            }
            "shape" => {
                let close = after
                    .strip_prefix('(')
                    .and_then(|tuple| tuple.find(')').map(|end| (tuple, end)))
                    .ok_or_else(|| "`shape` is not a tuple".to_owned())?;
                let (tuple, end) = close;
                let sides = tuple[..end]
                    .split(',')
                    .map(str::trim)
                    .filter(|side| !side.is_empty())
                    .map(|side| {
                        side.trim_end_matches('L')
                            .parse::<usize>()
                            .map_err(|_| format!("`shape` holds `{side}`, not a whole number"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                shape = Some(sides);
                &tuple[end + 1..]
            }
            other => return Err(format!("the header has an unknown key `{other}`")),
        };
        rest = after.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    let descr = descr.ok_or("the header has no `descr`")?;
    let shape = shape.ok_or("the header has no `shape`")?;
    let (dtype, big_endian) = parse_descr(&descr)?;
    Ok(NpyHeader {
        dtype,
        big_endian,
        fortran: fortran.unwrap_or(false),
        shape,
    })
}

/// A quoted string at the start of `text`, and what follows it.
fn python_string(text: &str) -> Option<(String, &str)> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &text[1..];
    let end = body.find(quote)?;
    Some((body[..end].to_owned(), &body[end + 1..]))
}

fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        short.push_str("...");
    }
    short
}

/// `<f4`, `>i8`, `|b1`, `|u1`: the dtype and whether it is big-endian.
fn parse_descr(descr: &str) -> Result<(Dtype, bool), String> {
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let dtype = match code {
        "b1" | "?" => Dtype::Bool,
        "u1" => Dtype::U8,
        "u2" => Dtype::U16,
        "u4" => Dtype::U32,
        "u8" => Dtype::U64,
        "i1" => Dtype::I8,
        "i2" => Dtype::I16,
        "i4" => Dtype::I32,
        "i8" => Dtype::I64,
        "f2" => Dtype::F16,
        "f4" => Dtype::F32,
        "f8" => Dtype::F64,
        _ => {
            return Err(format!(
                "dtype `{descr}` is not read: bool, uint8-64, int8-64 and float16-64 are"
            ))
        }
    };
    let big_endian = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    Ok((dtype, big_endian))
}

/// One `.npy` file's tensor.
pub(crate) fn read_npy(bytes: &[u8]) -> Result<TensorData, String> {
    let mut reader = bytes;
    let header = npy_header(&mut reader)?;
    TensorData::from_bytes(
        header.dtype,
        &header.shape,
        reader,
        header.big_endian,
        header.fortran,
    )
    .map_err(|message| format!("the data {message}"))
}

fn zip_error(error: zip::result::ZipError) -> String {
    format!("not a readable .npz (zip) archive: {error}")
}

/// `boxes.npy` is the tensor `boxes`; a member of another kind is refused.
fn member_name(name: &str) -> Result<String, String> {
    name.strip_suffix(".npy")
        .map(str::to_owned)
        .ok_or_else(|| format!("member `{name}` is not an array: an .npz holds .npy members"))
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.read += read as u64;
        Ok(read)
    }
}

fn read_npz(bytes: &[u8]) -> Result<Vec<(String, TensorData)>, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(zip_error)?;
    let mut tensors = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).map_err(zip_error)?;
        let name = member_name(member.name())?;
        // The header first; then the archive's size for the member is
        // checked against the one the header describes before any data is
        // inflated, and no more than that is: a member that claims a few
        // bytes and inflates to gigabytes is refused at its header.
        let declared = member.size();
        let mut counted = Counted {
            inner: (&mut member).take(declared),
            read: 0,
        };
        let header = npy_header(&mut counted)
            .map_err(|message| format!("member `{name}.npy`: {message}"))?;
        let header_bytes = counted.read;
        let data_bytes = element_count(&header.shape)
            .and_then(|count| count.checked_mul(header.dtype.size()))
            .map(|bytes| bytes as u64);
        if data_bytes.and_then(|bytes| bytes.checked_add(header_bytes)) != Some(declared) {
            return Err(format!(
                "member `{name}.npy`: the archive says it inflates to {declared} bytes, and its header ({header_bytes} bytes) describes {:?} of {}, {} bytes of data: refused before inflating it",
                header.shape,
                header.dtype,
                data_bytes.map_or_else(|| "more than memory can hold".to_owned(), |n| n.to_string())
            ));
        }
        let tensor = TensorData::from_reader(
            header.dtype,
            &header.shape,
            &mut counted.inner,
            header.big_endian,
            header.fortran,
        )
        .map_err(|message| format!("member `{name}.npy`: the data {message}"))?;
        tensors.push((name, tensor));
    }
    if tensors.is_empty() {
        return Err("the archive holds no arrays".to_owned());
    }
    Ok(tensors)
}

fn safetensors_dtype(name: &str, dtype: safetensors::Dtype) -> Result<Dtype, String> {
    use safetensors::Dtype as S;
    Ok(match dtype {
        S::BOOL => Dtype::Bool,
        S::U8 => Dtype::U8,
        S::U16 => Dtype::U16,
        S::U32 => Dtype::U32,
        S::U64 => Dtype::U64,
        S::I8 => Dtype::I8,
        S::I16 => Dtype::I16,
        S::I32 => Dtype::I32,
        S::I64 => Dtype::I64,
        S::F16 => Dtype::F16,
        S::BF16 => Dtype::BF16,
        S::F32 => Dtype::F32,
        S::F64 => Dtype::F64,
        other => return Err(format!("tensor `{name}`: dtype {other:?} is not read")),
    })
}

fn safetensors_error(error: safetensors::SafeTensorError) -> String {
    use safetensors::SafeTensorError as E;
    match error {
        E::HeaderTooSmall => "the file is truncated: it ends before its 8-byte header length".to_owned(),
        E::InvalidHeaderLength => "the header's length runs past the end of the file".to_owned(),
        E::InvalidOffset(name) => {
            format!("the header lies about tensor `{name}`: its offsets do not fit the data")
        }
        E::MetadataIncompleteBuffer => {
            "the header's offsets do not cover the data exactly: the file is truncated, or has bytes no tensor owns".to_owned()
        }
        E::TensorInvalidInfo => {
            "the header gives a tensor a shape and dtype that do not fit its offsets".to_owned()
        }
        E::HeaderTooLarge => "the header is larger than 100 MB".to_owned(),
        other => format!("not a readable .safetensors file: {other:?}"),
    }
}

fn read_safetensors(bytes: &[u8]) -> Result<Vec<(String, TensorData)>, String> {
    let file = safetensors::SafeTensors::deserialize(bytes).map_err(safetensors_error)?;
    let mut tensors: Vec<(String, TensorData)> = file
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let dtype = safetensors_dtype(&name, view.dtype())?;
            let data = TensorData::from_bytes(dtype, view.shape(), view.data(), false, false)
                .map_err(|message| format!("tensor `{name}`: the data {message}"))?;
            Ok((name, data))
        })
        .collect::<Result<_, String>>()?;
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(tensors)
}

/// The header of a `.safetensors` file: its 8-byte length, then JSON
/// mapping names to `{dtype, shape, data_offsets}` (and `__metadata__`).
fn safetensors_headers(reader: &mut impl Read, size: u64) -> Result<Vec<TensorHeader>, String> {
    #[derive(serde::Deserialize)]
    struct Info {
        dtype: safetensors::Dtype,
        shape: Vec<usize>,
    }
    let mut raw = [0u8; 8];
    read_exact(reader, &mut raw, "its 8-byte header length")?;
    let length = u64::from_le_bytes(raw);
    if length > 100_000_000 {
        return Err(safetensors_error(
            safetensors::SafeTensorError::HeaderTooLarge,
        ));
    }
    if length > size.saturating_sub(8) {
        return Err(safetensors_error(
            safetensors::SafeTensorError::InvalidHeaderLength,
        ));
    }
    let mut header = vec![0u8; length as usize];
    read_exact(reader, &mut header, &format!("its {length}-byte header"))?;
    let map: std::collections::BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&header)
            .map_err(|error| format!("the header is not JSON: {error}"))?;
    map.into_iter()
        .filter(|(name, _)| name != "__metadata__")
        .map(|(name, value)| {
            let info: Info = serde_json::from_value(value)
                .map_err(|error| format!("the header's entry for `{name}`: {error}"))?;
            Ok(TensorHeader {
                dtype: safetensors_dtype(&name, info.dtype)?,
                shape: info.shape,
                name,
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A `.npy` file of `descr` and `shape` holding `data`.
    pub(crate) fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut dict =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while !(10 + dict.len() + 1).is_multiple_of(64) {
            dict.push(' ');
        }
        dict.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    pub(crate) fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A `.safetensors` file of `(name, dtype, shape, data)`.
    pub(crate) fn safetensors_file(tensors: &[(&str, &str, &[usize], Vec<u8>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            let start = data.len();
            data.extend_from_slice(bytes);
            header.insert(
                (*name).to_owned(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let mut text = serde_json::Value::Object(header).to_string();
        while !text.len().is_multiple_of(8) {
            text.push(' ');
        }
        let mut file = (text.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(text.as_bytes());
        file.extend_from_slice(&data);
        file
    }

    /// A `.npz` of `(member name, bytes)`.
    pub(crate) fn npz(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut buffer = std::io::Cursor::new(Vec::new());
        {
            let mut writer = zip::ZipWriter::new(&mut buffer);
            for (name, bytes) in members {
                writer
                    .start_file(*name, zip::write::FileOptions::default())
                    .unwrap();
                std::io::Write::write_all(&mut writer, bytes).unwrap();
            }
            writer.finish().unwrap();
        }
        buffer.into_inner()
    }

    #[test]
    fn a_npy_file_is_read_with_its_dtype_and_shape() {
        let file = npy("<f4", "(2, 3)", &f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
        let tensor = read_npy(&file).unwrap();
        assert_eq!(tensor.dtype(), Dtype::F32);
        assert_eq!(tensor.shape(), [2, 3]);
        assert_eq!(tensor.to_f32()[[1, 2]], 5.0);
        let scalar = read_npy(&npy("<i8", "()", &7i64.to_le_bytes())).unwrap();
        assert_eq!(scalar.shape(), [] as [usize; 0]);
        let big = read_npy(&npy(">u2", "(2,)", &[0, 1, 1, 0])).unwrap();
        assert_eq!(big.to_f32().as_slice().unwrap(), [1.0, 256.0]);
    }

    #[test]
    fn a_bad_npy_file_is_refused_saying_what_is_wrong() {
        let whole = npy("<f4", "(4,)", &f32_bytes(&[1.0; 4]));
        let error = |bytes: &[u8]| read_npy(bytes).unwrap_err();
        assert_eq!(
            error(&whole[..5]),
            "the file is truncated: it ends before its first 8 bytes"
        );
        assert_eq!(
            error(&whole[..20]),
            "the file is truncated: it ends before the header's 118 bytes"
        );
        assert_eq!(
            error(&whole[..whole.len() - 3]),
            "the data holds 13 bytes of data, and [4] of float32 takes 16"
        );
        assert!(error(b"PK\x03\x04 not npy").starts_with("not a .npy file"));
        assert!(error(&npy("<c16", "(1,)", &[0; 16])).starts_with("dtype `<c16` is not read"));
        assert!(error(&npy("<f4", "(a, 2)", &[])).contains("`shape` holds `a`"));
    }

    #[test]
    fn an_npz_member_is_a_tensor_and_a_member_that_is_not_an_array_is_refused() {
        let archive = npz(&[
            (
                "boxes.npy",
                npy("<f4", "(1, 4)", &f32_bytes(&[1.0, 2.0, 3.0, 4.0])),
            ),
            ("classes.npy", npy("<i8", "(1,)", &3i64.to_le_bytes())),
        ]);
        let tensors = read_npz(&archive).unwrap();
        let names: Vec<&str> = tensors.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["boxes", "classes"]);
        assert_eq!(tensors[1].1.dtype(), Dtype::I64);
        let with_text = npz(&[("notes.txt", b"hello".to_vec())]);
        assert_eq!(
            read_npz(&with_text).unwrap_err(),
            "member `notes.txt` is not an array: an .npz holds .npy members"
        );
        let broken = npz(&[("x.npy", b"\x93NUMPY".to_vec())]);
        assert_eq!(
            read_npz(&broken).unwrap_err(),
            "member `x.npy`: the file is truncated: it ends before its first 8 bytes"
        );
    }

    #[test]
    fn a_safetensors_file_is_read_and_a_lying_header_refused() {
        let file = safetensors_file(&[
            (
                "scores",
                "F16",
                &[2],
                half::f16::from_f32(0.25).to_bits().to_le_bytes().repeat(2),
            ),
            ("boxes", "F32", &[1, 2], f32_bytes(&[1.0, 2.0])),
        ]);
        let tensors = read_safetensors(&file).unwrap();
        assert_eq!(tensors[0].0, "boxes");
        assert_eq!(tensors[1].1.dtype(), Dtype::F16);
        assert_eq!(tensors[1].1.to_f32().as_slice().unwrap(), [0.25, 0.25]);
        let mut lying = file.clone();
        lying.truncate(file.len() - 2);
        assert!(
            read_safetensors(&lying)
                .unwrap_err()
                .contains("do not cover the data exactly"),
            "{}",
            read_safetensors(&lying).unwrap_err()
        );
        assert_eq!(
            read_safetensors(&file[..4]).unwrap_err(),
            "the file is truncated: it ends before its 8-byte header length"
        );
    }

    #[test]
    fn headers_are_read_without_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let npy_path = dir.path().join("raw.npy");
        std::fs::write(&npy_path, npy("<f4", "(8400, 84)", &[])).unwrap();
        assert_eq!(
            read_headers(&npy_path).unwrap(),
            [TensorHeader {
                name: "raw".to_owned(),
                dtype: Dtype::F32,
                shape: vec![8400, 84]
            }]
        );
        let st_path = dir.path().join("out.safetensors");
        std::fs::write(
            &st_path,
            safetensors_file(&[("ids", "I64", &[3], vec![0; 24])]),
        )
        .unwrap();
        let headers = read_headers(&st_path).unwrap();
        assert_eq!(headers[0].dtype, Dtype::I64);
        assert_eq!(headers[0].nbytes(), 24);
        let lying = dir.path().join("lying.safetensors");
        let mut bytes = 1000u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        std::fs::write(&lying, bytes).unwrap();
        assert_eq!(
            read_headers(&lying).unwrap_err(),
            "the header's length runs past the end of the file"
        );
        let npz_path = dir.path().join("both.npz");
        std::fs::write(
            &npz_path,
            npz(&[("a.npy", npy("|u1", "(2, 2)", &[1, 2, 3, 4]))]),
        )
        .unwrap();
        assert_eq!(read_headers(&npz_path).unwrap()[0].shape, [2, 2]);
    }
}
