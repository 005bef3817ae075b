//! `profile-cli` built with the `tch` feature: the libtorch targets end to
//! end, with no library path set by hand.

use std::process::Command;

use serde_yaml::Value;

fn profile_cli() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    // The binary finds libtorch through its rpath, not the environment.
    command.env_remove("LD_LIBRARY_PATH");
    command
}

#[test]
fn smoke_tensor_gives_the_reference_numbers() {
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("smoke.yaml");
    std::fs::write(
        &config,
        "target: {name: smoke-tensor}\ndata_source: {name: dummy, record_count: 2}\nseed: 0\n",
    )
    .unwrap();
    let events = out.path().join("events.tsv");
    let mut command = profile_cli();
    command.args([
        "run",
        "--config",
        config.to_str().unwrap(),
        "--run-id",
        "smoke",
    ]);
    nvtx_recorder::attach(&mut command, &events);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let manifest: Value = serde_yaml::from_str(
        &std::fs::read_to_string(out.path().join("runs/smoke/manifest.yaml")).unwrap(),
    )
    .unwrap();
    let sums: Vec<f64> = (0..2)
        .map(|i| {
            manifest["output_summaries"][i]["summary"]["sum"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(sums, [240.0, 272.0]);
    assert_eq!(
        manifest["output_summaries"][0]["summary"]["dtype"],
        "float32"
    );
    assert_eq!(manifest["backend"]["name"], "libtorch");
    assert!(manifest["backend"]["libtorch_version"]
        .as_str()
        .unwrap()
        .starts_with("2.11.0"));
    assert_eq!(manifest["backend"]["cuda_available"], false);
    assert!(manifest["timings"]["host_timing_note"]
        .as_str()
        .unwrap()
        .contains("on the CPU"));

    let forest =
        nvtx_recorder::range_forest(&nvtx_recorder::read_events(&events).unwrap()).unwrap();
    let main_thread = forest
        .values()
        .find(|ranges| ranges.iter().any(|r| r.name == "profile-target"))
        .unwrap();
    let call = "smoke multiply\nsmoke reduction\n";
    let expected = format!("{call}{call}profile-target\n  iteration 0\n    smoke multiply\n    smoke reduction\n    smoke multiply\n    smoke reduction\n");
    assert_eq!(nvtx_recorder::render_tree(main_thread), expected);
}

#[test]
fn cuda_without_a_gpu_is_refused_before_any_work() {
    let out = tempfile::tempdir().unwrap();
    let output = profile_cli()
        .args([
            "run",
            "smoke-tensor",
            "--device",
            "cuda",
            "--output-dir",
            out.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("error: device `cuda:0`: libtorch sees no CUDA device"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn list_shows_the_tensor_targets() {
    let output = profile_cli().arg("list").output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    for name in ["smoke-tensor", "tiny-cnn", "torchscript", "matmul-repeat"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} missing:\n{stdout}"
        );
    }
}

/// A copy of the binary outside the repository still finds libtorch: the
/// rpath holds the absolute libtorch directory it was built against, not only
/// entries relative to the repository's `target/` (what a `CARGO_TARGET_DIR`
/// elsewhere or `cargo install` gives).
#[test]
fn a_copy_outside_the_repository_starts_without_a_library_path() {
    let elsewhere = tempfile::tempdir().unwrap();
    let repository = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap();
    assert!(!elsewhere
        .path()
        .canonicalize()
        .unwrap()
        .starts_with(&repository));
    let copy = elsewhere.path().join("bin/profile-cli");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    // Copied by a child process: a descriptor open for writing on the
    // copy, inherited by a process another test forks meanwhile, would
    // make running it fail with "Text file busy".
    assert!(Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_profile-cli"))
        .arg(&copy)
        .status()
        .unwrap()
        .success());

    let output = Command::new(&copy)
        .arg("list")
        .env("LD_LIBRARY_PATH", "")
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.lines().any(|l| l.starts_with("smoke-tensor ")),
        "smoke-tensor missing:\n{stdout}"
    );
}

/// A TorchScript config without its module is bad configuration: exit 2,
/// the file and key named, nothing written.
#[test]
fn torchscript_without_a_module_is_a_config_error() {
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("torchscript.yaml");
    std::fs::write(&config, "target: {name: torchscript}\n").unwrap();
    let missing = out.path().join("missing.yaml");
    std::fs::write(
        &missing,
        "target: {name: torchscript, parameters: {module: /no/such/model.pt}}\n",
    )
    .unwrap();
    for (file, expected) in [
        (
            &config,
            ": target.parameters: missing field `module`".to_owned(),
        ),
        // With the position of the value in the file.
        (
            &missing,
            ":1:50: target.parameters.module: cannot load TorchScript module /no/such/model.pt"
                .to_owned(),
        ),
    ] {
        let output = profile_cli()
            .args(["run", "--config", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.starts_with(&format!("error: {}{expected}", file.display())),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "only the two configs: no runs/ beside them");
}

/// `matmul-repeat` on the CPU: its three ranges, each around the number of
/// products it says, and no GPU timing (`auto` on the CPU says nothing;
/// `on` is refused there, tch build or not).
#[test]
fn matmul_repeat_runs_its_ranges_and_gpu_timing_stays_off_on_the_cpu() {
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("matmul.yaml");
    std::fs::write(
        &config,
        "target: {name: matmul-repeat, parameters: {size: 32, repeats: 3}}\nwarmup: 1\niterations: 4\n",
    )
    .unwrap();
    let output = profile_cli()
        .args([
            "run",
            "--config",
            config.to_str().unwrap(),
            "--run-id",
            "m",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("gpu:"), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let ranges = document["timings"]["ranges"].as_array().unwrap();
    let names: Vec<&str> = ranges.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for name in ["matmul k", "matmul 2k", "matmul k, synchronized"] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
    assert!(ranges
        .iter()
        .all(|r| r["count"] == 4 && r.get("gpu").is_none()));
    assert!(document["timings"].get("gpu").is_none());
    let manifest = std::fs::read_to_string(out.path().join("runs/m/manifest.yaml")).unwrap();
    assert!(manifest.contains("gpu_timing: auto"), "{manifest}");

    let refused = profile_cli()
        .args([
            "run",
            "--config",
            config.to_str().unwrap(),
            "--gpu-timing",
            "on",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains(
        "error: command line: --gpu-timing: `on` needs a CUDA device, and the device is `cpu`"
    ));
}
