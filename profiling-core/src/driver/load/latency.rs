//! Every query's latency from its intended send time, its percentiles
//! with distribution-free intervals, and whether the workers kept up.

/// One query: when it was meant to be sent, when a worker began it, when
/// it ended (nanoseconds from the start of the measurement), and which
/// worker served it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    pub intended_ns: u64,
    pub started_ns: u64,
    pub ended_ns: u64,
    pub worker: u32,
}

impl Query {
    /// From the intended send time to the answer: what a client waits.
    pub fn latency_ns(&self) -> u64 {
        self.ended_ns.saturating_sub(self.intended_ns)
    }

    /// From the intended send time to a worker beginning it: the queue.
    pub fn queueing_ns(&self) -> u64 {
        self.started_ns.saturating_sub(self.intended_ns)
    }

    /// The worker's own time on it.
    pub fn service_ns(&self) -> u64 {
        self.ended_ns.saturating_sub(self.started_ns)
    }
}

/// A percentile of a sample and its interval: the order statistics whose
/// ranks hold the true percentile with the confidence asked, whatever the
/// distribution (the binomial, exact).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentile {
    /// 0.99 for p99.
    pub quantile: f64,
    pub value_ns: u64,
    pub low_ns: u64,
    pub high_ns: u64,
}

/// Why a percentile has no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PercentileError {
    /// Too few values for the interval's upper end to exist.
    #[error("p{} needs at least {needed} queries for its {confidence_percent} % interval; the run has {have}", percent_name(*.quantile_millis))]
    TooFew {
        quantile_millis: u32,
        confidence_percent: u32,
        needed: u64,
        have: u64,
    },
}

fn percent_name(millis: u32) -> String {
    let text = format!("{:.1}", f64::from(millis) / 10.0);
    text.trim_end_matches(".0").to_owned()
}

/// The fewest values for which the `quantile`'s two-sided interval at
/// `confidence` has an upper end: the chance that all n values fall
/// below the quantile, `quantile^n`, must be within half the error rate.
/// For 95 %: p50 6, p90 36, p99 368, p99.9 3,688.
pub fn needed_for(quantile: f64, confidence: f64) -> u64 {
    let tail = (1.0 - confidence) / 2.0;
    (tail.ln() / quantile.ln()).floor() as u64 + 1
}

/// The `quantile` of `sorted` (ascending) with its interval at
/// `confidence`. The value is the nearest rank (the smallest value with at
/// least that share of the values at or below it); the interval's ends
/// are the ranks `l` and `u` with P(B ≥ l) and P(B ≤ u - 1) each at least
/// `1 - (1 - confidence) / 2` for B ~ Binomial(n, quantile).
pub fn percentile(
    sorted: &[u64],
    quantile: f64,
    confidence: f64,
) -> Result<Percentile, PercentileError> {
    let n = sorted.len();
    let needed = needed_for(quantile, confidence);
    if (n as u64) < needed {
        return Err(PercentileError::TooFew {
            quantile_millis: (quantile * 1000.0).round() as u32,
            confidence_percent: (confidence * 100.0).round() as u32,
            needed,
            have: n as u64,
        });
    }
    let rank = ((quantile * n as f64).ceil() as usize).clamp(1, n);
    let cdf = crate::stats::binomial_cdf(n, quantile);
    let tail = (1.0 - confidence) / 2.0;
    // Lower end: the largest l with P(B <= l - 1) <= tail (at least 1).
    let low_rank = (1..=n)
        .take_while(|&l| cdf(l - 1) <= tail)
        .last()
        .unwrap_or(1);
    // Upper end: the smallest u with P(B <= u - 1) >= 1 - tail.
    let high_rank = (rank..=n).find(|&u| cdf(u - 1) >= 1.0 - tail).unwrap_or(n);
    Ok(Percentile {
        quantile,
        value_ns: sorted[rank - 1],
        low_ns: sorted[low_rank.min(rank) - 1],
        high_ns: sorted[high_rank.max(rank) - 1],
    })
}

