//! The sweep page as a browser shows it. A sweep document (for now made
//! here; the real `profile-cli sweep` writes the same page) is written as
//! `sweep.html` by `write_sweep_page`; headless Chromium renders it, and the
//! rendered DOM must hold a chart per quantity, a row per point and, for a
//! sweep of two keys, a legend entry per value of the second; the page must
//! run without a script error, draw something, and load nothing from the
//! network. `scripts/setup-chromium` installs a browser; where none can be
//! had, the tests that need one skip and say so.
//!
//! The pages stay under `target/tmp/sweep_browser/` after the run, with
//! their screenshots, for a look by eye. The browser, DOM reader and
//! network rule are those of `report_browser.rs`.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use profiling_cli::sweep::document::{
    Axis, Estimate, PointResult, PointStatus, RangeEstimate, SweepDocument, SweepStatus,
    SWEEP_SCHEMA_VERSION,
};
use profiling_cli::sweep::page::write_sweep_page;
use serde_yaml::{Mapping, Value};

const SKIPPED: &str = "skipped: no headless Chromium (scripts/setup-chromium installs one)";

/// Past this, the browser and everything it started are killed: a hung
/// browser fails the test instead of blocking the run.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// The pages under test.

/// An estimate of `median_ns` whose interval is a few percent either side,
/// not quite symmetric.
fn estimate(median_ns: f64, samples: u64) -> Estimate {
    let median = median_ns.round() as u64;
    Estimate {
        median_ns: median,
        low_ns: (median_ns * 0.96).round() as u64,
        high_ns: (median_ns * 1.05).round() as u64,
        samples,
    }
}

/// A sweep document over `grid` (each key with its values as a YAML list),
/// the last key varying fastest, each point as `point` makes it from its
/// values (index, name and values are filled in here).
fn sweep(
    id: &str,
    grid: &[(&str, &str)],
    mut point: impl FnMut(&[Value]) -> PointResult,
) -> SweepDocument {
    let grid: Vec<Axis> = grid
        .iter()
        .map(|(key, values)| Axis {
            key: (*key).to_owned(),
            values: serde_yaml::from_str(values).unwrap(),
        })
        .collect();
    let mut combinations: Vec<Vec<Value>> = vec![Vec::new()];
    for axis in &grid {
        combinations = combinations
            .into_iter()
            .flat_map(|prefix| {
                axis.values.iter().map(move |value| {
                    let mut next = prefix.clone();
                    next.push(value.clone());
                    next
                })
            })
            .collect();
    }
    let points = combinations
        .iter()
        .enumerate()
        .map(|(index, values)| PointResult {
            index,
            point: format!("{index:03}"),
            values: grid
                .iter()
                .zip(values)
                .map(|(axis, value)| (Value::from(axis.key.clone()), value.clone()))
                .collect::<Mapping>(),
            ..point(values)
        })
        .collect();
    SweepDocument {
        schema_version: SWEEP_SCHEMA_VERSION,
        sweep_id: id.to_owned(),
        profile_name: "detection-pipeline".to_owned(),
        target: "detection-postprocess".to_owned(),
        config_path: Some(PathBuf::from(
            "inference_profiling/snippets/detection/profile.yaml",
        )),
        command_line: format!("profile-cli sweep detection-pipeline --run-id {id}"),
        started_at: "2025-06-01T10:00:00Z".to_owned(),
        finished_at: Some("2025-06-01T10:04:12Z".to_owned()),
        status: SweepStatus::Completed,
        zip: false,
        confidence: 0.95,
        grid,
        points,
    }
}

/// A point that did not complete.
fn not_run(status: PointStatus, error: Option<&str>) -> PointResult {
    PointResult {
        index: 0,
        point: String::new(),
        values: Mapping::new(),
        status,
        run_dir: None,
        error: error.map(str::to_owned),
        batch_size: 1,
        records_per_pass: None,
        pass: None,
        call: None,
        time_per_record_ns: None,
        records_per_second: None,
        ranges: Vec::new(),
    }
}

