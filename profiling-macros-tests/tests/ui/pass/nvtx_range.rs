// Usages of `#[nvtx_range]` that must compile, warn about nothing, and
// behave as they would without the attribute.
#![deny(warnings)]

use std::fmt::Debug;
use std::num::ParseIntError;

use profiling_core::prelude::*;

/// Doc comments and other attributes stay on the function.
#[nvtx_range]
#[inline]
#[must_use]
pub fn doubled(x: u32) -> u32 {
    x * 2
}

#[nvtx_range("parse all")]
fn parse_all<'a, I>(items: I) -> Result<Vec<u32>, ParseIntError>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut out = Vec::new();
    for item in items {
        if item.is_empty() {
            return Ok(out);
        }
        out.push(item.trim().parse()?);
    }
    Ok(out)
}

#[nvtx_range(name = "describe")]
fn describe<T: Debug + ?Sized>(value: &T) -> String {
    #![allow(clippy::useless_format)]
    format!("{value:?}")
}

#[nvtx_range]
fn r#match((a, b): (u8, u8), mut rest: Vec<u8>, _: impl Sized) -> Vec<u8> {
    rest.push(a);
    rest.push(b);
    rest
}

#[nvtx_range]
fn evens(limit: u32) -> impl Iterator<Item = u32> {
    (0..limit).filter(|n| n % 2 == 0)
}

#[nvtx_range]
unsafe fn read(pointer: *const u32) -> u32 {
    *pointer
}

#[nvtx_range]
extern "C" fn from_c(x: i32) -> i32 {
    x + 1
}

#[nvtx_range(crate = ::profiling_core)]
fn with_crate_path() -> &'static str {
    "ok"
}

mod reexport {
    pub use profiling_core as core_again;
}

#[nvtx_range(crate = "reexport::core_again")]
fn with_crate_string() -> u8 {
    1
}

#[nvtx_range]
fn never_returns_normally(message: &str) -> ! {
    panic!("{message}")
}

struct Stage {
    device: Device,
    calls: u32,
}

impl Stage {
    #[nvtx_range(if_cuda = self.device)]
    fn run(&mut self, input: &[f32]) -> f32 {
        self.calls += 1;
        input.iter().sum()
    }

    #[nvtx_range(if_cuda = device)]
    fn upload(device: Device, input: Vec<f32>) -> (Device, usize) {
        (device, input.len())
    }

    #[nvtx_range("stage new", if_cuda = Device::Cpu)]
    fn new() -> Self {
        Stage {
            device: Device::Cpu,
            calls: 0,
        }
    }

    #[nvtx_range]
    fn consume(self) -> u32 {
        self.calls
    }
}

trait Decode {
    fn raw(&self) -> &[u8];

    #[nvtx_range]
    fn decode(&self) -> usize {
        let Some(first) = self.raw().first() else {
            return 0;
        };
        usize::from(*first)
    }
}

impl Decode for Stage {
    fn raw(&self) -> &[u8] {
        &[3, 4]
    }
}

fn main() {
    assert_eq!(doubled(21), 42);
    assert_eq!(parse_all(["1", " 2 "]), Ok(vec![1, 2]));
    assert_eq!(parse_all(["1", "", "x"]), Ok(vec![1]));
    assert!(parse_all(["x"]).is_err());
    assert_eq!(describe("hi"), "\"hi\"");
    assert_eq!(r#match((1, 2), vec![0], ()), vec![0, 1, 2]);
    assert_eq!(evens(5).collect::<Vec<_>>(), vec![0, 2, 4]);
    assert_eq!(unsafe { read(&7) }, 7);
    assert_eq!(from_c(1), 2);
    assert_eq!(with_crate_path(), "ok");
    assert_eq!(with_crate_string(), 1);
    std::panic::set_hook(Box::new(|_| {}));
    assert!(std::panic::catch_unwind(|| never_returns_normally("stop")).is_err());
    drop(std::panic::take_hook());

    let mut stage = Stage::new();
    assert_eq!(stage.run(&[1.0, 2.0]), 3.0);
    assert_eq!(
        Stage::upload(Device::Cuda(0), vec![1.0]),
        (Device::Cuda(0), 1)
    );
    assert_eq!(stage.decode(), 3);
    assert_eq!(stage.consume(), 1);
}
