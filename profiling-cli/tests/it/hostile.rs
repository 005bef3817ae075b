//! Hostile and unlucky input on `ab`, `runs clean` and the programs the
//! project starts: ids that would take the names of the runs' own locks
//! and leftovers, what `runs clean` cannot clean or must not follow, a
//! pair whose sides differ in more than their code, and a video whose
//! name is an FFmpeg option. (Signals on `ab` are in `tests/signals.rs`;
//! the data sources' cases in `profiling-core`.)

use std::path::Path;

use crate::common::{cli, profile_cli_in};

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `run --run-id`, `ab --ab-id` and `sweep --sweep-id` refuse an id that
/// starts with `.`: `.<id>.claim`, `.<id>.partial-<pid>` and
/// `.<id>.replaced-<pid>` are the project's own names beside a run, and
/// `runs clean` would take a completed run so named for a leftover.
#[test]
fn ids_that_could_be_a_runs_lock_or_leftover_are_refused() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    for (args, option) in [
        (
            vec!["run", "cpu-work", "--run-id", ".keep.partial-999999"],
            "--run-id",
        ),
        (
            vec!["run", "cpu-work", "--run-id", ".keep.replaced-999999"],
            "--run-id",
        ),
        (
            vec!["ab", "cpu-work", "cpu-work", "--ab-id", ".same.claim"],
            "--ab-id",
        ),
        (
            vec![
                "sweep",
                "cpu-work",
                "--set",
                "target.parameters.rounds=1,2",
                "--sweep-id",
                ".s",
            ],
            "--sweep-id",
        ),
    ] {
        let mut args = args;
        args.extend(["--output-dir", &out_dir]);
        let refused = profile_cli_in(out.path(), &args);
        assert_eq!(refused.code, Some(2), "{args:?}: {}", refused.stderr);
        assert!(
            refused.stderr.contains(&format!("{option}: `"))
                && refused.stderr.contains("must not start with `.`"),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert!(!out.path().join("cpu-work").exists(), "nothing written");
}

/// What `runs clean` cannot put right (a lock file's name taken by a
/// directory) it says on stderr, and exits 1.
#[test]
fn runs_clean_says_what_it_could_not_clean_and_exits_1() {
    let out = tempfile::tempdir().unwrap();
    let runs = out.path().join("cpu-work/runs");
    std::fs::create_dir_all(runs.join(".same.claim")).unwrap();
    std::fs::create_dir_all(runs.join("same")).unwrap();
    let cleaned = cli(&["runs", "clean", "--output-dir", &path(out.path())]);
    assert_eq!(cleaned.code, 1, "{}{}", cleaned.stdout, cleaned.stderr);
    assert!(
        cleaned
            .stderr
            .starts_with("error: cannot clean: cannot claim run id `same`"),
        "{}",
        cleaned.stderr
    );
    assert!(runs.join("same").is_dir(), "the run is kept");
}

/// A profile's `runs/` that is a symbolic link is not followed: what it
/// points to is outside the directory asked to be cleaned.
#[test]
fn runs_clean_does_not_follow_a_symlinked_runs_directory() {
    let out = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let leftover = elsewhere.path().join(".r.partial-4194304");
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::create_dir_all(out.path().join("cpu-work")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), out.path().join("cpu-work/runs")).unwrap();
    let cleaned = cli(&["runs", "clean", "--output-dir", &path(out.path())]);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert!(
        cleaned.stdout.contains("is a symbolic link") && cleaned.stdout.contains("not followed"),
        "{}",
        cleaned.stdout
    );
    assert!(leftover.is_dir(), "what the link points to is untouched");
}

