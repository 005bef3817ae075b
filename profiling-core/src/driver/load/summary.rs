//! What one load measured, as the table, `--json`, the manifest's `load`
//! section and the page read it: the latency from the intended send, its
//! queueing and service parts, whether the bound held, whether the
//! workers kept up, each range's distribution over every worker, and what
//! the slowest queries spent their extra time on (the range that owns
//! the p99).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::drive::{worker_name, LoadRun, Scenario};
use super::latency::{backlog, percentile, timeline, Query, Window};
use crate::stats::DurationStats;
use crate::timing::{RangeLog, SampleSet};

/// The confidence of every interval of a load.
pub const CONFIDENCE: f64 = 0.95;

/// The percentiles every distribution of a load reports.
pub const QUANTILES: [(&str, f64); 5] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p99.9", 0.999),
];

/// The component of a query's time spent waiting for a worker.
pub const QUEUEING: &str = "queueing";
/// The component of a query's service time outside every recorded range.
pub const OUTSIDE_RANGES: &str = "outside ranges";

/// One percentile with its distribution-free interval; no interval when
/// the run has too few queries for it (`needed` says how many it needs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileRecord {
    pub name: String,
    pub value_ns: u64,
    #[serde(default)]
    pub low_ns: Option<u64>,
    #[serde(default)]
    pub high_ns: Option<u64>,
    /// Queries the interval needs, when the run had fewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed: Option<u64>,
}

/// A distribution of query times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: u64,
    pub mean_ns: u64,
    pub max_ns: u64,
    pub percentiles: Vec<PercentileRecord>,
}

impl Distribution {
    /// The distribution of `values` (any order); `None` when empty.
    pub fn of(mut values: Vec<u64>) -> Option<Distribution> {
        if values.is_empty() {
            return None;
        }
        values.sort_unstable();
        let n = values.len();
        let percentiles = QUANTILES
            .iter()
            .map(
                |&(name, quantile)| match percentile(&values, quantile, CONFIDENCE) {
                    Ok(found) => PercentileRecord {
                        name: name.to_owned(),
                        value_ns: found.value_ns,
                        low_ns: Some(found.low_ns),
                        high_ns: Some(found.high_ns),
                        needed: None,
                    },
                    Err(_) => PercentileRecord {
                        name: name.to_owned(),
                        value_ns: values[((quantile * n as f64).ceil() as usize).clamp(1, n) - 1],
                        low_ns: None,
                        high_ns: None,
                        needed: Some(super::latency::needed_for(quantile, CONFIDENCE)),
                    },
                },
            )
            .collect();
        let total: u128 = values.iter().map(|&v| u128::from(v)).sum();
        Some(Distribution {
            count: n as u64,
            mean_ns: (total / n as u128) as u64,
            max_ns: values[n - 1],
            percentiles,
        })
    }

    /// The percentile named `name` (`p99`).
    pub fn get(&self, name: &str) -> Option<&PercentileRecord> {
        self.percentiles.iter().find(|p| p.name == name)
    }
}

/// Whether the p99 held its bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundCheck {
    pub bound_ns: u64,
    pub p99_ns: u64,
    /// p99 at or under the bound, and the workers kept up.
    pub held: bool,
    /// The p99's interval lies wholly on one side of the bound; false
    /// when the bound is inside it (or there is no interval).
    pub certain: bool,
    /// What was decided, in one sentence.
    pub statement: String,
}

/// The workers against the offered load (open loops).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BacklogRecord {
    pub offered_qps: f64,
    pub served_qps: f64,
    pub waiting_at_end: u64,
    pub first_fifth_queueing_ns: u64,
    pub last_fifth_queueing_ns: u64,
    pub fell_behind: bool,
    pub statement: String,
}

/// One range's times under the load, over every thread that opened it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeUnderLoad {
    pub name: String,
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    /// Absent from documents written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ns: Option<u64>,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    /// Threads that opened it that were not workers (the target's own
    /// pools).
    #[serde(default)]
    pub other_threads: u32,
}

/// One part of a query's time (queueing, a range's own time, the time
/// outside every range): its median over all queries, and its mean over
/// the slowest (at or above the p99).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailPart {
    pub component: String,
    pub median_ns: u64,
    pub tail_mean_ns: u64,
}

impl TailPart {
    /// What the slowest queries spent on it beyond a typical one.
    pub fn excess_ns(&self) -> i64 {
        self.tail_mean_ns as i64 - self.median_ns as i64
    }
}

/// What the queries at or above the p99 spent their extra time on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailBreakdown {
    /// Queries in the tail, and queries whose ranges could be told apart
    /// (their worker's ranges all recorded).
    pub tail_queries: u64,
    pub attributed_queries: u64,
    /// The part with the largest excess: the range (or queueing) that
    /// owns the p99.
    pub owner: String,
    pub parts: Vec<TailPart>,
}

