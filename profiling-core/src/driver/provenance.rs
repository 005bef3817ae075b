//! Facts about the machine, the build and the source tree that the
//! manifest records, and the UTC timestamps it uses.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use time::format_description::well_known::iso8601::{Config, EncodedConfig, TimePrecision};
use time::format_description::well_known::{Iso8601, Rfc3339};
use time::formatting::Formattable;
use time::OffsetDateTime;

use crate::backend;

/// The machine a run happened on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub name: String,
    pub os: String,
    pub cpu_model: String,
    pub cores: usize,
    /// The kernel's release (`6.1.0-27-amd64`); absent from manifests
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The NVIDIA driver's version, where its kernel module is loaded
    /// (`/proc/driver/nvidia/version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_driver: Option<String>,
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
            .and_then(|text| cpu_model(&text))
            .unwrap_or_else(|| "unknown".to_owned());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        HostInfo {
            name,
            os,
            cpu_model,
            cores,
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            gpu_driver: std::fs::read_to_string("/proc/driver/nvidia/version")
                .ok()
                .and_then(|text| nvidia_driver_version(&text)),
        }
    }
}

/// The CPU's model in `/proc/cpuinfo`: its `model name` (x86), else, on
/// Arm (whose cpuinfo has none), the core named from its `CPU implementer`
/// and `CPU part` numbers as `lscpu` names them (`ARM Neoverse-V2` on
/// Grace), with its variant and revision; a pair not in the table by its
/// numbers.
pub(crate) fn cpu_model(cpuinfo: &str) -> Option<String> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_owned())
        })
    };
    if let Some(model) = field("model name").filter(|m| !m.is_empty()) {
        return Some(model);
    }
    let number = |name: &str| {
        let text = field(name)?;
        match text.strip_prefix("0x") {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => text.parse().ok(),
        }
    };
    let (implementer, part) = (number("CPU implementer")?, number("CPU part")?);
    let step = match (number("CPU variant"), number("CPU revision")) {
        (Some(variant), Some(revision)) => format!(" r{variant}p{revision}"),
        _ => String::new(),
    };
    let vendor = ARM_IMPLEMENTERS
        .iter()
        .find(|(id, _)| *id == implementer)
        .map(|(_, name)| *name);
    let core = ARM_PARTS
        .iter()
        .find(|(id, p, _)| *id == implementer && *p == part)
        .map(|(_, _, name)| *name);
    Some(match (vendor, core) {
        (Some(vendor), Some(core)) => format!("{vendor} {core}{step}"),
        (Some(vendor), None) => format!("{vendor} part 0x{part:03x}{step}"),
        (None, _) => format!("implementer 0x{implementer:02x} part 0x{part:03x}{step}"),
    })
}

/// Arm's implementer codes (`MIDR_EL1`), as `lscpu` names them.
const ARM_IMPLEMENTERS: [(u32, &str); 12] = [
    (0x41, "ARM"),
    (0x42, "Broadcom"),
    (0x43, "Cavium"),
    (0x46, "Fujitsu"),
    (0x48, "HiSilicon"),
    (0x4e, "NVIDIA"),
    (0x50, "APM"),
    (0x51, "Qualcomm"),
    (0x53, "Samsung"),
    (0x61, "Apple"),
    (0x6d, "Microsoft"),
    (0xc0, "Ampere"),
];

