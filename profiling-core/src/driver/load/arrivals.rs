//! When each query of an open-loop scenario is meant to be sent: fixed in
//! advance from the offered rate, the arrival process and the run's seed,
//! never from how fast the target answers.

use std::fmt;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

/// How the gaps between queries are drawn, for a mean gap of `1 / qps`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Every gap the same.
    Constant,
    /// Exponential gaps: independent arrivals, as many users' requests
    /// are (LoadGen's server scenario).
    Poisson,
    /// Gamma gaps of this shape: below 1 burstier than Poisson (a
    /// coefficient of variation of `1 / sqrt(shape)`), above 1 more even.
    Gamma { shape: f64 },
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arrival::Constant => f.write_str("constant"),
            Arrival::Poisson => f.write_str("poisson"),
            Arrival::Gamma { shape } => write!(f, "gamma (shape {shape})"),
        }
    }
}

/// Why a schedule cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrivalError {
    #[error("the offered rate must be above 0 queries a second (got {0})")]
    Rate(f64),
    #[error("a gamma arrival's shape must be above 0 (got {0})")]
    Shape(f64),
    #[error("{queries} queries at {qps} a second are meant to be sent over {seconds:.0} s, past the longest load (a week): a higher rate or fewer queries")]
    TooLong {
        queries: usize,
        qps: f64,
        seconds: f64,
    },
}

/// The intended send times of `count` queries offered at `qps` a second,
/// nanoseconds from the start of the measurement, in order; the first is
/// one gap after the start (a Poisson process seen from an arbitrary
/// moment), or at 0 for [`Arrival::Constant`].
pub fn intended_ns(
    arrival: Arrival,
    qps: f64,
    count: usize,
    seed: u64,
) -> Result<Vec<u64>, ArrivalError> {
    if !(qps.is_finite() && qps > 0.0) {
        return Err(ArrivalError::Rate(qps));
    }
    let mean_gap_ns = 1e9 / qps;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gaps: Box<dyn FnMut(&mut ChaCha8Rng) -> f64> = match arrival {
        Arrival::Constant => Box::new(move |_| mean_gap_ns),
        Arrival::Poisson => {
            let exp = Exp::new(1.0 / mean_gap_ns).map_err(|_| ArrivalError::Rate(qps))?;
            Box::new(move |rng| exp.sample(rng))
        }
        Arrival::Gamma { shape } => {
            if !(shape.is_finite() && shape > 0.0) {
                return Err(ArrivalError::Shape(shape));
            }
            let gamma =
                Gamma::new(shape, mean_gap_ns / shape).map_err(|_| ArrivalError::Shape(shape))?;
            Box::new(move |rng| gamma.sample(rng))
        }
    };
    let mut gaps = gaps;
    let mut at = if arrival == Arrival::Constant {
        0.0
    } else {
        gaps(&mut rng)
    };
    // Every time fits the clock's arithmetic: a schedule that runs past
    // the longest load is refused, never saturated or wrapped.
    let longest_ns = crate::units::MAX_DURATION.as_nanos() as f64;
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        if at.is_nan() || at > longest_ns {
            return Err(ArrivalError::TooLong {
                queries: count,
                qps,
                seconds: at / 1e9,
            });
        }
        times.push(at.round() as u64);
        at += gaps(&mut rng);
    }
    Ok(times)
}

