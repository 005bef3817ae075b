//! `profile-cli history backfill TARGET --commits A..B`: a history made
//! before the first stored run. Each chosen commit's workspace is built as
//! `ab --against` builds its base (a worktree beside the repository, the
//! build kept between commits), the target runs once at it with its config
//! there, and the run goes into the store. Then the changes are searched
//! as `history --changes` searches them, and a change that lies between
//! two commits that ran, with commits between them that did not, is
//! bisected down to the first commit of its new level.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use profiling_history::changes::{Change, Detector};
use profiling_history::{Metric, Record, SeriesQuery, Store};

use super::{group, parse_metric, parse_probability, StoreArgs};
use crate::ab::{BuildTarget, CargoProfile};
use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::summary::format_ns;

#[derive(Debug, Args)]
pub(crate) struct BackfillArgs {
    /// The target (profile name) to run at each commit.
    target: String,
    /// The commits: A..B is A and each commit of B's first-parent line after it, oldest first.
    #[arg(long, value_name = "A..B", required = true)]
    commits: String,
    /// Run every Nth of those commits (the first and the last always); the changes found between
    /// them are bisected.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    every: u32,
    /// Measured passes of each run (default: the target's config at that commit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    iterations: Option<u32>,
    /// Warmup passes of each run (default: the config's).
    #[arg(long, value_name = "N")]
    warmup: Option<u32>,
    /// The figure the changes are searched in: p50, p90, p95, p99, mean, min, max, alloc-bytes, peak.
    #[arg(long, default_value = "p50", value_parser = parse_metric)]
    metric: Metric,
    /// A split is a change when its permutation p-value is at most this.
    #[arg(long, value_name = "P", default_value_t = 0.01, value_parser = parse_probability)]
    significance: f64,
    /// Commits each side of a change holds at least.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    min_size: u32,
    /// Run the chosen commits only: no bisection of the changes found.
    #[arg(long)]
    no_bisect: bool,
    #[command(flatten)]
    store: StoreArgs,
}

impl BackfillArgs {
    pub(super) fn store_args(&mut self) -> &mut StoreArgs {
        &mut self.store
    }
}

/// The commits `range` (`A..B`) names in `dir`'s repository, oldest
/// first: A, then B's first-parent line after A. `Err` says why not.
fn commits_of(range: &str, dir: &Path) -> Result<Vec<String>, String> {
    let Some((from, to)) = range.split_once("..") else {
        return Err(format!(
            "`{range}`: give a range A..B (two commits, A first)"
        ));
    };
    if from.is_empty() || to.is_empty() || to.starts_with('.') {
        return Err(format!(
            "`{range}`: give a range A..B (two commits, A first)"
        ));
    }
    let resolve = |rev: &str| {
        profiling_core::driver::provenance::git_output(
            dir,
            [
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{rev}^{{commit}}"),
            ],
        )
        .map(|text| text.trim().to_owned())
        .ok_or_else(|| format!("`{rev}` is not a commit of {}", dir.display()))
    };
    let first = resolve(from)?;
    let last = resolve(to)?;
    let after = profiling_core::driver::provenance::git_output(
        dir,
        [
            "rev-list",
            "--first-parent",
            "--reverse",
            &format!("{first}..{last}"),
        ],
    )
    .ok_or_else(|| format!("`{range}`: git cannot list its commits"))?;
    let mut line = vec![first];
    line.extend(after.lines().map(str::to_owned));
    if line.len() == 1 && line[0] != last {
        return Err(format!(
            "`{range}`: {to} is not after {from} on its first-parent line"
        ));
    }
    Ok(line)
}

/// The indices of `count` commits that run first: every `every`-th, and
/// the last.
fn chosen(count: usize, every: usize) -> Vec<usize> {
    let mut picked: Vec<usize> = (0..count).step_by(every.max(1)).collect();
    if count > 0 && picked.last() != Some(&(count - 1)) {
        picked.push(count - 1);
    }
    picked
}

