//! Parity of a snippet with production: the copy and the production
//! function it was copied from, called on the same prepared inputs, must
//! compute the same thing.
//!
//! `profile-cli new` writes a parity test into a snippet whose production
//! function the snippet can call. It runs [`each_record`] over the records
//! of the snippet's own `config.yaml` ([`config_beside`]) and compares the two outputs with
//! [`same_output!`](crate::same_output): with `==` when the output type is
//! `PartialEq`, else through the target's `summarize` of each.
//!
//! ```
//! use profiling_core::prelude::*;
//! use profiling_core::same_output;
//!
//! fn copy(values: &[f32]) -> f32 { values.iter().sum() }
//! fn production(values: &[f32]) -> f32 { values.iter().sum() }
//!
//! let values = [1.0, 2.0];
//! let compared = same_output!(copy(&values), production(&values), |_: &f32| Summary::new());
//! assert_eq!(compared, Ok(profiling_core::parity::Compared::Equal));
//! ```

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use crate::data::DataRecord;
use crate::device::Device;
use crate::driver::config::{ConfigFile, Overrides};
use crate::target::Summary;

/// How two outputs were found the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// With `==`.
    Equal,
    /// Their `summarize` values are equal (the type is not `PartialEq`).
    SameSummary,
}

impl Compared {
    fn describe(self) -> &'static str {
        match self {
            Compared::Equal => "with ==",
            Compared::SameSummary => "through summarize (the output type is not PartialEq)",
        }
    }
}

/// The two outputs of one comparison, by reference.
#[doc(hidden)]
pub struct Pair<'a, T>(pub &'a T, pub &'a T);

/// Chosen by [`same_output!`](crate::same_output) when the output type is
/// `PartialEq`.
#[doc(hidden)]
pub trait ViaEq {
    fn compare<F>(&self, summarize: F) -> Result<Compared, String>;
}

impl<T: PartialEq + Debug> ViaEq for &Pair<'_, T> {
    fn compare<F>(&self, _summarize: F) -> Result<Compared, String> {
        if self.0 == self.1 {
            Ok(Compared::Equal)
        } else {
            Err(format!(
                "the outputs differ:\n  copy:       {:?}\n  production: {:?}",
                Abbreviated(self.0),
                Abbreviated(self.1)
            ))
        }
    }
}

/// Chosen by [`same_output!`](crate::same_output) when the output type is
/// not `PartialEq`: compares the target's `summarize` of each.
#[doc(hidden)]
pub trait ViaSummary<T> {
    fn compare<F: Fn(&T) -> Summary>(&self, summarize: F) -> Result<Compared, String>;
}

impl<T> ViaSummary<T> for Pair<'_, T> {
    fn compare<F: Fn(&T) -> Summary>(&self, summarize: F) -> Result<Compared, String> {
        let (copy, production) = (summarize(self.0), summarize(self.1));
        if copy.is_empty() {
            return Err(
                "nothing to compare: the output type is not PartialEq and summarize returns \
                 nothing; derive PartialEq for it or make summarize say what came out"
                    .to_owned(),
            );
        }
        if copy == production {
            Ok(Compared::SameSummary)
        } else {
            Err(format!(
                "the summaries of the outputs differ:\n  copy:       {copy:?}\n  production: {production:?}"
            ))
        }
    }
}

/// `{:?}` cut to a readable length.
struct Abbreviated<'a, T>(&'a T);

impl<T: Debug> Debug for Abbreviated<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const LIMIT: usize = 600;
        let text = format!("{:?}", self.0);
        match text.char_indices().nth(LIMIT) {
            Some((end, _)) => write!(f, "{} ... ({} characters)", &text[..end], text.len()),
            None => f.write_str(&text),
        }
    }
}

/// Compares the output of a copy with production's: `Ok(Compared::Equal)`
/// when the type is `PartialEq` and they are `==`,
/// `Ok(Compared::SameSummary)` when it is not and `summarize` (a closure
/// taking `&T`, the target's `summarize`) gives equal summaries, else an
/// `Err` that shows both.
#[macro_export]
macro_rules! same_output {
    ($copy:expr, $production:expr, $summarize:expr $(,)?) => {{
        #[allow(unused_imports)]
        use $crate::parity::{ViaEq as _, ViaSummary as _};
        let (copy, production) = ($copy, $production);
        (&&$crate::parity::Pair(&copy, &production)).compare($summarize)
    }};
}

/// The `config.yaml` beside a snippet's `target.rs`: `source_file` is its
/// `file!()` (relative to the workspace root, or absolute), found from
/// `manifest_dir` (its crate's `CARGO_MANIFEST_DIR`) or a directory above.
/// Panics, naming the file, when there is none.
pub fn config_beside(source_file: &str, manifest_dir: &str) -> PathBuf {
    find_config(Path::new(source_file), Path::new(manifest_dir))
        .unwrap_or_else(|| panic!("parity: no config.yaml beside {source_file}"))
}