/// A completed point of `records` records a pass in calls of `batch`, its
/// ranges (name, median per opening in ns) opened once per call.
fn completed(batch: u32, ranges: &[(&str, f64)]) -> PointResult {
    let records = 64u64;
    let calls = records.div_ceil(u64::from(batch));
    let call_ns = ranges.iter().map(|r| r.1).sum::<f64>() + 4_000.0;
    let pass_ns = call_ns * calls as f64;
    PointResult {
        index: 0,
        point: String::new(),
        values: Mapping::new(),
        status: PointStatus::Completed,
        run_dir: Some(PathBuf::from("/runs/sweep/point")),
        error: None,
        batch_size: batch,
        records_per_pass: Some(records),
        pass: Some(estimate(pass_ns, 30)),
        call: Some(estimate(call_ns, 30 * calls)),
        time_per_record_ns: Some(pass_ns / records as f64),
        records_per_second: Some(records as f64 * 1e9 / pass_ns),
        ranges: ranges
            .iter()
            .map(|&(name, median)| RangeEstimate {
                name: name.to_owned(),
                inclusive: estimate(median, 30 * calls),
                calls_per_pass: calls as f64,
                time_per_record_ns: Some(median * calls as f64 / records as f64),
            })
            .collect(),
    }
}

/// A range name that needs escaping.
const NMS: &str = "postprocess/nms <&>";

/// Batch size 1 to 16 by input size: the forward pass grows with the
/// batch and the square of the size, over a fixed cost per call; batch 8 at
/// 640 failed (after measuring a little) and batch 16 at 640 did not run
/// (the sweep was interrupted).
fn batched_two_keys() -> SweepDocument {
    let mut document = sweep(
        "batch-by-size",
        &[
            ("workload.batch_size", "[1, 2, 4, 8, 16]"),
            ("target.parameters.input_size", "[224, 320, 640]"),
        ],
        |values| {
            let batch = values[0].as_u64().unwrap() as u32;
            let size = values[1].as_u64().unwrap() as f64;
            match (batch, size as u64) {
                // It failed after some passes: what it measured is not drawn.
                (8, 640) => PointResult {
                    status: PointStatus::Failed,
                    error: Some("CUDA out of memory <&>".to_owned()),
                    ..completed(batch, &[("forward", 90_000.0)])
                },
                (16, 640) => not_run(PointStatus::Pending, None),
                _ => {
                    let b = f64::from(batch);
                    completed(
                        batch,
                        &[
                            ("forward", 20_000.0 + b * size * size / 50.0),
                            ("preprocess", 1_500.0 + b * size * 10.0),
                            (NMS, 3_000.0 + 200.0 * b),
                        ],
                    )
                }
            }
        },
    );
    document.status = SweepStatus::Interrupted;
    document.finished_at = None;
    document
}

/// One key of devices (not numbers), one record per call.
fn devices() -> SweepDocument {
    sweep(
        "by-device",
        &[("device", "[cpu, \"cuda:0\", \"cuda:1\"]")],
        |values| {
            let scale = match values[0].as_str().unwrap() {
                "cpu" => 9.0,
                _ => 1.0,
            };
            completed(
                1,
                &[("decode", 40_000.0 * scale), ("resize", 9_000.0 * scale)],
            )
        },
    )
}

/// The pages, written once per test binary under `target/tmp/sweep_browser/`.
fn pages() -> &'static [(SweepDocument, PathBuf); 2] {
    static PAGES: OnceLock<[(SweepDocument, PathBuf); 2]> = OnceLock::new();
    PAGES.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep_browser");
        let _ = std::fs::remove_dir_all(&out);
        [batched_two_keys(), devices()].map(|document| {
            let dir = out.join(&document.sweep_id);
            std::fs::create_dir_all(&dir).unwrap();
            let page = write_sweep_page(&dir, &document).unwrap();
            assert_eq!(page, dir.join("sweep.html"));
            (document, page)
        })
    })
}

