//! The `video` source on videos FFmpeg makes here: frame N of the test
//! video has red N x 8, green 255 - N x 8 and blue N x 3 everywhere,
//! encoded losslessly, so every record's pixels say which frame it is.
//! Without FFmpeg (scripts/setup-ffmpeg installs it) the tests say so and
//! pass.

use std::path::{Path, PathBuf};
use std::process::Command;

use profiling_core::data::{self, DataError, DataSource};

fn ffmpeg_missing() -> bool {
    let works = |program: &str| {
        Command::new(program)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works("ffmpeg") && works("ffprobe") {
        return false;
    }
    eprintln!("skipped: ffmpeg and ffprobe are not installed (scripts/setup-ffmpeg installs them)");
    true
}

/// A lossless video of `frames` frames of 32x24 at 10 frames a second.
fn make_video(dir: &Path, frames: u32) -> PathBuf {
    let path = dir.join("counted.mkv");
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg(format!(
            "color=black:s=32x24:r=10:d={},format=gbrp,geq=r='N*8':g='255-N*8':b='N*3'",
            f64::from(frames) / 10.0
        ))
        .args(["-c:v", "ffv1", "-pix_fmt", "gbrp"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

fn source(yaml: &str) -> Result<Box<dyn DataSource>, DataError> {
    data::build("video", &serde_yaml::from_str(yaml).unwrap())
}

/// The frame a record's first pixel says it is.
fn frame_of(record: &data::DataRecord) -> u32 {
    let image = record.image().unwrap();
    let [r, g, b] = image.get_pixel(0, 0).0;
    let frame = u32::from(r) / 8;
    assert_eq!(
        [g, b],
        [255 - r, (frame * 3) as u8],
        "record {} holds a mixed frame",
        record.id
    );
    assert!(
        image.pixels().all(|p| p.0 == [r, g, b]),
        "record {}: one frame throughout",
        record.id
    );
    frame
}

#[test]
fn frames_from_start_by_stride_up_to_limit_are_the_records_in_order() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 30);
    let source = source(&format!(
        "{{path: {}, start: 3, stride: 4, limit: 5}}",
        video.display()
    ))
    .unwrap();
    assert_eq!(source.len(), 5);
    let records = source.read_all().unwrap();
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["frame-3", "frame-7", "frame-11", "frame-15", "frame-19"]
    );
    let frames: Vec<u32> = records.iter().map(frame_of).collect();
    assert_eq!(frames, [3, 7, 11, 15, 19]);
    assert_eq!(records[2].image().unwrap().dimensions(), (32, 24));
    assert_eq!(records[1].metadata["time_s"], serde_yaml::Value::from(0.7));
    assert_eq!(source.record_id(4).as_deref(), Some("frame-19"));
    assert_eq!(source.estimated_bytes().unwrap(), 5 * 32 * 24 * 3);
}

#[test]
fn without_a_limit_every_frame_in_range_is_read() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 30);
    let source = source(&format!(
        "{{path: {}, start: 20, stride: 3}}",
        video.display()
    ))
    .unwrap();
    // 20, 23, 26, 29.
    assert_eq!(source.len(), 4);
    let frames: Vec<u32> = source.read_all().unwrap().iter().map(frame_of).collect();
    assert_eq!(frames, [20, 23, 26, 29]);
}

#[test]
fn records_read_out_of_order_are_the_same_frames() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 20);
    let source = source(&format!("{{path: {}, stride: 2}}", video.display())).unwrap();
    // Forward past the next frame, back to an earlier one, then on in order.
    for (index, frame) in [(4, 8), (1, 2), (2, 4), (3, 6), (9, 18), (0, 0)] {
        assert_eq!(
            frame_of(&source.read(index).unwrap()),
            frame,
            "record {index}"
        );
    }
    let error = source.read(10).unwrap_err();
    assert!(
        matches!(error, DataError::OutOfRange { index: 10, len: 10 }),
        "{error}"
    );
}

#[test]
fn resize_scales_every_frame() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 5);
    let source = source(&format!("{{path: {}, resize: [16, 8]}}", video.display())).unwrap();
    let records = source.read_all().unwrap();
    assert_eq!(records.len(), 5);
    assert_eq!(records[4].image().unwrap().dimensions(), (16, 8));
    assert_eq!(frame_of(&records[4]), 4);
    assert_eq!(source.describe()["width"], serde_yaml::Value::from(16));
}

