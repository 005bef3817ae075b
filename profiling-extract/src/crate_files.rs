//! The production crate's files as one extraction reads them. A file the
//! resolution of the copy reaches (its own, the modules its names lead to)
//! is parsed once and kept; the searches over the whole crate (production
//! calls of the function, facts about the types of its signature) parse
//! only the files whose text names what they look for, and never a large
//! file the resolution did not need: a parsed file takes about two hundred
//! times its size in memory, and generated files run to megabytes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::source_file::{display_path, SourceFile};
use crate::SnippetError;

/// The largest file a search over the crate parses, unless the resolution
/// already has: 1 MB, past any hand-written module.
pub(crate) const SEARCH_LIMIT: u64 = 1_000_000;

/// The largest file `new` parses at all: 32 MB. A file the copy needs that
/// is larger is refused, by name.
pub(crate) const PARSE_LIMIT: u64 = 32_000_000;

/// The files of one extraction, each parsed at most once.
pub(crate) struct CrateFiles {
    /// Where the paths in messages are shown from.
    root: PathBuf,
    /// The files the resolution asked for: parsed, or why not.
    needed: RefCell<HashMap<PathBuf, Result<Rc<SourceFile>, String>>>,
    /// Every file parsed, as shown, with its size, in the order parsed.
    parsed: RefCell<Vec<(String, u64)>>,
    /// The first needed file refused for its size.
    too_large: RefCell<Option<String>>,
}

impl std::fmt::Debug for CrateFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrateFiles")
            .field("parsed", &self.parsed.borrow())
            .finish()
    }
}

impl CrateFiles {
    /// No file read yet; paths shown from `root`.
    pub fn new(root: &Path) -> Rc<CrateFiles> {
        Rc::new(CrateFiles {
            root: root.to_path_buf(),
            needed: RefCell::default(),
            parsed: RefCell::default(),
            too_large: RefCell::default(),
        })
    }

    /// A file the copy needs (its own, or a module its names lead to),
    /// parsed the first time it is asked for. A file over [`PARSE_LIMIT`]
    /// is not read: the error names it, and [`CrateFiles::check`] returns
    /// it again once the resolution is done, for the questions that took
    /// the missing file as "cannot tell".
    pub fn needed(&self, path: &Path) -> Result<Rc<SourceFile>, SnippetError> {
        let key = normal(path);
        if let Some(known) = self.needed.borrow().get(&key) {
            return known.clone().map_err(SnippetError::Source);
        }
        let display = display_path(path, &self.root);
        let read = match std::fs::metadata(path) {
            Ok(metadata) if metadata.len() > PARSE_LIMIT => {
                Err(self.refuse(&display, metadata.len()))
            }
            Ok(metadata) => {
                let read = SourceFile::read(path, display.clone()).map_err(|e| e.to_string());
                if read.is_ok() {
                    self.parsed.borrow_mut().push((display, metadata.len()));
                }
                read.map(Rc::new)
            }
            Err(error) => Err(format!("cannot read {display}: {error}")),
        };
        self.needed.borrow_mut().insert(key, read.clone());
        read.map_err(SnippetError::Source)
    }

    /// The text of a file the copy needs whole (a private module copied
    /// into the snippet), read without parsing it; refused, as
    /// [`CrateFiles::needed`] refuses it, when over [`PARSE_LIMIT`].
    pub fn text(&self, path: &Path) -> Result<String, SnippetError> {
        if let Some(Ok(known)) = self.needed.borrow().get(&normal(path)) {
            return Ok(known.text.clone());
        }
        let display = display_path(path, &self.root);
        let size = std::fs::metadata(path)
            .map_err(|error| SnippetError::Source(format!("cannot read {display}: {error}")))?
            .len();
        if size > PARSE_LIMIT {
            let why = self.refuse(&display, size);
            return Err(SnippetError::Source(why));
        }
        std::fs::read_to_string(path)
            .map_err(|error| SnippetError::Source(format!("cannot read {display}: {error}")))
    }

