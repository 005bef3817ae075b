//! The HTML report as a browser shows it. The real binary writes the page of
//! a run and the page comparing two runs; headless Chromium renders them, and
//! the rendered DOM must hold every part of the report, the scripts must run
//! without an error, the screenshot must show a drawn page, and nothing may
//! be loaded from the network. `scripts/setup-chromium` installs a browser;
//! where none can be had, the tests that need one skip and say so.
//!
//! The pages stay under `target/tmp/report_browser/` after the run, with
//! their screenshots, for a look by eye.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SKIPPED: &str = "skipped: no headless Chromium (scripts/setup-chromium installs one)";

/// Past this, the browser and everything it started are killed: a hung
/// browser fails the test instead of blocking the run.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// The pages under test, written once per test binary by the real `profile-cli`.

/// Runs `a` and `b` of `detection-pipeline`, under `out`.
struct Runs {
    out: PathBuf,
    /// What `profile-cli run ... --run-id a` printed.
    run_stdout: String,
    run_dir: PathBuf,
    run_page: PathBuf,
}

fn profile_cli(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .output()
        .unwrap()
}

/// Why `output` is not a success, naming `what` ran.
fn succeeded(output: &Output, what: &str) -> Result<(), String> {
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} exited with {:?}:\n{}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Runs `detection-pipeline` as run `id` (5 passes on the dummy data) into
/// `out`, and returns what it printed.
fn run(out: &Path, id: &str) -> Result<String, String> {
    let output = profile_cli(&[
        "run".as_ref(),
        "detection-pipeline".as_ref(),
        "--iterations".as_ref(),
        "5".as_ref(),
        "--output-dir".as_ref(),
        out.as_os_str(),
        "--run-id".as_ref(),
        id.as_ref(),
    ]);
    succeeded(&output, &format!("profile-cli run (run {id})"))?;
    Ok(String::from_utf8(output.stdout).unwrap())
}

/// The two runs, made by the first test that asks; when that fails, every
/// test that asks fails with the same reason.
fn runs() -> &'static Runs {
    static RUNS: OnceLock<Result<Runs, String>> = OnceLock::new();
    let runs = RUNS.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_browser");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let run_stdout = run(&out, "a")?;
        run(&out, "b")?;
        let run_dir = out.join("detection-pipeline/runs/a");
        Ok(Runs {
            run_page: run_dir.join("report.html"),
            run_dir,
            run_stdout,
            out,
        })
    });
    runs.as_ref().unwrap_or_else(|why| panic!("{why}"))
}

/// The page comparing the two runs, made like them.
fn comparison_page() -> &'static Path {
    static PAGE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let page = PAGE.get_or_init(|| {
        let runs = runs();
        let page = runs.out.join("comparison.html");
        let output = profile_cli(&[
            "report".as_ref(),
            runs.run_dir.as_os_str(),
            runs.run_dir.with_file_name("b").as_os_str(),
            "-o".as_ref(),
            page.as_os_str(),
        ]);
        succeeded(&output, "profile-cli report")?;
        Ok(page)
    });
    page.as_ref().unwrap_or_else(|why| panic!("{why}"))
}

