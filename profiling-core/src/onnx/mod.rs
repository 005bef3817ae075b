//! ONNX Runtime through the `ort` crate (the `ort` feature): the runtime
//! loaded at run time, sessions on the run's device, records as input
//! tensors, and each operator of a model run as a range of its own.
//!
//! # Finding the runtime
//!
//! Nothing is downloaded or linked at build time: the shared library is
//! opened on first use, from the first of
//!
//! 1. `ORT_DYLIB_PATH`, when set (the `ort` crate's own variable);
//! 2. the `.venv/onnxruntime/` directory that `scripts/setup-onnxruntime`
//!    makes, found from the build's workspace, then beside the executable
//!    and in the current directory's ancestors;
//! 3. the dynamic loader's own search (`libonnxruntime.so` on its path).
//!
//! # Devices and synchronization
//!
//! `Device::Cpu` runs on the CPU execution provider. `Device::Cuda(n)`
//! registers the CUDA execution provider on GPU `n` and fails with a clear
//! message where the runtime has none (the CPU-only `onnxruntime` wheel) or
//! the provider cannot start (no driver, no GPU `n`): it never falls back
//! to the CPU silently.
//!
//! [`OnnxModel::run`] returns once the outputs are in host memory: with
//! host inputs and outputs (the tensors of [`tensors`]), `Session::run`
//! copies the inputs to the device, runs the graph on the provider's stream
//! and copies the outputs back, and that copy waits for the stream. So the
//! time of a range around a run is the device's time too, and the `cuda`
//! synchronization switches (`synchronize_each_call`, before and after the
//! capture) change nothing inside it; they still order libtorch's or the
//! snippet's own CUDA work around the run. With I/O binding and outputs
//! bound to device memory, `run_with_binding` returns when the work is
//! queued: then a range ends before the device does, as with libtorch, and
//! `synchronize_each_call: true` is what makes a call's time the device's.
//!
//! GPU time per range from CUDA events (`gpu_timing`) records its events on
//! libtorch's current stream; ONNX Runtime runs on a stream of its own that
//! it does not expose through its C API, so events on another stream would
//! not bracket its kernels. A range around a host-bound run already
//! measures the device's work (above); per operator, ONNX Runtime's own
//! profiler ([`OnnxModelBuilder::operator_ranges`]) times each kernel.

mod operators;
pub(crate) mod runtime;
pub mod tensors;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputs, SessionOutputs};

use crate::device::Device;

pub use operators::OperatorProfile;
pub use runtime::{library_path, loaded, runtime, Runtime};

/// Refuses a device this runtime cannot run on, saying why.
pub fn check_device(device: Device) -> anyhow::Result<()> {
    match device {
        Device::Cpu => runtime().map(|_| ()),
        Device::Cuda(index) => runtime::check_cuda(index).map_err(|e| anyhow!("{e}")),
    }
}

/// How to open an [`OnnxModel`].
#[derive(Debug, Clone)]
pub struct OnnxModelBuilder {
    path: PathBuf,
    range: &'static str,
    device: Device,
    intra_threads: Option<usize>,
    inter_threads: Option<usize>,
    operator_ranges: bool,
    cpu_arena: bool,
}

impl OnnxModelBuilder {
    /// The name of the range each run opens (default `model`).
    pub fn range(mut self, name: &'static str) -> Self {
        self.range = name;
        self
    }

    /// The device to run on (default the CPU).
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// Threads inside one operator (ONNX Runtime's intra-op pool); 0 or
    /// unset: the runtime's default (one per core).
    pub fn intra_threads(mut self, threads: usize) -> Self {
        self.intra_threads = (threads > 0).then_some(threads);
        self
    }

    /// Threads running operators side by side (inter-op pool).
    pub fn inter_threads(mut self, threads: usize) -> Self {
        self.inter_threads = (threads > 0).then_some(threads);
        self
    }

    /// Whether the CPU provider keeps freed buffers in an arena for later
    /// runs (ONNX Runtime's default: yes).
    pub fn cpu_arena(mut self, on: bool) -> Self {
        self.cpu_arena = on;
        self
    }

    /// Turns on ONNX Runtime's profiler: each operator of a run inside a
    /// capture becomes a range, child of the range the run opened, named by
    /// its operator type (`model/Conv`). The profiler times every kernel,
    /// which costs some time per operator (see `docs/PERFORMANCE.md`).
    pub fn operator_ranges(mut self, on: bool) -> Self {
        self.operator_ranges = on;
        self
    }

