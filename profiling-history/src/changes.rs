//! Where a series shifted for good, found by itself.
//!
//! E-Divisive means (Matteson and James, 2014, with α = 1, as Apache
//! Otava and MongoDB's signal processing use it): the split of a segment
//! that maximizes the energy distance between its two sides, weighted by
//! their sizes, is a candidate; a permutation test (the values shuffled
//! within each segment, the best split found again) says how often
//! chance does as well; below the significance level the split is a
//! change and both sides are searched again. Nothing is assumed of the
//! noise's distribution, and a single outlier is never a change: each
//! side holds at least `min_size` commits.
//!
//! A series is a range's metric per commit (the median of the commit's
//! runs). A change is given at the first commit after the split, with the
//! ratio of the medians of the segments either side and its bootstrap
//! interval. Nested ranges that shift at the same commit in the same
//! direction are one finding, attributed to the innermost: a slower
//! `preprocess/resize` makes `preprocess` and the pass slower too.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::series::{by_commit, CommitPoint, Series};

/// How changes are searched for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detector {
    /// Commits each side of a split holds at least.
    pub min_size: usize,
    /// Shuffles of the permutation test.
    pub permutations: u32,
    /// A split is a change when its p-value is at most this.
    pub significance: f64,
    /// The shuffles' seed: the same series gives the same changes.
    pub seed: u64,
}

impl Default for Detector {
    /// Three commits a side, 199 shuffles, p ≤ 0.01.
    fn default() -> Detector {
        Detector {
            min_size: 3,
            permutations: 199,
            significance: 0.01,
            seed: 0x5eed_c4a9,
        }
    }
}

/// A split of a series: the index its second side starts at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Split {
    pub at: usize,
    pub p_value: f64,
}

impl Detector {
    /// The significant splits of `values`, by index.
    pub fn splits(&self, values: &[f64]) -> Vec<Split> {
        let min = self.min_size.max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut bounds: Vec<usize> = vec![0, values.len()];
        let mut found = Vec::new();
        let identity: Vec<usize> = (0..values.len()).collect();
        loop {
            // The best split over every segment.
            let best = bounds
                .windows(2)
                .filter_map(|w| best_split(values, &identity[w[0]..w[1]], w[0], min))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((at, q)) = best else { break };
            let mut as_good = 0u32;
            let mut shuffled = identity.clone();
            for _ in 0..self.permutations {
                let mut most = f64::NEG_INFINITY;
                for w in bounds.windows(2) {
                    let segment = &mut shuffled[w[0]..w[1]];
                    segment.shuffle(&mut rng);
                    if let Some((_, q)) = best_split(values, segment, w[0], min) {
                        most = most.max(q);
                    }
                }
                if most >= q {
                    as_good += 1;
                }
            }
            let p_value = f64::from(as_good + 1) / f64::from(self.permutations + 1);
            if p_value > self.significance {
                break;
            }
            found.push(Split { at, p_value });
            let place = bounds.partition_point(|&b| b < at);
            bounds.insert(place, at);
        }
        found.sort_by_key(|s| s.at);
        found
    }
}

/// The split of the segment whose values are `values[order[..]]` (the
/// segment starting at `start` of the series) with the largest weighted
/// energy distance, as (index in the series, statistic); none when the
/// segment is too short for two sides of `min`.
///
/// The sums of distances within the left side, within the right side and
/// across are kept as the split moves, so a segment of L values costs
/// O(L²).
fn best_split(values: &[f64], order: &[usize], start: usize, min: usize) -> Option<(usize, f64)> {
    let len = order.len();
    if len < 2 * min {
        return None;
    }
    let x = |i: usize| values[order[i]];
    // within_right[t]: the sum of |x_i - x_j| over t <= i < j < len.
    let mut within_right = vec![0.0; len + 1];
    for t in (0..len).rev() {
        let row: f64 = (t + 1..len).map(|j| (x(t) - x(j)).abs()).sum();
        within_right[t] = within_right[t + 1] + row;
    }
    let total = within_right[0];
    let mut within_left = 0.0;
    let mut best: Option<(usize, f64)> = None;
    #[allow(clippy::needless_range_loop)] // t is a split, not only an index
    for t in 1..len {
        // Move x(t - 1) to the left side.
        within_left += (0..t - 1).map(|i| (x(i) - x(t - 1)).abs()).sum::<f64>();
        let (m, n) = (t, len - t);
        if m < min || n < min {
            continue;
        }
        let across = total - within_left - within_right[t];
        let (mf, nf) = (m as f64, n as f64);
        let pairs = |k: f64| k * (k - 1.0) / 2.0;
        let left = if m > 1 { within_left / pairs(mf) } else { 0.0 };
        let right = if n > 1 {
            within_right[t] / pairs(nf)
        } else {
            0.0
        };
        let energy = 2.0 * across / (mf * nf) - left - right;
        let q = mf * nf / (mf + nf) * energy;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((start + t, q));
        }
    }
    best
}

