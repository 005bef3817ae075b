//! The load itself: workers, each on a thread of its own with its own
//! state (a target instance, built on that thread), serving queries as a
//! scenario sends them, every query timed from when it was meant to be
//! sent.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::arrivals::{self, Arrival, ArrivalError};
use super::latency::Query;
use crate::timing::now_ns;

/// How queries are sent (LoadGen's scenarios, and perf_analyzer's
/// concurrency mode).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scenario {
    /// One query at a time: the next is sent when the previous answers.
    SingleStream,
    /// Queries sent on a schedule fixed in advance, whether or not the
    /// workers keep up (open loop).
    Server { qps: f64, arrival: Arrival },
    /// This many queries outstanding: each answer sends the next.
    Concurrency(u32),
    /// Every query sent at once; what counts is the throughput.
    Offline,
}

impl Scenario {
    /// Its name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::SingleStream => "single-stream",
            Scenario::Server { .. } => "server",
            Scenario::Concurrency(_) => "concurrency",
            Scenario::Offline => "offline",
        }
    }
}

/// What a load runs: the scenario, how many queries, on how many workers.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    pub scenario: Scenario,
    /// Queries measured (after the warmup's): an open loop's count; a
    /// closed loop's minimum.
    pub queries: usize,
    /// Queries each worker serves alone before the measurement starts.
    pub warmup: usize,
    pub workers: u32,
    pub seed: u64,
    /// A closed loop's minimum duration: its clients send queries until
    /// both this long has passed and `queries` were sent (LoadGen's
    /// minimums); 0 for none.
    pub min_duration_ns: u64,
    /// Record the target's ranges while measuring ([`LoadRun::ranges`]).
    pub record_ranges: bool,
    /// The NVTX range around the measurement, that Nsight Systems
    /// captures (`--capture-range=nvtx`).
    pub capture_range: String,
}

/// Why a load did not run, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Arrivals(#[from] ArrivalError),
    #[error("{0}")]
    Setup(String),
    #[error("a load needs at least one worker")]
    NoWorkers,
    #[error("single-stream has one query outstanding: it runs on one worker, not {0}")]
    SingleStreamWorkers(u32),
    #[error("concurrency needs at least one query outstanding")]
    NoConcurrency,
    #[error("{queries} queries are more than a load records (at most {MAX_QUERIES} a step: each query's times and ranges are kept in memory)")]
    TooManyQueries { queries: usize },
    #[error("worker {worker} could not be built: {source:#}")]
    Build { worker: u32, source: anyhow::Error },
    #[error("query {query} failed on worker {worker}: {source:#}")]
    Query {
        query: usize,
        worker: u32,
        source: anyhow::Error,
    },
}

/// The most queries a step measures: each one's times, and the ranges it
/// opened, stay in memory until the step is summarized (a few hundred
/// bytes a query). A request for more is refused before anything runs; a
/// closed loop whose minimum duration would send more stops sending here.
pub const MAX_QUERIES: usize = 10_000_000;

/// What a load measured: every query, in the order they were meant to be
/// sent, and whether a stop (a signal) cut it short.
#[derive(Debug)]
pub struct LoadRun {
    pub queries: Vec<Query>,
    pub stopped: bool,
    /// When the measurement started, on the recorder's clock: a query's
    /// times are from it.
    pub start_ns: u64,
    /// The ranges every thread recorded while measuring, when the plan
    /// asked; worker `w`'s are on the thread named [`worker_name`]`(w)`.
    pub ranges: Option<crate::timing::RangeLog>,
    /// Threads in the process once every worker was built and warm, read
    /// while every one of them is alive (before any can finish), where
    /// the system says: the workers, the target's own pools, the
    /// runtime's.
    pub process_threads: Option<u32>,
    /// An open loop's rate as its schedule offered it
    /// ([`arrivals::scheduled_qps`]).
    pub scheduled_qps: Option<f64>,
}

/// The name of worker `worker`'s thread, as Nsight Systems and the
/// recorder show it.
pub fn worker_name(worker: u32) -> String {
    format!("load worker {worker}")
}

/// Threads of this process now, where the system says.
fn process_threads() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
}

