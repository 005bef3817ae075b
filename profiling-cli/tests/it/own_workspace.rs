//! Use in one's own workspace, end to end, as the installed `profile-cli`
//! does it: `init`, `new` on the workspace's own crate (a plain function
//! and a generic one), then `list` and `run`, which build and run the
//! workspace's own profiling binary.
//!
//! The workspace lives under `target/own-workspace/` (removed after) and
//! builds in `target/snippet-check/`, which the other cargo-running test
//! shares by turns (`snippet_check_build`), so later runs rebuild little.

use std::process::Command;

use crate::common::{
    nested_cargo, profile_cli_in, snippet_check_build, workspace_root, RemoveOnDrop,
};

const APP_LIB: &str = "/// Doubles every value.\npub fn double(values: &[f32]) -> Vec<f32> {\n    values.iter().map(|v| v * 2.0).collect()\n}\n\n/// The first `N` values.\npub fn head<S: Copy, const N: usize>(values: &[S]) -> [S; N] {\n    std::array::from_fn(|i| values[i])\n}\n";

#[test]
fn init_new_list_and_run_in_a_workspace_of_ones_own() {
    let _build = snippet_check_build();
    let place = RemoveOnDrop(workspace_root().join("target/own-workspace"));
    let _ = std::fs::remove_dir_all(&place.0);
    let ws = place.0.join("ws");
    std::fs::create_dir_all(ws.join("app/src")).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\"]\n",
    )
    .unwrap();
    // A `[profile]` of its own, as published crates have: cargo warns on
    // every command in the workspace that it is ignored there.
    std::fs::write(
        ws.join("app/Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nmimalloc = { version = \"0.1\", default-features = false }\n\n[profile.release]\nopt-level = 3\n",
    )
    .unwrap();
    std::fs::write(ws.join("app/src/lib.rs"), APP_LIB).unwrap();
    // The service's binary runs on mimalloc, as many do.
    std::fs::write(
        ws.join("app/src/main.rs"),
        "use mimalloc::MiMalloc;\n\n#[global_allocator]\nstatic GLOBAL: MiMalloc = MiMalloc;\n\nfn main() {\n    println!(\"{:?}\", app::double(&[1.0]));\n}\n",
    )
    .unwrap();
    // The versions this workspace was built and tested with: without a
    // lock file cargo would take the newest releases of the registry that
    // day, and the test would depend on the date (and on the network for
    // crates the cargo cache lacks). cargo drops what is not used.
    std::fs::copy(workspace_root().join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    // A repository with no commit yet.
    let git_init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(git_init.success());

    // Before init: the installed binary's own targets, and it says so.
    let before = profile_cli_in(&ws, &["list"]);
    assert_eq!(before.code, Some(0), "{before}");
    assert!(
        before.stderr.starts_with(&format!(
            "note: {} has no profiling crate (`profile-cli init` makes one): these are the targets built into this binary",
            ws.display()
        )),
        "{before}"
    );
    assert!(before.stdout.contains("example-candidate "), "{before}");

    let init = profile_cli_in(&ws.join("app"), &["init"]);
    assert_eq!(init.code, Some(0), "{init}");

    let double = profile_cli_in(&ws, &["new", "dbl", "--from", "app/src/lib.rs::double"]);
    assert_eq!(double.code, Some(0), "{double}");
    // The profiling binary counts over the allocator production runs on.
    assert!(
        double.stdout.contains("  allocator: `app` runs on `mimalloc::MiMalloc` (app/src/main.rs:3): inference_profiling/src/main.rs counts allocations over it (`mimalloc = { version = \"0.1\", default-features = false }` added to inference_profiling/Cargo.toml), so the snippets are timed on it and memory per range still counts"),
        "{double}"
    );
    let main = std::fs::read_to_string(ws.join("inference_profiling/src/main.rs")).unwrap();
    assert!(
        main.contains("#[global_allocator]\nstatic ALLOCATOR: profiling_core::memory::CountingAllocator<mimalloc::MiMalloc> =\n    profiling_core::memory::CountingAllocator::new(mimalloc::MiMalloc);\n"),
        "{main}"
    );
    assert!(
        double
            .stdout
            .contains("  added `app = { path = \"../app\" }` to inference_profiling/Cargo.toml"),
        "{double}"
    );
    assert!(
        double
            .stdout
            .contains("  parity: the copy computes what production computes on 1 record(s)"),
        "{double}"
    );
    let head = profile_cli_in(
        &ws,
        &[
            "new",
            "head4",
            "--from",
            "app/src/lib.rs::head",
            "--type-args",
            "S=f32,N=4",
        ],
    );
    assert_eq!(head.code, Some(0), "{head}");
    // What `new` writes names the commands that work here: the installed
    // `profile-cli`, which runs the workspace's own `profile` binary.
    let config =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/dbl/config.yaml")).unwrap();
    assert!(
        config.contains("#   profile-cli run --config inference_profiling/snippets/dbl/config.yaml --run-id smoke\n"),
        "{config}"
    );
    let dbl_readme =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/dbl/README.md")).unwrap();
    for text in [&config, &dbl_readme] {
        assert!(!text.contains("scripts/profile"), "{text}");
        assert!(!text.contains("profile-cli \\"), "{text}");
    }
    assert!(
        dbl_readme.contains("```sh\nprofile-cli run \\\n  --config inference_profiling/snippets/dbl/config.yaml \\\n  --run-id smoke\n```"),
        "{dbl_readme}"
    );
    assert!(
        dbl_readme.contains("\n  <repo>/target/release/profile run dbl \\\n"),
        "the binary --print-nsys-command names: {dbl_readme}"
    );
    let readme =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/head4/README.md")).unwrap();
    assert!(
        readme.contains("| source file | `app/src/lib.rs` |"),
        "{readme}"
    );
    assert!(
        readme.contains(
            "| made by | `profile-cli new head4 --from app/src/lib.rs::head --type-args S=f32,N=4` |"
        ),
        "provenance relative to the workspace: {readme}"
    );
    assert!(!readme.contains(&ws.display().to_string()), "{readme}");

    // The installed binary builds and runs the workspace's own.
    let listed = profile_cli_in(&ws, &["list"]);
    assert_eq!(listed.code, Some(0), "{listed}");
    assert!(
        listed.stderr.contains("has its own profiling crate (inference_profiling): building and running its `profile` binary"),
        "{listed}"
    );
    assert!(listed.stderr.contains("profile-cli: running "), "{listed}");
    let names: Vec<&str> = listed
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["dbl", "head4"], "{listed}");
    assert!(
        listed
            .stdout
            .contains("inference_profiling/snippets/dbl/target.rs:"),
        "{listed}"
    );

    // Nothing to build: nothing of cargo's (no compile lines, no warning
    // about the app's own profile section).
    let again = profile_cli_in(&ws, &["list"]);
    assert_eq!(again.code, Some(0), "{again}");
    let lines: Vec<&str> = again.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{again}");
    assert!(lines[0].starts_with("profile-cli: "), "{again}");
    assert!(lines[1].starts_with("profile-cli: running "), "{again}");

    // A warning in one snippet is shown on a run of that snippet only.
    let dbl_target = ws.join("inference_profiling/snippets/dbl/target.rs");
    let mut text = std::fs::read_to_string(&dbl_target).unwrap();
    text.push_str("\nfn dbl_helper_never_called() {}\n");
    std::fs::write(&dbl_target, text).unwrap();

    let elsewhere = tempfile::tempdir().unwrap();
    let ran = profile_cli_in(
        elsewhere.path(),
        &[
            "--workspace",
            ws.to_str().unwrap(),
            "run",
            "head4",
            "--run-id",
            "first",
            "--memory",
        ],
    );
    assert_eq!(ran.code, Some(0), "{ran}");
    assert!(!ran.stderr.contains("dbl_helper_never_called"), "{ran}");
    assert!(
        ran.stderr.contains("1 warning from other crates of "),
        "the other snippet's warning, counted: {ran}"
    );
    let manifest: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            ws.join("inference_profiling/snippets/head4/runs/first/manifest.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["git_commit"], serde_yaml::Value::Null);
    assert_eq!(manifest["git_note"], "a git repository with no commit yet");
    // The run went into the workspace's history store, which `history`
    // run there reads (with no commit yet, the run is its own column).
    assert!(ws.join("inference_profiling/history.sqlite").is_file());
    let history = profile_cli_in(&ws, &["history", "head4"]);
    assert_eq!(history.code, Some(0), "{history}");
    assert!(
        history
            .stdout
            .starts_with("head4: p50 per commit; machine ")
            && history
                .stdout
                .lines()
                .nth(1)
                .is_some_and(|l| l.ends_with(" first")),
        "{history}"
    );
    // The workspace's `profile` binary attributes memory: it installs the
    // counting allocator, over mimalloc.
    assert_eq!(manifest["allocator"], "mimalloc::MiMalloc");
    assert!(
        manifest["timings"]["memory"]["per_pass"]["allocations"].is_mapping(),
        "{:?}",
        manifest["timings"]["memory"]
    );
    // The page is the installed binary's, written once the workspace's had run.
    let first = ws.join("inference_profiling/snippets/head4/runs/first");
    assert!(first.join("report.html").is_file(), "{ran}");
    assert!(
        ran.stdout.contains("report: ") && ran.stdout.contains("report.html"),
        "{ran}"
    );

    // `load` runs in the workspace's binary, its snippet on worker
    // threads, and writes its record and page beside the snippet's runs.
    let loaded = profile_cli_in(
        &ws,
        &[
            "load",
            "head4",
            "--queries",
            "30",
            "--warmup",
            "1",
            "--run-id",
            "loaded",
        ],
    );
    assert_eq!(loaded.code, Some(0), "{loaded}");
    assert!(loaded.stderr.contains("profile-cli: running "), "{loaded}");
    let load_dir = ws.join("inference_profiling/snippets/head4/runs/loaded");
    let record: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(load_dir.join("load.yaml")).unwrap())
            .unwrap();
    assert_eq!(record["status"], "completed");
    assert_eq!(record["target"], "head4");
    assert_eq!(record["load"]["steps"][0]["queries"], 30);
    assert!(load_dir.join("load.html").is_file(), "{loaded}");

    // A baseline saved, then compared with, across the two binaries; and
    // `compare` finds PROFILE@RUN_ID where the workspace's binary says.
    let saved = profile_cli_in(
        &ws,
        &[
            "run",
            "head4",
            "--run-id",
            "second",
            "--save-baseline",
            "main",
        ],
    );
    assert_eq!(saved.code, Some(0), "{saved}");
    assert!(saved.stdout.contains("baseline `main` saved: "), "{saved}");
    let against = profile_cli_in(
        &ws,
        &[
            "run",
            "head4",
            "--run-id",
            "third",
            "--baseline",
            "main",
            "--json",
        ],
    );
    assert_eq!(against.code, Some(0), "{against}");
    let document: serde_json::Value = serde_json::from_str(against.stdout.trim()).unwrap();
    assert_eq!(document["status"], "completed", "{against}");
    assert!(document["comparison"].is_object(), "{against}");
    assert!(
        document["report_path"]
            .as_str()
            .is_some_and(|p| p.ends_with("runs/third/report.html")),
        "{against}"
    );
    let compared = profile_cli_in(&ws, &["compare", "head4@first", "head4@latest", "--json"]);
    assert_eq!(compared.code, Some(0), "{compared}");
    let document: serde_json::Value = serde_json::from_str(compared.stdout.trim()).unwrap();
    assert!(document["comparisons"][0]["rows"].is_array(), "{compared}");
    let listed_baselines = profile_cli_in(&ws, &["baselines", "head4"]);
    assert_eq!(listed_baselines.code, Some(0), "{listed_baselines}");
    assert!(
        listed_baselines.stdout.contains("head4  main"),
        "{listed_baselines}"
    );
    // A comparison option out of range is refused before anything is built or run.
    let refused = profile_cli_in(
        &ws,
        &[
            "run",
            "head4",
            "--run-id",
            "fourth",
            "--baseline",
            "main",
            "--noise-threshold",
            "2",
        ],
    );
    assert_eq!(refused.code, Some(2), "{refused}");
    assert!(refused.stderr.contains("--noise-threshold 2"), "{refused}");
    assert!(!ws
        .join("inference_profiling/snippets/head4/runs/fourth")
        .exists());

    // A SIGTERM sent to `profile-cli` while the workspace's binary runs is
    // passed on to that binary, which stops with SIGTERM's code; without
    // it, this process would wait out a hundred million passes.
    let mut long = nested_cargo(
        Command::new(env!("CARGO_BIN_EXE_profile-cli"))
            .args(["run", "head4", "--run-id", "stopped", "--warmup", "0"])
            .args(["--iterations", "100000000"])
            .current_dir(&ws),
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(long.stdout.take().unwrap()));
    // The binary says what it runs once it runs: the signal comes after.
    assert!(lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.starts_with("running `head4`")));
    // SAFETY: kill(2) on the pid of a child not yet waited for.
    unsafe {
        libc::kill(long.id() as libc::pid_t, libc::SIGTERM);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = long.wait().unwrap();
    // Ended by the signal itself, after its cleanup, as a shell expects.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM),
        "{rest:?}"
    );

    // The workspace's binary links what lists and runs targets, not what
    // reads runs back (proc macros aside: they run in the compiler).
    let tree = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "profiling-snippets",
            "-e",
            "normal,no-proc-macro",
        ])
        .args(["--prefix", "none", "--offline", "--manifest-path"])
        .arg(ws.join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let tree = String::from_utf8_lossy(&tree.stdout);
    for heavy in [
        "plotters ",
        "maud ",
        "rusqlite ",
        "statrs ",
        "syn ",
        "profiling-extract ",
        "profiling-analyze ",
        "profiling-compare ",
    ] {
        assert!(
            !tree.lines().any(|line| line.starts_with(heavy)),
            "{heavy}in the profiling binary's dependencies:\n{tree}"
        );
    }

    let own_warning = profile_cli_in(&ws, &["run", "dbl", "--run-id", "first"]);
    assert_eq!(own_warning.code, Some(0), "{own_warning}");
    assert!(
        own_warning.stderr.contains("dbl_helper_never_called"),
        "{own_warning}"
    );
    assert!(!own_warning.stderr.contains("Finished"), "{own_warning}");

    // --no-delegate: this binary's own targets.
    let own = profile_cli_in(&ws, &["--no-delegate", "list"]);
    assert_eq!(own.code, Some(0), "{own}");
    assert!(own.stdout.contains("example-candidate "), "{own}");
    assert!(!own.stderr.contains("profile-cli: running"), "{own}");

    // A variant beside a snippet, then the two measured in one process of
    // the workspace's binary, compared by the installed one.
    let variant = profile_cli_in(&ws, &["new", "dbl-fast", "--variant-of", "dbl"]);
    assert_eq!(variant.code, Some(0), "{variant}");
    assert!(
        variant
            .stdout
            .contains("profiling-snippets builds with inference_profiling/snippets/dbl_fast"),
        "{variant}"
    );
    assert!(variant.stdout.contains(": linked in\n"), "{variant}");
    assert!(
        variant
            .stdout
            .contains("next: edit inference_profiling/snippets/dbl_fast/target.rs, then: profile-cli ab dbl dbl-fast"),
        "{variant}"
    );
    let config =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/dbl_fast/config.yaml"))
            .unwrap();
    assert!(config.contains("\n  name: dbl-fast\n"), "{config}");
    assert!(
        config.contains("import_path: inference_profiling/snippets/dbl_fast/target.rs"),
        "{config}"
    );
    // A gate that cannot be read is refused here, before the workspace's
    // binary (which cannot read gates) builds or runs anything.
    let refused = profile_cli_in(&ws, &["ab", "dbl", "dbl-fast", "--accept", "p42<=1%"]);
    assert_eq!(refused.code, Some(2), "{refused}");
    assert!(
        refused
            .stderr
            .starts_with("error: --accept: gate 1 `p42<=1%`: unknown metric `p42`\n"),
        "{refused}"
    );
    let ab = profile_cli_in(
        &ws,
        &[
            "ab",
            "dbl",
            "dbl-fast",
            "--iterations",
            "12",
            "--block-passes",
            "1",
            "--ab-id",
            "pair",
            "--json",
            "--accept",
            "mean<=+1000%",
        ],
    );
    assert_eq!(ab.code, Some(0), "{ab}");
    let document: serde_json::Value = serde_json::from_str(&ab.stdout).unwrap();
    // The gates are judged by this `profile-cli`, which reads the pair back.
    assert_eq!(document["gates"]["verdict"], "accept", "{document}");
    let comparison = &document["comparisons"][0];
    assert_eq!(comparison["pairing"]["pairs"], 12, "{comparison}");
    assert_eq!(comparison["base"]["label"], "dbl@pair/base");
    assert_eq!(comparison["candidate"]["label"], "dbl-fast@pair/candidate");
    let pair = ws.join("inference_profiling/snippets/dbl/runs/pair");
    for file in [
        "paired.json",
        "report.html",
        "base/manifest.yaml",
        "candidate/manifest.yaml",
    ] {
        assert!(pair.join(file).is_file(), "{file}: {ab}");
    }

    // `ab --against REV`: the committed workspace against the working
    // tree, each built binary a process of its own. The base is built at
    // REV in a worktree beside the workspace, which is gone after.
    // Its first build starts from the workspace's release build: the
    // dependencies are not compiled again.
    let _ = std::fs::remove_dir_all(workspace_root().join("target/snippet-check/ab-against"));
    git_in(&ws, &["add", "-A"]);
    git_in(&ws, &["commit", "-q", "-m", "the snippets"]);
    let head = git_in(&ws, &["rev-parse", "HEAD"]);
    let target = ws.join("inference_profiling/snippets/dbl/target.rs");
    let source = std::fs::read_to_string(&target).unwrap();
    std::fs::write(&target, format!("{source}\n// changed, not committed\n")).unwrap();
    let against = |id: &str| {
        profile_cli_in(
            &ws,
            &[
                "ab",
                "dbl",
                "--against",
                "HEAD",
                "--iterations",
                "12",
                "--block-passes",
                "1",
                "--ab-id",
                id,
                "--json",
            ],
        )
    };
    let commits = against("commits");
    assert_eq!(commits.code, Some(0), "{commits}");
    assert!(
        commits.stderr.contains(&format!(
            "ab: building the base at HEAD ({}) in {}",
            &head[..12],
            place.0.join(".ws.ab-base").display()
        )),
        "{commits}"
    );
    assert!(
        commits.stderr.contains(&format!(
            "ab: the base is HEAD ({}), the candidate the working tree: each a process of its own, in lock-step",
            &head[..12]
        )),
        "{commits}"
    );
    assert!(
        commits.stderr.contains(&format!(
            "ab: the base's first build starts from the dependencies built in {}",
            workspace_root()
                .join("target/snippet-check/release")
                .display()
        )) && !commits.stderr.contains("Compiling profiling-core")
            && commits.stderr.contains("Compiling profiling-snippets"),
        "{commits}"
    );
    let document: serde_json::Value = serde_json::from_str(&commits.stdout).unwrap();
    let comparison = &document["comparisons"][0];
    assert_eq!(comparison["pairing"]["pairs"], 12, "{comparison}");
    assert_eq!(comparison["pairing"]["processes"], 2, "{comparison}");
    assert_eq!(
        comparison["differences"],
        serde_json::json!([]),
        "{comparison}"
    );
    let pair = ws.join("inference_profiling/snippets/dbl/runs/commits");
    let manifest = |side: &str| -> serde_yaml::Value {
        serde_yaml::from_str(
            &std::fs::read_to_string(pair.join(side).join("manifest.yaml")).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(manifest("base")["git_commit"], head.as_str());
    assert_eq!(manifest("base")["git_dirty"], false);
    assert_eq!(manifest("candidate")["git_commit"], head.as_str());
    assert_eq!(manifest("candidate")["git_dirty"], true);
    assert!(!place.0.join(".ws.ab-base").exists(), "{commits}");
    assert_eq!(git_in(&ws, &["worktree", "list"]).lines().count(), 1);
    // The second pair at the same revision builds nothing again.
    let again = against("again");
    assert_eq!(again.code, Some(0), "{again}");
    assert!(!again.stderr.contains("Compiling"), "{again}");
    // Until decided: each stage a run of the workspace's binary, judged
    // here; a gate no pair decides (parity) runs stages until the budget
    // is spent, under a default id the first stage chose.
    let staged = profile_cli_in(
        &ws,
        &[
            "ab",
            "dbl",
            "--against",
            "HEAD",
            "--iterations",
            "12",
            "--block-passes",
            "1",
            "--accept",
            "parity",
            "--until-decided",
            "--budget",
            "6s",
            "--resamples",
            "500",
            "--json",
        ],
    );
    assert_eq!(staged.code, Some(4), "{staged}");
    let document: serde_json::Value = serde_json::from_str(staged.stdout.trim()).unwrap();
    let stages: Vec<&str> = document["until_decided"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|stage| stage.as_str().unwrap())
        .collect();
    assert!(stages.len() >= 2, "{staged}");
    for (k, stage) in (1..).zip(&stages) {
        assert!(
            stage.starts_with(&format!(
                "{}",
                ws.join("inference_profiling/snippets/dbl/runs/ab-")
                    .display()
            )),
            "{stage}"
        );
        assert!(stage.ends_with(&format!("-{k}")), "{stage}");
        assert_eq!(stage[..stage.len() - 2], stages[0][..stages[0].len() - 2]);
    }
    // At least one look (at two stages pooled); how many more the budget
    // holds depends on how busy the machine is.
    assert!(staged.stderr.contains("ab: look 1 of "), "{staged}");
    assert!(!place.0.join(".ws.ab-base").exists(), "{staged}");
    // A Ctrl-C (to the whole process group, as a terminal sends it) while
    // the pair runs: exit 130, nothing kept, and no worktree left.
    {
        use std::io::{BufRead, BufReader, Read};
        use std::os::unix::process::CommandExt;
        let mut child = nested_cargo(
            Command::new(env!("CARGO_BIN_EXE_profile-cli"))
                .args(["ab", "dbl", "--against", "HEAD", "--iterations", "1000000"])
                .args(["--ab-id", "stopped"])
                .current_dir(&ws)
                .process_group(0)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped()),
        )
        .spawn()
        .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        loop {
            let mut line = String::new();
            assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "{said}");
            said.push_str(&line);
            if line.starts_with("ab: the base is") {
                break;
            }
        }
        // SAFETY: kill(2) on the process group this test started.
        let sent = unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGINT) };
        assert_eq!(sent, 0);
        stderr.read_to_string(&mut said).unwrap();
        // Ended by the signal itself, after its cleanup, as a shell expects.
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&child.wait().unwrap()),
            Some(libc::SIGINT),
            "{said}"
        );
        assert!(said.contains("interrupted by SIGINT"), "{said}");
        assert!(!place.0.join(".ws.ab-base").exists(), "{said}");
        assert_eq!(git_in(&ws, &["worktree", "list"]).lines().count(), 1);
        assert!(!ws
            .join("inference_profiling/snippets/dbl/runs/stopped")
            .exists());
    }
    // A revision that is not one.
    let unknown = profile_cli_in(&ws, &["ab", "dbl", "--against", "no-such-branch"]);
    assert_eq!(unknown.code, Some(2), "{unknown}");
    assert!(
        unknown
            .stderr
            .contains("error: --against no-such-branch: no such revision in"),
        "{unknown}"
    );
    std::fs::write(&target, &source).unwrap();

    // `git bisect run` over four commits after a good one: one unchanged,
    // one that makes the copy six times slower (the first bad one), one
    // whose workspace does not build (skipped: 125), one that builds
    // again; `--bisect` exits 0 on accept, 1 on reject and 125 for what
    // cannot be judged. The copy spins for a set time before it doubles: passes of
    // tens of microseconds timed by the clock, which a busy machine or
    // where each process's code and data land moves by a few percent,
    // where a pass of a microsecond moved by half or more.
    let doubling = "values.iter().map(|v| v * 2.0).collect()";
    assert!(source.contains(doubling), "{source}");
    let spinning = |micros: u32| {
        format!("{{ let start = std::time::Instant::now(); while start.elapsed() < std::time::Duration::from_micros({micros}) {{ std::hint::spin_loop(); }} {doubling} }}")
    };
    std::fs::write(&target, source.replacen(doubling, &spinning(30), 1)).unwrap();
    git_in(&ws, &["commit", "-q", "-a", "-m", "a steady copy"]);
    let good = git_in(&ws, &["rev-parse", "HEAD"]);
    let app = ws.join("app/src/lib.rs");
    std::fs::write(
        &app,
        format!("{APP_LIB}\n/// Unused.\npub fn unused() {{}}\n"),
    )
    .unwrap();
    git_in(&ws, &["commit", "-q", "-a", "-m", "unchanged"]);
    std::fs::write(&target, source.replacen(doubling, &spinning(180), 1)).unwrap();
    git_in(&ws, &["commit", "-q", "-a", "-m", "slower"]);
    let slower = git_in(&ws, &["rev-parse", "HEAD"]);
    std::fs::write(&app, format!("{APP_LIB}\npub fn broken( {{}}\n")).unwrap();
    git_in(&ws, &["commit", "-q", "-a", "-m", "does not build"]);
    let unbuildable = git_in(&ws, &["rev-parse", "HEAD"]);
    std::fs::write(&app, APP_LIB).unwrap();
    git_in(&ws, &["commit", "-q", "-a", "-m", "builds again"]);
    git_in(&ws, &["bisect", "start", "HEAD", &good]);
    let bisect = nested_cargo(
        Command::new("git")
            .args(["bisect", "run"])
            .arg(env!("CARGO_BIN_EXE_profile-cli"))
            .args([
                "ab",
                "dbl",
                "--against",
                &good,
                "--accept",
                "p50<=+50%",
                "--bisect",
            ])
            // 200 block pairs of passes of about 30 µs: enough for the
            // unchanged commit's interval to sit inside the gate even on a
            // machine whose other work preempts many of its passes.
            .args(["--iterations", "400", "--block-passes", "2"])
            .current_dir(&ws),
    )
    .output()
    .unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&bisect.stdout),
        String::from_utf8_lossy(&bisect.stderr)
    );
    git_in(&ws, &["bisect", "reset"]);
    assert!(bisect.status.success(), "{said}");
    assert!(
        said.contains(&format!("{slower} is the first bad commit")),
        "{said}"
    );
    assert!(said.contains("verdict: reject"), "{said}");
    // The revision that does not build, checked out: 125, skip it.
    git_in(&ws, &["checkout", "-q", &unbuildable]);
    let skipped = profile_cli_in(&ws, &["ab", "dbl", "--against", &good]);
    git_in(&ws, &["checkout", "-q", "-"]);
    assert_eq!(skipped.code, Some(125), "{skipped}");
    assert!(
        skipped.stderr.contains(
            "note: the working tree does not build: exit 125 (`git bisect run` skips this revision)"
        ),
        "{skipped}"
    );

    // The same commits backfilled into the store: every third from the
    // good one (it, the one that does not build, and the last), each
    // built in a worktree as `ab --against` builds its base and run with
    // its config there, into runs of their own named by their commits.
    let backfilled = profile_cli_in(
        &ws,
        &[
            "history",
            "backfill",
            "dbl",
            "--commits",
            &format!("{good}..HEAD"),
            "--every",
            "3",
            "--iterations",
            "20",
        ],
    );
    assert_eq!(backfilled.code, Some(1), "{backfilled}");
    assert!(
        backfilled.stderr.contains(&format!(
            "backfill: {} does not build (4/5): not run (exit 2, above)",
            &unbuildable[..12]
        )),
        "{backfilled}"
    );
    assert!(
        backfilled
            .stdout
            .starts_with("dbl: no change found in its p50 over "),
        "{backfilled}"
    );
    let tip = git_in(&ws, &["rev-parse", "HEAD"]);
    for commit in [&good, &tip] {
        let manifest: serde_yaml::Value = serde_yaml::from_str(
            &std::fs::read_to_string(
                ws.join("inference_profiling/backfill/dbl/runs")
                    .join(&commit[..12])
                    .join("manifest.yaml"),
            )
            .unwrap_or_else(|error| panic!("{commit}: {error}\n{backfilled}")),
        )
        .unwrap();
        assert_eq!(
            manifest["git_commit"].as_str(),
            Some(commit.as_str()),
            "{backfilled}"
        );
        assert_eq!(manifest["git_dirty"], false, "{backfilled}");
    }
    let stored = profile_cli_in(&ws, &["history", "dbl", "--json"]);
    assert_eq!(stored.code, Some(0), "{stored}");
    for commit in [&good, &tip] {
        assert!(
            stored.stdout.contains(commit.as_str()),
            "{commit}: {stored}"
        );
    }
    assert_eq!(git_in(&ws, &["worktree", "list"]).lines().count(), 1);
    // Again: the runs there are recorded, not run again.
    let again = profile_cli_in(
        &ws,
        &[
            "history",
            "backfill",
            "dbl",
            "--commits",
            &format!("{good}..HEAD"),
            "--every",
            "4",
        ],
    );
    assert_eq!(again.code, Some(0), "{again}");
    assert_eq!(
        again.stderr.matches(", in the store already").count(),
        2,
        "{again}"
    );
    assert!(!again.stderr.contains("running dbl"), "{again}");

    // A crate that declares the program's global allocator, as services
    // do: `new` takes the counting allocator out of the binary (a program
    // has one) and says so; the binary links, runs, and says that memory
    // per range is unavailable.
    std::fs::create_dir_all(ws.join("svc/src")).unwrap();
    std::fs::write(
        ws.join("svc/Cargo.toml"),
        "[package]\nname = \"svc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("svc/src/lib.rs"),
        "use std::alloc::System;\n\n#[global_allocator]\nstatic GLOBAL: System = System;\n\n/// Sums the squares.\npub fn squares(values: &[f32]) -> f32 {\n    values.iter().map(|v| v * v).sum()\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        std::fs::read_to_string(ws.join("Cargo.toml"))
            .unwrap()
            .replace("members = [\"app\"", "members = [\"app\", \"svc\""),
    )
    .unwrap();
    let svc = profile_cli_in(&ws, &["new", "sq", "--from", "svc/src/lib.rs::squares"]);
    assert_eq!(svc.code, Some(0), "{svc}");
    assert!(
        svc.stderr.contains("warning: `svc` declares the program's global allocator (svc/src/lib.rs:3): the counting allocator is taken out of inference_profiling/src/main.rs"),
        "{svc}"
    );
    let main = std::fs::read_to_string(ws.join("inference_profiling/src/main.rs")).unwrap();
    assert!(
        !main.lines().any(|l| l.starts_with("#[global_allocator]")),
        "{main}"
    );
    let ran = profile_cli_in(&ws, &["run", "sq", "--run-id", "first"]);
    assert_eq!(ran.code, Some(0), "{ran}");
    let memory = profile_cli_in(&ws, &["run", "sq", "--run-id", "memory", "--memory"]);
    assert_eq!(memory.code, Some(2), "{memory}");
    assert!(
        memory
            .stderr
            .contains("memory attribution is unavailable in this binary"),
        "{memory}"
    );
    // A target the revision does not have: its side says so.
    let tip = git_in(&ws, &["rev-parse", "HEAD"]);
    let missing = profile_cli_in(&ws, &["ab", "sq", "--against", "HEAD", "--iterations", "4"]);
    assert_eq!(missing.code, Some(2), "{missing}");
    assert!(
        missing.stderr.contains(&format!(
            "error: the base (HEAD ({})): unknown target `sq`",
            &tip[..12]
        )),
        "{missing}"
    );
    // A revision that does not build: the compiler's first error, exit 2,
    // and no worktree left.
    std::fs::write(
        ws.join("app/src/lib.rs"),
        format!("{APP_LIB}\npub fn broken( {{}}\n"),
    )
    .unwrap();
    git_in(&ws, &["commit", "-q", "-a", "-m", "broken"]);
    std::fs::write(ws.join("app/src/lib.rs"), APP_LIB).unwrap();
    let broken = profile_cli_in(&ws, &["ab", "dbl", "--against", "HEAD"]);
    assert_eq!(broken.code, Some(2), "{broken}");
    assert!(
        broken.stderr.contains("error: the base at HEAD (")
            && broken.stderr.contains("does not build (`cargo build --release -p profiling-snippets --bin profile`): error"),
        "{broken}"
    );
    assert!(!place.0.join(".ws.ab-base").exists(), "{broken}");
    assert_eq!(git_in(&ws, &["worktree", "list"]).lines().count(), 1);
}

/// `git ARGS` in `dir` as a user with a name and address; its output.
fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Profiler",
            "-c",
            "user.email=profiler@localhost",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
