//! A run whose results do not all fit on disk still prints its summary,
//! keeps its manifest (written first) and says which file could not be
//! written. The real binary runs under a real limit: a file size limit
//! (`RLIMIT_FSIZE`, writes past it fail with `EFBIG`) everywhere, and a
//! 24 KiB tmpfs where the test may mount one (root, in a private mount
//! namespace that `unshare` makes and that vanishes with the process).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

const ARGS: [&str; 6] = [
    "run",
    "detection-postprocess",
    "--iterations",
    "300",
    "--run-id",
    "r1",
];

fn profile_cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
}

/// The files left under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap();
                files.push(relative.display().to_string());
            }
        }
    }
    files.sort();
    files
}

/// What every full-disk run must show: exit 1, the summary on stdout, one
/// error naming `trace.json` and the manifest and samples kept (the
/// manifest says the trace is missing, and names the samples).
fn assert_kept_the_manifest(output: &Output, out_dir: &Path, reason: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let run_dir = out_dir.join("detection-postprocess/runs/r1");
    assert!(
        stdout.contains("passes: 300 measured passes of 1 record"),
        "the summary is printed:\n{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "manifest: {}",
            run_dir.join("manifest.yaml").display()
        )),
        "{stdout}"
    );
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        errors,
        [format!(
            "error: cannot write {}: {reason}; kept {}, {}",
            run_dir.join("trace.json").display(),
            run_dir.join("manifest.yaml").display(),
            run_dir.join("samples.bin").display()
        )],
        "{stderr}"
    );
    // The history store could not be made either: said, and none left
    // half made.
    assert!(
        stderr.contains("warning: the run is not in the history store: "),
        "{stderr}"
    );
    assert_eq!(
        files_under(out_dir),
        [
            "detection-postprocess/runs/r1/manifest.yaml",
            "detection-postprocess/runs/r1/samples.bin"
        ],
        "no staging directory, partial trace or store is left"
    );
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(run_dir.join("manifest.yaml")).unwrap())
            .unwrap();
    assert_eq!(manifest["status"], "completed");
    assert_eq!(manifest["completed_iterations"], 300);
    assert_eq!(manifest["trace"], serde_yaml::Value::Null);
    // Named where it was written (the tmpfs test moves it out afterwards).
    let samples = manifest["samples"]["path"].as_str().unwrap();
    assert!(
        samples.ends_with("detection-postprocess/runs/r1/samples.bin"),
        "{samples}"
    );
    assert_eq!(manifest["timings"]["iterations"]["count"], 300);
}

/// `command` with writes limited to files of `bytes`.
fn limit_file_size(command: &mut Command, bytes: u64) {
    // SAFETY: setrlimit and signal are async-signal-safe, and nothing else
    // runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Past the limit, a write fails with EFBIG instead of killing.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
}

#[test]
fn a_file_size_limit_costs_the_trace_not_the_manifest() {
    let out = tempfile::tempdir().unwrap();
    let mut command = profile_cli();
    command.args(ARGS).arg("--output-dir").arg(out.path());
    limit_file_size(&mut command, 16 * 1024);
    let output = command.output().unwrap();
    assert_kept_the_manifest(&output, out.path(), "File too large (os error 27)");
}

#[test]
fn a_full_tmpfs_costs_the_trace_not_the_manifest() {
    let out = tempfile::tempdir().unwrap();
    let mount = out.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    let probe = Command::new("unshare")
        .args(["--mount", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size=48k tmpfs '{}'",
            mount.display()
        ))
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: this user cannot mount a tmpfs in a mount namespace; the file size limit test covers the same path");
        return;
    }
    let command = format!(
        "mount -t tmpfs -o size=48k tmpfs '{dir}' && '{bin}' {args} --output-dir '{dir}'; status=$?; \
         find '{dir}' -type f | sort > '{listing}'; \
         cp '{dir}/detection-postprocess/runs/r1/manifest.yaml' '{copy}' 2>/dev/null; \
         cp '{dir}/detection-postprocess/runs/r1/samples.bin' '{samples}' 2>/dev/null; exit $status",
        dir = mount.display(),
        bin = env!("CARGO_BIN_EXE_profile-cli"),
        args = ARGS.join(" "),
        listing = out.path().join("listing").display(),
        copy = out.path().join("manifest.yaml").display(),
        samples = out.path().join("samples.bin").display(),
    );
    let output = Command::new("unshare")
        .args(["--mount", "sh", "-c", &command])
        .output()
        .unwrap();
    // The tmpfs is gone with the namespace: check what the shell saw in it.
    let listing = std::fs::read_to_string(out.path().join("listing")).unwrap();
    assert_eq!(
        listing,
        format!(
            "{}\n{}\n",
            mount
                .join("detection-postprocess/runs/r1/manifest.yaml")
                .display(),
            mount
                .join("detection-postprocess/runs/r1/samples.bin")
                .display()
        )
    );
    let kept = out.path().join("kept");
    let run_dir = kept.join("detection-postprocess/runs/r1");
    std::fs::create_dir_all(&run_dir).unwrap();
    for file in ["manifest.yaml", "samples.bin"] {
        std::fs::rename(out.path().join(file), run_dir.join(file)).unwrap();
    }
    let output = Output {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout)
            .replace(&mount.display().to_string(), &kept.display().to_string())
            .into_bytes(),
        stderr: String::from_utf8_lossy(&output.stderr)
            .replace(&mount.display().to_string(), &kept.display().to_string())
            .into_bytes(),
    };
    assert_kept_the_manifest(&output, &kept, "No space left on device (os error 28)");
}

