//! The `video` source: a video's frames as records, decoded by FFmpeg.
//!
//! FFmpeg runs as a program (`ffprobe` once to learn the stream, `ffmpeg`
//! to decode), its frames read as raw RGB from a pipe straight into each
//! record's image. A program rather than bindings to FFmpeg's libraries:
//! nothing is linked, so the default build needs no FFmpeg headers and no
//! bindgen, any FFmpeg from 5.1 on works, and a broken file fails in
//! another process, never in this one.
//!
//! Records are the frames `start`, `start + stride`, ... (at most `limit`
//! of them), ids `frame-<n>` with `n` the frame's index in the video,
//! optionally resized (`resize: [width, height]`). One decoder streams
//! them in order: reading the next record reads the next frame from the
//! pipe, a later one skips forward, an earlier one starts the decoder
//! again from there. In `frames` mode they are read like any eager source's
//! records; in `pipeline` mode the run loads lazily and every read opens the
//! range `video_decode` (and, when the decoder starts, `video_open` inside
//! it), so a video pipeline's reading is measured with the rest of a pass.
//! FFmpeg decodes in a process of its own, ahead of the reads, into the
//! pipe: `video_decode` is the time a pass waits for the next decoded frame
//! and copies it in, not the cost of decoding it in this process (on a busy
//! machine, or a decoder slower than the pass, the two come close; on an
//! idle one with a fast decoder, `video_decode` is mostly the copy).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_yaml::Value;

use profiling_core::data::{DataError, DataRecord, RecordSource};
use profiling_core::yaml::check_literal_path;

/// Parameters of the video source as the config writes them; see the
/// module docs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoParameters {
    /// The video file.
    pub path: PathBuf,
    /// The first frame to read (0 is the first of the video).
    #[serde(default)]
    pub start: u64,
    /// Read every `stride`-th frame from `start` on.
    #[serde(default = "one")]
    pub stride: u64,
    /// Read at most this many frames.
    pub limit: Option<usize>,
    /// Scale every frame to `[width, height]`.
    pub resize: Option<[u32; 2]>,
    /// `frames` (decoded before the passes) or `pipeline` (read inside each
    /// pass under the range `video_decode`: the wait for a frame that FFmpeg
    /// decodes ahead in a process of its own, and its copy; not the cost of
    /// decoding it in this process).
    #[serde(default)]
    pub mode: VideoMode,
    /// The `ffmpeg` program to run (`ffprobe` is looked for beside it);
    /// by default the one on PATH.
    pub ffmpeg: Option<PathBuf>,
}

fn one() -> u64 {
    1
}

/// When a video's frames are decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VideoMode {
    /// Before the passes, like eager images.
    #[default]
    Frames,
    /// Inside each pass, under the range `video_decode`: read from the
    /// pipe FFmpeg fills ahead in its own process.
    Pipeline,
}

impl VideoMode {
    fn name(self) -> &'static str {
        match self {
            VideoMode::Frames => "frames",
            VideoMode::Pipeline => "pipeline",
        }
    }
}

/// What `ffprobe` says of a video's first video stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoInfo {
    pub codec: String,
    pub width: u32,
    pub height: u32,
    /// Frames in the stream, as its packets count them.
    pub frames: u64,
    /// Frames per second as a fraction (`30000/1001`), when known.
    pub frame_rate: Option<(u64, u64)>,
}

/// The largest frame side accepted: FFmpeg's own limit is 16384.
const MAX_SIDE: u32 = 16384;

/// Parses what `ffprobe -show_entries stream=... -of default=noprint_wrappers=1`
/// prints for one stream (`key=value` lines) into a [`VideoInfo`]; the
/// error says which key is missing or wrong. What the fuzz target drives.
pub fn parse_probe(text: &str) -> Result<VideoInfo, String> {
    let mut keys: BTreeMap<&str, &str> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        // A second stream's keys (ffprobe prints one block per stream):
        // the first block is the one asked for.
        if let Some((key, value)) = line.split_once('=') {
            keys.entry(key.trim()).or_insert(value.trim());
        }
    }
    if keys.is_empty() {
        return Err("holds no video stream".to_owned());
    }
    let number = |key: &str| -> Result<u64, String> {
        let value = keys
            .get(key)
            .ok_or_else(|| format!("ffprobe gave no `{key}` for its video stream"))?;
        value
            .parse::<u64>()
            .map_err(|_| format!("ffprobe gave `{key}={value}`, not a count"))
    };
    let side = |key: &str| -> Result<u32, String> {
        let value = number(key)?;
        match u32::try_from(value) {
            Ok(side) if (1..=MAX_SIDE).contains(&side) => Ok(side),
            _ => Err(format!(
                "its video stream's {key} is {value}: a frame side is 1 to {MAX_SIDE}"
            )),
        }
    };
    let frame_rate = keys.get("r_frame_rate").and_then(|rate| {
        let (numerator, denominator) = rate.split_once('/')?;
        let numerator: u64 = numerator.parse().ok()?;
        let denominator: u64 = denominator.parse().ok()?;
        (numerator > 0 && denominator > 0).then_some((numerator, denominator))
    });
    // Counted packets when ffprobe counted them; else the container's own
    // count of frames, which MP4 and MOV keep in their header.
    let frames = if keys.contains_key("nb_read_packets") {
        number("nb_read_packets")?
    } else {
        number("nb_frames")?
    };
    Ok(VideoInfo {
        codec: keys.get("codec_name").unwrap_or(&"unknown").to_string(),
        width: side("width")?,
        height: side("height")?,
        frames,
        frame_rate,
    })
}