/// Runs `plan`: `build(worker)` makes each worker's state on its own
/// thread, then `serve(state, query)` answers query `query` (its index,
/// from 0, which picks the record). `stop` ends the load after the queries
/// in progress; what completed is kept.
pub fn drive<S, B, F>(
    plan: &LoadPlan,
    build: B,
    serve: F,
    stop: &AtomicBool,
) -> Result<LoadRun, LoadError>
where
    B: Fn(u32) -> anyhow::Result<S> + Sync,
    F: Fn(&mut S, usize) -> anyhow::Result<()> + Sync,
{
    if plan.workers == 0 {
        return Err(LoadError::NoWorkers);
    }
    match plan.scenario {
        Scenario::SingleStream if plan.workers != 1 => {
            return Err(LoadError::SingleStreamWorkers(plan.workers))
        }
        Scenario::Concurrency(0) => return Err(LoadError::NoConcurrency),
        _ => {}
    }
    if plan.queries > MAX_QUERIES {
        return Err(LoadError::TooManyQueries {
            queries: plan.queries,
        });
    }
    // The schedule of an open loop, fixed before anything runs.
    let intended = match plan.scenario {
        Scenario::Server { qps, arrival } => Some(arrivals::intended_ns(
            arrival,
            qps,
            plan.queries,
            plan.seed,
        )?),
        _ => None,
    };
    let scheduled_qps = match (plan.scenario, &intended) {
        (Scenario::Server { arrival, .. }, Some(times)) => arrivals::scheduled_qps(arrival, times),
        _ => None,
    };
    let workers = plan.workers;
    // A closed loop's queries waiting for a worker: (query, when it was
    // sent); each answer sends the next query of its client.
    let outstanding = match plan.scenario {
        Scenario::SingleStream => 1,
        Scenario::Concurrency(n) => n as usize,
        _ => 0,
    };
    // A closed loop sends while either minimum is still ahead, and never
    // more than a step records.
    let more = |sent: usize, elapsed_ns: u64| {
        sent < MAX_QUERIES && (sent < plan.queries || elapsed_ns < plan.min_duration_ns)
    };
    let first = if plan.min_duration_ns > 0 {
        outstanding
    } else {
        outstanding.min(plan.queries)
    };
    let waiting = Mutex::new(Waiting {
        queue: (0..first).map(|q| (q, 0)).collect(),
        sent: first,
        done: first == 0,
    });
    let wake = Condvar::new();
    let closed = outstanding > 0;
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<LoadError>> = Mutex::new(None);
    let results: Mutex<Vec<Query>> = Mutex::new(Vec::with_capacity(plan.queries.min(1 << 20)));
    // Every worker built and warmed before the clock starts.
    let ready = std::sync::Barrier::new(workers as usize + 1);
    let start_ns = AtomicUsize::new(0);
    let started = std::sync::Barrier::new(workers as usize + 1);
    let failed = AtomicBool::new(false);
    // Whether every worker thread started (`None` while they are being
    // started): one that could not stops the others before they build.
    let launched: (Mutex<Option<bool>>, Condvar) = (Mutex::new(None), Condvar::new());
    // Workers that ended, however they did (a panic too).
    let finished: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());
    let capture_name = std::ffi::CString::new(plan.capture_range.as_str())
        .map_err(|_| LoadError::Setup("capture_range contains a NUL character".to_owned()))?;
    let query_name = c"query";
    let mut ranges = None;
    let mut threads = None;
    // One run at a time in the process: its workers' ranges alone in its
    // capture (see `runner::exclusive`).
    let _exclusive = crate::driver::runner::exclusive();
    // Threads and names register while the workers warm up, so that the
    // measurement allocates nothing for them.
    let registration = plan.record_ranges.then(crate::timing::Registration::begin);
    let spawned: std::io::Result<()> = std::thread::scope(|scope| {
        for worker in 0..workers {
            let (build, serve) = (&build, &serve);
            let (next, failure, results, ready, started, start_ns, failed, intended) = (
                &next, &failure, &results, &ready, &started, &start_ns, &failed, &intended,
            );
            let (finished, launched) = (&finished, &launched);
            let (waiting, wake, more) = (&waiting, &wake, &more);
            let spawned = std::thread::Builder::new()
                .name(worker_name(worker))
                .spawn_scoped(scope, move || {
                    if !wait_launched(launched) {
                        return;
                    }
                    let _ended = Ended { finished };
                    let fail = |error: LoadError| {
                        failed.store(true, Ordering::SeqCst);
                        failure
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(error);
                        // Workers waiting for a closed loop's next query end.
                        waiting.lock().unwrap_or_else(|e| e.into_inner()).done = true;
                        wake.notify_all();
                    };
                    let mut state = match build(worker) {
                        Ok(state) => Some(state),
                        Err(source) => {
                            fail(LoadError::Build { worker, source });
                            None
                        }
                    };
                    if let Some(state) = state.as_mut() {
                        for query in 0..plan.warmup {
                            // A signal during a long warmup ends the load
                            // before its measurement, which then measures
                            // nothing.
                            if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                                break;
                            }
                            if let Err(source) = serve(state, query) {
                                fail(LoadError::Query {
                                    query,
                                    worker,
                                    source,
                                });
                                break;
                            }
                        }
                    }
                    ready.wait();
                    started.wait();
                    let Some(mut state) = state else { return };
                    if failed.load(Ordering::SeqCst) {
                        return;
                    }
                    let start = start_ns.load(Ordering::SeqCst) as u64;
                    let mut mine = Vec::new();
                    loop {
                        if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let (query, intended_ns) = if closed {
                            match take(waiting, wake, stop) {
                                Some(taken) => taken,
                                None => break,
                            }
                        } else {
                            let query = next.fetch_add(1, Ordering::Relaxed);
                            if query >= plan.queries {
                                break;
                            }
                            match intended {
                                Some(times) => {
                                    if !wait_until(start.saturating_add(times[query]), stop) {
                                        break;
                                    }
                                    (query, times[query])
                                }
                                None => (query, 0),
                            }
                        };
                        let started_ns = now_ns().saturating_sub(start);
                        let range = crate::nvtx::PassRange::open(query_name);
                        let served = serve(&mut state, query);
                        drop(range);
                        if let Err(source) = served {
                            fail(LoadError::Query {
                                query,
                                worker,
                                source,
                            });
                            break;
                        }
                        let ended_ns = now_ns().saturating_sub(start);
                        if closed {
                            // Its client sends the next query now.
                            let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
                            if more(waiting.sent, ended_ns) {
                                let sent = waiting.sent;
                                waiting.queue.push_back((sent, ended_ns));
                                waiting.sent += 1;
                                wake.notify_one();
                            } else {
                                // Nothing more is sent: the workers end once
                                // the queue is empty.
                                waiting.done = true;
                                wake.notify_all();
                            }
                        }
                        mine.push(Query {
                            intended_ns,
                            started_ns,
                            ended_ns,
                            worker,
                        });
                    }
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(mine);
                });
            if let Err(error) = spawned {
                // The workers started wait at the gate: they end there.
                *launched.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(false);
                launched.1.notify_all();
                return Err(error);
            }
        }
        *launched.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(true);
        launched.1.notify_all();
        ready.wait();
        // Every worker built and warm, and none can have finished: each
        // waits at the gate below. Their pools and the target's live.
        threads = process_threads();
        drop(registration);
        let capture = plan.record_ranges.then(crate::timing::Capture::begin);
        let capture_range = crate::nvtx::PassRange::open(&capture_name);
        start_ns.store(now_ns() as usize, Ordering::SeqCst);
        started.wait();
        // Every worker ends before the measurement closes.
        let mut ended = finished.0.lock().unwrap_or_else(|e| e.into_inner());
        while *ended < workers as usize {
            ended = finished.1.wait(ended).unwrap_or_else(|e| e.into_inner());
        }
        drop(ended);
        drop(capture_range);
        ranges = capture.map(crate::timing::Capture::end);
        Ok(())
    });
    spawned
        .map_err(|error| LoadError::Setup(format!("a worker thread could not start: {error}")))?;
    if let Some(error) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(error);
    }
    let mut queries = results.into_inner().unwrap_or_else(|e| e.into_inner());
    queries.sort_by_key(|q| (q.intended_ns, q.started_ns));
    let stopped = stop.load(Ordering::SeqCst);
    Ok(LoadRun {
        queries,
        stopped,
        start_ns: start_ns.into_inner() as u64,
        ranges,
        process_threads: threads,
        scheduled_qps,
    })
}

