//! Text the extractor writes: words laid out in lines, list items,
//! sentences. Apart from what is planned, so that planning, copying and
//! the files written all use them without depending on one another.

/// Words of `text` laid out in lines of at most `width` columns, each
/// starting with `prefix`.
pub(crate) fn wrap(text: &str, width: usize, prefix: &str) -> String {
    hanging(text, width, prefix, prefix)
}

/// Like [`wrap`], with `first` before the first line and `rest` before
/// the others: a Markdown list item.
pub(crate) fn hanging(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut prefix = first;
    let mut line = String::from(first);
    for word in text.split_whitespace() {
        if line.len() > prefix.len() && line.len() + 1 + word.len() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            prefix = rest;
            line = String::from(rest);
        }
        if line.len() > prefix.len() || (!prefix.is_empty() && !prefix.ends_with(' ')) {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// `text` with its first letter in upper case.
pub(crate) fn sentence_case(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
