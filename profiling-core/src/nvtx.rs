//! NVTX ranges: the markers Nsight Systems shows and captures on.
//!
//! A range is a push/pop pair on the calling thread's NVTX stack, held open by
//! a [`RangeGuard`]. With no tool attached each call is a load and a branch in
//! the NVTX loader, so a guard with a literal name costs what a raw
//! `nvtxRangePushA`/`nvtxRangePop` pair costs: names are handed to NVTX
//! straight from a C string or a stack copy, never through an allocation.

use std::ffi::{c_char, CStr, CString};
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::device::DeviceKind;
use nvtx::sys::ffi;

/// Names at most this long (in bytes) are copied to the stack to add the NUL
/// that NVTX needs; longer ones go through one allocation.
const STACK_NAME_CAPACITY: usize = 255;

/// The name of a range: a C string (free), a `&str` or a `String`.
///
/// Built by `From`, so [`profiling_range`] takes any of them.
#[derive(Debug, Clone)]
pub enum RangeName<'a> {
    /// Already NUL-terminated: handed to NVTX as is.
    CStr(&'a CStr),
    /// Copied to the stack with a NUL added (the heap only past 255 bytes).
    Str(&'a str),
    /// An owned name, treated like `Str`.
    Owned(String),
}

impl<'a> From<&'a CStr> for RangeName<'a> {
    #[inline]
    fn from(name: &'a CStr) -> Self {
        RangeName::CStr(name)
    }
}

impl<'a> From<&'a str> for RangeName<'a> {
    #[inline]
    fn from(name: &'a str) -> Self {
        RangeName::Str(name)
    }
}

impl<'a> From<&'a String> for RangeName<'a> {
    #[inline]
    fn from(name: &'a String) -> Self {
        RangeName::Str(name.as_str())
    }
}

impl From<String> for RangeName<'_> {
    #[inline]
    fn from(name: String) -> Self {
        RangeName::Owned(name)
    }
}

impl RangeName<'_> {
    /// The name as text, for messages and records; a C string that is not
    /// UTF-8 is shown lossily.
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        match self {
            RangeName::CStr(name) => name.to_string_lossy(),
            RangeName::Str(name) => std::borrow::Cow::Borrowed(name),
            RangeName::Owned(name) => std::borrow::Cow::Borrowed(name.as_str()),
        }
    }

    #[inline(always)]
    fn push(&self) {
        match self {
            RangeName::CStr(name) => push_cstr(name),
            RangeName::Str(name) => push_str(name),
            RangeName::Owned(name) => push_str(name),
        }
    }

    /// The name's bytes, without a NUL.
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        match self {
            RangeName::CStr(name) => name.to_bytes(),
            RangeName::Str(name) => name.as_bytes(),
            RangeName::Owned(name) => name.as_bytes(),
        }
    }
}

#[inline]
fn push_cstr(name: &CStr) {
    // SAFETY: `name` is a valid NUL-terminated string for the whole call;
    // NVTX (and any tool behind it) copies what it keeps.
    unsafe {
        ffi::nvtxRangePushA(name.as_ptr());
    }
}

#[inline(always)]
fn push_str(name: &str) {
    let bytes = name.as_bytes();
    if bytes.len() <= STACK_NAME_CAPACITY {
        let mut buffer = [MaybeUninit::<u8>::uninit(); STACK_NAME_CAPACITY + 1];
        // SAFETY: `bytes.len() + 1 <= buffer.len()`; the copy and the NUL
        // initialise exactly the bytes NVTX reads. A NUL inside the name ends
        // it early, as it would in C: the read never passes our NUL.
        unsafe {
            let start = buffer.as_mut_ptr().cast::<u8>();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), start, bytes.len());
            start.add(bytes.len()).write(0);
            ffi::nvtxRangePushA(start.cast::<c_char>());
        }
    } else {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let owned = CString::new(&bytes[..end]).unwrap_or_default();
        push_cstr(&owned);
    }
}

/// An open NVTX range; dropping it closes the range.
///
/// While a capture is open, the range is also recorded (start and end on
/// the host clock) for the run's timings.
///
/// Not `Send`: push/pop ranges belong to the thread that opened them.
#[must_use = "the range closes as soon as the guard is dropped; bind it with `let _range = ...`"]
#[derive(Debug)]
pub struct RangeGuard {
    recorded: bool,
    _thread_bound: PhantomData<*const ()>,
}

impl Drop for RangeGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.recorded {
            crate::timing::recorder::close();
        }
        // SAFETY: pops the range this guard pushed on this same thread.
        unsafe {
            ffi::nvtxRangePop();
        }
    }
}

/// A range the runner opens around the capture and each pass: seen by
/// NVTX, never recorded as one of the target's ranges.
pub(crate) struct PassRange {
    _thread_bound: PhantomData<*const ()>,
}

impl PassRange {
    #[inline]
    pub(crate) fn open(name: &CStr) -> PassRange {
        push_cstr(name);
        PassRange {
            _thread_bound: PhantomData,
        }
    }
}

impl Drop for PassRange {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: pops the range `open` pushed on this same thread.
        unsafe {
            ffi::nvtxRangePop();
        }
    }
}

/// Opens an NVTX range named `name` on this thread until the guard drops.
///
/// ```
/// use profiling_core::prelude::*;
///
/// fn decode(raw: &[f32]) -> f32 {
///     let _range = profiling_range("decode");
///     raw.iter().sum()
/// }
/// let stage = 3;
/// let _outer = profiling_range(format!("stage {stage}"));
/// assert_eq!(decode(&[1.0, 2.0]), 3.0);
/// ```
#[inline(always)]
pub fn profiling_range<'a>(name: impl Into<RangeName<'a>>) -> RangeGuard {
    let name = name.into();
    name.push();
    RangeGuard {
        recorded: crate::timing::recorder::open(name.bytes()),
        _thread_bound: PhantomData,
    }
}

/// Opens a range only when `device` is a CUDA device, for operations whose
/// host time matters only as the launch side of GPU work. `device` is a
/// [`crate::Device`], or with the `tch` feature a `tch::Device` or a tensor.
///
/// ```
/// use profiling_core::prelude::*;
/// assert!(profiling_range_if_cuda("upload", Device::Cpu).is_none());
/// ```
#[inline]
pub fn profiling_range_if_cuda<'a>(
    name: impl Into<RangeName<'a>>,
    device: impl DeviceKind,
) -> Option<RangeGuard> {
    if device.is_cuda_device() {
        Some(profiling_range(name))
    } else {
        None
    }
}