/// Threads while the load ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadsRecord {
    pub workers: u32,
    /// Threads in the process once every worker was built and warm.
    #[serde(default)]
    pub in_process: Option<u32>,
    /// Threads other than the workers that opened recorded ranges: the
    /// target's own (rayon's, a runtime's intra-op pool).
    #[serde(default)]
    pub ranged_elsewhere: Vec<String>,
    /// Cores the system offers this process.
    pub cores: u32,
    /// Environment that sizes common pools (RAYON_NUM_THREADS,
    /// OMP_NUM_THREADS, ...), where set.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
}

/// One load: what was offered and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadStep {
    pub scenario: String,
    /// An open loop's queries a second, as asked (the rate a peak search
    /// tried).
    #[serde(default)]
    pub offered_qps: Option<f64>,
    /// The rate the open loop's schedule actually offered: its queries
    /// over the time from the start to the last intended send. Random
    /// arrivals average near `offered_qps` over many queries; bursty ones
    /// over few can be far from it, and this is the rate the workers got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_qps: Option<f64>,
    #[serde(default)]
    pub arrival: Option<String>,
    #[serde(default)]
    pub concurrency: Option<u32>,
    pub workers: u32,
    pub queries: u64,
    /// From the start to the last answer.
    pub duration_ns: u64,
    pub served_qps: f64,
    /// From the intended send to the answer.
    pub latency: Option<Distribution>,
    /// From the intended send to a worker taking it.
    pub queueing: Option<Distribution>,
    /// The target's own time.
    pub service: Option<Distribution>,
    #[serde(default)]
    pub bound: Option<BoundCheck>,
    #[serde(default)]
    pub backlog: Option<BacklogRecord>,
    #[serde(default)]
    pub ranges: Vec<RangeUnderLoad>,
    #[serde(default)]
    pub tail: Option<TailBreakdown>,
    /// The load over its length, in windows of equal time: how the
    /// latency and the queue moved while it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Window>,
    pub threads: ThreadsRecord,
    /// A signal ended it: what completed is here.
    #[serde(default)]
    pub stopped: bool,
}

impl LoadStep {
    /// The p99 of the latency, when there was one.
    pub fn p99_ns(&self) -> Option<u64> {
        self.latency
            .as_ref()
            .and_then(|l| l.get("p99"))
            .map(|p| p.value_ns)
    }

    /// The rate offered, as the schedule had it where known, else as
    /// asked.
    pub fn offered(&self) -> Option<f64> {
        self.scheduled_qps.or(self.offered_qps)
    }

    /// Whether the workers fell behind the offered load.
    pub fn fell_behind(&self) -> bool {
        self.backlog.as_ref().is_some_and(|b| b.fell_behind)
    }
}

/// The windows a load's timeline is cut into, at most, and the queries a
/// window holds on average, at least.
const TIMELINE_WINDOWS: usize = 50;
const TIMELINE_QUERIES_A_WINDOW: usize = 20;

/// What `run` measured under `scenario` on `workers` workers, against
/// `bound_ns` when given.
pub fn summarize(
    run: &LoadRun,
    scenario: Scenario,
    workers: u32,
    bound_ns: Option<u64>,
) -> LoadStep {
    let queries = &run.queries;
    let duration_ns = queries.iter().map(|q| q.ended_ns).max().unwrap_or(0);
    let served_qps = if duration_ns > 0 {
        queries.len() as f64 / (duration_ns as f64 / 1e9)
    } else {
        0.0
    };
    let latency = Distribution::of(queries.iter().map(Query::latency_ns).collect());
    let queueing = Distribution::of(queries.iter().map(Query::queueing_ns).collect());
    let service = Distribution::of(queries.iter().map(Query::service_ns).collect());
    let (offered_qps, arrival, concurrency) = match scenario {
        Scenario::Server { qps, arrival } => (Some(qps), Some(arrival.to_string()), None),
        Scenario::Concurrency(n) => (None, None, Some(n)),
        _ => (None, None, None),
    };
    let scheduled_qps = offered_qps.and(run.scheduled_qps);
    let backlog = scheduled_qps
        .or(offered_qps)
        .and_then(|qps| backlog(queries, qps))
        .map(|b| BacklogRecord {
            offered_qps: b.offered_qps,
            served_qps: b.served_qps,
            waiting_at_end: b.waiting_at_end,
            first_fifth_queueing_ns: b.first_fifth_queueing_ns,
            last_fifth_queueing_ns: b.last_fifth_queueing_ns,
            fell_behind: b.fell_behind,
            statement: b.describe(),
        });
    let fell_behind = backlog.as_ref().is_some_and(|b| b.fell_behind);
    let bound = bound_ns.and_then(|bound_ns| {
        let p99 = latency.as_ref()?.get("p99")?.clone();
        Some(bound_check(bound_ns, &p99, fell_behind))
    });
    let (ranges, ranged_elsewhere) = match &run.ranges {
        Some(log) => ranges_under_load(log, workers),
        None => (Vec::new(), Vec::new()),
    };
    let tail = run
        .ranges
        .as_ref()
        .and_then(|log| tail_breakdown(run, log, latency.as_ref()?.get("p99")?.value_ns));
    LoadStep {
        scenario: scenario.name().to_owned(),
        offered_qps,
        scheduled_qps,
        arrival,
        concurrency,
        workers,
        queries: queries.len() as u64,
        duration_ns,
        served_qps,
        latency,
        queueing,
        service,
        bound,
        backlog,
        ranges,
        tail,
        timeline: timeline(queries, TIMELINE_WINDOWS, TIMELINE_QUERIES_A_WINDOW),
        threads: ThreadsRecord {
            workers,
            in_process: run.process_threads,
            ranged_elsewhere,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            environment: pool_environment(),
        },
        stopped: run.stopped,
    }
}

