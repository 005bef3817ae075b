//! The progress bar of `profile-cli run`: drawn on a terminal once a phase
//! has lasted a second, cleared at the end of the phase or when a signal
//! stops the run, and never written to a stderr that is not a terminal.
//!
//! Each scenario runs the program (`run_main`, as the binary does) in a
//! child process with one of its streams on a pseudo-terminal and the
//! other on a pipe, on a target whose calls sleep, so how long a phase
//! lasts is known. Run without arguments, this binary runs the scenarios;
//! with the child variable set, it is the program.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use profiling_core::prelude::*;

/// Sleeps 25 ms in every call: 80 passes take two seconds.
#[derive(Default)]
struct Sleeper;

#[profile_target(name = "progress-sleeper")]
impl ProfileTarget for Sleeper {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        std::thread::sleep(Duration::from_millis(25));
        Ok(())
    }
}

/// Set in the child: it is the program.
const CHILD: &str = "PROFILE_CLI_PROGRESS_CHILD";

/// What the bar draws: its filled and empty cells.
const FILLED: char = '█';
const EMPTY: char = '░';
/// What clears the terminal's line: back to its start, erase it.
const CLEAR_LINE: &str = "\r\x1b[2K";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return profiling_cli::run_main();
    }
    the_bar_is_drawn_on_a_terminal_after_a_second_and_cleared_at_the_end();
    nothing_of_the_bar_reaches_a_piped_stderr();
    a_run_stopped_by_a_signal_clears_its_bar_too();
    println!("progress_bar: 3 checks passed");
    ExitCode::SUCCESS
}

/// A pseudo-terminal of 100 columns: the master end, read here, and the
/// end the child writes to.
fn terminal() -> (File, OwnedFd) {
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(&size, None).expect("a pseudo-terminal");
    (File::from(pty.master), pty.slave)
}

/// Which of the child's output streams is the terminal.
#[derive(Clone, Copy, PartialEq)]
enum OnTheTerminal {
    Stderr,
    Stdout,
}

/// Starts `run progress-sleeper` with `iterations` measured passes, one
/// stream on a new terminal and the other piped; returns the child, what
/// the terminal shows as it comes, and the pipe.
fn start(
    output: &Path,
    iterations: u32,
    on_terminal: OnTheTerminal,
) -> (
    Child,
    Receiver<Vec<u8>>,
    Option<std::process::ChildStdout>,
    Option<std::process::ChildStderr>,
) {
    let (master, slave) = terminal();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .env(CHILD, "1")
        .env("TERM", "xterm-256color")
        .args(["run", "progress-sleeper", "--warmup", "0", "--iterations"])
        .arg(iterations.to_string())
        .args(["--run-id", "bar", "--output-dir"])
        .arg(output)
        .stdin(Stdio::null());
    let terminal_end = Stdio::from(slave);
    match on_terminal {
        OnTheTerminal::Stderr => command.stderr(terminal_end).stdout(Stdio::piped()),
        OnTheTerminal::Stdout => command.stdout(terminal_end).stderr(Stdio::piped()),
    };
    let mut child = command.spawn().unwrap();
    // The child holds the terminal's other end alone now: reading ends
    // when it exits.
    drop(command);
    let (chunks, received) = channel();
    let mut master = master;
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        // A terminal whose other end closed reads as an error (EIO).
        while let Ok(read @ 1..) = master.read(&mut buffer) {
            if chunks.send(buffer[..read].to_vec()).is_err() {
                return;
            }
        }
    });
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    (child, received, stdout, stderr)
}

/// Runs 80 passes to the end; returns the output directory, what the
/// terminal showed and what the pipe got.
fn run_to_end(on_terminal: OnTheTerminal) -> (tempfile::TempDir, String, String) {
    let output = tempfile::tempdir().unwrap();
    let (mut child, received, stdout, stderr) = start(output.path(), 80, on_terminal);
    let piped = match on_terminal {
        OnTheTerminal::Stderr => read_all(stdout),
        OnTheTerminal::Stdout => read_all(stderr),
    };
    assert!(child.wait().unwrap().success());
    let terminal = gather(&received);
    (output, terminal, piped)
}

/// What the terminal got after the bar's line was erased, following its
/// last drawing.
fn after_the_bar(terminal: &str) -> &str {
    let last_cell = terminal.rfind([FILLED, EMPTY]).expect("the bar drawn");
    let after = &terminal[last_cell..];
    let cleared = after
        .find(CLEAR_LINE)
        .unwrap_or_else(|| panic!("the bar not cleared: {after:?}"));
    &after[cleared + CLEAR_LINE.len()..]
}

fn read_all(pipe: Option<impl Read>) -> String {
    let mut text = String::new();
    pipe.unwrap().read_to_string(&mut text).unwrap();
    text
}

fn gather(received: &Receiver<Vec<u8>>) -> String {
    let bytes: Vec<u8> = received.iter().flatten().collect();
    String::from_utf8(bytes).unwrap()
}