/// A shift of one range's metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub machine: String,
    pub config: String,
    /// "pass" or "range".
    pub part: String,
    pub path: String,
    pub depth: u32,
    /// The first commit after the shift (none for runs outside git).
    pub commit: Option<String>,
    /// Its index among the series' commits.
    pub index: usize,
    /// The commits of the series.
    pub commits: usize,
    /// The medians of the commits either side, up to the next changes.
    pub before: u64,
    pub after: u64,
    /// `after / before`, with its 95 % bootstrap interval.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
    /// The run ids at that commit.
    pub runs: Vec<String>,
    /// The ranges around it that moved with it, outermost first (`pass`
    /// for the pass).
    pub also: Vec<String>,
}

impl Change {
    /// What changed, as a line names it: the range path (`pass` for the
    /// pass), `(GPU busy)` after it for what `analyze` recorded.
    pub fn label(&self) -> String {
        if self.part == "gpu" {
            format!("{} (GPU busy)", self.path)
        } else {
            self.path.clone()
        }
    }

    /// Slower (a larger value) rather than faster.
    pub fn is_regression(&self) -> bool {
        self.ratio > 1.0
    }
}

/// The changes of every series (each already in commit order: see
/// [`Series::along`]), nested ones attributed to the innermost, newest
/// first.
pub fn find(series: &[(Series, Vec<CommitPoint>)], detector: &Detector) -> Vec<Change> {
    let mut changes = Vec::new();
    for (series, commits) in series {
        let values: Vec<f64> = commits.iter().map(|c| c.value as f64).collect();
        let splits = detector.splits(&values);
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(splits.iter().map(|s| s.at));
        bounds.push(commits.len());
        for (k, split) in splits.iter().enumerate() {
            let (from, at, to) = (bounds[k], bounds[k + 1], bounds[k + 2]);
            let mut before: Vec<u64> = commits[from..at].iter().map(|c| c.value).collect();
            let mut after: Vec<u64> = commits[at..to].iter().map(|c| c.value).collect();
            before.sort_unstable();
            after.sort_unstable();
            let Some(interval) = profiling_compare::statistics::median_ratio_interval(
                &before,
                &after,
                &profiling_compare::statistics::BootstrapOptions::default(),
            ) else {
                continue;
            };
            let median = |v: &[u64]| v[(v.len() - 1) / 2];
            changes.push(Change {
                machine: series.machine.clone(),
                config: series.config.clone(),
                part: series.part.clone(),
                path: series.path.clone(),
                depth: series.depth,
                commit: commits[at].commit.clone(),
                index: at,
                commits: commits.len(),
                before: median(&before),
                after: median(&after),
                ratio: interval.ratio,
                low: interval.low,
                high: interval.high,
                p_value: split.p_value,
                runs: commits[at].runs.iter().map(|r| r.run_id.clone()).collect(),
                also: Vec::new(),
            });
        }
    }
    attribute(changes)
}

/// Whether range `inner` runs inside `outer` (the pass holds every range).
fn is_inside(inner: &Change, outer: &Change) -> bool {
    match (outer.part.as_str(), inner.part.as_str()) {
        ("pass", "range") => true,
        ("range", "range") => inner
            .path
            .strip_prefix(outer.path.as_str())
            .is_some_and(|rest| rest.starts_with('/')),
        _ => false,
    }
}