/// Where bisection between `good` (the last commit of the old level that
/// ran) and `bad` (the first of the new one that ran) found the change.
#[derive(Debug, Clone, PartialEq)]
struct Bisected {
    /// The first commit of the new level.
    first: usize,
    /// The commit before it that ran (the old level).
    last_before: usize,
    /// The commits run on the way, with their figures (`None`: could not
    /// be run, and skipped).
    probed: Vec<(usize, Option<f64>)>,
}

/// Bisects between indices `good` and `bad` (`good < bad`): the commit
/// halfway runs (`probe` gives its figure, `None` when it cannot run), and
/// a figure nearer `after` than `before` moves `bad` to it, else `good`;
/// a commit that cannot run is skipped for its nearest neighbour that can
/// (as `git bisect skip`). Ends when nothing is left between them.
fn bisect(
    good: usize,
    bad: usize,
    before: f64,
    after: f64,
    probe: &mut dyn FnMut(usize) -> anyhow::Result<Option<f64>>,
) -> anyhow::Result<Bisected> {
    let (mut good, mut bad) = (good, bad);
    let mut probed: Vec<(usize, Option<f64>)> = Vec::new();
    loop {
        let untried: Vec<usize> = (good + 1..bad)
            .filter(|i| !probed.iter().any(|(p, _)| p == i))
            .collect();
        if untried.is_empty() {
            break;
        }
        // The untried commit nearest the middle.
        let middle = (good + bad) / 2;
        let next = *untried
            .iter()
            .min_by_key(|&&i| (i.abs_diff(middle), i))
            .unwrap_or(&untried[0]);
        let figure = probe(next)?;
        probed.push((next, figure));
        if let Some(value) = figure {
            if (value - after).abs() < (value - before).abs() {
                bad = next;
            } else {
                good = next;
            }
        }
    }
    Ok(Bisected {
        first: bad,
        last_before: good,
        probed,
    })
}

/// What builds the workspace's profiling program: its profiling crate's
/// `profile` binary, or this tool's own `profile-cli` in its own
/// repository.
fn build_target(workspace: &Path, profile: CargoProfile, features: Vec<String>) -> BuildTarget {
    match profiling_extract::workspace::profiling_crate(workspace) {
        Some((_, package)) => BuildTarget {
            package,
            bin: "profile".to_owned(),
            features,
            profile,
        },
        None => BuildTarget::this_program(),
    }
}

/// What runs a commit of the line and records its run: the build and the
/// run of the workspace's binary ([`Builder`]), or a test's.
trait CommitRunner {
    /// Runs commit `index` of `line` and records the run into `store`;
    /// whether it was recorded (else what went wrong was said).
    fn run(
        &mut self,
        line: &[String],
        index: usize,
        store: &mut Store,
        err: &mut dyn Write,
    ) -> anyhow::Result<bool>;
}

/// Builds the workspace at a commit and runs the target with it.
struct Builder<'a> {
    target: &'a str,
    iterations: Option<u32>,
    warmup: Option<u32>,
    workspace: PathBuf,
    build: BuildTarget,
    /// Where the runs go: `<run root>/backfill/<target>/runs/<commit>`.
    output_dir: PathBuf,
}

impl Builder<'_> {
    fn run_dir(&self, commit: &str) -> PathBuf {
        self.output_dir
            .join(self.target)
            .join("runs")
            .join(short(commit))
    }
}

