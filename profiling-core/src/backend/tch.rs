//! libtorch through `tch` (the `tch` feature): CUDA as libtorch sees it,
//! its version read from the library this process mapped, GPU names from
//! the CUDA runtime it loaded, its generators seeded, and device events
//! (`CudaEvents`) on the stream it queues on. Also where [`Device`] meets
//! `tch::Device` and a tensor says which device it is on.

use std::path::Path;
use std::sync::Arc;

use super::{Backend, OpenEvents};
use crate::device::{Device, DeviceKind};
use crate::timing::EventBackend;

/// libtorch, linked in.
pub(super) struct Libtorch;

impl Backend for Libtorch {
    fn name(&self) -> &'static str {
        "libtorch"
    }

    fn version(&self) -> Option<String> {
        loaded_libtorch_version()
    }

    fn cuda_available(&self) -> bool {
        tch::Cuda::is_available()
    }

    fn check_cuda(&self, index: usize) -> Result<(), String> {
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

    #[inline]
    fn synchronize(&self, index: usize) {
        tch::Cuda::synchronize(index as i64);
    }

    fn seed(&self, seed: u64) {
        // libtorch takes the seed as a signed 64-bit value; the bits are what count.
        tch::manual_seed(seed as i64);
        tch::Cuda::manual_seed_all(seed);
    }

    fn device_count(&self) -> usize {
        if tch::Cuda::is_available() {
            usize::try_from(tch::Cuda::device_count()).unwrap_or(0)
        } else {
            0
        }
    }

    fn device_name(&self, index: usize) -> Option<String> {
        cuda_device_name(index)
    }

    fn gpu_events(&self) -> Option<OpenEvents> {
        Some(open_events)
    }
}

fn open_events(index: usize) -> anyhow::Result<Arc<dyn EventBackend>> {
    Ok(Arc::new(CudaEvents::new(index)?))
}

/// The version of the libtorch this process loaded: read from the
/// `version.py` beside the `lib/` directory `libtorch_cpu.so` was mapped
/// from, which is right even when the library comes from another install
/// than the one built against.
fn loaded_libtorch_version() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let library = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.ends_with("/libtorch_cpu.so"))?;
    let torch_dir = Path::new(library).parent()?.parent()?;
    let text = std::fs::read_to_string(torch_dir.join("version.py")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("__version__ = "))
        .map(|v| v.trim().trim_matches('\'').trim_matches('"').to_owned())
}

/// CUDA's name for GPU `index`, asked of the CUDA runtime libtorch loaded
/// (`cudaGetDeviceProperties`: the name is the first field of the struct).
fn cuda_device_name(index: usize) -> Option<String> {
    use std::ffi::{c_char, c_int, c_void, CStr};

    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    type GetProperties = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
    // Larger than every cudaDeviceProp so far (about 1 KiB); zeroed so the
    // name is NUL-terminated even if the runtime wrote less.
    let mut properties = vec![0u8; 8192];
    for symbol in [c"cudaGetDeviceProperties_v2", c"cudaGetDeviceProperties"] {
        // SAFETY: RTLD_DEFAULT (null) searches the libraries already loaded;
        // the symbol, when found, has this C signature in every CUDA runtime.
        let function = unsafe { dlsym(std::ptr::null_mut(), symbol.as_ptr()) };
        if function.is_null() {
            continue;
        }
        let function: GetProperties = unsafe { std::mem::transmute(function) };
        let status =
            unsafe { function(properties.as_mut_ptr().cast(), c_int::try_from(index).ok()?) };
        if status != 0 {
            return None;
        }
        let name = CStr::from_bytes_until_nul(&properties[..256]).ok()?;
        return Some(name.to_string_lossy().into_owned());
    }
    None
}

impl From<Device> for tch::Device {
    fn from(device: Device) -> Self {
        match device {
            Device::Cpu => tch::Device::Cpu,
            Device::Cuda(index) => tch::Device::Cuda(index),
        }
    }
}

/// A `tch` device the profiler does not run on (MPS, Vulkan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unsupported device {0:?}: the profiler runs on `cpu` and `cuda:N`")]
pub struct UnsupportedDevice(pub tch::Device);

impl TryFrom<tch::Device> for Device {
    type Error = UnsupportedDevice;

