//! Where a target runs. `Device` is the one word the config, the CLI, the
//! runner and targets use for it; the backends ([`crate::backend`]) convert
//! to and from their own devices, and wait for one.

use std::fmt;
use std::str::FromStr;

/// The device a run prepares and runs its records on.
///
/// Parsed from and displayed as `cpu`, `cuda` (shorthand for `cuda:0`) or
/// `cuda:N`.
///
/// ```
/// use profiling_core::prelude::*;
/// assert_eq!("cuda".parse::<Device>().unwrap(), Device::Cuda(0));
/// assert_eq!(Device::Cuda(1).to_string(), "cuda:1");
/// assert!("gpu".parse::<Device>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    #[default]
    Cpu,
    Cuda(usize),
}

impl Device {
    /// True for any CUDA device.
    #[inline]
    pub const fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

/// A device string that is not `cpu`, `cuda` or `cuda:N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device `{0}`: expected `cpu`, `cuda` or `cuda:N` (N a GPU index)")]
pub struct ParseDeviceError(pub String);

impl FromStr for Device {
    type Err = ParseDeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        match trimmed {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => trimmed
                .strip_prefix("cuda:")
                .filter(|index| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|index| index.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(|| ParseDeviceError(s.to_owned())),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(index) => write!(f, "cuda:{index}"),
        }
    }
}

impl serde::Serialize for Device {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Device {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Anything that says which device it is on: a [`Device`], and with the
/// `tch` feature a `tch::Device` or a tensor. [`crate::nvtx::profiling_range_if_cuda`]
/// takes any of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device: `if_cuda` and `profiling_range_if_cuda` take a `Device`",
    label = "expected a `Device` (or, with the `tch` feature, a `tch::Device` or a tensor)"
)]
pub trait DeviceKind {
    /// True for a CUDA device.
    fn is_cuda_device(&self) -> bool;
}

impl DeviceKind for Device {
    #[inline]
    fn is_cuda_device(&self) -> bool {
        self.is_cuda()
    }
}

impl<T: DeviceKind + ?Sized> DeviceKind for &T {
    #[inline]
    fn is_cuda_device(&self) -> bool {
        (**self).is_cuda_device()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling() {
        assert_eq!("cpu".parse(), Ok(Device::Cpu));
        assert_eq!("cuda".parse(), Ok(Device::Cuda(0)));
        assert_eq!("cuda:0".parse(), Ok(Device::Cuda(0)));
        assert_eq!("cuda:3".parse(), Ok(Device::Cuda(3)));
    }

    #[test]
    fn refuses_other_strings() {
        for bad in ["", "gpu", "cuda:", "cuda:-1", "cuda:x", "CPU", "cuda:1:2"] {
            assert_eq!(
                bad.parse::<Device>(),
                Err(ParseDeviceError(bad.to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn only_a_cuda_device_is_cuda() {
        assert!(!Device::Cpu.is_cuda_device());
        let by_reference: &Device = &Device::Cuda(1);
        assert!(DeviceKind::is_cuda_device(&by_reference));
    }

    #[test]
    fn display_round_trips() {
        for device in [Device::Cpu, Device::Cuda(0), Device::Cuda(7)] {
            assert_eq!(device.to_string().parse(), Ok(device));
        }
    }
}
