//! Comparing runs: did a change make a snippet faster, where, and is the
//! difference real or noise?
//!
//! For the pass, the call and every range (inclusive, and self time where
//! a range holds others) a [`Row`] gives both medians, their ratio
//! (candidate / base) with a bootstrap interval, a Mann-Whitney p-value and
//! a [`Verdict`]. Before the rows, the [`Difference`]s between the two
//! manifests that change what a time means. `docs/COMPARING.md` explains
//! the method.

pub mod gates;
pub mod memory;
pub mod paired;
pub mod runs;
pub mod sequential;
pub mod statistics;

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use profiling_core::driver::run_samples::Series;
use runs::{LoadedRun, RunStatus};
use statistics::{
    block_ratio_interval, lower_median, mann_whitney, median_ratio_interval, BootstrapOptions,
};

/// The noise threshold when none is given: changes of the median within
/// 2 % are noise on a shared machine.
pub const DEFAULT_NOISE: f64 = 0.02;
/// The significance level when none is given.
pub const DEFAULT_SIGNIFICANCE: f64 = 0.05;
/// Fewer samples than this on either side give no verdict but `unclear`.
pub const MIN_SAMPLES: usize = 5;

/// How a comparison decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// A ratio within `1 ± noise` is no change.
    pub noise: f64,
    /// A change is significant when the U test's p-value is below this.
    pub significance: f64,
    pub bootstrap: BootstrapOptions,
    /// A range's `slower` counts as a regression only when its change
    /// moves the pass by at least this fraction of it; `None`: the noise
    /// threshold. The pass and the call always count.
    pub gate_share: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            noise: DEFAULT_NOISE,
            significance: DEFAULT_SIGNIFICANCE,
            bootstrap: BootstrapOptions::default(),
            gate_share: None,
        }
    }
}

impl Options {
    /// Checks the options' ranges; the message names the option.
    pub fn check(&self) -> Result<(), String> {
        if !(self.noise >= 0.0 && self.noise < 1.0) {
            return Err(format!(
                "--noise-threshold {}: must be at least 0 and below 1 (0.02 is 2 %)",
                self.noise
            ));
        }
        if !(self.significance > 0.0 && self.significance < 1.0) {
            return Err(format!(
                "--significance {}: must be between 0 and 1 (0.05 is the usual level)",
                self.significance
            ));
        }
        if let Some(share) = self.gate_share {
            if !(0.0..1.0).contains(&share) {
                return Err(format!(
                    "--gate-share {share}: must be at least 0 and below 1 (0.02 is 2 % of a pass)"
                ));
            }
        }
        if self.bootstrap.resamples < 100 {
            return Err(format!(
                "--resamples {}: at least 100 are needed for a 95 % interval",
                self.bootstrap.resamples
            ));
        }
        if self.bootstrap.resamples > statistics::MAX_RESAMPLES {
            return Err(format!(
                "--resamples {}: at most {} (each row keeps one ratio of 8 bytes a resample; {} is the usual count)",
                self.bootstrap.resamples,
                statistics::MAX_RESAMPLES,
                statistics::DEFAULT_RESAMPLES
            ));
        }
        Ok(())
    }
}

/// What a row's change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Significantly faster, by more than the noise threshold.
    Faster,
    /// Significantly slower, by more than the noise threshold.
    Slower,
    /// The whole interval lies within `1 ± noise`.
    #[serde(rename = "no change")]
    NoChange,
    /// None of these: too few samples, or a difference that is not clearly
    /// real or not clearly beyond the threshold.
    Unclear,
    /// Only the candidate has this range.
    Added,
    /// Only the base has this range.
    Removed,
}

impl Verdict {
    /// The word printed for it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no change",
            Verdict::Unclear => "unclear",
            Verdict::Added => "added",
            Verdict::Removed => "removed",
        }
    }
}

/// What a row times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum Subject {
    Pass,
    Call,
    /// A range from opening to closing.
    Range(String),
    /// A range's own time, without the recorded ranges inside it.
    RangeSelf(String),
}

