//! The comparison's unit tests: verdicts, intervals and the rows of runs
//! built in memory.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use profiling_core::driver::run_samples::RunSamples;
use profiling_core::timing::SampleSet;

fn set(values: impl IntoIterator<Item = u64>) -> SampleSet {
    let values: Vec<u64> = values.into_iter().collect();
    let mut set = SampleSet::with_capacity(values.len());
    for value in values {
        set.push(value);
    }
    set
}

/// Around `center`, spread by a deterministic wobble of about ±1 %.
fn around(center: u64, count: u64) -> impl Iterator<Item = u64> {
    (0..count).map(move |i| center + (i * 7919 % 201) * center / 10_000 - center / 100)
}

const MANIFEST: &str = "
profile_name: p
run_id: RUN
status: completed
target: {name: spin, parameters: {micros: 100}}
data_source: {name: dummy, description: {count: 1}}
record_ids: [a, b]
workload: {warmup: 1, iterations: 50}
device: cpu
build_profile: release
backend: {name: none}
host: {name: here, cpu_model: X, cores: 2}
cuda: {synchronize_each_iteration: true}
git_commit: abc
git_dirty: false
";

/// A run whose passes take `pass` and hold `ranges` (name, inclusive,
/// exclusive), 50 passes of each.
fn run(run_id: &str, pass: u64, ranges: &[(&str, u64, u64)]) -> LoadedRun {
    let mut sets = BTreeMap::new();
    for &(name, inclusive, exclusive) in ranges {
        sets.insert(
            name.to_owned(),
            (set(around(inclusive, 50)), set(around(exclusive, 50))),
        );
    }
    let passes = set(around(pass, 50));
    LoadedRun {
        dir: PathBuf::from(format!("/runs/{run_id}")),
        manifest_path: PathBuf::from(format!("/runs/{run_id}/manifest.yaml")),
        manifest: serde_yaml::from_str(&MANIFEST.replace("RUN", run_id)).unwrap(),
        typed: profiling_core::driver::manifest::Manifest::sample(run_id),
        profile: "p".to_owned(),
        run_id: run_id.to_owned(),
        status: RunStatus::Completed,
        completed_iterations: 50,
        iterations: 50,
        baseline: None,
        samples: RunSamples::from_sets(&passes, &passes, &sets),
    }
}

fn options() -> Options {
    Options {
        bootstrap: BootstrapOptions {
            resamples: 2_000,
            ..BootstrapOptions::default()
        },
        ..Options::default()
    }
}

fn find<'a>(comparison: &'a Comparison, label: &str) -> &'a Row {
    comparison
        .rows
        .iter()
        .find(|r| r.subject.label() == label)
        .unwrap_or_else(|| panic!("no row {label}: {:#?}", comparison.rows))
}

#[test]
fn verdicts_follow_the_interval_the_threshold_and_the_test() {
    let o = Options::default();
    assert_eq!(verdict(1.0, 0.99, 1.01, 0.5, &o), Verdict::NoChange);
    assert_eq!(verdict(1.01, 0.985, 1.02, 0.001, &o), Verdict::NoChange);
    assert_eq!(verdict(1.3, 1.28, 1.32, 0.001, &o), Verdict::Slower);
    assert_eq!(verdict(0.7, 0.68, 0.72, 0.001, &o), Verdict::Faster);
    // Real, but within the threshold and not inside it: unclear.
    assert_eq!(verdict(1.015, 1.005, 1.025, 0.001, &o), Verdict::Unclear);
    // Beyond the threshold but not significant.
    assert_eq!(verdict(1.3, 1.1, 1.5, 0.2, &o), Verdict::Unclear);
    // The interval reaches 1.
    assert_eq!(verdict(1.3, 0.99, 1.5, 0.01, &o), Verdict::Unclear);
    let loose = Options { noise: 0.05, ..o };
    assert_eq!(verdict(1.03, 1.02, 1.04, 0.001, &loose), Verdict::NoChange);
}

