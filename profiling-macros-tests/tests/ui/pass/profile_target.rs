// Usages of `#[profile_target]` that must compile, warn about nothing, and
// register what they say.
#![deny(warnings)]

use profiling_core::driver::registry::{targets, TargetEntry};
use profiling_core::prelude::*;

macro_rules! target_body {
    () => {
        type Prepared = ();
        type Output = ();
        fn prepare(&mut self, _: &DataRecord, _: Device) -> anyhow::Result<()> {
            Ok(())
        }
        fn run(&mut self, _: &()) -> anyhow::Result<()> {
            Ok(())
        }
    };
}

/// Built with `Default`.
#[derive(Default)]
struct NMSTarget;

#[profile_target]
impl ProfileTarget for NMSTarget {
    target_body!();
}

mod targets_mod {
    /// In a module.
    #[derive(Default)]
    pub struct Yolo8Decode;
}

#[profile_target]
impl profiling_core::ProfileTarget for targets_mod::Yolo8Decode {
    target_body!();
}

struct Threshold {
    cutoff: f32,
}

fn make_threshold() -> Threshold {
    Threshold { cutoff: 0.5 }
}

#[profile_target("threshold", factory = make_threshold)]
impl ProfileTarget for Threshold {
    type Prepared = Vec<f32>;
    type Output = usize;

    fn prepare(&mut self, _: &DataRecord, _: Device) -> anyhow::Result<Vec<f32>> {
        Ok(vec![0.2, 0.7])
    }

    // Methods of a target can carry their own ranges.
    #[nvtx_range]
    fn run(&mut self, scores: &Vec<f32>) -> anyhow::Result<usize> {
        Ok(scores.iter().filter(|&&s| s > self.cutoff).count())
    }
}

struct Loaded(#[allow(dead_code)] Vec<u8>);

mod factories {
    pub fn load() -> anyhow::Result<super::Loaded> {
        Ok(super::Loaded(vec![1, 2]))
    }
}

/// The impl's own doc wins over the type's.
#[profile_target(name = "loaded.v2", factory = crate::factories::load)]
impl ProfileTarget for Loaded {
    target_body!();
}

mod reexport {
    pub use profiling_core as core_again;
}

/// Not this line.
#[derive(Default)]
struct Described<const N: usize>;

#[profile_target("described", description = "Given in the attribute.", crate = reexport::core_again)]
impl ProfileTarget for Described<4> {
    target_body!();
}

fn entry(name: &str) -> &'static TargetEntry {
    targets()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no target named {name}"))
}

fn main() {
    /// Defined in a function body.
    #[derive(Default)]
    struct Local;

    #[profile_target]
    impl ProfileTarget for Local {
        target_body!();
    }

    let local = entry("local");
    assert_eq!(local.doc, "Defined in a function body.");

    let nms = entry("nms-target");
    assert_eq!(nms.type_name, "NMSTarget");
    assert_eq!(nms.doc, "Built with `Default`.");
    assert_eq!(nms.constructor, "Default::default");

    let yolo = entry("yolo8-decode");
    assert_eq!(yolo.type_name, "targets_mod::Yolo8Decode");
    assert_eq!(yolo.doc, "In a module.");

    let threshold = entry("threshold");
    assert_eq!(threshold.constructor, "make_threshold");
    assert_eq!(threshold.doc, "");

    let loaded = entry("loaded.v2");
    assert_eq!(loaded.constructor, "crate::factories::load");
    assert_eq!(loaded.doc, "The impl's own doc wins over the type's.");

    let described = entry("described");
    assert_eq!(described.type_name, "Described<4>");
    assert_eq!(described.doc, "Given in the attribute.");

    let mut target = make_threshold();
    let prepared = target.prepare(&DataRecord::default(), Device::Cpu).unwrap();
    assert_eq!(target.run(&prepared).unwrap(), 1);
}
