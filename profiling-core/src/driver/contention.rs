//! What the machine was doing during a capture, besides running the
//! target: what could explain a difference between two runs other than
//! the code. Read from `/proc` and `/sys` just before the capture opens
//! and just after it closes (outside it), and per measured pass the
//! measuring thread's CPU time beside its wall time: a pass preempted by
//! another process shows as the gap. Each figure is `None` where the
//! machine does not say (another OS, a container that hides the file).

use serde::{Deserialize, Serialize};

use crate::driver::canary::{self, Canaries, Canary};
use crate::driver::gpu_state::{GpuState, GpuStates};
use crate::stats::DurationStats;

/// The machine's state during a run's capture, as the manifest records it
/// (`timings.machine`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineState {
    /// The 1, 5 and 15 minute load averages when the capture opened.
    pub load_average_start: Option<[f64; 3]>,
    /// And when it closed.
    pub load_average_end: Option<[f64; 3]>,
    /// CPU time the hypervisor gave to other guests during the capture,
    /// over all cores (`steal` in `/proc/stat`).
    pub steal_ms: Option<u64>,
    /// The share of the cores' time during the capture that processes
    /// other than this one kept busy: 0 on an idle machine, 1 when they
    /// took every core all the time.
    pub others_busy: Option<f64>,
    /// Context switches of the measuring thread during the capture: it
    /// gave up the CPU (waits), and it was made to (preemption).
    pub voluntary_switches: Option<u64>,
    pub involuntary_switches: Option<u64>,
    /// The CPU frequency governor, and each core's frequency when the
    /// capture opened, where readable.
    pub governor: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frequencies_mhz: Vec<u32>,
    /// Per measured pass: the measuring thread's CPU time (of every pass
    /// that takes 80 µs or more; of shorter ones, every k-th, so that the
    /// readings cost under 1 % of the capture).
    pub pass_cpu: Option<DurationStats>,
    /// `1 − CPU time / wall time` over the measured passes: the share of
    /// them the measuring thread did not run (preempted, or waiting on
    /// another thread or the device).
    pub off_cpu: Option<f64>,
    /// The machine-speed canary read just before the capture and just
    /// after it: a memory-bound and a compute-bound kernel's times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canaries>,
    /// Why the canary was not read, when it was not: a run too short for
    /// it to be a small share ([`canary::worth_reading`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_note: Option<String>,
    /// Each GPU's state (NVML) when the capture opened and when it closed,
    /// or why there is none; absent from manifests written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<GpuStates>,
}

impl MachineState {
    /// The state in one line, for the comparison's header.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(start), Some(end)) = (self.load_average_start, self.load_average_end) {
            parts.push(format!("load {:.2} → {:.2}", start[0], end[0]));
        }
        if let Some(off) = self.off_cpu {
            parts.push(format!("off the CPU {:.1} % of its passes", off * 100.0));
        }
        if let Some(busy) = self.others_busy {
            parts.push(format!(
                "other processes {:.0} % of the cores",
                busy * 100.0
            ));
        }
        if let Some(switches) = self.involuntary_switches {
            parts.push(format!("{switches} preemptions"));
        }
        if let Some(steal) = self.steal_ms.filter(|&s| s > 0) {
            parts.push(format!("steal {steal} ms"));
        }
        if let Some(canary) = &self.canary {
            let (memory, compute) = canary.mean_ns();
            parts.push(format!(
                "canaries {:.2} ms memory, {:.0} µs compute",
                memory / 1e6,
                compute / 1e3
            ));
        }
        if let Some(gpu) = self.gpus.as_ref().and_then(GpuStates::summary) {
            parts.push(gpu);
        }
        if parts.is_empty() {
            "not recorded".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// What is read at either end of a capture.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    wall_ns: u64,
    load_average: Option<[f64; 3]>,
    /// Busy and steal time of all cores, in clock ticks.
    cpu_ticks: Option<(u64, u64)>,
    process_cpu_ns: Option<u64>,
    switches: Option<(u64, u64)>,
    governor: Option<String>,
    frequencies_mhz: Vec<u32>,
    canary: Option<Canary>,
    /// At the opening end: why the canary is not read.
    canary_note: Option<String>,
    /// At the closing end of a paired run: the canary read between its
    /// block pairs.
    between: Vec<Canary>,
    /// The GPUs (NVML), or why not.
    gpus: Option<Result<Vec<GpuState>, String>>,
}