/// Whether the workers kept up with an open-loop load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    /// Queries a second offered (the schedule's) and served (answers over
    /// the time from the first intended send to the last answer).
    pub offered_qps: f64,
    pub served_qps: f64,
    /// Queries sent but not yet begun when the last was meant to be sent.
    pub waiting_at_end: u64,
    /// The median queueing delay of the first and the last fifth of the
    /// queries, by intended time.
    pub first_fifth_queueing_ns: u64,
    pub last_fifth_queueing_ns: u64,
    /// The queue grew through the run: the last fifth waited far longer
    /// than the first, and queries were still waiting at the end.
    pub fell_behind: bool,
}

impl Backlog {
    /// What happened, in one sentence.
    pub fn describe(&self) -> String {
        if self.fell_behind {
            format!(
                "the workers fell behind: {:.0} queries a second offered, {:.0} served; {} were still waiting when the last was sent, and the queue grew from {:.2} ms (median wait of the first fifth) to {:.2} ms (the last fifth): a longer run waits longer, so its p99 is the run's length, not the target's",
                self.offered_qps,
                self.served_qps,
                self.waiting_at_end,
                self.first_fifth_queueing_ns as f64 / 1e6,
                self.last_fifth_queueing_ns as f64 / 1e6,
            )
        } else {
            format!(
                "the workers kept up: {:.0} queries a second offered, {:.0} served",
                self.offered_qps, self.served_qps
            )
        }
    }
}

/// The backlog of `queries` (any order) offered at `offered_qps`: fell
/// behind when the last fifth's median wait is more than twice the first
/// fifth's and a millisecond longer, and more than a tenth of the queries
/// were still waiting when the last was meant to be sent. A queue that is
/// long but steady (random arrivals near capacity) keeps far fewer than
/// that waiting; one that grows through the run keeps the excess of what
/// was offered over what was served.
pub fn backlog(queries: &[Query], offered_qps: f64) -> Option<Backlog> {
    if queries.len() < 5 {
        return None;
    }
    let mut by_intent: Vec<&Query> = queries.iter().collect();
    by_intent.sort_by_key(|q| q.intended_ns);
    let fifth = by_intent.len() / 5;
    let median_wait = |part: &[&Query]| {
        let mut waits: Vec<u64> = part.iter().map(|q| q.queueing_ns()).collect();
        waits.sort_unstable();
        waits[(waits.len() - 1) / 2]
    };
    let first = median_wait(&by_intent[..fifth]);
    let last = median_wait(&by_intent[by_intent.len() - fifth..]);
    let last_intent = by_intent.last().map_or(0, |q| q.intended_ns);
    let waiting_at_end = queries
        .iter()
        .filter(|q| q.started_ns > last_intent)
        .count() as u64;
    let span = queries.iter().map(|q| q.ended_ns).max().unwrap_or(0)
        - by_intent.first().map_or(0, |q| q.intended_ns);
    let served_qps = if span > 0 {
        queries.len() as f64 / (span as f64 / 1e9)
    } else {
        0.0
    };
    Some(Backlog {
        offered_qps,
        served_qps,
        waiting_at_end,
        first_fifth_queueing_ns: first,
        last_fifth_queueing_ns: last,
        fell_behind: waiting_at_end * 10 > queries.len() as u64
            && last > 2 * first
            && last - first > 1_000_000,
    })
}

/// One stretch of a load's length: the queries meant to be sent in it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// From the first intended send.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Queries meant to be sent in it.
    pub sent: u64,
    /// Their latencies' median and largest.
    pub latency_p50_ns: u64,
    pub latency_max_ns: u64,
    /// Queries meant to be sent by its end that no worker had begun.
    pub waiting_at_end: u64,
}