#[test]
fn a_slower_range_is_slower_and_the_unchanged_one_no_change() {
    let base = run(
        "b",
        1_000_000,
        &[("work", 600_000, 600_000), ("steady", 300_000, 300_000)],
    );
    let candidate = run(
        "c",
        1_180_000,
        &[("work", 780_000, 780_000), ("steady", 300_000, 300_000)],
    );
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    let work = find(&comparison, "work");
    assert_eq!(work.verdict, Verdict::Slower);
    let [low, high] = work.interval.unwrap();
    assert!(low < 1.3 && 1.3 < high, "{low} {high}");
    assert!(work.p_value.unwrap() < 1e-6);
    assert_eq!(find(&comparison, "steady").verdict, Verdict::NoChange);
    assert_eq!(find(&comparison, "pass").verdict, Verdict::Slower);
    assert!(comparison.regressed(&options()));
    // The pass and the call, then the ranges by how much of a pass each
    // moves: the range that changed, then the one that did not.
    let labels: Vec<String> = comparison.rows.iter().map(|r| r.subject.label()).collect();
    assert_eq!(labels, ["pass", "call", "work", "steady"]);
    assert!((work.pass_share.unwrap() - 0.18).abs() < 0.01, "{work:?}");
    // No self rows: neither range holds another.
    assert!(
        comparison.differences.is_empty(),
        "{:?}",
        comparison.differences
    );

    let reverse = compare(&candidate, &base, &options(), false).unwrap();
    assert_eq!(find(&reverse, "work").verdict, Verdict::Faster);
    assert!(!reverse.regressed(&options()));
}

#[test]
fn added_and_removed_ranges_are_rows_and_self_time_appears_where_ranges_nest() {
    let base = run("b", 1_000, &[("outer", 900, 400), ("old", 500, 500)]);
    let candidate = run("c", 1_000, &[("outer", 900, 400), ("new", 500, 500)]);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(find(&comparison, "old").verdict, Verdict::Removed);
    assert_eq!(find(&comparison, "new").verdict, Verdict::Added);
    assert_eq!(find(&comparison, "new").base, None);
    assert_eq!(find(&comparison, "outer (self)").verdict, Verdict::NoChange);
    assert!(
        !comparison
            .rows
            .iter()
            .any(|r| r.subject.label() == "old (self)"),
        "a range without ranges inside has no self row"
    );
    let new = find(&comparison, "new");
    assert!((new.pass_change_ns - 500).abs() <= 10, "{new:?}");
}

#[test]
fn a_change_within_what_the_clock_can_tell_is_unclear() {
    // 30 ns against 45 ns: clearly apart, but within twice a 21 ns reading.
    let timer = "timings: {timer: {source: t, resolution_ns: 20, overhead_ns: 21.5}}";
    let mut base = run("b", 10_000, &[("tiny", 30, 30)]);
    let candidate = run("c", 10_000, &[("tiny", 45, 45)]);
    let found = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(
        find(&found, "tiny").verdict,
        Verdict::Slower,
        "no timer: no floor"
    );
    let patch: Value = serde_yaml::from_str(timer).unwrap();
    base.manifest
        .as_mapping_mut()
        .unwrap()
        .insert("timings".into(), patch["timings"].clone());
    let found = compare(&base, &candidate, &options(), false).unwrap();
    let tiny = find(&found, "tiny");
    assert_eq!(tiny.verdict, Verdict::Unclear);
    assert_eq!(
        tiny.note.as_deref(),
        Some("the medians differ by 15 ns: within what the clock can tell (43 ns, twice its resolution or the cost of a reading)")
    );
}

#[test]
fn too_few_samples_give_no_verdict() {
    let mut base = run("b", 1_000, &[]);
    let mut candidate = run("c", 2_000, &[]);
    base.samples.passes =
        profiling_core::driver::run_samples::Series::from_set(&set([1_000, 1_010, 990]));
    candidate.samples.passes =
        profiling_core::driver::run_samples::Series::from_set(&set([2_000, 2_010, 1_990]));
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    let pass = find(&comparison, "pass");
    assert_eq!(pass.verdict, Verdict::Unclear);
    assert_eq!(pass.ratio, Some(2.0));
    assert!(pass.note.as_ref().unwrap().contains("too few samples"));
}

