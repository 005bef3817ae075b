// `#[data_source]` as a crate of one's own writes it: registered, listed
// with its parameters, built from a mapping, read.
use profiling_core::data::{self, DataRecord, RecordSource};
use profiling_core::prelude::*;

/// Counts to `count`.
struct Counting {
    count: usize,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CountingParameters {
    count: usize,
    #[serde(default)]
    label: Option<String>,
}

#[data_source("counting")]
impl RecordSource for Counting {
    type Parameters = CountingParameters;

    fn open(parameters: CountingParameters) -> anyhow::Result<Self> {
        let _ = parameters.label;
        Ok(Counting {
            count: parameters.count,
        })
    }

    fn len(&self) -> usize {
        self.count
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        Ok(DataRecord {
            id: format!("n{index}"),
            ..DataRecord::default()
        })
    }
}

mod reexported {
    pub use profiling_core as runtime;
}

struct Described;

#[data_source(name = "described", description = "Nothing at all.", crate = reexported::runtime)]
impl reexported::runtime::data::RecordSource for Described {
    type Parameters = std::collections::BTreeMap<String, u8>;

    fn open(_: Self::Parameters) -> anyhow::Result<Self> {
        Ok(Described)
    }

    fn len(&self) -> usize {
        1
    }

    fn read(&self, _: usize) -> anyhow::Result<DataRecord> {
        Ok(DataRecord::default())
    }
}

fn main() {
    let entry = data::find_source("counting").unwrap();
    assert_eq!(entry.doc, "Counts to `count`.");
    assert_eq!(entry.parameters(), ["count", "label"]);
    let source = data::build("counting", &serde_yaml::from_str("{count: 2}").unwrap()).unwrap();
    assert_eq!(source.read(1).unwrap().id, "n1");
    let error = data::build(
        "counting",
        &serde_yaml::from_str("{count: 2, lable: x}").unwrap(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(error.contains("unknown field `lable`"), "{error}");
    let described = data::find_source("described").unwrap();
    assert_eq!(described.doc, "Nothing at all.");
    assert!(described.parameters().is_empty());
}