/// The `path` of every entry of the manifest's `timings.range_tree`.
fn range_paths(path: &Path) -> Vec<String> {
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let tree = manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap_or_else(|| panic!("{} has no timings.range_tree list", path.display()));
    tree.iter()
        .map(|entry| {
            entry["path"]
                .as_str()
                .expect("a range has a path")
                .to_owned()
        })
        .collect()
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

    fn flamegraphs(&self) -> usize {
        self.tagged("svg")
            .filter(|&index| self.elements[index].has_class("flamegraph"))
            .count()
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
// The network rule: a report is one file that loads nothing from elsewhere.

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
// The report.

#[test]
fn a_run_writes_its_report_beside_the_manifest() {
    let runs = runs();
    assert!(runs.run_page.is_absolute());
    assert!(
        runs.run_stdout
            .lines()
            .any(|line| line == format!("report: {}", runs.run_page.display())),
        "the run prints where its report is:\n{}",
        runs.run_stdout
    );
    assert!(runs.run_dir.join("manifest.yaml").is_file());
    assert!(
        runs.run_page.is_file(),
        "{} was not written",
        runs.run_page.display()
    );
}

#[test]
fn the_report_command_writes_the_comparison_page() {
    let page = comparison_page();
    assert!(page.is_file(), "{} was not written", page.display());
}

#[test]
fn the_run_page_shows_every_range_of_the_manifest() {
    let runs = runs();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let mut paths = range_paths(&runs.run_dir.join("manifest.yaml"));
    assert!(
        paths.iter().any(|path| path.contains('/')),
        "the range tree of detection-pipeline has nested ranges: {paths:?}"
    );
    let dom = Dom::parse(&browser.dump_dom(&runs.run_page).dom);
    let table = dom.by_id("table", "ranges");
    let mut rows = dom.values_inside(table, "tr", "data-path");
    rows.sort();
    paths.sort();
    assert_eq!(rows, paths, "one row of table#ranges per range path");
}

#[test]
fn the_run_page_has_its_flame_graph_charts_and_nsight_section() {
    let runs = runs();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = Dom::parse(&browser.dump_dom(&runs.run_page).dom);
    assert_eq!(dom.flamegraphs(), 1, "one <svg class=\"flamegraph\">");
    for id in ["pass-histogram", "call-histogram", "pass-timeline"] {
        dom.by_id("svg", id);
    }
    dom.by_id("section", "nsight");
}

#[test]
fn the_comparison_page_has_its_table_chart_differences_and_a_flame_graph_per_run() {
    let page = comparison_page();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = Dom::parse(&browser.dump_dom(page).dom);
    let table = dom.by_id("table", "comparison");
    let rows = dom.values_inside(table, "tr", "data-row");
    for label in ["pass", "call"] {
        assert!(
            rows.iter().any(|row| row == label),
            "table#comparison has a row {label:?}: {rows:?}"
        );
    }
    dom.by_id("svg", "ratios");
    dom.by_id("section", "differences");
    assert_eq!(
        dom.flamegraphs(),
        2,
        "one <svg class=\"flamegraph\"> per run"
    );
}

/// The run page, then the comparison page.
fn pages() -> [&'static Path; 2] {
    [&runs().run_page, comparison_page()]
}

#[test]
fn the_pages_run_without_a_javascript_error() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for page in pages {
        assert_console_is_silent(page, &browser.dump_dom(page).stderr);
    }
}

#[test]
fn the_pages_draw_something() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for page in pages {
        let png = page.with_extension("png");
        let stderr = browser.screenshot(page, &png);
        assert_console_is_silent(page, &stderr);
        if let Err(why) = looks_drawn(&png) {
            panic!("the screenshot of {} looks blank: {why}", page.display());
        }
    }
}

#[test]
fn the_pages_load_nothing_from_the_network() {
    for page in pages() {
        assert_loads_nothing_from_the_network(page);
    }
}

// ---------------------------------------------------------------------------
// The checks themselves, on pages made here: each must be able to fail.

/// A page named `name` in `dir` with `body` as its body.
fn page(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>{body}</body></html>\n"),
    )
    .unwrap();
    path
}

#[test]
fn the_browser_check_sees_a_javascript_error() {
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let broken = page(
        dir.path(),
        "broken.html",
        "<p>broken</p><script>undefined_function()</script>",
    );
    let stderr = browser.dump_dom(&broken).stderr;
    let messages = console_messages(&stderr);
    assert!(
        messages
            .iter()
            .any(|line| line.contains("Uncaught ReferenceError: undefined_function is not defined")),
        "the error is in the browser's log:\n{stderr}"
    );
}

