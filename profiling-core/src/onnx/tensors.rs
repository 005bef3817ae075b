//! From data records to ONNX Runtime tensors.
//!
//! Tensors are made in host memory, the memory `Session::run` takes on any
//! provider (it copies host inputs to the device itself); [`on_device`]
//! moves one to a GPU ahead, for a target that keeps its inputs there.

use std::collections::BTreeMap;

use anyhow::anyhow;
use ort::memory::AllocationDevice;
use ort::value::{DynValue, Tensor};

use crate::data::DataRecord;
use crate::device::Device;

/// The record's image as a `[1, 3, H, W]` f32 tensor: each channel
/// `(value / 255 - mean[c]) / std[c]`, in RGB order or, with `bgr`, in
/// the order OpenCV-trained models take.
pub fn image_nchw(
    record: &DataRecord,
    mean: [f32; 3],
    std: [f32; 3],
    bgr: bool,
) -> anyhow::Result<Tensor<f32>> {
    let image = record.image()?;
    let (width, height) = (image.width() as usize, image.height() as usize);
    let plane = width * height;
    let mut values = vec![0f32; 3 * plane];
    for (index, pixel) in image.pixels().enumerate() {
        for channel in 0..3 {
            let source = if bgr { 2 - channel } else { channel };
            values[channel * plane + index] =
                (f32::from(pixel[source]) / 255.0 - mean[channel]) / std[channel];
        }
    }
    tensor([1, 3, height, width], values)
}

/// An f32 array as a tensor of the same shape (copied).
pub fn array_tensor(array: &ndarray::ArrayD<f32>) -> anyhow::Result<Tensor<f32>> {
    let contiguous = array.as_standard_layout();
    let values = contiguous
        .as_slice()
        .expect("a standard-layout array is contiguous")
        .to_vec();
    tensor(array.shape().to_vec(), values)
}

/// Every array of the record as a tensor, by name.
pub fn tensors(record: &DataRecord) -> anyhow::Result<BTreeMap<String, Tensor<f32>>> {
    record
        .tensors
        .iter()
        .map(|(name, array)| Ok((name.clone(), array_tensor(array)?)))
        .collect()
}

/// `values` as a tensor of `shape` (their count must match).
pub fn tensor(shape: impl Into<Vec<usize>>, values: Vec<f32>) -> anyhow::Result<Tensor<f32>> {
    // Any call into the runtime loads it: this one from where it was found.
    super::runtime()?;
    let shape: Vec<usize> = shape.into();
    let expected: usize = shape.iter().product();
    anyhow::ensure!(
        expected == values.len(),
        "a tensor of shape {shape:?} takes {expected} values, not {}",
        values.len()
    );
    Tensor::from_array((shape, values.into_boxed_slice())).map_err(|e| anyhow!("{e}"))
}

/// `tensor` in the memory of `device`: itself on the CPU, a copy on a GPU
/// (made with the runtime's CUDA provider, which must be there).
pub fn on_device(tensor: Tensor<f32>, device: Device) -> anyhow::Result<DynValue> {
    match device {
        Device::Cpu => Ok(tensor.into_dyn()),
        Device::Cuda(index) => {
            super::check_device(device)?;
            let copy = tensor
                .to(
                    AllocationDevice::CUDA,
                    i32::try_from(index).unwrap_or(i32::MAX),
                )
                .map_err(|e| anyhow!("copying a tensor to cuda:{index}: {e}"))?;
            Ok(copy.into_dyn())
        }
    }
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
    fn an_image_becomes_normalised_planes_in_the_asked_order() {
        let record = record();
        let pixel = *record.image.as_ref().unwrap().get_pixel(4, 2);
        for bgr in [false, true] {
            let tensor = image_nchw(&record, [0.5; 3], [0.25; 3], bgr).unwrap();
            let (shape, values) = tensor.extract_tensor();
            assert_eq!(**shape, [1, 3, 3, 5]);
            for channel in 0..3 {
                let source = if bgr { 2 - channel } else { channel };
                let expected = (f32::from(pixel[source]) / 255.0 - 0.5) / 0.25;
                assert_eq!(
                    values[channel * 15 + 2 * 5 + 4],
                    expected,
                    "{bgr} {channel}"
                );
            }
        }
    }

    #[test]
    fn arrays_keep_shape_and_values() {
        let all = tensors(&record()).unwrap();
        assert_eq!(
            all.keys().collect::<Vec<_>>(),
            ["boxes", "scores", "tensor"]
        );
        let (shape, values) = all["tensor"].extract_tensor();
        assert_eq!(**shape, [2, 3]);
        assert_eq!(values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert!(tensor([2, 2], vec![1.0; 3])
            .unwrap_err()
            .to_string()
            .contains("takes 4 values, not 3"));
    }
}
