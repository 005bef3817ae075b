//! (in progress)
use super::*;
pub struct DummySource;
impl DummySource { pub fn from_parameters(_p: &serde_yaml::Mapping) -> Result<Self, DataError> { Ok(DummySource) } }
impl DataSource for DummySource { fn name(&self) -> &str { "dummy" } fn describe(&self) -> BTreeMap<String, Value> { BTreeMap::new() } fn len(&self) -> usize { 0 } fn read(&self, _i: usize) -> Result<DataRecord, DataError> { Err(DataError::NoRecords) } }
