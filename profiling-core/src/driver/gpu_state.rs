//! Each GPU's state at either end of a capture, read through NVML (the
//! NVIDIA driver's management library): clocks, application clocks, power
//! limit and draw, temperature, the reasons the clocks are held down, and
//! persistence mode. A GPU's timings depend on them as a CPU's do on its
//! governor and frequency.
//!
//! NVML is opened at run time (`libnvidia-ml.so.1`, or the file
//! `PROFILING_NVML_LIBRARY` names), never linked: a build needs nothing of
//! it, and a machine without the driver records why there is no state.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The environment variable naming the NVML library to open, in place of
/// `libnvidia-ml.so.1` found the dynamic loader's way.
pub const NVML_LIBRARY_ENV: &str = "PROFILING_NVML_LIBRARY";

/// The GPUs' state when the capture opened and when it closed (the
/// manifest's `timings.machine.gpus`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuStates {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start: Vec<GpuState>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub end: Vec<GpuState>,
    /// Why there is no state: no driver, NVML would not start, no GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<String>,
}

/// One GPU as NVML reads it; a figure the GPU does not report is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    /// NVML's index of the GPU.
    pub index: u32,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The clocks now, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphics_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    /// The application clocks (what the GPU runs at under load, unless
    /// held down), MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_graphics_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_memory_clock_mhz: Option<u32>,
    /// The power limit the driver enforces, and the draw now, milliwatts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_mw: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_draw_mw: Option<u32>,
    /// The GPU's temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<u32>,
    /// Why the clocks are below their maximum now, by NVML's names
    /// (`gpu_idle`, `sw_power_cap`, `hw_thermal_slowdown`, ...); empty when
    /// nothing holds them down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_reasons: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<bool>,
}

/// NVML's clock event reasons (`nvmlClocksEventReason*`), by bit.
const THROTTLE_REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The names of the reasons set in `mask`; an unknown bit by its value.
pub fn throttle_reason_names(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let known = THROTTLE_REASONS.iter().fold(0, |all, (bit, _)| all | bit);
    if mask & !known != 0 {
        names.push(format!("other (0x{:x})", mask & !known));
    }
    names
}

impl GpuStates {
    /// Every GPU now, or why there is none to read.
    pub fn now() -> Result<Vec<GpuState>, String> {
        let nvml = Nvml::get()?;
        nvml.read_all()
    }

    /// A capture's states from its two readings.
    pub fn of(start: Result<Vec<GpuState>, String>, end: Result<Vec<GpuState>, String>) -> Self {
        match (start, end) {
            (Ok(start), Ok(end)) if start.is_empty() && end.is_empty() => GpuStates {
                absent: Some("NVML sees no GPU".to_owned()),
                ..GpuStates::default()
            },
            (Ok(start), Ok(end)) => GpuStates {
                start,
                end,
                absent: None,
            },
            (Err(why), _) | (_, Err(why)) => GpuStates {
                absent: Some(why),
                ..GpuStates::default()
            },
        }
    }

    /// One line for the comparison's header: the first GPU at the
    /// capture's start.
    pub fn summary(&self) -> Option<String> {
        let gpu = self.start.first()?;
        let mut parts = vec![gpu.name.clone()];
        if let Some(sm) = gpu.sm_clock_mhz {
            parts.push(format!("SM {sm} MHz"));
        }
        if let Some(limit) = gpu.power_limit_mw {
            parts.push(format!("limit {} W", limit / 1000));
        }
        if let Some(temperature) = gpu.temperature_c {
            parts.push(format!("{temperature} °C"));
        }
        if let Some(reasons) = gpu.throttle_reasons.as_ref().filter(|r| !r.is_empty()) {
            parts.push(format!("held by {}", reasons.join("+")));
        }
        Some(parts.join(", "))
    }

