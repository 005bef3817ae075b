//! The comparison of a paired run (`profile-cli ab`): base and candidate
//! measured in one process, their passes alternated in blocks, so that
//! each block of one side has a neighbour of the other that ran under the
//! same conditions: what the machine did meanwhile (other work, a clock
//! that changed, a cache another process filled) falls on both.
//!
//! For the pass, the call and each range name both sides have, every
//! block pair gives one ratio: the candidate's median in its block over
//! the base's in the neighbouring block. The ratio reported is the
//! geometric mean of the pairs' ratios; its interval is a percentile
//! bootstrap of that mean over the pairs (the pairs are resampled, not
//! the passes, so the variation between blocks is what the interval
//! holds); its p-value is the Wilcoxon signed-rank test of the pairs' log
//! ratios against 0. The verdict follows the same rules as a comparison
//! of separate runs ([`crate::verdict`]). `docs/COMPARING.md` explains
//! the method.

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use profiling_core::driver::run_samples::{PairedSamples, SidePasses};

use crate::runs::LoadedRun;
use crate::statistics::{lower_median, percentile_interval};
use crate::{Options, Row, Side, Subject, Verdict};

/// Fewer block pairs than this give no verdict but `unclear`.
pub const MIN_PAIRS: usize = 6;

/// Pairs up to this many get the exact signed-rank p-value; more the
/// normal approximation.
const EXACT_SIGNED_RANK_MAX: usize = 30;

/// How a paired comparison was measured, as its table and page say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pairing {
    /// Block pairs compared.
    pub pairs: usize,
    /// Passes of a side in a block (the last may have fewer).
    pub passes_per_block: u32,
    /// 1: both sides in one process; 2: each in its own, in lock-step.
    pub processes: u32,
}

impl Pairing {
    /// Where the sides ran, in words.
    pub fn where_run(&self) -> &'static str {
        if self.processes > 1 {
            "in two processes in lock-step"
        } else {
            "in one process"
        }
    }
}

/// The pairs' ratio of one quantity: the geometric mean of the block
/// pairs' ratios, its interval and the signed-rank p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedRatio {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
    pub pairs: usize,
}

/// The ratio of `candidate` over `base`, pair by pair (each a block's
/// median, both above 0); `None` without a pair.
pub fn paired_ratio(pairs: &[(f64, f64)], options: &Options) -> Option<PairedRatio> {
    paired_ratio_in_stages(pairs, &[], options)
}

/// [`paired_ratio`] of pairs measured in stages: `stage_of[i]` the stage
/// of pair `i` (empty: one stage). The interval resamples the stages and
/// then the pairs within each stage drawn ([`Resample`]).
pub fn paired_ratio_in_stages(
    pairs: &[(f64, f64)],
    stage_of: &[usize],
    options: &Options,
) -> Option<PairedRatio> {
    let (logs, stages): (Vec<f64>, Vec<usize>) = pairs
        .iter()
        .enumerate()
        .filter(|(_, (b, c))| *b > 0.0 && *c > 0.0)
        .map(|(i, (b, c))| ((c / b).ln(), stage_of.get(i).copied().unwrap_or(0)))
        .unzip();
    if logs.is_empty() {
        return None;
    }
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let resample = Resample::new(&stages);
    let mut rng = ChaCha8Rng::seed_from_u64(options.bootstrap.seed);
    let mut drawn = Vec::with_capacity(logs.len());
    let mut means: Vec<f64> = (0..options.bootstrap.resamples)
        .map(|_| {
            resample.draw(&mut rng, &mut drawn);
            drawn.iter().map(|&i| logs[i]).sum::<f64>() / drawn.len() as f64
        })
        .collect();
    let (low, high) = percentile_interval(&mut means, options.bootstrap.confidence)
        .unwrap_or((mean(&logs), mean(&logs)));
    Some(PairedRatio {
        ratio: mean(&logs).exp(),
        low: low.exp(),
        high: high.exp(),
        p_value: signed_rank_p_value(&logs),
        pairs: logs.len(),
    })
}

