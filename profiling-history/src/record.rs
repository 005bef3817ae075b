//! What the store keeps of one run, read from its directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use profiling_compare::runs::{LoadedRun, RunStatus};
use profiling_core::driver::manifest::Manifest;
use profiling_core::driver::run_samples::RunSamples;
use profiling_core::stats::DurationStats;
use serde::Serialize;

/// The machine a run ran on, as its manifest says: `fingerprint` tells
/// machines apart, a hash of everything else here (two machines of one
/// kind are two machines: each has noise of its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    pub fingerprint: String,
    pub host: String,
    pub os: String,
    pub cpu_model: String,
    pub cores: u64,
    /// The tensor backend and its versions: `none`, `libtorch 2.11.0`,
    /// with `onnxruntime 1.22.0`.
    pub backend: String,
    /// The GPUs the backend saw, by name, comma-separated.
    pub gpus: String,
    /// The kernel's release; empty where the manifest does not say.
    pub kernel: String,
    /// The CPU frequency governor the run saw (`performance`,
    /// `powersave`); empty where there is none to read.
    pub governor: String,
    /// The NVIDIA driver's version; empty without one.
    pub gpu_driver: String,
}

/// One range path's figures in one run (or, with `part` "pass", the
/// measured pass's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeRow {
    /// "pass" for the measured pass, "range" for a range path.
    pub part: &'static str,
    /// The recorded ranges it ran in, outermost first, then its name
    /// (`preprocess/resize`); "pass" for the pass.
    pub path: String,
    pub name: String,
    pub depth: u32,
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    /// None where the run did not record it (written before it was).
    pub p95_ns: Option<u64>,
    pub p99_ns: u64,
    pub mean_ns: u64,
    /// None where what was recorded has no minimum (a load's
    /// distributions keep percentiles, the mean and the maximum).
    pub min_ns: Option<u64>,
    pub max_ns: u64,
    /// The 95 % interval of the median (order statistics of the kept
    /// samples), where the samples say which range it is.
    pub low_ns: Option<u64>,
    pub high_ns: Option<u64>,
    /// With `memory: on`: the median bytes one range allocated, and the
    /// median of its peaks of live bytes.
    pub alloc_bytes: Option<u64>,
    pub peak_bytes: Option<u64>,
}

/// One run as the store keeps it.
#[derive(Debug, Clone)]
pub struct Record {
    /// What made it: `run`, `ab-base` and `ab-candidate` (a pair's
    /// sides), `sweep-point`, `load`.
    pub kind: &'static str,
    pub profile: String,
    pub run_id: String,
    /// Where in a pair or sweep the run was, when it was: `/base` or
    /// `/candidate` of a pair (both sides share its id and start), a
    /// sweep's point directory. Part of [`Record::identity`].
    pub place: String,
    /// `completed` or `interrupted` (a failed run measured nothing).
    pub status: &'static str,
    pub started_at: String,
    pub finished_at: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub machine: Machine,
    /// A hash of [`Record::config_description`].
    pub config: String,
    /// What the run measured, as canonical JSON: the target and its
    /// parameters, the data source, the device, the CUDA policy and the
    /// workload but for its warmup, iterations and seed (which change how
    /// much was measured, not what).
    pub config_description: String,
    pub iterations: u64,
    pub run_dir: PathBuf,
    pub ranges: Vec<RangeRow>,
    /// The manifest, as JSON.
    pub manifest: String,
    /// `samples.bin`, deflated.
    pub samples: Option<Vec<u8>>,
}

/// The codec of [`Record::samples`].
pub const SAMPLES_CODEC: &str = "deflate";

/// Why a run cannot be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Read(#[from] profiling_compare::runs::ReadRunError),
    #[error("{path}: {reason}")]
    Unusable { path: PathBuf, reason: String },
    /// A load that failed: nothing was measured.
    #[error("{path}: a failed load measured nothing")]
    FailedLoad { path: PathBuf },
}

impl Record {
    /// What `dir` holds: a load (its `load.yaml`, or the file) as
    /// [`Record::read_load`] reads it, else a run as [`Record::read`].
    pub fn read_any(dir: &Path) -> Result<Record, RecordError> {
        let load = profiling_core::driver::session::LOAD_MANIFEST;
        if dir.join(load).is_file() || dir.file_name().is_some_and(|n| n == load) {
            Record::read_load(dir)
        } else {
            Record::read(dir)
        }
    }