    /// What differs between two runs' GPUs that their timings depend on:
    /// the clocks at the capture's end (after warming up to the load) by
    /// more than [`CLOCK_GAP`] (a boosting GPU moves between clock steps
    /// of a few MHz on its own), and the settings exactly: the application
    /// clocks, the power limit, persistence mode. Empty where either run
    /// has no state, or they agree.
    pub fn differences(base: &GpuStates, candidate: &GpuStates) -> Vec<String> {
        let mut said = Vec::new();
        fn side(states: &GpuStates) -> &[GpuState] {
            if states.end.is_empty() {
                &states.start
            } else {
                &states.end
            }
        }
        for (b, c) in side(base).iter().zip(side(candidate)) {
            let gpu = format!("GPU {} ({})", b.index, b.name);
            if b.name != c.name {
                said.push(format!(
                    "{gpu}: the candidate ran on another GPU, {}",
                    c.name
                ));
                continue;
            }
            // Apart by more than `gap` of the larger (0: any difference).
            let mut differ =
                |what: &str, unit: &str, gap: f64, base: Option<u32>, candidate: Option<u32>| {
                    if let (Some(x), Some(y)) = (base, candidate) {
                        if f64::from(x.abs_diff(y)) > gap * f64::from(x.max(y)) {
                            said.push(format!(
                                "{gpu}: {what} {x}{unit} (base) vs {y}{unit} (candidate)"
                            ));
                        }
                    }
                };
            differ(
                "SM clock",
                " MHz",
                CLOCK_GAP,
                b.sm_clock_mhz,
                c.sm_clock_mhz,
            );
            differ(
                "memory clock",
                " MHz",
                CLOCK_GAP,
                b.memory_clock_mhz,
                c.memory_clock_mhz,
            );
            differ(
                "application clock",
                " MHz",
                0.0,
                b.application_graphics_clock_mhz,
                c.application_graphics_clock_mhz,
            );
            differ(
                "application memory clock",
                " MHz",
                0.0,
                b.application_memory_clock_mhz,
                c.application_memory_clock_mhz,
            );
            differ(
                "power limit",
                " W",
                0.0,
                b.power_limit_mw.map(|mw| mw / 1000),
                c.power_limit_mw.map(|mw| mw / 1000),
            );
            if let (Some(x), Some(y)) = (b.persistence_mode, c.persistence_mode) {
                if x != y {
                    let word = |on: bool| if on { "on" } else { "off" };
                    said.push(format!(
                        "{gpu}: persistence mode {} (base) vs {} (candidate)",
                        word(x),
                        word(y)
                    ));
                }
            }
        }
        said
    }
}

/// The least share by which two runs' current clocks differ for
/// [`GpuStates::differences`] to say so.
pub const CLOCK_GAP: f64 = 0.05;

// NVML's C interface: `nvmlReturn_t` is an enum (a C int), a device a
// pointer, every figure an out-parameter.
type Return = c_int;
type DeviceHandle = *mut c_void;
const NVML_SUCCESS: Return = 0;
const CLOCK_GRAPHICS: c_uint = 0;
const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;
const TEMPERATURE_GPU: c_uint = 0;

/// The NVML functions read, opened once a process and kept.
struct Nvml {
    _library: libloading::Library,
    error_string: unsafe extern "C" fn(Return) -> *const c_char,
    count: unsafe extern "C" fn(*mut c_uint) -> Return,
    handle: unsafe extern "C" fn(c_uint, *mut DeviceHandle) -> Return,
    name: unsafe extern "C" fn(DeviceHandle, *mut c_char, c_uint) -> Return,
    uuid: unsafe extern "C" fn(DeviceHandle, *mut c_char, c_uint) -> Return,
    clock: unsafe extern "C" fn(DeviceHandle, c_uint, *mut c_uint) -> Return,
    application_clock: unsafe extern "C" fn(DeviceHandle, c_uint, *mut c_uint) -> Return,
    power_limit: unsafe extern "C" fn(DeviceHandle, *mut c_uint) -> Return,
    power_draw: unsafe extern "C" fn(DeviceHandle, *mut c_uint) -> Return,
    temperature: unsafe extern "C" fn(DeviceHandle, c_uint, *mut c_uint) -> Return,
    throttle_reasons: unsafe extern "C" fn(DeviceHandle, *mut c_ulonglong) -> Return,
    persistence_mode: unsafe extern "C" fn(DeviceHandle, *mut c_uint) -> Return,
}