fn find_config(source_file: &Path, manifest_dir: &Path) -> Option<PathBuf> {
    let directory = source_file.parent()?;
    if directory.is_absolute() {
        let config = directory.join("config.yaml");
        return config.is_file().then_some(config);
    }
    manifest_dir
        .ancestors()
        .map(|base| base.join(directory).join("config.yaml"))
        .find(|config| config.is_file())
}

/// Runs `compare` on each record of the data source of `config` (the run's
/// seed is the config's, as in a run, so seeded inputs are those a run
/// prepares), and panics with the record's id and what went wrong when it
/// fails; prints how many records were compared and how.
pub fn each_record<F>(config: &Path, mut compare: F)
where
    F: FnMut(&DataRecord, Device) -> anyhow::Result<Result<Compared, String>>,
{
    let config_path = config;
    let config = ConfigFile::load(config_path)
        .and_then(|file| file.resolve(&Overrides::default()))
        .unwrap_or_else(|error| panic!("parity: {error}"));
    crate::random::seed_run(config.seed);
    let source = crate::data::build(&config.data_source.name, &config.data_source.parameters)
        .unwrap_or_else(|error| panic!("parity: {}: {error}", config_path.display()));
    let mut how = Vec::new();
    for index in 0..source.len() {
        let record = source
            .read(index)
            .unwrap_or_else(|error| panic!("parity: record {index}: {error}"));
        match compare(&record, config.device) {
            Ok(Ok(compared)) => how.push(compared),
            Ok(Err(difference)) => panic!(
                "parity: record `{}`: the copy does not compute what production computes: {difference}",
                record.id
            ),
            Err(error) => panic!("parity: record `{}`: {error:#}", record.id),
        }
    }
    assert!(
        !how.is_empty(),
        "parity: {} has no records: nothing was compared",
        config_path.display()
    );
    println!(
        "parity: the copy computes what production computes on {} record(s) of {}, compared {}",
        how.len(),
        config.data_source.name,
        how[0].describe()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone)]
    struct Opaque(u32);

    fn summary(value: &Opaque) -> Summary {
        Summary::from([("value".to_owned(), serde_yaml::Value::from(value.0))])
    }

    #[test]
    fn partial_eq_outputs_are_compared_with_eq() {
        assert_eq!(
            same_output!(vec![1, 2], vec![1, 2], |_: &Vec<i32>| Summary::new()),
            Ok(Compared::Equal)
        );
        let differ =
            same_output!(vec![1, 2], vec![1, 3], |_: &Vec<i32>| Summary::new()).unwrap_err();
        assert_eq!(
            differ,
            "the outputs differ:\n  copy:       [1, 2]\n  production: [1, 3]"
        );
    }

    #[test]
    fn other_outputs_are_compared_through_their_summaries() {
        assert_eq!(
            same_output!(Opaque(1), Opaque(1), summary),
            Ok(Compared::SameSummary)
        );
        let differ = same_output!(Opaque(1), Opaque(2), summary).unwrap_err();
        assert!(
            differ.starts_with("the summaries of the outputs differ:"),
            "{differ}"
        );
        let nothing = same_output!(Opaque(1), Opaque(1), |_: &Opaque| Summary::new());
        assert!(nothing.unwrap_err().starts_with("nothing to compare"));
    }

    #[test]
    fn long_outputs_are_cut() {
        let long = vec![0u8; 1000];
        let mut other = long.clone();
        other[999] = 1;
        let differ = same_output!(long, other, |_: &Vec<u8>| Summary::new()).unwrap_err();
        assert!(differ.contains("... (3000 characters)"), "{differ}");
    }

    #[test]
    fn the_config_is_found_from_the_crate_or_above() {
        let dir = tempfile::tempdir().unwrap();
        let snippet = dir.path().join("crate/snippets/x");
        std::fs::create_dir_all(&snippet).unwrap();
        std::fs::write(snippet.join("config.yaml"), "target: {name: x}\n").unwrap();
        let manifest_dir = dir.path().join("crate");
        assert_eq!(
            find_config(Path::new("crate/snippets/x/target.rs"), &manifest_dir),
            Some(dir.path().join("crate/snippets/x/config.yaml"))
        );
        assert_eq!(
            find_config(&snippet.join("target.rs"), Path::new("/nowhere")),
            Some(snippet.join("config.yaml"))
        );
        assert_eq!(
            find_config(Path::new("crate/snippets/y/target.rs"), &manifest_dir),
            None
        );
    }
}