    /// The run in `dir` (or its manifest), read as `compare` reads it.
    pub fn read(dir: &Path) -> Result<Record, RecordError> {
        let run = profiling_compare::runs::load(dir)?;
        let samples = std::fs::read(run.dir.join("samples.bin")).ok();
        Record::of(&run, samples.as_deref())
    }

    /// `run`, with the bytes of its `samples.bin` when there are any.
    pub fn of(run: &LoadedRun, samples_file: Option<&[u8]>) -> Result<Record, RecordError> {
        let manifest = &run.typed;
        let unusable = |reason: String| RecordError::Unusable {
            path: run.manifest_path.clone(),
            reason,
        };
        let status = match run.status {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => return Err(unusable("a failed run measured nothing".to_owned())),
        };
        let (config, config_description) = config_of(manifest).map_err(unusable)?;
        let json = serde_json::to_string(&run.manifest)
            .map_err(|e| unusable(format!("cannot write the manifest as JSON: {e}")))?;
        let samples = samples_file.map(deflate);
        Ok(Record {
            kind: "run",
            profile: run.profile.clone(),
            run_id: run.run_id.clone(),
            place: place_of(manifest),
            status,
            started_at: manifest.started_at.clone(),
            finished_at: manifest.finished_at.clone(),
            git_commit: manifest.git_commit.clone(),
            git_dirty: manifest.git_dirty,
            machine: machine_of(manifest),
            config,
            config_description,
            iterations: u64::from(manifest.completed_iterations),
            run_dir: run.dir.clone(),
            ranges: ranges_of(manifest, &run.samples),
            manifest: json,
            samples,
        })
    }

