//! What the attributes expand to, observed from the outside: functions under
//! `#[nvtx_range]` behave as written, and `#[profile_target]` registers the
//! entries it describes.

use std::num::ParseIntError;

use profiling_core::driver::registry::{targets, TargetEntry};
use profiling_core::prelude::*;

// --- #[nvtx_range] --------------------------------------------------------

#[nvtx_range]
fn clamp_or_reject(value: i32, limit: i32) -> Option<i32> {
    if value < 0 {
        return None;
    }
    if value > limit {
        return Some(limit);
    }
    Some(value)
}

#[nvtx_range("sum parsed")]
fn sum_parsed(items: &[&str]) -> Result<i64, ParseIntError> {
    let mut total = 0;
    for item in items {
        total += item.parse::<i64>()?;
    }
    Ok(total)
}

struct Counter {
    device: Device,
    count: u32,
}

impl Counter {
    #[nvtx_range(if_cuda = self.device)]
    fn bump(&mut self, by: u32) -> u32 {
        self.count += by;
        self.count
    }
}

#[test]
fn early_return_returns_the_same_value() {
    assert_eq!(clamp_or_reject(-1, 10), None);
    assert_eq!(clamp_or_reject(12, 10), Some(10));
    assert_eq!(clamp_or_reject(7, 10), Some(7));
}

#[test]
fn question_mark_propagates_the_same_error() {
    assert_eq!(sum_parsed(&["1", "2", "39"]), Ok(42));
    let error = sum_parsed(&["1", "x"]).unwrap_err();
    assert_eq!(error, "x".parse::<i64>().unwrap_err());
}

#[test]
fn methods_keep_their_receiver() {
    for device in [Device::Cpu, Device::Cuda(0)] {
        let mut counter = Counter { device, count: 0 };
        assert_eq!(counter.bump(2), 2);
        assert_eq!(counter.bump(3), 5);
    }
}

// --- #[profile_target] ----------------------------------------------------

macro_rules! unit_target_body {
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

/// Decodes YOLOv8 boxes.
///
/// More detail that is not the description.
#[derive(Default)]
struct Yolo8Decode;

#[profile_target]
impl ProfileTarget for Yolo8Decode {
    unit_target_body!();
}

mod stages {
    /**
     * Suppresses overlapping boxes.
     */
    pub struct NMSTarget {
        pub iou: f32,
    }

    pub fn make_nms() -> anyhow::Result<NMSTarget> {
        Ok(NMSTarget { iou: 0.5 })
    }
}

#[profile_target(
    name = "nms",
    factory = stages::make_nms,
    config = "configs/nms.yaml",
    setup = "scripts/setup-nms"
)]
impl ProfileTarget for stages::NMSTarget {
    type Prepared = ();
    type Output = f32;

    fn prepare(&mut self, _: &DataRecord, _: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _: &()) -> anyhow::Result<f32> {
        Ok(self.iou)
    }

    fn summarize(&self, iou: &f32) -> profiling_core::target::Summary {
        profiling_core::target::Summary::from([("iou".to_owned(), f64::from(*iou).into())])
    }
}

mod nested {
    use super::*;

    struct Plain;

    fn plain() -> Plain {
        Plain
    }

    #[profile_target("plain-target", factory = plain)]
    impl ProfileTarget for Plain {
        unit_target_body!();
    }
}

fn entry(name: &str) -> &'static TargetEntry {
    targets()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no target named {name:?}"))
}

/// The line of the `impl` block for `type_name` in this file, 1-based.
fn impl_line(type_name: &str) -> u32 {
    let source = include_str!("expand.rs");
    let header = format!("impl ProfileTarget for {type_name} {{");
    let index = source
        .lines()
        .position(|line| line.trim_start().starts_with(&header))
        .unwrap_or_else(|| panic!("no `{header}` line in tests/expand.rs"));
    u32::try_from(index + 1).unwrap()
}

#[test]
fn default_name_is_the_kebab_case_of_the_type() {
    let target = entry("yolo8-decode");
    assert_eq!(target.type_name, "Yolo8Decode");
    assert_eq!(target.constructor, "Default::default");
}

#[test]
fn entry_records_where_the_impl_is() {
    let target = entry("yolo8-decode");
    assert!(target.file.ends_with("tests/expand.rs"), "{}", target.file);
    assert_eq!(target.line, impl_line("Yolo8Decode"));
    assert_eq!(target.module_path, "expand");
}

#[test]
fn doc_is_the_first_line_of_the_type_doc_comment() {
    assert_eq!(entry("yolo8-decode").doc, "Decodes YOLOv8 boxes.");
    assert_eq!(entry("nms").doc, "Suppresses overlapping boxes.");
    assert_eq!(entry("plain-target").doc, "");
}

#[test]
fn explicit_name_and_factory_are_recorded_as_written() {
    let target = entry("nms");
    assert_eq!(target.type_name, "stages::NMSTarget");
    assert_eq!(target.constructor, "stages::make_nms");
    assert_eq!(target.line, impl_line("stages::NMSTarget"));
    // The config from the crate's directory, made absolute at compile time.
    assert_eq!(
        target.config,
        Some(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/nms.yaml"))
    );
    assert_eq!(target.setup, Some("scripts/setup-nms"));
    assert_eq!(entry("plain-target").config, None);
}

#[test]
fn module_path_is_the_module_of_the_impl() {
    let target = entry("plain-target");
    assert_eq!(target.module_path, "expand::nested");
    assert_eq!(target.constructor, "plain");
    assert_eq!(target.line, impl_line("Plain"));
}

/// Takes batches: its impl block defines `prepare_batch`.
#[derive(Default)]
struct Batched;

#[profile_target(name = "batched")]
impl ProfileTarget for Batched {
    type Prepared = usize;
    type Output = usize;

    fn prepare(&mut self, _: &DataRecord, _: Device) -> anyhow::Result<usize> {
        Ok(1)
    }

    fn prepare_batch(&mut self, records: &[DataRecord], _: Device) -> anyhow::Result<usize> {
        Ok(records.len())
    }

    fn run(&mut self, records: &usize) -> anyhow::Result<usize> {
        Ok(*records)
    }
}

#[test]
fn takes_batches_says_whether_the_impl_defines_prepare_batch() {
    assert!(entry("batched").takes_batches);
    assert!(!entry("nms").takes_batches, "the default refuses batches");
    // Methods a macro writes cannot be seen: the default's own error
    // refuses batches when it is kept.
    assert!(entry("yolo8-decode").takes_batches);
}

/// Launches the registered entry as `profile-cli run` does.
fn launch(
    name: &str,
) -> Result<profiling_core::driver::runner::RunOutcome, profiling_core::driver::runner::RunError> {
    use profiling_core::driver::config::{ConfigFile, Overrides};
    use profiling_core::driver::runner::{Records, RunPlan};
    let config = ConfigFile::parse(&format!("target: {{name: {name}}}"), None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = profiling_core::data::build("dummy", &config.data_source.parameters).unwrap();
    let plan = RunPlan::new(config, Records::Unread(source));
    (entry(name).launch)(&plan)
}

#[test]
fn factory_results_build_the_target() {
    let outcome = launch("nms").expect("the factory's Ok builds the target");
    assert_eq!(outcome.completed_iterations, 1);
    // The target the factory made, not a default one, ran.
    assert_eq!(outcome.output_summaries[0].summary["iou"], 0.5);
}
