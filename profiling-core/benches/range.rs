//! The cost of an NVTX range with no tool attached: the guards of this
//! crate against a raw `nvtxRangePushA`/`nvtxRangePop` pair and the nvtx
//! crate's `LocalRange`.
//!
//! `cargo bench -p profiling-core --bench range`

use std::hint::black_box;

use profiling_core::nvtx::{profiling_range, profiling_range_if_cuda};
use profiling_core::{nvtx_range, Device};

fn main() {
    // The first NVTX call of a process initializes the loader (looking for
    // an injected tool); keep that one-off cost out of every measurement.
    drop(profiling_range(c"initialize"));
    divan::main();
}

#[divan::bench]
fn raw_push_pop_pair() {
    // SAFETY: a static C string; the pop closes the range just pushed.
    unsafe {
        nvtx::sys::ffi::nvtxRangePushA(c"decode_boxes".as_ptr());
        nvtx::sys::ffi::nvtxRangePop();
    }
}

#[divan::bench]
fn nvtx_crate_local_range() {
    let _range = nvtx::LocalRange::new(nvtx::Str::from_str_lossy(black_box("decode_boxes")));
}

#[divan::bench]
fn guard_c_string_literal() {
    let _range = profiling_range(c"decode_boxes");
}

#[divan::bench]
fn guard_str_literal() {
    // As written in code: the literal and its length are known where the
    // guard is inlined, so the NUL-terminated copy is a few fixed moves.
    let _range = profiling_range("decode_boxes");
}

#[divan::bench]
fn guard_str_opaque() {
    // A name the compiler cannot see through: the copy has a run-time length.
    let _range = profiling_range(black_box("decode_boxes"));
}

#[divan::bench]
fn guard_dynamic_string(bencher: divan::Bencher) {
    let stage = 7;
    bencher.bench_local(|| {
        let _range = profiling_range(format!("stage {}", black_box(stage)));
    });
}

#[divan::bench]
fn guard_if_cuda_on_cpu() {
    let _range = profiling_range_if_cuda(black_box("upload"), black_box(Device::Cpu));
}

/// Literal-named guards while a capture records them: each range is also
/// timed and logged for the manifest. 100 samples of 2,000 ranges stay
/// within a thread's event buffer (2^18 events), as a capture's ranges
/// mostly do; the bench below measures the ranges past it.
#[divan::bench(sample_count = 100, sample_size = 2000)]
fn guard_str_literal_recording(bencher: divan::Bencher) {
    // As the runner does after warmup: the buffer's pages touched ahead.
    let capture = profiling_core::timing::Capture::begin_expecting(
        profiling_core::timing::recorder::EVENTS_PER_THREAD,
    );
    bencher.bench_local(|| {
        let _range = profiling_range("decode_boxes");
    });
    drop(capture.end());
}

/// Literal-named guards while recording, once the thread's event buffer is
/// full: each range then goes to its name's exact aggregates and histogram.
/// Samples of 1,000 ranges: the first overflow allocates, the rest do not.
#[divan::bench(sample_size = 1000)]
fn guard_str_literal_recording_past_the_buffer(bencher: divan::Bencher) {
    let capture = profiling_core::timing::Capture::begin();
    for _ in 0..profiling_core::timing::recorder::EVENTS_PER_THREAD {
        drop(profiling_range("decode_boxes"));
    }
    bencher.bench_local(|| {
        let _range = profiling_range("decode_boxes");
    });
    drop(capture.end());
}

/// Dynamic names while recording: the name is interned once, then found by
/// its address.
#[divan::bench(sample_count = 100, sample_size = 1000)]
fn guard_dynamic_string_recording(bencher: divan::Bencher) {
    let capture = profiling_core::timing::Capture::begin_expecting(
        profiling_core::timing::recorder::EVENTS_PER_THREAD,
    );
    let stage = 7;
    bencher.bench_local(|| {
        let _range = profiling_range(format!("stage {}", black_box(stage)));
    });
    drop(capture.end());
}

#[nvtx_range]
#[inline(never)]
fn decode_boxes(x: u64) -> u64 {
    x.wrapping_mul(3)
}

#[divan::bench]
fn attribute_on_a_function() -> u64 {
    decode_boxes(black_box(7))
}

#[inline(never)]
fn decode_boxes_bare(x: u64) -> u64 {
    x.wrapping_mul(3)
}

#[divan::bench]
fn function_without_range() -> u64 {
    decode_boxes_bare(black_box(7))
}
