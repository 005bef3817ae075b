//! Tensor targets on libtorch (the `tch` feature): the reference smoke
//! target, a small seeded convolutional network, and a TorchScript module
//! loaded from a file, the way an exported model is profiled.

use std::path::PathBuf;

use profiling_core::prelude::*;
use profiling_core::target::ParameterError;
use profiling_core::tensor::array_to_tensor;
use serde_yaml::Value;
use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::preprocess::letterbox;

/// The name torch gives a tensor's element type (`float32`, `uint8`, ...).
pub fn dtype_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Uint8 => "uint8",
        Kind::Int8 => "int8",
        Kind::Int16 => "int16",
        Kind::Int => "int32",
        Kind::Int64 => "int64",
        Kind::Half => "float16",
        Kind::BFloat16 => "bfloat16",
        Kind::Float => "float32",
        Kind::Double => "float64",
        Kind::Bool => "bool",
        _ => "other",
    }
}

/// `shape`, `dtype` and `checksum` (the sum of every element) of a tensor.
pub fn tensor_summary(tensor: &Tensor) -> Summary {
    let shape = tensor.size().into_iter().map(Value::from).collect();
    Summary::from([
        ("shape".to_owned(), Value::Sequence(shape)),
        ("dtype".to_owned(), Value::from(dtype_name(tensor.kind()))),
        (
            "checksum".to_owned(),
            Value::from(tensor.sum(Kind::Double).double_value(&[])),
        ),
    ])
}

/// The reference smoke target: doubles the record's tensor and sums its last dimension.
#[derive(Debug, Default)]
pub struct SmokeTensor;

#[profile_target(name = "smoke-tensor")]
impl ProfileTarget for SmokeTensor {
    type Prepared = Tensor;
    type Output = Tensor;

    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<Tensor> {
        let tensor = match record.tensors.get("tensor") {
            Some(array) => array_to_tensor(array, device),
            None => Tensor::ones([4, 4], (Kind::Float, device.into())),
        };
        Ok(tensor.to_kind(Kind::Float))
    }

    fn run(&mut self, tensor: &Tensor) -> anyhow::Result<Tensor> {
        let doubled = {
            let _range = profiling_range("smoke multiply");
            tensor * 2.0
        };
        let _range = profiling_range("smoke reduction");
        Ok(doubled.sum_dim_intlist([-1i64].as_slice(), false, Kind::Float))
    }

    fn validate(&self, output: &Tensor) -> anyhow::Result<()> {
        anyhow::ensure!(output.dim() > 0, "smoke-tensor produced a scalar");
        Ok(())
    }

    fn summarize(&self, output: &Tensor) -> Summary {
        let mut summary = tensor_summary(output);
        let sum = summary.remove("checksum").unwrap_or(Value::Null);
        summary.insert("sum".to_owned(), sum);
        summary
    }
}

/// The side of the letterboxed input of `tiny-cnn`.
pub const TINY_CNN_INPUT: u32 = 64;
/// The classes `tiny-cnn` scores.
pub const TINY_CNN_CLASSES: i64 = 10;

/// A small convolutional classifier, initialised from the run's seed, on letterboxed images.
///
/// Takes batches: with `workload.batch_size` N, one `[N, 3, 64, 64]` tensor.
#[derive(Debug)]
pub struct TinyCnn {
    vs: nn::VarStore,
    net: nn::Sequential,
}

impl Default for TinyCnn {
    fn default() -> Self {
        // Built on the CPU from libtorch's generator, which the runner seeds
        // with the run's seed before building the target; `prepare` moves it.
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let root = vs.root();
        let padded = nn::ConvConfig {
            padding: 1,
            ..Default::default()
        };
        let net = nn::seq()
            .add(nn::conv2d(&root / "conv1", 3, 8, 3, padded))
            .add_fn(|x| x.relu().max_pool2d_default(2))
            .add(nn::conv2d(&root / "conv2", 8, 16, 3, padded))
            .add_fn(|x| x.relu().max_pool2d_default(2))
            .add(nn::conv2d(&root / "conv3", 16, 16, 3, padded))
            .add_fn(|x| x.relu().adaptive_avg_pool2d([4, 4]).flatten(1, -1))
            .add(nn::linear(
                &root / "fc",
                16 * 4 * 4,
                TINY_CNN_CLASSES,
                Default::default(),
            ));
        TinyCnn { vs, net }
    }
}

