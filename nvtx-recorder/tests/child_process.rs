//! The recorder attached to a real process: this test binary runs itself again
//! with the injection library attached, and the child makes NVTX calls through
//! the `nvtx` crate exactly as profiled code does. Its own `main` (no test
//! harness): run plainly, it runs the checks; with a scenario named, it is
//! the child.

use std::path::PathBuf;
use std::process::Command;

use nvtx::sys::ffi;
use nvtx_recorder::{attach, range_forest, read_events, render_tree, Event, RangeNode};

/// Names the scenario the child runs; unset in the parent.
const SCENARIO: &str = "NVTX_RECORDER_TEST_SCENARIO";

fn main() {
    if let Ok(scenario) = std::env::var(SCENARIO) {
        match scenario.as_str() {
            "nested" => nested(),
            "threads" => threads(),
            "messages" => messages(),
            other => panic!("unknown scenario {other:?}"),
        }
        return;
    }
    records_nested_ranges_and_marks_as_pushed();
    records_each_thread_on_its_own();
    records_messages_of_every_kind();
    println!("child_process: 3 checks passed");
}

fn push(name: &std::ffi::CStr) -> i32 {
    unsafe { ffi::nvtxRangePushA(name.as_ptr()) }
}

fn pop() -> i32 {
    unsafe { ffi::nvtxRangePop() }
}

fn nested() {
    // Push and pop return the zero-based level of the range started or ended.
    assert_eq!(push(c"outer"), 0);
    assert_eq!(push(c"inner"), 1);
    unsafe { ffi::nvtxMarkA(c"tick".as_ptr()) };
    assert_eq!(pop(), 1);
    assert_eq!(push(c"second"), 1);
    assert_eq!(pop(), 1);
    assert_eq!(pop(), 0);
}

fn threads() {
    push(c"main");
    std::thread::spawn(|| {
        push(c"worker");
        push(c"step");
        pop();
        pop();
    })
    .join()
    .unwrap();
    pop();
}

fn messages() {
    push(c"tab\there, newline\nthere, backslash\\");
    pop();
    // `nvtx::Str` from a Rust string is a wide string: nvtxRangePushW.
    drop(nvtx::LocalRange::new(nvtx::Str::from_str_lossy("wide ✓")));
    // Event attributes: nvtxRangePushEx.
    drop(nvtx::LocalRange::new(
        nvtx::EventAttributes::builder()
            .message(c"attributes")
            .build(),
    ));
    // A domain with a registered string: nvtxDomainRegisterStringW, nvtxDomainRangePushEx.
    let domain = nvtx::Domain::new(nvtx::Str::from_str_lossy("recorder test"));
    let registered = domain.register_string(nvtx::Str::from_str_lossy("registered"));
    drop(domain.local_range(registered));
    domain.mark(c"domain mark");
    nvtx::mark_ascii(c"plain mark");
}

/// Runs `scenario` in a child process with the recorder attached and returns
/// what it recorded.
fn record(scenario: &str) -> Vec<Event> {
    let output = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "nvtx-recorder-{scenario}-{}.tsv",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&output);

    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(SCENARIO, scenario);
    attach(&mut command, &output);
    let child = command.output().unwrap();
    assert!(
        child.status.success(),
        "scenario {scenario} failed ({}):\n{}{}",
        child.status,
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr),
    );

    let events = read_events(&output).unwrap();
    std::fs::remove_file(&output).unwrap();
    events
}

fn assert_nested_in_time(parent: &RangeNode) {
    assert!(parent.start_ns <= parent.end_ns, "{parent:?}");
    for child in &parent.children {
        assert!(
            parent.start_ns <= child.start_ns && child.end_ns <= parent.end_ns,
            "{child:?} is not within {parent:?}"
        );
        assert_nested_in_time(child);
    }
}

fn records_nested_ranges_and_marks_as_pushed() {
    let events = record("nested");

    let forest = range_forest(&events).unwrap();
    assert_eq!(forest.keys().copied().collect::<Vec<_>>(), [1]);
    assert_eq!(render_tree(&forest[&1]), "outer\n  inner\n  second\n");
    assert_nested_in_time(&forest[&1][0]);

    let marks: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Event::Mark { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(marks, ["tick"]);
    assert!(
        events.windows(2).all(|pair| pair[0].ns() <= pair[1].ns()),
        "timestamps go back in {events:?}"
    );
}

fn records_each_thread_on_its_own() {
    let forest = range_forest(&record("threads")).unwrap();

    assert_eq!(forest.len(), 2, "{forest:?}");
    assert_eq!(render_tree(&forest[&1]), "main\n");
    assert_eq!(render_tree(&forest[&2]), "worker\n  step\n");
    let (main, worker) = (&forest[&1][0], &forest[&2][0]);
    assert!(main.start_ns < worker.start_ns && worker.end_ns < main.end_ns);
}

fn records_messages_of_every_kind() {
    let events = record("messages");

    let names: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|event| match event {
            Event::Push { name, .. } => Some(("push", name.as_str())),
            Event::Mark { name, .. } => Some(("mark", name.as_str())),
            Event::Pop { .. } => None,
        })
        .collect();
    assert_eq!(
        names,
        [
            ("push", "tab\there, newline\nthere, backslash\\"),
            ("push", "wide ✓"),
            ("push", "attributes"),
            ("push", "registered"),
            ("mark", "domain mark"),
            ("mark", "plain mark"),
        ]
    );
    let forest = range_forest(&events).unwrap();
    assert_eq!(forest[&1].len(), 4);
}