impl Subject {
    /// `pass`, `call`, `NAME` or `NAME (self)`.
    pub fn label(&self) -> String {
        match self {
            Subject::Pass => "pass".to_owned(),
            Subject::Call => "call".to_owned(),
            Subject::Range(name) => name.clone(),
            Subject::RangeSelf(name) => format!("{name} (self)"),
        }
    }
}

/// One side of a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub median_ns: u64,
    pub samples: u64,
    /// How often it happens in a measured pass, on average.
    pub per_pass: f64,
}

/// One compared duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    #[serde(flatten)]
    pub subject: Subject,
    pub base: Option<Side>,
    pub candidate: Option<Side>,
    /// candidate median / base median.
    pub ratio: Option<f64>,
    /// The bootstrap interval of the ratio, at the options' confidence.
    pub interval: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    /// How much the change moves a pass, in nanoseconds: the candidate's
    /// median times how often it happens in a pass, less the base's.
    pub pass_change_ns: i64,
    /// `pass_change_ns` as a fraction of the base's median pass.
    pub pass_share: Option<f64>,
    /// Why the verdict is `unclear` when it is for a reason of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Row {
    /// The row of `subject` with its two sides, how much its change moves
    /// a pass (of `base_pass` ns), and no verdict yet (`unclear`).
    pub(crate) fn unjudged(
        subject: Subject,
        base: Option<Side>,
        candidate: Option<Side>,
        base_pass: Option<u64>,
    ) -> Row {
        let moved = |side: Option<&Side>| side.map_or(0.0, |s| s.median_ns as f64 * s.per_pass);
        let pass_change = moved(candidate.as_ref()) - moved(base.as_ref());
        Row {
            subject,
            base,
            candidate,
            ratio: None,
            interval: None,
            p_value: None,
            verdict: Verdict::Unclear,
            pass_change_ns: pass_change.round() as i64,
            pass_share: base_pass
                .filter(|&median| median > 0)
                .map(|median| pass_change / median as f64),
            note: None,
        }
    }
}

/// A difference between the two manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// The manifest key, dotted (`data_source.description.count`).
    pub key: String,
    pub base: String,
    pub candidate: String,
}

/// One side of a comparison, as printed above its table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub label: String,
    pub profile: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    pub status: String,
    pub completed_passes: u64,
    pub manifest: std::path::PathBuf,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// Why `git_commit` is null, as the manifest says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_note: Option<String>,
    /// What the machine was doing during the run's capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<profiling_core::driver::manifest::MachineState>,
}

/// A base and a candidate, compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub base: RunInfo,
    pub candidate: RunInfo,
    /// What differs between the manifests and changes what a time means.
    pub differences: Vec<Difference>,
    /// Interrupted runs, histogram-backed samples and the like.
    pub warnings: Vec<String>,
    /// The pass, the call, then the ranges by how much of a pass their
    /// change moves, largest first.
    pub rows: Vec<Row>,
    /// How a paired run's blocks were paired (`profile-cli ab`); `None`
    /// for separate runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<paired::Pairing>,
    /// Allocations, bytes and peak per pass, where both runs had `memory:
    /// on`: exact where every pass agrees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<memory::MemoryRow>,
}

impl Comparison {
    /// How the ratio, its interval and p were found, in one sentence for
    /// the table's foot and the page.
    pub fn method(&self, options: &Options) -> String {
        // 95, or 99.375 at a look of `ab --until-decided`.
        let confidence = format!("{:.3}", options.bootstrap.confidence * 100.0);
        let confidence = confidence.trim_end_matches('0').trim_end_matches('.');
        let threshold = format!(
            "noise threshold {} %, significance {}",
            options.noise * 100.0,
            options.significance
        );
        match &self.pairing {
            Some(pairing) => format!(
                "paired: {} block pairs of {} passes a side, {}; ratio = geometric mean of the pairs' candidate / base medians; {confidence} % interval from {} bootstrap resamples of the pairs; p from the Wilcoxon signed-rank test of the pairs; {threshold}",
                pairing.pairs,
                pairing.passes_per_block,
                pairing.where_run(),
                options.bootstrap.resamples
            ),
            None => format!(
                "ratio = candidate / base median; {confidence} % interval from {} bootstrap resamples of the samples and of each run's {} blocks in order, the wider; p from the Mann-Whitney U test; {threshold}",
                options.bootstrap.resamples,
                statistics::BLOCKS
            ),
        }
    }

