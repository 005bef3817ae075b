//! `profile-cli list`: every registered target, the drafts not compiled,
//! and the targets a feature would add; as a table, or the targets as a
//! JSON array. `list --sources`: every registered data source and its
//! parameters.

use std::io::Write;
use std::path::Path;

use profiling_core::driver::registry::{self, Draft, TargetEntry, UnavailableTarget};
use serde::Serialize;

use crate::exit::EXIT_OK;

/// One registered target, as the table and the JSON array show it.
#[derive(Debug, Serialize)]
struct ListedTarget {
    name: &'static str,
    /// Its source file, relative to the workspace where it is inside.
    file: String,
    line: u32,
    type_name: &'static str,
    module_path: &'static str,
    constructor: &'static str,
    description: &'static str,
    /// Another target is registered under the same name.
    duplicate: bool,
}

/// What this build has registered.
struct Listing {
    targets: Vec<ListedTarget>,
    drafts: Vec<&'static Draft>,
    unavailable: Vec<&'static UnavailableTarget>,
}

impl Listing {
    fn of(root: &Path) -> Listing {
        let entries = registry::targets();
        let duplicated =
            |entry: &TargetEntry| entries.iter().filter(|e| e.name == entry.name).count() > 1;
        let targets = entries
            .iter()
            .map(|e| ListedTarget {
                name: e.name,
                file: e.display_file(root),
                line: e.line,
                type_name: e.type_name,
                module_path: e.module_path,
                constructor: e.constructor,
                description: e.doc,
                duplicate: duplicated(e),
            })
            .collect();
        Listing {
            targets,
            drafts: registry::drafts(),
            unavailable: registry::unavailable(),
        }
    }

    /// The JSON array of the targets (an object per target, its keys in
    /// order).
    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&serde_json::to_value(&self.targets)?)
    }

    /// The table of targets, then the drafts and the targets of other
    /// builds.
    fn table(&self, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
        if self.targets.is_empty() {
            writeln!(
                err,
                "no targets are registered: add #[profile_target] to an impl of ProfileTarget"
            )?;
        } else {
            let name_width = self.targets.iter().map(|t| t.name.len()).max().unwrap_or(0);
            let places: Vec<String> = self.targets.iter().map(place).collect();
            let place_width = places.iter().map(String::len).max().unwrap_or(0);
            for (target, place) in self.targets.iter().zip(&places) {
                let line = format!(
                    "{:name_width$}  {:place_width$}  {}",
                    target.name, place, target.description
                );
                writeln!(out, "{}", line.trim_end())?;
            }
        }
        self.drafts_table(out)?;
        let mut features: Vec<&str> = self.unavailable.iter().map(|u| u.feature).collect();
        features.dedup();
        for feature in features {
            let names: Vec<&str> = self
                .unavailable
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
        Ok(())
    }

    /// The drafts section: each draft's name, directory and reason.
    fn drafts_table(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.drafts.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "drafts, not compiled (`profile-cli check NAME` builds one and links it in):"
        )?;
        let name_width = self
            .drafts
            .iter()
            .map(|d| d.target.len())
            .max()
            .unwrap_or(0);
        let places: Vec<String> = self
            .drafts
            .iter()
            .map(|d| format!("{}/", d.path()))
            .collect();
        let place_width = places.iter().map(String::len).max().unwrap_or(0);
        for (draft, place) in self.drafts.iter().zip(&places) {
            writeln!(
                out,
                "  {:name_width$}  {place:place_width$}  {}",
                draft.target,
                draft.summary()
            )?;
        }
        Ok(())
    }

    /// A warning for each name registered more than once, naming where.
    fn duplicate_warnings(&self, err: &mut dyn Write) -> std::io::Result<()> {
        let mut warned = Vec::new();
        for target in self.targets.iter().filter(|t| t.duplicate) {
            if warned.contains(&target.name) {
                continue;
            }
            warned.push(target.name);
            let places: Vec<String> = self
                .targets
                .iter()
                .filter(|t| t.name == target.name)
                .map(place)
                .collect();
            writeln!(
                err,
                "warning: target name `{}` is registered {} times ({}): `profile-cli run {}` refuses it until one is renamed",
                target.name,
                places.len(),
                places.join(", "),
                target.name
            )?;
        }
        Ok(())
    }
}

/// `file:line` of a target.
fn place(target: &ListedTarget) -> String {
    format!("{}:{}", target.file, target.line)
}

pub(crate) fn list(
    json: bool,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let listing = Listing::of(root);
    if json {
        writeln!(out, "{}", listing.json()?)?;
    } else {
        listing.table(out, err)?;
    }
    listing.duplicate_warnings(err)?;
    Ok(EXIT_OK)
}

/// One registered data source, as `list --sources` shows it.
#[derive(Debug, Serialize)]
struct ListedSource {
    name: &'static str,
    /// Its source file, relative to the workspace where it is inside.
    file: String,
    line: u32,
    type_name: &'static str,
    description: &'static str,
    /// The keys of its `data_source` mapping besides `name`.
    parameters: Vec<&'static str>,
}

/// `profile-cli list --sources`: a block per source (name, place,
/// description, then its parameters), or a JSON array.
pub(crate) fn list_sources(json: bool, root: &Path, out: &mut dyn Write) -> anyhow::Result<u8> {
    let sources: Vec<ListedSource> = profiling_core::data::sources()
        .into_iter()
        .map(|entry| {
            let file = std::path::Path::new(entry.file);
            ListedSource {
                name: entry.name,
                file: file
                    .strip_prefix(root)
                    .unwrap_or(file)
                    .to_string_lossy()
                    .into_owned(),
                line: entry.line,
                type_name: entry.type_name,
                description: entry.doc,
                parameters: entry.parameters(),
            }
        })
        .collect();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&sources)?)?;
        return Ok(EXIT_OK);
    }
    let name_width = sources.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let places: Vec<String> = sources
        .iter()
        .map(|s| format!("{}:{}", s.file, s.line))
        .collect();
    let place_width = places.iter().map(String::len).max().unwrap_or(0);
    for (source, place) in sources.iter().zip(&places) {
        let line = format!(
            "{:name_width$}  {:place_width$}  {}",
            source.name, place, source.description
        );
        writeln!(out, "{}", line.trim_end())?;
        let parameters = if source.parameters.is_empty() {
            "(any keys)".to_owned()
        } else {
            source.parameters.join(", ")
        };
        writeln!(out, "{:name_width$}  parameters: {parameters}", "")?;
    }
    Ok(EXIT_OK)
}