/// The range names of `document`'s completed points.
fn range_names(document: &SweepDocument) -> Vec<String> {
    let mut names: Vec<String> = document
        .completed()
        .flat_map(|p| p.ranges.iter().map(|r| r.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

// ---------------------------------------------------------------------------
// The browser.

/// A headless Chromium found on PATH, with a directory for its profiles.
struct Browser {
    program: PathBuf,
    profiles: tempfile::TempDir,
}

/// What the browser printed for one page.
struct Rendered {
    dom: String,
    stderr: String,
}

impl Browser {
    /// The first of the names `scripts/setup-chromium` installs or accepts
    /// that is on PATH and answers `--version`.
    fn find() -> Option<Browser> {
        let path = std::env::var_os("PATH")?;
        let names = [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ];
        let program = names.iter().find_map(|name| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .filter(|candidate| candidate.is_file())
                .find(|candidate| {
                    Command::new(candidate)
                        .arg("--version")
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .is_ok_and(|status| status.success())
                })
        })?;
        Some(Browser {
            program,
            profiles: tempfile::tempdir().unwrap(),
        })
    }

    /// The browser, or None after printing why the calling test skips.
    fn or_skip() -> Option<Browser> {
        let browser = Browser::find();
        if browser.is_none() {
            println!("{SKIPPED}");
        }
        browser
    }

    /// A headless browser with a profile of its own, that logs the pages'
    /// console to stderr and lets their scripts and timers run for two
    /// seconds of virtual time before it prints or draws the page.
    fn command(&self) -> Command {
        static PROFILES: AtomicUsize = AtomicUsize::new(0);
        let profile = self.profiles.path().join(format!(
            "profile-{}",
            PROFILES.fetch_add(1, Ordering::Relaxed)
        ));
        let mut command = Command::new(&self.program);
        command
            .args([
                "--headless",
                // As root, or in a container, Chromium cannot sandbox itself.
                "--no-sandbox",
                "--disable-gpu",
                // Containers often have a small /dev/shm.
                "--disable-dev-shm-usage",
                "--disable-crash-reporter",
                "--disable-breakpad",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=2000",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            // Without a session bus, Chromium logs every failed connection.
            .env("DBUS_SESSION_BUS_ADDRESS", "disabled:");
        command
    }

    /// The DOM of `page` after its scripts ran.
    fn dump_dom(&self, page: &Path) -> Rendered {
        assert!(page.is_file(), "{} was not written", page.display());
        let mut command = self.command();
        command.arg("--dump-dom").arg(file_url(page));
        let output = output_within(command, BROWSER_TIMEOUT);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "{} --dump-dom {} exited with {:?}:\n{stderr}",
            self.program.display(),
            page.display(),
            output.status
        );
        Rendered {
            dom: String::from_utf8(output.stdout).unwrap(),
            stderr,
        }
    }

    /// Draws `page` in a 1280×2000 window into `png`; returns the stderr.
    fn screenshot(&self, page: &Path, png: &Path) -> String {
        assert!(page.is_file(), "{} was not written", page.display());
        let mut command = self.command();
        command
            .arg("--window-size=1280,2000")
            .arg(format!("--screenshot={}", png.display()))
            .arg(file_url(page));
        let output = output_within(command, BROWSER_TIMEOUT);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success() && png.is_file(),
            "{} --screenshot of {} exited with {:?} and wrote {}:\n{stderr}",
            self.program.display(),
            page.display(),
            output.status,
            if png.is_file() { "it" } else { "nothing" }
        );
        stderr
    }
}

/// `file://` and the absolute path, with the bytes a URL path cannot hold
/// percent-encoded.
fn file_url(path: &Path) -> String {
    let path = std::path::absolute(path).unwrap();
    let mut url = String::from("file://");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// Runs `command` in a process group of its own and returns its output;
/// past `limit` the whole group is killed and the test fails.
fn output_within(mut command: Command, limit: Duration) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().unwrap();
    let group = -(child.id() as libc::pid_t);
    let stdout = read_in_background(child.stdout.take().unwrap());
    let stderr = read_in_background(child.stderr.take().unwrap());
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            timed_out = true;
            // SAFETY: kill touches no memory; the group is the one made for this child.
            unsafe { libc::kill(group, libc::SIGKILL) };
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Helpers the browser started and left behind would hold the pipes open.
    // SAFETY: as above; an empty group makes kill fail harmlessly.
    unsafe { libc::kill(group, libc::SIGKILL) };
    let output = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    assert!(
        !timed_out,
        "{command:?} ran past {limit:?} and was killed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn read_in_background(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).unwrap();
        bytes
    })
}

/// The lines in which the browser logged a page's console. Chromium (156,
/// Debian 12) logs `console.log`, `console.error` and uncaught exceptions
/// alike, at level INFO:
///
/// ```text
/// [26355:26355:1130/110525.988558:INFO:CONSOLE:1] "Uncaught ReferenceError: undefined_function is not defined", source: file:///tmp/bad.html (1)
/// ```
///
/// so only a silent console shows that a page ran without an error.
fn console_messages(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .collect()
}

fn assert_console_is_silent(page: &Path, stderr: &str) {
    let messages = console_messages(stderr);
    assert!(
        messages.is_empty(),
        "{} wrote to the console (an uncaught exception shows as \"Uncaught ...\"):\n{}",
        page.display(),
        messages.join("\n")
    );
}

/// Why the screenshot `png` looks blank; Ok when it shows a drawn page:
/// more than three distinct colours, and not all of it white.
fn looks_drawn(png: &Path) -> Result<(), String> {
    let image = image::open(png)
        .map_err(|error| format!("{}: {error}", png.display()))?
        .to_rgb8();
    let colours: HashSet<[u8; 3]> = image.pixels().map(|pixel| pixel.0).collect();
    if colours.len() <= 3 {
        return Err(format!(
            "{} has {} distinct colour(s): {colours:?}",
            png.display(),
            colours.len()
        ));
    }
    if image.pixels().all(|pixel| pixel.0 == [255, 255, 255]) {
        return Err(format!("{} is all white", png.display()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Reading a rendered page: the elements and where they sit.

/// One element of a page: its tag, its attributes (entities decoded) and the
/// element it sits in.
struct Element {
    tag: String,
    attributes: Vec<(String, String)>,
    parent: Option<usize>,
}

impl Element {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn has_class(&self, class: &str) -> bool {
        self.attribute("class")
            .is_some_and(|classes| classes.split_whitespace().any(|c| c == class))
    }
}

/// The elements of a page in document order. Enough HTML for what Chromium
/// prints with `--dump-dom` (its own serialization): comments, void elements,
/// `/>` in SVG, and the raw text of `script` and `style`.
struct Dom {
    elements: Vec<Element>,
}

const VOID_ELEMENTS: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];
const RAW_TEXT_ELEMENTS: [&str; 4] = ["script", "style", "textarea", "title"];

impl Dom {
    fn parse(html: &str) -> Dom {
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut rest = html;
        while let Some(start) = rest.find('<') {
            rest = &rest[start..];
            if let Some(after) = rest.strip_prefix("<!--") {
                rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            } else if rest.starts_with("<!") || rest.starts_with("<?") {
                rest = rest.find('>').map_or("", |end| &rest[end + 1..]);
            } else if let Some(after) = rest.strip_prefix("</") {
                let end = after.find('>').unwrap_or(after.len());
                let tag = after[..end].trim();
                if let Some(depth) = open
                    .iter()
                    .rposition(|&index| elements[index].tag.eq_ignore_ascii_case(tag))
                {
                    open.truncate(depth);
                }
                rest = after.get(end + 1..).unwrap_or("");
            } else {
                let Some(start) = start_tag(&rest[1..]) else {
                    // A `<` in text.
                    rest = &rest[1..];
                    continue;
                };
                let index = elements.len();
                let lowercase = start.tag.to_ascii_lowercase();
                elements.push(Element {
                    tag: start.tag,
                    attributes: start.attributes,
                    parent: open.last().copied(),
                });
                rest = start.rest;
                if RAW_TEXT_ELEMENTS.contains(&lowercase.as_str()) {
                    let close = format!("</{lowercase}");
                    rest = find_ignoring_case(rest, &close).map_or("", |end| &rest[end..]);
                } else if !start.self_closing && !VOID_ELEMENTS.contains(&lowercase.as_str()) {
                    open.push(index);
                }
            }
        }
        Dom { elements }
    }

    /// The elements `tag` whose attribute `name` is `value`.
    fn with_attribute<'a>(
        &'a self,
        tag: &'a str,
        name: &'a str,
        value: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        self.tagged(tag)
            .filter(move |&index| self.elements[index].attribute(name) == Some(value))
    }

    fn tagged<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = usize> + 'a {
        (0..self.elements.len()).filter(move |&index| self.elements[index].tag == tag)
    }

    /// The one element `tag` with id `id`; fails the test unless there is exactly one.
    fn by_id(&self, tag: &str, id: &str) -> usize {
        let found: Vec<usize> = self.with_attribute(tag, "id", id).collect();
        assert_eq!(
            found.len(),
            1,
            "the rendered page has {} <{tag} id=\"{id}\">, not one",
            found.len()
        );
        found[0]
    }

    fn is_inside(&self, index: usize, ancestor: usize) -> bool {
        let mut parent = self.elements[index].parent;
        while let Some(next) = parent {
            if next == ancestor {
                return true;
            }
            parent = self.elements[next].parent;
        }
        false
    }

    /// The values of attribute `name` of the elements `tag` inside `ancestor`.
    fn values_inside(&self, ancestor: usize, tag: &str, name: &str) -> Vec<String> {
        self.tagged(tag)
            .filter(|&index| self.is_inside(index, ancestor))
            .filter_map(|index| self.elements[index].attribute(name).map(str::to_owned))
            .collect()
    }
}

/// A start tag as read, and the text after it.
struct StartTag<'a> {
    tag: String,
    attributes: Vec<(String, String)>,
    /// It ends in `/>`.
    self_closing: bool,
    rest: &'a str,
}

/// Reads the start tag after a `<`; None when no tag name follows.
fn start_tag(text: &str) -> Option<StartTag<'_>> {
    let bytes = text.as_bytes();
    let name_end = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b':'))
        .unwrap_or(bytes.len());
    if name_end == 0 || !bytes[0].is_ascii_alphabetic() {
        return None;
    }
    let tag = text[..name_end].to_owned();
    let mut attributes = Vec::new();
    let mut at = name_end;
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        match bytes.get(at) {
            None | Some(b'>') => {
                return Some(StartTag {
                    tag,
                    attributes,
                    self_closing: false,
                    rest: text.get(at + 1..).unwrap_or(""),
                })
            }
            Some(b'/') if bytes.get(at + 1) == Some(&b'>') => {
                return Some(StartTag {
                    tag,
                    attributes,
                    self_closing: true,
                    rest: &text[at + 2..],
                })
            }
            Some(b'/') => {
                at += 1;
                continue;
            }
            Some(_) => {}
        }
        let name_start = at;
        while at < bytes.len() && !b" \t\r\n=>/".contains(&bytes[at]) {
            at += 1;
        }
        let name = text[name_start..at].to_owned();
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        let mut value = String::new();
        if bytes.get(at) == Some(&b'=') {
            at += 1;
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            let (raw, end) = attribute_value(text, at);
            value = decode_entities(raw);
            at = end;
        }
        attributes.push((name, value));
    }
}

