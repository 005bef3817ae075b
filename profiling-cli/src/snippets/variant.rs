//! `profile-cli new NAME --variant-of BASE`: a second snippet beside
//! BASE's, a copy of it under another target name with the same config
//! (data source, workload) and dependencies, to edit and measure against
//! BASE with `profile-cli ab BASE NAME`.

use std::io::Write;
use std::path::Path;

use profiling_extract::SnippetsCrate;

use super::{check_and_report, profile_name, snippet_directory, tool, Command};
use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};

/// The files of BASE's snippet a variant starts from.
const COPIED: [&str; 3] = ["target.rs", "config.yaml", "Cargo.toml"];

/// Creates the variant `name` of the snippet `base` (its profile name or
/// directory) and, unless `no_check`, builds it and links it in.
pub(crate) fn new_variant(
    name: &str,
    base: &str,
    root: &Path,
    no_check: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let Some(from) = snippet_directory(base, root) else {
        writeln!(
            err,
            "error: no snippet `{base}` to make a variant of: neither a directory with a target.rs nor a name under {}",
            root.join("inference_profiling/snippets").display()
        )?;
        return Ok(EXIT_USAGE);
    };
    let base_name = profile_name(&from);
    if let Err(message) = profiling_core::driver::config::check_profile_name(name) {
        writeln!(err, "error: {name}: {message}")?;
        return Ok(EXIT_USAGE);
    }
    if name == base_name {
        writeln!(
            err,
            "error: a variant needs a name of its own, not `{base_name}`"
        )?;
        return Ok(EXIT_USAGE);
    }
    let Some(parent) = from.parent() else {
        writeln!(err, "error: {} has no parent directory", from.display())?;
        return Ok(EXIT_USAGE);
    };
    let directory = parent.join(name.replace('-', "_"));
    if directory.exists() {
        writeln!(
            err,
            "error: {} exists: give the variant another name, or `profile-cli remove` that snippet first",
            directory.display()
        )?;
        return Ok(EXIT_USAGE);
    }
    if let Err(error) = write_variant(&from, &directory, &base_name, name) {
        // Nothing half-made stays behind.
        let _ = std::fs::remove_dir_all(&directory);
        writeln!(err, "error: {error}")?;
        return Ok(EXIT_TARGET_FAILED);
    }
    let shown = directory
        .strip_prefix(root)
        .unwrap_or(&directory)
        .display()
        .to_string();
    writeln!(
        out,
        "created {shown}/: target.rs, config.yaml, Cargo.toml (copies of {}/ as target `{name}`), README.md",
        from.strip_prefix(root).unwrap_or(&from).display()
    )?;
    let krate = SnippetsCrate::of_directory(&directory);
    let mut code = EXIT_OK;
    match (&krate, no_check) {
        (Some(krate), false) => {
            code = check_and_report(krate, &directory, &shown, name, Command::New, out, err)?;
        }
        (Some(_), true) => writeln!(
            out,
            "  a draft, not compiled, until `profile-cli check {name}` builds it and links it in"
        )?,
        (None, _) => writeln!(
            err,
            "note: {shown} is not in the snippets/ directory of a crate, so nothing compiles it"
        )?,
    }
    writeln!(
        out,
        "next: edit {shown}/target.rs, then: {} ab {base_name} {name}",
        tool(krate.as_ref())
    )?;
    Ok(code)
}

