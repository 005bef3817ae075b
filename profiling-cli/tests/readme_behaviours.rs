//! What the documentation promises about where a run goes and what it
//! writes (docs/guide/runs.md, docs/reference/config.md and
//! docs/reference/manifest.md), each checked end to end: the trace's
//! cut-off, `write_manifest: false`, the default run location and run id,
//! the image cache's place, relative `output_dir`, and the debug-build
//! warning.

use std::path::{Path, PathBuf};
use std::process::Command;

use profiling_core::prelude::*;
use serde_yaml::Value;

/// Opens one range per call.
#[derive(Default)]
struct Ranged;

#[profile_target(name = "readme-ranged")]
impl ProfileTarget for Ranged {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _range = profiling_range("step");
        Ok(())
    }
}

struct Outcome {
    code: u8,
    stdout: String,
    stderr: String,
}

/// `profile-cli <args>` in-process, with `root` as the workspace.
fn cli_in(root: &Path, args: &[&str]) -> Outcome {
    let mut argv = vec!["profile-cli".into()];
    argv.extend(args.iter().map(Into::into));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = profiling_cli::main_with(argv, root, &mut out, &mut err);
    Outcome {
        code,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

fn read_yaml(path: &Path) -> Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Past the first 100,000 passes the trace is cut, and the manifest says
/// so (`trace.truncated`, `trace.note`), while the timings count them all.
#[test]
fn a_trace_past_its_bounds_is_cut_and_says_so() {
    let out = tempfile::tempdir().unwrap();
    let passes = profiling_core::driver::runner::PASSES_KEPT + 5;
    let outcome = cli_in(
        out.path(),
        &[
            "run",
            "readme-ranged",
            "--warmup",
            "0",
            "--iterations",
            &passes.to_string(),
            "--run-id",
            "long",
            "--output-dir",
            out.path().to_str().unwrap(),
        ],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let run_dir = out.path().join("readme-ranged/runs/long");
    let manifest = read_yaml(&run_dir.join("manifest.yaml"));
    assert_eq!(manifest["trace"]["truncated"], true);
    assert_eq!(
        manifest["trace"]["note"],
        "the trace holds the first 100000 passes and up to 262144 events per thread (200000 in all); the manifest's timings count every range"
    );
    // The capture and the kept passes first, then ranges up to the bound.
    assert_eq!(
        manifest["trace"]["events"],
        profiling_core::driver::trace::MAX_EVENTS as u64
    );
    assert_eq!(manifest["timings"]["iterations"]["count"], passes as u64);
    assert_eq!(manifest["timings"]["ranges"][0]["count"], passes as u64);

    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("trace.json")).unwrap())
            .unwrap();
    assert_eq!(trace["otherData"]["truncated"], true);
    let events = trace["traceEvents"].as_array().unwrap();
    let count = |category: &str| events.iter().filter(|e| e["cat"] == category).count();
    assert_eq!(count("pass"), profiling_core::driver::runner::PASSES_KEPT);
    assert_eq!(count("capture"), 1);
    assert_eq!(
        count("range"),
        profiling_core::driver::trace::MAX_EVENTS - 1 - profiling_core::driver::runner::PASSES_KEPT
    );
}

/// `write_manifest: false` writes nothing at all: no manifest, no trace, no
/// run directory.
#[test]
fn write_manifest_false_writes_no_run_directory() {
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("config.yaml");
    std::fs::write(
        &config,
        "target: {name: readme-ranged}\nwrite_manifest: false\n",
    )
    .unwrap();
    let outcome = cli_in(
        out.path(),
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--run-id",
            "quiet",
        ],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome
            .stdout
            .ends_with("manifest: not written (write_manifest: false)\n"),
        "{}",
        outcome.stdout
    );
    assert!(!outcome.stdout.contains("trace:"), "{}", outcome.stdout);
    assert_eq!(entries(out.path()), ["config.yaml"]);
}