/// The load over its length: the span from the first intended send to
/// the last cut into `windows` stretches of equal time (fewer when a
/// stretch would hold fewer than `per_window` queries on average); the
/// stretches no query was meant for are left out. How the latency and the
/// queue moved while the load ran: a queue that grows window after window
/// is a load the workers did not keep up with.
pub fn timeline(queries: &[Query], windows: usize, per_window: usize) -> Vec<Window> {
    let Some(first) = queries.iter().map(|q| q.intended_ns).min() else {
        return Vec::new();
    };
    let last = queries.iter().map(|q| q.intended_ns).max().unwrap_or(first);
    let count = windows.min(queries.len() / per_window.max(1)).max(1);
    let span = (last - first).max(1);
    let mut intended: Vec<u64> = queries.iter().map(|q| q.intended_ns - first).collect();
    let mut started: Vec<u64> = queries
        .iter()
        .map(|q| q.started_ns.saturating_sub(first))
        .collect();
    intended.sort_unstable();
    started.sort_unstable();
    let mut latencies: Vec<Vec<u64>> = vec![Vec::new(); count];
    for query in queries {
        let at = (query.intended_ns - first) as u128 * count as u128 / span as u128;
        latencies[(at as usize).min(count - 1)].push(query.latency_ns());
    }
    latencies
        .into_iter()
        .enumerate()
        .filter(|(_, window)| !window.is_empty())
        .map(|(index, mut window)| {
            let start_ns = (span as u128 * index as u128 / count as u128) as u64;
            let end_ns = (span as u128 * (index as u128 + 1) / count as u128) as u64;
            window.sort_unstable();
            // Each window holds its start, not its end; the last holds the
            // last query, meant for its end.
            let (sent_by_end, begun_by_end) = if index + 1 == count {
                (intended.len(), started.partition_point(|&t| t <= end_ns))
            } else {
                (
                    intended.partition_point(|&t| t < end_ns),
                    started.partition_point(|&t| t < end_ns),
                )
            };
            Window {
                start_ns,
                end_ns,
                sent: window.len() as u64,
                latency_p50_ns: window[(window.len() - 1) / 2],
                latency_max_ns: window[window.len() - 1],
                waiting_at_end: sent_by_end.saturating_sub(begun_by_end) as u64,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_needed_for_a_percentile_s_interval() {
        assert_eq!(needed_for(0.5, 0.95), 6);
        assert_eq!(needed_for(0.9, 0.95), 36);
        assert_eq!(needed_for(0.99, 0.95), 368);
        assert_eq!(needed_for(0.999, 0.95), 3688);
        let few: Vec<u64> = (1..=3000).collect();
        let refused = percentile(&few, 0.999, 0.95).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "p99.9 needs at least 3688 queries for its 95 % interval; the run has 3000"
        );
    }

    #[test]
    fn percentile_intervals_hold_the_rank_the_binomial_says() {
        // 1..=1000: p50 is 500; its 95 % interval is ranks 469 to 532:
        // P(B <= 468) = 0.0231 <= 0.025 < P(B <= 469) = 0.0268, and
        // P(B <= 530) = 0.9732 < 0.975 <= P(B <= 531) = 0.9769, for
        // B ~ Binomial(1000, 0.5) (exact sums): 95.4 % covered.
        let values: Vec<u64> = (1..=1000).collect();
        let p50 = percentile(&values, 0.5, 0.95).unwrap();
        assert_eq!(p50.value_ns, 500);
        assert_eq!((p50.low_ns, p50.high_ns), (469, 532));
        let p99 = percentile(&values, 0.99, 0.95).unwrap();
        assert_eq!(p99.value_ns, 990);
        assert!(p99.low_ns < 990 && p99.high_ns > 990 && p99.high_ns <= 1000);
        // Exactly enough for p99.9: its upper end is the maximum.
        let enough: Vec<u64> = (1..=3688).collect();
        let p999 = percentile(&enough, 0.999, 0.95).unwrap();
        assert_eq!(p999.high_ns, 3688);
    }

    #[test]
    fn the_interval_covers_the_true_percentile_as_often_as_it_says() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        // Uniform over 0..1e6: the true p90 is 900,000.
        let mut covered = 0;
        for _ in 0..400 {
            let mut values: Vec<u64> = (0..200).map(|_| rng.gen_range(0..1_000_000)).collect();
            values.sort_unstable();
            let p90 = percentile(&values, 0.9, 0.95).unwrap();
            covered += usize::from(p90.low_ns <= 900_000 && 900_000 <= p90.high_ns);
        }
        // At least 95 % (order statistics are conservative), less than all.
        assert!((376..400).contains(&covered), "{covered} of 400");
    }

    fn served(arrivals: &[u64], service_ns: u64) -> Vec<Query> {
        // One worker, first come first served.
        let mut free_at = 0;
        arrivals
            .iter()
            .map(|&intended_ns| {
                let started_ns = intended_ns.max(free_at);
                free_at = started_ns + service_ns;
                Query {
                    intended_ns,
                    started_ns,
                    ended_ns: free_at,
                    worker: 0,
                }
            })
            .collect()
    }

    #[test]
    fn a_long_but_steady_queue_is_not_falling_behind() {
        // 1 ms of service: a light start, then bursts of five every 5.2 ms
        // (96 % busy): each burst waits up to 4 ms and drains before the
        // next, so the queue is long but does not grow.
        let mut intended: Vec<u64> = (0..200).map(|i| i * 3_000_000).collect();
        let start = 600_000_000;
        intended.extend((0..800).map(|i| start + (i / 5) * 5_200_000));
        let queries = served(&intended, 1_000_000);
        let steady = backlog(&queries, 900.0).unwrap();
        assert!(steady.last_fifth_queueing_ns >= 2_000_000, "{steady:?}");
        assert!(steady.waiting_at_end > 0, "{steady:?}");
        assert!(!steady.fell_behind, "{steady:?}");
    }

    #[test]
    fn latency_counts_from_the_intended_send_and_an_overload_says_it_fell_behind() {
        // 1 ms of service; a query every 3 ms, then every 0.5 ms.
        let light: Vec<u64> = (0..1000).map(|i| i * 3_000_000).collect();
        let queries = served(&light, 1_000_000);
        let kept = backlog(&queries, 333.3).unwrap();
        assert!(!kept.fell_behind, "{kept:?}");
        assert_eq!(kept.last_fifth_queueing_ns, 0);
        assert!(kept.describe().starts_with("the workers kept up"));

        let heavy: Vec<u64> = (0..1000).map(|i| i * 500_000).collect();
        let queries = served(&heavy, 1_000_000);
        // The last query was meant at 499.5 ms and began at 999 ms.
        let last = queries.last().unwrap();
        assert_eq!(last.queueing_ns(), 499_500_000);
        assert_eq!(last.latency_ns(), 500_500_000);
        assert_eq!(last.service_ns(), 1_000_000);
        let behind = backlog(&queries, 2000.0).unwrap();
        assert!(behind.fell_behind, "{behind:?}");
        assert!((behind.served_qps - 1000.0).abs() < 5.0, "{behind:?}");
        assert!(behind.waiting_at_end > 400, "{behind:?}");
        assert!(
            behind.describe().contains("fell behind"),
            "{}",
            behind.describe()
        );
    }

    #[test]
    fn the_timeline_shows_the_queue_growing_only_when_the_workers_fall_behind() {
        // 1 ms of service, a query every 0.5 ms: query i is meant at
        // 0.5 i ms, begins at i ms and ends at i + 1 ms.
        let heavy: Vec<u64> = (0..1000).map(|i| i * 500_000).collect();
        let windows = timeline(&served(&heavy, 1_000_000), 10, 25);
        assert_eq!(windows.len(), 10);
        // The first 49.95 ms: queries 0 to 99, latencies 1 to 50.5 ms;
        // by its end 100 were meant and 50 begun.
        assert_eq!(
            windows[0],
            Window {
                start_ns: 0,
                end_ns: 49_950_000,
                sent: 100,
                latency_p50_ns: 25_500_000,
                latency_max_ns: 50_500_000,
                waiting_at_end: 50,
            }
        );
        // The last: every query meant, 500 begun.
        let last = &windows[9];
        assert_eq!(
            (last.end_ns, last.sent, last.waiting_at_end),
            (499_500_000, 100, 500)
        );
        assert!(windows
            .windows(2)
            .all(|pair| pair[1].waiting_at_end > pair[0].waiting_at_end
                && pair[1].latency_p50_ns > pair[0].latency_p50_ns));

        // A query every 3 ms: never a queue, every latency the service.
        let light: Vec<u64> = (0..1000).map(|i| i * 3_000_000).collect();
        let windows = timeline(&served(&light, 1_000_000), 10, 25);
        assert_eq!(windows.len(), 10);
        assert!(windows.iter().all(|w| w.waiting_at_end == 0
            && w.latency_p50_ns == 1_000_000
            && w.latency_max_ns == 1_000_000
            && w.sent == 100));

        // Too few queries for more than one window; none, none.
        assert_eq!(timeline(&served(&light[..30], 1_000_000), 10, 25).len(), 1);
        assert!(timeline(&[], 10, 25).is_empty());
    }
}
