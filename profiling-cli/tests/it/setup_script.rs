//! `scripts/setup` decides that libclang is present only when a file that
//! bindgen (through clang-sys) loads exists. These tests run the real script
//! with its search roots replaced by a directory tree of their own, so that
//! the machine's own libraries do not matter.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup")
}

/// A tree standing for the machine: `lib/` holds the given files, and the
/// virtual environment the script would fill is `venv/`.
struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn with_libraries(files: &[&str]) -> Machine {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("lib")).unwrap();
        for file in files {
            fs::write(root.path().join("lib").join(file), b"\x7fELF").unwrap();
        }
        Machine { root }
    }

    fn lib(&self) -> PathBuf {
        self.root.path().join("lib")
    }

    /// Runs `scripts/setup ARG` with only this tree searched, nothing from
    /// the environment that clang-sys reads, and `apt_get` as apt-get
    /// (None: a machine without it).
    fn setup(&self, arg: &str, apt_get: Option<&str>) -> Output {
        let mut command = Command::new(script());
        command
            .arg(arg)
            .env(
                "PROFILING_SETUP_LIBCLANG_DIRS",
                format!("{}/*", self.root.path().display()),
            )
            .env("PROFILING_SETUP_VENV", self.root.path().join("venv"))
            .env("PROFILING_SETUP_APT_GET", apt_get.unwrap_or(""))
            .env("LLVM_CONFIG_PATH", self.root.path().join("no-llvm-config"))
            .env_remove("LIBCLANG_PATH")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("LIBRARY_PATH");
        command.output().unwrap()
    }

    fn find(&self) -> Option<String> {
        let output = self.setup("--find-libclang", Some("/usr/bin/apt-get"));
        let stdout = String::from_utf8(output.stdout).unwrap();
        match output.status.code() {
            Some(0) => Some(stdout.trim_end().to_owned()),
            Some(1) => {
                assert_eq!(stdout, "", "nothing is printed when none is found");
                None
            }
            other => panic!(
                "exit {other:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
        }
    }

    fn dry_run(&self, apt_get: Option<&str>) -> String {
        let output = self.setup("--dry-run", apt_get);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }
}

fn shown(path: PathBuf) -> String {
    path.display().to_string()
}

#[test]
fn libclang_cpp_alone_is_not_libclang() {
    let machine = Machine::with_libraries(&["libclang-cpp.so.14", "libclang-cpp.so"]);
    assert_eq!(machine.find(), None);
}

#[test]
fn a_soname_file_is_libclang() {
    let machine = Machine::with_libraries(&["libclang-cpp.so.14", "libclang.so.1"]);
    assert_eq!(
        machine.find(),
        Some(shown(machine.lib().join("libclang.so.1")))
    );
}

#[test]
fn a_versioned_name_is_libclang() {
    let machine = Machine::with_libraries(&["libclang-14.so"]);
    assert_eq!(
        machine.find(),
        Some(shown(machine.lib().join("libclang-14.so")))
    );
}

#[test]
fn a_plain_name_is_libclang() {
    let machine = Machine::with_libraries(&["libclang.so"]);
    assert_eq!(
        machine.find(),
        Some(shown(machine.lib().join("libclang.so")))
    );
}

#[test]
fn an_empty_machine_has_no_libclang() {
    let machine = Machine::with_libraries(&[]);
    assert_eq!(machine.find(), None);
}

#[test]
fn a_dangling_link_is_not_libclang() {
    let machine = Machine::with_libraries(&[]);
    std::os::unix::fs::symlink("libclang-14.so.1", machine.lib().join("libclang.so")).unwrap();
    assert_eq!(machine.find(), None);
}

#[test]
fn libclang_path_is_the_only_place_searched_when_set() {
    let machine = Machine::with_libraries(&["libclang.so.1"]);
    let elsewhere = tempfile::tempdir().unwrap();

    let mut command = Command::new(script());
    command
        .arg("--find-libclang")
        .env(
            "PROFILING_SETUP_LIBCLANG_DIRS",
            format!("{}/*", machine.root.path().display()),
        )
        .env("LIBCLANG_PATH", elsewhere.path());
    assert_eq!(command.output().unwrap().status.code(), Some(1));

    fs::write(elsewhere.path().join("libclang-18.so.18"), b"\x7fELF").unwrap();
    let output = command.output().unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap().trim_end(),
        shown(elsewhere.path().join("libclang-18.so.18"))
    );
}