/// A video's frames; see the module docs.
pub struct VideoSource {
    path: PathBuf,
    ffmpeg: PathBuf,
    info: VideoInfo,
    start: u64,
    stride: u64,
    count: usize,
    /// The frames' size as decoded (after `resize`).
    size: (u32, u32),
    resize: Option<[u32; 2]>,
    mode: VideoMode,
    decoder: Mutex<Option<Decoder>>,
}

fn parameter_error(key: &str, message: impl Into<String>) -> DataError {
    DataError::Parameter {
        key: key.to_owned(),
        message: message.into(),
    }
}

fn source_error(record: Option<usize>, message: impl Into<String>) -> DataError {
    DataError::Source {
        source_name: "video".to_owned(),
        record,
        message: message.into(),
    }
}

/// Why FFmpeg's program `program` could not be started.
fn not_started(program: &Path, error: &std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::NotFound {
        format!(
            "the video source decodes with FFmpeg, and `{}` was not found: install FFmpeg (scripts/setup-ffmpeg does, or Debian's `apt-get install ffmpeg`) or name its `ffmpeg` program with data_source.ffmpeg",
            program.display()
        )
    } else {
        format!("cannot run `{}`: {error}", program.display())
    }
}

/// `ffprobe` beside `ffmpeg` (on PATH when `ffmpeg` is a bare name).
fn ffprobe_for(ffmpeg: &Path) -> PathBuf {
    match ffmpeg.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join("ffprobe"),
        _ => PathBuf::from("ffprobe"),
    }
}

/// What `ffprobe` says of `path`'s first video stream: the frame count of
/// the container's header where it has one, else its packets counted
/// (which reads the whole file, without decoding it).
fn probe(ffmpeg: &Path, path: &Path) -> Result<VideoInfo, DataError> {
    let from_header = probe_with(ffmpeg, path, false)?;
    match parse_probe(&from_header) {
        Ok(info) => Ok(info),
        Err(_) => parse_probe(&probe_with(ffmpeg, path, true)?)
            .map_err(|message| source_error(None, format!("{}: {message}", path.display()))),
    }
}

