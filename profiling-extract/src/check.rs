//! After `new` has written a snippet: compile the crate that holds it and
//! report the compiler's messages about the new files, and run the new
//! target once through the command line tool, rebuilt with it.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::snippet_crate::{self, draft_reason, mark_draft, set_included, unmark_draft};
use super::{SnippetError, SnippetsCrate};

/// The package and binary that run targets.
const CLI_PACKAGE: &str = "profiling-cli";
const CLI_BINARY: &str = "profile-cli";

/// One compiler message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// `error` or `warning`.
    pub level: String,
    /// The file of its primary span, as the compiler names it.
    pub file: Option<String>,
    pub line: Option<u64>,
    /// The message as the compiler prints it.
    pub rendered: String,
}

/// The result of compiling the snippets crate.
#[derive(Debug, Clone)]
pub struct BuildCheck {
    /// The cargo command, as it could be typed.
    pub command: String,
    pub success: bool,
    /// Errors and warnings located in the new snippet's files.
    pub in_snippet: Vec<Diagnostic>,
    /// Errors located anywhere else.
    pub elsewhere: Vec<Diagnostic>,
    /// What cargo wrote on its error stream, for failures with no message.
    pub cargo_stderr: String,
}

/// `path` made absolute, so that a command never reads it as an option.
fn absolute(path: &Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn cargo() -> std::ffi::OsString {
    crate::cargo_program()
}

fn run(command: &mut Command, shown: &str) -> Result<std::process::Output, SnippetError> {
    command.output().map_err(|source| SnippetError::Cargo {
        command: shown.to_owned(),
        source,
    })
}

/// The command [`check_build`] runs, as it could be typed.
pub fn check_command(krate: &SnippetsCrate) -> String {
    format!(
        "cargo build --lib -p {} --manifest-path {}",
        krate.package,
        krate.dir.join("Cargo.toml").display()
    )
}

/// Builds `krate`'s library (cargo's `dev` profile) and sorts the
/// compiler's messages into those about `snippet` (the new snippet
/// directory) and the rest.
///
/// A build rather than `cargo check`: the parity test that follows builds
/// the same dependencies in the same profile, so they are compiled once;
/// a check's would be compiled a second time, metadata only, for nothing.
///
/// cargo's own environment applies: `CARGO_TARGET_DIR` picks the build
/// directory.
pub fn check_build(krate: &SnippetsCrate, snippet: &Path) -> Result<BuildCheck, SnippetError> {
    let manifest = krate.dir.join("Cargo.toml");
    let shown = check_command(krate);
    let output = run(
        crate::workspace::cargo_for_snippets(&krate.dir)
            .current_dir(&krate.dir)
            .args([
                "build",
                "--lib",
                "--message-format=json",
                "-p",
                &krate.package,
            ])
            .arg("--manifest-path")
            .arg(&manifest),
        &shown,
    )?;
    let snippet = snippet
        .canonicalize()
        .unwrap_or_else(|_| snippet.to_path_buf());
    let mut check = BuildCheck {
        command: shown,
        success: output.status.success(),
        in_snippet: Vec::new(),
        elsewhere: Vec::new(),
        cargo_stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    for message in cargo_metadata::Message::parse_stream(output.stdout.as_slice()) {
        let Some(diagnostic) = message.ok().and_then(diagnostic) else {
            continue;
        };
        let inside = diagnostic
            .file
            .as_deref()
            .is_some_and(|file| lies_in(file, &snippet, &krate.dir));
        if inside {
            check.in_snippet.push(diagnostic);
        } else if diagnostic.level == "error" {
            check.elsewhere.push(diagnostic);
        }
    }
    Ok(check)
}

/// A compiler error or warning from cargo's JSON messages (an internal
/// compiler error is an error).
fn diagnostic(message: cargo_metadata::Message) -> Option<Diagnostic> {
    use cargo_metadata::diagnostic::DiagnosticLevel;
    let cargo_metadata::Message::CompilerMessage(compiler) = message else {
        return None;
    };
    let message = compiler.message;
    let level = match message.level {
        DiagnosticLevel::Error | DiagnosticLevel::Ice => "error",
        DiagnosticLevel::Warning => "warning",
        _ => return None,
    };
    let primary = message.spans.iter().find(|span| span.is_primary);
    Some(Diagnostic {
        level: level.to_owned(),
        file: primary.map(|span| span.file_name.clone()),
        line: primary.map(|span| span.line_start as u64),
        rendered: message.rendered.clone().unwrap_or(message.message.clone()),
    })
}

/// Whether `file` (absolute, or relative to the workspace of `crate_dir`)
/// lies in `directory`.
fn lies_in(file: &str, directory: &Path, crate_dir: &Path) -> bool {
    let file = Path::new(file);
    let candidates: Vec<PathBuf> = if file.is_absolute() {
        vec![file.to_path_buf()]
    } else {
        crate_dir
            .ancestors()
            .map(|dir| dir.join(file))
            .filter(|path| path.exists())
            .collect()
    };
    candidates.iter().any(|candidate| {
        candidate
            .canonicalize()
            .unwrap_or_else(|_| candidate.clone())
            .starts_with(directory)
    })
}

/// What [`check_snippet`] did.
#[derive(Debug, Clone)]
pub struct SnippetCheck {
    pub build: BuildCheck,
    /// The snippet got its `Cargo.toml` now: it was compiled into the
    /// snippets crate as a module.
    pub made_crate: bool,
    /// Its `DRAFT` file before the check, when it was a draft.
    pub was_draft: Option<String>,
    /// What it is now.
    pub state: SnippetState,
}

/// Whether the snippets crate links a snippet in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnippetState {
    /// It builds: the snippets crate depends on it.
    Included,
    /// It does not build: left out, with this `DRAFT` file.
    Draft(PathBuf),
    /// The build failed for reasons outside the snippet: left as it was
    /// (a draft when it was one).
    Unchanged,
}

/// Builds the snippets crate with the snippet in `directory` included.
/// When that compiles, the snippet stays in (its `DRAFT` file, if any,
/// removed); when its own files do not compile, it becomes a draft that
/// nothing depends on, its `DRAFT` file saying why; when the build fails
/// elsewhere, it is left as it was. A snippet without a `Cargo.toml` (one
/// dropped in by hand) gets one first: from then on it is a crate of its
/// own.
pub fn check_snippet(
    krate: &SnippetsCrate,
    directory: &Path,
    profile: &str,
) -> Result<SnippetCheck, SnippetError> {
    let manifest = directory.join("Cargo.toml");
    let made_crate = !manifest.is_file();
    if made_crate {
        let text = snippet_crate::manifest(krate, directory, profile)?;
        profiling_core::driver::files::write_atomically(&manifest, text.as_bytes()).map_err(
            |source| SnippetError::Write {
                path: manifest.clone(),
                source,
            },
        )?;
    }
    let was_draft = draft_reason(directory);
    let was_included = snippet_crate::is_included(krate, directory)?;
    // Back to how it was, when the build cannot say anything of the snippet.
    let restore = || -> Result<(), SnippetError> {
        if let Some(text) = &was_draft {
            set_included(krate, directory, false)?;
            let path = directory.join(snippet_crate::DRAFT_FILE);
            profiling_core::driver::files::write_atomically(&path, text.as_bytes())
                .map_err(|source| SnippetError::Write { path, source })?;
        } else {
            set_included(krate, directory, was_included)?;
        }
        Ok(())
    };
    unmark_draft(directory)?;
    set_included(krate, directory, true)?;
    let build = match check_build(krate, directory) {
        Ok(build) => build,
        Err(error) => {
            restore()?;
            return Err(error);
        }
    };
    let errors: Vec<&Diagnostic> = build
        .in_snippet
        .iter()
        .filter(|d| d.level == "error")
        .collect();
    let state = if build.success {
        SnippetState::Included
    } else if let Some(first) = errors.first() {
        set_included(krate, directory, false)?;
        let headline = first.rendered.lines().next().unwrap_or("").trim();
        let place = match (&first.file, first.line) {
            (Some(file), Some(line)) => {
                let name = Path::new(file)
                    .file_name()
                    .map_or_else(|| file.clone(), |name| name.to_string_lossy().into_owned());
                format!(" ({name}:{line})")
            }
            _ => String::new(),
        };
        let reason = format!(
            "does not build: {} error(s) in its files, the first: {headline}{place}",
            errors.len()
        );
        let details: String = errors.iter().map(|d| d.rendered.as_str()).collect();
        SnippetState::Draft(mark_draft(directory, profile, &reason, &details)?)
    } else {
        restore()?;
        SnippetState::Unchanged
    };
    Ok(SnippetCheck {
        build,
        made_crate,
        was_draft,
        state,
    })
}

/// What the snippet's parity test said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParityOutcome {
    /// It passed: its own line (how many records, compared how).
    Passed(String),
    /// It failed: the panic message (which record, what differs).
    Failed(String),
    /// The snippet has no parity test.
    Missing,
    /// The test did not build or cargo failed: what cargo printed.
    NotRun(String),
}