/// `ab T T --config C` gives both sides C's target section; sides whose
/// parameters differ say so above the table, as `compare` does.
#[test]
fn ab_of_one_target_runs_both_sides_on_its_config_and_says_what_differs() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    let config = |name: &str, rounds: u32| {
        let file = out.path().join(name);
        std::fs::write(
            &file,
            format!(
                "target: {{name: cpu-work, parameters: {{rounds: {rounds}, steady_rounds: 100}}}}\nwarmup: 1\niterations: 40\n"
            ),
        )
        .unwrap();
        path(&file)
    };
    let (base, other) = (config("base.yaml", 2000), config("other.yaml", 1000));
    let ab = |extra: &[&str], id: &str| {
        let mut args = vec![
            "ab",
            "cpu-work",
            "cpu-work",
            "--config",
            &base,
            "--no-report",
            "--output-dir",
            &out_dir,
            "--ab-id",
            id,
        ];
        args.extend(extra);
        profile_cli_in(out.path(), &args)
    };
    let rounds = |id: &str, side: &str| -> serde_yaml::Value {
        let manifest = out
            .path()
            .join(format!("cpu-work/runs/{id}/{side}/manifest.yaml"));
        let manifest: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        manifest["target"]["parameters"]["rounds"].clone()
    };

    let same = ab(&[], "same");
    assert_eq!(same.code, Some(0), "{}", same.stderr);
    assert_eq!(rounds("same", "base"), 2000);
    assert_eq!(rounds("same", "candidate"), 2000);
    assert!(!same.stdout.contains("differs:"), "{}", same.stdout);

    let different = ab(&["--candidate-config", &other], "different");
    assert_eq!(different.code, Some(0), "{}", different.stderr);
    assert_eq!(rounds("different", "candidate"), 1000);
    assert!(
        different
            .stdout
            .contains("differs: target.parameters.rounds: 2000 → 1000"),
        "{}",
        different.stdout
    );
}

/// A video named `-report` in the current directory is read as a video:
/// FFmpeg's programs get `file:` and the absolute path, never a word they
/// could take for an option (`-report` would have them write a log here).
#[test]
fn a_video_named_like_an_ffmpeg_option_is_read_as_a_file() {
    let works = |program: &str| {
        std::process::Command::new(program)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !(works("ffmpeg") && works("ffprobe")) {
        eprintln!(
            "skipped: ffmpeg and ffprobe are not installed (scripts/setup-ffmpeg installs them)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=32x24:rate=10:duration=0.3",
        ])
        .args(["-c:v", "ffv1", "-f", "matroska"])
        .arg(format!("file:{}", dir.path().join("-report").display()))
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(
        dir.path().join("video.yaml"),
        "target: {name: cpu-work, parameters: {rounds: 10}}\ndata_source: {name: video, path: '-report'}\nwarmup: 0\niterations: 1\n",
    )
    .unwrap();
    let ran = profile_cli_in(
        dir.path(),
        &[
            "run",
            "cpu-work",
            "--config",
            "video.yaml",
            "--output-dir",
            "out",
        ],
    );
    assert_eq!(ran.code, Some(0), "{ran}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["-report", "out", "video.yaml"],
        "no log of FFmpeg's"
    );
    let manifest = std::fs::read_to_string(
        dir.path()
            .join("out/cpu-work/runs")
            .read_dir()
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap()
            .join("manifest.yaml"),
    )
    .unwrap();
    assert!(manifest.contains("frames: 3"), "{manifest}");
}

/// A capture range and a run id that start with `-` are joined to their
/// options in the command `--print-nsys-command` prints (and `--nsys`
/// runs), so the profiling binary never takes them for options.
#[test]
fn values_that_start_with_a_dash_stay_values_in_the_nsys_command() {
    let out = tempfile::tempdir().unwrap();
    let printed = profile_cli_in(
        out.path(),
        &[
            "run",
            "cpu-work",
            "--capture-range=-x",
            "--run-id=-r",
            "--output-dir",
            "out",
            "--print-nsys-command",
        ],
    );
    assert_eq!(printed.code, Some(0), "{printed}");
    let lines: Vec<&str> = printed.stdout.lines().map(str::trim).collect();
    assert!(
        lines.contains(&"--capture-range=-x \\"),
        "{}",
        printed.stdout
    );
    assert!(lines.contains(&"--run-id=-r \\"), "{}", printed.stdout);
    assert!(
        lines.contains(&"'--nvtx-capture=-x@*' \\"),
        "{}",
        printed.stdout
    );
}