    /// True when a row that counts is slower beyond the noise threshold:
    /// the pass or the call, or a range whose change moves the pass by at
    /// least [`Options::gate_share`] of it. A range of a few hundred
    /// nanoseconds that moved with code layout does not fail a gate alone.
    /// With both runs' memory attributed, more allocations per pass than
    /// the base regress too.
    pub fn regressed(&self, options: &Options) -> bool {
        self.gating_rows(options).next().is_some() || self.memory.iter().any(|r| r.regressed())
    }

    /// The rows that make [`Comparison::regressed`] true.
    pub fn gating_rows<'a>(&'a self, options: &Options) -> impl Iterator<Item = &'a Row> + 'a {
        let share = options.gate_share.unwrap_or(options.noise);
        self.rows.iter().filter(move |row| {
            row.verdict == Verdict::Slower
                && match row.subject {
                    Subject::Pass | Subject::Call => true,
                    _ => row.pass_share.is_some_and(|s| s >= share),
                }
        })
    }
}

/// The layout version of [`ComparisonDocument`]: what `compare --json`
/// prints and `run --baseline --json` holds under `comparison`.
pub const COMPARISON_FORMAT_VERSION: u32 = 1;

/// The options a comparison decided with, as its document records them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DocumentOptions {
    pub noise_threshold: f64,
    pub significance: f64,
    pub confidence: f64,
    pub resamples: u32,
    pub bootstrap_seed: u64,
    /// [`Options::gate_share`], as it applied.
    #[serde(default)]
    pub gate_share: f64,
}

/// Comparisons as one document: for machines, read back through these
/// types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonDocument {
    /// [`COMPARISON_FORMAT_VERSION`].
    pub format_version: u32,
    pub options: DocumentOptions,
    /// True when some comparison [`Comparison::regressed`].
    pub regressed: bool,
    pub comparisons: Vec<Comparison>,
}

impl ComparisonDocument {
    /// The document of `comparisons` decided with `options`.
    pub fn new(comparisons: &[Comparison], options: &Options) -> ComparisonDocument {
        ComparisonDocument {
            format_version: COMPARISON_FORMAT_VERSION,
            options: DocumentOptions {
                noise_threshold: options.noise,
                significance: options.significance,
                confidence: options.bootstrap.confidence,
                resamples: options.bootstrap.resamples,
                bootstrap_seed: options.bootstrap.seed,
                gate_share: options.gate_share.unwrap_or(options.noise),
            },
            regressed: comparisons.iter().any(|c| c.regressed(options)),
            comparisons: comparisons.to_vec(),
        }
    }
}

/// Why two runs are not compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{0} and {1} are the same run")]
    SameRun(String, String),
    #[error("{base} runs target `{base_target}` and {candidate} runs `{candidate_target}`: comparing different targets compares different code; give --allow-different-targets to compare them anyway")]
    DifferentTargets {
        base: String,
        candidate: String,
        base_target: String,
        candidate_target: String,
    },
}

/// The manifest keys whose differences change what a time means, in the
/// order they are listed. Each is compared leaf by leaf.
const COMPARED_KEYS: &[&str] = &[
    "target",
    "data_source",
    "record_ids",
    "workload",
    "capture_range",
    "device",
    "build_profile",
    "backend",
    "host.cpu_model",
    "host.cores",
    "cuda",
    // Whether device events were recorded (their records add to host times).
    "timings.gpu.stream",
    "profile_cli_version",
];