/// The attribute value starting at byte `at` of `text` (quoted or not) and
/// the byte after it.
fn attribute_value(text: &str, at: usize) -> (&str, usize) {
    let bytes = text.as_bytes();
    match bytes.get(at) {
        Some(&quote) if quote == b'"' || quote == b'\'' => {
            let end = text[at + 1..]
                .find(quote as char)
                .map_or(text.len(), |end| at + 1 + end);
            (&text[at + 1..end], (end + 1).min(text.len()))
        }
        _ => {
            let end = text[at..]
                .find(|c: char| c.is_ascii_whitespace() || c == '>')
                .map_or(text.len(), |end| at + end);
            (&text[at..end], end)
        }
    }
}

fn decode_entities(value: &str) -> String {
    let mut decoded = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find('&') {
        decoded.push_str(&rest[..start]);
        rest = &rest[start..];
        let entity = rest.find(';').map(|end| (&rest[1..end], end));
        let character = entity.and_then(|(name, _)| match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            _ => {
                let number = name.strip_prefix('#')?;
                let code = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                    None => number.parse().ok()?,
                };
                char::from_u32(code)
            }
        });
        match (character, entity) {
            (Some(character), Some((_, end))) => {
                decoded.push(character);
                rest = &rest[end + 1..];
            }
            _ => {
                decoded.push('&');
                rest = &rest[1..];
            }
        }
    }
    decoded.push_str(rest);
    decoded
}

