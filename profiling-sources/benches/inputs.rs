//! Reading real inputs side by side with the plain reading of the same
//! bytes: recorded tensors against reading their files whole (what `cat`
//! does), and video frames against FFmpeg decoding the same file to
//! nothing (`ffmpeg -f null`). Before the benches, the peak of the heap
//! during one lazy pass over the tensors is measured and printed.
//!
//! `cargo bench -p profiling-sources --bench inputs`
//!
//! The files are made once under `BENCH_INPUTS_DIR` (default: a folder in
//! the system's temporary directory): 200 `.npy` files of 8400 x 84
//! float32 (565 MB, a detector's raw outputs for 200 images) and a 10 s
//! 720p H.264 video at 30 frames a second (made by FFmpeg; without FFmpeg
//! the video benches say so and measure nothing).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use divan::counter::BytesCount;
use profiling_core::data::{self, DataSource};
use profiling_sources as _;

/// The system allocator, with the live bytes and their peak counted.
struct Peak;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call goes to `System` unchanged; the counters are atomics.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Peak = Peak;

const RECORDS: usize = 200;
const ROWS: usize = 8400;
const COLUMNS: usize = 84;
const RECORD_BYTES: usize = ROWS * COLUMNS * 4;

fn dir() -> PathBuf {
    std::env::var_os("BENCH_INPUTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("profiling-bench-inputs"))
}

/// The 200 `.npy` files, written once.
fn tensor_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = dir().join("outputs");
        std::fs::create_dir_all(&dir).unwrap();
        let mut header =
            format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({ROWS}, {COLUMNS}), }}");
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        for index in 0..RECORDS {
            let path = dir.join(format!("image-{index:03}.npy"));
            if std::fs::metadata(&path).is_ok_and(|m| m.len() as usize > RECORD_BYTES) {
                continue;
            }
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
            bytes.extend_from_slice(header.as_bytes());
            bytes.extend(
                (0..ROWS * COLUMNS).flat_map(|i| ((i + index) as f32 / 97.0).to_le_bytes()),
            );
            std::fs::write(&path, bytes).unwrap();
        }
        dir
    })
}

fn tensor_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(tensor_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn tensor_source() -> Box<dyn DataSource> {
    let parameters =
        serde_yaml::from_str(&format!("{{directory: '{}'}}", tensor_dir().display())).unwrap();
    data::build("tensors", &parameters).unwrap()
}

fn main() {
    // One lazy pass: each record read, used and dropped before the next.
    let source = tensor_source();
    let baseline = LIVE.load(Ordering::Relaxed);
    PEAK.store(baseline, Ordering::Relaxed);
    for index in 0..source.len() {
        black_box(source.read(index).unwrap());
    }
    let peak = PEAK.load(Ordering::Relaxed) - baseline;
    println!(
        "lazy pass over {} records of {:.1} MB ({:.0} MB in all): heap peak {:.1} MB, {:.2} records",
        source.len(),
        RECORD_BYTES as f64 / 1e6,
        (RECORD_BYTES * RECORDS) as f64 / 1e6,
        peak as f64 / 1e6,
        peak as f64 / RECORD_BYTES as f64
    );
    divan::main();
}

/// Every file read whole into one reused buffer and dropped: what `cat`
/// to `/dev/null` costs, from the page cache.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn tensors_plain_read(bencher: divan::Bencher) {
    let files = tensor_files();
    let total: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
    let mut buffer = vec![0u8; 1 << 20];
    bencher.counter(BytesCount::new(total)).bench_local(|| {
        for path in &files {
            let mut file = std::fs::File::open(path).unwrap();
            while file.read(&mut buffer).unwrap() > 0 {}
        }
        black_box(&buffer);
    });
}

/// The `tensors` source read eagerly: every file to its record.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn tensors_eager(bencher: divan::Bencher) {
    let source = tensor_source();
    let total = (RECORD_BYTES * RECORDS) as u64;
    bencher
        .counter(BytesCount::new(total))
        .bench(|| black_box(source.read_all().unwrap()));
}

/// The 720p video, made once; `None` without FFmpeg.
fn video() -> Option<&'static Path> {
    static VIDEO: OnceLock<Option<PathBuf>> = OnceLock::new();
    VIDEO
        .get_or_init(|| {
            let path = dir().join("clip-720p.mp4");
            if path.is_file() {
                return Some(path);
            }
            std::fs::create_dir_all(dir()).unwrap();
            let made = Command::new("ffmpeg")
                .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
                .arg("testsrc2=s=1280x720:r=30:d=10")
                .args(["-c:v", "libx264", "-preset", "medium", "-pix_fmt", "yuv420p"])
                .arg(&path)
                .status()
                .is_ok_and(|s| s.success());
            if !made {
                eprintln!("no video benches: ffmpeg could not make the clip (scripts/setup-ffmpeg installs it)");
            }
            made.then_some(path)
        })
        .as_deref()
}

fn ffmpeg_null(video: &Path, rgb: bool) {
    let mut command = Command::new("ffmpeg");
    command.args(["-nostdin", "-v", "error", "-i"]).arg(video);
    if rgb {
        command.args(["-pix_fmt", "rgb24"]);
    }
    let status = command
        .args(["-f", "null", "-"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// `ffmpeg -i clip.mp4 -f null -`: decoding alone.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn video_ffmpeg_null(bencher: divan::Bencher) {
    let Some(video) = video() else { return };
    bencher.bench(|| ffmpeg_null(video, false));
}

/// `ffmpeg -i clip.mp4 -pix_fmt rgb24 -f null -`: decoding and the
/// conversion to RGB the source's frames need.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn video_ffmpeg_null_rgb(bencher: divan::Bencher) {
    let Some(video) = video() else { return };
    bencher.bench(|| ffmpeg_null(video, true));
}

/// The `video` source in frame mode: probed, then every frame read as a
/// record, as an eager run does.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn video_frames(bencher: divan::Bencher) {
    let Some(video) = video() else { return };
    let parameters = serde_yaml::from_str(&format!("{{path: '{}'}}", video.display())).unwrap();
    bencher.bench(|| {
        let source = data::build("video", &parameters).unwrap();
        let records = source.read_all().unwrap();
        assert_eq!(records.len(), 300);
        black_box(records)
    });
}

/// The same, the source built (the video probed) before the timing: the
/// frames alone, as an eager run's `read_ns` counts them.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn video_frames_read(bencher: divan::Bencher) {
    let Some(video) = video() else { return };
    let parameters = serde_yaml::from_str(&format!("{{path: '{}'}}", video.display())).unwrap();
    let source = data::build("video", &parameters).unwrap();
    bencher.bench(|| black_box(source.read_all().unwrap()));
}