/// Which stage each of `pairs` block pairs belongs to, from how many
/// pairs each stage gave (`stages`, in order; empty: one stage). Pairs past
/// the stages' total (there are none unless a side stopped early) belong
/// to the last.
pub fn stage_of_pairs(stages: &[u32], pairs: usize) -> Vec<usize> {
    let mut of = Vec::with_capacity(pairs);
    for (stage, &count) in stages.iter().enumerate() {
        of.extend(std::iter::repeat_n(stage, count as usize));
    }
    of.truncate(pairs);
    let last = stages.len().saturating_sub(1);
    of.resize(pairs, last);
    of
}

/// One bootstrap resample of block pairs, of stages when there are more
/// than one. Pairs of one stage share where each side's data landed when
/// its target was built, which can make one side slower for the whole
/// stage (a fresh allocation streams at a speed of its own); pairing
/// cancels what changes over time, not that. So, with stages, a resample
/// draws as many stages as there are, with replacement, and within each
/// stage drawn as many of its pairs as it has: the interval holds the
/// variation between stages as well as within them (a two-level, or
/// cluster, bootstrap). With few stages it is wide unless every stage
/// says the same. With one stage it is the plain resample of the pairs.
pub(crate) struct Resample {
    /// The pairs' indices, by stage.
    stages: Vec<Vec<usize>>,
}

impl Resample {
    /// From each pair's stage.
    pub(crate) fn new(stage_of: &[usize]) -> Self {
        let mut stages: Vec<Vec<usize>> = Vec::new();
        for (i, &stage) in stage_of.iter().enumerate() {
            if stages.len() <= stage {
                stages.resize_with(stage + 1, Vec::new);
            }
            stages[stage].push(i);
        }
        stages.retain(|pairs| !pairs.is_empty());
        Self { stages }
    }

    /// One resample's pair indices, into `drawn` (cleared first).
    pub(crate) fn draw(&self, rng: &mut impl Rng, drawn: &mut Vec<usize>) {
        drawn.clear();
        match self.stages.as_slice() {
            [] => {}
            [only] => drawn.extend((0..only.len()).map(|_| only[rng.gen_range(0..only.len())])),
            stages => {
                for _ in 0..stages.len() {
                    let stage = &stages[rng.gen_range(0..stages.len())];
                    drawn.extend((0..stage.len()).map(|_| stage[rng.gen_range(0..stage.len())]));
                }
            }
        }
    }
}

/// The two-sided p-value of the Wilcoxon signed-rank test of `values`
/// against 0 (zeros left out, ties given their mean rank): exact for up to
/// [`EXACT_SIGNED_RANK_MAX`] values without ties, the normal approximation
/// with a tie correction above.
pub fn signed_rank_p_value(values: &[f64]) -> f64 {
    let mut nonzero: Vec<f64> = values.iter().copied().filter(|v| *v != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return 1.0;
    }
    nonzero.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Ranks of |v|, ties at their mean; twice the rank stays an integer.
    let mut twice_ranks = vec![0u64; n];
    let mut tie_term = 0.0;
    let mut ties = false;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nonzero[j + 1].abs() == nonzero[i].abs() {
            j += 1;
        }
        let twice_mean = (i + 1 + j + 1) as u64;
        for rank in &mut twice_ranks[i..=j] {
            *rank = twice_mean;
        }
        let t = (j - i + 1) as f64;
        if t > 1.0 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j + 1;
    }
    let twice_w_plus: u64 = nonzero
        .iter()
        .zip(&twice_ranks)
        .filter(|(v, _)| **v > 0.0)
        .map(|(_, r)| r)
        .sum();
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    if n <= EXACT_SIGNED_RANK_MAX && !ties {
        let w = (twice_w_plus / 2) as usize;
        let counts = signed_rank_counts(n);
        let total: f64 = counts.iter().sum();
        let (below, above) = if (w as f64) <= mean {
            (counts[..=w].iter().sum::<f64>(), total)
        } else {
            (total, counts[w..].iter().sum::<f64>())
        };
        return (2.0 * below.min(above) / total).min(1.0);
    }
    let variance = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if variance <= 0.0 {
        return 1.0;
    }
    let w = twice_w_plus as f64 / 2.0;
    // With a continuity correction of one half.
    let z = ((w - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    (2.0 * (1.0 - normal.cdf(z))).min(1.0)
}

/// How many of the 2ⁿ sign patterns of ranks 1..=n give each sum W⁺.
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let most = n * (n + 1) / 2;
    let mut counts = vec![0.0; most + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for sum in (rank..=most).rev() {
            counts[sum] += counts[sum - rank];
        }
    }
    counts
}

