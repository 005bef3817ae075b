// Targets `#[profile_target]` cannot build: the errors point at the type or
// the factory and say what to change.
use profiling_core::{profile_target, DataRecord, Device, ProfileTarget};

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

struct NoDefault {
    threshold: f32,
}

#[profile_target]
impl ProfileTarget for NoDefault {
    target_body!();
}

struct WrongFactory;

fn make_wrong() -> anyhow::Result<u32> {
    Ok(3)
}

#[profile_target(factory = make_wrong)]
impl ProfileTarget for WrongFactory {
    target_body!();
}

struct NeedsArgument;

fn make_with(_threshold: f32) -> NeedsArgument {
    NeedsArgument
}

#[profile_target(factory = make_with)]
impl ProfileTarget for NeedsArgument {
    target_body!();
}

fn main() {
    let _ = NoDefault { threshold: 0.5 }.threshold;
}