#[test]
fn the_wheel_linked_into_the_venv_is_found() {
    let machine = Machine::with_libraries(&[]);
    let lib = machine.root.path().join("venv/libclang/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::write(lib.join("libclang.so"), b"\x7fELF").unwrap();
    assert_eq!(machine.find(), Some(shown(lib.join("libclang.so"))));
}

#[test]
fn with_apt_the_system_package_is_installed_and_says_why() {
    let machine = Machine::with_libraries(&["libclang-cpp.so.14"]);
    let why = format!(
        "no libclang that bindgen can load (only {}, which is another library)",
        shown(machine.lib().join("libclang-cpp.so.14"))
    );
    let expected = match who_installs() {
        Some(how) => format!("setup: would install libclang-dev with {how}: {why}\n"),
        None => format!(
            "setup: would install the PyPI wheel libclang==18.1.1 into {}: {why}, and this user cannot install Debian packages (not root, no password-less sudo, or no apt-get)\n",
            shown(machine.root.path().join("venv"))
        ),
    };
    assert_eq!(machine.dry_run(Some("/usr/bin/apt-get")), expected);
}

#[test]
fn without_apt_the_wheel_goes_into_the_venv_and_says_why() {
    let machine = Machine::with_libraries(&[]);
    let venv = shown(machine.root.path().join("venv"));
    assert_eq!(
        machine.dry_run(None),
        format!(
            "setup: would install the PyPI wheel libclang==18.1.1 into {venv}: no libclang that bindgen can load, and this user cannot install Debian packages (not root, no password-less sudo, or no apt-get)\n"
        )
    );
}

#[test]
fn when_libclang_is_there_nothing_is_installed() {
    let machine = Machine::with_libraries(&["libclang-14.so.1"]);
    let found = shown(machine.lib().join("libclang-14.so.1"));
    assert_eq!(
        machine.dry_run(Some("/usr/bin/apt-get")),
        format!("setup: nothing to install: libclang is {found}\n")
    );
    let output = machine.setup("", Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    assert_eq!(output.stdout, b"", "the quick path prints nothing");
    assert_eq!(output.stderr, b"");
    assert!(
        !machine.root.path().join("venv").exists(),
        "nothing was created"
    );
}

#[test]
fn libclang_path_without_libclang_is_an_error_naming_it() {
    let machine = Machine::with_libraries(&["libclang.so.1"]);
    let empty = tempfile::tempdir().unwrap();
    let output = Command::new(script())
        .env(
            "PROFILING_SETUP_LIBCLANG_DIRS",
            format!("{}/*", machine.root.path().display()),
        )
        .env("PROFILING_SETUP_VENV", machine.root.path().join("venv"))
        .env("LIBCLANG_PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "setup: LIBCLANG_PATH={} holds no libclang.so: point it at the directory that has one, or unset it, and run again\n",
            empty.path().display()
        )
    );
}

/// How this user may run apt-get: as root, through password-less sudo, or not.
fn who_installs() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Some("apt-get");
    }
    let sudo = Command::new("sudo").args(["-n", "true"]).output();
    match sudo {
        Ok(output) if output.status.success() => Some("sudo apt-get"),
        _ => None,
    }
}

/// `scripts/setup-chromium --dry-run` with the browsers it looks for named
/// `names`, `path_first` ahead of PATH and `apt_get` as apt-get.
fn chromium_dry_run(names: &str, path_first: &Path, apt_get: Option<&str>) -> Output {
    let path = format!(
        "{}:{}",
        path_first.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup-chromium"))
        .arg("--dry-run")
        .env("PATH", path)
        .env("PROFILING_SETUP_BROWSER_NAMES", names)
        .env("PROFILING_SETUP_APT_GET", apt_get.unwrap_or(""))
        .output()
        .unwrap()
}

#[test]
fn a_browser_that_answers_is_used_and_nothing_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake-browser");
    fake_program(&fake, "Fake Browser 1.0");
    let output = chromium_dry_run("fake-browser", dir.path(), Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "setup-chromium: nothing to install: Fake Browser 1.0 at {}\n",
            fake.display()
        )
    );
}