    /// What Nsight Systems recorded of the run in `dir`, as `profile-cli
    /// analyze` wrote it beside the manifest (`analysis.yaml`): a record of
    /// kind `analyze` beside the run's own (place `/analyze`), its
    /// provenance the run's, a row of part `gpu` per range that launched
    /// GPU work, its figures those of the range's GPU busy time (the union
    /// of what it launched on the GPU). `Ok(None)` when no range launched
    /// any.
    pub fn read_analysis(dir: &Path) -> Result<Option<Record>, RecordError> {
        let path = dir.join("analysis.yaml");
        let unusable = |reason: String| RecordError::Unusable {
            path: path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| unusable(e.to_string()))?;
        let analysis: serde_yaml::Value =
            serde_yaml::from_str(&text).map_err(|e| unusable(e.to_string()))?;
        let mut record = Record::read(dir)?;
        let number = |value: &serde_yaml::Value, key: &str| -> Result<u64, RecordError> {
            value[key]
                .as_u64()
                .ok_or_else(|| unusable(format!("`{key}` is not a count of nanoseconds")))
        };
        let mut ranges = Vec::new();
        for range in analysis["ranges"].as_sequence().into_iter().flatten() {
            let busy = &range["gpu_busy"];
            if busy.is_null() {
                continue;
            }
            let text = |key: &str| -> Result<String, RecordError> {
                range[key]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| unusable(format!("a range without its `{key}`")))
            };
            ranges.push(RangeRow {
                part: "gpu",
                path: text("path")?,
                name: format!("{} (GPU busy)", text("name")?),
                depth: u32::try_from(number(range, "depth")?).unwrap_or(u32::MAX),
                count: number(busy, "count")?,
                p50_ns: number(busy, "p50_ns")?,
                p90_ns: number(busy, "p90_ns")?,
                p95_ns: busy.get("p95_ns").and_then(serde_yaml::Value::as_u64),
                p99_ns: number(busy, "p99_ns")?,
                mean_ns: number(busy, "mean_ns")?,
                min_ns: Some(number(busy, "min_ns")?),
                max_ns: number(busy, "max_ns")?,
                low_ns: None,
                high_ns: None,
                alloc_bytes: None,
                peak_bytes: None,
            });
        }
        if ranges.is_empty() {
            return Ok(None);
        }
        record.kind = "analyze";
        record.place = format!("{}/analyze", record.place);
        record.ranges = ranges;
        record.samples = None;
        Ok(Some(record))
    }

    /// The load in `dir` (its `load.yaml`, or the file itself): the step
    /// its tables detail (the peak's after a search, else the only one) as
    /// rows of part `load` (`query latency`, `query queueing`, `query
    /// service`: their p50,
    /// p90, p99, mean and maximum, the p50's interval) and part `range`
    /// (each range under load). Its config is what it measured: the
    /// target, its parameters, the data and the load asked for.
    pub fn read_load(dir: &Path) -> Result<Record, RecordError> {
        use profiling_core::driver::session::{read_load_manifest, LoadStatus, LOAD_MANIFEST};
        let path = if dir.is_dir() {
            dir.join(LOAD_MANIFEST)
        } else {
            dir.to_path_buf()
        };
        let run_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let unusable = |reason: String| RecordError::Unusable {
            path: path.clone(),
            reason,
        };
        let manifest = read_load_manifest(&path).map_err(|e| RecordError::Unusable {
            path: path.clone(),
            reason: e,
        })?;
        let status = match manifest.status {
            LoadStatus::Completed => "completed",
            LoadStatus::Interrupted => "interrupted",
            LoadStatus::Failed => return Err(RecordError::FailedLoad { path }),
        };
        let description = serde_json::json!({
            "kind": "load",
            "target": manifest.target,
            "parameters": manifest.target_parameters,
            "data_source": manifest.data_source,
            "data": manifest.data_description,
            "device": manifest.device,
            "load": manifest.load.request,
        });
        let description = serde_json::to_string(&description)
            .map_err(|e| unusable(format!("cannot describe its config: {e}")))?;
        let json = serde_json::to_string(&manifest)
            .map_err(|e| unusable(format!("cannot write the record as JSON: {e}")))?;
        let mut ranges = Vec::new();
        if let Some(step) = manifest.load.detailed_step() {
            for (name, distribution) in [
                ("query latency", &step.latency),
                ("query queueing", &step.queueing),
                ("query service", &step.service),
            ] {
                if let Some(d) = distribution {
                    ranges.push(load_row(name, d));
                }
            }
            for range in &step.ranges {
                ranges.push(RangeRow {
                    part: "range",
                    path: range.name.clone(),
                    name: range.name.clone(),
                    depth: 0,
                    count: range.count,
                    p50_ns: range.p50_ns,
                    p90_ns: range.p90_ns,
                    p95_ns: range.p95_ns,
                    p99_ns: range.p99_ns,
                    mean_ns: range.mean_ns,
                    min_ns: None,
                    max_ns: range.max_ns,
                    low_ns: None,
                    high_ns: None,
                    alloc_bytes: None,
                    peak_bytes: None,
                });
            }
        }
        Ok(Record {
            kind: "load",
            profile: manifest.profile_name.clone(),
            run_id: manifest.run_id.clone(),
            place: String::new(),
            status,
            started_at: manifest.started_at.clone(),
            finished_at: manifest.finished_at.clone(),
            git_commit: manifest.git_commit.clone(),
            git_dirty: manifest.git_dirty,
            machine: machine_from(&manifest.host, manifest.backend.as_ref(), None),
            config: fingerprint(&description),
            config_description: description,
            iterations: manifest.load.steps.iter().map(|s| s.queries).sum(),
            run_dir,
            ranges,
            manifest: json,
            samples: None,
        })
    }

    /// What makes a run one record: the same run read twice is one.
    pub fn identity(&self) -> String {
        format!(
            "{}/{}{}@{}",
            self.profile, self.run_id, self.place, self.started_at
        )
    }
}

/// A load's distribution as a row of part `load`.
fn load_row(name: &str, d: &profiling_core::driver::load::summary::Distribution) -> RangeRow {
    let at = |quantile: &str| d.percentiles.iter().find(|p| p.name == quantile);
    let value = |quantile: &str| at(quantile).map_or(d.max_ns, |p| p.value_ns);
    RangeRow {
        part: "load",
        path: name.to_owned(),
        name: name.to_owned(),
        depth: 0,
        count: d.count,
        p50_ns: value("p50"),
        p90_ns: value("p90"),
        p95_ns: at("p95").map(|p| p.value_ns),
        p99_ns: value("p99"),
        mean_ns: d.mean_ns,
        min_ns: None,
        max_ns: d.max_ns,
        low_ns: at("p50").and_then(|p| p.low_ns),
        high_ns: at("p50").and_then(|p| p.high_ns),
        alloc_bytes: None,
        peak_bytes: None,
    }
}