/// The parity test's run.
#[derive(Debug, Clone)]
pub struct ParityRun {
    /// The cargo command, as it could be typed.
    pub command: String,
    pub outcome: ParityOutcome,
}

/// The `cargo test` of the snippet crate in `directory` that runs its
/// parity test. When the snippets crate links the snippet in, it is
/// selected too: cargo resolves the features of dependencies over the
/// packages a command selects, so the snippet alone would build them (and
/// the runtime above them) with other features than the build of the
/// snippets crate that came just before, and compile them all again. Its
/// library's tests run too, and hold the parity tests of the snippets
/// dropped in as modules (`<dir>::parity::...`): `--skip ::parity::`
/// leaves those out, so that only this snippet's (`parity::...`) run.
fn parity_words(
    directory: &Path,
    krate: Option<&SnippetsCrate>,
) -> Result<Vec<String>, SnippetError> {
    let package = snippet_crate::package_of(directory)?;
    let manifest = absolute(&directory.join("Cargo.toml"));
    let mut words: Vec<String> = ["cargo", "test", "-p"].map(String::from).to_vec();
    words.push(package);
    let with_crate = match krate {
        Some(krate) if snippet_crate::is_included(krate, directory)? => {
            words.extend(["-p".to_owned(), krate.package.clone()]);
            true
        }
        _ => false,
    };
    words.push("--manifest-path".to_owned());
    words.push(manifest.to_string_lossy().into_owned());
    words.extend(["--lib", "parity::", "--", "--nocapture"].map(String::from));
    if with_crate {
        words.extend(["--skip", "::parity::"].map(String::from));
    }
    Ok(words)
}

