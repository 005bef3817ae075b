//! Running a workspace's `profile` binary once it is built: in this
//! process's place, or as a child that hands back what is left to do
//! (a handoff file), a stage at a time for `ab --until-decided`, or to
//! ask where its profiles keep their runs.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::finish;
use crate::handoff::{self, Handoff};

/// The option the binary is given the handoff file with: its first name,
/// which a binary built before it was called `--handoff` understands too.
const HANDOFF_OPTION: &str = "--outcome";

/// Runs the profiling binary with a handoff file, waits for it (a
/// Ctrl-C reaches it from the terminal; a SIGTERM sent here is passed on),
/// then does what it left to do.
pub(super) fn run_then_finish(
    executable: &Path,
    forwarded: &[&OsStr],
    command: &crate::Command,
) -> u8 {
    match run_for_handoff(executable, forwarded) {
        (_, Ok(Some(handoff))) => finish::finish_delegated(command, handoff),
        (code, Ok(None)) => code,
        (_, Err(error)) => {
            eprintln!("error: what the profiling binary left: {error}");
            1
        }
    }
}

/// `ab --until-decided` through the workspace's binary: each stage is a
/// run of it (`--stage K`, the passes the schedule gives), judged here.
pub(super) fn ab_in_stages(
    executable: &Path,
    forwarded: &[&OsStr],
    command: &crate::Command,
) -> u8 {
    let crate::Command::Ab(ab) = command else {
        return crate::exit::EXIT_USAGE;
    };
    let words = without_options(
        forwarded,
        &["--budget", "--iterations", "--ab-id", "--block-passes"],
        &["--until-decided"],
    );
    let mut id = ab.ab_id.clone();
    let mut out = crate::streams::ClosedQuietly::new(std::io::stdout().lock());
    let mut err = crate::streams::ClosedQuietly::new(std::io::stderr().lock());
    let result = crate::ab::until_decided(
        ab,
        &mut |stage, size, _err| {
            let mut stage_words = words.clone();
            stage_words.extend(["--stage".into(), stage.to_string().into()]);
            if let Some(id) = &id {
                stage_words.extend(["--ab-id".into(), id.into()]);
            }
            let passes = size.map(|size| size.passes).or(ab.iterations);
            let block_passes = size.and_then(|size| size.block_passes).or(ab.block_passes);
            for (option, value) in [("--iterations", passes), ("--block-passes", block_passes)] {
                if let Some(value) = value {
                    stage_words.extend([option.into(), value.to_string().into()]);
                }
            }
            let stage_words: Vec<&OsStr> = stage_words.iter().map(OsString::as_os_str).collect();
            match run_for_handoff(executable, &stage_words) {
                (_, Ok(Some(Handoff::Paired(mut pairs)))) if pairs.len() == 1 => {
                    let paired = pairs.remove(0);
                    // The default id the first stage took: AB_ID-1.
                    if id.is_none() {
                        id = paired
                            .dir
                            .file_name()
                            .and_then(|name| name.to_str()?.strip_suffix("-1").map(str::to_owned));
                    }
                    Ok(Ok(paired))
                }
                (code, Ok(_)) => Ok(Err(code.max(1))),
                (_, Err(error)) => {
                    eprintln!("error: what the profiling binary left: {error}");
                    Ok(Err(1))
                }
            }
        },
        &mut out,
        &mut err,
    );
    crate::exit_code(result, &mut err)
}

/// `words` without the options `valued` (with their value, as `--x V` or
/// `--x=V`) and the flags `flags`.
fn without_options(words: &[&OsStr], valued: &[&str], flags: &[&str]) -> Vec<OsString> {
    let mut kept = Vec::with_capacity(words.len());
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if valued.contains(&text.as_ref()) {
            words.next();
        } else if !(flags.contains(&text.as_ref())
            || valued.iter().any(|option| {
                text.strip_prefix(option)
                    .is_some_and(|rest| rest.starts_with('='))
            }))
        {
            kept.push((*word).to_owned());
        }
    }
    kept
}