    /// Why `display`, of `size` bytes, a file the copy needs, is not read;
    /// kept for [`CrateFiles::check`] when it is the first.
    fn refuse(&self, display: &str, size: u64) -> String {
        let why = format!(
            "{display} is {}, more than the {} `new` parses in one file, and the copy needs it (the function's module, or one its names lead to): move what the function uses out of it into a smaller file",
            megabytes(size),
            megabytes(PARSE_LIMIT)
        );
        self.too_large.borrow_mut().get_or_insert(why.clone());
        why
    }

    /// `look` on the syntax of `path`, for a search over the crate: when
    /// its text passes `names` (says whether it names what the search
    /// looks for), and it is parsed already or no larger than
    /// [`SEARCH_LIMIT`]. Parsed for this search alone: the searches visit
    /// many files, which are not all kept.
    pub fn search<T>(
        &self,
        path: &Path,
        names: impl Fn(&str) -> bool,
        look: impl FnOnce(&syn::File) -> T,
    ) -> Option<T> {
        if let Some(Ok(known)) = self.needed.borrow().get(&normal(path)) {
            return names(&known.text).then(|| look(&known.syntax));
        }
        let size = std::fs::metadata(path).ok()?.len();
        if size > SEARCH_LIMIT {
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        if !names(&text) {
            return None;
        }
        let syntax = syn::parse_file(&text).ok()?;
        self.parsed
            .borrow_mut()
            .push((display_path(path, &self.root), size));
        Some(look(&syntax))
    }

    /// The error for the first file the resolution needed that was too
    /// large to parse, when there was one: its answers are missing.
    pub fn check(&self) -> Result<(), SnippetError> {
        match self.too_large.borrow().as_ref() {
            Some(why) => Err(SnippetError::Source(why.clone())),
            None => Ok(()),
        }
    }

    /// The files parsed so far, as shown, with their sizes in bytes.
    pub fn parsed(&self) -> Vec<(String, u64)> {
        self.parsed.borrow().clone()
    }
}

/// `path` without `.` components: one key for one file as the resolution
/// builds its paths.
fn normal(path: &Path) -> PathBuf {
    path.components().collect()
}

/// `bytes` in megabytes, as messages give sizes.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Whether `text` holds `word` as a whole identifier: not inside a
/// longer one.
pub(crate) fn names_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(is_ident)
            && !text[at + word.len()..].chars().next().is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_found_alone_not_inside_a_longer_identifier() {
        assert!(names_word("let x = keep(d);", "keep"));
        assert!(names_word("keep", "keep"));
        assert!(names_word("a.keep()", "keep"));
        assert!(!names_word("fn keeper() {} fn _keep() {}", "keep"));
        assert!(!names_word("", "keep"));
        assert!(names_word("r#keep", "keep"));
    }

    #[test]
    fn a_needed_file_is_parsed_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let path = root.join("m.rs");
        std::fs::write(&path, "pub fn f() {}\n").unwrap();
        let files = CrateFiles::new(&root);
        let first = files.needed(&path).unwrap();
        let again = files.needed(&root.join("./m.rs")).unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        assert_eq!(files.parsed(), [("m.rs".to_owned(), 14)]);
    }

    #[test]
    fn a_search_skips_files_that_do_not_name_what_it_looks_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.rs");
        std::fs::write(&path, "pub fn f() { g() }\n").unwrap();
        let files = CrateFiles::new(dir.path());
        let items = |syntax: &syn::File| syntax.items.len();
        assert_eq!(files.search(&path, |t| names_word(t, "h"), items), None);
        assert!(files.parsed().is_empty());
        assert_eq!(files.search(&path, |t| names_word(t, "g"), items), Some(1));
        assert_eq!(files.parsed().len(), 1);
    }
}
