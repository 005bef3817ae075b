// `if_cuda` takes something that converts into a `Device`.
use profiling_core::nvtx_range;

#[nvtx_range(if_cuda = on_gpu)]
fn launch(on_gpu: bool) -> u32 {
    7
}

fn main() {
    launch(true);
}