/// Each change of an outer range that an inner one explains (same
/// machine, config and commit, same direction) folded into the inner's
/// `also`; newest first, then innermost first.
fn attribute(mut changes: Vec<Change>) -> Vec<Change> {
    // Innermost first, so that an outer change finds its inner one kept.
    changes.sort_by(|a, b| {
        let depth = |c: &Change| {
            if c.part == "pass" {
                -1
            } else {
                i64::from(c.depth)
            }
        };
        depth(b).cmp(&depth(a)).then(a.path.cmp(&b.path))
    });
    let mut kept: Vec<Change> = Vec::new();
    for change in changes {
        let explained = kept.iter_mut().find(|inner| {
            inner.machine == change.machine
                && inner.config == change.config
                && match (&inner.commit, &change.commit) {
                    (Some(a), Some(b)) => a == b,
                    // Outside git: the same place in the runs.
                    (None, None) => inner.index == change.index,
                    _ => false,
                }
                && inner.is_regression() == change.is_regression()
                && is_inside(inner, &change)
        });
        match explained {
            Some(inner) => inner.also.insert(0, change.path.clone()),
            None => kept.push(change),
        }
    }
    kept.sort_by(|a, b| {
        b.index
            .cmp(&a.index)
            .then(b.depth.cmp(&a.depth))
            .then(a.path.cmp(&b.path))
    });
    kept
}

/// Each series in commit order and grouped by commit, ready for [`find`].
pub fn prepare(
    series: &[Series],
    commits: &[String],
    dirty: bool,
) -> Vec<(Series, Vec<CommitPoint>)> {
    series
        .iter()
        .map(|s| {
            let along = s.along(commits, dirty);
            (s.clone(), by_commit(&along.points))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::Distribution;

    /// `n` values around `level` with Gaussian noise of `spread` (relative).
    fn noisy(rng: &mut ChaCha8Rng, n: usize, level: f64, spread: f64) -> Vec<f64> {
        let normal = rand_distr::Normal::new(0.0, spread * level).unwrap();
        (0..n).map(|_| level + normal.sample(rng)).collect()
    }

    #[test]
    fn a_lasting_shift_is_found_where_it_begins() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut values = noisy(&mut rng, 30, 1000.0, 0.01);
        values.extend(noisy(&mut rng, 30, 1100.0, 0.01));
        let splits = Detector::default().splits(&values);
        assert_eq!(splits.len(), 1, "{splits:?}");
        assert_eq!(splits[0].at, 30);
        assert!(splits[0].p_value <= 0.01);
    }

    #[test]
    fn noise_alone_is_no_change() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let values = noisy(&mut rng, 60, 1000.0, 0.02);
        assert_eq!(Detector::default().splits(&values), []);
    }

    #[test]
    fn one_outlier_is_no_change() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut values = noisy(&mut rng, 40, 1000.0, 0.01);
        values[20] = 5000.0;
        assert_eq!(Detector::default().splits(&values), []);
    }

    #[test]
    fn two_shifts_are_two_changes() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut values = noisy(&mut rng, 20, 1000.0, 0.01);
        values.extend(noisy(&mut rng, 20, 1080.0, 0.01));
        values.extend(noisy(&mut rng, 20, 1000.0, 0.01));
        let at: Vec<usize> = Detector::default()
            .splits(&values)
            .iter()
            .map(|s| s.at)
            .collect();
        assert_eq!(at, [20, 40]);
    }

    #[test]
    fn the_split_statistic_matches_the_definition() {
        // Energy distance of {1, 2} and {10, 12}: 2·mean|x−y| − mean|x−x'|
        // − mean|y−y'| = 2·9.5 − 1 − 2 = 16, weighted by 2·2/4 = 1.
        let values = [1.0, 2.0, 10.0, 12.0];
        let order = [0, 1, 2, 3];
        assert_eq!(best_split(&values, &order, 0, 2), Some((2, 16.0)));
        assert_eq!(best_split(&values, &order, 0, 3), None);
    }
}