/// What `tiny-cnn` returns: the logits and the best class of each image.
#[derive(Debug)]
pub struct Classification {
    /// `[N, TINY_CNN_CLASSES]` scores, on the CPU.
    pub logits: Tensor,
    /// `[N]`: the index of each image's highest score, on the CPU.
    pub top_class: Tensor,
}

/// The preprocessed input of a network: the images letterboxed to `size`
/// as one `[N, 3, S, S]` f32 tensor on the run's device.
fn letterboxed_batch(images: &[&image::RgbImage], size: u32, device: Device) -> Tensor {
    let mut tensors: Vec<Tensor> = images
        .iter()
        .map(|image| {
            let chw = letterbox(image, size).tensor.into_dyn();
            array_to_tensor(&chw, device)
        })
        .collect();
    match tensors.len() {
        1 => tensors.remove(0).unsqueeze(0),
        _ => Tensor::stack(&tensors, 0),
    }
}

/// The images of `records`, refusing a record without one.
fn images_of(records: &[DataRecord]) -> anyhow::Result<Vec<&image::RgbImage>> {
    records.iter().map(DataRecord::image).collect()
}

#[profile_target(name = "tiny-cnn")]
impl ProfileTarget for TinyCnn {
    type Prepared = (Vec<image::RgbImage>, Device);
    type Output = Classification;

    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<Self::Prepared> {
        self.prepare_batch(std::slice::from_ref(record), device)
    }

    fn prepare_batch(
        &mut self,
        records: &[DataRecord],
        device: Device,
    ) -> anyhow::Result<Self::Prepared> {
        self.vs.set_device(device.into());
        let images = images_of(records)?.into_iter().cloned().collect();
        Ok((images, device))
    }

    fn run(
        &mut self,
        (images, device): &(Vec<image::RgbImage>, Device),
    ) -> anyhow::Result<Classification> {
        let _no_grad = tch::no_grad_guard();
        let batch = {
            let _range = profiling_range("preprocess");
            let images: Vec<&image::RgbImage> = images.iter().collect();
            letterboxed_batch(&images, TINY_CNN_INPUT, *device)
        };
        let logits = {
            let _range = profiling_range("forward");
            self.net.forward(&batch)
        };
        let _range = profiling_range("postprocess");
        let top_class = logits.argmax(-1, false);
        Ok(Classification {
            logits: logits.to_device(tch::Device::Cpu),
            top_class: top_class.to_device(tch::Device::Cpu),
        })
    }

    fn validate(&self, output: &Classification) -> anyhow::Result<()> {
        let shape = output.logits.size();
        anyhow::ensure!(
            shape.len() == 2 && shape[0] >= 1 && shape[1] == TINY_CNN_CLASSES,
            "tiny-cnn logits have shape {shape:?}, expected [N, {TINY_CNN_CLASSES}] (N images)",
        );
        anyhow::ensure!(
            output.logits.isfinite().all().int64_value(&[]) == 1,
            "tiny-cnn logits are not all finite"
        );
        Ok(())
    }

    /// `top_class` is the image's class, or with a batch the list of its
    /// images' classes.
    fn summarize(&self, output: &Classification) -> Summary {
        let mut summary = tensor_summary(&output.logits);
        let classes: Vec<Value> = (0..output.top_class.size()[0])
            .map(|i| Value::from(output.top_class.int64_value(&[i])))
            .collect();
        let top_class = match <[Value; 1]>::try_from(classes) {
            Ok([single]) => single,
            Err(classes) => Value::Sequence(classes),
        };
        summary.insert("top_class".to_owned(), top_class);
        summary
    }
}

/// `target.parameters` of `torchscript`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorchScriptParameters {
    /// The TorchScript file (`torch.jit.save`), taken as written.
    pub module: PathBuf,
    /// The side of the square letterboxed input (default 64).
    #[serde(default = "default_input_size")]
    pub input_size: u32,
}

fn default_input_size() -> u32 {
    64
}

/// An exported TorchScript model from `target.parameters.module`, on letterboxed images.
///
/// Takes batches: with `workload.batch_size` N, one `[N, 3, S, S]` tensor.
#[derive(Debug)]
pub struct TorchScript {
    module: tch::CModule,
    parameters: TorchScriptParameters,
    device: Option<Device>,
}