/// The rate a schedule actually offers, queries a second: the gaps it
/// drew over their sum (from the start to the last intended send; the
/// first send is a gap after the start except for [`Arrival::Constant`]).
/// A few hundred bursty gaps can average far from the rate asked; this is
/// what the workers were offered. `None` when every query is meant for
/// the same instant, or there are none.
pub fn scheduled_qps(arrival: Arrival, times: &[u64]) -> Option<f64> {
    let last = *times.last()?;
    let gaps = match arrival {
        Arrival::Constant => times.len() - 1,
        _ => times.len(),
    };
    (last > 0 && gaps > 0).then(|| gaps as f64 / (last as f64 / 1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(times: &[u64]) -> Vec<f64> {
        times.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    }

    fn mean_and_cv(values: &[f64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn each_process_offers_the_rate_asked_with_its_own_spread() {
        // 200 queries a second: a mean gap of 5 ms.
        let constant = intended_ns(Arrival::Constant, 200.0, 1000, 1).unwrap();
        assert_eq!(constant[..3], [0, 5_000_000, 10_000_000]);
        let (mean, cv) = mean_and_cv(&gaps(&constant));
        assert!((mean - 5e6).abs() < 1.0 && cv < 1e-6);

        let poisson = intended_ns(Arrival::Poisson, 200.0, 20_000, 7).unwrap();
        let (mean, cv) = mean_and_cv(&gaps(&poisson));
        assert!((mean / 5e6 - 1.0).abs() < 0.03, "{mean}");
        // Exponential gaps: a coefficient of variation of 1.
        assert!((cv - 1.0).abs() < 0.03, "{cv}");

        let bursty = intended_ns(Arrival::Gamma { shape: 0.25 }, 200.0, 20_000, 7).unwrap();
        let (mean, cv) = mean_and_cv(&gaps(&bursty));
        assert!((mean / 5e6 - 1.0).abs() < 0.06, "{mean}");
        assert!((cv - 2.0).abs() < 0.1, "{cv}");
        assert!(bursty.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn a_schedule_past_a_week_is_refused_not_wrapped() {
        // One query every 31,700 years: its time does not fit the clock.
        let refused = intended_ns(Arrival::Poisson, 1e-12, 3, 0).unwrap_err();
        assert!(
            matches!(refused, ArrivalError::TooLong { queries: 3, .. }),
            "{refused}"
        );
        assert!(refused
            .to_string()
            .contains("past the longest load (a week)"));
        // Constant at 1 a second: 604,801 queries end one second past it.
        assert!(intended_ns(Arrival::Constant, 1.0, 604_801, 0).is_ok());
        assert!(intended_ns(Arrival::Constant, 1.0, 604_802, 0).is_err());
    }

    #[test]
    fn the_rate_offered_is_the_schedules_own() {
        let constant = intended_ns(Arrival::Constant, 200.0, 101, 1).unwrap();
        assert!((scheduled_qps(Arrival::Constant, &constant).unwrap() - 200.0).abs() < 1e-9);
        // Gamma of shape 1e-3: a few gaps hold nearly all the time, so 400
        // queries offer a rate far from the 50 asked.
        let bursty = intended_ns(Arrival::Gamma { shape: 1e-3 }, 50.0, 400, 9).unwrap();
        let offered = scheduled_qps(Arrival::Gamma { shape: 1e-3 }, &bursty).unwrap();
        let expected = 400.0 / (*bursty.last().unwrap() as f64 / 1e9);
        assert_eq!(offered, expected);
        assert!((offered / 50.0 - 1.0).abs() > 0.2, "{offered}");
        assert_eq!(scheduled_qps(Arrival::Poisson, &[0, 0]), None);
        assert_eq!(scheduled_qps(Arrival::Poisson, &[]), None);
    }

    #[test]
    fn the_seed_fixes_the_schedule() {
        let a = intended_ns(Arrival::Poisson, 50.0, 100, 3).unwrap();
        assert_eq!(a, intended_ns(Arrival::Poisson, 50.0, 100, 3).unwrap());
        assert_ne!(a, intended_ns(Arrival::Poisson, 50.0, 100, 4).unwrap());
    }

    #[test]
    fn a_rate_or_shape_that_means_nothing_is_refused() {
        for qps in [0.0, -3.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                intended_ns(Arrival::Poisson, qps, 1, 0),
                Err(ArrivalError::Rate(_))
            ));
        }
        assert_eq!(
            intended_ns(Arrival::Gamma { shape: 0.0 }, 10.0, 1, 0),
            Err(ArrivalError::Shape(0.0))
        );
        assert_eq!(
            ArrivalError::Rate(0.0).to_string(),
            "the offered rate must be above 0 queries a second (got 0)"
        );
    }
}
