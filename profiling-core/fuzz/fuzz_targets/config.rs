//! Any bytes, read as config text, parse and resolve to a config or to an
//! error whose first line says what is wrong; a config's data source builds
//! or is refused the same way. Never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::data;
use profiling_sources as _;

fn assert_reads_well(error: &dyn std::fmt::Display) {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    assert!(!first.trim().is_empty(), "{text:?}");
}

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let file = match ConfigFile::parse(&text, None) {
        Ok(file) => file,
        Err(error) => return assert_reads_well(&error),
    };
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
});
