//! How often `compare` and `ab` get the verdict right on this machine,
//! loaded and quiet: `scripts/ab-experiment` builds and runs it.
//!
//! The workload is the built-in `cpu-work` target: a fixed number of
//! dependent integer steps (not a wait for a clock, which would finish on
//! time however much the load took from it). A candidate doing p % more
//! work scales both of its ranges by 1 + p / 100. With `--workload
//! memory`, it is `memory-work`: a 64 MiB buffer read one cache line at a
//! time, a candidate reading p % more.
//!
//! "Loaded" is two busy processes (this program, started again with
//! `--busy`) switched on together and off together at random moments,
//! every 0.5 to 3 s, for the whole phase: consecutive runs see different
//! loads, and a paired run often sees the load change inside it. With
//! `--load memory` each busy process copies a 256 MiB buffer over and
//! over instead of computing. "Quiet" is no load started.
//!
//! Each side runs `--iterations` measured passes (default 600, about
//! 0.9 s quiet). Phases, each of `--tries` tries (default 20):
//!
//! - `unchanged`: loaded, sequential `compare`s of two runs of the same
//!   config, and `ab`s of the same config against itself;
//! - `slower`: loaded, a candidate doing `--change` % more work (default
//!   3), by `ab` and by sequential `compare`;
//! - `smallest`: `ab` of candidates doing each of `--levels` % more work
//!   (0 included: how often identical code is called slower), loaded and
//!   quiet, with the noise threshold at 0 so that the statistics alone
//!   decide; the smallest level called slower in 19 of 20 tries;
//! - `until-decided`: loaded, `ab --until-decided --budget BUDGET` (default
//!   60s) of unchanged code and of a candidate doing `--change` % more.
//!
//! Every try's verdict of the pass goes to stderr as it comes; a Markdown
//! summary goes to stdout; the runs are kept under `--out`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// `rounds` and `steady_rounds` of the base: about 1.5 ms a pass.
const BASE_ROUNDS: (u64, u64) = (400_000, 100_000);
const WARMUP: u32 = 20;

struct Options {
    cli: PathBuf,
    out: PathBuf,
    tries: u32,
    iterations: u32,
    change: f64,
    levels: Vec<f64>,
    phases: Vec<String>,
    seed: u64,
    workload: Workload,
    memory_load: bool,
    budget: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Cpu,
    Memory,
}

impl Workload {
    fn target(self) -> &'static str {
        match self {
            Workload::Cpu => "cpu-work",
            Workload::Memory => "memory-work",
        }
    }
}