/// Writes the variant's files into `directory`: BASE's with its target,
/// profile, package and paths renamed.
fn write_variant(from: &Path, directory: &Path, base: &str, name: &str) -> Result<(), String> {
    let io = |path: &Path, error: std::io::Error| format!("{}: {error}", path.display());
    std::fs::create_dir(directory).map_err(|e| io(directory, e))?;
    let base_dir = dir_name(from);
    let new_dir = dir_name(directory);
    for file in COPIED {
        let source = from.join(file);
        let text = match std::fs::read_to_string(&source) {
            Ok(text) => text,
            // A module snippet has no Cargo.toml of its own.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && file == "Cargo.toml" => {
                continue
            }
            Err(error) => return Err(io(&source, error)),
        };
        let renamed = rename(&text, file, base, name, &base_dir, &new_dir);
        if file == "target.rs" && renamed == text {
            return Err(format!(
                "{}: no `#[profile_target(name = \"{base}\")]` to rename",
                source.display()
            ));
        }
        let target = directory.join(file);
        profiling_core::driver::files::write_atomically(&target, renamed.as_bytes())
            .map_err(|e| io(&target, e))?;
    }
    let readme = format!(
        "# {name}\n\n\
         A variant of `{base}` (`../{base_dir}/`), made by `profile-cli new {name} --variant-of {base}`: \
         the same code, config and dependencies under the target name `{name}`. Edit `target.rs`, \
         then measure the two against each other in one process, their passes alternated:\n\n\
         ```sh\nprofile-cli ab {base} {name}\n```\n\n\
         `docs/guide/comparing.md` says how to read what `ab` prints.\n"
    );
    let path = directory.join("README.md");
    profiling_core::driver::files::write_atomically(&path, readme.as_bytes())
        .map_err(|e| io(&path, e))
}

fn dir_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `text` of `file` with BASE's names made the variant's: the target's
/// name in `#[profile_target]`, the name of a data source of the
/// snippet's own in `#[data_source]` (two registered under one name would
/// refuse both), the config's profile, target and source names and paths,
/// the package's name.
fn rename(text: &str, file: &str, base: &str, name: &str, base_dir: &str, new_dir: &str) -> String {
    let paths = |text: &str| {
        text.replace(
            &format!("snippets/{base_dir}/"),
            &format!("snippets/{new_dir}/"),
        )
    };
    let (base_source, source) = (
        profiling_extract::custom_source_name(base),
        profiling_extract::custom_source_name(name),
    );
    match file {
        "target.rs" => text
            .replacen(
                &format!("#[profile_target(name = \"{base}\""),
                &format!("#[profile_target(name = \"{name}\""),
                1,
            )
            .replacen(
                &format!("#[data_source(name = \"{base_source}\")]"),
                &format!("#[data_source(name = \"{source}\")]"),
                1,
            ),
        "config.yaml" => {
            paths(
                &text
                    .lines()
                    .map(|line| {
                        let trimmed = line.trim_start();
                        for key in ["profile_name:", "name:"] {
                            let value = trimmed.strip_prefix(key).map(str::trim);
                            let renamed = if value == Some(base) {
                                name
                            } else if value == Some(base_source.as_str()) {
                                source.as_str()
                            } else {
                                continue;
                            };
                            let indent = &line[..line.len() - trimmed.len()];
                            return format!("{indent}{key} {renamed}");
                        }
                        line.to_owned()
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ) + "\n"
        }
        _ => paths(&text.replace(
            &format!("snippet-{}", base_dir.replace('_', "-")),
            &format!("snippet-{}", new_dir.replace('_', "-")),
        ))
        .replace(&format!("`{base}`"), &format!("`{name}`"))
        .replace(&format!("check {base} "), &format!("check {name} ")),
    }
}

#[cfg(test)]
mod tests {
    use super::rename;

    #[test]
    fn a_variant_renames_the_snippets_own_data_source_with_its_target() {
        let target = "#[profile_target(name = \"decode\")]\nimpl ProfileTarget for Decode {}\n\
                      #[data_source(name = \"decode-records\")]\nimpl RecordSource for DecodeRecords {}\n";
        let renamed = rename(
            target,
            "target.rs",
            "decode",
            "decode-fast",
            "decode",
            "decode_fast",
        );
        assert_eq!(
            renamed,
            "#[profile_target(name = \"decode-fast\")]\nimpl ProfileTarget for Decode {}\n\
             #[data_source(name = \"decode-fast-records\")]\nimpl RecordSource for DecodeRecords {}\n"
        );
        let config = "profile_name: decode\ntarget:\n  name: decode\ndata_source:\n  name: decode-records\n  record_count: 1\n";
        assert_eq!(
            rename(config, "config.yaml", "decode", "decode-fast", "decode", "decode_fast"),
            "profile_name: decode-fast\ntarget:\n  name: decode-fast\ndata_source:\n  name: decode-fast-records\n  record_count: 1\n"
        );
    }
}
