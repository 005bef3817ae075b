//! The config parser never panics: arbitrary bytes, YAML-like token soup and
//! generated YAML documents (the real keys and random ones, nested mappings,
//! sequences, tags and scalars, either anything or mostly of the types the
//! keys take) go through
//! `ConfigFile::parse`, `resolve` and `data::build`, and come back as a
//! config or as an error whose first line says what is wrong.

use std::path::Path;

use proptest::prelude::*;
use proptest::sample::select;
use serde_yaml::{Mapping, Value};

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};

use crate::common::{assert_reads_well, config};

/// Keys of the config's top level.
const TOP_KEYS: &[&str] = &[
    "profile_name",
    "profile",
    "target",
    "data_source",
    "data",
    "device",
    "warmup",
    "iterations",
    "record_loading",
    "seed",
    "shuffle",
    "records",
    "validate_output",
    "capture_range",
    "output_dir",
    "write_manifest",
    "cuda",
    "workload",
];

/// Keys of the config's nested mappings and of the data sources.
const NESTED_KEYS: &[&str] = &[
    "name",
    "import_path",
    "profile_prepare",
    "parameters",
    "source",
    "directory",
    "paths",
    "decode",
    "limit",
    "repeat",
    "record_count",
    "records",
    "shuffle",
    "cache",
    "cache_max_bytes",
    "image_shape",
    "include_image",
    "tensor_shape",
    "synchronize_before_warmup",
    "synchronize_after_warmup",
    "synchronize_before_capture",
    "synchronize_after_capture",
    "synchronize_each_iteration",
    "device",
    "warmup",
    "iterations",
    "record_loading",
    "seed",
    "validate_output",
    "capture_range",
];

/// Strings the config gives meaning to, and edge cases of them.
const WORDS: &[&str] = &[
    "dummy",
    "images",
    "cpu",
    "cuda",
    "cuda:0",
    "cuda:",
    "cuda:18446744073709551616",
    "eager",
    "lazy",
    "smoke",
    "profile-target",
    "a@domain",
    "~/images",
    "",
    " ",
    "\n",
    ".",
    "..",
    "/",
    "/nonexistent/dir",
    "target.rs:Ident",
    "-1",
    "\0",
    "é",
];

/// Parses, resolves and builds the data source, as a run does before any
/// target code: every step either succeeds or gives an error that reads
/// well.
fn check_config_text(text: &str) {
    let file = match ConfigFile::parse(text, Some(Path::new("fuzz/config.yaml"))) {
        Ok(file) => file,
        Err(error) => return assert_reads_well(&error),
    };
    let _ = file.target_name();
    let config = match file.resolve(&Overrides::default()) {
        Ok(config) => config,
        Err(error) => return assert_reads_well(&error),
    };
    match data::build(&config.data_source.name, &config.data_source.parameters) {
        Err(error) => assert_reads_well(&error),
        // Picking records reads their ids: kept to sources of a size a
        // case can go through quickly.
        Ok(source) if source.len() <= 10_000 => {
            let seed = config.seed.unwrap_or(0);
            if let Err(error) = data::select(source, &config.selection, seed) {
                assert_reads_well(&error);
            }
        }
        Ok(_) => {}
    }
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (0u64..4).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        select(WORDS).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ]
}

fn key() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => select(TOP_KEYS).prop_map(Value::from),
        4 => select(NESTED_KEYS).prop_map(Value::from),
        1 => "[a-z_]{1,12}".prop_map(Value::from),
        1 => scalar(),
    ]
}

/// Nested mappings, sequences and tagged values, scalars at the leaves.
fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Sequence),
            prop::collection::vec((key(), inner.clone()), 0..6)
                .prop_map(|entries| Value::Mapping(entries.into_iter().collect())),
            ("[a-z]{1,6}", inner).prop_map(|(tag, value)| {
                Value::Tagged(Box::new(serde_yaml::value::TaggedValue {
                    tag: serde_yaml::value::Tag::new(tag),
                    value,
                }))
            }),
        ]
    })
}