#[test]
fn without_a_browser_chromium_is_installed_with_apt_or_the_tests_skip() {
    let dir = tempfile::tempdir().unwrap();
    let why = "no chromium, chromium-browser, google-chrome or google-chrome-stable on PATH that answers --version";
    let output = chromium_dry_run("no-such-browser", dir.path(), Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    let expected = match who_installs() {
        Some(how) => format!(
            "setup-chromium: would install chromium with {how}, for the browser tests of the HTML report: {why}\n"
        ),
        None => format!("setup-chromium: no browser can be installed: {why}, and this user cannot install Debian packages (not root, no password-less sudo, or no apt-get); the browser tests will skip\n"),
    };
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
    let output = chromium_dry_run("no-such-browser", dir.path(), None);
    assert!(output.status.success(), "a missing browser never fails");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("setup-chromium: no browser can be installed: {why}, and this user cannot install Debian packages (not root, no password-less sudo, or no apt-get); the browser tests will skip\n")
    );
}

/// `scripts/setup-ffmpeg --dry-run` looking for `ffmpeg` (and `ffprobe`
/// beside it), with `apt_get` as apt-get.
fn ffmpeg_dry_run(ffmpeg: &Path, apt_get: Option<&str>) -> Output {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup-ffmpeg"))
        .arg("--dry-run")
        .env("PROFILING_SETUP_FFMPEG", ffmpeg)
        .env("PROFILING_SETUP_APT_GET", apt_get.unwrap_or(""))
        .output()
        .unwrap()
}

/// An executable script at `path` that prints `line`.
fn fake_program(path: &Path, line: &str) {
    crate::common::write_executable(path, &format!("#!/bin/sh\necho '{line}'\n"));
}

#[test]
fn an_ffmpeg_and_ffprobe_that_answer_are_used_and_nothing_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let ffmpeg = dir.path().join("ffmpeg");
    fake_program(&ffmpeg, "ffmpeg version 9.9 fake");
    fake_program(&dir.path().join("ffprobe"), "ffprobe version 9.9 fake");
    let output = ffmpeg_dry_run(&ffmpeg, Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "setup-ffmpeg: nothing to install: ffmpeg version 9.9 fake at {}\n",
            ffmpeg.display()
        )
    );
}

#[test]
fn without_ffprobe_ffmpeg_is_installed_with_apt_or_the_video_tests_skip() {
    let dir = tempfile::tempdir().unwrap();
    // An ffmpeg alone is not enough: the source probes with ffprobe.
    let ffmpeg = dir.path().join("ffmpeg");
    fake_program(&ffmpeg, "ffmpeg version 9.9 fake");
    let why = "no ffmpeg and ffprobe on PATH that answer -version";
    let refused = format!("setup-ffmpeg: FFmpeg cannot be installed: {why}, and this user cannot install Debian packages (not root, no password-less sudo, or no apt-get); the video tests will skip\n");
    let output = ffmpeg_dry_run(&ffmpeg, Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    let expected = match who_installs() {
        Some(how) => format!(
            "setup-ffmpeg: would install ffmpeg with {how}, for the video data source: {why}\n"
        ),
        None => refused.clone(),
    };
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
    let output = ffmpeg_dry_run(&ffmpeg, None);
    assert!(output.status.success(), "a missing FFmpeg never fails");
    assert_eq!(String::from_utf8(output.stdout).unwrap(), refused);
}

/// `--help` prints a script's header comment, all of it and nothing else.
#[test]
fn script_help_is_the_header_comment() {
    for script in ["setup", "gpu-check", "setup-chromium", "setup-ffmpeg"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scripts")
            .join(script);
        let output = Command::new(&path).arg("--help").output().unwrap();
        assert!(output.status.success(), "{script}");
        let help = String::from_utf8(output.stdout).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let header: Vec<String> = text
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with('#'))
            .map(|l| {
                l.trim_start_matches('#')
                    .strip_prefix(' ')
                    .unwrap_or(l.trim_start_matches('#'))
                    .to_owned()
            })
            .collect();
        assert_eq!(help.lines().collect::<Vec<_>>(), header, "{script} --help");
    }
}