/// What `ffprobe` prints of `path`'s first video stream, its packets
/// counted when `count`.
fn probe_with(ffmpeg: &Path, path: &Path, count: bool) -> Result<String, DataError> {
    let ffprobe = ffprobe_for(ffmpeg);
    let mut command = Command::new(&ffprobe);
    command.args(["-v", "error", "-select_streams", "v:0"]);
    if count {
        command.arg("-count_packets");
    }
    let output = command
        .args([
            "-show_entries",
            if count {
                "stream=codec_name,width,height,r_frame_rate,nb_read_packets"
            } else {
                "stream=codec_name,width,height,r_frame_rate,nb_frames"
            },
            "-of",
            "default=noprint_wrappers=1",
        ])
        .arg(input_url(path))
        .stdin(Stdio::null())
        .output()
        .map_err(|error| source_error(None, not_started(&ffprobe, &error)))?;
    let in_file = |message: &str| source_error(None, format!("{}: {message}", path.display()));
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim();
        return Err(in_file(&format!(
            "not a video FFmpeg can read ({})",
            if said.is_empty() {
                format!("ffprobe ended with {}", output.status)
            } else {
                last_lines(said, 3)
            }
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `path` as FFmpeg reads an input that can be nothing else: `file:` and
/// the absolute path. A bare `-report` would be an option, and `a:b.mp4`
/// a protocol.
fn input_url(path: &Path) -> std::ffi::OsString {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut url = std::ffi::OsString::from("file:");
    url.push(absolute.as_os_str());
    url
}

/// The last `n` lines of `text`, joined with `; `.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("; ")
}

impl VideoSource {
    /// Checks the parameters and probes the video; decodes nothing.
    pub fn from_parsed(params: VideoParameters) -> Result<VideoSource, DataError> {
        check_literal_path(&params.path.to_string_lossy())
            .map_err(|m| parameter_error("path", m))?;
        if !params.path.is_file() {
            return Err(parameter_error(
                "path",
                format!("{} is not a file", params.path.display()),
            ));
        }
        if params.stride == 0 {
            return Err(parameter_error("stride", "must be >= 1"));
        }
        if params.limit == Some(0) {
            return Err(parameter_error("limit", "must be >= 1"));
        }
        if let Some([width, height]) = params.resize {
            if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
                return Err(parameter_error(
                    "resize",
                    format!("[{width}, {height}]: width and height are 1 to {MAX_SIDE}"),
                ));
            }
        }
        let ffmpeg = params.ffmpeg.unwrap_or_else(|| PathBuf::from("ffmpeg"));
        let info = probe(&ffmpeg, &params.path)?;
        if params.start >= info.frames {
            return Err(parameter_error(
                "start",
                format!(
                    "frame {} is past the end of {}, which has {} frame(s): no frames in range",
                    params.start,
                    params.path.display(),
                    info.frames
                ),
            ));
        }
        let in_range = (info.frames - params.start).div_ceil(params.stride);
        let count = usize::try_from(in_range)
            .unwrap_or(usize::MAX)
            .min(params.limit.unwrap_or(usize::MAX));
        let size = match params.resize {
            Some([width, height]) => (width, height),
            None => (info.width, info.height),
        };
        Ok(VideoSource {
            path: params.path,
            ffmpeg,
            info,
            start: params.start,
            stride: params.stride,
            count,
            size,
            resize: params.resize,
            mode: params.mode,
            decoder: Mutex::new(None),
        })
    }

    /// The frame of the video record `index` is.
    fn frame(&self, index: usize) -> u64 {
        self.start + index as u64 * self.stride
    }

    fn frame_bytes(&self) -> usize {
        self.size.0 as usize * self.size.1 as usize * 3
    }

    /// A decoder whose next frame is record `index`'s.
    fn start_decoder(&self, index: usize) -> Result<Decoder, DataError> {
        let _range = (self.mode == VideoMode::Pipeline)
            .then(|| profiling_core::nvtx::profiling_range("video_open"));
        let first = self.frame(index);
        let mut filters = Vec::new();
        if first > 0 || self.stride > 1 {
            // Commas inside a filter's expression are escaped: a bare one
            // would start the next filter.
            filters.push(format!(
                "select=gte(n\\,{first})*not(mod(n-{}\\,{}))",
                self.start, self.stride
            ));
        }
        if let Some([width, height]) = self.resize {
            filters.push(format!("scale={width}:{height}"));
        }
        let mut command = Command::new(&self.ffmpeg);
        command
            .args(["-nostdin", "-v", "error", "-noautorotate", "-i"])
            .arg(input_url(&self.path))
            .args(["-map", "0:v:0", "-an", "-sn", "-dn"]);
        if !filters.is_empty() {
            command.arg("-vf").arg(filters.join(","));
        }
        command
            .args(["-fps_mode", "passthrough", "-frames:v"])
            .arg((self.count - index).to_string())
            .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|error| source_error(Some(index), not_started(&self.ffmpeg, &error)))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        widen_pipe(&stdout, self.frame_bytes());
        let stderr = child.stderr.take().expect("stderr is piped");
        let said = Arc::new(Mutex::new(Vec::new()));
        let drained = Arc::clone(&said);
        // Drained apart, so that an FFmpeg that says much never blocks on a
        // full pipe while this side waits for a frame.
        let drain = std::thread::Builder::new()
            .name("video-stderr".to_owned())
            .spawn(move || drain_stderr(stderr, &drained))
            .map_err(|error| {
                source_error(Some(index), format!("cannot start a thread: {error}"))
            })?;
        Ok(Decoder {
            child,
            stdout,
            said,
            drain: Some(drain),
            next: index,
        })
    }

    /// Record `index`: its frame read from the decoder, which is started,
    /// moved forward or started again as it needs to be.
    fn read_frame(&self, index: usize) -> Result<DataRecord, DataError> {
        let _range = (self.mode == VideoMode::Pipeline)
            .then(|| profiling_core::nvtx::profiling_range("video_decode"));
        let mut pixels = vec![0u8; self.frame_bytes()];
        // Fresh memory: its pages mapped in one call, not one fault at a
        // time as the frame arrives.
        profiling_core::memory::prefault_slice(&mut pixels);
        let mut decoder = self.decoder.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let usable = decoder.as_ref().is_some_and(|d| d.next <= index);
            if !usable {
                *decoder = None;
                *decoder = Some(self.start_decoder(index)?);
            }
            let stream = decoder.as_mut().expect("started above");
            if let Err(error) = stream.stdout.read_exact(&mut pixels) {
                let message = stream.ended(error, self.frame(stream.next), &self.path);
                *decoder = None;
                return Err(source_error(Some(index), message));
            }
            stream.next += 1;
            if stream.next == index + 1 {
                break;
            }
        }
        if decoder.as_ref().is_some_and(|d| d.next == self.count) {
            *decoder = None;
        }
        drop(decoder);
        let (width, height) = self.size;
        let image = image::RgbImage::from_raw(width, height, pixels)
            .expect("the buffer holds width x height x 3 bytes");
        Ok(self.record(index, image))
    }

    fn record(&self, index: usize, image: image::RgbImage) -> DataRecord {
        let frame = self.frame(index);
        let mut metadata = BTreeMap::from([
            ("frame".to_owned(), Value::from(frame)),
            ("width".to_owned(), Value::from(image.width())),
            ("height".to_owned(), Value::from(image.height())),
        ]);
        if let Some((numerator, denominator)) = self.info.frame_rate {
            let seconds = frame as f64 * denominator as f64 / numerator as f64;
            metadata.insert("time_s".to_owned(), Value::from(seconds));
        }
        DataRecord {
            id: format!("frame-{frame}"),
            image: Some(image),
            path: Some(self.path.clone()),
            tensors: BTreeMap::new(),
            typed_tensors: BTreeMap::new(),
            metadata,
            source: BTreeMap::from([
                ("name".to_owned(), Value::from("video")),
                ("index".to_owned(), Value::from(index as u64)),
                ("frame".to_owned(), Value::from(frame)),
            ]),
        }
    }
}