/// A config that resolves, so that random entries laid over it reach the
/// rules after the first ones.
fn valid_base() -> Mapping {
    serde_yaml::from_str(
        "target: {name: smoke, profile_prepare: true}\ndata_source: {name: dummy}\n",
    )
    .unwrap()
}

/// A top-level mapping of real and random keys, alone or laid over a valid
/// config; now and then any value at all.
fn document() -> impl Strategy<Value = Value> {
    let entries = prop::collection::vec((key(), value()), 0..8);
    prop_oneof![
        3 => (entries, any::<bool>()).prop_map(|(entries, over_base)| {
            let mut mapping = if over_base { valid_base() } else { Mapping::new() };
            for (key, value) in entries {
                mapping.insert(key, value);
            }
            Value::Mapping(mapping)
        }),
        1 => value(),
    ]
}

/// A value of the type `key` takes, now and then any value at all.
fn field(key: &'static str) -> BoxedStrategy<Value> {
    let text = || {
        prop_oneof![
            3 => select(WORDS).prop_map(Value::from),
            1 => any::<String>().prop_map(Value::from),
        ]
    };
    let integer = || {
        prop_oneof![
            (-2i64..6).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
        ]
    };
    let typed = match key {
        "profile" => mapping_of(&[("name", 0.8)]),
        "target" => mapping_of(&[
            ("name", 0.9),
            ("import_path", 0.2),
            ("profile_prepare", 0.5),
            ("parameters", 0.2),
        ]),
        "data_source" | "data" => mapping_of(&[
            ("name", 0.8),
            ("source", 0.1),
            ("parameters", 0.2),
            ("record_count", 0.3),
            ("limit", 0.2),
            ("image_shape", 0.3),
            ("include_image", 0.3),
            ("tensor_shape", 0.3),
            ("directory", 0.3),
            ("paths", 0.2),
            ("decode", 0.3),
            ("repeat", 0.2),
        ]),
        "parameters" => mapping_of(&[
            ("record_count", 0.3),
            ("limit", 0.3),
            ("image_shape", 0.3),
            ("include_image", 0.3),
            ("tensor_shape", 0.3),
            ("directory", 0.3),
            ("paths", 0.3),
            ("decode", 0.3),
            ("repeat", 0.3),
        ]),
        "cuda" => mapping_of(&[
            ("synchronize_before_warmup", 0.5),
            ("synchronize_after_warmup", 0.5),
            ("synchronize_before_capture", 0.5),
            ("synchronize_after_capture", 0.5),
            ("synchronize_each_iteration", 0.5),
        ]),
        "workload" => mapping_of(&[
            ("device", 0.4),
            ("warmup", 0.4),
            ("iterations", 0.4),
            ("record_loading", 0.4),
            ("seed", 0.4),
            ("validate_output", 0.4),
            ("capture_range", 0.4),
        ]),
        "record_loading" => prop_oneof![
            3 => select(&["eager", "lazy"][..]).prop_map(Value::from),
            1 => text(),
        ]
        .boxed(),
        "name" | "source" => prop_oneof![
            select(&["dummy", "images", "smoke"][..]).prop_map(Value::from),
            text(),
        ]
        .boxed(),
        "warmup" | "iterations" | "seed" | "record_count" | "limit" | "repeat" => integer().boxed(),
        "profile_prepare"
        | "validate_output"
        | "write_manifest"
        | "include_image"
        | "decode"
        | "synchronize_before_warmup"
        | "synchronize_after_warmup"
        | "synchronize_before_capture"
        | "synchronize_after_capture"
        | "synchronize_each_iteration" => any::<bool>().prop_map(Value::Bool).boxed(),
        "paths" => prop::collection::vec(text(), 0..3)
            .prop_map(Value::Sequence)
            .boxed(),
        "image_shape" | "tensor_shape" => prop::collection::vec(
            prop_oneof![(0u64..5).prop_map(Value::from), integer()],
            0..5,
        )
        .prop_map(Value::Sequence)
        .boxed(),
        _ => text().boxed(),
    };
    prop_oneof![19 => typed, 1 => value()].boxed()
}