/// [`Record::place`] of the run `manifest` describes.
fn place_of(manifest: &Manifest) -> String {
    match (&manifest.pair, &manifest.sweep) {
        (Some(pair), _) => format!("/{}/{}", pair.id, pair.side),
        (None, Some(point)) => format!("/{}/{}", point.id, point.point),
        (None, None) => String::new(),
    }
}

/// `bytes` deflated as [`Record::samples`] keeps them.
pub fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(
        Vec::with_capacity(bytes.len() / 2),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    encoder.write_all(bytes).expect("deflate into memory");
    encoder.finish().expect("deflate into memory")
}

/// `bytes` deflated by [`Record::samples`], inflated.
pub fn inflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    let mut decoder = flate2::write::DeflateDecoder::new(&mut out);
    decoder.write_all(bytes)?;
    decoder.finish()?;
    Ok(out)
}

/// A 64-bit FNV-1a hash, as 16 hex digits: stable across builds and
/// platforms, which is all an identity of a config or machine needs.
pub fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn machine_of(manifest: &Manifest) -> Machine {
    let governor = manifest
        .timings
        .machine
        .as_ref()
        .and_then(|m| m.governor.clone());
    machine_from(&manifest.host, Some(&manifest.backend), governor)
}

/// The machine of a host, the backends it ran and the CPU governor it saw.
fn machine_from(
    host: &profiling_core::driver::provenance::HostInfo,
    backend_info: Option<&profiling_core::driver::provenance::BackendInfo>,
    governor: Option<String>,
) -> Machine {
    let none = profiling_core::driver::provenance::BackendInfo {
        name: "none".to_owned(),
        libtorch_version: None,
        cuda_available: false,
        gpus: Vec::new(),
        onnxruntime: None,
    };
    let backend_info = backend_info.unwrap_or(&none);
    let mut backend = backend_info.name.clone();
    if let Some(version) = &backend_info.libtorch_version {
        backend.push_str(&format!(" {version}"));
    }
    if let Some(ort) = &backend_info.onnxruntime {
        backend.push_str(&format!(", onnxruntime {ort}"));
    }
    let gpus = backend_info
        .gpus
        .iter()
        .map(|gpu| gpu.name.clone())
        .collect::<Vec<_>>()
        .join(", ");
    let kernel = host.kernel.clone().unwrap_or_default();
    let governor = governor.unwrap_or_default();
    let gpu_driver = host.gpu_driver.clone().unwrap_or_default();
    let mut identity = serde_json::json!({
        "host": host.name,
        "os": host.os,
        "cpu_model": host.cpu_model,
        "cores": host.cores,
        "backend": backend,
        "gpus": gpus,
    });
    // What older manifests do not record stays out of the identity, so
    // their machines keep the fingerprints they had.
    for (key, value) in [
        ("kernel", &kernel),
        ("governor", &governor),
        ("gpu_driver", &gpu_driver),
    ] {
        if !value.is_empty() {
            identity[key] = serde_json::Value::from(value.as_str());
        }
    }
    Machine {
        fingerprint: fingerprint(&identity.to_string()),
        host: host.name.clone(),
        os: host.os.clone(),
        cpu_model: host.cpu_model.clone(),
        cores: host.cores as u64,
        backend,
        gpus,
        kernel,
        governor,
        gpu_driver,
    }
}

/// The hash and canonical JSON of what a run measured.
fn config_of(manifest: &Manifest) -> Result<(String, String), String> {
    let mut workload =
        serde_json::to_value(&manifest.workload).map_err(|e| format!("workload: {e}"))?;
    if let Some(fields) = workload.as_object_mut() {
        for how_much in ["warmup", "iterations", "seed"] {
            fields.remove(how_much);
        }
    }
    let target = &manifest.target;
    let parameters =
        serde_json::to_value(&target.parameters).map_err(|e| format!("target.parameters: {e}"))?;
    // serde_json's maps are ordered by key: the text is canonical.
    let description = serde_json::json!({
        "target": target.name,
        "parameters": parameters,
        "profile_prepare": target.profile_prepare,
        "data_source": {
            "name": manifest.data_source.name,
            "description": serde_json::to_value(&manifest.data_source.description)
                .map_err(|e| format!("data_source: {e}"))?,
        },
        "device": manifest.device.to_string(),
        "cuda": serde_json::to_value(manifest.cuda).map_err(|e| format!("cuda: {e}"))?,
        "workload": workload,
    })
    .to_string();
    Ok((fingerprint(&description), description))
}