#[test]
fn what_differs_between_the_manifests_is_listed_key_by_key() {
    let base = run("b", 1_000, &[]);
    let mut candidate = run("c", 1_000, &[]);
    let edit = |run: &mut LoadedRun, yaml: &str| {
        let patch: Value = serde_yaml::from_str(yaml).unwrap();
        for (key, value) in patch.as_mapping().unwrap() {
            run.manifest
                .as_mapping_mut()
                .unwrap()
                .insert(key.clone(), value.clone());
        }
    };
    edit(
        &mut candidate,
        "target: {name: spin, parameters: {micros: 130}}\nrecord_ids: [a, c, d]\nhost: {name: elsewhere, cpu_model: X, cores: 4}\nbuild_profile: debug\ngit_commit: def",
    );
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    let lines: Vec<String> = comparison
        .differences
        .iter()
        .map(|d| format!("{}: {} -> {}", d.key, d.base, d.candidate))
        .collect();
    assert_eq!(
        lines,
        [
            "target.parameters.micros: 100 -> 130",
            "record_ids: 2 records, #2 `b` -> 3 records, #2 `c`",
            "build_profile: release -> debug",
            "host.cores: 2 -> 4",
        ]
    );
    assert_eq!(comparison.base.git_commit.as_deref(), Some("abc"));
    assert_eq!(comparison.candidate.git_commit.as_deref(), Some("def"));

    let mut other = run("o", 1_000, &[]);
    edit(&mut other, "target: {name: other}");
    let refused = compare(&base, &other, &options(), false).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "p@b runs target `spin` and p@o runs `other`: comparing different targets compares different code; give --allow-different-targets to compare them anyway"
    );
    assert!(compare(&base, &other, &options(), true).is_ok());
    let same = compare(&base, &base, &options(), false).unwrap_err();
    assert_eq!(same.to_string(), "p@b and p@b are the same run");
}

#[test]
fn an_interrupted_run_is_compared_with_a_warning() {
    let base = run("b", 1_000, &[]);
    let mut candidate = run("c", 1_000, &[]);
    candidate.status = RunStatus::Interrupted;
    candidate.completed_iterations = 12;
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(
        comparison.warnings,
        ["p@c was interrupted: it holds 12 of 50 measured passes"]
    );
    assert_eq!(comparison.candidate.status, "interrupted");
}

#[test]
fn a_run_with_histogram_samples_is_compared_with_its_files_bound() {
    let base = run("b", 1_000, &[]);
    let mut candidate = run("c", 1_000, &[]);
    // Ten more passes known only by their bucket's middle.
    candidate.samples.passes.buckets = vec![(1_002, 10)];
    candidate.samples.passes.count += 10;
    let warnings = |candidate: &LoadedRun| {
        compare(&base, candidate, &options(), false)
            .unwrap()
            .warnings
    };
    assert_eq!(
        warnings(&candidate),
        ["p@c kept some samples only as a histogram (a long run): those count at their bucket's middle, within 0.4 %"]
    );
    // A samples file of version 1 had the coarser histogram.
    candidate.samples.version = 1;
    assert_eq!(
        warnings(&candidate),
        ["p@c kept some samples only as a histogram (a long run): those count at their bucket's middle, within 1.6 %"]
    );
}

#[test]
fn options_out_of_range_are_named() {
    let bad = Options {
        noise: 1.5,
        ..Options::default()
    };
    assert!(bad
        .check()
        .unwrap_err()
        .starts_with("--noise-threshold 1.5"));
    let bad = Options {
        significance: 0.0,
        ..Options::default()
    };
    assert!(bad.check().unwrap_err().starts_with("--significance 0"));
    assert!(Options::default().check().is_ok());
}