    /// Opens the model: loads the runtime, builds the session on the
    /// device, and, with operator ranges, starts the runtime's profiler.
    pub fn open(self) -> anyhow::Result<OnnxModel> {
        let runtime = runtime()?;
        check_device(self.device)?;
        let path = &self.path;
        let fail = |e: &dyn std::fmt::Display| {
            anyhow!("cannot open the ONNX model {}: {e}", path.display())
        };
        let mut builder = Session::builder(&runtime.environment).map_err(|e| fail(&e))?;
        builder = builder
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| fail(&e))?;
        let mut providers = Vec::new();
        if let Device::Cuda(index) = self.device {
            providers.push(
                ort::ep::CUDA::default()
                    .with_device_id(i32::try_from(index).unwrap_or(i32::MAX))
                    .build()
                    .error_on_failure(),
            );
        }
        providers.push(
            ort::ep::CPU::default()
                .with_arena_allocator(self.cpu_arena)
                .build(),
        );
        builder = builder
            .with_execution_providers(providers)
            .map_err(|e| fail(&e))?;
        if let Some(threads) = self.intra_threads {
            builder = builder.with_intra_threads(threads).map_err(|e| fail(&e))?;
        }
        if let Some(threads) = self.inter_threads {
            builder = builder.with_inter_threads(threads).map_err(|e| fail(&e))?;
        }
        let profile = if self.operator_ranges {
            let profile = OperatorProfile::new()?;
            builder = builder
                .with_profiling(profile.prefix())
                .map_err(|e| fail(&e))?;
            Some(profile)
        } else {
            None
        };
        if !path.is_file() {
            anyhow::bail!(
                "the ONNX model {} does not exist (scripts/setup-onnxruntime puts the OCR models under .venv/ocr/models)",
                path.display()
            );
        }
        let session = builder.commit_from_file(path).map_err(|e| fail(&e))?;
        let session = Arc::new(Mutex::new(session));
        let operators = profile.map(|profile| operators::attach(profile, Arc::clone(&session)));
        Ok(OnnxModel {
            session,
            range: self.range,
            device: self.device,
            path: self.path,
            operators,
        })
    }
}

/// An ONNX model's session, run inside a range of its own.
pub struct OnnxModel {
    session: Arc<Mutex<Session>>,
    range: &'static str,
    device: Device,
    path: PathBuf,
    operators: Option<Arc<operators::Attached>>,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel")
            .field("path", &self.path)
            .field("range", &self.range)
            .field("device", &self.device)
            .field("operator_ranges", &self.operators.is_some())
            .finish()
    }
}

impl OnnxModel {
    /// How to open the model at `path`.
    pub fn builder(path: impl Into<PathBuf>) -> OnnxModelBuilder {
        OnnxModelBuilder {
            path: path.into(),
            range: "model",
            device: Device::Cpu,
            intra_threads: None,
            inter_threads: None,
            operator_ranges: false,
            cpu_arena: true,
        }
    }

    /// The model's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The device its session runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Reads the session (its inputs, outputs, metadata).
    pub fn with_session<R>(&self, read: impl FnOnce(&Session) -> R) -> R {
        read(&self.session.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs the model on `inputs` inside its range, and hands the outputs
    /// to `read` (still inside the range: copying them out is part of the
    /// model's time, as it is in Python, whose outputs are copies).
    pub fn run<'i, 'v: 'i, const N: usize, R>(
        &mut self,
        inputs: impl Into<SessionInputs<'i, 'v, N>>,
        read: impl FnOnce(&SessionOutputs<'_>) -> anyhow::Result<R>,
    ) -> anyhow::Result<R> {
        let _range = crate::nvtx::profiling_range(self.range);
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let call = self
            .operators
            .as_deref()
            .map(operators::Attached::call_begins);
        let outputs = session
            .run(inputs)
            .with_context(|| format!("running the ONNX model {}", self.path.display()))?;
        let result = read(&outputs);
        drop(outputs);
        if let (Some(attached), Some(call)) = (self.operators.as_deref(), call) {
            attached.call_ends(call);
        }
        result
    }

    /// The model's custom metadata value `key` (for example the character
    /// list a recognizer keeps under `character`).
    pub fn metadata(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.with_session(|session| {
            let metadata = session
                .metadata()
                .map_err(|e| anyhow!("reading the metadata of {}: {e}", self.path.display()))?;
            Ok(metadata.custom(key))
        })
    }
}
