//! Facts about the machine, the build and the source tree that the
//! manifest records, and the UTC timestamps it uses.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// The machine a run happened on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostInfo {
    pub name: String,
    pub os: String,
    pub cpu_model: String,
    pub cores: usize,
}

impl HostInfo {
    /// Reads the host's name, OS, CPU model and core count; what cannot be
    /// read is recorded as `unknown`.
    pub fn current() -> HostInfo {
        let name = read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| read_trimmed("/etc/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".to_owned());
        let os = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("PRETTY_NAME="))
                    .map(|v| v.trim_matches('"').to_owned())
            })
            .map_or_else(
                || format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
                |pretty| {
                    format!(
                        "{pretty} ({} {})",
                        std::env::consts::OS,
                        std::env::consts::ARCH
                    )
                },
            );
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, model)| model.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        HostInfo {
            name,
            os,
            cpu_model,
            cores,
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// `debug` or `release`: timings of a debug build say little about
/// production code.
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The commit checked out at `dir`, and whether the tree has uncommitted
/// changes; `None` outside a git work tree or without git.
pub fn git_state(dir: &Path) -> Option<(String, bool)> {
    let run = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let commit = run(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty())?;
    let dirty =
        run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some((commit, dirty))
}

/// A UTC calendar time, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl UtcTime {
    /// Now, from the system clock.
    pub fn now() -> UtcTime {
        UtcTime::from_system(SystemTime::now())
    }

    /// The calendar time of `time`, truncated to the second.
    pub fn from_system(time: SystemTime) -> UtcTime {
        let seconds = time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        UtcTime::from_unix(seconds)
    }

    /// The calendar time `seconds` after 1970-01-01T00:00:00Z.
    pub fn from_unix(seconds: i64) -> UtcTime {
        let days = seconds.div_euclid(86_400);
        let of_day = seconds.rem_euclid(86_400);
        // Days to civil date (proleptic Gregorian), after H. Hinnant's algorithm.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        UtcTime {
            year,
            month,
            day,
            hour: (of_day / 3_600) as u32,
            minute: (of_day % 3_600 / 60) as u32,
            second: (of_day % 60) as u32,
        }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `YYYYMMDDTHHMMSSZ`: the default run id.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_epoch_and_known_dates() {
        assert_eq!(UtcTime::from_unix(0).rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(
            UtcTime::from_unix(951_782_400).rfc3339(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            UtcTime::from_unix(1_795_988_040).compact(),
            "20261129T213400Z"
        );
        assert_eq!(UtcTime::from_unix(-1).rfc3339(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn host_info_is_filled() {
        let host = HostInfo::current();
        assert!(host.cores >= 1);
        assert!(!host.name.is_empty());
        assert!(!host.os.is_empty());
    }
}
