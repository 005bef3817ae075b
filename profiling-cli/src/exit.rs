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

/// `ab --bisect`: the exit code `code` as `git bisect run` reads it. The
/// gates' accept is 0 ("good") and their reject 1 ("bad"); an inconclusive
/// verdict, a side that does not build or run, or anything else the pair
/// could not judge is [`EXIT_CANNOT_TEST`] ("skip"), so that a noisy pair
/// or a broken commit is never taken for the first bad one. A signal's
/// code (128 and up) stays, and stops the bisection.
pub fn for_bisect(code: u8) -> u8 {
    match code {
        EXIT_OK => EXIT_OK,
        EXIT_REGRESSION => 1,
        signal if signal >= 128 => signal,
        _ => EXIT_CANNOT_TEST,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisect_reads_accept_as_good_reject_as_bad_and_the_rest_as_skip() {
        assert_eq!(for_bisect(EXIT_OK), 0);
        assert_eq!(for_bisect(EXIT_REGRESSION), 1);
        for unjudged in [
            EXIT_TARGET_FAILED,
            EXIT_USAGE,
            EXIT_INCONCLUSIVE,
            EXIT_CANNOT_TEST,
        ] {
            assert_eq!(for_bisect(unjudged), 125, "{unjudged}");
        }
        assert_eq!((for_bisect(130), for_bisect(143)), (130, 143));
    }
}
