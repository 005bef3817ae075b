//! Targets register at link time and are found by name.

use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::registry::{self, Lookup};
use profiling_core::driver::runner::{Pass, Phase, Records, RunPlan};
use profiling_core::prelude::*;

macro_rules! unit_target {
    ($ty:ident, $name:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Default)]
        struct $ty;

        // The type is written by the macro, not in this file's text, so its
        // doc comment cannot be read from the source: pass it explicitly.
        #[profile_target(name = $name, description = $doc)]
        impl ProfileTarget for $ty {
            type Prepared = ();
            type Output = ();
            fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
                Ok(())
            }
            fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
                Ok(())
            }
        }
    };
}

unit_target!(Alpha, "registry-alpha", "The first target.");
unit_target!(Beta, "registry-beta", "The second target.");
unit_target!(TwinOne, "registry-twin", "One twin.");
unit_target!(TwinTwo, "registry-twin", "The other twin.");

/// Built by a factory that can fail.
struct Factored {
    _weights: Vec<f32>,
}

fn load_factored() -> anyhow::Result<Factored> {
    Ok(Factored {
        _weights: vec![1.0],
    })
}

#[profile_target(name = "registry-factored", factory = load_factored)]
impl ProfileTarget for Factored {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Named after its type.
#[derive(Default)]
struct KebabCasedTarget;

#[profile_target]
impl ProfileTarget for KebabCasedTarget {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

fn names() -> Vec<&'static str> {
    registry::targets().iter().map(|t| t.name).collect()
}

#[test]
fn every_target_in_the_binary_is_listed_sorted() {
    assert_eq!(
        names(),
        [
            "kebab-cased-target",
            "registry-alpha",
            "registry-beta",
            "registry-factored",
            "registry-from-disk",
            "registry-gamma",
            "registry-twin",
            "registry-twin"
        ]
    );
}

#[test]
fn an_entry_knows_where_it_was_defined() {
    let Lookup::Found(entry) = registry::lookup("registry-factored") else {
        panic!("registry-factored is registered once");
    };
    assert_eq!(entry.type_name, "Factored");
    assert_eq!(entry.file, "profiling-core/tests/registry.rs");
    let impl_line = include_str!("registry.rs")
        .lines()
        .position(|l| l.starts_with("impl ProfileTarget for Factored"))
        .unwrap() as u32
        + 1;
    assert_eq!(entry.line, impl_line);
    assert_eq!(entry.module_path, "registry");
    assert_eq!(entry.doc, "Built by a factory that can fail.");
    assert_eq!(entry.constructor, "load_factored");
}

#[test]
fn a_shared_name_is_ambiguous() {
    let Lookup::Ambiguous(entries) = registry::lookup("registry-twin") else {
        panic!("registry-twin is registered twice");
    };
    let mut docs: Vec<&str> = entries.iter().map(|e| e.doc).collect();
    docs.sort();
    assert_eq!(docs, ["One twin.", "The other twin."]);
}

#[test]
fn a_missing_name_offers_near_matches() {
    let Lookup::Missing { near } = registry::lookup("registry-alpah") else {
        panic!("no such target");
    };
    assert_eq!(near[0], "registry-alpha");
    let Lookup::Missing { near } = registry::lookup("zzzzzzzzzzzz") else {
        panic!("no such target");
    };
    assert!(near.is_empty());
}

macro_rules! positional_target {
    ($ty:ident, $name:literal) => {
        #[derive(Default)]
        struct $ty;

        #[profile_target($name)]
        impl ProfileTarget for $ty {
            type Prepared = ();
            type Output = ();
            fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
                Ok(())
            }
            fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
                Ok(())
            }
        }
    };
}

positional_target!(Gamma, "registry-gamma");

#[test]
fn macro_rules_can_generate_targets() {
    let Lookup::Found(entry) = registry::lookup("registry-gamma") else {
        panic!("registry-gamma is registered");
    };
    assert_eq!(entry.type_name, "Gamma");
    let Lookup::Found(alpha) = registry::lookup("registry-alpha") else {
        panic!("registry-alpha is registered");
    };
    assert_eq!(alpha.doc, "The first target.");
}

/// Built by a factory whose error is an I/O error.
struct FromDisk;

fn open_from_disk() -> Result<FromDisk, std::io::Error> {
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "weights.bin: no such file",
    ))
}

#[profile_target(name = "registry-from-disk", factory = open_from_disk)]
impl ProfileTarget for FromDisk {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

#[test]
fn a_factory_may_return_any_error_anyhow_takes() {
    let Lookup::Found(entry) = registry::lookup("registry-from-disk") else {
        panic!("registry-from-disk is registered");
    };
    assert_eq!(entry.constructor, "open_from_disk");
    let config = ConfigFile::parse("target: {name: registry-from-disk}", None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = profiling_core::data::build("dummy", &config.data_source.parameters).unwrap();
    let error = (entry.launch)(&RunPlan::new(config, Records::Unread(source))).unwrap_err();
    assert_eq!(error.phase, Phase::Construct);
    assert_eq!(error.pass, Pass::Setup);
    assert_eq!(
        error.calls.prepare, 0,
        "nothing ran after the factory failed"
    );
    assert_eq!(error.source.to_string(), "weights.bin: no such file");
    let io = error.source.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}