/// `scripts/setup-postgres --dry-run` with `lib` for /usr/lib/postgresql,
/// a PATH without `initdb`, and `apt_get` as apt-get.
fn postgres_dry_run(lib: &Path, apt_get: Option<&str>) -> Output {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup-postgres"))
        .arg("--dry-run")
        .env("PATH", "/usr/bin:/bin")
        .env("PROFILING_SETUP_POSTGRES_LIB", lib)
        .env("PROFILING_SETUP_APT_GET", apt_get.unwrap_or(""))
        .output()
        .unwrap()
}

#[test]
fn postgres_server_programs_are_found_in_the_newest_version_or_installed_with_apt() {
    if Path::new("/usr/bin/initdb").exists() {
        println!("skipped: an initdb in /usr/bin is on every PATH this test can give");
        return;
    }
    let lib = tempfile::tempdir().unwrap();
    for version in ["9", "15"] {
        let bin = lib.path().join(version).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for program in ["initdb", "pg_ctl", "createdb"] {
            fake_program(&bin.join(program), "");
        }
        fake_program(
            &bin.join("postgres"),
            &format!("postgres (PostgreSQL) {version}.1 fake"),
        );
    }
    let output = postgres_dry_run(lib.path(), Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "setup-postgres: nothing to install: postgres (PostgreSQL) 15.1 fake in {}\n",
            lib.path().join("15/bin").display()
        )
    );
    // A version without its server program does not count.
    std::fs::remove_file(lib.path().join("15/bin/postgres")).unwrap();
    std::fs::remove_file(lib.path().join("9/bin/postgres")).unwrap();
    let why = format!(
        "no initdb, pg_ctl and postgres on PATH or in {}",
        lib.path().display()
    );
    let refused = format!("setup-postgres: PostgreSQL cannot be installed: {why}, and this user cannot install Debian packages (not root, no password-less sudo, or no apt-get); the PostgreSQL store tests will skip\n");
    let output = postgres_dry_run(lib.path(), Some("/usr/bin/apt-get"));
    assert!(output.status.success());
    let expected = match who_installs() {
        Some(how) => format!(
            "setup-postgres: would install postgresql with {how}, for the history store's tests: {why}\n"
        ),
        None => refused.clone(),
    };
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
    let output = postgres_dry_run(lib.path(), None);
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), refused);
}

/// `scripts/profile` in a tree of its own, with a stand-in `cargo` that
/// logs each build and leaves a stand-in `profile-cli`, which logs its
/// arguments and, given `--handoff FILE`, leaves `handoff` (the text given
/// it) there.
struct ProfileScript {
    root: tempfile::TempDir,
}

impl ProfileScript {
    fn new(handoff: &str) -> ProfileScript {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        fs::create_dir_all(dir.join("scripts")).unwrap();
        fs::create_dir_all(dir.join("inference_profiling/snippets")).unwrap();
        fs::create_dir_all(dir.join("bin")).unwrap();
        fs::write(dir.join("inference_profiling/Cargo.toml"), "").unwrap();
        // Written by a child process, as every script a test runs: no
        // process forked meanwhile holds it open for writing.
        let executable = crate::common::write_executable;
        let script =
            fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/profile"))
                .unwrap();
        executable(&dir.join("scripts/profile"), &script);
        executable(&dir.join("scripts/setup"), "#!/bin/sh\nexit 0\n");
        let binary = format!(
            "#!/bin/bash\necho \"profile-cli $*\" >> '{log}'\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --handoff ] && printf '%s' '{handoff}' > \"$2\"; shift; done\n\
             [ -n '{handoff}' ] || exit 2\n\
             echo 'passes: 1 measured pass'\n",
            log = dir.join("log").display()
        );
        fs::write(dir.join("binary"), binary).unwrap();
        executable(
            &dir.join("bin/cargo"),
            &format!(
                "#!/bin/bash\necho \"cargo $*\" >> '{log}'\nmkdir -p '{release}'\ncp '{binary}' '{release}/profile-cli'\nchmod +x '{release}/profile-cli'\n",
                log = dir.join("log").display(),
                release = dir.join("target/release").display(),
                binary = dir.join("binary").display(),
            ),
        );
        ProfileScript { root }
    }