impl Snapshot {
    /// The machine now, as the calling (measuring) thread sees it.
    pub(crate) fn now() -> Snapshot {
        Snapshot {
            wall_ns: crate::timing::now_ns(),
            load_average: load_average(),
            cpu_ticks: cpu_ticks(),
            process_cpu_ns: cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID),
            switches: thread_switches(),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            frequencies_mhz: frequencies_mhz(),
            canary: None,
            canary_note: None,
            between: Vec::new(),
            gpus: Some(GpuStates::now()),
        }
    }

    /// Just before a capture opens: the canary, then the machine now.
    pub(crate) fn opening() -> Snapshot {
        let canary = canary::read();
        Snapshot {
            canary: Some(canary),
            ..Snapshot::now()
        }
    }

    /// Just before a capture opens: with `read` `Ok`, [`Snapshot::opening`];
    /// else the machine now, and why the canary was not read.
    pub(crate) fn opening_if(read: Result<(), String>) -> Snapshot {
        match read {
            Ok(()) => Snapshot::opening(),
            Err(note) => Snapshot {
                canary_note: Some(note),
                ..Snapshot::now()
            },
        }
    }

    /// Just after a capture closes: the machine now, then the canary.
    pub(crate) fn closing() -> Snapshot {
        let mut snapshot = Snapshot::now();
        snapshot.canary = Some(canary::read());
        snapshot
    }

    /// Just after a capture closes: the machine now, then the canary
    /// where `opening` read it.
    pub(crate) fn closing_as(opening: &Snapshot) -> Snapshot {
        match opening.canary {
            Some(_) => Snapshot::closing(),
            None => Snapshot::now(),
        }
    }

    /// Just after a paired run's capture closes, with the canary read
    /// between its block pairs.
    pub(crate) fn closing_after(between: Vec<Canary>) -> Snapshot {
        Snapshot {
            between,
            ..Snapshot::closing()
        }
    }
}

/// The state between `start` and `end`, with the wall and CPU times of
/// the passes whose CPU time was read.
pub(crate) fn state(start: &Snapshot, end: &Snapshot, passes: &[(u64, u64)]) -> MachineState {
    let cpu: Vec<u64> = passes.iter().map(|&(_, cpu)| cpu).collect();
    let wall_ns = end.wall_ns.saturating_sub(start.wall_ns);
    let ticks_ns = 1e9 / clock_ticks_per_second();
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let others_busy = match (
        start.cpu_ticks,
        end.cpu_ticks,
        start.process_cpu_ns,
        end.process_cpu_ns,
    ) {
        (Some((busy_a, _)), Some((busy_b, _)), Some(own_a), Some(own_b)) if wall_ns > 0 => {
            let busy = busy_b.saturating_sub(busy_a) as f64 * ticks_ns;
            let own = own_b.saturating_sub(own_a) as f64;
            Some(((busy - own) / (wall_ns as f64 * cores)).clamp(0.0, 1.0))
        }
        _ => None,
    };
    let steal_ms = match (start.cpu_ticks, end.cpu_ticks) {
        (Some((_, a)), Some((_, b))) => Some((b.saturating_sub(a) as f64 * ticks_ns / 1e6) as u64),
        _ => None,
    };
    let switches = |pick: fn((u64, u64)) -> u64| match (start.switches, end.switches) {
        (Some(a), Some(b)) => Some(pick(b).saturating_sub(pick(a))),
        _ => None,
    };
    let cpu_total: u64 = cpu.iter().sum();
    let wall_total: u64 = passes.iter().map(|&(wall, _)| wall).sum();
    MachineState {
        load_average_start: start.load_average,
        load_average_end: end.load_average,
        steal_ms,
        others_busy,
        voluntary_switches: switches(|s| s.0),
        involuntary_switches: switches(|s| s.1),
        governor: start.governor.clone(),
        frequencies_mhz: start.frequencies_mhz.clone(),
        pass_cpu: DurationStats::of(&cpu),
        off_cpu: (wall_total > 0 && !cpu.is_empty())
            .then(|| (1.0 - cpu_total as f64 / wall_total as f64).clamp(0.0, 1.0)),
        canary: match (start.canary, end.canary) {
            (Some(before), Some(after)) => Some(Canaries {
                before,
                after,
                between: end.between.clone(),
            }),
            _ => None,
        },
        canary_note: start.canary_note.clone(),
        gpus: match (&start.gpus, &end.gpus) {
            (Some(a), Some(b)) => Some(GpuStates::of(a.clone(), b.clone())),
            _ => None,
        },
    }
}