impl CommitRunner for Builder<'_> {
    fn run(
        &mut self,
        line: &[String],
        index: usize,
        store: &mut Store,
        err: &mut dyn Write,
    ) -> anyhow::Result<bool> {
        let commit = &line[index];
        let label = format!(
            "{} ({}/{})",
            describe(&self.workspace, commit),
            index + 1,
            line.len()
        );
        let dir = self.run_dir(commit);
        // A run there from an earlier backfill is recorded again (which
        // writes nothing new), not run again.
        let complete = Record::read_any(&dir).is_ok_and(|record| record.status == "completed");
        if !complete {
            let built = match crate::ab::prepare_against(
                commit,
                None,
                &self.workspace,
                &self.build,
                err,
            )? {
                Ok(built) => built,
                Err(code) => {
                    if let Some(signal) = profiling_core::driver::interrupt::received() {
                        anyhow::bail!(Interrupted(signal));
                    }
                    writeln!(err, "backfill: {label}: not run (exit {code}, above)")?;
                    return Ok(false);
                }
            };
            let binary = built.base.0.clone();
            let mut command = Command::new(&binary);
            command
                .args(["run", self.target, "--run-id", short(commit)])
                .arg("--output-dir")
                .arg(&self.output_dir)
                .args(dir.exists().then_some("--force"))
                // This process records the run, into the store it was given.
                .env(crate::handoff::STORE_ENV, "off")
                // What the run prints is progress here: stdout is the
                // backfill's findings.
                .stdout(std::io::stderr())
                .current_dir(&self.workspace);
            if let Some(n) = self.iterations {
                command.args(["--iterations", &n.to_string()]);
            }
            if let Some(n) = self.warmup {
                command.args(["--warmup", &n.to_string()]);
            }
            writeln!(err, "backfill: {label}: running {}", self.target)?;
            // The worktree stays until the run is done: the binary reads
            // its commit there.
            let status = command.status();
            drop(built);
            if let Some(signal) = profiling_core::driver::interrupt::received() {
                anyhow::bail!(Interrupted(signal));
            }
            match status {
                Ok(status) if status.success() => {}
                Ok(status) => {
                    writeln!(
                        err,
                        "backfill: {label}: the run failed ({status}): not recorded"
                    )?;
                    return Ok(false);
                }
                Err(error) => {
                    writeln!(
                        err,
                        "backfill: {label}: cannot run {}: {error}",
                        binary.display()
                    )?;
                    return Ok(false);
                }
            }
        }
        let record = match Record::read_any(&dir) {
            Ok(record) => record,
            Err(error) => {
                writeln!(err, "backfill: {label}: {}: {error}", dir.display())?;
                return Ok(false);
            }
        };
        match store.record(&record) {
            Ok(recorded) => {
                writeln!(
                    err,
                    "backfill: {label}: {}, {}",
                    if complete { "ran before" } else { "ran" },
                    if recorded.inserted {
                        "recorded"
                    } else {
                        "in the store already"
                    }
                )?;
                Ok(true)
            }
            Err(error) => {
                writeln!(err, "backfill: {label}: {error}")?;
                Ok(false)
            }
        }
    }
}

/// A backfill under way: the line, the store, what ran.
struct Backfill<'a> {
    target: &'a str,
    metric: Metric,
    detector: Detector,
    bisect: bool,
    /// The range as given, for what is said.
    range: &'a str,
    workspace: &'a Path,
    line: &'a [String],
    store: Store,
    /// Each commit run so far: whether it was recorded.
    ran: HashMap<usize, bool>,
}

impl Backfill<'_> {
    fn run(
        &mut self,
        runner: &mut dyn CommitRunner,
        index: usize,
        err: &mut dyn Write,
    ) -> anyhow::Result<bool> {
        if let Some(&done) = self.ran.get(&index) {
            return Ok(done);
        }
        let done = runner.run(self.line, index, &mut self.store, err)?;
        self.ran.insert(index, done);
        Ok(done)
    }

    /// The figure of `change`'s series at commit `index` (the median of
    /// its runs there), once it ran.
    fn figure(&mut self, change: &Change, index: usize) -> anyhow::Result<Option<f64>> {
        let series = self.store.series(&SeriesQuery {
            profile: self.target.to_owned(),
            metric: self.metric,
            machine: Some(change.machine.clone()),
            config: Some(change.config.clone()),
        })?;
        let commit = &self.line[index];
        let mut values: Vec<u64> = series
            .iter()
            .filter(|s| s.part == change.part && s.path == change.path)
            .flat_map(|s| &s.points)
            .filter(|p| p.commit.as_deref() == Some(commit.as_str()) && p.dirty != Some(true))
            .map(|p| p.value)
            .collect();
        values.sort_unstable();
        Ok(values
            .get(values.len().saturating_sub(1) / 2)
            .map(|&v| v as f64))
    }

    /// The commits at which `change`'s series has runs.
    fn commits_with_runs(
        &mut self,
        change: &Change,
    ) -> anyhow::Result<std::collections::HashSet<String>> {
        let series = self.store.series(&SeriesQuery {
            profile: self.target.to_owned(),
            metric: self.metric,
            machine: Some(change.machine.clone()),
            config: Some(change.config.clone()),
        })?;
        Ok(series
            .iter()
            .filter(|s| s.part == change.part && s.path == change.path)
            .flat_map(|s| &s.points)
            .filter(|p| p.dirty != Some(true))
            .filter_map(|p| p.commit.clone())
            .collect())
    }

    /// The changes of the target's series along the line.
    fn changes(&mut self) -> anyhow::Result<Vec<Change>> {
        let all = self.store.series(&SeriesQuery {
            profile: self.target.to_owned(),
            metric: self.metric,
            machine: None,
            config: None,
        })?;
        let chosen: Vec<&profiling_history::Series> = all.iter().collect();
        let groups = group(&chosen, self.line, false);
        let (found, _) = super::detect(&groups, &self.detector);
        Ok(found)
    }
}

