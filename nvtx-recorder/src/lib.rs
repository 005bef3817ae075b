//! Records the NVTX ranges a process emits, as a tool attached through NVTX's
//! injection interface (the way Nsight Systems attaches) sees them.
//!
//! [`attach`] points a child process at the recorder's injection library; once
//! it has run, [`read_events`] reads what was recorded, [`range_forest`] rebuilds
//! each thread's nesting and [`render_tree`] prints it for a one-string compare.
//!
//! Recorded: push/pop ranges and marks, in any domain, with ASCII, wide or
//! registered messages. Not recorded: start/end ranges (`nvtxRangeStart*`,
//! `nvtxRangeEnd`), which do not nest, and naming calls.
//!
//! ```no_run
//! use std::process::Command;
//!
//! let output = std::env::temp_dir().join("ranges.nvtx");
//! # std::fs::remove_file(&output).ok();
//! let mut command = Command::new("path/to/binary");
//! nvtx_recorder::attach(&mut command, &output);
//! assert!(command.status()?.success());
//!
//! let events = nvtx_recorder::read_events(&output)?;
//! let forest = nvtx_recorder::range_forest(&events)?;
//! assert_eq!(nvtx_recorder::render_tree(&forest[&1]), "run\n  iteration\n  iteration\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The injection library built from `src/injection.rs`.
pub fn injection_library() -> &'static Path {
    Path::new(env!("NVTX_RECORDER_INJECTION"))
}

/// Makes `command`'s process record its NVTX events into `output`.
///
/// The process needs nothing else: its first NVTX call loads the library.
/// Events are appended, so remove `output` first to start afresh.
pub fn attach(command: &mut Command, output: &Path) {
    command
        .env("NVTX_INJECTION64_PATH", injection_library())
        .env("NVTX_RECORDER_OUTPUT", output);
}

/// One recorded NVTX call. `thread` numbers the process's threads from 1 in the
/// order of their first event; `ns` is `CLOCK_MONOTONIC` in nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A range push (`nvtxRangePush*`, `nvtxDomainRangePushEx`) with its message.
    Push { thread: u64, ns: u64, name: String },
    /// A range pop (`nvtxRangePop`, `nvtxDomainRangePop`).
    Pop { thread: u64, ns: u64 },
    /// A mark (`nvtxMark*`, `nvtxDomainMarkEx`) with its message.
    Mark { thread: u64, ns: u64, name: String },
}

impl Event {
    /// The thread the event happened on.
    pub fn thread(&self) -> u64 {
        match *self {
            Event::Push { thread, .. } | Event::Pop { thread, .. } | Event::Mark { thread, .. } => {
                thread
            }
        }
    }

    /// When the event happened.
    pub fn ns(&self) -> u64 {
        match *self {
            Event::Push { ns, .. } | Event::Pop { ns, .. } | Event::Mark { ns, .. } => ns,
        }
    }
}

/// What went wrong reading a recording or rebuilding its ranges.
#[derive(Debug)]
pub enum RecorderError {
    /// The recording could not be read.
    Read { path: PathBuf, source: io::Error },
    /// A line of the recording is not an event.
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// A thread popped a range it had not pushed.
    PopWithoutPush { thread: u64, ns: u64 },
    /// A thread ended with ranges still open, listed outermost first.
    NeverPopped { thread: u64, open: Vec<String> },
}

impl fmt::Display for RecorderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecorderError::Read { path, source } => {
                write!(f, "cannot read NVTX recording {}: {source}", path.display())
            }
            RecorderError::Parse { path, line, reason } => {
                write!(f, "{}:{line}: {reason}", path.display())
            }
            RecorderError::PopWithoutPush { thread, ns } => {
                write!(
                    f,
                    "thread {thread} popped a range at {ns} ns with none open"
                )
            }
            RecorderError::NeverPopped { thread, open } => {
                write!(f, "thread {thread} never popped the range")?;
                if open.len() > 1 {
                    f.write_str("s")?;
                }
                let open: Vec<String> = open.iter().map(|name| format!("{name:?}")).collect();
                write!(f, " {} (outermost first)", open.join(" > "))
            }
        }
    }
}

impl std::error::Error for RecorderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecorderError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Reads a recording written by the injection library, in file order (which is
/// call order within each thread).
pub fn read_events(path: &Path) -> Result<Vec<Event>, RecorderError> {
    let text = std::fs::read_to_string(path).map_err(|source| RecorderError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            parse_event(line).map_err(|reason| RecorderError::Parse {
                path: path.to_owned(),
                line: index + 1,
                reason,
            })
        })
        .collect()
}