/// A mapping holding each key with its probability, each with a [`field`]
/// value.
fn mapping_of(keys: &'static [(&'static str, f64)]) -> BoxedStrategy<Value> {
    let fields: Vec<_> = keys
        .iter()
        .map(|&(key, presence)| {
            prop::option::weighted(presence, field(key))
                .prop_map(move |value| value.map(|value| (Value::from(key), value)))
        })
        .collect();
    fields
        .prop_map(|entries| Value::Mapping(entries.into_iter().flatten().collect()))
        .boxed()
}

/// A whole config, each key of it mostly of the type it takes.
fn typed_document() -> BoxedStrategy<Value> {
    mapping_of(&[
        ("profile_name", 0.2),
        ("profile", 0.1),
        ("target", 0.95),
        ("data_source", 0.6),
        ("data", 0.1),
        ("device", 0.4),
        ("warmup", 0.4),
        ("iterations", 0.4),
        ("record_loading", 0.3),
        ("seed", 0.3),
        ("validate_output", 0.2),
        ("capture_range", 0.3),
        ("output_dir", 0.2),
        ("write_manifest", 0.2),
        ("cuda", 0.3),
        ("workload", 0.3),
    ])
}

/// Pieces of YAML syntax and config words, to be strung together.
const TOKENS: &[&str] = &[
    "target",
    "name",
    "data_source",
    "source",
    "parameters",
    "workload",
    "cuda",
    "device",
    "warmup",
    "dummy",
    "images",
    "smoke",
    "lazy",
    ":",
    ": ",
    "\n",
    "\n  ",
    "  ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&a ",
    "*a",
    "!tag ",
    "!!str ",
    "!!binary ",
    "? ",
    "|",
    ">",
    "'",
    "\"",
    "#",
    "---",
    "...",
    "%YAML 1.2\n",
    "<<: ",
    "~",
    "null",
    "true",
    "1",
    "-1",
    "1e999",
    "0x1F",
    ".nan",
    "\\u0000",
    "\t",
];

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_config_text(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn yaml_token_soup_never_panics(tokens in prop::collection::vec(select(TOKENS), 0..48)) {
        check_config_text(&tokens.concat());
    }
}

proptest! {
    #![proptest_config(config(384))]

    #[test]
    fn generated_yaml_documents_never_panic(document in document()) {
        // Documents serde_yaml cannot write (a mapping as a key, say) have
        // no text to parse.
        if let Ok(text) = serde_yaml::to_string(&document) {
            check_config_text(&text);
        }
    }

    #[test]
    fn typed_yaml_documents_never_panic(document in typed_document()) {
        if let Ok(text) = serde_yaml::to_string(&document) {
            check_config_text(&text);
        }
    }

    #[test]
    fn generated_source_parameters_never_panic(
        name in select(&["dummy", "images", "unknown"][..]),
        entries in prop::collection::vec((key(), value()), 0..6),
    ) {
        let parameters: Mapping = entries.into_iter().collect();
        if let Err(error) = data::build(name, &parameters) {
            assert_reads_well(&error);
        }
    }
}