/// `side`'s passes (`values`, in the order they ran) cut into its blocks
/// of `blocks`, in order, empty ones left out: the k-th block of a side
/// pairs with the k-th of the other.
pub(crate) fn side_blocks<'v>(
    blocks: &[(String, u32)],
    side: &str,
    values: &'v [u64],
) -> Vec<&'v [u64]> {
    let mut at = 0;
    blocks
        .iter()
        .filter(|(s, _)| s == side)
        .filter_map(|&(_, passes)| {
            let end = (at + passes as usize).min(values.len());
            let block = values.get(at..end)?;
            at = end;
            (!block.is_empty()).then_some(block)
        })
        .collect()
}

/// Each block pair's medians of `base` and `candidate` (values in the
/// order their passes ran).
fn block_pairs(blocks: &[(String, u32)], base: &[u64], candidate: &[u64]) -> Vec<(f64, f64)> {
    let medians = |side: &str, values: &[u64]| -> Vec<f64> {
        side_blocks(blocks, side, values)
            .into_iter()
            .filter_map(|block| {
                let mut block = block.to_vec();
                block.sort_unstable();
                lower_median(&block).map(|m| m as f64)
            })
            .collect()
    };
    medians("base", base)
        .into_iter()
        .zip(medians("candidate", candidate))
        .collect()
}

/// One side of a row from its per-pass values.
fn side_of(values: &[u64], per_pass: f64) -> Option<Side> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    Some(Side {
        median_ns: lower_median(&sorted)?,
        samples: values.len() as u64,
        per_pass,
    })
}

/// The row of one quantity measured pass by pass on both sides.
fn paired_row(
    subject: Subject,
    (blocks, stages): (&[(String, u32)], &[u32]),
    values: (Option<&[u64]>, Option<&[u64]>),
    base_pass_median: Option<u64>,
    options: &Options,
) -> Row {
    // Per-pass values: a quantity that happens once per pass.
    let base = values.0.and_then(|v| side_of(v, 1.0));
    let candidate = values.1.and_then(|v| side_of(v, 1.0));
    let mut row = Row::unjudged(subject, base, candidate, base_pass_median);
    let (Some(base_values), Some(candidate_values)) = values else {
        row.verdict = if row.base.is_some() {
            Verdict::Removed
        } else {
            Verdict::Added
        };
        return row;
    };
    let pairs = block_pairs(blocks, base_values, candidate_values);
    let stage_of = stage_of_pairs(stages, pairs.len());
    let Some(paired) = paired_ratio_in_stages(&pairs, &stage_of, options) else {
        row.note = Some("no block pair has a time above 0 on both sides: no ratio".to_owned());
        return row;
    };
    row.ratio = Some(paired.ratio);
    row.interval = Some([paired.low, paired.high]);
    row.p_value = Some(paired.p_value);
    if paired.pairs < MIN_PAIRS {
        row.note = Some(format!(
            "too few block pairs for a verdict ({}; {MIN_PAIRS} are needed): run more passes, or smaller blocks",
            paired.pairs
        ));
        return row;
    }
    row.verdict = crate::verdict(
        paired.ratio,
        paired.low,
        paired.high,
        paired.p_value,
        options,
    );
    row
}