#[test]
fn pipeline_mode_can_only_be_read_lazily() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 5);
    let frames = source(&format!("{{path: {}}}", video.display())).unwrap();
    assert_eq!(frames.needs_lazy_loading(), None);
    let pipeline = source(&format!("{{path: {}, mode: pipeline}}", video.display())).unwrap();
    let reason = pipeline.needs_lazy_loading().unwrap();
    assert!(reason.contains("record_loading: lazy"), "{reason}");
    assert_eq!(frame_of(&pipeline.read(3).unwrap()), 3);
}

#[test]
fn a_file_that_is_not_a_video_is_refused_naming_it() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.mp4");
    std::fs::write(&text, "these are not frames\n".repeat(50)).unwrap();
    let error = source(&format!("{{path: {}}}", text.display()))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with(&format!(
            "data_source (video): {}: not a video FFmpeg can read (",
            text.display()
        )),
        "{error}"
    );
}

#[test]
fn a_start_past_the_last_frame_is_refused_as_no_frames_in_range() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 10);
    let error = source(&format!("{{path: {}, start: 10}}", video.display()))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        format!(
            "data_source.start: frame 10 is past the end of {}, which has 10 frame(s): no frames in range",
            video.display()
        )
    );
}

#[test]
fn bad_parameters_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone.mp4");
    let error = source(&format!("{{path: {}}}", missing.display()))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        format!("data_source.path: {} is not a file", missing.display())
    );
    let file = dir.path().join("any.mp4");
    std::fs::write(&file, b"x").unwrap();
    for (yaml, wanted) in [
        ("stride: 0", "data_source.stride: must be >= 1"),
        ("limit: 0", "data_source.limit: must be >= 1"),
        (
            "resize: [0, 10]",
            "data_source.resize: [0, 10]: width and height are 1 to 16384",
        ),
    ] {
        let error = source(&format!("{{path: {}, {yaml}}}", file.display()))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(error, wanted);
    }
    let error = source(&format!("{{path: {}, mode: stream}}", file.display()))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with("data_source.mode: unknown variant `stream`"),
        "{error}"
    );
}

#[test]
fn without_ffmpeg_the_error_says_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("any.mp4");
    std::fs::write(&file, b"x").unwrap();
    let error = source(&format!(
        "{{path: {}, ffmpeg: /nonexistent/bin/ffmpeg}}",
        file.display()
    ))
    .err()
    .unwrap()
    .to_string();
    assert_eq!(
        error,
        "data_source (video): the video source decodes with FFmpeg, and `/nonexistent/bin/ffprobe` was not found: install FFmpeg (scripts/setup-ffmpeg does, or Debian's `apt-get install ffmpeg`) or name its `ffmpeg` program with data_source.ffmpeg"
    );
}

#[test]
fn an_mp4s_frames_are_counted_from_its_header_and_all_decoded() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = dir.path().join("clip.mp4");
    let status = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=48x32:r=10:d=1.7",
        ])
        .args(["-c:v", "mpeg4", "-bf", "2"])
        .arg(&video)
        .status()
        .unwrap();
    assert!(status.success());
    let source = source(&format!("{{path: {}, stride: 4}}", video.display())).unwrap();
    assert_eq!(
        source.describe()["video_frames"],
        serde_yaml::Value::from(17)
    );
    let records = source.read_all().unwrap();
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["frame-0", "frame-4", "frame-8", "frame-12", "frame-16"]
    );
    assert_eq!(records[4].image().unwrap().dimensions(), (48, 32));
}

#[test]
fn shuffled_frames_are_each_the_frame_their_id_names() {
    if ffmpeg_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path(), 20);
    let source = source(&format!("{{path: {}}}", video.display())).unwrap();
    let selection: data::Selection = serde_yaml::from_str("shuffle: true").unwrap();
    let shuffled = data::select(source, &selection, 9).unwrap();
    let records = shuffled.read_all().unwrap();
    let ids: Vec<String> = (0..20).map(|i| shuffled.record_id(i).unwrap()).collect();
    assert_eq!(
        records.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        ids
    );
    assert_ne!(ids[0], "frame-0", "shuffled");
    for record in &records {
        assert_eq!(format!("frame-{}", frame_of(record)), record.id);
    }
    // Lazily, in the order asked.
    assert_eq!(
        format!("frame-{}", frame_of(&shuffled.read(7).unwrap())),
        ids[7]
    );
}
