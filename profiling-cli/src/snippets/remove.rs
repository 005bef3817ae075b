//! `profile-cli remove`: deletes a snippet, its directory and its entry in
//! the profiling crate's Cargo.toml, and its package from the workspace's
//! Cargo.lock.

use std::io::Write;
use std::path::Path;

use clap::Args;
use profiling_extract::{self as snippet, SnippetsCrate};

use super::snippet_directory;
use crate::exit::{EXIT_OK, EXIT_USAGE};

#[derive(Debug, Args)]
pub(crate) struct RemoveArgs {
    /// The snippet: its profile name, or its directory.
    pub(crate) name: String,
    /// Remove it even though it holds runs or baselines: they go too (never while a run of it is
    /// in progress: refused, naming the run and its process).
    #[arg(long)]
    pub(crate) force: bool,
}

/// `profile-cli remove NAME`: the snippet's entry in the snippets crate
/// goes first (so that a failure after leaves a workspace that builds),
/// then its directory.
pub(crate) fn remove(
    args: RemoveArgs,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let snippets = root.join("inference_profiling").join("snippets");
    let directory = snippet_directory(&args.name, root).or_else(|| {
        let by_name = snippets.join(args.name.replace('-', "_"));
        by_name.is_dir().then_some(by_name)
    });
    let krate_dir = root.join("inference_profiling");
    let krate = SnippetsCrate::at(&krate_dir);
    let Some(directory) = directory else {
        // Deleted by hand: only its entry is left.
        let wanted = args.name.replace('-', "_");
        let stale = snippet::stale_entries(&krate_dir)
            .into_iter()
            .find(|entry| entry.directory() == wanted);
        return match (stale, &krate) {
            (Some(entry), Some(krate)) => {
                snippet::remove_entry(krate, entry.directory())?;
                writeln!(
                    out,
                    "removed `{}` ({}) from inference_profiling/Cargo.toml: its directory was already gone",
                    entry.package, entry.path
                )?;
                prune_lock(krate, &entry.package, out)?;
                Ok(EXIT_OK)
            }
            _ => {
                writeln!(
                    err,
                    "error: no snippet `{}`: neither a directory with a target.rs nor a name under {}",
                    args.name,
                    snippets.display()
                )?;
                Ok(EXIT_USAGE)
            }
        };
    };
    let shown = directory
        .strip_prefix(root)
        .unwrap_or(&directory)
        .display()
        .to_string();
    let count = |name: &str| {
        std::fs::read_dir(directory.join(name))
            .map(|entries| entries.filter_map(Result::ok).count())
            .unwrap_or(0)
    };
    // A run being written is never removed, `--force` or not: its
    // process would go on writing into a directory that is gone.
    if let Some(live) = live_runs(&directory).into_iter().next() {
        writeln!(
            err,
            "error: {shown} is in use: run `{}` ({}) is running now in process {} ({} is locked): nothing removed; wait for it to end, or stop it",
            live.run_id,
            live.run_dir
                .strip_prefix(&directory)
                .unwrap_or(&live.run_dir)
                .display(),
            live.pid,
            live.claim.display()
        )?;
        return Ok(EXIT_USAGE);
    }
    let (runs, baselines) = (count("runs"), count("baselines"));
    if (runs > 0 || baselines > 0) && !args.force {
        writeln!(
            err,
            "error: {shown} holds {runs} run(s) and {baselines} baseline(s): nothing removed; `--force` removes them with it"
        )?;
        return Ok(EXIT_USAGE);
    }
    let package = snippet::package_of(&directory).ok();
    if let Some(krate) = &krate {
        if let Some(name) = directory.file_name().and_then(|n| n.to_str()) {
            if snippet::remove_entry(krate, name)? {
                writeln!(
                    out,
                    "removed its entry from {}",
                    krate
                        .dir
                        .join("Cargo.toml")
                        .strip_prefix(root)
                        .unwrap_or(&krate.dir)
                        .display()
                )?;
            }
        }
    }
    std::fs::remove_dir_all(&directory)
        .map_err(|error| anyhow::anyhow!("cannot remove {shown}: {error}"))?;
    writeln!(out, "removed {shown}/")?;
    if let (Some(krate), Some(package)) = (&krate, package) {
        prune_lock(krate, &package, out)?;
    }
    Ok(EXIT_OK)
}

/// A run in progress under a snippet's directory: the claim its process
/// holds locked.
struct LiveRun {
    run_id: String,
    run_dir: std::path::PathBuf,
    claim: std::path::PathBuf,
    pid: String,
}

/// The runs in progress under `directory`, at any depth (a pair's sides
/// and a sweep's points claim ids below `runs/`): each `.<id>.claim` whose
/// lock another process holds ([`RunClaim`](profiling_core::driver::run_dir::RunClaim)
/// keeps it locked while its run lasts; the kernel lets go of it when the
/// process ends, however it ends). A claim this process can lock is a
/// leftover, and is let go at once. Symbolic links are not followed.
fn live_runs(directory: &Path) -> Vec<LiveRun> {
    let mut live = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(path);
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(run_id) = name
                .strip_prefix('.')
                .and_then(|rest| rest.strip_suffix(".claim"))
            else {
                continue;
            };
            if !kind.is_file() {
                continue;
            }
            let Ok(mut file) = std::fs::File::open(&path) else {
                continue;
            };
            if held_elsewhere(&file) {
                let mut pid = String::new();
                let _ = std::io::Read::read_to_string(&mut file, &mut pid);
                live.push(LiveRun {
                    run_id: run_id.to_owned(),
                    run_dir: dir.join(run_id),
                    claim: path,
                    pid: pid.trim().to_owned(),
                });
            }
        }
    }
    live.sort_by(|a, b| a.claim.cmp(&b.claim));
    live
}

/// Whether another process holds `file`'s lock (as `RunClaim` takes it:
/// `flock`, exclusive). Taken here, it is let go when `file` closes.
fn held_elsewhere(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor `file` keeps open for the call.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    !taken && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Drops `package` from the workspace's Cargo.lock, which would list it
/// until the next build: `cargo metadata --offline` resolves the lock
/// again without fetching anything. Says what it did, or that the next
/// build will.
fn prune_lock(krate: &SnippetsCrate, package: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let root = krate.workspace_root();
    let lock = root.join("Cargo.lock");
    let lists = |text: &str| text.contains(&format!("name = \"{package}\"\n"));
    if !std::fs::read_to_string(&lock).is_ok_and(|text| lists(&text)) {
        return Ok(());
    }
    let _ = std::process::Command::new(profiling_extract::cargo_program())
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if std::fs::read_to_string(&lock).is_ok_and(|text| !lists(&text)) {
        writeln!(out, "removed `{package}` from Cargo.lock")
    } else {
        writeln!(
            out,
            "note: Cargo.lock still lists `{package}`: the next build of the workspace drops it"
        )
    }
}