/// The p99 against its bound.
fn bound_check(bound_ns: u64, p99: &PercentileRecord, fell_behind: bool) -> BoundCheck {
    let held = p99.value_ns <= bound_ns && !fell_behind;
    let certain = match (p99.low_ns, p99.high_ns) {
        (Some(low), Some(high)) => high <= bound_ns || low > bound_ns,
        _ => false,
    };
    let ms = |ns: u64| ns as f64 / 1e6;
    let statement = if fell_behind {
        format!(
            "missed: the workers fell behind, so p99 ({:.3} ms) grows with the run's length, against a bound of {:.3} ms",
            ms(p99.value_ns),
            ms(bound_ns)
        )
    } else {
        let interval = match (p99.low_ns, p99.high_ns) {
            (Some(low), Some(high)) => format!(" [{:.3}, {:.3}]", ms(low), ms(high)),
            _ => String::new(),
        };
        format!(
            "{}: p99 {:.3} ms{interval} against a bound of {:.3} ms{}",
            if held { "held" } else { "missed" },
            ms(p99.value_ns),
            ms(bound_ns),
            if certain {
                ""
            } else if p99.low_ns.is_some() {
                " (the bound is inside the p99's 95 % interval: a longer run would decide)"
            } else {
                " (too few queries for the p99's interval)"
            }
        )
    };
    BoundCheck {
        bound_ns,
        p99_ns: p99.value_ns,
        held,
        certain,
        statement,
    }
}

/// Each range name's times over every thread, and the threads other
/// than the workers that opened ranges.
fn ranges_under_load(log: &RangeLog, workers: u32) -> (Vec<RangeUnderLoad>, Vec<String>) {
    let worker_names: Vec<String> = (0..workers).map(worker_name).collect();
    // Per name: every recorded time (exact), what overflowed the event
    // buffers (aggregates), and the threads other than workers.
    #[allow(clippy::type_complexity)]
    let mut by_name: BTreeMap<&str, (Vec<u64>, Vec<&SampleSet>, u32)> = BTreeMap::new();
    let mut elsewhere = Vec::new();
    for thread in &log.threads {
        let is_worker = worker_names.contains(&thread.thread_name);
        let ranged = !thread.events.is_empty() || thread.overflowed() > 0;
        if !is_worker && ranged {
            elsewhere.push(if thread.thread_name.is_empty() {
                format!("thread {}", thread.thread)
            } else {
                thread.thread_name.clone()
            });
        }
        for (index, name) in thread.names.iter().enumerate() {
            let values: Vec<u64> = thread
                .events
                .iter()
                .filter(|e| e.name as usize == index)
                .map(|e| e.inclusive_ns)
                .collect();
            let overflow = thread.overflow.get(index).and_then(Option::as_ref);
            if values.is_empty() && overflow.is_none() {
                continue;
            }
            let entry = by_name.entry(name.as_str()).or_default();
            entry.0.extend(values);
            entry.1.extend(overflow.map(|o| &o.inclusive));
            if !is_worker {
                entry.2 += 1;
            }
        }
    }
    let ranges = by_name
        .into_iter()
        .filter_map(|(name, (values, overflow, other_threads))| {
            let mut samples = SampleSet::of_values(&values);
            for set in overflow {
                samples.absorb(set);
            }
            let DurationStats {
                count,
                p50_ns,
                p90_ns,
                p95_ns,
                p99_ns,
                max_ns,
                mean_ns,
                ..
            } = samples.stats()?;
            Some(RangeUnderLoad {
                name: name.to_owned(),
                count,
                p50_ns,
                p90_ns,
                p95_ns,
                p99_ns,
                max_ns,
                mean_ns,
                other_threads,
            })
        })
        .collect();
    (ranges, elsewhere)
}