fn mirrored(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict::Faster => Verdict::Slower,
        Verdict::Slower => Verdict::Faster,
        Verdict::Added => Verdict::Removed,
        Verdict::Removed => Verdict::Added,
        other => other,
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Swapping base and candidate inverts every ratio and interval and
    /// mirrors every verdict (away from the edges of the noise band, where
    /// 1 - t and 1 / (1 + t) differ).
    #[test]
    fn swapping_the_runs_inverts_every_row(
        pass in 1_000u64..2_000,
        work in 100u64..900,
        factor in proptest::prop_oneof![0.5f64..0.9, 0.999f64..1.001, 1.1f64..2.0],
        only_in_base in proptest::bool::ANY,
    ) {
        let changed = (work as f64 * factor) as u64;
        let extra: &[(&str, u64, u64)] = if only_in_base { &[("gone", 50, 50)] } else { &[] };
        let mut base_ranges = vec![("work", work, work)];
        base_ranges.extend_from_slice(extra);
        let base = run("b", pass, &base_ranges);
        let candidate = run("c", pass - work + changed, &[("work", changed, changed)]);
        let forward = compare(&base, &candidate, &options(), false).unwrap();
        let backward = compare(&candidate, &base, &options(), false).unwrap();
        proptest::prop_assert_eq!(forward.rows.len(), backward.rows.len());
        for row in &forward.rows {
            let other = backward.rows.iter().find(|r| r.subject == row.subject).unwrap();
            // The band is 1 ± t both ways, so a figure between 1 + t and
            // 1 / (1 - t) (or 1 - t and 1 / (1 + t)) is outside it one way
            // and inside it the other: the pass row can land there, since
            // its change is the work's diluted by the pass.
            let t = options().noise;
            let at_an_edge = |x: f64| {
                (1.0 - t..=1.0 / (1.0 + t)).contains(&x) || (1.0 + t..=1.0 / (1.0 - t)).contains(&x)
            };
            let figures = row.interval.map_or(Vec::new(), |[low, high]| vec![low, high]);
            let on_edge = figures.into_iter().chain(row.ratio).any(at_an_edge);
            if !on_edge {
                proptest::prop_assert_eq!(mirrored(row.verdict), other.verdict, "{:?} vs {:?}", row, other);
            }
            proptest::prop_assert_eq!(row.base, other.candidate);
            proptest::prop_assert_eq!(row.pass_change_ns, -other.pass_change_ns);
            if let (Some(ratio), Some(inverse)) = (row.ratio, other.ratio) {
                proptest::prop_assert!((ratio * inverse - 1.0).abs() < 1e-12);
            }
            if let (Some([low, high]), Some([other_low, other_high])) = (row.interval, other.interval) {
                proptest::prop_assert!((low * other_high - 1.0).abs() < 1e-12, "{:?} {:?}", row, other);
                proptest::prop_assert!((high * other_low - 1.0).abs() < 1e-12, "{:?} {:?}", row, other);
            }
        }
    }
}

fn yaml_manifest(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

#[test]
fn gpu_timing_differs_only_where_it_changes_what_host_times_mean() {
    let old = yaml_manifest("workload: {warmup: 1, iterations: 5}\n");
    let auto = yaml_manifest("workload: {warmup: 1, iterations: 5, gpu_timing: auto}\n");
    let off = yaml_manifest("workload: {warmup: 1, iterations: 5, gpu_timing: off}\n");
    // A run from before `gpu_timing` ran as `auto` does.
    assert_eq!(differences(&old, &auto), Vec::new());
    let found = differences(&old, &off);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (
            found[0].key.as_str(),
            found[0].base.as_str(),
            found[0].candidate.as_str()
        ),
        ("workload.gpu_timing", "auto", "off")
    );
    // Events recorded in one run only: its host times hold their records.
    let events = yaml_manifest(
        "workload: {warmup: 1, iterations: 5, gpu_timing: auto}\ntimings: {gpu: {stream: legacy default stream of cuda:0}}\n",
    );
    let found = differences(&auto, &events);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (
            found[0].key.as_str(),
            found[0].base.as_str(),
            found[0].candidate.as_str()
        ),
        (
            "timings.gpu.stream",
            "(absent)",
            "legacy default stream of cuda:0"
        )
    );
}

#[test]
fn batch_size_differs_only_where_it_changes_what_a_call_means() {
    let old = yaml_manifest("workload: {warmup: 1, iterations: 5, gpu_timing: auto}\n");
    let one = yaml_manifest(
        "workload: {warmup: 1, iterations: 5, gpu_timing: auto, batch_size: 1, last_batch: keep}\n",
    );
    let four = yaml_manifest(
        "workload: {warmup: 1, iterations: 5, gpu_timing: auto, batch_size: 4, last_batch: keep}\n",
    );
    // A run from before batches ran one record per call.
    assert_eq!(differences(&old, &one), Vec::new());
    let found = differences(&old, &four);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (
            found[0].key.as_str(),
            found[0].base.as_str(),
            found[0].candidate.as_str()
        ),
        ("workload.batch_size", "1", "4")
    );
}