/// Without a config file or an output directory, a run goes under the
/// workspace's snippets directory, named by the UTC time of its start.
#[test]
fn the_default_run_location_and_id() {
    let workspace = tempfile::tempdir().unwrap();
    let before = utc_now_compact();
    let outcome = cli_in(workspace.path(), &["run", "readme-ranged"]);
    let after = utc_now_compact();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let runs = workspace
        .path()
        .join("inference_profiling/snippets/readme-ranged/runs");
    let ids = entries(&runs);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = &ids[0];
    // YYYYMMDDTHHMMSSZ, between the clock readings around the run.
    assert_eq!(id.len(), 16, "{id}");
    assert!(id.as_bytes()[8] == b'T' && id.ends_with('Z'), "{id}");
    assert!(
        id.chars()
            .enumerate()
            .all(|(i, c)| i == 8 || i == 15 || c.is_ascii_digit()),
        "{id}"
    );
    assert!(
        before.as_str() <= id.as_str() && id.as_str() <= after.as_str(),
        "{before} <= {id} <= {after}"
    );
    assert!(outcome.stdout.contains(&format!(
        "manifest: {}",
        runs.join(id).join("manifest.yaml").display()
    )));
}

/// The image cache lives under the workspace's `inference_profiling/`,
/// wherever the config and its runs are, marked for git and backup tools;
/// `cache clean` there empties it.
#[test]
fn the_image_cache_lives_under_the_workspaces_inference_profiling() {
    let workspace = tempfile::tempdir().unwrap();
    let snippet = workspace.path().join("elsewhere");
    std::fs::create_dir_all(snippet.join("images")).unwrap();
    image::RgbImage::new(4, 2)
        .save(snippet.join("images/a.png"))
        .unwrap();
    std::fs::write(
        snippet.join("config.yaml"),
        format!(
            "target: {{name: readme-ranged}}\ndata_source: {{name: images, directory: {}, cache: true}}\n",
            snippet.join("images").display()
        ),
    )
    .unwrap();
    let config = snippet.join("config.yaml");
    let outcome = cli_in(
        workspace.path(),
        &["run", "--config", config.to_str().unwrap(), "--run-id", "r"],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(snippet.join("runs/r/manifest.yaml").is_file());
    let cache = workspace.path().join("inference_profiling/.cache");
    assert_eq!(entries(&cache), [".gitignore", "CACHEDIR.TAG", "images"]);
    assert_eq!(entries(&cache.join("images")).len(), 1);
    let cleaned = cli_in(workspace.path(), &["cache", "clean"]);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert!(
        cleaned.stdout.starts_with("freed ")
            && cleaned.stdout.ends_with(&format!(
                " (1 file) from the image cache: {}\n",
                cache.join("images").display()
            )),
        "{}",
        cleaned.stdout
    );
    assert!(entries(&cache.join("images")).is_empty());
}

/// The UTC time now as `YYYYMMDDTHHMMSSZ`, from `date`.
fn utc_now_compact() -> String {
    let output = Command::new("date")
        .args(["-u", "+%Y%m%dT%H%M%SZ"])
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A relative `output_dir` in a config is taken from the current directory,
/// as every relative path the tool takes is (`--output-dir`, an images
/// `directory`, a TorchScript `module`), not from the config's directory.
#[test]
fn a_relative_output_dir_is_taken_from_the_current_directory() {
    let scratch = tempfile::tempdir().unwrap();
    let configs = scratch.path().join("configs");
    let cwd = scratch.path().join("here");
    std::fs::create_dir_all(&configs).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        configs.join("config.yaml"),
        "target: {name: detection-postprocess}\noutput_dir: results\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args([
            "run",
            "--config",
            "../configs/config.yaml",
            "--run-id",
            "rel",
        ])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run_dir: PathBuf = cwd.join("results/detection-postprocess/runs/rel");
    assert!(run_dir.join("manifest.yaml").is_file());
    assert!(!configs.join("results").exists());
    // Both paths the run prints are absolute, whatever was typed.
    let stdout = String::from_utf8(output.stdout).unwrap();
    let canonical = run_dir.canonicalize().unwrap();
    for (label, file) in [("trace:  ", "trace.json"), ("manifest: ", "manifest.yaml")] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line:\n{stdout}"));
        let printed = Path::new(line.strip_prefix(label).unwrap());
        assert!(printed.is_absolute(), "{line}");
        assert_eq!(
            printed.canonicalize().unwrap(),
            canonical.join(file),
            "{line}"
        );
    }
}

/// A debug build says its timings mean little; the tests run one.
#[test]
fn a_debug_build_warns_about_its_timings() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli_in(
        out.path(),
        &[
            "run",
            "readme-ranged",
            "--output-dir",
            out.path().to_str().unwrap(),
        ],
    );
    assert_eq!(outcome.code, 0);
    let warning = "warning: this is a debug build: its timings say little about optimized code (build with --release)\n";
    assert_eq!(
        outcome.stderr.contains(warning),
        cfg!(debug_assertions),
        "{}",
        outcome.stderr
    );
}