/// The byte offset of `needle` (ASCII) in `haystack`, ignoring ASCII case.
fn find_ignoring_case(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

// ---------------------------------------------------------------------------
// The network rule: a page is one file that loads nothing from elsewhere.

/// The URLs in `source` that a browser would fetch from the network: values
/// of `src` and `href` attributes (`xlink:href` too), CSS `url(...)` and
/// `@import "..."`, that start with `http://`, `https://` or `//`. A URL in
/// plain text, and the `xmlns` namespace of an SVG, are no such place.
fn external_urls(source: &str) -> Vec<String> {
    let lowercase = source.to_ascii_lowercase();
    let mut values = Vec::new();
    for attribute in ["src", "href"] {
        for (at, _) in lowercase.match_indices(attribute) {
            let before = lowercase[..at].bytes().next_back();
            if !before.is_some_and(|b| b.is_ascii_whitespace() || b == b':') {
                continue;
            }
            let after = &source[at + attribute.len()..];
            let Some(value) = after.trim_start().strip_prefix('=') else {
                continue;
            };
            let value = value.trim_start();
            let value_at = source.len() - value.len();
            values.push(attribute_value(source, value_at).0);
        }
    }
    for (at, _) in lowercase.match_indices("url(") {
        let value = source[at + 4..].trim_start();
        let value = value.trim_start_matches(['"', '\'']);
        let end = value.find(['"', '\'', ')']).unwrap_or(value.len());
        values.push(&value[..end]);
    }
    for (at, _) in lowercase.match_indices("@import") {
        let value = source[at + 7..].trim_start();
        if let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let value = &value[1..];
            values.push(&value[..value.find(quote).unwrap_or(value.len())]);
        }
    }
    values
        .into_iter()
        .map(str::trim)
        .filter(|value| {
            let value = value.to_ascii_lowercase();
            ["http://", "https://", "//"]
                .iter()
                .any(|scheme| value.starts_with(scheme))
        })
        .map(str::to_owned)
        .collect()
}