#[test]
fn the_browser_check_reads_the_dom_that_scripts_made() {
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let built = page(
        dir.path(),
        "built.html",
        r##"<table id="ranges"><tbody></tbody></table>
<script>
  for (const path of ["preprocess", "preprocess/letterbox"]) {
    const row = document.createElement("tr");
    row.dataset.path = path;
    row.innerHTML = "<td>" + path + "</td>";
    document.querySelector("#ranges tbody").appendChild(row);
  }
</script>"##,
    );
    let rendered = browser.dump_dom(&built);
    assert_console_is_silent(&built, &rendered.stderr);
    let dom = Dom::parse(&rendered.dom);
    let table = dom.by_id("table", "ranges");
    assert_eq!(
        dom.values_inside(table, "tr", "data-path"),
        ["preprocess", "preprocess/letterbox"]
    );
}

#[test]
fn the_screenshot_check_tells_a_blank_page_from_a_drawn_one() {
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let blank = page(dir.path(), "blank.html", "");
    let drawn = page(
        dir.path(),
        "drawn.html",
        r##"<h1>drawn</h1><svg width="600" height="300">
<rect x="0" y="0" width="300" height="150" fill="#d62728"/>
<rect x="300" y="150" width="300" height="150" fill="#1f77b4"/></svg>"##,
    );
    let blank_png = dir.path().join("blank.png");
    let drawn_png = dir.path().join("drawn.png");
    browser.screenshot(&blank, &blank_png);
    browser.screenshot(&drawn, &drawn_png);
    assert!(looks_drawn(&blank_png).is_err());
    assert_eq!(looks_drawn(&drawn_png), Ok(()));
    let (width, height) = image::image_dimensions(&drawn_png).unwrap();
    assert_eq!((width, height), (1280, 2000));
}

#[test]
fn a_browser_that_hangs_is_killed() {
    let started = Instant::now();
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & sleep 30"]);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        output_within(command, Duration::from_millis(300))
    }));
    assert!(result.is_err(), "a command past its limit fails the test");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_dom_reader_places_elements_inside_their_ancestors() {
    let dom = Dom::parse(
        r#"<!DOCTYPE html><html><body><!-- <table id="ranges"> -->
<table id="ranges"><tbody><tr data-path="a/b&amp;c"><td>x<br>y</td></tr></tbody></table>
<script>const s = "<tr data-path='in-script'>";</script>
<svg class="chart flamegraph"><rect/><g><rect></rect></g></svg>
<tr data-path="outside"></tr></body></html>"#,
    );
    let table = dom.by_id("table", "ranges");
    assert_eq!(dom.values_inside(table, "tr", "data-path"), ["a/b&c"]);
    assert_eq!(dom.with_attribute("tr", "data-path", "outside").count(), 1);
    assert_eq!(
        dom.with_attribute("tr", "data-path", "in-script").count(),
        0
    );
    assert_eq!(dom.flamegraphs(), 1);
}

#[test]
fn an_external_src_breaks_the_network_rule() {
    assert_eq!(
        external_urls(r#"<script src="https://cdn.example/d3.js"></script>"#),
        ["https://cdn.example/d3.js"]
    );
}

#[test]
fn external_hrefs_and_css_urls_break_the_network_rule_in_either_quotes() {
    let source = r#"<link rel='stylesheet' HREF = 'http://fonts.example/a.css'>
<svg><image xlink:href="//img.example/x.png"/></svg>
<style>@import "https://css.example/b.css"; body { background: url( 'https://img.example/bg.png' ) }
.x { background: url(http://img.example/y.png) }</style>"#;
    assert_eq!(
        external_urls(source),
        [
            "http://fonts.example/a.css",
            "//img.example/x.png",
            "https://img.example/bg.png",
            "http://img.example/y.png",
            "https://css.example/b.css",
        ]
    );
}

#[test]
fn namespaces_text_and_local_urls_keep_the_network_rule() {
    let source = r##"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
<a href="#pass-histogram">histogram</a><img src="data:image/png;base64,AAAA"><img data-src="https://lazy.example">
<use xlink:href="#frame"/></svg><p>Made with https://example.org, see http://example.org/docs.</p>
<style>.a { fill: url(#gradient) } .b { background: url("data:image/svg+xml,%3Csvg%3E") }</style>
<a href="other/report.html">the other run</a>"##;
    assert_eq!(external_urls(source), Vec::<String>::new());
}