/// Compares `candidate` with `base`.
pub fn compare(
    base: &LoadedRun,
    candidate: &LoadedRun,
    options: &Options,
    allow_different_targets: bool,
) -> Result<Comparison, CompareError> {
    let (base_run, candidate_run) = (base, candidate);
    if same_file(&base.manifest_path, &candidate.manifest_path) {
        return Err(CompareError::SameRun(base.label(), candidate.label()));
    }
    let target = |run: &LoadedRun| {
        lookup(&run.manifest, "target.name")
            .map(one_line)
            .unwrap_or_default()
    };
    if target(base) != target(candidate) && !allow_different_targets {
        return Err(CompareError::DifferentTargets {
            base: base.label(),
            candidate: candidate.label(),
            base_target: target(base),
            candidate_target: target(candidate),
        });
    }
    let mut warnings = Vec::new();
    for run in [base, candidate] {
        if run.status == RunStatus::Interrupted {
            warnings.push(format!(
                "{} was interrupted: it holds {} of {} measured passes",
                run.label(),
                run.completed_iterations,
                run.iterations
            ));
        }
        if run.samples.is_sketched() {
            warnings.push(format!(
                "{} kept some samples only as a histogram (a long run): those count at their bucket's middle, within {:.1} %",
                run.label(),
                run.samples.histogram_error() * 100.0
            ));
        }
    }
    let (base, candidate) = (run_info(base), run_info(candidate));
    warnings.extend(gpu_warnings(&base, &candidate));
    let mut rows = rows_of(base_run, candidate_run, options);
    explained_by_the_machine(&base, &candidate, &mut rows);
    let memory_of = |run: &LoadedRun| {
        run.samples
            .memory
            .as_ref()
            .map(memory::PassMemory::of_series)
    };
    let (base_memory, candidate_memory) = (memory_of(base_run), memory_of(candidate_run));
    if let Some(warning) = memory::one_side_only(
        &base.label,
        base_memory.is_some(),
        &candidate.label,
        candidate_memory.is_some(),
    ) {
        warnings.push(warning);
    }
    Ok(Comparison {
        base,
        candidate,
        differences: differences(&base_run.manifest, &candidate_run.manifest),
        warnings,
        rows,
        pairing: None,
        memory: memory::memory_rows(base_memory.as_ref(), candidate_memory.as_ref()),
    })
}

/// Rows judged `faster` or `slower` by no more than the two runs' states
/// differ become `unclear`, saying why: where one run's measuring thread
/// was off the CPU (preempted, with more involuntary switches) for a share
/// of its passes that the other's was not, a change of that size is what
/// the machine did, not the code.
/// A warning for each difference between the two runs' GPUs that their
/// timings depend on (clocks, power limits: [`GpuStates::differences`]).
///
/// [`GpuStates::differences`]: profiling_core::driver::gpu_state::GpuStates::differences
pub(crate) fn gpu_warnings(base: &RunInfo, candidate: &RunInfo) -> Vec<String> {
    fn gpus(run: &RunInfo) -> Option<&profiling_core::driver::gpu_state::GpuStates> {
        run.machine.as_ref()?.gpus.as_ref()
    }
    let (Some(b), Some(c)) = (gpus(base), gpus(candidate)) else {
        return Vec::new();
    };
    profiling_core::driver::gpu_state::GpuStates::differences(b, c)
        .into_iter()
        .map(|difference| {
            format!("the runs' GPUs differ: {difference}; a GPU's times follow its clocks and power limit")
        })
        .collect()
}

fn explained_by_the_machine(base: &RunInfo, candidate: &RunInfo, rows: &mut [Row]) {
    let (Some(b), Some(c)) = (&base.machine, &candidate.machine) else {
        return;
    };
    explained_by_the_canaries(b, c, rows);
    let (Some(off_b), Some(off_c)) = (b.off_cpu, c.off_cpu) else {
        return;
    };
    let gap = (off_b - off_c).abs();
    // The run more off the CPU was also preempted more.
    let preempted = match (b.involuntary_switches, c.involuntary_switches) {
        (Some(sb), Some(sc)) => (off_b > off_c) == (sb > sc) && sb != sc,
        _ => true,
    };
    if !preempted || gap < 0.01 {
        return;
    }
    let why = format!(
        "the base's measuring thread was off the CPU {:.1} % of its passes and the candidate's {:.1} %",
        off_b * 100.0,
        off_c * 100.0
    );
    unclear_within(rows, gap, &why);
}

