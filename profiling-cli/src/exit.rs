//! The exit codes of `profile-cli`, each with when a command returns it:
//! the one list the commands, `--help` and the guides agree with. A command
//! stopped by a signal exits as the shell would say it died of it, 128 plus
//! its number (130 for Ctrl-C, 143 for SIGTERM), through
//! `profiling_core::driver::interrupt`.

/// The command did what it was asked: the run finished, the runs were
/// compared, the page written (and with `ab --accept`, the candidate accepted).
pub const EXIT_OK: u8 = 0;
/// The target failed, or a result could not be written.
pub const EXIT_TARGET_FAILED: u8 = 1;
/// Bad usage, config or data: the command refused what it was given.
pub const EXIT_USAGE: u8 = 2;
/// With `--fail-on-regression`, a row is slower beyond the noise threshold;
/// or `ab --accept`'s gates rejected the candidate.
pub const EXIT_REGRESSION: u8 = 3;
/// `ab --accept`'s gates could not decide (an interval straddles a threshold).
pub const EXIT_INCONCLUSIVE: u8 = 4;
/// `ab --against`'s candidate, the working tree, does not build: what
/// `git bisect run` takes as "skip this revision".
pub const EXIT_CANNOT_TEST: u8 = 125;
