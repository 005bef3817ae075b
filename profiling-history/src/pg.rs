//! Connecting to a PostgreSQL store the way libpq would: a URL
//! (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`, or with
//! `?host=/run/postgresql` for a Unix socket), what the URL leaves out
//! from `PGHOST`, `PGPORT`, `PGUSER` and `PGDATABASE`, and a password
//! from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE`,
//! or `~/.pgpass`, read only when no one else may read it). A connection
//! attempt gives up after 10 s unless the URL says otherwise
//! (`connect_timeout`). The password is never part of a message.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use postgres::config::Host;
use postgres::Config;

use crate::store::{mask, StoreError};

/// How long a connection attempt waits, unless the URL says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The configuration `url` gives, completed from the environment and the
/// password file.
pub(crate) fn config(url: &str) -> Result<Config, StoreError> {
    let mut config = Config::from_str(url).map_err(|error| StoreError::Location {
        given: mask(url),
        reason: format!("not a PostgreSQL URL: {error}"),
    })?;
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(host) => {
                for host in host.split(',') {
                    config.host(host);
                }
            }
            None if Path::new("/var/run/postgresql").is_dir() => {
                config.host_path("/var/run/postgresql");
            }
            None => {
                config.host("localhost");
            }
        }
    }
    if config.get_ports().is_empty() {
        if let Some(port) = env("PGPORT").and_then(|p| p.parse().ok()) {
            config.port(port);
        }
    }
    if config.get_user().is_none() {
        if let Some(user) = env("PGUSER") {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(database) = env("PGDATABASE") {
            config.dbname(&database);
        }
    }
    if config.get_password().is_none() {
        let password = env("PGPASSWORD").or_else(|| from_password_file(&config));
        if let Some(password) = password {
            config.password(password);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("profile-cli");
    }
    Ok(config)
}

/// The password file's entry for `config`'s host, port, database and
/// user, when there is a file only its owner may read.
fn from_password_file(config: &Config) -> Option<String> {
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pgpass")))?;
    let metadata = std::fs::metadata(&file).ok()?;
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o077 != 0 {
            return None;
        }
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(name) => name.clone(),
        Host::Unix(path) => path.display().to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config
        .get_user()
        .map(str::to_owned)
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_default();
    let database = config
        .get_dbname()
        .map(str::to_owned)
        .unwrap_or_else(|| user.clone());
    let socket = matches!(config.get_hosts().first(), Some(Host::Unix(_)));
    password_for(&text, &host, socket, &port, &database, &user)
}

/// The password of the first line of a password file's `text` that
/// matches: `host:port:database:user:password`, `*` matching anything,
/// `\:` and `\\` for a colon and a backslash in a field, `#` a comment;
/// `localhost` also matches a Unix socket, as in libpq.
fn password_for(
    text: &str,
    host: &str,
    socket: bool,
    port: &str,
    database: &str,
    user: &str,
) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_fields(line);
        let [h, p, d, u, password] = fields.as_slice() else {
            continue;
        };
        let matches = |field: &str, value: &str| field == "*" || field == value;
        let host_matches = matches(h, host) || (socket && h == "localhost");
        if host_matches && matches(p, port) && matches(d, database) && matches(u, user) {
            return Some(password.clone());
        }
    }
    None
}

fn split_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_file_matches_as_libpq_does() {
        let file = "\
# a comment
db.example:5432:perf:ci:first
*:*:perf:ci:any\\:host
localhost:5432:*:dev:on\\\\socket
";
        assert_eq!(
            password_for(file, "db.example", false, "5432", "perf", "ci").as_deref(),
            Some("first")
        );
        assert_eq!(
            password_for(file, "other", false, "5433", "perf", "ci").as_deref(),
            Some("any:host")
        );
        assert_eq!(
            password_for(file, "/run/postgresql", true, "5432", "x", "dev").as_deref(),
            Some("on\\socket")
        );
        assert_eq!(password_for(file, "other", false, "5432", "x", "dev"), None);
    }

    #[test]
    fn a_url_that_is_not_one_is_refused_with_its_password_masked() {
        let error = config("postgres://ci:hunter2@db.example:notaport/perf").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("ci:***@db.example"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