/// Rows `faster` or `slower` by no more than `gap` become `unclear`, their
/// note saying `why` and that their change is within what it explains.
fn unclear_within(rows: &mut [Row], gap: f64, why: &str) {
    for row in rows.iter_mut() {
        let (Some(ratio), Verdict::Faster | Verdict::Slower) = (row.ratio, row.verdict) else {
            continue;
        };
        if (ratio - 1.0).abs() <= gap {
            row.verdict = Verdict::Unclear;
            row.note = Some(format!(
                "{why}: a change of {:+.1} % is within what that explains",
                (ratio - 1.0) * 100.0
            ));
        }
    }
}

/// The least shift between the runs' canaries that makes a row that
/// changed by no more `unclear`.
pub const CANARY_GAP: f64 = 0.02;

/// Rows judged `faster` or `slower` by no more than the machine's speed
/// shifted between the runs become `unclear`, saying why. The canaries (a
/// memory-bound and a compute-bound kernel timed before and after each
/// capture) of the candidate's run against the base's: a kernel counts
/// when its shift (between the runs' means) is at least [`CANARY_GAP`]
/// and larger than it moved within either run (before against after),
/// which is the machine's noise rather than a change of state; the larger
/// counting shift is the gap. Memory contention slows a thread that stays
/// on its CPU, which the time off the CPU does not show.
fn explained_by_the_canaries(
    b: &profiling_core::driver::contention::MachineState,
    c: &profiling_core::driver::contention::MachineState,
    rows: &mut [Row],
) {
    let (Some(base), Some(candidate)) = (&b.canary, &c.canary) else {
        return;
    };
    let kernel = |of: fn(&profiling_core::driver::canary::Canary) -> u64| -> Option<f64> {
        let mean = |c: &profiling_core::driver::canary::Canaries| {
            (of(&c.before) as f64 + of(&c.after) as f64) / 2.0
        };
        let within = |c: &profiling_core::driver::canary::Canaries| {
            (of(&c.after) as f64 - of(&c.before) as f64).abs() / mean(c)
        };
        if !(mean(base) > 0.0 && mean(candidate) > 0.0) {
            return None;
        }
        let shift = mean(candidate) / mean(base) - 1.0;
        (shift.abs() >= CANARY_GAP && shift.abs() > within(base).max(within(candidate)))
            .then_some(shift)
    };
    let (memory, compute) = (kernel(|c| c.memory_ns), kernel(|c| c.compute_ns));
    let gap = memory
        .unwrap_or(0.0)
        .abs()
        .max(compute.unwrap_or(0.0).abs());
    if gap == 0.0 {
        return;
    }
    let said = |shift: Option<f64>, kind: &str| {
        shift.map(|shift| format!("{kind} {:+.1} %", shift * 100.0))
    };
    let shifts: Vec<String> = [said(memory, "memory-bound"), said(compute, "compute-bound")]
        .into_iter()
        .flatten()
        .collect();
    let why = format!(
        "the machine-speed canaries shifted between the runs ({}, the candidate's run against the base's)",
        shifts.join(", ")
    );
    unclear_within(rows, gap, &why);
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

pub(crate) fn run_info(run: &LoadedRun) -> RunInfo {
    RunInfo {
        label: run.label(),
        profile: run.profile.clone(),
        run_id: run.run_id.clone(),
        baseline: run.baseline.clone(),
        status: match run.status {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
        .to_owned(),
        completed_passes: run.completed_iterations,
        manifest: run.manifest_path.clone(),
        git_commit: lookup(&run.manifest, "git_commit")
            .and_then(Value::as_str)
            .map(str::to_owned),
        git_dirty: lookup(&run.manifest, "git_dirty").and_then(Value::as_bool),
        git_note: lookup(&run.manifest, "git_note")
            .and_then(Value::as_str)
            .map(str::to_owned),
        machine: run.typed.timings.machine.clone(),
    }
}

/// The value at a dotted key.
fn lookup<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.')
        .try_fold(value, |value, part| value.get(part))
}

/// A value on one line: `[64, 64, 3]`, `count: 1, shape: [64, 64]`; an
/// empty mapping is `none`.
pub fn one_line(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => format!(
            "[{}]",
            items.iter().map(one_line).collect::<Vec<_>>().join(", ")
        ),
        Value::Mapping(map) if map.is_empty() => "none".to_owned(),
        Value::Mapping(map) => map
            .iter()
            .map(|(k, v)| format!("{}: {}", one_line(k), one_line(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Tagged(tagged) => one_line(&tagged.value),
    }
}

/// The differences between two manifests under [`COMPARED_KEYS`], leaf by
/// leaf; a list of records is summarized by its length and first change.
pub fn differences(base: &Value, candidate: &Value) -> Vec<Difference> {
    let mut found = Vec::new();
    for key in COMPARED_KEYS {
        let (a, b) = (lookup(base, key), lookup(candidate, key));
        if *key == "record_ids" {
            if let Some(difference) = records_difference(a, b) {
                found.push(difference);
            }
            continue;
        }
        if *key == "workload" {
            // Runs made before `gpu_timing` and batches existed ran as
            // `auto` and one record per call do.
            let (a, b) = (with_workload_defaults(a), with_workload_defaults(b));
            diff_values(key, a.as_ref(), b.as_ref(), &mut found);
            continue;
        }
        diff_values(key, a, b, &mut found);
    }
    found
}

/// A manifest's `workload` with `gpu_timing: auto`, `batch_size: 1` and
/// `last_batch: keep` where it has none.
fn with_workload_defaults(workload: Option<&Value>) -> Option<Value> {
    let mut workload = workload?.clone();
    if let Value::Mapping(mapping) = &mut workload {
        let defaults = [
            ("gpu_timing", Value::from("auto")),
            ("batch_size", Value::from(1)),
            ("last_batch", Value::from("keep")),
        ];
        for (key, value) in defaults {
            let key = Value::from(key);
            if !mapping.contains_key(&key) {
                mapping.insert(key, value);
            }
        }
    }
    Some(workload)
}

fn diff_values(key: &str, a: Option<&Value>, b: Option<&Value>, found: &mut Vec<Difference>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Mapping(a)), Some(Value::Mapping(b))) => {
            let mut keys: Vec<String> = a.keys().chain(b.keys()).map(one_line).collect();
            keys.sort();
            keys.dedup();
            for child in keys {
                let child_key = Value::String(child.clone());
                diff_values(
                    &format!("{key}.{child}"),
                    a.get(&child_key),
                    b.get(&child_key),
                    found,
                );
            }
        }
        _ => found.push(Difference {
            key: key.to_owned(),
            base: a.map_or_else(|| "(absent)".to_owned(), one_line),
            candidate: b.map_or_else(|| "(absent)".to_owned(), one_line),
        }),
    }
}

