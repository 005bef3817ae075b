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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dummy::DummySource;
    use crate::data::RecordSource;

    fn record() -> DataRecord {
        let mapping: serde_yaml::Mapping =
            serde_yaml::from_str("{record_count: 2, image_shape: [3, 5, 3], tensor_shape: [2, 3]}")
                .unwrap();
        DummySource::from_parameters(&mapping)
            .unwrap()
            .read(1)
            .unwrap()
    }

    #[test]
    fn image_keeps_height_width_channels() {
        let record = record();
        let tensor = image_hwc_u8(&record, Device::Cpu).unwrap();
        assert_eq!(tensor.size(), [3, 5, 3]);
        assert_eq!(tensor.kind(), Kind::Uint8);
        let image = record.image.as_ref().unwrap();
        let pixel = image.get_pixel(4, 2);
        for channel in 0..3 {
            assert_eq!(
                tensor.int64_value(&[2, 4, channel]),
                i64::from(pixel[channel as usize])
            );
        }
    }

    #[test]
    fn normalised_image_is_channels_first_in_unit_range() {
        let record = record();
        let tensor = image_chw_f32(&record, Device::Cpu).unwrap();
        assert_eq!(tensor.size(), [3, 3, 5]);
        assert_eq!(tensor.kind(), Kind::Float);
        let pixel = record.image.as_ref().unwrap().get_pixel(4, 2);
        let value = tensor.double_value(&[1, 2, 4]);
        assert!(
            (value - f64::from(pixel[1]) / 255.0).abs() < 1e-6,
            "{value}"
        );
        assert!(tensor.max().double_value(&[]) <= 1.0 && tensor.min().double_value(&[]) >= 0.0);
    }

    #[test]
    fn arrays_keep_shape_and_values() {
        let record = record();
        let all = tensors(&record, Device::Cpu);
        assert_eq!(
            all.keys().collect::<Vec<_>>(),
            ["boxes", "scores", "tensor"]
        );
        let tensor = &all["tensor"];
        assert_eq!(tensor.size(), [2, 3]);
        assert_eq!(tensor.kind(), Kind::Float);
        // arange(6) + 1 for record 1.
        assert_eq!(
            Vec::<f32>::try_from(tensor.flatten(0, -1)).unwrap(),
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        assert_eq!(
            named_tensor(&record, "scores", Device::Cpu).unwrap().size(),
            [2]
        );
        let missing = named_tensor(&record, "logits", Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("no tensor `logits`"), "{missing}");
    }

    #[test]
    fn a_record_without_image_is_an_error() {
        let mapping: serde_yaml::Mapping = serde_yaml::from_str("{include_image: false}").unwrap();
        let record = DummySource::from_parameters(&mapping)
            .unwrap()
            .read(0)
            .unwrap();
        assert!(image_hwc_u8(&record, Device::Cpu)
            .unwrap_err()
            .to_string()
            .contains("dummy-0"));
    }
}