    fn run(&self, args: &[&str]) -> Output {
        let path = format!(
            "{}:{}",
            self.root.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(self.root.path().join("scripts/profile"))
            .args(args)
            .env("PATH", path)
            .output()
            .unwrap()
    }

    /// The log's lines, each path of the tree and the handoff file's name
    /// made the same every time.
    fn log(&self) -> Vec<String> {
        let text = fs::read_to_string(self.root.path().join("log")).unwrap_or_default();
        let manifest = self.root.path().join("Cargo.toml");
        text.lines()
            .map(|line| {
                let line = line.replace(&manifest.display().to_string(), "ROOT/Cargo.toml");
                match line.find("profile-cli-handoff.") {
                    Some(at) => {
                        let start = line[..at].rfind(' ').map_or(0, |s| s + 1);
                        format!("{}HANDOFF", &line[..start])
                    }
                    None => line,
                }
            })
            .collect()
    }
}

/// The first `run` builds the part of profile-cli that runs targets, runs
/// it with `--handoff`, then builds the whole and finishes the run with
/// it; every later call builds the whole and runs it.
#[test]
fn the_first_run_runs_before_the_whole_build_and_the_whole_build_finishes_it() {
    let tree = ProfileScript::new("{\"run\":1}");
    let first = tree.run(&[]);
    assert!(first.status.success(), "{first:?}");
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert_eq!(
        stdout.matches("passes: 1 measured pass").count(),
        2,
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(stderr.contains("profile: first build:"), "{stderr}");
    assert!(
        stderr.contains("profile: building the rest of profile-cli"),
        "{stderr}"
    );
    assert_eq!(
        tree.log(),
        [
            "cargo build --release --manifest-path ROOT/Cargo.toml -p profiling-cli --no-default-features --features workspace-targets,sources",
            "profile-cli run detection-pipeline --handoff HANDOFF",
            "cargo build --release --manifest-path ROOT/Cargo.toml -p profiling-cli",
            "profile-cli run detection-pipeline --finish-handoff HANDOFF",
        ]
    );

    let later = tree.run(&["run", "detection-pipeline", "--iterations", "5"]);
    assert!(later.status.success(), "{later:?}");
    assert!(!String::from_utf8_lossy(&later.stderr).contains("first build"));
    assert_eq!(
        tree.log()[4..],
        [
            "cargo build --release --manifest-path ROOT/Cargo.toml -p profiling-cli",
            "profile-cli run detection-pipeline --iterations 5",
        ]
    );
}

/// A first run that leaves nothing (refused before it ran) ends there,
/// with its exit code, and builds nothing more; a first command other than
/// `run`, or one with `--features`, builds the whole profile-cli at once.
#[test]
fn a_first_run_that_left_nothing_ends_there_and_other_first_commands_build_the_whole() {
    let tree = ProfileScript::new("");
    let refused = tree.run(&["run", "no-such-target"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert_eq!(
        tree.log(),
        [
            "cargo build --release --manifest-path ROOT/Cargo.toml -p profiling-cli --no-default-features --features workspace-targets,sources",
            "profile-cli run no-such-target --handoff HANDOFF",
        ]
    );

    let list = ProfileScript::new("{\"run\":1}");
    assert!(list.run(&["list"]).status.success());
    assert_eq!(
        list.log(),
        [
            "cargo build --release --manifest-path ROOT/Cargo.toml -p profiling-cli",
            "profile-cli list",
        ]
    );
}
