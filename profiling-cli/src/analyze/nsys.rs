//! `run --nsys`: the run under Nsight Systems (the command
//! `--print-nsys-command` prints), then the analysis of its report, which
//! moves it into the run directory.
//!
//! nsys runs in a process group of its own, its output (the run's among
//! it) read as it comes and passed to stderr without its progress bars,
//! until nsys itself exits: a process it started that still holds the pipe
//! is not waited for. A Ctrl-C or SIGTERM reaches nsys once, from here, as
//! the SIGINT on which it stops the run and writes its report; this process
//! keeps reading until nsys is done, keeps the report beside the run (or
//! removes it when there is no run to keep it with) and says it was
//! interrupted, with the signal's exit code. A second signal ends this
//! process at once (`profiling_core::driver::interrupt`); `runs clean`
//! then puts right the report nsys leaves.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};

use profiling_core::driver::interrupt;
use profiling_core::driver::manifest::signal_name;
use profiling_core::driver::nsys::{NsysCommand, ReportDirLock, REPORT_STEM};
use profiling_core::driver::run_dir::{recover, RunClaim};

use super::progress::ProgressFilter;
use super::{analyze_command, on_path, AnalyzeArgs};
use crate::exit::{EXIT_TARGET_FAILED, EXIT_USAGE};

/// After nsys exited, what a process it started still writes into the
/// pipe is read up to this much, then left.
const READ_AFTER_EXIT: usize = 1 << 20;

/// How nsys ended.
struct Ended {
    status: ExitStatus,
    /// The signal this process received and passed on to nsys as SIGINT.
    interrupted: Option<i32>,
}

/// `run --nsys`. When nsys fails, its own message is above the error line,
/// and what the run left is put right: the report directory, the run's
/// claim and any half-written run directory go.
pub fn run_under_nsys(
    command: &NsysCommand,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let printed = command.render();
    if !on_path("nsys") {
        writeln!(
            err,
            "error: --nsys needs Nsight Systems, and nsys is not on PATH (scripts/setup-nsys installs it): run this where it is:\n{printed}"
        )?;
        return Ok(EXIT_USAGE);
    }
    let _lock = match take_report_dir(command) {
        Ok(lock) => lock,
        Err((code, message)) => {
            writeln!(err, "error: {message}")?;
            return Ok(code);
        }
    };
    writeln!(err, "running under Nsight Systems:\n{printed}")?;
    out.flush()?;
    // The first signal is passed on to nsys rather than ending this
    // process, which then reads nsys's output to its end.
    let _ = interrupt::install_handlers();
    let holding = interrupt::Hold::new();
    let ended = run_filtered(&command.lines, err);
    // Acted on: passed to nsys. One that came after nsys ended ends this
    // process as the hold ends, as anywhere else.
    if ended
        .as_ref()
        .is_ok_and(|ended| ended.interrupted.is_some())
    {
        interrupt::acknowledge();
    }
    drop(holding);
    let ended = match ended {
        Ok(ended) => ended,
        Err(error) => {
            tidy_after_failure(command);
            writeln!(err, "error: cannot run nsys: {error}")?;
            return Ok(EXIT_TARGET_FAILED);
        }
    };
    if let Some(signal) = ended.interrupted {
        return after_interruption(command, &ended, signal, err);
    }
    let status = ended.status;
    let report = command.report_dir.join(format!("{REPORT_STEM}.nsys-rep"));
    if !status.success() || !report.is_file() {
        let why = if status.success() {
            format!("nsys ended without writing {}", report.display())
        } else {
            format!("the run under Nsight Systems failed ({status})")
        };
        tidy_after_failure(command);
        let kept = if command.run_dir.join("manifest.yaml").is_file() {
            format!(
                "; the run itself is in {}, without Nsight's report",
                command.run_dir.display()
            )
        } else {
            "; nothing of the run was kept".to_owned()
        };
        writeln!(err, "error: {why}: nsys's own message is above{kept}")?;
        return Ok(status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .filter(|&c| c != 0)
            .unwrap_or(EXIT_TARGET_FAILED));
    }
    if !command.run_writes_manifest {
        return keep_without_manifest(command, json, out, err);
    }
    let args = AnalyzeArgs {
        path: command.run_dir.clone(),
        capture_range: None,
        kernels: 3,
        json,
        force: false,
        quiet: false,
    };
    analyze_command(args, out, err)
}

