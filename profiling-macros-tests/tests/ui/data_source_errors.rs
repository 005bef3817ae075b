// `#[data_source]` with bad arguments, on the wrong items, and on a source
// whose parameters cannot be read from a config.
use profiling_core::data::{DataRecord, RecordSource};
use profiling_core::data_source;

macro_rules! source_body {
    () => {
        type Parameters = Empty;
        fn open(_: Empty) -> anyhow::Result<Self> {
            unimplemented!()
        }
        fn len(&self) -> usize {
            0
        }
        fn read(&self, _: usize) -> anyhow::Result<DataRecord> {
            unimplemented!()
        }
    };
}

#[derive(serde::Deserialize)]
struct Empty {}

struct Unnamed;

#[data_source]
impl RecordSource for Unnamed {
    source_body!();
}

struct BadName;

#[data_source(name = "no spaces")]
impl RecordSource for BadName {
    source_body!();
}

struct UnknownKey;

#[data_source(name = "unknown-key", factory = make)]
impl RecordSource for UnknownKey {
    source_body!();
}

#[data_source(name = "on-a-struct")]
struct OnAStruct;

struct Inherent;

#[data_source(name = "inherent")]
impl Inherent {
    fn new() -> Self {
        Inherent
    }
}

#[data_source(name = "other-trait")]
impl Clone for Inherent {
    fn clone(&self) -> Self {
        Inherent
    }
}

struct Generic<T>(T);

#[data_source(name = "generic")]
impl<T: Send + Sync + 'static> RecordSource for Generic<T> {
    source_body!();
}

struct NotDeserialize;

struct Opaque;

#[data_source(name = "opaque-parameters")]
impl RecordSource for Opaque {
    type Parameters = NotDeserialize;
    fn open(_: NotDeserialize) -> anyhow::Result<Self> {
        Ok(Opaque)
    }
    fn len(&self) -> usize {
        0
    }
    fn read(&self, _: usize) -> anyhow::Result<DataRecord> {
        unimplemented!()
    }
}

fn main() {}
