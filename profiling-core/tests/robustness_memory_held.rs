//! What eager loading holds, measured with a counting allocator: records
//! hold no more than `RECORD_OVERHEAD_BYTES` beyond their decoded data, and
//! `read_all` never holds more than the estimate of the check at once. The
//! tests of this binary take turns, so that none allocates while another
//! counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Mutex;

use profiling_core::data::{self, DataSource, RECORD_OVERHEAD_BYTES};
// The images source reads the files.
use profiling_sources as _;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

/// Held by each test while it counts.
static COUNTING: Mutex<()> = Mutex::new(());

fn add(bytes: isize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Growing a buffer is how a peak is often reached: it counts too.
        add(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes held by the records of one pass beyond their decoded data, per
/// record.
fn overhead_per_record(source: &dyn DataSource) -> u64 {
    let before = LIVE.load(Ordering::SeqCst);
    let records = source.read_all().unwrap();
    let held = (LIVE.load(Ordering::SeqCst) - before) as u64;
    let decoded: u64 = records.iter().map(|r| r.decoded_bytes() as u64).sum();
    let per_record = (held - decoded) / records.len() as u64;
    drop(records);
    per_record
}

fn build(name: &str, yaml: &str) -> Box<dyn DataSource> {
    let parameters: serde_yaml::Mapping = serde_yaml::from_str(yaml).unwrap();
    data::build(name, &parameters).unwrap()
}

#[test]
fn records_hold_less_than_the_overhead_allowed_beyond_their_data() {
    let _turn = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let long_name = "a-rather-long-image-file-name-as-datasets-have-them-000001.png";
    image::RgbImage::new(4, 4)
        .save(dir.path().join(long_name))
        .unwrap();
    image::RgbImage::new(2, 2)
        .save(dir.path().join("b.png"))
        .unwrap();
    // Decoding runs on the rayon pool: start it first so that its threads'
    // own allocations are not counted.
    rayon::broadcast(|_| ());
    let sources = [
        build("dummy", "{record_count: 500}"),
        build("dummy", "{record_count: 500, include_image: false}"),
        build(
            "images",
            &format!("{{directory: {}, repeat: 500}}", dir.path().display()),
        ),
        build(
            "images",
            &format!(
                "{{directory: {}, repeat: 500, decode: false}}",
                dir.path().display()
            ),
        ),
    ];
    for source in &sources {
        let overhead = overhead_per_record(&**source);
        eprintln!("{}: {overhead} bytes per record", source.name());
        assert!(
            overhead <= RECORD_OVERHEAD_BYTES,
            "{}: {overhead} bytes per record",
            source.name()
        );
    }
}

#[test]
fn eager_images_are_held_once_each() {
    let _turn = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    for i in 0..8 {
        image::RgbImage::from_pixel(200, 100, image::Rgb([i * 30, 0, 0]))
            .save(dir.path().join(format!("{i}.png")))
            .unwrap();
    }
    rayon::broadcast(|_| ());
    let image_bytes = 200 * 100 * 3;
    for yaml in ["{directory: DIR}", "{directory: DIR, repeat: 20}"] {
        let yaml = yaml.replace("DIR", &dir.path().display().to_string());
        let source = build("images", &yaml);
        let allowed = data::eager_bytes(&*source).unwrap();
        let before = LIVE.load(Ordering::SeqCst);
        PEAK.store(before, Ordering::SeqCst);
        let records = source.read_all().unwrap();
        let peak = (PEAK.load(Ordering::SeqCst) - before) as u64;
        drop(records);
        // Decoding holds a few images more for a moment, one or two per
        // thread; holding every image twice would exceed this by far.
        let transient = 4 * image_bytes;
        assert!(
            peak <= allowed + transient,
            "{yaml}: {peak} bytes at the peak, {allowed} estimated"
        );
    }
}

#[test]
fn the_peak_sees_a_buffer_grown_by_realloc() {
    let _turn = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let mut buffer: Vec<u8> = Vec::with_capacity(1);
    // One push at a time: the buffer grows by realloc, doubling.
    #[allow(clippy::same_item_push)]
    for _ in 0..(1 << 20) {
        buffer.push(1);
    }
    let grown = buffer.capacity() as isize;
    drop(std::hint::black_box(buffer));
    // Other threads (the harness's) may free a few bytes meanwhile.
    let slack = 4096;
    assert!(
        PEAK.load(Ordering::SeqCst) - before >= grown - slack,
        "the peak missed the {grown} bytes the buffer grew to"
    );
}
