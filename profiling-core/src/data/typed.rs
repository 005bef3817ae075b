//! Tensors of any element type a recorded input has: what the `tensors`
//! source reads from `.npy`, `.npz` and `.safetensors` files.
//!
//! A record keeps its float32 tensors in [`DataRecord::tensors`] and the
//! others, as read, in [`DataRecord::typed_tensors`];
//! [`DataRecord::tensor`] gives either as float32 (a tensor of another type
//! converted once, on first use), [`DataRecord::typed_tensor`] the others
//! as they are.
//!
//! [`DataRecord::tensors`]: super::DataRecord::tensors
//! [`DataRecord::typed_tensors`]: super::DataRecord::typed_tensors
//! [`DataRecord::tensor`]: super::DataRecord::tensor
//! [`DataRecord::typed_tensor`]: super::DataRecord::typed_tensor

use std::sync::OnceLock;

use half::{bf16, f16};
use ndarray::{ArrayD, Axis, IxDyn};

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl Dtype {
    /// Its name as NumPy and PyTorch write it (`float32`, `int64`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "uint8",
            Dtype::U16 => "uint16",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::F16 => "float16",
            Dtype::BF16 => "bfloat16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
        }
    }

    /// Bytes an element takes.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 | Dtype::F16 | Dtype::BF16 => 2,
            Dtype::U32 | Dtype::I32 | Dtype::F32 => 4,
            Dtype::U64 | Dtype::I64 | Dtype::F64 => 8,
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor's elements, of one of the [`Dtype`]s.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum TensorData {
    Bool(ArrayD<bool>),
    U8(ArrayD<u8>),
    U16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
    I8(ArrayD<i8>),
    I16(ArrayD<i16>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    F16(ArrayD<f16>),
    BF16(ArrayD<bf16>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
}

/// `$body` with `$array` bound to the array of whichever variant `$data` is.
macro_rules! each {
    ($data:expr, $array:ident => $body:expr) => {
        match $data {
            TensorData::Bool($array) => $body,
            TensorData::U8($array) => $body,
            TensorData::U16($array) => $body,
            TensorData::U32($array) => $body,
            TensorData::U64($array) => $body,
            TensorData::I8($array) => $body,
            TensorData::I16($array) => $body,
            TensorData::I32($array) => $body,
            TensorData::I64($array) => $body,
            TensorData::F16($array) => $body,
            TensorData::BF16($array) => $body,
            TensorData::F32($array) => $body,
            TensorData::F64($array) => $body,
        }
    };
}

/// [`each!`], the result wrapped back in the same variant.
macro_rules! map_each {
    ($data:expr, $array:ident => $body:expr) => {
        match $data {
            TensorData::Bool($array) => TensorData::Bool($body),
            TensorData::U8($array) => TensorData::U8($body),
            TensorData::U16($array) => TensorData::U16($body),
            TensorData::U32($array) => TensorData::U32($body),
            TensorData::U64($array) => TensorData::U64($body),
            TensorData::I8($array) => TensorData::I8($body),
            TensorData::I16($array) => TensorData::I16($body),
            TensorData::I32($array) => TensorData::I32($body),
            TensorData::I64($array) => TensorData::I64($body),
            TensorData::F16($array) => TensorData::F16($body),
            TensorData::BF16($array) => TensorData::BF16($body),
            TensorData::F32($array) => TensorData::F32($body),
            TensorData::F64($array) => TensorData::F64($body),
        }
    };
}

impl TensorData {
    /// Its element type.
    pub fn dtype(&self) -> Dtype {
        match self {
            TensorData::Bool(_) => Dtype::Bool,
            TensorData::U8(_) => Dtype::U8,
            TensorData::U16(_) => Dtype::U16,
            TensorData::U32(_) => Dtype::U32,
            TensorData::U64(_) => Dtype::U64,
            TensorData::I8(_) => Dtype::I8,
            TensorData::I16(_) => Dtype::I16,
            TensorData::I32(_) => Dtype::I32,
            TensorData::I64(_) => Dtype::I64,
            TensorData::F16(_) => Dtype::F16,
            TensorData::BF16(_) => Dtype::BF16,
            TensorData::F32(_) => Dtype::F32,
            TensorData::F64(_) => Dtype::F64,
        }
    }

    /// Its shape.
    pub fn shape(&self) -> &[usize] {
        each!(self, array => array.shape())
    }

    /// Bytes its elements take.
    pub fn nbytes(&self) -> usize {
        each!(self, array => array.len()) * self.dtype().size()
    }

    /// Its elements as float32, as `record.tensor(name)` gives them: booleans
    /// as 0 and 1, integers and wider floats rounded to the nearest float32.
    pub fn to_f32(&self) -> ArrayD<f32> {
        match self {
            TensorData::Bool(a) => a.mapv(|v| f32::from(u8::from(v))),
            TensorData::U8(a) => a.mapv(f32::from),
            TensorData::U16(a) => a.mapv(f32::from),
            TensorData::U32(a) => a.mapv(|v| v as f32),
            TensorData::U64(a) => a.mapv(|v| v as f32),
            TensorData::I8(a) => a.mapv(f32::from),
            TensorData::I16(a) => a.mapv(f32::from),
            TensorData::I32(a) => a.mapv(|v| v as f32),
            TensorData::I64(a) => a.mapv(|v| v as f32),
            TensorData::F16(a) => a.mapv(f32::from),
            TensorData::BF16(a) => a.mapv(f32::from),
            TensorData::F32(a) => a.clone(),
            TensorData::F64(a) => a.mapv(|v| v as f32),
        }
    }

    /// The sub-tensor at `index` along `axis` (one dimension fewer), or
    /// `None` when the tensor has no such axis or index.
    pub fn index_axis(&self, axis: usize, index: usize) -> Option<TensorData> {
        let shape = self.shape();
        if axis >= shape.len() || index >= shape[axis] {
            return None;
        }
        Some(map_each!(self, array => array.index_axis(Axis(axis), index).to_owned()))
    }

    /// Elements of `dtype` in `shape` from `bytes` (little-endian unless
    /// `big_endian`), in C order, or in Fortran order when `fortran`.
    /// `bytes` must hold exactly the elements the shape counts.
    pub fn from_bytes(
        dtype: Dtype,
        shape: &[usize],
        bytes: &[u8],
        big_endian: bool,
        fortran: bool,
    ) -> Result<TensorData, String> {
        let count = element_count(shape)
            .ok_or_else(|| format!("the shape {shape:?} holds more elements than memory can"))?;
        let needed = count
            .checked_mul(dtype.size())
            .ok_or_else(|| format!("the shape {shape:?} holds more bytes than memory can"))?;
        if bytes.len() != needed {
            return Err(format!(
                "holds {} bytes of data, and {shape:?} of {dtype} takes {needed}",
                bytes.len()
            ));
        }
        let dim = ndarray::ShapeBuilder::set_f(IxDyn(shape), fortran);
        let chunks = bytes.chunks_exact(dtype.size());
        macro_rules! build {
            ($variant:ident, $convert:expr) => {{
                let values: Vec<_> = chunks.map($convert).collect();
                TensorData::$variant(
                    ArrayD::from_shape_vec(dim.clone(), values)
                        .map_err(|error| error.to_string())?,
                )
            }};
        }
        macro_rules! number {
            ($variant:ident, $ty:ty) => {
                build!($variant, |chunk: &[u8]| {
                    let raw: [u8; std::mem::size_of::<$ty>()] =
                        chunk.try_into().expect("chunks of the element's size");
                    if big_endian {
                        <$ty>::from_be_bytes(raw)
                    } else {
                        <$ty>::from_le_bytes(raw)
                    }
                })
            };
        }
        Ok(match dtype {
            Dtype::Bool => {
                if let Some(bad) = bytes.iter().find(|&&b| b > 1) {
                    return Err(format!("holds the byte {bad} in a bool tensor (0 or 1)"));
                }
                build!(Bool, |chunk: &[u8]| chunk[0] == 1)
            }
            Dtype::U8 => build!(U8, |chunk: &[u8]| chunk[0]),
            Dtype::I8 => build!(I8, |chunk: &[u8]| chunk[0] as i8),
            Dtype::U16 => number!(U16, u16),
            Dtype::U32 => number!(U32, u32),
            Dtype::U64 => number!(U64, u64),
            Dtype::I16 => number!(I16, i16),
            Dtype::I32 => number!(I32, i32),
            Dtype::I64 => number!(I64, i64),
            Dtype::F32 => number!(F32, f32),
            Dtype::F64 => number!(F64, f64),
            Dtype::F16 => build!(F16, |chunk: &[u8]| {
                let raw = [chunk[0], chunk[1]];
                f16::from_bits(if big_endian {
                    u16::from_be_bytes(raw)
                } else {
                    u16::from_le_bytes(raw)
                })
            }),
            Dtype::BF16 => build!(BF16, |chunk: &[u8]| {
                let raw = [chunk[0], chunk[1]];
                bf16::from_bits(if big_endian {
                    u16::from_be_bytes(raw)
                } else {
                    u16::from_le_bytes(raw)
                })
            }),
        })
    }
}

/// A number type whose every bit pattern is a value: read straight from
/// a file's bytes into its vector.
trait Plain: Copy + Default {
    /// The value with its bytes in the other order.
    fn swapped(self) -> Self;
}

macro_rules! plain_integers {
    ($($ty:ty),*) => {$(
        impl Plain for $ty {
            fn swapped(self) -> Self {
                self.swap_bytes()
            }
        }
    )*};
}
plain_integers!(u8, i8, u16, i16, u32, i32, u64, i64);

impl Plain for f32 {
    fn swapped(self) -> Self {
        f32::from_bits(self.to_bits().swap_bytes())
    }
}

impl Plain for f64 {
    fn swapped(self) -> Self {
        f64::from_bits(self.to_bits().swap_bytes())
    }
}

/// `count` values of `T` read from `reader` into their vector, with no
/// copy of the bytes in between; their bytes swapped when the data's order
/// (`big_endian`) is not this machine's.
fn read_plain<T: Plain>(
    reader: &mut impl std::io::Read,
    count: usize,
    big_endian: bool,
) -> std::io::Result<Vec<T>> {
    let mut values = vec![T::default(); count];
    // SAFETY: `T` is a plain number type (every bit pattern is a value) and
    // the slice covers exactly the vector's `count` initialized elements.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            count * std::mem::size_of::<T>(),
        )
    };
    // Fresh memory: its pages mapped in one call, not faulted one by one.
    crate::memory::prefault_slice(bytes);
    reader.read_exact(bytes)?;
    if big_endian != cfg!(target_endian = "big") {
        for value in &mut values {
            *value = value.swapped();
        }
    }
    Ok(values)
}

