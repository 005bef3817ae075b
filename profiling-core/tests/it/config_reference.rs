//! `docs/reference/config.md` names every key a config accepts, and no
//! other: its table of keys is checked against the fields the config's own
//! parsing lists when it refuses an unknown key.

use std::collections::BTreeSet;
use std::path::Path;

use profiling_core::data;
use profiling_core::driver::config::ConfigFile;

/// The keys of the `data_source` mapping that the config reads itself
/// (every other key is a parameter of the source), and the one key of the
/// `sweep` mapping that is not a config key to sweep. No type lists them.
const KEYS_READ_BY_HAND: &[&str] = &[
    "data_source.name",
    "data_source.source",
    "data_source.parameters",
    "data_source.cache",
    "data_source.cache_max_bytes",
    "sweep.zip",
];

/// The fields serde names after "expected" when it refuses an unknown one:
/// "expected one of `a`, `b`" or "expected `a`".
fn expected_fields(message: &str) -> Vec<String> {
    let (_, list) = message
        .split_once(", expected ")
        .unwrap_or_else(|| panic!("no list of fields in: {message}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The fields of the mapping at `section` (the top level when empty), as
/// the config's refusal of an unknown key there lists them.
fn fields_of(section: &str) -> Vec<String> {
    let yaml = if section.is_empty() {
        "zz_unknown: 1".to_owned()
    } else {
        format!("{section}: {{zz_unknown: 1}}")
    };
    let error = ConfigFile::parse(&yaml, None)
        .err()
        .unwrap_or_else(|| panic!("`{yaml}` should be refused"))
        .to_string();
    expected_fields(&error)
}

/// Every key a config accepts, dotted, but the target's own
/// `target.parameters.*` and a sweep's grid.
fn accepted_keys() -> BTreeSet<String> {
    let top = fields_of("");
    let mut keys: BTreeSet<String> = top.iter().cloned().collect();
    for section in [
        "profile", "target", "workload", "cuda", "ab", "load", "nsys",
    ] {
        assert!(top.iter().any(|key| key == section), "{section}: {top:?}");
        keys.extend(
            fields_of(section)
                .into_iter()
                .map(|field| format!("{section}.{field}")),
        );
    }
    for source in data::source_names() {
        keys.extend(
            data::parameter_names(source)
                .iter()
                .map(|parameter| format!("data_source.{parameter}")),
        );
    }
    let detections: serde_yaml::Mapping =
        serde_yaml::from_str("detections: {zz_unknown: 1}").unwrap();
    let error = data::build("dummy", &detections)
        .err()
        .expect("an unknown key of `detections` is refused")
        .to_string();
    keys.extend(
        expected_fields(&error)
            .into_iter()
            .map(|field| format!("data_source.detections.{field}")),
    );
    keys.extend(KEYS_READ_BY_HAND.iter().map(|key| (*key).to_owned()));
    keys
}

/// The first column of the reference's table of keys.
fn documented_keys() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/config.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let (_, table) = text
        .split_once("\n## Every key\n")
        .expect("docs/reference/config.md has a section `## Every key`");
    let table = table.split("\n## ").next().unwrap_or_default();
    table
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|row| row.split_once("` |"))
        .map(|(key, _)| key.to_owned())
        .collect()
}

#[test]
fn the_reference_lists_every_key_a_config_accepts() {
    let documented: BTreeSet<String> = documented_keys().into_iter().collect();
    let missing: Vec<String> = accepted_keys()
        .into_iter()
        .filter(|key| !documented.contains(key))
        .collect();
    assert!(
        missing.is_empty(),
        "keys a config accepts that docs/reference/config.md does not list (add a row to `## Every key`): {missing:?}"
    );
}

#[test]
fn the_reference_names_no_key_a_config_refuses() {
    let accepted = accepted_keys();
    let documented = documented_keys();
    let unknown: Vec<&String> = documented
        .iter()
        .filter(|key| !accepted.contains(*key))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/reference/config.md lists keys a config refuses: {unknown:?}"
    );
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = documented.iter().filter(|key| !seen.insert(*key)).collect();
    assert!(twice.is_empty(), "listed twice: {twice:?}");
}
