//! `profile-cli new` end to end: in-process on the project's own examples
//! code, and once through cargo on a copy of the workspace, where the new
//! snippet is built, run and listed.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{cli, nested_cargo, workspace_root, Finished, Outcome, RemoveOnDrop};

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
    // The body calls a private function of its module: copied beside it,
    // with where it comes from.
    let fit = line_number(
        &preprocess,
        "fn fit(original: (u32, u32), size: u32) -> (LetterboxInfo, (u32, u32)) {",
    );
    assert!(
        target.contains(&format!(
            "// Copied helper: private to `profiling_examples::preprocess` (examples/src/preprocess.rs:{}-",
            fit - 2
        )),
        "{target}"
    );
    assert!(
        target.contains(
            "\nfn fit(original: (u32, u32), size: u32) -> (LetterboxInfo, (u32, u32)) {\n"
        ),
        "{target}"
    );
    assert!(
        !outcome.stdout.contains("`fit`: fn fit"),
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
            vec!["new".into(), "x".into(), "--from".into(), format!("{postprocess}::iou"), "--data-source".into(), "webcam".into(), "--directory".into(), elsewhere.into()],
            "error: --data-source: unknown data source `webcam`: the registered ones are coco, dummy, images, tensors, video".to_owned(),
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

/// `manifest` without its `[profile.*.package.*]` tables: the copy's
/// crates build as the other workspaces' in `target/snippet-check/` do,
/// sharing their dependencies' builds, and without the optimization the
/// workspace asks for its own debug runs' timings, which this test does not
/// look at.
fn without_package_profiles(manifest: &str) -> String {
    let mut kept = String::new();
    let mut skipping = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            skipping = line.starts_with("[profile.") && line.contains(".package.");
        }
        if !skipping {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// A copy of the workspace under `target/snippet-check/workspace`, built in
/// `target/snippet-check` (without debug info, to keep it small): the one
/// place tests run cargo. The copy is at the same path each time (and
/// removed after), so later runs rebuild only what changed.
struct WorkspaceCopy {
    root: RemoveOnDrop,
}

impl WorkspaceCopy {
    fn new() -> WorkspaceCopy {
        let root = RemoveOnDrop(workspace_root().join("target/snippet-check/workspace"));
        let _ = std::fs::remove_dir_all(&root.0);
        std::fs::create_dir_all(&root.0).unwrap();
        copy_sources(&workspace_root(), &root.0);
        let manifest = root.0.join("Cargo.toml");
        std::fs::write(&manifest, without_package_profiles(&read(&manifest))).unwrap();
        WorkspaceCopy { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.0.join(relative)
    }

    fn snippet(&self, directory: &str) -> PathBuf {
        self.path("inference_profiling/snippets").join(directory)
    }

    /// Runs `command` in the copy's root, as a user runs commands in their
    /// workspace: cargo reads the configuration of the directory it runs
    /// in, and the copy's `.cargo/config.toml` (its `[env]`) differs from
    /// this repository's, so cargo run from elsewhere took other variables
    /// and built the runtime again for every command.
    fn finish(&self, command: &mut Command) -> Finished {
        let output = nested_cargo(command.current_dir(&self.root.0))
            .output()
            .unwrap();
        Finished {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// This test's `profile-cli` (`new`, `check`), on the copy's files.
    fn tool(&self, args: &[&str]) -> Finished {
        self.finish(Command::new(env!("CARGO_BIN_EXE_profile-cli")).args(args))
    }

    /// The copy's own `profile-cli`, rebuilt with its snippets (cargo's
    /// messages, build script warnings among them, on stderr).
    fn built(&self, args: &[&str]) -> Finished {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        self.finish(
            Command::new(cargo)
                .args(["run", "-p", "profiling-cli", "--manifest-path"])
                .arg(self.path("Cargo.toml"))
                .arg("--")
                .args(args),
        )
    }

    /// Whether the copy's snippets crate depends on the snippet crate in
    /// `directory`.
    fn links(&self, directory: &str) -> bool {
        read(&self.path("inference_profiling/Cargo.toml"))
            .contains(&format!("path = \"snippets/{directory}\""))
    }
}

/// The one test that runs cargo, on a copy of the workspace: `new` builds
/// a snippet and links it in, or leaves it a draft that breaks nothing;
/// `list` and `run` know drafts; `check` keeps a broken snippet a draft and
/// links a fixed one in; a broken snippet dropped in by hand stops the
/// build with a message naming it, until `check` makes it a draft.
#[test]
fn drafts_keep_every_other_target_building() {
    let copy = WorkspaceCopy::new();
    let good = copy.snippet("new_build_check");
    let good_dir = good.to_str().unwrap();
    let from = copy.path("examples/src/preprocess.rs::to_chw_tensor");
    let made = copy.tool(&[
        "new",
        "new-build-check",
        "--from",
        from.to_str().unwrap(),
        "--directory",
        good_dir,
        "--smoke",
    ]);
    assert_eq!(made.code, Some(0), "{made}");
    assert!(
        made.stdout.contains(
            "  inference-profiling builds with inference_profiling/snippets/new_build_check: linked in; no longer a draft\n"
        ),
        "{made}"
    );
    assert!(
        made.stdout.contains(
            "\n  parity: the copy computes what production computes on 1 record(s) of dummy, compared with ==\n"
        ),
        "the parity test ran: {made}"
    );
    assert!(
        made.stdout.contains("1 measured pass of 1 record"),
        "the smoke run ran the new target: {made}"
    );
    assert_eq!(
        entries(&good),
        [
            "Cargo.toml",
            "README.md",
            "config.yaml",
            "runs",
            "target.rs"
        ],
        "no DRAFT: the smoke run's runs/ beside the files"
    );
    assert!(copy.links("new_build_check"));

    // A snippet with a data source of its own: written at the end of its
    // target.rs, registered under `<name>-records`, named by its config,
    // and giving the dummy source's records until its `read` is written.
    let custom = copy.snippet("new_custom_source");
    let made = copy.tool(&[
        "new",
        "new-custom-source",
        "--from",
        from.to_str().unwrap(),
        "--directory",
        custom.to_str().unwrap(),
        "--data-source",
        "custom",
        "--smoke",
    ]);
    assert_eq!(made.code, Some(0), "{made}");
    assert!(
        made.stdout
            .contains("on new-custom-source-records with config"),
        "the smoke run read the snippet's own source: {made}"
    );
    assert!(
        made.stdout.contains("1 measured pass of 1 record"),
        "{made}"
    );
    let target = read(&custom.join("target.rs"));
    assert!(
        target.contains("#[data_source(name = \"new-custom-source-records\")]\nimpl ::profiling_core::data::RecordSource for NewCustomSourceRecords {"),
        "{target}"
    );
    let config = read(&custom.join("config.yaml"));
    assert!(
        config.contains("  name: new-custom-source-records\n  record_count: 1\n"),
        "{config}"
    );
    let manifest = read(&custom.join("Cargo.toml"));
    assert!(
        manifest.contains("serde = { version = \"1\", features = [\"derive\"] }"),
        "{manifest}"
    );

    // A generic function, instantiated with --type-args: it builds, and its
    // parity test calls production with the same types.
    let preprocess = copy.path("examples/src/preprocess.rs");
    let mut text = read(&preprocess);
    text.push_str(
        "\n/// The first `N` values.\npub fn head<S, const N: usize>(values: &[S]) -> [S; N]\nwhere\n    S: Copy,\n{\n    std::array::from_fn(|i| values[i])\n}\n\n/// Calls what only its own crate can call.\npub fn unsealed() -> u32 {\n    crate::postprocess::crate_only() + 1\n}\n",
    );
    std::fs::write(&preprocess, text).unwrap();
    // A function of another module only its crate may call: a copy outside
    // the crate cannot, and `new` does not copy it.
    let postprocess = copy.path("examples/src/postprocess.rs");
    let mut text = read(&postprocess);
    text.push_str("\npub(crate) fn crate_only() -> u32 {\n    7\n}\n");
    std::fs::write(&postprocess, text).unwrap();
    let generic = copy.snippet("new_generic");
    let from = copy.path("examples/src/preprocess.rs::head");
    let made = copy.tool(&[
        "new",
        "new-generic",
        "--from",
        from.to_str().unwrap(),
        "--type-args",
        "S=f32,N=4",
        "--directory",
        generic.to_str().unwrap(),
    ]);
    assert_eq!(made.code, Some(0), "{made}");
    assert!(
        made.stdout.contains(": linked in; no longer a draft\n"),
        "{made}"
    );
    assert!(
        made.stdout.contains(
            "\n  parity: the copy computes what production computes on 1 record(s) of dummy, compared with ==\n"
        ),
        "the parity test ran with the types given: {made}"
    );

    // A copy that calls a crate-private function: written, the compiler's
    // error shown against the new file, and left a draft, which is what is
    // left to do, not a failure of `new`.
    let broken = copy.snippet("new_broken");
    let from = copy.path("examples/src/preprocess.rs::unsealed");
    let made = copy.tool(&[
        "new",
        "new-broken",
        "--from",
        from.to_str().unwrap(),
        "--directory",
        broken.to_str().unwrap(),
    ]);
    assert_eq!(made.code, Some(0), "{made}");
    assert!(
        made.stderr.contains("function `crate_only` is private")
            && made
                .stderr
                .contains("inference_profiling/snippets/new_broken/target.rs:"),
        "{made}"
    );
    assert!(
        made.stderr.contains(
            "note: inference_profiling/snippets/new_broken does not build (1 error(s) in its files, above): it is a draft, left out of inference-profiling so that every other target still builds (inference_profiling/snippets/new_broken/DRAFT says why)"
        ),
        "{made}"
    );
    assert_eq!(
        entries(&broken),
        [
            "Cargo.toml",
            "DRAFT",
            "README.md",
            "config.yaml",
            "target.rs"
        ]
    );
    let reason = read(&broken.join("DRAFT"));
    assert!(
        reason.starts_with("does not build: 1 error(s) in its files, the first: error[E0603]: function `crate_only` is private"),
        "{reason}"
    );
    assert!(!copy.links("new_broken"));

    // The other targets still build, list and run; the draft is listed
    // with its reason and refused by `run`.
    let listed = copy.built(&["list"]);
    assert_eq!(listed.code, Some(0), "{listed}");
    let row = listed
        .stdout
        .lines()
        .find(|l| l.starts_with("new-build-check "))
        .unwrap_or_else(|| panic!("new-build-check is not listed: {listed}"));
    assert!(
        row.contains("inference_profiling/snippets/new_build_check/target.rs:"),
        "{row}"
    );
    let drafts = listed
        .stdout
        .split("drafts, not compiled (`profile-cli check NAME` builds one and links it in):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no drafts section: {listed}"));
    let draft_row = drafts.lines().next().unwrap();
    assert!(
        draft_row.starts_with(
            "  new-broken  inference_profiling/snippets/new_broken/  does not build: 1 error(s)"
        ),
        "{draft_row}"
    );
    let refused = copy.built(&["run", "new-broken"]);
    assert_eq!(refused.code, Some(2), "{refused}");
    assert!(
        refused.stderr.contains(
            "\nerror: `new-broken` is a draft, not compiled (inference_profiling/snippets/new_broken/DRAFT): does not build: 1 error(s)"
        ),
        "{refused}"
    );
    let runs = tempfile::tempdir().unwrap();
    let ran = copy.built(&[
        "run",
        "example-candidate",
        "--warmup",
        "0",
        "--output-dir",
        runs.path().to_str().unwrap(),
    ]);
    assert_eq!(ran.code, Some(0), "{ran}");

    // `check` keeps a broken draft a draft.
    let kept = copy.tool(&["check", broken.to_str().unwrap()]);
    assert_eq!(kept.code, Some(1), "{kept}");
    assert!(broken.join("DRAFT").is_file());
    assert!(!copy.links("new_broken"));

    // A linked snippet edited into one that does not build becomes a
    // draft; fixed, `check` links it in again.
    let original = read(&good.join("target.rs"));
    std::fs::write(
        good.join("target.rs"),
        format!("{original}\npub fn broken() -> u32 {{\n    \"not a number\"\n}}\n"),
    )
    .unwrap();
    let demoted = copy.tool(&["check", good_dir]);
    assert_eq!(demoted.code, Some(1), "{demoted}");
    assert!(demoted.stderr.contains("mismatched types"), "{demoted}");
    assert!(good.join("DRAFT").is_file());
    assert!(!copy.links("new_build_check"));
    std::fs::write(good.join("target.rs"), &original).unwrap();
    let promoted = copy.tool(&["check", good_dir]);
    assert_eq!(promoted.code, Some(0), "{promoted}");
    assert!(
        promoted.stdout.contains(": linked in; no longer a draft\n"),
        "{promoted}"
    );
    assert!(!good.join("DRAFT").exists());
    assert!(copy.links("new_build_check"));

    // An edit that changes what the copy computes fails the parity test;
    // the snippet still builds and stays linked in.
    let drifted = original.replacen(
        "red[i] = f32::from(pixel[0]) / 255.0;",
        "red[i] = f32::from(pixel[0]) / 256.0;",
        1,
    );
    assert_ne!(drifted, original, "the copy holds the constant");
    std::fs::write(good.join("target.rs"), &drifted).unwrap();
    let diverged = copy.tool(&["check", good_dir]);
    assert_eq!(diverged.code, Some(1), "{diverged}");
    assert!(
        diverged.stderr.contains(
            "error: parity: record `dummy-0`: the copy does not compute what production computes: the outputs differ:\n  copy:       [[["
        ),
        "{diverged}"
    );
    assert!(
        diverged.stderr.contains("(it builds and stays linked in;"),
        "{diverged}"
    );
    assert!(copy.links("new_build_check"));
    std::fs::write(good.join("target.rs"), &original).unwrap();

    // A snippet's parity test runs alone: not the parity tests of snippets
    // dropped in by hand, which are tests of the profiling crate itself
    // (`<dir>::parity::...`), built for the same command.
    let module = copy.snippet("module_parity");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(
        module.join("target.rs"),
        "#[cfg(test)]\nmod parity {\n    #[test]\n    fn the_copy_computes_what_production_computes() {\n        panic!(\"parity: the module snippet's test ran\");\n    }\n}\n",
    )
    .unwrap();
    let alone = copy.tool(&["check", good_dir]);
    assert_eq!(alone.code, Some(0), "{alone}");
    assert!(
        alone.stdout.contains(
            "\n  parity: the copy computes what production computes on 1 record(s) of dummy, compared with ==\n"
        ),
        "{alone}"
    );
    std::fs::remove_dir_all(&module).unwrap();

    // A broken snippet dropped in by hand stops the build, which names it.
    let hand_made = copy.snippet("hand_made");
    std::fs::create_dir_all(&hand_made).unwrap();
    std::fs::write(
        hand_made.join("target.rs"),
        "pub fn broken() -> u32 {\n    \"not a number\"\n}\n",
    )
    .unwrap();
    let stopped = copy.built(&["list"]);
    assert_ne!(stopped.code, Some(0), "{stopped}");
    assert!(
        stopped.stderr.contains(
            "snippets/hand_made has no Cargo.toml: its target.rs is compiled into inference-profiling itself, so an error in it stops every target from building; `profile-cli check hand-made` gives it a crate of its own (a draft while it does not build), and while the build is broken a `DRAFT` file in it leaves it out"
        ),
        "{stopped}"
    );
    assert!(
        stopped
            .stderr
            .contains("inference_profiling/snippets/hand_made/target.rs"),
        "{stopped}"
    );
    let checked = copy.tool(&["check", hand_made.to_str().unwrap()]);
    assert_eq!(checked.code, Some(1), "{checked}");
    assert!(
        checked
            .stdout
            .contains("inference_profiling/snippets/hand_made/Cargo.toml written"),
        "{checked}"
    );
    assert_eq!(entries(&hand_made), ["Cargo.toml", "DRAFT", "target.rs"]);
    let listed = copy.built(&["list"]);
    assert_eq!(listed.code, Some(0), "{listed}");
    assert!(
        listed.stdout.contains(
            "\n  hand-made   inference_profiling/snippets/hand_made/   does not build: 1 error(s) in its files, the first: error[E0308]: mismatched types (target.rs:2)\n"
        ),
        "{listed}"
    );
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
