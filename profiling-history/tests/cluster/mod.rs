//! A throwaway PostgreSQL cluster for a test: `initdb` in a temporary
//! directory, the server listening on a Unix socket there and on no TCP
//! port, stopped and removed when the value is dropped. Where there is no
//! PostgreSQL (`scripts/test` installs Debian's where it can), the test
//! says so and passes.
//!
//! PostgreSQL refuses to run as root: as root, the cluster runs as the
//! `postgres` user Debian's package makes (or `nobody`), through
//! `runuser`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Tests without a cluster print this.
pub const SKIPPED: &str =
    "skipped: no PostgreSQL server programs (scripts/test installs Debian's postgresql)";

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    user: Option<String>,
}

impl Cluster {
    /// A started cluster, or None after printing why the test skips.
    pub fn start() -> Option<Cluster> {
        let Some(bin) = server_programs() else {
            println!("{SKIPPED}");
            return None;
        };
        let root = is_root();
        let user = root.then(|| {
            ["postgres", "nobody"]
                .into_iter()
                .find(|user| {
                    Command::new("id")
                        .arg("-u")
                        .arg(user)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .is_ok_and(|s| s.success())
                })
                .expect("a user other than root to run PostgreSQL as")
                .to_owned()
        });
        let dir = tempfile::Builder::new()
            .prefix("pg-")
            .tempdir_in("/tmp")
            .unwrap();
        if let Some(user) = &user {
            let status = Command::new("chown")
                .arg(user)
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown {user} {}", dir.path().display());
        }
        let cluster = Cluster { dir, bin, user };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "profiling",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        cluster.pg_ctl_start();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket's directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The URL of database `postgres` as user `profiling`.
    pub fn url(&self) -> String {
        format!(
            "postgres://profiling@/postgres?host={}",
            self.socket_dir().display()
        )
    }

    /// A new empty database, and its URL.
    pub fn database(&self, name: &str) -> String {
        self.run(
            "createdb",
            &[
                "-h",
                self.socket_dir().to_str().unwrap(),
                "-U",
                "profiling",
                name,
            ],
        );
        format!(
            "postgres://profiling@/{name}?host={}",
            self.socket_dir().display()
        )
    }

    /// Stops the server at once (as a crash would).
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    /// Starts it again.
    pub fn pg_ctl_start(&self) {
        let options = format!(
            "-k {} -c listen_addresses='' -c fsync=off -c full_page_writes=off -c max_connections=40",
            self.socket_dir().display()
        );
        let log = self.dir.path().join("log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
    }

    /// `program` of the server's directory, as the cluster's user.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        match &self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.arg("-u").arg(user).arg("--").arg(&program);
                command
            }
            None => Command::new(&program),
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}{}\nlog: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The directory of `initdb`, `pg_ctl` and `createdb`: beside an `initdb`
/// on PATH, else Debian's newest `/usr/lib/postgresql/<version>/bin`.
fn server_programs() -> Option<PathBuf> {
    let has_all = |dir: &Path| {
        ["initdb", "pg_ctl", "createdb", "postgres"]
            .iter()
            .all(|p| dir.join(p).is_file())
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if let Ok(initdb) = std::fs::canonicalize(dir.join("initdb")) {
                if let Some(parent) = initdb.parent() {
                    candidates.push(parent.to_path_buf());
                }
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<(u32, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let version = e.file_name().to_str()?.parse().ok()?;
                Some((version, e.path().join("bin")))
            })
            .collect();
        versions.sort();
        candidates.extend(versions.into_iter().rev().map(|(_, bin)| bin));
    }
    candidates.into_iter().find(|dir| has_all(dir))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
