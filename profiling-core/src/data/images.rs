//! (in progress)
use super::*;
pub struct ImageSource;
impl ImageSource { pub fn from_parameters(_p: &serde_yaml::Mapping) -> Result<Self, DataError> { Ok(ImageSource) } }
impl DataSource for ImageSource { fn name(&self) -> &str { "images" } fn describe(&self) -> BTreeMap<String, Value> { BTreeMap::new() } fn len(&self) -> usize { 0 } fn read(&self, _i: usize) -> Result<DataRecord, DataError> { Err(DataError::NoRecords) } }
pub const EXTENSIONS: &[&str] = &["bmp"];