/// One running `ffmpeg`, its frames read in order from `next` on.
struct Decoder {
    child: Child,
    stdout: ChildStdout,
    /// The end of what it printed on its standard error.
    said: Arc<Mutex<Vec<u8>>>,
    drain: Option<std::thread::JoinHandle<()>>,
    /// The record its next frame is.
    next: usize,
}

/// What of FFmpeg's standard error is kept for an error message.
const STDERR_KEPT: usize = 8 << 10;

fn drain_stderr(mut stderr: std::process::ChildStderr, said: &Mutex<Vec<u8>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stderr.read(&mut buffer) {
        if read == 0 {
            break;
        }
        let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
        said.extend_from_slice(&buffer[..read]);
        if said.len() > STDERR_KEPT {
            let cut = said.len() - STDERR_KEPT;
            said.drain(..cut);
        }
    }
}

impl Decoder {
    /// Why the frame `frame` could not be read: the stream ended early, or
    /// FFmpeg failed, with the end of what it said.
    fn ended(&mut self, error: std::io::Error, frame: u64, path: &Path) -> String {
        let status = self.child.wait().ok();
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
        let said = self.said.lock().unwrap_or_else(|e| e.into_inner());
        let said = String::from_utf8_lossy(&said);
        let detail = match (said.trim().is_empty(), status) {
            (false, _) => format!(": ffmpeg said: {}", last_lines(said.trim(), 3)),
            (true, Some(status)) if !status.success() => format!(": ffmpeg ended with {status}"),
            _ => String::new(),
        };
        if error.kind() == std::io::ErrorKind::UnexpectedEof {
            format!(
                "{}: frame {frame} could not be decoded: the video ended before it{detail}",
                path.display()
            )
        } else {
            format!(
                "{}: frame {frame}: reading from ffmpeg failed: {error}{detail}",
                path.display()
            )
        }
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        // A decoder left before its last frame is stopped, not waited on.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
    }
}

/// Lets the pipe hold a whole frame (up to the system's limit), so that
/// FFmpeg writes one while the last is being read.
fn widen_pipe(stdout: &ChildStdout, frame_bytes: usize) {
    use std::os::fd::AsRawFd;
    let wanted = frame_bytes.clamp(1 << 16, 1 << 20) as libc::c_int;
    // SAFETY: F_SETPIPE_SZ on a pipe the child holds the other end of; a
    // refusal (above /proc/sys/fs/pipe-max-size) leaves it as it was.
    unsafe {
        libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, wanted);
    }
}