/// The document `compare --json` prints reads back through its types,
/// with every row's subject, verdict and figures, and says its layout.
#[test]
fn a_comparison_document_reads_back_through_its_types() {
    let base = run("b", 1_000_000, &[("work", 600_000, 300_000)]);
    let candidate = run("c", 1_180_000, &[("work", 780_000, 480_000)]);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    let document = ComparisonDocument::new(std::slice::from_ref(&comparison), &options());
    assert_eq!(document.format_version, COMPARISON_FORMAT_VERSION);
    assert!(document.regressed);
    let value = serde_yaml::to_value(&document).unwrap();
    assert_eq!(value["format_version"], serde_yaml::Value::from(1));
    assert_eq!(value["comparisons"][0]["rows"][2]["kind"], "range");
    assert_eq!(value["comparisons"][0]["rows"][2]["name"], "work");
    assert_eq!(value["comparisons"][0]["rows"][2]["verdict"], "slower");
    let read: ComparisonDocument = serde_yaml::from_value(value).unwrap();
    assert_eq!(read, document);
}

/// A range of a few hundred nanoseconds that got 50 % slower (code layout
/// does that) moves a pass of a millisecond by 0.02 %: it does not fail
/// the gate alone, unless the gate is asked to count every range.
#[test]
fn the_gate_counts_the_pass_the_call_and_ranges_that_move_the_pass() {
    let base = run(
        "b",
        1_000_000,
        &[("tiny", 400, 400), ("work", 600_000, 600_000)],
    );
    let candidate = run(
        "c",
        1_000_000,
        &[("tiny", 600, 600), ("work", 600_000, 600_000)],
    );
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(find(&comparison, "tiny").verdict, Verdict::Slower);
    assert_ne!(find(&comparison, "pass").verdict, Verdict::Slower);
    assert!(!comparison.regressed(&options()));
    let every_range = Options {
        gate_share: Some(0.0),
        ..options()
    };
    assert!(comparison.regressed(&every_range));
    let gating: Vec<String> = comparison
        .gating_rows(&every_range)
        .map(|r| r.subject.label())
        .collect();
    assert_eq!(gating, ["tiny"]);
    // Where the range moves the pass by more than the threshold, it counts.
    let slower = run(
        "s",
        1_300_000,
        &[("tiny", 400, 400), ("work", 900_000, 900_000)],
    );
    let moved = compare(&base, &slower, &options(), false).unwrap();
    assert!(moved.regressed(&options()));
    let gating: Vec<String> = moved
        .gating_rows(&options())
        .map(|r| r.subject.label())
        .collect();
    assert!(gating.contains(&"work".to_owned()), "{gating:?}");
    assert!(Options {
        gate_share: Some(1.5),
        ..options()
    }
    .check()
    .unwrap_err()
    .contains("--gate-share"));
}

/// One run preempted for a third of its passes, the other not: a 20 %
/// change is what the machine did; the verdict says so rather than
/// `slower`. A 50 % change is beyond it and stands.
#[test]
fn a_difference_the_machine_explains_is_unclear_and_says_why() {
    let with = |run: &mut LoadedRun, off_cpu: f64, preemptions: u64| {
        run.typed.timings.machine = Some(profiling_core::driver::manifest::MachineState {
            off_cpu: Some(off_cpu),
            involuntary_switches: Some(preemptions),
            ..Default::default()
        });
    };
    let mut base = run("b", 1_000_000, &[("work", 600_000, 600_000)]);
    let mut candidate = run("c", 1_200_000, &[("work", 720_000, 720_000)]);
    with(&mut base, 0.0, 3);
    with(&mut candidate, 0.33, 900);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    let pass = find(&comparison, "pass");
    assert_eq!(pass.verdict, Verdict::Unclear, "{pass:?}");
    assert!(
        pass.note.as_deref().unwrap().contains("off the CPU 0.0 %"),
        "{pass:?}"
    );
    assert!(comparison.candidate.machine.is_some());
    let mut much_slower = run("m", 1_500_000, &[("work", 900_000, 900_000)]);
    with(&mut much_slower, 0.33, 900);
    let comparison = compare(&base, &much_slower, &options(), false).unwrap();
    assert_eq!(find(&comparison, "pass").verdict, Verdict::Slower);
    // Both off the CPU alike: nothing to explain.
    with(&mut base, 0.33, 900);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(find(&comparison, "pass").verdict, Verdict::Slower);
}

