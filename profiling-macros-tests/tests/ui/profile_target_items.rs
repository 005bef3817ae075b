// `#[profile_target]` on items other than `impl ProfileTarget for Concrete`.
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

#[profile_target]
#[derive(Default)]
struct NotAnImpl;

#[derive(Default, Clone)]
struct Smoke;

#[profile_target]
impl Smoke {
    fn new() -> Self {
        Smoke
    }
}

#[profile_target]
impl Clone for NotAnImpl {
    fn clone(&self) -> Self {
        NotAnImpl
    }
}

#[derive(Default)]
struct Generic<T>(T);

#[profile_target]
impl<T: Default> ProfileTarget for Generic<T> {
    target_body!();
}

#[derive(Default)]
struct Unsafe;

#[profile_target]
unsafe impl ProfileTarget for Unsafe {
    target_body!();
}

#[derive(Default)]
struct Excluded;

#[profile_target]
impl !ProfileTarget for Excluded {}

fn main() {
    let _ = Smoke::new();
}
