//! The libtorch backend (the `tch` feature), through the crate's public
//! API: the tensors made from a record, devices to and from `tch`'s, and
//! what the backend and the provenance say of the libtorch loaded. Built
//! only with the feature; `scripts/test` runs it in its `tch` pass.

#![cfg(feature = "tch")]

use profiling_core::backend::UnsupportedDevice;
use profiling_core::data::dummy::DummySource;
use profiling_core::data::{DataRecord, RecordSource};
use profiling_core::device::{Device, DeviceKind};
use profiling_core::driver::provenance::BackendInfo;
use profiling_core::tensor::*;
use tch::Kind;

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

#[test]
fn converts_to_and_from_tch() {
    for device in [Device::Cpu, Device::Cuda(0), Device::Cuda(3)] {
        let converted: tch::Device = device.into();
        assert_eq!(Device::try_from(converted), Ok(device));
    }
    assert_eq!(
        Device::try_from(tch::Device::Mps),
        Err(UnsupportedDevice(tch::Device::Mps))
    );
    assert!(tch::Device::Cuda(0).is_cuda_device());
    assert!(!tch::Tensor::zeros([2], (tch::Kind::Float, tch::Device::Cpu)).is_cuda_device());
}

#[test]
fn libtorch_is_the_primary_backend_and_gives_gpu_events() {
    assert_eq!(profiling_core::backend::primary().name(), "libtorch");
    assert!(profiling_core::backend::has_gpu_events());
}

#[test]
fn a_libtorch_build_records_the_libtorch_it_loaded() {
    let backend = BackendInfo::current();
    assert_eq!(backend.name, "libtorch");
    assert!(backend.libtorch_version.is_some(), "{backend:?}");
    assert_eq!(backend.cuda_available, tch::Cuda::is_available());
}
