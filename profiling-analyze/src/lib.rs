//! Per NVTX range, what Nsight Systems recorded, from the SQLite export of
//! its report (`nsys export --type sqlite`): GPU time, OS runtime calls and
//! CPU samples.
//!
//! Inside the capture range, every push/pop range is keyed by its path
//! (the ranges it is nested in on its thread, outermost first, below the
//! pass range `iteration <i>`). The GPU work of a range is what was
//! launched from its thread while it was open: the kernels, memcpys and
//! memsets whose CUDA runtime call (joined through `correlationId`) started
//! inside it. Per range: host time, GPU busy time (the union of that work's
//! intervals), the sum of its durations, and the time from the first launch
//! to the last completion; its top kernels; the OS runtime calls made on its
//! thread while it was open (`OSRT_API`: where it waited) and the functions
//! its thread was sampled in (`COMPOSITE_EVENTS` and `SAMPLING_CALLCHAINS`:
//! what it ran); and per pass, how busy the GPU was and its longest idle
//! gap.
//!
//! The export's schema is NVIDIA's documented one: `StringIds`,
//! `NVTX_EVENTS` (push/pop ranges have `eventType` 59; the text is inline
//! in `text`, as Nsight Systems 2022.4 writes it, or in `StringIds` through
//! `textId`, as later versions do), `CUPTI_ACTIVITY_KIND_RUNTIME`,
//! `CUPTI_ACTIVITY_KIND_KERNEL`, `CUPTI_ACTIVITY_KIND_MEMCPY`,
//! `CUPTI_ACTIVITY_KIND_MEMSET`, `OSRT_API`, `COMPOSITE_EVENTS`,
//! `SAMPLING_CALLCHAINS`, `ThreadNames`, `EXPORT_META_DATA`. Tables are
//! created lazily: a missing one means no such events (a CPU capture has no
//! CUDA table at all). Columns are selected by name; a `globalTid` holds the
//! process id above bit 24 and the thread id below.
//!
//! An export is read as untrusted input: only the tables above are looked
//! at (no name from the file is ever part of a query), every query of one
//! analysis stops at [`Request::time_limit`] and no value it makes may pass
//! 16 MiB, range names are kept once each however many ranges have them,
//! and ranges nested more than [`MAX_NESTING_DEPTH`] deep, or whose paths
//! would make more than [`MAX_PATH_TEXT`] bytes, are refused (each range's
//! path names every range above it). Each refusal names the file.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use profiling_core::stats::DurationStats;
use profiling_core::timing::tree::depth_first;
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};

/// `eventType` of an NVTX push/pop range.
pub const NVTX_PUSH_POP: i64 = 59;

/// Why an export cannot be analyzed; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a SQLite file (export the report with: nsys export --type sqlite REPORT.nsys-rep)", .0.display())]
    NotSqlite(PathBuf),
    #[error("{}: a SQLite file, but not an Nsight Systems export (it has no StringIds table)", .0.display())]
    NotAnExport(PathBuf),
    #[error("{}: the export holds no NVTX push/pop range: was the run captured with --trace nvtx?", .0.display())]
    NoNvtx(PathBuf),
    #[error("{}: no NVTX range named `{name}` (the capture range); the export's ranges include: {}", .path.display(), .names.join(", "))]
    NoCapture {
        path: PathBuf,
        name: String,
        names: Vec<String>,
    },
    #[error("{}: {source}", .path.display())]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{}: reading the export ran past the analysis's time limit of {} s: a damaged or crafted export? (a real one of this size is read well within it)", .path.display(), .limit.as_secs())]
    TimeLimit {
        path: PathBuf,
        limit: std::time::Duration,
    },
    #[error("{}: NVTX ranges nested more than {MAX_NESTING_DEPTH} deep on thread {thread} (under `{outermost}`): refused, since each range's path names every range above it; profile a shallower part of the program", .path.display())]
    TooDeep {
        path: PathBuf,
        thread: i64,
        outermost: String,
    },
    #[error("{}: the paths of the NVTX ranges would take more than {} MiB (long range names, or many nested ones): refused", .path.display(), MAX_PATH_TEXT >> 20)]
    PathsTooLong { path: PathBuf },
}

/// The most text the paths of an export's ranges may make, names with
/// them: a name nsys stores once may be the text of every range, and every
/// range below it names it again in its path.
pub const MAX_PATH_TEXT: usize = 64 << 20;

/// The deepest nesting of NVTX ranges analyzed: a range's path holds the
/// names of every range above it, so their text grows with the square of
/// the depth (10,000 nested ranges made 294 MB of paths). Deeper ranges
/// are refused, naming the export and the thread.
pub const MAX_NESTING_DEPTH: u32 = 1_000;

/// How long the queries of one analysis may take before it is refused as
/// a damaged or crafted export: far past what any real export needs.
pub const DEFAULT_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Which capture range to analyze, and how much to list.
#[derive(Debug, Clone)]
pub struct Request {
    pub capture_range: String,
    /// Kernels listed per range, by GPU time; OS calls and sampled
    /// functions listed per range, likewise.
    pub kernels: usize,
    /// How long the export's queries may take, all together
    /// ([`DEFAULT_TIME_LIMIT`]).
    pub time_limit: std::time::Duration,
}

/// GPU work launched in a range, by kernel (or memcpy, memset) name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSummary {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
    pub median_ns: u64,
}

/// Time a range spent in one OS runtime call (`read`, `nanosleep`,
/// `pthread_cond_wait`, ...), as Nsight's OS runtime trace recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsCall {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
}

/// A function the CPU was sampled in while a range was open: the leaf
/// frame of each sample's call chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledFunction {
    pub name: String,
    /// The binary or library it is in.
    pub module: String,
    pub samples: u64,
}