/// KiB `memory-work` reads a call in the base.
const BASE_KIB: u64 = 64 * 1024;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--busy") => busy(),
        Some("--busy-memory") => busy_memory(),
        _ => {}
    }
    let options = parse(&args)?;
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("cannot create {}", options.out.display()))?;
    let mut experiment = Experiment {
        options,
        next_run: 0,
        report: String::new(),
    };
    experiment.header()?;
    let phases = experiment.options.phases.clone();
    for phase in &phases {
        match phase.as_str() {
            "unchanged" => experiment.unchanged()?,
            "slower" => experiment.slower()?,
            "smallest" => experiment.smallest()?,
            "until-decided" => experiment.until_decided()?,
            other => bail!("unknown phase {other:?}: unchanged, slower, smallest or until-decided"),
        }
    }
    print!("{}", experiment.report);
    Ok(())
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds profiling-cli")
        .to_path_buf();
    let mut options = Options {
        cli: root.join("target/release/profile-cli"),
        out: std::env::temp_dir().join("ab-experiment"),
        tries: 20,
        iterations: 600,
        change: 3.0,
        levels: vec![0.0, 0.5, 1.0, 2.0, 3.0],
        phases: vec!["unchanged".into(), "slower".into(), "smallest".into()],
        seed: 1,
        workload: Workload::Cpu,
        memory_load: false,
        budget: "60s".to_owned(),
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .with_context(|| format!("{flag} needs a value"))
                .cloned()
        };
        match flag.as_str() {
            "--cli" => options.cli = value()?.into(),
            "--out" => options.out = value()?.into(),
            "--tries" => options.tries = value()?.parse().context("--tries")?,
            "--iterations" => options.iterations = value()?.parse().context("--iterations")?,
            "--change" => options.change = value()?.parse().context("--change")?,
            "--seed" => options.seed = value()?.parse().context("--seed")?,
            "--budget" => options.budget = value()?,
            "--workload" => {
                options.workload = match value()?.as_str() {
                    "cpu" => Workload::Cpu,
                    "memory" => Workload::Memory,
                    other => bail!("--workload {other}: cpu or memory"),
                }
            }
            "--load" => {
                options.memory_load = match value()?.as_str() {
                    "cpu" => false,
                    "memory" => true,
                    other => bail!("--load {other}: cpu or memory"),
                }
            }
            "--levels" => {
                options.levels = value()?
                    .split(',')
                    .map(|level| level.trim().parse::<f64>())
                    .collect::<Result<_, _>>()
                    .context("--levels: percentages, comma-separated")?
            }
            "--phases" => {
                options.phases = value()?.split(',').map(|p| p.trim().to_owned()).collect()
            }
            "--help" | "-h" => {
                println!(
                    "ab-experiment [--cli PATH] [--out DIR] [--tries N] [--iterations N] [--change PERCENT] \
                     [--levels P,P,...] [--phases unchanged,slower,smallest,until-decided] [--seed N] \
                     [--workload cpu|memory] [--load cpu|memory] [--budget 60s]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (--help lists them)"),
        }
    }
    if !options.cli.is_file() {
        bail!(
            "{} is not there: build it first (scripts/ab-experiment does)",
            options.cli.display()
        );
    }
    Ok(options)
}

/// Fixed CPU work until the parent is gone.
fn busy() -> ! {
    let parent = std::os::unix::process::parent_id();
    let mut x = 1u64;
    loop {
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(0);
        }
    }
}

/// Copies 256 MiB over and over until the parent is gone: memory
/// traffic, little computing.
fn busy_memory() -> ! {
    let parent = std::os::unix::process::parent_id();
    let words = 256 * 1024 * 1024 / 8;
    let source: Vec<u64> = (0..words as u64).collect();
    let mut target = vec![0u64; words];
    loop {
        target.copy_from_slice(std::hint::black_box(&source));
        std::hint::black_box(&target);
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(0);
        }
    }
}

/// A small generator of the load's switching moments: the same seed, the
/// same schedule.
struct XorShift(u64);

impl XorShift {
    fn next_unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Two busy processes switched on and off at random moments until dropped.
struct Load {
    stop: Arc<AtomicBool>,
    switcher: Option<std::thread::JoinHandle<()>>,
    /// Seconds the load was on, and in all.
    on: Arc<Mutex<(f64, f64)>>,
}

impl Load {
    fn start(seed: u64, memory: bool) -> anyhow::Result<Load> {
        let exe = std::env::current_exe().context("cannot find this program to start the load")?;
        let stop = Arc::new(AtomicBool::new(false));
        let on = Arc::new(Mutex::new((0.0, 0.0)));
        let (flag, share) = (stop.clone(), on.clone());
        let switcher = std::thread::spawn(move || {
            let mut random = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut busy: Vec<Child> = Vec::new();
            let mut loaded = false;
            while !flag.load(Ordering::Relaxed) {
                loaded = !loaded;
                if loaded {
                    busy = (0..2)
                        .filter_map(|_| {
                            Command::new(&exe)
                                .arg(if memory { "--busy-memory" } else { "--busy" })
                                .stdin(Stdio::null())
                                .stdout(Stdio::null())
                                .spawn()
                                .ok()
                        })
                        .collect();
                } else {
                    stop_all(&mut busy);
                }
                let period = Duration::from_secs_f64(0.5 + 2.5 * random.next_unit());
                let started = Instant::now();
                while started.elapsed() < period && !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let mut share = share.lock().unwrap();
                let seconds = started.elapsed().as_secs_f64();
                share.1 += seconds;
                if loaded {
                    share.0 += seconds;
                }
            }
            stop_all(&mut busy);
        });
        Ok(Load {
            stop,
            switcher: Some(switcher),
            on,
        })
    }

