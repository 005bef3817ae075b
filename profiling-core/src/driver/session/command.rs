//! The profiling command that repeats a planned run with every setting
//! spelled out: what `--nsys` runs and `--print-nsys-command` prints.

use std::path::Path;

use serde_yaml::Value;

use super::{absolute, Planned};

/// The profiling command that repeats `planned` with every setting spelled
/// out, as lines of words (program and target first, then one option per
/// line).
pub fn explicit_command(planned: &Planned, program: &Path) -> Vec<Vec<String>> {
    let config = &planned.config;
    let mut lines = vec![vec![
        program.to_string_lossy().into_owned(),
        "run".to_owned(),
        config.target.name.clone(),
    ]];
    // A value that starts with `-` (a capture range or run id can) is
    // joined to its option, so that it can never be read as one.
    let mut option = |name: &str, value: String| {
        lines.push(if value.starts_with('-') {
            vec![format!("{name}={value}")]
        } else {
            vec![name.to_owned(), value]
        })
    };
    if let Some(path) = &planned.config_path {
        option("--config", absolute(path).to_string_lossy().into_owned());
    }
    option("--data-source", config.data_source.name.clone());
    if config.data_source.name == crate::data::directory_source() {
        if let Some(dir) = config
            .data_source
            .parameters
            .get("directory")
            .and_then(Value::as_str)
        {
            option(
                "--directory",
                absolute(Path::new(dir)).to_string_lossy().into_owned(),
            );
        }
    }
    option("--device", config.device.to_string());
    option("--warmup", config.warmup.to_string());
    match config.measurement_time_ns {
        Some(nanos) => option("--measurement-time", format!("{nanos}ns")),
        None => option("--iterations", config.iterations.to_string()),
    }
    if config.batch_size != 1 {
        option("--batch-size", config.batch_size.to_string());
    }
    option("--capture-range", config.capture_range.clone());
    option("--record-loading", config.record_loading.to_string());
    if config.gpu_timing != crate::driver::config::GpuTiming::Auto {
        option("--gpu-timing", config.gpu_timing.to_string());
    }
    if config.memory.is_on() {
        option("--memory", config.memory.to_string());
    }
    if let Some(seed) = config.seed {
        option("--seed", seed.to_string());
    }
    if let Some(dir) = &config.output_dir {
        option("--output-dir", absolute(dir).to_string_lossy().into_owned());
    }
    option("--run-id", planned.run_id.clone());
    if config.data_source.cache_enabled() {
        lines.push(vec!["--cache".to_owned()]);
    } else if crate::data::takes_cache(&config.data_source.name) && planned.config_path.is_some() {
        // The config may ask for the cache that `--no-cache` turned off.
        lines.push(vec!["--no-cache".to_owned()]);
    }
    if planned.force {
        lines.push(vec!["--force".to_owned()]);
    }
    lines
}
