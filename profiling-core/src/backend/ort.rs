//! ONNX Runtime (the `ort` feature): CUDA is its CUDA execution provider,
//! asked of the runtime a target loaded (`onnx::runtime`, which names
//! nothing else of the crate). A model run returns with its outputs in host
//! memory, so there is nothing to synchronize, and the runtime has no
//! generators of its own to seed nor device events to time with.

use super::Backend;
use crate::onnx::runtime;

/// ONNX Runtime, loaded at run time from the library `onnx::runtime` finds.
pub(super) struct OnnxRuntime;

impl Backend for OnnxRuntime {
    fn name(&self) -> &'static str {
        "onnxruntime"
    }

    /// `1.32.0 (/path/libonnxruntime.so.1.32.0)` once a target loaded the
    /// runtime; the manifest is written after the run, so it has.
    fn version(&self) -> Option<String> {
        runtime::loaded().map(|r| format!("{} ({})", r.version, r.library.display()))
    }

    /// Only once a target loaded the runtime: nothing is loaded to say no.
    fn cuda_available(&self) -> bool {
        runtime::loaded().is_some() && self.check_cuda(0).is_ok()
    }

    fn check_cuda(&self, index: usize) -> Result<(), String> {
        runtime::check_cuda(index)
    }
}