/// The report directory, made afresh and held: one left by an earlier
/// attempt is not this run's and goes, one a live `run --nsys` holds is
/// refused.
fn take_report_dir(command: &NsysCommand) -> Result<ReportDirLock, (u8, String)> {
    let dir = &command.report_dir;
    let busy = || {
        (
            EXIT_USAGE,
            format!(
                "{} is held by another run under Nsight Systems of the same run id: choose another --run-id, or wait for it",
                dir.display()
            ),
        )
    };
    let cannot = |error: std::io::Error| {
        (
            EXIT_TARGET_FAILED,
            format!("cannot make {} for Nsight's report: {error}", dir.display()),
        )
    };
    if dir.is_dir() {
        match ReportDirLock::try_take(dir) {
            Ok(Some(earlier)) => {
                let _ = std::fs::remove_dir_all(dir);
                drop(earlier);
            }
            Ok(None) => return Err(busy()),
            Err(error) => return Err(cannot(error)),
        }
    } else {
        // A file or a link in its place: nsys cannot write there.
        let _ = std::fs::remove_file(dir);
    }
    std::fs::create_dir_all(dir).map_err(cannot)?;
    ReportDirLock::try_take(dir)
        .map_err(cannot)?
        .ok_or_else(busy)
}

/// After nsys ended on the signal passed to it: the report goes into the
/// run directory when the run left one (its manifest says it was
/// interrupted), and is removed otherwise; either way it is said, and the
/// exit code is the signal's.
fn after_interruption(
    command: &NsysCommand,
    ended: &Ended,
    signal: i32,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let name = if signal == libc::SIGHUP {
        "SIGHUP".to_owned()
    } else {
        signal_name(signal)
    };
    let report = command.report_dir.join(format!("{REPORT_STEM}.nsys-rep"));
    let run_dir = &command.run_dir;
    let kept = if report.is_file() && run_dir.join("manifest.yaml").is_file() {
        match super::adopt_report(run_dir, true, err) {
            Ok(()) => format!(
                "the run and Nsight's report are in {} (profile-cli analyze {} reads it)",
                run_dir.display(),
                run_dir.display()
            ),
            Err(message) => {
                tidy_after_failure(command);
                format!("{message}; the report was removed")
            }
        }
    } else {
        let had_report = report.is_file();
        tidy_after_failure(command);
        match (had_report, run_dir.join("manifest.yaml").is_file()) {
            (true, _) => {
                "the run left no directory to keep Nsight's report in: it was removed".to_owned()
            }
            (false, true) => format!(
                "the run is in {}, without Nsight's report (nsys wrote none)",
                run_dir.display()
            ),
            (false, false) => "nothing of the run was kept".to_owned(),
        }
    };
    writeln!(
        err,
        "interrupted by {name}: nsys was stopped with SIGINT and ended ({}); {kept}",
        ended.status
    )?;
    Ok(interrupt::exit_code(signal))
}

/// A run that writes no directory (`write_manifest: false`): Nsight's
/// report is kept in the run directory, made for it, and analyzed there.
/// The directory of an earlier run (`--force`) is not this run's: the
/// report is analyzed where nsys wrote it and then removed, not merged in.
fn keep_without_manifest(
    command: &NsysCommand,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let run_dir = &command.run_dir;
    let report_name = format!("{REPORT_STEM}.nsys-rep");
    let claim = match RunClaim::take(run_dir) {
        Ok(claim) => claim,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&command.report_dir);
            writeln!(err, "error: Nsight's report cannot be kept: {error}")?;
            return Ok(EXIT_TARGET_FAILED);
        }
    };
    let _ = recover(run_dir, &claim);
    let placed = !run_dir.exists() && std::fs::rename(&command.report_dir, run_dir).is_ok();
    drop(claim);
    let report = if placed {
        run_dir.join(&report_name)
    } else {
        command.report_dir.join(&report_name)
    };
    let args = AnalyzeArgs {
        path: report.clone(),
        capture_range: None,
        kernels: 3,
        json,
        force: false,
        quiet: json,
    };
    let code = analyze_command(args, out, err)?;
    if placed {
        writeln!(
            err,
            "nsys report: {} (the run wrote no manifest: write_manifest is false)",
            report.display()
        )?;
    } else {
        let _ = std::fs::remove_dir_all(&command.report_dir);
        writeln!(
            err,
            "note: Nsight's report was not kept: {} holds an earlier run, and this one wrote no manifest to replace it with",
            run_dir.display()
        )?;
    }
    Ok(code)
}

