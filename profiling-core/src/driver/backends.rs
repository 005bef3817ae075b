//! Which GPU backend this build has, and whether it can reach the CUDA
//! device a run asks for: checked before a run starts, and recorded in the
//! manifest.

use crate::device::Device;

/// Whether this build can reach a CUDA device now: a GPU backend compiled
/// in, and a device it can see.
pub fn cuda_backend_available() -> bool {
    backend::cuda_available()
}

/// Refuses a device this build or this machine cannot run on, saying why.
pub fn check_available(device: Device) -> Result<(), String> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(index) => backend::check_cuda(index),
    }
}

#[cfg(not(any(feature = "tch", feature = "ort")))]
mod backend {
    pub(super) fn cuda_available() -> bool {
        false
    }

    pub(super) fn check_cuda(_index: usize) -> Result<(), String> {
        Err("this build has no CUDA backend: run on `cpu`, or build with `--features tch` (scripts/setup-libtorch installs libtorch) or `--features ort` (scripts/setup-onnxruntime installs ONNX Runtime)".to_owned())
    }
}

/// ONNX Runtime alone: CUDA is its CUDA execution provider.
#[cfg(all(feature = "ort", not(feature = "tch")))]
mod backend {
    /// Only once a target loaded the runtime: nothing is loaded to say no.
    pub(super) fn cuda_available() -> bool {
        crate::onnx::runtime::loaded().is_some() && check_cuda(0).is_ok()
    }

    pub(super) fn check_cuda(index: usize) -> Result<(), String> {
        crate::onnx::runtime::check_cuda(index)
    }
}

#[cfg(feature = "tch")]
mod backend {
    pub(super) fn cuda_available() -> bool {
        tch::Cuda::is_available()
    }

    pub(super) fn check_cuda(index: usize) -> Result<(), String> {
        if !tch::Cuda::is_available() {
            return Err("libtorch sees no CUDA device on this machine (no GPU, no driver, or a CPU-only libtorch)".to_owned());
        }
        let count = usize::try_from(tch::Cuda::device_count()).unwrap_or(0);
        if index >= count {
            return Err(format!(
                "there is no GPU {index}: libtorch sees {count} (cuda:0 to cuda:{})",
                count.saturating_sub(1)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_available() {
        assert_eq!(check_available(Device::Cpu), Ok(()));
    }

    #[cfg(not(any(feature = "tch", feature = "ort")))]
    #[test]
    fn cuda_is_refused_without_a_backend() {
        assert!(!cuda_backend_available());
        let message = check_available(Device::Cuda(0)).unwrap_err();
        assert!(
            message.starts_with("this build has no CUDA backend"),
            "{message}"
        );
    }
}