/// Each query's parts (queueing, each range's own time on its worker,
/// the time outside every range), and what the queries at or above
/// `p99_ns` spent beyond the median on each.
fn tail_breakdown(run: &LoadRun, log: &RangeLog, p99_ns: u64) -> Option<TailBreakdown> {
    let queries = &run.queries;
    // Per worker, its queries by start (absolute, on the recorder's clock).
    let mut by_worker: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (index, query) in queries.iter().enumerate() {
        by_worker.entry(query.worker).or_default().push(index);
    }
    for list in by_worker.values_mut() {
        list.sort_by_key(|&i| queries[i].started_ns);
    }
    let mut components: Vec<String> = vec![QUEUEING.to_owned(), OUTSIDE_RANGES.to_owned()];
    let mut parts: Vec<BTreeMap<usize, u64>> = vec![BTreeMap::new(); queries.len()];
    let mut attributable = vec![true; queries.len()];
    for (&worker, list) in &by_worker {
        let name = worker_name(worker);
        let Some(thread) = log.threads.iter().find(|t| t.thread_name == name) else {
            continue;
        };
        if thread.overflowed() > 0 {
            // Ranges past the buffer have no start: which query they
            // belong to is unknown from the first that overflowed on.
            let recorded_until = thread.events.iter().map(|e| e.start_ns).max().unwrap_or(0);
            for &i in list {
                if run.start_ns + queries[i].ended_ns > recorded_until {
                    attributable[i] = false;
                }
            }
        }
        let columns: Vec<usize> = thread
            .names
            .iter()
            .map(|name| match components.iter().position(|c| c == name) {
                Some(found) => found,
                None => {
                    components.push(name.clone());
                    components.len() - 1
                }
            })
            .collect();
        for event in &thread.events {
            let at = event.start_ns.saturating_sub(run.start_ns);
            let after = list.partition_point(|&i| queries[i].started_ns <= at);
            let Some(&i) = after.checked_sub(1).map(|k| &list[k]) else {
                continue;
            };
            if at > queries[i].ended_ns {
                continue;
            }
            *parts[i].entry(columns[event.name as usize]).or_default() += event.exclusive_ns;
            if event.depth == 0 {
                *parts[i].entry(usize::MAX).or_default() += event.inclusive_ns;
            }
        }
    }
    let tail: Vec<usize> = (0..queries.len())
        .filter(|&i| queries[i].latency_ns() >= p99_ns)
        .collect();
    let attributed: Vec<usize> = (0..queries.len()).filter(|&i| attributable[i]).collect();
    let tail_attributed: Vec<usize> = tail.iter().copied().filter(|&i| attributable[i]).collect();
    if tail_attributed.is_empty() || attributed.is_empty() {
        return None;
    }
    let value = |i: usize, column: usize| -> u64 {
        match column {
            0 => queries[i].queueing_ns(),
            1 => queries[i]
                .service_ns()
                .saturating_sub(parts[i].get(&usize::MAX).copied().unwrap_or(0)),
            _ => parts[i].get(&column).copied().unwrap_or(0),
        }
    };
    let mut table: Vec<TailPart> = (0..components.len())
        .map(|column| {
            let mut all: Vec<u64> = attributed.iter().map(|&i| value(i, column)).collect();
            all.sort_unstable();
            let tail_total: u128 = tail_attributed
                .iter()
                .map(|&i| u128::from(value(i, column)))
                .sum();
            TailPart {
                component: components[column].clone(),
                median_ns: all[(all.len() - 1) / 2],
                tail_mean_ns: (tail_total / tail_attributed.len() as u128) as u64,
            }
        })
        .filter(|part| part.median_ns > 0 || part.tail_mean_ns > 0)
        .collect();
    table.sort_by_key(|part| std::cmp::Reverse(part.excess_ns()));
    Some(TailBreakdown {
        tail_queries: tail.len() as u64,
        attributed_queries: tail_attributed.len() as u64,
        owner: table.first()?.component.clone(),
        parts: table,
    })
}

/// The environment variables that size the thread pools common in
/// inference code, where set.
fn pool_environment() -> BTreeMap<String, String> {
    [
        "RAYON_NUM_THREADS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "ORT_NUM_THREADS",
    ]
    .into_iter()
    .filter_map(|key| Some((key.to_owned(), std::env::var(key).ok()?)))
    .collect()
}