/// A signal stopped the backfill.
#[derive(Debug)]
struct Interrupted(i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupted by {}",
            profiling_core::driver::manifest::signal_name(self.0)
        )
    }
}

impl std::error::Error for Interrupted {}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// `abcdef123456 subject`, as `git log --oneline` names a commit.
fn describe(dir: &Path, commit: &str) -> String {
    profiling_core::driver::provenance::git_output(dir, ["log", "-1", "--format=%s", commit, "--"])
        .map(|subject| format!("{} {}", short(commit), subject.trim()))
        .unwrap_or_else(|| short(commit).to_owned())
}

/// `profile-cli history backfill`.
pub(crate) fn backfill(
    args: BackfillArgs,
    workspace_root: &Path,
    cargo_profile: Option<&str>,
    features: Vec<String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let workspace = workspace_root
        .canonicalize()
        .unwrap_or_else(|_| workspace_root.to_path_buf());
    let line = match commits_of(&args.commits, &workspace) {
        Ok(line) => line,
        Err(message) => {
            writeln!(err, "error: --commits: {message}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let store = match super::store_to_write(
        &args.store,
        &workspace,
        "a backfill writes its runs there",
        err,
    )? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    // A Ctrl-C or SIGTERM ends the backfill once the worktree is removed.
    if let Err(error) = profiling_core::driver::interrupt::install_handlers() {
        writeln!(
            err,
            "warning: cannot handle Ctrl-C ({error}): a signal may leave a worktree behind"
        )?;
    }
    let run_root =
        profiling_core::driver::session::run_root(args.store.output_dir.as_deref(), &workspace);
    let mut builder = Builder {
        target: &args.target,
        iterations: args.iterations,
        warmup: args.warmup,
        build: build_target(&workspace, CargoProfile::named(cargo_profile), features),
        output_dir: profiling_core::driver::session::absolute(&run_root.join("backfill")),
        workspace: workspace.clone(),
    };
    let mut backfill = Backfill {
        target: &args.target,
        metric: args.metric,
        detector: Detector {
            min_size: args.min_size as usize,
            significance: args.significance,
            ..Detector::default()
        },
        bisect: !args.no_bisect,
        range: &args.commits,
        workspace: &workspace,
        line: &line,
        store,
        ran: HashMap::new(),
    };
    let picked = chosen(line.len(), args.every as usize);
    writeln!(
        err,
        "backfill: {} of the {} commits of {} first, into {}",
        picked.len(),
        line.len(),
        args.commits,
        backfill.store.name()
    )?;
    match backfill_with(&mut backfill, &mut builder, &picked, out, err) {
        Ok(code) => Ok(code),
        Err(error) => match error.downcast_ref::<Interrupted>() {
            Some(Interrupted(signal)) => {
                writeln!(err, "backfill: {error}: the runs recorded so far are kept")?;
                Ok(profiling_core::driver::interrupt::exit_code(*signal))
            }
            None => Err(error),
        },
    }
}

/// Runs the `picked` commits, searches the changes, bisects each between
/// the commits that ran around it, and says where each began.
fn backfill_with(
    backfill: &mut Backfill<'_>,
    runner: &mut dyn CommitRunner,
    picked: &[usize],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    for &index in picked {
        backfill.run(runner, index, err)?;
    }
    let changes = backfill.changes()?;
    if changes.is_empty() {
        writeln!(
            out,
            "{}: no change found in its {} over {}",
            backfill.target,
            backfill.metric.name(),
            backfill.range
        )?;
    }
    for change in &changes {
        let Some(bad) = change
            .commit
            .as_ref()
            .and_then(|commit| backfill.line.iter().position(|c| c == commit))
        else {
            continue;
        };
        // The commit before it with a run in its series (this backfill's
        // or an earlier one's).
        let stored = backfill.commits_with_runs(change)?;
        let good = (0..bad).rev().find(|&i| stored.contains(&backfill.line[i]));
        let mut first = bad;
        let mut note = String::new();
        if let (Some(good), true) = (good, backfill.bisect) {
            if bad - good > 1 {
                let mut probe = |index: usize| -> anyhow::Result<Option<f64>> {
                    if !backfill.run(runner, index, err)? {
                        return Ok(None);
                    }
                    backfill.figure(change, index)
                };
                let bisected = bisect(
                    good,
                    bad,
                    change.before as f64,
                    change.after as f64,
                    &mut probe,
                )?;
                first = bisected.first;
                let skipped = bisected.probed.iter().filter(|(_, f)| f.is_none()).count();
                let more = bisected.probed.len() - skipped;
                note = format!(
                    " (bisected: {more} more {} ran{}",
                    if more == 1 { "commit" } else { "commits" },
                    if skipped > 0 {
                        format!(
                            ", {skipped} could not and {} skipped",
                            if skipped == 1 { "was" } else { "were" }
                        )
                    } else {
                        String::new()
                    }
                );
                if bisected.first - bisected.last_before > 1 {
                    note.push_str(&format!(
                        "; or a commit between {} and it that could not run",
                        short(&backfill.line[bisected.last_before])
                    ));
                }
                note.push(')');
            }
        }
        writeln!(
            out,
            "{} {} {:+.1} % ({} -> {}) from {}{}",
            if change.is_regression() {
                "slower:"
            } else {
                "faster:"
            },
            change.label(),
            (change.ratio - 1.0) * 100.0,
            format_figure(backfill.metric, change.before),
            format_figure(backfill.metric, change.after),
            describe(backfill.workspace, &backfill.line[first]),
            note
        )?;
    }
    // Any commit, chosen or bisected, that could not be run or recorded.
    let failed = backfill.ran.values().any(|recorded| !recorded);
    Ok(if failed { EXIT_TARGET_FAILED } else { EXIT_OK })
}

fn format_figure(metric: Metric, value: u64) -> String {
    if metric.is_bytes() {
        format!("{value} B")
    } else {
        format_ns(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_commit_runs_first_and_the_last_always() {
        assert_eq!(chosen(10, 1), (0..10).collect::<Vec<_>>());
        assert_eq!(chosen(10, 3), [0, 3, 6, 9]);
        assert_eq!(chosen(11, 3), [0, 3, 6, 9, 10]);
        assert_eq!(chosen(1, 4), [0]);
        assert!(chosen(0, 2).is_empty());
    }

    /// A line of 40 commits whose figure steps from 100 to 130 at `at`.
    fn stepped(at: usize) -> impl Fn(usize) -> f64 {
        move |i| if i < at { 100.0 } else { 130.0 }
    }

    #[test]
    fn bisection_names_the_first_commit_of_the_new_level() {
        for at in 1..40 {
            let level = stepped(at);
            let mut runs = Vec::new();
            let found = bisect(0, 39, 100.0, 130.0, &mut |i| {
                runs.push(i);
                Ok(Some(level(i)))
            })
            .unwrap();
            assert_eq!(
                (found.first, found.last_before),
                (at, at - 1),
                "step at {at}"
            );
            // log2 of the commits between, rounded up: no more.
            assert!(runs.len() <= 6, "step at {at}: ran {runs:?}");
        }
    }

    #[test]
    fn a_commit_that_cannot_run_is_skipped_for_its_neighbour() {
        let level = stepped(13);
        let broken = [19, 20, 12];
        let found = bisect(0, 39, 100.0, 130.0, &mut |i| {
            Ok((!broken.contains(&i)).then(|| level(i)))
        })
        .unwrap();
        // 12 cannot run: the change lies after 11 and at 13, and it says so.
        assert_eq!((found.first, found.last_before), (13, 11));
        assert!(found.probed.contains(&(12, None)), "{:?}", found.probed);
    }

    #[test]
    fn noise_within_the_levels_does_not_mislead_it() {
        // Figures off their level by up to a third of the step.
        let figure = |i: usize| {
            let wobble = [-9.0, 7.0, 3.0, -5.0, 10.0][i % 5];
            if i < 27 {
                100.0 + wobble
            } else {
                130.0 + wobble
            }
        };
        let found = bisect(4, 36, 100.0, 130.0, &mut |i| Ok(Some(figure(i)))).unwrap();
        assert_eq!(found.first, 27);
    }

    /// Runs of `nms` at the commits of a line: the pass and `pre` stay,
    /// `pre/resize` goes from 1,000 ns to 1,300 ns at commit `step`, with a
    /// little noise; commits in `broken` do not build.
    struct Fake {
        step: usize,
        broken: Vec<usize>,
        ran: Vec<usize>,
    }

    impl CommitRunner for Fake {
        fn run(
            &mut self,
            line: &[String],
            index: usize,
            store: &mut Store,
            err: &mut dyn Write,
        ) -> anyhow::Result<bool> {
            self.ran.push(index);
            if self.broken.contains(&index) {
                writeln!(err, "backfill: {}: not run (exit 2, above)", line[index])?;
                return Ok(false);
            }
            let wobble = [0, 7, 3, 11, 5][index % 5];
            let resize = if index < self.step { 1000 } else { 1300 } + wobble;
            let row = |part: &'static str, path: &str, depth: u32, p50: u64| {
                profiling_history::RangeRow {
                    part,
                    path: path.to_owned(),
                    name: path.rsplit('/').next().unwrap_or(path).to_owned(),
                    depth,
                    count: 10,
                    p50_ns: p50,
                    p90_ns: p50,
                    p95_ns: Some(p50),
                    p99_ns: p50,
                    mean_ns: p50,
                    min_ns: Some(p50),
                    max_ns: p50,
                    low_ns: None,
                    high_ns: None,
                    alloc_bytes: None,
                    peak_bytes: None,
                }
            };
            let record = Record {
                kind: "run",
                profile: "nms".to_owned(),
                run_id: format!("r{index}"),
                place: String::new(),
                status: "completed",
                started_at: format!("2026-12-06T10:00:{index:02}Z"),
                finished_at: format!("2026-12-06T10:00:{index:02}Z"),
                git_commit: Some(line[index].clone()),
                git_dirty: Some(false),
                machine: profiling_history::Machine {
                    fingerprint: "fp-box".to_owned(),
                    host: "box".to_owned(),
                    os: "Linux".to_owned(),
                    cpu_model: "a CPU".to_owned(),
                    cores: 2,
                    backend: "none".to_owned(),
                    gpus: String::new(),
                    kernel: String::new(),
                    governor: String::new(),
                    gpu_driver: String::new(),
                },
                config: "cfg".to_owned(),
                config_description: "{}".to_owned(),
                iterations: 10,
                run_dir: PathBuf::from(format!("/runs/r{index}")),
                ranges: vec![
                    row("pass", "pass", 0, 5000 + wobble),
                    row("range", "pre", 0, 2000 + wobble),
                    row("range", "pre/resize", 1, resize),
                ],
                manifest: "{}".to_owned(),
                samples: None,
            };
            store.record(&record)?;
            Ok(true)
        }
    }

    fn backfill_of(
        fake: &mut Fake,
        line: &[String],
        every: usize,
        store: &Path,
    ) -> (u8, String, String) {
        let workspace = tempfile::tempdir().unwrap();
        let mut backfill = Backfill {
            target: "nms",
            metric: Metric::P50,
            detector: Detector::default(),
            bisect: true,
            range: "c00..c39",
            workspace: workspace.path(),
            line,
            store: Store::open(store).unwrap(),
            ran: HashMap::new(),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = backfill_with(
            &mut backfill,
            fake,
            &chosen(line.len(), every),
            &mut out,
            &mut err,
        )
        .unwrap();
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_change_between_commits_that_ran_is_bisected_to_its_first_commit() {
        let line: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("history.sqlite");
        let mut fake = Fake {
            step: 23,
            broken: vec![22],
            ran: Vec::new(),
        };
        let (code, out, err) = backfill_of(&mut fake, &line, 3, &store);
        // Every third commit and the last ran first; then those between 21
        // and 24, 22 (which does not build) skipped for its neighbour.
        let first: Vec<usize> = (0..40).step_by(3).collect();
        assert_eq!(fake.ran[..first.len()], first, "{err}");
        assert_eq!(fake.ran[first.len()..], [22, 23], "{out}{err}");
        // One change, in the innermost range it touched, at its first
        // commit, and where else it may lie.
        assert_eq!(
            out,
            "slower: pre/resize +29.9 % (1.00 µs -> 1.30 µs) from c23 (bisected: 1 more commit ran, 1 could not and was skipped; or a commit between c21 and it that could not run)\n",
            "{err}"
        );
        assert_eq!(code, EXIT_TARGET_FAILED, "22 did not build: {err}");

        // Again on the same store: nothing recorded twice, the same answer.
        let runs = Store::open(&store).unwrap().runs().unwrap();
        let mut again = Fake {
            step: 23,
            broken: vec![22],
            ran: Vec::new(),
        };
        let (_, out_again, _) = backfill_of(&mut again, &line, 3, &store);
        assert!(
            out_again.starts_with("slower: pre/resize +29.9 % (1.00 µs -> 1.30 µs) from c23 ("),
            "{out_again}"
        );
        assert_eq!(Store::open(&store).unwrap().runs().unwrap(), runs);
    }

    #[test]
    fn a_commit_that_cannot_run_is_named_and_the_exit_is_1() {
        let line: Vec<String> = (0..12).map(|i| format!("c{i:02}")).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut fake = Fake {
            step: 100,
            broken: vec![4],
            ran: Vec::new(),
        };
        let (code, out, err) = backfill_of(&mut fake, &line, 2, &dir.path().join("history.sqlite"));
        assert_eq!(code, EXIT_TARGET_FAILED, "{out}{err}");
        assert!(err.contains("backfill: c04: not run"), "{err}");
        assert_eq!(out, "nms: no change found in its p50 over c00..c39\n");
    }

    #[test]
    fn a_range_is_two_commits_on_one_line() {
        let repo = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let output = std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .current_dir(repo.path())
                .output()
                .unwrap();
            assert!(output.status.success(), "{output:?}");
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        };
        git(&["init", "-q"]);
        let mut made = Vec::new();
        for n in 0..5 {
            git(&["commit", "-q", "--allow-empty", "-m", &format!("c{n}")]);
            made.push(git(&["rev-parse", "HEAD"]));
        }
        let line = commits_of("HEAD~3..HEAD", repo.path()).unwrap();
        assert_eq!(line, made[1..]);
        let line = commits_of(&format!("{}..{}", made[0], made[2]), repo.path()).unwrap();
        assert_eq!(line, made[..3]);
        for bad in ["HEAD", "..HEAD", "HEAD~1...HEAD", "no-such..HEAD"] {
            assert!(commits_of(bad, repo.path()).is_err(), "{bad}");
        }
        // B before A: nothing after A on B's line.
        assert!(commits_of("HEAD..HEAD~2", repo.path()).is_err());
    }
}