impl TensorData {
    /// [`from_bytes`](Self::from_bytes) for data read from `reader`,
    /// which must hold exactly the elements `shape` counts (the caller
    /// checks the length): the elements go straight into the tensor's
    /// vector, so reading holds the tensor once, not its bytes beside it.
    pub fn from_reader(
        dtype: Dtype,
        shape: &[usize],
        reader: &mut impl std::io::Read,
        big_endian: bool,
        fortran: bool,
    ) -> Result<TensorData, String> {
        let count = element_count(shape)
            .ok_or_else(|| format!("the shape {shape:?} holds more elements than memory can"))?;
        count
            .checked_mul(dtype.size())
            .ok_or_else(|| format!("the shape {shape:?} holds more bytes than memory can"))?;
        let dim = ndarray::ShapeBuilder::set_f(IxDyn(shape), fortran);
        let read_error = |error: std::io::Error| match error.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                format!("ends before the {count} element(s) of {shape:?}")
            }
            _ => error.to_string(),
        };
        macro_rules! plain {
            ($variant:ident, $ty:ty) => {{
                let values = read_plain::<$ty>(reader, count, big_endian).map_err(read_error)?;
                TensorData::$variant(
                    ArrayD::from_shape_vec(dim, values).map_err(|error| error.to_string())?,
                )
            }};
        }
        macro_rules! bits {
            ($variant:ident, $ty:ty) => {{
                // Collected in place: the u16 vector becomes the tensor's.
                let values: Vec<$ty> = read_plain::<u16>(reader, count, big_endian)
                    .map_err(read_error)?
                    .into_iter()
                    .map(<$ty>::from_bits)
                    .collect();
                TensorData::$variant(
                    ArrayD::from_shape_vec(dim, values).map_err(|error| error.to_string())?,
                )
            }};
        }
        Ok(match dtype {
            Dtype::Bool => {
                let raw = read_plain::<u8>(reader, count, big_endian).map_err(read_error)?;
                if let Some(bad) = raw.iter().find(|&&b| b > 1) {
                    return Err(format!("holds the byte {bad} in a bool tensor (0 or 1)"));
                }
                let values: Vec<bool> = raw.into_iter().map(|b| b == 1).collect();
                TensorData::Bool(
                    ArrayD::from_shape_vec(dim, values).map_err(|error| error.to_string())?,
                )
            }
            Dtype::U8 => plain!(U8, u8),
            Dtype::I8 => plain!(I8, i8),
            Dtype::U16 => plain!(U16, u16),
            Dtype::U32 => plain!(U32, u32),
            Dtype::U64 => plain!(U64, u64),
            Dtype::I16 => plain!(I16, i16),
            Dtype::I32 => plain!(I32, i32),
            Dtype::I64 => plain!(I64, i64),
            Dtype::F32 => plain!(F32, f32),
            Dtype::F64 => plain!(F64, f64),
            Dtype::F16 => bits!(F16, f16),
            Dtype::BF16 => bits!(BF16, bf16),
        })
    }
}