/// One range path over every pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeAnalysis {
    pub path: String,
    pub name: String,
    pub depth: u32,
    /// The thread the range ran on (its name when the export has one).
    pub thread: String,
    pub count: u64,
    /// Per range: from push to pop on the host.
    pub host: DurationStats,
    /// Per range: the union of the GPU intervals of what it launched.
    pub gpu_busy: Option<DurationStats>,
    /// Everything it launched: GPU activities, and their durations added.
    pub gpu_activities: u64,
    pub gpu_sum_ns: u64,
    /// Per range that launched something: from its first launch to its
    /// last GPU completion (which may come after the range closed).
    pub launch_to_completion: Option<DurationStats>,
    /// The top kernels by GPU time.
    pub kernels: Vec<KernelSummary>,
    /// Over every call: the time spent in OS runtime calls made on the
    /// range's thread while it was open (blocked, or in the kernel).
    #[serde(default)]
    pub os_runtime_ns: u64,
    /// Those calls by name, the longest first.
    #[serde(default)]
    pub os_calls: Vec<OsCall>,
    /// CPU samples taken on the range's thread while it was open.
    #[serde(default)]
    pub samples: u64,
    /// The functions most of them were in, the most sampled first.
    #[serde(default)]
    pub sampled_functions: Vec<SampledFunction>,
    /// The host median the run's own manifest has for this path, when the
    /// export was analyzed beside its run (`profile-cli analyze` fills it).
    #[serde(default)]
    pub manifest_host_p50_ns: Option<u64>,
}

/// One measured pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassAnalysis {
    pub name: String,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// The union of the GPU work launched in the pass, within the pass.
    pub gpu_busy_ns: u64,
    pub gpu_busy_fraction: f64,
    /// The longest stretch of the pass with no GPU work launched in it running.
    pub largest_gpu_idle_ns: u64,
}

/// The analysis of one capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub export: PathBuf,
    pub capture_range: String,
    /// The process that opened the capture range.
    pub process_id: u64,
    pub capture_ns: u64,
    pub passes: Vec<PassAnalysis>,
    /// Over the passes: the mean GPU busy fraction and the longest idle gap.
    pub mean_gpu_busy_fraction: f64,
    pub largest_gpu_idle_ns: u64,
    /// By path, each after its parent.
    pub ranges: Vec<RangeAnalysis>,
    /// GPU activities launched in the capture, and those launched outside
    /// any range of it.
    pub gpu_activities: u64,
    pub gpu_activities_outside_ranges: u64,
    /// The Nsight Systems version that exported the report, when it says.
    #[serde(default)]
    pub nsys_version: Option<String>,
    /// Whether the report has CUDA tables at all: a capture without
    /// `--trace=cuda`, or without GPU work, has none, and its GPU columns
    /// say nothing.
    #[serde(default = "yes")]
    pub cuda_traced: bool,
    /// Whether it traced OS runtime calls (`--trace=osrt`).
    #[serde(default)]
    pub os_runtime_traced: bool,
    /// CPU samples in the capture (`--sample`); 0 without sampling.
    #[serde(default)]
    pub cpu_samples: u64,
    pub notes: Vec<String>,
}

fn yes() -> bool {
    true
}

/// Names kept once each, by index: an event refers to its name by
/// number, so that attributing it to every range around it copies no
/// text.
struct Names<T> {
    list: Vec<T>,
    index: HashMap<T, usize>,
}