/// Runs the parity test of the snippet crate in `directory` (built for
/// tests by cargo, in cargo's own target directory), as the build of the
/// snippets crate that holds it ran cargo: in that crate's directory, so
/// that both read the same configuration.
pub fn parity_run(directory: &Path) -> Result<ParityRun, SnippetError> {
    let krate = SnippetsCrate::of_directory(directory);
    let words = parity_words(directory, krate.as_ref())?;
    let shown = words
        .iter()
        .map(|w| profiling_core::driver::nsys::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    let mut command = match &krate {
        Some(krate) => {
            let mut command = crate::workspace::cargo_for_snippets(&krate.dir);
            command.current_dir(&krate.dir);
            command
        }
        None => Command::new(cargo()),
    };
    let output = run(command.args(&words[1..]).env("RUST_BACKTRACE", "0"), &shown)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    Ok(ParityRun {
        command: shown,
        outcome: parity_outcome(output.status.success(), &stdout, &stderr),
    })
}

/// Reads what `cargo test ... -- --nocapture` printed of the parity test.
fn parity_outcome(success: bool, stdout: &str, stderr: &str) -> ParityOutcome {
    let ran = stdout.contains("parity::the_copy_computes_what_production_computes");
    if success {
        return match stdout.lines().find(|l| l.starts_with("parity: ")) {
            Some(line) if ran => ParityOutcome::Passed(line.trim().to_owned()),
            _ => ParityOutcome::Missing,
        };
    }
    let mut panic = stdout
        .lines()
        .chain(stderr.lines())
        .skip_while(|l| !l.contains("panicked at"));
    if panic.next().is_some() {
        let message: Vec<&str> = panic
            .take_while(|l| !l.starts_with("note:") && !l.starts_with("stack backtrace"))
            .collect();
        return ParityOutcome::Failed(message.join("\n").trim().to_owned());
    }
    ParityOutcome::NotRun(stderr.trim().to_owned())
}

/// The result of running the new target once.
#[derive(Debug, Clone)]
pub struct SmokeRun {
    pub command: String,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// The `cargo run` that [`smoke_run`] runs, as program and arguments.
fn smoke_words(krate: &SnippetsCrate, config: &Path, release: bool) -> Vec<String> {
    let mut words: Vec<String> = ["cargo", "run", "--quiet"].map(String::from).to_vec();
    if release {
        words.push("--release".to_owned());
    }
    // A profiling crate `init` made has its own binary; this workspace's is
    // `profile-cli`.
    let own = crate::workspace::profiling_package(&krate.dir).is_some();
    let (package, binary) = if own {
        (krate.package.as_str(), "profile")
    } else {
        (CLI_PACKAGE, CLI_BINARY)
    };
    words.extend(["-p", package, "--bin", binary, "--manifest-path"].map(String::from));
    words.push(krate.dir.join("Cargo.toml").to_string_lossy().into_owned());
    words.extend(["--", "run", "--config"].map(String::from));
    words.push(absolute(config).to_string_lossy().into_owned());
    words.extend(["--warmup", "0", "--iterations", "1"].map(String::from));
    words
}

/// The command [`smoke_run`] runs, as it could be typed.
pub fn smoke_command(krate: &SnippetsCrate, config: &Path, release: bool) -> String {
    smoke_words(krate, config, release)
        .iter()
        .map(|w| profiling_core::driver::nsys::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Builds the command line tool of the workspace that holds `krate`
/// (optimized when `release`) and runs `config`'s target once: no warmup,
/// one measured pass, its output validated.
pub fn smoke_run(
    krate: &SnippetsCrate,
    config: &Path,
    release: bool,
) -> Result<SmokeRun, SnippetError> {
    let words = smoke_words(krate, config, release);
    let shown = smoke_command(krate, config, release);
    let output = run(
        crate::workspace::cargo_for_snippets(&krate.dir).args(&words[1..]),
        &shown,
    )?;
    Ok(SmokeRun {
        command: shown,
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linked-in snippet's parity test selects the snippets crate too
    /// (the features of the build before it); a snippet not linked in is
    /// tested alone.
    #[test]
    fn the_parity_test_selects_the_snippets_crate_that_links_the_snippet_in() {
        let root = tempfile::tempdir().unwrap();
        let krate_dir = root.path().join("inference_profiling");
        for name in ["linked", "alone"] {
            let dir = krate_dir.join("snippets").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("Cargo.toml"),
                format!("[package]\nname = \"snippet-{name}\"\n"),
            )
            .unwrap();
        }
        std::fs::write(
            krate_dir.join("Cargo.toml"),
            "[package]\nname = \"snips\"\n\n[dependencies]\nsnippet-linked = { path = \"snippets/linked\" }\n",
        )
        .unwrap();
        let krate = SnippetsCrate::of_directory(&krate_dir.join("snippets/linked")).unwrap();
        let selected = |name: &str| {
            let words = parity_words(&krate_dir.join("snippets").join(name), Some(&krate)).unwrap();
            words
                .windows(2)
                .filter(|pair| pair[0] == "-p")
                .map(|pair| pair[1].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(selected("linked"), ["snippet-linked", "snips"]);
        assert_eq!(selected("alone"), ["snippet-alone"]);
        // The snippets crate's own tests of module snippets are left out.
        let linked = parity_words(&krate_dir.join("snippets/linked"), Some(&krate)).unwrap();
        assert_eq!(
            linked[linked.len() - 5..],
            ["parity::", "--", "--nocapture", "--skip", "::parity::"]
        );
        let alone = parity_words(&krate_dir.join("snippets/alone"), Some(&krate)).unwrap();
        assert_eq!(alone[alone.len() - 3..], ["parity::", "--", "--nocapture"]);
    }

    #[test]
    fn the_parity_test_s_output_says_how_it_went() {
        let passed = "running 1 test\nparity: the copy computes what production computes on 2 record(s) of dummy, compared with ==\ntest parity::the_copy_computes_what_production_computes ... ok\n";
        assert_eq!(
            parity_outcome(true, passed, ""),
            ParityOutcome::Passed("parity: the copy computes what production computes on 2 record(s) of dummy, compared with ==".to_owned())
        );
        assert_eq!(
            parity_outcome(true, "running 0 tests\n", ""),
            ParityOutcome::Missing
        );
        let failed = "running 1 test\ntest parity::the_copy_computes_what_production_computes ... FAILED\n\nthread 'parity::the_copy_computes_what_production_computes' (7) panicked at profiling-core/src/parity.rs:173:36:\nparity: record `dummy-0`: the outputs differ:\n  copy: [1]\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(
            parity_outcome(false, failed, ""),
            ParityOutcome::Failed(
                "parity: record `dummy-0`: the outputs differ:\n  copy: [1]".to_owned()
            )
        );
        assert_eq!(
            parity_outcome(false, "", "error[E0308]: mismatched types\n"),
            ParityOutcome::NotRun("error[E0308]: mismatched types".to_owned())
        );
    }

    #[test]
    fn compiler_messages_are_read_from_cargo_json() {
        // As cargo 1.9x writes them (the explanation cut short).
        let stream = concat!(
            r#"{"reason":"compiler-message","package_id":"path+file:///w/snippets/a#0.1.0","manifest_path":"/w/snippets/a/Cargo.toml","target":{"kind":["lib"],"crate_types":["lib"],"name":"a","src_path":"/w/snippets/a/target.rs","edition":"2021","doc":true,"doctest":true,"test":true},"message":{"rendered":"error[E0425]: cannot find value `x`\n","$message_type":"diagnostic","children":[],"level":"error","message":"cannot find value `x`","spans":[{"byte_end":21,"byte_start":20,"column_end":22,"column_start":21,"expansion":null,"file_name":"/w/snippets/a/target.rs","is_primary":true,"label":"not found in this scope","line_end":12,"line_start":12,"suggested_replacement":null,"suggestion_applicability":null,"text":[]}],"code":{"code":"E0425","explanation":"An unresolved name was used."}}}"#,
            "\n",
            r#"{"reason":"compiler-message","package_id":"path+file:///w/snippets/a#0.1.0","manifest_path":"/w/snippets/a/Cargo.toml","target":{"kind":["lib"],"crate_types":["lib"],"name":"a","src_path":"/w/snippets/a/target.rs","edition":"2021","doc":true,"doctest":true,"test":true},"message":{"rendered":"note: n\n","$message_type":"diagnostic","children":[],"level":"note","message":"n","spans":[],"code":null}}"#,
            "\n",
            "a line that is not JSON\n",
            r#"{"reason":"build-finished","success":false}"#,
            "\n",
        );
        let found: Vec<Diagnostic> = cargo_metadata::Message::parse_stream(stream.as_bytes())
            .filter_map(|message| diagnostic(message.unwrap()))
            .collect();
        assert_eq!(
            found,
            vec![Diagnostic {
                level: "error".to_owned(),
                file: Some("/w/snippets/a/target.rs".to_owned()),
                line: Some(12),
                rendered: "error[E0425]: cannot find value `x`\n".to_owned(),
            }]
        );
    }
}
