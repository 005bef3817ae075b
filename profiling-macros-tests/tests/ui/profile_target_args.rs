// `#[profile_target(...)]` arguments that are refused where they are written.
use profiling_core::{profile_target, DataRecord, Device, ProfileTarget};

macro_rules! target {
    ($ty:ident) => {
        #[derive(Default)]
        struct $ty;
    };
}

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

target!(Spaced);
#[profile_target("my profile")]
impl ProfileTarget for Spaced {
    target_body!();
}

target!(Dashed);
#[profile_target(name = "-smoke")]
impl ProfileTarget for Dashed {
    target_body!();
}

target!(Empty);
#[profile_target("")]
impl ProfileTarget for Empty {
    target_body!();
}

target!(Données);
#[profile_target]
impl ProfileTarget for Données {
    target_body!();
}

target!(Borrowed);
#[profile_target]
impl ProfileTarget for &'static Borrowed {
    target_body!();
}

target!(Number);
#[profile_target(name = 7)]
impl ProfileTarget for Number {
    target_body!();
}

target!(Twice);
#[profile_target("smoke", name = "smoke-2")]
impl ProfileTarget for Twice {
    target_body!();
}

target!(Unknown);
#[profile_target(label = "smoke")]
impl ProfileTarget for Unknown {
    target_body!();
}

fn make_quoted() -> Quoted {
    Quoted
}
target!(Quoted);
#[profile_target(factory = "make_quoted")]
impl ProfileTarget for Quoted {
    target_body!();
}

fn make_called() -> Called {
    Called
}
target!(Called);
#[profile_target(factory = make_called())]
impl ProfileTarget for Called {
    target_body!();
}

target!(Closure);
#[profile_target(factory = || Closure)]
impl ProfileTarget for Closure {
    target_body!();
}

target!(AbsoluteConfig);
#[profile_target(config = "/etc/config.yaml")]
impl ProfileTarget for AbsoluteConfig {
    target_body!();
}

target!(NumberConfig);
#[profile_target(config = 3, setup = "scripts/setup-data")]
impl ProfileTarget for NumberConfig {
    target_body!();
}

fn main() {}