impl<T: std::hash::Hash + Eq + Clone> Names<T> {
    fn new() -> Self {
        Names {
            list: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn id(&mut self, name: T) -> usize {
        if let Some(&id) = self.index.get(&name) {
            return id;
        }
        self.list.push(name.clone());
        self.index.insert(name, self.list.len() - 1);
        self.list.len() - 1
    }
}

struct Range {
    /// Shared by every range with the same text: one copy each.
    name: Rc<str>,
    start: i64,
    end: i64,
    tid: i64,
}

struct Activity {
    /// Ties it to the runtime call that launched it.
    correlation: i64,
    start: i64,
    end: i64,
    /// Index into the kernel names.
    name: usize,
}

/// One range instance on its thread, with what was launched in it.
struct Instance {
    start: i64,
    end: i64,
    /// Index into the paths; `None` for a pass range.
    path: Option<usize>,
    pass: Option<usize>,
    activities: Vec<usize>,
    first_launch: Option<i64>,
}

struct PathNode {
    name: Rc<str>,
    parent: Option<usize>,
    depth: u32,
    tid: i64,
}

fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> AnalyzeError + '_ {
    move |source| AnalyzeError::Sql {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens an export read-only, after checking it is SQLite and an export.
pub fn open(path: &Path) -> Result<Connection, AnalyzeError> {
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut header))
        .map_err(|source| AnalyzeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if read < 16 || &header != b"SQLite format 3\0" {
        return Err(AnalyzeError::NotSqlite(path.to_path_buf()));
    }
    let connection =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(sql(path))?;
    if !tables(&connection, path)?.contains_key("StringIds") {
        return Err(AnalyzeError::NotAnExport(path.to_path_buf()));
    }
    Ok(connection)
}

/// The tables this analysis reads: only these are looked at, so no name
/// the export holds is ever part of a query.
const KNOWN_TABLES: [&str; 12] = [
    "StringIds",
    "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "ENUM_CUDA_MEMCPY_OPER",
    "OSRT_API",
    "COMPOSITE_EVENTS",
    "SAMPLING_CALLCHAINS",
    "ThreadNames",
    "EXPORT_META_DATA",
];

/// The known tables the export has, and their columns (names bound as
/// parameters: a table-valued `pragma_table_info(?1)`).
fn tables(
    connection: &Connection,
    path: &Path,
) -> Result<HashMap<String, Vec<String>>, AnalyzeError> {
    let mut exists = connection
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")
        .map_err(sql(path))?;
    let mut columns = connection
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .map_err(sql(path))?;
    let mut tables = HashMap::new();
    for name in KNOWN_TABLES {
        if !exists.exists([name]).map_err(sql(path))? {
            continue;
        }
        let names: Vec<String> = columns
            .query_map([name], |row| row.get(0))
            .map_err(sql(path))?
            .collect::<Result<_, _>>()
            .map_err(sql(path))?;
        tables.insert(name.to_owned(), names);
    }
    Ok(tables)
}

/// The longest text or blob a query on an export may make: far past any
/// name Nsight writes, short of what a crafted value could cost.
const MAX_VALUE_BYTES: i32 = 16 << 20;

/// Bounds every query on `connection` to end by `limit` from now (checked
/// every thousand steps of SQLite's machine), and any value it makes to
/// [`MAX_VALUE_BYTES`].
fn bound_queries(
    connection: &mut Connection,
    path: &Path,
    limit: std::time::Duration,
) -> Result<(), AnalyzeError> {
    let deadline = std::time::Instant::now().checked_add(limit);
    connection
        .progress_handler(
            1_000,
            Some(move || deadline.is_some_and(|deadline| std::time::Instant::now() >= deadline)),
        )
        .map_err(sql(path))?;
    connection
        .set_limit(
            rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
            MAX_VALUE_BYTES,
        )
        .map_err(sql(path))?;
    Ok(())
}

/// Whether `error` is a query stopped by [`bound_queries`]'s handler.
fn interrupted(error: &AnalyzeError) -> bool {
    matches!(error, AnalyzeError::Sql { source, .. }
        if source.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted))
}

/// The pid in a `globalTid` or `globalPid`.
fn pid_of(global: i64) -> u64 {
    ((global as u64) >> 24) & 0xFF_FFFF
}

/// Analyzes the capture range `request.capture_range` of the export at
/// `path`.
pub fn analyze(path: &Path, request: &Request) -> Result<Analysis, AnalyzeError> {
    let mut connection = open(path)?;
    bound_queries(&mut connection, path, request.time_limit)?;
    analyze_on(&connection, path, request).map_err(|error| {
        if interrupted(&error) {
            AnalyzeError::TimeLimit {
                path: path.to_path_buf(),
                limit: request.time_limit,
            }
        } else {
            error
        }
    })
}

fn analyze_on(
    connection: &Connection,
    path: &Path,
    request: &Request,
) -> Result<Analysis, AnalyzeError> {
    let tables = tables(connection, path)?;
    let has = |table: &str, column: &str| {
        tables
            .get(table)
            .is_some_and(|columns| columns.iter().any(|c| c == column))
    };
    if !tables.contains_key("NVTX_EVENTS") {
        return Err(AnalyzeError::NoNvtx(path.to_path_buf()));
    }
    let ranges = nvtx_ranges(
        connection,
        path,
        has("NVTX_EVENTS", "textId"),
        has("NVTX_EVENTS", "text"),
    )?;
    if ranges.is_empty() {
        return Err(AnalyzeError::NoNvtx(path.to_path_buf()));
    }
    let mut captures: Vec<&Range> = ranges
        .iter()
        .filter(|r| *r.name == *request.capture_range)
        .collect();
    captures.sort_by_key(|r| r.start);
    // A capture that started inside the range itself may lack its push:
    // then the passes' thread and extent stand for it.
    let spanned = if captures.is_empty() {
        pass_span(&ranges)
    } else {
        None
    };
    let mut notes = Vec::new();
    if let Some(span) = &spanned {
        captures.push(span);
        notes.push(format!(
            "no range named `{}` in the export (the capture may have begun inside it): its passes' extent stands for it",
            request.capture_range
        ));
    }
    let Some(capture) = captures.first().copied() else {
        let mut names: Vec<&str> = ranges.iter().map(|r| &*r.name).collect();
        names.sort_unstable();
        names.dedup();
        names.truncate(20);
        let names = names.into_iter().map(shortened).collect();
        return Err(AnalyzeError::NoCapture {
            path: path.to_path_buf(),
            name: request.capture_range.clone(),
            names,
        });
    };
    if captures.len() > 1 {
        notes.push(format!(
            "the export holds {} ranges named `{}`: the first is analyzed",
            captures.len(),
            request.capture_range
        ));
    }
    let pid = pid_of(capture.tid);
    let thread_names = thread_names(connection, path, &tables)?;

    let (nodes, passes, mut instances) = capture_tree(&ranges, capture, path)?;

    // GPU work, by the thread and time of its launch.
    let launches = runtime_launches(connection, path, &tables, pid, capture)?;
    let (activities, kernel_names) = gpu_activities(connection, path, &tables, pid)?;
    let (launched_in_capture, outside) = attribute_launches(&mut instances, &launches, &activities);

    let os_calls = os_runtime_calls(connection, path, &tables, pid, capture)?;
    let samples = cpu_samples(connection, path, &tables, pid, capture)?;
    let host = HostEvents::attribute(&nodes, &instances, &os_calls, &samples);

    let ranges = summarize_paths(
        &nodes,
        &instances,
        &activities,
        &kernel_names,
        &thread_names,
        &host,
        request.kernels,
    );
    let pass_analyses = pass_figures(&passes, &instances, &activities, capture);
    if pass_analyses.is_empty() {
        notes.push(
            "no `iteration <i>` pass range inside the capture: no per-pass figures".to_owned(),
        );
    }
    let cuda_traced = [
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ]
    .iter()
    .any(|table| tables.contains_key(*table));
    if !cuda_traced {
        notes.push("the report holds no CUDA trace (a CPU capture, or no GPU work): host times and OS runtime calls only".to_owned());
    }
    if launches.is_empty() && !activities.is_empty() {
        notes.push("the export has GPU activity but no CUDA runtime calls to tie it to ranges (capture with --trace cuda)".to_owned());
    }
    let mean_gpu_busy_fraction = if pass_analyses.is_empty() {
        0.0
    } else {
        pass_analyses
            .iter()
            .map(|p| p.gpu_busy_fraction)
            .sum::<f64>()
            / pass_analyses.len() as f64
    };
    Ok(Analysis {
        export: path.to_path_buf(),
        capture_range: request.capture_range.clone(),
        process_id: pid,
        capture_ns: span(capture.start, capture.end),
        largest_gpu_idle_ns: pass_analyses
            .iter()
            .map(|p| p.largest_gpu_idle_ns)
            .max()
            .unwrap_or(0),
        mean_gpu_busy_fraction,
        passes: pass_analyses,
        ranges,
        gpu_activities: launched_in_capture,
        gpu_activities_outside_ranges: outside,
        nsys_version: export_version(connection, &tables),
        cuda_traced,
        os_runtime_traced: tables.contains_key("OSRT_API"),
        cpu_samples: samples.events.values().map(|list| list.len() as u64).sum(),
        notes,
    })
}

/// The ranges of `capture`, per thread, outer ones first: the paths they
/// make, the capture's passes (name, start, end), and every instance of a
/// path or a pass, by thread. Ranges nested deeper than
/// [`MAX_NESTING_DEPTH`] are refused.
#[allow(clippy::type_complexity)]
fn capture_tree(
    ranges: &[Range],
    capture: &Range,
    path: &Path,
) -> Result<
    (
        Vec<PathNode>,
        Vec<(String, i64, i64)>,
        BTreeMap<i64, Vec<Instance>>,
    ),
    AnalyzeError,
> {
    let pid = pid_of(capture.tid);
    let inside: Vec<&Range> = ranges
        .iter()
        .filter(|r| {
            !std::ptr::eq(*r, capture)
                && pid_of(r.tid) == pid
                && r.start >= capture.start
                && r.end <= capture.end
        })
        .collect();
    let mut by_thread: BTreeMap<i64, Vec<&Range>> = BTreeMap::new();
    for range in inside {
        by_thread.entry(range.tid).or_default().push(range);
    }
    let mut nodes: Vec<PathNode> = Vec::new();
    let mut node_index: HashMap<(Option<usize>, i64, &str), usize> = HashMap::new();
    // Each node's path length, and all of them with the names.
    let mut path_lengths: Vec<usize> = Vec::new();
    let mut path_text = 0usize;
    let mut passes: Vec<(String, i64, i64)> = Vec::new();
    let mut instances: BTreeMap<i64, Vec<Instance>> = BTreeMap::new();
    for (&tid, list) in &mut by_thread {
        list.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut stack: Vec<(i64, Option<usize>)> = Vec::new();
        let thread_instances = instances.entry(tid).or_default();
        for range in list.iter() {
            while stack.last().is_some_and(|&(end, _)| end <= range.start) {
                stack.pop();
            }
            let is_pass = tid == capture.tid && stack.is_empty() && is_pass_name(&range.name);
            if is_pass {
                passes.push((range.name.to_string(), range.start, range.end));
                thread_instances.push(Instance {
                    start: range.start,
                    end: range.end,
                    path: None,
                    pass: Some(passes.len() - 1),
                    activities: Vec::new(),
                    first_launch: None,
                });
                stack.push((range.end, None));
                continue;
            }
            let parent = stack.iter().rev().find_map(|&(_, node)| node);
            let depth = parent.map_or(0, |p| nodes[p].depth + 1);
            if depth >= MAX_NESTING_DEPTH {
                let mut outermost = parent.unwrap_or(0);
                while let Some(above) = nodes[outermost].parent {
                    outermost = above;
                }
                return Err(AnalyzeError::TooDeep {
                    path: path.to_path_buf(),
                    thread: tid & 0xFF_FFFF,
                    outermost: shortened(&nodes[outermost].name),
                });
            }
            let key = (parent, tid, &*range.name);
            let node = match node_index.get(&key) {
                Some(&node) => node,
                None => {
                    // The path names the parent's path, then this name;
                    // the name is kept beside it.
                    let length = parent.map_or(0, |p| path_lengths[p] + 1) + range.name.len();
                    path_lengths.push(length);
                    path_text = path_text.saturating_add(length + range.name.len());
                    if path_text > MAX_PATH_TEXT {
                        return Err(AnalyzeError::PathsTooLong {
                            path: path.to_path_buf(),
                        });
                    }
                    nodes.push(PathNode {
                        name: range.name.clone(),
                        parent,
                        depth,
                        tid,
                    });
                    node_index.insert(key, nodes.len() - 1);
                    nodes.len() - 1
                }
            };
            thread_instances.push(Instance {
                start: range.start,
                end: range.end,
                path: Some(node),
                pass: None,
                activities: Vec::new(),
                first_launch: None,
            });
            stack.push((range.end, Some(node)));
        }
    }

    Ok((nodes, passes, instances))
}

/// Ties each GPU activity to the instances open on its launching thread
/// when it was launched: how many activities were launched inside the
/// capture, and how many of them outside any range.
fn attribute_launches(
    instances: &mut BTreeMap<i64, Vec<Instance>>,
    launches: &HashMap<i64, (i64, i64)>,
    activities: &[Activity],
) -> (u64, u64) {
    let mut by_launch_thread: HashMap<i64, Vec<(i64, usize)>> = HashMap::new();
    let mut launched_in_capture = 0u64;
    for (index, activity) in activities.iter().enumerate() {
        if let Some(&(tid, start)) = launches.get(&activity.correlation) {
            launched_in_capture += 1;
            by_launch_thread
                .entry(tid)
                .or_default()
                .push((start, index));
        }
    }
    let mut outside = 0u64;
    for (tid, launches) in &mut by_launch_thread {
        launches.sort_unstable();
        let Some(list) = instances.get_mut(tid) else {
            outside += launches.len() as u64;
            continue;
        };
        // A sweep: the open instances around each launch, outermost first.
        let mut next = 0;
        let mut open: Vec<usize> = Vec::new();
        for &(time, activity) in launches.iter() {
            while next < list.len() && list[next].start <= time {
                while open
                    .last()
                    .is_some_and(|&i| list[i].end <= list[next].start)
                {
                    open.pop();
                }
                open.push(next);
                next += 1;
            }
            while open.last().is_some_and(|&i| list[i].end < time) {
                open.pop();
            }
            let mut counted = false;
            for &i in &open {
                let instance = &mut list[i];
                instance.activities.push(activity);
                instance.first_launch = Some(instance.first_launch.map_or(time, |t| t.min(time)));
                counted |= instance.path.is_some();
            }
            if !counted {
                outside += 1;
            }
        }
    }

    (launched_in_capture, outside)
}

/// Per pass: its extent, how busy the GPU was in it, and its longest
/// GPU idle gap.
fn pass_figures(
    passes: &[(String, i64, i64)],
    instances: &BTreeMap<i64, Vec<Instance>>,
    activities: &[Activity],
    capture: &Range,
) -> Vec<PassAnalysis> {
    let mut pass_analyses: Vec<PassAnalysis> = passes
        .iter()
        .map(|(name, start, end)| PassAnalysis {
            name: name.clone(),
            start_ns: span(capture.start, *start),
            duration_ns: span(*start, *end),
            gpu_busy_ns: 0,
            gpu_busy_fraction: 0.0,
            largest_gpu_idle_ns: span(*start, *end),
        })
        .collect();
    for list in instances.values() {
        for instance in list {
            let Some(pass) = instance.pass else { continue };
            let intervals: Vec<(i64, i64)> = instance
                .activities
                .iter()
                .map(|&a| (activities[a].start, activities[a].end))
                .collect();
            let (busy, idle) = busy_and_idle(&intervals, instance.start, instance.end);
            let analysis = &mut pass_analyses[pass];
            analysis.gpu_busy_ns = busy;
            analysis.largest_gpu_idle_ns = idle;
            analysis.gpu_busy_fraction = if analysis.duration_ns > 0 {
                busy as f64 / analysis.duration_ns as f64
            } else {
                0.0
            };
        }
    }
    pass_analyses
}

/// The extent of the `iteration <i>` ranges of the thread that has them,
/// as a range; `None` without any, or when a range of another name holds
/// them all (a capture range by another name).
fn pass_span(ranges: &[Range]) -> Option<Range> {
    let passes: Vec<&Range> = ranges.iter().filter(|r| is_pass_name(&r.name)).collect();
    let first = passes.first()?;
    let tid = first.tid;
    let on_thread = passes.iter().filter(|r| r.tid == tid);
    let span = Range {
        name: Rc::from(""),
        start: on_thread.clone().map(|r| r.start).min()?,
        end: on_thread.map(|r| r.end).max()?,
        tid,
    };
    // A range around the passes is a capture range of another name.
    let enclosed = ranges.iter().any(|r| {
        r.tid == tid && !is_pass_name(&r.name) && r.start <= span.start && r.end >= span.end
    });
    (!enclosed).then_some(span)
}

/// `name` as an error may quote it: its first 200 characters.
fn shortened(name: &str) -> String {
    match name.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &name[..at]),
        None => name.to_owned(),
    }
}

