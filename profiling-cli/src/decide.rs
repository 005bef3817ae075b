//! How a comparison decides: the options `compare`, `report` and
//! `run --baseline` share. They are parsed wherever `run` is (a profiling
//! binary passes them through); comparing is `profile-cli`'s.

use clap::{Args, ValueEnum};

/// The noise threshold when none is given: `profiling_compare::DEFAULT_NOISE`.
pub const DEFAULT_NOISE: f64 = 0.02;
/// `profiling_compare::DEFAULT_SIGNIFICANCE`.
pub const DEFAULT_SIGNIFICANCE: f64 = 0.05;
/// `profiling_compare::statistics::DEFAULT_RESAMPLES`.
pub const DEFAULT_RESAMPLES: u32 = 100_000;
/// `profiling_compare::statistics::DEFAULT_SEED`.
pub const DEFAULT_SEED: u64 = 0x5EED;

/// How a comparison decides: shared by `compare` and `run --baseline`.
#[derive(Debug, Clone, Args)]
pub struct DecideArgs {
    /// A change of the median within this fraction is noise: `no change` needs the whole interval
    /// within 1 ± it, and `faster` or `slower` a ratio beyond it.
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_NOISE)]
    pub noise_threshold: f64,
    /// A change is significant when the Mann-Whitney U test's p-value is below this.
    #[arg(long, value_name = "ALPHA", default_value_t = DEFAULT_SIGNIFICANCE)]
    pub significance: f64,
    /// Bootstrap resamples of each median, for the 95 % interval of the ratio.
    #[arg(long, value_name = "COUNT", default_value_t = DEFAULT_RESAMPLES)]
    pub resamples: u32,
    /// Seed of the bootstrap: the same runs and seed give the same intervals.
    #[arg(long, value_name = "SEED", default_value_t = DEFAULT_SEED)]
    pub bootstrap_seed: u64,
    /// Exit with 3 when the pass, the call, or a range that moves the pass by at least
    /// --gate-share is `slower` (else a regression exits 0).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// With --fail-on-regression, a range counts only when its change moves the pass by at least
    /// this fraction of it (default: the noise threshold), so that a sub-microsecond range moving
    /// with code layout cannot fail a gate alone.
    #[arg(long, value_name = "FRACTION")]
    pub gate_share: Option<f64>,
    /// Whether to colour the verdicts: the global `--color`, set once the
    /// command line is parsed.
    #[arg(skip = ColorChoice::Auto)]
    pub color: ColorChoice,
}

impl DecideArgs {
    /// Whether to colour what goes to stdout.
    #[cfg(feature = "full")]
    pub(crate) fn colored(&self) -> bool {
        self.color
            .colors(std::io::IsTerminal::is_terminal(&std::io::stdout()))
    }
}

impl ColorChoice {
    /// Whether text for a stream colours: `auto` on a terminal
    /// (`terminal`) unless NO_COLOR is set.
    pub(crate) fn colors(self, terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && terminal
            }
        }
    }

    /// The same choice for clap's help and errors.
    pub(crate) fn for_clap(self) -> clap::ColorChoice {
        match self {
            ColorChoice::Auto => clap::ColorChoice::Auto,
            ColorChoice::Always => clap::ColorChoice::Always,
            ColorChoice::Never => clap::ColorChoice::Never,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[cfg(all(test, feature = "full"))]
mod tests {
    /// The defaults of the options are the comparison's own.
    #[test]
    fn the_defaults_are_those_of_the_comparison() {
        assert_eq!(super::DEFAULT_NOISE, profiling_compare::DEFAULT_NOISE);
        assert_eq!(
            super::DEFAULT_SIGNIFICANCE,
            profiling_compare::DEFAULT_SIGNIFICANCE
        );
        assert_eq!(
            super::DEFAULT_RESAMPLES,
            profiling_compare::statistics::DEFAULT_RESAMPLES
        );
        assert_eq!(
            super::DEFAULT_SEED,
            profiling_compare::statistics::DEFAULT_SEED
        );
    }
}
