//! Reading recordings and rebuilding ranges, on hand-written recordings.

use std::path::PathBuf;

use nvtx_recorder::{
    range_forest, read_events, render_tree, render_tree_collapsed, Event, RangeNode, RecorderError,
};

/// Writes `text` to a fresh file named for the calling test.
fn recording(test: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("nvtx-recorder-{test}.tsv"));
    std::fs::write(&path, text).unwrap();
    path
}

fn push(thread: u64, ns: u64, name: &str) -> Event {
    Event::Push {
        thread,
        ns,
        name: name.to_owned(),
    }
}

fn pop(thread: u64, ns: u64) -> Event {
    Event::Pop { thread, ns }
}

#[test]
fn reads_events_and_unescapes_messages() {
    let path = recording(
        "reads",
        "push\t1\t10\tline\\none\\ttab\\\\\n\
         mark\t1\t15\tcarriage\\r\n\
         pop\t1\t20\n",
    );

    let events = read_events(&path).unwrap();

    assert_eq!(
        events,
        [
            push(1, 10, "line\none\ttab\\"),
            Event::Mark {
                thread: 1,
                ns: 15,
                name: "carriage\r".to_owned()
            },
            pop(1, 20),
        ]
    );
}

#[test]
fn a_missing_recording_names_its_path() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvtx-recorder-does-not-exist.tsv");

    let error = read_events(&path).unwrap_err();

    assert!(matches!(error, RecorderError::Read { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
}

#[test]
fn a_malformed_line_names_the_file_and_line() {
    let cases = [
        (
            "push\t1\t10\touter\npop\t1\tlate\n",
            2,
            "time \"late\" is not a number",
        ),
        (
            "pop\t1\t10\textra\n",
            1,
            "`pop` takes 3 tab-separated fields, found 4",
        ),
        (
            "push\t1\t10\n",
            1,
            "`push` takes 4 tab-separated fields, found 3",
        ),
        (
            "mark\t1\t10\tok\nstart\t1\t10\tx\n",
            2,
            "unknown event \"start\"",
        ),
        ("push\tone\t10\tx\n", 1, "thread \"one\" is not a number"),
        ("push\t1\t10\tbad\\q\n", 1, "unknown escape \\q"),
        ("push\t1\t10\tbad\\\n", 1, "ends in a lone backslash"),
    ];
    for (index, (text, line, reason)) in cases.into_iter().enumerate() {
        let path = recording(&format!("malformed-{index}"), text);

        let error = read_events(&path).unwrap_err();

        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{}:{line}: ", path.display())),
            "{message}"
        );
        assert!(message.contains(reason), "{message} lacks {reason}");
    }
}

#[test]
fn rebuilds_nesting_per_thread_from_interleaved_events() {
    let events = [
        push(1, 10, "a"),
        push(2, 11, "x"),
        push(1, 12, "b"),
        Event::Mark {
            thread: 1,
            ns: 13,
            name: "ignored".to_owned(),
        },
        pop(2, 14),
        pop(1, 15),
        push(1, 16, "c"),
        pop(1, 17),
        pop(1, 18),
        push(1, 19, "d"),
        pop(1, 20),
    ];

    let forest = range_forest(&events).unwrap();

    assert_eq!(render_tree(&forest[&1]), "a\n  b\n  c\nd\n");
    assert_eq!(render_tree(&forest[&2]), "x\n");
    let a = &forest[&1][0];
    assert_eq!((a.start_ns, a.end_ns), (10, 18));
    assert_eq!((a.children[0].start_ns, a.children[0].end_ns), (12, 15));
}

#[test]
fn a_pop_without_a_push_is_an_error() {
    let error = range_forest(&[push(3, 1, "a"), pop(3, 2), pop(3, 7)]).unwrap_err();

    assert!(
        matches!(error, RecorderError::PopWithoutPush { thread: 3, ns: 7 }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "thread 3 popped a range at 7 ns with none open"
    );
}

#[test]
fn a_range_never_popped_is_an_error_naming_the_open_ranges() {
    let events = [
        push(1, 1, "done"),
        pop(1, 2),
        push(2, 3, "outer"),
        push(2, 4, "inner"),
    ];

    let error = range_forest(&events).unwrap_err();

    match &error {
        RecorderError::NeverPopped { thread, open } => {
            assert_eq!(*thread, 2);
            assert_eq!(open, &["outer", "inner"]);
        }
        other => panic!("expected NeverPopped, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        "thread 2 never popped the ranges \"outer\" > \"inner\" (outermost first)"
    );
}

#[test]
fn collapsed_rendering_counts_runs_of_identical_siblings() {
    let leaf = |name: &str| RangeNode {
        name: name.to_owned(),
        start_ns: 0,
        end_ns: 0,
        children: Vec::new(),
    };
    let iteration = |child: &str| RangeNode {
        children: vec![leaf(child)],
        ..leaf("iteration")
    };
    let run = RangeNode {
        children: vec![
            leaf("warmup"),
            iteration("forward"),
            iteration("forward"),
            iteration("backward"),
            leaf("warmup"),
        ],
        ..leaf("run")
    };

    assert_eq!(
        render_tree_collapsed(&[run]),
        "run\n  warmup\n  iteration (x2)\n    forward\n  iteration\n    backward\n  warmup\n"
    );
}
