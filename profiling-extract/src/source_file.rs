//! A Rust source file read for extraction: its text, its syntax tree, and
//! the byte offsets and line numbers of the spans syn gives, so code is
//! copied from the file's own bytes rather than re-printed from tokens;
//! and how files are named and found. Below [`crate::crate_files`], which
//! keeps the files one extraction parsed, and [`crate::source`], which
//! locates them in their crate.

use std::ops::Range;
use std::path::{Path, PathBuf};

use proc_macro2::Span;

use super::SnippetError;

/// A parsed source file.
pub(crate) struct SourceFile {
    /// How messages and provenance name it: relative to the workspace root
    /// when it lies under it.
    pub display: String,
    pub text: String,
    /// Bytes before the parsed text: a byte order mark, which syn does not take.
    offset: usize,
    /// The byte offset where each line starts; line 1 is at index 0.
    line_starts: Vec<usize>,
    pub syntax: syn::File,
}

impl SourceFile {
    /// Reads and parses `path`; `display` names it in messages.
    pub fn read(path: &Path, display: String) -> Result<SourceFile, SnippetError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| SnippetError::Source(format!("cannot read {display}: {error}")))?;
        SourceFile::parse(display, text)
    }

    /// Parses `text`; `display` names it in messages.
    pub fn parse(display: String, text: String) -> Result<SourceFile, SnippetError> {
        let offset = if text.starts_with('\u{feff}') { 3 } else { 0 };
        let syntax = syn::parse_str::<syn::File>(&text[offset..]).map_err(|error| {
            let start = error.span().start();
            SnippetError::Source(format!(
                "{display}:{}:{}: cannot parse the file: {error}",
                start.line,
                start.column + 1
            ))
        })?;
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Ok(SourceFile {
            display,
            text,
            offset,
            line_starts,
            syntax,
        })
    }

    /// The bytes of the file a span of its syntax tree covers.
    pub fn range(&self, span: Span) -> Range<usize> {
        let range = span.byte_range();
        range.start + self.offset..range.end + self.offset
    }

    /// The line (from 1) holding byte `at`.
    pub fn line_of(&self, at: usize) -> usize {
        match self.line_starts.binary_search(&at) {
            Ok(index) => index + 1,
            Err(index) => index,
        }
    }

    /// The first and last line a span covers.
    pub fn lines(&self, span: Span) -> (usize, usize) {
        let range = self.range(span);
        (
            self.line_of(range.start),
            self.line_of(range.end.max(range.start + 1) - 1),
        )
    }

    /// How many lines the file has.
    pub fn line_count(&self) -> usize {
        if self.text.ends_with('\n') {
            self.line_starts.len() - 1
        } else {
            self.line_starts.len()
        }
    }

    /// The byte where `line` starts.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts
            .get(line - 1)
            .copied()
            .unwrap_or(self.text.len())
    }

    /// The text of `line`, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_start(line);
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// The text between the start of the line holding `at` and `at`.
    pub fn before_on_line(&self, at: usize) -> &str {
        &self.text[self.line_start(self.line_of(at))..at]
    }

    /// The text between `at` and the end of its line.
    pub fn after_on_line(&self, at: usize) -> &str {
        let line = self.line_of(at);
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |next| next - 1);
        &self.text[at..end.max(at)]
    }
}

/// `path` relative to `root` when it lies under it, else as given.
pub(crate) fn display_path(path: &Path, root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The `.rs` files under `dir`, in name order, at most 8 folders deep.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() && depth < 8 {
            rust_files(&path, out, depth + 1);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