/// The rows of a paired run: the pass, the call, then every range name
/// of either side, by how much of a pass its change moves.
pub fn paired_rows(samples: &PairedSamples, options: &Options) -> Vec<Row> {
    let (b, c): (&SidePasses, &SidePasses) = (&samples.base, &samples.candidate);
    let blocks = (samples.blocks.as_slice(), samples.stages.as_slice());
    let mut sorted = b.pass_ns.clone();
    sorted.sort_unstable();
    let base_pass_median = lower_median(&sorted);
    let mut rows = vec![
        paired_row(
            Subject::Pass,
            blocks,
            (Some(&b.pass_ns), Some(&c.pass_ns)),
            base_pass_median,
            options,
        ),
        paired_row(
            Subject::Call,
            blocks,
            (Some(&b.call_ns), Some(&c.call_ns)),
            base_pass_median,
            options,
        ),
    ];
    let names: BTreeSet<&String> = b.ranges.keys().chain(c.ranges.keys()).collect();
    let mut ranges: Vec<Row> = names
        .into_iter()
        .map(|name| {
            paired_row(
                Subject::Range(name.clone()),
                blocks,
                (
                    b.ranges.get(name).map(Vec::as_slice),
                    c.ranges.get(name).map(Vec::as_slice),
                ),
                base_pass_median,
                options,
            )
        })
        .collect();
    ranges.sort_by(|x, y| {
        y.pass_change_ns
            .unsigned_abs()
            .cmp(&x.pass_change_ns.unsigned_abs())
            .then_with(|| x.subject.label().cmp(&y.subject.label()))
    });
    rows.extend(ranges);
    rows
}

/// The comparison of a paired run's two sides: their manifests'
/// differences, and the paired rows.
pub fn compare_paired(
    base: &LoadedRun,
    candidate: &LoadedRun,
    samples: &PairedSamples,
    options: &Options,
) -> crate::Comparison {
    let rows = paired_rows(samples, options);
    let pairs = rows.first().map_or(0, |_| {
        block_pairs(
            &samples.blocks,
            &samples.base.pass_ns,
            &samples.candidate.pass_ns,
        )
        .len()
    });
    let passes_per_block = samples.blocks.first().map_or(0, |(_, passes)| *passes);
    let mut warnings = Vec::new();
    if let Some(warning) = crate::memory::one_side_only(
        "the base",
        !samples.base.allocations.is_empty(),
        "the candidate",
        !samples.candidate.allocations.is_empty(),
    ) {
        warnings.push(warning);
    }
    if let Some(warning) = placement_warning(base, candidate, samples) {
        warnings.push(warning);
    }
    if samples.base.pass_ns.len() != samples.candidate.pass_ns.len() {
        warnings.push(format!(
            "the sides completed {} and {} passes: the pairs stop at the shorter",
            samples.base.pass_ns.len(),
            samples.candidate.pass_ns.len()
        ));
    }
    // Both sides share the paired run's id: their labels say which is which.
    let labelled = |run: &LoadedRun, side: &str| {
        let mut info = crate::run_info(run);
        info.label = format!("{}/{side}", info.label);
        info
    };
    let (base_info, candidate_info) = (labelled(base, "base"), labelled(candidate, "candidate"));
    warnings.extend(crate::gpu_warnings(&base_info, &candidate_info));
    crate::Comparison {
        base: base_info,
        candidate: candidate_info,
        differences: crate::differences(&base.manifest, &candidate.manifest)
            .into_iter()
            // The two sides are different targets by design; what they
            // are given is not.
            .filter(|d| {
                !d.key.starts_with("target.")
                    || d.key.starts_with("target.parameters")
                    || d.key == "target.profile_prepare"
            })
            .collect(),
        warnings,
        rows,
        pairing: Some(Pairing {
            pairs,
            passes_per_block,
            processes: samples.processes,
        }),
        memory: crate::memory::memory_rows(
            crate::memory::PassMemory::of_side(&samples.base).as_ref(),
            crate::memory::PassMemory::of_side(&samples.candidate).as_ref(),
        ),
    }
}

/// The least spread of the memory canary's readings over a pair that
/// [`placement_warning`] names.
pub const PLACEMENT_SPREAD: f64 = 0.10;