/// Cores by implementer and part number, as `lscpu` names them: the
/// server and data-centre cores inference runs on, and common others.
const ARM_PARTS: [(u32, u32, &str); 34] = [
    (0x41, 0xd03, "Cortex-A53"),
    (0x41, 0xd04, "Cortex-A35"),
    (0x41, 0xd05, "Cortex-A55"),
    (0x41, 0xd07, "Cortex-A57"),
    (0x41, 0xd08, "Cortex-A72"),
    (0x41, 0xd09, "Cortex-A73"),
    (0x41, 0xd0a, "Cortex-A75"),
    (0x41, 0xd0b, "Cortex-A76"),
    (0x41, 0xd0c, "Neoverse-N1"),
    (0x41, 0xd0d, "Cortex-A77"),
    (0x41, 0xd40, "Neoverse-V1"),
    (0x41, 0xd41, "Cortex-A78"),
    (0x41, 0xd44, "Cortex-X1"),
    (0x41, 0xd46, "Cortex-A510"),
    (0x41, 0xd47, "Cortex-A710"),
    (0x41, 0xd48, "Cortex-X2"),
    (0x41, 0xd49, "Neoverse-N2"),
    (0x41, 0xd4a, "Neoverse-E1"),
    (0x41, 0xd4f, "Neoverse-V2"),
    (0x41, 0xd80, "Cortex-A520"),
    (0x41, 0xd81, "Cortex-A720"),
    (0x41, 0xd82, "Cortex-X4"),
    (0x41, 0xd84, "Neoverse-V3"),
    (0x41, 0xd8e, "Neoverse-N3"),
    (0x43, 0x0a1, "ThunderX 88XX"),
    (0x43, 0x0af, "ThunderX2 99xx"),
    (0x46, 0x001, "A64FX"),
    (0x48, 0xd01, "TaiShan-v110"),
    (0x48, 0xd02, "TaiShan-v120"),
    (0x4e, 0x003, "Denver 2"),
    (0x4e, 0x004, "Carmel"),
    (0x50, 0x000, "X-Gene"),
    (0xc0, 0xac3, "Ampere-1"),
    (0xc0, 0xac4, "Ampere-1a"),
];

/// The driver's version in the first line of `/proc/driver/nvidia/version`
/// (`NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 ...`):
/// the first word of dotted numbers.
fn nvidia_driver_version(text: &str) -> Option<String> {
    text.lines()
        .next()?
        .split_whitespace()
        .find(|word| {
            word.contains('.')
                && word
                    .split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod host_tests {
    #[test]
    fn the_nvidia_driver_version_is_read_from_the_modules_banner() {
        let banner = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
        assert_eq!(
            super::nvidia_driver_version(banner).as_deref(),
            Some("550.54.14")
        );
        assert_eq!(
            super::nvidia_driver_version("NVRM version: unknown\n"),
            None
        );
        assert_eq!(super::nvidia_driver_version(""), None);
    }

    #[test]
    fn the_cpu_model_is_named_on_x86_and_on_arm_from_its_part_numbers() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
        assert_eq!(
            super::cpu_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) Platinum 8480+")
        );
        // A Grace core, as its kernel writes it: no `model name`.
        let grace = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\nprocessor\t: 1\n";
        assert_eq!(
            super::cpu_model(grace).as_deref(),
            Some("ARM Neoverse-V2 r0p0")
        );
        let ampere =
            "CPU implementer\t: 0xc0\nCPU variant\t: 0x0\nCPU part\t: 0xac3\nCPU revision\t: 1\n";
        assert_eq!(
            super::cpu_model(ampere).as_deref(),
            Some("Ampere Ampere-1 r0p1")
        );
        // Not in the table: the numbers themselves.
        let unknown = "CPU implementer\t: 0x41\nCPU part\t: 0xfff\n";
        assert_eq!(super::cpu_model(unknown).as_deref(), Some("ARM part 0xfff"));
        let stranger =
            "CPU implementer\t: 0x99\nCPU part\t: 0x012\nCPU variant\t: 0x1\nCPU revision\t: 2\n";
        assert_eq!(
            super::cpu_model(stranger).as_deref(),
            Some("implementer 0x99 part 0x012 r1p2")
        );
        assert_eq!(super::cpu_model("processor\t: 0\n"), None);
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The tensor backend compiled in, and what it can reach on this machine:
/// what [`crate::backend`] says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// `libtorch` with the `tch` feature, `onnxruntime` with the `ort`
    /// feature alone, else `none`.
    pub name: String,
    /// The version of the libtorch loaded at run time (`2.11.0+cu130`).
    pub libtorch_version: Option<String>,
    pub cuda_available: bool,
    /// Every GPU libtorch can see, in CUDA's order.
    pub gpus: Vec<GpuInfo>,
    /// With the `ort` feature: the ONNX Runtime library loaded and its
    /// version, once a target has loaded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onnxruntime: Option<String>,
}

/// One GPU, as CUDA names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    pub index: usize,
    pub name: String,
}

impl BackendInfo {
    /// The backends of this build ([`crate::backend`]), probed now: the
    /// primary one's name, devices and GPUs, and the version each loaded.
    pub fn current() -> BackendInfo {
        let primary = backend::primary();
        BackendInfo {
            name: primary.name().to_owned(),
            libtorch_version: backend::version_of("libtorch"),
            cuda_available: primary.cuda_available(),
            gpus: (0..primary.device_count())
                .map(|index| GpuInfo {
                    index,
                    name: primary
                        .device_name(index)
                        .unwrap_or_else(|| "unknown".to_owned()),
                })
                .collect(),
            onnxruntime: backend::version_of("onnxruntime"),
        }
    }
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

/// Where a directory stands with git, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitState {
    /// A commit is checked out; `dirty` when tracked files differ from it.
    Commit { commit: String, dirty: bool },
    /// A repository whose branch has no commit yet (`git init`, nothing
    /// committed).
    NoCommit,
    /// Not inside a git work tree.
    NotACheckout,
    /// git could not be started.
    NoGit,
}

impl GitState {
    /// The commit checked out, when there is one.
    pub fn commit(&self) -> Option<&str> {
        match self {
            GitState::Commit { commit, .. } => Some(commit),
            _ => None,
        }
    }

    /// Whether tracked files differ from the commit, when there is one.
    pub fn dirty(&self) -> Option<bool> {
        match self {
            GitState::Commit { dirty, .. } => Some(*dirty),
            _ => None,
        }
    }

    /// Why there is no commit to record: the manifest's `git_note`.
    pub fn note(&self) -> Option<&'static str> {
        match self {
            GitState::Commit { .. } => None,
            GitState::NoCommit => Some(NO_COMMIT_NOTE),
            GitState::NotACheckout => Some(NOT_A_CHECKOUT_NOTE),
            GitState::NoGit => Some("git was not found"),
        }
    }
}

