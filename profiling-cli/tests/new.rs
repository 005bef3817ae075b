//! `profile-cli new` end to end: in-process on the project's own examples
//! code, and once through cargo on a copy of the workspace, where the new
//! snippet is built, run and listed.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{cli, workspace_root, Outcome};

/// `profile-cli new NAME --from FROM --directory DIR/<NAME with - as _>`.
fn new_in(dir: &Path, name: &str, from: &str) -> (Outcome, PathBuf) {
    let snippet = dir.join(name.replace('-', "_"));
    let outcome = cli(&[
        "new",
        name,
        "--from",
        from,
        "--directory",
        snippet.to_str().unwrap(),
    ]);
    (outcome, snippet)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn example(file: &str) -> String {
    read(&workspace_root().join("examples/src").join(file))
}

/// The text of `item` in `source`: from the line starting with `first` to
/// the line `last` after it.
fn text_between(source: &str, first: &str, last: &str) -> String {
    let start = source.find(first).expect("first line in the source");
    let end = start + source[start..].find(last).expect("last line after it") + last.len();
    source[start..end].to_owned()
}

/// The line (from 1) of `source` that is `line`, trimmed.
fn line_number(source: &str, line: &str) -> usize {
    source
        .lines()
        .position(|l| l.trim() == line)
        .expect("line in the source")
        + 1
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_free_function_is_copied_verbatim_and_calls_the_production_helpers() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, snippet) = new_in(
        dir.path(),
        "new-free",
        "examples/src/postprocess.rs::postprocess_detections",
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome.stdout.starts_with(&format!(
            "created {}/: target.rs, config.yaml, README.md\n  copied `profiling_examples::postprocess::postprocess_detections` (examples/src/postprocess.rs:",
            snippet.display()
        )),
        "{}",
        outcome.stdout
    );
    assert!(outcome
        .stderr
        .contains("so nothing compiles it: it was not built"));
    assert_eq!(entries(&snippet), ["README.md", "config.yaml", "target.rs"]);

    let target = read(&snippet.join("target.rs"));
    // Byte for byte: the comments, the line broken in two, the early return.
    let production = text_between(
        &example("postprocess.rs"),
        "#[nvtx_range]\npub fn postprocess_detections(",
        "\n    detections\n}\n",
    );
    assert!(target.contains(&production), "{target}");
    // The helpers are imported from production, not copied.
    assert!(
        target.contains(
            "use profiling_examples::postprocess::{\n    decode_predictions, keep_top_candidates, non_max_suppression, scale_boxes, Detection,\n    PostprocessParams, MAX_NMS_CANDIDATES,\n};\nuse profiling_examples::preprocess::LetterboxInfo;\n"
        ),
        "{target}"
    );
    assert!(!target.contains("pub fn decode_predictions"));
    assert!(outcome
        .stdout
        .contains("  - map `letterbox: &LetterboxInfo` in prepare: the types do not say where it comes from\n"));
}

/// A snippet made outside the snippets directory is not compiled: `new`
/// says so and prints the command that moves it where it is, and its files
/// already name the paths it will have there.
#[test]
fn a_snippet_made_elsewhere_says_how_to_move_it_where_it_is_compiled() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, snippet) = new_in(
        dir.path(),
        "moved-scale",
        "examples/src/postprocess.rs::scale_boxes",
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let place = "inference_profiling/snippets/moved_scale";
    assert!(!workspace_root().join(place).exists());
    assert_eq!(
        outcome.stdout.lines().last().unwrap(),
        format!(
            "next: mv {} {place}, edit {place}/target.rs, then: scripts/profile run --config {place}/config.yaml --run-id smoke",
            snippet.display()
        )
    );
    assert!(
        outcome.stderr.contains(&format!(
            "note: {} is not in the snippets/ directory of a crate, so nothing compiles it: it was not built, and `list` and `run` do not know it until it is moved there\n",
            snippet.display()
        )),
        "{}",
        outcome.stderr
    );
    let config = read(&snippet.join("config.yaml"));
    assert!(
        config.contains(&format!("\n  import_path: {place}/target.rs\n")),
        "{config}"
    );
    let readme = read(&snippet.join("README.md"));
    assert!(
        readme.contains(&format!("--config {place}/config.yaml")),
        "{readme}"
    );
}