/// Waits until every worker thread started (true) or one could not
/// (false).
fn wait_launched(launched: &(Mutex<Option<bool>>, Condvar)) -> bool {
    let mut state = launched.0.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(all) = *state {
            return all;
        }
        state = launched.1.wait(state).unwrap_or_else(|e| e.into_inner());
    }
}

/// Counts a worker out when it ends, however it does (a panic too).
struct Ended<'a> {
    finished: &'a (Mutex<usize>, Condvar),
}

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        let mut finished = self.finished.0.lock().unwrap_or_else(|e| e.into_inner());
        *finished += 1;
        self.finished.1.notify_all();
    }
}

/// A closed loop's queries sent and not yet taken by a worker.
struct Waiting {
    queue: VecDeque<(usize, u64)>,
    /// Queries sent so far.
    sent: usize,
    /// Nothing more will be sent: every query is, or a worker failed.
    done: bool,
}

/// The next waiting query of a closed loop, waiting for one to be sent;
/// `None` once none will be (or on a stop).
fn take(waiting: &Mutex<Waiting>, wake: &Condvar, stop: &AtomicBool) -> Option<(usize, u64)> {
    let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(taken) = waiting.queue.pop_front() {
            return Some(taken);
        }
        if waiting.done || stop.load(Ordering::Relaxed) {
            return None;
        }
        // A stop set while every worker waits is seen within the timeout.
        waiting = wake
            .wait_timeout(waiting, Duration::from_millis(50))
            .map_or_else(|e| e.into_inner().0, |(guard, _)| guard);
    }
}

