//! The NVTX ranges of a whole run, as a profiler attached through NVTX's
//! injection interface (`NVTX_INJECTION64_PATH`, the way Nsight Systems
//! attaches) sees them.

use std::process::Command;

/// The ranges one `example-candidate` call opens: the copied function's
/// `#[nvtx_range]`, holding the snippet's own ranges around each step, each
/// holding the range of the production helper's `#[nvtx_range]`.
const ONE_CALL: &[(usize, &str)] = &[
    (0, "postprocess_detections"),
    (1, "decode"),
    (2, "decode_predictions"),
    (1, "keep top candidates"),
    (1, "nms"),
    (2, "non_max_suppression"),
    (1, "scale boxes"),
    (2, "scale_boxes"),
];

fn calls(records: usize, depth: usize) -> String {
    let mut text = String::new();
    for _ in 0..records {
        for (level, name) in ONE_CALL {
            text.push_str(&"  ".repeat(depth + level));
            text.push_str(name);
            text.push('\n');
        }
    }
    text
}

#[test]
fn a_run_emits_warmup_ranges_then_one_capture_range_of_iterations() {
    let scratch = tempfile::tempdir().unwrap();
    let events_file = scratch.path().join("events.tsv");
    let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    command.args([
        "run",
        "example-candidate",
        "--warmup",
        "1",
        "--iterations",
        "2",
        "--seed",
        "0",
        "--capture-range",
        "snippet-capture",
        "--run-id",
        "nvtx",
        "--output-dir",
    ]);
    command.arg(scratch.path());
    nvtx_recorder::attach(&mut command, &events_file);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let events = nvtx_recorder::read_events(&events_file).unwrap();
    let forest = nvtx_recorder::range_forest(&events).unwrap();
    assert_eq!(forest.len(), 1, "every range is on the main thread");
    let ranges = forest.values().next().unwrap();

    // The config beside the snippet asks for two records. Warmup calls are
    // outside every capture range; the measured passes are inside one.
    let mut expected = calls(2, 0);
    expected.push_str("snippet-capture\n");
    for iteration in 0..2 {
        expected.push_str(&format!("  iteration {iteration}\n"));
        expected.push_str(&calls(2, 2));
    }
    assert_eq!(nvtx_recorder::render_tree(ranges), expected);

    // Exactly one capture range, spanning both iterations in order.
    let capture: Vec<_> = ranges
        .iter()
        .filter(|r| r.name == "snippet-capture")
        .collect();
    assert_eq!(capture.len(), 1);
    let [first, second] = &capture[0].children[..] else {
        panic!("two iteration ranges");
    };
    assert!(
        capture[0].start_ns <= first.start_ns
            && first.end_ns <= second.start_ns
            && second.end_ns <= capture[0].end_ns
    );
}

/// Under `load`, each query is a range `query` on the thread of the
/// worker that served it, holding the target's own ranges, and every one
/// lies inside the capture range the main thread holds: Nsight Systems
/// sees the workers side by side.
#[test]
fn a_load_puts_each_query_on_its_workers_thread_inside_the_capture_range() {
    let scratch = tempfile::tempdir().unwrap();
    let events_file = scratch.path().join("events.tsv");
    let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    command.args([
        "load",
        "example-candidate",
        "--scenario",
        "concurrency",
        "--concurrency",
        "2",
        "--workers",
        "2",
        "--queries",
        "6",
        "--warmup",
        "1",
    ]);
    command.args(["--run-id", "nvtx", "--no-report", "--output-dir"]);
    command.arg(scratch.path());
    nvtx_recorder::attach(&mut command, &events_file);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = nvtx_recorder::read_events(&events_file).unwrap();
    let forest = nvtx_recorder::range_forest(&events).unwrap();
    let capture: Vec<&nvtx_recorder::RangeNode> = forest
        .values()
        .flatten()
        .filter(|r| r.name == "profile-target")
        .collect();
    assert_eq!(capture.len(), 1, "one capture range");
    let capture = capture[0];
    assert!(
        capture.children.is_empty(),
        "the capture's thread serves no query"
    );
    // The two workers' threads: their warmup calls outside the capture,
    // then their queries inside it, each holding one call's ranges.
    let workers: Vec<&Vec<nvtx_recorder::RangeNode>> = forest
        .values()
        .filter(|ranges| ranges.iter().any(|r| r.name == "query"))
        .collect();
    assert_eq!(workers.len(), 2, "{forest:?}");
    let mut queries = 0;
    for ranges in workers {
        let measured: Vec<_> = ranges.iter().filter(|r| r.name == "query").collect();
        for query in &measured {
            assert!(capture.start_ns <= query.start_ns && query.end_ns <= capture.end_ns);
            assert_eq!(nvtx_recorder::render_tree(&query.children), calls(1, 0));
        }
        queries += measured.len();
        // One warmup call, outside the capture range, before the queries.
        let warm = ranges
            .iter()
            .filter(|r| r.name == "postprocess_detections")
            .count();
        assert_eq!(warm, 1);
    }
    assert_eq!(queries, 6);
}