/// Runs `lines` as one command in a process group of its own, its stdout
/// and stderr (one pipe, so their order holds) to `err` as they come,
/// without nsys's progress bars, until the command itself exits. A SIGINT,
/// SIGTERM or SIGHUP to this process is passed on to it as SIGINT, once.
fn run_filtered(lines: &[Vec<String>], err: &mut dyn Write) -> std::io::Result<Ended> {
    let words: Vec<&String> = lines.iter().flatten().collect();
    let Some((program, args)) = words.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "an empty nsys command",
        ));
    };
    // Written by the signal handlers, read here: a signal wakes the wait
    // below whenever it comes (no window between a check and the wait).
    let (signal_reader, signal_writer) = std::io::pipe()?;
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handlers = register_signals(&received, &signal_writer)?;
    drop(signal_writer);
    let result = spawn_and_follow(program, args, &signal_reader, &received, err);
    for handler in handlers {
        signal_hook::low_level::unregister(handler);
    }
    result
}

/// Handlers for SIGINT, SIGTERM and SIGHUP that store the signal's number
/// in `received` and write a byte to `wake`.
fn register_signals(
    received: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
    wake: &std::io::PipeWriter,
) -> std::io::Result<Vec<signal_hook::SigId>> {
    let mut handlers = Vec::new();
    // SIGHUP too: nsys is no longer in the terminal's foreground group,
    // and a closed terminal would leave it capturing into a pipe nobody
    // reads.
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        handlers.push(signal_hook::flag::register_usize(
            signal,
            received.clone(),
            signal as usize,
        )?);
        handlers.push(signal_hook::low_level::pipe::register(
            signal,
            wake.try_clone()?,
        )?);
    }
    Ok(handlers)
}

/// Starts `program` with `args` and passes its output through the progress
/// filter to `err` until it exits, passing on as SIGINT the first signal
/// that `received` holds (or that came before its handlers).
fn spawn_and_follow(
    program: &str,
    args: &[&String],
    signal_reader: &std::io::PipeReader,
    received: &std::sync::atomic::AtomicUsize,
    err: &mut dyn Write,
) -> std::io::Result<Ended> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut child = spawn_in_own_group(program, args, writer)?;
    set_nonblocking(reader.as_fd())?;
    set_nonblocking(signal_reader.as_fd())?;
    let exited = pidfd_of(child.id());
    let mut filter = ProgressFilter::default();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut pipe_open = true;
    let mut interrupted = None;
    let status = loop {
        if interrupted.is_none() {
            interrupted = pass_on_signal(received, &child);
        }
        if let Some(status) = child.try_wait()? {
            // What it wrote before it ended is in the pipe: read that,
            // not what a process it left behind goes on writing.
            if pipe_open {
                let _ = read_available(&mut reader, &mut chunk, READ_AFTER_EXIT, |bytes| {
                    filter.feed(bytes, err)
                });
            }
            break status;
        }
        let output = pipe_open.then(|| reader.as_fd());
        if !wait_for_any(signal_reader.as_fd(), exited.as_ref(), output)? {
            continue;
        }
        // The signal pipe only wakes the loop; what came is in `received`.
        let _ = read_available(&mut &*signal_reader, &mut chunk, usize::MAX, |_| Ok(()));
        if pipe_open {
            let more = read_available(&mut reader, &mut chunk, usize::MAX, |bytes| {
                filter.feed(bytes, err)
            })?;
            pipe_open = more;
        }
    };
    filter.finish_line(err)?;
    Ok(Ended {
        status,
        interrupted,
    })
}

