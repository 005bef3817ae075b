//! A range's metric run by run: what the store gives back, and its order
//! along the commits of a branch.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

/// The figure a series follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    P50,
    P90,
    /// Absent from runs recorded before it was.
    P95,
    P99,
    Mean,
    Min,
    Max,
    /// With `memory: on`: the median bytes one range allocated.
    AllocBytes,
    /// With `memory: on`: the median of one range's peaks of live bytes.
    Peak,
}

impl Metric {
    pub const ALL: [Metric; 9] = [
        Metric::P50,
        Metric::P90,
        Metric::P95,
        Metric::P99,
        Metric::Mean,
        Metric::Min,
        Metric::Max,
        Metric::AllocBytes,
        Metric::Peak,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::Mean => "mean",
            Metric::Min => "min",
            Metric::Max => "max",
            Metric::AllocBytes => "alloc-bytes",
            Metric::Peak => "peak",
        }
    }

    /// True for the metrics in bytes, false for those in nanoseconds.
    pub fn is_bytes(self) -> bool {
        matches!(self, Metric::AllocBytes | Metric::Peak)
    }

    /// Whether the store keeps an interval for it (the median's).
    pub fn has_interval(self) -> bool {
        self == Metric::P50
    }
}

impl std::str::FromStr for Metric {
    type Err = String;
    fn from_str(text: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                format!("unknown metric `{text}`: one of {}", names.join(", "))
            })
    }
}

/// Which series to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesQuery {
    pub profile: String,
    pub metric: Metric,
    /// Only this machine's runs (its fingerprint).
    pub machine: Option<String>,
    /// Only runs of this config (its hash).
    pub config: Option<String>,
}

/// One run's value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The run's id in the store.
    pub run: i64,
    pub run_id: String,
    pub started_at: String,
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    pub run_dir: PathBuf,
    pub value: u64,
    /// The interval of the median, for `p50`.
    pub low: Option<u64>,
    pub high: Option<u64>,
}

/// One range path's metric on one machine and config, a point a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub profile: String,
    pub metric: Metric,
    pub machine: String,
    pub config: String,
    /// "pass" or "range".
    pub part: String,
    pub path: String,
    pub name: String,
    pub depth: u32,
    pub points: Vec<Point>,
}

impl Series {
    /// Whether `other` is a point of the same series.
    pub(crate) fn same_series(&self, other: &Series) -> bool {
        self.machine == other.machine
            && self.config == other.config
            && self.part == other.part
            && self.path == other.path
    }

    /// The series' points along `commits` (oldest first: a branch's
    /// first-parent line), each commit's runs in the order they ran, and
    /// what was left out. Runs of a dirty tree measured no commit and runs
    /// of commits off the line are left out, unless `dirty` keeps the
    /// former; with no commits at all (no git), every run in the order
    /// they ran.
    pub fn along(&self, commits: &[String], dirty: bool) -> Along {
        let mut along = Along::default();
        if commits.is_empty() {
            along.points = self.points.clone();
            return along;
        }
        let index: HashMap<&str, usize> = commits
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i))
            .collect();
        let mut placed: Vec<(usize, &Point)> = Vec::new();
        for point in &self.points {
            if point.dirty == Some(true) && !dirty {
                along.dirty += 1;
                continue;
            }
            match point.commit.as_deref().and_then(|c| index.get(c)) {
                Some(&at) => placed.push((at, point)),
                None => along.off_line += 1,
            }
        }
        // Stable: runs of one commit stay in the order they ran.
        placed.sort_by_key(|(at, _)| *at);
        along.points = placed.into_iter().map(|(_, p)| p.clone()).collect();
        along
    }
}

/// A series' points in commit order, and how many runs were left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Along {
    pub points: Vec<Point>,
    /// Runs of a dirty tree.
    pub dirty: usize,
    /// Runs of commits not on the line.
    pub off_line: usize,
}

/// Points grouped by commit, in order: each commit's median value (the
/// lower middle, as the manifest's p50 is) and its runs. Runs without a
/// commit are a group each.
pub fn by_commit(points: &[Point]) -> Vec<CommitPoint> {
    let mut groups: Vec<CommitPoint> = Vec::new();
    for point in points {
        match groups.last_mut() {
            Some(last) if point.commit.is_some() && last.commit == point.commit => {
                last.runs.push(point.clone())
            }
            _ => groups.push(CommitPoint {
                commit: point.commit.clone(),
                value: 0,
                runs: vec![point.clone()],
            }),
        }
    }
    for group in &mut groups {
        let mut values: Vec<u64> = group.runs.iter().map(|p| p.value).collect();
        values.sort_unstable();
        group.value = values[(values.len() - 1) / 2];
    }
    groups
}

/// One commit's runs of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitPoint {
    pub commit: Option<String>,
    /// The median of its runs' values (the lower middle).
    pub value: u64,
    pub runs: Vec<Point>,
}