/// Sleeps until a little before `at_ns` (the clock of [`now_ns`]), then
/// spins to it: a sleep alone wakes tens of microseconds late. False when
/// `stop` was set first: a wait for a send far ahead (a low rate) looks at
/// it at least every [`STOP_POLL`].
fn wait_until(at_ns: u64, stop: &AtomicBool) -> bool {
    const SPIN_NS: u64 = 200_000;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = now_ns();
        if now >= at_ns {
            return true;
        }
        let left = at_ns - now;
        if left > SPIN_NS {
            std::thread::sleep(Duration::from_nanos(left - SPIN_NS).min(STOP_POLL));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// How long a wait goes without looking at the stop flag, at most.
const STOP_POLL: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(scenario: Scenario, queries: usize, workers: u32) -> LoadPlan {
        LoadPlan {
            scenario,
            queries,
            warmup: 2,
            workers,
            seed: 5,
            min_duration_ns: 0,
            record_ranges: false,
            capture_range: "profile".to_owned(),
        }
    }

    #[test]
    fn every_query_is_served_once_by_a_worker_built_on_its_own_thread() {
        let stop = AtomicBool::new(false);
        let served = Mutex::new(Vec::new());
        let run = drive(
            &plan(Scenario::Offline, 200, 3),
            |worker| Ok((worker, std::thread::current().id())),
            |(worker, thread), query| {
                // The state stays on the thread that built it.
                assert_eq!(*thread, std::thread::current().id());
                served.lock().unwrap().push((query, *worker));
                Ok(())
            },
            &stop,
        )
        .unwrap();
        assert!(!run.stopped);
        assert_eq!(run.queries.len(), 200);
        let mut measured: Vec<usize> = served
            .into_inner()
            .unwrap()
            .into_iter()
            // The warmup's queries, 0 and 1 on each worker, come first.
            .skip(3 * 2)
            .map(|(query, _)| query)
            .collect();
        measured.sort_unstable();
        assert_eq!(measured, (0..200).collect::<Vec<_>>());
        assert!(run
            .queries
            .iter()
            .all(|q| q.intended_ns == 0 && q.worker < 3));
    }

    #[test]
    fn a_closed_loop_sends_the_next_query_when_the_last_answers() {
        let stop = AtomicBool::new(false);
        let run = drive(
            &plan(Scenario::SingleStream, 50, 1),
            |_| Ok(()),
            |_, _| Ok(()),
            &stop,
        )
        .unwrap();
        // Each query is meant to be sent when the one before it ended.
        for pair in run.queries.windows(2) {
            assert_eq!(pair[1].intended_ns, pair[0].ended_ns);
            assert!(pair[1].started_ns >= pair[1].intended_ns);
        }
        assert!(matches!(
            drive(
                &plan(Scenario::SingleStream, 5, 2),
                |_| Ok(()),
                |_, _| Ok(()),
                &stop
            ),
            Err(LoadError::SingleStreamWorkers(2))
        ));
    }

    #[test]
    fn concurrency_keeps_that_many_queries_outstanding_on_fewer_workers() {
        let stop = AtomicBool::new(false);
        let in_flight = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let run = drive(
            &plan(Scenario::Concurrency(4), 60, 2),
            |_| Ok(()),
            |_, _| {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::yield_now();
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            },
            &stop,
        )
        .unwrap();
        assert_eq!(run.queries.len(), 60);
        // Two workers serve at most two at once; the other two queries
        // outstanding wait, and their wait counts.
        assert!(most.load(Ordering::SeqCst) <= 2);
        // The first four were all sent at the start.
        assert_eq!(run.queries.iter().filter(|q| q.intended_ns == 0).count(), 4);
        // Every later one was sent when an earlier one ended.
        let ends: std::collections::BTreeSet<u64> =
            run.queries.iter().map(|q| q.ended_ns).collect();
        assert!(run
            .queries
            .iter()
            .filter(|q| q.intended_ns > 0)
            .all(|q| ends.contains(&q.intended_ns)));
    }

    #[test]
    fn an_open_loop_keeps_its_schedule_and_times_from_it() {
        let stop = AtomicBool::new(false);
        let run = drive(
            &plan(
                Scenario::Server {
                    qps: 2000.0,
                    arrival: Arrival::Constant,
                },
                40,
                1,
            ),
            |_| Ok(()),
            |_, _| Ok(()),
            &stop,
        )
        .unwrap();
        let intended: Vec<u64> = run.queries.iter().map(|q| q.intended_ns).collect();
        assert_eq!(intended, (0..40).map(|i| i * 500_000).collect::<Vec<_>>());
        // No query begins before it is meant to be sent.
        assert!(run.queries.iter().all(|q| q.started_ns >= q.intended_ns));
    }

    #[test]
    fn a_failing_build_or_query_names_the_worker_and_the_query() {
        let stop = AtomicBool::new(false);
        let built = drive(
            &plan(Scenario::Offline, 10, 2),
            |worker| {
                if worker == 1 {
                    anyhow::bail!("no model")
                }
                Ok(())
            },
            |_, _| Ok(()),
            &stop,
        );
        assert_eq!(
            built.unwrap_err().to_string(),
            "worker 1 could not be built: no model"
        );
        let failed = drive(
            &plan(Scenario::Offline, 10, 1),
            |_| Ok(()),
            |_, query| {
                if query == 7 {
                    anyhow::bail!("bad record")
                }
                Ok(())
            },
            &stop,
        );
        assert_eq!(
            failed.unwrap_err().to_string(),
            "query 7 failed on worker 0: bad record"
        );
        assert!(matches!(
            drive(
                &plan(Scenario::Offline, 1, 0),
                |_| Ok(()),
                |_, _| Ok(()),
                &stop
            ),
            Err(LoadError::NoWorkers)
        ));
    }

    #[test]
    fn a_closed_loop_sends_until_both_minimums_are_reached() {
        let stop = AtomicBool::new(false);
        // The duration is the longer minimum: queries go on past the count.
        let mut long = plan(Scenario::Concurrency(2), 3, 2);
        long.min_duration_ns = 20_000_000;
        let run = drive(&long, |_| Ok(()), |_, _| Ok(()), &stop).unwrap();
        assert!(!run.stopped && run.queries.len() > 3);
        // Every query was sent before the duration was reached, and the
        // last ones after most of it.
        assert!(run.queries.iter().all(|q| q.intended_ns < 20_000_000));
        assert!(run.queries.iter().any(|q| q.ended_ns >= 15_000_000));
        // The count is the longer one: the duration is passed.
        let mut counted = plan(Scenario::SingleStream, 500, 1);
        counted.min_duration_ns = 1;
        let run = drive(&counted, |_| Ok(()), |_, _| Ok(()), &stop).unwrap();
        assert_eq!(run.queries.len(), 500);
    }

    #[test]
    fn a_stop_wakes_a_wait_for_a_send_far_ahead() {
        let stop = AtomicBool::new(false);
        // One query every 1,000 s: the second is meant 1,000 s after the
        // first, which signals.
        let mut slow = plan(
            Scenario::Server {
                qps: 0.001,
                arrival: Arrival::Constant,
            },
            3,
            1,
        );
        slow.warmup = 0;
        let run = drive(
            &slow,
            |_| Ok(()),
            |_, _| {
                stop.store(true, Ordering::SeqCst);
                Ok(())
            },
            &stop,
        )
        .unwrap();
        assert!(run.stopped);
        assert_eq!(run.queries.len(), 1);
    }

    #[test]
    fn a_stop_ends_a_long_warmup_before_the_measurement() {
        let stop = AtomicBool::new(false);
        let served = AtomicUsize::new(0);
        let mut long = plan(Scenario::Offline, 10, 2);
        long.warmup = usize::MAX;
        let run = drive(
            &long,
            |_| Ok(()),
            |_, _| {
                if served.fetch_add(1, Ordering::SeqCst) == 4 {
                    stop.store(true, Ordering::SeqCst);
                }
                Ok(())
            },
            &stop,
        )
        .unwrap();
        assert!(run.stopped);
        assert!(run.queries.is_empty());
        // Each worker ends its warmup at the query in progress.
        assert!(served.load(Ordering::SeqCst) <= 6);
    }

    #[test]
    fn the_thread_count_is_read_while_every_worker_is_alive() {
        let stop = AtomicBool::new(false);
        // One query for 64 workers: 63 have nothing to do and end at once.
        let mut idle = plan(Scenario::Offline, 1, 64);
        idle.warmup = 0;
        let run = drive(&idle, |_| Ok(()), |_, _| Ok(()), &stop).unwrap();
        assert_eq!(run.queries.len(), 1);
        let threads = run.process_threads.expect("Linux says");
        assert!(threads > 64, "{threads} threads: the workers and this one");
    }

    #[test]
    fn more_queries_than_a_step_records_are_refused_before_anything_runs() {
        let stop = AtomicBool::new(false);
        let built = AtomicUsize::new(0);
        let huge = plan(
            Scenario::Server {
                qps: 1e9,
                arrival: Arrival::Poisson,
            },
            MAX_QUERIES + 1,
            1,
        );
        let refused = drive(
            &huge,
            |_| {
                built.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
            |_, _| Ok(()),
            &stop,
        )
        .unwrap_err();
        assert!(
            matches!(refused, LoadError::TooManyQueries { queries } if queries == MAX_QUERIES + 1)
        );
        assert_eq!(built.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_open_loop_whose_sends_do_not_fit_the_clock_is_refused() {
        let stop = AtomicBool::new(false);
        let run = drive(
            &plan(
                Scenario::Server {
                    qps: 1e-12,
                    arrival: Arrival::Poisson,
                },
                3,
                1,
            ),
            |_| Ok(()),
            |_, _| Ok(()),
            &stop,
        );
        assert!(matches!(
            run,
            Err(LoadError::Arrivals(ArrivalError::TooLong { .. }))
        ));
    }

    #[test]
    fn a_stop_keeps_what_completed() {
        let stop = AtomicBool::new(false);
        let run = drive(
            &plan(Scenario::Offline, 1000, 1),
            |_| Ok(()),
            |_, query| {
                if query == 99 {
                    stop.store(true, Ordering::SeqCst);
                }
                Ok(())
            },
            &stop,
        )
        .unwrap();
        assert!(run.stopped);
        assert_eq!(run.queries.len(), 100);
    }
}