fn assert_loads_nothing_from_the_network(page: &Path) {
    let source =
        std::fs::read_to_string(page).unwrap_or_else(|error| panic!("{}: {error}", page.display()));
    let urls = external_urls(&source);
    assert!(
        urls.is_empty(),
        "{} loads from the network: {urls:?}",
        page.display()
    );
}

// ---------------------------------------------------------------------------
// The sweep page.

/// The `(data-quantity, data-range, data-measure)` of every chart.
fn charts(dom: &Dom) -> Vec<(String, String, String)> {
    dom.tagged("svg")
        .filter(|&index| dom.elements[index].has_class("sweep-chart"))
        .map(|index| {
            let element = &dom.elements[index];
            let attribute = |name| element.attribute(name).unwrap_or_default().to_owned();
            (
                attribute("data-quantity"),
                attribute("data-range"),
                attribute("data-measure"),
            )
        })
        .collect()
}

/// Checks that `page` of `document` has a chart per quantity and measure,
/// and a row per point; returns its DOM.
fn check_charts_and_rows(browser: &Browser, document: &SweepDocument, page: &Path) -> Dom {
    let dom = Dom::parse(&browser.dump_dom(page).dom);
    let measures: &[&str] = if document.batched() {
        &["time", "per-record"]
    } else {
        &["time"]
    };
    let charts = charts(&dom);
    let mut expected = Vec::new();
    for quantity in ["pass", "call"] {
        for measure in measures {
            expected.push((quantity.to_owned(), String::new(), (*measure).to_owned()));
        }
    }
    for name in range_names(document) {
        for measure in measures {
            expected.push(("range".to_owned(), name.clone(), (*measure).to_owned()));
        }
    }
    let mut found = charts.clone();
    found.sort();
    expected.sort();
    assert_eq!(found, expected, "one chart per quantity and measure");
    // The pass and the call first.
    assert_eq!(charts[0].0, "pass");
    assert_eq!(charts[measures.len()].0, "call");

    let table = dom.by_id("table", "points");
    let rows = dom.values_inside(table, "tr", "data-point");
    let points: Vec<&str> = document.points.iter().map(|p| p.point.as_str()).collect();
    assert_eq!(
        rows, points,
        "one row of table#points per point, in grid order"
    );
    dom
}

#[test]
fn a_two_key_sweep_has_its_charts_rows_and_a_legend_entry_per_second_key_value() {
    let (document, page) = &pages()[0];
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = check_charts_and_rows(&browser, document, page);
    let legend = dom.by_id("ul", "sweep-legend");
    assert_eq!(
        dom.values_inside(legend, "li", "data-series"),
        [
            "target.parameters.input_size = 224",
            "target.parameters.input_size = 320",
            "target.parameters.input_size = 640"
        ]
    );
    // Every chart draws the three lines; the failed and the pending point
    // are left out of them, and listed.
    for index in dom.tagged("svg") {
        let element = &dom.elements[index];
        if element.has_class("sweep-chart") {
            assert_eq!(element.attribute("data-lines"), Some("3"));
            assert_eq!(element.attribute("data-points"), Some("13"));
            assert_eq!(element.attribute("data-log-x"), Some("true"), "1 to 16");
        }
    }
    let missing = dom.by_id("ul", "missing-points");
    assert_eq!(
        dom.values_inside(missing, "li", "data-point"),
        ["011", "014"]
    );
    let table = dom.by_id("table", "points");
    assert_eq!(
        dom.values_inside(table, "tr", "data-status")
            .iter()
            .filter(|s| *s != "completed")
            .collect::<Vec<_>>(),
        ["failed", "pending"]
    );
}

