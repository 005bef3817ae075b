//! Headless Chromium for the tests of the pages the project writes: finds
//! the browser `scripts/setup-chromium` installs, renders a page (its DOM
//! after scripts ran, its console, a screenshot) within a time limit, reads
//! the DOM back, and checks that a page loads nothing from the network. A
//! test binary includes it with `#[path = "common/browser.rs"] mod browser;`.

#![allow(dead_code)]

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Skipped tests say this.
pub const SKIPPED: &str = "skipped: no headless Chromium (scripts/setup-chromium installs one)";

/// Past this, the browser and everything it started are killed: a hung
/// browser fails the test instead of blocking the run.
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// The browser.

/// A headless Chromium found on PATH, with a directory for its profiles.
pub struct Browser {
    pub program: PathBuf,
    pub profiles: tempfile::TempDir,
}

/// What the browser printed for one page.
pub struct Rendered {
    pub dom: String,
    pub stderr: String,
}

impl Browser {
    /// The first of the names `scripts/setup-chromium` installs or accepts
    /// that is on PATH and answers `--version`.
    pub fn find() -> Option<Browser> {
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
    pub fn or_skip() -> Option<Browser> {
        let browser = Browser::find();
        if browser.is_none() {
            println!("{SKIPPED}");
        }
        browser
    }

    /// A headless browser with a profile of its own, that logs the pages'
    /// console to stderr and lets their scripts and timers run for two
    /// seconds of virtual time before it prints or draws the page.
    pub fn command(&self) -> Command {
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
    pub fn dump_dom(&self, page: &Path) -> Rendered {
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
    pub fn screenshot(&self, page: &Path, png: &Path) -> String {
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
pub fn file_url(path: &Path) -> String {
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
pub fn output_within(mut command: Command, limit: Duration) -> Output {
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

pub fn read_in_background(
    mut pipe: impl Read + Send + 'static,
) -> std::thread::JoinHandle<Vec<u8>> {
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
pub fn console_messages(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .collect()
}

pub fn assert_console_is_silent(page: &Path, stderr: &str) {
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
pub fn looks_drawn(png: &Path) -> Result<(), String> {
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
pub struct Element {
    pub tag: String,
    pub attributes: Vec<(String, String)>,
    pub parent: Option<usize>,
}

impl Element {
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn has_class(&self, class: &str) -> bool {
        self.attribute("class")
            .is_some_and(|classes| classes.split_whitespace().any(|c| c == class))
    }
}

/// The elements of a page in document order. Enough HTML for what Chromium
/// prints with `--dump-dom` (its own serialization): comments, void elements,
/// `/>` in SVG, and the raw text of `script` and `style`.
pub struct Dom {
    pub elements: Vec<Element>,
}

pub const VOID_ELEMENTS: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];
pub const RAW_TEXT_ELEMENTS: [&str; 4] = ["script", "style", "textarea", "title"];

impl Dom {
    pub fn parse(html: &str) -> Dom {
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
    pub fn with_attribute<'a>(
        &'a self,
        tag: &'a str,
        name: &'a str,
        value: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        self.tagged(tag)
            .filter(move |&index| self.elements[index].attribute(name) == Some(value))
    }

    pub fn tagged<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = usize> + 'a {
        (0..self.elements.len()).filter(move |&index| self.elements[index].tag == tag)
    }

    /// The one element `tag` with id `id`; fails the test unless there is exactly one.
    pub fn by_id(&self, tag: &str, id: &str) -> usize {
        let found: Vec<usize> = self.with_attribute(tag, "id", id).collect();
        assert_eq!(
            found.len(),
            1,
            "the rendered page has {} <{tag} id=\"{id}\">, not one",
            found.len()
        );
        found[0]
    }

    pub fn is_inside(&self, index: usize, ancestor: usize) -> bool {
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
    pub fn values_inside(&self, ancestor: usize, tag: &str, name: &str) -> Vec<String> {
        self.tagged(tag)
            .filter(|&index| self.is_inside(index, ancestor))
            .filter_map(|index| self.elements[index].attribute(name).map(str::to_owned))
            .collect()
    }
}

/// A start tag as read, and the text after it.
pub struct StartTag<'a> {
    pub tag: String,
    pub attributes: Vec<(String, String)>,
    /// It ends in `/>`.
    pub self_closing: bool,
    pub rest: &'a str,
}

/// Reads the start tag after a `<`; None when no tag name follows.
pub fn start_tag(text: &str) -> Option<StartTag<'_>> {
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
pub fn attribute_value(text: &str, at: usize) -> (&str, usize) {
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

pub fn decode_entities(value: &str) -> String {
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
pub fn find_ignoring_case(haystack: &str, needle: &str) -> Option<usize> {
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
pub fn external_urls(source: &str) -> Vec<String> {
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

pub fn assert_loads_nothing_from_the_network(page: &Path) {
    let source =
        std::fs::read_to_string(page).unwrap_or_else(|error| panic!("{}: {error}", page.display()));
    let urls = external_urls(&source);
    assert!(
        urls.is_empty(),
        "{} loads from the network: {urls:?}",
        page.display()
    );
}