    fn try_from(device: tch::Device) -> Result<Self, Self::Error> {
        match device {
            tch::Device::Cpu => Ok(Device::Cpu),
            tch::Device::Cuda(index) => Ok(Device::Cuda(index)),
            other => Err(UnsupportedDevice(other)),
        }
    }
}

impl DeviceKind for tch::Device {
    #[inline]
    fn is_cuda_device(&self) -> bool {
        matches!(self, tch::Device::Cuda(_))
    }
}

impl DeviceKind for tch::Tensor {
    #[inline]
    fn is_cuda_device(&self) -> bool {
        self.device().is_cuda_device()
    }
}

/// CUDA events through the driver API, loaded at run time (`libcuda.so`):
/// nothing CUDA is needed to build, and a machine without a driver still
/// runs CPU work.
mod cuda {
    use cudarc::driver::{result, sys};

    use crate::timing::EventBackend;

    /// Events on the legacy default stream of one device, in its primary
    /// context: the context and stream libtorch uses.
    #[derive(Debug)]
    pub struct CudaEvents {
        index: usize,
        context: usize,
    }

    impl CudaEvents {
        /// The events of GPU `index`; an error when the driver cannot be
        /// loaded or has no such device.
        pub fn new(index: usize) -> anyhow::Result<CudaEvents> {
            // SAFETY: only looks for the library.
            if !unsafe { sys::is_culib_present() } {
                anyhow::bail!("the CUDA driver library (libcuda.so) cannot be loaded");
            }
            result::init().map_err(|e| anyhow::anyhow!("cuInit failed: {e:?}"))?;
            let ordinal = i32::try_from(index)?;
            let device = result::device::get(ordinal)
                .map_err(|e| anyhow::anyhow!("no CUDA device {index}: {e:?}"))?;
            // SAFETY: `device` came from the driver; the primary context is
            // retained for the process (libtorch shares it).
            let context = unsafe { result::primary_ctx::retain(device) }.map_err(|e| {
                anyhow::anyhow!("cannot retain the primary context of cuda:{index}: {e:?}")
            })?;
            Ok(CudaEvents {
                index,
                context: context as usize,
            })
        }

        fn context(&self) -> sys::CUcontext {
            self.context as sys::CUcontext
        }
    }

    impl EventBackend for CudaEvents {
        fn stream(&self) -> String {
            format!(
                "legacy default stream of cuda:{}, primary context (libtorch's current stream unless code sets another)",
                self.index
            )
        }

        fn bind_thread(&self) -> anyhow::Result<()> {
            let current = result::ctx::get_current()
                .map_err(|e| anyhow::anyhow!("cuCtxGetCurrent failed: {e:?}"))?;
            if current != Some(self.context()) {
                // SAFETY: a context retained by `new` and never released.
                unsafe { result::ctx::set_current(self.context()) }
                    .map_err(|e| anyhow::anyhow!("cuCtxSetCurrent failed: {e:?}"))?;
            }
            Ok(())
        }

        fn create(&self) -> anyhow::Result<u64> {
            let event = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
                .map_err(|e| anyhow::anyhow!("cuEventCreate failed: {e:?}"))?;
            Ok(event as u64)
        }

        #[inline]
        fn record(&self, event: u64) -> bool {
            // SAFETY: `event` was made by `create` and not destroyed; the
            // NULL stream is the current context's legacy default stream.
            unsafe { result::event::record(event as sys::CUevent, std::ptr::null_mut()) }.is_ok()
        }

        fn synchronize(&self, event: u64) -> anyhow::Result<()> {
            // SAFETY: as in `record`.
            unsafe { result::event::synchronize(event as sys::CUevent) }
                .map_err(|e| anyhow::anyhow!("cuEventSynchronize failed: {e:?}"))
        }

        fn elapsed_ns(&self, start: u64, end: u64) -> anyhow::Result<f64> {
            // SAFETY: both made by `create`, recorded and completed.
            let ms = unsafe { result::event::elapsed(start as sys::CUevent, end as sys::CUevent) }
                .map_err(|e| anyhow::anyhow!("cuEventElapsedTime failed: {e:?}"))?;
            Ok(f64::from(ms) * 1e6)
        }

        fn destroy(&self, event: u64) {
            // SAFETY: made by `create`, destroyed once (the pool forgets it).
            let _ = unsafe { result::event::destroy(event as sys::CUevent) };
        }
    }
}

pub use cuda::CudaEvents;