#[test]
fn a_deeply_nested_document_is_an_error_not_a_stack_overflow() {
    // Under `target.parameters`, which takes any value: the depth itself is
    // what is refused, at the position where the limit was passed. Deeper
    // than YAML's own limit (128 levels, block ones counted), YAML says so;
    // deeper than 1000 flow levels, the config reader says so before the
    // YAML parser sees the text (which takes time quadratic in the depth to
    // refuse it: seconds at 100,000).
    let message = |depth: usize| {
        parse_error(&format!(
            "target: {{name: t, parameters: {{deep: {}{}}}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        ))
    };
    assert_eq!(
        message(500),
        "fuzz/config.yaml:1:163: recursion limit exceeded"
    );
    let deeper = "nested deeper than 1000 levels of `[` and `{`: no config needs that";
    assert_eq!(
        message(100_000),
        format!("fuzz/config.yaml:1:1036: {deeper}")
    );
    let mappings = format!(
        "target: {{name: t, parameters: {{deep: {}x{}}}}}",
        "{a: ".repeat(100_000),
        "}".repeat(100_000)
    );
    assert_eq!(
        parse_error(&mappings),
        format!("fuzz/config.yaml:1:4030: {deeper}")
    );
    let mappings = format!(
        "target: {{name: t, parameters: {{deep: {}x{}}}}}",
        "{a: ".repeat(500),
        "}".repeat(500)
    );
    assert_eq!(
        parse_error(&mappings),
        "fuzz/config.yaml:1:538: recursion limit exceeded"
    );
    // Brackets in quotes and comments are text, not nesting.
    let quoted = format!(
        "target: {{name: t, parameters: {{a: '{0}', b: \"{0}\"}}}}  # {0}\n",
        "[".repeat(5_000)
    );
    assert!(ConfigFile::parse(&quoted, None).is_ok());
    // Where a key's type is known, the wrong type is said before any depth
    // YAML refuses.
    let text = format!("{}{}", "[".repeat(500), "]".repeat(500));
    assert_eq!(
        parse_error(&text),
        "fuzz/config.yaml:1:1: invalid type: sequence, expected struct RawConfig"
    );
    let text = format!("target:{}", "\n  - ".repeat(10_000));
    assert_eq!(
        parse_error(&text),
        "fuzz/config.yaml:2:3: target: invalid type: sequence, expected struct RawTarget"
    );
}

#[test]
fn an_alias_bomb_is_an_error_not_an_exhaustion() {
    // 10^12 leaves once expanded, under a key that takes any value.
    let mut text = String::from(
        "target:\n  name: smoke\n  parameters:\n    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for level in 1..12 {
        let prev = level - 1;
        text.push_str(&format!(
            "    a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    assert_eq!(
        parse_error(&text),
        "fuzz/config.yaml:1:1: repetition limit exceeded"
    );
}

/// The error of parsing `text` as `fuzz/config.yaml`, which must fail.
fn parse_error(text: &str) -> String {
    match ConfigFile::parse(text, Some(Path::new("fuzz/config.yaml"))) {
        Ok(_) => panic!("parsed: {}", &text[..text.len().min(80)]),
        Err(error) => {
            assert_reads_well(&error);
            error.to_string()
        }
    }
}

/// A byte-order mark before the first key is no second document.
#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let config = ConfigFile::parse("\u{feff}target: {name: t}\nwarmup: 3\n", None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    assert_eq!((config.target.name.as_str(), config.warmup), ("t", 3));
}

/// What is not a regular file (a FIFO nobody writes to, a directory, a
/// device that never ends) is refused before a byte is read from it.
#[test]
fn a_config_that_is_not_a_regular_file_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.yaml");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    // Opening a FIFO for reading would wait for a writer: there is none.
    for path in [fifo.as_path(), dir.path(), Path::new("/dev/zero")] {
        let message = ConfigFile::load(path).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "cannot read config {}: not a regular file (a directory, a FIFO or a device): give the config's own file",
                path.display()
            )
        );
    }
}

/// A config larger than the bound is refused with its size, before it is
/// read whole.
#[test]
fn a_config_past_the_size_bound_is_refused_naming_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(6 << 30).unwrap(); // sparse: nothing is written
    assert_eq!(
        ConfigFile::load(&path).unwrap_err().to_string(),
        format!(
            "cannot read config {}: 6442450944 bytes, more than a config holds (4194304 at most; PROFILE_CLI_MAX_CONFIG_BYTES sets another bound)",
            path.display()
        )
    );
}