#[profiling_core::data_source(
    name = "video",
    description = "A video's frames, decoded by FFmpeg: before the passes, or inside them (mode: pipeline)."
)]
impl RecordSource for VideoSource {
    type Parameters = VideoParameters;

    fn open(parameters: VideoParameters) -> anyhow::Result<Self> {
        Ok(VideoSource::from_parsed(parameters)?)
    }

    fn len(&self) -> usize {
        self.count
    }

    fn record_id(&self, index: usize) -> Option<String> {
        (index < self.count).then(|| format!("frame-{}", self.frame(index)))
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        Ok(self.read_frame(index)?)
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        let mut description = BTreeMap::from([
            (
                "path".to_owned(),
                Value::from(self.path.display().to_string()),
            ),
            ("mode".to_owned(), Value::from(self.mode.name())),
            (
                "decoded_by".to_owned(),
                Value::from(match self.mode {
                    VideoMode::Frames => "FFmpeg, before the passes",
                    VideoMode::Pipeline => {
                        "FFmpeg in a process of its own, ahead of the reads: video_decode times waiting for each frame and copying it in, not decoding it in this process"
                    }
                }),
            ),
            ("codec".to_owned(), Value::from(self.info.codec.clone())),
            ("video_width".to_owned(), Value::from(self.info.width)),
            ("video_height".to_owned(), Value::from(self.info.height)),
            ("video_frames".to_owned(), Value::from(self.info.frames)),
            ("start".to_owned(), Value::from(self.start)),
            ("stride".to_owned(), Value::from(self.stride)),
            ("frames".to_owned(), Value::from(self.count as u64)),
            ("width".to_owned(), Value::from(self.size.0)),
            ("height".to_owned(), Value::from(self.size.1)),
        ]);
        if let Some((numerator, denominator)) = self.info.frame_rate {
            description.insert(
                "frame_rate".to_owned(),
                Value::from(format!("{numerator}/{denominator}")),
            );
        }
        description
    }

    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        Ok(Some(
            (self.count as u64).saturating_mul(self.frame_bytes() as u64),
        ))
    }

    fn reads_in_order(&self) -> bool {
        true
    }

    fn needs_lazy_loading(&self) -> Option<String> {
        (self.mode == VideoMode::Pipeline).then(|| {
            "decodes the frames inside each pass (`mode: pipeline`): set `record_loading: lazy` (with `target.profile_prepare: true`), or `mode: frames` to decode them before the passes".to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBED: &str =
        "codec_name=h264\nwidth=1280\nheight=720\nr_frame_rate=30000/1001\nnb_read_packets=300\n";

    #[test]
    fn a_probe_gives_the_stream_size_frames_and_rate() {
        let info = parse_probe(PROBED).unwrap();
        assert_eq!(
            info,
            VideoInfo {
                codec: "h264".to_owned(),
                width: 1280,
                height: 720,
                frames: 300,
                frame_rate: Some((30000, 1001)),
            }
        );
    }

    #[test]
    fn a_probe_without_a_stream_or_with_a_bad_count_is_refused_naming_the_key() {
        assert_eq!(parse_probe("\n").unwrap_err(), "holds no video stream");
        let error =
            parse_probe(&PROBED.replace("nb_read_packets=300", "nb_read_packets=N/A")).unwrap_err();
        assert_eq!(error, "ffprobe gave `nb_read_packets=N/A`, not a count");
        let error = parse_probe(&PROBED.replace("width=1280", "width=0")).unwrap_err();
        assert!(error.contains("width is 0"), "{error}");
        let error = parse_probe(&PROBED.replace("height=720\n", "")).unwrap_err();
        assert_eq!(error, "ffprobe gave no `height` for its video stream");
    }

    #[test]
    fn the_headers_frame_count_serves_where_packets_were_not_counted() {
        let header = PROBED.replace("nb_read_packets=300", "nb_frames=299");
        assert_eq!(parse_probe(&header).unwrap().frames, 299);
        let unknown = PROBED.replace("nb_read_packets=300", "nb_frames=N/A");
        assert_eq!(
            parse_probe(&unknown).unwrap_err(),
            "ffprobe gave `nb_frames=N/A`, not a count"
        );
    }

    #[test]
    fn a_second_streams_keys_do_not_replace_the_first() {
        let two = format!("{PROBED}codec_name=hevc\nwidth=64\n");
        assert_eq!(parse_probe(&two).unwrap().width, 1280);
    }
}
