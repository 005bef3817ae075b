// `#[nvtx_range(...)]` arguments that are refused where they are written.
use profiling_core::nvtx_range;

#[nvtx_range("")]
fn empty_name() {}

#[nvtx_range("decode\0boxes")]
fn nul_in_name() {}

#[nvtx_range(42)]
fn number_as_name() {}

#[nvtx_range(name = decode)]
fn identifier_as_name() {}

#[nvtx_range(decode)]
fn unquoted_name() {}

#[nvtx_range(label = "decode")]
fn unknown_argument() {}

#[nvtx_range(name)]
fn key_without_value() {}

#[nvtx_range("decode", name = "decode_boxes")]
fn name_twice() {}

#[nvtx_range(if_cuda = Device::Cpu, if_cuda = Device::Cuda(0))]
fn device_twice() {}

#[nvtx_range(crate = "profiling core")]
fn crate_not_a_path() {}

fn main() {
    // The functions are kept as written: calling them raises nothing more.
    empty_name();
    nul_in_name();
    number_as_name();
    identifier_as_name();
    unquoted_name();
    unknown_argument();
    key_without_value();
    name_twice();
    device_twice();
    crate_not_a_path();
}