fn parse_event(line: &str) -> Result<Event, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    let number = |index: usize, what: &str| -> Result<u64, String> {
        fields[index]
            .parse()
            .map_err(|_| format!("{what} {:?} is not a number", fields[index]))
    };
    match (fields[0], fields.len()) {
        ("push", 4) => Ok(Event::Push {
            thread: number(1, "thread")?,
            ns: number(2, "time")?,
            name: unescape(fields[3])?,
        }),
        ("pop", 3) => Ok(Event::Pop {
            thread: number(1, "thread")?,
            ns: number(2, "time")?,
        }),
        ("mark", 4) => Ok(Event::Mark {
            thread: number(1, "thread")?,
            ns: number(2, "time")?,
            name: unescape(fields[3])?,
        }),
        ("push" | "mark", n) => Err(format!(
            "`{}` takes 4 tab-separated fields, found {n}",
            fields[0]
        )),
        ("pop", n) => Err(format!("`pop` takes 3 tab-separated fields, found {n}")),
        (kind, _) => Err(format!(
            "unknown event {kind:?} (expected push, pop or mark)"
        )),
    }
}

/// Undoes the injection's escaping of `\t`, `\n`, `\r` and `\\`.
fn unescape(message: &str) -> Result<String, String> {
    let mut name = String::with_capacity(message.len());
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            name.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => name.push('\t'),
            Some('n') => name.push('\n'),
            Some('r') => name.push('\r'),
            Some('\\') => name.push('\\'),
            Some(other) => return Err(format!("unknown escape \\{other} in message {message:?}")),
            None => return Err(format!("message {message:?} ends in a lone backslash")),
        }
    }
    Ok(name)
}

/// A pushed range, its time span and the ranges pushed inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeNode {
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub children: Vec<RangeNode>,
}

/// Rebuilds the nesting of ranges on each thread, keyed by thread, top-level
/// ranges in push order. Ranges of every domain share one stack per thread;
/// marks are not ranges and are left out.
///
/// Fails on a pop with no range open and on a range still open at the end.
pub fn range_forest(events: &[Event]) -> Result<BTreeMap<u64, Vec<RangeNode>>, RecorderError> {
    // Per thread: the finished top-level ranges and the stack of open ones.
    let mut threads: BTreeMap<u64, (Vec<RangeNode>, Vec<RangeNode>)> = BTreeMap::new();
    for event in events {
        let (roots, open) = threads.entry(event.thread()).or_default();
        match event {
            Event::Push { ns, name, .. } => open.push(RangeNode {
                name: name.clone(),
                start_ns: *ns,
                end_ns: *ns,
                children: Vec::new(),
            }),
            Event::Pop { thread, ns } => {
                let Some(mut node) = open.pop() else {
                    return Err(RecorderError::PopWithoutPush {
                        thread: *thread,
                        ns: *ns,
                    });
                };
                node.end_ns = *ns;
                match open.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => roots.push(node),
                }
            }
            Event::Mark { .. } => {}
        }
    }
    threads
        .into_iter()
        .map(|(thread, (roots, open))| {
            if open.is_empty() {
                Ok((thread, roots))
            } else {
                Err(RecorderError::NeverPopped {
                    thread,
                    open: open.into_iter().map(|node| node.name).collect(),
                })
            }
        })
        .collect()
}

/// Renders ranges as text, one name per line, indented two spaces per level:
///
/// ```
/// use nvtx_recorder::{render_tree, RangeNode};
///
/// let leaf = |name: &str| RangeNode { name: name.into(), start_ns: 0, end_ns: 0, children: vec![] };
/// let run = RangeNode { children: vec![leaf("warmup"), leaf("measure")], ..leaf("run") };
/// assert_eq!(render_tree(&[run]), "run\n  warmup\n  measure\n");
/// ```
pub fn render_tree(nodes: &[RangeNode]) -> String {
    let mut text = String::new();
    render(nodes, 0, false, &mut text);
    text
}

/// Like [`render_tree`], but a run of consecutive siblings with the same name
/// and the same subtree is written once, with its count:
///
/// ```
/// use nvtx_recorder::{render_tree_collapsed, RangeNode};
///
/// let leaf = |name: &str| RangeNode { name: name.into(), start_ns: 0, end_ns: 0, children: vec![] };
/// let run = RangeNode { children: vec![leaf("iteration"); 3], ..leaf("run") };
/// assert_eq!(render_tree_collapsed(&[run]), "run\n  iteration (x3)\n");
/// ```
pub fn render_tree_collapsed(nodes: &[RangeNode]) -> String {
    let mut text = String::new();
    render(nodes, 0, true, &mut text);
    text
}

fn render(nodes: &[RangeNode], depth: usize, collapse: bool, text: &mut String) {
    let mut index = 0;
    while index < nodes.len() {
        let node = &nodes[index];
        let run = if collapse {
            nodes[index..]
                .iter()
                .take_while(|other| same_shape(node, other))
                .count()
        } else {
            1
        };
        text.push_str(&"  ".repeat(depth));
        text.push_str(&node.name);
        if run > 1 {
            text.push_str(&format!(" (x{run})"));
        }
        text.push('\n');
        render(&node.children, depth + 1, collapse, text);
        index += run;
    }
}

/// Same name and same subtree of names, whatever the times.
fn same_shape(a: &RangeNode, b: &RangeNode) -> bool {
    a.name == b.name
        && a.children.len() == b.children.len()
        && a.children
            .iter()
            .zip(&b.children)
            .all(|(a, b)| same_shape(a, b))
}