#[test]
fn a_method_and_an_associated_function_become_methods_of_a_snippet_trait() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, snippet) = new_in(
        dir.path(),
        "new-method",
        "examples/src/preprocess.rs::Letterboxed::info",
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let target = read(&snippet.join("target.rs"));
    let production = text_between(
        &example("preprocess.rs"),
        "    pub fn info(&self) -> LetterboxInfo {",
        "\n    }\n",
    );
    let copied = production.replacen("pub fn", "fn", 1);
    assert!(
        target.contains(
            "impl LetterboxedInfo for Letterboxed {\n    /// Copy of `profiling_examples::preprocess::Letterboxed::info`\n    /// (examples/src/preprocess.rs:"
        ),
        "{target}"
    );
    assert!(
        target.contains(&format!("    #[nvtx_range]\n{copied}")),
        "{target}"
    );
    assert!(outcome
        .stdout
        .contains("  - write build_target: it makes the `self` of the copied method\n"));

    let preprocess = example("preprocess.rs");
    let (outcome, snippet) = new_in(
        dir.path(),
        "new-associated",
        "examples/src/preprocess.rs::LetterboxInfo::fit",
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let target = read(&snippet.join("target.rs"));
    assert!(target.contains("trait LetterboxInfoFit {\n    fn fit(original: (u32, u32), size: u32) -> LetterboxInfo;\n}"), "{target}");
    assert!(
        target.contains("<LetterboxInfo as LetterboxInfoFit>::fit("),
        "{target}"
    );
    // The body calls a private function of its module: listed, with where it is.
    let fit = line_number(
        &preprocess,
        "fn fit(original: (u32, u32), size: u32) -> (LetterboxInfo, (u32, u32)) {",
    );
    assert!(
        outcome.stdout.contains(&format!(
            "  - `fit`: fn fit, examples/src/preprocess.rs:{}: private to `profiling_examples::preprocess`\n",
            fit - 2
        )),
        "{}",
        outcome.stdout
    );
}

#[test]
fn a_line_range_of_whole_statements_gets_a_range_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let source = example("postprocess.rs");
    let first = line_number(
        &source,
        "// Bound the work NMS can be handed, keeping the best-scored candidates.",
    );
    let last = line_number(
        &source,
        "keep_top_candidates(&mut detections, MAX_NMS_CANDIDATES);",
    );
    let (outcome, snippet) = new_in(
        dir.path(),
        "new-lines",
        &format!("examples/src/postprocess.rs:{first}-{last}"),
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let name = format!("postprocess_detections:{first}-{last}");
    assert!(
        outcome
            .stdout
            .contains(&format!("a range `{name}` around lines {last}-{last}\n")),
        "{}",
        outcome.stdout
    );
    let target = read(&snippet.join("target.rs"));
    assert!(
        target.contains(&format!(
            "    let _snippet_range = profiling_range(\"{name}\");\n    // Bound the work NMS can be handed, keeping the best-scored candidates.\n    keep_top_candidates(&mut detections, MAX_NMS_CANDIDATES);\n    drop(_snippet_range);\n"
        )),
        "{target}"
    );

    let (outcome, _) = new_in(
        dir.path(),
        "new-part",
        &format!("examples/src/postprocess.rs:{}-{}", last, last + 2),
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains("the whole function is instrumented"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn refusals_exit_2_name_what_is_wrong_and_leave_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("target.rs"), "// mine\n").unwrap();
    let elsewhere = dir.path().join("refused");
    let elsewhere = elsewhere.to_str().unwrap();
    let root = workspace_root();
    let lines = example("postprocess.rs").lines().count();
    let postprocess = "examples/src/postprocess.rs";
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["new".into(), "taken".into(), "--from".into(), format!("{postprocess}::iou"), "--directory".into(), taken.display().to_string()],
            format!("error: {} already exists: `new` never overwrites a snippet", taken.display()),
        ),
        (
            vec!["new".into(), "bad name!".into(), "--from".into(), format!("{postprocess}::iou")],
            "error: profile name: `bad name!` is not a valid profile name".to_owned(),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), "examples/src/nowhere.rs::f".into(), "--directory".into(), elsewhere.into()],
            format!("error: --from: no such file: examples/src/nowhere.rs (looked in the current directory and in {})", root.display()),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}::postprocess"), "--directory".into(), elsewhere.into()],
            format!("error: {postprocess} has no function `postprocess`; did you mean `postprocess_detections`?"),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), "examples/src/preprocess.rs::Letterboxed::size".into(), "--directory".into(), elsewhere.into()],
            "error: `Letterboxed` has no method `size` in examples/src/preprocess.rs; its methods: info".to_owned(),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}:1-3"), "--directory".into(), elsewhere.into()],
            format!("error: lines 1-3 of {postprocess} are not inside a function"),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}:{}-{}", lines + 1, lines + 5), "--directory".into(), elsewhere.into()],
            format!("error: {postprocess} has {lines} lines: the line range {}-{} runs past its end", lines + 1, lines + 5),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}:9-3"), "--directory".into(), elsewhere.into()],
            format!("error: --from `{postprocess}:9-3`: the line range 9-3 ends before it starts"),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), "postprocess_detections".into()],
            "error: --from `postprocess_detections`: expected <file.rs>::<function>".to_owned(),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}::iou"), "--data-source".into(), "video".into(), "--directory".into(), elsewhere.into()],
            "error: --data-source: unknown data source `video`: expected one of dummy, images".to_owned(),
        ),
        (
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}::iou"), "--device".into(), "gpu".into()],
            "error: invalid value 'gpu' for '--device <DEVICE>'".to_owned(),
        ),
        (
            vec!["new".into(), "x".into()],
            "error: the following required arguments were not provided:".to_owned(),
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let outcome = cli(&args);
        assert_eq!(outcome.code, 2, "{args:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.starts_with(&expected),
            "{args:?}\nexpected: {expected}\n     got: {}",
            outcome.stderr
        );
        assert!(outcome.stdout.is_empty(), "{args:?}: {}", outcome.stdout);
    }
    assert_eq!(entries(dir.path()), ["taken"]);
    assert_eq!(entries(&taken), ["target.rs"]);
    assert_eq!(read(&taken.join("target.rs")), "// mine\n");
}