/// Starts `program` with `args` in a process group of its own, stdin
/// closed, stdout and stderr both to `output`.
fn spawn_in_own_group(
    program: &str,
    args: &[&String],
    output: std::io::PipeWriter,
) -> std::io::Result<std::process::Child> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output)
        // Ctrl-C at a terminal reaches this process only; nsys
        // hears it from here, once.
        .process_group(0);
    // The command, and with it this process's end of the pipe,
    // goes here.
    command.spawn()
}

/// The signal this process received, if any, after sending SIGINT to
/// `child` for it.
fn pass_on_signal(
    received: &std::sync::atomic::AtomicUsize,
    child: &std::process::Child,
) -> Option<i32> {
    // Also one that came before these handlers, held off by
    // the process's own.
    let signal = match received.load(std::sync::atomic::Ordering::SeqCst) {
        0 => interrupt::received().unwrap_or(0) as usize,
        signal => signal,
    };
    if signal == 0 {
        return None;
    }
    // SAFETY: kill(2) on the child this process started and
    // has not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    Some(signal as i32)
}

/// Waits until `signals` has a byte, `exited` (the child's pidfd) says it
/// ended or `output` has more; false when a signal broke the wait off
/// before any of these.
fn wait_for_any(
    signals: BorrowedFd<'_>,
    exited: Option<&OwnedFd>,
    output: Option<BorrowedFd<'_>>,
) -> std::io::Result<bool> {
    let mut polled = vec![poll_entry(signals)];
    if let Some(pidfd) = exited {
        polled.push(poll_entry(pidfd.as_fd()));
    }
    if let Some(output) = output {
        polled.push(poll_entry(output));
    }
    // Without a pidfd (a kernel before 5.3), the child's end is
    // looked at ten times a second.
    let timeout = if exited.is_some() { -1 } else { 100 };
    // SAFETY: poll(2) on descriptors that live through the call.
    let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, timeout) };
    if ready < 0 {
        let error = std::io::Error::last_os_error();
        if error.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(error);
    }
    Ok(true)
}

/// Reads what `source` has now, up to `limit` bytes, handing each chunk to
/// `take`; false once it reached its end (every writer gone).
fn read_available(
    source: &mut impl Read,
    chunk: &mut [u8],
    limit: usize,
    mut take: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<bool> {
    let mut read_so_far = 0usize;
    while read_so_far < limit {
        match source.read(chunk) {
            Ok(0) => return Ok(false),
            Ok(read) => {
                read_so_far += read;
                take(&chunk[..read])?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(true)
}

fn poll_entry(fd: BorrowedFd<'_>) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

fn set_nonblocking(fd: BorrowedFd<'_>) -> std::io::Result<()> {
    // SAFETY: fcntl(2) on a descriptor open for the call.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0
        || unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A descriptor that becomes readable when process `pid` exits (Linux 5.3
/// on); `None` where the kernel has none.
fn pidfd_of(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new
    // descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a descriptor just returned to this process, owned here.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// After nsys failed: its report directory goes, and what the run under
/// it left (its claim, a half-written run directory) is put right as the
/// next run of the id would.
fn tidy_after_failure(command: &NsysCommand) {
    let _ = std::fs::remove_dir_all(&command.report_dir);
    if let Ok(claim) = RunClaim::take(&command.run_dir) {
        let _ = recover(&command.run_dir, &claim);
        drop(claim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path a test may leave.
    fn scratch() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    /// The command's own exit is what ends the reading: a process it left
    /// behind holding the pipe open is not waited for, and what the
    /// command wrote before it ended is all there.
    #[test]
    fn reading_ends_when_the_command_does_not_when_the_pipe_closes() {
        let dir = scratch();
        let release = dir.path().join("release");
        // The process left behind ends with the release file, or with the
        // test's directory once that is removed: never left running.
        let script = format!(
            "(while [ -d '{}' ] && [ ! -e '{}' ]; do sleep 0.05; done) & printf 'said before the end\\n'; exit 3",
            dir.path().display(),
            release.display()
        );
        let lines = vec![vec!["sh".to_owned(), "-c".to_owned(), script]];
        let mut err = Vec::new();
        let ended = run_filtered(&lines, &mut err).unwrap();
        std::fs::write(&release, "").unwrap();
        assert_eq!(ended.status.code(), Some(3));
        assert_eq!(ended.interrupted, None);
        assert_eq!(String::from_utf8(err).unwrap(), "said before the end\n");
    }
}