#[test]
fn a_forced_run_that_cannot_be_written_leaves_the_earlier_run_whole() {
    let out = tempfile::tempdir().unwrap();
    let first = profile_cli()
        .args([
            "run",
            "detection-postprocess",
            "--run-id",
            "r1",
            "--output-dir",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(first.status.success());
    let run_dir = out.path().join("detection-postprocess/runs/r1");
    let before = std::fs::read(run_dir.join("manifest.yaml")).unwrap();
    let trace_before = std::fs::read(run_dir.join("trace.json")).unwrap();

    let mut command = profile_cli();
    command
        .args([
            "run",
            "detection-postprocess",
            "--iterations",
            "2",
            "--run-id",
            "r1",
            "--force",
        ])
        .arg("--output-dir")
        .arg(out.path());
    limit_file_size(&mut command, 1024);
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("passes: 2 measured passes"), "{stdout}");
    assert!(stdout.contains("manifest: not written (below)"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "error: cannot write {}: File too large (os error 27); nothing of this run was written: the summary above is all that remains of it",
            run_dir.join("manifest.yaml").display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(run_dir.join("manifest.yaml")).unwrap(),
        before
    );
    assert_eq!(
        std::fs::read(run_dir.join("trace.json")).unwrap(),
        trace_before
    );
    assert_eq!(
        files_under(out.path()),
        [
            "detection-postprocess/runs/r1/manifest.yaml",
            "detection-postprocess/runs/r1/report.html",
            "detection-postprocess/runs/r1/samples.bin",
            "detection-postprocess/runs/r1/trace.json",
            // The store the first run went into.
            "history.sqlite"
        ]
    );
}

/// `--force` over a complete run, where the new run's manifest fits but its
/// trace does not: the earlier run stays as it was, not replaced by one
/// without its trace.
#[test]
fn a_forced_run_written_in_part_does_not_replace_the_earlier_run() {
    let out = tempfile::tempdir().unwrap();
    let first = profile_cli()
        .args([
            "run",
            "detection-postprocess",
            "--run-id",
            "r1",
            "--output-dir",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(first.status.success());
    let run_dir = out.path().join("detection-postprocess/runs/r1");
    let before: Vec<(String, Vec<u8>)> = files_under(&run_dir)
        .into_iter()
        .map(|f| (f.clone(), std::fs::read(run_dir.join(&f)).unwrap()))
        .collect();

    let mut command = profile_cli();
    command
        .args(ARGS)
        .arg("--force")
        .arg("--output-dir")
        .arg(out.path());
    limit_file_size(&mut command, 16 * 1024);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: cannot write {}: File too large (os error 27); the earlier run in {} is kept as it was, not replaced by an incomplete one",
            run_dir.join("trace.json").display(),
            run_dir.display()
        )),
        "{stderr}"
    );
    let after: Vec<(String, Vec<u8>)> = files_under(&run_dir)
        .into_iter()
        .map(|f| (f.clone(), std::fs::read(run_dir.join(&f)).unwrap()))
        .collect();
    assert_eq!(after, before, "the earlier run, byte for byte");
    assert_eq!(
        files_under(&out.path().join("detection-postprocess/runs")).len(),
        before.len(),
        "no staging directory left"
    );
}

/// A load whose record does not fit says which file, exits 1 and leaves
/// nothing: no run directory whose id is then taken, no partial record or
/// staging directory; the same id runs once there is room. A record that
/// fits with a page that does not keeps the record, whole.
#[test]
fn a_load_that_cannot_write_its_record_leaves_nothing_and_its_id_free() {
    let out = tempfile::tempdir().unwrap();
    let load = [
        "load",
        "detection-postprocess",
        "--queries",
        "20",
        "--warmup",
        "0",
        "--run-id",
        "l1",
    ];
    let mut command = profile_cli();
    command.args(load).arg("--output-dir").arg(out.path());
    limit_file_size(&mut command, 1024);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let run_dir = out.path().join("detection-postprocess/runs/l1");
    assert!(
        stderr.contains(&format!(
            "error: the record was not written: {}: File too large (os error 27)",
            run_dir.join("load.yaml").display()
        )),
        "{stderr}"
    );
    assert_eq!(
        files_under(out.path()),
        Vec::<String>::new(),
        "nothing is left"
    );

    // The record fits; the page does not. Their sizes, from the same load
    // into a directory whose path is as long.
    let sized = tempfile::tempdir().unwrap();
    let unlimited = profile_cli()
        .args(load)
        .arg("--output-dir")
        .arg(sized.path())
        .output()
        .unwrap();
    assert_eq!(unlimited.status.code(), Some(0));
    let size = |file: &str| {
        std::fs::metadata(
            sized
                .path()
                .join("detection-postprocess/runs/l1")
                .join(file),
        )
        .unwrap()
        .len()
    };
    let (record, page) = (size("load.yaml"), size("load.html"));
    assert!(page > record + 400, "{record} {page}");
    let mut command = profile_cli();
    command.args(load).arg("--output-dir").arg(out.path());
    limit_file_size(&mut command, (record + page) / 2);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: {}: File too large (os error 27)",
            run_dir.join("load.html").display()
        )),
        "{stderr}"
    );
    assert_eq!(
        files_under(out.path()),
        ["detection-postprocess/runs/l1/load.yaml"]
    );
    let record: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(run_dir.join("load.yaml")).unwrap()).unwrap();
    assert_eq!(record["status"], "completed");

    // With room, the id is free again once the partial one is replaced.
    let again = profile_cli()
        .args(load)
        .args(["--force", "--output-dir"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        files_under(out.path()),
        [
            "detection-postprocess/runs/l1/load.html",
            "detection-postprocess/runs/l1/load.yaml",
            // The store the load went into.
            "history.sqlite"
        ]
    );
}