/// A warning when the memory canary, each reading of it streaming a buffer
/// allocated for it, read more than [`PLACEMENT_SPREAD`] apart over a pair
/// of one stage: where a buffer lands, or the machine's memory speed,
/// moves that much here, and a pair's two sides each stream their own
/// buffers, which pairing by time does not cancel. Stages pooled
/// (`--until-decided`) are resampled as stages, which takes it in.
fn placement_warning(
    base: &LoadedRun,
    candidate: &LoadedRun,
    samples: &PairedSamples,
) -> Option<String> {
    if samples.stages.len() > 1 {
        return None;
    }
    let mut readings: Vec<u64> = samples.canary.iter().map(|c| c.memory_ns).collect();
    // In one process both sides' manifests hold the same two readings.
    let runs: &[&LoadedRun] = if samples.processes > 1 {
        &[base, candidate]
    } else {
        &[base]
    };
    for run in runs {
        if let Some(canary) = run
            .typed
            .timings
            .machine
            .as_ref()
            .and_then(|m| m.canary.as_ref())
        {
            readings.extend([canary.before.memory_ns, canary.after.memory_ns]);
        }
    }
    let (least, most) = (
        *readings.iter().filter(|&&ns| ns > 0).min()?,
        *readings.iter().max()?,
    );
    let spread = most as f64 / least as f64 - 1.0;
    (spread > PLACEMENT_SPREAD).then(|| {
        format!(
            "the memory canary, each of its {} readings streaming a buffer of its own, took {:.1} to {:.1} ms over the pair ({:.0} % apart): code whose time is memory's can differ by as much between the sides' own buffers, which pairing does not cancel; for it, judge fresh allocations (--until-decided, or --repetitions with gates)",
            readings.len(),
            least as f64 / 1e6,
            most as f64 / 1e6,
            spread * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_rank_test_matches_its_tables() {
        // Eight positive differences of eight: W+ = 36, the most extreme
        // of 2^8 patterns on either side, p = 2/256.
        let all_up: Vec<f64> = (1..=8).map(f64::from).collect();
        assert!((signed_rank_p_value(&all_up) - 2.0 / 256.0).abs() < 1e-12);
        // Signs alternating over ranks 1..=8: W+ = 1+3+5+7 = 16 of a
        // mean 18: far from significant.
        let mixed: Vec<f64> = (1..=8)
            .map(|r| {
                if r % 2 == 1 {
                    f64::from(r)
                } else {
                    -f64::from(r)
                }
            })
            .collect();
        assert!(signed_rank_p_value(&mixed) > 0.5);
        assert_eq!(signed_rank_p_value(&[0.0, 0.0]), 1.0);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_count_near_its_edge() {
        let values: Vec<f64> = (1..=30)
            .map(|r| {
                if r % 3 == 0 {
                    -f64::from(r)
                } else {
                    f64::from(r)
                }
            })
            .collect();
        let exact = signed_rank_p_value(&values);
        let mut tied = values.clone();
        // A tie forces the approximation.
        tied[0] = 2.0;
        let approximate = signed_rank_p_value(&tied);
        assert!((exact - approximate).abs() < 0.02, "{exact} {approximate}");
    }

    #[test]
    fn pairs_of_blocks_give_the_ratio_of_a_constant_change_exactly() {
        // Every candidate block 3 % slower than its neighbour, the
        // machine's speed drifting by a factor of two over the run.
        let pairs: Vec<(f64, f64)> = (0..20)
            .map(|i| {
                let base = 1000.0 * (1.0 + f64::from(i) / 20.0);
                (base, base * 1.03)
            })
            .collect();
        let paired = paired_ratio(&pairs, &Options::default()).unwrap();
        assert!((paired.ratio - 1.03).abs() < 1e-9, "{paired:?}");
        assert!((paired.low - 1.03).abs() < 1e-9 && (paired.high - 1.03).abs() < 1e-9);
        assert!(paired.p_value < 1e-5);
        assert_eq!(
            crate::verdict(
                paired.ratio,
                paired.low,
                paired.high,
                paired.p_value,
                &Options::default()
            ),
            Verdict::Slower
        );
    }

    /// `per_stage` pairs in each stage, the candidate `changes[s]` slower
    /// in stage `s`, with a little noise pair by pair.
    fn staged_pairs(changes: &[f64], per_stage: usize) -> (Vec<(f64, f64)>, Vec<u32>) {
        let pairs = changes
            .iter()
            .flat_map(|change| {
                (0..per_stage).map(move |i| {
                    let wobble = 1.0 + 0.002 * ((i % 5) as f64 - 2.0);
                    (1000.0, 1000.0 * (1.0 + change) * wobble)
                })
            })
            .collect();
        (pairs, vec![per_stage as u32; changes.len()])
    }

    #[test]
    fn stages_that_disagree_give_no_verdict_however_many_pairs_each_has() {
        // One stage's candidate landed its data 20 % slower, the other's
        // not: 200 pairs each, every pair clear of 1 in the first.
        let (pairs, stages) = staged_pairs(&[0.20, 0.0], 200);
        let options = Options::default();
        let verdict = |p: PairedRatio| crate::verdict(p.ratio, p.low, p.high, p.p_value, &options);
        // As one stage the pairs' spread is all the interval holds.
        let flat = paired_ratio(&pairs, &options).unwrap();
        assert_eq!(verdict(flat), Verdict::Slower, "{flat:?}");
        let staged =
            paired_ratio_in_stages(&pairs, &stage_of_pairs(&stages, pairs.len()), &options)
                .unwrap();
        assert!((staged.ratio - flat.ratio).abs() < 1e-12);
        assert!(staged.low < 1.01 && staged.high > 1.19, "{staged:?}");
        assert_eq!(verdict(staged), Verdict::Unclear, "{staged:?}");
        // Stages that agree keep the verdict.
        let (pairs, stages) = staged_pairs(&[0.03, 0.031, 0.029, 0.03], 50);
        let staged =
            paired_ratio_in_stages(&pairs, &stage_of_pairs(&stages, pairs.len()), &options)
                .unwrap();
        assert_eq!(verdict(staged), Verdict::Slower, "{staged:?}");
        assert!(staged.low > 1.02 && staged.high < 1.04, "{staged:?}");
    }

    #[test]
    fn pairs_belong_to_their_stages_in_order() {
        assert_eq!(stage_of_pairs(&[], 3), [0, 0, 0]);
        assert_eq!(stage_of_pairs(&[2, 1, 2], 5), [0, 0, 1, 2, 2]);
        // A side that stopped early: fewer pairs than the stages gave.
        assert_eq!(stage_of_pairs(&[2, 2], 3), [0, 0, 1]);
        let resample = Resample::new(&stage_of_pairs(&[3, 1], 4));
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut drawn = Vec::new();
        for _ in 0..50 {
            resample.draw(&mut rng, &mut drawn);
            // Two stages drawn: 3 + 3, 3 + 1, 1 + 3 or 1 + 1 pairs, each
            // drawn from its own stage.
            assert!([6, 4, 2].contains(&drawn.len()), "{drawn:?}");
        }
    }

    #[test]
    fn blocks_cut_each_sides_passes_in_order() {
        let blocks: Vec<(String, u32)> =
            [("base", 2), ("candidate", 2), ("candidate", 2), ("base", 2)]
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect();
        let base = [10, 12, 20, 22];
        let candidate = [11, 13, 21, 23];
        assert_eq!(
            block_pairs(&blocks, &base, &candidate),
            [(10.0, 11.0), (20.0, 21.0)]
        );
    }

    #[test]
    fn a_range_of_one_side_is_added_or_removed() {
        let side = |with: &str| SidePasses {
            pass_ns: vec![100; 8],
            call_ns: vec![100; 8],
            ranges: [(with.to_owned(), vec![10; 8])].into_iter().collect(),
            ..SidePasses::default()
        };
        let samples = PairedSamples {
            format_version: 1,
            blocks: (0..8)
                .flat_map(|_| [("base".to_owned(), 1), ("candidate".to_owned(), 1)])
                .collect(),
            processes: 1,
            stages: Vec::new(),
            canary: Vec::new(),
            base: side("old"),
            candidate: side("new"),
        };
        let rows = paired_rows(&samples, &Options::default());
        let verdict = |label: &str| {
            rows.iter()
                .find(|r| r.subject.label() == label)
                .map(|r| r.verdict)
        };
        assert_eq!(verdict("new"), Some(Verdict::Added));
        assert_eq!(verdict("old"), Some(Verdict::Removed));
        assert_eq!(verdict("pass"), Some(Verdict::NoChange));
    }
}
