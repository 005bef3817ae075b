//! A build without a GPU backend: it runs on the CPU and refuses CUDA,
//! saying which feature to build with.

use super::Backend;

/// No GPU library linked in.
pub(super) struct NoBackend;

impl Backend for NoBackend {
    fn name(&self) -> &'static str {
        "none"
    }

    fn check_cuda(&self, _index: usize) -> Result<(), String> {
        Err("this build has no CUDA backend: run on `cpu`, or build with `--features tch` (scripts/setup-libtorch installs libtorch) or `--features ort` (scripts/setup-onnxruntime installs ONNX Runtime)".to_owned())
    }
}