/// The repository root, where README.md and docs/ are.
fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Every `.md` file under `dir`, as paths relative to `root`, sorted.
fn markdown_files(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(markdown_files(root, &path));
        } else if path.extension().is_some_and(|e| e == "md") {
            files.push(path.strip_prefix(root).unwrap().to_owned());
        }
    }
    files.sort();
    files
}

/// The README's table of documentation links every file of docs/.
#[test]
fn the_readme_lists_every_file_of_the_documentation() {
    let root = repository_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let unlisted: Vec<PathBuf> = markdown_files(&root, &root.join("docs"))
        .into_iter()
        .filter(|file| !readme.contains(&format!("| [{0}]({0}) |", file.display())))
        .collect();
    assert!(
        unlisted.is_empty(),
        "docs files without a row in the README's table of documentation: {unlisted:?}"
    );
}

/// The anchors a Markdown page's headings get: lower case, punctuation
/// but `-` and `_` dropped, spaces as `-`; headings inside code blocks are
/// not headings.
fn anchors(text: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            let title = line.trim_start_matches('#').trim().to_lowercase();
            anchors.push(
                title
                    .chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect(),
            );
        }
    }
    anchors
}

/// Every relative link of the README and of docs/ leads to a file that
/// exists, and to a heading of it when it names one.
#[test]
fn the_documentation_links_lead_to_files_and_headings_that_exist() {
    let root = repository_root();
    let mut pages = vec![PathBuf::from("README.md")];
    pages.extend(markdown_files(&root, &root.join("docs")));
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = &rest[..end];
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if file.is_empty() {
                root.join(page)
            } else {
                root.join(page).parent().unwrap().join(file)
            };
            let found = match std::fs::read_to_string(&target) {
                Ok(_) if anchor.is_empty() => true,
                Ok(text) => anchors(&text).iter().any(|a| a == anchor),
                Err(_) => target.is_dir() && anchor.is_empty(),
            };
            if !found {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links that lead nowhere: {broken:#?}");
}

/// The first `scripts/profile run` runs its target with a build that has
/// no history store or pages (`--handoff FILE`), and the whole build does
/// what is left (`--finish-handoff FILE`): the page, and the run recorded
/// in the store, as one `run` does; the file is used once.
#[test]
fn a_run_handed_off_is_finished_by_another_process() {
    let out = tempfile::tempdir().unwrap();
    let handoff = out.path().join("handoff.json");
    let dir = out.path().to_str().unwrap();
    let common = [
        "run",
        "readme-ranged",
        "--warmup",
        "0",
        "--iterations",
        "3",
        "--run-id",
        "first",
        "--output-dir",
        dir,
    ];
    let mut ran: Vec<&str> = common.to_vec();
    ran.extend(["--handoff", handoff.to_str().unwrap()]);
    let first = cli_in(out.path(), &ran);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let run_dir = out.path().join("readme-ranged/runs/first");
    assert!(first.stdout.contains("manifest: "), "{}", first.stdout);
    assert!(!first.stdout.contains("report: "), "{}", first.stdout);
    assert!(!run_dir.join("report.html").exists());
    assert!(!out.path().join("history.sqlite").exists());
    assert!(std::fs::metadata(&handoff).unwrap().len() > 0);

    let mut finish: Vec<&str> = common.to_vec();
    finish.extend(["--finish-handoff", handoff.to_str().unwrap()]);
    let finished = cli_in(out.path(), &finish);
    assert_eq!(finished.code, 0, "{}{}", finished.stdout, finished.stderr);
    let page = run_dir.join("report.html");
    assert!(
        finished
            .stdout
            .contains(&format!("report: {}", page.display())),
        "{}",
        finished.stdout
    );
    assert!(page.is_file());
    assert!(!handoff.exists());
    // Recorded in the store, once.
    let history = cli_in(
        out.path(),
        &["history", "readme-ranged", "--dirty", "--output-dir", dir],
    );
    assert_eq!(history.code, 0, "{}{}", history.stdout, history.stderr);
    assert!(
        history
            .stdout
            .lines()
            .any(|line| line.split_whitespace().eq(["runs", "1"])),
        "{}",
        history.stdout
    );

    // Used once: a second finish names the file and does nothing.
    let again = cli_in(out.path(), &finish);
    assert_eq!(again.code, 2, "{}{}", again.stdout, again.stderr);
    assert!(again.stderr.contains("handoff.json"), "{}", again.stderr);
}