/// Every drawing of the bar: its position as `done/total`.
fn drawn_positions(text: &str) -> Vec<(u32, u32)> {
    text.match_indices("measured ")
        .filter_map(|(at, _)| {
            let rest = &text[at + "measured ".len()..];
            let bar: String = rest
                .chars()
                .take_while(|c| *c == FILLED || *c == EMPTY)
                .collect();
            let count = rest[bar.len()..]
                .trim_start()
                .split(|c: char| !c.is_ascii_digit() && c != '/')
                .next()?;
            let (done, total) = count.split_once('/')?;
            (bar.chars().count() == 30).then_some((done.parse().ok()?, total.parse().ok()?))
        })
        .collect()
}

/// The measured passes of the run in `output`, in order, from its samples.
fn pass_durations(output: &Path) -> Vec<Duration> {
    let bytes = std::fs::read(output.join("progress-sleeper/runs/bar/samples.bin")).unwrap();
    let samples = profiling_core::driver::run_samples::RunSamples::decode(&bytes).unwrap();
    samples
        .passes
        .kept
        .iter()
        .map(|&ns| Duration::from_nanos(ns))
        .collect()
}

fn the_bar_is_drawn_on_a_terminal_after_a_second_and_cleared_at_the_end() {
    let (output, terminal, stdout) = run_to_end(OnTheTerminal::Stderr);

    let drawn = drawn_positions(&terminal);
    assert!(drawn.len() >= 3, "{drawn:?} in {terminal:?}");
    assert!(drawn.iter().all(|&(_, total)| total == 80), "{drawn:?}");
    assert!(drawn.last().unwrap().0 < 80, "never drawn full: {drawn:?}");
    // When each drawing came, from the passes' own durations: the bar is
    // told after each pass; it first draws at the first telling a second
    // after the first one, then at the first a tenth of a second after the
    // last drawing.
    let passes = pass_durations(output.path());
    let mut since = (1, Duration::from_secs(1));
    for &(done, _) in &drawn {
        let (from, wait) = since;
        let run =
            |to: u32| -> Duration { passes[from as usize..to.max(from) as usize].iter().sum() };
        assert!(
            run(done) >= wait.mul_f64(0.95) && run(done - 1) < wait,
            "drawn at pass {done}, {:?} after pass {from} (and {:?} at the pass before): {drawn:?}",
            run(done),
            run(done - 1)
        );
        since = (done, Duration::from_millis(100));
    }
    // The line the bar was on is erased after its last drawing, before the
    // next output: nothing of it stays on the screen.
    let after = after_the_bar(&terminal);
    assert!(
        !after.contains("measured"),
        "drawn again after clearing: {after:?}"
    );
    assert!(
        after.starts_with("warning: this is a debug build") || after.trim().is_empty(),
        "{after:?}"
    );
    // The summary went to stdout, untouched by the bar.
    assert!(stdout.contains("passes: 80 measured passes"), "{stdout}");
    assert!(
        !stdout.contains(FILLED) && !stdout.contains('\x1b'),
        "{stdout}"
    );
}

fn nothing_of_the_bar_reaches_a_piped_stderr() {
    let (_output, terminal, stderr) = run_to_end(OnTheTerminal::Stdout);
    for text in [&stderr, &terminal] {
        assert!(
            !text.contains(FILLED) && !text.contains(EMPTY) && !text.contains('\x1b'),
            "{text:?}"
        );
        assert!(drawn_positions(text).is_empty(), "{text:?}");
    }
    // Only what a run always says there.
    assert!(
        stderr.is_empty() || stderr.starts_with("warning: this is a debug build"),
        "{stderr:?}"
    );
    assert!(!stderr.contains('\r'), "{stderr:?}");
    assert!(
        terminal.contains("passes: 80 measured passes"),
        "{terminal}"
    );
}

fn a_run_stopped_by_a_signal_clears_its_bar_too() {
    let output = tempfile::tempdir().unwrap();
    let (mut child, received, stdout, _) = start(output.path(), 400, OnTheTerminal::Stderr);
    // Once the bar is on the screen, Ctrl-C.
    let mut terminal = String::new();
    while drawn_positions(&terminal).is_empty() {
        let chunk = received
            .recv_timeout(Duration::from_secs(20))
            .expect("the bar drawn within 20 s");
        terminal.push_str(&String::from_utf8(chunk).unwrap());
    }
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let _ = read_all(stdout);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&child.wait().unwrap()),
        Some(libc::SIGINT)
    );
    terminal.push_str(&gather(&received));
    let after = after_the_bar(&terminal);
    assert!(
        after.starts_with("warning: this is a debug build")
            || after.starts_with("interrupted by SIGINT"),
        "{after:?}"
    );
    assert!(after.contains("interrupted by SIGINT"), "{after:?}");
}
