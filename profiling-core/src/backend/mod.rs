//! The GPU backends behind one seam: what each is called and which
//! version it loaded, whether it reaches a device, how the runtime waits
//! for a device, seeds it, names its GPUs and times on it with device
//! events.
//!
//! One file per backend ([`Backend`] implemented once each): `none.rs`
//! (a build without one), `tch.rs` (libtorch, the `tch` feature) and
//! `ort.rs` (ONNX Runtime, the `ort` feature). This file is the only place
//! that says which of them a build has (`ACTIVE`); the rest of the runtime
//! calls the functions below. A backend's own API for targets (tensors,
//! models) lives beside, under its feature: `tensor`, `onnx`.

mod none;
#[cfg(feature = "ort")]
mod ort;
#[cfg(feature = "tch")]
mod tch;

#[cfg(feature = "tch")]
pub use self::tch::{CudaEvents, UnsupportedDevice};

use std::sync::Arc;

use crate::device::Device;
use crate::timing::EventBackend;

/// What a backend gives the runtime. Every method has the answer of a
/// backend that has no GPU, but the name and the device check: a backend
/// overrides what it can do.
pub trait Backend: Sync {
    /// The name the manifest records as `backend.name`: `libtorch`,
    /// `onnxruntime`, `none`.
    fn name(&self) -> &'static str;

    /// The library loaded at run time, as the manifest records it
    /// (`2.11.0+cu130`); `None` when nothing is loaded (yet).
    fn version(&self) -> Option<String> {
        None
    }

    /// Whether this backend can reach a CUDA device now.
    fn cuda_available(&self) -> bool {
        false
    }

    /// Refuses CUDA device `index` when this build or this machine cannot
    /// run on it, saying why.
    fn check_cuda(&self, index: usize) -> Result<(), String>;

    /// Waits for the work this backend queued on CUDA device `index`.
    fn synchronize(&self, _index: usize) {}

    /// Seeds the backend's own generators (the CPU's and every device's).
    fn seed(&self, _seed: u64) {}

    /// The GPUs this backend sees, numbered as CUDA numbers them.
    fn device_count(&self) -> usize {
        0
    }

    /// CUDA's name for GPU `index` (`NVIDIA H100 80GB HBM3`).
    fn device_name(&self, _index: usize) -> Option<String> {
        None
    }

    /// How this backend records device events for GPU time per range
    /// (`gpu_timing`), when it can.
    fn gpu_events(&self) -> Option<OpenEvents> {
        None
    }
}

/// Opens the device events of CUDA device `index`: an error when the
/// driver cannot be loaded or has no such device.
pub type OpenEvents = fn(index: usize) -> anyhow::Result<Arc<dyn EventBackend>>;

/// The backends of this build, the primary first: with `tch`, libtorch
/// checks and names the devices and times on them even beside ONNX Runtime,
/// whose models return their outputs in host memory.
static ACTIVE: &[&dyn Backend] = &[
    #[cfg(feature = "tch")]
    &self::tch::Libtorch,
    #[cfg(feature = "ort")]
    &self::ort::OnnxRuntime,
];

/// The backend that checks and names devices: the first this build has,
/// or `none`.
pub fn primary() -> &'static dyn Backend {
    ACTIVE.first().copied().unwrap_or(&none::NoBackend)
}

/// The version the active backend named `name` loaded, if this build has
/// it and it loaded one.
pub fn version_of(name: &str) -> Option<String> {
    ACTIVE
        .iter()
        .find(|backend| backend.name() == name)
        .and_then(|backend| backend.version())
}

/// Whether this build can reach a CUDA device now: a GPU backend compiled
/// in, and a device it can see.
pub fn cuda_available() -> bool {
    primary().cuda_available()
}

/// Refuses a device this build or this machine cannot run on, saying why:
/// checked before a run starts.
///
/// ```
/// use profiling_core::prelude::*;
/// assert_eq!(profiling_core::backend::check_device(Device::Cpu), Ok(()));
/// ```
pub fn check_device(device: Device) -> Result<(), String> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(index) => primary().check_cuda(index),
    }
}

/// Waits for the work every backend queued on `device` to finish. On the
/// CPU, and with ONNX Runtime alone (a model run returns with its outputs
/// in host memory, see the `onnx` module), there is nothing to wait for.
#[inline]
pub fn synchronize(device: Device) {
    if let Device::Cuda(index) = device {
        for backend in ACTIVE {
            backend.synchronize(index);
        }
    }
}

/// Seeds every backend's generators: [`crate::random::seed_run`] calls it.
pub(crate) fn seed(seed: u64) {
    for backend in ACTIVE {
        backend.seed(seed);
    }
}

/// Whether this build records device events: a backend with
/// [`Backend::gpu_events`].
pub fn has_gpu_events() -> bool {
    ACTIVE.iter().any(|backend| backend.gpu_events().is_some())
}

/// The device events of CUDA device `index`, from the first backend that
/// has them; `None` when none has.
pub fn gpu_events(index: usize) -> Option<anyhow::Result<Arc<dyn EventBackend>>> {
    ACTIVE
        .iter()
        .find_map(|backend| backend.gpu_events())
        .map(|open| open(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_available() {
        assert_eq!(check_device(Device::Cpu), Ok(()));
    }

    #[cfg(not(any(feature = "tch", feature = "ort")))]
    #[test]
    fn cuda_is_refused_without_a_backend() {
        assert_eq!(primary().name(), "none");
        assert!(!cuda_available());
        assert!(!has_gpu_events());
        assert!(gpu_events(0).is_none());
        let message = check_device(Device::Cuda(0)).unwrap_err();
        assert!(
            message.starts_with("this build has no CUDA backend"),
            "{message}"
        );
    }

    #[test]
    fn libtorch_is_the_primary_backend_beside_onnx_runtime() {
        let expected = if cfg!(feature = "tch") {
            "libtorch"
        } else if cfg!(feature = "ort") {
            "onnxruntime"
        } else {
            "none"
        };
        assert_eq!(primary().name(), expected);
        assert_eq!(has_gpu_events(), cfg!(feature = "tch"));
    }
}