/// `iteration <i>`: the runner's pass ranges.
fn is_pass_name(name: &str) -> bool {
    name.strip_prefix("iteration ")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn nvtx_ranges(
    connection: &Connection,
    path: &Path,
    has_text_id: bool,
    has_text: bool,
) -> Result<Vec<Range>, AnalyzeError> {
    let text = match (has_text, has_text_id) {
        (true, true) => "COALESCE(e.text, s.value)",
        (true, false) => "e.text",
        (false, true) => "s.value",
        (false, false) => "NULL",
    };
    let join = if has_text_id {
        "LEFT JOIN StringIds s ON s.id = e.textId"
    } else {
        ""
    };
    let query = format!(
        "SELECT e.start, e.end, e.globalTid, {text} FROM NVTX_EVENTS e {join} \
         WHERE e.eventType = {NVTX_PUSH_POP} AND e.end IS NOT NULL AND e.end >= e.start"
    );
    let mut statement = connection.prepare(&query).map_err(sql(path))?;
    let mut rows = statement.query([]).map_err(sql(path))?;
    // One copy of each text, however many ranges have it.
    let mut names: std::collections::HashSet<Rc<str>> = std::collections::HashSet::new();
    let mut ranges = Vec::new();
    while let Some(row) = rows.next().map_err(sql(path))? {
        let text = row
            .get_ref(3)
            .map_err(sql(path))?
            .as_str_or_null()
            .map_err(|error| {
                sql(path)(rusqlite::Error::FromSqlConversionFailure(
                    3,
                    rusqlite::types::Type::Text,
                    Box::new(error),
                ))
            })?
            .unwrap_or_default();
        let name = match names.get(text) {
            Some(name) => name.clone(),
            None => {
                let name: Rc<str> = Rc::from(text);
                names.insert(name.clone());
                name
            }
        };
        ranges.push(Range {
            start: row.get(0).map_err(sql(path))?,
            end: row.get(1).map_err(sql(path))?,
            tid: row
                .get::<_, Option<i64>>(2)
                .map_err(sql(path))?
                .unwrap_or(0),
            name,
        });
    }
    Ok(ranges)
}

fn thread_names(
    connection: &Connection,
    path: &Path,
    tables: &HashMap<String, Vec<String>>,
) -> Result<HashMap<i64, String>, AnalyzeError> {
    if !tables.contains_key("ThreadNames") {
        return Ok(HashMap::new());
    }
    let mut statement = connection
        .prepare(
            "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId",
        )
        .map_err(sql(path))?;
    let rows = statement
        .query_map([], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(sql(path))?;
    rows.collect::<Result<_, _>>().map_err(sql(path))
}

/// The CUDA runtime calls of process `pid` made inside the capture, by
/// correlation id: their thread and start.
fn runtime_launches(
    connection: &Connection,
    path: &Path,
    tables: &HashMap<String, Vec<String>>,
    pid: u64,
    capture: &Range,
) -> Result<HashMap<i64, (i64, i64)>, AnalyzeError> {
    if !tables.contains_key("CUPTI_ACTIVITY_KIND_RUNTIME") {
        return Ok(HashMap::new());
    }
    let mut statement = connection
        .prepare(
            "SELECT correlationId, globalTid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME \
             WHERE start >= ?1 AND start <= ?2",
        )
        .map_err(sql(path))?;
    let rows = statement
        .query_map([capture.start, capture.end], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .map_err(sql(path))?;
    let mut launches = HashMap::new();
    for row in rows {
        let (correlation, tid, start) = row.map_err(sql(path))?;
        if pid_of(tid) == pid {
            launches.insert(correlation, (tid, start));
        }
    }
    Ok(launches)
}

/// The kernels, memcpys and memsets of process `pid`, with their
/// correlation ids.
fn gpu_activities(
    connection: &Connection,
    path: &Path,
    tables: &HashMap<String, Vec<String>>,
    pid: u64,
) -> Result<(Vec<Activity>, Vec<String>), AnalyzeError> {
    let has = |table: &str, column: &str| {
        tables
            .get(table)
            .is_some_and(|columns| columns.iter().any(|c| c == column))
    };
    let mut queries = Vec::new();
    if tables.contains_key("CUPTI_ACTIVITY_KIND_KERNEL") {
        let name = match (
            has("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"),
            has("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"),
        ) {
            (true, true) => "COALESCE(d.value, s.value, '[kernel]')",
            (true, false) => "COALESCE(d.value, '[kernel]')",
            (false, true) => "COALESCE(s.value, '[kernel]')",
            (false, false) => "'[kernel]'",
        };
        let mut joins = String::new();
        if has("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName") {
            joins.push_str(" LEFT JOIN StringIds d ON d.id = k.demangledName");
        }
        if has("CUPTI_ACTIVITY_KIND_KERNEL", "shortName") {
            joins.push_str(" LEFT JOIN StringIds s ON s.id = k.shortName");
        }
        queries.push(format!(
            "SELECT k.start, k.end, k.correlationId, k.globalPid, {name} FROM CUPTI_ACTIVITY_KIND_KERNEL k{joins}"
        ));
    }
    if tables.contains_key("CUPTI_ACTIVITY_KIND_MEMCPY") {
        let kind = if tables.contains_key("ENUM_CUDA_MEMCPY_OPER")
            && has("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind")
        {
            queries.push("SELECT m.start, m.end, m.correlationId, m.globalPid, '[CUDA memcpy ' || COALESCE(o.label, o.name, m.copyKind) || ']' FROM CUPTI_ACTIVITY_KIND_MEMCPY m LEFT JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind".to_owned());
            true
        } else {
            false
        };
        if !kind {
            queries.push("SELECT start, end, correlationId, globalPid, '[CUDA memcpy]' FROM CUPTI_ACTIVITY_KIND_MEMCPY".to_owned());
        }
    }
    if tables.contains_key("CUPTI_ACTIVITY_KIND_MEMSET") {
        queries.push("SELECT start, end, correlationId, globalPid, '[CUDA memset]' FROM CUPTI_ACTIVITY_KIND_MEMSET".to_owned());
    }
    let mut activities = Vec::new();
    let mut names = Names::new();
    for query in queries {
        let mut statement = connection.prepare(&query).map_err(sql(path))?;
        let mut rows = statement.query([]).map_err(sql(path))?;
        while let Some(row) = rows.next().map_err(sql(path))? {
            let global_pid = row.get::<_, Option<i64>>(3).map_err(sql(path))?;
            if pid_of(global_pid.unwrap_or(0)) != pid {
                continue;
            }
            let name = row
                .get::<_, Option<String>>(4)
                .map_err(sql(path))?
                .unwrap_or_default();
            activities.push(Activity {
                correlation: row.get(2).map_err(sql(path))?,
                start: row.get(0).map_err(sql(path))?,
                end: row.get(1).map_err(sql(path))?,
                name: names.id(name),
            });
        }
    }
    Ok((activities, names.list))
}

/// The Nsight Systems version the export names (`EXPORT_META_DATA`,
/// written since 2021), if any.
fn export_version(
    connection: &Connection,
    tables: &HashMap<String, Vec<String>>,
) -> Option<String> {
    if !tables.contains_key("EXPORT_META_DATA") {
        return None;
    }
    connection
        .query_row(
            "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_PRODUCT_VERSION'",
            [],
            |row| row.get::<_, String>(0),
        )
        .ok()
}

/// An OS runtime call on a thread: start, end, name (an index into the
/// calls' names).
struct OsRuntimeCall {
    start: i64,
    end: i64,
    name: usize,
}

/// A CPU sample on a thread: its time and leaf function (an index into
/// the functions: name, module).
struct Sample {
    time: i64,
    function: usize,
}

/// What happened on each thread, sorted by time, and the names its
/// entries refer to.
struct ByThread<T, N> {
    events: HashMap<i64, Vec<T>>,
    names: Vec<N>,
}

/// The OS runtime calls of process `pid` inside the capture, by thread,
/// sorted by start. Only the outermost of nested calls counts (a `fread`
/// that calls `read` is one call), so times are not counted twice.
fn os_runtime_calls(
    connection: &Connection,
    path: &Path,
    tables: &HashMap<String, Vec<String>>,
    pid: u64,
    capture: &Range,
) -> Result<ByThread<OsRuntimeCall, String>, AnalyzeError> {
    let none = || ByThread {
        events: HashMap::new(),
        names: Vec::new(),
    };
    let Some(columns) = tables.get("OSRT_API") else {
        return Ok(none());
    };
    let has = |column: &str| columns.iter().any(|c| c == column);
    if !["start", "end", "globalTid"].iter().all(|c| has(c)) {
        return Ok(none());
    }
    let name = if has("nameId") {
        "COALESCE(s.value, '[unnamed]') FROM OSRT_API o LEFT JOIN StringIds s ON s.id = o.nameId"
    } else {
        "'[OS call]' FROM OSRT_API o"
    };
    let outermost = if has("nestingLevel") {
        " AND (o.nestingLevel IS NULL OR o.nestingLevel = 0)"
    } else {
        ""
    };
    let query = format!(
        "SELECT o.start, o.end, o.globalTid, {name} WHERE o.end > o.start AND o.start >= ?1 AND o.end <= ?2{outermost}"
    );
    let mut statement = connection.prepare(&query).map_err(sql(path))?;
    let mut rows = statement
        .query([capture.start, capture.end])
        .map_err(sql(path))?;
    let mut by_thread: HashMap<i64, Vec<OsRuntimeCall>> = HashMap::new();
    let mut names = Names::new();
    while let Some(row) = rows.next().map_err(sql(path))? {
        let tid = row
            .get::<_, Option<i64>>(2)
            .map_err(sql(path))?
            .unwrap_or(0);
        if pid_of(tid) != pid {
            continue;
        }
        let name = row
            .get::<_, Option<String>>(3)
            .map_err(sql(path))?
            .unwrap_or_default();
        by_thread.entry(tid).or_default().push(OsRuntimeCall {
            start: row.get(0).map_err(sql(path))?,
            end: row.get(1).map_err(sql(path))?,
            name: names.id(name),
        });
    }
    for calls in by_thread.values_mut() {
        calls.sort_by_key(|call| call.start);
    }
    Ok(ByThread {
        events: by_thread,
        names: names.list,
    })
}

/// The CPU samples of process `pid` inside the capture, by thread, sorted
/// by time, each with the leaf frame of its call chain
/// (`COMPOSITE_EVENTS` joined with `SAMPLING_CALLCHAINS` at depth 0).
fn cpu_samples(
    connection: &Connection,
    path: &Path,
    tables: &HashMap<String, Vec<String>>,
    pid: u64,
    capture: &Range,
) -> Result<ByThread<Sample, (String, String)>, AnalyzeError> {
    let has = |table: &str, column: &str| {
        tables
            .get(table)
            .is_some_and(|columns| columns.iter().any(|c| c == column))
    };
    let needed = [
        ("COMPOSITE_EVENTS", "id"),
        ("COMPOSITE_EVENTS", "start"),
        ("COMPOSITE_EVENTS", "globalTid"),
        ("SAMPLING_CALLCHAINS", "id"),
        ("SAMPLING_CALLCHAINS", "symbol"),
        ("SAMPLING_CALLCHAINS", "stackDepth"),
    ];
    if !needed.iter().all(|(table, column)| has(table, column)) {
        return Ok(ByThread {
            events: HashMap::new(),
            names: Vec::new(),
        });
    }
    let (module, join) = if has("SAMPLING_CALLCHAINS", "module") {
        ("m.value", "LEFT JOIN StringIds m ON m.id = c.module")
    } else {
        ("NULL", "")
    };
    let query = format!(
        "SELECT e.start, e.globalTid, s.value, {module} FROM COMPOSITE_EVENTS e \
         JOIN SAMPLING_CALLCHAINS c ON c.id = e.id AND c.stackDepth = 0 \
         LEFT JOIN StringIds s ON s.id = c.symbol {join} \
         WHERE e.start >= ?1 AND e.start <= ?2"
    );
    let mut statement = connection.prepare(&query).map_err(sql(path))?;
    let mut rows = statement
        .query([capture.start, capture.end])
        .map_err(sql(path))?;
    let mut by_thread: HashMap<i64, Vec<Sample>> = HashMap::new();
    let mut functions = Names::new();
    while let Some(row) = rows.next().map_err(sql(path))? {
        let tid = row
            .get::<_, Option<i64>>(1)
            .map_err(sql(path))?
            .unwrap_or(0);
        if pid_of(tid) != pid {
            continue;
        }
        let function = (
            row.get::<_, Option<String>>(2)
                .map_err(sql(path))?
                .map_or_else(|| "[unresolved]".to_owned(), without_rust_hash),
            row.get::<_, Option<String>>(3)
                .map_err(sql(path))?
                .unwrap_or_default(),
        );
        by_thread.entry(tid).or_default().push(Sample {
            time: row.get(0).map_err(sql(path))?,
            function: functions.id(function),
        });
    }
    for samples in by_thread.values_mut() {
        samples.sort_by_key(|sample| sample.time);
    }
    Ok(ByThread {
        events: by_thread,
        names: functions.list,
    })
}

/// A Rust symbol as Nsight shows it (`crate::f::h937039e9c0874706`)
/// without the hash the legacy mangling appends: the same function under
/// one name across builds.
fn without_rust_hash(symbol: String) -> String {
    match symbol.rsplit_once("::h") {
        Some((name, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            name.to_owned()
        }
        _ => symbol,
    }
}

/// What the host did inside each range path, over all its instances: OS
/// runtime calls by name (count, time) and samples by function.
struct HostEvents<'a> {
    /// Per path, by index into `call_names`: count and time.
    os_calls: Vec<HashMap<usize, (u64, u64)>>,
    /// Per path, by index into `functions`: samples.
    samples: Vec<HashMap<usize, u64>>,
    call_names: &'a [String],
    functions: &'a [(String, String)],
}

impl<'a> HostEvents<'a> {
    /// Each call and sample counts for every instance open around it on
    /// its thread: a call inside `resize` counts for `preprocess` too.
    fn attribute(
        nodes: &[PathNode],
        instances: &BTreeMap<i64, Vec<Instance>>,
        os_calls: &'a ByThread<OsRuntimeCall, String>,
        samples: &'a ByThread<Sample, (String, String)>,
    ) -> HostEvents<'a> {
        let mut events = HostEvents {
            os_calls: vec![HashMap::new(); nodes.len()],
            samples: vec![HashMap::new(); nodes.len()],
            call_names: &os_calls.names,
            functions: &samples.names,
        };
        let (os_calls, samples) = (&os_calls.events, &samples.events);
        for (tid, list) in instances {
            for instance in list {
                let Some(node) = instance.path else { continue };
                if let Some(calls) = os_calls.get(tid) {
                    // A call on the range's own thread cannot straddle its
                    // push or pop: it lies inside the range or outside it.
                    let first = calls.partition_point(|call| call.start < instance.start);
                    for call in calls[first..]
                        .iter()
                        .take_while(|call| call.start < instance.end)
                        .filter(|call| call.end <= instance.end)
                    {
                        let entry = events.os_calls[node].entry(call.name).or_default();
                        entry.0 += 1;
                        entry.1 = entry.1.saturating_add(span(call.start, call.end));
                    }
                }
                if let Some(list) = samples.get(tid) {
                    let first = list.partition_point(|sample| sample.time < instance.start);
                    for sample in list[first..]
                        .iter()
                        .take_while(|sample| sample.time < instance.end)
                    {
                        *events.samples[node].entry(sample.function).or_default() += 1;
                    }
                }
            }
        }
        events
    }

    /// Path `node`'s time in OS calls, its top `listed` calls, its samples
    /// and top `listed` functions.
    fn of(&self, node: usize, listed: usize) -> (u64, Vec<OsCall>, u64, Vec<SampledFunction>) {
        let mut calls: Vec<OsCall> = self.os_calls[node]
            .iter()
            .map(|(&name, &(count, total_ns))| OsCall {
                name: self.call_names[name].clone(),
                count,
                total_ns,
            })
            .collect();
        let os_ns = calls
            .iter()
            .fold(0u64, |sum, call| sum.saturating_add(call.total_ns));
        calls.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        calls.truncate(listed);
        let mut functions: Vec<SampledFunction> = self.samples[node]
            .iter()
            .map(|(&function, &samples)| SampledFunction {
                name: self.functions[function].0.clone(),
                module: self.functions[function].1.clone(),
                samples,
            })
            .collect();
        let sampled = functions.iter().map(|f| f.samples).sum();
        functions.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
        functions.truncate(listed);
        (os_ns, calls, sampled, functions)
    }
}

/// From `start` to `end` in nanoseconds; 0 when `end` is not after
/// `start`, and no overflow on times a crafted export holds.
fn span(start: i64, end: i64) -> u64 {
    end.saturating_sub(start).max(0) as u64
}

/// The union of `intervals` within `[from, to]`, and the longest stretch of
/// `[from, to]` none of them covers.
fn busy_and_idle(intervals: &[(i64, i64)], from: i64, to: i64) -> (u64, u64) {
    let mut clipped: Vec<(i64, i64)> = intervals
        .iter()
        .map(|&(start, end)| (start.max(from), end.min(to)))
        .filter(|&(start, end)| end > start)
        .collect();
    clipped.sort_unstable();
    let (mut busy, mut idle, mut cursor) = (0u64, 0u64, from);
    let mut current: Option<(i64, i64)> = None;
    for (start, end) in clipped {
        match &mut current {
            Some((_, current_end)) if start <= *current_end => {
                *current_end = (*current_end).max(end);
            }
            _ => {
                if let Some((s, e)) = current.take() {
                    busy = busy.saturating_add(span(s, e));
                    cursor = e;
                }
                idle = idle.max(span(cursor, start));
                current = Some((start, end));
            }
        }
    }
    if let Some((s, e)) = current {
        busy = busy.saturating_add(span(s, e));
        cursor = e;
    }
    (busy, idle.max(span(cursor, to)))
}

/// The union of `intervals`, unclipped.
fn union_length(intervals: &[(i64, i64)]) -> u64 {
    let from = intervals.iter().map(|&(start, _)| start).min().unwrap_or(0);
    let to = intervals.iter().map(|&(_, end)| end).max().unwrap_or(0);
    busy_and_idle(intervals, from, to).0
}

fn stats(mut values: Vec<u64>) -> Option<DurationStats> {
    DurationStats::from_samples(&mut values)
}

fn summarize_paths(
    nodes: &[PathNode],
    instances: &BTreeMap<i64, Vec<Instance>>,
    activities: &[Activity],
    kernel_names: &[String],
    thread_names: &HashMap<i64, String>,
    host_events: &HostEvents,
    kernels_listed: usize,
) -> Vec<RangeAnalysis> {
    struct Totals {
        host: Vec<u64>,
        busy: Vec<u64>,
        span: Vec<u64>,
        count: u64,
        sum: u64,
        /// By index into `kernel_names`.
        kernels: HashMap<usize, Vec<u64>>,
    }
    let mut totals: Vec<Totals> = (0..nodes.len())
        .map(|_| Totals {
            host: Vec::new(),
            busy: Vec::new(),
            span: Vec::new(),
            count: 0,
            sum: 0,
            kernels: HashMap::new(),
        })
        .collect();
    for list in instances.values() {
        for instance in list {
            let Some(path) = instance.path else { continue };
            let total = &mut totals[path];
            total.host.push(span(instance.start, instance.end));
            if instance.activities.is_empty() {
                continue;
            }
            let mut intervals: Vec<(i64, i64)> = Vec::with_capacity(instance.activities.len());
            let mut last_end = i64::MIN;
            for &a in &instance.activities {
                let activity = &activities[a];
                intervals.push((activity.start, activity.end));
                last_end = last_end.max(activity.end);
                let duration = span(activity.start, activity.end);
                total.sum = total.sum.saturating_add(duration);
                total.count += 1;
                total
                    .kernels
                    .entry(activity.name)
                    .or_default()
                    .push(duration);
            }
            total.busy.push(union_length(&intervals));
            if let Some(first) = instance.first_launch {
                total.span.push(span(first, last_end));
            }
        }
    }
    let parents: Vec<Option<usize>> = nodes.iter().map(|n| n.parent).collect();
    // Each path once, from its parent's (made before it): no walk up the
    // tree per path.
    let mut paths: Vec<String> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let path = match node.parent {
            Some(parent) => format!("{}/{}", paths[parent], node.name),
            None => node.name.to_string(),
        };
        paths.push(path);
    }
    // Depth-first, siblings by host time, largest first.
    let host_totals: Vec<u128> = totals
        .iter()
        .map(|t| t.host.iter().map(|&v| u128::from(v)).sum())
        .collect();
    let order = depth_first(&parents, |i| host_totals[i], |i| &*nodes[i].name);
    order
        .into_iter()
        .filter_map(|i| {
            let total = &mut totals[i];
            let mut kernels: Vec<KernelSummary> = total
                .kernels
                .drain()
                .map(|(name, mut durations)| {
                    durations.sort_unstable();
                    KernelSummary {
                        count: durations.len() as u64,
                        total_ns: durations.iter().fold(0u64, |sum, &d| sum.saturating_add(d)),
                        median_ns: durations[(durations.len() - 1) / 2],
                        name: kernel_names[name].clone(),
                    }
                })
                .collect();
            kernels.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
            kernels.truncate(kernels_listed);
            let node = &nodes[i];
            let (os_runtime_ns, os_calls, samples, sampled_functions) =
                host_events.of(i, kernels_listed);
            Some(RangeAnalysis {
                path: std::mem::take(&mut paths[i]),
                name: node.name.to_string(),
                depth: node.depth,
                thread: thread_names
                    .get(&node.tid)
                    .cloned()
                    .unwrap_or_else(|| format!("thread {}", node.tid & 0xFF_FFFF)),
                count: total.host.len() as u64,
                host: stats(std::mem::take(&mut total.host))?,
                gpu_busy: stats(std::mem::take(&mut total.busy)),
                gpu_activities: total.count,
                gpu_sum_ns: total.sum,
                launch_to_completion: stats(std::mem::take(&mut total.span)),
                kernels,
                os_runtime_ns,
                os_calls,
                samples,
                sampled_functions,
                manifest_host_p50_ns: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_is_the_union_and_idle_the_longest_gap() {
        // [10, 30] and [20, 40] overlap; [60, 70] alone; within [0, 100].
        let (busy, idle) = busy_and_idle(&[(20, 40), (10, 30), (60, 70)], 0, 100);
        assert_eq!((busy, idle), (40, 30));
        // Clipped to the window.
        assert_eq!(busy_and_idle(&[(-10, 5), (95, 120)], 0, 100), (10, 90));
        assert_eq!(busy_and_idle(&[], 0, 100), (0, 100));
        assert_eq!(union_length(&[(0, 10), (5, 20), (30, 31)]), 21);
    }

    #[test]
    fn times_from_a_crafted_export_saturate_instead_of_overflowing() {
        assert_eq!(span(i64::MIN, i64::MAX), i64::MAX as u64);
        assert_eq!(span(10, 5), 0);
        assert_eq!(
            busy_and_idle(&[(i64::MIN, 0), (1, i64::MAX)], i64::MIN, i64::MAX),
            (i64::MAX as u64 * 2 - 1, 1)
        );
    }

    #[test]
    fn rust_symbols_lose_their_hash_and_others_stay() {
        assert_eq!(
            without_rust_hash("profiling_examples::work::chain::h937039e9c0874706".to_owned()),
            "profiling_examples::work::chain"
        );
        assert_eq!(
            without_rust_hash("__memcpy_avx_unaligned_erms".to_owned()),
            "__memcpy_avx_unaligned_erms"
        );
        assert_eq!(without_rust_hash("a::hello".to_owned()), "a::hello");
    }

    #[test]
    fn pass_ranges_are_iteration_and_a_number() {
        assert!(is_pass_name("iteration 12"));
        assert!(!is_pass_name("iteration"));
        assert!(!is_pass_name("iteration x"));
        assert_eq!(pid_of((4242 << 24) | 17), 4242);
    }
}
