//! `profile-cli list`: every registered target, the drafts not compiled,
//! and the targets a feature would add.

use std::io::Write;
use std::path::Path;

use profiling_core::driver::registry::{self, TargetEntry};

use crate::EXIT_OK;

pub(crate) fn list(
    json: bool,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let entries = registry::targets();
    let duplicated =
        |entry: &TargetEntry| entries.iter().filter(|e| e.name == entry.name).count() > 1;
    if json {
        let items: Vec<serde_json::Value> = entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name,
                    "file": e.display_file(root),
                    "line": e.line,
                    "type_name": e.type_name,
                    "module_path": e.module_path,
                    "constructor": e.constructor,
                    "description": e.doc,
                    "duplicate": duplicated(e),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
    } else if entries.is_empty() {
        writeln!(
            err,
            "no targets are registered: add #[profile_target] to an impl of ProfileTarget"
        )?;
    } else {
        let name_width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
        let places: Vec<String> = entries
            .iter()
            .map(|e| format!("{}:{}", e.display_file(root), e.line))
            .collect();
        let place_width = places.iter().map(String::len).max().unwrap_or(0);
        for (entry, place) in entries.iter().zip(&places) {
            let line = format!(
                "{:name_width$}  {:place_width$}  {}",
                entry.name, place, entry.doc
            );
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    if !json {
        list_drafts(&registry::drafts(), out)?;
    }
    let missing = registry::unavailable();
    if !json && !missing.is_empty() {
        let mut features: Vec<&str> = missing.iter().map(|u| u.feature).collect();
        features.dedup();
        for feature in features {
            let names: Vec<&str> = missing
                .iter()
                .filter(|u| u.feature == feature)
                .map(|u| u.name)
                .collect();
            writeln!(
                out,
                "not in this build, need the `{feature}` feature (scripts/profile --features {feature} list): {}",
                names.join(", ")
            )?;
        }
    }
    let mut warned = Vec::new();
    for entry in &entries {
        if duplicated(entry) && !warned.contains(&entry.name) {
            warned.push(entry.name);
            let places: Vec<String> = entries
                .iter()
                .filter(|e| e.name == entry.name)
                .map(|e| format!("{}:{}", e.display_file(root), e.line))
                .collect();
            writeln!(
                err,
                "warning: target name `{}` is registered {} times ({}): `profile-cli run {}` refuses it until one is renamed",
                entry.name,
                places.len(),
                places.join(", "),
                entry.name
            )?;
        }
    }
    Ok(EXIT_OK)
}

/// The drafts section of `list`: each draft's name, directory and reason.
fn list_drafts(drafts: &[&registry::Draft], out: &mut dyn Write) -> anyhow::Result<()> {
    if drafts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "drafts, not compiled (`profile-cli check NAME` builds one and links it in):"
    )?;
    let name_width = drafts.iter().map(|d| d.target.len()).max().unwrap_or(0);
    let places: Vec<String> = drafts.iter().map(|d| format!("{}/", d.path())).collect();
    let place_width = places.iter().map(String::len).max().unwrap_or(0);
    for (draft, place) in drafts.iter().zip(&places) {
        writeln!(
            out,
            "  {:name_width$}  {place:place_width$}  {}",
            draft.target,
            draft.summary()
        )?;
    }
    Ok(())
}
