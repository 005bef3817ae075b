//! The built `profile-cli`: the targets it links and its main job.

use std::path::Path;
use std::process::Command;

fn profile_cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn list_shows_the_built_in_targets_and_the_snippets() {
    let output = profile_cli(&["list"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let snippet = include_str!("../../../inference_profiling/snippets/example_candidate/target.rs");
    let line = snippet
        .lines()
        .position(|l| l.starts_with("impl ProfileTarget for ExampleCandidate"))
        .unwrap()
        + 1;
    let place = format!("inference_profiling/snippets/example_candidate/target.rs:{line}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("example-candidate "))
        .expect("the snippet is listed");
    assert!(row.contains(&place), "{row}");
    for name in [
        "detection-pipeline",
        "detection-postprocess",
        "letterbox-preprocess",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} listed"));
        assert!(row.contains("examples/src/targets.rs:"), "{row}");
    }
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_main_job_runs_on_the_embedded_default() {
    let out = tempfile::tempdir().unwrap();
    let output = profile_cli(&[
        "run",
        "detection-pipeline",
        "--run-id",
        "main",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("on dummy with built-in defaults: device cpu, warmup 1, iterations 1"),
        "{stdout}"
    );
    let manifest_path = out
        .path()
        .join("detection-pipeline/runs/main/manifest.yaml");
    assert!(
        stdout.contains(&format!("manifest: {}", manifest_path.display())),
        "{stdout}"
    );
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    assert_eq!(manifest["status"], "completed");
    assert_eq!(
        manifest["target"]["source"]
            .as_str()
            .map(|s| s.starts_with("examples/src/targets.rs:")),
        Some(true)
    );
    assert_eq!(manifest["record_ids"][0], "dummy-0");
    assert!(Path::new(manifest["expected_trace_path"].as_str().unwrap())
        .ends_with("detection-pipeline/runs/main/trace.nsys-rep"));
}

#[test]
fn help_reads_as_the_manual() {
    let output = profile_cli(&["run", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for option in [
        "--config",
        "--data-source",
        "--device",
        "--warmup",
        "--iterations",
        "--capture-range",
        "--record-loading",
        "--seed",
        "--run-id",
        "--output-dir",
        "--print-nsys-command",
    ] {
        assert!(help.contains(option), "{option} missing from run --help");
    }
    assert_eq!(profile_cli(&["frobnicate"]).status.code(), Some(2));
}

/// The profiling command inside what `--print-nsys-command` printed: from
/// the line naming the binary to the `&&` of the analysis after it,
/// continuations joined.
fn printed_profile_command(printed: &str) -> String {
    let lines: Vec<&str> = printed.lines().collect();
    let start = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .starts_with(env!("CARGO_BIN_EXE_profile-cli"))
        })
        .expect("the printed command runs profile-cli");
    lines[start..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with("&&"))
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Following docs/guide/snippets.md: a smoke run, then the command for
/// Nsight with the same run id. Printing looks at no run directory, carries
/// `--force` when given, and the profiling part of what it prints succeeds
/// as printed.
#[test]
fn the_printed_nsys_command_runs_as_printed() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let smoke = [
        "run",
        "detection-postprocess",
        "--output-dir",
        dir,
        "--run-id",
        "smoke",
    ];
    assert!(profile_cli(&smoke).status.success());
    let manifest = out
        .path()
        .join("detection-postprocess/runs/smoke/manifest.yaml");
    let first = std::fs::read_to_string(&manifest).unwrap();

    // Without --force: printed all the same, with a warning that it would fail.
    let output = profile_cli(&[&smoke[..], &["--print-nsys-command"]].concat());
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "warning: run id `smoke` is already used: {} exists; choose another --run-id, or replace it with --force; the command above fails until then\n",
            out.path().join("detection-postprocess/runs/smoke").display()
        )
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    let command = printed_profile_command(&printed);
    assert!(!command.contains("--force"), "{command}");

    let output = profile_cli(&[&smoke[..], &["--force", "--print-nsys-command"]].concat());
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stderr.is_empty());
    let printed = String::from_utf8(output.stdout).unwrap();
    let command = printed_profile_command(&printed);
    assert!(command.ends_with("--run-id smoke --force"), "{command}");
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap(),
        first,
        "printing wrote nothing"
    );

    let run = Command::new("sh").args(["-c", &command]).output().unwrap();
    assert!(
        run.status.success(),
        "{command}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let replaced = std::fs::read_to_string(&manifest).unwrap();
    assert_ne!(
        replaced, first,
        "the printed command replaced the smoke run"
    );
    let value: serde_yaml::Value = serde_yaml::from_str(&replaced).unwrap();
    assert_eq!(value["status"], "completed");
    assert!(value["command_line"]
        .as_str()
        .unwrap()
        .ends_with("--run-id smoke --force"));
}

/// In a build without `tch`, its targets are named with the feature that
/// builds them in, not as unknown, each feature's in one line (`ort`'s too
/// in a build without it).
#[cfg(not(feature = "tch"))]
#[test]
fn a_target_of_a_missing_feature_says_how_to_build_it() {
    let output = profile_cli(&["run", "smoke-tensor"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "error: target `smoke-tensor` is not in this build: it needs the `tch` feature; build with it: \
         `scripts/profile --features tch run smoke-tensor` (or `cargo build --release -p profiling-cli --features tch`)\n"
    );
    let list = String::from_utf8(profile_cli(&["list"]).stdout).unwrap();
    let mut expected = vec![
        "not in this build, need the `tch` feature (scripts/profile --features tch list): matmul-repeat, smoke-tensor, tiny-cnn, torchscript",
    ];
    if cfg!(not(feature = "ort")) {
        expected.push(
            "not in this build, need the `ort` feature (scripts/profile --features ort list): ocr-det, ocr-rec",
        );
    }
    // The last lines, from the end.
    let last: Vec<&str> = list.lines().rev().take(expected.len()).collect();
    assert_eq!(last, expected);
}

/// `cargo tree --locked ARGS` of this workspace: what it prints, one
/// package a line. Not `--offline`: where the cargo cache has never held a
/// package the tree names (the `tch` feature's, before any `tch` build),
/// cargo fetches it from the registry as a first build would.
fn cargo_tree(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let tree = Command::new(&cargo)
        .args(["tree", "--locked", "--prefix", "none"])
        .args(args)
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&tree.stderr)
    );
    String::from_utf8(tree.stdout).unwrap()
}

/// GPU timing adds no system dependency: the default build has no CUDA
/// binding at all, and the CUDA events of the `tch` build load the driver
/// at run time (cudarc's dynamic loading), so neither links a CUDA library.
#[test]
fn the_default_build_holds_no_cuda_binding_and_links_no_cuda_library() {
    let tree = cargo_tree(&[
        "-p",
        "profiling-cli",
        "-e",
        "normal,build",
        "--format",
        "{p}",
    ]);
    assert!(
        tree.lines().any(|l| l.starts_with("profiling-core ")),
        "{tree}"
    );
    for crate_name in ["cudarc ", "tch ", "torch-sys ", "ort ", "ort-sys "] {
        assert!(
            !tree.lines().any(|l| l.starts_with(crate_name)),
            "the default build depends on {crate_name}:\n{tree}"
        );
    }
    // With the tch feature, cudarc is there, loading the driver at run time.
    let tch_tree = cargo_tree(&[
        "-p",
        "profiling-core",
        "--features",
        "tch",
        "-e",
        "features",
        "-i",
        "cudarc",
    ]);
    assert!(
        tch_tree.contains("cudarc feature \"dynamic-loading\""),
        "{tch_tree}"
    );
    assert!(
        !tch_tree.contains("cudarc feature \"dynamic-linking\""),
        "{tch_tree}"
    );

    // With the ort feature, ONNX Runtime is opened at run time: nothing
    // downloaded or linked when building.
    let ort_tree = cargo_tree(&[
        "-p",
        "profiling-core",
        "--features",
        "ort",
        "-e",
        "features",
        "-i",
        "ort-sys",
    ]);
    assert!(
        ort_tree.contains("ort-sys feature \"disable-linking\""),
        "{ort_tree}"
    );
    for unwanted in ["download-binaries", "copy-dylibs", "\"ureq"] {
        assert!(!ort_tree.contains(unwanted), "{unwanted}:\n{ort_tree}");
    }

    // What the dynamic linker loads for the default binary.
    if cfg!(not(feature = "tch")) {
        if let Ok(ldd) = Command::new("ldd")
            .arg(env!("CARGO_BIN_EXE_profile-cli"))
            .output()
        {
            let libraries = String::from_utf8_lossy(&ldd.stdout).into_owned();
            assert!(libraries.contains("libc.so"), "{libraries}");
            for cuda in [
                "libcuda",
                "libcudart",
                "libnvrtc",
                "libtorch",
                "libonnxruntime",
            ] {
                assert!(!libraries.contains(cuda), "links {cuda}:\n{libraries}");
            }
        }
    }
}

/// A reader that goes away (`| head -2`) stops the printing, not the run:
/// the manifest, the page and the baseline are written, and the exit code
/// is the run's.
#[test]
fn a_closed_stdout_is_not_a_failed_run() {
    use std::process::Stdio;
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args([
            "run",
            "detection-postprocess",
            "--run-id",
            "piped",
            "--save-baseline",
            "b1",
            "--output-dir",
        ])
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reading end closed before the first line is written.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    let profile = out.path().join("detection-postprocess");
    for file in [
        "runs/piped/manifest.yaml",
        "runs/piped/report.html",
        "baselines/b1/manifest.yaml",
    ] {
        assert!(profile.join(file).is_file(), "{file} missing: {stderr}");
    }
}

/// Started outside the workspace it was built from, with no output
/// directory given, the binary puts runs in the current directory (and
/// finds them there), never in the tree it was built in.
#[test]
fn outside_the_workspace_runs_go_to_the_current_directory() {
    let here = tempfile::tempdir().unwrap();
    let built_in = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../inference_profiling/snippets/detection-postprocess/runs/outside-test");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_profile-cli"))
            .args(args)
            .current_dir(here.path())
            .output()
            .unwrap()
    };
    let output = run(&["run", "detection-postprocess", "--run-id", "outside-test"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run_dir = here
        .path()
        .canonicalize()
        .unwrap()
        .join("detection-postprocess/runs/outside-test");
    assert!(run_dir.join("manifest.yaml").is_file(), "{stdout}");
    assert!(
        !built_in.exists(),
        "a run in the tree the binary was built in"
    );
    let listed = run(&["report", "detection-postprocess@outside-test"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(run_dir.join("report.html").is_file());
}

/// Two runs with one run id at once: the second is refused at once, naming
/// the process that holds the id; once that one is gone (killed, even), the
/// id is free again.
#[test]
fn a_second_run_with_the_same_id_is_refused_while_the_first_runs() {
    let out = tempfile::tempdir().unwrap();
    let start = |iterations: &str| {
        Command::new(env!("CARGO_BIN_EXE_profile-cli"))
            .args(["run", "detection-postprocess", "--iterations", iterations])
            .args(["--run-id", "same", "--output-dir"])
            .arg(out.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = start("100000000");
    let claim = out.path().join("detection-postprocess/runs/.same.claim");
    // The claim is taken before the first pass: wait for it, however long.
    while std::fs::read_to_string(&claim).map_or(true, |pid| pid != first.id().to_string()) {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first run ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let second = start("1").wait_with_output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&second.stderr),
        format!(
            "error: run id `same` is in use: process {} is running it now ({} is locked); choose another --run-id, or wait for it\n",
            first.id(),
            claim.display()
        )
    );
    first.kill().unwrap();
    first.wait().unwrap();
    let third = start("1").wait_with_output().unwrap();
    assert_eq!(
        third.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert!(out
        .path()
        .join("detection-postprocess/runs/same/manifest.yaml")
        .is_file());
    assert!(!claim.exists());
}

fn profile_cli_in(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    command.args(args).current_dir(dir);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// `completions SHELL` prints a script the shell itself loads: bash then
/// knows how to complete `profile-cli`, down to a command's options.
#[test]
fn completions_are_scripts_the_shells_load() {
    let bash = profile_cli(&["completions", "bash"]);
    assert!(bash.status.success());
    let script = String::from_utf8(bash.stdout).unwrap();
    assert!(script.contains("--nsys-arg"), "the run command's options");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profile-cli.bash");
    std::fs::write(&file, &script).unwrap();
    let loaded = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p profile-cli && f=$(complete -p profile-cli | sed -E 's/.* -F ([^ ]+) .*/\\1/') && COMP_WORDS=(profile-cli ru); COMP_CWORD=1; COMP_LINE='profile-cli ru'; COMP_POINT=14; \"$f\" profile-cli ru profile-cli && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        ))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        loaded.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert!(
        said.contains(" -F ") && said.contains(" profile-cli\n"),
        "{said}"
    );
    let offered: Vec<&str> = said.lines().skip(1).collect();
    assert!(
        offered.contains(&"run") && offered.contains(&"runs"),
        "{said}"
    );
    for (shell, mark) in [
        ("zsh", "#compdef profile-cli"),
        ("fish", "complete -c profile-cli"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let output = profile_cli(&["completions", shell]);
        assert!(output.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains(mark),
            "{shell}"
        );
    }
    let unknown = profile_cli(&["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));
}

/// `man` prints a page `man` renders; `man --output DIR` writes one per
/// command.
#[test]
fn man_pages_render_with_man() {
    let page = profile_cli(&["man"]);
    assert!(page.status.success());
    let roff = String::from_utf8(page.stdout).unwrap();
    assert!(
        roff.starts_with(".ie \\n(.g .ds Aq") || roff.contains(".TH profile-cli 1"),
        "{roff}"
    );
    let dir = tempfile::tempdir().unwrap();
    let written = profile_cli(&["man", "--output", dir.path().to_str().unwrap()]);
    assert!(written.status.success());
    assert!(String::from_utf8_lossy(&written.stdout).starts_with("wrote "));
    let run_page = dir.path().join("profile-cli-run.1");
    assert!(dir.path().join("profile-cli.1").is_file());
    assert!(
        !dir.path().join("profile-cli-step.1").exists(),
        "hidden commands have none"
    );
    let Ok(rendered) = Command::new("man")
        .arg("-l")
        .arg(&run_page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
    else {
        eprintln!("no man here: the page was written, not rendered");
        return;
    };
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    assert!(text.contains("profile-cli-run"), "{text}");
    assert!(text.contains("--print-nsys-command"), "{text}");
}

/// The global `-q` leaves the advice out, wherever it stands on the line;
/// `--color` is taken before the command as after it.
#[test]
fn quiet_and_color_are_options_of_every_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[workspace]\nmembers = []\nresolver = \"2\"\n",
    )
    .unwrap();
    let said = profile_cli_in(dir.path(), &["list"], &[]);
    assert!(said.status.success());
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(
        stderr.starts_with("note: ") && stderr.contains("has no profiling crate"),
        "{stderr}"
    );
    for quiet in [&["-q", "list"][..], &["list", "--quiet"][..]] {
        let quiet = profile_cli_in(dir.path(), quiet, &[]);
        assert!(quiet.status.success());
        assert!(
            quiet.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&quiet.stderr)
        );
        assert_eq!(quiet.stdout, said.stdout);
    }
    let both = profile_cli_in(dir.path(), &["-q", "-v", "list"], &[]);
    assert_eq!(both.status.code(), Some(2));
    // Colour forced on clap's own help, and off.
    let always = profile_cli(&["--color", "always", "run", "--help"]);
    assert!(String::from_utf8_lossy(&always.stdout).contains("\u{1b}["));
    let never = profile_cli(&["run", "--help", "--color=never"]);
    assert!(!String::from_utf8_lossy(&never.stdout).contains("\u{1b}["));
}

/// `PROFILING_RUNS_DIR` is where runs and the history store go, and where
/// the commands that read runs look, when nothing on the line says.
#[test]
fn the_runs_directory_variable_takes_the_runs_and_the_store() {
    let runs = tempfile::tempdir().unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = [("PROFILING_RUNS_DIR", runs.path())];
    for id in ["a", "b"] {
        let ran = profile_cli_in(
            here,
            &[
                "run",
                "detection-postprocess",
                "--run-id",
                id,
                "--no-report",
            ],
            &env,
        );
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        assert!(runs
            .path()
            .join(format!("detection-postprocess/runs/{id}/manifest.yaml"))
            .is_file());
    }
    assert!(runs.path().join("history.sqlite").is_file());
    let compared = profile_cli_in(
        here,
        &[
            "compare",
            "detection-postprocess@a",
            "detection-postprocess@b",
            "--json",
        ],
        &env,
    );
    assert!(
        compared.status.success(),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let history = profile_cli_in(here, &["history", "detection-postprocess", "--json"], &env);
    assert!(
        history.status.success(),
        "{}",
        String::from_utf8_lossy(&history.stderr)
    );
    // --output-dir still wins.
    let other = tempfile::tempdir().unwrap();
    let ran = profile_cli_in(
        here,
        &[
            "run",
            "detection-postprocess",
            "--run-id",
            "c",
            "--no-report",
            "--output-dir",
            other.path().to_str().unwrap(),
        ],
        &env,
    );
    assert!(ran.status.success());
    assert!(other.path().join("detection-postprocess/runs/c").is_dir());
    assert!(!runs.path().join("detection-postprocess/runs/c").exists());
}