impl Nvml {
    /// NVML, opened and started on the first call; why not, on every call
    /// after a failure.
    fn get() -> Result<&'static Nvml, String> {
        static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
        NVML.get_or_init(|| Nvml::open(std::env::var_os(NVML_LIBRARY_ENV)))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Opens the library `named`, else NVML's by its soname, and starts it.
    fn open(named: Option<std::ffi::OsString>) -> Result<Nvml, String> {
        let candidates: Vec<std::ffi::OsString> = match &named {
            Some(path) => vec![path.clone()],
            None => vec!["libnvidia-ml.so.1".into(), "libnvidia-ml.so".into()],
        };
        let mut failures = Vec::new();
        let mut opened = None;
        for candidate in &candidates {
            // SAFETY: NVML's initializers only set up the library's own
            // state; nothing else runs when it is loaded.
            match unsafe { libloading::Library::new(candidate) } {
                Ok(library) => {
                    opened = Some(library);
                    break;
                }
                Err(error) => failures.push(error.to_string()),
            }
        }
        let Some(library) = opened else {
            let what = match &named {
                Some(path) => format!(
                    "{NVML_LIBRARY_ENV}={} cannot be opened",
                    path.to_string_lossy()
                ),
                None => "no NVIDIA driver's NVML here (libnvidia-ml.so.1)".to_owned(),
            };
            return Err(format!("{what}: {}", failures.join("; ")));
        };
        // SAFETY: each symbol is looked up by NVML's name for it and given
        // the signature of NVML's header (nvml.h) for that name.
        unsafe {
            macro_rules! symbol {
                ($name:literal) => {
                    *library.get($name).map_err(|error| {
                        format!(
                            "NVML lacks {}: {error}",
                            String::from_utf8_lossy(&$name[..$name.len() - 1])
                        )
                    })?
                };
            }
            let init: unsafe extern "C" fn() -> Return = symbol!(b"nvmlInit_v2\0");
            let nvml = Nvml {
                error_string: symbol!(b"nvmlErrorString\0"),
                count: symbol!(b"nvmlDeviceGetCount_v2\0"),
                handle: symbol!(b"nvmlDeviceGetHandleByIndex_v2\0"),
                name: symbol!(b"nvmlDeviceGetName\0"),
                uuid: symbol!(b"nvmlDeviceGetUUID\0"),
                clock: symbol!(b"nvmlDeviceGetClockInfo\0"),
                application_clock: symbol!(b"nvmlDeviceGetApplicationsClock\0"),
                power_limit: symbol!(b"nvmlDeviceGetEnforcedPowerLimit\0"),
                power_draw: symbol!(b"nvmlDeviceGetPowerUsage\0"),
                temperature: symbol!(b"nvmlDeviceGetTemperature\0"),
                throttle_reasons: symbol!(b"nvmlDeviceGetCurrentClocksThrottleReasons\0"),
                persistence_mode: symbol!(b"nvmlDeviceGetPersistenceMode\0"),
                _library: library,
            };
            let started = init();
            if started != NVML_SUCCESS {
                return Err(format!(
                    "NVML would not start: {}",
                    nvml.error_text(started)
                ));
            }
            Ok(nvml)
        }
    }