#[test]
fn a_sweep_of_devices_has_its_charts_and_rows_and_no_legend() {
    let (document, page) = &pages()[1];
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = check_charts_and_rows(&browser, document, page);
    assert_eq!(dom.with_attribute("ul", "id", "sweep-legend").count(), 0);
    for index in dom.tagged("svg") {
        let element = &dom.elements[index];
        if element.has_class("sweep-chart") {
            assert_eq!(element.attribute("data-log-x"), Some("false"));
            assert_eq!(element.attribute("data-points"), Some("3"));
        }
    }
}

#[test]
fn the_sweep_pages_run_without_a_javascript_error() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for (_, page) in pages {
        assert_console_is_silent(page, &browser.dump_dom(page).stderr);
    }
}

#[test]
fn the_sweep_pages_draw_something() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for (_, page) in pages {
        let png = page.with_extension("png");
        let stderr = browser.screenshot(page, &png);
        assert_console_is_silent(page, &stderr);
        if let Err(why) = looks_drawn(&png) {
            panic!("the screenshot of {} looks blank: {why}", page.display());
        }
    }
}

#[test]
fn the_sweep_pages_load_nothing_from_the_network() {
    for (_, page) in pages() {
        assert_loads_nothing_from_the_network(page);
    }
}

/// The page the real `profile-cli sweep` writes: a sweep of two keys of
/// `detection-pipeline` on the dummy data (its output is the document).
fn real_sweep() -> &'static (SweepDocument, PathBuf) {
    static REAL: OnceLock<(SweepDocument, PathBuf)> = OnceLock::new();
    REAL.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep_browser_real");
        let _ = std::fs::remove_dir_all(&out);
        let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
            .args(["sweep", "detection-pipeline", "--output-dir"])
            .arg(&out)
            .args([
                "--set",
                "data_source.record_count=1,2",
                "--set",
                "data_source.image_shape=[48,64,3],[96,128,3]",
                "--set",
                "iterations=3",
                "--sweep-id",
                "real",
                "--json",
            ])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let page = PathBuf::from(json["report_path"].as_str().unwrap());
        let dir = page.parent().unwrap();
        let document = profiling_cli::sweep::document::SweepDocument::read(dir).unwrap();
        (document, page)
    })
}

#[test]
fn the_page_of_a_real_sweep_has_its_charts_rows_and_legend() {
    let (document, page) = real_sweep();
    assert_eq!(document.points.len(), 4);
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = check_charts_and_rows(&browser, document, page);
    let legend = dom.by_id("ul", "sweep-legend");
    assert_eq!(
        dom.values_inside(legend, "li", "data-series"),
        [
            "data_source.image_shape = [48, 64, 3]",
            "data_source.image_shape = [96, 128, 3]"
        ]
    );
    // The pass and the call at every point; a range where it opened (the
    // letterbox pads only the shapes that need it).
    for index in dom.tagged("svg") {
        let element = &dom.elements[index];
        if !element.has_class("sweep-chart") {
            continue;
        }
        let quantity = element.attribute("data-quantity").unwrap_or_default();
        if quantity == "pass" || quantity == "call" {
            assert_eq!(element.attribute("data-lines"), Some("2"), "{quantity}");
            assert_eq!(element.attribute("data-points"), Some("4"), "{quantity}");
        } else {
            let name = element.attribute("data-range").unwrap_or_default();
            let drawn = document
                .completed()
                .filter(|p| p.ranges.iter().any(|r| r.name == name))
                .count();
            assert_eq!(
                element.attribute("data-points"),
                Some(drawn.to_string().as_str()),
                "{name}"
            );
        }
    }
    let png = page.with_extension("png");
    let stderr = browser.screenshot(page, &png);
    assert_console_is_silent(page, &stderr);
    looks_drawn(&png).unwrap();
    assert_loads_nothing_from_the_network(page);
}
