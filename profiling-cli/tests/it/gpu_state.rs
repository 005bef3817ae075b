//! The GPUs' state in the manifest, read through NVML opened at run time:
//! here through a stand-in `libnvidia-ml.so.1` built from C for the test
//! (the functions and signatures of NVML's header), named by
//! `PROFILING_NVML_LIBRARY`; and `compare` telling runs at other clocks or
//! power limits apart.

use std::path::{Path, PathBuf};
use std::process::Command;

/// NVML's functions the runtime reads, answering as one GPU would; the
/// SM clock and power limit from the environment, the application clocks
/// not supported, as on many GPUs.
const FAKE_NVML: &str = r#"
#include <stdlib.h>
#include <string.h>
typedef void *device;
static unsigned from_env(const char *name, unsigned otherwise) {
    const char *value = getenv(name);
    return value ? (unsigned)strtoul(value, 0, 10) : otherwise;
}
int nvmlInit_v2(void) { return getenv("FAKE_NVML_FAILS") ? 1 : 0; }
const char *nvmlErrorString(int code) { return code == 3 ? "Not Supported" : "Uninitialized"; }
int nvmlDeviceGetCount_v2(unsigned *count) { *count = 1; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, device *out) { *out = (device)(size_t)(index + 1); return 0; }
int nvmlDeviceGetName(device d, char *name, unsigned length) { strncpy(name, "Stand-in H100", length); return 0; }
int nvmlDeviceGetUUID(device d, char *uuid, unsigned length) { strncpy(uuid, "GPU-0000-stand-in", length); return 0; }
int nvmlDeviceGetClockInfo(device d, unsigned kind, unsigned *mhz) {
    *mhz = kind == 2 ? 2619 : from_env("FAKE_SM_MHZ", 1980); return 0;
}
int nvmlDeviceGetApplicationsClock(device d, unsigned kind, unsigned *mhz) { return 3; }
int nvmlDeviceGetEnforcedPowerLimit(device d, unsigned *mw) { *mw = from_env("FAKE_LIMIT_MW", 700000); return 0; }
int nvmlDeviceGetPowerUsage(device d, unsigned *mw) { *mw = 123456; return 0; }
int nvmlDeviceGetTemperature(device d, unsigned sensor, unsigned *c) { *c = 41; return 0; }
int nvmlDeviceGetCurrentClocksThrottleReasons(device d, unsigned long long *reasons) { *reasons = 0x1 | 0x4; return 0; }
int nvmlDeviceGetPersistenceMode(device d, unsigned *mode) { *mode = 1; return 0; }
"#;

fn build_fake_nvml(dir: &Path) -> PathBuf {
    let source = dir.join("nvml.c");
    std::fs::write(&source, FAKE_NVML).unwrap();
    let library = dir.join("libnvidia-ml.so.1");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let built = Command::new(&compiler)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("{compiler}: {e}"));
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    library
}

fn run(out: &Path, id: &str, env: &[(&str, &str)]) -> serde_yaml::Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    command
        .args([
            "run",
            "detection-postprocess",
            "--no-report",
            "--run-id",
            id,
        ])
        .arg("--output-dir")
        .arg(out)
        .env("PROFILING_STORE", "off")
        .env_remove("PROFILING_NVML_LIBRARY");
    for (key, value) in env {
        command.env(key, value);
    }
    let ran = command.output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let manifest = out.join(format!("detection-postprocess/runs/{id}/manifest.yaml"));
    serde_yaml::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap()
}

#[test]
fn each_gpus_state_is_in_the_manifest_and_compare_tells_other_clocks_apart() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_fake_nvml(dir.path());
    let library = library.to_str().unwrap();
    let out = dir.path().join("runs");
    let fast = run(&out, "fast", &[("PROFILING_NVML_LIBRARY", library)]);
    let gpus = &fast["timings"]["machine"]["gpus"];
    for end in ["start", "end"] {
        let gpu = &gpus[end][0];
        assert_eq!(gpu["name"], "Stand-in H100", "{gpus:?}");
        assert_eq!(gpu["uuid"], "GPU-0000-stand-in");
        assert_eq!(gpu["index"], 0);
        assert_eq!(gpu["sm_clock_mhz"], 1980);
        assert_eq!(gpu["graphics_clock_mhz"], 1980);
        assert_eq!(gpu["memory_clock_mhz"], 2619);
        assert_eq!(gpu["power_limit_mw"], 700_000);
        assert_eq!(gpu["power_draw_mw"], 123_456);
        assert_eq!(gpu["temperature_c"], 41);
        assert_eq!(gpu["persistence_mode"], true);
        assert_eq!(
            gpu["throttle_reasons"],
            serde_yaml::to_value(["gpu_idle", "sw_power_cap"]).unwrap()
        );
        // Not supported: absent, not zero.
        assert!(
            gpu.get("application_graphics_clock_mhz").is_none(),
            "{gpu:?}"
        );
    }
    assert!(gpus.get("absent").is_none());

    let slow = run(
        &out,
        "slow",
        &[
            ("PROFILING_NVML_LIBRARY", library),
            ("FAKE_SM_MHZ", "1410"),
            ("FAKE_LIMIT_MW", "400000"),
        ],
    );
    assert_eq!(
        slow["timings"]["machine"]["gpus"]["end"][0]["sm_clock_mhz"],
        1410
    );
    let compared = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args([
            "compare",
            "detection-postprocess@fast",
            "detection-postprocess@slow",
        ])
        .arg("--output-dir")
        .arg(&out)
        .env("PROFILING_STORE", "off")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&compared.stdout),
        String::from_utf8_lossy(&compared.stderr)
    );
    for difference in [
        "warning: the runs' GPUs differ: GPU 0 (Stand-in H100): SM clock 1980 MHz (base) vs 1410 MHz (candidate)",
        "warning: the runs' GPUs differ: GPU 0 (Stand-in H100): power limit 700 W (base) vs 400 W (candidate)",
    ] {
        assert!(said.contains(difference), "{said}");
    }
    assert!(
        said.contains(
            "Stand-in H100, SM 1980 MHz, limit 700 W, 41 °C, held by gpu_idle+sw_power_cap"
        ),
        "{said}"
    );

    // NVML that will not start, and none at all: recorded as absent, why.
    let failing = run(
        &out,
        "failing",
        &[
            ("PROFILING_NVML_LIBRARY", library),
            ("FAKE_NVML_FAILS", "1"),
        ],
    );
    assert_eq!(
        failing["timings"]["machine"]["gpus"]["absent"],
        "NVML would not start: Uninitialized"
    );
    let missing = dir.path().join("nowhere/libnvidia-ml.so.1");
    let none = run(
        &out,
        "none",
        &[("PROFILING_NVML_LIBRARY", missing.to_str().unwrap())],
    );
    let absent = none["timings"]["machine"]["gpus"]["absent"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        absent.starts_with(&format!(
            "PROFILING_NVML_LIBRARY={} cannot be opened: ",
            missing.display()
        )),
        "{absent}"
    );
    if !Path::new("/proc/driver/nvidia/version").exists() {
        let driverless = run(&out, "driverless", &[]);
        let absent = driverless["timings"]["machine"]["gpus"]["absent"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            absent.starts_with("no NVIDIA driver's NVML here (libnvidia-ml.so.1)"),
            "{absent}"
        );
    }
}