/// Loads the module named by the run's `target.parameters`.
pub fn load_torchscript() -> anyhow::Result<TorchScript> {
    let parameters: TorchScriptParameters = profiling_core::target::parameters()?;
    profiling_core::driver::config::check_literal_path(&parameters.module.to_string_lossy())
        .map_err(|message| ParameterError::new("module", message))?;
    let mut module = tch::CModule::load(&parameters.module).map_err(|error| {
        // libtorch appends its C++ stack to the message: the first line says it.
        let error = error.to_string();
        ParameterError::new(
            "module",
            format!(
                "cannot load TorchScript module {}: {}",
                parameters.module.display(),
                error.lines().next().unwrap_or_default()
            ),
        )
    })?;
    module.set_eval();
    Ok(TorchScript {
        module,
        parameters,
        device: None,
    })
}

#[profile_target(name = "torchscript", factory = load_torchscript)]
impl ProfileTarget for TorchScript {
    type Prepared = Tensor;
    type Output = Tensor;

    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<Tensor> {
        self.prepare_batch(std::slice::from_ref(record), device)
    }

    fn prepare_batch(&mut self, records: &[DataRecord], device: Device) -> anyhow::Result<Tensor> {
        if self.device != Some(device) {
            self.module.to(device.into(), Kind::Float, false);
            self.device = Some(device);
        }
        let _range = profiling_range("preprocess");
        let images = images_of(records)?;
        Ok(letterboxed_batch(
            &images,
            self.parameters.input_size,
            device,
        ))
    }

    fn run(&mut self, batch: &Tensor) -> anyhow::Result<Tensor> {
        let _no_grad = tch::no_grad_guard();
        let _range = profiling_range("forward");
        Ok(self.module.forward_ts(&[batch])?)
    }

    fn summarize(&self, output: &Tensor) -> Summary {
        tensor_summary(output)
    }
}

/// `target.parameters` of `matmul-repeat`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulParameters {
    /// The side of the square matrices.
    #[serde(default = "default_matmul_size")]
    pub size: i64,
    /// Matrix products in the first range; the second holds twice as many.
    #[serde(default = "default_matmul_repeats")]
    pub repeats: u32,
}

fn default_matmul_size() -> i64 {
    2048
}

fn default_matmul_repeats() -> u32 {
    8
}

fn load_matmul() -> anyhow::Result<MatmulRepeat> {
    let parameters: MatmulParameters = profiling_core::target::parameters()?;
    if parameters.size < 1 {
        return Err(
            ParameterError::new("size", format!("must be >= 1, got {}", parameters.size)).into(),
        );
    }
    if parameters.repeats < 1 {
        return Err(ParameterError::new("repeats", "must be >= 1, got 0".to_owned()).into());
    }
    Ok(MatmulRepeat {
        parameters,
        device: Device::Cpu,
    })
}

/// Known GPU work in ranges, to check GPU time per range: `repeats`
/// products of two `size` x `size` matrices in `matmul k`, twice as many
/// in `matmul 2k`, and `repeats` again in `matmul k, synchronized`, which
/// waits for the device before it opens and before it closes, so that its
/// host time is the same work timed on the host.
#[derive(Debug)]
pub struct MatmulRepeat {
    parameters: MatmulParameters,
    device: Device,
}

#[profile_target(name = "matmul-repeat", factory = load_matmul)]
impl ProfileTarget for MatmulRepeat {
    type Prepared = (Tensor, Tensor);
    type Output = Tensor;

    fn prepare(
        &mut self,
        _record: &DataRecord,
        device: Device,
    ) -> anyhow::Result<(Tensor, Tensor)> {
        self.device = device;
        let size = self.parameters.size;
        let options = (Kind::Float, device.into());
        let a = Tensor::ones([size, size], options) / (size as f64);
        Ok((a.shallow_clone(), a))
    }

    fn run(&mut self, (a, b): &(Tensor, Tensor)) -> anyhow::Result<Tensor> {
        let repeats = self.parameters.repeats;
        let mut product = a.shallow_clone();
        {
            let _range = profiling_range("matmul k");
            for _ in 0..repeats {
                product = a.matmul(b);
            }
        }
        {
            let _range = profiling_range("matmul 2k");
            for _ in 0..2 * repeats {
                product = a.matmul(b);
            }
        }
        profiling_core::backend::synchronize(self.device);
        {
            let _range = profiling_range("matmul k, synchronized");
            for _ in 0..repeats {
                product = a.matmul(b);
            }
            profiling_core::backend::synchronize(self.device);
        }
        Ok(product)
    }

    fn summarize(&self, output: &Tensor) -> Summary {
        tensor_summary(output)
    }
}