    /// The share of the time the load was on.
    fn share(&self) -> f64 {
        let (on, all) = *self.on.lock().unwrap();
        if all > 0.0 {
            on / all
        } else {
            0.0
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(switcher) = self.switcher.take() {
            let _ = switcher.join();
        }
    }
}

fn stop_all(busy: &mut Vec<Child>) {
    for mut child in busy.drain(..) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The pass row's verdict, and whether any other row (call or range)
/// said faster or slower.
struct Verdicts {
    pass: String,
    ratio: f64,
    others_decided: Vec<String>,
}

struct Experiment {
    options: Options,
    next_run: u32,
    report: String,
}

impl Experiment {
    fn header(&mut self) -> anyhow::Result<()> {
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        self.report.push_str(&format!(
            "ab-experiment: `{}`, {} passes a side after {WARMUP} warmup, \
             {} tries a figure, {} load, {cores} cores, load average at the start {}\n",
            self.options.workload.target(),
            self.options.iterations,
            self.options.tries,
            if self.options.memory_load {
                "memory-copying"
            } else {
                "computing"
            },
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        ));
        Ok(())
    }

    /// A config of the workload doing `1 + percent / 100` times the base's work.
    fn config(&self, percent: f64) -> anyhow::Result<PathBuf> {
        let scale = 1.0 + percent / 100.0;
        let (rounds, steady) = BASE_ROUNDS;
        let target = self.options.workload.target();
        let parameters = match self.options.workload {
            Workload::Cpu => format!(
                "rounds: {}, steady_rounds: {}",
                (rounds as f64 * scale).round() as u64,
                (steady as f64 * scale).round() as u64
            ),
            Workload::Memory => format!("kib: {}", (BASE_KIB as f64 * scale).round() as u64),
        };
        let name = format!("{target}-{percent}.yaml");
        let path = self.options.out.join(name);
        std::fs::write(
            &path,
            format!(
                "target: {{name: {target}, parameters: {{{parameters}}}}}\n\
                 data_source: {{name: dummy, record_count: 1}}\n\
                 warmup: {WARMUP}\niterations: {}\n",
                self.options.iterations,
            ),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    fn run_id(&mut self, what: &str) -> String {
        self.next_run += 1;
        format!("{what}-{:04}", self.next_run)
    }

    fn cli(&self, args: &[&str]) -> anyhow::Result<String> {
        let output = Command::new(&self.options.cli)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start {}", self.options.cli.display()))?;
        // 0: compared; 4: not decided within the budget (--until-decided);
        // 3 would be a gate, which is not asked for.
        if !matches!(output.status.code(), Some(0 | 4)) {
            bail!(
                "{} {} failed ({}):\n{}",
                self.options.cli.display(),
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(String::from_utf8(output.stdout)?)
    }

    /// Two runs one after the other, compared.
    fn sequential(
        &mut self,
        base: &Path,
        candidate: &Path,
        extra: &[&str],
    ) -> anyhow::Result<Verdicts> {
        let out = self.options.out.display().to_string();
        let mut dirs = Vec::new();
        for config in [base, candidate] {
            let id = self.run_id("run");
            self.cli(&[
                "run",
                "--config",
                &config.display().to_string(),
                "--output-dir",
                &out,
                "--run-id",
                &id,
                "--no-report",
            ])?;
            dirs.push(
                self.options
                    .out
                    .join(self.options.workload.target())
                    .join("runs")
                    .join(id),
            );
        }
        let (a, b) = (dirs[0].display().to_string(), dirs[1].display().to_string());
        let mut args = vec!["compare", &a, &b, "--json", "--color", "never"];
        args.extend_from_slice(extra);
        verdicts(&self.cli(&args)?)
    }

    /// One paired run.
    fn paired(
        &mut self,
        base: &Path,
        candidate: &Path,
        extra: &[&str],
    ) -> anyhow::Result<Verdicts> {
        let out = self.options.out.display().to_string();
        let id = self.run_id("ab");
        let (base, candidate) = (base.display().to_string(), candidate.display().to_string());
        let target = self.options.workload.target();
        let mut args = vec![
            "ab",
            target,
            target,
            "--config",
            &base,
            "--candidate-config",
            &candidate,
            "--output-dir",
            &out,
            "--ab-id",
            &id,
            "--no-report",
            "--json",
            "--color",
            "never",
        ];
        args.extend_from_slice(extra);
        verdicts(&self.cli(&args)?)
    }

    /// `tries` verdicts of `how`, counted; each said on stderr as it comes.
    fn tries(
        &mut self,
        label: &str,
        mut how: impl FnMut(&mut Self) -> anyhow::Result<Verdicts>,
    ) -> anyhow::Result<Tally> {
        let mut tally = Tally::default();
        for try_ in 1..=self.options.tries {
            let verdicts = how(self)?;
            eprintln!(
                "{label} {try_}/{}: pass {} (ratio {:.4}){}",
                self.options.tries,
                verdicts.pass,
                verdicts.ratio,
                if verdicts.others_decided.is_empty() {
                    String::new()
                } else {
                    format!(", also {}", verdicts.others_decided.join(", "))
                }
            );
            tally.add(&verdicts);
        }
        Ok(tally)
    }

    fn unchanged(&mut self) -> anyhow::Result<()> {
        let same = self.config(0.0)?;
        let load = Load::start(self.options.seed, self.options.memory_load)?;
        let compare = self.tries("unchanged compare", |e| e.sequential(&same, &same, &[]))?;
        let ab = self.tries("unchanged ab", |e| e.paired(&same, &same, &[]))?;
        let share = load.share();
        drop(load);
        self.section(
            &format!(
                "Unchanged code, loaded (load on {:.0} % of the time)",
                share * 100.0
            ),
            &[("sequential compare", &compare), ("ab", &ab)],
        );
        Ok(())
    }

    fn slower(&mut self) -> anyhow::Result<()> {
        let change = self.options.change;
        let (base, candidate) = (self.config(0.0)?, self.config(change)?);
        let load = Load::start(self.options.seed + 1, self.options.memory_load)?;
        let ab = self.tries(&format!("+{change} % ab"), |e| {
            e.paired(&base, &candidate, &[])
        })?;
        let compare = self.tries(&format!("+{change} % compare"), |e| {
            e.sequential(&base, &candidate, &[])
        })?;
        let share = load.share();
        drop(load);
        self.section(
            &format!(
                "{change} % more work, loaded (load on {:.0} % of the time)",
                share * 100.0
            ),
            &[("ab", &ab), ("sequential compare", &compare)],
        );
        Ok(())
    }

    fn smallest(&mut self) -> anyhow::Result<()> {
        let base = self.config(0.0)?;
        let levels = self.options.levels.clone();
        let needed = self.options.tries - self.options.tries / 20;
        self.report.push_str(&format!(
            "\n### Smallest change `ab` calls slower in {needed} of {} tries \
             (`--noise-threshold 0`)\n\n\
             | more work | loaded: slower | loaded: faster | quiet: slower | quiet: faster |\n\
             | ---: | ---: | ---: | ---: | ---: |\n",
            self.options.tries
        ));
        let mut smallest = [None, None];
        for &level in &levels {
            let candidate = self.config(level)?;
            let mut cells = Vec::new();
            for (which, loaded) in [true, false].into_iter().enumerate() {
                let load = if loaded {
                    Some(Load::start(
                        self.options.seed + 2 + level.to_bits(),
                        self.options.memory_load,
                    )?)
                } else {
                    None
                };
                let label = format!("+{level} % ab {}", if loaded { "loaded" } else { "quiet" });
                let tally = self.tries(&label, |e| {
                    e.paired(&base, &candidate, &["--noise-threshold", "0"])
                })?;
                drop(load);
                if level > 0.0 && tally.slower >= needed && smallest[which].is_none() {
                    smallest[which] = Some(level);
                }
                cells.push(tally.slower.to_string());
                cells.push(tally.faster.to_string());
            }
            self.report
                .push_str(&format!("| {level} % | {} |\n", cells.join(" | ")));
        }
        let word = |level: Option<f64>| {
            level.map_or("none of those tried".to_owned(), |l| format!("{l} %"))
        };
        self.report.push_str(&format!(
            "\nSmallest: loaded {}, quiet {}.\n",
            word(smallest[0]),
            word(smallest[1])
        ));
        Ok(())
    }

    fn until_decided(&mut self) -> anyhow::Result<()> {
        let change = self.options.change;
        let (base, candidate) = (self.config(0.0)?, self.config(change)?);
        let budget = self.options.budget.clone();
        let until = ["--until-decided", "--budget", budget.as_str()];
        let load = Load::start(self.options.seed + 3, self.options.memory_load)?;
        let started = std::time::Instant::now();
        let same = self.tries("unchanged ab --until-decided", |e| {
            e.paired(&base, &base, &until)
        })?;
        let slower = self.tries(&format!("+{change} % ab --until-decided"), |e| {
            e.paired(&base, &candidate, &until)
        })?;
        let share = load.share();
        drop(load);
        self.section(
            &format!(
                "`ab --until-decided --budget {budget}`, loaded (load on {:.0} % of the time; {:.0} s a try on average)",
                share * 100.0,
                started.elapsed().as_secs_f64() / f64::from(2 * self.options.tries)
            ),
            &[("unchanged", &same), (&format!("{change} % more work"), &slower)],
        );
        Ok(())
    }

    fn section(&mut self, title: &str, lines: &[(&str, &Tally)]) {
        self.report.push_str(&format!(
            "\n### {title}\n\n\
             | how | slower | faster | no change | unclear | tries where another row was faster or slower |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |\n"
        ));
        for (how, tally) in lines {
            self.report.push_str(&format!(
                "| {how} | {} | {} | {} | {} | {} |\n",
                tally.slower, tally.faster, tally.no_change, tally.unclear, tally.others_decided
            ));
        }
    }
}

#[derive(Default)]
struct Tally {
    slower: u32,
    faster: u32,
    no_change: u32,
    unclear: u32,
    others_decided: u32,
}

impl Tally {
    fn add(&mut self, verdicts: &Verdicts) {
        match verdicts.pass.as_str() {
            "slower" => self.slower += 1,
            "faster" => self.faster += 1,
            "no change" => self.no_change += 1,
            _ => self.unclear += 1,
        }
        if !verdicts.others_decided.is_empty() {
            self.others_decided += 1;
        }
    }
}

/// The verdicts of a `compare --json` or `ab --json` document.
fn verdicts(json: &str) -> anyhow::Result<Verdicts> {
    let document: serde_json::Value =
        serde_json::from_str(json).context("the comparison is not JSON")?;
    let rows = document["comparisons"][0]["rows"]
        .as_array()
        .context("the comparison has no rows")?;
    let mut pass = None;
    let mut others_decided = Vec::new();
    for row in rows {
        let verdict = row["verdict"].as_str().unwrap_or("?");
        let kind = row["kind"].as_str().unwrap_or("?");
        if kind == "pass" {
            pass = Some((
                verdict.to_owned(),
                row["ratio"].as_f64().unwrap_or(f64::NAN),
            ));
        } else if verdict == "slower" || verdict == "faster" {
            let name = row["name"].as_str().unwrap_or(kind);
            others_decided.push(format!("{name} {verdict}"));
        }
    }
    let (pass, ratio) = pass.context("the comparison has no pass row")?;
    Ok(Verdicts {
        pass,
        ratio,
        others_decided,
    })
}