fn row(part: &'static str, path: &str, name: &str, depth: u32, stats: &DurationStats) -> RangeRow {
    RangeRow {
        part,
        path: path.to_owned(),
        name: name.to_owned(),
        depth,
        count: stats.count,
        p50_ns: stats.p50_ns,
        p90_ns: stats.p90_ns,
        p95_ns: stats.p95_ns,
        p99_ns: stats.p99_ns,
        mean_ns: stats.mean_ns,
        min_ns: Some(stats.min_ns),
        max_ns: stats.max_ns,
        low_ns: None,
        high_ns: None,
        alloc_bytes: None,
        peak_bytes: None,
    }
}

/// The pass, then every range path (or, in a manifest without a tree,
/// every range name), each with the interval of its median where the
/// samples hold its series.
fn ranges_of(manifest: &Manifest, samples: &RunSamples) -> Vec<RangeRow> {
    let timings = &manifest.timings;
    let mut rows = Vec::new();
    if let Some(passes) = &timings.iterations {
        let mut pass = row("pass", "pass", "pass", 0, passes);
        (pass.low_ns, pass.high_ns) = median_interval(&samples.passes.sorted_values());
        if let Some(memory) = &manifest_pass_memory(manifest) {
            pass.alloc_bytes = Some(memory.0);
            pass.peak_bytes = Some(memory.1);
        }
        rows.push(pass);
    }
    let names_at = |name: &str| {
        timings
            .range_tree
            .iter()
            .filter(|node| node.name == name)
            .count()
    };
    let series_of = |name: &str| samples.ranges.iter().find(|s| s.name == name);
    if timings.range_tree.is_empty() {
        for range in &timings.ranges {
            let mut r = row("range", &range.name, &range.name, 0, &range.inclusive);
            if let Some(series) = series_of(&range.name) {
                (r.low_ns, r.high_ns) = median_interval(&series.inclusive.sorted_values());
            }
            if let Some(memory) = &range.memory {
                r.alloc_bytes = Some(memory.per_range.allocated_bytes.median);
                r.peak_bytes = Some(memory.per_range.peak_bytes.median);
            }
            rows.push(r);
        }
        return rows;
    }
    for node in &timings.range_tree {
        let mut r = row("range", &node.path, &node.name, node.depth, &node.inclusive);
        // A name's samples are every range of the name: they are this
        // path's only where the name has no other path.
        if names_at(&node.name) == 1 {
            if let Some(series) = series_of(&node.name) {
                (r.low_ns, r.high_ns) = median_interval(&series.inclusive.sorted_values());
            }
        }
        if let Some(memory) = &node.memory {
            r.alloc_bytes = Some(memory.per_range.allocated_bytes.median);
            r.peak_bytes = Some(memory.per_range.peak_bytes.median);
        }
        rows.push(r);
    }
    rows
}

/// A pass's median allocated bytes and peak, with `memory: on`.
fn manifest_pass_memory(manifest: &Manifest) -> Option<(u64, u64)> {
    let per_pass = manifest.timings.memory.as_ref()?.per_pass.as_ref()?;
    Some((per_pass.allocated_bytes.median, per_pass.peak_bytes.median))
}

/// The distribution-free 95 % interval of the median of `sorted`, as
/// [`profiling_core::stats::median_interval`] gives it (from the binomial
/// distribution itself); none below 6 samples, too few for one.
pub fn median_interval(sorted: &[u64]) -> (Option<u64>, Option<u64>) {
    match profiling_core::stats::median_interval(sorted, 0.95) {
        Some((_, low, high)) if sorted.len() >= 6 => (Some(low), Some(high)),
        _ => (None, None),
    }
}