/// [`GitState::note`] of a repository without commits.
pub(crate) const NO_COMMIT_NOTE: &str = "a git repository with no commit yet";
/// [`GitState::note`] outside every work tree; what a manifest without
/// `git_commit` or `git_note` (an older one) means too.
pub const NOT_A_CHECKOUT_NOTE: &str = "not a git checkout";

/// The commit checked out at `dir`, and whether the tree has uncommitted
/// changes; or why there is none.
pub fn git_state(dir: &Path) -> GitState {
    // Both at once: each is a process start and a millisecond or two, paid
    // by every run after its passes. `--no-optional-locks`: `status` would
    // otherwise refresh the index's cached file times and write it back
    // under `index.lock`, and a `git commit` the user starts meanwhile
    // would fail on that lock. The answer is the same without the refresh.
    let commit = git_spawn(dir, ["rev-parse", "--verify", "-q", "HEAD"]);
    let status = git_spawn(
        dir,
        [
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ],
    );
    let (Some(commit), Some(status)) = (commit, status) else {
        return GitState::NoGit;
    };
    let commit = git_wait(commit).filter(|c| !c.is_empty());
    // `status` works in a repository without commits; outside one it fails.
    let Some(status) = git_wait(status) else {
        return GitState::NotACheckout;
    };
    match commit {
        Some(commit) => GitState::Commit {
            commit,
            dirty: !status.is_empty(),
        },
        None => GitState::NoCommit,
    }
}

fn git_spawn<const N: usize>(dir: &Path, args: [&str; N]) -> Option<std::process::Child> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
}