fn records_difference(a: Option<&Value>, b: Option<&Value>) -> Option<Difference> {
    let ids = |value: Option<&Value>| -> Vec<String> {
        value
            .and_then(Value::as_sequence)
            .map(|s| s.iter().map(one_line).collect())
            .unwrap_or_default()
    };
    let (a, b) = (ids(a), ids(b));
    if a == b {
        return None;
    }
    let first = a.iter().zip(&b).position(|(x, y)| x != y);
    let describe = |ids: &[String], other: &[String]| match first {
        Some(index) => format!("{} records, #{} `{}`", ids.len(), index + 1, ids[index]),
        None if ids.len() > other.len() => {
            format!("{} records, then `{}`...", ids.len(), ids[other.len()])
        }
        None => format!("{} records", ids.len()),
    };
    Some(Difference {
        key: "record_ids".to_owned(),
        base: describe(&a, &b),
        candidate: describe(&b, &a),
    })
}

/// One series of each run, to compare.
struct Pair<'a> {
    subject: Subject,
    base: Option<&'a Series>,
    candidate: Option<&'a Series>,
}

fn rows_of(base: &LoadedRun, candidate: &LoadedRun, options: &Options) -> Vec<Row> {
    let (b, c) = (&base.samples, &candidate.samples);
    let mut pairs = vec![
        Pair {
            subject: Subject::Pass,
            base: Some(&b.passes),
            candidate: Some(&c.passes),
        },
        Pair {
            subject: Subject::Call,
            base: Some(&b.calls),
            candidate: Some(&c.calls),
        },
    ];
    let mut names: Vec<&str> = b
        .ranges
        .iter()
        .chain(&c.ranges)
        .map(|r| r.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let (in_base, in_candidate) = (
            b.ranges.iter().find(|r| r.name == name),
            c.ranges.iter().find(|r| r.name == name),
        );
        pairs.push(Pair {
            subject: Subject::Range(name.to_owned()),
            base: in_base.map(|r| &r.inclusive),
            candidate: in_candidate.map(|r| &r.inclusive),
        });
        // Self time is a row of its own where it is not the inclusive time:
        // where some recorded range ran inside this one.
        let nests = |range: Option<&profiling_core::driver::run_samples::RangeSeries>| {
            range.is_some_and(|r| r.exclusive.total != r.inclusive.total)
        };
        if nests(in_base) || nests(in_candidate) {
            pairs.push(Pair {
                subject: Subject::RangeSelf(name.to_owned()),
                base: in_base.map(|r| &r.exclusive),
                candidate: in_candidate.map(|r| &r.exclusive),
            });
        }
    }
    let base_passes = b.passes.count.max(1) as f64;
    let candidate_passes = c.passes.count.max(1) as f64;
    let base_pass_median = lower_median(&b.passes.sorted_values());
    let floor = clock_floor_ns(&base.manifest).max(clock_floor_ns(&candidate.manifest));
    let mut rows: Vec<Row> = pairs
        .into_iter()
        .map(|pair| {
            row(
                pair,
                (base_passes, candidate_passes),
                base_pass_median,
                floor,
                options,
            )
        })
        .collect();
    // The pass and the call first, as the whole; then the ranges by how
    // much of a pass their change moves.
    let order = |row: &Row| match row.subject {
        Subject::Pass => 0,
        Subject::Call => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        order(a)
            .cmp(&order(b))
            .then_with(|| {
                b.pass_change_ns
                    .unsigned_abs()
                    .cmp(&a.pass_change_ns.unsigned_abs())
            })
            .then_with(|| a.subject.label().cmp(&b.subject.label()))
    });
    rows
}