/// The candidate's run saw the memory 20 % slower by its canaries, its
/// thread never off the CPU: a 15 % slower pass is what the machine did,
/// and says so; a 50 % slower one stands; canaries within 2 % of each
/// other, or a shift no larger than a run's own canaries moved from
/// before to after (noise, not a change of state), leave it alone.
#[test]
fn a_difference_the_canaries_explain_is_unclear_and_names_them() {
    use profiling_core::driver::canary::{Canaries, Canary};
    let with = |run: &mut LoadedRun, before_ns: u64, after_ns: u64| {
        let canary = |memory_ns| Canary {
            memory_ns,
            compute_ns: 250_000,
        };
        run.typed.timings.machine = Some(profiling_core::driver::manifest::MachineState {
            off_cpu: Some(0.0),
            involuntary_switches: Some(3),
            canary: Some(Canaries {
                before: canary(before_ns),
                after: canary(after_ns),
                between: Vec::new(),
            }),
            ..Default::default()
        });
    };
    let mut base = run("b", 1_000_000, &[("work", 600_000, 600_000)]);
    let mut candidate = run("c", 1_150_000, &[("work", 690_000, 690_000)]);
    with(&mut base, 5_000_000, 5_000_000);
    with(&mut candidate, 6_000_000, 6_000_000);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    let pass = find(&comparison, "pass");
    assert_eq!(pass.verdict, Verdict::Unclear, "{pass:?}");
    assert_eq!(
        pass.note.as_deref().unwrap(),
        "the machine-speed canaries shifted between the runs (memory-bound +20.0 %, the candidate's run against the base's): a change of +15.0 % is within what that explains",
    );
    let mut much_slower = run("m", 1_500_000, &[("work", 900_000, 900_000)]);
    with(&mut much_slower, 6_000_000, 6_000_000);
    let comparison = compare(&base, &much_slower, &options(), false).unwrap();
    assert_eq!(find(&comparison, "pass").verdict, Verdict::Slower);
    // Within 2 %: nothing to explain.
    with(&mut candidate, 5_050_000, 5_050_000);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(find(&comparison, "pass").verdict, Verdict::Slower);
    // +20 % on average, but the candidate's own canary moved 33 % from
    // before to after: the machine's noise, not a shift.
    with(&mut candidate, 5_000_000, 7_000_000);
    let comparison = compare(&base, &candidate, &options(), false).unwrap();
    assert_eq!(find(&comparison, "pass").verdict, Verdict::Slower);
}

/// A pair of one stage whose memory canary read more than 10 % apart
/// between its readings warns that the sides' own buffers may differ as
/// much; one that read steady, or stages pooled, do not.
#[test]
fn a_pair_warns_when_fresh_buffers_stream_at_different_speeds() {
    use profiling_core::driver::canary::{Canaries, Canary};
    use profiling_core::driver::run_samples::{PairedSamples, SidePasses};
    let canary = |memory_ns| Canary {
        memory_ns,
        compute_ns: 250_000,
    };
    let with = |run: &mut LoadedRun, ns: u64| {
        run.typed.timings.machine = Some(profiling_core::driver::manifest::MachineState {
            canary: Some(Canaries {
                before: canary(ns),
                after: canary(ns),
                between: Vec::new(),
            }),
            ..Default::default()
        });
    };
    let (mut base, mut candidate) = (run("b", 1_000_000, &[]), run("c", 1_000_000, &[]));
    with(&mut base, 6_000_000);
    with(&mut candidate, 6_000_000);
    let side = SidePasses {
        pass_ns: vec![1_000_000; 12],
        call_ns: vec![1_000_000; 12],
        ..SidePasses::default()
    };
    let mut samples = PairedSamples {
        format_version: 1,
        blocks: (0..6)
            .flat_map(|_| [("base".to_owned(), 2), ("candidate".to_owned(), 2)])
            .collect(),
        processes: 1,
        stages: Vec::new(),
        canary: vec![canary(6_100_000), canary(5_900_000)],
        base: side.clone(),
        candidate: side,
    };
    let warned = |samples: &PairedSamples| {
        crate::paired::compare_paired(&base, &candidate, samples, &options())
            .warnings
            .into_iter()
            .find(|w| w.contains("memory canary"))
    };
    assert_eq!(warned(&samples), None);
    samples.canary.push(canary(7_200_000));
    let warning = warned(&samples).expect("a warning");
    assert!(
        warning.contains("each of its 5 readings")
            && warning.contains("5.9 to 7.2 ms over the pair (22 % apart)"),
        "{warning}"
    );
    // Two processes: each side's own before and after count.
    samples.processes = 2;
    let warning = warned(&samples).expect("a warning");
    assert!(warning.contains("each of its 7 readings"), "{warning}");
    samples.stages = vec![3, 3];
    assert_eq!(warned(&samples), None);
}