/// The product of `shape`, or `None` past `usize`: the elements of a
/// tensor of that shape, for a reader that checks a declared shape.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1usize, |count, &side| count.checked_mul(side))
}

/// A tensor of a [`DataRecord`](super::DataRecord) that is not float32,
/// as it was read; [`as_f32`](TypedTensor::as_f32) converts it once.
#[derive(Debug, Clone)]
pub struct TypedTensor {
    data: TensorData,
    as_f32: OnceLock<ArrayD<f32>>,
}

impl PartialEq for TypedTensor {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl TypedTensor {
    /// `data`, not yet converted.
    pub fn new(data: TensorData) -> TypedTensor {
        TypedTensor {
            data,
            as_f32: OnceLock::new(),
        }
    }

    /// The elements as read.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The elements as float32 ([`TensorData::to_f32`]), converted on the
    /// first call and kept.
    pub fn as_f32(&self) -> &ArrayD<f32> {
        self.as_f32.get_or_init(|| self.data.to_f32())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_become_elements_of_the_dtype_in_either_order_and_byte_order() {
        let bytes: Vec<u8> = [1i32, -2, 3, 4, 5, -6]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let c = TensorData::from_bytes(Dtype::I32, &[2, 3], &bytes, false, false).unwrap();
        let TensorData::I32(array) = &c else {
            panic!("{c:?}")
        };
        assert_eq!(array[[1, 2]], -6);
        assert_eq!(array[[0, 1]], -2);
        let fortran = TensorData::from_bytes(Dtype::I32, &[2, 3], &bytes, false, true).unwrap();
        let TensorData::I32(array) = &fortran else {
            panic!()
        };
        // Column-major: the second element is row 1 of column 0.
        assert_eq!(array[[1, 0]], -2);
        let big: Vec<u8> = [1.5f64, -2.25]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let floats = TensorData::from_bytes(Dtype::F64, &[2], &big, true, false).unwrap();
        assert_eq!(floats.to_f32().as_slice().unwrap(), [1.5, -2.25]);
    }

    #[test]
    fn a_reader_gives_what_the_same_bytes_give_for_every_dtype_and_byte_order() {
        use Dtype::*;
        // 48 bytes: 48 elements of one byte down to 6 of eight.
        let bytes: Vec<u8> = (0u8..48).map(|b| b.wrapping_mul(37) % 2).collect();
        // Every byte under 0x3c: no element is a NaN, which equals nothing.
        let wide: Vec<u8> = (0u8..48).map(|b| b.wrapping_mul(37) % 0x3c).collect();
        for dtype in [
            Bool, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64,
        ] {
            let data = if dtype == Bool { &bytes } else { &wide };
            let shape = [2, 48 / dtype.size() / 2];
            for (big_endian, fortran) in [(false, false), (true, false), (false, true)] {
                let expected =
                    TensorData::from_bytes(dtype, &shape, data, big_endian, fortran).unwrap();
                let read = TensorData::from_reader(
                    dtype,
                    &shape,
                    &mut data.as_slice(),
                    big_endian,
                    fortran,
                )
                .unwrap();
                assert_eq!(
                    read, expected,
                    "{dtype} big-endian {big_endian} fortran {fortran}"
                );
            }
        }
        let error = TensorData::from_reader(F32, &[4], &mut [0u8; 15].as_slice(), false, false)
            .unwrap_err();
        assert_eq!(error, "ends before the 4 element(s) of [4]");
        let error = TensorData::from_reader(Bool, &[2], &mut [1u8, 7].as_slice(), false, false)
            .unwrap_err();
        assert_eq!(error, "holds the byte 7 in a bool tensor (0 or 1)");
    }

    #[test]
    fn every_dtype_converts_to_float32() {
        let half = f16::from_f32(0.5).to_bits().to_le_bytes();
        let tensor = TensorData::from_bytes(Dtype::F16, &[1], &half, false, false).unwrap();
        assert_eq!(tensor.to_f32()[[0]], 0.5);
        let brain = bf16::from_f32(-3.0).to_bits().to_le_bytes();
        let tensor = TensorData::from_bytes(Dtype::BF16, &[1], &brain, false, false).unwrap();
        assert_eq!(tensor.to_f32()[[0]], -3.0);
        let flags = TensorData::from_bytes(Dtype::Bool, &[3], &[1, 0, 1], false, false).unwrap();
        assert_eq!(flags.to_f32().as_slice().unwrap(), [1.0, 0.0, 1.0]);
        assert_eq!(flags.nbytes(), 3);
        let bytes = TensorData::from_bytes(Dtype::U8, &[2], &[0, 255], false, false).unwrap();
        assert_eq!(bytes.to_f32().as_slice().unwrap(), [0.0, 255.0]);
    }

    #[test]
    fn data_of_the_wrong_length_or_a_bad_bool_is_refused() {
        assert_eq!(
            TensorData::from_bytes(Dtype::F32, &[2, 2], &[0; 12], false, false).unwrap_err(),
            "holds 12 bytes of data, and [2, 2] of float32 takes 16"
        );
        assert!(
            TensorData::from_bytes(Dtype::Bool, &[1], &[7], false, false)
                .unwrap_err()
                .contains("the byte 7")
        );
        assert!(
            TensorData::from_bytes(Dtype::U8, &[usize::MAX, 3], &[], false, false)
                .unwrap_err()
                .contains("more elements than memory")
        );
    }

    #[test]
    fn an_index_along_an_axis_is_a_tensor_of_one_dimension_fewer() {
        let data = TensorData::I64(ArrayD::from_shape_vec(vec![3, 2], (0..6).collect()).unwrap());
        let row = data.index_axis(0, 2).unwrap();
        assert_eq!(row.shape(), [2]);
        assert_eq!(
            row,
            TensorData::I64(ArrayD::from_shape_vec(vec![2], vec![4, 5]).unwrap())
        );
        assert!(data.index_axis(0, 3).is_none());
        assert!(data.index_axis(2, 0).is_none());
    }

    #[test]
    fn a_typed_tensor_converts_once_and_compares_by_its_data() {
        let tensor = TypedTensor::new(TensorData::U8(ArrayD::from_elem(vec![2], 3)));
        let first: *const ArrayD<f32> = tensor.as_f32();
        assert!(std::ptr::eq(first, tensor.as_f32()));
        assert_eq!(
            tensor,
            TypedTensor::new(TensorData::U8(ArrayD::from_elem(vec![2], 3)))
        );
    }
}