fn side(series: &Series, sorted: &[u64], passes: f64) -> Side {
    Side {
        median_ns: lower_median(sorted).unwrap_or(0),
        samples: series.count,
        per_pass: series.count as f64 / passes,
    }
}

/// The smallest change of a median a run's clock can tell: twice the
/// larger of its resolution and the cost of a reading (0 when the manifest
/// does not say).
fn clock_floor_ns(manifest: &Value) -> f64 {
    let timer = lookup(manifest, "timings.timer");
    let read = |key: &str| timer.and_then(|t| t.get(key)).and_then(Value::as_f64);
    2.0 * read("resolution_ns")
        .unwrap_or(0.0)
        .max(read("overhead_ns").unwrap_or(0.0))
}

fn row(
    pair: Pair<'_>,
    passes: (f64, f64),
    base_pass: Option<u64>,
    clock_floor_ns: f64,
    options: &Options,
) -> Row {
    let base_sorted = pair.base.map(Series::sorted_values);
    let candidate_sorted = pair.candidate.map(Series::sorted_values);
    let base = pair
        .base
        .zip(base_sorted.as_deref())
        .map(|(s, sorted)| side(s, sorted, passes.0));
    let candidate = pair
        .candidate
        .zip(candidate_sorted.as_deref())
        .map(|(s, sorted)| side(s, sorted, passes.1));
    let mut row = Row::unjudged(pair.subject, base, candidate, base_pass);
    let (Some(base_sorted), Some(candidate_sorted)) = (base_sorted, candidate_sorted) else {
        row.verdict = if row.base.is_some() {
            Verdict::Removed
        } else {
            Verdict::Added
        };
        return row;
    };
    if base_sorted.len() < MIN_SAMPLES || candidate_sorted.len() < MIN_SAMPLES {
        row.note = Some(format!(
            "too few samples for a verdict ({} and {}; {MIN_SAMPLES} are needed)",
            base_sorted.len(),
            candidate_sorted.len()
        ));
        if let (Some(b), Some(c)) = (lower_median(&base_sorted), lower_median(&candidate_sorted)) {
            row.ratio = (b > 0).then(|| c as f64 / b as f64);
        }
        return row;
    }
    let interval = median_ratio_interval(&base_sorted, &candidate_sorted, &options.bootstrap);
    let test = mann_whitney(&base_sorted, &candidate_sorted);
    row.p_value = test.map(|t| t.p_value);
    let Some(interval) = interval else {
        row.note = Some("the base's median is 0 ns: no ratio".to_owned());
        return row;
    };
    row.ratio = Some(interval.ratio);
    // Within each run the samples vary less than between its blocks when
    // the machine drifted: the interval holds both.
    let (low, high) = match (pair.base, pair.candidate) {
        (Some(b), Some(c)) => match block_ratio_interval(&b.kept, &c.kept, &options.bootstrap) {
            Some((block_low, block_high)) => {
                (interval.low.min(block_low), interval.high.max(block_high))
            }
            None => {
                row.note = Some(format!(
                    "too few samples in order for block intervals ({} and {}; {} are needed): the interval is widened by half",
                    b.kept.len(),
                    c.kept.len(),
                    2 * statistics::MIN_BLOCKS
                ));
                widened(interval.ratio, interval.low, interval.high)
            }
        },
        _ => (interval.low, interval.high),
    };
    row.interval = Some([low, high]);
    row.verdict = verdict(
        interval.ratio,
        low,
        high,
        row.p_value.unwrap_or(1.0),
        options,
    );
    let (b, c) = (
        lower_median(&base_sorted).unwrap_or(0),
        lower_median(&candidate_sorted).unwrap_or(0),
    );
    let moved = b.abs_diff(c) as f64;
    if matches!(row.verdict, Verdict::Faster | Verdict::Slower) && moved < clock_floor_ns {
        row.verdict = Verdict::Unclear;
        row.note = Some(format!(
            "the medians differ by {moved} ns: within what the clock can tell ({clock_floor_ns:.0} ns, twice its resolution or the cost of a reading)"
        ));
    }
    row
}

/// `low` and `high` half as far again from `ratio`, on a log scale.
fn widened(ratio: f64, low: f64, high: f64) -> (f64, f64) {
    if !(ratio > 0.0 && low > 0.0 && high.is_finite()) {
        return (low, high);
    }
    let (down, up) = ((ratio / low).ln(), (high / ratio).ln());
    (ratio / (1.5 * down).exp(), ratio * (1.5 * up).exp())
}

/// The verdict of a ratio with its interval and p-value: `no change` when
/// the whole interval is within `1 ± noise`; `slower` (`faster`) when the
/// U test finds a significant difference, the whole interval is above
/// (below) 1 and the ratio is beyond the threshold; else `unclear`.
pub fn verdict(ratio: f64, low: f64, high: f64, p_value: f64, options: &Options) -> Verdict {
    let noise = options.noise;
    let significant = p_value < options.significance;
    if low >= 1.0 - noise && high <= 1.0 + noise {
        Verdict::NoChange
    } else if significant && low > 1.0 && ratio > 1.0 + noise {
        Verdict::Slower
    } else if significant && high < 1.0 && ratio < 1.0 - noise {
        Verdict::Faster
    } else {
        Verdict::Unclear
    }
}

#[cfg(test)]
mod tests;