/// Applies a unified diff to `text`, checking every context and removed
/// line; `None` when one does not match.
fn apply_diff(text: &str, diff: &str) -> Option<String> {
    let old: Vec<&str> = text.lines().collect();
    let mut out: Vec<&str> = Vec::new();
    let mut next = 0;
    for line in diff.lines().skip_while(|l| !l.starts_with("@@")) {
        if let Some(header) = line.strip_prefix("@@ -") {
            // `@@ -start,count +start,count @@`: copy what comes before the hunk.
            let start: usize = header.split([',', ' ']).next()?.parse().ok()?;
            let start = start.checked_sub(1)?;
            out.extend(old.get(next..start)?);
            next = start;
        } else if let Some(removed) = line.strip_prefix('-') {
            (*old.get(next)? == removed).then_some(())?;
            next += 1;
        } else if let Some(added) = line.strip_prefix('+') {
            out.push(added);
        } else {
            let kept = line.strip_prefix(' ').unwrap_or(line);
            (*old.get(next)? == kept).then_some(())?;
            out.push(kept);
            next += 1;
        }
    }
    out.extend(old.get(next..)?);
    Some(out.join("\n") + "\n")
}

#[test]
fn example_candidate_is_the_generated_snippet_with_its_hand_edits() {
    let snippet_dir = workspace_root().join("inference_profiling/snippets/example_candidate");
    let readme = read(&snippet_dir.join("README.md"));
    assert!(
        readme.contains(
            "profile-cli new example-candidate \\\n  --from examples/src/postprocess.rs::postprocess_detections \\\n"
        ),
        "the README shows how to regenerate the snippet"
    );
    let dir = tempfile::tempdir().unwrap();
    let (outcome, generated) = new_in(
        dir.path(),
        "example-candidate",
        "examples/src/postprocess.rs::postprocess_detections",
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let generated = read(&generated.join("target.rs"));
    let edits = read(&snippet_dir.join("hand-edits.diff"));
    let committed = read(&snippet_dir.join("target.rs"));
    let edited = apply_diff(&generated, &edits).unwrap_or_else(|| {
        panic!(
            "hand-edits.diff no longer applies to the generated target.rs: regenerate it as \
             inference_profiling/snippets/example_candidate/README.md says"
        )
    });
    assert!(
        edited == committed,
        "the generated target.rs with hand-edits.diff applied is not the committed target.rs: \
         regenerate hand-edits.diff as inference_profiling/snippets/example_candidate/README.md says"
    );
}

#[test]
fn apply_diff_checks_context_and_applies_every_hunk() {
    let text = "a\nb\nc\nd\ne\nf\ng\n";
    let diff = "--- x\n+++ y\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -6,2 +6,3 @@\n f\n+F\n g\n";
    assert_eq!(
        apply_diff(text, diff).as_deref(),
        Some("A\nb\nc\nd\ne\nf\nF\ng\n")
    );
    assert_eq!(apply_diff(text, "@@ -1,1 +1,1 @@\n-z\n+Z\n"), None);
}

/// The workspace's source files, relative to its root: what git tracks or
/// would track (its ignore rules leave out build output, runs and the
/// like); without git, every file outside `target/`, `.git/`, `.venv/` and
/// `runs/`.
fn source_files(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()
        .filter(|output| output.status.success());
    if let Some(output) = listed {
        return output
            .stdout
            .split(|b| *b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
            .collect();
    }
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if [".git", ".venv", "target", "runs"]
                .iter()
                .any(|skip| name == *skip)
            {
                continue;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => walk(root, &entry.path(), out),
                Ok(kind) if kind.is_file() => {
                    out.push(entry.path().strip_prefix(root).unwrap().to_path_buf())
                }
                _ => {}
            }
        }
    }
    let mut files = Vec::new();
    walk(root, root, &mut files);
    files
}