    fn error_text(&self, code: Return) -> String {
        // SAFETY: nvmlErrorString returns a static string for any code.
        let text = unsafe { (self.error_string)(code) };
        if text.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: a NUL-terminated static string, per nvml.h.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        }
    }

    fn read_all(&self) -> Result<Vec<GpuState>, String> {
        let mut count: c_uint = 0;
        // SAFETY: an out-parameter NVML writes.
        let code = unsafe { (self.count)(&mut count) };
        if code != NVML_SUCCESS {
            return Err(format!(
                "NVML cannot count the GPUs: {}",
                self.error_text(code)
            ));
        }
        (0..count).map(|index| self.read(index)).collect()
    }

    fn read(&self, index: c_uint) -> Result<GpuState, String> {
        let mut device: DeviceHandle = std::ptr::null_mut();
        // SAFETY: an out-parameter NVML writes, for an index below its count.
        let code = unsafe { (self.handle)(index, &mut device) };
        if code != NVML_SUCCESS {
            return Err(format!(
                "NVML cannot open GPU {index}: {}",
                self.error_text(code)
            ));
        }
        // Each figure the device answers; one it does not (not supported,
        // no permission) stays absent.
        let figure = |read: &dyn Fn(*mut c_uint) -> Return| {
            let mut value: c_uint = 0;
            (read(&mut value) == NVML_SUCCESS).then_some(value)
        };
        let text = |read: unsafe extern "C" fn(DeviceHandle, *mut c_char, c_uint) -> Return| {
            let mut buffer = [0 as c_char; 128];
            // SAFETY: NVML writes at most the length given, NUL-terminated.
            let code = unsafe { read(device, buffer.as_mut_ptr(), buffer.len() as c_uint) };
            (code == NVML_SUCCESS).then(|| {
                // SAFETY: NUL-terminated within the buffer on success.
                unsafe { CStr::from_ptr(buffer.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
        };
        // SAFETY (every call below): the device handle NVML gave, and an
        // out-parameter of the type nvml.h declares.
        let clock = |kind| figure(&|out| unsafe { (self.clock)(device, kind, out) });
        let application =
            |kind| figure(&|out| unsafe { (self.application_clock)(device, kind, out) });
        let mut reasons: c_ulonglong = 0;
        let throttle_reasons = (unsafe { (self.throttle_reasons)(device, &mut reasons) }
            == NVML_SUCCESS)
            .then(|| throttle_reason_names(reasons));
        Ok(GpuState {
            index,
            name: text(self.name).unwrap_or_else(|| "unknown".to_owned()),
            uuid: text(self.uuid),
            graphics_clock_mhz: clock(CLOCK_GRAPHICS),
            sm_clock_mhz: clock(CLOCK_SM),
            memory_clock_mhz: clock(CLOCK_MEM),
            application_graphics_clock_mhz: application(CLOCK_GRAPHICS),
            application_memory_clock_mhz: application(CLOCK_MEM),
            power_limit_mw: figure(&|out| unsafe { (self.power_limit)(device, out) }),
            power_draw_mw: figure(&|out| unsafe { (self.power_draw)(device, out) }),
            temperature_c: figure(&|out| unsafe {
                (self.temperature)(device, TEMPERATURE_GPU, out)
            }),
            throttle_reasons,
            persistence_mode: figure(&|out| unsafe { (self.persistence_mode)(device, out) })
                .map(|mode| mode != 0),
        })
    }
}

// SAFETY: NVML's functions are thread-safe (nvml.h); the struct holds the
// library and function pointers into it, never mutated after opening.
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_reasons_are_named_and_an_unknown_bit_kept() {
        assert_eq!(throttle_reason_names(0), Vec::<String>::new());
        assert_eq!(
            throttle_reason_names(0x1 | 0x4 | 0x40),
            ["gpu_idle", "sw_power_cap", "hw_thermal_slowdown"]
        );
        assert_eq!(
            throttle_reason_names(0x8 | 0x1000),
            ["hw_slowdown", "other (0x1000)"]
        );
    }

    fn gpu(sm: u32, limit_w: u32) -> GpuState {
        GpuState {
            index: 0,
            name: "NVIDIA H100 80GB HBM3".to_owned(),
            sm_clock_mhz: Some(sm),
            memory_clock_mhz: Some(2619),
            power_limit_mw: Some(limit_w * 1000),
            persistence_mode: Some(true),
            ..GpuState::default()
        }
    }

    #[test]
    fn runs_at_other_clocks_or_power_limits_are_told_apart() {
        let states = |gpu: GpuState| GpuStates {
            start: vec![gpu.clone()],
            end: vec![gpu],
            absent: None,
        };
        let base = states(gpu(1980, 700));
        assert!(GpuStates::differences(&base, &base).is_empty());
        // A clock step or two of boost is not another state.
        assert!(GpuStates::differences(&base, &states(gpu(1935, 700))).is_empty());
        let slower = states(gpu(1410, 400));
        assert_eq!(
            GpuStates::differences(&base, &slower),
            [
                "GPU 0 (NVIDIA H100 80GB HBM3): SM clock 1980 MHz (base) vs 1410 MHz (candidate)",
                "GPU 0 (NVIDIA H100 80GB HBM3): power limit 700 W (base) vs 400 W (candidate)",
            ]
        );
        // No state on a side: nothing to say.
        let absent = GpuStates::of(Err("no NVIDIA driver".to_owned()), Ok(Vec::new()));
        assert_eq!(absent.absent.as_deref(), Some("no NVIDIA driver"));
        assert!(GpuStates::differences(&base, &absent).is_empty());
    }

    #[test]
    fn a_library_that_is_not_there_is_recorded_as_absent_saying_which() {
        let why = Nvml::open(Some("/nonexistent/libnvidia-ml.so.1".into()))
            .err()
            .unwrap();
        assert!(
            why.starts_with(
                "PROFILING_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 cannot be opened: "
            ),
            "{why}"
        );
        assert_eq!(
            GpuStates::of(Err(why.clone()), Err(why.clone())).absent,
            Some(why)
        );
        // Without the variable, on a machine without the driver.
        if let Err(why) = Nvml::open(None) {
            assert!(
                why.starts_with("no NVIDIA driver's NVML here (libnvidia-ml.so.1): "),
                "{why}"
            );
        }
    }
}
