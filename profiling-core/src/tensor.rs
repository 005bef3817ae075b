//! From data records to libtorch tensors (the `tch` feature).
//!
//! The image of a record becomes an `[H, W, 3]` u8 tensor or a normalised
//! `[3, H, W]` f32 one, and its named arrays f32 tensors of the same shape,
//! on the device asked for.

use std::collections::BTreeMap;

use tch::{Kind, Tensor};

use crate::data::DataRecord;
use crate::device::Device;

/// The record's image as an `[H, W, 3]` u8 tensor on `device`.
pub fn image_hwc_u8(record: &DataRecord, device: Device) -> anyhow::Result<Tensor> {
    let image = record.image()?;
    let (width, height) = image.dimensions();
    let tensor = Tensor::from_slice(image.as_raw()).view([i64::from(height), i64::from(width), 3]);
    Ok(tensor.to_device(device.into()))
}

/// The record's image as a `[3, H, W]` f32 tensor in `[0, 1]` on `device`:
/// the layout and scale a convolutional network takes.
pub fn image_chw_f32(record: &DataRecord, device: Device) -> anyhow::Result<Tensor> {
    let hwc = image_hwc_u8(record, device)?;
    Ok(hwc.permute([2, 0, 1]).to_kind(Kind::Float) / 255.0)
}

/// The record's array `name` as an f32 tensor of the same shape on `device`.
pub fn named_tensor(record: &DataRecord, name: &str, device: Device) -> anyhow::Result<Tensor> {
    Ok(array_to_tensor(record.tensor(name)?, device))
}

/// Every array of the record as an f32 tensor on `device`, by name.
pub fn tensors(record: &DataRecord, device: Device) -> BTreeMap<String, Tensor> {
    record
        .tensors
        .iter()
        .map(|(name, array)| (name.clone(), array_to_tensor(array, device)))
        .collect()
}

/// An f32 array as a tensor of the same shape on `device` (copied).
pub fn array_to_tensor(array: &ndarray::ArrayD<f32>, device: Device) -> Tensor {
    let shape: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
    let contiguous = array.as_standard_layout();
    let values = contiguous
        .as_slice()
        .expect("a standard-layout array is contiguous");
    Tensor::from_slice(values)
        .view(shape.as_slice())
        .to_device(device.into())
}