/// Runs the profiling binary with a handoff file and waits for it: its
/// exit code, and the handoff it left (`None` when it stopped before
/// writing one).
fn run_for_handoff(
    executable: &Path,
    forwarded: &[&OsStr],
) -> (u8, anyhow::Result<Option<Handoff>>) {
    let handoff_file =
        std::env::temp_dir().join(format!("profile-cli-handoff-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&handoff_file);
    // Registered before the child starts: from here on, neither signal
    // ends this process before the child has written what it ran. A
    // Ctrl-C reaches the child from the terminal by itself (the flag only
    // absorbs it here); each SIGTERM is passed on, so that a second one
    // ends the child at once as it would a run started directly.
    let absorbed_interrupt = Arc::new(AtomicBool::new(false));
    let terminated = Arc::new(AtomicBool::new(false));
    let handlers = [
        signal_hook::flag::register(signal_hook::consts::SIGINT, absorbed_interrupt),
        signal_hook::flag::register(signal_hook::consts::SIGTERM, terminated.clone()),
    ];
    say_what_runs(executable, forwarded);
    let code = match Command::new(executable)
        .args(forwarded)
        .arg(HANDOFF_OPTION)
        .arg(&handoff_file)
        .spawn()
    {
        Ok(child) => wait_passing_on_sigterm(child, &terminated),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            return (1, Ok(None));
        }
    };
    let handoff = handoff::read(&handoff_file);
    let _ = std::fs::remove_file(&handoff_file);
    for id in handlers.into_iter().flatten() {
        signal_hook::low_level::unregister(id);
    }
    (code, handoff)
}

/// Waits for `child`, sending it SIGTERM each time `terminated` is
/// raised; its exit code (128 + the signal that ended it).
fn wait_passing_on_sigterm(mut child: std::process::Child, terminated: &AtomicBool) -> u8 {
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break child.wait().ok(),
        }
        if terminated.swap(false, Ordering::Relaxed) {
            // SAFETY: kill(2) on the pid of a child not yet waited for.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    status.map_or(1, |status| match status.code() {
        Some(code) => code as u8,
        None => {
            use std::os::unix::process::ExitStatusExt;
            status.signal().map_or(1, |signal| (128 + signal) as u8)
        }
    })
}

/// `compare`, `report` and `baselines`: where the binary's profiles keep
/// their runs, asked of it, then read here.
pub(super) fn read_runs(
    executable: &Path,
    cli: crate::Cli,
    args: &[OsString],
    workspace: &Path,
) -> u8 {
    let output = match Command::new(executable)
        .arg("profiles")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(output) => output,
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            return 1;
        }
    };
    let profiles: Vec<profiling_core::driver::session::ProfileRuns> =
        match serde_json::from_slice(&output.stdout) {
            Ok(profiles) if output.status.success() => profiles,
            _ => {
                eprintln!(
                    "error: `{} profiles` did not list the profiles of {}",
                    executable.display(),
                    workspace.display()
                );
                return 1;
            }
        };
    finish::read_delegated(cli, args, workspace, &profiles)
}

/// With `-v`: the workspace's binary and its arguments, as a shell would
/// run them.
fn say_what_runs(executable: &Path, args: &[&OsStr]) {
    if crate::streams::verbose() {
        let words: Vec<String> = std::iter::once(executable.as_os_str())
            .chain(args.iter().copied())
            .map(|word| profiling_core::driver::nsys::shell_quote(&word.to_string_lossy()))
            .collect();
        eprintln!("profile-cli: running `{}`", words.join(" "));
    }
}

/// Runs the binary with `args` in this process's place: its signals, its
/// exit code.
#[cfg(unix)]
pub(super) fn exec(executable: &Path, args: &[&OsStr]) -> u8 {
    use std::os::unix::process::CommandExt;
    say_what_runs(executable, args);
    let error = Command::new(executable).args(args).exec();
    eprintln!("error: cannot run {}: {error}", executable.display());
    1
}

/// Runs the binary with `args` and waits for it: its exit code.
#[cfg(not(unix))]
pub(super) fn exec(executable: &Path, args: &[&OsStr]) -> u8 {
    match Command::new(executable).args(args).status() {
        Ok(status) => status.code().map_or(1, |code| code as u8),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::{Cli, Command};

    #[test]
    fn the_commands_that_hand_back_take_the_handoff_file_under_either_name() {
        for option in [HANDOFF_OPTION, "--handoff"] {
            for words in [
                &["run", "x"][..],
                &["sweep", "x"],
                &["ab", "x", "y"],
                &["load", "x"],
            ] {
                let line = ["profile-cli"]
                    .into_iter()
                    .chain(words.iter().copied())
                    .chain([option, "/tmp/handoff.json"]);
                let file = match Cli::try_parse_from(line).unwrap().command {
                    Command::Run(args) => args.handoff,
                    Command::Sweep(args) => args.handoff,
                    Command::Ab(args) => args.handoff,
                    Command::Load(args) => args.handoff,
                    other => panic!("{words:?} parsed as {other:?}"),
                };
                assert_eq!(
                    file.as_deref(),
                    Some(Path::new("/tmp/handoff.json")),
                    "{words:?} {option}"
                );
            }
        }
    }
}