/// Copies the workspace's source files into `to`, keeping their
/// modification times so that cargo sees unchanged crates as built. Files
/// that vanish meanwhile (another process's temporary files) are skipped.
fn copy_sources(from: &Path, to: &Path) {
    for file in source_files(from) {
        let (source, destination) = (from.join(&file), to.join(&file));
        std::fs::create_dir_all(destination.parent().unwrap()).unwrap();
        let copied = std::fs::copy(&source, &destination)
            .and_then(|_| std::fs::metadata(&source)?.modified())
            .and_then(|modified| {
                std::fs::File::options()
                    .write(true)
                    .open(&destination)?
                    .set_modified(modified)
            });
        match copied {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => panic!("{}: {error}", source.display()),
        }
    }
}

/// Removes a directory when dropped, however the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The one test that runs cargo: on a copy of the workspace, `new` without
/// `--no-check` builds the snippets crate, `--smoke` builds `profile-cli`
/// with the new snippet and runs it, and `list` shows it. The copy keeps
/// the real tree untouched. It and its build directory (without debug
/// info, to keep it small) live under `target/snippet-check/`, the copy at
/// the same path each time (and removed after), so later runs rebuild only
/// what the new snippet changes.
#[test]
fn a_new_snippet_builds_runs_and_is_listed_straight_after() {
    let build_dir = workspace_root().join("target/snippet-check");
    let copy = RemoveOnDrop(build_dir.join("workspace"));
    let _ = std::fs::remove_dir_all(&copy.0);
    std::fs::create_dir_all(&copy.0).unwrap();
    copy_sources(&workspace_root(), &copy.0);
    let snippets = copy.0.join("inference_profiling/snippets");
    let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(["new", "new-build-check", "--from"])
        .arg(copy.0.join("examples/src/preprocess.rs::to_chw_tensor"))
        .arg("--directory")
        .arg(snippets.join("new_build_check"))
        .arg("--smoke")
        .env("CARGO_TARGET_DIR", &build_dir)
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("  inference-profiling builds with the new snippet\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 measured pass of 1 record"),
        "the smoke run ran the new target: {stdout}\n{stderr}"
    );

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let listed = Command::new(cargo)
        .args(["run", "--quiet", "-p", "profiling-cli", "--manifest-path"])
        .arg(copy.0.join("Cargo.toml"))
        .args(["--", "list"])
        .env("CARGO_TARGET_DIR", &build_dir)
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let row = list
        .lines()
        .find(|l| l.starts_with("new-build-check "))
        .unwrap_or_else(|| panic!("new-build-check is not listed:\n{list}"));
    assert!(
        row.contains("inference_profiling/snippets/new_build_check/target.rs:"),
        "{row}"
    );

    // A copy that calls a private helper: written, and the compiler's error
    // shown against the new file.
    let broken = snippets.join("new_broken");
    let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(["new", "new-broken", "--from"])
        .arg(
            copy.0
                .join("examples/src/preprocess.rs::LetterboxInfo::fit"),
        )
        .arg("--directory")
        .arg(&broken)
        .env("CARGO_TARGET_DIR", &build_dir)
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot find function `fit` in this scope")
            && stderr.contains(&format!("{}:", broken.join("target.rs").display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: inference-profiling does not build with the new snippet (1 error(s) in its files, above)"),
        "{stderr}"
    );
    assert_eq!(entries(&broken), ["README.md", "config.yaml", "target.rs"]);
}

/// No name can point `new` outside the snippets directory: a name becomes
/// one directory name, so separators and `..` are refused before anything
/// is written.
#[test]
fn a_name_cannot_escape_the_snippets_directory() {
    let snippets = workspace_root().join("inference_profiling/snippets");
    let before = entries(&snippets);
    for name in ["../escape", "a/b", "..", "/tmp/x", ".hidden"] {
        let outcome = cli(&[
            "new",
            name,
            "--from",
            "examples/src/postprocess.rs::iou",
            "--no-check",
        ]);
        assert_eq!(outcome.code, 2, "{name}: {}", outcome.stderr);
        assert!(
            outcome.stderr.starts_with(&format!(
                "error: profile name: `{name}` is not a valid profile name"
            )),
            "{name}: {}",
            outcome.stderr
        );
    }
    assert_eq!(entries(&snippets), before);
    assert!(!workspace_root().join("inference_profiling/escape").exists());
}
