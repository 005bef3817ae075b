//! One command everywhere: `profile-cli list`, `run`, `compare`, `baselines`,
//! `report` and `cache`, run inside another workspace that has its own
//! profiling crate (`profile-cli init` made it), build that workspace's
//! `profile` binary and run it with the same arguments, so that they list
//! and run that workspace's targets and find its runs and image cache.
//!
//! Inside the workspace this binary was built from, and with
//! `--no-delegate`, nothing is delegated.

use std::ffi::{OsStr, OsString};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use profiling_extract::workspace::{find_workspace, profiling_crate};

/// The commands that need a workspace's own targets.
const DELEGATED: &[&str] = &[
    "list",
    "run",
    "compare",
    "baselines",
    "report",
    "cache",
    "sweep",
];

/// What the arguments say about delegation.
struct Asked {
    command: Option<String>,
    workspace: Option<PathBuf>,
    no_delegate: bool,
}

fn read_arguments(args: &[OsString]) -> Asked {
    let mut asked = Asked {
        command: None,
        workspace: None,
        no_delegate: false,
    };
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if text == "--no-delegate" {
            asked.no_delegate = true;
        } else if text == "--workspace" {
            asked.workspace = words.next().map(PathBuf::from);
        } else if let Some(dir) = text.strip_prefix("--workspace=") {
            asked.workspace = Some(PathBuf::from(dir));
        } else if text == "--" {
            break;
        } else if asked.command.is_none() && !text.starts_with('-') {
            asked.command = Some(text.into_owned());
        }
    }
    asked
}

/// The profiling crate of the workspace `args` point at, when the command
/// is one to delegate and that workspace is not `build_root`: its
/// directory and package.
fn delegate_to(args: &[OsString], build_root: &Path) -> Option<(PathBuf, PathBuf, String)> {
    let asked = read_arguments(args);
    if asked.no_delegate || !DELEGATED.contains(&asked.command.as_deref()?) {
        return None;
    }
    let start = match asked.workspace {
        Some(dir) => dir,
        None => std::env::current_dir().ok()?,
    };
    let workspace = find_workspace(&start)?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(&workspace, build_root) {
        return None;
    }
    let Some((krate, package)) = profiling_crate(&workspace) else {
        // `list` and `run` here are this binary's: say whose targets they are.
        eprintln!(
            "note: {} has no profiling crate (`profile-cli init` makes one): these are the targets built into this binary, from {}",
            workspace.display(),
            build_root.display()
        );
        return None;
    };
    Some((workspace, krate, package))
}

/// When `args` are for another workspace's profiling binary: builds it
/// (cargo's progress on stderr), says which binary runs, and runs it with
/// the same arguments; its exit code. `None` when this binary should run
/// the command itself.
pub fn delegate(args: &[OsString], build_root: &Path) -> Option<u8> {
    let (workspace, krate, package) = delegate_to(args, build_root)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = workspace.join("Cargo.toml");
    eprintln!(
        "profile-cli: {} has its own profiling crate ({}): building and running its `profile` binary (--no-delegate runs this one)",
        workspace.display(),
        krate.strip_prefix(&workspace).unwrap_or(&krate).display()
    );
    let mut build = match Command::new(&cargo)
        .args(["build", "--release", "-p", &package, "--bin", "profile"])
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(&manifest)
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            eprintln!("error: cannot run cargo to build {package}: {error}");
            return Some(1);
        }
    };
    // cargo's messages on stdout, one JSON object a line: the executable's
    // path is in the artifact message of the `profile` binary.
    let mut executable = None;
    if let Some(stdout) = build.stdout.take() {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if message["reason"] == "compiler-artifact" && message["target"]["name"] == "profile" {
                executable = message["executable"].as_str().map(PathBuf::from);
            }
        }
    }
    let built = build.wait().map(|status| status.success()).unwrap_or(false);
    let Some(executable) = executable.filter(|_| built) else {
        eprintln!(
            "error: `cargo build --release -p {package} --bin profile --manifest-path {}` failed (above)",
            manifest.display()
        );
        return Some(1);
    };
    eprintln!("profile-cli: running {}", executable.display());
    let forwarded: Vec<&OsStr> = args
        .iter()
        .skip(1)
        .map(OsString::as_os_str)
        .filter(|arg| *arg != "--no-delegate")
        .collect();
    run(&executable, &forwarded)
}

#[cfg(unix)]
fn run(executable: &Path, args: &[&OsStr]) -> Option<u8> {
    use std::os::unix::process::CommandExt;
    // The binary takes this process's place: its signals, its exit code.
    let error = Command::new(executable).args(args).exec();
    eprintln!("error: cannot run {}: {error}", executable.display());
    Some(1)
}

#[cfg(not(unix))]
fn run(executable: &Path, args: &[&OsStr]) -> Option<u8> {
    match Command::new(executable).args(args).status() {
        Ok(status) => Some(status.code().map_or(1, |code| code as u8)),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            Some(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        std::iter::once("profile-cli")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_command_workspace_and_switch_are_read_from_the_arguments() {
        let asked = read_arguments(&args(&["--workspace", "/w", "run", "x", "--no-delegate"]));
        assert_eq!(asked.command.as_deref(), Some("run"));
        assert_eq!(asked.workspace, Some(PathBuf::from("/w")));
        assert!(asked.no_delegate);
        let asked = read_arguments(&args(&["list", "--workspace=/v"]));
        assert_eq!(asked.command.as_deref(), Some("list"));
        assert_eq!(asked.workspace, Some(PathBuf::from("/v")));
        assert!(!asked.no_delegate);
    }

    #[test]
    fn nothing_is_delegated_in_this_workspace_or_for_other_commands() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let here = root.to_str().unwrap();
        assert!(delegate_to(&args(&["--workspace", here, "list"]), root).is_none());
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().to_str().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
        // Another workspace, but without a profiling crate.
        assert!(delegate_to(&args(&["--workspace", other, "list"]), root).is_none());
        let krate = dir.path().join("inference_profiling");
        std::fs::create_dir_all(&krate).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"profiling-snippets\"\n\n[[bin]]\nname = \"profile\"\n\n[dependencies]\nprofiling-cli = { path = \"x\" }\n",
        )
        .unwrap();
        let (workspace, _, package) =
            delegate_to(&args(&["--workspace", other, "list"]), root).unwrap();
        assert_eq!(workspace, std::path::absolute(dir.path()).unwrap());
        assert_eq!(package, "profiling-snippets");
        for command in ["run", "compare", "baselines", "report", "cache"] {
            assert!(
                delegate_to(&args(&["--workspace", other, command]), root).is_some(),
                "{command} needs that workspace's targets"
            );
        }
        assert!(delegate_to(&args(&["--workspace", other, "new", "x"]), root).is_none());
        assert!(
            delegate_to(&args(&["--workspace", other, "--no-delegate", "run"]), root).is_none()
        );
    }
}