fn git_wait(child: std::process::Child) -> Option<String> {
    let output = child.wait_with_output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// What `git -C dir <args>` prints, trimmed; `None` when git is missing or
/// fails (outside a work tree, say).
pub fn git_output<I, S>(dir: &Path, args: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
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
}

/// A UTC time, to the second, in the years 0 to 9999: what RFC 3339 writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime(OffsetDateTime);

/// `YYYYMMDDTHHMMSSZ`: ISO 8601's basic format, to the second.
const COMPACT: EncodedConfig = Config::DEFAULT
    .set_use_separators(false)
    .set_year_is_six_digits(false)
    .set_time_precision(TimePrecision::Second {
        decimal_digits: None,
    })
    .encode();

impl UtcTime {
    /// The first second RFC 3339 can write, 0000-01-01T00:00:00Z.
    const FIRST_SECOND: i64 = -62_167_219_200;
    /// The last, 9999-12-31T23:59:59Z.
    const LAST_SECOND: i64 = 253_402_300_799;

    /// Now, from the system clock.
    pub fn now() -> UtcTime {
        UtcTime::from_system(SystemTime::now())
    }

    /// The calendar time of `time`, truncated to the second; a time before
    /// 1970 (a clock set wrong) reads as 1970-01-01T00:00:00Z, one after
    /// 9999 as its last second.
    pub fn from_system(time: SystemTime) -> UtcTime {
        let seconds = time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let seconds = seconds.min(UtcTime::LAST_SECOND);
        UtcTime::from_unix(seconds).unwrap_or(UtcTime(OffsetDateTime::UNIX_EPOCH))
    }

    /// The calendar time `seconds` after 1970-01-01T00:00:00Z; `None`
    /// outside the years 0 to 9999.
    pub fn from_unix(seconds: i64) -> Option<UtcTime> {
        if !(UtcTime::FIRST_SECOND..=UtcTime::LAST_SECOND).contains(&seconds) {
            return None;
        }
        OffsetDateTime::from_unix_timestamp(seconds)
            .ok()
            .map(UtcTime)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub fn rfc3339(&self) -> String {
        self.format(&Rfc3339)
    }

    /// `YYYYMMDDTHHMMSSZ`: the default run id.
    pub fn compact(&self) -> String {
        self.format(&Iso8601::<COMPACT>)
    }

    fn format(&self, format: &(impl Formattable + ?Sized)) -> String {
        self.0
            .format(format)
            .expect("a UTC time to the second in the years 0 to 9999 has every component both formats write")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_epoch_and_known_dates() {
        let at = |seconds| UtcTime::from_unix(seconds).unwrap();
        assert_eq!(at(0).rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400).rfc3339(), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_988_040).compact(), "20261129T213400Z");
        assert_eq!(at(-1).rfc3339(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn both_formats_are_pinned_byte_for_byte() {
        // 2026-11-29T21:34:05Z.
        let time = UtcTime::from_unix(1_795_988_045).unwrap();
        assert_eq!(time.rfc3339(), "2026-11-29T21:34:05Z");
        assert_eq!(time.compact(), "20261129T213405Z");
        // Single digits are padded; the year to four.
        let early = UtcTime::from_unix(-61_851_502_559).unwrap();
        assert_eq!(early.rfc3339(), "0010-01-02T03:04:01Z");
        assert_eq!(early.compact(), "00100102T030401Z");
        // The first and last second RFC 3339 writes.
        let first = UtcTime::from_unix(-62_167_219_200).unwrap();
        assert_eq!(first.rfc3339(), "0000-01-01T00:00:00Z");
        let last = UtcTime::from_unix(253_402_300_799).unwrap();
        assert_eq!(last.rfc3339(), "9999-12-31T23:59:59Z");
        assert_eq!(last.compact(), "99991231T235959Z");
    }

    #[test]
    fn times_outside_the_years_0_to_9999_are_refused_or_clamped() {
        assert_eq!(UtcTime::from_unix(-62_167_219_201), None);
        assert_eq!(UtcTime::from_unix(253_402_300_800), None);
        assert_eq!(UtcTime::from_unix(i64::MIN), None);
        assert_eq!(UtcTime::from_unix(i64::MAX), None);
        let before = UNIX_EPOCH - std::time::Duration::from_secs(10);
        assert_eq!(
            UtcTime::from_system(before).rfc3339(),
            "1970-01-01T00:00:00Z"
        );
        let far = UNIX_EPOCH + std::time::Duration::from_secs(u64::MAX / 2);
        assert_eq!(UtcTime::from_system(far).rfc3339(), "9999-12-31T23:59:59Z");
        // Sub-second parts are dropped, never written.
        let fraction = UNIX_EPOCH + std::time::Duration::from_millis(1_500);
        assert_eq!(
            UtcTime::from_system(fraction).rfc3339(),
            "1970-01-01T00:00:01Z"
        );
    }

    /// [`git_output`] with a fixed identity; panics when git fails.
    fn git(dir: &Path, args: &[&str]) -> String {
        let identity = [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ];
        git_output(dir, identity.iter().chain(args))
            .unwrap_or_else(|| panic!("git {args:?} failed in {}", dir.display()))
    }

    /// A repository with one commit of `tracked.txt`.
    fn repository() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        std::fs::write(dir.path().join("tracked.txt"), "one\n").unwrap();
        git(dir.path(), &["add", "tracked.txt"]);
        git(dir.path(), &["commit", "-q", "-m", "one"]);
        dir
    }

    #[test]
    fn git_state_is_the_head_commit_and_whether_tracked_files_changed() {
        let repo = repository();
        let head = git(repo.path(), &["rev-parse", "HEAD"]);
        assert_eq!(head.len(), 40);
        let at = |commit: &str, dirty| GitState::Commit {
            commit: commit.to_owned(),
            dirty,
        };
        assert_eq!(git_state(repo.path()), at(&head, false));
        // Untracked files do not make the tree dirty.
        std::fs::write(repo.path().join("new.txt"), "new\n").unwrap();
        assert_eq!(git_state(repo.path()), at(&head, false));
        std::fs::write(repo.path().join("tracked.txt"), "two\n").unwrap();
        assert_eq!(git_state(repo.path()), at(&head, true));
        assert_eq!(git_state(repo.path()).note(), None);
    }

    /// Outside a work tree, and in a repository that has no commit yet,
    /// there is no commit, and the note says which it is.
    #[test]
    fn git_state_tells_a_repository_without_commits_from_no_repository() {
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(git_state(plain.path()), GitState::NotACheckout);
        assert_eq!(git_state(plain.path()).note(), Some("not a git checkout"));

        let fresh = tempfile::tempdir().unwrap();
        git(fresh.path(), &["init", "-q"]);
        assert_eq!(git_state(fresh.path()), GitState::NoCommit);
        // Staged files do not make a commit.
        std::fs::write(fresh.path().join("staged.txt"), "one\n").unwrap();
        git(fresh.path(), &["add", "staged.txt"]);
        assert_eq!(git_state(fresh.path()), GitState::NoCommit);
        assert_eq!(
            git_state(fresh.path()).note(),
            Some("a git repository with no commit yet")
        );
        assert_eq!(git_state(fresh.path()).commit(), None);
    }

    #[test]
    fn git_state_never_writes_the_index() {
        let repo = repository();
        let index = repo.path().join(".git/index");
        let before = std::fs::read(&index).unwrap();
        let modified = std::fs::metadata(&index).unwrap().modified().unwrap();
        // Same content, newer file times: a plain `git status` refreshes
        // the index's cached times and writes the index back.
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        std::fs::write(repo.path().join("tracked.txt"), "one\n").unwrap();
        assert_eq!(git_state(repo.path()).dirty(), Some(false));
        assert_eq!(std::fs::read(&index).unwrap(), before);
        assert_eq!(
            std::fs::metadata(&index).unwrap().modified().unwrap(),
            modified
        );
    }

    #[test]
    fn host_info_is_filled() {
        let host = HostInfo::current();
        assert!(host.cores >= 1);
        assert!(!host.name.is_empty());
        assert!(!host.os.is_empty());
    }

    #[cfg(not(any(feature = "tch", feature = "ort")))]
    #[test]
    fn a_build_without_a_backend_records_none_and_no_gpu() {
        assert_eq!(
            BackendInfo::current(),
            BackendInfo {
                name: "none".to_owned(),
                libtorch_version: None,
                cuda_available: false,
                gpus: Vec::new(),
                onnxruntime: None,
            }
        );
    }
}