/// The calling thread's CPU time, ns: read between passes.
#[inline]
pub(crate) fn thread_cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

fn cpu_clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let read = unsafe { libc::clock_gettime(clock, &mut time) };
    (read == 0).then(|| time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64)
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_load_average(&text)
}

/// `0.52 0.58 0.59 1/389 12345`: the first three.
fn parse_load_average(text: &str) -> Option<[f64; 3]> {
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

fn cpu_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_ticks(&text)
}

/// From the `cpu` line of `/proc/stat` (user nice system idle iowait irq
/// softirq steal ...): the busy ticks (user, nice, system, irq, softirq)
/// and the steal ticks.
fn parse_cpu_ticks(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map_while(|f| f.parse().ok())
        .collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    if fields.len() < 4 {
        return None;
    }
    Some((
        field(0) + field(1) + field(2) + field(5) + field(6),
        field(7),
    ))
}

fn thread_switches() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    parse_switches(&text)
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a
/// `status` file.
fn parse_switches(text: &str) -> Option<(u64, u64)> {
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.trim_start_matches(':').trim().parse().ok())
    };
    Some((
        value("voluntary_ctxt_switches")?,
        value("nonvoluntary_ctxt_switches")?,
    ))
}

fn frequencies_mhz() -> Vec<u32> {
    let from_sysfs: Vec<u32> = (0..)
        .map_while(|cpu| {
            read_trimmed(&format!(
                "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"
            ))
        })
        .filter_map(|khz| khz.parse::<u64>().ok())
        .map(|khz| (khz / 1000) as u32)
        .collect();
    if !from_sysfs.is_empty() {
        return from_sysfs;
    }
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|text| parse_cpuinfo_mhz(&text))
        .unwrap_or_default()
}

/// The `cpu MHz` of each processor in `/proc/cpuinfo`.
fn parse_cpuinfo_mhz(text: &str) -> Vec<u32> {
    text.lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
        .map(|mhz| mhz.round() as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proc_files_are_read_as_linux_writes_them() {
        assert_eq!(
            parse_load_average("0.52 0.58 0.59 1/389 12345\n"),
            Some([0.52, 0.58, 0.59])
        );
        assert_eq!(parse_load_average("garbage"), None);
        let stat = "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 50 2 25 500 10 1 1 3 0 0\n";
        assert_eq!(parse_cpu_ticks(stat), Some((100 + 5 + 50 + 3 + 2, 7)));
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_switches(status), Some((12, 3)));
        assert_eq!(
            parse_cpuinfo_mhz(
                "processor\t: 0\ncpu MHz\t\t: 2199.998\nprocessor\t: 1\ncpu MHz\t\t: 2400.0\n"
            ),
            [2200, 2400]
        );
    }

    #[test]
    fn a_pass_half_off_the_cpu_says_so_and_a_busy_neighbour_shows() {
        let start = Snapshot {
            wall_ns: 0,
            cpu_ticks: Some((0, 0)),
            process_cpu_ns: Some(0),
            ..Snapshot::default()
        };
        let ticks_ns = 1e9 / clock_ticks_per_second();
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        // One second; every core busy all of it, half of one by us.
        let busy_ticks = (cores * 1e9 / ticks_ns) as u64;
        let end = Snapshot {
            wall_ns: 1_000_000_000,
            cpu_ticks: Some((busy_ticks, 0)),
            process_cpu_ns: Some(500_000_000),
            ..Snapshot::default()
        };
        let state = state(&start, &end, &[(100, 50), (100, 50)]);
        assert_eq!(state.off_cpu, Some(0.5));
        let others = state.others_busy.unwrap();
        assert!((others - (cores - 0.5) / cores).abs() < 0.01, "{others}");
        assert!(state.summary().contains("off the CPU 50.0 % of its passes"));
    }

    #[test]
    fn this_thread_has_cpu_time_that_grows() {
        let before = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > before);
        assert!(
            Snapshot::now().load_average.is_some(),
            "Linux has /proc/loadavg"
        );
    }
}
